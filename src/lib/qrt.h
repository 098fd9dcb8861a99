/* qrt.h — the quantum runtime: devices, operators, measurements, and
 * running one qfn call on a device instance from the pool. The language
 * side of lang/quantum.md; the simulator itself is src/quantum (sv_). */
#ifndef QH_QRT_H
#define QH_QRT_H

#include <stdio.h>
#include "vm.h"
#include "qasm.h"

/* Registers the device and operator kinds and the quantum builtins (start-up). */
void qrt_open(void);
/* Creates the device pool (budget in->max_memory) and kernel thread teams. */
void qrt_start(Interp *in);
void qrt_finish(Interp *in);
void qrt_stats(Interp *in, FILE *out);
/* Installs in->hooks.mem_*: memory held outside the pool's own states (a
 * distributed state's part, qdist.h) counted against the budget. The
 * reservation waits as a state would (polling *cancel, which may be NULL);
 * NULL with a message when it cannot fit. The budget is known before the
 * runtime starts too. Call when the interpreter is opened. */
void qrt_attach(Interp *in);
/* Quantum calls and gates run so far, and the most device memory held. */
void qrt_counts(Interp *in, unsigned long *calls, unsigned long *gates, size_t *peak);

/* Whether a call of f may run on another rank: not when its device is a
 * distributed state (rank 0 leads those). */
bool qrt_may_travel(Interp *in, const ObjFunc *f);

/* Runs one call of f (a qfn) on this VM: takes a device instance from the
 * pool (waiting within the memory budget), seeds the call's random stream
 * from (seed, index), sleeps the device's latency, runs the body with the
 * rule of application in force, gives the instance back. slots are the
 * bound frame (references taken). Reentrant: each call has its own state. */
Value qrt_run(VM *vm, ObjFunc *f, uint64_t seed, uint64_t index, Value *slots, const Node *site);
/* The same, reporting to a differentiated run (qrec.h; NULL: none). */
struct QRec;
Value qrt_run_rec(VM *vm, ObjFunc *f, uint64_t seed, uint64_t index, Value *slots, const Node *site,
                  struct QRec *rec);

/* Recording the circuit of one call (draw, specs, matrix, to_qasm): the
 * call runs on this VM as usual (simulated, so mid-circuit measurements
 * take their branch) while every gate, channel, measurement and reset
 * applied is appended to `c`, and every terminal measurement (expval,
 * probs, ...) to `meas`. */
typedef struct QMeasRec {
    char label[96];
    int nwires;
    int wires[64];
    bool implicit; /* no wires named (probs(), state(), sample()): the drawing's wires */
} QMeasRec;
/* The matrix of a recorded QubitUnitary or of a measured Hermitian (drawn
 * as U(M0), <𝓗(M0)> with the matrix listed). */
typedef struct QMatRec {
    size_t op; /* index into c.ops, or SIZE_MAX: a measurement's */
    int meas;  /* index into meas, or -1: an op's */
    int dim;   /* 2^k for k wires */
    double *m; /* dim x dim row-major, (re, im) pairs */
} QMatRec;
typedef struct QRecord {
    QasmCircuit c;
    QMeasRec *meas;
    int nmeas, capmeas;
    QMatRec *mats;
    size_t nmats, capmats;
    char device[32];
    int wires;
    long shots;
    bool mixed;
} QRecord;
/* f(args...) with positional args (references borrowed); f must be a qfn
 * with a device. Returns f's result (new reference) or v_exc(). */
Value qrt_record(VM *vm, Value f, int nargs, const Value *args, const Node *site, QRecord *rec);
void qrt_record_free(QRecord *rec);
/* Applies one circuit op (a gate, channel, measure or reset from a QasmCircuit,
 * wires already mapped) to the running qfn's device, as a statement would;
 * measure returns its bit. bits: the classical bits so far (conditions). */
Value qrt_apply_circuit_op(VM *vm, const QasmOp *op, const Node *site);
/* While recording (draw, specs, to_qasm): a conditional circuit op is
 * recorded with its condition on the recorded bits (cond's bits already
 * mapped to them), whether it ran or not; nothing is applied. */
void qrt_record_condition(VM *vm, const QasmOp *op, const QasmCond *cond);
/* qrt_apply_circuit_op without recording it (it was, with its condition). */
Value qrt_apply_circuit_op_quiet(VM *vm, const QasmOp *op, const Node *site);
/* The recorded bit of the last mid-circuit measurement, or -1 when not recording. */
int qrt_recorded_bit(VM *vm);

#endif
