#!/usr/bin/env bash
# Golden-output script tests: runs every NAME.qh in a folder (files starting
# with _ are helper modules) and compares stdout with NAME.out. Leading
# comment lines may say:
#   # status: N        expected exit status (default 0)
#   # stderr: TEXT     TEXT must appear in stderr (repeatable)
#   # args: A B        arguments after the script path
#   # stdin: TEXT      a line fed to standard input
#   # async-only       skip the --sync rerun (the test looks at time)
#   # flags: F         extra interpreter options
#   # workers: N M     also run with --workers N, --workers M (scheduling must not matter)
#   # also: OPTS       also run with these options (repeatable)
#   # same-stderr      every run's stderr must equal the first run's, byte for byte
#   # same-stdout      likewise for stdout (for output that may differ between
#                      machines, e.g. last bits, kept without a NAME.out)
# Every test also runs with --sync unless async-only; all runs must match.
# QH_TEST_LIGHT=1 (.ci/run's ThreadSanitizer step, which looks for races, not
# for output differences the test step already checks) leaves out --sync,
# the one mode without worker threads.
# Usage: run_scripts.sh PATH/TO/qh DIR [NAME...]
set -u
qh=${1:?usage: run_scripts.sh PATH/TO/qh DIR [NAME...]}
dir=${2:?usage: run_scripts.sh PATH/TO/qh DIR [NAME...]}
shift 2
qh=$(cd "$(dirname "$qh")" && pwd)/$(basename "$qh")
dir=$(cd "$dir" && pwd)
only=" $* "
pass=0; fail=0; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for t in "$dir"/*.qh; do
  name=$(basename "$t" .qh)
  case "$name" in _*) continue;; esac
  if [ "$#" -gt 0 ]; then case "$only" in *" $name "*) ;; *) continue;; esac; fi
  want_status=$(sed -n 's/^# status: *//p' "$t" | head -1); want_status=${want_status:-0}
  args=$(sed -n 's/^# args: *//p' "$t" | head -1)
  flags=$(sed -n 's/^# flags: *//p' "$t" | head -1)
  stdin_text=$(sed -n 's/^# stdin: *//p' "$t")
  modes=("" "--sync"); grep -q '^# async-only' "$t" && modes=("")
  [ "${QH_TEST_LIGHT:-}" = 1 ] && modes=("")
  for w in $(sed -n 's/^# workers: *//p' "$t" | head -1); do modes+=("--workers $w"); done
  while IFS= read -r extra; do [ -n "$extra" ] && modes+=("$extra"); done < <(sed -n 's/^# also: *//p' "$t")
  same_err=0; grep -q '^# same-stderr' "$t" && same_err=1; first=1
  same_out=0; grep -q '^# same-stdout' "$t" && same_out=1
  for mode in "${modes[@]}"; do
    label="$name${mode:+ $mode}"
    # shellcheck disable=SC2086
    (cd "$dir" && printf '%s' "$stdin_text${stdin_text:+$'\n'}" | timeout 120 "$qh" $mode $flags "$name.qh" $args >"$tmp/out" 2>"$tmp/err")
    st=$?; why=""
    [ "$st" = "$want_status" ] || why="exit status $st, expected $want_status"
    if [ -z "$why" ] && [ -f "$dir/$name.out" ] && ! cmp -s "$tmp/out" "$dir/$name.out"; then
      why="stdout differs:"$'\n'"$(diff "$dir/$name.out" "$tmp/out" | head -20)"
    fi
    if [ -z "$why" ] && [ "$same_out" = 1 ]; then
      if [ "$first" = 1 ]; then cp "$tmp/out" "$tmp/out0"
      elif ! cmp -s "$tmp/out0" "$tmp/out"; then why="stdout differs from the first run's:"$'\n'"$(diff "$tmp/out0" "$tmp/out" | head -20)"; fi
    fi
    if [ -z "$why" ] && [ "$same_err" = 1 ]; then
      if [ "$first" = 1 ]; then cp "$tmp/err" "$tmp/err0"
      elif ! cmp -s "$tmp/err0" "$tmp/err"; then why="stderr differs from the first run's:"$'\n'"$(diff "$tmp/err0" "$tmp/err" | head -20)"; fi
    fi
    first=0
    if [ -z "$why" ]; then
      while IFS= read -r want; do
        grep -qF -- "$want" "$tmp/err" || { why="stderr lacks: $want"; break; }
      done < <(sed -n 's/^# stderr: *//p' "$t")
    fi
    if [ -z "$why" ]; then pass=$((pass+1)); else
      fail=$((fail+1)); echo "FAIL $label: $why"; sed 's/^/  stderr| /' "$tmp/err" | head -8
    fi
  done
done
echo "$(basename "$dir"): $pass passed, $fail failed"
[ "$fail" = 0 ]
