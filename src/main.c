/* main.c — the command line of lang/command-line.md: options, choosing the
 * source (file, -, -e, stdin), --check/--deps, running the main module,
 * exit statuses. Knows every room's entry point, none of their insides. */
#include "bigstack.h"
#include "exec.h"
#include "kernel.h"
#include "qh.h"
#include "qh_assert.h"
#include "remote.h"
#include "repl.h"

#include "opts.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: qh [options] [FILE | -] [ARGS...]\n"
    "       qh [options] -e CODE [ARGS...]\n"
    "       qh [options] --kernel CONNECTION_FILE\n"
    "       qh --install-kernel [--user | --prefix DIR]\n"
    "\n"
    "Runs a qh program: quantum function calls run in the background and\n"
    "return futures; the program waits only where it needs a value.\n"
    "\n"
    "options (before FILE; everything after FILE or -e CODE goes to argv):\n"
    "  FILE / -            run a script file / standard input; ARGS are in the list argv\n"
    "  -e CODE             run CODE (named <-e> in messages)\n"
    "  -i                  after the script, enter the REPL with its globals\n"
    "  --sync              run every quantum call to completion before going on\n"
    "  --no-lookahead      start a quantum call only when its statement runs, never\n"
    "                      while an earlier statement waits (lookahead dispatch)\n"
    "  --no-fusion         run every gate at once, one by one: no cache-blocked passes\n"
    "                      (the same results; also QH_FUSION=0)\n"
    "  --workers N         background threads, 1 to 1024 (default: the CPUs qh may use)\n"
    "  --seed N            program seed for random draws, a non-negative integer\n"
    "                      (default: a fixed seed, so runs repeat)\n"
    "  --max-memory SIZE   memory budget for quantum devices, e.g. 4G, 512M, 1.5GiB\n"
    "                      (default: half of the memory qh may use: the limit of its\n"
    "                      cgroup, else physical memory)\n"
    "  --trace FILE        write a Chrome trace-event timeline of the run (Perfetto)\n"
    "  --stats             print task, wait and overlap statistics to stderr at exit\n"
    "                      (and the simulators' gates, blocks and passes)\n"
    "  --deps              print the dependency analysis and exit\n"
    "  --check             parse and analyse only\n"
    "  --kernel FILE       serve a Jupyter notebook (the connection file FILE)\n"
    "  --install-kernel    write the Jupyter kernel spec (kernels/qh/kernel.json) to\n"
    "                      /usr/local/share/jupyter, or with --user to the user's\n"
    "                      Jupyter folder, or with --prefix DIR to DIR/share/jupyter\n"
    "  -V, --version       print the version and exit\n"
    "  -h, --help          print this help and exit\n"
    "  --                  end of options: the next argument is FILE\n"
    "An option with a value may also be written --opt=VALUE (all but -e).\n"
    "\n"
    "environment:\n"
    "  QH_PATH               colon-separated directories searched by import\n"
    "  QH_FUSION             0 or off: as --no-fusion\n"
    "  XDG_STATE_HOME, HOME  where the REPL keeps its history\n"
    "  OPENBLAS_NUM_THREADS  threads of every BLAS call (default: the CPUs qh may use)\n"
    "  QH_MPI_TIMEOUT        under mpirun: seconds of silence before another host's rank counts as "
    "dead\n"
    "  QH_WORKERS            background threads when --workers is not given, 1 to 1024\n"
    "  QH_SIMD               c, avx2 or avx512: the widest simulator kernels used\n"
    "\n"
    "With no FILE and a terminal on standard input, qh starts the interactive REPL.\n"
    "Exit status: 0 success; 1 runtime error, a failed task nobody needed or\n"
    "output that could not be written; 2 usage, syntax or analysis error;\n"
    "129 SIGHUP; 130 interrupted (Ctrl-C); 141 broken pipe; 143 SIGTERM.\n"
    "Reference: man qh, and lang/ in the source tree.\n";

/* Ranks above 0 of an MPI job parse the same command line without a word:
 * rank 0 speaks for the job. */
static bool quiet;

/* --help, --version: what could not be written is an error (status 1) */
static int printed(void)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) return 0;
    if (errno == EPIPE) return 128 + 13;
    fprintf(stderr, "qh: cannot write to standard output: %s\n", strerror(errno ? errno : EIO));
    return 1;
}

static int usage_error(const char *fmt, const char *arg)
{
    if (quiet) return 2;
    fprintf(stderr, "qh: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'qh --help' for more information.\n");
    return 2;
}

/* The environment variables qh reads, checked once at start-up with the
 * same rules as the options (opts.h): a bad value is a usage error, never
 * quietly replaced by a default. QH_PATH, XDG_STATE_HOME and HOME are
 * paths (anything goes); OPENBLAS_NUM_THREADS belongs to OpenBLAS. */
static const char *const simd_levels[] = { "c", "avx2", "avx512", NULL };
static int check_environment(qh_Config *cfg)
{
    const char *w = getenv("QH_WORKERS");
    long long n;
    if (w && *w) { /* empty: unset, as Python's PYTHON* variables */
        if (!opt_int(w, 1, 1024, &n))
            return usage_error("QH_WORKERS needs a number from 1 to 1024, not '%s'", w);
        if (!cfg->workers) cfg->workers = (int)n; /* --workers wins */
    }
    const char *simd = getenv("QH_SIMD");
    if (simd && *simd && opt_choice(simd, simd_levels) < 0)
        return usage_error("QH_SIMD needs c, avx2 or avx512, not '%s'", simd);
    return 0;
}

/* --trace FILE: refused at start-up when it cannot be written (the trace
 * itself is written at exit; the file is not truncated here). */
static int check_trace_path(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        fprintf(stderr, "qh: cannot write trace file '%s': %s\n", path, strerror(errno));
        return 2;
    }
    close(fd);
    return 0;
}

static char *exe_relative(const char *rel)
{
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return NULL;
    buf[n] = 0;
    char *slash = strrchr(buf, '/');
    if (!slash) return NULL;
    *slash = 0;
    size_t len = strlen(buf) + strlen(rel) + 2;
    char *p = xmalloc(len);
    snprintf(p, len, "%s/%s", buf, rel);
    char *real = realpath(p, NULL);
    free(p);
    return real;
}

/* The standard library: next to an installed binary, the configured
 * prefix, or (for an uninstalled build) the source tree. */
static char *find_stdlib(void)
{
    char *p = exe_relative("../share/qh/stdlib");
    if (p && access(p, R_OK) == 0) return p;
    free(p);
    if (access(QH_STDLIB_DIR, R_OK) == 0) return xstrdup(QH_STDLIB_DIR);
    if (access(QH_SOURCE_STDLIB, R_OK) == 0) return xstrdup(QH_SOURCE_STDLIB);
    return NULL;
}

/* A standard descriptor closed by the caller (`qh prog >&-`) is taken by
 * /dev/null opened the wrong way round, so reads or writes on it fail
 * (and are reported) instead of landing in the next file qh opens. */
static void hold_closed_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        int got = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
        if (got >= 0 && got != fd) {
            dup2(got, fd);
            close(got);
        }
    }
}

/* What the command line asks for. */
typedef struct Opts {
    qh_Config cfg;
    const char *code, *file, *kernel;
    bool interactive, check, deps;
} Opts;

/* The field a flag (an option without a value) sets, or NULL. */
static bool *flag_of(Opts *o, const char *a)
{
    static const struct {
        const char *name;
        size_t off;
    } flags[] = {
        { "-i", offsetof(Opts, interactive) },
        { "--sync", offsetof(Opts, cfg.sync) },
        { "--no-lookahead", offsetof(Opts, cfg.no_lookahead) },
        { "--no-fusion", offsetof(Opts, cfg.no_fusion) },
        { "--stats", offsetof(Opts, cfg.stats) },
        { "--deps", offsetof(Opts, deps) },
        { "--check", offsetof(Opts, check) },
    };
    for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
        if (strcmp(a, flags[k].name) == 0) return (bool *)((char *)o + flags[k].off);
    return NULL;
}

/* The value of option `which` (1: --workers, 2: --seed, 3: --trace,
 * 4: --max-memory, 5: --kernel) into o: -1 to go on, else a usage error's
 * exit status. */
static int set_value(Opts *o, int which, const char *val)
{
    qh_Config *c = &o->cfg;
    long long n;
    uint64_t u;
    switch (which) {
    case 1:
        if (!opt_int(val, 1, 1024, &n))
            return usage_error("--workers needs a number from 1 to 1024, not '%s'", val);
        c->workers = (int)n;
        return -1;
    case 2:
        if (!opt_u64(val, &u))
            return usage_error("--seed needs a non-negative integer, not '%s'", val);
        c->seed = u;
        c->seed_given = true;
        return -1;
    case 3:
        if (!*val) return usage_error("--trace needs a file name%s", "");
        c->trace_path = val;
        return -1;
    case 4:
        if (!opt_size(val, &u) || u > SIZE_MAX)
            return usage_error("--max-memory needs a size like 4G or 512M, not '%s'", val);
        c->max_memory = (size_t)u;
        return -1;
    case 5:
        if (!*val) return usage_error("--kernel needs a connection file%s", "");
        o->kernel = val;
        return -1;
    default: qh_unreachable();
    }
}

/* Reads the options into o: -1 to go on, else the exit status (--help,
 * --version, a usage error). */
static int parse_options(int argc, char **argv, Opts *o)
{
    memset(o, 0, sizeof *o);
    qh_Config *c = &o->cfg;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || strcmp(a, "-") == 0) break;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            if (quiet) return 0;
            fputs(usage_text, stdout);
            return printed();
        }
        if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
            if (quiet) return 0;
            printf("qh %s\n", QH_VERSION);
            return printed();
        }
        bool *flag = flag_of(o, a);
        if (flag) {
            *flag = true;
            continue;
        }
        const char *val = NULL;
        const char *names[] = {
            "-e", "--workers", "--seed", "--trace", "--max-memory", "--kernel"
        };
        int which = -1;
        for (int k = 0; k < 6; k++) {
            size_t nl = strlen(names[k]);
            if (strcmp(a, names[k]) == 0) {
                which = k;
                if (i + 1 >= argc) return usage_error("option '%s' needs a value", a);
                val = argv[++i];
                break;
            }
            if (k > 0 && strncmp(a, names[k], nl) == 0 && a[nl] == '=') {
                which = k;
                val = a + nl + 1;
                break;
            }
        }
        if (which < 0) return usage_error("unknown option '%s'", a);
        if (which == 0) {
            o->code = val;
            i++;
            break;
        } /* -e CODE ends the options: the rest is argv */
        int rc = set_value(o, which, val);
        if (rc >= 0) return rc;
    }
    if (!o->code && i < argc) o->file = argv[i++];
    c->argc = argc - i;
    c->argv = argv + i;
    return -1;
}

/* qh --install-kernel [--user | --prefix DIR] */
static int install_kernel(int argc, char **argv)
{
    if (argc == 2) return kernel_install(NULL, NULL);
    if (argc == 3 && strcmp(argv[2], "--user") == 0) return kernel_install("--user", NULL);
    if (argc == 4 && strcmp(argv[2], "--prefix") == 0 && argv[3][0])
        return kernel_install("--prefix", argv[3]);
    if (argc == 3 && strncmp(argv[2], "--prefix=", 9) == 0 && argv[2][9])
        return kernel_install("--prefix", argv[2] + 9);
    return usage_error("usage: qh --install-kernel [--user | --prefix DIR]%s", "");
}

/* This process's part of an MPI job (NULL outside one): made by main()
 * before the interpreter's thread starts. */
static Remote *remote;

/* Everything rank 0 (or a process outside MPI) does. */
static int run(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--install-kernel") == 0) return install_kernel(argc, argv);
    Opts o;
    int st = parse_options(argc, argv, &o);
    if (st >= 0) return st;
    qh_Config cfg = o.cfg;
    const char *code = o.code, *file = o.file;
    bool interactive = o.interactive, check = o.check, deps = o.deps;
    int bad = check_environment(&cfg);
    if (!bad && cfg.trace_path) bad = check_trace_path(cfg.trace_path);
    if (bad) return bad;
    /* qh -i alone is the REPL, reading a pipe too (as python3 -i) */
    bool from_stdin = !code && (file ? strcmp(file, "-") == 0 : !isatty(0) && !interactive);
    if (o.kernel && (code || file || interactive || check || deps)) {
        fprintf(stderr, "qh: --kernel runs no script (-e, FILE, -i, --check and --deps are for "
                        "scripts)\n");
        return 2;
    }
    bool repl_only = !code && !file && !from_stdin;
    if (o.kernel) {
        if (!kernel_built) return kernel_run(&cfg, o.kernel);
        char *stdlib = find_stdlib();
        cfg.stdlib_dir = stdlib;
        cfg.qh_path = getenv("QH_PATH");
        int st = kernel_run(&cfg, o.kernel);
        free(stdlib);
        return st;
    }
    if (repl_only && (check || deps)) {
        fprintf(stderr, "qh: --check and --deps need a script\n");
        return 2;
    }

    char *stdlib = find_stdlib();
    cfg.stdlib_dir = stdlib;
    cfg.qh_path = getenv("QH_PATH");
    cfg.handle_sigint = true;
    qh_State *Q = qh_open(&cfg);
    if (repl_only) {
        int st = qh_close(Q, repl_run(Q, true));
        free(stdlib);
        return st;
    }

    qh_Program *p;
    if (code)
        p = qh_compile(Q, "<-e>", code, strlen(code), stderr);
    else if (!from_stdin)
        p = qh_compile_file(Q, file, stderr);
    else {
        Buf b;
        buf_init(&b);
        char chunk[65536];
        size_t n;
        errno = 0;
        while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0) buf_put(&b, chunk, n);
        if (ferror(stdin)) { /* `qh < /`: a directory, a closed descriptor, an I/O error */
            fprintf(stderr, "qh: cannot read standard input: %s\n", strerror(errno ? errno : EIO));
            p = NULL;
        } else
            p = qh_compile(Q, "<stdin>", b.p ? b.p : "", b.len, stderr);
        buf_free(&b);
    }
    int status;
    if (!p)
        status = 2;
    else if (check || deps) {
        if (deps) qh_print_deps(p, stdout);
        status = 0;
    } else if (!remote_lead(remote, Q, p, stderr)) {
        status = 2; /* the ranks do not run the same program */
    } else {
        status = qh_run(Q, p);
        /* qh -i: the REPL, with the globals as the script left them, even
         * after a runtime error (as python -i); the session's end decides */
        if (interactive && status != 130) status = repl_run(Q, false);
    }
    status = qh_close(Q, status);
    free(stdlib);
    return status;
}

/* A rank above 0 of an MPI job: serves rank 0 until it ends. */
static int follow(int argc, char **argv)
{
    Opts o;
    parse_options(argc, argv, &o);
    char *stdlib = find_stdlib();
    o.cfg.stdlib_dir = stdlib;
    o.cfg.qh_path = getenv("QH_PATH");
    int st = remote_follow(remote, &o.cfg);
    free(stdlib);
    return st;
}

/* The interpreter runs on a thread with twice a worker's stack (bigstack.h):
 * room for the program's deepest recursion and, below it, a task run on the
 * main thread with its own (--sync, or a queued call needed at once), so a
 * deep recursion behaves the same there as on a worker. Under mpirun
 * (doc/distributed.md) the program runs once, on rank 0; the other ranks
 * serve its quantum calls and distributed states. */
int main(int argc, char **argv)
{
    hold_closed_std_fds();
    int rank = remote_init(&argc, &argv, &remote);
    if (rank > 0) {
        quiet = true;
        return run_on_big_stack(2 * EXEC_STACK_SIZE, follow, argc, argv);
    }
    return remote_end(remote, run_on_big_stack(2 * EXEC_STACK_SIZE, run, argc, argv));
}
