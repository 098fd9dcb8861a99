/* qrec.h — what the quantum runtime reports to a differentiated run of a
 * qfn (the interface between qrt.c and diffq.c). A run may be recorded
 * (gates with the tape nodes of their parameters, measured quantities as
 * tape nodes whose Jacobians come later), shifted (one gate parameter moved,
 * or one channel replaced by the derivative of its map, the measured values
 * kept) or read for the metric tensor (gates only).
 * qrt.c calls these where it applies gates and measures; it never looks
 * past a QRec's operations. Knows the simulator's plain structs, values and the tape.
 */
#ifndef QH_QREC_H
#define QH_QREC_H

#include "ad.h"
#include "array.h"
#include "svmeas.h"
#include "vm.h"

typedef struct QRec QRec;

/* The recorder's operations (diffq.c fills them): qrt.c calls through
 * them, so the runtime and the differentiation do not link to each other. */
typedef struct QRecOps {
    /* A gate about to be applied: pnode[i] is the node of params[i] on the
     * run's tape (AD_NONE: a constant). Returns the op to apply (op itself,
     * or a shifted copy in *tmp), or NULL when the run cannot follow it
     * (the reason: error). */
    const SvOp *(*gate)(QRec *r, const SvOp *op, const AdNode *pnode, SvOp *tmp);
    /* Measurements: the value to hand the program (a tracked number or
     * array in a recorded run, the plain value otherwise). e is <O> as
     * measured (a shot estimate on a device with shots); var gets <O> and
     * <O^2> (e2), the variance being e2 - e^2; probs gets the K = 2^nw
     * probabilities (taken). */
    Value (*expval)(VM *vm, QRec *r, const SvTerm *t, int n, double e, const Node *site);
    Value (*var)(VM *vm, QRec *r, const SvTerm *t, int n, double e, double e2, const Node *site);
    Value (*probs)(VM *vm, QRec *r, const int *wires, int nw, int nq, Array *p, const Node *site);
    /* A measurement or mid-circuit measure the derivative cannot follow. */
    void (*nondiff)(QRec *r, const char *what, bool is_measure);
    /* The device samples (shots): the adjoint method refuses it. */
    void (*shots)(QRec *r, bool shots);
    /* The body has run on the nq-wire device, s its state vector (NULL on
     * a device that has none: the mixed device), not yet given back: false
     * with a message (error) if the run cannot be differentiated. */
    bool (*after_body)(QRec *r, const SvState *s, int nq);
    const char *(*error)(const QRec *r);
    /* A channel about to be applied (name: its name, for messages) with np
     * parameters, pnode[i] the node of parameter i on the run's tape
     * (AD_NONE: a constant). Returns 0: apply it; 1 + i: apply instead the
     * derivative of its map by parameter i (a run of the channel-derivative
     * rule); -1 when the run cannot follow it (the reason: error). */
    int (*channel)(QRec *r, const char *name, int np, const AdNode *pnode);
} QRecOps;

/* The head of every recorder (diffq.c's extends it). */
struct QRec {
    const QRecOps *ops;
};

static inline const SvOp *qrec_gate(QRec *r, const SvOp *op, const AdNode *pnode, SvOp *tmp)
{
    return r->ops->gate(r, op, pnode, tmp);
}
static inline Value qrec_expval(VM *vm, QRec *r, const SvTerm *t, int n, double e, const Node *site)
{
    return r->ops->expval(vm, r, t, n, e, site);
}
static inline Value qrec_var(VM *vm, QRec *r, const SvTerm *t, int n, double e, double e2,
                             const Node *site)
{
    return r->ops->var(vm, r, t, n, e, e2, site);
}
static inline Value qrec_probs(VM *vm, QRec *r, const int *wires, int nw, int nq, Array *p,
                               const Node *site)
{
    return r->ops->probs(vm, r, wires, nw, nq, p, site);
}
static inline void qrec_nondiff(QRec *r, const char *what, bool is_measure)
{
    r->ops->nondiff(r, what, is_measure);
}
static inline void qrec_shots(QRec *r, bool shots) { r->ops->shots(r, shots); }
static inline bool qrec_after_body(QRec *r, const SvState *s, int nq)
{
    return r->ops->after_body(r, s, nq);
}
static inline const char *qrec_error(const QRec *r) { return r->ops->error(r); }
static inline int qrec_channel(QRec *r, const char *name, int np, const AdNode *pnode)
{
    return r->ops->channel(r, name, np, pnode);
}

#endif
