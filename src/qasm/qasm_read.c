/* qasm_read.c — OpenQASM text to a flat circuit.
 *
 * The text is cut into tokens once; statements are read straight off the
 * token array and turned into ops as they are read. A `gate` definition
 * is kept as the token range of its body and read again, with its
 * parameters and qubits bound, wherever it is applied (so modifiers and
 * broadcasting need no tree). Modifiers normalise to controls (negative
 * ones conjugated by X), an adjoint (the ops of the expansion reversed
 * and each inverted) and a power (integer: repeats; other: scaled angles
 * of the rotation-like gates). Must not know about the language.
 */
#include "qasm.h"
#include "qh_assert.h"
#include "stop.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tokens --------------------------------------------------------------- */

typedef enum Tk { T_ID, T_NUM, T_STR, T_SYM, T_END } Tk;

typedef struct Tok {
    Tk kind;
    const char *s;
    int len;
    int line;
    double num;
} Tok;

typedef struct GateDef {
    char name[64];
    int nparams, nqubits;
    char pnames[8][32];
    char qnames[16][32];
    int body, body_end; /* token range of the body (inside the braces) */
    int prev;           /* the definition of the same name before it, or -1 */
    int opaque;
} GateDef;

typedef struct Env { /* a gate body's bindings */
    const GateDef *g;
    const double *params;
    const int *wires;
} Env;

/* A name -> index table (open addressing, FNV-1a): files with many
   registers or gate definitions are read in linear time. */
typedef struct Names {
    const char **keys; /* borrowed: the names live in the defs / registers */
    int *vals;
    size_t cap, n;
} Names;

static size_t name_hash(const char *s)
{
    size_t h = 1469598103934665603ull & SIZE_MAX;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * (size_t)1099511628211ull;
    return h;
}

static int names_get(const Names *t, const char *s)
{
    if (!t->cap) return -1;
    for (size_t i = name_hash(s) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        if (!t->keys[i]) return -1;
        if (strcmp(t->keys[i], s) == 0) return t->vals[i];
    }
}

/* Sets (or replaces) s -> v; the key must stay valid while the table lives
   (when replacing, the new key is stored). 0, or -1: out of memory. */
static int names_set(Names *t, const char *s, int v)
{
    if (2 * (t->n + 1) > t->cap) {
        size_t nc = t->cap ? 2 * t->cap : 64;
        const char **nk = calloc(nc, sizeof *nk);
        int *nv = calloc(nc, sizeof *nv);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return -1;
        }
        for (size_t i = 0; i < t->cap; i++)
            if (t->keys[i]) {
                size_t j = name_hash(t->keys[i]) & (nc - 1);
                while (nk[j]) j = (j + 1) & (nc - 1);
                nk[j] = t->keys[i];
                nv[j] = t->vals[i];
            }
        free(t->keys);
        free(t->vals);
        t->keys = nk;
        t->vals = nv;
        t->cap = nc;
    }
    size_t i = name_hash(s) & (t->cap - 1);
    while (t->keys[i] && strcmp(t->keys[i], s) != 0) i = (i + 1) & (t->cap - 1);
    if (!t->keys[i]) t->n++;
    t->keys[i] = s;
    t->vals[i] = v;
    return 0;
}

static void names_free(Names *t)
{
    free(t->keys);
    free(t->vals);
    memset(t, 0, sizeof *t);
}

typedef struct Rd {
    Tok *t;
    int nt, pos, capt;
    int scope; /* the gate definitions a body sees: those before its own (INT_MAX at the top) */
    QasmCircuit *c;
    GateDef *defs;
    int ndefs, capdefs;
    int ctrl[SV_MAX_WIRES]; /* controls added by enclosing modifiers */
    int nctrl;
    int cond;                       /* the condition of the statement being read */
    int depth;                      /* nesting of gate expansions */
    int edepth;                     /* nesting of an expression */
    long steps;                     /* gate applications and statements read (QASM_MAX_STEPS) */
    Names defnames, qnames, cnames; /* hashed look-ups: gate definitions, registers */
    char *err;
    size_t errlen;
    int failed;
} Rd;

static int rd_err(Rd *r, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int rd_err(Rd *r, int line, const char *fmt, ...)
{
    if (r->failed) return -1;
    r->failed = 1;
    if (r->err && r->errlen) {
        int k = snprintf(r->err, r->errlen, "line %d: ", line);
        if (k < 0) k = 0;
        if ((size_t)k < r->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(r->err + k, r->errlen - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

static int lex(const char *s, size_t len, Rd *r)
{
    /* appended to the tokens read so far (the prelude's), over their end */
    int cap = r->capt ? r->capt : 256, line = 1;
    if (!r->t) {
        r->t = malloc((size_t)cap * sizeof(Tok));
        if (!r->t) return rd_err(r, 1, "out of memory");
        r->nt = 0;
    } else if (r->nt > 0) {
        r->nt--;
    }
    const char *p = s, *e = s + len;
    for (;;) {
        while (p < e) {
            if (*p == '\n') {
                line++;
                p++;
            } else if (isspace((unsigned char)*p))
                p++;
            else if (p + 1 < e && p[0] == '/' && p[1] == '/') {
                while (p < e && *p != '\n') p++;
            } else if (p + 1 < e && p[0] == '/' && p[1] == '*') {
                p += 2;
                while (p + 1 < e && !(p[0] == '*' && p[1] == '/')) {
                    if (*p == '\n') line++;
                    p++;
                }
                if (p + 1 >= e) return rd_err(r, line, "unterminated comment");
                p += 2;
            } else
                break;
        }
        if (r->nt + 1 >= cap) {
            cap *= 2;
            Tok *nt = realloc(r->t, (size_t)cap * sizeof(Tok));
            if (!nt) return rd_err(r, line, "out of memory");
            r->t = nt;
            r->capt = cap;
        }
        Tok *t = &r->t[r->nt];
        t->line = line;
        t->s = p;
        t->num = 0;
        if (p >= e) {
            t->kind = T_END;
            t->len = 0;
            r->nt++;
            return 0;
        }
        unsigned char ch = (unsigned char)*p;
        if (isalpha(ch) || ch == '_' || ch >= 0x80) {
            if (ch >= 0x80 &&
                !(e - p >= 2 && (unsigned char)p[0] == 0xCF && (unsigned char)p[1] == 0x80))
                return rd_err(r, line, "unexpected character");
            if (ch >= 0x80)
                p += 2; /* π */
            else
                while (p < e && (isalnum((unsigned char)*p) || *p == '_')) p++;
            t->kind = T_ID;
        } else if (isdigit(ch) || (ch == '.' && p + 1 < e && isdigit((unsigned char)p[1]))) {
            char *end;
            t->num = strtod(p, &end);
            if (end > e) end = (char *)e;
            p = end;
            t->kind = T_NUM;
        } else if (ch == '"') {
            p++;
            while (p < e && *p != '"' && *p != '\n') p++;
            if (p >= e || *p != '"') return rd_err(r, line, "unterminated string");
            p++;
            t->kind = T_STR;
        } else {
            static const char *two[] = { "->", "==", "!=", "<=", ">=", "&&", "||", "**", "++" };
            t->kind = T_SYM;
            p++;
            for (size_t k = 0; k < sizeof two / sizeof two[0]; k++)
                if (e - t->s >= 2 && memcmp(t->s, two[k], 2) == 0) {
                    p = t->s + 2;
                    break;
                }
        }
        t->len = (int)(p - t->s);
        r->nt++;
    }
}

static Tok *cur(Rd *r) { return &r->t[r->pos]; }
static int is(Rd *r, const char *s)
{
    Tok *t = cur(r);
    return t->kind != T_END && t->kind != T_NUM && (int)strlen(s) == t->len &&
           memcmp(t->s, s, (size_t)t->len) == 0;
}
static int accept(Rd *r, const char *s)
{
    if (is(r, s)) {
        r->pos++;
        return 1;
    }
    return 0;
}
static int expect(Rd *r, const char *s)
{
    if (accept(r, s)) return 0;
    Tok *t = cur(r);
    if (t->kind == T_END) return rd_err(r, t->line, "expected '%s', got the end of the text", s);
    return rd_err(r, t->line, "expected '%s', got '%.*s'", s, t->len, t->s);
}
static int tok_eq(const Tok *t, const char *s)
{
    return (int)strlen(s) == t->len && memcmp(t->s, s, (size_t)t->len) == 0;
}

/* An identifier into buf; -1 if the current token is not one. */
static int ident(Rd *r, char *buf, size_t n, const char *what)
{
    Tok *t = cur(r);
    if (t->kind != T_ID) {
        if (t->kind == T_END)
            return rd_err(r, t->line, "expected %s, got the end of the text", what);
        return rd_err(r, t->line, "expected %s, got '%.*s'", what, t->len, t->s);
    }
    if ((size_t)t->len >= n) return rd_err(r, t->line, "name too long: '%.*s'", t->len, t->s);
    memcpy(buf, t->s, (size_t)t->len);
    buf[t->len] = 0;
    r->pos++;
    return 0;
}

/* ---- expressions (angles) ------------------------------------------------- */

static int expr(Rd *r, const Env *env, double *v);

static int primary(Rd *r, const Env *env, double *v)
{
    Tok *t = cur(r);
    if (t->kind == T_NUM) {
        r->pos++;
        *v = t->num;
        if (is(r, "im")) return rd_err(r, t->line, "complex numbers are not angles");
        return 0;
    }
    if (accept(r, "(")) {
        if (expr(r, env, v)) return -1;
        return expect(r, ")");
    }
    if (t->kind != T_ID) {
        if (t->kind == T_END)
            return rd_err(r, t->line, "expected an expression, got the end of the text");
        return rd_err(r, t->line, "expected an expression, got '%.*s'", t->len, t->s);
    }
    r->pos++;
    if (tok_eq(t, "pi") || tok_eq(t, "\xcf\x80")) {
        *v = M_PI;
        return 0;
    }
    if (tok_eq(t, "tau") || tok_eq(t, "\xcf\x84")) {
        *v = 2 * M_PI;
        return 0;
    }
    if (tok_eq(t, "euler")) {
        *v = M_E;
        return 0;
    }
    static const struct {
        const char *n;
        double (*f)(double);
    } fn[] = {
        { "sin", sin },   { "cos", cos },     { "tan", tan },     { "exp", exp },
        { "ln", log },    { "sqrt", sqrt },   { "asin", asin },   { "acos", acos },
        { "atan", atan }, { "arcsin", asin }, { "arccos", acos }, { "arctan", atan },
    };
    for (size_t k = 0; k < sizeof fn / sizeof fn[0]; k++)
        if (tok_eq(t, fn[k].n)) {
            double a;
            if (expect(r, "(") || expr(r, env, &a) || expect(r, ")")) return -1;
            *v = fn[k].f(a);
            return 0;
        }
    if (env)
        for (int i = 0; i < env->g->nparams; i++)
            if (tok_eq(t, env->g->pnames[i])) {
                *v = env->params[i];
                return 0;
            }
    return rd_err(r, t->line, "unknown name '%.*s' in an expression", t->len, t->s);
}

static int unary(Rd *r, const Env *env, double *v);

static int power(Rd *r, const Env *env, double *v)
{
    if (primary(r, env, v)) return -1;
    if (accept(r, "^") || accept(r, "**")) {
        double e;
        if (unary(r, env, &e)) return -1; /* right-associative */
        *v = pow(*v, e);
    }
    return 0;
}

static int unary(Rd *r, const Env *env, double *v)
{
    /* every recursion of an expression (parentheses, signs, powers,
       function calls) passes here */
    if (r->edepth >= QASM_MAX_NESTING)
        return rd_err(r, cur(r)->line, "expression nested deeper than %d", QASM_MAX_NESTING);
    r->edepth++;
    int rc;
    if (accept(r, "-")) {
        rc = unary(r, env, v);
        if (!rc) *v = -*v;
    } else if (accept(r, "+")) {
        rc = unary(r, env, v);
    } else {
        rc = power(r, env, v);
    }
    r->edepth--;
    return rc;
}

static int term(Rd *r, const Env *env, double *v)
{
    if (unary(r, env, v)) return -1;
    for (;;) {
        int mul = is(r, "*"), div = is(r, "/");
        if (!mul && !div) return 0;
        r->pos++;
        double b;
        if (unary(r, env, &b)) return -1;
        *v = mul ? *v * b : *v / b;
    }
}

static int expr(Rd *r, const Env *env, double *v)
{
    if (term(r, env, v)) return -1;
    for (;;) {
        int add = is(r, "+"), sub = is(r, "-");
        if (!add && !sub) return 0;
        r->pos++;
        double b;
        if (term(r, env, &b)) return -1;
        *v = add ? *v + b : *v - b;
    }
}

/* ---- circuits ------------------------------------------------------------- */

void qasm_svop(const QasmOp *o, SvOp *op)
{
    memset(op, 0, sizeof *op);
    op->gate = o->gate;
    op->adjoint = o->adjoint;
    op->nparams = o->nparams;
    memcpy(op->params, o->params, sizeof op->params);
    op->bits = o->bits;
    op->nctrl = o->nctrl;
    op->nwires = o->nwires;
    for (int k = 0; k < o->nctrl; k++) op->ctrl[k] = o->wires[k];
    for (int k = 0; k < o->nwires; k++) op->wires[k] = o->wires[o->nctrl + k];
}

void qasm_init(QasmCircuit *c, int nqubits, int nclbits)
{
    memset(c, 0, sizeof *c);
    c->nqubits = nqubits;
    c->nclbits = nclbits;
    c->version = 2;
}

void qasm_free(QasmCircuit *c)
{
    if (!c) return;
    free(c->qregs);
    free(c->cregs);
    free(c->ops);
    free(c->pool);
    free(c->conds);
    memset(c, 0, sizeof *c);
}

/* Why: ops point into the pool, which moves when it grows; they are
   re-pointed after each growth. */
QasmOp *qasm_add(QasmCircuit *c, QasmKind kind, const int *wires, int nctrl, int nwires)
{
    int nw = nctrl + nwires;
    if (c->npool + (size_t)nw > c->cappool) {
        size_t cap = c->cappool ? c->cappool : 256;
        while (cap < c->npool + (size_t)nw) cap *= 2;
        int *np = realloc(c->pool, cap * sizeof(int));
        if (!np) return NULL;
        if (np != c->pool) {
            for (size_t i = 0; i < c->nops; i++)
                if (c->ops[i].wires) c->ops[i].wires = np + (c->ops[i].wires - c->pool);
        }
        c->pool = np;
        c->cappool = cap;
    }
    if (c->nops == c->capops) {
        size_t cap = c->capops ? 2 * c->capops : 64;
        QasmOp *no = realloc(c->ops, cap * sizeof(QasmOp));
        if (!no) return NULL;
        c->ops = no;
        c->capops = cap;
    }
    QasmOp *op = &c->ops[c->nops++];
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->nctrl = nctrl;
    op->nwires = nwires;
    op->wires = c->pool ? c->pool + c->npool : NULL;
    op->cond = -1;
    op->clbit = -1;
    if (nw) memcpy(op->wires, wires, (size_t)nw * sizeof(int));
    c->npool += (size_t)nw;
    return op;
}

int qasm_copy(const QasmCircuit *src, QasmCircuit *dst)
{
    qasm_init(dst, src->nqubits, src->nclbits);
    dst->version = src->version;
    size_t nq = (size_t)src->nqregs, nc = (size_t)src->ncregs;
    dst->qregs = nq ? malloc(nq * sizeof(QasmReg)) : NULL;
    dst->cregs = nc ? malloc(nc * sizeof(QasmReg)) : NULL;
    dst->ops = src->nops ? malloc(src->nops * sizeof(QasmOp)) : NULL;
    dst->pool = src->npool ? malloc(src->npool * sizeof(int)) : NULL;
    dst->conds = src->nconds ? malloc(src->nconds * sizeof(QasmCond)) : NULL;
    if ((nq && !dst->qregs) || (nc && !dst->cregs) || (src->nops && !dst->ops) ||
        (src->npool && !dst->pool) || (src->nconds && !dst->conds)) {
        qasm_free(dst);
        return -1;
    }
    if (nq) memcpy(dst->qregs, src->qregs, nq * sizeof(QasmReg));
    if (nc) memcpy(dst->cregs, src->cregs, nc * sizeof(QasmReg));
    if (src->npool) memcpy(dst->pool, src->pool, src->npool * sizeof(int));
    if (src->nconds) memcpy(dst->conds, src->conds, src->nconds * sizeof(QasmCond));
    for (size_t i = 0; i < src->nops; i++) {
        dst->ops[i] = src->ops[i];
        dst->ops[i].wires =
            src->ops[i].wires && dst->pool ? dst->pool + (src->ops[i].wires - src->pool) : NULL;
    }
    dst->nqregs = src->nqregs;
    dst->ncregs = src->ncregs;
    dst->nops = dst->capops = src->nops;
    dst->npool = dst->cappool = src->npool;
    dst->nconds = dst->capconds = src->nconds;
    return 0;
}

int qasm_add_cond(QasmCircuit *c, const QasmCond *cond)
{
    if (c->nconds == c->capconds) {
        size_t cap = c->capconds ? 2 * c->capconds : 8;
        QasmCond *n = realloc(c->conds, cap * sizeof(QasmCond));
        if (!n) return -1;
        c->conds = n;
        c->capconds = cap;
    }
    c->conds[c->nconds] = *cond;
    return (int)c->nconds++;
}

static int step(Rd *r, int line);

/* Why: one place turns a primitive into an op: the enclosing controls are
   added, a controlled global phase becomes a PhaseShift on a control, and
   wires are checked distinct with the line in the message. */
typedef struct Prim {
    QasmKind kind;
    SvGate g;
    int adj;
    const double *p; /* np parameters */
    int np;
    const int *ctrl; /* nc controls, after the enclosing ones */
    int nc;
    const int *tw; /* nt target wires */
    int nt;
} Prim;

static int emit(Rd *r, int line, const Prim *e)
{
    QasmKind kind = e->kind;
    SvGate g = e->g;
    int adj = e->adj, np = e->np, nc = e->nc, nt = e->nt;
    const double *p = e->p;
    const int *ctrl = e->ctrl, *tw = e->tw;
    qh_assert(np >= 0 && np <= 4 && nc >= 0 && nt >= 0); /* QasmOp.params holds 4 */
    int w[SV_MAX_WIRES * 2], n = 0;
    for (int i = 0; i < r->nctrl; i++) w[n++] = r->ctrl[i];
    for (int i = 0; i < nc; i++) w[n++] = ctrl[i];
    int totc = n;
    for (int i = 0; i < nt; i++) w[n++] = tw[i];
    if (n > SV_MAX_WIRES) return rd_err(r, line, "too many wires (%d)", n);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (w[i] == w[j])
                return rd_err(r, line, "%s: a qubit is used twice (%d)",
                              kind == QASM_GPHASE ? "gphase" : sv_gate_info(g)->name, w[i]);
    if (kind == QASM_GPHASE && totc > 0) { /* e^{i a} on |1..1> of the controls */
        kind = QASM_GATE;
        g = SV_PHASESHIFT;
        totc--;
    }
    if (step(r, line)) return -1;
    QasmOp *op = qasm_add(r->c, kind, w, totc, n - totc);
    if (!op) return rd_err(r, line, "out of memory");
    op->gate = g;
    op->adjoint = adj;
    op->nparams = np;
    for (int i = 0; i < np; i++) op->params[i] = p[i];
    op->cond = r->cond;
    op->line = line;
    return 0;
}

/* ---- built-in gates ------------------------------------------------------- */

typedef struct Builtin {
    const char *name;
    int nq, np;
} Builtin;

static const Builtin builtins[] = {
    { "U", 1, 3 },      { "u3", 1, 3 },    { "u", 1, 3 },    { "u2", 1, 2 },  { "u1", 1, 1 },
    { "p", 1, 1 },      { "phase", 1, 1 }, { "u0", 1, 1 },   { "CX", 2, 0 },  { "cx", 2, 0 },
    { "id", 1, 0 },     { "x", 1, 0 },     { "y", 1, 0 },    { "z", 1, 0 },   { "h", 1, 0 },
    { "s", 1, 0 },      { "sdg", 1, 0 },   { "t", 1, 0 },    { "tdg", 1, 0 }, { "sx", 1, 0 },
    { "sxdg", 1, 0 },   { "rx", 1, 1 },    { "ry", 1, 1 },   { "rz", 1, 1 },  { "cz", 2, 0 },
    { "cy", 2, 0 },     { "ch", 2, 0 },    { "swap", 2, 0 }, { "ccx", 3, 0 }, { "cswap", 3, 0 },
    { "crx", 2, 1 },    { "cry", 2, 1 },   { "crz", 2, 1 },  { "cu1", 2, 1 }, { "cp", 2, 1 },
    { "cphase", 2, 1 }, { "cu3", 2, 3 },   { "cu", 2, 4 },   { "csx", 2, 0 }, { "rxx", 2, 1 },
    { "ryy", 2, 1 },    { "rzz", 2, 1 },   { "c3x", 4, 0 },  { "c4x", 5, 0 }, { "c3sqrtx", 4, 0 },
    { "gphase", 0, 1 },
};

static const Builtin *builtin(const char *name)
{
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(builtins[i].name, name) == 0) return &builtins[i];
    return NULL;
}

/* Why: each qelib1/stdgates gate as PennyLane gates (OpenQASM 3 phases). */
static int apply_builtin(Rd *r, int line, const char *n, const double *p, const int *q, int adj)
{
#define G(gate, np_, nc_, nt_) \
    emit(r, line, &(Prim){ QASM_GATE, gate, adj, p, np_, q, nc_, q + (nc_), nt_ })
    double a[3];
    if (!strcmp(n, "U") || !strcmp(n, "u3") || !strcmp(n, "u")) return G(SV_U3, 3, 0, 1);
    if (!strcmp(n, "u2")) {
        a[0] = M_PI / 2;
        a[1] = p[0];
        a[2] = p[1];
        return emit(r, line, &(Prim){ QASM_GATE, SV_U3, adj, a, 3, NULL, 0, q, 1 });
    }
    if (!strcmp(n, "u1") || !strcmp(n, "p") || !strcmp(n, "phase"))
        return G(SV_PHASESHIFT, 1, 0, 1);
    if (!strcmp(n, "u0")) return 0;
    if (!strcmp(n, "CX") || !strcmp(n, "cx")) return G(SV_CNOT, 0, 0, 2);
    if (!strcmp(n, "id")) return G(SV_IDENTITY, 0, 0, 1);
    if (!strcmp(n, "x")) return G(SV_PAULIX, 0, 0, 1);
    if (!strcmp(n, "y")) return G(SV_PAULIY, 0, 0, 1);
    if (!strcmp(n, "z")) return G(SV_PAULIZ, 0, 0, 1);
    if (!strcmp(n, "h")) return G(SV_HADAMARD, 0, 0, 1);
    if (!strcmp(n, "s")) return G(SV_S, 0, 0, 1);
    if (!strcmp(n, "t")) return G(SV_T, 0, 0, 1);
    if (!strcmp(n, "sx")) return G(SV_SX, 0, 0, 1);
    if (!strcmp(n, "sdg"))
        return emit(r, line, &(Prim){ QASM_GATE, SV_S, !adj, p, 0, NULL, 0, q, 1 });
    if (!strcmp(n, "tdg"))
        return emit(r, line, &(Prim){ QASM_GATE, SV_T, !adj, p, 0, NULL, 0, q, 1 });
    if (!strcmp(n, "sxdg"))
        return emit(r, line, &(Prim){ QASM_GATE, SV_SX, !adj, p, 0, NULL, 0, q, 1 });
    if (!strcmp(n, "rx")) return G(SV_RX, 1, 0, 1);
    if (!strcmp(n, "ry")) return G(SV_RY, 1, 0, 1);
    if (!strcmp(n, "rz")) return G(SV_RZ, 1, 0, 1);
    if (!strcmp(n, "cz")) return G(SV_CZ, 0, 0, 2);
    if (!strcmp(n, "cy")) return G(SV_CY, 0, 0, 2);
    if (!strcmp(n, "ch")) return G(SV_HADAMARD, 0, 1, 1);
    if (!strcmp(n, "swap")) return G(SV_SWAP, 0, 0, 2);
    if (!strcmp(n, "ccx")) return G(SV_TOFFOLI, 0, 0, 3);
    if (!strcmp(n, "cswap")) return G(SV_CSWAP, 0, 0, 3);
    if (!strcmp(n, "crx")) return G(SV_CRX, 1, 0, 2);
    if (!strcmp(n, "cry")) return G(SV_CRY, 1, 0, 2);
    if (!strcmp(n, "crz")) return G(SV_CRZ, 1, 0, 2);
    if (!strcmp(n, "cu1") || !strcmp(n, "cp") || !strcmp(n, "cphase")) return G(SV_CPHASE, 1, 0, 2);
    if (!strcmp(n, "cu3")) return G(SV_U3, 3, 1, 1);
    if (!strcmp(n, "cu")) { /* ctrl(e^{i gamma} U3(theta, phi, lambda)) */
        if (emit(r, line, &(Prim){ QASM_GATE, SV_PHASESHIFT, adj, p + 3, 1, NULL, 0, q, 1 }))
            return -1;
        return G(SV_U3, 3, 1, 1);
    }
    if (!strcmp(n, "csx")) return G(SV_SX, 0, 1, 1);
    if (!strcmp(n, "rxx")) return G(SV_ISINGXX, 1, 0, 2);
    if (!strcmp(n, "ryy")) return G(SV_ISINGYY, 1, 0, 2);
    if (!strcmp(n, "rzz")) return G(SV_ISINGZZ, 1, 0, 2);
    if (!strcmp(n, "c3x")) return G(SV_PAULIX, 0, 3, 1);
    if (!strcmp(n, "c4x")) return G(SV_PAULIX, 0, 4, 1);
    if (!strcmp(n, "c3sqrtx")) /* qelib1.inc's text: its phases make it ctrl^3(SX^dagger) */
        return emit(r, line, &(Prim){ QASM_GATE, SV_SX, !adj, p, 0, q, 3, q + 3, 1 });
    if (!strcmp(n, "gphase"))
        return emit(r, line,
                    &(Prim){ QASM_GPHASE, SV_IDENTITY, 0, adj ? (a[0] = -p[0], a) : p, 1, NULL, 0,
                             NULL, 0 });
#undef G
    return rd_err(r, line, "unknown gate '%s'", n);
}

/* Why: pow(k) with k not an integer: a rotation's angle scales; fixed
   gates that are phases or rotations in disguise get their angle form.
   Returns 1 if handled, 0 if the gate has no such form, -1 on error. */
static int apply_power(Rd *r, int line, const char *n, const double *p, const int *q, int adj,
                       double k)
{
    double a[4];
    static const struct {
        const char *n;
        SvGate g;
        double phase;
    } one[] = {
        { "rx", SV_RX, 0 },           { "ry", SV_RY, 0 },        { "rz", SV_RZ, 0 },
        { "u1", SV_PHASESHIFT, 0 },   { "p", SV_PHASESHIFT, 0 }, { "phase", SV_PHASESHIFT, 0 },
        { "crx", SV_CRX, 0 },         { "cry", SV_CRY, 0 },      { "crz", SV_CRZ, 0 },
        { "cu1", SV_CPHASE, 0 },      { "cp", SV_CPHASE, 0 },    { "cphase", SV_CPHASE, 0 },
        { "rxx", SV_ISINGXX, 0 },     { "ryy", SV_ISINGYY, 0 },  { "rzz", SV_ISINGZZ, 0 },
        { "gphase", SV_IDENTITY, 0 },
    };
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++)
        if (!strcmp(n, one[i].n)) {
            a[0] = k * p[0];
            if (one[i].g == SV_IDENTITY)
                return emit(r, line,
                            &(Prim){ QASM_GPHASE, SV_IDENTITY, 0, (a[0] = adj ? -a[0] : a[0], a), 1,
                                     NULL, 0, NULL, 0 })
                           ? -1
                           : 1;
            int nq = builtin(n)->nq;
            return emit(r, line, &(Prim){ QASM_GATE, one[i].g, adj, a, 1, NULL, 0, q, nq }) ? -1
                                                                                            : 1;
        }
    /* z = p(pi), s = p(pi/2), t = p(pi/4) (and their daggers); x = e^{i pi/2} rx(pi) */
    static const struct {
        const char *n;
        double ang;
        int kind;
    } ph[] = {
        { "z", M_PI, 0 },      { "s", M_PI / 2, 0 },     { "sdg", -M_PI / 2, 0 },
        { "t", M_PI / 4, 0 },  { "tdg", -M_PI / 4, 0 },  { "x", M_PI, 1 },
        { "sx", M_PI / 2, 1 }, { "sxdg", -M_PI / 2, 1 },
    };
    for (size_t i = 0; i < sizeof ph / sizeof ph[0]; i++)
        if (!strcmp(n, ph[i].n)) {
            double ang = k * ph[i].ang;
            if (ph[i].kind == 0) {
                a[0] = ang;
                return emit(r, line, &(Prim){ QASM_GATE, SV_PHASESHIFT, adj, a, 1, NULL, 0, q, 1 })
                           ? -1
                           : 1;
            }
            a[0] = adj ? -ang / 2 : ang / 2; /* X^k = e^{i k pi/2} RX(k pi) */
            if (emit(r, line, &(Prim){ QASM_GPHASE, SV_IDENTITY, 0, a, 1, NULL, 0, NULL, 0 }))
                return -1;
            a[0] = ang;
            return emit(r, line, &(Prim){ QASM_GATE, SV_RX, adj, a, 1, NULL, 0, q, 1 }) ? -1 : 1;
        }
    return 0;
}

/* ---- applying gates -------------------------------------------------------- */

static int body(Rd *r, const Env *env, int end);

/* Why: a file's own gate named like a built-in one replaces it from its
   definition on; inside a body, a name means what it meant before that
   definition (gate h a { h a; } wraps the built-in h). A name only defined
   later is still found (files that define gates out of order). */
static const GateDef *find_def(Rd *r, const char *name)
{
    int latest = names_get(&r->defnames, name), i = latest;
    while (i >= r->scope) i = r->defs[i].prev;
    if (i < 0 && latest >= 0 && !builtin(name)) i = latest;
    return i >= 0 && i < r->ndefs ? &r->defs[i] : NULL;
}

/* Why: a statement, a gate application, an op all count against the
   file's bounds (and a caller's interrupt is seen here). */
static int step(Rd *r, int line)
{
    if (++r->steps > QASM_MAX_STEPS)
        return rd_err(r, line,
                      "the circuit expands to more than %d gate applications (the limit of a file)",
                      QASM_MAX_STEPS);
    if (r->c->nops >= QASM_MAX_OPS)
        return rd_err(r, line,
                      "the circuit expands to more than %d operations (the limit of a file)",
                      QASM_MAX_OPS);
    if ((r->steps & 4095) == 0 && qh_stop_requested()) return rd_err(r, line, "interrupted");
    return 0;
}

/* Why: the adjoint of an expansion is its ops reversed, each inverted. */
static void invert_range(QasmCircuit *c, size_t from)
{
    for (size_t i = from, j = c->nops; i + 1 < j; i++, j--) {
        QasmOp t = c->ops[i];
        c->ops[i] = c->ops[j - 1];
        c->ops[j - 1] = t;
    }
    for (size_t i = from; i < c->nops; i++) {
        if (c->ops[i].kind == QASM_GPHASE)
            c->ops[i].params[0] = -c->ops[i].params[0];
        else
            c->ops[i].adjoint = !c->ops[i].adjoint;
    }
}

/* One application of a named gate (built-in or defined) to wires q. */
static int apply_named(Rd *r, int line, const char *name, const double *p, int np, const int *q,
                       int adj)
{
    const GateDef *d = find_def(r, name);
    if (!d) {
        const Builtin *b = builtin(name);
        if (!b) return rd_err(r, line, "unknown gate '%s'", name);
        if (np != b->np)
            return rd_err(r, line, "%s takes %d parameter%s, got %d", name, b->np,
                          b->np == 1 ? "" : "s", np);
        return apply_builtin(r, line, name, p, q, adj);
    }
    if (d->opaque) return rd_err(r, line, "opaque gate '%s' has no definition to apply", name);
    if (np != d->nparams)
        return rd_err(r, line, "%s takes %d parameter%s, got %d", name, d->nparams,
                      d->nparams == 1 ? "" : "s", np);
    if (r->depth > 64) return rd_err(r, line, "gate definitions nested too deeply (at '%s')", name);
    if (step(r, line)) return -1;
    Env env = { d, p, q };
    size_t from = r->c->nops;
    int save = r->pos, save_scope = r->scope;
    r->pos = d->body;
    r->scope = (int)(d - r->defs);
    r->depth++;
    int rc = body(r, &env, d->body_end);
    r->depth--;
    r->pos = save;
    r->scope = save_scope;
    if (rc) return -1;
    if (adj) invert_range(r->c, from);
    return 0;
}

typedef struct Mods {
    int adj;
    int nctrl;
    int ctrlneg[SV_MAX_WIRES]; /* per control qubit: 1 for negctrl */
    double pw;
} Mods;

/* Why: modifiers: negative controls are X-conjugated, controls pushed on
   the control stack, powers repeat or scale. q holds the controls first. */
static int apply_mods(Rd *r, int line, const char *name, const double *p, int np, const int *q,
                      const Mods *m)
{
    int nc = m->nctrl;
    for (int i = 0; i < nc; i++)
        if (m->ctrlneg[i] &&
            emit(r, line, &(Prim){ QASM_GATE, SV_PAULIX, 0, NULL, 0, NULL, 0, &q[i], 1 }))
            return -1;
    int save = r->nctrl;
    if (r->nctrl + nc > SV_MAX_WIRES) return rd_err(r, line, "too many controls");
    for (int i = 0; i < nc; i++) r->ctrl[r->nctrl++] = q[i];
    int rc = 0;
    double k = m->pw;
    if (k == floor(k) && fabs(k) <= 1e6) {
        long reps = labs((long)k);
        int adj = m->adj ^ (k < 0);
        for (long i = 0; i < reps && !rc; i++) rc = apply_named(r, line, name, p, np, q + nc, adj);
    } else {
        if (find_def(r, name))
            rc = rd_err(r, line, "pow(%g) of the defined gate '%s': only integer powers", k, name);
        else {
            const Builtin *b = builtin(name);
            if (!b)
                rc = rd_err(r, line, "unknown gate '%s'", name);
            else if (np != b->np)
                rc = rd_err(r, line, "%s takes %d parameter%s, got %d", name, b->np,
                            b->np == 1 ? "" : "s", np);
            else {
                int h = apply_power(r, line, name, p, q + nc, m->adj, k);
                if (h == 0)
                    rc =
                        rd_err(r, line,
                               "pow(%g) @ %s: non-integer powers only of rotations and phase gates",
                               k, name);
                else
                    rc = h < 0 ? -1 : 0;
            }
        }
    }
    r->nctrl = save;
    if (rc) return -1;
    for (int i = 0; i < nc; i++)
        if (m->ctrlneg[i] &&
            emit(r, line, &(Prim){ QASM_GATE, SV_PAULIX, 0, NULL, 0, NULL, 0, &q[i], 1 }))
            return -1;
    return 0;
}

/* ---- operands ------------------------------------------------------------- */

typedef struct Arg {
    int first, size;
    int line;
} Arg; /* wires first..first+size-1 (size 1: one qubit) */

static const QasmReg *find_reg_in(const Rd *r, int classical, const char *name)
{
    int i = names_get(classical ? &r->cnames : &r->qnames, name);
    if (classical) return i >= 0 && i < r->c->ncregs ? &r->c->cregs[i] : NULL;
    return i >= 0 && i < r->c->nqregs ? &r->c->qregs[i] : NULL;
}

/* A qubit (or, at the top level, a whole register) operand. */
static int operand(Rd *r, const Env *env, int classical, Arg *a)
{
    char name[64];
    a->line = cur(r)->line;
    if (ident(r, name, sizeof name, classical ? "a bit or register" : "a qubit or register"))
        return -1;
    if (env && !classical) {
        for (int i = 0; i < env->g->nqubits; i++)
            if (strcmp(env->g->qnames[i], name) == 0) {
                if (is(r, "["))
                    return rd_err(r, a->line, "'%s' is a qubit argument and cannot be indexed",
                                  name);
                a->first = env->wires[i];
                a->size = -1;
                return 0;
            }
        return rd_err(r, a->line, "unknown qubit '%s' in the body of gate '%s'", name,
                      env->g->name);
    }
    const QasmReg *reg = find_reg_in(r, classical, name);
    if (!reg) {
        if (!classical && find_reg_in(r, 1, name))
            return rd_err(r, a->line, "'%s' is a classical register, not qubits", name);
        return rd_err(r, a->line, "unknown %s register '%s'", classical ? "classical" : "quantum",
                      name);
    }
    if (accept(r, "[")) {
        Tok *t = cur(r);
        if (t->kind != T_NUM || t->num != floor(t->num))
            return rd_err(r, t->line, "expected an index");
        r->pos++;
        if (t->num < 0 || t->num >= reg->size)
            return rd_err(r, t->line, "index %g out of range for '%s' of size %d", t->num, name,
                          reg->size);
        a->first = reg->offset + (int)t->num;
        a->size = -1;
        return expect(r, "]");
    }
    a->first = reg->offset;
    a->size = reg->size;
    return 0;
}

/* Broadcast size of operands (registers of one size, single qubits). */
static int bcast(Rd *r, const Arg *a, int n, int line)
{
    int size = -1;
    for (int i = 0; i < n; i++)
        if (a[i].size >= 0) {
            if (size >= 0 && a[i].size != size)
                return rd_err(r, line, "registers of different sizes (%d and %d) in one statement",
                              size, a[i].size);
            size = a[i].size;
        }
    return size < 0 ? 1 : size;
}

static int wire_of(const Arg *a, int k) { return a->size < 0 ? a->first : a->first + k; }

/* ---- statements ------------------------------------------------------------ */

/* A gate call: [modifiers @]* name[(params)] operands ; */
static int gate_call(Rd *r, const Env *env)
{
    int line = cur(r)->line;
    Mods m = { 0, 0, { 0 }, 1.0 };
    char name[64];
    for (;;) {
        int neg = 0;
        if (is(r, "inv")) {
            r->pos++;
            m.adj ^= 1;
        } else if (is(r, "pow")) {
            r->pos++;
            double k;
            if (expect(r, "(") || expr(r, env, &k) || expect(r, ")")) return -1;
            m.pw *= k;
        } else if (is(r, "ctrl") || (neg = is(r, "negctrl"))) {
            r->pos++;
            double k = 1;
            if (accept(r, "(")) {
                if (expr(r, env, &k) || expect(r, ")")) return -1;
                if (k != floor(k) || k < 1 || k > 32)
                    return rd_err(r, line, "bad number of controls");
            }
            if (m.nctrl + (int)k > 32) return rd_err(r, line, "too many controls");
            for (int i = 0; i < (int)k; i++) m.ctrlneg[m.nctrl++] = neg;
        } else
            break;
        if (expect(r, "@")) return -1;
    }
    if (ident(r, name, sizeof name, "a gate name")) return -1;
    double p[8];
    int np = 0;
    if (accept(r, "(")) {
        if (!is(r, ")"))
            for (;;) {
                if (np == 8) return rd_err(r, line, "too many parameters");
                if (expr(r, env, &p[np++])) return -1;
                if (!accept(r, ",")) break;
            }
        if (expect(r, ")")) return -1;
    }
    Arg a[SV_MAX_WIRES];
    int na = 0;
    if (!is(r, ";"))
        for (;;) {
            if (na == SV_MAX_WIRES) return rd_err(r, line, "too many operands");
            if (operand(r, env, 0, &a[na++])) return -1;
            if (!accept(r, ",")) break;
        }
    if (expect(r, ";")) return -1;
    const GateDef *d = find_def(r, name);
    const Builtin *b = d ? NULL : builtin(name);
    if (!d && !b) return rd_err(r, line, "unknown gate '%s'", name);
    int want = (d ? d->nqubits : b->nq) + m.nctrl;
    if (na != want)
        return rd_err(r, line, "%s acts on %d qubit%s, got %d", name, want, want == 1 ? "" : "s",
                      na);
    int size = bcast(r, a, na, line);
    if (size < 0) return -1;
    for (int k = 0; k < size; k++) {
        int q[SV_MAX_WIRES];
        for (int i = 0; i < na; i++) q[i] = wire_of(&a[i], k);
        if (apply_mods(r, line, name, p, np, q, &m)) return -1;
    }
    return 0;
}

static int measure_stmt(Rd *r, const Arg *qa, const Arg *ca, int line)
{
    int nq = qa->size < 0 ? 1 : qa->size, nb = ca->size < 0 ? 1 : ca->size;
    if (nq != nb) return rd_err(r, line, "measure: the qubits and bits differ in number");
    int n = qa->size < 0 ? 1 : qa->size;
    for (int k = 0; k < n; k++) {
        int w = wire_of(qa, k);
        if (step(r, line)) return -1;
        QasmOp *op = qasm_add(r->c, QASM_MEASURE, &w, 0, 1);
        if (!op) return rd_err(r, line, "out of memory");
        op->clbit = wire_of(ca, k);
        op->cond = r->cond;
        op->line = line;
    }
    return 0;
}

static int statement(Rd *r, const Env *env);

/* Why: declarations add registers; wires and bits count in order. */
static int declare(Rd *r, int quantum, const char *name, int size, int line)
{
    if (size < 1 || size > 4096) return rd_err(r, line, "register '%s' of size %d", name, size);
    if (find_reg_in(r, 0, name) || find_reg_in(r, 1, name))
        return rd_err(r, line, "'%s' is already declared", name);
    QasmReg **regs = quantum ? &r->c->qregs : &r->c->cregs;
    int *n = quantum ? &r->c->nqregs : &r->c->ncregs;
    if (r->c->nqubits + (quantum ? size : 0) > 1000000 ||
        r->c->nclbits + (quantum ? 0 : size) > 1000000)
        return rd_err(r, line, "more than 1000000 %s in the file", quantum ? "qubits" : "bits");
    /* the array grows by doubling (capacity: the next power of two) */
    int moved = 0;
    if ((*n & (*n - 1)) == 0) {
        QasmReg *nr = realloc(*regs, (size_t)(*n ? 2 * *n : 1) * sizeof(QasmReg));
        if (!nr) return rd_err(r, line, "out of memory");
        moved = nr != *regs;
        *regs = nr;
    }
    QasmReg *g = &(*regs)[(*n)++];
    snprintf(g->name, sizeof g->name, "%s", name);
    /* the table's keys point into the array: rebuilt when it moved */
    Names *t = quantum ? &r->qnames : &r->cnames;
    if (moved) {
        names_free(t);
        for (int i = 0; i < *n; i++)
            if (names_set(t, (*regs)[i].name, i)) return rd_err(r, line, "out of memory");
    } else if (names_set(t, g->name, *n - 1)) {
        return rd_err(r, line, "out of memory");
    }
    g->size = size;
    if (quantum) {
        g->offset = r->c->nqubits;
        r->c->nqubits += size;
    } else {
        g->offset = r->c->nclbits;
        r->c->nclbits += size;
    }
    return 0;
}

static int int_tok(Rd *r, int *v)
{
    Tok *t = cur(r);
    if (t->kind != T_NUM || t->num != floor(t->num) || t->num < 0 || t->num > 1e9)
        return rd_err(r, t->line, "expected a whole number");
    *v = (int)t->num;
    r->pos++;
    return 0;
}

/* gate NAME [(p, ...)] a, b { ... }   /   opaque NAME [(p)] a, b ; */
static int gate_def(Rd *r, int opaque)
{
    int line = cur(r)->line;
    if (r->ndefs == r->capdefs) {
        int cap = r->capdefs ? 2 * r->capdefs : 16;
        GateDef *nd = realloc(r->defs, (size_t)cap * sizeof(GateDef));
        if (!nd) return rd_err(r, line, "out of memory");
        if (nd != r->defs) { /* the table's keys point into the array */
            names_free(&r->defnames);
            for (int i = 0; i < r->ndefs; i++)
                if (names_set(&r->defnames, nd[i].name, i)) return rd_err(r, line, "out of memory");
        }
        r->defs = nd;
        r->capdefs = cap;
    }
    GateDef *g = &r->defs[r->ndefs];
    memset(g, 0, sizeof *g);
    g->opaque = opaque;
    if (ident(r, g->name, sizeof g->name, "a gate name")) return -1;
    if (accept(r, "(")) {
        if (!is(r, ")"))
            for (;;) {
                if (g->nparams == 8) return rd_err(r, line, "too many parameters");
                if (ident(r, g->pnames[g->nparams++], 32, "a parameter name")) return -1;
                if (!accept(r, ",")) break;
            }
        if (expect(r, ")")) return -1;
    }
    for (;;) {
        if (g->nqubits == 16) return rd_err(r, line, "too many qubit arguments");
        if (ident(r, g->qnames[g->nqubits++], 32, "a qubit argument")) return -1;
        if (!accept(r, ",")) break;
    }
    if (opaque) {
        if (expect(r, ";")) return -1;
        if (builtin(g->name)) return 0; /* "the target has it": the built-in gate stays */
        g->prev = names_get(&r->defnames, g->name);
        if (names_set(&r->defnames, g->name, r->ndefs)) return rd_err(r, line, "out of memory");
        r->ndefs++;
        return 0;
    }
    if (expect(r, "{")) return -1;
    g->body = r->pos;
    int depth = 1;
    while (cur(r)->kind != T_END) {
        if (is(r, "{")) depth++;
        if (is(r, "}") && --depth == 0) break;
        r->pos++;
    }
    if (cur(r)->kind == T_END) return rd_err(r, line, "gate '%s': missing '}'", g->name);
    g->body_end = r->pos;
    r->pos++;
    /* a gate named like a built-in one replaces it in this file (as for any
       gate defined twice, the later definition counts from there on) */
    g->prev = names_get(&r->defnames, g->name);
    if (names_set(&r->defnames, g->name, r->ndefs)) return rd_err(r, line, "out of memory");
    r->ndefs++;
    return 0;
}

/* if (reg == n) / if (bit) / if (!bit) / if (bit == 0|1) */
static int condition(Rd *r, QasmCond *cd)
{
    int line = cur(r)->line;
    memset(cd, 0, sizeof *cd);
    if (expect(r, "(")) return -1;
    int neg = accept(r, "!");
    Arg a;
    if (operand(r, NULL, 1, &a)) return -1;
    if (a.size < 0) {
        cd->nbits = 1;
        cd->bits[0] = a.first;
    } else {
        if (a.size > 64) return rd_err(r, line, "condition on a register of more than 64 bits");
        cd->nbits = a.size;
        for (int i = 0; i < a.size; i++) cd->bits[i] = a.first + i;
    }
    int eq = is(r, "=="), ne = is(r, "!=");
    if (eq || ne) {
        if (neg) return rd_err(r, line, "'!' before a comparison");
        r->pos++;
        Tok *t = cur(r);
        if (t->kind != T_NUM || t->num != floor(t->num) || t->num < 0)
            return rd_err(r, t->line, "expected a whole number in the condition");
        /* the value exactly: decimal digits read as an integer (a double
           rounds past 2^53), anything else must be below 2^64 */
        uint64_t val = 0;
        int exact = 1, over = 0;
        for (int i = 0; i < t->len; i++) {
            char ch = t->s[i];
            if (ch < '0' || ch > '9') {
                exact = 0;
                break;
            }
            if (val > (UINT64_MAX - (uint64_t)(ch - '0')) / 10) over = 1;
            val = val * 10 + (uint64_t)(ch - '0');
        }
        if (!exact) {
            over = t->num >= 18446744073709551616.0;
            val = over ? 0 : (uint64_t)t->num;
        }
        if (over || (cd->nbits < 64 && val >> cd->nbits))
            return rd_err(r, t->line, "%.*s does not fit in %d bit%s", t->len, t->s, cd->nbits,
                          cd->nbits == 1 ? "" : "s");
        cd->value = val;
        cd->negate = ne;
        r->pos++;
    } else {
        if (cd->nbits != 1) return rd_err(r, line, "a register in a condition needs '== n'");
        cd->value = neg ? 0 : 1;
    }
    return expect(r, ")");
}

static int block_or_stmt(Rd *r, const Env *env)
{
    if (accept(r, "{")) {
        while (!is(r, "}")) {
            if (cur(r)->kind == T_END) return rd_err(r, cur(r)->line, "missing '}'");
            if (statement(r, env)) return -1;
        }
        r->pos++;
        return 0;
    }
    return statement(r, env);
}

/* reset q; (after 'reset'): a reset of each wire of q */
static int reset_stmt(Rd *r, int line)
{
    Arg qa;
    if (operand(r, NULL, 0, &qa) || expect(r, ";")) return -1;
    int n = qa.size < 0 ? 1 : qa.size;
    for (int k = 0; k < n; k++) {
        int w = wire_of(&qa, k);
        if (step(r, line)) return -1;
        QasmOp *op = qasm_add(r->c, QASM_RESET, &w, 0, 1);
        if (!op) return rd_err(r, line, "out of memory");
        op->cond = r->cond;
        op->line = line;
    }
    return 0;
}

/* if (c == v) stmt [else stmt] (after 'if'): the statements under the
 * condition and its negation */
static int if_stmt(Rd *r, int line)
{
    if (r->cond >= 0) return rd_err(r, line, "nested 'if' is not supported");
    QasmCond cd;
    if (condition(r, &cd)) return -1;
    int ci = qasm_add_cond(r->c, &cd);
    if (ci < 0) return rd_err(r, line, "out of memory");
    r->cond = ci;
    int rc = block_or_stmt(r, NULL);
    r->cond = -1;
    if (rc) return -1;
    if (accept(r, "else")) {
        cd.negate = !cd.negate;
        ci = qasm_add_cond(r->c, &cd);
        if (ci < 0) return rd_err(r, line, "out of memory");
        r->cond = ci;
        rc = block_or_stmt(r, NULL);
        r->cond = -1;
    }
    return rc;
}

static int statement(Rd *r, const Env *env)
{
    Tok *t = cur(r);
    int line = t->line;
    if (step(r, line)) return -1;
    if (t->kind != T_ID) {
        if (accept(r, ";")) return 0;
        return rd_err(r, line, "expected a statement, got '%.*s'", t->len, t->s);
    }
    if (env) { /* a gate body: gate calls and barriers only */
        if (accept(r, "barrier")) {
            while (!is(r, ";") && cur(r)->kind != T_END) r->pos++;
            return expect(r, ";");
        }
        if (is(r, "measure") || is(r, "reset") || is(r, "if"))
            return rd_err(r, line, "'%.*s' inside a gate definition", t->len, t->s);
        return gate_call(r, env);
    }
    if (accept(r, "OPENQASM")) {
        Tok *v = cur(r);
        if (v->kind != T_NUM) return rd_err(r, line, "expected a version number");
        if (v->num != 2.0 && v->num != 3.0 && v->num != 3.1 && v->num != 3.2)
            return rd_err(r, line, "unsupported OpenQASM version %g (2.0 or 3)", v->num);
        r->c->version = (int)v->num; /* checked first: no out-of-range conversion */
        r->pos++;
        return expect(r, ";");
    }
    if (accept(r, "include")) {
        Tok *f = cur(r);
        if (f->kind != T_STR) return rd_err(r, line, "expected a file name in quotes");
        r->pos++;
        if (!tok_eq(f, "\"qelib1.inc\"") && !tok_eq(f, "\"stdgates.inc\""))
            return rd_err(r, line, "cannot include %.*s (only qelib1.inc and stdgates.inc)", f->len,
                          f->s);
        return expect(r, ";");
    }
    if (is(r, "qreg") || is(r, "creg")) {
        int q = is(r, "qreg");
        r->pos++;
        char name[64];
        int size = 0;
        if (ident(r, name, sizeof name, "a register name") || expect(r, "[") || int_tok(r, &size) ||
            expect(r, "]") || expect(r, ";"))
            return -1;
        return declare(r, q, name, size, line);
    }
    if (is(r, "qubit") || is(r, "bit")) {
        int q = is(r, "qubit");
        r->pos++;
        int size = 1;
        if (accept(r, "[") && (int_tok(r, &size) || expect(r, "]"))) return -1;
        char name[64];
        if (ident(r, name, sizeof name, "a register name")) return -1;
        if (is(r, "=")) return rd_err(r, line, "initialised declarations are not supported");
        if (expect(r, ";")) return -1;
        return declare(r, q, name, size, line);
    }
    if (accept(r, "gate")) return gate_def(r, 0);
    if (accept(r, "opaque")) return gate_def(r, 1);
    if (accept(r, "barrier")) {
        while (!is(r, ";") && cur(r)->kind != T_END) r->pos++;
        return expect(r, ";");
    }
    if (accept(r, "measure")) {
        Arg qa, ca;
        if (operand(r, NULL, 0, &qa)) return -1;
        if (accept(r, "->")) {
            if (operand(r, NULL, 1, &ca) || expect(r, ";")) return -1;
            return measure_stmt(r, &qa, &ca, line);
        }
        if (expect(r, ";")) return -1;
        return rd_err(r, line, "measure without a target bit ('-> c' or 'c = measure q')");
    }
    if (accept(r, "reset")) return reset_stmt(r, line);
    if (accept(r, "if")) return if_stmt(r, line);
    static const char *unsupported[] = {
        "for",      "while", "def",     "defcal", "cal",    "const", "float",    "int",   "uint",
        "angle",    "bool",  "complex", "input",  "output", "let",   "box",      "delay", "stretch",
        "duration", "array", "return",  "extern", "switch", "break", "continue", "end",   "pragma"
    };
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
        if (is(r, unsupported[i]))
            return rd_err(r, line, "unsupported OpenQASM 3 statement '%s'", unsupported[i]);
    /* c = measure q;  c[i] = measure q[j]; */
    int save = r->pos;
    char nm[64];
    if (ident(r, nm, sizeof nm, "a name") == 0 && (is(r, "=") || is(r, "["))) {
        r->pos = save;
        if (find_reg_in(r, 1, nm)) {
            Arg ca, qa;
            if (operand(r, NULL, 1, &ca) || expect(r, "=") || expect(r, "measure") ||
                operand(r, NULL, 0, &qa) || expect(r, ";"))
                return -1;
            return measure_stmt(r, &qa, &ca, line);
        }
    }
    r->pos = save;
    return gate_call(r, NULL);
}

static int body(Rd *r, const Env *env, int end)
{
    while (r->pos < end) {
        if (statement(r, env)) return -1;
    }
    return 0;
}

/* qelib1.inc's gates that are no PennyLane gate, by their definitions there
   (the relative-phase Toffolis: their phases are what these make them),
   read before every file as if it began with them. */
static const char qelib1_prelude[] =
    "gate rccx a, b, c { u2(0, pi) c; u1(pi/4) c; cx b, c; u1(-pi/4) c; cx a, c;"
    " u1(pi/4) c; cx b, c; u1(-pi/4) c; u2(0, pi) c; }\n"
    "gate rc3x a, b, c, d { u2(0, pi) d; u1(pi/4) d; cx c, d; u1(-pi/4) d; u2(0, pi) d;"
    " cx a, d; u1(pi/4) d; cx b, d; u1(-pi/4) d; cx a, d; u1(pi/4) d; cx b, d;"
    " u1(-pi/4) d; u2(0, pi) d; u1(pi/4) d; cx c, d; u1(-pi/4) d; u2(0, pi) d; }\n";

int qasm_parse(const char *text, size_t len, QasmCircuit *c, char *err, size_t errlen)
{
    qasm_init(c, 0, 0);
    Rd r;
    memset(&r, 0, sizeof r);
    r.c = c;
    r.cond = -1;
    r.err = err;
    r.errlen = errlen;
    char *copy = malloc(len + 1); /* strtod needs a terminated text */
    if (!copy) return rd_err(&r, 1, "out of memory");
    memcpy(copy, text, len);
    copy[len] = 0;
    r.scope = INT_MAX;
    int rc = lex(qelib1_prelude, sizeof qelib1_prelude - 1, &r);
    while (rc == 0 && cur(&r)->kind != T_END) rc = statement(&r, NULL);
    r.steps = 0;
    if (rc == 0) rc = lex(copy, len, &r);
    if (rc == 0) {
        while (cur(&r)->kind != T_END)
            if (statement(&r, NULL)) {
                rc = -1;
                break;
            }
    }
    free(r.t);
    free(r.defs);
    names_free(&r.defnames);
    names_free(&r.qnames);
    names_free(&r.cnames);
    free(copy);
    if (rc) qasm_free(c);
    return rc ? -1 : 0;
}

/* Why: the tests and lang/qasm.md's table apply one gate by name. */
int qasm_gate_circuit(const char *name, const double *params, int nparams, QasmCircuit *c,
                      char *err, size_t errlen)
{
    const Builtin *b = builtin(name);
    if (!b) {
        if (err && errlen) snprintf(err, errlen, "unknown gate '%s'", name);
        return -1;
    }
    qasm_init(c, b->nq, 0);
    Rd r;
    memset(&r, 0, sizeof r);
    r.scope = INT_MAX;
    r.c = c;
    r.cond = -1;
    r.err = err;
    r.errlen = errlen;
    int q[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    if (nparams != b->np) {
        rd_err(&r, 0, "%s takes %d parameters", name, b->np);
        qasm_free(c);
        return -1;
    }
    if (apply_builtin(&r, 0, name, params, q, 0)) {
        qasm_free(c);
        return -1;
    }
    return 0;
}
