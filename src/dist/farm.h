/* farm.h — the task farm's transport: opaque blobs from rank 0 to worker
 * ranks and answers back, with rank-death detection.
 *
 * Rank 0 (the master) sends a task as a byte blob with a 64-bit id to a
 * worker rank; the worker's callback gets it and later answers with
 * farm_reply (a result blob) or farm_reply_error (a message); the master's
 * callback gets the answer. Blobs are opaque here: what a task is (a
 * serialised function call) is the caller's business.
 *
 * Every rank runs one communication thread (started by farm_new) that owns
 * all of the farm's MPI traffic on a duplicated communicator, so MPI must
 * be initialised with MPI_THREAD_MULTIPLE. Callbacks run on that thread
 * (possibly before farm_new has returned: they get the Farm): they must
 * be quick (queue the work elsewhere) and may call farm_reply.
 *
 * Rank death. Open MPI 4.1 has no fault tolerance in MPI itself: a send to
 * a dead rank blocks for ever and a receive never completes. So nothing
 * here ever waits on one rank: every message is non-blocking, and the
 * master decides that a worker is dead when
 *   - its process is gone (same host: the pid it announced no longer
 *     exists; checked every heartbeat period), or
 *   - no heartbeat came from it for FarmConfig.timeout seconds.
 * Its unanswered tasks then fail with "rank N died (...)", later submits to
 * it fail at once, and it is never written to again. Workers likewise stop
 * when the master has been silent for the timeout, so no process hangs.
 * (Without `mpirun --enable-recovery`, mpirun itself ends the whole job when
 * a rank dies: see doc/distributed.md.)
 *
 * Must not know about the language, values, the executor or quantum
 * states. Prefix farm_. */
#ifndef QH_FARM_H
#define QH_FARM_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Farm Farm;

typedef struct FarmCallbacks {
    /* master: an answer to task id (ok: blob is the result; else blob is an
       error message of len bytes, not NUL-terminated). The blob is only
       valid during the call. */
    void (*answer)(void *ctx, Farm *f, uint64_t id, int ok, const void *blob, size_t len);
    /* master: worker `rank` died; its tasks have been answered with errors
       already. why: "process gone", "no heartbeat for 5.0 s", ... */
    void (*died)(void *ctx, Farm *f, int rank, const char *why);
    /* worker: a task arrived (reply later, from any thread) */
    void (*task)(void *ctx, Farm *f, uint64_t id, const void *blob, size_t len);
    /* worker: the master cancelled task id (reply is then optional) */
    void (*cancel)(void *ctx, Farm *f, uint64_t id);
    /* worker: the master said stop, or died (why says which: exactly
       FARM_STOPPED for a clean end without deaths) */
    void (*stop)(void *ctx, Farm *f, const char *why);
    void *ctx;
} FarmCallbacks;

#define FARM_STOPPED "stopped by rank 0"

typedef struct FarmConfig {
    double heartbeat; /* seconds between heartbeats (0: 0.1) */
    double timeout;   /* silence that means death (0: $QH_MPI_TIMEOUT or 10 s) */
    int slots;        /* tasks this rank runs at once (announced to the master; >= 1) */
    int no_pid_check; /* 1: rely on the timeout alone (as for ranks on other hosts) */
} FarmConfig;

/* Collective over comm (all ranks, rank 0 = master). Starts the
   communication thread. NULL with a message on failure. */
Farm *farm_new(MPI_Comm comm, const FarmConfig *cfg, const FarmCallbacks *cb, char *err,
               size_t errlen);
/* Master: tells live workers to stop and waits (at most the timeout) for
   their goodbyes; worker: waits until the master said stop. Then joins the
   thread and frees. Returns nonzero when a rank died during the run (the
   master: how many; a worker: 1 if the master said so or fell silent):
   then collectives would hang, so the caller must not call MPI_Finalize
   (nor any collective) and should just exit. */
int farm_close(Farm *f);

int farm_rank(const Farm *f);
int farm_size(const Farm *f);
int farm_alive(Farm *f, int rank);    /* master's view */
int farm_slots(Farm *f, int rank);    /* what the rank announced */
int farm_inflight(Farm *f, int rank); /* master: tasks sent, not answered */

/* Master: send task id to rank (copies the blob). 0, or -1 with a message
   (dead rank, bad rank, closed). */
int farm_submit(Farm *f, int rank, uint64_t id, const void *blob, size_t len, char *err,
                size_t errlen);
/* Master: ask the worker to cancel task id (best effort). */
void farm_cancel(Farm *f, int rank, uint64_t id);
/* Master: a live worker with a free slot, fewest tasks first, or -1. */
int farm_pick(Farm *f);

/* Worker: answer task id (copies the blob); any thread. */
void farm_reply(Farm *f, uint64_t id, const void *blob, size_t len);
void farm_reply_error(Farm *f, uint64_t id, const char *msg);

typedef struct FarmStats {
    unsigned long sent, received, died;
    unsigned long long bytes_sent, bytes_received;
} FarmStats;
void farm_stats(Farm *f, FarmStats *out);

#endif
