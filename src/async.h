/* async.h — the asynchronous side of the interpreter: dispatching a call
 * of a quantum function as a background task that returns a future (the
 * future kind lives here), starting and stopping the executor, the device
 * pool and the trace, Ctrl-C. Knows the evaluator, the executor's
 * interface and the quantum runtime's entry. */
#ifndef QH_ASYNC_H
#define QH_ASYNC_H

#include "vm.h"

/* What a task runs, on the VM that runs it (a worker's task VM, or the
 * calling task's own): f with the bound frame params (f->p->nlocals slots,
 * references taken). arg: the dispatcher's copy of the caller's argument. */
typedef Value (*TaskBody)(VM *vm, ObjFunc *f, Value *params, uint64_t seed, uint64_t index,
                          const Node *site, const void *arg);

/* A call of f (a qfn) with the bound frame params (references taken):
 * from the main program, a task on copies of everything it reads that
 * returns a future at once (--sync: run to completion first); inside a
 * task, run at once. body does the work; arg (argsize bytes) is copied
 * for it; label_prefix names the task ("grad " -> "grad f"). */
Value async_dispatch(VM *vm, ObjFunc *f, Value *params, const Node *site, TaskBody body,
                     const void *arg, size_t argsize, const char *label_prefix);

/* Registers the future kind and the async builtins (start-up). */
void async_open(void);
/* Installs the evaluator's qfn call hook in an interpreter. */
void async_attach(Interp *in);

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
/* The number of quantum calls the main program has dispatched so far. */
unsigned long async_dispatches(Interp *in);
/* REPL: if v is a future still pending that was dispatched before call
 * number `since` (an earlier entry's), writes <future NAME() from entry N:
 * running> into out and returns true; otherwise false (wait for it). */
bool async_pending_text(Value v, unsigned long since, Buf *out);
/* Installs the SIGINT handler that cancels tasks. */
void async_install_sigint(Interp *in);

#endif
