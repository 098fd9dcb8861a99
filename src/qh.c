/* qh.c — the interpreter's public face (qh.h): process-wide start-up in a
 * fixed order (the evaluator's kinds, then each room above it registers
 * its kinds and builtins), an interpreter's life (configuration, the main
 * VM, the background runtime started at the first run, the exit report,
 * teardown), compiling through the loader's pipeline, running a program
 * and REPL entries. Knows every room's opening entry and the evaluator's
 * entry points; none of their insides. */
#include "qh.h"
#include "analyse.h"
#include "arith.h"
#include "arrayval.h"
#include "randomval.h"
#include "nplib.h"
#include "paulilib.h"
#include "async.h"
#include "corelib.h"
#include "cpus.h"
#include "diag.h"
#include "diffq.h"
#include "eval.h"
#include "grad.h"
#include "iolib.h"
#include "circuitlib.h"
#include "lex.h"
#include "load.h"
#include "parse.h"
#include "picture.h"
#include "qh_assert.h"
#include "qrt.h"
#include "resolve.h"
#include "stop.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------- start-up */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* The order is the rooms' order, lowest first; the builtin table's order
 * (hence the indices the resolver stores) follows it. */
static void init_rooms(void)
{
    arith_open();      /* operator slots of numbers, strings, lists */
    call_open();       /* functions and builtins: their call slots */
    func_open();       /* modules */
    corelib_open();    /* the core builtins */
    arrayval_open();   /* arrays */
    randomval_open();  /* NumPy's random generators */
    nplib_open();      /* NumPy's array functions */
    track_open();      /* differentiated numbers and arrays */
    qrt_open();        /* devices, operators, quantum builtins */
    iolib_open();      /* files and data (io.h) */
    circuitlib_open(); /* OpenQASM, draw, specs */
    paulilib_open();   /* Pauli sums from text */
    async_open();      /* futures, ready/wait/sync */
    diffq_open();      /* differentiated quantum calls */
    grad_open();       /* gradient functions: grad, jacobian, hessian, metric_tensor */
    picture_open();    /* display; pictures */
}

void qh_init(void) { pthread_once(&init_once, init_rooms); }

/* ---------------------------------------------------------------- states */

struct qh_Program {
    qh_State *Q;
    ModInfo *info; /* the table its names resolve into (a program's own, or the session's) */
    ModInfo *part; /* its parse (owns the source and the arena) */
    bool entry;
    bool dry;                   /* an entry analysed only */
    bool ran;                   /* an entry that ran */
    int first_proto, end_proto; /* an entry's functions in the session's table */
};

struct qh_State {
    Interp in;
    VM vm;                 /* the main thread's */
    bool started;          /* the background runtime is running */
    bool ran;              /* qh_run was called */
    ObjModule *main;       /* the program's module, or the REPL session's */
    ModInfo *session_info; /* a fresh session's table (no program ran) */
    int first_proto;       /* the main table's own functions (entries add theirs after) */
    HideMemo *hide;        /* the session's record for the hidden-builtin warning */
    ObjList *argv;         /* until the main module takes it */
    qh_Program **progs;    /* every program and entry compiled, in order, freed at close */
    int nprogs, capprogs;
    qh_Program *script;   /* the program run (qh -i FILE), or NULL */
    qh_Program *last_run; /* the entry :deps shows */
    qh_ShowFn show;       /* a host's display (qh_set_show), or NULL */
    void *show_ud;
    qh_PollFn poll; /* a host's poll (qh_set_poll), or NULL */
    void *poll_ud;
    bool polling;     /* inside the host's poll */
    double poll_last; /* when it last ran (coarse clock) */
    qh_InputFn input; /* a host's input() (qh_set_input), or NULL */
    void *input_ud;
};

/* the state an Interp belongs to (hooks get the Interp) */
static qh_State *state_of(Interp *in) { return (qh_State *)((char *)in - offsetof(qh_State, in)); }

qh_State *qh_open(const qh_Config *cfg)
{
    qh_init();
    qh_Config def;
    memset(&def, 0, sizeof def);
    if (!cfg) cfg = &def;
    qh_State *Q = xcalloc(1, sizeof *Q);
    Interp *in = &Q->in;
    in->out = cfg->out ? cfg->out : stdout;
    in->err = cfg->err ? cfg->err : stderr;
    in->sync = cfg->sync;
    in->no_lookahead = cfg->no_lookahead;
    in->no_fusion = cfg->no_fusion;
    in->nworkers = cfg->workers;
    in->seed = cfg->seed_given ? cfg->seed : 0x5eed; /* a fixed default: runs repeat */
    in->seed_given = cfg->seed_given;
    in->max_memory = cfg->max_memory;
    in->trace_path = cfg->trace_path;
    in->stats = cfg->stats;
    in->stdlib_dir = cfg->stdlib_dir;
    in->qh_path = cfg->qh_path;
    in->ncpu = qh_cpus();
    async_attach(in);
    qrt_attach(in);   /* the memory budget, for distributed states */
    diffq_attach(in); /* qfn calls with differentiated arguments */
    load_attach(in);
    Q->argv = list_new(0);
    for (int i = 0; i < cfg->argc; i++) list_push(Q->argv, v_str(cfg->argv[i]));
    qh_stop_watch(&in->interrupt); /* a host's qh_interrupt reaches the lower rooms too */
    if (cfg->handle_sigint) async_install_sigint(in);
    return Q;
}

/* the main VM and the background runtime, at the first run */
static void start(qh_State *Q)
{
    if (Q->started) return;
    Q->started = true;
    vm_init(&Q->vm, &Q->in, false);
    rng_seed(&Q->vm.rng, Q->in.seed);
    Q->vm.stream_seed = Q->in.seed;
    async_start(&Q->in, Q->in.trace_path);
}

/* the main module: the program's, or a fresh REPL session's */
static ObjModule *main_module(qh_State *Q, ModInfo *info)
{
    if (Q->main) return Q->main;
    Q->main = module_new(info, "__main__");
    Q->first_proto = info->nprotos;
    int slot = resolve_global_slot(info, "argv");
    qh_assert(slot >= 0 && slot < Q->main->nglobals);
    Value old = Q->main->globals[slot];
    Q->main->globals[slot] = v_list(Q->argv);
    decref(old);
    Q->argv = NULL;
    return Q->main;
}

static void free_part(ModInfo *m)
{
    Source *src = m->src;
    analyse_free_body(m->body);
    parse_free(m);
    source_free(src);
}

/* Flushes the program's output: what could not be written is an error
 * (status 1, as Python), a reader gone away ends quietly. */
static int flush_out(Interp *in, int status)
{
    errno = 0;
    if (fflush(in->out) == 0 && !ferror(in->out)) return status;
    int e = errno ? errno : EIO;
    clearerr(in->out);
    if (e == EPIPE) in->out_errno = EPIPE;
    if (in->out_errno == EPIPE) return status;
    fprintf(in->err, "qh: cannot write to %s: %s\n",
            in->out == stdout ? "standard output" : "the output", strerror(e));
    in->out_lost = true;
    return status == 0 ? 1 : status;
}

bool qh_ended(qh_State *Q) { return Q->in.out_errno == EPIPE || atomic_load(&Q->in.terminate); }

int qh_close(qh_State *Q, int status)
{
    Interp *in = &Q->in;
    ModInfo *table = Q->main ? Q->main->info : NULL; /* entries' functions are in its list */
    status = flush_out(in, status);
    if (Q->started) {
        bool stop = status != 0 || qh_ended(Q);
        int unobserved = async_finish(in, &Q->vm, stop);
        if (status == 0 && unobserved) status = 1;
    }
    /* Ctrl-C, SIGTERM, a broken pipe: whatever failed because of it */
    if (atomic_load(&in->sigint) || qh_ended(Q)) status = vm_stop_status(in);
    /* break every cycle reachable from the program's modules, then release them */
    size_t nm = in->modules ? in->modules->nent : 0, k = 0;
    Value *roots = xmalloc((nm + 1) * sizeof(Value));
    if (Q->main) roots[k++] = v_obj(&Q->main->h);
    for (size_t i = 0; i < nm; i++)
        if (in->modules->ent[i].live) roots[k++] = in->modules->ent[i].val;
    value_break_cycles(roots, (int)k);
    free(roots);
    if (Q->main) decref(v_obj(&Q->main->h));
    load_free_all(in);
    value_gc_collect(true); /* cycles dropped since the last collection */
    if (Q->started) {
        vm_free(&Q->vm);
        vm_thread_cleanup();
    }
    /* the main table's functions from entries live in the entries' arenas:
     * their tables go first, then every parse */
    if (table) {
        for (int i = Q->first_proto; i < table->nprotos; i++) {
            FnProto *f = table->protos[i];
            free(f->local_is_cell);
            free(f->local_names);
            free(f->upvals);
            free(f->global_reads);
            free(f->global_calls);
        }
        table->nprotos = Q->first_proto;
    }
    for (int i = 0; i < Q->nprogs; i++) {
        free_part(Q->progs[i]->part);
        free(Q->progs[i]);
    }
    free(Q->progs);
    if (Q->session_info) free_part(Q->session_info);
    if (Q->hide) resolve_hide_free(Q->hide);
    if (Q->argv) decref(v_list(Q->argv));
    status = flush_out(in, status);
    if (in->out_errno == EPIPE)
        status = vm_stop_status(in);
    else if (in->out_lost && status == 0)
        status = 1; /* output lost, even if the program went on */
    free(Q);
    return status;
}

/* ---------------------------------------------------------------- compiling */

static qh_Program *keep(qh_State *Q, ModInfo *info, ModInfo *part, bool entry)
{
    qh_Program *p = xcalloc(1, sizeof *p);
    p->Q = Q;
    p->info = info;
    p->part = part;
    p->entry = entry;
    if (Q->nprogs == Q->capprogs) {
        Q->capprogs = Q->capprogs ? Q->capprogs * 2 : 16;
        Q->progs = xrealloc(Q->progs, (size_t)Q->capprogs * sizeof *Q->progs);
    }
    Q->progs[Q->nprogs++] = p;
    return p;
}

qh_Program *qh_compile(qh_State *Q, const char *name, const char *text, size_t len, FILE *diag)
{
    Source *src = source_from_text(name, text, len);
    ModInfo *m;
    bool ok = load_compile(&Q->in, src, LOAD_MAIN, NULL, NULL, diag, &m);
    if (!m) {
        source_free(src);
        return NULL;
    }
    qh_assert(ok);
    return keep(Q, m, m, false);
}

qh_Program *qh_compile_file(qh_State *Q, const char *path, FILE *diag)
{
    char err[600];
    Source *src = source_from_file(path, path, err, sizeof err);
    if (!src) {
        fprintf(diag, "qh: %s\n", err);
        return NULL;
    }
    ModInfo *m;
    bool ok = load_compile(&Q->in, src, LOAD_MAIN, NULL, NULL, diag, &m);
    if (!m) {
        source_free(src);
        return NULL;
    }
    qh_assert(ok);
    return keep(Q, m, m, false);
}

void qh_print_deps(const qh_Program *p, FILE *out)
{
    analyse_print_deps(p->info, p->part->body, out);
}

/* an entry from src (taken) into the session */
static qh_Program *compile_entry(qh_State *Q, Source *src, bool dry, FILE *diag)
{
    if (!Q->main) {
        /* a fresh session: an empty program declaring argv */
        Source *s = source_from_text("<repl>", "", 0);
        ModInfo *m;
        bool ok = load_compile(&Q->in, s, LOAD_MAIN, NULL, NULL, diag, &m);
        qh_assert(ok && m);
        (void)ok;
        Q->session_info = m;
        main_module(Q, m);
    }
    ModInfo *table = Q->main->info;
    if (!Q->hide) {
        Q->hide = resolve_hide_new();
        /* what the script bound (it was warned about already) */
        if (Q->script)
            resolve_warn_hidden(table, Q->script->part->body, builtin_lookup, Q->hide, NULL);
    }
    int first = table->nprotos;
    ModInfo *part;
    bool ok = load_compile(&Q->in, src, LOAD_ENTRY, table, dry ? NULL : Q->hide, diag, &part);
    if (!part) {
        source_free(src);
        return NULL;
    }
    qh_Program *p = keep(Q, table, part, true); /* kept: its nodes may be referenced */
    p->dry = dry;
    p->first_proto = first;
    p->end_proto = table->nprotos;
    if (!ok) return NULL;
    module_grow(Q->main);
    return p;
}

qh_Program *qh_compile_entry(qh_State *Q, const char *name, const char *text, size_t len,
                             int number, bool dry, FILE *diag)
{
    Source *src = source_from_text(name, text, len);
    src->entry = number;
    return compile_entry(Q, src, dry, diag);
}

qh_Program *qh_compile_cell(qh_State *Q, const char *name, const char *text, size_t len, int number,
                            const char *label, FILE *diag)
{
    qh_assert(number > 0);
    Source *src = source_from_text(name, text, len);
    src->entry = number;
    src->label = label ? xstrdup(label) : NULL;
    return compile_entry(Q, src, false, diag);
}

int qh_entry_state(const char *text, size_t len, int *depth)
{
    int d = parse_open_depth(text, len);
    if (depth) *depth = d;
    if (d > 0) return QH_INCOMPLETE;
    /* the parse alone: no names are resolved, nothing is defined */
    char *junk = NULL;
    size_t njunk = 0;
    FILE *diag = open_memstream(&junk, &njunk);
    if (!diag) return QH_COMPLETE;
    Source *src = source_from_text("<check>", text, len);
    ModInfo *m = parse_source(src, diag);
    fclose(diag);
    free(junk);
    if (m) parse_free(m);
    source_free(src);
    return m ? QH_COMPLETE : QH_INVALID;
}

qh_Program *qh_compile_entry_file(qh_State *Q, const char *path, FILE *diag)
{
    char err[600];
    Source *src = source_from_file(path, path, err, sizeof err);
    if (!src) {
        fprintf(diag, "qh: %s\n", err);
        return NULL;
    }
    return compile_entry(Q, src, false, diag);
}

bool qh_print_entry_deps(qh_State *Q, qh_Program *entry, FILE *out)
{
    if (!entry) entry = Q->last_run;
    if (!entry) {
        if (!Q->script) return false;
        analyse_print_deps(Q->script->info, Q->script->part->body, out);
        return true;
    }
    qh_assert(entry->entry);
    ModInfo *table = entry->info;
    DepsState *st = analyse_deps_new();
    if (Q->script)
        analyse_deps_part(table, Q->script->part->src, Q->script->part->body, 0, 0, st, NULL);
    for (int i = 0; i < Q->nprogs && Q->progs[i] != entry; i++)
        if (Q->progs[i]->entry && Q->progs[i]->ran)
            analyse_deps_part(table, Q->progs[i]->part->src, Q->progs[i]->part->body, 0, 0, st,
                              NULL);
    analyse_deps_part(table, entry->part->src, entry->part->body, entry->first_proto,
                      entry->end_proto, st, out);
    analyse_deps_free(st);
    if (entry->dry && entry->end_proto > entry->first_proto) {
        /* analysed only: its definitions are forgotten */
        qh_assert(table->nprotos == entry->end_proto);
        load_forget_protos(table, entry->first_proto);
        entry->end_proto = entry->first_proto;
    }
    return true;
}

/* ---------------------------------------------------------------- running */

/* an uncaught error: printed (unless Ctrl-C), the VM ready for more (qh -i) */
static int report(qh_State *Q)
{
    VM *vm = &Q->vm;
    int status = flush_out(&Q->in, 1);
    while (vm->sp) decref(vm->stack[--vm->sp]);
    vm->depth = 0;
    vm->frame = NULL;
    if (vm->err.interrupted) return vm_stop_status(&Q->in);
    vm_print_error(vm, Q->in.err);
    return status;
}

int qh_run(qh_State *Q, qh_Program *p)
{
    qh_assert(!Q->ran && !p->entry);
    Q->ran = true;
    Q->script = p;
    start(Q);
    ObjModule *m = main_module(Q, p->info);
    int status = vm_run_module(&Q->vm, m) ? 0 : report(Q);
    return flush_out(&Q->in, status);
}

/* An expression statement of an entry, run with QH_ECHO or QH_SHOW: its
 * value printed, or shown by the host (show: the entry's last statement
 * under QH_SHOW), or applied (an operator as a statement). False on an
 * error. */
static bool echo_stmt(qh_State *Q, Node *s, unsigned flags, unsigned long since, bool show)
{
    VM *vm = &Q->vm;
    Value v = eval_expr(vm, s->u.expr.expr);
    if (IS_EXC(v)) return false;
    bool ok = true;
    Buf b;
    buf_init(&b);
    if (type_of(v)->stmt) {
        /* a value with an effect as a statement (an operator applies) */
        Value x = type_of(v)->stmt(vm, v, s);
        if (IS_EXC(x))
            ok = false;
        else
            decref(x);
    } else if (show) {
        /* the host's display: it does not wait for a future */
        if (v.t != T_NIL && (v.t != T_STR || AS_STR(v)->len > 0))
            ok = Q->show(Q, v, true, Q->show_ud);
    } else if (!(flags & QH_WAIT) && async_pending_text(v, since, &b)) {
        /* an earlier entry's call still running: show it, do not wait (:wait does) */
        buf_putc(&b, '\n');
        ok = vm_write_out(vm, b.p, b.len, false, s);
    } else if (v.t != T_NIL) {
        if (tp_repr(vm, &b, v, false, s)) {
            buf_putc(&b, '\n');
            if (b.len > 1 || v.t != T_STR) ok = vm_write_out(vm, b.p, b.len, false, s);
        } else
            ok = false;
    }
    buf_free(&b);
    decref(v);
    return ok;
}

/* An entry's statement failed: the VM made ready for the next entry, the
 * calls the entry made cancelled if it was interrupted, the error printed
 * unless the host keeps it (QH_KEEP_ERROR). */
static qh_Outcome entry_failed(qh_State *Q, qh_Program *entry, unsigned flags)
{
    Interp *in = &Q->in;
    VM *vm = &Q->vm;
    while (vm->sp) decref(vm->stack[--vm->sp]);
    vm->depth = 0;
    vm->frame = NULL;
    if (in->out_errno == EPIPE || atomic_load(&in->terminate)) {
        async_cancel_all(in); /* the session ends (the REPL sees qh_ended) */
        return QH_STOPPED;
    }
    if (vm->err.interrupted || atomic_load(&in->sigint)) {
        if (!(flags & QH_KEEP_ERROR)) fprintf(in->err, "interrupted\n");
        async_cancel_entry(in, entry->part->src->entry); /* its own calls, not earlier entries' */
        return QH_INTERRUPTED;
    }
    if (!(flags & QH_KEEP_ERROR)) vm_print_error(vm, in->err);
    return QH_FAILED;
}

qh_Outcome qh_run_cell(qh_State *Q, qh_Program *entry, unsigned flags)
{
    qh_assert(entry->entry && !entry->dry);
    qh_assert(!(flags & QH_SHOW) || Q->show);
    start(Q);
    Interp *in = &Q->in;
    VM *vm = &Q->vm;
    Node *body = entry->part->body;
    entry->ran = true;
    Q->last_run = entry;
    vm->top_src = entry->part->src;             /* messages point into this input */
    unsigned long since = async_dispatches(in); /* calls from here on are this entry's */
    atomic_store(&in->interrupt, 0);
    atomic_store(&in->sigint, 0);
    qh_Outcome out = QH_DONE;
    int n = body->u.list.n;
    for (int i = 0; i < n; i++) {
        Node *s = body->u.list.items[i];
        vm->cur_line = s->line;
        vm->mod = Q->main;
        vm->frame = NULL;
        bool ok = true, last = i == n - 1;
        if (s->kind == N_EXPRSTMT && ((flags & QH_ECHO) || (last && (flags & QH_SHOW)))) {
            ok = echo_stmt(Q, s, flags, since, last && (flags & QH_SHOW));
        } else {
            ExecStatus st = exec_stmt(vm, s);
            if (st == S_ERR)
                ok = false;
            else if (st == S_BREAK || st == S_CONTINUE) {
                vm_error(vm, s, "'break' or 'continue' outside a loop");
                ok = false;
            }
        }
        if (ok) ok = vm_write_out(vm, NULL, 0, true, s);
        if (ok && !last && atomic_load(&in->poll) && in->hooks.poll) in->hooks.poll(vm);
        if (!ok) {
            out = entry_failed(Q, entry, flags);
            break;
        }
    }
    atomic_store(&in->sigint, 0);
    atomic_store(&in->interrupt, 0);
    vm->top_src = NULL;
    return out;
}

bool qh_run_entry(qh_State *Q, qh_Program *entry, unsigned flags)
{
    return qh_run_cell(Q, entry, flags) == QH_DONE;
}

void qh_print_error(qh_State *Q, FILE *out)
{
    if (Q->started) vm_print_error(&Q->vm, out);
}

/* ---------------------------------------------------------------- hosts that show */

static bool host_show(VM *vm, Value v, const Node *site)
{
    (void)site;
    qh_State *Q = state_of(vm->in);
    return Q->show(Q, v, false, Q->show_ud);
}

void qh_set_show(qh_State *Q, qh_ShowFn fn, void *ud)
{
    Q->show = fn;
    Q->show_ud = ud;
    Q->in.hooks.show = fn ? host_show : NULL;
}

static double coarse_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Interp.hooks.poll: the host's poll at most every 20 ms, on a VM left as
 * it found it (the program goes on where it was). */
static void host_poll(VM *vm)
{
    qh_State *Q = state_of(vm->in);
    if (Q->polling || !Q->poll || vm != &Q->vm) return;
    double t = coarse_now();
    if (t - Q->poll_last < 0.02) return;
    Q->poll_last = t;
    VMError *err = xmalloc(sizeof *err);
    memcpy(err, &vm->err, sizeof *err);
    Frame *frame = vm->frame;
    int depth = vm->depth, line = vm->cur_line;
    size_t sp = vm->sp;
    ObjModule *mod = vm->mod;
    const Source *top = vm->top_src;
    Q->polling = true;
    Q->poll(Q, Q->poll_ud);
    Q->polling = false;
    while (vm->sp > sp) decref(vm->stack[--vm->sp]);
    vm->frame = frame;
    vm->depth = depth;
    vm->cur_line = line;
    vm->mod = mod;
    vm->top_src = top;
    memcpy(&vm->err, err, sizeof *err);
    free(err);
}

void qh_set_poll(qh_State *Q, qh_PollFn fn, void *ud)
{
    Q->poll = fn;
    Q->poll_ud = ud;
    Q->in.hooks.poll = fn ? host_poll : NULL;
    if (!fn) atomic_store(&Q->in.poll, 0);
}

/* Interp.hooks.input: the host's answer as input()'s (vm.h's contract). */
static int host_input(VM *vm, const char *prompt, size_t plen, Buf *line, const Node *site)
{
    qh_State *Q = state_of(vm->in);
    char *text = NULL;
    size_t len = 0;
    int r = Q->input(Q, prompt, plen, &text, &len, Q->input_ud);
    switch (r) {
    case QH_INPUT_LINE:
        buf_put(line, text, len);
        free(text);
        if (buf_failed(line)) {
            vm_oom(vm, site);
            return -1;
        }
        return 1;
    case QH_INPUT_EOF: free(text); return 0;
    case QH_INPUT_ERROR:
        vm_error(vm, site, "input(): %s", text ? text : "the host cannot read a line");
        free(text);
        return -1;
    case QH_INPUT_INTERRUPTED:
        free(text);
        if (!vm_check_interrupt(vm)) vm_interrupted(vm, NULL);
        return -1;
    }
    free(text);
    qh_unreachable();
}

void qh_set_input(qh_State *Q, qh_InputFn fn, void *ud)
{
    Q->input = fn;
    Q->input_ud = ud;
    Q->in.hooks.input = fn ? host_input : NULL;
}

bool qh_interrupt_requested(qh_State *Q) { return atomic_load(&Q->in.interrupt) != 0; }

void qh_want_poll(qh_State *Q, bool on) { atomic_store(&Q->in.poll, on && Q->poll ? 1 : 0); }

int qh_future_state(Value v)
{
    int st = async_future_state(v);
    if (st < 0) return QH_NOT_FUTURE;
    switch ((FutState)st) {
    case FUT_PENDING: return QH_QUEUED;
    case FUT_RUNNING: return QH_RUNNING;
    case FUT_DONE: return QH_DONE_FUT;
    case FUT_FAILED: return QH_FAILED_FUT;
    case FUT_CANCELLED: return QH_CANCELLED;
    }
    qh_unreachable();
}

char *qh_show_text(qh_State *Q, Value v, size_t *len)
{
    start(Q);
    VM *vm = &Q->vm;
    Buf b;
    buf_init(&b);
    int st = qh_future_state(v);
    bool ok = true;
    if (st == QH_QUEUED || st == QH_RUNNING || st == QH_CANCELLED)
        async_future_text(v, &b); /* never waited for */
    else {
        ObjModule *saved = vm->mod;
        if (!vm->mod) vm->mod = Q->main;
        ok = tp_repr(vm, &b, v, false, NULL);
        vm->mod = saved;
    }
    if (ok && buf_failed(&b)) {
        vm_oom(vm, NULL);
        ok = false;
    }
    if (!ok) {
        buf_free(&b);
        return NULL;
    }
    if (len) *len = b.len;
    char *text = b.p ? b.p : xstrdup("");
    return text;
}

char *qh_show_svg(qh_State *Q, Value v, size_t *len)
{
    (void)Q;
    if (qh_future_state(v) != QH_NOT_FUTURE) {
        if (qh_future_state(v) != QH_DONE_FUT) return NULL;
        Value r = qh_force(Q, v);
        if (IS_EXC(r)) return NULL;
        char *t = qh_show_svg(Q, r, len);
        decref(r);
        return t;
    }
    const char *svg = picture_svg(v);
    if (!svg) return NULL;
    if (len) *len = strlen(svg);
    return xstrdup(svg);
}

void qh_interrupt(qh_State *Q) { async_interrupt(&Q->in); }

void qh_signal_prompt(qh_State *Q, volatile sig_atomic_t *at_prompt,
                      volatile sig_atomic_t *prompt_hit)
{
    async_signal_prompt(&Q->in, at_prompt, prompt_hit);
}

void qh_print_tasks(qh_State *Q, FILE *out) { async_print_tasks(&Q->in, Q->main, out); }

int qh_pending(qh_State *Q) { return Q->started ? async_pending(&Q->in) : 0; }

void qh_describe_pending(qh_State *Q, FILE *out)
{
    if (Q->started) async_describe_pending(&Q->in, out);
}

double qh_wait_seconds(qh_State *Q) { return Q->started ? Q->vm.wait_time : 0; }

void qh_complete(qh_State *Q, const char *text, void (*cand)(const char *name, void *ud), void *ud)
{
    ObjModule *mod = Q->main;
    const char *dot = strrchr(text, '.');
    size_t n = strlen(text);
    if (dot) {
        /* module members: NAME.pre */
        char modname[256];
        size_t ml = (size_t)(dot - text);
        if (!mod || ml >= sizeof modname) return;
        memcpy(modname, text, ml);
        modname[ml] = 0;
        int slot = resolve_global_slot(mod->info, modname);
        if (slot < 0 || slot >= mod->nglobals || mod->globals[slot].t != T_MODULE) return;
        ObjModule *m = AS_MOD(mod->globals[slot]);
        size_t pl = strlen(dot + 1);
        char full[600];
        for (int i = 0; i < m->nglobals; i++) {
            const char *g = m->info->gnames[i];
            if (m->globals[i].t == T_UNBOUND || g[0] == '_' || strncmp(g, dot + 1, pl) != 0)
                continue;
            snprintf(full, sizeof full, "%s.%s", modname, g);
            cand(full, ud);
        }
        return;
    }
    if (mod)
        for (int i = 0; i < mod->nglobals && i < mod->info->nglobals; i++)
            if (mod->globals[i].t != T_UNBOUND && strncmp(mod->info->gnames[i], text, n) == 0)
                cand(mod->info->gnames[i], ud);
    for (int i = 0; i < builtin_count(); i++)
        if (strncmp(builtin_get(i)->name, text, n) == 0) cand(builtin_get(i)->name, ud);
    for (int i = 0; lex_keyword(i); i++)
        if (strncmp(lex_keyword(i), text, n) == 0) cand(lex_keyword(i), ud);
}

/* the text of line `line` (1-based) of src: start and length */
static const char *source_line(const Source *src, int line, size_t *len)
{
    const char *p = src->text, *e = src->text + src->len;
    for (int l = 1; l < line && p < e; l++) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        p = nl ? nl + 1 : e;
    }
    const char *nl = memchr(p, '\n', (size_t)(e - p));
    *len = (size_t)((nl ? nl : e) - p);
    return p;
}

char *qh_describe(qh_State *Q, const char *name)
{
    ObjModule *mod = Q->main;
    if (!mod) return NULL;
    const char *dot = strchr(name, '.');
    char head[256];
    size_t hl = dot ? (size_t)(dot - name) : strlen(name);
    if (hl >= sizeof head) return NULL;
    memcpy(head, name, hl);
    head[hl] = 0;
    int slot = resolve_global_slot(mod->info, head);
    if (slot < 0 || slot >= mod->nglobals) return NULL;
    Value v = mod->globals[slot];
    if (dot) {
        if (v.t != T_MODULE || strchr(dot + 1, '.')) return NULL;
        ObjModule *m = AS_MOD(v);
        int s = resolve_global_slot(m->info, dot + 1);
        if (s < 0 || s >= m->nglobals) return NULL;
        v = m->globals[s];
    }
    if (v.t != T_FUNC) return NULL;
    const FnProto *p = AS_FUNC(v)->p;
    const Source *src = p->mod ? p->mod->src : NULL;
    if (!src || !src->text || p->line < 1) return NULL;
    Buf b;
    buf_init(&b);
    /* the comment lines just above the definition, then the definition up to its body */
    int first = p->line;
    for (size_t len; first > 1;) {
        const char *t = source_line(src, first - 1, &len);
        while (len && (*t == ' ' || *t == '\t')) t++, len--;
        if (!len || *t != '#') break;
        first--;
    }
    size_t len;
    const char *t = source_line(src, p->line, &len);
    const char *brace = memchr(t, '{', len);
    size_t dl = brace ? (size_t)(brace - t) : len;
    while (dl && (t[dl - 1] == ' ' || t[dl - 1] == '\t')) dl--;
    size_t lead = 0;
    while (lead < dl && (t[lead] == ' ' || t[lead] == '\t')) lead++;
    buf_put(&b, t + lead, dl - lead);
    for (int l = first; l < p->line; l++) {
        const char *c = source_line(src, l, &len);
        while (len && (*c == ' ' || *c == '\t')) c++, len--;
        buf_putc(&b, '\n');
        buf_put(&b, c, len);
    }
    if (buf_failed(&b)) {
        buf_free(&b);
        return NULL;
    }
    return b.p;
}

/* ---------------------------------------------------------------- values */

bool qh_get_global(qh_State *Q, const char *name, Value *out)
{
    if (Q->main) {
        int slot = resolve_global_slot(Q->main->info, name);
        if (slot >= 0 && slot < Q->main->nglobals && Q->main->globals[slot].t != T_UNBOUND) {
            *out = Q->main->globals[slot];
            incref(*out);
            return true;
        }
    }
    int b = builtin_lookup(name); /* the names every program sees */
    if (b < 0) return false;
    *out = builtin_value(b);
    return true;
}

/* a host's call or force: on the main VM, in the main module; an error
 * leaves the VM as it found it */
static void host_enter(qh_State *Q, ObjModule **saved)
{
    start(Q);
    *saved = Q->vm.mod;
    if (!Q->vm.mod) Q->vm.mod = Q->main;
}
static Value host_leave(qh_State *Q, ObjModule *saved, size_t sp, Value r)
{
    VM *vm = &Q->vm;
    if (IS_EXC(r)) {
        while (vm->sp > sp) decref(vm->stack[--vm->sp]);
        vm->frame = NULL;
        vm->depth = 0;
    }
    vm->mod = saved;
    return r;
}

Value qh_call(qh_State *Q, Value fn, int nargs, Value *args)
{
    ObjModule *saved;
    host_enter(Q, &saved);
    size_t sp = Q->vm.sp;
    /* the callee may replace arguments in place (futures resolved): it
     * gets its own references, the host's stay borrowed */
    Value small[8], *own = nargs <= 8 ? small : xmalloc((size_t)nargs * sizeof(Value));
    for (int i = 0; i < nargs; i++) {
        own[i] = args[i];
        incref(own[i]);
    }
    Value r = vm_call(&Q->vm, fn, nargs, own, NULL);
    for (int i = 0; i < nargs; i++) decref(own[i]);
    if (own != small) free(own);
    return host_leave(Q, saved, sp, r);
}

Value qh_force(qh_State *Q, Value v)
{
    ObjModule *saved;
    host_enter(Q, &saved);
    return host_leave(Q, saved, Q->vm.sp, tp_force(&Q->vm, v, NULL));
}

const char *qh_error_message(qh_State *Q) { return Q->started ? Q->vm.err.msg : ""; }

Interp *qh_interp(qh_State *Q) { return &Q->in; }
ModInfo *qh_program_info(const qh_Program *p) { return p->info; }
const char *qh_program_text(const qh_Program *p, const char **name, size_t *len)
{
    *name = p->part->src->name;
    *len = p->part->src->len;
    return p->part->src->text;
}
void qh_start(qh_State *Q) { start(Q); }
