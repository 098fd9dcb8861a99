/* remote_none.c — remote.h without MPI (the meson feature `mpi` off): a
 * process an MPI launcher started with a rank above 0 ends at once, so
 * `mpirun -n R qh prog.qh` still runs the program once, on rank 0 alone. */
#include "remote.h"

int remote_init(int *argc, char ***argv, Remote **out)
{
    (void)argc;
    (void)argv;
    *out = NULL;
    return remote_launcher_rank();
}

int remote_follow(Remote *r, const qh_Config *cfg)
{
    (void)r;
    (void)cfg;
    return 0;
}

bool remote_lead(Remote *r, qh_State *Q, qh_Program *p, FILE *err)
{
    (void)r;
    (void)Q;
    (void)p;
    (void)err;
    return true;
}

int remote_end(Remote *r, int status)
{
    (void)r;
    return status;
}
