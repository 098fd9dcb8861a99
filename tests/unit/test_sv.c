/* test_sv.c — unit tests of the statevector room (Check).
 *
 * Every gate (plain, adjoint, with 1 and 2 extra controls) on random
 * states is compared with a dense reference built here independently:
 * the small matrices are written out from PennyLane's definitions (as
 * products / exponentials of Paulis where PennyLane defines them so),
 * embedded into the full space by index arithmetic (cross-checked
 * against explicit Kronecker products) and multiplied. Also: matrices and
 * their derivatives, observables, probabilities, sampling statistics with
 * fixed seeds, measurement, error messages, threads, allocation failure.
 * Knows only the sv.h interface (and rng.h).
 */
#include <check.h>
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sv.h"
#include "dense_ref.h"

#define TOL  1e-12
#define MAXQ 8
#define MAXD (1 << MAXQ)

/* ---- small dense linear algebra -------------------------------------- */

static void mat_id(cplx *u, int d)
{
    memset(u, 0, (size_t)d * d * sizeof(cplx));
    for (int i = 0; i < d; i++) u[i * d + i] = 1;
}

static void dag(cplx *u, int d)
{
    for (int i = 0; i < d; i++)
        for (int j = i; j < d; j++) {
            cplx a = u[i * d + j], b = u[j * d + i];
            u[i * d + j] = conj(b);
            u[j * d + i] = conj(a);
        }
}

/* cos(t/2) 1 - i sin(t/2) G for an involutory G of size d */
static void rot_exp(const cplx *g, int d, double t, cplx *u)
{
    for (int i = 0; i < d * d; i++) u[i] = -I * sin(t / 2) * g[i];
    for (int i = 0; i < d; i++) u[i * d + i] += cos(t / 2);
}

/* block diag(1, ..., 1, U): a controlled U with nc controls. */
static void ctrl_block(const cplx *u, int d, int nc, cplx *out)
{
    int D = d << nc;
    mat_id(out, D);
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) out[(D - d + i) * D + (D - d + j)] = u[i * d + j];
}

/* PennyLane's matrices, written out independently of src/quantum. */
static int ref_small(SvGate g, const double *p, int k, const cplx *qu, uint64_t bits, cplx *u)
{
    cplx a[16], b[16], c[16];
    int d = 1 << k;
    memset(u, 0, (size_t)d * d * sizeof(cplx));
    switch ((int)g) {
    case SV_IDENTITY: memcpy(u, P_I, sizeof P_I); break;
    case SV_HADAMARD:
        for (int i = 0; i < 4; i++) u[i] = (P_X[i] + P_Z[i]) / sqrt(2);
        break;
    case SV_PAULIX: memcpy(u, P_X, sizeof P_X); break;
    case SV_PAULIY: memcpy(u, P_Y, sizeof P_Y); break;
    case SV_PAULIZ: memcpy(u, P_Z, sizeof P_Z); break;
    case SV_S:
        u[0] = 1;
        u[3] = I;
        break;
    case SV_T:
        u[0] = 1;
        u[3] = cexp(I * M_PI / 4);
        break;
    case SV_SX:
        u[0] = u[3] = (1 + I) / 2;
        u[1] = u[2] = (1 - I) / 2;
        break;
    case SV_RX: rot_exp(P_X, 2, p[0], u); break;
    case SV_RY: rot_exp(P_Y, 2, p[0], u); break;
    case SV_RZ: rot_exp(P_Z, 2, p[0], u); break;
    case SV_PHASESHIFT:
        u[0] = 1;
        u[3] = cexp(I * p[0]);
        break;
    case SV_ROT: /* RZ(omega) RY(theta) RZ(phi) */
        rot_exp(P_Z, 2, p[2], a);
        rot_exp(P_Y, 2, p[1], b);
        rot_exp(P_Z, 2, p[0], c);
        matmul(a, b, u, 2);
        matmul(u, c, u, 2);
        break;
    case SV_U3:
        u[0] = cos(p[0] / 2);
        u[1] = -cexp(I * p[2]) * sin(p[0] / 2);
        u[2] = cexp(I * p[1]) * sin(p[0] / 2);
        u[3] = cexp(I * (p[1] + p[2])) * cos(p[0] / 2);
        break;
    case SV_CNOT: ctrl_block(P_X, 2, 1, u); break;
    case SV_CY: ctrl_block(P_Y, 2, 1, u); break;
    case SV_CZ: ctrl_block(P_Z, 2, 1, u); break;
    case SV_CRX:
        rot_exp(P_X, 2, p[0], a);
        ctrl_block(a, 2, 1, u);
        break;
    case SV_CRY:
        rot_exp(P_Y, 2, p[0], a);
        ctrl_block(a, 2, 1, u);
        break;
    case SV_CRZ:
        rot_exp(P_Z, 2, p[0], a);
        ctrl_block(a, 2, 1, u);
        break;
    case SV_CPHASE:
        a[0] = 1;
        a[1] = a[2] = 0;
        a[3] = cexp(I * p[0]);
        ctrl_block(a, 2, 1, u);
        break;
    case SV_SWAP: u[0] = u[6] = u[9] = u[15] = 1; break;
    case SV_ISWAP:
        u[0] = u[15] = 1;
        u[6] = u[9] = I;
        break;
    case SV_ISINGXX:
        kron(P_X, 2, P_X, 2, a);
        rot_exp(a, 4, p[0], u);
        break;
    case SV_ISINGYY:
        kron(P_Y, 2, P_Y, 2, a);
        rot_exp(a, 4, p[0], u);
        break;
    case SV_ISINGZZ:
        kron(P_Z, 2, P_Z, 2, a);
        rot_exp(a, 4, p[0], u);
        break;
    case SV_TOFFOLI: ctrl_block(P_X, 2, 2, u); break;
    case SV_CSWAP: {
        cplx sw[16] = { 1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1 };
        ctrl_block(sw, 4, 1, u);
        break;
    }
    case SV_MULTIRZ: { /* exp(-i t/2 Z x ... x Z), Z x ... x Z built by kron */
        static cplx zz[MAXD * MAXD], tmp[MAXD * MAXD];
        memcpy(zz, P_Z, sizeof P_Z);
        int dd = 2;
        for (int i = 1; i < k; i++) {
            kron(zz, dd, P_Z, 2, tmp);
            dd *= 2;
            memcpy(zz, tmp, (size_t)dd * dd * sizeof(cplx));
        }
        for (int i = 0; i < d; i++) u[i * d + i] = cexp(-I * p[0] / 2 * zz[i * d + i]);
        break;
    }
    case SV_QUBITUNITARY:
        if (!qu) return -1;
        memcpy(u, qu, (size_t)d * d * sizeof(cplx));
        break;
    case SV_BASISSTATE: { /* X on each wire whose bit is 1 */
        static cplx full[MAXD * MAXD], tmp[MAXD * MAXD];
        int dd = 1;
        full[0] = 1;
        for (int i = 0; i < k; i++) {
            kron(full, dd, ((bits >> i) & 1) ? P_X : P_I, 2, tmp);
            dd *= 2;
            memcpy(full, tmp, (size_t)dd * dd * sizeof(cplx));
        }
        memcpy(u, full, (size_t)d * d * sizeof(cplx));
        break;
    }
    case SV_SINGLEEXC: {
        double cs = cos(p[0] / 2), sn = sin(p[0] / 2);
        u[0] = 1;
        u[15] = 1;
        u[5] = cs;
        u[6] = -sn;
        u[9] = sn;
        u[10] = cs;
        break;
    }
    case SV_DOUBLEEXC: { /* |0011> -> c|0011> + s|1100>, |1100> -> c|1100> - s|0011> */
        double cs = cos(p[0] / 2), sn = sin(p[0] / 2);
        for (int i = 0; i < 16; i++) u[i * 16 + i] = 1;
        u[3 * 16 + 3] = cs;
        u[12 * 16 + 3] = sn;
        u[12 * 16 + 12] = cs;
        u[3 * 16 + 12] = -sn;
        break;
    }
    default: return -1;
    }
    return 0;
}

static int gate_k(SvGate g, Rng *r, int room)
{
    const SvGateInfo *info = sv_gate_info(g);
    if (info->nwires >= 0) return info->nwires;
    int maxk = room < 4 ? room : 4;
    if (g == SV_QUBITUNITARY && maxk > 3) maxk = 3;
    return 1 + (int)rng_below(r, (uint64_t)maxk);
}

static cplx qu_buf[64 * 64];

/* Build a random op of gate g with nc extra controls on nq wires. */
static void make_op(SvOp *op, SvGate g, int nq, int nc, int adjoint, Rng *r)
{
    memset(op, 0, sizeof *op);
    op->gate = g;
    const SvGateInfo *info = sv_gate_info(g);
    op->nwires = gate_k(g, r, nq - nc);
    int w[64];
    random_wires(w, op->nwires + nc, nq, r);
    memcpy(op->ctrl, w, (size_t)nc * sizeof(int));
    memcpy(op->wires, w + nc, (size_t)op->nwires * sizeof(int));
    op->nctrl = nc;
    op->nparams = info->nparams;
    for (int i = 0; i < op->nparams; i++) op->params[i] = (rng_uniform(r) - 0.5) * 4 * M_PI;
    op->adjoint = adjoint;
    if (g == SV_QUBITUNITARY) {
        random_unitary(qu_buf, 1 << op->nwires, r);
        op->matrix = qu_buf;
    }
    if (g == SV_BASISSTATE) op->bits = rng_next(r) & ((1u << op->nwires) - 1);
}

/* The reference full operator of op (adjoint and controls included). */
static void ref_full(const SvOp *op, int nq, cplx *full)
{
    static cplx u[MAXD * MAXD], cu[MAXD * MAXD];
    int k = op->nwires, d = 1 << k;
    ck_assert_int_eq(ref_small(op->gate, op->params, k, op->matrix, op->bits, u), 0);
    if (op->adjoint) dag(u, d);
    ctrl_block(u, d, op->nctrl, cu);
    int aw[64];
    memcpy(aw, op->ctrl, (size_t)op->nctrl * sizeof(int));
    memcpy(aw + op->nctrl, op->wires, (size_t)k * sizeof(int));
    embed(cu, aw, op->nctrl + k, nq, full);
}

/* Apply op to a random state with sv_apply and with the reference. */
static double check_apply(const SvOp *op, int nq, int simd, Rng *r)
{
    static cplx full[MAXD * MAXD];
    cplx psi[MAXD], want[MAXD];
    size_t D = (size_t)1 << nq;
    random_state(psi, D, r);
    SvState s;
    ck_assert_int_eq(sv_init(&s, nq), 0);
    s.simd = simd;
    memcpy(s.amp, psi, D * sizeof(cplx));
    char err[256] = "";
    int rc = sv_apply(&s, op, err, sizeof err);
    ck_assert_msg(rc == 0, "sv_apply failed: %s", err);
    ref_full(op, nq, full);
    matvec(full, psi, want, (int)D);
    double e = maxdiff(s.amp, want, D);
    sv_free(&s);
    return e;
}

/* ---- gates against the reference ------------------------------------- */

static void gate_sweep(int nc, int adjoint)
{
    Rng r;
    rng_seed(&r, 1234 + (uint64_t)nc * 10 + (uint64_t)adjoint);
    static const int sizes[] = { 3, 4, 5, 7 };
    for (int g = 0; g < SV_NGATES; g++) {
        const SvGateInfo *info = sv_gate_info((SvGate)g);
        int need = (info->nwires > 0 ? info->nwires : 1) + nc;
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            int nq = sizes[si] < need ? need : sizes[si];
            for (int trial = 0; trial < 6; trial++)
                for (int simd = 0; simd <= SV_SIMD_AVX512; simd++) {
                    SvOp op;
                    make_op(&op, (SvGate)g, nq, nc, adjoint, &r);
                    double e = check_apply(&op, nq, simd, &r);
                    ck_assert_msg(e < TOL, "%s nq=%d nc=%d adj=%d simd=%d: error %g", info->name,
                                  nq, nc, adjoint, simd, e);
                }
        }
    }
}

START_TEST(test_gates_plain) { gate_sweep(0, 0); }
END_TEST
START_TEST(test_gates_adjoint) { gate_sweep(0, 1); }
END_TEST
START_TEST(test_gates_ctrl1)
{
    gate_sweep(1, 0);
    gate_sweep(1, 1);
}
END_TEST
START_TEST(test_gates_ctrl2)
{
    gate_sweep(2, 0);
    gate_sweep(2, 1);
}
END_TEST

/* Every wire placement (low bits especially) for the 1- and 2-wire kinds. */
START_TEST(test_gates_all_placements)
{
    Rng r;
    rng_seed(&r, 77);
    SvGate gs[] = { SV_HADAMARD, SV_PAULIX, SV_RZ,    SV_PHASESHIFT, SV_CNOT,    SV_CRY,
                    SV_CZ,       SV_SWAP,   SV_ISWAP, SV_ISINGXX,    SV_ISINGZZ, SV_SINGLEEXC };
    for (int nq = 1; nq <= 6; nq++)
        for (size_t gi = 0; gi < sizeof gs / sizeof gs[0]; gi++) {
            const SvGateInfo *info = sv_gate_info(gs[gi]);
            if (info->nwires > nq) continue;
            for (int a = 0; a < nq; a++)
                for (int b = 0; b < nq; b++) {
                    if (info->nwires == 1 && b > 0) continue;
                    if (info->nwires == 2 && a == b) continue;
                    for (int c = -1; c < nq; c++) {
                        if (c == a || (info->nwires == 2 && c == b)) continue;
                        for (int simd = 0; simd <= SV_SIMD_AVX512; simd++) {
                            SvOp op;
                            make_op(&op, gs[gi], nq, 0, 0, &r);
                            op.wires[0] = a;
                            op.wires[1] = b;
                            if (c >= 0) {
                                op.nctrl = 1;
                                op.ctrl[0] = c;
                            }
                            double e = check_apply(&op, nq, simd, &r);
                            ck_assert_msg(e < TOL, "%s nq=%d wires %d %d ctrl %d simd %d: %g",
                                          info->name, nq, a, b, c, simd, e);
                        }
                    }
                }
        }
}
END_TEST

/* Bigger states (every kernel shape: long runs, blocks, two-stream walks,
   diagonal segments): a controlled 1-qubit gate applied by a plain loop
   over the basis, with the 2x2 written out in ref_small. */
START_TEST(test_gates_large)
{
    Rng r;
    rng_seed(&r, 101);
    SvGate gs[] = { SV_HADAMARD, SV_RX, SV_PAULIX, SV_RZ, SV_PHASESHIFT, SV_SX, SV_PAULIY };
    for (int nq = 10; nq <= 13; nq += 3) {
        size_t D = (size_t)1 << nq;
        cplx *psi = malloc(D * sizeof(cplx)), *want = malloc(D * sizeof(cplx));
        for (size_t gi = 0; gi < sizeof gs / sizeof gs[0]; gi++)
            for (int t = 0; t < nq; t++)
                for (int nc = 0; nc <= 2; nc++)
                    for (int simd = 0; simd <= SV_SIMD_AVX512; simd++) {
                        SvOp op;
                        make_op(&op, gs[gi], nq, nc, (int)rng_below(&r, 2), &r);
                        for (int k = 0; k < nc; k++) /* keep the target free */
                            if (op.ctrl[k] == t) op.ctrl[k] = op.wires[0];
                        op.wires[0] = t;
                        cplx u[256]; /* ref_small's largest, as the compiler sees it */
                        ref_small(op.gate, op.params, 1, NULL, 0, u);
                        if (op.adjoint) dag(u, 2);
                        random_state(psi, D, &r);
                        SvState s;
                        ck_assert_int_eq(sv_init(&s, nq), 0);
                        s.simd = simd;
                        memcpy(s.amp, psi, D * sizeof(cplx));
                        ck_assert_int_eq(sv_apply(&s, &op, NULL, 0), 0);
                        memcpy(want, psi, D * sizeof(cplx));
                        size_t tb = (size_t)1 << (nq - 1 - t), cm = 0;
                        for (int k = 0; k < nc; k++) cm |= (size_t)1 << (nq - 1 - op.ctrl[k]);
                        for (size_t i = 0; i < D; i++)
                            if (!(i & tb) && (i & cm) == cm) {
                                cplx x = psi[i], y = psi[i | tb];
                                want[i] = u[0] * x + u[1] * y;
                                want[i | tb] = u[2] * x + u[3] * y;
                            }
                        double e = maxdiff(s.amp, want, D);
                        ck_assert_msg(e < TOL, "%s nq=%d t=%d nc=%d simd=%d: %g",
                                      sv_gate_info(op.gate)->name, nq, t, nc, simd, e);
                        sv_free(&s);
                    }
        free(psi);
        free(want);
    }
}
END_TEST

/* ---- line kernels: low placements on every instruction level ---------- */

/* op on psi by a plain loop over the basis: the controlled small matrix
   (ref_small, adjoint, ctrl_block) gathered and scattered per group of
   amplitudes; any state size. */
static void ref_apply(const SvOp *op, int nq, const cplx *psi, cplx *out)
{
    static cplx u[MAXD * MAXD], cu[MAXD * MAXD];
    int k = op->nwires, nc = op->nctrl, d = 1 << k, K = k + nc, D = d << nc;
    ck_assert_int_le(K, 6);
    ck_assert_int_eq(ref_small(op->gate, op->params, k, op->matrix, op->bits, u), 0);
    if (op->adjoint) dag(u, d);
    ctrl_block(u, d, nc, cu);
    size_t bitof[6], mask = 0, off[64];
    for (int i = 0; i < K; i++) {
        int w = i < nc ? op->ctrl[i] : op->wires[i - nc];
        bitof[i] = (size_t)1 << (nq - 1 - w);
        mask |= bitof[i];
    }
    for (int r = 0; r < D; r++) {
        off[r] = 0;
        for (int i = 0; i < K; i++)
            if ((r >> (K - 1 - i)) & 1) off[r] |= bitof[i];
    }
    size_t dim = (size_t)1 << nq;
    for (size_t i = 0; i < dim; i++) {
        if (i & mask) continue;
        for (int r = 0; r < D; r++) {
            cplx acc = 0;
            for (int c = 0; c < D; c++) acc += cu[r * D + c] * psi[i + off[c]];
            out[i + off[r]] = acc;
        }
    }
}

/* The gates whose kernels are pair, exchange or 4x4 jobs (the line
   kernels), a diagonal or two for contrast; QubitUnitary on 1 and 2
   wires. */
static const struct {
    SvGate g;
    int k;
} line_gates[] = {
    { SV_HADAMARD, 1 },  { SV_RX, 1 },           { SV_PAULIX, 1 },       { SV_PAULIY, 1 },
    { SV_SX, 1 },        { SV_RZ, 1 },           { SV_CNOT, 2 },         { SV_CY, 2 },
    { SV_CRX, 2 },       { SV_CZ, 2 },           { SV_SWAP, 2 },         { SV_ISWAP, 2 },
    { SV_SINGLEEXC, 2 }, { SV_ISINGXX, 2 },      { SV_TOFFOLI, 3 },      { SV_CSWAP, 3 },
    { SV_DOUBLEEXC, 4 }, { SV_QUBITUNITARY, 1 }, { SV_QUBITUNITARY, 2 }, { SV_BASISSTATE, 2 },
};

/* A random op of line_gates[gi] with nc extra controls; wires from bits[]
   (bit positions, 0 = the last wire), distinct, in random order. */
static void line_op(SvOp *op, int gi, int nc, int nq, const int *bits, int nbits, Rng *r)
{
    SvGate g = line_gates[gi].g;
    int k = line_gates[gi].k;
    make_op(op, g, nq, 0, (int)rng_below(r, 2), r);
    op->nwires = k;
    op->nctrl = nc;
    int pick[8], n = 0;
    while (n < k + nc) {
        int b = bits[rng_below(r, (uint64_t)nbits)], dup = 0;
        for (int i = 0; i < n; i++) dup |= pick[i] == b;
        if (!dup) pick[n++] = b;
    }
    for (int i = 0; i < nc; i++) op->ctrl[i] = nq - 1 - pick[i];
    for (int i = 0; i < k; i++) op->wires[i] = nq - 1 - pick[nc + i];
    if (g == SV_QUBITUNITARY) {
        random_unitary(qu_buf, 1 << k, r);
        op->matrix = qu_buf;
    }
    if (g == SV_BASISSTATE) op->bits = 1 + rng_below(r, 3);
}

/* Why: every level this CPU has (forced lower through SvState.simd), on
   `cases` random placements per gate and control count drawn from bits[],
   each against ref_apply; with a team when given (nq >= SV_PAR_QUBITS:
   the parts split the walks mid-run). */
static void line_sweep(int nq, const int *bits, int nbits, int cases, int maxk, SvTeam *team,
                       Rng *r)
{
    size_t D = (size_t)1 << nq;
    cplx *psi = malloc(D * sizeof(cplx)), *want = malloc(D * sizeof(cplx));
    SvState s;
    ck_assert_int_eq(sv_init(&s, nq), 0);
    sv_set_threads(&s, team, 2);
    for (size_t gi = 0; gi < sizeof line_gates / sizeof line_gates[0]; gi++)
        for (int nc = 0; nc <= 2; nc++) {
            if (line_gates[gi].k + nc > nbits || line_gates[gi].k + nc > nq) continue;
            if (line_gates[gi].k + nc > maxk) continue;
            for (int c = 0; c < cases; c++) {
                SvOp op;
                line_op(&op, (int)gi, nc, nq, bits, nbits, r);
                random_state(psi, D, r);
                ref_apply(&op, nq, psi, want);
                for (int lv = SV_SIMD_C; lv <= sv_simd_level(); lv++) {
                    memcpy(s.amp, psi, D * sizeof(cplx));
                    s.simd = lv;
                    char err[256] = "";
                    ck_assert_msg(sv_apply(&s, &op, err, sizeof err) == 0, "%s", err);
                    double e = maxdiff(s.amp, want, D);
                    ck_assert_msg(
                        e<TOL, "%s nq=%d level=%d ctrl %d %d wires %d %d %d %d: %g",
                            sv_gate_info(op.gate)->name, nq, lv, nc> 0
                            ? op.ctrl[0]
                            : -1,
                        nc > 1 ? op.ctrl[1] : -1, op.wires[0], op.nwires > 1 ? op.wires[1] : -1,
                        op.nwires > 2 ? op.wires[2] : -1, op.nwires > 3 ? op.wires[3] : -1, e);
                }
            }
        }
    sv_free(&s);
    free(psi);
    free(want);
}

/* Why: the two SIMD tests below apply op to psi on a (AVX2) and on b
   (AVX-512); 1 when both give the same bytes. */
static int levels_agree(SvState *a, SvState *b, const SvOp *op, const cplx *psi, size_t D)
{
    memcpy(a->amp, psi, D * sizeof(cplx));
    memcpy(b->amp, psi, D * sizeof(cplx));
    char err[256] = "";
    ck_assert_msg(sv_apply(a, op, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(sv_apply(b, op, err, sizeof err) == 0, "%s", err);
    return memcmp(a->amp, b->amp, D * sizeof(cplx)) == 0;
}

/* The AVX2 and AVX-512 levels run the same arithmetic per amplitude: the
   same bytes, for the line kernels (pairs, exchanges, 4x4) and the
   diagonal gates (Z S T RZ PhaseShift CZ CRZ CPhase IsingZZ MultiRZ:
   diag_range_avx2 against diag_range_512), with extra controls, on
   states of every size from one chunk of 8 up (the fused passes run the
   kernels on chunks). Skipped without AVX-512. */
START_TEST(test_simd_levels_same_bytes)
{
    if (sv_simd_level() < SV_SIMD_AVX512) return;
    static const SvGate gates[] = { SV_PAULIZ, SV_S,        SV_T,      SV_RZ,      SV_PHASESHIFT,
                                    SV_CZ,     SV_CRZ,      SV_CPHASE, SV_ISINGZZ, SV_MULTIRZ,
                                    SV_RX,     SV_HADAMARD, SV_CNOT,   SV_ISWAP,   SV_ISINGXX };
    Rng r;
    rng_seed(&r, 2027);
    for (int nq = 3; nq <= 11; nq++) {
        size_t D = (size_t)1 << nq;
        cplx *psi = malloc(D * sizeof(cplx));
        SvState a, b;
        ck_assert_int_eq(sv_init(&a, nq), 0);
        ck_assert_int_eq(sv_init(&b, nq), 0);
        a.simd = SV_SIMD_AVX2;
        b.simd = SV_SIMD_AVX512;
        for (size_t gi = 0; gi < sizeof gates / sizeof gates[0]; gi++)
            for (int c = 0; c < 12; c++) {
                int k = sv_gate_info(gates[gi])->nwires < 0 ? 3 : sv_gate_info(gates[gi])->nwires;
                int nc = (int)rng_below(&r, 3);
                if (k + nc > nq) nc = nq - k;
                SvOp op;
                make_op(&op, gates[gi], nq, nc, (int)rng_below(&r, 2), &r);
                random_state(psi, D, &r);
                ck_assert_msg(levels_agree(&a, &b, &op, psi, D),
                              "%s nq=%d nc=%d: AVX2 and AVX-512 differ",
                              sv_gate_info(op.gate)->name, nq, nc);
            }
        sv_free(&a);
        sv_free(&b);
        free(psi);
    }
}
END_TEST

/* A state whose parts come from a few values, chosen to hit what the
   AVX-512 kernels' term patterns must get right (kernels_block.c,
   terms512): +0 and -0, the gate's own cos and sin (so that a kept sum
   cancels to an exact zero: c*s - s*c), equal and opposite halves (the
   Hadamard's cancellations), a subnormal, and rarely Inf and NaN (x86's
   default NaN, so that no payload can differ). */
static void hazard_state(cplx *psi, size_t D, double c, double sn, Rng *r)
{
    const double nan = -__builtin_nan(""), tiny = 4e-310;
    const double vals[] = { 0.0, -0.0, c, -c, sn, -sn, M_SQRT1_2, -M_SQRT1_2, tiny, 0.5 };
    double *x = (double *)psi;
    int odd = rng_below(r, 4) == 0; /* one state in four holds an Inf or a NaN */
    for (size_t i = 0; i < 2 * D; i++) {
        x[i] = vals[rng_below(r, sizeof vals / sizeof vals[0])];
        if (odd && rng_below(r, 64) == 0) x[i] = rng_below(r, 2) ? nan : -INFINITY;
    }
}

/* The diagonal kernels' blocks (a gate whose lowest key or control bit is
   bit 3, 4 or 5 goes by blocks of 64 amplitudes, its rows read once per
   block: both in registers with AVX-512, one key's chunks then the
   other's with AVX2) give the bytes of the segment walk (diag_walk): the
   AVX2 and the AVX-512 blocks against the AVX2 walk, every diagonal gate
   with its first wire on each bit, with 0-2 controls of which one often
   on bits 3..5, on states of signed zeros, Inf and NaN (where a skipped
   row of ones and a multiplication by 1 differ) and on random ones,
   serial and on a team of 3 (whose slices start and end inside blocks).
   The AVX-512 part is skipped without AVX-512, all of it without AVX2. */
START_TEST(test_diag_blocks_same_bytes)
{
    if (sv_simd_level() < SV_SIMD_AVX2) return;
    int has512 = sv_simd_level() >= SV_SIMD_AVX512;
    static const SvGate gates[] = { SV_PAULIZ, SV_S,   SV_T,      SV_RZ,      SV_PHASESHIFT,
                                    SV_CZ,     SV_CRZ, SV_CPHASE, SV_ISINGZZ, SV_MULTIRZ };
    SvTeam *team = sv_team_new(3);
    ck_assert_ptr_nonnull(team);
    Rng r;
    rng_seed(&r, 4099);
    long cases = 0;
    for (int nq = 6; nq <= SV_PAR_QUBITS + 1; nq += nq < 10 ? 1 : SV_PAR_QUBITS + 1 - 10) {
        size_t D = (size_t)1 << nq;
        cplx *psi = malloc(D * sizeof(cplx));
        SvState walk, b2, b5;
        ck_assert_int_eq(sv_init(&walk, nq), 0);
        ck_assert_int_eq(sv_init(&b2, nq), 0);
        ck_assert_int_eq(sv_init(&b5, nq), 0);
        walk.simd = b2.simd = SV_SIMD_AVX2;
        walk.diag_walk = 1;
        b5.simd = SV_SIMD_AVX512;
        for (size_t gi = 0; gi < sizeof gates / sizeof gates[0]; gi++)
            for (int bit = 0; bit < nq; bit++)
                for (int rep = 0; rep < 3; rep++) {
                    int k = sv_gate_info(gates[gi])->nwires < 0 ? 2 + (int)rng_below(&r, 2)
                                                                : sv_gate_info(gates[gi])->nwires;
                    int nc = (int)rng_below(&r, 3);
                    SvOp op;
                    make_op(&op, gates[gi], nq, nc, (int)rng_below(&r, 2), &r);
                    op.nwires = k;
                    /* wires: the first on `bit`, a control on bits 3..5
                       one time in two, the rest anywhere else */
                    int used[64] = { 0 }, w[8], nw = 0;
                    w[nw++] = nq - 1 - bit;
                    used[nq - 1 - bit] = 1;
                    if (nc && rng_below(&r, 2)) {
                        int cb = 3 + (int)rng_below(&r, 3);
                        if (!used[nq - 1 - cb]) {
                            w[nw++] = nq - 1 - cb;
                            used[nq - 1 - cb] = 1;
                        }
                    }
                    while (nw < k + nc) {
                        int x = (int)rng_below(&r, (uint32_t)nq);
                        if (!used[x]) {
                            used[x] = 1;
                            w[nw++] = x;
                        }
                    }
                    /* targets first, then controls (the placed control
                       is a control when there is one) */
                    op.wires[0] = w[0];
                    int t = 1, c = 0;
                    for (int i = 1; i < nw; i++) {
                        if (c < nc && (i == 1 || t == k))
                            op.ctrl[c++] = w[i];
                        else
                            op.wires[t++] = w[i];
                    }
                    op.nctrl = nc;
                    if (rep == 0)
                        random_state(psi, D, &r);
                    else
                        hazard_state(psi, D, 1.0, 0.0, &r);
                    sv_set_threads(&b2, rep == 2 ? team : NULL, rep == 2 ? 3 : 1);
                    sv_set_threads(&b5, rep == 2 ? team : NULL, rep == 2 ? 3 : 1);
                    ck_assert_msg(levels_agree(&walk, &b2, &op, psi, D),
                                  "%s nq=%d bit=%d nc=%d rep=%d: AVX2 blocks and walk differ",
                                  sv_gate_info(op.gate)->name, nq, bit, nc, rep);
                    if (has512)
                        ck_assert_msg(levels_agree(&walk, &b5, &op, psi, D),
                                      "%s nq=%d bit=%d nc=%d rep=%d: AVX-512 blocks and the walk "
                                      "differ",
                                      sv_gate_info(op.gate)->name, nq, bit, nc, rep);
                    cases++;
                }
        sv_free(&walk);
        sv_free(&b2);
        sv_free(&b5);
        free(psi);
    }
    ck_assert_int_gt(cases, 1000);
    sv_team_free(team);
}
END_TEST

/* The term patterns of the AVX-512 pair kernels (RX, RY, Hadamard, real
   and RX-shaped 2x2 matrices, controlled or not, every placement) give
   the AVX2 kernel's bytes on states full of signed zeros, exact
   cancellations, subnormals, Inf and NaN. Skipped without AVX-512. */
START_TEST(test_term_patterns_same_bytes)
{
    if (sv_simd_level() < SV_SIMD_AVX512) return;
    static const SvGate gates[] = { SV_RX, SV_RY, SV_HADAMARD, SV_CRX, SV_CRY, SV_QUBITUNITARY };
    Rng r;
    rng_seed(&r, 2029);
    for (int nq = 1; nq <= 9; nq++) {
        size_t D = (size_t)1 << nq;
        cplx *psi = malloc(D * sizeof(cplx));
        SvState a, b;
        ck_assert_int_eq(sv_init(&a, nq), 0);
        ck_assert_int_eq(sv_init(&b, nq), 0);
        a.simd = SV_SIMD_AVX2;
        b.simd = SV_SIMD_AVX512;
        for (size_t gi = 0; gi < sizeof gates / sizeof gates[0]; gi++)
            for (int cse = 0; cse < 60; cse++) {
                int k = gates[gi] == SV_CRX || gates[gi] == SV_CRY ? 2 : 1;
                int nc = (int)rng_below(&r, 3);
                if (k + nc > nq) nc = nq - k;
                if (nc < 0) continue;
                SvOp op;
                make_op(&op, gates[gi], nq, nc, (int)rng_below(&r, 2), &r);
                if (rng_below(&r, 2)) op.params[0] = M_PI / 2; /* cos = sin: more cancellations */
                double th = op.params[0], c = cos(th / 2), sn = sin(th / 2);
                if (gates[gi] == SV_QUBITUNITARY) { /* 2x2, real or RX-shaped: c, -i s */
                    op.nwires = 1;
                    int rx = (int)rng_below(&r, 2);
                    qu_buf[0] = c;
                    qu_buf[1] = rx ? -I * sn : -sn;
                    qu_buf[2] = rx ? -I * sn : sn;
                    qu_buf[3] = c;
                    op.matrix = qu_buf;
                }
                hazard_state(psi, D, c, sn, &r);
                ck_assert_msg(levels_agree(&a, &b, &op, psi, D),
                              "%s nq=%d nc=%d wire %d: AVX2 and AVX-512 differ",
                              sv_gate_info(op.gate)->name, nq, nc, op.wires[op.nwires - 1]);
            }
        sv_free(&a);
        sv_free(&b);
        free(psi);
    }
}
END_TEST

/* Small states: every bit is low, many placements each. */
START_TEST(test_line_kernels_small)
{
    Rng r;
    rng_seed(&r, 19);
    int bits[6] = { 0, 1, 2, 3, 4, 5 };
    for (int nq = 2; nq <= 6; nq++) line_sweep(nq, bits, nq, 24, 6, NULL, &r);
}
END_TEST

/* Bigger states, bits {0, 1, 2, 3, mid, top}: the walks between fixed
   high bits (stepping, runs, one run, and on states of 2^20 amplitudes
   the prefetch cursor a fixed bit 9..12 turns on), serial and on a team
   of 2. */
START_TEST(test_line_kernels_large)
{
    Rng r;
    rng_seed(&r, 23);
    SvTeam *team = sv_team_new(2);
    ck_assert_ptr_nonnull(team);
    int b10[6] = { 0, 1, 2, 3, 5, 9 }, b16[6] = { 0, 1, 2, 3, 10, 15 };
    line_sweep(10, b10, 6, 6, 6, NULL, &r);
    line_sweep(16, b16, 6, 3, 6, team, &r);
    /* from 2^20 amplitudes on the kernels prefetch; bit 9 or 11 fixed:
       through the second index */
    int b20[6] = { 0, 1, 2, 9, 11, 19 };
    line_sweep(20, b20, 6, 1, 3, team, &r);
    sv_team_free(team);
    /* the levels: 0 portable, 1 AVX2, 2 AVX-512; the CPU may have fewer */
    ck_assert_int_ge(sv_simd_level(), SV_SIMD_C);
    ck_assert_int_le(sv_simd_level(), SV_SIMD_AVX512);
}
END_TEST

/* Every placement of the two- and three-wire exchanges and controlled
   gates on bits {0, 1, 2} of a 4-wire state (plus a high control), on
   every level: the in-line lane permutations one by one. */
START_TEST(test_line_kernels_low_bits)
{
    Rng r;
    rng_seed(&r, 29);
    enum { NQ = 5 };
    cplx psi[1 << NQ], want[1 << NQ];
    SvGate gs[] = { SV_CNOT, SV_CRX, SV_SWAP, SV_ISWAP, SV_TOFFOLI, SV_CSWAP, SV_QUBITUNITARY };
    for (size_t gi = 0; gi < sizeof gs / sizeof gs[0]; gi++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                for (int c = -1; c < NQ; c++) {
                    int k3 = gs[gi] == SV_TOFFOLI || gs[gi] == SV_CSWAP;
                    if (a == b || c == a || c == b || (k3 && c < 0)) continue;
                    SvOp op;
                    make_op(&op, gs[gi], NQ, 0, 0, &r);
                    if (gs[gi] == SV_QUBITUNITARY) {
                        op.nwires = 2;
                        random_unitary(qu_buf, 4, &r);
                        op.matrix = qu_buf;
                    }
                    int w[3] = { NQ - 1 - a, NQ - 1 - b, NQ - 1 - c };
                    if (k3) { /* the third wire: c as the target (or second swap wire) */
                        op.wires[0] = w[0];
                        op.wires[1] = w[1];
                        op.wires[2] = w[2];
                    } else {
                        op.wires[0] = w[0];
                        op.wires[1] = w[1];
                        if (c >= 0) {
                            op.nctrl = 1;
                            op.ctrl[0] = w[2];
                        }
                    }
                    random_state(psi, 1 << NQ, &r);
                    ref_apply(&op, NQ, psi, want);
                    for (int lv = SV_SIMD_C; lv <= sv_simd_level(); lv++) {
                        SvState s;
                        ck_assert_int_eq(sv_init(&s, NQ), 0);
                        s.simd = lv;
                        memcpy(s.amp, psi, sizeof psi);
                        ck_assert_int_eq(sv_apply(&s, &op, NULL, 0), 0);
                        ck_assert_msg(maxdiff(s.amp, want, 1 << NQ) < TOL,
                                      "%s bits %d %d %d level %d", sv_gate_info(op.gate)->name, a,
                                      b, c, lv);
                        sv_free(&s);
                    }
                }
}
END_TEST

/* sv_apply_matrix (non-unitary 2x2 and 4x4: the adjoint method's
   derivatives) on low wires, every level. */
START_TEST(test_line_kernels_apply_matrix)
{
    Rng r;
    rng_seed(&r, 31);
    static cplx full[MAXD * MAXD];
    enum { NQ = 6 };
    cplx psi[1 << NQ], want[1 << NQ], m[16];
    for (int k = 1; k <= 2; k++)
        for (int a = 0; a < NQ; a++)
            for (int b = 0; b < NQ; b++) {
                if (k == 1 && b > 0) continue;
                if (k == 2 && a == b) continue;
                int w[2] = { NQ - 1 - a, NQ - 1 - b };
                for (int i = 0; i < (1 << k) * (1 << k); i++)
                    m[i] = rng_normal(&r) + I * rng_normal(&r);
                random_state(psi, 1 << NQ, &r);
                embed(m, w, k, NQ, full);
                matvec(full, psi, want, 1 << NQ);
                for (int lv = SV_SIMD_C; lv <= sv_simd_level(); lv++) {
                    SvState s;
                    ck_assert_int_eq(sv_init(&s, NQ), 0);
                    s.simd = lv;
                    memcpy(s.amp, psi, sizeof psi);
                    ck_assert_int_eq(sv_apply_matrix(&s, w, k, m, NULL, 0), 0);
                    ck_assert_msg(maxdiff(s.amp, want, 1 << NQ) < 1e-11, "k=%d bits %d %d level %d",
                                  k, a, b, lv);
                    sv_free(&s);
                }
            }
}
END_TEST

START_TEST(test_embed_is_kron)
{
    /* the reference embedding agrees with explicit Kronecker products */
    cplx a[64], b[64], full[64];
    Rng r;
    rng_seed(&r, 5);
    cplx u[4];
    random_unitary(u, 2, &r);
    int w = 1;
    embed(u, &w, 1, 3, full);
    kron(P_I, 2, u, 2, a);
    kron(a, 4, P_I, 2, b);
    ck_assert(maxdiff(full, b, 64) < 1e-15);
    cplx u4[16];
    random_unitary(u4, 4, &r);
    int ww[2] = { 1, 2 };
    embed(u4, ww, 2, 3, full);
    kron(P_I, 2, u4, 4, a);
    ck_assert(maxdiff(full, a, 64) < 1e-15);
}
END_TEST

START_TEST(test_basis_state)
{
    SvState s;
    ck_assert_int_eq(sv_init(&s, 4), 0);
    SvOp op;
    memset(&op, 0, sizeof op);
    op.gate = SV_BASISSTATE;
    op.nwires = 3;
    op.wires[0] = 3;
    op.wires[1] = 0;
    op.wires[2] = 2;
    op.bits = 0x5; /* wire 3 = 1, wire 0 = 0, wire 2 = 1 -> |0011> */
    ck_assert_int_eq(sv_apply(&s, &op, NULL, 0), 0);
    ck_assert(cabs(s.amp[3] - 1) < TOL);
    sv_reset(&s);
    ck_assert(cabs(s.amp[0] - 1) < TOL && cabs(s.amp[3]) == 0);
    op.bits = 0x8;
    char err[128];
    ck_assert_int_eq(sv_apply(&s, &op, err, sizeof err), -1);
    ck_assert_str_eq(err, "BasisState: bits beyond its 3 wires");
    sv_free(&s);
}
END_TEST

START_TEST(test_tiny_states)
{
    Rng r;
    rng_seed(&r, 9);
    SvState s;
    ck_assert_int_eq(sv_init(&s, 0), 0);
    ck_assert_uint_eq(s.dim, 1);
    ck_assert(cabs(s.amp[0] - 1) == 0);
    SvOp op;
    make_op(&op, SV_PAULIX, 1, 0, 0, &r);
    ck_assert_int_eq(sv_apply(&s, &op, NULL, 0), -1);
    double pr;
    ck_assert_int_eq(sv_probs(&s, NULL, 0, &pr, NULL, 0), 0);
    ck_assert(fabs(pr - 1) < TOL);
    sv_free(&s);
    for (int nq = 1; nq <= 2; nq++)
        for (int g = 0; g < SV_NGATES; g++) {
            const SvGateInfo *info = sv_gate_info((SvGate)g);
            if (info->nwires > nq) continue;
            for (int simd = 0; simd <= SV_SIMD_AVX512; simd++) {
                make_op(&op, (SvGate)g, nq, 0, simd, &r);
                double e = check_apply(&op, nq, simd, &r);
                ck_assert_msg(e < TOL, "%s nq=%d: %g", info->name, nq, e);
            }
        }
}
END_TEST

START_TEST(test_apply_matrix)
{
    Rng r;
    rng_seed(&r, 11);
    static cplx full[MAXD * MAXD];
    for (int nq = 3; nq <= 6; nq++)
        for (int k = 1; k <= 3; k++)
            for (int simd = 0; simd <= SV_SIMD_AVX512; simd++) {
                int d = 1 << k, w[8];
                cplx m[64], psi[MAXD], want[MAXD];
                for (int i = 0; i < d * d; i++) m[i] = rng_normal(&r) + I * rng_normal(&r);
                random_wires(w, k, nq, &r);
                size_t D = (size_t)1 << nq;
                random_state(psi, D, &r);
                SvState s;
                ck_assert_int_eq(sv_init(&s, nq), 0);
                s.simd = simd;
                memcpy(s.amp, psi, D * sizeof(cplx));
                ck_assert_int_eq(sv_apply_matrix(&s, w, k, m, NULL, 0), 0);
                embed(m, w, k, nq, full);
                matvec(full, psi, want, (int)D);
                ck_assert(maxdiff(s.amp, want, D) < 1e-11);
                sv_free(&s);
            }
}
END_TEST

/* ---- matrices and derivatives ---------------------------------------- */

START_TEST(test_op_matrix)
{
    Rng r;
    rng_seed(&r, 21);
    static cplx got[MAXD * MAXD], want[MAXD * MAXD], u[MAXD * MAXD];
    for (int g = 0; g < SV_NGATES; g++)
        for (int nc = 0; nc <= 2; nc++)
            for (int adj = 0; adj < 2; adj++) {
                SvOp op;
                make_op(&op, (SvGate)g, 8, nc, adj, &r);
                int k = op.nwires, d = 1 << k;
                ck_assert_int_eq(sv_op_matrix(&op, got, NULL, 0), 0);
                ck_assert_int_eq(ref_small(op.gate, op.params, k, op.matrix, op.bits, u), 0);
                if (adj) dag(u, d);
                ctrl_block(u, d, nc, want);
                int D = d << nc;
                ck_assert_msg(maxdiff(got, want, (size_t)D * D) < TOL, "%s nc=%d adj=%d",
                              sv_gate_info((SvGate)g)->name, nc, adj);
            }
}
END_TEST

START_TEST(test_op_dmatrix)
{
    Rng r;
    rng_seed(&r, 22);
    static cplx got[MAXD * MAXD], up[MAXD * MAXD], dn[MAXD * MAXD], bu[MAXD * MAXD],
        bd[MAXD * MAXD];
    const double h = 1e-5;
    for (int g = 0; g < SV_NGATES; g++) {
        const SvGateInfo *info = sv_gate_info((SvGate)g);
        for (int nc = 0; nc <= 1; nc++)
            for (int adj = 0; adj < 2; adj++) {
                SvOp op;
                make_op(&op, (SvGate)g, 8, nc, adj, &r);
                if (info->nparams == 0) {
                    ck_assert_int_eq(sv_op_dmatrix(&op, 0, got, NULL, 0), -1);
                    continue;
                }
                int k = op.nwires, d = 1 << k, D = d << nc;
                for (int p = 0; p < info->nparams; p++) {
                    ck_assert_int_eq(sv_op_dmatrix(&op, p, got, NULL, 0), 0);
                    double pp[3];
                    memcpy(pp, op.params, sizeof pp);
                    pp[p] += h;
                    ref_small(op.gate, pp, k, NULL, 0, bu);
                    pp[p] -= 2 * h;
                    ref_small(op.gate, pp, k, NULL, 0, bd);
                    if (adj) {
                        dag(bu, d);
                        dag(bd, d);
                    }
                    ctrl_block(bu, d, nc, up);
                    ctrl_block(bd, d, nc, dn);
                    for (int i = 0; i < D * D; i++) up[i] = (up[i] - dn[i]) / (2 * h);
                    ck_assert_msg(maxdiff(got, up, (size_t)D * D) < 1e-6, "%s p=%d nc=%d adj=%d",
                                  info->name, p, nc, adj);
                }
                ck_assert_int_eq(sv_op_dmatrix(&op, info->nparams, got, NULL, 0), -1);
            }
    }
}
END_TEST

/* ---- observables ------------------------------------------------------ */

/* Dense matrix of a Pauli sum (true Pauli Y). */
static void pauli_dense(const SvPauli *t, int n, int nq, cplx *H)
{
    static cplx w[MAXD * MAXD], tmp[MAXD * MAXD];
    int D = 1 << nq;
    memset(H, 0, (size_t)D * D * sizeof(cplx));
    for (int k = 0; k < n; k++) {
        w[0] = 1;
        int d = 1;
        for (int q = 0; q < nq; q++) {
            int x = (t[k].x >> q) & 1, z = (t[k].z >> q) & 1;
            const cplx *p = x && z ? P_Y : x ? P_X : z ? P_Z : P_I;
            kron(w, d, p, 2, tmp);
            d *= 2;
            memcpy(w, tmp, (size_t)d * d * sizeof(cplx));
        }
        for (int i = 0; i < D * D; i++) H[i] += t[k].coeff * w[i];
    }
}

static void random_terms(SvPauli *t, int n, int nq, Rng *r)
{
    for (int k = 0; k < n; k++) {
        t[k].coeff = rng_normal(r);
        t[k].x = rng_next(r) & ((1u << nq) - 1);
        t[k].z = rng_next(r) & ((1u << nq) - 1);
        if (rng_below(r, 4) == 0) t[k].x = 0; /* plenty of Z-only terms */
    }
}

START_TEST(test_expval_var)
{
    Rng r;
    rng_seed(&r, 31);
    static cplx H[MAXD * MAXD], H2[MAXD * MAXD];
    for (int nq = 1; nq <= 6; nq++)
        for (int trial = 0; trial < 8; trial++) {
            int n = 1 + (int)rng_below(&r, trial < 4 ? 4 : 20);
            SvPauli t[20];
            random_terms(t, n, nq, &r);
            if (trial == 0) {
                t[0].x = 0;
                t[0].z = 0;
            } /* identity term */
            pauli_dense(t, n, nq, H);
            int D = 1 << nq;
            cplx psi[MAXD], hp[MAXD], h2p[MAXD];
            random_state(psi, (size_t)D, &r);
            matvec(H, psi, hp, D);
            memcpy(H2, H, sizeof(cplx) * (size_t)D * D);
            matvec(H2, hp, h2p, D);
            double e = 0, e2 = 0;
            for (int i = 0; i < D; i++) {
                e += creal(conj(psi[i]) * hp[i]);
                e2 += creal(conj(psi[i]) * h2p[i]);
            }
            SvState s;
            ck_assert_int_eq(sv_init(&s, nq), 0);
            memcpy(s.amp, psi, sizeof(cplx) * (size_t)D);
            for (int simd = 0; simd <= SV_SIMD_AVX512; simd++) {
                s.simd = simd;
                double ge = sv_expval(&s, t, n), gv = sv_var(&s, t, n);
                ck_assert_msg(fabs(ge - e) < 1e-11, "nq=%d n=%d expval %g vs %g", nq, n, ge, e);
                double ve = e2 - e * e;
                ck_assert_msg(fabs(gv - (ve > 0 ? ve : 0)) < 1e-10, "nq=%d n=%d var %g vs %g", nq,
                              n, gv, ve);
            }
            sv_free(&s);
        }
}
END_TEST

START_TEST(test_shot_estimates)
{
    Rng r;
    rng_seed(&r, 41);
    SvState s;
    ck_assert_int_eq(sv_init(&s, 3), 0);
    random_state(s.amp, s.dim, &r);
    SvPauli t[3] = { { 0.7, 0x1, 0x0 }, { -0.4, 0x0, 0x6 }, { 0.3, 0x3, 0x3 } };
    /* each term estimate has variance c^2 (1 - <P>^2) / N */
    const size_t N = 20000;
    double exact = sv_expval(&s, t, 3), sd2 = 0;
    for (int k = 0; k < 3; k++) {
        double v = sv_expval(&s, &t[k], 1) / t[k].coeff;
        sd2 += t[k].coeff * t[k].coeff * (1 - v * v) / (double)N;
    }
    double est = sv_expval_shots(&s, t, 3, N, &r);
    ck_assert_msg(fabs(est - exact) < 4 * sqrt(sd2), "expval shots %g vs %g", est, exact);
    /* mean of many estimates of a single word */
    SvPauli z = { 1.0, 0, 0x1 };
    double ez = sv_expval(&s, &z, 1), vz = sv_var(&s, &z, 1);
    ck_assert(fabs(vz - (1 - ez * ez)) < 1e-12);
    double vs = sv_var_shots(&s, &z, 1, N, &r);
    ck_assert_msg(fabs(vs - vz) < 4 * 2 * fabs(ez) * sqrt((1 - ez * ez) / (double)N) + 1e-3,
                  "var shots %g vs %g", vs, vz);
    double sample[20000];
    sv_sample_pauli(&s, &z, N, &r, sample);
    double mean = 0;
    for (size_t i = 0; i < N; i++) {
        ck_assert(sample[i] == 1.0 || sample[i] == -1.0);
        mean += sample[i];
    }
    mean /= (double)N;
    ck_assert_msg(fabs(mean - ez) < 4 * sqrt((1 - ez * ez) / (double)N), "sample_pauli %g vs %g",
                  mean, ez);
    /* identity terms are exact */
    SvPauli id = { 2.5, 0, 0 };
    ck_assert(sv_expval_shots(&s, &id, 1, 10, &r) == 2.5);
    sv_free(&s);
}
END_TEST

START_TEST(test_binomial)
{
    Rng r;
    rng_seed(&r, 51);
    struct {
        uint64_t n;
        double p;
    } cs[] = { { 10, 0.3 },    { 100, 0.05 },      { 1000, 0.5 },
               { 20000, 0.7 }, { 1000000, 0.001 }, { 5000000, 0.4 } };
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
        const int M = 4000;
        double sum = 0, sq = 0;
        for (int i = 0; i < M; i++) {
            uint64_t k = sv_binomial(&r, cs[c].n, cs[c].p);
            ck_assert(k <= cs[c].n);
            sum += (double)k;
            sq += (double)k * (double)k;
        }
        double mu = (double)cs[c].n * cs[c].p, var = mu * (1 - cs[c].p);
        double m = sum / M, v = sq / M - m * m;
        ck_assert_msg(fabs(m - mu) < 4 * sqrt(var / M), "binomial(%lu, %g) mean %g vs %g",
                      (unsigned long)cs[c].n, cs[c].p, m, mu);
        ck_assert_msg(fabs(v / var - 1) < 0.15, "binomial(%lu, %g) var %g vs %g",
                      (unsigned long)cs[c].n, cs[c].p, v, var);
    }
    ck_assert_uint_eq(sv_binomial(&r, 10, 0), 0);
    ck_assert_uint_eq(sv_binomial(&r, 10, 1), 10);
}
END_TEST

/* ---- probabilities, sampling, measurement ----------------------------- */

START_TEST(test_probs)
{
    Rng r;
    rng_seed(&r, 61);
    for (int nq = 1; nq <= 6; nq++)
        for (int trial = 0; trial < 10; trial++) {
            SvState s;
            ck_assert_int_eq(sv_init(&s, nq), 0);
            random_state(s.amp, s.dim, &r);
            int nw = trial == 0 ? 0 : 1 + (int)rng_below(&r, (uint64_t)nq);
            int w[8];
            random_wires(w, nw, nq, &r);
            if (trial == 1) {
                nw = nq;
                for (int i = 0; i < nq; i++) w[i] = i;
            }
            double got[64], want[64] = { 0 };
            ck_assert_int_eq(sv_probs(&s, w, nw, got, NULL, 0), 0);
            int n = nw ? nw : nq;
            for (size_t i = 0; i < s.dim; i++) {
                int j = 0;
                for (int k = 0; k < n; k++) {
                    int wire = nw ? w[k] : k;
                    j = (j << 1) | (int)((i >> (nq - 1 - wire)) & 1);
                }
                want[j] += creal(s.amp[i] * conj(s.amp[i]));
            }
            for (int j = 0; j < (1 << n); j++) ck_assert(fabs(got[j] - want[j]) < TOL);
            sv_free(&s);
        }
}
END_TEST

/* A 3-qubit state with known probabilities (and a zero). */
static const double known_p[8] = { 0.05, 0.1, 0.15, 0.2, 0.25, 0.0, 0.15, 0.1 };

static void known_state(SvState *s, Rng *r)
{
    ck_assert_int_eq(sv_init(s, 3), 0);
    for (int i = 0; i < 8; i++) s->amp[i] = sqrt(known_p[i]) * cexp(I * 6.28 * rng_uniform(r));
}

START_TEST(test_sample_stats)
{
    Rng r;
    rng_seed(&r, 71);
    SvState s;
    known_state(&s, &r);
    enum { N = 20000 };
    static uint64_t out[N];
    sv_sample(&s, N, &r, out);
    double cnt[8] = { 0 };
    for (int i = 0; i < N; i++) {
        ck_assert(out[i] < 8);
        cnt[out[i]]++;
    }
    for (int j = 0; j < 8; j++) {
        double sd = sqrt(N * known_p[j] * (1 - known_p[j]));
        ck_assert_msg(fabs(cnt[j] - N * known_p[j]) <= 4 * sd, "bin %d: %g vs %g", j, cnt[j],
                      N * known_p[j]);
    }
    ck_assert(cnt[5] == 0);
    /* i.i.d. order: the first and second halves look alike */
    double h0 = 0, h1 = 0;
    for (int i = 0; i < N / 2; i++) {
        h0 += (double)out[i];
        h1 += (double)out[i + N / 2];
    }
    ck_assert(fabs(h0 - h1) / (N / 2) < 0.1);
    /* probs with shots: marginal over wires (2, 0) */
    int w[2] = { 2, 0 };
    double ps[4], pe[4];
    sv_probs(&s, w, 2, pe, NULL, 0);
    sv_probs_shots(&s, w, 2, N, &r, ps);
    double tot = 0;
    for (int j = 0; j < 4; j++) {
        tot += ps[j];
        ck_assert(fabs(ps[j] - pe[j]) <= 4 * sqrt(pe[j] * (1 - pe[j]) / N));
    }
    ck_assert(fabs(tot - 1) < 1e-12);
    double all[8];
    sv_probs_shots(&s, NULL, 0, 0, &r, all); /* shots = 0: exact */
    for (int j = 0; j < 8; j++) ck_assert(fabs(all[j] - known_p[j]) < 1e-12);
    int bad[1] = { 7 };
    sv_probs_shots(&s, bad, 1, 10, &r, ps);
    ck_assert(isnan(ps[0]) && isnan(ps[1]));
    sv_free(&s);
}
END_TEST

START_TEST(test_measure)
{
    Rng r;
    rng_seed(&r, 81);
    for (int wire = 0; wire < 3; wire++)
        for (int reset = 0; reset < 2; reset++) {
            int ones = 0;
            const int M = 3000;
            double p1 = 0;
            for (int i = 0; i < 8; i++)
                if ((i >> (2 - wire)) & 1) p1 += known_p[i];
            for (int trial = 0; trial < M; trial++) {
                SvState s;
                known_state(&s, &r);
                cplx before[8];
                memcpy(before, s.amp, sizeof before);
                int o = sv_measure(&s, wire, reset, &r, NULL, 0);
                ck_assert(o == 0 || o == 1);
                ones += o;
                /* post-state: projection, renormalised, then reset */
                cplx want[8] = { 0 };
                double n = 0;
                for (int i = 0; i < 8; i++)
                    if ((int)((i >> (2 - wire)) & 1) == o) n += creal(before[i] * conj(before[i]));
                for (int i = 0; i < 8; i++)
                    if ((int)((i >> (2 - wire)) & 1) == o) {
                        int to = (reset && o) ? i ^ (1 << (2 - wire)) : i;
                        want[to] = before[i] / sqrt(n);
                    }
                ck_assert(maxdiff(s.amp, want, 8) < TOL);
                sv_free(&s);
            }
            double sd = sqrt(M * p1 * (1 - p1));
            ck_assert_msg(fabs(ones - M * p1) <= 4 * sd, "wire %d: %d ones, expected %g", wire,
                          ones, M * p1);
        }
    SvState s;
    known_state(&s, &r);
    char err[128];
    ck_assert_int_eq(sv_measure(&s, 3, 0, &r, err, sizeof err), -1);
    ck_assert_str_eq(err, "measure: wire 3 out of range for a 3-wire device");
    memset(s.amp, 0, 8 * sizeof(cplx));
    ck_assert_int_eq(sv_measure(&s, 0, 0, &r, err, sizeof err), -1);
    ck_assert_str_eq(err, "measure: the state has zero norm");
    sv_free(&s);
}
END_TEST

/* ---- errors ----------------------------------------------------------- */

static SvOp simple(SvGate g, int w0, int w1)
{
    SvOp op;
    memset(&op, 0, sizeof op);
    op.gate = g;
    op.nwires = sv_gate_info(g)->nwires;
    op.wires[0] = w0;
    op.wires[1] = w1;
    op.nparams = sv_gate_info(g)->nparams;
    return op;
}

START_TEST(test_errors)
{
    SvState s;
    ck_assert_int_eq(sv_init(&s, 2), 0);
    char err[256];
    SvOp op = simple(SV_RX, 5, 0);
    ck_assert_int_eq(sv_apply(&s, &op, err, sizeof err), -1);
    ck_assert_str_eq(err, "RX: wire 5 out of range for a 2-wire device");
    op = simple(SV_CNOT, 0, 0);
    ck_assert_int_eq(sv_apply(&s, &op, err, sizeof err), -1);
    ck_assert_str_eq(err, "CNOT: wires must be distinct (0, 0)");
    op = simple(SV_RX, -1, 0);
    ck_assert_int_eq(sv_apply(&s, &op, err, sizeof err), -1);
    ck_assert_str_eq(err, "RX: wire -1 out of range for a 2-wire device");
    op = simple(SV_CNOT, 0, 1);
    op.nwires = 1;
    ck_assert_int_eq(sv_apply(&s, &op, err, sizeof err), -1);
    ck_assert_str_eq(err, "CNOT: expected 2 wires, got 1");
    op = simple(SV_RX, 0, 0);
    op.nparams = 0;
    ck_assert_int_eq(sv_apply(&s, &op, err, sizeof err), -1);
    ck_assert_str_eq(err, "RX: expected 1 parameter, got 0");
    op = simple(SV_ROT, 0, 0);
    op.params[1] = NAN;
    ck_assert_int_eq(sv_apply(&s, &op, err, sizeof err), -1);
    ck_assert_str_eq(err, "Rot: parameter 2 is not finite");
    op = simple(SV_HADAMARD, 0, 0);
    op.nctrl = 1;
    op.ctrl[0] = 0;
    ck_assert_int_eq(sv_apply(&s, &op, err, sizeof err), -1);
    ck_assert_str_eq(err, "Hadamard: control wires must be distinct from each other and from the "
                          "target wires (control 0; wires 0)");
    op.ctrl[0] = 2;
    ck_assert_int_eq(sv_apply(&s, &op, err, sizeof err), -1);
    ck_assert_str_eq(err, "Hadamard: control wire 2 out of range for a 2-wire device");
    op = simple(SV_TOFFOLI, 0, 1);
    op.wires[2] = 1;
    ck_assert_int_eq(sv_apply(&s, &op, err, sizeof err), -1);
    ck_assert_str_eq(err, "Toffoli: wires must be distinct (0, 1, 1)");
    /* the one-pass check of a state of up to 64 wires and the loops past it
       agree at the edges: wire 63 of 64, wire 64 of 64 and of 65 */
    op = simple(SV_CNOT, 63, 0);
    ck_assert_int_eq(sv_check(&op, 64, err, sizeof err), 0);
    op.nctrl = 1;
    op.ctrl[0] = 62;
    ck_assert_int_eq(sv_check(&op, 64, err, sizeof err), 0);
    op.ctrl[0] = 63;
    ck_assert_int_eq(sv_check(&op, 64, err, sizeof err), -1);
    ck_assert_str_eq(err, "CNOT: control wires must be distinct from each other and from the "
                          "target wires (control 63; wires 63, 0)");
    op = simple(SV_CNOT, 64, 0);
    ck_assert_int_eq(sv_check(&op, 64, err, sizeof err), -1);
    ck_assert_str_eq(err, "CNOT: wire 64 out of range for a 64-wire device");
    ck_assert_int_eq(sv_check(&op, 65, err, sizeof err), 0);
    op.wires[1] = 64;
    ck_assert_int_eq(sv_check(&op, 65, err, sizeof err), -1);
    ck_assert_str_eq(err, "CNOT: wires must be distinct (64, 64)");
    ck_assert_int_eq(sv_check(&op, 0, err, sizeof err), -1);
    ck_assert_str_eq(err, "CNOT: wire 64 out of range for a 0-wire device");
    op = simple(SV_MULTIRZ, 0, 1);
    op.nwires = 0;
    ck_assert_int_eq(sv_apply(&s, &op, err, sizeof err), -1);
    ck_assert_str_eq(err, "MultiRZ: needs at least one wire");
    op = simple(SV_QUBITUNITARY, 0, 1);
    op.nwires = 1;
    ck_assert_int_eq(sv_apply(&s, &op, err, sizeof err), -1);
    ck_assert_str_eq(err, "QubitUnitary: no matrix");
    cplx notu[4] = { 1, 1, 0, 1 };
    op.matrix = notu;
    ck_assert_int_eq(sv_apply(&s, &op, err, sizeof err), -1);
    ck_assert(strncmp(err, "QubitUnitary: matrix is not unitary", 35) == 0);
    op.gate = (SvGate)99;
    ck_assert_int_eq(sv_apply(&s, &op, err, sizeof err), -1);
    ck_assert_str_eq(err, "unknown gate 99");
    ck_assert_int_eq(sv_apply(&s, NULL, NULL, 0), -1);
    /* the state is untouched by failed ops */
    ck_assert(cabs(s.amp[0] - 1) == 0);
    int w2[2] = { 1, 1 };
    double pr[4];
    ck_assert_int_eq(sv_probs(&s, w2, 2, pr, err, sizeof err), -1);
    ck_assert_str_eq(err, "probs: wires must be distinct (1, 1)");
    ck_assert_int_eq(sv_probs(&s, w2, 3, pr, err, sizeof err), -1);
    ck_assert_int_eq(sv_apply_matrix(&s, w2, 2, notu, err, sizeof err), -1);
    ck_assert_str_eq(err, "apply_matrix: wires must be distinct (1, 1)");
    /* names */
    ck_assert_ptr_eq(sv_gate_by_name("H"), sv_gate_info(SV_HADAMARD));
    ck_assert_ptr_eq(sv_gate_by_name("CX"), sv_gate_info(SV_CNOT));
    ck_assert_ptr_eq(sv_gate_by_name("CCX"), sv_gate_info(SV_TOFFOLI));
    ck_assert_ptr_eq(sv_gate_by_name("I"), sv_gate_info(SV_IDENTITY));
    ck_assert_ptr_eq(sv_gate_by_name("ControlledPhaseShift"), sv_gate_info(SV_CPHASE));
    ck_assert_ptr_null(sv_gate_by_name("Hadamardx"));
    ck_assert_ptr_null(sv_gate_by_name(NULL));
    ck_assert_ptr_null(sv_gate_info(SV_NGATES));
    for (int g = 0; g < SV_NGATES; g++) {
        const SvGateInfo *info = sv_gate_info((SvGate)g);
        ck_assert_int_eq(info->gate, g);
        ck_assert_ptr_eq(sv_gate_by_name(info->name), info);
    }
    ck_assert_int_eq(sv_gate_by_name("RX")->shift_rule, 1);
    ck_assert_int_eq(sv_gate_by_name("CRX")->shift_rule, 0);
    ck_assert_int_eq(sv_gate_by_name("Rot")->nparams, 3);
    sv_free(&s);
}
END_TEST

START_TEST(test_init_failure)
{
    SvState s;
    ck_assert_int_eq(sv_init(&s, 50), -1); /* 16 PiB */
    ck_assert_ptr_null(s.amp);
    ck_assert_int_eq(sv_init(&s, -1), -1);
    ck_assert_int_eq(sv_init(&s, 64), -1);
    ck_assert_uint_eq(sv_bytes(10), 16384);
    ck_assert_uint_eq(sv_bytes(70), SIZE_MAX);
    sv_free(&s); /* harmless on a failed state */
}
END_TEST

/* ---- threads ---------------------------------------------------------- */

START_TEST(test_threads)
{
    Rng r;
    rng_seed(&r, 91);
    SvTeam *team = sv_team_new(2);
    ck_assert_ptr_nonnull(team);
    ck_assert_int_eq(sv_team_size(team), 2);
    for (int nq = 17; nq <= 18; nq++)
        for (int simd = 0; simd <= SV_SIMD_AVX512; simd++) {
            SvState a, b;
            ck_assert_int_eq(sv_init(&a, nq), 0);
            ck_assert_int_eq(sv_init(&b, nq), 0);
            sv_set_threads(&b, team, 2);
            /* idle workers: sleep at once, spin 1 ms, the default */
            sv_team_set_spin(team, nq == 17 ? 0.0 : simd == 0 ? 0.001 : SV_SPIN_DEFAULT);
            a.simd = b.simd = simd;
            random_state(a.amp, a.dim, &r);
            memcpy(b.amp, a.amp, a.dim * sizeof(cplx));
            for (int step = 0; step < 3 * SV_NGATES; step++) {
                SvOp op;
                SvGate g = (SvGate)(step % SV_NGATES);
                make_op(&op, g, nq, (int)rng_below(&r, 3), (int)rng_below(&r, 2), &r);
                ck_assert_int_eq(sv_apply(&a, &op, NULL, 0), 0);
                ck_assert_int_eq(sv_apply(&b, &op, NULL, 0), 0);
            }
            ck_assert(maxdiff(a.amp, b.amp, a.dim) < TOL);
            SvPauli t[4];
            random_terms(t, 4, nq < 30 ? 12 : 0, &r);
            t[0].x |= 1u << (nq - 1);
            ck_assert(fabs(sv_expval(&a, t, 4) - sv_expval(&b, t, 4)) < 1e-11);
            ck_assert(fabs(sv_var(&a, t, 4) - sv_var(&b, t, 4)) < 1e-11);
            int w[3] = { nq - 1, 0, 5 };
            double pa[8], pb[8];
            ck_assert_int_eq(sv_probs(&a, w, 3, pa, NULL, 0), 0);
            ck_assert_int_eq(sv_probs(&b, w, 3, pb, NULL, 0), 0);
            for (int j = 0; j < 8; j++) ck_assert(fabs(pa[j] - pb[j]) < 1e-13);
            Rng r1 = r, r2 = r;
            ck_assert_int_eq(sv_measure(&a, 3, 1, &r1, NULL, 0),
                             sv_measure(&b, 3, 1, &r2, NULL, 0));
            ck_assert(maxdiff(a.amp, b.amp, a.dim) < TOL);
            sv_reset(&b);
            ck_assert(cabs(b.amp[0] - 1) == 0 && cabs(b.amp[b.dim - 1]) == 0);
            sv_free(&a);
            sv_free(&b);
        }
    sv_team_free(team);
    SvTeam *one = sv_team_new(1);
    ck_assert_ptr_nonnull(one);
    sv_team_free(one);
}
END_TEST

static Suite *sv_suite(void)
{
    Suite *s = suite_create("sv");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_embed_is_kron);
    tcase_add_test(tc, test_gates_plain);
    tcase_add_test(tc, test_gates_adjoint);
    tcase_add_test(tc, test_gates_ctrl1);
    tcase_add_test(tc, test_gates_ctrl2);
    tcase_add_test(tc, test_gates_all_placements);
    tcase_add_test(tc, test_gates_large);
    tcase_add_test(tc, test_line_kernels_small);
    tcase_add_test(tc, test_simd_levels_same_bytes);
    tcase_add_test(tc, test_term_patterns_same_bytes);
    tcase_add_test(tc, test_diag_blocks_same_bytes);
    tcase_add_test(tc, test_line_kernels_large);
    tcase_add_test(tc, test_line_kernels_low_bits);
    tcase_add_test(tc, test_line_kernels_apply_matrix);
    tcase_add_test(tc, test_basis_state);
    tcase_add_test(tc, test_tiny_states);
    tcase_add_test(tc, test_apply_matrix);
    tcase_add_test(tc, test_op_matrix);
    tcase_add_test(tc, test_op_dmatrix);
    tcase_add_test(tc, test_expval_var);
    tcase_add_test(tc, test_shot_estimates);
    tcase_add_test(tc, test_binomial);
    tcase_add_test(tc, test_probs);
    tcase_add_test(tc, test_sample_stats);
    tcase_add_test(tc, test_measure);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_init_failure);
    tcase_add_test(tc, test_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(sv_suite()); }
