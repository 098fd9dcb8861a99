/* meas_obs.c — observables with dense and projector blocks (svmeas.h):
 * checks, exact expectation values and variances, O|psi> for the adjoint
 * method, the dense matrix of an observable on its support.
 *
 * A block B on k wires is evaluated per "rest" index r (the other wires
 * fixed): v = psi restricted to the 2^k indices base(r) | off[a]. A term
 * that is a block alone costs one read of the state; a block times a Pauli
 * word first applies the word into a buffer (they act on disjoint wires, so
 * they commute). Pure Pauli sums go to observables.c. Must not know about
 * the language or how observables are written there.
 */
#include "svmeas.h"
#include "sv_impl.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define E_NOTHERM "%s: matrix is not Hermitian (|m[%d][%d] - conj(m[%d][%d])| = %.3g)"
#define E_OVERLAP "%s: wire %d is used twice in one term"
#define E_BASISB  "%s: basis bits beyond its %d wires"
#define E_BIGKET  "%s: a state on %d wires is too large (at most %d)"
#define E_KIND    "%s: unknown block kind %d"
#define E_NOTERMS "%s: no terms"
#define E_COVER   "%s: wire %d of the observable is not among the %d wires of the matrix"

/* ---- blocks: wire positions and offsets ---------------------------------- */

typedef struct Blk {
    SvBlockKind kind;
    int k;
    uint64_t d;
    int pos[SV_MAX_WIRES]; /* bit positions, ascending (for sv_expand) */
    uint64_t *off;         /* DENSE/KET: d offsets, local index a -> bits */
    uint64_t mask, val;    /* BASIS: bits that must equal val */
    const cplx *mat, *ket;
    double knorm; /* KET: <phi|phi> */
} Blk;

static int blk_init(Blk *b, int nq, const SvTerm *t)
{
    memset(b, 0, sizeof *b);
    b->kind = t->kind;
    b->k = t->kind == SVB_NONE ? 0 : t->k;
    b->d = (uint64_t)1 << (b->k < 64 ? b->k : 0);
    sv_assert(b->k >= 0 && b->k <= nq); /* a block on wires of the state (sv_obs_check) */
    for (int i = 0; i < b->k; i++) b->pos[i] = sv_bitpos(nq, t->wires[i]);
    sv_sort_ints(b->pos, b->k);
    for (int i = 1; i < b->k; i++) sv_assert(b->pos[i - 1] < b->pos[i]); /* distinct wires */
    b->mat = t->m;
    b->ket = t->ket;
    if (t->kind == SVB_BASIS) {
        for (int i = 0; i < t->k; i++) {
            uint64_t bit = (uint64_t)1 << sv_bitpos(nq, t->wires[i]);
            b->mask |= bit;
            if ((t->bits >> i) & 1) b->val |= bit;
        }
        return 0;
    }
    if (t->kind != SVB_DENSE && t->kind != SVB_KET) return 0;
    if (t->kind == SVB_KET)
        for (uint64_t a = 0; a < b->d; a++)
            b->knorm += creal(t->ket[a]) * creal(t->ket[a]) + cimag(t->ket[a]) * cimag(t->ket[a]);
    b->off = malloc(b->d * sizeof(uint64_t));
    if (!b->off) return -1;
    for (uint64_t a = 0; a < b->d; a++) {
        uint64_t o = 0;
        for (int i = 0; i < b->k; i++)
            if ((a >> (b->k - 1 - i)) & 1) o |= (uint64_t)1 << sv_bitpos(nq, t->wires[i]);
        sv_assert(o < ((uint64_t)1 << nq) && (a == 0) == (o == 0)); /* inside the block's bits */
        b->off[a] = o;
    }
    return 0;
}

static void blk_free(Blk *b)
{
    free(b->off);
    b->off = NULL;
}

/* ---- checks ---------------------------------------------------------------- */

int sv_obs_check(const SvTerm *t, int n, int nq, const char *name, char *err, size_t errlen)
{
    if (!name) name = "observable";
    if (!t || n <= 0) return sv_err(err, errlen, E_NOTERMS, name);
    for (int i = 0; i < n; i++) {
        const SvTerm *u = &t[i];
        if (!isfinite(u->coeff)) return sv_err(err, errlen, SV_E_NOTFINITE, name, 0);
        uint64_t word = u->x | u->z;
        if (nq < 64 && (word >> nq) != 0) {
            int w = 63 - __builtin_clzll(word);
            return sv_err(err, errlen, SV_E_RANGE, name, w, nq);
        }
        if (u->kind == SVB_NONE) continue;
        if (u->kind != SVB_DENSE && u->kind != SVB_BASIS && u->kind != SVB_KET)
            return sv_err(err, errlen, E_KIND, name, (int)u->kind);
        int maxk = u->kind == SVB_DENSE ? SV_MAX_DENSE : u->kind == SVB_KET ? SV_MAX_KET : 64;
        if (u->k < 1) return sv_err(err, errlen, SV_E_NOWIRES, name);
        if (u->k > maxk) {
            if (u->kind == SVB_KET) return sv_err(err, errlen, E_BIGKET, name, u->k, maxk);
            return sv_err(err, errlen, SV_E_BIGOP, name, u->k, maxk);
        }
        for (int a = 0; a < u->k; a++) {
            int w = u->wires[a];
            if (w < 0) return sv_err(err, errlen, SV_E_NEGWIRE, name, w);
            if (w >= nq) return sv_err(err, errlen, SV_E_RANGE, name, w, nq);
            for (int b = 0; b < a; b++)
                if (u->wires[b] == w) {
                    char buf[32];
                    snprintf(buf, sizeof buf, "%d, %d", w, w);
                    return sv_err(err, errlen, SV_E_DUP, name, buf);
                }
            if (w < 64 && ((word >> w) & 1)) return sv_err(err, errlen, E_OVERLAP, name, w);
        }
        size_t d = (size_t)1 << (u->k < 64 ? u->k : 0);
        if (u->kind == SVB_BASIS) {
            if (u->k < 64 && (u->bits >> u->k) != 0)
                return sv_err(err, errlen, E_BASISB, name, u->k);
        } else if (u->kind == SVB_KET) {
            if (!u->ket) return sv_err(err, errlen, SV_E_NOMAT, name);
            for (size_t a = 0; a < d; a++)
                if (!isfinite(creal(u->ket[a])) || !isfinite(cimag(u->ket[a])))
                    return sv_err(err, errlen, SV_E_MATNF, name);
        } else {
            const cplx *m = u->m;
            if (!m) return sv_err(err, errlen, SV_E_NOMAT, name);
            for (size_t a = 0; a < d * d; a++)
                if (!isfinite(creal(m[a])) || !isfinite(cimag(m[a])))
                    return sv_err(err, errlen, SV_E_MATNF, name);
            for (size_t r = 0; r < d; r++)
                for (size_t c = r; c < d; c++) {
                    double dev = cabs(m[r * d + c] - conj(m[c * d + r]));
                    if (dev > 1e-8 + 1e-5 * cabs(m[c * d + r]))
                        return sv_err(err, errlen, E_NOTHERM, name, (int)r, (int)c, (int)c, (int)r,
                                      dev);
                }
        }
    }
    return 0;
}

/* ---- Pauli words ----------------------------------------------------------- */

/* Index-space masks of a word and its phase i^{#Y} times coeff. */
typedef struct Word {
    uint64_t X, Z;
    cplx ph;
} Word;

static Word word_of(int nq, double coeff, uint64_t x, uint64_t z)
{
    Word w = { 0, 0, 0 };
    int ny = 0;
    for (int q = 0; q < nq && q < 64; q++) {
        uint64_t b = (uint64_t)1 << sv_bitpos(nq, q);
        if ((x >> q) & 1) w.X |= b;
        if ((z >> q) & 1) w.Z |= b;
        if (((x & z) >> q) & 1) ny++;
    }
    static const cplx ipow[4] = { 1, I, -1, -I };
    w.ph = coeff * ipow[ny & 3];
    sv_assert(nq >= 64 || ((w.X | w.Z) >> nq) == 0); /* the word acts on the state's wires */
    return w;
}

typedef struct WordCtx {
    const double *in;
    double *out;
    Word w;
    int acc;
    uint64_t dim;
} WordCtx;

/* Why: W|b> = i^{#Y} (-1)^{|b & Z|} |b ^ X>; each output is written once.
   Plain doubles (no complex multiply and its NaN checks), and runs of
   2^r indices (r = Z's lowest bit) that share the sign. */
static void word_part(void *vctx, int part, int np)
{
    WordCtx *c = vctx;
    uint64_t a, b, X = c->w.X, Z = c->w.Z;
    sv_slice(c->dim, part, np, &a, &b);
    double pr = creal(c->w.ph), pi = cimag(c->w.ph);
    const double *in = c->in;
    double *out = c->out;
    uint64_t R = Z ? (uint64_t)1 << __builtin_ctzll(Z) : c->dim;
    for (uint64_t i = a; i < b;) {
        uint64_t len = R - (i & (R - 1));
        if (len > b - i) len = b - i;
        double sr = pr, si = pi;
        if (__builtin_parityll(i & Z)) {
            sr = -pr;
            si = -pi;
        }
        if (c->acc)
            for (uint64_t t = i; t < i + len; t++) {
                double xr = in[2 * t], xi = in[2 * t + 1];
                uint64_t o = 2 * (t ^ X);
                out[o] += sr * xr - si * xi;
                out[o + 1] += sr * xi + si * xr;
            }
        else
            for (uint64_t t = i; t < i + len; t++) {
                double xr = in[2 * t], xi = in[2 * t + 1];
                uint64_t o = 2 * (t ^ X);
                out[o] = sr * xr - si * xi;
                out[o + 1] = sr * xi + si * xr;
            }
        i += len;
    }
}

/* Diagonal words (no X): at most this many in one pass. */
#define DIAG_MAX 16
typedef struct DiagCtx {
    const double *in;
    double *out;
    int m;
    uint64_t Z[DIAG_MAX];
    cplx c[DIAG_MAX];
    int acc;
    uint64_t dim;
} DiagCtx;

/* Why: several diagonal words in one pass: over runs of 2^r indices (r =
   the lowest bit of any Z) every sign is constant, so the run has one
   coefficient. */
static void diag_part(void *vctx, int part, int np)
{
    DiagCtx *c = vctx;
    uint64_t a, b, all = 0;
    sv_slice(c->dim, part, np, &a, &b);
    for (int k = 0; k < c->m; k++) all |= c->Z[k];
    uint64_t R = all ? (uint64_t)1 << __builtin_ctzll(all) : c->dim;
    const double *in = c->in;
    double *out = c->out;
    for (uint64_t i = a; i < b;) {
        uint64_t len = R - (i & (R - 1));
        if (len > b - i) len = b - i;
        double dr = 0, di = 0;
        for (int k = 0; k < c->m; k++) {
            double sg = __builtin_parityll(i & c->Z[k]) ? -1.0 : 1.0;
            dr += sg * creal(c->c[k]);
            di += sg * cimag(c->c[k]);
        }
        if (c->acc)
            for (uint64_t t = i; t < i + len; t++) {
                double xr = in[2 * t], xi = in[2 * t + 1];
                out[2 * t] += dr * xr - di * xi;
                out[2 * t + 1] += dr * xi + di * xr;
            }
        else
            for (uint64_t t = i; t < i + len; t++) {
                double xr = in[2 * t], xi = in[2 * t + 1];
                out[2 * t] = dr * xr - di * xi;
                out[2 * t + 1] = dr * xi + di * xr;
            }
        i += len;
    }
}

/* out (=|+=) coeff W in, over the state's dimension. */
static void word_apply(const SvState *s, Word w, const cplx *in, cplx *out, int acc)
{
    sv_assert(in != out); /* each output is written once from another vector */
    WordCtx c = { (const double *)in, (double *)out, w, acc, s->dim };
    sv_parallel(s, word_part, &c);
}

/* ---- block kernels ------------------------------------------------------------ */

typedef struct BlkCtx {
    const SvState *s;
    const Blk *b;
    const cplx *bra, *ket; /* <bra| B |ket> (the same vector: <B>) */
    cplx *out;             /* apply: out += coeff B ket */
    cplx coeff;
    double *part; /* 3 per part: Re, Im of <bra|B|ket>, ||B ket||^2 */
} BlkCtx;

/* Why: one pass over the rest indices computes <bra|B|ket> and ||B ket||^2
   (the variance of a lone block) without a copy of the state. */
static void blk_expval_part(void *vctx, int part, int np)
{
    BlkCtx *c = vctx;
    const Blk *b = c->b;
    double re = 0, im = 0, sq = 0;
    if (b->kind == SVB_BASIS) {
        uint64_t lo, hi;
        sv_slice(c->s->dim, part, np, &lo, &hi);
        for (uint64_t i = lo; i < hi; i++)
            if ((i & b->mask) == b->val) {
                cplx p = conj(c->bra[i]) * c->ket[i];
                re += creal(p);
                im += cimag(p);
                sq += creal(c->ket[i]) * creal(c->ket[i]) + cimag(c->ket[i]) * cimag(c->ket[i]);
            }
    } else {
        uint64_t lo, hi, d = b->d;
        sv_slice(c->s->dim >> b->k, part, np, &lo, &hi);
        cplx v[1 << SV_MAX_DENSE], w[1 << SV_MAX_DENSE];
        for (uint64_t r = lo; r < hi; r++) {
            uint64_t base = sv_expand(r, b->pos, b->k);
            if (b->kind == SVB_KET) {
                cplx pk = 0, pb = 0; /* <phi|ket_r>, <phi|bra_r> */
                for (uint64_t a = 0; a < d; a++) {
                    pk += conj(b->ket[a]) * c->ket[base | b->off[a]];
                    pb += conj(b->ket[a]) * c->bra[base | b->off[a]];
                }
                cplx p = conj(pb) * pk;
                re += creal(p);
                im += cimag(p);
                sq += (creal(pk) * creal(pk) + cimag(pk) * cimag(pk)) * b->knorm;
            } else {
                for (uint64_t a = 0; a < d; a++) v[a] = c->ket[base | b->off[a]];
                for (uint64_t a = 0; a < d; a++) {
                    const cplx *row = b->mat + a * d;
                    cplx acc = 0;
                    for (uint64_t q = 0; q < d; q++) acc += row[q] * v[q];
                    w[a] = acc;
                }
                for (uint64_t a = 0; a < d; a++) {
                    cplx p = conj(c->bra[base | b->off[a]]) * w[a];
                    re += creal(p);
                    im += cimag(p);
                    sq += creal(w[a]) * creal(w[a]) + cimag(w[a]) * cimag(w[a]);
                }
            }
        }
    }
    c->part[3 * part] = re;
    c->part[3 * part + 1] = im;
    c->part[3 * part + 2] = sq;
}

/* <bra|B|ket> and ||B ket||^2. */
static cplx blk_expval(const SvState *s, const Blk *b, const cplx *bra, const cplx *ket, double *sq)
{
    double part[3 * SV_MAX_TEAM];
    BlkCtx c = { s, b, bra, ket, NULL, 0, part };
    int np = sv_parallel(s, blk_expval_part, &c);
    double re = 0, im = 0, q = 0;
    for (int p = 0; p < np; p++) {
        re += part[3 * p];
        im += part[3 * p + 1];
        q += part[3 * p + 2];
    }
    if (sq) *sq = q;
    return re + I * im;
}

/* Why: rest indices own disjoint outputs, so parts never collide. */
static void blk_apply_part(void *vctx, int part, int np)
{
    BlkCtx *c = vctx;
    const Blk *b = c->b;
    if (b->kind == SVB_BASIS) {
        uint64_t lo, hi;
        sv_slice(c->s->dim, part, np, &lo, &hi);
        for (uint64_t i = lo; i < hi; i++)
            if ((i & b->mask) == b->val) c->out[i] += c->coeff * c->ket[i];
        return;
    }
    uint64_t lo, hi, d = b->d;
    sv_slice(c->s->dim >> b->k, part, np, &lo, &hi);
    for (uint64_t r = lo; r < hi; r++) {
        uint64_t base = sv_expand(r, b->pos, b->k);
        if (b->kind == SVB_KET) {
            cplx pk = 0;
            for (uint64_t a = 0; a < d; a++) pk += conj(b->ket[a]) * c->ket[base | b->off[a]];
            pk *= c->coeff;
            for (uint64_t a = 0; a < d; a++) c->out[base | b->off[a]] += b->ket[a] * pk;
        } else {
            cplx v[1 << SV_MAX_DENSE];
            for (uint64_t a = 0; a < d; a++) v[a] = c->ket[base | b->off[a]];
            for (uint64_t a = 0; a < d; a++) {
                const cplx *row = b->mat + a * d;
                cplx acc = 0;
                for (uint64_t q = 0; q < d; q++) acc += row[q] * v[q];
                c->out[base | b->off[a]] += c->coeff * acc;
            }
        }
    }
}

static void blk_apply(const SvState *s, const Blk *b, cplx coeff, const cplx *ket, cplx *out)
{
    BlkCtx c = { s, b, NULL, ket, out, coeff, NULL };
    sv_parallel(s, blk_apply_part, &c);
}

/* ---- the interface ------------------------------------------------------------ */

static int all_pauli(const SvTerm *t, int n)
{
    for (int i = 0; i < n; i++)
        if (t[i].kind != SVB_NONE) return 0;
    return 1;
}

/* Pauli terms of t as SvPauli (heap). */
static SvPauli *pauli_terms(const SvTerm *t, int n, int *np)
{
    SvPauli *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    if (!p) return NULL;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (t[i].kind == SVB_NONE) p[m++] = (SvPauli){ t[i].coeff, t[i].x, t[i].z };
    *np = m;
    return p;
}

static void *buffer(size_t dim)
{
    return aligned_alloc(64, ((dim * sizeof(cplx)) + 63) & ~(size_t)63);
}

int sv_obs_apply(const SvState *s, const SvTerm *t, int n, cplx *out, char *err, size_t errlen)
{
    const char *name = "observable";
    if (!s || !s->amp) return sv_err(err, errlen, SV_E_NOSTATE, name);
    if (!out) return sv_err(err, errlen, SV_E_NOMAT, name);
    cplx *tmp = NULL;
    int written = 0; /* out holds a sum already (else the first pass writes it) */
    /* the diagonal Pauli words, DIAG_MAX at a time, in one pass each */
    DiagCtx dc = { (const double *)s->amp, (double *)out, 0, { 0 }, { 0 }, 0, s->dim };
    for (int i = 0; i <= n; i++) {
        if (i < n && t[i].kind == SVB_NONE && !t[i].x) {
            Word w = word_of(s->nq, 1.0, 0, t[i].z);
            dc.Z[dc.m] = w.Z;
            dc.c[dc.m++] = w.ph * t[i].coeff;
        }
        if (dc.m && (i == n || dc.m == DIAG_MAX)) {
            dc.acc = written;
            sv_parallel(s, diag_part, &dc);
            written = 1;
            dc.m = 0;
        }
    }
    for (int i = 0; i < n; i++) {
        const SvTerm *u = &t[i];
        if (u->kind == SVB_NONE && !u->x) continue;
        Word w = word_of(s->nq, 1.0, u->x, u->z);
        if (u->kind == SVB_NONE) {
            w.ph *= u->coeff;
            word_apply(s, w, s->amp, out, written);
            written = 1;
            continue;
        }
        if (!written) {
            memset(out, 0, s->dim * sizeof(cplx));
            written = 1;
        }
        Blk b;
        if (blk_init(&b, s->nq, u) != 0) {
            free(tmp);
            return sv_err(err, errlen, SV_E_NOMEM, name);
        }
        const cplx *src = s->amp;
        if (w.X || w.Z || w.ph != 1) {
            if (!tmp && !(tmp = buffer(s->dim))) {
                blk_free(&b);
                return sv_err(err, errlen, SV_E_NOMEM, name);
            }
            word_apply(s, w, s->amp, tmp, 0);
            src = tmp;
        }
        blk_apply(s, &b, u->coeff, src, out);
        blk_free(&b);
    }
    if (!written) memset(out, 0, s->dim * sizeof(cplx));
    free(tmp);
    return 0;
}

double sv_obs_expval(const SvState *s, const SvTerm *t, int n, char *err, size_t errlen)
{
    const char *name = "expval";
    if (!s || !s->amp) {
        sv_err(err, errlen, SV_E_NOSTATE, name);
        return NAN;
    }
    if (!t || n <= 0) return 0;
    int np;
    SvPauli *p = pauli_terms(t, n, &np);
    if (!p) {
        sv_err(err, errlen, SV_E_NOMEM, name);
        return NAN;
    }
    double e = np ? sv_expval(s, p, np) : 0;
    free(p);
    cplx *tmp = NULL;
    for (int i = 0; i < n && !isnan(e); i++) {
        const SvTerm *u = &t[i];
        if (u->kind == SVB_NONE) continue;
        Blk b;
        if (blk_init(&b, s->nq, u) != 0) {
            e = NAN;
            break;
        }
        Word w = word_of(s->nq, 1.0, u->x, u->z);
        const cplx *ket = s->amp;
        if (w.X || w.Z || w.ph != 1) {
            if (!tmp && !(tmp = buffer(s->dim))) {
                blk_free(&b);
                e = NAN;
                break;
            }
            word_apply(s, w, s->amp, tmp, 0);
            ket = tmp;
        }
        e += u->coeff * creal(blk_expval(s, &b, s->amp, ket, NULL));
        blk_free(&b);
    }
    free(tmp);
    if (isnan(e)) sv_err(err, errlen, SV_E_NOMEM, name);
    return e;
}

double sv_obs_var(const SvState *s, const SvTerm *t, int n, char *err, size_t errlen)
{
    const char *name = "var";
    if (!s || !s->amp) {
        sv_err(err, errlen, SV_E_NOSTATE, name);
        return NAN;
    }
    if (!t || n <= 0) return 0;
    if (all_pauli(t, n)) {
        int np;
        SvPauli *p = pauli_terms(t, n, &np);
        if (!p) {
            sv_err(err, errlen, SV_E_NOMEM, name);
            return NAN;
        }
        double v = sv_var(s, p, np);
        free(p);
        if (isnan(v)) sv_err(err, errlen, SV_E_NOMEM, name);
        return v;
    }
    if (n == 1 && !t[0].x && !t[0].z) {
        /* a lone block: <B^2> = ||B psi||^2 (B Hermitian) */
        Blk b;
        if (blk_init(&b, s->nq, &t[0]) != 0) {
            sv_err(err, errlen, SV_E_NOMEM, name);
            return NAN;
        }
        double sq;
        double e = creal(blk_expval(s, &b, s->amp, s->amp, &sq));
        blk_free(&b);
        double c = t[0].coeff;
        double v = c * c * (sq - e * e);
        return v > 0 ? v : 0;
    }
    cplx *phi = buffer(s->dim);
    if (!phi) {
        sv_err(err, errlen, SV_E_NOMEM, name);
        return NAN;
    }
    if (sv_obs_apply(s, t, n, phi, err, errlen) != 0) {
        free(phi);
        return NAN;
    }
    double e = 0, sq = 0;
    for (uint64_t i = 0; i < s->dim; i++) {
        e += creal(conj(s->amp[i]) * phi[i]);
        sq += creal(phi[i]) * creal(phi[i]) + cimag(phi[i]) * cimag(phi[i]);
    }
    free(phi);
    double v = sq - e * e;
    return v > 0 ? v : 0;
}

/* ---- support and dense matrices -------------------------------------------------- */

int sv_obs_support(const SvTerm *t, int n, int *wires)
{
    uint64_t lo = 0; /* wires < 64 as bits; larger ones listed */
    int extra[SV_MAX_WIRES], ne = 0;
    for (int i = 0; i < n; i++) {
        lo |= t[i].x | t[i].z;
        if (t[i].kind == SVB_NONE) continue;
        for (int a = 0; a < t[i].k; a++) {
            int w = t[i].wires[a];
            if (w < 64)
                lo |= (uint64_t)1 << w;
            else {
                int seen = 0;
                for (int q = 0; q < ne; q++) seen |= extra[q] == w;
                if (!seen && ne < SV_MAX_WIRES) extra[ne++] = w;
            }
        }
    }
    int m = 0;
    for (int w = 0; w < 64; w++)
        if ((lo >> w) & 1) wires[m++] = w;
    sv_sort_ints(extra, ne);
    for (int q = 0; q < ne && m < SV_MAX_WIRES; q++) wires[m++] = extra[q];
    return m;
}

int sv_obs_matrix(const SvTerm *t, int n, const int *wires, int k, cplx *out, char *err,
                  size_t errlen)
{
    const char *name = "matrix";
    if (k < 0 || k > SV_MAX_DENSE) return sv_err(err, errlen, SV_E_BIGOP, name, k, SV_MAX_DENSE);
    if (!out) return sv_err(err, errlen, SV_E_NOMAT, name);
    uint64_t d = (uint64_t)1 << k;
    memset(out, 0, d * d * sizeof(cplx));
    /* position of wire w in the matrix's index: bit k-1-i for wires[i] */
    for (int i = 0; i < n; i++) {
        const SvTerm *u = &t[i];
        int bl[SV_MAX_WIRES]; /* block wire a -> matrix bit */
        uint64_t X = 0, Z = 0;
        int ny = 0;
        uint64_t word = u->x | u->z;
        for (int w = 0; w < 64; w++) {
            if (!((word >> w) & 1)) continue;
            int at = -1;
            for (int q = 0; q < k; q++)
                if (wires[q] == w) at = q;
            if (at < 0) return sv_err(err, errlen, E_COVER, name, w, k);
            uint64_t bit = (uint64_t)1 << (k - 1 - at);
            if ((u->x >> w) & 1) X |= bit;
            if ((u->z >> w) & 1) Z |= bit;
            if (((u->x & u->z) >> w) & 1) ny++;
        }
        int kb = u->kind == SVB_NONE ? 0 : u->k;
        if (kb > SV_MAX_DENSE) return sv_err(err, errlen, SV_E_BIGOP, name, kb, SV_MAX_DENSE);
        uint64_t bmask = 0;
        for (int a = 0; a < kb; a++) {
            int at = -1;
            for (int q = 0; q < k; q++)
                if (wires[q] == u->wires[a]) at = q;
            if (at < 0) return sv_err(err, errlen, E_COVER, name, u->wires[a], k);
            bl[a] = k - 1 - at;
            bmask |= (uint64_t)1 << bl[a];
        }
        static const cplx ipow[4] = { 1, I, -1, -I };
        cplx ph = u->coeff * ipow[ny & 3];
        uint64_t db = (uint64_t)1 << kb, bsel = 0; /* bsel: the basis block's local index */
        if (u->kind == SVB_BASIS)
            for (int a = 0; a < kb; a++)
                if ((u->bits >> a) & 1) bsel |= (uint64_t)1 << (kb - 1 - a);
        /* column c: W B |c>; B acts on the block bits, W on the rest */
        for (uint64_t c = 0; c < d; c++) {
            uint64_t cb = 0; /* c's block bits as a local index */
            for (int a = 0; a < kb; a++)
                if ((c >> bl[a]) & 1) cb |= (uint64_t)1 << (kb - 1 - a);
            uint64_t rest = c & ~bmask;
            for (uint64_t rb = 0; rb < db; rb++) {
                cplx bv;
                switch (u->kind) {
                case SVB_NONE: bv = rb == cb ? 1 : 0; break;
                case SVB_DENSE: bv = u->m[rb * db + cb]; break;
                case SVB_BASIS: bv = (rb == cb && cb == bsel) ? 1 : 0; break;
                case SVB_KET: bv = u->ket[rb] * conj(u->ket[cb]); break;
                default: return sv_err(err, errlen, E_KIND, name, (int)u->kind);
                }
                if (bv == 0) continue;
                uint64_t r = rest;
                for (int a = 0; a < kb; a++)
                    if ((rb >> (kb - 1 - a)) & 1) r |= (uint64_t)1 << bl[a];
                /* then W: |r> -> i^ny (-1)^{|r & Z|} |r ^ X> */
                cplx v = ph * bv;
                if (__builtin_parityll(r & Z)) v = -v;
                out[(r ^ X) * d + c] += v;
            }
        }
    }
    return 0;
}
void sv_terms_free(SvTerm *t, int n)
{
    for (int i = 0; t && i < n; i++) {
        free((void *)t[i].m);
        free((void *)t[i].ket);
    }
    free(t);
}

/* An owned copy of an observable (its blocks copied too). */
SvTerm *sv_terms_dup(const SvTerm *t, int n)
{
    SvTerm *c = malloc((size_t)(n ? n : 1) * sizeof(SvTerm));
    if (!c) return NULL;
    memcpy(c, t, (size_t)n * sizeof(SvTerm));
    for (int i = 0; i < n; i++) {
        size_t d = (size_t)1 << (c[i].k < 30 ? c[i].k : 0);
        c[i].m = NULL;
        c[i].ket = NULL;
        if (t[i].kind == SVB_DENSE && t[i].m) {
            cplx *m = malloc(d * d * sizeof(cplx));
            if (m) memcpy(m, t[i].m, d * d * sizeof(cplx));
            c[i].m = m;
        }
        if (t[i].kind == SVB_KET && t[i].ket) {
            cplx *k = malloc(d * sizeof(cplx));
            if (k) memcpy(k, t[i].ket, d * sizeof(cplx));
            c[i].ket = k;
        }
    }
    return c;
}

/* O^2 as an observable: a Pauli sum squared, or the square of O's dense
 * matrix on its support (at most SV_MAX_DENSE wires). */
SvTerm *sv_terms_square(const SvTerm *t, int n, int *n2, char *err, size_t errlen)
{
    bool pauli = true;
    for (int i = 0; i < n; i++) pauli &= t[i].kind == SVB_NONE;
    if (pauli) {
        SvPauli *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(SvPauli)), *sq = NULL;
        if (!p) return NULL;
        for (int i = 0; i < n; i++) p[i] = (SvPauli){ t[i].coeff, t[i].x, t[i].z };
        int m = sv_pauli_square(p, n, &sq);
        free(p);
        if (m < 0) return NULL;
        SvTerm *r = calloc((size_t)(m ? m : 1), sizeof(SvTerm));
        if (!r) {
            free(sq);
            return NULL;
        }
        for (int i = 0; i < m; i++) {
            r[i].coeff = sq[i].coeff;
            r[i].x = sq[i].x;
            r[i].z = sq[i].z;
            r[i].kind = SVB_NONE;
        }
        free(sq);
        *n2 = m;
        return r;
    }
    int wires[SV_MAX_WIRES];
    int k = sv_obs_support(t, n, wires);
    if (k > SV_MAX_DENSE) {
        sv_err(err, errlen, "the square of an observable on %d wires (at most %d)", k,
               SV_MAX_DENSE);
        return NULL;
    }
    size_t d = (size_t)1 << k;
    cplx *m = malloc(d * d * sizeof(cplx)), *m2 = malloc(d * d * sizeof(cplx));
    SvTerm *r = calloc(1, sizeof(SvTerm));
    if (!m || !m2 || !r || sv_obs_matrix(t, n, wires, k, m, err, errlen) != 0) {
        free(m);
        free(m2);
        free(r);
        return NULL;
    }
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < d; j++) {
            cplx s = 0;
            for (size_t q = 0; q < d; q++) s += m[i * d + q] * m[q * d + j];
            m2[i * d + j] = s;
        }
    free(m);
    r->coeff = 1;
    r->kind = SVB_DENSE;
    r->k = k;
    memcpy(r->wires, wires, (size_t)k * sizeof(int));
    r->m = m2;
    *n2 = 1;
    return r;
}

/* A block as a dense matrix on its own wires (d x d, wires[0] the most
   significant bit), into a new buffer. */
static cplx *block_dense(const SvTerm *t)
{
    size_t d = (size_t)1 << t->k;
    cplx *m = calloc(d * d, sizeof(cplx));
    if (!m) return NULL;
    if (t->kind == SVB_DENSE)
        memcpy(m, t->m, d * d * sizeof(cplx));
    else if (t->kind == SVB_BASIS) {
        size_t idx = 0;
        for (int i = 0; i < t->k; i++)
            if ((t->bits >> i) & 1) idx |= (size_t)1 << (t->k - 1 - i);
        m[idx * d + idx] = 1;
    } else
        for (size_t r = 0; r < d; r++)
            for (size_t c = 0; c < d; c++) m[r * d + c] = t->ket[r] * conj(t->ket[c]);
    return m;
}

int sv_term_tensor(const SvTerm *a, const SvTerm *b, SvTerm *out, char *err, size_t errlen)
{
    const char *name = "tensor product";
    uint64_t wa = a->x | a->z, wb = b->x | b->z;
    for (int i = 0; i < a->k; i++)
        if (a->wires[i] < 64) wa |= (uint64_t)1 << a->wires[i];
    for (int i = 0; i < b->k; i++)
        if (b->wires[i] < 64) wb |= (uint64_t)1 << b->wires[i];
    if (wa & wb)
        return sv_err(err, errlen, "tensor product of operators on the same wire (%d)",
                      __builtin_ctzll(wa & wb));
    memset(out, 0, sizeof *out);
    out->coeff = a->coeff * b->coeff;
    out->x = a->x | b->x;
    out->z = a->z | b->z;
    const SvTerm *one = a->kind == SVB_NONE ? b : b->kind == SVB_NONE ? a : NULL;
    if (one) {
        if (one->kind == SVB_NONE) return 0;
        SvTerm *c = sv_terms_dup(one, 1);
        if (!c || (one->kind == SVB_DENSE && !c->m) || (one->kind == SVB_KET && !c->ket)) {
            sv_terms_free(c, 1);
            return sv_err(err, errlen, SV_E_NOMEM, name);
        }
        SvTerm keep = *out;
        *out = *c;
        out->coeff = keep.coeff;
        out->x = keep.x;
        out->z = keep.z;
        free(c);
        return 0;
    }
    int k = a->k + b->k;
    out->k = k;
    memcpy(out->wires, a->wires, (size_t)a->k * sizeof(int));
    memcpy(out->wires + a->k, b->wires, (size_t)b->k * sizeof(int));
    if (a->kind == SVB_BASIS && b->kind == SVB_BASIS) {
        if (k > 64) return sv_err(err, errlen, "tensor product: a projector on more than 64 wires");
        out->kind = SVB_BASIS;
        out->bits = a->bits | (b->k < 64 ? b->bits << a->k : 0);
        return 0;
    }
    size_t da = (size_t)1 << a->k, db = (size_t)1 << b->k;
    if (a->kind == SVB_KET && b->kind == SVB_KET) {
        if (k > SV_MAX_KET)
            return sv_err(err, errlen, "tensor product: a projector on %d wires (at most %d)", k,
                          SV_MAX_KET);
        cplx *v = malloc(da * db * sizeof(cplx));
        if (!v) return sv_err(err, errlen, SV_E_NOMEM, name);
        for (size_t i = 0; i < da; i++)
            for (size_t j = 0; j < db; j++) v[i * db + j] = a->ket[i] * b->ket[j];
        out->kind = SVB_KET;
        out->ket = v;
        return 0;
    }
    if (k > SV_MAX_DENSE) return sv_err(err, errlen, SV_E_BIGOP, name, k, SV_MAX_DENSE);
    cplx *ma = block_dense(a), *mb = block_dense(b), *m = malloc(da * db * da * db * sizeof(cplx));
    if (!ma || !mb || !m) {
        free(ma);
        free(mb);
        free(m);
        return sv_err(err, errlen, SV_E_NOMEM, name);
    }
    size_t d = da * db;
    for (size_t ra = 0; ra < da; ra++)
        for (size_t rb = 0; rb < db; rb++)
            for (size_t ca = 0; ca < da; ca++)
                for (size_t cb = 0; cb < db; cb++)
                    m[(ra * db + rb) * d + ca * db + cb] = ma[ra * da + ca] * mb[rb * db + cb];
    free(ma);
    free(mb);
    out->kind = SVB_DENSE;
    out->m = m;
    return 0;
}
