/* dual.h — dual numbers and the gradient tape: what the quantum runtime
 * records in a differentiated call (gates with the tangents of their
 * parameters, the measured observables) and how a shifted run changes one
 * gate parameter. Below the quantum runtime; gradients (grad.h) build on
 * it. Knows values, the VM's errors and sv.h. */
#ifndef QH_DUAL_H
#define QH_DUAL_H

#include "sv.h"
#include "types.h"

/* A number with tangents: d[k] = d value / d (input k). */
typedef struct ObjDual { Obj h; double v; int n; double d[]; } ObjDual;
#define AS_DUAL(x) ((ObjDual *)(x).o)
/* A dual of value v with n tangents, all zero. */
ObjDual *dual_alloc(double v, int n);
/* Registers the dual-number kind (start-up). */
void dual_open(void);

typedef enum GradMethod { GRAD_ADJOINT, GRAD_SHIFT, GRAD_FD, GRAD_NMETHODS } GradMethod;
#define GRAD_MAX_EXPVALS 16   /* expvals one differentiated call may measure */

typedef struct TapeOp {
    SvOp op;
    cplx *matrix;       /* QubitUnitary: owned copy */
    double *tan;        /* nparams x ntan, or NULL when no parameter depends on the input */
} TapeOp;

typedef struct QTape {
    GradMethod method;
    int ntan;           /* tangents carried by dual numbers (adjoint: inputs + 1 for the expval) */
    int ninputs;
    bool record;        /* keep the operations (forward passes) */
    TapeOp *ops; int nops, cap;
    int nexpval;
    bool measured;      /* a mid-circuit measurement happened */
    bool shots;         /* the device samples */
    const char *nondiff;  /* a measurement other than expval was taken (its name) */
    uint64_t shape;     /* hash of the gates applied: shifted runs must repeat it */
    /* shifted runs: gate number shift_op gets params[shift_param] += shift */
    int shift_op, shift_param;
    double shift;
    int counter;
    /* each expval: its observable, the gates before it, and (adjoint) the
     * state it was taken on; shifted runs record only the values */
    struct TapeObs *obs;
    int nobs, capobs;
    double *evals;      /* values of the expvals (shifted runs) */
    int nevals;
    /* adjoint result: d expval_k / d input, nobs x ninputs */
    double *adj;
    char err[256];
} QTape;

/* called by the quantum runtime: a gate parameter's value and tangents */
bool grad_param_value(Value v, double *out);
const double *grad_param_tangent(Value v, int *ntan);
bool grad_shift(QTape *t, const SvOp *op, SvOp *out);
void grad_record(QTape *t, const SvOp *op, const double *tan, int ntan);
Value grad_expval(VM *vm, QTape *t, const SvState *s, const SvPauli *terms, int n, double e, const Node *site);
/* a measurement that gradients do not follow (var, probs, state, ...) */
void grad_note_nondiff(QTape *t, const char *what);
/* runs the adjoint sweep on the final state (before the device goes back) */
bool grad_after_body(QTape *t, SvState *s);

/* frees what the tape recorded (the tape itself is the caller's) */
void tape_free(QTape *t);

#endif
