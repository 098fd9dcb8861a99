// Exponentials of Pauli strings by basis changes and CNOT ladders (a UCCSD-like ansatz), for qh's tests.
OPENQASM 2.0;
include "qelib1.inc";
qreg r[4];
x r[0];
x r[1];
h r[0]; rx(pi/2) r[1]; h r[2]; rx(pi/2) r[3];
cx r[0], r[1]; cx r[1], r[2]; cx r[2], r[3];
rz(0.8123) r[3];
cx r[2], r[3]; cx r[1], r[2]; cx r[0], r[1];
h r[0]; rx(-pi/2) r[1]; h r[2]; rx(-pi/2) r[3];
y r[2];
rx(pi/2) r[0]; h r[3];
cx r[0], r[3];
rz(-1.25e-1) r[3];
cx r[0], r[3];
rx(-pi/2) r[0]; h r[3];
sx r[1]; sxdg r[2]; sdg r[0]; tdg r[3]; id r[1];
