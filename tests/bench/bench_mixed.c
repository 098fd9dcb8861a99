/* bench_mixed.c — the mixed (density-matrix) device against the statevector
 * device at the same memory: a 12-wire rho is 4^12 = 2^24 complex numbers,
 * as a 24-wire state vector. Times one 1-qubit gate (Hadamard, RX, RZ)
 * on every wire of the 12-wire rho and on every wire of the 24-wire
 * vector, alternating the two in pairs (so both see the same machine
 * load), and prints time(mixed) / time(statevector) per gate and overall
 * (the figure of issue 16: <= 2.5), on 1 thread and on a 2-thread team.
 * Uses only dm.h / sv.h; knows nothing of the language.
 *
 *   bench_mixed [--quick]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dm.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static SvOp gate1(SvGate g, int w)
{
    SvOp op;
    memset(&op, 0, sizeof op);
    op.gate = g;
    op.nwires = 1;
    op.wires[0] = w;
    op.nparams = sv_gate_info(g)->nparams;
    op.params[0] = 0.37;
    return op;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    int reps = quick ? 3 : 9;
    const int nm = 12, ns = 24;
    DmState dm;
    SvState sv;
    if (dm_init(&dm, nm) != 0 || sv_init(&sv, ns) != 0) {
        fprintf(stderr, "bench_mixed: out of memory\n");
        return 1;
    }
    SvTeam *team = sv_team_new(2);
    SvGate gates[3] = { SV_HADAMARD, SV_RX, SV_RZ };
    printf("mixed device (%d wires, 2^%d amplitudes) vs statevector (%d wires), one 1-qubit gate,\n"
           "mean over the target wires, median of %d alternating pairs\n\n",
           nm, 2 * nm, ns, reps);
    printf("%-8s %-9s %14s %14s %8s\n", "threads", "gate", "mixed ms", "statevec ms", "ratio");
    for (int th = 1; th <= 2; th++) {
        if (th == 2 && !team) break;
        dm_set_threads(&dm, th == 2 ? team : NULL, th);
        sv_set_threads(&sv, th == 2 ? team : NULL, th);
        double tot_m = 0, tot_s = 0;
        for (int gi = 0; gi < 3; gi++) {
            double tm[16], ts[16];
            for (int r = 0; r < reps; r++) {
                double t0 = now();
                for (int w = 0; w < nm; w++) {
                    SvOp op = gate1(gates[gi], w);
                    dm_apply(&dm, &op, NULL, 0);
                }
                double t1 = now();
                for (int w = 0; w < ns; w++) {
                    SvOp op = gate1(gates[gi], w);
                    sv_apply(&sv, &op, NULL, 0);
                }
                double t2 = now();
                tm[r] = (t1 - t0) / nm;
                ts[r] = (t2 - t1) / ns;
            }
            qsort(tm, (size_t)reps, sizeof(double), cmp);
            qsort(ts, (size_t)reps, sizeof(double), cmp);
            double m = tm[reps / 2], s = ts[reps / 2];
            tot_m += m;
            tot_s += s;
            printf("%-8d %-9s %14.2f %14.2f %8.2f\n", th, sv_gate_info(gates[gi])->name, 1e3 * m,
                   1e3 * s, m / s);
        }
        printf("%-8d %-9s %14.2f %14.2f %8.2f   <- figure (bar: <= 2.5)\n", th, "all",
               1e3 * tot_m / 3, 1e3 * tot_s / 3, tot_m / tot_s);
    }
    dm_free(&dm);
    sv_free(&sv);
    sv_team_free(team);
    return 0;
}
