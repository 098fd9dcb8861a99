/* test_exec.c — Check unit tests of the executor room (src/exec): futures,
 * the worker pool with dependencies, backpressure and cancellation, the
 * device pool, and the trace writer.
 *
 * Timing is used only to let things happen (sleeps before a release), never
 * as an assertion that something happened fast; every wait that could hang
 * on a bug has a generous timeout. Knows nothing of the language. */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exec.h"
#include "pool.h"
#include "trace.h"

#define LONG_WAIT 60.0 /* seconds: "this would hang on a bug" */

static void sleep_ms(double ms)
{
    struct timespec ts = { (time_t)(ms / 1000),
                           (long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6) };
    nanosleep(&ts, NULL);
}

static atomic_int freed_results;

static void free_counted(void *p)
{
    atomic_fetch_add(&freed_results, 1);
    free(p);
}

static int *new_int(int v)
{
    int *p = malloc(sizeof *p);
    *p = v;
    return p;
}

/* Waits with a timeout and fails the test instead of hanging. */
static FutState must_finish(Fut *f)
{
    FutState st = fut_wait_timeout(f, LONG_WAIT);
    ck_assert_msg(fut_ready(f), "future did not finish within %.0f s", LONG_WAIT);
    return st;
}

/* ================================================================ futures */

START_TEST(fut_complete_basic)
{
    atomic_store(&freed_results, 0);
    Fut *f = fut_new();
    ck_assert_int_eq(fut_state(f), FUT_PENDING);
    ck_assert(!fut_ready(f));
    ck_assert(fut_set_running(f));
    ck_assert_int_eq(fut_state(f), FUT_RUNNING);
    ck_assert(!fut_ready(f));
    ck_assert(fut_complete(f, new_int(42), free_counted));
    ck_assert(fut_ready(f));
    ck_assert_int_eq(fut_wait(f), FUT_DONE);
    ck_assert_int_eq(*(int *)fut_result(f), 42);
    ck_assert_ptr_null(fut_error(f));
    /* A second outcome is ignored and its result freed at once. */
    ck_assert(!fut_complete(f, new_int(7), free_counted));
    ck_assert_int_eq(atomic_load(&freed_results), 1);
    ck_assert(!fut_fail(f, "late"));
    ck_assert(!fut_cancel(f));
    ck_assert_int_eq(fut_state(f), FUT_DONE);
    ck_assert_int_eq(*(int *)fut_result(f), 42);
    fut_release(f);
    ck_assert_int_eq(atomic_load(&freed_results), 2);
}
END_TEST

START_TEST(fut_fail_basic)
{
    Fut *f = fut_new();
    char msg[32];
    strcpy(msg, "boom");
    ck_assert(fut_fail(f, msg));
    strcpy(msg, "XXXX"); /* the future copied it */
    ck_assert_int_eq(fut_wait(f), FUT_FAILED);
    ck_assert_str_eq(fut_error(f), "boom");
    ck_assert_ptr_null(fut_result(f));
    ck_assert_ptr_null(fut_take_result(f));
    ck_assert(!fut_complete(f, NULL, NULL));
    ck_assert_int_eq(fut_state(f), FUT_FAILED);
    fut_release(f);
}
END_TEST

START_TEST(fut_take_once)
{
    atomic_store(&freed_results, 0);
    Fut *f = fut_new();
    fut_complete(f, new_int(5), free_counted);
    int *r = fut_take_result(f);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(*r, 5);
    ck_assert_ptr_null(fut_take_result(f));
    ck_assert_ptr_null(fut_result(f));
    fut_release(f);
    ck_assert_int_eq(atomic_load(&freed_results), 0); /* ours now */
    free(r);
}
END_TEST

START_TEST(fut_refcounts)
{
    atomic_store(&freed_results, 0);
    Fut *f = fut_new();
    ck_assert_ptr_eq(fut_retain(f), f);
    fut_retain(f);
    fut_complete(f, new_int(1), free_counted);
    fut_release(f);
    fut_release(f);
    ck_assert_int_eq(atomic_load(&freed_results), 0);
    ck_assert_int_eq(*(int *)fut_result(f), 1);
    fut_release(f);
    ck_assert_int_eq(atomic_load(&freed_results), 1);
    fut_release(NULL);
}
END_TEST

START_TEST(fut_cancel_basic)
{
    Fut *f = fut_new();
    ck_assert(!atomic_load(fut_cancel_flag(f)));
    ck_assert(fut_cancel(f));
    ck_assert(atomic_load(fut_cancel_flag(f)));
    ck_assert_int_eq(fut_wait(f), FUT_CANCELLED);
    ck_assert_str_eq(fut_error(f), "cancelled");
    ck_assert(!fut_set_running(f));
    fut_release(f);
}
END_TEST

START_TEST(fut_user_slot)
{
    Fut *f = fut_new();
    int x;
    ck_assert_ptr_null(fut_user(f));
    fut_set_user(f, &x);
    ck_assert_ptr_eq(fut_user(f), &x);
    fut_release(f);
}
END_TEST

static void *complete_later(void *arg)
{
    sleep_ms(30);
    fut_complete(arg, new_int(9), free);
    return NULL;
}

/* The retrieved mark and the reference count an owner consults. */
START_TEST(fut_retrieved_and_refs)
{
    Fut *f = fut_new();
    ck_assert(!fut_retrieved(f));
    ck_assert_int_eq(fut_refs(f), 1);
    fut_retain(f);
    ck_assert_int_eq(fut_refs(f), 2);
    fut_fail(f, "boom");
    ck_assert(!fut_retrieved(f)); /* failing is not reading */
    fut_mark_retrieved(f);
    ck_assert(fut_retrieved(f));
    fut_mark_retrieved(f); /* idempotent */
    ck_assert(fut_retrieved(f));
    fut_release(f);
    ck_assert_int_eq(fut_refs(f), 1);
    fut_release(f);
}
END_TEST

START_TEST(fut_wait_across_threads)
{
    for (int round = 0; round < 20; round++) {
        Fut *f = fut_new();
        pthread_t th;
        pthread_create(&th, NULL, complete_later, f);
        ck_assert_int_eq(round % 2 ? fut_wait(f) : fut_wait_interruptible(f, NULL), FUT_DONE);
        ck_assert_int_eq(*(int *)fut_result(f), 9);
        pthread_join(th, NULL);
        fut_release(f);
    }
    Fut *g = fut_new();
    ck_assert_int_eq(fut_wait_timeout(g, 0.02), FUT_PENDING);
    fut_release(g);
}
END_TEST

/* =============================================================== executor */

typedef struct Sq {
    int i;
} Sq;

static atomic_int freed_ctx;

static void free_ctx_counted(void *p)
{
    atomic_fetch_add(&freed_ctx, 1);
    free(p);
}

static void run_square(void *ctx, ExecTask *t)
{
    Sq *s = ctx;
    exec_task_done(t, new_int(s->i * s->i), free);
}

START_TEST(exec_many_results)
{
    atomic_store(&freed_ctx, 0);
    Exec *e = exec_new(4, 64);
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(exec_nworkers(e), 4);
    enum { N = 2000 };
    Fut **fs = malloc(N * sizeof *fs);
    for (int i = 0; i < N; i++) {
        Sq *s = malloc(sizeof *s);
        s->i = i;
        fs[i] =
            exec_submit(e, &(ExecJob){ run_square, s, free_ctx_counted, NULL, 0, "square", i, 0 });
        ck_assert_ptr_nonnull(fs[i]);
    }
    exec_wait_all(e);
    ck_assert_int_eq(atomic_load(&freed_ctx), N); /* contexts freed before wait_all returns */
    for (int i = 0; i < N; i++) {
        ck_assert(fut_ready(fs[i]));
        ck_assert_int_eq(fut_state(fs[i]), FUT_DONE);
        ck_assert_int_eq(*(int *)fut_result(fs[i]), i * i);
        fut_release(fs[i]);
    }
    ExecStats st;
    exec_stats(e, &st);
    ck_assert_uint_eq(st.submitted, N);
    ck_assert_uint_eq(st.run, N);
    ck_assert_uint_eq(st.done, N);
    ck_assert_uint_eq(st.failed, 0);
    ck_assert(st.task_seconds >= 0);
    ck_assert(st.peak_unfinished <= 64);
    ck_assert_int_eq(exec_unfinished(e), 0);
    free(fs);
    exec_free(e);
}
END_TEST

/* A task that runs until the test opens its gate (or it is cancelled). */
typedef struct Gate {
    atomic_int open;
    atomic_int started;
} Gate;

static void run_gate(void *ctx, ExecTask *t)
{
    Gate *g = ctx;
    atomic_store(&g->started, 1);
    while (!atomic_load(&g->open)) {
        if (exec_task_cancelled(t)) {
            exec_task_fail(t, "stopped");
            return;
        }
        sleep_ms(1);
    }
    exec_task_done(t, NULL, NULL);
}

static void wait_started(Gate *g)
{
    double t0 = (double)time(NULL);
    while (!atomic_load(&g->started)) {
        ck_assert_msg((double)time(NULL) - t0 < LONG_WAIT, "gate task never started");
        sleep_ms(1);
    }
}

/* EXEC_HERE: a task with no dependency runs inside exec_submit on the
 * calling thread (never queued: the busy worker could not have taken it),
 * counted as run here; given a dependency the flag is ignored and the
 * task runs on a worker once the dependency is done. */
static void run_which_thread(void *ctx, ExecTask *t)
{
    int *where = ctx;
    *where = exec_on_worker() ? 1 : 2;
    exec_task_done(t, new_int(exec_task_worker(t)), free);
}

START_TEST(exec_submit_here)
{
    Exec *e = exec_new(1, 1);
    Gate *g = calloc(1, sizeof *g);
    Fut *busy = exec_submit(e, &(ExecJob){ run_gate, g, NULL, NULL, 0, "gate", 1, 0 });
    wait_started(g);
    int where = 0;
    /* the bound (1) is full: a task run here does not wait for room */
    Fut *f =
        exec_submit(e, &(ExecJob){ run_which_thread, &where, NULL, NULL, 0, "here", 2, EXEC_HERE });
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fut_state(f), FUT_DONE); /* finished when exec_submit returns */
    ck_assert_int_eq(where, 2);
    ck_assert_int_eq(*(int *)fut_result(f), -1);
    int where2 = 0;
    Fut *dep[1] = { busy };
    atomic_store(&g->open, 1);
    Fut *g2 = exec_submit(
        e, &(ExecJob){ run_which_thread, &where2, NULL, dep, 1, "after", 3, EXEC_HERE });
    ck_assert_ptr_nonnull(g2);
    ck_assert_int_eq(fut_wait(g2), FUT_DONE);
    ck_assert_int_eq(where2, 1); /* given a dependency (finished or not): a worker's */
    exec_wait_all(e);
    ExecStats st;
    exec_stats(e, &st);
    ck_assert_int_eq((int)st.run, 3);
    ck_assert_int_eq((int)st.run_here, 1);
    fut_release(f);
    fut_release(g2);
    fut_release(busy);
    exec_free(e);
    free(g);
}
END_TEST

typedef struct Order {
    atomic_int n;
    int seen[256];
} Order;

typedef struct OrderCtx {
    Order *o;
    int i;
} OrderCtx;

static void run_record(void *ctx, ExecTask *t)
{
    OrderCtx *c = ctx;
    int k = atomic_fetch_add(&c->o->n, 1);
    c->o->seen[k] = c->i;
    exec_task_done(t, NULL, NULL);
}

/* A queued task the caller needs now runs on the caller's thread; a
 * running one is left to its worker. */
START_TEST(exec_run_inline_queued)
{
    Exec *e = exec_new(1, 16);
    Gate *g = calloc(1, sizeof *g);
    Fut *busy = exec_submit(e, &(ExecJob){ run_gate, g, NULL, NULL, 0, "gate", 1, 0 });
    wait_started(g);
    Sq *s = malloc(sizeof *s);
    s->i = 7;
    Fut *f = exec_submit(e, &(ExecJob){ run_square, s, free, NULL, 0, "square", 2, 0 });
    ck_assert(!fut_ready(f));
    ck_assert(exec_run_inline(e, f)); /* queued behind the gate: runs here */
    ck_assert_int_eq(fut_state(f), FUT_DONE);
    ck_assert_int_eq(*(int *)fut_result(f), 49);
    ck_assert(!exec_run_inline(e, busy)); /* running on the worker: not taken */
    ck_assert(!exec_run_inline(e, f));    /* done: nothing to run */
    atomic_store(&g->open, 1);
    exec_wait_all(e);
    ck_assert_int_eq(fut_state(busy), FUT_DONE);
    fut_release(f);
    fut_release(busy);
    exec_free(e);
    free(g);
}
END_TEST

START_TEST(exec_fifo)
{
    Exec *e = exec_new(1, 1000);
    Gate g = { 0, 0 };
    Fut *gf = exec_submit(e, &(ExecJob){ run_gate, &g, NULL, NULL, 0, "gate", 1, 0 });
    wait_started(&g);
    static Order o;
    atomic_store(&o.n, 0);
    enum { N = 100 };
    Fut *fs[N];
    for (int i = 0; i < N; i++) {
        OrderCtx *c = malloc(sizeof *c);
        c->o = &o;
        c->i = i;
        fs[i] = exec_submit(e, &(ExecJob){ run_record, c, free, NULL, 0, "rec", i, 0 });
    }
    atomic_store(&g.open, 1);
    exec_wait_all(e);
    ck_assert_int_eq(atomic_load(&o.n), N);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(o.seen[i], i);
        fut_release(fs[i]);
    }
    fut_release(gf);
    exec_free(e);
}
END_TEST

/* chain: value = dep's value + 1 (or 0 without a dep). */
static void run_plus1(void *ctx, ExecTask *t)
{
    (void)ctx;
    ck_assert_int_ge(exec_task_worker(t), 0);
    ck_assert_int_lt(exec_task_worker(t), exec_nworkers(exec_task_exec(t)));
    ck_assert(exec_on_worker());
    int v = 0;
    for (int i = 0; i < exec_task_ndeps(t); i++) {
        Fut *d = exec_task_dep(t, i);
        ck_assert(fut_ready(d)); /* a task never starts before its deps */
        if (fut_state(d) != FUT_DONE) {
            char msg[128];
            snprintf(msg, sizeof msg, "dep failed: %s", fut_error(d));
            exec_task_fail(t, msg);
            return;
        }
        v += *(int *)fut_result(d);
    }
    exec_task_done(t, new_int(v + 1), free);
}

START_TEST(exec_chain_forward)
{
    for (int workers = 1; workers <= 3; workers++) {
        Exec *e = exec_new(workers, 8);
        enum { N = 50 };
        Fut *fs[N];
        for (int i = 0; i < N; i++) {
            Fut *dep = i ? fs[i - 1] : NULL;
            fs[i] =
                exec_submit(e, &(ExecJob){ run_plus1, NULL, NULL, &dep, i ? 1 : 0, "chain", i, 0 });
        }
        ck_assert_int_eq(must_finish(fs[N - 1]), FUT_DONE);
        ck_assert_int_eq(*(int *)fut_result(fs[N - 1]), N);
        exec_wait_all(e);
        for (int i = 0; i < N; i++) fut_release(fs[i]);
        exec_free(e);
    }
}
END_TEST

/* Reverse readiness: task i waits on a placeholder that task i+1 fills, so
 * the first-submitted task is the last runnable. One worker: a worker that
 * picked a task and slept on its deps would deadlock here. */
typedef struct Rev {
    Fut *mine; /* placeholder this task completes */
    Order *o;
    int i;
} Rev;

static void run_rev(void *ctx, ExecTask *t)
{
    Rev *r = ctx;
    int k = atomic_fetch_add(&r->o->n, 1);
    r->o->seen[k] = r->i;
    fut_complete(r->mine, new_int(r->i), free);
    exec_task_done(t, new_int(r->i), free);
}

START_TEST(exec_chain_reverse_one_worker)
{
    Exec *e = exec_new(1, 1000);
    enum { N = 50 };
    Fut *ph[N], *fs[N];
    static Order o;
    atomic_store(&o.n, 0);
    for (int i = 0; i < N; i++) ph[i] = fut_new();
    for (int i = 0; i < N; i++) {
        Rev *r = malloc(sizeof *r);
        r->mine = ph[i];
        r->o = &o;
        r->i = i;
        Fut *dep = i + 1 < N ? ph[i + 1] : NULL;
        fs[i] = exec_submit(e, &(ExecJob){ run_rev, r, free, &dep, 1, "rev", i, 0 });
    }
    ck_assert_int_eq(must_finish(fs[0]), FUT_DONE);
    exec_wait_all(e);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(o.seen[i], N - 1 - i);
        fut_release(fs[i]);
        fut_release(ph[i]);
    }
    exec_free(e);
}
END_TEST

START_TEST(exec_diamond)
{
    Exec *e = exec_new(2, 16);
    for (int round = 0; round < 50; round++) {
        Fut *a = exec_submit(e, &(ExecJob){ run_plus1, NULL, NULL, NULL, 0, "a", 1, 0 });
        Fut *b = exec_submit(e, &(ExecJob){ run_plus1, NULL, NULL, &a, 1, "b", 2, 0 });
        Fut *c = exec_submit(e, &(ExecJob){ run_plus1, NULL, NULL, &a, 1, "c", 3, 0 });
        Fut *bc[3] = { b, NULL, c }; /* NULL deps are skipped */
        Fut *d = exec_submit(e, &(ExecJob){ run_plus1, NULL, NULL, bc, 3, "d", 4, 0 });
        ck_assert_int_eq(must_finish(d), FUT_DONE);
        ck_assert_int_eq(*(int *)fut_result(d), 5); /* (1+1)+(1+1)+1 */
        fut_release(a);
        fut_release(b);
        fut_release(c);
        fut_release(d);
    }
    exec_free(e);
}
END_TEST

static void run_fail(void *ctx, ExecTask *t) { exec_task_fail(t, ctx ? ctx : "boom"); }

static void run_nothing(void *ctx, ExecTask *t)
{
    (void)ctx;
    (void)t;
}

START_TEST(exec_failed_dep)
{
    Exec *e = exec_new(2, 16);
    Fut *a = exec_submit(e, &(ExecJob){ run_fail, NULL, NULL, NULL, 0, "a", 1, 0 });
    Fut *b = exec_submit(e, &(ExecJob){ run_plus1, NULL, NULL, &a, 1, "b", 2, 0 });
    ck_assert_int_eq(must_finish(b), FUT_FAILED);
    ck_assert_str_eq(fut_error(a), "boom");
    ck_assert_str_eq(fut_error(b), "dep failed: boom");
    Fut *c = exec_submit(e, &(ExecJob){ run_nothing, NULL, NULL, NULL, 0, "c", 3, 0 });
    ck_assert_int_eq(must_finish(c), FUT_FAILED);
    ck_assert_str_eq(fut_error(c), "task produced no result");
    exec_wait_all(e);
    ExecStats st;
    exec_stats(e, &st);
    ck_assert_uint_eq(st.failed, 3);
    fut_release(a);
    fut_release(b);
    fut_release(c);
    exec_free(e);
}
END_TEST

/* Backpressure: count tasks the test has seen submitted but not yet seen
 * finish; that number can never exceed the executor's own count. */
static atomic_int live, live_max;

static void run_slow(void *ctx, ExecTask *t)
{
    (void)ctx;
    sleep_ms(2);
    atomic_fetch_sub(&live, 1);
    exec_task_done(t, NULL, NULL);
}

START_TEST(exec_backpressure)
{
    atomic_store(&live, 0);
    atomic_store(&live_max, 0);
    Exec *e = exec_new(2, 4);
    for (int i = 0; i < 100; i++) {
        Fut *f = exec_submit(e, &(ExecJob){ run_slow, NULL, NULL, NULL, 0, "slow", i, 0 });
        ck_assert_ptr_nonnull(f);
        int n = atomic_fetch_add(&live, 1) + 1;
        int m = atomic_load(&live_max);
        while (n > m && !atomic_compare_exchange_weak(&live_max, &m, n))
            ;
        ck_assert_int_le(exec_unfinished(e), 4);
        fut_release(f);
    }
    exec_wait_all(e);
    ck_assert_int_le(atomic_load(&live_max), 4);
    ExecStats st;
    exec_stats(e, &st);
    ck_assert_int_le(st.peak_unfinished, 4);
    ck_assert_uint_eq(st.run, 100);
    ck_assert_uint_gt(st.blocked_submits, 0);
    exec_free(e);
}
END_TEST

static atomic_int ran_count;

static void run_count(void *ctx, ExecTask *t)
{
    (void)ctx;
    atomic_fetch_add(&ran_count, 1);
    exec_task_done(t, NULL, NULL);
}

START_TEST(exec_cancel_queued_and_running)
{
    atomic_store(&ran_count, 0);
    atomic_store(&freed_ctx, 0);
    Exec *e = exec_new(1, 100);
    Gate g = { 0, 0 };
    Fut *gf = exec_submit(e, &(ExecJob){ run_gate, &g, NULL, NULL, 0, "gate", 1, 0 });
    wait_started(&g);
    Fut *never = fut_new(); /* a dep that is never finished */
    Fut *fs[20];
    for (int i = 0; i < 20; i++) {
        Fut *dep = i % 2 ? never : (i ? fs[i - 1] : NULL);
        fs[i] = exec_submit(
            e, &(ExecJob){ run_count, malloc(8), free_ctx_counted, &dep, 1, "q", i, 0 });
    }
    int n = 0;
    ExecTaskInfo info[32];
    ck_assert_int_eq(exec_pending_tasks(e, info, 32), 21);
    for (int i = 0; i < 21; i++) n += info[i].state == EXEC_RUNNING;
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(info[0].state, EXEC_RUNNING);
    ck_assert_str_eq(info[0].label, "gate");
    exec_cancel_all(e);
    exec_wait_all(e); /* would hang if parked tasks stayed parked */
    ck_assert_int_eq(atomic_load(&ran_count), 0);
    ck_assert_int_eq(atomic_load(&freed_ctx), 20);
    ck_assert_int_eq(fut_state(gf), FUT_CANCELLED); /* polled its flag and stopped */
    for (int i = 0; i < 20; i++) {
        ck_assert_int_eq(fut_state(fs[i]), FUT_CANCELLED);
        ck_assert_str_eq(fut_error(fs[i]), "cancelled");
        fut_release(fs[i]);
    }
    /* The executor unhooked itself from `never`: finishing it now is safe. */
    fut_complete(never, NULL, NULL);
    fut_release(never);
    ExecStats st;
    exec_stats(e, &st);
    ck_assert_uint_eq(st.cancelled, 21);
    /* Still usable afterwards. */
    Fut *f = exec_submit(e, &(ExecJob){ run_count, NULL, NULL, NULL, 0, "after", 99, 0 });
    ck_assert_int_eq(must_finish(f), FUT_DONE);
    fut_release(f);
    fut_release(gf);
    exec_free(e);
}
END_TEST

/* A user's fut_cancel on a queued task's future: the task never runs. */
START_TEST(exec_fut_cancel_queued)
{
    atomic_store(&ran_count, 0);
    Exec *e = exec_new(1, 100);
    Gate g = { 0, 0 };
    Fut *gf = exec_submit(e, &(ExecJob){ run_gate, &g, NULL, NULL, 0, "gate", 1, 0 });
    wait_started(&g);
    Fut *f = exec_submit(e, &(ExecJob){ run_count, NULL, NULL, NULL, 0, "q", 2, 0 });
    ck_assert(fut_cancel(f));
    atomic_store(&g.open, 1);
    exec_wait_all(e);
    ck_assert_int_eq(atomic_load(&ran_count), 0);
    ck_assert_int_eq(fut_state(f), FUT_CANCELLED);
    ck_assert_int_eq(fut_state(gf), FUT_DONE);
    fut_release(f);
    fut_release(gf);
    exec_free(e);
}
END_TEST

/* exec_cancel_task ends one task (parked, queued or running) and leaves
 * the others alone. */
/* ================================================================ remote slots */

/* A task records where it ran: on a worker (-1) or a remote slot. */
typedef struct Where {
    int slot;
    int worker;
    atomic_int *gate;
} Where;

static void run_note_thread(void *ctx, ExecTask *t)
{
    Where *w = ctx;
    w->slot = exec_task_remote(t);
    w->worker = exec_task_worker(t);
    if (w->gate)
        while (!atomic_load(w->gate) && !exec_task_cancelled(t)) sleep_ms(1);
    if (exec_task_cancelled(t)) {
        exec_task_fail(t, "cancelled");
        return;
    }
    exec_task_done(t, NULL, NULL);
}

static atomic_int usable_slots; /* bit i: slot i may take work */
static bool slot_usable(void *ud, int slot)
{
    (void)ud;
    return (atomic_load(&usable_slots) >> slot) & 1;
}

START_TEST(exec_remote_only_flagged)
{
    /* tasks without EXEC_REMOTE never reach a remote slot; flagged ones
     * reach both kinds of thread */
    atomic_store(&usable_slots, 3);
    Exec *e = exec_new(1, 256);
    ck_assert_int_eq(exec_add_remote(e, 2, slot_usable, NULL, NULL), 2);
    ck_assert_int_eq(exec_add_remote(e, 1, slot_usable, NULL, NULL), -1);
    enum { N = 200 };
    Where w[N];
    Fut *f[N];
    for (int i = 0; i < N; i++) {
        w[i].slot = -2;
        w[i].gate = NULL;
        f[i] = exec_submit(e, &(ExecJob){ run_note_thread, &w[i], NULL, NULL, 0, "w", i,
                                          i % 2 ? EXEC_REMOTE : 0 });
    }
    int remote = 0;
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(must_finish(f[i]), FUT_DONE);
        fut_release(f[i]);
        if (i % 2 == 0)
            ck_assert_int_eq(w[i].slot, -1);
        else {
            ck_assert(w[i].slot >= -1 && w[i].slot < 2);
            if (w[i].slot >= 0) {
                remote++;
                ck_assert_int_eq(w[i].worker, 1 + w[i].slot);
            }
        }
    }
    exec_free(e);
    (void)remote; /* how many went remote depends on timing */
}
END_TEST

START_TEST(exec_remote_takes_work_while_workers_busy)
{
    /* the only worker is held: a flagged task still runs, on a slot, and a
     * plain one waits for the worker */
    atomic_store(&usable_slots, 1);
    Exec *e = exec_new(1, 64);
    exec_add_remote(e, 1, slot_usable, NULL, NULL);
    atomic_int gate = 0;
    Where hold = { -2, -2, &gate };
    Fut *h = exec_submit(e, &(ExecJob){ run_note_thread, &hold, NULL, NULL, 0, "hold", 1, 0 });
    sleep_ms(20);
    Where a = { -2, -2, NULL }, b = { -2, -2, NULL };
    Fut *fa = exec_submit(e, &(ExecJob){ run_note_thread, &a, NULL, NULL, 0, "a", 2, EXEC_REMOTE });
    Fut *fb = exec_submit(e, &(ExecJob){ run_note_thread, &b, NULL, NULL, 0, "b", 3, 0 });
    ck_assert_int_eq(must_finish(fa), FUT_DONE);
    ck_assert_int_eq(a.slot, 0);
    ck_assert(!fut_ready(fb));
    atomic_store(&gate, 1);
    ck_assert_int_eq(must_finish(fb), FUT_DONE);
    ck_assert_int_eq(b.slot, -1);
    must_finish(h);
    fut_release(h);
    fut_release(fa);
    fut_release(fb);
    exec_free(e);
}
END_TEST

START_TEST(exec_remote_slot_gone)
{
    /* a slot that becomes unusable puts its task back and ends: the work
     * runs on the workers */
    atomic_store(&usable_slots, 0);
    Exec *e = exec_new(1, 64);
    exec_add_remote(e, 1, slot_usable, NULL, NULL);
    enum { N = 20 };
    Where w[N];
    Fut *f[N];
    for (int i = 0; i < N; i++) {
        w[i].slot = -2;
        w[i].gate = NULL;
        f[i] = exec_submit(
            e, &(ExecJob){ run_note_thread, &w[i], NULL, NULL, 0, "w", i, EXEC_REMOTE });
    }
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(must_finish(f[i]), FUT_DONE);
        ck_assert_int_eq(w[i].slot, -1);
        fut_release(f[i]);
    }
    exec_free(e);
}
END_TEST

START_TEST(exec_remote_cancel)
{
    /* cancelling reaches a task a slot runs, and queued flagged tasks */
    atomic_store(&usable_slots, 1);
    Exec *e = exec_new(1, 64);
    exec_add_remote(e, 1, slot_usable, NULL, NULL);
    atomic_int gate = 0;
    Where w[4];
    Fut *f[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (Where){ -2, -2, &gate };
        f[i] = exec_submit(
            e, &(ExecJob){ run_note_thread, &w[i], NULL, NULL, 0, "w", i, EXEC_REMOTE });
    }
    sleep_ms(30);
    exec_cancel_all(e);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(must_finish(f[i]), FUT_CANCELLED);
        fut_release(f[i]);
    }
    exec_wait_all(e);
    exec_free(e);
}
END_TEST

START_TEST(exec_cancel_one_task)
{
    atomic_store(&ran_count, 0);
    atomic_store(&freed_ctx, 0);
    Exec *e = exec_new(1, 100);
    Gate g = { 0, 0 };
    Fut *gf = exec_submit(e, &(ExecJob){ run_gate, &g, NULL, NULL, 0, "gate", 1, 0 });
    wait_started(&g);
    Fut *never = fut_new();
    Fut *queued = exec_submit(
        e, &(ExecJob){ run_count, malloc(8), free_ctx_counted, NULL, 0, "queued", 2, 0 });
    Fut *parked = exec_submit(
        e, &(ExecJob){ run_count, malloc(8), free_ctx_counted, &never, 1, "parked", 3, 0 });
    Fut *other = exec_submit(
        e, &(ExecJob){ run_count, malloc(8), free_ctx_counted, NULL, 0, "other", 4, 0 });
    ck_assert(exec_cancel_task(e, queued));
    ck_assert(exec_cancel_task(e, parked));
    ck_assert_int_eq(fut_state(queued), FUT_CANCELLED);
    ck_assert_int_eq(fut_state(parked), FUT_CANCELLED);
    ck_assert_int_eq(atomic_load(&freed_ctx), 2); /* ended at once, contexts freed */
    ck_assert(!exec_cancel_task(e, queued));      /* no longer unfinished */
    ck_assert(exec_cancel_task(e, gf));           /* running: its flag is raised, it stops */
    ck_assert_int_eq(must_finish(other), FUT_DONE);
    exec_wait_all(e);
    ck_assert_int_eq(fut_state(gf), FUT_CANCELLED);
    ck_assert_int_eq(atomic_load(&ran_count), 1); /* only "other" ran */
    ExecTaskInfo info[4];
    ck_assert_int_eq(exec_pending_tasks(e, info, 4), 0);
    fut_complete(never, NULL, NULL); /* unhooked: safe */
    fut_release(never);
    fut_release(queued);
    fut_release(parked);
    fut_release(other);
    fut_release(gf);
    exec_free(e);
}
END_TEST

/* exec_pending_tasks names each task's future. */
START_TEST(exec_pending_names_futures)
{
    Exec *e = exec_new(1, 100);
    Gate g = { 0, 0 };
    Fut *gf = exec_submit(e, &(ExecJob){ run_gate, &g, NULL, NULL, 0, "gate", 1, 0 });
    wait_started(&g);
    Fut *q = exec_submit(e, &(ExecJob){ run_count, NULL, NULL, NULL, 0, "q", 2, 0 });
    ExecTaskInfo info[4];
    ck_assert_int_eq(exec_pending_tasks(e, info, 4), 2);
    ck_assert_ptr_eq(info[0].fut, gf);
    ck_assert_ptr_eq(info[1].fut, q);
    atomic_store(&g.open, 1);
    exec_wait_all(e);
    fut_release(q);
    fut_release(gf);
    exec_free(e);
}
END_TEST

typedef struct Interrupter {
    Exec *e;
    double delay_ms;
} Interrupter;

static void *interrupt_later(void *arg)
{
    Interrupter *it = arg;
    sleep_ms(it->delay_ms);
    exec_interrupt(it->e);
    return NULL;
}

START_TEST(exec_interrupt_wakes_wait)
{
    Exec *e = exec_new(1, 4);
    Fut *never = fut_new();
    Interrupter it = { e, 50 };
    pthread_t th;
    pthread_create(&th, NULL, interrupt_later, &it);
    ck_assert_int_eq(fut_wait_interruptible(never, exec_interrupt_flag(e)), FUT_PENDING);
    pthread_join(th, NULL);
    ck_assert(atomic_load(exec_interrupt_flag(e)));
    /* Already up: returns at once. */
    ck_assert_int_eq(fut_wait_interruptible(never, exec_interrupt_flag(e)), FUT_PENDING);
    exec_clear_interrupt(e);
    ck_assert(!atomic_load(exec_interrupt_flag(e)));
    /* exec_wait_all_interruptible too. */
    Fut *parked = exec_submit(e, &(ExecJob){ run_count, NULL, NULL, &never, 1, "parked", 1, 0 });
    pthread_create(&th, NULL, interrupt_later, &it);
    ck_assert(!exec_wait_all_interruptible(e, exec_interrupt_flag(e)));
    pthread_join(th, NULL);
    exec_clear_interrupt(e);
    fut_complete(never, NULL, NULL);
    ck_assert(exec_wait_all_interruptible(e, exec_interrupt_flag(e)));
    ck_assert_int_eq(fut_state(parked), FUT_DONE);
    fut_release(parked);
    fut_release(never);
    exec_free(e);
}
END_TEST

/* The real thing: a signal handler that only calls exec_interrupt. */
static Exec *sig_exec;

static void on_sigusr1(int sig)
{
    (void)sig;
    exec_interrupt(sig_exec);
}

typedef struct Killer {
    pthread_t target;
} Killer;

static void *kill_later(void *arg)
{
    Killer *k = arg;
    sleep_ms(50);
    pthread_kill(k->target, SIGUSR1);
    return NULL;
}

START_TEST(exec_interrupt_from_signal)
{
    Exec *e = exec_new(1, 4);
    sig_exec = e;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigusr1;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    Fut *never = fut_new();
    Killer k = { pthread_self() };
    pthread_t th;
    pthread_create(&th, NULL, kill_later, &k);
    ck_assert_int_eq(fut_wait_interruptible(never, exec_interrupt_flag(e)), FUT_PENDING);
    pthread_join(th, NULL);
    fut_release(never);
    signal(SIGUSR1, SIG_DFL);
    exec_free(e);
}
END_TEST

/* A gate that ignores cancellation: stays running until opened. */
static void run_stubborn(void *ctx, ExecTask *t)
{
    Gate *g = ctx;
    atomic_store(&g->started, 1);
    while (!atomic_load(&g->open)) sleep_ms(1);
    exec_task_done(t, NULL, NULL);
}

typedef struct Canceller {
    Exec *e;
    atomic_int stop;
} Canceller;

/* Cancels every 20 ms until told to stop, so that at least one
 * cancellation lands while the submitter is blocked. */
static void *cancel_repeatedly(void *arg)
{
    Canceller *c = arg;
    while (!atomic_load(&c->stop)) {
        sleep_ms(20);
        exec_cancel_all(c->e);
    }
    return NULL;
}

START_TEST(exec_interrupt_unblocks_submit)
{
    atomic_store(&freed_ctx, 0);
    Exec *e = exec_new(1, 1);
    Gate g = { 0, 0 };
    Fut *gf = exec_submit(e, &(ExecJob){ run_stubborn, &g, NULL, NULL, 0, "gate", 1, 0 });
    Interrupter it = { e, 50 };
    pthread_t th;
    pthread_create(&th, NULL, interrupt_later, &it);
    Fut *f = exec_submit(
        e, &(ExecJob){ run_count, malloc(8), free_ctx_counted, NULL, 0, "blocked", 2, 0 });
    ck_assert_ptr_null(f);
    ck_assert_int_eq(atomic_load(&freed_ctx), 1); /* ctx taken even on NULL */
    pthread_join(th, NULL);
    exec_clear_interrupt(e);
    /* exec_cancel_all unblocks it too. */
    Canceller c = { e, 0 };
    pthread_create(&th, NULL, cancel_repeatedly, &c);
    f = exec_submit(e,
                    &(ExecJob){ run_count, malloc(8), free_ctx_counted, NULL, 0, "blocked", 3, 0 });
    ck_assert_ptr_null(f);
    ck_assert_int_eq(atomic_load(&freed_ctx), 2);
    atomic_store(&c.stop, 1);
    pthread_join(th, NULL);
    atomic_store(&g.open, 1);
    exec_wait_all(e);
    ck_assert_int_eq(fut_state(gf), FUT_DONE); /* it ignored the flag and finished */
    ExecStats st;
    exec_stats(e, &st);
    ck_assert_uint_eq(st.blocked_submits, 2);
    fut_release(gf);
    exec_free(e);
}
END_TEST

/* Spins until cancelled, polling the flag pointer like a gate loop. */
static void run_spin(void *ctx, ExecTask *t)
{
    (void)ctx;
    const atomic_int *flag = exec_task_cancel_flag(t);
    unsigned long n = 0;
    while (!atomic_load_explicit(flag, memory_order_relaxed))
        if (++n % 1024 == 0) sleep_ms(0.1);
    exec_task_fail(t, "interrupted");
}

START_TEST(exec_free_while_running)
{
    atomic_store(&freed_ctx, 0);
    Exec *e = exec_new(3, 100);
    Fut *fs[12];
    for (int i = 0; i < 12; i++)
        fs[i] = exec_submit(
            e, &(ExecJob){ run_spin, malloc(8), free_ctx_counted, NULL, 0, "spin", i, 0 });
    double t0 = (double)time(NULL);
    while (exec_busy_workers(e) < 3) {
        ck_assert((double)time(NULL) - t0 < LONG_WAIT);
        sleep_ms(1);
    }
    ck_assert_int_eq(exec_busy_workers(e), 3);
    exec_free(e);
    ck_assert_int_eq(atomic_load(&freed_ctx), 12);
    for (int i = 0; i < 12; i++) {
        ck_assert_int_eq(fut_state(fs[i]), FUT_CANCELLED);
        fut_release(fs[i]);
    }
}
END_TEST

/* A task that submits children from its worker (bound 1: would deadlock if
 * worker submissions waited on the bound). */
typedef struct Parent {
    Exec *e;
    Fut *kids[10];
} Parent;

static void run_parent(void *ctx, ExecTask *t)
{
    Parent *p = ctx;
    ck_assert(exec_on_worker());
    ck_assert_int_eq(exec_current_worker(), exec_task_worker(t));
    for (int i = 0; i < 10; i++) {
        Sq *s = malloc(sizeof *s);
        s->i = i;
        Fut *dep = i ? p->kids[i - 1] : NULL;
        p->kids[i] =
            exec_submit(p->e, &(ExecJob){ run_square, s, free, &dep, i ? 1 : 0, "kid", i, 0 });
        ck_assert_ptr_nonnull(p->kids[i]);
    }
    exec_task_done(t, NULL, NULL);
}

START_TEST(exec_submit_from_worker)
{
    ck_assert(!exec_on_worker());
    ck_assert_int_eq(exec_current_worker(), -1);
    Exec *e = exec_new(1, 1);
    Parent p = { e, { 0 } };
    Fut *f = exec_submit(e, &(ExecJob){ run_parent, &p, NULL, NULL, 0, "parent", 1, 0 });
    ck_assert_int_eq(must_finish(f), FUT_DONE);
    for (int i = 0; i < 10; i++) {
        ck_assert_int_eq(must_finish(p.kids[i]), FUT_DONE);
        ck_assert_int_eq(*(int *)fut_result(p.kids[i]), i * i);
        fut_release(p.kids[i]);
    }
    exec_wait_all(e);
    fut_release(f);
    exec_free(e);
}
END_TEST

/* Many threads hammering submit/cancel/wait together; for TSan. */
typedef struct Stress {
    Exec *e;
    int seed;
} Stress;

static void *stress_thread(void *arg)
{
    Stress *s = arg;
    Fut *prev = NULL;
    for (int i = 0; i < 300; i++) {
        Fut *f = exec_submit(s->e, &(ExecJob){ (i + s->seed) % 7 == 0 ? run_fail : run_plus1, NULL,
                                               NULL, &prev, 1, "stress", i, 0 });
        if (!f) continue;
        if (i % 3 == 0) fut_wait_timeout(f, LONG_WAIT);
        fut_release(prev);
        prev = f;
    }
    fut_release(prev);
    return NULL;
}

START_TEST(exec_stress)
{
    Exec *e = exec_new(4, 8);
    pthread_t th[4];
    Stress s[4];
    for (int i = 0; i < 4; i++) {
        s[i].e = e;
        s[i].seed = i;
        pthread_create(&th[i], NULL, stress_thread, &s[i]);
    }
    for (int r = 0; r < 5; r++) {
        sleep_ms(5);
        exec_cancel_all(e);
    }
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    exec_wait_all(e);
    ck_assert_int_eq(exec_unfinished(e), 0);
    exec_free(e);
}
END_TEST

/* =================================================================== pool */

typedef struct Inst {
    char key[32];
    atomic_int busy;
    int resets;
} Inst;

static atomic_int created, destroyed, resets;

static void *inst_create(void *arg, char *err, size_t errlen)
{
    if (arg && strcmp(arg, "fail") == 0) {
        snprintf(err, errlen, "no such device");
        return NULL;
    }
    Inst *in = calloc(1, sizeof *in);
    snprintf(in->key, sizeof in->key, "%s", arg ? (char *)arg : "");
    atomic_fetch_add(&created, 1);
    return in;
}

static void inst_reset(void *p)
{
    ((Inst *)p)->resets++;
    atomic_fetch_add(&resets, 1);
}

static void inst_destroy(void *p)
{
    atomic_fetch_add(&destroyed, 1);
    free(p);
}

static const PoolVt vt = { inst_create, inst_reset, inst_destroy };

static void reset_counts(void)
{
    atomic_store(&created, 0);
    atomic_store(&destroyed, 0);
    atomic_store(&resets, 0);
}

START_TEST(pool_reuse)
{
    reset_counts();
    Pool *p = pool_new(1000, &vt);
    char err[128];
    Inst *a = pool_acquire(p, "sv:4", 100, "sv:4", NULL, err, sizeof err);
    ck_assert_ptr_nonnull(a);
    ck_assert_uint_eq(pool_in_use_bytes(p), 100);
    Inst *b = pool_acquire(p, "sv:4", 100, "sv:4", NULL, err, sizeof err); /* a is busy */
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_ne(a, b);
    pool_release(p, a, 1);
    ck_assert_uint_eq(pool_in_use_bytes(p), 100);
    ck_assert_uint_eq(pool_held_bytes(p), 200);
    Inst *c = pool_acquire(p, "sv:4", 100, "sv:4", NULL, err, sizeof err);
    ck_assert_ptr_eq(c, a);
    ck_assert_int_eq(a->resets, 1);
    ck_assert_int_eq(atomic_load(&created), 2);
    PoolStats st;
    pool_stats(p, &st);
    ck_assert_uint_eq(st.reused, 1);
    ck_assert_int_eq(st.live, 2);
    pool_release(p, b, 1);
    pool_release(p, c, 1);
    ck_assert_uint_eq(pool_in_use_bytes(p), 0);
    ck_assert_uint_eq(pool_peak_bytes(p), 200);
    pool_free(p);
    ck_assert_int_eq(atomic_load(&destroyed), 2);
}
END_TEST

typedef struct Acq {
    Pool *p;
    const char *key;
    size_t bytes;
    const atomic_int *cancel;
    void *got;
    char err[128];
    atomic_int done;
} Acq;

static void *acquire_thread(void *arg)
{
    Acq *a = arg;
    a->got = pool_acquire(a->p, a->key, a->bytes, (void *)a->key, a->cancel, a->err, sizeof a->err);
    atomic_store(&a->done, 1);
    return NULL;
}

START_TEST(pool_budget_waits)
{
    reset_counts();
    Pool *p = pool_new(100, &vt);
    char err[128];
    Inst *a = pool_acquire(p, "x", 60, "x", NULL, err, sizeof err);
    ck_assert_ptr_nonnull(a);
    Acq q = { p, "y", 60, NULL, NULL, "", 0 };
    pthread_t th;
    pthread_create(&th, NULL, acquire_thread, &q);
    sleep_ms(100);
    ck_assert_int_eq(atomic_load(&q.done), 0); /* must wait: 60+60 > 100 */
    pool_release(p, a, 1);                     /* idle "x" gets evicted for "y" */
    pthread_join(th, NULL);
    ck_assert_ptr_nonnull(q.got);
    ck_assert_int_eq(atomic_load(&destroyed), 1);
    ck_assert_uint_le(pool_peak_bytes(p), 100);
    ck_assert_uint_eq(pool_held_bytes(p), 60);
    pool_release(p, q.got, 1);
    pool_free(p);
}
END_TEST

/* A nested request never waits: idle instance of its key, else a new one
 * (evicting idle ones, past the budget if it must); it fails at once only
 * when its chain alone is over the budget. */
START_TEST(pool_nested)
{
    reset_counts();
    Pool *p = pool_new(100, &vt);
    char err[160];
    Inst *a = pool_acquire(p, "x", 60, "x", NULL, err, sizeof err);
    ck_assert_ptr_nonnull(a);
    /* chain 60 + 60 > 100: refused at once, with the numbers */
    ck_assert_ptr_null(pool_acquire_nested(p, "y", 60, "y", 60, err, sizeof err));
    ck_assert_str_eq(err,
                     "needs 60 B on top of the 60 B its callers hold, and the budget is 100 B");
    /* chain 60 + 30 fits; another caller holds 40 more: past the budget, no wait */
    Inst *b = pool_acquire(p, "z", 30, "z", NULL, err, sizeof err);
    ck_assert_ptr_nonnull(b);
    Inst *c = pool_acquire_nested(p, "w", 30, "w", 60, err, sizeof err);
    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(pool_held_bytes(p), 120);
    /* an idle instance of the key is reused */
    pool_release(p, c, 1);
    Inst *d = pool_acquire_nested(p, "w", 30, "w", 60, err, sizeof err);
    ck_assert_ptr_eq(d, c);
    pool_release(p, d, 1);
    /* an idle instance of another key is evicted to stay within the budget */
    pool_release(p, b, 1);
    Inst *e = pool_acquire_nested(p, "v", 40, "v", 60, err, sizeof err);
    ck_assert_ptr_nonnull(e);
    ck_assert_uint_le(pool_held_bytes(p), 100);
    pool_release(p, e, 1);
    pool_release(p, a, 1);
    pool_free(p);
}
END_TEST

START_TEST(pool_too_big)
{
    Pool *p = pool_new((size_t)(11.7 * (double)(1ull << 30)), &vt);
    char err[128];
    ck_assert_ptr_null(pool_acquire(p, "big", (size_t)16 << 30, "big", NULL, err, sizeof err));
    ck_assert_str_eq(err, "needs 16.0 GiB, budget is 11.7 GiB");
    ck_assert_ptr_null(pool_acquire(p, "f", 10, "fail", NULL, err, sizeof err));
    ck_assert_str_eq(err, "no such device");
    ck_assert_uint_eq(pool_held_bytes(p), 0);
    char b[32];
    ck_assert_str_eq(pool_format_bytes(b, sizeof b, 512), "512 B");
    ck_assert_str_eq(pool_format_bytes(b, sizeof b, 1536), "1.5 KiB");
    ck_assert_uint_gt(pool_default_budget(), 0);
    pool_free(p);
}
END_TEST

START_TEST(pool_dirty_release)
{
    reset_counts();
    Pool *p = pool_new(1000, &vt);
    char err[128];
    Inst *a = pool_acquire(p, "k", 100, "k", NULL, err, sizeof err);
    pool_release(p, a, 0);
    ck_assert_int_eq(atomic_load(&destroyed), 1);
    ck_assert_uint_eq(pool_held_bytes(p), 0);
    Inst *b = pool_acquire(p, "k", 100, "k", NULL, err, sizeof err);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(atomic_load(&created), 2); /* a fresh one, not a reset one */
    ck_assert_int_eq(atomic_load(&resets), 0);
    pool_release(p, b, 1);
    ck_assert_int_eq(pool_trim(p), 1);
    ck_assert_uint_eq(pool_held_bytes(p), 0);
    pool_free(p);
}
END_TEST

START_TEST(pool_eviction)
{
    reset_counts();
    Pool *p = pool_new(100, &vt);
    char err[128];
    Inst *a = pool_acquire(p, "a", 40, "a", NULL, err, sizeof err);
    Inst *b = pool_acquire(p, "b", 40, "b", NULL, err, sizeof err);
    pool_release(p, a, 1);                                          /* a idle (older) */
    pool_release(p, b, 1);                                          /* b idle */
    Inst *c = pool_acquire(p, "c", 50, "c", NULL, err, sizeof err); /* 80+50 > 100: evict a */
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(atomic_load(&destroyed), 1);
    PoolStats st;
    pool_stats(p, &st);
    ck_assert_uint_eq(st.evicted, 1);
    ck_assert_int_eq(st.idle, 1);
    Inst *b2 = pool_acquire(p, "b", 40, "b", NULL, err, sizeof err); /* b survived */
    ck_assert_ptr_eq(b2, b);
    ck_assert_uint_le(pool_peak_bytes(p), 100);
    pool_release(p, b2, 1);
    pool_release(p, c, 1);
    pool_free(p);
}
END_TEST

START_TEST(pool_cancel_wait)
{
    Pool *p = pool_new(100, &vt);
    char err[128];
    Inst *a = pool_acquire(p, "x", 80, "x", NULL, err, sizeof err);
    atomic_int cancel = 0;
    Acq q = { p, "y", 50, &cancel, NULL, "", 0 };
    pthread_t th;
    pthread_create(&th, NULL, acquire_thread, &q);
    sleep_ms(50);
    ck_assert_int_eq(atomic_load(&q.done), 0);
    atomic_store(&cancel, 1);
    pthread_join(th, NULL);
    ck_assert_ptr_null(q.got);
    ck_assert_str_eq(q.err, "cancelled while waiting for device memory");
    /* The queue is not stuck behind the cancelled request. */
    pool_release(p, a, 1);
    Inst *b = pool_acquire(p, "z", 90, "z", NULL, err, sizeof err);
    ck_assert_ptr_nonnull(b);
    pool_release(p, b, 1);
    pool_free(p);
}
END_TEST

typedef struct PStress {
    Pool *p;
    int seed;
    atomic_int *bad;
} PStress;

static void *pool_stress_thread(void *arg)
{
    PStress *s = arg;
    static const char *keys[] = { "k0", "k1", "k2", "k3" };
    unsigned r = (unsigned)s->seed * 2654435761u + 1;
    for (int i = 0; i < 300; i++) {
        r = r * 1103515245u + 12345u;
        int k = (int)((r >> 16) % 4);
        char err[128];
        Inst *in = pool_acquire(s->p, keys[k], (size_t)(20 + 10 * k), (void *)keys[k], NULL, err,
                                sizeof err);
        if (!in || strcmp(in->key, keys[k]) != 0 || atomic_exchange(&in->busy, 1)) {
            atomic_fetch_add(s->bad, 1);
            continue;
        }
        if (pool_held_bytes(s->p) > pool_budget(s->p)) atomic_fetch_add(s->bad, 1);
        atomic_store(&in->busy, 0);
        pool_release(s->p, in, (r >> 8) % 5 != 0);
    }
    return NULL;
}

START_TEST(pool_stress)
{
    Pool *p = pool_new(100, &vt);
    atomic_int bad = 0;
    pthread_t th[6];
    PStress s[6];
    for (int i = 0; i < 6; i++) {
        s[i] = (PStress){ p, i, &bad };
        pthread_create(&th[i], NULL, pool_stress_thread, &s[i]);
    }
    for (int i = 0; i < 6; i++) pthread_join(th[i], NULL);
    ck_assert_int_eq(atomic_load(&bad), 0);
    ck_assert_uint_le(pool_peak_bytes(p), 100);
    ck_assert_uint_eq(pool_in_use_bytes(p), 0);
    pool_free(p);
}
END_TEST

/* ================================================================== trace */

/* A minimal JSON validator: enough to say the file parses. */
typedef struct J {
    const char *s;
} J;

static void jws(J *j)
{
    while (*j->s == ' ' || *j->s == '\n' || *j->s == '\t' || *j->s == '\r') j->s++;
}

static int jvalue(J *j, int depth);

static int jstring(J *j)
{
    if (*j->s != '"') return 0;
    j->s++;
    while (*j->s && *j->s != '"') {
        if ((unsigned char)*j->s < 0x20) return 0;
        if (*j->s == '\\') {
            j->s++;
            if (*j->s == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", j->s[i]) || !j->s[i]) return 0;
                j->s += 4;
            } else if (!strchr("\"\\/bfnrt", *j->s) || !*j->s) {
                return 0;
            }
        }
        j->s++;
    }
    if (*j->s != '"') return 0;
    j->s++;
    return 1;
}

static int jnumber(J *j)
{
    char *end;
    strtod(j->s, &end);
    if (end == j->s) return 0;
    j->s = end;
    return 1;
}

static int jvalue(J *j, int depth)
{
    if (depth > 64) return 0;
    jws(j);
    if (*j->s == '{') {
        j->s++;
        jws(j);
        if (*j->s == '}') {
            j->s++;
            return 1;
        }
        for (;;) {
            jws(j);
            if (!jstring(j)) return 0;
            jws(j);
            if (*j->s++ != ':') return 0;
            if (!jvalue(j, depth + 1)) return 0;
            jws(j);
            if (*j->s == ',') {
                j->s++;
                continue;
            }
            if (*j->s++ != '}') return 0;
            return 1;
        }
    }
    if (*j->s == '[') {
        j->s++;
        jws(j);
        if (*j->s == ']') {
            j->s++;
            return 1;
        }
        for (;;) {
            if (!jvalue(j, depth + 1)) return 0;
            jws(j);
            if (*j->s == ',') {
                j->s++;
                continue;
            }
            if (*j->s++ != ']') return 0;
            return 1;
        }
    }
    if (*j->s == '"') return jstring(j);
    if (!strncmp(j->s, "true", 4) || !strncmp(j->s, "null", 4)) {
        j->s += 4;
        return 1;
    }
    if (!strncmp(j->s, "false", 5)) {
        j->s += 5;
        return 1;
    }
    return jnumber(j);
}

static int json_valid(const char *text)
{
    J j = { text };
    if (!jvalue(&j, 0)) return 0;
    jws(&j);
    return *j.s == 0;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
    return n;
}

START_TEST(trace_write_valid)
{
    ck_assert(json_valid("{\"a\":[1,2.5e3,\"x\\\"y\",{}],\"b\":null}"));
    ck_assert(!json_valid("{\"a\":[1,}"));
    ck_assert(!json_valid("{\"a\":\"\n\"}"));

    Trace *tr = trace_new();
    ck_assert(trace_now_us(tr) >= 0);
    trace_thread_name(tr, 0, "main");
    trace_complete(tr, 0, "we\"ird\\name\n\t\x01", "stmt", 1.5, 2.25, NULL);
    trace_complete(tr, 1, "task", "task", 3, 4, "{\"line\":12}");
    trace_flow_start(tr, 0, 7, 1.0);
    trace_flow_end(tr, 1, 7, 3.0);
    trace_instant(tr, 0, "sigint", "ctl", 5);
    ck_assert_uint_eq(trace_count(tr), 6);
    char path[] = "/tmp/qh_trace_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(trace_write(tr, path), 0);
    char *text = slurp(path);
    ck_assert_msg(json_valid(text), "invalid JSON:\n%s", text);
    ck_assert(strncmp(text, "{\"traceEvents\":[", 16) == 0);
    ck_assert_ptr_nonnull(strstr(text, "\"displayTimeUnit\":\"ms\""));
    ck_assert_ptr_nonnull(strstr(text, "we\\\"ird\\\\name\\n\\t\\u0001"));
    ck_assert_ptr_nonnull(strstr(text, "\"args\":{\"line\":12}"));
    ck_assert_int_eq(count_of(text, "\"ph\":\"s\""), 1);
    ck_assert_int_eq(count_of(text, "\"ph\":\"f\",\"bp\":\"e\""), 1);
    ck_assert_int_eq(count_of(text, "\"ph\":\"M\""), 1);
    free(text);
    unlink(path);
    ck_assert_int_eq(trace_write(tr, "/nonexistent-dir/x.json"), -1);
    trace_free(tr);

    /* An empty trace is valid too. */
    tr = trace_new();
    ck_assert_int_eq(trace_write(tr, path), 0);
    text = slurp(path);
    ck_assert(json_valid(text));
    free(text);
    unlink(path);
    trace_free(tr);

    char small[8];
    trace_json_string(small, sizeof small, "abcdefghij");
    ck_assert_str_eq(small, "\"abcde\"");
}
END_TEST

START_TEST(trace_executor)
{
    Trace *tr = trace_new();
    Exec *e = exec_new(2, 8);
    exec_set_trace(e, tr);
    Fut *prev = NULL;
    for (int i = 0; i < 10; i++) {
        Fut *f = exec_submit(e, &(ExecJob){ run_plus1, NULL, NULL, &prev, 1, "q\"fn", 100 + i, 0 });
        fut_release(prev);
        prev = f;
    }
    must_finish(prev);
    fut_release(prev);
    exec_wait_all(e);
    exec_free(e);
    char path[] = "/tmp/qh_trace_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    ck_assert_int_eq(trace_write(tr, path), 0);
    char *text = slurp(path);
    ck_assert_msg(json_valid(text), "invalid JSON:\n%s", text);
    ck_assert_int_eq(count_of(text, "\"name\":\"q\\\"fn\""), 10); /* task slices */
    ck_assert_int_eq(count_of(text, "\"name\":\"submit\""), 10);
    ck_assert_int_eq(count_of(text, "\"ph\":\"s\""), 10);
    ck_assert_int_eq(count_of(text, "\"ph\":\"f\""), 10);
    ck_assert_int_eq(count_of(text, "\"thread_name\""), 3);
    ck_assert_ptr_nonnull(strstr(text, "\"line\":109"));
    if (getenv("QH_KEEP_TRACE"))
        printf("trace kept in %s\n", path);
    else
        unlink(path);
    free(text);
    trace_free(tr);
}
END_TEST

/* ================================================================== suite */

static Suite *exec_suite(void)
{
    Suite *s = suite_create("exec");
    TCase *tf = tcase_create("futures");
    tcase_add_test(tf, fut_complete_basic);
    tcase_add_test(tf, fut_fail_basic);
    tcase_add_test(tf, fut_take_once);
    tcase_add_test(tf, fut_refcounts);
    tcase_add_test(tf, fut_cancel_basic);
    tcase_add_test(tf, fut_user_slot);
    tcase_add_test(tf, fut_wait_across_threads);
    tcase_add_test(tf, fut_retrieved_and_refs);
    suite_add_tcase(s, tf);

    TCase *te = tcase_create("executor");
    tcase_set_timeout(te, 300);
    tcase_add_test(te, exec_many_results);
    tcase_add_test(te, exec_fifo);
    tcase_add_test(te, exec_run_inline_queued);
    tcase_add_test(te, exec_submit_here);
    tcase_add_test(te, exec_chain_forward);
    tcase_add_test(te, exec_chain_reverse_one_worker);
    tcase_add_test(te, exec_diamond);
    tcase_add_test(te, exec_failed_dep);
    tcase_add_test(te, exec_backpressure);
    tcase_add_test(te, exec_cancel_queued_and_running);
    tcase_add_test(te, exec_fut_cancel_queued);
    tcase_add_test(te, exec_interrupt_wakes_wait);
    tcase_add_test(te, exec_interrupt_from_signal);
    tcase_add_test(te, exec_interrupt_unblocks_submit);
    tcase_add_test(te, exec_free_while_running);
    tcase_add_test(te, exec_submit_from_worker);
    tcase_add_test(te, exec_stress);
    tcase_add_test(te, exec_cancel_one_task);
    tcase_add_test(te, exec_pending_names_futures);
    tcase_add_test(te, exec_remote_only_flagged);
    tcase_add_test(te, exec_remote_takes_work_while_workers_busy);
    tcase_add_test(te, exec_remote_slot_gone);
    tcase_add_test(te, exec_remote_cancel);
    suite_add_tcase(s, te);

    TCase *tp = tcase_create("pool");
    tcase_set_timeout(tp, 300);
    tcase_add_test(tp, pool_reuse);
    tcase_add_test(tp, pool_nested);
    tcase_add_test(tp, pool_budget_waits);
    tcase_add_test(tp, pool_too_big);
    tcase_add_test(tp, pool_dirty_release);
    tcase_add_test(tp, pool_eviction);
    tcase_add_test(tp, pool_cancel_wait);
    tcase_add_test(tp, pool_stress);
    suite_add_tcase(s, tp);

    TCase *tt = tcase_create("trace");
    tcase_set_timeout(tt, 300);
    tcase_add_test(tt, trace_write_valid);
    tcase_add_test(tt, trace_executor);
    suite_add_tcase(s, tt);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(exec_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
