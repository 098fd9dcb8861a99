/* remote.h — qh under mpirun (doc/distributed.md): the program runs once,
 * on rank 0, which alone prints, reads input and writes files; the other
 * ranks serve it. Rank 0 sends them the program's text; every rank
 * compiles it, and the ranks check that they parsed the same sources with
 * the same build before anything runs. Then plain quantum calls travel as
 * packed tasks (async.h, serial.h) over the task farm (farm.h) to workers
 * on every rank, rank 0's own included, and distributed statevector
 * devices run across the ranks (qdist.h). A rank that dies fails its tasks
 * with its name; the program goes on or ends as for any failed task.
 *
 * One Remote per process (MPI is per process). Without the meson feature
 * `mpi` (remote_none.c) a process started by a launcher with a rank above 0
 * ends at once, so the program still runs once. Knows qh.h and, for rank
 * 0's side, the interpreter's rooms (async, qrt, module); MPI lives in
 * remote.c and src/dist only. Prefix remote_. */
#ifndef QH_REMOTE_H
#define QH_REMOTE_H

#include <stdbool.h>
#include <stdio.h>
#include "qh.h"

typedef struct Remote Remote;

/* The rank an MPI launcher (mpirun, mpiexec) gave this process, from its
 * environment (Open MPI, PMIx, MPICH), or -1. */
#include <stdlib.h>
static inline int remote_launcher_rank(void)
{
    const char *names[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK" };
    for (int k = 0; k < 3; k++) {
        const char *v = getenv(names[k]);
        if (v && *v) {
            char *end;
            long r = strtol(v, &end, 10);
            if (!*end && r >= 0) return (int)r;
        }
    }
    return -1;
}

/* The launcher's rank of this process, -1 when no MPI launcher started
 * it. With MPI, initialises it (MPI_THREAD_MULTIPLE) and returns the
 * process's handle in *out (NULL without a launcher). */
int remote_init(int *argc, char ***argv, Remote **out);
/* A rank above 0: serves rank 0 until it ends, with the options of the
 * command line (every rank gets the same); returns the process's exit
 * status. */
int remote_follow(Remote *r, const qh_Config *cfg);
/* Rank 0, before running p: shares it with the other ranks, checks that
 * they compiled the same sources with the same build, and starts the task
 * farm and the distributed-state service. False (the reason printed to
 * err) when a rank differs: the program must not run (status 2). */
bool remote_lead(Remote *r, qh_State *Q, qh_Program *p, FILE *err);
/* Rank 0 at the end, whatever happened before (also when no program ran):
 * the other ranks are told to end, MPI is finalised unless a rank died
 * (collectives would wait for it for ever). Returns status. */
int remote_end(Remote *r, int status);

#endif
