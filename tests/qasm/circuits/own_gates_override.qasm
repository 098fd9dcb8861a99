// a file's own gate named like a qelib1 gate replaces it from its
// definition on (cz here is not CZ at all), also inside later gates
OPENQASM 2.0;
include "qelib1.inc";
qreg q[3];
h q[0];
ry(0.4) q[1];
cz q[0], q[1];
gate cz a, b { cx a, b; ry(0.3) b; }
gate uses_cz a, b, c { cz a, b; cz b, c; }
cz q[1], q[2];
uses_cz q[2], q[0], q[1];
gate rx(t) a { ry(t) a; u1(t) a; }
rx(0.9) q[2];
