/* meas_spec.c — spectra of observables (svmeas.h): Hermitian
 * eigendecomposition through LAPACK, the spectral decomposition of an
 * observable on its support, the probability of each eigenvector on a
 * state, and the distinct eigenvalues with their probabilities. This is
 * what sample(obs), counts(obs) and shot estimates of non-Pauli
 * observables draw from. Must not know about shots as a device option or
 * how results become values.
 */
#include "svmeas.h"
#include "sv_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qblas.h"

#define E_EIGH "%s: the eigendecomposition failed (LAPACK info %d)"

/* Why: row-major a is, to LAPACK (column-major), a^T = conj(a) for a
   Hermitian a: same eigenvalues, conjugate eigenvectors. */
int sv_eigh(cplx *a, int d, double *vals, cplx *vecs, char *err, size_t errlen)
{
    const char *name = "eigh";
    if (!a || !vals || d < 1) return sv_err(err, errlen, SV_E_NOMAT, name);
    const char *job = vecs ? "V" : "N";
    int info = 0, lwork = -1, lrwork = -1, liwork = -1, iwq = 0;
    cplx wq = 0;
    double rq = 0;
    zheevd_(job, "U", &d, a, &d, vals, &wq, &lwork, &rq, &lrwork, &iwq, &liwork, &info, 1, 1);
    if (info) return sv_err(err, errlen, E_EIGH, name, info);
    lwork = creal(wq) > 1 ? (int)creal(wq) : 1;
    lrwork = rq > 1 ? (int)rq : 1;
    liwork = iwq > 1 ? iwq : 1;
    cplx *work = malloc((size_t)lwork * sizeof *work);
    double *rwork = malloc((size_t)lrwork * sizeof *rwork);
    int *iwork = malloc((size_t)liwork * sizeof *iwork);
    if (work && rwork && iwork)
        zheevd_(job, "U", &d, a, &d, vals, work, &lwork, rwork, &lrwork, iwork, &liwork, &info, 1,
                1);
    else
        info = -1000;
    free(work);
    free(rwork);
    free(iwork);
    if (info == -1000) return sv_err(err, errlen, SV_E_NOMEM, name);
    if (info) return sv_err(err, errlen, E_EIGH, name, info);
    if (vecs) /* column j of LAPACK's output (contiguous) is conj of our eigenvector j */
        for (int j = 0; j < d; j++)
            for (int i = 0; i < d; i++) vecs[(size_t)i * d + j] = conj(a[(size_t)j * d + i]);
    return 0;
}

void sv_spectrum_free(SvSpectrum *sp)
{
    if (!sp) return;
    free(sp->vals);
    free(sp->vecs);
    sp->vals = NULL;
    sp->vecs = NULL;
}

int sv_obs_spectrum(const SvTerm *t, int n, int nq, SvSpectrum *sp, char *err, size_t errlen)
{
    const char *name = "sample";
    if (!sp) return sv_err(err, errlen, SV_E_NOMAT, name);
    memset(sp, 0, sizeof *sp);
    if (sv_obs_check(t, n, nq, name, err, errlen) != 0) return -1;
    if (n == 1 && t[0].kind == SVB_NONE && (t[0].x | t[0].z)) {
        sp->word = 1;
        sp->w = (SvPauli){ t[0].coeff, t[0].x, t[0].z };
        sp->d = 2;
        sp->vals = malloc(2 * sizeof(double));
        if (!sp->vals) return sv_err(err, errlen, SV_E_NOMEM, name);
        sp->vals[0] = -fabs(t[0].coeff);
        sp->vals[1] = fabs(t[0].coeff);
        return 0;
    }
    int wires[SV_MAX_WIRES];
    int k = sv_obs_support(t, n, wires);
    if (k > SV_MAX_DENSE) return sv_err(err, errlen, SV_E_BIGOP, name, k, SV_MAX_DENSE);
    sp->k = k;
    memcpy(sp->wires, wires, (size_t)k * sizeof(int));
    int d = 1 << k;
    sp->d = d;
    cplx *m = malloc((size_t)d * d * sizeof(cplx));
    sp->vals = malloc((size_t)d * sizeof(double));
    sp->vecs = malloc((size_t)d * d * sizeof(cplx));
    if (!m || !sp->vals || !sp->vecs) {
        free(m);
        sv_spectrum_free(sp);
        return sv_err(err, errlen, SV_E_NOMEM, name);
    }
    int rc = sv_obs_matrix(t, n, wires, k, m, err, errlen);
    if (rc == 0) {
        /* Hermitian part (the check allows rounding noise) */
        for (int i = 0; i < d; i++)
            for (int j = i; j < d; j++) {
                cplx h = 0.5 * (m[(size_t)i * d + j] + conj(m[(size_t)j * d + i]));
                m[(size_t)i * d + j] = h;
                m[(size_t)j * d + i] = conj(h);
            }
        rc = sv_eigh(m, d, sp->vals, sp->vecs, err, errlen);
    }
    free(m);
    if (rc != 0) sv_spectrum_free(sp);
    return rc;
}

typedef struct ProbCtx {
    const SvState *s;
    const SvSpectrum *sp;
    int pos[SV_MAX_DENSE]; /* sorted bit positions */
    uint64_t off[1 << SV_MAX_DENSE];
    double *part; /* np x d */
} ProbCtx;

/* Why: y = V^dagger v per rest index; |y_j|^2 summed per part. */
static void probs_part(void *vctx, int part, int np)
{
    ProbCtx *c = vctx;
    const SvSpectrum *sp = c->sp;
    int d = sp->d, k = sp->k;
    double *acc = c->part + (size_t)part * d;
    memset(acc, 0, (size_t)d * sizeof(double));
    uint64_t lo, hi;
    sv_slice(c->s->dim >> k, part, np, &lo, &hi);
    cplx v[1 << SV_MAX_DENSE];
    for (uint64_t r = lo; r < hi; r++) {
        uint64_t base = sv_expand(r, c->pos, k);
        for (int a = 0; a < d; a++) v[a] = c->s->amp[base | c->off[a]];
        for (int j = 0; j < d; j++) {
            cplx y = 0;
            for (int a = 0; a < d; a++) y += conj(sp->vecs[(size_t)a * d + j]) * v[a];
            acc[j] += creal(y) * creal(y) + cimag(y) * cimag(y);
        }
    }
}

int sv_spectrum_probs(const SvState *s, const SvSpectrum *sp, double *p, char *err, size_t errlen)
{
    const char *name = "sample";
    if (!s || !s->amp) return sv_err(err, errlen, SV_E_NOSTATE, name);
    if (!sp || !p || !sp->vals) return sv_err(err, errlen, SV_E_NOMAT, name);
    if (sp->word) {
        double e = sv_expval(s, &(SvPauli){ 1.0, sp->w.x, sp->w.z }, 1);
        double nrm = sv_expval(s, &(SvPauli){ 1.0, 0, 0 }, 1);
        double pp = 0.5 * (nrm + e), pm = 0.5 * (nrm - e); /* weights of W = +1 and -1 */
        if (pp < 0) pp = 0;
        if (pm < 0) pm = 0;
        /* vals ascending: -|c| then +|c|; a negative coeff swaps the roles */
        if (sp->w.coeff >= 0) {
            p[0] = pm;
            p[1] = pp;
        } else {
            p[0] = pp;
            p[1] = pm;
        }
        return 0;
    }
    for (int i = 0; i < sp->k; i++)
        if (sp->wires[i] < 0 || sp->wires[i] >= s->nq)
            return sv_err(err, errlen, SV_E_RANGE, name, sp->wires[i], s->nq);
    ProbCtx *c = malloc(sizeof *c);
    if (!c) return sv_err(err, errlen, SV_E_NOMEM, name);
    c->s = s;
    c->sp = sp;
    int k = sp->k, d = sp->d;
    for (int i = 0; i < k; i++) c->pos[i] = sv_bitpos(s->nq, sp->wires[i]);
    for (int a = 0; a < d; a++) {
        uint64_t o = 0;
        for (int i = 0; i < k; i++)
            if ((a >> (k - 1 - i)) & 1) o |= (uint64_t)1 << sv_bitpos(s->nq, sp->wires[i]);
        c->off[a] = o;
    }
    sv_sort_ints(c->pos, k);
    int np = sv_nparts(s);
    c->part = malloc((size_t)np * d * sizeof(double));
    if (!c->part) {
        free(c);
        return sv_err(err, errlen, SV_E_NOMEM, name);
    }
    np = sv_parallel(s, probs_part, c);
    for (int j = 0; j < d; j++) {
        double v = 0;
        for (int q = 0; q < np; q++) v += c->part[(size_t)q * d + j];
        p[j] = v;
    }
    free(c->part);
    free(c);
    return 0;
}

int sv_spectrum_levels(const SvSpectrum *sp, const double *pj, double *vals, double *p)
{
    int d = sp->d;
    if (d <= 0) return 0;
    double spread = fabs(sp->vals[d - 1] - sp->vals[0]);
    double tol = 1e-9 * (spread > 1 ? spread : 1);
    int m = 0;
    double first = 0; /* the level's first eigenvalue: no drift across a run */
    for (int j = 0; j < d; j++) {
        if (m > 0 && sp->vals[j] - first <= tol) {
            p[m - 1] += pj[j];
            continue;
        }
        first = sp->vals[j];
        vals[m] = first;
        p[m] = pj[j];
        m++;
    }
    return m;
}

int sv_spectrum_probs_rho(const SvSpectrum *sp, const cplx *rho, double *p, char *err,
                          size_t errlen)
{
    const char *name = "sample";
    if (!sp || !rho || !p || !sp->vals || sp->word) return sv_err(err, errlen, SV_E_NOMAT, name);
    int d = sp->d;
    if (sp->k == 0) {
        p[0] = creal(rho[0]);
        return 0;
    }
    for (int j = 0; j < d; j++) {
        double acc = 0;
        for (int r = 0; r < d; r++) {
            cplx rv = 0; /* (rho v_j)[r] */
            for (int c = 0; c < d; c++) rv += rho[(size_t)r * d + c] * sp->vecs[(size_t)c * d + j];
            acc += creal(conj(sp->vecs[(size_t)r * d + j]) * rv);
        }
        p[j] = acc > 0 ? acc : 0;
    }
    return 0;
}
