/* test_farm.c — the task farm's transport under mpirun.
 *
 *   test_farm echo       every worker answers blobs (on the farm's thread
 *                        and from a worker thread); the master checks
 *                        every answer, ids, sizes from 0 to 1 MiB, errors,
 *                        cancellation messages reaching the worker
 *   test_farm kill K     rank K SIGKILLs itself at its third task: its
 *                        unanswered tasks fail with "rank K died (...)",
 *                        the master resubmits them elsewhere and finishes;
 *                        run with mpirun --enable-recovery (farm_kill.sh)
 *   test_farm kill-timeout K   the same found by heartbeat silence alone
 *                        (2 s), as for a rank on another host
 * Prints "farm OK: ..." on rank 0 when everything held.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "farm.h"
#include "mpitest.h"

#define NTASK 120

static Farm *farm;
static int kill_rank = -1;

/* ---- master ----------------------------------------------------------- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int state[NTASK]; /* 0 unsent, 1 in flight, 2 done, 3 failed (to resubmit) */
static int where[NTASK];
static int nfailed_dead, nerr_ok, ndone, died_rank = -1;
static char lastmsg[256];

static size_t task_len(int i) { return i % 7 == 0 ? (size_t)(i * 9000) : (size_t)i; }

static void m_answer(void *ctx, Farm *f, uint64_t id, int ok, const void *blob, size_t len)
{
    (void)ctx;
    (void)f;
    pthread_mutex_lock(&mu);
    int i = (int)(id % NTASK);
    if (!ok) {
        char msg[256];
        snprintf(msg, sizeof msg, "%.*s", (int)len, (const char *)blob);
        if (id >= 1000000) { /* the deliberate error task */
            CHECK(strcmp(msg, "no such thing") == 0, "error message '%s'", msg);
            nerr_ok++;
        } else {
            char want[32];
            snprintf(want, sizeof want, "rank %d died (", kill_rank);
            CHECK(strncmp(msg, want, strlen(want)) == 0, "task %d failed: %s", i, msg);
            snprintf(lastmsg, sizeof lastmsg, "%s", msg);
            nfailed_dead++;
            state[i] = 3;
        }
    } else {
        size_t want = task_len(i);
        const unsigned char *b = blob;
        CHECK(len == want + 1, "task %d: %zu bytes back, want %zu", i, len, want + 1);
        int good = len == want + 1 && b[0] == (unsigned char)where[i];
        for (size_t j = 0; good && j < want; j++)
            good = b[1 + j] == (unsigned char)(i + (int)(want - 1 - j));
        CHECK(good, "task %d: wrong answer", i);
        state[i] = 2;
        ndone++;
    }
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void m_died(void *ctx, Farm *f, int rank, const char *why)
{
    (void)ctx;
    (void)f;
    pthread_mutex_lock(&mu);
    died_rank = rank;
    fprintf(stderr, "rank 0: rank %d died (%s)\n", rank, why);
    pthread_mutex_unlock(&mu);
}

static int master(void)
{
    unsigned char *buf = malloc(NTASK * 9000 + 16);
    char err[256];
    /* an error answer */
    CHECK(farm_submit(farm, 1, 1000000, "err", 3, err, sizeof err) == 0, "submit: %s", err);
    for (;;) {
        pthread_mutex_lock(&mu);
        int todo = 0, busy = 0;
        for (int i = 0; i < NTASK; i++) {
            todo += state[i] == 0 || state[i] == 3;
            busy += state[i] == 1;
        }
        int finished = todo == 0 && busy == 0 && nerr_ok == 1;
        pthread_mutex_unlock(&mu);
        if (finished) break;
        int r = todo ? farm_pick(farm) : -1;
        if (r < 0) {
            pthread_mutex_lock(&mu);
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 20000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&cv, &mu, &ts);
            pthread_mutex_unlock(&mu);
            int any = 0;
            for (int q = 1; q < mt_size; q++) any |= farm_alive(farm, q);
            CHECK(any, "every worker died");
            if (!any) break;
            continue;
        }
        pthread_mutex_lock(&mu);
        int i = 0;
        while (i < NTASK && state[i] != 0 && state[i] != 3) i++;
        state[i] = 1;
        where[i] = r;
        pthread_mutex_unlock(&mu);
        size_t n = task_len(i);
        for (size_t j = 0; j < n; j++) buf[j] = (unsigned char)(i + (int)j);
        if (farm_submit(farm, r, (uint64_t)i + (uint64_t)NTASK * (uint64_t)(rand() % 100), buf, n,
                        err, sizeof err) != 0) {
            pthread_mutex_lock(&mu);
            state[i] = 3;
            pthread_mutex_unlock(&mu);
        }
    }
    free(buf);
    farm_cancel(farm, 1, 424242);
    int died = farm_close(farm);
    CHECK(ndone == NTASK, "%d of %d tasks done", ndone, NTASK);
    if (kill_rank > 0) {
        CHECK(died == 1 && died_rank == kill_rank, "died %d, rank %d", died, died_rank);
        CHECK(nfailed_dead >= 1, "no task failed on the dead rank");
        printf("farm OK: %d tasks, rank %d killed, %d of its tasks failed (\"%s\") and were "
               "resubmitted\n",
               NTASK, kill_rank, nfailed_dead, lastmsg);
    } else {
        CHECK(died == 0, "%d ranks died", died);
        CHECK(nfailed_dead == 0, "%d tasks failed", nfailed_dead);
        if (!mt_fails) printf("farm OK: %d tasks over %d workers\n", NTASK, mt_size - 1);
    }
    fflush(stdout);
    return died;
}

/* ---- workers ---------------------------------------------------------- */

typedef struct Job {
    uint64_t id;
    unsigned char *blob;
    size_t len;
    struct Job *next;
} Job;
static Job *jobs;
static int stopping, ntasks, cancels;

/* Answer on the farm's thread (even ids) or queue for the worker thread. */
static void w_task(void *ctx, Farm *f, uint64_t id, const void *blob, size_t len)
{
    (void)ctx;
    if (++ntasks == 3 && mt_rank == kill_rank) raise(SIGKILL);
    if (id >= 1000000) {
        farm_reply_error(f, id, "no such thing");
        return;
    }
    Job *j = malloc(sizeof *j);
    j->id = id;
    j->len = len;
    j->blob = malloc(len + 1);
    j->blob[0] = (unsigned char)mt_rank;
    for (size_t k = 0; k < len; k++) j->blob[1 + k] = ((const unsigned char *)blob)[len - 1 - k];
    if (id % 2 == 0 && kill_rank < 0) {
        farm_reply(f, id, j->blob, len + 1);
        free(j->blob);
        free(j);
        return;
    }
    pthread_mutex_lock(&mu);
    j->next = jobs;
    jobs = j;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void w_cancel(void *ctx, Farm *f, uint64_t id)
{
    (void)ctx;
    (void)f;
    if (id == 424242) cancels++;
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

static void *w_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!jobs && !stopping) pthread_cond_wait(&cv, &mu);
        if (!jobs && stopping) break;
        Job *j = jobs;
        jobs = j->next;
        pthread_mutex_unlock(&mu);
        if (kill_rank > 0) {
            struct timespec ts = { 0, 20000000 };
            nanosleep(&ts, NULL);
        }
        farm_reply(farm, j->id, j->blob, j->len + 1);
        free(j->blob);
        free(j);
        pthread_mutex_lock(&mu);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    if (argc > 2 && strncmp(argv[1], "kill", 4) == 0) kill_rank = atoi(argv[2]);
    FarmCallbacks cb = { m_answer, m_died, w_task, w_cancel, w_stop, NULL };
    FarmConfig cfg = { .slots = 3, .timeout = 20 };
    if (argc > 2 && strcmp(argv[1], "kill-timeout") == 0) { /* as if on another host */
        cfg.no_pid_check = 1;
        cfg.timeout = 2;
    }
    char err[256];
    farm = farm_new(MPI_COMM_WORLD, &cfg, &cb, err, sizeof err);
    CHECK(farm != NULL, "farm_new: %s", err);
    if (!farm) return mt_finish("test_farm");
    int died;
    if (mt_rank == 0) {
        died = master();
    } else {
        pthread_t th;
        pthread_create(&th, NULL, w_thread, NULL);
        died = farm_close(farm);
        pthread_join(th, NULL);
    }
    if (died) { /* a dead rank: no MPI_Finalize (it would wait for the dead) */
        fflush(NULL);
        _exit(mt_fails ? 1 : 0);
    }
    return mt_finish("test_farm");
}
