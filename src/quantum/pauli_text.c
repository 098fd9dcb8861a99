/* pauli_text.c — the Pauli-sum text reader (pauli_text.h): a hand-written
 * recursive-descent parser over the three spellings. Grammar:
 *   sum    -> sign? term (('+' | '-') term)*
 *   term   -> coeff ('*')? word? | word      (a bare coeff: the identity)
 *   word   -> '[' factor* ']' | factor (('@' | '*')? factor)*
 *   factor -> P wire | P '(' wire ')' | Pauli{X,Y,Z}(wire) | Identity(wire)
 *   coeff  -> number | number 'j' | '(' number (('+' | '-') number 'j')? ')'
 * Knows nothing of values or observables. */
#include "pauli_text.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct P {
    const char *s, *e, *p;
    char *err;
    size_t errlen;
    PtSum *out;
    int capt, capf;
} P;

/* Why: every error says where, as "line L, column C: WHAT". */
static int fail(P *p, const char *fmt, ...)
{
    int line = 1, col = 1;
    for (const char *q = p->s; q < p->p; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else if ((*q & 0xc0) != 0x80) {
            col++;
        }
    }
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(p->err, p->errlen, "line %d, column %d: %s", line, col, msg);
    return -1;
}

static void ws(P *p)
{
    while (p->p < p->e && isspace((unsigned char)*p->p)) p->p++;
}

static int at(P *p, char c) { return p->p < p->e && *p->p == c; }

/* a number (strtod's syntax, no sign handled here but its own) */
static int number(P *p, double *x)
{
    char buf[64];
    size_t n = 0;
    const char *q = p->p;
    if (q < p->e && (*q == '+' || *q == '-')) buf[n++] = *q++;
    while (q < p->e && n < sizeof buf - 1 &&
           (isdigit((unsigned char)*q) || *q == '.' || *q == 'e' || *q == 'E' ||
            ((*q == '+' || *q == '-') && (q[-1] == 'e' || q[-1] == 'E'))))
        buf[n++] = *q++;
    buf[n] = 0;
    char *end;
    double v = strtod(buf, &end);
    if (end == buf || (size_t)(end - buf) != n || (n == 1 && (buf[0] == '+' || buf[0] == '-')))
        return 0;
    p->p = q;
    *x = v;
    return 1;
}

static int looks_number(P *p)
{
    const char *q = p->p;
    if (q < p->e && (*q == '+' || *q == '-')) q++;
    return q < p->e && (isdigit((unsigned char)*q) || *q == '.');
}

/* coeff -> number | number 'j' | '(' number (sign number 'j')? ')' */
static int coeff(P *p, double *re, double *im)
{
    *re = *im = 0;
    if (at(p, '(')) {
        const char *save = p->p;
        p->p++;
        ws(p);
        double a;
        if (!looks_number(p)) { /* not a coefficient: a factor such as (X0)? */
            p->p = save;
            return 0;
        }
        if (!number(p, &a)) return fail(p, "expected a number");
        ws(p);
        if (at(p, 'j')) {
            p->p++;
            *im = a;
        } else {
            *re = a;
            if (at(p, '+') || at(p, '-')) {
                double b;
                if (!number(p, &b))
                    return fail(p, "expected the imaginary part of a complex number");
                if (!at(p, 'j')) return fail(p, "expected 'j' after the imaginary part");
                p->p++;
                *im = b;
            }
        }
        ws(p);
        if (!at(p, ')')) return fail(p, "expected ')' to close the coefficient");
        p->p++;
        return 1;
    }
    if (!looks_number(p)) return 0;
    double a;
    if (!number(p, &a)) return fail(p, "expected a number");
    if (at(p, 'j')) {
        p->p++;
        *im = a;
    } else
        *re = a;
    return 1;
}

/* factor -> P wire | P(wire) | PauliX(wire) | Identity(wire); 0 if none here */
static int factor(P *p, PtFactor *f)
{
    const char *q = p->p;
    static const char *const longs[] = { "PauliX", "PauliY", "PauliZ", "Identity" };
    char c = 0;
    for (int i = 0; i < 4 && !c; i++) {
        size_t l = strlen(longs[i]);
        if ((size_t)(p->e - q) >= l && memcmp(q, longs[i], l) == 0) {
            c = i < 3 ? longs[i][5] : 'I';
            q += l;
        }
    }
    if (!c) {
        if (q >= p->e || !strchr("XYZI", *q) || !*q) return 0;
        c = *q++;
    }
    int paren = q < p->e && *q == '(';
    if (paren) q++;
    if (q >= p->e || !isdigit((unsigned char)*q)) {
        p->p = q;
        return fail(p, "expected a wire number after %c", c);
    }
    long w = 0;
    while (q < p->e && isdigit((unsigned char)*q)) {
        w = w * 10 + (*q++ - '0');
        if (w >= PT_MAX_WIRE) {
            p->p = q;
            return fail(p, "wire number too large");
        }
    }
    if (paren) {
        if (q >= p->e || *q != ')') {
            p->p = q;
            return fail(p, "expected ')' after the wire number");
        }
        q++;
    }
    if (q < p->e && (isalnum((unsigned char)*q) || *q == '_')) {
        p->p = q;
        return fail(p, "unexpected '%c' after a Pauli factor", *q);
    }
    p->p = q;
    f->pauli = c;
    f->wire = w;
    return 1;
}

static int push_factor(P *p, PtFactor f, int first)
{
    for (int i = first; i < p->out->nf; i++)
        if (p->out->f[i].wire == f.wire)
            return fail(p, "wire %ld appears twice in one term", f.wire);
    if (p->out->nf == p->capf) {
        p->capf = p->capf ? 2 * p->capf : 16;
        PtFactor *nf = realloc(p->out->f, (size_t)p->capf * sizeof *nf);
        if (!nf) return fail(p, "out of memory");
        p->out->f = nf;
    }
    p->out->f[p->out->nf++] = f;
    return 0;
}

/* word -> '[' factor* ']' | factor (('@' | '*')? factor)* */
static int word(P *p, int first, int *n)
{
    PtFactor f;
    *n = 0;
    if (at(p, '[')) {
        p->p++;
        for (;;) {
            ws(p);
            if (at(p, ']')) {
                p->p++;
                return 0;
            }
            int k = factor(p, &f);
            if (k < 0) return -1;
            if (!k) return fail(p, "expected a Pauli factor (X0, Y1, Z2, I3) or ']'");
            if (push_factor(p, f, first)) return -1;
            (*n)++;
        }
    }
    for (;;) {
        const char *save = p->p;
        ws(p);
        int sep = at(p, '@') || at(p, '*');
        if (sep && *n) {
            p->p++;
            ws(p);
        } else if (sep) {
            p->p = save;
            return 0;
        }
        int k = factor(p, &f);
        if (k < 0) return -1;
        if (!k) {
            if (sep) return fail(p, "expected a Pauli factor after '%c'", p->p[-1]);
            p->p = save;
            return 0;
        }
        if (push_factor(p, f, first)) return -1;
        (*n)++;
    }
}

static int term(P *p, double sign)
{
    ws(p);
    PtTerm t = { 1, 0, p->out->nf, 0 };
    double re, im;
    int has = coeff(p, &re, &im);
    if (has < 0) return -1;
    if (has) {
        t.re = re;
        t.im = im;
        ws(p);
        if (at(p, '*')) {
            p->p++;
            ws(p);
        }
    }
    int paren = !has && at(p, '(');
    if (paren) { /* qh's "(X0 @ Y1)" group */
        p->p++;
        ws(p);
    }
    if (word(p, t.first, &t.n)) return -1;
    if (paren) {
        ws(p);
        if (!at(p, ')')) return fail(p, "expected ')'");
        p->p++;
    }
    if (!has && t.n == 0 && !(p->p > p->s && p->p[-1] == ']'))
        return fail(p, "expected a coefficient or a Pauli word");
    t.re *= sign;
    t.im *= sign;
    if (p->out->nt == p->capt) {
        p->capt = p->capt ? 2 * p->capt : 16;
        PtTerm *nt = realloc(p->out->t, (size_t)p->capt * sizeof *nt);
        if (!nt) return fail(p, "out of memory");
        p->out->t = nt;
    }
    p->out->t[p->out->nt++] = t;
    return 0;
}

int pt_parse(const char *s, size_t len, PtSum *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    P p = { s, s + len, s, err, errlen, out, 0, 0 };
    ws(&p);
    if (p.p == p.e) {
        fail(&p, "empty text: expected a Pauli sum such as \"0.5 X0 Y1 - 0.2 Z0\"");
        return -1;
    }
    double sign = 1;
    if (at(&p, '-') && !looks_number(&p)) {
        sign = -1;
        p.p++;
    } else if (at(&p, '+') && !looks_number(&p))
        p.p++;
    for (;;) {
        if (term(&p, sign)) {
            pt_free(out);
            return -1;
        }
        ws(&p);
        if (p.p == p.e) return 0;
        if (!at(&p, '+') && !at(&p, '-')) {
            fail(&p, "expected '+' or '-' between terms, found '%c'", *p.p);
            pt_free(out);
            return -1;
        }
        sign = *p.p == '-' ? -1 : 1;
        p.p++;
    }
}

void pt_free(PtSum *p)
{
    free(p->t);
    free(p->f);
    memset(p, 0, sizeof *p);
}
