/* jobset.h — a growing set of independent work items shared between the
 * task that owns them and idle workers of the executor (exec.h).
 *
 * The owner adds items as it discovers them; each addition may start a
 * helper task on an idle worker (at most max_helpers at a time), which
 * claims queued items one by one until none is left. When the owner needs
 * an item's result it claims the item itself if nobody has, or else helps
 * with other queued items until the item's runner is done: nobody ever
 * waits for an item that is queued, only for one that is running, so no
 * worker can be blocked by work that has no thread. Results live in the
 * caller's context, indexed by item; which thread ran an item never
 * changes them.
 *
 * Used by gradients: the quantum work of one gradient evaluation (the
 * forward runs and Jacobians of its qfn calls, shifted circuits) runs in
 * parallel on the workers that are free. Must not know about values,
 * VMs or circuits: a helper's per-thread state (a VM) comes from the
 * begin/end callbacks.
 */
#ifndef QH_JOBSET_H
#define QH_JOBSET_H

#include "exec.h"

typedef struct JobSet JobSet;

typedef struct JobSetVt {
    /* A helper's own state, made on its worker thread when it starts (may
       return NULL) and freed when it stops. */
    void *(*begin)(void *ctx, ExecTask *t);
    void (*end)(void *ctx, void *state);
    /* Runs item i: 0, or -1 after jobset_fail. state is the runner's (the
       owner's state when the owner runs it). Items must not wait for each
       other except through jobset_finish on items they added themselves. */
    int (*run)(void *ctx, void *state, int item);
    /* Frees ctx when the last reference goes (may be NULL). */
    void (*free_ctx)(void *ctx);
} JobSetVt;

/* A new set owned by the caller (one reference). e NULL or max_helpers 0:
   the owner runs everything itself. label names helper tasks in traces. */
JobSet *jobset_new(Exec *e, const JobSetVt *vt, void *ctx, int max_helpers, const char *label,
                   int line);
/* Adds an item (queued) and returns its index (from 0), or -1 if out of
   memory. May start a helper. */
int jobset_add(JobSet *js);
/* Number of items added so far. */
int jobset_count(JobSet *js);
/* Runs item i here if it is still queued, else helps until its runner is
   done; returns 0, or -1 if it (or the set) failed. */
int jobset_finish(JobSet *js, int item, void *state);
/* Claims and runs queued items here until every item added so far is done.
   0, or -1 if some item failed. */
int jobset_finish_all(JobSet *js, void *state);
/* Records the set's first failure message (copied); later ones are
   dropped. After a failure no further item is started. */
void jobset_fail(JobSet *js, const char *msg);
const char *jobset_error(JobSet *js);
/* Drops the owner's reference. Helpers still running keep the set (and
   ctx) alive until they return. Call only after jobset_finish_all or
   after a failure (queued items are then never run). */
void jobset_release(JobSet *js);

#endif
