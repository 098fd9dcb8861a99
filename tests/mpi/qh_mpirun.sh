#!/bin/sh
# qh_mpirun.sh ARGS... — qh ($QH_REAL) started by mpirun on 2 ranks, for
# the conformance suite: the program runs once (rank 0) and must print the
# same bytes as a plain run.
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_btl
# Open MPI's own allocations are not ours to check (see run.sh)
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"; export ASAN_OPTIONS
# ... nor are its races (tsan.supp)
TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=$(cd "$(dirname "$0")" && pwd)/tsan.supp"; export TSAN_OPTIONS
exec mpirun -q --oversubscribe -n "${QH_RANKS:-2}" "$QH_REAL" "$@"
