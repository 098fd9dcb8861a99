#!/usr/bin/env bash
# Figures of issue 17 (distribution over MPI ranks), measured in one run:
#
#   tests/bench/dist.sh [BUILD_DIR]      (default build; needs -Dmpi, mpirun)
#
# 1. Memory and traffic of a distributed 24-wire state on 4 ranks
#    (oversubscribed on 2 cores: time is not the point). A Hadamard on every
#    wire touches every amplitude; the global wires' gates run as block
#    exchanges (relabelling off, so every one of them moves data). Per rank:
#    peak memory above what the process had before the state existed
#    (VmHWM - VmRSS before), against a quarter of the same figure for the
#    same program on one rank, plus the fixed exchange buffer (allowing 2%
#    for the MPI library's and malloc's own bookkeeping); and the bytes
#    each rank sends per global-wire gate, counted, against 2^n 16 / R.
# 2. Task farm: 64 independent 14-wire circuits on one rank with one worker
#    thread, and on -n 2 with one worker per rank (rank 0's own and rank
#    1's, tasks over the farm): the speed-up (bar >= 1.8) and the checksum of
#    the answers (equal in both runs). Best of RUNS interleaved runs each.
# 3. The same through qh itself: tests/bench/dist_farm.qh, TASKS calls of a
#    Q-wire qfn started at once, as `qh --workers 1` (one worker thread; the
#    program waits in sync(), so the main thread runs none of them) and as
#    `mpirun -n 2 qh --workers 1` (the calls travel to rank 1's worker too).
#    The program times itself from the first call to the last result (not
#    mpirun's start-up); the speed-up (bar >= 1.8) and the printed sum (the
#    same bytes in both runs). Best of RUNS interleaved runs each.
set -u
build=${1:-build}
exe=$build/tests/bench/bench_dist
qh=$build/src/qh
prog=$(cd "$(dirname "$0")" && pwd)/dist_farm.qh
ninja -C "$build" tests/bench/bench_dist src/qh >/dev/null || { echo "cannot build $exe (configure with -Dmpi=enabled)"; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader
N=${N:-24} RUNS=${RUNS:-3} TASKS=${TASKS:-64} Q=${Q:-14} DEPTH=${DEPTH:-40}
run() { mpirun --oversubscribe -n "$1" "${@:2}" 2>/dev/null; }
field() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p"; }

echo "## Distributed $N-wire state (Hadamard on every wire, exchanges for global wires)"
one=$(run 1 "$exe" mem "$N")
four=$(run 4 "$exe" mem "$N")
[ -n "$one" ] && [ -n "$four" ] || { echo "FAIL: bench_dist mem did not run"; exit 1; }
p1=$(echo "$one" | field state_peak_kib)
echo
echo "| ranks | rank | state peak (MiB) | chunk (MiB) | exchange buffer (MiB) | bytes sent per global gate | 2^n·16/R | ratio | local gate (s) | global gate (s) |"
echo "|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n%s\n' "$one" "$(echo "$four" | sort)" | while read -r line; do
  r=$(echo "$line" | field rank); R=$(echo "$line" | field ranks)
  pk=$(echo "$line" | field state_peak_kib); ck=$(echo "$line" | field chunk_kib); xb=$(echo "$line" | field xbuf_kib)
  b=$(echo "$line" | field bytes_per_global_gate); th=$(echo "$line" | field theory_bytes)
  tl=$(echo "$line" | field local_gate_s); tg=$(echo "$line" | field global_gate_s)
  if [ "$R" = 1 ]; then b="-"; th="-"; ratio="-"; else ratio=$(awk -v a="$b" -v t="$th" 'BEGIN{printf "%.4f", a/t}'); fi
  awk -v R="$R" -v r="$r" -v pk="$pk" -v ck="$ck" -v xb="$xb" -v b="$b" -v th="$th" -v ratio="$ratio" -v tl="$tl" -v tg="$tg" \
    'BEGIN{printf "| %d | %d | %.1f | %.1f | %.1f | %s | %s | %s | %s | %s |\n", R, r, pk/1024, ck/1024, xb/1024, b, th, ratio, tl, tg}'
done
worst=$(echo "$four" | field state_peak_kib | sort -n | tail -1)
xbk=$(echo "$four" | field xbuf_kib | head -1)
verdict=$(awk -v w="$worst" -v p="$p1" -v x="$xbk" 'BEGIN{ lim = p/4 + x; printf "%s (worst rank %.1f MiB, bound %.1f MiB = %.1f/4 + %.1f)", (w <= lim*1.02 ? "PASS" : "FAIL"), w/1024, lim/1024, p/1024, x/1024 }')
echo
echo "per-rank peak <= single-process peak / 4 + exchange buffer: $verdict"
bad=$(echo "$four" | awk '{ for (i=1;i<=NF;i++) { split($i,a,"="); v[a[1]]=a[2] } if (v["bytes_per_global_gate"] != v["theory_bytes"]) print "rank " v["rank"] }')
echo "bytes per global-wire gate = 2^$N·16/4 on every rank: $([ -z "$bad" ] && echo PASS || echo "FAIL ($bad)")"

echo
echo "## Task farm: $TASKS independent $Q-wire circuits (depth $DEPTH)"
best1=999999; best2=999999; c1=""; c2=""
for i in $(seq "$RUNS"); do
  a=$(run 1 "$exe" farm "$TASKS" "$Q" "$DEPTH"); b=$(run 2 "$exe" farm "$TASKS" "$Q" "$DEPTH")
  s1=$(echo "$a" | field seconds); s2=$(echo "$b" | field seconds)
  c1=$(echo "$a" | field checksum); c2=$(echo "$b" | field checksum)
  best1=$(awk -v a="$best1" -v b="$s1" 'BEGIN{print (b<a?b:a)}'); best2=$(awk -v a="$best2" -v b="$s2" 'BEGIN{print (b<a?b:a)}')
done
echo
echo "| run | workers | best of $RUNS (s) | checksum |"
echo "|---|---|---|---|"
echo "| one process | 1 | $best1 | $c1 |"
echo "| mpirun -n 2 | 1 per rank | $best2 | $c2 |"
sp=$(awk -v a="$best1" -v b="$best2" 'BEGIN{printf "%.2f", a/b}')
ok=$(awk -v s="$sp" 'BEGIN{print (s >= 1.8 ? "PASS" : "FAIL")}')
echo
echo "speed-up -n 2 / one process: ${sp}x (bar >= 1.8): $ok; checksums $([ "$c1" = "$c2" ] && echo equal || echo DIFFER)"

echo
echo "## qh task farm: $TASKS calls of a $Q-wire qfn (depth $DEPTH), qh --workers 1 vs mpirun -n 2 qh --workers 1"
best1=999999; best2=999999; o1=""; o2=""
for i in $(seq "$RUNS"); do
  a=$("$qh" --workers 1 "$prog" "$TASKS" "$Q" "$DEPTH"); b=$(run 2 "$qh" --workers 1 "$prog" "$TASKS" "$Q" "$DEPTH")
  s1=$(echo "$a" | sed -n 's/^seconds //p'); s2=$(echo "$b" | sed -n 's/^seconds //p')
  [ -n "$s1" ] && [ -n "$s2" ] || { echo "FAIL: dist_farm.qh did not run"; exit 1; }
  o1=$(echo "$a" | head -1); o2=$(echo "$b" | head -1)
  best1=$(awk -v a="$best1" -v b="$s1" 'BEGIN{print (b<a?b:a)}'); best2=$(awk -v a="$best2" -v b="$s2" 'BEGIN{print (b<a?b:a)}')
done
echo
echo "| run | workers | best of $RUNS (s) | sum printed |"
echo "|---|---|---|---|"
echo "| qh | 1 | $best1 | $o1 |"
echo "| mpirun -n 2 qh | 1 per rank | $best2 | $o2 |"
sp=$(awk -v a="$best1" -v b="$best2" 'BEGIN{printf "%.2f", a/b}')
ok=$(awk -v s="$sp" 'BEGIN{print (s >= 1.8 ? "PASS" : "FAIL")}')
echo
echo "qh speed-up -n 2 / one process: ${sp}x (bar >= 1.8): $ok; output $([ "$o1" = "$o2" ] && echo identical || echo DIFFERS)"
