/* qrt.c — the quantum runtime's devices and calls: the device kind and
 * device(), the pool of device instances, kernel thread teams, running one
 * qfn call (shot vectors, broadcast members, distributed states), recording
 * a call (draw, specs, matrix, to_qasm), --stats, and the builtin table of
 * every quantum builtin (its order is the builtin registry's). The
 * operators, their application and the measurements live in the other
 * qrt_*.c files (qrt_impl.h). Knows values, the evaluator's entry, arrays,
 * the recording interface of differentiated runs (qrec.h), the pool and
 * sv.h/dm.h; nothing of the executor's scheduling. */
#include "nplib.h"
#include "qrt_impl.h"
#include "arrayval.h"
#include "array.h"
#include "eval.h"
#include "exec.h"
#include "serial.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


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
    /* as device() checks it: nil or a plain function (never the device itself) */
    if (nz.t != T_NIL && (nz.t != T_FUNC || AS_FUNC(nz)->p->is_qfn)) {
        decref(nz);
        decref(dv);
        return des_fail(sc, "device");
    }
    d->noise = nz;
    return dv;
}

/* ---------------------------------------------------------------- runtime */

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
    sv_fuse_defaults(&q->fuse); /* QH_FUSION and its settings */
    if (in->no_fusion) q->fuse.fuse = 0;
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
    unsigned long blocks = atomic_load(&q->blocks), passes = atomic_load(&q->passes);
    unsigned long gates = atomic_load(&q->gates);
    fprintf(out,
            "qh stats: simulator: %lu gates ran as %lu blocks in %lu passes over the state "
            "(%.3f passes per gate; fusion %s)\n",
            gates, blocks, passes, gates ? (double)passes / (double)gates : 0.0,
            q->fuse.fuse ? "on" : "off");
}

/* Kernel threads: a big state may use the cores that no other worker is
 * using (N workers = N busy cores). Teams are created on first need. */
void give_threads(VM *vm, SvState *s)
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

/* What a call runs: the qfn, its random stream (seed, index), its bound
 * frame (references taken), where it was called, and the differentiated
 * run (QRec) or the recording (QRecord, draw/specs) it reports to. */
typedef struct RunSpec {
    ObjFunc *f;
    uint64_t seed, index;
    Value *slots;
    const Node *site;
    QRec *grec;
    QRecord *rec;
} RunSpec;

static Value run_inner(VM *vm, const RunSpec *rs);

Value qrt_run_rec(VM *vm, ObjFunc *f, uint64_t seed, uint64_t index, Value *slots, const Node *site,
                  QRec *grec)
{
    RunSpec rs = { f, seed, index, slots, site, grec, NULL };
    return run_inner(vm, &rs);
}

/* ---- the distributed statevector as a simulator table (backend.h) ---- */

static QDState *ds_of(QbDev *d) { return d->st; }
static int ds_apply(QbDev *d, const SvOp *op, char *err, size_t errlen)
{
    d->changes++;
    return qdist_apply(ds_of(d), op, err, errlen); /* queued by dsv itself */
}
static int ds_flush(QbDev *d, char *err, size_t errlen)
{
    (void)d; /* every read of dsv runs its queue first */
    (void)err;
    (void)errlen;
    return 0;
}
static int ds_measure(QbDev *d, int wire, int reset, Rng *r, char *err, size_t errlen)
{
    d->changes++;
    return qdist_measure(ds_of(d), wire, reset, r, err, errlen);
}
static int ds_reset(QbDev *d, int wire, Rng *r, char *err, size_t errlen)
{
    d->changes++;
    return qdist_measure(ds_of(d), wire, 1, r, err, errlen);
}
static int ds_expval(QbDev *d, const QbRead *rq, double *out, char *err, size_t errlen)
{
    return qdist_expval(ds_of(d), rq, out, err, errlen);
}
static int ds_var(QbDev *d, const QbRead *rq, double *out, char *err, size_t errlen)
{
    return qdist_var(ds_of(d), rq, out, err, errlen);
}
static int ds_probs(QbDev *d, const QbRead *rq, double *out, char *err, size_t errlen)
{
    return qdist_probs(ds_of(d), rq, out, err, errlen);
}
static int ds_sample(QbDev *d, size_t shots, Rng *r, uint64_t *out, char *err, size_t errlen)
{
    return qdist_sample(ds_of(d), shots, r, out, err, errlen);
}
static int ds_sample_pauli(QbDev *d, const SvPauli *w, size_t shots, Rng *r, double *out, char *err,
                           size_t errlen)
{
    return qdist_sample_pauli(ds_of(d), w, shots, r, out, err, errlen);
}
static const QBackend ds_backend = {
    .name = "distributed",
    .apply = ds_apply,
    .flush = ds_flush,
    .measure = ds_measure,
    .reset = ds_reset,
    .expval = ds_expval,
    .var = ds_var,
    .probs = ds_probs,
    .sample = ds_sample,
    .sample_pauli = ds_sample_pauli,
    .reduced = NULL,
    .kraus = NULL,
    .channel = NULL,
};

bool qrt_flush(VM *vm, QCtx *q, const Node *site)
{
    if (!q->sim.be) return true;
    char err[256];
    if (qb_flush(&q->sim, err, sizeof err) == 0) return true;
    vm_error(vm, site, "%s", err);
    return false;
}

/* The end of a call's device: its queue run (its gates count, though
   nothing reads them) and its figures added to --stats. */
static Value sim_done(VM *vm, QCtx *q, Value r, const Node *site)
{
    if (!IS_EXC(r) && !qrt_flush(vm, q, site)) {
        decref(r);
        r = v_exc();
    }
    QRuntime *rt = vm->in->qrt;
    atomic_fetch_add_explicit(&rt->blocks, q->sim.circ.st.blocks, memory_order_relaxed);
    atomic_fetch_add_explicit(&rt->passes, q->sim.circ.st.passes, memory_order_relaxed);
    qb_done(&q->sim);
    qrt_shots_free(q);
    return r;
}

/* A call on a distributed statevector (qdist.h): the state instead of a
 * pooled instance; the rest as any call. */
static Value run_distributed(VM *vm, const RunSpec *rs)
{
    ObjFunc *f = rs->f;
    Value *slots = rs->slots;
    const Node *site = rs->site;
    QRec *grec = rs->grec;
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
    qb_init(&ctx.sim, &ds_backend, ds, &vm->in->qrt->fuse);
    ctx.nq = nq;
    ctx.dev = dev;
    ctx.shots = dev->shots;
    ctx.rec = rs->rec;
    rng_seed2(&ctx.rng, dev->has_seed ? dev->seed : rs->seed, rs->index);
    QCtx *saved = vm->q;
    vm->q = &ctx;
    Value r = eval_run_body(vm, f, slots, site);
    r = sim_done(vm, &ctx, r, site);
    vm->q = saved;
    vm->dev_bytes -= bytes;
    qdist_release(ds);
    return r;
}

/* A pooled instance for a call on dev, waiting for memory within the
   budget (a nested call cannot wait: its callers would never give theirs
   back); NULL after the error, the frame released. */
static QInst *acquire_inst(VM *vm, const RunSpec *rs, const ObjDevice *dev, size_t bytes)
{
    QRuntime *q = vm->in->qrt;
    ObjFunc *f = rs->f;
    char err[256];
    InstArg ia = { dev->wires, dev->mixed, false };
    int nq = dev->wires;
    const atomic_int *cancel = vm->cancel ? vm->cancel : &vm->in->interrupt;
    bool nested = vm->dev_bytes > 0;
    QInst *inst =
        nested ? pool_acquire_nested(q->pool, dev->key, bytes, &ia, vm->dev_bytes, err, sizeof err)
               : pool_acquire(q->pool, dev->key, bytes, &ia, cancel, err, sizeof err);
    if (inst) return inst;
    for (int i = 0; i < f->p->nlocals; i++) decref(rs->slots[i]);
    if (!nested && atomic_load(cancel)) {
        vm_error(vm, rs->site, "interrupted");
        vm->err.interrupted = true;
    } else if (nested) {
        vm_error(vm, rs->site,
                 "%s(): a %d-wire device %s (--max-memory): a nested call cannot wait for memory "
                 "its callers hold",
                 f->p->name, nq, err);
    } else {
        vm_error(vm, rs->site, "%s(): device with %d wires: %s", f->p->name, nq, err);
    }
    return NULL;
}

/* The body once more from a fresh state (the next shot-vector entry or
   broadcast member): the instance reset, its queued gates dropped, the
   frame bound to the same arguments again. */
static void rerun_prep(QInst *inst, QCtx *ctx, const RunSpec *rs, Value *args)
{
    int np = rs->f->p->nparams, nl = rs->f->p->nlocals;
    inst_reset(inst);
    svc_clear(&ctx->sim.circ);
    ctx->sim.changes++;
    for (int i = 0; i < nl; i++) rs->slots[i] = i < np ? args[i] : v_unbound();
    for (int i = 0; i < np; i++) incref(args[i]);
}

/* The members of a broadcast run after member 0 (x), stacked; or the
   first error. */
static Value run_batch(VM *vm, const RunSpec *rs, QInst *inst, QCtx *ctx, Value *args, long shots,
                       Value x)
{
    Value *res = xmalloc((size_t)ctx->bsize * sizeof(Value));
    res[0] = x;
    int got = 1;
    for (int b = 1; b < ctx->bsize; b++, got++) {
        rerun_prep(inst, ctx, rs, args);
        ctx->shots = shots;
        ctx->bidx = b;
        res[b] = eval_run_body(vm, rs->f, rs->slots, rs->site);
        if (IS_EXC(res[b])) break;
    }
    if (got < ctx->bsize) {
        x = res[got];
        for (int i = 0; i < got; i++) decref(res[i]);
    } else {
        x = stack_members(vm, res, ctx->bsize, rs->site);
        for (int i = 0; i < ctx->bsize; i++) decref(res[i]);
    }
    free(res);
    return x;
}

/* A shot vector runs the body once per entry (a fresh state, that many
 * shots), the results in a list. A gate given an array of parameters
 * (broadcasting) makes the run member 0 of a batch: the other members run
 * after it, each from a fresh state with its own values, and the results
 * are stacked. */
static Value run_members(VM *vm, const RunSpec *rs, QInst *inst, QCtx *ctx)
{
    const ObjDevice *dev = ctx->dev;
    int np = rs->f->p->nparams;
    Value *args = xmalloc(((size_t)np + 1) * sizeof(Value));
    for (int i = 0; i < np; i++) {
        args[i] = rs->slots[i];
        incref(args[i]);
    }
    int nrun = dev->nshotv ? dev->nshotv : 1;
    ObjList *out = dev->nshotv ? list_new((size_t)nrun) : NULL;
    Value r = v_nil();
    for (int e = 0; e < nrun; e++) {
        if (e > 0) rerun_prep(inst, ctx, rs, args);
        long shots = dev->nshotv ? dev->shotv[e] : dev->shots;
        ctx->shots = shots;
        ctx->bsize = ctx->bidx = 0;
        Value x = eval_run_body(vm, rs->f, rs->slots, rs->site);
        if (!IS_EXC(x) && ctx->bsize >= 1) x = run_batch(vm, rs, inst, ctx, args, shots, x);
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
    return r;
}

static Value run_inner(VM *vm, const RunSpec *rs)
{
    QRuntime *q = vm->in->qrt;
    ObjFunc *f = rs->f;
    if (f->device.t != T_DEVICE) {
        /* a qfn without a device: a background classical (or hybrid) function */
        QCtx *saved = vm->q;
        vm->q = NULL;
        Value r = eval_run_body(vm, f, rs->slots, rs->site);
        vm->q = saved;
        return r;
    }
    ObjDevice *dev = AS_DEV(f->device);
    atomic_fetch_add(&q->calls, 1);
    if (dev->latency > 0 && !sleep_latency(vm, dev->latency)) {
        for (int i = 0; i < f->p->nlocals; i++) decref(rs->slots[i]);
        return v_exc();
    }
    if (goes_distributed(vm->in, dev)) return run_distributed(vm, rs);
    int nq = dev->wires;
    size_t bytes = dev->mixed ? dm_bytes(nq) : sv_bytes(nq);
    QInst *inst = acquire_inst(vm, rs, dev, bytes);
    if (!inst) return v_exc();
    vm->dev_bytes += bytes;
    SvState *s = inst->mixed ? &inst->d.v : &inst->s; /* the vector the kernels run on */
    give_threads(vm, s);
    QCtx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.s = inst->mixed ? NULL : s;
    ctx.dm = inst->mixed ? &inst->d : NULL;
    if (inst->mixed)
        qb_init(&ctx.sim, &qb_mixed, &inst->d, &q->fuse);
    else
        qb_init(&ctx.sim, &qb_statevector, &inst->s, &q->fuse);
    ctx.nq = nq;
    ctx.dev = dev;
    ctx.grec = rs->grec;
    ctx.rec = rs->rec;
    rng_seed2(&ctx.rng, dev->has_seed ? dev->seed : rs->seed, rs->index);
    ctx.shots = dev->shots;
    if (rs->grec) qrec_shots(rs->grec, ctx.shots != 0);
    QCtx *saved = vm->q;
    vm->q = &ctx;
    Value r;
    if (dev->nshotv && rs->grec) {
        for (int i = 0; i < f->p->nlocals; i++) decref(rs->slots[i]);
        r = vm_error(
            vm, rs->site,
            "a device with a shot vector cannot be differentiated; use one number of shots");
    } else if (rs->grec || rs->rec) {
        r = eval_run_body(vm, f, rs->slots, rs->site);
    } else {
        r = run_members(vm, rs, inst, &ctx);
    }
    r = sim_done(vm, &ctx, r, rs->site);
    vm->q = saved;
    if (rs->grec && !IS_EXC(r) && !qrec_after_body(rs->grec, inst->mixed ? NULL : s, nq)) {
        decref(r);
        r = vm_error(vm, rs->site, "%s", qrec_error(rs->grec));
    }
    sv_set_threads(s, NULL, 1);
    vm->dev_bytes -= bytes;
    pool_release(q->pool, inst, !IS_EXC(r));
    if (ctx.copy_token) pool_release(q->pool, ctx.copy_token, 0);
    return r;
}

/* ---------------------------------------------------------------- devices */

/* device()'s shots=: a number, or a shot vector (one result per entry;
   [n, copies] repeats n) into d (shots, shotv, nshotv). */
static bool device_shots(VM *vm, Args *a, const Value *sh, ObjDevice *d)
{
    if (sh && sh->t == T_LIST) {
        ObjList *l = AS_LIST(*sh);
        double total = 0;
        if (l->len == 0) {
            vm_error(vm, a->site, "device(): a shot vector needs at least one entry");
            return false;
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
                vm_error(vm, a->site,
                         "device(): a shot vector's entries are numbers of shots or [shots, "
                         "copies] pairs");
                return false;
            }
            if (n != floor(n) || n < 1 || n > 1e9 || copies != floor(copies) || copies < 1) {
                vm_error(vm, a->site,
                         "device(): shot vector entry %zu: shots and copies must be positive "
                         "integers (shots at most 1e9)",
                         i);
                return false;
            }
            if (d->nshotv + copies > MAX_SHOTV) {
                vm_error(vm, a->site, "device(): a shot vector of more than %d entries", MAX_SHOTV);
                return false;
            }
            for (int c = 0; c < (int)copies; c++) d->shotv[d->nshotv++] = (long)n;
            total += n * copies;
        }
        if (total > 1e9) {
            vm_error(vm, a->site, "device(): at most 1e9 shots in all");
            return false;
        }
        d->shots = (long)total;
    } else if (sh && sh->t != T_NIL) {
        if (sh->t != T_NUM || sh->n != floor(sh->n) || sh->n < 1 || sh->n > 1e9) {
            vm_error(vm, a->site,
                     "device(): shots must be a positive integer (at most 1e9), or a list of them "
                     "(a shot vector)");
            return false;
        }
        d->shots = (long)sh->n;
    }
    return true;
}

/* device()'s seed= and latency= into d. */
static bool device_seed_latency(VM *vm, Args *a, const Value *sd, const Value *lat, ObjDevice *d)
{
    if (sd && sd->t != T_NIL) {
        if (sd->t != T_NUM || sd->n != floor(sd->n)) {
            vm_error(vm, a->site, "device(): seed must be an integer");
            return false;
        }
        d->seed = (uint64_t)(int64_t)sd->n;
        d->has_seed = true;
    }
    if (lat && lat->t != T_NIL) {
        if (lat->t != T_NUM || !(lat->n >= 0) || lat->n > 3600) {
            vm_error(vm, a->site, "device(): latency must be a number of seconds from 0 to 3600");
            return false;
        }
        d->latency = lat->n;
    }
    return true;
}

/* Why: PennyLane's names for the same simulators (qml.device("default.qubit",
   wires=2)) are the ones a PennyLane user types first; a device made by one
   is the same value as by qh's name (it prints, compares and travels as it). */
static const char *device_canonical(const char *name)
{
    static const char *const alias[][2] = { { "default.qubit", "statevector" },
                                            { "lightning.qubit", "statevector" },
                                            { "default.mixed", "mixed" } };
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (strcmp(name, alias[i][0]) == 0) return alias[i][1];
    return name;
}

static Value bi_device(VM *vm, Args *a)
{
    if (a->v[0].t != T_STR)
        return vm_error(vm, a->site, "device() needs a device name string, not %s",
                        type_name(a->v[0]));
    const char *name = device_canonical(AS_STR(a->v[0])->s);
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
    ObjDevice t; /* its fields, checked before the device is made */
    memset(&t, 0, sizeof t);
    if (!device_shots(vm, a, sh, &t) || !device_seed_latency(vm, a, sd, lat, &t)) return v_exc();
    ObjDevice *d = (ObjDevice *)obj_alloc(sizeof(ObjDevice), T_DEVICE);
    Obj h = d->h;
    *d = t;
    d->h = h;
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
    return v_obj(&d->h);
}

/* ---------------------------------------------------------------- recording a call */

void qrt_record_free(QRecord *rec)
{
    qasm_free(&rec->c);
    free(rec->meas);
    rec->meas = NULL;
    rec->nmeas = rec->capmeas = 0;
    for (size_t i = 0; i < rec->nmats; i++) free(rec->mats[i].m);
    free(rec->mats);
    rec->mats = NULL;
    rec->nmats = rec->capmats = 0;
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
    RunSpec rs = { f, vm->in->seed, UINT64_MAX - 1, slots, site, NULL, rec };
    Value r = run_inner(vm, &rs);
    vm->sp = base;
    return r;
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
    { "adjoint", bi_adjoint, 1, 1, BI_CALLS, NULL, 0 },
    { "ctrl", bi_ctrl, 1, 2, BI_CALLS, kw_ctrl, 0 },
    { "hamiltonian", bi_hamiltonian, 2, 2, 0, NULL, 0 },
    { "Hermitian", bi_hermitian, 1, -1, 0, kw_wires, 0 },
    { "Projector", bi_projector, 1, -1, 0, kw_wires, 0 },
    { "matrix", bi_matrix, 1, -1, BI_CALLS, kw_wires, 0 },
    { "expval", bi_expval, 1, 1, BI_QUANTUM, NULL, 0 },
    { "var", bi_var, 1, 2, BI_QUANTUM, np_var_keywords, 0 },
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

static const SvGateInfo *gate_info[128]; /* one-time init (qrt_open), by entry */
const SvGateInfo *gate_of(const BuiltinDef *d)
{
    uintptr_t at = (uintptr_t)d, lo = (uintptr_t)builtins_quantum;
    size_t i = (at - lo) / sizeof *d;
    if (at >= lo && i < sizeof gate_info / sizeof gate_info[0] && gate_info[i]) return gate_info[i];
    return sv_gate_by_name(d->name);
}

void qrt_open(void)
{
    qrt_gate_open(); /* the adjoint/ctrl function kind */
    type_register(T_DEVICE, &device_ops);
    qrt_op_open();
    builtins_add(builtins_quantum);
    for (size_t i = 0; builtins_quantum[i].name && i < sizeof gate_info / sizeof gate_info[0]; i++)
        if (builtins_quantum[i].fn == bi_gate)
            gate_info[i] = sv_gate_by_name(builtins_quantum[i].name);
}
