/* test_qh.c — Check unit tests of the embedding API (src/qh.h): a state's
 * life (open, compile, run, close) and its exit statuses, diagnostics of
 * the pipeline (syntax, analysis, unreadable files) and of runtime errors,
 * globals and calls from the host (qh_get_global, qh_call, qh_force,
 * qh_error_message), REPL entries on one session, completion, hosts that
 * show values themselves (cells: labels, outcomes, the show and poll
 * hooks, the entry check), and the builtin registry (src/builtins.h)
 * every room adds to. */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "builtins.h"
#include "qh_harness.h"

/* ================================================================ life of a state */

START_TEST(open_close_without_run)
{
    /* closing a state that never ran starts no threads and passes the status on */
    qh_State *Q = qh_open(NULL);
    ck_assert_int_eq(qh_close(Q, 0), 0);
    Q = qh_open(NULL);
    ck_assert_int_eq(qh_close(Q, 2), 2);
    /* a program compiled but not run is freed by close */
    Host h;
    host_open(&h, false);
    ck_assert_ptr_nonnull(qh_compile(h.Q, "t.qh", "x = 1\n", 6, h.err));
    Run r = host_close(&h, 0);
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, "");
    run_free(&r);
}
END_TEST

START_TEST(states_one_after_another)
{
    /* states are independent: one program's globals never reach the next */
    for (int i = 0; i < 3; i++) {
        Host h;
        host_open(&h, i % 2 == 0);
        ck_assert_int_eq(host_run(&h, "if x == nil { x = 0 }\nx += 1\nprint(x)\n"), 1);
        Run r = host_close(&h, 1);
        ck_assert_msg(strstr(r.err, "x") != NULL, "%s", r.err);
        run_free(&r);
        r = run_mode("x = 0\nx += 1\nprint(x)\n", i % 2 == 0);
        ck_assert_int_eq(r.status, 0);
        ck_assert_str_eq(r.out, "1\n");
        run_free(&r);
    }
}
END_TEST

START_TEST(run_prints_in_both_modes)
{
    expect_out("print(\"hello\", 1 + 2)\nxs = [1, 2]\nprint(xs)\n", "hello 3\n[1, 2]\n");
    expect_out("", "");
    expect_out("# only a comment\n", "");
}
END_TEST

/* ================================================================ diagnostics */

START_TEST(syntax_error_is_status_2)
{
    Host h;
    host_open(&h, true);
    const char *text = "fn f() {\n  return 1 +\n}\n";
    qh_Program *p = qh_compile(h.Q, "bad.qh", text, strlen(text), h.err);
    ck_assert_ptr_null(p);
    Run r = host_close(&h, 2);
    ck_assert_int_eq(r.status, 2);
    /* FILE:LINE:COL: error: MESSAGE, the source line and a caret */
    ck_assert_msg(strstr(r.err, "bad.qh:2:13: error: ") != NULL, "%s", r.err);
    ck_assert_msg(strstr(r.err, "return 1 +") != NULL && strchr(r.err, '^') != NULL, "%s", r.err);
    ck_assert_str_eq(r.out, "");
    run_free(&r);
}
END_TEST

START_TEST(analysis_error_is_status_2)
{
    /* found before anything runs: nothing is printed by the program */
    expect_error("print(\"before\")\nqfn q() on device(\"statevector\", wires=1) { print(1) }\n", 2,
                 "t.qh:2:45: error: quantum function 'q' prints");
    expect_error("print(1)\nbreak\n", 2, "t.qh:2:");
    Run r = run_mode("print(\"before\")\nbreak\n", false);
    ck_assert_str_eq(r.out, "");
    run_free(&r);
}
END_TEST

START_TEST(runtime_error_is_status_1)
{
    const char *text = "fn g(a) { return a[5] }\nfn f() {\n  return "
                       "g([1])\n}\nprint(\"first\")\nf()\nprint(\"never\")\n";
    Run r = run_mode(text, true);
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.out, "first\n");
    ck_assert_msg(strstr(r.err, "t.qh:1:20: error: list index 5 out of range (length 1)") != NULL,
                  "%s", r.err);
    /* the traceback, outermost first */
    const char *tb = strstr(r.err, "traceback");
    ck_assert_ptr_nonnull(tb);
    const char *m = strstr(tb, "t.qh:6: in <main>"), *f = strstr(tb, "t.qh:3: in f"),
               *g = strstr(tb, "t.qh:1: in g");
    ck_assert_msg(m && f && g && m < f && f < g, "%s", r.err);
    run_free(&r);
    expect_error(text, 1, "list index 5 out of range");
}
END_TEST

START_TEST(compile_file)
{
    char path[] = "/tmp/qh_test_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    const char *text = "print(\"from a file\")\n";
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    Host h;
    host_open(&h, true);
    qh_Program *p = qh_compile_file(h.Q, path, h.err);
    ck_assert_ptr_nonnull(p);
    int status = qh_run(h.Q, p);
    Run r = host_close(&h, status);
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, "from a file\n");
    run_free(&r);
    unlink(path);

    /* a file that cannot be read: "qh: MESSAGE" naming it, NULL */
    host_open(&h, true);
    ck_assert_ptr_null(qh_compile_file(h.Q, path, h.err));
    r = host_close(&h, 2);
    ck_assert_msg(strncmp(r.err, "qh: ", 4) == 0 && strstr(r.err, path) != NULL, "%s", r.err);
    run_free(&r);
}
END_TEST

START_TEST(print_deps)
{
    Host h;
    host_open(&h, true);
    const char *text = "x = 1\nfn f(a) { return a + x }\ny = f(2)\n";
    qh_Program *p = qh_compile(h.Q, "d.qh", text, strlen(text), h.err);
    ck_assert_ptr_nonnull(p);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    qh_print_deps(p, f);
    fclose(f);
    ck_assert_msg(strstr(buf, "fn f (line 2): pure") != NULL, "%s", buf);
    ck_assert_msg(strstr(buf, "line 3: writes y") != NULL, "%s", buf);
    free(buf);
    Run r = host_close(&h, 0); /* --deps runs nothing */
    ck_assert_str_eq(r.out, "");
    run_free(&r);
}
END_TEST

/* ================================================================ the host's values and calls */

static double num_of(Value v)
{
    ck_assert_msg(v.t == T_NUM, "not a number: %s", type_name(v));
    return v.n;
}

START_TEST(get_global)
{
    Host h;
    host_open(&h, _i == 0);
    ck_assert_int_eq(host_run(&h, "x = 42\nxs = [1, \"a\"]\nfn f() { local = 1 }\nunset = nil\n"),
                     0);
    Value v;
    ck_assert(qh_get_global(h.Q, "x", &v));
    ck_assert(num_of(v) == 42);
    ck_assert(qh_get_global(h.Q, "xs", &v));
    ck_assert_int_eq(v.t, T_LIST);
    ck_assert_int_eq(AS_LIST(v)->len, 2);
    ck_assert_int_eq(AS_LIST(v)->v[1].t, T_STR);
    ck_assert_str_eq(AS_STR(AS_LIST(v)->v[1])->s, "a");
    decref(v);
    ck_assert(qh_get_global(h.Q, "unset", &v));
    ck_assert_int_eq(v.t, T_NIL);
    ck_assert(!qh_get_global(h.Q, "local", &v)); /* a local of f */
    ck_assert(!qh_get_global(h.Q, "nowhere", &v));
    /* builtins are what every program sees */
    ck_assert(qh_get_global(h.Q, "len", &v));
    ck_assert_int_eq(v.t, T_BUILTIN);
    ck_assert(qh_get_global(h.Q, "pi", &v));
    ck_assert(fabs(num_of(v) - M_PI) < 1e-15);
    Run r = host_close(&h, 0);
    ck_assert_int_eq(r.status, 0);
    run_free(&r);
}
END_TEST

START_TEST(call_functions)
{
    Host h;
    host_open(&h, _i == 0);
    ck_assert_int_eq(host_run(&h, "base = 10\n"
                                  "fn add(a, b) { return a + b + base }\n"
                                  "fn make(k) { return fn (x) { return k * x } }\n"
                                  "triple = make(3)\n"
                                  "log = []\n"
                                  "fn note(v) { append(log, v) }\n"),
                     0);
    Value add, triple, note, len, log;
    ck_assert(qh_get_global(h.Q, "add", &add));
    ck_assert(qh_get_global(h.Q, "triple", &triple));
    ck_assert(qh_get_global(h.Q, "note", &note));
    ck_assert(qh_get_global(h.Q, "len", &len));
    Value args[2] = { v_num(2), v_num(3) };
    Value r = qh_call(h.Q, add, 2, args);
    ck_assert(num_of(r) == 15);
    r = qh_call(h.Q, triple, 1, args);
    ck_assert(num_of(r) == 6);
    /* a string argument stays the host's: its count is what it was */
    Value s = v_str("hello");
    int rc = s.o->rc;
    r = qh_call(h.Q, len, 1, &s);
    ck_assert(num_of(r) == 5);
    ck_assert_int_eq(s.o->rc, rc);
    /* a call's side effects land in the program's globals */
    r = qh_call(h.Q, note, 1, &s);
    ck_assert_int_eq(r.t, T_NIL);
    ck_assert(qh_get_global(h.Q, "log", &log));
    ck_assert_int_eq(AS_LIST(log)->len, 1);
    ck_assert_int_eq(s.o->rc, rc + 1); /* the list holds it now */
    decref(log);
    decref(s);
    decref(add);
    decref(triple);
    decref(note);
    Run o = host_close(&h, 0);
    ck_assert_int_eq(o.status, 0);
    run_free(&o);
}
END_TEST

START_TEST(call_errors)
{
    Host h;
    host_open(&h, _i == 0);
    ck_assert_int_eq(host_run(&h, "fn bad(xs) { return xs[3] }\nfn deep(n) { return deep(n + 1) "
                                  "}\nfn one(a) { return a }\n"),
                     0);
    Value bad, deep, one;
    ck_assert(qh_get_global(h.Q, "bad", &bad));
    ck_assert(qh_get_global(h.Q, "deep", &deep));
    ck_assert(qh_get_global(h.Q, "one", &one));
    Value xs = v_list(list_new(0));
    Value r = qh_call(h.Q, bad, 1, &xs);
    ck_assert(IS_EXC(r));
    ck_assert_msg(strstr(qh_error_message(h.Q), "list index 3 out of range") != NULL, "%s",
                  qh_error_message(h.Q));
    r = qh_call(h.Q, one, 0, NULL);
    ck_assert(IS_EXC(r));
    ck_assert_msg(strstr(qh_error_message(h.Q), "one") != NULL &&
                      strstr(qh_error_message(h.Q), "argument") != NULL,
                  "%s", qh_error_message(h.Q));
    r = qh_call(h.Q, v_num(1), 0, NULL);
    ck_assert(IS_EXC(r));
    ck_assert_msg(strstr(qh_error_message(h.Q), "not callable") != NULL, "%s",
                  qh_error_message(h.Q));
    Value zero = v_num(0);
    r = qh_call(h.Q, deep, 1, &zero);
    ck_assert(IS_EXC(r));
    ck_assert_msg(strstr(qh_error_message(h.Q), "recursion") != NULL, "%s", qh_error_message(h.Q));
    /* after each error the state is as before: calls go on working */
    for (int i = 0; i < 100; i++) {
        r = qh_call(h.Q, one, 1, &xs);
        ck_assert_int_eq(r.t, T_LIST);
        decref(r);
    }
    decref(xs);
    decref(bad);
    decref(deep);
    decref(one);
    Run o = host_close(&h, 0);
    ck_assert_int_eq(o.status, 0); /* a host's failed call is not the program's failure */
    run_free(&o);
}
END_TEST

START_TEST(call_builtin_without_program)
{
    /* a fresh state: builtins can be called before (and without) any run */
    qh_State *Q = qh_open(NULL);
    Value fn;
    ck_assert(qh_get_global(Q, "max", &fn));
    Value args[3] = { v_num(4), v_num(9), v_num(-1) };
    Value r = qh_call(Q, fn, 3, args);
    ck_assert(num_of(r) == 9);
    ck_assert(!qh_get_global(Q, "x", &fn));
    ck_assert_int_eq(qh_close(Q, 0), 0);
}
END_TEST

START_TEST(call_qfn_and_force)
{
    Host h;
    host_open(&h, _i == 0);
    ck_assert_int_eq(host_run(&h, "qfn z(theta) on device(\"statevector\", wires=1) {\n"
                                  "    RX(theta, 0)\n"
                                  "    return expval(PauliZ(0))\n"
                                  "}\n"),
                     0);
    Value z;
    ck_assert(qh_get_global(h.Q, "z", &z));
    Value theta = v_num(M_PI / 3);
    Value f = qh_call(h.Q, z, 1, &theta);
    ck_assert(!IS_EXC(f));
    Value v = qh_force(h.Q, f); /* a future (or the value under --sync) */
    ck_assert(fabs(num_of(v) - 0.5) < 1e-12);
    Value again = qh_force(h.Q, f); /* forcing twice gives the same */
    ck_assert(num_of(again) == v.n);
    decref(f);
    ck_assert(num_of(qh_force(h.Q, v_num(3))) == 3); /* not a future: itself */
    /* a quantum call that fails: its error when it is forced */
    Value bad = v_str("not a number");
    f = qh_call(h.Q, z, 1, &bad);
    Value x = IS_EXC(f) ? f : qh_force(h.Q, f);
    ck_assert(IS_EXC(x));
    ck_assert_msg(strstr(qh_error_message(h.Q), "number") != NULL, "%s", qh_error_message(h.Q));
    if (!IS_EXC(f)) decref(f);
    decref(bad);
    decref(z);
    Run o = host_close(&h, 0);
    run_free(&o);
}
END_TEST

START_TEST(unobserved_failure_fails_close)
{
    /* a quantum call that failed and whose result nobody read: reported at
     * the end, exit status 1 (in both modes, with the same bytes) */
    expect_error("qfn q(k) on device(\"statevector\", wires=1) {\n"
                 "    RX(k[5], 0)\n"
                 "    return expval(PauliZ(0))\n"
                 "}\n"
                 "r = q([1])\n"
                 "print(\"done\")\n",
                 1, "out of range");
    Run r = run_mode("qfn q(k) on device(\"statevector\", wires=1) { RX(k[5], 0)\n return 1 }\nr = "
                     "q([1])\nprint(\"done\")\n",
                     false);
    ck_assert_str_eq(r.out, "done\n");
    run_free(&r);
}
END_TEST

/* ================================================================ REPL entries */

static qh_Program *entry(Host *h, const char *text, int n)
{
    return qh_compile_entry(h->Q, "<stdin>", text, strlen(text), n, false, h->err);
}

START_TEST(entries_share_globals)
{
    Host h;
    host_open(&h, _i == 0);
    qh_Program *e1 = entry(&h, "x = 40\nfn inc(v) { return v + 1 }\n", 1);
    ck_assert_ptr_nonnull(e1);
    ck_assert(qh_run_entry(h.Q, e1, QH_ECHO));
    qh_Program *e2 = entry(&h, "inc(x) + 1\n", 2);
    ck_assert(qh_run_entry(h.Q, e2, QH_ECHO));
    /* an error ends its entry only; what ran before it stays */
    qh_Program *e3 = entry(&h, "y = 1\nz = [][0]\nw = 2\n", 3);
    ck_assert(!qh_run_entry(h.Q, e3, QH_ECHO));
    /* a syntax error defines nothing */
    ck_assert_ptr_null(entry(&h, "q = (\n", 4));
    qh_Program *e5 = entry(&h, "print(y)\n", 5);
    ck_assert_ptr_nonnull(e5);
    bool ok = qh_run_entry(h.Q, e5, QH_ECHO);
    Value v;
    ck_assert(qh_get_global(h.Q, "x", &v) && v.n == 40);
    ck_assert(!qh_get_global(h.Q, "q", &v));
    ck_assert(!qh_get_global(h.Q, "w", &v));
    Run r = host_close(&h, 0);
    ck_assert_msg(ok, "%s", r.err);
    ck_assert_str_eq(r.out, "42\n1\n");
    ck_assert_msg(strstr(r.err, "list index 0 out of range") != NULL, "%s", r.err);
    ck_assert_int_eq(r.status, 0);
    run_free(&r);
}
END_TEST

START_TEST(entries_name_unknown_globals)
{
    /* an entry reads a global a later entry defines: a runtime error then,
     * fine once defined */
    Host h;
    host_open(&h, true);
    qh_Program *e1 = entry(&h, "fn f() { return later * 2 }\n", 1);
    ck_assert(qh_run_entry(h.Q, e1, 0));
    ck_assert(!qh_run_entry(h.Q, entry(&h, "f()\n", 2), QH_ECHO));
    ck_assert(qh_run_entry(h.Q, entry(&h, "later = 21\n", 3), 0));
    ck_assert(qh_run_entry(h.Q, entry(&h, "f()\n", 4), QH_ECHO));
    Run r = host_close(&h, 0);
    ck_assert_str_eq(r.out, "42\n");
    ck_assert_msg(strstr(r.err, "later") != NULL, "%s", r.err);
    run_free(&r);
}
END_TEST

static void collect(const char *name, void *ud)
{
    Buf *b = ud;
    buf_printf(b, "%s ", name);
}

START_TEST(complete_names)
{
    Host h;
    host_open(&h, true);
    ck_assert(qh_run_entry(h.Q, entry(&h, "lengthy = 1\nlenient = nil\n", 1), 0));
    Buf b;
    buf_init(&b);
    qh_complete(h.Q, "len", collect, &b);
    ck_assert_msg(strstr(b.p, "lengthy ") && strstr(b.p, "lenient ") && strstr(b.p, "len "), "%s",
                  b.p);
    buf_free(&b);
    Run r = host_close(&h, 0);
    run_free(&r);
}
END_TEST


/* ================================================================ hosts that show values */

typedef struct Shown {
    Buf log;    /* "R:text|" for an entry's value, "D:text|" for display(v) */
    int polls;  /* the poll hook's calls */
    Value keep; /* the last future shown, kept */
} Shown;

static bool show_cb(qh_State *Q, Value v, bool result, void *ud)
{
    Shown *sh = ud;
    size_t n;
    char *t = qh_show_text(Q, v, &n);
    if (!t) return false;
    buf_printf(&sh->log, "%s:%s|", result ? "R" : "D", t);
    free(t);
    if (qh_future_state(v) != QH_NOT_FUTURE) {
        decref(sh->keep);
        sh->keep = v;
        incref(v);
    }
    return true;
}

static qh_Program *cell(Host *h, const char *text, int n)
{
    char label[32], name[32];
    snprintf(label, sizeof label, "cell %d", n);
    snprintf(name, sizeof name, "<cell %d>", n);
    return qh_compile_cell(h->Q, name, text, strlen(text), n, label, h->err);
}

START_TEST(cells_show_values)
{
    /* the last statement's value goes to the host, not printed; earlier
     * expression statements show nothing; display() hands each value over */
    Host h;
    host_open(&h, _i == 0);
    Shown sh = { .keep = v_nil() };
    buf_init(&sh.log);
    qh_set_show(h.Q, show_cb, &sh);
    ck_assert_int_eq(qh_run_cell(h.Q, cell(&h, "x = 2\nx + 1\nx * 10\n", 1), QH_SHOW), QH_DONE);
    ck_assert_int_eq(qh_run_cell(h.Q, cell(&h, "display(x, \"s\")\nnil\n", 2), QH_SHOW), QH_DONE);
    ck_assert_int_eq(qh_run_cell(h.Q, cell(&h, "y = 5\n", 3), QH_SHOW), QH_DONE);
    ck_assert_int_eq(qh_run_cell(h.Q, cell(&h, "\"\"\n", 4), QH_SHOW), QH_DONE);
    ck_assert_str_eq(sh.log.p, "R:20|D:2|D:s|");
    /* a future is shown, not waited for: named by its cell's label */
    sh.log.len = 0;
    ck_assert_int_eq(qh_run_cell(h.Q,
                                 cell(&h,
                                      "qfn slow() on device(\"statevector\", wires=1, latency=0.3)"
                                      " { return 7 }\nslow()\n",
                                      5),
                                 QH_SHOW),
                     QH_DONE);
    if (_i == 1) {
        ck_assert_msg(strstr(sh.log.p, "R:<future slow() from cell 5, line 2: ") == sh.log.p, "%s",
                      sh.log.p);
        ck_assert_int_ne(qh_future_state(sh.keep), QH_DONE_FUT);
    } else
        ck_assert_str_eq(sh.log.p, "R:7|"); /* --sync: finished before it is shown */
    Value v = qh_force(h.Q, sh.keep);
    ck_assert(v.t == T_NUM && v.n == 7);
    ck_assert_int_eq(qh_future_state(sh.keep), QH_DONE_FUT);
    ck_assert_int_eq(qh_future_state(v), QH_NOT_FUTURE);
    decref(sh.keep);
    buf_free(&sh.log);
    Run r = host_close(&h, 0);
    ck_assert_str_eq(r.out, "");
    ck_assert_str_eq(r.err, "");
    run_free(&r);
}
END_TEST

static void *interrupt_later(void *q)
{
    usleep(150 * 1000);
    qh_interrupt(q);
    return NULL;
}

START_TEST(cells_outcomes)
{
    /* how a cell ended, with its error kept for the host to print */
    Host h;
    host_open(&h, false);
    ck_assert_int_eq(qh_run_cell(h.Q, cell(&h, "z = [1][3]\n", 1), QH_KEEP_ERROR), QH_FAILED);
    char *t = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&t, &n);
    qh_print_error(h.Q, f);
    fclose(f);
    ck_assert_msg(strstr(t, "<cell 1>:1:") == t && strstr(t, "out of range") &&
                      strstr(t, "    1 | z = [1][3]"),
                  "%s", t);
    free(t);
    /* an error in a function: the traceback names the cells */
    ck_assert_int_eq(qh_run_cell(h.Q, cell(&h, "fn f(a) {\n    return a[5]\n}\n", 2), 0), QH_DONE);
    ck_assert_int_eq(qh_run_cell(h.Q, cell(&h, "f([1])\n", 3), QH_KEEP_ERROR), QH_FAILED);
    f = open_memstream(&t, &n);
    qh_print_error(h.Q, f);
    fclose(f);
    ck_assert_msg(strstr(t, "<cell 2>:2:") == t && strstr(t, "<cell 3>:1: in"), "%s", t);
    free(t);
    /* Ctrl-C from another thread stops a classical loop */
    pthread_t th;
    pthread_create(&th, NULL, interrupt_later, h.Q);
    ck_assert_int_eq(qh_run_cell(h.Q, cell(&h, "i = 0\nwhile true { i += 1 }\n", 4), QH_KEEP_ERROR),
                     QH_INTERRUPTED);
    pthread_join(th, NULL);
    /* and the session goes on */
    ck_assert_int_eq(qh_run_cell(h.Q, cell(&h, "print(i > 0)\n", 5), 0), QH_DONE);
    Run r = host_close(&h, 0);
    ck_assert_str_eq(r.out, "true\n");
    ck_assert_str_eq(r.err, "");
    run_free(&r);
}
END_TEST

static void poll_cb(qh_State *Q, void *ud)
{
    Shown *sh = ud;
    sh->polls++;
    /* the host may look at finished futures here; the program goes on */
    if (qh_future_state(sh->keep) == QH_DONE_FUT) {
        Value v = qh_force(Q, sh->keep);
        ck_assert(v.t == T_NUM && v.n == 3);
        decref(v);
    }
    Value bad;
    ck_assert(qh_get_global(Q, "boom", &bad));
    Value r = qh_call(Q, bad, 0, NULL); /* an error inside the poll leaves no trace */
    ck_assert(IS_EXC(r));
    decref(bad);
}

START_TEST(cells_poll_hook)
{
    Host h;
    host_open(&h, false);
    Shown sh = { .keep = v_nil() };
    buf_init(&sh.log);
    qh_set_show(h.Q, show_cb, &sh);
    qh_set_poll(h.Q, poll_cb, &sh);
    ck_assert_int_eq(qh_run_cell(h.Q,
                                 cell(&h,
                                      "fn boom() { return [][1] }\n"
                                      "qfn c() on device(\"statevector\", wires=1) { return 3 }\n"
                                      "c()\n",
                                      1),
                                 QH_SHOW),
                     QH_DONE);
    qh_want_poll(h.Q, true);
    /* a loop of about half a second: the hook runs every 20 ms or so */
    ck_assert_int_eq(qh_run_cell(h.Q,
                                 cell(&h,
                                      "t0 = clock()\nn = 0\nwhile clock() - t0 < 0.5 { n += 1 }\n"
                                      "for k in range(3) { n += k }\nprint(n > 0)\n",
                                      2),
                                 QH_KEEP_ERROR),
                     QH_DONE);
    qh_want_poll(h.Q, false);
    int polls = sh.polls;
    ck_assert_int_eq(qh_run_cell(h.Q, cell(&h, "m = 0\nwhile m < 100000 { m += 1 }\n", 3), 0),
                     QH_DONE);
    ck_assert_int_eq(sh.polls, polls); /* not wanted: not called */
    decref(sh.keep);
    buf_free(&sh.log);
    Run r = host_close(&h, 0);
    ck_assert_msg(polls >= 5, "%d polls", polls);
    ck_assert_str_eq(r.out, "true\n");
    ck_assert_str_eq(r.err, "");
    run_free(&r);
}
END_TEST

START_TEST(entry_states)
{
    int d = -1;
    ck_assert_int_eq(qh_entry_state("x = 1", 5, &d), QH_COMPLETE);
    ck_assert_int_eq(d, 0);
    const char *t = "fn f() {\n    if x { [1,";
    ck_assert_int_eq(qh_entry_state(t, strlen(t), &d), QH_INCOMPLETE);
    ck_assert_int_eq(d, 3);
    t = "s = \"abc\\";
    ck_assert_int_eq(qh_entry_state(t, strlen(t), &d), QH_INCOMPLETE);
    t = "x = = 1";
    ck_assert_int_eq(qh_entry_state(t, strlen(t), NULL), QH_INVALID);
    t = "x = 1 +";
    ck_assert_int_eq(qh_entry_state(t, strlen(t), NULL), QH_INVALID);
    t = "fn f() { return 1 } }";
    ck_assert_int_eq(qh_entry_state(t, strlen(t), &d), QH_INVALID);
    ck_assert_int_eq(qh_entry_state("", 0, &d), QH_COMPLETE);
}
END_TEST

START_TEST(complete_keywords)
{
    Host h;
    host_open(&h, true);
    Buf b;
    buf_init(&b);
    qh_complete(h.Q, "whi", collect, &b);
    ck_assert_str_eq(b.p, "while ");
    b.len = 0;
    qh_complete(h.Q, "displ", collect, &b);
    ck_assert_str_eq(b.p, "display ");
    buf_free(&b);
    Run r = host_close(&h, 0);
    run_free(&r);
}
END_TEST

/* ================================================================ the builtin registry */

START_TEST(builtin_registry)
{
    qh_init();
    int n = builtin_count();
    ck_assert_int_gt(n, 50);
    /* unique names, each found where it is */
    for (int i = 0; i < n; i++) {
        const BuiltinDef *d = builtin_get(i);
        ck_assert_ptr_nonnull(d->name);
        ck_assert_msg(builtin_lookup(d->name) == i, "%s registered twice", d->name);
        ck_assert_msg((d->flags & BI_CONST) || d->fn, "%s has no function", d->name);
        ck_assert_msg(d->max < 0 || d->max >= d->min, "%s: arity %d..%d", d->name, d->min, d->max);
    }
    ck_assert_int_eq(builtin_lookup("no such builtin"), -1);
    /* what the analyser reads: print is impure, gates make operators,
     * measurements need a running qfn, pi is a number */
    ck_assert(builtin_get(builtin_lookup("print"))->flags & BI_IMPURE);
    ck_assert(builtin_get(builtin_lookup("RX"))->flags & BI_GATE);
    ck_assert(builtin_get(builtin_lookup("expval"))->flags & BI_QUANTUM);
    ck_assert(!(builtin_get(builtin_lookup("len"))->flags & (BI_IMPURE | BI_QUANTUM)));
    Value pi = builtin_value(builtin_lookup("pi"));
    ck_assert(pi.t == T_NUM && pi.n == M_PI);
    Value len = builtin_named("len");
    ck_assert_int_eq(len.t, T_BUILTIN);
    ck_assert_str_eq(type_name(len), "function");
}
END_TEST

/* ================================================================ stated invariants */

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#endif

START_TEST(asserts_where_promised)
{
    /* qh_assert is on in debug builds and in every sanitizer build */
#if defined(SANITIZED) && defined(NDEBUG)
    ck_abort_msg("a sanitizer build with NDEBUG: qh_assert is off");
#endif
}
END_TEST

#ifndef NDEBUG
START_TEST(assert_stops_misuse)
{
    /* a program runs once per state: a second qh_run is a broken
     * invariant, which stops qh (SIGABRT) instead of running on */
    Host h;
    host_open(&h, true);
    qh_Program *p = qh_compile(h.Q, "t.qh", "x = 1\n", 6, h.err);
    ck_assert_int_eq(qh_run(h.Q, p), 0);
    qh_run(h.Q, p);
}
END_TEST
#endif

/* ================================================================ runner */

static Suite *qh_suite(void)
{
    Suite *s = suite_create("qh");
    TCase *tc = tcase_create("state");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, open_close_without_run);
    tcase_add_test(tc, states_one_after_another);
    tcase_add_test(tc, run_prints_in_both_modes);
    suite_add_tcase(s, tc);
    tc = tcase_create("diagnostics");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, syntax_error_is_status_2);
    tcase_add_test(tc, analysis_error_is_status_2);
    tcase_add_test(tc, runtime_error_is_status_1);
    tcase_add_test(tc, compile_file);
    tcase_add_test(tc, print_deps);
    suite_add_tcase(s, tc);
    tc = tcase_create("host"); /* loops: 0 --sync, 1 background workers */
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, get_global, 0, 2);
    tcase_add_loop_test(tc, call_functions, 0, 2);
    tcase_add_loop_test(tc, call_errors, 0, 2);
    tcase_add_test(tc, call_builtin_without_program);
    tcase_add_loop_test(tc, call_qfn_and_force, 0, 2);
    tcase_add_test(tc, unobserved_failure_fails_close);
    suite_add_tcase(s, tc);
    tc = tcase_create("entries");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, entries_share_globals, 0, 2);
    tcase_add_test(tc, entries_name_unknown_globals);
    tcase_add_test(tc, complete_names);
    tcase_add_test(tc, builtin_registry);
    suite_add_tcase(s, tc);
    tc = tcase_create("cells");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, cells_show_values, 0, 2);
    tcase_add_test(tc, cells_outcomes);
    tcase_add_test(tc, cells_poll_hook);
    tcase_add_test(tc, entry_states);
    tcase_add_test(tc, complete_keywords);
    suite_add_tcase(s, tc);
    tc = tcase_create("invariants");
    tcase_add_test(tc, asserts_where_promised);
#ifndef NDEBUG
    tcase_add_test_raise_signal(tc, assert_stops_misuse, SIGABRT);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(qh_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
