/* qh_harness.h — running qh programs in-process for the unit tests of the
 * evaluator rooms, through the public face (src/qh.h) only: what a
 * program prints, what it reports and its exit status, in either mode.
 * Header-only (static functions): include it once per test file. */
#ifndef QH_TEST_HARNESS_H
#define QH_TEST_HARNESS_H

#include <check.h>
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

static void host_open(Host *h, bool sync)
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
static int host_run(Host *h, const char *text)
{
    qh_Program *p = qh_compile(h->Q, "t.qh", text, strlen(text), h->err);
    return p ? qh_run(h->Q, p) : 2;
}

/* Closes the state; the streams' contents move into r. */
static Run host_close(Host *h, int status)
{
    Run r;
    r.status = qh_close(h->Q, status);
    fclose(h->out);
    fclose(h->err);
    r.out = h->outbuf;
    r.err = h->errbuf;
    return r;
}

static Run run_mode(const char *text, bool sync)
{
    Host h;
    host_open(&h, sync);
    int status = host_run(&h, text);
    return host_close(&h, status);
}

static void run_free(Run *r)
{
    free(r->out);
    free(r->err);
}

/* Runs text in both modes: the same output, status and messages (the
 * promise of --sync), which must be status 0 and `want` on stdout. */
static void expect_out(const char *text, const char *want)
{
    Run a = run_mode(text, true), b = run_mode(text, false);
    ck_assert_msg(a.status == 0, "status %d, errors:\n%s\n--- program:\n%s", a.status, a.err, text);
    ck_assert_msg(strcmp(a.out, want) == 0, "--sync output:\n%s\nwanted:\n%s\n--- program:\n%s", a.out, want, text);
    ck_assert_msg(b.status == 0 && strcmp(b.out, a.out) == 0 && strcmp(b.err, a.err) == 0,
                  "the modes differ: async status %d, output:\n%s\nerrors:\n%s\n--- program:\n%s",
                  b.status, b.out, b.err, text);
    run_free(&a);
    run_free(&b);
}

/* Runs text in both modes: exit status `status`, the same bytes in both,
 * and `msg` inside the error stream. */
static void expect_error(const char *text, int status, const char *msg)
{
    Run a = run_mode(text, true), b = run_mode(text, false);
    ck_assert_msg(a.status == status, "status %d (want %d), errors:\n%s\n--- program:\n%s", a.status, status, a.err, text);
    ck_assert_msg(strstr(a.err, msg) != NULL, "errors:\n%s\nwanted inside: %s\n--- program:\n%s", a.err, msg, text);
    ck_assert_msg(b.status == a.status && strcmp(b.out, a.out) == 0 && strcmp(b.err, a.err) == 0,
                  "the modes differ: async status %d, output:\n%s\nerrors:\n%s\n--- sync:\n%s\n--- program:\n%s",
                  b.status, b.out, b.err, a.err, text);
    run_free(&a);
    run_free(&b);
}

#endif
