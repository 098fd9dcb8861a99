#!/usr/bin/env bash
# Command-line behaviour: options, sources, exit statuses (LANGUAGE.md §11).
set -u
qh=${1:?usage: cli.sh PATH/TO/qh}
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() {   # check NAME WANT_STATUS WANT_STDOUT_SUBSTRING WANT_STDERR_SUBSTRING -- CMD...
  local name=$1 want=$2 out=$3 err=$4; shift 5
  "$@" >"$tmp/o" 2>"$tmp/e" </dev/null; local st=$?
  local why=""
  [ "$st" = "$want" ] || why="status $st, expected $want"
  [ -z "$why" ] && [ -n "$out" ] && ! grep -qF -- "$out" "$tmp/o" && why="stdout lacks '$out'"
  [ -z "$why" ] && [ -n "$err" ] && ! grep -qF -- "$err" "$tmp/e" && why="stderr lacks '$err'"
  if [ -z "$why" ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name: $why"; head -5 "$tmp/o" "$tmp/e"; fi
}
printf 'print("from file", argv)\n' > "$tmp/a.qh"
printf '#!/usr/bin/env qh\nprint("shebang", len(argv))\n' > "$tmp/sb.qh"; chmod +x "$tmp/sb.qh"
printf 'x = (1 +\n' > "$tmp/bad.qh"
printf 'print(undefined_thing)\n' > "$tmp/rt.qh"
check version 0 "qh " "" -- "$qh" --version
check version-short 0 "qh " "" -- "$qh" -V
check help 0 "--workers N" "" -- "$qh" --help
for opt in -e -i --sync --workers --seed --trace --stats --deps --check --max-memory --version --help; do
  check "help lists $opt" 0 "$opt" "" -- "$qh" -h
done
check unknown-option 2 "" "unknown option '--bogus'" -- "$qh" --bogus
check missing-value 2 "" "needs a value" -- "$qh" --workers
check bad-workers 2 "" "--workers needs" -- "$qh" --workers zero x.qh
check missing-file 2 "" "cannot open 'no/such/file.qh'" -- "$qh" no/such/file.qh
check run-file 0 'from file ["x", "y"]' "" -- "$qh" "$tmp/a.qh" x y
check eval 0 "7" "" -- "$qh" -e 'print(3 + 4)'
check eval-error-name 1 "" "<-e>:1:" -- "$qh" -e 'print(1 / 0)'
check stdin-dash 0 "42" "" -- bash -c "echo 'print(6 * 7)' | '$qh' -"
check stdin-pipe 0 "42" "" -- bash -c "echo 'print(6 * 7)' | '$qh'"
check stdin-name 1 "" "<stdin>:1:" -- bash -c "echo 'print(nope)' | '$qh'"
check check-ok 0 "" "" -- "$qh" --check "$tmp/a.qh"
check check-syntax 2 "" "bad.qh:2:1: error:" -- "$qh" --check "$tmp/bad.qh"
check syntax-exit 2 "" "error:" -- "$qh" "$tmp/bad.qh"
check runtime-exit 1 "" "rt.qh:1:7: error: name 'undefined_thing' is not defined" -- "$qh" "$tmp/rt.qh"
check deps 0 "line 1:" "" -- "$qh" --deps "$tmp/a.qh"
check shebang 0 "shebang 2" "" -- env PATH="$(dirname "$qh"):$PATH" "$tmp/sb.qh" a b
# the man page documents every option --help lists, and no other
man=$(dirname "$0")/../../man/qh.1
if [ -f "$man" ]; then
  help_opts=$("$qh" --help | grep -oE '^  (-[A-Za-z]|--[a-z-]+)(, (-[A-Za-z]|--[a-z-]+))?' | grep -oE -- '-{1,2}[a-zA-Z-]+' | sort -u)
  man_opts=$(grep -E '^\.(B|BR|BI) ' "$man" | sed 's/\\//g' | grep -oE -- '(^| )-{1,2}[a-zA-Z][a-zA-Z-]*' | tr -d ' ' | sort -u)
  missing=$(comm -23 <(echo "$help_opts") <(echo "$man_opts"))
  if [ -z "$missing" ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL man page lacks: $missing"; fi
fi
echo "cli: $pass passed, $fail failed"
[ "$fail" = 0 ]
