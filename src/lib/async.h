/* async.h — the asynchronous side of the interpreter: dispatching a call
 * of a quantum function as a background task that returns a future (the
 * future kind lives here), starting and stopping the executor, the device
 * pool and the trace, the record of the calls made (failures nobody read,
 * :tasks, the REPL's Ctrl-C), Ctrl-C. Knows the evaluator, the executor's
 * interface and the quantum runtime's entry. */
#ifndef QH_ASYNC_H
#define QH_ASYNC_H

#include <stdio.h>
#include "exec.h"
#include "vm.h"

/* What a task runs, on the VM that runs it (a worker's task VM, or the
 * calling task's own): f with the bound frame params (f->p->nlocals slots,
 * references taken). seed and index name the call's random stream (index:
 * its place in the call tree). arg: the dispatcher's copy of the caller's
 * argument. */
typedef Value (*TaskBody)(VM *vm, ObjFunc *f, Value *params, uint64_t seed, uint64_t index,
                          const Node *site, const void *arg);

/* A call of f (a qfn) with the bound frame params (references taken):
 * from the main program, a task on copies of everything it reads that
 * returns a future at once (--sync: run to completion first); inside a
 * task, run at once. body does the work; arg (argsize bytes) is copied
 * for it; label_prefix names the task ("grad " -> "grad f", a static
 * string). */
Value async_dispatch(VM *vm, ObjFunc *f, Value *params, const Node *site, TaskBody body,
                     const void *arg, size_t argsize, const char *label_prefix);
/* The task of a main-program call numbered index, submitted (or, --sync,
 * run) without a record: its Fut (a reference), NULL if the executor
 * refused it (Ctrl-C) or, with *cerr set, if an argument cannot be copied.
 * params are borrowed. early marks it in traces. For the lookahead. */
Fut *async_submit(VM *vm, ObjFunc *f, Value *params, const Node *site, TaskBody body,
                  const void *arg, size_t argsize, const char *prefix, uint64_t index, bool early,
                  const char **cerr, int **taken, int *ntaken);
/* (taken, if not NULL: receives a malloc'd array of the slots of f's
 * module whose globals the task took along, *ntaken of them; -1 when the
 * copies reached a closure's cell or another module.) */
/* A future value on fut (a reference is taken) without a record: the
 * lookahead's placeholder for a call started early. */
Value async_future_value(Fut *fut, const char *name, const Source *src, int line);
/* The call any future value stands for (resolved or not), else NULL. */
Fut *async_fut_of(Value v);
/* The body of a plain qfn call. */
TaskBody async_qfn_body(void);
/* The call a pending future value stands for, else NULL (borrowed). */
Fut *async_future_fut(Value v);

/* ---- other processes (under mpirun, remote.c) ----
 * A plain qfn call may run on another rank: rank 0's executor gets remote
 * slots (exec.h) that pack the task (its function by reference, its copied
 * arguments and the globals they take along, its seed and place in the
 * call tree: serial.h) and hand it to ship, which waits for the answer.
 * A task that cannot be packed (a value with no ser slot) runs on rank 0
 * instead; the reason is counted for --stats. */
struct SerCode;
typedef struct AsyncRemote {
    /* Runs a packed task on the process behind remote slot `slot` and waits
     * for its answer (async_run_packed's bytes): 1 when the task succeeded,
     * 0 when it failed; -1 when *cancel rose first (the remote task is asked
     * to stop); -2 with a message in *out when the rank could not answer
     * (it died). */
    int (*ship)(void *ud, int slot, const void *task, size_t len, const atomic_int *cancel,
                Buf *out);
    bool (*usable)(void *ud, int slot); /* false once the slot's process is gone */
    /* At the end, before the trace is written: the others' trace events and
     * statistics (may be NULL). */
    void (*finish)(void *ud, Interp *in);
    int nslots;
    const char *const *slot_names; /* their trace tracks */
    const struct SerCode *code;
    void *ud;
} AsyncRemote;
/* Rank 0, before the first run: tasks may run elsewhere (r must outlive
 * the run). */
void async_set_remote(Interp *in, const AsyncRemote *r);
/* A serving rank: runs a packed task on the calling thread (with *cancel as
 * its cancellation flag) and writes its answer into *out: what rank 0 must
 * know about the inputs it read, then the result's bytes (true) or the
 * error message (false). */
bool async_run_packed(Interp *in, const void *task, size_t len, const atomic_int *cancel,
                      const struct SerCode *code, Buf *out);
/* Tasks rank 0 ran itself because they could not be packed, and the first
 * reason (NULL if none). */
unsigned long async_unsent(Interp *in, const char **why);

/* Registers the future kind and the async builtins (start-up). */
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

#endif
