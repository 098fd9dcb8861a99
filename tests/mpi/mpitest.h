/* mpitest.h — a tiny harness for the tests that run under mpirun.
 *
 * Check forks per test, which MPI processes must not do, so these tests
 * count failures themselves: CHECK(cond, fmt, ...) prints the first few
 * failures with the rank, and mt_finish() agrees on the verdict over
 * MPI_COMM_WORLD (any rank failing fails every rank's exit status).
 * Built with -DMT_SERIAL the same test runs as one process that never
 * initialises MPI (MT_COMM is MPI_COMM_NULL): the single-rank paths, with
 * the sanitizers' leak checks that Open MPI's own allocations would drown.
 */
#ifndef QH_MPITEST_H
#define QH_MPITEST_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int mt_rank, mt_size;
static _Atomic int mt_fails, mt_checks; /* checks run on the farm's thread too */

#define CHECK(cond, ...)                                                                    \
    do {                                                                                    \
        mt_checks++;                                                                        \
        if (!(cond)) {                                                                      \
            if (mt_fails++ < 20) {                                                          \
                fprintf(stderr, "[rank %d/%d] %s:%d: check failed: %s: ", mt_rank, mt_size, \
                        __FILE__, __LINE__, #cond);                                         \
                fprintf(stderr, __VA_ARGS__);                                               \
                fputc('\n', stderr);                                                        \
            }                                                                               \
        }                                                                                   \
    } while (0)

#ifdef MT_SERIAL
#define MT_COMM MPI_COMM_NULL
static void mt_init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    mt_rank = 0;
    mt_size = 1;
}
static inline void mt_bcast(void *buf, int n)
{
    (void)buf;
    (void)n;
}
static int mt_finish(const char *name)
{
    printf("%s in one process without MPI: %d checks, %d failed\n", name, mt_checks, mt_fails);
    return mt_fails ? 1 : 0;
}
#else
#define MT_COMM MPI_COMM_WORLD
/* Rank 0's ints to every rank. */
static inline void mt_bcast(void *buf, int n) { MPI_Bcast(buf, n, MPI_INT, 0, MPI_COMM_WORLD); }
static void mt_init(int *argc, char ***argv)
{
    int prov;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &prov);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
}

/* Every rank's verdict; returns the exit status. */
static int mt_finish(const char *name)
{
    int mine = mt_fails, all = 0, checks = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&mt_checks, &checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (mt_rank == 0)
        printf("%s on %d rank%s: %d checks, %d failed\n", name, mt_size, mt_size == 1 ? "" : "s",
               checks, all);
    MPI_Finalize();
    return all ? 1 : 0;
}
#endif

#endif
