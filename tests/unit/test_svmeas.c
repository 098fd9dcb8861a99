/* test_svmeas.c — unit tests of the measurement kernels of the statevector
 * room (svmeas.h), against dense references built here independently.
 *
 * References: every operator is embedded into the full 2^n space by index
 * arithmetic (cross-checked against Kronecker products), expectation values
 * and variances are <psi|F|psi> and <psi|F^2|psi> - <F>^2 with full
 * matrices, reduced density matrices are partial traces over explicit
 * index pairs, spectra come from a Jacobi eigenvalue solver written here
 * (not LAPACK), the metric block is checked against the Fubini-Study
 * metric of finite-difference state derivatives, draws against their
 * distributions with fixed seeds and wide (5 sigma) margins.
 * Knows only svmeas.h and sv.h (and rng.h).
 */
#include <check.h>
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "svmeas.h"
#include "dense_ref.h"

#define TOL  1e-11
#define MAXQ 6
#define MAXD (1 << MAXQ)

/* ---- dense helpers --------------------------------------------------------- */

static void random_herm(cplx *m, int d, Rng *r)
{
    for (int i = 0; i < d; i++)
        for (int j = i; j < d; j++) {
            cplx v = rng_normal(r) + (i == j ? 0 : I * rng_normal(r));
            m[i * d + j] = v;
            m[j * d + i] = conj(v);
        }
}

static cplx inner(const cplx *a, const cplx *b, int d)
{
    cplx s = 0;
    for (int i = 0; i < d; i++) s += conj(a[i]) * b[i];
    return s;
}

static void word_full(double c, uint64_t x, uint64_t z, int nq, cplx *full)
{
    cplx a[MAXD * MAXD], b[MAXD * MAXD];
    int d = 1;
    a[0] = c;
    for (int w = 0; w < nq; w++) {
        int xb = (x >> w) & 1, zb = (z >> w) & 1;
        const cplx *p = xb && zb ? P_Y : xb ? P_X : zb ? P_Z : P_I;
        kron(a, d, p, 2, b);
        d *= 2;
        memcpy(a, b, (size_t)d * d * sizeof(cplx));
    }
    memcpy(full, a, (size_t)d * d * sizeof(cplx));
}

/* Full matrix of an SvTerm list, independently of the room. */
static void terms_full(const SvTerm *t, int n, int nq, cplx *full)
{
    int D = 1 << nq;
    cplx *w = malloc((size_t)D * D * sizeof(cplx)), *b = malloc((size_t)D * D * sizeof(cplx));
    memset(full, 0, (size_t)D * D * sizeof(cplx));
    for (int i = 0; i < n; i++) {
        word_full(t[i].coeff, t[i].x, t[i].z, nq, w);
        if (t[i].kind != SVB_NONE) {
            int k = t[i].k, d = 1 << k;
            cplx *m = calloc((size_t)d * d, sizeof(cplx));
            if (t[i].kind == SVB_DENSE)
                memcpy(m, t[i].m, (size_t)d * d * sizeof(cplx));
            else if (t[i].kind == SVB_KET) {
                for (int a = 0; a < d; a++)
                    for (int c = 0; c < d; c++) m[a * d + c] = t[i].ket[a] * conj(t[i].ket[c]);
            } else {
                int a = 0;
                for (int q = 0; q < k; q++) a = (a << 1) | (int)((t[i].bits >> q) & 1);
                m[a * d + a] = 1;
            }
            embed(m, t[i].wires, k, nq, b);
            matmul(w, b, w, D);
            free(m);
        }
        for (int q = 0; q < D * D; q++) full[q] += w[q];
    }
    free(w);
    free(b);
}

/* Jacobi eigenvalues of a Hermitian d x d matrix through its real
   symmetric 2d x 2d form [[A, -B], [B, A]] (each eigenvalue twice). */
static void jacobi_eigvals(const cplx *h, int d, double *vals)
{
    int n = 2 * d;
    double *a = malloc((size_t)n * n * sizeof(double));
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            double re = creal(h[i * d + j]), im = cimag(h[i * d + j]);
            a[i * n + j] = re;
            a[(i + d) * n + (j + d)] = re;
            a[i * n + (j + d)] = -im;
            a[(i + d) * n + j] = im;
        }
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) off += a[p * n + q] * a[p * n + q];
        if (off < 1e-30) break;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) {
                double apq = a[p * n + q];
                if (fabs(apq) < 1e-300) continue;
                double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
                double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < n; k++) {
                    double akp = a[k * n + p], akq = a[k * n + q];
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for (int k = 0; k < n; k++) {
                    double apk = a[p * n + k], aqk = a[q * n + k];
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
            }
    }
    double *all = malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++) all[i] = a[i * n + i];
    for (int i = 1; i < n; i++) { /* sort ascending */
        double v = all[i];
        int j = i - 1;
        while (j >= 0 && all[j] > v) {
            all[j + 1] = all[j];
            j--;
        }
        all[j + 1] = v;
    }
    for (int i = 0; i < d; i++) vals[i] = 0.5 * (all[2 * i] + all[2 * i + 1]);
    free(all);
    free(a);
}

static double ref_entropy(const cplx *rho, int d)
{
    double *w = malloc((size_t)d * sizeof(double));
    jacobi_eigvals(rho, d, w);
    double S = 0;
    for (int i = 0; i < d; i++)
        if (w[i] > 1e-15) S -= w[i] * log(w[i]);
    free(w);
    return S;
}

/* Partial trace over explicit pairs of full indices. */
static void ref_rdm(const cplx *psi, int nq, const int *w, int k, cplx *rho)
{
    int D = 1 << nq, d = 1 << k;
    uint64_t wm = 0;
    for (int q = 0; q < k; q++) wm |= (uint64_t)1 << (nq - 1 - w[q]);
    memset(rho, 0, (size_t)d * d * sizeof(cplx));
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {
            if (((uint64_t)i & ~wm) != ((uint64_t)j & ~wm)) continue;
            int a = 0, b = 0;
            for (int q = 0; q < k; q++) {
                a = (a << 1) | ((i >> (nq - 1 - w[q])) & 1);
                b = (b << 1) | ((j >> (nq - 1 - w[q])) & 1);
            }
            rho[a * d + b] += psi[i] * conj(psi[j]);
        }
}

static SvState make_state(int nq, Rng *r)
{
    SvState s;
    ck_assert_int_eq(sv_init(&s, nq), 0);
    random_state(s.amp, s.dim, r);
    return s;
}

/* A random observable of nt terms on nq wires: Pauli words, Hermitian,
   basis and ket projector blocks, and blocks times words. */
typedef struct Obs {
    SvTerm t[6];
    int n;
    cplx mats[6][64];
    cplx kets[6][8];
} Obs;

static void random_obs(Obs *o, int nq, int nt, Rng *r)
{
    memset(o, 0, sizeof *o);
    o->n = nt;
    for (int i = 0; i < nt; i++) {
        SvTerm *t = &o->t[i];
        t->coeff = rng_normal(r);
        int kind = (int)rng_below(r, 4);
        t->kind = (SvBlockKind)kind;
        int k = kind == SVB_NONE ? 0 : 1 + (int)rng_below(r, 3 < nq ? 3 : (uint64_t)nq);
        int w[MAXQ];
        random_wires(w, nq, nq, r); /* a permutation: first k for the block */
        t->k = k;
        for (int q = 0; q < k; q++) t->wires[q] = w[q];
        if (kind == SVB_DENSE) {
            random_herm(o->mats[i], 1 << k, r);
            t->m = o->mats[i];
        }
        if (kind == SVB_KET) {
            random_state(o->kets[i], (size_t)1 << k, r);
            t->ket = o->kets[i];
        }
        if (kind == SVB_BASIS) t->bits = rng_below(r, (uint64_t)1 << k);
        /* a word on some of the remaining wires */
        for (int q = k; q < nq; q++) {
            int p = (int)rng_below(r, 4);
            if (p & 1) t->x |= (uint64_t)1 << w[q];
            if (p & 2) t->z |= (uint64_t)1 << w[q];
        }
    }
}

/* ---- tests --------------------------------------------------------------- */

START_TEST(test_embed_matches_kron)
{
    /* the reference embedding agrees with kron for sorted contiguous wires */
    Rng r;
    rng_seed(&r, 1);
    cplx m[16], full[MAXD * MAXD], ref[MAXD * MAXD], tmp[MAXD * MAXD];
    random_herm(m, 4, &r);
    int w[2] = { 1, 2 };
    embed(m, w, 2, 4, full);
    kron(P_I, 2, m, 4, tmp);
    kron(tmp, 8, P_I, 2, ref);
    ck_assert(maxdiff(full, ref, 256) < 1e-15);
}
END_TEST

START_TEST(test_expval_var_apply)
{
    Rng r;
    rng_seed(&r, 2);
    for (int nq = 1; nq <= 5; nq++)
        for (int trial = 0; trial < 40; trial++) {
            Obs o;
            random_obs(&o, nq, 1 + (int)rng_below(&r, 4), &r);
            SvState s = make_state(nq, &r);
            char err[200] = "";
            ck_assert_msg(sv_obs_check(o.t, o.n, nq, "obs", err, sizeof err) == 0, "%s", err);
            int D = 1 << nq;
            cplx *F = malloc((size_t)D * D * sizeof(cplx)),
                 *F2 = malloc((size_t)D * D * sizeof(cplx));
            terms_full(o.t, o.n, nq, F);
            matmul(F, F, F2, D);
            cplx fv[MAXD], f2v[MAXD];
            matvec(F, s.amp, fv, D);
            matvec(F2, s.amp, f2v, D);
            double e = creal(inner(s.amp, fv, D)), e2 = creal(inner(s.amp, f2v, D));
            double got = sv_obs_expval(&s, o.t, o.n, err, sizeof err);
            ck_assert_msg(fabs(got - e) < TOL, "nq %d trial %d: expval %.15g want %.15g", nq, trial,
                          got, e);
            double v = sv_obs_var(&s, o.t, o.n, err, sizeof err);
            double vref = e2 - e * e;
            ck_assert_msg(fabs(v - (vref > 0 ? vref : 0)) < 1e-10,
                          "nq %d trial %d: var %.15g want %.15g", nq, trial, v, vref);
            cplx out[MAXD];
            ck_assert_int_eq(sv_obs_apply(&s, o.t, o.n, out, err, sizeof err), 0);
            ck_assert(maxdiff(out, fv, (size_t)D) < TOL);
            /* the dense matrix on all wires (in a shuffled order) is F permuted */
            int wires[MAXQ];
            random_wires(wires, nq, nq, &r);
            cplx *M = malloc((size_t)D * D * sizeof(cplx)),
                 *E = malloc((size_t)D * D * sizeof(cplx));
            ck_assert_int_eq(sv_obs_matrix(o.t, o.n, wires, nq, M, err, sizeof err), 0);
            embed(M, wires, nq, nq, E);
            ck_assert(maxdiff(E, F, (size_t)D * D) < TOL);
            free(M);
            free(E);
            free(F);
            free(F2);
            sv_free(&s);
        }
}
END_TEST

START_TEST(test_lone_blocks)
{
    /* the single-block fast paths, including wide basis projectors */
    Rng r;
    rng_seed(&r, 3);
    SvState s = make_state(6, &r);
    char err[200];
    SvTerm t;
    memset(&t, 0, sizeof t);
    t.coeff = 1;
    t.kind = SVB_BASIS;
    t.k = 4;
    int w[4] = { 5, 0, 3, 2 };
    memcpy(t.wires, w, sizeof w);
    t.bits = 0xb; /* wire 5 = 1, wire 0 = 1, wire 3 = 0, wire 2 = 1 */
    double p = 0;
    for (int i = 0; i < 64; i++)
        if (((i >> 0) & 1) == 1 && ((i >> 5) & 1) == 1 && ((i >> 2) & 1) == 0 &&
            ((i >> 3) & 1) == 1)
            p += creal(s.amp[i] * conj(s.amp[i]));
    ck_assert(fabs(sv_obs_expval(&s, &t, 1, err, sizeof err) - p) < TOL);
    ck_assert(fabs(sv_obs_var(&s, &t, 1, err, sizeof err) - (p - p * p)) < TOL);
    /* a ket projector on all wires: |<phi|psi>|^2 */
    cplx phi[64];
    random_state(phi, 64, &r);
    memset(&t, 0, sizeof t);
    t.coeff = 2;
    t.kind = SVB_KET;
    t.k = 6;
    for (int q = 0; q < 6; q++) t.wires[q] = q;
    t.ket = phi;
    cplx ov = inner(phi, s.amp, 64);
    double pk = creal(ov * conj(ov));
    ck_assert(fabs(sv_obs_expval(&s, &t, 1, err, sizeof err) - 2 * pk) < TOL);
    ck_assert(fabs(sv_obs_var(&s, &t, 1, err, sizeof err) - 4 * (pk - pk * pk)) < TOL);
    sv_free(&s);
}
END_TEST

START_TEST(test_threads_agree)
{
    /* a big state split over a team gives the serial results */
    Rng r;
    rng_seed(&r, 4);
    SvState s = make_state(16, &r);
    SvTeam *team = sv_team_new(3);
    ck_assert_ptr_nonnull(team);
    Obs o;
    random_obs(&o, 6, 4, &r);
    for (int i = 0; i < o.n; i++) { /* move onto high wires too */
        for (int q = 0; q < o.t[i].k; q++) o.t[i].wires[q] += 10;
        o.t[i].x <<= 10;
        o.t[i].z <<= 10;
    }
    char err[200];
    ck_assert_msg(sv_obs_check(o.t, o.n, 16, "obs", err, sizeof err) == 0, "%s", err);
    double e1 = sv_obs_expval(&s, o.t, o.n, err, sizeof err),
           v1 = sv_obs_var(&s, o.t, o.n, err, sizeof err);
    int wires[3] = { 12, 3, 15 };
    cplx rho1[64], rho2[64];
    ck_assert_int_eq(sv_density_matrix(&s, wires, 3, rho1, err, sizeof err), 0);
    sv_set_threads(&s, team, 3);
    double e2 = sv_obs_expval(&s, o.t, o.n, err, sizeof err),
           v2 = sv_obs_var(&s, o.t, o.n, err, sizeof err);
    ck_assert_int_eq(sv_density_matrix(&s, wires, 3, rho2, err, sizeof err), 0);
    ck_assert(fabs(e1 - e2) < 1e-10);
    ck_assert(fabs(v1 - v2) < 1e-10);
    ck_assert(maxdiff(rho1, rho2, 64) < 1e-12);
    sv_set_threads(&s, NULL, 1);
    sv_team_free(team);
    sv_free(&s);
}
END_TEST

START_TEST(test_density_matrix)
{
    Rng r;
    rng_seed(&r, 5);
    for (int nq = 1; nq <= 5; nq++)
        for (int trial = 0; trial < 10; trial++) {
            SvState s = make_state(nq, &r);
            int k = 1 + (int)rng_below(&r, (uint64_t)nq);
            int w[MAXQ];
            random_wires(w, k, nq, &r);
            int d = 1 << k;
            cplx rho[MAXD * MAXD], ref[MAXD * MAXD];
            char err[200];
            ck_assert_int_eq(sv_density_matrix(&s, w, k, rho, err, sizeof err), 0);
            ref_rdm(s.amp, nq, w, k, ref);
            ck_assert(maxdiff(rho, ref, (size_t)d * d) < TOL);
            /* purity and entropy against the references */
            double pur = 0;
            cplx r2[MAXD * MAXD];
            matmul(ref, ref, r2, d);
            for (int i = 0; i < d; i++) pur += creal(r2[i * d + i]);
            ck_assert(fabs(sv_purity(&s, w, k, err, sizeof err) - pur) < TOL);
            double S = sv_vn_entropy(&s, w, k, err, sizeof err);
            ck_assert_msg(fabs(S - ref_entropy(ref, d)) < 1e-9, "S %.15g ref %.15g", S,
                          ref_entropy(ref, d));
            /* a pure state: the complement has the same entropy */
            if (k < nq) {
                int c[MAXQ], kc = 0;
                for (int q = 0; q < nq; q++) {
                    int in = 0;
                    for (int j = 0; j < k; j++) in |= w[j] == q;
                    if (!in) c[kc++] = q;
                }
                ck_assert(fabs(sv_vn_entropy(&s, c, kc, err, sizeof err) - S) < 1e-9);
                /* mutual information of a pure bipartition is 2 S */
                ck_assert(fabs(sv_mutual_info(&s, w, k, c, kc, err, sizeof err) - 2 * S) < 1e-9);
            } else {
                ck_assert(fabs(S) < 1e-9);
                ck_assert(fabs(sv_purity(&s, w, k, err, sizeof err) - 1) < TOL);
            }
            sv_free(&s);
        }
}
END_TEST

START_TEST(test_known_entropies)
{
    /* a Bell pair on wires 0, 2 and |+> on wire 1 */
    SvState s;
    ck_assert_int_eq(sv_init(&s, 3), 0);
    memset(s.amp, 0, 8 * sizeof(cplx));
    double h = 0.5;
    s.amp[0] = h; /* |000> */
    s.amp[2] = h; /* |010> */
    s.amp[5] = h; /* |101> */
    s.amp[7] = h; /* |111> */
    char err[200];
    int a[1] = { 0 }, b[1] = { 2 }, m[1] = { 1 };
    ck_assert(fabs(sv_vn_entropy(&s, a, 1, err, sizeof err) - log(2)) < TOL);
    ck_assert(fabs(sv_vn_entropy(&s, m, 1, err, sizeof err)) < TOL);
    ck_assert(fabs(sv_mutual_info(&s, a, 1, b, 1, err, sizeof err) - 2 * log(2)) < TOL);
    ck_assert(fabs(sv_mutual_info(&s, a, 1, m, 1, err, sizeof err)) < TOL);
    ck_assert(fabs(sv_purity(&s, a, 1, err, sizeof err) - 0.5) < TOL);
    /* errors */
    ck_assert(isnan(sv_mutual_info(&s, a, 1, a, 1, err, sizeof err)));
    ck_assert_str_eq(err, "mutual_info: wire 0 is in both sets (the sets must be disjoint)");
    int bad[2] = { 1, 1 };
    cplx rho[16];
    ck_assert_int_eq(sv_density_matrix(&s, bad, 2, rho, err, sizeof err), -1);
    ck_assert_str_eq(err, "density_matrix: wires must be distinct (1, 1)");
    int out[1] = { 3 };
    ck_assert(isnan(sv_vn_entropy(&s, out, 1, err, sizeof err)));
    ck_assert_str_eq(err, "density_matrix: wire 3 out of range for a 3-wire device");
    sv_free(&s);
}
END_TEST

START_TEST(test_spectrum)
{
    Rng r;
    rng_seed(&r, 6);
    for (int trial = 0; trial < 60; trial++) {
        int nq = 1 + (int)rng_below(&r, 4);
        Obs o;
        random_obs(&o, nq, 1 + (int)rng_below(&r, 3), &r);
        SvState s = make_state(nq, &r);
        char err[200];
        SvSpectrum sp;
        ck_assert_msg(sv_obs_spectrum(o.t, o.n, nq, &sp, err, sizeof err) == 0, "%s", err);
        double p[MAXD];
        ck_assert_int_eq(sv_spectrum_probs(&s, &sp, p, err, sizeof err), 0);
        double tot = 0, mean = 0, sq = 0;
        for (int j = 0; j < sp.d; j++) {
            tot += p[j];
            mean += p[j] * sp.vals[j];
            sq += p[j] * sp.vals[j] * sp.vals[j];
        }
        ck_assert(fabs(tot - 1) < TOL);
        ck_assert_msg(fabs(mean - sv_obs_expval(&s, o.t, o.n, err, sizeof err)) < 1e-10, "trial %d",
                      trial);
        ck_assert(fabs(sq - mean * mean - sv_obs_var(&s, o.t, o.n, err, sizeof err)) < 1e-9);
        if (!sp.word) {
            /* eigenvalues against Jacobi on the full matrix: the full spectrum
               is the support's spectrum, each value 2^(nq-k) times */
            int D = 1 << nq;
            cplx *F = malloc((size_t)D * D * sizeof(cplx));
            terms_full(o.t, o.n, nq, F);
            double ev[MAXD];
            jacobi_eigvals(F, D, ev);
            int rep = D / sp.d;
            for (int j = 0; j < sp.d; j++)
                for (int q = 0; q < rep; q++) ck_assert(fabs(ev[j * rep + q] - sp.vals[j]) < 1e-9);
            /* p_j from the eigenvectors through the full space */
            for (int j = 0; j < sp.d; j++) {
                cplx v[MAXD];
                for (int a = 0; a < sp.d; a++) v[a] = sp.vecs[a * sp.d + j];
                /* the projector onto v on the support, identity elsewhere */
                cplx pr[MAXD * MAXD], full[MAXD * MAXD], fv[MAXD];
                for (int a = 0; a < sp.d; a++)
                    for (int b = 0; b < sp.d; b++) pr[a * sp.d + b] = v[a] * conj(v[b]);
                embed(pr, sp.wires, sp.k, nq, full);
                matvec(full, s.amp, fv, D);
                double pj = creal(inner(s.amp, fv, D));
                ck_assert(fabs(pj - p[j]) < 1e-10);
            }
            free(F);
        }
        double lv[MAXD], lp[MAXD];
        int nl = sv_spectrum_levels(&sp, p, lv, lp);
        double t2 = 0;
        for (int j = 0; j < nl; j++) {
            t2 += lp[j];
            if (j) ck_assert(lv[j] > lv[j - 1]);
        }
        ck_assert(fabs(t2 - 1) < TOL);
        sv_spectrum_free(&sp);
        sv_free(&s);
    }
    /* a Pauli word on many wires: exact two levels, no dense matrix */
    SvState s;
    ck_assert_int_eq(sv_init(&s, 12), 0);
    Rng r2;
    rng_seed(&r2, 7);
    random_state(s.amp, s.dim, &r2);
    SvTerm t;
    memset(&t, 0, sizeof t);
    t.coeff = -1.5;
    t.x = 0x0f0;
    t.z = 0xf0f;
    SvSpectrum sp;
    char err[200];
    ck_assert_int_eq(sv_obs_spectrum(&t, 1, 12, &sp, err, sizeof err), 0);
    ck_assert_int_eq(sp.word, 1);
    double p[2];
    ck_assert_int_eq(sv_spectrum_probs(&s, &sp, p, err, sizeof err), 0);
    double e = sv_obs_expval(&s, &t, 1, err, sizeof err);
    ck_assert(fabs(p[0] * sp.vals[0] + p[1] * sp.vals[1] - e) < TOL);
    sv_spectrum_free(&sp);
    /* a projector's levels are 0 and 1 */
    memset(&t, 0, sizeof t);
    t.coeff = 1;
    t.kind = SVB_BASIS;
    t.k = 2;
    t.wires[0] = 3;
    t.wires[1] = 7;
    t.bits = 2;
    ck_assert_int_eq(sv_obs_spectrum(&t, 1, 12, &sp, err, sizeof err), 0);
    double pp[4], lv[4], lp[4];
    ck_assert_int_eq(sv_spectrum_probs(&s, &sp, pp, err, sizeof err), 0);
    ck_assert_int_eq(sv_spectrum_levels(&sp, pp, lv, lp), 2);
    ck_assert(fabs(lv[0]) < 1e-12 && fabs(lv[1] - 1) < 1e-12);
    ck_assert(fabs(lp[1] - sv_obs_expval(&s, &t, 1, err, sizeof err)) < TOL);
    sv_spectrum_free(&sp);
    sv_free(&s);
}
END_TEST

START_TEST(test_draws)
{
    Rng r;
    rng_seed(&r, 8);
    double p[5] = { 0.1, 0, 0.45, 0.3, 0.15 };
    const size_t N = 20000;
    uint64_t *out = malloc(N * sizeof(uint64_t));
    sv_draw(&r, p, 5, N, out);
    uint64_t c[5] = { 0 };
    for (size_t i = 0; i < N; i++) {
        ck_assert(out[i] < 5);
        c[out[i]]++;
    }
    ck_assert(c[1] == 0);
    for (int j = 0; j < 5; j++) {
        double sd = sqrt((double)N * p[j] * (1 - p[j]));
        ck_assert_msg(fabs((double)c[j] - (double)N * p[j]) <= 5 * sd + 1e-9, "draw %d: %llu", j,
                      (unsigned long long)c[j]);
    }
    /* unnormalised weights are fine */
    double q[3] = { 2, 6, 0 };
    uint64_t m[3];
    sv_multinomial(&r, q, 3, N, m);
    ck_assert(m[0] + m[1] + m[2] == N);
    ck_assert(m[2] == 0);
    double sd = sqrt((double)N * 0.25 * 0.75);
    ck_assert(fabs((double)m[0] - N * 0.25) <= 5 * sd);
    /* the same seed, the same draws */
    Rng a, b;
    rng_seed(&a, 9);
    rng_seed(&b, 9);
    uint64_t x[50], y[50];
    sv_draw(&a, p, 5, 50, x);
    sv_draw(&b, p, 5, 50, y);
    ck_assert(memcmp(x, y, sizeof x) == 0);
    free(out);
}
END_TEST

START_TEST(test_measure_post)
{
    Rng r;
    rng_seed(&r, 10);
    for (int wire = 0; wire < 3; wire++)
        for (int outcome = 0; outcome < 2; outcome++)
            for (int reset = 0; reset < 2; reset++) {
                SvState s = make_state(3, &r);
                cplx before[8];
                memcpy(before, s.amp, sizeof before);
                double pr = -1;
                char err[200];
                ck_assert_int_eq(sv_measure_post(&s, wire, outcome, reset, &pr, err, sizeof err),
                                 0);
                double n = 0;
                int bit = 2 - wire;
                for (int i = 0; i < 8; i++)
                    if (((i >> bit) & 1) == outcome) n += creal(before[i] * conj(before[i]));
                ck_assert(fabs(pr - n) < TOL);
                cplx want[8] = { 0 };
                for (int i = 0; i < 8; i++)
                    if (((i >> bit) & 1) == outcome)
                        want[(reset && outcome) ? i ^ (1 << bit) : i] = before[i] / sqrt(n);
                ck_assert(maxdiff(s.amp, want, 8) < TOL);
                sv_free(&s);
            }
    /* probability 0: an error, the state unchanged */
    SvState s;
    ck_assert_int_eq(sv_init(&s, 2), 0);
    char err[200];
    double pr = -1;
    ck_assert_int_eq(sv_measure_post(&s, 1, 1, 0, &pr, err, sizeof err), -1);
    ck_assert_str_eq(err, "measure: postselected outcome 1 has probability 0");
    ck_assert(pr == 0);
    ck_assert(s.amp[0] == 1);
    ck_assert_int_eq(sv_measure_post(&s, 1, 2, 0, &pr, err, sizeof err), -1);
    ck_assert_str_eq(err, "measure: postselect must be 0 or 1, got 2");
    sv_free(&s);
}
END_TEST

/* exp(i t G) by its Taylor series (small matrices, modest norms). */
static void expi(const cplx *g, int d, double t, cplx *out)
{
    cplx term[64 * 64], tmp[64 * 64];
    memset(out, 0, (size_t)d * d * sizeof(cplx));
    memset(term, 0, (size_t)d * d * sizeof(cplx));
    for (int i = 0; i < d; i++) term[i * d + i] = 1;
    for (int n = 0; n < 60; n++) {
        for (int i = 0; i < d * d; i++) out[i] += term[i];
        matmul(term, g, tmp, d);
        for (int i = 0; i < d * d; i++) term[i] = tmp[i] * (I * t) / (n + 1);
    }
}

START_TEST(test_generators)
{
    /* U(t) = exp(i t G) for every one-parameter gate (and a controlled one) */
    SvGate gates[] = { SV_RX,      SV_RY,      SV_RZ,        SV_PHASESHIFT, SV_CRX,
                       SV_CRY,     SV_CRZ,     SV_CPHASE,    SV_ISINGXX,    SV_ISINGYY,
                       SV_ISINGZZ, SV_MULTIRZ, SV_SINGLEEXC, SV_DOUBLEEXC };
    for (size_t g = 0; g < sizeof gates / sizeof gates[0]; g++) {
        const SvGateInfo *gi = sv_gate_info(gates[g]);
        for (int nc = 0; nc < 2; nc++) {
            SvOp op;
            memset(&op, 0, sizeof op);
            op.gate = gates[g];
            op.nwires = gi->nwires > 0 ? gi->nwires : 3;
            for (int i = 0; i < op.nwires; i++) op.wires[i] = i + nc;
            op.nctrl = nc;
            if (nc) op.ctrl[0] = 0;
            op.nparams = 1;
            op.params[0] = 0.7;
            int k = op.nctrl + op.nwires, d = 1 << k;
            cplx G[64 * 64], U[64 * 64], W[64 * 64];
            char err[200];
            ck_assert_msg(sv_generator(&op, 0, G, err, sizeof err) == 0, "%s: %s", gi->name, err);
            ck_assert_int_eq(sv_op_matrix(&op, U, err, sizeof err), 0);
            expi(G, d, 0.7, W);
            ck_assert_msg(maxdiff(U, W, (size_t)d * d) < 1e-10, "%s nc %d", gi->name, nc);
        }
    }
    /* any gate, any parameter: d(U psi)/dp = U (i G) psi, by central differences */
    Rng r;
    rng_seed(&r, 13);
    SvGate multi[] = { SV_ROT, SV_U3 };
    for (int g = 0; g < 2; g++)
        for (int p = 0; p < 3; p++) {
            SvOp op;
            memset(&op, 0, sizeof op);
            op.gate = multi[g];
            op.nwires = 1;
            op.nparams = 3;
            op.params[0] = 0.3;
            op.params[1] = 0.8;
            op.params[2] = -0.4;
            cplx G[4], U[4], psi[2], a[2], b[2], gp[2], ugp[2];
            char err[200];
            ck_assert_int_eq(sv_generator(&op, p, G, err, sizeof err), 0);
            ck_assert(cabs(G[1] - conj(G[2])) < 1e-15 && fabs(cimag(G[0])) < 1e-15);
            random_state(psi, 2, &r);
            const double h = 1e-6;
            SvOp o = op;
            o.params[p] += h;
            sv_op_matrix(&o, U, err, sizeof err);
            matvec(U, psi, a, 2);
            o.params[p] -= 2 * h;
            sv_op_matrix(&o, U, err, sizeof err);
            matvec(U, psi, b, 2);
            sv_op_matrix(&op, U, err, sizeof err);
            matvec(G, psi, gp, 2);
            for (int i = 0; i < 2; i++) gp[i] *= I;
            matvec(U, gp, ugp, 2);
            for (int i = 0; i < 2; i++) ck_assert(cabs((a[i] - b[i]) / (2 * h) - ugp[i]) < 1e-8);
            if (g == 0 && p == 0)
                ck_assert(cabs(G[0] + 0.5) < 1e-15 &&
                          cabs(G[3] - 0.5) < 1e-15); /* Rot's phi: RZ's -Z/2 */
        }
}
END_TEST

START_TEST(test_metric_block)
{
    /* a layer of gates on disjoint wires after a random state: the block is
       the Fubini-Study metric Re<d_i psi|d_j psi> - <d_i psi|psi><psi|d_j psi>
       of psi(t) = prod U_i(t_i) psi at t = 0, by central differences */
    Rng r;
    rng_seed(&r, 11);
    SvState s = make_state(5, &r);
    SvOp ops[3];
    memset(ops, 0, sizeof ops);
    ops[0].gate = SV_RX;
    ops[0].nwires = 1;
    ops[0].wires[0] = 3;
    ops[1].gate = SV_ISINGYY;
    ops[1].nwires = 2;
    ops[1].wires[0] = 0;
    ops[1].wires[1] = 4;
    ops[2].gate = SV_CRZ;
    ops[2].nwires = 2;
    ops[2].wires[0] = 2;
    ops[2].wires[1] = 1;
    for (int i = 0; i < 3; i++) ops[i].nparams = 1;
    cplx gens[3][16];
    int wires[3][2], k[3];
    const cplx *gp[3];
    const int *wp[3];
    char err[200];
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(sv_generator(&ops[i], 0, gens[i], err, sizeof err), 0);
        k[i] = ops[i].nwires;
        for (int q = 0; q < k[i]; q++) wires[i][q] = ops[i].wires[q];
        gp[i] = gens[i];
        wp[i] = wires[i];
    }
    double g[9];
    ck_assert_msg(sv_metric_block(&s, &(SvGens){ 3, gp, wp, k }, g, err, sizeof err) == 0, "%s",
                  err);
    /* derivatives of psi(t) */
    const double h = 1e-5;
    cplx dpsi[3][32];
    for (int i = 0; i < 3; i++) {
        SvState a, b;
        sv_init(&a, 5);
        sv_init(&b, 5);
        memcpy(a.amp, s.amp, 32 * sizeof(cplx));
        memcpy(b.amp, s.amp, 32 * sizeof(cplx));
        for (int j = 0; j < 3; j++) {
            SvOp oa = ops[j], ob = ops[j];
            if (j == i) {
                oa.params[0] = h;
                ob.params[0] = -h;
            }
            ck_assert_int_eq(sv_apply(&a, &oa, err, sizeof err), 0);
            ck_assert_int_eq(sv_apply(&b, &ob, err, sizeof err), 0);
        }
        for (int q = 0; q < 32; q++) dpsi[i][q] = (a.amp[q] - b.amp[q]) / (2 * h);
        sv_free(&a);
        sv_free(&b);
    }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double ref = creal(inner(dpsi[i], dpsi[j], 32) -
                               inner(dpsi[i], s.amp, 32) * inner(s.amp, dpsi[j], 32));
            ck_assert_msg(fabs(g[i * 3 + j] - ref) < 1e-8, "g[%d][%d] = %.12g, want %.12g", i, j,
                          g[i * 3 + j], ref);
        }
    /* and against the definition with full matrices */
    cplx F[3][32 * 32];
    for (int i = 0; i < 3; i++) embed(gens[i], wires[i], k[i], 5, F[i]);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            cplx fi[32], fj[32];
            matvec(F[i], s.amp, fi, 32);
            matvec(F[j], s.amp, fj, 32);
            double ref = creal(inner(fi, fj, 32)) -
                         creal(inner(s.amp, fi, 32)) * creal(inner(s.amp, fj, 32));
            ck_assert(fabs(g[i * 3 + j] - ref) < TOL);
        }
    sv_free(&s);
}
END_TEST

START_TEST(test_batch)
{
    Rng r;
    rng_seed(&r, 12);
    SvBatch b;
    ck_assert_int_eq(sv_batch_init(&b, 3, 4), 0);
    SvOp h;
    memset(&h, 0, sizeof h);
    h.gate = SV_HADAMARD;
    h.nwires = 1;
    h.wires[0] = 1;
    SvOp rx = h;
    rx.gate = SV_RX;
    rx.nparams = 1;
    rx.wires[0] = 2;
    double th[4] = { 0.1, -0.5, 1.3, 2.9 };
    char err[200];
    ck_assert_int_eq(sv_batch_apply(&b, &h, NULL, err, sizeof err), 0);
    ck_assert_int_eq(sv_batch_apply(&b, &rx, th, err, sizeof err), 0);
    for (int i = 0; i < 4; i++) {
        SvState s;
        sv_init(&s, 3);
        sv_apply(&s, &h, NULL, 0);
        SvOp o = rx;
        o.params[0] = th[i];
        sv_apply(&s, &o, NULL, 0);
        ck_assert(maxdiff(s.amp, b.m[i].amp, 8) < 1e-15);
        ck_assert(b.m[i].amp == b.amp + 8 * i);
        sv_free(&s);
    }
    th[2] = NAN;
    ck_assert_int_eq(sv_batch_apply(&b, &rx, th, err, sizeof err), -1);
    ck_assert_str_eq(err, "RX: parameter 1 is not finite (batch member 2)");
    sv_batch_reset(&b);
    for (int i = 0; i < 4; i++) ck_assert(b.m[i].amp[0] == 1 && b.m[i].amp[7] == 0);
    sv_batch_free(&b);
    ck_assert(sv_batch_bytes(3, 4) == 16 * 8 * 4);
    ck_assert(sv_batch_bytes(60, 1 << 20) == SIZE_MAX);
    ck_assert_int_eq(sv_batch_init(&b, 3, 0), -1);
}
END_TEST

START_TEST(test_checks)
{
    char err[200];
    cplx m[4] = { 1, 2, 3, 1 };
    SvTerm t;
    memset(&t, 0, sizeof t);
    t.coeff = 1;
    t.kind = SVB_DENSE;
    t.k = 1;
    t.wires[0] = 0;
    t.m = m;
    ck_assert_int_eq(sv_obs_check(&t, 1, 2, "Hermitian", err, sizeof err), -1);
    ck_assert_str_eq(err, "Hermitian: matrix is not Hermitian (|m[0][1] - conj(m[1][0])| = 1)");
    m[2] = 2;
    ck_assert_int_eq(sv_obs_check(&t, 1, 2, "Hermitian", err, sizeof err), 0);
    m[2] = 2 + 1e-12; /* within allclose */
    ck_assert_int_eq(sv_obs_check(&t, 1, 2, "Hermitian", err, sizeof err), 0);
    t.z = 1; /* word on wire 0 too */
    ck_assert_int_eq(sv_obs_check(&t, 1, 2, "Hermitian", err, sizeof err), -1);
    ck_assert_str_eq(err, "Hermitian: wire 0 is used twice in one term");
    t.z = 0;
    t.wires[0] = 2;
    ck_assert_int_eq(sv_obs_check(&t, 1, 2, "Hermitian", err, sizeof err), -1);
    ck_assert_str_eq(err, "Hermitian: wire 2 out of range for a 2-wire device");
    t.kind = SVB_BASIS;
    t.wires[0] = 1;
    t.bits = 2;
    ck_assert_int_eq(sv_obs_check(&t, 1, 2, "Projector", err, sizeof err), -1);
    ck_assert_str_eq(err, "Projector: basis bits beyond its 1 wires");
    t.kind = SVB_DENSE;
    t.k = 11;
    ck_assert_int_eq(sv_obs_check(&t, 1, 20, "Hermitian", err, sizeof err), -1);
    ck_assert_str_eq(err, "Hermitian: matrix of 11 wires is too large (at most 10)");
    m[0] = NAN;
    t.k = 1;
    ck_assert_int_eq(sv_obs_check(&t, 1, 2, "Hermitian", err, sizeof err), -1);
    ck_assert_str_eq(err, "Hermitian: matrix entries must be finite");
    /* a support wider than a dense matrix cannot be sampled */
    SvTerm w[2];
    memset(w, 0, sizeof w);
    w[0].coeff = 1;
    w[0].z = 0x7ff; /* 11 wires */
    w[1].coeff = 1;
    w[1].x = 1;
    SvSpectrum sp;
    ck_assert_int_eq(sv_obs_spectrum(w, 2, 12, &sp, err, sizeof err), -1);
    ck_assert_str_eq(err, "sample: matrix of 11 wires is too large (at most 10)");
}
END_TEST

/* A random circuit of every parametrised gate kind (adjoint and ctrl
   variants too), with some fixed gates in between. */
static int random_circuit(SvOp *ops, int nq, int n, Rng *r)
{
    SvGate kinds[] = { SV_RX,  SV_RY,     SV_RZ,        SV_PHASESHIFT, SV_CRX,      SV_CRY,
                       SV_CRZ, SV_CPHASE, SV_ISINGXX,   SV_ISINGYY,    SV_ISINGZZ,  SV_MULTIRZ,
                       SV_ROT, SV_U3,     SV_SINGLEEXC, SV_DOUBLEEXC,  SV_HADAMARD, SV_CNOT };
    int nk = (int)(sizeof kinds / sizeof kinds[0]);
    for (int i = 0; i < n; i++) {
        SvOp *o = &ops[i];
        memset(o, 0, sizeof *o);
        o->gate = kinds[rng_below(r, (uint64_t)nk)];
        const SvGateInfo *gi = sv_gate_info(o->gate);
        o->nwires = gi->nwires > 0 ? gi->nwires : 3;
        int w[MAXQ];
        random_wires(w, nq, nq, r);
        for (int q = 0; q < o->nwires; q++) o->wires[q] = w[q];
        o->nparams = gi->nparams;
        for (int p = 0; p < o->nparams; p++) o->params[p] = 2 * M_PI * rng_uniform(r) - M_PI;
        o->adjoint = rng_below(r, 4) == 0;
        if (o->nwires < nq - 1 && rng_below(r, 5) == 0) {
            o->nctrl = 1;
            o->ctrl[0] = w[nq - 1];
        }
    }
    return n;
}

static double obs_after(const SvOp *ops, int upto, int nq, const SvTerm *t, int n)
{
    SvState s;
    sv_init(&s, nq);
    for (int k = 0; k < upto; k++) ck_assert_int_eq(sv_apply(&s, &ops[k], NULL, 0), 0);
    double e = sv_obs_expval(&s, t, n, NULL, 0);
    sv_free(&s);
    return e;
}

START_TEST(test_adjoint)
{
    Rng r;
    rng_seed(&r, 14);
    const int nq = 5;
    for (int trial = 0; trial < 12; trial++) {
        SvOp ops[24];
        int n = random_circuit(ops, nq, 24, &r);
        Obs o[3];
        const SvTerm *obs[3];
        int nt[3], pos[3];
        for (int j = 0; j < 3; j++) {
            random_obs(&o[j], nq, 1 + (int)rng_below(&r, 3), &r);
            obs[j] = o[j].t;
            nt[j] = o[j].n;
            pos[j] = j == 0 ? n : (int)rng_below(&r, (uint64_t)n + 1);
        }
        uint8_t want[24];
        for (int k = 0; k < n; k++) want[k] = (uint8_t)rng_below(&r, 8);
        if (trial % 2) /* a prefix with nothing wanted: not undone */
            for (int k = 0; k < n / 3; k++) want[k] = 0;
        SvState s;
        sv_init(&s, nq);
        for (int k = 0; k < n; k++) ck_assert_int_eq(sv_apply(&s, &ops[k], NULL, 0), 0);
        double out[3 * 3 * 24], out2[3 * 3 * 24];
        char err[200];
        SvAdjointSpec as = { ops, n, want, 3, obs, nt, pos };
        ck_assert_msg(sv_adjoint(&s, &as, out, err, sizeof err) == 0, "%s", err);
        /* in place: the same numbers, the state overwritten */
        SvState c;
        sv_init(&c, nq);
        memcpy(c.amp, s.amp, s.dim * sizeof(cplx));
        ck_assert_msg(sv_adjoint_inplace(&c, &as, out2, err, sizeof err) == 0, "%s", err);
        ck_assert(memcmp(out, out2, sizeof(double) * 3 * 3 * (size_t)n) == 0);
        sv_free(&c);
        const double h = 1e-5;
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < n; k++)
                for (int p = 0; p < 3; p++) {
                    double got = out[j * 3 * n + 3 * k + p];
                    if (p >= ops[k].nparams || !((want[k] >> p) & 1)) {
                        ck_assert(got == 0);
                        continue;
                    }
                    SvOp save = ops[k];
                    ops[k].params[p] = save.params[p] + h;
                    double fp = obs_after(ops, pos[j], nq, obs[j], nt[j]);
                    ops[k].params[p] = save.params[p] - h;
                    double fm = obs_after(ops, pos[j], nq, obs[j], nt[j]);
                    ops[k] = save;
                    double ref = (fp - fm) / (2 * h);
                    ck_assert_msg(fabs(got - ref) < 1e-7,
                                  "trial %d obs %d gate %d (%s%s, %d ctrl) p %d: %.12g vs %.12g",
                                  trial, j, k, sv_gate_info(ops[k].gate)->name,
                                  ops[k].adjoint ? "^dag" : "", ops[k].nctrl, p, got, ref);
                }
        sv_free(&s);
    }
    /* errors */
    SvState s;
    sv_init(&s, 2);
    SvTerm t;
    memset(&t, 0, sizeof t);
    t.coeff = 1;
    t.z = 1;
    const SvTerm *tp = &t;
    int one = 1, bad = 3;
    double out[3];
    char err[200];
    SvOp op;
    memset(&op, 0, sizeof op);
    op.gate = SV_RX;
    op.nwires = 1;
    op.nparams = 1;
    SvAdjointSpec as = { &op, 1, NULL, 1, &tp, &one, &bad };
    ck_assert_int_eq(sv_adjoint(&s, &as, out, err, sizeof err), -1);
    ck_assert_str_eq(err, "adjoint: observable 0 is measured after 3 gates, but the circuit has 1");
    sv_free(&s);
}
END_TEST

static SvOp mkop(SvGate g, double t, int w0, int w1)
{
    SvOp o;
    memset(&o, 0, sizeof o);
    o.gate = g;
    const SvGateInfo *gi = sv_gate_info(g);
    o.nwires = gi->nwires;
    o.wires[0] = w0;
    o.wires[1] = w1;
    o.nparams = gi->nparams;
    o.params[0] = t;
    return o;
}

/* Cov(A, B) = <AB> - <A><B> for full matrices on a state (real part). */
static double cov(const cplx *psi, const cplx *A, const cplx *B, int D)
{
    cplx *AB = malloc((size_t)D * D * sizeof(cplx));
    matmul(A, B, AB, D);
    cplx v[MAXD], a[MAXD], b[MAXD];
    matvec(AB, psi, v, D);
    matvec(A, psi, a, D);
    matvec(B, psi, b, D);
    double r = creal(inner(psi, v, D)) - creal(inner(psi, a, D)) * creal(inner(psi, b, D));
    free(AB);
    return r;
}

START_TEST(test_metric_tensor)
{
    /* PennyLane's QNG tutorial circuit (tutorial_quantum_natural_gradient):
       fixed RY(pi/4, pi/3, pi/7), layer 0 = RZ(p0, 0) RZ(p1, 1), CNOTs,
       layer 1 = RY(p2, 1) RX(p3, 2), CNOTs; blocks from the definition */
    double p[4] = { 0.432, -0.123, 0.543, 0.233 };
    SvOp ops[12];
    int n = 0;
    ops[n++] = mkop(SV_RY, M_PI / 4, 0, 0);
    ops[n++] = mkop(SV_RY, M_PI / 3, 1, 0);
    ops[n++] = mkop(SV_RY, M_PI / 7, 2, 0);
    ops[n++] = mkop(SV_RZ, p[0], 0, 0);
    ops[n++] = mkop(SV_RZ, p[1], 1, 0);
    ops[n++] = mkop(SV_CNOT, 0, 0, 1);
    ops[n++] = mkop(SV_CNOT, 0, 1, 2);
    ops[n++] = mkop(SV_RY, p[2], 1, 0);
    ops[n++] = mkop(SV_RX, p[3], 2, 0);
    ops[n++] = mkop(SV_CNOT, 0, 0, 1);
    ops[n++] = mkop(SV_CNOT, 0, 1, 2);
    uint8_t train[12] = { 0, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0 };
    double g[16], gd[16];
    int L = 0;
    char err[200];
    ck_assert_msg(
        sv_metric_tensor(&(SvMetricSpec){ 3, ops, n, train, 0 }, g, &L, err, sizeof err) == 0, "%s",
        err);
    ck_assert_int_eq(L, 2);
    ck_assert_int_eq(
        sv_metric_tensor(&(SvMetricSpec){ 3, ops, n, train, 1 }, gd, NULL, err, sizeof err), 0);
    /* references: generators -Z/2 (RZ), -Y/2 (RY), -X/2 (RX) as full matrices */
    cplx Z0[64], Z1[64], Y1[64], X2[64];
    word_full(-0.5, 0, 1, 3, Z0);
    word_full(-0.5, 0, 2, 3, Z1);
    word_full(-0.5, 2, 2, 3, Y1);
    word_full(-0.5, 4, 0, 3, X2);
    SvState s;
    sv_init(&s, 3);
    for (int i = 0; i < 3; i++) sv_apply(&s, &ops[i], NULL, 0);
    double r00 = cov(s.amp, Z0, Z0, 8), r01 = cov(s.amp, Z0, Z1, 8), r11 = cov(s.amp, Z1, Z1, 8);
    for (int i = 3; i < 7; i++) sv_apply(&s, &ops[i], NULL, 0);
    double r22 = cov(s.amp, Y1, Y1, 8), r23 = cov(s.amp, Y1, X2, 8), r33 = cov(s.amp, X2, X2, 8);
    double want[16] = { r00, r01, 0, 0, r01, r11, 0, 0, 0, 0, r22, r23, 0, 0, r23, r33 };
    for (int i = 0; i < 16; i++) {
        ck_assert_msg(fabs(g[i] - want[i]) < 1e-12, "g[%d] = %.15g, want %.15g", i, g[i], want[i]);
        ck_assert(fabs(gd[i] - (i % 5 == 0 ? want[i] : 0)) < 1e-12);
    }
    /* known closed forms of the first block: Var(Z)/4 = sin^2(angle)/4 */
    ck_assert(fabs(g[0] - pow(sin(M_PI / 4), 2) / 4) < 1e-12);
    ck_assert(fabs(g[5] - pow(sin(M_PI / 3), 2) / 4) < 1e-12);
    sv_free(&s);

    /* Rot (and its adjoint) counts as RZ RY RZ, U3 as PhaseShift RY PhaseShift:
       the same tensor as the circuit written with the parts */
    for (int adj = 0; adj < 2; adj++) {
        SvOp a[4], b[8];
        a[0] = mkop(SV_HADAMARD, 0, 0, 0);
        a[1] = mkop(SV_ROT, 0, 0, 0);
        a[1].params[0] = 0.3;
        a[1].params[1] = -0.7;
        a[1].params[2] = 1.1;
        a[1].adjoint = adj;
        a[2] = mkop(SV_CNOT, 0, 0, 1);
        a[3] = mkop(SV_U3, 0.4, 1, 0);
        a[3].params[1] = 0.9;
        a[3].params[2] = -0.2;
        uint8_t ta[4] = { 0, 7, 0, 5 }; /* U3: theta and delta trainable */
        int m = 0;
        b[m++] = a[0];
        SvOp rz1 = mkop(SV_RZ, 0.3, 0, 0), ry = mkop(SV_RY, -0.7, 0, 0),
             rz2 = mkop(SV_RZ, 1.1, 0, 0);
        if (!adj) {
            b[m++] = rz1;
            b[m++] = ry;
            b[m++] = rz2;
        } else {
            rz1.adjoint = ry.adjoint = rz2.adjoint = 1;
            b[m++] = rz2;
            b[m++] = ry;
            b[m++] = rz1;
        }
        b[m++] = a[2];
        b[m++] = mkop(SV_PHASESHIFT, -0.2, 1, 0);
        b[m++] = mkop(SV_RY, 0.4, 1, 0);
        b[m++] = mkop(SV_PHASESHIFT, 0.9, 1, 0);
        uint8_t tb[8] = { 0, 1, 1, 1, 0, 1, 1, 0 };
        double ga[25], gb[25];
        int La, Lb;
        ck_assert_int_eq(
            sv_metric_tensor(&(SvMetricSpec){ 2, a, 4, ta, 0 }, ga, &La, err, sizeof err), 0);
        ck_assert_int_eq(
            sv_metric_tensor(&(SvMetricSpec){ 2, b, m, tb, 0 }, gb, &Lb, err, sizeof err), 0);
        ck_assert_int_eq(La, Lb);
        /* slots of a: Rot phi, theta, omega, then U3 theta, delta; of b the parts in
           circuit order: (adj: omega, theta, phi), delta, theta */
        int map_a_to_b[5];
        if (!adj) {
            int mm[5] = { 0, 1, 2, 4, 3 };
            memcpy(map_a_to_b, mm, sizeof mm);
        } else {
            int mm[5] = { 2, 1, 0, 4, 3 };
            memcpy(map_a_to_b, mm, sizeof mm);
        }
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < 5; j++)
                ck_assert_msg(fabs(ga[i * 5 + j] - gb[map_a_to_b[i] * 5 + map_a_to_b[j]]) < 1e-12,
                              "adj %d (%d, %d)", adj, i, j);
    }
}
END_TEST

static Suite *svmeas_suite(void)
{
    Suite *s = suite_create("svmeas");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_embed_matches_kron);
    tcase_add_test(tc, test_expval_var_apply);
    tcase_add_test(tc, test_lone_blocks);
    tcase_add_test(tc, test_threads_agree);
    tcase_add_test(tc, test_density_matrix);
    tcase_add_test(tc, test_known_entropies);
    tcase_add_test(tc, test_spectrum);
    tcase_add_test(tc, test_draws);
    tcase_add_test(tc, test_measure_post);
    tcase_add_test(tc, test_generators);
    tcase_add_test(tc, test_metric_block);
    tcase_add_test(tc, test_batch);
    tcase_add_test(tc, test_adjoint);
    tcase_add_test(tc, test_metric_tensor);
    tcase_add_test(tc, test_checks);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(svmeas_suite()); }
