/* executor.c — the fixed worker pool, its run queue and task lifecycle (exec.h).
 *
 * A task lives in one of four states, all under the executor's mutex:
 *   PARKED  waiting for dependencies; it hangs one waiter node on each
 *           unfinished dependency (exec_internal.h) and holds no thread;
 *   QUEUED  runnable, in a min-heap ordered by submission number;
 *   RUNNING on a worker;
 *   DOOMED  cancelled before it ran, waiting only for dependency callbacks
 *           already under way before it can be dropped.
 * npending counts the dependency callbacks still to come plus one guard
 * held by exec_submit while it hangs the nodes; whoever brings it to zero
 * moves the task on (to the queue, or to its end if DOOMED).
 *
 * Locks: the executor mutex may be held while taking a future's mutex
 * (fut_remove_waiter), never the reverse: futures run their waiter
 * callbacks after dropping their own lock, and this file never finishes a
 * future while holding the executor mutex.
 *
 * Ending a task, in this order: take it off the list of unfinished tasks
 * (so exec_cancel_all no longer sees it), free its context and release its
 * dependencies, finish its future, drop the executor's reference, then
 * count it finished. So once exec_wait_all returns the executor holds no
 * references and every context is freed.
 *
 * Must not know: what a task computes, the language, quantum devices. */
#include "exec_internal.h"
#include "qh_assert.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { T_PARKED, T_QUEUED, T_RUNNING, T_DOOMED } TState;

/* read only by qh_assert (unused when NDEBUG leaves the check out) */
static inline __attribute__((unused)) bool open_fut_state(FutState s)
{
    return s == FUT_PENDING || s == FUT_RUNNING;
}

typedef struct DepWaiter {
    FutWaiter w; /* first: the callback gets &w */
    ExecTask *t;
} DepWaiter;

struct ExecTask {
    Exec *e;
    Fut *fut; /* the executor's reference */
    ExecRunFn run;
    void *ctx;
    void (*free_ctx)(void *);
    Fut **deps;         /* references, non-NULL entries only */
    DepWaiter *waiters; /* one per dep */
    int ndeps;
    int npending; /* under e->mu */
    TState state; /* under e->mu */
    unsigned long seq;
    unsigned flags; /* EXEC_REMOTE: a remote slot may take it */
    int remote;     /* the remote slot running it, or -1 */
    char label[64]; /* a copy, truncated (no allocation per task) */
    int line;
    int worker;
    double t_submit;
    double t_start; /* when its run function was called */
    /* Outcome, written by the run function on the worker thread. */
    int outcome; /* 0 none, 1 done, 2 failed */
    void *result;
    void (*free_result)(void *);
    char *error;
    ExecTask *prev, *next; /* all unfinished tasks, submission order */
    ExecTask *link;        /* scratch list (doomed tasks) */
};

typedef struct Worker {
    Exec *e;
    int idx;
    int slot; /* a remote slot's number, or -1 for a worker */
    pthread_t th;
} Worker;

/* A min-heap of runnable tasks on their submission numbers. */
typedef struct Heap {
    ExecTask **v;
    size_t n, cap;
} Heap;

struct Exec {
    pthread_mutex_t mu;
    pthread_cond_t work;   /* workers: a task is queued, or shutdown */
    pthread_cond_t space;  /* submitters: below the bound */
    pthread_cond_t idle;   /* wait_all: nothing unfinished */
    Heap heap;             /* runnable tasks only workers take */
    Heap rheap;            /* runnable EXEC_REMOTE tasks: workers and remote slots take them */
    atomic_int nready;     /* both heaps' sizes, for idle workers spinning without the lock */
    ExecTask *head, *tail; /* all unfinished tasks */
    int unfinished;
    size_t bound;
    unsigned long seq;
    unsigned long cancel_gen; /* bumped by exec_cancel_all */
    int closing;              /* exec_free started: refuse submissions */
    int shutdown;             /* workers leave when the heap is empty */
    atomic_int interrupt;
    atomic_int busy;
    _Atomic(Trace *) trace;
    int nworkers;
    Worker *workers;
    pthread_cond_t rwork; /* remote slots: an EXEC_REMOTE task is queued, or shutdown */
    int nremote;          /* remote slot threads made */
    Worker *remotes;
    bool (*remote_usable)(void *ud, int slot);
    void *remote_ud;
    double t0;
    ExecStats st; /* under mu; wall/nworkers filled on read */
};

static _Thread_local int tl_worker = -1;

/* Why: a label is copied on every submission: no snprintf, no malloc. */
static void copy_label(char dst[64], const char *src)
{
    size_t n = strlen(src);
    if (n > 63) n = 63;
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* ------------------------------------------------------------ run queue */

static void count_ready(Exec *e)
{
    atomic_store_explicit(&e->nready, (int)(e->heap.n + e->rheap.n), memory_order_relaxed);
}

/* Why: runnable tasks go in submission order even when a dependent
 * becomes runnable after later work was queued: the oldest work first
 * keeps the main thread's next wait short. */
static void heap_push(Exec *e, Heap *h, ExecTask *t)
{
    qh_assert(t->state == T_QUEUED); /* only runnable tasks are in a heap */
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 64;
        ExecTask **v = realloc(h->v, cap * sizeof *v);
        if (!v) abort();
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h->v[p]->seq <= t->seq) break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = t;
    qh_assert(i == 0 || h->v[(i - 1) / 2]->seq <= t->seq); /* the heap order holds */
    count_ready(e);
}

/* Why: a task the main thread is about to wait for leaves the queue to
 * run on the main thread itself (exec_run_inline). Moves the last entry
 * into the hole and sifts it whichever way it must go. */
static void heap_remove_at(Exec *e, Heap *h, size_t i)
{
    qh_assert(i < h->n);
    ExecTask *last = h->v[--h->n];
    size_t n = h->n;
    if (i < n) {
        while (i > 0 && h->v[(i - 1) / 2]->seq > last->seq) {
            h->v[i] = h->v[(i - 1) / 2];
            i = (i - 1) / 2;
        }
        for (;;) {
            size_t c = 2 * i + 1;
            if (c >= n) break;
            if (c + 1 < n && h->v[c + 1]->seq < h->v[c]->seq) c++;
            if (last->seq <= h->v[c]->seq) break;
            h->v[i] = h->v[c];
            i = c;
        }
        h->v[i] = last;
        qh_assert(i == 0 || h->v[(i - 1) / 2]->seq <= last->seq);
    }
    count_ready(e);
}

static ExecTask *heap_pop(Exec *e, Heap *h)
{
    qh_assert(h->n > 0);
    ExecTask *top = h->v[0];
    qh_assert(top->state == T_QUEUED);
    heap_remove_at(e, h, 0);
    return top;
}

/* Why: a worker takes the oldest runnable task of either heap. */
static ExecTask *pop_oldest(Exec *e)
{
    qh_assert(e->heap.n + e->rheap.n > 0);
    Heap *h = &e->heap;
    if (!h->n || (e->rheap.n && e->rheap.v[0]->seq < h->v[0]->seq)) h = &e->rheap;
    return heap_pop(e, h);
}

/* Why: a runnable task goes where the threads that may run it look, and
 * wakes one of them. */
static void make_runnable(Exec *e, ExecTask *t)
{
    if (t->flags & EXEC_REMOTE) {
        heap_push(e, &e->rheap, t);
        pthread_cond_signal(&e->rwork);
    } else {
        heap_push(e, &e->heap, t);
    }
    pthread_cond_signal(&e->work);
}

/* Why: exec_run_inline and exec_cancel_task take one queued task out. */
static bool heap_take(Exec *e, ExecTask *t)
{
    Heap *hs[2] = { &e->heap, &e->rheap };
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < hs[k]->n; i++)
            if (hs[k]->v[i] == t) {
                heap_remove_at(e, hs[k], i);
                return true;
            }
    return false;
}

/* --------------------------------------------------------- task ending */

/* Why: the single place a task leaves the executor, run or not. Called
 * without e->mu; see the order in the file comment. The task leaves the
 * list of unfinished tasks first, so that exec_cancel_all never touches
 * a task whose future reference is being dropped. */
static void task_end(ExecTask *t, bool ran, double dur)
{
    Exec *e = t->e;
    /* run: it ran on a thread; not run: cancelled before (doomed) or as it started */
    qh_assert(t->state == T_RUNNING || (!ran && t->state == T_DOOMED));
    pthread_mutex_lock(&e->mu);
    qh_assert(t->prev ? t->prev->next == t : e->head == t); /* on the unfinished list */
    qh_assert(t->next ? t->next->prev == t : e->tail == t);
    if (t->prev)
        t->prev->next = t->next;
    else
        e->head = t->next;
    if (t->next)
        t->next->prev = t->prev;
    else
        e->tail = t->prev;
    pthread_mutex_unlock(&e->mu);

    if (t->free_ctx && t->ctx) t->free_ctx(t->ctx);
    t->ctx = NULL;
    for (int i = 0; i < t->ndeps; i++) fut_release(t->deps[i]);
    if (!ran) {
        fut_cancel(t->fut);
    } else if (t->outcome == 1) {
        fut_complete(t->fut, t->result, t->free_result);
    } else if (atomic_load_explicit(fut_cancel_flag(t->fut), memory_order_relaxed)) {
        fut_cancel(t->fut);
    } else {
        fut_fail(t->fut, t->error ? t->error : "task produced no result");
    }
    free(t->error);
    t->result = NULL;
    t->error = NULL;
    FutState fs = fut_state(t->fut);
    fut_release(t->fut);

    pthread_mutex_lock(&e->mu);
    if (ran) {
        e->st.run++;
        e->st.task_seconds += dur;
        if (dur > e->st.max_task_seconds) e->st.max_task_seconds = dur;
        if (t->worker < 0) { /* on the thread that needed it, not a worker's */
            e->st.run_here++;
            e->st.here_seconds += dur;
        }
    }
    if (fs == FUT_DONE)
        e->st.done++;
    else if (fs == FUT_FAILED)
        e->st.failed++;
    else if (fs == FUT_CANCELLED)
        e->st.cancelled++;
    qh_assert(e->unfinished > 0 && !open_fut_state(fs)); /* its future is final now */
    e->unfinished--;
    if ((size_t)e->unfinished < e->bound) pthread_cond_signal(&e->space);
    if (e->unfinished == 0) pthread_cond_broadcast(&e->idle);
    pthread_mutex_unlock(&e->mu);

    free(t->deps);
    free(t->waiters);
    free(t);
}

static _Thread_local ExecTask *tl_doomed;
static _Thread_local int tl_draining;

/* Why: ending a cancelled task cancels its future, whose callbacks may end
 * further cancelled tasks; a per-thread work list turns that cascade into
 * a loop instead of a recursion as deep as the longest chain. */
static void doom(ExecTask *t)
{
    t->link = tl_doomed;
    tl_doomed = t;
    if (tl_draining) return;
    tl_draining = 1;
    while ((t = tl_doomed)) {
        tl_doomed = t->link;
        task_end(t, false, 0);
    }
    tl_draining = 0;
}

/* Why: a cancelled parked task must not stay hung on futures that may
 * never finish (or outlive the executor). Each node unhooked is a callback
 * that will not come. Under e->mu. */
static void unhook_locked(ExecTask *t)
{
    qh_assert(t->state == T_DOOMED);
    for (int i = 0; i < t->ndeps; i++)
        if (fut_remove_waiter(t->deps[i], &t->waiters[i].w)) t->npending--;
}

/* Why: one dependency (or the submit guard) is settled; the last one moves
 * the task on. Called without e->mu. */
static void dep_settled(ExecTask *t)
{
    Exec *e = t->e;
    pthread_mutex_lock(&e->mu);
    qh_assert(t->npending > 0); /* a callback or the submit guard still to come */
    qh_assert(t->state == T_PARKED || t->state == T_DOOMED);
    if (--t->npending > 0) {
        pthread_mutex_unlock(&e->mu);
        return;
    }
    if (t->state == T_PARKED) {
        t->state = T_QUEUED;
        make_runnable(e, t);
        pthread_mutex_unlock(&e->mu);
        return;
    }
    pthread_mutex_unlock(&e->mu); /* T_DOOMED */
    doom(t);
}

/* Why: the future-side hook; runs on the thread that finished the dep. */
static void dep_callback(FutWaiter *w) { dep_settled(((DepWaiter *)w)->t); }

/* --------------------------------------------------------------- workers */

/* Why: one task on a worker: start its future, run it with the busy count
 * up, record it in the trace, end it. A task cancelled between queueing
 * and now is ended without running. */
static void run_one(Exec *e, ExecTask *t, int idx)
{
    qh_assert(t->state == T_RUNNING && t->npending == 0);
    if (atomic_load_explicit(fut_cancel_flag(t->fut), memory_order_relaxed) ||
        !fut_set_running(t->fut)) {
        task_end(t, false, 0);
        return;
    }
    /* a remote slot waits for another process: it keeps no core busy */
    bool local = t->remote < 0;
    if (local) atomic_fetch_add_explicit(&e->busy, 1, memory_order_relaxed);
    double start = t->t_start = exec_clock();
    t->run(t->ctx, t);
    double end = exec_clock();
    if (local) atomic_fetch_sub_explicit(&e->busy, 1, memory_order_relaxed);

    Trace *tr = atomic_load_explicit(&e->trace, memory_order_acquire);
    if (tr) {
        const char *what = t->outcome == 1 ? "done"
                           : atomic_load_explicit(fut_cancel_flag(t->fut), memory_order_relaxed)
                               ? "cancelled"
                               : "failed";
        char args[160];
        snprintf(args, sizeof args,
                 "{\"line\":%d,\"seq\":%lu,\"outcome\":\"%s\",\"queued_ms\":%.3f}", t->line, t->seq,
                 what, (start - t->t_submit) * 1e3);
        double ts = trace_mono_to_us(tr, start);
        int tid = idx + 1;                           /* remote slots: after the workers' tracks */
        trace_flow_end(tr, tid, t->seq, ts + 0.001); /* inside the slice */
        trace_complete(tr, tid, t->label, t->remote >= 0 ? "remote" : "task", ts,
                       (end - start) * 1e6, args);
    }
    task_end(t, true, end - start);
}

/* Why: the worker loop; sleeps on the condvar only when nothing is
 * runnable (it never waits on a task's dependencies). */
static void *worker_main(void *arg)
{
    Worker *w = arg;
    Exec *e = w->e;
    tl_worker = w->idx;
    char name[32];
    snprintf(name, sizeof name, "qh-worker-%d", w->idx + 1);
    name[15] = 0; /* the kernel's limit */
    pthread_setname_np(pthread_self(), name);
    pthread_mutex_lock(&e->mu);
    for (;;) {
        if (e->heap.n + e->rheap.n == 0 && !e->shutdown) {
            /* Spin a little before sleeping: a burst of small tasks then
             * costs neither side a futex call. */
            pthread_mutex_unlock(&e->mu);
            for (int i = 0;
                 i < EXEC_SPIN && !atomic_load_explicit(&e->nready, memory_order_relaxed); i++)
                exec_cpu_relax();
            pthread_mutex_lock(&e->mu);
        }
        while (e->heap.n + e->rheap.n == 0 && !e->shutdown) pthread_cond_wait(&e->work, &e->mu);
        if (e->heap.n + e->rheap.n == 0) break;
        ExecTask *t = pop_oldest(e);
        t->state = T_RUNNING;
        t->worker = w->idx;
        pthread_mutex_unlock(&e->mu);
        run_one(e, t, w->idx);
        pthread_mutex_lock(&e->mu);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* Why: a remote slot's loop: like a worker's, on EXEC_REMOTE tasks only;
 * it leaves for good when its slot is no longer usable (its process died),
 * putting back a task it took, so that nothing more is sent there. */
static void *remote_main(void *arg)
{
    Worker *w = arg;
    Exec *e = w->e;
    tl_worker = w->idx;
    char name[32];
    snprintf(name, sizeof name, "qh-remote-%d", w->slot + 1);
    name[15] = 0;
    pthread_setname_np(pthread_self(), name);
    pthread_mutex_lock(&e->mu);
    for (;;) {
        while (e->rheap.n == 0 && !e->shutdown) pthread_cond_wait(&e->rwork, &e->mu);
        if (e->rheap.n == 0) break;
        ExecTask *t = heap_pop(e, &e->rheap);
        pthread_mutex_unlock(&e->mu);
        bool usable = !e->remote_usable || e->remote_usable(e->remote_ud, w->slot);
        pthread_mutex_lock(&e->mu);
        if (!usable) {
            make_runnable(e, t);
            break;
        }
        t->state = T_RUNNING;
        t->worker = w->idx;
        t->remote = w->slot;
        pthread_mutex_unlock(&e->mu);
        run_one(e, t, w->idx);
        pthread_mutex_lock(&e->mu);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* ------------------------------------------------------------------- API */

/* Why: a caller that needs f's value now and finds its task still queued
 * runs it itself: no hand-over to a worker and back (the cost of a
 * dispatch that is resolved at once). Only from a non-worker thread. */
bool exec_run_inline(Exec *e, Fut *f)
{
    if (tl_worker >= 0) return false;
    pthread_mutex_lock(&e->mu);
    ExecTask *t = NULL;
    Heap *hs[2] = { &e->heap, &e->rheap };
    for (int k = 0; k < 2 && !t; k++) {
        for (size_t i = 0; i < hs[k]->n; i++) {
            if (hs[k]->v[i]->fut == f) {
                t = hs[k]->v[i];
                heap_remove_at(e, hs[k], i);
                break;
            }
        }
    }
    if (t) {
        t->state = T_RUNNING;
        t->worker = -1;
    }
    pthread_mutex_unlock(&e->mu);
    if (!t) return false;
    run_one(e, t, -1);
    return true;
}


/* Why: the threads are made once; tasks never create threads. */
Exec *exec_new(int nworkers, size_t queue_bound)
{
    if (nworkers < 1) nworkers = 1;
    if (queue_bound < 1) queue_bound = 1;
    Exec *e = calloc(1, sizeof *e);
    Worker *ws = calloc((size_t)nworkers, sizeof *ws);
    if (!e || !ws) {
        free(e);
        free(ws);
        return NULL;
    }
    pthread_mutex_init(&e->mu, NULL);
    exec_cond_init(&e->work);
    exec_cond_init(&e->rwork);
    exec_cond_init(&e->space);
    exec_cond_init(&e->idle);
    atomic_init(&e->interrupt, 0);
    atomic_init(&e->busy, 0);
    atomic_init(&e->nready, 0);
    atomic_init(&e->trace, NULL);
    e->bound = queue_bound;
    e->workers = ws;
    e->t0 = exec_clock();

    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, EXEC_STACK_SIZE);
    int made = 0;
    for (; made < nworkers; made++) {
        ws[made].e = e;
        ws[made].idx = made;
        ws[made].slot = -1;
        if (pthread_create(&ws[made].th, &attr, worker_main, &ws[made]) != 0) break;
    }
    pthread_attr_destroy(&attr);
    e->nworkers = made;
    if (made < nworkers) {
        exec_free(e);
        return NULL;
    }
    return e;
}

/* Why: see exec.h; closing first so that running tasks cannot add work
 * that the cancellation would miss. */
void exec_free(Exec *e)
{
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    e->closing = 1;
    pthread_mutex_unlock(&e->mu);
    exec_cancel_all(e);
    pthread_mutex_lock(&e->mu);
    while (e->unfinished > 0) pthread_cond_wait(&e->idle, &e->mu);
    e->shutdown = 1;
    pthread_cond_broadcast(&e->work);
    pthread_cond_broadcast(&e->rwork);
    pthread_mutex_unlock(&e->mu);
    for (int i = 0; i < e->nworkers; i++) pthread_join(e->workers[i].th, NULL);
    for (int i = 0; i < e->nremote; i++) pthread_join(e->remotes[i].th, NULL);
    free(e->heap.v);
    free(e->rheap.v);
    free(e->workers);
    free(e->remotes);
    pthread_cond_destroy(&e->work);
    pthread_cond_destroy(&e->rwork);
    pthread_cond_destroy(&e->space);
    pthread_cond_destroy(&e->idle);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

/* A submit from outside the workers when the executor holds its bound of
 * unfinished tasks: wait (under e->mu) until there is room; false if the
 * submit is refused instead (closing, cancelled, interrupted). */
static bool wait_room_locked(Exec *e)
{
    unsigned long gen = e->cancel_gen;
    double t_block = exec_clock();
    while ((size_t)e->unfinished >= e->bound && !e->closing && gen == e->cancel_gen &&
           !atomic_load_explicit(&e->interrupt, memory_order_relaxed)) {
        struct timespec dl;
        exec_deadline(&dl, 0.010);
        pthread_cond_timedwait(&e->space, &e->mu, &dl);
    }
    bool refused = (size_t)e->unfinished >= e->bound || e->closing || gen != e->cancel_gen ||
                   atomic_load_explicit(&e->interrupt, memory_order_relaxed);
    e->st.blocked_submits++;
    e->st.blocked_seconds += exec_clock() - t_block;
    if (!refused && (size_t)e->unfinished + 1 < e->bound)
        pthread_cond_signal(&e->space); /* pass on a wakeup we may have eaten */
    return !refused;
}

/* The submit slice of task t on track tid, from t_enter (exec_clock) to now. */
static void trace_submit(Trace *tr, const ExecTask *t, int tid, double t_enter)
{
    double now = trace_now_us(tr);
    double ts = trace_mono_to_us(tr, t_enter);
    char args[96];
    snprintf(args, sizeof args, "{\"line\":%d,\"seq\":%lu,\"deps\":%d}", t->line, t->seq, t->ndeps);
    /* The arrow leaves from inside the submit slice (viewers bind a
     * flow to the slice that encloses it). */
    trace_complete(tr, tid, "submit", "exec", ts, now - ts + 0.002, args);
    trace_flow_start(tr, tid, t->seq, now + 0.001);
}

/* Why: the one way work enters the executor; see exec.h for the contract.
 * Allocation happens before the lock, the dependency nodes are hung after
 * it, and a guard in npending keeps the task parked until all are hung. */
Fut *exec_submit(Exec *e, const ExecJob *job)
{
    void *ctx = job->ctx;
    void (*free_ctx)(void *) = job->free_ctx;
    Fut *const *deps = job->deps;
    int ndeps = job->ndeps;
    qh_assert(job->run && ndeps >= 0 && (ndeps == 0 || deps));
    double t_enter = exec_clock();
    int nd = 0;
    for (int i = 0; i < ndeps; i++) nd += deps[i] != NULL;
    ExecTask *t = calloc(1, sizeof *t);
    if (!t) abort();
    t->e = e;
    t->run = job->run;
    t->ctx = ctx;
    t->free_ctx = free_ctx;
    t->line = job->line;
    t->worker = -1;
    t->remote = -1;
    t->flags = job->flags;
    copy_label(t->label, job->label ? job->label : "task");
    if (nd) {
        t->deps = malloc((size_t)nd * sizeof *t->deps);
        t->waiters = calloc((size_t)nd, sizeof *t->waiters);
    }
    if (nd && (!t->deps || !t->waiters)) abort();
    for (int i = 0, k = 0; i < ndeps; i++) {
        if (!deps[i]) continue;
        t->deps[k] = fut_retain(deps[i]);
        t->waiters[k].w.cb = dep_callback;
        t->waiters[k].t = t;
        k++;
    }
    t->ndeps = nd;

    bool on_worker = tl_worker >= 0;
    bool here = (job->flags & EXEC_HERE) && !on_worker && nd == 0; /* runs in this call */
    pthread_mutex_lock(&e->mu);
    bool refused = e->closing;
    if (!refused && !on_worker && !here && (size_t)e->unfinished >= e->bound)
        refused = !wait_room_locked(e);
    if (refused) {
        pthread_mutex_unlock(&e->mu);
        for (int i = 0; i < nd; i++) fut_release(t->deps[i]);
        free(t->deps);
        free(t->waiters);
        free(t);
        if (free_ctx && ctx) free_ctx(ctx);
        return NULL;
    }
    qh_assert(!e->closing && (on_worker || here || (size_t)e->unfinished < e->bound));
    t->fut = fut_new();
    Fut *ret = fut_retain(t->fut);
    t->seq = ++e->seq;
    t->state = here ? T_RUNNING : T_PARKED;
    t->npending = here ? 0 : nd + 1;
    t->t_submit = t_enter; /* a clock read saved: the trace's submit slice starts there too */
    t->prev = e->tail;
    if (e->tail)
        e->tail->next = t;
    else
        e->head = t;
    e->tail = t;
    e->unfinished++;
    e->st.submitted++;
    if (e->unfinished > e->st.peak_unfinished) e->st.peak_unfinished = e->unfinished;
    pthread_mutex_unlock(&e->mu);

    for (int i = 0; i < nd; i++)
        if (!fut_add_waiter(t->deps[i], &t->waiters[i].w))
            dep_settled(t); /* never the last: the guard is still held */

    Trace *tr = atomic_load_explicit(&e->trace, memory_order_acquire);
    if (tr) trace_submit(tr, t, on_worker ? tl_worker + 1 : 0, t_enter);
    if (here) { /* never queued: no guard, no dependency, nobody else can take it */
        run_one(e, t, -1);
        qh_assert(fut_ready(ret));
        return ret;
    }

    /* Drop the guard. If exec_cancel_all doomed the task while the nodes
     * were being hung, unhook the ones it could not see yet. */
    pthread_mutex_lock(&e->mu);
    if (t->state == T_DOOMED) unhook_locked(t);
    pthread_mutex_unlock(&e->mu);
    dep_settled(t);
    return ret;
}

/* Why: the run function reports its result here rather than completing
 * the future itself, so the future finishes only once the task is over. */
void exec_task_done(ExecTask *t, void *result, void (*free_result)(void *))
{
    if (t->outcome) {
        if (result && free_result) free_result(result);
        return;
    }
    t->outcome = 1;
    t->result = result;
    t->free_result = free_result;
}

/* Why: errors inside tasks come back as ordinary runtime errors; the
 * message is copied because the task's own buffers die with it. */
void exec_task_fail(ExecTask *t, const char *msg)
{
    if (t->outcome) return;
    t->outcome = 2;
    t->error = strdup(msg ? msg : "failed");
    if (!t->error) abort();
}

/* Why: cooperative cancellation: the task's cancel flag is its future's,
 * so exec_cancel_all and a user's fut_cancel reach it the same way. */
bool exec_task_cancelled(const ExecTask *t)
{
    return atomic_load_explicit(fut_cancel_flag(t->fut), memory_order_relaxed) != 0;
}

const atomic_int *exec_task_cancel_flag(const ExecTask *t) { return fut_cancel_flag(t->fut); }

/* Why: what a runner needs about its own task (worker slot for per-worker
 * scratch, deps to read, call site for messages). */
int exec_task_worker(const ExecTask *t) { return t->worker; }
int exec_task_remote(const ExecTask *t) { return t->remote; }
int exec_task_ndeps(const ExecTask *t) { return t->ndeps; }
Fut *exec_task_dep(const ExecTask *t, int i) { return i >= 0 && i < t->ndeps ? t->deps[i] : NULL; }
Fut *exec_task_fut(const ExecTask *t) { return t->fut; }
const char *exec_task_label(const ExecTask *t) { return t->label; }
int exec_task_line(const ExecTask *t) { return t->line; }
double exec_task_started(const ExecTask *t) { return t->t_start; }
Exec *exec_task_exec(const ExecTask *t) { return t->e; }

/* Why: Ctrl-C, an error that ends the program, or exec_free: nothing that
 * has not started may start, and running tasks are asked to stop. */
void exec_cancel_all(Exec *e)
{
    ExecTask *ending = NULL;
    pthread_mutex_lock(&e->mu);
    e->cancel_gen++;
    for (ExecTask *t = e->head; t; t = t->next) {
        fut_request_cancel(t->fut);
        if (t->state == T_PARKED) {
            t->state = T_DOOMED;
            unhook_locked(t);
            if (t->npending == 0) {
                t->link = ending;
                ending = t;
            }
        }
    }
    while (e->heap.n + e->rheap.n) {
        ExecTask *t = pop_oldest(e);
        t->state = T_DOOMED;
        t->link = ending;
        ending = t;
    }
    pthread_cond_broadcast(&e->space);
    pthread_mutex_unlock(&e->mu);
    while (ending) {
        ExecTask *next = ending->link;
        doom(ending);
        ending = next;
    }
}

/* Why: the REPL's Ctrl-C ends only the tasks of the statement it
 * interrupts; earlier statements' tasks go on. */
bool exec_cancel_task(Exec *e, Fut *f)
{
    ExecTask *ending = NULL;
    bool found = false;
    pthread_mutex_lock(&e->mu);
    for (ExecTask *t = e->head; t; t = t->next) {
        if (t->fut != f) continue;
        found = true;
        fut_request_cancel(t->fut);
        if (t->state == T_PARKED) {
            t->state = T_DOOMED;
            unhook_locked(t);
            if (t->npending == 0) ending = t;
        } else if (t->state == T_QUEUED) {
            heap_take(e, t);
            t->state = T_DOOMED;
            ending = t;
        }
        break;
    }
    pthread_mutex_unlock(&e->mu);
    if (ending) {
        ending->link = NULL;
        doom(ending);
    }
    return found;
}

/* Why: async-signal-safe by construction: one lock-free atomic store. */
void exec_interrupt(Exec *e) { atomic_store_explicit(&e->interrupt, 1, memory_order_relaxed); }

/* Why: after handling Ctrl-C (the REPL goes on), waits work again. */
void exec_clear_interrupt(Exec *e)
{
    atomic_store_explicit(&e->interrupt, 0, memory_order_relaxed);
}

/* Why: the flag to hand to fut_wait_interruptible and friends. */
const atomic_int *exec_interrupt_flag(Exec *e) { return &e->interrupt; }

/* Why: sync(), program exit, and tests. */
void exec_wait_all(Exec *e)
{
    pthread_mutex_lock(&e->mu);
    while (e->unfinished > 0) pthread_cond_wait(&e->idle, &e->mu);
    pthread_mutex_unlock(&e->mu);
}

/* Why: sync() from a main thread that Ctrl-C must be able to reach. */
bool exec_wait_all_interruptible(Exec *e, const atomic_int *interrupt)
{
    if (!interrupt) {
        exec_wait_all(e);
        return true;
    }
    pthread_mutex_lock(&e->mu);
    while (e->unfinished > 0 && !atomic_load_explicit(interrupt, memory_order_relaxed)) {
        struct timespec dl;
        exec_deadline(&dl, 0.010);
        pthread_cond_timedwait(&e->idle, &e->mu, &dl);
    }
    bool all = e->unfinished == 0;
    pthread_mutex_unlock(&e->mu);
    return all;
}

/* Why: code shared by the main thread and tasks must know where it runs
 * (worker submissions bypass the bound; tasks must not wait for tasks). */
bool exec_on_worker(void) { return tl_worker >= 0; }
int exec_current_worker(void) { return tl_worker; }
int exec_nworkers(const Exec *e) { return e->nworkers; }

/* Why: tasks that may run on other processes (MPI ranks) are taken by a
 * thread per slot there that only waits for the answer. Made once, after
 * the workers; tids and indices follow the workers'. */
int exec_add_remote(Exec *e, int nslots, bool (*usable)(void *ud, int slot), void *ud,
                    const char *const *names)
{
    pthread_mutex_lock(&e->mu);
    bool made_before = e->remotes != NULL;
    pthread_mutex_unlock(&e->mu);
    if (made_before || nslots < 1) return made_before ? -1 : 0;
    Worker *rs = calloc((size_t)nslots, sizeof *rs);
    if (!rs) return -1;
    e->remote_usable = usable;
    e->remote_ud = ud;
    e->remotes = rs;
    Trace *tr = atomic_load_explicit(&e->trace, memory_order_acquire);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, EXEC_STACK_SIZE);
    int made = 0;
    for (; made < nslots; made++) {
        rs[made].e = e;
        rs[made].idx = e->nworkers + made;
        rs[made].slot = made;
        if (tr)
            trace_thread_name(tr, e->nworkers + made + 1,
                              names && names[made] ? names[made] : "remote");
        if (pthread_create(&rs[made].th, &attr, remote_main, &rs[made]) != 0) break;
    }
    pthread_attr_destroy(&attr);
    pthread_mutex_lock(&e->mu);
    e->nremote = made;
    pthread_mutex_unlock(&e->mu);
    return made;
}

/* Why: BLAS/kernel thread budgeting: N workers mean N busy cores. */
int exec_busy_workers(const Exec *e)
{
    return atomic_load_explicit(&((Exec *)e)->busy, memory_order_relaxed);
}

/* Why: the REPL and tests look at how much work is in flight. */
int exec_unfinished(Exec *e)
{
    pthread_mutex_lock(&e->mu);
    int n = e->unfinished;
    pthread_mutex_unlock(&e->mu);
    return n;
}

/* Why: --trace; names the tracks so Perfetto shows "main" and workers. */
void exec_set_trace(Exec *e, Trace *tr)
{
    if (tr) {
        trace_thread_name(tr, 0, "main");
        for (int i = 0; i < e->nworkers; i++) {
            char name[32];
            snprintf(name, sizeof name, "worker %d", i + 1);
            trace_thread_name(tr, i + 1, name);
        }
    }
    atomic_store_explicit(&e->trace, tr, memory_order_release);
}

/* Why: --stats. */
void exec_stats(Exec *e, ExecStats *out)
{
    pthread_mutex_lock(&e->mu);
    *out = e->st;
    pthread_mutex_unlock(&e->mu);
    out->wall_seconds = exec_clock() - e->t0;
    out->nworkers = e->nworkers;
}

/* Why: the REPL's :tasks lists what is still in flight. */
int exec_pending_tasks(Exec *e, ExecTaskInfo *out, int max)
{
    double now = exec_clock();
    int n = 0;
    pthread_mutex_lock(&e->mu);
    for (ExecTask *t = e->head; t; t = t->next, n++) {
        if (n >= max) continue;
        ExecTaskInfo *o = &out[n];
        o->fut = t->fut;
        copy_label(o->label, t->label);
        o->line = t->line;
        o->state = t->state == T_RUNNING  ? EXEC_RUNNING
                   : t->state == T_QUEUED ? EXEC_QUEUED
                                          : EXEC_PARKED;
        o->worker = t->state == T_RUNNING ? t->worker : -1;
        o->age_seconds = now - t->t_submit;
    }
    pthread_mutex_unlock(&e->mu);
    return n;
}
