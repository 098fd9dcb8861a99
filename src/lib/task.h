/* task.h — quantum calls as background tasks (lang/async.md): the future
 * kind (a value standing for a call's result: forced where its value is
 * needed, copied into tasks, sent to other ranks), a task's context (deep
 * copies of the function, its arguments and the globals it takes along),
 * running a task on a task VM, submitting it to the executor (--sync: running
 * it at once), calls made inside a task (run at once, numbered by their place
 * in the call tree), and the main thread's wait for a future. Knows the
 * evaluator, the executor and the quantum runtime's entry (a plain qfn call's
 * body); not the record of the program's calls nor the lookahead (async.c and
 * lookahead.c call this room; it reaches them only through a future's owner
 * and InterpHooks.main_wait). */
#ifndef QH_TASK_H
#define QH_TASK_H

#include "exec.h"
#include "vm.h"

/* What a task runs, on the VM that runs it (a worker's task VM, or the
 * calling task's own): f with the bound frame params (f->p->nlocals slots,
 * references taken). seed and index name the call's random stream (index:
 * its place in the call tree). arg: the dispatcher's copy of the caller's
 * argument. */
typedef Value (*TaskBody)(VM *vm, ObjFunc *f, Value *params, uint64_t seed, uint64_t index,
                          const Node *site, const void *arg);

/* Everything a task needs, all copies made for it. */
typedef struct TaskCtx {
    Interp *in;
    Value fn;
    int nargs;
    uint64_t seed, index;
    const char *prefix, *name;
    int line;
    TaskBody body; /* what the task runs */
    void *arg;     /* the body's argument (a copy) */
    size_t argsize;
    bool early;   /* started by the lookahead (traces) */
    Fut **deps;   /* calls still running it waits for (borrowed: its futures hold them), */
    int ndeps;    /* until task_launch */
    CopyCtx mods; /* the modules copied for the task: released at its end */
    Value args[]; /* nargs */
} TaskCtx;

/* A call to make into a task (task_prepare, task_submit). */
typedef struct TaskSpec {
    ObjFunc *f;
    Value *params; /* the bound frame (borrowed) */
    const Node *site;
    TaskBody body;
    const void *arg; /* the body's argument, copied (argsize bytes) */
    size_t argsize;
    const char *prefix; /* of its label and messages ("" or NULL: none) */
    uint64_t index;     /* its number in program order: its random stream */
    bool early;         /* started by the lookahead (traces) */
} TaskSpec;

/* The canonical bytes of a task's input (task_canon): everything the task
 * computes from, written by the serializer in its local mode (serial.h) —
 * its random stream (seed, index), its body and the body's argument, its
 * names, the copied function with the module copy holding the globals it
 * takes along, the copied arguments, with their sharing. Two tasks with
 * the same bytes compute the same thing. futs: the calls a future in it
 * stands for (references: no other call takes their address while the
 * bytes are kept). */
typedef struct TaskCanon {
    Buf bytes;
    Fut **futs;
    int nfuts;
} TaskCanon;

/* The owner of a main-side future (async.c's record of the call): told when
 * the future object is freed. */
typedef struct TaskOwner {
    void (*orphan)(struct TaskOwner *self);
} TaskOwner;

/* How long a qfn's code runs (task_short: an estimate from its calls that
 * finished), for the first TASK_TIMINGS codes a program calls: written by
 * the threads that ran them, read by the main thread. seconds 0: not
 * known yet. */
#define TASK_TIMINGS 64
typedef struct TaskTiming {
    _Atomic(const FnProto *) proto;
    _Atomic double seconds;
} TaskTiming;

/* The interpreter's task state (Interp.tasks), made on first need. */
typedef struct TaskState {
    double main_wait_seconds; /* main thread only */
    unsigned long sync_tasks; /* --sync: calls run, and their time */
    double sync_task_seconds;
    /* under mpirun (ship.h): runs a task on another rank through remote
     * slot `slot`; false if it cannot travel (it then runs here). Set
     * before the first run, read by the executor's threads. */
    bool (*ship)(TaskCtx *c, ExecTask *t, int slot);
    struct ShipState *ship_state;
    TaskTiming timing[TASK_TIMINGS]; /* open addressing on the proto */
} TaskState;

TaskState *task_state(Interp *in);
/* Frees it (the end of a run). */
void task_state_free(Interp *in);
/* Seconds on a monotonic clock. */
double task_now(void);

/* ---- the future kind ---- */

/* Registers it (start-up). */
void task_open(void);
/* A future value on fut (a reference is taken): owner (may be NULL) is told
 * when it is freed; serial is the dispatch's number (async_dispatches). */
Value task_future_new(Fut *fut, TaskOwner *owner, const char *prefix, const char *name,
                      const Source *src, int line, unsigned long serial);
/* The future object no longer has an owner (the record is gone first). */
void task_future_disown(Value v);
/* The call any future value stands for (resolved or not), else NULL. */
Fut *task_fut_of(Value v);
/* The call a pending future value stands for, else NULL (borrowed). */
Fut *task_future_fut(Value v);
/* A future whose value is known or whose call has finished. */
bool task_future_ready(Value v);
/* REPL: if v is a future still pending that was dispatched before call
 * number `since`, writes <future NAME() from entry N: running> into out. */
bool task_future_pending_text(Value v, unsigned long since, Buf *out);
/* The state of the call a future value stands for (FUT_DONE once it is
 * resolved), or -1 if v is not a future. Never waits. */
int task_future_state(Value v);
/* <future NAME() from WHERE: STATE> of a future value, whatever its state,
 * into out (never waits); false if v is not a future. */
bool task_future_text(Value v, Buf *out);

/* ---- failed futures across ranks (SerCtx.user while packing and unpacking) ---- */

/* A failed future keeps its identity across the round trip (its origin:
 * rank 0's Fut, which a result coming back refers to again), and a read of
 * its error on the other rank counts as a read on rank 0 (a failure nobody
 * read is reported at exit). */
typedef struct FutLink {
    uint64_t origin;
    Fut *fut;
} FutLink;
typedef struct FutLinks {
    FutLink *v;
    size_t n, cap;
} FutLinks;
Fut *task_links_find(const FutLinks *l, uint64_t origin);
void task_links_free(FutLinks *l);
/* A name that lives as long as the process (names read from another rank). */
const char *task_keep_name(const char *s);

/* ---- tasks ---- */

/* The body of a plain qfn call. */
TaskBody task_qfn_body(void);
/* A call made inside a task: run at once, on the task's VM, with its own
 * copies of its arguments and the id of its place in the call tree.
 * params: the bound frame (references taken). */
Value task_run_nested(VM *vm, ObjFunc *f, Value *params, const Node *site, TaskBody body,
                      const void *arg);
/* The copies of a main-program call's task (s->params are borrowed),
 * ready to launch; NULL with *cerr set if an argument cannot be copied. */
TaskCtx *task_prepare(VM *vm, const TaskSpec *s, const char **cerr);
/* Submits c (or, --sync, runs it) without a record: its Fut (a reference),
 * NULL if the executor refused it (Ctrl-C). c is consumed. */
Fut *task_launch(VM *vm, TaskCtx *c);
/* The same for a call whose value is needed at once: with no calls still
 * running among its inputs, and unless it may travel to another rank, it
 * runs now on the calling thread (EXEC_HERE: never queued, no worker woken)
 * and its Fut is finished; otherwise as task_launch. */
Fut *task_launch_here(VM *vm, TaskCtx *c);
/* A call of p's code is short: its calls that finished ran under
 * TASK_SHORT_SECONDS (TaskTiming's estimate), less than handing one to a
 * worker and back, or starting it early and checking it when reached,
 * would cost the main thread. False while none has finished. */
#define TASK_SHORT_SECONDS 20e-6
bool task_short(Interp *in, const FnProto *p);
/* task_prepare, then task_launch (NULL: see both). */
Fut *task_submit(VM *vm, const TaskSpec *s, const char **cerr);
/* The canonical bytes of c's input, before it is launched; false (*out
 * empty) if something in it has no bytes (a kind without a ser slot, a
 * value nested too deep): it cannot be compared. */
bool task_canon(const TaskCtx *c, TaskCanon *out);
bool task_canon_same(const TaskCanon *a, const TaskCanon *b);
void task_canon_free(TaskCanon *k);
/* Runs the call of c on a task VM (cancel: its flag; task: the executor's
 * task or NULL): true with the result's copy in *result, else false with
 * the message in err. */
bool task_execute(TaskCtx *c, const atomic_int *cancel, void *task, Value *result, char *err,
                  size_t errlen);
void task_ctx_free(void *p);
/* Frees a boxed result (a Value * of malloc), the futures' result destructor. */
void task_free_box(void *p);

#endif
