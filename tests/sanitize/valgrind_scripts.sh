#!/usr/bin/env bash
# Runs every script test (DIR/*.qh, files starting with _ are helper
# modules) under valgrind memcheck with --sync, the sequential subset:
# no invalid reads or writes, no uninitialised values, and no "definitely
# lost" or "indirectly lost" bytes. Output is not compared (run_scripts.sh
# does that); the `# args:`, `# flags:` and `# stdin:` headers are honoured.
# Usage: valgrind_scripts.sh PATH/TO/qh DIR [NAME...]
# VALGRIND_TIMEOUT (seconds per script, default 300); logs are kept in
# $VALGRIND_LOG_DIR when set; VALGRIND_JOBS scripts run at once.
set -u
qh=${1:?usage: valgrind_scripts.sh PATH/TO/qh DIR [NAME...]}
dir=${2:?usage: valgrind_scripts.sh PATH/TO/qh DIR [NAME...]}
shift 2
command -v valgrind >/dev/null || { echo "valgrind_scripts.sh: valgrind is not installed" >&2; exit 1; }
qh=$(cd "$(dirname "$qh")" && pwd)/$(basename "$qh")
dir=$(cd "$dir" && pwd)
only=" $* "
limit=${VALGRIND_TIMEOUT:-300}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
logs=${VALGRIND_LOG_DIR:-$tmp}
mkdir -p "$logs"
# check_one NAME: one script under memcheck; prints its "ok"/"FAIL" lines
check_one() {
  local name=$1 t=$dir/$1.qh args flags stdin_text log start st took definite indirect errors why
  args=$(sed -n 's/^# args: *//p' "$t" | head -1)
  flags=$(sed -n 's/^# flags: *//p' "$t" | head -1)
  stdin_text=$(sed -n 's/^# stdin: *//p' "$t")
  log=$logs/$name.valgrind.log
  start=$(date +%s)
  # shellcheck disable=SC2086
  (cd "$dir" && printf '%s' "$stdin_text${stdin_text:+$'\n'}" |
     timeout "$limit" valgrind --error-exitcode=99 --leak-check=full \
       --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
       --num-callers=30 --log-file="$log" "$qh" --sync $flags "$name.qh" $args >/dev/null 2>"$tmp/$name.err")
  st=$?
  took=$(( $(date +%s) - start ))
  definite=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$log" | tr -d , | tail -1)
  indirect=$(sed -n 's/.*indirectly lost: \([0-9,]*\) bytes.*/\1/p' "$log" | tr -d , | tail -1)
  errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9,]*\) errors.*/\1/p' "$log" | tr -d , | tail -1)
  definite=${definite:-0}; indirect=${indirect:-0}; errors=${errors:-?}
  why=""
  if [ "$st" = 124 ]; then why="timed out after ${limit}s"
  elif [ "$st" = 99 ] || [ "$definite" != 0 ] || [ "$indirect" != 0 ] || { [ "$errors" != 0 ] && [ "$errors" != "?" ]; }; then
    why="valgrind: $errors errors, definitely lost $definite bytes, indirectly lost $indirect bytes"
  elif [ "$st" -ge 128 ]; then why="killed by a signal (status $st)"
  elif ! grep -q 'ERROR SUMMARY' "$log"; then why="no valgrind summary (status $st)"
  fi
  if [ -z "$why" ]; then
    echo "ok   $name --sync (${took}s, status $st)"
  else
    echo "FAIL $name --sync: $why (${took}s)"
    # the first error and the leak records, without the noise
    grep -E '^==[0-9]+== (Invalid|Conditional|Use of|Syscall|Mismatched|Source and|[0-9,]+ .*bytes in .* blocks are (definitely|indirectly) lost|   (at|by) 0x)' "$log" |
      sed 's/^==[0-9]*== /  | /' | head -40
  fi
}

# VALGRIND_JOBS scripts at a time (default: one per core; memcheck runs a
# program on one thread), reported in the folder's order
jobs=${VALGRIND_JOBS:-$(nproc 2>/dev/null || echo 1)}
names=()
for t in "$dir"/*.qh; do
  name=$(basename "$t" .qh)
  case "$name" in _*) continue;; esac
  if [ "$#" -gt 0 ]; then case "$only" in *" $name "*) ;; *) continue;; esac; fi
  names+=("$name")
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  check_one "$name" >"$tmp/$name.result" &
done
wait
pass=0; fail=0
for name in "${names[@]}"; do
  cat "$tmp/$name.result"
  if grep -q '^ok ' "$tmp/$name.result"; then pass=$((pass+1)); else fail=$((fail+1)); fi
done
echo "valgrind $(basename "$dir"): $pass passed, $fail failed"
[ "$fail" = 0 ]
