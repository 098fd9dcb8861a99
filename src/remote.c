/* remote.c — qh under mpirun (remote.h): the program shared from rank 0 and
 * checked on every rank, the task farm's two sides (rank 0 ships packed
 * tasks from its remote slots and waits for the answers; the other ranks
 * run them on their own executors and answer), the other ranks' part of
 * --trace and --stats, and the end of the job. The farm's transport, the
 * distributed state and MPI itself are src/dist's; values, tasks and their
 * packing are the interpreter's (ship.h, serial.h). */
#include "remote.h"
#include "ship.h"
#include "builtins.h"
#include "eval.h"
#include "farm.h"
#include "load.h"
#include "qdist.h"
#include "pool.h"
#include "qh_assert.h"
#include "qrt.h"
#include "serial.h"
#include "trace.h"

#include <mpi.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What rank 0 broadcasts first: end at once, or the program follows. */
typedef enum { MSG_EXIT = 0, MSG_PROGRAM = 1 } MsgKind;
typedef struct ProgHdr {
    int32_t kind;
    uint32_t namelen;
    uint64_t textlen;
} ProgHdr;

/* What every rank says after compiling (gathered by all). */
typedef struct Hello {
    int32_t compiled; /* the program and its imports compiled */
    int32_t slots;    /* tasks it runs at once (its workers) */
    uint64_t build;   /* fingerprint of this qh: version, kinds, builtins */
    uint64_t code;    /* fingerprint of the sources it compiled */
    uint64_t budget;  /* its device memory budget */
    char host[64];
} Hello;

/* A farm message's first byte: a task, or rank 0's request for a rank's
 * trace events at the end. */
typedef enum { REQ_TASK = 'T', REQ_COLLECT = 'C' } ReqKind;

/* Rank 0: a remote slot waiting for its answer. */
typedef struct Wait {
    uint64_t id;
    int rank;
    bool done, ok;
    Buf answer;
    struct Wait *next;
} Wait;

/* Rank 0's counts per rank, for --stats. */
typedef struct RankStats {
    unsigned long sent, ok, failed;
    double seconds; /* task time the rank reported */
    unsigned long long bytes_out, bytes_in;
    uint64_t calls, gates, peak; /* its quantum runtime's counts, at the end */
    char died[120];
} RankStats;

/* What a rank answers rank 0's REQ_COLLECT with: its counts, then its
 * trace events. */
typedef struct Collected {
    uint64_t calls, gates, peak;
} Collected;

/* A follower's inbox: what the farm's thread hands to the main thread. */
typedef struct Item {
    int kind; /* REQ_TASK, REQ_COLLECT, or 'X' cancel */
    uint64_t id;
    char *blob;
    size_t len;
    struct Item *next;
} Item;

/* A task a follower runs. */
typedef struct Running {
    Remote *r;
    uint64_t id;
    char *blob;
    size_t len;
    Fut *fut; /* set once submitted (under r->mu) */
    struct Running *next;
} Running;

struct Remote {
    int rank, size;
    bool shared;   /* rank 0: the program went out (the others serve) */
    bool multiple; /* MPI gave MPI_THREAD_MULTIPLE */
    Farm *farm;
    QDist *qd;
    qh_State *Q;
    Interp *in;
    SerCode code;
    Hello *hello;  /* every rank's */
    double t_sync; /* when the ranks met (monotonic): the traces' origin */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* rank 0 */
    ShipRemote ar;
    int *slot_rank;
    char **slot_names;
    Wait *waits;
    uint64_t next_id;
    RankStats *rs;
    /* a follower */
    Item *inbox, *inbox_tail;
    Running *running;
    bool stop;
    char why[160];
};

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* The build's fingerprint: what the packed format depends on (the kinds'
 * tags and the builtins' indices). */
static uint64_t build_print(void)
{
    uint64_t h = fnv(14695981039346656037ULL, QH_VERSION, strlen(QH_VERSION));
    for (int t = 0; t < T_MAXTYPES && value_types[t]; t++)
        h = fnv(h, value_types[t]->name, strlen(value_types[t]->name) + 1);
    for (int i = 0; i < builtin_count(); i++)
        h = fnv(h, builtin_get(i)->name, strlen(builtin_get(i)->name) + 1);
    return h;
}

static uint64_t code_print(const SerCode *c)
{
    uint64_t h = fnv(14695981039346656037ULL, &c->nmods, sizeof c->nmods);
    for (int i = 0; i < c->nmods; i++) {
        const Source *s = c->mods[i]->src;
        h = fnv(h, &s->len, sizeof s->len);
        h = fnv(h, s->text, s->len);
    }
    return h;
}

int remote_init(int *argc, char ***argv, Remote **out)
{
    *out = NULL;
    if (remote_launcher_rank() < 0) return -1;
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        return remote_launcher_rank();
    Remote *r = xcalloc(1, sizeof *r);
    MPI_Comm_rank(MPI_COMM_WORLD, &r->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &r->size);
    r->multiple = provided >= MPI_THREAD_MULTIPLE;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    *out = r;
    return r->rank;
}

/* ---------------------------------------------------------------- the handshake */

/* Every rank: what it compiled, gathered by all; the same verdict
 * everywhere. NULL if all agree, else the reason (static or in buf). */
static const char *handshake(Remote *r, bool compiled, int slots, size_t budget, char *buf,
                             size_t len)
{
    Hello me;
    memset(&me, 0, sizeof me);
    me.compiled = compiled;
    me.slots = slots;
    me.build = build_print();
    me.code = compiled ? code_print(&r->code) : 0;
    me.budget = budget;
    gethostname(me.host, sizeof me.host - 1);
    r->hello = xcalloc((size_t)r->size, sizeof(Hello));
    MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, r->hello, (int)sizeof me, MPI_BYTE,
                  MPI_COMM_WORLD);
    for (int k = 1; k < r->size; k++) {
        const Hello *h = &r->hello[k], *z = &r->hello[0];
        if (h->build != z->build) {
            snprintf(buf, len,
                     "rank %d (%s) runs a different build of qh than rank 0 (%s): every rank must "
                     "run the same qh",
                     k, h->host, z->host);
            return buf;
        }
        if (!h->compiled) {
            snprintf(
                buf, len,
                "rank %d (%s) could not compile the program: a module it imports is missing or "
                "differs there (every rank must see the same files)",
                k, h->host);
            return buf;
        }
        if (h->code != z->code) {
            snprintf(buf, len,
                     "rank %d (%s) loaded different sources than rank 0 (%s): the program and "
                     "every module "
                     "it imports must be the same files on every rank",
                     k, h->host, z->host);
            return buf;
        }
    }
    return NULL;
}

/* The ranks meet: the traces of all ranks count time from here. */
static void meet(Remote *r)
{
    MPI_Barrier(MPI_COMM_WORLD);
    r->t_sync = mono();
}

/* ---------------------------------------------------------------- rank 0: shipping tasks */

static void lead_answer(void *ctx, Farm *f, uint64_t id, int ok, const void *blob, size_t len)
{
    (void)f;
    Remote *r = ctx;
    pthread_mutex_lock(&r->mu);
    for (Wait *w = r->waits; w; w = w->next) {
        if (w->id != id) continue;
        buf_put(&w->answer, blob, len);
        w->ok = ok;
        w->done = true;
        pthread_cond_broadcast(&r->cv);
        break;
    }
    pthread_mutex_unlock(&r->mu);
}

static void lead_died(void *ctx, Farm *f, int rank, const char *why)
{
    (void)f;
    Remote *r = ctx;
    pthread_mutex_lock(&r->mu);
    snprintf(r->rs[rank].died, sizeof r->rs[rank].died, "%s", why);
    QDist *qd = r->qd;
    pthread_mutex_unlock(&r->mu);
    if (qd) qdist_rank_died(qd, rank, why);
}

static bool slot_usable(void *ud, int slot)
{
    Remote *r = ud;
    return farm_alive(r->farm, r->slot_rank[slot]);
}

static void unlink_wait(Remote *r, Wait *w)
{
    for (Wait **p = &r->waits; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
}

/* ShipRemote.ship: the task to the slot's rank, then wait for its answer
 * (the farm answers for a rank that died) or for cancellation. */
static int ship(void *ud, int slot, const void *task, size_t len, const atomic_int *cancel,
                Buf *out)
{
    Remote *r = ud;
    int rank = r->slot_rank[slot];
    char *blob = xmalloc(len + 1);
    blob[0] = REQ_TASK;
    memcpy(blob + 1, task, len);
    Wait w;
    memset(&w, 0, sizeof w);
    buf_init(&w.answer);
    w.rank = rank;
    pthread_mutex_lock(&r->mu);
    w.id = ++r->next_id;
    w.next = r->waits;
    r->waits = &w;
    r->rs[rank].sent++;
    r->rs[rank].bytes_out += len + 1;
    pthread_mutex_unlock(&r->mu);
    char err[200];
    int rc = farm_submit(r->farm, rank, w.id, blob, len + 1, err, sizeof err);
    free(blob);
    pthread_mutex_lock(&r->mu);
    if (rc != 0) {
        unlink_wait(r, &w);
        r->rs[rank].failed++;
        pthread_mutex_unlock(&r->mu);
        buf_printf(out, "%s", err);
        return 0;
    }
    bool cancelled = false;
    while (!w.done) {
        if (atomic_load(cancel)) {
            cancelled = true;
            break;
        }
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_nsec += 10 * 1000 * 1000;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&r->cv, &r->mu, &dl);
    }
    unlink_wait(r, &w);
    RankStats *st = &r->rs[rank];
    if (!cancelled) {
        st->bytes_in += w.answer.len;
        if (w.ok)
            st->ok++;
        else
            st->failed++;
    }
    pthread_mutex_unlock(&r->mu);
    if (cancelled) {
        farm_cancel(r->farm, rank, w.id);
        buf_free(&w.answer);
        return -1;
    }
    /* the farm's own error (the rank died), or [ok][seconds][the task's answer] */
    int ret;
    if (w.ok && w.answer.len >= 1 + sizeof(double)) {
        double secs;
        memcpy(&secs, w.answer.p + 1, sizeof secs);
        ret = w.answer.p[0] ? 1 : 0;
        pthread_mutex_lock(&r->mu);
        st->seconds += secs;
        if (!ret) {
            st->ok--;
            st->failed++;
        }
        pthread_mutex_unlock(&r->mu);
        buf_put(out, w.answer.p + 1 + sizeof secs, w.answer.len - 1 - sizeof secs);
    } else {
        if (w.answer.p)
            buf_put(out, w.answer.p, w.answer.len);
        else
            buf_puts(out, "no answer");
        ret = -2;
    }
    buf_free(&w.answer);
    return ret;
}

/* Rank 0 at the end: the other ranks' counts and trace events. */
static void collect(Remote *r, Interp *in)
{
    for (int k = 1; k < r->size; k++) {
        if (!farm_alive(r->farm, k)) continue;
        Wait w;
        memset(&w, 0, sizeof w);
        buf_init(&w.answer);
        char req = REQ_COLLECT;
        pthread_mutex_lock(&r->mu);
        w.id = ++r->next_id;
        w.rank = k;
        w.next = r->waits;
        r->waits = &w;
        pthread_mutex_unlock(&r->mu);
        char err[200];
        bool sent = farm_submit(r->farm, k, w.id, &req, 1, err, sizeof err) == 0;
        pthread_mutex_lock(&r->mu);
        while (sent && !w.done)
            pthread_cond_wait(&r->cv, &r->mu); /* the farm answers for a rank that dies */
        unlink_wait(r, &w);
        pthread_mutex_unlock(&r->mu);
        if (w.ok && w.answer.len >= sizeof(Collected)) {
            Collected c;
            memcpy(&c, w.answer.p, sizeof c);
            r->rs[k].calls = c.calls;
            r->rs[k].gates = c.gates;
            r->rs[k].peak = c.peak;
            if (in->trace)
                trace_append_events(in->trace, w.answer.p + sizeof c, w.answer.len - sizeof c);
        }
        buf_free(&w.answer);
    }
}

static void lead_finish(void *ud, Interp *in)
{
    Remote *r = ud;
    if (in->trace || in->stats) collect(r, in);
    if (r->qd) qdist_stats(r->qd, in->stats ? in->err : NULL);
    if (!in->stats) return;
    const char *why;
    unsigned long unsent = ship_unsent(in, &why);
    for (int k = 1; k < r->size; k++) {
        RankStats *s = &r->rs[k];
        char peak[32];
        pool_format_bytes(peak, sizeof peak, (size_t)s->peak);
        fprintf(in->err,
                "qh stats: rank %d (%s, %d worker%s): %lu tasks (%lu done, %lu failed), %.3f s in "
                "tasks, "
                "%llu quantum calls, %llu gates, device memory peak %s; %llu bytes sent to it, "
                "%llu back%s%s\n",
                k, r->hello[k].host, r->hello[k].slots, r->hello[k].slots == 1 ? "" : "s", s->sent,
                s->ok, s->failed, s->seconds, (unsigned long long)s->calls,
                (unsigned long long)s->gates, peak, s->bytes_out, s->bytes_in,
                s->died[0] ? "; died: " : "", s->died);
    }
    if (unsent)
        fprintf(in->err, "qh stats: %lu tasks ran on rank 0 because they could not be sent: %s\n",
                unsent, why);
}

bool remote_lead(Remote *r, qh_State *Q, qh_Program *p, FILE *err)
{
    if (!r || r->size < 2) return true;
    if (!r->multiple) {
        fprintf(err, "qh: this MPI does not provide MPI_THREAD_MULTIPLE: the program runs on rank "
                     "0 alone\n");
        return true;
    }
    Interp *in = qh_interp(Q);
    r->Q = Q;
    r->in = in;
    /* the program to every rank: each compiles the same text */
    const char *name;
    size_t len;
    const char *text = qh_program_text(p, &name, &len);
    ProgHdr h = { MSG_PROGRAM, (uint32_t)strlen(name), (uint64_t)len };
    MPI_Bcast(&h, (int)sizeof h, MPI_BYTE, 0, MPI_COMM_WORLD);
    MPI_Bcast((void *)name, (int)h.namelen, MPI_BYTE, 0, MPI_COMM_WORLD);
    for (size_t at = 0; at < len;) {
        size_t n = len - at > (1u << 30) ? (1u << 30) : len - at;
        MPI_Bcast((void *)(text + at), (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
        at += n;
    }
    r->shared = true;
    load_code_table(in, qh_program_info(p), &r->code);
    int workers = in->nworkers > 0 ? in->nworkers : (int)in->ncpu;
    char buf[400];
    const char *bad = handshake(r, true, workers, in->max_memory, buf, sizeof buf);
    if (bad) {
        fprintf(err, "qh: %s\n", bad);
        return false;
    }
    meet(r);
    if (in->trace_path) {
        in->trace = trace_new();
        trace_set_process(in->trace, 1, "rank 0 (the program)");
    }
    r->rs = xcalloc((size_t)r->size, sizeof(RankStats));
    FarmConfig fc = { 0, 0, workers, 0 };
    FarmCallbacks cb = { lead_answer, lead_died, NULL, NULL, NULL, r };
    char ferr[200];
    r->farm = farm_new(MPI_COMM_WORLD, &fc, &cb, ferr, sizeof ferr);
    if (!r->farm) {
        fprintf(err, "qh: %s\n", ferr);
        return false;
    }
    QDist *qd = qdist_lead(in, r->farm);
    pthread_mutex_lock(&r->mu);
    r->qd = qd; /* the farm's thread reads it */
    pthread_mutex_unlock(&r->mu);
    /* one remote slot per task a rank runs at once, and one more: a task
       queued there ahead, so that its workers do not wait a message's
       round trip (two polls of the farm's threads) between tasks; taken in
       turn */
    int nslots = 0, most = 0;
    for (int k = 1; k < r->size; k++) {
        nslots += farm_slots(r->farm, k) + 1;
        if (farm_slots(r->farm, k) + 1 > most) most = farm_slots(r->farm, k) + 1;
    }
    r->slot_rank = xcalloc((size_t)nslots + 1, sizeof(int));
    r->slot_names = xcalloc((size_t)nslots + 1, sizeof(char *));
    int s = 0;
    for (int j = 0; j < most; j++)
        for (int k = 1; k < r->size; k++)
            if (farm_slots(r->farm, k) + 1 > j) {
                char nm[64];
                snprintf(nm, sizeof nm, "to rank %d (slot %d)", k, j + 1);
                r->slot_rank[s] = k;
                r->slot_names[s++] = xstrdup(nm);
            }
    r->ar.ship = ship;
    r->ar.usable = slot_usable;
    r->ar.finish = lead_finish;
    r->ar.nslots = nslots;
    r->ar.slot_names = (const char *const *)r->slot_names;
    r->ar.code = &r->code;
    r->ar.ud = r;
    ship_set_remote(in, &r->ar);
    return true;
}

int remote_end(Remote *r, int status)
{
    if (!r) return status;
    int died = 0;
    if (r->size > 1 && r->multiple) {
        if (!r->shared) {
            ProgHdr h = { MSG_EXIT, 0, 0 };
            MPI_Bcast(&h, (int)sizeof h, MPI_BYTE, 0, MPI_COMM_WORLD);
        }
        if (r->qd) died |= qdist_close(r->qd);
        if (r->farm) died |= farm_close(r->farm); /* no callback runs after this */
        qdist_free(r->qd);
    }
    if (!died) MPI_Finalize();
    if (r->code.mods) load_code_free(&r->code);
    for (int i = 0; r->slot_names && r->slot_names[i]; i++) free(r->slot_names[i]);
    free(r->slot_names);
    free(r->slot_rank);
    free(r->rs);
    free(r->hello);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
    return status;
}

/* ---------------------------------------------------------------- the other ranks: serving */

static void inbox_put(Remote *r, int kind, uint64_t id, const void *blob, size_t len)
{
    Item *it = xcalloc(1, sizeof *it);
    it->kind = kind;
    it->id = id;
    if (len) {
        it->blob = xmalloc(len);
        memcpy(it->blob, blob, len);
        it->len = len;
    }
    pthread_mutex_lock(&r->mu);
    if (r->inbox_tail)
        r->inbox_tail->next = it;
    else
        r->inbox = it;
    r->inbox_tail = it;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static void follow_task(void *ctx, Farm *f, uint64_t id, const void *blob, size_t len)
{
    (void)f;
    if (len < 1) return;
    inbox_put(ctx, ((const char *)blob)[0], id, (const char *)blob + 1, len - 1);
}

static void follow_cancel(void *ctx, Farm *f, uint64_t id)
{
    (void)f;
    inbox_put(ctx, 'X', id, NULL, 0);
}

static void follow_stop(void *ctx, Farm *f, const char *why)
{
    (void)f;
    Remote *r = ctx;
    /* a clean end closed the distributed service first; otherwise (rank 0
       silent, or a rank died) its waits must give up, before the main
       thread, told to stop, closes it */
    pthread_mutex_lock(&r->mu);
    QDist *qd = r->qd;
    pthread_mutex_unlock(&r->mu);
    if (qd && strcmp(why, FARM_STOPPED) != 0) qdist_leader_gone(qd, why);
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    snprintf(r->why, sizeof r->why, "%s", why);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* A task on one of this rank's workers: run, answer, forget. */
static void serve_run(void *ctx, ExecTask *t)
{
    Running *run = ctx;
    Remote *r = run->r;
    Buf out;
    buf_init(&out);
    double t0 = mono();
    double secs = 0;
    char ok = 0;
    buf_put(&out, &ok, 1); /* [ok][seconds][the task's answer] */
    buf_put(&out, (const char *)&secs, sizeof secs);
    ok = ship_run_packed(r->in, run->blob, run->len, exec_task_cancel_flag(t), &r->code, &out);
    secs = mono() - t0;
    out.p[0] = ok;
    memcpy(out.p + 1, &secs, sizeof secs);
    farm_reply(r->farm, run->id, out.p, out.len);
    buf_free(&out);
    exec_task_done(t, NULL, NULL);
}

static void serve_free(void *ctx)
{
    Running *run = ctx;
    Remote *r = run->r;
    pthread_mutex_lock(&r->mu);
    for (Running **p = &r->running; *p; p = &(*p)->next)
        if (*p == run) {
            *p = run->next;
            break;
        }
    pthread_mutex_unlock(&r->mu);
    fut_release(run->fut);
    free(run->blob);
    free(run);
}

/* The label and call line of a packed task, for traces (ship.c's
 * packing: seed, index, prefix, name, line, ...). */
static int task_label(Remote *r, const Running *run, char *out, size_t cap)
{
    SerCtx sc;
    des_init(&sc, run->blob, run->len, &r->code);
    uint64_t seed, index;
    uint32_t line = 0;
    const char *prefix = NULL, *name = NULL;
    if (des_u64(&sc, &seed) && des_u64(&sc, &index) && (prefix = des_str(&sc, NULL)) &&
        (name = des_str(&sc, NULL)))
        des_u32(&sc, &line);
    snprintf(out, cap, "%s%s() from rank 0", prefix ? prefix : "", name ? name : "?");
    ser_free(&sc);
    return (int)line;
}

static void serve_item(Remote *r, Item *it)
{
    Interp *in = r->in;
    if (it->kind == REQ_COLLECT) {
        Collected c;
        unsigned long calls, gates;
        size_t peak;
        qrt_counts(in, &calls, &gates, &peak);
        c.calls = calls;
        c.gates = gates;
        c.peak = peak;
        size_t n = 0;
        char *ev = in->trace ? trace_events(in->trace, &n) : NULL;
        Buf b;
        buf_init(&b);
        buf_put(&b, (const char *)&c, sizeof c);
        if (ev) buf_put(&b, ev, n);
        farm_reply(r->farm, it->id, b.p, b.len);
        buf_free(&b);
        free(ev);
        return;
    }
    if (it->kind == 'X') {
        pthread_mutex_lock(&r->mu);
        Fut *f = NULL;
        for (Running *x = r->running; x; x = x->next)
            if (x->id == it->id) f = fut_retain(x->fut);
        pthread_mutex_unlock(&r->mu);
        if (f && in->exec) exec_cancel_task(in->exec, f);
        fut_release(f);
        return;
    }
    if (!in->exec) {
        farm_reply_error(r->farm, it->id, "this rank runs no workers (--sync)");
        return;
    }
    Running *run = xcalloc(1, sizeof *run);
    run->r = r;
    run->id = it->id;
    run->blob = it->blob;
    run->len = it->len;
    it->blob = NULL;
    char label[160];
    int line = task_label(r, run, label, sizeof label);
    pthread_mutex_lock(&r->mu);
    run->next = r->running;
    r->running = run;
    pthread_mutex_unlock(&r->mu);
    Fut *f =
        exec_submit(in->exec, &(ExecJob){ serve_run, run, serve_free, NULL, 0, label, line, 0 });
    pthread_mutex_lock(&r->mu);
    for (Running *x = r->running; x; x = x->next)
        if (x == run) x->fut = fut_retain(f);
    pthread_mutex_unlock(&r->mu);
    fut_release(f);
}

/* The program rank 0 broadcasts after its header h: its name and text
 * (heap, 0-terminated). */
static void recv_program(const ProgHdr *h, char **name, char **text)
{
    *name = xmalloc((size_t)h->namelen + 1);
    *text = xmalloc((size_t)h->textlen + 1);
    MPI_Bcast(*name, (int)h->namelen, MPI_BYTE, 0, MPI_COMM_WORLD);
    for (size_t at = 0; at < h->textlen;) {
        size_t n = h->textlen - at > (1u << 30) ? (1u << 30) : h->textlen - at;
        MPI_Bcast(*text + at, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
        at += n;
    }
    (*name)[h->namelen] = 0;
    (*text)[h->textlen] = 0;
}

/* Serves the farm's items until rank 0 says stop (or falls silent). */
static void serve_inbox(Remote *r)
{
    pthread_mutex_lock(&r->mu);
    while (r->farm) {
        while (!r->inbox && !r->stop) pthread_cond_wait(&r->cv, &r->mu);
        if (!r->inbox) break;
        qh_assert(r->inbox_tail && !r->inbox_tail->next); /* the tail is the last item */
        Item *it = r->inbox;
        r->inbox = it->next;
        if (!r->inbox) r->inbox_tail = NULL;
        pthread_mutex_unlock(&r->mu);
        serve_item(r, it);
        free(it->blob);
        free(it);
        pthread_mutex_lock(&r->mu);
    }
    pthread_mutex_unlock(&r->mu);
}

int remote_follow(Remote *r, const qh_Config *cfg0)
{
    if (!r) return 0;
    int status = 0;
    ProgHdr h;
    if (r->size < 2 || !r->multiple) goto done;
    MPI_Bcast(&h, (int)sizeof h, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (h.kind != MSG_PROGRAM) goto done;
    char *name, *text;
    recv_program(&h, &name, &text);
    /* this rank prints nothing: its messages travel to rank 0 */
    FILE *null = fopen("/dev/null", "w");
    qh_Config cfg = *cfg0;
    cfg.out = cfg.err = null;
    cfg.trace_path = NULL;
    cfg.handle_sigint = false;
    cfg.stats = false;
    qh_State *Q = qh_open(&cfg);
    qh_Program *p = qh_compile(Q, name, text, h.textlen, null);
    free(text);
    free(name);
    Interp *in = qh_interp(Q);
    r->Q = Q;
    r->in = in;
    if (p) {
        load_code_table(in, qh_program_info(p), &r->code);
        /* rank 0 prepares code as it runs it; here tasks are the first to
         * run it, several at once: prepare it all now */
        for (int i = 0; i < r->code.nmods; i++) eval_prepare_module(r->code.mods[i]);
    }
    int workers = in->nworkers > 0 ? in->nworkers : (int)in->ncpu;
    char buf[400];
    if (handshake(r, p != NULL, workers, in->max_memory, buf, sizeof buf)) {
        qh_close(Q, 0);
        fclose(null);
        goto done;
    }
    meet(r);
    if (cfg0->trace_path) {
        char pname[96];
        snprintf(pname, sizeof pname, "rank %d (%s)", r->rank, r->hello[r->rank].host);
        in->trace = trace_new();
        trace_set_process(in->trace, r->rank + 1, pname);
    }
    qh_start(Q);
    FarmConfig fc = { 0, 0, workers, 0 };
    FarmCallbacks cb = { NULL, NULL, follow_task, follow_cancel, follow_stop, r };
    char ferr[200];
    r->farm = farm_new(MPI_COMM_WORLD, &fc, &cb, ferr, sizeof ferr);
    if (r->farm) {
        QDist *qd = qdist_follow(in, r->farm);
        pthread_mutex_lock(&r->mu);
        r->qd = qd; /* the farm's thread reads it */
        pthread_mutex_unlock(&r->mu);
    }
    serve_inbox(r);
    if (in->exec) exec_cancel_all(in->exec);
    int died = 0;
    if (r->qd) died |= qdist_close(r->qd);
    qh_close(Q, 0);
    if (r->farm) died |= farm_close(r->farm);
    qdist_free(r->qd);
    while (r->inbox) {
        Item *it = r->inbox;
        r->inbox = it->next;
        free(it->blob);
        free(it);
    }
    fclose(null);
    if (r->code.mods) load_code_free(&r->code);
    free(r->hello);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
    if (!died) MPI_Finalize();
    return status;
done:
    MPI_Finalize();
    free(r->hello);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
    return status;
}
