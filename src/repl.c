/* repl.c — the interactive REPL on GNU readline: prompts and continuation
 * lines, history across sessions, tab completion, printing expression
 * values (waiting for futures made by the entry; showing those of earlier
 * entries that still run), errors that keep the session, Ctrl-C that
 * cancels the running statement, and the : commands. Each input (an
 * "entry", numbered from 1 as typed) is parsed on its own and resolved into
 * one growing global table. Knows the parser, resolver, analyser and
 * evaluator entry points, and readline. */
#include "repl.h"
#include "analyse.h"
#include "async.h"
#include "diag.h"
#include "eval.h"
#include "parse.h"
#include "qh.h"
#include "resolve.h"

#include <errno.h>
#include <readline/history.h>
#include <readline/readline.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


/* One input's parse, kept for the session: its functions point into it. */
typedef struct Part {
    ModInfo *info;
    int first_proto, end_proto;     /* its functions in the session's table */
    bool ran;                       /* run (not only analysed, not rejected) */
} Part;

typedef struct Repl {
    Interp *in;
    VM *vm;
    ModInfo *info;          /* the growing global table */
    ObjModule *mod;
    ModInfo *script;        /* qh -i FILE: the script that ran first */
    Part *parts;
    int nparts, capparts;
    int last_run;           /* the part :deps shows, -1 before any */
    HideMemo *hide;         /* builtins hidden by globals, across entries */
    char *history;
    int counter;            /* inputs so far; the one being handled is counter + 1 */
    bool quit;
} Repl;

static Repl *the_repl;      /* for readline's completion callback only */
static volatile sig_atomic_t at_prompt;

static const char *const keywords[] = {
    "fn", "qfn", "on", "return", "if", "elif", "else", "while", "for", "in", "break", "continue",
    "and", "or", "not", "true", "false", "nil", "import", "global", "try", "catch", NULL
};
static const char *const commands[] = { ":help", ":quit", ":tasks", ":wait", ":time", ":deps", ":load", NULL };


static char *history_path(void)
{
    const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    char buf[4096];
    if (xdg && *xdg) {
        snprintf(buf, sizeof buf, "%s/qh", xdg);
        mkdir(buf, 0700);
        snprintf(buf, sizeof buf, "%s/qh/history", xdg);
        return strdup(buf);
    }
    if (home && *home) {
        /* the XDG default place if it is in use, else the classic dot file */
        snprintf(buf, sizeof buf, "%s/.local/state/qh/history", home);
        if (access(buf, F_OK) == 0) return strdup(buf);
        snprintf(buf, sizeof buf, "%s/.qh_history", home);
        return strdup(buf);
    }
    return NULL;
}

/* ---- completion: globals, builtins, keywords, module members ---- */

static char **cands;
static int ncands, capcands;

static void cand_add(const char *s, const char *prefix, size_t plen, const char *lead)
{
    if (strncmp(s, prefix, plen) != 0) return;
    size_t n = strlen(lead) + strlen(s) + 1;
    char *c = malloc(n);
    snprintf(c, n, "%s%s", lead, s);
    for (int i = 0; i < ncands; i++) if (strcmp(cands[i], c) == 0) { free(c); return; }
    if (ncands == capcands) { capcands = capcands ? capcands * 2 : 64; cands = realloc(cands, (size_t)capcands * sizeof(char *)); }
    cands[ncands++] = c;
}

static char *gen(const char *text, int state)
{
    static int idx;
    if (state == 0) {
        for (int i = 0; i < ncands; i++) free(cands[i]);
        ncands = 0;
        idx = 0;
        Repl *r = the_repl;
        const char *dot = strrchr(text, '.');
        if (text[0] == ':') {
            for (int i = 0; commands[i]; i++) cand_add(commands[i], text, strlen(text), "");
        } else if (dot) {
            /* module members: NAME.pre */
            char modname[256];
            size_t ml = (size_t)(dot - text);
            if (ml < sizeof modname) {
                memcpy(modname, text, ml);
                modname[ml] = 0;
                int slot = resolve_global_slot(r->info, modname);
                if (slot >= 0 && slot < r->mod->nglobals && r->mod->globals[slot].t == T_MODULE) {
                    ObjModule *m = AS_MOD(r->mod->globals[slot]);
                    char lead[300];
                    snprintf(lead, sizeof lead, "%s.", modname);
                    for (int i = 0; i < m->nglobals; i++)
                        if (m->globals[i].t != T_UNBOUND && m->info->gnames[i][0] != '_')
                            cand_add(m->info->gnames[i], dot + 1, strlen(dot + 1), lead);
                }
            }
        } else {
            size_t n = strlen(text);
            for (int i = 0; i < r->mod->nglobals && i < r->info->nglobals; i++)
                if (r->mod->globals[i].t != T_UNBOUND) cand_add(r->info->gnames[i], text, n, "");
            for (int i = 0; i < builtin_count(); i++) cand_add(builtin_get(i)->name, text, n, "");
            for (int i = 0; keywords[i]; i++) cand_add(keywords[i], text, n, "");
        }
    }
    if (idx < ncands) return strdup(cands[idx++]);
    return NULL;
}

static char **complete(const char *text, int start, int end)
{
    (void)start; (void)end;
    rl_attempted_completion_over = 1;
    return rl_completion_matches(text, gen);
}

/* ---- Ctrl-C ---- */

static Interp *sig_in;
static volatile sig_atomic_t prompt_sigint;

/* Only flags: readline's state is changed outside the handler, in the
 * event hook readline calls when a read is interrupted. */
static void on_sigint(int sig)
{
    (void)sig;
    if (at_prompt) { prompt_sigint = 1; return; }
    if (sig_in) {
        atomic_store(&sig_in->sigint, 1);
        atomic_store(&sig_in->interrupt, 1);
    }
}

static Buf *pending;         /* lines typed so far of an unfinished statement */

static int on_signal_event(void)
{
    if (prompt_sigint) {
        /* Ctrl-C at the prompt: drop the line and any pending lines, fresh prompt */
        prompt_sigint = 0;
        if (pending) { pending->len = 0; if (pending->p) pending->p[0] = 0; }
        rl_replace_line("", 0);
        rl_crlf();
        rl_set_prompt("qh> ");
        rl_on_new_line();
        rl_redisplay();
    }
    return 0;
}

/* ---- history: one entry per line in the file, newlines escaped ---- */

static void history_load(const char *path)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f) return;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        if (line[n - 1] == '\n') line[--n] = 0;
        char *o = line;
        for (char *i = line; *i; i++) {
            if (*i == '\\' && i[1] == 'n') { *o++ = '\n'; i++; }
            else if (*i == '\\' && i[1] == '\\') { *o++ = '\\'; i++; }
            else *o++ = *i;
        }
        *o = 0;
        if (*line) add_history(line);
    }
    free(line);
    fclose(f);
}

static void history_append(const char *path, const char *entry)
{
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f) return;
    for (const char *c = entry; *c; c++) {
        if (*c == '\n') fputs("\\n", f);
        else if (*c == '\\') fputs("\\\\", f);
        else fputc(*c, f);
    }
    fputc('\n', f);
    fclose(f);
}

/* keeps the file to its last 1000 entries */
static void history_trim(const char *path)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f) return;
    char **lines = NULL;
    size_t n = 0, cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    while (getline(&line, &lcap, f) > 0) {
        if (n == cap) { cap = cap ? cap * 2 : 256; lines = realloc(lines, cap * sizeof(char *)); }
        lines[n++] = strdup(line);
    }
    free(line);
    fclose(f);
    if (n > 1000) {
        f = fopen(path, "w");
        if (f) { for (size_t i = n - 1000; i < n; i++) fputs(lines[i], f); fclose(f); }
    }
    for (size_t i = 0; i < n; i++) free(lines[i]);
    free(lines);
}

/* ---- running one input ---- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int keep_part(Repl *r, ModInfo *part, int first_proto)
{
    if (r->nparts == r->capparts) {
        r->capparts = r->capparts ? r->capparts * 2 : 16;
        r->parts = realloc(r->parts, (size_t)r->capparts * sizeof(Part));
    }
    r->parts[r->nparts] = (Part){ part, first_proto, r->info->nprotos, false };
    return r->nparts++;
}

/* Takes the functions from first on out of the session's table again: a
 * part that was rejected, or only analysed (:deps STMT), defined nothing. */
static void forget_protos(Repl *r, Part *p)
{
    for (int i = p->first_proto; i < r->info->nprotos; i++) {
        FnProto *f = r->info->protos[i];
        free(f->local_is_cell); free(f->local_names); free(f->upvals);
        free(f->global_reads); free(f->global_calls);
        f->local_is_cell = NULL; f->local_names = NULL; f->upvals = NULL;
        f->global_reads = NULL; f->global_calls = NULL;
    }
    r->info->nprotos = p->first_proto;
    p->end_proto = p->first_proto;
}

/* Parses src (taken over) as a new part of the session and resolves it into
 * the session's globals; its diagnostics show its own text. Returns the
 * part's index, or -1 after printing errors. dry: analysed only, never run
 * (:deps STMT): its functions are forgotten by the caller. */
static int compile(Repl *r, Source *src, bool dry)
{
    ModInfo *part = parse_source(src, stderr);
    if (!part) { source_free(src); return -1; }
    int first = r->info->nprotos;
    /* the session's table owns the protos for analysis; each keeps its part for messages */
    for (int i = 0; i < part->nprotos; i++) {
        if (r->info->nprotos % 16 == 0)
            r->info->protos = realloc(r->info->protos, (size_t)(r->info->nprotos + 16) * sizeof(FnProto *));
        r->info->protos[r->info->nprotos++] = part->protos[i];
    }
    free(part->protos);
    part->protos = NULL;
    part->nprotos = 0;
    int k = keep_part(r, part, first);
    /* messages of resolve and analysis name the table's source: this input */
    Source *session_src = r->info->src;
    r->info->src = part->src;
    bool ok = resolve_module(r->info, part->body, builtin_lookup, stderr, false);
    if (ok) resolve_warn_hidden(r->info, part->body, builtin_lookup, dry ? NULL : r->hide, stderr);
    ok = ok && analyse_body(r->info, part->body, first, stderr);
    r->info->src = session_src;
    r->parts[k].end_proto = r->info->nprotos;
    if (!ok) { forget_protos(r, &r->parts[k]); return -1; }
    module_grow(r->mod);
    return k;
}

/* A new entry from typed text: named <repl>, numbered. */
static int compile_entry(Repl *r, const char *text, bool dry)
{
    Source *src = source_from_text("<repl>", text, strlen(text));
    src->entry = r->counter + 1;
    return compile(r, src, dry);
}

/* force: wait for a future whatever entry made it (:wait EXPR) */
static void run_part(Repl *r, int k, bool echo, bool force)
{
    VM *vm = r->vm;
    Part *p = &r->parts[k];
    Node *body = p->info->body;
    p->ran = true;
    r->last_run = k;
    vm->top_src = p->info->src;     /* messages point into this input */
    unsigned long since = async_dispatches(r->in);   /* calls from here on are this entry's */
    atomic_store(&r->in->interrupt, 0);
    atomic_store(&r->in->sigint, 0);
    for (int i = 0; i < body->u.list.n; i++) {
        Node *s = body->u.list.items[i];
        vm->cur_line = s->line;
        bool ok = true;
        if (echo && s->kind == N_EXPRSTMT) {
            vm->mod = r->mod;
            vm->frame = NULL;
            Value v = eval_expr(vm, s->u.expr.expr);
            Buf b;
            buf_init(&b);
            if (IS_EXC(v)) ok = false;
            else if (type_of(v)->stmt) {
                /* a value with an effect as a statement (an operator applies) */
                Value x = type_of(v)->stmt(vm, v, s);
                if (IS_EXC(x)) ok = false;
                else decref(x);
            } else if (!force && async_pending_text(v, since, &b)) {
                /* an earlier entry's call still running: show it, do not wait (:wait does) */
                fwrite(b.p, 1, b.len, r->in->out);
                fputc('\n', r->in->out);
            } else if (v.t != T_NIL) {
                if (tp_repr(vm, &b, v, false, s)) {
                    if (b.len || v.t != T_STR) { fwrite(b.p ? b.p : "", 1, b.len, r->in->out); fputc('\n', r->in->out); }
                } else ok = false;
            }
            buf_free(&b);
            decref(v);
        } else {
            vm->mod = r->mod;
            vm->frame = NULL;
            ExecStatus st = exec_stmt(vm, s);
            if (st == S_ERR) ok = false;
            else if (st == S_BREAK || st == S_CONTINUE) { vm_error(vm, s, "'break' or 'continue' outside a loop"); ok = false; }
        }
        fflush(r->in->out);
        if (!ok) {
            while (vm->sp) decref(vm->stack[--vm->sp]);
            vm->depth = 0;
            vm->frame = NULL;
            if (vm->err.interrupted || atomic_load(&r->in->sigint)) {
                fprintf(stderr, "interrupted\n");
                async_cancel_all(r->in);
            } else {
                vm_print_error(vm, stderr);
            }
            break;
        }
    }
    atomic_store(&r->in->sigint, 0);
    atomic_store(&r->in->interrupt, 0);
    vm->top_src = NULL;
}

/* :deps — the analysis of part k, with what the parts before it left in
 * globals (futures from earlier entries) */
static void print_deps(Repl *r, int k)
{
    DepsState *st = analyse_deps_new();
    if (r->script) analyse_deps_part(r->info, r->script->src, r->script->body, 0, 0, st, NULL);
    for (int i = 0; i < k; i++)
        if (r->parts[i].ran)
            analyse_deps_part(r->info, r->parts[i].info->src, r->parts[i].info->body, 0, 0, st, NULL);
    Part *p = &r->parts[k];
    analyse_deps_part(r->info, p->info->src, p->info->body, p->first_proto, p->end_proto, st, stdout);
    analyse_deps_free(st);
}

static void cmd_help(void)
{
    puts("qh REPL: type statements; an expression's value is printed.\n"
         "  :help          this help\n"
         "  :quit          leave (or Ctrl-D)\n"
         "  :tasks         pending background tasks and the entries that called them\n"
         "  :wait [EXPR]   wait for EXPR and print its value; alone: wait for every task\n"
         "  :time STMT     run STMT, then show wall time and time spent waiting\n"
         "  :deps [STMT]   the dependency analysis of the last entry, or of STMT without running it\n"
         "  :load FILE     run FILE's statements in this session\n"
         "Entries are numbered from 1 as typed. A value that needs a quantum call is\n"
         "waited for, except a call an earlier entry made that still runs: it shows as\n"
         "<future NAME() from entry N: running>; :wait, or any use of the value, waits.\n"
         "Ctrl-C cancels the running statement and every pending task; at the prompt it clears the line.");
}

static void handle(Repl *r, const char *text)
{
    while (*text == ' ' || *text == '\t') text++;
    if (text[0] == ':') {
        char cmd[32];
        size_t k = 0;
        while (text[k] && text[k] != ' ' && text[k] != '\t' && text[k] != '\n' && k < sizeof cmd - 1) { cmd[k] = text[k]; k++; }
        cmd[k] = 0;
        const char *arg = text + k;
        while (*arg == ' ' || *arg == '\t' || *arg == '\n') arg++;
        bool none = *arg == 0;
        if (strcmp(cmd, ":help") == 0) cmd_help();
        else if (strcmp(cmd, ":quit") == 0 || strcmp(cmd, ":q") == 0) { r->quit = true; }
        else if (strcmp(cmd, ":tasks") == 0) async_print_tasks(r->in, r->mod, stdout);
        else if (strcmp(cmd, ":time") == 0) {
            if (none) { fprintf(stderr, "usage: :time STMT (runs STMT, then prints its wall time and the time spent waiting)\n"); return; }
            int p = compile_entry(r, arg, false);
            if (p < 0) return;
            double w0 = r->vm->wait_time, t0 = now();
            run_part(r, p, true, false);
            double t1 = now();
            printf("wall %.6f s, waiting %.6f s\n", t1 - t0, r->vm->wait_time - w0);
        } else if (strcmp(cmd, ":wait") == 0) {
            int p = compile_entry(r, none ? "sync()" : arg, false);
            if (p >= 0) run_part(r, p, true, true);
        } else if (strcmp(cmd, ":deps") == 0) {
            if (none) {
                if (r->last_run < 0 && !r->script) fprintf(stderr, "no entry has run yet (usage: :deps [STMT])\n");
                else if (r->last_run < 0) analyse_print_deps(r->script, r->script->body, stdout);
                else print_deps(r, r->last_run);
            } else {
                int p = compile_entry(r, arg, true);
                if (p >= 0) { print_deps(r, p); forget_protos(r, &r->parts[p]); }
            }
        } else if (strcmp(cmd, ":load") == 0) {
            char err[600];
            if (none) { fprintf(stderr, "usage: :load FILE (runs FILE's statements in this session)\n"); return; }
            Source *src = source_from_file(arg, arg, err, sizeof err);
            if (!src) { fprintf(stderr, "qh: %s\n", err); return; }
            int p = compile(r, src, false);
            if (p >= 0) run_part(r, p, false, false);
        } else {
            fprintf(stderr, "unknown command %s (try :help)\n", cmd);
        }
        fflush(stdout);
        return;
    }
    int p = compile_entry(r, text, false);
    if (p >= 0) run_part(r, p, true, false);
}

int repl_run(Interp *in, VM *vm_in, ObjModule *mod_in, const char *trace_path)
{
    Repl r;
    memset(&r, 0, sizeof r);
    r.in = in;
    int first_proto = 0;
    VM own;
    bool fresh = vm_in == NULL;
    if (fresh) {
        qh_attach(in);
        async_start(in, trace_path);
        vm_init(&own, in, false);
        rng_seed(&own.rng, in->seed);
        own.stream_seed = in->seed;
        r.vm = &own;
        Source *src = source_from_text("<repl>", "", 0);
        r.info = parse_source(src, stderr);
        int argv_slot = resolve_declare(r.info, "argv", builtin_lookup);
        r.mod = module_new(r.info, "__main__");
        r.mod->globals[argv_slot] = v_list(in->argv ? in->argv : list_new(0));
        in->argv = NULL;
    } else {
        r.vm = vm_in;
        r.mod = mod_in;
        r.info = mod_in->info;
        r.script = mod_in->info;
    }
    first_proto = r.info->nprotos;
    r.last_run = -1;
    r.hide = resolve_hide_new();
    if (r.script) resolve_warn_hidden(r.info, r.script->body, builtin_lookup, r.hide, NULL);   /* warned already */
    the_repl = &r;
    sig_in = in;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    rl_readline_name = "qh";
    rl_attempted_completion_function = complete;
    rl_basic_word_break_characters = " \t\n\"'`@$><=;|&{([,+-*/%";
    rl_catch_signals = 0;
    rl_signal_event_hook = on_signal_event;
    bool tty = isatty(0);
    if (tty) {
        /* also polled while waiting: a Ctrl-C that missed a read. Not on a
         * pipe: with an event hook readline never sees the end of input */
        rl_event_hook = on_signal_event;
        rl_set_keyboard_input_timeout(50000);
    }
    r.history = history_path();
    history_load(r.history);
    if (tty && fresh) printf("qh %s — :help for help, Ctrl-D to quit\n", QH_VERSION);
    Buf acc;
    buf_init(&acc);
    pending = &acc;
    while (!r.quit) {
        at_prompt = 1;
        prompt_sigint = 0;
        char *line = readline(acc.len ? "... " : "qh> ");
        at_prompt = 0;
        if (!line) {
            if (tty) putchar('\n');
            break;
        }
        if (acc.len) buf_putc(&acc, '\n');
        buf_puts(&acc, line);
        free(line);
        if (acc.p[0] != ':' && parse_incomplete(acc.p, acc.len)) continue;
        bool blank = true;
        for (size_t i = 0; i < acc.len; i++) if (acc.p[i] != ' ' && acc.p[i] != '\t' && acc.p[i] != '\n') blank = false;
        if (!blank) {
            add_history(acc.p);
            history_append(r.history, acc.p);
            handle(&r, acc.p);
            r.counter++;
        }
        acc.len = 0;
        acc.p[0] = 0;
    }
    pending = NULL;
    buf_free(&acc);
    history_trim(r.history);
    for (int i = 0; i < ncands; i++) free(cands[i]);
    free(cands);
    cands = NULL;
    ncands = capcands = 0;
    free(r.history);
    the_repl = NULL;
    int status = 0;
    if (fresh) {
        fflush(in->out);
        int unobserved = async_finish(in, r.vm, false);
        if (unobserved) status = 1;
        /* the program's module and every imported one (the registry itself stays) */
        size_t nm = in->modules ? in->modules->nent : 0, k = 0;
        Value *roots = malloc((nm + 1) * sizeof(Value));
        roots[k++] = v_obj(&r.mod->h);
        for (size_t i = 0; i < nm; i++) if (in->modules->ent[i].live) roots[k++] = in->modules->ent[i].val;
        value_break_cycles(roots, (int)k);
        free(roots);
        decref(v_obj(&r.mod->h));
        vm_free(&own);
        vm_thread_cleanup();
    }
    /* the session's functions live in the parts' arenas: release their tables first */
    for (int i = first_proto; i < r.info->nprotos; i++) {
        FnProto *f = r.info->protos[i];
        free(f->local_is_cell); free(f->local_names); free(f->upvals);
        free(f->global_reads); free(f->global_calls);
    }
    r.info->nprotos = first_proto;
    resolve_hide_free(r.hide);
    for (int i = 0; i < r.nparts; i++) {
        Source *s = r.parts[i].info->src;
        analyse_free_body(r.parts[i].info->body);
        parse_free(r.parts[i].info);
        source_free(s);
    }
    free(r.parts);
    if (fresh) {
        Source *s = r.info->src;
        parse_free(r.info);
        source_free(s);
    }
    return status;
}
