/* ship.h — quantum calls run on other ranks (under mpirun, remote.c;
 * doc/distributed.md): rank 0's executor gets remote slots (exec.h) that pack
 * a plain qfn call's task (its function by reference, its copied arguments
 * and the globals they take along, its seed and place in the call tree:
 * serial.h) and hand it to ship, which waits for the answer; a serving rank
 * runs a packed task and answers. A task that cannot be packed (a value with
 * no ser slot) runs on rank 0 instead; the reason is counted for --stats.
 * Knows the tasks (task.h) and the serializer. */
#ifndef QH_SHIP_H
#define QH_SHIP_H

#include "task.h"

struct SerCode;
typedef struct ShipRemote {
    /* Runs a packed task on the process behind remote slot `slot` and waits
     * for its answer (ship_run_packed's bytes): 1 when the task succeeded,
     * 0 when it failed; -1 when *cancel rose first (the remote task is asked
     * to stop); -2 with a message in *out when the rank could not answer
     * (it died). */
    int (*ship)(void *ud, int slot, const void *task, size_t len, const atomic_int *cancel,
                Buf *out);
    bool (*usable)(void *ud, int slot); /* false once the slot's process is gone */
    /* At the end, before the trace is written: the others' trace events and
     * statistics (may be NULL). */
    void (*finish)(void *ud, Interp *in);
    int nslots;
    const char *const *slot_names; /* their trace tracks */
    const struct SerCode *code;
    void *ud;
} ShipRemote;

/* Rank 0, before the first run: tasks may run elsewhere (r must outlive
 * the run). */
void ship_set_remote(Interp *in, const ShipRemote *r);
/* What ship_set_remote set, or NULL. */
const ShipRemote *ship_remote(Interp *in);
/* A serving rank: runs a packed task on the calling thread (with *cancel as
 * its cancellation flag) and writes its answer into *out: what rank 0 must
 * know about the inputs it read, then the result's bytes (true) or the
 * error message (false). */
bool ship_run_packed(Interp *in, const void *task, size_t len, const atomic_int *cancel,
                     const struct SerCode *code, Buf *out);
/* Tasks rank 0 ran itself because they could not be packed, and the first
 * reason (NULL if none). */
unsigned long ship_unsent(Interp *in, const char **why);
/* Frees the state (the end of a run). */
void ship_free(Interp *in);

#endif
