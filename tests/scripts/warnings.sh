#!/usr/bin/env bash
# Parse-time warnings about names that hide builtins (lang/decisions.md,
# "Builtins"): each case is a program, the exact warnings it must print
# (in both modes, and with --check, before anything runs), and its stdout.
# Usage: warnings.sh PATH/TO/qh
set -u
qh=${1:?usage: warnings.sh PATH/TO/qh}
qh=$(cd "$(dirname "$qh")" && pwd)/$(basename "$qh")
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

# case NAME WANT_STDERR_WARNINGS (the warning lines only, '' for none) -- PROGRAM
case_() {
  local name=$1 want=$2 prog=${3#$'\n'}
  printf '%s\n' "$prog" > "$name.qh"
  local why=""
  for mode in "" "--sync" "--check"; do
    # shellcheck disable=SC2086
    "$qh" $mode "$name.qh" >out 2>err
    got=$(grep -E ': warning: ' err)
    if [ "$got" != "$want" ]; then
      why="($mode) warnings differ:"$'\n'"  want: ${want:-(none)}"$'\n'"  got:  ${got:-(none)}"
      break
    fi
    if [ -n "$want" ] && [ "$mode" = "--check" ] && [ -s out ]; then why="--check printed output"; break; fi
  done
  if [ -z "$why" ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name $why"; fi
}

# the issue's example: a teleportation port keeps the state in `state`
case_ teleport "teleport.qh:7:1: warning: 'state' hides the builtin state(), called at teleport.qh:5" '
dev = device("statevector", wires=2)
qfn teleport() on dev {
    Hadamard(0)
    CNOT(0, 1)
    return state()
}
state = teleport()
print(len(state))'

# no call of the builtin: no warning (a sum accumulator, a catch e, a loop variable)
case_ no-call "" '
sum = 0
for x in [1, 2] { sum += x }
try { error("x") } catch e { print(e) }
for max in [1] { }
print(sum, max)'

# a function of that name is meant: no warning
case_ fn-def "" '
fn state() { return "mine" }
print(state())'
case_ fn-expr "" '
probs = fn () { return [0.5, 0.5] }
print(probs())'

# the call is before the assignment in the file, and inside a function
case_ call-first "call-first.qh:2:1: warning: 'len' hides the builtin len(), called at call-first.qh:1" '
fn size(xs) { return len(xs) }
len = 3
print(len)'

# assigned inside a function through `global`, called at the top level
case_ via-global "via-global.qh:2:26: warning: 'range' hides the builtin range(), called at via-global.qh:4" '
fn setup() { global range
                         range = [0, 1] }
setup()
for i in range(3) { }'

# other kinds of binding: destructuring, for, import-free catch, +=
case_ destruct "destruct.qh:2:1: warning: 'min' hides the builtin min(), called at destruct.qh:3" '
fn pair() { return [1, 2] }
min, hi = pair()
print(min(4, 5))'
case_ for-var "for-var.qh:1:5: warning: 'abs' hides the builtin abs(), called at for-var.qh:2" '
for abs in [1, 2] { }
print(abs(-1))'

# one warning per name, however many bindings and calls
case_ once "once.qh:1:1: warning: 'sorted' hides the builtin sorted(), called at once.qh:3" '
sorted = [1]
sorted = [2]
sorted([3])
sorted([4])'

# locals: bound and called in the same function
case_ local "local.qh:2:5: warning: 'max' hides the builtin max(), called at local.qh:4" '
fn best(xs) {
    max = 0
    for x in xs { if x > max { max = x } }
    return [max, max(xs)]
}
print(best([1, 3]))'
# a parameter named like a builtin may well hold a function: no warning
case_ param "" '
fn apply(print, x) { return print(x) }
print(apply(fn (v) { return v + 1 }, 1))'
# a local of another function does not hide the global builtin
case_ other-fn "" '
fn a() { len = 3; return len }
fn b(xs) { return len(xs) }
print(a(), b([1]))'

# calls inside a conditional expression or a comprehension count too
case_ cond-expr "cond-expr.qh:1:1: warning: 'len' hides the builtin len(), called at cond-expr.qh:2" '
len = 3
print(len([1]) if len > 5 else 0)'
case_ comp-call "comp-call.qh:1:1: warning: 'abs' hides the builtin abs(), called at comp-call.qh:3" '
abs = 2
xs = [1, 2]
try { print([abs(x) for x in xs if x > 0]) } catch e { print(e) }'
case_ local-cond "local-cond.qh:2:5: warning: 'max' hides the builtin max(), called at local-cond.qh:3" '
fn f(xs) {
    max = 0
    return max(xs) if max == 0 else max
}
try { print(f([1])) } catch e { print(e) }'
case_ local-comp "local-comp.qh:2:5: warning: 'min' hides the builtin min(), called at local-comp.qh:3" '
fn f(xs) {
    min = 1
    return {k: min(k, 2) for k in xs}
}
try { print(f([1])) } catch e { print(e) }'
# a comprehension variable is bound inside the comprehension only
case_ comp-var "" '
fn f() {
    xs = [1 for len in [1, 2]]
    return len(xs)
}
print(f())'
case_ comp-var-call "comp-var-call.qh:2:24: warning: 'abs' hides the builtin abs(), called at comp-var-call.qh:2" '
fn f(fs) {
    return [abs(1) for abs in fs]
}
print(f([fn (v) { return v }]))'

# in an imported module, named by the module's file
printf 'state = [1, 2]\nfn first() { return state()[0] }\n' > hidemod.qh
case_ module "./hidemod.qh:1:1: warning: 'state' hides the builtin state(), called at ./hidemod.qh:2" '
import hidemod
print(hidemod.state)'

# several names, each once, in file order of the binding
case_ two-names "two-names.qh:1:1: warning: 'sum' hides the builtin sum(), called at two-names.qh:3
two-names.qh:2:1: warning: 'len' hides the builtin len(), called at two-names.qh:4" '
sum = 1
len = 2
try { sum([1]) } catch e { print(e) }
try { len([1]) } catch e { print(e) }'

echo "warnings: $pass passed, $fail failed"
[ "$fail" = 0 ]
