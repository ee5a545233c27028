#!/usr/bin/env bash
# Generates the Java client of interface B from specs/openapi.yaml into .clients/java with
# openapi-generator (the options are in tools/java/openapi-generator.yaml), as a partner would. Fails
# on any warning about the spec: the only one allowed is the generator's own "3.1 support is still
# in beta". Usage: scripts/generate-java-client.sh GENERATOR_JAR [--help]
set -euo pipefail
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
if [[ "${1:-}" == -* ]]; then echo "generate-java-client: unknown option $1 (try --help)" >&2; exit 2; fi
if [[ $# -ne 1 ]]; then echo "generate-java-client: give the openapi-generator-cli jar (try --help)" >&2; exit 2; fi
jar=$1
cd "$(dirname "$0")/.."
out=.clients/java
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# A fresh directory: files of operations or models the spec no longer has must not linger.
rm -rf "$out"
if ! java -jar "$jar" generate -g java -c tools/java/openapi-generator.yaml -i specs/openapi.yaml -o "$out" >"$log" 2>&1; then
  cat "$log" >&2
  echo "generate-java-client: openapi-generator failed" >&2
  exit 1
fi
warnings=$(grep -E '\] (WARN|ERROR) ' "$log" | grep -v 'OpenAPI 3.1 support is still in beta' || true)
if [[ -n "$warnings" ]]; then
  echo "$warnings" >&2
  echo "generate-java-client: openapi-generator warned about specs/openapi.yaml (above); fix the spec" >&2
  exit 1
fi
echo "generate-java-client: $out written ($(grep -c 'writing file' "$log") files), no warning about the spec"
