#!/usr/bin/env bash
# Fails when generated/ differs from what `make generate` writes from the current specs.
set -euo pipefail
cd "$(dirname "$0")/.."
fresh=$(mktemp -d)
trap 'rm -rf "$fresh"' EXIT
npx --no-install tsx scripts/generate.ts --out "$fresh"
if ! diff -ru generated "$fresh" > "$fresh.diff"; then
  echo "generated/ is out of date with specs/: run 'make generate' and commit the result. Difference:" >&2
  head -n 40 "$fresh.diff" >&2
  rm -f "$fresh.diff"
  exit 1
fi
rm -f "$fresh.diff"
echo "generated/: up to date with specs/"
