#!/usr/bin/env bash
# The data builtins end to end, in a temporary directory: text files, .npy
# both ways against NumPy (when /usr/bin/python3 has numpy; skipped with a
# message otherwise), CSV, JSON; each run also with --sync.
# Usage: io_files.sh PATH/TO/qh
set -u
qh=${1:?usage: io_files.sh PATH/TO/qh}
qh=$(cd "$(dirname "$qh")" && pwd)/$(basename "$qh")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
pass=0; fail=0
# run NAME EXPECTED-STDOUT PROGRAM
run() {
  local name=$1 want=$2 prog=$3
  printf '%s\n' "$prog" >"$tmp/p.qh"
  for mode in "" "--sync"; do
    got=$("$qh" $mode p.qh 2>"$tmp/err")
    if [ "$?" != 0 ] || [ "$got" != "$want" ]; then
      echo "FAIL $name ($mode):"; echo "  want: $want"; echo "  got:  $got"; sed 's/^/  stderr| /' "$tmp/err" | head -5
      fail=$((fail+1))
    else pass=$((pass+1)); fi
  done
}
run text '["héllo", "", "wörld!"]|14|héllo' 'write_text("t.txt", "héllo\n\r\nwörld")
write_text("t.txt", "!", append=true)
print(read_lines("t.txt"), len(read_text("t.txt")), split(read_text("t.txt"), "\n")[0], sep="|")'
run csv 'array([[0.5, 1, 0], [-2, 3, 1], [0.001, 4, 0]]) [3, 3]' 'write_text("d.csv", "x;y;label\n# comment\n0.5; 1 ;0\r\n-2;3;1\n\n1e-3;\"4\";0 # tail\n")
a = load_csv("d.csv", delimiter=";", skip=1)
print(a, shape(a))'
run csv-positional 'true true' 'write_text("p.csv", "h|k\n1|2\n3|4\n")
print(norm(load_csv("p.csv", "|", 1) - load_csv("p.csv", delimiter="|", skip=1)) == 0 and shape(load_csv("p.csv", "|", 1)) == [2, 2], json_dump([1, {"a": 2}], 2) == json_dump([1, {"a": 2}], indent=2))'
printf '{"a": [1, 2.5, true, null],\n "b": {"c": "x\\"y"}}' > j.json
run json '{"a": [1, 2.5, true, nil], "b": {"c": "x\"y"}} [1, 2.5, true, null]
{"a": [1, 2.5, true, null], "b": {"c": "x\"y"}}' 'v = json_parse(read_text("j.json"))
print(v, json_dump(v["a"]))
write_text("k.json", json_dump(v))
print(read_text("k.json"))'
run npy-roundtrip 'true true 7 (1-2j)' 'a = reshape(arange(24) / 7, 2, 3, 4)
save("a.npy", a)
save("c.npy", array([complex(1, -2), 3]))
save("s.npy", 7)
print(norm(load("a.npy") - a) == 0, shape(load("c.npy")) == [2], load("s.npy"), load("c.npy")[0])'
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  "$qh" -e 'save("q.npy", reshape(arange(12), 3, 4) * 1.5 - 3)
save("qc.npy", array([complex(0.5, -1), complex(0, 2)]))' || { echo "FAIL npy write"; fail=$((fail+1)); }
  if /usr/bin/python3 -c 'import numpy as np
a = np.load("q.npy"); c = np.load("qc.npy")
assert a.dtype == np.float64 and (a == np.arange(12).reshape(3, 4) * 1.5 - 3).all()
assert c.dtype == np.complex128 and (c == np.array([0.5 - 1j, 2j])).all()
np.save("np.npy", np.arange(6, dtype=np.float64).reshape(2, 3) / 3)
np.save("npc.npy", np.array([[1 + 1j], [-2j]]))
np.save("npf.npy", np.asfortranarray(np.arange(6.0).reshape(2, 3)))
np.save("npi.npy", np.arange(-2, 2, dtype=np.int32))'; then pass=$((pass+1)); else echo "FAIL numpy reading qh's .npy"; fail=$((fail+1)); fi
  run npy-from-numpy 'array([[0, 0.3333333333333333, 0.6666666666666666], [1, 1.3333333333333333, 1.6666666666666667]]) array([[(1+1j)], [(-0-2j)]]) array([[0, 1, 2], [3, 4, 5]]) array([-2, -1, 0, 1])' \
    'print(load("np.npy"), load("npc.npy"), load("npf.npy"), load("npi.npy"))'
else
  echo "io_files: numpy checks SKIPPED (no /usr/bin/python3 with numpy)"
fi
errs() {   # NAME STDERR-TEXT PROGRAM
  printf '%s\n' "$3" >"$tmp/e.qh"
  "$qh" e.qh >/dev/null 2>"$tmp/err"
  if [ "$?" != 1 ] || ! grep -q -F -- "$2" "$tmp/err"; then echo "FAIL $1: $(head -c 300 "$tmp/err")"; echo "  wanted: $2"; fail=$((fail+1)); else pass=$((pass+1)); fi
}
errs missing "read_text(): 'none.txt': No such file or directory" 'print(read_text("none.txt"))'
errs dir "load(): '.': Is a directory" 'print(load("."))'
errs notnpy "load(): 't.txt': not a .npy file (bad magic string)" 'print(load("t.txt"))'
errs csvline "load_csv(): 'bad.csv': line 2: expected 2 fields, got 3" 'write_text("bad.csv", "1,2\n3,4,5\n")
print(load_csv("bad.csv"))'
errs csvfield "load_csv(): 'bad2.csv': line 1, field 2: 'x' is not a number" 'write_text("bad2.csv", "1,x\n")
print(load_csv("bad2.csv"))'
errs json "json_parse(): line 1, column 6: expected ',' or ']'" 'print(json_parse("[1, 2"))'
errs jsondump "json_dump(): cannot write function as JSON" 'fn f() { return 1 }
print(json_dump([f]))'
errs nodir "write_text(): 'no/such/dir.txt': No such file or directory" 'write_text("no/such/dir.txt", "x")'
errs savebad "save() writes an array, a list of numbers or a number, not string" 'save("x.npy", "text")'
errs twice "load_csv() got multiple values for argument 'skip'" 'print(load_csv("d.csv", ";", 1, skip=1))'
errs delim "load_csv(): delimiter must be a one-character string" 'print(load_csv("d.csv", delimiter=";;"))'
printf 'qfn f() on device("statevector", wires=1) { save("x.npy", 1); return 0 }\n' > q.qh
"$qh" q.qh >/dev/null 2>"$tmp/err"
if [ "$?" = 2 ] && grep -q "reads or writes files" "$tmp/err"; then pass=$((pass+1)); else echo "FAIL qfn I/O: $(cat "$tmp/err")"; fail=$((fail+1)); fi
printf 'fn helper() { return read_text("t.txt") }\nqfn f() on device("statevector", wires=1) { x = helper(); return 0 }\nprint(f())\n' > q2.qh
"$qh" q2.qh >/dev/null 2>"$tmp/err"
if [ "$?" = 2 ] && grep -q "calls 'helper', which prints, reads input, reads or writes files" "$tmp/err"; then pass=$((pass+1)); else echo "FAIL qfn I/O through a call: $(cat "$tmp/err")"; fail=$((fail+1)); fi
echo "io files: $pass passed, $fail failed"
[ "$fail" = 0 ]
