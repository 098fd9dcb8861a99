/* async.c — quantum calls as futures (lang/async.md): dispatching a call
 * as a task with deep-copied arguments and captured globals, chaining on
 * futures passed in, the future kind (its force slot resolves it wherever
 * a value is needed), reporting failed tasks nobody needed, Ctrl-C,
 * --stats and --trace. The main VM's values never reach a worker: a task
 * gets copies and hands back a copied result. Knows the evaluator, the
 * executor's interface, and the quantum runtime's entry (a plain qfn
 * call's body); other task bodies (gradients) are given by their rooms. */
#include "async.h"
#include "diag.h"
#include "eval.h"
#include "exec.h"
#include "pool.h"
#include "qh_assert.h"
#include "qrt.h"
#include "trace.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A call the main program made: what the exit report and :tasks need. */
typedef struct TaskRec {
    Fut *fut;
    struct ObjFuture *obj;  /* the main-side future while it exists */
    char *name;
    const Source *src;
    int line;
    double t0;              /* dispatched at (mono) */
    bool observed;
    struct TaskRec *next;
} TaskRec;

typedef struct ObjFuture {
    Obj h;
    Fut *fut;
    TaskRec *rec;           /* main-side futures only */
    Value cached;
    bool resolved;
    char *name;             /* qfn name */
    const Source *src;
    int line;               /* call line */
    unsigned long serial;   /* main-side: the dispatch's number (async_dispatches) */
} ObjFuture;
#define AS_FUT(v) ((ObjFuture *)(v).o)

/* Everything a task needs, all copies made for it. */
typedef struct TaskCtx {
    Interp *in;
    Value fn;
    Value *args;
    int nargs;
    uint64_t seed, index;
    char *name;
    const Source *src;
    int line;
    TaskBody body;          /* what the task runs */
    void *arg;              /* the body's argument (a copy) */
    CopyCtx mods;           /* the modules copied for the task: released at its end */
} TaskCtx;

/* The main thread's record of the calls it dispatched, and its timing
 * (in->async; main-thread only). */
typedef struct AsyncState {
    TaskRec *head;
    unsigned long count;
    unsigned long dispatches;   /* calls dispatched so far (async_dispatches) */
    double main_wait_seconds;
    double run_start;
    unsigned long sync_tasks;   /* --sync: calls run, and their time */
    double sync_task_seconds;
} AsyncState;

/* Drops finished calls nobody can ask about any more (their future value is
 * gone, and they either succeeded or were observed): a long loop of calls
 * keeps no memory for them. */
static void registry_compact(AsyncState *as)
{
    TaskRec **pp = &as->head;
    while (*pp) {
        TaskRec *r = *pp;
        if (!r->obj && fut_ready(r->fut) && (r->observed || fut_state(r->fut) != FUT_FAILED)) {
            /* nobody can ask about it any more */
            *pp = r->next;
            fut_release(r->fut);
            free(r->name);
            free(r);
            continue;
        }
        pp = &r->next;
    }
}
static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------- future objects */

static void future_free(Obj *o)
{
    ObjFuture *f = (ObjFuture *)o;
    if (f->rec) f->rec->obj = NULL;
    decref(f->cached);
    if (f->fut) fut_release(f->fut);
    free(f->name);
    free(f);
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
    buf_printf(b, "<future %s() from %s: %s>", f->name, where, names[st]);
}

static Value future_new(Fut *fut, TaskRec *rec, const char *name, const Source *src, int line)
{
    ObjFuture *f = (ObjFuture *)obj_alloc(sizeof(ObjFuture), T_FUTURE);
    f->fut = fut;
    f->rec = rec;
    f->cached = v_nil();
    f->name = xstrdup(name);
    f->src = src;
    f->line = line;
    return v_obj(&f->h);
}

static void future_traverse(Obj *o, void (*visit)(Value, void *), void *ud) { visit(((ObjFuture *)o)->cached, ud); }
static void future_clear(Obj *o) { ObjFuture *f = (ObjFuture *)o; Value c = f->cached; f->cached = v_nil(); decref(c); }

/* ---------------------------------------------------------------- copying */

typedef struct DepList { Fut **v; int n, cap; } DepList;

/* main -> task: a future becomes a task-side future on the same Fut, and a
 * dependency of the task (unless already resolved: then its value) */
static Value copy_future_out(Value v, CopyCtx *cc)
{
    ObjFuture *f = AS_FUT(v);
    if (f->resolved) return value_copy_deep(f->cached, cc);
    DepList *d = cc->user;
    if (d) {
        bool have = false;
        for (int i = 0; i < d->n; i++) if (d->v[i] == f->fut) have = true;
        if (!have) {
            if (d->n == d->cap) { d->cap = d->cap ? d->cap * 2 : 4; d->v = xrealloc(d->v, (size_t)d->cap * sizeof(Fut *)); }
            d->v[d->n++] = f->fut;
        }
    }
    if (f->rec) f->rec->observed = true;    /* its value (or error) flows into the new call */
    Value n = future_new(fut_retain(f->fut), NULL, f->name, f->src, f->line);
    copy_memo_put(cc, f, n.o);
    return n;
}

/* a finished future's value: copied out of the Fut, or the error */
static bool fut_value(VM *vm, Fut *fut, Value *out, const char **err)
{
    FutState st = fut_state(fut);
    if (st == FUT_DONE) {
        Value *box = fut_result(fut);
        CopyCtx cc;
        copy_init(&cc);
        *out = value_copy_deep(*box, &cc);
        copy_done(&cc);
        (void)vm;
        return true;
    }
    *err = st == FUT_CANCELLED ? "cancelled" : fut_error(fut);
    if (!*err) *err = "failed";
    return false;
}

/* task -> result: futures inside the result are resolved (their Fut is done) */
static Value copy_future_resolve(Value v, CopyCtx *cc)
{
    ObjFuture *f = AS_FUT(v);
    if (f->resolved) return value_copy_deep(f->cached, cc);
    Value out;
    const char *err;
    if (fut_state(f->fut) == FUT_DONE && fut_value(NULL, f->fut, &out, &err)) return out;
    cc->error = "a failed future";
    return v_nil();
}

static void free_box(void *p)
{
    Value *b = p;
    decref(*b);
    free(b);
}

/* ---------------------------------------------------------------- forcing */

/* the force slot: waits for the task (running it here if still queued) */
static Value future_force(VM *vm, Value v, const Node *site)
{
    ObjFuture *f = AS_FUT(v);
    if (f->resolved) { incref(f->cached); return f->cached; }
    Interp *in = vm->in;
    if (!fut_ready(f->fut) && !vm->is_task && in->exec) {
        /* still queued: run it here rather than wait for a worker to start it */
        exec_run_inline(in->exec, f->fut);
    }
    if (!fut_ready(f->fut)) {
        double t0 = mono();
        double ts = in->trace ? trace_now_us(in->trace) : 0;
        FutState st;
        if (vm->is_task) st = fut_wait(f->fut);
        else {
            atomic_store(&in->main_waiting, 1);
            st = fut_wait_interruptible(f->fut, &in->interrupt);
            atomic_store(&in->main_waiting, 0);
        }
        double t1 = mono();
        if (!vm->is_task) {
            vm->wait_time += t1 - t0;
            in->async->main_wait_seconds += t1 - t0;
            if (in->trace) {
                char name[200], args[128];
                snprintf(name, sizeof name, "wait %s() from line %d", f->name, f->line);
                snprintf(args, sizeof args, "{\"line\":%d}", site ? site->line : vm->cur_line);
                trace_complete(in->trace, 0, name, "wait", ts, trace_now_us(in->trace) - ts, args);
            }
        }
        if (st == FUT_PENDING || st == FUT_RUNNING) return vm_interrupted(vm, site);
    }
    if (f->rec) f->rec->observed = true;
    Value out;
    const char *err = NULL;
    if (!fut_value(vm, f->fut, &out, &err)) {
        const char *file = f->src ? f->src->name : "?";
        if (fut_state(f->fut) == FUT_CANCELLED && (atomic_load(&in->sigint) || atomic_load(&in->interrupt)))
            return vm_interrupted(vm, site);
        return vm_error(vm, site, "%s() called at %s:%d failed: %s", f->name, file, f->line, err);
    }
    f->cached = out;
    f->resolved = true;
    incref(out);
    return out;
}

/* ---------------------------------------------------------------- running a task */

static void ctx_free(void *p)
{
    TaskCtx *c = p;
    if (!c) return;
    for (int i = 0; i < c->nargs; i++) { decref(c->args[i]); c->args[i] = v_nil(); }
    copy_release_modules(&c->mods);
    decref(c->fn);
    free(c->args);
    free(c->name);
    free(c->arg);
    free(c);
}

/* Runs the call on a task VM; the result is copied into a fresh graph and
 * everything else the task made is freed before the future completes. */
static bool task_execute(TaskCtx *c, const atomic_int *cancel, void *task, Value *result, char *err, size_t errlen)
{
    value_track_begin();                /* what the task makes and leaves in cycles is swept at its end */
    VM tvm;
    vm_init(&tvm, c->in, true);
    tvm.cancel = cancel;
    tvm.task = task;
    tvm.stream_seed = c->seed ^ (c->index * 0x9e3779b97f4a7c15ULL);
    rng_seed2(&tvm.rng, c->seed, c->index);
    ObjFunc *f = AS_FUNC(c->fn);
    tvm.mod = f->mod;
    Value *slots = tvm.stack;
    int nl = f->p->nlocals > c->nargs ? f->p->nlocals : c->nargs;
    for (int i = 0; i < c->nargs; i++) { slots[i] = c->args[i]; c->args[i] = v_nil(); value_track_adopt(slots[i]); }
    for (int i = c->nargs; i < nl; i++) slots[i] = v_unbound();
    tvm.sp = (size_t)nl;
    Value r = c->body(&tvm, f, slots, c->seed, c->index, NULL, c->arg);
    tvm.sp = 0;
    bool ok = !IS_EXC(r);
    value_track_pause();                /* the result's copy is not the task's garbage */
    if (ok) {
        CopyCtx cc;
        copy_init(&cc);
        cc.on_future = copy_future_resolve;
        cc.no_code = true;
        *result = value_copy_deep(r, &cc);
        const char *cerr = cc.error;
        copy_done(&cc);
        decref(r);
        if (cerr) {
            decref(*result);
            snprintf(err, errlen, "%s() returned %s, which cannot leave a task", c->name, cerr);
            ok = false;
        }
    } else {
        VMError *e = &tvm.err;
        if (e->src && e->line > 0) snprintf(err, errlen, "%s (%s:%d)", e->msg, e->src->name, e->line);
        else snprintf(err, errlen, "%s", e->msg);
    }
    vm_free(&tvm);
    copy_release_modules(&c->mods);      /* the task's copies of modules: cycles broken */
    decref(c->fn);
    c->fn = v_nil();
    value_track_end();
    return ok;
}

static void run_task(void *p, ExecTask *t)
{
    TaskCtx *c = p;
    Value result;
    char err[1200];
    if (task_execute(c, exec_task_cancel_flag(t), t, &result, err, sizeof err)) {
        Value *box = xmalloc(sizeof(Value));
        *box = result;
        exec_task_done(t, box, free_box);
    } else {
        exec_task_fail(t, err);
    }
}

/* ---------------------------------------------------------------- dispatch */

/* The globals a qfn takes along: what its body reads, and transitively what
 * the functions it reads read. */
static void capture_globals(ObjModule *mod, FnProto *p, bool *want)
{
    for (int i = 0; i < p->nglobal_reads; i++) {
        int g = p->global_reads[i];
        if (g >= mod->nglobals || want[g]) continue;
        want[g] = true;
        Value v = mod->globals[g];
        if (v.t == T_FUNC && AS_FUNC(v)->mod == mod) capture_globals(mod, AS_FUNC(v)->p, want);
    }
}

static TaskCtx *make_ctx(VM *vm, ObjFunc *f, Value *params, DepList *deps, const Node *site, const char **cerr)
{
    TaskCtx *c = xcalloc(1, sizeof *c);
    c->in = vm->in;
    c->name = xstrdup(f->p->name);
    c->src = vm_source(vm);
    c->line = site ? site->line : vm->cur_line;
    CopyCtx cc;
    copy_init(&cc);
    cc.user = deps;
    cc.on_future = copy_future_out;
    /* the qfn's module, with only the globals it takes along */
    ObjModule *m = f->mod;
    bool *want = xcalloc((size_t)m->nglobals + 1, sizeof(bool));
    capture_globals(m, f->p, want);
    ObjModule *tm = module_copy_some(m, want, &cc);
    free(want);
    c->fn = value_copy_deep(v_obj(&f->h), &cc);
    decref(v_obj(&tm->h));          /* the copied function holds it */
    c->nargs = f->p->nparams;
    c->args = xmalloc((size_t)(c->nargs + 1) * sizeof(Value));
    for (int i = 0; i < c->nargs; i++) c->args[i] = value_copy_deep(params[i], &cc);
    *cerr = cc.error;
    copy_done(&cc);
    copy_move_modules(&c->mods, &cc);
    return c;
}

/* A call (or a gradient) of a qfn: a task with copies of everything it
 * needs, or, inside a task, run at once. */
Value async_dispatch(VM *vm, ObjFunc *f, Value *params, const Node *site, TaskBody body,
                     const void *arg, size_t argsize, const char *label_prefix)
{
    Interp *in = vm->in;
    /* the call's random stream: (device seed or program seed, position in program order) */
    uint64_t index = vm->qcall_seq++;
    uint64_t seed = vm->stream_seed;
    if (vm->is_task) {
        /* inside a task quantum calls run at once, in the same task */
        if (vm_check_interrupt(vm)) { for (int i = 0; i < f->p->nlocals; i++) decref(params[i]); return v_exc(); }
        CopyCtx cc;
        copy_init(&cc);
        cc.share_code = true;             /* same thread: functions need no copy */
        for (int i = 0; i < f->p->nparams; i++) {
            Value c = value_copy_deep(params[i], &cc);
            decref(params[i]);
            params[i] = c;
        }
        copy_done(&cc);
        uint64_t saved = vm->stream_seed;
        vm->stream_seed = seed ^ ((index + 1) * 0xbf58476d1ce4e5b9ULL);
        Value r = body(vm, f, params, seed, index, site, arg);
        vm->stream_seed = saved;
        return r;
    }
    DepList deps = { NULL, 0, 0 };
    const char *cerr = NULL;
    TaskCtx *c = make_ctx(vm, f, params, &deps, site, &cerr);
    for (int i = 0; i < f->p->nlocals; i++) decref(params[i]);
    c->seed = seed;
    c->index = index;
    c->body = body;
    if (argsize) { c->arg = xmalloc(argsize); memcpy(c->arg, arg, argsize); }
    if (label_prefix && *label_prefix) {
        size_t ln = strlen(label_prefix) + strlen(f->p->name) + 1;
        free(c->name);
        c->name = xmalloc(ln);
        snprintf(c->name, ln, "%s%s", label_prefix, f->p->name);
    }
    if (cerr) {
        ctx_free(c);
        free(deps.v);
        return vm_error(vm, site, "%s(): cannot pass %s to a quantum function", f->p->name, cerr);
    }
    char *call_name = xstrdup(c->name);     /* for the record: c may be gone below */
    Fut *fut;
    if (in->sync || !in->exec) {
        /* --sync: the same task, run to completion now; errors wait for their use */
        for (int i = 0; i < deps.n; i++) fut_wait(deps.v[i]);
        fut = fut_new();
        fut_set_running(fut);
        Value result;
        char err[1200];
        double t0 = mono();
        double ts = in->trace ? trace_now_us(in->trace) : 0;
        bool ok = task_execute(c, &in->interrupt, NULL, &result, err, sizeof err);
        in->async->sync_task_seconds += mono() - t0;
        in->async->sync_tasks++;
        if (in->trace) {
            char args[64];
            snprintf(args, sizeof args, "{\"line\":%d}", c->line);
            trace_complete(in->trace, 0, c->name, "task", ts, trace_now_us(in->trace) - ts, args);
        }
        if (ok) {
            Value *box = xmalloc(sizeof(Value));
            *box = result;
            fut_complete(fut, box, free_box);
        } else if (atomic_load(&in->interrupt)) {
            fut_cancel(fut);
        } else {
            fut_fail(fut, err);
        }
        ctx_free(c);
    } else {
        char label[128];
        snprintf(label, sizeof label, "%s()", call_name);
        int line = c->line;
        fut = exec_submit(in->exec, run_task, c, ctx_free, (Fut *const *)deps.v, deps.n, label, line);
        if (!fut) {
            free(deps.v);
            free(call_name);
            return vm_interrupted(vm, site);
        }
    }
    free(deps.v);
    AsyncState *as = in->async;
    TaskRec *rec = xcalloc(1, sizeof *rec);
    rec->fut = fut_retain(fut);
    rec->name = call_name;
    rec->src = vm_source(vm);
    rec->line = site ? site->line : vm->cur_line;       /* vm_source: a REPL entry's own */
    rec->t0 = mono();
    rec->next = as->head;
    as->head = rec;
    Value fv = future_new(fut, rec, rec->name, rec->src, rec->line);
    rec->obj = AS_FUT(fv);
    AS_FUT(fv)->serial = as->dispatches++;
    if (++as->count % 256 == 0) registry_compact(as);
    return fv;
}

/* a plain qfn call's body: the quantum runtime runs it */
static Value qfn_body(VM *vm, ObjFunc *f, Value *params, uint64_t seed, uint64_t index, const Node *site, const void *arg)
{
    (void)arg;
    return qrt_run(vm, f, seed, index, params, site);
}

/* the evaluator's qfn call hook */
static Value qfn_call(VM *vm, ObjFunc *f, Value *params, const Node *site)
{
    return async_dispatch(vm, f, params, site, qfn_body, NULL, 0, NULL);
}

/* ---------------------------------------------------------------- builtins */

static Value bi_ready(VM *vm, Args *a)
{
    (void)vm;
    Value v = a->v[0];
    if (v.t == T_FUTURE) return v_bool(AS_FUT(v)->resolved || fut_ready(AS_FUT(v)->fut));
    if (v.t == T_LIST) {
        ObjList *l = AS_LIST(v);
        for (size_t i = 0; i < l->len; i++)
            if (l->v[i].t == T_FUTURE && !(AS_FUT(l->v[i])->resolved || fut_ready(AS_FUT(l->v[i])->fut))) return v_bool(false);
    }
    return v_bool(true);
}

static Value bi_wait(VM *vm, Args *a)
{
    Value v = a->v[0];
    if (v.t == T_LIST) {
        ObjList *l = AS_LIST(v), *r = list_new(l->len);
        for (size_t i = 0; i < l->len; i++) {
            Value x = tp_force(vm, l->v[i], a->site);
            if (IS_EXC(x)) { decref(v_list(r)); return x; }
            r->v[r->len++] = x;
        }
        return v_list(r);
    }
    return tp_force(vm, v, a->site);
}

static Value bi_sync(VM *vm, Args *a)
{
    Interp *in = vm->in;
    (void)a;
    if (vm->is_task || !in->exec) return v_nil();
    double t0 = mono();
    atomic_store(&in->main_waiting, 1);
    bool ok = exec_wait_all_interruptible(in->exec, &in->interrupt);
    atomic_store(&in->main_waiting, 0);
    vm->wait_time += mono() - t0;
    in->async->main_wait_seconds += mono() - t0;
    if (!ok) return vm_interrupted(vm, a->site);
    return v_nil();
}

static const BuiltinDef builtins_async[] = {
    { "ready", bi_ready, 1, 1, BI_LAZY, NULL, 0 },
    { "wait", bi_wait, 1, 1, BI_LAZY, NULL, 0 },
    { "sync", bi_sync, 0, 0, 0, NULL, 0 },
    { NULL, NULL, 0, 0, 0, NULL, 0 },
};

/* ---------------------------------------------------------------- start and finish */

/* The SIGINT handler's interpreter: a handler gets no context, so this one
 * pointer is file-scope (set once before the handler is installed). */
static Interp *sig_interp;

static void on_sigint(int sig)
{
    (void)sig;
    Interp *in = sig_interp;
    if (!in) _exit(130);
    if (atomic_load(&in->sigint)) _exit(130);        /* a second Ctrl-C: leave now */
    atomic_store(&in->sigint, 1);
    atomic_store(&in->interrupt, 1);
    if (in->exec) exec_interrupt(in->exec);
}

void async_install_sigint(Interp *in)
{
    sig_interp = in;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

void async_start(Interp *in, const char *trace_path)
{
    if (!in->async) in->async = xcalloc(1, sizeof *in->async);
    in->async->run_start = mono();
    if (!in->nworkers) {
        const char *w = getenv("QH_WORKERS");
        in->nworkers = w && atoi(w) > 0 ? atoi(w) : (int)in->ncpu;
    }
    if (!in->max_memory) in->max_memory = pool_default_budget();
    qrt_start(in);
    if (trace_path) {
        in->trace = trace_new();
        in->trace_path = trace_path;
        if (in->sync) trace_thread_name(in->trace, 0, "main");   /* else the executor names its threads */
    }
    if (!in->sync) {
        in->exec = exec_new(in->nworkers, (size_t)(in->nworkers * 16 > 64 ? in->nworkers * 16 : 64));
        if (in->trace) exec_set_trace(in->exec, in->trace);
    }
}

void async_cancel_all(Interp *in)
{
    if (in->exec) {
        exec_cancel_all(in->exec);
        exec_wait_all(in->exec);
        exec_clear_interrupt(in->exec);
    }
    atomic_store(&in->interrupt, 0);
    atomic_store(&in->sigint, 0);
}

static bool task_pending(const TaskRec *r)
{
    return !fut_ready(r->fut) && !atomic_load(fut_cancel_flag(r->fut));
}

void async_print_tasks(Interp *in, FILE *out)
{
    if (!in->exec) { fprintf(out, "no background tasks (--sync)\n"); return; }
    /* the main program's calls still unfinished (and not being cancelled), oldest first */
    int n = 0;
    AsyncState *as = in->async;
    for (TaskRec *r = as->head; r; r = r->next) if (task_pending(r)) n++;
    if (!n) { fprintf(out, "no pending tasks\n"); return; }
    TaskRec **v = xmalloc((size_t)n * sizeof *v);
    int k = n;
    for (TaskRec *r = as->head; r; r = r->next) if (task_pending(r)) v[--k] = r;
    double now = mono();
    for (int i = 0; i < n && i < 64; i++) {
        char where[300];
        diag_where(where, sizeof where, v[i]->src, v[i]->line);
        bool running = fut_state(v[i]->fut) == FUT_RUNNING;
        fprintf(out, "  %s() from %s: %s (%.1f s)\n", v[i]->name, where, running ? "running on a worker" : "queued",
                now - v[i]->t0);
    }
    if (n > 64) fprintf(out, "  ... and %d more\n", n - 64);
    free(v);
}

unsigned long async_dispatches(Interp *in) { return in->async ? in->async->dispatches : 0; }

bool async_pending_text(Value v, unsigned long since, Buf *out)
{
    if (v.t != T_FUTURE) return false;
    ObjFuture *f = AS_FUT(v);
    if (f->resolved || !f->fut || fut_ready(f->fut) || f->serial >= since) return false;
    future_repr(out, v, false);
    return true;
}

int async_finish(Interp *in, VM *main_vm, bool cancel)
{
    (void)main_vm;
    if (in->exec) {
        if (cancel || atomic_load(&in->sigint)) exec_cancel_all(in->exec);
        if (!exec_wait_all_interruptible(in->exec, &in->interrupt)) {
            exec_cancel_all(in->exec);
            exec_wait_all(in->exec);
        }
    }
    int unobserved = 0;
    AsyncState *as = in->async;
    /* oldest first */
    TaskRec *rev = NULL;
    while (as->head) { TaskRec *n = as->head->next; as->head->next = rev; rev = as->head; as->head = n; }
    for (TaskRec *r = rev; r; r = r->next) {
        if (!cancel && !atomic_load(&in->sigint) && !r->observed && fut_state(r->fut) == FUT_FAILED) {
            fprintf(stderr, "%s:%d: warning: %s() failed and its result was never used: %s\n",
                    r->src ? r->src->name : "?", r->line, r->name, fut_error(r->fut));
            unobserved++;
        }
    }
    if (in->stats) {
        double wall = mono() - as->run_start;
        unsigned long ntasks;
        double task_s;
        if (in->exec) {
            ExecStats st;
            exec_stats(in->exec, &st);
            ntasks = st.run;
            task_s = st.task_seconds;
        } else {
            ntasks = as->sync_tasks;
            task_s = as->sync_task_seconds;
        }
        double busy_main = wall - as->main_wait_seconds - (in->exec ? 0 : task_s);
        double overlap = task_s + busy_main - wall;
        if (overlap < 0) overlap = 0;
        fprintf(stderr, "qh stats: %lu tasks, %.3f s in tasks, main thread waited %.3f s, wall %.3f s, "
                "overlap %.3f s (%.0f%% of task time ran alongside the main thread)\n",
                ntasks, task_s, as->main_wait_seconds, wall, overlap, task_s > 0 ? 100.0 * overlap / task_s : 0.0);
        qrt_stats(in, stderr);
    }
    while (rev) {
        TaskRec *n = rev->next;
        if (rev->obj) rev->obj->rec = NULL;     /* the future outlives the registry */
        fut_release(rev->fut);
        free(rev->name);
        free(rev);
        rev = n;
    }
    if (in->exec) { exec_free(in->exec); in->exec = NULL; }
    if (in->trace) {
        if (trace_write(in->trace, in->trace_path) != 0) fprintf(stderr, "qh: cannot write trace file '%s'\n", in->trace_path);
        trace_free(in->trace);
        in->trace = NULL;
    }
    qrt_finish(in);
    free(as);
    in->async = NULL;
    return unobserved;
}

static const TypeOps future_ops = {
    .name = "future", .flags = TF_LAZY,
    .free = future_free, .clear = future_clear, .traverse = future_traverse,
    .repr = future_repr, .force = future_force,
};

void async_open(void)
{
    type_register(T_FUTURE, &future_ops);
    builtins_add(builtins_async);
}

void async_attach(Interp *in) { in->hooks.qfn_call = qfn_call; }
