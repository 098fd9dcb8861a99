#!/usr/bin/env bash
# run.sh [--no-digest] PROGRAM [NP...] — runs an MPI test program under mpirun on each
# rank count (default 1 2 4), oversubscribed (2 cores here), as root too;
# each run writes a digest of its results and the digests must be equal
# byte for byte (results do not depend on the rank count).
set -u
digest=1
if [ "${1:-}" = --no-digest ]; then digest=0; shift; fi
prog=$1; shift
nps=("$@"); [ ${#nps[@]} -eq 0 ] && nps=(1 2 4)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# quiet, local-only transports: shared memory and self
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
# Under AddressSanitizer: Open MPI allocates in components it unloads at
# MPI_Finalize, so LeakSanitizer cannot even name those leaks; leak checks
# of our code run in test_dsv_serial (no MPI) instead.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# ... nor are its races (tsan.supp)
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=$(cd "$(dirname "$0")" && pwd)/tsan.supp"
st=0
for np in "${nps[@]}"; do
  if [ $digest = 0 ]; then
    mpirun --oversubscribe -n "$np" "$prog" || { echo "FAIL: $prog on $np ranks"; st=1; }
    continue
  fi
  if ! mpirun --oversubscribe -n "$np" "$prog" "$tmp/digest.$np"; then
    echo "FAIL: $prog on $np ranks"; st=1
  fi
done
[ $digest = 0 ] && exit $st
first=${nps[0]}
for np in "${nps[@]}"; do
  [ -f "$tmp/digest.$np" ] || { echo "FAIL: no digest from $np ranks"; st=1; continue; }
  if ! cmp -s "$tmp/digest.$first" "$tmp/digest.$np"; then
    echo "FAIL: results on $np ranks differ from $first ranks:"; diff "$tmp/digest.$first" "$tmp/digest.$np" | head -20; st=1
  fi
done
[ $st = 0 ] && echo "digests equal on ${nps[*]} ranks ($(wc -l <"$tmp/digest.$first") results)"
exit $st
