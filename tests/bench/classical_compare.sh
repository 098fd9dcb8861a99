#!/usr/bin/env bash
# classical_compare.sh — the microbenchmarks of tests/bench/classical before
# and after: this checkout's qh against an earlier commit's, same programs,
# runs interleaved (issue 12: "no slower than today").
#
#   bash tests/bench/classical_compare.sh BASE_COMMIT [PATH/TO/qh]
#
# Builds BASE_COMMIT's qh in a temporary directory (git archive + meson,
# tests disabled), then runs classical.sh with BASE set to it: the table of
# classical.sh (CPython and Lua columns included) with a qh/base column and
# the verdict "no slower than base on every program". PATH/TO/qh defaults
# to build/src/qh. Environment: as classical.sh (RUNS, ONLY, PYTHON, LUA).
# Example (the commit issue 12 was filed against):
#   bash tests/bench/classical_compare.sh 6df15e9
set -u
base=${1:?usage: classical_compare.sh BASE_COMMIT [PATH/TO/qh]}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
qh=${2:-$root/build/src/qh}
cd "$root" || exit 1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
git archive "$base" | tar -x -C "$tmp" || { echo "classical_compare.sh: no commit $base" >&2; exit 1; }
echo "building $base's qh in $tmp ..." >&2
(meson setup "$tmp/build" "$tmp" -Dtests=disabled >"$tmp/setup.log" 2>&1 &&
 ninja -C "$tmp/build" src/qh >"$tmp/ninja.log" 2>&1) ||
  { tail -20 "$tmp/setup.log" "$tmp/ninja.log"; echo "classical_compare.sh: cannot build $base" >&2; exit 1; }
echo "base: $base ($(git log -1 --format='%h %s' "$base" | cut -c1-70))"
echo "qh:   $qh ($(git rev-parse --short HEAD))"
BASE="$tmp/build/src/qh" bash "$root/tests/bench/classical.sh" "$qh"
