/* async.h — the asynchronous side of the interpreter: dispatching a call
 * of a quantum function as a background task that returns a future (the
 * tasks and the future kind: task.h), starting and stopping the executor,
 * the device pool and the trace, the record of the calls made (failures
 * nobody read, :tasks, the REPL's Ctrl-C), Ctrl-C. Knows the evaluator, the
 * executor's interface, the tasks, the lookahead and the shipping of tasks
 * to other ranks. */
#ifndef QH_ASYNC_H
#define QH_ASYNC_H

#include <signal.h>
#include <stdio.h>
#include "task.h"

/* A call of call->f (a qfn) with the bound frame call->params (references
 * taken) at call->site: from the main program, a task on copies of
 * everything it reads that returns a future at once (--sync: run to
 * completion first; a short call whose value is needed at once, eval.h's
 * EVAL_FORCED_AT_ONCE, runs on the main thread unless it waits for calls
 * still running); inside a task, run at once. call->body does the work;
 * call->arg (argsize bytes) is copied for it; call->prefix names the task
 * ("grad " -> "grad f", a static string; NULL: none). call->index and
 * call->early are the dispatch's own (ignored). */
Value async_dispatch(VM *vm, const TaskSpec *call);
/* Registers the future kind (task.h) and the async builtins (start-up). */
void async_open(void);
/* Installs the evaluator's qfn call hook in an interpreter. */
void async_attach(Interp *in);

/* Starts the executor (unless --sync), the pool and the trace. */
void async_start(Interp *in, const char *trace_path);
/* Waits for (or, after an error, cancels) every task; reports failed
 * tasks nobody needed (grouped per call site); writes the trace and stats.
 * Returns the number of unobserved failures. */
int async_finish(Interp *in, VM *main_vm, bool cancel);
/* Cancels every task in flight. */
void async_cancel_all(Interp *in);
/* Cancels the unfinished calls made by one REPL entry (its Ctrl-C: the
 * source of the call has that entry number); returns how many; clears the
 * Ctrl-C flags. */
int async_cancel_entry(Interp *in, int entry);
/* Calls not finished yet. */
int async_pending(Interp *in);
/* Lists pending calls with their call sites and the global of mod that
 * holds each (REPL :tasks). */
void async_print_tasks(Interp *in, const ObjModule *mod, FILE *out);
/* The number of quantum calls the main program has dispatched so far. */
unsigned long async_dispatches(Interp *in);
/* REPL: if v is a future still pending that was dispatched before call
 * number `since` (an earlier entry's), writes <future NAME() from entry N:
 * running> into out and returns true; otherwise false (wait for it). */
bool async_pending_text(Value v, unsigned long since, Buf *out);
/* The state of the call a future value stands for (FUT_DONE once it is
 * resolved), or -1 if v is not a future. Never waits. */
int async_future_state(Value v);
/* <future NAME() from WHERE: STATE> of a future value, whatever its state,
 * into out (never waits); false if v is not a future. */
bool async_future_text(Value v, Buf *out);
/* Ctrl-C from a host (qh_interrupt): the flags the SIGINT handler raises,
 * and the executor's interrupt (a submitter blocked on backpressure wakes).
 * Only atomic stores: safe in a signal handler. */
void async_interrupt(Interp *in);
/* One line: what the interpreter is waiting for, and that Ctrl-C abandons it. */
void async_describe_pending(Interp *in, FILE *out);
/* Installs the SIGINT handler that cancels tasks. */
void async_install_sigint(Interp *in);
/* The REPL's flags: at the prompt (*at_prompt) a Ctrl-C sets *prompt_hit
   and nothing else; while an entry runs it interrupts the entry, however
   many times it comes. Installs the handler if it is not yet. */
void async_signal_prompt(Interp *in, volatile sig_atomic_t *at_prompt,
                         volatile sig_atomic_t *prompt_hit);

#endif
