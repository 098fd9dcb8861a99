/* dsv_gates.c — one gate on a distributed state: local, diagonal, exchange.
 *
 * An op is first written as a base gate on its targets plus controls
 * (CNOT = X with a control, Toffoli = X with two, CRZ = RZ with one, CSWAP
 * = SWAP with one, IsingZZ = MultiRZ): sv_apply runs exactly these forms
 * with the same kernels and matrices, so nothing changes numerically.
 * Then, with the current layout:
 *  - a control on a global wire: the rank drops it (its bit is 1) or does
 *    nothing (its bit is 0);
 *  - every target local: sv_apply on the chunk;
 *  - a diagonal base gate with global targets: the phase the rank's bits
 *    select, applied by the diagonal kernel (MultiRZ with the angle's sign
 *    flipped by the global parity, or a 1-wire diagonal of one phase);
 *  - anything else with global targets: relabel (swap them with free high
 *    local wires) when the queue uses them again or there are several,
 *    else gather the blocks of the 2^g ranks of the group into the
 *    exchange buffer, run the gate there with sv_apply, keep our part.
 * Must not know about the language or the task farm.
 */
#include "dsv_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shapes the dispatcher tells apart (as gates.c does). */
enum { K_NONE, K_DIAG1, K_PERM1, K_PAIR1, K_PARITY, K_OTHER };

/* An op as base gate + controls, in logical wires. */
typedef struct Canon {
    SvOp op; /* base gate: wires = targets, ctrl = every control */
    int kind;
    cplx m[4]; /* 1-target gates: the 2x2 that sv_apply uses */
} Canon;

/* Why: gate-intrinsic controls become ordinary controls so a global
   control wire can be dropped; the resulting op is one sv_apply runs with
   the same job (checked gate by gate against gates.c). */
static void canon(const SvOp *in, Canon *c)
{
    SvOp *o = &c->op;
    *o = *in;
    int nc0 = 0; /* leading wires that are controls */
    SvGate base = in->gate;
    switch ((int)in->gate) {
    case SV_CNOT:
        base = SV_PAULIX;
        nc0 = 1;
        break;
    case SV_CY:
        base = SV_PAULIY;
        nc0 = 1;
        break;
    case SV_CZ:
        base = SV_PAULIZ;
        nc0 = 1;
        break;
    case SV_CRX:
        base = SV_RX;
        nc0 = 1;
        break;
    case SV_CRY:
        base = SV_RY;
        nc0 = 1;
        break;
    case SV_CRZ:
        base = SV_RZ;
        nc0 = 1;
        break;
    case SV_CPHASE:
        base = SV_PHASESHIFT;
        nc0 = 1;
        break;
    case SV_TOFFOLI:
        base = SV_PAULIX;
        nc0 = 2;
        break;
    case SV_CSWAP:
        base = SV_SWAP;
        nc0 = 1;
        break;
    case SV_ISINGZZ: base = SV_MULTIRZ; break;
    default: break;
    }
    if (nc0) {
        o->gate = base;
        for (int i = 0; i < nc0; i++) o->ctrl[o->nctrl++] = in->wires[i];
        o->nwires = in->nwires - nc0;
        memmove(o->wires, in->wires + nc0, (size_t)o->nwires * sizeof(int));
    } else {
        o->gate = base;
    }
    c->kind = K_OTHER;
    if (o->gate == SV_IDENTITY) {
        c->kind = K_NONE;
        return;
    }
    if (o->gate == SV_MULTIRZ) {
        c->kind = K_PARITY;
        return;
    }
    int one = o->nwires == 1 && o->gate != SV_BASISSTATE && o->gate != SV_MULTIRZ;
    if (one) {
        SvOp b = *o;
        b.nctrl = 0;
        if (sv_op_matrix(&b, c->m, NULL, 0) != 0) return;
        if (c->m[1] == 0 && c->m[2] == 0)
            c->kind = K_DIAG1;
        else if (c->m[0] == 0 && c->m[3] == 0 && c->m[1] == 1 && c->m[2] == 1)
            c->kind = K_PERM1;
        else
            c->kind = K_PAIR1;
    }
}

/* Whether a canonical op needs data from other ranks when target w is global. */
static int moves_data(const Canon *c)
{
    return c->kind != K_DIAG1 && c->kind != K_PARITY && c->kind != K_NONE;
}

/* Why: relabelling pays off when the wire is a moving target again soon. */
static int uses_ahead(const Dsv *d, int from, int w)
{
    int n = 0;
    for (int i = from; i < d->nqueue; i++) {
        Canon c;
        canon(&d->queue[i].op, &c);
        if (!moves_data(&c)) continue;
        if (c.op.gate == SV_BASISSTATE) {
            for (int t = 0; t < c.op.nwires; t++)
                if (c.op.wires[t] == w && ((c.op.bits >> t) & 1)) n++;
            continue;
        }
        for (int t = 0; t < c.op.nwires; t++)
            if (c.op.wires[t] == w) n++;
    }
    return n;
}

/* The op with every wire mapped: global controls checked (returns 0 when
   this rank must skip the op: a global control bit is 0), the rest moved
   to `out` on the local chunk's wires. */
static int localize_controls(const Dsv *d, const SvOp *o, SvOp *out)
{
    *out = *o;
    out->nctrl = 0;
    for (int i = 0; i < o->nctrl; i++) {
        int p = d->perm[o->ctrl[i]];
        if (p < d->k) {
            if (!dsv_gbit(d, p)) return 0;
        } else {
            out->ctrl[out->nctrl++] = p - d->k;
        }
    }
    return 1;
}

/* Why: a phase that is the same for every amplitude the local controls
   select (a diagonal on global wires): a 1-wire diagonal QubitUnitary of
   that phase on a local wire that is not a control, which sv_apply sends
   to the same diagonal kernel, multiplying by the same number. */
static int apply_scalar(Dsv *d, const SvOp *lo, cplx ph, char *err, size_t errlen)
{
    if (ph == 1) return 0; /* the kernel skips rows of ones too */
    int t = -1;
    for (int w = d->nl - 1; w >= 0 && t < 0; w--) {
        int used = 0;
        for (int i = 0; i < lo->nctrl; i++) used |= lo->ctrl[i] == w;
        if (!used) t = w;
    }
    cplx m[4] = { ph, 0, 0, ph };
    SvOp u;
    memset(&u, 0, sizeof u);
    if (t < 0) { /* every local wire is a control: diag(1, ph) on one of them */
        t = lo->ctrl[lo->nctrl - 1];
        m[0] = 1;
        u.nctrl = lo->nctrl - 1;
    } else {
        u.nctrl = lo->nctrl;
    }
    memcpy(u.ctrl, lo->ctrl, (size_t)u.nctrl * sizeof(int));
    u.gate = SV_QUBITUNITARY;
    u.nwires = 1;
    u.wires[0] = t;
    u.matrix = m;
    if (sv_apply(&d->loc, &u, err, errlen) != 0)
        return dsv_fail(d, err, errlen, "%s", err ? err : "phase");
    return 0;
}

/* Why: diagonal gates never move data: each rank knows its global bits. */
static int apply_diag_global(Dsv *d, const Canon *c, char *err, size_t errlen)
{
    SvOp lo;
    if (!localize_controls(d, &c->op, &lo)) return 0;
    d->st.diag_global++;
    if (c->kind == K_DIAG1) {
        int p = d->perm[c->op.wires[0]];
        return apply_scalar(d, &lo, dsv_gbit(d, p) ? c->m[3] : c->m[0], err, errlen);
    }
    /* parity: MultiRZ; the global targets' parity flips the angle's sign
       (ex(-a/2) and ex(a/2) trade places bit for bit) */
    int par = 0;
    lo.nwires = 0;
    for (int i = 0; i < c->op.nwires; i++) {
        int p = d->perm[c->op.wires[i]];
        if (p < d->k)
            par ^= dsv_gbit(d, p);
        else
            lo.wires[lo.nwires++] = p - d->k;
    }
    if (lo.nwires > 0) {
        if (par) lo.params[0] = -lo.params[0];
        if (sv_apply(&d->loc, &lo, err, errlen) != 0)
            return dsv_fail(d, err, errlen, "%s", err ? err : "MultiRZ");
        return 0;
    }
    SvOp one = c->op;
    one.nwires = 1;
    one.wires[0] = 0;
    one.nctrl = 0;
    cplx m[4];
    if (sv_op_matrix(&one, m, err, errlen) != 0)
        return dsv_fail(d, err, errlen, "%s", err ? err : "MultiRZ");
    return apply_scalar(d, &lo, par ? m[3] : m[0], err, errlen);
}

/* Why: every target local after the controls are settled: the kernels. */
static int apply_local(Dsv *d, const Canon *c, char *err, size_t errlen)
{
    SvOp lo;
    if (!localize_controls(d, &c->op, &lo)) return 0;
    for (int i = 0; i < lo.nwires; i++) lo.wires[i] = d->perm[c->op.wires[i]] - d->k;
    d->st.local_ops++;
    if (sv_apply(&d->loc, &lo, err, errlen) != 0)
        return dsv_fail(d, err, errlen, "%s", err ? err : "gate");
    return 0;
}

/* One exchanged gate (apply_exchange): its g global targets gp (physical
   wires), its nlt local targets lq (local bits) and per target tslot (0
   global, 1 local); the gathered block of b low bits with the nh local
   targets hq above it (ascending), g + h + b <= lx; the controls above the
   block as cmask_hi (they select stretches), those below it cl (they stay
   in the op); the op so on the gathered state s of sq wires; this rank's
   slot my of the G = 2^g and the peer of each slot. */
typedef struct Xchg {
    int g, gp[SV_MAX_WIRES];
    int nlt, lq[SV_MAX_WIRES];
    int tslot[SV_MAX_WIRES];
    int b, h, nh, hq[SV_MAX_WIRES];
    uint64_t cmask_hi;
    int ncl, cl[SV_MAX_WIRES];
    int sq;
    SvOp so;
    SvState s;
    int my, G, peer[1 << 6];
} Xchg;

/* The gate's targets split into global and local ones. */
static void xchg_targets(const Dsv *d, const SvOp *o, Xchg *x)
{
    x->g = x->nlt = 0;
    for (int i = 0; i < o->nwires; i++) {
        int p = d->perm[o->wires[i]];
        if (p < d->k) {
            x->gp[x->g++] = p;
            x->tslot[i] = 0;
        } else {
            x->lq[x->nlt++] = dsv_pbit(d, p);
            x->tslot[i] = 1;
        }
    }
}

/* The block: the most low bits that fit the exchange buffer beside the
   targets above them; the local targets and the controls (lo's, local)
   placed against it. -1 when the gate does not fit. */
static int xchg_block(Dsv *d, const SvOp *lo, Xchg *x, char *err, size_t errlen)
{
    int g = x->g, b = d->nl < d->lx - g ? d->nl : d->lx - g, h = 0;
    for (;; b--) {
        h = 0;
        for (int i = 0; i < x->nlt; i++) h += x->lq[i] >= b;
        if (g + h + b <= d->lx || b == 0) break;
    }
    if (g + h + b > d->lx)
        return dsv_fail(d, err, errlen,
                        "distributed state: gate too large for the exchange buffer");
    x->b = b;
    x->h = h;
    x->nh = 0; /* local targets above the block, ascending */
    for (int q = b; q < d->nl; q++)
        for (int i = 0; i < x->nlt; i++)
            if (x->lq[i] == q) x->hq[x->nh++] = q;
    /* controls: below the block they stay in the op, above it they select stretches */
    x->cmask_hi = 0;
    x->ncl = 0;
    for (int i = 0; i < lo->nctrl; i++) {
        int q = d->nl - 1 - lo->ctrl[i];
        if (q >= b)
            x->cmask_hi |= (uint64_t)1 << q;
        else
            x->cl[x->ncl++] = q;
    }
    x->sq = g + h + b; /* qubits of the gathered state */
    return 0;
}

/* The op on the gathered state (wire = sq - 1 - bit), and that state on
   the exchange buffer. */
static void xchg_op(const Dsv *d, const SvOp *o, Xchg *x)
{
    int sq = x->sq;
    SvOp *so = &x->so;
    *so = *o;
    so->nctrl = x->ncl;
    for (int i = 0; i < x->ncl; i++) so->ctrl[i] = sq - 1 - x->cl[i];
    for (int i = 0, gi = 0; i < o->nwires; i++) {
        int p = d->perm[o->wires[i]];
        if (!x->tslot[i]) { /* global target gi: bit sq-1-gi (first = top) */
            for (gi = 0; gi < x->g && x->gp[gi] != p; gi++) {}
            so->wires[i] = gi;
        } else {
            int q = dsv_pbit(d, p);
            if (q < x->b)
                so->wires[i] = sq - 1 - q;
            else {
                int j = 0;
                while (x->hq[j] != q) j++;
                so->wires[i] = sq - 1 - (x->b + j);
            }
        }
    }
    SvState *s = &x->s;
    memset(s, 0, sizeof *s);
    s->nq = sq;
    s->dim = (size_t)1 << sq;
    s->amp = d->xbuf;
    s->simd = d->loc.simd;
    sv_set_threads(s, d->cfg.team, d->cfg.nthreads);
}

/* One stretch (the local bits outside the block fixed at base): this
   rank's sub-blocks into its slot, the slots swapped with the group, the
   gate on the buffer and this rank's slot back. */
static int xchg_stretch(Dsv *d, Xchg *x, uint64_t base, char *err, size_t errlen)
{
    uint64_t B = (uint64_t)1 << x->b, slot = (uint64_t)1 << (x->h + x->b);
    cplx *a = d->loc.amp;
    cplx *mine = d->xbuf + (uint64_t)x->my * slot;
    MPI_Request rq[2 << 6];
    int nh = x->nh;
    for (uint64_t hv = 0; hv < ((uint64_t)1 << nh); hv++) {
        uint64_t off = base;
        for (int j = 0; j < nh; j++)
            if ((hv >> j) & 1) off |= (uint64_t)1 << x->hq[j];
        memcpy(mine + hv * B, a + off, B * sizeof(cplx));
    }
    int nr = 0;
    for (int m = 0; m < x->G; m++) {
        if (m == x->my) continue;
        if (dsv_irecv(d, d->xbuf + (uint64_t)m * slot, slot * sizeof(cplx), x->peer[m], &rq[nr++],
                      err, errlen))
            return -1;
        if (dsv_isend(d, mine, slot * sizeof(cplx), x->peer[m], &rq[nr++], err, errlen)) return -1;
    }
    if (dsv_wait(d, rq, nr, err, errlen)) return -1;
    if (sv_apply(&x->s, &x->so, err, errlen) != 0)
        return dsv_fail(d, err, errlen, "%s", err ? err : "gate");
    for (uint64_t hv = 0; hv < ((uint64_t)1 << nh); hv++) {
        uint64_t off = base;
        for (int j = 0; j < nh; j++)
            if ((hv >> j) & 1) off |= (uint64_t)1 << x->hq[j];
        memcpy(a + off, mine + hv * B, B * sizeof(cplx));
    }
    return 0;
}

/* Why: a gate on g global targets needs the amplitudes of the 2^g ranks
   that differ in those bits. For each stretch of the chunk (the local
   bits outside the gathered block fixed), every rank of the group copies
   its sub-blocks into its slot of the exchange buffer, swaps slots with
   the others, runs the gate on the buffer as a small state and copies
   its own slot back. The buffer's index is [global targets][local
   targets above the block][the block's low bits]; local targets and
   controls below the block keep their bit positions, so the kernels do
   the same arithmetic as on one big state. */
static int apply_exchange(Dsv *d, const Canon *c, char *err, size_t errlen)
{
    SvOp lo;
    if (!localize_controls(d, &c->op, &lo)) return 0;
    const SvOp *o = &c->op;
    Xchg x;
    xchg_targets(d, o, &x);
    int rc = xchg_block(d, &lo, &x, err, errlen);
    if (rc) return rc;
    xchg_op(d, o, &x);
    /* my slot: my bits of the global targets, first target = top */
    int g = x.g;
    x.my = 0;
    for (int i = 0; i < g; i++) x.my = (x.my << 1) | dsv_gbit(d, x.gp[i]);
    x.G = 1 << g;
    if (g > 6) return dsv_fail(d, err, errlen, "distributed state: more than 6 global targets");
    for (int m = 0; m < x.G; m++) {
        int r = d->rank;
        for (int i = 0; i < g; i++)
            if (((m ^ x.my) >> (g - 1 - i)) & 1) r ^= 1 << (d->k - 1 - x.gp[i]);
        x.peer[m] = r;
    }
    /* stretches: the local bits at or above b that are not targets */
    int oq[64], no = 0;
    for (int q = x.b; q < d->nl; q++) {
        int t = 0;
        for (int j = 0; j < x.nh; j++) t |= x.hq[j] == q;
        if (!t) oq[no++] = q;
    }
    d->st.exchanges++;
    for (uint64_t u = 0; u < ((uint64_t)1 << no); u++) {
        uint64_t base = 0;
        for (int j = 0; j < no; j++)
            if ((u >> j) & 1) base |= (uint64_t)1 << oq[j];
        if ((base & x.cmask_hi) != x.cmask_hi) continue;
        rc = xchg_stretch(d, &x, base, err, errlen);
        if (rc) return rc;
    }
    return 0;
}

/* Why: the relabelling decision only looks at the queue and the layout,
   so every rank takes the same one. Victims: free high local wires, the
   least needed by the rest of the queue first. */
static int maybe_relabel(Dsv *d, int i, const Canon *c, char *err, size_t errlen)
{
    if (!d->cfg.relabel) return 0;
    const SvOp *o = &c->op;
    int gw[SV_MAX_WIRES], g = 0;
    for (int t = 0; t < o->nwires; t++)
        if (d->perm[o->wires[t]] < d->k) gw[g++] = o->wires[t];
    if (g == 0) return 0;
    if (g == 1 && uses_ahead(d, i, gw[0]) < 2) return 0;
    int free_p[SV_MAX_WIRES], nf = 0;
    for (int p = d->k; p < d->n; p++) {
        if (!dsv_is_relabelable(d, p)) continue;
        int w = d->inv[p], used = 0;
        for (int t = 0; t < o->nwires; t++) used |= o->wires[t] == w;
        for (int t = 0; t < o->nctrl; t++) used |= o->ctrl[t] == w;
        if (!used) free_p[nf++] = p;
    }
    if (nf < g) return 0;
    for (int j = 0; j < g; j++) {
        int best = -1, bu = 0;
        for (int f = 0; f < nf; f++) {
            if (free_p[f] < 0) continue;
            int u = uses_ahead(d, i + 1, d->inv[free_p[f]]);
            if (best < 0 || u < bu) {
                best = f;
                bu = u;
            }
        }
        int pl = free_p[best];
        free_p[best] = -1;
        if (dsv_swap_global_local(d, d->perm[gw[j]], pl, err, errlen)) return -1;
    }
    return 0;
}

/* Why: one queued op, by its shape and the current layout. */
int dsv_exec(Dsv *d, int i, char *err, size_t errlen)
{
    Canon c;
    canon(&d->queue[i].op, &c);
    d->st.ops++;
    if (c.kind == K_NONE) return 0;
    if (c.op.gate == SV_BASISSTATE) { /* X flips on the wires whose bit is 1 */
        for (int t = 0; t < c.op.nwires; t++) {
            if (!((c.op.bits >> t) & 1)) continue;
            SvOp x = c.op;
            x.gate = SV_PAULIX;
            x.nwires = 1;
            x.wires[0] = c.op.wires[t];
            x.bits = 0;
            x.adjoint = 0;
            Canon cx;
            canon(&x, &cx);
            int glob = d->perm[x.wires[0]] < d->k;
            if (glob && maybe_relabel(d, i, &cx, err, errlen)) return -1;
            glob = d->perm[x.wires[0]] < d->k;
            if ((glob ? apply_exchange(d, &cx, err, errlen) : apply_local(d, &cx, err, errlen)) !=
                0)
                return -1;
        }
        return 0;
    }
    int glob = 0;
    for (int t = 0; t < c.op.nwires; t++) glob |= d->perm[c.op.wires[t]] < d->k;
    if (!glob) return apply_local(d, &c, err, errlen);
    if (!moves_data(&c)) return apply_diag_global(d, &c, err, errlen);
    if (maybe_relabel(d, i, &c, err, errlen)) return -1;
    glob = 0;
    for (int t = 0; t < c.op.nwires; t++) glob |= d->perm[c.op.wires[t]] < d->k;
    return glob ? apply_exchange(d, &c, err, errlen) : apply_local(d, &c, err, errlen);
}
