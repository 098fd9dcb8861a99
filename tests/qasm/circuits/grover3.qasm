// One Grover iteration on 3 qubits marking |101>, for qh's tests.
OPENQASM 2.0;
include "qelib1.inc";
qreg q[3];
creg c[3];
h q;
x q[1];
h q[2]; ccx q[0], q[1], q[2]; h q[2];
x q[1];
h q; x q;
h q[2]; ccx q[0], q[1], q[2]; h q[2];
x q; h q;
measure q -> c;
