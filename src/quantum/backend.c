/* backend.c — the statevector and the density-matrix simulators as
 * backend.h's table. Gates are queued on the device's SvCirc (fuse.h); the
 * other slots are the simulators' own functions on the state as it is (the
 * caller has flushed). Knows sv.h, svmeas.h, dm.h and fuse.h.
 */
#include "backend.h"
#include "errf.h"
#include "qh_assert.h"
#include "svmeas.h"

#include <math.h>
#include <string.h>

void qb_init(QbDev *d, const QBackend *be, void *st, const SvFuseCfg *cfg)
{
    d->be = be;
    d->st = st;
    d->changes = 0;
    svc_init(&d->circ, cfg);
}

void qb_done(QbDev *d) { svc_free(&d->circ); }

/* ---- the statevector ---------------------------------------------------- */

static SvState *sv_of(QbDev *d) { return d->st; }

static int sv_b_apply(QbDev *d, const SvOp *op, char *err, size_t errlen)
{
    d->changes++;
    return svc_push(&d->circ, sv_of(d), op, err, errlen);
}
static int sv_b_flush(QbDev *d, char *err, size_t errlen)
{
    return svc_flush(&d->circ, sv_of(d), err, errlen);
}
static int sv_b_measure(QbDev *d, int wire, int reset, Rng *r, char *err, size_t errlen)
{
    d->changes++;
    return sv_measure(sv_of(d), wire, reset, r, err, errlen);
}
static int sv_b_reset(QbDev *d, int wire, Rng *r, char *err, size_t errlen)
{
    d->changes++;
    return sv_measure(sv_of(d), wire, 1, r, err, errlen);
}
static int sv_b_expval(QbDev *d, const QbRead *rq, double *out, char *err, size_t errlen)
{
    qh_assert(qb_read_valid(rq) && d->st);
    (void)err;
    (void)errlen;
    *out = rq->shots ? sv_expval_shots(sv_of(d), rq->terms, rq->nterms, rq->shots, rq->rng)
                     : sv_expval(sv_of(d), rq->terms, rq->nterms);
    return 0;
}
static int sv_b_var(QbDev *d, const QbRead *rq, double *out, char *err, size_t errlen)
{
    qh_assert(qb_read_valid(rq) && d->st);
    *out = rq->shots ? sv_var_shots(sv_of(d), rq->terms, rq->nterms, rq->shots, rq->rng)
                     : sv_var(sv_of(d), rq->terms, rq->nterms);
    return isnan(*out) ? qh_errf(err, errlen, "out of memory") : 0;
}
static int sv_b_probs(QbDev *d, const QbRead *rq, double *out, char *err, size_t errlen)
{
    qh_assert(qb_read_valid(rq) && d->st);
    if (sv_probs(sv_of(d), rq->wires, rq->nwires, out, err, errlen) != 0) return -1;
    if (rq->shots) sv_probs_shots(sv_of(d), rq->wires, rq->nwires, rq->shots, rq->rng, out);
    return 0;
}
static int sv_b_sample(QbDev *d, size_t shots, Rng *r, uint64_t *out, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    sv_sample(sv_of(d), shots, r, out);
    return 0;
}
static int sv_b_sample_pauli(QbDev *d, const SvPauli *w, size_t shots, Rng *r, double *out,
                             char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    sv_sample_pauli(sv_of(d), w, shots, r, out);
    return 0;
}
static int sv_b_reduced(QbDev *d, const int *wires, int nw, cplx *out, char *err, size_t errlen)
{
    return sv_density_matrix(sv_of(d), wires, nw, out, err, errlen);
}

const QBackend qb_statevector = {
    .name = "statevector",
    .apply = sv_b_apply,
    .flush = sv_b_flush,
    .measure = sv_b_measure,
    .reset = sv_b_reset,
    .expval = sv_b_expval,
    .var = sv_b_var,
    .probs = sv_b_probs,
    .sample = sv_b_sample,
    .sample_pauli = sv_b_sample_pauli,
    .reduced = sv_b_reduced,
    .kraus = NULL,
    .channel = NULL,
    .pairs = NULL,
};

/* ---- the density matrix --------------------------------------------------- */

static DmState *dm_of(QbDev *d) { return d->st; }

/* Why: dm_apply and the Kraus maps queue on the device's circuit while
   it is lent to them, and only then: every change of the mixed state is
   counted and made between dm_begin and dm_end. */
static DmState *dm_begin(QbDev *d)
{
    d->changes++;
    DmState *m = dm_of(d);
    m->circ = &d->circ;
    return m;
}
static int dm_end(DmState *m, int rc)
{
    m->circ = NULL;
    return rc;
}
static int dm_b_apply(QbDev *d, const SvOp *op, char *err, size_t errlen)
{
    DmState *m = dm_begin(d);
    return dm_end(m, dm_apply(m, op, err, errlen));
}
static int dm_b_kraus(QbDev *d, const int *wires, int k, int nk, const cplx *kraus, char *err,
                      size_t errlen)
{
    DmState *m = dm_begin(d);
    return dm_end(m, dm_apply_kraus(m, wires, k, nk, kraus, err, errlen));
}
static int dm_b_channel(QbDev *d, DmChannel ch, const double *params, int wire, char *err,
                        size_t errlen)
{
    DmState *m = dm_begin(d);
    return dm_end(m, dm_apply_channel(m, ch, params, wire, err, errlen));
}
static int dm_b_pairs(QbDev *d, const int *wires, int k, int np, const cplx *ab, char *err,
                      size_t errlen)
{
    DmState *m = dm_begin(d);
    return dm_end(m, dm_apply_pairs(m, wires, k, np, ab, err, errlen));
}
static int dm_b_flush(QbDev *d, char *err, size_t errlen)
{
    return svc_flush(&d->circ, &dm_of(d)->v, err, errlen);
}
static int dm_b_measure(QbDev *d, int wire, int reset, Rng *r, char *err, size_t errlen)
{
    d->changes++;
    return dm_measure(dm_of(d), wire, reset, r, err, errlen);
}
/* the reset channel: |0><0| and |0><1| (no randomness) */
static int dm_b_reset(QbDev *d, int wire, Rng *r, char *err, size_t errlen)
{
    d->changes++;
    (void)r;
    cplx k[8] = { 1, 0, 0, 0, 0, 1, 0, 0 };
    return dm_apply_kraus(dm_of(d), &wire, 1, 2, k, err, errlen);
}
static int dm_b_expval(QbDev *d, const QbRead *rq, double *out, char *err, size_t errlen)
{
    qh_assert(qb_read_valid(rq) && d->st);
    (void)err;
    (void)errlen;
    *out = rq->shots ? dm_expval_shots(dm_of(d), rq->terms, rq->nterms, rq->shots, rq->rng)
                     : dm_expval(dm_of(d), rq->terms, rq->nterms);
    return 0;
}
static int dm_b_var(QbDev *d, const QbRead *rq, double *out, char *err, size_t errlen)
{
    qh_assert(qb_read_valid(rq) && d->st);
    *out = rq->shots ? dm_var_shots(dm_of(d), rq->terms, rq->nterms, rq->shots, rq->rng)
                     : dm_var(dm_of(d), rq->terms, rq->nterms);
    return isnan(*out) ? qh_errf(err, errlen, "out of memory") : 0;
}
static int dm_b_probs(QbDev *d, const QbRead *rq, double *out, char *err, size_t errlen)
{
    qh_assert(qb_read_valid(rq) && d->st);
    if (dm_probs(dm_of(d), rq->wires, rq->nwires, out, err, errlen) != 0) return -1;
    if (rq->shots) dm_probs_shots(dm_of(d), rq->wires, rq->nwires, rq->shots, rq->rng, out);
    return 0;
}
static int dm_b_sample(QbDev *d, size_t shots, Rng *r, uint64_t *out, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    dm_sample(dm_of(d), shots, r, out);
    return 0;
}
static int dm_b_sample_pauli(QbDev *d, const SvPauli *w, size_t shots, Rng *r, double *out,
                             char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    dm_sample_pauli(dm_of(d), w, shots, r, out);
    return 0;
}
static int dm_b_reduced(QbDev *d, const int *wires, int nw, cplx *out, char *err, size_t errlen)
{
    return dm_reduced(dm_of(d), wires, nw, out, err, errlen);
}

const QBackend qb_mixed = {
    .name = "mixed",
    .apply = dm_b_apply,
    .flush = dm_b_flush,
    .measure = dm_b_measure,
    .reset = dm_b_reset,
    .expval = dm_b_expval,
    .var = dm_b_var,
    .probs = dm_b_probs,
    .sample = dm_b_sample,
    .sample_pauli = dm_b_sample_pauli,
    .reduced = dm_b_reduced,
    .kraus = dm_b_kraus,
    .channel = dm_b_channel,
    .pairs = dm_b_pairs,
};
