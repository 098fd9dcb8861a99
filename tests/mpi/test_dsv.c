/* test_dsv.c — the distributed statevector against the single-process one.
 *
 * Run under mpirun with 1, 2 or 4 ranks (tests/mpi/run.sh):
 *  - every gate kind, plain and adjoint, with targets and extra controls
 *    drawn on global and local wires, on random states: the gathered state
 *    equals sv_apply's on the whole vector to 1e-12 and bit for bit;
 *    with relabelling on and off and with an exchange buffer smaller than
 *    a chunk (so blocks, stretches and high local targets are exercised);
 *  - random circuits of 12 to 20 wires: the state, probs over all wires
 *    and over subsets, expectation values and variances of random Pauli
 *    sums, shot estimates, samples, mid-circuit measurements: equal to sv
 *    (the state bit for bit, the rest to 1e-12), and a digest of every
 *    result is written to argv[1] by rank 0 so that run.sh can compare
 *    the runs on different rank counts byte for byte.
 * Every rank keeps the whole reference state (small states only).
 */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsv.h"
#include "mpitest.h"

#define TOL 1e-12

#include "randops.h"

/* Compare the gathered state with the reference on rank 0; the verdict is
   shared so that every rank fails together. */
static void compare_state(Dsv *d, const SvState *ref, cplx *buf, const char *what, int bitwise)
{
    char err[256];
    int rc = dsv_gather(d, 0, buf, err, sizeof err);
    CHECK(rc == 0, "%s: gather: %s", what, err);
    int bad[2] = { 0, 0 };
    if (mt_rank == 0 && rc == 0) {
        double worst = 0;
        uint64_t firstbit = UINT64_MAX;
        for (uint64_t i = 0; i < ref->dim; i++) {
            double e = cabs(buf[i] - ref->amp[i]);
            if (e > worst) worst = e;
            if (!(creal(buf[i]) == creal(ref->amp[i]) && cimag(buf[i]) == cimag(ref->amp[i])) &&
                firstbit == UINT64_MAX)
                firstbit = i;
        }
        bad[0] = !(worst <= TOL);
        bad[1] = bitwise && firstbit != UINT64_MAX;
        if (bad[0]) fprintf(stderr, "%s: max error %.3g\n", what, worst);
        if (bad[1])
            fprintf(stderr, "%s: not bit-identical from index %llu: %.17g%+.17gi vs %.17g%+.17gi\n",
                    what, (unsigned long long)firstbit, creal(buf[firstbit]), cimag(buf[firstbit]),
                    creal(ref->amp[firstbit]), cimag(ref->amp[firstbit]));
    }
    mt_bcast(bad, 2);
    CHECK(!bad[0], "%s: state differs from sv beyond 1e-12", what);
    CHECK(!bad[1], "%s: state not bit-identical to sv", what);
}

static void describe(const SvOp *op, char *buf, size_t len)
{
    int at =
        snprintf(buf, len, "%s%s wires", sv_gate_info(op->gate)->name, op->adjoint ? "^dag" : "");
    for (int i = 0; i < op->nwires; i++)
        at += snprintf(buf + at, len - (size_t)at, " %d", op->wires[i]);
    at += snprintf(buf + at, len - (size_t)at, " ctrl");
    for (int i = 0; i < op->nctrl; i++)
        at += snprintf(buf + at, len - (size_t)at, " %d", op->ctrl[i]);
}

/* Every gate kind, one at a time, on fresh random states. */
static void test_gates(int n, size_t xbuf, int relabel, int reps)
{
    int k = __builtin_ctz((unsigned)mt_size);
    uint64_t dim = (uint64_t)1 << n;
    cplx *psi = malloc(dim * sizeof(cplx)), *buf = malloc(dim * sizeof(cplx));
    SvState ref;
    sv_init(&ref, n);
    DsvConfig cfg = { .xbuf_bytes = xbuf, .relabel = relabel };
    Dsv *d = NULL;
    char err[256];
    CHECK(dsv_new(&d, n, MT_COMM, &cfg, err, sizeof err) == 0, "dsv_new: %s", err);
    if (!d) return;
    Rng r;
    rng_seed(&r, 1234 + (uint64_t)n);
    for (int rep = 0; rep < reps; rep++)
        for (int g = 0; g < SV_NGATES; g++) {
            SvOp op;
            random_op(&op, (SvGate)g, n, k, &r);
            random_state(psi, dim, &r);
            memcpy(ref.amp, psi, dim * sizeof(cplx));
            CHECK(dsv_load(d, psi, err, sizeof err) == 0, "load: %s", err);
            char what[200];
            describe(&op, what, sizeof what);
            int e1 = sv_apply(&ref, &op, err, sizeof err);
            int e2 = dsv_apply(d, &op, err, sizeof err);
            CHECK(e1 == e2, "%s: sv says %d, dsv says %d (%s)", what, e1, e2, err);
            if (e1) continue;
            compare_state(d, &ref, buf, what, 1);
        }
    /* errors come back with sv's messages and leave the state usable */
    SvOp bad;
    memset(&bad, 0, sizeof bad);
    bad.gate = SV_CNOT;
    bad.nwires = 2;
    bad.wires[0] = 0;
    bad.wires[1] = n;
    CHECK(dsv_apply(d, &bad, err, sizeof err) == -1, "out-of-range wire accepted");
    char want[200];
    snprintf(want, sizeof want, "CNOT: wire %d out of range for a %d-wire device", n, n);
    CHECK(strcmp(err, want) == 0, "message %s", err);
    CHECK(dsv_broken(d) == NULL, "state broken by a validation error");
    dsv_free(d);
    sv_free(&ref);
    free(psi);
    free(buf);
}

/* A layer-structured random circuit applied to both. */
static void random_circuit(Dsv *d, SvState *ref, int n, int depth, Rng *r, int *bad)
{
    int k = 2; /* the same circuit on every rank count: wires 0..2 often */
    char err[256];
    for (int i = 0; i < depth; i++) {
        SvOp op;
        SvGate g = (SvGate)rng_below(r, SV_NGATES);
        if (g == SV_QUBITUNITARY && rng_uniform(r) < 0.5) g = SV_HADAMARD;
        random_op(&op, g, n, k + 1, r);
        if (rng_uniform(r) < 0.3) { /* runs of gates on one wire: relabelling's case */
            SvOp h;
            memset(&h, 0, sizeof h);
            h.gate = rng_uniform(r) < 0.5 ? SV_HADAMARD : SV_RY;
            h.nwires = 1;
            h.wires[0] = (int)rng_below(r, (uint64_t)(k + 1 < n ? k + 1 : n));
            h.nparams = h.gate == SV_RY;
            h.params[0] = rng_uniform(r);
            for (int t = 0; t < 3; t++) {
                if (sv_apply(ref, &h, err, sizeof err) != 0 ||
                    dsv_apply(d, &h, err, sizeof err) != 0)
                    (*bad)++;
            }
        }
        int e1 = sv_apply(ref, &op, err, sizeof err);
        int e2 = dsv_apply(d, &op, err, sizeof err);
        if (e1 != e2) (*bad)++;
    }
}

static double maxdiff(const double *a, const double *b, size_t n)
{
    double w = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(a[i] - b[i]);
        if (!(e <= w)) w = e;
    }
    return w;
}

static void test_circuit(int n, int depth, size_t xbuf, int relabel)
{
    uint64_t dim = (uint64_t)1 << n;
    char err[256], tag[64];
    SvState ref;
    sv_init(&ref, n);
    DsvConfig cfg = { .xbuf_bytes = xbuf, .relabel = relabel };
    Dsv *d = NULL;
    CHECK(dsv_new(&d, n, MT_COMM, &cfg, err, sizeof err) == 0, "dsv_new: %s", err);
    if (!d) return;
    Rng r;
    rng_seed(&r, 99 + (uint64_t)n);
    int bad = 0;
    random_circuit(d, &ref, n, depth, &r, &bad);
    CHECK(bad == 0, "n=%d: %d ops disagree on validity", n, bad);
    cplx *buf = malloc(dim * sizeof(cplx));
    snprintf(tag, sizeof tag, "n=%d circuit", n);
    compare_state(d, &ref, buf, tag, 1);
    if (mt_rank == 0) note(tag, buf, dim * sizeof(cplx));
    /* probabilities: all wires (bit-identical: |a|^2 of the same amplitudes) */
    double *p = malloc(dim * sizeof(double)), *q = malloc(dim * sizeof(double));
    CHECK(dsv_probs(d, NULL, 0, p, err, sizeof err) == 0, "probs: %s", err);
    sv_probs(&ref, NULL, 0, q, NULL, 0);
    if (mt_rank == 0) {
        CHECK(memcmp(p, q, dim * sizeof(double)) == 0, "n=%d probs(all) not bit-identical to sv",
              n);
        note("probs all", p, dim * sizeof(double));
    }
    /* subsets, in and out of order, touching global and local wires */
    for (int rep = 0; rep < 6; rep++) {
        int w[8], used[64] = { 0 }, nw = 1 + (int)rng_below(&r, 6);
        for (int i = 0; i < nw; i++) w[i] = pick(&r, n, 2, used, rng_uniform(&r) < 0.4);
        CHECK(dsv_probs(d, w, nw, p, err, sizeof err) == 0, "probs subset: %s", err);
        sv_probs(&ref, w, nw, q, NULL, 0);
        CHECK(maxdiff(p, q, (size_t)1 << nw) <= TOL, "n=%d probs subset differs by %.3g", n,
              maxdiff(p, q, (size_t)1 << nw));
        note("probs subset", p, ((size_t)1 << nw) * sizeof(double));
    }
    /* Pauli sums */
    for (int rep = 0; rep < 6; rep++) {
        SvPauli t[8];
        int nt = random_paulis(t, n, &r);
        double e = 0, v = 0;
        CHECK(dsv_expval(d, t, nt, &e, err, sizeof err) == 0, "expval: %s", err);
        CHECK(dsv_var(d, t, nt, &v, err, sizeof err) == 0, "var: %s", err);
        double e0 = sv_expval(&ref, t, nt), v0 = sv_var(&ref, t, nt);
        CHECK(fabs(e - e0) <= TOL, "n=%d expval %.17g vs sv %.17g", n, e, e0);
        CHECK(fabs(v - v0) <= 1e-11, "n=%d var %.17g vs sv %.17g", n, v, v0);
        note("expval", &e, sizeof e);
        note("var", &v, sizeof v);
        Rng r1 = r, r2 = r;
        double es = 0, es0 = sv_expval_shots(&ref, t, nt, 1000, &r1);
        CHECK(dsv_expval_shots(d, t, nt, (DsvShots){ 1000, &r2 }, &es, err, sizeof err) == 0,
              "expval shots: %s", err);
        CHECK(fabs(es - es0) <= TOL, "n=%d expval shots %.17g vs sv %.17g", n, es, es0);
        note("expval shots", &es, sizeof es);
        rng_next(&r);
    }
    /* samples: valid indices, frequencies near |a|^2, identical across runs */
    size_t shots = 2000;
    uint64_t *smp = malloc(shots * sizeof(uint64_t));
    Rng rs = r;
    CHECK(dsv_sample(d, shots, &rs, smp, err, sizeof err) == 0, "sample: %s", err);
    int okidx = 1;
    for (size_t i = 0; i < shots; i++) okidx &= smp[i] < dim && ref.amp[smp[i]] != 0;
    CHECK(okidx, "n=%d sample drew an impossible index", n);
    note("sample", smp, shots * sizeof(uint64_t));
    free(smp);
    /* mid-circuit measurements with and without reset, global and local */
    for (int rep = 0; rep < 4; rep++) {
        int w = rep < 2 ? (int)rng_below(&r, 2) : (int)rng_below(&r, (uint64_t)n);
        int reset = rep & 1;
        Rng m1 = r, m2 = r;
        int o1 = sv_measure(&ref, w, reset, &m1, NULL, 0);
        int o2 = dsv_measure(d, w, reset, &m2, err, sizeof err);
        CHECK(o1 == o2, "n=%d measure(%d) outcome sv %d dsv %d", n, w, o1, o2);
        r = m1;
        /* the collapse scales by 1/sqrt(p) with p summed exactly here and
           in sv's own order there: equal to 1e-12, bit-identical across
           rank counts (the digest) */
        snprintf(tag, sizeof tag, "n=%d after measure(%d, reset=%d)", n, w, reset);
        compare_state(d, &ref, buf, tag, 0);
        if (mt_rank == 0) note(tag, buf, dim * sizeof(cplx));
        note(tag, &o2, sizeof o2);
    }
    double nn = 0;
    CHECK(dsv_norm(d, &nn, err, sizeof err) == 0, "norm: %s", err);
    CHECK(fabs(nn - 1) <= 1e-12, "norm %.17g", nn);
    note("norm", &nn, sizeof nn);
    DsvStats st;
    dsv_stats(d, &st);
    if (mt_rank == 0 && getenv("DSV_VERBOSE"))
        printf("n=%d: ops %llu local %llu diag-global %llu exchanges %llu swaps %llu sent %llu "
               "bytes\n",
               n, (unsigned long long)st.ops, (unsigned long long)st.local_ops,
               (unsigned long long)st.diag_global, (unsigned long long)st.exchanges,
               (unsigned long long)st.swaps, (unsigned long long)st.bytes_sent);
    free(p);
    free(q);
    free(buf);
    dsv_free(d);
    sv_free(&ref);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    digest = mt_rank == 0 && argc > 1 ? fopen(argv[1], "w") : NULL;
    /* gate by gate: small enough for a dense reference everywhere */
    test_gates(12, 0, 1, 3);
    test_gates(14, 0, 1, 2);
    test_gates(14, 64 << 10, 0, 2); /* blocks smaller than a chunk */
    test_gates(15, 64 << 10, 1, 1);
    /* random circuits of 12 to 20 wires */
    test_circuit(12, 60, 0, 1);
    test_circuit(14, 80, 64 << 10, 1);
    test_circuit(16, 80, 0, 0);
    test_circuit(20, 40, 0, 1);
    if (digest) fclose(digest);
    return mt_finish("test_dsv");
}
