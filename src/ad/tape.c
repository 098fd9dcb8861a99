/* tape.c — the reverse-mode tape and its backward sweep (ad.h).
 *
 * Nodes live in one growable array, in evaluation order; scalar nodes carry
 * their two partial derivatives inline (the common case in classical code
 * costs one append), array nodes an Aux with what their vector-Jacobian
 * product reads. Each node owns a slice [off, off + n) of one adjoint
 * buffer, so a sweep is a memset and one reverse walk that skips nodes the
 * output does not reach. Must not know about values or quantum circuits.
 */
#include "ad.h"

#include "qblas.h"
#include "qh_assert.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_INPUT, K_S, K_SCALE, K_MAP, K_EW, K_MATMUL, K_SUM, K_GATHER, K_CONCAT, K_SET, K_JAC };

typedef struct AdAux {
    size_t shape[AR_MAXDIM];
    Array *A, *B, *out; /* kept operands (shared copies) */
    double xa, xb;      /* numeric operands when A or B is NULL */
    ArOp op;
    int axis;
    size_t nidx;
    size_t *idx, *idx2; /* gather: src; set: pos, vmap */
    int np;
    AdNode *parents; /* concat, jac */
    size_t *sizes;
    double *J; /* jac: m x width, NULL until set */
    size_t width;
} AdAux;
typedef AdAux Aux;

typedef AdNd Nd;
_Static_assert(K_S == AD_KIND_S, "ad.h's inline append writes K_S");

struct AdGrad {
    const AdTape *t; /* of the last sweep */
    double *buf;
    size_t cap;
    uint8_t *touched;
    size_t tcap;
};

/* ---- the tape ----------------------------------------------------------------- */

AdTape *ad_new(void)
{
    AdTape *t = calloc(1, sizeof *t);
    return t;
}

static void aux_free(Aux *x)
{
    if (!x) return;
    ar_free(x->A);
    ar_free(x->B);
    ar_free(x->out);
    free(x->idx);
    free(x->idx2);
    free(x->parents);
    free(x->sizes);
    free(x->J);
    free(x);
}

void ad_free(AdTape *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->len; i++)
        if (t->v[i].aux) aux_free(t->v[i].aux);
    free(t->v);
    free(t);
}

size_t ad_len(const AdTape *t) { return t->len; }
const char *ad_error(const AdTape *t) { return t->err; }

static AdNode fail(AdTape *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->err, sizeof t->err, fmt, ap);
    va_end(ap);
    return AD_ERR;
}

static int valid(const AdTape *t, AdNode x) { return x >= 0 && (size_t)x < t->len; }

size_t ad_size(const AdTape *t, AdNode x) { return valid(t, x) ? t->v[x].n : 0; }
int ad_ndim(const AdTape *t, AdNode x) { return valid(t, x) ? t->v[x].ndim : 0; }
const size_t *ad_shape(const AdTape *t, AdNode x)
{
    static const size_t none[1] = { 1 };
    return valid(t, x) && t->v[x].aux ? t->v[x].aux->shape : none;
}

/* Appends a node of n values; aux (may be NULL) is taken. */
static AdNode push(AdTape *t, int kind, AdNode a, AdNode b, size_t n, int ndim, Aux *aux)
{
    if (t->len == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        Nd *v = realloc(t->v, cap * sizeof *v);
        if (!v) {
            aux_free(aux);
            return fail(t, "out of memory recording a gradient");
        }
        t->v = v;
        t->cap = cap;
    }
    if (t->len >= (size_t)INT32_MAX) {
        aux_free(aux);
        return fail(t, "gradient tape too long");
    }
    /* the tape is in topological order: a node's parents are recorded before it, which the
     * backward sweep (one pass from the output down) relies on */
    qh_assert(a < 0 || (size_t)a < t->len);
    qh_assert(b < 0 || (size_t)b < t->len);
    qh_assert(ndim >= 0 && ndim <= AR_MAXDIM);
    Nd *d = &t->v[t->len];
    d->kind = (uint8_t)kind;
    d->ndim = (uint8_t)ndim;
    d->a = a;
    d->b = b;
    d->n = n;
    d->off = t->total;
    d->ca = d->cb = 0;
    d->aux = aux;
    t->total += n;
    return (AdNode)t->len++;
}

static size_t shape_size(int ndim, const size_t *shape)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

/* An Aux holding a shape (array nodes). */
static Aux *aux_new(AdTape *t, int ndim, const size_t *shape)
{
    Aux *x = calloc(1, sizeof *x);
    if (!x) {
        fail(t, "out of memory recording a gradient");
        return NULL;
    }
    if (ndim > 0) memcpy(x->shape, shape, (size_t)ndim * sizeof(size_t));
    return x;
}

static int bad(const AdTape *t, AdNode x) { return x == AD_ERR || (x != AD_NONE && !valid(t, x)); }

AdNode ad_input(AdTape *t, int ndim, const size_t *shape)
{
    if (ndim < 0 || ndim > AR_MAXDIM) return fail(t, "bad shape");
    Aux *x = NULL;
    if (ndim > 0 && !(x = aux_new(t, ndim, shape))) return AD_ERR;
    return push(t, K_INPUT, AD_NONE, AD_NONE, ndim ? shape_size(ndim, shape) : 1, ndim, x);
}

AdNode ad_s1_slow(AdTape *t, AdNode a, double ca) { return ad_s2_slow(t, a, ca, AD_NONE, 0); }

AdNode ad_s2_slow(AdTape *t, AdNode a, double ca, AdNode b, double cb)
{
    if (a == AD_NONE && b == AD_NONE) return AD_NONE;
    if (bad(t, a) || bad(t, b)) return AD_ERR;
    AdNode r = push(t, K_S, a, b, 1, 0, NULL);
    if (r >= 0) {
        t->v[r].ca = ca;
        t->v[r].cb = cb;
    }
    return r;
}

double ad_dmath(ArFunc f, double x, double y)
{
    switch (f) {
    case AR_SIN: return cos(x);
    case AR_COS: return -sin(x);
    case AR_TAN: return 1 / (cos(x) * cos(x));
    case AR_ASIN: return 1 / sqrt(1 - x * x);
    case AR_ACOS: return -1 / sqrt(1 - x * x);
    case AR_ATAN: return 1 / (1 + x * x);
    case AR_EXP: return y;
    case AR_LOG: return 1 / x;
    case AR_LOG2: return 1 / (x * M_LN2);
    case AR_LOG10: return 1 / (x * M_LN10);
    case AR_SQRT: return y == 0 ? 0 : 0.5 / y;
    case AR_ABS: return x > 0 ? 1 : x < 0 ? -1 : 0;
    case AR_FLOOR:
    case AR_CEIL:
    case AR_ROUND: return 0;
    case AR_NFUNCS: break;
    }
    return 0;
}

/* ---- array nodes ----------------------------------------------------------------- */

static Array *keep(AdTape *t, const Array *a)
{
    if (!a) return NULL;
    char err[AR_ERRLEN];
    Array *c = ar_copy(a, err);
    if (!c) fail(t, "%s", err);
    return c;
}

/* Shape of an operand: an array's, or a number's (ndim 0). */
static int val_shape(AdVal v, size_t *shape)
{
    if (!v.a) return 0;
    int nd = ar_ndim(v.a);
    memcpy(shape, ar_shape(v.a), (size_t)nd * sizeof(size_t));
    return nd;
}

AdNode ad_ewise(AdTape *t, ArOp op, AdNode a, AdVal A, AdNode b, AdVal B, const Array *out)
{
    if (a == AD_NONE && b == AD_NONE) return AD_NONE;
    if (bad(t, a) || bad(t, b)) return AD_ERR;
    if (op != AR_ADD && op != AR_SUB && op != AR_MUL && op != AR_DIV && op != AR_POW)
        return fail(t, "operator %s has no derivative", ar_op_name(op));
    if (!out) return fail(t, "no result");
    if ((A.a && ar_is_complex(A.a)) || (B.a && ar_is_complex(B.a)) || ar_is_complex(out))
        return fail(t, "complex arrays cannot be differentiated");
    Aux *x = aux_new(t, ar_ndim(out), ar_shape(out));
    if (!x) return AD_ERR;
    x->op = op;
    x->xa = A.x;
    x->xb = B.x;
    int need_out = op == AR_DIV || op == AR_POW;
    if ((A.a && !(x->A = keep(t, A.a))) || (B.a && !(x->B = keep(t, B.a))) ||
        (need_out && !(x->out = keep(t, out)))) {
        aux_free(x);
        return AD_ERR;
    }
    return push(t, K_EW, a, b, ar_size(out), ar_ndim(out), x);
}

AdNode ad_map(AdTape *t, AdNode a, const Array *deriv)
{
    if (a == AD_NONE) return AD_NONE;
    if (bad(t, a)) return AD_ERR;
    if (!deriv || ar_size(deriv) != t->v[a].n || ar_is_complex(deriv))
        return fail(t, "derivative of the wrong size");
    Aux *x = aux_new(t, t->v[a].ndim, ad_shape(t, a));
    if (!x) return AD_ERR;
    if (!(x->A = keep(t, deriv))) {
        aux_free(x);
        return AD_ERR;
    }
    return push(t, K_MAP, a, AD_NONE, t->v[a].n, t->v[a].ndim, x);
}

AdNode ad_scale(AdTape *t, AdNode a, double c)
{
    if (a == AD_NONE) return AD_NONE;
    if (bad(t, a)) return AD_ERR;
    int nd = t->v[a].ndim;
    Aux *x = NULL;
    if (nd && !(x = aux_new(t, nd, ad_shape(t, a)))) return AD_ERR;
    AdNode r = push(t, K_SCALE, a, AD_NONE, t->v[a].n, nd, x);
    if (r >= 0) t->v[r].ca = c;
    return r;
}

AdNode ad_matmul(AdTape *t, AdNode a, const Array *A, AdNode b, const Array *B)
{
    if (a == AD_NONE && b == AD_NONE) return AD_NONE;
    if (bad(t, a) || bad(t, b)) return AD_ERR;
    if (!A || !B) return fail(t, "no operands");
    int na = ar_ndim(A), nb = ar_ndim(B);
    if (na > 2 || nb > 2)
        return fail(t, "@ of arrays with more than 2 dimensions cannot be differentiated");
    if (ar_is_complex(A) || ar_is_complex(B))
        return fail(t, "complex arrays cannot be differentiated");
    size_t k = ar_shape(A)[na - 1];
    size_t kb = ar_shape(B)[0];
    if (k != kb) return fail(t, "@: shapes do not match");
    size_t shape[2];
    int nd = 0;
    if (na == 2) shape[nd++] = ar_shape(A)[0];
    if (nb == 2) shape[nd++] = ar_shape(B)[1];
    Aux *x = aux_new(t, nd, shape);
    if (!x) return AD_ERR;
    if (!(x->A = keep(t, A)) || !(x->B = keep(t, B))) {
        aux_free(x);
        return AD_ERR;
    }
    return push(t, K_MATMUL, a, b, nd ? shape_size(nd, shape) : 1, nd, x);
}

AdNode ad_sum(AdTape *t, AdNode a, int axis, double scale)
{
    if (a == AD_NONE) return AD_NONE;
    if (bad(t, a)) return AD_ERR;
    int nd = t->v[a].ndim;
    const size_t *sh = ad_shape(t, a);
    if (axis == AR_AXIS_ALL || nd <= 1) {
        if (axis != AR_AXIS_ALL && axis != 0 && axis != -1)
            return fail(t, "axis %d out of range", axis);
        Aux *x = aux_new(t, 0, NULL);
        if (!x) return AD_ERR;
        x->axis = AR_AXIS_ALL;
        AdNode r = push(t, K_SUM, a, AD_NONE, 1, 0, x);
        if (r >= 0) t->v[r].ca = scale;
        return r;
    }
    if (axis < 0) axis += nd;
    if (axis < 0 || axis >= nd) return fail(t, "axis out of range");
    size_t shape[AR_MAXDIM];
    int m = 0;
    for (int i = 0; i < nd; i++)
        if (i != axis) shape[m++] = sh[i];
    Aux *x = aux_new(t, m, shape);
    if (!x) return AD_ERR;
    x->axis = axis;
    /* the operand's shape is read from node a in the sweep */
    AdNode r = push(t, K_SUM, a, AD_NONE, shape_size(m, shape), m, x);
    if (r >= 0) t->v[r].ca = scale;
    return r;
}

AdNode ad_gather(AdTape *t, AdNode a, size_t nsrc, const size_t *src, int ndim, const size_t *shape)
{
    if (a == AD_NONE) return AD_NONE;
    if (bad(t, a)) return AD_ERR;
    if (ndim < 0 || ndim > AR_MAXDIM) return fail(t, "bad shape");
    size_t n = ndim ? shape_size(ndim, shape) : 1;
    if (n != nsrc) return fail(t, "gather: %zu positions for %zu values", nsrc, n);
    if (!src && nsrc != t->v[a].n) return fail(t, "reshape: %zu values into %zu", t->v[a].n, nsrc);
    Aux *x = aux_new(t, ndim, shape);
    if (!x) return AD_ERR;
    if (src) {
        x->idx = malloc((nsrc ? nsrc : 1) * sizeof(size_t));
        if (!x->idx) {
            aux_free(x);
            return fail(t, "out of memory recording a gradient");
        }
        for (size_t k = 0; k < nsrc; k++) {
            if (src[k] >= t->v[a].n) {
                aux_free(x);
                return fail(t, "gather: position %zu out of range", src[k]);
            }
            x->idx[k] = src[k];
        }
    }
    x->nidx = nsrc;
    return push(t, K_GATHER, a, AD_NONE, n, ndim, x);
}

AdNode ad_concat(AdTape *t, int np, const AdNode *parents, const size_t *sizes, int ndim,
                 const size_t *shape)
{
    int any = 0;
    size_t tot = 0;
    for (int i = 0; i < np; i++) {
        if (bad(t, parents[i])) return AD_ERR;
        if (parents[i] != AD_NONE) {
            any = 1;
            if (t->v[parents[i]].n != sizes[i])
                return fail(t, "concat: part %d has %zu values, not %zu", i, t->v[parents[i]].n,
                            sizes[i]);
        }
        tot += sizes[i];
    }
    if (!any) return AD_NONE;
    size_t n = ndim ? shape_size(ndim, shape) : 1;
    if (n != tot) return fail(t, "concat: %zu values for a shape of %zu", tot, n);
    Aux *x = aux_new(t, ndim, shape);
    if (!x) return AD_ERR;
    x->np = np;
    x->parents = malloc((size_t)(np ? np : 1) * sizeof(AdNode));
    x->sizes = malloc((size_t)(np ? np : 1) * sizeof(size_t));
    if (!x->parents || !x->sizes) {
        aux_free(x);
        return fail(t, "out of memory recording a gradient");
    }
    memcpy(x->parents, parents, (size_t)np * sizeof(AdNode));
    memcpy(x->sizes, sizes, (size_t)np * sizeof(size_t));
    return push(t, K_CONCAT, AD_NONE, AD_NONE, n, ndim, x);
}

AdNode ad_setitems(AdTape *t, AdNode base, int ndim, const size_t *shape, AdNode v,
                   const AdScatter *sc)
{
    size_t npos = sc->npos;
    const size_t *pos = sc->pos, *vmap = sc->vmap;
    if (base == AD_NONE && v == AD_NONE) return AD_NONE;
    if (bad(t, base) || bad(t, v)) return AD_ERR;
    size_t n = ndim ? shape_size(ndim, shape) : 1;
    if (base != AD_NONE && t->v[base].n != n) return fail(t, "setitems: base of the wrong size");
    Aux *x = aux_new(t, ndim, shape);
    if (!x) return AD_ERR;
    x->nidx = npos;
    x->idx = malloc((npos ? npos : 1) * sizeof(size_t));
    x->idx2 = malloc((npos ? npos : 1) * sizeof(size_t));
    if (!x->idx || !x->idx2) {
        aux_free(x);
        return fail(t, "out of memory recording a gradient");
    }
    size_t vn = v != AD_NONE ? t->v[v].n : (size_t)-1;
    for (size_t k = 0; k < npos; k++) {
        if (pos[k] >= n || (v != AD_NONE && vmap[k] >= vn)) {
            aux_free(x);
            return fail(t, "setitems: position out of range");
        }
        x->idx[k] = pos[k];
        x->idx2[k] = vmap ? vmap[k] : 0;
    }
    return push(t, K_SET, base, v, n, ndim, x);
}

AdNode ad_jac(AdTape *t, int np, const AdNode *parents, int ndim, const size_t *shape)
{
    size_t width = 0;
    for (int i = 0; i < np; i++) {
        if (bad(t, parents[i]) || parents[i] == AD_NONE)
            return bad(t, parents[i]) ? AD_ERR : fail(t, "jac: a constant parent");
        width += t->v[parents[i]].n;
    }
    Aux *x = aux_new(t, ndim, shape);
    if (!x) return AD_ERR;
    x->np = np;
    x->width = width;
    x->parents = malloc((size_t)(np ? np : 1) * sizeof(AdNode));
    if (!x->parents) {
        aux_free(x);
        return fail(t, "out of memory recording a gradient");
    }
    memcpy(x->parents, parents, (size_t)np * sizeof(AdNode));
    return push(t, K_JAC, AD_NONE, AD_NONE, ndim ? shape_size(ndim, shape) : 1, ndim, x);
}

int ad_jac_set(AdTape *t, AdNode x, const double *J)
{
    if (!valid(t, x) || t->v[x].kind != K_JAC) return -1;
    Aux *a = t->v[x].aux;
    size_t cnt = t->v[x].n * a->width;
    double *c = malloc((cnt ? cnt : 1) * sizeof(double));
    if (!c) {
        fail(t, "out of memory recording a gradient");
        return -1;
    }
    if (cnt) memcpy(c, J, cnt * sizeof(double));
    free(a->J);
    a->J = c;
    return 0;
}

int ad_jac_parents(const AdTape *t, AdNode x, const AdNode **parents)
{
    if (!valid(t, x) || t->v[x].kind != K_JAC) return -1;
    *parents = t->v[x].aux->parents;
    return t->v[x].aux->np;
}

size_t ad_jac_width(const AdTape *t, AdNode x)
{
    return valid(t, x) && t->v[x].kind == K_JAC ? t->v[x].aux->width : 0;
}

/* ---- the sweep ----------------------------------------------------------------------- */

AdGrad *ad_grad_new(void) { return calloc(1, sizeof(AdGrad)); }

void ad_grad_free(AdGrad *g)
{
    if (!g) return;
    free(g->buf);
    free(g->touched);
    free(g);
}

const double *ad_adjoint(AdGrad *g, AdNode x)
{
    if (!g->t || !valid(g->t, x) || !g->buf) return NULL;
    return g->buf + g->t->v[x].off;
}

/* Operand index of out position k under broadcasting: walks the out
   multi-index (od dims) with the operand's strides (0 where broadcast). */
typedef struct Bcast {
    int nd;
    size_t shape[AR_MAXDIM];
    size_t stride[AR_MAXDIM];
    size_t ctr[AR_MAXDIM];
    size_t pos;
} Bcast;

static void bc_init(Bcast *b, int od, const size_t *oshape, int vd, const size_t *vshape)
{
    b->nd = od;
    memcpy(b->shape, oshape, (size_t)od * sizeof(size_t));
    size_t s = 1;
    for (int i = od - 1; i >= 0; i--) {
        int j = i - (od - vd);
        if (j >= 0 && vshape[j] != 1) {
            b->stride[i] = s;
            s *= vshape[j];
        } else {
            if (j >= 0) s *= vshape[j];
            b->stride[i] = 0;
        }
        b->ctr[i] = 0;
    }
    b->pos = 0;
}

static void bc_next(Bcast *b)
{
    for (int i = b->nd - 1; i >= 0; i--) {
        b->pos += b->stride[i];
        if (++b->ctr[i] < b->shape[i]) return;
        b->pos -= b->stride[i] * b->ctr[i];
        b->ctr[i] = 0;
    }
}

static void vjp_ewise(const AdTape *t, const Nd *d, const double *g, double *ga, double *gb)
{
    const Aux *x = d->aux;
    size_t shA[AR_MAXDIM], shB[AR_MAXDIM];
    int ndA = val_shape(ad_arr(x->A), shA), ndB = val_shape(ad_arr(x->B), shB);
    const double *A = x->A ? ar_f64_ro(x->A) : NULL, *B = x->B ? ar_f64_ro(x->B) : NULL;
    const double *O = x->out ? ar_f64_ro(x->out) : NULL;
    Bcast ba, bb;
    bc_init(&ba, d->ndim, x->shape, ndA, shA);
    bc_init(&bb, d->ndim, x->shape, ndB, shB);
    (void)t;
    for (size_t k = 0; k < d->n; k++) {
        double av = A ? A[ba.pos] : x->xa, bv = B ? B[bb.pos] : x->xb, gk = g[k];
        double da = 0, db = 0; /* every operator sets both */
        switch (x->op) {
        case AR_ADD:
            da = 1;
            db = 1;
            break;
        case AR_SUB:
            da = 1;
            db = -1;
            break;
        case AR_MUL:
            da = bv;
            db = av;
            break;
        case AR_DIV:
            da = 1 / bv;
            db = -O[k] / bv;
            break;
        case AR_POW:
            da = bv == 0 ? 0 : bv * pow(av, bv - 1);
            db = av > 0 ? O[k] * log(av) : 0;
            break;
        case AR_EQ: /* ad_ewise refuses every other operator */
        case AR_NE:
        case AR_LT:
        case AR_LE:
        case AR_GT:
        case AR_GE:
        case AR_ATAN2:
        case AR_NOPS: qh_unreachable();
        }
        if (ga) ga[A ? ba.pos : 0] += da * gk;
        if (gb) gb[B ? bb.pos : 0] += db * gk;
        bc_next(&ba);
        bc_next(&bb);
    }
}

static void vjp_matmul(const Nd *d, const double *g, double *ga, double *gb)
{
    const Aux *x = d->aux;
    const double *A = ar_f64_ro(x->A), *B = ar_f64_ro(x->B);
    int na = ar_ndim(x->A), nb = ar_ndim(x->B);
    size_t m = na == 2 ? ar_shape(x->A)[0] : 1, k = ar_shape(x->A)[na - 1];
    size_t n = nb == 2 ? ar_shape(x->B)[1] : 1;
    /* as matrices: A (m x k), B (k x n), G (m x n) */
    if (ga) { /* gA += G B^T */
        if (m * n * k >= 4096)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)k, (int)n, 1.0, g,
                        (int)n, B, (int)n, 1.0, ga, (int)k);
        else
            for (size_t i = 0; i < m; i++)
                for (size_t q = 0; q < n; q++) {
                    double gv = g[i * n + q];
                    if (gv == 0) continue;
                    for (size_t j = 0; j < k; j++) ga[i * k + j] += gv * B[j * n + q];
                }
    }
    if (gb) { /* gB += A^T G */
        if (m * n * k >= 4096)
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)k, (int)n, (int)m, 1.0, A,
                        (int)k, g, (int)n, 1.0, gb, (int)n);
        else
            for (size_t i = 0; i < m; i++)
                for (size_t q = 0; q < n; q++) {
                    double gv = g[i * n + q];
                    if (gv == 0) continue;
                    for (size_t j = 0; j < k; j++) gb[j * n + q] += A[i * k + j] * gv;
                }
    }
}

static void vjp_sum(const AdTape *t, const Nd *d, const double *g, double *ga)
{
    const Nd *a = &t->v[d->a];
    if (d->aux->axis == AR_AXIS_ALL) {
        double v = d->ca * g[0];
        for (size_t i = 0; i < a->n; i++) ga[i] += v;
        return;
    }
    int ax = d->aux->axis;
    const size_t *sh = a->aux->shape;
    size_t outer = 1, len = sh[ax], inner = 1;
    for (int i = 0; i < ax; i++) outer *= sh[i];
    for (int i = ax + 1; i < a->ndim; i++) inner *= sh[i];
    for (size_t o = 0; o < outer; o++)
        for (size_t l = 0; l < len; l++)
            for (size_t i = 0; i < inner; i++)
                ga[(o * len + l) * inner + i] += d->ca * g[o * inner + i];
}

/* Why: one buffer for every node's adjoint, reused sweep after sweep: g's
   buffer as large as the tape's slices and its touched flags as the nodes
   up to out, both zeroed. */
static int grad_room(AdTape *t, AdNode out, AdGrad *g)
{
    size_t need = t->total; /* every node has its slice: later ones stay 0 */
    if (need > g->cap) {
        double *b = realloc(g->buf, need * sizeof(double));
        if (!b) {
            fail(t, "out of memory in the backward sweep");
            return -1;
        }
        g->buf = b;
        g->cap = need;
    }
    if ((size_t)out + 1 > g->tcap) {
        uint8_t *tb = realloc(g->touched, (size_t)out + 1);
        if (!tb) {
            fail(t, "out of memory in the backward sweep");
            return -1;
        }
        g->touched = tb;
        g->tcap = (size_t)out + 1;
    }
    g->t = t;
    memset(g->buf, 0, need * sizeof(double));
    memset(g->touched, 0, (size_t)out + 1);
    return 0;
}

/* A concatenation's adjoint, slice by slice to its parents. */
static void vjp_concat(const AdTape *t, const Nd *d, const double *gi, double *adj,
                       uint8_t *touched)
{
    size_t off = 0;
    for (int p = 0; p < d->aux->np; p++) {
        AdNode q = d->aux->parents[p];
        if (q >= 0) {
            double *gq = adj + t->v[q].off;
            for (size_t k = 0; k < d->aux->sizes[p]; k++) gq[k] += gi[off + k];
            touched[q] = 1;
        }
        off += d->aux->sizes[p];
    }
}

/* The sweep's scratch: a mask of n bytes, grown to the widest setitems. */
typedef struct SetMask {
    uint8_t *m;
    size_t n;
} SetMask;

/* A setitems' adjoint: to the base where it was not overwritten, to the
   value from the positions written. -1 when out of memory. */
static int vjp_set(const Nd *d, const double *gi, double *ga, double *gb, SetMask *mk)
{
    if (ga) {
        if (d->n > mk->n) {
            uint8_t *m = realloc(mk->m, d->n);
            if (!m) return -1;
            mk->m = m;
            mk->n = d->n;
        }
        uint8_t *mask = mk->m;
        memset(mask, 0, d->n);
        for (size_t k = 0; k < d->aux->nidx; k++) mask[d->aux->idx[k]] = 1;
        for (size_t k = 0; k < d->n; k++)
            if (!mask[k]) ga[k] += gi[k];
    }
    if (gb)
        for (size_t k = 0; k < d->aux->nidx; k++) gb[d->aux->idx2[k]] += gi[d->aux->idx[k]];
    return 0;
}

/* A Jacobian node's adjoint, gi J, split over its parents (its columns in
   order). */
static void vjp_jac(const AdTape *t, const Nd *d, const double *gi, double *adj, uint8_t *touched)
{
    const Aux *x = d->aux;
    size_t col = 0;
    for (int p = 0; p < x->np; p++) {
        AdNode q = x->parents[p];
        double *gq = adj + t->v[q].off;
        size_t nq = t->v[q].n;
        for (size_t r = 0; r < d->n; r++) {
            double gr = gi[r];
            if (gr == 0) continue;
            const double *row = x->J + r * x->width + col;
            for (size_t k = 0; k < nq; k++) gq[k] += gr * row[k];
        }
        touched[q] = 1;
        col += nq;
    }
}

int ad_backward(AdTape *t, AdNode out, const double *seed, AdGrad *g)
{
    if (!valid(t, out)) {
        fail(t, "backward: no such node");
        return -1;
    }
    const Nd *o = &t->v[out];
    if (grad_room(t, out, g) != 0) return -1;
    double *adj = g->buf;
    if (seed)
        memcpy(adj + o->off, seed, o->n * sizeof(double));
    else
        adj[o->off] = 1;
    g->touched[out] = 1;
    SetMask mask = { NULL, 0 };
    uint8_t *touched = g->touched;
    for (AdNode i = out; i >= 0; i--) {
        if (!touched[i]) continue;
        const Nd *d = &t->v[i];
        qh_assert(d->a < i && d->b < i);      /* parents below: adjoints flow down */
        qh_assert(d->off + d->n <= t->total); /* its slice of the adjoint buffer */
        if (d->kind == K_S) { /* the common case: a number from one or two numbers */
            double gv = adj[d->off];
            if (d->a >= 0) {
                adj[t->v[d->a].off] += d->ca * gv;
                touched[d->a] = 1;
            }
            if (d->b >= 0) {
                adj[t->v[d->b].off] += d->cb * gv;
                touched[d->b] = 1;
            }
            continue;
        }
        const double *gi = adj + d->off;
        double *ga = d->a >= 0 ? adj + t->v[d->a].off : NULL;
        double *gb = d->b >= 0 ? adj + t->v[d->b].off : NULL;
        if (d->a >= 0) g->touched[d->a] = 1;
        if (d->b >= 0) g->touched[d->b] = 1;
        switch (d->kind) {
        case K_INPUT: break;
        case K_S:
            if (ga) *ga += d->ca * gi[0];
            if (gb) *gb += d->cb * gi[0];
            break;
        case K_SCALE:
            for (size_t k = 0; k < d->n; k++) ga[k] += d->ca * gi[k];
            break;
        case K_MAP: {
            const double *dv = ar_f64_ro(d->aux->A);
            for (size_t k = 0; k < d->n; k++) ga[k] += dv[k] * gi[k];
            break;
        }
        case K_EW: vjp_ewise(t, d, gi, ga, gb); break;
        case K_MATMUL: vjp_matmul(d, gi, ga, gb); break;
        case K_SUM: vjp_sum(t, d, gi, ga); break;
        case K_GATHER:
            if (d->aux->idx)
                for (size_t k = 0; k < d->n; k++) {
                    qh_assert(d->aux->idx[k] < t->v[d->a].n);
                    ga[d->aux->idx[k]] += gi[k];
                }
            else
                for (size_t k = 0; k < d->n; k++) ga[k] += gi[k];
            break;
        case K_CONCAT: vjp_concat(t, d, gi, adj, touched); break;
        case K_SET:
            if (vjp_set(d, gi, ga, gb, &mask) != 0) {
                free(mask.m);
                fail(t, "out of memory in the backward sweep");
                return -1;
            }
            break;
        case K_JAC:
            if (!d->aux->J) {
                free(mask.m);
                fail(t, "internal error: a Jacobian node was not filled in");
                return -1;
            }
            vjp_jac(t, d, gi, adj, touched);
            break;
        default: break;
        }
    }
    free(mask.m);
    return 0;
}
