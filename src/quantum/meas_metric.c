/* meas_metric.c — the pieces of the Fubini-Study metric tensor
 * (svmeas.h): the generator of a gate parameter, and the covariance of a
 * layer's generators on a state, g_ij = Re<G_i G_j> - <G_i><G_j>, which is
 * one block of the block-diagonal metric (what metric_tensor computes per
 * layer of parametrised gates). Built from the observable kernels: each
 * product G_i G_j is a dense block on the union of the two gates' wires.
 * Must not know how circuits are split into layers (the caller does that).
 */
#include "svmeas.h"
#include "sv_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define E_UNION "metric_tensor: two generators span %d wires (at most %d)"

int sv_generator(const SvOp *op, int p, cplx *out, char *err, size_t errlen)
{
    if (!op || !out) return sv_err(err, errlen, SV_E_NOOP);
    const SvGateInfo *gi = sv_gate_info(op->gate);
    const char *name = gi ? gi->name : "generator";
    int k = op->nctrl + op->nwires;
    if (k < 1 || k > SV_MAX_DENSE) return sv_err(err, errlen, SV_E_BIGOP, name, k, SV_MAX_DENSE);
    size_t d = (size_t)1 << k;
    cplx *u = malloc(d * d * sizeof(cplx)), *du = malloc(d * d * sizeof(cplx));
    if (!u || !du) {
        free(u);
        free(du);
        return sv_err(err, errlen, SV_E_NOMEM, name);
    }
    int rc = sv_op_matrix(op, u, err, errlen);
    if (rc == 0) rc = sv_op_dmatrix(op, p, du, err, errlen);
    if (rc == 0) {
        /* G = -i U^dagger U', made exactly Hermitian (it is, up to rounding) */
        for (size_t i = 0; i < d; i++)
            for (size_t j = 0; j < d; j++) {
                cplx acc = 0;
                for (size_t q = 0; q < d; q++) acc += conj(u[q * d + i]) * du[q * d + j];
                out[i * d + j] = -I * acc;
            }
        for (size_t i = 0; i < d; i++)
            for (size_t j = i; j < d; j++) {
                cplx h = 0.5 * (out[i * d + j] + conj(out[j * d + i]));
                out[i * d + j] = h;
                out[j * d + i] = conj(h);
            }
    }
    free(u);
    free(du);
    return rc;
}

/* The dense matrix of generator i embedded on the wires un[0..ku). */
static int embed(const cplx *g, const int *w, int k, const int *un, int ku, cplx *out, char *err,
                 size_t errlen)
{
    SvTerm t;
    memset(&t, 0, sizeof t);
    t.coeff = 1;
    t.kind = SVB_DENSE;
    t.k = k;
    memcpy(t.wires, w, (size_t)k * sizeof(int));
    t.m = g;
    return sv_obs_matrix(&t, 1, un, ku, out, err, errlen);
}

int sv_metric_block(const SvState *s, int n, const cplx *const *gens, const int *const *wires,
                    const int *k, double *out, char *err, size_t errlen)
{
    const char *name = "metric_tensor";
    if (!s || !s->amp) return sv_err(err, errlen, SV_E_NOSTATE, name);
    if (n <= 0) return 0;
    if (!gens || !wires || !k || !out) return sv_err(err, errlen, SV_E_NOMAT, name);
    double *ev = malloc((size_t)n * sizeof(double));
    /* the embedding buffers as large as the widest pair needs (its wires'
       union, at most SV_MAX_DENSE): a few small generators need a few
       hundred bytes, not the 16 MiB of the largest possible pair */
    int kmax = 0;
    for (int i = 0; i < n; i++)
        for (int j = i; j < n; j++) {
            int ku = k[i];
            for (int q = 0; q < k[j]; q++) {
                int seen = 0;
                for (int r = 0; r < k[i]; r++) seen |= wires[i][r] == wires[j][q];
                ku += !seen;
            }
            if (ku > kmax) kmax = ku;
        }
    if (kmax > SV_MAX_DENSE) kmax = SV_MAX_DENSE; /* the pair is refused below */
    size_t dmax = (size_t)1 << kmax;
    cplx *a = malloc(dmax * dmax * sizeof(cplx)), *b = malloc(dmax * dmax * sizeof(cplx));
    if (!ev || !a || !b) {
        free(ev);
        free(a);
        free(b);
        return sv_err(err, errlen, SV_E_NOMEM, name);
    }
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        SvTerm t;
        memset(&t, 0, sizeof t);
        t.coeff = 1;
        t.kind = SVB_DENSE;
        t.k = k[i];
        memcpy(t.wires, wires[i], (size_t)k[i] * sizeof(int));
        t.m = gens[i];
        if (sv_obs_check(&t, 1, s->nq, name, err, errlen) != 0) {
            rc = -1;
            break;
        }
        ev[i] = sv_obs_expval(s, &t, 1, err, errlen);
        if (isnan(ev[i])) rc = -1;
    }
    for (int i = 0; i < n && rc == 0; i++)
        for (int j = i; j < n && rc == 0; j++) {
            /* union of the wires, in first-seen order */
            int un[2 * SV_MAX_DENSE], ku = 0;
            for (int q = 0; q < k[i]; q++) un[ku++] = wires[i][q];
            for (int q = 0; q < k[j]; q++) {
                int seen = 0;
                for (int r = 0; r < ku; r++) seen |= un[r] == wires[j][q];
                if (!seen) {
                    if (ku == SV_MAX_DENSE) {
                        rc = sv_err(err, errlen, E_UNION, ku + 1, SV_MAX_DENSE);
                        break;
                    }
                    un[ku++] = wires[j][q];
                }
            }
            if (rc) break;
            size_t d = (size_t)1 << ku;
            if (embed(gens[i], wires[i], k[i], un, ku, a, err, errlen) != 0 ||
                embed(gens[j], wires[j], k[j], un, ku, b, err, errlen) != 0) {
                rc = -1;
                break;
            }
            /* H = (A B + B A) / 2: Re<A B> as the expectation of a Hermitian matrix */
            cplx *h = malloc(d * d * sizeof(cplx));
            if (!h) {
                rc = sv_err(err, errlen, SV_E_NOMEM, name);
                break;
            }
            for (size_t r = 0; r < d; r++)
                for (size_t c = 0; c < d; c++) {
                    cplx ab = 0, ba = 0;
                    for (size_t q = 0; q < d; q++) {
                        ab += a[r * d + q] * b[q * d + c];
                        ba += b[r * d + q] * a[q * d + c];
                    }
                    h[r * d + c] = 0.5 * (ab + ba);
                }
            SvTerm t;
            memset(&t, 0, sizeof t);
            t.coeff = 1;
            t.kind = SVB_DENSE;
            t.k = ku;
            memcpy(t.wires, un, (size_t)ku * sizeof(int));
            t.m = h;
            double e = sv_obs_expval(s, &t, 1, err, errlen);
            free(h);
            if (isnan(e)) {
                rc = -1;
                break;
            }
            out[(size_t)i * n + j] = out[(size_t)j * n + i] = e - ev[i] * ev[j];
        }
    free(ev);
    free(a);
    free(b);
    return rc;
}

/* ---- the whole block-diagonal tensor ------------------------------------------ */

/* One elementary gate: an op or one part of a decomposed Rot/U3; slot is
   the trainable parameter it carries (-1: fixed). */
typedef struct Elem {
    SvOp op;
    int slot;
    uint64_t wires;
} Elem;

static uint64_t op_wires(const SvOp *op)
{
    uint64_t m = 0;
    for (int i = 0; i < op->nwires; i++) m |= (uint64_t)1 << op->wires[i];
    for (int i = 0; i < op->nctrl; i++) m |= (uint64_t)1 << op->ctrl[i];
    return m;
}

static SvOp part(const SvOp *op, SvGate g, double t)
{
    SvOp r = *op;
    r.gate = g;
    r.nparams = 1;
    r.params[0] = t;
    r.params[1] = r.params[2] = 0;
    return r;
}

int sv_metric_tensor(int nq, const SvOp *ops, int nops, const uint8_t *train, int diag_only,
                     double *out, int *nlayers, char *err, size_t errlen)
{
    const char *name = "metric_tensor";
    if (nq < 1 || nq > 63) return sv_err(err, errlen, SV_E_NWMEAS, name, nq, 63);
    if (nops < 0 || (nops && (!ops || !train)) || !out)
        return sv_err(err, errlen, SV_E_NOMAT, name);
    /* the elementary gates and the trainable slots */
    Elem *el = malloc((size_t)(3 * nops + 1) * sizeof *el);
    if (!el) return sv_err(err, errlen, SV_E_NOMEM, name);
    int ne = 0, P = 0;
    for (int k = 0; k < nops; k++) {
        const SvOp *op = &ops[k];
        for (int i = 0; i < op->nwires; i++)
            if (op->wires[i] < 0 || op->wires[i] >= nq) {
                free(el);
                return sv_err(err, errlen, SV_E_RANGE, name, op->wires[i], nq);
            }
        int base = P;
        for (int p = 0; p < op->nparams && p < 3; p++)
            if ((train[k] >> p) & 1) P++;
        int slot[3] = { -1, -1, -1 }, s = base;
        for (int p = 0; p < op->nparams && p < 3; p++)
            if ((train[k] >> p) & 1) slot[p] = s++;
        if ((op->gate == SV_ROT || op->gate == SV_U3) && train[k]) {
            /* applied order: Rot: RZ(phi) RY(theta) RZ(omega); U3(theta, phi, delta):
               PhaseShift(delta) RY(theta) PhaseShift(phi); an adjoint reverses it */
            SvOp pr[3];
            int ps[3];
            if (op->gate == SV_ROT) {
                pr[0] = part(op, SV_RZ, op->params[0]);
                ps[0] = slot[0];
                pr[1] = part(op, SV_RY, op->params[1]);
                ps[1] = slot[1];
                pr[2] = part(op, SV_RZ, op->params[2]);
                ps[2] = slot[2];
            } else {
                pr[0] = part(op, SV_PHASESHIFT, op->params[2]);
                ps[0] = slot[2];
                pr[1] = part(op, SV_RY, op->params[0]);
                ps[1] = slot[0];
                pr[2] = part(op, SV_PHASESHIFT, op->params[1]);
                ps[2] = slot[1];
            }
            for (int q = 0; q < 3; q++) {
                int j = op->adjoint ? 2 - q : q;
                el[ne].op = pr[j];
                el[ne].slot = ps[j];
                el[ne].wires = op_wires(op);
                ne++;
            }
            continue;
        }
        el[ne].op = *op;
        el[ne].slot = op->nparams >= 1 ? slot[0] : -1;
        el[ne].wires = op_wires(op);
        ne++;
    }
    memset(out, 0, (size_t)P * (size_t)P * sizeof(double));
    /* layers: a trainable gate touching a wire that depends on the current
       layer starts a new one */
    int *layer = malloc((size_t)(ne + 1) * sizeof(int));
    if (!layer) {
        free(el);
        return sv_err(err, errlen, SV_E_NOMEM, name);
    }
    int L = 0;
    uint64_t taint = 0;
    for (int i = 0; i < ne; i++) {
        layer[i] = -1;
        if (el[i].slot >= 0) {
            if (L == 0 || (el[i].wires & taint)) {
                L++;
                taint = 0;
            }
            layer[i] = L - 1;
            taint |= el[i].wires;
        } else if (el[i].wires & taint) {
            taint |= el[i].wires;
        }
    }
    if (nlayers) *nlayers = L;
    int rc = 0;
    SvState s;
    if (L && sv_init(&s, nq) != 0) {
        free(el);
        free(layer);
        return sv_err(err, errlen, SV_E_NOMEM, name);
    }
    char *anc = malloc((size_t)(ne + 1));
    cplx *gbuf = NULL; /* the layer's generators, each 2^k x 2^k, one after another */
    size_t *goff = malloc((size_t)(P + 1) * sizeof(size_t)), gused = 0, gcap = 0;
    const cplx **gens = malloc((size_t)(P + 1) * sizeof *gens);
    const int **gw = malloc((size_t)(P + 1) * sizeof *gw);
    int *gk = malloc((size_t)(P + 1) * sizeof *gk);
    int *wbuf = malloc((size_t)(P + 1) * SV_MAX_WIRES * 2 * sizeof(int));
    int *slots = malloc((size_t)(P + 1) * sizeof(int));
    double *blk = malloc((size_t)(P + 1) * (size_t)(P + 1) * sizeof(double));
    if (!anc || !goff || !gens || !gw || !gk || !wbuf || !slots || !blk)
        rc = sv_err(err, errlen, SV_E_NOMEM, name);
    for (int l = 0; l < L && rc == 0; l++) {
        /* the layer's members and, scanning back, the gates they depend on */
        int last = -1, m = 0;
        for (int i = 0; i < ne; i++)
            if (layer[i] == l) last = i;
        uint64_t cone = 0;
        for (int i = last; i >= 0; i--) {
            anc[i] = 0;
            if (layer[i] == l)
                cone |= el[i].wires;
            else if (el[i].wires & cone) {
                anc[i] = 1;
                cone |= el[i].wires;
            }
        }
        sv_reset(&s);
        gused = 0;
        for (int i = 0; i <= last && rc == 0; i++)
            if (anc[i] && sv_apply(&s, &el[i].op, err, errlen) != 0) rc = -1;
        /* generators of the members (controls first, as sv_op_matrix orders) */
        for (int i = 0; i <= last && rc == 0; i++) {
            if (layer[i] != l) continue;
            const SvOp *op = &el[i].op;
            int k = op->nctrl + op->nwires;
            if (k > SV_MAX_DENSE) {
                rc = sv_err(err, errlen, SV_E_BIGOP, name, k, SV_MAX_DENSE);
                break;
            }
            size_t gd = (size_t)1 << k;
            if (gused + gd * gd > gcap) {
                size_t nc = 2 * (gused + gd * gd);
                cplx *nb = realloc(gbuf, nc * sizeof(cplx));
                if (!nb) {
                    rc = sv_err(err, errlen, SV_E_NOMEM, name);
                    break;
                }
                gbuf = nb;
                gcap = nc;
            }
            goff[m] = gused;
            gused += gd * gd;
            if (sv_generator(op, 0, gbuf + goff[m], err, errlen) != 0) {
                rc = -1;
                break;
            }
            int *w = wbuf + (size_t)m * SV_MAX_WIRES * 2;
            for (int q = 0; q < op->nctrl; q++) w[q] = op->ctrl[q];
            for (int q = 0; q < op->nwires; q++) w[op->nctrl + q] = op->wires[q];
            gk[m] = k;
            slots[m] = el[i].slot;
            m++;
        }
        if (rc) break;
        for (int q = 0; q < m; q++) {
            gens[q] = gbuf + goff[q];
            gw[q] = wbuf + (size_t)q * SV_MAX_WIRES * 2;
        }
        if (diag_only) {
            for (int q = 0; q < m && rc == 0; q++) {
                double g;
                if (sv_metric_block(&s, 1, gens + q, gw + q, gk + q, &g, err, errlen) != 0)
                    rc = -1;
                else
                    out[(size_t)slots[q] * P + slots[q]] = g;
            }
        } else if (sv_metric_block(&s, m, gens, gw, gk, blk, err, errlen) != 0) {
            rc = -1;
        } else {
            for (int a = 0; a < m; a++)
                for (int b = 0; b < m; b++)
                    out[(size_t)slots[a] * P + slots[b]] = blk[(size_t)a * m + b];
        }
    }
    if (L) sv_free(&s);
    free(el);
    free(layer);
    free(anc);
    free(gbuf);
    free(goff);
    free(gens);
    free(gw);
    free(gk);
    free(wbuf);
    free(slots);
    free(blk);
    return rc;
}
