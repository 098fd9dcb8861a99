/* farm.c — the task farm's transport: one communication thread per rank.
 *
 * The thread owns every MPI call of the farm (on a duplicated
 * communicator): it starts queued sends, completes them, receives with
 * MPI_Improbe/MPI_Mrecv, sends heartbeats and watches for silence or
 * vanished processes. API calls from other threads only queue messages
 * and read the peer table under one mutex; callbacks run on the thread
 * without the mutex held. Nothing ever blocks on one peer, so a dead rank
 * cannot hang anybody. Must not know what a task is.
 */
#include "farm.h"
#include "qh_assert.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

enum { TAG_TASK = 11, TAG_OK, TAG_ERR, TAG_HB, TAG_STOP, TAG_CANCEL, TAG_BYE };

typedef struct Out {
    int peer, tag;
    char *buf;
    size_t len;
    MPI_Request rq;
    struct Out *next;
} Out;

typedef struct Hello {
    int pid, slots;
    unsigned long long pidns; /* inode of /proc/self/ns/pid: same host AND namespace */
    char host[64];
} Hello;

typedef struct Peer {
    Hello h;
    int alive, bye, local; /* local: same host and pid namespace */
    double last;           /* monotonic time of its last message */
    uint64_t *ids;         /* master: tasks in flight there */
    int nids, cap;
} Peer;

struct Farm {
    MPI_Comm comm;
    int rank, size;
    FarmConfig cfg;
    FarmCallbacks cb;
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    Out *qhead, *qtail; /* queued by any thread (mu) */
    Out *pending;       /* started, not complete (thread only) */
    Peer *peer;         /* per rank (mu) */
    int closing;        /* master: farm_close called (mu) */
    int stopped;        /* worker: the master said stop or died (mu) */
    int done;           /* the thread has ended (mu) */
    int ndied;
    double master_last; /* worker: last message from the master */
    char why[160];      /* worker: why it stopped */
    FarmStats st;
};

/* Sends to dead ranks never complete: their buffers must outlive the farm
   (MPI may still touch them); they stay reachable here. */
static Out *graveyard;
static pthread_mutex_t grave_mu = PTHREAD_MUTEX_INITIALIZER;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Why: a rank on the same host that has gone is known at once, without
   waiting for the heartbeat timeout (mpirun reaps killed processes). */
static int process_gone(int pid)
{
    if (kill(pid, 0) != 0 && errno == ESRCH) return 1;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *fp = fopen(path, "r");
    if (!fp) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* "pid (comm) S ..." */
    return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

static unsigned long long pid_namespace(void)
{
    struct stat sb;
    return stat("/proc/self/ns/pid", &sb) == 0 ? (unsigned long long)sb.st_ino : 0;
}

/* Queue a message (copies id + payload); any thread. */
static void enqueue(Farm *f, int peer, int tag, uint64_t id, const void *p, size_t len)
{
    Out *o = calloc(1, sizeof *o);
    char *b = malloc(8 + len);
    if (!o || !b) {
        free(o);
        free(b);
        return;
    } /* the peer's timeout still ends the wait */
    memcpy(b, &id, 8);
    if (len) memcpy(b + 8, p, len);
    o->peer = peer;
    o->tag = tag;
    o->buf = b;
    o->len = 8 + len;
    pthread_mutex_lock(&f->mu);
    qh_assert(!f->qtail == !f->qhead && (!f->qtail || !f->qtail->next)); /* the tail is last */
    if (f->qtail)
        f->qtail->next = o;
    else
        f->qhead = o;
    f->qtail = o;
    pthread_mutex_unlock(&f->mu);
}

/* ---- the thread ------------------------------------------------------- */

/* Why: a worker found dead fails its tasks (outside the lock: the
   callbacks may submit elsewhere) and is never written to again. */
static void declare_dead(Farm *f, int r, const char *why)
{
    pthread_mutex_lock(&f->mu);
    qh_assert(r >= 0 && r < f->size && r != f->rank);
    Peer *p = &f->peer[r];
    if (!p->alive) {
        pthread_mutex_unlock(&f->mu);
        return;
    }
    p->alive = 0;
    f->ndied++;
    f->st.died++;
    uint64_t *ids = p->ids;
    int n = p->nids;
    p->ids = NULL;
    p->nids = p->cap = 0;
    pthread_mutex_unlock(&f->mu);
    char msg[256];
    snprintf(msg, sizeof msg, "rank %d died (%s)", r, why);
    if (f->cb.died) f->cb.died(f->cb.ctx, f, r, why);
    for (int i = 0; i < n; i++)
        if (f->cb.answer) f->cb.answer(f->cb.ctx, f, ids[i], 0, msg, strlen(msg));
    free(ids);
}

/* Forget task id at rank r (answered); 1 if it was in flight. */
static int forget(Farm *f, int r, uint64_t id)
{
    pthread_mutex_lock(&f->mu);
    qh_assert(r >= 0 && r < f->size);
    Peer *p = &f->peer[r];
    qh_assert(p->nids >= 0 && p->nids <= p->cap);
    int found = 0;
    for (int i = 0; i < p->nids; i++)
        if (p->ids[i] == id) {
            p->ids[i] = p->ids[--p->nids];
            found = 1;
            break;
        }
    pthread_mutex_unlock(&f->mu);
    return found;
}

static void worker_stop(Farm *f, const char *why)
{
    pthread_mutex_lock(&f->mu);
    int first = !f->stopped;
    f->stopped = 1;
    if (first) snprintf(f->why, sizeof f->why, "%s", why);
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    if (first && f->cb.stop) f->cb.stop(f->cb.ctx, f, why);
}

/* One received message. */
static void dispatch(Farm *f, int src, int tag, const char *buf, size_t len)
{
    uint64_t id = 0;
    if (len >= 8) memcpy(&id, buf, 8);
    const char *p = buf + 8;
    size_t n = len >= 8 ? len - 8 : 0;
    double t = now();
    pthread_mutex_lock(&f->mu);
    f->st.received++;
    f->st.bytes_received += len;
    pthread_mutex_unlock(&f->mu);
    if (f->rank == 0) {
        pthread_mutex_lock(&f->mu);
        int alive = f->peer[src].alive;
        f->peer[src].last = t;
        if (tag == TAG_BYE) f->peer[src].bye = 1;
        pthread_mutex_unlock(&f->mu);
        if (!alive) return; /* declared dead: whatever it says now is too late */
        if ((tag == TAG_OK || tag == TAG_ERR) && forget(f, src, id) && f->cb.answer)
            f->cb.answer(f->cb.ctx, f, id, tag == TAG_OK, p, n);
        return;
    }
    f->master_last = t;
    switch (tag) {
    case TAG_TASK:
        if (f->cb.task) f->cb.task(f->cb.ctx, f, id, p, n);
        break;
    case TAG_CANCEL:
        if (f->cb.cancel) f->cb.cancel(f->cb.ctx, f, id);
        break;
    case TAG_STOP: /* id 1: some rank died, collectives would hang */
        if (id) f->ndied = 1;
        worker_stop(f, id ? FARM_STOPPED " (a rank died)" : FARM_STOPPED);
        enqueue(f, 0, TAG_BYE, 0, NULL, 0);
        break;
    default: break;
    }
}

/* Start queued sends; sends to dead peers are dropped unsent. */
static int pump_out(Farm *f)
{
    pthread_mutex_lock(&f->mu);
    Out *q = f->qhead;
    f->qhead = f->qtail = NULL;
    pthread_mutex_unlock(&f->mu);
    int did = 0;
    while (q) {
        Out *o = q;
        q = q->next;
        o->next = NULL;
        int alive = 1;
        if (f->rank == 0) {
            pthread_mutex_lock(&f->mu);
            alive = f->peer[o->peer].alive;
            pthread_mutex_unlock(&f->mu);
        }
        if (!alive || MPI_Isend(o->buf, (int)o->len, MPI_BYTE, o->peer, o->tag, f->comm, &o->rq) !=
                          MPI_SUCCESS) {
            free(o->buf);
            free(o);
            continue;
        }
        pthread_mutex_lock(&f->mu);
        f->st.sent++;
        f->st.bytes_sent += o->len;
        pthread_mutex_unlock(&f->mu);
        o->next = f->pending;
        f->pending = o;
        did = 1;
    }
    return did;
}

/* Complete finished sends. */
static void reap_sends(Farm *f)
{
    Out **pp = &f->pending;
    while (*pp) {
        Out *o = *pp;
        int flag = 0;
        MPI_Test(&o->rq, &flag, MPI_STATUS_IGNORE);
        if (flag) {
            *pp = o->next;
            free(o->buf);
            free(o);
        } else {
            pp = &o->next;
        }
    }
}

/* Receive whatever has arrived. */
static int pump_in(Farm *f)
{
    int did = 0;
    for (;;) {
        int flag = 0;
        MPI_Message msg;
        MPI_Status st;
        if (MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, f->comm, &flag, &msg, &st) != MPI_SUCCESS ||
            !flag)
            break;
        int count = 0;
        MPI_Get_count(&st, MPI_BYTE, &count);
        char *buf = malloc(count > 0 ? (size_t)count : 1);
        if (!buf) {
            struct timespec ts = { 0, 1000000 };
            nanosleep(&ts, NULL);
            continue;
        }
        MPI_Mrecv(buf, count, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
        dispatch(f, st.MPI_SOURCE, st.MPI_TAG, buf, (size_t)count);
        free(buf);
        did = 1;
    }
    return did;
}

/* Master: heartbeats out, the living checked. */
static void watch_master(Farm *f, double t, double *last_hb)
{
    if (t - *last_hb >= f->cfg.heartbeat) {
        *last_hb = t;
        for (int r = 1; r < f->size; r++) {
            pthread_mutex_lock(&f->mu);
            int alive = f->peer[r].alive, bye = f->peer[r].bye;
            pthread_mutex_unlock(&f->mu);
            if (alive && !bye) enqueue(f, r, TAG_HB, 0, NULL, 0);
        }
        for (int r = 1; r < f->size; r++) {
            pthread_mutex_lock(&f->mu);
            Peer p = f->peer[r];
            pthread_mutex_unlock(&f->mu);
            if (!p.alive || p.bye) continue;
            char why[96];
            if (p.local && !f->cfg.no_pid_check && process_gone(p.h.pid)) {
                /* a worker that said goodbye and left between the last pump and
                 * this check is not dead: its bye is already in the queue */
                pump_in(f);
                pthread_mutex_lock(&f->mu);
                int bye = f->peer[r].bye;
                pthread_mutex_unlock(&f->mu);
                if (bye) continue;
                snprintf(why, sizeof why, "its process %d is gone", p.h.pid);
                declare_dead(f, r, why);
            } else if (t - p.last > f->cfg.timeout) {
                snprintf(why, sizeof why, "no message for %.1f s", t - p.last);
                declare_dead(f, r, why);
            }
        }
    }
}

static void *farm_main(void *arg)
{
    Farm *f = arg;
    double last_hb = 0, close_at = 0;
    long idle = 0;
    for (;;) {
        double t = now();
        int did = pump_out(f);
        reap_sends(f);
        did |= pump_in(f);
        if (f->rank == 0) {
            watch_master(f, t, &last_hb);
            pthread_mutex_lock(&f->mu);
            int closing = f->closing, left = 0;
            for (int r = 1; r < f->size; r++) left += f->peer[r].alive && !f->peer[r].bye;
            pthread_mutex_unlock(&f->mu);
            if (closing) {
                if (close_at == 0) {
                    close_at = t;
                    pthread_mutex_lock(&f->mu);
                    uint64_t anydead = f->ndied > 0;
                    pthread_mutex_unlock(&f->mu);
                    for (int r = 1; r < f->size; r++) enqueue(f, r, TAG_STOP, anydead, NULL, 0);
                    pump_out(f);
                }
                if (left == 0 || t - close_at > f->cfg.timeout) break;
            }
        } else {
            if (t - last_hb >= f->cfg.heartbeat) {
                last_hb = t;
                pthread_mutex_lock(&f->mu);
                int stopped = f->stopped;
                pthread_mutex_unlock(&f->mu);
                if (!stopped) enqueue(f, 0, TAG_HB, 0, NULL, 0);
            }
            if (t - f->master_last > f->cfg.timeout) {
                char why[96];
                snprintf(why, sizeof why, "rank 0 silent for %.1f s", t - f->master_last);
                worker_stop(f, why);
                break;
            }
            pthread_mutex_lock(&f->mu);
            int stopped = f->stopped, queued = f->qhead != NULL;
            pthread_mutex_unlock(&f->mu);
            if (stopped && !queued && !f->pending) break; /* the goodbye went out */
            if (stopped && close_at == 0) close_at = t;
            if (stopped && t - close_at > 2.0) break;
        }
        if (did)
            idle = 0;
        else {
            /* Nothing happened: poll again after 50 us a few times (a quick
             * answer), then every 1 ms. Each wake-up of this thread takes
             * the core from the rank's worker for a context switch: polling
             * every 50 us for milliseconds after each message made a
             * worker's 4.5 ms circuits take 7.5 ms (tests/bench/dist.sh).
             * Senders keep a task queued ahead of each worker (remote.c), so
             * the longer poll costs no idle time. */
            idle++;
            struct timespec ts = { 0, idle < 5 ? 50000 : 1000000 };
            nanosleep(&ts, NULL);
        }
    }
    /* unfinished sends (to dead peers): buffers stay alive */
    pthread_mutex_lock(&grave_mu);
    while (f->pending) {
        Out *o = f->pending;
        f->pending = o->next;
        o->next = graveyard;
        graveyard = o;
    }
    pthread_mutex_unlock(&grave_mu);
    pthread_mutex_lock(&f->mu);
    f->done = 1;
    f->stopped = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

/* ---- the interface ---------------------------------------------------- */

Farm *farm_new(MPI_Comm comm, const FarmConfig *cfg, const FarmCallbacks *cb, char *err,
               size_t errlen)
{
    Farm *f = calloc(1, sizeof *f);
    int size = 0;
    MPI_Comm_size(comm, &size);
    if (f) f->peer = calloc((size_t)size, sizeof(Peer));
    if (!f || !f->peer) {
        if (f) free(f->peer);
        free(f);
        if (err && errlen) snprintf(err, errlen, "task farm: out of memory");
        return NULL;
    }
    f->size = size;
    MPI_Comm_rank(comm, &f->rank);
    if (cfg) f->cfg = *cfg;
    if (cb) f->cb = *cb;
    if (f->cfg.heartbeat <= 0) f->cfg.heartbeat = 0.1;
    if (f->cfg.timeout <= 0) {
        const char *e = getenv("QH_MPI_TIMEOUT");
        f->cfg.timeout = e && atof(e) > 0 ? atof(e) : 10.0;
    }
    if (f->cfg.slots < 1) f->cfg.slots = 1;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    Hello me;
    memset(&me, 0, sizeof me);
    me.pid = (int)getpid();
    me.slots = f->cfg.slots;
    me.pidns = pid_namespace();
    gethostname(me.host, sizeof me.host - 1);
    Hello *all = calloc((size_t)size, sizeof *all);
    if (!all || MPI_Comm_dup(comm, &f->comm) != MPI_SUCCESS) {
        free(all);
        free(f->peer);
        free(f);
        if (err && errlen) snprintf(err, errlen, "task farm: cannot set up the communicator");
        return NULL;
    }
    MPI_Comm_set_errhandler(f->comm, MPI_ERRORS_RETURN);
    MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, f->comm);
    double t = now();
    for (int r = 0; r < size; r++) {
        f->peer[r].h = all[r];
        f->peer[r].alive = 1;
        f->peer[r].last = t;
        f->peer[r].local = strcmp(all[r].host, me.host) == 0 && all[r].pidns == me.pidns;
    }
    free(all);
    f->master_last = t;
    if (pthread_create(&f->th, NULL, farm_main, f) != 0) {
        MPI_Comm_free(&f->comm);
        free(f->peer);
        free(f);
        if (err && errlen) snprintf(err, errlen, "task farm: cannot start its thread");
        return NULL;
    }
    f->started = 1;
    return f;
}

int farm_close(Farm *f)
{
    if (!f) return 0;
    pthread_mutex_lock(&f->mu);
    if (f->rank == 0)
        f->closing = 1;
    else
        while (!f->stopped) pthread_cond_wait(&f->cv, &f->mu);
    pthread_mutex_unlock(&f->mu);
    if (f->started) pthread_join(f->th, NULL);
    int died = f->ndied;
    while (f->qhead) {
        Out *o = f->qhead;
        f->qhead = o->next;
        free(o->buf);
        free(o);
    }
    /* a worker that lost its master, or a master that lost workers, must
       not free a communicator with sends in flight to the dead */
    if (f->rank != 0 && strncmp(f->why, "rank 0 silent", 13) == 0) died = 1;
    if (!died) MPI_Comm_free(&f->comm);
    for (int r = 0; r < f->size; r++) free(f->peer[r].ids);
    free(f->peer);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    free(f);
    return died;
}

int farm_rank(const Farm *f) { return f->rank; }
int farm_size(const Farm *f) { return f->size; }

int farm_alive(Farm *f, int rank)
{
    if (rank < 0 || rank >= f->size) return 0;
    pthread_mutex_lock(&f->mu);
    int a = f->peer[rank].alive;
    pthread_mutex_unlock(&f->mu);
    return a;
}

int farm_slots(Farm *f, int rank)
{
    if (rank < 0 || rank >= f->size) return 0;
    return f->peer[rank].h.slots;
}

int farm_inflight(Farm *f, int rank)
{
    if (rank < 0 || rank >= f->size) return 0;
    pthread_mutex_lock(&f->mu);
    int n = f->peer[rank].nids;
    pthread_mutex_unlock(&f->mu);
    return n;
}

int farm_submit(Farm *f, int rank, uint64_t id, const void *blob, size_t len, char *err,
                size_t errlen)
{
    if (f->rank != 0 || rank <= 0 || rank >= f->size) {
        if (err && errlen) snprintf(err, errlen, "task farm: no worker rank %d", rank);
        return -1;
    }
    pthread_mutex_lock(&f->mu);
    Peer *p = &f->peer[rank];
    if (!p->alive || f->closing) {
        pthread_mutex_unlock(&f->mu);
        if (err && errlen) snprintf(err, errlen, "rank %d died", rank);
        return -1;
    }
    if (p->nids == p->cap) {
        int cap = p->cap ? 2 * p->cap : 8;
        uint64_t *ids = realloc(p->ids, (size_t)cap * sizeof *ids);
        if (!ids) {
            pthread_mutex_unlock(&f->mu);
            if (err && errlen) snprintf(err, errlen, "task farm: out of memory");
            return -1;
        }
        p->ids = ids;
        p->cap = cap;
    }
    qh_assert(p->nids < p->cap);
    p->ids[p->nids++] = id;
    pthread_mutex_unlock(&f->mu);
    enqueue(f, rank, TAG_TASK, id, blob, len);
    return 0;
}

void farm_cancel(Farm *f, int rank, uint64_t id)
{
    if (f->rank == 0 && farm_alive(f, rank)) enqueue(f, rank, TAG_CANCEL, id, NULL, 0);
}

int farm_pick(Farm *f)
{
    int best = -1, bn = 0;
    pthread_mutex_lock(&f->mu);
    for (int r = 1; r < f->size; r++) {
        Peer *p = &f->peer[r];
        if (!p->alive || p->nids >= p->h.slots) continue;
        if (best < 0 || p->nids < bn) {
            best = r;
            bn = p->nids;
        }
    }
    pthread_mutex_unlock(&f->mu);
    return best;
}

void farm_reply(Farm *f, uint64_t id, const void *blob, size_t len)
{
    enqueue(f, 0, TAG_OK, id, blob, len);
}

void farm_reply_error(Farm *f, uint64_t id, const char *msg)
{
    enqueue(f, 0, TAG_ERR, id, msg, strlen(msg));
}

void farm_stats(Farm *f, FarmStats *out)
{
    pthread_mutex_lock(&f->mu);
    *out = f->st;
    pthread_mutex_unlock(&f->mu);
}
