/* vm.h — the evaluator's state: the Interp (one per interpreter, shared by
 * its threads), the VM (one per thread: the main program's, or a task's),
 * call frames and the objects frames point at (functions, modules), and
 * runtime errors with their traceback. Nothing in a VM is touched by
 * another thread; the Interp holds what all threads share (configuration
 * set before any thread starts, the thread-safe executor, pool and trace,
 * atomic Ctrl-C flags) and what only the main thread touches (marked).
 * Knows values and the AST; not how anything is evaluated. */
#ifndef QH_VM_H
#define QH_VM_H

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include "ast.h"
#include "rng.h"
#include "value.h"

typedef struct ObjModule {
    Obj h;
    ModInfo *info;
    Value *globals;
    int nglobals;
    const char *name;
    bool loaded;  /* finished running */
    bool partial; /* a task's copy: only the globals its functions read are
                           copied, and copying a function adds the ones it reads */
} ObjModule;

typedef struct ObjFunc {
    Obj h;
    FnProto *p;
    ObjModule *mod;
    Value *defaults; /* p->nparams, T_UNBOUND where none */
    ObjCell **up;    /* p->nupvals */
    Value device;    /* qfn ... on DEVICE: the device value, else nil */
} ObjFunc;

#define AS_FUNC(v) ((ObjFunc *)(v).o)
#define AS_MOD(v)  ((ObjModule *)(v).o)

/* One traceback line. */
typedef struct TraceEnt {
    const Source *src;
    int line;
    const char *fn;
} TraceEnt;

typedef struct VMError {
    char msg[1024];
    const Source *src;
    int line, col;
    TraceEnt tb[64];
    int ntb, dropped;
    bool interrupted; /* Ctrl-C: not catchable */
    bool chained;     /* a failed future's error: its hop line says where (async.c) */
} VMError;

struct LoopCtx;
struct Interp;

/* What the evaluator reaches in rooms above it: each room installs its
 * entry when the interpreter is opened (qh_open), before any thread. */
typedef struct InterpHooks {
    /* a call of a qfn (async.c): a task, or run at once inside a task.
     * params: the bound frame (p->nlocals slots, references taken) */
    Value (*qfn_call)(VM *vm, ObjFunc *f, Value *params, const Node *site);
    /* `import NAME` (load.c): the module value, or v_exc() */
    Value (*import)(VM *vm, const char *name, const Node *site);
    /* lookahead (lookahead.c): a loop with a plan ended (any way) while
     * calls started early are outstanding (VM.la_watch) */
    void (*loop_exit)(VM *vm, struct LoopCtx *lc);
    /* lookahead (lookahead.c): the main thread is about to block on a
     * future (task.c): start what may start meanwhile */
    void (*main_wait)(VM *vm);
    /* the memory budget of device states (qrt.c, qrt_attach), for the
     * distributed states of qdist.c, which holds states outside the pool */
    void *(*mem_reserve)(struct Interp *in, size_t bytes, const atomic_int *cancel, char *err,
                         size_t errlen);
    void (*mem_unreserve)(struct Interp *in, void *token);
    size_t (*mem_budget)(struct Interp *in);
    size_t (*mem_held)(struct Interp *in);
    /* a host that shows values itself (the notebook kernel, qh.h's
     * qh_set_show): display(v); NULL: display prints */
    bool (*show)(VM *vm, Value v, const Node *site);
    /* a host's callback at the main program's safe points while Interp.poll
     * is up (qh.h's qh_set_poll): from vm_check_interrupt and between the
     * statements of an entry */
    void (*poll)(VM *vm);
    /* a host that answers input() itself (the notebook kernel, qh.h's
     * qh_set_input): 1 with the line in *line, 0 at end of input (input()
     * gives nil), -1 after a runtime error or an interrupt it raised on vm;
     * NULL: input() reads standard input */
    int (*input)(VM *vm, const char *prompt, size_t plen, Buf *line, const Node *site);
} InterpHooks;

struct Exec;
struct Trace;
struct QRuntime;
struct AsyncState;
struct TaskState;
struct QCtx;
struct Lookahead;
struct QDist;

/* A `for` loop with a lookahead plan (laplan.h) that the main program is
 * running: where its iterations stand, for lookahead.c. Lives on the C
 * stack of exec_for (eval.c), linked innermost first from VM.loops. */
typedef struct LoopCtx {
    const Node *loop;     /* the N_FOR */
    struct Frame *frame;  /* the frame its body runs in */
    uint64_t iter;        /* the running iteration (from 0) */
    uint64_t iter_seq;    /* VM.qcall_seq when it began */
    Value coll;           /* the list iterated (borrowed), or nil for a range */
    size_t pos;           /* list: the running element's index */
    double x, step, stop; /* range: the running value, its step and end */
    double start;         /* range: its first value */
    struct LoopCtx *up;
    ObjModule *mod; /* the module whose globals its body reads */
} LoopCtx;

/* The top-level statement of a module's block that the main program is
 * running (vm_run_module), for straight-line lookahead (laplan.h's
 * LaStraight): its index and where the call numbers stood when it began.
 * block is NULL outside one (a REPL entry, a task). */
typedef struct StraightCtx {
    const Node *block; /* the N_BLOCK */
    int i;             /* the running statement */
    uint64_t seq;      /* VM.qcall_seq when it began */
    ObjModule *mod;    /* the module whose globals it reads */
} StraightCtx;

typedef struct Interp {
    /* set before any thread starts, then read-only */
    bool sync;
    bool no_lookahead; /* --no-lookahead */
    bool no_fusion;    /* --no-fusion (src/quantum/fuse.h) */
    int nworkers;
    long ncpu; /* CPUs this process may use */
    uint64_t seed;
    bool seed_given;
    size_t max_memory;
    const char *stdlib_dir;
    const char *qh_path;
    bool stats;
    const char *trace_path;
    InterpHooks hooks;
    struct Exec *exec;    /* thread-safe */
    struct Trace *trace;  /* thread-safe */
    struct QRuntime *qrt; /* the quantum runtime: pool, kernel threads (thread-safe) */
    struct QDist *qdist;  /* under mpirun: the distributed-state service (thread-safe), or NULL */
    /* Ctrl-C: set from the signal handler, read everywhere */
    atomic_int sigint; /* lock-free: safe in the signal handler, read by workers */
    atomic_int interrupt;
    atomic_int terminate;    /* SIGTERM: like Ctrl-C, and the session ends (exit 143) */
    atomic_int main_waiting; /* the main thread is blocked on a future: its core is free */
    atomic_int poll;         /* a host asks for hooks.poll at the main program's safe points */
    /* main-thread only */
    struct AsyncState *async; /* calls dispatched, waiting and timing counters (async.c) */
    struct TaskState *tasks;  /* waiting counters, the shipping of tasks (task.c) */
    struct Lookahead *la;     /* calls started early (lookahead.c) */
    ObjDict *modules;         /* name -> module */
    void *preloaded;          /* modules parsed before the run (load.c) */
    FILE *out;                /* what the program prints */
    int out_errno;            /* main-thread only: EPIPE once the reader of out is gone */
    bool out_lost;            /* main-thread only: a write to out failed (exit status 1) */
    FILE *err;                /* runtime errors and warnings */
} Interp;

typedef struct Frame {
    FnProto *p; /* NULL at module level */
    ObjFunc *fn;
    Value *slots;
    struct Frame *parent;
} Frame;

struct VM {
    Interp *in;
    bool is_task;
    Value *stack;
    size_t sp, cap;
    int depth, max_depth;
    char *stack_base;   /* C stack guard: bytes usable below stack_base on */
    size_t stack_limit; /* the thread this VM was made on (its real stack) */
    Frame *frame;
    ObjModule *mod; /* module whose globals are in scope */
    Value ret;      /* value of the last `return` */
    VMError err;
    Rng rng;                  /* the program generator (main) or the task's stream */
    uint64_t qcall_seq;       /* quantum calls made so far by the running call
                                   (main: by the program), in program order */
    uint64_t call_id;         /* a task: the id of the call it runs (its random
                                   stream); nested calls get ids from it */
    uint64_t stream_seed;     /* seed of this VM's call streams (the program's) */
    struct QCtx *q;           /* the running quantum function's device, if any */
    size_t dev_bytes;         /* device states the calls running on this VM hold:
                                   a nested call runs within them (qrt.c) */
    LoopCtx *loops;           /* main VM: loops with a lookahead plan running, innermost first */
    bool la_on;               /* main VM, not --sync nor --no-lookahead: loops record themselves */
    bool la_watch;            /* calls started early are outstanding */
    int la_sandbox;           /* lookahead.c is evaluating ahead: never wait, calls start early */
    uint64_t la_index;        /* in the sandbox: the number the next call started early takes */
    StraightCtx straight;     /* main VM: the top-level statement running (lookahead) */
    const atomic_int *cancel; /* task cancellation flag, or NULL */
    bool watch_interrupt;     /* answers Ctrl-C: the main program, and tasks run on
                                   the main thread (others stop when cancelled) */
    void *task;               /* the executor's task, when running one */
    double wait_time;         /* seconds the main thread spent waiting */
    int cur_line;             /* line of the top-level statement running (trace) */
    const Source *top_src;    /* REPL: the input being run, for its top-level messages */
    struct AdCtx *ad;         /* the differentiation running on this VM (track.h), or NULL */
    uint64_t unseeded_rngs;   /* NumPy-style generators made here without a seed (randomval.c) */
};


/* ---- lifecycle ---- */
void vm_init(VM *vm, Interp *in, bool is_task);
void vm_free(VM *vm);
/* Frees what this thread keeps for its next task VM (threads call it as they end). */
void vm_thread_cleanup(void);

/* ---- errors ---- */
/* Records a runtime error at node n (or the current statement when NULL);
 * returns v_exc() for convenience. */
Value vm_error(VM *vm, const Node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "WHO: ERR" at n for an error message ERR from a lower room, which may
 * already name the operation ("measure: wire 5 out of range"): the name is
 * then not repeated. WHO is "measure" or "probs()". */
Value vm_error_from(VM *vm, const Node *n, const char *who, const char *err);
/* "out of memory" at n: a located, catchable error where the program
 * chose the size of what could not be allocated. */
Value vm_oom(VM *vm, const Node *n);
/* The same, marked as an interruption (Ctrl-C, cancellation): not catchable. */
Value vm_interrupted(VM *vm, const Node *n);
/* Prints the pending error with its source line and traceback. */
void vm_print_error(VM *vm, FILE *out);
/* Adds the current function and the line of `site` to the traceback. */
void vm_tb_push(VM *vm, const Node *site);
/* Ctrl-C or cancellation pending: records the error and returns true.
 * On the main program's VM it also runs a host's poll (Interp.poll). */
bool vm_check_interrupt(VM *vm);
/* Whether the evaluator's periodic checks should call vm_check_interrupt:
 * Ctrl-C, or a host that asked for polls. */
static inline bool vm_attention(const VM *vm)
{
    return atomic_load_explicit(&vm->in->sigint, memory_order_relaxed) |
           atomic_load_explicit(&vm->in->poll, memory_order_relaxed);
}
/* Writes the program's output (print, input's prompt, the REPL's echo) to
 * in->out, flushing it if asked, and checks it. A failed write is a
 * runtime error at site ("cannot write to standard output: REASON"); a
 * broken pipe (the reader is gone) ends the program quietly: an
 * uncatchable error, and in->out_errno = EPIPE. */
bool vm_write_out(VM *vm, const char *p, size_t n, bool flush, const Node *site);
/* The exit status of a run that stopped without an error to report:
 * 141 for a broken pipe, 143 for SIGTERM, 130 for Ctrl-C. */
int vm_stop_status(Interp *in);
/* The source of the code running now (for messages and task records). */
const Source *vm_source(VM *vm);

#endif
