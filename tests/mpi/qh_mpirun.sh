#!/usr/bin/env bash
# qh_mpirun.sh ARGS... — qh ($QH_REAL) started by mpirun on 2 ranks, for
# the conformance suite: the program runs once (rank 0) and must print the
# same bytes as a plain run.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
# Open MPI's own allocations are not ours to check (see run.sh)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# ... nor are its races (tsan.supp). A suppressed race still has TSan
# describe the racy address: inside Open MPI's shared-memory segment (a file
# in /dev/shm, not an object file) the symbolizer then prints "LLVMSymbolizer:
# error reading file: Invalid data ..." on stderr. That line is the
# sanitizer runtime's, never qh's, so it is dropped here; a report that is
# not suppressed still fails the run (halt_on_error: exit status 66).
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=$(cd "$(dirname "$0")" && pwd)/tsan.supp"
exec 3>&2
mpirun -q --oversubscribe -n "${QH_RANKS:-2}" "$QH_REAL" "$@" 2> >(grep -v '^LLVMSymbolizer: error reading file: ' >&3)
st=$?
wait $!
exit $st
