/* bigstack.h — running the interpreter on a thread with a stack of a given
 * size, and signals that reach it there.
 * Why: the evaluator recurses, and a program must behave the same whether
 * its tasks run on workers (big stacks) or on the main thread (under --sync,
 * or when the main thread runs a queued call itself): the interpreter's own
 * thread gets a worker-sized stack too. A process-directed signal may land
 * on any thread; its handler hands it on to the interpreter's thread, whose
 * blocking reads it must interrupt. Knows only pthreads and signals. */
#ifndef QH_BIGSTACK_H
#define QH_BIGSTACK_H

#include <stdbool.h>
#include <stddef.h>

/* Runs fn(argc, argv) on a new thread with a stack of `bytes` (the
 * interpreter's thread) and returns its result. If the thread cannot be
 * made, runs fn on the caller's stack (the caller is then that thread). */
int run_on_big_stack(size_t bytes, int (*fn)(int, char **), int argc, char **argv);

/* For a signal handler (async-signal-safe): on a thread other than the
 * interpreter's, sends sig to the interpreter's thread and returns true
 * (the handler should return at once); false on that thread, or before it
 * exists. */
bool signal_forward(int sig);

#endif
