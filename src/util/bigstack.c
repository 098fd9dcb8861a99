/* bigstack.c — see bigstack.h. */
#include "bigstack.h"

#include <pthread.h>
#include <signal.h>

typedef struct Job { int (*fn)(int, char **); int argc; char **argv; int result; sigset_t mask; } Job;

static void *trampoline(void *p)
{
    Job *j = p;
    pthread_sigmask(SIG_SETMASK, &j->mask, NULL);   /* the caller's mask: SIGINT comes here */
    j->result = j->fn(j->argc, j->argv);
    return NULL;
}

int run_on_big_stack(size_t bytes, int (*fn)(int, char **), int argc, char **argv)
{
    Job j = { fn, argc, argv, 0, { { 0 } } };
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &j.mask);    /* j.mask: the mask before */
    pthread_attr_t attr;
    pthread_t th;
    int made = pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, bytes) == 0 &&
               pthread_create(&th, &attr, trampoline, &j) == 0;
    pthread_attr_destroy(&attr);
    if (!made) {
        pthread_sigmask(SIG_SETMASK, &j.mask, NULL);
        return fn(argc, argv);
    }
    pthread_join(th, NULL);
    pthread_sigmask(SIG_SETMASK, &j.mask, NULL);
    return j.result;
}
