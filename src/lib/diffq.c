/* diffq.c — quantum calls inside a differentiated evaluation (diffq.h)
 * and the recording interface the quantum runtime reports to (qrec.h).
 *
 * A qfn called with tracked arguments (on the evaluation's VM, the owner)
 * gets master copies of its function and arguments, the tracked values in
 * them replaced by markers (input k), and a forward work item. Whoever runs
 * the item (the owner or a helper on an idle worker, with its own VM)
 * copies the masters, the markers becoming inputs of a tape of its own, and
 * runs the body recorded: gates remember which tape nodes their parameters
 * came from, each measured quantity (expval, the two moments of var, the
 * probabilities) becomes a Jacobian node over the gate parameters measured
 * so far. The method then adds items: one adjoint sweep (sv_adjoint on the
 * final state), or one shifted run per shift of each parameter (the shift
 * rule; a channel parameter on the mixed device: one run with the channel's
 * map replaced by its derivative, dm.h), or two perturbed runs per input
 * (finite differences). The owner
 * gets a pending value; forcing it finishes only the forward item. Before a
 * backward sweep, diffq_finish finishes every item and assembles each
 * call's Jacobian: the measured quantities' derivatives by the gate
 * parameters, chained by backward sweeps of the call's own tape (the
 * classical code inside the body) into outputs by inputs. Results depend
 * only on the masters and the call's random stream, never on which thread
 * ran an item, so --sync gives the same numbers.
 *
 * Knows values, the evaluator, async's seeding convention, the quantum
 * runtime's entry, the simulator's structs, the tape, the tracked kinds and
 * job sets.
 */
#include "diffq.h"
#include "array.h"
#include "arrayval.h"
#include "eval.h"
#include "exec.h"
#include "jobset.h"
#include "qh_assert.h"
#include "qrec.h"
#include "qrt.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ recording */

typedef enum QRMode { QR_RECORD, QR_SHIFT, QR_METRIC } QRMode;
typedef enum QKind { Q_EXPVAL, Q_VAR, Q_PROBS } QKind;

typedef struct RecOp {
    SvOp op;
    cplx *matrix;
    uint8_t tracked;
} RecOp;
typedef struct Slot {
    int op, param; /* gate op's parameter; chan: channel number op's */
    AdNode node;
    bool chan;
} Slot;

typedef struct Quant {
    QKind kind;
    SvTerm *t, *t2; /* the observable; var: also O^2 (owned, blocks owned) */
    int n, n2;
    int wires[64], nw; /* probs */
    int pos;           /* gates applied before it */
    int nslots;        /* parameters recorded before it: its nodes' parents */
    int rows, off;     /* values it records, the first one's index */
    AdNode node[2];    /* Jacobian nodes (var: <O> and <O^2>); AD_NONE: constant */
} Quant;

typedef struct DRec {
    QRec head; /* its operations, for qrt.c (qrec.h) */
    QRMode mode;
    VM *vm;
    bool adjoint;        /* keep the final state */
    bool best, to_shift; /* adjoint not asked for; it cannot run: use parameter-shift */
    RecOp *ops;
    int nops, capops;
    Slot *slots;
    int nslots, capslots;
    Quant *q;
    int nquant, capq;
    int nvals;
    double *vals;
    int capvals; /* shifted runs: the values measured */
    int shift_op, shift_param;
    double shift;
    int dchan, dparam; /* a channel-derivative run: channel dchan's map by parameter dparam */
    int counter, nchan;
    uint64_t shape; /* which gates on which wires: a shifted run must repeat it */
    const char *nondiff;
    bool measured, shots;
    int nqubits;
    cplx *final;
    char err[300];
} DRec;

static void qrec_free(DRec *r)
{
    for (int i = 0; i < r->nops; i++) free(r->ops[i].matrix);
    free(r->ops);
    free(r->slots);
    for (int i = 0; i < r->nquant; i++) {
        sv_terms_free(r->q[i].t, r->q[i].n);
        sv_terms_free(r->q[i].t2, r->q[i].n2);
    }
    free(r->q);
    free(r->vals);
    free(r->final);
    memset(r, 0, sizeof *r);
}

static const char *rec_error(const QRec *rq) { return ((const DRec *)rq)->err; }
static void rec_shots(QRec *rq, bool shots) { ((DRec *)rq)->shots = shots; }

static void rec_nondiff(QRec *rq, const char *what, bool is_measure)
{
    DRec *r = (DRec *)rq;
    if (!r->nondiff) r->nondiff = what;
    if (is_measure) r->measured = true;
}

static const SvOp *rec_gate(QRec *rq, const SvOp *op, const AdNode *pnode, SvOp *tmp)
{
    DRec *r = (DRec *)rq;
    int k = r->counter++;
    uint64_t h = r->shape ^ ((uint64_t)op->gate * 0x9e3779b97f4a7c15ULL);
    for (int i = 0; i < op->nwires; i++) h = (h ^ (uint64_t)op->wires[i]) * 0x100000001b3ULL;
    for (int i = 0; i < op->nctrl; i++) h = (h ^ (uint64_t)(op->ctrl[i] + 64)) * 0x100000001b3ULL;
    r->shape = h * 0xbf58476d1ce4e5b9ULL + (uint64_t)op->adjoint;
    if (r->mode == QR_SHIFT) {
        if (k != r->shift_op) return op;
        *tmp = *op;
        tmp->params[r->shift_param] += r->shift;
        return tmp;
    }
    if (r->nops == r->capops) {
        int cap = r->capops ? r->capops * 2 : 64;
        RecOp *n = realloc(r->ops, (size_t)cap * sizeof(RecOp));
        if (!n) {
            snprintf(r->err, sizeof r->err, "grad: out of memory recording the circuit");
            return NULL;
        }
        r->ops = n;
        r->capops = cap;
    }
    RecOp *o = &r->ops[r->nops];
    o->op = *op;
    o->matrix = NULL;
    o->tracked = 0;
    if (op->matrix) {
        size_t d = (size_t)1 << op->nwires;
        o->matrix = malloc(d * d * sizeof(cplx));
        if (!o->matrix) {
            snprintf(r->err, sizeof r->err, "grad: out of memory recording the circuit");
            return NULL;
        }
        memcpy(o->matrix, op->matrix, d * d * sizeof(cplx));
        o->op.matrix = o->matrix;
    }
    for (int p = 0; p < op->nparams && p < 3; p++) {
        if (!pnode || pnode[p] == AD_NONE) continue;
        if (r->nslots == r->capslots) {
            int cap = r->capslots ? r->capslots * 2 : 32;
            Slot *n = realloc(r->slots, (size_t)cap * sizeof(Slot));
            if (!n) {
                snprintf(r->err, sizeof r->err, "grad: out of memory recording the circuit");
                return NULL;
            }
            r->slots = n;
            r->capslots = cap;
        }
        r->slots[r->nslots++] = (Slot){ r->nops, p, pnode[p], false };
        o->tracked |= (uint8_t)(1u << p);
    }
    r->nops++;
    return op;
}

static bool push_vals(DRec *r, const double *v, int n)
{
    if (r->nvals + n > r->capvals) {
        int cap = r->capvals ? r->capvals : 16;
        while (cap < r->nvals + n) cap *= 2;
        double *nv = realloc(r->vals, (size_t)cap * sizeof(double));
        if (!nv) return false;
        r->vals = nv;
        r->capvals = cap;
    }
    memcpy(r->vals + r->nvals, v, (size_t)n * sizeof(double));
    r->nvals += n;
    return true;
}

static Quant *new_quant(DRec *r, QKind kind, int rows)
{
    if (r->nquant == r->capq) {
        int cap = r->capq ? r->capq * 2 : 8;
        Quant *n = realloc(r->q, (size_t)cap * sizeof(Quant));
        if (!n) return NULL;
        r->q = n;
        r->capq = cap;
    }
    qh_assert(rows >= 0 && r->nquant < r->capq);
    Quant *q = &r->q[r->nquant++];
    memset(q, 0, sizeof *q);
    q->kind = kind;
    q->pos = r->nops;
    q->nslots = r->nslots;
    q->rows = rows;
    q->off = r->nvals;
    q->node[0] = q->node[1] = AD_NONE;
    r->nvals += rows;
    return q;
}

/* The Jacobian node of rows values over the parameters recorded so far. */
static AdNode quant_node(DRec *r, int nslots, int ndim, const size_t *shape)
{
    AdTape *t = r->vm->ad->tape;
    qh_assert(nslots >= 0 && nslots <= r->nslots); /* the parameters recorded so far */
    AdNode par[nslots ? nslots : 1];
    for (int i = 0; i < nslots; i++) par[i] = r->slots[i].node;
    return ad_jac(t, nslots, par, ndim, shape);
}

static Value rec_expval(VM *vm, QRec *rq, const SvTerm *t, int n, double e, const Node *site)
{
    DRec *r = (DRec *)rq;
    if (r->mode == QR_SHIFT) {
        if (!push_vals(r, &e, 1)) return vm_error(vm, site, "grad: out of memory");
        return v_num(e);
    }
    if (r->mode != QR_RECORD) return v_num(e);
    Quant *q = new_quant(r, Q_EXPVAL, 1);
    if (!q || !(q->t = sv_terms_dup(t, n))) return vm_error(vm, site, "grad: out of memory");
    q->n = n;
    if (!q->nslots) return v_num(e);
    q->node[0] = quant_node(r, q->nslots, 0, NULL);
    return track_num(vm, e, q->node[0], site);
}

static Value rec_var(VM *vm, QRec *rq, const SvTerm *t, int n, double e, double e2,
                     const Node *site)
{
    DRec *r = (DRec *)rq;
    double v = e2 - e * e;
    if (v < 0) v = 0;
    if (r->mode == QR_SHIFT) {
        double two[2] = { e, e2 };
        if (!push_vals(r, two, 2)) return vm_error(vm, site, "grad: out of memory");
        return v_num(v);
    }
    if (r->mode != QR_RECORD) return v_num(v);
    Quant *q = new_quant(r, Q_VAR, 2);
    if (!q || !(q->t = sv_terms_dup(t, n))) return vm_error(vm, site, "grad: out of memory");
    q->n = n;
    char err[200] = "out of memory";
    if (!(q->t2 = sv_terms_square(t, n, &q->n2, err, sizeof err)))
        return vm_error(vm, site, "grad: %s", err);
    if (!q->nslots) return v_num(v);
    q->node[0] = quant_node(r, q->nslots, 0, NULL);
    q->node[1] = quant_node(r, q->nslots, 0, NULL);
    /* var = <O^2> - <O>^2 */
    return track_num(vm, v, ad_s2(vm->ad->tape, q->node[1], 1, q->node[0], -2 * e), site);
}

static Value rec_probs(VM *vm, QRec *rq, const int *wires, int nw, int nq, Array *p,
                       const Node *site)
{
    DRec *r = (DRec *)rq;
    size_t K = ar_size(p);
    if (r->mode == QR_SHIFT) {
        if (!push_vals(r, ar_f64_ro(p), (int)K)) {
            ar_free(p);
            return vm_error(vm, site, "grad: out of memory");
        }
        return arr_wrap(p);
    }
    if (r->mode != QR_RECORD) return arr_wrap(p);
    if (K > 4096) {
        ar_free(p);
        return vm_error(vm, site, "grad: probs() of more than 12 wires cannot be differentiated");
    }
    Quant *q = new_quant(r, Q_PROBS, (int)K);
    if (!q) {
        ar_free(p);
        return vm_error(vm, site, "grad: out of memory");
    }
    q->nw = nw ? nw : nq;
    for (int i = 0; i < q->nw; i++) q->wires[i] = nw ? wires[i] : i;
    if (!q->nslots) return arr_wrap(p);
    q->node[0] = quant_node(r, q->nslots, 1, &K);
    return track_arr(vm, p, q->node[0], site);
}

static bool rec_after_body(QRec *rq, const SvState *s, int nq)
{
    DRec *r = (DRec *)rq;
    r->nqubits = nq;
    if (r->err[0]) return false;
    if (r->mode == QR_METRIC) return true;
    if (r->mode == QR_RECORD && r->nondiff) {
        if (strcmp(r->nondiff, "sample") == 0 || strcmp(r->nondiff, "counts") == 0)
            snprintf(r->err, sizeof r->err, "grad: %s() draws random samples and has no derivative",
                     r->nondiff);
        else
            snprintf(r->err, sizeof r->err,
                     "grad(method=\"%s\") cannot follow %s(); use method=\"finite-diff\"",
                     r->adjoint ? "adjoint" : "parameter-shift", r->nondiff);
        return false;
    }
    if (r->mode == QR_RECORD && r->adjoint && r->best && (!s || (r->shots && r->nquant))) {
        r->adjoint = false; /* the mixed device or shots: parameter-shift */
        r->to_shift = true;
        return true;
    }
    if (r->mode == QR_RECORD && r->adjoint) {
        if (!s) {
            snprintf(r->err, sizeof r->err,
                     "grad(method=\"adjoint\") needs the statevector device; on the mixed device "
                     "use method=\"parameter-shift\" or \"finite-diff\"");
            return false;
        }
        if (r->shots && r->nquant) {
            snprintf(r->err, sizeof r->err,
                     "grad(method=\"adjoint\") needs an exact device (no shots); use "
                     "method=\"parameter-shift\"");
            return false;
        }
        r->final = aligned_alloc(64, s->dim * sizeof(cplx) < 64 ? 64 : s->dim * sizeof(cplx));
        if (!r->final) {
            snprintf(r->err, sizeof r->err, "grad: out of memory keeping the final state");
            return false;
        }
        memcpy(r->final, s->amp, s->dim * sizeof(cplx));
    }
    return true;
}

/* Why: channel parameters have exact derivatives (lang/quantum.md, "Noise
   channels"): each tracked one is a slot whose derivative is one run with
   the channel's map replaced by its derivative (everything after it is
   linear in rho, so that run measures the derivatives of the values). */
static int rec_channel(QRec *rq, const char *name, int np, const AdNode *pnode)
{
    DRec *r = (DRec *)rq;
    int k = r->nchan++;
    r->shape = (r->shape ^ ((uint64_t)k + 0x51)) * 0xbf58476d1ce4e5b9ULL;
    if (r->mode == QR_SHIFT) return k == r->dchan ? 1 + r->dparam : 0;
    if (r->mode == QR_METRIC) { /* sv_metric_tensor works on the pure state of the gates */
        snprintf(r->err, sizeof r->err,
                 "metric_tensor: %s: a circuit with noise channels (the metric tensor here is the "
                 "Fubini-Study metric of the gates' pure state)",
                 name);
        return -1;
    }
    int first = -1;
    for (int i = 0; i < np && first < 0; i++)
        if (pnode[i] != AD_NONE) first = i;
    if (first < 0) return 0;
    if (r->shots) {
        snprintf(r->err, sizeof r->err,
                 "grad: %s: a channel parameter on a device with shots has no exact derivative "
                 "(it needs the density matrix); use a device without shots, or "
                 "method=\"finite-diff\"",
                 name);
        return -1;
    }
    for (int p = first; p < np; p++) {
        if (pnode[p] == AD_NONE) continue;
        if (r->nslots == r->capslots) {
            int cap = r->capslots ? r->capslots * 2 : 32;
            Slot *n = realloc(r->slots, (size_t)cap * sizeof(Slot));
            if (!n) {
                snprintf(r->err, sizeof r->err, "grad: out of memory recording the circuit");
                return -1;
            }
            r->slots = n;
            r->capslots = cap;
        }
        r->slots[r->nslots++] = (Slot){ k, p, pnode[p], true };
    }
    return 0;
}

static const QRecOps drec_ops = {
    rec_gate,  rec_expval,     rec_var,   rec_probs,   rec_nondiff,
    rec_shots, rec_after_body, rec_error, rec_channel,
};

static void qrec_init(DRec *r, QRMode mode, VM *vm)
{
    memset(r, 0, sizeof *r);
    r->head.ops = &drec_ops;
    r->mode = mode;
    r->vm = vm;
    r->shift_op = -1;
    r->dchan = -1;
}


/* ================================================================ markers */

/* In the master copy of a call's arguments, each tracked value is a marker:
 * input k. Copied with a MarkMap it becomes what the run needs. */
typedef struct ObjMark {
    Obj h;
    int input;
    double x;
    Array *a;
} ObjMark;
#define AS_MARK(v) ((ObjMark *)(v).o)
static ValType T_MARK = T_NTYPES;

#define MARK_MAGIC 0x51ad9e11u
typedef enum { MM_LEAF, MM_PLAIN, MM_PERTURB } MarkMode;
typedef struct MarkMap {
    uint32_t magic;
    MarkMode mode;
    VM *vm;              /* MM_LEAF: its tape */
    AdNode *leaf;        /* MM_LEAF: the new inputs' nodes, by input */
    const size_t *inoff; /* MM_PERTURB: input k's first flat position */
    size_t at;           /* MM_PERTURB: the flat position moved */
    double h;
    bool failed;
} MarkMap;

static void mark_free(Obj *o)
{
    ar_free(((ObjMark *)o)->a);
    free(o);
}
static void mark_repr(Buf *b, Value v, bool quoted)
{
    (void)v;
    (void)quoted;
    buf_puts(b, "<differentiated argument>");
}

static Value mark_copy(Value v, CopyCtx *cc)
{
    ObjMark *m = AS_MARK(v);
    MarkMap *mm = cc->user;
    char err[AR_ERRLEN];
    if (!mm || mm->magic != MARK_MAGIC) { /* a master copy: still a marker */
        ObjMark *n = (ObjMark *)obj_alloc(sizeof(ObjMark), T_MARK);
        n->input = m->input;
        n->x = m->x;
        n->a = m->a ? ar_copy(m->a, err) : NULL;
        copy_memo_put(cc, v.o, n);
        return v_obj(&n->h);
    }
    if (mm->mode == MM_LEAF) {
        AdTape *t = mm->vm->ad->tape;
        if (!m->a) {
            mm->leaf[m->input] = ad_input(t, 0, NULL);
            return track_num(mm->vm, m->x, mm->leaf[m->input], NULL);
        }
        mm->leaf[m->input] = ad_input(t, ar_ndim(m->a), ar_shape(m->a));
        Array *c = ar_copy(m->a, err);
        if (!c) {
            mm->failed = true;
            return v_nil();
        }
        return track_arr(mm->vm, c, mm->leaf[m->input], NULL);
    }
    size_t off = mm->mode == MM_PERTURB ? mm->inoff[m->input] : 0;
    if (!m->a) {
        double x = m->x;
        if (mm->mode == MM_PERTURB && mm->at == off) x += mm->h;
        return v_num(x);
    }
    Array *c = ar_copy(m->a, err);
    if (!c) {
        mm->failed = true;
        return v_nil();
    }
    if (mm->mode == MM_PERTURB && mm->at >= off && mm->at < off + ar_size(c))
        ar_f64(c)[mm->at - off] += mm->h;
    return arr_wrap(c);
}

/* The inputs of a call: each tracked value found in its arguments. */
typedef struct Inputs {
    AdNode *node;
    size_t *size;
    double *x;
    size_t n, nx, cap, capx;
} Inputs;

static bool inputs_add(Inputs *in, AdNode node, const double *x, size_t n)
{
    if (in->n == in->cap) {
        /* each block replaced only when its realloc succeeds: on failure the blocks are
         * still owned, cap long, and the caller frees them */
        size_t cap = in->cap ? in->cap * 2 : 8;
        AdNode *node = realloc(in->node, cap * sizeof(AdNode));
        if (node) in->node = node;
        size_t *size = node ? realloc(in->size, cap * sizeof(size_t)) : NULL;
        if (!size) return false;
        in->size = size;
        in->cap = cap;
    }
    if (in->nx + n > in->capx) {
        size_t capx = in->capx ? in->capx : 16;
        while (in->nx + n > capx) capx *= 2;
        double *x2 = realloc(in->x, capx * sizeof(double));
        if (!x2) return false;
        in->x = x2;
        in->capx = capx;
    }
    in->node[in->n] = node;
    in->size[in->n++] = n;
    memcpy(in->x + in->nx, x, n * sizeof(double));
    in->nx += n;
    return true;
}

/* The arguments with markers for the tracked values (forcing pending
 * results on the way): a new reference, or v_exc(). */
static Value mark_walk(VM *vm, Value v, Inputs *in, const Node *site)
{
    if (is_lazy(v)) {
        Value f = tp_force(vm, v, site);
        if (IS_EXC(f)) return f;
        Value r = mark_walk(vm, f, in, site);
        decref(f);
        return r;
    }
    if (track_is(v)) {
        double x;
        AdNode n;
        bool err;
        ObjMark *m = (ObjMark *)obj_alloc(sizeof(ObjMark), T_MARK);
        m->input = (int)in->n;
        if (track_is_num(v)) {
            if (!track_number(vm, v, &x, &n, site, &err)) {
                decref(v_obj(&m->h));
                return v_exc();
            }
            m->x = x;
            if (!inputs_add(in, n, &x, 1)) {
                decref(v_obj(&m->h));
                return vm_error(vm, site, "grad: out of memory");
            }
        } else {
            char e[AR_ERRLEN];
            m->a = ar_copy(track_array(v), e);
            if (!m->a || !inputs_add(in, track_node(v), ar_f64_ro(m->a), ar_size(m->a))) {
                decref(v_obj(&m->h));
                return vm_error(vm, site, "grad: out of memory");
            }
        }
        return v_obj(&m->h);
    }
    if (v.t == T_LIST && track_inside(v)) {
        ObjList *l = AS_LIST(v), *c = list_new(l->len);
        Value cv = v_list(c);
        for (size_t i = 0; i < l->len; i++) {
            Value e = mark_walk(vm, l->v[i], in, site);
            if (IS_EXC(e)) {
                decref(cv);
                return e;
            }
            c->v[c->len++] = e;
        }
        return cv;
    }
    if (v.t == T_DICT && track_inside(v)) {
        ObjDict *d = AS_DICT(v), *c = dict_new();
        Value cv = v_obj(&c->h);
        for (size_t i = 0; i < d->nent; i++) {
            if (!d->ent[i].live) continue;
            Value e = mark_walk(vm, d->ent[i].val, in, site);
            if (IS_EXC(e)) {
                decref(cv);
                return e;
            }
            dict_set(c, d->ent[i].key, e);
            decref(e);
        }
        return cv;
    }
    incref(v);
    return v;
}

/* ================================================================ calls and work items */

typedef enum UKind { U_FORWARD, U_SWEEP, U_SHIFT, U_FD } UKind;
typedef struct Unit {
    UKind kind;
    struct QCall *c;
    int run;
} Unit;

/* One qfn call with tracked arguments. The master part is written before
 * its forward item is added and only read afterwards; each item writes its
 * own fields; the owner reads them after finishing the item. */
typedef struct QCall {
    Value fn; /* master copies */
    Value *params;
    int nparams;
    CopyCtx mods;
    uint64_t seed, index;
    GradMethod method;
    bool best; /* the method was not asked for */
    const Node *site;
    char name[64];
    int nin;      /* inputs (tracked values in the arguments) */
    size_t width; /* their scalars */
    size_t *inoff, *insize;
    double *inx;    /* their values, flat */
    AdNode *innode; /* their nodes on the evaluation's tape (the owner's) */
    /* the forward run */
    int fwd_item;
    int *skel;
    int nskel; /* the result's structure: 0 number; 1 ndim shape... array; 2 len children... list */
    double *vals;
    size_t m;      /* its numbers, flat */
    AdTape *sub;   /* the run's own tape */
    AdNode *subin; /* its inputs' nodes */
    AdNode *subout;
    size_t *suboutpos; /* each output number's node and position */
    DRec rec;          /* what the run recorded */
    /* the method's runs */
    int nruns;
    int *run_slot;
    double *run_shift, *run_coef;
    double *runvals; /* nruns x (rec.nvals, or m for finite differences) */
    double *J;       /* m x width */
    /* the owner's */
    AdNode jnode;
    Value result;
    bool forced;
} QCall;

typedef struct Work {
    Interp *in;
    pthread_mutex_t mu;
    Unit *units;
    int nunits, cap;
    JobSet *js;
    QCall **calls;
    int ncalls, capcalls; /* owner only */
} Work;

struct DiffQ {
    GradMethod method;
    bool best; /* no method asked for (diffq_new) */
    AdCtx *ctx;
    Work *w;
};

static void call_free(QCall *c)
{
    for (int i = 0; i < c->nparams; i++) decref(c->params[i]);
    copy_release_modules(&c->mods);
    decref(c->fn);
    free(c->params);
    free(c->inoff);
    free(c->insize);
    free(c->inx);
    free(c->innode);
    free(c->skel);
    free(c->vals);
    ad_free(c->sub);
    free(c->subin);
    free(c->subout);
    free(c->suboutpos);
    qrec_free(&c->rec);
    free(c->run_slot);
    free(c->run_shift);
    free(c->run_coef);
    free(c->runvals);
    free(c->J);
    free(c);
}

static void work_free(void *p)
{
    Work *w = p;
    for (int i = 0; i < w->ncalls; i++) call_free(w->calls[i]);
    free(w->calls);
    free(w->units);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

/* Adds an item (thread-safe): the unit is in place before anyone can claim it. */
static int add_unit(Work *w, UKind kind, QCall *c, int run)
{
    pthread_mutex_lock(&w->mu);
    if (w->nunits == w->cap) {
        int cap = w->cap ? w->cap * 2 : 64;
        Unit *u = realloc(w->units, (size_t)cap * sizeof(Unit));
        if (!u) {
            pthread_mutex_unlock(&w->mu);
            return -1;
        }
        w->units = u;
        w->cap = cap;
    }
    w->units[w->nunits] = (Unit){ kind, c, run };
    int item = jobset_add(w->js);
    if (item >= 0) {
        qh_assert(item == w->nunits);
        w->nunits++;
    }
    pthread_mutex_unlock(&w->mu);
    return item;
}

static void fail(Work *w, QCall *c, const char *fmt, const char *msg)
{
    char buf[1200];
    snprintf(buf, sizeof buf, fmt, c->name, msg);
    jobset_fail(w->js, buf);
}

/* A run's error, where it happened in the body (as a task's failure says:
   task.c), so grad's message names the line inside the qfn. */
static void fail_vm(Work *w, QCall *c, const VM *vm)
{
    const VMError *e = &vm->err;
    char msg[1100];
    if (!e->chained && e->src && e->line > 0)
        snprintf(msg, sizeof msg, "%s (%s:%d)", e->msg, e->src->name, e->line);
    else
        snprintf(msg, sizeof msg, "%s", e->msg);
    fail(w, c, "%s(): %s", msg);
}

/* ---- flattening a call's result ------------------------------------------ */

typedef struct Flat {
    int *skel;
    int nskel, capskel;
    double *v;
    size_t n, cap;
    AdNode *node;
    size_t *pos;
    bool track;
} Flat;

static bool fl_int(Flat *f, int x)
{
    if (f->nskel == f->capskel) {
        int cap = f->capskel ? f->capskel * 2 : 16;
        int *skel = realloc(f->skel, (size_t)cap * sizeof(int));
        if (!skel) return false; /* f->skel still owned: the caller frees it */
        f->skel = skel;
        f->capskel = cap;
    }
    f->skel[f->nskel++] = x;
    return true;
}

static bool fl_num(Flat *f, double x, AdNode n, size_t p)
{
    if (f->n == f->cap) {
        /* each block replaced only when its realloc succeeds (the caller frees them) */
        size_t cap = f->cap ? f->cap * 2 : 16;
        double *v = realloc(f->v, cap * sizeof(double));
        if (v) f->v = v;
        AdNode *node = v ? realloc(f->node, cap * sizeof(AdNode)) : NULL;
        if (node) f->node = node;
        size_t *pos = node ? realloc(f->pos, cap * sizeof(size_t)) : NULL;
        if (!pos) return false;
        f->pos = pos;
        f->cap = cap;
    }
    f->v[f->n] = x;
    f->node[f->n] = n;
    f->pos[f->n++] = p;
    return true;
}

/* r as numbers; false with a message */
static bool flatten(VM *vm, Value r, Flat *f, char *err, size_t errlen)
{
    if (r.t == T_LIST) {
        ObjList *l = AS_LIST(r);
        if (!fl_int(f, 2) || !fl_int(f, (int)l->len)) goto oom;
        for (size_t i = 0; i < l->len; i++)
            if (!flatten(vm, l->v[i], f, err, errlen)) return false;
        return true;
    }
    const Array *A = NULL;
    AdNode an = AD_NONE;
    if (r.t == T_ARRAY)
        A = AS_ARR(r);
    else if (track_is_arr(r)) {
        A = track_array(r);
        an = track_node(r);
    }
    if (A) {
        if (ar_is_complex(A)) {
            snprintf(err, errlen, "a complex array");
            return false;
        }
        if (!fl_int(f, 1) || !fl_int(f, ar_ndim(A))) goto oom;
        for (int i = 0; i < ar_ndim(A); i++)
            if (!fl_int(f, (int)ar_shape(A)[i])) goto oom;
        const double *x = ar_f64_ro(A);
        for (size_t i = 0; i < ar_size(A); i++)
            if (!fl_num(f, x[i], an, i)) goto oom;
        return true;
    }
    double x;
    AdNode n;
    bool e;
    if (!track_number(vm, r, &x, &n, NULL, &e)) {
        snprintf(err, errlen, "%.200s", e ? vm->err.msg : type_name(r));
        return false;
    }
    if (!fl_int(f, 0) || !fl_num(f, x, n, 0)) goto oom;
    return true;
oom:
    snprintf(err, errlen, "out of memory");
    return false;
}

static void flat_free(Flat *f)
{
    free(f->skel);
    free(f->v);
    free(f->node);
    free(f->pos);
}

/* ---- running a call -------------------------------------------------------- */

/* The call's function and arguments copied for this run (markers mapped
 * by mm) into a frame on vm's stack; runs it; the result or v_exc(). */
static Value run_call(VM *vm, QCall *c, MarkMap *mm, DRec *rec)
{
    CopyCtx cc;
    copy_init(&cc);
    cc.user = mm;
    Value fn = value_copy_deep(c->fn, &cc);
    ObjFunc *f = AS_FUNC(fn);
    size_t base = vm->sp;
    int nl = f->p->nlocals;
    if (base + (size_t)nl + 8 >= vm->cap) {
        copy_done(&cc);
        copy_release_modules(&cc);
        decref(fn);
        return vm_error(vm, c->site, "maximum recursion depth exceeded (value stack full)");
    }
    Value *slots = vm->stack + base;
    for (int i = 0; i < c->nparams; i++) slots[i] = value_copy_deep(c->params[i], &cc);
    for (int i = c->nparams; i < nl; i++) slots[i] = v_unbound();
    copy_done(&cc);
    vm->sp = base + (size_t)nl;
    Value r;
    if (mm && mm->failed) {
        for (int i = 0; i < nl; i++) decref(slots[i]);
        r = vm_error(vm, c->site, "grad: out of memory");
    } else {
        /* as a nested call in async.c: its own calls are numbered from its id */
        uint64_t saved_seed = vm->stream_seed, saved_seq = vm->qcall_seq, saved_id = vm->call_id;
        vm->stream_seed = c->seed;
        vm->call_id = c->index;
        vm->qcall_seq = 0;
        r = qrt_run_rec(vm, f, c->seed, c->index, slots, c->site, rec ? &rec->head : NULL);
        vm->stream_seed = saved_seed;
        vm->qcall_seq = saved_seq;
        vm->call_id = saved_id;
    }
    vm->sp = base;
    copy_release_modules(&cc);
    decref(fn);
    return r;
}

/* Adds the method's runs for a recorded call. */
static bool plan_runs(Work *w, QCall *c)
{
    if (c->method == GRAD_ADJOINT) return add_unit(w, U_SWEEP, c, 0) >= 0;
    if (c->method == GRAD_FD) {
        c->nruns = (int)(2 * c->width);
        c->runvals = calloc((size_t)c->nruns * c->m + 1, sizeof(double));
        if (!c->runvals) return false;
        for (int r = 0; r < c->nruns; r++)
            if (add_unit(w, U_FD, c, r) < 0) return false;
        return true;
    }
    /* the shift rule per recorded parameter: two terms (generator
     * eigenvalues +-1/2, or 0 and 1), or four where the spectrum is
     * {0, +-1/2} (controlled rotations, Single/DoubleExcitation):
     * f' = c+ [f(t + pi/2) - f(t - pi/2)] - c- [f(t + 3pi/2) - f(t - 3pi/2)] */
    const double cp = (M_SQRT2 + 1) / (4 * M_SQRT2), cm = (M_SQRT2 - 1) / (4 * M_SQRT2);
    int cap = 4 * c->rec.nslots + 1;
    c->run_slot = malloc((size_t)cap * sizeof(int));
    c->run_shift = malloc((size_t)cap * sizeof(double));
    c->run_coef = malloc((size_t)cap * sizeof(double));
    if (!c->run_slot || !c->run_shift || !c->run_coef) return false;
    int n = 0;
    for (int s = 0; s < c->rec.nslots; s++) {
        if (c->rec.slots[s].chan) { /* one run: the channel's derivative map */
            c->run_slot[n] = s;
            c->run_shift[n] = 0;
            c->run_coef[n] = 1;
            n++;
            continue;
        }
        const SvOp *op = &c->rec.ops[c->rec.slots[s].op].op;
        const SvGateInfo *gi = sv_gate_info(op->gate);
        bool phase_like = op->gate == SV_PHASESHIFT || op->gate == SV_CPHASE;
        bool four = op->nctrl ? !phase_like : !gi->shift_rule;
        static const double s4[4] = { M_PI_2, -M_PI_2, 3 * M_PI_2, -3 * M_PI_2 };
        static const double s2[2] = { M_PI_2, -M_PI_2 };
        double c4[4] = { cp, -cp, -cm, cm }, c2[2] = { 0.5, -0.5 };
        for (int r = 0; r < (four ? 4 : 2); r++) {
            c->run_slot[n] = s;
            c->run_shift[n] = four ? s4[r] : s2[r];
            c->run_coef[n] = four ? c4[r] : c2[r];
            n++;
        }
    }
    c->nruns = n;
    c->runvals = calloc((size_t)n * (size_t)c->rec.nvals + 1, sizeof(double));
    if (!c->runvals) return false;
    for (int r = 0; r < n; r++)
        if (add_unit(w, U_SHIFT, c, r) < 0) return false;
    return true;
}

static int do_forward(Work *w, QCall *c, VM *vm)
{
    bool record = c->method != GRAD_FD;
    AdCtx *sub = NULL;
    MarkMap mm = { MARK_MAGIC, record ? MM_LEAF : MM_PLAIN, vm, NULL, c->inoff, 0, 0, false };
    if (record) {
        sub = track_begin(vm);
        c->subin = malloc((size_t)(c->nin ? c->nin : 1) * sizeof(AdNode));
        if (!sub || !c->subin) {
            track_end(vm, sub);
            fail(w, c, "grad of %s(): %s", "out of memory");
            return -1;
        }
        for (int i = 0; i < c->nin; i++) c->subin[i] = AD_NONE;
        mm.leaf = c->subin;
        qrec_init(&c->rec, QR_RECORD, vm);
        c->rec.adjoint = c->method == GRAD_ADJOINT;
        c->rec.best = c->best;
    }
    Value r = run_call(vm, c, &mm, record ? &c->rec : NULL);
    if (IS_EXC(r)) {
        if (record) track_end(vm, sub);
        fail_vm(w, c, vm);
        (void)c->name;
        return -1;
    }
    Flat f;
    memset(&f, 0, sizeof f);
    char err[300];
    bool ok = flatten(vm, r, &f, err, sizeof err);
    decref(r);
    if (!ok) {
        flat_free(&f);
        if (record) track_end(vm, sub);
        char msg[400];
        snprintf(msg, sizeof msg,
                 "a differentiated quantum function must return numbers, a list or an array of "
                 "them, not %s",
                 err);
        fail(w, c, "grad: %s(): %s", msg);
        return -1;
    }
    c->skel = f.skel;
    c->nskel = f.nskel;
    c->vals = f.v;
    c->m = f.n;
    c->subout = f.node;
    c->suboutpos = f.pos;
    if (record) {
        c->sub = sub->tape; /* the run's tape stays with the call */
        sub->tape = NULL;
        track_end(vm, sub);
    } else {
        free(c->subout);
        free(c->suboutpos);
        c->subout = NULL;
        c->suboutpos = NULL;
    }
    if (record && c->rec.to_shift) c->method = GRAD_SHIFT;
    if (!plan_runs(w, c)) {
        fail(w, c, "grad of %s(): %s", "out of memory");
        return -1;
    }
    return 0;
}

/* Output-by-input Jacobian from the call's tape (its quantities' Jacobian
 * nodes set): one backward sweep per output number. */
static bool chain(QCall *c, char *err, size_t errlen)
{
    c->J = calloc(c->m * c->width + 1, sizeof(double));
    AdGrad *g = ad_grad_new();
    if (!c->J || !g) {
        ad_grad_free(g);
        snprintf(err, errlen, "out of memory");
        return false;
    }
    for (size_t i = 0; i < c->m; i++) {
        AdNode n = c->subout[i];
        if (n == AD_NONE) continue;
        size_t sz = ad_size(c->sub, n);
        double *seed = calloc(sz ? sz : 1, sizeof(double));
        if (!seed) {
            ad_grad_free(g);
            snprintf(err, errlen, "out of memory");
            return false;
        }
        seed[c->suboutpos[i]] = 1;
        int rc = ad_backward(c->sub, n, seed, g);
        free(seed);
        if (rc != 0) {
            snprintf(err, errlen, "%s", ad_error(c->sub));
            ad_grad_free(g);
            return false;
        }
        for (int k = 0; k < c->nin; k++) {
            const double *a = c->subin[k] != AD_NONE ? ad_adjoint(g, c->subin[k]) : NULL;
            for (size_t j = 0; j < c->insize[k]; j++)
                c->J[i * c->width + c->inoff[k] + j] = a ? a[j] : 0;
        }
    }
    ad_grad_free(g);
    return true;
}

/* The derivative rows of quantity q from a table d[row][slot] (rows x nslots). */
static bool set_quant(QCall *c, const Quant *q, const double *d, int stride, char *err,
                      size_t errlen)
{
    for (int part = 0; part < (q->kind == Q_VAR ? 2 : 1); part++) {
        if (q->node[part] == AD_NONE) continue;
        int rows = q->kind == Q_VAR ? 1 : q->rows;
        qh_assert(stride >= q->nslots && rows >= 0); /* a row holds every slot's derivative */
        double *Jq = malloc((size_t)(rows * q->nslots + 1) * sizeof(double));
        if (!Jq) {
            snprintf(err, errlen, "out of memory");
            return false;
        }
        for (int r = 0; r < rows; r++)
            for (int s = 0; s < q->nslots; s++)
                Jq[r * q->nslots + s] = d[(size_t)(part + r) * (size_t)stride + (size_t)s];
        int rc = ad_jac_set(c->sub, q->node[part], Jq);
        free(Jq);
        if (rc != 0) {
            snprintf(err, errlen, "%s", ad_error(c->sub));
            return false;
        }
    }
    return true;
}

/* The adjoint sweep's observables for the recorded call r (room for every
   row): per row of each quantity its observable obs[row] (nt[row] terms),
   measured after pos[row] gates: an expval's, a var's O and O^2, a probs
   row's projector onto its basis state (kept in basis). */
static void sweep_rows(const DRec *r, const SvTerm **obs, int *nt, int *pos, SvTerm *basis)
{
    int row = 0, b = 0;
    for (int i = 0; i < r->nquant; i++) {
        const Quant *q = &r->q[i];
        if (q->kind == Q_EXPVAL) {
            obs[row] = q->t;
            nt[row] = q->n;
            pos[row++] = q->pos;
        } else if (q->kind == Q_VAR) {
            obs[row] = q->t;
            nt[row] = q->n;
            pos[row++] = q->pos;
            obs[row] = q->t2;
            nt[row] = q->n2;
            pos[row++] = q->pos;
        } else {
            for (int k = 0; k < q->rows; k++, b++) {
                SvTerm *t = &basis[b];
                t->coeff = 1;
                t->kind = SVB_BASIS;
                t->k = q->nw;
                for (int j = 0; j < q->nw; j++) {
                    t->wires[j] = q->wires[j];
                    if ((k >> (q->nw - 1 - j)) & 1) t->bits |= (uint64_t)1 << j;
                }
                obs[row] = t;
                nt[row] = 1;
                pos[row++] = q->pos;
            }
        }
    }
}

static int do_sweep(Work *w, QCall *c, VM *vm)
{
    (void)vm;
    DRec *r = &c->rec;
    int R = 0;
    for (int i = 0; i < r->nquant; i++) R += r->q[i].rows;
    char err[300] = "out of memory";
    const SvTerm **obs = malloc((size_t)(R + 1) * sizeof *obs);
    int *nt = malloc((size_t)(R + 1) * sizeof(int)), *pos = malloc((size_t)(R + 1) * sizeof(int));
    SvTerm *basis = NULL;
    SvOp *ops = malloc((size_t)(r->nops + 1) * sizeof(SvOp));
    uint8_t *want = malloc((size_t)(r->nops + 1));
    double *out = malloc(((size_t)R * 3 * (size_t)r->nops + 1) * sizeof(double));
    double *d = NULL;
    bool ok = obs && nt && pos && ops && want && out;
    int nbasis = 0;
    for (int i = 0; ok && i < r->nquant; i++)
        if (r->q[i].kind == Q_PROBS) nbasis += r->q[i].rows;
    if (ok && nbasis && !(basis = calloc((size_t)nbasis, sizeof(SvTerm)))) ok = false;
    if (ok) {
        sweep_rows(r, obs, nt, pos, basis);
        for (int k = 0; k < r->nops; k++) {
            ops[k] = r->ops[k].op;
            want[k] = r->ops[k].tracked;
        }
        SvState fin;
        memset(&fin, 0, sizeof fin);
        fin.nq = r->nqubits;
        fin.dim = (size_t)1 << r->nqubits;
        fin.amp = r->final;
        fin.nthreads = 1;
        fin.simd = sv_simd_level();
        SvAdjointSpec as = { ops, r->nops, want, R, obs, nt, pos };
        if (R && sv_adjoint_inplace(&fin, &as, out, err, sizeof err) != 0) ok = false;
    }
    /* each quantity's rows by its parameters (slot s = gate op, param p) */
    int row = 0;
    for (int i = 0; ok && i < r->nquant; i++) {
        const Quant *q = &r->q[i];
        double *d2 = realloc(d, ((size_t)q->rows * (size_t)(q->nslots + 1) + 1) * sizeof(double));
        if (!d2) { /* d still owned: freed below */
            ok = false;
            break;
        }
        d = d2;
        for (int k = 0; k < q->rows; k++)
            for (int s = 0; s < q->nslots; s++) {
                const Slot *sl = &r->slots[s];
                qh_assert(!sl->chan); /* channels only on the mixed device: parameter shift */
                d[(size_t)k * (size_t)q->nslots + (size_t)s] =
                    out[(size_t)(row + k) * 3 * (size_t)r->nops + 3 * (size_t)sl->op +
                        (size_t)sl->param];
            }
        if (!set_quant(c, q, d, q->nslots, err, sizeof err)) ok = false;
        row += q->rows;
    }
    free(obs);
    free(nt);
    free(pos);
    free(basis);
    free(ops);
    free(want);
    free(out);
    free(d);
    free(r->final);
    r->final = NULL;
    if (ok) ok = chain(c, err, sizeof err);
    if (!ok) {
        fail(w, c, "grad of %s(): %s", err);
        return -1;
    }
    return 0;
}

static int do_shift(Work *w, QCall *c, int run, VM *vm)
{
    DRec rec;
    qrec_init(&rec, QR_SHIFT, vm);
    const Slot *sl = &c->rec.slots[c->run_slot[run]];
    if (sl->chan) {
        rec.dchan = sl->op;
        rec.dparam = sl->param;
    } else {
        rec.shift_op = sl->op;
        rec.shift_param = sl->param;
        rec.shift = c->run_shift[run];
    }
    MarkMap mm = { MARK_MAGIC, MM_PLAIN, vm, NULL, c->inoff, 0, 0, false };
    Value r = run_call(vm, c, &mm, &rec);
    if (IS_EXC(r)) {
        qrec_free(&rec);
        fail_vm(w, c, vm);
        return -1;
    }
    decref(r);
    if (rec.nvals != c->rec.nvals || rec.shape != c->rec.shape) {
        qrec_free(&rec);
        fail(w, c, "grad of %s(): %s",
             "with method=\"parameter-shift\" the circuit changed when a gate angle was shifted "
             "(it depends on a measured value); use method=\"finite-diff\"");
        return -1;
    }
    memcpy(c->runvals + (size_t)run * (size_t)c->rec.nvals, rec.vals,
           (size_t)rec.nvals * sizeof(double));
    qrec_free(&rec);
    return 0;
}

static double fd_step(const QCall *c, int run) { return 1e-6 * (fabs(c->inx[run / 2]) + 1); }

static int do_fd(Work *w, QCall *c, int run, VM *vm)
{
    double h = fd_step(c, run);
    MarkMap mm = { MARK_MAGIC,        MM_PERTURB,       vm,   NULL, c->inoff,
                   (size_t)(run / 2), run % 2 ? -h : h, false };
    Value r = run_call(vm, c, &mm, NULL);
    if (IS_EXC(r)) {
        fail_vm(w, c, vm);
        return -1;
    }
    Flat f;
    memset(&f, 0, sizeof f);
    char err[300];
    bool ok = flatten(vm, r, &f, err, sizeof err);
    decref(r);
    if (!ok || f.n != c->m) {
        flat_free(&f);
        fail(w, c, "grad of %s(): %s", "its result changed shape when an input was moved");
        return -1;
    }
    memcpy(c->runvals + (size_t)run * c->m, f.v, c->m * sizeof(double));
    flat_free(&f);
    return 0;
}

/* the job set's run callback: state is the runner's VM */
static int work_run(void *ctx, void *state, int item)
{
    Work *w = ctx;
    VM *vm = state;
    pthread_mutex_lock(&w->mu);
    Unit u = w->units[item];
    pthread_mutex_unlock(&w->mu);
    switch (u.kind) {
    case U_FORWARD: return do_forward(w, u.c, vm);
    case U_SWEEP: return do_sweep(w, u.c, vm);
    case U_SHIFT: return do_shift(w, u.c, u.run, vm);
    case U_FD: return do_fd(w, u.c, u.run, vm);
    }
    qh_unreachable();
}

static void *work_begin(void *ctx, ExecTask *t)
{
    Work *w = ctx;
    VM *vm = malloc(sizeof *vm);
    if (!vm) return NULL;
    vm_init(vm, w->in, true);
    vm->cancel = exec_task_cancel_flag(t);
    vm->task = t;
    return vm;
}

static void work_end(void *ctx, void *state)
{
    (void)ctx;
    VM *vm = state;
    if (!vm) return;
    vm_free(vm);
    free(vm);
}

static const JobSetVt work_vt = { work_begin, work_end, work_run, work_free };

/* ================================================================ the owner's side */

DiffQ *diffq_new(VM *vm, GradMethod method, bool best)
{
    DiffQ *dq = calloc(1, sizeof *dq);
    if (!dq) return NULL;
    dq->method = method;
    dq->best = best;
    dq->ctx = vm->ad;
    return dq;
}

void diffq_free(DiffQ *dq)
{
    if (!dq) return;
    if (dq->w) {
        Work *w = dq->w;
        for (int i = 0; i < w->ncalls; i++) {
            decref(w->calls[i]->result);
            w->calls[i]->result = v_nil();
        }
        /* after diffq_finish every item is over; a run that failed first (its
           cost raised with a call still pending) leaves queued items, which
           must not start now (there is no VM to run them on, and their inputs
           are being freed): the set is failed, so only running helpers are
           waited for */
        jobset_fail(w->js, "the differentiated run ended");
        jobset_finish_all(w->js, NULL);
        jobset_release(w->js);
    }
    free(dq);
}

/* the pending result of a call */
typedef struct ObjPend {
    Obj h;
    DiffQ *dq;
    QCall *c;
} ObjPend;
#define AS_PEND(v) ((ObjPend *)(v).o)
static ValType T_PEND = T_NTYPES;

/* a lazy kind: counted in value_lazy_live like futures, so forcing what a
   container holds (tp_resolve_in) finds pending results too */
static void pend_free(Obj *o)
{
    free(o);
    atomic_fetch_sub_explicit(&value_lazy_live, 1, memory_order_relaxed);
}
static void pend_repr(Buf *b, Value v, bool quoted)
{
    (void)quoted;
    buf_printf(b, "<pending %s()>", AS_PEND(v)->c->name);
}

/* The owner-side value of a finished forward run: tracked numbers on the
 * evaluation's tape, through one Jacobian node for the whole result. */
static Value build(VM *vm, QCall *c, const int *skel, int *si, size_t *vi, bool whole,
                   const Node *site)
{
    int k = skel[(*si)++];
    qh_assert(k >= 0 && k <= 2); /* the skeleton flatten() wrote: number, array, list */
    AdTape *t = vm->ad->tape;
    if (k == 0) {
        size_t p = (*vi)++;
        AdNode n = whole ? c->jnode : ad_gather(t, c->jnode, 1, &p, 0, NULL);
        return track_num(vm, c->vals[p], n, site);
    }
    if (k == 1) {
        int nd = skel[(*si)++];
        qh_assert(nd >= 1 && nd <= AR_MAXDIM);
        size_t shape[AR_MAXDIM], n = 1;
        for (int i = 0; i < nd; i++) {
            shape[i] = (size_t)skel[(*si)++];
            n *= shape[i];
        }
        char err[AR_ERRLEN];
        Array *a = ar_from_data(AR_F64, nd, shape, c->vals + *vi, err);
        if (!a) return vm_error(vm, site, "%s", err);
        AdNode node = c->jnode;
        if (!whole) {
            size_t *src = malloc((n ? n : 1) * sizeof(size_t));
            for (size_t i = 0; src && i < n; i++) src[i] = *vi + i;
            node = src ? ad_gather(t, c->jnode, n, src, nd, shape) : AD_ERR;
            free(src);
        }
        *vi += n;
        return track_arr(vm, a, node, site);
    }
    int len = skel[(*si)++];
    ObjList *l = list_new((size_t)len);
    Value lv = v_list(l);
    for (int i = 0; i < len; i++) {
        Value e = build(vm, c, skel, si, vi, false, site);
        if (IS_EXC(e)) {
            decref(lv);
            return e;
        }
        l->v[l->len++] = e;
    }
    return lv;
}

static Value pend_force(VM *vm, Value v, const Node *site)
{
    ObjPend *p = AS_PEND(v);
    QCall *c = p->c;
    DiffQ *dq = p->dq;
    if (c->forced) {
        incref(c->result);
        return c->result;
    }
    if (vm->ad != dq->ctx)
        return vm_error(
            vm, site,
            "grad: the result of %s() was used outside the evaluation that differentiates it",
            c->name);
    if (jobset_finish(dq->w->js, c->fwd_item, vm) != 0)
        return vm_error(vm, site, "%s", jobset_error(dq->w->js));
    /* one Jacobian node for the whole result: a number, an array, or flat */
    size_t shape[AR_MAXDIM];
    int nd = 0;
    bool whole = c->skel[0] != 2;
    if (c->skel[0] == 1) {
        nd = c->skel[1];
        for (int i = 0; i < nd; i++) shape[i] = (size_t)c->skel[2 + i];
    } else if (c->skel[0] == 2) {
        nd = 1;
        shape[0] = c->m;
    }
    AdNode par[c->nin ? c->nin : 1];
    const AdNode *innode = c->innode;
    for (int i = 0; i < c->nin; i++) par[i] = innode[i];
    c->jnode = ad_jac(vm->ad->tape, c->nin, par, nd, shape);
    if (c->jnode == AD_ERR) return vm_error(vm, site, "grad: %s", ad_error(vm->ad->tape));
    int si = 0;
    size_t vi = 0;
    Value r = build(vm, c, c->skel, &si, &vi, whole, site);
    if (IS_EXC(r)) return r;
    c->result = r;
    c->forced = true;
    incref(r);
    return r;
}

/* ================================================================ the qfn hook */

static Value (*async_qfn_call)(VM *vm, ObjFunc *f, Value *params, const Node *site);

static bool any_tracked(Value *params, int n)
{
    for (int i = 0; i < n; i++)
        if (track_inside(params[i]) || is_lazy(params[i])) return true;
    return false;
}

static Value diffq_call(VM *vm, ObjFunc *f, Value *params, const Node *site);

static Value hook_qfn_call(VM *vm, ObjFunc *f, Value *params, const Node *site)
{
    if (vm->ad && vm->ad->dq && f->device.t == T_DEVICE && any_tracked(params, f->p->nparams))
        return diffq_call(vm, f, params, site);
    return async_qfn_call(vm, f, params, site);
}

void diffq_attach(Interp *in)
{
    if (in->hooks.qfn_call != hook_qfn_call) {
        async_qfn_call = in->hooks.qfn_call;
        in->hooks.qfn_call = hook_qfn_call;
    }
}

/* A qfn call with tracked arguments (bound frame params, references
 * taken): master copies, a forward item, a pending result. */
static Value diffq_call(VM *vm, ObjFunc *f, Value *params, const Node *site)
{
    DiffQ *dq = vm->ad->dq;
    int nl = f->p->nlocals, np = f->p->nparams;
    Inputs in;
    memset(&in, 0, sizeof in);
    Value marked[np ? np : 1];
    int made = 0;
    Value err = v_nil();
    for (int i = 0; i < np; i++) {
        marked[i] = mark_walk(vm, params[i], &in, site);
        if (IS_EXC(marked[i])) {
            err = marked[i];
            break;
        }
        made++;
    }
    for (int i = 0; i < nl; i++) decref(params[i]);
    if (IS_EXC(err)) {
        for (int i = 0; i < made; i++) decref(marked[i]);
        free(in.node);
        free(in.size);
        free(in.x);
        return err;
    }
    if (!dq->w) {
        Work *w = calloc(1, sizeof *w);
        if (!w) return vm_error(vm, site, "grad: out of memory");
        w->in = vm->in;
        pthread_mutex_init(&w->mu, NULL);
        Exec *e = vm->in->exec;
        int helpers = e && vm->is_task ? exec_nworkers(e) - 1 : 0;
        w->js = jobset_new(vm->in->sync ? NULL : e, &work_vt, w, helpers, "grad run",
                           site ? site->line : 0);
        if (!w->js) {
            work_free(w);
            return vm_error(vm, site, "grad: out of memory");
        }
        dq->w = w;
    }
    Work *w = dq->w;
    QCall *c = calloc(1, sizeof *c);
    if (!c) return vm_error(vm, site, "grad: out of memory");
    snprintf(c->name, sizeof c->name, "%s", f->p->name);
    c->method = dq->method;
    c->best = dq->best;
    c->site = site;
    c->index = vm->qcall_seq++;
    c->seed = vm->stream_seed;
    c->nin = (int)in.n;
    c->innode = in.node;
    c->insize = in.size;
    c->inx = in.x;
    c->width = in.nx;
    c->inoff = malloc((in.n + 1) * sizeof(size_t));
    c->jnode = AD_NONE;
    c->result = v_nil();
    size_t off = 0;
    for (size_t i = 0; c->inoff && i < in.n; i++) {
        c->inoff[i] = off;
        off += in.size[i];
    }
    /* the masters: copies no worker's task sweeps, freed with the work */
    bool tracked = value_track_pause();
    CopyCtx cc;
    copy_init(&cc);
    c->fn = value_copy_deep(v_obj(&f->h), &cc);
    c->nparams = np;
    c->params = malloc((size_t)(np + 1) * sizeof(Value));
    for (int i = 0; c->params && i < np; i++) c->params[i] = value_copy_deep(marked[i], &cc);
    const char *cerr = cc.error;
    copy_done(&cc);
    copy_move_modules(&c->mods, &cc);
    value_track_resume(tracked);
    for (int i = 0; i < np; i++) decref(marked[i]);
    if (!c->params || !c->inoff || cerr) {
        if (!c->params) c->nparams = 0;
        call_free(c);
        return vm_error(vm, site, "%s(): cannot pass %s to a differentiated quantum function",
                        f->p->name, cerr ? cerr : "its arguments");
    }
    if (w->ncalls == w->capcalls) {
        w->capcalls = w->capcalls ? w->capcalls * 2 : 16;
        w->calls = xrealloc(w->calls, (size_t)w->capcalls * sizeof(QCall *));
    }
    w->calls[w->ncalls++] = c;
    c->fwd_item = add_unit(w, U_FORWARD, c, 0);
    if (c->fwd_item < 0) return vm_error(vm, site, "grad: out of memory");
    ObjPend *pv = (ObjPend *)obj_alloc(sizeof(ObjPend), T_PEND);
    atomic_fetch_add_explicit(&value_lazy_live, 1, memory_order_relaxed);
    pv->dq = dq;
    pv->c = c;
    return v_obj(&pv->h);
}

/* The Jacobians of the calls whose results were used, from their runs. */
static bool assemble(QCall *c, char *err, size_t errlen)
{
    if (c->J) return true; /* adjoint: done by its sweep */
    if (c->method == GRAD_FD) {
        c->J = calloc(c->m * c->width + 1, sizeof(double));
        if (!c->J) {
            snprintf(err, errlen, "out of memory");
            return false;
        }
        for (size_t j = 0; j < c->width; j++) {
            double h = fd_step(c, (int)(2 * j));
            for (size_t i = 0; i < c->m; i++)
                c->J[i * c->width + j] =
                    (c->runvals[(2 * j) * c->m + i] - c->runvals[(2 * j + 1) * c->m + i]) / (2 * h);
        }
        return true;
    }
    /* parameter shift: d value / d slot = sum over the slot's runs of coef * value */
    DRec *r = &c->rec;
    double *d = calloc((size_t)r->nvals * (size_t)(r->nslots + 1) + 1, sizeof(double));
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    for (int run = 0; run < c->nruns; run++) {
        int s = c->run_slot[run];
        for (int v = 0; v < r->nvals; v++)
            d[(size_t)v * (size_t)r->nslots + (size_t)s] +=
                c->run_coef[run] * c->runvals[(size_t)run * (size_t)r->nvals + (size_t)v];
    }
    bool ok = true;
    for (int i = 0; ok && i < r->nquant; i++) {
        const Quant *q = &r->q[i];
        ok = set_quant(c, q, d + (size_t)q->off * (size_t)r->nslots, r->nslots, err, errlen);
    }
    free(d);
    return ok && chain(c, err, errlen);
}

bool diffq_finish(DiffQ *dq, VM *vm, const Node *site)
{
    if (!dq->w) return true;
    Work *w = dq->w;
    if (jobset_finish_all(w->js, vm) != 0) {
        vm_error(vm, site, "%s", jobset_error(w->js));
        return false;
    }
    for (int i = 0; i < w->ncalls; i++) {
        QCall *c = w->calls[i];
        if (!c->forced || c->jnode == AD_NONE) continue;
        char err[300];
        if (!assemble(c, err, sizeof err)) {
            vm_error(vm, site, "grad of %s(): %s", c->name, err);
            return false;
        }
        if (ad_jac_set(dq->ctx->tape, c->jnode, c->J) != 0) {
            vm_error(vm, site, "grad: %s", ad_error(dq->ctx->tape));
            return false;
        }
    }
    return true;
}

/* ================================================================ metric tensor */

/* One differentiated argument of a metric_tensor call: its leaf on the
   tape, and its shape and size (a number: 0 dimensions, size 1). */
typedef struct MetricArg {
    AdNode leaf;
    int ndim;
    size_t shape[AR_MAXDIM];
    size_t size;
} MetricArg;

/* A metric_tensor call under way: what it asks, its tape and recorded
   circuit, its arguments (ask->nargnum of them, n values in all), the
   gates' metric G (P x P, P the recorded parameter slots) and the
   parameters' Jacobian by the arguments Jc (P x n). */
typedef struct MetricRun {
    VM *vm;
    const DiffqMetricAsk *ask;
    const Node *site;
    AdCtx *ctx;
    DRec rec;
    MetricArg *args;
    AdGrad *g;
    double *G, *Jc;
    size_t n;
    int P;
} MetricRun;

/* The frame fr's differentiated arguments replaced by tracked copies on
   fresh leaves: false with the error recorded. */
static bool metric_leaves(MetricRun *mr, Value *fr, const char *fname)
{
    VM *vm = mr->vm;
    const Node *site = mr->site;
    const int *argnum = mr->ask->argnum;
    for (int k = 0; k < mr->ask->nargnum; k++) {
        MetricArg *ma = &mr->args[k];
        Value v = tp_force(vm, fr[argnum[k]], site);
        if (IS_EXC(v)) return false;
        char err[AR_ERRLEN];
        Value t;
        if (v.t == T_NUM || v.t == T_BOOL) {
            ma->ndim = 0;
            ma->size = 1;
            ma->leaf = ad_input(mr->ctx->tape, 0, NULL);
            t = track_num(vm, v.t == T_NUM ? v.n : v.b, ma->leaf, site);
        } else if (v.t == T_ARRAY && !ar_is_complex(AS_ARR(v))) {
            ma->ndim = ar_ndim(AS_ARR(v));
            memcpy(ma->shape, ar_shape(AS_ARR(v)), (size_t)ma->ndim * sizeof(size_t));
            ma->size = ar_size(AS_ARR(v));
            ma->leaf = ad_input(mr->ctx->tape, ma->ndim, ma->shape);
            Array *c = ar_copy(AS_ARR(v), err);
            t = c ? track_arr(vm, c, ma->leaf, site) : vm_error(vm, site, "%s", err);
        } else {
            t = vm_error(
                vm, site,
                "metric_tensor: argument %d of %s() must be a number or a float array, not %s",
                argnum[k], fname, type_name(v));
        }
        decref(v);
        if (IS_EXC(t)) return false;
        decref(fr[argnum[k]]);
        fr[argnum[k]] = t;
    }
    return true;
}

/* The recorded circuit's metric in its parameter slots (mr->G) and room
   for the slots' Jacobian (mr->Jc): false with the error recorded. */
static bool gate_metric(MetricRun *mr)
{
    VM *vm = mr->vm;
    DRec *rec = &mr->rec;
    int P = mr->P = rec->nslots;
    mr->n = 0;
    for (int k = 0; k < mr->ask->nargnum; k++) mr->n += mr->args[k].size;
    mr->G = calloc((size_t)P * (size_t)P + 1, sizeof(double));
    mr->Jc = calloc((size_t)P * mr->n + 1, sizeof(double));
    SvOp *ops = malloc((size_t)(rec->nops + 1) * sizeof(SvOp));
    uint8_t *train = malloc((size_t)rec->nops + 1);
    if (!mr->G || !mr->Jc || !ops || !train) {
        free(ops);
        free(train);
        vm_error(vm, mr->site, "metric_tensor: out of memory");
        return false;
    }
    for (int i = 0; i < rec->nops; i++) {
        ops[i] = rec->ops[i].op;
        train[i] = rec->ops[i].tracked;
    }
    char err[300];
    int rc = sv_metric_tensor(&(SvMetricSpec){ rec->nqubits, ops, rec->nops, train, mr->ask->diag },
                              mr->G, NULL, err, sizeof err);
    free(ops);
    free(train);
    if (rc != 0) {
        vm_error(vm, mr->site, "metric_tensor: %s", err);
        return false;
    }
    return true;
}

/* The gate parameters by the arguments (mr->Jc): one backward sweep per
   parameter. false with the error recorded. */
static bool slot_jacobian(MetricRun *mr)
{
    AdTape *tape = mr->ctx->tape;
    for (int s = 0; s < mr->P; s++) {
        if (ad_backward(tape, mr->rec.slots[s].node, NULL, mr->g) != 0) {
            vm_error(mr->vm, mr->site, "metric_tensor: %s", ad_error(tape));
            return false;
        }
        size_t off = 0;
        for (int k = 0; k < mr->ask->nargnum; k++) {
            const double *a = ad_adjoint(mr->g, mr->args[k].leaf);
            for (size_t j = 0; j < mr->args[k].size; j++)
                mr->Jc[(size_t)s * mr->n + off + j] = a ? a[j] : 0;
            off += mr->args[k].size;
        }
    }
    return true;
}

/* Argument k's metric, Jk^T G Jk (its values at columns off.. of Jc), as
   a number or an array of shape (in..., in...); an exception after the
   error. */
static Value arg_metric(MetricRun *mr, int k, size_t off)
{
    VM *vm = mr->vm;
    const MetricArg *ma = &mr->args[k];
    size_t m = ma->size, n = mr->n;
    int P = mr->P;
    double *M = calloc(m * m + 1, sizeof(double));
    if (!M) return vm_error(vm, mr->site, "metric_tensor: out of memory");
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < m; j++) {
            double acc = 0;
            for (int a = 0; a < P; a++) {
                double ja = mr->Jc[(size_t)a * n + off + i];
                if (ja == 0) continue;
                for (int b = 0; b < P; b++)
                    acc += ja * mr->G[(size_t)a * P + b] * mr->Jc[(size_t)b * n + off + j];
            }
            M[i * m + j] = acc;
        }
    Value mv;
    if (ma->ndim == 0)
        mv = v_num(M[0]);
    else {
        size_t sh[AR_MAXDIM];
        memcpy(sh, ma->shape, (size_t)ma->ndim * sizeof(size_t));
        memcpy(sh + ma->ndim, ma->shape, (size_t)ma->ndim * sizeof(size_t));
        char e2[AR_ERRLEN];
        Array *a = 2 * ma->ndim <= AR_MAXDIM ? ar_from_data(AR_F64, 2 * ma->ndim, sh, M, e2) : NULL;
        mv = a ? arr_wrap(a)
               : vm_error(vm, mr->site, "metric_tensor: %s",
                          2 * ma->ndim <= AR_MAXDIM ? e2 : "too many dimensions");
    }
    free(M);
    return mv;
}

/* Per argument its metric: the first one alone, or (ask->list) a list of
   all. */
static Value metric_result(MetricRun *mr)
{
    ObjList *l = mr->ask->list ? list_new((size_t)mr->ask->nargnum) : NULL;
    size_t off = 0;
    for (int k = 0; k < mr->ask->nargnum; k++) {
        Value mv = arg_metric(mr, k, off);
        if (IS_EXC(mv)) {
            if (l) decref(v_list(l));
            return mv;
        }
        off += mr->args[k].size;
        if (!l) return mv;
        l->v[l->len++] = mv;
    }
    return l ? v_list(l) : v_exc();
}

Value diffq_metric(VM *vm, ObjFunc *f, Value *params, const DiffqMetricAsk *ask, const Node *site)
{
    AdCtx *ctx = track_begin(vm);
    if (!ctx) return vm_error(vm, site, "metric_tensor: out of memory");
    FnProto *p = f->p;
    size_t base = vm->sp;
    Value result = v_exc();
    MetricArg args[ask->nargnum];
    MetricRun mr = { .vm = vm, .ask = ask, .site = site, .ctx = ctx, .args = args };
    qrec_init(&mr.rec, QR_METRIC, vm);
    mr.g = ad_grad_new();
    if (base + (size_t)p->nlocals + 8 >= vm->cap) {
        vm_error(vm, site, "maximum recursion depth exceeded");
        goto done;
    }
    Value *fr = vm->stack + base;
    for (int i = 0; i < p->nlocals; i++) {
        fr[i] = params[i];
        incref(fr[i]);
    }
    vm->sp = base + (size_t)p->nlocals;
    if (!metric_leaves(&mr, fr, p->name)) {
        for (int i = 0; i < p->nlocals; i++) decref(vm->stack[base + (size_t)i]);
        vm->sp = base;
        goto done;
    }
    uint64_t index = vm->qcall_seq++;
    Value r = qrt_run_rec(vm, f, vm->stream_seed, index, fr, site, &mr.rec.head);
    vm->sp = base;
    if (IS_EXC(r)) goto done;
    decref(r);
    if (mr.rec.err[0]) {
        vm_error(vm, site, "%s", mr.rec.err);
        goto done;
    }
    if (gate_metric(&mr) && slot_jacobian(&mr)) result = metric_result(&mr);
done:
    free(mr.G);
    free(mr.Jc);
    ad_grad_free(mr.g);
    qrec_free(&mr.rec);
    track_end(vm, ctx);
    return result;
}

/* ================================================================ registration */

static const TypeOps mark_ops = {
    .name = "differentiated argument",
    .free = mark_free,
    .copy = mark_copy,
    .repr = mark_repr,
};

static const TypeOps pend_ops = {
    .name = "pending",
    .flags = TF_LAZY,
    .free = pend_free,
    .repr = pend_repr,
    .force = pend_force,
};

void diffq_open(void)
{
    T_MARK = type_register_new(&mark_ops);
    T_PEND = type_register_new(&pend_ops);
}
