/* test_gc.c — Check unit tests of the cycle collector (src/gc.c, value.h
 * "cycle collection"): unreachable cycles of lists, dicts and cells are
 * freed, anything held from outside (a C reference, an old object, an
 * untracked copy) survives with its contents intact, old cycles go at a
 * full collection or by allocation pressure, a million-deep chain is
 * collected without recursion, and heaps are per thread: a copy made
 * untracked for another thread is adopted and collected there, and a
 * collection on one thread never touches another thread's objects. */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>

#include "value.h"

static unsigned long freed_now(void)
{
    ValueGcStats s;
    value_gc_stats(&s);
    return s.freed;
}

static size_t tracked_now(void)
{
    ValueGcStats s;
    value_gc_stats(&s);
    return s.tracked;
}

/* a list holding itself (and a number), the caller's reference returned */
static ObjList *self_list(void)
{
    ObjList *l = list_new(0);
    list_push(l, v_num(1));
    Value v = v_list(l);
    incref(v);
    list_push(l, v);
    return l;
}

START_TEST(unreachable_cycles_are_freed)
{
    value_gc_collect(true);
    unsigned long f0 = freed_now();
    size_t t0 = tracked_now();
    for (int i = 0; i < 100; i++) decref(v_list(self_list()));
    /* dict <-> list <-> cell */
    ObjDict *d = dict_new();
    ObjList *l = list_new(0);
    incref(v_obj(&d->h));
    ObjCell *c = cell_new(v_obj(&d->h)); /* takes that reference */
    list_push(l, v_obj(&c->h));
    Value key = v_str("l");
    dict_set(d, key, v_list(l)); /* increfs both */
    decref(key);
    decref(v_list(l));
    decref(v_obj(&d->h));
    ck_assert_uint_eq(tracked_now(), t0 + 103);
    value_gc_collect(false);
    ck_assert_uint_eq(freed_now(), f0 + 103);
    ck_assert_uint_eq(tracked_now(), t0);
}
END_TEST

START_TEST(held_cycles_survive)
{
    ObjList *l = self_list(); /* our reference keeps it */
    ObjList *inner = self_list();
    list_push(l, v_list(inner)); /* reachable only through l */
    ObjStr *s = str_from("kept");
    list_push(inner, v_obj(&s->h));
    value_gc_collect(true);
    value_gc_collect(true);
    ck_assert_uint_eq(l->len, 3);
    ck_assert_uint_eq(inner->len, 3);
    ck_assert_str_eq(AS_STR(inner->v[2])->s, "kept");
    ck_assert_int_eq(l->h.rc, 2); /* ours and its own */
    unsigned long f0 = freed_now();
    decref(v_list(l));
    value_gc_collect(true);
    ck_assert_uint_eq(freed_now(), f0 + 2);
}
END_TEST

START_TEST(old_cycles_go_at_a_full_collection)
{
    ObjList *l = self_list();
    value_gc_collect(false); /* survives: now old */
    unsigned long f0 = freed_now();
    decref(v_list(l));
    value_gc_collect(false); /* young only: not seen */
    ck_assert_uint_eq(freed_now(), f0);
    value_gc_collect(true);
    ck_assert_uint_eq(freed_now(), f0 + 1);
}
END_TEST

START_TEST(allocation_pressure_bounds_garbage)
{
    value_gc_collect(true);
    size_t t0 = tracked_now();
    for (int i = 0; i < 1000000; i++) decref(v_list(self_list()));
    /* collections ran on their own: only the last batch can be left */
    ck_assert_msg(tracked_now() < t0 + 20000, "%zu objects still tracked", tracked_now() - t0);
    value_gc_collect(true);
    ck_assert_uint_eq(tracked_now(), t0);
}
END_TEST

START_TEST(deep_chain_without_recursion)
{
    /* a million lists, each holding the next, the last holding the first */
    ObjList *first = list_new(0), *cur = first;
    for (int i = 0; i < 1000000; i++) {
        ObjList *n = list_new(0);
        list_push(cur, v_list(n)); /* cur takes n's reference */
        cur = n;
    }
    incref(v_list(first));
    list_push(cur, v_list(first));
    unsigned long f0 = freed_now();
    decref(v_list(first));
    value_gc_collect(true);
    ck_assert_uint_eq(freed_now(), f0 + 1000001);
}
END_TEST

/* ---- threads ---- */

typedef struct Hand {
    Value v;
    unsigned long freed;
    size_t tracked_before, tracked_after;
} Hand;

/* adopts a copy made for it, checks it is tracked here, drops it, collects */
static void *adopt_thread(void *p)
{
    Hand *h = p;
    size_t t0 = tracked_now();
    value_track_adopt(h->v);
    h->tracked_before = tracked_now() - t0;
    unsigned long f0 = freed_now();
    decref(h->v);
    value_gc_collect(true);
    h->freed = freed_now() - f0;
    h->tracked_after = tracked_now() - t0;
    value_gc_thread_end();
    return NULL;
}

START_TEST(untracked_copies_are_adopted)
{
    bool was = value_track_pause();
    size_t t0 = tracked_now();
    ObjList *l = self_list(); /* made for the other thread */
    ObjDict *d = dict_new();
    Value key = v_str("back");
    dict_set(d, key, v_list(l));
    decref(key);
    list_push(l, v_obj(&d->h)); /* l <-> d, l -> l */
    value_track_resume(was);
    ck_assert_uint_eq(tracked_now(), t0); /* not in this thread's heap */
    Hand h = { v_list(l), 0, 0, 0 };
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, adopt_thread, &h), 0);
    pthread_join(t, NULL);
    ck_assert_uint_eq(h.tracked_before, 2);
    ck_assert_uint_eq(h.freed, 2);
    ck_assert_uint_eq(h.tracked_after, 0);
}
END_TEST

/* makes cycles here and keeps one alive while the main thread collects */
typedef struct Own {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stage;
    size_t len_after;
} Own;

static void *owner_thread(void *p)
{
    Own *o = p;
    ObjList *kept = self_list();
    for (int i = 0; i < 10; i++) decref(v_list(self_list()));
    pthread_mutex_lock(&o->mu);
    o->stage = 1;
    pthread_cond_broadcast(&o->cv);
    while (o->stage != 2) pthread_cond_wait(&o->cv, &o->mu);
    pthread_mutex_unlock(&o->mu);
    value_gc_collect(true);
    o->len_after = kept->len;
    decref(v_list(kept));
    value_gc_thread_end(); /* collects and forgets the rest */
    return NULL;
}

START_TEST(heaps_are_per_thread)
{
    Own o = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, owner_thread, &o), 0);
    pthread_mutex_lock(&o.mu);
    while (o.stage != 1) pthread_cond_wait(&o.cv, &o.mu);
    pthread_mutex_unlock(&o.mu);
    unsigned long f0 = freed_now();
    size_t t0 = tracked_now();
    value_gc_collect(true); /* this thread's heap only */
    ck_assert_uint_eq(freed_now(), f0);
    ck_assert_uint_eq(tracked_now(), t0);
    pthread_mutex_lock(&o.mu);
    o.stage = 2;
    pthread_cond_broadcast(&o.cv);
    pthread_mutex_unlock(&o.mu);
    pthread_join(t, NULL);
    ck_assert_uint_eq(o.len_after, 2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gc");
    TCase *tc = tcase_create("collector");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, unreachable_cycles_are_freed);
    tcase_add_test(tc, held_cycles_survive);
    tcase_add_test(tc, old_cycles_go_at_a_full_collection);
    tcase_add_test(tc, allocation_pressure_bounds_garbage);
    tcase_add_test(tc, deep_chain_without_recursion);
    tcase_add_test(tc, untracked_copies_are_adopted);
    tcase_add_test(tc, heaps_are_per_thread);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK); /* one process: the heaps are per thread */
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
