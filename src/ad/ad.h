/* ad.h — the reverse-mode tape (prefix ad_): what an evaluation did to
 * differentiated numbers and arrays, and the backward sweep that turns an
 * output's adjoint into the adjoints of every node (lang/quantum.md,
 * "Gradients of whole programs").
 *
 * A node is a real number or a real float array (a shape, row-major) made
 * from earlier nodes by one operation; its local derivatives are either
 * stored as numbers (scalar operations: out = f(a, b), with df/da, df/db)
 * or recomputed in the sweep from the operands kept by the node (array
 * operations keep O(1) shared copies of their operand arrays). Nodes are
 * appended in evaluation order, so a reverse walk is a valid backward
 * order. Jacobian nodes stand for work done elsewhere (a quantum function
 * call): their m x n Jacobian is filled in after the forward pass, before
 * the sweep.
 *
 * Pure C on the array room: must not know about interpreter values, the VM,
 * tasks or quantum circuits. A tape belongs to one thread. Errors (out of
 * memory, bad shapes) make a node AD_ERR with a message from ad_error().
 */
#ifndef QH_AD_H
#define QH_AD_H

#include <stddef.h>
#include <stdint.h>

#include "array.h"

typedef int32_t AdNode;
#define AD_NONE (-1) /* a constant operand: no node, no adjoint */
#define AD_ERR  (-2) /* the operation failed: see ad_error */

typedef struct AdTape AdTape;

AdTape *ad_new(void);
void ad_free(AdTape *t);
/* Nodes recorded so far. */
size_t ad_len(const AdTape *t);
/* The last error message ("" if none). */
const char *ad_error(const AdTape *t);
/* Size of a node's value (1 for a number) and its shape (ndim 0 for a
 * number). */
size_t ad_size(const AdTape *t, AdNode x);
int ad_ndim(const AdTape *t, AdNode x);
const size_t *ad_shape(const AdTape *t, AdNode x);

/* ---- leaves --------------------------------------------------------------- */
/* An input: a number (ndim 0) or an array of the given shape. */
AdNode ad_input(AdTape *t, int ndim, const size_t *shape);

/* ---- numbers ---------------------------------------------------------------
 * out = f(a) or f(a, b) for numbers; ca = df/da, cb = df/db. Operands may
 * be AD_NONE (constants); if both are, AD_NONE comes back (a constant). */
AdNode ad_s1_slow(AdTape *t, AdNode a, double ca);
AdNode ad_s2_slow(AdTape *t, AdNode a, double ca, AdNode b, double cb);

/* The tape's layout, for the inline scalar append (classical code makes one
 * per operation; tape.c owns everything else). */
struct AdAux;
typedef struct AdNd {
    uint8_t kind, ndim;
    AdNode a, b;
    size_t n, off;
    double ca, cb;
    struct AdAux *aux;
} AdNd;
struct AdTape {
    AdNd *v;
    size_t len, cap;
    size_t total; /* sum of node sizes: the adjoint buffer */
    char err[256];
};
#define AD_KIND_S 1 /* a scalar node (tape.c's K_S) */

/* x is AD_NONE or a node of the tape */
static inline int ad_ok_(const AdTape *t, AdNode x) { return (size_t)(uint32_t)(x + 1) <= t->len; }

static inline AdNode ad_s2(AdTape *t, AdNode a, double ca, AdNode b, double cb)
{
    if (a == AD_NONE && b == AD_NONE) return AD_NONE;
    if (t->len < t->cap && t->len < (size_t)INT32_MAX && ad_ok_(t, a) && ad_ok_(t, b)) {
        AdNd *d = &t->v[t->len];
        d->kind = AD_KIND_S;
        d->ndim = 0;
        d->a = a;
        d->b = b;
        d->n = 1;
        d->off = t->total++;
        d->ca = ca;
        d->cb = cb;
        d->aux = NULL;
        return (AdNode)t->len++;
    }
    return ad_s2_slow(t, a, ca, b, cb);
}

static inline AdNode ad_s1(AdTape *t, AdNode a, double ca) { return ad_s2(t, a, ca, AD_NONE, 0); }

/* The derivative of a math function at x (y = f(x) already computed):
 * sin -> cos x, sqrt -> 1/(2y), log10 -> 1/(x ln 10), ...; floor, ceil and
 * round give 0; abs gives sign(x) (0 at 0). */
double ad_dmath(ArFunc f, double x, double y);

/* ---- arrays ------------------------------------------------------------------
 * Operand values are passed as AdVal: an array (kept as a shared copy) or a
 * number. Results are the caller's to compute (with the array room); the
 * tape only needs shapes and what the backward sweep reads. */
typedef struct AdVal {
    const Array *a;
    double x;
} AdVal; /* a NULL: the number x */
static inline AdVal ad_arr(const Array *a)
{
    AdVal v = { a, 0 };
    return v;
}
static inline AdVal ad_num(double x)
{
    AdVal v = { NULL, x };
    return v;
}

/* out = A op B elementwise with NumPy broadcasting, op one of AR_ADD,
 * AR_SUB, AR_MUL, AR_DIV, AR_POW (out: the result, kept for DIV and POW). */
AdNode ad_ewise(AdTape *t, ArOp op, AdNode a, AdVal A, AdNode b, AdVal B, const Array *out);
/* out = f(A) elementwise, with dout/dA = deriv (same shape as A). */
AdNode ad_map(AdTape *t, AdNode a, const Array *deriv);
/* out = c * A (negation, scaling by a constant). */
AdNode ad_scale(AdTape *t, AdNode a, double c);
/* out = A @ B for 1-d and 2-d operands (NumPy's matmul/dot rules). */
AdNode ad_matmul(AdTape *t, AdNode a, const Array *A, AdNode b, const Array *B);
/* out = sum of A over all axes (axis = AR_AXIS_ALL, a number) or one axis;
 * scale multiplies the result (1/n for a mean). */
AdNode ad_sum(AdTape *t, AdNode a, int axis, double scale);
/* out[k] = A[src[k]] (flat positions): indexing, slicing, reshape,
 * transpose, iteration, min/max. ndim 0 gives a number (nsrc 1). src NULL:
 * the identity (a reshape); then nsrc must equal A's size. */
AdNode ad_gather(AdTape *t, AdNode a, size_t nsrc, const size_t *src, int ndim,
                 const size_t *shape);
/* out = the concatenation of the parents' values, flat, in order, shaped
 * (ndim, shape): an array built from a list of numbers and arrays. parents
 * may hold AD_NONE for constants (size sizes[i] each). */
AdNode ad_concat(AdTape *t, int nparents, const AdNode *parents, const size_t *sizes, int ndim,
                 const size_t *shape);
/* Where a setitems writes: the flat positions pos[0..npos) of the base,
 * each from the flat position vmap[k] of the value (vmap NULL: 0, one
 * value for every position). Borrowed: the tape copies it. */
typedef struct AdScatter {
    size_t npos;
    const size_t *pos;
    const size_t *vmap;
} AdScatter;
/* out = base with the positions of sc replaced by values from v (v
 * broadcast over them). base or v may be AD_NONE; shape is base's. */
AdNode ad_setitems(AdTape *t, AdNode base, int ndim, const size_t *shape, AdNode v,
                   const AdScatter *sc);

/* ---- Jacobian nodes ------------------------------------------------------------
 * out (m values, shaped (ndim, shape); ndim 0 for a number) depends on the
 * parents (n = sum of their sizes) through an m x n Jacobian supplied with
 * ad_jac_set before any sweep reaches it. */
AdNode ad_jac(AdTape *t, int nparents, const AdNode *parents, int ndim, const size_t *shape);
/* Takes a copy of J (row-major m x n). 0, or -1 if x is not a Jacobian node. */
int ad_jac_set(AdTape *t, AdNode x, const double *J);
/* The parents of a Jacobian node and its input width n. */
int ad_jac_parents(const AdTape *t, AdNode x, const AdNode **parents);
size_t ad_jac_width(const AdTape *t, AdNode x);

/* ---- the backward sweep -----------------------------------------------------------
 * Adjoints of every node for one output: seed (ad_size(out) values; NULL
 * means 1 for a number) is out's adjoint. Reuses its buffers across calls
 * (a Jacobian row by row). 0, or -1 with ad_error (a Jacobian not set, out
 * of memory). */
typedef struct AdGrad AdGrad;
AdGrad *ad_grad_new(void);
void ad_grad_free(AdGrad *g);
int ad_backward(AdTape *t, AdNode out, const double *seed, AdGrad *g);
/* The adjoint of node x after ad_backward (ad_size(x) values; all zero if
 * the output does not depend on x). Valid until the next sweep. */
const double *ad_adjoint(AdGrad *g, AdNode x);

#endif
