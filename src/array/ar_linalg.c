/* ar_linalg.c — linear algebra on arrays: the @ operator and dot (BLAS
 * gemm/gemv/dot), kron and norm (the LAPACK functions are ar_lapack.c's).
 *
 * Validation names the operation and both shapes; the BLAS call then works
 * directly on the operands' buffers (arrays are contiguous row-major, so a
 * float matrix product costs nothing beyond the gemm and one output
 * allocation). Must not know about interpreter values or quantum. */
#include "ar_internal.h"

#include <math.h>
#include <string.h>

#include "qblas.h"

typedef double _Complex cplx;

/* Why: one message format for every non-conformable product. */
static int not_aligned(const char *what, const Array *a, const Array *b, char *err)
{
    char sa[160], sb[160];
    ar__shape_fmt(sa, sizeof sa, a->ndim, a->shape);
    ar__shape_fmt(sb, sizeof sb, b->ndim, b->shape);
    return ar__err(err, "%s: shapes %s and %s are not aligned", what, sa, sb);
}

/* Why: BLAS takes int dimensions; bigger arrays must fail, not wrap. */
static int blas_ok(size_t n) { return n <= (size_t)INT_MAX; }

/* Why: C = A (m x k) @ B (k x n), row-major, dtype t; BLAS is skipped when
 * it has nothing to do (k == 0 leaves zeros, empty outputs nothing). */
static void gemm(ArType t, size_t m, size_t n, size_t k, const void *A, const void *B, void *C)
{
    if (m == 0 || n == 0) return;
    if (k == 0) {
        memset(C, 0, m * n * ar__esize(t));
        return;
    }
    int M = (int)m, N = (int)n, K = (int)k;
    if (t == AR_F64) {
        if (m == 1 && n == 1) {
            *(double *)C = cblas_ddot(K, A, 1, B, 1);
        } else if (n == 1) {
            cblas_dgemv(CblasRowMajor, CblasNoTrans, M, K, 1.0, A, K, B, 1, 0.0, C, 1);
        } else if (m == 1) {
            cblas_dgemv(CblasRowMajor, CblasTrans, K, N, 1.0, B, N, A, 1, 0.0, C, 1);
        } else {
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0, A, K, B, N, 0.0, C,
                        N);
        }
    } else {
        const cplx one = 1, zero = 0;
        if (m == 1 && n == 1) {
            cblas_zdotu_sub(K, A, 1, B, 1, C);
        } else if (n == 1) {
            cblas_zgemv(CblasRowMajor, CblasNoTrans, M, K, &one, A, K, B, 1, &zero, C, 1);
        } else if (m == 1) {
            cblas_zgemv(CblasRowMajor, CblasTrans, K, N, &one, B, N, A, 1, &zero, C, 1);
        } else {
            cblas_zgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, &one, A, K, B, N, &zero,
                        C, N);
        }
    }
}

/* Why: the same-dtype core of @: NumPy's matmul rules (1-d operands gain and
 * then lose a unit axis; leading axes are stacks that broadcast). */
static int matmul_typed(const Array *a, const Array *b, Array **out, ArScalar *s, char *err)
{
    ArType t = a->type;
    size_t m = a->ndim == 1 ? 1 : a->shape[a->ndim - 2];
    size_t ka = a->shape[a->ndim - 1];
    size_t kb = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
    size_t n = b->ndim == 1 ? 1 : b->shape[b->ndim - 1];
    if (ka != kb) return not_aligned("matmul", a, b, err);
    if (!blas_ok(m) || !blas_ok(n) || !blas_ok(ka))
        return ar__err(err, "matmul: dimensions too large for BLAS");

    if (a->ndim == 1 && b->ndim == 1) { /* inner product */
        if (t == AR_F64) {
            double r = 0;
            gemm(t, 1, 1, ka, ar__data(a), ar__data(b), &r);
            *s = ar_scalar(r);
        } else {
            cplx r = 0;
            gemm(t, 1, 1, ka, ar__data(a), ar__data(b), &r);
            *s = ar_cscalar(creal(r), cimag(r));
        }
        return AR_SCALAR;
    }

    /* batch axes: everything but the last two (one for a 1-d operand) */
    int nba = a->ndim > 2 ? a->ndim - 2 : 0, nbb = b->ndim > 2 ? b->ndim - 2 : 0, nbt;
    size_t bsh[AR_MAXDIM];
    if (ar__bcast_shape(nba, a->shape, nbb, b->shape, &nbt, bsh))
        return not_aligned("matmul", a, b, err);
    size_t osh[AR_MAXDIM + 2];
    int nd = 0;
    for (int i = 0; i < nbt; i++) osh[nd++] = bsh[i];
    if (a->ndim > 1) osh[nd++] = m;
    if (b->ndim > 1) osh[nd++] = n;
    if (nd > AR_MAXDIM) return ar__err(err, "matmul: result would have %d dimensions", nd);
    Array *r = ar__alloc(t, nd, osh, err);
    if (!r) return AR_ERR;
    size_t es = ar__esize(t);
    if (nbt == 0) {
        qh_assert(a->size == m * ka && b->size == ka * n && r->size == m * n);
        gemm(t, m, n, ka, ar__data(a), ar__data(b), ar__data(r));
        *out = r;
        return AR_ARRAY;
    }
    size_t nbatch = 1;
    for (int i = 0; i < nbt; i++) nbatch *= bsh[i];
    ptrdiff_t sa[AR_MAXDIM], sb[AR_MAXDIM]; /* in matrices */
    ar__bcast_strides(nba, a->shape, nbt, bsh, sa);
    ar__bcast_strides(nbb, b->shape, nbt, bsh, sb);
    size_t idx[AR_MAXDIM] = { 0 }, asz = m * ka * es, bsz = ka * n * es, csz = m * n * es;
    const char *pa = ar__data(a), *pb = ar__data(b);
    char *pc = ar__data(r);
    ptrdiff_t oa = 0, ob = 0;
    qh_assert(nbatch * m * n == r->size);
    for (size_t q = 0; q < nbatch; q++) {
        /* the matrices of this batch lie inside their operands */
        qh_assert(oa >= 0 && (size_t)(oa + 1) * m * ka <= a->size);
        qh_assert(ob >= 0 && (size_t)(ob + 1) * ka * n <= b->size);
        gemm(t, m, n, ka, pa + oa * (ptrdiff_t)asz, pb + ob * (ptrdiff_t)bsz, pc + q * csz);
        for (int d = nbt - 1; d >= 0; d--) {
            oa += sa[d];
            ob += sb[d];
            if (++idx[d] < bsh[d]) break;
            oa -= sa[d] * (ptrdiff_t)bsh[d];
            ob -= sb[d] * (ptrdiff_t)bsh[d];
            idx[d] = 0;
        }
    }
    *out = r;
    return AR_ARRAY;
}

/* Why: the @ operator. float @ complex promotes the float operand (one
 * copy); same-dtype operands go to BLAS without any copy. */
int ar_matmul(const Array *a, const Array *b, Array **out, ArScalar *s, char *err)
{
    if (a->type == b->type) return matmul_typed(a, b, out, s, err);
    Array *ca, *cb;
    const Array *pa, *pb;
    if (ar__common_type(a, b, &ca, &cb, &pa, &pb, err)) return AR_ERR;
    int rc = matmul_typed(pa, pb, out, s, err);
    ar_free(ca);
    ar_free(cb);
    return rc;
}

/* Why: dot(a, b) — matmul for the 1-d and 2-d cases it shares with NumPy's
 * dot; n-d dot has different (confusing) rules, so it is refused. */
int ar_dot(const Array *a, const Array *b, Array **out, ArScalar *s, char *err)
{
    if (a->ndim > 2 || b->ndim > 2) {
        char sa[160], sb[160];
        ar__shape_fmt(sa, sizeof sa, a->ndim, a->shape);
        ar__shape_fmt(sb, sizeof sb, b->ndim, b->shape);
        return ar__err(err, "dot: only 1-d and 2-d arrays, got shapes %s and %s (use @)", sa, sb);
    }
    int rc = ar_matmul(a, b, out, s, err);
    if (rc == AR_ERR && err && strncmp(err, "matmul:", 7) == 0) {
        char tmp[AR_ERRLEN];
        snprintf(tmp, sizeof tmp, "dot:%s", err + 7);
        memcpy(err, tmp, AR_ERRLEN);
    }
    return rc;
}

/* Why: kron builds multi-qubit operators from single-qubit ones; any ndim,
 * shapes padded with leading 1s, out.shape[d] = a.shape[d] * b.shape[d]. */
Array *ar_kron(const Array *a, const Array *b, char *err)
{
    if (a->type != b->type) {
        Array *ca, *cb;
        const Array *pa, *pb;
        if (ar__common_type(a, b, &ca, &cb, &pa, &pb, err)) return NULL;
        Array *r = ar_kron(pa, pb, err);
        ar_free(ca);
        ar_free(cb);
        return r;
    }
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    size_t sa[AR_MAXDIM], sb[AR_MAXDIM], so[AR_MAXDIM];
    for (int d = 0; d < nd; d++) {
        int ia = d - (nd - a->ndim), ib = d - (nd - b->ndim);
        sa[d] = ia >= 0 ? a->shape[ia] : 1;
        sb[d] = ib >= 0 ? b->shape[ib] : 1;
        if (sb[d] && sa[d] > SIZE_MAX / sb[d]) {
            ar__err(err, "kron: result too large");
            return NULL;
        }
        so[d] = sa[d] * sb[d];
    }
    Array *r = ar__alloc(a->type, nd, so, err);
    if (!r || r->size == 0) return r;
    size_t ost[AR_MAXDIM];
    ost[nd - 1] = 1;
    for (int d = nd - 2; d >= 0; d--) ost[d] = ost[d + 1] * so[d + 1];
    /* output offset of every element of b relative to its block's origin */
    size_t *boff = ar__malloc(b->size * sizeof *boff);
    if (!boff) {
        ar_free(r);
        ar__err(err, "out of memory in kron");
        return NULL;
    }
    size_t idx[AR_MAXDIM] = { 0 };
    for (size_t j = 0; j < b->size; j++) {
        size_t off = 0;
        for (int d = 0; d < nd; d++) off += idx[d] * ost[d];
        qh_assert(off < r->size); /* b's block lies inside the result */
        boff[j] = off;
        for (int d = nd - 1; d >= 0; d--) {
            if (++idx[d] < sb[d]) break;
            idx[d] = 0;
        }
    }
    memset(idx, 0, sizeof idx);
    for (size_t i = 0; i < a->size; i++) {
        size_t base = 0;
        for (int d = 0; d < nd; d++) base += idx[d] * sb[d] * ost[d];
        qh_assert(base + boff[b->size - 1] < r->size); /* so does each of a's blocks */
        if (a->type == AR_F64) {
            double x = ((const double *)ar__data(a))[i], *o = (double *)ar__data(r) + base;
            const double *y = ar__data(b);
            for (size_t j = 0; j < b->size; j++) o[boff[j]] = x * y[j];
        } else {
            cplx x = ((const cplx *)ar__data(a))[i], *o = (cplx *)ar__data(r) + base;
            const cplx *y = ar__data(b);
            for (size_t j = 0; j < b->size; j++) o[boff[j]] = x * y[j];
        }
        for (int d = nd - 1; d >= 0; d--) {
            if (++idx[d] < sa[d]) break;
            idx[d] = 0;
        }
    }
    ar__free(boff);
    return r;
}

/* Why: norm(a) — BLAS nrm2 (overflow-safe scaling), in int-sized chunks. */
double ar_norm(const Array *a)
{
    double acc = 0;
    size_t left = a->size, chunk = (size_t)INT_MAX;
    const char *p = ar__data(a);
    size_t es = ar__esize(a->type);
    while (left) {
        size_t n = left < chunk ? left : chunk;
        double v = a->type == AR_F64 ? cblas_dnrm2((int)n, (const double *)p, 1)
                                     : cblas_dznrm2((int)n, p, 1);
        acc = hypot(acc, v);
        left -= n;
        p += n * es;
    }
    return acc;
}
