/* pauli_text.h — a Pauli sum from text (prefix pt_): "0.5 X0 Y1 - 0.2 Z0",
 * OpenFermion's QubitOperator form "0.5 [X0 Y1] +\n-0.2 [Z0]" (complex
 * coefficients "(0.5+0j)", identity terms "[]") and qh's own printed form
 * "0.5 * PauliX(0) @ PauliY(1) - 0.2 * PauliZ(0)" read into a list of
 * terms. Errors name the column (and line) of the text. Pure C: knows
 * nothing of values or observables. */
#ifndef QH_PAULI_TEXT_H
#define QH_PAULI_TEXT_H

#include <stddef.h>

typedef struct PtFactor {
    char pauli; /* 'X', 'Y', 'Z' or 'I' */
    long wire;
} PtFactor;

typedef struct PtTerm {
    double re, im; /* the coefficient */
    int first, n;  /* its factors: f[first .. first + n) */
} PtTerm;

typedef struct PtSum {
    PtTerm *t;
    int nt;
    PtFactor *f;
    int nf;
} PtSum;

/* Parses s (len bytes). 0, or -1 with "line L, column C: ..." in err. A
 * wire may appear once per term; wires are below PT_MAX_WIRE. */
#define PT_MAX_WIRE 1000000L
int pt_parse(const char *s, size_t len, PtSum *out, char *err, size_t errlen);
void pt_free(PtSum *p);

#endif
