/* dsv_reduce.c — readouts of a distributed state that are the same on any
 * number of ranks: probabilities, expectation values and variances of
 * Pauli sums, shot estimates, basis samples, measurement, the norm, the
 * gathered state.
 *
 * Every sum is cut into blocks of 2^rb consecutive amplitudes (the low rb
 * bits are never relabelled, so a block holds the same amplitudes in the
 * same order in every layout); a block's partial sum is a plain loop in
 * index order, and partials meet in exact fixed-point accumulators
 * (xsum.h) summed over ranks with MPI_Allreduce. So no result depends on
 * the rank count, the relabelling or the kernels' threads. Random draws
 * use the caller's Rng, which advances identically on every rank.
 * Must not know about the language or the task farm.
 */
#include "dsv_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* |a|^2 */
static inline double amp2(const cplx *a, uint64_t i)
{
    const double *p = (const double *)a;
    return p[2 * i] * p[2 * i] + p[2 * i + 1] * p[2 * i + 1];
}

/* Physical index bit of logical wire w. */
static inline int wbit(const Dsv *d, int w) { return dsv_pbit(d, d->perm[w]); }

/* Why: every readout first runs the queued gates. */
static int ready(Dsv *d, char *err, size_t errlen)
{
    if (dsv_check_ok(d, err, errlen)) return -1;
    return dsv_flush(d, err, errlen);
}

/* ---- probabilities ---------------------------------------------------- */

/* Why: probs() over a subset of wires: per block, partial sums per output
   bin in index order, then into the bin's exact accumulator. */
static int probs_subset(Dsv *d, const int *wires, int nw, double *out, char *err, size_t errlen)
{
    size_t K = (size_t)1 << nw;
    int pos[64];
    for (int r = 0; r < nw; r++) pos[r] = wbit(d, wires[r]);
    /* low output bits come from inside a block, the rest are fixed per block */
    int rb = d->rb, nlow = 0, lowr[64];
    for (int r = 0; r < nw; r++)
        if (pos[r] < rb) lowr[nlow++] = r;
    uint64_t bsz = (uint64_t)1 << rb;
    uint32_t *cbin = malloc(bsz * sizeof(uint32_t)); /* in-block offset -> compact low bin */
    uint64_t *lowbin = malloc(((size_t)1 << nlow) * sizeof(uint64_t)); /* compact -> output bits */
    double *part = malloc(((size_t)1 << nlow) * sizeof(double));
    /* bins whose free wires are all local live on one rank: doubles suffice */
    int free_global = 0;
    for (int p = 0; p < d->k; p++) {
        int in = 0;
        for (int r = 0; r < nw; r++) in |= d->perm[wires[r]] == p;
        free_global |= !in;
    }
    XSum *acc = calloc(K, sizeof(XSum));
    if (!cbin || !lowbin || !part || !acc) {
        free(cbin);
        free(lowbin);
        free(part);
        free(acc);
        return dsv_fail(d, err, errlen, "probs: out of memory (%zu bins)", K);
    }
    for (uint64_t i = 0; i < bsz; i++) {
        uint32_t c = 0;
        for (int j = 0; j < nlow; j++) c |= (uint32_t)((i >> pos[lowr[j]]) & 1) << j;
        cbin[i] = c;
    }
    for (uint64_t c = 0; c < ((uint64_t)1 << nlow); c++) {
        uint64_t o = 0;
        for (int j = 0; j < nlow; j++)
            if ((c >> j) & 1) o |= (uint64_t)1 << (nw - 1 - lowr[j]);
        lowbin[c] = o;
    }
    uint64_t nblk = d->loc.dim >> rb;
    for (uint64_t jb = 0; jb < nblk; jb++) {
        uint64_t g0 = dsv_gidx(d, jb << rb), hi = 0;
        for (int r = 0; r < nw; r++)
            if (pos[r] >= rb && ((g0 >> pos[r]) & 1)) hi |= (uint64_t)1 << (nw - 1 - r);
        const cplx *a = d->loc.amp + (jb << rb);
        if (nlow == 0) {
            double s = 0;
            for (uint64_t i = 0; i < bsz; i++) s += amp2(a, i);
            xsum_add(&acc[hi], s);
            continue;
        }
        memset(part, 0, ((size_t)1 << nlow) * sizeof(double));
        for (uint64_t i = 0; i < bsz; i++) part[cbin[i]] += amp2(a, i);
        for (uint64_t c = 0; c < ((uint64_t)1 << nlow); c++)
            xsum_add(&acc[hi | lowbin[c]], part[c]);
    }
    free(cbin);
    free(lowbin);
    free(part);
    int rc = 0;
    if (free_global) {
        rc = dsv_xsum_allreduce(d, acc, K, err, errlen);
        if (!rc)
            for (size_t j = 0; j < K; j++) out[j] = xsum_value(&acc[j]);
    } else {
        /* each bin is complete on the one rank that holds it: the others
           contribute exact zeros */
        for (size_t j = 0; j < K; j++) out[j] = xsum_value(&acc[j]);
        rc = dsv_allreduce_f64(d, out, K, err, errlen);
    }
    free(acc);
    return rc;
}

/* Why: probs() over every wire is just |a|^2, gathered on rank 0 in wire
   order (wires given in another order: rank 0 permutes the bins). */
static int probs_all(Dsv *d, const int *wires, double *out, char *err, size_t errlen)
{
    if (dsv_canonicalize(d, err, errlen)) return -1;
    uint64_t dim = d->loc.dim;
    uint64_t piece = d->xamps * 2; /* doubles per message: the buffer's bytes */
    double *buf = (double *)d->xbuf;
    double *dst = d->rank == 0 ? out : NULL;
    if (d->R == 1) {
        for (uint64_t i = 0; i < dim; i++) out[i] = amp2(d->loc.amp, i);
    } else if (d->rank == 0) {
        for (uint64_t i = 0; i < dim; i++) dst[i] = amp2(d->loc.amp, i);
        for (int r = 1; r < d->R; r++)
            for (uint64_t s = 0; s < dim; s += piece) {
                uint64_t m = dim - s < piece ? dim - s : piece;
                MPI_Request rq;
                if (dsv_irecv(d, dst + ((uint64_t)r << d->nl) + s, m * sizeof(double), r, &rq, err,
                              errlen))
                    return -1;
                if (dsv_wait(d, &rq, 1, err, errlen)) return -1;
            }
    } else {
        for (uint64_t s = 0; s < dim; s += piece) {
            uint64_t m = dim - s < piece ? dim - s : piece;
            for (uint64_t i = 0; i < m; i++) buf[i] = amp2(d->loc.amp, s + i);
            MPI_Request rq;
            if (dsv_isend(d, buf, m * sizeof(double), 0, &rq, err, errlen)) return -1;
            if (dsv_wait(d, &rq, 1, err, errlen)) return -1;
        }
    }
    if (d->rank != 0 || !wires) return 0;
    int inorder = 1;
    for (int w = 0; w < d->n; w++) inorder &= wires[w] == w;
    if (inorder) return 0;
    uint64_t N = (uint64_t)1 << d->n;
    double *tmp = malloc(N * sizeof(double));
    if (!tmp) return dsv_fail(d, err, errlen, "probs: out of memory");
    for (uint64_t i = 0; i < N; i++) {
        uint64_t o = 0;
        for (int r = 0; r < d->n; r++) o |= ((i >> (d->n - 1 - wires[r])) & 1) << (d->n - 1 - r);
        tmp[o] = out[i];
    }
    memcpy(out, tmp, N * sizeof(double));
    free(tmp);
    return 0;
}

/* Same checks and messages as sv_probs. */
static int check_wires(const Dsv *d, const char *name, const int *wires, int nw, char *err,
                       size_t errlen)
{
    if (nw < 0 || nw > 30 || nw > d->n) {
        if (err && errlen)
            snprintf(err, errlen, "%s: %d wires asked, at most %d", name, nw,
                     d->n < 30 ? d->n : 30);
        return -1;
    }
    if (nw > 0 && !wires) {
        if (err && errlen) snprintf(err, errlen, "%s: needs at least one wire", name);
        return -1;
    }
    for (int i = 0; i < nw; i++) {
        if (wires[i] < 0 || wires[i] >= d->n) {
            if (err && errlen)
                snprintf(err, errlen, "%s: wire %d out of range for a %d-wire device", name,
                         wires[i], d->n);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (wires[i] == wires[j]) {
                if (err && errlen)
                    snprintf(err, errlen, "%s: wires must be distinct (%d, %d)", name, wires[j],
                             wires[i]);
                return -1;
            }
    }
    return 0;
}

int dsv_probs(Dsv *d, const int *wires, int nw, double *out, char *err, size_t errlen)
{
    if (ready(d, err, errlen)) return -1;
    if (check_wires(d, "probs", wires, nw, err, errlen)) return -1;
    if (nw == 0 || nw == d->n) {
        if (d->n > 30) {
            if (err && errlen) snprintf(err, errlen, "probs: %d wires asked, at most %d", d->n, 30);
            return -1;
        }
        return probs_all(d, nw ? wires : NULL, out, err, errlen);
    }
    if (nw > DSV_MAX_PROBS_WIRES) {
        if (err && errlen)
            snprintf(err, errlen,
                     "probs: at most %d wires of a distributed state (or all %d), got %d",
                     DSV_MAX_PROBS_WIRES, d->n, nw);
        return -1;
    }
    return probs_subset(d, wires, nw, out, err, errlen);
}

/* Why: every rank must leave a random draw with the same generator. */
static int share_rng(Dsv *d, Rng *r, char *err, size_t errlen)
{
    return dsv_bcast(d, r, sizeof *r, 0, err, errlen);
}

int dsv_probs_shots(Dsv *d, const int *wires, int nw, DsvShots sh, double *out, char *err,
                    size_t errlen)
{
    size_t shots = sh.n;
    Rng *r = sh.rng;
    if (dsv_probs(d, wires, nw, out, err, errlen)) return -1;
    if (shots == 0) return 0;
    int n = nw ? nw : d->n;
    int here = d->rank == 0 || !(nw == 0 || nw == d->n);
    if (here) sv_freq_shots(r, out, (size_t)1 << n, shots);
    return here && !(nw == 0 || nw == d->n) ? 0 : share_rng(d, r, err, errlen);
}

/* ---- norm and measurement --------------------------------------------- */

/* Sum of |a|^2 over one block. */
static double block_norm(const cplx *a, uint64_t bsz)
{
    double s = 0;
    for (uint64_t i = 0; i < bsz; i++) s += amp2(a, i);
    return s;
}

int dsv_norm(Dsv *d, double *out, char *err, size_t errlen)
{
    if (ready(d, err, errlen)) return -1;
    XSum acc;
    xsum_zero(&acc);
    uint64_t bsz = (uint64_t)1 << d->rb, nblk = d->loc.dim >> d->rb;
    for (uint64_t jb = 0; jb < nblk; jb++)
        xsum_add(&acc, block_norm(d->loc.amp + (jb << d->rb), bsz));
    if (dsv_xsum_allreduce(d, &acc, 1, err, errlen)) return -1;
    *out = xsum_value(&acc);
    return 0;
}

/* Why: measure(w, reset): P(0), P(1) exactly, the same Born draw as
   sv_measure, then the collapse: the kept half scaled by 1/sqrt(p), the
   other zeroed, and for a reset the halves trade places (two ranks trade
   chunks when the wire is global). */
int dsv_measure(Dsv *d, int wire, int reset, Rng *r, char *err, size_t errlen)
{
    const char *name = "measure";
    if (ready(d, err, errlen)) return -1;
    if (wire < 0 || wire >= d->n) {
        if (err && errlen)
            snprintf(err, errlen, "%s: wire %d out of range for a %d-wire device", name, wire,
                     d->n);
        return -1;
    }
    int P = d->perm[wire], pos = dsv_pbit(d, P), rb = d->rb;
    XSum acc[2];
    xsum_zero(&acc[0]);
    xsum_zero(&acc[1]);
    uint64_t bsz = (uint64_t)1 << rb, nblk = d->loc.dim >> rb;
    for (uint64_t jb = 0; jb < nblk; jb++) {
        const cplx *a = d->loc.amp + (jb << rb);
        if (pos >= rb) {
            int bit = (int)((dsv_gidx(d, jb << rb) >> pos) & 1);
            xsum_add(&acc[bit], block_norm(a, bsz));
        } else {
            double s[2] = { 0, 0 };
            for (uint64_t i = 0; i < bsz; i++) s[(i >> pos) & 1] += amp2(a, i);
            xsum_add(&acc[0], s[0]);
            xsum_add(&acc[1], s[1]);
        }
    }
    if (dsv_xsum_allreduce(d, acc, 2, err, errlen)) return -1;
    double p0 = xsum_value(&acc[0]), p1 = xsum_value(&acc[1]);
    double tot = p0 + p1;
    if (!(tot > 0) || !isfinite(tot)) {
        if (err && errlen) snprintf(err, errlen, "%s: the state has zero norm", name);
        return -1;
    }
    int outcome = rng_uniform(r) * tot < p1;
    double scale = 1.0 / sqrt(outcome ? p1 : p0);
    /* the kept half scaled (each part rounded once, as the kernels' 2x2
       does), the other half +0, the same on every layout: the signs of
       zeros must not depend on where the wire lives */
    double *a = (double *)d->loc.amp;
    uint64_t dim = d->loc.dim;
    if (P >= d->k) {
        for (uint64_t i = 0; i < dim; i++) {
            if ((int)((i >> pos) & 1) == outcome) {
                a[2 * i] = scale * a[2 * i];
                a[2 * i + 1] = scale * a[2 * i + 1];
            } else {
                a[2 * i] = 0;
                a[2 * i + 1] = 0;
            }
        }
        if (reset && outcome) {
            uint64_t bit = (uint64_t)1 << pos;
            for (uint64_t i = 0; i < dim; i++)
                if (!(i & bit)) {
                    a[2 * i] = a[2 * (i | bit)];
                    a[2 * i + 1] = a[2 * (i | bit) + 1];
                    a[2 * (i | bit)] = 0;
                    a[2 * (i | bit) + 1] = 0;
                }
        }
        return outcome;
    }
    if (dsv_gbit(d, P) == outcome) {
        for (uint64_t i = 0; i < 2 * dim; i++) a[i] = scale * a[i];
    } else {
        memset(a, 0, dim * sizeof(cplx));
    }
    if (reset && outcome) {
        if (dsv_swap_chunk(d, d->rank ^ (1 << (d->k - 1 - P)), err, errlen)) return -1;
    }
    return outcome;
}

/* ---- Pauli sums ------------------------------------------------------- */

/* A term with masks in logical index bits (wire w -> bit n-1-w), for the
   order of the sum, and in physical index bits, for the pass. */
typedef struct PTerm {
    uint64_t X, Z, Xp, Zp;
    double c;
} PTerm;

static int cmp_pterm(const void *pa, const void *pb)
{
    const PTerm *a = pa, *b = pb;
    if (a->X != b->X) return a->X < b->X ? -1 : 1;
    if (a->Z != b->Z) return a->Z < b->Z ? -1 : 1;
    return 0;
}

/* Why: the caller's wire masks, into both bit spaces. */
static PTerm pterm(const Dsv *d, const SvPauli *t)
{
    PTerm p = { 0, 0, 0, 0, t->coeff };
    for (int w = 0; w < d->n && w < 64; w++) {
        uint64_t lb = (uint64_t)1 << (d->n - 1 - w), pb = (uint64_t)1 << wbit(d, w);
        if ((t->x >> w) & 1) {
            p.X |= lb;
            p.Xp |= pb;
        }
        if ((t->z >> w) & 1) {
            p.Z |= lb;
            p.Zp |= pb;
        }
    }
    return p;
}

/* (-1)^{popcount(b)} */
static inline double sgn(uint64_t b) { return __builtin_parityll(b) ? -1.0 : 1.0; }

/* Why: <W> = sum_b i^{|x&z|} (-1)^{|b&z|} conj(a_{b^X}) a_b, summed over
   every b this rank holds; the partner amplitudes come from our own chunk
   (X on local wires) or from the rank that differs in X's global bits,
   a buffer at a time. t[0..ng) share X (and are not the identity). */
static int group_acc(Dsv *d, const PTerm *t, int ng, XSum *acc, char *err, size_t errlen)
{
    uint64_t Xp = t[0].Xp, Xl = Xp & ((d->loc.dim) - 1), Xg = Xp >> d->nl;
    int rb = d->rb;
    uint64_t bsz = (uint64_t)1 << rb, dim = d->loc.dim;
    double *w = malloc(2 * bsz * sizeof(double));
    if (!w) return dsv_fail(d, err, errlen, "expval: out of memory");
    int peer = d->rank ^ (int)Xg;
    uint64_t piece = Xg ? (d->xamps < dim ? d->xamps : dim) : dim;
    const cplx *a = d->loc.amp;
    for (uint64_t s = 0; s < dim; s += piece) {
        const cplx *y = a; /* y[j ^ Xl] is the partner of j, j in [s, s + piece) */
        uint64_t ybase = 0;
        if (Xg) {
            uint64_t sp = s ^ (Xl & ~(piece - 1));
            if (dsv_sendrecv(d, a + sp, d->xbuf, piece * sizeof(cplx), peer, err, errlen)) {
                free(w);
                return -1;
            }
            y = d->xbuf;
            ybase = sp;
        }
        for (uint64_t b0 = s; b0 < s + piece; b0 += bsz) {
            uint64_t g0 = dsv_gidx(d, b0);
            const double *x = (const double *)(a + b0);
            for (uint64_t i = 0; i < bsz; i++) {
                if (!Xp) {
                    w[2 * i] = x[2 * i] * x[2 * i] + x[2 * i + 1] * x[2 * i + 1];
                    w[2 * i + 1] = 0;
                } else {
                    const double *yy = (const double *)(y + (((b0 + i) ^ Xl) - ybase));
                    w[2 * i] = yy[0] * x[2 * i] + yy[1] * x[2 * i + 1]; /* conj(y) x */
                    w[2 * i + 1] = yy[0] * x[2 * i + 1] - yy[1] * x[2 * i];
                }
            }
            for (int k = 0; k < ng; k++) {
                uint64_t Z = t[k].Zp;
                double hs = sgn(g0 & Z & ~(bsz - 1)), sre = 0, sim = 0;
                uint64_t zl = Z & (bsz - 1);
                for (uint64_t i = 0; i < bsz; i++) {
                    if (__builtin_parityll(i & zl)) {
                        sre -= w[2 * i];
                        sim -= w[2 * i + 1];
                    } else {
                        sre += w[2 * i];
                        sim += w[2 * i + 1];
                    }
                }
                int ny = __builtin_popcountll(Xp & Z) & 3;
                double v = ny == 0 ? sre : ny == 1 ? -sim : ny == 2 ? -sre : sim;
                xsum_add(&acc[k], hs * v);
            }
        }
    }
    free(w);
    return 0;
}

/* Why: each term's exact <W> (identity = 1), every rank alike. t is
   sorted by (X, Z) in logical bits, like sv's terms. */
static int term_vals(Dsv *d, PTerm *t, int n, double *vals, char *err, size_t errlen)
{
    qsort(t, (size_t)n, sizeof *t, cmp_pterm);
    XSum *acc = calloc((size_t)n, sizeof(XSum));
    if (!acc) return dsv_fail(d, err, errlen, "expval: out of memory");
    int rc = 0;
    for (int i = 0; i < n && rc == 0;) {
        int j = i;
        while (j < n && t[j].X == t[i].X) j++;
        int k = i;
        if (!t[i].X)
            for (; k < j && !t[k].Z; k++) {}
        if (k < j) rc = group_acc(d, t + k, j - k, acc + k, err, errlen);
        i = j;
    }
    if (!rc) rc = dsv_xsum_allreduce(d, acc, (size_t)n, err, errlen);
    if (!rc)
        for (int i = 0; i < n; i++) vals[i] = (t[i].X || t[i].Z) ? xsum_value(&acc[i]) : 1.0;
    free(acc);
    return rc;
}

/* sum c <W>, exact or estimated, in the sorted order. */
static int weighted(Dsv *d, const SvPauli *in, int n, DsvShots sh, double *out, char *err,
                    size_t errlen)
{
    size_t shots = sh.n;
    Rng *r = sh.rng;
    PTerm *t = malloc((size_t)(n > 0 ? n : 1) * sizeof *t);
    double *vals = malloc((size_t)(n > 0 ? n : 1) * sizeof *vals);
    if (!t || !vals) {
        free(t);
        free(vals);
        return dsv_fail(d, err, errlen, "expval: out of memory");
    }
    for (int i = 0; i < n; i++) t[i] = pterm(d, &in[i]);
    int rc = term_vals(d, t, n, vals, err, errlen);
    if (!rc) {
        double sum = 0;
        for (int i = 0; i < n; i++) {
            double v = vals[i];
            if (r && shots && (t[i].X || t[i].Z)) v = sv_word_estimate(v, shots, r);
            sum += t[i].c * v;
        }
        *out = sum;
    }
    free(t);
    free(vals);
    return rc;
}

int dsv_expval(Dsv *d, const SvPauli *t, int nterms, double *out, char *err, size_t errlen)
{
    return dsv_expval_shots(d, t, nterms, (DsvShots){ 0, NULL }, out, err, errlen);
}

int dsv_expval_shots(Dsv *d, const SvPauli *t, int nterms, DsvShots sh, double *out, char *err,
                     size_t errlen)
{
    size_t shots = sh.n;
    Rng *r = sh.rng;
    if (ready(d, err, errlen)) return -1;
    *out = 0;
    if (!t || nterms <= 0) return 0;
    return weighted(d, t, nterms, (DsvShots){ shots, r }, out, err, errlen);
}

int dsv_var(Dsv *d, const SvPauli *t, int nterms, double *out, char *err, size_t errlen)
{
    return dsv_var_shots(d, t, nterms, (DsvShots){ 0, NULL }, out, err, errlen);
}

/* Why: var = <H^2> - <H>^2 with H^2 expanded into Pauli words (sv's own
   expansion), the square first as sv does (the order of random draws). */
int dsv_var_shots(Dsv *d, const SvPauli *t, int nterms, DsvShots sh, double *out, char *err,
                  size_t errlen)
{
    size_t shots = sh.n;
    Rng *r = sh.rng;
    if (ready(d, err, errlen)) return -1;
    *out = 0;
    if (!t || nterms <= 0) return 0;
    SvPauli *sq = NULL;
    int nsq = sv_pauli_square(t, nterms, &sq);
    if (nsq < 0) return dsv_fail(d, err, errlen, "var: out of memory");
    double h2 = 0, h1 = 0;
    int rc = weighted(d, sq, nsq, (DsvShots){ shots, r }, &h2, err, errlen);
    free(sq);
    if (!rc) rc = weighted(d, t, nterms, (DsvShots){ shots, r }, &h1, err, errlen);
    if (rc) return -1;
    double v = h2 - h1 * h1;
    *out = v > 0 ? v : 0;
    return 0;
}

int dsv_sample_pauli(Dsv *d, const SvPauli *word, size_t shots, Rng *r, double *out, char *err,
                     size_t errlen)
{
    if (ready(d, err, errlen)) return -1;
    PTerm t = pterm(d, word);
    double v = 1.0;
    if ((t.X || t.Z) && term_vals(d, &t, 1, &v, err, errlen)) return -1;
    double p = (1 + v) / 2;
    for (size_t i = 0; i < shots; i++) out[i] = rng_uniform(r) < p ? word->coeff : -word->coeff;
    return 0;
}

/* ---- basis samples ---------------------------------------------------- */

/* Why: sample(): i.i.d. basis states, the same on any rank count. The
   cumulative distribution is cut at block boundaries whose prefix sums
   are exact (xsum) and rounded once; inside a block it runs in index
   order. Every rank draws the same sorted uniforms (descending order
   statistics, as sv_sample), keeps those that fall in its range, and an
   Allreduce puts the indices together; the final shuffle is the same
   everywhere. */
int dsv_sample(Dsv *d, size_t shots, Rng *r, uint64_t *out, char *err, size_t errlen)
{
    if (ready(d, err, errlen)) return -1;
    if (!out || shots == 0) return 0;
    if (dsv_canonicalize(d, err, errlen)) return -1;
    int rb = d->rb, R = d->R;
    uint64_t bsz = (uint64_t)1 << rb, nblk = d->loc.dim >> rb;
    double *bs = malloc(nblk * sizeof(double)), *bp = malloc(nblk * sizeof(double));
    XSum *tot = malloc((size_t)R * sizeof(XSum));
    double *first = malloc((size_t)R * sizeof(double));
    if (!bs || !bp || !tot || !first) {
        free(bs);
        free(bp);
        free(tot);
        free(first);
        return dsv_fail(d, err, errlen, "sample: out of memory");
    }
    XSum mine;
    xsum_zero(&mine);
    for (uint64_t jb = 0; jb < nblk; jb++) {
        bs[jb] = block_norm(d->loc.amp + (jb << rb), bsz);
        xsum_add(&mine, bs[jb]);
    }
    xsum_norm(&mine);
    int rc = dsv_allgather(d, &mine, tot, sizeof mine, err, errlen);
    XSum run, all;
    xsum_zero(&run);
    xsum_zero(&all);
    for (int q = 0; q < R && !rc; q++) {
        if (q < d->rank) xsum_merge(&run, &tot[q]);
        xsum_merge(&all, &tot[q]);
    }
    double T = xsum_value(&all), myfirst = INFINITY;
    for (uint64_t jb = 0; jb < nblk && !rc; jb++) {
        bp[jb] = xsum_value(&run);
        if (bs[jb] > 0 && myfirst == INFINITY) myfirst = bp[jb];
        xsum_add(&run, bs[jb]);
    }
    if (!rc) rc = dsv_allgather(d, &myfirst, first, sizeof myfirst, err, errlen);
    if (rc) {
        free(bs);
        free(bp);
        free(tot);
        free(first);
        return -1;
    }
    memset(out, 0, shots * sizeof(uint64_t));
    uint64_t jb = 0, i = 0;
    double cum = nblk ? bp[0] : 0;
    int64_t cur_blk = -1;
    double x = 1;
    for (size_t k = shots; k >= 1; k--) {
        x *= pow(1.0 - rng_uniform(r), 1.0 / (double)k);
        double u = (1.0 - x) * T;
        int owner = -1;
        for (int q = 0; q < R; q++)
            if (first[q] <= u) owner = q;
        if (owner < 0) owner = 0; /* u below every first block: the first mass */
        if (owner != d->rank) continue;
        /* the last block with mass whose prefix is <= u */
        while (jb + 1 < nblk) {
            uint64_t nx = jb + 1;
            while (nx < nblk && !(bs[nx] > 0)) nx++;
            if (nx < nblk && bp[nx] <= u)
                jb = nx;
            else
                break;
        }
        while (!(bs[jb] > 0) && jb + 1 < nblk) jb++;
        if ((int64_t)jb != cur_blk) {
            cur_blk = (int64_t)jb;
            i = jb << rb;
            cum = bp[jb];
        }
        uint64_t end = (jb + 1) << rb;
        while (i + 1 < end && cum + amp2(d->loc.amp, i) <= u) {
            cum += amp2(d->loc.amp, i);
            i++;
        }
        uint64_t pick = i;
        while (pick > (jb << rb) && !(amp2(d->loc.amp, pick) > 0)) pick--;
        out[shots - k] = dsv_gidx(d, pick);
    }
    free(bs);
    free(bp);
    free(tot);
    free(first);
    if (dsv_allreduce_u64(d, out, shots, err, errlen)) return -1;
    for (size_t k = shots - 1; k >= 1; k--) {
        size_t j = (size_t)rng_below(r, k + 1);
        uint64_t t = out[k];
        out[k] = out[j];
        out[j] = t;
    }
    return 0;
}

/* ---- the whole state -------------------------------------------------- */

int dsv_gather(Dsv *d, int root, cplx *out, char *err, size_t errlen)
{
    if (ready(d, err, errlen)) return -1;
    if (dsv_canonicalize(d, err, errlen)) return -1;
    uint64_t dim = d->loc.dim;
    if (d->rank == root) memcpy(out + ((uint64_t)d->rank << d->nl), d->loc.amp, dim * sizeof(cplx));
    if (d->R == 1) return 0;
    uint64_t piece = (uint64_t)1 << 26; /* amplitudes per message: 1 GiB */
    for (int q = 0; q < d->R; q++) {
        if (q == root) continue;
        for (uint64_t s = 0; s < dim; s += piece) {
            uint64_t m = dim - s < piece ? dim - s : piece;
            MPI_Request rq;
            if (d->rank == root) {
                if (dsv_irecv(d, out + ((uint64_t)q << d->nl) + s, m * sizeof(cplx), q, &rq, err,
                              errlen))
                    return -1;
            } else if (d->rank == q) {
                if (dsv_isend(d, d->loc.amp + s, m * sizeof(cplx), root, &rq, err, errlen))
                    return -1;
            } else {
                continue;
            }
            if (dsv_wait(d, &rq, 1, err, errlen)) return -1;
        }
    }
    return 0;
}

int dsv_load(Dsv *d, const cplx *full, char *err, size_t errlen)
{
    if (dsv_check_ok(d, err, errlen)) return -1;
    for (int i = 0; i < d->nqueue; i++) free(d->queue[i].mat);
    d->nqueue = 0;
    for (int w = 0; w < d->n; w++) d->perm[w] = d->inv[w] = w;
    memcpy(d->loc.amp, full + ((uint64_t)d->rank << d->nl), d->loc.dim * sizeof(cplx));
    return 0;
}
