/* qasm_write.c — a flat circuit back to OpenQASM 2.0 or 3.0 text.
 *
 * Each PennyLane gate is written as its qelib1 / stdgates counterpart
 * (adjoints as daggered names or negated angles, extra controls as the
 * c-prefixed gates in 2.0 and `ctrl(n) @` in 3.0); gates outside those
 * libraries get a `gate` definition of their own, written out once at
 * the top. Registers are one `q` and one `c` (or one creg per bit when a
 * 2.0 condition tests single bits). Must not know about the language.
 */
#include "qasm.h"
#include "numfmt.h"
#include "qh_assert.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct W {
    char *d;
    size_t n, cap;
    int oom;
    int v;       /* 2 or 3 */
    int bitregs; /* 2.0: one creg per bit */
    char *err;
    size_t errlen;
    int failed;
} W;

static void out(W *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(W *w, const char *fmt, ...)
{
    if (w->oom) return;
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(w->d ? w->d + w->n : NULL, w->d ? w->cap - w->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            w->oom = 1;
            return;
        }
        if (w->d && w->n + (size_t)k < w->cap) {
            w->n += (size_t)k;
            qh_assert(w->d[w->n] == 0); /* vsnprintf wrote it all, and its NUL */
            return;
        }
        size_t cap = w->cap ? w->cap : 4096;
        while (cap <= w->n + (size_t)k) cap *= 2;
        char *d = realloc(w->d, cap);
        if (!d) {
            w->oom = 1;
            return;
        }
        w->d = d;
        w->cap = cap;
    }
}

static int werr(W *w, const QasmOp *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int werr(W *w, const QasmOp *op, const char *fmt, ...)
{
    if (w->failed) return -1;
    w->failed = 1;
    if (w->err && w->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->err, w->errlen, fmt, ap);
        va_end(ap);
    }
    (void)op;
    return -1;
}

/* An angle as the shortest text that reads back to the same double. */
static void ang(W *w, double x)
{
    char t[NUMFMT_BUF];
    numfmt_double(t, x);
    out(w, "%s", t);
}

static void qb(W *w, int q) { out(w, "q[%d]", q); }

static void bitref(W *w, int b)
{
    if (w->bitregs)
        out(w, "c%d[0]", b);
    else
        out(w, "c[%d]", b);
}

/* Definitions of the gates outside the libraries (written when used). */
static const char *def_iswap = "gate iswap a, b { s a; s b; h a; cx a, b; cx b, a; h b; }\n";
static const char *def_ryy = "gate ryy(theta) a, b { rx(pi/2) a; rx(pi/2) b; cx a, b; rz(theta) b; "
                             "cx a, b; rx(-pi/2) a; rx(-pi/2) b; }\n";
static const char *def_rxx =
    "gate rxx(theta) a, b { h a; h b; cx a, b; rz(theta) b; cx a, b; h a; h b; }\n";
static const char *def_rzz = "gate rzz(theta) a, b { cx a, b; rz(theta) b; cx a, b; }\n";

/* name(params) with n control prefix in 3.0; the op's wires follow. */
static void call(W *w, const char *name, const double *p, int np, int extra_ctrl, int inv)
{
    if (w->v == 3) {
        if (inv) out(w, "inv @ ");
        if (extra_ctrl == 1)
            out(w, "ctrl @ ");
        else if (extra_ctrl > 1)
            out(w, "ctrl(%d) @ ", extra_ctrl);
    }
    out(w, "%s", name);
    if (np) {
        out(w, "(");
        for (int i = 0; i < np; i++) {
            if (i) out(w, ", ");
            ang(w, p[i]);
        }
        out(w, ")");
    }
    out(w, " ");
}

static void wires(W *w, const int *q, int n)
{
    for (int i = 0; i < n; i++) {
        if (i) out(w, ", ");
        qb(w, q[i]);
    }
    out(w, ";\n");
}

/* Why: CCZ has no qelib1 name (a PauliZ with two controls, a CZ with
   one): H on the target, CCX, H. */
static void ccz(W *w, const int *q)
{
    call(w, "h", NULL, 0, 0, 0);
    wires(w, q + 2, 1);
    call(w, "ccx", NULL, 0, 0, 0);
    wires(w, q, 3);
    call(w, "h", NULL, 0, 0, 0);
    wires(w, q + 2, 1);
}

static void cond_prefix(W *w, const QasmCircuit *c, const QasmOp *op)
{
    if (op->cond < 0) return;
    qh_assert((size_t)op->cond < c->nconds);
    const QasmCond *cd = &c->conds[op->cond];
    qh_assert(cd->nbits >= 0 && cd->nbits <= 64); /* QasmCond.bits holds 64 */
    if (w->v == 2) {
        if (w->bitregs)
            out(w, "if(c%d==%llu) ", cd->bits[0], (unsigned long long)cd->value);
        else
            out(w, "if(c==%llu) ", (unsigned long long)cd->value);
        return;
    }
    if (cd->nbits == 1 && c->nclbits != 1)
        out(w, "if (c[%d] %s %llu) ", cd->bits[0],
            cd->negate ? "!=" : "==", (unsigned long long)cd->value);
    else
        out(w, "if (c %s %llu) ", cd->negate ? "!=" : "==", (unsigned long long)cd->value);
}

/* Whether a condition is on the whole register, in order. */
static int whole(const QasmCircuit *c, const QasmCond *cd)
{
    if (cd->nbits != c->nclbits) return 0;
    for (int i = 0; i < cd->nbits; i++)
        if (cd->bits[i] != i) return 0;
    return 1;
}

/* X with k controls (k <= 4 in 2.0). */
static int mcx(W *w, const QasmOp *op, const int *q, int k)
{
    static const char *nm[] = { "x", "cx", "ccx", "c3x", "c4x" };
    if (w->v == 2) {
        if (k > 4)
            return werr(w, op, "PauliX with %d controls has no OpenQASM 2.0 form (use version 3)",
                        k);
        call(w, nm[k], NULL, 0, 0, 0);
    } else if (k <= 2)
        call(w, nm[k], NULL, 0, 0, 0);
    else
        call(w, "x", NULL, 0, k, 0);
    wires(w, q, k + 1);
    return 0;
}

/* The form of each gate (gate_forms[], by SvGate): most are one library
 * gate with extra controls, written by gate_form from their names; the
 * others have an emitter of their own. An emitter returns 0, -1 (w
 * failed), or NO_FORM: no OpenQASM 2.0 form with that many controls. */
enum { NO_FORM = 1 };
enum { ADJ_SELF, ADJ_DG, ADJ_NEG }; /* an adjoint: the gate itself, name + "dg", angle negated */
typedef struct GateForm GateForm;
struct GateForm {
    /* the gate's own emitter; NULL: gate_form, from the fields below */
    int (*emit)(W *w, const QasmOp *op, const GateForm *g);
    const char *name2;         /* no control, in 2.0 */
    const char *name3;         /* 3.0: no control, and ctrl(k) @ name3 with k */
    const char *ctrl2, *ctrl3; /* one control (NULL: none of its own) */
    int own;                   /* controls of the gate's own (CNOT, CRX, CSWAP: 1) */
    int ntarget;               /* wires after the controls */
    int angle;                 /* takes one angle */
    int adj;                   /* ADJ_* */
    /* other 2.0 forms (NULL: none) */
    int (*fallback)(W *w, const QasmOp *op, int tc);
};

/* A PauliZ with two controls, a CZ with one: H CCX H. */
static int ccz_form(W *w, const QasmOp *op, int tc)
{
    if (tc != 2) return NO_FORM;
    ccz(w, op->wires);
    return 0;
}

/* S and T with one control: a controlled phase. */
static int cu1_form(W *w, const QasmOp *op, int tc)
{
    if (tc != 1) return NO_FORM;
    double a = (op->gate == SV_S ? M_PI / 2 : M_PI / 4) * (op->adjoint ? -1 : 1);
    call(w, "cu1", &a, 1, 0, 0);
    wires(w, op->wires, 2);
    return 0;
}

static int csx_form(W *w, const QasmOp *op, int tc)
{
    if (tc == 1 && !op->adjoint) {
        call(w, "csx", NULL, 0, 0, 0);
        wires(w, op->wires, 2);
        return 0;
    }
    if (tc == 3) { /* c3sqrtx is ctrl^3(SX^dagger); SX = (SX^dagger)^3 */
        for (int k = 0; k < (op->adjoint ? 1 : 3); k++) {
            call(w, "c3sqrtx", NULL, 0, 0, 0);
            wires(w, op->wires, 4);
        }
        return 0;
    }
    return NO_FORM;
}

/* A library gate with tc = the op's controls and its own: its plain name,
 * its controlled name, ctrl(tc) @ in 3.0, or a 2.0 fallback. */
static int gate_form(W *w, const QasmOp *op, const GateForm *g)
{
    int tc = op->nctrl + g->own, v3 = w->v == 3, np = g->angle;
    const int *q = op->wires;
    double a = op->adjoint && g->adj == ADJ_NEG ? -op->params[0] : op->params[0];
    const char *dg = op->adjoint && g->adj == ADJ_DG ? "dg" : "";
    char nm[16];
    if (tc == 0) {
        snprintf(nm, sizeof nm, "%s%s", v3 ? g->name3 : g->name2, dg);
        call(w, nm, &a, np, 0, 0);
        wires(w, q, g->ntarget);
        return 0;
    }
    if (tc == 1 && g->ctrl2) {
        call(w, v3 ? g->ctrl3 : g->ctrl2, &a, np, 0, 0);
        wires(w, q, 1 + g->ntarget);
        return 0;
    }
    if (v3) {
        snprintf(nm, sizeof nm, "%s%s", g->name3, dg);
        call(w, nm, &a, np, tc, 0);
        wires(w, q, tc + g->ntarget);
        return 0;
    }
    return g->fallback ? g->fallback(w, op, tc) : NO_FORM;
}

static int emit_identity(W *w, const QasmOp *op, const GateForm *g)
{
    (void)g;
    if (op->nctrl == 0) {
        call(w, "id", NULL, 0, 0, 0);
        wires(w, op->wires, 1);
    }
    return 0;
}

/* PauliX, CNOT, Toffoli: X with the op's controls and its own */
static int emit_x(W *w, const QasmOp *op, const GateForm *g)
{
    return mcx(w, op, op->wires, op->nctrl + g->own);
}

static int emit_basisstate(W *w, const QasmOp *op, const GateForm *g)
{
    int nc = op->nctrl;
    const int *q = op->wires;
    (void)g;
    for (int i = 0; i < op->nwires; i++)
        if ((op->bits >> i) & 1) {
            int qq[SV_MAX_WIRES + 1];
            memcpy(qq, q, (size_t)nc * sizeof(int));
            qq[nc] = q[nc + i];
            if (mcx(w, op, qq, nc)) return -1;
        }
    return 0;
}

/* Rot: RZ(w) RY(t) RZ(phi) = e^{-i(phi+w)/2} U3(t, phi, w) */
static int emit_rot(W *w, const QasmOp *op, const GateForm *g)
{
    int nc = op->nctrl, adj = op->adjoint;
    const int *q = op->wires;
    const double *p = op->params;
    (void)g;
    if (nc == 0) {
        double a[3] = { adj ? -p[2] : p[0], adj ? -p[1] : p[1], adj ? -p[0] : p[2] };
        call(w, "rz", &a[0], 1, 0, 0);
        wires(w, q, 1);
        call(w, "ry", &a[1], 1, 0, 0);
        wires(w, q, 1);
        call(w, "rz", &a[2], 1, 0, 0);
        wires(w, q, 1);
        return 0;
    }
    if (w->v != 3) return NO_FORM;
    double a[3] = { p[0], p[1], p[2] };
    call(w, "rz", &a[adj ? 2 : 0], 1, nc, adj);
    wires(w, q, nc + 1);
    call(w, "ry", &a[1], 1, nc, adj);
    wires(w, q, nc + 1);
    call(w, "rz", &a[adj ? 0 : 2], 1, nc, adj);
    wires(w, q, nc + 1);
    return 0;
}

static int emit_u3(W *w, const QasmOp *op, const GateForm *g)
{
    int nc = op->nctrl, adj = op->adjoint, v3 = w->v == 3;
    const int *q = op->wires;
    double t = op->params[0], ph = op->params[1], la = op->params[2];
    (void)g;
    double a[3] = { adj ? -t : t, adj ? -la : ph,
                    adj ? -ph : la }; /* U3^dagger = U3(-t, -la, -ph) */
    if (nc == 0) {
        call(w, "u3", a, 3, 0, 0);
        wires(w, q, 1);
        return 0;
    }
    if (nc == 1 && !v3) {
        call(w, "cu3", a, 3, 0, 0);
        wires(w, q, 2);
        return 0;
    }
    if (v3) {
        call(w, "U", a, 3, nc, 0);
        wires(w, q, nc + 1);
        return 0;
    }
    return NO_FORM;
}

static int emit_iswap(W *w, const QasmOp *op, const GateForm *g)
{
    int nc = op->nctrl, adj = op->adjoint, v3 = w->v == 3;
    const int *q = op->wires;
    (void)g;
    if (nc && !v3) return NO_FORM;
    if (adj && !v3) { /* ISWAP^dagger = (Z x I) ISWAP (Z x I) */
        call(w, "z", NULL, 0, 0, 0);
        wires(w, q, 1);
        call(w, "iswap", NULL, 0, 0, 0);
        wires(w, q, 2);
        call(w, "z", NULL, 0, 0, 0);
        wires(w, q, 1);
        return 0;
    }
    call(w, "iswap", NULL, 0, nc, adj);
    wires(w, q, nc + 2);
    return 0;
}

/* MultiRZ: a CX ladder up to the last wire, RZ there, and down again */
static int emit_multirz(W *w, const QasmOp *op, const GateForm *g)
{
    int nc = op->nctrl;
    const int *q = op->wires;
    (void)g;
    if (nc && w->v != 3) return NO_FORM;
    int k = op->nwires;
    const int *t = q + nc;
    double a = op->adjoint ? -op->params[0] : op->params[0];
    for (int i = 0; i + 1 < k; i++) {
        call(w, "cx", NULL, 0, 0, 0);
        int pr[2] = { t[i], t[i + 1] };
        wires(w, pr, 2);
    }
    if (nc) {
        call(w, "rz", &a, 1, nc, 0);
        int qq[SV_MAX_WIRES + 1];
        memcpy(qq, q, (size_t)nc * sizeof(int));
        qq[nc] = t[k - 1];
        wires(w, qq, nc + 1);
    } else {
        call(w, "rz", &a, 1, 0, 0);
        wires(w, &t[k - 1], 1);
    }
    for (int i = k - 2; i >= 0; i--) {
        call(w, "cx", NULL, 0, 0, 0);
        int pr[2] = { t[i], t[i + 1] };
        wires(w, pr, 2);
    }
    return 0;
}

/* SingleExcitation: cx b,a; cry(-theta) a,b; cx b,a */
static int emit_singleexc(W *w, const QasmOp *op, const GateForm *g)
{
    int nc = op->nctrl;
    const int *q = op->wires;
    (void)g;
    if (nc && w->v != 3) return NO_FORM;
    const int *t = q + nc;
    double a = op->adjoint ? op->params[0] : -op->params[0];
    int ba[2] = { t[1], t[0] };
    call(w, "cx", NULL, 0, 0, 0);
    wires(w, ba, 2);
    int qq[SV_MAX_WIRES + 2];
    memcpy(qq, q, (size_t)nc * sizeof(int));
    qq[nc] = t[0];
    qq[nc + 1] = t[1];
    if (nc)
        call(w, "ry", &a, 1, nc + 1, 0);
    else
        call(w, "cry", &a, 1, 0, 0);
    wires(w, qq, nc + 2);
    call(w, "cx", NULL, 0, 0, 0);
    wires(w, ba, 2);
    return 0;
}

/* DoubleExcitation on a b c d: cx c,d; cx a,b; cx a,c; ry on a if b=0 c=1 d=0; undo */
static int emit_doubleexc(W *w, const QasmOp *op, const GateForm *g)
{
    int nc = op->nctrl;
    const int *q = op->wires;
    (void)g;
    if (w->v != 3) return NO_FORM;
    const int *t = q + nc;
    int cd[2] = { t[2], t[3] }, ab[2] = { t[0], t[1] }, ac[2] = { t[0], t[2] };
    double a = op->adjoint ? -op->params[0] : op->params[0];
    call(w, "cx", NULL, 0, 0, 0);
    wires(w, cd, 2);
    call(w, "cx", NULL, 0, 0, 0);
    wires(w, ab, 2);
    call(w, "cx", NULL, 0, 0, 0);
    wires(w, ac, 2);
    if (nc > 1)
        out(w, "ctrl(%d) @ ", nc);
    else if (nc == 1)
        out(w, "ctrl @ ");
    out(w, "negctrl @ ctrl @ negctrl @ ry(");
    ang(w, a);
    out(w, ") ");
    int qq[SV_MAX_WIRES + 4];
    memcpy(qq, q, (size_t)nc * sizeof(int));
    qq[nc] = t[1];
    qq[nc + 1] = t[2];
    qq[nc + 2] = t[3];
    qq[nc + 3] = t[0];
    wires(w, qq, nc + 4);
    call(w, "cx", NULL, 0, 0, 0);
    wires(w, ac, 2);
    call(w, "cx", NULL, 0, 0, 0);
    wires(w, ab, 2);
    call(w, "cx", NULL, 0, 0, 0);
    wires(w, cd, 2);
    return 0;
}

static int emit_unitary(W *w, const QasmOp *op, const GateForm *g)
{
    (void)g;
    return werr(w, op, "QubitUnitary has no OpenQASM form");
}

/* clang-format off */
static const GateForm gate_forms[SV_NGATES] = {
    /* emit, name2, name3, ctrl2, ctrl3, own, ntarget, angle, adj, fallback */
    [SV_IDENTITY]   = { .emit = emit_identity },
    [SV_PAULIX]     = { .emit = emit_x, .own = 0 },
    [SV_CNOT]       = { .emit = emit_x, .own = 1 },
    [SV_TOFFOLI]    = { .emit = emit_x, .own = 2 },
    [SV_BASISSTATE] = { .emit = emit_basisstate },
    [SV_HADAMARD]   = { NULL, "h",    "h",    "ch",    "ch",    0, 1, 0, ADJ_SELF, NULL },
    [SV_PAULIY]     = { NULL, "y",    "y",    "cy",    "cy",    0, 1, 0, ADJ_SELF, NULL },
    [SV_PAULIZ]     = { NULL, "z",    "z",    "cz",    "cz",    0, 1, 0, ADJ_SELF, ccz_form },
    [SV_CY]         = { NULL, "y",    "y",    "cy",    "cy",    1, 1, 0, ADJ_SELF, NULL },
    [SV_CZ]         = { NULL, "z",    "z",    "cz",    "cz",    1, 1, 0, ADJ_SELF, ccz_form },
    [SV_S]          = { NULL, "s",    "s",    NULL,    NULL,    0, 1, 0, ADJ_DG,   cu1_form },
    [SV_T]          = { NULL, "t",    "t",    NULL,    NULL,    0, 1, 0, ADJ_DG,   cu1_form },
    [SV_SX]         = { NULL, "sx",   "sx",   NULL,    NULL,    0, 1, 0, ADJ_DG,   csx_form },
    [SV_RX]         = { NULL, "rx",   "rx",   "crx",   "crx",   0, 1, 1, ADJ_NEG,  NULL },
    [SV_RY]         = { NULL, "ry",   "ry",   "cry",   "cry",   0, 1, 1, ADJ_NEG,  NULL },
    [SV_RZ]         = { NULL, "rz",   "rz",   "crz",   "crz",   0, 1, 1, ADJ_NEG,  NULL },
    [SV_PHASESHIFT] = { NULL, "u1",   "p",    "cu1",   "cp",    0, 1, 1, ADJ_NEG,  NULL },
    [SV_CRX]        = { NULL, "rx",   "rx",   "crx",   "crx",   1, 1, 1, ADJ_NEG,  NULL },
    [SV_CRY]        = { NULL, "ry",   "ry",   "cry",   "cry",   1, 1, 1, ADJ_NEG,  NULL },
    [SV_CRZ]        = { NULL, "rz",   "rz",   "crz",   "crz",   1, 1, 1, ADJ_NEG,  NULL },
    [SV_CPHASE]     = { NULL, "u1",   "p",    "cu1",   "cp",    1, 1, 1, ADJ_NEG,  NULL },
    [SV_ROT]        = { .emit = emit_rot },
    [SV_U3]         = { .emit = emit_u3 },
    [SV_SWAP]       = { NULL, "swap", "swap", "cswap", "cswap", 0, 2, 0, ADJ_SELF, NULL },
    [SV_CSWAP]      = { NULL, "swap", "swap", "cswap", "cswap", 1, 2, 0, ADJ_SELF, NULL },
    [SV_ISWAP]      = { .emit = emit_iswap },
    [SV_ISINGXX]    = { NULL, "rxx",  "rxx",  NULL,    NULL,    0, 2, 1, ADJ_NEG,  NULL },
    [SV_ISINGYY]    = { NULL, "ryy",  "ryy",  NULL,    NULL,    0, 2, 1, ADJ_NEG,  NULL },
    [SV_ISINGZZ]    = { NULL, "rzz",  "rzz",  NULL,    NULL,    0, 2, 1, ADJ_NEG,  NULL },
    [SV_MULTIRZ]    = { .emit = emit_multirz },
    [SV_SINGLEEXC]  = { .emit = emit_singleexc },
    [SV_DOUBLEEXC]  = { .emit = emit_doubleexc },
    [SV_QUBITUNITARY] = { .emit = emit_unitary },
};
/* clang-format on */

/* One gate op (its condition already written). */
static int gate(W *w, const QasmCircuit *c, const QasmOp *op)
{
    const SvGateInfo *info = sv_gate_info(op->gate);
    qh_assert(op->nctrl >= 0 && op->nwires >= 0 && (op->nctrl + op->nwires == 0 || op->wires));
    (void)c;
    if ((unsigned)op->gate >= SV_NGATES) return werr(w, op, "unknown gate %d", (int)op->gate);
    const GateForm *g = &gate_forms[op->gate];
    qh_assert(g->emit || g->name2); /* every gate has a row */
    int r = g->emit ? g->emit(w, op, g) : gate_form(w, op, g);
    if (r != NO_FORM) return r;
    int nc = op->nctrl;
    return werr(w, op, "%s with %d control%s has no OpenQASM 2.0 form (use version 3)", info->name,
                nc, nc == 1 ? "" : "s");
}

/* Whether the circuit's conditions have a form in w's version (w->bitregs
 * set when 2.0 needs a creg per bit); -1 (w failed) if not. */
static int check_conds(W *w, const QasmCircuit *c)
{
    /* registers: in 2.0 a condition on single bits needs one creg per bit */
    for (size_t i = 0; i < c->nconds; i++) {
        const QasmCond *cd = &c->conds[i];
        if (w->v == 2 && !whole(c, cd)) {
            if (cd->nbits != 1)
                return werr(w, NULL,
                            "a condition on some bits of the register has no OpenQASM 2.0 form "
                            "(use version 3)");
            w->bitregs = 1;
        }
        if (w->v == 2 && cd->negate)
            return werr(w, NULL, "a '!=' condition has no OpenQASM 2.0 form (use version 3)");
        if (w->v == 3 && cd->nbits != 1 && !whole(c, cd))
            return werr(w, NULL, "a condition on some bits of the register has no OpenQASM form");
    }
    if (w->bitregs)
        for (size_t i = 0; i < c->nconds; i++)
            if (whole(c, &c->conds[i]) && c->nclbits != 1)
                return werr(w, NULL,
                            "conditions on single bits and on the whole register in one circuit "
                            "have no OpenQASM 2.0 form (use version 3)");
    return 0;
}

/* A conditional gate: a condition covers one statement, so the lines of a
 * multi-statement form each get the condition. */
static void cond_gate(W *w, const QasmCircuit *c, const QasmOp *op)
{
    size_t mark = w->n;
    gate(w, c, op);
    if (w->failed || w->oom) return;
    size_t end = w->n;
    qh_assert(mark <= end && (end == 0 || end < w->cap)); /* out keeps room for the NUL */
    char *body = malloc(end - mark + 1);
    if (!body) {
        w->oom = 1;
        return;
    }
    memcpy(body, w->d + mark, end - mark);
    body[end - mark] = 0;
    w->n = mark;
    for (char *line = body; *line;) {
        char *nl = strchr(line, '\n');
        size_t l = nl ? (size_t)(nl - line) + 1 : strlen(line);
        cond_prefix(w, c, op);
        out(w, "%.*s", (int)l, line);
        line += l;
    }
    free(body);
}

char *qasm_write(const QasmCircuit *c, int version, size_t *len, char *err, size_t errlen)
{
    W w;
    memset(&w, 0, sizeof w);
    w.v = version == 3 ? 3 : 2;
    w.err = err;
    w.errlen = errlen;
    if (version != 2 && version != 3) {
        werr(&w, NULL, "OpenQASM version %d (2 or 3)", version);
        return NULL;
    }
    if (check_conds(&w, c)) return NULL;
    int used[SV_NGATES] = { 0 };
    for (size_t i = 0; i < c->nops; i++)
        if (c->ops[i].kind == QASM_GATE) used[c->ops[i].gate] = 1;
    if (w.v == 2)
        out(&w, "OPENQASM 2.0;\ninclude \"qelib1.inc\";\n");
    else
        out(&w, "OPENQASM 3.0;\ninclude \"stdgates.inc\";\n");
    if (used[SV_ISWAP]) out(&w, "%s", def_iswap);
    if (used[SV_ISINGYY]) out(&w, "%s", def_ryy);
    if (w.v == 3 && used[SV_ISINGXX]) out(&w, "%s", def_rxx);
    if (w.v == 3 && used[SV_ISINGZZ]) out(&w, "%s", def_rzz);
    if (w.v == 2) {
        if (c->nqubits) out(&w, "qreg q[%d];\n", c->nqubits);
        if (w.bitregs)
            for (int i = 0; i < c->nclbits; i++) out(&w, "creg c%d[1];\n", i);
        else if (c->nclbits)
            out(&w, "creg c[%d];\n", c->nclbits);
    } else {
        if (c->nqubits) out(&w, "qubit[%d] q;\n", c->nqubits);
        if (c->nclbits) out(&w, "bit[%d] c;\n", c->nclbits);
    }
    for (size_t i = 0; i < c->nops && !w.failed; i++) {
        const QasmOp *op = &c->ops[i];
        switch (op->kind) {
        case QASM_GPHASE:
            if (w.v == 3) {
                cond_prefix(&w, c, op);
                out(&w, "gphase(");
                ang(&w, op->params[0]);
                out(&w, ");\n");
            }
            break;
        case QASM_MEASURE:
            cond_prefix(&w, c, op);
            if (w.v == 2) {
                out(&w, "measure ");
                qb(&w, op->wires[0]);
                out(&w, " -> ");
                bitref(&w, op->clbit);
                out(&w, ";\n");
            } else {
                bitref(&w, op->clbit);
                out(&w, " = measure ");
                qb(&w, op->wires[0]);
                out(&w, ";\n");
            }
            break;
        case QASM_CHANNEL: werr(&w, op, "noise channels have no OpenQASM form"); break;
        case QASM_RESET:
            cond_prefix(&w, c, op);
            out(&w, "reset ");
            qb(&w, op->wires[0]);
            out(&w, ";\n");
            break;
        case QASM_GATE:
            if (op->cond < 0)
                gate(&w, c, op);
            else
                cond_gate(&w, c, op);
            break;
        }
    }
    if (w.failed || w.oom) {
        if (w.oom && !w.failed) werr(&w, NULL, "out of memory");
        free(w.d);
        return NULL;
    }
    if (len) *len = w.n;
    return w.d;
}
