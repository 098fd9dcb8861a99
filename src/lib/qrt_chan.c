/* qrt_chan.c — noise channels: the channel makers (PennyLane's signatures,
 * PauliError, QubitChannel) and a channel as a statement on the mixed
 * device. Knows values, arrays and dm.h. */
#include "qrt_impl.h"
#include "arrayval.h"
#include "array.h"
#include "track.h"

#include <complex.h>
#include <string.h>

/* ---------------------------------------------------------------- channels */

/* A channel's wires: trailing arguments from pos, one list or array, or
   wires=; distinct. false after the error. */
static bool chan_wires(VM *vm, Args *a, int pos, const DmChannelInfo *ci, SvOp *op)
{
    int nw = arg_wires(vm, a, pos, ci->name, op->wires);
    if (nw < 0) return false;
    if (nw == 0) {
        vm_error(vm, a->site, "%s needs its wire%s", ci->name, ci->nwires == 1 ? "" : "s");
        return false;
    }
    op->nwires = nw;
    return wires_distinct(vm, op->wires, nw, ci->name, a->site);
}

/* QubitChannel's Kraus matrices: a list of 2^k x 2^k arrays (or nested
   lists) into p->kraus (owned), complete. */
static bool qubit_channel_kraus(VM *vm, Args *a, Value kl, ObjOp *p)
{
    int nw = p->op.nwires;
    size_t d = (size_t)1 << nw;
    char err[256];
    if (kl.t != T_LIST || AS_LIST(kl)->len == 0) {
        vm_error(vm, a->site,
                 "QubitChannel: the Kraus matrices must be a non-empty list of arrays");
        return false;
    }
    ObjList *ks = AS_LIST(kl);
    if (ks->len > 4096) {
        vm_error(vm, a->site, "QubitChannel: too many Kraus matrices (%zu)", ks->len);
        return false;
    }
    p->nkraus = (int)ks->len;
    p->kraus = xmalloc((size_t)p->nkraus * d * d * sizeof(cplx));
    for (size_t i = 0; i < ks->len; i++) {
        Value m = ks->v[i];
        if (track_is(m)) {
            vm_error(vm, a->site,
                     "QubitChannel: Kraus matrix %zu depends on a differentiated value; its "
                     "derivative is not followed (the built-in channels' parameters are)",
                     i);
            return false;
        }
        if (m.t == T_LIST) {
            m = vm_call(vm, builtin_named("array"), 1, &ks->v[i], a->site);
            if (IS_EXC(m)) return false;
        } else
            incref(m);
        if (m.t != T_ARRAY || ar_ndim(AS_ARR(m)) != 2 || ar_shape(AS_ARR(m))[0] != d ||
            ar_shape(AS_ARR(m))[1] != d) {
            decref(m);
            vm_error(vm, a->site,
                     "QubitChannel: Kraus matrix %zu must be a %zux%zu array for %d wire%s", i, d,
                     d, nw, nw == 1 ? "" : "s");
            return false;
        }
        Array *ar = AS_ARR(m);
        for (size_t e = 0; e < d * d; e++) {
            ArScalar sc = ar_item(ar, e);
            p->kraus[i * d * d + e] = sc.re + (sc.is_complex ? sc.im : 0) * I;
        }
        decref(m);
    }
    if (dm_kraus_check("QubitChannel", nw, p->nkraus, p->kraus, err, sizeof err) != 0) {
        vm_error(vm, a->site, "%s", err);
        return false;
    }
    return true;
}

/* The channel operator of checked fields t (its Kraus matrices move in). */
static Value chan_value(const ObjOp *t)
{
    ObjOp *p = op_new(OPK_CHAN);
    Obj h = p->h;
    *p = *t;
    p->h = h;
    return v_obj(&p->h);
}

/* Parameter i of a channel: a real number (or bool), or a differentiated
   number whose tape node goes with the channel. false after the error. */
static bool chan_param(VM *vm, Args *a, const DmChannelInfo *ci, int i, Value v, ObjOp *p)
{
    if (track_is(v)) {
        AdNode node;
        bool terr;
        if (!track_number(vm, v, &p->cparams[i], &node, a->site, &terr)) {
            if (!terr)
                vm_error(vm, a->site, "%s: parameter %d must be a real number, not %s", ci->name,
                         i + 1, type_name(v));
            return false;
        }
        p->pnode[i] = node;
        if (node != AD_NONE) {
            p->tracked = true;
            p->ptape = vm->ad->id;
        }
        return true;
    }
    if (v.t != T_NUM && v.t != T_BOOL) {
        vm_error(vm, a->site, "%s: parameter %d must be a real number, not %s", ci->name, i + 1,
                 type_name(v));
        return false;
    }
    p->cparams[i] = v.t == T_NUM ? v.n : v.b;
    return true;
}

/* Channel makers: PARAMS..., WIRE | wires=w  (PennyLane's signatures);
   PauliError(ops, p, wires); QubitChannel(kraus_list, wires). */
Value bi_channel(VM *vm, Args *a)
{
    const DmChannelInfo *ci = dm_channel_by_name(a->def->name);
    ObjOp t; /* filled and checked before the operator is made (chan_value) */
    memset(&t, 0, sizeof t);
    t.kind = OPK_CHAN;
    for (int i = 0; i < 4; i++) t.pnode[i] = AD_NONE;
    ObjOp *p = &t;
    p->chan = ci->ch;
    int pos = 0;
    Value opsv = v_nil(), kl = v_nil();
    if (ci->ch == DM_PAULIERROR || ci->ch == DM_QUBITCHANNEL) {
        if (a->n < 1) {
            free(t.kraus);
            return vm_error(vm, a->site, "%s needs %s and its wires", ci->name,
                            ci->ch == DM_QUBITCHANNEL
                                ? "a list of Kraus matrices"
                                : "the Pauli operators (a string such as \"XZ\"), p");
        }
        if (ci->ch == DM_PAULIERROR)
            opsv = a->v[pos++];
        else
            kl = a->v[pos++];
    }
    if (a->n - pos < ci->nparams) {
        free(t.kraus);
        return vm_error(vm, a->site, "%s needs %d parameter%s (%s) and its wire%s", ci->name,
                        ci->nparams, ci->nparams == 1 ? "" : "s", ci->params,
                        ci->nwires == 1 ? "" : "s");
    }
    p->op.nparams = ci->nparams;
    for (int i = 0; i < ci->nparams; i++, pos++)
        if (!chan_param(vm, a, ci, i, a->v[pos], p)) return v_exc();
    if (!chan_wires(vm, a, pos, ci, &p->op)) return v_exc();
    int nw = p->op.nwires;
    char err[256];
    if (ci->nwires == 1) {
        if (nw != 1) {
            free(t.kraus);
            return vm_error(vm, a->site, "%s acts on 1 wire, but %d were given", ci->name, nw);
        }
        cplx k[DM_MAX_KRAUS * 4];
        int nk;
        if (dm_channel_kraus((DmChannel)ci->ch, p->cparams, k, &nk, err, sizeof err) != 0) {
            free(t.kraus);
            return vm_error(vm, a->site, "%s", err);
        }
        return chan_value(&t);
    }
    if (nw > DM_MAX_KRAUS_WIRES) {
        free(t.kraus);
        return vm_error(vm, a->site, "%s: at most %d wires, got %d", ci->name, DM_MAX_KRAUS_WIRES,
                        nw);
    }
    size_t d = (size_t)1 << nw;
    if (ci->ch == DM_PAULIERROR) {
        if (opsv.t != T_STR) {
            free(t.kraus);
            return vm_error(vm, a->site,
                            "PauliError: the operators must be a string such as \"XZ\", not %s",
                            type_name(opsv));
        }
        const char *ops = AS_STR(opsv)->s;
        if ((int)strlen(ops) != nw) {
            free(t.kraus);
            return vm_error(vm, a->site, "PauliError: %zu operators for %d wires", strlen(ops), nw);
        }
        snprintf(p->paulis, sizeof p->paulis, "%s", ops);
        p->kraus = xmalloc(2 * d * d * sizeof(cplx));
        p->nkraus = 2;
        if (dm_pauli_error_kraus(ops, p->cparams[0], p->kraus, err, sizeof err) != 0) {
            free(t.kraus);
            return vm_error(vm, a->site, "%s", err);
        }
        return chan_value(&t);
    }
    if (!qubit_channel_kraus(vm, a, kl, p)) {
        free(t.kraus);
        return v_exc();
    }
    return chan_value(&t);
}

/* Why: a run of the channel-derivative rule applies the derivative of the
   channel's map by its parameter i in place of the channel (dm.h). */
static int chan_derivative(QCtx *q, const ObjOp *p, int i, char *err, size_t errlen)
{
    if (!q->sim.be->pairs) return snprintf(err, errlen, "channel: no derivative map here"), -1;
    if (p->chan == DM_PAULIERROR) {
        size_t d = (size_t)1 << p->op.nwires;
        cplx *ab = xmalloc(4 * d * d * sizeof(cplx));
        int rc = dm_pauli_error_dterms(p->paulis, p->cparams[0], ab, err, errlen);
        if (rc == 0) rc = q->sim.be->pairs(&q->sim, p->op.wires, p->op.nwires, 2, ab, err, errlen);
        free(ab);
        return rc;
    }
    cplx ab[2 * DM_MAX_DTERMS * 4];
    int np;
    if (dm_channel_dterms((DmChannel)p->chan, p->cparams, i, ab, &np, err, errlen) != 0) return -1;
    return q->sim.be->pairs(&q->sim, p->op.wires, 1, np, ab, err, errlen);
}

/* Why: a channel as a statement: only the mixed device has mixed states. */
Value chan_stmt(VM *vm, ObjOp *p, const Node *site)
{
    QCtx *q = vm->q;
    const char *name = dm_channel_info((DmChannel)p->chan)->name;
    if (!q)
        return vm_error(
            vm, site,
            "%s applied outside a quantum function (channels apply to the device of a running qfn)",
            name);
    if (q->capture)
        return vm_error(
            vm, site, "%s inside adjoint(f), ctrl(f) or matrix(f): a noise channel is not unitary",
            name);
    if (!q->sim.be || !q->sim.be->kraus)
        return vm_error(
            vm, site,
            "%s is a noise channel: it needs the mixed device, e.g. device(\"mixed\", wires=%d)",
            name, q->nq);
    if (p->tracked && (!vm->ad || vm->ad->id != p->ptape))
        return vm_error(vm, site,
                        "%s: a channel made from a differentiated value outside this quantum call; "
                        "make the channel inside the quantum function from its arguments",
                        name);
    int mode = 0; /* 1 + i: the derivative of the map by parameter i (diffq.c) */
    if (q->grec) {
        mode = qrec_channel(q->grec, name, p->op.nparams, p->pnode);
        if (mode < 0) return vm_error(vm, site, "%s", qrec_error(q->grec));
    } else if (p->tracked)
        return vm_error(vm, site,
                        "%s: a differentiated channel parameter on a device that is not being "
                        "differentiated (a quantum function called from another one, or one that "
                        "captured the value): pass it as an argument",
                        name);
    char err[256];
    int rc;
    if (mode > 0)
        rc = chan_derivative(q, p, mode - 1, err, sizeof err);
    else if (p->kraus)
        rc = q->sim.be->kraus(&q->sim, p->op.wires, p->op.nwires, p->nkraus, p->kraus, err,
                              sizeof err);
    else
        rc = q->sim.be->channel(&q->sim, (DmChannel)p->chan, p->cparams, p->op.wires[0], err,
                                sizeof err);
    if (rc) return vm_error(vm, site, "%s", strncmp(err, "channel:", 8) == 0 ? err + 9 : err);
    if (q->rec) rec_op(q, QASM_CHANNEL, &p->op, p->chan, p->cparams);
    return v_nil();
}
