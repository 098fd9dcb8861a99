/* dsvr.h — a distributed statevector driven from one rank.
 *
 * dsv.h is SPMD: every rank calls every function. An interpreter has one
 * thread that runs the circuit (on rank 0, the leader) while the other
 * ranks only hold their chunks. Here the leader calls dsvr_* functions,
 * which broadcast each call (its arguments, and the random generator's
 * state where a draw is made) to the followers and then run it locally;
 * the followers sit in dsvr_serve, which receives the calls and runs the
 * same dsv_* function. Gates are batched: applies travel in one message
 * with the next call that is not an apply. Results land on the leader.
 *
 * A service is one communicator (its rank 0 leads, its size a power of
 * two); one state at a time lives on it. Waits poll the abort hook of the
 * DsvConfig given to dsvr_open / dsvr_serve (rank death, Ctrl-C).
 * Must not know about the language or the task farm. Prefix dsvr_. */
#ifndef QH_DSVR_H
#define QH_DSVR_H

#include "dsv.h"

typedef struct Dsvr Dsvr;

/* Leader: open the service on comm (collective with the followers'
   dsvr_serve, which must be called on every other rank of comm). */
Dsvr *dsvr_open(MPI_Comm comm, const DsvConfig *cfg, char *err, size_t errlen);
/* Leader: ends the followers' dsvr_serve and frees (a state still there is freed). */
void dsvr_close(Dsvr *r);
/* Follower: serve the leader until dsvr_close. 0, or -1 with a message
   (the leader died: the abort hook said so). */
int dsvr_serve(MPI_Comm comm, const DsvConfig *cfg, char *err, size_t errlen);

/* Leader: the state's life; dsvr_new fails if one exists. xbuf_bytes:
   its exchange buffer (0: the DsvConfig's). */
int dsvr_new(Dsvr *r, int nq, size_t xbuf_bytes, char *err, size_t errlen);
int dsvr_free(Dsvr *r, char *err, size_t errlen);
int dsvr_reset(Dsvr *r, char *err, size_t errlen);
Dsv *dsvr_state(Dsvr *r); /* the leader's part (stats, rank count), or NULL */

/* Leader: as in dsv.h (results on the leader). */
int dsvr_apply(Dsvr *r, const SvOp *op, char *err, size_t errlen);
int dsvr_expval(Dsvr *r, const SvPauli *t, int n, DsvShots sh, double *out, char *err,
                size_t errlen);
int dsvr_var(Dsvr *r, const SvPauli *t, int n, DsvShots sh, double *out, char *err, size_t errlen);
int dsvr_sample_pauli(Dsvr *r, const SvPauli *word, size_t shots, Rng *rng, double *out, char *err,
                      size_t errlen);
int dsvr_probs(Dsvr *r, const int *wires, int nw, DsvShots sh, double *out, char *err,
               size_t errlen);
int dsvr_sample(Dsvr *r, size_t shots, Rng *rng, uint64_t *out, char *err, size_t errlen);
int dsvr_measure(Dsvr *r, int wire, int reset, Rng *rng, char *err, size_t errlen);
int dsvr_norm(Dsvr *r, double *out, char *err, size_t errlen);
int dsvr_gather(Dsvr *r, cplx *out, char *err, size_t errlen);

#endif
