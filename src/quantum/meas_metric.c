/* meas_metric.c — the pieces of the Fubini-Study metric tensor
 * (svmeas.h): the generator of a gate parameter, and the covariance of a
 * layer's generators on a state, g_ij = Re<G_i G_j> - <G_i><G_j>, which is
 * one block of the block-diagonal metric (what metric_tensor computes per
 * layer of parametrised gates). Built from the observable kernels: each
 * product G_i G_j is a dense block on the union of the two gates' wires.
 * Must not know how circuits are split into layers (the caller does that).
 */
#include "svmeas.h"
#include "sv_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define E_UNION  "metric_tensor: two generators span %d wires (at most %d)"

int sv_generator(const SvOp *op, int p, cplx *out, char *err, size_t errlen)
{
    if (!op || !out) return sv_err(err, errlen, SV_E_NOOP);
    const SvGateInfo *gi = sv_gate_info(op->gate);
    const char *name = gi ? gi->name : "generator";
    int k = op->nctrl + op->nwires;
    if (k < 1 || k > SV_MAX_DENSE) return sv_err(err, errlen, SV_E_BIGOP, name, k, SV_MAX_DENSE);
    size_t d = (size_t)1 << k;
    cplx *u = malloc(d * d * sizeof(cplx)), *du = malloc(d * d * sizeof(cplx));
    if (!u || !du) {
        free(u);
        free(du);
        return sv_err(err, errlen, SV_E_NOMEM, name);
    }
    int rc = sv_op_matrix(op, u, err, errlen);
    if (rc == 0) rc = sv_op_dmatrix(op, p, du, err, errlen);
    if (rc == 0) {
        /* G = -i U^dagger U', made exactly Hermitian (it is, up to rounding) */
        for (size_t i = 0; i < d; i++)
            for (size_t j = 0; j < d; j++) {
                cplx acc = 0;
                for (size_t q = 0; q < d; q++) acc += conj(u[q * d + i]) * du[q * d + j];
                out[i * d + j] = -I * acc;
            }
        for (size_t i = 0; i < d; i++)
            for (size_t j = i; j < d; j++) {
                cplx h = 0.5 * (out[i * d + j] + conj(out[j * d + i]));
                out[i * d + j] = h;
                out[j * d + i] = conj(h);
            }
    }
    free(u);
    free(du);
    return rc;
}

/* The dense matrix of generator i embedded on the wires un[0..ku). */
static int embed(const cplx *g, const int *w, int k, const int *un, int ku, cplx *out, char *err, size_t errlen)
{
    SvTerm t;
    memset(&t, 0, sizeof t);
    t.coeff = 1;
    t.kind = SVB_DENSE;
    t.k = k;
    memcpy(t.wires, w, (size_t)k * sizeof(int));
    t.m = g;
    return sv_obs_matrix(&t, 1, un, ku, out, err, errlen);
}

int sv_metric_block(const SvState *s, int n, const cplx *const *gens, const int *const *wires,
                    const int *k, double *out, char *err, size_t errlen)
{
    const char *name = "metric_tensor";
    if (!s || !s->amp) return sv_err(err, errlen, SV_E_NOSTATE, name);
    if (n <= 0) return 0;
    if (!gens || !wires || !k || !out) return sv_err(err, errlen, SV_E_NOMAT, name);
    double *ev = malloc((size_t)n * sizeof(double));
    size_t dmax = (size_t)1 << SV_MAX_DENSE;
    cplx *a = malloc(dmax * dmax * sizeof(cplx)), *b = malloc(dmax * dmax * sizeof(cplx));
    if (!ev || !a || !b) {
        free(ev); free(a); free(b);
        return sv_err(err, errlen, SV_E_NOMEM, name);
    }
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        SvTerm t;
        memset(&t, 0, sizeof t);
        t.coeff = 1;
        t.kind = SVB_DENSE;
        t.k = k[i];
        memcpy(t.wires, wires[i], (size_t)k[i] * sizeof(int));
        t.m = gens[i];
        if (sv_obs_check(&t, 1, s->nq, name, err, errlen) != 0) { rc = -1; break; }
        ev[i] = sv_obs_expval(s, &t, 1, err, errlen);
        if (isnan(ev[i])) rc = -1;
    }
    for (int i = 0; i < n && rc == 0; i++)
        for (int j = i; j < n && rc == 0; j++) {
            /* union of the wires, in first-seen order */
            int un[2 * SV_MAX_DENSE], ku = 0;
            for (int q = 0; q < k[i]; q++) un[ku++] = wires[i][q];
            for (int q = 0; q < k[j]; q++) {
                int seen = 0;
                for (int r = 0; r < ku; r++) seen |= un[r] == wires[j][q];
                if (!seen) {
                    if (ku == SV_MAX_DENSE) { rc = sv_err(err, errlen, E_UNION, ku + 1, SV_MAX_DENSE); break; }
                    un[ku++] = wires[j][q];
                }
            }
            if (rc) break;
            size_t d = (size_t)1 << ku;
            if (embed(gens[i], wires[i], k[i], un, ku, a, err, errlen) != 0 ||
                embed(gens[j], wires[j], k[j], un, ku, b, err, errlen) != 0) { rc = -1; break; }
            /* H = (A B + B A) / 2: Re<A B> as the expectation of a Hermitian matrix */
            cplx *h = malloc(d * d * sizeof(cplx));
            if (!h) { rc = sv_err(err, errlen, SV_E_NOMEM, name); break; }
            for (size_t r = 0; r < d; r++)
                for (size_t c = 0; c < d; c++) {
                    cplx ab = 0, ba = 0;
                    for (size_t q = 0; q < d; q++) {
                        ab += a[r * d + q] * b[q * d + c];
                        ba += b[r * d + q] * a[q * d + c];
                    }
                    h[r * d + c] = 0.5 * (ab + ba);
                }
            SvTerm t;
            memset(&t, 0, sizeof t);
            t.coeff = 1;
            t.kind = SVB_DENSE;
            t.k = ku;
            memcpy(t.wires, un, (size_t)ku * sizeof(int));
            t.m = h;
            double e = sv_obs_expval(s, &t, 1, err, errlen);
            free(h);
            if (isnan(e)) { rc = -1; break; }
            out[(size_t)i * n + j] = out[(size_t)j * n + i] = e - ev[i] * ev[j];
        }
    free(ev);
    free(a);
    free(b);
    return rc;
}
