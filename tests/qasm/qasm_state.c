/* qasm_state.c — test driver: the state an OpenQASM file prepares from |0..0>.
 *
 * Reads FILE with the qasm room, applies its gates with the statevector
 * room (global phases included), skips final measurements, and prints
 * the number of qubits and then one amplitude per line ("re im", wire 0 =
 * most significant bit). Resets and conditions are refused (they need a
 * random draw). Used by check_qasm.py against its own reference.
 *
 *   qasm_state FILE
 */
#include <complex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qasm.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: qasm_state FILE\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    QasmCircuit c;
    char err[512];
    if (qasm_parse(buf, n, &c, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", argv[1], err);
        return 1;
    }
    free(buf);
    if (c.nqubits > 24) {
        fprintf(stderr, "%s: too many qubits\n", argv[1]);
        return 1;
    }
    SvState s;
    if (sv_init(&s, c.nqubits) != 0) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    cplx phase = 1;
    for (size_t i = 0; i < c.nops; i++) {
        const QasmOp *o = &c.ops[i];
        if (o->cond >= 0 || o->kind == QASM_RESET) {
            fprintf(stderr, "%s: reset or condition\n", argv[1]);
            return 1;
        }
        if (o->kind == QASM_MEASURE) continue;
        if (o->kind == QASM_GPHASE) {
            phase *= cexp(I * o->params[0]);
            continue;
        }
        SvOp op;
        qasm_svop(o, &op);
        if (sv_apply(&s, &op, err, sizeof err) != 0) {
            fprintf(stderr, "line %d: %s\n", o->line, err);
            return 1;
        }
    }
    printf("%d\n", c.nqubits);
    for (size_t i = 0; i < s.dim; i++) {
        cplx a = phase * s.amp[i];
        printf("%.17g %.17g\n", creal(a), cimag(a));
    }
    sv_free(&s);
    qasm_free(&c);
    return 0;
}
