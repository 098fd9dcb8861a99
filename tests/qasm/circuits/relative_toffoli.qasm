// qelib1.inc's relative-phase Toffolis (rccx, rc3x) on superpositions,
// so their relative phases show in the state
OPENQASM 2.0;
include "qelib1.inc";
qreg q[5];
h q[0];
h q[1];
ry(0.7) q[2];
rx(1.1) q[3];
rccx q[0], q[1], q[2];
h q[4];
rc3x q[0], q[1], q[3], q[4];
rccx q[4], q[2], q[0];
rc3x q[3], q[4], q[2], q[1];
