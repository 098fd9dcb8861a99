/* xsum.h — an exact, order-free accumulator of doubles (fixed point).
 *
 * Why: a distributed statevector must give bit-identical probabilities and
 * expectation values whatever the number of ranks, and rank counts change
 * the order in which partial sums meet. Floating-point addition is not
 * associative; integer addition is. Each partial sum is cut into 32-bit
 * digits of a fixed-point number (one signed integer digit, five fraction
 * digits: a resolution of 2^-160) and the digits are added as integers, so
 * the total is the same for any order or grouping of the additions and
 * for any split over ranks (MPI_SUM of the int64 digits is exact too).
 * Digits are kept in int64 with carries deferred: up to 2^30 additions (or
 * MPI sums of that many normalised accumulators) before xsum_norm.
 *
 * Terms must be finite with |x| < 2^30 (a partial sum of probabilities or
 * of Pauli-word contributions of a normalised state is at most about 1);
 * anything else marks the sum as invalid (xsum_value gives NaN). Parts of
 * a term below 2^-160 are dropped (deterministically).
 *
 * Pure C, header-only, no MPI: must not know about states or ranks. */
#ifndef QH_XSUM_H
#define QH_XSUM_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define XSUM_FRAC 5               /* fraction digits of 32 bits */
#define XSUM_N    (XSUM_FRAC + 2) /* + the integer digit + the invalid count */

typedef struct XSum {
    int64_t d[XSUM_N]; /* d[0] integer part, d[1..5] fraction digits
                            (d[i] weighs 2^(-32 i)), d[6] invalid terms */
} XSum;

static inline void xsum_zero(XSum *a) { memset(a, 0, sizeof *a); }

/* Why: the one place where a double becomes digits; exact for every bit
   of x at or above 2^-160. */
static inline void xsum_add(XSum *a, double x)
{
    if (x == 0) return;
    if (!isfinite(x) || fabs(x) >= 0x1p30) {
        a->d[XSUM_N - 1]++;
        return;
    }
    int e;
    double m = frexp(fabs(x), &e);       /* |x| = m 2^e, m in [0.5, 1) */
    uint64_t M = (uint64_t)ldexp(m, 53); /* exact 53-bit integer */
    int sh = e - 53 + 32 * XSUM_FRAC;    /* |x| = M 2^(sh - 160) */
    int neg = x < 0;
    /* digit t (0 = lowest) weighs 2^(32 t - 160): bits [32t, 32t + 32) of M 2^sh */
    for (int t = 0; t <= XSUM_FRAC; t++) {
        int lo = 32 * t - sh; /* bit of M that lands on the digit's bit 0 */
        uint64_t dig;
        if (lo >= 64)
            dig = 0;
        else if (lo >= 0)
            dig = (M >> lo) & 0xffffffffu;
        else if (lo > -32)
            dig = (M << -lo) & 0xffffffffu;
        else
            dig = 0;
        if (dig) a->d[XSUM_FRAC - t] += neg ? -(int64_t)dig : (int64_t)dig;
    }
}

/* a += b, digit by digit (exact while carries stay deferred). */
static inline void xsum_merge(XSum *a, const XSum *b)
{
    for (int i = 0; i < XSUM_N; i++) a->d[i] += b->d[i];
}

/* floor(v / 2^32) for any int64. */
static inline int64_t xsum_floor32(int64_t v)
{
    return v >= 0 ? v / ((int64_t)1 << 32)
                  : -((-v + (((int64_t)1 << 32) - 1)) / ((int64_t)1 << 32));
}

/* Canonical form: fraction digits in [0, 2^32), the integer digit signed.
   Equal sums have equal canonical digits. */
static inline void xsum_norm(XSum *a)
{
    for (int i = XSUM_FRAC; i >= 1; i--) {
        int64_t c = xsum_floor32(a->d[i]);
        a->d[i] -= c * ((int64_t)1 << 32);
        a->d[i - 1] += c;
    }
}

/* The sum as a double (NaN if an invalid term was added); deterministic:
   a function of the canonical digits only. */
static inline double xsum_value(const XSum *in)
{
    if (in->d[XSUM_N - 1] != 0) return NAN;
    XSum a = *in;
    xsum_norm(&a);
    int neg = a.d[0] < 0;
    if (neg) { /* magnitude: negate the whole fixed-point number */
        int64_t borrow = 0;
        for (int i = XSUM_FRAC; i >= 1; i--) {
            int64_t v = -a.d[i] - borrow;
            borrow = 0;
            if (v < 0) {
                v += (int64_t)1 << 32;
                borrow = 1;
            }
            a.d[i] = v;
        }
        a.d[0] = -a.d[0] - borrow;
    }
    /* all digits non-negative now: summed smallest first, each step is
       one rounding of a positive sum (a few ulps at most, no cancellation) */
    double v = 0;
    for (int i = XSUM_FRAC; i >= 1; i--) v += ldexp((double)a.d[i], -32 * i);
    v += (double)a.d[0];
    return neg ? -v : v;
}

#endif
