/* bench_gates.c — gate kernels against the memory-bandwidth limit and
 * against Hadamard, on every placement class.
 *
 * Baselines, measured in the same run:
 *  - the in-place bandwidth limit: a STREAM-style scale a[i] = a[i] * s over
 *    512 MiB (1 and 2 threads, best pass). A gate on n wires that touches
 *    the whole state moves 2 * 16 * 2^n bytes (read + write); "limit" is
 *    that over the bandwidth, and "/bw" = gate time / limit.
 *  - Hadamard on the same target bit, same state, same threads: "/H".
 * Gates: Hadamard RX RZ CNOT CZ SWAP CRX Toffoli and a dense 2-wire
 * QubitUnitary ("QU2"); their target and control bits take every
 * combination of {0, 1, 2, middle, top} (bit 0 = the last wire); 1 and 2
 * threads; 22 and 24 wires by default. "touch" is the share of 64-byte
 * cache lines the gate must change. Each row shows the bars of the issue
 * it misses (tests/bench/README.md): /bw <= 0.75 where touch = 1, and
 * /H <= 0.8 for CNOT and Toffoli ("floor H" where the gate must change
 * every line and meets the bandwidth bar); the run ends with the issue's
 * figures, one line per block (block_figures).
 *
 * Each figure is the best of --reps samples; the samples go round all
 * placements so that a burst of load from other processes does not spoil
 * every sample of one row; a scale pass runs before each round (and
 * three untimed gates after it, so that the first row finds the state
 * where the others do).
 *
 *   bench_gates [--quick] [--qubits N[,N..]] [--threads T[,T..]] [--reps R]
 *               [--gates NAME[,NAME..]] [--simd c|avx2|avx512]
 *               [--save FILE] [--compare FILE]
 *   bench_gates --count [--qubits N]      one application of each placement
 *                                         (tests/bench/gates_ir.sh runs it
 *                                         under callgrind)
 *   bench_gates --wake [--qubits N]       the idle-core wake-up loop
 *
 * --save writes the rows; --compare FILE prints a saved run (another
 * build: tests/bench/gates_compare.sh) beside this one: before and after.
 * Only uses the sv.h interface; knows nothing of the language.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "sv.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- bandwidth -------------------------------------------------------- */

typedef struct Stream {
    double *a;
    size_t n, bytes;
} Stream;

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
    if (nth > 8) nth = 8;
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

/* Bytes per second of traffic (each byte read and written) of one pass. */
static double pass_bw(Stream *st, int nth)
{
    return 2.0 * (double)st->bytes / stream_pass(st, nth);
}

/* ---- placements ------------------------------------------------------- */

enum { G_H, G_RX, G_RZ, G_CNOT, G_CZ, G_SWAP, G_CRX, G_TOFFOLI, G_QU2, G_N };
static const char *gname[G_N] = { "Hadamard", "RX",  "RZ",      "CNOT", "CZ",
                                  "SWAP",     "CRX", "Toffoli", "QU2" };
static const char *galias[G_N] = { "H", "RX", "RZ", "CNOT", "CZ", "SWAP", "CRX", "CCX", "QU" };

/* One row: a gate with its target and control bits (bit positions, bit 0
   = the last wire). t[0] is "the target" (/H uses its bit). */
typedef struct Place {
    int g;
    int nt, t[2];
    int nc, c[2];
    char label[48];
} Place;

static cplx qu2[16]; /* a fixed dense 2-wire unitary (see make_qu2) */

/* Why: QU2 must be dense and unitary to the validator's 1e-7: Gram-Schmidt
   on a fixed pseudo-random complex matrix. */
static void make_qu2(void)
{
    uint64_t x = 0x9e3779b97f4a7c15u;
    double v[32];
    for (int i = 0; i < 32; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v[i] = (double)(x >> 11) / 9007199254740992.0 - 0.5;
    }
    for (int i = 0; i < 16; i++) qu2[i] = v[2 * i] + v[2 * i + 1] * _Complex_I;
    for (int c = 0; c < 4; c++) {
        for (int p = 0; p < c; p++) {
            cplx d = 0;
            for (int r = 0; r < 4; r++) d += conj(qu2[r * 4 + p]) * qu2[r * 4 + c];
            for (int r = 0; r < 4; r++) qu2[r * 4 + c] -= d * qu2[r * 4 + p];
        }
        double n = 0;
        for (int r = 0; r < 4; r++) n += creal(qu2[r * 4 + c] * conj(qu2[r * 4 + c]));
        for (int r = 0; r < 4; r++) qu2[r * 4 + c] /= sqrt(n);
    }
}

/* The op of a placement on an nq-wire state. */
static SvOp place_op(const Place *p, int nq)
{
    static const SvGate sg[G_N] = { SV_HADAMARD, SV_RX,  SV_RZ,      SV_CNOT,        SV_CZ,
                                    SV_SWAP,     SV_CRX, SV_TOFFOLI, SV_QUBITUNITARY };
    SvOp op;
    memset(&op, 0, sizeof op);
    op.gate = sg[p->g];
    op.nparams = sv_gate_info(op.gate)->nparams;
    op.params[0] = 0.3;
    int w = 0;
    for (int i = 0; i < p->nc; i++) op.wires[w++] = nq - 1 - p->c[i]; /* controls first */
    for (int i = 0; i < p->nt; i++) op.wires[w++] = nq - 1 - p->t[i];
    op.nwires = w;
    if (p->g == G_QU2) op.matrix = qu2;
    return op;
}

static const char *bitname(int b, int nq)
{
    static char buf[8][8];
    static int k;
    char *s = buf[k++ & 7];
    if (b == nq - 1)
        snprintf(s, 8, "top");
    else if (b == nq / 2)
        snprintf(s, 8, "mid");
    else
        snprintf(s, 8, "%d", b);
    return s;
}

/* Why: every placement class: targets and controls on {0, 1, 2, mid, top};
   symmetric gates (CZ, SWAP, QU2's cost) take unordered pairs, Toffoli's
   controls are an unordered pair. */
static int make_places(Place *out, int nq, const int *want)
{
    int bits[5] = { 0, 1, 2, nq / 2, nq - 1 }, n = 0;
    for (int g = 0; g < G_N; g++) {
        if (!want[g]) continue;
        for (int a = 0; a < 5; a++)
            for (int b = 0; b < 5; b++)
                for (int c = 0; c < 5; c++) {
                    Place p;
                    memset(&p, 0, sizeof p);
                    p.g = g;
                    int A = bits[a], B = bits[b], C = bits[c];
                    switch (g) {
                    case G_H:
                    case G_RX:
                    case G_RZ:
                        if (b || c) continue;
                        p.nt = 1;
                        p.t[0] = A;
                        snprintf(p.label, sizeof p.label, "t%s", bitname(A, nq));
                        break;
                    case G_CNOT:
                    case G_CRX: /* control A, target B */
                        if (a == b || c) continue;
                        p.nt = 1;
                        p.t[0] = B;
                        p.nc = 1;
                        p.c[0] = A;
                        snprintf(p.label, sizeof p.label, "c%s t%s", bitname(A, nq),
                                 bitname(B, nq));
                        break;
                    case G_CZ:
                        if (a >= b || c) continue;
                        p.nt = 1;
                        p.t[0] = A;
                        p.nc = 1;
                        p.c[0] = B;
                        snprintf(p.label, sizeof p.label, "%s,%s", bitname(A, nq), bitname(B, nq));
                        break;
                    case G_SWAP:
                    case G_QU2: /* t[0] the lower bit */
                        if (a >= b || c) continue;
                        p.nt = 2;
                        p.t[0] = A;
                        p.t[1] = B;
                        snprintf(p.label, sizeof p.label, "%s,%s", bitname(A, nq), bitname(B, nq));
                        break;
                    case G_TOFFOLI: /* controls A < B, target C */
                        if (a >= b || c == a || c == b) continue;
                        p.nt = 1;
                        p.t[0] = C;
                        p.nc = 2;
                        p.c[0] = A;
                        p.c[1] = B;
                        snprintf(p.label, sizeof p.label, "c%s,%s t%s", bitname(A, nq),
                                 bitname(B, nq), bitname(C, nq));
                        break;
                    }
                    out[n++] = p;
                }
    }
    return n;
}

/* Whether the gate changes a basis state with these values of its bits
   (v[i] for targets, u[i] for controls). */
static int acts(const Place *p, const int *v, const int *u)
{
    for (int i = 0; i < p->nc; i++)
        if (!u[i]) return 0;
    switch (p->g) {
    case G_CZ: return v[0]; /* the phase sits on |11> */
    case G_SWAP: return v[0] != v[1];
    default: return 1;
    }
}

/* Why: "must touch the whole state" is per 64-byte line (4 amplitudes,
   bits 0 and 1): the share of lines holding an amplitude the gate changes. */
static double touch(const Place *p)
{
    int bits[4], nb = 0;
    for (int i = 0; i < p->nt; i++) bits[nb++] = p->t[i];
    for (int i = 0; i < p->nc; i++) bits[nb++] = p->c[i];
    int hi = 0, hit = 0;
    for (int i = 0; i < nb; i++) hi += bits[i] >= 2;
    for (int h = 0; h < (1 << hi); h++) { /* values of the high bits */
        int any = 0;
        for (int l = 0; l < (1 << nb) && !any; l++) {
            int val[4], k = 0, ok = 1;
            for (int i = 0; i < nb; i++) {
                val[i] = (l >> i) & 1;
                if (bits[i] >= 2 && val[i] != ((h >> k++) & 1)) ok = 0;
            }
            if (ok) any = acts(p, val, val + p->nt);
        }
        hit += any;
    }
    return (double)hit / (double)(1 << hi);
}

/* ---- the table -------------------------------------------------------- */

typedef struct Row {
    int nq, th;
    Place p;
    double best;   /* seconds, best of reps */
    double limit;  /* seconds */
    double hbest;  /* Hadamard on the same target bit, or 0 */
    double before; /* --compare: that run's /bw, or -1 */
} Row;

static void apply_or_die(SvState *s, const SvOp *op)
{
    char err[160];
    if (sv_apply(s, op, err, sizeof err) != 0) {
        fprintf(stderr, "bench_gates: %s\n", err);
        exit(1);
    }
}

/* Why: one block of the table (one size, one thread count): reps rounds
   over all placements, each round after a scale pass. */
static void time_block(SvState *s, Stream *st, int th, const Place *pl, int np, int reps, Row *rows,
                       double *bw_best)
{
    double *best = malloc((size_t)np * sizeof(double));
    for (int i = 0; i < np; i++) best[i] = 1e30;
    for (int k = 0; k < reps; k++) {
        double b = pass_bw(st, th);
        if (b > *bw_best) *bw_best = b;
        /* the scale pass evicted the state and left the cache full of its
           dirty lines: three untimed gates write those back and bring the
           state in again before the first row */
        SvOp warm = place_op(&pl[np - 1], s->nq);
        for (int w = 0; w < 3; w++) apply_or_die(s, &warm);
        for (int i = 0; i < np; i++) {
            SvOp op = place_op(&pl[i], s->nq);
            double t0 = now();
            apply_or_die(s, &op);
            double t = now() - t0;
            if (t < best[i]) best[i] = t;
        }
    }
    for (int i = 0; i < np; i++) {
        rows[i].nq = s->nq;
        rows[i].th = th;
        rows[i].p = pl[i];
        rows[i].best = best[i];
        rows[i].hbest = 0;
        rows[i].before = -1;
        for (int j = 0; j < np; j++)
            if (pl[j].g == G_H && pl[j].t[0] == pl[i].t[0]) rows[i].hbest = best[j];
    }
    free(best);
}

/* Whether the /H bar applies: CNOT and Toffoli. */
static int hrow(const Row *r) { return (r->p.g == G_CNOT || r->p.g == G_TOFFOLI) && r->hbest > 0; }

/* The bars of the issue for one row: "" if met or not applicable, "MISS
   bw" / "MISS H" if missed, "floor H" where /H > 0.8 but the gate must
   change every line (touch 1) and meets the bandwidth bar: it moves the
   bytes Hadamard moves, so below 0.8 of Hadamard only if Hadamard itself
   runs over 1.25x the bandwidth limit (README, "Gate kernels"). */
static const char *verdict(const Row *r, double ratio)
{
    static char buf[32];
    buf[0] = 0;
    int full = touch(&r->p) >= 1.0;
    int bwbar = full && ratio > 0.75;
    int hbar = hrow(r) && r->best / r->hbest > 0.8;
    if (hbar && full && !bwbar)
        snprintf(buf, sizeof buf, "floor H");
    else if (bwbar || hbar)
        snprintf(buf, sizeof buf, "MISS%s%s", bwbar ? " bw" : "", hbar ? " H" : "");
    return buf;
}

static void print_rows(const Row *rows, int n, int compare)
{
    printf("%-9s %-14s %12s %7s %6s %6s", "gate", "placement", "ns", "/bw", "/H", "touch");
    if (compare) printf(" %9s %8s", "before/bw", "aft/bef");
    printf("  bars\n");
    for (int i = 0; i < n; i++) {
        const Row *r = &rows[i];
        double ratio = r->best / r->limit;
        printf("%-9s %-14s %12.0f %7.3f ", gname[r->p.g], r->p.label, r->best * 1e9, ratio);
        if (r->hbest > 0)
            printf("%6.2f", r->best / r->hbest);
        else
            printf("%6s", "-");
        printf(" %6.2f", touch(&r->p));
        if (compare) {
            if (r->before > 0)
                printf(" %9.3f %8.2f", r->before, ratio / r->before);
            else
                printf(" %9s %8s", "-", "-");
        }
        printf("  %s\n", verdict(r, ratio));
    }
}

/* Why: the closing figures of the issue, one line per block: the worst
   /bw where the gate must touch every line, the worst /H of CNOT and
   Toffoli where they need not (the bar's case) and where they must (the
   floor, with that row's /bw), the two placements the issue names (CNOT
   c1 t0, Toffoli c1,2 t0: /H and /bw), and the rows missing a bar. */
static void block_figures(const Row *rows, int n, char *out, size_t len)
{
    const Row *wbw = NULL, *wh = NULL, *wfl = NULL, *cn = NULL, *tf = NULL;
    int missed = 0;
    for (int i = 0; i < n; i++) {
        const Row *r = &rows[i];
        double bw = r->best / r->limit;
        int full = touch(&r->p) >= 1.0;
        if (full && (!wbw || bw > wbw->best / wbw->limit)) wbw = r;
        if (hrow(r)) {
            const Row **w = full ? &wfl : &wh;
            if (!*w || r->best / r->hbest > (*w)->best / (*w)->hbest) *w = r;
        }
        if (r->p.g == G_CNOT && strcmp(r->p.label, "c1 t0") == 0) cn = r;
        if (r->p.g == G_TOFFOLI && strcmp(r->p.label, "c1,2 t0") == 0) tf = r;
        if (strncmp(verdict(r, bw), "MISS", 4) == 0) missed++;
    }
    char a[80] = "-", b[80] = "-", c[96] = "-", d[32] = "-", e[32] = "-";
    if (wbw)
        snprintf(a, sizeof a, "%.3f %s %s", wbw->best / wbw->limit, gname[wbw->p.g], wbw->p.label);
    if (wh) snprintf(b, sizeof b, "%.2f %s %s", wh->best / wh->hbest, gname[wh->p.g], wh->p.label);
    if (wfl)
        snprintf(c, sizeof c, "%.2f %s %s /bw %.3f", wfl->best / wfl->hbest, gname[wfl->p.g],
                 wfl->p.label, wfl->best / wfl->limit);
    if (cn) snprintf(d, sizeof d, "%.2f %.3f", cn->best / cn->hbest, cn->best / cn->limit);
    if (tf) snprintf(e, sizeof e, "%.2f %.3f", tf->best / tf->hbest, tf->best / tf->limit);
    snprintf(out, len, "%5d %3d  %-26s %-26s %-34s %-12s %-15s %d\n", rows[0].nq, rows[0].th, a, b,
             c, d, e, missed);
}

/* Rows of a --save file: "nq th gate label.. ns ratio". */
typedef struct Saved {
    int nq, th;
    char gate[16], label[48];
    double ratio;
} Saved;

static int load_saved(const char *path, Saved **out)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = 0, cap = 64;
    Saved *v = malloc((size_t)cap * sizeof *v);
    char line[256];
    while (fgets(line, sizeof line, f)) {
        Saved s;
        char *bar = strchr(line, '|'); /* nq th gate | label | ns ratio */
        if (line[0] == '#' || !bar) continue;
        char *bar2 = strchr(bar + 1, '|');
        if (!bar2) continue;
        *bar = 0;
        *bar2 = 0;
        double ns;
        if (sscanf(line, "%d %d %15s", &s.nq, &s.th, s.gate) != 3) continue;
        if (sscanf(bar2 + 1, "%lf %lf", &ns, &s.ratio) != 2) continue;
        snprintf(s.label, sizeof s.label, "%s", bar + 1);
        if (n == cap) v = realloc(v, (size_t)(cap *= 2) * sizeof *v);
        v[n++] = s;
    }
    fclose(f);
    *out = v;
    return n;
}

static void save_rows(FILE *f, const Row *rows, int n)
{
    for (int i = 0; i < n; i++)
        fprintf(f, "%d %d %s|%s|%.0f %.4f\n", rows[i].nq, rows[i].th, gname[rows[i].p.g],
                rows[i].p.label, rows[i].best * 1e9, rows[i].best / rows[i].limit);
}

/* ---- --count: one application per placement (for callgrind) ---------- */

static int count_mode(int nq, int simd, const Place *pl, int np)
{
    SvState s;
    if (sv_init(&s, nq) != 0) return 1;
    if (simd >= 0) s.simd = simd;
    for (int i = 0; i < np; i++) { /* warm-up: page faults, lazy paths */
        SvOp op = place_op(&pl[i], nq);
        apply_or_die(&s, &op);
    }
    for (int i = 0; i < np; i++) {
        SvOp op = place_op(&pl[i], nq);
        printf("%d %s|%s\n", i, gname[pl[i].g], pl[i].label);
        apply_or_die(&s, &op);
    }
    sv_free(&s);
    return 0;
}

/* ---- --wake: classical work between quantum calls -------------------- */
#ifdef SV_SPIN_DEFAULT

static volatile double sink;
static double work_per_ms; /* iterations of classical_work per millisecond */

static void spin_work(long n)
{
    double x = 1.0;
    for (long i = 0; i < n; i++) x = x * 1.0000001 + 1e-9;
    sink = x;
}

/* About `secs` of classical (single-core, cache-resident) work: a fixed
   amount, calibrated once, so that a preempted run does not do less. */
static void classical_work(double secs)
{
    if (work_per_ms == 0) {
        double best = 1e30;
        for (int k = 0; k < 5; k++) {
            double t0 = now();
            spin_work(1000000);
            double t = now() - t0;
            if (t < best) best = t;
        }
        work_per_ms = 1000000 / (best * 1e3);
    }
    spin_work((long)(secs * 1e3 * work_per_ms));
}

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A "call" on the state: a layer of RX on 4 wires and 2 CNOTs (a few
   milliseconds at 20 wires). */
static double one_call(SvState *s)
{
    double t0 = now();
    for (int w = 0; w < 4; w++) {
        SvOp op;
        memset(&op, 0, sizeof op);
        op.gate = SV_RX;
        op.nwires = 1;
        op.wires[0] = 3 * w;
        op.nparams = 1;
        op.params[0] = 0.1;
        apply_or_die(s, &op);
        if (w & 1) {
            op.gate = SV_CNOT;
            op.nwires = 2;
            op.wires[0] = 3 * w;
            op.wires[1] = s->nq - 1 - w;
            op.nparams = 0;
            apply_or_die(s, &op);
        }
    }
    return now() - t0;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Why: the cost of waking an idle team (tests/bench/README.md): calls
   after `gap` of classical work on the calling thread, with the team's
   idle workers waiting awake for several fixed budgets before they sleep,
   with the default (adaptive) policy, and on one thread; median call time
   and the CPU time per call beyond the classical work (the call's own and
   the waiting). */
static int wake_mode(int nq)
{
    SvState s;
    if (sv_init(&s, nq) != 0) return 1;
    SvTeam *team = sv_team_new(2);
    if (!team) return 1;
    enum { CALLS = 40 };
    double gaps[] = { 0, 0.0005, 0.002, 0.005, 0.02 };
    double spins[] = { -2, 0, 0.0001, 0.001, 0.005, 0.02, -1 }; /* -2: one thread; -1: default */
    int ng = (int)(sizeof gaps / sizeof gaps[0]);
    double load[3] = { 0, 0, 0 };
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
        fclose(la);
    }
    printf("idle-core wake-up: a %d-wire call (4 RX + 2 CNOT) after a gap of classical work on\n"
           "the calling thread, %d calls per cell; cell = median call ms (CPU ms per call beyond\n"
           "the classical work: the call and any spinning); load average %.2f\n",
           nq, CALLS, load[0]);
    printf("%-13s", "spin \\ gap");
    for (int g = 0; g < ng; g++) printf("  %7.1f ms      ", gaps[g] * 1e3);
    printf("\n");
    for (size_t k = 0; k < sizeof spins / sizeof spins[0]; k++) {
        if (spins[k] < -1) {
            sv_set_threads(&s, NULL, 1);
            printf("%-13s", "1 thread");
        } else if (spins[k] < 0) {
            sv_set_threads(&s, team, 2);
            sv_team_set_spin(team, SV_SPIN_DEFAULT);
            printf("%-13s", "default");
        } else {
            sv_set_threads(&s, team, 2);
            sv_team_set_spin(team, spins[k]);
            printf("%7.1f ms   ", spins[k] * 1e3);
        }
        for (int g = 0; g < ng; g++) {
            double t[CALLS], work = 0, c0 = cpu_seconds();
            for (int i = 0; i < CALLS; i++) {
                double w0 = thread_cpu();
                classical_work(gaps[g]);
                work += thread_cpu() - w0;
                t[i] = one_call(&s);
            }
            double cpu = (cpu_seconds() - c0 - work) / CALLS;
            qsort(t, CALLS, sizeof(double), cmp_double);
            printf("  %6.2f (%6.2f)", t[CALLS / 2] * 1e3, cpu * 1e3);
            fflush(stdout);
        }
        printf("\n");
    }
    la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fscanf(la, "%lf", &load[0]) == 1) printf("load average at the end %.2f\n", load[0]);
        fclose(la);
    }
    sv_team_set_spin(team, SV_SPIN_DEFAULT);
    sv_team_free(team);
    sv_free(&s);
    return 0;
}
#else /* a library from before the spin setting (gates_compare.sh) */
static int wake_mode(int nq)
{
    (void)nq;
    fprintf(stderr, "bench_gates: --wake needs sv_team_set_spin\n");
    return 1;
}
#endif

/* ---- main ------------------------------------------------------------- */

static int parse_list(char *arg, int *out, int max)
{
    int n = 0;
    for (char *p = strtok(arg, ","); p && n < max; p = strtok(NULL, ",")) out[n++] = atoi(p);
    return n;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: bench_gates [--quick] [--qubits N[,N..]] [--threads T[,T..]] [--reps R]\n"
            "                   [--gates NAME[,NAME..]] [--simd c|avx2|avx512]\n"
            "                   [--save FILE] [--compare FILE] [--count] [--wake]\n");
    return 2;
}

int main(int argc, char **argv)
{
    int quick = 0, count = 0, wake = 0, qubits[8] = { 22, 24 }, nqs = 2, threads[4] = { 1, 2 },
        nth = 2;
    int reps = 5, want[G_N], simd = -1, gates_given = 0, qubits_given = 0;
    const char *save = NULL, *compare = NULL;
    for (int g = 0; g < G_N; g++) want[g] = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (strcmp(a, "--quick") == 0)
            quick = 1;
        else if (strcmp(a, "--count") == 0)
            count = 1;
        else if (strcmp(a, "--wake") == 0)
            wake = 1;
        else if (strcmp(a, "--qubits") == 0 && more) {
            nqs = parse_list(argv[++i], qubits, 8);
            qubits_given = nqs > 0;
        } else if (strcmp(a, "--threads") == 0 && more)
            nth = parse_list(argv[++i], threads, 4);
        else if (strcmp(a, "--reps") == 0 && more)
            reps = atoi(argv[++i]);
        else if (strcmp(a, "--save") == 0 && more)
            save = argv[++i];
        else if (strcmp(a, "--compare") == 0 && more)
            compare = argv[++i];
        else if (strcmp(a, "--simd") == 0 && more) {
            const char *v = argv[++i];
            simd = strcmp(v, "c") == 0        ? 0
                   : strcmp(v, "avx2") == 0   ? 1
                   : strcmp(v, "avx512") == 0 ? 2
                                              : -2;
            if (simd == -2) return usage();
        } else if (strcmp(a, "--gates") == 0 && more) {
            gates_given = 1;
            for (int g = 0; g < G_N; g++) want[g] = 0;
            for (char *p = strtok(argv[++i], ","); p; p = strtok(NULL, ",")) {
                int found = 0;
                for (int g = 0; g < G_N; g++)
                    if (strcmp(p, gname[g]) == 0 || strcmp(p, galias[g]) == 0) want[g] = found = 1;
                if (!found) {
                    fprintf(stderr, "bench_gates: unknown gate %s\n", p);
                    return 2;
                }
            }
        } else
            return usage();
    }
    if (reps < 1) reps = 1;
    if (quick) reps = 3;
    /* /H needs Hadamard in the same block */
    if (gates_given) want[G_H] = 1;
    make_qu2();
    static Place pl[512];
    if (count) {
        int nq = qubits_given ? qubits[0] : 16;
        if (nq < 6 || nq > 34) { /* bits 0, 1, 2, mid, top distinct */
            fprintf(stderr, "bench_gates: --count takes 6 to 34 wires\n");
            return 2;
        }
        int np = make_places(pl, nq, want);
        return count_mode(nq, simd, pl, np);
    }
    if (wake) return wake_mode(qubits_given ? qubits[0] : 20);

    Saved *old = NULL;
    int nold = 0;
    if (compare && (nold = load_saved(compare, &old)) < 0) {
        fprintf(stderr, "bench_gates: cannot read %s\n", compare);
        return 1;
    }
    Stream st;
    if (stream_init(&st, (size_t)512 << 20) != 0) {
        fprintf(stderr, "bench_gates: cannot allocate the 512 MiB bandwidth buffer\n");
        return 1;
    }
    double bw[3] = { 0, 0, 0 };
    for (int k = 0; k < 6; k++)
        for (int t = 1; t <= 2; t++) {
            double b = pass_bw(&st, t);
            if (b > bw[t]) bw[t] = b;
        }
    printf("in-place bandwidth (a[i] = a[i]*s over %zu MiB, best pass): 1 thread %.2f GB/s, "
           "2 threads %.2f GB/s\n",
           st.bytes >> 20, bw[1] / 1e9, bw[2] / 1e9);
    printf("ns = best of %d; /bw = ns / limit, limit = 2*16*2^n bytes / bandwidth (same threads, "
           "best pass of the block);\n/H = ns / Hadamard on the same target bit (SWAP, QU2: "
           "the lower bit); touch = share of 64-byte lines the gate changes;\n"
           "bars: /bw <= 0.75 where touch = 1, /H <= 0.8 for CNOT and Toffoli; "
           "placement: c = control bit, t = target bit, bit 0 = last wire\n",
           reps);
    FILE *sf = NULL;
    if (save) {
        sf = fopen(save, "w");
        if (!sf) {
            fprintf(stderr, "bench_gates: cannot write %s\n", save);
            return 1;
        }
        fprintf(sf, "# bench_gates rows: nq threads gate|placement|ns /bw\n");
    }
    SvTeam *team = sv_team_new(2);
    int misses = 0, floors = 0, total = 0, nfig = 0;
    char figs[16][400];
    for (int qi = 0; qi < nqs; qi++) {
        int nq = qubits[qi];
        if (nq < 6 || nq > 34) { /* bits 0, 1, 2, mid, top distinct */
            printf("%d wires: outside 6..34, skipped\n", nq);
            continue;
        }
        SvState s;
        if (sv_init(&s, nq) != 0) {
            printf("%d wires: cannot allocate %zu bytes, skipped\n", nq, sv_bytes(nq));
            continue;
        }
        if (simd >= 0) s.simd = simd;
        int np = make_places(pl, nq, want);
        Row *rows = malloc((size_t)np * sizeof(Row));
        for (int ti = 0; ti < nth; ti++) {
            int th = threads[ti] < 1 ? 1 : threads[ti] > 2 ? 2 : threads[ti];
            sv_set_threads(&s, team, th);
            double b = bw[th];
            time_block(&s, &st, th, pl, np, reps, rows, &b);
            if (b > bw[th]) bw[th] = b;
            double limit = 2.0 * (double)sv_bytes(nq) / bw[th];
            for (int i = 0; i < np; i++) {
                rows[i].limit = limit;
                for (int j = 0; j < nold; j++)
                    if (old[j].nq == nq && old[j].th == th &&
                        strcmp(old[j].gate, gname[pl[i].g]) == 0 &&
                        strcmp(old[j].label, pl[i].label) == 0)
                        rows[i].before = old[j].ratio;
                const char *v = verdict(&rows[i], rows[i].best / limit);
                misses += v[0] == 'M';
                floors += v[0] == 'f';
                total++;
            }
            if (np > 0 && nfig < 16) block_figures(rows, np, figs[nfig++], sizeof figs[0]);
            printf("\n== %d wires, %d thread%s: limit %.3f ms (%.2f GB/s) ==\n", nq, th,
                   th > 1 ? "s" : "", limit * 1e3, bw[th] / 1e9);
            print_rows(rows, np, compare != NULL);
            if (sf) save_rows(sf, rows, np);
            fflush(stdout);
        }
        free(rows);
        sv_free(&s);
    }
    printf(
        "\n== issue 19 figures: bars /bw <= 0.75 where touch = 1, /H <= 0.8 for CNOT and Toffoli "
        "(issue: CNOT c1 t0 /H was 1.2-1.4, qulacs 0.88) ==\n");
    printf("%5s %3s  %-26s %-26s %-34s %-12s %-15s %s\n", "wires", "thr", "worst /bw, touch 1",
           "worst /H CNOT|CCX, touch<1", "worst /H CNOT|CCX, touch 1", "CNOT c1 t0",
           "Toffoli c1,2 t0", "missed");
    printf("%5s %3s  %-26s %-26s %-34s %-12s %-15s\n", "", "", "", "", "(floor: every line moves)",
           "/H /bw", "/H /bw");
    for (int i = 0; i < nfig; i++) fputs(figs[i], stdout);
    printf("bars missed: %d of %d rows (and %d rows /H > 0.8 at the floor: touch 1, within the "
           "bandwidth bar); bandwidth at the end (best seen): 1 thread %.2f GB/s, 2 threads %.2f "
           "GB/s\n",
           misses, total, floors, bw[1] / 1e9, bw[2] / 1e9);
    if (sf) fclose(sf);
    free(old);
    sv_team_free(team);
    free(st.a);
    return 0;
}
