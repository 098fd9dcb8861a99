/* gates.c — the gate table, validation, matrices and the dispatcher.
 *
 * Validate -> dispatch -> kernel: sv_apply checks an SvOp and names the
 * gate in its errors, then turns it into one kernel job by the gate's kind
 * (diagonal, exchange, 2x2 on a pair of amplitudes, 4x4, dense) with its
 * controls as a bit mask. The matrices are PennyLane's, global phases
 * included, written once here (base_matrix) and used both for the dense
 * matrices the language asks for and for the kernels' small matrices.
 * Must not know about the language, values or devices.
 */
#include "sv_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the table -------------------------------------------------------- */

static const SvGateInfo gate_table[SV_NGATES] = {
    { "Identity", SV_IDENTITY, 1, 0, 0 },
    { "Hadamard", SV_HADAMARD, 1, 0, 0 },
    { "PauliX", SV_PAULIX, 1, 0, 0 },
    { "PauliY", SV_PAULIY, 1, 0, 0 },
    { "PauliZ", SV_PAULIZ, 1, 0, 0 },
    { "S", SV_S, 1, 0, 0 },
    { "T", SV_T, 1, 0, 0 },
    { "SX", SV_SX, 1, 0, 0 },
    { "RX", SV_RX, 1, 1, 1 },
    { "RY", SV_RY, 1, 1, 1 },
    { "RZ", SV_RZ, 1, 1, 1 },
    { "PhaseShift", SV_PHASESHIFT, 1, 1, 1 },
    { "Rot", SV_ROT, 1, 3, 1 },
    { "U3", SV_U3, 1, 3, 1 },
    { "CNOT", SV_CNOT, 2, 0, 0 },
    { "CY", SV_CY, 2, 0, 0 },
    { "CZ", SV_CZ, 2, 0, 0 },
    { "SWAP", SV_SWAP, 2, 0, 0 },
    { "ISWAP", SV_ISWAP, 2, 0, 0 },
    { "CRX", SV_CRX, 2, 1, 0 },
    { "CRY", SV_CRY, 2, 1, 0 },
    { "CRZ", SV_CRZ, 2, 1, 0 },
    { "ControlledPhaseShift", SV_CPHASE, 2, 1, 1 },
    { "IsingXX", SV_ISINGXX, 2, 1, 1 },
    { "IsingYY", SV_ISINGYY, 2, 1, 1 },
    { "IsingZZ", SV_ISINGZZ, 2, 1, 1 },
    { "Toffoli", SV_TOFFOLI, 3, 0, 0 },
    { "CSWAP", SV_CSWAP, 3, 0, 0 },
    { "MultiRZ", SV_MULTIRZ, -1, 1, 1 },
    { "QubitUnitary", SV_QUBITUNITARY, -1, 0, 0 },
    { "BasisState", SV_BASISSTATE, -1, 0, 0 },
    { "SingleExcitation", SV_SINGLEEXC, 2, 1, 0 },
    { "DoubleExcitation", SV_DOUBLEEXC, 4, 1, 0 },
};

static const struct {
    const char *name;
    SvGate gate;
} gate_alias[] = {
    { "I", SV_IDENTITY }, { "H", SV_HADAMARD }, { "X", SV_PAULIX },    { "Y", SV_PAULIY },
    { "Z", SV_PAULIZ },   { "CX", SV_CNOT },    { "CCX", SV_TOFFOLI }, { "CPhase", SV_CPHASE },
};

/* Why: arity and parameter count for the language and the differentiator. */
const SvGateInfo *sv_gate_info(SvGate g)
{
    if ((int)g < 0 || g >= SV_NGATES) return NULL;
    return &gate_table[g];
}

/* Why: the language resolves gate names once, when it builds an op. */
const SvGateInfo *sv_gate_by_name(const char *name)
{
    if (!name) return NULL;
    for (int i = 0; i < SV_NGATES; i++)
        if (strcmp(gate_table[i].name, name) == 0) return &gate_table[i];
    for (size_t i = 0; i < sizeof gate_alias / sizeof gate_alias[0]; i++)
        if (strcmp(gate_alias[i].name, name) == 0) return &gate_table[gate_alias[i].gate];
    return NULL;
}

/* ---- validation ------------------------------------------------------- */

/* "0, 1, 2" into buf: wire lists in error messages. */
static const char *wire_list(char *buf, size_t len, const int *w, int n)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < n && at + 1 < len; i++) {
        int k = snprintf(buf + at, len - at, i ? ", %d" : "%d", w[i]);
        if (k < 0) break;
        at += (size_t)k;
    }
    return buf;
}

/* Why: wires are where user input most often goes wrong; the message
   names the gate and the offending wire. nq < 0: no device to check. */
static __attribute__((noinline)) int wires_error(const SvWires *ws, int nq, char *err,
                                                 size_t errlen)
{
    const char *name = ws->name;
    const int *w = ws->w, *c = ws->c;
    int n = ws->nw, nc = ws->nc;
    for (int i = 0; i < n; i++) {
        if (w[i] < 0 && nq < 0) return sv_err(err, errlen, SV_E_NEGWIRE, name, w[i]);
        if (w[i] < 0 || (nq >= 0 && w[i] >= nq))
            return sv_err(err, errlen, SV_E_RANGE, name, w[i], nq);
    }
    for (int i = 0; i < nc; i++) {
        if (c[i] < 0 && nq < 0) return sv_err(err, errlen, SV_E_NEGWIRE, name, c[i]);
        if (c[i] < 0 || (nq >= 0 && c[i] >= nq))
            return sv_err(err, errlen, SV_E_CRANGE, name, c[i], nq);
    }
    char b1[400], b2[400];
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (w[i] == w[j])
                return sv_err(err, errlen, SV_E_DUP, name, wire_list(b1, sizeof b1, w, n));
    for (int i = 0; i < nc; i++) {
        int bad = 0;
        for (int j = i + 1; j < nc; j++) bad |= c[i] == c[j];
        for (int j = 0; j < n; j++) bad |= c[i] == w[j];
        if (bad)
            return sv_err(err, errlen, SV_E_CDUP, name, wire_list(b1, sizeof b1, c, nc),
                          wire_list(b2, sizeof b2, w, n));
    }
    return 0;
}

/* The common case in one pass, a mask of the wires seen (a state of up to
   64 wires); anything else, and every error, goes to wires_error. */
static inline int check_wires(const SvWires *ws, int nq, char *err, size_t errlen)
{
    if (nq >= 0 && nq <= 64) {
        uint64_t seen = 0;
        int ok = 1;
        for (int i = 0; i < ws->nw + ws->nc && ok; i++) {
            int x = i < ws->nw ? ws->w[i] : ws->c[i - ws->nw];
            uint64_t bit = (unsigned)x < (unsigned)nq ? (uint64_t)1 << x : 0;
            ok = bit && !(seen & bit);
            seen |= bit;
        }
        if (ok) return 0;
    }
    return wires_error(ws, nq, err, errlen);
}

/* Why: a non-unitary "unitary" would silently break normalisation. */
static double unitarity_error(const cplx *u, int d)
{
    double worst = 0;
    for (int r = 0; r < d; r++)
        for (int c = 0; c < d; c++) {
            cplx acc = 0;
            for (int k = 0; k < d; k++) acc += u[r * d + k] * conj(u[c * d + k]);
            double e = cabs(acc - (r == c ? 1.0 : 0.0));
            if (e > worst) worst = e;
        }
    return worst;
}

/* Why: every entry point that takes an SvOp validates it the same way. */
static const SvGateInfo *check_op(const SvOp *op, int nq, char *err, size_t errlen)
{
    if (!op) {
        sv_err(err, errlen, SV_E_NOOP);
        return NULL;
    }
    const SvGateInfo *info = sv_gate_info(op->gate);
    if (!info) {
        sv_err(err, errlen, SV_E_BADGATE, (int)op->gate);
        return NULL;
    }
    const char *name = info->name;
    if (info->nwires >= 0 && op->nwires != info->nwires) {
        sv_err(err, errlen, SV_E_NWIRES, name, info->nwires, info->nwires == 1 ? "" : "s",
               op->nwires);
        return NULL;
    }
    if (op->nwires < 1) {
        sv_err(err, errlen, SV_E_NOWIRES, name);
        return NULL;
    }
    if (op->nwires > SV_MAX_WIRES) {
        sv_err(err, errlen, SV_E_MANYWIRES, name, SV_MAX_WIRES, op->nwires);
        return NULL;
    }
    if (op->nctrl < 0 || op->nctrl > SV_MAX_WIRES) {
        sv_err(err, errlen, SV_E_NCTRL, name, op->nctrl);
        return NULL;
    }
    if (op->nparams != info->nparams) {
        sv_err(err, errlen, SV_E_NPARAMS, name, info->nparams, info->nparams == 1 ? "" : "s",
               op->nparams);
        return NULL;
    }
    for (int i = 0; i < op->nparams; i++)
        if (!isfinite(op->params[i])) {
            sv_err(err, errlen, SV_E_NOTFINITE, name, i + 1);
            return NULL;
        }
    if (check_wires(&(SvWires){ name, op->wires, op->nwires, op->ctrl, op->nctrl }, nq, err,
                    errlen))
        return NULL;
    if (op->gate == SV_QUBITUNITARY) {
        int k = op->nwires;
        if (k > SV_MAX_DENSE) {
            sv_err(err, errlen, SV_E_BIGOP, name, k, SV_MAX_DENSE);
            return NULL;
        }
        if (!op->matrix) {
            sv_err(err, errlen, SV_E_NOMAT, name);
            return NULL;
        }
        int d = 1 << k;
        for (long i = 0; i < (long)d * d; i++)
            if (!isfinite(creal(op->matrix[i])) || !isfinite(cimag(op->matrix[i]))) {
                sv_err(err, errlen, SV_E_MATNF, name);
                return NULL;
            }
        if (k <= 6) {
            double e = unitarity_error(op->matrix, d);
            if (e > 1e-7) {
                sv_err(err, errlen, SV_E_NOTUNIT, name, e);
                return NULL;
            }
        }
    }
    if (op->gate == SV_BASISSTATE && op->nwires < 64 && (op->bits >> op->nwires) != 0) {
        sv_err(err, errlen, SV_E_BITS, name, op->nwires);
        return NULL;
    }
    return info;
}

/* Why: the distributed statevector validates an op once, before it
   decides how to split it over ranks, with sv_apply's own messages. */
int sv_check(const SvOp *op, int nq, char *err, size_t errlen)
{
    return check_op(op, nq, err, errlen) ? 0 : -1;
}

/* ---- matrices --------------------------------------------------------- */

/* A complex from its parts, without the I macro (exact for any input). */
static inline cplx cx(double re, double im)
{
    double p[2] = { re, im };
    cplx z;
    memcpy(&z, p, sizeof z);
    return z;
}

/* cos/sin of th/2, or their derivatives in th when d; `one` is the
   derivative of a constant entry (0 when differentiating). */
typedef struct Trig {
    double c, s, one;
} Trig;

static Trig trig(double th, int d)
{
    Trig t;
    if (d) {
        t.c = -0.5 * sin(th / 2);
        t.s = 0.5 * cos(th / 2);
        t.one = 0;
    } else {
        t.c = cos(th / 2);
        t.s = sin(th / 2);
        t.one = 1;
    }
    return t;
}

/* e^{i a x}, or its derivative in x when d. */
static cplx ex(double a, double x, int d)
{
    double c = cos(a * x), s = sin(a * x);
    return d ? cx(-a * s, a * c) : cx(c, s);
}

/* A constant entry, or its derivative (0). */
static double one(int d) { return d ? 0.0 : 1.0; }

/* The value of one matrix entry: a constant, or one of the forms a
   one-parameter gate's entries take in its Trig t and e^{i a p0}. */
typedef enum EntryKind {
    V_K,   /* the constant re + i im */
    V_C,   /* t.c */
    V_S,   /* t.s */
    V_NS,  /* -t.s */
    V_IS,  /* i t.s */
    V_NIS, /* -i t.s */
    V_ONE, /* t.one: 1, or its derivative 0 */
    V_EXN, /* e^{-i p0 / 2} (or its derivative) */
    V_EXP, /* e^{i p0 / 2} */
    V_EX1, /* e^{i p0} */
} EntryKind;

/* One nonzero entry of a gate's matrix: its row, column and value. */
typedef struct MatEntry {
    unsigned char r, c, v; /* v: an EntryKind */
    double re, im;         /* V_K's value */
} MatEntry;

/* The matrix of one gate (or its derivative in params[dp]): what fill
   writes first (NULL: nothing), then the entries e[0..n), each written
   over what is there; everything else is 0. */
typedef struct GateMatrix {
    void (*fill)(const SvOp *op, int dp, const Trig *t, cplx *u, size_t d);
    int n;
    MatEntry e[8];
} GateMatrix;

/* RZ(omega) RY(theta) RZ(phi) */
static void fill_rot(const SvOp *op, int dp, const Trig *t, cplx *u, size_t d)
{
    (void)t;
    const double *p = op->params;
    int d0 = dp == 0, d1 = dp == 1, d2 = dp == 2;
    Trig th = trig(p[1], d1);
    u[0 * d + 0] = ex(-0.5, p[0], d0) * ex(-0.5, p[2], d2) * th.c;
    u[0 * d + 1] = -ex(0.5, p[0], d0) * ex(-0.5, p[2], d2) * th.s;
    u[1 * d + 0] = ex(-0.5, p[0], d0) * ex(0.5, p[2], d2) * th.s;
    u[1 * d + 1] = ex(0.5, p[0], d0) * ex(0.5, p[2], d2) * th.c;
}

/* U3(theta, phi, delta) */
static void fill_u3(const SvOp *op, int dp, const Trig *t, cplx *u, size_t d)
{
    const double *p = op->params;
    int d1 = dp == 1, d2 = dp == 2;
    u[0 * d + 0] = t->c * one(d1) * one(d2);
    u[0 * d + 1] = -ex(1, p[2], d2) * t->s * one(d1);
    u[1 * d + 0] = ex(1, p[1], d1) * t->s * one(d2);
    u[1 * d + 1] = ex(1, p[1], d1) * ex(1, p[2], d2) * t->c;
}

static void fill_multirz(const SvOp *op, int dp, const Trig *t, cplx *u, size_t d)
{
    (void)t;
    for (size_t i = 0; i < d; i++)
        u[i * d + i] = ex((__builtin_popcountll(i) & 1) ? 0.5 : -0.5, op->params[0], dp == 0);
}

static void fill_unitary(const SvOp *op, int dp, const Trig *t, cplx *u, size_t d)
{
    (void)dp;
    (void)t;
    memcpy(u, op->matrix, d * d * sizeof(cplx));
}

/* the permutation that flips the wires whose bit is set */
static void fill_basis(const SvOp *op, int dp, const Trig *t, cplx *u, size_t d)
{
    (void)dp;
    (void)t;
    int k = op->nwires;
    size_t mask = 0;
    for (int i = 0; i < k; i++)
        if ((op->bits >> i) & 1) mask |= (size_t)1 << (k - 1 - i);
    for (size_t c = 0; c < d; c++) u[(c ^ mask) * d + c] = 1;
}

/* DoubleExcitation's diagonal of t.one (its four rotated entries follow) */
static void fill_diag_one(const SvOp *op, int dp, const Trig *t, cplx *u, size_t d)
{
    (void)op;
    (void)dp;
    for (size_t i = 0; i < d; i++) u[i * d + i] = t->one;
}

#define K(r, c, re, im)   \
    {                     \
        r, c, V_K, re, im \
    }
#define E(r, c, v)    \
    {                 \
        r, c, v, 0, 0 \
    }
#define R2 M_SQRT1_2
/* Why: the single definition of every gate's matrix (PennyLane's, wire
   order as given, first wire = MSB), one row per gate. */
static const GateMatrix GATE_MATRIX[SV_NGATES] = {
    [SV_IDENTITY] = { NULL, 2, { K(0, 0, 1, 0), K(1, 1, 1, 0) } },
    [SV_HADAMARD] = { NULL,
                      4,
                      { K(0, 0, R2, 0), K(0, 1, R2, 0), K(1, 0, R2, 0), K(1, 1, -R2, 0) } },
    [SV_PAULIX] = { NULL, 2, { K(0, 1, 1, 0), K(1, 0, 1, 0) } },
    [SV_PAULIY] = { NULL, 2, { K(0, 1, 0, -1), K(1, 0, 0, 1) } },
    [SV_PAULIZ] = { NULL, 2, { K(0, 0, 1, 0), K(1, 1, -1, 0) } },
    [SV_S] = { NULL, 2, { K(0, 0, 1, 0), K(1, 1, 0, 1) } },
    [SV_T] = { NULL, 2, { K(0, 0, 1, 0), K(1, 1, R2, R2) } },
    [SV_SX] = { NULL,
                4,
                { K(0, 0, 0.5, 0.5), K(0, 1, 0.5, -0.5), K(1, 0, 0.5, -0.5), K(1, 1, 0.5, 0.5) } },
    [SV_RX] = { NULL, 4, { E(0, 0, V_C), E(0, 1, V_NIS), E(1, 0, V_NIS), E(1, 1, V_C) } },
    [SV_RY] = { NULL, 4, { E(0, 0, V_C), E(0, 1, V_NS), E(1, 0, V_S), E(1, 1, V_C) } },
    [SV_RZ] = { NULL, 2, { E(0, 0, V_EXN), E(1, 1, V_EXP) } },
    [SV_PHASESHIFT] = { NULL, 2, { E(0, 0, V_ONE), E(1, 1, V_EX1) } },
    [SV_ROT] = { fill_rot, 0, { { 0 } } },
    [SV_U3] = { fill_u3, 0, { { 0 } } },
    [SV_CNOT] = { NULL, 4, { K(0, 0, 1, 0), K(1, 1, 1, 0), K(2, 3, 1, 0), K(3, 2, 1, 0) } },
    [SV_CY] = { NULL, 4, { K(0, 0, 1, 0), K(1, 1, 1, 0), K(2, 3, 0, -1), K(3, 2, 0, 1) } },
    [SV_CZ] = { NULL, 4, { K(0, 0, 1, 0), K(1, 1, 1, 0), K(2, 2, 1, 0), K(3, 3, -1, 0) } },
    [SV_SWAP] = { NULL, 4, { K(0, 0, 1, 0), K(1, 2, 1, 0), K(2, 1, 1, 0), K(3, 3, 1, 0) } },
    [SV_ISWAP] = { NULL, 4, { K(0, 0, 1, 0), K(1, 2, 0, 1), K(2, 1, 0, 1), K(3, 3, 1, 0) } },
    [SV_CRX] = { NULL,
                 6,
                 { E(0, 0, V_ONE), E(1, 1, V_ONE), E(2, 2, V_C), E(2, 3, V_NIS), E(3, 2, V_NIS),
                   E(3, 3, V_C) } },
    [SV_CRY] = { NULL,
                 6,
                 { E(0, 0, V_ONE), E(1, 1, V_ONE), E(2, 2, V_C), E(2, 3, V_NS), E(3, 2, V_S),
                   E(3, 3, V_C) } },
    [SV_CRZ] = { NULL, 4, { E(0, 0, V_ONE), E(1, 1, V_ONE), E(2, 2, V_EXN), E(3, 3, V_EXP) } },
    [SV_CPHASE] = { NULL, 4, { E(0, 0, V_ONE), E(1, 1, V_ONE), E(2, 2, V_ONE), E(3, 3, V_EX1) } },
    [SV_ISINGXX] = { NULL,
                     8,
                     { E(0, 0, V_C), E(0, 3, V_NIS), E(1, 1, V_C), E(1, 2, V_NIS), E(2, 2, V_C),
                       E(2, 1, V_NIS), E(3, 3, V_C), E(3, 0, V_NIS) } },
    [SV_ISINGYY] = { NULL,
                     8,
                     { E(0, 0, V_C), E(1, 1, V_C), E(2, 2, V_C), E(3, 3, V_C), E(0, 3, V_IS),
                       E(1, 2, V_NIS), E(2, 1, V_NIS), E(3, 0, V_IS) } },
    [SV_ISINGZZ] = { NULL, 4, { E(0, 0, V_EXN), E(1, 1, V_EXP), E(2, 2, V_EXP), E(3, 3, V_EXN) } },
    [SV_TOFFOLI] = { NULL,
                     8,
                     { K(0, 0, 1, 0), K(1, 1, 1, 0), K(2, 2, 1, 0), K(3, 3, 1, 0), K(4, 4, 1, 0),
                       K(5, 5, 1, 0), K(6, 7, 1, 0), K(7, 6, 1, 0) } },
    [SV_CSWAP] = { NULL,
                   8,
                   { K(0, 0, 1, 0), K(1, 1, 1, 0), K(2, 2, 1, 0), K(3, 3, 1, 0), K(4, 4, 1, 0),
                     K(5, 6, 1, 0), K(6, 5, 1, 0), K(7, 7, 1, 0) } },
    [SV_MULTIRZ] = { fill_multirz, 0, { { 0 } } },
    [SV_QUBITUNITARY] = { fill_unitary, 0, { { 0 } } },
    [SV_BASISSTATE] = { fill_basis, 0, { { 0 } } },
    [SV_SINGLEEXC] = { NULL,
                       6,
                       { E(0, 0, V_ONE), E(3, 3, V_ONE), E(1, 1, V_C), E(1, 2, V_NS), E(2, 1, V_S),
                         E(2, 2, V_C) } },
    [SV_DOUBLEEXC] = { fill_diag_one,
                       4,
                       { E(3, 3, V_C), E(3, 12, V_NS), E(12, 3, V_S), E(12, 12, V_C) } },
};
#undef K
#undef E
#undef R2

/* One entry's value for the gate's first parameter p0 (t: its Trig; d0:
   the derivative in it). */
static cplx entry_value(const MatEntry *e, const Trig *t, double p0, int d0)
{
    switch ((EntryKind)e->v) {
    case V_K: return cx(e->re, e->im);
    case V_C: return t->c;
    case V_S: return t->s;
    case V_NS: return -t->s;
    case V_IS: return cx(0, t->s);
    case V_NIS: return cx(0, -t->s);
    case V_ONE: return t->one;
    case V_EXN: return ex(-0.5, p0, d0);
    case V_EXP: return ex(0.5, p0, d0);
    case V_EX1: return ex(1, p0, d0);
    }
    sv_unreachable();
}

/* Why: every gate's matrix from its row of GATE_MATRIX, or its derivative
   in params[dp] (dp >= 0). u has 2^nwires x 2^nwires entries. */
static void base_matrix(const SvOp *op, int dp, cplx *u)
{
    size_t d = (size_t)1 << op->nwires;
    if (d == 2) /* a constant size: no call for the common gates */
        memset(u, 0, 4 * sizeof(cplx));
    else
        memset(u, 0, d * d * sizeof(cplx));
    sv_assert((unsigned)op->gate < SV_NGATES);
    const GateMatrix *g = &GATE_MATRIX[op->gate];
    sv_assert(g->fill || g->n > 0); /* every gate has its row */
    double p0 = op->nparams ? op->params[0] : 0;
    Trig t = { 0, 0, 1 }; /* a gate without parameters reads none of it: no sincos */
    if (op->nparams) t = trig(p0, dp == 0);
    if (g->fill) g->fill(op, dp, &t, u, d);
    for (int i = 0; i < g->n; i++)
        u[(size_t)g->e[i].r * d + g->e[i].c] = entry_value(&g->e[i], &t, p0, dp == 0);
}

/* In-place conjugate transpose of a d x d matrix. */
static void dagger(cplx *u, size_t d)
{
    for (size_t r = 0; r < d; r++) {
        u[r * d + r] = conj(u[r * d + r]);
        for (size_t c = r + 1; c < d; c++) {
            cplx a = u[r * d + c], b = u[c * d + r];
            u[r * d + c] = conj(b);
            u[c * d + r] = conj(a);
        }
    }
}

/* Why: one body for sv_op_matrix (dp < 0) and sv_op_dmatrix. Controls put
   the (derivative of the) gate in the bottom-right block. */
static int op_matrix(const SvOp *op, int dp, cplx *out, char *err, size_t errlen)
{
    const SvGateInfo *info = check_op(op, -1, err, errlen);
    if (!info) return -1;
    int K = op->nctrl + op->nwires;
    if (K > 14) return sv_err(err, errlen, SV_E_BIGOP, info->name, K, 14);
    if (dp >= 0 && dp >= info->nparams) return sv_err(err, errlen, SV_E_NOPARAM, info->name, dp);
    if (!out) return sv_err(err, errlen, SV_E_NOMAT, info->name);
    size_t d = (size_t)1 << op->nwires, D = (size_t)1 << K;
    if (op->nctrl == 0) {
        base_matrix(op, dp, out);
        if (op->adjoint) dagger(out, d);
        return 0;
    }
    cplx small[256];
    cplx *u = d * d <= 256 ? small : malloc(d * d * sizeof(cplx));
    if (!u) return sv_err(err, errlen, SV_E_NOMEM, info->name);
    base_matrix(op, dp, u);
    if (op->adjoint) dagger(u, d);
    memset(out, 0, D * D * sizeof(cplx));
    if (dp < 0)
        for (size_t r = 0; r < D - d; r++) out[r * D + r] = 1;
    for (size_t r = 0; r < d; r++)
        for (size_t c = 0; c < d; c++) out[(D - d + r) * D + (D - d + c)] = u[r * d + c];
    if (u != small) free(u);
    return 0;
}

/* Why: matrix(op) of the language and the dense reference of other rooms. */
int sv_op_matrix(const SvOp *op, cplx *out, char *err, size_t errlen)
{
    return op_matrix(op, -1, out, err, errlen);
}

/* Why: adjoint differentiation needs dU/dtheta of each parametric op. */
int sv_op_dmatrix(const SvOp *op, int p, cplx *out, char *err, size_t errlen)
{
    if (p < 0) {
        const SvGateInfo *info = op ? sv_gate_info(op->gate) : NULL;
        return sv_err(err, errlen, SV_E_NOPARAM, info ? info->name : "op", p);
    }
    return op_matrix(op, p, out, err, errlen);
}

/* ---- dispatch to kernels ---------------------------------------------- */

/* Fixed positions = targets + controls, ascending; cm = control mask. */
static void job_fixed(SvJob *j, const int *tpos, int nt, const int *cpos, int nc)
{
    j->m = nt;
    j->cm = 0;
    sv_copy_ints(j->pos, tpos, nt);
    for (int i = 0; i < nc; i++) {
        j->pos[j->m++] = cpos[i];
        j->cm |= (uint64_t)1 << cpos[i];
    }
    sv_sort_ints(j->pos, j->m);
}

/* The index bits a kernel job is fixed on: the targets t[0..nt) and the
   controls c[0..nc) (bit positions, as sv_bitpos gives them; c may be NULL
   when nc is 0). Borrowed for the job's set-up. */
typedef struct JobBits {
    const int *t;
    int nt;
    const int *c;
    int nc;
} JobBits;

/* Why: a 2x2 acting on the amplitude pairs (base+o1, base+o2), or their
   exchange (swap = 1); the kernels pick the loop shape by where the fixed
   bits sit. */
static void run_pair(SvState *s, JobBits b, uint64_t o1, uint64_t o2, const cplx *m, int swap)
{
    SvJob j;
    j.amp = (double *)s->amp;
    if (m) memcpy(j.mat, m, 4 * sizeof(cplx));
    j.kind = swap ? SVJ_SWAP : SVJ_PAIR;
    job_fixed(&j, b.t, b.nt, b.c, b.nc);
    j.off[0] = o1;
    j.off[1] = o2;
    j.total = s->dim >> j.m;
    sv_job_run(s, &j);
}

/* A diagonal gate's phases: by the target bits, d[pattern] (the first
   target the MSB of the pattern), or in parity mode (parity 1; d unused)
   ph0 where the bits of tmask have even parity and ph1 where odd. */
typedef struct DiagPhases {
    const cplx *d;
    int parity;
    uint64_t tmask;
    cplx ph0, ph1;
} DiagPhases;

/* Why: diagonal gates touch each amplitude once with a phase; the phase
   comes from the target bits (table d, first target = MSB of its index)
   or, in parity mode, from the parity of the bits in tmask (IsingZZ,
   MultiRZ). Controls at bits >= 3 are skipped by the iteration, lower
   ones are folded into the table. */
static void run_diag(SvState *s, JobBits b, const DiagPhases *ph)
{
    const int *cpos = b.c, *tpos = b.t;
    int nc = b.nc, k = b.nt, parity = ph->parity;
    const cplx *d = ph->d;
    uint64_t tmask = ph->tmask;
    cplx ph0 = ph->ph0, ph1 = ph->ph1;
    SvJob j;
    j.kind = SVJ_DIAG;
    j.amp = (double *)s->amp;
    uint64_t dim = s->dim;
    int C = dim < 8 ? (int)dim : 8;
    uint64_t low = (uint64_t)C - 1, cmlo = 0;
    j.m = 0;
    j.cm = 0;
    for (int i = 0; i < nc; i++) {
        uint64_t b = (uint64_t)1 << cpos[i];
        if (b & low)
            cmlo |= b;
        else {
            j.pos[j.m++] = cpos[i];
            j.cm |= b;
        }
    }
    sv_sort_ints(j.pos, j.m);
    j.chunk = C;
    j.walk_only = s->diag_walk;
    j.total = (dim >> j.m) / (uint64_t)C;
    j.parity = parity;
    j.nk = 0;
    if (parity) {
        j.kmask = tmask & ~low;
        j.nkeys = 2;
    } else {
        j.kmask = 0;
        j.nkeys = 1 << k;
        for (int r = 0; r < k; r++)
            if (!(((uint64_t)1 << tpos[r]) & low)) {
                j.kpos[j.nk] = tpos[r];
                j.kshift[j.nk] = k - 1 - r;
                j.nk++;
            }
    }
    /* consecutive chunks share their key below the lowest high target
       bit, and are contiguous below the lowest high control bit */
    int kr = 64;
    if (parity) {
        if (j.kmask) kr = __builtin_ctzll(j.kmask);
    } else
        for (int r = 0; r < j.nk; r++)
            if (j.kpos[r] < kr) kr = j.kpos[r];
    if (j.m && j.pos[0] < kr) kr = j.pos[0];
    j.seg = C < 8 ? 1 : (uint64_t)1 << ((kr > 43 ? 43 : kr) - 3);
    for (int key = 0; key < j.nkeys; key++) {
        int ones = 1;
        for (int q = 0; q < C; q++) {
            cplx ph = 1;
            if (((uint64_t)q & cmlo) == cmlo) {
                if (parity) {
                    int par = (key ^ __builtin_parityll((uint64_t)q & tmask & low)) & 1;
                    ph = par ? ph1 : ph0;
                } else {
                    int idx = key;
                    for (int r = 0; r < k; r++)
                        if (((uint64_t)1 << tpos[r]) & low)
                            idx = (idx & ~(1 << (k - 1 - r))) | (int)((q >> tpos[r]) & 1)
                                                                    << (k - 1 - r);
                    ph = d[idx];
                }
            }
            j.tab[key][2 * q] = creal(ph);
            j.tab[key][2 * q + 1] = cimag(ph);
            ones &= creal(ph) == 1.0 && cimag(ph) == 0.0;
        }
        j.skip[key] = (unsigned char)ones;
    }
    sv_job_run(s, &j);
}

/* Whether run_1q gives the 2x2 m to the diagonal kernel (the phase
   splits of fused passes rely on this being the one test). */
static int is_phase2(const cplx *m) { return m[1] == 0 && m[2] == 0; }

/* Why: a 1-qubit matrix takes the cheapest kernel its shape allows. */
static void run_1q(SvState *s, int t, const int *cpos, int nc, const cplx *m)
{
    if (is_phase2(m)) {
        cplx dg[2] = { m[0], m[3] };
        run_diag(s, (JobBits){ &t, 1, cpos, nc }, &(DiagPhases){ dg, 0, 0, 0, 0 });
    } else if (m[0] == 0 && m[3] == 0 && m[1] == 1 && m[2] == 1) {
        run_pair(s, (JobBits){ &t, 1, cpos, nc }, 0, (uint64_t)1 << t, NULL, 1);
    } else {
        run_pair(s, (JobBits){ &t, 1, cpos, nc }, 0, (uint64_t)1 << t, m, 0);
    }
}

/* Why: X on target bit *t under the controls: the exchange of its pairs. */
static void run_flip(SvState *s, const int *t, const int *cpos, int nc)
{
    run_pair(s, (JobBits){ t, 1, cpos, nc }, 0, (uint64_t)1 << *t, NULL, 1);
}

/* Why: two-qubit gates that mix all four amplitudes (IsingXX, IsingYY,
   QubitUnitary on 2 wires). p0 is the first wire's bit (MSB of m). */
static void run_quad(SvState *s, int p0, int p1, const int *cpos, int nc, const cplx *m)
{
    SvJob j;
    j.kind = SVJ_QUAD;
    j.amp = (double *)s->amp;
    int tp[2] = { p0, p1 };
    job_fixed(&j, tp, 2, cpos, nc);
    j.off[0] = 0;
    j.off[1] = (uint64_t)1 << p1;
    j.off[2] = (uint64_t)1 << p0;
    j.off[3] = j.off[1] | j.off[2];
    memcpy(j.mat, m, 16 * sizeof(cplx));
    j.total = s->dim >> j.m;
    sv_job_run(s, &j);
}

/* Why: QubitUnitary on 3+ wires and sv_apply_matrix: gather/scatter. */
static void run_dense(SvState *s, const int *tpos, int k, const int *cpos, int nc, const cplx *m,
                      int adj)
{
    uint64_t doff[1 << SV_MAX_DENSE];
    int d = 1 << k;
    for (int r = 0; r < d; r++) {
        uint64_t o = 0;
        for (int i = 0; i < k; i++)
            if ((r >> (k - 1 - i)) & 1) o |= (uint64_t)1 << tpos[i];
        doff[r] = o;
    }
    SvJob j;
    j.kind = SVJ_DENSE;
    j.amp = (double *)s->amp;
    job_fixed(&j, tpos, k, cpos, nc);
    j.k = k;
    j.doff = doff;
    j.dm = m;
    j.dadj = adj;
    j.total = s->dim >> j.m;
    sv_job_run(s, &j);
}

/* Conjugate transpose of a 2x2: the adjoint of a pair kernel's matrix. */
static void dagger2(cplx *m)
{
    cplx a = m[1];
    m[0] = conj(m[0]);
    m[1] = conj(m[2]);
    m[2] = conj(a);
    m[3] = conj(m[3]);
}

int sv_apply(SvState *s, const SvOp *op, char *err, size_t errlen)
{
    if (!s || !s->amp) return sv_err(err, errlen, SV_E_NOSTATE, "sv_apply");
    if (!check_op(op, s->nq, err, errlen)) return -1;
    return sv_run_op(s, op, err, errlen);
}

/* The op's target bit positions in tp and control bit positions in cp
   (validated, check_op: the state's wires, all distinct); returns the
   number of controls. */
static int op_bits(const SvState *s, const SvOp *op, int *tp, int *cp)
{
    int nq = s->nq, nc = 0;
    sv_assert(op->nwires >= 0 && op->nctrl >= 0 && op->nwires + op->nctrl <= nq);
    uint64_t seen = 0;
    for (int i = 0; i < op->nwires; i++) {
        sv_assert(op->wires[i] >= 0 && op->wires[i] < nq && !(seen >> op->wires[i] & 1));
        seen |= (uint64_t)1 << op->wires[i];
        tp[i] = sv_bitpos(nq, op->wires[i]);
    }
    for (int i = 0; i < op->nctrl; i++) {
        sv_assert(op->ctrl[i] >= 0 && op->ctrl[i] < nq && !(seen >> op->ctrl[i] & 1));
        seen |= (uint64_t)1 << op->ctrl[i];
        cp[nc++] = sv_bitpos(nq, op->ctrl[i]);
    }
    (void)seen;
    return nc;
}

/* The 2x2 block of the op's matrix on its rows and columns a and b (the
   only ones a controlled or excitation gate changes), as the op applies
   it (adjoint included). */
static void block2(const SvOp *op, size_t a, size_t b, cplx *m)
{
    cplx u[256];
    size_t d = (size_t)1 << op->nwires;
    base_matrix(op, -1, u);
    m[0] = u[a * d + a];
    m[1] = u[a * d + b];
    m[2] = u[b * d + a];
    m[3] = u[b * d + b];
    if (op->adjoint) dagger2(m);
}

/* The 2x2 that sv_run_op gives run_1q, adjoint included: a 1-qubit
   gate's matrix, a controlled gate's bottom-right block, a 1-wire
   QubitUnitary's matrix. Returns the index in op->wires of the wire it
   acts on, or -1 (m untouched) for the other ops. */
static int op_2x2(const SvOp *op, cplx *m)
{
    switch ((int)op->gate) {
    case SV_HADAMARD:
    case SV_PAULIY:
    case SV_PAULIZ:
    case SV_S:
    case SV_T:
    case SV_SX:
    case SV_RX:
    case SV_RY:
    case SV_RZ:
    case SV_PHASESHIFT:
    case SV_ROT:
    case SV_U3:
        base_matrix(op, -1, m);
        if (op->adjoint) dagger2(m);
        return 0;
    case SV_CY:
    case SV_CRX:
    case SV_CRY:
    case SV_CZ:
    case SV_CRZ:
    case SV_CPHASE: block2(op, 2, 3, m); return 1;
    case SV_QUBITUNITARY:
        if (op->nwires != 1) return -1;
        memcpy(m, op->matrix, 4 * sizeof(cplx));
        if (op->adjoint) dagger2(m);
        return 0;
    default: return -1;
    }
}

/* IsingZZ's and MultiRZ's phases where their wires' parity is even and odd. */
static void parity_phases(const SvOp *op, cplx *ph0, cplx *ph1)
{
    *ph0 = ex(-0.5, op->params[0], 0);
    *ph1 = ex(0.5, op->params[0], 0);
    if (op->adjoint) {
        *ph0 = conj(*ph0);
        *ph1 = conj(*ph1);
    }
}

/* Whether op is a phase by the parity of its wires (run_parity). */
static int is_parity(const SvOp *op) { return op->gate == SV_ISINGZZ || op->gate == SV_MULTIRZ; }

/* A diagonal 2x2 that run_1q gives the diagonal kernel: the index in
   op->wires of its target, d its phases; else -1. */
static int phase_2x2(const SvOp *op, cplx d[2])
{
    cplx m[4];
    int t = op_2x2(op, m);
    if (t < 0 || !is_phase2(m)) return -1;
    d[0] = m[0];
    d[1] = m[3];
    return t;
}

uint64_t sv_op_phase_wires(const SvOp *op)
{
    if (is_parity(op)) return op->nwires >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << op->nwires) - 1;
    cplx d[2];
    int t = phase_2x2(op, d);
    return t < 0 ? 0 : (uint64_t)1 << t;
}

/* Phase p under op's controls as the diagonal kernel runs it: a 1-wire
   QubitUnitary diag(p, p) on wire spare, or SV_IDENTITY when p is
   exactly 1 (every row of that kernel is ones: it skips them all).
   op->wires other than index skip are controls. */
static void chunk_phase(const SvOp *op, int skip, int spare, cplx p, SvOp *out, cplx *m)
{
    memset(out, 0, sizeof *out);
    if (p == 1) {
        out->gate = SV_IDENTITY;
        return;
    }
    out->gate = SV_QUBITUNITARY;
    out->nwires = 1;
    out->wires[0] = spare;
    m[0] = p;
    m[1] = 0;
    m[2] = 0;
    m[3] = p;
    out->matrix = m;
    for (int i = 0; i < op->nwires; i++) /* a controlled gate's control */
        if (i != skip) out->ctrl[out->nctrl++] = op->wires[i];
    for (int i = 0; i < op->nctrl; i++) out->ctrl[out->nctrl++] = op->ctrl[i];
    sv_assert(out->nctrl <= SV_MAX_WIRES);
}

int sv_op_phase_split(const SvOp *op, uint64_t out_wires, int spare, SvOp v[2], cplx *m)
{
    if (is_parity(op)) {
        SvOp kept = *op;
        kept.gate = SV_MULTIRZ;
        kept.nwires = 0;
        for (int i = 0; i < op->nwires; i++)
            if (!(out_wires >> i & 1)) kept.wires[kept.nwires++] = op->wires[i];
        if (kept.nwires > 0) { /* -theta: ex(-0.5, -theta) is ex(0.5, theta), bit for bit */
            v[0] = v[1] = kept;
            v[1].params[0] = -op->params[0];
            return 0;
        }
        cplx ph0, ph1;
        parity_phases(op, &ph0, &ph1);
        chunk_phase(&kept, -1, spare, ph0, &v[0], m);
        chunk_phase(&kept, -1, spare, ph1, &v[1], m + 4);
        return 0;
    }
    cplx d[2];
    int t = phase_2x2(op, d);
    if (t < 0 || out_wires != (uint64_t)1 << t) return -1;
    chunk_phase(op, t, spare, d[0], &v[0], m);
    chunk_phase(op, t, spare, d[1], &v[1], m + 4);
    return 0;
}

/* Why: IsingZZ and MultiRZ are a phase by the parity of their wires. */
static void run_parity(SvState *s, const SvOp *op, const int *tp, const int *cp, int nc)
{
    uint64_t mask = 0;
    for (int i = 0; i < op->nwires; i++) mask |= (uint64_t)1 << tp[i];
    cplx ph0, ph1;
    parity_phases(op, &ph0, &ph1);
    run_diag(s, (JobBits){ NULL, 0, cp, nc }, &(DiagPhases){ NULL, 1, mask, ph0, ph1 });
}

/* Why: QubitUnitary by its width: the 2x2 and 4x4 kernels, else dense. */
static void run_unitary(SvState *s, const SvOp *op, const int *tp, const int *cp, int nc)
{
    int adj = op->adjoint != 0;
    if (op->nwires == 1) {
        cplx m[4];
        op_2x2(op, m);
        run_1q(s, tp[0], cp, nc, m);
    } else if (op->nwires == 2) {
        cplx u[16];
        memcpy(u, op->matrix, 16 * sizeof(cplx));
        if (adj) dagger(u, 4);
        run_quad(s, tp[0], tp[1], cp, nc, u);
    } else {
        run_dense(s, tp, op->nwires, cp, nc, op->matrix, adj);
    }
}

/* Why: the dispatcher; each gate goes to one kernel by its kind (the op
   was validated: sv_apply, or the fused runs of fuse.c). */
int sv_run_op(SvState *s, const SvOp *op, char *err, size_t errlen)
{
    int tp[SV_MAX_WIRES], cp[SV_MAX_WIRES + 3];
    int nc = op_bits(s, op, tp, cp);
    cplx u[16], m[4];
    switch (op->gate) {
    case SV_IDENTITY: return 0;
    case SV_PAULIX: run_flip(s, tp, cp, nc); return 0;
    case SV_HADAMARD:
    case SV_PAULIY:
    case SV_PAULIZ:
    case SV_S:
    case SV_T:
    case SV_SX:
    case SV_RX:
    case SV_RY:
    case SV_RZ:
    case SV_PHASESHIFT:
    case SV_ROT:
    case SV_U3:
        op_2x2(op, m);
        run_1q(s, tp[0], cp, nc, m);
        return 0;
    case SV_CNOT:
        cp[nc++] = tp[0];
        run_flip(s, tp + 1, cp, nc);
        return 0;
    case SV_TOFFOLI:
        cp[nc++] = tp[0];
        cp[nc++] = tp[1];
        run_flip(s, tp + 2, cp, nc);
        return 0;
    case SV_CY:
    case SV_CRX:
    case SV_CRY:
    case SV_CZ:
    case SV_CRZ:
    case SV_CPHASE:
        op_2x2(op, m); /* the bottom-right block */
        cp[nc++] = tp[0];
        run_1q(s, tp[1], cp, nc, m);
        return 0;
    case SV_SWAP:
        run_pair(s, (JobBits){ tp, 2, cp, nc }, (uint64_t)1 << tp[1], (uint64_t)1 << tp[0], NULL,
                 1);
        return 0;
    case SV_CSWAP:
        cp[nc++] = tp[0];
        run_pair(s, (JobBits){ tp + 1, 2, cp, nc }, (uint64_t)1 << tp[2], (uint64_t)1 << tp[1],
                 NULL, 1);
        return 0;
    case SV_ISWAP:
    case SV_SINGLEEXC: /* acts on |01>, |10> only */
        block2(op, 1, 2, m);
        run_pair(s, (JobBits){ tp, 2, cp, nc }, (uint64_t)1 << tp[1], (uint64_t)1 << tp[0], m, 0);
        return 0;
    case SV_DOUBLEEXC: { /* acts on |0011>, |1100> only */
        block2(op, 3, 12, m);
        uint64_t o1 = ((uint64_t)1 << tp[2]) | ((uint64_t)1 << tp[3]);
        uint64_t o2 = ((uint64_t)1 << tp[0]) | ((uint64_t)1 << tp[1]);
        run_pair(s, (JobBits){ tp, 4, cp, nc }, o1, o2, m, 0);
        return 0;
    }
    case SV_ISINGXX:
    case SV_ISINGYY:
        base_matrix(op, -1, u);
        if (op->adjoint) dagger(u, 4);
        run_quad(s, tp[0], tp[1], cp, nc, u);
        return 0;
    case SV_ISINGZZ:
    case SV_MULTIRZ: run_parity(s, op, tp, cp, nc); return 0;
    case SV_QUBITUNITARY: run_unitary(s, op, tp, cp, nc); return 0;
    case SV_BASISSTATE:
        for (int i = 0; i < op->nwires; i++)
            if ((op->bits >> i) & 1) run_flip(s, tp + i, cp, nc);
        return 0;
    case SV_NGATES: break;
    }
    return sv_err(err, errlen, SV_E_BADGATE, (int)op->gate);
}

int sv_op_uncontrol(const SvOp *op, int w, SvOp *out, cplx *m)
{
    *out = *op;
    for (int i = 0; i < op->nctrl; i++)
        if (op->ctrl[i] == w) { /* an extra control: only the iteration changes */
            for (int k = i; k + 1 < op->nctrl; k++) out->ctrl[k] = op->ctrl[k + 1];
            out->nctrl--;
            return 0;
        }
    if (op->nwires < 1 || op->wires[0] != w) {
        if (op->gate == SV_TOFFOLI && op->wires[1] == w) { /* Toffoli(a, w, t): CNOT(a, t) */
            out->gate = SV_CNOT;
            out->nwires = 2;
            out->wires[1] = op->wires[2];
            return 0;
        }
        return -1;
    }
    /* the first wire is the control: the rest is the gate sv_run_op runs */
    cplx u[16];
    switch ((int)op->gate) {
    case SV_CNOT: out->gate = SV_PAULIX; break;
    case SV_TOFFOLI: out->gate = SV_CNOT; break;
    case SV_CSWAP: out->gate = SV_SWAP; break;
    case SV_CY:
    case SV_CRX:
    case SV_CRY:
    case SV_CZ:
    case SV_CRZ:
    case SV_CPHASE: /* sv_run_op's 2x2: the bottom-right block (adjoint at run time) */
        base_matrix(op, -1, u);
        m[0] = u[10];
        m[1] = u[11];
        m[2] = u[14];
        m[3] = u[15];
        out->gate = SV_QUBITUNITARY;
        out->nparams = 0;
        out->matrix = m;
        break;
    default: return -1;
    }
    out->nwires = op->nwires - 1;
    for (int i = 0; i < out->nwires; i++) out->wires[i] = op->wires[i + 1];
    return 0;
}

/* Why: adjoint differentiation applies dU/dtheta (not unitary) and
   projections; anything dense goes through the same kernels. */
int sv_apply_matrix(SvState *s, const int *wires, int k, const cplx *m, char *err, size_t errlen)
{
    const char *name = "apply_matrix";
    if (!s || !s->amp) return sv_err(err, errlen, SV_E_NOSTATE, name);
    if (k < 1 || !wires) return sv_err(err, errlen, SV_E_NOWIRES, name);
    if (k > SV_MAX_DENSE) return sv_err(err, errlen, SV_E_BIGOP, name, k, SV_MAX_DENSE);
    if (!m) return sv_err(err, errlen, SV_E_NOMAT, name);
    if (check_wires(&(SvWires){ name, wires, k, NULL, 0 }, s->nq, err, errlen)) return -1;
    int d = 1 << k;
    for (long i = 0; i < (long)d * d; i++)
        if (!isfinite(creal(m[i])) || !isfinite(cimag(m[i])))
            return sv_err(err, errlen, SV_E_MATNF, name);
    int tp[SV_MAX_DENSE];
    for (int i = 0; i < k; i++) tp[i] = sv_bitpos(s->nq, wires[i]);
    if (k == 1)
        run_pair(s, (JobBits){ tp, 1, NULL, 0 }, 0, (uint64_t)1 << tp[0], m, 0);
    else if (k == 2)
        run_quad(s, tp[0], tp[1], NULL, 0, m);
    else
        run_dense(s, tp, k, NULL, 0, m, 0);
    return 0;
}
