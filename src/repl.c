/* repl.c — the interactive REPL on GNU readline: prompts and continuation
 * lines, history across sessions, tab completion, printing expression
 * values (waiting for futures made by the entry; showing those of earlier
 * entries that still run), errors that keep the session, Ctrl-C that
 * cancels the running statement, and the : commands. Each input (an
 * "entry", numbered from 1 as typed) is parsed on its own and resolved into
 * one growing global table (qh_compile_entry). Knows qh.h and readline. */
#include "repl.h"
#include "afile.h"
#include "bigstack.h"
#include "qh_assert.h"

#include <errno.h>
#include <fcntl.h>
#include <readline/history.h>
#include <readline/readline.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


typedef struct Repl {
    qh_State *Q;
    char *history;
    int counter; /* inputs so far; the one being handled is counter + 1 */
    bool quit;
} Repl;

static Repl *the_repl; /* for readline's completion callback only */
static volatile sig_atomic_t at_prompt;

static const char *const commands[] = { ":help", ":quit", ":tasks", ":wait",
                                        ":time", ":deps", ":load",  NULL };


static char *history_path(void)
{
    const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    char buf[4096];
    if (xdg && *xdg) {
        snprintf(buf, sizeof buf, "%s/qh", xdg);
        mkdir(buf, 0700);
        snprintf(buf, sizeof buf, "%s/qh/history", xdg);
        return xstrdup(buf);
    }
    if (home && *home) {
        /* the XDG default place if it is in use, else the classic dot file */
        snprintf(buf, sizeof buf, "%s/.local/state/qh/history", home);
        if (access(buf, F_OK) == 0) return xstrdup(buf);
        snprintf(buf, sizeof buf, "%s/.qh_history", home);
        return xstrdup(buf);
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
    char *c = xmalloc(n);
    snprintf(c, n, "%s%s", lead, s);
    for (int i = 0; i < ncands; i++)
        if (strcmp(cands[i], c) == 0) {
            free(c);
            return;
        }
    if (ncands == capcands) {
        capcands = capcands ? capcands * 2 : 64;
        cands = xrealloc(cands, (size_t)capcands * sizeof(char *));
    }
    cands[ncands++] = c;
}

static void cand_cb(const char *name, void *ud)
{
    const char *text = ud;
    cand_add(name, text, strlen(text), "");
}

static char *gen(const char *text, int state)
{
    static int idx;
    if (state == 0) {
        for (int i = 0; i < ncands; i++) free(cands[i]);
        ncands = 0;
        idx = 0;
        Repl *r = the_repl;
        if (text[0] == ':') {
            for (int i = 0; commands[i]; i++) cand_add(commands[i], text, strlen(text), "");
        } else {
            /* globals, builtins, keywords, module members (NAME.pre) */
            qh_complete(r->Q, text, cand_cb, (void *)text);
        }
    }
    if (idx < ncands) return xstrdup(cands[idx++]);
    return NULL;
}

static char **complete(const char *text, int start, int end)
{
    (void)start;
    (void)end;
    rl_attempted_completion_over = 1;
    return rl_completion_matches(text, gen);
}

/* ---- Ctrl-C ---- */

static qh_State *sig_q;
static volatile sig_atomic_t prompt_sigint; /* a Ctrl-C at the prompt (qh_signal_prompt) */

static Buf *pending; /* lines typed so far of an unfinished statement */

static int on_signal_event(void)
{
    if (sig_q && qh_ended(sig_q)) {
        /* SIGTERM at the prompt: readline keeps reading after a signal, so
         * its input becomes the end of input (the session is over anyway) */
        int fd = open("/dev/null", O_RDONLY);
        if (fd >= 0) {
            dup2(fd, 0);
            close(fd);
        }
        return 0;
    }
    if (prompt_sigint) {
        /* Ctrl-C at the prompt: drop the line and any pending lines, fresh prompt */
        prompt_sigint = 0;
        if (pending) {
            pending->len = 0;
            if (pending->p) pending->p[0] = 0;
        }
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
            if (*i == '\\' && i[1] == 'n') {
                *o++ = '\n';
                i++;
            } else if (*i == '\\' && i[1] == '\\') {
                *o++ = '\\';
                i++;
            } else
                *o++ = *i;
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
        if (*c == '\n')
            fputs("\\n", f);
        else if (*c == '\\')
            fputs("\\\\", f);
        else
            fputc(*c, f);
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
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            lines = xrealloc(lines, cap * sizeof(char *));
        }
        lines[n++] = xstrdup(line);
    }
    free(line);
    fclose(f);
    if (n > 1000) { /* the last 1000 lines, replacing the file whole or not at all */
        AFile af;
        if (afile_open(&af, path) == 0) {
            for (size_t i = n - 1000; i < n; i++) fputs(lines[i], af.f);
            afile_commit(&af);
        }
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

/* A new entry from typed text: named <repl>, numbered. dry: :deps STMT. */
static qh_Program *compile_entry(Repl *r, const char *text, bool dry)
{
    return qh_compile_entry(r->Q, "<repl>", text, strlen(text), r->counter + 1, dry, stderr);
}

static void cmd_help(void)
{
    puts(
        "qh REPL: type statements; an expression's value is printed.\n"
        "  :help          this help\n"
        "  :quit          leave (or Ctrl-D)\n"
        "  :tasks         pending background tasks, the entries that called them, their holders\n"
        "  :wait [EXPR]   wait for EXPR and print its value; alone: wait for every task\n"
        "  :time STMT     run STMT, then show wall time and time spent waiting\n"
        "  :deps [STMT]   the dependency analysis of the last entry, or of STMT without running "
        "it\n"
        "  :load FILE     run FILE's statements in this session\n"
        "Entries are numbered from 1 as typed. A value that needs a quantum call is\n"
        "waited for, except a call an earlier entry made that still runs: it shows as\n"
        "<future NAME() from entry N: running>; :wait, or any use of the value, waits.\n"
        "Ctrl-C cancels the running statement and the calls it made (earlier entries' calls go "
        "on);\n"
        "at the prompt it clears the line. Ctrl-D with calls still running waits for them (Ctrl-C\n"
        "abandons them).");
}

static void handle(Repl *r, const char *text)
{
    while (*text == ' ' || *text == '\t') text++;
    if (text[0] == ':') {
        char cmd[32];
        size_t k = 0;
        while (text[k] && text[k] != ' ' && text[k] != '\t' && text[k] != '\n' &&
               k < sizeof cmd - 1) {
            cmd[k] = text[k];
            k++;
        }
        cmd[k] = 0;
        const char *arg = text + k;
        while (*arg == ' ' || *arg == '\t' || *arg == '\n') arg++;
        bool none = *arg == 0;
        if (strcmp(cmd, ":help") == 0)
            cmd_help();
        else if (strcmp(cmd, ":quit") == 0 || strcmp(cmd, ":q") == 0) {
            r->quit = true;
        } else if (strcmp(cmd, ":tasks") == 0)
            qh_print_tasks(r->Q, stdout);
        else if (strcmp(cmd, ":time") == 0) {
            if (none) {
                fprintf(stderr, "usage: :time STMT (runs STMT, then prints its wall time and the "
                                "time spent waiting)\n");
                return;
            }
            qh_Program *p = compile_entry(r, arg, false);
            if (!p) return;
            double w0 = qh_wait_seconds(r->Q), t0 = now();
            qh_run_entry(r->Q, p, QH_ECHO);
            double t1 = now();
            printf("wall %.6f s, waiting %.6f s\n", t1 - t0, qh_wait_seconds(r->Q) - w0);
        } else if (strcmp(cmd, ":wait") == 0) {
            qh_Program *p = compile_entry(r, none ? "sync()" : arg, false);
            if (p) qh_run_entry(r->Q, p, QH_ECHO | QH_WAIT);
        } else if (strcmp(cmd, ":deps") == 0) {
            if (none) {
                if (!qh_print_entry_deps(r->Q, NULL, stdout))
                    fprintf(stderr, "no entry has run yet (usage: :deps [STMT])\n");
            } else {
                qh_Program *p = compile_entry(r, arg, true);
                if (p) qh_print_entry_deps(r->Q, p, stdout);
            }
        } else if (strcmp(cmd, ":load") == 0) {
            if (none) {
                fprintf(stderr, "usage: :load FILE (runs FILE's statements in this session)\n");
                return;
            }
            qh_Program *p = qh_compile_entry_file(r->Q, arg, stderr);
            if (p) qh_run_entry(r->Q, p, 0);
        } else {
            fprintf(stderr, "unknown command %s (try :help)\n", cmd);
        }
        fflush(stdout);
        return;
    }
    qh_Program *p = compile_entry(r, text, false);
    if (p) qh_run_entry(r->Q, p, QH_ECHO);
}

/* A line from a pipe or file (no readline, no history), as python -i
 * reads one: the prompt goes to standard error, Ctrl-C drops what was
 * typed so far, SIGTERM or the end of input ends. NULL at the end. */
static char *read_plain(const char *prompt)
{
    fputs(prompt, stderr);
    fflush(stderr);
    char *line = NULL;
    size_t cap = 0;
    for (;;) {
        errno = 0;
        ssize_t n = getline(&line, &cap, stdin);
        if (n >= 0) {
            if (n > 0 && line[n - 1] == '\n') line[n - 1] = 0;
            const char *nul = memchr(line, 0, (size_t)(n > 0 && line[n - 1] == 0 ? n - 1 : n));
            if (nul) {
                /* the rest of the line would be dropped unseen: the line is
                   refused (as a script's file is), and the statement typed so
                   far with it */
                int col = (int)(nul - line) + 1;
                fprintf(stderr,
                        "<repl>:1:%d: error: unexpected control character 0x00 (the line is not "
                        "run)\n    1 | ",
                        col);
                for (const char *q = line; q < line + n - (n > 0 && line[n - 1] == 0); q++)
                    fputc(*q ? *q : ' ', stderr);
                fprintf(stderr, "\n      | %*s^\n", col - 1, "");
                if (pending) {
                    pending->len = 0;
                    if (pending->p) pending->p[0] = 0;
                }
                line[0] = 0;
            }
            return line;
        }
        bool again = errno == EINTR && !qh_ended(sig_q) && !feof(stdin);
        clearerr(stdin);
        if (!again) break;
        if (prompt_sigint) {
            prompt_sigint = 0;
            if (pending) {
                pending->len = 0;
                if (pending->p) pending->p[0] = 0;
            }
            fputs("\n", stderr);
            fputs("qh> ", stderr);
            fflush(stderr);
        }
    }
    free(line);
    return NULL;
}

int repl_run(qh_State *Q, bool fresh)
{
    Repl r;
    memset(&r, 0, sizeof r);
    r.Q = Q;
    the_repl = &r;
    sig_q = Q;
    /* the interpreter's one handler; readline's state is changed outside
       it, in the event hook readline calls when a read is interrupted */
    qh_signal_prompt(Q, &at_prompt, &prompt_sigint);
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
    r.history = tty ? history_path() : NULL; /* piped input is not history */
    history_load(r.history);
    if (tty && fresh) printf("qh %s — :help for help, Ctrl-D to quit\n", QH_VERSION);
    Buf acc;
    buf_init(&acc);
    pending = &acc;
    while (!r.quit && !qh_ended(Q)) {
        at_prompt = 1;
        prompt_sigint = 0;
        const char *prompt = acc.len ? "... " : "qh> ";
        char *line = tty ? readline(prompt) : read_plain(prompt);
        at_prompt = 0;
        if (!line || qh_ended(Q)) {
            free(line);
            if (tty)
                putchar('\n');
            else
                fputc('\n', stderr);
            /* Ctrl-D: the calls still running are waited for; say so */
            if (!line && !qh_ended(Q) && qh_pending(Q)) {
                fflush(stdout);
                qh_describe_pending(Q, stderr);
            }
            break;
        }
        if (acc.len) buf_putc(&acc, '\n');
        buf_puts(&acc, line);
        free(line);
        if (acc.p[0] != ':' && qh_entry_state(acc.p, acc.len, NULL) == QH_INCOMPLETE) continue;
        bool blank = true;
        for (size_t i = 0; i < acc.len; i++)
            if (acc.p[i] != ' ' && acc.p[i] != '\t' && acc.p[i] != '\n') blank = false;
        if (!blank) {
            if (tty) add_history(acc.p);
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
    return 0; /* sig_q stays: Ctrl-C still cancels while qh_close waits */
}
