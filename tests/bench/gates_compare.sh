#!/usr/bin/env bash
# gates_compare.sh — the full bench_gates table before and after: this
# checkout's kernels against those of an earlier commit, same benchmark.
#
#   bash tests/bench/gates_compare.sh BASE_COMMIT [BUILD_DIR] [-- bench_gates options]
#
# Builds BASE_COMMIT's statevector library in a temporary directory, links
# this checkout's tests/bench/bench_gates.c against it (the benchmark only
# uses sv.h), then runs the two benchmarks block by block (one wire count,
# one thread count at a time, before then after) so that both see the same
# machine; each "after" table shows the "before" /bw beside its own and
# their ratio (aft/bef < 1: faster now). BUILD_DIR (default build) holds
# this checkout's build. Example (the commit before issue 19's kernels):
#   bash tests/bench/gates_compare.sh 6df15e9
set -u
base=${1:?usage: gates_compare.sh BASE_COMMIT [BUILD_DIR] [-- bench_gates options]}
shift
build=build
if [ $# -gt 0 ] && [ "$1" != "--" ]; then build=$1; shift; fi
[ "${1:-}" = "--" ] && shift
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 1
ninja -C "$build" tests/bench/bench_gates >/dev/null || { echo "gates_compare.sh: cannot build $build/tests/bench/bench_gates" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
git archive "$base" | tar -x -C "$tmp" || { echo "gates_compare.sh: no commit $base" >&2; exit 1; }
(meson setup "$tmp/build" "$tmp" -Dtests=disabled >"$tmp/setup.log" 2>&1 &&
 ninja -C "$tmp/build" src/quantum/libqhsv.a >"$tmp/ninja.log" 2>&1) ||
  { tail -20 "$tmp/setup.log" "$tmp/ninja.log"; echo "gates_compare.sh: cannot build $base" >&2; exit 1; }
libs="$tmp/build/src/quantum/libqhsv.a"
[ -f "$tmp/build/src/util/libqhutil.a" ] && libs="$libs $tmp/build/src/util/libqhutil.a"
# shellcheck disable=SC2086
cc -O2 -std=c11 -D_GNU_SOURCE -I"$tmp/src/quantum" -I"$tmp/src/util" tests/bench/bench_gates.c \
   $libs $(pkg-config --libs openblas 2>/dev/null) -lm -lpthread -o "$tmp/bench_before" ||
  { echo "gates_compare.sh: cannot link the benchmark against $base" >&2; exit 1; }
after=$build/tests/bench/bench_gates
echo "before: $base ($(git log -1 --format='%h %s' "$base" | cut -c1-70))"
echo "after:  $(git rev-parse --short HEAD) (this checkout, $build)"
# the wire and thread counts of the run, taken from the options
qubits="22,24" threads="1,2" rest=()
while [ $# -gt 0 ]; do
  case $1 in
    --qubits) qubits=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) rest+=("$1"); shift ;;
  esac
done
for n in ${qubits//,/ }; do
  for t in ${threads//,/ }; do
    "$tmp/bench_before" --qubits "$n" --threads "$t" --save "$tmp/before.txt" "${rest[@]}" >"$tmp/before.out" || exit 1
    echo; echo "######## before: $n wires, $t thread(s)"
    sed -n '/^== /,$p' "$tmp/before.out" | sed '/^bars missed/d'
    echo; echo "######## after: $n wires, $t thread(s)"
    "$after" --qubits "$n" --threads "$t" --compare "$tmp/before.txt" "${rest[@]}" | sed -n '/^== /,$p'
  done
done
