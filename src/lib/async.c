/* async.c — quantum calls as futures (lang/async.md): dispatching a call
 * as a task with deep-copied arguments and the globals it reaches, chaining
 * on futures passed in, the future kind (its force slot resolves it wherever
 * a value is needed; its copy slot lets a finished one travel inside
 * results), nested calls inside a task (run at once, numbered by their place
 * in the call tree), the record of every call the program made (failures
 * nobody read are reported at exit, grouped by call site), Ctrl-C, :tasks,
 * --stats and --trace. The main VM's values never reach a worker: a task
 * gets copies and hands back a copied result. Knows the evaluator, the
 * executor's interface, the lookahead's entry (lookahead.h) and the quantum
 * runtime's entry (a plain qfn call's body); other task bodies (gradients)
 * are given by their rooms. */
#include "async.h"
#include "bigstack.h"
#include "diag.h"
#include "eval.h"
#include "exec.h"
#include "lookahead.h"
#include "opts.h"
#include "pool.h"
#include "qh_assert.h"
#include "qrt.h"
#include "serial.h"
#include "trace.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- state */

/* A call the main program made: what the exit report, :tasks and the
 * REPL's Ctrl-C need. A record lives in one of three lists: LIVE while its
 * future object exists (the object owns it), ORPHAN once the object is gone
 * but the call is still running, FAILED once it failed with nobody having
 * read the error yet (the report at exit). A finished call whose outcome
 * can no longer matter is dropped at once: keeping futures costs O(1) per
 * call. */
enum { REC_LIVE, REC_ORPHAN, REC_FAILED };

typedef struct TaskRec {
    Fut *fut;
    struct ObjFuture *obj; /* the main-side future while it exists */
    struct AsyncState *as;
    const char *prefix, *name; /* "grad " "f": static and the function's name */
    const Source *src;         /* a REPL entry's own source (src->entry) */
    int line;
    unsigned long seq; /* dispatch number: program order */
    double t0;         /* dispatched at (mono) */
    struct TaskRec *prev, *next;
    unsigned char where;
} TaskRec;

typedef struct RecList {
    TaskRec *head, *tail;
    size_t n;
} RecList;

/* Failures nobody read, per call site, for the report at exit. */
#define SITE_SHOWN 3
typedef struct FailSite {
    const char *prefix, *name;
    const Source *src;
    int line;
    unsigned long first_seq;
    unsigned long count;
    int nshown;
    unsigned long shown_seq[SITE_SHOWN];
    char *shown[SITE_SHOWN]; /* messages of the first ones, by seq */
} FailSite;

/* The main thread's record of the calls it dispatched, and its timing
 * (in->async; main-thread only). */
typedef struct AsyncState {
    RecList live, orphans, failed;
    size_t orphans_kept; /* orphans after the last sweep */
    unsigned long seq;   /* calls dispatched so far */
    FailSite *sites;     /* open addressing, cap a power of two */
    size_t nsites, capsites;
    double main_wait_seconds;
    double run_start;
    unsigned long sync_tasks; /* --sync: calls run, and their time */
    double sync_task_seconds;
    const AsyncRemote *remote; /* under mpirun: other ranks run tasks too */
    atomic_ulong unsent;       /* tasks that could not be packed (run here) */
    char unsent_why[320];      /* the first reason (written once, under unsent_mu) */
    pthread_mutex_t unsent_mu;
} AsyncState;

typedef struct ObjFuture {
    Obj h;
    Fut *fut;
    TaskRec *rec; /* main-side futures that made the call only */
    Value cached;
    bool resolved;
    const char *prefix, *name;
    const Source *src;
    int line;             /* call line */
    unsigned long serial; /* main-side: the dispatch's number (async_dispatches) */
} ObjFuture;
#define AS_FUT(v) ((ObjFuture *)(v).o)

/* Everything a task needs, all copies made for it. */
typedef struct TaskCtx {
    Interp *in;
    Value fn;
    int nargs;
    uint64_t seed, index;
    const char *prefix, *name;
    int line;
    TaskBody body; /* what the task runs */
    void *arg;     /* the body's argument (a copy) */
    CopyCtx mods;  /* the modules copied for the task: released at its end */
    Value args[];  /* nargs */
} TaskCtx;

/* the interpreter's AsyncState, made on first need */
static AsyncState *async_state(Interp *in)
{
    if (!in->async) {
        in->async = xcalloc(1, sizeof *in->async);
        pthread_mutex_init(&in->async->unsent_mu, NULL);
    }
    return in->async;
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------- records */

static void list_push_rec(RecList *l, TaskRec *r, unsigned char where)
{
    r->where = where;
    r->next = NULL;
    r->prev = l->tail;
    if (l->tail)
        l->tail->next = r;
    else
        l->head = r;
    l->tail = r;
    l->n++;
}

static void list_unlink(RecList *l, TaskRec *r)
{
    qh_assert(r->prev != r && r->next != r);
    qh_assert(r->prev ? r->prev->next == r : l->head == r);
    qh_assert(r->next ? r->next->prev == r : l->tail == r);
    if (r->prev)
        r->prev->next = r->next;
    else
        l->head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        l->tail = r->prev;
    r->prev = r->next = NULL;
    l->n--;
}

static void rec_free(TaskRec *r)
{
    fut_release(r->fut);
    free(r);
}

static size_t site_hash(const FailSite *s)
{
    uintptr_t h = (uintptr_t)s->src * 31 + (uintptr_t)s->name * 17 + (uintptr_t)s->prefix +
                  (uintptr_t)s->line;
    return (size_t)(h * 0x9e3779b97f4a7c15ULL >> 7);
}

static FailSite *site_of(AsyncState *as, const TaskRec *r)
{
    if ((as->nsites + 1) * 2 > as->capsites) {
        size_t nc = as->capsites ? as->capsites * 2 : 16;
        FailSite *ns = xcalloc(nc, sizeof *ns);
        for (size_t i = 0; i < as->capsites; i++) {
            if (!as->sites[i].count) continue;
            size_t j = site_hash(&as->sites[i]) & (nc - 1);
            while (ns[j].count) j = (j + 1) & (nc - 1);
            ns[j] = as->sites[i];
        }
        free(as->sites);
        as->sites = ns;
        as->capsites = nc;
    }
    FailSite key = { r->prefix, r->name, r->src, r->line, 0, 0, 0, { 0 }, { 0 } };
    size_t j = site_hash(&key) & (as->capsites - 1);
    for (;;) {
        FailSite *s = &as->sites[j];
        if (!s->count) {
            *s = key;
            s->first_seq = r->seq;
            as->nsites++;
            return s;
        }
        if (s->src == r->src && s->line == r->line && s->name == r->name && s->prefix == r->prefix)
            return s;
        j = (j + 1) & (as->capsites - 1);
    }
}

/* a failure nobody read (and nobody can read any more): counted for the report */
static void site_count(AsyncState *as, TaskRec *r)
{
    FailSite *s = site_of(as, r);
    s->count++;
    if (r->seq < s->first_seq) s->first_seq = r->seq;
    /* keep the messages of the earliest calls */
    int at = s->nshown;
    while (at > 0 && s->shown_seq[at - 1] > r->seq) at--;
    if (at < SITE_SHOWN) {
        if (s->nshown == SITE_SHOWN) {
            free(s->shown[SITE_SHOWN - 1]);
            s->nshown--;
        }
        memmove(&s->shown[at + 1], &s->shown[at], (size_t)(s->nshown - at) * sizeof(char *));
        memmove(&s->shown_seq[at + 1], &s->shown_seq[at],
                (size_t)(s->nshown - at) * sizeof(unsigned long));
        const char *e = fut_error(r->fut);
        s->shown[at] = xstrdup(e ? e : "failed");
        s->shown_seq[at] = r->seq;
        s->nshown++;
    }
}

static void rec_report(AsyncState *as, TaskRec *r)
{
    site_count(as, r);
    rec_free(r);
}

/* A finished call whose future object is gone: dropped, reported, or kept
 * while another holder (a copy inside a result, a task) may still read its
 * error. Returns false if it has not finished. */
static bool rec_settle(AsyncState *as, TaskRec *r)
{
    if (!fut_ready(r->fut)) return false;
    if (fut_state(r->fut) != FUT_FAILED || fut_retrieved(r->fut)) {
        rec_free(r);
        return true;
    }
    if (fut_refs(r->fut) == 1) {
        rec_report(as, r);
        return true;
    }
    list_push_rec(&as->failed, r, REC_FAILED);
    return true;
}

/* Settles the orphans that have finished: amortised, each sweep at least
 * doubles the list it walks since the last one. */
static void orphans_sweep(AsyncState *as)
{
    TaskRec *r = as->orphans.head;
    while (r) {
        TaskRec *next = r->next;
        if (fut_ready(r->fut)) {
            list_unlink(&as->orphans, r);
            rec_settle(as, r);
        }
        r = next;
    }
    RecList *f = &as->failed;
    if (f->n > 4096) {
        /* shared failures whose other holders are gone */
        for (TaskRec *x = f->head, *nx; x; x = nx) {
            nx = x->next;
            if (fut_retrieved(x->fut)) {
                list_unlink(f, x);
                rec_free(x);
            } else if (fut_refs(x->fut) == 1) {
                list_unlink(f, x);
                rec_report(as, x);
            }
        }
    }
    as->orphans_kept = as->orphans.n;
}

/* the future object of r is being freed */
static void rec_orphan(TaskRec *r)
{
    AsyncState *as = r->as;
    list_unlink(&as->live, r);
    r->obj = NULL;
    if (rec_settle(as, r)) return;
    list_push_rec(&as->orphans, r, REC_ORPHAN);
    if (as->orphans.n >= 2 * as->orphans_kept + 256) orphans_sweep(as);
}

/* ---------------------------------------------------------------- future objects */

static void future_free(Obj *o)
{
    ObjFuture *f = (ObjFuture *)o;
    if (f->fut) fut_release(f->fut); /* first: the record may then hold the last reference */
    if (f->rec) rec_orphan(f->rec);
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

/* a future object on fut (the reference is taken) */
static Value future_new(Fut *fut, TaskRec *rec, const char *prefix, const char *name,
                        const Source *src, int line)
{
    ObjFuture *f = (ObjFuture *)obj_alloc(sizeof(ObjFuture), T_FUTURE);
    atomic_fetch_add_explicit(&value_lazy_live, 1, memory_order_relaxed);
    f->fut = fut;
    f->rec = rec;
    f->cached = v_nil();
    f->prefix = prefix;
    f->name = name;
    f->src = src;
    f->line = line;
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
    Value n = future_new(fut_retain(f->fut), NULL, f->prefix, f->name, f->src, f->line);
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

static const char *keep_name(const char *s)
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

/* The failed futures a packed task carries (SerCtx.user while packing and
 * unpacking on both sides): a failed future keeps its identity across the
 * round trip (its origin: rank 0's Fut, which a result coming back refers
 * to again), and a read of its error on the other rank counts as a read on
 * rank 0 (a failure nobody read is reported at exit). */
typedef struct FutLink {
    uint64_t origin;
    Fut *fut;
} FutLink;
typedef struct FutLinks {
    FutLink *v;
    size_t n, cap;
} FutLinks;

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

static Fut *links_find(const FutLinks *l, uint64_t origin)
{
    for (size_t i = 0; l && i < l->n; i++)
        if (l->v[i].origin == origin) return l->v[i].fut;
    return NULL;
}

static void links_free(FutLinks *l)
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
    Fut *fut = links_find(sc->user, origin);
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
    return future_new(fut, NULL, keep_name(prefix), keep_name(name), where, (int)line);
}

typedef struct DepList {
    Fut **v;
    int n, cap;
} DepList;

/* main -> task: a future still running becomes a dependency of the task
 * (it starts once the call is over) and a task-side future on the same
 * call; passing it on is not reading it (a call that ignores its argument
 * leaves a failure unread) */
static Value copy_future_out(Value v, CopyCtx *cc)
{
    ObjFuture *f = AS_FUT(v);
    if (f->resolved) return value_copy_deep(f->cached, cc);
    FutState st = fut_state(f->fut);
    if (st == FUT_DONE) return fut_value_copy(f->fut, cc);
    DepList *d = cc->user;
    if (d && (st == FUT_PENDING || st == FUT_RUNNING)) {
        if (d->n == d->cap) {
            d->cap = d->cap ? d->cap * 2 : 4;
            d->v = xrealloc(d->v, (size_t)d->cap * sizeof(Fut *));
        }
        d->v[d->n++] = f->fut;
    }
    Value n = future_new(fut_retain(f->fut), NULL, f->prefix, f->name, f->src, f->line);
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

static void free_box(void *p)
{
    Value *b = p;
    decref(*b);
    free(b);
}

/* ---------------------------------------------------------------- forcing */

/* The main thread needs f: start later calls that are sure to come while
 * it waits (lookahead.h), run it here if still queued, else wait. False if
 * Ctrl-C interrupted the wait. */
static bool main_wait(VM *vm, ObjFuture *f, const Node *site)
{
    Interp *in = vm->in;
    if (in->exec) {
        lookahead_run(vm);
        /* still queued: run it here rather than wait for a worker to start it
         * (only a call of the running REPL entry: Ctrl-C stops what runs
         * here, and an earlier entry's calls are not the statement's to stop) */
        int here = vm->top_src ? vm->top_src->entry : 0, made = f->src ? f->src->entry : 0;
        if (!fut_ready(f->fut) && here == made) exec_run_inline(in->exec, f->fut);
    }
    if (fut_ready(f->fut)) return true;
    double t0 = mono();
    double ts = in->trace ? trace_now_us(in->trace) : 0;
    atomic_store(&in->main_waiting, 1);
    FutState st = fut_wait_interruptible(f->fut, &in->interrupt);
    atomic_store(&in->main_waiting, 0);
    double t1 = mono();
    vm->wait_time += t1 - t0;
    in->async->main_wait_seconds += t1 - t0;
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

static void ctx_free(void *p)
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
    free(c);
}

/* Runs the call on a task VM; the result is copied into a fresh graph and
 * everything else the task made is freed before the future completes.
 * cancel: the task's flag. */
static bool task_execute(TaskCtx *c, const atomic_int *cancel, void *task, Value *result, char *err,
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

static bool ship_task(TaskCtx *c, ExecTask *t, int slot);
static Value qfn_body(VM *vm, ObjFunc *f, Value *params, uint64_t seed, uint64_t index,
                      const Node *site, const void *arg);

static void run_task(void *p, ExecTask *t)
{
    TaskCtx *c = p;
    int slot = exec_task_remote(t);
    if (slot >= 0 && ship_task(c, t, slot)) return; /* else it could not travel: run here */
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

/* ---------------------------------------------------------------- tasks on other ranks */

/* A packed task: its stream (seed, index), names for messages, then the
 * function (by reference, with the module copy holding the globals it takes
 * along) and the arguments. Only plain qfn calls travel (other bodies have
 * arguments of their own). */
static bool pack_task(const TaskCtx *c, SerCtx *sc)
{
    ser_u64(sc, c->seed);
    ser_u64(sc, c->index);
    ser_str(sc, c->prefix, strlen(c->prefix));
    ser_str(sc, c->name, strlen(c->name));
    ser_u32(sc, (uint32_t)c->line);
    if (!ser_value(sc, c->fn)) return false;
    ser_u32(sc, (uint32_t)c->nargs);
    for (int i = 0; i < c->nargs; i++)
        if (!ser_value(sc, c->args[i])) return false;
    return true;
}

static TaskCtx *unpack_task(Interp *in, SerCtx *sc)
{
    uint64_t seed, index;
    uint32_t line, nargs;
    const char *prefix = NULL, *name = NULL;
    Value fn = v_nil();
    bool ok = des_u64(sc, &seed) && des_u64(sc, &index) && (prefix = des_str(sc, NULL)) != NULL &&
              (name = des_str(sc, NULL)) != NULL && des_u32(sc, &line);
    if (ok) {
        fn = des_value(sc);
        ok = !IS_EXC(fn) && fn.t == T_FUNC;
        if (!ok && !IS_EXC(fn)) des_fail(sc, "task function");
        if (IS_EXC(fn)) fn = v_nil();
    }
    ok = ok && des_u32(sc, &nargs) && nargs == (uint32_t)AS_FUNC(fn)->p->nparams;
    TaskCtx *c = xcalloc(1, sizeof *c + ((size_t)(ok ? nargs : 0) + 1) * sizeof(Value));
    c->in = in;
    c->fn = fn;
    c->body = qfn_body;
    if (ok) {
        c->seed = seed;
        c->index = index;
        c->prefix = keep_name(prefix);
        c->name = keep_name(name);
        c->line = (int)line;
        for (uint32_t i = 0; i < nargs && ok; i++) {
            Value v = des_value(sc);
            ok = !IS_EXC(v);
            if (ok) c->args[c->nargs++] = v;
        }
    }
    if (!ok || !des_at_end(sc)) {
        if (!sc->failed) des_fail(sc, "task");
        ctx_free(c);
        return NULL;
    }
    copy_move_modules(&c->mods, &sc->memo); /* released at the task's end, as a local task's */
    return c;
}

static void note_unsent(AsyncState *as, const char *why)
{
    pthread_mutex_lock(&as->unsent_mu);
    if (!as->unsent_why[0]) snprintf(as->unsent_why, sizeof as->unsent_why, "%s", why);
    pthread_mutex_unlock(&as->unsent_mu);
    atomic_fetch_add(&as->unsent, 1);
}

/* An answer (async_run_packed's): the origins of the failed futures the
 * task read, then the result's bytes or the error message. */
static void answer_head(Buf *out, const FutLinks *l)
{
    uint32_t n = 0;
    for (size_t i = 0; i < l->n; i++) n += fut_retrieved(l->v[i].fut);
    buf_put(out, (const char *)&n, sizeof n);
    for (size_t i = 0; i < l->n; i++)
        if (fut_retrieved(l->v[i].fut))
            buf_put(out, (const char *)&l->v[i].origin, sizeof(uint64_t));
}

/* A remote slot's run: the task packed and shipped, its answer unpacked.
 * False if it cannot be packed: the caller runs it here. */
static bool ship_task(TaskCtx *c, ExecTask *t, int slot)
{
    AsyncState *as = c->in->async;
    const AsyncRemote *r = as->remote;
    FutLinks links = { NULL, 0, 0 };
    SerCtx sc;
    ser_init(&sc, r->code);
    sc.user = &links;
    if (!pack_task(c, &sc)) {
        char why[300];
        snprintf(why, sizeof why, "%s%s(): %s", c->prefix, c->name, sc.error);
        note_unsent(as, why);
        ser_free(&sc);
        links_free(&links);
        return false;
    }
    Buf ans;
    buf_init(&ans);
    int rc = r->ship(r->ud, slot, sc.out.p, sc.out.len, exec_task_cancel_flag(t), &ans);
    ser_free(&sc);
    if (rc >= 0) {
        /* the failed inputs the task read: read here too */
        SerCtx rd;
        des_init(&rd, ans.p, ans.len, r->code); /* no functions come back; sources name calls */
        rd.user = &links;
        uint32_t n = 0;
        bool ok = des_u32(&rd, &n);
        for (uint32_t i = 0; ok && i < n; i++) {
            uint64_t o;
            ok = des_u64(&rd, &o);
            Fut *f = ok ? links_find(&links, o) : NULL;
            if (f) fut_mark_retrieved(f);
        }
        /* the answer's values belong to whoever reads the result (as a
         * local task's result copy): made untracked on this slot's thread */
        bool tracked = value_track_pause();
        Value v = ok && rc == 1 ? des_value(&rd) : v_exc();
        value_track_resume(tracked);
        if (ok && rc == 0) {
            exec_task_fail(t, (const char *)rd.in +
                                  rd.pos); /* the message (NUL-terminated by the Buf) */
        } else if (!IS_EXC(v) && des_at_end(&rd)) {
            Value *box = xmalloc(sizeof(Value));
            *box = v;
            exec_task_done(t, box, free_box);
        } else {
            if (!IS_EXC(v)) decref(v);
            char msg[300];
            snprintf(msg, sizeof msg, "%s%s(): the answer from another rank could not be read: %s",
                     c->prefix, c->name, rd.error[0] ? rd.error : "extra bytes");
            exec_task_fail(t, msg);
        }
        ser_free(&rd);
    } else {
        exec_task_fail(t, rc == -2 && ans.p ? ans.p : "cancelled");
    }
    buf_free(&ans);
    links_free(&links);
    return true;
}

void async_set_remote(Interp *in, const AsyncRemote *r) { async_state(in)->remote = r; }

bool async_run_packed(Interp *in, const void *task, size_t len, const atomic_int *cancel,
                      const SerCode *code, Buf *out)
{
    FutLinks links = { NULL, 0, 0 };
    SerCtx sc;
    des_init(&sc, task, len, code);
    sc.user = &links;
    TaskCtx *c = unpack_task(in, &sc);
    if (!c) {
        answer_head(out, &links);
        buf_puts(out, sc.error);
        ser_free(&sc);
        links_free(&links);
        return false;
    }
    ser_free(&sc);
    Value result;
    char err[1200];
    bool ok = task_execute(c, cancel, NULL, &result, err, sizeof err);
    answer_head(out, &links);
    if (!ok) {
        buf_puts(out, err);
        ctx_free(c);
        links_free(&links);
        return false;
    }
    SerCtx w;
    ser_init(&w, NULL);
    w.user = &links;
    ok = ser_value(&w, result);
    decref(result);
    if (ok)
        buf_put(out, w.out.p, w.out.len);
    else {
        /* what a task returns can always be copied; a kind that cannot travel says so */
        char msg[400];
        snprintf(msg, sizeof msg, "%s%s() returned a value that cannot be sent back to rank 0: %s",
                 c->prefix, c->name, w.error);
        buf_puts(out, msg);
    }
    ser_free(&w);
    ctx_free(c);
    links_free(&links);
    return ok;
}

unsigned long async_unsent(Interp *in, const char **why)
{
    AsyncState *as = in->async;
    if (!as) {
        *why = NULL;
        return 0;
    }
    unsigned long n = atomic_load(&as->unsent);
    *why = n ? as->unsent_why : NULL;
    return n;
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
static Value dispatch_inline(VM *vm, ObjFunc *f, Value *params, const Node *site, TaskBody body,
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
static TaskCtx *make_ctx(VM *vm, ObjFunc *f, Value *params, DepList *deps, const char **cerr,
                         int **taken, int *ntaken)
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
    if (taken) {
        /* the globals of f's module the copies took; -1 if they reached
         * anything whose later changes a copy of globals cannot show (a
         * closure's cell, another module) */
        bool opaque = cc.nmods > 1;
        for (size_t i = 0; i < cc.cap && !opaque; i++)
            if (cc.from[i] && ((const Obj *)cc.from[i])->type == T_CELL) opaque = true;
        int *t = xmalloc((size_t)(tm->nglobals + 1) * sizeof *t), k = 0;
        for (int g = 0; g < tm->nglobals; g++)
            if (tm->globals[g].t != T_UNBOUND) t[k++] = g;
        *taken = t;
        *ntaken = opaque ? -1 : k;
    }
    copy_done(&cc);
    copy_move_modules(&c->mods, &cc);
    value_track_resume(tracked);
    return c;
}

/* a record and the main-side future of a call just made */
static Value record_call(VM *vm, Fut *fut, const char *prefix, const char *name, const Node *site)
{
    AsyncState *as = vm->in->async;
    TaskRec *rec = xmalloc(sizeof *rec);
    rec->fut = fut_retain(fut);
    rec->as = as;
    rec->prefix = prefix;
    rec->name = name;
    rec->src = vm_source(vm);
    rec->line = site ? site->line : vm->cur_line;
    rec->seq = as->seq++;
    rec->t0 = mono();
    list_push_rec(&as->live, rec, REC_LIVE);
    Value fv = future_new(fut, rec, prefix, name, rec->src, rec->line);
    rec->obj = AS_FUT(fv);
    rec->obj->serial = rec->seq;
    return fv;
}

/* --sync: the same task, run to completion now on the main thread; its
 * error waits for a use like any other */
static Fut *run_now(Interp *in, TaskCtx *c)
{
    Fut *fut = fut_new();
    fut_set_running(fut);
    Value result;
    char err[1200];
    double t0 = mono();
    double ts = in->trace ? trace_now_us(in->trace) : 0;
    bool ok = task_execute(c, &in->interrupt, NULL, &result, err, sizeof err);
    in->async->sync_task_seconds += mono() - t0;
    in->async->sync_tasks++;
    if (in->trace) {
        char name[160], args[64];
        snprintf(name, sizeof name, "%s%s", c->prefix, c->name);
        snprintf(args, sizeof args, "{\"line\":%d}", c->line);
        trace_complete(in->trace, 0, name, "task", ts, trace_now_us(in->trace) - ts, args);
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

Fut *async_submit(VM *vm, ObjFunc *f, Value *params, const Node *site, TaskBody body,
                  const void *arg, size_t argsize, const char *prefix, uint64_t index, bool early,
                  const char **cerr, int **taken, int *ntaken)
{
    Interp *in = vm->in;
    DepList deps = { NULL, 0, 0 };
    *cerr = NULL;
    TaskCtx *c = make_ctx(vm, f, params, &deps, cerr, taken, ntaken);
    c->seed = vm->stream_seed;
    c->index = index;
    c->body = body;
    c->prefix = prefix;
    c->name = f->p->name;
    c->line = site ? site->line : vm->cur_line;
    if (argsize) {
        c->arg = xmalloc(argsize);
        memcpy(c->arg, arg, argsize);
    }
    if (*cerr) {
        ctx_free(c);
        free(deps.v);
        return NULL;
    }
    Fut *fut;
    if (in->sync || !in->exec) {
        for (int i = 0; i < deps.n; i++) fut_wait(deps.v[i]);
        fut = run_now(in, c);
    } else {
        char label[64];
        task_label(label, prefix, f->p->name, early);
        /* another rank may run a plain qfn call whose device can live there */
        unsigned flags =
            in->async->remote && body == qfn_body && qrt_may_travel(in, f) ? EXEC_REMOTE : 0;
        fut = exec_submit_flags(in->exec, run_task, c, ctx_free, (Fut *const *)deps.v, deps.n,
                                label, c->line, flags);
    }
    free(deps.v);
    return fut;
}

Value async_dispatch(VM *vm, ObjFunc *f, Value *params, const Node *site, TaskBody body,
                     const void *arg, size_t argsize, const char *label_prefix)
{
    const char *prefix = label_prefix ? label_prefix : "";
    if (vm->is_task) return dispatch_inline(vm, f, params, site, body, arg);
    if (vm->la_sandbox) return lookahead_start(vm, f, params, site, body);
    /* the call's random stream: (device seed or program seed, position in program order) */
    uint64_t index = vm->qcall_seq;
    Fut *fut = lookahead_claim(vm, f, params, site, body, index);
    if (fut) {
        /* started early with these very arguments (lookahead.h) */
        vm->qcall_seq++;
        for (int i = 0; i < f->p->nlocals; i++) decref(params[i]);
        return record_call(vm, fut, prefix, f->p->name, site);
    }
    vm->qcall_seq++;
    const char *cerr = NULL;
    fut = async_submit(vm, f, params, site, body, arg, argsize, prefix, index, false, &cerr, NULL,
                       NULL);
    for (int i = 0; i < f->p->nlocals; i++) decref(params[i]);
    if (cerr)
        return vm_error(vm, site, "%s(): cannot pass %s to a quantum function", f->p->name, cerr);
    if (!fut) return vm_interrupted(vm, site);
    return record_call(vm, fut, prefix, f->p->name, site);
}

/* a plain qfn call's body: the quantum runtime runs it */
static Value qfn_body(VM *vm, ObjFunc *f, Value *params, uint64_t seed, uint64_t index,
                      const Node *site, const void *arg)
{
    (void)arg;
    return qrt_run(vm, f, seed, index, params, site);
}

TaskBody async_qfn_body(void) { return qfn_body; }

/* the evaluator's qfn call hook */
static Value qfn_call(VM *vm, ObjFunc *f, Value *params, const Node *site)
{
    return async_dispatch(vm, f, params, site, qfn_body, NULL, 0, NULL);
}

/* ---------------------------------------------------------------- builtins */

/* true if nothing inside v (at any depth of lists and dicts) is pending */
static bool all_ready(Value v, int depth)
{
    if (v.t == T_FUTURE) return AS_FUT(v)->resolved || fut_ready(AS_FUT(v)->fut);
    if (depth > 200) return true;
    if (v.t == T_LIST) {
        ObjList *l = AS_LIST(v);
        for (size_t i = 0; i < l->len; i++)
            if (!all_ready(l->v[i], depth + 1)) return false;
    } else if (v.t == T_DICT) {
        ObjDict *d = AS_DICT(v);
        for (size_t i = 0; i < d->nent; i++)
            if (d->ent[i].live && !all_ready(d->ent[i].val, depth + 1)) return false;
    }
    return true;
}

static Value bi_ready(VM *vm, Args *a)
{
    (void)vm;
    return v_bool(all_ready(a->v[0], 0));
}

static Value bi_wait(VM *vm, Args *a)
{
    Value v = tp_force(vm, a->v[0], a->site);
    if (IS_EXC(v)) return v;
    if (!tp_resolve_in(vm, v, a->site)) {
        decref(v);
        return v_exc();
    }
    if (v.t == T_LIST) {
        /* a list of the values (a new list, as the element values are new to the caller) */
        ObjList *l = AS_LIST(v), *r = list_new(l->len);
        for (size_t i = 0; i < l->len; i++) {
            incref(l->v[i]);
            r->v[r->len++] = l->v[i];
        }
        decref(v);
        return v_list(r);
    }
    return v;
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

/* SIGINT (Ctrl-C) and SIGTERM: the running statement and the tasks in
 * flight are cancelled and qh ends in order (output flushed); SIGTERM also
 * ends a REPL session, with status 143. A second signal of the same kind
 * while the first is handled leaves at once. */
static void on_sigint(int sig)
{
    if (signal_forward(sig)) return; /* it lands where the interpreter runs (bigstack.h) */
    Interp *in = sig_interp;
    int status = 128 + sig;
    if (!in) _exit(status);
    if (sig == SIGTERM) {
        if (atomic_load(&in->terminate)) _exit(status);
        atomic_store(&in->terminate, 1);
    } else if (atomic_load(&in->sigint))
        _exit(status); /* a second Ctrl-C: leave now */
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
    sigaction(SIGTERM, &sa, NULL);
}

void async_start(Interp *in, const char *trace_path)
{
    async_state(in)->run_start = mono();
    if (!in->nworkers) {
        const char *w = getenv("QH_WORKERS");
        long long n; /* the rules of --workers (opts.h); the qh command refuses bad values */
        in->nworkers = w && opt_int(w, 1, 1024, &n) ? (int)n : (int)in->ncpu;
    }
    if (!in->max_memory) in->max_memory = pool_default_budget();
    qrt_start(in);
    if (trace_path) {
        if (!in->trace) in->trace = trace_new(); /* under mpirun it was made when the ranks met */
        in->trace_path = trace_path;
        if (in->sync)
            trace_thread_name(in->trace, 0, "main"); /* else the executor names its threads */
    }
    if (!in->sync) {
        in->exec =
            exec_new(in->nworkers, (size_t)(in->nworkers * 16 > 64 ? in->nworkers * 16 : 64));
        if (in->trace) exec_set_trace(in->exec, in->trace);
        const AsyncRemote *r = in->async->remote;
        if (r && r->nslots > 0)
            exec_add_remote(in->exec, r->nslots, r->usable, r->ud, r->slot_names);
    }
}

void async_cancel_all(Interp *in)
{
    if (in->exec) {
        exec_cancel_all(in->exec);
        exec_wait_all(in->exec);
        exec_clear_interrupt(in->exec);
    }
    lookahead_drop(in);
    atomic_store(&in->interrupt, 0);
    atomic_store(&in->sigint, 0);
}

static int rec_entry(const TaskRec *r) { return r->src ? r->src->entry : 0; }

int async_cancel_entry(Interp *in, int entry)
{
    AsyncState *as = in->async;
    int n = 0;
    lookahead_drop(in);
    if (as && in->exec) {
        RecList *lists[2] = { &as->live, &as->orphans };
        for (int k = 0; k < 2; k++)
            for (TaskRec *r = lists[k]->head; r; r = r->next)
                if (rec_entry(r) == entry && !fut_ready(r->fut) &&
                    exec_cancel_task(in->exec, r->fut))
                    n++;
        exec_clear_interrupt(in->exec);
    }
    atomic_store(&in->interrupt, 0);
    atomic_store(&in->sigint, 0);
    return n;
}

/* not finished, and not being cancelled */
static bool task_pending(const TaskRec *r)
{
    return !fut_ready(r->fut) && !atomic_load(fut_cancel_flag(r->fut));
}

/* the records of calls not finished yet, in program order */
static TaskRec **pending_recs(AsyncState *as, size_t *n)
{
    size_t cap = as->live.n + as->orphans.n + 1, k = 0;
    TaskRec **v = xmalloc(cap * sizeof *v);
    RecList *lists[2] = { &as->live, &as->orphans };
    for (int j = 0; j < 2; j++)
        for (TaskRec *r = lists[j]->head; r; r = r->next)
            if (task_pending(r)) v[k++] = r;
    /* insertion order per list is seq order; merge by a plain sort */
    for (size_t i = 1; i < k; i++) {
        TaskRec *x = v[i];
        size_t j = i;
        while (j > 0 && v[j - 1]->seq > x->seq) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
    *n = k;
    return v;
}

/* the name of a global (or one of its elements) holding a future on fut */
static bool holder_name(const ObjModule *mod, const Fut *fut, char *out, size_t cap)
{
    if (!mod) return false;
    for (int g = 0; g < mod->nglobals; g++) {
        Value v = mod->globals[g];
        const char *name = g < mod->info->nglobals ? mod->info->gnames[g] : NULL;
        if (!name) continue;
        if (v.t == T_FUTURE && AS_FUT(v)->fut == fut) {
            snprintf(out, cap, "%s", name);
            return true;
        }
        if (v.t == T_LIST) {
            ObjList *l = AS_LIST(v);
            for (size_t i = 0; i < l->len; i++)
                if (l->v[i].t == T_FUTURE && AS_FUT(l->v[i])->fut == fut) {
                    snprintf(out, cap, "%s[%zu]", name, i);
                    return true;
                }
        } else if (v.t == T_DICT) {
            ObjDict *d = AS_DICT(v);
            for (size_t i = 0; i < d->nent; i++) {
                if (!d->ent[i].live || d->ent[i].val.t != T_FUTURE ||
                    AS_FUT(d->ent[i].val)->fut != fut)
                    continue;
                Buf b;
                buf_init(&b);
                value_repr(&b, d->ent[i].key, true);
                snprintf(out, cap, "%s[%s]", name, b.p);
                buf_free(&b);
                return true;
            }
        }
    }
    return false;
}

int async_pending(Interp *in)
{
    if (!in->async || !in->exec) return 0;
    size_t n;
    TaskRec **v = pending_recs(in->async, &n);
    free(v);
    return (int)n;
}

void async_print_tasks(Interp *in, const ObjModule *mod, FILE *out)
{
    if (!in->exec) {
        fprintf(out, "no background tasks (--sync)\n");
        return;
    }
    size_t n;
    TaskRec **v = pending_recs(in->async, &n);
    if (!n) {
        fprintf(out, "no pending tasks\n");
        free(v);
        return;
    }
    ExecTaskInfo info[256];
    int ni = exec_pending_tasks(in->exec, info, 256);
    if (ni > 256) ni = 256;
    static const char *const states[] = { "waiting for its inputs", "queued",
                                          "running on a worker" };
    double now = mono();
    size_t shown = 0;
    for (size_t i = 0; i < n && shown < 64; i++, shown++) {
        TaskRec *r = v[i];
        const ExecTaskInfo *ti = NULL;
        for (int k = 0; k < ni; k++)
            if (info[k].fut == r->fut) ti = &info[k];
        char where[300], holder[160];
        diag_where(where, sizeof where, r->src, r->line);
        fprintf(out, "  %s%s() from %s: %s (%.1f s)", r->prefix, r->name, where,
                ti ? states[ti->state] : "finishing", now - r->t0);
        if (holder_name(mod, r->fut, holder, sizeof holder)) fprintf(out, "; held by %s", holder);
        fputc('\n', out);
    }
    if (n > shown) fprintf(out, "  ... and %zu more\n", n - shown);
    free(v);
}

unsigned long async_dispatches(Interp *in) { return in->async ? in->async->seq : 0; }

bool async_pending_text(Value v, unsigned long since, Buf *out)
{
    if (v.t != T_FUTURE) return false;
    ObjFuture *f = AS_FUT(v);
    if (f->resolved || !f->fut || fut_ready(f->fut) || f->serial >= since) return false;
    future_repr(out, v, false);
    return true;
}

int async_future_state(Value v)
{
    if (v.t != T_FUTURE) return -1;
    ObjFuture *f = AS_FUT(v);
    return f->resolved || !f->fut ? FUT_DONE : (int)fut_state(f->fut);
}

bool async_future_text(Value v, Buf *out)
{
    if (v.t != T_FUTURE) return false;
    future_repr(out, v, false);
    return true;
}

void async_interrupt(Interp *in)
{
    atomic_store(&in->sigint, 1);
    atomic_store(&in->interrupt, 1);
    if (in->exec) exec_interrupt(in->exec);
}

void async_describe_pending(Interp *in, FILE *out)
{
    size_t n;
    TaskRec **v = pending_recs(in->async, &n);
    fprintf(out, "waiting for %zu background task%s (", n, n == 1 ? "" : "s");
    for (size_t i = 0; i < n && i < 3; i++) {
        TaskRec *r = v[i];
        char where[300];
        diag_where(where, sizeof where, r->src, r->line);
        fprintf(out, "%s%s%s() from %s", i ? ", " : "", r->prefix, r->name, where);
    }
    if (n > 3) fprintf(out, ", ...");
    fprintf(out, "); Ctrl-C abandons them\n");
    fflush(out);
    free(v);
}

static int cmp_site(const void *x, const void *y)
{
    const FailSite *a = *(FailSite *const *)x, *b = *(FailSite *const *)y;
    return a->first_seq < b->first_seq ? -1 : a->first_seq > b->first_seq;
}

/* The report at exit: each failure nobody read, oldest first, the first
 * few of each call site in full and the rest counted. */
static int report_failures(AsyncState *as, bool quiet, FILE *err)
{
    /* everything is finished now: settle what is left */
    RecList *lists[2] = { &as->live, &as->orphans };
    for (int k = 0; k < 2; k++) {
        for (TaskRec *r = lists[k]->head, *nx; r; r = nx) {
            nx = r->next;
            /* a failure still held (in a variable, say) and never read */
            if (fut_state(r->fut) == FUT_FAILED && !fut_retrieved(r->fut)) site_count(as, r);
        }
    }
    for (TaskRec *r = as->failed.head, *nx; r; r = nx) {
        nx = r->next;
        list_unlink(&as->failed, r);
        if (fut_retrieved(r->fut))
            rec_free(r);
        else
            rec_report(as, r);
    }
    int total = 0;
    FailSite **order = xmalloc((as->nsites + 1) * sizeof *order);
    size_t k = 0;
    for (size_t i = 0; i < as->capsites; i++)
        if (as->sites[i].count) order[k++] = &as->sites[i];
    qsort(order, k, sizeof *order, cmp_site);
    for (size_t i = 0; i < k; i++) {
        FailSite *s = order[i];
        const char *file = s->src ? s->src->name : "?";
        for (int j = 0; j < s->nshown && !quiet; j++)
            fprintf(err, "%s:%d: warning: %s%s() failed and its result was never used: %s\n", file,
                    s->line, s->prefix, s->name, s->shown[j]);
        if (s->count > (unsigned long)s->nshown && !quiet)
            fprintf(err,
                    "%s:%d: warning: %lu more calls of %s%s() from this line failed and their "
                    "results were never used\n",
                    file, s->line, s->count - (unsigned long)s->nshown, s->prefix, s->name);
        total += (int)(s->count > 100000000 ? 100000000 : s->count);
        for (int j = 0; j < s->nshown; j++) free(s->shown[j]);
    }
    free(order);
    free(as->sites);
    as->sites = NULL;
    as->nsites = as->capsites = 0;
    return total;
}

int async_finish(Interp *in, VM *main_vm, bool cancel)
{
    (void)main_vm;
    lookahead_drop(in);
    if (in->exec) {
        if (cancel || atomic_load(&in->sigint)) exec_cancel_all(in->exec);
        if (!exec_wait_all_interruptible(in->exec, &in->interrupt)) {
            exec_cancel_all(in->exec);
            exec_wait_all(in->exec);
        }
    }
    AsyncState *as = in->async;
    bool quiet = cancel || atomic_load(&in->sigint);
    int unobserved = report_failures(as, quiet, in->err);
    if (quiet) unobserved = 0;
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
        fprintf(in->err,
                "qh stats: %lu tasks, %.3f s in tasks, main thread waited %.3f s, wall %.3f s, "
                "overlap %.3f s (%.0f%% of task time ran alongside the main thread)\n",
                ntasks, task_s, as->main_wait_seconds, wall, overlap,
                task_s > 0 ? 100.0 * overlap / task_s : 0.0);
        qrt_stats(in, in->err);
        lookahead_stats(in, in->err);
    }
    lookahead_free(in);
    RecList *lists[3] = { &as->live, &as->orphans, &as->failed };
    for (int k = 0; k < 3; k++) {
        while (lists[k]->head) {
            TaskRec *r = lists[k]->head;
            list_unlink(lists[k], r);
            if (r->obj) r->obj->rec = NULL; /* the future outlives the registry */
            rec_free(r);
        }
    }
    if (in->exec) {
        exec_free(in->exec);
        in->exec = NULL;
    }
    if (as->remote && as->remote->finish)
        as->remote->finish(as->remote->ud, in); /* the other ranks' part */
    if (in->trace) {
        /* a serving rank hands its events to rank 0 instead of writing them */
        if (in->trace_path && trace_write(in->trace, in->trace_path) != 0)
            fprintf(in->err, "qh: cannot write trace file '%s'\n", in->trace_path);
        trace_free(in->trace);
        in->trace = NULL;
    }
    qrt_finish(in);
    pthread_mutex_destroy(&as->unsent_mu);
    free(as);
    in->async = NULL;
    return unobserved;
}

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

void async_open(void)
{
    type_register(T_FUTURE, &future_ops);
    builtins_add(builtins_async);
}

void async_attach(Interp *in)
{
    in->hooks.qfn_call = qfn_call;
    lookahead_attach(in);
}

/* ---- for lookahead.c: futures it starts and hands back ---- */

Fut *async_future_fut(Value v)
{
    return v.t == T_FUTURE && !AS_FUT(v)->resolved ? AS_FUT(v)->fut : NULL;
}
Fut *async_fut_of(Value v) { return v.t == T_FUTURE ? AS_FUT(v)->fut : NULL; }

Value async_future_value(Fut *fut, const char *name, const Source *src, int line)
{
    return future_new(fut_retain(fut), NULL, "", name, src, line);
}
