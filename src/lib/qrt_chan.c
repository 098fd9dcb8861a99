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

/* Channel makers: PARAMS..., WIRE | wires=w  (PennyLane's signatures);
   PauliError(ops, p, wires); QubitChannel(kraus_list, wires). */
Value bi_channel(VM *vm, Args *a)
{
    const DmChannelInfo *ci = dm_channel_by_name(a->def->name);
    ObjOp *p = op_new(OPK_CHAN);
    Value pv = v_obj(&p->h);
    p->chan = ci->ch;
    int pos = 0;
    Value opsv = v_nil(), kl = v_nil();
    if (ci->ch == DM_PAULIERROR || ci->ch == DM_QUBITCHANNEL) {
        if (a->n < 1) {
            decref(pv);
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
        decref(pv);
        return vm_error(vm, a->site, "%s needs %d parameter%s (%s) and its wire%s", ci->name,
                        ci->nparams, ci->nparams == 1 ? "" : "s", ci->params,
                        ci->nwires == 1 ? "" : "s");
    }
    p->op.nparams = ci->nparams;
    for (int i = 0; i < ci->nparams; i++, pos++) {
        double d;
        if (track_is(a->v[pos])) {
            decref(pv);
            return vm_error(vm, a->site, "%s: a channel's parameters cannot be differentiated",
                            ci->name);
        }
        if (a->v[pos].t != T_NUM && a->v[pos].t != T_BOOL) {
            decref(pv);
            return vm_error(vm, a->site, "%s: parameter %d must be a real number, not %s", ci->name,
                            i + 1, type_name(a->v[pos]));
        }
        d = a->v[pos].t == T_NUM ? a->v[pos].n : a->v[pos].b;
        p->cparams[i] = d;
    }
    Value *wk = arg_kw(a, "wires");
    int nw;
    if (wk) {
        if (pos < a->n) {
            decref(pv);
            return vm_error(vm, a->site,
                            "%s: give wires either as arguments or as wires=, not both", ci->name);
        }
        nw = collect_wires(vm, *wk, p->op.wires, SV_MAX_WIRES, ci->name, a->site);
    } else if (pos == a->n - 1 && a->v[pos].t != T_NUM) {
        nw = collect_wires(vm, a->v[pos], p->op.wires, SV_MAX_WIRES, ci->name, a->site);
    } else {
        nw = 0;
        for (; pos < a->n; pos++) {
            if (nw >= SV_MAX_WIRES) {
                decref(pv);
                return vm_error(vm, a->site, "%s: too many wires", ci->name);
            }
            if (!wire_value(vm, a->v[pos], &p->op.wires[nw++], ci->name, a->site)) {
                decref(pv);
                return v_exc();
            }
        }
    }
    if (nw < 0) {
        decref(pv);
        return v_exc();
    }
    if (nw == 0) {
        decref(pv);
        return vm_error(vm, a->site, "%s needs its wire%s", ci->name, ci->nwires == 1 ? "" : "s");
    }
    p->op.nwires = nw;
    if (!wires_distinct(vm, p->op.wires, nw, ci->name, a->site)) {
        decref(pv);
        return v_exc();
    }
    char err[256];
    if (ci->nwires == 1) {
        if (nw != 1) {
            decref(pv);
            return vm_error(vm, a->site, "%s acts on 1 wire, but %d were given", ci->name, nw);
        }
        cplx k[DM_MAX_KRAUS * 4];
        int nk;
        if (dm_channel_kraus((DmChannel)ci->ch, p->cparams, k, &nk, err, sizeof err) != 0) {
            decref(pv);
            return vm_error(vm, a->site, "%s", err);
        }
        return pv;
    }
    if (nw > DM_MAX_KRAUS_WIRES) {
        decref(pv);
        return vm_error(vm, a->site, "%s: at most %d wires, got %d", ci->name, DM_MAX_KRAUS_WIRES,
                        nw);
    }
    size_t d = (size_t)1 << nw;
    if (ci->ch == DM_PAULIERROR) {
        if (opsv.t != T_STR) {
            decref(pv);
            return vm_error(vm, a->site,
                            "PauliError: the operators must be a string such as \"XZ\", not %s",
                            type_name(opsv));
        }
        const char *ops = AS_STR(opsv)->s;
        if ((int)strlen(ops) != nw) {
            decref(pv);
            return vm_error(vm, a->site, "PauliError: %zu operators for %d wires", strlen(ops), nw);
        }
        snprintf(p->paulis, sizeof p->paulis, "%s", ops);
        p->kraus = xmalloc(2 * d * d * sizeof(cplx));
        p->nkraus = 2;
        if (dm_pauli_error_kraus(ops, p->cparams[0], p->kraus, err, sizeof err) != 0) {
            decref(pv);
            return vm_error(vm, a->site, "%s", err);
        }
        return pv;
    }
    /* QubitChannel: a list of 2^k x 2^k arrays (or nested lists) */
    if (kl.t != T_LIST || AS_LIST(kl)->len == 0) {
        decref(pv);
        return vm_error(vm, a->site,
                        "QubitChannel: the Kraus matrices must be a non-empty list of arrays");
    }
    ObjList *ks = AS_LIST(kl);
    if (ks->len > 4096) {
        decref(pv);
        return vm_error(vm, a->site, "QubitChannel: too many Kraus matrices (%zu)", ks->len);
    }
    p->nkraus = (int)ks->len;
    p->kraus = xmalloc((size_t)p->nkraus * d * d * sizeof(cplx));
    for (size_t i = 0; i < ks->len; i++) {
        Value m = ks->v[i];
        if (m.t == T_LIST) {
            m = vm_call(vm, builtin_named("array"), 1, &ks->v[i], a->site);
            if (IS_EXC(m)) {
                decref(pv);
                return m;
            }
        } else
            incref(m);
        if (m.t != T_ARRAY || ar_ndim(AS_ARR(m)) != 2 || ar_shape(AS_ARR(m))[0] != d ||
            ar_shape(AS_ARR(m))[1] != d) {
            decref(m);
            decref(pv);
            return vm_error(vm, a->site,
                            "QubitChannel: Kraus matrix %zu must be a %zux%zu array for %d wire%s",
                            i, d, d, nw, nw == 1 ? "" : "s");
        }
        Array *ar = AS_ARR(m);
        for (size_t e = 0; e < d * d; e++) {
            ArScalar sc = ar_item(ar, e);
            p->kraus[i * d * d + e] = sc.re + (sc.is_complex ? sc.im : 0) * I;
        }
        decref(m);
    }
    if (dm_kraus_check("QubitChannel", nw, p->nkraus, p->kraus, err, sizeof err) != 0) {
        decref(pv);
        return vm_error(vm, a->site, "%s", err);
    }
    return pv;
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
    if (!q->dm)
        return vm_error(
            vm, site,
            "%s is a noise channel: it needs the mixed device, e.g. device(\"mixed\", wires=%d)",
            name, q->nq);
    char err[256];
    int rc;
    if (p->kraus)
        rc = dm_apply_kraus(q->dm, p->op.wires, p->op.nwires, p->nkraus, p->kraus, err, sizeof err);
    else
        rc = dm_apply_channel(q->dm, (DmChannel)p->chan, p->cparams, p->op.wires[0], err,
                              sizeof err);
    if (rc) return vm_error(vm, site, "%s", strncmp(err, "channel:", 8) == 0 ? err + 9 : err);
    if (q->rec) rec_op(q, QASM_CHANNEL, &p->op, p->chan, p->cparams);
    return v_nil();
}
