#!/usr/bin/env bash
# Out of memory where the program chooses the size (doc/internals.md,
# "Invariants and memory"): under an address-space limit, a huge repetition,
# concatenation, list or dict growth, range, join or comprehension is a
# located runtime error "out of memory" that try/catch catches and that fails
# a task cleanly; the program goes on. Skipped (77) where the limit cannot be
# set or qh cannot start under it (sanitizer builds reserve huge shadows).
# Usage: oom.sh PATH/TO/qh
set -u
qh=${1:?usage: oom.sh PATH/TO/qh}
qh=$(cd "$(dirname "$qh")" && pwd)/$(basename "$qh")
limit=900000            # KiB of address space: qh starts in ~100 MiB
export OPENBLAS_NUM_THREADS=1
probe=$( (ulimit -v $limit && "$qh" --sync -e 'print(1)') 2>&1 )
# The probe's own output is not echoed: under a sanitizer it is the
# sanitizer's start-up failure, which CI's log scan would count as a report.
if [ "$probe" != "1" ]; then echo "skipped: qh does not start under ulimit -v $limit (a sanitizer build, or too little address space)"; exit 77; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0

cat > "$tmp/caught.qh" <<'QH'
try { x = "ab" * 600000000 } catch e { print("repeat string:", e) }
xs = [1, 2]
try { ys = xs * 100000000 } catch e { print("repeat list:", e) }
try { zs = [0] * 60000000 } catch e { print("list of zeros:", e) }
s = "abcdefgh" * 20000000
try { t = s + s + s + s + s + s } catch e { print("concatenation:", e) }
s = nil
try { r = range(150000000) } catch e { print("range:", e) }
big = ["x" * 1000] * 1000
try { j = join(big * 1000, "") } catch e { print("join:", e) }
try { c = [i for i in range(200000000)] } catch e { print("comprehension:", e) }
d = {}
try { for i in range(100000000) { d[i] = i } } catch e { print("dict growth:", e, len(d) > 1000) }
d = nil
grow = []
try { for i in range(100000000) { append(grow, i) } } catch e { print("append:", e, len(grow) > 1000) }
grow = nil
acc = "x"
try { for i in range(40) { acc += acc } } catch e { print("+= doubling:", e) }
acc = nil
qfn big_task(n) { return "ab" * n }
f = big_task(600000000)
g = big_task(2)
try { print(f) } catch e { print("task:", e) }
print(g, "- still running")
QH
cat > "$tmp/caught.out" <<'OUT'
repeat string: out of memory
repeat list: out of memory
list of zeros: out of memory
concatenation: out of memory
range: out of memory
join: out of memory
comprehension: out of memory
dict growth: out of memory true
append: out of memory true
+= doubling: out of memory
task: big_task() called at caught.qh:22 failed: out of memory (caught.qh:21)
abab - still running
OUT
printf 'print("before")\ny = "ab" * 600000000\nprint("never")\n' > "$tmp/uncaught.qh"

for mode in "" --sync; do
  label="caught${mode:+ $mode}"
  out=$(cd "$tmp" && ulimit -v $limit && timeout 300 "$qh" $mode caught.qh 2>"$tmp/err"); st=$?
  if [ "$st" = 0 ] && [ "$out" = "$(cat "$tmp/caught.out")" ]; then pass=$((pass+1)); else
    fail=$((fail+1)); echo "FAIL $label: status $st"; diff <(echo "$out") "$tmp/caught.out" | head -20; head -5 "$tmp/err"; fi
  label="uncaught${mode:+ $mode}"
  out=$(cd "$tmp" && ulimit -v $limit && timeout 120 "$qh" $mode uncaught.qh 2>"$tmp/err"); st=$?
  if [ "$st" = 1 ] && [ "$out" = "before" ] && grep -q '^uncaught.qh:2:10: error: out of memory$' "$tmp/err"; then pass=$((pass+1)); else
    fail=$((fail+1)); echo "FAIL $label: status $st, stdout '$out'"; head -5 "$tmp/err"; fi
done
echo "oom: $pass passed, $fail failed"
[ "$fail" = 0 ]
