/* qrt.c — devices, operators (gates, observables, Hamiltonians) as value
 * kinds, the rule of application (an operator as a statement applies to the
 * running qfn's device), measurements, and running a qfn call on a pooled
 * device instance. Validates user input and names the gate or wire in
 * errors, then hands the simulator (sv_) plain structs. Knows values, the
 * evaluator's entry, arrays, the tracked kinds and the recording interface
 * of differentiated runs (qrec.h), the pool and sv.h;
 * nothing of the executor's scheduling. */
#include "qrt.h"
#include "arrayval.h"
#include "array.h"
#include "qrec.h"
#include "track.h"
#include "eval.h"
#include "exec.h"
#include "pool.h"
#include "qdist.h"
#include "qh_assert.h"
#include "serial.h"
#include "sv.h"
#include "dm.h"
#include "svmeas.h"

#include <complex.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_QUBITS 40

/* ---------------------------------------------------------------- objects */

typedef struct ObjDevice {
    Obj h;
    char name[32];
    int wires;
    long shots; /* 0: exact; a shot vector: their sum */
#define MAX_SHOTV 64
    long shotv[MAX_SHOTV]; /* a shot vector (shots=[10, 100, [5, 3]]), entries expanded */
    int nshotv;            /* 0: none */
    uint64_t seed;
    bool has_seed;
    double latency;
    bool mixed;       /* "mixed": a density matrix (dm.h) */
    bool distributed; /* distributed=true: split over MPI ranks (qdist.h) */
    Value noise;      /* mixed: fn(op) -> channels to apply after each gate, or nil */
    char key[48];     /* its instances' key in the pool: "statevector:N", "mixed:N" */
} ObjDevice;
#define AS_DEV(v) ((ObjDevice *)(v).o)

enum { OPK_GATE, OPK_OBS, OPK_CHAN };
typedef struct ObjOp {
    Obj h;
    int kind;
    SvOp op;     /* OPK_GATE; OPK_CHAN: its wires (op.wires, op.nwires) and params */
    int chan;    /* OPK_CHAN: DmChannel */
    cplx *kraus; /* OPK_CHAN: Kraus matrices (QubitChannel, PauliError), owned */
    int nkraus;
    char paulis[8];    /* OPK_CHAN PauliError: its operators */
    double cparams[4]; /* OPK_CHAN: its parameters (op.nparams of them) */
    cplx *matrix;      /* QubitUnitary: owned copy */
    AdNode pnode[3];   /* the tape nodes of tracked parameters (AD_NONE: a constant) */
    bool tracked;      /* some parameter is tracked */
    uint64_t ptape;    /* the evaluation whose tape pnode refers to */
    Value bsrc[3];     /* parameter broadcasting: parameter i's 1-d array or list of values, held
                           (nil: op.params[i] for every member); read per member by op_stmt */
    int nb;            /* its batch size (0: none) */
    SvTerm *terms;     /* OPK_OBS: owned (blocks copied: sv_terms_dup) */
    uint64_t *idw;     /* OPK_OBS, per term: the wires an Identity factor names (never in x|z);
                           they change no value, only the printed form and matrix()'s size */
    int nterms;
} ObjOp;
#define AS_OP(v) ((ObjOp *)(v).o)

typedef struct QRuntime {
    Pool *pool;
    SvTeam **teams; /* one per worker, and one for the main thread */
    int nteams;
    long ncpu;
    atomic_ulong gates, calls;
} QRuntime;

/* A pooled device instance: a state vector, or a density matrix. */
typedef struct QInst {
    bool mixed;
    bool token; /* only a reservation (qrt_reserve): memory held elsewhere */
    SvState s;
    DmState d;
} QInst;

/* The running qfn's device. */
typedef struct QCtx {
    SvState *s;           /* statevector device (NULL on the mixed device and a distributed one) */
    DmState *dm;          /* mixed device (NULL on the statevector device) */
    QDState *ds;          /* a distributed statevector (qdist.h), else NULL */
    int nq;               /* wires */
    bool in_noise;        /* applying what the noise function returned */
    QRecord *rec;         /* recording the circuit (draw, specs, ...), or NULL */
    QasmCircuit *capture; /* adjoint/ctrl of a function: gates are collected, not applied */
    const ObjDevice *dev;
    Rng rng;
    long shots;        /* this run's shots (0: exact); a shot vector's entry */
    int bsize, bidx;   /* parameter broadcasting: the batch size (0: none) and this run's member */
    QRec *grec;        /* a differentiated run (diffq.c), or NULL */
    void *copy_token;  /* the pool's reservation of results copied out (reserve_copy) */
    size_t copy_bytes; /* ... and its size */
} QCtx;

static void device_free(Obj *o)
{
    decref(((ObjDevice *)o)->noise);
    free(o);
}
static void device_clear(Obj *o)
{
    ObjDevice *d = (ObjDevice *)o;
    Value n = d->noise;
    d->noise = v_nil();
    decref(n);
}
static void device_traverse(Obj *o, void (*visit)(Value, void *), void *ud)
{
    visit(((ObjDevice *)o)->noise, ud);
}
static void device_repr(Buf *b, Value v, bool quoted)
{
    (void)quoted;
    ObjDevice *d = AS_DEV(v);
    buf_printf(b, "device(\"%s\", wires=%d", d->name, d->wires);
    if (d->nshotv) {
        buf_puts(b, ", shots=[");
        for (int i = 0; i < d->nshotv; i++) buf_printf(b, "%s%ld", i ? ", " : "", d->shotv[i]);
        buf_putc(b, ']');
    } else if (d->shots)
        buf_printf(b, ", shots=%ld", d->shots);
    if (d->has_seed) buf_printf(b, ", seed=%llu", (unsigned long long)d->seed);
    if (d->latency > 0) buf_printf(b, ", latency=%g", d->latency);
    if (d->distributed) buf_puts(b, ", distributed=true");
    if (d->noise.t == T_FUNC) buf_printf(b, ", noise=%s", AS_FUNC(d->noise)->p->name);
    buf_putc(b, ')');
}
static Value device_copy(Value v, CopyCtx *cc)
{
    ObjDevice *n = (ObjDevice *)obj_alloc(sizeof(ObjDevice), T_DEVICE);
    ObjDevice *d = AS_DEV(v);
    Obj h = n->h;
    *n = *d;
    n->h = h;
    n->noise = v_nil();
    copy_memo_put(cc, d, n);
    n->noise = value_copy_deep(d->noise, cc);
    return v_obj(&n->h);
}
static bool device_eq(Value a, Value b)
{
    ObjDevice *x = AS_DEV(a), *y = AS_DEV(b);
    return strcmp(x->name, y->name) == 0 && x->wires == y->wires && x->shots == y->shots &&
           x->nshotv == y->nshotv && memcmp(x->shotv, y->shotv, sizeof x->shotv) == 0 &&
           x->has_seed == y->has_seed && x->seed == y->seed && x->latency == y->latency &&
           x->mixed == y->mixed && x->distributed == y->distributed && x->noise.t == y->noise.t &&
           (x->noise.t != T_FUNC || x->noise.o == y->noise.o);
}

/* the fields of a device (name, sizes, flags), then its noise function */
static bool device_ser(Value v, SerCtx *sc)
{
    ObjDevice *d = AS_DEV(v);
    ser_str(sc, d->name, strlen(d->name));
    ser_u32(sc, (uint32_t)d->wires);
    ser_u64(sc, (uint64_t)d->shots);
    ser_u64(sc, d->seed);
    ser_u8(sc, (unsigned)d->has_seed | (unsigned)d->mixed << 1 | (unsigned)d->distributed << 2);
    ser_f64(sc, d->latency);
    return ser_value(sc, d->noise);
}

static Value device_deser(SerCtx *sc, ValType t, size_t id)
{
    (void)t;
    uint32_t nl, wires;
    uint64_t shots, seed;
    uint8_t flags;
    double lat;
    const char *name = des_str(sc, &nl);
    if (!name || !des_u32(sc, &wires) || !des_u64(sc, &shots) || !des_u64(sc, &seed) ||
        !des_u8(sc, &flags) || !des_f64(sc, &lat))
        return v_exc();
    if (nl >= sizeof((ObjDevice *)0)->name || wires < 1 || wires > MAX_QUBITS)
        return des_fail(sc, "device");
    ObjDevice *d = (ObjDevice *)obj_alloc(sizeof(ObjDevice), T_DEVICE);
    memcpy(d->name, name, nl + 1);
    d->wires = (int)wires;
    d->shots = (long)shots;
    d->seed = seed;
    d->has_seed = flags & 1;
    d->mixed = (flags & 2) != 0;
    d->distributed = (flags & 4) != 0;
    d->latency = lat;
    d->noise = v_nil();
    des_note(sc, id, &d->h);
    Value dv = v_obj(&d->h);
    Value nz = des_value(sc);
    if (IS_EXC(nz)) {
        decref(dv);
        return nz;
    }
    d->noise = nz;
    return dv;
}

static void op_free(Obj *o)
{
    ObjOp *p = (ObjOp *)o;
    free(p->matrix);
    for (int i = 0; i < 3; i++) decref(p->bsrc[i]);
    sv_terms_free(p->terms, p->nterms);
    free(p->idw);
    free(p->kraus);
    free(p);
}

static ObjOp *op_new(int kind)
{
    ObjOp *p = (ObjOp *)obj_alloc(sizeof(ObjOp), T_OP);
    p->kind = kind;
    p->pnode[0] = p->pnode[1] = p->pnode[2] = AD_NONE;
    return p;
}

static ObjOp *op_clone(const ObjOp *p)
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

static void op_repr(Buf *b, Value v, bool quoted)
{
    (void)quoted;
    ObjOp *p = AS_OP(v);
    if (p->kind == OPK_CHAN) {
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
    size_t d = (size_t)1 << p->op.nwires;
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
        nterms > (1u << 24) || nb > (1u << 24) || paulis[sizeof paulis - 1])
        return des_fail(sc, "operator");
    size_t d = (size_t)1 << op.nwires;
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

/* ---------------------------------------------------------------- runtime */

typedef struct InstArg {
    int nq;
    bool mixed;
    bool token;
} InstArg;

static void *inst_create(void *arg, char *err, size_t errlen)
{
    InstArg *ia = arg;
    if (ia->token) {
        QInst *t = calloc(1, sizeof *t);
        if (t)
            t->token = true;
        else
            snprintf(err, errlen, "out of memory");
        return t;
    }
    QInst *q = calloc(1, sizeof *q);
    int rc = !q ? -1 : ia->mixed ? dm_init(&q->d, ia->nq) : sv_init(&q->s, ia->nq);
    if (rc != 0) {
        free(q);
        if (ia->mixed)
            snprintf(err, errlen, "cannot allocate a %d-wire density matrix (%zu bytes)", ia->nq,
                     dm_bytes(ia->nq));
        else
            snprintf(err, errlen, "cannot allocate a %d-qubit state (%zu bytes)", ia->nq,
                     sv_bytes(ia->nq));
        return NULL;
    }
    q->mixed = ia->mixed;
    return q;
}
static void inst_reset(void *p)
{
    QInst *q = p;
    if (q->token) return;
    if (q->mixed)
        dm_reset(&q->d);
    else
        sv_reset(&q->s);
}
static void inst_destroy(void *p)
{
    QInst *q = p;
    if (q->token) {
        free(q);
        return;
    }
    if (q->mixed)
        dm_free(&q->d);
    else
        sv_free(&q->s);
    free(q);
}
static const PoolVt pool_vt = { inst_create, inst_reset, inst_destroy };

void qrt_start(Interp *in)
{
    if (in->qrt) return;
    /* BLAS threads: the same for every call, whatever the load, the mode or
     * --workers (how OpenBLAS splits a product or an eigensolver changes
     * its last bits): the CPUs qh may use, unless OPENBLAS_NUM_THREADS
     * says otherwise */
    if (!getenv("OPENBLAS_NUM_THREADS") && in->ncpu > 0)
        ar_set_blas_threads((int)in->ncpu); /* applied when OpenBLAS loads (qblas.h) */
    QRuntime *q = xcalloc(1, sizeof *q);
    q->ncpu = in->ncpu > 0 ? in->ncpu : 1;
    q->pool = pool_new(in->max_memory ? in->max_memory : pool_default_budget(), &pool_vt);
    q->nteams = (in->sync ? 0 : in->nworkers) + 1;
    q->teams = xcalloc((size_t)q->nteams, sizeof(SvTeam *));
    in->qrt = q;
}

void qrt_finish(Interp *in)
{
    QRuntime *q = in->qrt;
    if (!q) return;
    pool_free(q->pool);
    for (int i = 0; i < q->nteams; i++)
        if (q->teams[i]) sv_team_free(q->teams[i]);
    free(q->teams);
    free(q);
    in->qrt = NULL;
}

static void *mem_reserve(Interp *in, size_t bytes, const atomic_int *cancel, char *err,
                         size_t errlen)
{
    char key[48];
    snprintf(key, sizeof key, "reserved:%zu", bytes);
    InstArg ia = { 0, false, true };
    return pool_acquire(in->qrt->pool, key, bytes, &ia, cancel, err, errlen);
}

static void mem_unreserve(Interp *in, void *token)
{
    if (token) pool_release(in->qrt->pool, token, 0);
}

static size_t mem_budget(Interp *in)
{
    if (in->qrt) return pool_budget(in->qrt->pool);
    return in->max_memory ? in->max_memory : pool_default_budget(); /* before the runtime starts */
}
void qrt_counts(Interp *in, unsigned long *calls, unsigned long *gates, size_t *peak)
{
    QRuntime *q = in->qrt;
    *calls = q ? atomic_load(&q->calls) : 0;
    *gates = q ? atomic_load(&q->gates) : 0;
    *peak = q ? pool_peak_bytes(q->pool) : 0;
}

static size_t mem_held(Interp *in) { return in->qrt ? pool_held_bytes(in->qrt->pool) : 0; }

void qrt_attach(Interp *in)
{
    in->hooks.mem_reserve = mem_reserve;
    in->hooks.mem_unreserve = mem_unreserve;
    in->hooks.mem_budget = mem_budget;
    in->hooks.mem_held = mem_held;
}

void qrt_stats(Interp *in, FILE *out)
{
    QRuntime *q = in->qrt;
    if (!q) return;
    char held[32], budget[32];
    pool_format_bytes(held, sizeof held, pool_peak_bytes(q->pool));
    pool_format_bytes(budget, sizeof budget, pool_budget(q->pool));
    fprintf(out, "qh stats: %lu quantum calls, %lu gates, device memory peak %s of a %s budget\n",
            atomic_load(&q->calls), atomic_load(&q->gates), held, budget);
}

/* Kernel threads: a big state may use the cores that no other worker is
 * using (N workers = N busy cores). Teams are created on first need. */
static void give_threads(VM *vm, SvState *s)
{
    QRuntime *q = vm->in->qrt;
    /* --sync is the sequential baseline: one core */
    if (s->nq < SV_PAR_QUBITS || q->ncpu < 2 || vm->in->sync) {
        sv_set_threads(s, NULL, 1);
        return;
    }
    if (!vm->in->exec || !vm->is_task) {
        sv_set_threads(s, NULL, 1);
        return;
    }
    int idx = exec_current_worker();
    bool on_main = idx < 0;
    /* the cores others use: the other running tasks (this one is counted
     * among the busy workers), and the main thread unless it is waiting or
     * is the thread running this task */
    int others = exec_busy_workers(vm->in->exec) - 1;
    if (!on_main && !atomic_load_explicit(&vm->in->main_waiting, memory_order_relaxed)) others++;
    int free_cores = (int)q->ncpu - (others > 0 ? others : 0);
    if (free_cores < 2) {
        sv_set_threads(s, NULL, 1);
        return;
    }
    if (on_main) idx = q->nteams - 1;
    if (idx >= q->nteams) {
        sv_set_threads(s, NULL, 1);
        return;
    }
    if (!q->teams[idx]) q->teams[idx] = sv_team_new((int)q->ncpu);
    sv_set_threads(s, q->teams[idx], free_cores);
}

static bool sleep_latency(VM *vm, double secs)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (vm_check_interrupt(vm)) return false;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double el = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) * 1e-9;
        if (el >= secs) return true;
        double left = secs - el;
        if (left > 0.005) left = 0.005;
        struct timespec d = { 0, (long)(left * 1e9) };
        nanosleep(&d, NULL);
    }
}

/* a state that goes distributed is led from rank 0 */
static bool goes_distributed(Interp *in, const ObjDevice *dev)
{
    return !dev->mixed && qdist_wanted(in, dev->wires, dev->distributed);
}

bool qrt_may_travel(Interp *in, const ObjFunc *f)
{
    return f->device.t != T_DEVICE || !goes_distributed(in, AS_DEV(f->device));
}

Value qrt_run(VM *vm, ObjFunc *f, uint64_t seed, uint64_t index, Value *slots, const Node *site)
{
    return qrt_run_rec(vm, f, seed, index, slots, site, NULL);
}

/* The results of a broadcast call's members stacked: numbers into a 1-d
 * array, arrays of one shape into one array with the batch first, lists of
 * one length element by element; anything else as a list. */
static Value stack_members(VM *vm, const Value *res, int n, const Node *site)
{
    bool nums = true, arrs = true, lists = true;
    for (int i = 0; i < n; i++) {
        nums &= res[i].t == T_NUM || res[i].t == T_BOOL;
        arrs &= res[i].t == T_ARRAY;
        lists &= res[i].t == T_LIST && AS_LIST(res[i])->len == AS_LIST(res[0])->len;
    }
    if (arrs) {
        for (int i = 1; i < n && arrs; i++) {
            const Array *x = AS_ARR(res[0]), *y = AS_ARR(res[i]);
            arrs = ar_ndim(x) == ar_ndim(y) &&
                   memcmp(ar_shape(x), ar_shape(y), (size_t)ar_ndim(x) * sizeof(size_t)) == 0;
        }
    }
    ObjList *l = list_new((size_t)n);
    for (int i = 0; i < n; i++) {
        incref(res[i]);
        list_push(l, res[i]);
    }
    Value lv = v_obj(&l->h);
    if (nums || arrs) {
        Value r = vm_call(vm, builtin_named("array"), 1, &lv, (Node *)site);
        decref(lv);
        return r;
    }
    if (lists) {
        size_t m = AS_LIST(res[0])->len;
        ObjList *o = list_new(m);
        Value ov = v_obj(&o->h);
        Value *col = xmalloc((size_t)n * sizeof(Value));
        for (size_t j = 0; j < m; j++) {
            for (int i = 0; i < n; i++) col[i] = AS_LIST(res[i])->v[j];
            Value c = stack_members(vm, col, n, site);
            if (IS_EXC(c)) {
                free(col);
                decref(ov);
                decref(lv);
                return c;
            }
            list_push(o, c);
        }
        free(col);
        decref(lv);
        return ov;
    }
    return lv;
}

static Value run_inner(VM *vm, ObjFunc *f, uint64_t seed, uint64_t index, Value *slots,
                       const Node *site, QRec *grec, QRecord *rec);

Value qrt_run_rec(VM *vm, ObjFunc *f, uint64_t seed, uint64_t index, Value *slots, const Node *site,
                  QRec *grec)
{
    return run_inner(vm, f, seed, index, slots, site, grec, NULL);
}

/* A call on a distributed statevector (qdist.h): the state instead of a
 * pooled instance; the rest as any call. */
static Value run_distributed(VM *vm, ObjFunc *f, uint64_t seed, uint64_t index, Value *slots,
                             const Node *site, QRec *grec, QRecord *rec)
{
    ObjDevice *dev = AS_DEV(f->device);
    int nq = dev->wires;
    if (grec || dev->nshotv) {
        for (int i = 0; i < f->p->nlocals; i++) decref(slots[i]);
        if (grec) /* the differentiation's error names the function */
            return vm_error(
                vm, site, "gradients are not available on a distributed device (distributed=true)");
        return vm_error(vm, site, "%s(): shot vectors are not available on a distributed device",
                        f->p->name);
    }
    const atomic_int *cancel = vm->cancel ? vm->cancel : &vm->in->interrupt;
    char err[400];
    QDState *ds = qdist_acquire(vm->in, nq, cancel, err, sizeof err);
    if (!ds) {
        for (int i = 0; i < f->p->nlocals; i++) decref(slots[i]);
        if (atomic_load(cancel)) {
            vm_error(vm, site, "interrupted");
            vm->err.interrupted = true;
            return v_exc();
        }
        return vm_error(vm, site, "%s(): distributed device with %d wires: %s", f->p->name, nq,
                        err);
    }
    size_t bytes = qdist_local_bytes(vm->in, nq);
    vm->dev_bytes += bytes;
    QCtx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.ds = ds;
    ctx.nq = nq;
    ctx.dev = dev;
    ctx.shots = dev->shots;
    ctx.rec = rec;
    rng_seed2(&ctx.rng, dev->has_seed ? dev->seed : seed, index);
    QCtx *saved = vm->q;
    vm->q = &ctx;
    Value r = eval_run_body(vm, f, slots, site);
    vm->q = saved;
    vm->dev_bytes -= bytes;
    qdist_release(ds);
    return r;
}

static Value run_inner(VM *vm, ObjFunc *f, uint64_t seed, uint64_t index, Value *slots,
                       const Node *site, QRec *grec, QRecord *rec)
{
    QRuntime *q = vm->in->qrt;
    if (f->device.t != T_DEVICE) {
        /* a qfn without a device: a background classical (or hybrid) function */
        QCtx *saved = vm->q;
        vm->q = NULL;
        Value r = eval_run_body(vm, f, slots, site);
        vm->q = saved;
        return r;
    }
    ObjDevice *dev = AS_DEV(f->device);
    atomic_fetch_add(&q->calls, 1);
    if (dev->latency > 0 && !sleep_latency(vm, dev->latency)) {
        for (int i = 0; i < f->p->nlocals; i++) decref(slots[i]);
        return v_exc();
    }
    char err[256];
    if (goes_distributed(vm->in, dev))
        return run_distributed(vm, f, seed, index, slots, site, grec, rec);
    const char *key = dev->key;
    InstArg ia = { dev->wires, dev->mixed, false };
    int nq = dev->wires;
    const atomic_int *cancel = vm->cancel ? vm->cancel : &vm->in->interrupt;
    size_t bytes = dev->mixed ? dm_bytes(nq) : sv_bytes(nq);
    /* a call made while this VM's calls hold states (a nested call) cannot
     * wait for memory: its callers would never give theirs back */
    bool nested = vm->dev_bytes > 0;
    QInst *inst =
        nested ? pool_acquire_nested(q->pool, key, bytes, &ia, vm->dev_bytes, err, sizeof err)
               : pool_acquire(q->pool, key, bytes, &ia, cancel, err, sizeof err);
    if (!inst) {
        for (int i = 0; i < f->p->nlocals; i++) decref(slots[i]);
        if (!nested && atomic_load(cancel)) {
            vm_error(vm, site, "interrupted");
            vm->err.interrupted = true;
            return v_exc();
        }
        if (nested)
            return vm_error(
                vm, site,
                "%s(): a %d-wire device %s (--max-memory): a nested call cannot wait for memory "
                "its callers hold",
                f->p->name, nq, err);
        return vm_error(vm, site, "%s(): device with %d wires: %s", f->p->name, nq, err);
    }
    vm->dev_bytes += bytes;
    SvState *s = inst->mixed ? &inst->d.v : &inst->s; /* the vector the kernels run on */
    give_threads(vm, s);
    QCtx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.s = inst->mixed ? NULL : s;
    ctx.dm = inst->mixed ? &inst->d : NULL;
    ctx.nq = nq;
    ctx.dev = dev;
    ctx.grec = grec;
    ctx.rec = rec;
    rng_seed2(&ctx.rng, dev->has_seed ? dev->seed : seed, index);
    ctx.shots = dev->shots;
    if (grec) qrec_shots(grec, ctx.shots != 0);
    QCtx *saved = vm->q;
    vm->q = &ctx;
    Value r;
    if (dev->nshotv && grec) {
        for (int i = 0; i < f->p->nlocals; i++) decref(slots[i]);
        r = vm_error(
            vm, site,
            "a device with a shot vector cannot be differentiated; use one number of shots");
    } else if (grec || rec) {
        r = eval_run_body(vm, f, slots, site);
    } else {
        /* A shot vector runs the body once per entry (a fresh state, that
         * many shots), the results in a list. A gate given an array of
         * parameters (broadcasting) makes the run member 0 of a batch: the
         * other members run after it, each from a fresh state with its own
         * values, and the results are stacked. */
        int np = f->p->nparams, nl = f->p->nlocals;
        Value *args = xmalloc(((size_t)np + 1) * sizeof(Value));
        for (int i = 0; i < np; i++) {
            args[i] = slots[i];
            incref(args[i]);
        }
        int nrun = dev->nshotv ? dev->nshotv : 1;
        ObjList *out = dev->nshotv ? list_new((size_t)nrun) : NULL;
        r = v_nil();
        for (int e = 0; e < nrun; e++) {
            if (e > 0) {
                inst_reset(inst);
                for (int i = 0; i < nl; i++) slots[i] = i < np ? args[i] : v_unbound();
                for (int i = 0; i < np; i++) incref(args[i]);
            }
            ctx.shots = dev->nshotv ? dev->shotv[e] : dev->shots;
            ctx.bsize = ctx.bidx = 0;
            Value x = eval_run_body(vm, f, slots, site);
            if (!IS_EXC(x) && ctx.bsize > 1) {
                Value *res = xmalloc((size_t)ctx.bsize * sizeof(Value));
                res[0] = x;
                int got = 1;
                for (int b = 1; b < ctx.bsize; b++, got++) {
                    inst_reset(inst);
                    for (int i = 0; i < nl; i++) slots[i] = i < np ? args[i] : v_unbound();
                    for (int i = 0; i < np; i++) incref(args[i]);
                    ctx.shots = dev->nshotv ? dev->shotv[e] : dev->shots;
                    ctx.bidx = b;
                    res[b] = eval_run_body(vm, f, slots, site);
                    if (IS_EXC(res[b])) break;
                }
                if (got < ctx.bsize) {
                    x = res[got];
                    for (int i = 0; i < got; i++) decref(res[i]);
                } else {
                    x = stack_members(vm, res, ctx.bsize, site);
                    for (int i = 0; i < ctx.bsize; i++) decref(res[i]);
                }
                free(res);
            }
            if (IS_EXC(x)) {
                if (out) decref(v_obj(&out->h));
                out = NULL;
                r = x;
                break;
            }
            if (out)
                list_push(out, x);
            else
                r = x;
        }
        if (out) r = v_obj(&out->h);
        for (int i = 0; i < np; i++) decref(args[i]);
        free(args);
    }
    vm->q = saved;
    if (grec && !IS_EXC(r) && !qrec_after_body(grec, inst->mixed ? NULL : s, nq)) {
        decref(r);
        r = vm_error(vm, site, "%s", qrec_error(grec));
    }
    sv_set_threads(s, NULL, 1);
    vm->dev_bytes -= bytes;
    pool_release(q->pool, inst, !IS_EXC(r));
    if (ctx.copy_token) pool_release(q->pool, ctx.copy_token, 0);
    return r;
}

/* ---------------------------------------------------------------- devices */

static Value bi_device(VM *vm, Args *a)
{
    if (a->v[0].t != T_STR)
        return vm_error(vm, a->site, "device() needs a device name string, not %s",
                        type_name(a->v[0]));
    const char *name = AS_STR(a->v[0])->s;
    bool mixed = strcmp(name, "mixed") == 0;
    if (strcmp(name, "statevector") != 0 && !mixed)
        return vm_error(vm, a->site,
                        "unknown device \"%.40s\" (available: \"statevector\", \"mixed\")", name);
    Value *w = arg_kw(a, "wires"), *sh = arg_kw(a, "shots"), *sd = arg_kw(a, "seed"),
          *lat = arg_kw(a, "latency");
    Value *nz = arg_kw(a, "noise"), *dist = arg_kw(a, "distributed");
    Value wires = a->n > 1 ? a->v[1] : (w ? *w : v_nil());
    if (wires.t != T_NUM || wires.n != floor(wires.n) || wires.n < 1)
        return vm_error(vm, a->site, "device(): wires must be a positive integer");
    if (!mixed && wires.n > MAX_QUBITS)
        return vm_error(vm, a->site,
                        "device(): %g wires is too many (a statevector of %g wires needs 16·2^%g "
                        "bytes; at most %d)",
                        wires.n, wires.n, wires.n, MAX_QUBITS);
    if (mixed && wires.n > DM_MAX_WIRES)
        return vm_error(vm, a->site,
                        "device(): %g wires is too many for the mixed device (a density matrix of "
                        "%g wires needs 16·4^%g bytes; at most %d)",
                        wires.n, wires.n, wires.n, DM_MAX_WIRES);
    if (nz && nz->t != T_NIL) {
        if (!mixed)
            return vm_error(
                vm, a->site,
                "device(): noise= needs the mixed device: device(\"mixed\", wires=%g, noise=...)",
                wires.n);
        if (nz->t != T_FUNC || AS_FUNC(*nz)->p->is_qfn)
            return vm_error(vm, a->site,
                            "device(): noise must be a function fn(op) that returns the channels "
                            "to apply after op, not %s",
                            type_name(*nz));
        if (!AS_FUNC(*nz)->p->pure)
            return vm_error(vm, a->site,
                            "device(): the noise function %s() %s; it runs inside quantum calls "
                            "and must be pure",
                            AS_FUNC(*nz)->p->name,
                            AS_FUNC(*nz)->p->impure_why ? AS_FUNC(*nz)->p->impure_why
                                                        : "is not pure");
    }
    bool distributed = false;
    if (dist && dist->t != T_NIL) {
        if (dist->t != T_BOOL)
            return vm_error(vm, a->site, "device(): distributed must be true or false, not %s",
                            type_name(*dist));
        distributed = dist->b;
        if (distributed && mixed)
            return vm_error(vm, a->site,
                            "device(): distributed=true needs the statevector device (the mixed "
                            "device is not distributed)");
    }
    ObjDevice *d = (ObjDevice *)obj_alloc(sizeof(ObjDevice), T_DEVICE);
    snprintf(d->name, sizeof d->name, "%s", name);
    d->distributed = distributed;
    d->wires = (int)wires.n;
    d->mixed = mixed;
    snprintf(d->key, sizeof d->key, "%s:%d", mixed ? "mixed" : "statevector", d->wires);
    d->noise = v_nil();
    if (nz && nz->t == T_FUNC) {
        incref(*nz);
        d->noise = *nz;
    }
    Value dv = v_obj(&d->h);
    if (sh && sh->t == T_LIST) { /* a shot vector: one result per entry; [n, copies] repeats n */
        ObjList *l = AS_LIST(*sh);
        double total = 0;
        if (l->len == 0) {
            decref(dv);
            return vm_error(vm, a->site, "device(): a shot vector needs at least one entry");
        }
        for (size_t i = 0; i < l->len; i++) {
            Value e = l->v[i];
            double n = 0, copies = 1;
            if (e.t == T_NUM)
                n = e.n;
            else if (e.t == T_LIST && AS_LIST(e)->len == 2 && AS_LIST(e)->v[0].t == T_NUM &&
                     AS_LIST(e)->v[1].t == T_NUM) {
                n = AS_LIST(e)->v[0].n;
                copies = AS_LIST(e)->v[1].n;
            } else {
                decref(dv);
                return vm_error(vm, a->site,
                                "device(): a shot vector's entries are numbers of shots or [shots, "
                                "copies] pairs");
            }
            if (n != floor(n) || n < 1 || n > 1e9 || copies != floor(copies) || copies < 1) {
                decref(dv);
                return vm_error(vm, a->site,
                                "device(): shot vector entry %zu: shots and copies must be "
                                "positive integers (shots at most 1e9)",
                                i);
            }
            if (d->nshotv + copies > MAX_SHOTV) {
                decref(dv);
                return vm_error(vm, a->site, "device(): a shot vector of more than %d entries",
                                MAX_SHOTV);
            }
            for (int c = 0; c < (int)copies; c++) d->shotv[d->nshotv++] = (long)n;
            total += n * copies;
        }
        if (total > 1e9) {
            decref(dv);
            return vm_error(vm, a->site, "device(): at most 1e9 shots in all");
        }
        d->shots = (long)total;
    } else if (sh && sh->t != T_NIL) {
        if (sh->t != T_NUM || sh->n != floor(sh->n) || sh->n < 1 || sh->n > 1e9) {
            decref(dv);
            return vm_error(vm, a->site,
                            "device(): shots must be a positive integer (at most 1e9), or a list "
                            "of them (a shot vector)");
        }
        d->shots = (long)sh->n;
    }
    if (sd && sd->t != T_NIL) {
        if (sd->t != T_NUM || sd->n != floor(sd->n)) {
            decref(dv);
            return vm_error(vm, a->site, "device(): seed must be an integer");
        }
        d->seed = (uint64_t)(int64_t)sd->n;
        d->has_seed = true;
    }
    if (lat && lat->t != T_NIL) {
        if (lat->t != T_NUM || !(lat->n >= 0) || lat->n > 3600) {
            decref(dv);
            return vm_error(vm, a->site,
                            "device(): latency must be a number of seconds from 0 to 3600");
        }
        d->latency = lat->n;
    }
    return dv;
}

/* ---------------------------------------------------------------- gates */

static bool wire_value(VM *vm, Value v, int *w, const char *gate, const Node *site)
{
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
static int collect_wires(VM *vm, Value v, int *out, int max, const char *gate, const Node *site)
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

/* false, with "NAME: wires must be distinct" naming the first wire given
 * twice, when ws repeats one */
static bool wires_distinct(VM *vm, const int *ws, int nw, const char *name, const Node *site)
{
    for (int i = 0; i < nw; i++)
        for (int j = i + 1; j < nw; j++)
            if (ws[i] == ws[j]) {
                vm_error(vm, site, "%s: wires must be distinct (wire %d twice)", name, ws[i]);
                return false;
            }
    return true;
}


/* Gate makers: PARAMS..., WIRES... | wires=[...] */
/* the gate of a gate builtin (looked up by name once, at start-up) */
static const SvGateInfo *gate_of(const BuiltinDef *d);

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

static Value bi_gate(VM *vm, Args *a)
{
    const SvGateInfo *gi = gate_of(a->def);
    ObjOp *p = op_new(OPK_GATE);
    Value pv = v_obj(&p->h);
    SvOp *op = &p->op;
    op->gate = gi->gate;
    op->nparams = gi->nparams;
    int pos = 0;
    int special = gi->gate == SV_QUBITUNITARY || gi->gate == SV_BASISSTATE;
    if (a->n < gi->nparams + special) {
        decref(pv);
        return vm_error(vm, a->site, "%s needs %d parameter%s and its wires", gi->name,
                        gi->nparams + special, gi->nparams + special == 1 ? "" : "s");
    }
    /* parameter broadcasting: a 1-d array of values for a parameter */
    for (int i = 0; i < gi->nparams; i++) {
        Value v = a->v[i];
        if (track_is_arr(v)) {
            decref(pv);
            return vm_error(vm, a->site,
                            "%s: a differentiated array as a parameter (broadcasting) cannot be "
                            "differentiated: call the function once per value",
                            gi->name);
        }
        if (v.t == T_LIST) { /* a list of numbers broadcasts like an array of them */
            ObjList *l =
                AS_LIST(v); /* (its other entries are checked by the member that reads them) */
            if (l->len == 0 || (l->v[0].t != T_NUM && l->v[0].t != T_BOOL))
                continue; /* refused below: not a number */
            if (l->len > 1000000) {
                decref(pv);
                return vm_error(vm, a->site, "%s: parameter %d: more than 1000000 broadcast values",
                                gi->name, i + 1);
            }
            int nb = (int)l->len;
            if (p->nb && nb != p->nb) {
                decref(pv);
                return vm_error(vm, a->site,
                                "%s: broadcast parameters of different sizes (%d and %d)", gi->name,
                                p->nb, nb);
            }
            p->nb = nb;
            continue;
        }
        if (v.t != T_ARRAY) continue;
        Array *ar = AS_ARR(v);
        if (ar_ndim(ar) != 1 || ar_is_complex(ar) || ar_size(ar) == 0 || ar_size(ar) > 1000000) {
            char sh[64];
            ar_shape_str(ar, sh, sizeof sh);
            decref(pv);
            return vm_error(vm, a->site,
                            "%s: parameter %d: an array of parameters (broadcasting) must be 1-d, "
                            "real and not empty, not of shape %s",
                            gi->name, i + 1, sh);
        }
        int nb = (int)ar_size(ar);
        if (p->nb && nb != p->nb) {
            decref(pv);
            return vm_error(vm, a->site, "%s: broadcast parameters of different sizes (%d and %d)",
                            gi->name, p->nb, nb);
        }
        p->nb = nb;
    }
    if (p->nb) { /* the sources are held, not copied: a member reads its own entry (op_stmt) */
        for (int i = 0; i < gi->nparams; i++) {
            Value v = a->v[i];
            if (track_is(v)) {
                decref(pv);
                return vm_error(vm, a->site,
                                "%s: a differentiated parameter beside a broadcast one cannot be "
                                "differentiated",
                                gi->name);
            }
            if (v.t == T_ARRAY || v.t == T_LIST) {
                incref(v);
                p->bsrc[i] = v;
            } else if (v.t != T_NUM && v.t != T_BOOL) {
                decref(pv);
                return vm_error(vm, a->site, "%s: parameter %d must be a real number, not %s",
                                gi->name, i + 1, type_name(v));
            }
            if (!bcast_param(p, i, 0, &op->params[i])) {
                decref(pv);
                return vm_error(vm, a->site, "%s: parameter %d is not a finite real number",
                                gi->name, i + 1);
            }
        }
        pos = gi->nparams;
    }
    for (int i = 0; i < gi->nparams && !p->nb; i++, pos++) {
        Value v = a->v[pos];
        double d;
        AdNode node;
        bool terr;
        if (!track_number(vm, v, &d, &node, a->site, &terr)) {
            decref(pv);
            if (terr) return v_exc();
            return vm_error(vm, a->site, "%s: parameter %d must be a real number, not %s", gi->name,
                            i + 1, type_name(v));
        }
        if (!isfinite(d)) {
            decref(pv);
            return vm_error(vm, a->site, "%s: parameter %d is not finite (%g)", gi->name, i + 1, d);
        }
        op->params[i] = d;
        p->pnode[i] = node;
        if (node != AD_NONE) {
            p->tracked = true;
            p->ptape = vm->ad->id;
        }
    }
    Value special_arg = v_nil();
    if (special) special_arg = a->v[pos++];
    Value *wk = arg_kw(a, "wires");
    int nw;
    if (wk) {
        if (pos < a->n) {
            decref(pv);
            return vm_error(vm, a->site,
                            "%s: give wires either as arguments or as wires=, not both", gi->name);
        }
        nw = collect_wires(vm, *wk, op->wires, SV_MAX_WIRES, gi->name, a->site);
    } else if (pos == a->n - 1 && a->v[pos].t != T_NUM) {
        nw = collect_wires(vm, a->v[pos], op->wires, SV_MAX_WIRES, gi->name, a->site);
    } else {
        nw = 0;
        for (; pos < a->n; pos++) {
            if (nw >= SV_MAX_WIRES) {
                decref(pv);
                return vm_error(vm, a->site, "%s: too many wires", gi->name);
            }
            if (!wire_value(vm, a->v[pos], &op->wires[nw++], gi->name, a->site)) {
                decref(pv);
                return v_exc();
            }
        }
    }
    if (nw < 0) {
        decref(pv);
        return v_exc();
    }
    op->nwires = nw;
    if (gi->nwires >= 0 && nw != gi->nwires) {
        decref(pv);
        return vm_error(vm, a->site, "%s acts on %d wire%s, but %d %s given", gi->name, gi->nwires,
                        gi->nwires == 1 ? "" : "s", nw, nw == 1 ? "was" : "were");
    }
    if (nw == 0) {
        decref(pv);
        return vm_error(vm, a->site, "%s needs at least one wire", gi->name);
    }
    if (!wires_distinct(vm, op->wires, nw, gi->name, a->site)) {
        decref(pv);
        return v_exc();
    }
    if (gi->gate == SV_QUBITUNITARY) {
        Value m = special_arg;
        if (m.t == T_LIST) {
            Value arr = vm_call(vm, builtin_named("array"), 1, &m, a->site);
            if (IS_EXC(arr)) {
                decref(pv);
                return arr;
            }
            m = arr;
        } else
            incref(m);
        if (track_is(m)) {
            decref(m);
            decref(pv);
            return vm_error(vm, a->site,
                            "QubitUnitary: a matrix made from differentiated values cannot be "
                            "differentiated (use rotation gates)");
        }
        if (m.t != T_ARRAY) {
            decref(m);
            decref(pv);
            return vm_error(vm, a->site, "QubitUnitary: the matrix must be an array");
        }
        Array *ar = AS_ARR(m);
        size_t d = (size_t)1 << nw;
        if (nw > SV_MAX_DENSE || ar_ndim(ar) != 2 || ar_shape(ar)[0] != d || ar_shape(ar)[1] != d) {
            char sh[64];
            ar_shape_str(ar, sh, sizeof sh);
            decref(m);
            decref(pv);
            return vm_error(
                vm, a->site,
                "QubitUnitary: a matrix of shape %s does not fit %d wire%s (needs (%zu, %zu))", sh,
                nw, nw == 1 ? "" : "s", d, d);
        }
        p->matrix = xmalloc(d * d * sizeof(cplx));
        for (size_t i = 0; i < d * d; i++) {
            ArScalar s = ar_item(ar, i);
            p->matrix[i] = s.re + (s.is_complex ? s.im : 0) * I;
        }
        decref(m);
        op->matrix = p->matrix;
        /* unitarity check: U U^dagger = I within 1e-8 */
        for (size_t i = 0; i < d; i++)
            for (size_t j = 0; j < d; j++) {
                cplx acc = 0;
                for (size_t k = 0; k < d; k++)
                    acc += p->matrix[i * d + k] * conj(p->matrix[j * d + k]);
                if (cabs(acc - (i == j ? 1.0 : 0.0)) > 1e-8) {
                    decref(pv);
                    return vm_error(vm, a->site, "QubitUnitary: the matrix is not unitary");
                }
            }
    }
    if (gi->gate == SV_BASISSTATE) {
        Value bits = special_arg;
        uint64_t b = 0;
        size_t nb;
        if (bits.t == T_LIST)
            nb = AS_LIST(bits)->len;
        else if (bits.t == T_ARRAY)
            nb = ar_size(AS_ARR(bits));
        else {
            decref(pv);
            return vm_error(vm, a->site, "BasisState: the state must be a list of 0/1");
        }
        if ((int)nb != nw) {
            decref(pv);
            return vm_error(vm, a->site, "BasisState: %zu bits for %d wires", nb, nw);
        }
        for (size_t i = 0; i < nb; i++) {
            double x = bits.t == T_LIST
                           ? (AS_LIST(bits)->v[i].t == T_NUM ? AS_LIST(bits)->v[i].n : -1)
                           : ar_item(AS_ARR(bits), i).re;
            if (x != 0 && x != 1) {
                decref(pv);
                return vm_error(vm, a->site, "BasisState: bits must be 0 or 1");
            }
            if (x == 1) b |= (uint64_t)1 << i;
        }
        op->bits = b;
    }
    return pv;
}

static bool is_callable(Value v);
static Value make_mod(VM *vm, Value fn, bool adjoint, const int *ctrl, int nctrl, const Node *site);

static Value bi_adjoint(VM *vm, Args *a)
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

static Value bi_ctrl(VM *vm, Args *a)
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

/* ---------------------------------------------------------------- observables */

/* A gate that is an observable (I, X, Y, Z, H on one wire; H = (X + Z)/sqrt 2)
 * as Pauli terms; *id: Identity's wire bit */
static bool as_terms_gate(VM *vm, Value v, SvTerm **terms, int *n, uint64_t *id, const Node *site)
{
    if (v.t != T_OP) {
        vm_error(vm, site, "expected an observable, not %s", type_name(v));
        return false;
    }
    ObjOp *p = AS_OP(v);
    if (p->kind == OPK_CHAN) {
        vm_error(vm, site, "%s is a noise channel, not an observable",
                 dm_channel_info((DmChannel)p->chan)->name);
        return false;
    }
    SvOp *o = &p->op;
    if (o->nctrl || o->nwires != 1 ||
        (o->gate != SV_IDENTITY && o->gate != SV_PAULIX && o->gate != SV_PAULIY &&
         o->gate != SV_PAULIZ && o->gate != SV_HADAMARD)) {
        vm_error(vm, site,
                 "%s is not an observable (observables: PauliX, PauliY, PauliZ, Hadamard, "
                 "Identity, their products and sums)",
                 sv_gate_info(o->gate)->name);
        return false;
    }
    uint64_t m = (uint64_t)1 << o->wires[0];
    *terms = xcalloc(2, sizeof(SvTerm));
    *n = 1;
    SvTerm *t = *terms;
    switch (o->gate) {
    case SV_IDENTITY:
        t[0].coeff = 1;
        *id = m;
        break;
    case SV_PAULIX:
        t[0].coeff = 1;
        t[0].x = m;
        break;
    case SV_PAULIY:
        t[0].coeff = 1;
        t[0].x = t[0].z = m;
        break;
    case SV_PAULIZ:
        t[0].coeff = 1;
        t[0].z = m;
        break;
    default:
        t[0].coeff = t[1].coeff = M_SQRT1_2;
        t[0].x = m;
        t[1].z = m;
        *n = 2;
    }
    return true;
}

/* The Pauli-sum form of an operator: a number, an observable as it is, or
 * an observable gate, and each term's Identity wires (*idw: a new array,
 * like *terms; NULL when not wanted). */
static bool as_terms(VM *vm, Value v, SvTerm **terms, uint64_t **idw, int *n, const Node *site)
{
    if (idw) *idw = NULL;
    uint64_t id = 0;
    if (v.t == T_NUM) {
        *terms = xcalloc(1, sizeof(SvTerm));
        (*terms)[0].coeff = v.n;
        *n = 1;
    } else if (v.t == T_OP && AS_OP(v)->kind == OPK_OBS) {
        ObjOp *p = AS_OP(v);
        *terms = sv_terms_dup(p->terms, p->nterms);
        if (!*terms) {
            vm_error(vm, site, "out of memory");
            return false;
        }
        *n = p->nterms;
        if (idw) {
            *idw = xcalloc((size_t)p->nterms + 1, sizeof(uint64_t));
            if (p->idw) memcpy(*idw, p->idw, (size_t)p->nterms * sizeof(uint64_t));
        }
        return true;
    } else if (!as_terms_gate(vm, v, terms, n, &id, site)) {
        return false;
    }
    if (idw) {
        *idw = xcalloc((size_t)*n + 1, sizeof(uint64_t));
        for (int i = 0; i < *n; i++) (*idw)[i] = id;
    }
    return true;
}

/* merges equal Pauli words (their Identity wires too; terms with a block
 * stay apart) and drops zero terms */
static int simplify(SvTerm *t, uint64_t *idw, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        int j = k;
        if (t[i].kind == SVB_NONE)
            for (j = 0; j < k; j++)
                if (t[j].kind == SVB_NONE && t[j].x == t[i].x && t[j].z == t[i].z) {
                    t[j].coeff += t[i].coeff;
                    idw[j] |= idw[i];
                    break;
                }
        if (j == k) {
            t[k] = t[i];
            idw[k] = idw[i];
            k++;
        }
    }
    int m = 0;
    for (int i = 0; i < k; i++) {
        if (t[i].coeff == 0) {
            free((void *)t[i].m);
            free((void *)t[i].ket);
            continue;
        }
        t[m] = t[i];
        idw[m] = idw[i] & ~(t[i].x | t[i].z);
        m++;
    }
    return m;
}

/* takes t and idw (n entries each) */
static Value make_obs(SvTerm *t, uint64_t *idw, int n)
{
    ObjOp *p = op_new(OPK_OBS);
    p->terms = t;
    p->idw = idw;
    p->nterms = simplify(t, idw, n);
    return v_obj(&p->h);
}

/* the binop slot: operators with operators and real coefficients; any
 * other partner is not ours (== compares identity, by default) */
static Value op_binop(VM *vm, BinOp op, Value a, Value b, const Node *site)
{
    SvTerm *ta = NULL, *tb = NULL;
    uint64_t *ia = NULL, *ib = NULL;
    int na = 0, nb = 0;
    bool known_a = a.t == T_OP || a.t == T_NUM || a.t == T_COMPLEX,
         known_b = b.t == T_OP || b.t == T_NUM || b.t == T_COMPLEX;
    if (op == OP_EQ || op == OP_NE || !known_a || !known_b) return v_notimpl();
    if (op == OP_MUL && (a.t == T_NUM || b.t == T_NUM)) {
        double c = a.t == T_NUM ? a.n : b.n;
        Value o = a.t == T_NUM ? b : a;
        if (!as_terms(vm, o, &ta, &ia, &na, site)) return v_exc();
        for (int i = 0; i < na; i++) ta[i].coeff *= c;
        return make_obs(ta, ia, na);
    }
    if (op == OP_DIV && b.t == T_NUM && a.t == T_OP) {
        if (b.n == 0) return vm_error(vm, site, "division by zero");
        if (!as_terms(vm, a, &ta, &ia, &na, site)) return v_exc();
        for (int i = 0; i < na; i++) ta[i].coeff /= b.n;
        return make_obs(ta, ia, na);
    }
    if ((a.t == T_COMPLEX || b.t == T_COMPLEX) && (op == OP_MUL || op == OP_ADD || op == OP_SUB))
        return vm_error(vm, site, "observables take real coefficients only");
    if (op == OP_ADD || op == OP_SUB || op == OP_MATMUL) {
        if (op == OP_MATMUL && (a.t == T_NUM || b.t == T_NUM))
            return vm_error(vm, site,
                            "@ of an operator needs another operator (use * for a coefficient)");
        if (!as_terms(vm, a, &ta, &ia, &na, site)) return v_exc();
        if (!as_terms(vm, b, &tb, &ib, &nb, site)) {
            sv_terms_free(ta, na);
            free(ia);
            return v_exc();
        }
        if (op == OP_MATMUL) {
            if ((size_t)na * (size_t)nb > 1000000) {
                sv_terms_free(ta, na);
                sv_terms_free(tb, nb);
                free(ia);
                free(ib);
                return vm_error(vm, site, "tensor product too large");
            }
            SvTerm *t = xcalloc((size_t)na * (size_t)nb + 1, sizeof(SvTerm));
            uint64_t *id = xmalloc(((size_t)na * (size_t)nb + 1) * sizeof(uint64_t));
            int k = 0;
            char err[256];
            for (int i = 0; i < na; i++)
                for (int j = 0; j < nb; j++) {
                    if (sv_term_tensor(&ta[i], &tb[j], &t[k], err, sizeof err) != 0) {
                        sv_terms_free(ta, na);
                        sv_terms_free(tb, nb);
                        free(ia);
                        free(ib);
                        sv_terms_free(t, k);
                        free(id);
                        return vm_error(vm, site, "%s", err);
                    }
                    id[k++] = ia[i] | ib[j]; /* an Identity on a Pauli's wire is that Pauli */
                }
            sv_terms_free(ta, na);
            sv_terms_free(tb, nb);
            free(ia);
            free(ib);
            return make_obs(t, id, k);
        }
        SvTerm *t = xmalloc((size_t)(na + nb + 1) * sizeof(SvTerm));
        uint64_t *id = xmalloc((size_t)(na + nb + 1) * sizeof(uint64_t));
        memcpy(t, ta, (size_t)na * sizeof(SvTerm)); /* the blocks move over */
        memcpy(id, ia, (size_t)na * sizeof(uint64_t));
        for (int j = 0; j < nb; j++) {
            t[na + j] = tb[j];
            id[na + j] = ib[j];
            if (op == OP_SUB) t[na + j].coeff = -t[na + j].coeff;
        }
        free(ta);
        free(tb);
        free(ia);
        free(ib);
        return make_obs(t, id, na + nb);
    }
    return vm_error(vm, site, "unsupported operation %s on operators", op_symbol(op));
}

static Value op_unop(VM *vm, BinOp op, Value a, const Node *site)
{
    if (op == OP_INVERT) return v_notimpl();
    if (op == OP_POS) {
        incref(a);
        return a;
    }
    return op_binop(vm, OP_MUL, v_num(-1), a, site);
}

static Value bi_hamiltonian(VM *vm, Args *a)
{
    Value c = a->v[0], o = a->v[1];
    Value cl = c, tmp = v_nil();
    if (c.t == T_ARRAY) {
        tmp = vm_call(vm, builtin_named("tolist"), 1, &c, a->site);
        if (IS_EXC(tmp)) return tmp;
        cl = tmp;
    }
    if (cl.t != T_LIST || o.t != T_LIST) {
        decref(tmp);
        return vm_error(vm, a->site, "hamiltonian(coeffs, ops) needs two lists");
    }
    ObjList *cs = AS_LIST(cl), *os = AS_LIST(o);
    if (cs->len != os->len) {
        decref(tmp);
        return vm_error(vm, a->site, "hamiltonian(): %zu coefficients for %zu operators", cs->len,
                        os->len);
    }
    SvTerm *all = xmalloc((os->len * 2 + 1) * sizeof(SvTerm));
    uint64_t *ids = xmalloc((os->len * 2 + 1) * sizeof(uint64_t));
    int n = 0, cap = (int)os->len * 2 + 1;
    for (size_t i = 0; i < os->len; i++) {
        if (cs->v[i].t != T_NUM) {
            sv_terms_free(all, n);
            free(ids);
            decref(tmp);
            return vm_error(vm, a->site, "hamiltonian(): coefficients must be real numbers");
        }
        SvTerm *t;
        uint64_t *id;
        int k;
        if (!as_terms(vm, os->v[i], &t, &id, &k, a->site)) {
            sv_terms_free(all, n);
            free(ids);
            decref(tmp);
            return v_exc();
        }
        if (n + k > cap) {
            cap = (n + k) * 2;
            all = xrealloc(all, (size_t)cap * sizeof(SvTerm));
            ids = xrealloc(ids, (size_t)cap * sizeof(uint64_t));
        }
        for (int j = 0; j < k; j++) {
            t[j].coeff *= cs->v[i].n;
            ids[n] = id[j];
            all[n++] = t[j];
        }
        free(t);
        free(id);
    }
    decref(tmp);
    return make_obs(all, ids, n);
}

/* The wires of Hermitian/Projector: trailing arguments from index pos, or wires= */
static int obs_wires(VM *vm, Args *a, int pos, int *ws, const char *name)
{
    Value *wk = arg_kw(a, "wires");
    int nw = 0;
    if (wk) {
        if (pos < a->n) {
            vm_error(vm, a->site, "%s: give wires either as arguments or as wires=, not both",
                     name);
            return -1;
        }
        nw = collect_wires(vm, *wk, ws, SV_MAX_WIRES, name, a->site);
    } else if (pos == a->n - 1 && a->v[pos].t != T_NUM) {
        nw = collect_wires(vm, a->v[pos], ws, SV_MAX_WIRES, name, a->site);
    } else {
        for (; pos < a->n; pos++) {
            if (nw >= SV_MAX_WIRES) {
                vm_error(vm, a->site, "%s: too many wires", name);
                return -1;
            }
            if (!wire_value(vm, a->v[pos], &ws[nw++], name, a->site)) return -1;
        }
    }
    if (nw < 0) return -1;
    if (nw == 0) {
        vm_error(vm, a->site, "%s needs its wires", name);
        return -1;
    }
    return wires_distinct(vm, ws, nw, name, a->site) ? nw : -1;
}

/* A 1-d or 2-d numeric value (array, or nested lists) as an array (new reference). */
static Value as_array_arg(VM *vm, Value v, const char *name, const char *what, const Node *site)
{
    if (v.t == T_ARRAY) {
        incref(v);
        return v;
    }
    if (v.t == T_LIST) {
        Value r = vm_call(vm, builtin_named("array"), 1, &v, (Node *)site);
        if (IS_EXC(r) || r.t == T_ARRAY) return r;
        decref(r);
    }
    return vm_error(vm, site, "%s: %s must be an array or a list of numbers, not %s", name, what,
                    type_name(v));
}

static Value one_term_obs(SvTerm *t)
{
    uint64_t *id = xcalloc(2, sizeof(uint64_t));
    return make_obs(t, id, 1);
}

/* Hermitian(A, wires): the observable A (2^k x 2^k, Hermitian as NumPy's
 * allclose sees it) on k wires, the first one its most significant bit. */
static Value bi_hermitian(VM *vm, Args *a)
{
    int ws[SV_MAX_WIRES];
    int k = obs_wires(vm, a, 1, ws, "Hermitian");
    if (k < 0) return v_exc();
    if (k > SV_MAX_DENSE)
        return vm_error(vm, a->site, "Hermitian: at most %d wires, got %d", SV_MAX_DENSE, k);
    Value mv = as_array_arg(vm, a->v[0], "Hermitian", "the matrix", a->site);
    if (IS_EXC(mv)) return mv;
    Array *ar = AS_ARR(mv);
    size_t d = (size_t)1 << k;
    if (ar_ndim(ar) != 2 || ar_shape(ar)[0] != d || ar_shape(ar)[1] != d) {
        decref(mv);
        return vm_error(vm, a->site, "Hermitian: a matrix on %d wire%s must be %zux%zu", k,
                        k == 1 ? "" : "s", d, d);
    }
    cplx *m = xmalloc(d * d * sizeof(cplx));
    for (size_t e = 0; e < d * d; e++) {
        ArScalar sc = ar_item(ar, e);
        m[e] = sc.re + (sc.is_complex ? sc.im : 0) * I;
    }
    decref(mv);
    SvTerm *t = xcalloc(2, sizeof(SvTerm));
    t->coeff = 1;
    t->kind = SVB_DENSE;
    t->k = k;
    memcpy(t->wires, ws, (size_t)k * sizeof(int));
    t->m = m;
    char err[256];
    if (sv_obs_check(t, 1, SV_MAX_WIRES, "Hermitian", err, sizeof err) != 0) {
        sv_terms_free(t, 1);
        return vm_error(vm, a->site, "%s", err);
    }
    return one_term_obs(t);
}

/* Projector(state, wires): |b><b| for a basis state b (k bits) or
 * |phi><phi| for a state vector phi (2^k amplitudes, used as given). */
static Value bi_projector(VM *vm, Args *a)
{
    int ws[SV_MAX_WIRES];
    int k = obs_wires(vm, a, 1, ws, "Projector");
    if (k < 0) return v_exc();
    Value sv = as_array_arg(vm, a->v[0], "Projector", "the state", a->site);
    if (IS_EXC(sv)) return sv;
    Array *ar = AS_ARR(sv);
    size_t len = ar_size(ar);
    SvTerm *t = xcalloc(2, sizeof(SvTerm));
    t->coeff = 1;
    t->k = k;
    memcpy(t->wires, ws, (size_t)k * sizeof(int));
    if (ar_ndim(ar) == 1 && len == (size_t)k) {
        t->kind = SVB_BASIS;
        for (size_t i = 0; i < len; i++) {
            ArScalar sc = ar_item(ar, i);
            if ((sc.re != 0 && sc.re != 1) || (sc.is_complex && sc.im != 0)) {
                decref(sv);
                free(t);
                return vm_error(vm, a->site,
                                "Projector: a basis state has entries 0 and 1 (entry %zu is not)",
                                i);
            }
            if (sc.re == 1) t->bits |= (uint64_t)1 << i;
        }
    } else if (ar_ndim(ar) == 1 && k <= SV_MAX_KET && len == (size_t)1 << k) {
        t->kind = SVB_KET;
        cplx *v = xmalloc(len * sizeof(cplx));
        double nrm = 0;
        for (size_t i = 0; i < len; i++) {
            ArScalar sc = ar_item(ar, i);
            v[i] = sc.re + (sc.is_complex ? sc.im : 0) * I;
            nrm += creal(v[i] * conj(v[i]));
        }
        t->ket = v;
        if (!(nrm > 0)) {
            decref(sv);
            sv_terms_free(t, 1);
            return vm_error(vm, a->site, "Projector: the state vector is zero");
        }
    } else {
        decref(sv);
        free(t);
        return vm_error(vm, a->site,
                        "Projector: for %d wire%s the state must have %d entries (a basis state) "
                        "or %.0f (a state vector), got %zu",
                        k, k == 1 ? "" : "s", k, ldexp(1, k), len);
    }
    decref(sv);
    char err[256];
    if (sv_obs_check(t, 1, SV_MAX_WIRES, "Projector", err, sizeof err) != 0) {
        sv_terms_free(t, 1);
        return vm_error(vm, a->site, "%s", err);
    }
    return one_term_obs(t);
}

/* matrix(op, wires=n): the dense 2^n x 2^n matrix (complex array) */
static Value matrix_of_callable(VM *vm, Args *a);

static Value bi_matrix(VM *vm, Args *a)
{
    Value o = a->v[0];
    if (o.t != T_OP && is_callable(o)) return matrix_of_callable(vm, a);
    if (o.t != T_OP)
        return vm_error(vm, a->site,
                        "matrix() needs an operator or a function that applies gates, not %s",
                        type_name(o));
    if (a->n > 1)
        return vm_error(vm, a->site,
                        "matrix(op) takes one operator (arguments are for matrix(f, args...))");
    ObjOp *p = AS_OP(o);
    if (p->kind == OPK_CHAN)
        return vm_error(vm, a->site,
                        "matrix(): %s is a noise channel; it has Kraus matrices, not one matrix",
                        dm_channel_info((DmChannel)p->chan)->name);
    Value *wk = arg_kw(a, "wires");
    int maxw = 0;
    if (p->kind == OPK_GATE) {
        for (int i = 0; i < p->op.nwires; i++)
            if (p->op.wires[i] + 1 > maxw) maxw = p->op.wires[i] + 1;
        for (int i = 0; i < p->op.nctrl; i++)
            if (p->op.ctrl[i] + 1 > maxw) maxw = p->op.ctrl[i] + 1;
    } else {
        for (int i = 0; i < p->nterms; i++) {
            uint64_t m = p->terms[i].x | p->terms[i].z | (p->idw ? p->idw[i] : 0);
            if (m) {
                int hi = 64 - __builtin_clzll(m);
                if (hi > maxw) maxw = hi;
            }
            for (int j = 0; p->terms[i].kind != SVB_NONE && j < p->terms[i].k; j++)
                if (p->terms[i].wires[j] + 1 > maxw) maxw = p->terms[i].wires[j] + 1;
        }
    }
    int n = maxw ? maxw : 1;
    if (wk) {
        if (wk->t != T_NUM || wk->n != floor(wk->n) || wk->n < 1)
            return vm_error(vm, a->site, "matrix(): wires must be a positive integer");
        n = (int)wk->n;
        if (n < maxw)
            return vm_error(vm, a->site, "matrix(): the operator acts on wire %d, outside wires=%d",
                            maxw - 1, n);
    }
    if (n > 13)
        return vm_error(vm, a->site, "matrix(): %d wires make a %gx%g matrix; at most 13 wires", n,
                        ldexp(1, n), ldexp(1, n));
    size_t d = (size_t)1 << n;
    size_t shape[2] = { d, d };
    char err[AR_ERRLEN];
    Array *m = ar_zeros(AR_C128, 2, shape, err);
    if (!m) return vm_error(vm, a->site, "%s", err);
    cplx *out = ar_c128(m);
    bool blocks = false;
    for (int t = 0; p->kind == OPK_OBS && t < p->nterms; t++)
        blocks |= p->terms[t].kind != SVB_NONE;
    if (p->kind == OPK_OBS && blocks) {
        if (n > SV_MAX_DENSE) {
            ar_free(m);
            return vm_error(vm, a->site,
                            "matrix(): an observable with Hermitian or Projector factors on %d "
                            "wires (at most %d)",
                            n, SV_MAX_DENSE);
        }
        int ws[SV_MAX_DENSE];
        for (int i = 0; i < n; i++) ws[i] = i;
        char e2[256];
        if (sv_obs_matrix(p->terms, p->nterms, ws, n, out, e2, sizeof e2) != 0) {
            ar_free(m);
            return vm_error(vm, a->site, "matrix(): %s", e2);
        }
    } else if (p->kind == OPK_OBS) {
        for (int t = 0; t < p->nterms; t++) {
            SvTerm w = p->terms[t];
            uint64_t xm = 0, zm = 0;
            int ny = 0;
            for (int wire = 0; wire < n; wire++) {
                uint64_t bit = (uint64_t)1 << (n - 1 - wire), wb = (uint64_t)1 << wire;
                if (w.x & wb) xm |= bit;
                if (w.z & wb) zm |= bit;
                if ((w.x & wb) && (w.z & wb)) ny++;
            }
            /* P|k> = phase |k ^ xm>; Y = iXZ: phase i^ny (-1)^{popcount(k & zm)} */
            static const cplx ipow[4] = { 1, I, -1, -I };
            cplx iy = ipow[ny & 3];
            for (size_t k = 0; k < d; k++) {
                double sgn = (__builtin_popcountll(k & zm) & 1) ? -1 : 1;
                out[(k ^ xm) * d + k] += w.coeff * iy * sgn;
            }
        }
    } else {
        SvState s;
        if (sv_init(&s, n) != 0) {
            ar_free(m);
            return vm_error(vm, a->site, "matrix(): out of memory");
        }
        for (size_t col = 0; col < d; col++) {
            memset(s.amp, 0, d * sizeof(cplx));
            s.amp[col] = 1;
            if (sv_apply(&s, &p->op, err, sizeof err) != 0) {
                sv_free(&s);
                ar_free(m);
                return vm_error(vm, a->site, "%s", err);
            }
            for (size_t row = 0; row < d; row++) out[row * d + col] = s.amp[row];
        }
        sv_free(&s);
    }
    return arr_wrap(m);
}

/* ---------------------------------------------------------------- application */


/* Why: draw/specs/matrix/to_qasm see what a call applies. */
static void rec_op(QCtx *q, QasmKind kind, const SvOp *op, int chan, const double *cparams)
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
}

static void rec_meas(QCtx *q, const char *label, const int *wires, int nw)
{
    QRecord *r = q->rec;
    if (r->nmeas == r->capmeas) {
        r->capmeas = r->capmeas ? 2 * r->capmeas : 4;
        r->meas = xrealloc(r->meas, (size_t)r->capmeas * sizeof(QMeasRec));
    }
    QMeasRec *m = &r->meas[r->nmeas++];
    snprintf(m->label, sizeof m->label, "%s", label);
    m->nwires = nw > 64 ? 64 : nw;
    for (int i = 0; i < m->nwires; i++) m->wires[i] = wires[i];
}

/* The label of an observable for drawing: Z, Z@Z, X@Y, 𝓗 (sums and
 * Hermitian), |10⟩⟨10| (basis projectors), P (state projectors). */
static void obs_label(const SvTerm *t, int n, char *out, size_t len, int *wires, int *nw)
{
    uint64_t all = 0;
    for (int i = 0; i < n; i++) {
        all |= t[i].x | t[i].z;
        for (int j = 0; t[i].kind != SVB_NONE && j < t[i].k; j++)
            if (t[i].wires[j] < 64) all |= (uint64_t)1 << t[i].wires[j];
    }
    *nw = 0;
    for (int w = 0; w < 64; w++)
        if ((all >> w) & 1) wires[(*nw)++] = w;
    if (n != 1) {
        snprintf(out, len, "\xf0\x9d\x93\x97");
        return;
    } /* script H */
    size_t at = 0;
    out[0] = 0;
    if (!t[0].x && !t[0].z && t[0].kind == SVB_NONE) {
        snprintf(out, len, "I");
        return;
    }
    for (int w = 0; w < 64; w++) {
        bool x = (t[0].x >> w) & 1, z = (t[0].z >> w) & 1;
        if (!x && !z) continue;
        int k = snprintf(out + at, len - at, "%s%s", at ? "@" : "", x && z ? "Y" : x ? "X" : "Z");
        if (k < 0 || (size_t)k >= len - at) break;
        at += (size_t)k;
    }
    if (t[0].kind != SVB_NONE && at < len) {
        char blk[80];
        if (t[0].kind == SVB_DENSE)
            snprintf(blk, sizeof blk, "𝓗");
        else if (t[0].kind == SVB_KET || t[0].k > 16)
            snprintf(blk, sizeof blk, "P");
        else {
            char bits[17];
            for (int i = 0; i < t[0].k; i++) bits[i] = (char)('0' + ((t[0].bits >> i) & 1));
            bits[t[0].k] = 0;
            snprintf(blk, sizeof blk, "|%s⟩⟨%s|", bits, bits);
        }
        snprintf(out + at, len - at, "%s%s", at ? "@" : "", blk);
    }
    if (t[0].coeff != 1) {
        char tmp[96];
        snprintf(tmp, sizeof tmp, "%.3g·%s", t[0].coeff, out);
        snprintf(out, len, "%s", tmp);
    }
}

static Value op_stmt(VM *vm, Value opv, const Node *site);

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

/* Why: a channel as a statement: only the mixed device has mixed states. */
static Value chan_stmt(VM *vm, ObjOp *p, const Node *site)
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

/* the statement slot: an operator as a statement applies to the device */
static Value op_stmt(VM *vm, Value opv, const Node *site)
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
    int rc = q->ds   ? qdist_apply(q->ds, use, err, sizeof err)
             : q->dm ? dm_apply(q->dm, use, err, sizeof err)
                     : sv_apply(q->s, use, err, sizeof err);
    if (rc != 0) return vm_error(vm, site, "%s", err);
    if (q->rec) rec_op(q, QASM_GATE, &p->op, 0, NULL);
    atomic_fetch_add_explicit(&vm->in->qrt->gates, 1, memory_order_relaxed);
    if (q->dm && q->dev->noise.t == T_FUNC && !q->in_noise) return apply_noise(vm, q, opv, site);
    return v_nil();
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
    case QASM_GPHASE: return v_nil(); /* no effect on a state; under ctrl it became a PhaseShift */
    case QASM_MEASURE:
    case QASM_RESET: {
        if (q->capture)
            return vm_error(vm, site,
                            "a circuit with measure or reset inside adjoint(), ctrl() or matrix()");
        char err[256];
        int w = o->wires[0], r;
        if (o->kind == QASM_RESET && q->dm) { /* the reset channel: |0><0| and |0><1| */
            cplx k[8] = { 1, 0, 0, 0, 0, 1, 0, 0 };
            if (dm_apply_kraus(q->dm, &w, 1, 2, k, err, sizeof err) != 0)
                return vm_error(vm, site, "%s", err);
            r = 0;
        } else {
            r = q->ds   ? qdist_measure(q->ds, w, o->kind == QASM_RESET, &q->rng, err, sizeof err)
                : q->dm ? dm_measure(q->dm, w, o->kind == QASM_RESET, &q->rng, err, sizeof err)
                        : sv_measure(q->s, w, o->kind == QASM_RESET, &q->rng, err, sizeof err);
            if (r < 0) return vm_error_from(vm, site, "measure", err);
        }
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
    des_note(sc, id, &m->h);
    Value f = des_value(sc);
    if (IS_EXC(f)) {
        decref(mv);
        return f;
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

static bool is_callable(Value v) { return type_of(v)->call != NULL; }

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


/* ---------------------------------------------------------------- recording a call */

void qrt_record_free(QRecord *rec)
{
    qasm_free(&rec->c);
    free(rec->meas);
    rec->meas = NULL;
    rec->nmeas = rec->capmeas = 0;
}

Value qrt_record(VM *vm, Value fv, int nargs, const Value *args, const Node *site, QRecord *rec)
{
    memset(rec, 0, sizeof *rec);
    qasm_init(&rec->c, 0, 0);
    if (fv.t != T_FUNC || !AS_FUNC(fv)->p->is_qfn || AS_FUNC(fv)->device.t != T_DEVICE)
        return vm_error(vm, site,
                        "needs a quantum function with a device (qfn ... on DEVICE), not %s",
                        type_name(fv));
    ObjFunc *f = AS_FUNC(fv);
    ObjDevice *dev = AS_DEV(f->device);
    rec->c.nqubits = dev->wires;
    snprintf(rec->device, sizeof rec->device, "%s", dev->name);
    rec->wires = dev->wires;
    rec->shots = dev->shots;
    rec->mixed = dev->mixed;
    FnProto *p = f->p;
    size_t base = vm->sp, need = (size_t)p->nlocals + 4;
    if (base + need >= vm->cap) return vm_error(vm, site, "maximum recursion depth exceeded");
    Value *slots = vm->stack + base;
    if (nargs > p->nparams) nargs = p->nparams + 1; /* eval_bind_args reports it */
    for (int i = 0; i < nargs; i++) {
        incref(args[i]);
        slots[i] = args[i];
    }
    if (!eval_bind_args(vm, f, slots, nargs, NULL, site)) return v_exc();
    vm->sp = base + (size_t)p->nlocals;
    /* a stream of its own: recording does not move the program's calls */
    Value r = run_inner(vm, f, vm->in->seed, UINT64_MAX - 1, slots, site, NULL, rec);
    vm->sp = base;
    return r;
}

/* The unitary of the gates of a circuit on n wires (a complex array). */
static Value unitary_of(VM *vm, const QasmCircuit *c, int n, const char *who, const Node *site)
{
    if (n > 13)
        return vm_error(vm, site, "%s: %d wires make a %gx%g matrix; at most 13 wires", who, n,
                        ldexp(1, n), ldexp(1, n));
    for (size_t i = 0; i < c->nops; i++)
        if (c->ops[i].kind != QASM_GATE && c->ops[i].kind != QASM_GPHASE)
            return vm_error(vm, site, "%s: the circuit %s, so it has no matrix", who,
                            c->ops[i].kind == QASM_CHANNEL ? "applies a noise channel"
                                                           : "measures or resets mid-circuit");
    size_t d = (size_t)1 << n, shape[2] = { d, d };
    char err[AR_ERRLEN];
    Array *m = ar_zeros(AR_C128, 2, shape, err);
    if (!m) return vm_error(vm, site, "%s", err);
    cplx *out = ar_c128(m);
    SvState s;
    if (sv_init(&s, n) != 0) {
        ar_free(m);
        return vm_error(vm, site, "%s: out of memory", who);
    }
    char e2[256];
    for (size_t col = 0; col < d; col++) {
        memset(s.amp, 0, d * sizeof(cplx));
        s.amp[col] = 1;
        cplx ph = 1;
        for (size_t i = 0; i < c->nops; i++) {
            if (c->ops[i].kind == QASM_GPHASE) {
                ph *= cexp(I * c->ops[i].params[0]);
                continue;
            }
            SvOp op;
            qasm_svop(&c->ops[i], &op);
            if (sv_apply(&s, &op, e2, sizeof e2) != 0) {
                sv_free(&s);
                ar_free(m);
                return vm_error_from(vm, site, who, e2);
            }
        }
        for (size_t row = 0; row < d; row++) out[row * d + col] = ph * s.amp[row];
    }
    sv_free(&s);
    return arr_wrap(m);
}

/* matrix(f, args...): a qfn's circuit on its device's wires, or the gates a
   function (a template, adjoint(f), a circuit) applies, on the fewest wires
   that hold them (or wires=n). */
static Value matrix_of_callable(VM *vm, Args *a)
{
    Value f = a->v[0];
    Value *wk = arg_kw(a, "wires");
    int n = -1;
    if (wk) {
        if (wk->t != T_NUM || wk->n != floor(wk->n) || wk->n < 1)
            return vm_error(vm, a->site, "matrix(): wires must be a positive integer");
        n = (int)wk->n;
    }
    if (f.t == T_FUNC && AS_FUNC(f)->p->is_qfn && AS_FUNC(f)->device.t == T_DEVICE) {
        QRecord rec;
        Value r = qrt_record(vm, f, a->n - 1, a->v + 1, a->site, &rec);
        if (IS_EXC(r)) {
            qrt_record_free(&rec);
            return r;
        }
        decref(r);
        if (n < 0) n = rec.wires;
        Value m = unitary_of(vm, &rec.c, n, "matrix()", a->site);
        qrt_record_free(&rec);
        return m;
    }
    /* collect the gates with a device-less context */
    QCtx ctx;
    memset(&ctx, 0, sizeof ctx);
    QasmCircuit cap;
    qasm_init(&cap, 0, 0);
    ctx.capture = &cap;
    QCtx *saved = vm->q;
    vm->q = &ctx;
    Value r = vm_call(vm, f, a->n - 1, a->v + 1, a->site);
    if (!IS_EXC(r) && r.t == T_OP) {
        Value x = op_stmt(vm, r, a->site);
        decref(r);
        r = x;
    }
    vm->q = saved;
    if (IS_EXC(r)) {
        qasm_free(&cap);
        return r;
    }
    decref(r);
    int maxw = 0;
    for (size_t i = 0; i < cap.npool; i++)
        if (cap.pool[i] + 1 > maxw) maxw = cap.pool[i] + 1;
    if (n < 0) n = maxw ? maxw : 1;
    if (n < maxw) {
        qasm_free(&cap);
        return vm_error(vm, a->site, "matrix(): the gates act on wire %d, outside wires=%d",
                        maxw - 1, n);
    }
    Value m = unitary_of(vm, &cap, n, "matrix()", a->site);
    qasm_free(&cap);
    return m;
}

/* ---------------------------------------------------------------- channels */

/* Channel makers: PARAMS..., WIRE | wires=w  (PennyLane's signatures);
   PauliError(ops, p, wires); QubitChannel(kraus_list, wires). */
static Value bi_channel(VM *vm, Args *a)
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

/* ---------------------------------------------------------------- measurements */

/* The Pauli form of an observable without blocks (NULL: it has one). */
static SvPauli *pauli_of(const SvTerm *t, int n)
{
    if (n < 0) return NULL;
    for (int i = 0; i < n; i++)
        if (t[i].kind != SVB_NONE) return NULL;
    SvPauli *p = xmalloc(((size_t)n + 1) * sizeof(SvPauli));
    for (int i = 0; i < n; i++) p[i] = (SvPauli){ t[i].coeff, t[i].x, t[i].z };
    return p;
}

static QCtx *need_q(VM *vm, Args *a)
{
    if (!vm->q) {
        vm_error(vm, a->site, "%s() needs a running quantum function with a device", a->def->name);
        return NULL;
    }
    if (vm->q->capture) {
        vm_error(vm, a->site,
                 "%s() inside adjoint(f), ctrl(f) or matrix(f): only gates can be inverted or "
                 "controlled",
                 a->def->name);
        return NULL;
    }
    return vm->q;
}

static bool check_terms(VM *vm, QCtx *q, const SvTerm *t, const uint64_t *idw, int n,
                        const Node *site)
{
    uint64_t all = 0;
    int far = -1;
    for (int i = 0; i < n; i++) {
        all |= t[i].x | t[i].z | (idw ? idw[i] : 0);
        for (int j = 0; t[i].kind != SVB_NONE && j < t[i].k; j++)
            if (t[i].wires[j] > far) far = t[i].wires[j];
    }
    if (all) {
        int hi = 63 - __builtin_clzll(all);
        if (hi > far) far = hi;
    }
    if (far >= q->nq) {
        vm_error(vm, site, "observable on wire %d, outside the %d-wire device", far, q->nq);
        return false;
    }
    return true;
}

/* the observable of expval/var/sample/counts, checked against the running device */
static QCtx *obs_arg(VM *vm, Args *a, SvTerm **t, int *n)
{
    QCtx *q = need_q(vm, a);
    uint64_t *idw;
    if (!q || !as_terms(vm, a->v[0], t, &idw, n, a->site)) return NULL;
    bool ok = check_terms(vm, q, *t, idw, *n, a->site);
    free(idw);
    if (!ok) {
        sv_terms_free(*t, *n);
        return NULL;
    }
    return q;
}

/* The eigen-decomposition of an observable and the probability of each
 * eigenvector on the running device (either kind): what sampling it draws
 * from. false with the error recorded. */
static bool obs_spectrum(VM *vm, QCtx *q, const SvTerm *t, int n, SvSpectrum *sp, double **pj,
                         const Node *site)
{
    char err[256];
    *pj = NULL;
    if (q->ds) {
        vm_error(vm, site,
                 "an observable's samples on a distributed device: only sample() of a single Pauli "
                 "word is available");
        return false;
    }
    if (sv_obs_spectrum(t, n, q->nq, sp, err, sizeof err) != 0) {
        vm_error(vm, site, "%s", err);
        return false;
    }
    *pj = xmalloc((size_t)sp->d * sizeof(double));
    int rc;
    if (!q->dm)
        rc = sv_spectrum_probs(q->s, sp, *pj, err, sizeof err);
    else if (sp->word) {
        SvPauli w = { 1.0, sp->w.x, sp->w.z };
        double e = dm_expval(q->dm, &w, 1), nrm = dm_trace(q->dm);
        double pp = fmax(0, 0.5 * (nrm + e)), pm = fmax(0, 0.5 * (nrm - e));
        (*pj)[0] = sp->w.coeff >= 0 ? pm : pp;
        (*pj)[1] = sp->w.coeff >= 0 ? pp : pm;
        rc = 0;
    } else if (sp->k == 0) {
        (*pj)[0] = 1;
        rc = 0;
    } else {
        size_t d = (size_t)sp->d;
        cplx *rho = xmalloc(d * d * sizeof(cplx));
        rc = dm_reduced(q->dm, sp->wires, sp->k, rho, err, sizeof err);
        if (rc == 0) rc = sv_spectrum_probs_rho(sp, rho, *pj, err, sizeof err);
        free(rho);
    }
    if (rc != 0) {
        free(*pj);
        *pj = NULL;
        sv_spectrum_free(sp);
        vm_error(vm, site, "%s", err);
        return false;
    }
    return true;
}

/* <O> and <O^2> estimated from shots draws of O's eigenvalues. */
static bool obs_shots(VM *vm, QCtx *q, const SvTerm *t, int n, long shots, double *e, double *e2,
                      const Node *site)
{
    SvSpectrum sp;
    double *pj;
    if (!obs_spectrum(vm, q, t, n, &sp, &pj, site)) return false;
    uint64_t *cnt = xcalloc((size_t)sp.d, sizeof(uint64_t));
    sv_multinomial(&q->rng, pj, (size_t)sp.d, (uint64_t)shots, cnt);
    double s1 = 0, s2 = 0;
    for (int j = 0; j < sp.d; j++) {
        s1 += (double)cnt[j] * sp.vals[j];
        s2 += (double)cnt[j] * sp.vals[j] * sp.vals[j];
    }
    *e = s1 / (double)shots;
    *e2 = s2 / (double)shots;
    free(cnt);
    free(pj);
    sv_spectrum_free(&sp);
    return true;
}

/* Exact <O> and <O^2> of an observable with Hermitian or Projector
 * factors: the state vector's own kernels, or on the mixed device
 * Tr(rho_S M) and Tr(rho_S M^2) with M its matrix on its support S. */
static bool obs_exact(VM *vm, QCtx *q, const SvTerm *t, int n, double *e, double *e2,
                      const Node *site)
{
    char err[256];
    if (!q->dm) {
        *e = sv_obs_expval(q->s, t, n, err, sizeof err);
        double v = isnan(*e) ? NAN : sv_obs_var(q->s, t, n, err, sizeof err);
        if (isnan(*e) || isnan(v)) {
            vm_error(vm, site, "%s", err);
            return false;
        }
        *e2 = v + *e * *e;
        return true;
    }
    int ws[SV_MAX_WIRES];
    int k = sv_obs_support(t, n, ws);
    if (k > SV_MAX_DENSE) {
        vm_error(vm, site,
                 "an observable with Hermitian or Projector factors on %d wires on the mixed "
                 "device (at most %d)",
                 k, SV_MAX_DENSE);
        return false;
    }
    size_t d = (size_t)1 << k;
    cplx *m = xmalloc(d * d * sizeof(cplx)), *rho = xmalloc(d * d * sizeof(cplx));
    bool ok = sv_obs_matrix(t, n, ws, k, m, err, sizeof err) == 0 &&
              (k == 0 || dm_reduced(q->dm, ws, k, rho, err, sizeof err) == 0);
    if (ok) {
        if (k == 0) rho[0] = dm_trace(q->dm);
        double s1 = 0, s2 = 0;
        for (size_t r = 0; r < d; r++)
            for (size_t c = 0; c < d; c++) {
                s1 += creal(rho[c * d + r] * m[r * d + c]); /* Tr(rho M) */
                cplx m2 = 0;                                /* (M^2)[r][c] */
                for (size_t j = 0; j < d; j++) m2 += m[r * d + j] * m[j * d + c];
                s2 += creal(rho[c * d + r] * m2);
            }
        *e = s1;
        *e2 = s2;
    } else
        vm_error(vm, site, "%s", err);
    free(m);
    free(rho);
    return ok;
}

/* <O> and <O^2> (want_sq) as the device measures them: exact, or
 * estimated from its shots. */
static bool obs_moments(VM *vm, QCtx *q, const SvTerm *t, int n, bool want_sq, double *e,
                        double *e2, const Node *site)
{
    SvPauli *pw = pauli_of(t, n);
    size_t shots = (size_t)q->shots;
    *e2 = 0;
    if (q->ds) { /* a distributed state (qdist.h): Pauli words and their sums */
        const char *fn = want_sq ? "var" : "expval";
        if (!pw) {
            vm_error(vm, site,
                     "%s(): a Hermitian or Projector observable is not available on a distributed "
                     "device "
                     "(sums of Pauli words are)",
                     fn);
            return false;
        }
        char de[256];
        int rc = qdist_expval(q->ds, pw, n, shots, &q->rng, e, de, sizeof de);
        if (!rc && want_sq) {
            SvPauli *sq = NULL;
            int nsq = sv_pauli_square(pw, n, &sq);
            rc = nsq < 0 ? (snprintf(de, sizeof de, "out of memory"), -1)
                         : qdist_expval(q->ds, sq, nsq, shots, &q->rng, e2, de, sizeof de);
            free(sq);
        }
        free(pw);
        if (rc) {
            vm_error(vm, site, "%s(): %s", fn, de);
            return false;
        }
        return true;
    }
    if (pw) {
        if (q->dm)
            *e = shots ? dm_expval_shots(q->dm, pw, n, shots, &q->rng) : dm_expval(q->dm, pw, n);
        else
            *e = shots ? sv_expval_shots(q->s, pw, n, shots, &q->rng) : sv_expval(q->s, pw, n);
        if (want_sq) {
            SvPauli *sq = NULL;
            int nsq = sv_pauli_square(pw, n, &sq);
            if (nsq < 0) {
                free(pw);
                vm_error(vm, site, "%s(): out of memory", "var");
                return false;
            }
            if (q->dm)
                *e2 = shots ? dm_expval_shots(q->dm, sq, nsq, shots, &q->rng)
                            : dm_expval(q->dm, sq, nsq);
            else
                *e2 = shots ? sv_expval_shots(q->s, sq, nsq, shots, &q->rng)
                            : sv_expval(q->s, sq, nsq);
            free(sq);
        }
        free(pw);
        return true;
    }
    if (shots) return obs_shots(vm, q, t, n, (long)shots, e, e2, site);
    return obs_exact(vm, q, t, n, e, e2, site);
}

static Value bi_expval(VM *vm, Args *a)
{
    SvTerm *t;
    int n;
    QCtx *q = obs_arg(vm, a, &t, &n);
    if (!q) return v_exc();
    if (q->rec) {
        char lb[96], l2[112];
        int ws[64], nw;
        obs_label(t, n, lb, sizeof lb, ws, &nw);
        snprintf(l2, sizeof l2, "<%s>", lb);
        rec_meas(q, l2, ws, nw);
    }
    double e, e2;
    if (!obs_moments(vm, q, t, n, false, &e, &e2, a->site)) {
        sv_terms_free(t, n);
        return v_exc();
    }
    Value r = q->grec ? qrec_expval(vm, q->grec, t, n, e, a->site) : v_num(e);
    sv_terms_free(t, n);
    return r;
}

static Value bi_var(VM *vm, Args *a)
{
    SvTerm *t;
    int n;
    QCtx *q = obs_arg(vm, a, &t, &n);
    if (!q) return v_exc();
    if (q->rec) {
        char lb[96], l2[112];
        int ws[64], nw;
        obs_label(t, n, lb, sizeof lb, ws, &nw);
        snprintf(l2, sizeof l2, "Var[%s]", lb);
        rec_meas(q, l2, ws, nw);
    }
    SvPauli *pw = q->grec ? NULL : pauli_of(t, n);
    if (pw) { /* the Pauli kernels' own variance (one pass; shots: one sample) */
        double v;
        char de[256];
        if (q->ds) {
            int rc = qdist_var(q->ds, pw, n, (size_t)q->shots, &q->rng, &v, de, sizeof de);
            if (rc) {
                free(pw);
                sv_terms_free(t, n);
                return vm_error(vm, a->site, "var(): %s", de);
            }
        } else if (q->dm)
            v = q->shots ? dm_var_shots(q->dm, pw, n, (size_t)q->shots, &q->rng)
                         : dm_var(q->dm, pw, n);
        else
            v = q->shots ? sv_var_shots(q->s, pw, n, (size_t)q->shots, &q->rng)
                         : sv_var(q->s, pw, n);
        free(pw);
        sv_terms_free(t, n);
        if (isnan(v)) return vm_error(vm, a->site, "var(): out of memory");
        return v_num(v);
    }
    /* a differentiated run follows <O> and <O^2> */
    double e, e2;
    if (!obs_moments(vm, q, t, n, true, &e, &e2, a->site)) {
        sv_terms_free(t, n);
        return v_exc();
    }
    double v = e2 - e * e;
    Value r = q->grec ? qrec_var(vm, q->grec, t, n, e, e2, a->site) : v_num(v < 0 ? 0 : v);
    sv_terms_free(t, n);
    return r;
}

/* A large result copied out of a call (state(), probs() of many wires) is
 * memory the call holds beside its state until the call ends: it is
 * reserved from the pool's budget as a nested call's state is, never
 * waiting (lang/async.md, "Memory"). A budget that holds the state but not
 * the state and its copy fails with the budget error, instead of the
 * process being killed by the kernel. Small results are not counted. */
#define COPY_RESERVE_MIN ((size_t)1 << 20)
static bool reserve_copy(VM *vm, QCtx *q, size_t bytes, const char *what, const Node *site)
{
    QRuntime *rt = vm->in->qrt;
    if (bytes < COPY_RESERVE_MIN || !rt || q->capture) return true;
    size_t total = q->copy_bytes + bytes;
    if (q->copy_token) pool_release(rt->pool, q->copy_token, 0);
    q->copy_token = NULL;
    q->copy_bytes = 0;
    char key[48], err[256], b1[32], b2[32], b3[32];
    snprintf(key, sizeof key, "reserved:%zu", total);
    InstArg ia = { 0, false, true };
    void *t = pool_acquire_nested(rt->pool, key, total, &ia, vm->dev_bytes, err, sizeof err);
    if (!t) {
        vm_error(vm, site,
                 "%s(): its result needs %s beside the %s its call holds, and the budget is %s "
                 "(--max-memory)",
                 what, pool_format_bytes(b1, sizeof b1, total),
                 pool_format_bytes(b2, sizeof b2, vm->dev_bytes),
                 pool_format_bytes(b3, sizeof b3, pool_budget(rt->pool)));
        return false;
    }
    q->copy_token = t;
    q->copy_bytes = total;
    return true;
}

static Value bi_probs(VM *vm, Args *a)
{
    QCtx *q = need_q(vm, a);
    if (!q) return v_exc();
    int ws[64];
    int nw = 0;
    Value *wk = arg_kw(a, "wires");
    Value wv = a->n > 0 ? a->v[0] : (wk ? *wk : v_nil());
    if (wv.t != T_NIL) {
        nw = collect_wires(vm, wv, ws, 30, "probs", a->site);
        if (nw < 0) return v_exc();
    }
    int outw = nw ? nw : q->nq;
    if (outw > 30) return vm_error(vm, a->site, "probs(): at most 30 wires");
    if (q->rec) {
        int all[64];
        for (int i = 0; i < q->nq && i < 64; i++) all[i] = i;
        rec_meas(q, "Probs", nw ? ws : all, nw ? nw : q->nq);
    }
    size_t shape[1] = { (size_t)1 << outw };
    if (!reserve_copy(vm, q, shape[0] * sizeof(double), "probs", a->site)) return v_exc();
    char err[AR_ERRLEN];
    Array *r = ar_new(AR_F64, 1, shape, err);
    if (!r) return vm_error(vm, a->site, "%s", err);
    double *out = ar_f64(r);
    char e2[256];
    if (q->ds) {
        if (qdist_probs(q->ds, ws, nw, (size_t)q->dev->shots, &q->rng, out, e2, sizeof e2) != 0) {
            ar_free(r);
            return vm_error(vm, a->site, "probs(): %s", e2);
        }
        return arr_wrap(r);
    }
    if (q->dm) {
        if (dm_probs(q->dm, ws, nw, out, e2, sizeof e2) != 0) {
            ar_free(r);
            return vm_error_from(vm, a->site, "probs()", e2);
        }
        if (q->shots) dm_probs_shots(q->dm, ws, nw, (size_t)q->shots, &q->rng, out);
        return q->grec ? qrec_probs(vm, q->grec, ws, nw, q->nq, r, a->site) : arr_wrap(r);
    }
    if (sv_probs(q->s, ws, nw, out, e2, sizeof e2) != 0) {
        ar_free(r);
        return vm_error_from(vm, a->site, "probs()", e2);
    }
    if (q->shots) sv_probs_shots(q->s, ws, nw, (size_t)q->shots, &q->rng, out);
    return q->grec ? qrec_probs(vm, q->grec, ws, nw, q->nq, r, a->site) : arr_wrap(r);
}

static Value bi_state(VM *vm, Args *a)
{
    QCtx *q = need_q(vm, a);
    if (!q) return v_exc();
    char err[AR_ERRLEN];
    if (q->grec) qrec_nondiff(q->grec, "state", false);
    if (q->rec) {
        int all[64];
        for (int i = 0; i < q->nq && i < 64; i++) all[i] = i;
        rec_meas(q, "State", all, q->nq);
    }
    if (q->ds) {
        size_t dshape[1] = { (size_t)1 << q->nq };
        char de[400];
        cplx *amp;
        if (qdist_state(q->ds, &amp, de, sizeof de))
            return vm_error(vm, a->site, "state(): %s", de);
        Array *r = ar_from_data(AR_C128, 1, dshape, amp, err);
        free(amp);
        if (!r) return vm_error(vm, a->site, "%s", err);
        return arr_wrap(r);
    }
    /* the mixed device's state is its density matrix, as default.mixed's qml.state() */
    size_t shape[2] = { q->dm ? q->dm->dim : q->s->dim, q->dm ? q->dm->dim : 0 };
    if (!reserve_copy(vm, q, (q->dm ? q->dm->v.dim : q->s->dim) * sizeof(cplx), "state", a->site))
        return v_exc();
    Array *r = q->dm ? ar_from_data(AR_C128, 2, shape, q->dm->v.amp, err)
                     : ar_from_data(AR_C128, 1, shape, q->s->amp, err);
    if (!r) return vm_error(vm, a->site, "%s", err);
    return arr_wrap(r);
}

static long need_shots(VM *vm, QCtx *q, Args *a)
{
    if (!q->shots) {
        vm_error(vm, a->site,
                 "%s() needs a device with shots, e.g. device(\"%s\", wires=%d, shots=1000)",
                 a->def->name, q->dev->name, q->nq);
        return -1;
    }
    return q->shots;
}

/* A measurement's wire list: each on the device and none twice, checked in
 * order (the error names WHO()); false after the error. */
static bool device_wires_ok(VM *vm, const QCtx *q, const int *ws, int nw, const char *who,
                            const Node *site)
{
    for (int i = 0; i < nw; i++) {
        if (ws[i] >= q->nq) {
            vm_error(vm, site, "%s(): wire %d out of range for a %d-wire device", who, ws[i],
                     q->nq);
            return false;
        }
        for (int j = 0; j < i; j++)
            if (ws[i] == ws[j]) {
                vm_error(vm, site, "%s(): wires must be distinct (wire %d twice)", who, ws[i]);
                return false;
            }
    }
    return true;
}

/* sample()/counts() wires=: the wires read, in the order given (PennyLane's
 * qml.sample(wires=...)); 0 when not given (every wire), -1 after an error.
 * *one: a single wire given as a number, not a list (sample() then drops
 * that axis, as NumPy's x[:, w] does; lang/quantum.md). */
static int meas_wires(VM *vm, QCtx *q, Args *a, int *ws, bool *one)
{
    const char *who = a->def->name;
    Value *wk = arg_kw(a, "wires");
    *one = false;
    if (!wk || wk->t == T_NIL) return 0;
    if (a->n > 0) {
        vm_error(vm, a->site, "%s(): give an observable or wires=, not both", who);
        return -1;
    }
    char what[32];
    snprintf(what, sizeof what, "%s()", who);
    int nw = collect_wires(vm, *wk, ws, 64, what, a->site);
    if (nw < 0) return -1;
    if (nw == 0) {
        vm_error(vm, a->site, "%s(): wires= is empty", who);
        return -1;
    }
    if (!device_wires_ok(vm, q, ws, nw, who, a->site)) return -1;
    *one = wk->t == T_NUM;
    return nw;
}

/* the bits of basis index IDX on wires WS (wire 0 most significant, as in
 * the full index), packed in that order into the low NW bits */
static uint64_t index_on_wires(uint64_t idx, int nq, const int *ws, int nw)
{
    uint64_t r = 0;
    for (int k = 0; k < nw; k++) r = (r << 1) | ((idx >> (nq - 1 - ws[k])) & 1);
    return r;
}
static Value bi_sample(VM *vm, Args *a)
{
    QCtx *q = need_q(vm, a);
    if (!q) return v_exc();
    long shots = need_shots(vm, q, a);
    if (shots < 0) return v_exc();
    int ws[64];
    bool one;
    int nw = meas_wires(vm, q, a, ws, &one);
    if (nw < 0) return v_exc();
    if (q->grec) qrec_nondiff(q->grec, "sample", false);
    if (q->rec) {
        int all[64];
        for (int i = 0; i < q->nq && i < 64; i++) all[i] = i;
        rec_meas(q, "Sample", nw ? ws : all, nw ? nw : q->nq);
    }
    char err[AR_ERRLEN];
    if (a->n > 0) {
        SvTerm *t;
        int n;
        uint64_t *idw;
        if (!as_terms(vm, a->v[0], &t, &idw, &n, a->site)) return v_exc();
        bool ok = check_terms(vm, q, t, idw, n, a->site);
        free(idw);
        if (!ok) {
            sv_terms_free(t, n);
            return v_exc();
        }
        size_t shape[1] = { (size_t)shots };
        Array *r = ar_new(AR_F64, 1, shape, err);
        if (!r) {
            sv_terms_free(t, n);
            return vm_error(vm, a->site, "%s", err);
        }
        if (n == 1 && t[0].kind == SVB_NONE &&
            t[0].coeff == 1) { /* a Pauli word: its own sampler */
            SvPauli w = { 1, t[0].x, t[0].z };
            char de[256];
            if (q->ds) {
                if (qdist_sample_pauli(q->ds, &w, (size_t)shots, &q->rng, ar_f64(r), de,
                                       sizeof de)) {
                    sv_terms_free(t, n);
                    ar_free(r);
                    return vm_error(vm, a->site, "sample(): %s", de);
                }
            } else if (q->dm)
                dm_sample_pauli(q->dm, &w, (size_t)shots, &q->rng, ar_f64(r));
            else
                sv_sample_pauli(q->s, &w, (size_t)shots, &q->rng, ar_f64(r));
        } else { /* any observable: its eigenvalues, drawn with their probabilities */
            SvSpectrum sp;
            double *pj;
            if (!obs_spectrum(vm, q, t, n, &sp, &pj, a->site)) {
                ar_free(r);
                sv_terms_free(t, n);
                return v_exc();
            }
            uint64_t *idx = xmalloc((size_t)shots * sizeof(uint64_t));
            sv_draw(&q->rng, pj, (size_t)sp.d, (size_t)shots, idx);
            double *out = ar_f64(r);
            for (long i = 0; i < shots; i++) out[i] = sp.vals[idx[i]];
            free(idx);
            free(pj);
            sv_spectrum_free(&sp);
        }
        sv_terms_free(t, n);
        return arr_wrap(r);
    }
    int nq = q->nq, cols = nw ? nw : nq;
    if (!nw)
        for (int w = 0; w < nq; w++) ws[w] = w;
    size_t shape[2] = { (size_t)shots, (size_t)cols };
    Array *r = ar_new(AR_F64, one ? 1 : 2, shape, err);
    if (!r) return vm_error(vm, a->site, "%s", err);
    uint64_t *idx = malloc((size_t)shots * sizeof(uint64_t));
    if (!idx) {
        ar_free(r);
        return vm_error(vm, a->site, "sample(): out of memory");
    }
    char de[256];
    if (q->ds) {
        if (qdist_sample(q->ds, (size_t)shots, &q->rng, idx, de, sizeof de)) {
            free(idx);
            ar_free(r);
            return vm_error(vm, a->site, "sample(): %s", de);
        }
    } else if (q->dm)
        dm_sample(q->dm, (size_t)shots, &q->rng, idx);
    else
        sv_sample(q->s, (size_t)shots, &q->rng, idx);
    double *out = ar_f64(r);
    for (long i = 0; i < shots; i++)
        for (int k = 0; k < cols; k++)
            out[(size_t)i * (size_t)cols + (size_t)k] = (double)((idx[i] >> (nq - 1 - ws[k])) & 1);
    free(idx);
    return arr_wrap(r);
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

static Value bi_counts(VM *vm, Args *a)
{
    QCtx *q = need_q(vm, a);
    if (!q) return v_exc();
    long shots = need_shots(vm, q, a);
    if (shots < 0) return v_exc();
    int ws[64];
    bool one;
    int nw = meas_wires(vm, q, a, ws, &one);
    if (nw < 0) return v_exc();
    if (q->grec) qrec_nondiff(q->grec, "counts", false);
    if (q->rec) {
        int all[64];
        for (int i = 0; i < q->nq && i < 64; i++) all[i] = i;
        rec_meas(q, "Counts", nw ? ws : all, nw ? nw : q->nq);
    }
    if (a->n > 0) { /* counts of an observable's eigenvalues: {value: count}, ascending */
        SvTerm *t;
        int n;
        uint64_t *idw;
        if (!as_terms(vm, a->v[0], &t, &idw, &n, a->site)) return v_exc();
        bool ok = check_terms(vm, q, t, idw, n, a->site);
        free(idw);
        SvSpectrum sp;
        double *pj;
        if (!ok || !obs_spectrum(vm, q, t, n, &sp, &pj, a->site)) {
            sv_terms_free(t, n);
            return v_exc();
        }
        sv_terms_free(t, n);
        double *lv = xmalloc((size_t)sp.d * sizeof(double)),
               *lp = xmalloc((size_t)sp.d * sizeof(double));
        int m = sv_spectrum_levels(&sp, pj, lv, lp);
        uint64_t *cnt = xcalloc((size_t)(m ? m : 1), sizeof(uint64_t));
        sv_multinomial(&q->rng, lp, (size_t)m, (uint64_t)shots, cnt);
        ObjDict *d = dict_new();
        for (int j = 0; j < m; j++)
            if (cnt[j]) dict_set(d, v_num(lv[j]), v_num((double)cnt[j]));
        free(cnt);
        free(lv);
        free(lp);
        free(pj);
        sv_spectrum_free(&sp);
        return v_obj(&d->h);
    }
    uint64_t *idx = malloc((size_t)shots * sizeof(uint64_t));
    if (!idx) return vm_error(vm, a->site, "counts(): out of memory");
    char de[256];
    if (q->ds) {
        if (qdist_sample(q->ds, (size_t)shots, &q->rng, idx, de, sizeof de)) {
            free(idx);
            return vm_error(vm, a->site, "counts(): %s", de);
        }
    } else if (q->dm)
        dm_sample(q->dm, (size_t)shots, &q->rng, idx);
    else
        sv_sample(q->s, (size_t)shots, &q->rng, idx);
    int nq = q->nq, cols = nw ? nw : nq;
    if (nw)
        for (long i = 0; i < shots; i++) idx[i] = index_on_wires(idx[i], nq, ws, nw);
    qsort(idx, (size_t)shots, sizeof(uint64_t), cmp_u64);
    ObjDict *d = dict_new();
    char bits[65];
    for (long i = 0; i < shots;) {
        long j = i;
        while (j < shots && idx[j] == idx[i]) j++;
        for (int k = 0; k < cols; k++) bits[k] = (char)('0' + ((idx[i] >> (cols - 1 - k)) & 1));
        bits[cols] = 0;
        Value k = v_str(bits);
        dict_set(d, k, v_num((double)(j - i)));
        decref(k);
        i = j;
    }
    free(idx);
    return v_obj(&d->h);
}

/* A postselected outcome of probability 0: every later result is NaN, as
 * in PennyLane (the state has no meaning left). */
static void poison_state(QCtx *q)
{
    SvState *v = q->dm ? &q->dm->v : q->s;
    for (size_t i = 0; i < v->dim; i++) v->amp[i] = NAN;
}

/* measure(w) on the mixed device, kept only for the outcome b: rho -> P rho P / p */
static int dm_postselect(DmState *d, int w, int b, double *prob, char *err, size_t errlen)
{
    double pr[2];
    if (dm_probs(d, &w, 1, pr, err, errlen) != 0) return -1;
    *prob = pr[b];
    if (!(pr[b] > 0)) return 0;
    double f = 1 / sqrt(pr[b]);
    cplx k[4] = { b == 0 ? f : 0, 0, 0, b == 1 ? f : 0 };
    return dm_apply_kraus(d, &w, 1, 1, k, err, errlen);
}

static Value bi_measure(VM *vm, Args *a)
{
    QCtx *q = need_q(vm, a);
    if (!q) return v_exc();
    int w;
    if (!wire_value(vm, a->v[0], &w, "measure", a->site)) return v_exc();
    if (w >= q->nq)
        return vm_error(vm, a->site, "measure: wire %d out of range for a %d-wire device", w,
                        q->nq);
    Value *rk = arg_kw(a, "reset"), *pk = arg_kw(a, "postselect");
    bool reset = false;
    bool e = false;
    if (a->n > 1)
        reset = tp_truthy(vm, a->v[1], a->site, &e);
    else if (rk)
        reset = tp_truthy(vm, *rk, a->site, &e);
    if (e) return v_exc();
    int post = -1;
    if (pk && pk->t != T_NIL) {
        if (pk->t != T_NUM || (pk->n != 0 && pk->n != 1))
            return vm_error(vm, a->site, "measure: postselect must be 0, 1 or nil");
        post = (int)pk->n;
    }
    char err[256];
    if (q->grec) qrec_nondiff(q->grec, "measure", true);
    int r;
    if (post < 0) {
        r = q->ds   ? qdist_measure(q->ds, w, reset, &q->rng, err, sizeof err)
            : q->dm ? dm_measure(q->dm, w, reset, &q->rng, err, sizeof err)
                    : sv_measure(q->s, w, reset, &q->rng, err, sizeof err);
        if (r < 0) return vm_error_from(vm, a->site, "measure", err);
    } else {
        double prob = 0;
        int rc;
        if (q->ds)
            return vm_error(vm, a->site,
                            "measure(): postselect is not available on a distributed device");
        if (q->dm) {
            rc = dm_postselect(q->dm, w, post, &prob, err, sizeof err);
            if (rc == 0 && prob > 0 && reset && post == 1) {
                SvOp x = { .gate = SV_PAULIX, .nwires = 1, .wires = { w } };
                rc = dm_apply(q->dm, &x, err, sizeof err);
            }
        } else {
            rc = sv_measure_post(q->s, w, post, reset, &prob, err, sizeof err);
            if (rc != 0 && !(prob > 0)) rc = 0; /* probability 0: see below */
        }
        if (rc != 0) return vm_error_from(vm, a->site, "measure", err);
        if (!(prob > 0))
            poison_state(q);
        else if (q->shots) { /* the shots that saw the outcome are kept */
            double pp[2] = { prob, 1 - prob };
            uint64_t c[2];
            sv_multinomial(&q->rng, pp, 2, (uint64_t)q->shots, c);
            q->shots = (long)c[0];
            if (q->shots == 0) {
                poison_state(q);
                q->shots = 1;
            }
        }
        r = post;
    }
    if (q->rec) {
        QasmOp *o = qasm_add(&q->rec->c, QASM_MEASURE, &w, 0, 1);
        if (o) o->clbit = q->rec->c.nclbits++;
        if (o && reset) qasm_add(&q->rec->c, QASM_RESET, &w, 0, 1);
    }
    return v_num(r);
}

/* the wires= of the reduced-state measurements: nil means all of them */
static int rdm_wires(VM *vm, QCtx *q, Args *a, int *ws)
{
    if (q->ds) {
        vm_error(vm, a->site,
                 "%s() is not available on a distributed device (use probs, expval or sample)",
                 a->def->name);
        return -1;
    }
    Value *wk = arg_kw(a, "wires");
    Value wv = a->n > 0 ? a->v[0] : (wk ? *wk : v_nil());
    int nw;
    if (wv.t == T_NIL) {
        nw = q->nq;
        for (int i = 0; i < nw && i < 64; i++) ws[i] = i;
    } else {
        nw = collect_wires(vm, wv, ws, 64, a->def->name, a->site);
        if (nw < 0) return -1;
    }
    if (nw > 14) {
        vm_error(vm, a->site, "%s(): at most 14 wires, got %d", a->def->name, nw);
        return -1;
    }
    if (nw < 1) {
        vm_error(vm, a->site, "%s(): needs at least one wire", a->def->name);
        return -1;
    }
    return device_wires_ok(vm, q, ws, nw, a->def->name, a->site) ? nw : -1;
}

/* the reduced density matrix of the wires, on either device (heap) */
static cplx *reduced(VM *vm, QCtx *q, Args *a, const int *ws, int nw)
{
    if (q->ds) {
        vm_error(vm, a->site,
                 "%s() is not available on a distributed device (use probs, expval or sample)",
                 a->def->name);
        return NULL;
    }
    size_t d = (size_t)1 << nw;
    cplx *m = malloc(d * d * sizeof(cplx));
    char err[256];
    if (!m) {
        vm_error(vm, a->site, "%s(): out of memory", a->def->name);
        return NULL;
    }
    int rc = q->dm ? dm_reduced(q->dm, ws, nw, m, err, sizeof err)
                   : sv_density_matrix(q->s, ws, nw, m, err, sizeof err);
    if (rc != 0) {
        free(m);
        char who[80];
        snprintf(who, sizeof who, "%s()", a->def->name);
        vm_error_from(vm, a->site, who, err);
        return NULL;
    }
    return m;
}

/* The reduced density matrix a builtin of the wires argument measures
 * (density_matrix, purity): its wires checked, the measurement noted for
 * a differentiated run (not differentiable) and for drawing (label). */
static cplx *reduced_arg(VM *vm, Args *a, const char *label, int *nw)
{
    QCtx *q = need_q(vm, a);
    if (!q) return NULL;
    int ws[64];
    *nw = rdm_wires(vm, q, a, ws);
    if (*nw < 0) return NULL;
    if (q->grec) qrec_nondiff(q->grec, a->def->name, false);
    if (q->rec) rec_meas(q, label, ws, *nw);
    return reduced(vm, q, a, ws, *nw);
}

static Value bi_density_matrix(VM *vm, Args *a)
{
    int nw;
    cplx *m = reduced_arg(vm, a, "DensityMatrix", &nw);
    if (!m) return v_exc();
    size_t d = (size_t)1 << nw, shape[2] = { d, d };
    char err[AR_ERRLEN];
    Array *r = ar_from_data(AR_C128, 2, shape, m, err);
    free(m);
    if (!r) return vm_error(vm, a->site, "%s", err);
    return arr_wrap(r);
}

static Value bi_purity(VM *vm, Args *a)
{
    int nw;
    cplx *m = reduced_arg(vm, a, "Purity", &nw);
    if (!m) return v_exc();
    double pu = sv_purity_of(m, 1 << nw);
    free(m);
    return v_num(pu);
}

static Value bi_vn_entropy(VM *vm, Args *a)
{
    QCtx *q = need_q(vm, a);
    if (!q) return v_exc();
    int ws[64];
    int nw = rdm_wires(vm, q, a, ws);
    if (nw < 0) return v_exc();
    Value *lb = arg_kw(a, "log_base");
    double base = 0;
    if (lb && lb->t != T_NIL) {
        if (lb->t != T_NUM || !(lb->n > 0) || lb->n == 1)
            return vm_error(vm, a->site,
                            "vn_entropy(): log_base must be a positive number other than 1");
        base = lb->n;
    }
    if (q->grec) qrec_nondiff(q->grec, "vn_entropy", false);
    if (q->rec) rec_meas(q, "Entropy", ws, nw);
    cplx *m = reduced(vm, q, a, ws, nw);
    if (!m) return v_exc();
    double h = sv_entropy_of(m, 1 << nw, NULL, 0);
    if (base > 0) h /= log(base);
    free(m);
    if (isnan(h)) return vm_error(vm, a->site, "vn_entropy(): the eigenvalue solver failed");
    return v_num(h);
}

/* mutual_info(wires0, wires1, log_base=nil): S(A) + S(B) - S(AB) */
static Value bi_mutual_info(VM *vm, Args *a)
{
    QCtx *q = need_q(vm, a);
    if (!q) return v_exc();
    int w0[64], w1[64], all[128];
    int n0 = collect_wires(vm, a->v[0], w0, 64, "mutual_info", a->site);
    if (n0 < 0) return v_exc();
    int n1 = collect_wires(vm, a->v[1], w1, 64, "mutual_info", a->site);
    if (n1 < 0) return v_exc();
    if (n0 < 1 || n1 < 1)
        return vm_error(vm, a->site, "mutual_info(): each group needs at least one wire");
    if (n0 + n1 > 14)
        return vm_error(vm, a->site, "mutual_info(): at most 14 wires in all, got %d", n0 + n1);
    memcpy(all, w0, (size_t)n0 * sizeof(int));
    memcpy(all + n0, w1, (size_t)n1 * sizeof(int));
    for (int i = 0; i < n0 + n1; i++) {
        if (all[i] >= q->nq)
            return vm_error(vm, a->site, "mutual_info(): wire %d out of range for a %d-wire device",
                            all[i], q->nq);
        for (int j = 0; j < i; j++)
            if (all[i] == all[j])
                return vm_error(vm, a->site,
                                "mutual_info(): the wires must be distinct and the groups disjoint "
                                "(wire %d twice)",
                                all[i]);
    }
    Value *lb = arg_kw(a, "log_base");
    double base = 0;
    if (lb && lb->t != T_NIL) {
        if (lb->t != T_NUM || !(lb->n > 0) || lb->n == 1)
            return vm_error(vm, a->site,
                            "mutual_info(): log_base must be a positive number other than 1");
        base = lb->n;
    }
    if (q->grec) qrec_nondiff(q->grec, "mutual_info", false);
    if (q->rec) rec_meas(q, "MutualInfo", all, n0 + n1);
    double h[3];
    const int *ws[3] = { w0, w1, all };
    int ns[3] = { n0, n1, n0 + n1 };
    for (int k = 0; k < 3; k++) {
        cplx *m = reduced(vm, q, a, ws[k], ns[k]);
        if (!m) return v_exc();
        h[k] = sv_entropy_of(m, 1 << ns[k], NULL, 0);
        if (base > 0) h[k] /= log(base);
        free(m);
        if (isnan(h[k]))
            return vm_error(vm, a->site, "mutual_info(): the eigenvalue solver failed");
    }
    double r = h[0] + h[1] - h[2];
    return v_num(r < 0 && r > -1e-12 ? 0 : r);
}

static const char *const kw_wires[] = { "wires", NULL };
static const char *const kw_device[] = { "wires", "shots",       "seed", "latency",
                                         "noise", "distributed", NULL };
static const char *const kw_ctrl[] = { "control", NULL };
static const char *const kw_reset[] = { "reset", "postselect", NULL };
static const char *const kw_entropy[] = { "wires", "log_base", NULL };
static const char *const kw_log_base[] = { "log_base", NULL };

#define GATE(nm)                                 \
    {                                            \
        nm, bi_gate, 0, -1, BI_GATE, kw_wires, 0 \
    }
#define CHAN(nm)                                    \
    {                                               \
        nm, bi_channel, 0, -1, BI_GATE, kw_wires, 0 \
    }
static const BuiltinDef builtins_quantum[] = {
    { "device", bi_device, 1, 2, 0, kw_device, 0 },
    GATE("Identity"),
    GATE("I"),
    GATE("Hadamard"),
    GATE("H"),
    GATE("PauliX"),
    GATE("X"),
    GATE("PauliY"),
    GATE("Y"),
    GATE("PauliZ"),
    GATE("Z"),
    GATE("S"),
    GATE("T"),
    GATE("SX"),
    GATE("RX"),
    GATE("RY"),
    GATE("RZ"),
    GATE("PhaseShift"),
    GATE("Rot"),
    GATE("U3"),
    GATE("CNOT"),
    GATE("CX"),
    GATE("CY"),
    GATE("CZ"),
    GATE("SWAP"),
    GATE("ISWAP"),
    GATE("CRX"),
    GATE("CRY"),
    GATE("CRZ"),
    GATE("ControlledPhaseShift"),
    GATE("IsingXX"),
    GATE("IsingYY"),
    GATE("IsingZZ"),
    GATE("Toffoli"),
    GATE("CCX"),
    GATE("CSWAP"),
    GATE("MultiRZ"),
    GATE("QubitUnitary"),
    GATE("BasisState"),
    GATE("SingleExcitation"),
    GATE("DoubleExcitation"),
    { "adjoint", bi_adjoint, 1, 1, 0, NULL, 0 },
    { "ctrl", bi_ctrl, 1, 2, 0, kw_ctrl, 0 },
    { "hamiltonian", bi_hamiltonian, 2, 2, 0, NULL, 0 },
    { "Hermitian", bi_hermitian, 1, -1, 0, kw_wires, 0 },
    { "Projector", bi_projector, 1, -1, 0, kw_wires, 0 },
    { "matrix", bi_matrix, 1, -1, 0, kw_wires, 0 },
    { "expval", bi_expval, 1, 1, BI_QUANTUM, NULL, 0 },
    { "var", bi_var, 1, 1, BI_QUANTUM, NULL, 0 },
    { "probs", bi_probs, 0, 1, BI_QUANTUM, kw_wires, 0 },
    { "state", bi_state, 0, 0, BI_QUANTUM, NULL, 0 },
    { "sample", bi_sample, 0, 1, BI_QUANTUM, kw_wires, 0 },
    { "counts", bi_counts, 0, 1, BI_QUANTUM, kw_wires, 0 },
    { "measure", bi_measure, 1, 2, BI_QUANTUM, kw_reset, 0 },
    { "density_matrix", bi_density_matrix, 0, 1, BI_QUANTUM, kw_wires, 0 },
    { "purity", bi_purity, 0, 1, BI_QUANTUM, kw_wires, 0 },
    { "vn_entropy", bi_vn_entropy, 0, 1, BI_QUANTUM, kw_entropy, 0 },
    { "mutual_info", bi_mutual_info, 2, 2, BI_QUANTUM, kw_log_base, 0 },
    CHAN("BitFlip"),
    CHAN("PhaseFlip"),
    CHAN("DepolarizingChannel"),
    CHAN("AmplitudeDamping"),
    CHAN("GeneralizedAmplitudeDamping"),
    CHAN("PhaseDamping"),
    CHAN("ThermalRelaxationError"),
    CHAN("ResetError"),
    CHAN("PauliError"),
    CHAN("QubitChannel"),
    { NULL, NULL, 0, 0, 0, NULL, 0 },
};

static const TypeOps device_ops = {
    .name = "device",
    .flags = TF_DEVICE,
    .free = device_free,
    .clear = device_clear,
    .traverse = device_traverse,
    .copy = device_copy,
    .ser = device_ser,
    .deser = device_deser,
    .repr = device_repr,
    .eq = device_eq,
};

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

static const SvGateInfo *gate_info[128]; /* one-time init (qrt_open), by entry */
static const SvGateInfo *gate_of(const BuiltinDef *d)
{
    uintptr_t at = (uintptr_t)d, lo = (uintptr_t)builtins_quantum;
    size_t i = (at - lo) / sizeof *d;
    if (at >= lo && i < sizeof gate_info / sizeof gate_info[0] && gate_info[i]) return gate_info[i];
    return sv_gate_by_name(d->name);
}

void qrt_open(void)
{
    T_MODFN = type_register_new(&mod_ops);
    type_register(T_DEVICE, &device_ops);
    type_register(T_OP, &op_ops);
    builtins_add(builtins_quantum);
    for (size_t i = 0; builtins_quantum[i].name && i < sizeof gate_info / sizeof gate_info[0]; i++)
        if (builtins_quantum[i].fn == bi_gate)
            gate_info[i] = sv_gate_by_name(builtins_quantum[i].name);
}
