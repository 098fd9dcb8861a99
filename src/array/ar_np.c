/* ar_np.c — NumPy's everyday array functions (lang/arrays.md): trace,
 * diag, outer, sign, argmax/argmin, sort/argsort (stable), cumsum,
 * var/std, where, clip, unique, bincount, concatenate/stack, isclose,
 * block_diag and polyfit, with NumPy's shapes, defaults and broadcasting.
 * Complex arrays order lexicographically (real part, then imaginary), as
 * NumPy sorts them. Must not know about interpreter values or quantum. */
#include "ar_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef double _Complex cplx;

static int norm_axis(int axis, int nd, const char *who, int *out, char *err)
{
    int ax = axis < 0 ? axis + nd : axis;
    if (ax < 0 || ax >= nd)
        return ar__err(err, "%s: axis %d is out of bounds for array of dimension %d", who, axis,
                       nd);
    *out = ax;
    return 0;
}

/* outer x n x inner around an axis */
static void split(const Array *a, int ax, size_t *outer, size_t *n, size_t *inner)
{
    *outer = *inner = 1;
    for (int d = 0; d < a->ndim; d++) {
        if (d < ax) *outer *= a->shape[d];
        if (d > ax) *inner *= a->shape[d];
    }
    *n = a->shape[ax];
    qh_assert(ax >= 0 && ax < a->ndim && *outer * *n * *inner == a->size); /* C order's blocks */
}

static ArScalar item(const Array *a, size_t i) { return ar_item(a, i); }

static void put(Array *r, size_t i, ArScalar v)
{
    qh_assert(i < r->size && (r->type == AR_C128 || v.im == 0)); /* a float takes no imaginary */
    if (r->type == AR_F64)
        ((double *)ar__data(r))[i] = v.re;
    else
        ((cplx *)ar__data(r))[i] = ar__cx(v.re, v.im);
}

/* ---------------------------------------------------------------- trace, diag, outer */

int ar_trace(const Array *a, long off, Array **out, ArScalar *s, char *err)
{
    if (a->ndim < 2) return ar__err(err, "trace: needs an array of 2 or more dimensions");
    size_t m = a->shape[0], n = a->shape[1], rest = 1;
    for (int d = 2; d < a->ndim; d++) rest *= a->shape[d];
    Array *r = NULL;
    if (a->ndim > 2) {
        r = ar__alloc(a->type, a->ndim - 2, a->shape + 2, err);
        if (!r) return AR_ERR;
    }
    for (size_t q = 0; q < rest; q++) {
        double re = 0, im = 0;
        for (size_t i = 0; i < m; i++) {
            long j = (long)i + off;
            if (j < 0 || (size_t)j >= n) continue;
            ArScalar e = item(a, (i * n + (size_t)j) * rest + q);
            re += e.re;
            im += e.im;
        }
        ArScalar v = a->type == AR_F64 ? ar_scalar(re) : ar_cscalar(re, im);
        if (r)
            put(r, q, v);
        else
            *s = v;
    }
    if (!r) return AR_SCALAR;
    *out = r;
    return AR_ARRAY;
}

Array *ar_diag(const Array *a, long k, char *err)
{
    if (a->ndim == 1) {
        size_t n = a->shape[0] + (size_t)(k < 0 ? -k : k), sh[2] = { n, n };
        Array *r = ar_zeros(a->type, 2, sh, err);
        for (size_t i = 0; r && i < a->shape[0]; i++) {
            size_t row = k >= 0 ? i : i + (size_t)(-k), col = k >= 0 ? i + (size_t)k : i;
            put(r, row * n + col, item(a, i));
        }
        return r;
    }
    if (a->ndim != 2) return ar__err(err, "diag: input must be 1-d or 2-d"), NULL;
    size_t m = a->shape[0], n = a->shape[1], len = 0;
    size_t r0 = k >= 0 ? 0 : (size_t)(-k), c0 = k >= 0 ? (size_t)k : 0;
    if (r0 < m && c0 < n) len = (m - r0 < n - c0) ? m - r0 : n - c0;
    size_t sh[1] = { len };
    Array *r = ar__alloc(a->type, 1, sh, err);
    qh_assert(!len || (r0 + len - 1) * n + c0 + len - 1 < a->size); /* the last is inside a */
    for (size_t i = 0; r && i < len; i++) put(r, i, item(a, (r0 + i) * n + c0 + i));
    return r;
}

Array *ar_outer(const Array *a, const Array *b, char *err)
{
    size_t sa[2] = { a->size, 1 }, sb[2] = { 1, b->size };
    Array *x = ar_reshape(a, 2, (long[]){ (long)sa[0], 1 }, err);
    Array *y = x ? ar_reshape(b, 2, (long[]){ 1, (long)sb[1] }, err) : NULL;
    Array *r = y ? ar_binop(AR_MUL, x, y, err) : NULL;
    ar_free(x);
    ar_free(y);
    return r;
}

/* ---------------------------------------------------------------- sign */

/* Why: sign(x): -1, 0, 1 (nan stays nan); a complex z gives z / |z| (0 at
 * 0), NumPy 2's definition. */
Array *ar_sign(const Array *a, char *err)
{
    Array *r = ar__alloc(a->type, a->ndim, a->shape, err);
    for (size_t i = 0; r && i < a->size; i++) {
        if (a->type == AR_F64) {
            double x = ((const double *)ar__data(a))[i];
            ((double *)ar__data(r))[i] = isnan(x) ? x : (x > 0) - (x < 0);
        } else {
            cplx z = ((const cplx *)ar__data(a))[i];
            double m = cabs(z);
            ((cplx *)ar__data(r))[i] = m == 0 ? 0 : ar__cx(creal(z) / m, cimag(z) / m);
        }
    }
    return r;
}

/* ---------------------------------------------------------------- ordering */

/* a < b in NumPy's sort order: nan last; complex by real part, then imaginary */
static int lt(ArScalar a, ArScalar b)
{
    if (a.re < b.re) return 1;
    if (a.re > b.re) return 0;
    if (a.re != b.re) return !isnan(a.re) && isnan(b.re); /* nan involved */
    if (a.im < b.im) return 1;
    return !isnan(a.im) && isnan(b.im);
}

/* Why: argmax/argmin: the first extreme element; nan is the extreme, as
 * in NumPy. Flat index (axis AR_AXIS_ALL) or along an axis. */
int ar_argminmax(const Array *a, int want_max, int axis, Array **out, ArScalar *s, char *err)
{
    const char *who = want_max ? "argmax" : "argmin";
    if (a->size == 0) return ar__err(err, "%s: attempt to get %s of an empty sequence", who, who);
    size_t outer = 1, n = a->size, inner = 1;
    int ax = 0;
    if (axis != AR_AXIS_ALL) {
        if (norm_axis(axis, a->ndim, who, &ax, err)) return AR_ERR;
        split(a, ax, &outer, &n, &inner);
        if (n == 0) return ar__err(err, "%s: attempt to get %s of an empty sequence", who, who);
    }
    size_t sh[AR_MAXDIM];
    int nd = 0;
    for (int d = 0; d < a->ndim; d++)
        if (d != ax) sh[nd++] = a->shape[d];
    Array *r = axis != AR_AXIS_ALL && nd > 0 ? ar__alloc(AR_F64, nd, sh, err) : NULL;
    if (axis != AR_AXIS_ALL && nd > 0 && !r) return AR_ERR;
    for (size_t p = 0; p < outer; p++)
        for (size_t i = 0; i < inner; i++) {
            size_t best = 0;
            ArScalar bv = item(a, p * n * inner + i);
            for (size_t k = 1; k < n && !isnan(bv.re) && !isnan(bv.im); k++) {
                ArScalar v = item(a, (p * n + k) * inner + i);
                int nanv = isnan(v.re) || isnan(v.im);
                if (nanv || (want_max ? lt(bv, v) : lt(v, bv))) {
                    best = k;
                    bv = v;
                }
            }
            if (r)
                ((double *)ar__data(r))[p * inner + i] = (double)best;
            else
                *s = ar_scalar((double)best);
        }
    if (!r) return AR_SCALAR;
    *out = r;
    return AR_ARRAY;
}

typedef struct SortCtx {
    const Array *a;
    size_t base, stride;
} SortCtx;

/* Why: a stable merge sort of positions by value (NumPy's kind='stable'). */
static void msort(size_t *ix, size_t *tmp, size_t n, const SortCtx *c)
{
    if (n < 2) return;
    size_t h = n / 2;
    msort(ix, tmp, h, c);
    msort(ix + h, tmp, n - h, c);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        ArScalar x = item(c->a, c->base + ix[i] * c->stride),
                 y = item(c->a, c->base + ix[j] * c->stride);
        tmp[k++] = lt(y, x) ? ix[j++] : ix[i++];
    }
    while (i < h) tmp[k++] = ix[i++];
    while (j < n) tmp[k++] = ix[j++];
    qh_assert(k == n); /* every position merged once */
    memcpy(ix, tmp, n * sizeof *ix);
}

/* Why: sort / argsort along an axis (AR_AXIS_ALL: the flattened array). */
static Array *sort_impl(const Array *a, int axis, int want_idx, char *err)
{
    const char *who = want_idx ? "argsort" : "sort";
    Array *flat = NULL;
    if (axis == AR_AXIS_ALL) {
        flat = ar_reshape(a, 1, (long[]){ (long)a->size }, err);
        if (!flat) return NULL;
        a = flat;
        axis = 0;
    }
    int ax = 0;
    size_t outer, n, inner;
    if (norm_axis(axis, a->ndim, who, &ax, err)) {
        ar_free(flat);
        return NULL;
    }
    split(a, ax, &outer, &n, &inner);
    Array *r = ar__alloc(want_idx ? AR_F64 : a->type, a->ndim, a->shape, err);
    size_t *ix = ar__malloc((n ? n : 1) * sizeof *ix), *tmp = ar__malloc((n ? n : 1) * sizeof *tmp);
    if (!r || !ix || !tmp) {
        if (r) ar__err(err, "out of memory in %s", who);
        ar_free(r);
        r = NULL;
    }
    for (size_t p = 0; r && p < outer; p++)
        for (size_t i = 0; i < inner; i++) {
            SortCtx c = { a, p * n * inner + i, inner };
            for (size_t k = 0; k < n; k++) ix[k] = k;
            msort(ix, tmp, n, &c);
            for (size_t k = 0; k < n; k++) {
                size_t o = (p * n + k) * inner + i;
                if (want_idx)
                    ((double *)ar__data(r))[o] = (double)ix[k];
                else
                    put(r, o, item(a, c.base + ix[k] * inner));
            }
        }
    ar__free(ix);
    ar__free(tmp);
    ar_free(flat);
    return r;
}
Array *ar_argsort(const Array *a, int axis, char *err) { return sort_impl(a, axis, 1, err); }
Array *ar_sort(const Array *a, int axis, char *err) { return sort_impl(a, axis, 0, err); }

/* ---------------------------------------------------------------- cumsum */

Array *ar_cumsum(const Array *a, int axis, char *err)
{
    Array *flat = NULL;
    if (axis == AR_AXIS_ALL) {
        flat = ar_reshape(a, 1, (long[]){ (long)a->size }, err);
        if (!flat) return NULL;
        a = flat;
        axis = 0;
    }
    int ax = 0;
    size_t outer, n, inner;
    Array *r = NULL;
    if (!norm_axis(axis, a->ndim, "cumsum", &ax, err)) {
        split(a, ax, &outer, &n, &inner);
        r = ar__alloc(a->type, a->ndim, a->shape, err);
    }
    for (size_t p = 0; r && p < outer; p++)
        for (size_t i = 0; i < inner; i++) {
            double re = 0, im = 0;
            for (size_t k = 0; k < n; k++) {
                size_t o = (p * n + k) * inner + i;
                ArScalar e = item(a, o);
                re += e.re;
                im += e.im;
                put(r, o, ar_cscalar(re, im));
            }
        }
    ar_free(flat);
    return r;
}

/* ---------------------------------------------------------------- var, std */

/* Why: NumPy's var: mean(|x - mean(x)|^2) * n / (n - ddof), its sums
 * pairwise along the last axis and row by row along others (as
 * ar_reduce's); std is its square root. keepdims keeps the axis as 1. */
int ar_var(const Array *a, const ArVarSpec *sp, Array **out, ArScalar *s, char *err)
{
    int axis = sp->axis, keepdims = sp->keepdims, root = sp->root;
    double ddof = sp->ddof;
    const char *who = root ? "std" : "var";
    ArScalar m;
    Array *mean = NULL;
    int k = ar_reduce(AR_MEAN, a, axis, &mean, &m, err);
    if (k == AR_ERR) return AR_ERR;
    size_t n = axis == AR_AXIS_ALL ? a->size : 0;
    Array *d = NULL;
    if (k == AR_SCALAR) {
        d = ar_binop_scalar(AR_SUB, a, m, 0, err);
        if (axis != AR_AXIS_ALL) n = a->size;
    } else {
        int ax = 0;
        norm_axis(axis, a->ndim, who, &ax, err);
        n = a->shape[ax];
        long sh[AR_MAXDIM];
        for (int q = 0; q < a->ndim; q++) sh[q] = q == ax ? 1 : (long)a->shape[q];
        Array *mk = ar_reshape(mean, a->ndim, sh, err);
        d = mk ? ar_binop(AR_SUB, a, mk, err) : NULL;
        ar_free(mk);
        ar_free(mean);
    }
    if (!d) return AR_ERR;
    Array *sq = a->type == AR_F64 ? ar_binop(AR_MUL, d, d, err) : NULL;
    if (a->type == AR_C128) { /* x * conj(x), real */
        Array *c = ar_conj(d, err), *p = c ? ar_binop(AR_MUL, d, c, err) : NULL;
        sq = p ? ar_real(p, err) : NULL;
        ar_free(c);
        ar_free(p);
    }
    ar_free(d);
    if (!sq) return AR_ERR;
    Array *sum = NULL;
    ArScalar ss;
    k = ar_reduce(AR_SUM, sq, axis, &sum, &ss, err);
    ar_free(sq);
    if (k == AR_ERR) return AR_ERR;
    double cnt = (double)n - ddof;
    if (cnt < 0) cnt = 0;
    if (k == AR_SCALAR) {
        double v = ss.re / cnt;
        *s = ar_scalar(root ? sqrt(v) : v);
        if (keepdims) {
            size_t sh[AR_MAXDIM];
            for (int q = 0; q < a->ndim; q++) sh[q] = 1;
            *out = ar_full(a->ndim, sh, *s, err);
            return *out ? AR_ARRAY : AR_ERR;
        }
        return AR_SCALAR;
    }
    double *x = ar_f64(sum);
    for (size_t i = 0; x && i < sum->size; i++) x[i] = root ? sqrt(x[i] / cnt) : x[i] / cnt;
    if (keepdims) {
        int ax = 0;
        norm_axis(axis, a->ndim, who, &ax, err);
        long sh[AR_MAXDIM];
        for (int q = 0; q < a->ndim; q++) sh[q] = q == ax ? 1 : (long)a->shape[q];
        Array *kd = ar_reshape(sum, a->ndim, sh, err);
        ar_free(sum);
        sum = kd;
        if (!sum) return AR_ERR;
    }
    *out = sum;
    return AR_ARRAY;
}

/* ---------------------------------------------------------------- where, clip, isclose */

typedef struct Bc3 {
    int nd;
    size_t sh[AR_MAXDIM], n;
    ptrdiff_t st[3][AR_MAXDIM];
} Bc3;

/* Why: three operands broadcast together (NULL ones skipped). */
static int bc3(const char *who, const Array *const *ops, Bc3 *b, char *err)
{
    b->nd = 0;
    for (int i = 0; i < 3; i++) {
        if (!ops[i]) continue;
        size_t t[AR_MAXDIM];
        int nt;
        if (ar__bcast_shape(b->nd, b->sh, ops[i]->ndim, ops[i]->shape, &nt, t))
            return ar__err(err, "%s: operands could not be broadcast together", who);
        b->nd = nt;
        memcpy(b->sh, t, sizeof t);
    }
    b->n = 1;
    for (int d = 0; d < b->nd; d++) b->n *= b->sh[d];
    for (int i = 0; i < 3; i++)
        if (ops[i]) ar__bcast_strides(ops[i]->ndim, ops[i]->shape, b->nd, b->sh, b->st[i]);
    return 0;
}

/* the flat offsets of element k in each operand */
static void bc3_at(const Bc3 *b, size_t k, size_t off[3])
{
    off[0] = off[1] = off[2] = 0;
    for (int d = b->nd - 1; d >= 0; d--) {
        size_t i = k % b->sh[d];
        k /= b->sh[d];
        for (int q = 0; q < 3; q++) off[q] += i * (size_t)b->st[q][d];
    }
    qh_assert(k == 0); /* k was an element of the broadcast shape */
}

Array *ar_where(const Array *c, const Array *x, const Array *y, char *err)
{
    const Array *ops[3] = { c, x, y };
    Bc3 b;
    if (bc3("where", ops, &b, err)) return NULL;
    ArType t = x->type == AR_C128 || y->type == AR_C128 ? AR_C128 : AR_F64;
    Array *r = ar__alloc(t, b.nd, b.sh, err);
    for (size_t k = 0; r && k < b.n; k++) {
        size_t o[3];
        bc3_at(&b, k, o);
        ArScalar cv = item(c, o[0]);
        put(r, k, (cv.re != 0 || cv.im != 0) ? item(x, o[1]) : item(y, o[2]));
    }
    return r;
}

Array *ar_clip(const Array *a, const Array *lo, const Array *hi, char *err)
{
    const Array *ops[3] = { a, lo, hi };
    for (int i = 0; i < 3; i++)
        if (ops[i] && ops[i]->type == AR_C128)
            return ar__err(err, "clip: complex arrays are not supported"), NULL;
    if (!lo && !hi) return ar__err(err, "clip: one of a_min and a_max must be given"), NULL;
    Bc3 b;
    if (bc3("clip", ops, &b, err)) return NULL;
    Array *r = ar__alloc(AR_F64, b.nd, b.sh, err);
    for (size_t k = 0; r && k < b.n; k++) {
        size_t o[3];
        bc3_at(&b, k, o);
        double v = item(a, o[0]).re; /* NumPy: minimum(maximum(a, lo), hi), nan propagating */
        if (lo) {
            double l = item(lo, o[1]).re;
            v = isnan(v) || isnan(l) ? (isnan(v) ? v : l) : (v < l ? l : v);
        }
        if (hi) {
            double h = item(hi, o[2]).re;
            v = isnan(v) || isnan(h) ? (isnan(v) ? v : h) : (v > h ? h : v);
        }
        ((double *)ar__data(r))[k] = v;
    }
    return r;
}

Array *ar_isclose(const Array *a, const Array *b, double rtol, double atol, int equal_nan,
                  char *err)
{
    const Array *ops[3] = { a, b, NULL };
    Bc3 bc;
    if (bc3("isclose", ops, &bc, err)) return NULL;
    Array *r = ar__alloc(AR_F64, bc.nd, bc.sh, err);
    for (size_t k = 0; r && k < bc.n; k++) {
        size_t o[3];
        bc3_at(&bc, k, o);
        ArScalar x = item(a, o[0]), y = item(b, o[1]);
        int nx = isnan(x.re) || isnan(x.im), ny = isnan(y.re) || isnan(y.im), close;
        if (nx || ny)
            close = equal_nan && nx && ny;
        else if (isinf(x.re) || isinf(x.im) || isinf(y.re) || isinf(y.im))
            close = x.re == y.re && x.im == y.im;
        else
            close = hypot(x.re - y.re, x.im - y.im) <= atol + rtol * hypot(y.re, y.im);
        ((double *)ar__data(r))[k] = close;
    }
    if (r) r->mask = 1;
    return r;
}

/* ---------------------------------------------------------------- unique, bincount */

/* Why: NumPy's unique of the flattened array: sorted values, the first
 * index of each, the inverse map and the counts (outputs NULL: not asked). */
int ar_unique(const Array *a, Array **u, Array **index, Array **inverse, Array **counts, char *err)
{
    if (a->type == AR_C128) return ar__err(err, "unique: complex arrays are not supported");
    size_t n = a->size;
    size_t *ix = ar__malloc((n ? n : 1) * sizeof *ix), *tmp = ar__malloc((n ? n : 1) * sizeof *tmp);
    double *uv = ar__malloc((n ? n : 1) * sizeof *uv), *fi = ar__malloc((n ? n : 1) * sizeof *fi);
    double *cnt = ar__malloc((n ? n : 1) * sizeof *cnt),
           *inv = ar__malloc((n ? n : 1) * sizeof *inv);
    if (!ix || !tmp || !uv || !fi || !cnt || !inv) {
        ar__free(ix), ar__free(tmp), ar__free(uv), ar__free(fi), ar__free(cnt), ar__free(inv);
        return ar__err(err, "out of memory in unique");
    }
    Array *flat = ar_reshape(a, 1, (long[]){ (long)n }, err);
    SortCtx c = { flat, 0, 1 };
    for (size_t k = 0; k < n; k++) ix[k] = k;
    msort(ix, tmp, n, &c); /* stable: the first of equal values comes first */
    size_t nu = 0;
    const double *x = ar__data(a);
    for (size_t k = 0; k < n; k++) {
        double v = x[ix[k]];
        int same = nu && (uv[nu - 1] == v || (isnan(v) && isnan(uv[nu - 1])));
        if (!same) {
            uv[nu] = v;
            fi[nu] = (double)ix[k];
            cnt[nu] = 0;
            nu++;
        }
        cnt[nu - 1] += 1;
        inv[ix[k]] = (double)(nu - 1);
    }
    size_t sh[1] = { nu }, shn[1] = { n };
    int bad = 0;
    *u = ar_from_data(AR_F64, 1, sh, uv, err);
    bad |= !*u;
    if (index) bad |= !(*index = ar_from_data(AR_F64, 1, sh, fi, err));
    if (inverse) bad |= !(*inverse = ar_from_data(AR_F64, 1, shn, inv, err));
    if (counts) bad |= !(*counts = ar_from_data(AR_F64, 1, sh, cnt, err));
    ar_free(flat);
    ar__free(ix), ar__free(tmp), ar__free(uv), ar__free(fi), ar__free(cnt), ar__free(inv);
    return bad ? AR_ERR : 0;
}

Array *ar_bincount(const Array *x, const Array *w, size_t minlength, char *err)
{
    if (x->ndim != 1 || x->type == AR_C128)
        return ar__err(err, "bincount: x must be a 1-d array of non-negative integers"), NULL;
    if (w && (w->ndim != 1 || w->size != x->size || w->type == AR_C128))
        return ar__err(err, "bincount: the weights and list don't have the same length"), NULL;
    const double *v = ar__data(x);
    double mx = -1;
    for (size_t i = 0; i < x->size; i++) {
        if (v[i] < 0 || v[i] != floor(v[i]))
            return ar__err(err, "bincount: x must hold non-negative integers (got %g)", v[i]), NULL;
        mx = v[i] > mx ? v[i] : mx;
    }
    if (mx > 1e9) return ar__err(err, "bincount: maximum value %g too large", mx), NULL;
    size_t len = (size_t)(mx + 1) > minlength ? (size_t)(mx + 1) : minlength, sh[1] = { len };
    Array *r = ar_zeros(AR_F64, 1, sh, err);
    for (size_t i = 0; r && i < x->size; i++)
        ((double *)ar__data(r))[(size_t)v[i]] += w ? ((const double *)ar__data(w))[i] : 1.0;
    return r;
}

/* ------------------------------------------------------- concatenate, stack, block_diag */

Array *ar_concat(const Array *const *as, int n, int axis, char *err)
{
    if (n < 1) return ar__err(err, "concatenate: need at least one array to concatenate"), NULL;
    int nd = as[0]->ndim, ax = 0;
    if (norm_axis(axis, nd, "concatenate", &ax, err)) return NULL;
    ArType t = AR_F64;
    size_t sh[AR_MAXDIM];
    memcpy(sh, as[0]->shape, sizeof sh);
    sh[ax] = 0;
    for (int i = 0; i < n; i++) {
        if (as[i]->ndim != nd)
            return ar__err(err,
                           "concatenate: all the input arrays must have the same number of "
                           "dimensions, but array 0 has %d and array %d has %d",
                           nd, i, as[i]->ndim),
                   NULL;
        for (int d = 0; d < nd; d++)
            if (d != ax && as[i]->shape[d] != as[0]->shape[d])
                return ar__err(err,
                               "concatenate: the sizes of array %d and array 0 differ along "
                               "dimension %d (%zu and %zu)",
                               i, d, as[i]->shape[d], as[0]->shape[d]),
                       NULL;
        sh[ax] += as[i]->shape[ax];
        if (as[i]->type == AR_C128) t = AR_C128;
    }
    Array *r = ar__alloc(t, nd, sh, err);
    if (!r) return NULL;
    size_t outer = 1, inner = 1;
    for (int d = 0; d < ax; d++) outer *= sh[d];
    for (int d = ax + 1; d < nd; d++) inner *= sh[d];
    size_t pos = 0;
    for (size_t p = 0; p < outer; p++)
        for (int i = 0; i < n; i++) {
            size_t blk = as[i]->shape[ax] * inner;
            for (size_t k = 0; k < blk; k++) put(r, pos++, item(as[i], p * blk + k));
        }
    qh_assert(pos == r->size); /* the inputs fill the result exactly */
    return r;
}

Array *ar_stack(const Array *const *as, int n, int axis, char *err)
{
    if (n < 1) return ar__err(err, "stack: need at least one array to stack"), NULL;
    int nd = as[0]->ndim, ax = 0;
    if (nd + 1 > AR_MAXDIM) return ar__err(err, "stack: too many dimensions"), NULL;
    if (norm_axis(axis, nd + 1, "stack", &ax, err)) return NULL;
    for (int i = 1; i < n; i++)
        if (as[i]->ndim != nd || memcmp(as[i]->shape, as[0]->shape, (size_t)nd * sizeof(size_t)))
            return ar__err(err, "stack: all input arrays must have the same shape"), NULL;
    Array **ex = ar__malloc((size_t)n * sizeof *ex);
    if (!ex) return ar__err(err, "out of memory in stack"), NULL;
    long sh[AR_MAXDIM];
    for (int d = 0, q = 0; d <= nd; d++) sh[d] = d == ax ? 1 : (long)as[0]->shape[q++];
    int made = 0;
    for (; made < n; made++)
        if (!(ex[made] = ar_reshape(as[made], nd + 1, sh, err))) break;
    Array *r = made == n ? ar_concat((const Array *const *)ex, n, ax, err) : NULL;
    for (int i = 0; i < made; i++) ar_free(ex[i]);
    ar__free(ex);
    return r;
}

Array *ar_block_diag(const Array *const *as, int n, char *err)
{
    size_t rows = 0, cols = 0;
    ArType t = AR_F64;
    for (int i = 0; i < n; i++) {
        if (as[i]->ndim > 2)
            return ar__err(
                       err,
                       "block_diag: arguments must have 2 or fewer dimensions (argument %d has %d)",
                       i, as[i]->ndim),
                   NULL;
        rows += as[i]->ndim == 2 ? as[i]->shape[0] : 1;
        cols += as[i]->ndim == 2 ? as[i]->shape[1] : as[i]->shape[0];
        if (as[i]->type == AR_C128) t = AR_C128;
    }
    size_t sh[2] = { rows, cols };
    Array *r = ar_zeros(t, 2, sh, err);
    size_t r0 = 0, c0 = 0;
    for (int i = 0; r && i < n; i++) {
        size_t m = as[i]->ndim == 2 ? as[i]->shape[0] : 1,
               k = as[i]->ndim == 2 ? as[i]->shape[1] : as[i]->shape[0];
        for (size_t p = 0; p < m; p++)
            for (size_t q = 0; q < k; q++) put(r, (r0 + p) * cols + c0 + q, item(as[i], p * k + q));
        r0 += m;
        c0 += k;
    }
    return r;
}

/* ---------------------------------------------------------------- polyfit */

/* Why: NumPy's polyfit: the Vandermonde matrix (powers by repeated
 * products, highest first), its columns scaled to unit norm, least
 * squares by gelsd with rcond = len(x) * eps, then unscaled. */
Array *ar_polyfit(const Array *x, const Array *y, int deg, char *err)
{
    if (deg < 0) return ar__err(err, "polyfit: expected deg >= 0"), NULL;
    if (x->ndim != 1 || x->type == AR_C128)
        return ar__err(err, "polyfit: expected a 1-d real x"), NULL;
    if (x->size == 0) return ar__err(err, "polyfit: expected non-empty vector for x"), NULL;
    if (y->ndim != 1 || y->type == AR_C128)
        return ar__err(err, "polyfit: expected a 1-d real y"), NULL;
    if (y->size != x->size)
        return ar__err(err, "polyfit: expected x and y to have same length"), NULL;
    size_t m = x->size, o = (size_t)deg + 1, sh[2] = { m, o };
    Array *V = ar__alloc(AR_F64, 2, sh, err);
    double *scale = ar__malloc(o * sizeof *scale);
    if (!V || !scale) {
        ar_free(V);
        ar__free(scale);
        return ar__err(err, "out of memory in polyfit"), NULL;
    }
    double *v = ar__data(V);
    const double *xv = ar__data(x);
    for (size_t i = 0; i < m; i++) { /* NumPy: 1, then x, x*x, (x*x)*x, ... (accumulated) */
        v[i * o + (o - 1)] = 1;
        double acc = xv[i];
        for (size_t j = 1; j < o; j++) {
            v[i * o + (o - 1 - j)] = acc;
            acc *= xv[i];
        }
    }
    for (size_t j = 0; j < o; j++) {
        double s = 0;
        for (size_t i = 0; i < m; i++) s += v[i * o + j] * v[i * o + j];
        scale[j] = sqrt(s);
    }
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < o; j++) v[i * o + j] /= scale[j];
    int rank;
    Array *c = ar_lstsq_vec(V, y, (double)m * 2.220446049250313e-16, &rank, err);
    double *cv = c ? ar_f64(c) : NULL;
    for (size_t j = 0; cv && j < o; j++) cv[j] /= scale[j];
    ar_free(V);
    ar__free(scale);
    if (c && !cv) {
        ar_free(c);
        return ar__err(err, "out of memory in polyfit"), NULL;
    }
    return c;
}
