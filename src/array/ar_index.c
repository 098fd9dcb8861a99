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
    /* the first and the last element taken lie on the axis */
    qh_assert(n == 0 || (b >= 0 && b < L && b + (n - 1) * st >= 0 && b + (n - 1) * st < L));
    qh_assert(n <= L);
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
        /* every position the region takes on this axis is on it */
        qh_assert(
            r->count[d] == 0 ||
            ((ptrdiff_t)r->start[d] + (ptrdiff_t)(r->count[d] - 1) * r->step[d] >= 0 &&
             (ptrdiff_t)r->start[d] + (ptrdiff_t)(r->count[d] - 1) * r->step[d] < (ptrdiff_t)len));
    }
    qh_assert(r->nkeep <= a->ndim);
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
    qh_assert(st[0] * (ptrdiff_t)a->shape[0] == (ptrdiff_t)a->size); /* C order: the block */
    size_t idx[AR_MAXDIM] = { 0 };
    for (;;) {
        ptrdiff_t off = 0;
        for (int d = 0; d < nd; d++)
            off += ((ptrdiff_t)r->start[d] + (ptrdiff_t)idx[d] * r->step[d]) * st[d];
        /* the run's first and last elements are in the array */
        qh_assert(off >= 0 && off < (ptrdiff_t)a->size);
        qh_assert(off + (ptrdiff_t)(r->count[nd - 1] - 1) * r->step[nd - 1] * st[nd - 1] >= 0 &&
                  off + (ptrdiff_t)(r->count[nd - 1] - 1) * r->step[nd - 1] * st[nd - 1] <
                      (ptrdiff_t)a->size);
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
static int adv_index(const Array *a, const ArIndex *ix, int nix, ArScalar *s, Array **out,
                     char *err);
static int adv_assign(Array *a, const ArIndex *ix, int nix, const Array *v, ArScalar sv, char *err);
static int has_adv(const ArIndex *ix, int nix);

int ar_index(const Array *a, const ArIndex *ix, int nix, ArScalar *s, Array **out, char *err)
{
    if (has_adv(ix, nix)) return adv_index(a, ix, nix, s, out, err);
    Region r;
    if (region_make(a, ix, nix, &r, err)) return AR_ERR;
    if (r.nkeep == 0) {
        ptrdiff_t off = 0, st = 1;
        for (int d = a->ndim - 1; d >= 0; d--) {
            qh_assert(r.start[d] < a->shape[d]); /* region_make checked every index */
            off += (ptrdiff_t)r.start[d] * st;
            st *= (ptrdiff_t)a->shape[d];
        }
        qh_assert(off >= 0 && (size_t)off < a->size);
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
    if (has_adv(ix, nix)) return adv_assign(a, ix, nix, NULL, v, err);
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
    if (has_adv(ix, nix)) {
        Array *hold = v->buf == a->buf ? ar_copy(v, err) : NULL; /* a[m] = a[...] */
        if (v->buf == a->buf && !hold) return AR_ERR;
        if (hold && ar__unique(hold, err)) {
            ar_free(hold);
            return AR_ERR;
        }
        int rc = adv_assign(a, ix, nix, hold ? hold : v, ar_scalar(0), err);
        ar_free(hold);
        return rc;
    }
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

/* ---------------------------------------------------------------- advanced indexing */

void ar_ix_release(ArIndex *ix, int n)
{
    for (int i = 0; i < n; i++) {
        ar_free(ix[i].own);
        ix[i].own = NULL;
    }
}

static int has_adv(const ArIndex *ix, int nix)
{
    for (int i = 0; i < nix; i++)
        if (ix[i].kind == AR_IX_ARRAY) return 1;
    return 0;
}

/* One axis of an advanced index after masks are expanded. */
typedef struct {
    int kind; /* AR_IX_INT, AR_IX_SLICE or AR_IX_ARRAY */
    long i;   /* AR_IX_INT */
    size_t start, count;
    ptrdiff_t step; /* AR_IX_SLICE, normalised */
    Array *arr;     /* AR_IX_ARRAY: integer positions (owned) */
    int rpos;       /* AR_IX_SLICE: its axis in the result */
} AxIx;

typedef struct {
    AxIx ax[AR_MAXDIM];
    int nd; /* the result's dimensions */
    size_t sh[AR_MAXDIM];
    size_t n; /* its size */
    int bnd;  /* the broadcast index shape */
    size_t bsh[AR_MAXDIM];
    int bpos;                            /* where it goes in the result */
    ptrdiff_t ist[AR_MAXDIM][AR_MAXDIM]; /* each index array's strides over bsh */
} Adv;

static void adv_free(Adv *p, int n)
{
    for (int d = 0; d < n; d++) ar_free(p->ax[d].arr);
}

/* Why: a mask over axes d..d+k-1 as k integer arrays (its non-zero
 * coordinates), as NumPy turns a boolean index into nonzero(). */
static int expand_mask(const Array *a, const Array *m, int d, Adv *p, int *na, char *err)
{
    if (d + m->ndim > a->ndim)
        return ar__err(err, "too many indices: a %d-d mask from axis %d of a %d-d array", m->ndim,
                       d, a->ndim);
    for (int k = 0; k < m->ndim; k++)
        if (m->shape[k] != a->shape[d + k])
            return ar__err(err,
                           "boolean index did not match indexed array along dimension %d; "
                           "dimension is %zu but corresponding boolean dimension is %zu",
                           d + k, a->shape[d + k], m->shape[k]);
    size_t cnt = 0;
    for (size_t i = 0; i < m->size; i++) {
        ArScalar e = ar_item(m, i);
        cnt += e.re != 0 || e.im != 0;
    }
    for (int k = 0; k < m->ndim; k++) {
        Array *c = ar__alloc(AR_F64, 1, &cnt, err);
        if (!c) return AR_ERR;
        p->ax[*na + k] = (AxIx){ AR_IX_ARRAY, 0, 0, 0, 0, c, 0 };
    }
    size_t q = 0;
    for (size_t i = 0; i < m->size; i++) {
        ArScalar e = ar_item(m, i);
        if (e.re == 0 && e.im == 0) continue;
        size_t rem = i;
        for (int k = m->ndim - 1; k >= 0; k--) {
            ((double *)ar__data(p->ax[*na + k].arr))[q] = (double)(rem % m->shape[k]);
            rem /= m->shape[k];
        }
        q++;
    }
    *na += m->ndim;
    return 0;
}

/* Why: NumPy's rules for a mix of integers, slices, index arrays and masks. */
static int adv_make(const Array *a, const ArIndex *ix, int nix, Adv *p, char *err)
{
    int na = 0;
    memset(p, 0, sizeof *p);
    for (int i = 0; i < nix; i++) {
        if (na >= a->ndim &&
            !(ix[i].kind == AR_IX_ARRAY && ix[i].arr->mask && ix[i].arr->ndim == 0))
            return adv_free(p, na),
                   ar__err(err, "too many indices: %d for a %d-d array", nix, a->ndim);
        if (ix[i].kind == AR_IX_ARRAY && ix[i].arr->mask) {
            if (expand_mask(a, ix[i].arr, na, p, &na, err)) return adv_free(p, na), AR_ERR;
            continue;
        }
        AxIx *x = &p->ax[na];
        x->kind = ix[i].kind;
        if (ix[i].kind == AR_IX_INT) {
            x->i = ix[i].i;
        } else if (ix[i].kind == AR_IX_SLICE) {
            if (norm_slice(&ix[i], a->shape[na], na, &x->start, &x->step, &x->count, err))
                return adv_free(p, na), AR_ERR;
        } else {
            const Array *v = ix[i].arr;
            if (v->type == AR_C128)
                return adv_free(p, na),
                       ar__err(err, "arrays used as indices must be of integer (or boolean) type");
            for (size_t k = 0; k < v->size; k++) {
                double e = ((const double *)ar__data(v))[k];
                if (e != (double)(long)e)
                    return adv_free(p, na), ar__err(err,
                                                    "arrays used as indices must be of integer (or "
                                                    "boolean) type, got %g",
                                                    e);
            }
            x->arr = ar_copy(v, err);
            if (!x->arr) return adv_free(p, na), AR_ERR;
        }
        na++;
    }
    for (int d = na; d < a->ndim; d++) /* trailing axes whole */
        p->ax[d] = (AxIx){ AR_IX_SLICE, 0, 0, a->shape[d], 1, NULL, 0 };
    /* the index arrays (and integers among them) broadcast together */
    int first = -1, last = -1, contiguous = 1;
    for (int d = 0; d < a->ndim; d++) {
        int adv = p->ax[d].kind == AR_IX_ARRAY || p->ax[d].kind == AR_IX_INT;
        if (!adv) continue;
        if (first < 0) first = d;
        if (last >= 0 && last != d - 1) contiguous = 0;
        last = d;
        if (p->ax[d].kind == AR_IX_ARRAY) {
            int nt;
            size_t t[AR_MAXDIM];
            if (ar__bcast_shape(p->bnd, p->bsh, p->ax[d].arr->ndim, p->ax[d].arr->shape, &nt, t)) {
                adv_free(p, a->ndim);
                return ar__err(err,
                               "shape mismatch: indexing arrays could not be broadcast together");
            }
            p->bnd = nt;
            memcpy(p->bsh, t, sizeof t);
        }
    }
    /* the result: slices in order, the broadcast index shape where the
     * first index array stood (adjacent ones) or in front */
    p->nd = contiguous ? 0 : p->bnd;
    p->bpos = 0;
    if (!contiguous) memcpy(p->sh, p->bsh, (size_t)p->bnd * sizeof *p->sh);
    for (int d = 0; d < a->ndim; d++) {
        if (d == first && contiguous) {
            p->bpos = p->nd;
            for (int k = 0; k < p->bnd && p->nd < AR_MAXDIM; k++) p->sh[p->nd++] = p->bsh[k];
        }
        if (p->ax[d].kind != AR_IX_SLICE) continue;
        if (p->nd >= AR_MAXDIM) {
            adv_free(p, a->ndim);
            return ar__err(err, "indexing result would have more than %d dimensions", AR_MAXDIM);
        }
        p->ax[d].rpos = p->nd;
        p->sh[p->nd++] = p->ax[d].count;
    }
    p->n = 1;
    for (int k = 0; k < p->nd; k++) p->n *= p->sh[k];
    for (int d = 0; d < a->ndim; d++)
        if (p->ax[d].kind == AR_IX_ARRAY)
            ar__bcast_strides(p->ax[d].arr->ndim, p->ax[d].arr->shape, p->bnd, p->bsh, p->ist[d]);
    return 0;
}

/* Why: the flat positions in a of every result element (NumPy's order). */
static int adv_offsets(const Array *a, const Adv *p, size_t *off, char *err)
{
    size_t ast[AR_MAXDIM];
    ast[a->ndim - 1] = 1;
    for (int d = a->ndim - 2; d >= 0; d--) ast[d] = ast[d + 1] * a->shape[d + 1];
    qh_assert(ast[0] * a->shape[0] == a->size);
    size_t idx[AR_MAXDIM];
    for (size_t k = 0; k < p->n; k++) {
        size_t rem = k;
        for (int q = p->nd - 1; q >= 0; q--) {
            idx[q] = rem % p->sh[q];
            rem /= p->sh[q];
        }
        const size_t *bidx = idx + p->bpos;
        size_t o = 0;
        for (int d = 0; d < a->ndim; d++) {
            const AxIx *x = &p->ax[d];
            long j;
            if (x->kind == AR_IX_SLICE) {
                j = (long)x->start + (long)idx[x->rpos] * (long)x->step;
            } else {
                if (x->kind == AR_IX_INT) {
                    j = x->i;
                } else {
                    size_t bo = 0;
                    for (int q = 0; q < p->bnd; q++) bo += bidx[q] * (size_t)p->ist[d][q];
                    j = (long)((const double *)ar__data(x->arr))[bo];
                }
                long len = (long)a->shape[d];
                if (j < -len || j >= len)
                    return ar__err(err, "index %ld is out of bounds for axis %d with size %ld", j,
                                   d, len);
                if (j < 0) j += len;
            }
            qh_assert(j >= 0 && (size_t)j < a->shape[d]);
            o += (size_t)j * ast[d];
        }
        qh_assert(o < a->size);
        off[k] = o;
    }
    return 0;
}

/* a[ix] with index arrays or masks: a copy */
static int adv_index(const Array *a, const ArIndex *ix, int nix, ArScalar *s, Array **out,
                     char *err)
{
    Adv p;
    if (adv_make(a, ix, nix, &p, err)) return AR_ERR;
    size_t *off = ar__malloc((p.n ? p.n : 1) * sizeof *off);
    int rc = off ? adv_offsets(a, &p, off, err) : ar__err(err, "out of memory in indexing");
    if (!rc && p.nd == 0) {
        *s = ar_item(a, off[0]);
        rc = AR_SCALAR;
    } else if (!rc) {
        Array *r = ar__alloc(a->type, p.nd, p.sh, err);
        if (!r) {
            rc = AR_ERR;
        } else {
            size_t es = ar__esize(a->type);
            for (size_t k = 0; k < p.n; k++)
                memcpy((char *)ar__data(r) + k * es, (const char *)ar__data(a) + off[k] * es, es);
            r->mask = a->mask;
            *out = r;
            rc = AR_ARRAY;
        }
    }
    ar__free(off);
    adv_free(&p, a->ndim);
    return rc;
}

/* a[ix] = v with index arrays or masks (v broadcast to the selection; a
 * repeated position takes the last value, as in NumPy) */
static int adv_assign(Array *a, const ArIndex *ix, int nix, const Array *v, ArScalar sv, char *err)
{
    Adv p;
    if (adv_make(a, ix, nix, &p, err)) return AR_ERR;
    size_t *off = ar__malloc((p.n ? p.n : 1) * sizeof *off);
    int rc = off ? adv_offsets(a, &p, off, err) : ar__err(err, "out of memory in indexing");
    ptrdiff_t vst[AR_MAXDIM];
    if (!rc && v) {
        int nb;
        size_t bs[AR_MAXDIM];
        if (ar__bcast_shape(v->ndim, v->shape, p.nd, p.sh, &nb, bs) || nb != p.nd ||
            memcmp(bs, p.sh, (size_t)nb * sizeof *bs)) {
            char vs[160], ts[160];
            ar__shape_fmt(vs, sizeof vs, v->ndim, v->shape);
            ar__shape_fmt(ts, sizeof ts, p.nd, p.sh);
            rc = ar__err(err,
                         "shape mismatch: value array of shape %s could not be broadcast to "
                         "indexing result of shape %s",
                         vs, ts);
        } else {
            ar__bcast_strides(v->ndim, v->shape, p.nd, p.sh, vst);
        }
    }
    int cx = v ? v->type == AR_C128 : sv.is_complex;
    if (!rc) rc = cx && a->type == AR_F64 ? ar__promote(a, err) : ar__unique(a, err);
    for (size_t k = 0; !rc && k < p.n; k++) {
        ArScalar e = sv;
        if (v) {
            size_t rem = k, vo = 0;
            for (int q = p.nd - 1; q >= 0; q--) {
                vo += (rem % p.sh[q]) * (size_t)vst[q];
                rem /= p.sh[q];
            }
            e = ar_item(v, vo);
        }
        if (a->type == AR_F64)
            ((double *)ar__data(a))[off[k]] = e.re;
        else
            ((double _Complex *)ar__data(a))[off[k]] = ar__cx(e.re, e.is_complex ? e.im : 0);
    }
    ar__free(off);
    adv_free(&p, a->ndim);
    return rc ? AR_ERR : 0;
}
