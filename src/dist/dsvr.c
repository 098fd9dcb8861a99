/* dsvr.c — the leader/follower protocol over a distributed statevector.
 *
 * Each call is a fixed header (command, small arguments, the generator's
 * state) and an optional payload, both broadcast from the leader with
 * MPI_Ibcast and waited on with the abort hook polled; then every rank runs
 * the same dsv_* call. Applies are validated on the leader at once (so an
 * error is reported where the gate was written) and batched. Must not
 * know about the language or the task farm.
 */
#include "dsvr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    C_NEW = 1,
    C_FREE,
    C_RESET,
    C_APPLY,
    C_EXPVAL,
    C_VAR,
    C_SPAULI,
    C_PROBS,
    C_SAMPLE,
    C_MEASURE,
    C_NORM,
    C_GATHER,
    C_CLOSE
};

typedef struct Hdr {
    int32_t cmd, a, b, c;
    uint64_t n1, len;
    Rng rng;
} Hdr;

#define BATCH_OPS   DSV_QUEUE
#define BATCH_BYTES ((size_t)1 << 20)

struct Dsvr {
    MPI_Comm comm;
    DsvConfig cfg;
    Dsv *d;
    char *batch; /* serialised applies not yet sent */
    size_t blen, bcap;
    int bops;
};

/* ---- transport -------------------------------------------------------- */

/* Why: a dead leader or follower never completes the broadcast. */
static int bwait(MPI_Comm comm, const DsvConfig *cfg, MPI_Request *rq, char *err, size_t errlen)
{
    (void)comm;
    for (unsigned long spin = 0;; spin++) {
        int flag = 0;
        if (MPI_Test(rq, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            if (err && errlen) snprintf(err, errlen, "distributed state: broadcast failed");
            return -1;
        }
        if (flag) return 0;
        if (cfg->abort && (spin & 31) == 31) {
            char msg[200] = "operation abandoned";
            if (cfg->abort(cfg->abort_ctx, msg, sizeof msg)) {
                if (err && errlen) snprintf(err, errlen, "%s", msg);
                return -1;
            }
        }
        if (spin >= 256) {
            struct timespec ts = { 0, spin >= 4096 ? 500000 : 20000 };
            nanosleep(&ts, NULL);
        }
    }
}

static int bcast(MPI_Comm comm, const DsvConfig *cfg, void *buf, size_t len, char *err,
                 size_t errlen)
{
    char *p = buf;
    while (len) {
        size_t m = len < ((size_t)1 << 30) ? len : ((size_t)1 << 30);
        MPI_Request rq;
        if (MPI_Ibcast(p, (int)m, MPI_BYTE, 0, comm, &rq) != MPI_SUCCESS) {
            if (err && errlen) snprintf(err, errlen, "distributed state: broadcast failed");
            return -1;
        }
        if (bwait(comm, cfg, &rq, err, errlen)) return -1;
        p += m;
        len -= m;
    }
    return 0;
}

/* Leader: one call to every follower. */
static int send_call(Dsvr *r, Hdr *h, const void *payload, char *err, size_t errlen)
{
    if (bcast(r->comm, &r->cfg, h, sizeof *h, err, errlen)) return -1;
    if (h->len && bcast(r->comm, &r->cfg, (void *)payload, h->len, err, errlen)) return -1;
    return 0;
}

/* Serialised ops: the SvOp (matrix pointer cleared), then its matrix. */
static size_t op_bytes(const SvOp *op)
{
    size_t m = op->gate == SV_QUBITUNITARY ? ((size_t)1 << (2 * op->nwires)) * sizeof(cplx) : 0;
    return sizeof(SvOp) + m;
}

static int run_applies(Dsv *d, const char *p, size_t len, char *err, size_t errlen)
{
    size_t at = 0;
    while (at + sizeof(SvOp) <= len) {
        SvOp op;
        memcpy(&op, p + at, sizeof op);
        at += sizeof op;
        cplx *m = NULL;
        if (op.gate == SV_QUBITUNITARY) {
            size_t mb = ((size_t)1 << (2 * op.nwires)) * sizeof(cplx);
            m = malloc(mb);
            if (!m) return dsv_apply(d, &op, err, errlen); /* reports the missing matrix */
            memcpy(m, p + at, mb);
            at += mb;
            op.matrix = m;
        }
        int rc = dsv_apply(d, &op, err, errlen);
        free(m);
        if (rc) return -1;
    }
    return 0;
}

/* Leader: the batched applies out, and run here. */
static int flush_batch(Dsvr *r, char *err, size_t errlen)
{
    if (!r->bops) return 0;
    Hdr h;
    memset(&h, 0, sizeof h);
    h.cmd = C_APPLY;
    h.len = r->blen;
    int rc = send_call(r, &h, r->batch, err, errlen);
    if (!rc) rc = run_applies(r->d, r->batch, r->blen, err, errlen);
    r->blen = 0;
    r->bops = 0;
    return rc;
}

/* ---- the follower ----------------------------------------------------- */

/* One command a follower runs with the leader (its state *dp; pay: the
 * payload of h->len bytes). Errors are the leader's to report: a
 * follower's failure shows on the leader too (the collectives agree or
 * the leader's own call fails the same way). */
static void follow_cmd(Dsv **dp, const Hdr *h, char *pay, const DsvConfig *cfg, MPI_Comm comm)
{
    Dsv *d = *dp;
    char e2[256];
    Rng rng = h->rng;
    switch (h->cmd) {
    case C_NEW: {
        DsvConfig c = *cfg;
        c.xbuf_bytes = (size_t)h->n1;
        c.relabel = h->b;
        if (dsv_new(&d, h->a, comm, &c, e2, sizeof e2)) d = NULL;
        break;
    }
    case C_FREE:
        dsv_free(d);
        d = NULL;
        break;
    case C_RESET:
        if (d) dsv_reset(d, e2, sizeof e2);
        break;
    case C_APPLY:
        if (d) run_applies(d, pay, h->len, e2, sizeof e2);
        break;
    case C_EXPVAL:
    case C_VAR: {
        double v;
        int n = (int)(h->len / sizeof(SvPauli));
        if (!d) break;
        if (h->cmd == C_EXPVAL)
            dsv_expval_shots(d, (SvPauli *)pay, n, (DsvShots){ (size_t)h->n1, &rng }, &v, e2,
                             sizeof e2);
        else
            dsv_var_shots(d, (SvPauli *)pay, n, (DsvShots){ (size_t)h->n1, &rng }, &v, e2,
                          sizeof e2);
        break;
    }
    case C_SPAULI: {
        double *o = malloc((size_t)(h->n1 ? h->n1 : 1) * sizeof(double));
        if (d && o) dsv_sample_pauli(d, (SvPauli *)pay, (size_t)h->n1, &rng, o, e2, sizeof e2);
        free(o);
        break;
    }
    case C_PROBS: {
        int nw = (int)(h->len / sizeof(int));
        int all = nw == 0 || (d && nw == dsv_nq(d)), valid = nw <= 30;
        double *o = all || !valid ? NULL : malloc(((size_t)1 << nw) * sizeof(double));
        /* an invalid request fails before any traffic, as on the leader */
        if (d && (all || o || !valid))
            dsv_probs_shots(d, (int *)pay, nw, (DsvShots){ (size_t)h->n1, &rng }, o, e2, sizeof e2);
        free(o);
        break;
    }
    case C_SAMPLE: {
        uint64_t *o = malloc((size_t)(h->n1 ? h->n1 : 1) * sizeof(uint64_t));
        if (d && o) dsv_sample(d, (size_t)h->n1, &rng, o, e2, sizeof e2);
        free(o);
        break;
    }
    case C_MEASURE:
        if (d) dsv_measure(d, h->a, h->b, &rng, e2, sizeof e2);
        break;
    case C_NORM: {
        double v;
        if (d) dsv_norm(d, &v, e2, sizeof e2);
        break;
    }
    case C_GATHER:
        if (d) dsv_gather(d, 0, NULL, e2, sizeof e2);
        break;
    default: break;
    }
    *dp = d;
}

/* Terms of a Pauli sum travel as raw SvPauli records. */
int dsvr_serve(MPI_Comm comm0, const DsvConfig *cfg0, char *err, size_t errlen)
{
    DsvConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.relabel = 1;
    if (cfg0) cfg = *cfg0;
    MPI_Comm comm;
    if (MPI_Comm_dup(comm0, &comm) != MPI_SUCCESS) {
        if (err && errlen) snprintf(err, errlen, "distributed state: no communicator");
        return -1;
    }
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    Dsv *d = NULL;
    char *pay = NULL;
    int rc = 0;
    for (;;) {
        Hdr h;
        if (bcast(comm, &cfg, &h, sizeof h, err, errlen)) {
            rc = -1;
            break;
        }
        free(pay);
        pay = h.len ? malloc(h.len) : NULL;
        if (h.len && !pay) {
            rc = -1;
            if (err && errlen) snprintf(err, errlen, "out of memory");
            break;
        }
        if (h.len && bcast(comm, &cfg, pay, h.len, err, errlen)) {
            rc = -1;
            break;
        }
        if (h.cmd == C_CLOSE) break;
        follow_cmd(&d, &h, pay, &cfg, comm);
    }
    free(pay);
    dsv_free(d);
    if (rc == 0) MPI_Comm_free(&comm);
    return rc;
}

/* ---- the leader ------------------------------------------------------- */

Dsvr *dsvr_open(MPI_Comm comm, const DsvConfig *cfg, char *err, size_t errlen)
{
    Dsvr *r = calloc(1, sizeof *r);
    if (!r) {
        if (err && errlen) snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->cfg.relabel = 1;
    if (cfg) r->cfg = *cfg;
    if (MPI_Comm_dup(comm, &r->comm) != MPI_SUCCESS) {
        free(r);
        if (err && errlen) snprintf(err, errlen, "distributed state: no communicator");
        return NULL;
    }
    MPI_Comm_set_errhandler(r->comm, MPI_ERRORS_RETURN);
    return r;
}

void dsvr_close(Dsvr *r)
{
    if (!r) return;
    char err[256];
    Hdr h;
    memset(&h, 0, sizeof h);
    h.cmd = C_CLOSE;
    int rc = send_call(r, &h, NULL, err, sizeof err);
    dsv_free(r->d);
    free(r->batch);
    if (rc == 0) MPI_Comm_free(&r->comm);
    free(r);
}

Dsv *dsvr_state(Dsvr *r) { return r ? r->d : NULL; }

/* Every call but an apply: the batch first, then the header. */
static int call(Dsvr *r, Hdr *h, const void *payload, char *err, size_t errlen)
{
    if (flush_batch(r, err, errlen)) return -1;
    return send_call(r, h, payload, err, errlen);
}

static int need_state(Dsvr *r, char *err, size_t errlen)
{
    if (r->d) return 0;
    if (err && errlen) snprintf(err, errlen, "no distributed state");
    return -1;
}

int dsvr_new(Dsvr *r, int nq, size_t xbuf_bytes, char *err, size_t errlen)
{
    if (r->d) {
        if (err && errlen) snprintf(err, errlen, "a distributed state already exists");
        return -1;
    }
    Hdr h;
    memset(&h, 0, sizeof h);
    h.cmd = C_NEW;
    h.a = nq;
    h.b = r->cfg.relabel;
    h.n1 = xbuf_bytes ? xbuf_bytes : r->cfg.xbuf_bytes;
    if (call(r, &h, NULL, err, errlen)) return -1;
    DsvConfig c = r->cfg;
    c.xbuf_bytes = (size_t)h.n1;
    return dsv_new(&r->d, nq, r->comm, &c, err, errlen);
}

int dsvr_free(Dsvr *r, char *err, size_t errlen)
{
    r->blen = 0;
    r->bops = 0;
    Hdr h;
    memset(&h, 0, sizeof h);
    h.cmd = C_FREE;
    int rc = send_call(r, &h, NULL, err, errlen);
    dsv_free(r->d);
    r->d = NULL;
    return rc;
}

int dsvr_reset(Dsvr *r, char *err, size_t errlen)
{
    if (need_state(r, err, errlen)) return -1;
    r->blen = 0;
    r->bops = 0;
    Hdr h;
    memset(&h, 0, sizeof h);
    h.cmd = C_RESET;
    if (send_call(r, &h, NULL, err, errlen)) return -1;
    return dsv_reset(r->d, err, errlen);
}

int dsvr_apply(Dsvr *r, const SvOp *op, char *err, size_t errlen)
{
    if (need_state(r, err, errlen)) return -1;
    if (sv_check(op, dsv_nq(r->d), err, errlen) != 0) return -1;
    size_t need = op_bytes(op);
    if (r->blen + need > r->bcap) {
        size_t cap = r->bcap ? r->bcap : 4096;
        while (cap < r->blen + need) cap *= 2;
        char *b = realloc(r->batch, cap);
        if (!b) {
            if (err && errlen) snprintf(err, errlen, "out of memory");
            return -1;
        }
        r->batch = b;
        r->bcap = cap;
    }
    SvOp c = *op;
    c.matrix = NULL;
    memcpy(r->batch + r->blen, &c, sizeof c);
    if (op->gate == SV_QUBITUNITARY)
        memcpy(r->batch + r->blen + sizeof c, op->matrix, need - sizeof c);
    r->blen += need;
    r->bops++;
    if (r->bops >= BATCH_OPS || r->blen >= BATCH_BYTES) return flush_batch(r, err, errlen);
    return 0;
}

static int pauli_call(Dsvr *r, int cmd, const SvPauli *t, int n, DsvShots sh, char *err,
                      size_t errlen)
{
    size_t shots = sh.n;
    Rng *rng = sh.rng;
    if (need_state(r, err, errlen)) return -1;
    Hdr h;
    memset(&h, 0, sizeof h);
    h.cmd = cmd;
    h.n1 = shots;
    h.len = (uint64_t)(n > 0 ? n : 0) * sizeof(SvPauli);
    if (rng) h.rng = *rng;
    return call(r, &h, t, err, errlen);
}

int dsvr_expval(Dsvr *r, const SvPauli *t, int n, DsvShots sh, double *out, char *err,
                size_t errlen)
{
    size_t shots = sh.n;
    Rng *rng = sh.rng;
    Rng dummy;
    rng_seed(&dummy, 0);
    if (!rng) {
        rng = &dummy;
        shots = 0;
    }
    if (pauli_call(r, C_EXPVAL, t, n, (DsvShots){ shots, rng }, err, errlen)) return -1;
    return dsv_expval_shots(r->d, t, n, (DsvShots){ shots, rng }, out, err, errlen);
}

int dsvr_var(Dsvr *r, const SvPauli *t, int n, DsvShots sh, double *out, char *err, size_t errlen)
{
    size_t shots = sh.n;
    Rng *rng = sh.rng;
    Rng dummy;
    rng_seed(&dummy, 0);
    if (!rng) {
        rng = &dummy;
        shots = 0;
    }
    if (pauli_call(r, C_VAR, t, n, (DsvShots){ shots, rng }, err, errlen)) return -1;
    return dsv_var_shots(r->d, t, n, (DsvShots){ shots, rng }, out, err, errlen);
}

int dsvr_sample_pauli(Dsvr *r, const SvPauli *word, size_t shots, Rng *rng, double *out, char *err,
                      size_t errlen)
{
    if (pauli_call(r, C_SPAULI, word, 1, (DsvShots){ shots, rng }, err, errlen)) return -1;
    return dsv_sample_pauli(r->d, word, shots, rng, out, err, errlen);
}

int dsvr_probs(Dsvr *r, const int *wires, int nw, DsvShots sh, double *out, char *err,
               size_t errlen)
{
    size_t shots = sh.n;
    Rng *rng = sh.rng;
    if (need_state(r, err, errlen)) return -1;
    if (nw < 0 || (nw > 0 && !wires)) {
        if (err && errlen) snprintf(err, errlen, "probs: needs at least one wire");
        return -1;
    }
    Rng dummy;
    rng_seed(&dummy, 0);
    if (!rng) {
        rng = &dummy;
        shots = 0;
    }
    Hdr h;
    memset(&h, 0, sizeof h);
    h.cmd = C_PROBS;
    h.n1 = shots;
    h.len = (uint64_t)nw * sizeof(int);
    h.rng = *rng;
    if (call(r, &h, wires, err, errlen)) return -1;
    return dsv_probs_shots(r->d, wires, nw, (DsvShots){ shots, rng }, out, err, errlen);
}

int dsvr_sample(Dsvr *r, size_t shots, Rng *rng, uint64_t *out, char *err, size_t errlen)
{
    if (need_state(r, err, errlen)) return -1;
    Hdr h;
    memset(&h, 0, sizeof h);
    h.cmd = C_SAMPLE;
    h.n1 = shots;
    h.rng = *rng;
    if (call(r, &h, NULL, err, errlen)) return -1;
    return dsv_sample(r->d, shots, rng, out, err, errlen);
}

int dsvr_measure(Dsvr *r, int wire, int reset, Rng *rng, char *err, size_t errlen)
{
    if (need_state(r, err, errlen)) return -1;
    Hdr h;
    memset(&h, 0, sizeof h);
    h.cmd = C_MEASURE;
    h.a = wire;
    h.b = reset;
    h.rng = *rng;
    if (call(r, &h, NULL, err, errlen)) return -1;
    return dsv_measure(r->d, wire, reset, rng, err, errlen);
}

int dsvr_norm(Dsvr *r, double *out, char *err, size_t errlen)
{
    if (need_state(r, err, errlen)) return -1;
    Hdr h;
    memset(&h, 0, sizeof h);
    h.cmd = C_NORM;
    if (call(r, &h, NULL, err, errlen)) return -1;
    return dsv_norm(r->d, out, err, errlen);
}

int dsvr_gather(Dsvr *r, cplx *out, char *err, size_t errlen)
{
    if (need_state(r, err, errlen)) return -1;
    Hdr h;
    memset(&h, 0, sizeof h);
    h.cmd = C_GATHER;
    if (call(r, &h, NULL, err, errlen)) return -1;
    return dsv_gather(r->d, 0, out, err, errlen);
}
