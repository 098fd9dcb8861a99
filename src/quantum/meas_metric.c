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

/* t as the dense term m on the wires w[0..k) (coefficient 1). */
static void dense_term(SvTerm *t, const cplx *m, const int *w, int k)
{
    memset(t, 0, sizeof *t);
    t->coeff = 1;
    t->kind = SVB_DENSE;
    t->k = k;
    memcpy(t->wires, w, (size_t)k * sizeof(int));
    t->m = m;
}

/* The dense matrix of generator i embedded on the wires un[0..ku). */
static int embed(const SvGens *g, int i, const int *un, int ku, cplx *out, char *err, size_t errlen)
{
    SvTerm t;
    dense_term(&t, g->m[i], g->wires[i], g->k[i]);
    return sv_obs_matrix(&t, 1, un, ku, out, err, errlen);
}

/* The width of the widest pair of generators (their wires' union), at
   most SV_MAX_DENSE (a wider pair is refused when it is read). */
static int widest_pair(const SvGens *g)
{
    int kmax = 0;
    for (int i = 0; i < g->n; i++)
        for (int j = i; j < g->n; j++) {
            int ku = g->k[i];
            for (int q = 0; q < g->k[j]; q++) {
                int seen = 0;
                for (int r = 0; r < g->k[i]; r++) seen |= g->wires[i][r] == g->wires[j][q];
                ku += !seen;
            }
            if (ku > kmax) kmax = ku;
        }
    return kmax > SV_MAX_DENSE ? SV_MAX_DENSE : kmax;
}

/* The union of the wires of generators i and j, in first-seen order, in
   un: its width, or -1 with the error when it is wider than SV_MAX_DENSE. */
static int wire_union(const SvGens *g, int i, int j, int *un, char *err, size_t errlen)
{
    int ku = 0;
    for (int q = 0; q < g->k[i]; q++) un[ku++] = g->wires[i][q];
    for (int q = 0; q < g->k[j]; q++) {
        int seen = 0;
        for (int r = 0; r < ku; r++) seen |= un[r] == g->wires[j][q];
        if (!seen) {
            if (ku == SV_MAX_DENSE) return sv_err(err, errlen, E_UNION, ku + 1, SV_MAX_DENSE);
            un[ku++] = g->wires[j][q];
        }
    }
    return ku;
}

/* One covariance block's work: the state and the generators, and the two
   embedding buffers a and b, each as large as the widest pair's union
   needs; errors go to err. */
typedef struct BlockWork {
    const SvState *s;
    const SvGens *g;
    cplx *a, *b;
    char *err;
    size_t errlen;
} BlockWork;

/* Re<G_i G_j> on the state into *e. */
static int pair_moment(const BlockWork *w, int i, int j, double *e)
{
    const SvGens *g = w->g;
    cplx *a = w->a, *b = w->b;
    char *err = w->err;
    size_t errlen = w->errlen;
    int un[2 * SV_MAX_DENSE];
    int ku = wire_union(g, i, j, un, err, errlen);
    if (ku < 0) return -1;
    size_t d = (size_t)1 << ku;
    if (embed(g, i, un, ku, a, err, errlen) != 0 || embed(g, j, un, ku, b, err, errlen) != 0)
        return -1;
    /* H = (A B + B A) / 2: Re<A B> as the expectation of a Hermitian matrix */
    cplx *h = malloc(d * d * sizeof(cplx));
    if (!h) return sv_err(err, errlen, SV_E_NOMEM, "metric_tensor");
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
    dense_term(&t, h, un, ku);
    *e = sv_obs_expval(w->s, &t, 1, err, errlen);
    free(h);
    return isnan(*e) ? -1 : 0;
}

int sv_metric_block(const SvState *s, const SvGens *g, double *out, char *err, size_t errlen)
{
    const char *name = "metric_tensor";
    if (!s || !s->amp) return sv_err(err, errlen, SV_E_NOSTATE, name);
    int n = g->n;
    if (n <= 0) return 0;
    if (!g->m || !g->wires || !g->k || !out) return sv_err(err, errlen, SV_E_NOMAT, name);
    double *ev = malloc((size_t)n * sizeof(double));
    /* the embedding buffers as large as the widest pair needs (its wires'
       union, at most SV_MAX_DENSE): a few small generators need a few
       hundred bytes, not the 16 MiB of the largest possible pair */
    size_t dmax = (size_t)1 << widest_pair(g);
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
        dense_term(&t, g->m[i], g->wires[i], g->k[i]);
        if (sv_obs_check(&t, 1, s->nq, name, err, errlen) != 0) {
            rc = -1;
            break;
        }
        ev[i] = sv_obs_expval(s, &t, 1, err, errlen);
        if (isnan(ev[i])) rc = -1;
    }
    for (int i = 0; i < n && rc == 0; i++)
        for (int j = i; j < n && rc == 0; j++) {
            double e = 0;
            rc = pair_moment(&(BlockWork){ s, g, a, b, err, errlen }, i, j, &e);
            if (rc == 0) out[(size_t)i * n + j] = out[(size_t)j * n + i] = e - ev[i] * ev[j];
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

/* A trained Rot or U3 as its three one-parameter parts, in applied order,
   at el (slot: the trainable slots of its parameters): Rot: RZ(phi)
   RY(theta) RZ(omega); U3(theta, phi, delta): PhaseShift(delta) RY(theta)
   PhaseShift(phi); an adjoint reverses it. */
static void split_rotation(const SvOp *op, const int *slot, Elem *el)
{
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
        el[q].op = pr[j];
        el[q].slot = ps[j];
        el[q].wires = op_wires(op);
    }
}

/* The circuit's elementary gates into el (room for 3 per op): their
   number in *ne and the trainable slots' in *P; -1 with the error for a
   wire outside the device. */
static int elementary(const SvMetricSpec *sp, Elem *el, int *ne, int *P, char *err, size_t errlen)
{
    *ne = *P = 0;
    for (int k = 0; k < sp->nops; k++) {
        const SvOp *op = &sp->ops[k];
        uint8_t tr = sp->train[k];
        for (int i = 0; i < op->nwires; i++)
            if (op->wires[i] < 0 || op->wires[i] >= sp->nq)
                return sv_err(err, errlen, SV_E_RANGE, "metric_tensor", op->wires[i], sp->nq);
        int slot[3] = { -1, -1, -1 }, s = *P;
        for (int p = 0; p < op->nparams && p < 3; p++)
            if ((tr >> p) & 1) slot[p] = s++;
        *P = s;
        if ((op->gate == SV_ROT || op->gate == SV_U3) && tr) {
            split_rotation(op, slot, el + *ne);
            *ne += 3;
            continue;
        }
        el[*ne].op = *op;
        el[*ne].slot = op->nparams >= 1 ? slot[0] : -1;
        el[*ne].wires = op_wires(op);
        (*ne)++;
    }
    return 0;
}

/* Each elementary gate's layer (layer[i], -1: not trainable): a trainable
   gate touching a wire that depends on the current layer starts a new one.
   Returns the number of layers. */
static int assign_layers(const Elem *el, int ne, int *layer)
{
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
    return L;
}

/* One metric tensor's work: the elementary gates el[0..ne) and their
   layers, the P x P result out (diag_only: its diagonal), and the buffers
   reused layer after layer: anc marks the gates a layer depends on; the
   layer's generators, each 2^k x 2^k, lie one after another in gbuf (gcap
   entries, gused in use; member q's at goff[q]), with their wires in wbuf
   (2 SV_MAX_WIRES each) and their trainable slots; gens, gw and gk are the
   SvGens view of them, and blk the layer's block. */
typedef struct Metric {
    const Elem *el;
    const int *layer;
    int ne, P, diag_only;
    double *out;
    char *anc;
    cplx *gbuf;
    size_t *goff, gused, gcap;
    const cplx **gens;
    const int **gw;
    int *gk, *wbuf, *slots;
    double *blk;
} Metric;

/* Layer l's members' generators (controls first, as sv_op_matrix orders)
   into w, its last member at el[last]: their number, or -1. */
static int layer_generators(Metric *w, int l, int last, char *err, size_t errlen)
{
    const char *name = "metric_tensor";
    const Elem *el = w->el;
    const int *layer = w->layer;
    int m = 0;
    w->gused = 0;
    for (int i = 0; i <= last; i++) {
        if (layer[i] != l) continue;
        const SvOp *op = &el[i].op;
        int k = op->nctrl + op->nwires;
        if (k > SV_MAX_DENSE) return sv_err(err, errlen, SV_E_BIGOP, name, k, SV_MAX_DENSE);
        size_t gd = (size_t)1 << k;
        if (w->gused + gd * gd > w->gcap) {
            size_t nc = 2 * (w->gused + gd * gd);
            cplx *nb = realloc(w->gbuf, nc * sizeof(cplx));
            if (!nb) return sv_err(err, errlen, SV_E_NOMEM, name);
            w->gbuf = nb;
            w->gcap = nc;
        }
        w->goff[m] = w->gused;
        w->gused += gd * gd;
        if (sv_generator(op, 0, w->gbuf + w->goff[m], err, errlen) != 0) return -1;
        int *wq = w->wbuf + (size_t)m * SV_MAX_WIRES * 2;
        for (int q = 0; q < op->nctrl; q++) wq[q] = op->ctrl[q];
        for (int q = 0; q < op->nwires; q++) wq[op->nctrl + q] = op->wires[q];
        w->gk[m] = k;
        w->slots[m] = el[i].slot;
        m++;
    }
    for (int q = 0; q < m; q++) {
        w->gens[q] = w->gbuf + w->goff[q];
        w->gw[q] = w->wbuf + (size_t)q * SV_MAX_WIRES * 2;
    }
    return m;
}

/* Layer l's block of the tensor (out: P x P): the state s made by the
   gates the layer depends on, then the covariance of its generators. */
static int layer_block(SvState *s, Metric *w, int l, char *err, size_t errlen)
{
    const Elem *el = w->el;
    const int *layer = w->layer;
    int P = w->P, last = -1;
    /* the layer's members and, scanning back, the gates they depend on */
    for (int i = 0; i < w->ne; i++)
        if (layer[i] == l) last = i;
    uint64_t cone = 0;
    for (int i = last; i >= 0; i--) {
        w->anc[i] = 0;
        if (layer[i] == l)
            cone |= el[i].wires;
        else if (el[i].wires & cone) {
            w->anc[i] = 1;
            cone |= el[i].wires;
        }
    }
    sv_reset(s);
    for (int i = 0; i <= last; i++)
        if (w->anc[i] && sv_apply(s, &el[i].op, err, errlen) != 0) return -1;
    int m = layer_generators(w, l, last, err, errlen);
    if (m < 0) return -1;
    if (w->diag_only) {
        for (int q = 0; q < m; q++) {
            double g;
            SvGens one = { 1, w->gens + q, w->gw + q, w->gk + q };
            if (sv_metric_block(s, &one, &g, err, errlen) != 0) return -1;
            w->out[(size_t)w->slots[q] * P + w->slots[q]] = g;
        }
        return 0;
    }
    SvGens all = { m, w->gens, w->gw, w->gk };
    if (sv_metric_block(s, &all, w->blk, err, errlen) != 0) return -1;
    for (int a = 0; a < m; a++)
        for (int b = 0; b < m; b++)
            w->out[(size_t)w->slots[a] * P + w->slots[b]] = w->blk[(size_t)a * m + b];
    return 0;
}

int sv_metric_tensor(const SvMetricSpec *sp, double *out, int *nlayers, char *err, size_t errlen)
{
    const char *name = "metric_tensor";
    int nq = sp->nq, nops = sp->nops;
    if (nq < 1 || nq > 63) return sv_err(err, errlen, SV_E_NWMEAS, name, nq, 63);
    if (nops < 0 || (nops && (!sp->ops || !sp->train)) || !out)
        return sv_err(err, errlen, SV_E_NOMAT, name);
    /* the elementary gates and the trainable slots */
    Elem *el = malloc((size_t)(3 * nops + 1) * sizeof *el);
    if (!el) return sv_err(err, errlen, SV_E_NOMEM, name);
    int ne, P;
    if (elementary(sp, el, &ne, &P, err, errlen) != 0) {
        free(el);
        return -1;
    }
    memset(out, 0, (size_t)P * (size_t)P * sizeof(double));
    int *layer = malloc((size_t)(ne + 1) * sizeof(int));
    if (!layer) {
        free(el);
        return sv_err(err, errlen, SV_E_NOMEM, name);
    }
    int L = assign_layers(el, ne, layer);
    if (nlayers) *nlayers = L;
    int rc = 0;
    SvState s;
    if (L && sv_init(&s, nq) != 0) {
        free(el);
        free(layer);
        return sv_err(err, errlen, SV_E_NOMEM, name);
    }
    Metric w = {
        .el = el,
        .layer = layer,
        .ne = ne,
        .P = P,
        .diag_only = sp->diag_only,
        .out = out,
        .anc = malloc((size_t)(ne + 1)),
        .goff = malloc((size_t)(P + 1) * sizeof(size_t)),
        .gens = malloc((size_t)(P + 1) * sizeof(const cplx *)),
        .gw = malloc((size_t)(P + 1) * sizeof(const int *)),
        .gk = malloc((size_t)(P + 1) * sizeof(int)),
        .wbuf = malloc((size_t)(P + 1) * SV_MAX_WIRES * 2 * sizeof(int)),
        .slots = malloc((size_t)(P + 1) * sizeof(int)),
        .blk = malloc((size_t)(P + 1) * (size_t)(P + 1) * sizeof(double)),
    };
    if (!w.anc || !w.goff || !w.gens || !w.gw || !w.gk || !w.wbuf || !w.slots || !w.blk)
        rc = sv_err(err, errlen, SV_E_NOMEM, name);
    for (int l = 0; l < L && rc == 0; l++) rc = layer_block(&s, &w, l, err, errlen);
    if (L) sv_free(&s);
    free(el);
    free(layer);
    free(w.anc);
    free(w.gbuf);
    free(w.goff);
    free(w.gens);
    free(w.gw);
    free(w.gk);
    free(w.wbuf);
    free(w.slots);
    free(w.blk);
    return rc;
}
