/* test_grad.c — Check unit tests of gradients (lang/quantum.md, grad;
 * src/grad.c): qh programs run in-process through the interpreter's API
 * (as src/main.c and src/run.c run them), their printed numbers compared.
 *
 * For every parametrised gate (and adjoint(...) / ctrl(...) forms of a
 * few) small random circuits on 4 wires are generated: fixed entangling
 * gates around two occurrences of the gate, angles that are arithmetic of
 * the input (`2*x[0] + sin(x[1])`), an observable that is a weighted sum
 * of Pauli words. The gradient from each method is printed with %.15f and
 *   |adjoint - finite-diff|     < 1e-8  (central differences, h = 1e-6)
 *   |adjoint - parameter-shift| < 1e-10
 * is asserted component by component, naming the gate. Then the argument
 * forms (scalar, 2-d array, argnum=1, list), explicit classical dependence
 * in the return value, a function whose gates do not depend on the input,
 * and the error cases.
 *
 * Known wrong answers (see the report of the grad test task) are kept as
 * reproducers in the test case "known_bugs" (fixed since; it always runs). The
 * QH_GRAD_DUMP=1 prints
 * every generated program and its output to stderr. */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qh_harness.h"

/* ================================================================ running a program */

#define OUT_CAP  (1 << 16)
#define PROG_CAP (1 << 14)

static bool g_sync = true; /* run() in --sync mode, or with background workers */

/* Runs a qh program in-process through qh.h (as the qh command does), in
 * the mode g_sync says. What it prints goes to out (at most OUT_CAP bytes,
 * NUL-terminated); an uncaught runtime error, or a parse/resolve/analysis
 * error, is in out too. Returns true when the program ran to the end
 * without an error. */
static bool run(const char *program, char *out)
{
    return run_merged(program, g_sync, 4, out, OUT_CAP);
}

/* Runs a program that must succeed. */
static void run_ok(const char *what, const char *program, char *out)
{
    bool ok = run(program, out);
    ck_assert_msg(ok, "%s: the program failed:\n%s\n--- program:\n%s", what, out, program);
}

/* ================================================================ generated circuits */

/* a small deterministic generator, so every run makes the same programs */
static unsigned long long rs;
static unsigned rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (unsigned)(rs >> 11);
}
static int rint_(int n) { return (int)(rnd() % (unsigned)n); }
static double runif(double a, double b) { return a + (b - a) * (rnd() % 1000000) / 1e6; }

/* angle expressions of the input x (3 numbers) */
static const char *const angle_exprs[] = {
    "2*x[0] + sin(x[1])",
    "x[1]*x[2] - 0.3",
    "cos(x[2])**2 + x[0]",
    "exp(0.5*x[0]) - x[1]/3",
    "sqrt(1.5 + x[2]*x[2])",
    "1.7*atan(x[0]) + x[2]",
    "-x[1] + 0.2",
    "log(2 + x[0]**2) * x[1]",
    "tan(0.3*x[1]) - 2*x[2]",
    "x[2]",
    "(x[0] - x[1]) / (1.5 + x[2]*x[2])",
    "x[0]*x[0]*x[1] + 0.4",
};
#define NEXPR ((int)(sizeof angle_exprs / sizeof angle_exprs[0]))

typedef struct Buf2 {
    char *p;
    size_t len, cap;
} Buf2;
static void bput(Buf2 *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bput(Buf2 *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    ck_assert_msg(n >= 0 && b->len + (size_t)n < b->cap, "program buffer too small");
    b->len += (size_t)n;
}

/* distinct random wires out of 0..3 */
static void pick_wires(int *w, int k)
{
    int all[4] = { 0, 1, 2, 3 };
    for (int i = 3; i > 0; i--) {
        int j = rint_(i + 1);
        int t = all[i];
        all[i] = all[j];
        all[j] = t;
    }
    for (int i = 0; i < k; i++) w[i] = all[i];
}

/* One gate under test. `name` is the gate; `wrap` says how it is written:
 *   'p' plain with trailing wires, 'w' with wires=[...], 'm' MultiRZ with
 *   wires=[...] of 2 or 3 wires, 'a' adjoint(GATE), 'c' ctrl(GATE,
 *   control=w), 'C' ctrl(GATE, control=[w1, w2]), 'A' adjoint(ctrl(GATE,
 *   control=w)), 'r' ctrl(adjoint(GATE), control=w). */
typedef struct GateCase {
    const char *name;
    int nwires, nparams;
    char wrap;
} GateCase;

static const GateCase gate_cases[] = {
    { "RX", 1, 1, 'p' },
    { "RY", 1, 1, 'p' },
    { "RZ", 1, 1, 'p' },
    { "PhaseShift", 1, 1, 'p' },
    { "Rot", 1, 3, 'p' },
    { "U3", 1, 3, 'p' },
    { "CRX", 2, 1, 'p' },
    { "CRY", 2, 1, 'p' },
    { "CRZ", 2, 1, 'p' },
    { "ControlledPhaseShift", 2, 1, 'p' },
    { "IsingXX", 2, 1, 'p' },
    { "IsingYY", 2, 1, 'p' },
    { "IsingZZ", 2, 1, 'p' },
    { "MultiRZ", 0, 1, 'm' },
    { "SingleExcitation", 2, 1, 'w' },
    { "DoubleExcitation", 4, 1, 'w' },
    /* adjoint(...) and ctrl(...) forms */
    { "RX", 1, 1, 'a' },
    { "Rot", 1, 3, 'a' },
    { "CRY", 2, 1, 'a' },
    { "SingleExcitation", 2, 1, 'a' },
    { "IsingXX", 2, 1, 'a' },
    { "RY", 1, 1, 'c' },
    { "PhaseShift", 1, 1, 'c' },
    { "U3", 1, 3, 'c' },
    { "IsingZZ", 2, 1, 'c' },
    { "Rot", 1, 3, 'C' },
    { "RZ", 1, 1, 'C' },
    { "CRX", 2, 1, 'A' },
    { "RX", 1, 1, 'r' },
    { "ControlledPhaseShift", 2, 1, 'c' },
    { "SingleExcitation", 2, 1, 'c' },
    { "DoubleExcitation", 4, 1, 'a' },
};
#define NGATES ((int)(sizeof gate_cases / sizeof gate_cases[0]))

static const char *case_label(const GateCase *g, char *buf, size_t n)
{
    switch (g->wrap) {
    case 'a': snprintf(buf, n, "adjoint(%s)", g->name); break;
    case 'c': snprintf(buf, n, "ctrl(%s, control=w)", g->name); break;
    case 'C': snprintf(buf, n, "ctrl(%s, control=[w1, w2])", g->name); break;
    case 'A': snprintf(buf, n, "adjoint(ctrl(%s))", g->name); break;
    case 'r': snprintf(buf, n, "ctrl(adjoint(%s))", g->name); break;
    default: snprintf(buf, n, "%s", g->name); break;
    }
    return buf;
}

/* writes one occurrence of the gate, its angles taken from the expressions */
static void emit_gate(Buf2 *b, const GateCase *g)
{
    int nctrl = g->wrap == 'c' || g->wrap == 'A' || g->wrap == 'r' ? 1 : g->wrap == 'C' ? 2 : 0;
    int nt = g->wrap == 'm' ? 2 + rint_(2) : g->nwires;
    int w[4];
    pick_wires(w, nt + nctrl);
    Buf2 inner = { malloc(1024), 0, 1024 };
    bput(&inner, "%s(", g->name);
    for (int p = 0; p < g->nparams; p++)
        bput(&inner, "%s%s", p ? ", " : "", angle_exprs[rint_(NEXPR)]);
    if (g->wrap == 'm' || g->wrap == 'w' || (g->wrap == 'a' && g->nwires > 2)) {
        bput(&inner, ", wires=[");
        for (int i = 0; i < nt; i++) bput(&inner, "%s%d", i ? ", " : "", w[i]);
        bput(&inner, "])");
    } else {
        for (int i = 0; i < nt; i++) bput(&inner, ", %d", w[i]);
        bput(&inner, ")");
    }
    inner.p[inner.len] = 0;
    switch (g->wrap) {
    case 'a': bput(b, "    adjoint(%s)\n", inner.p); break;
    case 'c': bput(b, "    ctrl(%s, control=%d)\n", inner.p, w[nt]); break;
    case 'C': bput(b, "    ctrl(%s, control=[%d, %d])\n", inner.p, w[nt], w[nt + 1]); break;
    case 'A': bput(b, "    adjoint(ctrl(%s, control=%d))\n", inner.p, w[nt]); break;
    case 'r': bput(b, "    ctrl(adjoint(%s), control=%d)\n", inner.p, w[nt]); break;
    default: bput(b, "    %s\n", inner.p); break;
    }
    free(inner.p);
}

static void emit_entangler(Buf2 *b)
{
    static const char *const two[] = { "CNOT", "CZ", "CY", "SWAP", "ISWAP" };
    int w[2];
    pick_wires(w, 2);
    bput(b, "    %s(%d, %d)\n", two[rint_(5)], w[0], w[1]);
}

/* a weighted sum of 2 to 4 Pauli words on distinct wires */
static void emit_observable(Buf2 *b)
{
    static const char *const paulis[] = { "PauliX", "PauliY", "PauliZ" };
    int nterms = 2 + rint_(3);
    for (int t = 0; t < nterms; t++) {
        double c = runif(0.2, 1.2) * (rint_(2) ? 1 : -1);
        bput(b, "%s%.3f * ", t == 0 ? (c < 0 ? "-" : "") : (c < 0 ? " - " : " + "), fabs(c));
        int len = 1 + rint_(3), w[4];
        pick_wires(w, len);
        for (int i = 0; i < len; i++) bput(b, "%s%s(%d)", i ? " @ " : "", paulis[rint_(3)], w[i]);
    }
}

/* The program for one gate: two occurrences of the gate inside entangling
 * gates, then every method's gradient printed on a line of its own. */
static void gate_program(const GateCase *g, char *prog, double x[3])
{
    Buf2 b = { prog, 0, PROG_CAP };
    bput(&b, "dev = device(\"statevector\", wires=4)\n");
    bput(&b, "qfn f(x) on dev {\n");
    for (int w = 0; w < 4; w++)
        bput(&b, "    RY(%.4f, %d)\n    RZ(%.4f, %d)\n", runif(0.3, 2.8), w, runif(-3, 3), w);
    emit_entangler(&b);
    emit_entangler(&b);
    emit_gate(&b, g);
    emit_entangler(&b);
    bput(&b, "    RX(%.4f, %d)\n", runif(-2, 2), rint_(4));
    emit_gate(&b, g);
    emit_entangler(&b);
    bput(&b, "    Hadamard(%d)\n", rint_(4));
    bput(&b, "    return expval(");
    emit_observable(&b);
    bput(&b, ")\n}\n");
    for (int i = 0; i < 3; i++) x[i] = runif(-1.2, 1.2);
    bput(&b, "x = array([%.6f, %.6f, %.6f])\n", x[0], x[1], x[2]);
    bput(&b, "for m in [\"adjoint\", \"parameter-shift\", \"finite-diff\"] {\n"
             "    g = grad(f, method=m)(x)\n"
             "    print(m, fmt(\"%%.15f %%.15f %%.15f\", g[0], g[1], g[2]))\n"
             "}\n"
             "print(\"value\", fmt(\"%%.15f\", f(x)))\n");
}

#define VARIANTS 3
#define TOL_FD   1e-8
#define TOL_PS   1e-10

static void check_gate(int gi, bool sync)
{
    const GateCase *g = &gate_cases[gi];
    char label[96];
    case_label(g, label, sizeof label);
    char *prog = malloc(PROG_CAP), *out = malloc(OUT_CAP);
    double gmax = 0;
    g_sync = sync;
    for (int v = 0; v < VARIANTS; v++) {
        rs = 0x9e3779b97f4a7c15ull ^
             ((unsigned long long)(gi + 1) * 1000003u + (unsigned long long)v * 7919u);
        for (int i = 0; i < 5; i++) rnd();
        double x[3];
        gate_program(g, prog, x);
        char what[256];
        snprintf(what, sizeof what, "gate %s (variant %d, %s)", label, v,
                 sync ? "--sync" : "async");
        bool ok = run(prog, out);
        if (getenv("QH_GRAD_DUMP")) fprintf(stderr, "==== %s\n%s---- output\n%s", what, prog, out);
        ck_assert_msg(ok, "%s: the program failed:\n%s\n--- program:\n%s", what, out, prog);
        double ad[3], ps[3], fd[3], val;
        numbers(out, "adjoint", ad, 3, what);
        numbers(out, "parameter-shift", ps, 3, what);
        numbers(out, "finite-diff", fd, 3, what);
        numbers(out, "value", &val, 1, what);
        for (int i = 0; i < 3; i++) {
            char q[64];
            snprintf(q, sizeof q, "parameter-shift d/dx[%d]", i);
            if (!(fabs(ps[i] - ad[i]) <= TOL_PS))
                ck_abort_msg(
                    "%s: %s = %.15f, adjoint %.15f (difference %.3g > %g)\n--- program:\n%s", what,
                    q, ps[i], ad[i], fabs(ps[i] - ad[i]), TOL_PS, prog);
            snprintf(q, sizeof q, "finite-diff d/dx[%d]", i);
            if (!(fabs(fd[i] - ad[i]) <= TOL_FD))
                ck_abort_msg(
                    "%s: %s = %.15f, adjoint %.15f (difference %.3g > %g)\n--- program:\n%s", what,
                    q, fd[i], ad[i], fabs(fd[i] - ad[i]), TOL_FD, prog);
            if (fabs(ad[i]) > gmax) gmax = fabs(ad[i]);
        }
    }
    /* a test that only ever compares zeros would prove nothing */
    ck_assert_msg(gmax > 1e-3,
                  "gate %s: every gradient is (nearly) zero (max %.3g): the circuits test nothing",
                  label, gmax);
    free(prog);
    free(out);
}

START_TEST(test_gate_sync) { check_gate(_i, true); }
END_TEST

/* The same programs with background workers: parameter-shift runs its
 * shifted circuits on helper tasks there. */
START_TEST(test_gate_async) { check_gate(_i, false); }
END_TEST

/* ================================================================ argument forms */

static const char *const methods[] = { "adjoint", "parameter-shift", "finite-diff" };

/* f(x) = x cos x + x^2 with RX(x) on |0>: expval(Z) = cos x */
START_TEST(test_scalar_and_explicit)
{
    char *out = malloc(OUT_CAP);
    run_ok("explicit dependence",
           "dev = device(\"statevector\", wires=2)\n"
           "qfn f(x) on dev { RX(x, 0); CNOT(0, 1); return expval(PauliZ(1)) * x + x**2 }\n"
           "qfn g(x) on dev { RX(x, 0); return expval(PauliZ(0)) }\n"
           "for m in [\"adjoint\", \"parameter-shift\", \"finite-diff\"] {\n"
           "    print(m, fmt(\"%.15f %.15f\", grad(f, method=m)(0.8), grad(g, method=m)(-0.4)))\n"
           "    print(m + \"-type\", type(grad(g, method=m)(0.1)))\n"
           "}\n",
           out);
    double x = 0.8, want_f = cos(x) - x * sin(x) + 2 * x, want_g = -sin(-0.4);
    for (int k = 0; k < 3; k++) {
        double v[2];
        char what[96];
        snprintf(what, sizeof what, "scalar argument, %s", methods[k]);
        numbers(out, methods[k], v, 2, what);
        double tol = k == 2 ? 1e-8 : 1e-12;
        assert_close(what, "d/dx (expval(Z) * x + x**2)", v[0], want_f, tol);
        assert_close(what, "d/dx cos(x)", v[1], want_g, tol);
        char tag[64];
        snprintf(tag, sizeof tag, "%s-type", methods[k]);
        char want_line[80];
        snprintf(want_line, sizeof want_line, "%s number\n", tag);
        ck_assert_msg(strstr(out, want_line),
                      "%s: the gradient of a scalar argument is not a number:\n%s", what, out);
    }
    free(out);
}
END_TEST

/* a (2, 3) array argument: the gradient has its shape; analytic values.
 * RX(w[i,0] * w[i,1] + w[i,2], i) on wire i: expval(Z(0) + 2 Z(1)) =
 * cos(a0) + 2 cos(a1) with ai = wi0 wi1 + wi2. */
START_TEST(test_2d_array)
{
    char *out = malloc(OUT_CAP);
    run_ok("2-d array argument",
           "dev = device(\"statevector\", wires=2)\n"
           "qfn f(w) on dev {\n"
           "    for i in range(2) { RX(w[i, 0] * w[i, 1] + w[i][2], i) }\n"
           "    return expval(PauliZ(0) + 2 * PauliZ(1))\n"
           "}\n"
           "w = array([[0.3, -0.5, 0.9], [1.1, 0.4, -0.2]])\n"
           "for m in [\"adjoint\", \"parameter-shift\", \"finite-diff\"] {\n"
           "    g = grad(f, method=m)(w)\n"
           "    print(m + \"-shape\", shape(g)[0], shape(g)[1], len(shape(g)))\n"
           "    print(m, fmt(\"%.15f %.15f %.15f %.15f %.15f %.15f\", g[0, 0], g[0, 1], g[0, 2], "
           "g[1, 0], g[1, 1], g[1, 2]))\n"
           "}\n"
           "gl = grad(f)([[0.3, -0.5, 0.9], [1.1, 0.4, -0.2]])\n"
           "print(\"list\", fmt(\"%.15f %.15f\", gl[0, 0], gl[1, 2]))\n",
           out);
    double w[2][3] = { { 0.3, -0.5, 0.9 }, { 1.1, 0.4, -0.2 } }, want[6];
    for (int i = 0; i < 2; i++) {
        double a = w[i][0] * w[i][1] + w[i][2], c = -(i ? 2 : 1) * sin(a);
        want[3 * i] = c * w[i][1];
        want[3 * i + 1] = c * w[i][0];
        want[3 * i + 2] = c;
    }
    for (int k = 0; k < 3; k++) {
        char what[96], tag[64];
        snprintf(what, sizeof what, "2-d array argument, %s", methods[k]);
        snprintf(tag, sizeof tag, "%s-shape", methods[k]);
        double sh[3], v[6];
        numbers(out, tag, sh, 3, what);
        ck_assert_msg(sh[0] == 2 && sh[1] == 3 && sh[2] == 2,
                      "%s: gradient shape %g x %g (ndim %g), want 2 x 3", what, sh[0], sh[1],
                      sh[2]);
        numbers(out, methods[k], v, 6, what);
        for (int j = 0; j < 6; j++) {
            char q[32];
            snprintf(q, sizeof q, "d/dw[%d, %d]", j / 3, j % 3);
            assert_close(what, q, v[j], want[j], k == 2 ? 1e-8 : 1e-12);
        }
    }
    double l[2];
    numbers(out, "list", l, 2, "2-d list argument");
    assert_close("2-d list argument", "d/dw[0, 0]", l[0], want[0], 1e-12);
    assert_close("2-d list argument", "d/dw[1, 2]", l[1], want[5], 1e-12);
    free(out);
}
END_TEST

/* argnum=1: a and b enter gates too but are not differentiated.
 * RY(a, 0) RX(x * b, 0): expval(Z) = cos(a + ...) is not separable, so
 * compare methods and an analytic value: on one wire RY(a) then RX(t),
 * <Z> = cos(a) cos(t). */
START_TEST(test_argnum)
{
    char *out = malloc(OUT_CAP);
    run_ok("argnum=1",
           "dev = device(\"statevector\", wires=1)\n"
           "qfn f(a, x, b) on dev { RY(a, 0); RX(x * b, 0); return expval(PauliZ(0)) }\n"
           "for m in [\"adjoint\", \"parameter-shift\", \"finite-diff\"] {\n"
           "    print(m, fmt(\"%.15f %.15f %.15f\", grad(f, argnum=1, method=m)(0.7, 0.5, 1.3),\n"
           "                 grad(f, argnum=1, method=m)(0.7, 0.5, b=1.3), grad(f, argnum=0, "
           "method=m)(0.7, 0.5, 1.3)))\n"
           "}\n",
           out);
    double a = 0.7, x = 0.5, bb = 1.3;
    double want1 = -cos(a) * sin(x * bb) * bb, want0 = -sin(a) * cos(x * bb);
    for (int k = 0; k < 3; k++) {
        char what[96];
        snprintf(what, sizeof what, "argnum, %s", methods[k]);
        double v[3];
        numbers(out, methods[k], v, 3, what);
        double tol = k == 2 ? 1e-8 : 1e-12;
        assert_close(what, "argnum=1 d/dx", v[0], want1, tol);
        assert_close(what, "argnum=1 d/dx (b= keyword)", v[1], want1, tol);
        assert_close(what, "argnum=0 d/da", v[2], want0, tol);
    }
    free(out);
}
END_TEST

/* No gate depends on the input: the gradient is 0, or only the classical part. */
START_TEST(test_no_dependence)
{
    char *out = malloc(OUT_CAP);
    run_ok("no dependence",
           "dev = device(\"statevector\", wires=2)\n"
           "qfn f(x) on dev { RX(0.3, 0); CNOT(0, 1); RY(0.9, 1); return expval(PauliZ(1) @ "
           "PauliX(0)) }\n"
           "qfn g(x) on dev { RX(0.3, 0); y = x[0] * 0 + 1.2; RY(y, 1); return expval(PauliZ(1)) + "
           "3 * x[1] }\n"
           "qfn h(x) on dev { RX(0.3, 0); return expval(PauliZ(0)) }\n"
           "for m in [\"adjoint\", \"parameter-shift\", \"finite-diff\"] {\n"
           "    gg = grad(g, method=m)(array([0.4, 0.5]))\n"
           "    print(m, fmt(\"%.15f %.15f %.15f %.15f\", grad(f, method=m)(0.5), gg[0], gg[1], "
           "grad(h, method=m)(7)))\n"
           "}\n",
           out);
    for (int k = 0; k < 3; k++) {
        char what[96];
        snprintf(what, sizeof what, "no dependence, %s", methods[k]);
        double v[4];
        numbers(out, methods[k], v, 4, what);
        double tol = k == 2 ? 1e-8 : 1e-14;
        assert_close(what, "d/dx of a circuit without x", v[0], 0, tol);
        assert_close(what, "d/dx[0] of RY(x[0]*0 + 1.2)", v[1], 0, tol);
        assert_close(what, "d/dx[1] of 3*x[1]", v[2], 3, tol);
        assert_close(what, "d/dx with an integer argument", v[3], 0, tol);
    }
    free(out);
}
END_TEST

/* The chain rule through a subroutine, a loop over the argument, several
 * math builtins, and the value of expval passed through linear arithmetic. */
START_TEST(test_chain)
{
    char *out = malloc(OUT_CAP);
    run_ok("chain rule",
           "dev = device(\"statevector\", wires=3)\n"
           "fn layer(a, w) { RY(a * 3, w); CNOT(w, (w + 1) % 3) }\n"
           "qfn f(x) on dev {\n"
           "    for v in x { RX(v, 0) }\n"
           "    layer(x[0] * x[1], 1)\n"
           "    layer(atan2(x[2], 2) + abs(x[1]) + min(x[0], x[2]) + max(x[1], 0.1), 2)\n"
           "    t = 0\n"
           "    for i in range(3) { t = t + x[i] / (i + 1) }\n"
           "    MultiRZ(t, wires=[0, 1, 2])\n"
           "    RX(0.4, 0)\n"
           "    return -0.5 * expval(PauliX(0) @ PauliZ(2) - 0.7 * PauliX(1) + 0.4 * PauliY(0)) / "
           "2 + 1\n"
           "}\n"
           "x = array([0.35, -0.6, 0.8])\n"
           "for m in [\"adjoint\", \"parameter-shift\", \"finite-diff\"] {\n"
           "    g = grad(f, method=m)(x)\n"
           "    print(m, fmt(\"%.15f %.15f %.15f\", g[0], g[1], g[2]))\n"
           "}\n",
           out);
    double ad[3], ps[3], fd[3];
    numbers(out, "adjoint", ad, 3, "chain rule");
    numbers(out, "parameter-shift", ps, 3, "chain rule");
    numbers(out, "finite-diff", fd, 3, "chain rule");
    double mx = 0;
    for (int i = 0; i < 3; i++) {
        char q[48];
        snprintf(q, sizeof q, "parameter-shift d/dx[%d]", i);
        assert_close("chain rule", q, ps[i], ad[i], TOL_PS);
        snprintf(q, sizeof q, "finite-diff d/dx[%d]", i);
        assert_close("chain rule", q, fd[i], ad[i], TOL_FD);
        if (fabs(ad[i]) > mx) mx = fabs(ad[i]);
    }
    ck_assert_msg(mx > 1e-3, "chain rule: all gradients zero");
    free(out);
}
END_TEST

/* ================================================================ errors */

/* Each line of the program prints "TAG: message" from a catch. */
static void expect_caught(const char *out, const char *tag, const char *needle)
{
    char key[80];
    snprintf(key, sizeof key, "%s: ", tag);
    const char *p = strstr(out, key);
    ck_assert_msg(p, "%s: no error was raised (expected one containing \"%s\"); output:\n%s", tag,
                  needle, out);
    const char *eol = strchr(p, '\n');
    size_t n = eol ? (size_t)(eol - p) : strlen(p);
    char line[1200];
    snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line - 1 ? n : sizeof line - 1), p);
    ck_assert_msg(strstr(line, needle), "%s: the error message does not contain \"%s\": %s", tag,
                  needle, line);
}

START_TEST(test_errors)
{
    char *out = malloc(OUT_CAP);
    run_ok(
        "errors",
        "dev = device(\"statevector\", wires=2)\n"
        "sdev = device(\"statevector\", wires=2, shots=200, seed=5)\n"
        "fn e(tag, f, arg) { try { r = f(arg); print(tag + \"-ok\", r) } catch err { print(tag + "
        "\": \" + err) } }\n"
        "qfn two(x) on dev { RX(x, 0); return expval(PauliZ(0)) + expval(PauliX(0)) }\n"
        "print(\"two-adjoint\", fmt(\"%.12f %.12f\", grad(two)(0.3), -sin(0.3)))\n"
        "qfn shots(x) on sdev { RX(x, 0); return expval(PauliZ(0)) }\n"
        "e(\"shots\", grad(shots, method=\"adjoint\"), 0.3)\n"
        "qfn meas(x) on dev { RX(x, 0); b = measure(0); RY(x, 1); return expval(PauliZ(1)) }\n"
        "e(\"measure\", grad(meas), 0.3)\n"
        "fn plain(x) { return x * 2 }\n"
        "try { grad(plain) ; print(\"plain-fn-ok\") } catch err { print(\"plain-fn: \" + err) }\n"
        "try { print(grad(plain)(0.3)) } catch err { print(\"plain-fn-call: \" + err) }\n"
        "qfn hybrid(x) { return x * 2 }\n"
        "try { print(grad(hybrid)(0.3)) } catch err { print(\"hybrid: \" + err) }\n"
        "try { print(grad(sin)(0.3)) } catch err { print(\"builtin: \" + err) }\n"
        "qfn pr(x) on dev { RX(x, 0); return probs() }\n"
        "e(\"probs\", grad(pr, method=\"parameter-shift\"), 0.3)\n"
        "qfn ok1(x) on dev { RX(x, 0); return expval(PauliZ(0)) }\n"
        "try { grad(ok1, method=\"backprop\") ; print(\"method-ok\") } catch err { print(\"method: "
        "\" + err) }\n"
        "try { grad(ok1, argnum=1) ; print(\"argnum-ok\") } catch err { print(\"argnum: \" + err) "
        "}\n"
        "e(\"string-arg\", grad(ok1), \"a\")\n"
        "e(\"complex-arg\", grad(ok1), array([1j, 2]))\n"
        /* a gate without a shift rule whose matrix depends on the input */
        "qfn qu(x) on dev { QubitUnitary(array([[cos(x), -sin(x)], [sin(x), cos(x)]]), wires=[0]); "
        "return expval(PauliZ(0)) }\n"
        "e(\"unitary-ps\", grad(qu, method=\"parameter-shift\"), 0.3)\n"
        "e(\"unitary-adjoint\", grad(qu), 0.3)\n"
        /* whole-array arithmetic on a differentiated argument */
        "qfn whole(x) on dev { RX((x * 2)[0], 0); return expval(PauliZ(0)) }\n"
        "wa = grad(whole)(array([0.1, 0.2]))\n"
        "print(\"whole\", fmt(\"%.15f %.15f\", wa[0], wa[1]))\n"
        /* the shot-based parameter-shift gradient still runs (a number) */
        "print(\"shots-ps\", type(grad(shots, method=\"parameter-shift\")(0.3)))\n"
        "print(\"two-ps\", fmt(\"%.12f %.12f\", grad(two, method=\"parameter-shift\")(0.3), "
        "-sin(0.3)))\n",
        out);
    double va[2];
    numbers(out, "two-adjoint", va, 2, "adjoint with two expvals");
    assert_close("adjoint with two expvals", "d/dx (<Z> + <X>) = -sin x", va[0], va[1], 1e-10);
    expect_caught(out, "shots", "exact device");
    expect_caught(out, "measure", "measure");
    /* plain and hybrid functions are differentiated like qfns (whole programs) */
    ck_assert_msg(strstr(out, "plain-fn-ok\n2\n2\n"), "grad of a plain fn and of a hybrid qfn:\n%s",
                  out);
    expect_caught(out, "builtin", "builtin sin()");
    expect_caught(out, "probs", "jacobian()");
    expect_caught(out, "method", "unknown method");
    expect_caught(out, "argnum", "argnum");
    expect_caught(out, "string-arg", "must be a number, a float array or a list");
    expect_caught(out, "complex-arg", "not a complex array");
    /* no gate is left without a shift rule except QubitUnitary, whose
     * matrix cannot carry a derivative: an error, not a silent 0 */
    expect_caught(out, "unitary-ps", "QubitUnitary: a matrix made from differentiated values");
    expect_caught(out, "unitary-adjoint", "QubitUnitary: a matrix made from differentiated values");
    double wa[2];
    numbers(out, "whole", wa, 2, "whole-array arithmetic");
    assert_close("whole-array arithmetic", "d/dx0 cos(2 x0)", wa[0], -2 * sin(0.2), 1e-12);
    assert_close("whole-array arithmetic", "d/dx1", wa[1], 0, 0);
    ck_assert_msg(strstr(out, "shots-ps number"),
                  "parameter-shift on a shots device did not give a number:\n%s", out);
    double v[2];
    numbers(out, "two-ps", v, 2, "parameter-shift with two expvals");
    assert_close("parameter-shift with two expvals", "d/dx (<Z> + <X>) = -sin x", v[0], v[1],
                 1e-10);
    free(out);
}
END_TEST

/* ================================================================ known bugs */

/* Silent wrong answers found while writing these tests; each compares a
 * method with finite differences (the truth here). Run with
 * QH_GRAD_KNOWN_BUGS=1. */
static void bug_case(const char *what, const char *body, const char *arg, int n)
{
    char prog[4096], *out = malloc(OUT_CAP);
    snprintf(
        prog, sizeof prog,
        "dev = device(\"statevector\", wires=2)\n"
        "qfn f(x) on dev { %s }\n"
        "x = %s\n"
        "for m in [\"adjoint\", \"parameter-shift\", \"finite-diff\"] {\n"
        "    try { g = grad(f, method=m)(x); print(m, %s) } catch e { print(m, \"error\", e) }\n"
        "}\n",
        body, arg, n == 1 ? "fmt(\"%.15f\", g)" : "fmt(\"%.15f %.15f\", g[0], g[1])");
    run_ok(what, prog, out);
    double fd[2];
    numbers(out, "finite-diff", fd, n, what);
    for (int k = 0; k < 2; k++) {
        char tag[64], skip[80];
        snprintf(tag, sizeof tag, "%s", methods[k]);
        snprintf(skip, sizeof skip, "%s error", methods[k]);
        if (strstr(out, skip)) continue; /* refusing is fine; a wrong number is not */
        double v[2];
        numbers(out, tag, v, n, what);
        for (int i = 0; i < n; i++) {
            char q[64];
            snprintf(q, sizeof q, "%s d/dx[%d]", methods[k], i);
            if (!(fabs(v[i] - fd[i]) <= 1e-7))
                ck_abort_msg("%s: %s = %.12f, finite-diff %.12f\n%s--- program:\n%s", what, q, v[i],
                             fd[i], out, prog);
        }
    }
    free(out);
}

START_TEST(test_bug_nonlinear_postprocessing)
{
    /* parameter-shift applies the shift rule to the whole return value,
     * which is only right when it is linear in each expval: gives 0 here */
    bug_case("parameter-shift through expval(...)**2",
             "RX(x, 0); RY(0.4, 1); CNOT(0, 1); return expval(PauliZ(1))**2", "0.7", 1);
}
END_TEST

START_TEST(test_bug_var)
{
    /* var() is not differentiated: adjoint and parameter-shift give 0 */
    bug_case("var()", "RX(x, 0); return var(PauliZ(0))", "0.3", 1);
}
END_TEST

START_TEST(test_bug_expval_before_gates)
{
    /* adjoint uses the observable on the final state, not where expval ran */
    bug_case("expval before later gates",
             "RX(x[0], 0); e = expval(PauliZ(0)); RY(x[1], 0); return e", "array([0.3, 0.5])", 2);
}
END_TEST

START_TEST(test_bug_list_concat)
{
    /* inside grad an array argument is a list, so x + x concatenates
     * (x * 2 is refused with a message; x + x is not) */
    bug_case("x + x on an array argument",
             "y = x + x; RX(y[0], 0); RY(y[1], 1); return expval(PauliZ(0) @ PauliZ(1))",
             "array([0.3, 0.5])", 2);
}
END_TEST

START_TEST(test_bug_branch_on_expval)
{
    /* a branch on a measured value: the shifted runs take the other branch */
    bug_case("if on expval",
             "RX(x, 0); if expval(PauliZ(0)) > 0 { RY(x, 1) }; return expval(PauliZ(1))", "0.7", 1);
}
END_TEST


/* ================================================================ whole programs */

/* A small deterministic generator for the random programs. */
static uint64_t ws;
static unsigned wr(unsigned n)
{
    ws = ws * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)((ws >> 33) % n);
}
static double wrf(double lo, double hi) { return lo + (hi - lo) * (double)wr(1000000) / 1e6; }

/* Appends printf-style text to buf (PROG_CAP). */
static void add(char *buf, const char *fmt, ...)
{
    size_t n = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, PROG_CAP - n, fmt, ap);
    va_end(ap);
}

/* A random angle expression of the qfn's inputs: a (number), v (an array of 4). */
static void angle(char *b, bool has_a)
{
    switch (wr(5)) {
    case 0: add(b, "v[%u] * %.3f", wr(4), wrf(-1.5, 1.5)); break;
    case 1: add(b, "sin(v[%u]) + %.3f", wr(4), wrf(-1, 1)); break;
    case 2: add(b, "v[%u] * v[%u] + 0.3", wr(4), wr(4)); break;
    case 3: add(b, has_a ? "a * %.3f + v[0]" : "v[1] ** 2 * %.3f", wrf(-1, 1)); break;
    default: add(b, "%.3f", wrf(-2, 2)); break; /* a constant angle */
    }
}

/* A random circuit of n gates on 3 wires, then the measurement. */
static void circuit(char *b, int n, bool has_a)
{
    static const char *const one[] = { "RX", "RY", "RZ", "PhaseShift" };
    static const char *const two[] = { "CRX",
                                       "CRY",
                                       "CRZ",
                                       "IsingXX",
                                       "IsingYY",
                                       "IsingZZ",
                                       "ControlledPhaseShift",
                                       "SingleExcitation" };
    for (int i = 0; i < n; i++) {
        unsigned w = wr(3), w2 = (w + 1 + wr(2)) % 3;
        switch (wr(7)) {
        case 0:
        case 1:
            add(b, "    %s(", one[wr(4)]);
            angle(b, has_a);
            add(b, ", %u)\n", w);
            break;
        case 2:
            add(b, "    %s(", two[wr(8)]);
            angle(b, has_a);
            add(b, ", wires=[%u, %u])\n", w, w2);
            break;
        case 3:
            add(b, "    Rot(");
            angle(b, has_a);
            add(b, ", ");
            angle(b, has_a);
            add(b, ", ");
            angle(b, has_a);
            add(b, ", %u)\n", w);
            break;
        case 4:
            add(b, "    MultiRZ(");
            angle(b, has_a);
            add(b, ", wires=[0, 1, 2])\n");
            break;
        case 5: add(b, "    CNOT(%u, %u)\n", w, w2); break;
        default: add(b, "    Hadamard(%u)\n", w); break;
        }
    }
}

static void observable(char *b)
{
    static const char *const p[] = { "PauliX", "PauliY", "PauliZ" };
    add(b, "%.3f * %s(%u) + %s(%u) @ %s(%u)", wrf(-1, 1), p[wr(3)], wr(3), p[wr(3)], 0u, p[wr(3)],
        1 + wr(2));
}

/* A random hybrid program: three qfns (a number, a list, an array), a
 * classical helper with a branch, and a cost mixing them with array
 * operations; prints each method's gradient and its largest difference
 * from central differences of the cost itself. */
static void make_program(char *b, unsigned seed)
{
    ws = seed * 2654435761u + 17;
    b[0] = 0;
    add(b, "dev = device(\"statevector\", wires=3)\n");
    add(b, "qfn qa(a, v) on dev {\n");
    circuit(b, 4 + (int)wr(3), true);
    add(b, "    return expval(");
    observable(b);
    add(b, ") * a\n}\n");
    add(b, "qfn qb(v) on dev {\n");
    circuit(b, 4 + (int)wr(3), false);
    add(b, "    e = expval(");
    observable(b);
    add(b, ")\n");
    add(b, "    return [e, var(PauliZ(%u)) + e ** 2]\n}\n", wr(3));
    add(b, "qfn qc(v) on dev {\n");
    circuit(b, 3 + (int)wr(3), false);
    add(b, "    return probs([%u, %u])\n}\n", 0u, 1 + wr(2));
    add(b, "fn helper(x, k) { if x > k { return x * x - k } else { return sin(x) + k * x } }\n");
    add(b, "M = array([[%.3f, %.3f], [%.3f, %.3f]])\n", wrf(-1, 1), wrf(-1, 1), wrf(-1, 1),
        wrf(-1, 1));
    add(b, "fn cost(w) {\n");
    add(b, "    t = w[0] * w[1] + cos(w[2]) / (1 + w[3] ** 2)\n");
    add(b, "    s = 0\n");
    add(b, "    outs = []\n");
    add(b, "    for i in range(2) { append(outs, qa(t * %.3f + i, w * %.3f)) }\n", wrf(-1, 1),
        wrf(0.5, 1.5));
    add(b, "    for i in range(2) { s = s + outs[i] * helper(w[i], %.3f) }\n", wrf(-0.5, 0.5));
    add(b, "    r = qb(w * %.3f + array([0.1, -0.2, 0.3, 0.05]))\n", wrf(0.5, 1.5));
    add(b, "    s = s + r[0] * r[1] - r[0] ** 2\n");
    add(b, "    p = qc(array([w[3], w[2], w[1], w[0]]) + t)\n");
    add(b, "    s = s + dot(p, array([0.3, -0.2, 0.5, 0.1])) + sum(w * w) * %.3f\n", wrf(0, 0.3));
    add(b, "    m = reshape(w, 2, 2) @ M\n");
    add(b, "    s = s + m[1, 0] * m[0, 1] + max(w) - 0.5 * min(w) + mean(exp(w * 0.3))\n");
    add(b, "    return s\n}\n");
    add(b, "x = array([%.4f, %.4f, %.4f, %.4f])\n", wrf(-1, 1), wrf(-1, 1), wrf(-1, 1), wrf(-1, 1));
    add(b, "fn fd(f, x) {\n    h = 1e-6\n    g = zeros(len(x))\n"
           "    for i in range(len(x)) { e = zeros(len(x)); e[i] = h; g[i] = (f(x + e) - f(x - e)) "
           "/ (2 * h) }\n"
           "    return g\n}\n");
    add(b, "ref = fd(cost, x)\n");
    add(b, "for m in [\"adjoint\", \"parameter-shift\", \"finite-diff\"] {\n"
           "    g = grad(cost, method=m)(x)\n"
           "    print(m, fmt(\"%%.3e %%.12f %%.12f %%.12f %%.12f\", max(abs(g - ref)), g[0], g[1], "
           "g[2], g[3]))\n"
           "}\n");
    add(b, "print(\"scale\", fmt(\"%%.6f\", max(abs(ref))))\n");
}

/* Random hybrid programs: every method within 1e-7 of central differences
 * of the same program, the same numbers with --sync and with workers. */
START_TEST(test_random_programs)
{
    char *prog = malloc(PROG_CAP), *out_sync = malloc(OUT_CAP), *out_async = malloc(OUT_CAP);
    for (unsigned seed = 0; seed < 12; seed++) {
        make_program(prog, seed + 100u * (unsigned)_i);
        char what[64];
        snprintf(what, sizeof what, "random program %u", seed + 100u * (unsigned)_i);
        g_sync = true;
        run_ok(what, prog, out_sync);
        g_sync = false;
        run_ok(what, prog, out_async);
        ck_assert_msg(strcmp(out_sync, out_async) == 0,
                      "%s: --sync and workers differ:\n%s\n---\n%s\n--- program:\n%s", what,
                      out_sync, out_async, prog);
        double scale;
        numbers(out_sync, "scale", &scale, 1, what);
        ck_assert_msg(scale > 1e-3,
                      "%s: the gradient is (nearly) zero: the program tests nothing\n%s", what,
                      prog);
        static const char *const methods[] = { "adjoint", "parameter-shift", "finite-diff" };
        for (int k = 0; k < 3; k++) {
            double v[5];
            numbers(out_sync, methods[k], v, 5, what);
            ck_assert_msg(
                v[0] <= 1e-7,
                "%s: %s is %.3g away from finite differences of the program\n%s\n--- program:\n%s",
                what, methods[k], v[0], out_sync, prog);
        }
    }
    free(prog);
    free(out_sync);
    free(out_async);
}
END_TEST

/* Jacobians of list and array results against gradients of each output. */
START_TEST(test_jacobian_columns)
{
    char *out = malloc(OUT_CAP);
    run_ok("jacobian",
           "dev = device(\"statevector\", wires=2)\n"
           "qfn q(v) on dev { RX(v[0], 0); RY(v[1] * v[2], 1); CNOT(0, 1); RZ(v[2], 1)\n"
           "    return [expval(PauliZ(0)), expval(PauliX(1) @ PauliZ(0)), var(PauliY(1))] }\n"
           "fn f(w) { r = q(w * 2); return array([r[0] * w[1], r[1] + r[2], sin(w[0]) * r[2]]) + "
           "w[2] }\n"
           "fn pr(w) { return probs_of(w) }\n"
           "qfn probs_of(w) on dev { RY(w[0], 0); CRX(w[1], wires=[0, 1]); return probs() }\n"
           "x = array([0.3, -0.7, 0.4])\n"
           "for m in [\"adjoint\", \"parameter-shift\", \"finite-diff\"] {\n"
           "    for g in [f, pr] {\n"
           "        J = jacobian(g, method=m)(x)\n"
           "        worst = 0\n"
           "        for i in range(shape(J)[0]) {\n"
           "            gi = grad(fn(w) { return g(w)[i] }, method=m)(x)\n"
           "            worst = max(worst, max(abs(J[i] - gi)))\n"
           "        }\n"
           "        print(m, fmt(\"%.3e\", worst), shape(J))\n"
           "    }\n"
           "}\n"
           "print(\"jl\", jacobian(fn(t) { return [[t ** 2, t], [3 * t, 1]] })(2))\n"
           "try { print(jacobian(fn(t) { return [t ** 2, [t, 3 * t]] })(2)) } catch e { "
           "print(\"ragged:\", e) }\n"
           "try { print(jacobian(fn(t) { return [[t, [t, t]], t] })(2)) } catch e { "
           "print(\"ragged:\", e) }\n",
           out);
    static const char *const methods[] = { "adjoint", "parameter-shift", "finite-diff" };
    for (int k = 0; k < 3; k++) {
        const char *p = out;
        for (int rep = 0; rep < 2; rep++) {
            p = strstr(p, methods[k]);
            ck_assert_msg(p, "jacobian: no line for %s:\n%s", methods[k], out);
            double v = strtod(p + strlen(methods[k]), NULL);
            ck_assert_msg(v <= 1e-12,
                          "jacobian (%s): a row differs from the gradient of its output by %g\n%s",
                          methods[k], v, out);
            p += strlen(methods[k]);
        }
    }
    ck_assert_msg(strstr(out, "jl array([[4, 1], [3, 0]])"), "jacobian of a nested list:\n%s", out);
    /* entries of different shapes: one Jacobian each (PennyLane's tuple) */
    ck_assert_msg(strstr(out, "[4, array([1, 3])]"), "jacobian of a ragged list:\n%s", out);
    ck_assert_msg(strstr(out, "ragged: jacobian <anonymous>() called at t.qh:21 failed: jacobian: "
                              "<anonymous>() returned ragged lists"),
                  "jacobian of a list ragged inside an entry:\n%s", out);
    free(out);
}
END_TEST

/* ================================================================ suite */

/* every test starts in --sync mode (CK_FORK=no runs them in one process) */
static void setup_sync(void) { g_sync = true; }

static Suite *grad_suite(void)
{
    Suite *s = suite_create("grad");
    TCase *tc = tcase_create("gates");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup_sync, NULL);
    tcase_add_loop_test(tc, test_gate_sync, 0, NGATES);
    tcase_add_loop_test(tc, test_gate_async, 0, NGATES);
    suite_add_tcase(s, tc);

    tc = tcase_create("forms");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup_sync, NULL);
    tcase_add_test(tc, test_scalar_and_explicit);
    tcase_add_test(tc, test_2d_array);
    tcase_add_test(tc, test_argnum);
    tcase_add_test(tc, test_no_dependence);
    tcase_add_test(tc, test_chain);
    suite_add_tcase(s, tc);

    tc = tcase_create("whole");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, setup_sync, NULL);
    tcase_add_loop_test(tc, test_random_programs, 0, 2);
    tcase_add_test(tc, test_jacobian_columns);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup_sync, NULL);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);

    /* the former known bugs, fixed: they run always */
    if (1) {
        tc = tcase_create("known_bugs");
        tcase_set_timeout(tc, 60);
        tcase_add_checked_fixture(tc, setup_sync, NULL);
        tcase_add_test(tc, test_bug_nonlinear_postprocessing);
        tcase_add_test(tc, test_bug_var);
        tcase_add_test(tc, test_bug_expval_before_gates);
        tcase_add_test(tc, test_bug_list_concat);
        tcase_add_test(tc, test_bug_branch_on_expval);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(grad_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
