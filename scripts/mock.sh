#!/usr/bin/env bash
# Mocks of both interfaces from the specs, for partners' integration tests before the real service:
# - interface B on MOCK_API_PORT (default 4010): Prism behind a relay (scripts/mock-relay.ts) that makes
#   it behave like the service: requests validated against specs/openapi.yaml (a 400 names the real
#   violations), the spec's examples as answers with the request's own ids, and both callbacks of
#   RegisterDocument and DemandContent delivered to the request's callbackUrl (else the demo clinic's
#   http://127.0.0.1:9090) in order, signed with the mock's public secret (printed at start; MOCK_SIGNING_SECRET);
# - interface A: @open-rpc/mock-server on MOCK_RPC_PORT (default 4011): POST /<info.version>/ answers a
#   call whose params equal an example's with that example's result.
# Stop with Ctrl-C. Usage: scripts/mock.sh [--help]
set -euo pipefail
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
if [[ $# -gt 0 ]]; then echo "mock: unknown argument $1 (try --help)" >&2; exit 2; fi
cd "$(dirname "$0")/.."
api_port=${MOCK_API_PORT:-4010}
rpc_port=${MOCK_RPC_PORT:-4011}
node --import tsx scripts/mock-relay.ts --host "${MOCK_HOST:-127.0.0.1}" --port "$api_port" &
api=$!
node_modules/.bin/open-rpc-mock-server --document specs/openrpc.json --port "$rpc_port" &
rpc=$!
trap 'kill "$api" "$rpc" 2>/dev/null; wait' INT TERM EXIT
echo "mock: interface A on http://127.0.0.1:$rpc_port/$(node -p "require('./specs/openrpc.json').info.version")/"
wait -n "$api" "$rpc"
