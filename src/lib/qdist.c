/* qdist.c — distributed statevector devices (qdist.h) on src/dist: the
 * service over the largest power of two of ranks (dsvr: rank 0 leads, a
 * thread serves on each other rank of it), one state at a time, each rank's
 * part reserved from its own memory budget (Interp.hooks.mem_*); one-rank dsv
 * states where there is no service (no mpirun, another rank, a state too
 * small to split). Rank death and the leader's end abandon the service's
 * waits (DsvConfig.abort). Knows the Interp (its memory hooks) and
 * src/dist; not the language's values. */
#include "qdist.h"
#include "dsvr.h"
#include "farm.h"
#include "pool.h"
#include "qh_assert.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct QDist {
    Interp *in;
    int rank, nsvc; /* world rank; ranks in the service (a power of two) */
    MPI_Comm svc;   /* the service's ranks, or MPI_COMM_NULL */
    Dsvr *r;        /* rank 0: the leader's side */
    pthread_t th;   /* the others: the serving thread */
    bool thread;
    size_t min_budget; /* the smallest budget among the service's ranks */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool busy; /* rank 0: a call holds the state */
    pthread_t owner;
    atomic_int dead; /* a rank of the service died, or the leader is gone */
    char why[200];
    void *token; /* this rank's reservation for the state now held */
    /* rank 0's counts for --stats */
    unsigned long states;
    int max_nq, max_ranks;
    DsvStats total;
};

struct QDState {
    QDist *qd; /* the service, or NULL: a one-rank state */
    Dsv *local;
    Interp *in;
    int nq;
    void *token; /* a one-rank state's reservation */
};

/* ---------------------------------------------------------------- hooks */

static int svc_abort(void *ctx, char *msg, size_t len)
{
    QDist *qd = ctx;
    if (!atomic_load(&qd->dead)) return 0;
    pthread_mutex_lock(&qd->mu);
    snprintf(msg, len, "%s", qd->why);
    pthread_mutex_unlock(&qd->mu);
    return 1;
}

static int svc_reserve(void *ctx, size_t bytes, char *msg, size_t len)
{
    QDist *qd = ctx;
    char e[200];
    void *t = qd->in->hooks.mem_reserve(qd->in, bytes, NULL, e, sizeof e);
    if (!t) {
        snprintf(msg, len, "rank %d: %s (--max-memory)", qd->rank, e);
        return -1;
    }
    qd->token = t;
    return 0;
}

static void svc_release(void *ctx, size_t bytes)
{
    (void)bytes;
    QDist *qd = ctx;
    qd->in->hooks.mem_unreserve(qd->in, qd->token);
    qd->token = NULL;
}

static int one_reserve(void *ctx, size_t bytes, char *msg, size_t len)
{
    QDState *s = ctx;
    s->token = s->in->hooks.mem_reserve(s->in, bytes, NULL, msg, len);
    return s->token ? 0 : -1;
}

static void one_release(void *ctx, size_t bytes)
{
    (void)bytes;
    QDState *s = ctx;
    s->in->hooks.mem_unreserve(s->in, s->token);
    s->token = NULL;
}

static DsvConfig svc_config(QDist *qd)
{
    DsvConfig c;
    memset(&c, 0, sizeof c);
    c.relabel = 1;
    c.abort = svc_abort;
    c.abort_ctx = qd;
    c.reserve = svc_reserve;
    c.release = svc_release;
    c.mem_ctx = qd;
    return c;
}

/* ---------------------------------------------------------------- the service */

/* Collective over the world: the service's communicator (the first
 * power of two of ranks) and the budgets of its ranks. */
static QDist *open_common(Interp *in)
{
    QDist *qd = xcalloc(1, sizeof *qd);
    qd->in = in;
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &qd->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    qd->nsvc = 1;
    while (qd->nsvc * 2 <= size) qd->nsvc *= 2;
    pthread_mutex_init(&qd->mu, NULL);
    pthread_cond_init(&qd->cv, NULL);
    unsigned long long mine = in->hooks.mem_budget(in), least = 0;
    MPI_Comm_split(MPI_COMM_WORLD, qd->rank < qd->nsvc ? 0 : MPI_UNDEFINED, qd->rank, &qd->svc);
    if (qd->svc != MPI_COMM_NULL) {
        MPI_Allreduce(&mine, &least, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, qd->svc);
        qd->min_budget = (size_t)least;
    }
    return qd;
}

QDist *qdist_lead(Interp *in, struct Farm *farm)
{
    (void)farm;
    QDist *qd = open_common(in);
    if (qd->nsvc > 1) {
        DsvConfig c = svc_config(qd);
        char err[256];
        qd->r = dsvr_open(qd->svc, &c, err, sizeof err);
    }
    in->qdist = qd;
    return qd;
}

static void *serve_main(void *arg)
{
    QDist *qd = arg;
    DsvConfig c = svc_config(qd);
    char err[256];
    dsvr_serve(qd->svc, &c, err, sizeof err);
    return NULL;
}

QDist *qdist_follow(Interp *in, struct Farm *farm)
{
    (void)farm;
    QDist *qd = open_common(in);
    if (qd->svc != MPI_COMM_NULL && qd->nsvc > 1)
        qd->thread = pthread_create(&qd->th, NULL, serve_main, qd) == 0;
    in->qdist = qd;
    return qd;
}

static void mark_dead(QDist *qd, const char *why)
{
    pthread_mutex_lock(&qd->mu);
    if (!atomic_load(&qd->dead)) snprintf(qd->why, sizeof qd->why, "%s", why);
    atomic_store(&qd->dead, 1);
    pthread_cond_broadcast(&qd->cv);
    pthread_mutex_unlock(&qd->mu);
}

void qdist_rank_died(QDist *qd, int rank, const char *why)
{
    if (rank >= qd->nsvc) return; /* not part of the service */
    char msg[200];
    snprintf(msg, sizeof msg, "rank %d died (%s): the distributed state is lost", rank, why);
    mark_dead(qd, msg);
}

void qdist_leader_gone(QDist *qd, const char *why) { mark_dead(qd, why); }

void qdist_stats(QDist *qd, FILE *out)
{
    if (!out || !qd->states) return;
    fprintf(out,
            "qh stats: %lu distributed states (largest %d wires on %d rank%s): %llu gates (%llu "
            "local, %llu diagonal "
            "on global wires, %llu exchanges, %llu swaps), %llu bytes sent by rank 0\n",
            qd->states, qd->max_nq, qd->max_ranks, qd->max_ranks == 1 ? "" : "s",
            (unsigned long long)qd->total.ops, (unsigned long long)qd->total.local_ops,
            (unsigned long long)qd->total.diag_global, (unsigned long long)qd->total.exchanges,
            (unsigned long long)qd->total.swaps, (unsigned long long)qd->total.bytes_sent);
}

int qdist_close(QDist *qd)
{
    if (!qd) return 0;
    int died = atomic_load(&qd->dead);
    if (qd->r) dsvr_close(qd->r); /* the followers leave dsvr_serve */
    if (qd->thread) pthread_join(qd->th, NULL);
    died |= atomic_load(&qd->dead);
    if (qd->svc != MPI_COMM_NULL && !died) MPI_Comm_free(&qd->svc);
    qd->svc = MPI_COMM_NULL;
    /* rank 0's interpreter is gone by now: in->qdist is not touched */
    return died;
}

void qdist_free(QDist *qd)
{
    if (!qd) return;
    pthread_cond_destroy(&qd->cv);
    pthread_mutex_destroy(&qd->mu);
    free(qd);
}

/* ---------------------------------------------------------------- states for calls */

/* The exchange buffer of a state's part: an eighth of the part, from
 * DSV_XBUF_MIN to DSV_XBUF_DEFAULT (a small state need not hold 4 MiB
 * beside it). */
static size_t xbuf_for(int nq, int R)
{
    if (R < 2) return 0;
    size_t x = sv_bytes(nq - __builtin_ctz((unsigned)R)) / 8;
    return x < DSV_XBUF_MIN ? DSV_XBUF_MIN : x > DSV_XBUF_DEFAULT ? DSV_XBUF_DEFAULT : x;
}

/* Ranks an nq-wire state is split over on the service: all of them, or
 * one when it is too small to split (each part needs DSV_RB wires). */
static int split_ranks(const QDist *qd, int nq)
{
    if (!qd || !qd->r) return 1;
    int k = __builtin_ctz((unsigned)qd->nsvc);
    int rb = nq < DSV_RB ? nq : DSV_RB;
    return nq - k >= rb ? qd->nsvc : 1;
}

bool qdist_wanted(Interp *in, int nq, bool asked)
{
    if (asked) return true;
    QDist *qd = in->qdist;
    if (!qd || qd->rank != 0 || !qd->r) return false;
    /* automatic: too big for rank 0's budget, its parts fit every service rank's */
    size_t whole = sv_bytes(nq);
    int R = split_ranks(qd, nq);
    size_t part = dsv_bytes_per_rank(nq, R, xbuf_for(nq, R));
    return R > 1 && whole > in->hooks.mem_budget(in) && part != SIZE_MAX && part <= qd->min_budget;
}

size_t qdist_local_bytes(Interp *in, int nq)
{
    QDist *qd = in->qdist;
    int R = qd && qd->rank == 0 ? split_ranks(qd, nq) : 1;
    return dsv_bytes_per_rank(nq, R, xbuf_for(nq, R));
}

QDState *qdist_acquire(Interp *in, int nq, const atomic_int *cancel, char *err, size_t errlen)
{
    QDist *qd = in->qdist;
    QDState *s = xcalloc(1, sizeof *s);
    s->in = in;
    s->nq = nq;
    if (qd && qd->rank == 0 && split_ranks(qd, nq) > 1) {
        /* the service: one state at a time */
        pthread_mutex_lock(&qd->mu);
        if (qd->busy && pthread_equal(qd->owner, pthread_self())) {
            pthread_mutex_unlock(&qd->mu);
            free(s);
            snprintf(
                err, errlen,
                "a call on a distributed device made inside another one (one distributed state "
                "exists at a time)");
            return NULL;
        }
        while (qd->busy && !(cancel && atomic_load(cancel)) && !atomic_load(&qd->dead)) {
            struct timespec dl;
            clock_gettime(CLOCK_REALTIME, &dl);
            dl.tv_nsec += 10 * 1000 * 1000;
            if (dl.tv_nsec >= 1000000000L) {
                dl.tv_sec++;
                dl.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&qd->cv, &qd->mu, &dl);
        }
        if (atomic_load(&qd->dead) || qd->busy) {
            snprintf(err, errlen, "%s",
                     atomic_load(&qd->dead) ? qd->why
                                            : "cancelled while waiting for the distributed state");
            pthread_mutex_unlock(&qd->mu);
            free(s);
            return NULL;
        }
        qd->busy = true;
        qd->owner = pthread_self();
        pthread_mutex_unlock(&qd->mu);
        if (dsvr_new(qd->r, nq, xbuf_for(nq, qd->nsvc), err, errlen) != 0) {
            pthread_mutex_lock(&qd->mu);
            qd->busy = false;
            pthread_cond_broadcast(&qd->cv);
            pthread_mutex_unlock(&qd->mu);
            free(s);
            return NULL;
        }
        s->qd = qd;
        return s;
    }
    /* one rank: a dsv state of this process */
    DsvConfig c;
    memset(&c, 0, sizeof c);
    c.relabel = 1;
    c.reserve = one_reserve;
    c.release = one_release;
    c.mem_ctx = s;
    if (dsv_new(&s->local, nq, MPI_COMM_NULL, &c, err, errlen) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

void qdist_release(QDState *s)
{
    if (!s) return;
    QDist *qd = s->qd;
    if (qd) {
        Dsv *d = dsvr_state(qd->r);
        if (d) {
            DsvStats st;
            dsv_stats(d, &st);
            pthread_mutex_lock(&qd->mu);
            qd->states++;
            if (s->nq > qd->max_nq) qd->max_nq = s->nq;
            if (dsv_nranks(d) > qd->max_ranks) qd->max_ranks = dsv_nranks(d);
            qd->total.ops += st.ops;
            qd->total.local_ops += st.local_ops;
            qd->total.diag_global += st.diag_global;
            qd->total.exchanges += st.exchanges;
            qd->total.swaps += st.swaps;
            qd->total.bytes_sent += st.bytes_sent;
            pthread_mutex_unlock(&qd->mu);
        }
        char err[256];
        dsvr_free(qd->r, err, sizeof err);
        pthread_mutex_lock(&qd->mu);
        qd->busy = false;
        pthread_cond_broadcast(&qd->cv);
        pthread_mutex_unlock(&qd->mu);
    } else {
        dsv_free(s->local);
    }
    free(s);
}

int qdist_nranks(const QDState *s) { return s->qd ? s->qd->nsvc : 1; }

int qdist_apply(QDState *s, const SvOp *op, char *err, size_t errlen)
{
    return s->qd ? dsvr_apply(s->qd->r, op, err, errlen) : dsv_apply(s->local, op, err, errlen);
}

/* The shots of a distributed readout: the generator only where there are
   shots (the service sends none for an exact read). */
static DsvShots read_shots(const QbRead *rq)
{
    return (DsvShots){ rq->shots, rq->shots ? rq->rng : NULL };
}

int qdist_expval(QDState *s, const QbRead *rq, double *out, char *err, size_t errlen)
{
    const SvPauli *t = rq->terms;
    int n = rq->nterms;
    if (s->qd) return dsvr_expval(s->qd->r, t, n, read_shots(rq), out, err, errlen);
    return rq->shots ? dsv_expval_shots(s->local, t, n, read_shots(rq), out, err, errlen)
                     : dsv_expval(s->local, t, n, out, err, errlen);
}

int qdist_var(QDState *s, const QbRead *rq, double *out, char *err, size_t errlen)
{
    const SvPauli *t = rq->terms;
    int n = rq->nterms;
    if (s->qd) return dsvr_var(s->qd->r, t, n, read_shots(rq), out, err, errlen);
    return rq->shots ? dsv_var_shots(s->local, t, n, read_shots(rq), out, err, errlen)
                     : dsv_var(s->local, t, n, out, err, errlen);
}

int qdist_sample_pauli(QDState *s, const SvPauli *word, size_t shots, Rng *rng, double *out,
                       char *err, size_t errlen)
{
    if (s->qd) return dsvr_sample_pauli(s->qd->r, word, shots, rng, out, err, errlen);
    return dsv_sample_pauli(s->local, word, shots, rng, out, err, errlen);
}

int qdist_probs(QDState *s, const QbRead *rq, double *out, char *err, size_t errlen)
{
    const int *w = rq->wires;
    int nw = rq->nwires;
    if (s->qd) return dsvr_probs(s->qd->r, w, nw, read_shots(rq), out, err, errlen);
    return rq->shots ? dsv_probs_shots(s->local, w, nw, read_shots(rq), out, err, errlen)
                     : dsv_probs(s->local, w, nw, out, err, errlen);
}

int qdist_sample(QDState *s, size_t shots, Rng *rng, uint64_t *out, char *err, size_t errlen)
{
    if (s->qd) return dsvr_sample(s->qd->r, shots, rng, out, err, errlen);
    return dsv_sample(s->local, shots, rng, out, err, errlen);
}

int qdist_measure(QDState *s, int wire, int reset, Rng *rng, char *err, size_t errlen)
{
    if (s->qd) return dsvr_measure(s->qd->r, wire, reset, rng, err, errlen);
    return dsv_measure(s->local, wire, reset, rng, err, errlen);
}

int qdist_state(QDState *s, cplx **out, char *err, size_t errlen)
{
    *out = NULL;
    size_t bytes = sv_bytes(s->nq);
    size_t budget = s->in->hooks.mem_budget(s->in), held = s->in->hooks.mem_held(s->in);
    if (bytes == SIZE_MAX || held > budget || bytes > budget - held) {
        char b1[32], b2[32], b3[32];
        pool_format_bytes(b1, sizeof b1, bytes);
        pool_format_bytes(b2, sizeof b2, budget);
        pool_format_bytes(b3, sizeof b3, held);
        snprintf(
            err, errlen,
            "the %d-wire distributed state is %s; gathered on rank 0 it would not fit rank 0's "
            "memory budget (%s, %s of it in use: --max-memory); read it with probs(), expval() or "
            "sample() "
            "instead",
            s->nq, b1, b2, b3);
        return -1;
    }
    cplx *a = malloc(bytes);
    if (!a) {
        snprintf(err, errlen, "out of memory gathering a %d-wire state", s->nq);
        return -1;
    }
    int rc =
        s->qd ? dsvr_gather(s->qd->r, a, err, errlen) : dsv_gather(s->local, 0, a, err, errlen);
    if (rc) {
        free(a);
        return -1;
    }
    *out = a;
    return 0;
}
