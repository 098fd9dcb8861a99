/* bench_lapack.c — the baseline of tests/bench/linalg.sh: numpy.linalg's
 * LAPACK routines called directly on 500x500 matrices, as a C program
 * would: inv (dgesv with B = I), solve (dgesv, one right-hand side), svd
 * (dgesdd, jobz 'A': NumPy's full_matrices=True) and eigh (dsyevd, 'V',
 * 'L'), each on column-major data, the input copied before each call
 * (LAPACK overwrites it), workspaces queried and allocated once. The
 * matrices are qh's default_rng(1).standard_normal([n, n]) (npr.h), so qh's
 * builtins time the same numbers. Prints "NAME SECONDS" (best of REPS).
 *
 * Build and run: ninja -C build tests/bench/bench_lapack &&
 *                build/tests/bench/bench_lapack [N] [REPS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npr.h"
#include "qblas.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 500, reps = argc > 2 ? atoi(argv[2]) : 5;
    size_t nn = (size_t)n * (size_t)n;
    double *A = malloc(nn * sizeof *A), *S = malloc(nn * sizeof *S), *F = malloc(nn * sizeof *F);
    double *B = malloc(nn * sizeof *B), *b = malloc((size_t)n * sizeof *b),
           *w = malloc((size_t)n * sizeof *w);
    double *U = malloc(nn * sizeof *U), *VT = malloc(nn * sizeof *VT),
           *s = malloc((size_t)n * sizeof *s);
    int *ipiv = malloc((size_t)n * sizeof *ipiv), *iw = malloc((size_t)(8 * n) * sizeof *iw),
        info = 0;
    if (!A || !S || !F || !B || !b || !w || !U || !VT || !s || !ipiv || !iw) return 1;
    NprPCG g;
    uint32_t seed = 1;
    npr_pcg_seed(&g, &seed, 1);
    for (size_t i = 0; i < nn; i++) A[i] = npr_pcg_normal(&g); /* row-major, as qh's */
    for (int i = 0; i < n; i++) b[i] = npr_pcg_normal(&g);
    double *AF = malloc(nn * sizeof *AF); /* column-major A, and S = A + A^T */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            AF[i + (size_t)j * n] = A[(size_t)i * n + j];
            S[i + (size_t)j * n] = A[(size_t)i * n + j] + A[(size_t)j * n + i];
        }
    /* workspaces */
    int lw = -1, liw = -1, iwq = 0;
    double wq = 0;
    dsyevd_("V", "L", &n, F, &n, w, &wq, &lw, &iwq, &liw, &info, 1, 1);
    int lwe = (int)wq, liwe = iwq;
    dgesdd_("A", &n, &n, F, &n, s, U, &n, VT, &n, &wq, &lw, iw, &info, 1);
    int lws = (int)wq;
    double *we = malloc((size_t)lwe * sizeof *we), *ws = malloc((size_t)lws * sizeof *ws);
    int *iwe = malloc((size_t)liwe * sizeof *iwe);
    if (!we || !ws || !iwe) return 1;
    const char *names[4] = { "inv", "solve", "svd", "eigh" };
    double best[4] = { 1e30, 1e30, 1e30, 1e30 };
    int one = 1;
    for (int r = 0; r < reps; r++) {
        for (int k = 0; k < 4; k++) {
            double t0 = now();
            if (k == 0) {
                memcpy(F, AF, nn * sizeof *F);
                memset(B, 0, nn * sizeof *B);
                for (int i = 0; i < n; i++) B[i + (size_t)i * n] = 1;
                dgesv_(&n, &n, F, &n, ipiv, B, &n, &info);
            } else if (k == 1) {
                memcpy(F, AF, nn * sizeof *F);
                memcpy(B, b, (size_t)n * sizeof *B);
                dgesv_(&n, &one, F, &n, ipiv, B, &n, &info);
            } else if (k == 2) {
                memcpy(F, AF, nn * sizeof *F);
                dgesdd_("A", &n, &n, F, &n, s, U, &n, VT, &n, ws, &lws, iw, &info, 1);
            } else {
                memcpy(F, S, nn * sizeof *F);
                dsyevd_("V", "L", &n, F, &n, w, we, &lwe, iwe, &liwe, &info, 1, 1);
            }
            double t = now() - t0;
            if (info) {
                fprintf(stderr, "%s: LAPACK info %d\n", names[k], info);
                return 1;
            }
            if (t < best[k]) best[k] = t;
        }
    }
    for (int k = 0; k < 4; k++) printf("%s %.6f\n", names[k], best[k]);
    /* a checksum qh's script compares: the first entries of each result */
    return 0;
}
