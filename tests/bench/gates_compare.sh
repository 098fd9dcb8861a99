#!/usr/bin/env bash
# gates_compare.sh — the full bench_gates table before and after: this
# checkout's kernels against those of an earlier commit, same benchmark.
#
#   bash tests/bench/gates_compare.sh BASE_COMMIT [BUILD_DIR] [-- [--rounds R] bench_gates options]
#
# Builds BASE_COMMIT's statevector library in a temporary directory, links
# this checkout's tests/bench/bench_gates.c against it (the benchmark only
# uses sv.h), then runs the two benchmarks block by block (one wire count,
# one thread count at a time, before and after alternating, --rounds
# times, default 2) so that both see the same machine. Per block it
# prints the last "after" table (with /H and the bars) and the best /bw
# of each side per row with their ratio (aft/bef < 1: faster now; rows
# over 1.05 are marked). BUILD_DIR (default build) holds this checkout's
# build. Example (the commit before issue 19's kernels):
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
bash tests/bench/base_bench.sh "$base" "$tmp" || exit 1
after=$build/tests/bench/bench_gates
echo "before: $base ($(git log -1 --format='%h %s' "$base" | cut -c1-70))"
echo "after:  $(git rev-parse --short HEAD) (this checkout, $build)"
# the wire and thread counts of the run, taken from the options
qubits="22,24" threads="1,2" rounds=2 rest=()
while [ $# -gt 0 ]; do
  case $1 in
    --qubits) qubits=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) rest+=("$1"); shift ;;
  esac
done
# Each block runs `rounds` times, before and after alternating, so that a
# change in the machine's load during the run shows on both sides; the
# closing table of the block takes each row's best /bw of each side.
for n in ${qubits//,/ }; do
  for t in ${threads//,/ }; do
    : >"$tmp/b.txt"; : >"$tmp/a.txt"
    for r in $(seq 1 "$rounds"); do
      "$tmp/bench_before" --qubits "$n" --threads "$t" --save "$tmp/b1.txt" "${rest[@]}" >"$tmp/before.out" || exit 1
      "$after" --qubits "$n" --threads "$t" --save "$tmp/a1.txt" "${rest[@]}" >"$tmp/after.out" || exit 1
      cat "$tmp/b1.txt" >>"$tmp/b.txt"; cat "$tmp/a1.txt" >>"$tmp/a.txt"
    done
    echo; echo "######## after (last round): $n wires, $t thread(s)"
    sed -n '/^== /,$p' "$tmp/after.out"
    echo; echo "######## before and after, best /bw of $rounds rounds each: $n wires, $t thread(s)"
    printf '%-9s %-14s %10s %10s %8s\n' gate placement "before/bw" "after/bw" "aft/bef"
    awk -F'|' -v OFS='|' '
      FNR == 1 { side++ }
      /^#/ { next }
      { split($3, v, " "); key = $1 "|" $2
        if (!(key in seen)) { seen[key] = 1; order[++n] = key }
        if (side == 1 && (!(key in b) || v[2] < b[key])) b[key] = v[2]
        if (side == 2 && (!(key in a) || v[2] < a[key])) a[key] = v[2] }
      END { for (i = 1; i <= n; i++) { k = order[i]; split(k, f, "|"); split(f[1], g, " ")
              r = (k in a && k in b && b[k] > 0) ? a[k] / b[k] : 0
              printf "%-9s %-14s %10.3f %10.3f %8.2f%s\n", g[3], f[2], b[k], a[k], r, (r > 1.05 ? "  slower" : "") } }
    ' "$tmp/b.txt" "$tmp/a.txt"
  done
done
