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
    int g = 0, gp[SV_MAX_WIRES];   /* global targets: physical wires */
    int lq[SV_MAX_WIRES], nlt = 0; /* local targets: local bits */
    int tslot[SV_MAX_WIRES];       /* target i: 0 global, 1 local */
    for (int i = 0; i < o->nwires; i++) {
        int p = d->perm[o->wires[i]];
        if (p < d->k) {
            gp[g++] = p;
            tslot[i] = 0;
        } else {
            lq[nlt++] = dsv_pbit(d, p);
            tslot[i] = 1;
        }
    }
    /* the block: b low bits, h local targets above it, g + h + b <= lx */
    int b = d->nl < d->lx - g ? d->nl : d->lx - g, h = 0;
    for (;; b--) {
        h = 0;
        for (int i = 0; i < nlt; i++) h += lq[i] >= b;
        if (g + h + b <= d->lx || b == 0) break;
    }
    if (g + h + b > d->lx)
        return dsv_fail(d, err, errlen,
                        "distributed state: gate too large for the exchange buffer");
    int hq[SV_MAX_WIRES], nh = 0; /* local targets above the block, ascending */
    for (int q = b; q < d->nl; q++)
        for (int i = 0; i < nlt; i++)
            if (lq[i] == q) hq[nh++] = q;
    /* controls: below the block they stay in the op, above it they select stretches */
    uint64_t cmask_hi = 0;
    int cl[SV_MAX_WIRES], ncl = 0;
    for (int i = 0; i < lo.nctrl; i++) {
        int q = d->nl - 1 - lo.ctrl[i];
        if (q >= b)
            cmask_hi |= (uint64_t)1 << q;
        else
            cl[ncl++] = q;
    }
    int sq = g + h + b; /* qubits of the gathered state */
    uint64_t B = (uint64_t)1 << b, slot = (uint64_t)1 << (h + b);
    /* the op on the gathered state: wire = sq - 1 - bit */
    SvOp so = *o;
    so.nctrl = ncl;
    for (int i = 0; i < ncl; i++) so.ctrl[i] = sq - 1 - cl[i];
    for (int i = 0, gi = 0; i < o->nwires; i++) {
        int p = d->perm[o->wires[i]];
        if (!tslot[i]) { /* global target gi: bit sq-1-gi (first = top) */
            for (gi = 0; gi < g && gp[gi] != p; gi++) {}
            so.wires[i] = gi;
        } else {
            int q = dsv_pbit(d, p);
            if (q < b)
                so.wires[i] = sq - 1 - q;
            else {
                int j = 0;
                while (hq[j] != q) j++;
                so.wires[i] = sq - 1 - (b + j);
            }
        }
    }
    SvState s;
    memset(&s, 0, sizeof s);
    s.nq = sq;
    s.dim = (size_t)1 << sq;
    s.amp = d->xbuf;
    s.simd = d->loc.simd;
    sv_set_threads(&s, d->cfg.team, d->cfg.nthreads);
    /* my slot: my bits of the global targets, first target = top */
    int my = 0;
    for (int i = 0; i < g; i++) my = (my << 1) | dsv_gbit(d, gp[i]);
    int G = 1 << g;
    int peer[1 << 6];
    if (g > 6) return dsv_fail(d, err, errlen, "distributed state: more than 6 global targets");
    for (int m = 0; m < G; m++) {
        int r = d->rank;
        for (int i = 0; i < g; i++)
            if (((m ^ my) >> (g - 1 - i)) & 1) r ^= 1 << (d->k - 1 - gp[i]);
        peer[m] = r;
    }
    /* stretches: the local bits at or above b that are not targets */
    int oq[64], no = 0;
    for (int q = b; q < d->nl; q++) {
        int t = 0;
        for (int j = 0; j < nh; j++) t |= hq[j] == q;
        if (!t) oq[no++] = q;
    }
    d->st.exchanges++;
    cplx *a = d->loc.amp;
    cplx *mine = d->xbuf + (uint64_t)my * slot;
    MPI_Request rq[2 << 6];
    for (uint64_t u = 0; u < ((uint64_t)1 << no); u++) {
        uint64_t base = 0;
        for (int j = 0; j < no; j++)
            if ((u >> j) & 1) base |= (uint64_t)1 << oq[j];
        if ((base & cmask_hi) != cmask_hi) continue;
        for (uint64_t hv = 0; hv < ((uint64_t)1 << nh); hv++) {
            uint64_t off = base;
            for (int j = 0; j < nh; j++)
                if ((hv >> j) & 1) off |= (uint64_t)1 << hq[j];
            memcpy(mine + hv * B, a + off, B * sizeof(cplx));
        }
        int nr = 0;
        for (int m = 0; m < G; m++) {
            if (m == my) continue;
            if (dsv_irecv(d, d->xbuf + (uint64_t)m * slot, slot * sizeof(cplx), peer[m], &rq[nr++],
                          err, errlen))
                return -1;
            if (dsv_isend(d, mine, slot * sizeof(cplx), peer[m], &rq[nr++], err, errlen)) return -1;
        }
        if (dsv_wait(d, rq, nr, err, errlen)) return -1;
        if (sv_apply(&s, &so, err, errlen) != 0)
            return dsv_fail(d, err, errlen, "%s", err ? err : "gate");
        for (uint64_t hv = 0; hv < ((uint64_t)1 << nh); hv++) {
            uint64_t off = base;
            for (int j = 0; j < nh; j++)
                if ((hv >> j) & 1) off |= (uint64_t)1 << hq[j];
            memcpy(a + off, mine + hv * B, B * sizeof(cplx));
        }
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
