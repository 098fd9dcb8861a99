/* bench_qasm.c — import time of a 10,000-gate OpenQASM 2.0 file.
 *
 * Writes a file of 10,000 gate applications on 20 qubits (a mix of qelib1
 * gates with and without angle expressions, and calls of two custom gates
 * whose expansions count as the gates they apply), then times reading it
 * from disk and qasm_parse (tokens, expansion, the flat circuit), median
 * of 15 runs, beside the time of only reading the file's bytes measured
 * in the same run. The figure of issue 16: import <= 50 ms.
 * Uses only qasm.h; knows nothing of the language.
 *
 *   bench_qasm [FILE]   (default: a temporary file under /tmp)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "qasm.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)len + 1);
    if (b && fread(b, 1, (size_t)len, f) != (size_t)len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *n = (size_t)len;
    return b;
}

int main(int argc, char **argv)
{
    char path[256];
    if (argc > 1)
        snprintf(path, sizeof path, "%s", argv[1]);
    else
        snprintf(path, sizeof path, "/tmp/qh_bench_qasm_%d.qasm", (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    fprintf(f, "OPENQASM 2.0;\ninclude \"qelib1.inc\";\nqreg q[20];\ncreg c[20];\n"
               "gate zz(t) a, b { cx a, b; rz(t) b; cx a, b; }\n"
               "gate mix(t, s) a, b { ry(t / 2) a; zz(s) a, b; }\n");
    unsigned x = 12345;
    int gates = 0;
    while (gates < 10000) {
        x = x * 1103515245u + 12345u;
        int a = (int)((x >> 8) % 20), b = (a + 1 + (int)((x >> 16) % 19)) % 20;
        switch ((x >> 4) % 8) {
        case 0:
            fprintf(f, "h q[%d];\n", a);
            gates++;
            break;
        case 1:
            fprintf(f, "cx q[%d], q[%d];\n", a, b);
            gates++;
            break;
        case 2:
            fprintf(f, "rz(%.6f) q[%d];\n", (double)(x % 1000) / 317.0, a);
            gates++;
            break;
        case 3:
            fprintf(f, "u3(pi/%d, -0.25*pi, %.4e) q[%d];\n", 1 + (int)(x % 7),
                    (double)(x % 97) / 13.0, a);
            gates++;
            break;
        case 4:
            fprintf(f, "cu1(pi/%d) q[%d], q[%d];\n", 2 + (int)(x % 5), a, b);
            gates++;
            break;
        case 5:
            fprintf(f, "ccx q[%d], q[%d], q[%d];\n", a, b,
                    (b + 1) % 20 == a ? (b + 2) % 20 : (b + 1) % 20);
            gates++;
            break;
        case 6:
            fprintf(f, "zz(%.5f) q[%d], q[%d];\n", (double)(x % 500) / 101.0, a, b);
            gates += 3;
            break;
        default:
            fprintf(f, "mix(0.5, -1.5) q[%d], q[%d];\n", a, b);
            gates += 4;
            break;
        }
    }
    fprintf(f, "measure q -> c;\n");
    fclose(f);
    enum { RUNS = 15 };
    double tr[RUNS], tp[RUNS];
    size_t nops = 0, bytes = 0;
    for (int r = 0; r < RUNS; r++) {
        double t0 = now();
        size_t n;
        char *text = slurp(path, &n);
        double t1 = now();
        if (!text) {
            perror(path);
            return 1;
        }
        QasmCircuit c;
        char err[256];
        if (qasm_parse(text, n, &c, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        double t2 = now();
        nops = c.nops;
        bytes = n;
        qasm_free(&c);
        free(text);
        tr[r] = t1 - t0;
        tp[r] = t2 - t0;
    }
    qsort(tr, RUNS, sizeof(double), cmp);
    qsort(tp, RUNS, sizeof(double), cmp);
    printf("OpenQASM import: %d gates written (%zu ops after expansion, %zu bytes), median of %d "
           "runs\n",
           gates, nops, bytes, RUNS);
    printf("  read the bytes only   %8.2f ms\n", 1e3 * tr[RUNS / 2]);
    printf(
        "  read + qasm_parse     %8.2f ms   (%.1fx the read; bar: <= 50 ms -> %.2f of the bar)\n",
        1e3 * tp[RUNS / 2], tp[RUNS / 2] / tr[RUNS / 2], tp[RUNS / 2] / 0.050);
    if (argc <= 1) unlink(path);
    return 0;
}
