/* test_qasm.c — unit tests of the OpenQASM room (Check).
 *
 * Gate by gate, the unitary this room applies for each qelib1 gate is
 * compared with the OpenQASM 2.0 definition written out here from the
 * spec: U(θ,φ,λ) = Rz(φ) Ry(θ) Rz(λ) (which carries e^{-i(φ+λ)/2}
 * against PennyLane's U3), CX, and each qelib1 gate as its body of U,
 * CX and earlier gates, multiplied as dense matrices. They agree up to
 * the global phase lang/qasm.md documents, which is checked too. Also:
 * the reader (registers, broadcasting, custom gates, modifiers, measure,
 * reset, if/else, errors with line numbers), and write -> read round
 * trips of random circuits in versions 2 and 3.
 */
#include <check.h>
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qasm.h"

#define MAXQ 6
#define MAXD (1 << MAXQ)

/* ---- dense reference from the OpenQASM 2.0 definitions --------------------- */

typedef struct M {
    int n;
    cplx a[MAXD * MAXD];
} M; /* an n-qubit operator */

static void m_id(M *m, int n)
{
    m->n = n;
    int D = 1 << n;
    memset(m->a, 0, sizeof m->a);
    for (int i = 0; i < D; i++) m->a[i * D + i] = 1;
}

/* m = g (on wires w, g's first wire = MSB) * m */
static void m_apply(M *m, const cplx *g, const int *w, int k)
{
    int n = m->n, D = 1 << n, d = 1 << k;
    static cplx t[MAXD * MAXD];
    memset(t, 0, sizeof(cplx) * (size_t)D * D);
    unsigned mask = 0;
    for (int i = 0; i < k; i++) mask |= 1u << (n - 1 - w[i]);
    for (int r = 0; r < D; r++) {
        int sr = 0;
        for (int i = 0; i < k; i++) sr = (sr << 1) | ((r >> (n - 1 - w[i])) & 1);
        for (int sc = 0; sc < d; sc++) {
            cplx gv = g[sr * d + sc];
            if (gv == 0) continue;
            int c = r & (int)~mask;
            for (int i = 0; i < k; i++)
                if ((sc >> (k - 1 - i)) & 1) c |= 1 << (n - 1 - w[i]);
            for (int j = 0; j < D; j++) t[r * D + j] += gv * m->a[c * D + j];
        }
    }
    memcpy(m->a, t, sizeof(cplx) * (size_t)D * D);
}

/* The spec's U: Rz(phi) Ry(theta) Rz(lambda). */
static void U(M *m, double th, double ph, double la, int a)
{
    cplx rz1[4] = { cexp(-I * la / 2), 0, 0, cexp(I * la / 2) };
    cplx ry[4] = { cos(th / 2), -sin(th / 2), sin(th / 2), cos(th / 2) };
    cplx rz2[4] = { cexp(-I * ph / 2), 0, 0, cexp(I * ph / 2) };
    m_apply(m, rz1, &a, 1);
    m_apply(m, ry, &a, 1);
    m_apply(m, rz2, &a, 1);
}

static void CX(M *m, int a, int b)
{
    cplx x[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0 };
    int w[2] = { a, b };
    m_apply(m, x, w, 2);
}

/* qelib1's gates, each as its body. */
static void u3(M *m, double t, double p, double l, int a) { U(m, t, p, l, a); }
static void u2(M *m, double p, double l, int a) { U(m, M_PI / 2, p, l, a); }
static void u1(M *m, double l, int a) { U(m, 0, 0, l, a); }
static void h(M *m, int a) { u2(m, 0, M_PI, a); }
static void s(M *m, int a) { u1(m, M_PI / 2, a); }
static void sdg(M *m, int a) { u1(m, -M_PI / 2, a); }
static void t(M *m, int a) { u1(m, M_PI / 4, a); }
static void tdg(M *m, int a) { u1(m, -M_PI / 4, a); }
static void rz(M *m, double p, int a) { u1(m, p, a); }
static void ccx(M *m, int a, int b, int c)
{
    h(m, c);
    CX(m, b, c);
    tdg(m, c);
    CX(m, a, c);
    t(m, c);
    CX(m, b, c);
    tdg(m, c);
    CX(m, a, c);
    t(m, b);
    t(m, c);
    h(m, c);
    CX(m, a, b);
    t(m, a);
    tdg(m, b);
    CX(m, a, b);
}

/* The reference of gate `name` on wires 0..k-1. 0 if it has a body here. */
static int reference(const char *name, const double *p, M *m)
{
    const double a = p[0], b = p[1], c = p[2], d = p[3];
    if (!strcmp(name, "U") || !strcmp(name, "u3") || !strcmp(name, "u")) {
        m_id(m, 1);
        u3(m, a, b, c, 0);
        return 0;
    }
    if (!strcmp(name, "u2")) {
        m_id(m, 1);
        u2(m, a, b, 0);
        return 0;
    }
    if (!strcmp(name, "u1") || !strcmp(name, "p") || !strcmp(name, "phase")) {
        m_id(m, 1);
        u1(m, a, 0);
        return 0;
    }
    if (!strcmp(name, "u0") || !strcmp(name, "id")) {
        m_id(m, 1);
        U(m, 0, 0, 0, 0);
        return 0;
    }
    if (!strcmp(name, "CX") || !strcmp(name, "cx")) {
        m_id(m, 2);
        CX(m, 0, 1);
        return 0;
    }
    if (!strcmp(name, "x")) {
        m_id(m, 1);
        u3(m, M_PI, 0, M_PI, 0);
        return 0;
    }
    if (!strcmp(name, "y")) {
        m_id(m, 1);
        u3(m, M_PI, M_PI / 2, M_PI / 2, 0);
        return 0;
    }
    if (!strcmp(name, "z")) {
        m_id(m, 1);
        u1(m, M_PI, 0);
        return 0;
    }
    if (!strcmp(name, "h")) {
        m_id(m, 1);
        h(m, 0);
        return 0;
    }
    if (!strcmp(name, "s")) {
        m_id(m, 1);
        s(m, 0);
        return 0;
    }
    if (!strcmp(name, "sdg")) {
        m_id(m, 1);
        sdg(m, 0);
        return 0;
    }
    if (!strcmp(name, "t")) {
        m_id(m, 1);
        t(m, 0);
        return 0;
    }
    if (!strcmp(name, "tdg")) {
        m_id(m, 1);
        tdg(m, 0);
        return 0;
    }
    if (!strcmp(name, "sx")) {
        m_id(m, 1);
        sdg(m, 0);
        h(m, 0);
        sdg(m, 0);
        return 0;
    }
    if (!strcmp(name, "sxdg")) {
        m_id(m, 1);
        s(m, 0);
        h(m, 0);
        s(m, 0);
        return 0;
    }
    if (!strcmp(name, "rx")) {
        m_id(m, 1);
        u3(m, a, -M_PI / 2, M_PI / 2, 0);
        return 0;
    }
    if (!strcmp(name, "ry")) {
        m_id(m, 1);
        u3(m, a, 0, 0, 0);
        return 0;
    }
    if (!strcmp(name, "rz")) {
        m_id(m, 1);
        rz(m, a, 0);
        return 0;
    }
    if (!strcmp(name, "cz")) {
        m_id(m, 2);
        h(m, 1);
        CX(m, 0, 1);
        h(m, 1);
        return 0;
    }
    if (!strcmp(name, "cy")) {
        m_id(m, 2);
        sdg(m, 1);
        CX(m, 0, 1);
        s(m, 1);
        return 0;
    }
    if (!strcmp(name, "ch")) {
        m_id(m, 2);
        s(m, 1);
        h(m, 1);
        t(m, 1);
        CX(m, 0, 1);
        tdg(m, 1);
        h(m, 1);
        sdg(m, 1);
        return 0;
    }
    if (!strcmp(name, "swap")) {
        m_id(m, 2);
        CX(m, 0, 1);
        CX(m, 1, 0);
        CX(m, 0, 1);
        return 0;
    }
    if (!strcmp(name, "ccx")) {
        m_id(m, 3);
        ccx(m, 0, 1, 2);
        return 0;
    }
    if (!strcmp(name, "cswap")) {
        m_id(m, 3);
        CX(m, 2, 1);
        ccx(m, 0, 1, 2);
        CX(m, 2, 1);
        return 0;
    }
    if (!strcmp(name, "crx")) {
        m_id(m, 2);
        u1(m, M_PI / 2, 1);
        CX(m, 0, 1);
        u3(m, -a / 2, 0, 0, 1);
        CX(m, 0, 1);
        u3(m, a / 2, -M_PI / 2, 0, 1);
        return 0;
    }
    if (!strcmp(name, "cry")) {
        m_id(m, 2);
        u3(m, a / 2, 0, 0, 1);
        CX(m, 0, 1);
        u3(m, -a / 2, 0, 0, 1);
        CX(m, 0, 1);
        return 0;
    }
    if (!strcmp(name, "crz")) {
        m_id(m, 2);
        rz(m, a / 2, 1);
        CX(m, 0, 1);
        rz(m, -a / 2, 1);
        CX(m, 0, 1);
        return 0;
    }
    if (!strcmp(name, "cu1") || !strcmp(name, "cp") || !strcmp(name, "cphase")) {
        m_id(m, 2);
        u1(m, a / 2, 0);
        CX(m, 0, 1);
        u1(m, -a / 2, 1);
        CX(m, 0, 1);
        u1(m, a / 2, 1);
        return 0;
    }
    if (!strcmp(name, "cu3")) {
        m_id(m, 2);
        u1(m, (c + b) / 2, 0);
        u1(m, (c - b) / 2, 1);
        CX(m, 0, 1);
        u3(m, -a / 2, 0, -(b + c) / 2, 1);
        CX(m, 0, 1);
        u3(m, a / 2, b, 0, 1);
        return 0;
    }
    if (!strcmp(name, "cu")) {
        m_id(m, 2);
        u1(m, d, 0);
        u1(m, (c + b) / 2, 0);
        u1(m, (c - b) / 2, 1);
        CX(m, 0, 1);
        u3(m, -a / 2, 0, -(b + c) / 2, 1);
        CX(m, 0, 1);
        u3(m, a / 2, b, 0, 1);
        return 0;
    }
    if (!strcmp(name, "csx")) {
        m_id(m, 2);
        h(m, 1);
        u1(m, M_PI / 4, 0);
        CX(m, 0, 1);
        u1(m, -M_PI / 4, 1);
        CX(m, 0, 1);
        u1(m, M_PI / 4, 1); /* cu1(pi/2) */
        h(m, 1);
        return 0;
    }
    if (!strcmp(name, "rzz")) {
        m_id(m, 2);
        CX(m, 0, 1);
        u1(m, a, 1);
        CX(m, 0, 1);
        return 0;
    }
    if (!strcmp(name, "rxx")) {
        m_id(m, 2);
        u3(m, M_PI / 2, a, 0, 0);
        h(m, 1);
        CX(m, 0, 1);
        u1(m, -a, 1);
        CX(m, 0, 1);
        h(m, 1);
        u2(m, -M_PI, M_PI - a, 0);
        return 0;
    }
    return -1;
}

/* The phase this room's gate carries against the definition:
   ours = e^{i alpha} reference (lang/qasm.md's table). */
static double documented_phase(const char *n, const double *p)
{
    const double a = p[0], b = p[1], c = p[2];
    if (!strcmp(n, "U") || !strcmp(n, "u3") || !strcmp(n, "u")) return (b + c) / 2;
    if (!strcmp(n, "u2")) return (a + b) / 2;
    if (!strcmp(n, "u1") || !strcmp(n, "p") || !strcmp(n, "phase")) return a / 2;
    if (!strcmp(n, "x") || !strcmp(n, "y") || !strcmp(n, "z") || !strcmp(n, "h")) return M_PI / 2;
    if (!strcmp(n, "s")) return M_PI / 4;
    if (!strcmp(n, "sdg")) return -M_PI / 4;
    if (!strcmp(n, "t")) return M_PI / 8;
    if (!strcmp(n, "tdg")) return -M_PI / 8;
    if (!strcmp(n, "sx")) return M_PI / 4;
    if (!strcmp(n, "sxdg")) return 3 * M_PI / 4;
    if (!strcmp(n, "cz")) return M_PI;
    if (!strcmp(n, "ch")) return M_PI;
    if (!strcmp(n, "ccx")) return M_PI / 8 + M_PI;
    if (!strcmp(n, "cswap")) return M_PI / 8 + M_PI;
    if (!strcmp(n, "cu1") || !strcmp(n, "cp") || !strcmp(n, "cphase")) return a / 4;
    if (!strcmp(n, "cu3")) return (b + c) / 4;
    if (!strcmp(n, "cu")) return (b + c) / 4 + p[3] / 2;
    if (!strcmp(n, "csx")) return M_PI / 8 + M_PI;
    if (!strcmp(n, "rxx")) return M_PI;
    return 0; /* id u0 CX cx rx ry rz cy swap cry crz */
}

/* ---- the unitary of a circuit, by applying its ops to basis states ---------- */

static void circuit_unitary(const QasmCircuit *c, int n, cplx *u)
{
    int D = 1 << n;
    SvState s;
    ck_assert_int_eq(sv_init(&s, n), 0);
    for (int col = 0; col < D; col++) {
        memset(s.amp, 0, (size_t)D * sizeof(cplx));
        s.amp[col] = 1;
        cplx ph = 1;
        for (size_t i = 0; i < c->nops; i++) {
            const QasmOp *o = &c->ops[i];
            if (o->kind == QASM_GPHASE) {
                ph *= cexp(I * o->params[0]);
                continue;
            }
            ck_assert_int_eq(o->kind, QASM_GATE);
            SvOp op;
            qasm_svop(o, &op);
            char err[256];
            ck_assert_msg(sv_apply(&s, &op, err, sizeof err) == 0, "%s", err);
        }
        for (int r = 0; r < D; r++) u[r * D + col] = ph * s.amp[r];
    }
    sv_free(&s);
}

/* max |a - e^{i alpha} b| and the alpha that fits best (from the largest entry). */
static double phase_fit(const cplx *a, const cplx *b, int D, double *alpha)
{
    int best = 0;
    for (int i = 0; i < D * D; i++)
        if (cabs(b[i]) > cabs(b[best])) best = i;
    cplx f = a[best] / b[best];
    *alpha = carg(f);
    double e = 0;
    for (int i = 0; i < D * D; i++) {
        double x = cabs(a[i] - cexp(I * *alpha) * b[i]);
        if (x > e) e = x;
    }
    return e;
}

static double wrap(double x) { return remainder(x, 2 * M_PI); }

START_TEST(test_qelib1_gate_by_gate)
{
    static const char *names[] = { "U",      "u3",    "u",   "u2",  "u1",  "p",   "phase",
                                   "u0",     "id",    "CX",  "cx",  "x",   "y",   "z",
                                   "h",      "s",     "sdg", "t",   "tdg", "sx",  "sxdg",
                                   "rx",     "ry",    "rz",  "cz",  "cy",  "ch",  "swap",
                                   "ccx",    "cswap", "crx", "cry", "crz", "cu1", "cp",
                                   "cphase", "cu3",   "cu",  "csx", "rzz", "rxx" };
    Rng rng;
    rng_seed(&rng, 42);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        for (int rep = 0; rep < 4; rep++) {
            double p[4];
            for (int k = 0; k < 4; k++) p[k] = 6 * rng_uniform(&rng) - 3;
            QasmCircuit c;
            char err[256];
            int np = 0;
            for (int k = 0; k <= 4; k++)
                if (qasm_gate_circuit(names[i], p, k, &c, NULL, 0) == 0) {
                    np = k;
                    qasm_free(&c);
                    break;
                }
            ck_assert_msg(qasm_gate_circuit(names[i], p, np, &c, err, sizeof err) == 0, "%s", err);
            static M ref;
            ck_assert_msg(reference(names[i], p, &ref) == 0, "no reference for %s", names[i]);
            int D = 1 << ref.n;
            static cplx ours[MAXD * MAXD];
            circuit_unitary(&c, ref.n, ours);
            double alpha, e = phase_fit(ours, ref.a, D, &alpha);
            ck_assert_msg(e <= 1e-12, "%s: not the definition up to a phase (%g)", names[i], e);
            double want = documented_phase(names[i], p);
            ck_assert_msg(fabs(wrap(alpha - want)) <= 1e-12, "%s: phase %.15g, documented %.15g",
                          names[i], alpha, want);
            qasm_free(&c);
        }
}
END_TEST

/* Gates outside the OpenQASM 2.0 paper's qelib1, by their meaning. */
START_TEST(test_extended_gates)
{
    double th = 0.7;
    struct {
        const char *name;
        const char *text;
    } cases[] = {
        { "c3x", "qreg q[4]; c3x q[0], q[1], q[2], q[3];" },
        { "c4x", "qreg q[5]; c4x q[0], q[1], q[2], q[3], q[4];" },
    };
    for (int k = 0; k < 2; k++) {
        QasmCircuit c;
        char err[256];
        ck_assert_msg(qasm_parse(cases[k].text, strlen(cases[k].text), &c, err, sizeof err) == 0,
                      "%s", err);
        int n = c.nqubits, D = 1 << n;
        static cplx u[MAXD * MAXD];
        circuit_unitary(&c, n, u);
        for (int r = 0; r < D; r++)
            for (int col = 0; col < D; col++) {
                int target = col == D - 1 ? D - 2 : col == D - 2 ? D - 1 : col;
                ck_assert(cabs(u[r * D + col] - (r == target ? 1 : 0)) <= 1e-12);
            }
        qasm_free(&c);
    }
    /* c3sqrtx: qelib1.inc's text makes it ctrl^3(SX^dagger), SX^dagger = [[1-i, 1+i], [1+i, 1-i]]/2
       (tests/qasm/check_qasm.py checks it against that text too) */
    {
        const char *t3 = "qreg q[4]; c3sqrtx q[0], q[1], q[2], q[3];";
        QasmCircuit c;
        ck_assert_int_eq(qasm_parse(t3, strlen(t3), &c, NULL, 0), 0);
        static cplx u[MAXD * MAXD];
        circuit_unitary(&c, 4, u);
        for (int r = 0; r < 16; r++)
            for (int col = 0; col < 16; col++) {
                cplx want = r == col ? 1 : 0;
                if (r >= 14 && col >= 14) want = r == col ? (1 - I) / 2 : (1 + I) / 2;
                ck_assert(cabs(u[r * 16 + col] - want) <= 1e-12);
            }
        qasm_free(&c);
    }
    /* ryy(t) = exp(-i t/2 Y (x) Y) */
    const char *t = "OPENQASM 3; qubit[2] q; ryy(0.7) q[0], q[1];";
    QasmCircuit c;
    ck_assert_int_eq(qasm_parse(t, strlen(t), &c, NULL, 0), 0);
    cplx u[16];
    circuit_unitary(&c, 2, u);
    cplx yy[16] = { 0, 0, 0, -1, 0, 0, 1, 0, 0, 1, 0, 0, -1, 0, 0, 0 };
    for (int i = 0; i < 16; i++) {
        cplx want = -I * sin(th / 2) * yy[i] + (i % 5 == 0 ? cos(th / 2) : 0);
        ck_assert(cabs(u[i] - want) <= 1e-12);
    }
    qasm_free(&c);
}
END_TEST

/* ---- the reader ------------------------------------------------------------- */

static const char *bell = "OPENQASM 2.0;\n"
                          "include \"qelib1.inc\";\n"
                          "// a comment\n"
                          "qreg q[2];\nqreg r[1];\ncreg c[3];\n"
                          "gate mine(a, b) x, y { rx(a) x; cx x, y; ry(b / 2) y; }\n"
                          "h q;\n" /* broadcast over q */
                          "mine(pi/2, -0.5) q[1], r[0];\n"
                          "cx q, r[0];\n" /* broadcast against a single qubit */
                          "barrier q, r;\n"
                          "measure q -> c[0:1];\n";

START_TEST(test_reader_basics)
{
    const char *text = "OPENQASM 2.0;\ninclude \"qelib1.inc\";\n/* block\ncomment */ qreg "
                       "q[2];\nqreg r[1];\ncreg c[3];\n"
                       "gate mine(a, b) x, y { rx(a) x; cx x, y; ry(b / 2) y; }\n"
                       "h q;\nmine(pi/2, -0.5) q[1], r[0];\ncx q, r[0];\nbarrier q, r;\n"
                       "measure q -> c[0];\nmeasure r -> c[2];\nreset q;\nif(c==5) x r[0];\n";
    (void)bell;
    QasmCircuit c;
    char err[256] = "";
    ck_assert_msg(qasm_parse(text, strlen(text), &c, err, sizeof err) != 0,
                  "q -> c[0]: sizes differ");
    ck_assert_str_eq(err, "line 12: measure: the qubits and bits differ in number");
    text = "OPENQASM 2.0;\ninclude \"qelib1.inc\";\n/* block\ncomment */ qreg q[2];\nqreg "
           "r[1];\ncreg c[3];\n"
           "gate mine(a, b) x, y { rx(a) x; cx x, y; ry(b / 2) y; }\n"
           "h q;\nmine(pi/2, -0.5) q[1], r[0];\ncx q, r[0];\nbarrier q, r;\n"
           "measure q[0] -> c[0];\nmeasure r -> c[2];\nreset q;\nif(c==5) x r[0];\n";
    ck_assert_msg(qasm_parse(text, strlen(text), &c, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(c.nqubits, 3);
    ck_assert_int_eq(c.nclbits, 3);
    ck_assert_uint_eq(c.nops, 2 + 3 + 2 + 1 + 1 + 2 + 1);
    ck_assert(c.ops[0].gate == SV_HADAMARD && c.ops[0].wires[0] == 0);
    ck_assert(c.ops[1].gate == SV_HADAMARD && c.ops[1].wires[0] == 1);
    ck_assert(c.ops[2].gate == SV_RX && fabs(c.ops[2].params[0] - M_PI / 2) < 1e-15 &&
              c.ops[2].wires[0] == 1);
    ck_assert(c.ops[3].gate == SV_CNOT && c.ops[3].wires[0] == 1 && c.ops[3].wires[1] == 2);
    ck_assert(c.ops[4].gate == SV_RY && c.ops[4].params[0] == -0.25 && c.ops[4].wires[0] == 2);
    ck_assert(c.ops[5].gate == SV_CNOT && c.ops[5].wires[0] == 0 && c.ops[6].wires[0] == 1);
    ck_assert(c.ops[7].kind == QASM_MEASURE && c.ops[7].wires[0] == 0 && c.ops[7].clbit == 0);
    ck_assert(c.ops[8].kind == QASM_MEASURE && c.ops[8].wires[0] == 2 && c.ops[8].clbit == 2);
    ck_assert(c.ops[9].kind == QASM_RESET && c.ops[10].kind == QASM_RESET);
    ck_assert(c.ops[11].gate == SV_PAULIX && c.ops[11].cond >= 0);
    const QasmCond *cd = &c.conds[c.ops[11].cond];
    ck_assert(cd->nbits == 3 && cd->value == 5 && cd->bits[0] == 0 && cd->bits[2] == 2 &&
              !cd->negate);
    ck_assert_int_eq(c.ops[9].line, 14);
    qasm_free(&c);
}
END_TEST

START_TEST(test_reader_qasm3)
{
    const char *text = "OPENQASM 3.0;\ninclude \"stdgates.inc\";\nqubit[3] q;\nbit[2] c;\nbit f;\n"
                       "gate g(t) a { rz(t) a; gphase(t); }\n"
                       "inv @ s q[0];\n"
                       "ctrl @ g(0.5) q[1], q[2];\n"
                       "negctrl @ x q[0], q[1];\n"
                       "pow(2) @ t q[2];\n"
                       "pow(0.5) @ rx(1.0) q[0];\n"
                       "c[0] = measure q[0];\n"
                       "if (c[0] == 1) { x q[1]; h q[2]; } else z q[1];\n"
                       "if (!f) y q[0];\n"
                       "inv @ g(0.25) q[0];\n";
    QasmCircuit c;
    char err[256] = "";
    ck_assert_msg(qasm_parse(text, strlen(text), &c, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(c.version, 3);
    ck_assert_int_eq(c.nclbits, 3);
    size_t i = 0;
    ck_assert(c.ops[i].gate == SV_S && c.ops[i].adjoint == 1);
    i++;
    /* ctrl @ g: controlled rz, and the phase as a PhaseShift on the control */
    ck_assert(c.ops[i].gate == SV_RZ && c.ops[i].nctrl == 1 && c.ops[i].wires[0] == 1 &&
              c.ops[i].wires[1] == 2);
    i++;
    ck_assert(c.ops[i].gate == SV_PHASESHIFT && c.ops[i].nctrl == 0 && c.ops[i].wires[0] == 1 &&
              c.ops[i].params[0] == 0.5);
    i++;
    ck_assert(c.ops[i].gate == SV_PAULIX && c.ops[i].nctrl == 0 && c.ops[i].wires[0] == 0);
    i++; /* negctrl: X */
    ck_assert(c.ops[i].gate == SV_PAULIX && c.ops[i].nctrl == 1 && c.ops[i].wires[0] == 0 &&
              c.ops[i].wires[1] == 1);
    i++;
    ck_assert(c.ops[i].gate == SV_PAULIX && c.ops[i].nctrl == 0 && c.ops[i].wires[0] == 0);
    i++;
    ck_assert(c.ops[i].gate == SV_T && c.ops[i + 1].gate == SV_T);
    i += 2;
    ck_assert(c.ops[i].gate == SV_RX && c.ops[i].params[0] == 0.5);
    i++;
    ck_assert(c.ops[i].kind == QASM_MEASURE && c.ops[i].clbit == 0);
    i++;
    int c1 = c.ops[i].cond;
    ck_assert(c.ops[i].gate == SV_PAULIX && c1 >= 0 && c.ops[i + 1].cond == c1);
    i += 2;
    ck_assert(c.conds[c1].nbits == 1 && c.conds[c1].bits[0] == 0 && c.conds[c1].value == 1 &&
              !c.conds[c1].negate);
    ck_assert(c.ops[i].gate == SV_PAULIZ && c.conds[c.ops[i].cond].negate);
    i++;
    ck_assert(c.ops[i].gate == SV_PAULIY && c.conds[c.ops[i].cond].bits[0] == 2 &&
              c.conds[c.ops[i].cond].value == 0);
    i++;
    /* inv @ g: the body reversed and inverted */
    ck_assert(c.ops[i].kind == QASM_GPHASE && c.ops[i].params[0] == -0.25);
    i++;
    ck_assert(c.ops[i].gate == SV_RZ && c.ops[i].adjoint == 1);
    i++;
    ck_assert_uint_eq(i, c.nops);
    qasm_free(&c);
}
END_TEST

START_TEST(test_reader_errors)
{
    struct {
        const char *text, *msg;
    } bad[] = {
        { "OPENQASM 2.0;\nqreg q[2];\nfoo q[0];\n", "line 3: unknown gate 'foo'" },
        { "qreg q[2];\ncx q[0], q[0];\n", "line 2: CNOT: a qubit is used twice (0)" },
        { "qreg q[2];\nh q[2];\n", "line 2: index 2 out of range for 'q' of size 2" },
        { "qreg q[2];\nrx q[0];\n", "line 2: rx takes 1 parameter, got 0" },
        { "qreg q[2];\ncx q[0];\n", "line 2: cx acts on 2 qubits, got 1" },
        { "qreg q[2];\nqreg r[3];\ncx q, r;\n",
          "line 3: registers of different sizes (2 and 3) in one statement" },
        { "qreg q[1];\nh r[0];\n", "line 2: unknown quantum register 'r'" },
        { "qreg q[1];\nh q[0]\nh q[0];\n", "line 3: expected ';', got 'h'" },
        { "OPENQASM 2.0;\ninclude \"other.inc\";\n",
          "line 2: cannot include \"other.inc\" (only qelib1.inc and stdgates.inc)" },
        { "OPENQASM 3;\nfor int i in [0:3] { }\n",
          "line 2: unsupported OpenQASM 3 statement 'for'" },
        { "qreg q[1];\nrx(2 * foo) q[0];\n", "line 2: unknown name 'foo' in an expression" },
        { "qreg q[1];\ngate g a { h b; }\ng q[0];\n",
          "line 2: unknown qubit 'b' in the body of gate 'g'" },
        { "qreg q[1];\nopaque o a;\no q[0];\n",
          "line 3: opaque gate 'o' has no definition to apply" },
        { "qreg q[2];\ncreg c[1];\nmeasure q -> c;\n",
          "line 3: measure: the qubits and bits differ in number" },
        { "qreg q[1];\ngate g a { g a; }\ng q[0];\n",
          "line 2: gate definitions nested too deeply (at 'g')" },
        { "qreg q[1];\npow(0.5) @ h q[0];\n",
          "line 2: pow(0.5) @ h: non-integer powers only of rotations and phase gates" },
        { "qreg q[1];\nh q[0]; /* open", "line 2: unterminated comment" },
        { "OPENQASM 4.0;", "line 1: unsupported OpenQASM version 4 (2.0 or 3)" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        QasmCircuit c;
        char err[256] = "";
        ck_assert_msg(qasm_parse(bad[i].text, strlen(bad[i].text), &c, err, sizeof err) == -1,
                      "case %zu parsed", i);
        ck_assert_str_eq(err, bad[i].msg);
        ck_assert_uint_eq(c.nops, 0);
    }
}
END_TEST

/* ---- round trips -------------------------------------------------------------- */

static void rand_circuit(Rng *r, int n, int nops, int v3, QasmCircuit *c)
{
    qasm_init(c, n, 0);
    for (int k = 0; k < nops; k++) {
        SvGate g;
        const SvGateInfo *info;
        do {
            g = (SvGate)rng_below(r, SV_NGATES);
            info = sv_gate_info(g);
        } while (g == SV_QUBITUNITARY || (!v3 && g == SV_DOUBLEEXC));
        int nw = info->nwires > 0 ? info->nwires : 1 + (int)rng_below(r, 3);
        int nc = 0;
        /* controls where version 2 has a form for them */
        if (v3 && nw + 1 <= n && rng_below(r, 3) == 0)
            nc = 1 + (int)rng_below(r, (uint64_t)(n - nw < 2 ? n - nw : 2));
        if (!v3 && rng_below(r, 3) == 0 &&
            (g == SV_PAULIX || g == SV_PAULIY || g == SV_PAULIZ || g == SV_HADAMARD || g == SV_RX ||
             g == SV_RY || g == SV_RZ || g == SV_PHASESHIFT || g == SV_U3 || g == SV_SWAP))
            nc = 1;
        int w[16], perm[16];
        for (int i = 0; i < n; i++) perm[i] = i;
        for (int i = n - 1; i > 0; i--) {
            int j = (int)rng_below(r, (uint64_t)i + 1), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (int i = 0; i < nc + nw; i++) w[i] = perm[i];
        QasmOp *op = qasm_add(c, QASM_GATE, w, nc, nw);
        op->gate = g;
        op->adjoint = (int)rng_below(r, 2);
        op->nparams = info->nparams;
        for (int i = 0; i < info->nparams; i++) op->params[i] = 6 * rng_uniform(r) - 3;
        if (g == SV_BASISSTATE) op->bits = rng_below(r, (uint64_t)1 << nw);
        if (v3 && rng_below(r, 8) == 0) {
            QasmOp *gp = qasm_add(c, QASM_GPHASE, NULL, 0, 0);
            gp->params[0] = rng_uniform(r);
        }
    }
}

START_TEST(test_round_trip)
{
    Rng r;
    rng_seed(&r, 2718);
    int n = 5, D = 1 << n;
    static cplx u1m[MAXD * MAXD], u2m[MAXD * MAXD];
    for (int v = 2; v <= 3; v++)
        for (int rep = 0; rep < 40; rep++) {
            QasmCircuit a, b;
            rand_circuit(&r, n, 25, v == 3, &a);
            char err[256] = "";
            size_t len;
            char *text = qasm_write(&a, v, &len, err, sizeof err);
            ck_assert_msg(text != NULL, "write v%d: %s", v, err);
            ck_assert_msg(qasm_parse(text, len, &b, err, sizeof err) == 0, "read back v%d: %s\n%s",
                          v, err, text);
            circuit_unitary(&a, n, u1m);
            circuit_unitary(&b, n, u2m);
            double alpha, e = phase_fit(u2m, u1m, D, &alpha);
            ck_assert_msg(e <= 1e-10, "v%d round trip differs (%g):\n%s", v, e, text);
            free(text);
            qasm_free(&a);
            qasm_free(&b);
        }
}
END_TEST

START_TEST(test_write_measure_cond)
{
    QasmCircuit c;
    qasm_init(&c, 2, 2);
    int w0 = 0, w1 = 1;
    QasmOp *op = qasm_add(&c, QASM_GATE, &w0, 0, 1);
    op->gate = SV_HADAMARD;
    op = qasm_add(&c, QASM_MEASURE, &w0, 0, 1);
    op->clbit = 1;
    QasmCond cd;
    memset(&cd, 0, sizeof cd);
    cd.nbits = 1;
    cd.bits[0] = 1;
    cd.value = 1;
    int ci = qasm_add_cond(&c, &cd);
    op = qasm_add(&c, QASM_GATE, &w1, 0, 1);
    op->gate = SV_PAULIX;
    op->cond = ci;
    op = qasm_add(&c, QASM_RESET, &w0, 0, 1);
    char err[256];
    char *t2 = qasm_write(&c, 2, NULL, err, sizeof err);
    ck_assert_msg(t2 != NULL, "%s", err);
    ck_assert_str_eq(
        t2, "OPENQASM 2.0;\ninclude \"qelib1.inc\";\nqreg q[2];\ncreg c0[1];\ncreg c1[1];\n"
            "h q[0];\nmeasure q[0] -> c1[0];\nif(c1==1) x q[1];\nreset q[0];\n");
    char *t3 = qasm_write(&c, 3, NULL, err, sizeof err);
    ck_assert_str_eq(t3, "OPENQASM 3.0;\ninclude \"stdgates.inc\";\nqubit[2] q;\nbit[2] c;\n"
                         "h q[0];\nc[1] = measure q[0];\nif (c[1] == 1) x q[1];\nreset q[0];\n");
    for (int v = 2; v <= 3; v++) {
        QasmCircuit b;
        const char *t = v == 2 ? t2 : t3;
        ck_assert_msg(qasm_parse(t, strlen(t), &b, err, sizeof err) == 0, "%s", err);
        ck_assert(b.nops == 4 && b.ops[1].kind == QASM_MEASURE && b.ops[1].clbit == 1);
        ck_assert(b.ops[2].cond >= 0 && b.conds[b.ops[2].cond].bits[0] == 1 &&
                  b.conds[b.ops[2].cond].value == 1);
        qasm_free(&b);
    }
    free(t2);
    free(t3);
    /* what a version cannot say, it refuses with the reason */
    int ww[4] = { 0, 1, 2, 3 };
    QasmCircuit d;
    qasm_init(&d, 4, 0);
    op = qasm_add(&d, QASM_GATE, ww, 2, 2);
    op->gate = SV_ISWAP;
    ck_assert_ptr_null(qasm_write(&d, 2, NULL, err, sizeof err));
    ck_assert_str_eq(err, "ISWAP with 2 controls has no OpenQASM 2.0 form (use version 3)");
    char *ok = qasm_write(&d, 3, NULL, err, sizeof err);
    ck_assert_ptr_nonnull(ok);
    free(ok);
    op = qasm_add(&d, QASM_GATE, ww, 0, 2);
    op->gate = SV_QUBITUNITARY;
    ck_assert_ptr_null(qasm_write(&d, 3, NULL, err, sizeof err));
    ck_assert_str_eq(err, "QubitUnitary has no OpenQASM form");
    qasm_free(&d);
    qasm_free(&c);
}
END_TEST

static Suite *qasm_suite(void)
{
    Suite *s = suite_create("qasm");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_qelib1_gate_by_gate);
    tcase_add_test(tc, test_extended_gates);
    tcase_add_test(tc, test_reader_basics);
    tcase_add_test(tc, test_reader_qasm3);
    tcase_add_test(tc, test_reader_errors);
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_write_measure_cond);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(qasm_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
