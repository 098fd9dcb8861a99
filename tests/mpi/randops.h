/* randops.h — random states, unitaries, ops and Pauli sums for the MPI
 * tests (the same sequence on every rank and rank count: one seed), and
 * the digest file through which run.sh compares runs. Included by one
 * test program each; needs mpitest.h first. */
#ifndef QH_RANDOPS_H
#define QH_RANDOPS_H

#include <complex.h>
#include <math.h>
#include <string.h>

#include "sv.h"

static FILE *digest;

/* FNV-1a of bytes: results are compared across runs through this. */
static inline uint64_t fnv(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static inline void note(const char *what, const void *p, size_t n)
{
    if (mt_rank == 0 && digest)
        fprintf(digest, "%s %016llx\n", what, (unsigned long long)fnv(p, n));
}

/* A random normalised state (the same on every rank: same seed). */
static inline void random_state(cplx *v, uint64_t dim, Rng *r)
{
    double s = 0;
    for (uint64_t i = 0; i < dim; i++) {
        double re = rng_normal(r), im = rng_normal(r);
        double p[2] = { re, im };
        memcpy(&v[i], p, sizeof p);
        s += re * re + im * im;
    }
    s = 1 / sqrt(s);
    for (uint64_t i = 0; i < dim; i++) v[i] *= s;
}

/* A random unitary of dimension dm (Gram-Schmidt on Gaussian columns). */
static inline void random_unitary(cplx *u, int dm, Rng *r)
{
    for (int i = 0; i < dm * dm; i++) {
        double p[2] = { rng_normal(r), rng_normal(r) };
        memcpy(&u[i], p, sizeof p);
    }
    for (int c = 0; c < dm; c++) {
        for (int k = 0; k < c; k++) {
            cplx dot = 0;
            for (int i = 0; i < dm; i++) dot += conj(u[i * dm + k]) * u[i * dm + c];
            for (int i = 0; i < dm; i++) u[i * dm + c] -= dot * u[i * dm + k];
        }
        double nn = 0;
        for (int i = 0; i < dm; i++) nn += creal(u[i * dm + c] * conj(u[i * dm + c]));
        nn = 1 / sqrt(nn);
        for (int i = 0; i < dm; i++) u[i * dm + c] *= nn;
    }
}

static cplx umat[1 << 6]; /* QubitUnitary matrices up to 3 wires */

/* Distinct wires: `want_global` of them among the k global ones first. */
static inline int pick(Rng *r, int n, int k, int *used, int want_global)
{
    for (int tries = 0; tries < 1000; tries++) {
        int w =
            want_global && k > 0 ? (int)rng_below(r, (uint64_t)k) : (int)rng_below(r, (uint64_t)n);
        if (!used[w]) {
            used[w] = 1;
            return w;
        }
        want_global = 0;
    }
    return -1;
}

/* A random op of gate g on n wires, targets/controls global with some
   probability (k = global wires of the layout on the most ranks tested). */
static inline void random_op(SvOp *op, SvGate g, int n, int k, Rng *r)
{
    const SvGateInfo *gi = sv_gate_info(g);
    memset(op, 0, sizeof *op);
    op->gate = g;
    int nw = gi->nwires;
    if (nw < 0) nw = 1 + (int)rng_below(r, 3);
    op->nwires = nw;
    op->nparams = gi->nparams;
    for (int i = 0; i < gi->nparams; i++) op->params[i] = (rng_uniform(r) - 0.5) * 6;
    int used[64] = { 0 };
    for (int i = 0; i < nw; i++) op->wires[i] = pick(r, n, k, used, rng_uniform(r) < 0.5);
    op->nctrl = (int)rng_below(r, 3);
    if (nw + op->nctrl > n) op->nctrl = 0;
    for (int i = 0; i < op->nctrl; i++) op->ctrl[i] = pick(r, n, k, used, rng_uniform(r) < 0.5);
    op->adjoint = rng_uniform(r) < 0.3;
    if (g == SV_QUBITUNITARY) {
        random_unitary(umat, 1 << nw, r);
        op->matrix = umat;
    }
    if (g == SV_BASISSTATE) op->bits = rng_below(r, (uint64_t)1 << nw);
    if (rng_uniform(r) < 0.1 && gi->nparams) op->params[0] = 0.0; /* diagonal-looking RX(0) & co. */
}

/* Random Pauli sums over n wires. */
static inline int random_paulis(SvPauli *t, int n, Rng *r)
{
    int nt = 1 + (int)rng_below(r, 6);
    for (int i = 0; i < nt; i++) {
        t[i].coeff = rng_uniform(r) * 2 - 1;
        t[i].x = t[i].z = 0;
        int nw = (int)rng_below(r, 4);
        for (int j = 0; j < nw; j++) {
            int w = (int)rng_below(r, (uint64_t)n), kind = (int)rng_below(r, 3);
            if (kind != 1) t[i].x |= (uint64_t)1 << w;
            if (kind != 0) t[i].z |= (uint64_t)1 << w;
        }
    }
    return nt;
}

#endif
