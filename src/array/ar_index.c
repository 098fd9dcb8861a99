/* ar_index.c — indexing of arrays: a[i], a[i, j], slices a[1:3], a[:, 0]
 * (copies), and element / region assignment a[i] = x, a[1] = row.
 *
 * An index selects a "region": per axis a start, a step and a count, and
 * whether the axis survives (slices) or is dropped (integers). Reading
 * gathers the region into a new contiguous array; writing scatters a
 * broadcast value into it after copy-on-write. Must not know about
 * interpreter values or the executor. */
#include "ar_internal.h"

#include <string.h>

typedef struct {
    size_t start[AR_MAXDIM];
    ptrdiff_t step[AR_MAXDIM];
    size_t count[AR_MAXDIM];
    int keep[AR_MAXDIM];
    int nkeep;
    size_t kshape[AR_MAXDIM]; /* shape of the result: kept axes' counts */
} Region;

/* Why: Python's slice rules (clamping, negative bounds and steps) so that
 * a[1:100] or a[::-1] behave as users of lists expect. */
static int norm_slice(const ArIndex *x, size_t len, int axis, size_t *start, ptrdiff_t *step,
                      size_t *count, char *err)
{
    long st = x->step == AR_IX_NONE ? 1 : x->step;
    if (st == 0) return ar__err(err, "slice step cannot be zero (axis %d)", axis);
    long L = (long)len, b, e, n;
    if (st > 0) {
        b = x->start == AR_IX_NONE ? 0 : x->start;
        if (b < 0) {
            b += L;
            if (b < 0) b = 0;
        } else if (b > L)
            b = L;
        e = x->stop == AR_IX_NONE ? L : x->stop;
        if (e < 0) {
            e += L;
            if (e < 0) e = 0;
        } else if (e > L)
            e = L;
        n = e > b ? (e - b - 1) / st + 1 : 0;
    } else {
        b = x->start == AR_IX_NONE ? L - 1 : x->start;
        if (b < 0) {
            b += L;
            if (b < 0) b = -1;
        } else if (b >= L)
            b = L - 1;
        if (x->stop == AR_IX_NONE) {
            e = -1;
        } else {
            e = x->stop;
            if (e < 0) {
                e += L;
                if (e < 0) e = -1;
            } else if (e >= L)
                e = L - 1;
        }
        n = b > e ? (b - e - 1) / (-st) + 1 : 0;
    }
    *start = n ? (size_t)b : 0;
    *step = st;
    *count = (size_t)n;
    return 0;
}

/* Why: turns an index list into a region, with the errors users see for
 * bad indices (the index and the axis length are both named). */
static int region_make(const Array *a, const ArIndex *ix, int nix, Region *r, char *err)
{
    if (nix < 0 || nix > a->ndim)
        return ar__err(err, "too many indices: %d for a %d-d array", nix, a->ndim);
    r->nkeep = 0;
    for (int d = 0; d < a->ndim; d++) {
        size_t len = a->shape[d];
        if (d >= nix) {
            r->start[d] = 0;
            r->step[d] = 1;
            r->count[d] = len;
            r->keep[d] = 1;
        } else if (ix[d].kind == AR_IX_INT) {
            long i = ix[d].i;
            long j = i < 0 ? i + (long)len : i;
            if (j < 0 || (size_t)j >= len)
                return ar__err(err, "index %ld is out of range for axis %d with length %zu", i, d,
                               len);
            r->start[d] = (size_t)j;
            r->step[d] = 1;
            r->count[d] = 1;
            r->keep[d] = 0;
        } else if (ix[d].kind == AR_IX_SLICE) {
            if (norm_slice(&ix[d], len, d, &r->start[d], &r->step[d], &r->count[d], err))
                return AR_ERR;
            r->keep[d] = 1;
        } else {
            return ar__err(err, "bad index kind %d on axis %d", ix[d].kind, d);
        }
        if (r->keep[d]) r->kshape[r->nkeep++] = r->count[d];
    }
    return 0;
}

/* Called for each innermost run of a region: idx are the counters on every
 * axis, off the element offset in the array of the run's first element. */
typedef void (*RunFn)(void *ctx, const size_t *idx, ptrdiff_t off, size_t n, ptrdiff_t step);

/* Why: one odometer for gather, scatter and fill. */
static void region_walk(const Array *a, const Region *r, RunFn fn, void *ctx)
{
    int nd = a->ndim;
    for (int d = 0; d < nd; d++)
        if (r->count[d] == 0) return;
    ptrdiff_t st[AR_MAXDIM];
    st[nd - 1] = 1;
    for (int d = nd - 2; d >= 0; d--) st[d] = st[d + 1] * (ptrdiff_t)a->shape[d + 1];
    size_t idx[AR_MAXDIM] = { 0 };
    for (;;) {
        ptrdiff_t off = 0;
        for (int d = 0; d < nd; d++)
            off += ((ptrdiff_t)r->start[d] + (ptrdiff_t)idx[d] * r->step[d]) * st[d];
        fn(ctx, idx, off, r->count[nd - 1], r->step[nd - 1] * st[nd - 1]);
        int d = nd - 2;
        for (; d >= 0; d--) {
            if (++idx[d] < r->count[d]) break;
            idx[d] = 0;
        }
        if (d < 0) break;
    }
}

typedef struct {
    const char *src;
    char *dst;
    size_t esz;
} Gather;

/* Why: copies one run of the region into the next slots of the result. */
static void gather_run(void *ctx, const size_t *idx, ptrdiff_t off, size_t n, ptrdiff_t step)
{
    (void)idx;
    Gather *g = ctx;
    if (step == 1) {
        memcpy(g->dst, g->src + off * (ptrdiff_t)g->esz, n * g->esz);
    } else {
        for (size_t k = 0; k < n; k++)
            memcpy(g->dst + k * g->esz, g->src + (off + (ptrdiff_t)k * step) * (ptrdiff_t)g->esz,
                   g->esz);
    }
    g->dst += n * g->esz;
}

/* Why: a[...] for reading: a scalar for a full integer index, else a copy
 * of the selected region (so later writes to a never show through). */
int ar_index(const Array *a, const ArIndex *ix, int nix, ArScalar *s, Array **out, char *err)
{
    Region r;
    if (region_make(a, ix, nix, &r, err)) return AR_ERR;
    if (r.nkeep == 0) {
        ptrdiff_t off = 0, st = 1;
        for (int d = a->ndim - 1; d >= 0; d--) {
            off += (ptrdiff_t)r.start[d] * st;
            st *= (ptrdiff_t)a->shape[d];
        }
        *s = ar_item(a, (size_t)off);
        return AR_SCALAR;
    }
    Array *res = ar__alloc(a->type, r.nkeep, r.kshape, err);
    if (!res) return AR_ERR;
    Gather g = { ar__data(a), ar__data(res), ar__esize(a->type) };
    region_walk(a, &r, gather_run, &g);
    *out = res;
    return AR_ARRAY;
}

/* Why: integer indices are by far the common case for the interpreter. */
int ar_get(const Array *a, const long *idx, int nidx, ArScalar *s, Array **out, char *err)
{
    if (nidx < 0 || nidx > a->ndim)
        return ar__err(err, "too many indices: %d for a %d-d array", nidx, a->ndim);
    ArIndex ix[AR_MAXDIM];
    for (int i = 0; i < nidx; i++) ix[i] = ar_ix(idx[i]);
    return ar_index(a, ix, nidx, s, out, err);
}

typedef struct {
    char *dst;
    ArType type;
    double re;
    double _Complex z;
} Fill;

/* Why: writes the scalar over one run of the region. */
static void fill_run(void *ctx, const size_t *idx, ptrdiff_t off, size_t n, ptrdiff_t step)
{
    (void)idx;
    Fill *f = ctx;
    if (f->type == AR_F64) {
        double *d = (double *)f->dst + off;
        for (size_t k = 0; k < n; k++) d[(ptrdiff_t)k * step] = f->re;
    } else {
        double _Complex *d = (double _Complex *)f->dst + off;
        for (size_t k = 0; k < n; k++) d[(ptrdiff_t)k * step] = f->z;
    }
}

/* Why: a[i, j] = x and a[1:3] = x; a complex x turns a float array complex
 * (the language has no way to say "drop the imaginary part" implicitly). */
int ar_assign_scalar(Array *a, const ArIndex *ix, int nix, ArScalar v, char *err)
{
    Region r;
    if (region_make(a, ix, nix, &r, err)) return AR_ERR;
    if (v.is_complex && a->type == AR_F64) {
        if (ar__promote(a, err)) return AR_ERR;
    } else if (ar__unique(a, err)) {
        return AR_ERR;
    }
    Fill f = { ar__data(a), a->type, v.re, ar__cx(v.re, v.is_complex ? v.im : 0) };
    region_walk(a, &r, fill_run, &f);
    return 0;
}

/* Why: a[i, j] = x with plain integers, the interpreter's common case. */
int ar_set(Array *a, const long *idx, int nidx, ArScalar v, char *err)
{
    if (nidx < 0 || nidx > a->ndim)
        return ar__err(err, "too many indices: %d for a %d-d array", nidx, a->ndim);
    ArIndex ix[AR_MAXDIM];
    for (int i = 0; i < nidx; i++) ix[i] = ar_ix(idx[i]);
    return ar_assign_scalar(a, ix, nidx, v, err);
}

typedef struct {
    char *dst;
    const char *src;
    ArType dt, vt;
    int nd;
    ptrdiff_t sst[AR_MAXDIM]; /* source strides per axis of the target */
} Scatter;

/* Why: copies one run of the (broadcast) source into the region,
 * converting float to complex where the target is complex. */
static void scatter_run(void *ctx, const size_t *idx, ptrdiff_t off, size_t n, ptrdiff_t step)
{
    Scatter *s = ctx;
    ptrdiff_t so = 0, ss = s->sst[s->nd - 1];
    for (int d = 0; d < s->nd - 1; d++) so += (ptrdiff_t)idx[d] * s->sst[d];
    if (s->dt == AR_F64) {
        double *d = (double *)s->dst + off;
        const double *v = (const double *)s->src + so;
        for (size_t k = 0; k < n; k++) d[(ptrdiff_t)k * step] = v[(ptrdiff_t)k * ss];
    } else if (s->vt == AR_C128) {
        double _Complex *d = (double _Complex *)s->dst + off;
        const double _Complex *v = (const double _Complex *)s->src + so;
        for (size_t k = 0; k < n; k++) d[(ptrdiff_t)k * step] = v[(ptrdiff_t)k * ss];
    } else {
        double _Complex *d = (double _Complex *)s->dst + off;
        const double *v = (const double *)s->src + so;
        for (size_t k = 0; k < n; k++) d[(ptrdiff_t)k * step] = v[(ptrdiff_t)k * ss];
    }
}

/* Why: a[1] = row, a[:, 0] = column, a[0:2] = block, with v broadcast to the
 * region. If v shares a's buffer (a[:] = a[::-1] after a reshape, say), a
 * reference keeps v's view of the old data intact while a is rewritten. */
int ar_assign_array(Array *a, const ArIndex *ix, int nix, const Array *v, char *err)
{
    Region r;
    if (region_make(a, ix, nix, &r, err)) return AR_ERR;
    if (r.nkeep == 0 || v->size == 1) {
        if (v->size != 1) {
            char vs[160];
            ar__shape_fmt(vs, sizeof vs, v->ndim, v->shape);
            return ar__err(err, "cannot assign an array of shape %s to one element", vs);
        }
        return ar_assign_scalar(a, ix, nix, ar_item(v, 0), err);
    }
    int nb;
    size_t bs[AR_MAXDIM];
    int ok = ar__bcast_shape(v->ndim, v->shape, r.nkeep, r.kshape, &nb, bs) == 0 && nb == r.nkeep &&
             memcmp(bs, r.kshape, (size_t)nb * sizeof *bs) == 0;
    if (!ok) {
        char vs[160], ts[160];
        ar__shape_fmt(vs, sizeof vs, v->ndim, v->shape);
        ar__shape_fmt(ts, sizeof ts, r.nkeep, r.kshape);
        return ar__err(err, "could not broadcast array of shape %s into shape %s", vs, ts);
    }
    Array *hold = NULL;
    if (v->buf == a->buf) { /* keep v's data alive and unchanged */
        hold = ar_copy(v, err);
        if (!hold) return AR_ERR;
    }
    int rc = (v->type == AR_C128 && a->type == AR_F64) ? ar__promote(a, err) : ar__unique(a, err);
    if (rc == 0) {
        const Array *src = hold ? hold : v; /* v may be a itself */
        Scatter s;
        s.dst = ar__data(a);
        s.src = ar__data(src);
        s.dt = a->type;
        s.vt = src->type;
        s.nd = a->ndim;
        ptrdiff_t kst[AR_MAXDIM];
        ar__bcast_strides(src->ndim, src->shape, r.nkeep, r.kshape, kst);
        for (int d = 0, k = 0; d < a->ndim; d++) s.sst[d] = r.keep[d] ? kst[k++] : 0;
        region_walk(a, &r, scatter_run, &s);
    }
    ar_free(hold);
    return rc;
}
