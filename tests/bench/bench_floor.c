/* bench_floor.c — the gate kernels on a chunk of a fused pass against the
 * arithmetic the exact mode cannot avoid, measured in the same run.
 *
 * A fused pass (fuse.c) runs every gate of the pass on one chunk of the
 * state that the caches hold (2^14 amplitudes by default), so there a
 * gate costs what its kernel computes, not what memory moves. The exact
 * mode runs each gate's own arithmetic (a product, then fused
 * multiply-adds, per output lane): no gate is multiplied into another,
 * so that no byte differs from the gate-by-gate path. Its floor, per
 * amplitude, on this machine, is what these loops take on the same
 * buffer, with the same instruction set as the kernels (AVX-512 where the
 * CPU has it, else AVX2):
 *   scale   v = s * v                      a load, one product, a store
 *   real2   x' = c*x + d*y, y' = e*x + f*y a 2x2 with real coefficients on
 *           two lines (one product and one multiply-add per output):
 *           the least any 2x2 pair gate computes exactly (Hadamard, RY,
 *           RX with its imaginary off-diagonal)
 *   real2c  real2 and the test an exact kernel that skips zero terms must
 *           make (terms512: an output lane that is zero, Inf or NaN is
 *           computed again with every term): its floor (Hadamard, RX;
 *           only the AVX-512 kernels skip terms: with AVX2 they run the
 *           full complex 2x2, and cplx2 is their floor)
 *   cplx2   the complex 2x2 (a product and three multiply-adds per
 *           output, re and im swapped twice): a general one (Rot)
 *   phase   v = p * v, complex p per lane (a product, a multiply-add with
 *           re and im swapped): a diagonal gate (RZ)
 * against qh's kernels (sv_apply) on the same wire: Hadamard, RX, Rot, RZ,
 * CNOT. Prints ns per amplitude (best of R passes) and each kernel's
 * ratio to its floor; a kernel at about 1.0 leaves nothing to gain in the
 * exact mode except by moving fewer bytes between passes.
 *
 *   bench_floor [QUBITS (14)] [REPS (7)]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sv.h"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { F_SCALE, F_REAL2, F_REAL2C, F_CPLX2, F_PHASE, NFLOOR };
static const char *floor_name[NFLOOR] = { "scale", "real2", "real2c", "cplx2", "phase" };
static long redone; /* groups the checked floor computed again (none: the values are regular) */

#if HAVE_X86
/* n doubles at a (interleaved re, im), pairs of lines `half` doubles apart
   (the wire's bit), each loop as the kernels would write it. */
__attribute__((target("avx512f,avx512dq"), noinline)) static void floor512(int f, double *a,
                                                                           size_t n, size_t half)
{
    const __m512d c = _mm512_set1_pd(0.7071067811865476), d = _mm512_set1_pd(-0.7071067811865475);
    const __m512d e = _mm512_set1_pd(0.31), g = _mm512_set1_pd(0.95);
    for (size_t b = 0; b < n; b += 2 * half)
        for (size_t i = b; i < b + half; i += 8) {
            __m512d x = _mm512_loadu_pd(a + i), y = _mm512_loadu_pd(a + i + half);
            switch (f) {
            case F_SCALE:
                _mm512_storeu_pd(a + i, _mm512_mul_pd(c, x));
                _mm512_storeu_pd(a + i + half, _mm512_mul_pd(c, y));
                break;
            case F_REAL2:
                _mm512_storeu_pd(a + i, _mm512_fmadd_pd(d, y, _mm512_mul_pd(c, x)));
                _mm512_storeu_pd(a + i + half, _mm512_fmadd_pd(g, y, _mm512_mul_pd(e, x)));
                break;
            case F_REAL2C: {
                __m512d o = _mm512_fmadd_pd(d, y, _mm512_mul_pd(c, x));
                __m512d p = _mm512_fmadd_pd(g, y, _mm512_mul_pd(e, x));
                if (__builtin_expect(
                        (_mm512_fpclass_pd_mask(o, 0x9F) | _mm512_fpclass_pd_mask(p, 0x9F)) != 0,
                        0)) {
                    redone++;
                    o = _mm512_add_pd(o, x);
                }
                _mm512_storeu_pd(a + i, o);
                _mm512_storeu_pd(a + i + half, p);
                break;
            }
            case F_CPLX2: {
                __m512d xs = _mm512_permute_pd(x, 0x55), ys = _mm512_permute_pd(y, 0x55);
                __m512d o = _mm512_fmadd_pd(
                    g, ys, _mm512_fmadd_pd(c, y, _mm512_fmadd_pd(e, xs, _mm512_mul_pd(c, x))));
                __m512d p = _mm512_fmadd_pd(
                    e, ys, _mm512_fmadd_pd(d, y, _mm512_fmadd_pd(g, xs, _mm512_mul_pd(d, x))));
                _mm512_storeu_pd(a + i, o);
                _mm512_storeu_pd(a + i + half, p);
                break;
            }
            case F_PHASE:
                _mm512_storeu_pd(
                    a + i, _mm512_fmaddsub_pd(c, x, _mm512_mul_pd(e, _mm512_permute_pd(x, 0x55))));
                _mm512_storeu_pd(
                    a + i + half,
                    _mm512_fmaddsub_pd(g, y, _mm512_mul_pd(e, _mm512_permute_pd(y, 0x55))));
                break;
            default: abort();
            }
        }
}

__attribute__((target("avx2,fma"), noinline)) static void floor256(int f, double *a, size_t n,
                                                                   size_t half)
{
    const __m256d c = _mm256_set1_pd(0.7071067811865476), d = _mm256_set1_pd(-0.7071067811865475);
    const __m256d e = _mm256_set1_pd(0.31), g = _mm256_set1_pd(0.95);
    for (size_t b = 0; b < n; b += 2 * half)
        for (size_t i = b; i < b + half; i += 4) {
            __m256d x = _mm256_loadu_pd(a + i), y = _mm256_loadu_pd(a + i + half);
            switch (f) {
            case F_SCALE:
                _mm256_storeu_pd(a + i, _mm256_mul_pd(c, x));
                _mm256_storeu_pd(a + i + half, _mm256_mul_pd(c, y));
                break;
            case F_REAL2:
                _mm256_storeu_pd(a + i, _mm256_fmadd_pd(d, y, _mm256_mul_pd(c, x)));
                _mm256_storeu_pd(a + i + half, _mm256_fmadd_pd(g, y, _mm256_mul_pd(e, x)));
                break;
            case F_REAL2C: {
                __m256d o = _mm256_fmadd_pd(d, y, _mm256_mul_pd(c, x));
                __m256d p = _mm256_fmadd_pd(g, y, _mm256_mul_pd(e, x));
                __m256d z = _mm256_setzero_pd();
                if (__builtin_expect(
                        _mm256_movemask_pd(_mm256_or_pd(_mm256_cmp_pd(o, z, _CMP_EQ_OQ),
                                                        _mm256_cmp_pd(p, z, _CMP_EQ_OQ))) != 0,
                        0)) {
                    redone++;
                    o = _mm256_add_pd(o, x);
                }
                _mm256_storeu_pd(a + i, o);
                _mm256_storeu_pd(a + i + half, p);
                break;
            }
            case F_CPLX2: {
                __m256d xs = _mm256_permute_pd(x, 5), ys = _mm256_permute_pd(y, 5);
                __m256d o = _mm256_fmadd_pd(
                    g, ys, _mm256_fmadd_pd(c, y, _mm256_fmadd_pd(e, xs, _mm256_mul_pd(c, x))));
                __m256d p = _mm256_fmadd_pd(
                    e, ys, _mm256_fmadd_pd(d, y, _mm256_fmadd_pd(g, xs, _mm256_mul_pd(d, x))));
                _mm256_storeu_pd(a + i, o);
                _mm256_storeu_pd(a + i + half, p);
                break;
            }
            case F_PHASE:
                _mm256_storeu_pd(
                    a + i, _mm256_fmaddsub_pd(c, x, _mm256_mul_pd(e, _mm256_permute_pd(x, 5))));
                _mm256_storeu_pd(
                    a + i + half,
                    _mm256_fmaddsub_pd(g, y, _mm256_mul_pd(e, _mm256_permute_pd(y, 5))));
                break;
            default: abort();
            }
        }
}
#endif

/* Keeps the buffer's values bounded and nonzero between passes (the
   floors' coefficients are not unitary). */
static void refill(double *a, size_t n)
{
    for (size_t i = 0; i < n; i++) a[i] = 0.001 * (double)(1 + i % 13);
}

int main(int argc, char **argv)
{
    int nq = argc > 1 ? atoi(argv[1]) : 14, reps = argc > 2 ? atoi(argv[2]) : 7;
    if (nq < 6 || nq > 26 || reps < 1) {
        fprintf(stderr, "usage: bench_floor [QUBITS 6..26 (14)] [REPS (7)]\n");
        return 2;
    }
    int wire = nq / 2, level = sv_simd_level();
    size_t dim = (size_t)1 << nq, half = 2 * ((size_t)1 << (nq - 1 - wire));
    int inner = (int)((size_t)1 << (nq < 20 ? 20 - nq : 0)); /* passes per timing */
    double fl[NFLOOR];
#if HAVE_X86
    double *buf = aligned_alloc(64, 2 * dim * sizeof(double));
    if (!buf) return 1;
    for (int f = 0; f < NFLOOR; f++) {
        fl[f] = 1e30;
        for (int r = 0; r < reps; r++) {
            double el = 0;
            for (int k = 0; k < inner; k++) {
                if (k % 16 == 0) refill(buf, 2 * dim); /* 16 passes: no overflow, no subnormal */
                double t0 = now();
                if (level >= SV_SIMD_AVX512)
                    floor512(f, buf, 2 * dim, half);
                else
                    floor256(f, buf, 2 * dim, half);
                el += now() - t0;
            }
            double t = 1e9 * el / inner / (double)dim;
            if (t < fl[f]) fl[f] = t;
        }
    }
    free(buf);
#else
    for (int f = 0; f < NFLOOR; f++) fl[f] = 0;
#endif
    static const struct {
        SvGate g;
        int floor;
    } gates[] = { { SV_HADAMARD, F_REAL2C },
                  { SV_RX, F_REAL2C },
                  { SV_ROT, F_CPLX2 },
                  { SV_RZ, F_PHASE },
                  { SV_CNOT, F_SCALE } };
    SvState s;
    if (sv_init(&s, nq) != 0) return 1;
    printf("bench_floor: %d wires (%zu KiB), wire %d, %s, best of %d\n", nq, dim * 16 / 1024, wire,
           level >= SV_SIMD_AVX512 ? "AVX-512"
           : level >= SV_SIMD_AVX2 ? "AVX2"
                                   : "C",
           reps);
    for (int f = 0; f < NFLOOR; f++) printf("floor  %-8s %8.4f ns/amp\n", floor_name[f], fl[f]);
    char err[256];
    for (size_t k = 0; k < sizeof gates / sizeof gates[0]; k++) {
        SvOp op;
        memset(&op, 0, sizeof op);
        op.gate = gates[k].g;
        op.nwires = op.gate == SV_CNOT ? 2 : 1;
        op.wires[0] = wire;
        op.wires[1] = wire + 1;
        op.nparams = op.gate == SV_ROT ? 3 : op.gate == SV_HADAMARD || op.gate == SV_CNOT ? 0 : 1;
        op.params[0] = 0.3;
        op.params[1] = -0.4;
        op.params[2] = 1.1;
        double best = 1e30;
        for (int r = 0; r < reps; r++) {
            for (size_t i = 0; i < dim; i++)
                s.amp[i] = (0.001 * (double)(1 + i % 13)) * (1 + 0.5 * I);
            double t0 = now();
            for (int i = 0; i < inner; i++)
                if (sv_apply(&s, &op, err, sizeof err) != 0) {
                    fprintf(stderr, "bench_floor: %s\n", err);
                    return 1;
                }
            double t = 1e9 * (now() - t0) / inner / (double)dim;
            if (t < best) best = t;
        }
        int f = gates[k].floor;
        if (f == F_REAL2C && level < SV_SIMD_AVX512) f = F_CPLX2; /* AVX2 skips no term */
        printf("kernel %-8s %8.4f ns/amp  %.2f x %s\n", sv_gate_info(op.gate)->name, best,
               fl[f] > 0 ? best / fl[f] : 0.0, floor_name[f]);
    }
    if (redone) printf("(the checked floor computed %ld groups again)\n", redone);
    sv_free(&s);
    return 0;
}
