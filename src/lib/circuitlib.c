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

/* The wires of c(wires=[...]): qubit i on map[i] (default: wire i). */
static bool circ_map(VM *vm, Args *a, const QasmCircuit *qc, int *map)
{
    for (int i = 0; i < qc->nqubits && i < 4096; i++) map[i] = i;
    Value *wk = NULL;
    for (int k = 0; k < a->nkw; k++) {
        if (strcmp(a->kwname[k]->s, "wires") == 0)
            wk = &a->kw[k];
        else {
            vm_error(vm, a->site,
                     "a circuit got an unexpected keyword argument '%s' (it takes wires=)",
                     a->kwname[k]->s);
            return false;
        }
    }
    if (!wk) return true;
    Value w = *wk;
    if (w.t != T_LIST) {
        vm_error(vm, a->site, "wires= must be a list of %d wires", qc->nqubits);
        return false;
    }
    ObjList *l = AS_LIST(w);
    if ((int)l->len != qc->nqubits) {
        vm_error(vm, a->site, "the circuit has %d qubit%s, wires= gives %zu", qc->nqubits,
                 qc->nqubits == 1 ? "" : "s", l->len);
        return false;
    }
    for (size_t i = 0; i < l->len; i++) {
        Value x = l->v[i];
        if (x.t != T_NUM || x.n != floor(x.n) || x.n < 0 || x.n >= 64) {
            vm_error(vm, a->site, "wires= must hold wire numbers");
            return false;
        }
        map[i] = (int)x.n;
        for (size_t j = 0; j < i; j++)
            if (map[j] == map[i]) {
                vm_error(vm, a->site, "wires= names wire %d twice", map[i]);
                return false;
            }
    }
    return true;
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
    if (!circ_map(vm, a, qc, map)) return v_exc();
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

static void sput_n(Str *s, const char *t, int k)
{
    for (int i = 0; i < k; i++) sput(s, t);
}

/* ---- NumPy's str() of a matrix: what qml.draw lists after "M0 = " ------- */

/* The shortest digits that read back as |x| (d, no dot, at least one),
   and x's decimal exponent: |x| = d[0].d[1...] * 10^e. */
static int np_digits(double x, int maxsig, char *d, int *e)
{
    char buf[48];
    x = fabs(x);
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, x);
        if (strtod(buf, NULL) == x) break;
    }
    if (maxsig > 0 && (int)strcspn(buf, "e") - 1 > maxsig) /* rounded at the cut */
        snprintf(buf, sizeof buf, "%.*e", maxsig - 1, x);
    int n = 0;
    const char *s = buf;
    for (; *s && *s != 'e'; s++)
        if (*s != '.') d[n++] = *s;
    while (n > 1 && d[n - 1] == '0') n--;
    d[n] = 0;
    *e = atoi(s + 1);
    return n;
}

/* dragon4_positional(x, precision=8, unique=True, trim='.'): int and fraction parts */
static void np_positional(double x, bool plus, char *ip, char *fp)
{
    char d[24];
    int e, n = np_digits(x, 0, d, &e);
    const char *sg = signbit(x) ? "-" : plus ? "+" : "";
    if (n - 1 - e > 8) { /* more than 8 fractional digits: rounded to 8 */
        char buf[400];
        snprintf(buf, sizeof buf, "%.8f", fabs(x));
        size_t l = strlen(buf);
        while (buf[l - 1] == '0') buf[--l] = 0;
        char *dot = strchr(buf, '.');
        *dot = 0;
        sprintf(ip, "%s%s", sg, buf);
        strcpy(fp, dot + 1);
        return;
    }
    int at = sprintf(ip, "%s", sg);
    if (e < 0)
        ip[at++] = '0';
    else
        for (int i = 0; i <= e; i++) ip[at++] = i < n ? d[i] : '0';
    ip[at] = 0;
    at = 0;
    for (int i = 0; i < -e - 1; i++) fp[at++] = '0';
    for (int i = e < 0 ? 0 : e + 1; i < n; i++) fp[at++] = d[i];
    fp[at] = 0;
}

/* NumPy's FloatingFormat for one part (real or imaginary) of the entries shown */
typedef struct NpFmt {
    bool exp, plus;
    int pad_left, pad_right, prec, exp_size;
} NpFmt;

static void np_fill(NpFmt *f, const double *v, size_t n, bool plus)
{
    double mx = 0, mn = INFINITY;
    for (size_t i = 0; i < n; i++) {
        double a = fabs(v[i]);
        if (a == 0) continue;
        mx = a > mx ? a : mx;
        mn = a < mn ? a : mn;
    }
    *f = (NpFmt){ .plus = plus };
    f->exp = mx > 0 && (mx >= 1e8 || mn < 1e-4 || mx / mn > 1000.);
    for (size_t i = 0; i < n; i++) {
        char ip[400], fp[400];
        if (f->exp) {
            char d[24];
            int e, k = np_digits(v[i], 9, d, &e);
            int il = 1 + (signbit(v[i]) || plus), el = abs(e) >= 100 ? 3 : 2;
            f->pad_left = il > f->pad_left ? il : f->pad_left;
            f->prec = k - 1 > f->prec ? k - 1 : f->prec;
            f->exp_size = el > f->exp_size ? el : f->exp_size;
        } else {
            np_positional(v[i], plus, ip, fp);
            int il = (int)strlen(ip), fl = (int)strlen(fp);
            f->pad_left = il > f->pad_left ? il : f->pad_left;
            f->pad_right = fl > f->pad_right ? fl : f->pad_right;
        }
    }
}

static void np_format(const NpFmt *f, double x, char *out, size_t len)
{
    char ip[400], fp[400];
    if (f->exp) {
        char d[24];
        int e, k = np_digits(x, 9, d, &e);
        snprintf(ip, sizeof ip, "%s%c", signbit(x) ? "-" : f->plus ? "+" : "", d[0]);
        int at = 0;
        for (int i = 1; i < k; i++) fp[at++] = d[i];
        while (at < f->prec) fp[at++] = '0';
        fp[at] = 0;
        char ex[16];
        snprintf(ex, sizeof ex, "e%c%0*d", e < 0 ? '-' : '+', f->exp_size, abs(e));
        Str s = { 0 };
        sput_n(&s, " ", f->pad_left - (int)strlen(ip));
        sput(&s, ip);
        sput(&s, ".");
        sput(&s, fp);
        sput(&s, ex);
        snprintf(out, len, "%s", s.p);
        free(s.p);
        return;
    }
    np_positional(x, f->plus, ip, fp);
    Str s = { 0 };
    sput_n(&s, " ", f->pad_left - (int)strlen(ip));
    sput(&s, ip);
    sput(&s, ".");
    sput(&s, fp);
    sput_n(&s, " ", f->pad_right - (int)strlen(fp));
    snprintf(out, len, "%s", s.p ? s.p : "");
    free(s.p);
}

/* numpy's _extendLine: a word on the line, or the line ended and a new one begun */
static void np_word(Str *s, Str *line, const char *word)
{
    if (line->n + strlen(word) > 73 && line->n > 2) {
        while (line->n && line->p[line->n - 1] == ' ') line->p[--line->n] = 0;
        sput(s, line->p);
        sput(s, "\n");
        line->n = 0;
        sput(line, "  ");
    }
    sput(line, word);
}

/* str(m) for a dim x dim matrix as NumPy prints it (linewidth 75, precision
   8, summarised to 3 rows and columns each side past 1000 entries); real
   when every imaginary part is 0 (NumPy prints a real array's dtype). */
static void np_matrix(Str *out, const double *m, int dim)
{
    bool cx = false, sum = (size_t)dim * (size_t)dim > 1000;
    for (size_t i = 0; i < (size_t)dim * (size_t)dim; i++) cx |= m[2 * i + 1] != 0;
    int idx[64], k = 0;
    for (int i = 0; i < dim; i++)
        if (!sum || i < 3 || i >= dim - 3) idx[k++] = i;
    double *re = xcalloc((size_t)k * (size_t)k + 1, sizeof(double));
    double *im = xcalloc((size_t)k * (size_t)k + 1, sizeof(double));
    for (int r = 0; r < k; r++)
        for (int c = 0; c < k; c++) {
            re[r * k + c] = m[2 * ((size_t)idx[r] * (size_t)dim + (size_t)idx[c])];
            im[r * k + c] = m[2 * ((size_t)idx[r] * (size_t)dim + (size_t)idx[c]) + 1];
        }
    NpFmt fr, fi;
    np_fill(&fr, re, (size_t)k * (size_t)k, false);
    np_fill(&fi, im, (size_t)k * (size_t)k, true);
    sput(out, "[");
    for (int r = 0; r < k; r++) {
        Str s = { 0 }, line = { 0 };
        sput(&s, "");
        sput(&line, "  ");
        for (int c = 0; c < k; c++) {
            char w[900], wi[440];
            np_format(&fr, re[r * k + c], w, sizeof w);
            if (cx) { /* the j before the imaginary part's padding */
                np_format(&fi, im[r * k + c], wi, sizeof wi);
                size_t sp = strlen(wi);
                while (sp && wi[sp - 1] == ' ') sp--;
                size_t wl = strlen(w);
                snprintf(w + wl, sizeof w - wl, "%.*sj%s", (int)sp, wi, wi + sp);
            }
            np_word(&s, &line, w);
            if (c + 1 < k) sput(&line, " ");
            if (sum && c == 2) {
                np_word(&s, &line, "...");
                sput(&line, " ");
            }
        }
        sput(&s, line.p);
        sput(out, r ? " [" : "[");
        sput(out, s.p + 2);
        sput(out, r + 1 < k ? "]\n" : "]");
        if (sum && r == 2) sput(out, " ...\n");
        free(s.p);
        free(line.p);
    }
    sput(out, "]");
    free(re);
    free(im);
}

/* ---- draw ------------------------------------------------------------------ */

/* One drawing (qml.draw's tape_text): the record, the wires shown, each op's
   layer, the matrices numbered, the classical wires, and the cells. */
typedef struct Draw {
    QRecord *rec;
    int n, decimals;
    bool keep[65];
    size_t nops;
    int *layer_of, nlayers;
    int *mat_of;          /* per op: its matrix's number, or -1 */
    const QMatRec **mats; /* the distinct matrices, in order of number */
    int nmats;
    int *bitline, *blo, *bhi; /* per recorded bit: its classical wire (-1: none), its span */
    int nlines;
    Cell *cells, *bcells; /* nlayers x n, nlayers x nlines */
    ChCell *pcells;
    Cell *plabels;
    Cell *end;
    int ncol, *mw, *cw;
} Draw;

/* The options: decimals (nil: no parameters), show_all_wires, max_length. */
static bool draw_opts(VM *vm, Args *a, int *decimals, bool *show_all, int *max_length)
{
    Value *mk = arg_kw(a, "max_length");
    *max_length = 100;
    if (mk && (mk->t != T_NUM || mk->n != floor(mk->n) || mk->n < 1 || mk->n > 1e6)) {
        vm_error(vm, a->site, "draw(): max_length must be a whole number from 1 to 1000000");
        return false;
    }
    if (mk) *max_length = (int)mk->n;
    Value *dk = arg_kw(a, "decimals");
    *decimals = 2;
    if (dk && dk->t != T_NIL) {
        if (dk->t != T_NUM || dk->n != floor(dk->n) || dk->n < 0 || dk->n > 15) {
            vm_error(vm, a->site, "draw(): decimals must be a whole number from 0 to 15, or nil");
            return false;
        }
        *decimals = (int)dk->n;
    } else if (dk)
        *decimals = -1;
    Value *sk = arg_kw(a, "show_all_wires");
    if (sk && sk->t != T_BOOL) {
        vm_error(vm, a->site, "draw(): show_all_wires must be a bool");
        return false;
    }
    *show_all = sk && sk->b;
    return true;
}

/* The wires drawn: those an operation or a measurement names, as qml.draw
   (every wire with show_all_wires=true, or when none is named). */
static void draw_keep(Draw *d, bool show_all)
{
    const QRecord *rec = d->rec;
    bool any = false;
    for (size_t i = 0; i < rec->c.nops; i++) {
        const QasmOp *o = &rec->c.ops[i];
        if (o->kind == QASM_GPHASE) continue;
        for (int k = 0; k < o->nctrl + o->nwires; k++)
            if (o->wires[k] >= 0 && o->wires[k] < d->n) d->keep[o->wires[k]] = any = true;
    }
    for (int i = 0; i < rec->nmeas; i++)
        for (int k = 0; !rec->meas[i].implicit && k < rec->meas[i].nwires; k++)
            if (rec->meas[i].wires[k] >= 0 && rec->meas[i].wires[k] < d->n)
                d->keep[rec->meas[i].wires[k]] = any = true;
    for (int w = 0; w < d->n; w++) d->keep[w] = d->keep[w] || show_all || !any;
}

static const QasmCond *op_cond(const QRecord *rec, const QasmOp *o)
{
    return o->cond >= 0 && (size_t)o->cond < rec->c.nconds ? &rec->c.conds[o->cond] : NULL;
}

/* measure(w, reset=true) is one mark, ┤↗│  │0⟩: its reset is not drawn again */
static bool merged_reset(const QRecord *rec, size_t i)
{
    const QasmOp *o = &rec->c.ops[i];
    return o->kind == QASM_RESET && i > 0 && rec->c.ops[i - 1].kind == QASM_MEASURE &&
           (rec->c.ops[i - 1].bits & 1) && rec->c.ops[i - 1].wires[0] == o->wires[0];
}

/* Layers, as qml.draw's drawable_layers: an op goes after every op that
   touches its span of wires; a conditional op's span and that of a
   measurement a condition reads reach down to the last wire (their
   classical wire is drawn below). A measurement read by a condition gets
   a bit of its own (d->bitline >= 0 for now). */
static void draw_layers(Draw *d)
{
    const QRecord *rec = d->rec;
    int nb = rec->c.nclbits, last[65] = { 0 };
    for (int b = 0; b < nb; b++) d->bitline[b] = -1;
    for (size_t i = 0; i < d->nops; i++) {
        const QasmCond *cd = op_cond(rec, &rec->c.ops[i]);
        for (int k = 0; cd && k < cd->nbits; k++)
            if (cd->bits[k] >= 0 && cd->bits[k] < nb) d->bitline[cd->bits[k]] = 0;
    }
    for (size_t i = 0; i < d->nops; i++) {
        const QasmOp *o = &rec->c.ops[i];
        int nw = o->nctrl + o->nwires;
        d->layer_of[i] = -1;
        if (o->kind == QASM_GPHASE || nw == 0 || merged_reset(rec, i)) continue;
        int lo = 64, hi = -1;
        for (int k = 0; k < nw; k++) {
            lo = o->wires[k] < lo ? o->wires[k] : lo;
            hi = o->wires[k] > hi ? o->wires[k] : hi;
        }
        bool read =
            o->kind == QASM_MEASURE && o->clbit >= 0 && o->clbit < nb && d->bitline[o->clbit] >= 0;
        if (read || op_cond(rec, o)) hi = d->n - 1;
        int l = 0;
        for (int w = lo; w <= hi; w++) l = last[w] > l ? last[w] : l;
        d->layer_of[i] = l;
        for (int w = lo; w <= hi; w++) last[w] = l + 1;
        d->nlayers = l + 1 > d->nlayers ? l + 1 : d->nlayers;
    }
}

/* The classical wires, as qml.draw's cwire_connections: a bit's span runs
   from its measurement's layer to the last condition that reads it; a
   wire is reused by a later bit whose span starts after its last one ends. */
static void draw_cwires(Draw *d)
{
    const QRecord *rec = d->rec;
    int nb = rec->c.nclbits;
    for (size_t i = 0; i < d->nops; i++) {
        const QasmOp *o = &rec->c.ops[i];
        if (o->kind == QASM_MEASURE && o->clbit >= 0 && o->clbit < nb)
            d->blo[o->clbit] = d->bhi[o->clbit] = d->layer_of[i];
    }
    for (size_t i = 0; i < d->nops; i++) {
        const QasmCond *cd = op_cond(rec, &rec->c.ops[i]);
        for (int k = 0; cd && k < cd->nbits; k++) {
            int b = cd->bits[k];
            if (b >= 0 && b < nb && d->layer_of[i] > d->bhi[b]) d->bhi[b] = d->layer_of[i];
        }
    }
    int *ends = xcalloc((size_t)nb + 1, sizeof(int));
    for (int b = 0; b < nb; b++) {
        if (d->bitline[b] < 0) continue;
        int line = 0;
        while (line < d->nlines && ends[line] >= d->blo[b]) line++;
        qh_assert(line <= d->nlines && line < nb);
        if (line == d->nlines) d->nlines++;
        ends[line] = d->bhi[b];
        d->bitline[b] = line;
    }
    free(ends);
}

/* Whether classical wire `line` carries a bit at layer L (═), and whether
   a span of it ends there (╝ ╣). */
static bool line_on(const Draw *d, int line, int L)
{
    for (int b = 0; b < d->rec->c.nclbits; b++)
        if (d->bitline[b] == line && d->blo[b] < L && L <= d->bhi[b]) return true;
    return false;
}

static bool line_ends(const Draw *d, int line, int L)
{
    for (int b = 0; b < d->rec->c.nclbits; b++)
        if (d->bitline[b] == line && d->bhi[b] == L) return true;
    return false;
}

/* A matrix's number, as qml.draw's cache: that of an equal one already
   numbered (numpy.allclose's tolerances), or the next. */
static int mat_number(Draw *d, const QMatRec *m)
{
    for (int k = 0; k < d->nmats; k++) {
        const QMatRec *o = d->mats[k];
        bool close = o->dim == m->dim;
        for (size_t e = 0; close && e < (size_t)m->dim * (size_t)m->dim; e++) {
            double dr = m->m[2 * e] - o->m[2 * e], di = m->m[2 * e + 1] - o->m[2 * e + 1];
            close = hypot(dr, di) <= 1e-8 + 1e-5 * hypot(o->m[2 * e], o->m[2 * e + 1]);
        }
        if (close) return k;
    }
    d->mats[d->nmats] = m;
    return d->nmats++;
}

/* The ops' matrices numbered in drawing order (layer by layer). */
static void draw_matrices(Draw *d)
{
    const QRecord *rec = d->rec;
    for (size_t i = 0; i < d->nops; i++) d->mat_of[i] = -1;
    for (int L = 0; L < d->nlayers; L++)
        for (size_t j = 0; j < rec->nmats; j++) {
            const QMatRec *m = &rec->mats[j];
            if (m->meas < 0 && m->op < d->nops && d->layer_of[m->op] == L)
                d->mat_of[m->op] = mat_number(d, m);
        }
}

/* An op's label: PennyLane's name, parameters with `decimals` digits (or
   M0 for a matrix), † for an adjoint; svg gets the condition too ([m0=1]). */
static void draw_label(const Draw *d, size_t i, char *label, size_t len, char *svg, size_t slen)
{
    const QasmOp *o = &d->rec->c.ops[i];
    if (o->kind == QASM_MEASURE) { /* qml.draw: plain, postselected, with a reset */
        int post = (int)((o->bits >> 1) & 3) - 1;
        snprintf(label, len, "\xe2\x94\xa4\xe2\x86\x97%s%s",
                 post == 0   ? "\xe2\x82\x80"
                 : post == 1 ? "\xe2\x82\x81"
                             : "",
                 (o->bits & 1) ? "\xe2\x94\x82  \xe2\x94\x82"
                                 "0\xe2\x9f\xa9"
                               : "\xe2\x94\x9c");
        snprintf(svg, slen, "M");
        return;
    }
    if (o->kind == QASM_RESET) {
        snprintf(label, len, "|0\xe2\x9f\xa9"); /* |0⟩ */
        snprintf(svg, slen, "%s", label);
        return;
    }
    const char *base =
        o->kind == QASM_CHANNEL ? dm_channel_info((DmChannel)o->chan)->name : gate_label(o->gate);
    char pbuf[160] = "";
    size_t at = 0;
    if (d->mat_of[i] >= 0)
        snprintf(pbuf, sizeof pbuf, "(M%d)", d->mat_of[i]);
    else if (o->nparams && d->decimals >= 0) {
        pbuf[at++] = '(';
        for (int k = 0; k < o->nparams; k++) {
            char x[40];
            fmt_param(x, sizeof x, o->params[k], d->decimals);
            at += (size_t)snprintf(pbuf + at, sizeof pbuf - at, "%s%s", k ? "," : "", x);
        }
        snprintf(pbuf + at, sizeof pbuf - at, ")");
    }
    snprintf(label, len, "%s%s%s", base, pbuf, o->adjoint ? "\xe2\x80\xa0" : ""); /* † */
    char cbuf[96] = "";
    const QasmCond *cd = op_cond(d->rec, o);
    if (cd) { /* [m0=1]: the measurement's number and value */
        at = (size_t)snprintf(cbuf, sizeof cbuf, "[");
        for (int k = cd->nbits - 1; k >= 0 && at < sizeof cbuf; k--)
            at += (size_t)snprintf(cbuf + at, sizeof cbuf - at, "m%d%s", cd->bits[k], k ? "," : "");
        if (at < sizeof cbuf)
            snprintf(cbuf + at, sizeof cbuf - at, "%s%llu]", cd->negate ? "\xe2\x89\xa0" : "=",
                     (unsigned long long)cd->value);
    }
    snprintf(svg, slen, "%s%s", label, cbuf);
}

/* Whether a condition reads a bit on classical wire `line`. */
static bool cond_reads(const Draw *d, const QasmCond *cd, int line)
{
    for (int k = 0; k < cd->nbits; k++)
        if (d->bitline[cd->bits[k]] == line) return true;
    return false;
}

/* The links of a measurement read by a condition, or of a conditional op,
   to its classical wire (qml.draw's _add_mid_measure_grouping_symbols and
   _add_cond_grouping_symbols): ║ down the wires below, ╚ where the bit
   begins, ╩ ╝ (╬ ╣ on the other bits it reads) where a condition reads it. */
static void draw_links(Draw *d, size_t i, int L, int bottom)
{
    const QasmOp *o = &d->rec->c.ops[i];
    const QasmCond *cd = op_cond(d->rec, o);
    Cell *bc = &d->bcells[(size_t)L * (size_t)d->nlines];
    int line = -1;
    for (int k = 0; cd && k < cd->nbits; k++)
        line = d->bitline[cd->bits[k]] > line ? d->bitline[cd->bits[k]] : line;
    if (!cd) line = d->bitline[o->clbit];
    for (int w = bottom + 1; w < d->n; w++)
        if (d->keep[w])
            snprintf(d->cells[(size_t)L * (size_t)d->n + (size_t)w].t, sizeof(Cell),
                     cd ? "\xe2\x94\x80\xe2\x95\x91" : "\xe2\x94\x80\xe2\x94\x80\xe2\x95\x91");
    for (int b = 0; b < line; b++) {
        bool on = line_on(d, b, L);
        if (cd && cond_reads(d, cd, b))
            snprintf(bc[b].t, sizeof(Cell), "\xe2\x95\x90%s",
                     line_ends(d, b, L) ? "\xe2\x95\xa3" : "\xe2\x95\xac"); /* ═╣ ═╬ */
        else
            snprintf(bc[b].t, sizeof(Cell), "%s%s\xe2\x95\x91",
                     cd   ? ""
                     : on ? "\xe2\x95\x90"
                          : " ",
                     on ? "\xe2\x95\x90" : " ");
    }
    if (cd)
        snprintf(bc[line].t, sizeof(Cell), "\xe2\x95\x90%s",
                 line_ends(d, line, L) ? "\xe2\x95\x9d" : "\xe2\x95\xa9"); /* ═╝ ═╩ */
    else
        snprintf(bc[line].t, sizeof(Cell), "  \xe2\x95\x9a"); /* ╚ */
}

/* The cells of op i in its layer: labels on targets (after ─, or ╭ ├ ╰ on
   a span), ● on controls, │ on wires passed; the SVG grid alike. */
static void draw_op(Draw *d, size_t i)
{
    const QasmOp *o = &d->rec->c.ops[i];
    int L = d->layer_of[i], nw = o->nctrl + o->nwires, n = d->n;
    int lo = 64, hi = -1;
    for (int k = 0; k < nw; k++) {
        lo = o->wires[k] < lo ? o->wires[k] : lo;
        hi = o->wires[k] > hi ? o->wires[k] : hi;
    }
    if (op_cond(d->rec, o) || (o->kind == QASM_MEASURE && o->clbit >= 0 &&
                               o->clbit < d->rec->c.nclbits && d->bitline[o->clbit] >= 0))
        draw_links(d, i, L, hi);
    char label[128];
    draw_label(d, i, label, sizeof label, d->plabels[i].t, sizeof d->plabels[i].t);
    int ownc = o->kind == QASM_GATE ? own_controls(o->gate) : 0;
    while (lo < hi && !d->keep[lo]) lo++; /* the span on the wires drawn */
    while (hi > lo && !d->keep[hi]) hi--;
    bool multi = hi > lo;
    for (int w = lo; w <= hi; w++) {
        if (!d->keep[w]) continue;
        int role = -1; /* -1 passing through, 0 control, 1 target */
        for (int k = 0; k < nw; k++)
            if (o->wires[k] == w) role = (k < o->nctrl || (k - o->nctrl) < ownc) ? 0 : 1;
        const char *pre = !multi    ? ""
                          : w == lo ? "\xe2\x95\xad"
                          : w == hi ? "\xe2\x95\xb0"
                                    : "\xe2\x94\x9c"; /* ╭ ╰ ├ */
        Cell *c = &d->cells[(size_t)L * (size_t)n + (size_t)w];
        ChCell *pc = &d->pcells[(size_t)L * (size_t)n + (size_t)w];
        pc->op = (int)i;
        pc->role = role == -1 ? CH_PASS : role == 0 ? CH_CTRL : CH_TARGET;
        pc->label = d->plabels[i].t;
        if (role == -1)
            snprintf(c->t, sizeof c->t, "\xe2\x94\x82"); /* │ */
        else if (role == 0)
            snprintf(c->t, sizeof c->t, "%s\xe2\x97\x8f", pre); /* ● */
        else /* a one-wire label has its "─" where a span has ╭ ├ ╰ (qml.draw) */
            snprintf(c->t, sizeof c->t, "%s%s", multi ? pre : "\xe2\x94\x80", label);
    }
}

/* A terminal measurement's wires drawn (lo..hi; hi < 0: none). */
static void meas_span(const Draw *d, const QMeasRec *m, int *lo, int *hi)
{
    *lo = d->n;
    *hi = -1;
    for (int k = 0; k < m->nwires; k++)
        if (m->wires[k] >= 0 && m->wires[k] < d->n && d->keep[m->wires[k]]) {
            *lo = m->wires[k] < *lo ? m->wires[k] : *lo;
            *hi = m->wires[k] > *hi ? m->wires[k] : *hi;
        }
}

/* Measured matrices numbered after the ops' (qml.draw labels the
   measurement layers last), column by column. */
static void draw_meas_matrices(Draw *d, const int *mcol, int *mmat)
{
    const QRecord *rec = d->rec;
    for (int i = 0; i < rec->nmeas; i++) mmat[i] = -1;
    for (int col = 0; col < d->ncol; col++)
        for (size_t j = 0; j < rec->nmats; j++) {
            const QMatRec *m = &rec->mats[j];
            if (m->meas >= 0 && m->meas < rec->nmeas && mcol[m->meas] == col)
                mmat[m->meas] = mat_number(d, m);
        }
}

/* The label of a terminal measurement: 𝓗 with its matrix's number */
static void meas_label(const QMeasRec *m, int mat, char *out, size_t len)
{
    const char *h = strstr(m->label, "\xf0\x9d\x93\x97"), *end = h ? h + 4 : NULL;
    if (mat < 0 || !h) {
        snprintf(out, len, "%s", m->label);
        return;
    }
    snprintf(out, len, "%.*s(M%d)%s", (int)(end - m->label), m->label, mat, end);
}

/* Terminal measurements in columns, as qml.draw: a measurement goes into
   the first column where its span of wires is free; wires it passes over
   get a │. */
static void draw_ends(Draw *d)
{
    const QRecord *rec = d->rec;
    int n = d->n, nm = rec->nmeas > 0 ? rec->nmeas : 1;
    d->end = xcalloc((size_t)nm * (size_t)n, sizeof *d->end);
    bool *busy = xcalloc((size_t)nm * (size_t)n, sizeof(bool));
    int *mcol = xcalloc((size_t)nm, sizeof(int)), *mmat = xcalloc((size_t)nm, sizeof(int));
    for (int i = 0; i < rec->nmeas; i++) {
        int lo, hi, col = 0;
        meas_span(d, &rec->meas[i], &lo, &hi);
        mcol[i] = -1;
        if (hi < 0) continue;
        for (;; col++) {
            bool free_span = true;
            for (int w = lo; w <= hi && free_span; w++)
                free_span = !busy[(size_t)col * (size_t)n + (size_t)w];
            if (free_span) break;
        }
        for (int w = lo; w <= hi; w++) busy[(size_t)col * (size_t)n + (size_t)w] = true;
        mcol[i] = col;
        d->ncol = col + 1 > d->ncol ? col + 1 : d->ncol;
    }
    draw_meas_matrices(d, mcol, mmat);
    for (int i = 0; i < rec->nmeas; i++) {
        const QMeasRec *m = &rec->meas[i];
        int lo, hi;
        meas_span(d, m, &lo, &hi);
        char lab[128];
        meas_label(m, mmat[i], lab, sizeof lab);
        for (int w = lo; w <= hi && mcol[i] >= 0; w++) {
            if (!d->keep[w]) continue;
            bool on = false;
            for (int k = 0; k < m->nwires; k++) on |= m->wires[k] == w;
            const char *pre = lo == hi  ? " "
                              : w == lo ? "\xe2\x95\xad"
                              : w == hi ? "\xe2\x95\xb0"
                                        : "\xe2\x94\x9c"; /* ╭ ╰ ├ */
            Cell *c = &d->end[(size_t)mcol[i] * (size_t)n + (size_t)w];
            if (on)
                snprintf(c->t, sizeof c->t, "%s%s", pre, lab);
            else
                snprintf(c->t, sizeof c->t, "\xe2\x94\x82"); /* │ */
        }
    }
    free(busy);
    free(mcol);
    free(mmat);
    d->mw = xcalloc((size_t)(d->ncol ? d->ncol : 1), sizeof(int));
    for (int col = 0; col < d->ncol; col++)
        for (int w = 0; w < n; w++) {
            int x = width(d->end[(size_t)col * (size_t)n + (size_t)w].t);
            d->mw[col] = x > d->mw[col] ? x : d->mw[col];
        }
}

/* The rows of the text (qml.draw's totals): a line per wire drawn, then the
   classical wires, and the blocks already cut at max_length. */
typedef struct Rows {
    Str *row, done;
    int nw, nrows, lw;
} Rows;

/* A row's start: its wire's label, or spaces under the labels ("··· " after
   them when the drawing goes on from the block above). */
static void rows_begin(const Draw *d, Rows *r, bool cont)
{
    int k = 0;
    for (int w = 0; w < d->n; w++) {
        if (!d->keep[w]) continue;
        char lab[32];
        snprintf(lab, sizeof lab, "%*d: ", r->lw, w);
        r->row[k].n = 0;
        sput(&r->row[k], lab);
        if (cont) sput(&r->row[k], "\xc2\xb7\xc2\xb7\xc2\xb7 "); /* ··· */
        k++;
    }
    for (; k < r->nrows; k++) {
        r->row[k].n = 0;
        sput(&r->row[k], "");
        sput_n(&r->row[k], " ", r->lw + 2 + (cont ? 4 : 0));
    }
}

/* qml.draw's max_length: the rows so far become a block (" ···" after each
   wire's, a blank line after the block) and the rows begin again. */
static void rows_cut(const Draw *d, Rows *r)
{
    for (int k = 0; k < r->nrows; k++) {
        sput(&r->done, r->row[k].p);
        sput(&r->done, k < r->nw ? " \xc2\xb7\xc2\xb7\xc2\xb7\n" : "\n");
    }
    sput(&r->done, "\n");
    rows_begin(d, r, true);
}

/* Op layer L (of the nl drawn; an empty one when there are none) on every
   row: after ─, each wire's cell padded with ─; each classical wire's cell
   after the bit's filler (═ where it carries a bit, else a space), padded
   with the next layer's. */
static void rows_layer(const Draw *d, Rows *r, int L, int width_L)
{
    static const char *const dbl = "\xe2\x95\x90"; /* ═ */
    int k = 0;
    for (int w = 0; w < d->n; w++) {
        if (!d->keep[w]) continue;
        const char *t = L < d->nlayers ? d->cells[(size_t)L * (size_t)d->n + (size_t)w].t : "";
        sput(&r->row[k], "\xe2\x94\x80");
        sput(&r->row[k], t);
        sput_n(&r->row[k], "\xe2\x94\x80", width_L - width(t));
        k++;
    }
    for (int b = 0; b < d->nlines; b++, k++) {
        const char *t = d->bcells[(size_t)L * (size_t)d->nlines + (size_t)b].t;
        const char *f = line_on(d, b, L) ? dbl : " ";
        sput(&r->row[k], f);
        sput(&r->row[k], t[0] ? t : f);
        sput_n(&r->row[k], line_on(d, b, L + 1) ? dbl : " ", width_L - (t[0] ? width(t) : 1));
    }
}

/* Measurement column col (-1: the empty one when there are none) after a
   space, padded with spaces on every row, as qml.draw pads it. */
static void rows_column(const Draw *d, Rows *r, int col, int width_c)
{
    int k = 0;
    for (int w = 0; w < d->n; w++) {
        if (!d->keep[w]) continue;
        const char *t = col >= 0 ? d->end[(size_t)col * (size_t)d->n + (size_t)w].t : "";
        sput(&r->row[k], " ");
        sput(&r->row[k], t);
        sput_n(&r->row[k], " ", width_c - width(t));
        k++;
    }
    for (; k < r->nrows; k++) sput_n(&r->row[k], " ", width_c + 1);
}

/* The text, as qml.draw's tape_text: the op layers, ─┤ (two spaces on the
   classical wires), the measurement columns, each layer cut to a new block
   where the first line would pass max_length; then the matrices. */
static void draw_text(Draw *d, Str *out, int max_length)
{
    int nl = d->nlayers ? d->nlayers : 1, nc = d->ncol ? d->ncol : 1;
    d->cw = xcalloc((size_t)nl, sizeof(int));
    for (int L = 0; L < nl; L++) {
        d->cw[L] = 1;
        for (int w = 0; w < d->n && L < d->nlayers; w++) {
            int x = width(d->cells[(size_t)L * (size_t)d->n + (size_t)w].t);
            d->cw[L] = x > d->cw[L] ? x : d->cw[L];
        }
        for (int b = 0; b < d->nlines; b++) {
            int x = width(d->bcells[(size_t)L * (size_t)d->nlines + (size_t)b].t);
            d->cw[L] = x > d->cw[L] ? x : d->cw[L];
        }
    }
    Rows r = { .lw = 1 };
    for (int w = 0; w < d->n; w++) {
        if (!d->keep[w]) continue;
        r.nw++;
        r.lw = w >= 10 && r.lw < 2 ? 2 : r.lw; /* at most 64 wires */
    }
    r.nrows = r.nw + d->nlines;
    r.row = xcalloc((size_t)r.nrows + 1, sizeof(Str));
    sput(&r.done, "");
    rows_begin(d, &r, false);
    for (int L = 0; L < nl + nc; L++) {
        bool op = L < nl;
        int wl = op ? d->cw[L] : d->ncol ? d->mw[L - nl] : 1;
        int lim = L == nl + nc - 1 ? max_length : max_length - 4;
        if (r.nrows && width(r.row[0].p) + wl > lim - 1) rows_cut(d, &r);
        if (op)
            rows_layer(d, &r, L, wl);
        else
            rows_column(d, &r, d->ncol ? L - nl : -1, wl);
        for (int k = 0; op && L == nl - 1 && k < r.nrows; k++)
            sput(&r.row[k], k < r.nw ? "\xe2\x94\x80\xe2\x94\xa4" : "  "); /* ─┤ */
    }
    sput(out, r.done.p);
    for (int k = 0; k < r.nrows; k++) {
        sput(out, r.row[k].p);
        if (k + 1 < r.nrows) sput(out, "\n");
        free(r.row[k].p);
    }
    free(r.row);
    free(r.done.p);
    for (int k = 0; k < d->nmats; k++) { /* qml.draw's show_matrices */
        char h[32];
        snprintf(h, sizeof h, "\nM%d = \n", k);
        sput(out, h);
        np_matrix(out, d->mats[k]->m, d->mats[k]->dim);
    }
}

/* The SVG of the same grid: what each wire measures at the end. */
static char *draw_svg(const Draw *d)
{
    int n = d->n;
    Cell *ends = xcalloc((size_t)n, sizeof *ends);
    const char **endp = xcalloc((size_t)n, sizeof *endp);
    for (int w = 0; w < n; w++) {
        size_t at = 0;
        for (int col = 0; col < d->ncol; col++) {
            const char *t = d->end[(size_t)col * (size_t)n + (size_t)w].t;
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
    char *svg = ch_circuit_svg(n, d->nlayers, d->pcells, endp);
    free(endp);
    free(ends);
    return svg;
}

static void draw_free(Draw *d)
{
    free(d->layer_of);
    free(d->mat_of);
    free(d->mats);
    free(d->bitline);
    free(d->blo);
    free(d->bhi);
    free(d->cells);
    free(d->bcells);
    free(d->pcells);
    free(d->plabels);
    free(d->end);
    free(d->mw);
    free(d->cw);
    qrt_record_free(d->rec);
}

/* Why: draw(f, args...): the circuit as text in qml.draw's format (tape_text):
   a line per wire, gates as labels, controls as dots joined by ╭├╰ and │,
   mid-circuit measurements ┤↗├ linked to the classical wires of the
   conditions that read them, terminal measurements after ┤, the matrices
   listed after it. */
static Value bi_draw(VM *vm, Args *a)
{
    int decimals, max_length;
    bool show_all;
    if (!draw_opts(vm, a, &decimals, &show_all, &max_length)) return v_exc();
    QRecord rec;
    Value r = qrt_record(vm, a->v[0], a->n - 1, a->v + 1, a->site, &rec);
    if (IS_EXC(r)) {
        qrt_record_free(&rec);
        return r;
    }
    decref(r);
    if (rec.wires > 64) {
        qrt_record_free(&rec);
        return vm_error(vm, a->site, "draw(): at most 64 wires");
    }
    Draw d = { .rec = &rec, .n = rec.wires, .decimals = decimals, .nops = rec.c.nops };
    size_t nb = (size_t)rec.c.nclbits + 1;
    d.layer_of = xcalloc(d.nops + 1, sizeof(int));
    d.mat_of = xcalloc(d.nops + 1, sizeof(int));
    d.mats = xcalloc(rec.nmats + 1, sizeof *d.mats);
    d.bitline = xcalloc(nb, sizeof(int));
    d.blo = xcalloc(nb, sizeof(int));
    d.bhi = xcalloc(nb, sizeof(int));
    draw_keep(&d, show_all);
    draw_layers(&d);
    draw_cwires(&d);
    draw_matrices(&d);
    size_t ncells = (size_t)(d.nlayers ? d.nlayers : 1) * (size_t)d.n;
    d.cells = xcalloc(ncells, sizeof(Cell));
    d.bcells = xcalloc((size_t)(d.nlayers ? d.nlayers : 1) * (size_t)(d.nlines + 1), sizeof(Cell));
    d.pcells = xcalloc(ncells, sizeof *d.pcells);
    for (size_t k = 0; k < ncells; k++) d.pcells[k].op = -1;
    d.plabels = xcalloc(d.nops + 1, sizeof *d.plabels);
    for (size_t i = 0; i < d.nops; i++)
        if (d.layer_of[i] >= 0) draw_op(&d, i);
    draw_ends(&d);
    Str out = { 0 };
    draw_text(&d, &out, max_length);
    char *svg = draw_svg(&d);
    Value s = picture_new(out.p ? out.p : "", svg);
    free(svg);
    free(out.p);
    draw_free(&d);
    return s;
}

static const char *const kw_to_qasm[] = { "version", "measure_all", NULL };
static const char *const kw_draw[] = { "decimals", "show_all_wires", "max_length", NULL };

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
