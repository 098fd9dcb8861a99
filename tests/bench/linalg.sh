#!/usr/bin/env bash
# numpy.linalg's figure of issue 24: inv, solve, svd and eigh of 500x500
# matrices through qh's builtins, against calling the same LAPACK routines
# directly (bench_lapack.c, built by meson), in the same run, on the same
# matrices (default_rng(1)); qh's times are taken inside the program
# (tests/bench/linalg.qh), so start-up and parsing are excluded. Prints
# each time, the ratio qh / direct and the verdict against the bar 1.1.
#
#   tests/bench/linalg.sh [BUILD_DIR]     (N=500 REPS=5 ROUNDS=3 THREADS=1 by default)
#
# One BLAS thread for both by default (THREADS=k for k): on a shared
# machine threads make both sides noisy.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
n=${N:-500}
reps=${REPS:-5}
threads=${THREADS:-1}
ninja -C "$build" tests/bench/bench_lapack src/qh > /dev/null || exit 2
export OPENBLAS_NUM_THREADS=$threads
# ROUNDS alternating runs of each side (the machine's load changes under
# them alike); the best time of each function over all of them
rounds=${ROUNDS:-3}
direct=""
viaqh=""
for r in $(seq "$rounds"); do
    direct+=$("$build/tests/bench/bench_lapack" "$n" "$reps")$'\n' || exit 1
    viaqh+=$("$build/src/qh" "$here/linalg.qh" "$n" "$reps")$'\n' || exit 1
done
echo "# numpy.linalg on ${n}x${n}, best of $rounds x $reps, $threads BLAS thread(s); $(uptime | sed 's/.*load/load/')"
printf '%-6s %12s %12s %8s\n' function direct_s qh_s ratio
fail=0
for f in inv solve svd eigh; do
    d=$(echo "$direct" | awk -v f=$f '$1 == f && (m == "" || $2 < m) { m = $2 } END { print m }')
    q=$(echo "$viaqh" | awk -v f=$f '$1 == f && (m == "" || $2 < m) { m = $2 } END { print m }')
    r=$(awk -v d="$d" -v q="$q" 'BEGIN { printf "%.3f", q / d }')
    ok=$(awk -v r="$r" 'BEGIN { print (r <= 1.1) ? "ok" : "OVER" }')
    [ "$ok" = ok ] || fail=1
    printf '%-6s %12s %12s %8s  %s (bar 1.1)\n' "$f" "$d" "$q" "$r" "$ok"
done
exit $fail
