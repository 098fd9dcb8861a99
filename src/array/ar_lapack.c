/* ar_lapack.c — numpy.linalg on LAPACK (OpenBLAS, through qblas.h): inv,
 * solve, det, eigh/eigvalsh, eig, svd, qr, pinv, lstsq (for polyfit) and
 * expm. Each does what NumPy's _umath_linalg does: the matrix is copied into
 * a column-major (Fortran) buffer, the same LAPACK routine NumPy calls runs
 * on it (gesv for inv and solve, getrf for det, syevd/heevd, geev, gesdd,
 * geqrf + orgqr, gelsd), and the results are copied back row-major; so the
 * numbers are NumPy's wherever the LAPACK build is the same. Stacks of
 * matrices (leading axes) are looped over. Must not know about interpreter
 * values or quantum. */
#include "ar_internal.h"

#include <math.h>
#include <string.h>

#include "qblas.h"

typedef double _Complex cplx;

/* Why: one message for a shape a function does not take. */
static int bad_shape(const char *who, const char *want, const Array *a, char *err)
{
    char sh[160];
    ar__shape_fmt(sh, sizeof sh, a->ndim, a->shape);
    return ar__err(err, "%s: expected %s, got shape %s", who, want, sh);
}

static int lapack_ok(size_t n) { return n <= (size_t)INT_MAX / 16; }

/* Why: (..., m, n) with square matrices where asked; *batch = stack size. */
static int check_stack(const Array *a, const char *who, int square, size_t *batch, char *err)
{
    if (a->ndim < 2) return bad_shape(who, square ? "a square matrix" : "a matrix", a, err);
    size_t m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1];
    if (square && m != n) return bad_shape(who, "a square matrix", a, err);
    if (!lapack_ok(m) || !lapack_ok(n)) return ar__err(err, "%s: matrix too large for LAPACK", who);
    *batch = 1;
    for (int d = 0; d < a->ndim - 2; d++) *batch *= a->shape[d];
    qh_assert(*batch * m * n == a->size); /* the stack is whole m x n matrices, C order */
    const double *x = ar__data(a);
    for (size_t i = 0; i < a->size * (a->type == AR_C128 ? 2 : 1); i++)
        if (!isfinite(x[i])) return ar__err(err, "%s: array must not contain infs or NaNs", who);
    return 0;
}

#define TILE 32 /* transposes in tiles: both sides stay in cache */

/* Why: row-major m x n (at src) into column-major with leading dimension ld
 * (NumPy's Fortran copy), in tiles so that neither side is read with a
 * cache miss per element: a 500x500 copy costs ~0.3 ms instead of ~3. */
static void to_f(ArType t, const void *src, size_t m, size_t n, void *dst, size_t ld)
{
    qh_assert(ld >= m && src != dst); /* a column holds its m rows; a copy, not in place */
    for (size_t i0 = 0; i0 < m; i0 += TILE)
        for (size_t j0 = 0; j0 < n; j0 += TILE) {
            size_t i1 = i0 + TILE < m ? i0 + TILE : m, j1 = j0 + TILE < n ? j0 + TILE : n;
            if (t == AR_F64) {
                const double *s = src;
                double *d = dst;
                for (size_t j = j0; j < j1; j++)
                    for (size_t i = i0; i < i1; i++) d[i + j * ld] = s[i * n + j];
            } else {
                const cplx *s = src;
                cplx *d = dst;
                for (size_t j = j0; j < j1; j++)
                    for (size_t i = i0; i < i1; i++) d[i + j * ld] = s[i * n + j];
            }
        }
}

/* Why: column-major (leading dimension ld) m x n back into row-major. */
static void from_f(ArType t, const void *src, size_t ld, size_t m, size_t n, void *dst)
{
    qh_assert(ld >= m && src != dst);
    for (size_t i0 = 0; i0 < m; i0 += TILE)
        for (size_t j0 = 0; j0 < n; j0 += TILE) {
            size_t i1 = i0 + TILE < m ? i0 + TILE : m, j1 = j0 + TILE < n ? j0 + TILE : n;
            if (t == AR_F64) {
                const double *s = src;
                double *d = dst;
                for (size_t i = i0; i < i1; i++)
                    for (size_t j = j0; j < j1; j++) d[i * n + j] = s[i + j * ld];
            } else {
                const cplx *s = src;
                cplx *d = dst;
                for (size_t i = i0; i < i1; i++)
                    for (size_t j = j0; j < j1; j++) d[i * n + j] = s[i + j * ld];
            }
        }
}

/* Why: an output of a stack: batch shape of a plus trailing dims. */
static Array *stack_out(ArType t, const Array *a, int keep, const size_t *tail, int ntail,
                        char *err)
{
    size_t sh[AR_MAXDIM];
    int nd = 0;
    for (int d = 0; d < a->ndim - 2 + keep && d < a->ndim; d++) sh[nd++] = a->shape[d];
    qh_assert(keep >= 0 && keep <= 2 && nd + ntail <= AR_MAXDIM);
    for (int i = 0; i < ntail; i++) sh[nd++] = tail[i];
    if (nd == 0) {
        ar__err(err, "internal: a 0-d stack output");
        return NULL;
    }
    return ar__alloc(t, nd, sh, err);
}

static void *wbuf(size_t n, size_t es) { return ar__malloc((n ? n : 1) * es); }

static int lapack_fail(const char *who, int info, char *err)
{
    if (info == -1000) return ar__err(err, "out of memory in %s", who);
    if (info < 0) return ar__err(err, "%s: LAPACK rejected argument %d", who, -info);
    return ar__err(err, "%s: the algorithm did not converge", who);
}

/* ---------------------------------------------------------------- inv, solve, det */

/* Why: gesv on a column-major copy: B becomes A^-1 B (NumPy's inv is gesv
 * with B = I). info > 0: singular. */
static int gesv(ArType t, int n, int nrhs, void *A, void *B)
{
    qh_assert(n >= 0 && nrhs >= 0 && A != B); /* LU of A in place, B overwritten by the solution */
    int info = 0, *ipiv = ar__malloc((size_t)(n ? n : 1) * sizeof *ipiv);
    if (!ipiv) return -1000;
    int ld = n ? n : 1;
    if (t == AR_F64)
        dgesv_(&n, &nrhs, A, &ld, ipiv, B, &ld, &info);
    else
        zgesv_(&n, &nrhs, A, &ld, ipiv, B, &ld, &info);
    ar__free(ipiv);
    return info;
}

/* Why: the end of inv and solve: workspaces freed, the result or the
 * error (info > 0 from gesv: an exactly singular matrix, NumPy's
 * LinAlgError "Singular matrix"). */
static Array *gesv_done(const char *who, int info, void *F, void *B, Array *r, char *err)
{
    ar__free(F);
    ar__free(B);
    if (!info) return r;
    if (info > 0)
        ar__err(err, "%s: singular matrix", who);
    else
        lapack_fail(who, info, err);
    ar_free(r);
    return NULL;
}

Array *ar_inv(const Array *a, char *err)
{
    size_t batch;
    if (check_stack(a, "inv", 1, &batch, err)) return NULL;
    size_t n = a->shape[a->ndim - 1], es = ar__esize(a->type), mm = n * n;
    Array *r = ar__alloc(a->type, a->ndim, a->shape, err);
    void *F = r ? wbuf(mm, es) : NULL, *B = F ? wbuf(mm, es) : NULL;
    int info = r && F && B ? 0 : -1000;
    for (size_t q = 0; q < batch && !info; q++) {
        to_f(a->type, (char *)ar__data(a) + q * mm * es, n, n, F, n);
        memset(B, 0, mm * es);
        for (size_t i = 0; i < n; i++) {
            if (a->type == AR_F64)
                ((double *)B)[i * n + i] = 1;
            else
                ((cplx *)B)[i * n + i] = 1;
        }
        info = gesv(a->type, (int)n, (int)n, F, B);
        if (!info) from_f(a->type, B, n, n, n, (char *)ar__data(r) + q * mm * es);
    }
    return gesv_done("inv", info, F, B, r, err);
}

Array *ar_solve(const Array *a, const Array *b, char *err)
{
    if (a->type != b->type) {
        Array *ca, *cb;
        const Array *pa, *pb;
        if (ar__common_type(a, b, &ca, &cb, &pa, &pb, err)) return NULL;
        Array *r = ar_solve(pa, pb, err);
        ar_free(ca);
        ar_free(cb);
        return r;
    }
    size_t batch;
    if (check_stack(a, "solve", 1, &batch, err)) return NULL;
    size_t n = a->shape[a->ndim - 1];
    int vec = b->ndim == 1; /* NumPy 2's rule: only a 1-d b is a vector */
    size_t k = vec ? 1 : b->shape[b->ndim - 1];
    if (b->ndim < 1 || (vec ? b->shape[0] : b->shape[b->ndim - 2]) != n) {
        char sa[160], sb[160];
        ar__shape_fmt(sa, sizeof sa, a->ndim, a->shape);
        ar__shape_fmt(sb, sizeof sb, b->ndim, b->shape);
        return ar__err(err, "solve: shapes %s and %s do not match", sa, sb), NULL;
    }
    const double *bx = ar__data(b);
    for (size_t i = 0; i < b->size * (b->type == AR_C128 ? 2 : 1); i++)
        if (!isfinite(bx[i]))
            return ar__err(err, "solve: array must not contain infs or NaNs"), NULL;
    /* batch axes of a and b broadcast */
    int nba = a->ndim - 2, nbb = vec ? 0 : b->ndim - 2, nbt;
    size_t bsh[AR_MAXDIM], osh[AR_MAXDIM];
    if (ar__bcast_shape(nba, a->shape, nbb, b->shape, &nbt, bsh))
        return ar__err(err, "solve: the stacks of a and b do not broadcast"), NULL;
    int nd = 0;
    for (int i = 0; i < nbt; i++) osh[nd++] = bsh[i];
    osh[nd++] = n;
    if (!vec) osh[nd++] = k;
    Array *r = ar__alloc(a->type, nd, osh, err);
    if (!r) return NULL;
    size_t nbatch = 1;
    for (int i = 0; i < nbt; i++) nbatch *= bsh[i];
    ptrdiff_t sa[AR_MAXDIM], sb[AR_MAXDIM];
    ar__bcast_strides(nba, a->shape, nbt, bsh, sa);
    ar__bcast_strides(nbb, b->shape, nbt, bsh, sb);
    size_t es = ar__esize(a->type), idx[AR_MAXDIM] = { 0 };
    void *F = wbuf(n * n, es), *B = wbuf(n * k, es);
    int info = F && B ? 0 : -1000;
    ptrdiff_t oa = 0, ob = 0;
    for (size_t q = 0; q < nbatch && !info; q++) {
        to_f(a->type, (char *)ar__data(a) + oa * (ptrdiff_t)(n * n * es), n, n, F, n);
        to_f(a->type, (char *)ar__data(b) + ob * (ptrdiff_t)(n * k * es), n, k, B, n);
        info = gesv(a->type, (int)n, (int)k, F, B);
        if (!info) from_f(a->type, B, n, n, k, (char *)ar__data(r) + q * n * k * es);
        for (int d = nbt - 1; d >= 0; d--) {
            oa += sa[d];
            ob += sb[d];
            if (++idx[d] < bsh[d]) break;
            oa -= sa[d] * (ptrdiff_t)bsh[d];
            ob -= sb[d] * (ptrdiff_t)bsh[d];
            idx[d] = 0;
        }
    }
    return gesv_done("solve", info, F, B, r, err);
}

/* Why: NumPy's det is sign * exp(logdet) from getrf's LU (its slogdet):
 * det([[1, 2], [3, 4]]) is -2.0000000000000004 there too. */
static cplx det_one(ArType t, int n, void *F, int *ipiv)
{
    int info = 0;
    if (t == AR_F64)
        dgetrf_(&n, &n, F, &n, ipiv, &info);
    else
        zgetrf_(&n, &n, F, &n, ipiv, &info);
    if (info > 0) return 0;
    int odd = 0;
    for (int i = 0; i < n; i++) odd ^= ipiv[i] != i + 1;
    double logdet = 0;
    cplx sign = odd ? -1 : 1;
    for (int i = 0; i < n; i++) {
        if (t == AR_F64) {
            double d = ((double *)F)[i + i * n];
            if (d < 0) sign = -sign;
            logdet += log(fabs(d));
        } else {
            cplx d = ((cplx *)F)[i + i * n];
            double ad = cabs(d);
            sign *= d / ad;
            logdet += log(ad);
        }
    }
    return sign * exp(logdet);
}

int ar_det(const Array *a, Array **out, ArScalar *s, char *err)
{
    size_t batch;
    if (check_stack(a, "det", 1, &batch, err)) return AR_ERR;
    size_t n = a->shape[a->ndim - 1], es = ar__esize(a->type);
    void *F = wbuf(n * n, es);
    int *ipiv = ar__malloc((n ? n : 1) * sizeof *ipiv);
    Array *r = a->ndim > 2 ? stack_out(a->type, a, 0, NULL, 0, err) : NULL;
    if (!F || !ipiv || (a->ndim > 2 && !r)) {
        ar__free(F);
        ar__free(ipiv);
        ar_free(r);
        return ar__err(err, "out of memory in det");
    }
    for (size_t q = 0; q < batch; q++) {
        to_f(a->type, (char *)ar__data(a) + q * n * n * es, n, n, F, n);
        cplx d = n ? det_one(a->type, (int)n, F, ipiv) : 1;
        if (!r)
            *s = a->type == AR_F64 ? ar_scalar(creal(d)) : ar_cscalar(creal(d), cimag(d));
        else if (a->type == AR_F64)
            ((double *)ar__data(r))[q] = creal(d);
        else
            ((cplx *)ar__data(r))[q] = d;
    }
    ar__free(F);
    ar__free(ipiv);
    if (!r) return AR_SCALAR;
    *out = r;
    return AR_ARRAY;
}

/* ---------------------------------------------------------------- eigh */

/* Why: syevd / heevd with workspace queries (jobz 'V' or 'N', uplo 'L' on
 * the column-major copy: NumPy's UPLO='L'). */
static int evd(ArType t, char jobz, int n, void *F, double *w)
{
    int info = 0, lwork = -1, lrwork = -1, liwork = -1, iwq = 0;
    char uplo = 'L';
    if (t == AR_F64) {
        double wq = 0;
        dsyevd_(&jobz, &uplo, &n, F, &n, w, &wq, &lwork, &iwq, &liwork, &info, 1, 1);
        if (info) return info;
        lwork = wq > 1 ? (int)wq : 1;
        liwork = iwq > 1 ? iwq : 1;
        double *work = ar__malloc((size_t)lwork * sizeof *work);
        int *iwork = ar__malloc((size_t)liwork * sizeof *iwork);
        if (work && iwork)
            dsyevd_(&jobz, &uplo, &n, F, &n, w, work, &lwork, iwork, &liwork, &info, 1, 1);
        else
            info = -1000;
        ar__free(work);
        ar__free(iwork);
        return info;
    }
    cplx wq = 0;
    double rq = 0;
    zheevd_(&jobz, &uplo, &n, F, &n, w, &wq, &lwork, &rq, &lrwork, &iwq, &liwork, &info, 1, 1);
    if (info) return info;
    lwork = creal(wq) > 1 ? (int)creal(wq) : 1;
    lrwork = rq > 1 ? (int)rq : 1;
    liwork = iwq > 1 ? iwq : 1;
    cplx *work = ar__malloc((size_t)lwork * sizeof *work);
    double *rwork = ar__malloc((size_t)lrwork * sizeof *rwork);
    int *iwork = ar__malloc((size_t)liwork * sizeof *iwork);
    if (work && rwork && iwork)
        zheevd_(&jobz, &uplo, &n, F, &n, w, work, &lwork, rwork, &lrwork, iwork, &liwork, &info, 1,
                1);
    else
        info = -1000;
    ar__free(work);
    ar__free(rwork);
    ar__free(iwork);
    return info;
}

int ar_eigh(const Array *a, Array **w, Array **v, char *err)
{
    const char *who = v ? "eigh" : "eigvalsh";
    size_t batch;
    *w = NULL;
    if (v) *v = NULL;
    if (check_stack(a, who, 1, &batch, err)) return AR_ERR;
    size_t n = a->shape[a->ndim - 1], es = ar__esize(a->type);
    Array *W = stack_out(AR_F64, a, 0, &n, 1, err);
    Array *V = W && v ? ar__alloc(a->type, a->ndim, a->shape, err) : NULL;
    void *F = wbuf(n * n, es);
    int info = W && (V || !v) && F ? 0 : -1000;
    for (size_t q = 0; q < batch && !info && n; q++) {
        to_f(a->type, (char *)ar__data(a) + q * n * n * es, n, n, F, n);
        info = evd(a->type, v ? 'V' : 'N', (int)n, F, (double *)ar__data(W) + q * n);
        if (!info && V) from_f(a->type, F, n, n, n, (char *)ar__data(V) + q * n * n * es);
    }
    ar__free(F);
    if (info) {
        ar_free(W);
        ar_free(V);
        return lapack_fail(who, info, err);
    }
    *w = W;
    if (v) *v = V;
    return 0;
}

Array *ar_eigvalsh(const Array *a, char *err)
{
    Array *w;
    return ar_eigh(a, &w, NULL, err) ? NULL : w;
}

/* ---------------------------------------------------------------- eig */

/* Why: geev (right eigenvectors only) of one column-major matrix; real
 * input fills wr/wi and vr, complex input w and vr. */
static int geev(ArType t, int n, void *F, void *w, double *wi, void *vr)
{
    int info = 0, lwork = -1, one = 1;
    char nn = 'N', vv = 'V';
    if (t == AR_F64) {
        double wq = 0, dummy = 0;
        dgeev_(&nn, &vv, &n, F, &n, w, wi, &dummy, &one, vr, &n, &wq, &lwork, &info, 1, 1);
        if (info) return info;
        lwork = wq > 1 ? (int)wq : 1;
        double *work = ar__malloc((size_t)lwork * sizeof *work);
        if (!work) return -1000;
        dgeev_(&nn, &vv, &n, F, &n, w, wi, &dummy, &one, vr, &n, work, &lwork, &info, 1, 1);
        ar__free(work);
        return info;
    }
    cplx wq = 0, dummy = 0;
    double *rwork = ar__malloc((size_t)(2 * n + 1) * sizeof *rwork);
    if (!rwork) return -1000;
    zgeev_(&nn, &vv, &n, F, &n, w, &dummy, &one, vr, &n, &wq, &lwork, rwork, &info, 1, 1);
    if (!info) {
        lwork = creal(wq) > 1 ? (int)creal(wq) : 1;
        cplx *work = ar__malloc((size_t)lwork * sizeof *work);
        if (work)
            zgeev_(&nn, &vv, &n, F, &n, w, &dummy, &one, vr, &n, work, &lwork, rwork, &info, 1, 1);
        else
            info = -1000;
        ar__free(work);
    }
    ar__free(rwork);
    return info;
}

/* Why: NumPy's eig: complex eigenvalues and vectors unless every
 * eigenvalue of a real matrix is real; a real geev's conjugate pair
 * (columns j, j+1) is v_j = x + iy, v_{j+1} = x - iy. */
int ar_eig(const Array *a, Array **w, Array **v, char *err)
{
    size_t batch;
    *w = *v = NULL;
    if (check_stack(a, "eig", 1, &batch, err)) return AR_ERR;
    size_t n = a->shape[a->ndim - 1], es = ar__esize(a->type), nn = n * n;
    Array *W = stack_out(AR_C128, a, 0, &n, 1, err);
    Array *V = W ? ar__alloc(AR_C128, a->ndim, a->shape, err) : NULL;
    void *F = wbuf(nn, es), *VR = wbuf(nn, es), *WR = wbuf(n, es);
    double *WI = wbuf(n, sizeof(double));
    int info = W && V && F && VR && WR && WI ? 0 : -1000, all_real = 1;
    for (size_t q = 0; q < batch && !info && n; q++) {
        to_f(a->type, (char *)ar__data(a) + q * nn * es, n, n, F, n);
        info = geev(a->type, (int)n, F, WR, WI, VR);
        if (info) break;
        cplx *wo = (cplx *)ar__data(W) + q * n, *vo = (cplx *)ar__data(V) + q * nn;
        if (a->type == AR_C128) {
            memcpy(wo, WR, n * sizeof(cplx));
            from_f(AR_C128, VR, n, n, n, vo);
            all_real = 0;
            continue;
        }
        const double *wr = WR, *vr = VR;
        for (size_t j = 0; j < n; j++) {
            wo[j] = ar__cx(wr[j], WI[j]);
            if (WI[j] != 0) all_real = 0;
        }
        for (size_t j = 0; j < n; j++) {
            if (WI[j] != 0 && j + 1 < n && WI[j] > 0) {
                for (size_t i = 0; i < n; i++) {
                    double x = vr[i + j * n], y = vr[i + (j + 1) * n];
                    vo[i * n + j] = ar__cx(x, y);
                    vo[i * n + j + 1] = ar__cx(x, -y);
                }
                j++;
            } else {
                for (size_t i = 0; i < n; i++) vo[i * n + j] = vr[i + j * n];
            }
        }
    }
    ar__free(F);
    ar__free(VR);
    ar__free(WR);
    ar__free(WI);
    if (info) {
        ar_free(W);
        ar_free(V);
        return lapack_fail("eig", info, err);
    }
    if (all_real) { /* NumPy returns real arrays then */
        Array *rw = ar_real(W, err), *rv = rw ? ar_real(V, err) : NULL;
        ar_free(W);
        ar_free(V);
        if (!rv) {
            ar_free(rw);
            return AR_ERR;
        }
        W = rw;
        V = rv;
    }
    *w = W;
    *v = V;
    return 0;
}

/* ---------------------------------------------------------------- svd */

/* One gesdd call: the column-major m x n matrix F (overwritten), the
 * singular values s, and U (ldu rows) and VT (ldvt rows) as jobz asks. */
typedef struct SvdCall {
    ArType t;
    char jobz; /* 'A', 'S' or 'N' */
    int m, n;
    void *F;
    double *s;
    void *U;
    int ldu;
    void *VT;
    int ldvt;
} SvdCall;

/* Why: gesdd of one column-major m x n matrix (jobz 'A', 'S' or 'N'). */
static int gesdd(const SvdCall *c)
{
    ArType t = c->t;
    char jobz = c->jobz;
    int m = c->m, n = c->n, ldu = c->ldu, ldvt = c->ldvt;
    void *F = c->F, *U = c->U, *VT = c->VT;
    double *s = c->s;
    qh_assert(m >= 0 && n >= 0 && ldu >= 1 && ldvt >= 1);
    int info = 0, lwork = -1, mn = m < n ? m : n, mx = m > n ? m : n;
    int *iwork = ar__malloc((size_t)(8 * (mn ? mn : 1)) * sizeof *iwork);
    if (!iwork) return -1000;
    if (t == AR_F64) {
        double wq = 0;
        dgesdd_(&jobz, &m, &n, F, &m, s, U, &ldu, VT, &ldvt, &wq, &lwork, iwork, &info, 1);
        if (!info) {
            lwork = wq > 1 ? (int)wq : 1;
            double *work = ar__malloc((size_t)lwork * sizeof *work);
            if (work)
                dgesdd_(&jobz, &m, &n, F, &m, s, U, &ldu, VT, &ldvt, work, &lwork, iwork, &info, 1);
            else
                info = -1000;
            ar__free(work);
        }
        ar__free(iwork);
        return info;
    }
    size_t lr = jobz == 'N'
                    ? (size_t)7 * mn
                    : (size_t)mn * (size_t)(5 * mn + 7 > 2 * mx + 2 * mn + 1 ? 5 * mn + 7
                                                                             : 2 * mx + 2 * mn + 1);
    double *rwork = ar__malloc((lr ? lr : 1) * sizeof *rwork);
    cplx wq = 0;
    if (!rwork) info = -1000;
    if (!info)
        zgesdd_(&jobz, &m, &n, F, &m, s, U, &ldu, VT, &ldvt, &wq, &lwork, rwork, iwork, &info, 1);
    if (!info) {
        lwork = creal(wq) > 1 ? (int)creal(wq) : 1;
        cplx *work = ar__malloc((size_t)lwork * sizeof *work);
        if (work)
            zgesdd_(&jobz, &m, &n, F, &m, s, U, &ldu, VT, &ldvt, work, &lwork, rwork, iwork, &info,
                    1);
        else
            info = -1000;
        ar__free(work);
    }
    ar__free(rwork);
    ar__free(iwork);
    return info;
}

int ar_svd(const Array *a, int full, int uv, Array **u, Array **s, Array **vh, char *err)
{
    size_t batch;
    *s = NULL;
    if (uv) *u = *vh = NULL;
    if (check_stack(a, "svd", 0, &batch, err)) return AR_ERR;
    size_t m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1], k = m < n ? m : n;
    size_t es = ar__esize(a->type), ur = m, uc = full ? m : k, vr = full ? n : k, vc = n;
    char jobz = !uv ? 'N' : full ? 'A' : 'S';
    size_t ush[2] = { ur, uc }, vsh[2] = { vr, vc };
    Array *S = stack_out(AR_F64, a, 0, &k, 1, err);
    Array *U = S && uv ? stack_out(a->type, a, 0, ush, 2, err) : NULL;
    Array *VH = U ? stack_out(a->type, a, 0, vsh, 2, err) : NULL;
    void *F = wbuf(m * n, es), *UF = wbuf(ur * uc, es), *VF = wbuf(vr * vc, es);
    int info = S && (!uv || VH) && F && UF && VF ? 0 : -1000;
    for (size_t q = 0; q < batch && !info && k; q++) {
        to_f(a->type, (char *)ar__data(a) + q * m * n * es, m, n, F, m);
        SvdCall c = { a->type, jobz,
                      (int)m,  (int)n,
                      F,       (double *)ar__data(S) + q * k,
                      UF,      (int)(ur ? ur : 1),
                      VF,      (int)(vr ? vr : 1) };
        info = gesdd(&c);
        if (!info && uv) {
            from_f(a->type, UF, ur, ur, uc, (char *)ar__data(U) + q * ur * uc * es);
            from_f(a->type, VF, vr, vr, vc, (char *)ar__data(VH) + q * vr * vc * es);
        }
    }
    if (!info && uv && k == 0) { /* empty: identities as NumPy gives for full */
        memset(ar__data(U), 0, U->size * es);
        memset(ar__data(VH), 0, VH->size * es);
    }
    ar__free(F);
    ar__free(UF);
    ar__free(VF);
    if (info) {
        ar_free(S);
        ar_free(U);
        ar_free(VH);
        return lapack_fail("svd", info, err);
    }
    *s = S;
    if (uv) {
        *u = U;
        *vh = VH;
    }
    return 0;
}

/* ---------------------------------------------------------------- qr */

/* Why: NumPy's qr: geqrf, R the upper triangle of the first rows, Q by
 * orgqr/ungqr (m x k for 'reduced', m x m for 'complete'). */
int ar_qr(const Array *a, int mode, Array **q, Array **r, char *err)
{
    size_t batch;
    *q = *r = NULL;
    if (check_stack(a, "qr", 0, &batch, err)) return AR_ERR;
    if (a->ndim != 2) return bad_shape("qr", "a 2-d matrix", a, err);
    size_t m = a->shape[0], n = a->shape[1], k = m < n ? m : n, es = ar__esize(a->type);
    size_t mc = mode == 1 && m > n ? m : k; /* columns of Q */
    size_t rr = mode == 1 ? m : k;          /* rows of R (complete: m) */
    void *F = wbuf(m * (mc > n ? mc : n), es), *tau = wbuf(k, es);
    size_t rsh[2] = { rr, n }, qsh[2] = { m, mc };
    Array *R = ar__alloc(a->type, 2, rsh, err);
    Array *Q = R && mode != 2 ? ar__alloc(a->type, 2, qsh, err) : NULL;
    int info = F && tau && R && (Q || mode == 2) ? 0 : -1000;
    int M = (int)m, N = (int)n, K = (int)k, MC = (int)mc, ld = M ? M : 1, lwork = -1;
    if (!info) {
        memset(F, 0, m * (mc > n ? mc : n) * es);
        to_f(a->type, ar__data(a), m, n, F, m);
    }
    if (!info && k) {
        if (a->type == AR_F64) {
            double wq = 0;
            dgeqrf_(&M, &N, F, &ld, tau, &wq, &lwork, &info);
            lwork = wq > 1 ? (int)wq : 1;
        } else {
            cplx wq = 0;
            zgeqrf_(&M, &N, F, &ld, tau, &wq, &lwork, &info);
            lwork = creal(wq) > 1 ? (int)creal(wq) : 1;
        }
        void *work = info ? NULL : wbuf((size_t)lwork, es);
        if (!info && !work) info = -1000;
        if (!info && a->type == AR_F64)
            dgeqrf_(&M, &N, F, &ld, tau, work, &lwork, &info);
        else if (!info)
            zgeqrf_(&M, &N, F, &ld, tau, work, &lwork, &info);
        ar__free(work);
    }
    if (!info) { /* R: the upper triangle */
        memset(ar__data(R), 0, R->size * es);
        for (size_t i = 0; i < rr && i < m; i++)
            for (size_t j = i; j < n; j++) {
                if (a->type == AR_F64)
                    ((double *)ar__data(R))[i * n + j] = ((double *)F)[i + j * m];
                else
                    ((cplx *)ar__data(R))[i * n + j] = ((cplx *)F)[i + j * m];
            }
    }
    if (!info && Q && k) {
        lwork = -1;
        if (a->type == AR_F64) {
            double wq = 0;
            dorgqr_(&M, &MC, &K, F, &ld, tau, &wq, &lwork, &info);
            lwork = wq > 1 ? (int)wq : 1;
        } else {
            cplx wq = 0;
            zungqr_(&M, &MC, &K, F, &ld, tau, &wq, &lwork, &info);
            lwork = creal(wq) > 1 ? (int)creal(wq) : 1;
        }
        void *work = info ? NULL : wbuf((size_t)lwork, es);
        if (!info && !work) info = -1000;
        if (!info && a->type == AR_F64)
            dorgqr_(&M, &MC, &K, F, &ld, tau, work, &lwork, &info);
        else if (!info)
            zungqr_(&M, &MC, &K, F, &ld, tau, work, &lwork, &info);
        ar__free(work);
        if (!info) from_f(a->type, F, m, m, mc, ar__data(Q));
    } else if (!info && Q) {
        memset(ar__data(Q), 0, Q->size * es);
    }
    ar__free(F);
    ar__free(tau);
    if (info) {
        ar_free(Q);
        ar_free(R);
        return lapack_fail("qr", info, err);
    }
    *q = Q;
    *r = R;
    return 0;
}

/* ---------------------------------------------------------------- pinv */

/* Why: NumPy's pinv: svd of conj(a) (reduced), singular values at most
 * rcond * max(s) dropped, then vh^T diag(1/s) u^T. */
Array *ar_pinv(const Array *a, double rcond, char *err)
{
    if (a->ndim != 2) return bad_shape("pinv", "a 2-d matrix", a, err), NULL;
    Array *c = a->type == AR_C128 ? ar_conj(a, err) : ar_copy(a, err);
    Array *u = NULL, *s = NULL, *vh = NULL;
    if (!c || ar_svd(c, 0, 1, &u, &s, &vh, err)) {
        ar_free(c);
        for (char *p = err; p && *p; p++)
            if (strncmp(p, "svd:", 4) == 0) memcpy(p, "pinv", 4);
        return NULL;
    }
    ar_free(c);
    size_t k = s->size;
    double *sv = ar__data(s), mx = 0;
    for (size_t i = 0; i < k; i++) mx = sv[i] > mx ? sv[i] : mx;
    for (size_t i = 0; i < k; i++) sv[i] = sv[i] > rcond * mx ? 1.0 / sv[i] : 0; /* s is ours */
    /* vh^T @ (s[:, None] * u^T), the product by BLAS as NumPy's matmul */
    Array *ut = ar_transpose(u, err), *vt = ut ? ar_transpose(vh, err) : NULL;
    Array *sc = vt ? ar_reshape(s, 2, (long[]){ (long)k, 1 }, err) : NULL;
    Array *su = sc ? ar_binop(AR_MUL, sc, ut, err) : NULL, *r = NULL;
    ArScalar dummy;
    if (su && ar_matmul(vt, su, &r, &dummy, err) != AR_ARRAY) r = NULL;
    ar_free(ut);
    ar_free(vt);
    ar_free(sc);
    ar_free(su);
    ar_free(u);
    ar_free(s);
    ar_free(vh);
    return r;
}

/* ---------------------------------------------------------------- lstsq */

/* Why: least squares by gelsd (NumPy's lstsq), for polyfit: x (n) solving
 * A (m x n) x ~ b (m), singular values below rcond * max dropped. */
Array *ar_lstsq_vec(const Array *A, const Array *b, double rcond, int *rank, char *err)
{
    size_t m = A->shape[0], n = A->shape[1], mx = m > n ? m : n;
    int M = (int)m, N = (int)n, one = 1, ldb = (int)(mx ? mx : 1), info = 0, lwork = -1, iwq = 0;
    double *F = wbuf(m * n, sizeof(double)), *B = wbuf(mx, sizeof(double));
    double *S = wbuf(m < n ? m : n, sizeof(double)), wq = 0;
    if (!F || !B || !S) info = -1000;
    if (!info) {
        to_f(AR_F64, ar__data(A), m, n, F, m);
        memset(B, 0, mx * sizeof(double));
        memcpy(B, ar__data(b), m * sizeof(double));
        dgelsd_(&M, &N, &one, F, &M, B, &ldb, S, &rcond, rank, &wq, &lwork, &iwq, &info);
    }
    double *work = NULL;
    int *iwork = NULL;
    if (!info) {
        lwork = wq > 1 ? (int)wq : 1;
        work = ar__malloc((size_t)lwork * sizeof *work);
        iwork = ar__malloc((size_t)(iwq > 1 ? iwq : 1) * sizeof *iwork);
        if (work && iwork)
            dgelsd_(&M, &N, &one, F, &M, B, &ldb, S, &rcond, rank, work, &lwork, iwork, &info);
        else
            info = -1000;
    }
    size_t sh[1] = { n };
    Array *x = info ? NULL : ar_from_data(AR_F64, 1, sh, B, err);
    ar__free(work);
    ar__free(iwork);
    ar__free(F);
    ar__free(B);
    ar__free(S);
    if (info) lapack_fail("lstsq", info, err);
    return x;
}

/* ---------------------------------------------------------------- expm */

/* Why: C = A @ B for n x n complex row-major matrices. */
static void zmm(int n, const cplx *A, const cplx *B, cplx *C)
{
    const cplx one = 1, zero = 0;
    cblas_zgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, &one, A, n, B, n, &zero, C, n);
}

/* Why: Higham's scaling and squaring with Pade approximants of degree 3,
 * 5, 7, 9 or 13 (SIAM J. Matrix Anal. Appl. 26(4), 2005), the method of
 * scipy.linalg.expm's ancestors; computed in complex arithmetic (a real
 * input gives the real part). */
/* Why: the Pade approximant of degree 3, 5, 7, 9 (deg 0..3) or 13 (deg < 0)
 * of exp(A) as U, V (exp(A) ~ (V - U)^-1 (V + U)), Higham's scaling and
 * squaring; P[0] = I, P[1] = A^2, P[2] = A^4, P[3] = A^6 on entry, P[4..6]
 * scratch. */
static void pade_uv(int deg, size_t n, const cplx *A, cplx *const P[7], cplx *U, cplx *V)
{
    static const double b13[14] = { 64764752532480000.0,
                                    32382376266240000.0,
                                    7771770303897600.0,
                                    1187353796428800.0,
                                    129060195264000.0,
                                    10559470521600.0,
                                    670442572800.0,
                                    33522128640.0,
                                    1323241920.0,
                                    40840800.0,
                                    960960.0,
                                    16380.0,
                                    182.0,
                                    1.0 };
    static const double bs[4][10] = {
        { 120, 60, 12, 1 },
        { 30240, 15120, 3360, 420, 30, 1 },
        { 17297280, 8648640, 1995840, 277200, 25200, 1512, 56, 1 },
        { 17643225600.0, 8821612800.0, 2075673600.0, 302702400, 30270240, 2162160, 110880, 3960, 90,
          1 },
    };
    size_t nn = n * n;
    qh_assert(deg >= -1 && deg < 4);
    if (deg >= 0) { /* U = A sum_odd b_k A^(k-1), V = sum_even b_k A^k */
        const double *b = bs[deg];
        int m = 2 * deg + 3;
        memset(P[4], 0, nn * sizeof(cplx));
        memset(V, 0, nn * sizeof(cplx));
        for (int k = 0; k <= m; k++) {
            cplx *pw = P[k / 2 < 4 ? k / 2 : 3]; /* A^(2j) for j = k/2 (j <= 3) */
            if (k / 2 == 4) {                    /* A^8 = A^4 A^4 (degree 9) */
                zmm((int)n, P[2], P[2], P[5]);
                pw = P[5];
            }
            cplx *dst = k % 2 ? P[4] : V;
            for (size_t i = 0; i < nn; i++) dst[i] += b[k] * pw[i];
        }
        zmm((int)n, A, P[4], U);
    } else {
        for (size_t i = 0; i < nn; i++) {
            P[4][i] = b13[13] * P[3][i] + b13[11] * P[2][i] + b13[9] * P[1][i];
            P[5][i] = b13[12] * P[3][i] + b13[10] * P[2][i] + b13[8] * P[1][i];
        }
        zmm((int)n, P[3], P[4], P[6]);
        for (size_t i = 0; i < nn; i++)
            P[6][i] += b13[7] * P[3][i] + b13[5] * P[2][i] + b13[3] * P[1][i] + b13[1] * P[0][i];
        zmm((int)n, A, P[6], U);
        zmm((int)n, P[3], P[5], V);
        for (size_t i = 0; i < nn; i++)
            V[i] += b13[6] * P[3][i] + b13[4] * P[2][i] + b13[2] * P[1][i] + b13[0] * P[0][i];
    }
}

Array *ar_expm(const Array *a, char *err)
{
    size_t batch;
    if (check_stack(a, "expm", 1, &batch, err)) return NULL;
    if (a->ndim != 2) return bad_shape("expm", "a 2-d square matrix", a, err), NULL;
    static const double th[4] = { 1.495585217958292e-2, 2.539398330063230e-1, 9.504178996162932e-1,
                                  2.097847961257068e0 };
    size_t n = a->shape[0], nn = n * n;
    Array *ca = ar_to_complex(a, err);
    cplx *A = ca ? wbuf(nn, sizeof(cplx)) : NULL, *P[7], *U = NULL, *V = NULL;
    for (int i = 0; i < 7; i++) P[i] = A ? wbuf(nn, sizeof(cplx)) : NULL;
    U = A ? wbuf(nn, sizeof(cplx)) : NULL;
    V = U ? wbuf(nn, sizeof(cplx)) : NULL;
    Array *r = NULL;
    int ok = ca && A && U && V;
    for (int i = 0; i < 7; i++) ok = ok && P[i];
    if (ok) {
        memcpy(A, ar__data(ca), nn * sizeof(cplx));
        double norm = 0;
        for (size_t j = 0; j < n; j++) {
            double c = 0;
            for (size_t i = 0; i < n; i++) c += cabs(A[i * n + j]);
            norm = c > norm ? c : norm;
        }
        int deg = -1, s = 0;
        for (int i = 0; i < 4 && deg < 0; i++)
            if (norm <= th[i]) deg = i;
        if (deg < 0 && norm > 5.371920351148152) s = (int)ceil(log2(norm / 5.371920351148152));
        if (s > 0)
            for (size_t i = 0; i < nn; i++) A[i] = ldexp(1.0, -s) * A[i];
        /* P[0] = I, P[1] = A^2, P[2] = A^4, P[3] = A^6 (P[4..6] scratch) */
        memset(P[0], 0, nn * sizeof(cplx));
        for (size_t i = 0; i < n; i++) P[0][i * n + i] = 1;
        zmm((int)n, A, A, P[1]);
        zmm((int)n, P[1], P[1], P[2]);
        zmm((int)n, P[1], P[2], P[3]);
        pade_uv(deg, n, A, P, U, V);
        /* (V - U) X = V + U, solved column-major: transpose in, transpose out */
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++) {
                P[4][i + j * n] = V[i * n + j] - U[i * n + j];
                P[5][i + j * n] = V[i * n + j] + U[i * n + j];
            }
        int info = gesv(AR_C128, (int)n, (int)n, P[4], P[5]);
        if (info) {
            ok = 0;
            lapack_fail("expm", info > 0 ? 1 : info, err);
        } else {
            from_f(AR_C128, P[5], n, n, n, A);
            for (int q = 0; q < s; q++) { /* squaring */
                zmm((int)n, A, A, P[6]);
                memcpy(A, P[6], nn * sizeof(cplx));
            }
            Array *c = ar_from_data(AR_C128, 2, a->shape, A, err);
            r = c && a->type == AR_F64 ? ar_real(c, err) : c;
            if (c && r != c) ar_free(c);
        }
    } else if (ca) {
        ar__err(err, "out of memory in expm");
    }
    ar_free(ca);
    ar__free(A);
    ar__free(U);
    ar__free(V);
    for (int i = 0; i < 7; i++) ar__free(P[i]);
    return ok ? r : NULL;
}
