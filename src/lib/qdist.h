/* qdist.h — distributed statevector devices (doc/distributed.md):
 * device("statevector", wires=n, distributed=true), and a state too large
 * for one rank's memory budget that fits the ranks' budgets together.
 *
 * Under mpirun the state is split over the largest power of two of ranks
 * (the service: src/dist/dsvr.h), led by rank 0 and served by a thread on
 * each other rank of it; one distributed state exists at a time (a second
 * call waits for the first to end), and each rank's part counts against
 * that rank's memory budget, so farm tasks there wait for memory as for any
 * other state (the two share the ranks through their budgets). Without
 * mpirun, or on a rank other than 0, or for a state too small to split, a
 * distributed device is a dsv state of one rank: the readouts (exact sums,
 * src/dist/xsum.h) are the same bytes whatever the rank count.
 *
 * Without the meson feature `mpi` (qdist_none.c) nothing is distributed:
 * distributed=true runs on the ordinary statevector. Knows the Interp (the
 * memory budget through its hooks, qrt_attach) and src/dist; not qrt, not
 * the language's values. Prefix qdist_. */
#ifndef QH_QDIST_H
#define QH_QDIST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "backend.h"
#include "rng.h"
#include "sv.h"
#include "vm.h"

typedef struct QDist QDist;     /* this process's part of the service */
typedef struct QDState QDState; /* one distributed state, held by one call */

/* ---- the service (remote.c): collective over all ranks ---- */
struct Farm;
/* Rank 0 leads; the farm tells who died. Sets in->qdist. */
QDist *qdist_lead(Interp *in, struct Farm *farm);
/* Every other rank: its part runs on a thread of its own until the end. */
QDist *qdist_follow(Interp *in, struct Farm *farm);
void qdist_rank_died(QDist *qd, int rank, const char *why); /* rank 0: waits abandon */
void qdist_leader_gone(QDist *qd, const char *why);         /* the others */
/* Rank 0: --stats lines (out NULL: none). */
void qdist_stats(QDist *qd, FILE *out);
/* Ends the service (rank 0 tells the others), after the interpreter has
 * closed on rank 0 and before it closes elsewhere; nonzero if a rank died
 * (then MPI must not be finalised). The farm may still report deaths
 * until it is closed: qdist_free after that. */
int qdist_close(QDist *qd);
void qdist_free(QDist *qd);

/* ---- a call's device (qrt.c) ---- */
/* Whether an nq-wire statevector goes distributed: asked (distributed=true)
 * in a build with MPI, or, under mpirun on rank 0, when it does not fit
 * rank 0's budget but its parts fit the service's ranks. */
bool qdist_wanted(Interp *in, int nq, bool asked);
/* Bytes of the state this process holds (its part and exchange buffer). */
size_t qdist_local_bytes(Interp *in, int nq);
/* A distributed state in |0..0> for one call; waits while another call
 * holds the service (polling *cancel). NULL with a message. */
QDState *qdist_acquire(Interp *in, int nq, const atomic_int *cancel, char *err, size_t errlen);
void qdist_release(QDState *s);
int qdist_nranks(const QDState *s);

/* As in sv.h; the readouts as backend.h's slots ask them (a QbRead: shots
 * 0 exact). 0, or -1 with a message. */
int qdist_apply(QDState *s, const SvOp *op, char *err, size_t errlen);
int qdist_expval(QDState *s, const QbRead *rq, double *out, char *err, size_t errlen);
int qdist_var(QDState *s, const QbRead *rq, double *out, char *err, size_t errlen);
int qdist_sample_pauli(QDState *s, const SvPauli *word, size_t shots, Rng *rng, double *out,
                       char *err, size_t errlen);
int qdist_probs(QDState *s, const QbRead *rq, double *out, char *err, size_t errlen);
int qdist_sample(QDState *s, size_t shots, Rng *rng, uint64_t *out, char *err, size_t errlen);
int qdist_measure(QDState *s, int wire, int reset, Rng *rng, char *err, size_t errlen);
/* The whole state on this process (out: 2^n amplitudes), only if it fits
 * this process's budget beside what it holds; else -1 with a message. */
int qdist_state(QDState *s, cplx **out, char *err, size_t errlen);

#endif
