/* qh_harness.h — running qh programs in-process for the unit tests of the
 * evaluator rooms, through the public face (src/qh.h) only: what a
 * program prints, what it reports and its exit status, in either mode.
 * Header-only (static functions): include it once per test file. */
#ifndef QH_TEST_HARNESS_H
#define QH_TEST_HARNESS_H

#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qh.h"

/* The outcome of one program: its output, its diagnostics and runtime
 * errors, and the exit status the qh command would give. */
typedef struct Run {
    int status;
    char *out, *err;
} Run;

/* A state whose output and errors go to memory streams. */
typedef struct Host {
    qh_State *Q;
    FILE *out, *err;
    char *outbuf, *errbuf;
    size_t outlen, errlen;
} Host;

static inline void host_open(Host *h, bool sync)
{
    memset(h, 0, sizeof *h);
    h->out = open_memstream(&h->outbuf, &h->outlen);
    h->err = open_memstream(&h->errbuf, &h->errlen);
    ck_assert_ptr_nonnull(h->out);
    ck_assert_ptr_nonnull(h->err);
    qh_Config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.out = h->out;
    cfg.err = h->err;
    cfg.sync = sync;
    cfg.workers = sync ? 0 : 2;
    cfg.seed = 7;
    cfg.seed_given = true;
    cfg.max_memory = (size_t)256 << 20;
    h->Q = qh_open(&cfg);
    ck_assert_ptr_nonnull(h->Q);
}

/* Compiles (diagnostics to the error stream) and runs text: the status. */
static inline int host_run(Host *h, const char *text)
{
    qh_Program *p = qh_compile(h->Q, "t.qh", text, strlen(text), h->err);
    return p ? qh_run(h->Q, p) : 2;
}

/* Closes the state; the streams' contents move into r. */
static inline Run host_close(Host *h, int status)
{
    Run r;
    r.status = qh_close(h->Q, status);
    fclose(h->out);
    fclose(h->err);
    r.out = h->outbuf;
    r.err = h->errbuf;
    return r;
}

static inline Run run_mode(const char *text, bool sync)
{
    Host h;
    host_open(&h, sync);
    int status = host_run(&h, text);
    return host_close(&h, status);
}

static inline void run_free(Run *r)
{
    free(r->out);
    free(r->err);
}

/* Runs text in both modes: the same output, status and messages (the
 * promise of --sync), which must be status 0 and `want` on stdout. */
static inline void expect_out(const char *text, const char *want)
{
    Run a = run_mode(text, true), b = run_mode(text, false);
    ck_assert_msg(a.status == 0, "status %d, errors:\n%s\n--- program:\n%s", a.status, a.err, text);
    ck_assert_msg(strcmp(a.out, want) == 0, "--sync output:\n%s\nwanted:\n%s\n--- program:\n%s",
                  a.out, want, text);
    ck_assert_msg(b.status == 0 && strcmp(b.out, a.out) == 0 && strcmp(b.err, a.err) == 0,
                  "the modes differ: async status %d, output:\n%s\nerrors:\n%s\n--- program:\n%s",
                  b.status, b.out, b.err, text);
    run_free(&a);
    run_free(&b);
}

/* Runs text in both modes: exit status `status`, the same bytes in both,
 * and `msg` inside the error stream. */
static inline void expect_error(const char *text, int status, const char *msg)
{
    Run a = run_mode(text, true), b = run_mode(text, false);
    ck_assert_msg(a.status == status, "status %d (want %d), errors:\n%s\n--- program:\n%s",
                  a.status, status, a.err, text);
    ck_assert_msg(strstr(a.err, msg) != NULL, "errors:\n%s\nwanted inside: %s\n--- program:\n%s",
                  a.err, msg, text);
    ck_assert_msg(b.status == a.status && strcmp(b.out, a.out) == 0 && strcmp(b.err, a.err) == 0,
                  "the modes differ: async status %d, output:\n%s\nerrors:\n%s\n--- sync:\n%s\n--- "
                  "program:\n%s",
                  b.status, b.out, b.err, a.err, text);
    run_free(&a);
    run_free(&b);
}

/* Runs text in one mode (sync, or with `workers` background workers),
 * seed 1, with what it prints and what it reports in one stream in the
 * order written, as a terminal shows them: into out (at most cap - 1
 * bytes, NUL-terminated). true when it ran to the end (status 0). */
static inline bool run_merged(const char *text, bool sync, int workers, char *out, size_t cap)
{
    char *mem = NULL;
    size_t memlen = 0;
    FILE *f = open_memstream(&mem, &memlen);
    ck_assert_ptr_nonnull(f);
    qh_Config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.out = f;
    cfg.err = f;
    cfg.sync = sync;
    cfg.workers = sync ? 0 : workers;
    cfg.seed = 1;
    cfg.seed_given = true;
    cfg.max_memory = (size_t)1 << 30;
    qh_State *Q = qh_open(&cfg);
    ck_assert_ptr_nonnull(Q);
    qh_Program *p = qh_compile(Q, "t.qh", text, strlen(text), f);
    int status = p ? qh_run(Q, p) : 2;
    bool ok = qh_close(Q, status) == 0;
    fclose(f);
    size_t n = memlen < cap - 1 ? memlen : cap - 1;
    memcpy(out, mem, n);
    out[n] = 0;
    free(mem);
    return ok;
}

/* The n numbers after `tag` on the first line of out that starts with
 * "tag " (the test fails, naming `what`, when there is no such line or it
 * holds fewer). */
static inline void numbers(const char *out, const char *tag, double *v, int n, const char *what)
{
    size_t tl = strlen(tag);
    const char *p = out;
    while (p && *p) {
        if (strncmp(p, tag, tl) == 0 && p[tl] == ' ') break;
        p = strchr(p, '\n');
        if (p) p++;
    }
    ck_assert_msg(p && *p, "%s: no line '%s ...' in the output:\n%s", what, tag, out);
    p += tl;
    for (int i = 0; i < n; i++) {
        char *end;
        v[i] = strtod(p, &end);
        ck_assert_msg(end != p, "%s: line '%s' has fewer than %d numbers:\n%s", what, tag, n, out);
        p = end;
    }
}

/* got is finite and within tol of want (`quantity` of `what`) */
static inline void assert_close(const char *what, const char *quantity, double got, double want,
                                double tol)
{
    ck_assert_msg(isfinite(got) && fabs(got - want) <= tol,
                  "%s: %s = %.15g, want %.15g (difference %.3g > %g)", what, quantity, got, want,
                  fabs(got - want), tol);
}

#endif
