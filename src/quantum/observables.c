/* observables.c — expectation values and variances of Pauli sums.
 *
 * A Pauli word W(x, z) = i^{|x&z|} X^x Z^z maps |b> to
 * i^{|x&z|} (-1)^{|b&z|} |b^x>, so <W> is a sum over amplitude pairs
 * (b, b^x). Terms sharing an x mask are evaluated in one pass over the
 * state; var uses the products of commuting terms (H^2 as a Pauli sum).
 * Shot estimates draw each term's +/-1 count as an exact binomial.
 * Must not know about the language's observable values (@, hamiltonian):
 * callers flatten them into SvPauli terms.
 */
#include "sv_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A term with masks in index-bit space (wire w -> bit nq-1-w). */
typedef struct NTerm {
    uint64_t X, Z;
    double c;
} NTerm;

/* Why: kernels work on index bits; SvPauli speaks of wires. */
static NTerm nterm(const SvState *s, const SvPauli *t)
{
    NTerm n = { 0, 0, t->coeff };
    for (int w = 0; w < s->nq && w < 64; w++) {
        uint64_t b = (uint64_t)1 << sv_bitpos(s->nq, w);
        if ((t->x >> w) & 1) n.X |= b;
        if ((t->z >> w) & 1) n.Z |= b;
    }
    return n;
}

/* Order by (X, Z): terms sharing X become neighbours. */
static int cmp_nterm(const void *pa, const void *pb)
{
    const NTerm *a = pa, *b = pb;
    if (a->X != b->X) return a->X < b->X ? -1 : 1;
    if (a->Z != b->Z) return a->Z < b->Z ? -1 : 1;
    return 0;
}

/* ---- one pass for terms sharing X ------------------------------------- */

typedef struct GroupCtx {
    const SvState *s;
    uint64_t X;
    int h, r; /* highest bit of X; log2 of the run length */
    const NTerm *t;
    int ng;
    double *part; /* nparts x ng */
} GroupCtx;

/* (-1)^{popcount(b)} */
static inline double sgn(uint64_t b) { return __builtin_parityll(b) ? -1.0 : 1.0; }

/* Why: per run of 2^r amplitudes the sign of every term is constant, so
   a run costs one vectorisable sum plus one multiply-add per term. */
static void group_part(void *vctx, int part, int np)
{
    GroupCtx *c = vctx;
    const SvState *s = c->s;
    const double *p = (const double *)s->amp;
    double *acc = c->part + (size_t)part * c->ng;
    for (int k = 0; k < c->ng; k++) acc[k] = 0;
    uint64_t n = c->X ? s->dim / 2 : s->dim, a, b;
    sv_slice(n, part, np, &a, &b);
    uint64_t R = (uint64_t)1 << c->r;
    for (uint64_t i = a; i < b;) {
        uint64_t len = R - (i & (R - 1));
        if (len > b - i) len = b - i;
        if (!c->X) {
            double S = 0;
            if (len >= 16)
                S = sv_norm_range(s, i, i + len);
            else
                for (uint64_t j = i; j < i + len; j++)
                    S += p[2 * j] * p[2 * j] + p[2 * j + 1] * p[2 * j + 1];
            for (int k = 0; k < c->ng; k++) acc[k] += sgn(i & c->t[k].Z) * S;
        } else {
            uint64_t base = sv_expand(i, &c->h, 1), pb = base ^ c->X;
            const double *x = p + 2 * base, *y = p + 2 * pb;
            double re0 = 0, re1 = 0, im0 = 0, im1 = 0;
            uint64_t j = 0;
            for (; j + 2 <= len; j += 2) { /* w = conj(y) x */
                re0 += y[2 * j] * x[2 * j] + y[2 * j + 1] * x[2 * j + 1];
                im0 += y[2 * j] * x[2 * j + 1] - y[2 * j + 1] * x[2 * j];
                re1 += y[2 * j + 2] * x[2 * j + 2] + y[2 * j + 3] * x[2 * j + 3];
                im1 += y[2 * j + 2] * x[2 * j + 3] - y[2 * j + 3] * x[2 * j + 2];
            }
            for (; j < len; j++) {
                re0 += y[2 * j] * x[2 * j] + y[2 * j + 1] * x[2 * j + 1];
                im0 += y[2 * j] * x[2 * j + 1] - y[2 * j + 1] * x[2 * j];
            }
            double re = re0 + re1, im = im0 + im1;
            for (int k = 0; k < c->ng; k++) {
                int ny = __builtin_popcountll(c->X & c->t[k].Z);
                acc[k] += sgn(base & c->t[k].Z) * ((ny & 1) ? im : re);
            }
        }
        i += len;
    }
}

/* Exact <W> of ng terms sharing t[0].X (no identity terms) into vals. */
static int group_vals(const SvState *s, const NTerm *t, int ng, double *vals)
{
    GroupCtx c;
    c.s = s;
    c.X = t[0].X;
    c.t = t;
    c.ng = ng;
    c.h = c.X ? 63 - __builtin_clzll(c.X) : 0;
    int r = c.X ? __builtin_ctzll(c.X) : 64;
    for (int k = 0; k < ng; k++)
        if (t[k].Z && __builtin_ctzll(t[k].Z) < r) r = __builtin_ctzll(t[k].Z);
    if (r > s->nq) r = s->nq;
    c.r = r;
    int np = sv_nparts(s);
    double stack[512];
    size_t need = (size_t)np * (size_t)ng;
    c.part = need <= 512 ? stack : malloc(need * sizeof(double));
    if (!c.part) return -1;
    np = sv_parallel(s, group_part, &c);
    for (int k = 0; k < ng; k++) {
        double v = 0;
        for (int q = 0; q < np; q++) v += c.part[(size_t)q * ng + k];
        if (c.X) {
            int ny = __builtin_popcountll(c.X & t[k].Z);
            /* pair (b, b^X): i^ny [w + (-1)^ny conj w] */
            double f = (ny & 1) ? (((ny + 1) / 2) & 1 ? -2.0 : 2.0) : ((ny / 2) & 1 ? -2.0 : 2.0);
            v *= f;
        }
        vals[k] = v;
    }
    if (c.part != stack) free(c.part);
    return 0;
}

/* Why: sorts t by (X, Z) and gives each term's exact <W> (identity = 1),
   one pass per distinct X. */
static int term_vals(const SvState *s, NTerm *t, int n, double *vals)
{
    qsort(t, (size_t)n, sizeof *t, cmp_nterm);
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && t[j].X == t[i].X) j++;
        int k = i;
        if (!t[i].X) /* identity terms sort first within X = 0 */
            for (; k < j && !t[k].Z; k++) vals[k] = 1.0;
        if (k < j && group_vals(s, t + k, j - k, vals + k) != 0) return -1;
        i = j;
    }
    return 0;
}

/* Normalised copy of the terms (heap; NULL on failure). */
/* Why: the caller's array stays untouched; we sort a copy. */
static NTerm *norm_terms(const SvState *s, const SvPauli *t, int n)
{
    NTerm *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v) return NULL;
    for (int i = 0; i < n; i++) v[i] = nterm(s, &t[i]);
    return v;
}

/* ---- products: H^2 as a Pauli sum ------------------------------------- */

/* Why: W1 W2 = i^{n1+n2-n3} (-1)^{|z1&x2|} W3 with W3 = W(x1^x2, z1^z2);
   {W1, W2} = 2 W1 W2 when they commute and 0 otherwise, so
   H^2 = sum c_j^2 + 2 sum_{j<k, commuting} c_j c_k W_j W_k. Deduplicated. */
static NTerm *square_terms(const NTerm *t, int n, int *np_out)
{
    size_t cap = (size_t)n * (size_t)(n - 1) / 2 + 1;
    NTerm *v = malloc(cap * sizeof *v);
    if (!v) return NULL;
    size_t m = 1;
    v[0].X = v[0].Z = 0;
    v[0].c = 0;
    for (int j = 0; j < n; j++) v[0].c += t[j].c * t[j].c;
    for (int j = 0; j < n; j++)
        for (int k = j + 1; k < n; k++) {
            uint64_t x1 = t[j].X, z1 = t[j].Z, x2 = t[k].X, z2 = t[k].Z;
            if ((__builtin_popcountll(x1 & z2) + __builtin_popcountll(z1 & x2)) & 1) continue;
            uint64_t x3 = x1 ^ x2, z3 = z1 ^ z2;
            int e = __builtin_popcountll(x1 & z1) + __builtin_popcountll(x2 & z2) -
                    __builtin_popcountll(x3 & z3);
            e = ((e % 4) + 4) % 4; /* 0 or 2 for commuting words */
            double ph = (e == 2 ? -1.0 : 1.0) * sgn(z1 & x2);
            v[m].X = x3;
            v[m].Z = z3;
            v[m].c = 2 * t[j].c * t[k].c * ph;
            m++;
        }
    qsort(v, m, sizeof *v, cmp_nterm);
    size_t w = 0;
    for (size_t i = 0; i < m; i++) {
        if (w && v[w - 1].X == v[i].X && v[w - 1].Z == v[i].Z)
            v[w - 1].c += v[i].c;
        else
            v[w++] = v[i];
    }
    *np_out = (int)w;
    return v;
}

/* ---- shot estimates --------------------------------------------------- */

/* log(x!) (lgamma_r: thread-safe, unlike lgamma). */
static double lfact(double x)
{
    int sign;
    return lgamma_r(x + 1.0, &sign);
}

/* Why: exact binomial draws make shot estimates exact sampling without
   drawing every shot: inversion for small means, BTRS (Hormann 1993,
   transformed rejection with squeeze) otherwise. */
uint64_t sv_binomial(Rng *r, uint64_t n, double p)
{
    if (n == 0 || !(p > 0)) return 0;
    if (p >= 1) return n;
    int flip = p > 0.5;
    if (flip) p = 1 - p;
    double q = 1 - p, np = (double)n * p;
    uint64_t k;
    if (np < 14) {
        double s = p / q, a = ((double)n + 1) * s, f0 = exp((double)n * log1p(-p));
        uint64_t cap = n < 1000 ? n : 1000;
        for (;;) {
            double u = rng_uniform(r), f = f0;
            uint64_t x = 0;
            while (u > f && x < cap) {
                u -= f;
                x++;
                f *= a / (double)x - s;
            }
            if (u <= f) {
                k = x;
                break;
            }
        }
    } else {
        double spq = sqrt(np * q);
        double b = 1.15 + 2.53 * spq;
        double a = -0.0873 + 0.0248 * b + 0.01 * p;
        double c = np + 0.5;
        double alpha = (2.83 + 5.1 / b) * spq;
        double vr = 0.92 - 4.2 / b;
        double m = floor(((double)n + 1) * p);
        double lpq = log(p / q);
        double h = lfact(m) + lfact((double)n - m);
        for (;;) {
            double u = rng_uniform(r) - 0.5;
            double v = rng_uniform(r);
            double us = 0.5 - fabs(u);
            if (us <= 0) continue;
            double kk = floor((2 * a / us + b) * u + c);
            if (kk < 0 || kk > (double)n) continue;
            if (us >= 0.07 && v <= vr) {
                k = (uint64_t)kk;
                break;
            }
            v = log(v * alpha / (a / (us * us) + b));
            if (v <= h - lfact(kk) - lfact((double)n - kk) + (kk - m) * lpq) {
                k = (uint64_t)kk;
                break;
            }
        }
    }
    return flip ? n - k : k;
}

/* Why: a word's outcomes are +/-1, so N shots are one binomial draw
   (every simulator's shot estimate of a Pauli word). */
double sv_word_estimate(double v, size_t shots, Rng *r)
{
    double p = (1 + v) / 2;
    if (p < 0) p = 0;
    if (p > 1) p = 1;
    uint64_t k = sv_binomial(r, shots, p);
    return (2.0 * (double)k - (double)shots) / (double)shots;
}

/* ---- the interface ---------------------------------------------------- */

/* Why: sum c * <W> over the (sorted) terms, exact or estimated. */
static double weighted(const SvState *s, NTerm *t, int n, size_t shots, Rng *r, int *fail)
{
    double stack[64];
    double *vals = n <= 64 ? stack : malloc((size_t)n * sizeof(double));
    if (!vals || term_vals(s, t, n, vals) != 0) {
        if (vals != stack) free(vals);
        *fail = 1;
        return NAN;
    }
    double sum = 0;
    for (int i = 0; i < n; i++) {
        double v = vals[i];
        if (r && shots && (t[i].X || t[i].Z)) v = sv_word_estimate(v, shots, r);
        sum += t[i].c * v;
    }
    if (vals != stack) free(vals);
    return sum;
}

/* Why: exact and shot expectation share the grouping. */
static double expval_any(const SvState *s, const SvPauli *t, int n, size_t shots, Rng *r)
{
    if (!s || !s->amp || !t || n <= 0) return 0;
    NTerm *v = norm_terms(s, t, n);
    if (!v) return NAN;
    int fail = 0;
    double e = weighted(s, v, n, shots, r, &fail);
    free(v);
    return e;
}

/* Why: var = <H^2> - <H>^2 with H^2 expanded into Pauli words. */
static double var_any(const SvState *s, const SvPauli *t, int n, size_t shots, Rng *r)
{
    if (!s || !s->amp || !t || n <= 0) return 0;
    NTerm *v = norm_terms(s, t, n);
    if (!v) return NAN;
    int np, fail = 0;
    NTerm *sq = square_terms(v, n, &np);
    if (!sq) {
        free(v);
        return NAN;
    }
    double h2 = weighted(s, sq, np, shots, r, &fail);
    double h1 = weighted(s, v, n, shots, r, &fail);
    free(sq);
    free(v);
    if (fail) return NAN;
    double var = h2 - h1 * h1;
    return var > 0 ? var : 0;
}

double sv_expval(const SvState *s, const SvPauli *t, int nterms)
{
    return expval_any(s, t, nterms, 0, NULL);
}

double sv_var(const SvState *s, const SvPauli *t, int nterms)
{
    return var_any(s, t, nterms, 0, NULL);
}

double sv_expval_shots(const SvState *s, const SvPauli *t, int nterms, size_t shots, Rng *r)
{
    return expval_any(s, t, nterms, shots, r);
}

double sv_var_shots(const SvState *s, const SvPauli *t, int nterms, size_t shots, Rng *r)
{
    return var_any(s, t, nterms, shots, r);
}

/* Why: the density-matrix room computes var from the same expansion;
   square_terms does not care which bit space the masks are in. */
int sv_pauli_square(const SvPauli *t, int n, SvPauli **out)
{
    *out = NULL;
    if (!t || n <= 0) return 0;
    NTerm *v = malloc((size_t)n * sizeof *v);
    if (!v) return -1;
    for (int i = 0; i < n; i++) {
        v[i].X = t[i].x;
        v[i].Z = t[i].z;
        v[i].c = t[i].coeff;
    }
    int np;
    NTerm *sq = square_terms(v, n, &np);
    free(v);
    if (!sq) return -1;
    SvPauli *o = malloc((size_t)np * sizeof *o);
    if (!o) {
        free(sq);
        return -1;
    }
    for (int i = 0; i < np; i++) {
        o[i].x = sq[i].X;
        o[i].z = sq[i].Z;
        o[i].coeff = sq[i].c;
    }
    free(sq);
    *out = o;
    return np;
}

/* Why: sample(obs) for one Pauli word: i.i.d. eigenvalues. */
void sv_sample_pauli(const SvState *s, const SvPauli *word, size_t shots, Rng *r, double *out)
{
    if (!s || !s->amp || !word || !out) return;
    NTerm t = nterm(s, word);
    double v = 1.0;
    if ((t.X || t.Z) && term_vals(s, &t, 1, &v) != 0) v = NAN;
    double p = (1 + v) / 2;
    for (size_t i = 0; i < shots; i++) out[i] = rng_uniform(r) < p ? word->coeff : -word->coeff;
}
