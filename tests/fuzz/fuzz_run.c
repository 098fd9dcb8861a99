/* fuzz_run.c — libFuzzer target that runs small qh programs end to end:
 * compiled and run through qh.h (src/qh.h) with the executor, the device
 * pool and the statevector simulator, the way src/main.c does.
 * Program output goes to /dev/null; runtime errors are printed to stderr
 * (run with -close_fd_mask=2 or 3 to silence them).
 *
 * There is no step budget in the interpreter, so the harness keeps each
 * run short by refusing inputs that could run for long (returns -1, which
 * also keeps them out of the corpus):
 *   - more than MAX_INPUT bytes;
 *   - loops: the words `while` and `for`;
 *   - waiting, the outside world and time: `sleep`, `input`, `import`,
 *     `latency`, `clock` (devices with latency= sleep on purpose; imports
 *     read files; clock makes runs differ);
 *   - a numeric literal above MAX_NUMBER (10**4 style literals are fine,
 *     `range(100000000)` is not: sizes come from literals or from `**`);
 *   - a named function whose body mentions its own name (recursion with a
 *     base case can be exponential; plain runaway recursion is covered by
 *     the script tests and tests/sanitize/bad_inputs.sh).
 * What is left can still be slow (e.g. `f(f(f(...)))` through a parameter
 * or `3**15 * "ab"`): libFuzzer's -timeout catches those, and .ci/run runs
 * this target in fork mode with -ignore_timeouts=1 -ignore_ooms=1 so such
 * inputs are reported but do not stop the run. Crashes, sanitizer reports
 * and leaks do stop it.
 *
 * Quantum memory is capped (in.max_memory = 64 MiB, i.e. 22 wires) so
 * asking for a large device exercises the budget error path; set
 * ASAN_OPTIONS=allocator_may_return_null=1:max_allocation_size_mb=1024 so
 * huge classical allocations exercise the out-of-memory error paths too.
 *
 * Whether the program runs with --sync or with two background workers is
 * decided by a hash of the input, so a saved input always replays the same
 * way. */
#include "qh.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INPUT  2048
#define MAX_NUMBER 5000.0


static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    qh_init();
    devnull = fopen("/dev/null", "w");
    return 0;
}

static bool is_ident(int c) { return isalnum(c) || c == '_'; }

/* Does `word` occur in s[0..n) as a whole identifier? */
static bool has_word_in(const char *s, size_t n, const char *word)
{
    size_t wl = strlen(word);
    for (size_t i = 0; i + wl <= n; i++) {
        if (memcmp(s + i, word, wl) != 0) continue;
        if (i > 0 && is_ident((unsigned char)s[i - 1])) continue;
        if (i + wl < n && is_ident((unsigned char)s[i + wl])) continue;
        return true;
    }
    return false;
}

/* `fn NAME (...) {` or `qfn NAME ... {`: does the brace-matched body
 * mention NAME? Crude (ignores strings and comments), on purpose: it
 * only has to err on the side of refusing. */
static bool self_recursive(const char *s, size_t n)
{
    for (size_t i = 0; i + 3 < n; i++) {
        if (memcmp(s + i, "fn", 2) != 0) continue;
        if (i > 0 && is_ident((unsigned char)s[i - 1]) && s[i - 1] != 'q') continue;
        if (i > 1 && s[i - 1] == 'q' && is_ident((unsigned char)s[i - 2])) continue;
        size_t j = i + 2;
        if (j < n && is_ident((unsigned char)s[j])) continue;
        while (j < n && isspace((unsigned char)s[j])) j++;
        size_t name = j;
        while (j < n && is_ident((unsigned char)s[j])) j++;
        size_t namelen = j - name;
        if (namelen == 0 || namelen > 64) continue; /* anonymous fn */
        char nm[65];
        memcpy(nm, s + name, namelen);
        nm[namelen] = 0;
        while (j < n && s[j] != '{') j++;
        if (j >= n) continue;
        size_t body = j;
        int depth = 0;
        for (; j < n; j++) {
            if (s[j] == '{')
                depth++;
            else if (s[j] == '}' && --depth == 0)
                break;
        }
        if (has_word_in(s + body, (j < n ? j + 1 : n) - body, nm)) return true;
    }
    return false;
}

/* A numeric literal (decimal, 0x, exponent, underscores) above MAX_NUMBER? */
static bool big_number(const char *s, size_t n)
{
    char buf[128];
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]) &&
            !(s[i] == '.' && i + 1 < n && isdigit((unsigned char)s[i + 1])))
            continue;
        if (i > 0 && (is_ident((unsigned char)s[i - 1]) || s[i - 1] == '.')) continue;
        size_t k = 0, j = i;
        bool hex = j + 1 < n && s[j] == '0' && (s[j + 1] == 'x' || s[j + 1] == 'X');
        while (j < n && k + 1 < sizeof buf) {
            char c = s[j];
            bool exp_sign =
                (c == '+' || c == '-') && j > i && (s[j - 1] == 'e' || s[j - 1] == 'E') && !hex;
            if (!(isalnum((unsigned char)c) || c == '.' || c == '_' || exp_sign)) break;
            if (c != '_') buf[k++] = c;
            j++;
        }
        if (k + 1 >= sizeof buf) return true;
        buf[k] = 0;
        double v = strtod(buf, NULL);
        if (!(v <= MAX_NUMBER)) return true; /* also nan/inf */
        i = j;
    }
    return false;
}

static bool refused(const char *s, size_t n)
{
    static const char *const words[] = { "while",  "for",     "sleep", "input",
                                         "import", "latency", "clock", NULL };
    if (n > MAX_INPUT) return true;
    for (int i = 0; words[i]; i++)
        if (has_word_in(s, n, words[i])) return true;
    return big_number(s, n) || self_recursive(s, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    if (refused(text, size)) return -1;

    uint32_t h = 2166136261u; /* FNV-1a: --sync or async */
    for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 16777619u;

    qh_Config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.out = devnull;
    cfg.sync = (h & 1) != 0;
    cfg.workers = 2;
    cfg.max_memory = (size_t)64 << 20;
    char *args[] = { "fuzz" };
    cfg.argc = 1;
    cfg.argv = args;
    qh_State *Q = qh_open(&cfg);
    qh_Program *p = qh_compile(Q, "<fuzz>", text, size, devnull);
    int status = p ? qh_run(Q, p) : 2;
    (void)qh_close(Q, status);
    fflush(devnull);
    return 0;
}
