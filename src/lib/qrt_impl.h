/* qrt_impl.h — what the files of the quantum runtime (qrt.c: devices and
 * running a call; qrt_op.c: the operator kind and the wire checks; qrt_gate.c:
 * gates, adjoint/ctrl, the rule of application; qrt_obs.c: observables and
 * matrix(); qrt_chan.c: channels; qrt_meas.c: measurements) share: the
 * device, operator and call structs and the functions one file uses from
 * another. Internal to src/lib/qrt*.c; the rest of qh sees qrt.h. */
#ifndef QH_QRT_IMPL_H
#define QH_QRT_IMPL_H

#include "qrt.h"
#include "backend.h"
#include "builtins.h"
#include "dm.h"
#include "pool.h"
#include "qdist.h"
#include "qh_assert.h"
#include "qrec.h"
#include "sv.h"
#include "svmeas.h"
#include "types.h"

#include <stdatomic.h>

#define MAX_QUBITS 40

/* ---------------------------------------------------------------- objects */

typedef struct ObjDevice {
    Obj h;
    char name[32];
    int wires;
    long shots; /* 0: exact; a shot vector: their sum */
#define MAX_SHOTV 64
    long shotv[MAX_SHOTV]; /* a shot vector (shots=[10, 100, [5, 3]]), entries expanded */
    int nshotv;            /* 0: none */
    uint64_t seed;
    bool has_seed;
    double latency;
    bool mixed;       /* "mixed": a density matrix (dm.h) */
    bool distributed; /* distributed=true: split over MPI ranks (qdist.h) */
    Value noise;      /* mixed: fn(op) -> channels to apply after each gate, or nil */
    char key[48];     /* its instances' key in the pool: "statevector:N", "mixed:N" */
} ObjDevice;
#define AS_DEV(v) ((ObjDevice *)(v).o)

enum { OPK_GATE, OPK_OBS, OPK_CHAN };
typedef struct ObjOp {
    Obj h;
    int kind;
    SvOp op;     /* OPK_GATE; OPK_CHAN: its wires (op.wires, op.nwires) and params */
    int chan;    /* OPK_CHAN: DmChannel */
    cplx *kraus; /* OPK_CHAN: Kraus matrices (QubitChannel, PauliError), owned */
    int nkraus;
    char paulis[8];    /* OPK_CHAN PauliError: its operators */
    double cparams[4]; /* OPK_CHAN: its parameters (op.nparams of them) */
    cplx *matrix;      /* QubitUnitary: owned copy */
    AdNode pnode[4];   /* the tape nodes of tracked parameters (AD_NONE: a constant; a gate
                           has at most 3, a channel 4) */
    bool tracked;      /* some parameter is tracked */
    uint64_t ptape;    /* the evaluation whose tape pnode refers to */
    Value bsrc[3];     /* parameter broadcasting: parameter i's 1-d array or list of values, held
                           (nil: op.params[i] for every member); read per member by op_stmt */
    int nb;            /* its batch size (0: none) */
    SvTerm *terms;     /* OPK_OBS: owned (blocks copied: sv_terms_dup) */
    uint64_t *idw;     /* OPK_OBS, per term: the wires an Identity factor names (never in x|z);
                           they change no value, only the printed form and matrix()'s size */
    int nterms;
} ObjOp;
#define AS_OP(v) ((ObjOp *)(v).o)

typedef struct QRuntime {
    Pool *pool;
    SvTeam **teams; /* one per worker, and one for the main thread */
    int nteams;
    long ncpu;
    SvFuseCfg fuse; /* how calls run their gates (fuse.h; --no-fusion, QH_FUSION) */
    atomic_ulong gates, calls;
    atomic_ulong blocks, passes; /* what the simulators ran: kernel runs, sweeps of a state */
} QRuntime;

/* A pooled device instance: a state vector, or a density matrix. */
typedef struct QInst {
    bool mixed;
    bool token; /* only a reservation (qrt_reserve): memory held elsewhere */
    SvState s;
    DmState d;
} QInst;

/* The running qfn's device. */
typedef struct QCtx {
    QbDev sim;            /* the simulator and its queued gates (backend.h): every gate, channel
                             and read of the state goes through its table */
    SvState *s;           /* statevector device (NULL on the mixed device and a distributed one) */
    DmState *dm;          /* mixed device (NULL on the statevector device) */
    QDState *ds;          /* a distributed statevector (qdist.h), else NULL */
    int nq;               /* wires */
    bool in_noise;        /* applying what the noise function returned */
    QRecord *rec;         /* recording the circuit (draw, specs, ...), or NULL */
    QasmCircuit *capture; /* adjoint/ctrl of a function: gates are collected, not applied */
    const ObjDevice *dev;
    Rng rng;
    long shots;        /* this run's shots (0: exact); a shot vector's entry */
    int bsize, bidx;   /* parameter broadcasting: the batch size (0: none) and this run's member */
    QRec *grec;        /* a differentiated run (diffq.c), or NULL */
    void *copy_token;  /* the pool's reservation of results copied out (reserve_copy) */
    size_t copy_bytes; /* ... and its size */
    /* the execution's shots, drawn once per measurement basis while the
       state is unchanged (qrt_meas.c: shot_set) */
    struct QShotSet *shotset;
    int nshotset;
} QCtx;

typedef struct InstArg {
    int nq;
    bool mixed;
    bool token;
} InstArg;

/* qrt.c */
/* Kernel threads for a big state (the cores no other worker is using). */
void give_threads(VM *vm, SvState *s);
/* Runs the gates queued on the call's device (before anything reads the
   state); false after the error (at site). */
bool qrt_flush(VM *vm, QCtx *q, const Node *site);
/* the gate of a gate builtin (looked up by name once, at start-up) */
const SvGateInfo *gate_of(const BuiltinDef *d);

/* qrt_op.c: the operator kind; the wire checks every maker shares */
void qrt_op_open(void);
ObjOp *op_new(int kind);
ObjOp *op_clone(const ObjOp *p);
bool wire_value(VM *vm, Value v, int *w, const char *gate, const Node *site);
/* wires from a number, a list of numbers or an array */
int collect_wires(VM *vm, Value v, int *out, int max, const char *gate, const Node *site);
/* The wires of a maker: trailing arguments from pos, one list or array,
   or wires=; their number, or -1 after the error. */
int arg_wires(VM *vm, Args *a, int pos, const char *name, int *ws);
/* false, with "NAME: wires must be distinct" naming the first wire given
 * twice, when ws repeats one */
bool wires_distinct(VM *vm, const int *ws, int nw, const char *name, const Node *site);

/* qrt_gate.c: gate makers, adjoint/ctrl, the rule of application */
void qrt_gate_open(void);
Value bi_gate(VM *vm, Args *a);
Value bi_adjoint(VM *vm, Args *a);
Value bi_ctrl(VM *vm, Args *a);
/* the statement slot: an operator as a statement applies to the device */
Value op_stmt(VM *vm, Value opv, const Node *site);
/* Why: draw/specs/matrix/to_qasm see what a call applies. */
void rec_op(QCtx *q, QasmKind kind, const SvOp *op, int chan, const double *cparams);
bool is_callable(Value v);

/* qrt_obs.c: observables, Hamiltonians, matrix() */
bool as_terms(VM *vm, Value v, SvTerm **terms, uint64_t **idw, int *n, const Node *site);
Value op_binop(VM *vm, BinOp op, Value a, Value b, const Node *site);
Value op_unop(VM *vm, BinOp op, Value a, const Node *site);
Value bi_hamiltonian(VM *vm, Args *a);
Value bi_hermitian(VM *vm, Args *a);
Value bi_projector(VM *vm, Args *a);
Value bi_matrix(VM *vm, Args *a);

/* qrt_chan.c: noise channels */
Value bi_channel(VM *vm, Args *a);
/* Why: a channel as a statement: only the mixed device has mixed states. */
Value chan_stmt(VM *vm, ObjOp *p, const Node *site);

/* qrt_meas.c: measurements */
Value bi_expval(VM *vm, Args *a);
Value bi_var(VM *vm, Args *a);
Value bi_probs(VM *vm, Args *a);
Value bi_state(VM *vm, Args *a);
Value bi_sample(VM *vm, Args *a);
/* frees the call's shot sets (the end of a call) */
void qrt_shots_free(QCtx *q);
Value bi_counts(VM *vm, Args *a);
Value bi_measure(VM *vm, Args *a);
Value bi_density_matrix(VM *vm, Args *a);
Value bi_purity(VM *vm, Args *a);
Value bi_vn_entropy(VM *vm, Args *a);
Value bi_mutual_info(VM *vm, Args *a);

#endif
