/* exec_internal.h — what future.c offers executor.c and nobody else.
 *
 * The executor parks a task on its dependencies by hanging one intrusive
 * waiter node per dependency on each future; finishing the future calls the
 * nodes' callbacks (outside the future's lock), which is how a parked task
 * becomes runnable without any thread sleeping on its behalf. Also the
 * monotonic clock helpers shared by the room's files. Knows nothing of the
 * language. */
#ifndef QH_EXEC_INTERNAL_H
#define QH_EXEC_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "exec.h"

typedef struct FutWaiter FutWaiter;
struct FutWaiter {
    FutWaiter *next, *prev;   /* in the future's list, under its lock   */
    Fut *on;                  /* the future it is hung on, or NULL      */
    void (*cb)(FutWaiter *w); /* called once, after the future finished */
};

/* Hangs w on f (w->cb set by the caller) and returns true; if f has
 * already finished, returns false and w is not hung (the caller acts as if
 * the callback had run). */
bool fut_add_waiter(Fut *f, FutWaiter *w);
/* Unhooks w if it is still hung on f and returns true (its callback will
 * never run); false if it was not hung there: not yet added, or its
 * callback is running or has run. */
bool fut_remove_waiter(Fut *f, FutWaiter *w);

/* Raises f's cancel flag without finishing f (a running task's future
 * ends when its task returns). */
void fut_request_cancel(Fut *f);

/* How long an idle worker (for new work) and fut_wait (for the result)
 * spin before sleeping on a condvar, in pause instructions: about 5-15 us.
 * A loop dispatching small calls then keeps the workers awake without a
 * futex call per task, yet an idle worker gives its core back almost at
 * once (a longer spin measured worse on a loaded 2-core machine). */
#ifndef EXEC_SPIN
#define EXEC_SPIN 100
#endif
static inline void exec_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Seconds on the monotonic clock. */
double exec_clock(void);
/* abs = now + seconds on the monotonic clock, for pthread_cond_timedwait
 * with a condvar made by exec_cond_init. */
void exec_deadline(struct timespec *abs, double seconds);
/* A condvar that times out on the monotonic clock (immune to clock
 * changes). */
int exec_cond_init(pthread_cond_t *c);

#endif
