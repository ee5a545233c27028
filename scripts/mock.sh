#!/usr/bin/env bash
# Mocks of both interfaces from the specs, for partners' integration tests before the real service:
# - interface B: Prism on MOCK_API_PORT (default 4010); it validates requests against specs/openapi.yaml,
#   answers with the spec's examples and fires the callbacks of RegisterDocument and DemandContent
#   to the request's callbackUrl with the callback examples of the spec;
# - interface A: @open-rpc/mock-server on MOCK_RPC_PORT (default 4011): POST /<info.version>/ answers a
#   call whose params equal an example's with that example's result.
# Stop with Ctrl-C. Usage: scripts/mock.sh [--help]
set -euo pipefail
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
if [[ $# -gt 0 ]]; then echo "mock: unknown argument $1 (try --help)" >&2; exit 2; fi
cd "$(dirname "$0")/.."
api_port=${MOCK_API_PORT:-4010}
rpc_port=${MOCK_RPC_PORT:-4011}
node_modules/.bin/prism mock --host "${MOCK_HOST:-127.0.0.1}" --port "$api_port" specs/openapi.yaml &
api=$!
node_modules/.bin/open-rpc-mock-server --document specs/openrpc.json --port "$rpc_port" &
rpc=$!
trap 'kill "$api" "$rpc" 2>/dev/null; wait' INT TERM EXIT
echo "mock: interface B (Prism) on http://${MOCK_HOST:-127.0.0.1}:$api_port, interface A on http://127.0.0.1:$rpc_port/$(node -p "require('./specs/openrpc.json').info.version")/"
wait -n "$api" "$rpc"
