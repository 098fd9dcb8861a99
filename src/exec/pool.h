/* pool.h — a pool of reusable instances keyed by a string, under a memory
 * budget (the device pool of lang/async.md).
 *
 * A task acquires an instance for its specification (the key), uses it and
 * releases it; the next task with the same key gets the same instance back
 * after vt->reset instead of allocating anew. The pool counts the bytes of
 * every live instance (in use or idle) and never lets them exceed the
 * budget: a request that does not fit first evicts idle instances of other
 * keys, else waits (in arrival order) until releases make room (a nested
 * request, whose caller already holds instances, never waits: see
 * pool_acquire_nested). A request
 * larger than the whole budget fails at once with a clear message. All
 * functions are thread-safe; create/reset/destroy run without the pool's
 * lock held.
 *
 * Must not know: what an instance is (a statevector, anything), the
 * executor, the language. */
#ifndef QH_POOL_H
#define QH_POOL_H

#include <stdatomic.h>
#include <stddef.h>

typedef struct PoolVt {
    /* Makes an instance from create_arg; on failure returns NULL and may
     * write a message into err. */
    void *(*create)(void *arg, char *err, size_t errlen);
    /* Brings an idle instance back to its initial state before reuse; may
     * be NULL. */
    void (*reset)(void *inst);
    void (*destroy)(void *inst);
} PoolVt;

typedef struct Pool Pool;

/* vt is copied. budget_bytes 0 means pool_default_budget(). */
Pool *pool_new(size_t budget_bytes, const PoolVt *vt);
/* Destroys every instance (all should have been released). */
void pool_free(Pool *p);

/* Reuses an idle instance with the same key (after vt->reset), else
 * creates one when bytes fit in the budget (evicting idle instances of
 * other keys, least recently used first, to make room), else waits until
 * some instance is released. Returns NULL with a message in err:
 *   "needs 16.0 GiB, budget is 11.7 GiB"        bytes > the whole budget
 *   the create function's message                creation failed
 *   "cancelled while waiting for device memory"  *cancel became nonzero
 * cancel may be NULL (then it waits without polling); it is polled every
 * 10 ms while waiting. err may be NULL. */
void *pool_acquire(Pool *p, const char *key, size_t bytes, void *create_arg,
                   const atomic_int *cancel, char *err, size_t errlen);
/* For a caller that already holds chain_bytes of instances and cannot give
 * them back before this one is released (a nested call): never waits. An
 * idle instance of the key, else a new one, evicting idle instances of
 * other keys to stay within the budget when it can, else going past the
 * budget for as long as it is held. NULL at once with a message
 *   "needs 16.0 KiB on top of the 16.0 KiB its callers hold, and the budget is 16.0 KiB"
 * if chain_bytes + bytes exceed the budget, or if creation failed. */
void *pool_acquire_nested(Pool *p, const char *key, size_t bytes, void *create_arg,
                          size_t chain_bytes, char *err, size_t errlen);
/* Gives an instance back. clean=1: kept idle for reuse. clean=0 (the task
 * failed or was cancelled mid-way): destroyed, so no state leaks into the
 * next task. */
void pool_release(Pool *p, void *inst, int clean);
/* Destroys every idle instance now (returns how many). */
int pool_trim(Pool *p);

size_t pool_in_use_bytes(Pool *p); /* bytes of acquired instances */
size_t pool_held_bytes(
    Pool *p); /* bytes of live instances, idle included: what the budget bounds */
size_t pool_peak_bytes(Pool *p); /* most held bytes at one moment */
size_t pool_budget(Pool *p);

typedef struct PoolStats {
    unsigned long created, reused, destroyed, evicted, waited, failed;
    int live, idle;
} PoolStats;
void pool_stats(Pool *p, PoolStats *out);

/* Half of the memory this process may use: the tightest memory limit of
 * its own cgroup and their ancestors (v1 and v2), else physical memory
 * (src/util/memlimit.h). */
size_t pool_default_budget(void);
/* "16.0 GiB"-style text of a byte count; returns buf. */
char *pool_format_bytes(char *buf, size_t cap, size_t bytes);

#endif
