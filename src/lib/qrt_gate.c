/* qrt_gate.c — gates: the gate makers (parameters, broadcasting, wires,
 * QubitUnitary, BasisState), adjoint() and ctrl() of operators and of
 * functions, and the rule of application: an operator as a statement
 * applies to the running qfn's device (noise, recording, gradients,
 * captured circuits, circuit ops from OpenQASM). Knows values, arrays, the
 * tracked kinds and qrec.h; nothing of the pool or of measuring. */
#include "qrt_impl.h"
#include "arrayval.h"
#include "array.h"
#include "track.h"
#include "qh_assert.h"
#include "serial.h"

#include <complex.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- gates */

/* Gate makers: PARAMS..., WIRES... | wires=[...] */

/* Parameter i of a broadcast gate for member m: its source's entry m, or
 * the shared value. false when that entry is not a finite real number. */
static bool bcast_param(const ObjOp *p, int i, int m, double *d)
{
    Value v = p->bsrc[i];
    if (v.t == T_NIL) {
        *d = p->op.params[i];
        return isfinite(*d);
    }
    if (v.t == T_ARRAY) {
        ArScalar sc = ar_item(AS_ARR(v), (size_t)m);
        *d = sc.re;
        return isfinite(sc.re);
    }
    qh_assert(v.t == T_LIST);
    Value e = (size_t)m < AS_LIST(v)->len ? AS_LIST(v)->v[m] : v_nil();
    if (e.t == T_BOOL) {
        *d = e.b;
        return true;
    }
    *d = e.t == T_NUM ? e.n : NAN;
    return isfinite(*d);
}

/* A gate's arguments, read and checked before anything is allocated:
 * the operator is made only once they all hold (bi_gate). */
typedef struct GateArgs {
    const SvGateInfo *gi;
    SvOp op;
    AdNode pnode[3];
    bool tracked;
    Value bsrc[3]; /* broadcast sources, borrowed from the arguments */
    int nb;
    cplx *matrix; /* QubitUnitary: owned until the operator takes it */
} GateArgs;

/* Parameter broadcasting: the batch size of the arrays (or lists of
   numbers) given as parameters (g->nb; 0: none). false after the error. */
static bool gate_batch(VM *vm, Args *a, GateArgs *g)
{
    const SvGateInfo *gi = g->gi;
    for (int i = 0; i < gi->nparams; i++) {
        Value v = a->v[i];
        if (track_is_arr(v)) {
            vm_error(vm, a->site,
                     "%s: a differentiated array as a parameter (broadcasting) cannot be "
                     "differentiated: call the function once per value",
                     gi->name);
            return false;
        }
        int nb;
        if (v.t == T_LIST) { /* a list of numbers broadcasts like an array of them */
            ObjList *l =
                AS_LIST(v); /* (its other entries are checked by the member that reads them) */
            if (l->len == 0 || (l->v[0].t != T_NUM && l->v[0].t != T_BOOL))
                continue; /* refused below: not a number */
            if (l->len > 1000000) {
                vm_error(vm, a->site, "%s: parameter %d: more than 1000000 broadcast values",
                         gi->name, i + 1);
                return false;
            }
            nb = (int)l->len;
        } else if (v.t == T_ARRAY) {
            Array *ar = AS_ARR(v);
            if (ar_ndim(ar) != 1 || ar_is_complex(ar) || ar_size(ar) == 0 ||
                ar_size(ar) > 1000000) {
                char sh[64];
                ar_shape_str(ar, sh, sizeof sh);
                vm_error(vm, a->site,
                         "%s: parameter %d: an array of parameters (broadcasting) must be 1-d, "
                         "real and not empty, not of shape %s",
                         gi->name, i + 1, sh);
                return false;
            }
            nb = (int)ar_size(ar);
        } else {
            continue;
        }
        if (g->nb && nb != g->nb) {
            vm_error(vm, a->site, "%s: broadcast parameters of different sizes (%d and %d)",
                     gi->name, g->nb, nb);
            return false;
        }
        g->nb = nb;
    }
    return true;
}

/* The parameters of a broadcast gate: the sources are held, not copied (a
   member reads its own entry: op_stmt); member 0's values in g->op. */
static bool gate_batch_params(VM *vm, Args *a, GateArgs *g)
{
    const SvGateInfo *gi = g->gi;
    ObjOp probe; /* bcast_param reads the sources and the shared values from an operator */
    memset(&probe, 0, sizeof probe);
    for (int i = 0; i < gi->nparams; i++) {
        Value v = a->v[i];
        if (track_is(v)) {
            vm_error(vm, a->site,
                     "%s: a differentiated parameter beside a broadcast one cannot be "
                     "differentiated",
                     gi->name);
            return false;
        }
        if (v.t == T_ARRAY || v.t == T_LIST)
            g->bsrc[i] = v;
        else if (v.t != T_NUM && v.t != T_BOOL) {
            vm_error(vm, a->site, "%s: parameter %d must be a real number, not %s", gi->name, i + 1,
                     type_name(v));
            return false;
        }
        probe.bsrc[i] = g->bsrc[i].t == T_NIL ? v_nil() : g->bsrc[i];
        probe.op.params[i] = v.t == T_NUM ? v.n : v.t == T_BOOL ? v.b : 0;
        if (!bcast_param(&probe, i, 0, &g->op.params[i])) {
            vm_error(vm, a->site, "%s: parameter %d is not a finite real number", gi->name, i + 1);
            return false;
        }
    }
    return true;
}

/* The parameters of a gate without broadcasting (tracked ones keep their
   tape nodes). */
static bool gate_params(VM *vm, Args *a, GateArgs *g)
{
    const SvGateInfo *gi = g->gi;
    for (int i = 0; i < gi->nparams; i++) {
        Value v = a->v[i];
        double d;
        AdNode node;
        bool terr;
        if (!track_number(vm, v, &d, &node, a->site, &terr)) {
            if (!terr)
                vm_error(vm, a->site, "%s: parameter %d must be a real number, not %s", gi->name,
                         i + 1, type_name(v));
            return false;
        }
        if (!isfinite(d)) {
            vm_error(vm, a->site, "%s: parameter %d is not finite (%g)", gi->name, i + 1, d);
            return false;
        }
        g->op.params[i] = d;
        g->pnode[i] = node;
        if (node != AD_NONE) g->tracked = true;
    }
    return true;
}

/* The wires: trailing arguments from pos, one list or array, or wires=;
   their number, distinct, as the gate takes them. */
static bool gate_wires(VM *vm, Args *a, int pos, GateArgs *g)
{
    const SvGateInfo *gi = g->gi;
    SvOp *op = &g->op;
    int nw = arg_wires(vm, a, pos, gi->name, op->wires);
    if (nw < 0) return false;
    op->nwires = nw;
    if (gi->nwires >= 0 && nw != gi->nwires) {
        vm_error(vm, a->site, "%s acts on %d wire%s, but %d %s given", gi->name, gi->nwires,
                 gi->nwires == 1 ? "" : "s", nw, nw == 1 ? "was" : "were");
        return false;
    }
    if (nw == 0) {
        vm_error(vm, a->site, "%s needs at least one wire", gi->name);
        return false;
    }
    return wires_distinct(vm, op->wires, nw, gi->name, a->site);
}

/* QubitUnitary's matrix: 2^k x 2^k for its k wires, unitary within 1e-8
   (U U^dagger = I); g->matrix owns it on success. */
static bool gate_matrix(VM *vm, Args *a, Value m, GateArgs *g)
{
    int nw = g->op.nwires;
    if (m.t == T_LIST) {
        m = vm_call(vm, builtin_named("array"), 1, &m, a->site);
        if (IS_EXC(m)) return false;
    } else
        incref(m);
    if (track_is(m)) {
        decref(m);
        vm_error(vm, a->site,
                 "QubitUnitary: a matrix made from differentiated values cannot be "
                 "differentiated (use rotation gates)");
        return false;
    }
    if (m.t != T_ARRAY) {
        decref(m);
        vm_error(vm, a->site, "QubitUnitary: the matrix must be an array");
        return false;
    }
    Array *ar = AS_ARR(m);
    size_t d = (size_t)1 << nw;
    if (nw > SV_MAX_DENSE || ar_ndim(ar) != 2 || ar_shape(ar)[0] != d || ar_shape(ar)[1] != d) {
        char sh[64];
        ar_shape_str(ar, sh, sizeof sh);
        decref(m);
        vm_error(vm, a->site,
                 "QubitUnitary: a matrix of shape %s does not fit %d wire%s (needs (%zu, %zu))", sh,
                 nw, nw == 1 ? "" : "s", d, d);
        return false;
    }
    cplx *u = xmalloc(d * d * sizeof(cplx));
    for (size_t i = 0; i < d * d; i++) {
        ArScalar s = ar_item(ar, i);
        double re_im[2] = { s.re, s.is_complex ? s.im : 0 }; /* signs of zeros kept (drawn) */
        memcpy(&u[i], re_im, sizeof u[i]);
    }
    decref(m);
    for (size_t i = 0; i < d; i++) /* unitarity: U U^dagger = I within 1e-8 */
        for (size_t j = 0; j < d; j++) {
            cplx acc = 0;
            for (size_t k = 0; k < d; k++) acc += u[i * d + k] * conj(u[j * d + k]);
            if (cabs(acc - (i == j ? 1.0 : 0.0)) > 1e-8) {
                free(u);
                vm_error(vm, a->site, "QubitUnitary: the matrix is not unitary");
                return false;
            }
        }
    g->matrix = u;
    return true;
}

/* BasisState's bits: a list or array of 0/1, one per wire. */
static bool gate_bits(VM *vm, Args *a, Value bits, SvOp *op)
{
    size_t nb;
    uint64_t b = 0;
    if (bits.t == T_LIST)
        nb = AS_LIST(bits)->len;
    else if (bits.t == T_ARRAY)
        nb = ar_size(AS_ARR(bits));
    else {
        vm_error(vm, a->site, "BasisState: the state must be a list of 0/1");
        return false;
    }
    if ((int)nb != op->nwires) {
        vm_error(vm, a->site, "BasisState: %zu bits for %d wires", nb, op->nwires);
        return false;
    }
    for (size_t i = 0; i < nb; i++) {
        double x = bits.t == T_LIST ? (AS_LIST(bits)->v[i].t == T_NUM ? AS_LIST(bits)->v[i].n : -1)
                                    : ar_item(AS_ARR(bits), i).re;
        if (x != 0 && x != 1) {
            vm_error(vm, a->site, "BasisState: bits must be 0 or 1");
            return false;
        }
        if (x == 1) b |= (uint64_t)1 << i;
    }
    op->bits = b;
    return true;
}

/* Why: a gate is made for every gate statement, and an SvOp is mostly its
   two wire arrays of SV_MAX_WIRES, of which only the first nwires and
   nctrl entries mean anything: the arguments are read into a GateArgs
   whose arrays are left unset, and only the entries in use are copied
   into the operator (zeroed when allocated, so the rest reads 0 as
   before: sv_op_copy). Measured: a memset and a copy of the whole SvOp
   were about 160 of the 670 instructions a gate took here. */
static void gate_args_init(GateArgs *g, const SvGateInfo *gi)
{
    SvOp *op = &g->op;
    op->gate = gi->gate;
    op->nwires = 0;
    op->nparams = gi->nparams;
    for (int i = 0; i < 3; i++) op->params[i] = 0;
    op->matrix = NULL;
    op->bits = 0;
    op->adjoint = 0;
    op->nctrl = 0;
    g->gi = gi;
    for (int i = 0; i < 3; i++) {
        g->pnode[i] = AD_NONE;
        g->bsrc[i] = v_nil();
    }
    g->tracked = false;
    g->nb = 0;
    g->matrix = NULL;
}

Value bi_gate(VM *vm, Args *a)
{
    GateArgs g;
    const SvGateInfo *gi = gate_of(a->def);
    gate_args_init(&g, gi);
    int special = gi->gate == SV_QUBITUNITARY || gi->gate == SV_BASISSTATE;
    if (a->n < gi->nparams + special)
        return vm_error(vm, a->site, "%s needs %d parameter%s and its wires", gi->name,
                        gi->nparams + special, gi->nparams + special == 1 ? "" : "s");
    if (!gate_batch(vm, a, &g)) return v_exc();
    if (!(g.nb ? gate_batch_params(vm, a, &g) : gate_params(vm, a, &g))) return v_exc();
    int pos = gi->nparams;
    Value special_arg = special ? a->v[pos++] : v_nil();
    if (!gate_wires(vm, a, pos, &g)) return v_exc();
    if (gi->gate == SV_QUBITUNITARY && !gate_matrix(vm, a, special_arg, &g)) return v_exc();
    if (gi->gate == SV_BASISSTATE && !gate_bits(vm, a, special_arg, &g.op)) return v_exc();
    ObjOp *p = op_new(OPK_GATE); /* every argument holds: the operator */
    sv_op_copy(&p->op, &g.op);
    p->matrix = g.matrix;
    p->op.matrix = g.matrix;
    memcpy(p->pnode, g.pnode, sizeof g.pnode);
    p->tracked = g.tracked;
    if (g.tracked) p->ptape = vm->ad->id;
    p->nb = g.nb;
    for (int i = 0; i < 3; i++) {
        p->bsrc[i] = g.bsrc[i];
        incref(p->bsrc[i]);
    }
    return v_obj(&p->h);
}

static Value make_mod(VM *vm, Value fn, bool adjoint, const int *ctrl, int nctrl, const Node *site);

Value bi_adjoint(VM *vm, Args *a)
{
    if (a->v[0].t != T_OP && is_callable(a->v[0]))
        return make_mod(vm, a->v[0], true, NULL, 0, a->site);
    if (a->v[0].t != T_OP)
        return vm_error(vm, a->site,
                        "adjoint() needs an operator or a function that applies gates, not %s",
                        type_name(a->v[0]));
    if (AS_OP(a->v[0])->kind == OPK_CHAN)
        return vm_error(vm, a->site, "adjoint() of the channel %s: a noise channel has no inverse",
                        dm_channel_info((DmChannel)AS_OP(a->v[0])->chan)->name);
    ObjOp *p = op_clone(AS_OP(a->v[0]));
    if (p->kind == OPK_GATE) p->op.adjoint = !p->op.adjoint;
    return v_obj(&p->h);
}

Value bi_ctrl(VM *vm, Args *a)
{
    Value *ck = arg_kw(a, "control");
    Value c = a->n > 1 ? a->v[1] : (ck ? *ck : v_nil());
    if (a->v[0].t != T_OP && is_callable(a->v[0])) {
        if (c.t == T_NIL) return vm_error(vm, a->site, "ctrl() needs control= wires");
        int ws[SV_MAX_WIRES];
        int n = collect_wires(vm, c, ws, SV_MAX_WIRES, "ctrl", a->site);
        if (n < 0) return v_exc();
        return make_mod(vm, a->v[0], false, ws, n, a->site);
    }
    if (a->v[0].t != T_OP || AS_OP(a->v[0])->kind != OPK_GATE)
        return vm_error(vm, a->site, "ctrl() needs a gate or a function that applies gates, not %s",
                        type_name(a->v[0]));
    if (c.t == T_NIL) return vm_error(vm, a->site, "ctrl() needs control= wires");
    ObjOp *p = op_clone(AS_OP(a->v[0]));
    Value pv = v_obj(&p->h);
    int ws[SV_MAX_WIRES];
    int n = collect_wires(vm, c, ws, SV_MAX_WIRES, "ctrl", a->site);
    if (n < 0) {
        decref(pv);
        return v_exc();
    }
    if (p->op.nctrl + n + p->op.nwires > SV_MAX_WIRES) {
        decref(pv);
        return vm_error(vm, a->site, "ctrl(): too many wires");
    }
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < p->op.nwires; k++)
            if (p->op.wires[k] == ws[i]) {
                decref(pv);
                return vm_error(vm, a->site, "ctrl(): control wire %d is also a target wire",
                                ws[i]);
            }
        for (int k = 0; k < p->op.nctrl; k++)
            if (p->op.ctrl[k] == ws[i]) {
                decref(pv);
                return vm_error(vm, a->site, "ctrl(): control wire %d given twice", ws[i]);
            }
        p->op.ctrl[p->op.nctrl++] = ws[i];
    }
    return pv;
}

/* ---------------------------------------------------------------- application */


/* Why: draw/specs/matrix/to_qasm see what a call applies. */
void rec_op(QCtx *q, QasmKind kind, const SvOp *op, int chan, const double *cparams)
{
    int w[2 * SV_MAX_WIRES];
    int n = 0;
    for (int i = 0; i < op->nctrl; i++) w[n++] = op->ctrl[i];
    for (int i = 0; i < op->nwires; i++) w[n++] = op->wires[i];
    QasmOp *o = qasm_add(&q->rec->c, kind, w, op->nctrl, op->nwires);
    if (!o) return;
    o->gate = op->gate;
    o->adjoint = op->adjoint;
    o->nparams = op->nparams;
    for (int i = 0; i < op->nparams && i < 4; i++)
        o->params[i] = cparams ? cparams[i] : op->params[i];
    o->bits = op->bits;
    o->chan = chan;
    if (kind == QASM_GATE && op->gate == SV_QUBITUNITARY && op->matrix) { /* drawn as U(M0) */
        QRecord *r = q->rec;
        if (r->nmats == r->capmats) {
            r->capmats = r->capmats ? 2 * r->capmats : 4;
            r->mats = xrealloc(r->mats, r->capmats * sizeof *r->mats);
        }
        size_t d = (size_t)1 << op->nwires;
        QMatRec *m = &r->mats[r->nmats++];
        m->op = r->c.nops - 1;
        m->meas = -1;
        m->dim = (int)d;
        m->m = xmalloc(2 * d * d * sizeof(double));
        for (size_t i = 0; i < d * d; i++) {
            m->m[2 * i] = creal(op->matrix[i]);
            m->m[2 * i + 1] = cimag(op->matrix[i]);
        }
    }
}

/* Why: a noise model (device("mixed", noise=fn)): after each gate, fn(op)
 * returns nil, a channel (or gate), or a list of them, applied at once
 * and not themselves followed by noise. */
static Value apply_noise(VM *vm, QCtx *q, Value opv, const Node *site)
{
    q->in_noise = true;
    Value r = vm_call(vm, q->dev->noise, 1, &opv, (Node *)site);
    Value out = v_nil();
    if (IS_EXC(r))
        out = r;
    else if (r.t == T_OP) {
        out = op_stmt(vm, r, site);
        decref(r);
    } else if (r.t == T_LIST) {
        ObjList *l = AS_LIST(r);
        for (size_t i = 0; i < l->len && !IS_EXC(out); i++) {
            if (l->v[i].t == T_NIL) continue;
            if (l->v[i].t != T_OP) {
                out = vm_error(vm, site,
                               "the noise function %s() returned a list holding %s; it must hold "
                               "channels or gates",
                               AS_FUNC(q->dev->noise)->p->name, type_name(l->v[i]));
                break;
            }
            out = op_stmt(vm, l->v[i], site);
        }
        decref(r);
    } else if (r.t != T_NIL) {
        out = vm_error(
            vm, site,
            "the noise function %s() must return a channel, a list of channels or nil, not %s",
            AS_FUNC(q->dev->noise)->p->name, type_name(r));
        decref(r);
    }
    q->in_noise = false;
    return out;
}

/* the statement slot: an operator as a statement applies to the device */
Value op_stmt(VM *vm, Value opv, const Node *site)
{
    ObjOp *p = AS_OP(opv);
    QCtx *q = vm->q;
    if (p->kind == OPK_CHAN) return chan_stmt(vm, p, site);
    if (p->kind != OPK_GATE) {
        if (q)
            return vm_error(vm, site,
                            "an observable cannot be applied as a gate (measure it with expval, "
                            "var or sample)");
        return vm_error(vm, site, "an observable as a statement does nothing outside expval()");
    }
    const char *name = sv_gate_info(p->op.gate)->name;
    if (!q)
        return vm_error(
            vm, site,
            "%s applied outside a quantum function (gates apply to the device of a running qfn)",
            name);
    if (q->capture) { /* inside adjoint(f)/ctrl(f)/matrix(f): collected, applied later */
        if (p->nb)
            return vm_error(vm, site,
                            "%s: broadcast parameters inside adjoint(), ctrl() or matrix()", name);
        if (p->tracked)
            return vm_error(
                vm, site,
                "%s: a differentiated gate parameter inside adjoint(), ctrl() or matrix() "
                "(the collected circuit keeps numbers only): apply the gate directly, or its "
                "adjoint form",
                name);
        int w[2 * SV_MAX_WIRES], n = 0;
        for (int i = 0; i < p->op.nctrl; i++) w[n++] = p->op.ctrl[i];
        for (int i = 0; i < p->op.nwires; i++) w[n++] = p->op.wires[i];
        QasmOp *o = qasm_add(q->capture, QASM_GATE, w, p->op.nctrl, p->op.nwires);
        if (!o) return vm_error(vm, site, "out of memory");
        o->gate = p->op.gate;
        o->adjoint = p->op.adjoint;
        o->nparams = p->op.nparams;
        memcpy(o->params, p->op.params, sizeof p->op.params);
        o->bits = p->op.bits;
        if (p->op.gate == SV_QUBITUNITARY)
            return vm_error(vm, site,
                            "QubitUnitary inside adjoint(f) or ctrl(f): apply "
                            "adjoint(QubitUnitary(...)) directly");
        return v_nil();
    }
    if (vm->cancel && atomic_load_explicit(vm->cancel, memory_order_relaxed) &&
        vm_check_interrupt(vm))
        return v_exc();
    if (atomic_load(&vm->in->sigint) && vm_check_interrupt(vm)) return v_exc();
    char err[256];
    SvOp tmp;
    const SvOp *use = &p->op;
    SvState *vec = q->dm ? &q->dm->v : q->s;
    if (vec && vec->nq >= SV_PAR_QUBITS)
        give_threads(vm, vec); /* other tasks may have started or ended */
    if (p->tracked && (!vm->ad || vm->ad->id != p->ptape))
        return vm_error(vm, site,
                        "%s: a gate made from a differentiated value outside this quantum call; "
                        "make the gate inside the quantum function from its arguments",
                        name);
    if (p->nb) { /* broadcasting: this run is member q->bidx of the batch */
        if (q->grec)
            return vm_error(vm, site,
                            "%s: broadcast parameters cannot be differentiated: call the function "
                            "once per value",
                            name);
        if (!q->bsize)
            q->bsize = p->nb;
        else if (p->nb != q->bsize)
            return vm_error(vm, site, "%s: broadcast over %d values in a circuit broadcast over %d",
                            name, p->nb, q->bsize);
        tmp = p->op;
        for (int i = 0; i < tmp.nparams; i++)
            if (!bcast_param(p, i, q->bidx, &tmp.params[i]))
                return vm_error(
                    vm, site, "%s: parameter %d of broadcast member %d is not a finite real number",
                    name, i + 1, q->bidx);
        use = &tmp;
    }
    if (q->grec) {
        use = qrec_gate(q->grec, &p->op, p->pnode, &tmp);
        if (!use) return vm_error(vm, site, "%s", qrec_error(q->grec));
    } else if (p->tracked) {
        return vm_error(
            vm, site,
            "%s: a differentiated gate parameter on a device that is not being differentiated "
            "(a quantum function called from another one, or one that captured the value): pass it "
            "as an argument",
            name);
    }
    /* validated now (the error is this gate's), run at the next read (fuse.h) */
    if (q->sim.be->apply(&q->sim, use, err, sizeof err) != 0) return vm_error(vm, site, "%s", err);
    if (q->rec) rec_op(q, QASM_GATE, &p->op, 0, NULL);
    atomic_fetch_add_explicit(&vm->in->qrt->gates, 1, memory_order_relaxed);
    if (q->dm && q->dev->noise.t == T_FUNC && !q->in_noise) return apply_noise(vm, q, opv, site);
    return v_nil();
}


/* ---------------------------------------------------------------- adjoint and ctrl of callables */

/* Why: captured and imported circuits apply their gates as statements do
   (thread teams, gradient tape, recording, noise). */
static Value apply_svop(VM *vm, const SvOp *op, const Node *site)
{
    ObjOp *p = op_new(OPK_GATE);
    p->op = *op;
    if (op->matrix) {
        size_t d = (size_t)1 << op->nwires;
        p->matrix = xmalloc(d * d * sizeof(cplx));
        memcpy(p->matrix, op->matrix, d * d * sizeof(cplx));
        p->op.matrix = p->matrix;
    }
    Value v = v_obj(&p->h);
    Value r = op_stmt(vm, v, site);
    decref(v);
    return r;
}

Value qrt_apply_circuit_op(VM *vm, const QasmOp *o, const Node *site)
{
    QCtx *q = vm->q;
    if (!q)
        return vm_error(vm, site,
                        "a circuit applied outside a quantum function (circuits apply to the "
                        "device of a running qfn)");
    switch (o->kind) {
    case QASM_GATE: {
        SvOp op;
        qasm_svop(o, &op);
        return apply_svop(vm, &op, site);
    }
    case QASM_GPHASE:
        /* no effect on a state; inside adjoint(f)/ctrl(f)/matrix(f) it is collected: under
           ctrl it becomes a phase on the controls' |1..1> (mod_call) */
        if (q->capture) {
            QasmOp *g = qasm_add(q->capture, QASM_GPHASE, NULL, 0, 0);
            if (!g) return vm_error(vm, site, "out of memory");
            g->nparams = 1;
            g->params[0] = o->params[0];
        }
        return v_nil();
    case QASM_MEASURE:
    case QASM_RESET: {
        if (q->capture)
            return vm_error(vm, site,
                            "a circuit with measure or reset inside adjoint(), ctrl() or matrix()");
        char err[256];
        int w = o->wires[0], r;
        if (!qrt_flush(vm, q, site)) return v_exc();
        if (o->kind == QASM_RESET) { /* mixed: the reset channel; pure: measure and flip */
            r = q->sim.be->reset(&q->sim, w, &q->rng, err, sizeof err);
            if (r < 0 && q->dm) return vm_error(vm, site, "%s", err);
        } else {
            r = q->sim.be->measure(&q->sim, w, 0, &q->rng, err, sizeof err);
        }
        if (r < 0) return vm_error_from(vm, site, "measure", err);
        if (q->grec) qrec_nondiff(q->grec, "measure", true);
        if (q->rec) {
            QasmOp *ro = qasm_add(&q->rec->c, o->kind, &w, 0, 1);
            if (ro && o->kind == QASM_MEASURE) ro->clbit = q->rec->c.nclbits++;
        }
        return v_num(r);
    }
    case QASM_CHANNEL: break;
    }
    return vm_error(vm, site, "a circuit op that cannot be applied");
}

void qrt_record_condition(VM *vm, const QasmOp *o, const QasmCond *cond)
{
    QCtx *q = vm->q;
    if (!q || !q->rec || q->capture || o->kind != QASM_GATE) return;
    int ci = qasm_add_cond(&q->rec->c, cond);
    if (ci < 0) return;
    SvOp op;
    qasm_svop(o, &op);
    rec_op(q, QASM_GATE, &op, 0, NULL);
    q->rec->c.ops[q->rec->c.nops - 1].cond = ci;
}

Value qrt_apply_circuit_op_quiet(VM *vm, const QasmOp *op, const Node *site)
{
    QCtx *q = vm->q;
    QRecord *saved = q ? q->rec : NULL;
    if (q) q->rec = NULL;
    Value r = qrt_apply_circuit_op(vm, op, site);
    if (q) q->rec = saved;
    return r;
}

int qrt_recorded_bit(VM *vm)
{
    QCtx *q = vm->q;
    if (!q || !q->rec || q->rec->c.nclbits == 0) return -1;
    return q->rec->c.nclbits - 1;
}

typedef struct ObjMod {
    Obj h;
    Value fn;
    bool adjoint;
    int nctrl;
    int ctrl[SV_MAX_WIRES];
} ObjMod;
static ValType T_MODFN;
#define AS_MODFN(v) ((ObjMod *)(v).o)

static void mod_free(Obj *o)
{
    decref(((ObjMod *)o)->fn);
    free(o);
}
static void mod_clear(Obj *o)
{
    ObjMod *m = (ObjMod *)o;
    Value f = m->fn;
    m->fn = v_nil();
    decref(f);
}
static void mod_traverse(Obj *o, void (*visit)(Value, void *), void *ud)
{
    visit(((ObjMod *)o)->fn, ud);
}
static Value mod_copy(Value v, CopyCtx *cc)
{
    ObjMod *m = AS_MODFN(v), *n = (ObjMod *)obj_alloc(sizeof(ObjMod), T_MODFN);
    Obj h = n->h;
    *n = *m;
    n->h = h;
    n->fn = v_nil();
    copy_memo_put(cc, m, n);
    n->fn = value_copy_deep(m->fn, cc);
    return v_obj(&n->h);
}
static bool mod_ser(Value v, SerCtx *sc)
{
    ObjMod *m = AS_MODFN(v);
    ser_u8(sc, m->adjoint);
    ser_u32(sc, (uint32_t)m->nctrl);
    ser_bytes(sc, m->ctrl, (size_t)m->nctrl * sizeof(int));
    return ser_value(sc, m->fn);
}
static Value mod_deser(SerCtx *sc, ValType t, size_t id)
{
    uint8_t adj;
    uint32_t nctrl;
    if (!des_u8(sc, &adj) || !des_u32(sc, &nctrl)) return v_exc();
    if (nctrl > SV_MAX_WIRES) return des_fail(sc, "ctrl");
    ObjMod *m = (ObjMod *)obj_alloc(sizeof(ObjMod), t);
    m->fn = v_nil();
    m->adjoint = adj != 0;
    m->nctrl = (int)nctrl;
    Value mv = v_obj(&m->h);
    if (!des_bytes(sc, m->ctrl, (size_t)nctrl * sizeof(int))) {
        decref(mv);
        return v_exc();
    }
    for (uint32_t i = 0; i < nctrl; i++)
        if (m->ctrl[i] < 0 || m->ctrl[i] >= SV_MAX_WIRES) {
            decref(mv);
            return des_fail(sc, "ctrl");
        }
    des_note(sc, id, &m->h); /* its function may reach it through a module's globals */
    Value f = des_value(sc);
    if (IS_EXC(f)) {
        decref(mv);
        return f;
    }
    if (f.t == T_OP || !is_callable(f)) {
        decref(f);
        decref(mv);
        return des_fail(sc, "ctrl");
    }
    /* adjoint(f) is made from an f that exists first: a chain of modifiers
       never comes back to itself (calling it would recurse forever) */
    for (Value g = f; g.t == T_MODFN; g = AS_MODFN(g)->fn)
        if (g.o == &m->h) {
            decref(f);
            decref(mv);
            return des_fail(sc, "ctrl");
        }
    m->fn = f;
    return mv;
}
static void mod_repr(Buf *b, Value v, bool quoted)
{
    ObjMod *m = AS_MODFN(v);
    buf_puts(b, m->nctrl ? "<ctrl of " : "<adjoint of ");
    if (m->nctrl && m->adjoint) buf_puts(b, "adjoint of ");
    value_repr(b, m->fn, quoted);
    if (m->nctrl) {
        buf_puts(b, ", control=[");
        for (int i = 0; i < m->nctrl; i++) buf_printf(b, "%s%d", i ? ", " : "", m->ctrl[i]);
        buf_putc(b, ']');
    }
    buf_putc(b, '>');
}

/* Why: a global phase e^{i a} under ctrl is a phase on the controls' |1..1>:
   PhaseShift(a) on the last control, controlled by the others (as OpenQASM 3's
   ctrl @ gphase). Without controls it stays a global phase: kept only where
   gates are being collected (a matrix(), an enclosing ctrl). */
static Value ctrl_gphase(VM *vm, const ObjMod *m, double a, const Node *site)
{
    QCtx *q = vm->q;
    if (m->nctrl == 0) {
        if (q->capture) {
            QasmOp *g = qasm_add(q->capture, QASM_GPHASE, NULL, 0, 0);
            if (!g) return vm_error(vm, site, "out of memory");
            g->nparams = 1;
            g->params[0] = a;
        }
        return v_nil();
    }
    SvOp op;
    memset(&op, 0, sizeof op);
    op.gate = SV_PHASESHIFT;
    op.nwires = 1;
    op.wires[0] = m->ctrl[m->nctrl - 1];
    op.nctrl = m->nctrl - 1;
    for (int i = 0; i + 1 < m->nctrl; i++) op.ctrl[i] = m->ctrl[i];
    op.nparams = 1;
    op.params[0] = a;
    return apply_svop(vm, &op, site);
}

/* Why: adjoint(f)(args) and ctrl(f, control=w)(args): run f collecting its
   gates, then apply them inverted in reverse order, or with the controls. */
static Value mod_call(VM *vm, Value fv, Args *a)
{
    ObjMod *m = AS_MODFN(fv);
    QCtx *q = vm->q;
    if (!q)
        return vm_error(
            vm, a->site,
            "%s applied outside a quantum function (gates apply to the device of a running qfn)",
            m->nctrl ? "ctrl(f)(...)" : "adjoint(f)(...)");
    QasmCircuit cap;
    qasm_init(&cap, 0, 0);
    QasmCircuit *outer = q->capture;
    q->capture = &cap;
    Value r = tp_call(vm, m->fn, a);
    if (!IS_EXC(r) && r.t == T_OP) { /* adjoint(RX)(t, w): the operator it makes */
        Value x = op_stmt(vm, r, a->site);
        decref(r);
        r = x;
    }
    q->capture = outer;
    if (IS_EXC(r)) {
        qasm_free(&cap);
        return r;
    }
    decref(r);
    Value out = v_nil();
    for (size_t k = 0; k < cap.nops && !IS_EXC(out); k++) {
        const QasmOp *o = &cap.ops[m->adjoint ? cap.nops - 1 - k : k];
        if (o->kind == QASM_GPHASE) {
            out = ctrl_gphase(vm, m, m->adjoint ? -o->params[0] : o->params[0], a->site);
            continue;
        }
        SvOp op;
        qasm_svop(o, &op);
        if (m->adjoint) op.adjoint = !op.adjoint;
        for (int i = 0; i < m->nctrl; i++) {
            for (int j = 0; j < op.nwires; j++)
                if (op.wires[j] == m->ctrl[i]) {
                    out =
                        vm_error(vm, a->site, "ctrl(): control wire %d is also a target wire of %s",
                                 m->ctrl[i], sv_gate_info(op.gate)->name);
                    break;
                }
            for (int j = 0; j < op.nctrl && !IS_EXC(out); j++)
                if (op.ctrl[j] == m->ctrl[i]) {
                    out =
                        vm_error(vm, a->site, "ctrl(): control wire %d is already a control of %s",
                                 m->ctrl[i], sv_gate_info(op.gate)->name);
                    break;
                }
            if (IS_EXC(out)) break;
            if (op.nctrl >= SV_MAX_WIRES) {
                out = vm_error(vm, a->site, "ctrl(): too many wires");
                break;
            }
            op.ctrl[op.nctrl++] = m->ctrl[i];
        }
        if (IS_EXC(out)) break;
        out = apply_svop(vm, &op, a->site);
    }
    qasm_free(&cap);
    return out;
}

bool is_callable(Value v) { return type_of(v)->call != NULL; }

static Value make_mod(VM *vm, Value fn, bool adjoint, const int *ctrl, int nctrl, const Node *site)
{
    ObjMod *m = (ObjMod *)obj_alloc(sizeof(ObjMod), T_MODFN);
    incref(fn);
    m->fn = fn;
    m->adjoint = adjoint;
    m->nctrl = 0;
    for (int i = 0; i < nctrl; i++) {
        for (int j = 0; j < m->nctrl; j++)
            if (m->ctrl[j] == ctrl[i]) {
                Value mv = v_obj(&m->h);
                decref(mv);
                return vm_error(vm, site, "ctrl(): control wire %d given twice", ctrl[i]);
            }
        m->ctrl[m->nctrl++] = ctrl[i];
    }
    return v_obj(&m->h);
}


static const TypeOps mod_ops = {
    .name = "function",
    .free = mod_free,
    .clear = mod_clear,
    .traverse = mod_traverse,
    .copy = mod_copy,
    .ser = mod_ser,
    .deser = mod_deser,
    .repr = mod_repr,
    .call = mod_call,
};
void qrt_gate_open(void) { T_MODFN = type_register_new(&mod_ops); }
