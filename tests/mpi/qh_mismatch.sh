#!/usr/bin/env bash
# qh_mismatch.sh QH — the ranks must run the same program: when a module
# the program imports differs on one rank (here: QH_PATH points each rank
# to a different copy), rank 0 says which rank differs and nothing runs
# (status 2); with the same files the program runs.
set -u
qh=$1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# ... nor are its races (tsan.supp)
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=$(cd "$(dirname "$0")" && pwd)/tsan.supp"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/a" "$tmp/b" "$tmp/prog"
echo 'fn f() { return 1 }' > "$tmp/a/mmlib.qh"
echo 'fn f() { return 2 }' > "$tmp/b/mmlib.qh"
printf 'import mmlib\nprint("ran", mmlib.f())\n' > "$tmp/prog/p.qh"
cd "$tmp/prog"
fail=0
timeout 120 mpirun -q --oversubscribe -n 1 -x QH_PATH="$tmp/a" "$qh" p.qh : -n 1 -x QH_PATH="$tmp/b" "$qh" p.qh >out 2>err
st=$?
if [ $st != 2 ] || [ -s out ] || ! grep -q '^qh: rank 1 (.*) loaded different sources than rank 0' err; then
  echo "FAIL (different module): status $st"; cat out err; fail=1
else echo "PASS (different module): $(cat err)"; fi
timeout 120 mpirun -q --oversubscribe -n 1 -x QH_PATH="$tmp/a" "$qh" p.qh : -n 1 -x QH_PATH="$tmp/a" "$qh" p.qh >out 2>err
st=$?
if [ $st != 0 ] || [ "$(cat out)" != "ran 1" ]; then echo "FAIL (same module): status $st"; cat out err; fail=1
else echo "PASS (same module): it ran"; fi
exit $fail
