#!/usr/bin/env bash
# Runs a command while a busy loop spins on every core (HOG_CORES of them, default all), to find the
# tests that only pass on a quiet machine: a CI machine or a shared one is never quiet. The loops run
# at the tests' own priority and end with the command, whatever way it ends; prints how long it took.
# Usage: scripts/under-cpu-hog.sh COMMAND [ARG...]   e.g. scripts/under-cpu-hog.sh make unit
set -uo pipefail
if [[ $# -eq 0 || "$1" == "-h" || "$1" == "--help" ]]; then sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; [[ $# -eq 0 ]] && exit 2; exit 0; fi
cores=${HOG_CORES:-$(nproc)}
if ! [[ "$cores" =~ ^[0-9]+$ ]]; then echo "under-cpu-hog: HOG_CORES=\"$cores\" is not a number of cores" >&2; exit 2; fi
hogs=()
stop_hogs() { ((${#hogs[@]})) && kill "${hogs[@]}" 2>/dev/null; wait "${hogs[@]}" 2>/dev/null; hogs=(); }
trap stop_hogs EXIT
trap 'stop_hogs; exit 130' INT TERM
for ((core = 0; core < cores; core++)); do
  ( trap - INT TERM; while :; do :; done ) &
  hogs+=($!)
done
echo "under-cpu-hog: ${cores} busy loop(s) running beside: $*" >&2
started=$SECONDS
"$@"
status=$?
stop_hogs
echo "under-cpu-hog: '$*' ended with status ${status} after $((SECONDS - started)) s, ${cores} busy loop(s) beside it" >&2
exit "$status"
