#!/usr/bin/env bash
# gates_ir.sh — instructions per amplitude of every placement of
# bench_gates (callgrind, repeatable on a busy machine), for one or two
# builds side by side (before, after).
#
#   bash tests/bench/gates_ir.sh [-n WIRES] [-s c|avx2] [-b BASE_COMMIT] BENCH_GATES [BENCH_GATES_2]
#
# -b builds BASE_COMMIT's kernels with this benchmark (base_bench.sh) as
# the first column, before. Issue 19's figure, CNOT with target bit 0 and
# control bit 1 (was 14.8 at 16 wires, qulacs 3.3), is repeated at the end:
#   bash tests/bench/gates_ir.sh -b 6df15e9 build/tests/bench/bench_gates
# Each binary runs `bench_gates --count` under callgrind, which dumps the
# cost of every sv_apply call; a row is that cost over 2^WIRES (default 16),
# one thread. valgrind's CPU has no AVX-512, so these are the AVX2 (or,
# with -s c, the portable C) kernels.
set -u
n=16 simd= base=
while getopts n:s:b: o; do
  case $o in n) n=$OPTARG ;; s) simd="--simd $OPTARG" ;; b) base=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: gates_ir.sh [-n WIRES] [-s c|avx2] [-b BASE_COMMIT] BENCH_GATES [BENCH_GATES_2]" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "gates_ir.sh: valgrind is not installed" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
if [ -n "$base" ]; then
  bash "$(dirname "${BASH_SOURCE[0]}")/base_bench.sh" "$base" "$tmp/base" || exit 1
  set -- "$tmp/base/bench_before" "$@"
fi
col=0
for bin in "$@"; do
  bin=$(realpath "$bin")
  col=$((col + 1)); d=$tmp/$col; mkdir -p "$d"
  # shellcheck disable=SC2086
  (cd "$d" && valgrind --tool=callgrind --toggle-collect=sv_apply --dump-after=sv_apply \
      --dump-instr=no --callgrind-out-file=cg.out "$bin" --count --qubits "$n" $simd >list.txt 2>err.txt) \
    || { cat "$d/err.txt" >&2; exit 1; }
  rows=$(wc -l <"$d/list.txt")
  total=$(ls "$d"/cg.out.* | wc -l)
  # the last $rows dumps are the measured calls (the first ones warm up)
  for i in $(seq 1 "$rows"); do
    f=$d/cg.out.$((total - rows + i))
    awk -v n="$n" '/^totals:/ { printf "%.2f\n", $2 / 2^n }' "$f"
  done >"$d/ir.txt"
done
k=0; for b in "$@"; do
  k=$((k + 1))
  if [ -n "$base" ] && [ $k = 1 ]; then echo "[$k] $base (base_bench.sh)"; else echo "[$k] $b"; fi
done
printf '%-30s' "gate|placement (ir/amp, n=$n)"
k=0; for b in "$@"; do k=$((k + 1)); printf ' %10s' "[$k]"; done
echo
cut -d' ' -f2- "$tmp/1/list.txt" >"$tmp/labels"
cols=("$tmp/labels")
for k in $(seq 1 $#); do cols+=("$tmp/$k/ir.txt"); done
paste -d'\t' "${cols[@]}" | awk -F'\t' '{ printf "%-30s", $1; for (i = 2; i <= NF; i++) printf " %10s", $i; printf "\n" }'
row=$(grep -n '^[0-9]* CNOT|c1 t0$' "$tmp/1/list.txt" | cut -d: -f1)
if [ -n "$row" ]; then
  printf 'issue 19: CNOT target bit 0, control bit 1, ir/amp at n=%s (was 14.8, qulacs 3.3):' "$n"
  for k in $(seq 1 $#); do printf ' [%s] %s' "$k" "$(sed -n "${row}p" "$tmp/$k/ir.txt")"; done
  echo
fi
