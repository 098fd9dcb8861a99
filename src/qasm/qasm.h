/* qasm.h — the OpenQASM room (prefix qasm_): OpenQASM 2.0 (and the subset
 * of OpenQASM 3 that maps onto it) in, a flat circuit out, and back.
 *
 * The reader understands OPENQASM 2.0 with qelib1.inc (Qiskit's version:
 * u3 u2 u1 u0 u p cx id x y z h s sdg t tdg sx sxdg rx ry rz cz cy ch swap
 * ccx cswap crx cry crz cu1 cp cu3 cu csx rxx rzz c3x c4x c3sqrtx rccx rc3x), `U`
 * and `CX`, custom `gate` definitions (expanded where they are used),
 * `opaque` (an error when applied), qreg/creg, broadcasting over
 * registers, measure, reset, barrier (ignored) and `if (creg == n)`.
 * From OpenQASM 3: `qubit`/`bit` declarations, `c[i] = measure q[j];`,
 * the modifiers `inv @`, `ctrl(n) @`, `negctrl(n) @`, `pow(k) @`,
 * `gphase`, stdgates.inc (also p cp cphase phase ryy), and `if` on a
 * register or a bit with a statement or a block and `else`.
 *
 * Gates become PennyLane's (sv.h's SvGate) with their global phase
 * exact as OpenQASM 3 defines them, where U(θ, φ, λ) is PennyLane's U3
 * exactly (OpenQASM 2.0's U was defined as Rz(φ) Ry(θ) Rz(λ), which is
 * e^{-i(φ+λ)/2} U3: lang/qasm.md lists the phase of every qelib1 gate).
 * A global phase is kept as a QASM_GPHASE op: it does nothing to a state
 * but becomes a phase on the control when the whole circuit is controlled.
 *
 * Qubits and bits are numbered in declaration order over all registers.
 * Errors: "line 12: unknown gate 'foo'" (the caller adds the file name).
 * Pure C: knows sv.h's gate table, nothing of the language or devices.
 */
#ifndef QH_QASM_H
#define QH_QASM_H

#include <stddef.h>
#include <stdint.h>
#include "sv.h"

typedef enum QasmKind {
    QASM_GATE,    /* a PennyLane gate (maybe adjoint, maybe controlled) */
    QASM_GPHASE,  /* a global phase e^{i params[0]} (no wires) */
    QASM_MEASURE, /* measure wire -> clbit */
    QASM_RESET,   /* reset wire to |0> */
    QASM_CHANNEL, /* a noise channel (dm.h's DmChannel in `chan`): recorded from
                      the mixed device for drawing; OpenQASM cannot write it */
} QasmKind;

/* A classical condition: the bits (first = least significant, as an
   OpenQASM register reads as an integer) equal value (or differ, negate). */
typedef struct QasmCond {
    int nbits;
    int bits[64];
    uint64_t value;
    int negate;
} QasmCond;

typedef struct QasmOp {
    QasmKind kind;
    SvGate gate; /* QASM_GATE */
    int adjoint;
    int nparams;
    double params[4];  /* gates use 3 at most; ThermalRelaxationError 4 */
    int nctrl, nwires; /* wires[0..nctrl) are controls, then nwires targets */
    int *wires;        /* points into the circuit's pool */
    uint64_t bits;     /* BasisState (sv.h's SvOp.bits) */
    int clbit;         /* QASM_MEASURE */
    int chan;          /* QASM_CHANNEL */
    int cond;          /* index into conds, -1: unconditional */
    int line;          /* source line (0 when built by hand) */
} QasmOp;

typedef struct QasmReg {
    char name[64];
    int size, offset;
} QasmReg;

typedef struct QasmCircuit {
    int nqubits, nclbits;
    int nqregs, ncregs;
    QasmReg *qregs, *cregs;
    size_t nops, capops;
    QasmOp *ops;
    size_t npool, cappool;
    int *pool;
    size_t nconds, capconds;
    QasmCond *conds;
    int version; /* 2 or 3, from the header */
} QasmCircuit;

/* The statevector op of a gate op (kind QASM_GATE): controls first. */
void qasm_svop(const QasmOp *o, SvOp *op);

/* The bounds of reading a file (lang/qasm.md): its expansion makes at
   most QASM_MAX_OPS operations and applies gates (definitions expanded,
   powers repeated, statements read) at most QASM_MAX_STEPS times, and an
   expression nests at most QASM_MAX_NESTING deep; past them the reader
   stops with a message ("line N: the circuit expands to more than ...").
   A stop request (stop.h: SIGINT, SIGTERM) ends a long expansion with
   "interrupted". */
#define QASM_MAX_OPS     1000000
#define QASM_MAX_STEPS   10000000
#define QASM_MAX_NESTING 256

/* Parse and expand; 0, or -1 with "line N: reason" in err. The circuit
   is empty (qasm_free is still right) after a failure. */
int qasm_parse(const char *text, size_t len, QasmCircuit *c, char *err, size_t errlen);
void qasm_free(QasmCircuit *c);

/* Building a circuit by hand (the language's to_qasm, tests). */
void qasm_init(QasmCircuit *c, int nqubits, int nclbits);
/* Appends an op (its wires copied into the pool); the pointer stays valid
   until the next append. NULL if out of memory. */
QasmOp *qasm_add(QasmCircuit *c, QasmKind kind, const int *wires, int nctrl, int nwires);
/* A deep copy (ops re-pointed into the copy's pool); 0 or -1 if out of memory. */
int qasm_copy(const QasmCircuit *src, QasmCircuit *dst);
/* Appends a condition, returns its index (-1 if out of memory). */
int qasm_add_cond(QasmCircuit *c, const QasmCond *cond);

/* OpenQASM text of a circuit (version 2: OPENQASM 2.0 with qelib1.inc,
   gates outside qelib1 written as `gate` definitions, global phases
   dropped; version 3: OPENQASM 3.0 with stdgates.inc and modifiers).
   Heap (free it). NULL + err for what the version cannot express, e.g.
   "QubitUnitary has no OpenQASM form" or (version 2) a condition on
   single bits or a controlled gate without a qelib1 counterpart. */
char *qasm_write(const QasmCircuit *c, int version, size_t *len, char *err, size_t errlen);

/* The unitary of one qelib1/stdgates gate by name, as this room applies
   it (for tests and documentation): fills ops of a scratch circuit on
   the gate's own wires 0..k-1. 0, or -1 if unknown. */
int qasm_gate_circuit(const char *name, const double *params, int nparams, QasmCircuit *c,
                      char *err, size_t errlen);

#endif
