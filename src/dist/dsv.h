/* dsv.h — the distributed statevector: one state split over 2^k MPI ranks.
 *
 * A state of n wires (wire 0 = most significant bit of the basis index, as
 * in sv.h) is cut into R = 2^k chunks of 2^(n-k) amplitudes, one per rank
 * of a communicator: the top k index bits are "global" (the rank), the low
 * n-k are "local" (an SvState of n-k qubits on each rank, run by the
 * kernels of src/quantum). Every function below is COLLECTIVE: each rank of
 * the communicator calls it with the same arguments (SPMD, as in QuEST),
 * and every rank gets the same result. With R = 1 no MPI function is
 * called at all (the code also runs in a process without MPI_Init).
 *
 * How gates run (dsv_gates.c):
 *  - all targets local: the kernels on the local chunk; a control on a
 *    global wire is dropped where the rank's bit is 1, and the rank does
 *    nothing where it is 0;
 *  - diagonal gates (Z S T RZ PhaseShift CZ CRZ CPhase IsingZZ MultiRZ, a
 *    diagonal 1-wire matrix) on global wires: no communication, the rank
 *    applies the phase its global bits select;
 *  - other gates on g global targets: the 2^g ranks that differ in those
 *    bits exchange blocks (MPI_Isend/Irecv in bounded chunks) into a fixed
 *    exchange buffer where the gate runs on the gathered block; each rank
 *    sends (2^g - 1) x its chunk (2^n 16 / R bytes for one global wire);
 *  - relabelling: when the queued ops show a global wire used again soon
 *    (or several global targets in one gate), it is swapped with a free
 *    high local wire instead (half a chunk each way, no arithmetic), as
 *    QuEST and qulacs do; the wire order is restored before anything that
 *    needs it (sampling, full probabilities, the state).
 * Ops are queued (up to DSV_QUEUE) so relabelling can look ahead; any read
 * runs the queue first. Results do not depend on the queue.
 *
 * Bit-identity: the amplitudes are the ones sv_apply computes on a single
 * state (the same kernels do the same arithmetic on the same values; data
 * only moves), and every reduction (probabilities, expectation values,
 * norms, sampling) adds per-block partial sums (blocks of 2^DSV_RB
 * amplitudes, each summed in index order) into an exact fixed-point
 * accumulator (xsum.h) combined with MPI_Allreduce: results are
 * bit-identical for any rank count and any relabelling.
 *
 * Memory per rank: the chunk (2^(n-k) x 16 bytes) plus one exchange buffer
 * (DsvConfig.xbuf_bytes, default 4 MiB), never a second state.
 *
 * Rank death: every wait polls DsvConfig.abort; when it returns nonzero
 * the operation fails with its message and the state is unusable.
 *
 * Thread safety: one Dsv is used by one thread at a time on each rank
 * (the communicator is duplicated, so other MPI traffic does not mix in;
 * MPI must be initialised with MPI_THREAD_MULTIPLE if other threads talk
 * MPI meanwhile). Must not know about the language, values, devices or
 * the task farm. Prefix dsv_. */
#ifndef QH_DSV_H
#define QH_DSV_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "rng.h"
#include "sv.h"

/* Reduction blocks: 2^DSV_RB amplitudes (fewer when n < DSV_RB). A state
   is distributed only with at least that many local wires. */
#define DSV_RB 10
/* The exchange buffer: its default and smallest size. */
#define DSV_XBUF_DEFAULT ((size_t)4 << 20)
#define DSV_XBUF_MIN     ((size_t)64 << 10)
/* Ops queued for look-ahead before they run. */
#define DSV_QUEUE 64

typedef struct Dsv Dsv;

typedef struct DsvConfig {
    /* exchange buffer; 0: 4 MiB; rounded down to a power of two, at least 64 KiB */
    size_t xbuf_bytes;
    SvTeam *team; /* threads for the local kernels (may be NULL) */
    int nthreads;
    /* 1: swap-based relabelling allowed (default when cfg is NULL); 0: exchanges only */
    int relabel;
    /* polled while waiting for messages (about every millisecond); nonzero
       abandons the operation with the message abort_msg writes (may be NULL) */
    int (*abort)(void *ctx, char *msg, size_t len);
    void *abort_ctx;
    /* memory accounting (may be NULL): dsv_new reserves what this rank will
       hold (dsv_bytes_per_rank) before allocating it, and dsv_free releases
       it. A refusal (0 ok, -1 with a message) fails the state on every rank. */
    int (*reserve)(void *ctx, size_t bytes, char *msg, size_t len);
    void (*release)(void *ctx, size_t bytes);
    void *mem_ctx;
} DsvConfig;

typedef struct DsvStats {
    uint64_t bytes_sent, bytes_recv; /* amplitude traffic of this rank */
    uint64_t msgs;                   /* point-to-point messages sent */
    uint64_t ops;                    /* ops applied */
    uint64_t local_ops;              /* ... with all targets local */
    uint64_t diag_global;            /* ... diagonal on a global wire (no traffic) */
    uint64_t exchanges;              /* ... run by exchanging blocks */
    uint64_t swaps;                  /* relabelling swaps (global <-> local wire) */
    uint64_t reductions;             /* Allreduce / gather calls */
} DsvStats;

/* Collective over comm (its size must be a power of two R = 2^k with
   nq - k >= min(nq, DSV_RB)); comm may be MPI_COMM_NULL for one rank
   without MPI. The state starts in |0..0>. 0, or -1 with a message
   (memory, bad sizes) — on every rank alike when the failure is global,
   and the allocation outcome is agreed with an Allreduce. */
int dsv_new(Dsv **out, int nq, MPI_Comm comm, const DsvConfig *cfg, char *err, size_t errlen);
void dsv_free(Dsv *d); /* collective (frees the duplicated communicator) */
int dsv_reset(Dsv *d, char *err, size_t errlen); /* back to |0..0> (the queue is dropped) */

int dsv_nq(const Dsv *d);
int dsv_nranks(const Dsv *d);
int dsv_rank(const Dsv *d);
/* Bytes one rank holds for an nq-wire state on nranks ranks (chunk +
   exchange buffer); SIZE_MAX if it cannot be split that way. */
size_t dsv_bytes_per_rank(int nq, int nranks, size_t xbuf_bytes);
void dsv_stats(const Dsv *d, DsvStats *out);
/* The message of the failure that made the state unusable, or NULL. */
const char *dsv_broken(const Dsv *d);

/* Validate (sv_check's messages) and queue; 0 or -1 with a message. */
int dsv_apply(Dsv *d, const SvOp *op, char *err, size_t errlen);
/* Run the queued ops now. */
int dsv_flush(Dsv *d, char *err, size_t errlen);

/* A readout's sampling: n shots drawn with rng (n == 0: the exact value). */
typedef struct DsvShots {
    size_t n;
    Rng *rng;
} DsvShots;

/* Readouts, as in sv.h; every rank gets the same numbers. Randomness comes
   from r, which must be in the same state on every rank (it advances the
   same way everywhere). */
int dsv_expval(Dsv *d, const SvPauli *t, int nterms, double *out, char *err, size_t errlen);
int dsv_var(Dsv *d, const SvPauli *t, int nterms, double *out, char *err, size_t errlen);
int dsv_expval_shots(Dsv *d, const SvPauli *t, int nterms, DsvShots sh, double *out, char *err,
                     size_t errlen);
int dsv_var_shots(Dsv *d, const SvPauli *t, int nterms, DsvShots sh, double *out, char *err,
                  size_t errlen);
int dsv_sample_pauli(Dsv *d, const SvPauli *word, size_t shots, Rng *r, double *out, char *err,
                     size_t errlen);
/* nw = 0: all wires. Over all wires in order the 2^n values are gathered
   on rank 0 only (out may be NULL elsewhere); otherwise on every rank.
   A subset of nw wires needs 2^nw accumulators of 56 bytes per rank: at
   most DSV_MAX_PROBS_WIRES wires. */
#define DSV_MAX_PROBS_WIRES 20
int dsv_probs(Dsv *d, const int *wires, int nw, double *out, char *err, size_t errlen);
int dsv_probs_shots(Dsv *d, const int *wires, int nw, DsvShots sh, double *out, char *err,
                    size_t errlen);
int dsv_sample(Dsv *d, size_t shots, Rng *r, uint64_t *out, char *err, size_t errlen);
/* 0/1 outcome, or -1 with a message. */
int dsv_measure(Dsv *d, int wire, int reset, Rng *r, char *err, size_t errlen);
/* Squared norm (exact sum). */
int dsv_norm(Dsv *d, double *out, char *err, size_t errlen);

/* The whole state (2^n amplitudes, wire 0 = MSB) on rank `root` only; out
   is only touched there (others may pass NULL). The caller checks that it
   fits the root's budget. */
int dsv_gather(Dsv *d, int root, cplx *out, char *err, size_t errlen);
/* Set the state from the full vector `full` that EVERY rank passes (small
   states: tests, loading); each rank keeps its chunk. */
int dsv_load(Dsv *d, const cplx *full, char *err, size_t errlen);
/* The local chunk in the current layout (tests and benchmarks): amplitude
   j of it is basis index (rank << (n - k)) | j when dsv_layout_is_identity. */
const SvState *dsv_local(const Dsv *d);
int dsv_layout_is_identity(const Dsv *d);
/* Restore the identity wire layout (undo relabelling) now. */
int dsv_canonicalize(Dsv *d, char *err, size_t errlen);

#endif
