/* kernels_block.c — the line kernels: 2x2, exchange and 4x4 jobs.
 *
 * A job with a target or control among bits 0 and 1 would walk runs of
 * one or two amplitudes (a loop per pair). Here the state is read as
 * lines of 4 amplitudes (64 bytes: one cache line, one AVX-512 register,
 * two AVX2 registers): bits 0 and 1 are lanes, the fixed bits
 * >= 2 pick the lines of a group (1, 2 or 4 lines: one per value of the
 * high targets, high controls at 1). Every output line is a sum of a few
 * input lines of its group, each permuted by a lane xor (the low targets)
 * and multiplied lane by lane by a coefficient vector; lanes whose low
 * controls are 0 get the identity. The vectors are built once per job
 * (the plan). Exchanges (X, CNOT, Toffoli, SWAP, ...) are lane selections
 * without arithmetic. AVX2 and AVX-512 versions take every such job (the
 * same loop serves high placements too); the portable C version takes
 * those with a fixed bit inside a line. The level comes from sv_level.
 * At AVX-512, a pair job whose coefficients are exactly 0 on a term's
 * real or imaginary part on every lane skips that term (RX, RY, Hadamard:
 * half the arithmetic), with the same bytes as the full sum (terms512).
 * Knows nothing of gate names; the job was validated above.
 */
#include "sv_impl.h"

#include <stdint.h>
#include <string.h>
#if SV_X86
#include <immintrin.h>
#endif

#define SV_INLINE static inline __attribute__((always_inline))

/* Software prefetch of a line the walk will reach (q, from WALK; the
   write hint becomes PREFETCHW only where the target has it). Measured on
   this machine: up to 2x faster on big states than the hardware
   prefetcher alone. */
#define PF(x) __builtin_prefetch((x), 1)
/* SWAP_PF: exchanges prefetch only where the walk steps a cursor (runs of
   8-64 KiB): elsewhere the hardware prefetcher keeps up with them and
   software prefetches made them up to 1.4x slower (measured). */

/* The shapes of a group: PAIR1 one line (both amplitudes of a pair in it,
   lane xor D apart), PAIR2 two lines (the pair's amplitudes in different
   lines, lane xor D apart, D may be 0), QUAD 4x4 with low target lanes D
   (4 >> popcount(D) lines). */
enum { SH_PAIR1, SH_PAIR2, SH_QUAD };

typedef struct Plan {
    /* per output line o and term k: lanes x (re, im) */
    double cr[4][4][8];  /* Re c, Re c */
    double ci[4][4][8];  /* -Im c, +Im c (the sign of i*i folded in) */
    long long idx[2][8]; /* exchanges, AVX-512: source double (permutex2var) */
    double msk[2][8];    /* exchanges, AVX2: sign bit set where the lane takes its partner */
    uint64_t toff[4][4]; /* C: the group's tuples, offsets in doubles */
    double mat[32];      /* C: the matrix (2x2 or 4x4, re/im interleaved) */
    int ntup;            /* C: tuples per group */
    double *amp;
    uint64_t fmask, cmask; /* line-index bits: fixed (high targets, high controls), controls */
    uint64_t total;        /* groups */
    uint64_t pfd;          /* prefetch distance, lines (see make_plan) */
    uint64_t ahead;        /* ... in groups, when the walk steps a cursor */
    int cursor;
    uint64_t loff[4];         /* the group's lines, in lines from its first */
    int m, pos[SV_MAX_WIRES]; /* fixed line-index bits, ascending */
    int shape, D, nb, nt, swap, level;
    int pat;  /* AVX-512 terms: the pattern of kept terms (PAT_*) */
    int live; /* exchanges, AVX2: the halves that change (bit h: lanes 2h, 2h+1) */
} Plan;

/* ---- the shapes' terms ------------------------------------------------ */

static inline int pc2(int x) { return (x & 1) + ((x >> 1) & 1); }

/* Lines and terms per output line of a shape. */
SV_INLINE int shape_nb(int shape, int D)
{
    return shape == SH_PAIR1 ? 1 : shape == SH_PAIR2 ? 2 : 4 >> pc2(D);
}
SV_INLINE int shape_nt(int shape) { return shape == SH_QUAD ? 4 : 2; }

/* Term k of output line o reads line term_line(...) permuted by lane xor
   term_del(...). QUAD: k = line * 2^|D| + i, the lane xor being i spread
   over the bits of D. */
SV_INLINE int term_line(int shape, int D, int o, int k)
{
    (void)o;
    if (shape == SH_PAIR1) return 0;
    if (shape == SH_PAIR2) return k;
    return k >> pc2(D);
}
SV_INLINE int term_del(int shape, int D, int o, int k)
{
    if (shape == SH_PAIR1) return k ? D : 0;
    if (shape == SH_PAIR2) return k == o ? 0 : D;
    int i = k & ((1 << pc2(D)) - 1);
    return D == 2 ? i << 1 : D == 0 ? 0 : i;
}

/* The term of an output line that reads line L with lane xor d (the
   inverse of term_line and term_del). */
SV_INLINE int term_k(int shape, int D, int L, int d)
{
    if (shape == SH_PAIR1) return d ? 1 : 0;
    if (shape == SH_PAIR2) return L;
    int i = D == 2 ? d >> 1 : d & D;
    return (L << pc2(D)) | i;
}

/* ---- the walk --------------------------------------------------------- */

/* Run the statements once per group g in [a, b) with p at the group's
   first line (doubles) and q at the first line of the group the walk
   reaches a prefetch distance later: free line indices map onto lines by
   inserting the fixed bits; consecutive groups are consecutive lines up
   to the lowest fixed bit, so the index is stepped, never recomputed.
   Three loops: one group at a time when bit 0 of the line index is fixed,
   runs of consecutive lines otherwise, and a second stepped index for q
   when a fixed bit makes runs of 8-64 KiB (see make_plan). */
#define WALK(P, a, b, p, q, ...)                                                    \
    do {                                                                            \
        const uint64_t F_ = (P)->fmask, C_ = (P)->cmask, D_ = 8 * (P)->pfd;         \
        double *const A_ = (P)->amp;                                                \
        uint64_t x_ = sv_expand((a), (P)->pos, (P)->m);                             \
        if ((P)->cursor) {                                                          \
            uint64_t y_ = sv_expand((a) + (P)->ahead, (P)->pos, (P)->m);            \
            for (uint64_t g_ = (a); g_ < (b); g_++) {                               \
                double *p = A_ + 8 * (x_ | C_);                                     \
                const double *q = (const double *)((uintptr_t)A_ + 64 * (y_ | C_)); \
                __VA_ARGS__                                                         \
                x_ = ((x_ | F_) + 1) & ~F_;                                         \
                y_ = ((y_ | F_) + 1) & ~F_;                                         \
            }                                                                       \
        } else if (F_ & 1) {                                                        \
            for (uint64_t g_ = (a); g_ < (b); g_++) {                               \
                double *p = A_ + 8 * (x_ | C_);                                     \
                const double *q = (const double *)((uintptr_t)p + D_);              \
                __VA_ARGS__                                                         \
                x_ = ((x_ | F_) + 1) & ~F_;                                         \
            }                                                                       \
        } else {                                                                    \
            const uint64_t R_ = F_ & (0 - F_); /* 0: one run */                     \
            for (uint64_t g_ = (a); g_ < (b);) {                                    \
                uint64_t n_ = (b)-g_;                                               \
                if (R_ && n_ > R_ - (g_ & (R_ - 1))) n_ = R_ - (g_ & (R_ - 1));     \
                double *p = A_ + 8 * (x_ | C_);                                     \
                for (uint64_t k_ = 0; k_ < n_; k_++, p += 8) {                      \
                    const double *q = (const double *)((uintptr_t)p + D_);          \
                    __VA_ARGS__                                                     \
                }                                                                   \
                x_ = (((x_ + n_ - 1) | F_) + 1) & ~F_;                              \
                g_ += n_;                                                           \
            }                                                                       \
        }                                                                           \
    } while (0)

/* ---- portable kernels ------------------------------------------------- */

/* The portable kernels do not use lanes: each group holds 1 or 2 tuples
   (the amplitudes one 2x2 or 4x4 application mixes) at fixed offsets
   from the group's first line, listed by the plan (the arithmetic:
   sv_mul2, sv_mul4). */

/* Why: every job in plain C; NT tuples per group, d amplitudes each
   (d = 2: a 2x2 or, with swap, an exchange; d = 4: a 4x4). */
SV_INLINE void tuples_c(const Plan *P, uint64_t a, uint64_t b, const int d, const int swap,
                        const int NT)
{
    uint64_t off[2][4];
    memcpy(off, P->toff, sizeof off);
    double m[32];
    memcpy(m, P->mat, sizeof m);
    WALK(P, a, b, p, q, {
        (void)q; /* no software prefetch at this level: the arithmetic is slow enough */
        for (int t = 0; t < NT; t++) {
            if (d == 4) {
                double *const v[4] = { p + off[t][0], p + off[t][1], p + off[t][2], p + off[t][3] };
                sv_mul4(m, v);
            } else if (swap) {
                double *x = p + off[t][0], *y = p + off[t][1];
                double r = x[0], i = x[1];
                x[0] = y[0];
                x[1] = y[1];
                y[0] = r;
                y[1] = i;
            } else {
                sv_mul2(m, p + off[t][0], p + off[t][1]);
            }
        }
    });
}

static void range_c(const Plan *P, uint64_t a, uint64_t b)
{
    sv_assert(P->ntup <= 2); /* the C level takes only jobs with a fixed bit 0 or 1 */
    int d = P->shape == SH_QUAD ? 4 : 2;
    switch (d * 100 + P->swap * 10 + P->ntup) {
    case 201: tuples_c(P, a, b, 2, 0, 1); return;
    case 202: tuples_c(P, a, b, 2, 0, 2); return;
    case 211: tuples_c(P, a, b, 2, 1, 1); return;
    case 212: tuples_c(P, a, b, 2, 1, 2); return;
    case 401: tuples_c(P, a, b, 4, 0, 1); return;
    case 402: tuples_c(P, a, b, 4, 0, 2); return;
    default: break;
    }
    sv_unreachable();
}

/* One instance per shape and lane xor (the valid ones). */
#define SV_SHAPES(F, ...)                                       \
    switch (P->shape * 4 + P->D) {                              \
    case SH_PAIR1 * 4 + 1: F(__VA_ARGS__, SH_PAIR1, 1); return; \
    case SH_PAIR1 * 4 + 2: F(__VA_ARGS__, SH_PAIR1, 2); return; \
    case SH_PAIR1 * 4 + 3: F(__VA_ARGS__, SH_PAIR1, 3); return; \
    case SH_PAIR2 * 4 + 0: F(__VA_ARGS__, SH_PAIR2, 0); return; \
    case SH_PAIR2 * 4 + 1: F(__VA_ARGS__, SH_PAIR2, 1); return; \
    case SH_PAIR2 * 4 + 2: F(__VA_ARGS__, SH_PAIR2, 2); return; \
    case SH_PAIR2 * 4 + 3: F(__VA_ARGS__, SH_PAIR2, 3); return; \
    case SH_QUAD * 4 + 0: F(__VA_ARGS__, SH_QUAD, 0); return;   \
    case SH_QUAD * 4 + 1: F(__VA_ARGS__, SH_QUAD, 1); return;   \
    case SH_QUAD * 4 + 2: F(__VA_ARGS__, SH_QUAD, 2); return;   \
    case SH_QUAD * 4 + 3: F(__VA_ARGS__, SH_QUAD, 3); return;   \
    default: break;                                             \
    }
/* Exchanges (AVX2): PAIR1 with D 1..3, PAIR2 with D 0..3; where the
   lane xor stays inside a half (D 0 or 1), also the halves that change
   (live: bit h for half h; a lane and its partner change together). */
#define SV_SWAPS(F, ...)                                         \
    switch ((P->nb * 4 + P->D) * 4 + (P->D < 2 ? P->live : 3)) { \
    case 5 * 4 + 1: F(__VA_ARGS__, 1, 1, 1); return;             \
    case 5 * 4 + 2: F(__VA_ARGS__, 1, 1, 2); return;             \
    case 5 * 4 + 3: F(__VA_ARGS__, 1, 1, 3); return;             \
    case 6 * 4 + 3: F(__VA_ARGS__, 1, 2, 3); return;             \
    case 7 * 4 + 3: F(__VA_ARGS__, 1, 3, 3); return;             \
    case 8 * 4 + 1: F(__VA_ARGS__, 2, 0, 1); return;             \
    case 8 * 4 + 2: F(__VA_ARGS__, 2, 0, 2); return;             \
    case 8 * 4 + 3: F(__VA_ARGS__, 2, 0, 3); return;             \
    case 9 * 4 + 1: F(__VA_ARGS__, 2, 1, 1); return;             \
    case 9 * 4 + 2: F(__VA_ARGS__, 2, 1, 2); return;             \
    case 9 * 4 + 3: F(__VA_ARGS__, 2, 1, 3); return;             \
    case 10 * 4 + 3: F(__VA_ARGS__, 2, 2, 3); return;            \
    case 11 * 4 + 3: F(__VA_ARGS__, 2, 3, 3); return;            \
    default: break;                                              \
    }

/* The terms a pattern keeps (AVX-512, pair shapes; pattern_ok decides):
   PAT_ALL every one, PAT_REAL the real parts of the coefficients only
   (Hadamard, RY, real matrices), PAT_RX the real part of a line's own
   term and the imaginary parts of the others (RX). */
enum { PAT_ALL, PAT_REAL, PAT_RX };
SV_INLINE int keep_re(int pat, int own, int k) { return pat != PAT_RX || k == own; }
SV_INLINE int keep_im(int pat, int own, int k)
{
    return pat == PAT_ALL || (pat == PAT_RX && k != own);
}

/* ---- AVX2 + FMA kernels: a line is two registers (lanes 0-1, 2-3) ----- */
#if SV_X86

#define SV_AVX2_INLINE SV_AVX2 SV_INLINE

/* The half h (lanes 2h, 2h+1) of a line permuted by lane xor d. */
SV_AVX2_INLINE __m256d xperm2(const __m256d *v, int d, int h)
{
    __m256d w = v[h ^ (d >> 1)];
    return (d & 1) ? _mm256_permute2f128_pd(w, w, 1) : w;
}

/* Why: one body for every shape; shape and D are constants in each
   instance, so the term loops unroll and the lane permutations are fixed. */
SV_AVX2_INLINE void terms_avx2(const Plan *P, uint64_t a, uint64_t b, const int shape, const int D)
{
    const int nb = shape_nb(shape, D), nt = shape_nt(shape);
    uint64_t loff[4];
    for (int l = 0; l < nb; l++) loff[l] = 8 * P->loff[l];
    __m256d cr[4][4][2], ci[4][4][2];
    for (int o = 0; o < nb; o++)
        for (int k = 0; k < nt; k++)
            for (int h = 0; h < 2; h++) {
                cr[o][k][h] = _mm256_loadu_pd(P->cr[o][k] + 4 * h);
                ci[o][k][h] = _mm256_loadu_pd(P->ci[o][k] + 4 * h);
            }
    WALK(P, a, b, p, q, {
        __m256d in[4][2], ins[4][2];
        for (int l = 0; l < nb; l++) {
            PF(q + loff[l]);
            for (int h = 0; h < 2; h++) {
                in[l][h] = _mm256_loadu_pd(p + loff[l] + 4 * h);
                ins[l][h] = _mm256_permute_pd(in[l][h], 5);
            }
        }
        for (int o = 0; o < nb; o++)
            for (int h = 0; h < 2; h++) {
                int L = term_line(shape, D, o, 0), d = term_del(shape, D, o, 0);
                __m256d acc = _mm256_mul_pd(cr[o][0][h], xperm2(in[L], d, h));
                acc = _mm256_fmadd_pd(ci[o][0][h], xperm2(ins[L], d, h), acc);
                for (int k = 1; k < nt; k++) {
                    L = term_line(shape, D, o, k);
                    d = term_del(shape, D, o, k);
                    acc = _mm256_fmadd_pd(cr[o][k][h], xperm2(in[L], d, h), acc);
                    acc = _mm256_fmadd_pd(ci[o][k][h], xperm2(ins[L], d, h), acc);
                }
                _mm256_storeu_pd(p + loff[o] + 4 * h, acc);
            }
    });
}

/* Why: exchanges: each output half is its own half or the partner's,
   per lane (blend); halves that do not change are neither read nor
   written (CNOT with control bit 1, target bit 0: one load, one lane
   permutation, one blend and one store per line). */
SV_AVX2_INLINE void swap_avx2(const Plan *P, uint64_t a, uint64_t b, const int nb, const int D,
                              const int live)
{
    const int pf = P->cursor; /* see SWAP_PF */
    uint64_t loff[2] = { 8 * P->loff[0], nb > 1 ? 8 * P->loff[1] : 0 };
    __m256d msk[2][2];
    for (int o = 0; o < 2; o++)
        for (int h = 0; h < 2; h++) msk[o][h] = _mm256_loadu_pd(P->msk[o] + 4 * h);
    WALK(P, a, b, p, q, {
        __m256d in[2][2];
        for (int l = 0; l < nb; l++) {
            if (pf) PF(q + loff[l]);
            for (int h = 0; h < 2; h++)
                if (live >> (h ^ (D >> 1)) & 1) in[l][h] = _mm256_loadu_pd(p + loff[l] + 4 * h);
        }
        for (int o = 0; o < nb; o++)
            for (int h = 0; h < 2; h++) {
                if (!(live >> h & 1)) continue;
                __m256d part = xperm2(in[nb == 1 ? 0 : 1 - o], D, h);
                _mm256_storeu_pd(p + loff[o] + 4 * h, _mm256_blendv_pd(in[o][h], part, msk[o][h]));
            }
    });
}

SV_AVX2 static void range_avx2(const Plan *P, uint64_t a, uint64_t b)
{
    if (P->swap) {
        SV_SWAPS(swap_avx2, P, a, b)
    } else {
        SV_SHAPES(terms_avx2, P, a, b)
    }
    sv_unreachable();
}

/* ---- AVX-512 kernels: a line is one register -------------------------- */

#define SV_AVX512_INLINE SV_AVX512 SV_INLINE

/* A line permuted by lane xor d (128-bit lanes: one complex each). */
SV_AVX512_INLINE __m512d xperm512(__m512d v, int d)
{
    switch (d) {
    case 1: return _mm512_shuffle_f64x2(v, v, 0xB1); /* 1 0 3 2 */
    case 2: return _mm512_shuffle_f64x2(v, v, 0x4E); /* 2 3 0 1 */
    case 3: return _mm512_shuffle_f64x2(v, v, 0x1B); /* 3 2 1 0 */
    default: return v;
    }
}

/* Why: the output lines of one group, from its input lines (in, and ins
   with re and im swapped), keeping the terms of pattern pat in the order
   of the full sum (a mul, then fmas). */
typedef struct Coef512 {
    __m512d r[4][4], i[4][4]; /* a plan's cr and ci, per output line and term */
} Coef512;

SV_AVX512_INLINE void lines512(__m512d *out, const __m512d *in, const __m512d *ins,
                               const Coef512 *c, const int shape, const int D, const int pat)
{
    const int nb = shape_nb(shape, D), nt = shape_nt(shape);
    for (int o = 0; o < nb; o++) {
        const int own = term_k(shape, D, o, 0);
        __m512d acc = _mm512_setzero_pd();
        int first = 1;
        for (int k = 0; k < nt; k++) {
            int L = term_line(shape, D, o, k), d = term_del(shape, D, o, k);
            if (keep_re(pat, own, k)) {
                __m512d x = xperm512(in[L], d);
                acc = first ? _mm512_mul_pd(c->r[o][k], x) : _mm512_fmadd_pd(c->r[o][k], x, acc);
                first = 0;
            }
            if (keep_im(pat, own, k)) {
                __m512d x = xperm512(ins[L], d);
                acc = first ? _mm512_mul_pd(c->i[o][k], x) : _mm512_fmadd_pd(c->i[o][k], x, acc);
                first = 0;
            }
        }
        out[o] = acc;
    }
}

/* Why: a pattern drops terms whose coefficient is exactly 0 on every
   lane: half the multiplies of RX, RY and Hadamard. Exact by
   construction: a dropped term adds a product 0 * x, which for a finite x
   is a zero, and adding a zero to a sum leaves its value as a real number
   unchanged, so each rounding step sees the same value and the kept
   terms' sum is the full sum except possibly in the sign of a zero
   result; for an x that is Inf or NaN the full sum is NaN. So when an
   output lane of the kept terms is zero, Inf or NaN (an Inf or NaN input
   reaches some output of its group through a kept nonzero coefficient:
   pattern_ok), the group is computed again with every term: the same
   bytes as PAT_ALL and as the AVX2 kernel in every case. */
SV_AVX512_INLINE void terms512(const Plan *P, uint64_t a, uint64_t b, const int pat,
                               const int shape, const int D)
{
    const int nb = shape_nb(shape, D), nt = shape_nt(shape);
    uint64_t loff[4];
    for (int l = 0; l < nb; l++) loff[l] = 8 * P->loff[l];
    Coef512 c;
    for (int o = 0; o < nb; o++)
        for (int k = 0; k < nt; k++) {
            c.r[o][k] = _mm512_loadu_pd(P->cr[o][k]);
            c.i[o][k] = _mm512_loadu_pd(P->ci[o][k]);
        }
    WALK(P, a, b, p, q, {
        __m512d in[4], ins[4], out[4];
        for (int l = 0; l < nb; l++) {
            PF(q + loff[l]);
            in[l] = _mm512_loadu_pd(p + loff[l]);
            ins[l] = _mm512_permute_pd(in[l], 0x55);
        }
        lines512(out, in, ins, &c, shape, D, pat);
        if (pat != PAT_ALL) {
            __mmask8 odd = 0;
            for (int o = 0; o < nb; o++) odd |= _mm512_fpclass_pd_mask(out[o], 0x9F);
            if (__builtin_expect(odd != 0, 0)) lines512(out, in, ins, &c, shape, D, PAT_ALL);
        }
        for (int o = 0; o < nb; o++) _mm512_storeu_pd(p + loff[o], out[o]);
    });
}

/* Why: an exchange inside a line is one lane permutation; across two
   lines one two-source permutation per output line. */
SV_AVX512 static void swap512(const Plan *P, uint64_t a, uint64_t b)
{
    const __m512i i0 = _mm512_loadu_si512(P->idx[0]), i1 = _mm512_loadu_si512(P->idx[1]);
    const uint64_t l0 = 8 * P->loff[0];
    const int pf = P->cursor; /* see SWAP_PF */
    if (P->nb == 1) {
        WALK(P, a, b, p, q, {
            if (pf) PF(q + l0);
            __m512d v = _mm512_loadu_pd(p + l0);
            _mm512_storeu_pd(p + l0, _mm512_permutexvar_pd(i0, v));
        });
        return;
    }
    const uint64_t l1 = 8 * P->loff[1];
    WALK(P, a, b, p, q, {
        if (pf) {
            PF(q + l0);
            PF(q + l1);
        }
        __m512d v = _mm512_loadu_pd(p + l0), w = _mm512_loadu_pd(p + l1);
        _mm512_storeu_pd(p + l0, _mm512_permutex2var_pd(v, i0, w));
        _mm512_storeu_pd(p + l1, _mm512_permutex2var_pd(v, i1, w));
    });
}

SV_AVX512 static void range512(const Plan *P, uint64_t a, uint64_t b)
{
    if (P->swap) {
        swap512(P, a, b);
        return;
    }
    if (P->pat == PAT_REAL) {
        SV_SHAPES(terms512, P, a, b, PAT_REAL)
    } else if (P->pat == PAT_RX) {
        SV_SHAPES(terms512, P, a, b, PAT_RX)
    } else {
        SV_SHAPES(terms512, P, a, b, PAT_ALL)
    }
    sv_unreachable();
}
#endif

/* ---- the plan --------------------------------------------------------- */

static void plan_tuples(Plan *P, const SvJob *j, const int *line, uint64_t Lf, uint64_t Lc);
static void plan_swap(Plan *P, const int (*row)[4], const int *line);
static void plan_coeffs(Plan *P, const SvJob *j, const int (*row)[4], const int *line);
static int pattern_ok(const Plan *P, int pat);

/* Why: everything about a job's low bits is decided here, once per job,
   and only what the level's kernels read: which lines form a group,
   which lanes are rows of the matrix (the others are untouched), and the
   coefficient of every term on every lane, the lane selections of an
   exchange, or the tuples of the portable kernels. */
static void make_plan(Plan *P, const SvJob *j, uint64_t dim, int level)
{
    int d = j->kind == SVJ_QUAD ? 4 : 2;
    const uint64_t *o = j->off;
    uint64_t Lc = j->cm & 3, Lt = 0, Lf = 0;
    for (int r = 0; r < d; r++) Lt |= o[r] & 3;
    P->amp = j->amp;
    P->level = level;
    P->m = 0;
    P->fmask = 0;
    for (int k = 0; k < j->m; k++) {
        if (j->pos[k] < 2) {
            Lf |= (uint64_t)1 << j->pos[k];
            continue;
        }
        P->pos[P->m++] = j->pos[k] - 2;
        P->fmask |= (uint64_t)1 << (j->pos[k] - 2);
    }
    uint64_t Lz = Lf & ~Lt & ~Lc; /* fixed low bits that stay 0 */
    P->cmask = j->cm >> 2;
    P->total = (dim >> 2) >> P->m;
    /* Prefetch 128 lines (8 KiB) ahead: exact when the fixed line bits
       are below 7 (their pattern repeats within 128 lines), and at most
       1/32 of the prefetches land in a skipped run when they are above
       10. A fixed bit in between skips runs of 8-64 KiB, where 8 KiB
       ahead often lands in a skipped run (a line fetched, never used):
       there the walk steps a second index, 128 lines of groups ahead.
       States under 16 MiB stay in the caches between gates: no prefetch
       (a distance of 0 is the line being read) and no second index. */
    int far = dim >= ((uint64_t)1 << 20);
    P->pfd = far ? 128 : 0;
    P->cursor = far && (P->fmask & 0x780) != 0;
    int line[4];
    P->nb = 0;
    for (int r = 0; r < d; r++) {
        uint64_t h = o[r] >> 2;
        int l = 0;
        while (l < P->nb && P->loff[l] != h) l++;
        if (l == P->nb) P->loff[P->nb++] = h;
        line[r] = l;
    }
    P->swap = j->kind == SVJ_SWAP;
    if (d == 4) {
        P->shape = SH_QUAD;
        P->D = (int)Lt;
    } else {
        P->shape = P->nb == 1 ? SH_PAIR1 : SH_PAIR2;
        P->D = (int)((o[0] ^ o[1]) & 3);
    }
    P->nt = shape_nt(P->shape);
    sv_assert(P->nb == shape_nb(P->shape, P->D));
    P->ahead = 128 / (uint64_t)P->nb;
    if (level == SV_SIMD_C) {
        plan_tuples(P, j, line, Lf, Lc);
        return;
    }
    /* the row of each lane of each output line (-1: untouched) */
    int rowof[16], row[4][4];
    for (int i = 0; i < 16; i++) rowof[i] = -1;
    for (int r = 0; r < d; r++) rowof[4 * line[r] + (int)(o[r] & 3)] = r;
    for (int ol = 0; ol < P->nb; ol++)
        for (int q = 0; q < 4; q++)
            row[ol][q] = ((uint64_t)q & Lc) == Lc && ((uint64_t)q & Lz) == 0
                             ? rowof[4 * ol + (int)((uint64_t)q & Lt)]
                             : -1;
    P->pat = PAT_ALL;
    if (P->swap) {
        plan_swap(P, row, line);
        return;
    }
    plan_coeffs(P, j, row, line);
    if (level >= SV_SIMD_AVX512 && P->shape != SH_QUAD)
        P->pat = pattern_ok(P, PAT_REAL) ? PAT_REAL : pattern_ok(P, PAT_RX) ? PAT_RX : PAT_ALL;
}

/* The portable kernels' tuples: one per value of the free lane bits (Lf:
   the fixed low bits, Lc: the low controls), the matrix beside them. */
static void plan_tuples(Plan *P, const SvJob *j, const int *line, uint64_t Lf, uint64_t Lc)
{
    int d = j->kind == SVJ_QUAD ? 4 : 2;
    const uint64_t *o = j->off;
    if (P->swap)
        memset(P->mat, 0, sizeof P->mat); /* an exchange has none */
    else
        memcpy(P->mat, j->mat, sizeof P->mat);
    P->ntup = 0;
    for (uint64_t f = 0; f < 4; f++) {
        if (f & Lf) continue;
        for (int r = 0; r < d; r++)
            P->toff[P->ntup][r] = 8 * P->loff[line[r]] + 2 * (f | (o[r] & 3) | Lc);
        P->ntup++;
    }
}

/* An exchange's lane selections: a row lane takes its partner, the other
   row, lane xor D (row[ol][q]: the row of lane q of output line ol, -1
   untouched). */
static void plan_swap(Plan *P, const int (*row)[4], const int *line)
{
    P->live = 0;
    for (int ol = 0; ol < P->nb; ol++)
        for (int q = 0; q < 4; q++) {
            int r = row[ol][q], L = r < 0 ? ol : line[1 - r], sq = r < 0 ? q : q ^ P->D;
            if (r >= 0) P->live |= 1 << (q >> 1);
            for (int h = 0; h < 2; h++) {
                P->idx[ol][2 * q + h] = (P->nb == 1 ? 0 : 8 * L) + 2 * sq + h;
                P->msk[ol][2 * q + h] = r < 0 ? 0.0 : -0.0; /* sign bit: blendv takes the partner */
            }
        }
    sv_assert(P->live != 0);
}

/* The coefficient of every term on every lane of every output line (an
   untouched lane: 1 on its own term). */
static void plan_coeffs(Plan *P, const SvJob *j, const int (*row)[4], const int *line)
{
    int d = j->kind == SVJ_QUAD ? 4 : 2;
    const uint64_t *o = j->off;
    for (int ol = 0; ol < P->nb; ol++) {
        for (int k = 0; k < P->nt; k++)
            for (int e = 0; e < 8; e++) P->cr[ol][k][e] = P->ci[ol][k][e] = 0;
        for (int q = 0; q < 4; q++) {
            int r = row[ol][q];
            if (r < 0) {
                int k = term_k(P->shape, P->D, ol, 0);
                P->cr[ol][k][2 * q] = P->cr[ol][k][2 * q + 1] = 1;
                continue;
            }
            for (int c = 0; c < d; c++) {
                int k = term_k(P->shape, P->D, line[c], (int)((o[r] ^ o[c]) & 3));
                double re = j->mat[2 * (r * d + c)], im = j->mat[2 * (r * d + c) + 1];
                P->cr[ol][k][2 * q] = P->cr[ol][k][2 * q + 1] = re;
                P->ci[ol][k][2 * q] = -im;
                P->ci[ol][k][2 * q + 1] = im;
            }
        }
    }
}

/* Whether pattern pat drops only terms whose coefficient is 0 on every
   lane, and keeps for every input lane (of every line of the group) a
   term with a nonzero coefficient: then a nonzero, finite output of the
   kept terms is the full sum's bytes (see terms512). */
static int pattern_ok(const Plan *P, int pat)
{
    int reach[4][4] = { { 0 } };
    for (int o = 0; o < P->nb; o++) {
        const int own = term_k(P->shape, P->D, o, 0);
        for (int k = 0; k < P->nt; k++) {
            int L = term_line(P->shape, P->D, o, k), d = term_del(P->shape, P->D, o, k);
            for (int q = 0; q < 4; q++) {
                const double *r = P->cr[o][k] + 2 * q, *i = P->ci[o][k] + 2 * q;
                int kr = keep_re(pat, own, k), ki = keep_im(pat, own, k);
                if ((!kr && (r[0] != 0 || r[1] != 0)) || (!ki && (i[0] != 0 || i[1] != 0)))
                    return 0;
                if ((kr && r[0] != 0 && r[1] != 0) || (ki && i[0] != 0 && i[1] != 0))
                    reach[L][q ^ d] = 1;
            }
        }
    }
    for (int L = 0; L < P->nb; L++)
        for (int q = 0; q < 4; q++)
            if (!reach[L][q]) return 0;
    return 1;
}

/* The team calls this once per part. */
static void blk_part(void *ctx, int part, int nparts)
{
    const Plan *P = ctx;
    uint64_t a, b;
    sv_slice(P->total, part, nparts, &a, &b);
    if (b <= a) return;
#if SV_X86
    if (P->level >= SV_SIMD_AVX512) {
        range512(P, a, b);
        return;
    }
    if (P->level >= SV_SIMD_AVX2) {
        range_avx2(P, a, b);
        return;
    }
#endif
    range_c(P, a, b);
}

/* Why: the dispatcher's pair, exchange and 4x4 jobs come here first.
   With AVX2 or AVX-512 the line kernels take them all (one loop for
   every placement; with the prefetches it matched or beat the two-stream
   loops they replaced, measured on this machine); the portable level
   takes only those with a fixed bit inside a line, the rest keep the
   stream kernels of kernels.c. */
int sv_blk_run(const SvState *s, const SvJob *j, int level)
{
    if (s->dim < 4 || j->m < 1) return 0;
    int low = j->pos[0];
    if (low >= 2 && level == SV_SIMD_C) return 0;
    Plan P;
    make_plan(&P, j, s->dim, level);
    if (P.total) sv_parallel(s, blk_part, &P);
    return 1;
}
