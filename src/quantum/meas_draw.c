/* meas_draw.c — exact draws from small distributions (svmeas.h): i.i.d.
 * categorical samples and multinomial counts (what sample(obs) and
 * counts(obs) make from a spectrum's probabilities), and the postselected
 * mid-circuit measurement. Randomness only from the caller's Rng. Must not
 * know about shots as a device option or about values.
 */
#include "svmeas.h"
#include "sv_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define E_OUTCOME "measure: postselect must be 0 or 1, got %d"
#define E_ZEROP   "measure: postselected outcome %d has probability 0"

static double clean(double x) { return isfinite(x) && x > 0 ? x : 0; }

/* Why: a cumulative table and a binary search per draw: K is small
   (at most 2^SV_MAX_DENSE levels), shots may be large. */
void sv_draw(Rng *r, const double *p, size_t K, size_t shots, uint64_t *out)
{
    if (!r || !p || !out || K == 0) return;
    double *cum = malloc(K * sizeof(double));
    if (!cum) { /* fall back to a linear scan per draw */
        double tot = 0;
        for (size_t j = 0; j < K; j++) tot += clean(p[j]);
        for (size_t s = 0; s < shots; s++) {
            double u = rng_uniform(r) * tot, c = 0;
            size_t j = 0, last = 0;
            for (; j < K; j++) {
                if (clean(p[j]) > 0) last = j;
                c += clean(p[j]);
                if (u < c) break;
            }
            out[s] = j < K ? j : last;
        }
        return;
    }
    double tot = 0;
    size_t last = 0;
    for (size_t j = 0; j < K; j++) {
        if (clean(p[j]) > 0) last = j;
        tot += clean(p[j]);
        cum[j] = tot;
    }
    for (size_t s = 0; s < shots; s++) {
        double u = rng_uniform(r) * tot;
        size_t lo = 0, hi = K; /* first j with u < cum[j] */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (u < cum[mid])
                hi = mid;
            else
                lo = mid + 1;
        }
        /* never an outcome of probability 0 (u == tot by rounding) */
        out[s] = lo < K && clean(p[lo]) > 0 ? lo : last;
    }
    free(cum);
}

/* Why: counts without drawing every shot: a chain of conditional binomials
   (exact), as sv_probs_shots. */
void sv_multinomial(Rng *r, const double *p, size_t K, uint64_t shots, uint64_t *counts)
{
    if (!r || !p || !counts || K == 0) return;
    double rest = 0;
    for (size_t j = 0; j < K; j++) rest += clean(p[j]);
    uint64_t left = shots;
    for (size_t j = 0; j < K; j++) {
        double pj = clean(p[j]);
        uint64_t k = 0;
        if (left > 0 && pj > 0) {
            double q = rest <= pj ? 1.0 : pj / rest;
            if (q > 1) q = 1;
            k = sv_binomial(r, left, q);
        }
        rest -= pj;
        left -= k;
        counts[j] = k;
    }
    if (left > 0) { /* rounding left some: give them to the last possible outcome */
        for (size_t j = K; j-- > 0;)
            if (clean(p[j]) > 0) {
                counts[j] += left;
                break;
            }
    }
}

int sv_measure_post(SvState *s, int wire, int outcome, int reset, double *prob, char *err,
                    size_t errlen)
{
    const char *name = "measure";
    if (!s || !s->amp) return sv_err(err, errlen, SV_E_NOSTATE, name);
    if (wire < 0 || wire >= s->nq) return sv_err(err, errlen, SV_E_RANGE, name, wire, s->nq);
    if (outcome != 0 && outcome != 1) return sv_err(err, errlen, E_OUTCOME, outcome);
    double p2[2];
    if (sv_probs(s, &wire, 1, p2, err, errlen) != 0) return -1;
    double tot = p2[0] + p2[1];
    if (!(tot > 0) || !isfinite(tot)) return sv_err(err, errlen, SV_E_ZERONORM, name);
    double po = p2[outcome];
    if (prob) *prob = po / tot;
    if (!(po > 0)) return sv_err(err, errlen, E_ZEROP, outcome);
    double scale = 1.0 / sqrt(po);
    cplx m[4] = { 0, 0, 0, 0 };
    if (!outcome)
        m[0] = scale;
    else if (reset)
        m[1] = scale;
    else
        m[3] = scale;
    return sv_apply_matrix(s, &wire, 1, m, err, errlen);
}
