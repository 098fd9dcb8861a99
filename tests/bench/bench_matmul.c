/* bench_matmul.c — measures what the array room adds on top of BLAS: times
 * ar_matmul (allocation of the result + dgemm + free) against calling
 * cblas_dgemm directly into a preallocated matrix, in the same process,
 * with the same thread count, for 1000x1000 (throughput) and 200x200
 * (where per-call overhead shows). Best of several repetitions, runs
 * interleaved so both see the same machine state. Goal: ratio >= 0.95.
 * Knows only array.h and cblas; leaves OPENBLAS_CORETYPE etc. as set.
 *
 * Build and run: ninja -C build tests/bench/bench_matmul &&
 *                build/tests/bench/bench_matmul */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cblas.h>

#include "array.h"

/* Why: a monotonic wall clock; BLAS threads make CPU time meaningless. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Why: one size at one thread count: best times of both ways, printed as
 * GFLOP/s and the ratio ar / direct. Returns 0 if the results agree. */
static int bench(size_t n, int reps, int threads)
{
    char err[AR_ERRLEN];
    Rng rng;
    rng_seed(&rng, 1234);
    size_t sh[2] = { n, n };
    Array *a = ar_randn(2, sh, &rng, err), *b = ar_randn(2, sh, &rng, err);
    double *c = aligned_alloc(64, ((n * n * sizeof(double)) + 63) / 64 * 64);
    if (!a || !b || !c) {
        fprintf(stderr, "allocation failed\n");
        return 1;
    }
    ar_set_blas_threads(threads);
    const double *A = ar_f64_ro(a), *B = ar_f64_ro(b);
    int N = (int)n;
    double best_ar = INFINITY, best_direct = INFINITY, maxdiff = 0;
    ArScalar s;
    for (int r = -2; r < reps; r++) { /* two warm-up rounds */
        double t0 = now();
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0, A, N, B, N, 0.0, c, N);
        double t1 = now();
        Array *o = NULL;
        if (ar_matmul(a, b, &o, &s, err) != AR_ARRAY) {
            fprintf(stderr, "ar_matmul: %s\n", err);
            return 1;
        }
        if (r == reps - 1) {
            const double *O = ar_f64_ro(o);
            for (size_t i = 0; i < n * n; i++)
                if (fabs(O[i] - c[i]) > maxdiff) maxdiff = fabs(O[i] - c[i]);
        }
        ar_free(o);
        double t2 = now();
        if (r >= 0) {
            if (t1 - t0 < best_direct) best_direct = t1 - t0;
            if (t2 - t1 < best_ar) best_ar = t2 - t1;
        }
    }
    double flop = 2.0 * (double)n * (double)n * (double)n;
    printf("%5zu x %-5zu threads %2d  direct %8.2f GFLOP/s (%9.3f ms)  ar %8.2f GFLOP/s "
           "(%9.3f ms)  ratio ar/direct %.3f  max|diff| %g\n",
           n, n, threads, flop / best_direct * 1e-9, best_direct * 1e3, flop / best_ar * 1e-9,
           best_ar * 1e3, best_direct / best_ar, maxdiff);
    ar_free(a);
    ar_free(b);
    free(c);
    return maxdiff != 0;
}

int main(void)
{
    int def = ar_blas_threads();
    const char *ct = getenv("OPENBLAS_CORETYPE");
    printf("OpenBLAS default threads: %d; OPENBLAS_CORETYPE=%s; config: %s\n", def,
           ct ? ct : "(unset)", openblas_get_config());
    int bad = 0;
    bad |= bench(1000, 15, def);
    bad |= bench(1000, 8, 1);
    bad |= bench(200, 300, def);
    bad |= bench(200, 300, 1);
    ar_set_blas_threads(def);
    return bad;
}
