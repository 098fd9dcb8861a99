/* measure.c — probabilities, basis-state sampling, mid-circuit measurement.
 *
 * Reads the state (probs, sample) or collapses it (measure), drawing from a
 * caller-owned Rng so results depend only on the seed. Exact sampling:
 * multinomial draws as chains of binomials, basis samples from sorted
 * order statistics swept once over the amplitudes (no cumulative array).
 * Must not know about the language, shots as a device option, or counts
 * dictionaries: callers turn these numbers into values.
 */
#include "sv_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* |amp[i]|^2 */
static inline double amp2(const double *p, uint64_t i)
{
    return p[2 * i] * p[2 * i] + p[2 * i + 1] * p[2 * i + 1];
}

/* Sum of |a|^2 over [a, a+len): short runs inline, long ones wide. */
static inline double run_norm(const SvState *s, uint64_t a, uint64_t len)
{
    if (len >= 16) return sv_norm_range(s, a, a + len);
    const double *p = (const double *)s->amp;
    double acc = 0;
    for (uint64_t i = a; i < a + len; i++) acc += amp2(p, i);
    return acc;
}

/* ---- probabilities ---------------------------------------------------- */

typedef struct ProbCtx {
    const SvState *s;
    int nw;
    int pos[64]; /* bit positions, first = MSB of the output */
    int low;     /* lowest of them */
    double *out[SV_MAX_TEAM];
} ProbCtx;

/* Why: runs of 2^low consecutive amplitudes share one output bin. */
static void probs_part(void *vctx, int part, int np)
{
    ProbCtx *c = vctx;
    const SvState *s = c->s;
    double *out = c->out[part];
    memset(out, 0, ((size_t)1 << c->nw) * sizeof(double));
    uint64_t a, b;
    sv_slice(s->dim, part, np, &a, &b);
    uint64_t R = (uint64_t)1 << c->low;
    for (uint64_t i = a; i < b;) {
        uint64_t len = R - (i & (R - 1));
        if (len > b - i) len = b - i;
        uint64_t j = 0;
        for (int r = 0; r < c->nw; r++) j = (j << 1) | ((i >> c->pos[r]) & 1);
        out[j] += run_norm(s, i, len);
        i += len;
    }
}

typedef struct AllCtx {
    const SvState *s;
    double *out;
} AllCtx;

/* Why: probs() over all wires in order is just |a|^2, in parallel. */
static void probs_all_part(void *vctx, int part, int np)
{
    AllCtx *c = vctx;
    const double *p = (const double *)c->s->amp;
    uint64_t a, b;
    sv_slice(c->s->dim, part, np, &a, &b);
    for (uint64_t i = a; i < b; i++) c->out[i] = amp2(p, i);
}

/* Why: probs() of the language, and the exact marginal that the shot
   estimators draw from. */
int sv_probs(const SvState *s, const int *wires, int nw, double *out, char *err, size_t errlen)
{
    const char *name = "probs";
    if (!s || !s->amp) return sv_err(err, errlen, SV_E_NOSTATE, name);
    if (!out) return sv_err(err, errlen, SV_E_NOMAT, name);
    if (nw < 0 || nw > 30 || nw > s->nq)
        return sv_err(err, errlen, SV_E_NWMEAS, name, nw, s->nq < 30 ? s->nq : 30);
    if (nw > 0 && !wires) return sv_err(err, errlen, SV_E_NOWIRES, name);
    int all = nw == 0;
    for (int i = 0; i < nw; i++) {
        if (wires[i] < 0 || wires[i] >= s->nq)
            return sv_err(err, errlen, SV_E_RANGE, name, wires[i], s->nq);
        for (int j = 0; j < i; j++)
            if (wires[i] == wires[j]) {
                char buf[32];
                snprintf(buf, sizeof buf, "%d, %d", wires[j], wires[i]);
                return sv_err(err, errlen, SV_E_DUP, name, buf);
            }
    }
    if (nw == s->nq) {
        all = 1;
        for (int i = 0; i < nw; i++) all &= wires[i] == i;
    }
    if (all) {
        if (s->nq > 30) return sv_err(err, errlen, SV_E_NWMEAS, name, s->nq, 30);
        AllCtx c = { s, out };
        sv_parallel(s, probs_all_part, &c);
        return 0;
    }
    ProbCtx c;
    c.s = s;
    c.nw = nw;
    c.low = 64;
    for (int i = 0; i < nw; i++) {
        c.pos[i] = sv_bitpos(s->nq, wires[i]);
        if (c.pos[i] < c.low) c.low = c.pos[i];
    }
    size_t K = (size_t)1 << nw;
    int np = sv_nparts(s);
    double *extra = NULL;
    if (np > 1 && nw <= 12) extra = malloc((size_t)(np - 1) * K * sizeof(double));
    if (!extra) { /* serial: one histogram */
        c.out[0] = out;
        probs_part(&c, 0, 1);
        return 0;
    }
    c.out[0] = out;
    for (int p = 1; p < np; p++) c.out[p] = extra + (size_t)(p - 1) * K;
    sv_parallel(s, probs_part, &c);
    for (int p = 1; p < np; p++)
        for (size_t j = 0; j < K; j++) out[j] += c.out[p][j];
    free(extra);
    return 0;
}

/* Why: probs with shots on every simulator (statevector, density matrix,
   distributed): one multinomial draw over the exact marginal, as a chain
   of conditional binomials (exact, O(K)). */
void sv_freq_shots(Rng *r, double *p, size_t K, size_t shots)
{
    if (!p || shots == 0) return;
    double rest = 0;
    for (size_t j = 0; j < K; j++) rest += p[j];
    uint64_t left = shots;
    for (size_t j = 0; j < K; j++) {
        double pj = p[j];
        uint64_t k = 0;
        if (left > 0) {
            double q = (j == K - 1 || rest <= 0) ? 1.0 : pj / rest;
            if (q > 1) q = 1;
            if (q < 0) q = 0;
            k = sv_binomial(r, left, q);
        }
        rest -= pj;
        left -= k;
        p[j] = (double)k / (double)shots;
    }
}

void sv_probs_shots(const SvState *s, const int *wires, int nw, size_t shots, Rng *r, double *out)
{
    if (!out) return;
    int n = nw ? nw : (s && s->nq <= 30 ? s->nq : 0);
    size_t K = (size_t)1 << n;
    if (sv_probs(s, wires, nw, out, NULL, 0) != 0) {
        if (s && nw >= 0 && nw <= 30)
            for (size_t j = 0; j < K; j++) out[j] = NAN;
        return;
    }
    sv_freq_shots(r, out, K, shots);
}

/* ---- basis samples ---------------------------------------------------- */

typedef struct NormCtx {
    const SvState *s;
    double part[SV_MAX_TEAM];
} NormCtx;

/* One slice of the total norm. */
static void norm_part(void *vctx, int part, int np)
{
    NormCtx *c = vctx;
    uint64_t a, b;
    sv_slice(c->s->dim, part, np, &a, &b);
    c->part[part] = b > a ? sv_norm_range(c->s, a, b) : 0;
}

/* Why: sampling scales its uniforms by the actual norm (drift-proof). */
static double total_norm(const SvState *s)
{
    NormCtx c;
    c.s = s;
    int np = sv_parallel(s, norm_part, &c);
    double t = 0;
    for (int p = 0; p < np; p++) t += c.part[p];
    return t;
}

/* Why: sample()/counts() on every simulator: shots i.i.d. draws of an
   index in [0, dim). Uniforms are produced already sorted (descending
   order statistics, X_k = X_{k+1} V^{1/k}) and matched against one sweep
   of the weights, which fill() hands over a chunk at a time (one indirect
   call per chunk, not per index); a final shuffle restores i.i.d. order.
   Never an index of weight 0, even when rounding runs past the end. */
void sv_sweep_draw(Rng *r, size_t shots, uint64_t dim, double T, SvWeightFill fill, const void *src,
                   uint64_t *out)
{
    if (!r || !fill || !out || shots == 0 || dim == 0) return;
    enum { CHUNK = 256 };
    double w[CHUNK];
    uint64_t base = 0, len = dim < CHUNK ? dim : CHUNK, i = 0, lastnz = 0;
    fill(src, 0, (size_t)len, w);
    double cum = 0, pi = w[0] > 0 ? w[0] : 0, x = 1;
    for (size_t k = shots; k >= 1; k--) {
        x *= pow(1.0 - rng_uniform(r), 1.0 / (double)k);
        double u = (1.0 - x) * T;
        while (cum + pi <= u && i + 1 < dim) {
            if (pi > 0) lastnz = i;
            cum += pi;
            i++;
            if (i - base == len) {
                base = i;
                len = dim - base < CHUNK ? dim - base : CHUNK;
                fill(src, base, (size_t)len, w);
            }
            double q = w[i - base];
            pi = q > 0 ? q : 0;
        }
        out[shots - k] = pi > 0 ? i : lastnz;
    }
    for (size_t k = shots - 1; k >= 1; k--) {
        size_t j = (size_t)rng_below(r, k + 1);
        uint64_t t = out[k];
        out[k] = out[j];
        out[j] = t;
    }
}

/* |amp|^2 of n amplitudes from a. */
static void amp2_fill(const void *src, uint64_t a, size_t n, double *w)
{
    const double *p = (const double *)((const SvState *)src)->amp;
    for (size_t j = 0; j < n; j++) w[j] = amp2(p, a + j);
}

void sv_sample(const SvState *s, size_t shots, Rng *r, uint64_t *out)
{
    if (!s || !s->amp || !out || shots == 0) return;
    sv_sweep_draw(r, shots, s->dim, total_norm(s), amp2_fill, s, out);
}

/* ---- mid-circuit measurement ------------------------------------------ */

typedef struct WireCtx {
    const SvState *s;
    int t;
    double p0[SV_MAX_TEAM], p1[SV_MAX_TEAM];
} WireCtx;

/* Why: P(wire = 0) and P(wire = 1) in one pass. */
static void wire_part(void *vctx, int part, int np)
{
    WireCtx *c = vctx;
    const SvState *s = c->s;
    uint64_t a, b, R = (uint64_t)1 << c->t;
    sv_slice(s->dim, part, np, &a, &b);
    double acc[2] = { 0, 0 };
    if (c->t < 3) {
        const double *p = (const double *)s->amp;
        for (uint64_t i = a; i < b; i++) acc[(i >> c->t) & 1] += amp2(p, i);
    } else {
        for (uint64_t i = a; i < b;) {
            uint64_t len = R - (i & (R - 1));
            if (len > b - i) len = b - i;
            acc[(i >> c->t) & 1] += run_norm(s, i, len);
            i += len;
        }
    }
    c->p0[part] = acc[0];
    c->p1[part] = acc[1];
}

/* Why: measure(w, reset) in a quantum function: Born draw, collapse,
   renormalise (and reset) in one pass of a 2x2 projector. */
int sv_measure(SvState *s, int wire, int reset, Rng *r, char *err, size_t errlen)
{
    const char *name = "measure";
    if (!s || !s->amp) return sv_err(err, errlen, SV_E_NOSTATE, name);
    if (wire < 0 || wire >= s->nq) return sv_err(err, errlen, SV_E_RANGE, name, wire, s->nq);
    WireCtx c;
    c.s = s;
    c.t = sv_bitpos(s->nq, wire);
    int np = sv_parallel(s, wire_part, &c);
    double p0 = 0, p1 = 0;
    for (int p = 0; p < np; p++) {
        p0 += c.p0[p];
        p1 += c.p1[p];
    }
    double tot = p0 + p1;
    if (!(tot > 0) || !isfinite(tot)) return sv_err(err, errlen, SV_E_ZERONORM, name);
    int outcome = rng_uniform(r) * tot < p1;
    double scale = 1.0 / sqrt(outcome ? p1 : p0);
    cplx m[4] = { 0, 0, 0, 0 };
    if (!outcome)
        m[0] = scale;
    else if (reset)
        m[1] = scale;
    else
        m[3] = scale;
    if (sv_apply_matrix(s, &wire, 1, m, err, errlen) != 0) return -1;
    return outcome;
}
