/* interp.h — the evaluator's state and the objects it owns (functions,
 * modules), shared by eval.c, builtins*.c, module.c and the quantum and
 * async glue. A VM is one thread's interpreter: the main program has one,
 * every background task builds its own. Nothing in a VM is touched by
 * another thread; the Interp holds what all threads share (read-only
 * configuration, and the thread-safe executor, pool and trace). */
#ifndef QH_INTERP_H
#define QH_INTERP_H

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
    bool loaded;        /* finished running */
} ObjModule;

typedef struct ObjFunc {
    Obj h;
    FnProto *p;
    ObjModule *mod;
    Value *defaults;    /* p->nparams, T_UNBOUND where none */
    ObjCell **up;       /* p->nupvals */
    Value device;       /* qfn ... on DEVICE: the device value, else nil */
} ObjFunc;

#define AS_FUNC(v) ((ObjFunc *)(v).o)
#define AS_MOD(v) ((ObjModule *)(v).o)

struct VM;
/* Builtin calling convention: positional args and keyword args, already
 * evaluated (futures resolved unless the builtin is marked lazy). Returns a
 * new reference, or v_exc() after vm_error. */
typedef struct Args {
    int n;
    Value *v;
    int nkw;
    ObjStr **kwname;
    Value *kw;
    Node *site;         /* the call node, for messages */
    const struct BuiltinDef *def;   /* the builtin being called */
} Args;
typedef Value (*BuiltinFn)(struct VM *vm, Args *a);
typedef struct BuiltinDef {
    const char *name;
    BuiltinFn fn;
    int min, max;       /* positional arity; max -1 = any */
    unsigned flags;
    const char *const *kwnames;   /* accepted keywords, NULL-terminated, or NULL */
    double cval;        /* BI_CONST: the value (pi, e, inf, nan) */
} BuiltinDef;
enum {
    BI_LAZY = 1,        /* receives futures unresolved (ready, wait, append, ...) */
    BI_IMPURE = 2,      /* prints, reads input: not allowed in a qfn */
    BI_QUANTUM = 4,     /* needs a running quantum function (measurements) */
    BI_GATE = 8,        /* makes an operator */
    BI_CONST = 16,      /* a number, not a function */
};
/* tables of builtins from the rooms that define them, terminated by name NULL */
extern const BuiltinDef builtins_core[];
extern const BuiltinDef builtins_array[];
extern const BuiltinDef builtins_quantum[];
extern const BuiltinDef builtins_async[];
extern const BuiltinDef builtins_grad[];

/* One traceback line. */
typedef struct TraceEnt { const Source *src; int line; const char *fn; } TraceEnt;

typedef struct VMError {
    char msg[1024];
    const Source *src;
    int line, col;
    TraceEnt tb[64];
    int ntb, dropped;
    bool interrupted;   /* Ctrl-C: not catchable */
} VMError;

struct Exec; struct Pool; struct Trace; struct QCtx; struct SvTeam;

typedef struct Interp {
    /* set before any thread starts, then read-only */
    bool sync;
    int nworkers;
    uint64_t seed;
    bool seed_given;
    size_t max_memory;
    const char *stdlib_dir;
    const char *qh_path;
    struct Exec *exec;
    struct Pool *pool;
    struct Trace *trace;
    const char *trace_path;
    bool stats;
    unsigned long sync_tasks;   /* --sync: calls run, and their time */
    double sync_task_seconds;
    struct QRuntime *qrt;       /* the quantum runtime: pool, kernel threads */
    /* Ctrl-C: set from the signal handler, read everywhere */
    atomic_int sigint;          /* lock-free: safe in the signal handler, read by workers */
    atomic_int interrupt;
    atomic_int main_waiting;    /* the main thread is blocked on a future: its core is free */
    /* main-thread only */
    ObjDict *modules;           /* name -> module */
    void *preloaded;            /* modules parsed before the run (module.c) */
    ObjList *argv;
    FILE *out;
    int warnings;
} Interp;

typedef struct Frame {
    FnProto *p;                 /* NULL at module level */
    ObjFunc *fn;
    Value *slots;
    struct Frame *parent;
} Frame;

typedef struct VM {
    Interp *in;
    bool is_task;
    Value *stack;
    size_t sp, cap;
    int depth, max_depth;
    char *stack_base;           /* C stack guard */
    size_t stack_limit;
    Frame *frame;
    ObjModule *mod;             /* module whose globals are in scope */
    Value ret;                  /* value of the last `return` */
    VMError err;
    Rng rng;                    /* the program generator (main) or the task's stream */
    uint64_t qcall_seq;         /* quantum calls made so far, in program order */
    uint64_t stream_seed;       /* seed of this VM's call streams */
    struct QCtx *q;             /* the running quantum function's device, if any */
    const atomic_int *cancel;   /* task cancellation flag, or NULL */
    void *task;                 /* the executor's task, when running one */
    double wait_time;           /* seconds the main thread spent waiting */
    int cur_line;               /* line of the top-level statement running (trace) */
    const Source *top_src;      /* REPL: the input being run, for its top-level messages */
} VM;

/* ---- VM lifecycle ---- */
void vm_init(VM *vm, Interp *in, bool is_task);
void vm_free(VM *vm);
/* Frees what this thread keeps for its next task VM. */
void vm_thread_cleanup(void);

/* ---- errors ---- */
/* Records a runtime error at node n (or the current statement when NULL);
 * returns v_exc() for convenience. */
Value vm_error(VM *vm, const Node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prints the pending error with its source line and traceback. */
void vm_print_error(VM *vm, FILE *out);
/* Adds the current function and the line of `site` to the traceback. */
void vm_tb_push(VM *vm, const Node *site);
bool vm_check_interrupt(VM *vm);

/* ---- evaluation ---- */
typedef enum ExecStatus { S_OK, S_BREAK, S_CONTINUE, S_RETURN, S_ERR } ExecStatus;
/* Runs a module's top-level statements; false on an uncaught error. */
bool vm_run_module(VM *vm, ObjModule *m);
ObjModule *module_new(ModInfo *info, const char *name);
void module_grow(ObjModule *m);       /* after the resolver added globals (REPL) */
/* Evaluates an expression statement node's expression (REPL). */
Value vm_eval_expr(VM *vm, Node *e);
ExecStatus vm_exec(VM *vm, Node *s);
/* Calls any callable with positional args (borrowed); new reference or v_exc(). */
Value vm_call(VM *vm, Value fn, int nargs, Value *args, Node *site);
Value vm_call_kw(VM *vm, Value fn, Args *a);
/* Resolves a future (waits); other values are returned as they are. The
 * result is a new reference. */
Value vm_force(VM *vm, Value v, const Node *site);
bool vm_truthy(VM *vm, Value v, const Node *site, bool *err);
/* str(v) into b, resolving futures inside; false on error */
bool vm_repr(VM *vm, Buf *b, Value v, bool quoted, const Node *site);
/* Arithmetic used by builtins (sum) too. */
Value vm_binop(VM *vm, int op, Value a, Value b, const Node *site);

/* ---- builtins ---- */
int builtin_lookup(const char *name);
const BuiltinDef *builtin_get(int i);
Value builtin_value(int i);
void builtins_register_hooks(void);

/* argument helpers for builtins */
bool arg_int(VM *vm, Args *a, int i, const char *what, long *out);
bool arg_num(VM *vm, Args *a, int i, const char *what, double *out);
Value *arg_kw(Args *a, const char *name);

/* ---- modules ---- */
Value module_import(VM *vm, const char *name, const Node *site);
ModInfo *load_and_analyse(Interp *in, Source *src, FILE *diag, bool warn);
/* Finds, parses and analyses every import visible in m before the run:
 * false (errors printed) if one of them has errors. */
bool module_preload(Interp *in, ModInfo *m, FILE *diag);
void module_preload_free(Interp *in);

#endif
