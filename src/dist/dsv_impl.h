/* dsv_impl.h — internals shared by the files of the distributed statevector.
 *
 * The layout: physical wire p of the distributed index (bit n-1-p) holds
 * logical wire inv[p]; perm[w] is where logical wire w lives. Physical
 * wires 0..k-1 are global (rank bit k-1-p), k..n-1 local (local wire p-k
 * of the chunk, local bit n-1-p). Relabelling only ever moves wires
 * between global positions and local bits >= rb, so the low rb bits of
 * every chunk keep their logical meaning: reduction blocks and the
 * kernels' short-run paths see the same data in every layout.
 * Not an interface: only src/dist/dsv*.c include it.
 */
#ifndef QH_DSV_IMPL_H
#define QH_DSV_IMPL_H

#include "dsv.h"
#include "xsum.h"

typedef struct QOp {
    SvOp op;
    cplx *mat; /* owned copy of a QubitUnitary matrix, or NULL */
} QOp;

struct Dsv {
    int n, k, R, rank;
    int nl;        /* local wires: n - k */
    int rb;        /* reduction block bits: min(DSV_RB, n) */
    MPI_Comm comm; /* duplicated; MPI_COMM_NULL when R == 1 */
    SvState loc;   /* the chunk */
    cplx *xbuf;    /* exchange buffer */
    size_t xamps;  /* its size in amplitudes (a power of two) */
    int lx;        /* log2(xamps) */
    int perm[SV_MAX_WIRES], inv[SV_MAX_WIRES];
    DsvConfig cfg;
    DsvStats st;
    size_t held; /* bytes reserved through cfg.reserve */
    int broken;
    char why[256];
    int nqueue;
    QOp queue[DSV_QUEUE];
};

/* Index bit of physical wire p in the distributed index. */
static inline int dsv_pbit(const Dsv *d, int p) { return d->n - 1 - p; }
/* This rank's value of global physical wire p (p < k). */
static inline int dsv_gbit(const Dsv *d, int p) { return (d->rank >> (d->k - 1 - p)) & 1; }
/* Global index of local amplitude j. */
static inline uint64_t dsv_gidx(const Dsv *d, uint64_t j)
{
    return ((uint64_t)d->rank << d->nl) | j;
}

/* Errors: mark the state broken with the message (also into err). */
int dsv_fail(Dsv *d, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* If the state is broken, its message into err and -1. */
int dsv_check_ok(Dsv *d, char *err, size_t errlen);

/* Communication (no-ops for R == 1; every call polls the abort hook). */
int dsv_wait(Dsv *d, MPI_Request *rq, int n, char *err, size_t errlen);
/* Exchange: send bytes from sbuf to peer, receive as many into rbuf. */
int dsv_sendrecv(Dsv *d, const void *sbuf, void *rbuf, size_t bytes, int peer, char *err,
                 size_t errlen);
/* Start a send/receive of up to 2^30 bytes (counted in the stats). */
int dsv_isend(Dsv *d, const void *buf, size_t bytes, int peer, MPI_Request *rq, char *err,
              size_t errlen);
int dsv_irecv(Dsv *d, void *buf, size_t bytes, int peer, MPI_Request *rq, char *err, size_t errlen);
int dsv_allreduce_i64(Dsv *d, int64_t *buf, size_t n, char *err, size_t errlen);
int dsv_allreduce_u64(Dsv *d, uint64_t *buf, size_t n, char *err, size_t errlen);
int dsv_allreduce_f64(Dsv *d, double *buf, size_t n, char *err, size_t errlen);
int dsv_allgather(Dsv *d, const void *mine, void *all, size_t bytes, char *err, size_t errlen);
int dsv_bcast(Dsv *d, void *buf, size_t bytes, int root, char *err, size_t errlen);
/* Sum XSums over ranks, exactly (normalised first). */
int dsv_xsum_allreduce(Dsv *d, XSum *a, size_t n, char *err, size_t errlen);

/* Layout. */
int dsv_swap_global_local(Dsv *d, int pg, int pl, char *err, size_t errlen);
int dsv_swap_chunk(Dsv *d, int peer, char *err, size_t errlen);
int dsv_is_relabelable(const Dsv *d, int p); /* a local physical wire with bit >= rb */

/* Gates (dsv_gates.c): run one queued op (index i of the queue). */
int dsv_exec(Dsv *d, int i, char *err, size_t errlen);

#endif
