#!/usr/bin/env bash
# qh_kill.sh QH — a rank serving qh's tasks is SIGKILLed mid-run (under
# `mpirun --enable-recovery`: without it Open MPI ends the whole job): the
# program goes on, the tasks that rank held fail naming it ("rank 2 died
# (its process N is gone)"), nobody read them, so rank 0 reports them and
# exits with status 1; nothing hangs. Then SIGINT to rank 0 (the program's
# Ctrl-C) cancels the calls running on other ranks: status 130, at once.
set -u
qh=$1
here=$(cd "$(dirname "$0")" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# ... nor are its races (tsan.supp)
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=$(cd "$(dirname "$0")" && pwd)/tsan.supp"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
# wait_file F: until F exists (at most 60 s)
wait_file() { for _ in $(seq 600); do [ -s "$1" ] && return 0; sleep 0.1; done; return 1; }

# ---- a rank killed
d=$tmp/kill; mkdir "$d"
t0=$(date +%s)
(cd "$here/programs" && timeout 150 mpirun --enable-recovery --oversubscribe --bind-to none -n 3 \
   "$here/rank_wrap.sh" "$d" "$qh" --workers 1 --stats _slow.qh >"$d/out" 2>"$d/err"; echo $? >"$d/mpirun") &
job=$!
if wait_file "$d/pid.2"; then
  sleep 2                                   # its first calls are running
  kill -9 "$(cat "$d/pid.2")"
fi
wait $job
took=$(( $(date +%s) - t0 ))
st0=$(cat "$d/status.0" 2>/dev/null || echo none)
grep -v -E 'PMIX ERROR|^-+$' "$d/err" | grep -v '^$' | head -20
if [ "$(cat "$d/mpirun")" = 124 ]; then echo "FAIL (kill): the job hung"; fail=1
elif [ "$st0" != 1 ]; then echo "FAIL (kill): rank 0 exited with $st0, want 1"; fail=1
elif ! grep -q '^done$' "$d/out"; then echo "FAIL (kill): the program did not finish"; fail=1
elif ! grep -q -E '^_slow.qh:5: warning: slow\(\) failed and its result was never used: rank 2 died \(its process [0-9]+ is gone\)$' "$d/err"; then
  echo "FAIL (kill): no warning naming rank 2"; fail=1
elif ! grep -q -E '^qh stats: rank 2 .*died: its process' "$d/err"; then echo "FAIL (kill): --stats does not name the dead rank"; fail=1
else echo "PASS (kill): rank 2's tasks failed naming it, rank 0 finished with status 1 in ${took}s (mpirun: $(cat "$d/mpirun"))"; fi

# ---- Ctrl-C at rank 0
d=$tmp/int; mkdir "$d"
sed 's/latency=0.4/latency=30/' "$here/programs/_slow.qh" > "$d/long.qh"
t0=$(date +%s)
(cd "$d" && timeout 150 mpirun --oversubscribe --bind-to none -n 3 "$here/rank_wrap.sh" "$d" "$qh" --workers 1 long.qh \
   >"$d/out" 2>"$d/err"; echo $? >"$d/mpirun") &
job=$!
if wait_file "$d/pid.0"; then sleep 3; kill -INT "$(cat "$d/pid.0")"; fi
wait $job
took=$(( $(date +%s) - t0 ))
# the others end with 0, unless mpirun, seeing rank 0's status, ends them first
st=$(for r in 0 1 2; do cat "$d/status.$r" 2>/dev/null || echo gone; done | tr '\n' ' ')
if ! [[ "$st" =~ ^130\ (0|gone)\ (0|gone)\ $ ]]; then echo "FAIL (Ctrl-C): exit statuses $st, want 130 then 0s"; head "$d/err"; fail=1
elif [ "$took" -gt 60 ]; then echo "FAIL (Ctrl-C): took ${took}s (the 30 s calls were not cancelled)"; fail=1
else echo "PASS (Ctrl-C): rank 0 ended with 130 (others: $st), in ${took}s"; fi
exit $fail
