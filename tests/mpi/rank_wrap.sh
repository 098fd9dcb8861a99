#!/bin/sh
# rank_wrap.sh DIR CMD...: runs CMD as one rank of an MPI job, recording its
# pid (DIR/pid.RANK, so a test can kill it) and its own exit status
# (DIR/status.RANK: mpirun's status is not the program's, see
# doc/distributed.md).
d=$1; shift
r=${OMPI_COMM_WORLD_RANK:-x}
"$@" <&0 &
echo $! > "$d/pid.$r"
wait $!
st=$?
echo $st > "$d/status.$r"
exit $st
