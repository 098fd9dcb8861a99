/* track_cx.c — complex intermediates of a differentiated evaluation: a
 * real-valued cost computed through complex arithmetic (mu = re + 1j * im,
 * abs(mu), conj, real, imag, exp(1j * x), complex arrays) differentiates,
 * as JAX and autograd do for real outputs. A tracked complex value is a
 * pair (re, im) of real values, numbers or arrays, either of which may be
 * tracked (track.h); every operation on it is the same operations on the
 * pair, so the tape records only real nodes and a real result that comes
 * out of the pair (real, imag, abs, ...) has its ordinary derivative. A
 * pair with neither part tracked is an ordinary complex number or array
 * again. Knows values, the dispatcher, the tracked kinds and the array
 * room; one room with track.c (its binop and builtin slots ask here when
 * a complex operand meets a tracked one). */
#include "track_cx.h"
#include "array.h"
#include "arrayval.h"
#include "builtins.h"
#include "qh_assert.h"
#include "track.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct ObjTcx {
    Obj h;
    Value re, im; /* real numbers or real arrays, plain or tracked, of one shape */
} ObjTcx;
#define TCX(v) ((ObjTcx *)(v).o)

static ValType T_TCX = T_NTYPES;

bool track_cx_is(Value v) { return v.t == T_TCX; }

/* a complex operand: a complex number or array, or a tracked pair */
bool track_cx_operand(Value v)
{
    return v.t == T_TCX || v.t == T_COMPLEX || (v.t == T_ARRAY && ar_is_complex(AS_ARR(v)));
}

/* the parts of any number-like or array-like value (new references) */
static bool parts(VM *vm, Value v, Value *re, Value *im, const Node *site)
{
    if (v.t == T_TCX) {
        *re = TCX(v)->re;
        *im = TCX(v)->im;
        incref(*re);
        incref(*im);
        return true;
    }
    if (v.t == T_COMPLEX) {
        *re = v_num(AS_CPLX(v)->re);
        *im = v_num(AS_CPLX(v)->im);
        return true;
    }
    if (v.t == T_ARRAY && ar_is_complex(AS_ARR(v))) {
        char err[AR_ERRLEN];
        Array *r = ar_real(AS_ARR(v), err), *i = r ? ar_imag(AS_ARR(v), err) : NULL;
        if (!r || !i) {
            if (r) ar_free(r);
            vm_error(vm, site, "%s", err);
            return false;
        }
        *re = arr_wrap(r);
        *im = arr_wrap(i);
        return true;
    }
    if (v.t == T_LIST) { /* a list of numbers or pairs: as array() makes it */
        Value a = vm_call(vm, builtin_named("array"), 1, &v, (Node *)site);
        if (IS_EXC(a)) return false;
        bool ok = parts(vm, a, re, im, site);
        decref(a);
        return ok;
    }
    if (v.t == T_NUM || v.t == T_BOOL || v.t == T_ARRAY || track_is(v)) {
        incref(v);
        *re = v;
        *im = v_num(0);
        return true;
    }
    vm_error(vm, site,
             "unsupported operand type for complex arithmetic on a differentiated value: %s",
             type_name(v));
    return false;
}

/* (re, im) as a value (takes both): a tracked pair, or, when neither part
   is tracked, the ordinary complex number or array */
static Value make(VM *vm, Value re, Value im, const Node *site)
{
    if (IS_EXC(re) || IS_EXC(im)) {
        decref(re);
        decref(im);
        return v_exc();
    }
    if (!track_inside(re) && !track_inside(im)) {
        Value j = v_complex(0, 1);
        Value t = tp_binop(vm, OP_MUL, im, j, site);
        decref(j);
        Value r = IS_EXC(t) ? t : tp_binop(vm, OP_ADD, re, t, site);
        decref(t);
        decref(re);
        decref(im);
        return r;
    }
    ObjTcx *o = (ObjTcx *)obj_alloc(sizeof(ObjTcx), T_TCX);
    o->re = re;
    o->im = im;
    return v_obj(&o->h);
}

/* x op y on real parts (borrowed); v_exc() after an error */
static Value rop(VM *vm, BinOp op, Value x, Value y, const Node *site)
{
    if (IS_EXC(x) || IS_EXC(y)) return v_exc();
    return tp_binop(vm, op, x, y, site);
}

/* the four real products of (ar, ai) and (br, bi) for op (MUL, MATMUL) */
static Value cx_mul(VM *vm, BinOp op, Value ar, Value ai, Value br, Value bi, const Node *site)
{
    Value p1 = rop(vm, op, ar, br, site), p2 = rop(vm, op, ai, bi, site);
    Value p3 = rop(vm, op, ar, bi, site), p4 = rop(vm, op, ai, br, site);
    Value re = rop(vm, OP_SUB, p1, p2, site), im = rop(vm, OP_ADD, p3, p4, site);
    decref(p1);
    decref(p2);
    decref(p3);
    decref(p4);
    return make(vm, re, im, site);
}

/* (a / b) = a conj(b) / |b|^2 */
static Value cx_div(VM *vm, Value ar, Value ai, Value br, Value bi, const Node *site)
{
    Value b2 = rop(vm, OP_MUL, br, br, site), c2 = rop(vm, OP_MUL, bi, bi, site);
    Value d = rop(vm, OP_ADD, b2, c2, site);
    decref(b2);
    decref(c2);
    Value nb = tp_unop(vm, OP_NEG, bi, site);
    Value q = IS_EXC(nb) ? nb : cx_mul(vm, OP_MUL, ar, ai, br, nb, site);
    decref(nb);
    Value qr, qi;
    if (IS_EXC(q) || IS_EXC(d) || !parts(vm, q, &qr, &qi, site)) {
        decref(q);
        decref(d);
        return v_exc();
    }
    decref(q);
    Value r = make(vm, rop(vm, OP_DIV, qr, d, site), rop(vm, OP_DIV, qi, d, site), site);
    decref(qr);
    decref(qi);
    decref(d);
    return r;
}

/* an integer power: repeated products (z ** 2, z ** 3 ...) */
static Value cx_pow(VM *vm, Value ar, Value ai, Value br, Value bi, const Node *site)
{
    double n;
    bool plain = !track_inside(br) && bi.t == T_NUM && bi.n == 0 && tp_number(br, &n);
    if (!plain || n != floor(n) || n < 0 || n > 64)
        return vm_error(vm, site,
                        "a differentiated complex value to the power %s: only whole powers "
                        "0..64 of it can be differentiated",
                        plain ? "given" : "of a non-constant");
    Value pr = v_num(1), pi = v_num(0);
    for (int k = 0; k < (int)n; k++) {
        Value z = cx_mul(vm, OP_MUL, pr, pi, ar, ai, site);
        decref(pr);
        decref(pi);
        if (IS_EXC(z) || !parts(vm, z, &pr, &pi, site)) {
            decref(z);
            pr = pi = v_exc();
            break;
        }
        decref(z);
    }
    return IS_EXC(pr) ? v_exc() : make(vm, pr, pi, site);
}

Value track_cx_binop(VM *vm, BinOp op, Value a, Value b, const Node *site)
{
    if (op == OP_IN || op == OP_NOTIN) return v_notimpl();
    Value ar, ai, br, bi;
    if (!parts(vm, a, &ar, &ai, site)) return v_exc();
    if (!parts(vm, b, &br, &bi, site)) {
        decref(ar);
        decref(ai);
        return v_exc();
    }
    Value r;
    switch (op) {
    case OP_ADD:
    case OP_SUB: r = make(vm, rop(vm, op, ar, br, site), rop(vm, op, ai, bi, site), site); break;
    case OP_MUL:
    case OP_MATMUL: r = cx_mul(vm, op, ar, ai, br, bi, site); break;
    case OP_DIV: r = cx_div(vm, ar, ai, br, bi, site); break;
    case OP_POW: r = cx_pow(vm, ar, ai, br, bi, site); break;
    case OP_EQ:
    case OP_NE: {
        Value e1 = rop(vm, OP_EQ, ar, br, site), e2 = rop(vm, OP_EQ, ai, bi, site);
        bool eq = !IS_EXC(e1) && !IS_EXC(e2) && e1.t == T_BOOL && e2.t == T_BOOL && e1.b && e2.b;
        bool ok = !IS_EXC(e1) && !IS_EXC(e2);
        decref(e1);
        decref(e2);
        r = ok ? v_bool(op == OP_EQ ? eq : !eq) : v_exc();
        break;
    }
    case OP_NOPS: qh_unreachable();
    case OP_IDIV:
    case OP_MOD:
    case OP_LT:
    case OP_LE:
    case OP_GT:
    case OP_GE:
    case OP_IN:
    case OP_NOTIN:
    case OP_NEG:
    case OP_POS:
    case OP_BAND:
    case OP_BOR:
    case OP_BXOR:
    case OP_SHL:
    case OP_SHR:
    case OP_INVERT:
        r = vm_error(vm, site, "unsupported operator for a differentiated complex value: %s",
                     op_symbol(op));
        break;
    }
    decref(ar);
    decref(ai);
    decref(br);
    decref(bi);
    return r;
}

static Value cx_unop(VM *vm, BinOp op, Value a, const Node *site)
{
    if (op == OP_POS) {
        incref(a);
        return a;
    }
    if (op != OP_NEG) return vm_error(vm, site, "unsupported operand for a complex value");
    return make(vm, tp_unop(vm, OP_NEG, TCX(a)->re, site), tp_unop(vm, OP_NEG, TCX(a)->im, site),
                site);
}

/* |z| = sqrt(re^2 + im^2), elementwise */
static Value cx_abs(VM *vm, Value z, const Node *site)
{
    Value a = rop(vm, OP_MUL, TCX(z)->re, TCX(z)->re, site);
    Value b = rop(vm, OP_MUL, TCX(z)->im, TCX(z)->im, site);
    Value s = rop(vm, OP_ADD, a, b, site);
    decref(a);
    decref(b);
    Value r = IS_EXC(s) ? s : tp_math(vm, M_SQRT, s, 0, site);
    decref(s);
    return r;
}

/* exp(z) = exp(re) (cos(im) + i sin(im)) */
static Value cx_exp(VM *vm, Value z, const Node *site)
{
    Value e = tp_math(vm, M_EXP, TCX(z)->re, 0, site);
    Value c = IS_EXC(e) ? v_exc() : tp_math(vm, M_COS, TCX(z)->im, 0, site);
    Value s = IS_EXC(c) ? v_exc() : tp_math(vm, M_SIN, TCX(z)->im, 0, site);
    Value r = make(vm, rop(vm, OP_MUL, e, c, site), rop(vm, OP_MUL, e, s, site), site);
    decref(e);
    decref(c);
    decref(s);
    return r;
}

static Value cx_math(VM *vm, MathFn fn, Value v, long arg, const Node *site)
{
    (void)arg;
    switch (fn) {
    case M_ABS: return cx_abs(vm, v, site);
    case M_EXP: return cx_exp(vm, v, site);
    case M_SQRT:
    case M_SIN:
    case M_COS:
    case M_TAN:
    case M_ASIN:
    case M_ACOS:
    case M_ATAN:
    case M_LOG:
    case M_LOG2:
    case M_LOG10:
    case M_FLOOR:
    case M_CEIL:
    case M_ROUND: break;
    case M_NFUNCS: qh_unreachable();
    }
    return vm_error(vm, site,
                    "this function of a differentiated complex value cannot be differentiated "
                    "(abs, exp, real, imag, conj, sum and arithmetic can)");
}

/* a builtin on both parts: f(re), f(im) */
static Value both(VM *vm, const char *name, Value z, const Node *site)
{
    Value f = builtin_named(name);
    Value re = vm_call(vm, f, 1, &TCX(z)->re, (Node *)site);
    Value im = IS_EXC(re) ? v_exc() : vm_call(vm, f, 1, &TCX(z)->im, (Node *)site);
    return make(vm, re, im, site);
}

/* array([...]) with tracked complex elements: array(re parts) + i array(im parts) */
static bool split_list(VM *vm, Value v, Value *re, Value *im, const Node *site)
{
    if (v.t != T_LIST) return parts(vm, v, re, im, site);
    ObjList *l = AS_LIST(v);
    ObjList *lr = list_new(l->len), *li = list_new(l->len);
    Value vr = v_list(lr), vi = v_list(li);
    for (size_t i = 0; i < l->len; i++) {
        Value r, m;
        if (!split_list(vm, l->v[i], &r, &m, site)) {
            decref(vr);
            decref(vi);
            return false;
        }
        lr->v[lr->len++] = r;
        li->v[li->len++] = m;
    }
    *re = vr;
    *im = vi;
    return true;
}

Value track_cx_array(VM *vm, Value list, const Node *site)
{
    Value lr, li;
    if (!split_list(vm, list, &lr, &li, site)) return v_exc();
    Value f = builtin_named("array");
    Value re = vm_call(vm, f, 1, &lr, (Node *)site);
    Value im = IS_EXC(re) ? v_exc() : vm_call(vm, f, 1, &li, (Node *)site);
    decref(lr);
    decref(li);
    return make(vm, re, im, site);
}

/* Whether a list (nested) holds a tracked complex value. */
bool track_cx_inside(Value v)
{
    if (v.t == T_TCX) return true;
    if (v.t != T_LIST) return false;
    for (size_t i = 0; i < AS_LIST(v)->len; i++)
        if (track_cx_inside(AS_LIST(v)->v[i])) return true;
    return false;
}

static Value cx_builtin(VM *vm, const BuiltinDef *bd, Args *a)
{
    const char *n = bd->name;
    Value z = a->n > 0 ? a->v[0] : v_nil();
    if (strcmp(n, "array") == 0 && a->n == 1 && !a->nkw) return track_cx_array(vm, z, a->site);
    if (strcmp(n, "dot") == 0 && a->n == 2) {
        bool scalar = a->v[0].t == T_NUM || a->v[1].t == T_NUM || track_is_num(a->v[0]) ||
                      track_is_num(a->v[1]);
        return track_cx_binop(vm, scalar ? OP_MUL : OP_MATMUL, a->v[0], a->v[1], a->site);
    }
    if (a->n != 1 || z.t != T_TCX) {
        if (strcmp(n, "print") == 0 || strcmp(n, "fmt") == 0 || strcmp(n, "str") == 0 ||
            strcmp(n, "type") == 0)
            return v_notimpl();
        return vm_error(vm, a->site,
                        "%s() cannot take a differentiated complex value (abs, exp, real, imag, "
                        "conj, sum, len and arithmetic can)",
                        n);
    }
    if (strcmp(n, "real") == 0) {
        incref(TCX(z)->re);
        return TCX(z)->re;
    }
    if (strcmp(n, "imag") == 0) {
        incref(TCX(z)->im);
        return TCX(z)->im;
    }
    if (strcmp(n, "conj") == 0) {
        incref(TCX(z)->re);
        return make(vm, TCX(z)->re, tp_unop(vm, OP_NEG, TCX(z)->im, a->site), a->site);
    }
    if (strcmp(n, "abs") == 0) return cx_abs(vm, z, a->site);
    if (strcmp(n, "exp") == 0) return cx_exp(vm, z, a->site);
    if (strcmp(n, "sum") == 0) return both(vm, "sum", z, a->site);
    if (strcmp(n, "len") == 0)
        return vm_call(vm, builtin_named("len"), 1, &TCX(z)->re, (Node *)a->site);
    if (strcmp(n, "shape") == 0)
        return vm_call(vm, builtin_named("shape"), 1, &TCX(z)->re, (Node *)a->site);
    if (strcmp(n, "transpose") == 0) return both(vm, "transpose", z, a->site);
    if (strcmp(n, "print") == 0 || strcmp(n, "fmt") == 0 || strcmp(n, "str") == 0 ||
        strcmp(n, "type") == 0)
        return v_notimpl();
    return vm_error(vm, a->site,
                    "%s() cannot take a differentiated complex value (abs, exp, real, imag, conj, "
                    "sum, len and arithmetic can)",
                    n);
}

static Value cx_index(VM *vm, Value v, int nidx, const Value *idx, const Node *site,
                      Node *const *isite)
{
    (void)isite;
    Value re = tp_index(vm, TCX(v)->re, nidx, idx, site, NULL);
    Value im = IS_EXC(re) ? v_exc() : tp_index(vm, TCX(v)->im, nidx, idx, site, NULL);
    return make(vm, re, im, site);
}

static bool cx_len(Value v, size_t *out) { return tp_len(TCX(v)->re, out); }

static int cx_iter(VM *vm, Value v, Iter *it, Value *out, const Node *site)
{
    size_t n;
    if (!tp_len(TCX(v)->re, &n)) {
        vm_error(vm, site, "a complex number is not iterable");
        return -1;
    }
    if (it->pos >= n) return 0;
    Value i = v_num((double)it->pos++);
    *out = cx_index(vm, v, 1, &i, site, NULL);
    return IS_EXC(*out) ? -1 : 1;
}

static void cx_free(Obj *o)
{
    decref(((ObjTcx *)o)->re);
    decref(((ObjTcx *)o)->im);
    free(o);
}

static void cx_clear(Obj *o)
{
    ObjTcx *z = (ObjTcx *)o;
    Value a = z->re, b = z->im;
    z->re = z->im = v_nil();
    decref(a);
    decref(b);
}

static void cx_traverse(Obj *o, void (*visit)(Value, void *), void *ud)
{
    visit(((ObjTcx *)o)->re, ud);
    visit(((ObjTcx *)o)->im, ud);
}

/* the plain value: re + i im of the parts' plain values */
static Value cx_plain(Value v)
{
    Value re = track_plain(TCX(v)->re), im = track_plain(TCX(v)->im);
    Value r;
    if (re.t == T_NUM && im.t == T_NUM)
        r = v_complex(re.n, im.n);
    else if (re.t == T_ARRAY && im.t == T_ARRAY && ar_size(AS_ARR(re)) == ar_size(AS_ARR(im))) {
        char err[AR_ERRLEN];
        const Array *x = AS_ARR(re);
        Array *j = ar_new(AR_C128, ar_ndim(x), ar_shape(x), err);
        if (j) {
            const double *pr = ar_f64_ro(x), *pi = ar_f64_ro(AS_ARR(im));
            double _Complex *o = ar_c128(j);
            for (size_t k = 0; k < ar_size(x); k++) o[k] = pr[k] + pi[k] * _Complex_I;
        }
        r = j ? arr_wrap(j) : v_nil();
    } else
        r = v_nil();
    decref(re);
    decref(im);
    return r;
}

static Value cx_copy(Value v, CopyCtx *cc)
{
    if (!cc->share_code) return cx_plain(v);
    incref(v);
    return v;
}

static void cx_repr(Buf *b, Value v, bool quoted)
{
    Value p = cx_plain(v);
    value_repr(b, p, quoted);
    decref(p);
}

static bool cx_truthy(Value v)
{
    Value re = track_plain(TCX(v)->re), im = track_plain(TCX(v)->im);
    bool t = !(re.t == T_NUM && re.n == 0 && im.t == T_NUM && im.n == 0);
    decref(re);
    decref(im);
    return t;
}

static const TypeOps tcx_ops = {
    .name = "complex",
    .flags = TF_INTERCEPT,
    .free = cx_free,
    .clear = cx_clear,
    .traverse = cx_traverse,
    .copy = cx_copy,
    .repr = cx_repr,
    .binop = track_cx_binop,
    .unop = cx_unop,
    .truthy = cx_truthy,
    .len = cx_len,
    .iter = cx_iter,
    .index = cx_index,
    .math = cx_math,
    .builtin = cx_builtin,
};

void track_cx_open(void) { T_TCX = type_register_new(&tcx_ops); }
