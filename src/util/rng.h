/* rng.h — the one pseudo-random generator of qh (xoshiro256**).
 *
 * Every consumer owns its own Rng value: the program generator lives in the
 * main interpreter state, each quantum task derives a stream from (seed,
 * position in program order) with rng_seed2. Nothing here is global, so two
 * threads never share a generator. Must not know about values or quantum. */
#ifndef QH_RNG_H
#define QH_RNG_H

#include <stdint.h>
#include <math.h>

typedef struct Rng {
    uint64_t s[4];
    double spare; /* second normal deviate of the polar method */
    int has_spare;
} Rng;

static inline uint64_t rng_splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Seed from one 64-bit number. */
static inline void rng_seed(Rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = rng_splitmix(&x);
    r->has_spare = 0;
    r->spare = 0;
}

/* Seed a stream from (seed, stream index): independent streams per call. */
static inline void rng_seed2(Rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ 0x5851f42d4c957f2dULL;
    uint64_t a = rng_splitmix(&x);
    uint64_t y = stream * 0xd1342543de82ef95ULL + a;
    rng_seed(r, rng_splitmix(&y) ^ a);
}

static inline uint64_t rng_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t rng_next(Rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rng_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rng_rotl(s[3], 45);
    return result;
}

/* Uniform double in [0, 1). */
static inline double rng_uniform(Rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* Uniform integer in [0, n), n > 0, without modulo bias. */
static inline uint64_t rng_below(Rng *r, uint64_t n)
{
    uint64_t lim = -n % n; /* 2^64 mod n */
    for (;;) {
        uint64_t x = rng_next(r);
        if (x >= lim) return x % n;
    }
}

/* Standard normal deviate (Marsaglia polar method). */
static inline double rng_normal(Rng *r)
{
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    double u, v, s;
    do {
        u = 2.0 * rng_uniform(r) - 1.0;
        v = 2.0 * rng_uniform(r) - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    double m = sqrt(-2.0 * log(s) / s);
    r->spare = v * m;
    r->has_spare = 1;
    return u * m;
}

#endif
