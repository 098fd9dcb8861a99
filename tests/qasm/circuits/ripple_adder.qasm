// A 2-bit ripple-carry adder (Cuccaro style) computing 3 + 2, written for qh's tests.
OPENQASM 2.0;
include "qelib1.inc";
qreg cin[1];
qreg a[2];
qreg b[2];
qreg cout[1];
creg ans[3];
gate majority x, y, z { cx z, y; cx z, x; ccx x, y, z; }
gate unmaj x, y, z { ccx x, y, z; cx z, x; cx x, y; }
x a[0];
x a[1];
x b[1];
h cin[0];          // a superposition of carry-in, so the state is not a basis state
majority cin[0], b[0], a[0];
majority a[0], b[1], a[1];
cx a[1], cout[0];
unmaj a[0], b[1], a[1];
unmaj cin[0], b[0], a[0];
measure b[0] -> ans[0];
measure b[1] -> ans[1];
measure cout[0] -> ans[2];
