/* bench_gates.c — gate kernel throughput against the memory-bandwidth limit.
 *
 * Measures the machine's bandwidth with a STREAM-style in-place scale
 * (a[i] = a[i] * s over 512 MiB, best of several passes, 1 and 2
 * threads), then times H, RX, CNOT, RZ and Toffoli on 20, 24 and 26 qubit
 * states with 1 and 2 threads, sweeping the target over every wire. A
 * gate on n qubits must move 2 * 16 * 2^n bytes (read + write), so the
 * limit per gate is that over the bandwidth; the ratio is time / limit
 * (the bar: <= 1.3 for a 1-qubit gate at 24 qubits on one thread).
 * On a machine shared with other work, the "paired" column (each sample
 * divided by the limit of a scale pass run just before it) is the steadier
 * figure; the limits of the other columns use the best bandwidth seen.
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

typedef struct Stream { double *a; size_t n, bytes; } Stream;

typedef struct ScaleArg {
    double *a;
    size_t n;
    double s;
    pthread_barrier_t *bar;
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

/* The buffer the bandwidth is measured on: 2 MiB aligned on transparent
   huge pages where the system allows, like a big state (sv_init). */
static int stream_init(Stream *st, size_t bytes)
{
    st->bytes = bytes;
    st->n = bytes / sizeof(double);
    if (posix_memalign((void **)&st->a, (size_t)2 << 20, bytes) != 0) return -1;
#ifdef MADV_HUGEPAGE
    madvise(st->a, bytes, MADV_HUGEPAGE);
#endif
    for (size_t i = 0; i < st->n; i++) st->a[i] = 1.0;
    return 0;
}

/* Why: one timed in-place pass with nth threads (threads are started
   outside the timed region and released together by a barrier). */
static double stream_pass(Stream *st, int nth)
{
    static int flip;
    volatile double sv = 1.0000001;
    double s = (flip ^= 1) ? sv : 1.0 / sv;
    if (nth <= 1) {
        double t0 = now();
        scale(st->a, st->n, s);
        return now() - t0;
    }
    pthread_t th[8];
    ScaleArg arg[8];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)nth + 1);
    for (int k = 0; k < nth; k++) {
        arg[k].a = st->a + st->n / (size_t)nth * (size_t)k;
        arg[k].n = st->n / (size_t)nth;
        arg[k].s = s;
        arg[k].bar = &bar;
        pthread_create(&th[k], NULL, scale_thread, &arg[k]);
    }
    pthread_barrier_wait(&bar);
    double t0 = now();
    pthread_barrier_wait(&bar);
    double t = now() - t0;
    for (int k = 0; k < nth; k++) pthread_join(th[k], NULL);
    pthread_barrier_destroy(&bar);
    return t;
}

/* Why: the limit is this machine's, measured in the same run: best of
   `reps` passes, in bytes/s of traffic (each byte read and written). */
static double bandwidth(Stream *st, int nth, int reps)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t = stream_pass(st, nth);
        if (t < best) best = t;
    }
    return 2.0 * (double)st->bytes / best;
}

/* ---- gates ------------------------------------------------------------ */

typedef struct Result { double avg, min, max, paired; } Result;

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

static int verbose;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Why: average over targets, so low-stride and high-stride kernels both
   count; min/max show the spread. Each time is the best of reps, and the
   reps go round all targets so that a burst of load from other processes
   does not spoil every sample of one target. With `st`, every gate sample
   is paired with a scale pass just before it (same threads), and
   `paired` is the mean over targets of the median of time / limit at that
   moment: a figure that survives a machine shared with other work. */
static Result time_gate(SvState *s, SvGate g, const int *targets, int nt, int reps,
                        Stream *st, int nth)
{
    double best[64], ratio[64][16];
    char err[128];
    double gbytes = 2.0 * (double)sv_bytes(s->nq);
    if (reps > 16) reps = 16;
    for (int i = 0; i < nt; i++) best[i] = 1e30;
    for (int k = 0; k < reps; k++)
        for (int i = 0; i < nt; i++) {
            SvOp op = gate_op(g, s->nq, targets[i]);
            double ts = st ? stream_pass(st, nth) : 0;
            double t0 = now();
            if (sv_apply(s, &op, err, sizeof err) != 0) {
                fprintf(stderr, "bench: %s\n", err);
                exit(1);
            }
            double t = now() - t0;
            if (t < best[i]) best[i] = t;
            if (st) ratio[i][k] = t / (gbytes * ts / (2.0 * (double)st->bytes));
        }
    Result r = { 0, 1e30, 0, 0 };
    for (int i = 0; i < nt; i++) {
        if (verbose)
            printf("    %s target %d: %.0f ns\n", sv_gate_info(g)->name, targets[i], best[i] * 1e9);
        r.avg += best[i] / nt;
        if (best[i] < r.min) r.min = best[i];
        if (best[i] > r.max) r.max = best[i];
        if (st) {
            qsort(ratio[i], (size_t)reps, sizeof(double), cmp_double);
            r.paired += ((reps & 1) ? ratio[i][reps / 2]
                                    : 0.5 * (ratio[i][reps / 2 - 1] + ratio[i][reps / 2])) / nt;
        }
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
    int reps = quick ? 3 : 5;
    Stream st;
    if (stream_init(&st, (size_t)512 << 20) != 0) {
        fprintf(stderr, "bench: cannot allocate the 512 MiB bandwidth buffer\n");
        return 1;
    }
    double bw[3];
    bw[1] = bandwidth(&st, 1, 8);
    bw[2] = bandwidth(&st, 2, 8);
    printf("bandwidth (in-place scale a[i] = a[i]*s over %zu MiB, best of 8): "
           "1 thread %.2f GB/s, 2 threads %.2f GB/s\n", st.bytes >> 20, bw[1] / 1e9, bw[2] / 1e9);
    printf("limit = 2*16*2^n bytes / bandwidth (same thread count); ratio = avg / limit, "
           "worst = max / limit;\n"
           "paired = median of time / limit with the bandwidth of a scale pass run just before "
           "each sample (n >= 24)\n"
           "avg/min/max: over target wires, each the best of %d reps\n\n", reps);
    printf("%-8s %3s %3s %12s %12s %12s %12s %7s %7s %7s\n", "gate", "n", "thr", "avg ns",
           "min ns", "max ns", "limit ns", "ratio", "worst", "paired");
    SvGate gates[] = { SV_HADAMARD, SV_RX, SV_CNOT, SV_RZ, SV_TOFFOLI };
    SvTeam *team = sv_team_new(2);
    for (int qi = 0; qi < nqs; qi++) {
        int nq = qubits[qi];
        if (nq < 1 || nq > 40) continue;
        if (qi > 0) {   /* the machine may have changed: keep the best */
            double b1 = bandwidth(&st, 1, 4), b2 = bandwidth(&st, 2, 4);
            if (b1 > bw[1]) bw[1] = b1;
            if (b2 > bw[2]) bw[2] = b2;
        }
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
            for (size_t g = 0; g < sizeof gates / sizeof gates[0]; g++) {
                Result r = time_gate(&s, gates[g], targets, nt, reps, nq >= 24 ? &st : NULL, th);
                double limit = 2.0 * (double)sv_bytes(nq) / bw[th];
                printf("%-8s %3d %3d %12.0f %12.0f %12.0f %12.0f %7.3f %7.3f ",
                       sv_gate_info(gates[g])->name, nq, th, r.avg * 1e9, r.min * 1e9,
                       r.max * 1e9, limit * 1e9, r.avg / limit, r.max / limit);
                if (nq >= 24) printf("%7.3f\n", r.paired);
                else printf("%7s\n", "-");
                fflush(stdout);
            }
        }
        sv_free(&s);
    }
    printf("\nbandwidth at the end (best seen): 1 thread %.2f GB/s, 2 threads %.2f GB/s\n",
           bw[1] / 1e9, bw[2] / 1e9);
    sv_team_free(team);
    free(st.a);
    return 0;
}
