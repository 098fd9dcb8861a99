/* pool.c — keyed instances under a byte budget (pool.h).
 *
 * Accounting: `held` is the bytes of every instance that exists or is
 * being made or destroyed; it never exceeds the budget, except by what
 * nested requests (pool_acquire_nested) hold while they hold it. A creator reserves
 * its bytes before calling vt->create (outside the lock) and gives them
 * back if creation fails; an evicted or dropped instance stays counted
 * until vt->destroy has returned, so the budget bounds real memory, not
 * just bookkeeping.
 *
 * Fairness: requests that need new memory queue in arrival order and only
 * the head may create or evict, so a large request is not starved by a
 * stream of small ones. Reusing an idle instance of one's own key adds no
 * memory and skips the queue.
 *
 * Must not know: what an instance is, the executor, the language. */
#include "pool.h"
#include "memlimit.h"
#include "qh_assert.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct Entry {
    struct Entry *prev, *next; /* least recently released first */
    char *key;
    size_t bytes;
    void *inst;
    int in_use;
} Entry;

typedef struct Req {
    struct Req *next;
} Req;

struct Pool {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* something was released, destroyed or dequeued */
    PoolVt vt;
    size_t budget, held, in_use, peak;
    Entry *head, *tail;
    Req *qhead, *qtail; /* requests waiting to create, FIFO */
    PoolStats st;
};

/* Why: condvar timeouts on the monotonic clock, like the executor's. */
static void deadline_ms(struct timespec *ts, long ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_nsec += ms * 1000000L;
    ts->tv_sec += ts->tv_nsec / 1000000000L;
    ts->tv_nsec %= 1000000000L;
}

/* Why: errors name sizes the way people read them. */
char *pool_format_bytes(char *buf, size_t cap, size_t bytes)
{
    static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%zu B", bytes);
    else
        snprintf(buf, cap, "%.1f %s", v, unit[u]);
    return buf;
}

/* Why: the default budget: half of what we may use (the tightest limit of
 * our own cgroup and its ancestors, else physical memory), so a
 * statevector request that does not fit is an error or a wait, not an OOM
 * kill. */
size_t pool_default_budget(void)
{
    MemLimit m;
    mem_limit(&m);
    uint64_t half = m.bytes / 2;
    return half < (uint64_t)SIZE_MAX ? (size_t)half : SIZE_MAX;
}

/* Why: one pool per program (or per test); vt tells it how to make,
 * reset and drop an instance it otherwise knows nothing about. */
Pool *pool_new(size_t budget_bytes, const PoolVt *vt)
{
    Pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &a);
    pthread_condattr_destroy(&a);
    p->vt = *vt;
    p->budget = budget_bytes ? budget_bytes : pool_default_budget();
    return p;
}

/* Why: program exit; destroys whatever is left. */
void pool_free(Pool *p)
{
    if (!p) return;
    Entry *e = p->head;
    while (e) {
        Entry *next = e->next;
        if (p->vt.destroy) p->vt.destroy(e->inst);
        free(e->key);
        free(e);
        e = next;
    }
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* Why: the entry list doubles as the LRU order for eviction. */
static void unlink_entry(Pool *p, Entry *e)
{
    qh_assert(e->prev ? e->prev->next == e : p->head == e); /* on the list, linked both ways */
    qh_assert(e->next ? e->next->prev == e : p->tail == e);
    if (e->prev)
        e->prev->next = e->next;
    else
        p->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        p->tail = e->prev;
    e->prev = e->next = NULL;
}

/* Why: most recently released (or created) goes last. */
static void append_entry(Pool *p, Entry *e)
{
    qh_assert(!e->prev && !e->next && e != p->head); /* on no list yet */
    e->next = NULL;
    e->prev = p->tail;
    if (p->tail)
        p->tail->next = e;
    else
        p->head = e;
    p->tail = e;
}

/* Why: a request leaves the FIFO of creators (served, failed or
 * cancelled); the next one may now be head. */
static void dequeue(Pool *p, Req *r)
{
    Req **pp = &p->qhead;
    while (*pp && *pp != r) pp = &(*pp)->next;
    if (!*pp) return;
    *pp = r->next;
    if (p->qtail == r) {
        p->qtail = NULL;
        for (Req *q = p->qhead; q; q = q->next) p->qtail = q;
    }
    pthread_cond_broadcast(&p->cv); /* the next head may proceed */
}

/* Why: destroying takes time and must not hold the lock; the bytes stay
 * counted until it is done. */
static void destroy_unlocked(Pool *p, Entry *list)
{
    size_t freed = 0;
    int n = 0;
    while (list) {
        Entry *next = list->next;
        if (p->vt.destroy) p->vt.destroy(list->inst);
        freed += list->bytes;
        n++;
        free(list->key);
        free(list);
        list = next;
    }
    pthread_mutex_lock(&p->mu);
    qh_assert(freed <= p->held && p->in_use <= p->held); /* counted until destroyed */
    p->held -= freed;
    p->st.destroyed += (unsigned long)n;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* Why: err may be NULL. */
static void set_err(char *err, size_t errlen, const char *msg)
{
    if (err && errlen) snprintf(err, errlen, "%s", msg);
}

/* Why: both acquire paths first look for an idle instance of the key, most
 * recently released first. Under the lock; marks it in use. */
static Entry *take_idle(Pool *p, const char *key)
{
    for (Entry *e = p->tail; e; e = e->prev)
        if (!e->in_use && strcmp(e->key, key) == 0) {
            e->in_use = 1;
            p->in_use += e->bytes;
            qh_assert(p->in_use <= p->held);
            p->st.reused++;
            return e;
        }
    return NULL;
}

/* Why: making room. Under the lock: unlinks idle instances, least recently
 * used first, until bytes more fit in the budget or none is left; returns
 * them for destroy_unlocked (their bytes stay counted until then). */
static Entry *unlink_victims(Pool *p, size_t bytes)
{
    Entry *victims = NULL, **vt = &victims;
    size_t gone = 0;
    for (Entry *e = p->head, *next; e && p->held - gone + bytes > p->budget; e = next) {
        next = e->next;
        if (e->in_use) continue;
        unlink_entry(p, e);
        gone += e->bytes;
        *vt = e;
        vt = &e->next;
        p->st.evicted++;
    }
    return victims;
}

/* Why: the bytes are reserved (p->held counts them) and the lock is not
 * held: creating takes time. Creates the instance and records it in use,
 * or gives the reservation back and fails. */
static void *create_reserved(Pool *p, const char *key, size_t bytes, void *create_arg, char *err,
                             size_t errlen)
{
    void *inst = p->vt.create(create_arg, err, errlen);
    pthread_mutex_lock(&p->mu);
    if (!inst) {
        qh_assert(bytes <= p->held); /* the reservation */
        p->held -= bytes;
        p->st.failed++;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        if (err && errlen && !err[0])
            snprintf(err, errlen, "could not create an instance for %s", key);
        return NULL;
    }
    Entry *e = calloc(1, sizeof *e);
    char *k = strdup(key);
    if (!e || !k) abort();
    e->key = k;
    e->bytes = bytes;
    e->inst = inst;
    e->in_use = 1;
    append_entry(p, e);
    p->in_use += bytes;
    p->st.created++;
    pthread_mutex_unlock(&p->mu);
    return inst;
}

/* Why: the heart of the device pool; see pool.h for the contract and the
 * file comment for the accounting. */
void *pool_acquire(Pool *p, const char *key, size_t bytes, void *create_arg,
                   const atomic_int *cancel, char *err, size_t errlen)
{
    if (err && errlen) err[0] = 0;
    if (bytes > p->budget) {
        char a[32], b[32];
        if (err && errlen)
            snprintf(err, errlen, "needs %s, budget is %s", pool_format_bytes(a, sizeof a, bytes),
                     pool_format_bytes(b, sizeof b, p->budget));
        pthread_mutex_lock(&p->mu);
        p->st.failed++;
        pthread_mutex_unlock(&p->mu);
        return NULL;
    }
    Req me = { NULL };
    bool queued = false, waited = false;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (cancel && atomic_load_explicit(cancel, memory_order_relaxed)) {
            if (queued) dequeue(p, &me);
            p->st.failed++;
            pthread_mutex_unlock(&p->mu);
            set_err(err, errlen, "cancelled while waiting for device memory");
            return NULL;
        }
        /* 1. An idle instance of the same key: most recently released. */
        Entry *hit = take_idle(p, key);
        if (hit) {
            if (queued) dequeue(p, &me);
            pthread_mutex_unlock(&p->mu);
            if (p->vt.reset) p->vt.reset(hit->inst);
            return hit->inst;
        }
        if (!queued) {
            if (p->qtail)
                p->qtail->next = &me;
            else
                p->qhead = &me;
            p->qtail = &me;
            queued = true;
        }
        if (p->qhead == &me) {
            /* 2. Fits: reserve and create. */
            if (p->held + bytes <= p->budget) {
                p->held += bytes;
                if (p->held > p->peak) p->peak = p->held;
                dequeue(p, &me);
                pthread_mutex_unlock(&p->mu);
                return create_reserved(p, key, bytes, create_arg, err, errlen);
            }
            /* 3. Fits once idle instances (of other keys: none of ours is
             * idle) are gone: evict the least recently used, then retry. */
            size_t idle = 0;
            for (Entry *e = p->head; e; e = e->next)
                if (!e->in_use) idle += e->bytes;
            if (idle && p->held - idle + bytes <= p->budget) {
                Entry *victims = unlink_victims(p, bytes);
                pthread_mutex_unlock(&p->mu);
                destroy_unlocked(p, victims); /* still head: nobody takes the room */
                pthread_mutex_lock(&p->mu);
                continue;
            }
        }
        /* 4. Wait for a release (or our turn). */
        if (!waited) {
            waited = true;
            p->st.waited++;
        }
        if (cancel) {
            struct timespec dl;
            deadline_ms(&dl, 10);
            pthread_cond_timedwait(&p->cv, &p->mu, &dl);
        } else {
            pthread_cond_wait(&p->cv, &p->mu);
        }
    }
}

/* Why: a nested call must not wait for memory its own caller holds (the
 * caller cannot release it before the nested call ends: a wait could last
 * for ever). It takes an idle instance of its key, else creates one at
 * once, evicting idle instances to stay within the budget where it can and
 * going past it (by at most what the calls running now hold) where it
 * cannot; it fails at once only if its chain alone exceeds the budget. */
void *pool_acquire_nested(Pool *p, const char *key, size_t bytes, void *create_arg,
                          size_t chain_bytes, char *err, size_t errlen)
{
    if (err && errlen) err[0] = 0;
    pthread_mutex_lock(&p->mu);
    if (bytes > p->budget || chain_bytes + bytes > p->budget) {
        p->st.failed++;
        pthread_mutex_unlock(&p->mu);
        char a[32], b[32], c[32];
        if (err && errlen)
            snprintf(
                err, errlen, "needs %s on top of the %s its callers hold, and the budget is %s",
                pool_format_bytes(a, sizeof a, bytes), pool_format_bytes(b, sizeof b, chain_bytes),
                pool_format_bytes(c, sizeof c, p->budget));
        return NULL;
    }
    Entry *hit = take_idle(p, key);
    if (hit) {
        pthread_mutex_unlock(&p->mu);
        if (p->vt.reset) p->vt.reset(hit->inst);
        return hit->inst;
    }
    Entry *victims = unlink_victims(p, bytes);
    p->held += bytes;
    if (p->held > p->peak) p->peak = p->held;
    pthread_mutex_unlock(&p->mu);
    if (victims) destroy_unlocked(p, victims);
    return create_reserved(p, key, bytes, create_arg, err, errlen);
}

/* Why: a finished task hands its instance back: kept for reuse if the
 * task ended cleanly, destroyed otherwise. */
void pool_release(Pool *p, void *inst, int clean)
{
    if (!inst) return;
    pthread_mutex_lock(&p->mu);
    Entry *e = p->head;
    while (e && e->inst != inst) e = e->next;
    if (!e || !e->in_use) {
        pthread_mutex_unlock(&p->mu);
        return; /* not ours, or released twice: ignore */
    }
    qh_assert(e->bytes <= p->in_use);
    e->in_use = 0;
    p->in_use -= e->bytes;
    unlink_entry(p, e);
    if (clean) {
        append_entry(p, e); /* most recently used last */
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        return;
    }
    pthread_mutex_unlock(&p->mu);
    destroy_unlocked(p, e);
}

/* Why: give memory back (e.g. before a big classical computation). */
int pool_trim(Pool *p)
{
    Entry *victims = NULL, **vt = &victims;
    int n = 0;
    pthread_mutex_lock(&p->mu);
    for (Entry *e = p->head, *next; e; e = next) {
        next = e->next;
        if (e->in_use) continue;
        unlink_entry(p, e);
        *vt = e;
        vt = &e->next;
        n++;
    }
    pthread_mutex_unlock(&p->mu);
    if (victims) destroy_unlocked(p, victims);
    return n;
}

/* Why: --stats and tests read the accounting under the lock. */
size_t pool_in_use_bytes(Pool *p)
{
    pthread_mutex_lock(&p->mu);
    size_t v = p->in_use;
    pthread_mutex_unlock(&p->mu);
    return v;
}

size_t pool_held_bytes(Pool *p)
{
    pthread_mutex_lock(&p->mu);
    size_t v = p->held;
    pthread_mutex_unlock(&p->mu);
    return v;
}

size_t pool_peak_bytes(Pool *p)
{
    pthread_mutex_lock(&p->mu);
    size_t v = p->peak;
    pthread_mutex_unlock(&p->mu);
    return v;
}

size_t pool_budget(Pool *p) { return p->budget; /* immutable after pool_new */ }

void pool_stats(Pool *p, PoolStats *out)
{
    pthread_mutex_lock(&p->mu);
    *out = p->st;
    out->live = out->idle = 0;
    for (Entry *e = p->head; e; e = e->next) {
        out->live++;
        out->idle += !e->in_use;
    }
    pthread_mutex_unlock(&p->mu);
}
