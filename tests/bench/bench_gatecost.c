/* bench_gatecost.c — the C entry point's time per gate on a 10-wire
 * circuit (RX on every wire, then a CNOT ladder, repeated), through
 * sv_apply: the baseline of tests/bench/fusion.sh's figure "the
 * interpreter's own cost per applied gate" (the same circuit through a qfn,
 * minus this). Prints "ns_per_gate N".
 *
 *   bench_gatecost [LAYERS]     (default 2000 layers of 19 gates)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sv.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int layers = argc > 1 ? atoi(argv[1]) : 2000, n = 10;
    if (layers < 1) layers = 1;
    SvState s;
    if (sv_init(&s, n) != 0) return 1;
    char err[256];
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now();
        for (int l = 0; l < layers; l++) {
            for (int w = 0; w < n; w++) {
                SvOp rx = { .gate = SV_RX,
                            .nwires = 1,
                            .wires = { w },
                            .nparams = 1,
                            .params = { 0.01 * (l * n + w) } };
                if (sv_apply(&s, &rx, err, sizeof err) != 0) return 1;
            }
            for (int w = 0; w + 1 < n; w++) {
                SvOp cx = { .gate = SV_CNOT, .nwires = 2, .wires = { w, w + 1 } };
                if (sv_apply(&s, &cx, err, sizeof err) != 0) return 1;
            }
        }
        double t = (now() - t0) / ((double)layers * (2 * n - 1));
        if (t < best) best = t;
    }
    printf("ns_per_gate %.1f\n", best * 1e9);
    sv_free(&s);
    return 0;
}
