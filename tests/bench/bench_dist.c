/* bench_dist.c — figures of the distribution room (issue 17), under mpirun.
 *
 *   bench_dist mem N        a distributed N-wire state on however many
 *                           ranks mpirun started: each rank's peak memory
 *                           (VmHWM) against its memory before the state
 *                           existed, and the bytes each rank sends for one
 *                           Hadamard on each global wire (exchanges, no
 *                           relabelling) against 2^N * 16 / R; times per
 *                           global and local gate (oversubscribed: time is
 *                           not the point). One line per rank, "key=value".
 *   bench_dist farm T Q D   T independent Q-wire circuits of depth D (random
 *                           layers of RY and CNOT, a Z expectation each): on
 *                           one rank, one worker thread runs them all; on R
 *                           ranks, rank 0's own worker and one worker per
 *                           other rank share them through the task farm
 *                           (tasks travel as 16-byte blobs, answers as 8;
 *                           two in flight per worker, as qh's remote slots
 *                           keep one queued ahead).
 *                           Prints the wall time and a checksum of the
 *                           answers (equal on every rank count).
 * tests/bench/dist.sh runs both and prints the ratios.
 */
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dsv.h"
#include "farm.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* kB of a field of /proc/self/status (VmHWM, VmRSS). */
static long status_kb(const char *key)
{
    FILE *fp = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    while (fp && fgets(line, sizeof line, fp))
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') v = atol(line + kl + 1);
    if (fp) fclose(fp);
    return v;
}

static int mem(int n)
{
    int rank, R;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &R);
    DsvConfig cfg = { .relabel = 0 };
    Dsv *d = NULL;
    char err[256];
    /* warm up: MPI allocates its per-peer buffers on first contact; a
       small distributed state with a few exchanges makes that happen
       before the baseline is taken */
    if (dsv_new(&d, 14, R > 1 ? MPI_COMM_WORLD : MPI_COMM_NULL, &cfg, err, sizeof err) == 0) {
        SvOp x;
        memset(&x, 0, sizeof x);
        x.gate = SV_HADAMARD;
        x.nwires = 1;
        for (int w = 0; w < 14; w++) {
            x.wires[0] = w;
            dsv_apply(d, &x, err, sizeof err);
        }
        double nn;
        dsv_norm(d, &nn, err, sizeof err);
        dsv_free(d);
        d = NULL;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    long before = status_kb("VmRSS");
    if (dsv_new(&d, n, R > 1 ? MPI_COMM_WORLD : MPI_COMM_NULL, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "rank %d: %s\n", rank, err);
        return 1;
    }
    int k = __builtin_ctz((unsigned)R);
    SvOp h;
    memset(&h, 0, sizeof h);
    h.gate = SV_HADAMARD;
    h.nwires = 1;
    /* touch every amplitude: H on every wire (global ones by exchange) */
    double tl = 0, tg = 0;
    uint64_t gbytes = 0;
    int nglob = 0, nloc = 0;
    for (int w = 0; w < n; w++) {
        DsvStats a, b;
        dsv_stats(d, &a);
        h.wires[0] = w;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        if (dsv_apply(d, &h, err, sizeof err) || dsv_flush(d, err, sizeof err)) {
            fprintf(stderr, "rank %d: %s\n", rank, err);
            return 1;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double dt = now() - t0;
        dsv_stats(d, &b);
        if (w < k) {
            tg += dt;
            nglob++;
            gbytes += b.bytes_sent - a.bytes_sent;
        } else {
            tl += dt;
            nloc++;
        }
    }
    double nrm = 0;
    dsv_norm(d, &nrm, err, sizeof err);
    long hwm = status_kb("VmHWM");
    uint64_t theory = ((uint64_t)16 << n) / (uint64_t)R;
    size_t xbuf = R > 1 ? (size_t)4 << 20 : 0;
    printf("rank=%d ranks=%d wires=%d rss_before_kib=%ld peak_kib=%ld state_peak_kib=%ld "
           "chunk_kib=%llu xbuf_kib=%zu "
           "global_gates=%d bytes_per_global_gate=%llu theory_bytes=%llu local_gate_s=%.4f "
           "global_gate_s=%.4f norm=%.15f\n",
           rank, R, n, before, hwm, hwm - before,
           (unsigned long long)(((uint64_t)16 << n) / (uint64_t)R / 1024), xbuf / 1024, nglob,
           (unsigned long long)(nglob ? gbytes / (uint64_t)nglob : 0), (unsigned long long)theory,
           nloc ? tl / nloc : 0, nglob ? tg / nglob : 0, nrm);
    fflush(stdout);
    dsv_free(d);
    return 0;
}

/* ---- the farm --------------------------------------------------------- */

static int Q, D;

/* One task: a random Q-wire circuit from the seed, <Z_0> as the answer. */
static double circuit(uint64_t seed)
{
    SvState s;
    if (sv_init(&s, Q) != 0) return NAN;
    Rng r;
    rng_seed(&r, seed);
    SvOp op;
    for (int layer = 0; layer < D; layer++) {
        for (int w = 0; w < Q; w++) {
            memset(&op, 0, sizeof op);
            op.gate = SV_RY;
            op.nwires = 1;
            op.wires[0] = w;
            op.nparams = 1;
            op.params[0] = rng_uniform(&r) * 3;
            sv_apply(&s, &op, NULL, 0);
        }
        for (int w = layer & 1; w + 1 < Q; w += 2) {
            memset(&op, 0, sizeof op);
            op.gate = SV_CNOT;
            op.nwires = 2;
            op.wires[0] = w;
            op.wires[1] = w + 1;
            sv_apply(&s, &op, NULL, 0);
        }
    }
    SvPauli z = { 1.0, 0, 1 };
    double e = sv_expval(&s, &z, 1);
    sv_free(&s);
    return e;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static double *answers;
static int ntask, next_task, nanswered, stopping;
static uint64_t *queue_ids; /* worker ranks: tasks waiting */
static int nqueue;

static void m_answer(void *ctx, Farm *f, uint64_t id, int ok, const void *blob, size_t len)
{
    (void)ctx;
    (void)f;
    pthread_mutex_lock(&mu);
    if (ok && len == sizeof(double))
        memcpy(&answers[id], blob, sizeof(double));
    else
        answers[id] = NAN;
    nanswered++;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void w_task(void *ctx, Farm *f, uint64_t id, const void *blob, size_t len)
{
    (void)ctx;
    (void)f;
    (void)blob;
    (void)len;
    pthread_mutex_lock(&mu);
    queue_ids[nqueue++] = id;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void w_stop(void *ctx, Farm *f, const char *why)
{
    (void)ctx;
    (void)f;
    (void)why;
    pthread_mutex_lock(&mu);
    stopping = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static Farm *farm;

/* Rank 0's own worker: takes the next task not yet handed out. */
static void *local_worker(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&mu);
        int i = next_task < ntask ? next_task++ : -1;
        pthread_mutex_unlock(&mu);
        if (i < 0) break;
        double e = circuit(1000 + (uint64_t)i);
        pthread_mutex_lock(&mu);
        answers[i] = e;
        nanswered++;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

static int farm_bench(int tasks)
{
    int rank, R;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &R);
    ntask = tasks;
    answers = calloc((size_t)tasks, sizeof(double));
    queue_ids = calloc((size_t)tasks, sizeof(uint64_t));
    FarmCallbacks cb = { m_answer, NULL, w_task, NULL, w_stop, NULL };
    FarmConfig cfg = { .slots = 2 }; /* a worker's task and one queued ahead */
    char err[256];
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    farm = R > 1 ? farm_new(MPI_COMM_WORLD, &cfg, &cb, err, sizeof err) : NULL;
    if (R > 1 && !farm) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (rank == 0) {
        pthread_t th;
        pthread_create(&th, NULL, local_worker, NULL);
        /* keep every remote worker's slot busy while tasks are left */
        pthread_mutex_lock(&mu);
        while (nanswered < ntask) {
            int r = farm && next_task < ntask ? farm_pick(farm) : -1;
            if (r > 0) {
                uint64_t i = (uint64_t)next_task++;
                pthread_mutex_unlock(&mu);
                uint64_t seed = 1000 + i;
                farm_submit(farm, r, i, &seed, sizeof seed, err, sizeof err);
                pthread_mutex_lock(&mu);
                continue;
            }
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&cv, &mu, &ts);
        }
        pthread_mutex_unlock(&mu);
        pthread_join(th, NULL);
        double t = now() - t0;
        double sum = 0;
        for (int i = 0; i < ntask; i++) sum += answers[i];
        if (farm) farm_close(farm);
        printf("ranks=%d tasks=%d wires=%d depth=%d seconds=%.3f checksum=%.12f\n", R, ntask, Q, D,
               t, sum);
    } else {
        pthread_mutex_lock(&mu);
        for (;;) {
            while (nqueue == 0 && !stopping) pthread_cond_wait(&cv, &mu);
            if (nqueue == 0) break;
            uint64_t id = queue_ids[--nqueue];
            pthread_mutex_unlock(&mu);
            double e = circuit(1000 + id);
            farm_reply(farm, id, &e, sizeof e);
            pthread_mutex_lock(&mu);
        }
        pthread_mutex_unlock(&mu);
        farm_close(farm);
    }
    free(answers);
    free(queue_ids);
    return 0;
}

int main(int argc, char **argv)
{
    int prov;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &prov);
    int rc = 2;
    if (argc >= 3 && strcmp(argv[1], "mem") == 0)
        rc = mem(atoi(argv[2]));
    else if (argc >= 5 && strcmp(argv[1], "farm") == 0) {
        Q = atoi(argv[3]);
        D = atoi(argv[4]);
        rc = farm_bench(atoi(argv[2]));
    } else {
        fprintf(stderr, "usage: bench_dist mem N | bench_dist farm TASKS WIRES DEPTH\n");
    }
    MPI_Finalize();
    return rc;
}
