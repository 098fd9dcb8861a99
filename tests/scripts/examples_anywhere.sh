#!/usr/bin/env bash
# Every example runs from any directory: each examples/NAME.qh that has a
# NAME.out is run once from a fresh empty directory, named by its absolute
# path (with its "# args:" line), and must print NAME.out exactly. A script
# that reads a file next to itself names it with script_dir()
# (lang/builtins.md, "Files and data"); a relative path would be looked up
# in the empty directory and fail.
# Usage: examples_anywhere.sh PATH/TO/qh EXAMPLES_DIR
set -u
qh=${1:?usage: examples_anywhere.sh PATH/TO/qh EXAMPLES_DIR}
dir=${2:?usage: examples_anywhere.sh PATH/TO/qh EXAMPLES_DIR}
qh=$(cd "$(dirname "$qh")" && pwd)/$(basename "$qh")
dir=$(cd "$dir" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/cwd"
pass=0; fail=0
for t in "$dir"/*.qh; do
  name=$(basename "$t" .qh)
  case "$name" in _*) continue;; esac
  [ -f "$dir/$name.out" ] || continue
  args=$(sed -n 's/^# args: *//p' "$t" | head -1)
  # shellcheck disable=SC2086
  (cd "$tmp/cwd" && timeout 120 "$qh" "$t" $args </dev/null >"$tmp/out" 2>"$tmp/err")
  st=$?
  if [ "$st" = 0 ] && cmp -s "$tmp/out" "$dir/$name.out"; then pass=$((pass+1)); else
    fail=$((fail+1)); echo "FAIL $name (status $st, run from $tmp/cwd):"
    diff "$dir/$name.out" "$tmp/out" | head -10; sed 's/^/  stderr| /' "$tmp/err" | head -8
  fi
  [ -z "$(ls -A "$tmp/cwd")" ] || { echo "FAIL $name: wrote into the current directory"; fail=$((fail+1)); rm -rf "${tmp:?}/cwd/"*; }
done
echo "examples from another directory: $pass passed, $fail failed"
[ "$pass" -gt 0 ] && [ "$fail" = 0 ]
