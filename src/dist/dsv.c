/* dsv.c — the life of a distributed state, its communication, its layout.
 *
 * Creation (the chunk, the exchange buffer, a duplicated communicator,
 * the allocation outcome agreed by every rank), the op queue, the
 * point-to-point and collective helpers (non-blocking MPI calls waited on
 * with the abort hook polled, traffic counted), and the relabelling
 * swaps that move a wire between a global position and a high local bit.
 * Must not know about the language, devices or the task farm; gates and
 * readouts live in dsv_gates.c and dsv_reduce.c.
 */
#include "dsv_impl.h"
#include "qh_assert.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DSV_MSG_MAX ((size_t)1 << 30) /* bytes per MPI message */

/* ---- errors ----------------------------------------------------------- */

/* Why: a failed exchange leaves the chunks inconsistent across ranks; the
   state must refuse further use rather than compute garbage. */
int dsv_fail(Dsv *d, char *err, size_t errlen, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (d && !d->broken) {
        d->broken = 1;
        snprintf(d->why, sizeof d->why, "%s", buf);
    }
    if (err && errlen) snprintf(err, errlen, "%s", buf);
    return -1;
}

int dsv_check_ok(Dsv *d, char *err, size_t errlen)
{
    if (!d) {
        if (err && errlen) snprintf(err, errlen, "no distributed state");
        return -1;
    }
    if (!d->broken) return 0;
    if (err && errlen) snprintf(err, errlen, "%s", d->why);
    return -1;
}

const char *dsv_broken(const Dsv *d) { return d && d->broken ? d->why : NULL; }

/* ---- communication ---------------------------------------------------- */

/* The message of an MPI error code. */
static int mpi_fail(Dsv *d, int rc, const char *what, char *err, size_t errlen)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS) snprintf(s, sizeof s, "error %d", rc);
    return dsv_fail(d, err, errlen, "distributed state: %s failed: %s", what, s);
}

/* Why: a dead partner never completes a request; blocking waits would
   hang the program, so with an abort hook we poll and give up when the
   owner (the task farm's death detection, Ctrl-C) says so. */
int dsv_wait(Dsv *d, MPI_Request *rq, int n, char *err, size_t errlen)
{
    if (n <= 0) return 0;
    if (!d->cfg.abort) {
        int rc = MPI_Waitall(n, rq, MPI_STATUSES_IGNORE);
        return rc == MPI_SUCCESS ? 0 : mpi_fail(d, rc, "MPI_Waitall", err, errlen);
    }
    for (unsigned long spin = 0;; spin++) {
        int flag = 0;
        int rc = MPI_Testall(n, rq, &flag, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) return mpi_fail(d, rc, "MPI_Testall", err, errlen);
        if (flag) return 0;
        if ((spin & 31) == 31) {
            char msg[200] = "operation abandoned";
            if (d->cfg.abort(d->cfg.abort_ctx, msg, sizeof msg))
                return dsv_fail(d, err, errlen, "%s", msg);
        }
        if (spin >= 256) { /* long waits: stop burning a core another rank may need */
            struct timespec ts = { 0, spin >= 4096 ? 200000 : 20000 };
            nanosleep(&ts, NULL);
        }
    }
}

int dsv_isend(Dsv *d, const void *buf, size_t bytes, int peer, MPI_Request *rq, char *err,
              size_t errlen)
{
    int rc = MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, 7, d->comm, rq);
    if (rc != MPI_SUCCESS) return mpi_fail(d, rc, "MPI_Isend", err, errlen);
    d->st.bytes_sent += bytes;
    d->st.msgs++;
    return 0;
}

int dsv_irecv(Dsv *d, void *buf, size_t bytes, int peer, MPI_Request *rq, char *err, size_t errlen)
{
    int rc = MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, 7, d->comm, rq);
    if (rc != MPI_SUCCESS) return mpi_fail(d, rc, "MPI_Irecv", err, errlen);
    d->st.bytes_recv += bytes;
    return 0;
}

/* Why: every block exchange is a pair of equal-sized messages between two
   ranks; pieces of at most 1 GiB keep MPI's int counts safe. */
int dsv_sendrecv(Dsv *d, const void *sbuf, void *rbuf, size_t bytes, int peer, char *err,
                 size_t errlen)
{
    qh_assert(peer >= 0 && peer < d->R && peer != d->rank && sbuf != rbuf);
    size_t sbytes = bytes, rbytes = bytes;
    const char *s = sbuf;
    char *r = rbuf;
    while (sbytes || rbytes) {
        size_t a = sbytes < DSV_MSG_MAX ? sbytes : DSV_MSG_MAX;
        size_t b = rbytes < DSV_MSG_MAX ? rbytes : DSV_MSG_MAX;
        MPI_Request rq[2];
        int n = 0;
        if (b && dsv_irecv(d, r, b, peer, &rq[n++], err, errlen)) return -1;
        if (a && dsv_isend(d, s, a, peer, &rq[n++], err, errlen)) return -1;
        if (dsv_wait(d, rq, n, err, errlen)) return -1;
        s += a;
        sbytes -= a;
        r += b;
        rbytes -= b;
    }
    return 0;
}

/* Why: reductions go through one helper per type so that every one of
   them can be abandoned when a rank dies. */
typedef struct RedType {
    MPI_Datatype t;
    size_t size; /* bytes of one t */
    MPI_Op op;
} RedType;

static int allreduce(Dsv *d, void *buf, size_t n, RedType rt, char *err, size_t errlen)
{
    MPI_Datatype t = rt.t;
    size_t tsize = rt.size;
    MPI_Op op = rt.op;
    qh_assert(tsize > 0 && tsize <= DSV_MSG_MAX);
    if (d->R == 1 || n == 0) return 0;
    d->st.reductions++;
    char *p = buf;
    size_t per = DSV_MSG_MAX / tsize;
    while (n) {
        size_t m = n < per ? n : per;
        MPI_Request rq;
        int rc = MPI_Iallreduce(MPI_IN_PLACE, p, (int)m, t, op, d->comm, &rq);
        if (rc != MPI_SUCCESS) return mpi_fail(d, rc, "MPI_Iallreduce", err, errlen);
        if (dsv_wait(d, &rq, 1, err, errlen)) return -1;
        p += m * tsize;
        n -= m;
    }
    return 0;
}

int dsv_allreduce_i64(Dsv *d, int64_t *buf, size_t n, char *err, size_t errlen)
{
    return allreduce(d, buf, n, (RedType){ MPI_INT64_T, sizeof(int64_t), MPI_SUM }, err, errlen);
}

int dsv_allreduce_u64(Dsv *d, uint64_t *buf, size_t n, char *err, size_t errlen)
{
    return allreduce(d, buf, n, (RedType){ MPI_UINT64_T, sizeof(uint64_t), MPI_SUM }, err, errlen);
}

int dsv_allreduce_f64(Dsv *d, double *buf, size_t n, char *err, size_t errlen)
{
    return allreduce(d, buf, n, (RedType){ MPI_DOUBLE, sizeof(double), MPI_SUM }, err, errlen);
}

int dsv_allgather(Dsv *d, const void *mine, void *all, size_t bytes, char *err, size_t errlen)
{
    if (d->R == 1) {
        memmove(all, mine, bytes);
        return 0;
    }
    d->st.reductions++;
    MPI_Request rq;
    int rc = MPI_Iallgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, d->comm, &rq);
    if (rc != MPI_SUCCESS) return mpi_fail(d, rc, "MPI_Iallgather", err, errlen);
    return dsv_wait(d, &rq, 1, err, errlen);
}

int dsv_bcast(Dsv *d, void *buf, size_t bytes, int root, char *err, size_t errlen)
{
    if (d->R == 1) return 0;
    MPI_Request rq;
    int rc = MPI_Ibcast(buf, (int)bytes, MPI_BYTE, root, d->comm, &rq);
    if (rc != MPI_SUCCESS) return mpi_fail(d, rc, "MPI_Ibcast", err, errlen);
    return dsv_wait(d, &rq, 1, err, errlen);
}

/* Why: exact sums stay exact across ranks: normalised digits summed as
   integers (at most 2^30 ranks before a carry could overflow). */
int dsv_xsum_allreduce(Dsv *d, XSum *a, size_t n, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) xsum_norm(&a[i]);
    return dsv_allreduce_i64(d, (int64_t *)a, n * XSUM_N, err, errlen);
}

/* ---- life ------------------------------------------------------------- */

size_t dsv_bytes_per_rank(int nq, int nranks, size_t xbuf_bytes)
{
    if (nranks < 1 || (nranks & (nranks - 1))) return SIZE_MAX;
    int k = __builtin_ctz((unsigned)nranks);
    int rb = nq < DSV_RB ? nq : DSV_RB;
    if (nq - k < rb) return SIZE_MAX;
    size_t chunk = sv_bytes(nq - k);
    if (chunk == SIZE_MAX) return SIZE_MAX;
    if (xbuf_bytes == 0) xbuf_bytes = DSV_XBUF_DEFAULT;
    if (xbuf_bytes < DSV_XBUF_MIN) xbuf_bytes = DSV_XBUF_MIN;
    return chunk + (nranks > 1 ? xbuf_bytes : 0);
}

/* Largest power of two <= x. */
static size_t pow2_floor(size_t x)
{
    size_t p = 1;
    while (p <= x / 2) p *= 2;
    return p;
}

int dsv_new(Dsv **out, int nq, MPI_Comm comm, const DsvConfig *cfg, char *err, size_t errlen)
{
    *out = NULL;
    int R = 1, rank = 0;
    if (comm != MPI_COMM_NULL) {
        MPI_Comm_size(comm, &R);
        MPI_Comm_rank(comm, &rank);
    }
    if (R & (R - 1)) {
        if (err && errlen)
            snprintf(err, errlen,
                     "a distributed state needs a power-of-two number of ranks, not %d", R);
        return -1;
    }
    int k = __builtin_ctz((unsigned)R);
    int rb = nq < DSV_RB ? nq : DSV_RB;
    if (nq < 1 || nq > 59 || nq - k < rb) {
        if (err && errlen)
            snprintf(err, errlen,
                     "a %d-wire state cannot be split over %d ranks (each needs at least %d wires)",
                     nq, R, rb);
        return -1;
    }
    /* this rank's share, within its budget first */
    size_t need = dsv_bytes_per_rank(nq, R, cfg ? cfg->xbuf_bytes : 0);
    char rmsg[200] = "";
    int reserved =
        cfg && cfg->reserve ? cfg->reserve(cfg->mem_ctx, need, rmsg, sizeof rmsg) == 0 : 1;
    Dsv *d = reserved ? calloc(1, sizeof *d) : NULL;
    int ok = d != NULL;
    if (d) {
        d->n = nq;
        d->k = k;
        d->R = R;
        d->rank = rank;
        d->nl = nq - k;
        d->rb = rb;
        d->comm = MPI_COMM_NULL;
        d->cfg.relabel = 1;
        if (cfg) d->cfg = *cfg;
        for (int w = 0; w < nq; w++) d->perm[w] = d->inv[w] = w;
        size_t xb = d->cfg.xbuf_bytes ? d->cfg.xbuf_bytes : DSV_XBUF_DEFAULT;
        if (xb < DSV_XBUF_MIN) xb = DSV_XBUF_MIN;
        d->xamps = pow2_floor(xb / sizeof(cplx));
        d->lx = __builtin_ctzll(d->xamps);
        if (sv_init(&d->loc, d->nl) != 0)
            ok = 0;
        else {
            sv_set_threads(&d->loc, d->cfg.team, d->cfg.nthreads);
            if (rank != 0) d->loc.amp[0] = 0; /* |0..0> lives on rank 0 */
        }
        if (ok && R > 1) {
            void *p = NULL;
            if (posix_memalign(&p, 64, d->xamps * sizeof(cplx)) != 0) p = NULL;
            d->xbuf = p;
            ok = p != NULL;
        }
    }
    if (R > 1) {
        /* every rank must agree, or some would wait for ever on the others */
        int all = ok;
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
        if (all && MPI_Comm_dup(comm, &d->comm) != MPI_SUCCESS) all = 0;
        if (all) MPI_Comm_set_errhandler(d->comm, MPI_ERRORS_RETURN);
        ok = all;
    }
    if (!ok) {
        if (d) {
            sv_free(&d->loc);
            free(d->xbuf);
            free(d);
        }
        if (reserved && cfg && cfg->reserve && cfg->release) cfg->release(cfg->mem_ctx, need);
        if (err && errlen && rmsg[0])
            snprintf(err, errlen, "cannot hold a %d-wire distributed state: %s", nq, rmsg);
        else if (err && errlen)
            snprintf(
                err, errlen,
                "cannot allocate a %d-wire distributed state (%s of %zu bytes per rank, within "
                "each rank's memory budget)",
                nq, R > 1 ? "a chunk and an exchange buffer" : "a state", need);
        return -1;
    }
    d->held = need;
    *out = d;
    return 0;
}

/* Why: the queue owns copies of QubitUnitary matrices. */
static void drop_queue(Dsv *d)
{
    for (int i = 0; i < d->nqueue; i++) free(d->queue[i].mat);
    d->nqueue = 0;
}

void dsv_free(Dsv *d)
{
    if (!d) return;
    drop_queue(d);
    sv_free(&d->loc);
    free(d->xbuf);
    if (d->comm != MPI_COMM_NULL) MPI_Comm_free(&d->comm);
    if (d->cfg.reserve && d->cfg.release) d->cfg.release(d->cfg.mem_ctx, d->held);
    free(d);
}

int dsv_reset(Dsv *d, char *err, size_t errlen)
{
    if (dsv_check_ok(d, err, errlen)) return -1;
    drop_queue(d);
    for (int w = 0; w < d->n; w++) d->perm[w] = d->inv[w] = w;
    memset(d->loc.amp, 0, d->loc.dim * sizeof(cplx));
    if (d->rank == 0) d->loc.amp[0] = 1.0;
    return 0;
}

int dsv_nq(const Dsv *d) { return d->n; }
int dsv_nranks(const Dsv *d) { return d->R; }
int dsv_rank(const Dsv *d) { return d->rank; }
void dsv_stats(const Dsv *d, DsvStats *out) { *out = d->st; }
const SvState *dsv_local(const Dsv *d) { return &d->loc; }

int dsv_layout_is_identity(const Dsv *d)
{
    for (int w = 0; w < d->n; w++)
        if (d->perm[w] != w) return 0;
    return 1;
}

/* ---- the queue -------------------------------------------------------- */

int dsv_apply(Dsv *d, const SvOp *op, char *err, size_t errlen)
{
    if (dsv_check_ok(d, err, errlen)) return -1;
    if (sv_check(op, d->n, err, errlen) != 0) return -1;
    if (d->nqueue == DSV_QUEUE && dsv_flush(d, err, errlen) != 0) return -1;
    QOp *q = &d->queue[d->nqueue];
    q->op = *op;
    q->mat = NULL;
    if (op->gate == SV_QUBITUNITARY) {
        size_t dd = (size_t)1 << op->nwires;
        q->mat = malloc(dd * dd * sizeof(cplx));
        if (!q->mat) return dsv_fail(d, err, errlen, "%s: out of memory", "QubitUnitary");
        memcpy(q->mat, op->matrix, dd * dd * sizeof(cplx));
        q->op.matrix = q->mat;
    }
    d->nqueue++;
    return 0;
}

int dsv_flush(Dsv *d, char *err, size_t errlen)
{
    if (dsv_check_ok(d, err, errlen)) return -1;
    int rc = 0;
    for (int i = 0; i < d->nqueue && rc == 0; i++) rc = dsv_exec(d, i, err, errlen);
    drop_queue(d);
    return rc;
}

/* ---- relabelling ------------------------------------------------------ */

int dsv_is_relabelable(const Dsv *d, int p)
{
    return p >= d->k && p < d->n && dsv_pbit(d, p) >= d->rb;
}

/* Why: swapping two wires of the layout is a pure exchange of the
   amplitudes whose two bits differ: the rank whose global bit is x sends
   its half with local bit 1-x and receives the partner's half with local
   bit x into the same places. Packed through the exchange buffer (one
   half for sending, one for receiving), so runs of any length travel in
   big messages. */
int dsv_swap_global_local(Dsv *d, int pg, int pl, char *err, size_t errlen)
{
    int x = dsv_gbit(d, pg);
    int peer = d->rank ^ (1 << (d->k - 1 - pg));
    int q = dsv_pbit(d, pl);         /* local bit */
    uint64_t run = (uint64_t)1 << q; /* contiguous amplitudes with bit q fixed */
    uint64_t nruns = d->loc.dim >> (q + 1);
    uint64_t half = d->xamps / 2;
    qh_assert(pg >= 0 && pg < d->k && pl >= d->k && pl < d->n && half >= 1);
    cplx *sb = d->xbuf, *rbuf = d->xbuf + half;
    cplx *a = d->loc.amp;
    /* walk the selected amplitudes (bit q = 1-x) in order, a buffer at a time */
    uint64_t total = nruns * run, done = 0;
    while (done < total) {
        uint64_t m = total - done < half ? total - done : half;
        for (uint64_t t = 0; t < m;) { /* pack */
            uint64_t g = done + t, r = g / run, o = g % run;
            uint64_t len = run - o < m - t ? run - o : m - t;
            memcpy(sb + t, a + (2 * r + (uint64_t)(1 - x)) * run + o, len * sizeof(cplx));
            t += len;
        }
        if (dsv_sendrecv(d, sb, rbuf, m * sizeof(cplx), peer, err, errlen)) return -1;
        for (uint64_t t = 0; t < m;) { /* unpack into the same places */
            uint64_t g = done + t, r = g / run, o = g % run;
            uint64_t len = run - o < m - t ? run - o : m - t;
            memcpy(a + (2 * r + (uint64_t)(1 - x)) * run + o, rbuf + t, len * sizeof(cplx));
            t += len;
        }
        done += m;
    }
    int wg = d->inv[pg], wl = d->inv[pl];
    d->inv[pg] = wl;
    d->inv[pl] = wg;
    d->perm[wl] = pg;
    d->perm[wg] = pl;
    qh_assert(d->inv[d->perm[wl]] == wl && d->inv[d->perm[wg]] == wg); /* still inverses */
    d->st.swaps++;
    return 0;
}

/* Why: X on a global wire after a projection (measure with reset), or any
   whole-chunk exchange: the two ranks trade their chunks. */
int dsv_swap_chunk(Dsv *d, int peer, char *err, size_t errlen)
{
    cplx *a = d->loc.amp;
    for (uint64_t s = 0; s < d->loc.dim; s += d->xamps) {
        uint64_t m = d->loc.dim - s < d->xamps ? d->loc.dim - s : d->xamps;
        if (dsv_sendrecv(d, a + s, d->xbuf, m * sizeof(cplx), peer, err, errlen)) return -1;
        memcpy(a + s, d->xbuf, m * sizeof(cplx));
    }
    return 0;
}

/* Why: sampling, full probabilities, gathering and loading speak of the
   basis index in wire order; relabelling is undone first. Global wires
   come home by global<->local swaps (through a free high local bit when
   two global wires hold each other's), then the high local bits are put
   back in order by local SWAPs (pure moves, no traffic). */
int dsv_canonicalize(Dsv *d, char *err, size_t errlen)
{
    if (dsv_check_ok(d, err, errlen)) return -1;
    if (dsv_flush(d, err, errlen)) return -1;
    if (dsv_layout_is_identity(d)) return 0;
    for (int p = 0; p < d->k; p++) {
        if (d->inv[p] == p) continue;
        int at = d->perm[p]; /* where logical wire p lives */
        if (at >= d->k) {
            if (dsv_swap_global_local(d, p, at, err, errlen)) return -1;
        } else {
            int t = d->k; /* the highest local bit: relabelable */
            if (!dsv_is_relabelable(d, t))
                return dsv_fail(d, err, errlen, "distributed state: layout cannot be restored");
            if (dsv_swap_global_local(d, at, t, err, errlen)) return -1;
            if (dsv_swap_global_local(d, p, t, err, errlen)) return -1;
        }
    }
    for (int p = d->k; p < d->n; p++) {
        if (d->inv[p] == p) continue;
        int at = d->perm[p];
        SvOp sw;
        memset(&sw, 0, sizeof sw);
        sw.gate = SV_SWAP;
        sw.nwires = 2;
        sw.wires[0] = p - d->k;
        sw.wires[1] = at - d->k;
        if (sv_apply(&d->loc, &sw, err, errlen) != 0)
            return dsv_fail(d, err, errlen, "%s", err ? err : "swap failed");
        int wp = d->inv[p], wa = d->inv[at];
        d->inv[p] = wa;
        d->inv[at] = wp;
        d->perm[wa] = p;
        d->perm[wp] = at;
    }
    return 0;
}
