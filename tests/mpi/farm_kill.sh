#!/usr/bin/env bash
# farm_kill.sh TEST_FARM — a worker rank SIGKILLs itself mid-run: rank 0
# must name it, fail its tasks, finish the rest elsewhere and end, with no
# process left hanging. Needs `mpirun --enable-recovery` (Open MPI 4.1
# aborts the whole job on a dead rank otherwise; its exit status is then
# not the program's, see doc/distributed.md).
set -u
prog=$1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# ... nor are its races (tsan.supp)
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=$(cd "$(dirname "$0")" && pwd)/tsan.supp"
out=$(mktemp); trap 'rm -f "$out"' EXIT
fail=0
for mode in kill kill-timeout; do
  t0=$(date +%s)
  timeout 150 mpirun --enable-recovery --oversubscribe -n 3 "$prog" $mode 2 >"$out" 2>&1
  st=$?
  took=$(( $(date +%s) - t0 ))
  grep -v -E 'PMIX ERROR|^-+$' "$out" | grep -v '^$' | head -20
  if [ $st = 124 ]; then echo "FAIL ($mode): the job hung (killed after ${took}s)"; fail=1; continue; fi
  if ! grep -q '^farm OK: .*rank 2 killed.*rank 2 died (' "$out"; then echo "FAIL ($mode): no report naming rank 2"; fail=1; continue; fi
  if grep -q 'check failed' "$out"; then echo "FAIL ($mode): checks failed"; fail=1; continue; fi
  echo "PASS ($mode): rank 2 killed, reported and survived by the others in ${took}s"
done
exit $fail
