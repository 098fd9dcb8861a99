// Custom gates (parameters, nesting, broadcasting over registers) and the rest of qelib1, for qh's tests.
OPENQASM 2.0;
include "qelib1.inc";
qreg a[3];
qreg b[3];
gate layer(t, s) x, y { ry(t) x; rz(s * 2 - 0.1) y; cx x, y; }
gate twice(t) x, y { layer(t, -t / 3) x, y; layer(cos(t) ^ 2, sqrt(2)) y, x; }
h a;
u3(0.1, -0.2, 0.3) b;
twice(0.7) a, b;           // broadcast: a[i], b[i]
layer(pi / 5, 1e-1) a[0], b[2];
ch a[0], b[1];
crx(0.41) a[1], b[0];
cry(-0.9) b[2], a[2];
crz(1.7) a[2], b[1];
cu3(0.5, 0.6, -0.7) b[0], a[0];
csx a[1], a[2];
cswap b[0], a[1], b[2];
rxx(0.33) a[0], a[1];
rzz(-1.2) b[1], b[2];
ccx a[0], b[0], a[2];
cz a[1], b[1];
cy b[2], a[0];
p(0.25) a[2];
u1(-0.5) b[0];
u0(1) b[1];
s b;
t a;
z b[2];
