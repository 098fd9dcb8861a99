/* qh.h — the interpreter's public face, in the mould of lua.h: everything
 * a host (the qh command, the REPL, the unit tests, the fuzzers, an
 * embedding program) needs to run qh code, and nothing of how it is done.
 *
 *     qh_State *Q = qh_open(&cfg);              (qh_init is implied)
 *     qh_Program *p = qh_compile(Q, "x.qh", text, len, stderr);
 *     int status = p ? qh_run(Q, p) : 2;         (0, 1 runtime error, 130)
 *     status = qh_close(Q, status);              (waits for tasks; 1 if one
 *                                                 failed unobserved)
 *
 * A state is one interpreter: its configuration, its main thread's VM, its
 * main module (the program run, or the REPL session) and the background
 * runtime (executor, device pool, trace), started at the first run. All
 * calls on a state come from one thread; qh_interrupt also from a signal
 * handler. Programs belong to their state and are freed by qh_close. */
#ifndef QH_QH_H
#define QH_QH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "value.h"

typedef struct qh_State qh_State;
typedef struct qh_Program qh_Program;

typedef struct qh_Config {
    FILE *out;         /* what the program prints (NULL: stdout) */
    FILE *err;         /* runtime errors, tracebacks, warnings (NULL: stderr) */
    bool sync;         /* --sync: every quantum call runs to completion first */
    bool no_lookahead; /* --no-lookahead: calls start only when their statement runs */
    bool no_fusion;    /* --no-fusion: the simulators run every gate at once, one by one */
    int workers;       /* background threads (0: QH_WORKERS, else the CPUs) */
    uint64_t seed;     /* program seed (seed_given false: a fixed default) */
    bool seed_given;
    size_t max_memory;      /* device memory budget (0: half of physical memory) */
    const char *trace_path; /* --trace FILE, or NULL */
    bool stats;             /* --stats */
    const char *stdlib_dir; /* the standard library's folder, or NULL */
    const char *qh_path;    /* QH_PATH, or NULL */
    int argc;               /* the program's argv list */
    char *const *argv;
    bool handle_sigint; /* install the Ctrl-C handler that cancels tasks */
} qh_Config;

/* Process-wide initialisation, once (later calls return at once; safe
 * from several threads): every room registers its value kinds and
 * builtins. */
void qh_init(void);

/* A new interpreter (cfg NULL: defaults). */
qh_State *qh_open(const qh_Config *cfg);
/* Ends the interpreter: waits for every task (cancels them when status is
 * not 0), reports failed tasks nobody needed, writes --trace and --stats,
 * breaks the program's reference cycles and frees everything. Returns the
 * exit status: status, or 1 if it was 0 and a task failed unobserved, or
 * 130 after Ctrl-C. */
int qh_close(qh_State *Q, int status);

/* The pipeline, once: parse, resolve, analyse, and find, parse and analyse
 * every import the program can see. Diagnostics go to diag. NULL on a
 * syntax or analysis error (exit status 2). */
qh_Program *qh_compile(qh_State *Q, const char *name, const char *text, size_t len, FILE *diag);
/* The same for a file; a file that cannot be read prints "qh: MESSAGE". */
qh_Program *qh_compile_file(qh_State *Q, const char *path, FILE *diag);
/* Prints the dependency analysis (qh --deps). */
void qh_print_deps(const qh_Program *p, FILE *out);
/* Runs a compiled program as the main module (once per state). Returns 0,
 * 1 after an uncaught runtime error (printed to cfg.err), 130 when
 * interrupted. */
int qh_run(qh_State *Q, qh_Program *p);

/* ---- the REPL: entries compiled into the main module's globals (the
 * program's after qh_run, else a fresh session's) ---- */
/* An entry from text; number: its entry number (1, 2, ... as typed; names
 * it in messages and in the futures it makes), 0 for none. dry: analysed
 * only, never run (:deps STMT); its definitions are forgotten once its
 * analysis is printed. NULL (diagnostics printed, nothing defined) on an
 * error. */
qh_Program *qh_compile_entry(qh_State *Q, const char *name, const char *text, size_t len,
                             int number, bool dry, FILE *diag);
/* An entry from a file (:load FILE); an unreadable file prints "qh: MESSAGE". */
qh_Program *qh_compile_entry_file(qh_State *Q, const char *path, FILE *diag);
enum {
    QH_ECHO = 1, /* print each expression statement's value */
    QH_WAIT =
        2, /* wait even for a future an earlier entry made (:wait); else it shows as running */
};
/* Runs an entry (QH_* flags). An error is printed and the session goes on:
 * false. */
bool qh_run_entry(qh_State *Q, qh_Program *entry, unsigned flags);
/* Whether text is a whole entry: QH_INCOMPLETE while brackets or braces
 * are open, a string or a trailing backslash continues (the REPL's "... "
 * prompt; *depth: how many are open), QH_INVALID if it cannot parse,
 * else QH_COMPLETE. Parses only: nothing is defined. */
enum { QH_COMPLETE, QH_INCOMPLETE, QH_INVALID };
int qh_entry_state(const char *text, size_t len, int *depth);

/* ---- hosts that show values themselves (the notebook kernel, src/kernel):
 * entries named their own way, values handed to the host instead of
 * printed, and the host's turn while an entry runs ---- */
/* An entry (number: unique in the session; it decides which calls Ctrl-C
 * cancels) that messages call `label` ("cell 3": "<future c() from cell
 * 3: running>", "called at cell 3, line 2"); NULL: "entry N". */
qh_Program *qh_compile_cell(qh_State *Q, const char *name, const char *text, size_t len, int number,
                            const char *label, FILE *diag);
enum {
    QH_SHOW = 4,       /* the last statement, if an expression, goes to the show hook
                          (not printed, a future not waited for); others print nothing */
    QH_KEEP_ERROR = 8, /* an error (or "interrupted") is not printed: qh_print_error */
};
typedef enum qh_Outcome {
    QH_DONE,        /* every statement ran */
    QH_FAILED,      /* a runtime error (qh_print_error prints it) */
    QH_INTERRUPTED, /* Ctrl-C (qh_interrupt): the entry's own calls are cancelled */
    QH_STOPPED,     /* the session must end (qh_ended) */
} qh_Outcome;
/* qh_run_entry, saying how it ended. */
qh_Outcome qh_run_cell(qh_State *Q, qh_Program *entry, unsigned flags);
/* The last runtime error as the command line prints it: the located
 * message, the source line with a caret, the traceback. */
void qh_print_error(qh_State *Q, FILE *out);
/* The host's display, called on the interpreter's thread for display(v)
 * (result false) and for an entry's value under QH_SHOW (result true); v
 * is borrowed and may be a future still running. It returns false after a
 * runtime error (from qh_show_text: the call of display fails with it). */
typedef bool (*qh_ShowFn)(qh_State *Q, Value v, bool result, void *ud);
void qh_set_show(qh_State *Q, qh_ShowFn fn, void *ud);
/* The host's turn while an entry runs: fn is called on the interpreter's
 * thread between the entry's statements and where loops check for Ctrl-C,
 * at most every 20 ms, while it is wanted (qh_want_poll); it may call
 * qh_show_text, qh_force and qh_print_error on finished futures (nothing
 * that waits), and the program goes on where it was. */
typedef void (*qh_PollFn)(qh_State *Q, void *ud);
void qh_set_poll(qh_State *Q, qh_PollFn fn, void *ud);
void qh_want_poll(qh_State *Q, bool on);
/* The host's input(), called on the interpreter's thread for input(prompt)
 * (prompt: the text print would write, plen bytes, not NUL-terminated).
 * It returns QH_INPUT_LINE with *line a malloc'd line of *len bytes (no
 * newline), QH_INPUT_EOF (input() gives nil), QH_INPUT_ERROR with *line a
 * malloc'd message (input() raises it at its call), or QH_INPUT_INTERRUPTED
 * after qh_interrupt (the entry stops as at Ctrl-C). A host that waits for
 * the line polls qh_interrupt_requested. */
enum { QH_INPUT_LINE, QH_INPUT_EOF, QH_INPUT_ERROR, QH_INPUT_INTERRUPTED };
typedef int (*qh_InputFn)(qh_State *Q, const char *prompt, size_t plen, char **line, size_t *len,
                          void *ud);
void qh_set_input(qh_State *Q, qh_InputFn fn, void *ud);
/* qh_interrupt was called and the running entry has not yet stopped. */
bool qh_interrupt_requested(qh_State *Q);
/* The state of the call behind a future value, never waiting. */
enum { QH_NOT_FUTURE = -1, QH_QUEUED, QH_RUNNING, QH_DONE_FUT, QH_FAILED_FUT, QH_CANCELLED };
int qh_future_state(Value v);
/* str(v) as a host shows it (malloc'd, *len its length): a future still
 * queued or running, or cancelled, as <future NAME() from cell 3: running>
 * (never waited for); anything else as print writes it (futures inside it
 * are waited for). NULL after a runtime error (qh_print_error). */
char *qh_show_text(qh_State *Q, Value v, size_t *len);
/* The SVG drawing of a value that has a picture (draw, hist, plot: heap,
 * *len its length), or NULL for any other value (a future is not waited
 * for: NULL). */
char *qh_show_svg(qh_State *Q, Value v, size_t *len);
/* The dependency analysis of an entry, with what the script and the entries
 * run before it left in the globals (futures); entry NULL: the last entry
 * run, or else the script. False (nothing printed) if there is none. */
bool qh_print_entry_deps(qh_State *Q, qh_Program *entry, FILE *out);
/* Ctrl-C: cancels the running statement and the tasks in flight. Only
 * atomic stores: safe in a signal handler and from any thread. */
void qh_interrupt(qh_State *Q);
/* The REPL's Ctrl-C: at the prompt (*at_prompt set) a SIGINT only sets
   *prompt_hit; while an entry runs each one interrupts it (qh_interrupt).
   The one signal handler of the process (SIGINT, SIGTERM, SIGHUP). */
void qh_signal_prompt(qh_State *Q, volatile sig_atomic_t *at_prompt,
                      volatile sig_atomic_t *prompt_hit);
/* The session must end: SIGTERM arrived, or the reader of the output is
 * gone (a broken pipe). qh_close then gives 143 or 141. */
bool qh_ended(qh_State *Q);
/* Pending background tasks with their call sites (REPL :tasks). */
void qh_print_tasks(qh_State *Q, FILE *out);
/* The calls not finished yet (0 before the first run or under --sync). */
int qh_pending(qh_State *Q);
/* One line: what the interpreter waits for before it can end, and that
 * Ctrl-C abandons it (the REPL at Ctrl-D). */
void qh_describe_pending(qh_State *Q, FILE *out);
/* Seconds the main thread has spent waiting for results so far. */
double qh_wait_seconds(qh_State *Q);
/* Completion candidates for text: "mod.prefix" gives the module's members
 * (as "mod.member"), anything else the bound globals, the builtins and the
 * keywords (a name may come twice: a global named like a builtin). */
void qh_complete(qh_State *Q, const char *text, void (*cand)(const char *name, void *ud), void *ud);

/* What a name is, for a host's help (a notebook's inspect): a function's
 * definition line without its body ("fn f(a, b=2)", "qfn c(x) on dev")
 * and the comment lines just above it, or the module member's (NAME.member);
 * NULL (heap otherwise) if the name is not bound to a function of the
 * session or is a builtin (lang/ describes those). */
char *qh_describe(qh_State *Q, const char *name);

/* ---- values, for hosts and tests ---- */
/* A global of the main module, or else the builtin of that name (print,
 * len, ...): a new reference; false if the name is bound to nothing. */
bool qh_get_global(qh_State *Q, const char *name, Value *out);
/* Calls any callable value with positional arguments (borrowed): a new
 * reference, or v_exc() with the message in qh_error_message. */
Value qh_call(qh_State *Q, Value fn, int nargs, Value *args);
/* The value v stands for: a future's result, waited for (v itself for
 * any other value); a new reference, or v_exc() if the call failed. */
Value qh_force(qh_State *Q, Value v);
/* The message of the last runtime error. */
const char *qh_error_message(qh_State *Q);

/* ---- for the interpreter's own rooms (remote.c: running under mpirun)
 * and white-box tests; not for hosts ---- */
struct Interp;
struct ModInfo;
struct Interp *qh_interp(qh_State *Q);
/* The program's parse (its module table). */
struct ModInfo *qh_program_info(const qh_Program *p);
/* The program's source: its name and text. */
const char *qh_program_text(const qh_Program *p, const char **name, size_t *len);
/* Starts the background runtime without running a program (a rank that
 * only serves tasks). */
void qh_start(qh_State *Q);

#endif
