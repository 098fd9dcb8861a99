#!/usr/bin/env bash
# metric_tensor's cost (issue 24): one call of metric_tensor on a
# 4-parameter, 3-wire circuit against one grad (adjoint) of the same
# circuit, measured in the same run (tests/bench/metric/metric.qh).
#
#   tests/bench/metric.sh [PATH/TO/qh]
#
# Time: ROUNDS (default 5) rounds, each timing N (default 2000) calls of
# metric_tensor and N of grad, alternating, by the program's clock(), with
# --sync (the calls' own cost, no dispatch) and with workers (the default);
# the best round of each counts. Prints the per-call times and the ratio
# metric / grad (the goal: <= 3).
# Allocation: valgrind's heap summary ("bytes allocated") of --sync runs
# with A (default 10) and B (default 60) calls; (bytes(B) - bytes(A)) /
# (B - A) is the bytes a call allocates (the goal: <= 1 MB), for
# metric_tensor and for grad. Skipped when valgrind is missing.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
qh=${1:-$root/build/src/qh}
prog=$here/metric/metric.qh
rounds=${ROUNDS:-5}
n=${N:-2000}
a=${A:-10}
b=${B:-60}
[ -x "$qh" ] || { echo "error: qh binary not found: $qh" >&2; exit 2; }

best() { # the smallest of the numbers on stdin
    sort -g | head -1
}
echo "| mode | metric_tensor / call | grad / call | ratio (goal <= 3) |"
echo "|---|---|---|---|"
for mode in --sync ""; do
    : > /tmp/metric_bench_m.$$; : > /tmp/metric_bench_g.$$
    for r in $(seq "$rounds"); do
        "$qh" $mode "$prog" metric "$n" >> /tmp/metric_bench_m.$$ || exit 1
        "$qh" $mode "$prog" grad "$n" >> /tmp/metric_bench_g.$$ || exit 1
    done
    tm=$(best < /tmp/metric_bench_m.$$)
    tg=$(best < /tmp/metric_bench_g.$$)
    awk -v m="$tm" -v g="$tg" -v n="$n" -v mode="${mode:-workers}" 'BEGIN {
        printf "| %s | %.1f us | %.1f us | %.2f |\n", mode, 1e6 * m / n, 1e6 * g / n, m / g }'
done
rm -f /tmp/metric_bench_m.$$ /tmp/metric_bench_g.$$

if ! command -v valgrind >/dev/null 2>&1; then
    echo "valgrind not found: allocation per call not measured"
    exit 0
fi
bytes() { # WHICH N -> bytes allocated by the whole run
    valgrind "$qh" --sync "$prog" "$1" "$2" 2>&1 >/dev/null |
        sed -n 's/.*total heap usage:.* \([0-9,]*\) bytes allocated.*/\1/p' | tr -d ,
}
echo
echo "| what | bytes allocated per call (goal <= 1 MB) |"
echo "|---|---|"
for which in metric grad; do
    ba=$(bytes "$which" "$a")
    bb=$(bytes "$which" "$b")
    awk -v x="$ba" -v y="$bb" -v a="$a" -v b="$b" -v w="$which" 'BEGIN {
        printf "| %s | %.0f |\n", (w == "metric" ? "metric_tensor" : "grad"), (y - x) / (b - a) }'
done
