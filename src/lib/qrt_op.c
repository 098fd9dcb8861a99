/* qrt_op.c — the operator kind (gates, observables, channels as values):
 * making, copying, printing, serializing, its members; and the checks of
 * wire arguments every operator maker and measurement shares. Knows the
 * simulator's plain structs (sv.h, dm.h) and values; applies nothing. */
#include "qrt_impl.h"
#include "arrayval.h"
#include "array.h"
#include "serial.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void op_free(Obj *o)
{
    ObjOp *p = (ObjOp *)o;
    if (p->matrix) free(p->matrix); /* (a gate owns none of these: no calls) */
    for (int i = 0; i < 3; i++) decref(p->bsrc[i]);
    if (p->terms) sv_terms_free(p->terms, p->nterms);
    if (p->idw) free(p->idw);
    if (p->kraus) free(p->kraus);
    obj_dealloc_size(o, sizeof(ObjOp)); /* the next gate's operator takes the block */
}

ObjOp *op_new(int kind)
{
    ObjOp *p = (ObjOp *)obj_alloc(sizeof(ObjOp), T_OP);
    p->kind = kind;
    p->pnode[0] = p->pnode[1] = p->pnode[2] = p->pnode[3] = AD_NONE;
    return p;
}

ObjOp *op_clone(const ObjOp *p)
{
    ObjOp *n = op_new(p->kind);
    Obj h = n->h;
    *n = *p;
    n->h = h;
    if (p->matrix) {
        size_t d = (size_t)1 << p->op.nwires;
        n->matrix = xmalloc(d * d * sizeof(cplx));
        memcpy(n->matrix, p->matrix, d * d * sizeof(cplx));
        n->op.matrix = n->matrix;
    }
    if (p->terms) n->terms = sv_terms_dup(p->terms, p->nterms);
    for (int i = 0; i < 3; i++) incref(n->bsrc[i]);
    if (p->idw) {
        n->idw = xmalloc((size_t)p->nterms * sizeof(uint64_t) + 1);
        memcpy(n->idw, p->idw, (size_t)p->nterms * sizeof(uint64_t));
    }
    if (p->kraus) {
        size_t d = (size_t)1 << p->op.nwires;
        n->kraus = xmalloc((size_t)p->nkraus * d * d * sizeof(cplx));
        memcpy(n->kraus, p->kraus, (size_t)p->nkraus * d * d * sizeof(cplx));
    }
    return n;
}

static void fmt_num(Buf *b, double d)
{
    Value v = v_num(d);
    value_repr(b, v, false);
}

/* Hermitian(<matrix>, wires=[0, 1]), Projector([1, 0], wires=[0, 1]), Projector(<state>,
 * wires=[0]) */
static void block_repr(Buf *b, const SvTerm *w)
{
    if (w->kind == SVB_DENSE)
        buf_puts(b, "Hermitian(<matrix>, wires=[");
    else if (w->kind == SVB_KET)
        buf_puts(b, "Projector(<state>, wires=[");
    else {
        buf_puts(b, "Projector([");
        for (int i = 0; i < w->k; i++)
            buf_printf(b, "%s%d", i ? ", " : "", (int)((w->bits >> i) & 1));
        buf_puts(b, "], wires=[");
    }
    for (int i = 0; i < w->k; i++) buf_printf(b, "%s%d", i ? ", " : "", w->wires[i]);
    buf_puts(b, "])");
}

/* BitFlip(0.1, wires=[0]), PauliError("XZ", 0.1, wires=[0, 1]) */
static void chan_repr(Buf *b, const ObjOp *p)
{
    const DmChannelInfo *ci = dm_channel_info((DmChannel)p->chan);
    buf_printf(b, "%s(", ci->name);
    if (p->chan == DM_PAULIERROR) buf_printf(b, "\"%s\", ", p->paulis);
    if (p->chan == DM_QUBITCHANNEL) buf_printf(b, "<%d Kraus matrices>, ", p->nkraus);
    for (int i = 0; i < p->op.nparams; i++) {
        fmt_num(b, p->cparams[i]);
        buf_puts(b, ", ");
    }
    buf_puts(b, "wires=[");
    for (int i = 0; i < p->op.nwires; i++) buf_printf(b, "%s%d", i ? ", " : "", p->op.wires[i]);
    buf_puts(b, "])");
}

static void op_repr(Buf *b, Value v, bool quoted)
{
    (void)quoted;
    ObjOp *p = AS_OP(v);
    if (p->kind == OPK_CHAN) {
        chan_repr(b, p);
        return;
    }
    if (p->kind == OPK_GATE) {
        const SvGateInfo *gi = sv_gate_info(p->op.gate);
        if (p->op.adjoint) buf_puts(b, "adjoint(");
        if (p->op.nctrl) buf_puts(b, "ctrl(");
        buf_printf(b, "%s(", gi->name);
        bool first = true;
        for (int i = 0; i < p->op.nparams; i++) {
            if (!first) buf_puts(b, ", ");
            if (p->bsrc[i].t != T_NIL)
                value_repr(b, p->bsrc[i], false); /* broadcast: its values */
            else
                fmt_num(b, p->op.params[i]);
            first = false;
        }
        if (p->op.gate == SV_QUBITUNITARY) {
            if (!first) buf_puts(b, ", ");
            buf_puts(b, "<matrix>");
            first = false;
        }
        if (p->op.gate == SV_BASISSTATE) {
            if (!first) buf_puts(b, ", ");
            buf_putc(b, '[');
            for (int i = 0; i < p->op.nwires; i++)
                buf_printf(b, "%s%d", i ? ", " : "", (int)((p->op.bits >> i) & 1));
            buf_putc(b, ']');
            first = false;
        }
        if (!first) buf_puts(b, ", ");
        buf_puts(b, "wires=[");
        for (int i = 0; i < p->op.nwires; i++) buf_printf(b, "%s%d", i ? ", " : "", p->op.wires[i]);
        buf_puts(b, "])");
        if (p->op.nctrl) {
            buf_puts(b, ", control=[");
            for (int i = 0; i < p->op.nctrl; i++)
                buf_printf(b, "%s%d", i ? ", " : "", p->op.ctrl[i]);
            buf_puts(b, "])");
        }
        if (p->op.adjoint) buf_putc(b, ')');
        return;
    }
    if (p->nterms == 0) {
        buf_puts(b, "0");
        return;
    }
    for (int t = 0; t < p->nterms; t++) {
        const SvTerm *w = &p->terms[t];
        uint64_t id = p->idw ? p->idw[t] : 0;
        double c = w->coeff;
        if (t)
            buf_puts(b, c < 0 ? " - " : " + ");
        else if (c < 0)
            buf_putc(b, '-');
        double ac = fabs(c);
        bool bare = !w->x && !w->z && !id && w->kind == SVB_NONE; /* a constant: no factor at all */
        if (ac != 1 || bare) {
            fmt_num(b, ac);
            if (!bare) buf_puts(b, " * ");
        }
        int bw = 64; /* the block goes where its lowest wire is */
        for (int i = 0; w->kind != SVB_NONE && i < w->k; i++)
            if (w->wires[i] < bw) bw = w->wires[i];
        bool firstf = true;
        for (int wire = 0; wire <= 64; wire++) {
            if (w->kind != SVB_NONE && wire == bw) {
                if (!firstf) buf_puts(b, " @ ");
                block_repr(b, w);
                firstf = false;
            }
            if (wire == 64) break;
            uint64_t m = (uint64_t)1 << wire;
            bool x = (w->x & m) != 0, z = (w->z & m) != 0, i = (id & m) != 0;
            if (!x && !z && !i) continue;
            if (!firstf) buf_puts(b, " @ ");
            buf_printf(b, "%s(%d)",
                       i        ? "Identity"
                       : x && z ? "PauliY"
                       : x      ? "PauliX"
                                : "PauliZ",
                       wire);
            firstf = false;
        }
    }
}

static Value op_copy(Value v, CopyCtx *cc)
{
    ObjOp *n = op_clone(AS_OP(v));
    copy_memo_put(cc, v.o, n);
    return v_obj(&n->h);
}

/* the SvOp (its matrix pointer aside), then each owned array with its length */
/* The most wires a matrix or Kraus operator of an operator has on the wire
   (QubitUnitary's bound is far below). */
#define OP_MATRIX_WIRES 16

static void ser_array(SerCtx *sc, const void *p, size_t bytes)
{
    ser_u64(sc, p ? bytes : 0);
    ser_u8(sc, p != NULL);
    if (p) ser_bytes(sc, p, bytes);
}

/* an array of exactly `bytes` bytes (or none) into *out (owned) */
static bool des_array(SerCtx *sc, void **out, size_t bytes)
{
    uint64_t n;
    uint8_t has;
    *out = NULL;
    if (!des_count(sc, &n, 1) || !des_u8(sc, &has)) return false;
    if (!has) return n == 0 || ser_fail(sc, "malformed task data (operator)");
    if (n != bytes) return ser_fail(sc, "malformed task data (operator)");
    *out = malloc(n ? (size_t)n : 1);
    if (!*out) return ser_fail(sc, "out of memory");
    return des_bytes(sc, *out, (size_t)n);
}

static bool op_ser(Value v, SerCtx *sc)
{
    const ObjOp *p = AS_OP(v);
    /* its parameters are nodes of a differentiation running here */
    if (p->tracked)
        return ser_fail(sc,
                        "a gate made from a differentiated value cannot be sent to another rank");
    SvOp op = p->op;
    op.matrix = NULL;
    /* matrices exist only for few wires (a 64-wire observable has none: no 1 << 64) */
    size_t d = p->op.nwires <= OP_MATRIX_WIRES ? (size_t)1 << p->op.nwires : 0;
    ser_u32(sc, (uint32_t)p->kind);
    ser_bytes(sc, &op, sizeof op);
    ser_u32(sc, (uint32_t)p->chan);
    ser_u32(sc, (uint32_t)p->nkraus);
    ser_bytes(sc, p->paulis, sizeof p->paulis);
    ser_bytes(sc, p->cparams, sizeof p->cparams);
    ser_u32(sc, (uint32_t)p->nterms);
    ser_u32(sc, (uint32_t)p->nb);
    ser_array(sc, p->kraus, (size_t)p->nkraus * d * d * sizeof(cplx));
    ser_array(sc, p->matrix, d * d * sizeof(cplx));
    for (int i = 0; i < 3; i++)
        if (!ser_value(sc, p->bsrc[i])) return false; /* broadcast sources (nil: none) */
    ser_u8(sc, p->terms != NULL);
    for (int i = 0; p->terms && i < p->nterms; i++) { /* each term, then its block's own arrays */
        SvTerm t = p->terms[i];
        size_t bd = (size_t)1 << t.k;
        t.m = NULL;
        t.ket = NULL;
        ser_bytes(sc, &t, sizeof t);
        ser_array(sc, p->terms[i].m, t.kind == SVB_DENSE ? bd * bd * sizeof(cplx) : 0);
        ser_array(sc, p->terms[i].ket, t.kind == SVB_KET ? bd * sizeof(cplx) : 0);
    }
    ser_array(sc, p->idw, (size_t)p->nterms * sizeof(uint64_t));
    return true;
}

static Value op_deser(SerCtx *sc, ValType t, size_t id)
{
    (void)t;
    (void)id;
    uint32_t kind, chan, nkraus, nterms, nb;
    SvOp op;
    char paulis[sizeof((ObjOp *)0)->paulis];
    double cparams[4];
    if (!des_u32(sc, &kind) || !des_bytes(sc, &op, sizeof op) || !des_u32(sc, &chan) ||
        !des_u32(sc, &nkraus) || !des_bytes(sc, paulis, sizeof paulis) ||
        !des_bytes(sc, cparams, sizeof cparams) || !des_u32(sc, &nterms) || !des_u32(sc, &nb))
        return v_exc();
    if (kind > OPK_CHAN || op.nwires < 0 || op.nwires > SV_MAX_WIRES || op.nparams < 0 ||
        op.nparams > 3 || op.nctrl < 0 || op.nctrl > SV_MAX_WIRES || nkraus > 64 ||
        nterms > (1u << 24) || nb > (1u << 24) || paulis[sizeof paulis - 1] ||
        (unsigned)op.gate >= SV_NGATES || chan >= DM_NCHANNELS ||
        op.nwires + op.nctrl > SV_MAX_WIRES)
        return des_fail(sc, "operator");
    /* every id and index against its table: the gate, the channel (above), each wire */
    for (int i = 0; i < op.nwires; i++)
        if (op.wires[i] < 0 || op.wires[i] >= SV_MAX_WIRES) return des_fail(sc, "operator");
    for (int i = 0; i < op.nctrl; i++)
        if (op.ctrl[i] < 0 || op.ctrl[i] >= SV_MAX_WIRES) return des_fail(sc, "operator");
    if (op.nwires > OP_MATRIX_WIRES && (nkraus || op.gate == SV_QUBITUNITARY))
        return des_fail(sc, "operator");
    size_t d = op.nwires <= OP_MATRIX_WIRES ? (size_t)1 << op.nwires : 0;
    ObjOp *p = op_new((int)kind);
    Value pv = v_obj(&p->h);
    p->op = op;
    p->chan = (int)chan;
    p->nkraus = (int)nkraus;
    p->nb = (int)nb;
    memcpy(p->paulis, paulis, sizeof paulis);
    memcpy(p->cparams, cparams, sizeof cparams);
    void *kraus = NULL, *matrix = NULL, *idw = NULL;
    uint8_t has_terms = 0;
    bool ok = des_array(sc, &kraus, (size_t)nkraus * d * d * sizeof(cplx));
    p->kraus = kraus;
    ok = ok && des_array(sc, &matrix, d * d * sizeof(cplx));
    p->matrix = matrix;
    p->op.matrix = p->matrix;
    for (int i = 0; ok && i < 3; i++) {
        Value b = des_value(sc);
        ok = !IS_EXC(b) && (b.t == T_NIL || b.t == T_ARRAY || b.t == T_LIST);
        if (!IS_EXC(b) && !ok) {
            decref(b);
            des_fail(sc, "operator");
        }
        if (ok) p->bsrc[i] = b;
    }
    ok = ok && des_u8(sc, &has_terms);
    ok = ok && (!has_terms || des_room(sc, nterms, sizeof(SvTerm)));
    if (ok && has_terms) {
        /* the terms one by one, each counted as soon as its arrays are owned (sv_terms_free) */
        p->terms = xcalloc(nterms ? nterms : 1, sizeof(SvTerm));
        for (uint32_t i = 0; ok && i < nterms; i++) {
            SvTerm t;
            ok = des_bytes(sc, &t, sizeof t);
            if (ok && ((unsigned)t.kind > SVB_KET || t.k < 0 || t.k > SV_MAX_KET ||
                       (t.kind == SVB_DENSE && t.k > SV_MAX_DENSE))) {
                des_fail(sc, "operator");
                ok = false;
            }
            for (int k = 0; ok && k < t.k; k++)
                if (t.wires[k] < 0 || t.wires[k] >= SV_MAX_WIRES) {
                    des_fail(sc, "operator");
                    ok = false;
                }
            if (!ok) break;
            size_t bd = (size_t)1 << t.k;
            void *m = NULL, *ket = NULL;
            ok = des_array(sc, &m, t.kind == SVB_DENSE ? bd * bd * sizeof(cplx) : 0);
            ok = ok && des_array(sc, &ket, t.kind == SVB_KET ? bd * sizeof(cplx) : 0);
            t.m = m;
            t.ket = ket;
            p->terms[i] = t;
            p->nterms = (int)i + 1;
        }
    }
    if (ok) p->nterms = (int)nterms;
    ok = ok && des_array(sc, &idw, (size_t)nterms * sizeof(uint64_t));
    p->idw = idw;
    if (!ok) {
        decref(pv);
        return v_exc();
    }
    if ((p->kraus == NULL) != (nkraus == 0) || (nterms && !p->terms) ||
        (op.gate == SV_QUBITUNITARY && !p->matrix)) {
        decref(pv);
        return des_fail(sc, "operator");
    }
    return pv;
}

bool wire_value(VM *vm, Value v, int *w, const char *gate, const Node *site)
{
    if (v.t == T_NUM && v.n >= 0 && v.n < 64 && (double)(int)v.n == v.n) { /* no floor() call */
        *w = (int)v.n;
        return true;
    }
    if (v.t != T_NUM || v.n != floor(v.n) || !isfinite(v.n)) {
        if (v.t == T_NUM)
            vm_error(vm, site, "%s: wires must be integers, got %g", gate, v.n);
        else
            vm_error(vm, site, "%s: wires must be integers, not %s", gate, type_name(v));
        return false;
    }
    if (v.n < 0 || v.n >= 64) {
        vm_error(vm, site, "%s: wire %g out of range", gate, v.n);
        return false;
    }
    *w = (int)v.n;
    return true;
}

/* wires from a number, a list of numbers or an array */
int collect_wires(VM *vm, Value v, int *out, int max, const char *gate, const Node *site)
{
    if (v.t == T_NUM) return wire_value(vm, v, out, gate, site) ? 1 : -1;
    if (v.t == T_LIST) {
        ObjList *l = AS_LIST(v);
        if ((int)l->len > max) {
            vm_error(vm, site, "%s: too many wires (%zu)", gate, l->len);
            return -1;
        }
        for (size_t i = 0; i < l->len; i++)
            if (!wire_value(vm, l->v[i], &out[i], gate, site)) return -1;
        return (int)l->len;
    }
    if (v.t == T_ARRAY) {
        Array *ar = AS_ARR(v);
        if (ar_ndim(ar) != 1 || ar_is_complex(ar)) {
            vm_error(vm, site, "%s: wires must be a list of integers", gate);
            return -1;
        }
        size_t n = ar_size(ar);
        if ((int)n > max) {
            vm_error(vm, site, "%s: too many wires (%zu)", gate, n);
            return -1;
        }
        for (size_t i = 0; i < n; i++)
            if (!wire_value(vm, v_num(ar_item(ar, i).re), &out[i], gate, site)) return -1;
        return (int)n;
    }
    vm_error(vm, site, "%s: wires must be integers or a list of them, not %s", gate, type_name(v));
    return -1;
}

/* The wires of a maker (gates, channels, Hermitian, Projector): the
   trailing arguments from pos, one list or array there, or wires= (not
   both); their number, or -1 after the error. */
int arg_wires(VM *vm, Args *a, int pos, const char *name, int *ws)
{
    Value *wk = a->nkw ? arg_kw(a, "wires") : NULL;
    if (wk) {
        if (pos < a->n) {
            vm_error(vm, a->site, "%s: give wires either as arguments or as wires=, not both",
                     name);
            return -1;
        }
        return collect_wires(vm, *wk, ws, SV_MAX_WIRES, name, a->site);
    }
    if (pos == a->n - 1 && a->v[pos].t != T_NUM)
        return collect_wires(vm, a->v[pos], ws, SV_MAX_WIRES, name, a->site);
    int nw = 0;
    for (; pos < a->n; pos++) {
        if (nw >= SV_MAX_WIRES) {
            vm_error(vm, a->site, "%s: too many wires", name);
            return -1;
        }
        if (!wire_value(vm, a->v[pos], &ws[nw++], name, a->site)) return -1;
    }
    return nw;
}

/* false, with "NAME: wires must be distinct" naming the first wire given
 * twice, when ws repeats one */
bool wires_distinct(VM *vm, const int *ws, int nw, const char *name, const Node *site)
{
    for (int i = 0; i < nw; i++)
        for (int j = i + 1; j < nw; j++)
            if (ws[i] == ws[j]) {
                vm_error(vm, site, "%s: wires must be distinct (wire %d twice)", name, ws[i]);
                return false;
            }
    return true;
}

/* op.name, op.wires, op.params, op.control: what a noise function looks at */
static Value op_member(VM *vm, Value v, const ObjStr *name, const Node *site)
{
    ObjOp *p = AS_OP(v);
    const char *n = name->s;
    if (p->kind == OPK_OBS) return vm_error(vm, site, "an observable has no member '%s'", n);
    if (strcmp(n, "name") == 0)
        return v_str(p->kind == OPK_CHAN ? dm_channel_info((DmChannel)p->chan)->name
                                         : sv_gate_info(p->op.gate)->name);
    if (strcmp(n, "wires") == 0 || strcmp(n, "control") == 0 || strcmp(n, "params") == 0) {
        ObjList *l = list_new(4);
        if (n[0] == 'w')
            for (int i = 0; i < p->op.nwires; i++) list_push(l, v_num(p->op.wires[i]));
        else if (n[0] == 'c')
            for (int i = 0; i < p->op.nctrl; i++) list_push(l, v_num(p->op.ctrl[i]));
        else
            for (int i = 0; i < p->op.nparams; i++)
                list_push(l, v_num(p->kind == OPK_CHAN ? p->cparams[i] : p->op.params[i]));
        return v_obj(&l->h);
    }
    if (strcmp(n, "adjoint") == 0) return v_bool(p->kind == OPK_GATE && p->op.adjoint);
    return vm_error(vm, site,
                    "an operator has no member '%s' (it has name, wires, control, params, adjoint)",
                    n);
}

static const TypeOps op_ops = {
    .name = "operator",
    .free = op_free,
    .copy = op_copy,
    .ser = op_ser,
    .deser = op_deser,
    .repr = op_repr,
    .binop = op_binop,
    .unop = op_unop,
    .stmt = op_stmt,
    .member = op_member,
};

void qrt_op_open(void) { type_register(T_OP, &op_ops); }
