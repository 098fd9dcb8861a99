/* bench_gates.c — gate kernel throughput against the memory-bandwidth limit.
 *
 * Measures the machine's bandwidth with a STREAM-style in-place scale
 * (a[i] = a[i] * s over >= 512 MiB, best of several passes, 1 and 2
 * threads), then times H, RX, CNOT, RZ and Toffoli on 20, 24 and 26 qubit
 * states with 1 and 2 threads, sweeping the target over every wire. A
 * gate on n qubits must move 2 * 16 * 2^n bytes (read + write), so the
 * limit per gate is that over the bandwidth; the ratio is time / limit
 * (the bar: <= 1.3 for a 1-qubit gate at 24 qubits on one thread).
 * Only uses the sv.h interface; knows nothing of the language.
 *
 *   bench_gates [--quick] [--verbose] [--qubits N[,N...]]
 *   (--verbose prints the time of every target wire)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "sv.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- bandwidth -------------------------------------------------------- */

typedef struct ScaleArg {
    double *a;
    size_t n;
    double s;
    pthread_barrier_t *bar;
    double t;
} ScaleArg;

/* The STREAM "scale" kernel in place; one pass. */
static void scale(double *a, size_t n, double s)
{
    for (size_t i = 0; i < n; i++) a[i] = a[i] * s;
}

static void *scale_thread(void *p)
{
    ScaleArg *x = p;
    pthread_barrier_wait(x->bar);
    scale(x->a, x->n, x->s);
    pthread_barrier_wait(x->bar);
    return NULL;
}

/* Why: the limit is this machine's, measured in the same run. Best of
   `reps` passes over `bytes`, with `nth` threads; bytes/s of traffic
   (each byte is read and written: 2 * bytes per pass). */
static double bandwidth(size_t bytes, int nth, int reps)
{
    size_t n = bytes / sizeof(double);
    double *a = NULL;
    if (posix_memalign((void **)&a, 64, bytes) != 0) return 0;
#ifdef MADV_HUGEPAGE
    madvise(a, bytes, MADV_HUGEPAGE);
#endif
    for (size_t i = 0; i < n; i++) a[i] = 1.0;
    volatile double sv = 1.0000001;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double s = (r & 1) ? 1.0 / sv : sv;
        double t0 = now();
        if (nth <= 1) {
            scale(a, n, s);
        } else {
            pthread_t th[8];
            ScaleArg arg[8];
            pthread_barrier_t bar;
            pthread_barrier_init(&bar, NULL, (unsigned)nth + 1);
            for (int k = 0; k < nth; k++) {
                arg[k].a = a + n / (size_t)nth * (size_t)k;
                arg[k].n = n / (size_t)nth;
                arg[k].s = s;
                arg[k].bar = &bar;
                pthread_create(&th[k], NULL, scale_thread, &arg[k]);
            }
            pthread_barrier_wait(&bar);
            t0 = now();
            pthread_barrier_wait(&bar);
            double t1 = now();
            for (int k = 0; k < nth; k++) pthread_join(th[k], NULL);
            pthread_barrier_destroy(&bar);
            if (t1 - t0 < best) best = t1 - t0;
            continue;
        }
        double t = now() - t0;
        if (t < best) best = t;
    }
    double check = 0;
    for (size_t i = 0; i < n; i += 4096) check += a[i];
    free(a);
    if (check < 0) printf("?");
    return 2.0 * (double)bytes / best;
}

/* ---- gates ------------------------------------------------------------ */

typedef struct Result { double avg, min, max; } Result;

static SvOp gate_op(SvGate g, int nq, int t)
{
    SvOp op;
    memset(&op, 0, sizeof op);
    op.gate = g;
    const SvGateInfo *info = sv_gate_info(g);
    op.nwires = info->nwires;
    op.nparams = info->nparams;
    op.params[0] = 0.3;
    /* target t; controls on the next wires (cyclically) */
    if (op.nwires == 1) op.wires[0] = t;
    else if (op.nwires == 2) { op.wires[0] = (t + 1) % nq; op.wires[1] = t; }
    else { op.wires[0] = (t + 1) % nq; op.wires[1] = (t + 2) % nq; op.wires[2] = t; }
    return op;
}

/* Why: average over targets, so low-stride and high-stride kernels both
   count; min/max show the spread. Each time is the best of reps. */
static int verbose;

static Result time_gate(SvState *s, SvGate g, const int *targets, int nt, int reps)
{
    Result r = { 0, 1e30, 0 };
    char err[128];
    for (int i = 0; i < nt; i++) {
        SvOp op = gate_op(g, s->nq, targets[i]);
        double best = 1e30;
        for (int k = 0; k < reps; k++) {
            double t0 = now();
            if (sv_apply(s, &op, err, sizeof err) != 0) {
                fprintf(stderr, "bench: %s\n", err);
                exit(1);
            }
            double t = now() - t0;
            if (t < best) best = t;
        }
        if (verbose)
            printf("    %s target %d: %.0f ns\n", sv_gate_info(g)->name, targets[i], best * 1e9);
        r.avg += best / nt;
        if (best < r.min) r.min = best;
        if (best > r.max) r.max = best;
    }
    return r;
}

int main(int argc, char **argv)
{
    int quick = 0, qubits[8] = { 20, 24, 26 }, nqs = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--verbose") == 0) {
            verbose = 1;
        } else if (strcmp(argv[i], "--qubits") == 0 && i + 1 < argc) {
            nqs = 0;
            for (char *p = strtok(argv[++i], ","); p && nqs < 8; p = strtok(NULL, ","))
                qubits[nqs++] = atoi(p);
        } else {
            fprintf(stderr, "usage: bench_gates [--quick] [--verbose] [--qubits N[,N...]]\n");
            return 2;
        }
    }
    if (quick && nqs == 3 && qubits[2] == 26) nqs = 2;   /* 20, 24 */
    int reps = quick ? 2 : 3;
    size_t bwbytes = (size_t)(quick ? 512 : 1024) << 20;
    double bw[3];
    bw[1] = bandwidth(bwbytes, 1, quick ? 4 : 8);
    bw[2] = bandwidth(bwbytes, 2, quick ? 4 : 8);
    printf("bandwidth (in-place scale over %zu MiB): 1 thread %.2f GB/s, 2 threads %.2f GB/s\n",
           bwbytes >> 20, bw[1] / 1e9, bw[2] / 1e9);
    printf("ratio = average time over target wires / (2*16*2^n bytes / bandwidth of that thread count)\n\n");
    printf("%-8s %3s %3s %12s %12s %12s %12s %7s %7s\n", "gate", "n", "thr", "avg ns", "min ns",
           "max ns", "limit ns", "ratio", "worst");
    SvGate gates[] = { SV_HADAMARD, SV_RX, SV_CNOT, SV_RZ, SV_TOFFOLI };
    SvTeam *team = sv_team_new(2);
    for (int qi = 0; qi < nqs; qi++) {
        int nq = qubits[qi];
        SvState s;
        if (sv_init(&s, nq) != 0) {
            printf("%d qubits: cannot allocate %zu bytes, skipped\n", nq, sv_bytes(nq));
            continue;
        }
        int targets[64], nt = 0;
        if (quick) {
            targets[nt++] = 0;
            targets[nt++] = nq / 2;
            targets[nt++] = nq - 1;
        } else {
            for (int t = 0; t < nq; t++) targets[nt++] = t;
        }
        for (int th = 1; th <= 2; th++) {
            sv_set_threads(&s, team, th);
            double limit = 2.0 * (double)sv_bytes(nq) / bw[th];
            for (size_t g = 0; g < sizeof gates / sizeof gates[0]; g++) {
                Result r = time_gate(&s, gates[g], targets, nt, reps);
                printf("%-8s %3d %3d %12.0f %12.0f %12.0f %12.0f %7.3f %7.3f\n",
                       sv_gate_info(gates[g])->name, nq, th, r.avg * 1e9, r.min * 1e9,
                       r.max * 1e9, limit * 1e9, r.avg / limit, r.max / limit);
                fflush(stdout);
            }
        }
        sv_free(&s);
    }
    sv_team_free(team);
    return 0;
}
