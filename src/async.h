/* async.h — the asynchronous side of the interpreter: starting and
 * stopping the executor, the device pool and the trace; running the main
 * module under them. Knows the executor's interface and the evaluator's. */
#ifndef QH_ASYNC_H
#define QH_ASYNC_H

#include "interp.h"

/* Starts the executor (unless --sync), the pool and the trace. */
void async_start(Interp *in, const char *trace_path);
/* Waits for (or, after an error, cancels) every task; reports failed
 * tasks nobody needed; writes the trace and stats. Returns the number of
 * unobserved failures. */
int async_finish(Interp *in, VM *main_vm, bool cancel);
/* Cancels every task in flight (REPL Ctrl-C). */
void async_cancel_all(Interp *in);
/* Lists pending tasks with their call sites (REPL :tasks). */
void async_print_tasks(Interp *in, FILE *out);
/* Installs the SIGINT handler that cancels tasks. */
void async_install_sigint(Interp *in);

/* Runs a parsed and analysed main module: the whole program. Returns the
 * exit status. */
int run_main(Interp *in, ModInfo *m, int argv_slot, bool interactive, const char *trace_path);

#endif
