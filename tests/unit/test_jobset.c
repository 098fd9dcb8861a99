/* test_jobset.c — Check unit tests of job sets (src/exec/jobset.h): items
 * shared between an owner task and helpers on idle workers; every item runs
 * exactly once, results do not depend on who ran them, nested items, the
 * owner helping while it waits, failures, a pool with no idle worker.
 * Sleeps only let things overlap; nothing asserts that it was fast.
 * Knows nothing of the language. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec.h"
#include "jobset.h"

#define LONG_WAIT 60.0

static void sleep_ms(double ms)
{
    struct timespec ts = { (time_t)(ms / 1000),
                           (long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6) };
    nanosleep(&ts, NULL);
}

typedef struct Ctx {
    JobSet *js; /* set by the owner after jobset_new */
    atomic_int runs[256];
    long result[256];
    int ran_by_helper[256];
    int fail_at; /* item that fails, or -1 */
    int nested;  /* items < nested add and finish two sub-items */
    atomic_int helpers_begun, helpers_ended;
    atomic_int helpers_active, helpers_most; /* helpers between begin and end: now, at most */
    atomic_int freed;
    double item_ms;
} Ctx;

static void *begin(void *p, ExecTask *t)
{
    (void)t;
    Ctx *c = p;
    atomic_fetch_add(&c->helpers_begun, 1);
    int now = atomic_fetch_add(&c->helpers_active, 1) + 1;
    int most = atomic_load(&c->helpers_most);
    while (now > most && !atomic_compare_exchange_weak(&c->helpers_most, &most, now)) {}
    return (void *)1; /* a helper's "state" */
}

static void end(void *p, void *state)
{
    Ctx *c = p;
    ck_assert(state == (void *)1);
    atomic_fetch_sub(&c->helpers_active, 1);
    atomic_fetch_add(&c->helpers_ended, 1);
}

static int run(void *p, void *state, int i)
{
    Ctx *c = p;
    atomic_fetch_add(&c->runs[i], 1);
    c->ran_by_helper[i] = state == (void *)1;
    if (c->item_ms > 0) sleep_ms(c->item_ms);
    if (i == c->fail_at) {
        jobset_fail(c->js, "item failed on purpose");
        return -1;
    }
    long r = (long)i * i + 7;
    if (i < c->nested) { /* sub-items, finished here (by this runner or a helper) */
        int a = jobset_add(c->js), b = jobset_add(c->js);
        ck_assert(a >= 0 && b >= 0);
        if (jobset_finish(c->js, a, state) != 0 || jobset_finish(c->js, b, state) != 0) return -1;
        r += c->result[a] + c->result[b];
    }
    c->result[i] = r;
    return 0;
}

static void free_ctx(void *p) { atomic_fetch_add(&((Ctx *)p)->freed, 1); }

static const JobSetVt vt = { begin, end, run, free_ctx };

static void ctx_init(Ctx *c)
{
    memset(c, 0, sizeof *c);
    c->fail_at = -1;
}

/* The owner's work, as it runs inside a task or on the calling thread. */
typedef struct Owner {
    Exec *e;
    Ctx *c;
    int n;
    int helpers;
    int rc;
} Owner;

static void owner_body(Owner *o)
{
    Ctx *c = o->c;
    c->js = jobset_new(o->e, &vt, c, o->helpers, "job", 1);
    ck_assert_ptr_nonnull(c->js);
    for (int i = 0; i < o->n; i++) ck_assert_int_eq(jobset_add(c->js), i);
    /* need a middle one first: claimed here, or waited for while helping */
    int rc = jobset_finish(c->js, o->n / 2, NULL);
    if (rc == 0) rc = jobset_finish_all(c->js, NULL);
    o->rc = rc;
    jobset_release(c->js);
}

static void owner_task(void *p, ExecTask *t)
{
    owner_body(p);
    exec_task_done(t, NULL, NULL);
}

START_TEST(test_no_executor)
{
    Ctx c;
    ctx_init(&c);
    Owner o = { NULL, &c, 40, 4, -1 };
    owner_body(&o);
    ck_assert_int_eq(o.rc, 0);
    for (int i = 0; i < 40; i++) {
        ck_assert_int_eq(atomic_load(&c.runs[i]), 1);
        ck_assert_int_eq(c.result[i], (long)i * i + 7);
        ck_assert(!c.ran_by_helper[i]);
    }
    ck_assert_int_eq(atomic_load(&c.freed), 1);
}
END_TEST

START_TEST(test_helpers_share)
{
    Exec *e = exec_new(3, 64);
    Ctx c;
    ctx_init(&c);
    c.item_ms = 2;
    Owner o = { e, &c, 60, 2, -1 };
    Fut *f = exec_submit(e, &(ExecJob){ owner_task, &o, NULL, NULL, 0, "owner", 1, 0 });
    ck_assert_int_eq(fut_wait_timeout(f, LONG_WAIT), FUT_DONE);
    fut_release(f);
    exec_wait_all(e);
    ck_assert_int_eq(o.rc, 0);
    int by_helper = 0;
    for (int i = 0; i < 60; i++) {
        ck_assert_int_eq(atomic_load(&c.runs[i]), 1);
        ck_assert_int_eq(c.result[i], (long)i * i + 7);
        by_helper += c.ran_by_helper[i];
    }
    ck_assert_msg(by_helper > 0, "no item ran on a helper");
    ck_assert_int_eq(atomic_load(&c.helpers_begun), atomic_load(&c.helpers_ended));
    /* at most max_helpers at a time; a helper that found the queue empty
       ends, and a later jobset_add may start another */
    ck_assert_int_le(atomic_load(&c.helpers_most), 2);
    ck_assert_int_eq(atomic_load(&c.freed), 1);
    exec_free(e);
}
END_TEST

START_TEST(test_nested)
{
    /* items add sub-items while they run and finish them: every item once,
       each result complete */
    Exec *e = exec_new(3, 64);
    Ctx c;
    ctx_init(&c);
    c.nested = 8;
    c.item_ms = 1;
    Owner o = { e, &c, 10, 2, -1 };
    Fut *f = exec_submit(e, &(ExecJob){ owner_task, &o, NULL, NULL, 0, "owner", 1, 0 });
    ck_assert_int_eq(fut_wait_timeout(f, LONG_WAIT), FUT_DONE);
    fut_release(f);
    exec_wait_all(e);
    ck_assert_int_eq(o.rc, 0);
    int total = 10 + 2 * 8;
    for (int i = 0; i < total; i++) ck_assert_int_eq(atomic_load(&c.runs[i]), 1);
    for (int i = 8; i < total; i++) ck_assert_int_eq(c.result[i], (long)i * i + 7);
    for (int i = 0; i < 8; i++) { /* sub-items of i are, in some order, two items >= 10 */
        long sub = c.result[i] - ((long)i * i + 7);
        ck_assert(sub >= 2 * (10 * 10 + 7));
    }
    exec_free(e);
}
END_TEST

START_TEST(test_failure)
{
    Exec *e = exec_new(2, 64);
    Ctx c;
    ctx_init(&c);
    c.fail_at = 5;
    c.item_ms = 1;
    Owner o = { e, &c, 30, 1, 0 };
    Fut *f = exec_submit(e, &(ExecJob){ owner_task, &o, NULL, NULL, 0, "owner", 1, 0 });
    ck_assert_int_eq(fut_wait_timeout(f, LONG_WAIT), FUT_DONE);
    fut_release(f);
    exec_wait_all(e);
    ck_assert_int_eq(o.rc, -1);
    for (int i = 0; i < 30; i++) ck_assert(atomic_load(&c.runs[i]) <= 1);
    ck_assert_int_eq(atomic_load(&c.freed), 1);
    exec_free(e);
}
END_TEST

START_TEST(test_no_idle_worker)
{
    /* one worker, taken by the owner: no helper can start, the owner runs
       everything and never waits */
    Exec *e = exec_new(1, 64);
    Ctx c;
    ctx_init(&c);
    Owner o = { e, &c, 20, 4, -1 };
    Fut *f = exec_submit(e, &(ExecJob){ owner_task, &o, NULL, NULL, 0, "owner", 1, 0 });
    ck_assert_int_eq(fut_wait_timeout(f, LONG_WAIT), FUT_DONE);
    fut_release(f);
    exec_wait_all(e);
    ck_assert_int_eq(o.rc, 0);
    for (int i = 0; i < 20; i++) ck_assert(!c.ran_by_helper[i]);
    ck_assert_int_eq(atomic_load(&c.helpers_begun), 0);
    exec_free(e);
}
END_TEST

static Suite *jobset_suite(void)
{
    Suite *s = suite_create("jobset");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_no_executor);
    tcase_add_test(tc, test_helpers_share);
    tcase_add_test(tc, test_nested);
    tcase_add_test(tc, test_failure);
    tcase_add_test(tc, test_no_idle_worker);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(jobset_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
