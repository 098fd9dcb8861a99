/* test_dm.c — unit tests of the density-matrix room (Check).
 *
 * Every gate (plain, adjoint, with 0-2 extra controls, on random wires)
 * and every channel on random mixed states against a dense reference
 * computed here: rho' = U rho U^dagger and rho' = sum K rho K^dagger with
 * the operators embedded into the full space by index arithmetic. The
 * Kraus matrices of the channels are written out here from PennyLane's
 * definitions (and ThermalRelaxationError checked against the numbers
 * PennyLane documents). A gate's small matrix comes from sv_op_matrix,
 * which test_sv checks against its own independent definitions. Also:
 * a pure circuit on the mixed simulator agrees with the statevector one,
 * measurements (expval, var, probs, reduced states, purity, entropy,
 * samples, mid-circuit measurement) against dense formulas, errors,
 * threads; the channels' derivative maps against finite differences.
 * Tolerance 1e-12.
 */
#include <check.h>
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dm.h"
#include "svmeas.h"
#include "dense_ref.h"

#define TOL 1e-12

/* ---- dense helpers -------------------------------------------------------- */

/* out += K rho K^dagger */
static void add_conj(const cplx *k, const cplx *rho, cplx *out, int D)
{
    cplx *t = malloc((size_t)D * D * sizeof(cplx)), *kd = calloc((size_t)D * D, sizeof(cplx));
    ck_assert(t && kd);
    matmul(k, rho, t, D);
    dagger(k, kd, D);
    matmul(t, kd, t, D);
    for (int i = 0; i < D * D; i++) out[i] += t[i];
    free(t);
    free(kd);
}

/* A random density matrix: A A^dagger / Tr for a complex Gaussian A. */
static void rand_rho(int n, Rng *r, cplx *rho)
{
    int D = 1 << n;
    cplx *a = malloc((size_t)D * D * sizeof(cplx)), *ad = malloc((size_t)D * D * sizeof(cplx));
    for (int i = 0; i < D * D; i++) a[i] = rng_normal(r) + I * rng_normal(r);
    dagger(a, ad, D);
    matmul(a, ad, rho, D);
    double tr = 0;
    for (int i = 0; i < D; i++) tr += creal(rho[i * D + i]);
    for (int i = 0; i < D * D; i++) rho[i] /= tr;
    free(a);
    free(ad);
}

/* ---- gates ---------------------------------------------------------------- */

/* Why: one gate, every variant, against U rho U^dagger. */
static void check_gate(SvGate g, int n, int adj, int nctrl, Rng *r)
{
    const SvGateInfo *info = sv_gate_info(g);
    int D = 1 << n;
    SvOp op;
    memset(&op, 0, sizeof op);
    op.gate = g;
    int most = n - nctrl < 3 ? n - nctrl : 3;
    op.nwires = info->nwires > 0 ? info->nwires : 1 + (int)rng_below(r, (uint64_t)most);
    op.nparams = info->nparams;
    for (int i = 0; i < op.nparams; i++) op.params[i] = 4 * rng_uniform(r) - 2;
    op.adjoint = adj;
    op.nctrl = nctrl;
    int w[16];
    random_wires(w, op.nwires + nctrl, n, r);
    for (int i = 0; i < nctrl; i++) op.ctrl[i] = w[i];
    for (int i = 0; i < op.nwires; i++) op.wires[i] = w[nctrl + i];
    cplx qu[64];
    if (g == SV_QUBITUNITARY) {
        random_isometry(qu, 1 << op.nwires, 1 << op.nwires, r);
        op.matrix = qu;
    }
    if (g == SV_BASISSTATE) op.bits = rng_below(r, (uint64_t)1 << op.nwires);
    int K = nctrl + op.nwires, d = 1 << K;
    cplx *small = malloc((size_t)d * d * sizeof(cplx));
    char err[256] = "";
    ck_assert_msg(sv_op_matrix(&op, small, err, sizeof err) == 0, "%s", err);
    cplx *U = malloc((size_t)D * D * sizeof(cplx)), *rho = malloc((size_t)D * D * sizeof(cplx));
    cplx *want = calloc((size_t)D * D, sizeof(cplx));
    embed(small, w, K, n, U); /* controls first, as sv_op_matrix orders them */
    rand_rho(n, r, rho);
    add_conj(U, rho, want, D);
    DmState dm;
    ck_assert_int_eq(dm_init(&dm, n), 0);
    dm.v.simd = (int)rng_below(r, 2);
    ck_assert_int_eq(dm_set_matrix(&dm, rho, NULL, 0), 0);
    ck_assert_msg(dm_apply(&dm, &op, err, sizeof err) == 0, "%s: %s", info->name, err);
    double e = maxdiff(dm.v.amp, want, (size_t)D * D);
    ck_assert_msg(e <= TOL, "%s adj=%d nctrl=%d: max error %g", info->name, adj, nctrl, e);
    dm_free(&dm);
    free(small);
    free(U);
    free(rho);
    free(want);
}

START_TEST(test_every_gate)
{
    Rng r;
    rng_seed(&r, 1234);
    for (int g = 0; g < SV_NGATES; g++)
        for (int adj = 0; adj < 2; adj++)
            for (int nc = 0; nc <= 2; nc++)
                for (int rep = 0; rep < 2; rep++) check_gate((SvGate)g, 6, adj, nc, &r);
}
END_TEST

START_TEST(test_gates_small_and_odd)
{
    /* 1- and 2-wire states (wire 0 is both ends), repeated on one state */
    Rng r;
    rng_seed(&r, 99);
    for (int g = 0; g < SV_NGATES; g++) {
        const SvGateInfo *info = sv_gate_info((SvGate)g);
        if (info->nwires == 1 || info->nwires == -1) check_gate((SvGate)g, 1, 0, 0, &r);
        if (info->nwires <= 2) check_gate((SvGate)g, 2, 1, 0, &r);
    }
}
END_TEST

/* ---- channels ------------------------------------------------------------- */

/* PennyLane's Kraus matrices, written out here. */
static int ref_kraus(DmChannel ch, const double *p, cplx *k)
{
    memset(k, 0, 6 * 4 * sizeof(cplx));
#define K(i, a, b, c, d) \
    (k[4 * (i)] = (a), k[4 * (i) + 1] = (b), k[4 * (i) + 2] = (c), k[4 * (i) + 3] = (d))
    switch ((int)ch) {
    case DM_BITFLIP:
        K(0, sqrt(1 - p[0]), 0, 0, sqrt(1 - p[0]));
        K(1, 0, sqrt(p[0]), sqrt(p[0]), 0);
        return 2;
    case DM_PHASEFLIP:
        K(0, sqrt(1 - p[0]), 0, 0, sqrt(1 - p[0]));
        K(1, sqrt(p[0]), 0, 0, -sqrt(p[0]));
        return 2;
    case DM_DEPOLARIZING: {
        double a = sqrt(1 - p[0]), b = sqrt(p[0] / 3);
        K(0, a, 0, 0, a);
        K(1, 0, b, b, 0);
        K(2, 0, -I * b, I * b, 0);
        K(3, b, 0, 0, -b);
        return 4;
    }
    case DM_AMPDAMP:
        K(0, 1, 0, 0, sqrt(1 - p[0]));
        K(1, 0, sqrt(p[0]), 0, 0);
        return 2;
    case DM_GENAMPDAMP: {
        double g = p[0], q = p[1];
        K(0, sqrt(q), 0, 0, sqrt(q) * sqrt(1 - g));
        K(1, 0, sqrt(q) * sqrt(g), 0, 0);
        K(2, sqrt(1 - q) * sqrt(1 - g), 0, 0, sqrt(1 - q));
        K(3, 0, 0, sqrt(1 - q) * sqrt(g), 0);
        return 4;
    }
    case DM_PHASEDAMP:
        K(0, 1, 0, 0, sqrt(1 - p[0]));
        K(1, 0, 0, 0, sqrt(p[0]));
        return 2;
    case DM_RESETERROR: {
        double a = sqrt(1 - p[0] - p[1]), b = sqrt(p[0]), c = sqrt(p[1]);
        K(0, a, 0, 0, a);
        K(1, b, 0, 0, 0);
        K(2, 0, b, 0, 0);
        K(3, 0, 0, c, 0);
        K(4, 0, 0, 0, c);
        return 5;
    }
    case DM_THERMAL: { /* T2 <= T1 only; the other case is checked by its numbers */
        double pe = p[0], t1 = p[1], t2 = p[2], tg = p[3];
        double eT1 = exp(-tg / t1), pr = 1 - eT1, eT2 = exp(-tg / t2);
        double pz = (1 - pr) * (1 - eT2 / eT1) / 2, pr0 = (1 - pe) * pr, pr1 = pe * pr;
        double pid = 1 - pz - pr0 - pr1;
        K(0, sqrt(pid), 0, 0, sqrt(pid));
        K(1, sqrt(pz), 0, 0, -sqrt(pz));
        K(2, sqrt(pr0), 0, 0, 0);
        K(3, 0, sqrt(pr0), 0, 0);
        K(4, 0, 0, sqrt(pr1), 0);
        K(5, 0, 0, 0, sqrt(pr1));
        return 6;
    }
    default: return 0;
    }
#undef K
}

/* rho' = sum K rho K^dagger of nk small matrices on wires, densely. */
static void ref_channel(const cplx *kr, int nk, const int *w, int k, int n, const cplx *rho,
                        cplx *out)
{
    int D = 1 << n, d = 1 << k;
    cplx *full = malloc((size_t)D * D * sizeof(cplx));
    memset(out, 0, (size_t)D * D * sizeof(cplx));
    for (int i = 0; i < nk; i++) {
        embed(kr + (size_t)i * d * d, w, k, n, full);
        add_conj(full, rho, out, D);
    }
    free(full);
}

START_TEST(test_builtin_channels)
{
    Rng r;
    rng_seed(&r, 7);
    int n = 4, D = 1 << n;
    cplx *rho = malloc((size_t)D * D * sizeof(cplx)), *want = malloc((size_t)D * D * sizeof(cplx));
    for (int ch = 0; ch < DM_NCHANNELS; ch++) {
        if (ch == DM_PAULIERROR || ch == DM_QUBITCHANNEL) continue;
        for (int rep = 0; rep < 6; rep++) {
            double p[4] = { rng_uniform(&r), rng_uniform(&r), 0, 0 };
            if (ch == DM_RESETERROR) p[1] = (1 - p[0]) * rng_uniform(&r);
            if (ch == DM_THERMAL) {
                p[1] = 1 + rng_uniform(&r);
                p[2] = p[1] * rng_uniform(&r);
                p[3] = rng_uniform(&r);
            }
            if (rep == 0 && ch != DM_THERMAL) {
                p[0] = 0;
                p[1] = 1;
            } /* the ends of the range */
            if (rep == 1 && ch != DM_THERMAL && ch != DM_RESETERROR) {
                p[0] = 1;
                p[1] = 0;
            }
            cplx kr[24];
            int nk = ref_kraus((DmChannel)ch, p, kr);
            int w = (int)rng_below(&r, (uint64_t)n);
            rand_rho(n, &r, rho);
            ref_channel(kr, nk, &w, 1, n, rho, want);
            DmState dm;
            ck_assert_int_eq(dm_init(&dm, n), 0);
            dm_set_matrix(&dm, rho, NULL, 0);
            char err[256] = "";
            ck_assert_msg(dm_apply_channel(&dm, (DmChannel)ch, p, w, err, sizeof err) == 0, "%s",
                          err);
            double e = maxdiff(dm.v.amp, want, (size_t)D * D);
            ck_assert_msg(e <= TOL, "%s: max error %g", dm_channel_info((DmChannel)ch)->name, e);
            ck_assert(fabs(dm_trace(&dm) - 1) <= TOL);
            /* the Kraus matrices themselves are PennyLane's */
            cplx got[24];
            int gk;
            ck_assert_int_eq(dm_channel_kraus((DmChannel)ch, p, got, &gk, NULL, 0), 0);
            ck_assert_int_eq(gk, nk);
            ck_assert(maxdiff(got, kr, (size_t)nk * 4) <= TOL);
            dm_free(&dm);
        }
    }
    free(rho);
    free(want);
}
END_TEST

START_TEST(test_thermal_documented)
{
    /* qml.ThermalRelaxationError.compute_kraus_matrices(0.1, 1.2, 1.3, 0.1),
       the T2 > T1 case, as PennyLane documents it (8 digits) */
    double p[4] = { 0.1, 1.2, 1.3, 0.1 };
    const cplx want[16] = { 0, 0, 0.08941789, 0,          0, 0.26825366, 0,         0, -0.12718544,
                            0, 0, 0.13165421, 0.98784022, 0, 0,          0.95430977 };
    cplx k[24];
    int nk;
    ck_assert_int_eq(dm_channel_kraus(DM_THERMAL, p, k, &nk, NULL, 0), 0);
    ck_assert_int_eq(nk, 4);
    ck_assert(maxdiff(k, want, 16) <= 1e-8);
    ck_assert_int_eq(dm_kraus_check("T", 1, nk, k, NULL, 0), 0);
    /* and applied, against the reference */
    Rng r;
    rng_seed(&r, 3);
    int n = 2, D = 4, w = 1;
    cplx rho[16], ref[16];
    rand_rho(n, &r, rho);
    ref_channel(k, nk, &w, 1, n, rho, ref);
    DmState dm;
    dm_init(&dm, n);
    dm_set_matrix(&dm, rho, NULL, 0);
    ck_assert_int_eq(dm_apply_channel(&dm, DM_THERMAL, p, w, NULL, 0), 0);
    ck_assert(maxdiff(dm.v.amp, ref, (size_t)D * D) <= TOL);
    dm_free(&dm);
}
END_TEST

/* Why: a channel's derivative map (dm_channel_dterms, dm_apply_pairs)
   against Richardson-extrapolated central differences of the reference
   map, every built-in channel by each parameter, at random interior
   points (ThermalRelaxationError on both sides of T2 = T1), and at p = 0
   where the map is linear in p (forward differences are exact there). */
static void ref_map(DmChannel ch, const double *p, int w, int n, const cplx *rho, cplx *out)
{
    if (ch == DM_THERMAL) { /* both cases are one map: populations relax to pe, coherences decay */
        double pe = p[0], pr = 1 - exp(-p[3] / p[1]), eT2 = exp(-p[3] / p[2]);
        size_t D = (size_t)1 << n, m = (size_t)1 << (n - 1 - w);
        for (size_t r = 0; r < D; r++)
            for (size_t c = 0; c < D; c++) {
                if ((r & m) || (c & m)) continue;
                cplx a = rho[r * D + c], b = rho[(r | m) * D + (c | m)];
                out[r * D + c] = (1 - pe * pr) * a + (1 - pe) * pr * b;
                out[(r | m) * D + (c | m)] = pe * pr * a + (1 - (1 - pe) * pr) * b;
                out[r * D + (c | m)] = eT2 * rho[r * D + (c | m)];
                out[(r | m) * D + c] = eT2 * rho[(r | m) * D + c];
            }
        return;
    }
    cplx kr[24];
    int nk = ref_kraus(ch, p, kr);
    ref_channel(kr, nk, &w, 1, n, rho, out);
}

START_TEST(test_channel_derivatives)
{
    Rng r;
    rng_seed(&r, 19);
    int n = 3, D = 1 << n;
    size_t DD = (size_t)D * D;
    cplx *rho = malloc(DD * sizeof(cplx)), *want = malloc(DD * sizeof(cplx));
    cplx *a = malloc(DD * sizeof(cplx)), *b = malloc(DD * sizeof(cplx));
    for (int ch = 0; ch < DM_NCHANNELS; ch++) {
        if (ch == DM_PAULIERROR || ch == DM_QUBITCHANNEL) continue;
        const DmChannelInfo *info = dm_channel_info((DmChannel)ch);
        for (int rep = 0; rep < 8; rep++)
            for (int which = 0; which < info->nparams; which++) {
                double p[4] = { 0.1 + 0.8 * rng_uniform(&r), 0.1 + 0.8 * rng_uniform(&r), 0, 0 };
                if (ch == DM_RESETERROR) p[1] = (1 - p[0]) * (0.1 + 0.8 * rng_uniform(&r));
                if (ch == DM_THERMAL) {
                    p[1] = 1 + rng_uniform(&r);
                    p[2] = p[1] *
                           (rep % 2 ? 1.1 + 0.8 * rng_uniform(&r) : 0.2 + 0.7 * rng_uniform(&r));
                    p[3] = 0.1 + rng_uniform(&r);
                }
                int w = (int)rng_below(&r, (uint64_t)n);
                rand_rho(n, &r, rho);
                if (ch == DM_THERMAL && p[2] <= p[1]) { /* the map is the Kraus set's */
                    cplx kr[24];
                    ref_channel(kr, ref_kraus(DM_THERMAL, p, kr), &w, 1, n, rho, a);
                    ref_map(DM_THERMAL, p, w, n, rho, b);
                    ck_assert(maxdiff(a, b, DD) <= TOL);
                }
                double h = 1e-4;
                for (size_t i = 0; i < DD; i++) want[i] = 0;
                for (int k = 0; k < 2; k++) { /* D(h), D(h/2): (4 D(h/2) - D(h)) / 3 */
                    double q[4], hk = k ? h / 2 : h, c = (k ? 4.0 : -1.0) / 3 / (2 * hk);
                    memcpy(q, p, sizeof q);
                    q[which] = p[which] + hk;
                    ref_map((DmChannel)ch, q, w, n, rho, a);
                    q[which] = p[which] - hk;
                    ref_map((DmChannel)ch, q, w, n, rho, b);
                    for (size_t i = 0; i < DD; i++) want[i] += c * (a[i] - b[i]);
                }
                cplx ab[2 * DM_MAX_DTERMS * 4];
                int np;
                char err[256] = "";
                ck_assert_msg(
                    dm_channel_dterms((DmChannel)ch, p, which, ab, &np, err, sizeof err) == 0, "%s",
                    err);
                DmState dm;
                ck_assert_int_eq(dm_init(&dm, n), 0);
                dm_set_matrix(&dm, rho, NULL, 0);
                ck_assert(!dm.tangent);
                ck_assert_int_eq(dm_apply_pairs(&dm, &w, 1, np, ab, err, sizeof err), 0);
                ck_assert(dm.tangent);
                double e = maxdiff(dm.v.amp, want, DD);
                ck_assert_msg(e <= 1e-8, "%s by parameter %d: max error %g", info->name, which + 1,
                              e);
                ck_assert(fabs(dm_trace(&dm)) <= 1e-12); /* trace preserving: d Tr = 0 */
                dm_free(&dm);
            }
        /* p = 0: finite (no 1/sqrt(p)); these maps are linear in their parameter */
        if (ch == DM_BITFLIP || ch == DM_PHASEFLIP || ch == DM_DEPOLARIZING ||
            ch == DM_RESETERROR) {
            double p[4] = { 0, 0, 0, 0 }, q[4] = { 0.5, 0, 0, 0 };
            int w = 1, np;
            rand_rho(n, &r, rho);
            ref_map((DmChannel)ch, p, w, n, rho, b);
            ref_map((DmChannel)ch, q, w, n, rho, a);
            for (size_t i = 0; i < DD; i++) want[i] = (a[i] - b[i]) / 0.5;
            cplx ab[2 * DM_MAX_DTERMS * 4];
            ck_assert_int_eq(dm_channel_dterms((DmChannel)ch, p, 0, ab, &np, NULL, 0), 0);
            DmState dm;
            dm_init(&dm, n);
            dm_set_matrix(&dm, rho, NULL, 0);
            ck_assert_int_eq(dm_apply_pairs(&dm, &w, 1, np, ab, NULL, 0), 0);
            ck_assert_msg(maxdiff(dm.v.amp, want, DD) <= TOL, "%s at 0", info->name);
            /* the derivative's diagonal keeps its signs */
            double pr[8], sum = 0;
            ck_assert_int_eq(dm_probs(&dm, NULL, 0, pr, NULL, 0), 0);
            for (int i = 0; i < D; i++) {
                ck_assert(fabs(pr[i] - creal(want[(size_t)i * D + i])) <= TOL);
                sum += pr[i];
            }
            ck_assert(fabs(sum) <= TOL);
            dm_reset(&dm);
            ck_assert(!dm.tangent);
            dm_free(&dm);
        }
    }
    /* PauliError: P rho P - rho, whatever p */
    int wires[2] = { 2, 0 }, np = 2;
    cplx ab[2 * DM_MAX_DTERMS * 4], k[2 * 16]; /* room for PauliError on 2 wires (64) too */
    rand_rho(n, &r, rho);
    ck_assert_int_eq(dm_pauli_error_dterms("YZ", 0.3, ab, NULL, 0), 0);
    ck_assert_int_eq(dm_pauli_error_kraus("YZ", 1.0, k, NULL, 0), 0);
    for (size_t i = 0; i < DD; i++) want[i] = -rho[i];
    ref_channel(k + 16, 1, wires, 2, n, rho, a);
    for (size_t i = 0; i < DD; i++) want[i] += a[i];
    DmState dm;
    dm_init(&dm, n);
    dm_set_matrix(&dm, rho, NULL, 0);
    ck_assert_int_eq(dm_apply_pairs(&dm, wires, 2, np, ab, NULL, 0), 0);
    ck_assert(maxdiff(dm.v.amp, want, DD) <= TOL);
    dm_free(&dm);
    /* parameters checked as the Kraus sets check them */
    double bad = 1.5;
    char err[256] = "";
    ck_assert_int_eq(dm_channel_dterms(DM_BITFLIP, &bad, 0, ab, &np, err, sizeof err), -1);
    ck_assert_str_eq(err, "BitFlip: p must be in the interval [0,1], got 1.5");
    free(rho);
    free(want);
    free(a);
    free(b);
}
END_TEST

START_TEST(test_qubit_channel_and_pauli_error)
{
    Rng r;
    rng_seed(&r, 11);
    int n = 5, D = 1 << n;
    cplx *rho = malloc((size_t)D * D * sizeof(cplx)), *want = malloc((size_t)D * D * sizeof(cplx));
    for (int k = 1; k <= 3; k++)
        for (int nk = 1; nk <= 4; nk++) {
            int d = 1 << k;
            cplx *v = malloc((size_t)nk * d * d * sizeof(cplx));
            random_isometry(v, nk * d, d, &r); /* stacked Kraus matrices: V^dagger V = I */
            ck_assert_int_eq(dm_kraus_check("QubitChannel", k, nk, v, NULL, 0), 0);
            int w[8];
            random_wires(w, k, n, &r);
            rand_rho(n, &r, rho);
            ref_channel(v, nk, w, k, n, rho, want);
            DmState dm;
            dm_init(&dm, n);
            dm_set_matrix(&dm, rho, NULL, 0);
            char err[256] = "";
            ck_assert_msg(dm_apply_kraus(&dm, w, k, nk, v, err, sizeof err) == 0, "%s", err);
            double e = maxdiff(dm.v.amp, want, (size_t)D * D);
            ck_assert_msg(e <= TOL, "QubitChannel k=%d nk=%d: %g", k, nk, e);
            /* an incomplete set is refused with the reason */
            v[0] *= 1.1;
            ck_assert_int_eq(dm_kraus_check("QubitChannel", k, nk, v, err, sizeof err), -1);
            ck_assert_msg(strstr(err, "not trace preserving") != NULL, "%s", err);
            dm_free(&dm);
            free(v);
        }
    /* PauliError("XYZ", p) = sqrt(1-p) I, sqrt(p) X (x) Y (x) Z */
    cplx kr[2 * 64], want_k[2 * 64], xy[16], xyz[64];
    const cplx X[4] = { 0, 1, 1, 0 }, Y[4] = { 0, -I, I, 0 }, Z[4] = { 1, 0, 0, -1 };
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 2; c++)
                for (int e = 0; e < 2; e++)
                    xy[(2 * a + c) * 4 + 2 * b + e] = X[2 * a + b] * Y[2 * c + e];
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 2; c++)
                for (int e = 0; e < 2; e++)
                    xyz[(2 * a + c) * 8 + 2 * b + e] = xy[4 * a + b] * Z[2 * c + e];
    double p = 0.3;
    memset(want_k, 0, sizeof want_k);
    for (int i = 0; i < 8; i++) want_k[i * 8 + i] = sqrt(1 - p);
    for (int i = 0; i < 64; i++) want_k[64 + i] = sqrt(p) * xyz[i];
    ck_assert_int_eq(dm_pauli_error_kraus("XYZ", p, kr, NULL, 0), 0);
    ck_assert(maxdiff(kr, want_k, 128) <= TOL);
    int w[3] = { 4, 0, 2 };
    rand_rho(n, &r, rho);
    ref_channel(want_k, 2, w, 3, n, rho, want);
    DmState dm;
    dm_init(&dm, n);
    dm_set_matrix(&dm, rho, NULL, 0);
    ck_assert_int_eq(dm_apply_kraus(&dm, w, 3, 2, kr, NULL, 0), 0);
    ck_assert(maxdiff(dm.v.amp, want, (size_t)D * D) <= TOL);
    dm_free(&dm);
    free(rho);
    free(want);
}
END_TEST

/* ---- pure circuits: mixed agrees with statevector -------------------------- */

START_TEST(test_pure_circuit_agrees)
{
    Rng r;
    rng_seed(&r, 2024);
    int n = 5, D = 1 << n;
    for (int rep = 0; rep < 5; rep++) {
        SvState sv;
        DmState dm;
        ck_assert_int_eq(sv_init(&sv, n), 0);
        ck_assert_int_eq(dm_init(&dm, n), 0);
        cplx qu[16];
        for (int step = 0; step < 60; step++) {
            SvGate g = (SvGate)rng_below(&r, SV_NGATES);
            const SvGateInfo *info = sv_gate_info(g);
            SvOp op;
            memset(&op, 0, sizeof op);
            op.gate = g;
            op.nwires = info->nwires > 0 ? info->nwires : 1 + (int)rng_below(&r, 2);
            op.nparams = info->nparams;
            for (int i = 0; i < op.nparams; i++) op.params[i] = 6 * rng_uniform(&r) - 3;
            op.adjoint = (int)rng_below(&r, 2);
            op.nctrl = op.nwires < 4 ? (int)rng_below(&r, 2) : 0;
            int w[8];
            random_wires(w, op.nwires + op.nctrl, n, &r);
            for (int i = 0; i < op.nctrl; i++) op.ctrl[i] = w[i];
            for (int i = 0; i < op.nwires; i++) op.wires[i] = w[op.nctrl + i];
            if (g == SV_QUBITUNITARY) {
                random_isometry(qu, 1 << op.nwires, 1 << op.nwires, &r);
                op.matrix = qu;
            }
            if (g == SV_BASISSTATE) op.bits = rng_below(&r, (uint64_t)1 << op.nwires);
            char err[256] = "";
            ck_assert_msg(sv_apply(&sv, &op, err, sizeof err) == 0, "%s", err);
            ck_assert_msg(dm_apply(&dm, &op, err, sizeof err) == 0, "%s", err);
        }
        double e = 0;
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++) {
                double x = cabs(dm.v.amp[i * D + j] - sv.amp[i] * conj(sv.amp[j]));
                if (x > e) e = x;
            }
        ck_assert_msg(e <= TOL, "pure circuit: %g", e);
        SvPauli h[3] = { { 0.5, 0x3, 0x1 }, { -1.25, 0x0, 0x14 }, { 2, 0x10, 0x0 } };
        ck_assert(fabs(dm_expval(&dm, h, 3) - sv_expval(&sv, h, 3)) <= TOL);
        ck_assert(fabs(dm_var(&dm, h, 3) - sv_var(&sv, h, 3)) <= 1e-11);
        double pd[32], ps[32];
        int pw[3] = { 3, 0, 1 };
        dm_probs(&dm, pw, 3, pd, NULL, 0);
        sv_probs(&sv, pw, 3, ps, NULL, 0);
        for (int i = 0; i < 8; i++) ck_assert(fabs(pd[i] - ps[i]) <= TOL);
        ck_assert(fabs(dm_purity(&dm, NULL, 0) - 1) <= 1e-11);
        sv_free(&sv);
        dm_free(&dm);
    }
}
END_TEST

/* ---- measurements --------------------------------------------------------- */

/* The dense matrix of a Pauli sum on n wires. */
static void pauli_matrix(const SvPauli *t, int nt, int n, cplx *h)
{
    int D = 1 << n;
    memset(h, 0, (size_t)D * D * sizeof(cplx));
    for (int k = 0; k < nt; k++)
        for (int c = 0; c < D; c++) { /* column c: P|c> = ph |r> */
            int r = c;
            cplx ph = t[k].coeff;
            for (int w = 0; w < n; w++) {
                int bit = (c >> (n - 1 - w)) & 1, x = (int)((t[k].x >> w) & 1),
                    z = (int)((t[k].z >> w) & 1);
                if (x) r ^= 1 << (n - 1 - w);
                if (x && z)
                    ph *= bit ? -I : I;
                else if (z && bit)
                    ph = -ph;
            }
            h[r * D + c] += ph;
        }
}

static double trace_prod(const cplx *a, const cplx *b, int D)
{
    cplx s = 0;
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) s += a[i * D + j] * b[j * D + i];
    return creal(s);
}

START_TEST(test_expval_var_probs)
{
    Rng r;
    rng_seed(&r, 5);
    int n = 4, D = 1 << n;
    cplx rho[256], h[256], h2[256];
    for (int rep = 0; rep < 20; rep++) {
        rand_rho(n, &r, rho);
        DmState dm;
        dm_init(&dm, n);
        dm_set_matrix(&dm, rho, NULL, 0);
        SvPauli t[5];
        int nt = 1 + (int)rng_below(&r, 5);
        for (int k = 0; k < nt; k++) {
            t[k].coeff = rng_normal(&r);
            t[k].x = rng_below(&r, 16);
            t[k].z = rng_below(&r, 16);
        }
        pauli_matrix(t, nt, n, h);
        matmul(h, h, h2, D);
        double e = trace_prod(rho, h, D), e2 = trace_prod(rho, h2, D);
        ck_assert_msg(fabs(dm_expval(&dm, t, nt) - e) <= TOL, "expval %g vs %g",
                      dm_expval(&dm, t, nt), e);
        ck_assert(fabs(dm_var(&dm, t, nt) - (e2 - e * e)) <= 1e-11);
        /* dense observables */
        int w2[2] = { 2, 0 };
        cplx hs[16];
        for (int i = 0; i < 4; i++)
            for (int j = 0; j <= i; j++) {
                hs[i * 4 + j] = rng_normal(&r) + (i == j ? 0 : I * rng_normal(&r));
                hs[j * 4 + i] = conj(hs[i * 4 + j]);
            }
        cplx full[256];
        embed(hs, w2, 2, n, full);
        ck_assert(fabs(dm_expval_matrix(&dm, w2, 2, hs) - trace_prod(rho, full, D)) <= TOL);
        /* probabilities: the diagonal, marginalised */
        double p[16];
        int pw[2] = { 3, 1 };
        ck_assert_int_eq(dm_probs(&dm, pw, 2, p, NULL, 0), 0);
        for (int j = 0; j < 4; j++) {
            double want = 0;
            for (int b = 0; b < D; b++)
                if ((((b >> 0) & 1) << 1 | ((b >> 2) & 1)) == j) want += creal(rho[b * D + b]);
            ck_assert(fabs(p[j] - want) <= TOL);
        }
        ck_assert_int_eq(dm_probs(&dm, NULL, 0, p, NULL, 0), 0);
        for (int b = 0; b < D; b++) ck_assert(fabs(p[b] - creal(rho[b * D + b])) <= TOL);
        dm_free(&dm);
    }
}
END_TEST

START_TEST(test_reduced_purity_entropy)
{
    Rng r;
    rng_seed(&r, 77);
    /* rho = U diag(l) U^dagger (x) sigma: the entropy of the first part is
       known from l, its purity is sum l^2 */
    int na = 2, nb = 2, n = na + nb, A = 1 << na, B = 1 << nb, D = 1 << n;
    for (int rep = 0; rep < 10; rep++) {
        double l[4], s = 0;
        for (int i = 0; i < A; i++) {
            l[i] = rep == 0 && i ? 0 : rng_uniform(&r);
            s += l[i];
        }
        cplx u[16], ud[16], dl[16] = { 0 }, ra[16], sig[16], rho[256];
        random_isometry(u, A, A, &r);
        dagger(u, ud, A);
        for (int i = 0; i < A; i++) {
            l[i] /= s;
            dl[i * A + i] = l[i];
        }
        matmul(u, dl, ra, A);
        matmul(ra, ud, ra, A);
        rand_rho(nb, &r, sig);
        for (int i = 0; i < A; i++)
            for (int j = 0; j < A; j++)
                for (int k = 0; k < B; k++)
                    for (int m = 0; m < B; m++)
                        rho[(i * B + k) * D + j * B + m] = ra[i * A + j] * sig[k * B + m];
        DmState dm;
        dm_init(&dm, n);
        dm_set_matrix(&dm, rho, NULL, 0);
        cplx got[16];
        int wa[2] = { 0, 1 }, wb[2] = { 3, 2 };
        ck_assert_int_eq(dm_reduced(&dm, wa, 2, got, NULL, 0), 0);
        ck_assert(maxdiff(got, ra, 16) <= TOL);
        /* wires in another order: the partial trace, permuted */
        ck_assert_int_eq(dm_reduced(&dm, wb, 2, got, NULL, 0), 0);
        for (int i = 0; i < B; i++)
            for (int j = 0; j < B; j++) {
                int pi = ((i & 1) << 1) | (i >> 1), pj = ((j & 1) << 1) | (j >> 1);
                ck_assert(cabs(got[i * B + j] - sig[pi * B + pj]) <= TOL);
            }
        double h = 0, pur = 0;
        for (int i = 0; i < A; i++) {
            if (l[i] > 0) h -= l[i] * log(l[i]);
            pur += l[i] * l[i];
        }
        ck_assert_msg(fabs(dm_vn_entropy(&dm, wa, 2, 0) - h) <= 1e-12, "entropy %g vs %g",
                      dm_vn_entropy(&dm, wa, 2, 0), h);
        ck_assert(fabs(dm_vn_entropy(&dm, wa, 2, 2.0) - h / log(2)) <= 1e-12);
        ck_assert(fabs(dm_purity(&dm, wa, 2) - pur) <= TOL);
        ck_assert(fabs(dm_purity(&dm, NULL, 0) - sv_purity_of(rho, 1 << n)) <= TOL);
        dm_free(&dm);
    }
}
END_TEST

START_TEST(test_measure_collapse)
{
    Rng r, draw;
    rng_seed(&r, 8);
    rng_seed(&draw, 9);
    int n = 3, D = 8;
    cplx rho[64], want[64];
    int ones = 0, runs = 4000;
    double p1_first = -1;
    for (int rep = 0; rep < runs; rep++) {
        if (rep < 20 || rep == 20) rand_rho(n, &r, rho);
        int w = rep < 20 ? (int)rng_below(&r, 3) : 1, reset = rep < 20 ? (int)rng_below(&r, 2) : 0;
        double p1 = 0;
        for (int b = 0; b < D; b++)
            if ((b >> (n - 1 - w)) & 1) p1 += creal(rho[b * D + b]);
        if (rep == 20) p1_first = p1;
        DmState dm;
        dm_init(&dm, n);
        dm_set_matrix(&dm, rho, NULL, 0);
        int o = dm_measure(&dm, w, reset, &draw, NULL, 0);
        ck_assert(o == 0 || o == 1);
        if (rep >= 20) ones += o;
        if (rep < 20) {
            cplx k[4] = { 0 };
            double s = 1 / sqrt(o ? p1 : 1 - p1);
            if (!o)
                k[0] = s;
            else if (reset)
                k[1] = s;
            else
                k[3] = s;
            ref_channel(k, 1, &w, 1, n, rho, want);
            ck_assert(maxdiff(dm.v.amp, want, 64) <= 1e-11);
            ck_assert(fabs(dm_trace(&dm) - 1) <= TOL);
        }
        dm_free(&dm);
    }
    double f = (double)ones / (runs - 20), sd = sqrt(p1_first * (1 - p1_first) / (runs - 20));
    ck_assert_msg(fabs(f - p1_first) <= 6 * sd + 1e-9, "measured %g, expected %g", f, p1_first);
}
END_TEST

START_TEST(test_samples_and_shots)
{
    Rng r;
    rng_seed(&r, 10);
    int n = 3, D = 8;
    cplx rho[64];
    rand_rho(n, &r, rho);
    DmState dm;
    dm_init(&dm, n);
    dm_set_matrix(&dm, rho, NULL, 0);
    size_t shots = 20000;
    uint64_t *s = malloc(shots * sizeof *s);
    dm_sample(&dm, shots, &r, s);
    double cnt[8] = { 0 };
    for (size_t i = 0; i < shots; i++) {
        ck_assert(s[i] < 8);
        cnt[s[i]]++;
    }
    for (int b = 0; b < D; b++) {
        double p = creal(rho[b * D + b]), sd = sqrt(p * (1 - p) / (double)shots);
        ck_assert_msg(fabs(cnt[b] / (double)shots - p) <= 6 * sd + 1e-9, "bin %d", b);
    }
    double ps[8], sum = 0;
    dm_probs_shots(&dm, NULL, 0, shots, &r, ps);
    for (int b = 0; b < D; b++) {
        double p = creal(rho[b * D + b]), sd = sqrt(p * (1 - p) / (double)shots);
        ck_assert(fabs(ps[b] - p) <= 6 * sd + 1e-9);
        sum += ps[b];
    }
    ck_assert(fabs(sum - 1) <= 1e-12);
    SvPauli zx = { 1.0, 0x1, 0x4 };
    double e = dm_expval(&dm, &zx, 1), sd = sqrt((1 - e * e) / (double)shots);
    ck_assert(fabs(dm_expval_shots(&dm, &zx, 1, shots, &r) - e) <= 6 * sd + 1e-9);
    double *sp = malloc(shots * sizeof *sp), acc = 0;
    dm_sample_pauli(&dm, &zx, shots, &r, sp);
    for (size_t i = 0; i < shots; i++) {
        ck_assert(sp[i] == 1 || sp[i] == -1);
        acc += sp[i];
    }
    ck_assert(fabs(acc / (double)shots - e) <= 6 * sd + 1e-9);
    ck_assert(dm_var_shots(&dm, &zx, 1, shots, &r) >= 0);
    free(sp);
    free(s);
    dm_free(&dm);
}
END_TEST

START_TEST(test_errors)
{
    DmState dm;
    ck_assert_int_eq(dm_init(&dm, 2), 0);
    char err[256];
    SvOp op;
    memset(&op, 0, sizeof op);
    op.gate = SV_RX;
    op.nwires = 1;
    op.wires[0] = 2; /* a valid wire of the 4-qubit vector, not of rho */
    op.nparams = 1;
    ck_assert_int_eq(dm_apply(&dm, &op, err, sizeof err), -1);
    ck_assert_str_eq(err, "RX: wire 2 out of range for a 2-wire device");
    op.gate = SV_CNOT;
    op.nwires = 2;
    op.wires[0] = 0;
    op.wires[1] = 0;
    op.nparams = 0;
    ck_assert_int_eq(dm_apply(&dm, &op, err, sizeof err), -1);
    ck_assert_str_eq(err, "CNOT: wires must be distinct (0, 0)");
    op.gate = SV_PAULIX;
    op.nwires = 1;
    op.nctrl = 1;
    op.ctrl[0] = 3;
    ck_assert_int_eq(dm_apply(&dm, &op, err, sizeof err), -1);
    ck_assert_str_eq(err, "PauliX: control wire 3 out of range for a 2-wire device");
    double p = 1.5;
    ck_assert_int_eq(dm_apply_channel(&dm, DM_BITFLIP, &p, 0, err, sizeof err), -1);
    ck_assert_str_eq(err, "BitFlip: p must be in the interval [0,1], got 1.5");
    double th[4] = { 0.1, 1.0, 2.5, 0.1 };
    ck_assert_int_eq(dm_apply_channel(&dm, DM_THERMAL, th, 0, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "T_2 greater than 2 * T_1") != NULL, "%s", err);
    double g = 0.2;
    ck_assert_int_eq(dm_apply_channel(&dm, DM_AMPDAMP, &g, 5, err, sizeof err), -1);
    ck_assert_str_eq(err, "AmplitudeDamping: wire 5 out of range for a 2-wire device");
    cplx k[4] = { 1, 0, 0, 1 };
    int w2[2] = { 1, 1 };
    ck_assert_int_eq(dm_apply_kraus(&dm, w2, 2, 1, k, err, sizeof err), -1);
    ck_assert_str_eq(err, "channel: wires must be distinct (1, 1)");
    ck_assert_int_eq(dm_pauli_error_kraus("XQ", 0.1, NULL, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "must be X, Y or Z") != NULL, "%s", err);
    int bad = 7;
    ck_assert_int_eq(dm_measure(&dm, bad, 0, NULL, err, sizeof err), -1);
    ck_assert_str_eq(err, "measure: wire 7 out of range for a 2-wire device");
    ck_assert_ptr_null(dm_channel_by_name("Nope"));
    ck_assert_str_eq(dm_channel_by_name("DepolarizingChannel")->name, "DepolarizingChannel");
    dm_free(&dm);
    ck_assert_int_eq(dm_init(&dm, DM_MAX_WIRES + 1) == -1, 1);
    ck_assert_ptr_null(dm.v.amp);
    ck_assert_uint_eq(dm_bytes(3), 16u << 6);
}
END_TEST

START_TEST(test_threads)
{
    /* 8 wires: the vector has 16 qubits, above SV_PAR_QUBITS */
    SvTeam *team = sv_team_new(2);
    ck_assert_ptr_nonnull(team);
    Rng r1, r2;
    rng_seed(&r1, 4);
    rng_seed(&r2, 4);
    DmState a, b;
    ck_assert_int_eq(dm_init(&a, 8), 0);
    ck_assert_int_eq(dm_init(&b, 8), 0);
    dm_set_threads(&a, team, 2);
    for (int step = 0; step < 30; step++) {
        SvOp op;
        memset(&op, 0, sizeof op);
        op.gate = step % 3 == 0 ? SV_CNOT : step % 3 == 1 ? SV_RY : SV_HADAMARD;
        op.nwires = op.gate == SV_CNOT ? 2 : 1;
        op.nparams = op.gate == SV_RY ? 1 : 0;
        op.params[0] = rng_uniform(&r1);
        rng_uniform(&r2);
        op.wires[0] = step % 8;
        op.wires[1] = (step + 3) % 8;
        ck_assert_int_eq(dm_apply(&a, &op, NULL, 0), 0);
        ck_assert_int_eq(dm_apply(&b, &op, NULL, 0), 0);
        double p = 0.05;
        ck_assert_int_eq(dm_apply_channel(&a, DM_DEPOLARIZING, &p, step % 8, NULL, 0), 0);
        ck_assert_int_eq(dm_apply_channel(&b, DM_DEPOLARIZING, &p, step % 8, NULL, 0), 0);
    }
    ck_assert(maxdiff(a.v.amp, b.v.amp, a.v.dim) <= TOL);
    dm_free(&a);
    dm_free(&b);
    sv_team_free(team);
}
END_TEST

static Suite *dm_suite(void)
{
    Suite *s = suite_create("dm");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_every_gate);
    tcase_add_test(tc, test_gates_small_and_odd);
    tcase_add_test(tc, test_builtin_channels);
    tcase_add_test(tc, test_thermal_documented);
    tcase_add_test(tc, test_channel_derivatives);
    tcase_add_test(tc, test_qubit_channel_and_pauli_error);
    tcase_add_test(tc, test_pure_circuit_agrees);
    tcase_add_test(tc, test_expval_var_probs);
    tcase_add_test(tc, test_reduced_purity_entropy);
    tcase_add_test(tc, test_measure_collapse);
    tcase_add_test(tc, test_samples_and_shots);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(dm_suite()); }
