#!/usr/bin/env bash
# base_bench.sh — builds an earlier commit's statevector library in DIR and
# links this checkout's tests/bench/bench_gates.c against it (the
# benchmark only uses sv.h): DIR/bench_before. For the before/after
# scripts (gates_compare.sh, gates_ir.sh -b).
#
#   bash tests/bench/base_bench.sh BASE_COMMIT DIR
set -u
base=${1:?usage: base_bench.sh BASE_COMMIT DIR}
dir=${2:?usage: base_bench.sh BASE_COMMIT DIR}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$dir/src" || exit 1
git -C "$root" archive "$base" | tar -x -C "$dir/src" || { echo "base_bench.sh: no commit $base" >&2; exit 1; }
(meson setup "$dir/build" "$dir/src" -Dtests=disabled >"$dir/setup.log" 2>&1 &&
 ninja -C "$dir/build" src/quantum/libqhsv.a >"$dir/ninja.log" 2>&1) ||
  { tail -20 "$dir/setup.log" "$dir/ninja.log" >&2; echo "base_bench.sh: cannot build $base" >&2; exit 1; }
libs="$dir/build/src/quantum/libqhsv.a"
[ -f "$dir/build/src/util/libqhutil.a" ] && libs="$libs $dir/build/src/util/libqhutil.a"
# shellcheck disable=SC2086
cc -O2 -std=c11 -D_GNU_SOURCE -I"$dir/src/src/quantum" -I"$dir/src/src/util" "$root/tests/bench/bench_gates.c" \
   $libs $(pkg-config --libs openblas 2>/dev/null) -lm -lpthread -o "$dir/bench_before" ||
  { echo "base_bench.sh: cannot link the benchmark against $base" >&2; exit 1; }
