#!/usr/bin/env bash
# The numpy suite (meson test numpy): qh against NumPy's own output.
#
# numpy.linalg and qh call the same OpenBLAS/LAPACK routines on the same
# copies, so their results are compared exactly; but OpenBLAS picks its
# kernels by CPU type at run time, and the kernels round differently (an
# AVX-512 machine's SkylakeX kernels and a Zen or Haswell machine's give
# different last bits in inv, solve, det, lstsq and polyfit). So:
#   - OPENBLAS_CORETYPE, when the environment does not set it, is Haswell
#     on a CPU that can run those kernels (AVX2 and FMA): the kernels the
#     stored outputs were made with (make_arrays.py sets the same default);
#     a value the environment sets is left as it is;
#   - where /usr/bin/python3 has numpy and scipy, make_arrays.py runs again
#     here, under the same environment, into a copy of this folder, and qh
#     is compared with that: NumPy's output on this machine, whatever
#     kernels it picked. Elsewhere the stored outputs are the reference.
# One OpenBLAS thread (eigh and eig split their reductions by thread count).
# Usage: run.sh PATH/TO/qh
set -u
qh=${1:?usage: run.sh PATH/TO/qh}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export OPENBLAS_NUM_THREADS=1
if [ -z "${OPENBLAS_CORETYPE:-}" ] && grep -qw avx2 /proc/cpuinfo 2>/dev/null &&
   grep -qw fma /proc/cpuinfo 2>/dev/null; then
  export OPENBLAS_CORETYPE=Haswell
fi
dir=$here
py=/usr/bin/python3
if [ -x "$py" ] && "$py" -c 'import numpy, scipy' 2>/dev/null; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  cp -r "$here"/. "$tmp"/
  if (cd "$tmp" && "$py" make_arrays.py >/dev/null); then
    echo "reference: NumPy on this machine (OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-as OpenBLAS picks})"
    dir=$tmp
  else
    echo "make_arrays.py failed here: the stored outputs are the reference"
  fi
else
  echo "no numpy and scipy for /usr/bin/python3: the stored outputs are the reference" \
       "(OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-as OpenBLAS picks})"
fi
# not exec: the EXIT trap removes the copy afterwards
bash "$here/../run_scripts.sh" "$qh" "$dir"
