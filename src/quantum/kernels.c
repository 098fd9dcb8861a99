/* kernels.c — the instruction level, the stream kernels, and job dispatch.
 *
 * sv_job_run hands pair, exchange and 4x4 jobs to the line kernels
 * (kernels_block.c) when they take them (always with AVX2 or AVX-512);
 * the rest run here. Each kernel
 * here walks the "free" index space of a job (the basis indices with the
 * fixed bits removed) in runs of consecutive amplitudes: a run of length
 * 2^pos[0] maps to contiguous memory, so the inner loops are branch-free
 * over blocks (two streams lo/hi for a pair, four for a 4x4). Kinds: 2x2
 * on pairs, exchanges and 4x4 in portable C, dense 2^k, and diagonals (a
 * phase table applied to chunks of 8 amplitudes, AVX2 + FMA where the CPU
 * has it). Input was
 * validated above; nothing here knows gate names, the language, or where
 * the matrices came from.
 */
#include "sv_impl.h"
#include "opts.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#if SV_X86
#include <immintrin.h>
#endif

/* Why: the build is portable; the wide paths are chosen per CPU here,
   once per process (valgrind's CPU has no AVX-512, so under valgrind the
   AVX-512 kernels never run). QH_SIMD caps the level for the process. */
int sv_simd_level(void)
{
    static atomic_int cached = -1;
    int lv = atomic_load_explicit(&cached, memory_order_relaxed);
    if (lv >= 0) return lv;
    lv = SV_SIMD_C;
#if SV_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        lv = SV_SIMD_AVX2;
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
            lv = SV_SIMD_AVX512;
    }
#endif
    const char *env = getenv("QH_SIMD");
    static const char *const levels[] = { "c", "avx2", "avx512", NULL }; /* SV_SIMD_* order */
    int cap = env ? opt_choice(env, levels) : -1; /* the qh command refuses other values */
    if (cap >= 0 && cap < lv) lv = cap;
    atomic_store_explicit(&cached, lv, memory_order_relaxed);
    return lv;
}

int sv_level(const SvState *s)
{
    int lv = sv_simd_level();
    return s->simd < lv ? (s->simd < 0 ? 0 : s->simd) : lv;
}

/* ---- portable kernels ------------------------------------------------- */

/* Why: the general 1-qubit update over two contiguous streams. */
static void pair_run_c(double *restrict lo, double *restrict hi, uint64_t len, const double *m)
{
    for (uint64_t j = 0; j < len; j++) sv_mul2(m, lo + 2 * j, hi + 2 * j);
}

/* Why: X-like gates are exchanges of two streams, no arithmetic. A cache
   line of each stream is read whole before either is written: the
   compiler's own vectorised swap (32-byte steps, stores between loads)
   ran 4-5x slower than the bandwidth when the streams are 256 MiB or
   more apart (store/load address aliasing), this runs at the bandwidth. */
static void swap_run(double *restrict lo, double *restrict hi, uint64_t len)
{
    /* Runs of 16..128 pairs: the lo and hi halves are a few hundred bytes
       to 2 KiB apart and the hardware prefetcher follows them badly;
       asking for the lo half first makes the reads one sequential sweep
       (lo, then hi). Tuned on Zen 3 against the in-place scale. */
    if (len >= 16 && len <= 128)
        for (uint64_t o = 0; o < 2 * len; o += 8) __builtin_prefetch(lo + o);
    uint64_t j = 0;
    for (; j + 8 <= 2 * len; j += 8) {
        double a0 = lo[j], a1 = lo[j + 1], a2 = lo[j + 2], a3 = lo[j + 3];
        double a4 = lo[j + 4], a5 = lo[j + 5], a6 = lo[j + 6], a7 = lo[j + 7];
        double b0 = hi[j], b1 = hi[j + 1], b2 = hi[j + 2], b3 = hi[j + 3];
        double b4 = hi[j + 4], b5 = hi[j + 5], b6 = hi[j + 6], b7 = hi[j + 7];
        __asm__ volatile("" ::: "memory"); /* keep the loads before the stores */
        hi[j] = a0;
        hi[j + 1] = a1;
        hi[j + 2] = a2;
        hi[j + 3] = a3;
        hi[j + 4] = a4;
        hi[j + 5] = a5;
        hi[j + 6] = a6;
        hi[j + 7] = a7;
        lo[j] = b0;
        lo[j + 1] = b1;
        lo[j + 2] = b2;
        lo[j + 3] = b3;
        lo[j + 4] = b4;
        lo[j + 5] = b5;
        lo[j + 6] = b6;
        lo[j + 7] = b7;
    }
    for (; j < 2 * len; j++) {
        double t = lo[j];
        lo[j] = hi[j];
        hi[j] = t;
    }
}

/* Blocks of 2S amplitudes (lo S, hi S): 2x2 or exchange (m NULL). */
static void blocks_c(double *a, uint64_t nblk, uint64_t S, const double *m)
{
    for (uint64_t b = 0; b < nblk; b++) {
        double *l = a + 4 * S * b;
        if (m)
            pair_run_c(l, l + 2 * S, S, m);
        else
            swap_run(l, l + 2 * S, S);
    }
}


/* Why: a run of 4x4 updates where the wide path does not apply. */
static void quad_run_c(double *amp, const uint64_t *off, uint64_t base, uint64_t len,
                       const double *m)
{
    for (uint64_t j = 0; j < len; j++) {
        double *p[4];
        for (int c = 0; c < 4; c++) p[c] = amp + 2 * (base + off[c] + j);
        sv_mul4(m, p);
    }
}

/* ---- wide kernels (AVX2 + FMA) ---------------------------------------- */
#if SV_X86

/* Why: sums of |a|^2 feed probabilities and measurement. */
SV_AVX2 static double norm_avx2(const double *p, uint64_t n)
{
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    uint64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        __m256d x = _mm256_loadu_pd(p + 2 * j), y = _mm256_loadu_pd(p + 2 * j + 4);
        s0 = _mm256_fmadd_pd(x, x, s0);
        s1 = _mm256_fmadd_pd(y, y, s1);
    }
    double t[4];
    _mm256_storeu_pd(t, _mm256_add_pd(s0, s1));
    double s = (t[0] + t[1]) + (t[2] + t[3]);
    for (; j < n; j++) s += p[2 * j] * p[2 * j] + p[2 * j + 1] * p[2 * j + 1];
    return s;
}
#endif

/* ---- walkers ---------------------------------------------------------- */

/* Prefetch distance (doubles) for access patterns with gaps (a control on
   a low bit touches only some cache lines): the hardware prefetcher loses
   such streams; 2 KiB ahead is a whole number of periods of the pattern
   for runs up to 64 amplitudes, so the same lines are asked for early. */
#define SV_AHEAD 256

/* One run of a pair job starting at free index i (not past b). */
static inline uint64_t one_run(const SvJob *jb, uint64_t i, uint64_t b)
{
    uint64_t R = (uint64_t)1 << jb->pos[0];
    uint64_t len = R - (i & (R - 1));
    if (len > b - i) len = b - i;
    uint64_t base = sv_expand(i, jb->pos, jb->m) | jb->cm;
    double *lo = jb->amp + 2 * (base + jb->off[0]), *hi = jb->amp + 2 * (base + jb->off[1]);
    if (jb->kind == SVJ_SWAP)
        swap_run(lo, hi, len);
    else
        pair_run_c(lo, hi, len, jb->mat);
    return i + len;
}

/* Why: one loop shape for every pair-like job: runs of R = 2^pos[0]
   consecutive free indices are contiguous amplitudes, and inside a region
   (free bits below pos[1]) consecutive runs are 2R apart, so the full
   index is computed once per region. Short runs are done inline. */
static void pair_range(const SvJob *jb, uint64_t a, uint64_t b)
{
    uint64_t R = (uint64_t)1 << jb->pos[0];
    uint64_t Q = jb->m > 1 ? (uint64_t)1 << (jb->pos[1] - 1) : 0;
    double *amp = jb->amp;
    const double *m = jb->mat;
    int swap = jb->kind == SVJ_SWAP;
    uint64_t o1 = jb->off[0], o2 = jb->off[1];
    if (R <= 2) { /* element by element: step over the fixed bits */
        uint64_t F = 0, x = sv_expand(a, jb->pos, jb->m);
        for (int k = 0; k < jb->m; k++) F |= (uint64_t)1 << jb->pos[k];
        for (uint64_t i = a; i < b; i++) {
            double *lo = amp + 2 * ((x | jb->cm) + o1), *hi = amp + 2 * ((x | jb->cm) + o2);
            __builtin_prefetch(lo + SV_AHEAD);
            __builtin_prefetch(hi + SV_AHEAD);
            if (swap) {
                double r = lo[0], im = lo[1];
                lo[0] = hi[0];
                lo[1] = hi[1];
                hi[0] = r;
                hi[1] = im;
            } else {
                sv_mul2(m, lo, hi);
            }
            x = ((x | F) + 1) & ~F;
        }
        return;
    }
    if (R >= 16 && R <= 64 && b - a >= 4 * R) {
        /* Runs of 16..64: one sequential sweep is slower here than two
           (measured: up to 1.5x the scale at 64); walk the two halves of
           the slice in turn so the memory system sees two streams. */
        uint64_t mid = (a + (b - a) / 2) & ~(R - 1), i = a, j = mid;
        while (i < mid || j < b) {
            if (i < mid) i = one_run(jb, i, mid);
            if (j < b) j = one_run(jb, j, b);
        }
        return;
    }
    for (uint64_t i = a; i < b;) {
        uint64_t e = b;
        if (Q) {
            uint64_t q = (i | (Q - 1)) + 1;
            if (q < e) e = q;
        }
        uint64_t base = sv_expand(i, jb->pos, jb->m) | jb->cm;
        while (i < e) {
            uint64_t off = i & (R - 1), len = R - off;
            if (len > e - i) len = e - i;
            double *lo = amp + 2 * (base + o1), *hi = amp + 2 * (base + o2);
            if (R <= 64) /* short runs with gaps: see SV_AHEAD */
                for (uint64_t o = 0; o < 2 * len; o += 8) {
                    __builtin_prefetch(lo + SV_AHEAD + o);
                    __builtin_prefetch(hi + SV_AHEAD + o);
                }
            if (swap) {
                if (len <= 4) {
                    for (uint64_t j = 0; j < 2 * len; j++) {
                        double t = lo[j];
                        lo[j] = hi[j];
                        hi[j] = t;
                    }
                } else {
                    swap_run(lo, hi, len);
                }
            } else if (len <= 2) {
                for (uint64_t j = 0; j < len; j++) sv_mul2(m, lo + 2 * j, hi + 2 * j);
            } else {
                pair_run_c(lo, hi, len, m);
            }
            i += len;
            base += off + len == R ? len + R : len;
        }
    }
}

/* Why: the target is the lowest fixed bit t (1 <= t <= 4): walk the
   contiguous regions between fixed bits block by block (runs would be
   2..16 pairs long, too short for a call each). */
static void blocks_range(const SvJob *jb, uint64_t a, uint64_t b)
{
    int t = jb->pos[0];
    uint64_t S = (uint64_t)1 << t;
    uint64_t Q = jb->m > 1 ? (uint64_t)1 << (jb->pos[1] - 1) : 0; /* pairs per region */
    const double *m = jb->kind == SVJ_SWAP ? NULL : jb->mat;
    double *amp = jb->amp;
    for (uint64_t i = a; i < b;) {
        uint64_t end = b;
        if (Q) {
            uint64_t e = (i | (Q - 1)) + 1;
            if (e < end) end = e;
        }
        uint64_t j = i;
        while (j < end) {
            uint64_t base = sv_expand(j, jb->pos, jb->m) | jb->cm;
            uint64_t off = j & (S - 1), nb = off ? 0 : (end - j) / S;
            if (nb) {
                blocks_c(amp + 2 * base, nb, S, m);
                j += nb * S;
            } else { /* a partial block at either end */
                uint64_t len = S - off;
                if (len > end - j) len = end - j;
                if (m)
                    pair_run_c(amp + 2 * base, amp + 2 * (base + S), len, m);
                else
                    swap_run(amp + 2 * base, amp + 2 * (base + S), len);
                j += len;
            }
        }
        i = end;
    }
}

/* Why: 4x4 jobs, runs of 2^pos[0] on four streams (element by element
   when a fixed bit is bit 0). */
static void quad_range(const SvJob *jb, uint64_t a, uint64_t b)
{
    uint64_t R = (uint64_t)1 << jb->pos[0];
    sv_assert(R >= 4); /* lower fixed bits take the line kernels */
    for (uint64_t i = a; i < b;) {
        uint64_t len = R - (i & (R - 1));
        if (len > b - i) len = b - i;
        uint64_t base = sv_expand(i, jb->pos, jb->m) | jb->cm;
        quad_run_c(jb->amp, jb->off, base, len, jb->mat);
        i += len;
    }
}

/* Why: QubitUnitary on 3+ wires: gather 2^k amplitudes, multiply, scatter. */
static void dense_range(const SvJob *jb, uint64_t a, uint64_t b)
{
    int d = 1 << jb->k;
    double inr[1 << SV_MAX_DENSE], ini[1 << SV_MAX_DENSE];
    const double *m = (const double *)jb->dm;
    uint64_t F = 0, x = sv_expand(a, jb->pos, jb->m);
    for (int k = 0; k < jb->m; k++) F |= (uint64_t)1 << jb->pos[k];
    for (uint64_t i = a; i < b; i++, x = ((x | F) + 1) & ~F) {
        double *p = jb->amp + 2 * (x | jb->cm);
        for (int c = 0; c < d; c++) {
            inr[c] = p[2 * jb->doff[c]];
            ini[c] = p[2 * jb->doff[c] + 1];
        }
        for (int r = 0; r < d; r++) {
            double re = 0, im = 0;
            if (!jb->dadj) {
                const double *q = m + 2 * (size_t)r * d;
                for (int c = 0; c < d; c++) {
                    re += q[2 * c] * inr[c] - q[2 * c + 1] * ini[c];
                    im += q[2 * c] * ini[c] + q[2 * c + 1] * inr[c];
                }
            } else { /* row r of M^dagger = conjugate of column r of M */
                for (int c = 0; c < d; c++) {
                    double mr = m[2 * ((size_t)c * d + r)], mi = -m[2 * ((size_t)c * d + r) + 1];
                    re += mr * inr[c] - mi * ini[c];
                    im += mr * ini[c] + mi * inr[c];
                }
            }
            p[2 * jb->doff[r]] = re;
            p[2 * jb->doff[r] + 1] = im;
        }
    }
}

/* The first amplitude of chunk c (of `chunk` amplitudes). */
static inline uint64_t diag_base(const SvJob *jb, uint64_t c, int chunk)
{
    return sv_expand(c * (uint64_t)chunk, jb->pos, jb->m) | jb->cm;
}

/* The phase-table row of a chunk whose first amplitude is `base`. */
static inline unsigned diag_key(const SvJob *jb, uint64_t base)
{
    if (jb->parity) return (unsigned)__builtin_parityll(base & jb->kmask);
    unsigned key = 0;
    for (int r = 0; r < jb->nk; r++) key |= (unsigned)((base >> jb->kpos[r]) & 1) << jb->kshift[r];
    return key;
}

/* The segment of chunks that starts at *c (ends before b): its first
   amplitude, its length in chunks and its row's key; *c moves past it. */
static inline unsigned diag_seg(const SvJob *jb, uint64_t *c, uint64_t b, int chunk, uint64_t *base,
                                uint64_t *len)
{
    uint64_t l = jb->seg - (*c & (jb->seg - 1));
    if (l > b - *c) l = b - *c;
    *base = diag_base(jb, *c, chunk);
    *len = l;
    *c += l;
    return diag_key(jb, *base);
}

/* How a diagonal job with short segments goes by blocks of 64 amplitudes
   (bits 3..5 of the state): nb chunks per block in the job's numbering;
   chunk g of a block runs when bit g of act is set (its controls among
   bits 3..5 are 1), with the row of the block's key, or, when bit g of
   selb is set, the row of that key with bit sb (the one key bit among
   bits 3..5; 0: none) set. */
typedef struct DiagBlocks {
    uint64_t nb;
    unsigned act, selb;
    int sb;
} DiagBlocks;

/* Whether a diagonal job's segments are short (its lowest key or control
   bit is bit 3, 4 or 5) and at most one key bit lies among bits 3..5:
   then it can go by blocks (*d). */
static int diag_short_blocks(const SvJob *jb, DiagBlocks *d)
{
    if (jb->seg >= 8 || jb->walk_only) return 0;
    uint64_t lowkeys = 0, lowc = jb->cm & 0x38;
    if (jb->parity)
        lowkeys = jb->kmask & 0x38;
    else
        for (int r = 0; r < jb->nk; r++)
            if (jb->kpos[r] >= 3 && jb->kpos[r] <= 5) lowkeys |= (uint64_t)1 << jb->kpos[r];
    if (__builtin_popcountll(lowkeys) > 1) return 0;
    d->sb = lowkeys ? __builtin_ctzll(lowkeys) : 0;
    d->nb = (uint64_t)8 >> __builtin_popcountll(lowc);
    d->act = d->selb = 0;
    for (unsigned g = 0; g < 8; g++) {
        if (((uint64_t)g << 3 & lowc) == lowc) d->act |= 1u << g;
        if ((uint64_t)g << 3 & lowkeys) d->selb |= 1u << g;
    }
    return 1;
}

/* Whether chunks [a, b) go by blocks (*d): then [*a8, *b8) are whole
   blocks and the walk takes [a, *a8) and [*b8, b). */
static int diag_split(const SvJob *jb, uint64_t a, uint64_t b, DiagBlocks *d, uint64_t *a8,
                      uint64_t *b8)
{
    if (!diag_short_blocks(jb, d) || b - a < 2 * d->nb) return 0;
    *a8 = (a + d->nb - 1) & ~(d->nb - 1);
    *b8 = b & ~(d->nb - 1);
    return 1;
}

/* Why: diagonal gates (Z S T RZ PhaseShift CZ CRZ CPhase IsingZZ MultiRZ)
   multiply each amplitude by a phase that depends on a few bits: chunks
   of 8 amplitudes take a precomputed row; rows of ones are skipped. */
static void diag_range_c(const SvJob *jb, uint64_t a, uint64_t b)
{
    int C = jb->chunk;
    for (uint64_t c = a; c < b;) {
        uint64_t base, len;
        unsigned key = diag_seg(jb, &c, b, C, &base, &len);
        if (jb->skip[key]) continue;
        const double *t = jb->tab[key];
        double *p = jb->amp + 2 * base;
        for (uint64_t q = 0; q < len * (uint64_t)C; q++) {
            double re = p[2 * q], im = p[2 * q + 1];
            double tr = t[2 * (q & 7)], ti = t[2 * (q & 7) + 1];
            p[2 * q] = tr * re - ti * im;
            p[2 * q + 1] = tr * im + ti * re;
        }
    }
}

#if SV_X86
/* One chunk of 8 amplitudes times its row (4 registers of real parts,
   4 of imaginary ones, each duplicated over re/im lanes). */
SV_AVX2 static inline void diag8_avx2(double *p, const __m256d *r, const __m256d *i)
{
    __m256d z0 = _mm256_loadu_pd(p), z1 = _mm256_loadu_pd(p + 4);
    __m256d z2 = _mm256_loadu_pd(p + 8), z3 = _mm256_loadu_pd(p + 12);
    __asm__("" : "+v"(z0), "+v"(z1), "+v"(z2), "+v"(z3)); /* one load each */
    _mm256_storeu_pd(p,
                     _mm256_fmaddsub_pd(r[0], z0, _mm256_mul_pd(i[0], _mm256_permute_pd(z0, 5))));
    _mm256_storeu_pd(p + 4,
                     _mm256_fmaddsub_pd(r[1], z1, _mm256_mul_pd(i[1], _mm256_permute_pd(z1, 5))));
    _mm256_storeu_pd(p + 8,
                     _mm256_fmaddsub_pd(r[2], z2, _mm256_mul_pd(i[2], _mm256_permute_pd(z2, 5))));
    _mm256_storeu_pd(p + 12,
                     _mm256_fmaddsub_pd(r[3], z3, _mm256_mul_pd(i[3], _mm256_permute_pd(z3, 5))));
}

/* Chunks [a, b) segment by segment: a segment's row is read once. */
SV_AVX2 static inline void diag_walk_avx2(const SvJob *jb, const __m256d (*tr)[4],
                                          const __m256d (*ti)[4], uint64_t a, uint64_t b)
{
    double *amp = jb->amp;
    for (uint64_t c = a; c < b;) {
        uint64_t base, len;
        unsigned key = diag_seg(jb, &c, b, 8, &base, &len);
        if (jb->skip[key]) continue;
        const __m256d r[4] = { tr[key][0], tr[key][1], tr[key][2], tr[key][3] };
        const __m256d i[4] = { ti[key][0], ti[key][1], ti[key][2], ti[key][3] };
        double *p = amp + 2 * base;
        for (uint64_t q = 0; q < len; q++, p += 16) diag8_avx2(p, r, i);
    }
}

/* The blocks of chunks [a, b) (multiples of d->nb; DiagBlocks): two rows
   do not fit AVX2's 16 registers with the work, so a block runs the
   chunks of its first key, then those of the second, each row read once
   per block (chunks are independent: the order among them changes no
   byte). */
SV_AVX2 static inline void diag_blocks_avx2(const SvJob *jb, const DiagBlocks *d,
                                            const __m256d (*tr)[4], const __m256d (*ti)[4],
                                            uint64_t a, uint64_t b)
{
    double *amp = jb->amp;
    const uint64_t bbit = d->sb ? (uint64_t)1 << d->sb : 0;
    for (uint64_t c = a; c < b; c += d->nb) {
        uint64_t base = diag_base(jb, c, 8) & ~(uint64_t)0x38;
        sv_assert((base & 7) == 0);
        double *p = amp + 2 * base;
        for (int half = 0; half < 2; half++) {
            unsigned mask = half ? d->act & d->selb : d->act & ~d->selb;
            if (!mask) continue;
            unsigned key = diag_key(jb, half ? base | bbit : base);
            if (jb->skip[key]) continue;
            const __m256d r[4] = { tr[key][0], tr[key][1], tr[key][2], tr[key][3] };
            const __m256d i[4] = { ti[key][0], ti[key][1], ti[key][2], ti[key][3] };
            for (int g = 0; g < 8; g++)
                if ((mask >> g) & 1) diag8_avx2(p + 16 * g, r, i);
        }
    }
}

SV_AVX2 static void diag_range_avx2(const SvJob *jb, uint64_t a, uint64_t b)
{
    __m256d tr[8][4], ti[8][4];
    for (int k = 0; k < jb->nkeys; k++)
        for (int v = 0; v < 4; v++) {
            const double *t = jb->tab[k] + 4 * v;
            tr[k][v] = _mm256_setr_pd(t[0], t[0], t[2], t[2]);
            ti[k][v] = _mm256_setr_pd(t[1], t[1], t[3], t[3]);
        }
    DiagBlocks d;
    uint64_t a8, b8;
    if (!diag_split(jb, a, b, &d, &a8, &b8)) {
        diag_walk_avx2(jb, tr, ti, a, b);
        return;
    }
    diag_walk_avx2(jb, tr, ti, a, a8);
    diag_blocks_avx2(jb, &d, tr, ti, a8, b8);
    diag_walk_avx2(jb, tr, ti, b8, b);
}

/* One chunk of 8 amplitudes times its row (r0 r1: the real parts, i0 i1:
   the imaginary ones, each duplicated over re/im lanes). */
SV_AVX512 static inline void diag8_512(double *p, __m512d r0, __m512d r1, __m512d i0, __m512d i1)
{
    __m512d z0 = _mm512_loadu_pd(p), z1 = _mm512_loadu_pd(p + 8);
    __asm__("" : "+v"(z0), "+v"(z1)); /* one load each (see above) */
    _mm512_storeu_pd(p, _mm512_fmaddsub_pd(r0, z0, _mm512_mul_pd(i0, _mm512_permute_pd(z0, 0x55))));
    _mm512_storeu_pd(p + 8,
                     _mm512_fmaddsub_pd(r1, z1, _mm512_mul_pd(i1, _mm512_permute_pd(z1, 0x55))));
}

/* Chunks [a, b) segment by segment: a segment's row is read once. */
SV_AVX512 static inline void diag_walk_512(const SvJob *jb, const __m512d (*tr)[2],
                                           const __m512d (*ti)[2], uint64_t a, uint64_t b)
{
    double *amp = jb->amp;
    for (uint64_t c = a; c < b;) {
        uint64_t base, len;
        unsigned key = diag_seg(jb, &c, b, 8, &base, &len);
        if (jb->skip[key]) continue;
        const __m512d r0 = tr[key][0], r1 = tr[key][1], i0 = ti[key][0], i1 = ti[key][1];
        double *p = amp + 2 * base;
        for (uint64_t q = 0; q < len; q++, p += 16) diag8_512(p, r0, r1, i0, i1);
    }
}

/* The blocks of chunks [a, b) (multiples of d->nb; DiagBlocks): both
   rows of a block are read once, and again only when the keys change. */
SV_AVX512 static inline void diag_blocks_512(const SvJob *jb, const DiagBlocks *d,
                                             const __m512d (*tr)[2], const __m512d (*ti)[2],
                                             uint64_t a, uint64_t b)
{
    double *amp = jb->amp;
    unsigned pa = ~0u, pb = ~0u;
    int sa = 1, sk = 1;
    __m512d ra0 = _mm512_setzero_pd(), ra1 = ra0, ia0 = ra0, ia1 = ra0;
    __m512d rb0 = ra0, rb1 = ra0, ib0 = ra0, ib1 = ra0;
    const int sb = d->sb;
    const unsigned act = d->act, selb = d->selb;
    const uint64_t bbit = sb ? (uint64_t)1 << sb : 0;
    for (uint64_t c = a; c < b; c += d->nb) {
        uint64_t base = diag_base(jb, c, 8) & ~(uint64_t)0x38;
        sv_assert((base & 7) == 0);
        unsigned ka = diag_key(jb, base), kb = sb ? diag_key(jb, base | bbit) : ka;
        if (ka != pa) {
            pa = ka;
            sa = jb->skip[ka];
            ra0 = tr[ka][0], ra1 = tr[ka][1], ia0 = ti[ka][0], ia1 = ti[ka][1];
        }
        if (kb != pb) {
            pb = kb;
            sk = jb->skip[kb];
            rb0 = tr[kb][0], rb1 = tr[kb][1], ib0 = ti[kb][0], ib1 = ti[kb][1];
        }
        if (sa && sk) continue;
        double *p = amp + 2 * base;
        for (int g = 0; g < 8; g++) {
            if (!((act >> g) & 1)) continue;
            if ((selb >> g) & 1) {
                if (!sk) diag8_512(p + 16 * g, rb0, rb1, ib0, ib1);
            } else if (!sa)
                diag8_512(p + 16 * g, ra0, ra1, ia0, ia1);
        }
    }
}

/* Why: the same phases as diag_range_avx2, lane for lane (fmaddsub on
   the same products), a chunk of 8 amplitudes in 2 registers instead of
   4. In both forms each register is loaded once: left to itself the
   compiler folds the load into both the permutation and the fmaddsub,
   two loads of the same line, and on this machine (AMD EPYC, AVX-512 at
   half width) the loop was load-bound. RZ on a 14-wire state, by
   placement (sv_apply in a loop, as tests/bench/bench_floor runs it):
   AVX2 0.186-0.268 ns per amplitude before, 0.165-0.214 with one load;
   this form 0.148-0.209.
   A gate whose lowest key or control bit is bit 3, 4 or 5 has segments
   of one to four chunks, and reading a row (4 registers) per segment
   cost more than the chunk's own work: RZ on bit 3, 4, 5 of a 14-wire
   state took 0.325, 0.224, 0.171 ns per amplitude, 0.09 on the other
   bits. There a block of 8 chunks takes its two rows once, in
   registers, and each chunk the one its bit selects (DiagBlocks): the
   same arithmetic and the same skipped rows, chunk by chunk, as the
   walk; 0.131-0.136 ns. */
SV_AVX512 static void diag_range_512(const SvJob *jb, uint64_t a, uint64_t b)
{
    __m512d tr[8][2], ti[8][2];
    for (int k = 0; k < jb->nkeys; k++)
        for (int v = 0; v < 2; v++) {
            const double *t = jb->tab[k] + 8 * v;
            tr[k][v] = _mm512_setr_pd(t[0], t[0], t[2], t[2], t[4], t[4], t[6], t[6]);
            ti[k][v] = _mm512_setr_pd(t[1], t[1], t[3], t[3], t[5], t[5], t[7], t[7]);
        }
    DiagBlocks d;
    uint64_t a8, b8;
    if (!diag_split(jb, a, b, &d, &a8, &b8)) {
        diag_walk_512(jb, tr, ti, a, b);
        return;
    }
    diag_walk_512(jb, tr, ti, a, a8);
    diag_blocks_512(jb, &d, tr, ti, a8, b8);
    diag_walk_512(jb, tr, ti, b8, b);
}
#endif

/* ---- running a job ---------------------------------------------------- */

typedef struct JobCtx {
    const SvJob *jb;
    int level; /* sv_level of the state */
} JobCtx;

/* Why: one slice of a job, to the kernel of its kind. Pair, exchange and
   4x4 jobs get here only when the line kernels did not take them
   (kernels_block.c): the portable level with no fixed bit inside a line,
   or a state of fewer than 4 amplitudes. */
static void job_range(const SvJob *jb, uint64_t a, uint64_t b, int level)
{
    switch (jb->kind) {
    case SVJ_PAIR:
    case SVJ_SWAP:
        if (jb->pos[0] >= 1 && jb->pos[0] <= 4 && jb->off[0] == 0 &&
            jb->off[1] == (uint64_t)1 << jb->pos[0])
            blocks_range(jb, a, b);
        else
            pair_range(jb, a, b);
        break;
    case SVJ_QUAD: quad_range(jb, a, b); break;
    case SVJ_DENSE: dense_range(jb, a, b); break;
    case SVJ_DIAG:
#if SV_X86
        if (level >= SV_SIMD_AVX512 && jb->chunk == 8) {
            diag_range_512(jb, a, b);
            break;
        }
        if (level >= SV_SIMD_AVX2 && jb->chunk == 8) {
            diag_range_avx2(jb, a, b);
            break;
        }
#endif
        diag_range_c(jb, a, b);
        break;
    }
    (void)level;
}

/* The team calls this once per part. */
static void job_part(void *ctx, int part, int nparts)
{
    JobCtx *c = ctx;
    uint64_t a, b;
    sv_slice(c->jb->total, part, nparts, &a, &b);
    if (b > a) job_range(c->jb, a, b, c->level);
}

/* Why: the one entry from the dispatcher into the kernels. */
void sv_job_run(const SvState *s, const SvJob *jb)
{
    if (jb->total == 0) return;
    /* the fixed bits are wires of the state, ascending; the controls and the streams' offsets
     * set only fixed bits, so every amplitude a job touches is one of the state's */
    uint64_t fixed = 0;
    sv_assert(jb->m >= 0 && jb->m <= s->nq);
    for (int k = 0; k < jb->m; k++) {
        sv_assert(jb->pos[k] >= 0 && jb->pos[k] < s->nq && (k == 0 || jb->pos[k - 1] < jb->pos[k]));
        fixed |= (uint64_t)1 << jb->pos[k];
    }
    sv_assert((jb->cm & ~fixed) == 0);
    if (jb->kind == SVJ_PAIR || jb->kind == SVJ_SWAP) {
        sv_assert((jb->off[0] & ~fixed) == 0 && (jb->off[1] & ~fixed) == 0);
        sv_assert(jb->off[0] != jb->off[1] && (jb->total << jb->m) <= s->dim);
    }
    (void)fixed; /* read only by the assertions: a release build drops them */
    int level = sv_level(s);
    if ((jb->kind == SVJ_PAIR || jb->kind == SVJ_SWAP || jb->kind == SVJ_QUAD) &&
        sv_blk_run(s, jb, level))
        return;
    JobCtx c = { jb, level };
    sv_parallel(s, job_part, &c);
}

/* Why: Born probabilities and renormalisation need sums of |a|^2. */
double sv_norm_range(const SvState *s, uint64_t a, uint64_t b)
{
    sv_assert(a <= b && b <= s->dim);
    const double *p = (const double *)s->amp + 2 * a;
    uint64_t n = b - a;
#if SV_X86
    if (sv_use_avx2(s)) return norm_avx2(p, n);
#endif
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    uint64_t j = 0;
    for (; j + 2 <= n; j += 2) {
        s0 += p[2 * j] * p[2 * j];
        s1 += p[2 * j + 1] * p[2 * j + 1];
        s2 += p[2 * j + 2] * p[2 * j + 2];
        s3 += p[2 * j + 3] * p[2 * j + 3];
    }
    for (; j < n; j++) s0 += p[2 * j] * p[2 * j] + p[2 * j + 1] * p[2 * j + 1];
    return (s0 + s1) + (s2 + s3);
}
