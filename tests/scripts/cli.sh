#!/usr/bin/env bash
# Command-line behaviour: options, sources, exit statuses (lang/command-line.md).
set -u
qh=${1:?usage: cli.sh PATH/TO/qh}
qh=$(cd "$(dirname "$qh")" && pwd)/$(basename "$qh")
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
for opt in -e -i --sync --no-lookahead --workers --seed --trace --stats --deps --check --max-memory --version --help; do
  check "help lists $opt" 0 "$opt" "" -- "$qh" -h
done
printf 'slow = device("statevector", wires=1, latency=0.02)\nqfn c(t) on slow { RY(t, 0); return expval(PauliZ(0)) }\nfor t in [0.1, 0.2, 0.3] { print(c(t)) }\n' > "$tmp/la.qh"
check deps-lookahead 0 "may start c() (line 3) of its next iterations early" "" -- "$qh" --deps "$tmp/la.qh"
check trace-marks-early 0 "early" "" -- bash -c "'$qh' --trace '$tmp/la.json' '$tmp/la.qh' >/dev/null && cat '$tmp/la.json'"
check no-lookahead-trace 1 "" "" -- bash -c "'$qh' --no-lookahead --trace '$tmp/nla.json' '$tmp/la.qh' >/dev/null && grep -q early '$tmp/nla.json'"
check unknown-option 2 "" "unknown option '--bogus'" -- "$qh" --bogus
check missing-value 2 "" "needs a value" -- "$qh" --workers
check bad-workers 2 "" "--workers needs" -- "$qh" --workers zero x.qh
check workers-range-low 2 "" "from 1 to 1024" -- "$qh" --workers 0 "$tmp/a.qh"
check workers-range-high 2 "" "from 1 to 1024" -- "$qh" --workers=1025 "$tmp/a.qh"
check workers-eq-form 0 'from file []' "" -- "$qh" --workers=1024 "$tmp/a.qh"
check seed-eq-form 0 'from file []' "" -- "$qh" --seed=7 --max-memory=64M "$tmp/a.qh"
cp "$tmp/a.qh" "$tmp/-dash.qh"
check double-dash 0 'from file ["-x"]' "" -- bash -c "cd '$tmp' && '$qh' -- -dash.qh -x"
check e-ends-options 0 '["--sync", "-i", "x"]' "" -- "$qh" -e 'print(argv)' --sync -i x
printf 'x = 41\nprint("ran")\n' > "$tmp/i.qh"
check i-then-repl-on-a-pipe 0 "42" "" -- bash -c "printf 'x + 1\n' | timeout 20 '$qh' -i '$tmp/i.qh'"
check i-after-error 0 "41" "division by zero" -- bash -c "printf 'x = 40\n1 / 0\n' > '$tmp/ie.qh'; printf 'x + 1\n' | timeout 20 '$qh' -i '$tmp/ie.qh'"
check e-no-eq-form 2 "" "unknown option '-e=1'" -- "$qh" -e=1
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
# --help, the man page and lang/command-line.md list the same options and
# the same environment variables (and each states the --opt=VALUE form and
# the range of --workers)
root=$(dirname "$0")/../..
man=$root/man/qh.1
md=$root/lang/command-line.md
same() {   # same WHAT NAME_A LIST_A NAME_B LIST_B
  local d
  d=$(diff <(echo "$3") <(echo "$5"))
  if [ -z "$d" ] && [ -n "$3" ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $1 differ between $2 (<) and $4 (>):"; echo "$d"; fi
}
opt_tokens() { grep -oE -- '(^|[ `,])-{1,2}[a-zA-Z][a-zA-Z-]*|(^|[ `])--([ `]|$)' | tr -d ' `,' | sort -u; }
help_opts=$("$qh" --help | grep -E '^  -' | sed -E 's/^  ((-[A-Za-z]|--[a-z-]*)(, (-[A-Za-z]|--[a-z-]+))?).*/\1/' | opt_tokens)
help_env=$("$qh" --help | sed -n '/^environment:/,/^$/p' | grep -E '^  [A-Z]' | grep -oE '^  [A-Z_]+(, [A-Z_]+)*' | grep -oE '[A-Z_]+' | sort -u)
man_opts=$(awk '/^\.SH /{sec=$2} sec=="OPTIONS" && prev==".TP"{print} {prev=$0}' "$man" | sed 's/\\//g' | sed -E 's/^\.[A-Z]+ //' | opt_tokens)
man_env=$(awk '/^\.SH /{sec=$2} sec=="ENVIRONMENT" && prev==".TP"{print} {prev=$0}' "$man" | grep -oE '[A-Z_]{2,}' | sort -u)
md_opts=$(awk '/^## /{sec=$0} sec=="## Options" && /^\| `/' "$md" | cut -d'|' -f2 | opt_tokens)
md_env=$(awk '/^## /{sec=$0} sec=="## Environment" && /^\| `/' "$md" | cut -d'|' -f2 | grep -oE '[A-Z_]{2,}' | sort -u)
same options "qh --help" "$help_opts" man/qh.1 "$man_opts"
same options "qh --help" "$help_opts" lang/command-line.md "$md_opts"
same "environment variables" "qh --help" "$help_env" man/qh.1 "$man_env"
same "environment variables" "qh --help" "$help_env" lang/command-line.md "$md_env"
for fact in '1 to 1024' '--opt=VALUE'; do
  for where in help man md; do
    case $where in
      help) text=$("$qh" --help) ;;
      man) text=$(sed 's/\\f[BIRP]//g; s/\\//g; s/^\.[A-Z]* //' "$man" | tr -d '"' | tr '\n' ' ') ;;
      md) text=$(tr '\n' ' ' < "$md" | tr -d '`') ;;
    esac
    pat=$fact; [ "$where" = man ] && [ "$fact" = '--opt=VALUE' ] && pat='--option=value'
    if grep -qF -- "$pat" <<<"$text"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $where does not state '$fact'"; fi
  done
done
# script_dir(): the folder of the calling code's file, absolute, whatever the current directory
# (a module's own folder); the current directory for -e and standard input
real=$(cd "$tmp" && pwd -P)
mkdir -p "$tmp/sd" "$tmp/mods" "$tmp/other"
printf 'import sdmod\nprint("<" + script_dir() + ">", "[" + sdmod.here + "]", "{" + sdmod.where() + "}")\n' > "$tmp/sd/s.qh"
printf 'here = script_dir()\nfn where() { return script_dir() }\n' > "$tmp/mods/sdmod.qh"
check script-dir-relative 0 "<$real/sd> [$real/mods] {$real/mods}" "" -- bash -c "cd '$tmp/other' && QH_PATH='$tmp/mods' '$qh' ../sd/s.qh"
check script-dir-bare-name 0 "<$real/sd>" "" -- bash -c "cd '$tmp/sd' && QH_PATH='$tmp/mods' '$qh' s.qh"
check script-dir-absolute 0 "<$real/sd>" "" -- bash -c "cd / && QH_PATH='$tmp/mods' '$qh' '$tmp/sd/s.qh'"
check script-dir-e 0 "<$real/other>" "" -- bash -c "cd '$tmp/other' && '$qh' -e 'print(\"<\" + script_dir() + \">\")'"
check script-dir-stdin 0 "<$real/other>" "" -- bash -c "cd '$tmp/other' && echo 'print(\"<\" + script_dir() + \">\")' | '$qh' -"
echo "cli: $pass passed, $fail failed"
[ "$fail" = 0 ]
