/* dm_measure.c — measurements of a mixed state.
 *
 * Everything reads rho's elements directly: probabilities are its
 * diagonal, a Pauli word W(x, z) has Tr(rho W) = sum_b i^{|x&z|}
 * (-1)^{|b&z|} rho[b][b^x] (one pass over 2^n elements per word), the
 * variance expands H^2 into Pauli words (sv_pauli_square), shot estimates
 * and samples draw exactly as the statevector room does (binomials,
 * sorted uniforms), a mid-circuit measurement is a Kraus map of one
 * projector, reduced states trace out the other wires, the entropy takes
 * the eigenvalues from LAPACK (sv_entropy_of). Must not know about the language.
 */
#include "dm.h"
#include "errf.h"
#include "svmeas.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* rho[r][c] */
static inline cplx el(const DmState *d, uint64_t r, uint64_t c) { return d->v.amp[r * d->dim + c]; }

/* Why: the wire lists of measurements are user input. */
static int check_wires(const DmState *d, const char *name, const int *w, int nw, int maxw,
                       char *err, size_t errlen)
{
    if (!d || !d->v.amp) return qh_errf(err, errlen, "%s: no state", name);
    if (nw < 0 || nw > maxw || nw > d->n)
        return qh_errf(err, errlen, "%s: %d wires asked, at most %d", name, nw,
                       d->n < maxw ? d->n : maxw);
    if (nw > 0 && !w) return qh_errf(err, errlen, "%s: needs at least one wire", name);
    for (int i = 0; i < nw; i++) {
        if (w[i] < 0 || w[i] >= d->n)
            return qh_errf(err, errlen, "%s: wire %d out of range for a %d-wire device", name, w[i],
                           d->n);
        for (int j = 0; j < i; j++)
            if (w[i] == w[j])
                return qh_errf(err, errlen, "%s: wires must be distinct (%d, %d)", name, w[j],
                               w[i]);
    }
    return 0;
}

double dm_trace(const DmState *d)
{
    double t = 0;
    for (uint64_t b = 0; b < d->dim; b++) t += creal(el(d, b, b));
    return t;
}

/* ---- Pauli sums ----------------------------------------------------------- */

/* Why: Tr(rho W) of one word given by wires (bit w of x/z <-> wire w). */
static double word_val(const DmState *d, const SvPauli *t)
{
    uint64_t X = 0, Z = 0;
    for (int w = 0; w < d->n && w < 64; w++) {
        uint64_t b = (uint64_t)1 << (d->n - 1 - w);
        if ((t->x >> w) & 1) X |= b;
        if ((t->z >> w) & 1) Z |= b;
    }
    if (!X && !Z) return dm_trace(d);
    double re = 0, im = 0;
    for (uint64_t b = 0; b < d->dim; b++) {
        cplx v = el(d, b, b ^ X);
        if (__builtin_parityll(b & Z)) v = -v;
        re += creal(v);
        im += cimag(v);
    }
    switch (__builtin_popcountll(X & Z) & 3) { /* times i^{ny}, real part */
    case 0: return re;
    case 1: return -im;
    case 2: return -re;
    default: return im;
    }
}

static int is_identity(const SvPauli *t) { return !t->x && !t->z; }

/* Why: exact and shot expectations share one loop over the terms. */
static double weighted(const DmState *d, const SvPauli *t, int n, size_t shots, Rng *r)
{
    double sum = 0;
    for (int i = 0; i < n; i++) {
        double v = word_val(d, &t[i]);
        if (r && shots && !is_identity(&t[i])) v = sv_word_estimate(v, shots, r);
        sum += t[i].coeff * v;
    }
    return sum;
}

static double var_any(const DmState *d, const SvPauli *t, int n, size_t shots, Rng *r)
{
    if (!d || !d->v.amp || !t || n <= 0) return 0;
    SvPauli *sq;
    int nsq = sv_pauli_square(t, n, &sq);
    if (nsq < 0) return NAN;
    double h2 = weighted(d, sq, nsq, shots, r);
    double h1 = weighted(d, t, n, shots, r);
    free(sq);
    double v = h2 - h1 * h1;
    return v > 0 ? v : 0;
}

double dm_expval(const DmState *d, const SvPauli *t, int n)
{
    if (!d || !d->v.amp || !t || n <= 0) return 0;
    return weighted(d, t, n, 0, NULL);
}

double dm_var(const DmState *d, const SvPauli *t, int n) { return var_any(d, t, n, 0, NULL); }

double dm_expval_shots(const DmState *d, const SvPauli *t, int n, size_t shots, Rng *r)
{
    if (!d || !d->v.amp || !t || n <= 0) return 0;
    return weighted(d, t, n, shots, r);
}

double dm_var_shots(const DmState *d, const SvPauli *t, int n, size_t shots, Rng *r)
{
    return var_any(d, t, n, shots, r);
}

void dm_sample_pauli(const DmState *d, const SvPauli *word, size_t shots, Rng *r, double *out)
{
    if (!d || !d->v.amp || !word || !out) return;
    double v = is_identity(word) ? 1.0 : word_val(d, word);
    double p = (1 + v) / 2;
    for (size_t i = 0; i < shots; i++) out[i] = rng_uniform(r) < p ? word->coeff : -word->coeff;
}

/* ---- reduced states ------------------------------------------------------- */

/* Why: density_matrix(wires), purity and entropy of a subsystem, dense
   observables: rho_W[a][a'] = sum_b rho[(a, b)][(a', b)]. */
int dm_reduced(const DmState *d, const int *wires, int nw, cplx *out, char *err, size_t errlen)
{
    const char *name = "density_matrix";
    if (check_wires(d, name, wires, nw, 14, err, errlen)) return -1;
    if (nw == 0) return qh_errf(err, errlen, "%s: needs at least one wire", name);
    if (!out) return qh_errf(err, errlen, "%s: no output", name);
    int n = d->n, no = n - nw, other[64], isw[64] = { 0 };
    for (int i = 0; i < nw; i++) isw[wires[i]] = 1;
    for (int w = 0, j = 0; w < n; w++)
        if (!isw[w]) other[j++] = w;
    size_t A = (size_t)1 << nw, B = (size_t)1 << no;
    uint64_t *offa = malloc(A * sizeof *offa), *offb = malloc(B * sizeof *offb);
    if (!offa || !offb) {
        free(offa);
        free(offb);
        return qh_errf(err, errlen, "%s: out of memory", name);
    }
    for (size_t a = 0; a < A; a++) {
        uint64_t o = 0;
        for (int i = 0; i < nw; i++)
            if ((a >> (nw - 1 - i)) & 1) o |= (uint64_t)1 << (n - 1 - wires[i]);
        offa[a] = o;
    }
    for (size_t b = 0; b < B; b++) {
        uint64_t o = 0;
        for (int i = 0; i < no; i++)
            if ((b >> (no - 1 - i)) & 1) o |= (uint64_t)1 << (n - 1 - other[i]);
        offb[b] = o;
    }
    memset(out, 0, A * A * sizeof(cplx));
    for (size_t b = 0; b < B; b++)
        for (size_t a = 0; a < A; a++) {
            const cplx *row = d->v.amp + (offa[a] | offb[b]) * d->dim + offb[b];
            cplx *o = out + a * A;
            for (size_t a2 = 0; a2 < A; a2++) o[a2] += row[offa[a2]];
        }
    free(offa);
    free(offb);
    return 0;
}

/* The reduced state of the wires (all of them when nw = 0) on the heap. */
static cplx *reduced_heap(const DmState *d, const int *wires, int nw, int *k)
{
    int all[64];
    if (nw == 0) {
        if (!d || d->n > 14) return NULL;
        for (int i = 0; i < d->n; i++) all[i] = i;
        wires = all;
        nw = d->n;
    }
    if (nw < 1 || nw > 14) return NULL;
    size_t A = (size_t)1 << nw;
    cplx *m = malloc(A * A * sizeof(cplx));
    if (!m || dm_reduced(d, wires, nw, m, NULL, 0) != 0) {
        free(m);
        return NULL;
    }
    *k = nw;
    return m;
}

double dm_purity(const DmState *d, const int *wires, int nw)
{
    if (nw == 0 && d && d->v.amp) { /* the whole state: no copy */
        return sv_purity_of(d->v.amp, (int)d->dim);
    }
    int k;
    cplx *m = reduced_heap(d, wires, nw, &k);
    if (!m) return NAN;
    double p = sv_purity_of(m, 1 << k);
    free(m);
    return p;
}

double dm_vn_entropy(const DmState *d, const int *wires, int nw, double base)
{
    int k;
    cplx *m = reduced_heap(d, wires, nw, &k);
    if (!m) return NAN;
    double h = sv_entropy_of(m, 1 << k, NULL, 0);
    if (base > 0) h /= log(base);
    free(m);
    return h;
}

/* Why: Hermitian(matrix, wires) observables: Tr(rho_W H) = sum rho_W[a][a'] H[a'][a]. */
double dm_expval_matrix(const DmState *d, const int *wires, int k, const cplx *h)
{
    if (!h || k < 1) return NAN;
    size_t A = (size_t)1 << k;
    cplx *m = malloc(A * A * sizeof(cplx));
    if (!m || dm_reduced(d, wires, k, m, NULL, 0) != 0) {
        free(m);
        return NAN;
    }
    double s = 0;
    for (size_t a = 0; a < A; a++)
        for (size_t b = 0; b < A; b++) s += creal(m[a * A + b] * h[b * A + a]);
    free(m);
    return s;
}

/* ---- probabilities and samples -------------------------------------------- */

int dm_probs(const DmState *d, const int *wires, int nw, double *out, char *err, size_t errlen)
{
    const char *name = "probs";
    if (check_wires(d, name, wires, nw, 30, err, errlen)) return -1;
    if (!out) return qh_errf(err, errlen, "%s: no output", name);
    int n = d->n;
    if (nw == 0) {
        for (uint64_t b = 0; b < d->dim; b++) {
            double p = creal(el(d, b, b));
            out[b] = p > 0 || d->tangent ? p : 0;
        }
        return 0;
    }
    memset(out, 0, ((size_t)1 << nw) * sizeof(double));
    for (uint64_t b = 0; b < d->dim; b++) {
        uint64_t j = 0;
        for (int i = 0; i < nw; i++) j = (j << 1) | ((b >> (n - 1 - wires[i])) & 1);
        out[j] += creal(el(d, b, b));
    }
    for (size_t j = 0; j < ((size_t)1 << nw) && !d->tangent; j++)
        if (out[j] < 0) out[j] = 0;
    return 0;
}

/* Why: probs with shots: one multinomial draw over the exact marginal. */
void dm_probs_shots(const DmState *d, const int *wires, int nw, size_t shots, Rng *r, double *out)
{
    if (!out || !d) return;
    int n = nw ? nw : d->n;
    size_t K = (size_t)1 << n;
    if (dm_probs(d, wires, nw, out, NULL, 0) != 0) {
        if (nw >= 0 && nw <= 30)
            for (size_t j = 0; j < K; j++) out[j] = NAN;
        return;
    }
    sv_freq_shots(r, out, K, shots);
}

/* rho's diagonal, n entries from a. */
static void diag_fill(const void *src, uint64_t a, size_t n, double *w)
{
    const DmState *d = src;
    for (size_t j = 0; j < n; j++) w[j] = creal(el(d, a + j, a + j));
}

/* Why: sample()/counts(): i.i.d. basis states drawn from the diagonal as
   the statevector room draws them (sv_sweep_draw). */
void dm_sample(const DmState *d, size_t shots, Rng *r, uint64_t *out)
{
    if (!d || !d->v.amp || !out || shots == 0) return;
    double T = 0;
    for (uint64_t b = 0; b < d->dim; b++) {
        double p = creal(el(d, b, b));
        if (p > 0) T += p;
    }
    sv_sweep_draw(r, shots, d->dim, T, diag_fill, d, out);
}

/* Why: measure(w, reset) on the mixed device: Born draw from the
   diagonal, then the projector (or |0><1| for a reset of 1) as a Kraus
   map scaled by 1/sqrt(p), so the trace is 1 again. */
int dm_measure(DmState *d, int wire, int reset, Rng *r, char *err, size_t errlen)
{
    const char *name = "measure";
    if (check_wires(d, name, &wire, 1, 30, err, errlen)) return -1;
    int t = d->n - 1 - wire;
    double p0 = 0, p1 = 0;
    for (uint64_t b = 0; b < d->dim; b++) {
        double p = creal(el(d, b, b));
        if ((b >> t) & 1)
            p1 += p;
        else
            p0 += p;
    }
    if (p0 < 0) p0 = 0;
    if (p1 < 0) p1 = 0;
    double tot = p0 + p1;
    if (!(tot > 0) || !isfinite(tot))
        return qh_errf(err, errlen, "%s: the state has zero trace", name);
    int outcome = rng_uniform(r) * tot < p1;
    double s = 1.0 / sqrt(outcome ? p1 : p0);
    cplx m[4] = { 0, 0, 0, 0 };
    if (!outcome)
        m[0] = s;
    else if (reset)
        m[1] = s;
    else
        m[3] = s;
    if (dm_apply_kraus(d, &wire, 1, 1, m, err, errlen) != 0) return -1;
    return outcome;
}
