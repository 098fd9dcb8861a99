/* arrayval.c — arrays as qh values (lang/arrays.md): the ObjArray wrapper
 * around the array room's Array and its TypeOps (operators, indexing,
 * iteration, math and reductions), and the array builtins. Copies into
 * tasks share the element buffer copy-on-write (the array room's atomic
 * count), so a task's array never changes under it. The language's
 * operator, math and reduction enums are mapped to the array room's by
 * switches, never by indexing a table with a number. Knows values, the
 * dispatcher, the builtin table and array.h. */
#include "arrayval.h"
#include "array.h"
#include "qh_assert.h"
#include "serial.h"
#include "types.h"

#include <complex.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void array_free(Obj *o)
{
    ar_free(((ObjArray *)o)->a);
    free(o);
}

static void array_repr(Buf *b, Value v, bool quoted)
{
    (void)quoted;
    char *s = ar_format(AS_ARR(v));
    if (s) {
        buf_puts(b, s);
        free(s);
    } else
        b->failed = true; /* out of memory (or stopped): str() and print raise */
}

static Value array_copy(Value v, CopyCtx *cc)
{
    char err[AR_ERRLEN];
    Array *a = ar_copy(AS_ARR(v), err);
    if (!a) {
        cc->error = "an array (out of memory)";
        return v_nil();
    }
    Value r = arr_wrap(a);
    copy_memo_put(cc, v.o, r.o);
    return r;
}

/* dtype, shape, then the elements' bytes */
static bool array_ser(Value v, SerCtx *sc)
{
    const Array *a = AS_ARR(v);
    int nd = ar_ndim(a);
    ser_u8(sc, (unsigned)ar_type(a));
    ser_u8(sc, ar_is_mask(a) ? 1 : 0); /* a comparison's result indexes as NumPy's bool */
    ser_u8(sc, (unsigned)nd);
    for (int i = 0; i < nd; i++) ser_u64(sc, ar_shape(a)[i]);
    size_t n = ar_size(a);
    if (ar_type(a) == AR_F64)
        ser_bytes(sc, ar_f64_ro(a), n * sizeof(double));
    else
        ser_bytes(sc, ar_c128_ro(a), n * 2 * sizeof(double));
    return true;
}

static Value array_deser(SerCtx *sc, ValType t, size_t id)
{
    (void)t;
    (void)id;
    uint8_t ty, mask, nd;
    size_t shape[AR_MAXDIM], n = 1;
    if (!des_u8(sc, &ty) || !des_u8(sc, &mask) || !des_u8(sc, &nd)) return v_exc();
    if (ty > AR_C128 || mask > 1 || nd < 1 || nd > AR_MAXDIM) return des_fail(sc, "array");
    for (int i = 0; i < nd; i++) {
        uint64_t d;
        if (!des_u64(sc, &d)) return v_exc();
        shape[i] = (size_t)d;
        if (d && n > (sc->len - sc->pos) / d) return des_fail(sc, "array shape");
        n *= (size_t)d;
    }
    size_t bytes = n * (ty == AR_F64 ? 1 : 2) * sizeof(double);
    if (bytes > sc->len - sc->pos) return des_fail(sc, "array data");
    char err[AR_ERRLEN];
    Array *a = ar_new((ArType)ty, nd, shape, err);
    if (!a) {
        ser_fail(sc, "%s", err);
        return v_exc();
    }
    des_bytes(sc, ty == AR_F64 ? (void *)ar_f64(a) : (void *)ar_c128(a), bytes);
    ar_set_mask(a, mask);
    return arr_wrap(a);
}

static bool array_eq(Value a, Value b) { return ar_equal(AS_ARR(a), AS_ARR(b)) != 0; }

Value arr_wrap(Array *a)
{
    ObjArray *o = (ObjArray *)obj_alloc(sizeof(ObjArray), T_ARRAY);
    o->a = a;
    return v_obj(&o->h);
}

static Value wrap_or_error(VM *vm, Array *a, const char *err, const Node *site)
{
    if (!a) return vm_error(vm, site, "%s", err);
    return arr_wrap(a);
}

static Value scalar_value(ArScalar s)
{
    if (s.is_complex) return v_complex(s.re, s.im);
    return v_num(s.re);
}

static bool to_scalar(Value v, ArScalar *s)
{
    if (v.t == T_NUM) {
        *s = ar_scalar(v.n);
        return true;
    }
    if (v.t == T_BOOL) {
        *s = ar_scalar(v.b);
        return true;
    }
    if (v.t == T_COMPLEX) {
        *s = ar_cscalar(AS_CPLX(v)->re, AS_CPLX(v)->im);
        return true;
    }
    return false;
}

bool arr_op_of(BinOp op, ArOp *out)
{
    switch (op) {
    case OP_ADD: *out = AR_ADD; return true;
    case OP_SUB: *out = AR_SUB; return true;
    case OP_MUL: *out = AR_MUL; return true;
    case OP_DIV: *out = AR_DIV; return true;
    case OP_POW: *out = AR_POW; return true;
    case OP_EQ: *out = AR_EQ; return true;
    case OP_NE: *out = AR_NE; return true;
    case OP_LT: *out = AR_LT; return true;
    case OP_LE: *out = AR_LE; return true;
    case OP_GT: *out = AR_GT; return true;
    case OP_GE: *out = AR_GE; return true;
    case OP_IDIV:
    case OP_MOD:
    case OP_MATMUL:
    case OP_IN:
    case OP_NOTIN:
    case OP_NEG:
    case OP_POS:
    case OP_NOPS:
    case OP_BAND:
    case OP_BOR:
    case OP_BXOR:
    case OP_SHL:
    case OP_SHR:
    case OP_INVERT: return false;
    }
    qh_unreachable();
}

/* a list of numbers on one side of an array operator becomes an array */
static Array *list_to_array(VM *vm, Value v, const Node *site, bool *err);

/* The binop slot: arrays with arrays, lists of numbers and scalars; any
 * other partner is not ours to judge. */
static Value array_binop(VM *vm, BinOp op, Value a, Value b, const Node *site)
{
    ArScalar s;
    Value sides[2] = { a, b };
    for (int i = 0; i < 2; i++)
        if (sides[i].t != T_ARRAY && sides[i].t != T_LIST && !to_scalar(sides[i], &s))
            return v_notimpl();
    char err[AR_ERRLEN];
    Value tmp[2] = { v_nil(), v_nil() };
    for (int i = 0; i < 2; i++) {
        if (sides[i].t == T_LIST) {
            bool e = false;
            Array *x = list_to_array(vm, sides[i], site, &e);
            if (e) {
                decref(tmp[0]);
                return v_exc();
            }
            tmp[i] = arr_wrap(x);
            sides[i] = tmp[i];
        }
    }
    a = sides[0];
    b = sides[1];
    Value r;
    ArOp aop;
    if (op == OP_MATMUL) {
        if (a.t != T_ARRAY || b.t != T_ARRAY) {
            r = vm_error(vm, site, "@ needs two arrays, not %s and %s", type_name(a), type_name(b));
        } else {
            Array *out = NULL;
            int k = ar_matmul(AS_ARR(a), AS_ARR(b), &out, &s, err);
            r = k == AR_ERR      ? vm_error(vm, site, "%s", err)
                : k == AR_SCALAR ? scalar_value(s)
                                 : arr_wrap(out);
        }
    } else if (!arr_op_of(op, &aop)) {
        r = vm_error(vm, site, "unsupported operation %s on arrays", op_symbol(op));
    } else if (a.t == T_ARRAY && b.t == T_ARRAY) {
        r = wrap_or_error(vm, ar_binop(aop, AS_ARR(a), AS_ARR(b), err), err, site);
    } else {
        Value arr = a.t == T_ARRAY ? a : b, other = a.t == T_ARRAY ? b : a;
        bool ok = to_scalar(other, &s);
        qh_assert(ok);
        (void)ok;
        r = wrap_or_error(vm, ar_binop_scalar(aop, AS_ARR(arr), s, a.t != T_ARRAY, err), err, site);
    }
    decref(tmp[0]);
    decref(tmp[1]);
    return r;
}

static Value array_unop(VM *vm, BinOp op, Value a, const Node *site)
{
    if (op == OP_INVERT) return v_notimpl();
    if (op == OP_POS) {
        incref(a);
        return a;
    }
    char err[AR_ERRLEN];
    return wrap_or_error(vm, ar_neg(AS_ARR(a), err), err, site);
}

static bool array_len(Value a, size_t *out)
{
    *out = ar_len(AS_ARR(a));
    return true;
}
static bool array_truthy(Value a) { return ar_len(AS_ARR(a)) != 0; }

/* a double as an index the array room takes (out of range stays out of range) */
static long clamp_index(double d)
{
    if (d > (double)(LONG_MAX / 2)) return LONG_MAX / 2;
    if (d < (double)(LONG_MIN / 2)) return LONG_MIN / 2;
    return (long)d;
}

static bool to_ix(VM *vm, Value v, const Node *n, ArIndex *ix)
{
    if (v.t == T_SLICE) {
        const ObjSlice *sl = AS_SLICE(v);
        Value p3[3] = { sl->lo, sl->hi, sl->step };
        long parts[3];
        for (int i = 0; i < 3; i++) {
            Value p = p3[i];
            if (p.t == T_NIL) {
                parts[i] = AR_IX_NONE;
                continue;
            }
            if (p.t != T_NUM || p.n != floor(p.n)) {
                vm_error(vm, n, "slice bounds must be integers");
                return false;
            }
            parts[i] = clamp_index(p.n);
        }
        if (parts[2] == 0) {
            vm_error(vm, n, "slice step must not be zero");
            return false;
        }
        *ix = ar_ix_slice(parts[0], parts[1], parts[2]);
        return true;
    }
    if (v.t == T_ARRAY) { /* integer positions, or a mask (a comparison's result) */
        *ix = ar_ix_array(AS_ARR(v));
        return true;
    }
    if (v.t == T_LIST) { /* a list of integers, or of bools (a mask) */
        bool e = false;
        Array *x = list_to_array(vm, v, n, &e);
        if (e) return false;
        if (!x) {
            size_t zero = 0;
            char err[AR_ERRLEN];
            x = ar_new(AR_F64, 1, &zero, err); /* a[[]]: nothing selected */
            if (!x) {
                vm_error(vm, n, "%s", err);
                return false;
            }
        }
        *ix = ar_ix_array(x);
        ix->own = x;
        return true;
    }
    to_plain_number(&v); /* a tracked number indexes by its value */
    if (v.t != T_NUM || v.n != floor(v.n) || !isfinite(v.n)) {
        if (v.t == T_NUM)
            vm_error(vm, n, "array index must be an integer, got %g", v.n);
        else
            vm_error(vm, n, "array index must be an integer, not %s", type_name(v));
        return false;
    }
    *ix = ar_ix(clamp_index(v.n));
    return true;
}

static const Node *at(Node *const *isite, int k, const Node *site)
{
    return isite && isite[k] ? isite[k] : site;
}

static Value array_index(VM *vm, Value a, int nidx, const Value *idx, const Node *site,
                         Node *const *isite)
{
    ArIndex ix[AR_MAXDIM];
    if (nidx > AR_MAXDIM) return vm_error(vm, site, "too many indices for an array");
    for (int i = 0; i < nidx; i++)
        if (!to_ix(vm, idx[i], at(isite, i, site), &ix[i])) {
            ar_ix_release(ix, i);
            return v_exc();
        }
    char err[AR_ERRLEN];
    ArScalar s;
    Array *out = NULL;
    int k = ar_index(AS_ARR(a), ix, nidx, &s, &out, err);
    ar_ix_release(ix, nidx);
    if (k == AR_ERR) return vm_error(vm, site, "%s", err);
    return k == AR_SCALAR ? scalar_value(s) : arr_wrap(out);
}

static bool array_store(VM *vm, Value a, ArIndex *ix, int nidx, Value v, const Node *site);

static bool array_setindex(VM *vm, Value a, int nidx, const Value *idx, Value v, const Node *site,
                           Node *const *isite)
{
    ArIndex ix[AR_MAXDIM];
    if (nidx > AR_MAXDIM) {
        vm_error(vm, site, "too many indices for an array");
        return false;
    }
    for (int i = 0; i < nidx; i++)
        if (!to_ix(vm, idx[i], at(isite, i, site), &ix[i])) {
            ar_ix_release(ix, i);
            return false;
        }
    bool ok = array_store(vm, a, ix, nidx, v, site);
    ar_ix_release(ix, nidx);
    return ok;
}

/* a[ix] = v once the subscripts are read */
static bool array_store(VM *vm, Value a, ArIndex *ix, int nidx, Value v, const Node *site)
{
    char err[AR_ERRLEN];
    ArScalar s;
    int k;
    Value fv = tp_force(vm, v, site);
    if (IS_EXC(fv)) return false;
    if (to_scalar(fv, &s))
        k = ar_assign_scalar(AS_ARR(a), ix, nidx, s, err);
    else if (fv.t == T_ARRAY)
        k = ar_assign_array(AS_ARR(a), ix, nidx, AS_ARR(fv), err);
    else if (fv.t == T_LIST) {
        bool e = false;
        Array *x = list_to_array(vm, fv, site, &e);
        if (e) {
            decref(fv);
            return false;
        }
        k = ar_assign_array(AS_ARR(a), ix, nidx, x, err);
        ar_free(x);
    } else if (fv.t >= T_FIRST_OBJ && (type_of(fv)->flags & TF_INTERCEPT)) {
        /* a differentiated value: it would lose its derivative here */
        vm_error(
            vm, site,
            "cannot store a differentiated %s in an array made outside the differentiated code "
            "(build the array with array([...]) from the values, or keep them in a list)",
            type_name(fv));
        decref(fv);
        return false;
    } else {
        vm_error(vm, site, "cannot store %s in an array", type_name(fv));
        decref(fv);
        return false;
    }
    decref(fv);
    if (k == AR_ERR) {
        vm_error(vm, site, "%s", err);
        return false;
    }
    return true;
}

bool arr_subscript(VM *vm, Value v, const Node *site, void *ix) { return to_ix(vm, v, site, ix); }

Array *arr_from_list(VM *vm, Value list, const Node *site)
{
    bool e = false;
    Array *a = list_to_array(vm, list, site, &e);
    return e ? NULL : a;
}

static Value array_contains(VM *vm, Value a, Value x, const Node *site)
{
    ArScalar s;
    if (!to_scalar(x, &s))
        return vm_error(vm, site, "'in <array>' needs a number on the left, not %s", type_name(x));
    return v_bool(ar_contains(AS_ARR(a), s) != 0);
}

Value arr_row(VM *vm, Value a, size_t i, const Node *site)
{
    char err[AR_ERRLEN];
    ArScalar s;
    Array *out = NULL;
    long idx = (long)i;
    int k = ar_get(AS_ARR(a), &idx, 1, &s, &out, err);
    if (k == AR_ERR) return vm_error(vm, site, "%s", err);
    return k == AR_SCALAR ? scalar_value(s) : arr_wrap(out);
}

/* for x in array: its rows (elements of a 1-d array) */
static int array_iter(VM *vm, Value a, Iter *it, Value *out, const Node *site)
{
    if (it->pos >= ar_len(AS_ARR(a))) return 0;
    *out = arr_row(vm, a, it->pos++, site);
    return IS_EXC(*out) ? -1 : 1;
}

ArFunc arr_math_func(MathFn fn)
{
    switch (fn) {
    case M_ABS: return AR_ABS;
    case M_SQRT: return AR_SQRT;
    case M_SIN: return AR_SIN;
    case M_COS: return AR_COS;
    case M_TAN: return AR_TAN;
    case M_ASIN: return AR_ASIN;
    case M_ACOS: return AR_ACOS;
    case M_ATAN: return AR_ATAN;
    case M_EXP: return AR_EXP;
    case M_LOG: return AR_LOG;
    case M_LOG2: return AR_LOG2;
    case M_LOG10: return AR_LOG10;
    case M_FLOOR: return AR_FLOOR;
    case M_CEIL: return AR_CEIL;
    case M_ROUND: return AR_ROUND;
    case M_NFUNCS: break;
    }
    qh_unreachable();
}

/* math builtins on arrays; arg: round's digits */
static Value array_math(VM *vm, MathFn fn, Value a, long arg, const Node *site)
{
    char err[AR_ERRLEN];
    Array *r;
    if (fn == M_ROUND && arg > 300)
        r = ar_copy(AS_ARR(a), err); /* beyond a double's digits */
    else if (fn == M_ROUND)
        r = ar_round(AS_ARR(a), arg < -308 ? -308 : (int)arg, err);
    else
        r = ar_map(arr_math_func(fn), AS_ARR(a), err);
    return wrap_or_error(vm, r, err, site);
}

/* sum/min/max/mean of an array, optional axis= */
static Value array_reduce(VM *vm, ReduceFn fn, Value a, Args *args)
{
    ArReduce r;
    switch (fn) {
    case R_SUM: r = AR_SUM; break;
    case R_MIN: r = AR_MIN; break;
    case R_MAX: r = AR_MAX; break;
    case R_MEAN: r = AR_MEAN; break;
    case R_NFUNCS:
    default: qh_unreachable();
    }
    int axis = AR_AXIS_ALL;
    Value *ax = arg_kw(args, "axis");
    if (ax && ax->t != T_NIL) {
        if (ax->t != T_NUM || ax->n != floor(ax->n) || fabs(ax->n) > 64)
            return vm_error(vm, args->site, "axis must be an integer");
        axis = (int)ax->n;
    }
    char err[AR_ERRLEN];
    Array *out = NULL;
    ArScalar s;
    int k = ar_reduce(r, AS_ARR(a), axis, &out, &s, err);
    if (k == AR_ERR) return vm_error(vm, args->site, "%s", err);
    return k == AR_SCALAR ? scalar_value(s) : arr_wrap(out);
}

/* ---------------------------------------------------------------- array(list) */

typedef struct Flat {
    double *re, *im;
    size_t n, cap;
    bool cplx;
    int ndim;
    size_t shape[AR_MAXDIM];
    Value foreign;
    bool nonbool; /* a leaf that is not a bool: not a mask */
} Flat;

static bool flat_put(Flat *f, double re, double im)
{
    if (f->n == f->cap) {
        /* each block replaced only when its realloc succeeds: on failure both are still
         * owned, cap long, and the caller frees them */
        size_t cap = f->cap ? f->cap * 2 : 16;
        double *re_ = realloc(f->re, cap * sizeof(double));
        if (re_) f->re = re_;
        double *im_ = re_ ? realloc(f->im, cap * sizeof(double)) : NULL;
        if (!im_) return false;
        f->im = im_;
        f->cap = cap;
    }
    qh_assert(f->n < f->cap);
    f->re[f->n] = re;
    f->im[f->n] = im;
    f->n++;
    if (im != 0) f->cplx = true;
    return true;
}

static bool flatten(VM *vm, Value v, int depth, Flat *f, const Node *site)
{
    if (is_lazy(v)) {
        Value r = tp_force(vm, v, site);
        if (IS_EXC(r)) return false;
        bool ok = flatten(vm, r, depth, f, site);
        decref(r);
        return ok;
    }
    if (v.t == T_LIST || v.t == T_ARRAY) {
        size_t len = v.t == T_LIST ? AS_LIST(v)->len : ar_len(AS_ARR(v));
        if (depth >= AR_MAXDIM) {
            vm_error(vm, site, "array(): more than %d dimensions", AR_MAXDIM);
            return false;
        }
        if (depth == f->ndim) {
            if (f->n) {
                vm_error(
                    vm, site,
                    "array(): ragged nested lists (a number where a list was expected before)");
                return false;
            }
            f->ndim = depth + 1;
            f->shape[depth] = len;
        } else if (depth > f->ndim || f->shape[depth] != len) {
            vm_error(vm, site, "array(): ragged nested lists (lengths %zu and %zu at depth %d)",
                     f->shape[depth], len, depth + 1);
            return false;
        }
        for (size_t i = 0; i < len; i++) {
            Value e = v.t == T_LIST ? AS_LIST(v)->v[i] : arr_row(vm, v, i, site);
            if (IS_EXC(e)) return false;
            bool ok = flatten(vm, e, depth + 1, f, site);
            if (v.t == T_ARRAY) decref(e);
            if (!ok) return false;
        }
        return true;
    }
    ArScalar s;
    if (v.t >= T_FIRST_OBJ && (type_of(v)->flags & TF_INTERCEPT)) {
        /* a differentiated value: its kind builds the array (bi_array) */
        f->foreign = v;
        vm_error(
            vm, site,
            "a differentiated %s cannot go into an array here: make the array with array([...])",
            type_name(v));
        return false;
    }
    if (!to_scalar(v, &s)) {
        vm_error(vm, site, "array(): elements must be numbers, not %s", type_name(v));
        return false;
    }
    if (v.t != T_BOOL) f->nonbool = true;
    if (depth != f->ndim) {
        vm_error(vm, site, "array(): ragged nested lists");
        return false;
    }
    if (!flat_put(f, s.re, s.is_complex ? s.im : 0)) {
        vm_error(vm, site, "array(): out of memory");
        return false;
    }
    if (s.is_complex) f->cplx = true;
    return true;
}

static Array *flat_to_array(VM *vm, Flat *f, bool force_complex, const Node *site, bool *err)
{
    char e[AR_ERRLEN];
    size_t shape[AR_MAXDIM];
    int nd = f->ndim;
    for (int i = 0; i < nd; i++) shape[i] = f->shape[i];
    if (nd == 0) {
        vm_error(vm, site, "array() needs a list");
        *err = true;
        return NULL;
    }
    bool c = f->cplx || force_complex;
    Array *a = ar_new(c ? AR_C128 : AR_F64, nd, shape, e);
    if (!a) {
        vm_error(vm, site, "%s", e);
        *err = true;
        return NULL;
    }
    qh_assert(ar_size(a) == f->n); /* flatten saw a leaf for every place of the shape */
    if (c) {
        double _Complex *d = ar_c128(a);
        for (size_t i = 0; i < f->n; i++) d[i] = f->re[i] + f->im[i] * I;
    } else {
        double *d = ar_f64(a);
        if (f->n) memcpy(d, f->re, f->n * sizeof(double));
    }
    if (f->n && !f->nonbool) ar_set_mask(a, 1); /* array([true, false]): NumPy's bool array */
    return a;
}

static Array *list_to_array(VM *vm, Value v, const Node *site, bool *err)
{
    Flat f;
    memset(&f, 0, sizeof f);
    Array *a = NULL;
    if (!flatten(vm, v, 0, &f, site))
        *err = true;
    else
        a = flat_to_array(vm, &f, false, site, err);
    free(f.re);
    free(f.im);
    return a;
}

/* ---------------------------------------------------------------- builtins */

static Value bi_array(VM *vm, Args *a)
{
    Value v = a->v[0];
    Value *dt = arg_kw(a, "dtype");
    bool cplx = false;
    if (dt) {
        if (dt->t != T_STR ||
            (strcmp(AS_STR(*dt)->s, "complex") != 0 && strcmp(AS_STR(*dt)->s, "float") != 0))
            return vm_error(vm, a->site, "array(): dtype must be \"float\" or \"complex\"");
        cplx = strcmp(AS_STR(*dt)->s, "complex") == 0;
    }
    Flat f;
    memset(&f, 0, sizeof f);
    bool err = false;
    Array *r = NULL;
    if (v.t != T_LIST && v.t != T_ARRAY) {
        return vm_error(vm, a->site, "array() needs a list or array, not %s", type_name(v));
    }
    if (!flatten(vm, v, 0, &f, a->site)) {
        err = true;
        const TypeOps *ft = f.foreign.t >= T_FIRST_OBJ ? type_of(f.foreign) : NULL;
        if (ft && ft->builtin) { /* differentiated elements: their kind makes the array */
            free(f.re);
            free(f.im);
            return ft->builtin(vm, a->def, a);
        }
    } else
        r = flat_to_array(vm, &f, cplx, a->site, &err);
    free(f.re);
    free(f.im);
    if (err) return v_exc();
    if (dt && !cplx && f.cplx) {
        ar_free(r);
        return vm_error(vm, a->site, "array(): complex elements with dtype \"float\"");
    }
    return arr_wrap(r);
}

/* shape arguments: n, m, ... or one list [n, m] */
static bool shape_args(VM *vm, Args *a, int from, int *nd, size_t *shape, const char *fn)
{
    Value *src = a->v + from;
    int n = a->n - from;
    if (n == 1 && src[0].t == T_LIST) {
        src = AS_LIST(src[0])->v;
        n = (int)AS_LIST(a->v[from])->len;
    }
    if (n < 1 || n > AR_MAXDIM) {
        vm_error(vm, a->site, "%s(): needs 1 to %d dimensions", fn, AR_MAXDIM);
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (src[i].t != T_NUM || src[i].n != floor(src[i].n) || src[i].n < 0 || src[i].n > 1e12) {
            vm_error(vm, a->site, "%s(): dimensions must be non-negative integers", fn);
            return false;
        }
        shape[i] = (size_t)src[i].n;
    }
    *nd = n;
    return true;
}

typedef enum MakerKind { MK_ZEROS, MK_ONES, MK_RANDN, MK_RAND } MakerKind;

static Value maker(VM *vm, Args *a, MakerKind kind, const char *fn)
{
    int nd;
    size_t shape[AR_MAXDIM];
    if (!shape_args(vm, a, 0, &nd, shape, fn)) return v_exc();
    char err[AR_ERRLEN];
    Array *r = NULL;
    Value *dt = arg_kw(a, "dtype");
    ArType t = dt && dt->t == T_STR && strcmp(AS_STR(*dt)->s, "complex") == 0 ? AR_C128 : AR_F64;
    switch (kind) {
    case MK_ZEROS: r = ar_zeros(t, nd, shape, err); break;
    case MK_ONES: r = ar_ones(t, nd, shape, err); break;
    case MK_RANDN:
    case MK_RAND: {
        Value *sk = arg_kw(a, "seed");
        Rng local, *rng = &vm->rng;
        if (sk && sk->t != T_NIL) {
            if (sk->t != T_NUM || sk->n != floor(sk->n))
                return vm_error(vm, a->site, "%s(): seed must be an integer", fn);
            rng_seed(&local, (uint64_t)(int64_t)sk->n);
            rng = &local;
        }
        r = kind == MK_RANDN ? ar_randn(nd, shape, rng, err) : ar_rand(nd, shape, rng, err);
        break;
    }
    }
    return wrap_or_error(vm, r, err, a->site);
}
static const char *const kw_dtype[] = { "dtype", NULL };
static const char *const kw_seed[] = { "seed", NULL };
static Value bi_zeros(VM *vm, Args *a) { return maker(vm, a, MK_ZEROS, "zeros"); }
static Value bi_ones(VM *vm, Args *a) { return maker(vm, a, MK_ONES, "ones"); }
static Value bi_randn(VM *vm, Args *a) { return maker(vm, a, MK_RANDN, "randn"); }
static Value bi_rand(VM *vm, Args *a) { return maker(vm, a, MK_RAND, "rand"); }

static Value bi_eye(VM *vm, Args *a)
{
    long n;
    if (!arg_int(vm, a, 0, "eye() size", &n)) return v_exc();
    if (n < 0) return vm_error(vm, a->site, "eye(): size must be non-negative");
    char err[AR_ERRLEN];
    return wrap_or_error(vm, ar_eye((size_t)n, err), err, a->site);
}

static Value bi_full(VM *vm, Args *a)
{
    int nd;
    size_t shape[AR_MAXDIM];
    Args t = *a; /* the shape is the first argument only */
    t.n = 1;
    if (!shape_args(vm, &t, 0, &nd, shape, "full")) return v_exc();
    ArScalar s;
    if (!to_scalar(a->v[1], &s))
        return vm_error(vm, a->site, "full(): fill value must be a number");
    char err[AR_ERRLEN];
    return wrap_or_error(vm, ar_full(nd, shape, s, err), err, a->site);
}

static Value bi_linspace(VM *vm, Args *a)
{
    double x, y;
    long n = 50;
    if (!arg_num(vm, a, 0, "linspace() start", &x) || !arg_num(vm, a, 1, "linspace() stop", &y))
        return v_exc();
    if (a->n > 2 && !arg_int(vm, a, 2, "linspace() count", &n)) return v_exc();
    char err[AR_ERRLEN];
    return wrap_or_error(vm, ar_linspace(x, y, n, err), err, a->site);
}

static Value bi_arange(VM *vm, Args *a)
{
    double x = 0, y, st = 1;
    if (a->n == 1) {
        if (!arg_num(vm, a, 0, "arange() stop", &y)) return v_exc();
    } else {
        if (!arg_num(vm, a, 0, "arange() start", &x) || !arg_num(vm, a, 1, "arange() stop", &y))
            return v_exc();
        if (a->n > 2 && !arg_num(vm, a, 2, "arange() step", &st)) return v_exc();
    }
    char err[AR_ERRLEN];
    return wrap_or_error(vm, ar_arange(x, y, st, err), err, a->site);
}

static bool want_array(VM *vm, Args *a, int i, const char *fn)
{
    if (a->v[i].t == T_ARRAY) return true;
    vm_error(vm, a->site, "%s() needs an array, not %s", fn, type_name(a->v[i]));
    return false;
}

static Value bi_shape(VM *vm, Args *a)
{
    if (a->v[0].t == T_LIST) {
        ObjList *r = list_new(1);
        r->v[r->len++] = v_num((double)AS_LIST(a->v[0])->len);
        return v_list(r);
    }
    if (!want_array(vm, a, 0, "shape")) return v_exc();
    Array *x = AS_ARR(a->v[0]);
    ObjList *r = list_new((size_t)ar_ndim(x));
    for (int i = 0; i < ar_ndim(x); i++) r->v[r->len++] = v_num((double)ar_shape(x)[i]);
    return v_list(r);
}

static Value bi_reshape(VM *vm, Args *a)
{
    if (!want_array(vm, a, 0, "reshape")) return v_exc();
    Value *src = a->v + 1;
    int n = a->n - 1;
    if (n == 1 && src[0].t == T_LIST) {
        n = (int)AS_LIST(src[0])->len;
        src = AS_LIST(src[0])->v;
    }
    if (n < 1 || n > AR_MAXDIM)
        return vm_error(vm, a->site, "reshape(): needs 1 to %d dimensions", AR_MAXDIM);
    long shape[AR_MAXDIM];
    for (int i = 0; i < n; i++) {
        if (src[i].t != T_NUM || src[i].n != floor(src[i].n))
            return vm_error(vm, a->site, "reshape(): dimensions must be integers");
        shape[i] = (long)src[i].n;
    }
    char err[AR_ERRLEN];
    return wrap_or_error(vm, ar_reshape(AS_ARR(a->v[0]), n, shape, err), err, a->site);
}

#define UNARY_ARRAY(nm, call)                                                            \
    static Value bi_##nm(VM *vm, Args *a)                                                \
    {                                                                                    \
        char err[AR_ERRLEN];                                                             \
        Value tmp = v_nil();                                                             \
        Value v = a->v[0];                                                               \
        if (v.t == T_LIST) {                                                             \
            bool e = false;                                                              \
            Array *x = list_to_array(vm, v, a->site, &e);                                \
            if (e) return v_exc();                                                       \
            tmp = arr_wrap(x);                                                           \
            v = tmp;                                                                     \
        }                                                                                \
        if (v.t != T_ARRAY) {                                                            \
            decref(tmp);                                                                 \
            return vm_error(vm, a->site, #nm "() needs an array, not %s", type_name(v)); \
        }                                                                                \
        Value r = wrap_or_error(vm, call(AS_ARR(v), err), err, a->site);                 \
        decref(tmp);                                                                     \
        return r;                                                                        \
    }
UNARY_ARRAY(transpose, ar_transpose)
UNARY_ARRAY(eigvalsh, ar_eigvalsh)

static Value complex_part(VM *vm, Args *a, int which)
{
    Value v = a->v[0];
    if (v.t == T_NUM) return which == 1 ? v_num(0) : v;
    if (v.t == T_COMPLEX) {
        if (which == 0) return v_num(AS_CPLX(v)->re);
        if (which == 1) return v_num(AS_CPLX(v)->im);
        return v_complex(AS_CPLX(v)->re, -AS_CPLX(v)->im);
    }
    if (v.t != T_ARRAY)
        return vm_error(vm, a->site, "%s() needs a number or array, not %s",
                        which == 0   ? "real"
                        : which == 1 ? "imag"
                                     : "conj",
                        type_name(v));
    char err[AR_ERRLEN];
    Array *r = which == 0   ? ar_real(AS_ARR(v), err)
               : which == 1 ? ar_imag(AS_ARR(v), err)
                            : ar_conj(AS_ARR(v), err);
    return wrap_or_error(vm, r, err, a->site);
}
static Value bi_real(VM *vm, Args *a) { return complex_part(vm, a, 0); }
static Value bi_imag(VM *vm, Args *a) { return complex_part(vm, a, 1); }
static Value bi_conj(VM *vm, Args *a) { return complex_part(vm, a, 2); }

static Value two_arrays(VM *vm, Args *a, const char *fn, Value *x, Value *y, Value *tmps)
{
    tmps[0] = tmps[1] = v_nil();
    for (int i = 0; i < 2; i++) {
        Value v = a->v[i];
        tmps[i] = v_nil();
        if (v.t == T_LIST) {
            bool e = false;
            Array *ar = list_to_array(vm, v, a->site, &e);
            if (e) {
                decref(tmps[0]);
                return v_exc();
            }
            tmps[i] = arr_wrap(ar);
            v = tmps[i];
        }
        if (v.t != T_ARRAY) {
            decref(tmps[0]);
            decref(tmps[1]);
            return vm_error(vm, a->site, "%s() needs arrays, not %s", fn, type_name(v));
        }
        if (i == 0)
            *x = v;
        else
            *y = v;
    }
    return v_nil();
}

static Value bi_dot(VM *vm, Args *a)
{
    if ((a->v[0].t == T_NUM || a->v[0].t == T_COMPLEX) &&
        (a->v[1].t == T_NUM || a->v[1].t == T_COMPLEX))
        return tp_binop(vm, OP_MUL, a->v[0], a->v[1], a->site);
    Value x = v_nil(), y = v_nil(), t[2];
    Value e = two_arrays(vm, a, "dot", &x, &y, t);
    if (IS_EXC(e)) return e;
    qh_assert(x.t == T_ARRAY && y.t == T_ARRAY);
    char err[AR_ERRLEN];
    Array *out = NULL;
    ArScalar s;
    int k = ar_dot(AS_ARR(x), AS_ARR(y), &out, &s, err);
    decref(t[0]);
    decref(t[1]);
    if (k == AR_ERR) return vm_error(vm, a->site, "%s", err);
    return k == AR_SCALAR ? scalar_value(s) : arr_wrap(out);
}

static Value bi_kron(VM *vm, Args *a)
{
    Value x = v_nil(), y = v_nil(), t[2];
    Value e = two_arrays(vm, a, "kron", &x, &y, t);
    if (IS_EXC(e)) return e;
    qh_assert(x.t == T_ARRAY && y.t == T_ARRAY);
    char err[AR_ERRLEN];
    Value r = wrap_or_error(vm, ar_kron(AS_ARR(x), AS_ARR(y), err), err, a->site);
    decref(t[0]);
    decref(t[1]);
    return r;
}

static Value bi_norm(VM *vm, Args *a)
{
    Value v = a->v[0];
    if (v.t == T_NUM) return v_num(fabs(v.n));
    if (v.t == T_COMPLEX) return v_num(hypot(AS_CPLX(v)->re, AS_CPLX(v)->im));
    if (v.t == T_LIST) {
        bool e = false;
        Array *x = list_to_array(vm, v, a->site, &e);
        if (e) return v_exc();
        double n = ar_norm(x);
        ar_free(x);
        return v_num(n);
    }
    if (v.t != T_ARRAY) return vm_error(vm, a->site, "norm() needs an array, not %s", type_name(v));
    return v_num(ar_norm(AS_ARR(v)));
}

static Value bi_mean(VM *vm, Args *a)
{
    Value v = a->v[0];
    if (v.t == T_LIST) {
        bool e = false;
        Array *x = list_to_array(vm, v, a->site, &e);
        if (e) return v_exc();
        Value w = arr_wrap(x);
        Value r = array_reduce(vm, R_MEAN, w, a);
        decref(w);
        return r;
    }
    if (v.t != T_ARRAY)
        return vm_error(vm, a->site, "mean() needs an array or list, not %s", type_name(v));
    return array_reduce(vm, R_MEAN, v, a);
}

static Value bi_tolist(VM *vm, Args *a)
{
    if (!want_array(vm, a, 0, "tolist")) return v_exc();
    Value v = a->v[0];
    size_t n = ar_len(AS_ARR(v));
    ObjList *l = list_new(n);
    for (size_t i = 0; i < n; i++) {
        Value r = arr_row(vm, v, i, a->site);
        if (IS_EXC(r)) {
            decref(v_list(l));
            return r;
        }
        if (r.t == T_ARRAY) {
            Args t = { 1, &r, 0, NULL, NULL, a->site, a->def };
            Value s = bi_tolist(vm, &t);
            decref(r);
            if (IS_EXC(s)) {
                decref(v_list(l));
                return s;
            }
            r = s;
        }
        l->v[l->len++] = r;
    }
    return v_list(l);
}

static const char *const kw_axis[] = { "axis", NULL };

static const BuiltinDef builtins_array[] = {
    { "array", bi_array, 1, 1, 0, kw_dtype, 0 },
    { "zeros", bi_zeros, 1, AR_MAXDIM, 0, kw_dtype, 0 },
    { "ones", bi_ones, 1, AR_MAXDIM, 0, kw_dtype, 0 },
    { "eye", bi_eye, 1, 1, 0, NULL, 0 },
    { "full", bi_full, 2, 2, 0, NULL, 0 },
    { "linspace", bi_linspace, 2, 3, 0, NULL, 0 },
    { "arange", bi_arange, 1, 3, 0, NULL, 0 },
    { "randn", bi_randn, 1, AR_MAXDIM, 0, kw_seed, 0 },
    { "rand", bi_rand, 1, AR_MAXDIM, 0, kw_seed, 0 },
    { "shape", bi_shape, 1, 1, 0, NULL, 0 },
    { "reshape", bi_reshape, 2, 1 + AR_MAXDIM, 0, NULL, 0 },
    { "transpose", bi_transpose, 1, 1, 0, NULL, 0 },
    { "dot", bi_dot, 2, 2, 0, NULL, 0 },
    { "kron", bi_kron, 2, 2, 0, NULL, 0 },
    { "mean", bi_mean, 1, 1, 0, kw_axis, 0 },
    { "norm", bi_norm, 1, 1, 0, NULL, 0 },
    { "real", bi_real, 1, 1, 0, NULL, 0 },
    { "imag", bi_imag, 1, 1, 0, NULL, 0 },
    { "conj", bi_conj, 1, 1, 0, NULL, 0 },
    { "eigvalsh", bi_eigvalsh, 1, 1, 0, NULL, 0 },
    { "tolist", bi_tolist, 1, 1, 0, NULL, 0 },
    { NULL, NULL, 0, 0, 0, NULL, 0 },
};

static const TypeOps array_ops = {
    .name = "array",
    .free = array_free,
    .copy = array_copy,
    .ser = array_ser,
    .deser = array_deser,
    .repr = array_repr,
    .eq = array_eq,
    .binop = array_binop,
    .unop = array_unop,
    .truthy = array_truthy,
    .index = array_index,
    .setindex = array_setindex,
    .len = array_len,
    .iter = array_iter,
    .contains = array_contains,
    .math = array_math,
    .reduce = array_reduce,
};

void arrayval_open(void)
{
    type_register(T_ARRAY, &array_ops);
    builtins_add(builtins_array);
}
