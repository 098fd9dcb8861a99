/* dual.c — what differentiation needs below the quantum runtime: dual
 * numbers (a value with tangents d/d(input), a kind with number, operator
 * and math slots: the chain rule through the classical arithmetic of a qfn
 * body) and the tape a differentiated call fills (gates with the tangents
 * of their parameters, expvals with the states they were taken on, the
 * adjoint sweep, the shifted runs' gate parameters). Knows values, the
 * dispatcher's error reporting and sv.h; nothing of running code. */
#include "dual.h"
#include "qh_assert.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- dual numbers */

ObjDual *dual_alloc(double v, int n)
{
    ObjDual *d = (ObjDual *)obj_alloc(sizeof(ObjDual) + (size_t)n * sizeof(double), T_DUAL);
    d->v = v;
    d->n = n;
    return d;
}

static void dual_repr(Buf *b, Value v, bool quoted) { (void)quoted; value_repr(b, v_num(AS_DUAL(v)->v), false); }
static bool dual_number(Value v, double *out) { *out = AS_DUAL(v)->v; return true; }
static bool dual_truthy(Value v) { return AS_DUAL(v)->v != 0; }
static Value dual_copy(Value v, CopyCtx *cc)
{
    ObjDual *s = AS_DUAL(v), *d = dual_alloc(s->v, s->n);
    memcpy(d->d, s->d, (size_t)s->n * sizeof(double));
    copy_memo_put(cc, s, d);
    return v_obj(&d->h);
}
static bool dual_eq(Value a, Value b) { return AS_DUAL(a)->v == AS_DUAL(b)->v; }
static void dual_free(Obj *o) { free(o); }

bool grad_param_value(Value v, double *out)
{
    if (v.t == T_NUM) { *out = v.n; return true; }
    if (v.t == T_BOOL) { *out = v.b; return true; }
    if (v.t == T_DUAL) { *out = AS_DUAL(v)->v; return true; }
    return false;
}

const double *grad_param_tangent(Value v, int *ntan)
{
    if (v.t != T_DUAL) { *ntan = 0; return NULL; }
    *ntan = AS_DUAL(v)->n;
    return AS_DUAL(v)->d;
}

/* (value, tangent) of a number or dual; NULL tangent for a plain number */
static bool parts(Value v, double *x, const double **dx, int *n)
{
    if (v.t == T_NUM) { *x = v.n; *dx = NULL; return true; }
    if (v.t == T_BOOL) { *x = v.b; *dx = NULL; return true; }
    if (v.t == T_DUAL) { *x = AS_DUAL(v)->v; *dx = AS_DUAL(v)->d; *n = AS_DUAL(v)->n; return true; }
    return false;
}

/* the binop slot: duals with numbers and duals (the other operand's kind
 * had its turn first when it is the left one: arrays, lists decline) */
static Value dual_binop(VM *vm, BinOp op, Value a, Value b, const Node *site)
{
    double x, y;
    const double *dx, *dy;
    int na = 0, nb = 0;
    if (!parts(a, &x, &dx, &na) || !parts(b, &y, &dy, &nb))
        return vm_error(vm, site, "a differentiated number can only be combined with numbers, not %s",
                        type_name(parts(a, &x, &dx, &na) ? b : a));
    qh_assert(!(dx && dy && na != nb));
    int n = dx ? na : nb;
    switch (op) {
    case OP_LT: return v_bool(x < y);
    case OP_LE: return v_bool(x <= y);
    case OP_GT: return v_bool(x > y);
    case OP_GE: return v_bool(x >= y);
    case OP_EQ: return v_bool(x == y);
    case OP_NE: return v_bool(x != y);
    default: break;
    }
    double r, ca = 0, cb = 0;    /* r = f(x, y); dr = ca dx + cb dy */
    switch (op) {
    case OP_ADD: r = x + y; ca = 1; cb = 1; break;
    case OP_SUB: r = x - y; ca = 1; cb = -1; break;
    case OP_MUL: r = x * y; ca = y; cb = x; break;
    case OP_DIV:
        if (y == 0) return vm_error(vm, site, "division by zero");
        r = x / y; ca = 1 / y; cb = -x / (y * y); break;
    case OP_IDIV:
        if (y == 0) return vm_error(vm, site, "division by zero");
        return v_num(floor(x / y));
    case OP_MOD: {
        if (y == 0) return vm_error(vm, site, "modulo by zero");
        double q = floor(x / y);
        r = x - y * q; ca = 1; cb = -q; break;
    }
    case OP_POW:
        if (x < 0 && y != floor(y)) return vm_error(vm, site, "a negative differentiated number to a fractional power");
        r = pow(x, y);
        ca = y == 0 ? 0 : y * pow(x, y - 1);
        cb = dy ? (x > 0 ? r * log(x) : 0) : 0;
        break;
    case OP_MATMUL: case OP_IN: case OP_NOTIN: case OP_NEG: case OP_POS: case OP_NOPS:
    case OP_BAND: case OP_BOR: case OP_BXOR: case OP_SHL: case OP_SHR: case OP_INVERT:
    case OP_LT: case OP_LE: case OP_GT: case OP_GE: case OP_EQ: case OP_NE:
        return vm_error(vm, site, "unsupported operation %s on a differentiated number", op_symbol(op));
    default: qh_unreachable();
    }
    ObjDual *d = dual_alloc(r, n);
    for (int i = 0; i < n; i++) d->d[i] = (dx ? ca * dx[i] : 0) + (dy ? cb * dy[i] : 0);
    return v_obj(&d->h);
}

static Value dual_unop(VM *vm, BinOp op, Value a, const Node *site)
{
    if (op == OP_POS) { incref(a); return a; }
    return dual_binop(vm, OP_MUL, v_num(-1), a, site);
}

/* the math slot: the chain rule through abs, sqrt, sin, ... */
static Value dual_math(VM *vm, MathFn fn, Value v, long arg, const Node *site)
{
    (void)arg;
    ObjDual *s = AS_DUAL(v);
    double x = s->v, r, c;
    switch (fn) {
    case M_ABS: r = fabs(x); c = x < 0 ? -1 : 1; break;
    case M_SQRT:
        if (x < 0) return vm_error(vm, site, "sqrt() of a negative number (%g)", x);
        r = sqrt(x); c = r == 0 ? 0 : 0.5 / r; break;
    case M_SIN: r = sin(x); c = cos(x); break;
    case M_COS: r = cos(x); c = -sin(x); break;
    case M_TAN: r = tan(x); c = 1 / (cos(x) * cos(x)); break;
    case M_ASIN: if (x < -1 || x > 1) return vm_error(vm, site, "asin() argument %g outside [-1, 1]", x); r = asin(x); c = 1 / sqrt(1 - x * x); break;
    case M_ACOS: if (x < -1 || x > 1) return vm_error(vm, site, "acos() argument %g outside [-1, 1]", x); r = acos(x); c = -1 / sqrt(1 - x * x); break;
    case M_ATAN: r = atan(x); c = 1 / (1 + x * x); break;
    case M_EXP: r = exp(x); c = r; break;
    case M_LOG: case M_LOG2: case M_LOG10:
        if (x <= 0) return vm_error(vm, site, "log of a non-positive number (%g)", x);
        r = fn == M_LOG ? log(x) : fn == M_LOG2 ? log2(x) : log10(x);
        c = 1 / (x * (fn == M_LOG ? 1 : fn == M_LOG2 ? M_LN2 : M_LN10));
        break;
    case M_FLOOR: return v_num(floor(x));
    case M_CEIL: return v_num(ceil(x));
    case M_ROUND: return v_num(nearbyint(x));      /* round() takes the value (dual rounding is a number) */
    case M_NFUNCS: default: qh_unreachable();
    }
    ObjDual *d = dual_alloc(r, s->n);
    for (int i = 0; i < s->n; i++) d->d[i] = c * s->d[i];
    return v_obj(&d->h);
}

/* ---------------------------------------------------------------- the tape */

bool grad_shift(QTape *t, const SvOp *op, SvOp *out)
{
    if (t->record || t->counter != t->shift_op) return false;
    *out = *op;
    out->params[t->shift_param] += t->shift;
    return true;
}

void grad_record(QTape *t, const SvOp *op, const double *tan, int ntan)
{
    t->counter++;
    /* the circuit's shape: which gate on which wires (shifted runs must match) */
    uint64_t h = t->shape ^ ((uint64_t)op->gate * 0x9e3779b97f4a7c15ULL);
    for (int i = 0; i < op->nwires; i++) h = (h ^ (uint64_t)op->wires[i]) * 0x100000001b3ULL;
    for (int i = 0; i < op->nctrl; i++) h = (h ^ (uint64_t)(op->ctrl[i] + 64)) * 0x100000001b3ULL;
    t->shape = h * 0xbf58476d1ce4e5b9ULL + (uint64_t)op->adjoint;
    if (!t->record) return;
    if (t->nops == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->ops = realloc(t->ops, (size_t)t->cap * sizeof(TapeOp));
    }
    TapeOp *o = &t->ops[t->nops++];
    o->op = *op;
    o->matrix = NULL;
    o->tan = NULL;
    if (op->matrix) {
        size_t d = (size_t)1 << op->nwires;
        o->matrix = malloc(d * d * sizeof(cplx));
        memcpy(o->matrix, op->matrix, d * d * sizeof(cplx));
        o->op.matrix = o->matrix;
    }
    if (tan && ntan == t->ntan && op->nparams) {
        o->tan = malloc((size_t)(op->nparams * ntan) * sizeof(double));
        memcpy(o->tan, tan, (size_t)(op->nparams * ntan) * sizeof(double));
    }
}

typedef struct TapeObs {
    SvPauli *t; int n;
    int pos;            /* gates applied before it */
    cplx *psi;          /* adjoint: the state it was measured on */
} TapeObs;

void grad_note_nondiff(QTape *t, const char *what)
{
    if (!t->nondiff) t->nondiff = what;
}

/* Each expval in a differentiated call is a dual number whose tangent
 * n_inputs + k (k: its number in the call) is 1: the return value's
 * tangents then hold d(result)/d(expval_k), the chain rule from each
 * measured value to what the function returns. */
Value grad_expval(VM *vm, QTape *t, const SvState *s, const SvPauli *terms, int n, double e, const Node *site)
{
    int k = t->nexpval++;
    if (!t->record) {
        /* a shifted run: only the value matters */
        if (t->nevals < GRAD_MAX_EXPVALS) t->evals[t->nevals++] = e;
        return v_num(e);
    }
    if (k >= GRAD_MAX_EXPVALS)
        return vm_error(vm, site, "grad: more than %d expval() in one differentiated call", GRAD_MAX_EXPVALS);
    if (t->nobs == t->capobs) {
        t->capobs = t->capobs ? t->capobs * 2 : 4;
        t->obs = realloc(t->obs, (size_t)t->capobs * sizeof(TapeObs));
    }
    TapeObs *o = &t->obs[t->nobs++];
    o->t = malloc((size_t)(n + 1) * sizeof(SvPauli));
    memcpy(o->t, terms, (size_t)n * sizeof(SvPauli));
    o->n = n;
    o->pos = t->nops;
    o->psi = NULL;
    if (t->method == GRAD_ADJOINT) {
        o->psi = malloc(s->dim * sizeof(cplx));
        if (!o->psi) return vm_error(vm, site, "grad: out of memory keeping the state of an expval");
        memcpy(o->psi, s->amp, s->dim * sizeof(cplx));
    }
    ObjDual *d = dual_alloc(e, t->ntan);
    d->d[t->ninputs + k] = 1;
    return v_obj(&d->h);
}

/* out = H psi for a Pauli sum H (wire w <-> bit nq-1-w of the index) */
static void apply_paulis(const SvState *s, const SvPauli *t, int n, cplx *out)
{
    size_t dim = s->dim;
    int nq = s->nq;
    memset(out, 0, dim * sizeof(cplx));
    for (int k = 0; k < n; k++) {
        uint64_t xm = 0, zm = 0;
        int ny = 0;
        for (int w = 0; w < nq; w++) {
            uint64_t wb = (uint64_t)1 << w, bit = (uint64_t)1 << (nq - 1 - w);
            if (t[k].x & wb) xm |= bit;
            if (t[k].z & wb) zm |= bit;
            if ((t[k].x & wb) && (t[k].z & wb)) ny++;
        }
        static const cplx ipow[4] = { 1, I, -1, -I };
        cplx ph = t[k].coeff * ipow[ny & 3];
        for (size_t i = 0; i < dim; i++) {
            double sg = (__builtin_popcountll(i & zm) & 1) ? -1 : 1;
            out[i ^ xm] += ph * sg * s->amp[i];
        }
    }
}

/* The adjoint sweep, once per expval: psi is the state it was measured
 * on, lambda = H psi; for each gate before it, from the last, undo the gate
 * on both and collect 2 Re <lambda| dU psi> for its parameters. */
bool grad_after_body(QTape *t, SvState *s)
{
    if (t->method != GRAD_ADJOINT || !t->record) return true;
    if (t->nondiff) {
        snprintf(t->err, sizeof t->err, "grad(method=\"adjoint\") cannot follow %s(); use method=\"finite-diff\"", t->nondiff);
        return false;
    }
    if (t->shots && t->nobs) {
        snprintf(t->err, sizeof t->err, "grad(method=\"adjoint\") needs an exact device (no shots); use method=\"parameter-shift\"");
        return false;
    }
    int nin = t->ninputs;
    t->adj = calloc((size_t)(t->nobs * nin + 1), sizeof(double));
    if (!t->nobs) return true;
    SvState psi, lam, mu;
    if (sv_init(&psi, s->nq) != 0 || sv_init(&lam, s->nq) != 0 || sv_init(&mu, s->nq) != 0) {
        snprintf(t->err, sizeof t->err, "grad: out of memory for the adjoint sweep");
        return false;
    }
    char err[200];
    bool ok = true;
    int maxk = 2 * SV_MAX_WIRES;
    size_t dmax = 0;
    cplx *dm = NULL;
    for (int e = 0; e < t->nobs && ok; e++) {
        TapeObs *ob = &t->obs[e];
        memcpy(psi.amp, ob->psi, s->dim * sizeof(cplx));
        apply_paulis(&psi, ob->t, ob->n, lam.amp);
        double *g = t->adj + (size_t)e * (size_t)nin;
        for (int k = ob->pos - 1; k >= 0 && ok; k--) {
            TapeOp *o = &t->ops[k];
            SvOp inv = o->op;
            inv.adjoint = !inv.adjoint;
            if (sv_apply(&psi, &inv, err, sizeof err) != 0) { ok = false; break; }
            if (o->tan) {
                int kk = o->op.nctrl + o->op.nwires;
                if (kk > maxk) { ok = false; snprintf(err, sizeof err, "gate too wide"); break; }
                size_t d = (size_t)1 << kk;
                if (d * d > dmax) { free(dm); dmax = d * d; dm = malloc(dmax * sizeof(cplx)); }
                int wires[2 * SV_MAX_WIRES];
                for (int i = 0; i < o->op.nctrl; i++) wires[i] = o->op.ctrl[i];
                for (int i = 0; i < o->op.nwires; i++) wires[o->op.nctrl + i] = o->op.wires[i];
                for (int p = 0; p < o->op.nparams && ok; p++) {
                    bool any = false;
                    for (int j = 0; j < nin; j++) if (o->tan[p * t->ntan + j] != 0) any = true;
                    if (!any) continue;
                    if (sv_op_dmatrix(&o->op, p, dm, err, sizeof err) != 0) { ok = false; break; }
                    memcpy(mu.amp, psi.amp, s->dim * sizeof(cplx));
                    if (sv_apply_matrix(&mu, wires, kk, dm, err, sizeof err) != 0) { ok = false; break; }
                    double re = 0;
                    for (size_t i = 0; i < s->dim; i++) re += creal(conj(lam.amp[i]) * mu.amp[i]);
                    double dE = 2 * re;
                    for (int j = 0; j < nin; j++) g[j] += dE * o->tan[p * t->ntan + j];
                }
            }
            if (ok && sv_apply(&lam, &inv, err, sizeof err) != 0) ok = false;
        }
    }
    free(dm);
    sv_free(&psi);
    sv_free(&lam);
    sv_free(&mu);
    if (!ok) { snprintf(t->err, sizeof t->err, "grad: %s", err); return false; }
    return true;
}

void tape_free(QTape *t)
{
    for (int i = 0; i < t->nops; i++) { free(t->ops[i].matrix); free(t->ops[i].tan); }
    for (int i = 0; i < t->nobs; i++) { free(t->obs[i].t); free(t->obs[i].psi); }
    free(t->obs);
    free(t->ops);
    free(t->adj);
    t->obs = NULL;
    t->ops = NULL;
    t->adj = NULL;
    t->nops = t->cap = t->nobs = t->capobs = 0;
}

static const TypeOps dual_ops = {
    .name = "number",
    .free = dual_free, .copy = dual_copy, .repr = dual_repr, .eq = dual_eq, .number = dual_number,
    .binop = dual_binop, .unop = dual_unop, .truthy = dual_truthy, .math = dual_math,
};

void dual_open(void) { type_register(T_DUAL, &dual_ops); }
