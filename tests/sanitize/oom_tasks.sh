#!/usr/bin/env bash
# Out of memory inside tasks (issue 14; the located 'out of memory' policy is
# doc/internals.md's): under an address-space limit a task that grows a
# list fails with the located error, one that catches it goes on, a task
# needing a failed one passes the failure on (one line per hop), and a
# result too big to copy out of its task (or into the main thread) is an
# error, not the end of qh. Each in the default mode and --sync; the
# program reaches its last line with status 0. Skipped (77) where qh cannot
# start under the limit (sanitizer builds reserve huge shadows).
# Usage: oom_tasks.sh PATH/TO/qh
set -u
qh=${1:?usage: oom_tasks.sh PATH/TO/qh}
qh=$(cd "$(dirname "$qh")" && pwd)/$(basename "$qh")
limit=900000            # KiB of address space
export OPENBLAS_NUM_THREADS=1
probe=$( (ulimit -v $limit && "$qh" --sync -e 'print(1)') 2>&1 )
# The probe's own output is not echoed: under a sanitizer it is the
# sanitizer's start-up failure, which CI's log scan would count as a report.
if [ "$probe" != "1" ]; then echo "skipped: qh does not start under ulimit -v $limit (a sanitizer build, or too little address space)"; exit 77; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
pass=0; fail=0

cat > t.qh <<'QH'
qfn grow() { xs = []; for i in range(100000000) { append(xs, i) }; return len(xs) }
qfn grow_caught() { xs = []; try { for i in range(100000000) { append(xs, i) } } catch e { return "caught in task: " + str(e) }; return 0 }
qfn rep(n) { return [0] * n }
qfn after(x) { return len(x) }
qfn text(n) { s = "ab"; for i in range(n) { s += s }; return len(s) }
f = grow()
g = grow_caught()
h = after(rep(100000000))
t = text(40)
try { print(f) } catch e { print("grow:", e) }
print(g)
try { print(h) } catch e { print("chain:", e) }
try { print(t) } catch e { print("doubling:", e) }
qfn ret_big() { return [1.5] * 25000000 }
try { r = ret_big(); print(len(r)) } catch e { print("result copy:", e) }
qfn ret_str() { return "x" * 400000000 }
try { r = ret_str(); print(len(r)) } catch e { print("string copy:", e) }
print("end")
QH
for mode in "" --sync; do
  out=$(ulimit -v $limit && timeout 300 "$qh" $mode t.qh 2>err); st=$?
  why=""
  [ "$st" = 0 ] || why="exit status $st"
  while IFS='|' read -r prefix needle; do
    line=$(grep -m1 -F -- "$prefix" <<<"$out")
    if [ -z "$line" ] || ! grep -q -F -- "$needle" <<<"$line"; then why="$why; no line '$prefix...$needle'"; fi
  done <<'WANT'
grow: grow() called at t.qh:6 failed: out of memory (t.qh:1)|out of memory
caught in task: out of memory|out of memory
chain: after() called at t.qh:8 failed: out of memory (t.qh:3)|out of memory
  via rep() called at t.qh:8 (needed at t.qh:4)|needed
doubling: text() called at t.qh:9 failed:|out of memory
result copy: ret_big() called at t.qh:15|out of memory
string copy: ret_str() called at t.qh:17|out of memory
end|end
WANT
  if [ -z "$why" ]; then pass=$((pass+1)); else
    fail=$((fail+1)); echo "FAIL ${mode:-default}: $why"; echo "$out" | head -20 | sed 's/^/  out| /'; head -5 err | sed 's/^/  err| /'; fi
done
echo "oom_tasks: $pass passed, $fail failed"
[ "$fail" = 0 ]
