/* bigstack.h — running a function on a thread with a stack of a given size.
 * Why: the evaluator recurses, and a program must behave the same whether
 * its tasks run on workers (big stacks) or on the main thread (under --sync,
 * or when the main thread runs a queued call itself): the interpreter's
 * main thread gets a worker-sized stack too. Knows only pthreads. */
#ifndef QH_BIGSTACK_H
#define QH_BIGSTACK_H

#include <stddef.h>

/* Runs fn(argc, argv) on a new thread with a stack of `bytes` and returns
 * its result; SIGINT is delivered to that thread (blocked in the caller
 * meanwhile). If the thread cannot be made, runs fn on the caller's stack. */
int run_on_big_stack(size_t bytes, int (*fn)(int, char **), int argc, char **argv);

#endif
