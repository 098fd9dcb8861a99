/* backend.h — one table of operations for every simulator a quantum call
 * runs on: the statevector (qb_statevector), the density matrix
 * (qb_mixed) and the distributed statevector (qdist_backend, in
 * src/lib/qdist.c: it knows src/dist). The quantum runtime (src/lib/qrt*.c)
 * calls these and never picks a simulator inline; a slot a simulator does
 * not have is NULL (the caller names what is missing in its error).
 *
 * Gates go through apply, which validates them (the simulator's own
 * messages, at the gate's own line) and queues them on the device's
 * SvCirc (fuse.h): they run, fused and cache-blocked, at flush. Every other
 * slot reads or changes the state as it is now: the caller flushes before
 * it (qb_flush), at every measurement, mid-circuit measurement, read of
 * the state and at the end of the call. On the mixed device a gate is its
 * two halves on the vectorised rho and a channel its superoperator, queued
 * alike. Shots 0 means exact. Every slot returns 0, or -1 with a message.
 *
 * Pure C; knows sv.h, dm.h and fuse.h, nothing of the language.
 */
#ifndef QH_BACKEND_H
#define QH_BACKEND_H

#include "dm.h"
#include "fuse.h"
#include "sv.h"

typedef struct QbDev QbDev;

/* One readout asked of a simulator (the expval, var and probs slots, and
 * qdist's): what is read, the Pauli sum terms[0..nterms) (expval, var) or
 * the wires[0..nwires) (probs; none: every wire, in order), and how:
 * exactly (shots 0) or estimated from shots draws of rng, the call's
 * generator (then non-NULL; an exact read draws nothing from it). The
 * request is the caller's and only read; the slot never keeps it. */
typedef struct QbRead {
    const SvPauli *terms;
    int nterms;
    const int *wires;
    int nwires;
    size_t shots;
    Rng *rng;
} QbRead;

/* A readout request as the back ends take it: a Pauli sum or wires, and a
   generator whenever shots are asked for (the tables' contract). */
static inline int qb_read_valid(const QbRead *rq)
{
    return rq && rq->nterms >= 0 && (rq->nterms == 0 || rq->terms) && rq->nwires >= 0 &&
           (rq->nwires == 0 || rq->wires) && (rq->shots == 0 || rq->rng);
}

typedef struct QBackend {
    const char *name;
    int (*apply)(QbDev *d, const SvOp *op, char *err, size_t errlen);
    int (*flush)(QbDev *d, char *err, size_t errlen);
    /* a mid-circuit measurement (reset: then back to |0>): 0 or 1 */
    int (*measure)(QbDev *d, int wire, int reset, Rng *r, char *err, size_t errlen);
    /* a wire back to |0> (qasm's reset): the reset channel where the state
       is mixed, else a measurement with reset */
    int (*reset)(QbDev *d, int wire, Rng *r, char *err, size_t errlen);
    /* the readouts: rq's Pauli sum (expval, var) or wires (probs), exact or
       from rq's shots; out: one value (expval, var) or 2^nw probabilities */
    int (*expval)(QbDev *d, const QbRead *rq, double *out, char *err, size_t errlen);
    int (*var)(QbDev *d, const QbRead *rq, double *out, char *err, size_t errlen);
    int (*probs)(QbDev *d, const QbRead *rq, double *out, char *err, size_t errlen);
    int (*sample)(QbDev *d, size_t shots, Rng *r, uint64_t *out, char *err, size_t errlen);
    int (*sample_pauli)(QbDev *d, const SvPauli *w, size_t shots, Rng *r, double *out, char *err,
                        size_t errlen);
    /* NULL where the simulator has none: */
    /* the reduced density matrix of the wires (2^nw x 2^nw) */
    int (*reduced)(QbDev *d, const int *wires, int nw, cplx *out, char *err, size_t errlen);
    /* rho -> sum K rho K^dagger (the mixed device only) */
    int (*kraus)(QbDev *d, const int *wires, int k, int nk, const cplx *kraus, char *err,
                 size_t errlen);
    /* a built-in 1-wire channel with its parameters (the mixed device only) */
    int (*channel)(QbDev *d, DmChannel ch, const double *params, int wire, char *err,
                   size_t errlen);
    /* rho -> sum A_j rho B_j^dagger (ab: the A_j, then the B_j): a channel's
       derivative map, in a differentiated run (dm_apply_pairs; the mixed
       device only) */
    int (*pairs)(QbDev *d, const int *wires, int k, int np, const cplx *ab, char *err,
                 size_t errlen);
} QBackend;

struct QbDev {
    const QBackend *be;
    void *st;    /* SvState *, DmState *, or the distributed state */
    SvCirc circ; /* the gates queued for the state's vector */
    /* bumped by every slot that changes the state (apply, measure, reset,
       kraus, channel) and by its owner when it resets or overwrites the
       state: what was drawn from the state holds while it is unchanged */
    uint64_t changes;
};

extern const QBackend qb_statevector, qb_mixed;

/* A device on st for be (cfg: fusion settings, NULL for the defaults). */
void qb_init(QbDev *d, const QBackend *be, void *st, const SvFuseCfg *cfg);
/* Drops what is queued and frees the queue (the state stays the caller's). */
void qb_done(QbDev *d);
static inline int qb_flush(QbDev *d, char *err, size_t errlen)
{
    return d->be->flush(d, err, errlen);
}

#endif
