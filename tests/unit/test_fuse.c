/* test_fuse.c — unit tests of queued, fused and cache-blocked gates (fuse.h).
 *
 * Random circuits of every gate (1- and 2-qubit gates with and without
 * extra controls, adjoints, Toffoli and CSWAP, wide MultiRZ and BasisState,
 * QubitUnitary on 1-3 wires, non-unitary matrices as channels make them)
 * run through an SvCirc and, gate by gate, through sv_apply on a copy of
 * the same random state. The default (exact) mode gives the same bytes,
 * compared with memcmp, for chunks smaller than the state (gathered
 * passes, in-place passes) and as large as it, one thread and a team,
 * flushes forced by a short queue, at every SIMD level; the opt-in dense
 * blocks of 1 and 2 qubits agree within 1e-12. Fusion off and narrow
 * states give exactly sv_apply's bytes.
 * Phase gates whose target bit a pass lacks (run as a phase per chunk)
 * and runs of exchange gates (moved once, as one permutation) give the
 * same bytes on states of signed zeros, Inf, NaN and subnormals.
 * The statistics count gates, blocks and passes; a layered circuit takes
 * fewer passes than gates, a layer of phase gates one.
 */
#include <check.h>
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuse.h"
#include "dense_ref.h"

static uint64_t rs;
static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}
static int rint_(int n) { return (int)(rnd() % (uint64_t)n); }
static double rangle(void)
{
    return (double)(rnd() % 100000) / 100000.0 * 6.283185307179586 - 3.14;
}

static void f_random_state(SvState *s)
{
    double n = 0;
    for (size_t i = 0; i < s->dim; i++) {
        s->amp[i] = rangle() + I * rangle();
        n += creal(s->amp[i] * conj(s->amp[i]));
    }
    for (size_t i = 0; i < s->dim; i++) s->amp[i] /= sqrt(n);
}

/* distinct random wires */
static void pick(int nq, int n, int *w)
{
    for (int i = 0; i < n; i++) {
        int again;
        do {
            w[i] = rint_(nq);
            again = 0;
            for (int j = 0; j < i; j++) again |= w[j] == w[i];
        } while (again);
    }
}

static const SvGate one_q[] = { SV_HADAMARD,   SV_PAULIX, SV_PAULIY, SV_PAULIZ, SV_S,
                                SV_T,          SV_SX,     SV_RX,     SV_RY,     SV_RZ,
                                SV_PHASESHIFT, SV_ROT,    SV_U3 };
static const SvGate two_q[] = { SV_CNOT,    SV_CY,      SV_CZ,       SV_SWAP,   SV_ISWAP,
                                SV_CRX,     SV_CRY,     SV_CRZ,      SV_CPHASE, SV_ISINGXX,
                                SV_ISINGYY, SV_ISINGZZ, SV_SINGLEEXC };

static cplx umat[8][64];

/* a random unitary on k wires: a product of random 1- and 2-wire gates */
static void f_random_unitary(int k, cplx *u)
{
    SvState t;
    sv_init(&t, k);
    int d = 1 << k;
    SvOp ops[12];
    for (int g = 0; g < 12; g++) {
        memset(&ops[g], 0, sizeof ops[g]);
        ops[g].gate = k > 1 && g % 3 == 2 ? SV_CNOT : SV_U3;
        ops[g].nwires = ops[g].gate == SV_CNOT ? 2 : 1;
        ops[g].nparams = ops[g].gate == SV_CNOT ? 0 : 3;
        for (int p = 0; p < ops[g].nparams; p++) ops[g].params[p] = rangle();
        pick(k, ops[g].nwires, ops[g].wires);
    }
    for (int col = 0; col < d; col++) {
        memset(t.amp, 0, (size_t)d * sizeof(cplx));
        t.amp[col] = 1;
        for (int g = 0; g < 12; g++) sv_apply(&t, &ops[g], NULL, 0);
        for (int r = 0; r < d; r++) u[r * d + col] = t.amp[r];
    }
    sv_free(&t);
}

/* Gate g of a random circuit on nq wires (matrix storage: slot). */
static void random_op(int nq, SvOp *op, int slot)
{
    memset(op, 0, sizeof *op);
    int kind = rint_(20);
    const SvGateInfo *gi;
    if (kind < 9 || nq < 2) {
        op->gate = one_q[rint_((int)(sizeof one_q / sizeof one_q[0]))];
    } else if (kind < 16 || nq < 3) {
        op->gate = two_q[rint_((int)(sizeof two_q / sizeof two_q[0]))];
    } else if (kind == 16) {
        op->gate = rint_(2) ? SV_TOFFOLI : SV_CSWAP;
    } else if (kind == 17) {
        op->gate = SV_MULTIRZ;
        op->nwires = 1 + rint_(nq);
    } else if (kind == 18) {
        op->gate = SV_QUBITUNITARY;
        op->nwires = 1 + rint_(nq < 3 ? nq : 3);
        f_random_unitary(op->nwires, umat[slot]);
        op->matrix = umat[slot];
    } else {
        op->gate = SV_BASISSTATE;
        op->nwires = 1 + rint_(nq);
        op->bits = rnd() & ((1u << op->nwires) - 1);
    }
    gi = sv_gate_info(op->gate);
    if (gi->nwires > 0) op->nwires = gi->nwires;
    op->nparams = gi->nparams;
    for (int p = 0; p < op->nparams; p++) op->params[p] = rangle();
    op->adjoint = rint_(4) == 0;
    int extra = nq - op->nwires > 0 && rint_(5) == 0 ? 1 + rint_(nq - op->nwires > 1 ? 2 : 1) : 0;
    int w[64];
    pick(nq, op->nwires + extra, w);
    memcpy(op->wires, w, (size_t)op->nwires * sizeof(int));
    op->nctrl = extra;
    memcpy(op->ctrl, w + op->nwires, (size_t)extra * sizeof(int));
}

static double f_maxdiff(const SvState *a, const SvState *b)
{
    double m = 0;
    for (size_t i = 0; i < a->dim; i++) {
        double d = cabs(a->amp[i] - b->amp[i]);
        if (d > m) m = d;
    }
    return m;
}

/* One random circuit through both paths. */
static int simd_level = SV_SIMD_AVX512; /* both paths' kernels */

static void run_case(int nq, int block, int chunk, int maxops, int ngates, SvTeam *team)
{
    SvState a, b;
    ck_assert_int_eq(sv_init(&a, nq), 0);
    ck_assert_int_eq(sv_init(&b, nq), 0);
    a.simd = b.simd = simd_level;
    f_random_state(&a);
    memcpy(b.amp, a.amp, a.dim * sizeof(cplx));
    if (team) sv_set_threads(&b, team, 2);
    SvFuseCfg cfg = { 1, 1, block, chunk, maxops, 4 };
    SvCirc c;
    svc_init(&c, &cfg);
    char err[256];
    for (int g = 0; g < ngates; g++) {
        SvOp op;
        random_op(nq, &op, g % 8);
        if (rint_(15) == 0) { /* a non-unitary 1- or 2-wire matrix, as a channel's superoperator */
            int k = nq > 1 ? 1 + rint_(2) : 1, w[2];
            pick(nq, k, w);
            cplx m[16];
            for (int i = 0; i < (1 << (2 * k)); i++) m[i] = 0.5 * rangle() + 0.3 * I * rangle();
            ck_assert_int_eq(sv_apply_matrix(&a, w, k, m, err, sizeof err), 0);
            ck_assert_msg(svc_push_matrix(&c, &b, w, k, m, err, sizeof err) == 0, "%s", err);
            continue;
        }
        ck_assert_msg(sv_apply(&a, &op, err, sizeof err) == 0, "%s", err);
        ck_assert_msg(svc_push(&c, &b, &op, err, sizeof err) == 0, "%s", err);
        if (rint_(40) == 0) ck_assert_int_eq(svc_flush(&c, &b, err, sizeof err), 0);
    }
    ck_assert_int_eq(svc_flush(&c, &b, err, sizeof err), 0);
    ck_assert_int_eq(svc_pending(&c), 0);
    double d = f_maxdiff(&a, &b);
    if (block == 0) { /* exact: the same bytes as gate by gate */
        size_t first = 0;
        while (first < a.dim && memcmp(&a.amp[first], &b.amp[first], sizeof(cplx)) == 0) first++;
        ck_assert_msg(first == a.dim,
                      "nq %d chunk %d maxops %d simd %d: amplitude %zu differs (max diff %g)", nq,
                      chunk, maxops, simd_level, first, d);
    } else {
        double scale = 0;
        for (size_t i = 0; i < a.dim; i++) scale = fmax(scale, cabs(a.amp[i]));
        ck_assert_msg(d <= 1e-12 * fmax(1, scale), "nq %d block %d chunk %d: max diff %g", nq,
                      block, chunk, d);
    }
    ck_assert_uint_eq(c.st.gates, (uint64_t)ngates);
    svc_free(&c);
    sv_free(&a);
    sv_free(&b);
}

START_TEST(test_random_circuits)
{
    rs = 0x9e3779b97f4a7c15ull;
    for (int nq = 1; nq <= 11; nq++)
        for (int block = 0; block <= 2; block++) {
            run_case(nq, block, 6, 1024, 120, NULL);
            run_case(nq, block, 7, 9, 80, NULL);
            run_case(nq, block, 14, 1024, 80, NULL);
        }
}
END_TEST

/* Exact at every instruction level (each level's kernels on both paths). */
START_TEST(test_exact_levels)
{
    rs = 0x2545f4914f6cdd1dull;
    for (int lv = SV_SIMD_C; lv <= SV_SIMD_AVX512; lv++) {
        simd_level = lv;
        for (int nq = 6; nq <= 12; nq++) {
            run_case(nq, 0, 6, 1024, 150, NULL);
            run_case(nq, 0, 8, 13, 150, NULL);
        }
    }
    simd_level = SV_SIMD_AVX512;
}
END_TEST

START_TEST(test_random_threads)
{
    rs = 12345;
    SvTeam *team = sv_team_new(2);
    ck_assert_ptr_nonnull(team);
    for (int r = 0; r < 3; r++) {
        run_case(16, 0, 10, 1024, 150, team);
        run_case(17, 0, 12, 1024, 150, team);
        run_case(16, 2, 10, 1024, 150, team);
        run_case(16, 1, 16, 64, 100, team);
        run_case(17, 2, 12, 1024, 100, team);
    }
    sv_team_free(team);
}
END_TEST

/* Fusion off, or a state narrower than min_qubits: sv_apply's bytes. */
START_TEST(test_unfused_is_bit_identical)
{
    rs = 777;
    for (int off = 0; off < 2; off++) {
        SvState a, b;
        sv_init(&a, 9);
        sv_init(&b, 9);
        f_random_state(&a);
        memcpy(b.amp, a.amp, a.dim * sizeof(cplx));
        SvFuseCfg cfg = { off ? 0 : 1, off ? 1 : 10, 2, 6, 1024, 4 };
        SvCirc c;
        svc_init(&c, &cfg);
        for (int g = 0; g < 200; g++) {
            SvOp op;
            random_op(9, &op, g % 8);
            ck_assert_int_eq(sv_apply(&a, &op, NULL, 0), 0);
            ck_assert_int_eq(svc_push(&c, &b, &op, NULL, 0), 0);
            ck_assert_int_eq(svc_pending(&c), 0); /* ran at once */
        }
        ck_assert_int_eq(memcmp(a.amp, b.amp, a.dim * sizeof(cplx)), 0);
        ck_assert_uint_eq(c.st.passes, 200);
        svc_free(&c);
        sv_free(&a);
        sv_free(&b);
    }
}
END_TEST

/* Bad gates fail when they are queued, with sv_apply's message. */
START_TEST(test_errors_at_push)
{
    SvState s;
    sv_init(&s, 15);
    SvFuseCfg cfg = { 1, 1, 2, 10, 1024, 4 };
    SvCirc c;
    svc_init(&c, &cfg);
    SvOp op = { .gate = SV_CNOT, .nwires = 2, .wires = { 3, 3 } };
    char e1[256], e2[256];
    ck_assert_int_eq(svc_push(&c, &s, &op, e1, sizeof e1), -1);
    ck_assert_int_eq(sv_apply(&s, &op, e2, sizeof e2), -1);
    ck_assert_str_eq(e1, e2);
    op.wires[1] = 20;
    ck_assert_int_eq(svc_push(&c, &s, &op, e1, sizeof e1), -1);
    ck_assert_int_eq(sv_apply(&s, &op, e2, sizeof e2), -1);
    ck_assert_str_eq(e1, e2);
    ck_assert_int_eq(svc_pending(&c), 0);
    svc_free(&c);
    sv_free(&s);
}
END_TEST

/* A layered RX + CNOT-ladder circuit: a few passes for many gates; the
   exact mode runs every gate as its own block, the dense one fewer. */
START_TEST(test_layered_stats)
{
    int nq = 18;
    for (int block = 0; block <= 2; block += 2) {
        SvState s;
        sv_init(&s, nq);
        SvFuseCfg cfg = { 1, 1, block, 12, 4096, 4 };
        SvCirc c;
        svc_init(&c, &cfg);
        for (int l = 0; l < 4; l++) {
            for (int w = 0; w < nq; w++) {
                SvOp rx = { .gate = SV_RX,
                            .nwires = 1,
                            .wires = { w },
                            .nparams = 1,
                            .params = { 0.1 * (w + 1) } };
                ck_assert_int_eq(svc_push(&c, &s, &rx, NULL, 0), 0);
            }
            for (int w = 0; w + 1 < nq; w++) {
                SvOp cx = { .gate = SV_CNOT, .nwires = 2, .wires = { w, w + 1 } };
                ck_assert_int_eq(svc_push(&c, &s, &cx, NULL, 0), 0);
            }
        }
        svc_flush(&c, &s, NULL, 0);
        uint64_t gates = 4 * (2 * (uint64_t)nq - 1);
        ck_assert_uint_eq(c.st.gates, gates);
        if (block == 0) { /* every RX its own kernel, each CNOT ladder of a pass one run */
            ck_assert_uint_lt(c.st.blocks, gates);
            ck_assert_uint_ge(c.st.blocks, 4 * (uint64_t)nq);
        } else
            ck_assert_uint_lt(c.st.blocks, gates);
        ck_assert_msg(c.st.passes * 10 <= gates * 3, "block %d: %llu passes for %llu gates", block,
                      (unsigned long long)c.st.passes, (unsigned long long)gates);
        svc_free(&c);
        sv_free(&s);
    }
}
END_TEST

/* Phase gates whose target bits a pass lacks run as one phase per chunk
   (fuse.c's exact_need; IsingZZ and MultiRZ by the parity of the bits
   left out, on the ones kept or as a phase of the chunk): states with
   signed zeros, infinities, NaN and subnormals, phases of exactly 1 on
   one side or both (rows the kernel skips), controls on the lowest bits
   (folded into the kernel's rows),
   in the pass or outside it, and adjoints: sv_apply's bytes, at every
   SIMD level, serial and on a team. */
static void hazard_amps(SvState *s)
{
    /* x86's default NaN, as test_sv's hazard states: no payload or sign of
       a NaN operand to propagate (which one of two an instruction passes
       on is not part of the kernels' contract) */
    const double odd[] = { 0.0,      -0.0,      INFINITY, -INFINITY, -__builtin_nan(""),
                           4.9e-324, -2.2e-310, 1.0 };
    f_random_state(s);
    for (size_t i = 0; i < s->dim; i++)
        if (rint_(6) == 0) {
            double re = rint_(2) ? odd[rint_(8)] : creal(s->amp[i]);
            double im = rint_(2) ? odd[rint_(8)] : cimag(s->amp[i]);
            double parts[2] = { re, im }; /* re + I * im would make 0 * inf */
            memcpy(&s->amp[i], parts, sizeof parts);
        }
}

static cplx dmat[8][4];

static void random_phase_op(int nq, SvOp *op, int slot)
{
    static const SvGate one[] = { SV_PAULIZ, SV_S,  SV_T,  SV_RZ,          SV_PHASESHIFT,
                                  SV_ROT,    SV_U3, SV_RX, SV_QUBITUNITARY };
    static const SvGate two[] = { SV_CZ, SV_CRZ, SV_CPHASE, SV_CRX, SV_CY };
    static const cplx phase[] = { 1, -1, I, -I, 0.6 + 0.8 * I, 1 };
    memset(op, 0, sizeof *op);
    int two_q = nq > 4 && rint_(3) == 0, parity = nq > 5 && rint_(4) == 0;
    op->gate = parity  ? (rint_(2) ? SV_ISINGZZ : SV_MULTIRZ)
               : two_q ? two[rint_(5)]
                       : one[rint_(9)];
    const SvGateInfo *gi = sv_gate_info(op->gate);
    op->nwires = op->gate == SV_QUBITUNITARY ? 1
                 : op->gate == SV_MULTIRZ    ? 1 + rint_(4)
                                             : gi->nwires;
    op->nparams = gi->nparams;
    for (int p = 0; p < op->nparams; p++) op->params[p] = rint_(4) == 0 ? 0.0 : rangle();
    if (op->gate == SV_ROT) op->params[1] = 0; /* RZ RY(0) RZ: diagonal */
    if (op->gate == SV_U3) op->params[0] = 0;
    if ((op->gate == SV_RX || op->gate == SV_CRX || op->gate == SV_CY) && rint_(3))
        op->params[0] = 0; /* the identity as a matrix, and CY: not diagonal */
    if (op->gate == SV_QUBITUNITARY) {
        dmat[slot][0] = phase[rint_(6)];
        dmat[slot][1] = dmat[slot][2] = 0;
        dmat[slot][3] = phase[rint_(6)];
        op->matrix = dmat[slot];
    }
    op->adjoint = rint_(3) == 0;
    int w[8], extra = nq - op->nwires >= 3 && rint_(3) == 0 ? 1 + rint_(2) : 0;
    pick(nq, op->nwires + extra, w);
    for (int i = 0; i < extra; i++) /* often on the lowest bits (wires nq-1..nq-3) */
        if (rint_(2)) {
            int lw = nq - 1 - rint_(3), used = 0;
            for (int j = 0; j < op->nwires + extra; j++) used |= w[j] == lw;
            if (!used) w[op->nwires + i] = lw;
        }
    if (two_q && rint_(2)) { /* the control low, the target high */
        int lw = nq - 1 - rint_(3), used = 0;
        for (int j = 0; j < op->nwires + extra; j++) used |= w[j] == lw;
        if (!used) w[0] = lw;
    }
    memcpy(op->wires, w, (size_t)op->nwires * sizeof(int));
    op->nctrl = extra;
    memcpy(op->ctrl, w + op->nwires, (size_t)extra * sizeof(int));
}

/* Now and then a gate that mixes, so that passes end; else a phase gate. */
static void phase_mix_op(int nq, SvOp *op, int slot)
{
    if (rint_(8) == 0)
        random_op(nq, op, slot);
    else
        random_phase_op(nq, op, slot);
}

/* A circuit of ngates from gen through an SvCirc and through sv_apply,
   from the same hazard state: the same bytes. Adds its blocks to
   *blocks when blocks is not NULL. */
static void gen_case(int nq, int chunk, int ngates, SvTeam *team, void (*gen)(int, SvOp *, int),
                     uint64_t *blocks)
{
    SvState a, b;
    ck_assert_int_eq(sv_init(&a, nq), 0);
    ck_assert_int_eq(sv_init(&b, nq), 0);
    a.simd = b.simd = simd_level;
    hazard_amps(&a);
    memcpy(b.amp, a.amp, a.dim * sizeof(cplx));
    if (team) sv_set_threads(&b, team, 3);
    SvFuseCfg cfg = { 1, 1, 0, chunk, 1024, 4 };
    SvCirc c;
    svc_init(&c, &cfg);
    for (int g = 0; g < ngates; g++) {
        SvOp op;
        gen(nq, &op, g % 8);
        ck_assert_int_eq(sv_apply(&a, &op, NULL, 0), 0);
        ck_assert_int_eq(svc_push(&c, &b, &op, NULL, 0), 0);
    }
    ck_assert_int_eq(svc_flush(&c, &b, NULL, 0), 0);
    size_t first = 0;
    while (first < a.dim && memcmp(&a.amp[first], &b.amp[first], sizeof(cplx)) == 0) first++;
    ck_assert_msg(first == a.dim, "nq %d chunk %d simd %d: amplitude %zu differs (%g%+gi, %g%+gi)",
                  nq, chunk, simd_level, first, creal(a.amp[first]), cimag(a.amp[first]),
                  creal(b.amp[first]), cimag(b.amp[first]));
    if (blocks) *blocks += c.st.blocks;
    svc_free(&c);
    sv_free(&a);
    sv_free(&b);
}

START_TEST(test_phase_targets_outside_pass)
{
    rs = 0x5851f42d4c957f2dull;
    SvTeam *team = sv_team_new(3);
    ck_assert_ptr_nonnull(team);
    for (int lv = SV_SIMD_C; lv <= SV_SIMD_AVX512; lv++) {
        simd_level = lv;
        for (int nq = 7; nq <= 12; nq++)
            for (int r = 0; r < 4; r++) gen_case(nq, 6 + r % 2, 200, NULL, phase_mix_op, NULL);
        gen_case(16, 10, 200, team, phase_mix_op, NULL);
    }
    simd_level = SV_SIMD_AVX512;
    sv_team_free(team);
}
END_TEST

/* Runs of exchange gates (X, CNOT, SWAP; an X also as a CNOT or a
   Toffoli whose controls are outside the pass, a predicate of the chunk)
   move each amplitude once (fuse.c's PermRun): states of signed zeros,
   Inf, NaN and subnormals (moved bits, never computed), runs broken by
   controlled and computing gates, in-place and gathered passes, serial
   and on a team: sv_apply's bytes, and fewer blocks than gates. */
static void random_move_op(int nq, SvOp *op, int slot)
{
    memset(op, 0, sizeof *op);
    int k = rint_(16);
    if (k < 3) {
        op->gate = SV_PAULIX;
        op->nwires = 1;
    } else if (k < 11) {
        op->gate = SV_CNOT;
        op->nwires = 2;
    } else if (k < 14) {
        op->gate = SV_SWAP;
        op->nwires = 2;
    } else if (k < 15 && nq >= 3) {
        op->gate = SV_TOFFOLI;
        op->nwires = 3;
    } else {
        random_op(nq, op, slot); /* a break in the run */
        return;
    }
    int w[4];
    pick(nq, op->nwires, w);
    memcpy(op->wires, w, (size_t)op->nwires * sizeof(int));
    if (op->gate == SV_CNOT && rint_(10) == 0 && nq > 2) { /* an extra control: not a move run */
        int x[3];
        do pick(nq, 1, x);
        while (x[0] == w[0] || x[0] == w[1]);
        op->nctrl = 1;
        op->ctrl[0] = x[0];
    }
}

START_TEST(test_permutation_runs)
{
    rs = 0xda942042e4dd58b5ull;
    SvTeam *team = sv_team_new(3);
    ck_assert_ptr_nonnull(team);
    uint64_t blocks = 0, gates = 0;
    for (int nq = 7; nq <= 12; nq++)
        for (int r = 0; r < 6; r++, gates += 150)
            gen_case(nq, 6 + r % 3, 150, NULL, random_move_op, &blocks);
    for (int r = 0; r < 3; r++, gates += 300)
        gen_case(16, 10 + r, 300, team, random_move_op, &blocks);
    ck_assert_msg(blocks * 4 < gates * 3, "%llu blocks for %llu gates", (unsigned long long)blocks,
                  (unsigned long long)gates);
    sv_team_free(team);
}
END_TEST

/* A layer of phase gates takes no bit of a pass: one pass, whichever
   wires; a Hadamard on every wire needs its bits. */
START_TEST(test_phase_layer_one_pass)
{
    int nq = 12;
    SvState s;
    sv_init(&s, nq);
    SvFuseCfg cfg = { 1, 1, 0, 6, 4096, 4 };
    SvCirc c;
    svc_init(&c, &cfg);
    for (int w = 0; w < nq; w++) {
        SvOp h = { .gate = SV_HADAMARD, .nwires = 1, .wires = { w } };
        ck_assert_int_eq(svc_push(&c, &s, &h, NULL, 0), 0);
    }
    svc_flush(&c, &s, NULL, 0);
    uint64_t hpasses = c.st.passes;
    ck_assert_uint_ge(hpasses, 4); /* 12 bits, 6 a pass, 4 of them always the lowest */
    for (int w = 0; w < nq; w++) {
        SvOp rz = { .gate = SV_RZ, .nwires = 1, .wires = { w }, .nparams = 1, .params = { 0.3 } };
        SvOp cz = { .gate = SV_CZ, .nwires = 2, .wires = { w, (w + 5) % nq } };
        ck_assert_int_eq(svc_push(&c, &s, &rz, NULL, 0), 0);
        ck_assert_int_eq(svc_push(&c, &s, &cz, NULL, 0), 0);
    }
    svc_flush(&c, &s, NULL, 0);
    ck_assert_uint_eq(c.st.passes, hpasses + 1);
    svc_free(&c);
    sv_free(&s);
}
END_TEST

static Suite *fuse_suite(void)
{
    Suite *s = suite_create("fuse");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_random_circuits);
    tcase_add_test(tc, test_exact_levels);
    tcase_add_test(tc, test_random_threads);
    tcase_add_test(tc, test_unfused_is_bit_identical);
    tcase_add_test(tc, test_errors_at_push);
    tcase_add_test(tc, test_layered_stats);
    tcase_add_test(tc, test_phase_targets_outside_pass);
    tcase_add_test(tc, test_phase_layer_one_pass);
    tcase_add_test(tc, test_permutation_runs);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(fuse_suite()); }
