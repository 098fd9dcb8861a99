/* dense_ref.h — the dense references the simulator tests share (test_sv.c,
 * test_svmeas.c, test_dm.c): operators embedded into the full 2^n space by
 * index arithmetic, products, random states, unitaries, isometries and
 * wires from a seeded Rng, and the Check runner. Written independently of
 * the simulators (plain loops, no BLAS/LAPACK). Header-only (static
 * inline).
 */
#ifndef QH_TEST_DENSE_REF_H
#define QH_TEST_DENSE_REF_H

#include <check.h>
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sv.h" /* cplx, Rng */

/* The Pauli matrices. */
static const cplx P_I[4] = { 1, 0, 0, 1 };
static const cplx P_X[4] = { 0, 1, 1, 0 };
static const cplx P_Y[4] = { 0, -I, I, 0 };
static const cplx P_Z[4] = { 1, 0, 0, -1 };

/* Full 2^nq operator of u acting on wires aw[0..na) (aw[0] = MSB of u):
   entry (r, c) is u[a(r)][a(c)] when r and c agree off the wires. */
static inline void embed(const cplx *u, const int *aw, int na, int nq, cplx *full)
{
    int D = 1 << nq, d = 1 << na;
    uint64_t amask = 0;
    for (int i = 0; i < na; i++) amask |= (uint64_t)1 << (nq - 1 - aw[i]);
    for (int r = 0; r < D; r++)
        for (int c = 0; c < D; c++) {
            cplx v = 0;
            if (((uint64_t)r & ~amask) == ((uint64_t)c & ~amask)) {
                int sr = 0, sc = 0;
                for (int i = 0; i < na; i++) {
                    sr = (sr << 1) | ((r >> (nq - 1 - aw[i])) & 1);
                    sc = (sc << 1) | ((c >> (nq - 1 - aw[i])) & 1);
                }
                v = u[sr * d + sc];
            }
            full[r * D + c] = v;
        }
}

/* c = a (x) b */
static inline void kron(const cplx *a, int da, const cplx *b, int db, cplx *c)
{
    int d = da * db;
    for (int i = 0; i < da; i++)
        for (int j = 0; j < da; j++)
            for (int k = 0; k < db; k++)
                for (int l = 0; l < db; l++)
                    c[(i * db + k) * d + (j * db + l)] = a[i * da + j] * b[k * db + l];
}

/* c = a b (d x d); c may be a or b. */
static inline void matmul(const cplx *a, const cplx *b, cplx *c, int d)
{
    cplx *t = malloc((size_t)d * d * sizeof(cplx));
    ck_assert(t);
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            cplx s = 0;
            for (int q = 0; q < d; q++) s += a[i * d + q] * b[q * d + j];
            t[i * d + j] = s;
        }
    memcpy(c, t, (size_t)d * d * sizeof(cplx));
    free(t);
}

/* out = a v */
static inline void matvec(const cplx *a, const cplx *v, cplx *out, int d)
{
    for (int i = 0; i < d; i++) {
        cplx s = 0;
        for (int q = 0; q < d; q++) s += a[i * d + q] * v[q];
        out[i] = s;
    }
}

/* out = a^dagger (out must not be a) */
static inline void dagger(const cplx *a, cplx *out, int d)
{
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) out[j * d + i] = conj(a[i * d + j]);
}

/* max |a - b|; NaN anywhere counts as a difference (never passes). */
static inline double maxdiff(const cplx *a, const cplx *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double e = cabs(a[i] - b[i]);
        if (!(e <= m)) m = e;
    }
    return m;
}

/* A random normalised state (complex Gaussian entries). */
static inline void random_state(cplx *psi, size_t dim, Rng *r)
{
    double n = 0;
    for (size_t i = 0; i < dim; i++) {
        psi[i] = rng_normal(r) + I * rng_normal(r);
        n += creal(psi[i] * conj(psi[i]));
    }
    for (size_t i = 0; i < dim; i++) psi[i] /= sqrt(n);
}

/* Orthonormal columns (Gram-Schmidt) of a random complex Gaussian rows x cols
   matrix (cols <= rows). */
static inline void random_isometry(cplx *v, int rows, int cols, Rng *r)
{
    for (int i = 0; i < rows * cols; i++) v[i] = rng_normal(r) + I * rng_normal(r);
    for (int c = 0; c < cols; c++) {
        for (int p = 0; p < c; p++) {
            cplx dot = 0;
            for (int i = 0; i < rows; i++) dot += conj(v[i * cols + p]) * v[i * cols + c];
            for (int i = 0; i < rows; i++) v[i * cols + c] -= dot * v[i * cols + p];
        }
        double n = 0;
        for (int i = 0; i < rows; i++) n += creal(v[i * cols + c] * conj(v[i * cols + c]));
        for (int i = 0; i < rows; i++) v[i * cols + c] /= sqrt(n);
    }
}

/* A random d x d unitary. */
static inline void random_unitary(cplx *u, int d, Rng *r) { random_isometry(u, d, d, r); }

/* k distinct random wires of nq (nq <= 64), from a shuffled permutation. */
static inline void random_wires(int *w, int k, int nq, Rng *r)
{
    int perm[64];
    for (int i = 0; i < nq; i++) perm[i] = i;
    for (int i = nq - 1; i > 0; i--) {
        int j = (int)rng_below(r, (uint64_t)i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    memcpy(w, perm, (size_t)k * sizeof(int));
}

/* main() of a test program: runs the suite, exit status by its failures. */
static inline int run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
