/* grad.h — the tape between the quantum runtime and gradients: what a
 * differentiated call records (gates with the tangents of their
 * parameters, the measured observable) and how a shifted run changes one
 * gate parameter. Knows sv.h and values. */
#ifndef QH_GRAD_H
#define QH_GRAD_H

#include "interp.h"
#include "sv.h"

enum { GRAD_ADJOINT, GRAD_SHIFT, GRAD_FD };

typedef struct TapeOp {
    SvOp op;
    cplx *matrix;       /* QubitUnitary: owned copy */
    double *tan;        /* nparams x ntan, or NULL when no parameter depends on the input */
} TapeOp;

typedef struct QTape {
    int method;
    int ntan;           /* tangents carried by dual numbers (adjoint: inputs + 1 for the expval) */
    int ninputs;
    bool record;        /* keep the operations (forward passes) */
    TapeOp *ops; int nops, cap;
    int nexpval;
    bool measured;      /* a mid-circuit measurement happened */
    bool shots;         /* the device samples */
    /* shifted runs: gate number shift_op gets params[shift_param] += shift */
    int shift_op, shift_param;
    double shift;
    int counter;
    /* adjoint: the measured observable, then d expval / d input (ninputs entries) */
    struct TapeObs *obs;
    double *adj;
    char err[256];
} QTape;

/* called by the quantum runtime */
bool grad_param_value(Value v, double *out);
const double *grad_param_tangent(Value v, int *ntan);
bool grad_shift(QTape *t, const SvOp *op, SvOp *out);
void grad_record(QTape *t, const SvOp *op, const double *tan, int ntan);
Value grad_expval(VM *vm, QTape *t, const SvPauli *terms, int n, double e, const Node *site);
/* runs the adjoint sweep on the final state (before the device goes back) */
bool grad_after_body(QTape *t, SvState *s);

#endif
