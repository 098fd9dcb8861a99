/* circuitlib.c — circuits in and out, and looking at them (lang/quantum.md,
 * "Circuits"): qasm(text) and qasm_file(path) make a circuit value that
 * applies an OpenQASM program inside the running qfn; to_qasm, draw and
 * specs look at the circuit one call of a qfn runs (recorded by qrt.h's
 * qrt_record). Knows values, the quantum runtime's recorder and circuit
 * application, the qasm and io rooms, dm.h's channel names; nothing of
 * the evaluator or the executor. */
#include "circuitlib.h"
#include "chart.h"
#include "picture.h"
#include "qh_assert.h"
#include "builtins.h"
#include "dm.h"
#include "io.h"
#include "qasm.h"
#include "qrt.h"
#include "serial.h"
#include "types.h"
#include "vm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the circuit kind ----------------------------------------------------- */

typedef struct ObjCircuit {
    Obj h;
    QasmCircuit c;
    char name[64]; /* "qasm" or the file's name */
} ObjCircuit;
static ValType T_CIRCUIT;
#define AS_CIRC(v) ((ObjCircuit *)(v).o)

static void circ_free(Obj *o)
{
    qasm_free(&((ObjCircuit *)o)->c);
    free(o);
}

static Value circ_copy(Value v, CopyCtx *cc)
{
    ObjCircuit *c = AS_CIRC(v), *n = (ObjCircuit *)obj_alloc(sizeof(ObjCircuit), T_CIRCUIT);
    memcpy(n->name, c->name, sizeof n->name);
    if (qasm_copy(&c->c, &n->c) != 0) qasm_init(&n->c, 0, 0);
    copy_memo_put(cc, c, n);
    return v_obj(&n->h);
}

/* the tables of the circuit; an op's wires as an offset into the pool */
static bool circ_ser(Value v, SerCtx *sc)
{
    const ObjCircuit *o = AS_CIRC(v);
    const QasmCircuit *c = &o->c;
    ser_bytes(sc, o->name, sizeof o->name);
    ser_u32(sc, (uint32_t)c->nqubits);
    ser_u32(sc, (uint32_t)c->nclbits);
    ser_u32(sc, (uint32_t)c->version);
    ser_u32(sc, (uint32_t)c->nqregs);
    ser_bytes(sc, c->qregs, (size_t)c->nqregs * sizeof(QasmReg));
    ser_u32(sc, (uint32_t)c->ncregs);
    ser_bytes(sc, c->cregs, (size_t)c->ncregs * sizeof(QasmReg));
    ser_u64(sc, c->npool);
    ser_bytes(sc, c->pool, c->npool * sizeof(int));
    ser_u64(sc, c->nconds);
    ser_bytes(sc, c->conds, c->nconds * sizeof(QasmCond));
    ser_u64(sc, c->nops);
    for (size_t i = 0; i < c->nops; i++) {
        QasmOp op = c->ops[i];
        int64_t at = op.wires ? (int64_t)(op.wires - c->pool) : -1;
        op.wires = NULL;
        ser_bytes(sc, &op, sizeof op);
        ser_u64(sc, (uint64_t)at);
    }
    return true;
}

static bool des_fail_bool(SerCtx *sc)
{
    des_fail(sc, "circuit");
    return false;
}

static Value circ_deser(SerCtx *sc, ValType t, size_t id)
{
    (void)id;
    ObjCircuit *o = (ObjCircuit *)obj_alloc(sizeof(ObjCircuit), t);
    QasmCircuit *c = &o->c;
    Value ov = v_obj(&o->h);
    uint32_t nq, nc, ver, nqr, ncr;
    uint64_t npool, nconds, nops;
    qasm_init(c, 0, 0);
    bool ok = des_bytes(sc, o->name, sizeof o->name) && des_u32(sc, &nq) && des_u32(sc, &nc) &&
              des_u32(sc, &ver) && des_u32(sc, &nqr) && nqr < (1u << 20);
    if (ok && o->name[sizeof o->name - 1]) {
        des_fail(sc, "circuit");
        ok = false;
    }
    if (ok) {
        c->nqubits = (int)nq;
        c->nclbits = (int)nc;
        c->version = (int)ver;
        c->qregs = malloc(((size_t)nqr + 1) * sizeof(QasmReg));
        c->nqregs = (int)nqr;
        ok = c->qregs && des_bytes(sc, c->qregs, (size_t)nqr * sizeof(QasmReg)) &&
             des_u32(sc, &ncr) && ncr < (1u << 20);
    }
    if (ok) {
        c->cregs = malloc(((size_t)ncr + 1) * sizeof(QasmReg));
        c->ncregs = (int)ncr;
        ok = c->cregs && des_bytes(sc, c->cregs, (size_t)ncr * sizeof(QasmReg)) &&
             des_count(sc, &npool, sizeof(int));
    }
    if (ok) {
        c->pool = malloc(((size_t)npool + 1) * sizeof(int));
        c->npool = c->cappool = (size_t)npool;
        ok = c->pool && des_bytes(sc, c->pool, (size_t)npool * sizeof(int)) &&
             des_count(sc, &nconds, sizeof(QasmCond));
    }
    if (ok) {
        c->conds = malloc(((size_t)nconds + 1) * sizeof(QasmCond));
        c->nconds = c->capconds = (size_t)nconds;
        ok = c->conds && des_bytes(sc, c->conds, (size_t)nconds * sizeof(QasmCond)) &&
             des_count(sc, &nops, sizeof(QasmOp) + 8);
    }
    if (ok) {
        c->ops = malloc(((size_t)nops + 1) * sizeof(QasmOp));
        ok = c->ops != NULL;
        for (uint64_t i = 0; ok && i < nops; i++) {
            QasmOp *op = &c->ops[i];
            uint64_t at;
            ok = des_bytes(sc, op, sizeof *op) && des_u64(sc, &at);
            op->wires = NULL;
            c->nops = c->capops = (size_t)i + (ok ? 1 : 0);
            if (!ok) break;
            size_t nw = (size_t)op->nctrl + (size_t)op->nwires;
            /* every id and index against its table: kind, gate, channel,
               condition, bit, and (below) each wire */
            if (op->nctrl < 0 || op->nwires < 0 || nw > SV_MAX_WIRES || op->nparams < 0 ||
                op->nparams > 4 || (unsigned)op->kind > QASM_CHANNEL ||
                (op->kind == QASM_GATE && (unsigned)op->gate >= SV_NGATES) ||
                (op->kind == QASM_CHANNEL && (unsigned)op->chan >= DM_NCHANNELS) ||
                (op->kind == QASM_MEASURE && (op->clbit < 0 || op->clbit >= c->nclbits)) ||
                op->cond < -1 || (op->cond >= 0 && (uint64_t)op->cond >= nconds) ||
                (at == UINT64_MAX && nw) || (at != UINT64_MAX && (at > npool || nw > npool - at))) {
                des_fail(sc, "circuit");
                ok = false;
                break;
            }
            if (at != UINT64_MAX) op->wires = c->pool + at;
        }
    }
    /* the tables themselves: sizes, register names and ranges, wires, condition bits */
    if (ok && (nq > (1u << 20) || nc > (1u << 20))) ok = des_fail_bool(sc);
    for (size_t i = 0; ok && i < c->npool; i++)
        if (c->pool[i] < 0 || c->pool[i] >= c->nqubits) ok = des_fail_bool(sc);
    for (size_t i = 0; ok && i < c->nconds; i++) {
        const QasmCond *cd = &c->conds[i];
        if (cd->nbits < 0 || cd->nbits > 64) ok = des_fail_bool(sc);
        for (int k = 0; ok && k < cd->nbits; k++)
            if (cd->bits[k] < 0 || cd->bits[k] >= c->nclbits) ok = des_fail_bool(sc);
    }
    for (int i = 0; ok && i < c->nqregs + c->ncregs; i++) {
        const QasmReg *g = i < c->nqregs ? &c->qregs[i] : &c->cregs[i - c->nqregs];
        int total = i < c->nqregs ? c->nqubits : c->nclbits;
        if (memchr(g->name, 0, sizeof g->name) == NULL || g->size < 1 || g->offset < 0 ||
            g->offset > total || g->size > total - g->offset)
            ok = des_fail_bool(sc);
    }
    if (!ok) {
        if (!sc->failed) ser_fail(sc, "out of memory");
        decref(ov);
        return v_exc();
    }
    return ov;
}

static void circ_repr(Buf *b, Value v, bool quoted)
{
    (void)quoted;
    ObjCircuit *c = AS_CIRC(v);
    buf_printf(b, "<circuit %s: %d qubit%s, %d bit%s, %zu operation%s>", c->name, c->c.nqubits,
               c->c.nqubits == 1 ? "" : "s", c->c.nclbits, c->c.nclbits == 1 ? "" : "s", c->c.nops,
               c->c.nops == 1 ? "" : "s");
}

/* Why: c() / c(wires=[...]) inside a qfn: every op on the mapped wires,
   conditions read from the bits measured so far; returns the bits. */
static Value circ_call(VM *vm, Value v, Args *a)
{
    ObjCircuit *c = AS_CIRC(v);
    const QasmCircuit *qc = &c->c;
    if (a->n > 0)
        return vm_error(vm, a->site, "a circuit takes no arguments but wires= (got %d)", a->n);
    int map[4096];
    for (int i = 0; i < qc->nqubits && i < 4096; i++) map[i] = i;
    Value *wk = NULL;
    for (int k = 0; k < a->nkw; k++) {
        if (strcmp(a->kwname[k]->s, "wires") == 0)
            wk = &a->kw[k];
        else
            return vm_error(vm, a->site,
                            "a circuit got an unexpected keyword argument '%s' (it takes wires=)",
                            a->kwname[k]->s);
    }
    if (wk) {
        Value w = *wk;
        if (w.t != T_LIST)
            return vm_error(vm, a->site, "wires= must be a list of %d wires", qc->nqubits);
        ObjList *l = AS_LIST(w);
        if ((int)l->len != qc->nqubits)
            return vm_error(vm, a->site, "the circuit has %d qubit%s, wires= gives %zu",
                            qc->nqubits, qc->nqubits == 1 ? "" : "s", l->len);
        for (size_t i = 0; i < l->len; i++) {
            Value x = l->v[i];
            if (x.t != T_NUM || x.n != floor(x.n) || x.n < 0 || x.n >= 64)
                return vm_error(vm, a->site, "wires= must hold wire numbers");
            map[i] = (int)x.n;
            for (size_t j = 0; j < i; j++)
                if (map[j] == map[i])
                    return vm_error(vm, a->site, "wires= names wire %d twice", map[i]);
        }
    }
    if (qc->nqubits > 4096) return vm_error(vm, a->site, "circuit too wide");
    int *bits = calloc((size_t)qc->nclbits + 1, sizeof(int));
    int *recbit =
        calloc((size_t)qc->nclbits + 1, sizeof(int)); /* the recorder's number of each bit */
    if (!bits || !recbit) {
        free(bits);
        free(recbit);
        return vm_error(vm, a->site, "out of memory");
    }
    for (int k = 0; k < qc->nclbits; k++) recbit[k] = -1;
    Value out = v_nil();
    for (size_t i = 0; i < qc->nops && !IS_EXC(out); i++) {
        const QasmOp *o = &qc->ops[i];
        QasmOp m = *o;
        int w[128];
        int nw = o->nctrl + o->nwires;
        if (nw > 128) {
            out = vm_error(vm, a->site, "circuit op too wide");
            break;
        }
        for (int k = 0; k < nw; k++) w[k] = map[o->wires[k]];
        m.wires = w;
        m.cond = -1;
        if (o->cond >= 0) {
            const QasmCond *cd = &qc->conds[o->cond];
            uint64_t val = 0;
            bool known = true;
            for (int k = 0; k < cd->nbits && k < 64; k++) {
                val |= (uint64_t)(bits[cd->bits[k]] & 1) << k;
                if (recbit[cd->bits[k]] < 0) known = false;
            }
            bool run = (val == cd->value) != (bool)cd->negate;
            if (known && o->kind == QASM_GATE) { /* drawings show the condition */
                QasmCond rc = *cd;
                for (int k = 0; k < rc.nbits; k++) rc.bits[k] = recbit[cd->bits[k]];
                qrt_record_condition(vm, &m, &rc);
                if (!run) continue;
                Value r = qrt_apply_circuit_op_quiet(vm, &m, a->site);
                if (IS_EXC(r)) {
                    out = r;
                    break;
                }
                decref(r);
                continue;
            }
            if (!run) continue;
        }
        Value r = qrt_apply_circuit_op(vm, &m, a->site);
        if (IS_EXC(r)) {
            out = r;
            break;
        }
        if (o->kind == QASM_MEASURE && r.t == T_NUM) {
            bits[o->clbit] = (int)r.n;
            recbit[o->clbit] = qrt_recorded_bit(vm);
        }
        decref(r);
    }
    free(recbit);
    if (!IS_EXC(out) && qc->nclbits > 0) {
        ObjList *l = list_new((size_t)qc->nclbits);
        for (int i = 0; i < qc->nclbits; i++) list_push(l, v_num(bits[i]));
        out = v_obj(&l->h);
    }
    free(bits);
    return out;
}

/* path: the file as given (named in errors, as the I/O builtins do), or NULL for text. */
static Value make_circuit(VM *vm, const char *text, size_t len, const char *name, const char *path,
                          const Node *site, const char *who)
{
    ObjCircuit *c = (ObjCircuit *)obj_alloc(sizeof(ObjCircuit), T_CIRCUIT);
    snprintf(c->name, sizeof c->name, "%s", name);
    char err[512];
    if (qasm_parse(text, len, &c->c, err, sizeof err) != 0) {
        qasm_init(&c->c, 0, 0);
        Value cv = v_obj(&c->h);
        decref(cv);
        if (path) return vm_error(vm, site, "%s: '%s': %s", who, path, err);
        return vm_error(vm, site, "%s: %s", who, err);
    }
    return v_obj(&c->h);
}

static Value bi_qasm(VM *vm, Args *a)
{
    if (a->v[0].t != T_STR)
        return vm_error(
            vm, a->site,
            "qasm() needs the OpenQASM text (a string), not %s (for a file use qasm_file)",
            type_name(a->v[0]));
    return make_circuit(vm, AS_STR(a->v[0])->s, AS_STR(a->v[0])->len, "qasm", NULL, a->site,
                        "qasm()");
}

static Value bi_qasm_file(VM *vm, Args *a)
{
    if (a->v[0].t != T_STR)
        return vm_error(vm, a->site, "qasm_file() needs a file path string, not %s",
                        type_name(a->v[0]));
    if (memchr(AS_STR(a->v[0])->s, 0, AS_STR(a->v[0])->len))
        return vm_error(vm, a->site, "qasm_file(): the path has an embedded null byte");
    const char *path = AS_STR(a->v[0])->s;
    char err[600];
    size_t n;
    char *t = io_read_file(path, &n, err, sizeof err);
    if (!t) return vm_error(vm, a->site, "qasm_file(): %s", err);
    const char *base = strrchr(path, '/');
    Value r = make_circuit(vm, t, n, base ? base + 1 : path, path, a->site, "qasm_file()");
    free(t);
    return r;
}

/* ---- to_qasm -------------------------------------------------------------- */

static Value bi_to_qasm(VM *vm, Args *a)
{
    Value *vk = arg_kw(a, "version"), *mk = arg_kw(a, "measure_all");
    int version = 2;
    if (vk && vk->t != T_NIL) {
        if (vk->t != T_NUM || (vk->n != 2 && vk->n != 3))
            return vm_error(vm, a->site, "to_qasm(): version must be 2 or 3");
        version = (int)vk->n;
    }
    bool measure_all = true, e = false;
    if (mk) measure_all = tp_truthy(vm, *mk, a->site, &e);
    if (e) return v_exc();
    QRecord rec;
    Value r = qrt_record(vm, a->v[0], a->n - 1, a->v + 1, a->site, &rec);
    if (IS_EXC(r)) {
        qrt_record_free(&rec);
        return r;
    }
    decref(r);
    if (measure_all) {
        int base = rec.c.nclbits;
        for (int w = 0; w < rec.wires; w++) {
            QasmOp *o = qasm_add(&rec.c, QASM_MEASURE, &w, 0, 1);
            if (o) o->clbit = base + w;
        }
        rec.c.nclbits = base + rec.wires;
    }
    char err[512];
    size_t n;
    char *t = qasm_write(&rec.c, version, &n, err, sizeof err);
    qrt_record_free(&rec);
    if (!t) return vm_error(vm, a->site, "to_qasm(): %s", err);
    Value s = v_strn(t, n);
    free(t);
    return s;
}

/* ---- specs ---------------------------------------------------------------- */

static const char *op_name(const QasmOp *o)
{
    if (o->kind == QASM_CHANNEL) return dm_channel_info((DmChannel)o->chan)->name;
    if (o->kind == QASM_MEASURE) return "MidMeasureMP"; /* PennyLane's name */
    if (o->kind == QASM_RESET) return "Reset";
    if (o->kind == QASM_GPHASE) return "GlobalPhase";
    return sv_gate_info(o->gate)->name;
}

static void dict_inc(ObjDict *d, Value k)
{
    Value cur;
    double n = dict_get(d, k, &cur) && cur.t == T_NUM ? cur.n : 0;
    dict_set(d, k, v_num(n + 1));
}

static void put_kv(ObjDict *d, const char *key, Value v)
{
    Value k = v_str(key);
    dict_set(d, k, v);
    decref(k);
    decref(v);
}

/* Why: specs(f, args...): what a PennyLane user reads off qml.specs. */
static Value bi_specs(VM *vm, Args *a)
{
    QRecord rec;
    Value r = qrt_record(vm, a->v[0], a->n - 1, a->v + 1, a->site, &rec);
    if (IS_EXC(r)) {
        qrt_record_free(&rec);
        return r;
    }
    decref(r);
    ObjDict *types = dict_new(), *sizes = dict_new();
    int *layer = xcalloc((size_t)rec.wires + 1, sizeof(int));
    bool *used = xcalloc((size_t)rec.wires + 1, sizeof(bool));
    int depth = 0, nparams = 0;
    size_t nops = 0;
    for (size_t i = 0; i < rec.c.nops; i++) {
        const QasmOp *o = &rec.c.ops[i];
        if (o->kind == QASM_GPHASE) continue;
        /* measure(w, reset=true) is one MidMeasureMP, its reset part of it */
        if (o->kind == QASM_RESET && i > 0 && rec.c.ops[i - 1].kind == QASM_MEASURE &&
            (rec.c.ops[i - 1].bits & 1) && rec.c.ops[i - 1].wires[0] == o->wires[0])
            continue;
        nops++;
        char nm[96];
        if (o->kind == QASM_GATE && o->adjoint && o->nctrl)
            snprintf(nm, sizeof nm, "C(Adjoint(%s))", op_name(o));
        else if (o->kind == QASM_GATE && o->nctrl)
            snprintf(nm, sizeof nm, "C(%s)", op_name(o));
        else if (o->kind == QASM_GATE && o->adjoint)
            snprintf(nm, sizeof nm, "Adjoint(%s)", op_name(o));
        else
            snprintf(nm, sizeof nm, "%s", op_name(o));
        Value k = v_str(nm);
        dict_inc(types, k);
        decref(k);
        int nw = o->nctrl + o->nwires;
        dict_inc(sizes, v_num(nw));
        if (o->kind == QASM_GATE) nparams += o->nparams;
        if (o->kind == QASM_CHANNEL) nparams += o->nparams;
        int d = 0;
        for (int k2 = 0; k2 < nw; k2++) {
            int w = o->wires[k2];
            if (w >= 0 && w < rec.wires) {
                if (layer[w] > d) d = layer[w];
                used[w] = true;
            }
        }
        d++;
        for (int k2 = 0; k2 < nw; k2++) {
            int w = o->wires[k2];
            if (w >= 0 && w < rec.wires) layer[w] = d;
        }
        if (d > depth) depth = d;
    }
    /* the wires the circuit uses, as PennyLane counts them: those its
       operations and its measurements name (not a wireless probs() or state()) */
    for (int i = 0; i < rec.nmeas; i++)
        for (int k2 = 0; !rec.meas[i].implicit && k2 < rec.meas[i].nwires; k2++)
            if (rec.meas[i].wires[k2] >= 0 && rec.meas[i].wires[k2] < rec.wires)
                used[rec.meas[i].wires[k2]] = true;
    int nused = 0;
    for (int w = 0; w < rec.wires; w++) nused += used[w];
    ObjDict *out = dict_new();
    put_kv(out, "gate_types", v_obj(&types->h));
    put_kv(out, "gate_sizes", v_obj(&sizes->h));
    put_kv(out, "num_operations", v_num((double)nops));
    put_kv(out, "depth", v_num(depth));
    put_kv(out, "num_wires", v_num(nused));
    put_kv(out, "num_device_wires", v_num(rec.wires));
    ObjList *wl = list_new(4);
    for (int w = 0; w < rec.wires; w++)
        if (used[w]) list_push(wl, v_num(w));
    put_kv(out, "wires_used", v_obj(&wl->h));
    put_kv(out, "num_params", v_num(nparams));
    ObjList *ml = list_new(4);
    for (int i = 0; i < rec.nmeas; i++) list_push(ml, v_str(rec.meas[i].label));
    put_kv(out, "measurements", v_obj(&ml->h));
    int mids = 0;
    for (size_t i = 0; i < rec.c.nops; i++) mids += rec.c.ops[i].kind == QASM_MEASURE;
    put_kv(out, "num_mid_measurements", v_num(mids));
    put_kv(out, "device", v_str(rec.device));
    put_kv(out, "shots", rec.shots ? v_num((double)rec.shots) : v_nil());
    free(layer);
    free(used);
    qrt_record_free(&rec);
    return v_obj(&out->h);
}

/* ---- draw ----------------------------------------------------------------- */

/* A growing string. */
typedef struct Str {
    char *p;
    size_t n, cap;
} Str;
static void sput(Str *s, const char *t)
{
    size_t l = strlen(t);
    if (s->n + l + 1 > s->cap) {
        size_t c = s->cap ? s->cap : 64;
        while (c < s->n + l + 1) c *= 2;
        char *np = realloc(s->p, c);
        if (!np) return;
        s->p = np;
        s->cap = c;
    }
    memcpy(s->p + s->n, t, l);
    s->n += l;
    s->p[s->n] = 0;
}

/* Display width of UTF-8 text: code points (box drawing and symbols are one column each). */
static int width(const char *t)
{
    int w = 0;
    for (; *t; t++)
        if (((unsigned char)*t & 0xC0) != 0x80) w++;
    return w;
}

static void fmt_param(char *out, size_t len, double x, int decimals)
{
    if (decimals < 0) {
        snprintf(out, len, "%g", x);
        return;
    }
    snprintf(out, len, "%.*f", decimals, x);
}

/* PennyLane's short labels of gates on their target wires. */
static const char *gate_label(SvGate g)
{
    switch ((int)g) {
    case SV_IDENTITY: return "I";
    case SV_HADAMARD: return "H";
    case SV_PAULIX: return "X";
    case SV_PAULIY: return "Y";
    case SV_PAULIZ: return "Z";
    case SV_CNOT:
    case SV_TOFFOLI: return "X";
    case SV_CY: return "Y";
    case SV_CZ: return "Z";
    case SV_CRX: return "RX";
    case SV_CRY: return "RY";
    case SV_CRZ: return "RZ";
    case SV_PHASESHIFT:
    case SV_CPHASE: return "R\xcf\x95"; /* Rϕ */
    case SV_CSWAP: return "SWAP";
    case SV_QUBITUNITARY: return "U";
    case SV_BASISSTATE: return "|\xce\xa8\xe2\x9f\xa9"; /* |Ψ⟩ */
    case SV_SINGLEEXC: return "G";                      /* PennyLane's labels */
    case SV_DOUBLEEXC: return "G\xc2\xb2";              /* G² */
    default: return sv_gate_info(g)->name;
    }
}

/* How many of a gate's own wires are controls (drawn as dots). */
static int own_controls(SvGate g)
{
    switch ((int)g) {
    case SV_CNOT:
    case SV_CY:
    case SV_CZ:
    case SV_CRX:
    case SV_CRY:
    case SV_CRZ:
    case SV_CPHASE:
    case SV_CSWAP: return 1;
    case SV_TOFFOLI: return 2;
    default: return 0;
    }
}

typedef struct Cell {
    char t[160];
} Cell;

/* Why: draw(f, args...): the circuit as text in qml.draw's style: a line per
   wire, gates as labels (parameters with `decimals` digits), controls as
   dots joined by ╭├╰ and │, mid-circuit measurements ┤↗├, resets │0⟩,
   channels by name, terminal measurements after ┤. */
static Value bi_draw(VM *vm, Args *a)
{
    Value *dk = arg_kw(a, "decimals");
    int decimals = 2;
    if (dk && dk->t != T_NIL) {
        if (dk->t != T_NUM || dk->n != floor(dk->n) || dk->n < 0 || dk->n > 15)
            return vm_error(vm, a->site,
                            "draw(): decimals must be a whole number from 0 to 15, or nil");
        decimals = (int)dk->n;
    } else if (dk)
        decimals = -1;
    Value *sk = arg_kw(a, "show_all_wires");
    if (sk && sk->t != T_BOOL)
        return vm_error(vm, a->site, "draw(): show_all_wires must be a bool");
    bool show_all = sk && sk->b;
    QRecord rec;
    Value r = qrt_record(vm, a->v[0], a->n - 1, a->v + 1, a->site, &rec);
    if (IS_EXC(r)) {
        qrt_record_free(&rec);
        return r;
    }
    decref(r);
    int n = rec.wires;
    if (n > 64) {
        qrt_record_free(&rec);
        return vm_error(vm, a->site, "draw(): at most 64 wires");
    }
    /* the wires drawn: those an operation or a measurement names, as
       qml.draw (every wire with show_all_wires=true, or when none is named) */
    bool keep[65] = { false };
    bool any = false;
    for (size_t i = 0; i < rec.c.nops; i++) {
        const QasmOp *o = &rec.c.ops[i];
        if (o->kind == QASM_GPHASE) continue;
        for (int k = 0; k < o->nctrl + o->nwires; k++)
            if (o->wires[k] >= 0 && o->wires[k] < n) keep[o->wires[k]] = any = true;
    }
    for (int i = 0; i < rec.nmeas; i++)
        for (int k = 0; !rec.meas[i].implicit && k < rec.meas[i].nwires; k++)
            if (rec.meas[i].wires[k] >= 0 && rec.meas[i].wires[k] < n)
                keep[rec.meas[i].wires[k]] = any = true;
    for (int w = 0; w < n; w++) keep[w] = keep[w] || show_all || !any;
    /* layers: an op goes after every op that touches its wire span */
    size_t nops = rec.c.nops;
    int *layer_of = xcalloc(nops + 1, sizeof(int));
    int *mlayer =
        xcalloc((size_t)rec.c.nclbits + 1, sizeof(int)); /* layer of each mid-circuit measurement */
    int last[65] = { 0 }, nlayers = 0;
    for (size_t i = 0; i < nops; i++) {
        const QasmOp *o = &rec.c.ops[i];
        int nw = o->nctrl + o->nwires;
        /* measure(w, reset=true) is one mark, ┤↗│  │0⟩: its reset is not drawn again */
        bool merged = o->kind == QASM_RESET && i > 0 && rec.c.ops[i - 1].kind == QASM_MEASURE &&
                      (rec.c.ops[i - 1].bits & 1) && rec.c.ops[i - 1].wires[0] == o->wires[0];
        if (o->kind == QASM_GPHASE || nw == 0 || merged) {
            layer_of[i] = -1;
            continue;
        }
        int lo = 64, hi = -1;
        for (int k = 0; k < nw; k++) {
            if (o->wires[k] < lo) lo = o->wires[k];
            if (o->wires[k] > hi) hi = o->wires[k];
        }
        int l = 0;
        for (int w = lo; w <= hi; w++)
            if (last[w] > l) l = last[w];
        if (o->cond >= 0 && (size_t)o->cond < rec.c.nconds) { /* after the measurements it reads */
            const QasmCond *cd = &rec.c.conds[o->cond];
            for (int k = 0; k < cd->nbits; k++) {
                int b = cd->bits[k];
                if (b >= 0 && b < rec.c.nclbits && mlayer[b] + 1 > l) l = mlayer[b] + 1;
            }
        }
        if (o->kind == QASM_MEASURE && o->clbit >= 0 && o->clbit < rec.c.nclbits)
            mlayer[o->clbit] = l;
        layer_of[i] = l;
        for (int w = lo; w <= hi; w++) last[w] = l + 1;
        if (l + 1 > nlayers) nlayers = l + 1;
    }
    Cell *cells = xcalloc((size_t)(nlayers ? nlayers : 1) * (size_t)n, sizeof(Cell));
    /* the same grid for the SVG drawing: each cell's operation and role, and
     * each operation's label (without the text's ╭├╰ corners) */
    ChCell *pcells = xcalloc((size_t)(nlayers ? nlayers : 1) * (size_t)n, sizeof *pcells);
    for (size_t k = 0; k < (size_t)(nlayers ? nlayers : 1) * (size_t)n; k++) pcells[k].op = -1;
    Cell *plabels = xcalloc(nops + 1, sizeof *plabels);
    for (size_t i = 0; i < nops; i++) {
        const QasmOp *o = &rec.c.ops[i];
        int L = layer_of[i];
        if (L < 0) continue;
        int nw = o->nctrl + o->nwires;
        int lo = 64, hi = -1;
        for (int k = 0; k < nw; k++) {
            if (o->wires[k] < lo) lo = o->wires[k];
            if (o->wires[k] > hi) hi = o->wires[k];
        }
        char label[128], pbuf[160] = "";
        if (o->kind == QASM_MEASURE) { /* qml.draw: plain, postselected, with a reset */
            int post = (int)((o->bits >> 1) & 3) - 1;
            snprintf(label, sizeof label, "\xe2\x94\xa4\xe2\x86\x97%s%s",
                     post == 0   ? "\xe2\x82\x80"
                     : post == 1 ? "\xe2\x82\x81"
                                 : "",
                     (o->bits & 1) ? "\xe2\x94\x82  \xe2\x94\x82"
                                     "0\xe2\x9f\xa9"
                                   : "\xe2\x94\x9c");
        } else if (o->kind == QASM_RESET)
            snprintf(label, sizeof label, "|0\xe2\x9f\xa9"); /* |0⟩ */
        else {
            const char *base = o->kind == QASM_CHANNEL ? dm_channel_info((DmChannel)o->chan)->name
                                                       : gate_label(o->gate);
            if (o->nparams && decimals >= 0) {
                size_t at = 0;
                pbuf[at++] = '(';
                for (int k = 0; k < o->nparams; k++) {
                    char x[40];
                    fmt_param(x, sizeof x, o->params[k], decimals);
                    at += (size_t)snprintf(pbuf + at, sizeof pbuf - at, "%s%s", k ? "," : "", x);
                }
                snprintf(pbuf + at, sizeof pbuf - at, ")");
            }
            char cbuf[96] = "";
            if (o->cond >= 0 &&
                (size_t)o->cond < rec.c.nconds) { /* [m0=1]: the measurement's number and value */
                const QasmCond *cd = &rec.c.conds[o->cond];
                size_t at = (size_t)snprintf(cbuf, sizeof cbuf, "[");
                for (int k = cd->nbits - 1; k >= 0 && at < sizeof cbuf; k--)
                    at += (size_t)snprintf(cbuf + at, sizeof cbuf - at, "m%d%s", cd->bits[k],
                                           k ? "," : "");
                if (at < sizeof cbuf)
                    snprintf(cbuf + at, sizeof cbuf - at, "%s%llu]",
                             cd->negate ? "\xe2\x89\xa0" : "=", (unsigned long long)cd->value);
            }
            snprintf(label, sizeof label, "%s%s%s%s", base, pbuf, o->adjoint ? "\xe2\x80\xa0" : "",
                     cbuf); /* † */
        }
        int ownc = o->kind == QASM_GATE ? own_controls(o->gate) : 0;
        while (lo < hi && !keep[lo]) lo++; /* the span on the wires drawn */
        while (hi > lo && !keep[hi]) hi--;
        bool multi = hi > lo;
        for (int w = lo; w <= hi; w++) {
            if (!keep[w]) continue;
            int role = -1; /* -1 passing through, 0 control, 1 target */
            for (int k = 0; k < nw; k++)
                if (o->wires[k] == w) role = (k < o->nctrl || (k - o->nctrl) < ownc) ? 0 : 1;
            const char *pre = !multi    ? ""
                              : w == lo ? "\xe2\x95\xad"
                              : w == hi ? "\xe2\x95\xb0"
                                        : "\xe2\x94\x9c"; /* ╭ ╰ ├ */
            Cell *c = &cells[(size_t)L * (size_t)n + (size_t)w];
            ChCell *pc = &pcells[(size_t)L * (size_t)n + (size_t)w];
            snprintf(plabels[i].t, sizeof plabels[i].t, "%s",
                     o->kind == QASM_MEASURE ? "M" : label);
            pc->op = (int)i;
            pc->role = role == -1 ? CH_PASS : role == 0 ? CH_CTRL : CH_TARGET;
            pc->label = plabels[i].t;
            if (role == -1)
                snprintf(c->t, sizeof c->t, "\xe2\x94\x82"); /* │ */
            else if (role == 0)
                snprintf(c->t, sizeof c->t, "%s\xe2\x97\x8f", pre); /* ● */
            else /* a one-wire label has its "─" where a span has ╭ ├ ╰ (qml.draw) */
                snprintf(c->t, sizeof c->t, "%s%s", multi ? pre : "\xe2\x94\x80", label);
        }
    }
    /* terminal measurements in columns, as qml.draw: a measurement goes into
       the first column where its span of wires is free; wires it passes
       over get a │ */
    int nm = rec.nmeas > 0 ? rec.nmeas : 1, ncol = 0;
    Cell *end = xcalloc((size_t)nm * (size_t)n, sizeof *end);
    for (int i = 0; i < rec.nmeas; i++) {
        const QMeasRec *m = &rec.meas[i];
        int lo = n, hi = -1;
        for (int k = 0; k < m->nwires; k++)
            if (m->wires[k] >= 0 && m->wires[k] < n && keep[m->wires[k]]) {
                if (m->wires[k] < lo) lo = m->wires[k];
                if (m->wires[k] > hi) hi = m->wires[k];
            }
        if (hi < 0) continue;
        int col = 0;
        for (;; col++) {
            bool free_span = true;
            for (int w = lo; w <= hi && free_span; w++)
                free_span = !end[(size_t)col * (size_t)n + (size_t)w].t[0];
            if (free_span) break;
        }
        if (col + 1 > ncol) ncol = col + 1;
        for (int w = lo; w <= hi; w++) {
            if (!keep[w]) continue;
            bool on = false;
            for (int k = 0; k < m->nwires; k++) on |= m->wires[k] == w;
            const char *pre = lo == hi  ? " "
                              : w == lo ? "\xe2\x95\xad"
                              : w == hi ? "\xe2\x95\xb0"
                                        : "\xe2\x94\x9c"; /* ╭ ╰ ├ */
            Cell *c = &end[(size_t)col * (size_t)n + (size_t)w];
            if (on)
                snprintf(c->t, sizeof c->t, "%s%s", pre, m->label);
            else
                snprintf(c->t, sizeof c->t, "\xe2\x94\x82"); /* │ */
        }
    }
    int *mw = xcalloc((size_t)(ncol ? ncol : 1), sizeof(int));
    for (int col = 0; col < ncol; col++)
        for (int w = 0; w < n; w++) {
            int x = width(end[(size_t)col * (size_t)n + (size_t)w].t);
            if (x > mw[col]) mw[col] = x;
        }
    /* column widths */
    int *cw = xcalloc((size_t)(nlayers ? nlayers : 1), sizeof(int));
    for (int L = 0; L < nlayers; L++)
        for (int w = 0; w < n; w++) {
            int x = width(cells[(size_t)L * (size_t)n + (size_t)w].t);
            if (x > cw[L]) cw[L] = x;
        }
    int lw = 0, lastw = 0;
    for (int w = 0; w < n; w++) {
        if (!keep[w]) continue;
        lastw = w;
        char t[16];
        snprintf(t, sizeof t, "%d", w);
        if ((int)strlen(t) > lw) lw = (int)strlen(t);
    }
    Str out = { 0 };
    sput(&out, "");
    for (int w = 0; w < n; w++) {
        if (!keep[w]) continue;
        char lab[32];
        snprintf(lab, sizeof lab, "%*d: \xe2\x94\x80", lw, w);
        sput(&out, lab);
        for (int L = 0; L < nlayers; L++) {
            const char *t = cells[(size_t)L * (size_t)n + (size_t)w].t;
            int x = width(t);
            bool vertical = strcmp(t, "\xe2\x94\x82") == 0;
            sput(&out, x ? t : "");
            for (int k = x; k < cw[L]; k++)
                sput(&out, vertical && k == x ? "\xe2\x94\x80" : "\xe2\x94\x80");
            sput(&out, "\xe2\x94\x80");
        }
        sput(&out, "\xe2\x94\xa4"); /* ┤ */
        /* the measurement columns, each " " and its cells padded with spaces
           on every wire, as qml.draw (so "┤  " when there are none) */
        if (ncol == 0) sput(&out, "  ");
        for (int col = 0; col < ncol; col++) {
            const char *t = end[(size_t)col * (size_t)n + (size_t)w].t;
            sput(&out, " ");
            sput(&out, t);
            for (int k = width(t); k < mw[col]; k++) sput(&out, " ");
        }
        if (w < lastw) sput(&out, "\n");
    }
    /* what each wire measures at the end, for the SVG */
    Cell *ends = xcalloc((size_t)n, sizeof *ends);
    const char **endp = xcalloc((size_t)n, sizeof *endp);
    for (int w = 0; w < n; w++) {
        size_t at = 0;
        for (int col = 0; col < ncol; col++) {
            const char *t = end[(size_t)col * (size_t)n + (size_t)w].t;
            if (!t[0] || strcmp(t, "\xe2\x94\x82") == 0) continue;
            /* without the corners ╭ ├ ╰ (three bytes each) */
            if (strncmp(t, "\xe2\x95\xad", 3) == 0 || strncmp(t, "\xe2\x95\xb0", 3) == 0 ||
                strncmp(t, "\xe2\x94\x9c", 3) == 0)
                t += 3;
            at += (size_t)snprintf(ends[w].t + at, sizeof ends[w].t - at, "%s%s", at ? " " : "", t);
            if (at >= sizeof ends[w].t) break;
        }
        endp[w] = ends[w].t[0] ? ends[w].t : NULL;
    }
    char *svg = ch_circuit_svg(n, nlayers, pcells, endp);
    Value s = picture_new(out.p ? out.p : "", svg);
    free(svg);
    free(endp);
    free(ends);
    free(pcells);
    free(plabels);
    free(out.p);
    free(cw);
    free(mw);
    free(end);
    free(cells);
    free(layer_of);
    free(mlayer);
    qrt_record_free(&rec);
    return s;
}

static const char *const kw_to_qasm[] = { "version", "measure_all", NULL };
static const char *const kw_draw[] = { "decimals", "show_all_wires", NULL };

static const BuiltinDef builtins_circuit[] = {
    { "qasm", bi_qasm, 1, 1, 0, NULL, 0 },
    { "qasm_file", bi_qasm_file, 1, 1, BI_IMPURE, NULL, 0 },
    { "to_qasm", bi_to_qasm, 1, -1, BI_CALLS, kw_to_qasm, 0 },
    { "draw", bi_draw, 1, -1, BI_CALLS, kw_draw, 0 },
    { "specs", bi_specs, 1, -1, BI_CALLS, NULL, 0 },
    { NULL, NULL, 0, 0, 0, NULL, 0 },
};

static const TypeOps circuit_ops = {
    .name = "circuit",
    .free = circ_free,
    .copy = circ_copy,
    .ser = circ_ser,
    .deser = circ_deser,
    .repr = circ_repr,
    .call = circ_call,
};

void circuitlib_open(void)
{
    T_CIRCUIT = type_register_new(&circuit_ops);
    builtins_add(builtins_circuit);
}
