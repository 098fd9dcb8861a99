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
# Every test also runs with --sync unless async-only; both must match.
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
  for mode in "${modes[@]}"; do
    label="$name${mode:+ $mode}"
    # shellcheck disable=SC2086
    (cd "$dir" && printf '%s' "$stdin_text${stdin_text:+$'\n'}" | timeout 120 "$qh" $mode $flags "$name.qh" $args >"$tmp/out" 2>"$tmp/err")
    st=$?; why=""
    [ "$st" = "$want_status" ] || why="exit status $st, expected $want_status"
    if [ -z "$why" ] && [ -f "$dir/$name.out" ] && ! cmp -s "$tmp/out" "$dir/$name.out"; then
      why="stdout differs:"$'\n'"$(diff "$dir/$name.out" "$tmp/out" | head -20)"
    fi
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
