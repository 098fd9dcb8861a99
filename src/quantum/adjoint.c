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
typedef struct Gen { double c; uint64_t ctrl, X, Z; int ny; } Gen;

/* Why: the rotation gates' generators are Pauli words (PennyLane's
   conventions, U = exp(i t G)); returns 0 when the gate needs the dense
   form. */
static int fast_gen(const SvOp *op, int p, int nq, Gen *g)
{
    if (p != 0) return 0;
    memset(g, 0, sizeof *g);
    uint64_t b[SV_MAX_WIRES];
    for (int i = 0; i < op->nwires && i < SV_MAX_WIRES; i++) b[i] = (uint64_t)1 << sv_bitpos(nq, op->wires[i]);
    for (int i = 0; i < op->nctrl; i++) g->ctrl |= (uint64_t)1 << sv_bitpos(nq, op->ctrl[i]);
    switch (op->gate) {
    case SV_RX: g->c = -0.5; g->X = b[0]; break;
    case SV_RY: g->c = -0.5; g->X = b[0]; g->Z = b[0]; g->ny = 1; break;
    case SV_RZ: g->c = -0.5; g->Z = b[0]; break;
    case SV_PHASESHIFT: g->c = 1; g->ctrl |= b[0]; break;
    case SV_CRX: g->c = -0.5; g->ctrl |= b[0]; g->X = b[1]; break;
    case SV_CRY: g->c = -0.5; g->ctrl |= b[0]; g->X = b[1]; g->Z = b[1]; g->ny = 1; break;
    case SV_CRZ: g->c = -0.5; g->ctrl |= b[0]; g->Z = b[1]; break;
    case SV_CPHASE: g->c = 1; g->ctrl |= b[0] | b[1]; break;
    case SV_ISINGXX: g->c = -0.5; g->X = b[0] | b[1]; break;
    case SV_ISINGYY: g->c = -0.5; g->X = g->Z = b[0] | b[1]; g->ny = 2; break;
    case SV_ISINGZZ: g->c = -0.5; g->Z = b[0] | b[1]; break;
    case SV_MULTIRZ:
        g->c = -0.5;
        for (int i = 0; i < op->nwires; i++) g->Z |= b[i];
        break;
    default: return 0;
    }
    if (op->adjoint) g->c = -g->c;       /* U^dag(t) = exp(-i t G) */
    return 1;
}

typedef struct BiCtx {
    const double *bra, *ket;     /* interleaved re, im */
    uint64_t dim;
    Gen g;
    int q;                       /* single-bit pattern: the bit, else -1 */
    double part[2 * SV_MAX_TEAM];
} BiCtx;

/* Why: the rotation gates of one wire (RX RY RZ PhaseShift) touch one bit
   q: over the pairs (i0, i1 = i0 | 2^q) the form is two contiguous complex
   dot products, w0 conj(bra[p0]) ket[i0] + w1 conj(bra[p1]) ket[i1], with
   the partners swapped when X has the bit and the weights from the control
   (PhaseShift: i0 does not count) and Z (i1 counts negated). */
static void bi_pair_part(void *vctx, int part, int np)
{
    BiCtx *c = vctx;
    const Gen *g = &c->g;
    uint64_t Q = (uint64_t)1 << c->q, half = c->dim / 2, lo, hi;
    sv_slice(half, part, np, &lo, &hi);
    double w0 = g->ctrl ? 0 : 1, w1 = g->Z ? -1 : 1;
    bool swap = g->X != 0;
    double ar = 0, ai = 0, br = 0, bi = 0;
    for (uint64_t k = lo; k < hi;) {
        /* a run of pairs whose i0 are contiguous: the low q bits vary */
        uint64_t j = k & (Q - 1), len = Q - j;
        if (len > hi - k) len = hi - k;
        uint64_t i0 = ((k >> c->q) << (c->q + 1)) | j, i1 = i0 | Q;
        const double *k0 = c->ket + 2 * i0, *k1 = c->ket + 2 * i1;
        const double *b0 = c->bra + 2 * (swap ? i1 : i0), *b1 = c->bra + 2 * (swap ? i0 : i1);
        for (uint64_t t = 0; t < len; t++) {
            /* conj(b) * x = (br xr + bi xi) + i (br xi - bi xr) */
            ar += b0[2 * t] * k0[2 * t] + b0[2 * t + 1] * k0[2 * t + 1];
            ai += b0[2 * t] * k0[2 * t + 1] - b0[2 * t + 1] * k0[2 * t];
            br += b1[2 * t] * k1[2 * t] + b1[2 * t + 1] * k1[2 * t + 1];
            bi += b1[2 * t] * k1[2 * t + 1] - b1[2 * t + 1] * k1[2 * t];
        }
        k += len;
    }
    c->part[2 * part] = w0 * ar + w1 * br;
    c->part[2 * part + 1] = w0 * ai + w1 * bi;
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
    int np = sv_parallel(s, c.q >= 0 ? bi_pair_part : bi_part, &c);
    double re = 0, im = 0;
    for (int p = 0; p < np; p++) { re += c.part[2 * p]; im += c.part[2 * p + 1]; }
    static const cplx ipow[4] = { 1, I, -1, -I };
    return g->c * ipow[g->ny & 3] * (re + I * im);
}

/* <bra| G |ket> for a dense generator on the op's wires (controls first). */
static int dense_bilinear(const SvState *s, const cplx *bra, const cplx *ket, const SvOp *op, int p,
                          cplx *G, cplx *out, char *err, size_t errlen)
{
    if (sv_generator(op, p, G, err, errlen) != 0) return -1;
    SvTerm t;
    memset(&t, 0, sizeof t);
    t.coeff = 1;
    t.kind = SVB_DENSE;
    t.k = op->nctrl + op->nwires;
    for (int i = 0; i < op->nctrl; i++) t.wires[i] = op->ctrl[i];
    for (int i = 0; i < op->nwires; i++) t.wires[op->nctrl + i] = op->wires[i];
    t.m = G;
    /* G ket into a buffer, then the inner product */
    cplx *tmp = aligned_alloc(64, ((s->dim * sizeof(cplx)) + 63) & ~(size_t)63);
    if (!tmp) return sv_err(err, errlen, SV_E_NOMEM, "adjoint");
    SvState ks = *s;
    ks.amp = (cplx *)ket;
    if (sv_obs_apply(&ks, &t, 1, tmp, err, errlen) != 0) { free(tmp); return -1; }
    cplx z = 0;
    for (uint64_t i = 0; i < s->dim; i++) z += conj(bra[i]) * tmp[i];
    free(tmp);
    *out = z;
    return 0;
}

/* A state of final's width and threads whose amplitudes the caller fills
   (no reset: every amplitude is written before it is read). */
static int state_like(const SvState *final, SvState *s)
{
    memset(s, 0, sizeof *s);
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

int sv_adjoint(const SvState *final, const SvOp *ops, int nops, const uint8_t *want,
               int nobs, const SvTerm *const *obs, const int *nterms, const int *pos,
               double *out, char *err, size_t errlen)
{
    const char *name = "adjoint";
    if (!final || !final->amp) return sv_err(err, errlen, SV_E_NOSTATE, name);
    if (nops < 0 || nobs < 0 || (nops && !ops) || (nobs && (!obs || !nterms)) || !out)
        return sv_err(err, errlen, SV_E_NOMAT, name);
    size_t slots = (size_t)nops * 3;
    memset(out, 0, (size_t)nobs * slots * sizeof(double));
    for (int j = 0; j < nobs; j++) {
        int at = pos ? pos[j] : nops;
        if (at < 0 || at > nops) return sv_err(err, errlen, E_NOBS, j, at, nops);
    }
    if (nobs == 0) return 0;
    SvState psi;
    if (state_like(final, &psi) != 0) return sv_err(err, errlen, SV_E_NOMEM, name);
    memcpy(psi.amp, final->amp, final->dim * sizeof(cplx));
    SvState *lam = calloc((size_t)nobs, sizeof(SvState));
    uint8_t *active = calloc((size_t)nobs, 1);
    cplx *G = NULL;          /* a dense generator, when a gate needs one */
    int rc = 0;
    if (!lam || !active) rc = sv_err(err, errlen, SV_E_NOMEM, name);
    for (int j = 0; j < nobs && rc == 0; j++)
        if (state_like(final, &lam[j]) != 0) rc = sv_err(err, errlen, SV_E_NOMEM, name);
    for (int k = nops; k >= 0 && rc == 0; k--) {
        /* psi is the state after k gates: bras of the observables measured here */
        for (int j = 0; j < nobs && rc == 0; j++)
            if ((pos ? pos[j] : nops) == k) {
                if (sv_obs_apply(&psi, obs[j], nterms[j], lam[j].amp, err, errlen) != 0) rc = -1;
                active[j] = 1;
            }
        if (k == 0 || rc) break;
        const SvOp *op = &ops[k - 1];
        SvOp inv = *op;
        inv.adjoint = !op->adjoint;
        if (sv_apply(&psi, &inv, err, errlen) != 0) { rc = -1; break; }
        for (int j = 0; j < nobs && rc == 0; j++)
            if (active[j] && sv_apply(&lam[j], &inv, err, errlen) != 0) rc = -1;
        uint8_t w = want ? want[k - 1] : (uint8_t)((1u << op->nparams) - 1);
        for (int p = 0; p < op->nparams && p < 3 && rc == 0; p++) {
            if (!((w >> p) & 1)) continue;
            Gen g;
            int fast = fast_gen(op, p, final->nq, &g);
            for (int j = 0; j < nobs && rc == 0; j++) {
                if (!active[j]) continue;
                cplx z = 0;
                if (fast) z = bilinear(&psi, lam[j].amp, psi.amp, &g);
                else {
                    if (!G && !(G = malloc(((size_t)1 << SV_MAX_DENSE) * ((size_t)1 << SV_MAX_DENSE) * sizeof(cplx)))) {
                        rc = sv_err(err, errlen, SV_E_NOMEM, name);
                        break;
                    }
                    if (dense_bilinear(&psi, lam[j].amp, psi.amp, op, p, G, &z, err, errlen) != 0) { rc = -1; break; }
                }
                out[(size_t)j * slots + (size_t)(k - 1) * 3 + (size_t)p] = -2 * cimag(z);
            }
        }
    }
    for (int j = 0; j < nobs && lam; j++) sv_free(&lam[j]);
    free(lam);
    free(active);
    free(G);
    sv_free(&psi);
    return rc;
}
