/* test_dsvr.c — a distributed state driven from rank 0 (dsvr.h).
 *
 * Rank 0 leads: it applies random circuits of 12 to 18 wires through
 * dsvr_* and compares with the single-process simulator it runs beside
 * (amplitudes bit for bit, readouts to 1e-12); the other ranks only serve
 * (dsvr_serve). Errors come back on the leader with sv's messages, the
 * state survives them, a state can be freed and made anew. A digest of
 * every result goes to argv[1] (run.sh compares 1, 2 and 4 ranks).
 */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsvr.h"
#include "mpitest.h"

#define TOL 1e-12

#include "randops.h"

static void lead(void)
{
    char err[256];
    Dsvr *r = dsvr_open(MPI_COMM_WORLD, NULL, err, sizeof err);
    CHECK(r != NULL, "dsvr_open: %s", err);
    if (!r) return;
    int sizes[] = { 12, 15, 18 };
    for (int si = 0; si < 3; si++) {
        int n = sizes[si];
        uint64_t dim = (uint64_t)1 << n;
        CHECK(dsvr_new(r, n, 0, err, sizeof err) == 0, "new %d: %s", n, err);
        CHECK(dsvr_new(r, n, 0, err, sizeof err) == -1, "a second state accepted");
        SvState ref;
        sv_init(&ref, n);
        Rng g;
        rng_seed(&g, 7 + (uint64_t)n);
        for (int i = 0; i < 150; i++) {
            SvOp op;
            SvGate gate = (SvGate)rng_below(&g, SV_NGATES);
            random_op(&op, gate, n, 2, &g);
            int e1 = sv_apply(&ref, &op, NULL, 0), e2 = dsvr_apply(r, &op, err, sizeof err);
            CHECK(e1 == e2, "op %d validity sv %d dsvr %d", i, e1, e2);
        }
        SvOp bad;
        memset(&bad, 0, sizeof bad);
        bad.gate = SV_RX;
        bad.nwires = 1;
        bad.wires[0] = 0;
        CHECK(dsvr_apply(r, &bad, err, sizeof err) == -1 &&
                  strcmp(err, "RX: expected 1 parameter, got 0") == 0,
              "message: %s", err);
        cplx *buf = malloc(dim * sizeof(cplx));
        CHECK(dsvr_gather(r, buf, err, sizeof err) == 0, "gather: %s", err);
        int same = 1;
        for (uint64_t i = 0; i < dim; i++) same &= buf[i] == ref.amp[i];
        CHECK(same, "n=%d: state not bit-identical to sv", n);
        note("state", buf, dim * sizeof(cplx));
        double *p = malloc(dim * sizeof(double)), *q = malloc(dim * sizeof(double));
        CHECK(dsvr_probs(r, NULL, 0, (DsvShots){ 0, NULL }, p, err, sizeof err) == 0, "probs: %s",
              err);
        sv_probs(&ref, NULL, 0, q, NULL, 0);
        CHECK(memcmp(p, q, dim * sizeof(double)) == 0, "n=%d probs differ", n);
        int w[3] = { 1, n - 1, 0 };
        CHECK(dsvr_probs(r, w, 3, (DsvShots){ 0, NULL }, p, err, sizeof err) == 0,
              "probs subset: %s", err);
        sv_probs(&ref, w, 3, q, NULL, 0);
        double worst = 0;
        for (int i = 0; i < 8; i++) worst = fmax(worst, fabs(p[i] - q[i]));
        CHECK(worst <= TOL, "probs subset off by %.3g", worst);
        note("probs subset", p, 8 * sizeof(double));
        Rng ps = g;
        CHECK(dsvr_probs(r, w, 2, (DsvShots){ 500, &ps }, p, err, sizeof err) == 0,
              "probs shots: %s", err);
        note("probs shots", p, 4 * sizeof(double));
        SvPauli t[8];
        int nt = random_paulis(t, n, &g);
        double e = 0, v = 0, e0 = sv_expval(&ref, t, nt), v0 = sv_var(&ref, t, nt);
        CHECK(dsvr_expval(r, t, nt, (DsvShots){ 0, NULL }, &e, err, sizeof err) == 0, "expval: %s",
              err);
        CHECK(dsvr_var(r, t, nt, (DsvShots){ 0, NULL }, &v, err, sizeof err) == 0, "var: %s", err);
        CHECK(fabs(e - e0) <= TOL && fabs(v - v0) <= 1e-11, "expval %.17g/%.17g var %.17g/%.17g", e,
              e0, v, v0);
        note("expval", &e, sizeof e);
        note("var", &v, sizeof v);
        Rng a = g, b = g;
        double es, es0 = sv_expval_shots(&ref, t, nt, 300, &a);
        CHECK(dsvr_expval(r, t, nt, (DsvShots){ 300, &b }, &es, err, sizeof err) == 0,
              "expval shots: %s", err);
        CHECK(fabs(es - es0) <= TOL, "expval shots %.17g vs %.17g", es, es0);
        double sp[50];
        CHECK(dsvr_sample_pauli(r, &t[0], 50, &b, sp, err, sizeof err) == 0, "sample_pauli: %s",
              err);
        note("sample_pauli", sp, sizeof sp);
        uint64_t smp[400];
        CHECK(dsvr_sample(r, 400, &b, smp, err, sizeof err) == 0, "sample: %s", err);
        note("sample", smp, sizeof smp);
        Rng m1 = b, m2 = b;
        int o1 = sv_measure(&ref, 0, 1, &m1, NULL, 0),
            o2 = dsvr_measure(r, 0, 1, &m2, err, sizeof err);
        CHECK(o1 == o2, "measure: sv %d dsvr %d (%s)", o1, o2, err);
        CHECK(dsvr_measure(r, n, 0, &m2, err, sizeof err) == -1, "measure of a bad wire accepted");
        double nn = 0;
        CHECK(dsvr_norm(r, &nn, err, sizeof err) == 0 && fabs(nn - 1) < 1e-12, "norm %.17g: %s", nn,
              err);
        note("norm", &nn, sizeof nn);
        CHECK(dsvr_reset(r, err, sizeof err) == 0, "reset: %s", err);
        CHECK(dsvr_norm(r, &nn, err, sizeof err) == 0 && nn == 1, "norm after reset %.17g", nn);
        CHECK(dsvr_free(r, err, sizeof err) == 0, "free: %s", err);
        free(buf);
        free(p);
        free(q);
        sv_free(&ref);
    }
    dsvr_close(r);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    digest = mt_rank == 0 && argc > 1 ? fopen(argv[1], "w") : NULL;
    if (mt_rank == 0)
        lead();
    else {
        char err[256];
        CHECK(dsvr_serve(MPI_COMM_WORLD, NULL, err, sizeof err) == 0, "serve: %s", err);
    }
    if (digest) fclose(digest);
    return mt_finish("test_dsvr");
}
