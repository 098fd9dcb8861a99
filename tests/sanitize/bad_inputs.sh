#!/usr/bin/env bash
# Bad inputs: whatever the program, qh must not crash, hang or trip a
# sanitizer. Each case runs qh with a time limit and checks
#   - no crash: the exit status is not >= 128 (130 only where the case sends
#     SIGINT, and there it is required), and not a timeout;
#   - the exit status is one the case allows;
#   - an error (status 1 or 2) comes with a message on stderr;
#   - stderr holds no AddressSanitizer/UBSan/LeakSanitizer/ThreadSanitizer
#     report (this script runs in the sanitizer builds of .ci/run too).
# Usage: bad_inputs.sh PATH/TO/qh [CASE-PATTERN]
#   CASE-PATTERN: run only cases whose name matches this glob.
#   BAD_INPUTS_TIMEOUT: seconds per case (default 60; sanitizers are slow).
set -u
qh=${1:?usage: bad_inputs.sh PATH/TO/qh [CASE-PATTERN]}
pattern=${2:-*}
qh=$(cd "$(dirname "$qh")" && pwd)/$(basename "$qh")
here=$(cd "$(dirname "$0")" && pwd)
srcdir=$(cd "$here/../../src" && pwd)
limit=${BAD_INPUTS_TIMEOUT:-60}
# ThreadSanitizer delays signal handlers until the thread makes a libc call,
# so a SIGINT to a main thread spinning in `while true {}` is never handled
# under TSan: those cases are skipped in a TSan build.
tsan=false; grep -q -a -m1 __tsan_init "$qh" 2>/dev/null && tsan=true
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
pass=0; fail=0

sanitizer_report() {
  grep -q -E 'ERROR: (AddressSanitizer|LeakSanitizer|ThreadSanitizer|MemorySanitizer)|WARNING: ThreadSanitizer|runtime error:|SUMMARY: [A-Za-z]*Sanitizer' "$1"
}

# judge NAME ALLOWED-STATUSES STATUS [STDOUT-TEXT [STDERR-TEXT]]
judge() {
  local name=$1 allowed=$2 st=$3 want_out=${4:-} want_err=${5:-} why=""
  if sanitizer_report "$tmp/err"; then
    why="sanitizer report (status $st)"
  elif [ "$st" = 124 ] || [ "$st" = 137 ]; then
    why="timed out after ${limit}s (hang?)"
  elif [ "$st" -ge 128 ] && [ "$st" != 130 ]; then
    why="crashed: status $st (signal $((st - 128)))"
  elif [ "$st" = 130 ] && [[ " $allowed " != *" 130 "* ]]; then
    why="crashed: status 130 (SIGINT) where no SIGINT was sent"
  elif [[ " $allowed " != *" $st "* ]]; then
    why="exit status $st, expected one of: $allowed"
  elif { [ "$st" = 1 ] || [ "$st" = 2 ]; } && ! grep -q -i -E 'error|warning' "$tmp/err"; then
    why="exit status $st with no error message on stderr"
  elif [ -n "$want_out" ] && ! grep -q -F -- "$want_out" "$tmp/out"; then
    why="stdout lacks: $want_out"
  elif [ -n "$want_err" ] && ! grep -q -F -- "$want_err" "$tmp/err"; then
    why="stderr lacks: $want_err"
  fi
  if [ -z "$why" ]; then pass=$((pass+1)); else
    fail=$((fail+1)); echo "FAIL $name: $why"
    sed 's/^/  stderr| /' "$tmp/err" | grep -v '^  stderr| *$' | head -${BAD_INPUTS_SHOW:-14}
  fi
}

# case NAME ALLOWED [OUT [ERR]] -- QH-ARGS...   (stdin is /dev/null)
case_() {
  local name=$1 allowed=$2 want_out="" want_err=""
  shift 2
  if [ "$1" != "--" ]; then want_out=$1; shift; fi
  if [ "$1" != "--" ]; then want_err=$1; shift; fi
  shift
  # shellcheck disable=SC2053
  [[ $name == $pattern ]] || return 0
  timeout -k 5 "$limit" "$qh" "$@" </dev/null >"$tmp/out" 2>"$tmp/err"
  judge "$name" "$allowed" "$?" "$want_out" "$want_err"
}

# file case: the program is the text of $tmp/NAME.qh, run as is and with --sync
prog() { cat >"$tmp/$1.qh"; }
both() {
  local name=$1; shift
  case_ "$name" "$@" -- "$tmp/$name.qh"
  case_ "$name --sync" "$@" -- --sync "$tmp/$name.qh"
}
check_only() {   # NAME: --check must give 0 or 2
  case_ "$1 --check" "0 2" -- --check "$tmp/$1.qh"
}
rep() { local i; for ((i = 0; i < $2; i++)); do printf '%s' "$1"; done; }

# ---------------------------------------------------------------- encoding
printf 'x = "\xff\xfe\xc3\x28"\nprint(len(x))\n' | prog utf8_in_string;        both utf8_in_string "0 2"
printf '# \xc3\x28 \xed\xa0\x80 \xf8\x88\x80\x80\x80\nprint(1)\n' | prog utf8_in_comment; both utf8_in_comment "0 2"
printf '\xff\xfe = 1\nprint(1)\n' | prog utf8_ident;                            both utf8_ident "2"
printf 'x = 1 \xc0\x80\n' | prog utf8_overlong;                                both utf8_overlong "2"
printf '\xef\xbb\xbfprint(1)\n' | prog utf8_bom;                               both utf8_bom "0 2"
printf 'print("\xe2\x82")' | prog utf8_truncated_at_eof;                       both utf8_truncated_at_eof "0 2"
printf 'print(upper("\xff\xc3"), len(split("a\xffb", "\xff")), find("\xe9\xff", "\xff"))\n' | prog utf8_builtins
both utf8_builtins "0 1"
printf 'x = 1\x00\nprint(x)\n' | prog nul_after_statement;                     both nul_after_statement "0 2"
printf 'print("a\x00b")\n' | prog nul_in_string;                               both nul_in_string "0 2"
printf '\x00\x00\x00' | prog nul_only;                                         both nul_only "0 2"
printf '# comment \x00 with nul\nprint(1)\n' | prog nul_in_comment;            both nul_in_comment "0 2"
printf 'print(1)\r\nprint(2)\r\n' | prog crlf;                                 both crlf "0 2"
printf 'print(1)\rprint(2)\r' | prog bare_cr;                                  both bare_cr "0 2"
head -c 65536 /dev/urandom >"$tmp/random_bytes.qh" 2>/dev/null || : >"$tmp/random_bytes.qh"
check_only random_bytes
case_ "random bytes on stdin" "0 1 2" -- - <"$tmp/random_bytes.qh"
: >"$tmp/empty.qh"; both empty "0"

# ---------------------------------------------------------------- size
{ printf 'x = "'; head -c 1048576 /dev/zero | tr '\0' 'a'; printf '"\nprint(len(x))\n'; } | prog long_line_string
both long_line_string "0" "1048576"
{ printf '# '; head -c 1048576 /dev/zero | tr '\0' 'c'; printf '\nprint("after")\n'; } | prog long_line_comment
both long_line_comment "0" "after"
{ printf 'x = [0'; rep ', 1' 262144; printf ']\nprint(len(x))\n'; } | prog long_line_list
both long_line_list "0" "262145"
# a 1 MB line of `+ 1`: a left-leaning tree 262144 deep (brackets are limited, operators are not)
{ printf 'x = 0'; rep ' + 1' 262144; printf '\nprint(x)\n'; } | prog long_line_sum
both long_line_sum "0 1 2"
check_only long_line_sum
{ printf 'x = 1'; rep ' and 1' 200000; printf '\nprint(x)\n'; } | prog long_line_and
both long_line_and "0 1 2"
{ printf 'x = [[0]]\ny = x'; rep '[0]' 262144; printf '\n'; } | prog long_line_index
both long_line_index "1 2"
{ printf 'fn f() { return f }\ny = f'; rep '()' 262144; printf '\nprint(1)\n'; } | prog long_line_calls
both long_line_calls "0 1 2"
{ rep 'x = 1; ' 100000; printf 'print(x)\n'; } | prog many_statements_one_line
both many_statements_one_line "0" "1"
{ for ((i = 0; i < 20000; i++)); do printf 'v%d = %d\n' "$i" "$i"; done; printf 'print(v19999)\n'; } | prog many_globals
both many_globals "0" "19999"

# ---------------------------------------------------------------- nesting
{ printf 'x = '; rep '(' 10000; printf '1'; rep ')' 10000; printf '\nprint(x)\n'; } | prog nested_parens
both nested_parens "0 2"
{ printf 'x = '; rep '[' 10000; printf '1'; rep ']' 10000; printf '\nprint(len(x))\n'; } | prog nested_brackets
both nested_brackets "0 2"
{ printf 'x = '; rep '{"k": ' 10000; printf '1'; rep '}' 10000; printf '\nprint(len(x))\n'; } | prog nested_dicts
both nested_dicts "0 2"
{ rep 'if true { ' 10000; printf 'print(1)'; rep ' }' 10000; printf '\n'; } | prog nested_blocks
both nested_blocks "0 2"
{ rep 'fn f() { ' 5000; printf 'return 1'; rep ' }' 5000; printf '\n'; } | prog nested_functions
both nested_functions "0 2"
{ printf 'x = '; rep '-' 100000; printf '1\nprint(x)\n'; } | prog nested_unary_minus
both nested_unary_minus "0 2"
{ printf 'x = '; rep 'not ' 100000; printf 'true\nprint(x)\n'; } | prog nested_not
both nested_not "0 2"
{ printf 'x = '; rep '2 ** ' 100000; printf '1\nprint(x)\n'; } | prog nested_power
both nested_power "0 2"
{ printf 'fn f(x) { return x }\nx = '; rep 'f(' 10000; printf '1'; rep ')' 10000; printf '\nprint(x)\n'; } | prog nested_calls
both nested_calls "0 2"
{ printf 'x = '; rep '(' 10000; printf '\n'; } | prog nested_unclosed
both nested_unclosed "2"
# values nested a million deep, built by a loop: printing, comparing, freeing
prog deep_list_free <<'EOF'
a = []
for i in range(1000000) { a = [a] }
print("built")
EOF
both deep_list_free "0 1" "built"
prog deep_list_str <<'EOF'
a = []
for i in range(1000000) { a = [a] }
try { s = str(a); print(len(s)) } catch e { print("caught") }
EOF
both deep_list_str "0 1"
prog deep_list_eq <<'EOF'
a = []
b = []
for i in range(1000000) { a = [a]; b = [b] }
try { print(a == b) } catch e { print("caught") }
EOF
both deep_list_eq "0 1"
prog deep_dict_free <<'EOF'
d = {}
for i in range(1000000) { d = {"k": d} }
print("built")
EOF
both deep_dict_free "0 1" "built"
prog cyclic_containers <<'EOF'
a = [1]
append(a, a)
d = {"self": nil}
d["self"] = d
append(a, d)
print(a)
print(d)
print(a == a, len(str(a)) > 0)
try { print(sorted([a, a])) } catch e { print("caught") }
EOF
both cyclic_containers "0 1"

# ---------------------------------------------------------------- unterminated
n=0
for p in 'print("abc' "x = 'abc" 'x = "abc\' 'x = "\x4' 'x = "\u{12' 'fn f() {' 'if true {' \
         'while true { x = 1' 'x = [1, 2' 'x = (1 +' 'x = {"a": 1' 'f(' 'x = 1 +' '"' "'" '{' 'qfn q() on' \
         'qfn q() on device("statevector", wires=1) {' 'try { error("x") } catch' 'x = "a
b"' 'fn ('; do
  n=$((n + 1)); printf '%s' "$p" >"$tmp/unterminated_$n.qh"
  case_ "unterminated [$p]" "2" -- "$tmp/unterminated_$n.qh"
  case_ "unterminated [$p] -e" "2" -- -e "$p"
done
for p in 'x = "\u{110000}"' 'x = "\u{d800}"' 'x = "\xzz"' 'x = "\q"' '}' ')' ']' 'else { }' 'x = 1.2.3' 'x = 1__0' \
         'x = 0x' 'x = 1e' 'x = 1e+' 'x = 2jj' 'x = 0x1g' '@' 'import' 'global' 'global x' 'return 1' 'break' \
         'x, = 1' '[1][0] = = 2' 'f(a=1, a=2)' 'fn f(a, a) { }' 'fn f(a=1, b) { }' 'qfn q() on { }' 'x.y.z = 1' '1 = x' 'x += = 1'; do
  n=$((n + 1)); printf '%s\n' "$p" >"$tmp/malformed_$n.qh"
  case_ "malformed [$p]" "0 1 2" -- "$tmp/malformed_$n.qh"
done
printf 'x = 1\nfn f() {\n  y = 2\n' | prog unterminated_block_eof;           both unterminated_block_eof "2" "" "never closed"
printf 'x = "abc\n' | prog unterminated_string_eol;                            both unterminated_string_eol "2" "" "unterminated"

# ---------------------------------------------------------------- numbers
case_ "huge 1e400" "0" "inf" -- -e 'print(1e400, -1e400, 1e-400)'
case_ "0x + 40 hex digits" "0 2" -- -e 'print(0x1234567890abcdef1234567890abcdef12345678)'
case_ "400 decimal digits" "0 2" -- -e "print($(rep 9 400))"
case_ "400 digits after the point" "0 2" -- -e "print(0.$(rep 1 400))"
case_ "exponent 10**6 digits" "0 2" -- -e "print(1e$(rep 9 1000))"
case_ "imaginary 1e400j" "0 2" -- -e 'print(1e400j, 0x10j)'
case_ "int of huge values" "0 1" -- -e 'for v in [1e300, -1e300, inf, -inf, nan, 2**63, -2**63, 2**64] { try { print(int(v)) } catch e { print("caught") } }'
case_ "indices from huge values" "0 1" -- -e 'x = [1, 2]; for v in [1e300, -1e300, inf, nan, 2**63, -2**63] { try { print(x[v]) } catch e { print("caught") } }'
case_ "range from huge values" "0 1" -- -e 'for v in [1e300, inf, nan, 2**63, -2**63] { try { print(len(range(v))) } catch e { print("caught") } }'
case_ "fmt with huge widths" "0 1" -- -e 'for f in ["%1000000000d", "%.1000000000f", "%*d", "%n", "%s%s%s%s", "%99999999999999999999d", "%-0+# 5.3e", "%c", "%lld", "%"] { try { print(len(fmt(f, 1))) } catch e { print("caught") } }'
case_ "overflow in arithmetic" "0 1" -- -e 'print(2**1023 * 2, -(2**1023) * 2, 2**1024, (-8) ** (1/3), 0 ** -1, 10 ** 400 - 10 ** 400)'
case_ "division and modulo edge cases" "0 1" -- -e 'for p in [[1, 0], [0, 0], [-1, 0], [1e308, 1e-308], [-2**53, -1], [inf, inf], [nan, 1]] { try { print(p[0] / p[1]) } catch e { print("caught /") }; try { print(p[0] // p[1]) } catch e { print("caught //") }; try { print(p[0] % p[1]) } catch e { print("caught %") } }'

# ---------------------------------------------------------------- every builtin with wrong types
# Names come from the builtin tables in src/ ({ "name", bi_... } and GATE("name")).
mapfile -t table < <(cat "$srcdir"/*.c "$srcdir"/*/*.c 2>/dev/null |
  grep -o -E '\{ *"[A-Za-z_][A-Za-z_0-9]*", *(bi_[A-Za-z_0-9]*|NULL), *[^,]*, *[^,]*, *[^,]*|GATE\("[A-Za-z_0-9]*"\)' |
  sed -E 's/GATE\("([^"]*)"\)/\1 BI_GATE/; s/^\{ *"([^"]*)", *[^,]*, *[^,]*, *[^,]*, *(.*)$/\1 \2/' | sort -u)
if [ "${#table[@]}" -lt 50 ]; then
  fail=$((fail+1)); echo "FAIL builtin tables: found only ${#table[@]} builtins in $srcdir (did the tables move?)"
fi
for entry in "${table[@]}"; do
  name=${entry%% *}; flags=${entry#* }
  [[ $flags == *BI_CONST* ]] && { case_ "builtin $name called" "0 1" -- -e "try { $name() } catch e { print(e) }"; continue; }
  # sleep and input wait on purpose: give them no huge or endless values
  vals='[nil, true, "s", "", [], [1, "a"], {"k": 1}, f, 1+2j, -1, 0.5, nan, inf, -inf, 1e300, 2**53 + 1, zeros(2, 2), zeros(0), PauliZ(0), dev, range(3)]'
  [ "$name" = sleep ] && vals='[nil, "s", [], {"k": 1}, f, 1+2j, -1, nan, -inf, zeros(2, 2), PauliZ(0), dev]'
  {
    printf 'dev = device("statevector", wires=2)\nf = fn (x) { return x }\nvals = %s\nn = 0\n' "$vals"
    printf 'try { %s() } catch e { n += 1 }\n' "$name"
    printf 'try { %s(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12) } catch e { n += 1 }\n' "$name"
    printf 'try { %s(bogus=1) } catch e { n += 1 }\n' "$name"
    printf 'for v in vals {\n'
    for form in 'v' 'v, v' '1, v' 'v, 1' 'v, v, v' '"s", v' '0, 1, v' 'v, wires=v' '0, wires=v' \
                'v, seed=v' 'v, shots=v' 'v, control=v' 'v, axis=v' 'v, key=v' 'v, sep=v' 'v, dtype=v'; do
      printf '  try { %s(%s) } catch e { n += 1 }\n' "$name" "$form"
    done
    printf '}\n'
    if [[ $flags != *BI_IMPURE* ]]; then
      printf 'qfn q(v) on dev {\n  H(0)\n'
      for form in 'v' 'v, v' '0, v' 'v, 0' 'v, wires=v' '0, 1, v'; do
        printf '  try { %s(%s) } catch e { }\n' "$name" "$form"
      done
      printf '  return expval(PauliZ(0))\n}\nrs = []\n'
      printf 'for v in vals { try { append(rs, q(v)) } catch e { n += 1 } }\n'
      printf 'for r in rs { try { wait(r) } catch e { n += 1 } }\n'
    fi
    printf 'print("done", n > 0)\n'
  } >"$tmp/bi_$name.qh"
  case_ "builtin $name with wrong types" "0 1" -- "$tmp/bi_$name.qh"
done

# ---------------------------------------------------------------- recursion
case_ "deep recursion" "1" "" "recursion" -- -e 'fn f(n) { return f(n+1) }; f(0)'
case_ "deep recursion --sync" "1" "" "recursion" -- --sync -e 'fn f(n) { return f(n+1) }; f(0)'
case_ "deep mutual recursion" "1" "" "recursion" -- -e 'fn a(n) { return b(n + 1) }
fn b(n) { return a(n + 1) }
print(a(0))'
case_ "deep recursion caught" "0" "caught" -- -e 'fn f(n) { return f(n+1) }
try { f(0) } catch e { print("caught") }
try { f(0) } catch e { print("caught") }'
case_ "deep recursion in a task" "1" "" "recursion" -- -e 'fn f(n) { return f(n+1) }
qfn g() { return f(0) }
print(g())'
case_ "deep recursion in a qfn body" "1" "" "" -- -e 'dev = device("statevector", wires=1)
fn f(n) { RX(0.1, 0); return f(n + 1) }
qfn g() on dev { f(0); return expval(PauliZ(0)) }
print(g())'
case_ "deep recursion through a builtin" "0 1" -- -e 'fn f(x) { return sorted([x, x], key=f) }
print(f(1))'
case_ "deep recursion through str" "0 1" -- -e 'fn f(n) { return str([f]) + str(f(n + 1)) }
print(f(0))'
case_ "deep recursion with closures" "1" "" "recursion" -- -e 'fn mk() { fn g(n) { return g(n + 1) }; return g }
print(mk()(0))'

# ---------------------------------------------------------------- a qfn that raises everywhere
prog qfn_raises <<'EOF'
dev = device("statevector", wires=2)
fn bad(n) { error("bad " + str(n)) }
fn sub() { CNOT(0, 7) }
qfn in_body_first(x) on dev { error("first"); return 0 }
qfn in_body_middle(x) on dev { H(0); CNOT(0, 1); x = x + "s"; return expval(PauliZ(0)) }
qfn in_return(x) on dev { H(0); return expval(PauliZ(9)) }
qfn in_gate_arg(x) on dev { RX("x", 0); return 0 }
qfn bad_wire(x) on dev { CNOT(0, 0); return 0 }
qfn in_subroutine(x) on dev { sub(); return 0 }
qfn in_measure(x) on dev { return measure(5) }
qfn in_observable(x) on dev { return expval(PauliZ(0) @ PauliZ(0)) }
qfn in_sample(x) on dev { return sample() }
qfn in_unitary(x) on dev { QubitUnitary(zeros(2, 2), wires=[0]); return state() }
qfn in_ctrl(x) on dev { ctrl(PauliX(0), control=0); return 0 }
qfn in_nested(x) on dev { return in_body_first(x) }
qfn returns_op(x) on dev { return PauliZ(0) }
qfn classical(x) { return bad(x) }
calls = [in_body_first, in_body_middle, in_return, in_gate_arg, bad_wire, in_subroutine, in_measure,
         in_observable, in_sample, in_unitary, in_ctrl, in_nested, returns_op, classical]
for c in calls {
  try { print(c(1)) } catch e { print("caught:", len(e) > 0) }
  try { print(c(bad(1))) } catch e { print("caught arg:", len(e) > 0) }
  try { print(c(c(1))) } catch e { print("caught chained:", len(e) > 0) }
  try { x = c(1); y = c(x); z = [x, y]; print(wait(z)) } catch e { print("caught wait:", len(e) > 0) }
}
try { sync() } catch e { print("caught sync") }
EOF
both qfn_raises "0 1"
prog qfn_raises_unobserved <<'EOF'
qfn c(x) on device("statevector", wires=1) { RX(x, 0); error("boom") }
c(1)
c(2)
x = c(3)
print("end")
EOF
both qfn_raises_unobserved "1" "end" "warning"
prog qfn_bad_devices <<'EOF'
for spec in [["nope", 1], ["statevector", -1], ["statevector", 0], ["statevector", 1.5], ["statevector", nil], ["statevector", 100000]] {
  try {
    d = device(spec[0], wires=spec[1])
    qfn c() on d { H(0); return probs() }
    print(c())
  } catch e { print("caught:", len(e) > 0) }
}
for kw in [["shots", -1], ["shots", 0.5], ["shots", 1e300], ["seed", -1], ["seed", nan], ["latency", -1], ["latency", nan]] {
  try { d = device("statevector", wires=1, shots=kw[1]); qfn c() on d { return probs() }; print(c()) } catch e { print("caught") }
}
EOF
both qfn_bad_devices "0 1"
prog qfn_uncaught_in_chain <<'EOF'
qfn c(x) on device("statevector", wires=1) { RY(x, 0); return expval(PauliZ(0)) }
a = c(1)
b = c(a + "x")
print(b)
EOF
both qfn_uncaught_in_chain "1" "" "error"

# ---------------------------------------------------------------- huge allocations
case_ "zeros(100000, 100000)" "1" "" "error" -- -e 'zeros(100000, 100000)'
case_ "zeros(10**7, 10**7) printed" "1" "" "error" -- -e 'print(zeros(10**7, 10**7))'
case_ "ones(10**8, 10**8)" "1" "" "error" -- -e 'x = ones(10**8, 10**8)'
case_ '"x" * 10**10' "1" "" "error" -- -e 'x = "x" * 10**10'
case_ '[0] * 10**12' "1" "" "error" -- -e 'x = [0] * 10**12'
case_ "range(10**15)" "1" "" "error" -- -e 'x = range(10**15); print(len(x))'
case_ "eye(10**7)" "1" "" "error" -- -e 'x = eye(10**7)'
case_ "randn(10**6, 10**6)" "1" "" "error" -- -e 'x = randn(10**6, 10**6)'
case_ "kron of big arrays" "1" "" "error" -- -e 'x = kron(zeros(10**5, 10**5), zeros(10**5, 10**5))'
case_ "device wires=40 call" "1" "" "error" -- -e 'qfn c() on device("statevector", wires=40) { H(0); return probs() }
print(c())'
case_ "device wires=40 call --sync" "1" "" "error" -- --sync -e 'd = device("statevector", wires=40)
qfn c() on d { return state() }
print(c())'
case_ "device wires=1000" "1" "" "error" -- -e 'qfn c() on device("statevector", wires=1000) { return probs() }
print(c())'
case_ "matrix wires=40" "1" "" "error" -- -e 'print(shape(matrix(PauliZ(0), wires=40)))'
case_ "--max-memory 1K" "1" "" "error" -- --max-memory 1K -e 'qfn c() on device("statevector", wires=20) { return probs() }
print(c())'

# ---------------------------------------------------------------- SIGINT during an async program
prog sigint <<'EOF'
remote = device("statevector", wires=2, latency=0.2)
qfn c(x) on remote { RX(x, 0); CNOT(0, 1); return expval(PauliZ(1)) }
print("started")
xs = []
for i in range(12) { append(xs, c(i * 0.1)) }
y = c(c(c(xs[0])))
s = 0
for i in range(200000) { s += i }
print(sum(wait(xs)), y)
sync()
print("finished")
EOF
prog sigint_busy <<'EOF'
remote = device("statevector", wires=1, latency=0.3)
qfn c(x) on remote { RY(x, 0); return expval(PauliZ(0)) }
futs = [c(0.1), c(0.2), c(0.3), c(0.4)]
i = 0
while true { i += 1 }
EOF
prog sigint_wait <<'EOF'
remote = device("statevector", wires=1, latency=2)
qfn c(x) on remote { RY(x, 0); return expval(PauliZ(0)) }
qfn chain(x) { return c(c(x)) }
a = chain(0.5)
b = c(a)
print(b)
EOF
sigint_case() {   # NAME DELAY QH-ARGS...
  local name=$1 delay=$2; shift 2
  # shellcheck disable=SC2053
  [[ $name == $pattern ]] || return 0
  # timeout sends SIGINT after DELAY; --preserve-status: qh's own status; -k: a hang after SIGINT is killed
  timeout --preserve-status -k 15 -s INT "$delay" "$qh" "$@" </dev/null >"$tmp/out" 2>"$tmp/err"
  judge "$name" "130" "$?"
}
for d in 0.1 0.3 0.6; do
  sigint_case "SIGINT after ${d}s" "$d" "$tmp/sigint.qh"
  sigint_case "SIGINT after ${d}s --workers 1" "$d" --workers 1 "$tmp/sigint.qh"
  sigint_case "SIGINT after ${d}s --sync" "$d" --sync "$tmp/sigint.qh"
  $tsan || sigint_case "SIGINT after ${d}s, main thread busy" "$d" "$tmp/sigint_busy.qh"
  sigint_case "SIGINT after ${d}s, waiting on a chain" "$d" "$tmp/sigint_wait.qh"
done

echo "bad inputs: $pass passed, $fail failed"
[ "$fail" = 0 ]
