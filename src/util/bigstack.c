/* bigstack.c — see bigstack.h. */
#include "bigstack.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

/* The interpreter's thread, for signal handlers (they get no context):
 * written once before the interpreter runs, read by handlers. */
static pthread_t interp_thread;
static atomic_bool interp_known;

typedef struct Job {
    int (*fn)(int, char **);
    int argc;
    char **argv;
    int result;
    sigset_t mask;
} Job;

static void *trampoline(void *p)
{
    Job *j = p;
    pthread_sigmask(SIG_SETMASK, &j->mask, NULL); /* the caller's mask, once it is known */
    j->result = j->fn(j->argc, j->argv);
    return NULL;
}

int run_on_big_stack(size_t bytes, int (*fn)(int, char **), int argc, char **argv)
{
    Job j = { fn, argc, argv, 0, { { 0 } } };
    pthread_attr_t attr;
    pthread_t th;
    /* the caller's signal mask while the thread is made: nothing may land
     * on it before it is known */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    j.mask = old;
    int made = pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, bytes) == 0 &&
               pthread_create(&th, &attr, trampoline, &j) == 0;
    pthread_attr_destroy(&attr);
    interp_thread = made ? th : pthread_self();
    atomic_store(&interp_known, true);
    pthread_sigmask(SIG_SETMASK, &old,
                    NULL); /* (one that reaches the new thread first is handled there) */
    if (!made) return fn(argc, argv);
    pthread_join(th, NULL);
    return j.result;
}

bool signal_forward(int sig)
{
    if (!atomic_load(&interp_known) || pthread_equal(pthread_self(), interp_thread)) return false;
    pthread_kill(interp_thread, sig);
    return true;
}
