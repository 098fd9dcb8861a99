/* diffq.h — quantum calls inside a differentiated evaluation
 * (lang/quantum.md, "Gradients of whole programs"). A qfn called with
 * tracked arguments becomes a node of the evaluation's tape whose Jacobian
 * (outputs by inputs) is computed by the method asked for: the adjoint
 * sweep, the parameter-shift rule over the gates' parameters, or finite
 * differences over the inputs, with the classical code inside the qfn body
 * differentiated on a tape of its own. The forward runs, adjoint sweeps,
 * shifted and perturbed runs of all the evaluation's calls are work items
 * shared with idle workers (jobset.h); the call returns a pending value
 * that is forced where the program needs it. Also metric_tensor. Knows
 * values, the evaluator, the quantum runtime's recording interface
 * (qrec.h), the tape and the tracked kinds, the executor's job sets.
 */
#ifndef QH_DIFFQ_H
#define QH_DIFFQ_H

#include "track.h"

typedef enum GradMethod { GRAD_ADJOINT, GRAD_SHIFT, GRAD_FD, GRAD_NMETHODS } GradMethod;

typedef struct DiffQ DiffQ;

/* Registers the pending-result and argument-marker kinds (start-up). */
void diffq_open(void);
/* Routes qfn calls with tracked arguments here (wraps the evaluator's
 * qfn_call hook; call after async_attach). */
void diffq_attach(Interp *in);

/* The quantum calls of one recorded evaluation on vm (its context is
 * vm->ad). best: the method was not asked for: a call that cannot use the
 * adjoint method (the mixed device, shots) uses parameter-shift, as
 * PennyLane's diff_method="best" does. */
DiffQ *diffq_new(VM *vm, GradMethod method, bool best);
void diffq_free(DiffQ *dq);
/* Every call's Jacobian computed and set on the evaluation's tape (before
 * a backward sweep): false with the error recorded. */
bool diffq_finish(DiffQ *dq, VM *vm, const Node *site);

/* What a metric_tensor(f, ...) call asks: the metric with respect to the
 * arguments argnum[0..nargnum) (positions in f's frame), one result per
 * argument (list: argnum= was a list) or one, and the whole block-diagonal
 * metric or its diagonal only (diag: approx="diag"). Borrowed. */
typedef struct DiffqMetricAsk {
    const int *argnum;
    int nargnum;
    bool list;
    bool diag;
} DiffqMetricAsk;

/* metric_tensor(f)(params): PennyLane's block-diagonal (or diagonal)
 * Fubini-Study metric with respect to the arguments ask names (through the
 * classical processing inside f), shape (in..., in...); one per argument
 * when ask->list. params: f's bound frame (borrowed). */
Value diffq_metric(VM *vm, ObjFunc *f, Value *params, const DiffqMetricAsk *ask, const Node *site);

#endif
