/* meas_dm.c — reduced states (svmeas.h): the reduced density matrix of a
 * set of wires, and the quantities PennyLane derives from it: the von
 * Neumann entropy (natural log), the mutual information of two disjoint
 * sets, the purity. rho = sum over the rest indices r of v_r v_r^dagger,
 * where v_r is psi restricted to the 2^k indices of the wires with the
 * other wires fixed to r. Must not know about the language or log bases
 * (callers divide by log(base)).
 */
#include "svmeas.h"
#include "sv_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define E_OVERLAP "mutual_info: wire %d is in both sets (the sets must be disjoint)"

typedef struct DmCtx {
    const SvState *s;
    int k;
    uint64_t d;
    int pos[SV_MAX_RDM];
    const uint64_t *off;
    cplx *part[SV_MAX_TEAM]; /* per part: d x d, upper triangle accumulated */
} DmCtx;

/* Why: each part accumulates its own upper triangle of sum v v^dagger. */
static void dm_part(void *vctx, int part, int np)
{
    DmCtx *c = vctx;
    uint64_t d = c->d, lo, hi;
    cplx *rho = c->part[part];
    memset(rho, 0, d * d * sizeof(cplx));
    sv_slice(c->s->dim >> c->k, part, np, &lo, &hi);
    cplx v[1 << SV_MAX_RDM];
    for (uint64_t r = lo; r < hi; r++) {
        uint64_t base = sv_expand(r, c->pos, c->k);
        int any = 0;
        for (uint64_t a = 0; a < d; a++) {
            v[a] = c->s->amp[base | c->off[a]];
            any |= v[a] != 0;
        }
        if (!any) continue;
        for (uint64_t a = 0; a < d; a++) {
            if (v[a] == 0) continue;
            cplx *row = rho + a * d;
            cplx va = v[a];
            for (uint64_t b = a; b < d; b++) row[b] += va * conj(v[b]);
        }
    }
}

int sv_density_matrix(const SvState *s, const int *wires, int k, cplx *rho, char *err,
                      size_t errlen)
{
    const char *name = "density_matrix";
    if (!s || !s->amp) return sv_err(err, errlen, SV_E_NOSTATE, name);
    if (!rho) return sv_err(err, errlen, SV_E_NOMAT, name);
    if (k < 0 || k > SV_MAX_RDM || k > s->nq)
        return sv_err(err, errlen, SV_E_NWMEAS, name, k, s->nq < SV_MAX_RDM ? s->nq : SV_MAX_RDM);
    if (k > 0 && !wires) return sv_err(err, errlen, SV_E_NOWIRES, name);
    for (int i = 0; i < k; i++) {
        if (wires[i] < 0) return sv_err(err, errlen, SV_E_NEGWIRE, name, wires[i]);
        if (wires[i] >= s->nq) return sv_err(err, errlen, SV_E_RANGE, name, wires[i], s->nq);
        for (int j = 0; j < i; j++)
            if (wires[j] == wires[i]) {
                char buf[32];
                snprintf(buf, sizeof buf, "%d, %d", wires[j], wires[i]);
                return sv_err(err, errlen, SV_E_DUP, name, buf);
            }
    }
    uint64_t d = (uint64_t)1 << k;
    uint64_t *off = malloc(d * sizeof(uint64_t));
    if (!off) return sv_err(err, errlen, SV_E_NOMEM, name);
    for (uint64_t a = 0; a < d; a++) {
        uint64_t o = 0;
        for (int i = 0; i < k; i++)
            if ((a >> (k - 1 - i)) & 1) o |= (uint64_t)1 << sv_bitpos(s->nq, wires[i]);
        off[a] = o;
    }
    DmCtx c;
    c.s = s;
    c.k = k;
    c.d = d;
    c.off = off;
    for (int i = 0; i < k; i++) c.pos[i] = sv_bitpos(s->nq, wires[i]);
    sv_sort_ints(c.pos, k);
    /* parallel only while the per-part copies stay small */
    int np = sv_nparts(s);
    if (d * d * sizeof(cplx) * (size_t)np > ((size_t)64 << 20)) np = 1;
    c.part[0] = rho;
    int ok = 1;
    for (int p = 1; p < np; p++) {
        c.part[p] = malloc(d * d * sizeof(cplx));
        if (!c.part[p]) {
            np = p;
            ok = 0;
        }
    }
    if (!ok || np == 1) {
        for (int p = 1; p < np; p++) free(c.part[p]);
        np = 1;
        dm_part(&c, 0, 1);
    } else {
        int used = sv_parallel(s, dm_part, &c);
        for (int p = 1; p < used; p++)
            for (uint64_t i = 0; i < d * d; i++) rho[i] += c.part[p][i];
        for (int p = 1; p < np; p++) free(c.part[p]);
    }
    free(off);
    for (uint64_t a = 0; a < d; a++) {
        rho[a * d + a] = creal(rho[a * d + a]);
        for (uint64_t b = a + 1; b < d; b++) rho[b * d + a] = conj(rho[a * d + b]);
    }
    return 0;
}

double sv_purity_of(const cplx *rho, int d)
{
    double p = 0;
    for (size_t i = 0; i < (size_t)d * d; i++)
        p += creal(rho[i]) * creal(rho[i]) + cimag(rho[i]) * cimag(rho[i]);
    return p;
}

/* Why: PennyLane keeps the positive eigenvalues only (rounding makes tiny
   negative ones). */
double sv_entropy_of(const cplx *rho, int d, char *err, size_t errlen)
{
    cplx *a = malloc((size_t)d * d * sizeof(cplx));
    double *w = malloc((size_t)d * sizeof(double));
    if (!a || !w) {
        free(a);
        free(w);
        sv_err(err, errlen, SV_E_NOMEM, "vn_entropy");
        return NAN;
    }
    memcpy(a, rho, (size_t)d * d * sizeof(cplx));
    double S = NAN;
    if (sv_eigh(a, d, w, NULL, err, errlen) == 0) {
        S = 0;
        for (int i = 0; i < d; i++)
            if (w[i] > 0) S -= w[i] * log(w[i]);
    }
    free(a);
    free(w);
    return S;
}

/* rho of the wires into a fresh buffer (NULL + err on failure). */
static cplx *reduced(const SvState *s, const int *wires, int k, const char *name, char *err,
                     size_t errlen)
{
    if (k < 0 || k > SV_MAX_RDM) {
        sv_err(err, errlen, SV_E_NWMEAS, name, k, SV_MAX_RDM);
        return NULL;
    }
    size_t d = (size_t)1 << k;
    cplx *rho = malloc(d * d * sizeof(cplx));
    if (!rho) {
        sv_err(err, errlen, SV_E_NOMEM, name);
        return NULL;
    }
    if (sv_density_matrix(s, wires, k, rho, err, errlen) != 0) {
        free(rho);
        return NULL;
    }
    return rho;
}

double sv_vn_entropy(const SvState *s, const int *wires, int k, char *err, size_t errlen)
{
    cplx *rho = reduced(s, wires, k, "vn_entropy", err, errlen);
    if (!rho) return NAN;
    double S = sv_entropy_of(rho, 1 << k, err, errlen);
    free(rho);
    return S;
}

double sv_purity(const SvState *s, const int *wires, int k, char *err, size_t errlen)
{
    cplx *rho = reduced(s, wires, k, "purity", err, errlen);
    if (!rho) return NAN;
    double p = sv_purity_of(rho, 1 << k);
    free(rho);
    return p;
}

double sv_mutual_info(const SvState *s, const int *wa, int ka, const int *wb, int kb, char *err,
                      size_t errlen)
{
    const char *name = "mutual_info";
    if (ka < 1 || kb < 1 || !wa || !wb) {
        sv_err(err, errlen, SV_E_NOWIRES, name);
        return NAN;
    }
    if (ka + kb > SV_MAX_RDM) {
        sv_err(err, errlen, SV_E_NWMEAS, name, ka + kb, SV_MAX_RDM);
        return NAN;
    }
    int ab[SV_MAX_RDM];
    for (int i = 0; i < ka; i++) ab[i] = wa[i];
    for (int i = 0; i < kb; i++) {
        for (int j = 0; j < ka; j++)
            if (wa[j] == wb[i]) {
                sv_err(err, errlen, E_OVERLAP, wb[i]);
                return NAN;
            }
        ab[ka + i] = wb[i];
    }
    double sa = sv_vn_entropy(s, wa, ka, err, errlen);
    if (isnan(sa)) return NAN;
    double sb = sv_vn_entropy(s, wb, kb, err, errlen);
    if (isnan(sb)) return NAN;
    double sab = sv_vn_entropy(s, ab, ka + kb, err, errlen);
    if (isnan(sab)) return NAN;
    return sa + sb - sab;
}
