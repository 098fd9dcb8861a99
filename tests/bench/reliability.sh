#!/usr/bin/env bash
# The memory figures of issue 14, each against its baseline in the same run:
#
#   1. Cycles: peak RSS of a loop that makes and drops 1,000,000
#      self-referential lists (x = [1]; append(x, x)) against the same loop
#      without the cycle (append(x, 1)). Bar: ratio <= 2. The same for
#      1,000,000 closures that refer to themselves, and for a dict cycle.
#   2. Failing imports: peak RSS of 1,000, 10,000 and 30,000 imports of a
#      module whose code raises (300 functions, then error()), each caught,
#      against 1,000. Bar: flat within 5 MB.
#   3. Fuzzing: executions per libFuzzer target (fuzz_parse, fuzz_run,
#      fuzz_gen) in FUZZ_SECONDS each (default 60; 0 skips), crashes found.
#      Needs clang; builds build-fuzz with tests/fuzz/build.sh if missing.
#
# Usage: tests/bench/reliability.sh [PATH/TO/qh]     (default build/src/qh)
# Peak RSS is GNU time's %M (KiB) of the whole process; each figure is the
# best of RUNS (default 3) runs.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
qh=${1:-build/src/qh}
qh=$(cd "$(dirname "$qh")" && pwd)/$(basename "$qh")
runs=${RUNS:-3}
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (/usr/bin/time)"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
export OPENBLAS_NUM_THREADS=1

# peak RSS in KiB (best of $runs) of: qh ARGS...
peak() {
  local best="" k
  for ((k = 0; k < runs; k++)); do
    /usr/bin/time -f %M -o "$tmp/rss" "$qh" "$@" >"$tmp/out" 2>"$tmp/err" || { echo "qh $* failed:" >&2; cat "$tmp/err" >&2; exit 1; }
    local m; m=$(tail -1 "$tmp/rss")
    if [ -z "$best" ] || [ "$m" -lt "$best" ]; then best=$m; fi
  done
  echo "$best"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

cat >cyc_list.qh <<'EOF'
for i in range(1000000) { x = [1]; append(x, x) }
print("done")
EOF
cat >acyc_list.qh <<'EOF'
for i in range(1000000) { x = [1]; append(x, 1) }
print("done")
EOF
cat >cyc_fn.qh <<'EOF'
fn mk() { fn g() { return g }; return g }
for i in range(1000000) { x = mk() }
print("done")
EOF
cat >acyc_fn.qh <<'EOF'
fn mk() { fn g() { return 1 }; return g }
for i in range(1000000) { x = mk() }
print("done")
EOF
cat >cyc_dict.qh <<'EOF'
for i in range(1000000) { d = {"a": 1}; d["self"] = d }
print("done")
EOF
cat >acyc_dict.qh <<'EOF'
for i in range(1000000) { d = {"a": 1}; d["self"] = 1 }
print("done")
EOF

echo "# qh reliability figures ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, best of $runs)"
echo
echo "## 1,000,000 dropped reference cycles: peak RSS against the same loop without the cycle (bar <= 2)"
echo
echo "| loop | with cycle (KiB) | without (KiB) | ratio | bar |"
echo "|---|---|---|---|---|"
for k in list fn dict; do
  c=$(peak "cyc_$k.qh"); a=$(peak "acyc_$k.qh"); r=$(ratio "$c" "$a")
  ok=$(awk -v r="$r" 'BEGIN { print (r <= 2 ? "ok" : "MISSED") }')
  echo "| $k | $c | $a | $r | $ok |"
done

mkdir -p mods
{
  echo 'x = 1'
  for i in $(seq 300); do echo "fn f$i(a) { return a + $i }"; done
  echo 'error("module failed on purpose")'
} >mods/failing.qh
cat >imports.qh <<'EOF'
n = num(argv[0])
caught = 0
for i in range(n) { try { import failing } catch e { caught += 1 } }
print(caught)
EOF
echo
echo "## failing imports in a loop (a 300-function module that raises): peak RSS against 1,000 (bar: flat within 5 MB)"
echo
echo "| imports | peak RSS (KiB) | growth over 1,000 (KiB) | bar |"
echo "|---|---|---|---|"
base=""
for n in 1000 10000 30000; do
  m=$(QH_PATH="$tmp/mods" peak imports.qh "$n")
  [ -n "$base" ] || base=$m
  d=$((m - base))
  ok=$([ "$d" -le 5120 ] && echo ok || echo MISSED)
  echo "| $n | $m | $d | $ok |"
done

fuzz_secs=${FUZZ_SECONDS:-60}
echo
echo "## fuzzing: executions per target in ${fuzz_secs}s each (tests/fuzz/run.sh)"
echo
if [ "$fuzz_secs" = 0 ]; then echo "skipped (FUZZ_SECONDS=0)"
elif ! command -v clang >/dev/null; then echo "skipped: no clang"
else
  fdir=${FUZZ_BUILD:-$root/build-fuzz}
  if [ ! -x "$fdir/tests/fuzz/fuzz_gen" ] || [ ! -x "$fdir/tests/fuzz/fuzz_run" ]; then
    bash "$root/tests/fuzz/build.sh" "$fdir" >"$tmp/fuzz-build.log" 2>&1 || { echo "fuzz build failed:"; tail -20 "$tmp/fuzz-build.log"; exit 1; }
  fi
  echo "| target | result |"
  echo "|---|---|"
  for t in fuzz_parse fuzz_run fuzz_gen; do
    line=$(FUZZ_SECONDS=$fuzz_secs bash "$root/tests/fuzz/run.sh" "$fdir" "$t" 2>&1 | grep -E "^$t: |artifact:" | tr '\n' ' ')
    echo "| $t | $line |"
  done
fi
