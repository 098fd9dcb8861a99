#!/usr/bin/env bash
# Results copied out of a call are budgeted (issue 14, lang/async.md
# "Memory"): a large result (state(), probs() of many wires) counts beside
# the call's state until the call ends, so a --max-memory that holds the
# state but not the state and its copy gives the budget error, catchable,
# output before it intact; a budget that holds both runs. Both modes.
# Usage: copy_budget.sh PATH/TO/qh
set -u
qh=${1:?usage: copy_budget.sh PATH/TO/qh}
qh=$(cd "$(dirname "$qh")" && pwd)/$(basename "$qh")
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
pass=0; fail=0
cat > t.qh <<'QH'
big = device("statevector", wires=22)          # 64 MiB of state
small = device("statevector", wires=21)        # 32 MiB
qfn st(d) on big { H(0); return state() }
qfn st_small() on small { H(0); return state() }
qfn pr() on big { H(0); return probs() }
qfn ev() on big { H(0); return expval(PauliZ(0)) }
qfn two() on small { H(0); return [state(), state()] }
print("before")
print(ev())
print(len(st_small()))
try { print(len(st(1))) } catch e { print("state:", e) }
try { print(len(pr())) } catch e { print("probs:", e) }
try { print(len(two())) } catch e { print("two:", e) }
print("end")
QH
want='before
0
2097152
state: st() called at t.qh:11 failed: state(): its result needs 64.0 MiB beside the 64.0 MiB its call holds, and the budget is 64.0 MiB (--max-memory) (t.qh:3)
probs: pr() called at t.qh:12 failed: probs(): its result needs 32.0 MiB beside the 64.0 MiB its call holds, and the budget is 64.0 MiB (--max-memory) (t.qh:5)
two: two() called at t.qh:13 failed: state(): its result needs 64.0 MiB beside the 32.0 MiB its call holds, and the budget is 64.0 MiB (--max-memory) (t.qh:7)
end'
for mode in "" --sync; do
  out=$(timeout 120 "$qh" $mode --max-memory 64M t.qh 2>err); st=$?
  if [ "$st" = 0 ] && [ "$out" = "$want" ]; then pass=$((pass+1)); else
    fail=$((fail+1)); echo "FAIL ${mode:-default}: status $st"; diff <(echo "$want") <(echo "$out") | head; head -5 err; fi
done
# the budget that holds the state and its copy runs the same call
out=$(timeout 120 "$qh" --max-memory 128M -e 'dev = device("statevector", wires=22)
qfn st() on dev { H(0); return state() }
print(len(st()))' 2>&1); st=$?
if [ "$st" = 0 ] && [ "$out" = 4194304 ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL 128M: status $st: $out"; fi
echo "copy_budget: $pass passed, $fail failed"
[ "$fail" = 0 ]
