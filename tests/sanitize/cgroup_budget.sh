#!/usr/bin/env bash
# qh inside a memory-limited cgroup (issue 14): the default device budget
# must come from the process's OWN cgroup (here a child of the limited one,
# so the limit is an ancestor's), not from the hierarchy's root or physical
# memory. A call too large for the budget fails with the budget error; what
# the program printed before it is intact; nobody is OOM-killed.
#
# Makes a cgroup under the process's own memory cgroup (v1 memory
# controller or v2 with memory in subtree_control), else through
# `systemd-run --scope -p MemoryMax=`; where none can be made (no root, a
# read-only cgroup fs) it says why and exits 77 (meson: skipped).
# Usage: cgroup_budget.sh PATH/TO/qh
set -u
qh=${1:?usage: cgroup_budget.sh PATH/TO/qh}
qh=$(cd "$(dirname "$qh")" && pwd)/$(basename "$qh")
limit_mib=${CGROUP_LIMIT_MIB:-640}
limit=$((limit_mib * 1024 * 1024))
tmp=$(mktemp -d)
made=()
cleanup() {
  local i
  for ((i = ${#made[@]} - 1; i >= 0; i--)); do rmdir "${made[$i]}" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
export OPENBLAS_NUM_THREADS=1

cat >"$tmp/prog.qh" <<'EOF'
print("before")
small = device("statevector", wires=4)
large = device("statevector", wires=27)
qfn f() on small { H(0); return expval(PauliZ(0)) }
qfn g() on large { H(0); return expval(PauliZ(0)) }
print(f())
print(g())
print("after")
EOF

# The folder of this process's cgroup in the hierarchy that has the memory
# controller: "v1 DIR" or "v2 DIR".
own_memory_cgroup() {
  local line path mnt root type opts
  local v1="" v2="" has2=0
  while IFS= read -r line; do
    case "$line" in
      0::*) v2=${line#0::}; has2=1 ;;
      *:*memory*:*) v1=${line#*:*:} ;;
    esac
  done </proc/self/cgroup
  while read -r _ _ _ root mnt rest; do
    opts=${rest##* - }
    type=${opts%% *}
    if [ "$type" = cgroup ] && [ -n "$v1" ] && [[ ",${opts##* }," == *,memory,* ]]; then
      [ "$root" = / ] && { echo "v1 $mnt${v1%/}"; return 0; }
    fi
    if [ "$type" = cgroup2 ] && [ "$has2" = 1 ] && [ "$root" = / ] && [ -z "$v1" ]; then
      path="$mnt${v2%/}"
      grep -qw memory "$path/cgroup.controllers" 2>/dev/null && { echo "v2 $path"; return 0; }
    fi
  done </proc/self/mountinfo
  return 1
}

# run_in DIR CMD...: CMD in the cgroup DIR
run_in() {
  local dir=$1; shift
  sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$dir" "$@"
}

how=""
if own=$(own_memory_cgroup); then
  kind=${own%% *}; base=${own#* }
  parent=$base/qh-budget-test-$$
  if mkdir "$parent" 2>/dev/null; then
    made+=("$parent")
    if [ "$kind" = v1 ]; then
      echo "$limit" >"$parent/memory.limit_in_bytes" 2>/dev/null && mkdir "$parent/job" 2>/dev/null &&
        { made+=("$parent/job"); how="cgroup v1 $parent (limit $limit_mib MiB), qh in its child job/"; }
    else
      echo "+memory" >"$parent/cgroup.subtree_control" 2>/dev/null
      echo "$limit" >"$parent/memory.max" 2>/dev/null && mkdir "$parent/job" 2>/dev/null &&
        { made+=("$parent/job"); how="cgroup v2 $parent (limit $limit_mib MiB), qh in its child job/"; }
    fi
  fi
fi

if [ -n "$how" ]; then
  run_in "$parent/job" "$qh" --stats "$tmp/prog.qh" >"$tmp/out" 2>"$tmp/err"
  st=$?
elif command -v systemd-run >/dev/null && systemd-run --scope -q -p MemoryMax="$limit" true 2>/dev/null; then
  how="systemd-run --scope -p MemoryMax=$limit"
  systemd-run --scope -q -p MemoryMax="$limit" "$qh" --stats "$tmp/prog.qh" >"$tmp/out" 2>"$tmp/err"
  st=$?
else
  echo "SKIP: cannot make a memory-limited cgroup here (not root, no writable cgroup fs with the memory controller, no systemd-run)"
  exit 77
fi

echo "ran in: $how"
fail=0
check() { if ! eval "$1"; then echo "FAIL: $2"; fail=1; fi; }
check '[ "$st" = 1 ]' "exit status $st, expected 1 (137 = OOM-killed)"
check 'printf "before\n0\n" | cmp -s - "$tmp/out"' "stdout is not exactly 'before', '0':$(sed 's/^/  | /' "$tmp/out")"
check 'grep -q "needs 2.0 GiB, budget is" "$tmp/err"' "no budget error on stderr"
budget=$(sed -n 's/.*of a \(.*\) budget$/\1/p' "$tmp/err")
check '[ "$budget" = "$((limit_mib / 2)).0 MiB" ]' "budget '$budget', expected half the cgroup limit ($((limit_mib / 2)).0 MiB)"
if [ "$fail" = 0 ]; then echo "cgroup budget: PASS (budget $budget)"; else sed 's/^/  stderr| /' "$tmp/err"; fi
exit $fail
