/* npr.h — NumPy's random streams, bit for bit (prefix npr_): the legacy
 * RandomState (MT19937 seeded as numpy.random.seed seeds it, its 53-bit
 * doubles, polar Box-Muller Gaussians with the cached second value, masked
 * rejection for bounded integers) and Generator (SeedSequence -> PCG64,
 * ziggurat normals, Lemire's bounded integers). Our own implementation of
 * the published algorithms (lang/arrays.md, "NumPy's random numbers"); the
 * ziggurat tables are made by npr_ziggurat.py.
 *
 * Each state is a plain struct owned by one thread; nothing here is global.
 * Must not know about values, arrays or the interpreter. */
#ifndef QH_NPR_H
#define QH_NPR_H

#include <stddef.h>
#include <stdint.h>

/* ---- MT19937 (numpy.random.RandomState, the legacy API) ------------------- */

#define NPR_MT_N 624

typedef struct NprMT {
    uint32_t key[NPR_MT_N];
    int pos;
    int has_gauss; /* the polar method's second value is cached */
    double gauss;
} NprMT;

/* seed(s) for an integer 0 <= s < 2^32: Matsumoto-Nishimura's init_genrand. */
void npr_mt_seed(NprMT *m, uint32_t s);
/* seed(array) (and integers of 2^32 and more, as their 32-bit words):
 * init_by_array. */
void npr_mt_seed_array(NprMT *m, const uint32_t *key, size_t n);
uint32_t npr_mt_next32(NprMT *m);
/* two 32-bit draws, the first the high half (NumPy's next_uint64) */
uint64_t npr_mt_next64(NprMT *m);
/* random_sample: (a >> 5, b >> 6) of two draws as a 53-bit fraction */
double npr_mt_double(NprMT *m);
/* the legacy standard normal (polar Box-Muller, second value cached) */
double npr_mt_gauss(NprMT *m);
/* randint's integer in [0, rng] by masked rejection (rng < 2^64) */
uint64_t npr_mt_bounded(NprMT *m, uint64_t rng);
/* shuffle's index in [0, max] (random_interval: masked rejection, 32-bit
 * draws while max fits in 32 bits) */
uint64_t npr_mt_interval(NprMT *m, uint64_t max);

/* ---- SeedSequence and PCG64 (numpy.random.default_rng) ---------------------- */

/* The 4-word pool of SeedSequence(entropy), entropy given as its 32-bit
 * words, least significant first (an integer seed; [0] for 0). */
void npr_seedseq_pool(const uint32_t *entropy, size_t n, uint32_t pool[4]);
/* generate_state(n32 words of 32 bits) from a pool. */
void npr_seedseq_generate(const uint32_t pool[4], uint32_t *out, size_t n32);

typedef struct NprPCG {
    uint64_t state_hi, state_lo; /* the 128-bit LCG state */
    uint64_t inc_hi, inc_lo;     /* its odd increment */
    int has32;                   /* half of the last 64-bit output is kept for next32 */
    uint32_t u32;
} NprPCG;

/* PCG64(SeedSequence(entropy)) as default_rng(seed) makes it. */
void npr_pcg_seed(NprPCG *g, const uint32_t *entropy, size_t n);
uint64_t npr_pcg_next64(NprPCG *g);
/* the low half of a 64-bit output, then its high half */
uint32_t npr_pcg_next32(NprPCG *g);
/* Generator.random: the top 53 bits as a fraction */
double npr_pcg_double(NprPCG *g);
/* Generator.standard_normal (the 256-step ziggurat) */
double npr_pcg_normal(NprPCG *g);
/* Generator.integers' value in [0, rng] (Lemire's method; rng < 2^64) */
uint64_t npr_pcg_bounded(NprPCG *g, uint64_t rng);
/* Generator.shuffle's index in [0, max] (masked rejection) */
uint64_t npr_pcg_interval(NprPCG *g, uint64_t max);

#endif
