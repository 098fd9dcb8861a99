/* fuzz_gen.c — libFuzzer target that runs qh programs GENERATED from the
 * input bytes, for the classes of bug that random text rarely reaches
 * (issue 14): builtins that call back into the program (sort keys that
 * raise, return failed futures or change the list being sorted; gradients
 * of functions that raise), futures that fail and pass their failure on
 * through chains of calls, deep expressions inside recursion, reference
 * cycles made and dropped (also copied into tasks), huge sizes chosen by
 * the program (out of memory inside and outside tasks). fuzz_run refuses
 * loops and recursion to keep runs short; here the generator bounds them.
 *
 * Each input byte picks the next statement template, the following bytes
 * its parameters; every statement sits in try/catch, so one failure does
 * not hide the rest. --sync or two workers from the first byte.
 *
 * Built without libFuzzer (-DFUZZ_GEN_MAIN, test `fuzz-gen` in meson), it
 * runs a fixed number of pseudo-random inputs: the sanitizer builds of CI
 * run the same generator on every test run. */
#include "qh.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct Gen {
    const uint8_t *d;
    size_t n, i;
    char *s;
    size_t len, cap;
} Gen;

static unsigned byte(Gen *g) { return g->i < g->n ? g->d[g->i++] : 0; }
static unsigned pick(Gen *g, unsigned k) { return byte(g) % k; }

static void put(Gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(Gen *g, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(g->s + g->len, g->cap - g->len, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if (g->len + (size_t)k < g->cap) {
            g->len += (size_t)k;
            return;
        }
        g->cap = (g->cap + (size_t)k) * 2;
        g->s = realloc(g->s, g->cap);
        if (!g->s) abort();
    }
}

static const char *const PRELUDE =
    "dev = device(\"statevector\", wires=2)\n"
    "qfn bad() on dev { PauliX(3); return 1 }\n"
    "qfn ok(x) on dev { RX(x, 0); return expval(PauliZ(0)) }\n"
    "qfn take(xs) on dev { RX(len(xs), 0); return expval(PauliZ(0)) }\n"
    "qfn big(n) on dev { return \"ab\" * n }\n"
    "G = [3, 1, 2, 5, 4]\n"
    "fn raiser(x) { error(\"raised\") }\n"
    "fn popper(x) { if len(G) > 0 { pop(G) }; return x }\n"
    "fn pusher(x) { append(G, x); return x }\n"
    "fn futkey(x) { return bad() }\n"
    "fn slowkey(x) { return ok(0.5) }\n"
    "fn neg(x) { return -x }\n";

static const char *const KEYS[] = {
    "raiser", "popper", "pusher", "futkey", "slowkey", "neg", "len"
};
static const char *const LISTS[] = {
    "G",  "[bad(), 1]",     "[1, bad()]",   "[ok(0.1), 2]", "G + G", "[[1], [2, 3]]",
    "[]", "[\"b\", \"a\"]", "[nan, 1, inf]"
};
#define N(a) (sizeof(a) / sizeof *(a))

static void statement(Gen *g, int k)
{
    put(g, "try {\n");
    switch (pick(g, 9)) {
    case 0: /* a sort whose key raises, fails or changes the list */
        put(g, "  print(sorted(%s, key=%s, reverse=%s))\n", LISTS[pick(g, N(LISTS))],
            KEYS[pick(g, N(KEYS))], byte(g) & 1 ? "true" : "false");
        break;
    case 1: { /* an expression up to 20,000 operators deep in a recursion */
        static const char *const op[] = { "+", "-", "*", "and", "or" };
        unsigned ops = 1 + byte(g) * 78u, depth = pick(g, 12) * (byte(g) & 1 ? 1u : 1000u);
        const char *o = op[pick(g, N(op))];
        put(g, "  fn d%d(n) { if n == 0 { return 1 }; return ", k);
        if (byte(g) & 1) { /* the call at the bottom of the chain */
            put(g, "d%d(n - 1)", k);
            for (unsigned i = 0; i < ops; i++) put(g, " %s 1", o);
        } else { /* the chain first, then the call */
            /* a long chain at every level of a deep recursion is only slow
             * (10,000 x 20,000 operators: seconds an input), not a new
             * hazard: deep recursion gets short chains, shallow long ones */
            if (depth >= 1000) ops = 1 + ops % 64;
            put(g, "1");
            for (unsigned i = 0; i < ops; i++) put(g, " %s 1", o);
            put(g, " %s d%d(n - 1)", o, k);
        }
        put(g, " }\n  print(d%d(%u))\n", k, depth);
        break;
    }
    case 2: { /* a failure passed on through a chain of calls */
        unsigned n = pick(g, 12);
        put(g, "  r = %s\n", byte(g) & 1 ? "bad()" : "ok(nan)");
        for (unsigned i = 0; i < n; i++) put(g, "  r = %s\n", byte(g) & 1 ? "ok(r)" : "ok(r + 1)");
        put(g, "  print(%s)\n", byte(g) & 1 ? "r" : "[r, 1]");
        break;
    }
    case 3: /* cycles made and dropped, also copied into a task */
        put(g, "  x = [1]\n  append(x, x)\n  y = {\"a\": x}\n  y[\"self\"] = y\n");
        put(g, "  fn c%d() { return c%d }\n  z = [c%d, y]\n", k, k, k);
        if (byte(g) & 1) put(g, "  print(take(x) + take([y, z]))\n");
        if (byte(g) & 1) put(g, "  print(len(str(x)) + len(str(y)))\n");
        put(g, "  x = nil\n  y = nil\n  z = nil\n");
        break;
    case 4: { /* a comprehension or loop whose body changes what it walks */
        static const char *const walk[] = { "raiser", "popper", "futkey", "slowkey",
                                            "neg" }; /* not pusher: endless */
        put(g, "  print([%s(v) for v in G])\n", walk[pick(g, N(walk))]);
        put(g, "  for v in G { if len(G) > 0 { pop(G) }; append(G, v) ; break }\n");
        break;
    }
    case 5: /* gradients and optimisation of functions that raise or fail */
        put(g, "  print(grad(%s)(%s))\n", byte(g) & 1 ? "ok" : "fn(t) { return raiser(t) }",
            byte(g) & 1 ? "0.5" : "bad()");
        break;
    case 6: { /* sizes the program chooses: out of memory, inside a task too */
        static const unsigned ex[] = { 2, 4, 11, 13, 15 };
        unsigned e = ex[pick(g, N(ex))];
        if (byte(g) & 1)
            put(g, "  print(len(big(10 ** %u)))\n", e);
        else
            put(g, "  print(len([0] * 10 ** %u))\n", e);
        break;
    }
    case 7: /* a deep nest of lists printed, compared and copied into a task */
        put(g,
            "  w = []\n  for i in range(%u) { w = [w] }\n  print(len(str(w)), w == w, take(w))\n",
            1 + byte(g) * 40u);
        break;
    default: /* G refilled */ put(g, "  G = [3, 1, 2, 5, 4]\n"); break;
    }
    put(g, "} catch e { print(\"caught\") }\n");
}

static int run_one(const uint8_t *data, size_t size, FILE *out)
{
    Gen g = { data, size, 0, NULL, 0, 0 };
    g.cap = 4096;
    g.s = malloc(g.cap);
    if (!g.s) abort();
    g.s[0] = 0;
    bool sync = byte(&g) & 1;
    put(&g, "%s", PRELUDE);
    for (int k = 0; k < 10 && g.i < g.n; k++) statement(&g, k);
    put(&g, "print(\"end\")\n");
    if (getenv("FUZZ_GEN_PRINT")) fputs(g.s, stderr); /* the program, before it runs */

    qh_Config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.out = out;
    cfg.err = out;
    cfg.sync = sync;
    cfg.workers = 2;
    cfg.max_memory = (size_t)64 << 20;
    char *args[] = { "fuzz" };
    cfg.argc = 1;
    cfg.argv = args;
    qh_State *Q = qh_open(&cfg);
    qh_Program *p = qh_compile(Q, "<gen>", g.s, g.len, out);
    int status = p ? qh_run(Q, p) : 2;
    status = qh_close(Q, status);
    fflush(out);
    free(g.s);
    return status;
}

#ifdef FUZZ_GEN_MAIN
/* Usage: fuzz_gen [N [SEED]]: N pseudo-random inputs of up to 64 bytes. */
int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100;
    uint64_t x = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    qh_init();
    FILE *out = fopen("/dev/null", "w");
    if (!out) return 1;
    for (int t = 0; t < n; t++) {
        uint8_t buf[64];
        size_t len = 8 + (size_t)(x % 56);
        for (size_t i = 0; i < len; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17; /* xorshift64 */
            buf[i] = (uint8_t)(x >> 24);
        }
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int st = run_one(buf, len, out);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (getenv("FUZZ_GEN_TIME")) /* which inputs cost the time */
            fprintf(stderr, "fuzz_gen: input %d: %.1f ms\n", t,
                    (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
        if (st != 0 && st != 1) {
            fprintf(stderr, "fuzz_gen: input %d: status %d\n", t, st);
            return 1;
        }
    }
    printf("fuzz_gen: %d generated programs ran\n", n);
    return 0;
}
#else
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    qh_init();
    devnull = fopen("/dev/null", "w");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 256) return -1; /* ten statements need a few dozen bytes */
    (void)run_one(data, size, devnull);
    return 0;
}
#endif
