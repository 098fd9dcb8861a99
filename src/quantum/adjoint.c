/* adjoint.c — adjoint differentiation on the state vector (svmeas.h):
 * the derivatives of expectation values with respect to every gate
 * parameter of a circuit, in one backward sweep (Jones & Gacon 2020).
 *
 * Going back from the final state, each gate is undone on psi and on the
 * bras lambda_j = O_j psi; for a parameter of gate U the derivative is
 *     d<O_j>/dt = 2 Re <lambda_j| dU psi_before> = -2 Im <U^dag lambda_j| G |psi_before>
 * with G = -i U^dag dU/dt the parameter's generator. For the rotation
 * gates G is c P (x) W (a Pauli word W, times a projector P onto control
 * wires being |1>): the bilinear form is one read-only pass, no copy. Other
 * gates (Rot, U3, the excitations) use their dense generator. Observables
 * are any SvTerm sums (Pauli, Hermitian, projectors): the bra is O psi.
 * Must not know about tapes, values or how the caller found the gates.
 */
#include "svmeas.h"
#include "sv_impl.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define E_NOBS "adjoint: observable %d is measured after %d gates, but the circuit has %d"

/* A generator c * P_ctrl (x) W: ctrl and W in index-bit space. */
typedef struct Gen {
    double c;
    uint64_t ctrl, X, Z;
    int ny;
} Gen;

/* Why: the rotation gates' generators are Pauli words (PennyLane's
   conventions, U = exp(i t G)); returns 0 when the gate needs the dense
   form. */
static int fast_gen(const SvOp *op, int p, int nq, Gen *g)
{
    if (p != 0) return 0;
    memset(g, 0, sizeof *g);
    uint64_t b[SV_MAX_WIRES];
    for (int i = 0; i < op->nwires && i < SV_MAX_WIRES; i++)
        b[i] = (uint64_t)1 << sv_bitpos(nq, op->wires[i]);
    for (int i = 0; i < op->nctrl; i++) g->ctrl |= (uint64_t)1 << sv_bitpos(nq, op->ctrl[i]);
    switch ((int)op->gate) {
    case SV_RX:
        g->c = -0.5;
        g->X = b[0];
        break;
    case SV_RY:
        g->c = -0.5;
        g->X = b[0];
        g->Z = b[0];
        g->ny = 1;
        break;
    case SV_RZ:
        g->c = -0.5;
        g->Z = b[0];
        break;
    case SV_PHASESHIFT:
        g->c = 1;
        g->ctrl |= b[0];
        break;
    case SV_CRX:
        g->c = -0.5;
        g->ctrl |= b[0];
        g->X = b[1];
        break;
    case SV_CRY:
        g->c = -0.5;
        g->ctrl |= b[0];
        g->X = b[1];
        g->Z = b[1];
        g->ny = 1;
        break;
    case SV_CRZ:
        g->c = -0.5;
        g->ctrl |= b[0];
        g->Z = b[1];
        break;
    case SV_CPHASE:
        g->c = 1;
        g->ctrl |= b[0] | b[1];
        break;
    case SV_ISINGXX:
        g->c = -0.5;
        g->X = b[0] | b[1];
        break;
    case SV_ISINGYY:
        g->c = -0.5;
        g->X = g->Z = b[0] | b[1];
        g->ny = 2;
        break;
    case SV_ISINGZZ:
        g->c = -0.5;
        g->Z = b[0] | b[1];
        break;
    case SV_MULTIRZ:
        g->c = -0.5;
        for (int i = 0; i < op->nwires; i++) g->Z |= b[i];
        break;
    default: return 0;
    }
    if (op->adjoint) g->c = -g->c; /* U^dag(t) = exp(-i t G) */
    return 1;
}

typedef struct BiCtx {
    const double *bra, *ket; /* interleaved re, im */
    uint64_t dim;
    Gen g;
    int q; /* single-bit pattern: the bit, else -1 */
    double part[2 * SV_MAX_TEAM];
} BiCtx;

/* Two complex numbers (re, im, re, im) as one vector: the compiler's vector
   extension, SSE2 at the baseline, AVX2 in the SV_AVX2 copy. */
typedef double v4d __attribute__((vector_size(32)));
#if defined(__clang__)
#define SWAP_RI(v)     __builtin_shufflevector((v), (v), 1, 0, 3, 2)
#define SWAP_HALVES(v) __builtin_shufflevector((v), (v), 2, 3, 0, 1)
#else
typedef long long v4l __attribute__((vector_size(32)));
#define SWAP_RI(v)     __builtin_shuffle((v), (v4l){ 1, 0, 3, 2 })
#define SWAP_HALVES(v) __builtin_shuffle((v), (v4l){ 2, 3, 0, 1 })
#endif
#define LD4(v, p) memcpy(&(v), (p), sizeof(v4d))

/* Why: the rotation gates of one wire (RX RY RZ PhaseShift) touch one bit
   q: over the pairs (i0, i1 = i0 | 2^q) the form is two contiguous complex
   dot products, w0 conj(bra[p0]) ket[i0] + w1 conj(bra[p1]) ket[i1], with
   the partners swapped when X has the bit and the weights from the control
   (PhaseShift: i0 does not count) and Z (i1 counts negated). Two complex
   numbers a step in vectors: P sums conj-free products (re re, im im),
   M the crossed ones (re im, im re); conj(b) x = (P0 + P1) + i (M0 - M1).
   q = 0 (pairs adjacent): one vector holds a pair, its halves are i0, i1. */
static inline __attribute__((always_inline)) void bi_pair_body(BiCtx *c, int part, int np)
{
    const Gen *g = &c->g;
    uint64_t Q = (uint64_t)1 << c->q, half = c->dim / 2, lo, hi;
    sv_slice(half, part, np, &lo, &hi);
    double w0 = g->ctrl ? 0 : 1, w1 = g->Z ? -1 : 1;
    bool swap = g->X != 0;
    double ar = 0, ai = 0, br = 0, bi = 0;
    v4d P0 = { 0, 0, 0, 0 }, M0 = P0, P1 = P0, M1 = P0;
    if (c->q == 0) {
        const double *kp = c->ket, *bp = c->bra;
        uint64_t k = lo;
        for (; k + 2 <= hi; k += 2) {
            v4d x0, y0, x1, y1;
            LD4(x0, kp + 4 * k);
            LD4(y0, bp + 4 * k);
            LD4(x1, kp + 4 * k + 4);
            LD4(y1, bp + 4 * k + 4);
            if (swap) {
                y0 = SWAP_HALVES(y0);
                y1 = SWAP_HALVES(y1);
            }
            P0 += y0 * x0;
            M0 += y0 * SWAP_RI(x0);
            P1 += y1 * x1;
            M1 += y1 * SWAP_RI(x1);
        }
        P0 += P1;
        M0 += M1;
        ar = P0[0] + P0[1];
        ai = M0[0] - M0[1];
        br = P0[2] + P0[3];
        bi = M0[2] - M0[3];
        for (; k < hi; k++) {
            const double *x = kp + 4 * k, *y0 = bp + 4 * k + (swap ? 2 : 0),
                         *y1 = bp + 4 * k + (swap ? 0 : 2);
            ar += y0[0] * x[0] + y0[1] * x[1];
            ai += y0[0] * x[1] - y0[1] * x[0];
            br += y1[0] * x[2] + y1[1] * x[3];
            bi += y1[0] * x[3] - y1[1] * x[2];
        }
    } else {
        for (uint64_t k = lo; k < hi;) {
            /* a run of pairs whose i0 are contiguous: the low q bits vary */
            uint64_t j = k & (Q - 1), len = Q - j;
            if (len > hi - k) len = hi - k;
            uint64_t i0 = ((k >> c->q) << (c->q + 1)) | j, i1 = i0 | Q;
            const double *k0 = c->ket + 2 * i0, *k1 = c->ket + 2 * i1;
            const double *b0 = c->bra + 2 * (swap ? i1 : i0), *b1 = c->bra + 2 * (swap ? i0 : i1);
            uint64_t t = 0;
            for (; t + 2 <= len; t += 2) {
                v4d x0, y0, x1, y1;
                LD4(x0, k0 + 2 * t);
                LD4(y0, b0 + 2 * t);
                LD4(x1, k1 + 2 * t);
                LD4(y1, b1 + 2 * t);
                P0 += y0 * x0;
                M0 += y0 * SWAP_RI(x0);
                P1 += y1 * x1;
                M1 += y1 * SWAP_RI(x1);
            }
            for (; t < len; t++) {
                ar += b0[2 * t] * k0[2 * t] + b0[2 * t + 1] * k0[2 * t + 1];
                ai += b0[2 * t] * k0[2 * t + 1] - b0[2 * t + 1] * k0[2 * t];
                br += b1[2 * t] * k1[2 * t] + b1[2 * t + 1] * k1[2 * t + 1];
                bi += b1[2 * t] * k1[2 * t + 1] - b1[2 * t + 1] * k1[2 * t];
            }
            k += len;
        }
        ar += (P0[0] + P0[1]) + (P0[2] + P0[3]);
        ai += (M0[0] - M0[1]) + (M0[2] - M0[3]);
        br += (P1[0] + P1[1]) + (P1[2] + P1[3]);
        bi += (M1[0] - M1[1]) + (M1[2] - M1[3]);
    }
    c->part[2 * part] = w0 * ar + w1 * br;
    c->part[2 * part + 1] = w0 * ai + w1 * bi;
}

static void bi_pair_part(void *vctx, int part, int np) { bi_pair_body(vctx, part, np); }
SV_AVX2 static void bi_pair_part_avx2(void *vctx, int part, int np)
{
    bi_pair_body(vctx, part, np);
}

/* Why: any other generator: runs of 2^r indices (r = the lowest control
   bit) share the control test; per element the partner and the sign. */
static void bi_part(void *vctx, int part, int np)
{
    BiCtx *c = vctx;
    const Gen *g = &c->g;
    uint64_t lo, hi;
    sv_slice(c->dim, part, np, &lo, &hi);
    int r = g->ctrl ? __builtin_ctzll(g->ctrl) : 63;
    uint64_t R = r >= 63 ? c->dim : (uint64_t)1 << r;
    double re = 0, im = 0;
    for (uint64_t i = lo; i < hi;) {
        uint64_t len = R - (i & (R - 1));
        if (len > hi - i) len = hi - i;
        if ((i & g->ctrl) == g->ctrl) {
            for (uint64_t t = i; t < i + len; t++) {
                const double *b = c->bra + 2 * (t ^ g->X), *x = c->ket + 2 * t;
                double s = __builtin_parityll(t & g->Z) ? -1.0 : 1.0;
                re += s * (b[0] * x[0] + b[1] * x[1]);
                im += s * (b[0] * x[1] - b[1] * x[0]);
            }
        }
        i += len;
    }
    c->part[2 * part] = re;
    c->part[2 * part + 1] = im;
}

static cplx bilinear(const SvState *s, const cplx *bra, const cplx *ket, const Gen *g)
{
    BiCtx c;
    c.bra = (const double *)bra;
    c.ket = (const double *)ket;
    c.dim = s->dim;
    c.g = *g;
    uint64_t all = g->X | g->Z | g->ctrl;
    c.q = all && !(all & (all - 1)) && s->dim >= 2 ? __builtin_ctzll(all) : -1;
    int np = sv_parallel(s,
                         c.q < 0          ? bi_part
                         : sv_use_avx2(s) ? bi_pair_part_avx2
                                          : bi_pair_part,
                         &c);
    double re = 0, im = 0;
    for (int p = 0; p < np; p++) {
        re += c.part[2 * p];
        im += c.part[2 * p + 1];
    }
    static const cplx ipow[4] = { 1, I, -1, -I };
    return g->c * ipow[g->ny & 3] * (re + I * im);
}

/* One backward sweep's working state: the spec; psi, the state after the
   gates not yet undone (the caller's copy or its own); per observable its
   bra lam[j], active once the sweep has reached the place it is measured;
   the scratch for a dense generator, G with gcap entries, grown to the
   widest gate that needed one (a 1-wire gate's is 64 bytes, not
   SV_MAX_DENSE's 16 MiB); and out, the derivatives (adjoint's layout). */
typedef struct Sweep {
    const SvAdjointSpec *sp;
    SvState *psi;
    SvState *lam;
    uint8_t *active;
    cplx *G;
    size_t gcap;
    double *out;
    char *err;
    size_t errlen;
} Sweep;

/* <bra| G |psi> for the dense generator of parameter p of op (on its
   wires, controls first), in w's scratch. */
static int dense_bilinear(Sweep *w, const cplx *bra, const SvOp *op, int p, cplx *out)
{
    const SvState *s = w->psi;
    int kg = op->nctrl + op->nwires;
    size_t gd = (size_t)1 << (kg < SV_MAX_DENSE ? kg : SV_MAX_DENSE);
    if (gd * gd > w->gcap) { /* (a wider gate is refused by sv_generator) */
        cplx *ng = realloc(w->G, gd * gd * sizeof(cplx));
        if (!ng) return sv_err(w->err, w->errlen, SV_E_NOMEM, "adjoint");
        w->G = ng;
        w->gcap = gd * gd;
    }
    if (sv_generator(op, p, w->G, w->err, w->errlen) != 0) return -1;
    SvTerm t;
    memset(&t, 0, sizeof t);
    t.coeff = 1;
    t.kind = SVB_DENSE;
    t.k = op->nctrl + op->nwires;
    for (int i = 0; i < op->nctrl; i++) t.wires[i] = op->ctrl[i];
    for (int i = 0; i < op->nwires; i++) t.wires[op->nctrl + i] = op->wires[i];
    t.m = w->G;
    /* G psi into a buffer, then the inner product */
    cplx *tmp = aligned_alloc(64, ((s->dim * sizeof(cplx)) + 63) & ~(size_t)63);
    if (!tmp) return sv_err(w->err, w->errlen, SV_E_NOMEM, "adjoint");
    if (sv_obs_apply(s, &t, 1, tmp, w->err, w->errlen) != 0) {
        free(tmp);
        return -1;
    }
    cplx z = 0;
    for (uint64_t i = 0; i < s->dim; i++) z += conj(bra[i]) * tmp[i];
    free(tmp);
    *out = z;
    return 0;
}

/* The derivatives of every active observable in the wanted parameters
   (bits wb) of gate k - 1, op, with psi and the bras before it. */
static int gate_derivs(Sweep *w, const SvOp *op, int k, uint8_t wb)
{
    size_t slots = (size_t)w->sp->nops * 3;
    Gen g;
    for (int p = 0; p < op->nparams && p < 3; p++) {
        if (!((wb >> p) & 1)) continue;
        int fast = fast_gen(op, p, w->psi->nq, &g);
        for (int j = 0; j < w->sp->nobs; j++) {
            if (!w->active[j]) continue;
            cplx z = 0;
            if (fast)
                z = bilinear(w->psi, w->lam[j].amp, w->psi->amp, &g);
            else if (dense_bilinear(w, w->lam[j].amp, op, p, &z) != 0)
                return -1;
            w->out[(size_t)j * slots + (size_t)(k - 1) * 3 + (size_t)p] = -2 * cimag(z);
        }
    }
    return 0;
}

/* A state of final's width and threads whose amplitudes the caller fills
   (no reset: every amplitude is written before it is read). */
static int state_like(const SvState *final, SvState *s)
{
    memset(s, 0, sizeof *s);
    sv_assert(final->nq >= 0 && final->nq < 64 && final->dim == (size_t)1 << final->nq);
    size_t bytes = final->dim * sizeof(cplx);
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes < 64 ? 64 : bytes) != 0 || !p) return -1;
    s->nq = final->nq;
    s->dim = final->dim;
    s->amp = p;
    s->simd = final->simd;
    sv_set_threads(s, final->team, final->nthreads);
    return 0;
}

/* Why: the sweep runs on psi in place (the caller's copy or its own). */
static int adjoint_sweep(SvState *psi, const SvAdjointSpec *sp, double *out, char *err,
                         size_t errlen)
{
    const char *name = "adjoint";
    const SvOp *ops = sp->ops;
    int nops = sp->nops, nobs = sp->nobs;
    const uint8_t *want = sp->want;
    const int *pos = sp->pos;
    size_t slots = (size_t)nops * 3;
    sv_assert(nops >= 0 && nobs >= 0 && psi && psi->amp);
    /* each observable is measured after some prefix of the circuit, 0..nops gates */
    for (int j = 0; pos && j < nobs; j++) sv_assert(pos[j] >= 0 && pos[j] <= nops);
    for (int k = 0; k < nops; k++) sv_assert(ops[k].nparams >= 0 && ops[k].nparams <= 3);
    /* gates before the first wanted parameter need not be undone */
    int first = nops;
    for (int k = 0; k < nops && first == nops; k++) {
        uint8_t w = want ? want[k] : (uint8_t)((1u << ops[k].nparams) - 1);
        if (w & ((1u << ops[k].nparams) - 1)) first = k;
    }
    Sweep sw = {
        sp,  psi,   calloc((size_t)nobs, sizeof(SvState)), calloc((size_t)nobs, 1), NULL, 0, out,
        err, errlen
    };
    SvState *lam = sw.lam;
    uint8_t *active = sw.active;
    int rc = 0;
    if (!lam || !active) rc = sv_err(err, errlen, SV_E_NOMEM, name);
    for (int j = 0; j < nobs && rc == 0; j++)
        if (state_like(psi, &lam[j]) != 0) rc = sv_err(err, errlen, SV_E_NOMEM, name);
    for (int k = nops; k > first && rc == 0; k--) {
        /* psi is the state after k gates: bras of the observables measured here */
        for (int j = 0; j < nobs && rc == 0; j++)
            if ((pos ? pos[j] : nops) == k) {
                if (sv_obs_apply(psi, sp->obs[j], sp->nterms[j], lam[j].amp, err, errlen) != 0)
                    rc = -1;
                active[j] = 1;
            }
        if (rc) break;
        const SvOp *op = &ops[k - 1];
        uint8_t w = want ? want[k - 1] : (uint8_t)((1u << op->nparams) - 1);
        /* A one-parameter rotation commutes with its generator: its
           derivative reads the states after it as well as before it, so the
           first one needs no undoing. Others are undone first. */
        Gen g;
        bool after = (w & 1) && op->nparams == 1 && fast_gen(op, 0, psi->nq, &g);
        if (after)
            for (int j = 0; j < nobs; j++)
                if (active[j])
                    out[(size_t)j * slots + (size_t)(k - 1) * 3] =
                        -2 * cimag(bilinear(psi, lam[j].amp, psi->amp, &g));
        if (after && k - 1 == first) break;
        SvOp inv = *op;
        inv.adjoint = !op->adjoint;
        if (sv_apply(psi, &inv, err, errlen) != 0) {
            rc = -1;
            break;
        }
        for (int j = 0; j < nobs && rc == 0; j++)
            if (active[j] && sv_apply(&lam[j], &inv, err, errlen) != 0) rc = -1;
        if (rc == 0 && !after) rc = gate_derivs(&sw, op, k, w);
    }
    for (int j = 0; j < nobs && lam; j++) sv_free(&lam[j]);
    free(lam);
    free(active);
    free(sw.G);
    return rc;
}

static int adjoint_check(const SvState *final, const SvAdjointSpec *sp, double *out, char *err,
                         size_t errlen)
{
    const char *name = "adjoint";
    int nops = sp->nops, nobs = sp->nobs;
    if (!final || !final->amp) return sv_err(err, errlen, SV_E_NOSTATE, name);
    if (nops < 0 || nobs < 0 || (nops && !sp->ops) || (nobs && (!sp->obs || !sp->nterms)) || !out)
        return sv_err(err, errlen, SV_E_NOMAT, name);
    memset(out, 0, (size_t)nobs * (size_t)nops * 3 * sizeof(double));
    for (int j = 0; j < nobs; j++) {
        int at = sp->pos ? sp->pos[j] : nops;
        if (at < 0 || at > nops) return sv_err(err, errlen, E_NOBS, j, at, nops);
    }
    return 0;
}

int sv_adjoint(const SvState *final, const SvAdjointSpec *sp, double *out, char *err, size_t errlen)
{
    if (adjoint_check(final, sp, out, err, errlen) != 0) return -1;
    if (sp->nobs == 0) return 0;
    SvState psi;
    if (state_like(final, &psi) != 0) return sv_err(err, errlen, SV_E_NOMEM, "adjoint");
    memcpy(psi.amp, final->amp, final->dim * sizeof(cplx));
    int rc = adjoint_sweep(&psi, sp, out, err, errlen);
    sv_free(&psi);
    return rc;
}

int sv_adjoint_inplace(SvState *final, const SvAdjointSpec *sp, double *out, char *err,
                       size_t errlen)
{
    if (adjoint_check(final, sp, out, err, errlen) != 0) return -1;
    if (sp->nobs == 0) return 0;
    return adjoint_sweep(final, sp, out, err, errlen);
}
