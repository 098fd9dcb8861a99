/* task.c — quantum calls as background tasks (task.h): the future kind
 * (its force slot resolves it wherever a value is needed, its copy slot lets
 * a finished one travel inside results, its ser slot lets it travel to
 * another rank), a task's context (deep copies of the function, the globals
 * it reaches and the arguments; futures still running become dependencies),
 * running a task on a task VM (the result is copied out before the future
 * completes), submission to the executor (--sync: running at once), nested
 * calls inside a task (run at once, numbered by their place in the call
 * tree), and the main thread's wait. The main VM's values never reach a
 * worker. Knows the evaluator, the executor and the quantum runtime's entry;
 * not the record of the calls (async.c) nor the lookahead (lookahead.c):
 * a future tells its owner when it is freed, and the wait calls
 * InterpHooks.main_wait. */
#include "task.h"
#include "diag.h"
#include "eval.h"
#include "qh_assert.h"
#include "qrt.h"
#include "serial.h"
#include "trace.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------- state */

/* The futures a canonical form names, by their calls (SerCtx.user while
 * writing one: future_ser in local mode). */
typedef struct CanonFuts {
    Fut **v;
    int n, cap;
} CanonFuts;

typedef struct ObjFuture {
    Obj h;
    Fut *fut;
    TaskOwner *owner; /* main-side futures that made the call only (async.c's record) */
    Value cached;
    bool resolved;
    const char *prefix, *name;
    const Source *src;
    int line;             /* call line */
    unsigned long serial; /* main-side: the dispatch's number (async_dispatches) */
} ObjFuture;
#define AS_FUT(v) ((ObjFuture *)(v).o)

double task_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* the interpreter's TaskState, made on first need */
TaskState *task_state(Interp *in)
{
    if (!in->tasks) in->tasks = xcalloc(1, sizeof *in->tasks);
    return in->tasks;
}

void task_state_free(Interp *in)
{
    free(in->tasks);
    in->tasks = NULL;
}

/* ---------------------------------------------------------------- future objects */

static void future_free(Obj *o)
{
    ObjFuture *f = (ObjFuture *)o;
    if (f->fut) fut_release(f->fut); /* first: the record may then hold the last reference */
    if (f->owner) f->owner->orphan(f->owner);
    decref(f->cached);
    free(f);
    atomic_fetch_sub_explicit(&value_lazy_live, 1, memory_order_relaxed);
}

/* <future NAME() from WHERE: STATE> (a future is resolved wherever its
 * value is needed: this is what the REPL shows for one still running) */
static void future_repr(Buf *b, Value v, bool quoted)
{
    (void)quoted;
    ObjFuture *f = AS_FUT(v);
    char where[300];
    diag_where(where, sizeof where, f->src, f->line);
    FutState st = f->resolved ? FUT_DONE : fut_state(f->fut);
    static const char *const names[] = { "queued", "running", "done", "failed", "cancelled" };
    buf_printf(b, "<future %s%s() from %s: %s>", f->prefix, f->name, where, names[st]);
}

Value task_future_new(Fut *fut, TaskOwner *owner, const char *prefix, const char *name,
                      const Source *src, int line, unsigned long serial)
{
    ObjFuture *f = (ObjFuture *)obj_alloc(sizeof(ObjFuture), T_FUTURE);
    atomic_fetch_add_explicit(&value_lazy_live, 1, memory_order_relaxed);
    f->fut = fut;
    f->owner = owner;
    f->cached = v_nil();
    f->prefix = prefix;
    f->name = name;
    f->src = src;
    f->line = line;
    f->serial = serial;
    return v_obj(&f->h);
}

static void future_traverse(Obj *o, void (*visit)(Value, void *), void *ud)
{
    visit(((ObjFuture *)o)->cached, ud);
}
static void future_clear(Obj *o)
{
    ObjFuture *f = (ObjFuture *)o;
    Value c = f->cached;
    f->cached = v_nil();
    decref(c);
}

/* ---------------------------------------------------------------- copying */

/* a finished call's value, copied out of its Fut (futures inside it, failed
 * elements of a returned container, travel as futures) */
static Value fut_value_copy(Fut *fut, CopyCtx *cc)
{
    Value *box = fut_result(fut);
    qh_assert(box);
    return value_copy_deep(*box, cc);
}

/* The copy slot (another thread, or a task's result): a future that stands
 * for a known value becomes that value; one that failed (or, never inside a
 * task's result, one still running) stays a future on the same call, so
 * that only a use of it fails, with its own message. */
static Value future_copy(Value v, CopyCtx *cc)
{
    ObjFuture *f = AS_FUT(v);
    if (f->resolved) return value_copy_deep(f->cached, cc);
    if (fut_state(f->fut) == FUT_DONE) return fut_value_copy(f->fut, cc);
    Value n = task_future_new(fut_retain(f->fut), NULL, f->prefix, f->name, f->src, f->line, 0);
    copy_memo_put(cc, f, n.o);
    return n;
}

/* ---------------------------------------------------------------- other processes */

/* Names a future read from another process keeps (its function's name,
 * the call's prefix): the object wants strings that live as long as the
 * program, so each distinct one is kept once. */
static pthread_mutex_t names_mu = PTHREAD_MUTEX_INITIALIZER;
static char **names_kept;
static size_t nnames_kept;

const char *task_keep_name(const char *s)
{
    pthread_mutex_lock(&names_mu);
    const char *r = NULL;
    for (size_t i = 0; i < nnames_kept && !r; i++)
        if (strcmp(names_kept[i], s) == 0) r = names_kept[i];
    if (!r) {
        names_kept = xrealloc(names_kept, (nnames_kept + 1) * sizeof(char *));
        r = names_kept[nnames_kept++] = xstrdup(s);
    }
    pthread_mutex_unlock(&names_mu);
    return r;
}

static void links_add(FutLinks *l, uint64_t origin, Fut *fut)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].origin == origin) return;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 4;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n].origin = origin;
    l->v[l->n++].fut = fut_retain(fut);
}

Fut *task_links_find(const FutLinks *l, uint64_t origin)
{
    for (size_t i = 0; l && i < l->n; i++)
        if (l->v[i].origin == origin) return l->v[i].fut;
    return NULL;
}

void task_links_free(FutLinks *l)
{
    for (size_t i = 0; i < l->n; i++) fut_release(l->v[i].fut);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* rank 0's Fut is its own origin; a Fut made on another rank for it keeps
 * the origin in its user slot */
static uint64_t fut_origin(Fut *fut)
{
    void *u = fut_user(fut);
    return u ? (uint64_t)(uintptr_t)u : (uint64_t)(uintptr_t)fut;
}

/* A finished future travels as its value; a failed or cancelled one as
 * its call and error, so that only a use of it fails, with the message a
 * use gives here. One still running cannot travel (a task's dependencies
 * have finished before it is sent). */
static bool future_ser(Value v, SerCtx *sc)
{
    ObjFuture *f = AS_FUT(v);
    if (sc->local && !f->resolved) {
        /* a task's canonical bytes (task_canon): the call itself, whatever
         * its state (its result never changes), kept alive so that no other
         * call takes its address */
        CanonFuts *k = sc->user;
        if (k->n == k->cap) {
            k->cap = k->cap ? 2 * k->cap : 4;
            k->v = xrealloc(k->v, (size_t)k->cap * sizeof *k->v);
        }
        k->v[k->n++] = fut_retain(f->fut);
        ser_u8(sc, 3);
        ser_u64(sc, (uint64_t)(uintptr_t)f->fut);
        return true;
    }
    if (f->resolved) {
        ser_u8(sc, 0);
        return ser_value(sc, f->cached);
    }
    FutState st = fut_state(f->fut);
    if (st == FUT_DONE) {
        ser_u8(sc, 0);
        return ser_value(sc, *(Value *)fut_result(f->fut));
    }
    if (st != FUT_FAILED && st != FUT_CANCELLED)
        return ser_fail(sc, "a future still running cannot be sent to another rank");
    const char *err = fut_error(f->fut);
    const char *src = f->src ? f->src->name : "";
    uint64_t origin = fut_origin(f->fut);
    if (sc->user) links_add(sc->user, origin, f->fut);
    ser_u8(sc, st == FUT_FAILED ? 1 : 2);
    ser_u64(sc, origin);
    ser_str(sc, err ? err : "failed", strlen(err ? err : "failed"));
    ser_str(sc, f->prefix, strlen(f->prefix));
    ser_str(sc, f->name, strlen(f->name));
    ser_str(sc, src, strlen(src));
    ser_u32(sc, (uint32_t)f->line);
    return true;
}

static Value future_deser(SerCtx *sc, ValType t, size_t id)
{
    (void)t;
    (void)id;
    uint8_t kind;
    if (!des_u8(sc, &kind)) return v_exc();
    if (kind == 0) return des_value(sc);
    uint64_t origin;
    if (!des_u64(sc, &origin)) return v_exc();
    const char *err = des_str(sc, NULL), *prefix = des_str(sc, NULL), *name = des_str(sc, NULL),
               *src = des_str(sc, NULL);
    uint32_t line;
    if (!err || !prefix || !name || !src || !des_u32(sc, &line)) return v_exc();
    if (kind > 2) return des_fail(sc, "future");
    /* the call's source: the same file among the program's */
    const Source *where = NULL;
    const SerCode *code = sc->code;
    for (int i = 0; code && i < code->nmods && !where; i++)
        if (strcmp(code->mods[i]->src->name, src) == 0) where = code->mods[i]->src;
    /* coming back to where it was sent from: the same call */
    Fut *fut = task_links_find(sc->user, origin);
    if (fut && fut_origin(fut) == origin)
        fut_retain(fut);
    else {
        fut = fut_new();
        fut_set_user(fut, (void *)(uintptr_t)origin);
        if (kind == 1)
            fut_fail(fut, err);
        else
            fut_cancel(fut);
        if (sc->user) links_add(sc->user, origin, fut);
    }
    return task_future_new(fut, NULL, task_keep_name(prefix), task_keep_name(name), where,
                           (int)line, 0);
}

typedef struct DepList {
    Fut **v;
    int n, cap;
} DepList;

/* main -> task: a future the program has not read becomes a task-side
 * future on the same call, and a dependency of the task while the call
 * still runs (the task starts once it is over); passing it on is not
 * reading it (a call that ignores its argument leaves a failure unread). A
 * finished call stays a future too: its result never changes, the task
 * copies it where it needs it, and the task's canonical bytes (task_canon)
 * do not depend on when the call finished. */
static Value copy_future_out(Value v, CopyCtx *cc)
{
    ObjFuture *f = AS_FUT(v);
    if (f->resolved) return value_copy_deep(f->cached, cc);
    FutState st = fut_state(f->fut);
    DepList *d = cc->user;
    if (d && (st == FUT_PENDING || st == FUT_RUNNING)) {
        if (d->n == d->cap) {
            d->cap = d->cap ? d->cap * 2 : 4;
            d->v = xrealloc(d->v, (size_t)d->cap * sizeof(Fut *));
        }
        d->v[d->n++] = f->fut;
    }
    Value n = task_future_new(fut_retain(f->fut), NULL, f->prefix, f->name, f->src, f->line, 0);
    copy_memo_put(cc, f, n.o);
    return n;
}

/* inside a task (one thread): a nested call shares the future itself */
static Value share_future(Value v, CopyCtx *cc)
{
    (void)cc;
    incref(v);
    return v;
}

void task_free_box(void *p)
{
    Value *b = p;
    decref(*b);
    free(b);
}

/* ---------------------------------------------------------------- forcing */

/* The main thread needs f: start later calls that are sure to come while
 * it waits (InterpHooks.main_wait: the lookahead), run it here if still queued, else wait. False if
 * Ctrl-C interrupted the wait. */
static bool main_wait(VM *vm, ObjFuture *f, const Node *site)
{
    Interp *in = vm->in;
    if (in->exec) {
        if (in->hooks.main_wait) in->hooks.main_wait(vm);
        /* still queued: run it here rather than wait for a worker to start it
         * (only a call of the running REPL entry: Ctrl-C stops what runs
         * here, and an earlier entry's calls are not the statement's to stop) */
        int here = vm->top_src ? vm->top_src->entry : 0, made = f->src ? f->src->entry : 0;
        if (!fut_ready(f->fut) && here == made) exec_run_inline(in->exec, f->fut);
    }
    if (fut_ready(f->fut)) return true;
    double t0 = task_now();
    double ts = in->trace ? trace_now_us(in->trace) : 0;
    atomic_store(&in->main_waiting, 1);
    FutState st = fut_wait_interruptible(f->fut, &in->interrupt);
    atomic_store(&in->main_waiting, 0);
    double t1 = task_now();
    vm->wait_time += t1 - t0;
    task_state(in)->main_wait_seconds += t1 - t0;
    if (in->trace) {
        char name[200], args[128];
        snprintf(name, sizeof name, "wait %s%s() from line %d", f->prefix, f->name, f->line);
        snprintf(args, sizeof args, "{\"line\":%d}", site ? site->line : vm->cur_line);
        trace_complete(in->trace, 0, name, "wait", ts, trace_now_us(in->trace) - ts, args);
    }
    return st != FUT_PENDING && st != FUT_RUNNING;
}

/* A failed call's error where its value is needed. A failure that passes
 * through several calls (a task needing the value of a failed one) keeps
 * one line per hop, as a traceback: the cause stays the first line and
 * each call it passed through adds a line "  via f() called at F:L (needed
 * at F:L)", outermost first; past MAX_HOPS lines the middle ones are
 * counted, not kept. On the main thread the outermost call heads the
 * first line: "f() called at F:L failed: CAUSE". */
#define MAX_HOPS 8
static Value fail_chain(VM *vm, ObjFuture *f, const Node *site, const char *err)
{
    const char *where = f->src ? f->src->name : "?";
    const char *nl = strchr(err, '\n');
    int first = nl ? (int)(nl - err) : (int)strlen(err);
    if (!vm->is_task)
        return vm_error(vm, site, "%s%s() called at %s:%d failed: %.*s%s", f->prefix, f->name,
                        where, f->line, first, err, nl ? nl : "");
    /* the hop lines: this one, then the earlier ones (an elision line among them counts its
     * hops) */
    const char *lines[MAX_HOPS + 2];
    int lens[MAX_HOPS + 2], n = 0, elided = 0, tail = -1;
    char hop[256];
    const Source *here = vm_source(vm);
    int need = site ? site->line : vm->cur_line;
    int k = snprintf(hop, sizeof hop, "  via %s%s() called at %s:%d", f->prefix, f->name, where,
                     f->line);
    if (need > 0 && k > 0 && (size_t)k < sizeof hop) /* where the task needed it, when known */
        snprintf(hop + k, sizeof hop - (size_t)k, " (needed at %s:%d)", here ? here->name : "?",
                 need);
    lines[n] = hop;
    lens[n++] = (int)strlen(hop);
    for (const char *p = nl; p;) {
        const char *s = p + 1, *e = strchr(s, '\n');
        int len = e ? (int)(e - s) : (int)strlen(s);
        int k;
        if (sscanf(s, "  ... (%d more)", &k) == 1) {
            elided += k;
            tail = n;
        } else if (n < MAX_HOPS + 1) {
            lines[n] = s;
            lens[n++] = len;
        } else
            elided++;
        p = e;
    }
    /* too many: drop hops before the innermost (or before the kept tail) */
    while (n > MAX_HOPS - 1) {
        int drop = tail >= 0 ? tail - 1 : n - 2;
        if (drop < 1) break;
        for (int i = drop; i + 1 < n; i++) {
            lines[i] = lines[i + 1];
            lens[i] = lens[i + 1];
        }
        n--;
        elided++;
        tail = drop;
    }
    Buf b;
    buf_init(&b);
    buf_printf(&b, "%.*s", first, err);
    for (int i = 0; i < n; i++) {
        if (i == tail && elided) buf_printf(&b, "\n  ... (%d more)", elided);
        buf_printf(&b, "\n%.*s", lens[i], lines[i]);
    }
    vm_error(vm, site, "%s", b.failed ? err : b.p);
    buf_free(&b);
    vm->err.chained = true;
    return v_exc();
}

/* the force slot: the value, waiting for the call (or running it) */
static Value future_force(VM *vm, Value v, const Node *site)
{
    ObjFuture *f = AS_FUT(v);
    if (f->resolved) {
        incref(f->cached);
        return f->cached;
    }
    Interp *in = vm->in;
    if (!fut_ready(f->fut)) {
        if (vm->la_sandbox)
            return vm_error(vm, site, "lookahead: would wait"); /* never wait ahead */
        if (vm->is_task)
            fut_wait(f->fut); /* a dependency: finished before the task began */
        else if (!main_wait(vm, f, site))
            return vm_interrupted(vm, site);
    }
    fut_mark_retrieved(f->fut);
    FutState st = fut_state(f->fut);
    if (st == FUT_DONE) {
        CopyCtx cc;
        copy_init(&cc);
        Value out = fut_value_copy(f->fut, &cc);
        const char *cerr = cc.error;
        copy_done(&cc);
        if (cerr) { /* out of memory for the copy: nothing cached, a later use tries again */
            decref(out);
            return vm_error(vm, site, "%s%s() called at %s:%d: cannot copy its result: %s",
                            f->prefix, f->name, f->src ? f->src->name : "?", f->line, cerr);
        }
        f->cached = out;
        f->resolved = true;
        incref(out);
        return out;
    }
    /* cancelled, or failed because the interrupt reached it first: the
     * interruption itself (nothing printed), as --sync would stop there */
    if (((vm->watch_interrupt && atomic_load(&in->interrupt)) || atomic_load(&in->sigint)))
        return vm_interrupted(vm, site);
    const char *err = fut_error(f->fut);
    return fail_chain(vm, f, site, err ? err : "failed");
}

/* ---------------------------------------------------------------- running a task */

void task_ctx_free(void *p)
{
    TaskCtx *c = p;
    if (!c) return;
    for (int i = 0; i < c->nargs; i++) {
        decref(c->args[i]);
        c->args[i] = v_nil();
    }
    copy_release_modules(&c->mods);
    decref(c->fn);
    free(c->arg);
    free(c->deps);
    free(c);
}

/* Runs the call on a task VM; the result is copied into a fresh graph and
 * everything else the task made is freed before the future completes.
 * cancel: the task's flag. */
bool task_execute(TaskCtx *c, const atomic_int *cancel, void *task, Value *result, char *err,
                  size_t errlen)
{
    value_track_begin(); /* what the task makes and leaves in cycles is swept at its end */
    VM tvm;
    vm_init(&tvm, c->in, true);
    tvm.cancel = cancel;
    tvm.watch_interrupt = !exec_on_worker(); /* run by the main thread: Ctrl-C reaches it */
    tvm.task = task;
    tvm.stream_seed = c->seed;
    tvm.call_id = c->index;
    rng_seed2(&tvm.rng, c->seed, c->index);
    ObjFunc *f = AS_FUNC(c->fn);
    tvm.mod = f->mod;
    Value *slots = tvm.stack;
    int nl = f->p->nlocals > c->nargs ? f->p->nlocals : c->nargs;
    value_track_adopt(c->fn); /* the copies made for this task join its thread's heap */
    for (int i = 0; i < c->nargs; i++) {
        slots[i] = c->args[i];
        c->args[i] = v_nil();
        value_track_adopt(slots[i]);
    }
    for (int i = c->nargs; i < nl; i++) slots[i] = v_unbound();
    tvm.sp = (size_t)nl;
    Value r = c->body(&tvm, f, slots, c->seed, c->index, NULL, c->arg);
    tvm.sp = 0;
    bool ok = !IS_EXC(r);
    if (ok) {
        bool tracked = value_track_pause(); /* the result's copy belongs to whoever reads it */
        CopyCtx cc;
        copy_init(&cc);
        cc.no_code = true;
        *result = value_copy_deep(r, &cc);
        const char *cerr = cc.error;
        copy_done(&cc);
        value_track_resume(tracked);
        decref(r);
        if (cerr) {
            decref(*result);
            snprintf(err, errlen, "%s%s() returned %s, which cannot leave a task", c->prefix,
                     c->name, cerr);
            ok = false;
        }
    } else {
        VMError *e = &tvm.err;
        if (e->chained)
            snprintf(err, errlen, "%s", e->msg); /* its hop line says where */
        else if (e->src && e->line > 0)
            snprintf(err, errlen, "%s (%s:%d)", e->msg, e->src->name, e->line);
        else
            snprintf(err, errlen, "%s", e->msg);
    }
    vm_free(&tvm);
    copy_release_modules(&c->mods); /* the task's copies of modules: cycles broken */
    decref(c->fn);
    c->fn = v_nil();
    value_track_end();
    return ok;
}

static Value qfn_body(VM *vm, ObjFunc *f, Value *params, uint64_t seed, uint64_t index,
                      const Node *site, const void *arg);

/* ---------------------------------------------------------------- timings */

static TaskTiming *timing_slot(TaskState *ts, const FnProto *p, bool add)
{
    size_t h = (size_t)(((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ULL >> 58);
    for (size_t k = 0; k < TASK_TIMINGS; k++) {
        TaskTiming *tm = &ts->timing[(h + k) % TASK_TIMINGS];
        const FnProto *cur = atomic_load_explicit(&tm->proto, memory_order_acquire);
        if (!cur) {
            if (!add) return NULL;
            /* a slot is claimed once, for good; a racing thread may claim it first */
            if (atomic_compare_exchange_strong(&tm->proto, &cur, p)) return tm;
        }
        if (cur == p) return tm;
    }
    return NULL; /* full: the program's further codes go untimed */
}

/* The run time of a finished call of p's code (any thread). The estimate
 * follows a shorter call at once and a longer one by at most doubling, so
 * that one call slowed by its thread losing the core (a loaded machine)
 * does not make the code count as slow; a code that really became slower
 * is caught up with in a few calls. (Two threads noting at once may lose
 * one note: it is an estimate.) */
static void timing_note(Interp *in, const FnProto *p, double seconds)
{
    TaskTiming *tm = in->tasks ? timing_slot(in->tasks, p, true) : NULL;
    if (!tm) return;
    if (seconds < 1e-9) seconds = 1e-9; /* 0: not known */
    double est = atomic_load_explicit(&tm->seconds, memory_order_relaxed);
    if (est > 0 && seconds > 2 * est) seconds = 2 * est;
    atomic_store_explicit(&tm->seconds, seconds, memory_order_relaxed);
}

bool task_short(Interp *in, const FnProto *p)
{
    TaskTiming *tm = in->tasks ? timing_slot(in->tasks, p, false) : NULL;
    double s = tm ? atomic_load_explicit(&tm->seconds, memory_order_relaxed) : 0;
    return s > 0 && s < TASK_SHORT_SECONDS;
}

static void run_task(void *p, ExecTask *t)
{
    TaskCtx *c = p;
    int slot = exec_task_remote(t);
    bool (*ship)(TaskCtx *, ExecTask *, int) = c->in->tasks ? c->in->tasks->ship : NULL;
    if (slot >= 0 && ship && ship(c, t, slot)) return; /* else it could not travel: run here */
    Value result;
    char err[1200];
    const FnProto *proto = c->body == qfn_body ? AS_FUNC(c->fn)->p : NULL;
    bool ok = task_execute(c, exec_task_cancel_flag(t), t, &result, err, sizeof err);
    if (proto && ok) timing_note(c->in, proto, task_now() - exec_task_started(t));
    if (ok) {
        Value *box = xmalloc(sizeof(Value));
        *box = result;
        exec_task_done(t, box, task_free_box);
    } else {
        exec_task_fail(t, err);
    }
}

/* ---------------------------------------------------------------- dispatch */

/* The id of a nested call: the k-th call made by the call whose id is
 * parent. Ids of the main program's calls are their positions 0, 1, ...;
 * nested ids have the top bit set, so no two places in the call tree share
 * a random stream. */
static uint64_t nested_id(uint64_t parent, uint64_t k)
{
    uint64_t z = parent * 0x9e3779b97f4a7c15ULL + k + 0x632be59bd9b4e019ULL;
    z ^= z >> 30;
    z *= 0xbf58476d1ce4e5b9ULL;
    z ^= z >> 27;
    z *= 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return z | (1ULL << 63);
}

/* A call made inside a task runs at once, on the task's VM, with its own
 * copies of its arguments (futures in them are shared: they are finished)
 * and the id of its place in the call tree. */
Value task_run_nested(VM *vm, ObjFunc *f, Value *params, const Node *site, TaskBody body,
                      const void *arg)
{
    if (vm_check_interrupt(vm)) {
        for (int i = 0; i < f->p->nlocals; i++) decref(params[i]);
        return v_exc();
    }
    uint64_t id = nested_id(vm->call_id, vm->qcall_seq++);
    CopyCtx cc;
    copy_init(&cc);
    cc.share_code = true; /* same thread: functions need no copy */
    cc.on_future = share_future;
    for (int i = 0; i < f->p->nparams; i++) {
        Value c = value_copy_deep(params[i], &cc);
        decref(params[i]);
        params[i] = c;
    }
    const char *cerr = cc.error;
    copy_done(&cc);
    if (cerr) {
        for (int i = 0; i < f->p->nlocals; i++) decref(params[i]);
        return vm_error(vm, site, "%s(): cannot pass %s to a quantum function", f->p->name, cerr);
    }
    uint64_t saved_id = vm->call_id, saved_seq = vm->qcall_seq;
    vm->call_id = id;
    vm->qcall_seq = 0;
    Value r = body(vm, f, params, vm->stream_seed, id, site, arg);
    vm->call_id = saved_id;
    vm->qcall_seq = saved_seq;
    return r;
}

/* The task's copies: the function (its module copied with only the globals
 * it reads, and what the function values it reaches read, transitively),
 * the arguments. Futures still running become dependencies. */
static TaskCtx *make_ctx(VM *vm, ObjFunc *f, Value *params, DepList *deps, const char **cerr)
{
    TaskCtx *c = xcalloc(1, sizeof *c + (size_t)(f->p->nparams + 1) * sizeof(Value));
    c->in = vm->in;
    bool tracked = value_track_pause(); /* the copies belong to the task's thread (value.h) */
    CopyCtx cc;
    copy_init(&cc);
    cc.user = deps;
    cc.on_future = copy_future_out;
    ObjModule *tm = module_copy_partial(f->mod, &cc); /* filled as functions are copied */
    c->fn = value_copy_deep(v_obj(&f->h), &cc);
    decref(v_obj(&tm->h)); /* the copied function holds it */
    c->nargs = f->p->nparams;
    for (int i = 0; i < c->nargs; i++) c->args[i] = value_copy_deep(params[i], &cc);
    *cerr = cc.error;
    copy_done(&cc);
    copy_move_modules(&c->mods, &cc);
    value_track_resume(tracked);
    return c;
}

/* --sync: the same task, run to completion now on the main thread; its
 * error waits for a use like any other */
static Fut *run_now(Interp *in, TaskCtx *c)
{
    Fut *fut = fut_new();
    fut_set_running(fut);
    Value result;
    char err[1200];
    double t0 = task_now();
    double ts = in->trace ? trace_now_us(in->trace) : 0;
    bool ok = task_execute(c, &in->interrupt, NULL, &result, err, sizeof err);
    task_state(in)->sync_task_seconds += task_now() - t0;
    in->tasks->sync_tasks++;
    if (in->trace) {
        char name[160], args[64];
        snprintf(name, sizeof name, "%s%s", c->prefix, c->name);
        snprintf(args, sizeof args, "{\"line\":%d}", c->line);
        trace_complete(in->trace, 0, name, "task", ts, trace_now_us(in->trace) - ts, args);
    }
    if (ok) {
        Value *box = xmalloc(sizeof(Value));
        *box = result;
        fut_complete(fut, box, task_free_box);
    } else if (atomic_load(&in->interrupt)) {
        fut_cancel(fut);
    } else {
        fut_fail(fut, err);
    }
    task_ctx_free(c);
    return fut;
}

/* "grad f() early" into buf (64 bytes, truncated): no snprintf per call */
static void task_label(char *buf, const char *prefix, const char *name, bool early)
{
    const char *parts[4] = { prefix, name, "()", early ? " early" : "" };
    size_t k = 0;
    for (int i = 0; i < 4; i++)
        for (const char *c = parts[i]; *c && k < 63; c++) buf[k++] = *c;
    buf[k] = 0;
}


TaskCtx *task_prepare(VM *vm, const TaskSpec *s, const char **cerr)
{
    DepList deps = { NULL, 0, 0 };
    *cerr = NULL;
    ObjFunc *f = s->f;
    TaskCtx *c = make_ctx(vm, f, s->params, &deps, cerr);
    c->seed = vm->stream_seed;
    c->index = s->index;
    c->body = s->body;
    c->prefix = s->prefix ? s->prefix : "";
    c->name = f->p->name;
    c->line = s->site ? s->site->line : vm->cur_line;
    c->early = s->early;
    if (s->argsize) {
        c->arg = xmalloc(s->argsize);
        c->argsize = s->argsize;
        memcpy(c->arg, s->arg, s->argsize);
    }
    c->deps = deps.v;
    c->ndeps = deps.n;
    if (*cerr) {
        task_ctx_free(c);
        return NULL;
    }
    return c;
}

static Fut *launch(VM *vm, TaskCtx *c, bool here);

Fut *task_launch(VM *vm, TaskCtx *c) { return launch(vm, c, false); }

Fut *task_launch_here(VM *vm, TaskCtx *c) { return launch(vm, c, true); }

static Fut *launch(VM *vm, TaskCtx *c, bool here)
{
    Interp *in = vm->in;
    Fut **deps = c->deps;
    int ndeps = c->ndeps;
    c->deps = NULL;
    c->ndeps = 0;
    Fut *fut;
    if (in->sync || !in->exec) {
        for (int i = 0; i < ndeps; i++) fut_wait(deps[i]);
        fut = run_now(in, c);
    } else {
        char label[64];
        task_label(label, c->prefix, c->name, c->early);
        /* another rank may run a plain qfn call whose device can live there */
        unsigned flags =
            task_state(in)->ship && c->body == qfn_body && qrt_may_travel(in, AS_FUNC(c->fn))
                ? EXEC_REMOTE
                : 0;
        if (here && !flags) flags = EXEC_HERE; /* a call that may travel keeps its chance to */
        fut = exec_submit(in->exec, &(ExecJob){ run_task, c, task_ctx_free, (Fut *const *)deps,
                                                ndeps, label, c->line, flags });
    }
    free(deps);
    return fut;
}

Fut *task_submit(VM *vm, const TaskSpec *s, const char **cerr)
{
    TaskCtx *c = task_prepare(vm, s, cerr);
    return c ? task_launch(vm, c) : NULL;
}

/* ---------------------------------------------------------------- canonical bytes */

bool task_canon(const TaskCtx *c, TaskCanon *out)
{
    memset(out, 0, sizeof *out);
    CanonFuts futs = { NULL, 0, 0 };
    SerCtx sc;
    ser_init(&sc, NULL);
    sc.local = true;
    sc.user = &futs;
    /* what the task computes is a function of these, and of nothing else */
    ser_u64(&sc, c->seed);
    ser_u64(&sc, c->index);
    ser_u64(&sc, (uint64_t)(uintptr_t)c->body);
    ser_u64(&sc, c->argsize);
    ser_bytes(&sc, c->arg, c->argsize);
    ser_str(&sc, c->prefix, strlen(c->prefix));
    ser_str(&sc, c->name, strlen(c->name));
    ser_u32(&sc, (uint32_t)c->line);
    bool ok = ser_value(&sc, c->fn);
    ser_u32(&sc, (uint32_t)c->nargs);
    for (int i = 0; ok && i < c->nargs; i++) ok = ser_value(&sc, c->args[i]);
    ok = ok && !sc.failed && !sc.out.failed;
    if (ok) {
        out->bytes = sc.out;
        buf_init(&sc.out); /* moved out */
    }
    ser_free(&sc);
    out->futs = futs.v;
    out->nfuts = futs.n;
    if (!ok) task_canon_free(out);
    return ok;
}

void task_canon_free(TaskCanon *k)
{
    buf_free(&k->bytes);
    for (int i = 0; i < k->nfuts; i++) fut_release(k->futs[i]);
    free(k->futs);
    memset(k, 0, sizeof *k);
}

bool task_canon_same(const TaskCanon *a, const TaskCanon *b)
{
    return a->bytes.len == b->bytes.len &&
           (!a->bytes.len || memcmp(a->bytes.p, b->bytes.p, a->bytes.len) == 0);
}

/* a plain qfn call's body: the quantum runtime runs it */
static Value qfn_body(VM *vm, ObjFunc *f, Value *params, uint64_t seed, uint64_t index,
                      const Node *site, const void *arg)
{
    (void)arg;
    return qrt_run(vm, f, seed, index, params, site);
}

TaskBody task_qfn_body(void) { return qfn_body; }

static const TypeOps future_ops = {
    .name = "future",
    .flags = TF_LAZY,
    .free = future_free,
    .clear = future_clear,
    .traverse = future_traverse,
    .copy = future_copy,
    .ser = future_ser,
    .deser = future_deser,
    .repr = future_repr,
    .force = future_force,
};

void task_open(void) { type_register(T_FUTURE, &future_ops); }

void task_future_disown(Value v) { AS_FUT(v)->owner = NULL; }

Fut *task_future_fut(Value v)
{
    return v.t == T_FUTURE && !AS_FUT(v)->resolved ? AS_FUT(v)->fut : NULL;
}

Fut *task_fut_of(Value v) { return v.t == T_FUTURE ? AS_FUT(v)->fut : NULL; }

bool task_future_ready(Value v) { return AS_FUT(v)->resolved || fut_ready(AS_FUT(v)->fut); }

bool task_future_pending_text(Value v, unsigned long since, Buf *out)
{
    if (v.t != T_FUTURE) return false;
    ObjFuture *f = AS_FUT(v);
    if (f->resolved || !f->fut || fut_ready(f->fut) || f->serial >= since) return false;
    future_repr(out, v, false);
    return true;
}

int task_future_state(Value v)
{
    if (v.t != T_FUTURE) return -1;
    ObjFuture *f = AS_FUT(v);
    return f->resolved || !f->fut ? FUT_DONE : (int)fut_state(f->fut);
}

bool task_future_text(Value v, Buf *out)
{
    if (v.t != T_FUTURE) return false;
    future_repr(out, v, false);
    return true;
}
