/* npr.c — NumPy's random streams (npr.h): MT19937 with the legacy
 * distributions, SeedSequence, PCG64 with Generator's distributions.
 * Written from the published algorithms: Matsumoto and Nishimura's MT19937
 * (init_genrand, init_by_array), O'Neill's PCG64 (XSL-RR output of a 128-bit
 * LCG), NumPy's SeedSequence hash mixing, Marsaglia and Tsang's ziggurat,
 * Lemire's nearly divisionless bounded integers. No state outside the
 * structs; knows nothing of values, arrays or the interpreter. */
#include "npr.h"
#include "npr_ziggurat.h"
#include "qh_assert.h"

#include <math.h>

/* ---------------------------------------------------------------- MT19937 */

void npr_mt_seed(NprMT *m, uint32_t s)
{
    m->key[0] = s;
    for (int i = 1; i < NPR_MT_N; i++)
        m->key[i] = 1812433253u * (m->key[i - 1] ^ (m->key[i - 1] >> 30)) + (uint32_t)i;
    m->pos = NPR_MT_N;
    m->has_gauss = 0;
    m->gauss = 0;
}

void npr_mt_seed_array(NprMT *m, const uint32_t *key, size_t n)
{
    npr_mt_seed(m, 19650218u);
    uint32_t *k = m->key;
    size_t i = 1, j = 0;
    for (size_t c = n > NPR_MT_N ? n : NPR_MT_N; c; c--) {
        k[i] = (k[i] ^ ((k[i - 1] ^ (k[i - 1] >> 30)) * 1664525u)) + key[j] + (uint32_t)j;
        i++;
        j++;
        if (i >= NPR_MT_N) {
            k[0] = k[NPR_MT_N - 1];
            i = 1;
        }
        if (j >= n) j = 0;
    }
    for (size_t c = NPR_MT_N - 1; c; c--) {
        k[i] = (k[i] ^ ((k[i - 1] ^ (k[i - 1] >> 30)) * 1566083941u)) - (uint32_t)i;
        i++;
        if (i >= NPR_MT_N) {
            k[0] = k[NPR_MT_N - 1];
            i = 1;
        }
    }
    k[0] = 0x80000000u; /* a non-zero state whatever the key */
}

/* Why: the twist regenerates all 624 words at once. */
static void mt_twist(NprMT *m)
{
    uint32_t *k = m->key;
    for (int i = 0; i < NPR_MT_N; i++) {
        uint32_t y = (k[i] & 0x80000000u) | (k[(i + 1) % NPR_MT_N] & 0x7fffffffu);
        k[i] = k[(i + 397) % NPR_MT_N] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    m->pos = 0;
}

uint32_t npr_mt_next32(NprMT *m)
{
    if (m->pos >= NPR_MT_N) mt_twist(m);
    qh_assert(m->pos < NPR_MT_N); /* a word of the state left to temper */
    uint32_t y = m->key[m->pos++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    return y ^ (y >> 18);
}

uint64_t npr_mt_next64(NprMT *m)
{
    uint64_t hi = npr_mt_next32(m);
    return hi << 32 | npr_mt_next32(m);
}

double npr_mt_double(NprMT *m)
{
    uint32_t a = npr_mt_next32(m) >> 5, b = npr_mt_next32(m) >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
}

double npr_mt_gauss(NprMT *m)
{
    if (m->has_gauss) {
        m->has_gauss = 0;
        return m->gauss;
    }
    double x1, x2, r2;
    do {
        x1 = 2.0 * npr_mt_double(m) - 1.0;
        x2 = 2.0 * npr_mt_double(m) - 1.0;
        r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    qh_assert(r2 > 0.0 && r2 < 1.0); /* inside the unit disc, not its centre: log is finite */
    double f = sqrt(-2.0 * log(r2) / r2);
    m->gauss = f * x1; /* the first value is kept, the second returned */
    m->has_gauss = 1;
    return f * x2;
}

/* Why: the smallest all-ones mask covering v (masked rejection). */
static uint64_t mask_of(uint64_t v)
{
    v |= v >> 1;
    v |= v >> 2;
    v |= v >> 4;
    v |= v >> 8;
    v |= v >> 16;
    return v | v >> 32;
}

uint64_t npr_mt_bounded(NprMT *m, uint64_t rng)
{
    if (rng == 0) return 0;
    uint64_t mask = mask_of(rng), v;
    if (rng <= 0xffffffffu) {
        if (rng == 0xffffffffu) return npr_mt_next32(m);
        while ((v = (npr_mt_next32(m) & mask)) > rng) continue;
        qh_assert(v <= rng && mask >= rng && (mask & (mask + 1)) == 0); /* all ones, covering */
        return v;
    }
    if (rng == UINT64_MAX) return npr_mt_next64(m);
    while ((v = (npr_mt_next64(m) & mask)) > rng) continue;
    qh_assert(v <= rng);
    return v;
}

uint64_t npr_mt_interval(NprMT *m, uint64_t max)
{
    if (max == 0) return 0;
    uint64_t mask = mask_of(max), v;
    if (max <= 0xffffffffu) {
        while ((v = (npr_mt_next32(m) & mask)) > max) continue;
    } else {
        while ((v = (npr_mt_next64(m) & mask)) > max) continue;
    }
    return v;
}

/* ---------------------------------------------------------------- SeedSequence */

#define SS_INIT_A 0x43b0d7e5u
#define SS_MULT_A 0x931e8875u
#define SS_INIT_B 0x8b51f9ddu
#define SS_MULT_B 0x58f38dedu
#define SS_MIX_L  0xca01f9ddu
#define SS_MIX_R  0x4973f715u

static uint32_t hashmix(uint32_t v, uint32_t *hc)
{
    v ^= *hc;
    *hc *= SS_MULT_A;
    v *= *hc;
    return v ^ (v >> 16);
}

static uint32_t mix(uint32_t x, uint32_t y)
{
    uint32_t r = SS_MIX_L * x - SS_MIX_R * y;
    return r ^ (r >> 16);
}

void npr_seedseq_pool(const uint32_t *entropy, size_t n, uint32_t pool[4])
{
    uint32_t hc = SS_INIT_A;
    for (size_t i = 0; i < 4; i++) pool[i] = hashmix(i < n ? entropy[i] : 0, &hc);
    for (size_t s = 0; s < 4; s++)
        for (size_t d = 0; d < 4; d++)
            if (s != d) pool[d] = mix(pool[d], hashmix(pool[s], &hc));
    for (size_t s = 4; s < n; s++)
        for (size_t d = 0; d < 4; d++) pool[d] = mix(pool[d], hashmix(entropy[s], &hc));
}

void npr_seedseq_generate(const uint32_t pool[4], uint32_t *out, size_t n32)
{
    uint32_t hc = SS_INIT_B;
    for (size_t i = 0; i < n32; i++) {
        uint32_t v = pool[i % 4] ^ hc;
        hc *= SS_MULT_B;
        v *= hc;
        out[i] = v ^ (v >> 16);
    }
}

/* ---------------------------------------------------------------- PCG64 */

/* Why: the 128-bit product's halves from 64-bit parts (portable C11). */
static void mul64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo)
{
    uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    *lo = (mid << 32) | (p00 & 0xffffffffu);
    *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

#define PCG_MULT_HI 2549297995355413924ull
#define PCG_MULT_LO 4865540595714422341ull

/* Why: state = state * MULT + inc (mod 2^128). */
static void pcg_step(NprPCG *g)
{
    uint64_t hi, lo;
    mul64(g->state_lo, PCG_MULT_LO, &hi, &lo);
    hi += g->state_hi * PCG_MULT_LO + g->state_lo * PCG_MULT_HI;
    uint64_t nlo = lo + g->inc_lo;
    hi += g->inc_hi + (nlo < lo);
    g->state_hi = hi;
    g->state_lo = nlo;
}

void npr_pcg_seed(NprPCG *g, const uint32_t *entropy, size_t n)
{
    uint32_t pool[4], w[8];
    npr_seedseq_pool(entropy, n, pool);
    npr_seedseq_generate(pool, w, 8);
    uint64_t u[4];
    for (int i = 0; i < 4; i++) u[i] = (uint64_t)w[2 * i] | (uint64_t)w[2 * i + 1] << 32;
    /* initstate = u0:u1, initseq = u2:u3; inc = initseq << 1 | 1 */
    g->inc_hi = u[2] << 1 | u[3] >> 63;
    g->inc_lo = u[3] << 1 | 1u;
    g->state_hi = g->state_lo = 0;
    pcg_step(g);
    uint64_t lo = g->state_lo + u[1];
    g->state_hi += u[0] + (lo < u[1]);
    g->state_lo = lo;
    pcg_step(g);
    g->has32 = 0;
    g->u32 = 0;
}

uint64_t npr_pcg_next64(NprPCG *g)
{
    pcg_step(g);
    uint64_t x = g->state_hi ^ g->state_lo;
    unsigned r = (unsigned)(g->state_hi >> 58);
    return r ? (x >> r) | (x << (64 - r)) : x;
}

uint32_t npr_pcg_next32(NprPCG *g)
{
    if (g->has32) {
        g->has32 = 0;
        return g->u32;
    }
    uint64_t x = npr_pcg_next64(g);
    g->has32 = 1;
    g->u32 = (uint32_t)(x >> 32);
    return (uint32_t)x;
}

double npr_pcg_double(NprPCG *g)
{
    return (double)(npr_pcg_next64(g) >> 11) * (1.0 / 9007199254740992.0);
}

double npr_pcg_normal(NprPCG *g)
{
    for (;;) {
        uint64_t r = npr_pcg_next64(g);
        int idx = (int)(r & 0xff);
        r >>= 8;
        int sign = (int)(r & 1);
        uint64_t rabs = (r >> 1) & 0x000fffffffffffffull;
        double x = (double)rabs * npr_zig_wi[idx];
        if (sign) x = -x;
        if (rabs < npr_zig_ki[idx]) return x; /* the fast path, 99.3% of draws */
        if (idx == 0) {                       /* the tail beyond r */
            for (;;) {
                double xx = -NPR_ZIG_INV_R * log1p(-npr_pcg_double(g));
                double yy = -log1p(-npr_pcg_double(g));
                if (yy + yy > xx * xx)
                    return ((rabs >> 8) & 1) ? -(NPR_ZIG_R + xx) : NPR_ZIG_R + xx;
            }
        }
        double f0 = npr_zig_fi[idx - 1], f1 = npr_zig_fi[idx];
        if ((f0 - f1) * npr_pcg_double(g) + f1 < exp(-0.5 * x * x)) return x;
    }
}

uint64_t npr_pcg_bounded(NprPCG *g, uint64_t rng)
{
    if (rng == 0) return 0;
    if (rng <= 0xffffffffu) {
        if (rng == 0xffffffffu) return npr_pcg_next32(g);
        uint32_t excl = (uint32_t)rng + 1;
        uint64_t m = (uint64_t)npr_pcg_next32(g) * excl;
        uint32_t left = (uint32_t)m;
        if (left < excl) {
            uint32_t thr = (uint32_t)(0xffffffffu - (uint32_t)rng) % excl;
            while (left < thr) {
                m = (uint64_t)npr_pcg_next32(g) * excl;
                left = (uint32_t)m;
            }
        }
        qh_assert((m >> 32) <= rng); /* Lemire: the high word of x * (rng + 1) */
        return m >> 32;
    }
    if (rng == UINT64_MAX) return npr_pcg_next64(g);
    uint64_t excl = rng + 1, hi, lo;
    mul64(npr_pcg_next64(g), excl, &hi, &lo);
    if (lo < excl) {
        uint64_t thr = (UINT64_MAX - rng) % excl;
        while (lo < thr) mul64(npr_pcg_next64(g), excl, &hi, &lo);
    }
    qh_assert(hi <= rng);
    return hi;
}

uint64_t npr_pcg_interval(NprPCG *g, uint64_t max)
{
    if (max == 0) return 0;
    uint64_t mask = mask_of(max), v;
    if (max <= 0xffffffffu) {
        while ((v = (npr_pcg_next32(g) & mask)) > max) continue;
    } else {
        while ((v = (npr_pcg_next64(g) & mask)) > max) continue;
    }
    return v;
}
