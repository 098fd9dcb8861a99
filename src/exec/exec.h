/* exec.h — qh's background executor room: futures and a fixed pthread pool.
 *
 * A quantum-function call becomes a task: a run function plus an opaque
 * context, submitted with the futures it depends on. The task runs on one of
 * a fixed set of worker threads once every dependency has finished, and its
 * outcome lands in a Fut that the interpreter waits on when it needs the
 * value. Also here: backpressure (a bound on unfinished tasks), cancellation
 * (cooperative, through a flag the task polls), a signal-safe interrupt for
 * Ctrl-C, per-executor statistics, and an optional Chrome trace (trace.h).
 *
 * Must not know: the language's values, arrays, quantum devices or the AST.
 * Everything a task carries is a void * with a destructor. */
#ifndef QH_EXEC_H
#define QH_EXEC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "trace.h"

/* ---------------------------------------------------------------- futures */

typedef enum FutState {
    FUT_PENDING,  /* created or queued, not started                       */
    FUT_RUNNING,  /* its producer has started                             */
    FUT_DONE,     /* a result is there (fut_result / fut_take_result)     */
    FUT_FAILED,   /* an error message is there (fut_error)                */
    FUT_CANCELLED /* cancelled before it produced anything; fut_error is "cancelled" */
} FutState;

typedef struct Fut Fut;

/* A new pending future holding one reference (the caller's). */
Fut *fut_new(void);
/* Reference counting (atomic). The last release frees the result through
 * its destructor unless it was taken; that may happen on whichever thread
 * lets go last, so a result must be self-contained (a copy, sharing
 * nothing with the main interpreter). fut_release(NULL) is a no-op. */
Fut *fut_retain(Fut *f);
void fut_release(Fut *f);

/* Producer side. The first of complete/fail/cancel wins and wakes every
 * waiter; a later one is ignored and returns false (a result handed to an
 * ignored fut_complete is freed at once with free_result). free_result may
 * be NULL (the result is then not owned). The caller must hold a reference
 * across the call. */
bool fut_complete(Fut *f, void *result, void (*free_result)(void *));
bool fut_fail(Fut *f, const char *msg); /* copies msg */
/* Cancels a pending or running future at once (state CANCELLED, error
 * "cancelled", waiters woken) and raises its cancel flag so that a producer
 * already running sees it (fut_cancel_flag) and stops; whatever that
 * producer hands in later is discarded. */
bool fut_cancel(Fut *f);
/* PENDING -> RUNNING; false if the future is no longer pending. */
bool fut_set_running(Fut *f);

/* Consumer side. */
FutState fut_state(const Fut *f); /* atomic load, no lock */
bool fut_ready(const Fut *f);     /* finished (DONE/FAILED/CANCELLED); never waits */
FutState fut_wait(Fut *f);        /* blocks until finished */
/* Blocks until finished or until *interrupt becomes nonzero (polled at
 * least every 10 ms; interrupt may be NULL). Returns the state: still
 * PENDING or RUNNING when it was interrupted. */
FutState fut_wait_interruptible(Fut *f, const atomic_int *interrupt);
/* Like fut_wait with a deadline in seconds from now; returns the state. */
FutState fut_wait_timeout(Fut *f, double seconds);
/* The result after DONE (NULL otherwise); ownership stays with the future. */
void *fut_result(Fut *f);
/* The result after DONE; the caller owns it now. The first call gets it,
 * later calls get NULL. */
void *fut_take_result(Fut *f);
/* The error after FAILED or CANCELLED, NULL otherwise; lives as long as f. */
const char *fut_error(Fut *f);
/* The flag fut_cancel raises (also raised by exec_cancel_all for the
 * executor's tasks); producers poll it in hot loops. */
const atomic_int *fut_cancel_flag(const Fut *f);

/* Whether anyone has read the outcome (waited for the value or the error):
 * a consumer marks it; an owner reports a failure nobody retrieved (Python
 * asyncio's "Future exception was never retrieved"). Atomic, any thread. */
void fut_mark_retrieved(Fut *f);
bool fut_retrieved(const Fut *f);
/* The number of references now; 1 while the caller holds one means no other
 * holder exists (and none can appear). */
int fut_refs(const Fut *f);

/* One pointer slot for the owner (the interpreter keeps call-site info
 * there); not freed by the future. Atomic, so any thread may read it. */
void fut_set_user(Fut *f, void *p);
void *fut_user(const Fut *f);

/* -------------------------------------------------------------- executor */

typedef struct Exec Exec;
typedef struct ExecTask ExecTask;
/* A task's body. It must end by calling exactly one of exec_task_done /
 * exec_task_fail; returning without either fails the task with "task
 * produced no result". The future is completed after the run function
 * returns, so "the future is finished" implies "its task is over". */
typedef void (*ExecRunFn)(void *ctx, ExecTask *t);

#define EXEC_STACK_SIZE ((size_t)64 << 20) /* worker stacks: recursive evaluator */

/* A fixed pool of nworkers threads (at least 1), created here once, each
 * with an EXEC_STACK_SIZE stack; at most queue_bound (at least 1)
 * submitted-but-unfinished tasks from non-worker threads. NULL if the
 * threads could not be created. */
Exec *exec_new(int nworkers, size_t queue_bound);
/* Cancels everything (exec_cancel_all), waits for the running tasks to
 * return, joins the workers and frees. Futures handed out stay valid (they
 * are reference counted) and are all finished by then. No thread may be
 * inside exec_submit on e while this runs. NULL is a no-op. */
void exec_free(Exec *e);

/* What exec_submit runs: run(ctx, task), ctx freed by free_ctx; after
 * deps[0..ndeps); label and line for traces; flags: 0, EXEC_REMOTE or
 * EXEC_HERE. */
typedef struct ExecJob {
    ExecRunFn run;
    void *ctx;
    void (*free_ctx)(void *);
    Fut *const *deps;
    int ndeps;
    const char *label;
    int line;
    unsigned flags;
} ExecJob;

/* Submits a task (job, read during the call only) and returns its future
 * (one reference for the caller).
 * The task becomes runnable when every future in deps[0..ndeps) has
 * finished, whatever its state (NULL entries are skipped); it never holds a
 * worker while waiting. Runnable tasks run in submission order. The
 * executor keeps its own references to deps until the task ends
 * (exec_task_dep). label (copied) and line name the call site in traces
 * and exec_pending_tasks.
 *
 * Ownership: exec_submit always takes ctx; free_ctx(ctx) (if not NULL) is
 * called when the task ends, or before returning NULL.
 *
 * Backpressure: from a non-worker thread, blocks while queue_bound tasks
 * are unfinished. Returns NULL (nothing submitted) if, while it is blocked,
 * the interrupt flag is up (also if it already was when blocking began) or
 * exec_cancel_all is called, or if the executor is shutting down. From a worker thread it never
 * blocks: such
 * submissions bypass the bound (they are counted, but do not wait), so a
 * task submitting tasks cannot deadlock the pool. */
Fut *exec_submit(Exec *e, const ExecJob *job);

/* ---- remote slots: tasks that other processes may run ----
 * A task submitted with EXEC_REMOTE (ExecJob.flags) may be taken by a remote slot as well
 * as by a worker. A remote slot is one more thread (made by
 * exec_add_remote) that takes only such tasks, oldest first like the
 * workers, and calls their run function: exec_task_remote(t) then says
 * which slot runs it, and the run function sends the work to another
 * process and waits for its answer (a remote slot is not counted among
 * the busy workers). Before it runs a task a slot asks usable(ud, slot);
 * once that says no (its process died) the slot puts the task back for
 * the others and its thread ends. Futures, dependencies, cancellation and
 * statistics are the same for every task. */
enum { EXEC_REMOTE = 1, EXEC_HERE = 2 };
/* EXEC_HERE: the caller needs the result at once. From a non-worker thread,
 * a task with no dependencies (ndeps counts no non-NULL entry) then runs
 * on the calling thread inside exec_submit, which returns its future
 * finished: it never enters the queue and no worker is woken (the
 * hand-over to a worker and back would be all the cost of a small call).
 * It is a task like any other meanwhile: counted in the statistics, traced
 * (on track 0), listed as running, cancellable through its flag; it does
 * not wait for room (it holds its place only while it runs). With
 * dependencies, or from a worker, the flag is ignored. */
/* Makes nslots remote slots, once (their trace tracks follow the workers',
 * named names[i]); returns how many threads were made, -1 if called twice. */
int exec_add_remote(Exec *e, int nslots, bool (*usable)(void *ud, int slot), void *ud,
                    const char *const *names);
/* The remote slot running t, or -1 (a worker, or the calling thread). */
int exec_task_remote(const ExecTask *t);

/* Ends the task with a result (owned by the future from now; free_result
 * may be NULL). Only the first of done/fail counts; a later result is
 * freed. Both are called from inside the run function, on its worker; the
 * future is finished when the run function returns. */
void exec_task_done(ExecTask *t, void *result, void (*free_result)(void *));
/* Ends the task with an error (copied). If the task's cancel flag is up
 * when it ends without a result, its future becomes CANCELLED instead. */
void exec_task_fail(ExecTask *t, const char *msg);
/* Cheap checks for cooperative cancellation: an atomic load. */
bool exec_task_cancelled(const ExecTask *t);
const atomic_int *exec_task_cancel_flag(const ExecTask *t);
/* What the runner may want to know about its task. */
int exec_task_worker(const ExecTask *t);      /* 0..nworkers-1 */
int exec_task_ndeps(const ExecTask *t);       /* non-NULL deps only */
Fut *exec_task_dep(const ExecTask *t, int i); /* borrowed reference */
Fut *exec_task_fut(const ExecTask *t);        /* borrowed; do not complete it directly */
const char *exec_task_label(const ExecTask *t);
int exec_task_line(const ExecTask *t);
/* When its run function was called: seconds on CLOCK_MONOTONIC. */
double exec_task_started(const ExecTask *t);
Exec *exec_task_exec(const ExecTask *t);

/* Cancels the one unfinished task whose future is f, as exec_cancel_all
 * does for all: not started, it ends now as CANCELLED; running, its flag is
 * raised. Returns false if no unfinished task has that future. */
bool exec_cancel_task(Exec *e, Fut *f);

/* Raises the cancel flag of every unfinished task. Tasks not yet running
 * (queued or waiting for dependencies) end at once as CANCELLED without
 * running; running ones see exec_task_cancelled() and should stop. Also
 * wakes a submitter blocked on backpressure (it returns NULL). Does not
 * wait; follow with exec_wait_all to know they are over. */
void exec_cancel_all(Exec *e);

/* For a SIGINT handler: async-signal-safe, it is a single lock-free atomic
 * store (no lock, no allocation, no condvar call). Every wait that polls
 * the flag (fut_wait_interruptible with exec_interrupt_flag(e),
 * exec_wait_all_interruptible, a blocked exec_submit) notices it within
 * ~10 ms. It does not cancel tasks: the woken main thread decides, usually
 * exec_cancel_all. The flag stays up until exec_clear_interrupt. */
void exec_interrupt(Exec *e);
void exec_clear_interrupt(Exec *e);
const atomic_int *exec_interrupt_flag(Exec *e);

/* Blocks until no task is unfinished; then every context has been freed
 * and the executor holds no future references. A task parked on a future
 * that is never finished (one made with fut_new and never completed)
 * blocks it for ever; exec_cancel_all resolves that.
 *
 * Not from a worker thread (a task would wait for itself), and neither
 * exec_free. A task may fut_wait on another task's future only if a worker
 * is left to run it: prefer passing the future as a dependency. */
/* If f's task is queued and runnable, runs it now on the calling thread
 * (not a worker) and returns true; false if it is parked, running or done. */
bool exec_run_inline(Exec *e, Fut *f);
void exec_wait_all(Exec *e);
/* Same, but returns false early if *interrupt becomes nonzero. */
bool exec_wait_all_interruptible(Exec *e, const atomic_int *interrupt);

/* True on a worker thread of any executor; the worker's index or -1. */
bool exec_on_worker(void);
int exec_current_worker(void);

int exec_nworkers(const Exec *e);
/* How many workers are inside a run function now: a runner uses it to
 * budget BLAS/kernel threads so that N workers mean N busy cores. */
int exec_busy_workers(const Exec *e);
/* Submitted-but-unfinished tasks now. */
int exec_unfinished(Exec *e);

/* Records each task on its worker's track (tid = worker + 1), a "submit"
 * slice on the submitting thread (tid 0 for non-workers) and a flow arrow
 * from submit to start. Set before submitting; the Trace must outlive the
 * executor's use of it (NULL turns tracing off). Names the threads. */
void exec_set_trace(Exec *e, Trace *tr);

typedef struct ExecStats {
    unsigned long submitted;       /* tasks accepted by exec_submit              */
    unsigned long run;             /* tasks whose run function was called        */
    unsigned long done;            /* ... ended DONE                             */
    unsigned long failed;          /* ... ended FAILED                           */
    unsigned long cancelled;       /* ended CANCELLED (run or not)               */
    double task_seconds;           /* total time inside run functions            */
    unsigned long run_here;        /* ... run on the thread that needed them     */
    double here_seconds;           /* (exec_run_inline, EXEC_HERE), and their time */
    double max_task_seconds;       /* longest run function                       */
    double wall_seconds;           /* since exec_new                             */
    unsigned long blocked_submits; /* submissions that waited on backpressure  */
    double blocked_seconds;        /* total time they waited                     */
    int peak_unfinished;           /* most unfinished tasks at one moment        */
    int nworkers;
} ExecStats;
void exec_stats(Exec *e, ExecStats *out);

/* A snapshot of the unfinished tasks, for a REPL's :tasks. */
typedef enum ExecTaskState { EXEC_PARKED, EXEC_QUEUED, EXEC_RUNNING } ExecTaskState;
typedef struct ExecTaskInfo {
    const Fut *fut; /* identity only (the snapshot holds no reference) */
    char label[64];
    int line;
    ExecTaskState state;
    int worker;         /* -1 unless running */
    double age_seconds; /* since submission */
} ExecTaskInfo;
/* Fills up to max entries in submission order; returns the number of
 * unfinished tasks (which may exceed max). */
int exec_pending_tasks(Exec *e, ExecTaskInfo *out, int max);

#endif
