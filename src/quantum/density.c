/* density.c — mixed states: life of rho, gates and Kraus maps on it.
 *
 * rho lives in a 2n-qubit SvState (dm.h); every update is a statevector
 * kernel on that vector: U on the row wires and conj(U) on the column
 * wires (a 1-wire gate fused into one 4x4 pass), a Kraus set as one pass
 * of its superoperator sum K (x) conj(K). conj(U) of a named gate is again
 * a named gate where one exists (real matrices: the gate itself;
 * symmetric ones: its adjoint; Rot/U3: negated phases), else its dense
 * conjugate. Must not know about the language, devices or channels' names
 * (channels.c turns names and parameters into Kraus matrices).
 */
#include "dm.h"
#include "fuse.h"
#include "errf.h"
#include "qh_assert.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- states --------------------------------------------------------------- */

/* Why: the device pool budgets memory before it allocates. */
size_t dm_bytes(int n)
{
    if (n < 0 || n > DM_MAX_WIRES) return SIZE_MAX;
    return sv_bytes(2 * n);
}

/* Why: a mixed device instance starts in |0..0><0..0|, which is the
   vector |0..0> of 2n qubits. */
int dm_init(DmState *d, int n)
{
    memset(d, 0, sizeof *d);
    if (n < 0 || n > DM_MAX_WIRES) return -1;
    if (sv_init(&d->v, 2 * n) != 0) return -1;
    d->n = n;
    d->dim = (size_t)1 << n;
    qh_assert(d->v.nq == 2 * n && d->v.dim == d->dim * d->dim); /* rho as a vector */
    return 0;
}

void dm_free(DmState *d)
{
    if (!d) return;
    sv_free(&d->v);
    d->n = 0;
    d->dim = 0;
}

void dm_reset(DmState *d)
{
    sv_reset(&d->v);
    d->tangent = 0;
}

void dm_set_threads(DmState *d, SvTeam *team, int nthreads)
{
    sv_set_threads(&d->v, team, nthreads);
}

/* Why: StatePrep-like preparation and the tests' random pure states. */
int dm_set_pure(DmState *d, const cplx *psi, char *err, size_t errlen)
{
    if (!d || !d->v.amp) return qh_errf(err, errlen, "set_state: no state");
    if (!psi) return qh_errf(err, errlen, "set_state: no vector");
    size_t D = d->dim;
    for (size_t r = 0; r < D; r++)
        for (size_t c = 0; c < D; c++) d->v.amp[r * D + c] = psi[r] * conj(psi[c]);
    d->tangent = 0;
    return 0;
}

/* Why: tests start from random mixed states. */
int dm_set_matrix(DmState *d, const cplx *m, char *err, size_t errlen)
{
    if (!d || !d->v.amp) return qh_errf(err, errlen, "set_state: no state");
    if (!m) return qh_errf(err, errlen, "set_state: no matrix");
    memcpy(d->v.amp, m, d->dim * d->dim * sizeof(cplx));
    d->tangent = 0;
    return 0;
}

/* ---- gates ---------------------------------------------------------------- */

/* Why: the vector has 2n wires, so sv_apply alone would accept wire n;
   the wires are checked against rho's n wires first, in sv_apply's words. */
static int check_range(const DmState *d, const SvWires *ws, char *err, size_t errlen)
{
    for (int i = 0; i < ws->nw; i++)
        if (ws->w[i] < 0 || ws->w[i] >= d->n)
            return qh_errf(err, errlen, "%s: wire %d out of range for a %d-wire device", ws->name,
                           ws->w[i], d->n);
    for (int i = 0; i < ws->nc; i++)
        if (ws->c[i] < 0 || ws->c[i] >= d->n)
            return qh_errf(err, errlen, "%s: control wire %d out of range for a %d-wire device",
                           ws->name, ws->c[i], d->n);
    return 0;
}

/* Why: wires of dense maps must be distinct (a repeated wire would make
   the superoperator act twice on one bit). */
static int check_distinct(const char *name, const int *w, int k, char *err, size_t errlen)
{
    for (int i = 0; i < k; i++)
        for (int j = i + 1; j < k; j++)
            if (w[i] == w[j])
                return qh_errf(err, errlen, "%s: wires must be distinct (%d, %d)", name, w[i],
                               w[j]);
    return 0;
}

/* Which gates have a real matrix (conj U = U) or a symmetric one
   (conj U = U^dagger); the rest get an explicit conjugate. */
static int is_real(SvGate g)
{
    switch ((int)g) {
    case SV_IDENTITY:
    case SV_HADAMARD:
    case SV_PAULIX:
    case SV_PAULIZ:
    case SV_RY:
    case SV_CNOT:
    case SV_CZ:
    case SV_SWAP:
    case SV_CRY:
    case SV_TOFFOLI:
    case SV_CSWAP:
    case SV_BASISSTATE:
    case SV_SINGLEEXC:
    case SV_DOUBLEEXC: return 1;
    default: return 0;
    }
}

static int is_symmetric(SvGate g)
{
    switch ((int)g) {
    case SV_S:
    case SV_T:
    case SV_SX:
    case SV_RX:
    case SV_RZ:
    case SV_PHASESHIFT:
    case SV_ISWAP:
    case SV_CRX:
    case SV_CRZ:
    case SV_CPHASE:
    case SV_ISINGXX:
    case SV_ISINGYY:
    case SV_ISINGZZ:
    case SV_MULTIRZ: return 1;
    default: return 0;
    }
}

/* Why: the column half of U rho U^dagger: conj(U) on wires n + W (controls
   of U stay controls: conj of a controlled U is the controlled conj(U)).
   *buf receives a heap matrix to free when the conjugate is dense. */
static int conj_op(const SvOp *op, int n, SvOp *c, cplx **buf, char *err, size_t errlen)
{
    *c = *op;
    *buf = NULL;
    /* the row half acts on wires 0..n-1, the column half on n..2n-1 */
    qh_assert(op->nwires + op->nctrl <= n);
    for (int i = 0; i < op->nwires; i++) qh_assert(op->wires[i] >= 0 && op->wires[i] < n);
    for (int i = 0; i < op->nctrl; i++) qh_assert(op->ctrl[i] >= 0 && op->ctrl[i] < n);
    for (int i = 0; i < op->nwires; i++) c->wires[i] = op->wires[i] + n;
    for (int i = 0; i < op->nctrl; i++) c->ctrl[i] = op->ctrl[i] + n;
    if (is_real(op->gate)) return 0;
    if (is_symmetric(op->gate)) {
        c->adjoint = !op->adjoint;
        return 0;
    }
    if (op->gate == SV_ROT) {
        c->params[0] = -op->params[0];
        c->params[2] = -op->params[2];
        return 0;
    }
    if (op->gate == SV_U3) {
        c->params[1] = -op->params[1];
        c->params[2] = -op->params[2];
        return 0;
    }
    /* PauliY, CY, QubitUnitary: the dense conjugate of the target block */
    SvOp base = *op;
    base.nctrl = 0;
    base.adjoint = 0;
    int k = op->nwires;
    if (op->gate == SV_CY) {
        base.gate = SV_PAULIY;
        base.nwires = 1;
        base.wires[0] = op->wires[1];
        k = 1;
    }
    if (k > SV_MAX_DENSE)
        return qh_errf(err, errlen, "%s: too many wires (%d)", sv_gate_info(op->gate)->name, k);
    size_t D = (size_t)1 << k;
    cplx *m = malloc(D * D * sizeof(cplx));
    if (!m) return qh_errf(err, errlen, "%s: out of memory", sv_gate_info(op->gate)->name);
    if (sv_op_matrix(&base, m, err, errlen) != 0) {
        free(m);
        return -1;
    }
    for (size_t i = 0; i < D * D; i++) m[i] = conj(m[i]);
    if (op->gate == SV_CY) { /* control (first wire) becomes a control */
        c->ctrl[c->nctrl++] = op->wires[0] + n;
        c->wires[0] = op->wires[1] + n;
    }
    c->gate = SV_QUBITUNITARY;
    c->nwires = k;
    c->nparams = 0;
    c->matrix = m;
    *buf = m;
    return 0;
}

/* (a (x) conj(b)) for d x d matrices a, b into s (d^2 x d^2), added to s:
   the superoperator of rho -> a rho b^dagger. */
static void add_pair(const cplx *a, const cplx *b, size_t d, cplx *s)
{
    size_t D = d * d;
    for (size_t r = 0; r < d; r++)
        for (size_t r2 = 0; r2 < d; r2++) {
            cplx x = a[r * d + r2];
            if (x == 0) continue;
            for (size_t c = 0; c < d; c++)
                for (size_t c2 = 0; c2 < d; c2++)
                    s[(r * d + c) * D + (r2 * d + c2)] += x * conj(b[c * d + c2]);
        }
}
static void add_super(const cplx *a, size_t d, cplx *s) { add_pair(a, a, d, s); }

/* The vector's gates and matrices: at once, or queued (DmState.circ). */
static int vec_op(DmState *d, const SvOp *op, char *err, size_t errlen)
{
    return d->circ ? svc_push(d->circ, &d->v, op, err, errlen) : sv_apply(&d->v, op, err, errlen);
}
static int vec_matrix(DmState *d, const int *wires, int k, const cplx *m, char *err, size_t errlen)
{
    return d->circ ? svc_push_matrix(d->circ, &d->v, wires, k, m, err, errlen)
                   : sv_apply_matrix(&d->v, wires, k, m, err, errlen);
}

/* Why: one pass of the 4x4 superoperator of a 2x2 matrix on (w, n + w). */
static int apply_super1(DmState *d, int w, const cplx *m, char *err, size_t errlen)
{
    cplx s[16] = { 0 };
    add_super(m, 2, s);
    int wires[2] = { w, d->n + w };
    return vec_matrix(d, wires, 2, s, err, errlen);
}

/* Why: every gate of the statevector device works on rho. */
int dm_apply(DmState *d, const SvOp *op, char *err, size_t errlen)
{
    if (!d || !d->v.amp) return qh_errf(err, errlen, "dm_apply: no state");
    if (!op) return qh_errf(err, errlen, "dm_apply: no operation");
    const SvGateInfo *info = sv_gate_info(op->gate);
    if (!info) return qh_errf(err, errlen, "unknown gate %d", (int)op->gate);
    if (op->nwires < 0 || op->nwires > SV_MAX_WIRES || op->nctrl < 0 || op->nctrl > SV_MAX_WIRES)
        return sv_apply(&d->v, op, err, errlen); /* its message */
    if (check_range(d, &(SvWires){ info->name, op->wires, op->nwires, op->ctrl, op->nctrl }, err,
                    errlen))
        return -1;
    if (op->nctrl == 0 && op->nwires == 1 && info->nwires == 1 && op->gate != SV_QUBITUNITARY &&
        op->gate != SV_BASISSTATE) {
        if (op->gate == SV_IDENTITY) return 0;
        cplx m[4];
        if (sv_op_matrix(op, m, err, errlen) != 0) return -1;
        return apply_super1(d, op->wires[0], m, err, errlen);
    }
    qh_assert(d->v.nq == 2 * d->n);
    if (vec_op(d, op, err, errlen) != 0) return -1;
    SvOp c;
    cplx *buf;
    if (conj_op(op, d->n, &c, &buf, err, errlen) != 0) return -1;
    int rc = vec_op(d, &c, err, errlen);
    free(buf);
    return rc;
}

/* Why: measurement projections and user matrices: M rho M^dagger. */
int dm_apply_matrix(DmState *d, const int *wires, int k, const cplx *m, char *err, size_t errlen)
{
    return dm_apply_kraus(d, wires, k, 1, m, err, errlen);
}

/* ---- Kraus maps ----------------------------------------------------------- */

/* One pass of the superoperator sum A_j (x) conj(B_j) over the 2k row and
   column wires (row bits, column bits): rho -> sum A_j rho B_j^dagger, for
   the A_j at a and the B_j at b. */
typedef struct PairSet {
    int np;
    const cplx *a, *b; /* the A_j, the B_j */
} PairSet;
static int apply_pairs(DmState *d, const int *wires, int k, PairSet ps, char *err, size_t errlen)
{
    int np = ps.np;
    const cplx *a = ps.a, *b = ps.b;
    const char *name = "channel";
    if (!d || !d->v.amp) return qh_errf(err, errlen, "%s: no state", name);
    if (k < 1 || !wires) return qh_errf(err, errlen, "%s: needs at least one wire", name);
    if (k > DM_MAX_KRAUS_WIRES)
        return qh_errf(err, errlen, "%s: at most %d wires, got %d", name, DM_MAX_KRAUS_WIRES, k);
    if (np < 1 || !a || !b) return qh_errf(err, errlen, "%s: no Kraus matrices", name);
    if (check_range(d, &(SvWires){ name, wires, k, NULL, 0 }, err, errlen)) return -1;
    if (check_distinct(name, wires, k, err, errlen)) return -1;
    size_t dd = (size_t)1 << k, D = dd * dd;
    qh_assert(k <= d->n); /* distinct wires of rho's row side */
    if (k == 1) {
        cplx s[16] = { 0 };
        for (int i = 0; i < np; i++) add_pair(a + 4 * i, b + 4 * i, 2, s);
        int w2[2] = { wires[0], d->n + wires[0] };
        return vec_matrix(d, w2, 2, s, err, errlen);
    }
    cplx *s = calloc(D * D, sizeof(cplx));
    if (!s) return qh_errf(err, errlen, "%s: out of memory", name);
    for (int i = 0; i < np; i++) add_pair(a + (size_t)i * D, b + (size_t)i * D, dd, s);
    int w2[2 * DM_MAX_KRAUS_WIRES];
    for (int i = 0; i < k; i++) {
        w2[i] = wires[i];
        w2[k + i] = d->n + wires[i];
    }
    int rc = vec_matrix(d, w2, 2 * k, s, err, errlen);
    free(s);
    return rc;
}

/* Why: a channel is one pass of its superoperator S = sum K (x) conj(K). */
int dm_apply_kraus(DmState *d, const int *wires, int k, int nk, const cplx *kraus, char *err,
                   size_t errlen)
{
    return apply_pairs(d, wires, k, (PairSet){ nk, kraus, kraus }, err, errlen);
}

/* Why: exact gradients of channel parameters run a channel's derivative map. */
int dm_apply_pairs(DmState *d, const int *wires, int k, int np, const cplx *ab, char *err,
                   size_t errlen)
{
    size_t D = k >= 1 && k <= DM_MAX_KRAUS_WIRES ? (size_t)1 << (2 * k) : 0;
    const cplx *b = ab && np > 0 ? ab + (size_t)np * D : NULL;
    int rc = apply_pairs(d, wires, k, (PairSet){ np, ab, b }, err, errlen);
    if (rc == 0) d->tangent = 1;
    return rc;
}

/* Why: the language applies built-in channels by kind and parameters. */
int dm_apply_channel(DmState *d, DmChannel ch, const double *params, int wire, char *err,
                     size_t errlen)
{
    cplx k[DM_MAX_KRAUS * 4];
    int nk;
    if (dm_channel_kraus(ch, params, k, &nk, err, errlen) != 0) return -1;
    const DmChannelInfo *info = dm_channel_info(ch);
    if (d && d->v.amp && check_range(d, &(SvWires){ info->name, &wire, 1, NULL, 0 }, err, errlen))
        return -1;
    return dm_apply_kraus(d, &wire, 1, nk, k, err, errlen);
}
