/* jobset.c — items shared between their owner and helper tasks
 * (jobset.h). One mutex guards the item states; a condition variable
 * wakes owners waiting for running items. Helpers are executor tasks that
 * claim queued items until none is left. Must not know about values.
 */
#include "jobset.h"
#include "qh_assert.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum { J_QUEUED, J_RUNNING, J_DONE, J_FAILED };

struct JobSet {
    atomic_int refs;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned char *st; /* item states */
    int n, cap;
    int next;    /* no queued item below this index */
    int helpers; /* helper tasks started and not yet returned */
    int max_helpers;
    int failed;
    char err[1024];
    Exec *e;
    const JobSetVt *vt;
    void *ctx;
    char label[48];
    int line;
};

static void js_unref(JobSet *js)
{
    int old = atomic_fetch_sub_explicit(&js->refs, 1, memory_order_acq_rel);
    qh_assert(old > 0);
    if (old != 1) return;
    if (js->vt->free_ctx) js->vt->free_ctx(js->ctx);
    pthread_mutex_destroy(&js->mu);
    pthread_cond_destroy(&js->cv);
    free(js->st);
    free(js);
}

JobSet *jobset_new(Exec *e, const JobSetVt *vt, void *ctx, int max_helpers, const char *label,
                   int line)
{
    JobSet *js = calloc(1, sizeof *js);
    if (!js) return NULL;
    atomic_init(&js->refs, 1);
    pthread_mutex_init(&js->mu, NULL);
    pthread_cond_init(&js->cv, NULL);
    js->e = e;
    js->vt = vt;
    js->ctx = ctx;
    js->max_helpers = e ? max_helpers : 0;
    js->line = line;
    if (label) { strncpy(js->label, label, sizeof js->label - 1); }
    return js;
}

/* The first queued item at or after js->next, claimed; -1 if none (or the
   set failed). Called with the lock held. */
static int claim(JobSet *js)
{
    if (js->failed) return -1;
    while (js->next < js->n && js->st[js->next] != J_QUEUED) js->next++;
    if (js->next >= js->n) return -1;
    int i = js->next++;
    qh_assert(js->st[i] == J_QUEUED); /* an item is claimed once */
    js->st[i] = J_RUNNING;
    return i;
}

/* Runs item i (claimed by the caller) and publishes its outcome. */
static void run_item(JobSet *js, int i, void *state)
{
    int rc = js->vt->run(js->ctx, state, i);
    pthread_mutex_lock(&js->mu);
    qh_assert(i >= 0 && i < js->n && js->st[i] == J_RUNNING); /* its claimer ends it */
    js->st[i] = rc == 0 ? J_DONE : J_FAILED;
    if (rc != 0 && !js->failed) {
        js->failed = 1;
        if (!js->err[0]) strcpy(js->err, "a gradient job failed");
    }
    pthread_cond_broadcast(&js->cv);
    pthread_mutex_unlock(&js->mu);
}

static void helper_run(void *p, ExecTask *t)
{
    JobSet *js = p;
    void *state = js->vt->begin ? js->vt->begin(js->ctx, t) : NULL;
    for (;;) {
        if (exec_task_cancelled(t)) break;
        pthread_mutex_lock(&js->mu);
        int i = claim(js);
        pthread_mutex_unlock(&js->mu);
        if (i < 0) break;
        run_item(js, i, state);
    }
    if (js->vt->end) js->vt->end(js->ctx, state);
    pthread_mutex_lock(&js->mu);
    qh_assert(js->helpers > 0);
    js->helpers--;
    pthread_cond_broadcast(&js->cv);
    pthread_mutex_unlock(&js->mu);
    exec_task_done(t, NULL, NULL);
}

static void helper_release(void *p) { js_unref(p); }

int jobset_add(JobSet *js)
{
    pthread_mutex_lock(&js->mu);
    if (js->n == js->cap) {
        int cap = js->cap ? js->cap * 2 : 16;
        unsigned char *st = realloc(js->st, (size_t)cap);
        if (!st) {
            pthread_mutex_unlock(&js->mu);
            return -1;
        }
        js->st = st;
        js->cap = cap;
    }
    qh_assert(js->n < js->cap && js->next <= js->n);
    int i = js->n++;
    js->st[i] = J_QUEUED;
    int spawn = js->helpers < js->max_helpers && exec_busy_workers(js->e) < exec_nworkers(js->e);
    if (spawn) js->helpers++;
    pthread_mutex_unlock(&js->mu);
    if (spawn) {
        atomic_fetch_add(&js->refs, 1);
        Fut *f = exec_submit(
            js->e, &(ExecJob){ helper_run, js, helper_release, NULL, 0, js->label, js->line, 0 });
        if (f)
            fut_release(f);
        else { /* not started: exec_submit already dropped its reference through helper_release */
            pthread_mutex_lock(&js->mu);
            js->helpers--;
            pthread_mutex_unlock(&js->mu);
        }
    }
    return i;
}

int jobset_count(JobSet *js)
{
    pthread_mutex_lock(&js->mu);
    int n = js->n;
    pthread_mutex_unlock(&js->mu);
    return n;
}

int jobset_finish(JobSet *js, int item, void *state)
{
    pthread_mutex_lock(&js->mu);
    for (;;) {
        if (item < 0 || item >= js->n) {
            pthread_mutex_unlock(&js->mu);
            return -1;
        }
        int s = js->st[item];
        if (s == J_DONE) {
            pthread_mutex_unlock(&js->mu);
            return js->failed ? -1 : 0;
        }
        if (s == J_FAILED || (js->failed && s == J_QUEUED)) {
            pthread_mutex_unlock(&js->mu);
            return -1;
        }
        int i;
        if (s == J_QUEUED) { /* nobody has it: run it here */
            js->st[item] = J_RUNNING;
            i = item;
        } else if ((i = claim(js)) < 0) { /* running elsewhere: help meanwhile, or wait */
            pthread_cond_wait(&js->cv, &js->mu);
            continue;
        }
        pthread_mutex_unlock(&js->mu);
        run_item(js, i, state);
        pthread_mutex_lock(&js->mu);
    }
}

int jobset_finish_all(JobSet *js, void *state)
{
    pthread_mutex_lock(&js->mu);
    for (;;) {
        int i = claim(js);
        if (i >= 0) {
            pthread_mutex_unlock(&js->mu);
            run_item(js, i, state);
            pthread_mutex_lock(&js->mu);
            continue;
        }
        int busy = 0;
        for (int k = 0; k < js->n; k++) busy |= js->st[k] == J_RUNNING;
        if (!busy) break;
        pthread_cond_wait(&js->cv, &js->mu);
    }
    int rc = js->failed ? -1 : 0;
    pthread_mutex_unlock(&js->mu);
    return rc;
}

void jobset_fail(JobSet *js, const char *msg)
{
    pthread_mutex_lock(&js->mu);
    if (!js->err[0] && msg) {
        strncpy(js->err, msg, sizeof js->err - 1);
        js->err[sizeof js->err - 1] = 0;
    }
    js->failed = 1;
    pthread_cond_broadcast(&js->cv);
    pthread_mutex_unlock(&js->mu);
}

const char *jobset_error(JobSet *js) { return js->err; }

void jobset_release(JobSet *js)
{
    if (!js) return;
    /* queued items of a failed set are never run; running ones finish on
       their helpers, which hold their own references */
    js_unref(js);
}
