/* future.c — thread-safe, reference-counted result cells (exec.h).
 *
 * A Fut goes PENDING -> RUNNING -> DONE | FAILED, or to CANCELLED from
 * either of the first two. The state is an atomic so fut_ready/fut_state
 * never lock; everything else is under the future's own mutex, and waiters
 * sleep on its condvar. The executor parks tasks on futures through
 * intrusive waiter nodes (exec_internal.h), called after the lock is
 * dropped so that a callback may take other locks freely.
 *
 * Must not know: the executor's queue, the language's values (a result is a
 * void * with a destructor). */
#include "exec_internal.h"
#include "qh_assert.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct Fut {
    atomic_int refs;
    atomic_int state;     /* FutState; written under mu */
    atomic_int cancel;    /* raised by fut_cancel / the executor */
    atomic_int retrieved; /* someone has read the outcome (fut_mark_retrieved) */
    _Atomic(void *) user;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int nwaiting; /* threads asleep on cv */
    void *result;
    void (*free_result)(void *);
    char *error;
    FutWaiter *waiters; /* hung task nodes, doubly linked */
};

static const char cancelled_msg[] = "cancelled";

/* Why: timed waits must not jump when the wall clock is set. */
double exec_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Why: pthread_cond_timedwait takes an absolute time on the condvar's clock. */
void exec_deadline(struct timespec *abs, double seconds)
{
    clock_gettime(CLOCK_MONOTONIC, abs);
    if (seconds < 0) seconds = 0;
    time_t whole = (time_t)seconds;
    long nsec = abs->tv_nsec + (long)((seconds - (double)whole) * 1e9);
    abs->tv_sec += whole + nsec / 1000000000L;
    abs->tv_nsec = nsec % 1000000000L;
}

/* Why: every condvar of the room times out on CLOCK_MONOTONIC. */
int exec_cond_init(pthread_cond_t *c)
{
    pthread_condattr_t a;
    int rc = pthread_condattr_init(&a);
    if (rc) return rc;
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    rc = pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
    return rc;
}

/* Why: the one constructor; the caller gets the only reference. Aborts on
 * out-of-memory like the rest of qh's small allocations. */
Fut *fut_new(void)
{
    Fut *f = calloc(1, sizeof *f);
    if (!f) abort();
    atomic_init(&f->refs, 1);
    atomic_init(&f->state, FUT_PENDING);
    atomic_init(&f->cancel, 0);
    atomic_init(&f->retrieved, 0);
    atomic_init(&f->user, NULL);
    pthread_mutex_init(&f->mu, NULL);
    exec_cond_init(&f->cv);
    return f;
}

/* Why: futures are shared by the main thread, the executor and dependent
 * tasks; each holder keeps its own reference. */
Fut *fut_retain(Fut *f)
{
    if (!f) return f;
    int old = atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
    qh_assert(old > 0); /* a holder retains; a freed future has no holder */
    return f;
}

/* Why: the last holder frees, including a result nobody took. acq_rel so
 * the freeing thread sees every other holder's writes. */
void fut_release(Fut *f)
{
    if (!f) return;
    int old = atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel);
    qh_assert(old > 0);
    if (old != 1) return;
    qh_assert(f->nwaiting == 0); /* a thread asleep on it holds a reference */
    if (f->result && f->free_result) f->free_result(f->result);
    free(f->error);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

/* Why: true while the producer may still write (PENDING or RUNNING). */
static bool open_state(int st) { return st == FUT_PENDING || st == FUT_RUNNING; }

/* Why: common tail of complete/fail/cancel. Called with f->mu held and the
 * state not yet final: publishes the final state, wakes sleepers and
 * detaches the waiter list, which the caller runs after unlocking. */
static FutWaiter *finish_locked(Fut *f, FutState st)
{
    qh_assert(open_state(atomic_load_explicit(&f->state, memory_order_relaxed)));
    qh_assert(st == FUT_DONE || st == FUT_FAILED || st == FUT_CANCELLED);
    qh_assert(st != FUT_FAILED || f->error); /* a failure has its message */
    atomic_store_explicit(&f->state, st, memory_order_release);
    if (f->nwaiting) pthread_cond_broadcast(&f->cv);
    FutWaiter *list = f->waiters;
    f->waiters = NULL;
    for (FutWaiter *w = list; w; w = w->next) w->on = NULL;
    return list;
}

/* Why: callbacks run outside the lock (they take the executor's lock).
 * Each node's memory is only guaranteed until its own callback runs, so
 * read next first. */
static void run_waiters(FutWaiter *w)
{
    while (w) {
        FutWaiter *next = w->next;
        qh_assert(w->on == NULL); /* detached by finish_locked */
        w->cb(w);
        w = next;
    }
}

/* Why: the producer's success path; first outcome wins so that a late
 * result after a cancellation is dropped instead of leaked. */
bool fut_complete(Fut *f, void *result, void (*free_result)(void *))
{
    pthread_mutex_lock(&f->mu);
    if (!open_state(atomic_load_explicit(&f->state, memory_order_relaxed))) {
        pthread_mutex_unlock(&f->mu);
        if (result && free_result) free_result(result);
        return false;
    }
    f->result = result;
    f->free_result = free_result;
    FutWaiter *w = finish_locked(f, FUT_DONE);
    pthread_mutex_unlock(&f->mu);
    run_waiters(w);
    return true;
}

/* Why: the producer's error path; the message outlives the producer. */
bool fut_fail(Fut *f, const char *msg)
{
    char *copy = strdup(msg ? msg : "failed");
    if (!copy) abort();
    pthread_mutex_lock(&f->mu);
    if (!open_state(atomic_load_explicit(&f->state, memory_order_relaxed))) {
        pthread_mutex_unlock(&f->mu);
        free(copy);
        return false;
    }
    f->error = copy;
    FutWaiter *w = finish_locked(f, FUT_FAILED);
    pthread_mutex_unlock(&f->mu);
    run_waiters(w);
    return true;
}

/* Why: nobody wants the value any more: finish it now (waiters go on)
 * and tell a running producer, through the flag, to stop. */
bool fut_cancel(Fut *f)
{
    atomic_store_explicit(&f->cancel, 1, memory_order_relaxed);
    pthread_mutex_lock(&f->mu);
    if (!open_state(atomic_load_explicit(&f->state, memory_order_relaxed))) {
        pthread_mutex_unlock(&f->mu);
        return false;
    }
    FutWaiter *w = finish_locked(f, FUT_CANCELLED);
    pthread_mutex_unlock(&f->mu);
    run_waiters(w);
    return true;
}

/* Why: the executor marks the start of a task, and learns if someone
 * cancelled the future meanwhile (then the task is not run). */
bool fut_set_running(Fut *f)
{
    int expect = FUT_PENDING;
    pthread_mutex_lock(&f->mu);
    bool ok = atomic_compare_exchange_strong(&f->state, &expect, FUT_RUNNING);
    pthread_mutex_unlock(&f->mu);
    qh_assert(ok || expect != FUT_RUNNING); /* a task starts once */
    return ok;
}

/* Why: ready() and the state shown to users must never block. */
FutState fut_state(const Fut *f)
{
    return (FutState)atomic_load_explicit(&f->state, memory_order_acquire);
}

/* Why: the language's ready(x) must never wait. */
bool fut_ready(const Fut *f)
{
    return !open_state(atomic_load_explicit(&f->state, memory_order_acquire));
}

/* Why: the main thread's "I need this value now" path; no polling. */
FutState fut_wait(Fut *f)
{
    int st = atomic_load_explicit(&f->state, memory_order_acquire);
    for (int i = 0; open_state(st) && i < EXEC_SPIN; i++) {
        exec_cpu_relax();
        st = atomic_load_explicit(&f->state, memory_order_acquire);
    }
    if (!open_state(st)) return (FutState)st;
    pthread_mutex_lock(&f->mu);
    f->nwaiting++;
    while (open_state(st = atomic_load_explicit(&f->state, memory_order_relaxed)))
        pthread_cond_wait(&f->cv, &f->mu);
    f->nwaiting--;
    pthread_mutex_unlock(&f->mu);
    qh_assert(!open_state(st));
    return (FutState)st;
}

/* Why: Ctrl-C must reach a main thread that is waiting. A signal handler
 * cannot signal a condvar, so the wait wakes every 10 ms to look at the
 * flag; completion itself still wakes it at once. */
FutState fut_wait_interruptible(Fut *f, const atomic_int *interrupt)
{
    if (!interrupt) return fut_wait(f);
    int st = atomic_load_explicit(&f->state, memory_order_acquire);
    if (!open_state(st)) return (FutState)st;
    pthread_mutex_lock(&f->mu);
    f->nwaiting++;
    while (open_state(st = atomic_load_explicit(&f->state, memory_order_relaxed)) &&
           !atomic_load_explicit(interrupt, memory_order_relaxed)) {
        struct timespec dl;
        exec_deadline(&dl, 0.010);
        pthread_cond_timedwait(&f->cv, &f->mu, &dl);
    }
    f->nwaiting--;
    pthread_mutex_unlock(&f->mu);
    return (FutState)st;
}

/* Why: tests and watchdogs need a bounded wait. */
FutState fut_wait_timeout(Fut *f, double seconds)
{
    struct timespec dl;
    exec_deadline(&dl, seconds);
    int st;
    pthread_mutex_lock(&f->mu);
    f->nwaiting++;
    while (open_state(st = atomic_load_explicit(&f->state, memory_order_relaxed))) {
        if (pthread_cond_timedwait(&f->cv, &f->mu, &dl) == ETIMEDOUT) {
            st = atomic_load_explicit(&f->state, memory_order_relaxed);
            break;
        }
    }
    f->nwaiting--;
    pthread_mutex_unlock(&f->mu);
    return (FutState)st;
}

/* Why: borrow the result for reading (printing, copying). */
void *fut_result(Fut *f)
{
    pthread_mutex_lock(&f->mu);
    void *r = atomic_load_explicit(&f->state, memory_order_relaxed) == FUT_DONE ? f->result : NULL;
    pthread_mutex_unlock(&f->mu);
    return r;
}

/* Why: moving the result out avoids a copy when the future has a single
 * consumer; exactly one caller gets it. */
void *fut_take_result(Fut *f)
{
    pthread_mutex_lock(&f->mu);
    void *r = NULL;
    if (atomic_load_explicit(&f->state, memory_order_relaxed) == FUT_DONE) {
        r = f->result;
        f->result = NULL;
    }
    pthread_mutex_unlock(&f->mu);
    return r;
}

/* Why: the error is immutable once the state is final, so the pointer can
 * be handed out for the future's lifetime. */
const char *fut_error(Fut *f)
{
    int st = atomic_load_explicit(&f->state, memory_order_acquire);
    if (st == FUT_CANCELLED) return cancelled_msg;
    if (st != FUT_FAILED) return NULL;
    pthread_mutex_lock(&f->mu);
    const char *e = f->error;
    pthread_mutex_unlock(&f->mu);
    qh_assert(e);
    return e;
}

/* Why: producers poll a plain atomic in hot loops (once per gate). */
const atomic_int *fut_cancel_flag(const Fut *f) { return &f->cancel; }

/* Why: the executor raises the flag of running tasks without finishing
 * their futures (they end when the task returns). */
void fut_request_cancel(Fut *f) { atomic_store_explicit(&f->cancel, 1, memory_order_relaxed); }

/* Why: an owner holding the only reference knows nobody else can ever
 * read the outcome (racy unless the caller holds a reference itself). */
int fut_refs(const Fut *f) { return atomic_load_explicit(&((Fut *)f)->refs, memory_order_acquire); }

/* Why: an error nobody read is reported at exit (like asyncio's "Future
 * exception was never retrieved"); every holder of a reference may read it,
 * on any thread. */
void fut_mark_retrieved(Fut *f) { atomic_store_explicit(&f->retrieved, 1, memory_order_relaxed); }

bool fut_retrieved(const Fut *f)
{
    return atomic_load_explicit(&((Fut *)f)->retrieved, memory_order_relaxed) != 0;
}

/* Why: the interpreter keeps call-site info with the future without this
 * room knowing its type. */
void fut_set_user(Fut *f, void *p) { atomic_store_explicit(&f->user, p, memory_order_release); }

void *fut_user(const Fut *f)
{
    return atomic_load_explicit(&((Fut *)f)->user, memory_order_acquire);
}

/* Why: see exec_internal.h — park a task without a sleeping thread. */
bool fut_add_waiter(Fut *f, FutWaiter *w)
{
    pthread_mutex_lock(&f->mu);
    if (!open_state(atomic_load_explicit(&f->state, memory_order_relaxed))) {
        pthread_mutex_unlock(&f->mu);
        return false;
    }
    qh_assert(w->on == NULL); /* a node hangs on one future at a time */
    w->prev = NULL;
    w->next = f->waiters;
    if (f->waiters) f->waiters->prev = w;
    f->waiters = w;
    w->on = f;
    pthread_mutex_unlock(&f->mu);
    return true;
}

/* Why: cancelling a parked task must unhook it from futures that may
 * outlive the executor (a user's fut_new that is never completed). */
bool fut_remove_waiter(Fut *f, FutWaiter *w)
{
    pthread_mutex_lock(&f->mu);
    bool hung = w->on == f;
    if (hung) {
        qh_assert(w->prev ? w->prev->next == w : f->waiters == w);
        qh_assert(!w->next || w->next->prev == w);
        if (w->prev)
            w->prev->next = w->next;
        else
            f->waiters = w->next;
        if (w->next) w->next->prev = w->prev;
        w->on = NULL;
        w->next = w->prev = NULL;
    }
    pthread_mutex_unlock(&f->mu);
    return hung;
}
