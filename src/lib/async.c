/* async.c — quantum calls as futures (lang/async.md): the dispatch policy
 * of a call (inside a task: at once; in the lookahead's sandbox: early; a
 * call started early taken over; else a new task), the record of every call
 * the program made (failures nobody read are reported at exit, grouped by
 * call site), ready/wait/sync, starting and finishing the executor, the pool
 * and the trace, Ctrl-C, :tasks and --stats. Knows the evaluator, the
 * executor's interface, the tasks and futures (task.h), the lookahead's entry
 * (lookahead.h) and the shipping of tasks to other ranks (ship.h). */
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
#include "ship.h"
#include "stop.h"
#include "task.h"
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
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
    TaskOwner owner; /* first: the future object tells it when it is freed */
    Fut *fut;
    Value obj; /* the main-side future while it exists (borrowed), else nil */
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
    double run_start;
} AsyncState;


/* the interpreter's AsyncState, made on first need */
static AsyncState *async_state(Interp *in)
{
    if (!in->async) in->async = xcalloc(1, sizeof *in->async);
    return in->async;
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
static void rec_orphan(TaskOwner *o)
{
    TaskRec *r = (TaskRec *)o;
    AsyncState *as = r->as;
    list_unlink(&as->live, r);
    r->obj = v_nil();
    if (rec_settle(as, r)) return;
    list_push_rec(&as->orphans, r, REC_ORPHAN);
    if (as->orphans.n >= 2 * as->orphans_kept + 256) orphans_sweep(as);
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
    rec->t0 = task_now();
    list_push_rec(&as->live, rec, REC_LIVE);
    rec->owner.orphan = rec_orphan;
    rec->obj = task_future_new(fut, &rec->owner, prefix, name, rec->src, rec->line, rec->seq);
    return rec->obj;
}


Value async_dispatch(VM *vm, const TaskSpec *call)
{
    ObjFunc *f = call->f;
    Value *params = call->params;
    const Node *site = call->site;
    const char *prefix = call->prefix ? call->prefix : "";
    if (vm->is_task) return task_run_nested(vm, f, params, site, call->body, call->arg);
    if (vm->la_sandbox) return lookahead_start(vm, f, params, site, call->body);
    /* the call's random stream: (device seed or program seed, position in program order) */
    TaskSpec s = *call;
    s.prefix = prefix;
    s.index = vm->qcall_seq++;
    s.early = false;
    const char *cerr = NULL;
    TaskCtx *c = task_prepare(vm, &s, &cerr);
    for (int i = 0; i < f->p->nlocals; i++) decref(params[i]);
    Fut *fut = c ? lookahead_claim(vm, &s, c) : NULL;
    if (fut) { /* started early, a task of this very input (lookahead.h) */
        task_ctx_free(c);
    } else if (c && vm->in->exec && eval_forced_at_once(site) && task_short(vm->in, f->p)) {
        /* its value is needed at once and this code's calls are short: run
         * it here, now; handing it to a worker and waiting for it to come
         * back would cost more than the call (and so would starting later
         * calls early, lookahead.c). A longer call goes to the executor:
         * while the main thread waits for it the lookahead may start the
         * calls that come next, and if no worker has started it by then,
         * the main thread runs it (task.c's main_wait). */
        fut = task_launch_here(vm, c);
    } else if (c) {
        fut = task_launch(vm, c);
    }
    if (cerr)
        return vm_error(vm, site, "%s(): cannot pass %s to a quantum function", f->p->name, cerr);
    if (!fut) return vm_interrupted(vm, site);
    return record_call(vm, fut, prefix, f->p->name, site);
}

/* the evaluator's qfn call hook */
static Value qfn_call(VM *vm, ObjFunc *f, Value *params, const Node *site)
{
    return async_dispatch(
        vm, &(TaskSpec){ .f = f, .params = params, .site = site, .body = task_qfn_body() });
}

/* ---------------------------------------------------------------- builtins */

/* true if nothing inside v (at any depth of lists and dicts) is pending */
static bool all_ready(Value v, int depth)
{
    if (v.t == T_FUTURE) return task_future_ready(v);
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
    double t0 = task_now();
    atomic_store(&in->main_waiting, 1);
    bool ok = exec_wait_all_interruptible(in->exec, &in->interrupt);
    atomic_store(&in->main_waiting, 0);
    vm->wait_time += task_now() - t0;
    task_state(in)->main_wait_seconds += task_now() - t0;
    if (!ok) return vm_interrupted(vm, a->site);
    return v_nil();
}

static const BuiltinDef builtins_async[] = {
    { "ready", bi_ready, 1, 1, BI_LAZY, NULL, 0 },
    { "wait", bi_wait, 1, 1, BI_LAZY | BI_FORCES, NULL, 0 },
    { "sync", bi_sync, 0, 0, 0, NULL, 0 },
    { NULL, NULL, 0, 0, 0, NULL, 0 },
};

/* ---------------------------------------------------------------- start and finish */

/* The signal handler's interpreter: a handler gets no context, so this one
 * pointer is file-scope (set once before the handler is installed). */
static Interp *sig_interp;
/* The REPL's prompt flags (async_signal_prompt): at the prompt a Ctrl-C
 * only clears the line; while an entry runs it interrupts that entry. */
static volatile sig_atomic_t *sig_at_prompt, *sig_prompt_hit;
/* How long the orderly end after a first signal may take before the
 * watchdog leaves (a builtin without a safe point still running). */
#define SIG_GRACE_S 5
#define SIG_STR_(x) #x
#define SIG_STR(x)  SIG_STR_(x)
/* The first of SIGINT/SIGTERM/SIGHUP of a script's run (0: none yet). */
static atomic_int sig_first;
/* A repeated signal wakes the watchdog through this pipe (-1: no watchdog). */
static int sig_pipe[2] = { -1, -1 };
static pthread_once_t sig_once = PTHREAD_ONCE_INIT;

/* SIGINT (Ctrl-C), SIGTERM and SIGHUP: the running statement (a builtin at
 * its next safe point, stop.h) and the tasks in flight are cancelled and qh
 * ends in order, output flushed, with status 128 + the signal; SIGTERM and
 * SIGHUP also end a REPL session. Every such signal also wakes the
 * watchdog: the orderly end gets SIG_GRACE_S (a builtin with no safe point,
 * one long LAPACK call, would hold it up for as long as it runs), or a
 * second from a second signal (timeout -s TERM sends two), then qh leaves
 * with what was printed flushed. */
static void on_signal(int sig)
{
    if (signal_forward(sig)) return; /* it lands where the interpreter runs (bigstack.h) */
    Interp *in = sig_interp;
    if (!in) _exit(128 + sig);
    if (sig == SIGINT && sig_at_prompt) { /* the REPL: every Ctrl-C counts */
        if (*sig_at_prompt)
            *sig_prompt_hit = 1;
        else
            async_interrupt(in);
        return;
    }
    int none = 0;
    bool first = atomic_compare_exchange_strong(&sig_first, &none, sig);
    if (first) {
        if (sig != SIGINT) atomic_store(&in->terminate, sig);
        async_interrupt(in);
    }
    if (sig_pipe[1] >= 0) {
        char c = (char)sig;
        ssize_t w = write(sig_pipe[1], &c, 1); /* async-signal-safe */
        (void)w;
    }
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* Why: a second signal must not lose printed output. The watchdog is an
 * ordinary thread (not a handler): it may take stdio's locks, so it flushes
 * the output whole lines at a time (the lock is held by whoever is mid-write),
 * then leaves. */
static void *sig_watchdog(void *arg)
{
    Interp *in = arg;
    char c;
    ssize_t r;
    do r = read(sig_pipe[0], &c, 1);
    while (r < 0 && errno == EINTR);
    if (r != 1) return NULL;
    /* the first signal: the orderly end, usually done at once, gets
     * SIG_GRACE_S; a second signal meanwhile cuts that to a second */
    struct pollfd pf = { sig_pipe[0], POLLIN, 0 };
    double end = task_now() + SIG_GRACE_S;
    bool second = false;
    for (;;) {
        double left = end - task_now();
        if (left <= 0) break;
        int pr = poll(&pf, 1, (int)(left * 1000) + 1);
        if (pr > 0) {
            second = true;
            sleep_ms(1000);
            break;
        }
        if (pr < 0 && errno != EINTR) break;
    }
    FILE *outs[2] = { in->out ? in->out : stdout, in->err ? in->err : stderr };
    int locked[2] = { 0, 0 };
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < 100 && !(locked[k] = ftrylockfile(outs[k]) == 0); i++) sleep_ms(10);
        if (locked[k]) fflush(outs[k]); /* kept locked: nothing more is written */
    }
    /* Say why the end was not the orderly one (the user waited for it); only
     * on a stream we hold, so the line lands between whole lines. */
    if (locked[1]) {
        const char *why = second ? "qh: a second signal: leaving without waiting for the "
                                   "interrupted operation (what was printed is kept)\n"
                                 : "qh: the interrupted operation has no safe point and did not "
                                   "stop within " SIG_STR(SIG_GRACE_S) " s: leaving (what was "
                                                                       "printed is kept)\n";
        ssize_t w = write(fileno(outs[1]), why, strlen(why));
        (void)w;
    }
    int first = atomic_load(&sig_first);
    _exit(128 + (first ? first : SIGTERM));
}

static void start_watchdog(void)
{
    Interp *in = sig_interp;
    if (!in || pipe(sig_pipe) != 0) return;
    fcntl(sig_pipe[0], F_SETFD, FD_CLOEXEC);
    fcntl(sig_pipe[1], F_SETFD, FD_CLOEXEC);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread takes no signals */
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 64 * 1024);
    pthread_t t;
    if (pthread_create(&t, &at, sig_watchdog, in) != 0) {
        close(sig_pipe[0]);
        close(sig_pipe[1]);
        sig_pipe[0] = sig_pipe[1] = -1;
    }
    pthread_attr_destroy(&at);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void async_install_sigint(Interp *in)
{
    sig_interp = in;
    qh_stop_watch(&in->interrupt); /* the lower rooms' safe points see it */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

void async_signal_prompt(Interp *in, volatile sig_atomic_t *at_prompt,
                         volatile sig_atomic_t *prompt_hit)
{
    if (sig_interp != in) async_install_sigint(in);
    sig_prompt_hit = prompt_hit;
    sig_at_prompt = at_prompt;
}

void async_start(Interp *in, const char *trace_path)
{
    async_state(in)->run_start = task_now();
    task_state(in); /* before any worker: they read in->tasks */
    if (!in->nworkers) {
        const char *w = getenv("QH_WORKERS");
        long long n; /* the rules of --workers (opts.h); the qh command refuses bad values */
        in->nworkers = w && opt_int(w, 1, 1024, &n) ? (int)n : (int)in->ncpu;
    }
    if (!in->max_memory) in->max_memory = pool_default_budget();
    if (sig_interp == in) pthread_once(&sig_once, start_watchdog); /* threads start here */
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
        const ShipRemote *r = ship_remote(in);
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
        if (v.t == T_FUTURE && task_fut_of(v) == fut) {
            snprintf(out, cap, "%s", name);
            return true;
        }
        if (v.t == T_LIST) {
            ObjList *l = AS_LIST(v);
            for (size_t i = 0; i < l->len; i++)
                if (l->v[i].t == T_FUTURE && task_fut_of(l->v[i]) == fut) {
                    snprintf(out, cap, "%s[%zu]", name, i);
                    return true;
                }
        } else if (v.t == T_DICT) {
            ObjDict *d = AS_DICT(v);
            for (size_t i = 0; i < d->nent; i++) {
                if (!d->ent[i].live || d->ent[i].val.t != T_FUTURE ||
                    task_fut_of(d->ent[i].val) != fut)
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
    double now = task_now();
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
    return task_future_pending_text(v, since, out);
}

int async_future_state(Value v) { return task_future_state(v); }

bool async_future_text(Value v, Buf *out) { return task_future_text(v, out); }

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
    TaskState *ts = task_state(in);
    bool quiet = cancel || atomic_load(&in->sigint);
    int unobserved = report_failures(as, quiet, in->err);
    if (quiet) unobserved = 0;
    if (in->stats) {
        double wall = task_now() - as->run_start;
        unsigned long ntasks, nhere;
        double task_s, here_s; /* here: run by the main thread itself */
        if (in->exec) {
            ExecStats st;
            exec_stats(in->exec, &st);
            ntasks = st.run;
            task_s = st.task_seconds;
            nhere = st.run_here;
            here_s = st.here_seconds;
        } else {
            ntasks = nhere = ts->sync_tasks;
            task_s = here_s = ts->sync_task_seconds;
        }
        double busy_main = wall - ts->main_wait_seconds - here_s;
        double overlap = (task_s - here_s) + busy_main - wall;
        if (overlap < 0) overlap = 0;
        fprintf(in->err,
                "qh stats: %lu tasks, %.3f s in tasks, main thread waited %.3f s, wall %.3f s, "
                "overlap %.3f s (%.0f%% of task time ran alongside the main thread)\n",
                ntasks, task_s, ts->main_wait_seconds, wall, overlap,
                task_s > 0 ? 100.0 * overlap / task_s : 0.0);
        if (in->exec && nhere)
            fprintf(in->err,
                    "qh stats: %lu of the tasks ran on the main thread, which needed them before "
                    "a worker had started them (%.3f s)\n",
                    nhere, here_s);
        qrt_stats(in, in->err);
        lookahead_stats(in, in->err);
    }
    lookahead_free(in);
    RecList *lists[3] = { &as->live, &as->orphans, &as->failed };
    for (int k = 0; k < 3; k++) {
        while (lists[k]->head) {
            TaskRec *r = lists[k]->head;
            list_unlink(lists[k], r);
            if (r->obj.t == T_FUTURE) task_future_disown(r->obj); /* it outlives the registry */
            rec_free(r);
        }
    }
    if (in->exec) {
        exec_free(in->exec);
        in->exec = NULL;
    }
    const ShipRemote *remote = ship_remote(in);
    if (remote && remote->finish) remote->finish(remote->ud, in); /* the other ranks' part */
    if (in->trace) {
        /* a serving rank hands its events to rank 0 instead of writing them */
        if (in->trace_path && trace_write(in->trace, in->trace_path) != 0) {
            fprintf(in->err, "qh: cannot write trace file '%s': %s\n", in->trace_path,
                    strerror(errno));
            in->out_lost = true; /* exit status 1 */
        }
        trace_free(in->trace);
        in->trace = NULL;
    }
    qrt_finish(in);
    free(as);
    in->async = NULL;
    ship_free(in);
    task_state_free(in);
    return unobserved;
}

void async_open(void)
{
    task_open();
    builtins_add(builtins_async);
}

void async_attach(Interp *in)
{
    in->hooks.qfn_call = qfn_call;
    lookahead_attach(in);
}
