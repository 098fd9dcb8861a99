/* nplib.c — NumPy's functions on arrays as qh builtins (lang/arrays.md,
 * "NumPy's functions"): numpy.linalg (inv, solve, det, pinv, eigh, eig,
 * svd, qr, expm), and trace, diag, outer, sign, argmax/argmin/argsort,
 * sort, cumsum, var/std, where, clip, unique, bincount,
 * concatenate/stack, allclose/isclose, polyfit, block_diag. Arguments are
 * read here (lists become arrays, NumPy's keywords and defaults), the
 * kernels are the array room's, results that NumPy gives as tuples are
 * lists. Knows values, the dispatcher, arrays as values and array.h. */
#include "nplib.h"
#include "array.h"
#include "arrayval.h"
#include "qh_assert.h"
#include "track.h"
#include "track_np.h"
#include "types.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- arguments */

/* An argument as an array: arrays as they are, lists converted, numbers
 * (scalar_ok) as a one-element array. *own holds what must be freed. */
static const Array *arr_arg(VM *vm, Args *a, Value v, const char *fn, bool scalar_ok, Array **own)
{
    *own = NULL;
    if (v.t == T_ARRAY) return AS_ARR(v);
    char err[AR_ERRLEN];
    if (v.t == T_LIST) {
        *own = arr_from_list(vm, v, a->site);
        return *own;
    }
    double re, im;
    if (scalar_ok && (as_complex(v, &re, &im) || tp_number(v, &re))) {
        if (v.t != T_COMPLEX) im = 0;
        size_t one = 1;
        *own = ar_full(1, &one, v.t == T_COMPLEX ? ar_cscalar(re, im) : ar_scalar(re), err);
        if (!*own) vm_error(vm, a->site, "%s", err);
        return *own;
    }
    vm_error(vm, a->site, "%s() needs an array%s, not %s", fn, scalar_ok ? " or a number" : "",
             type_name(v));
    return NULL;
}

static bool is_scalar(Value v)
{
    double d;
    return v.t == T_COMPLEX || tp_number(v, &d);
}

static Value kwv(Args *a, int pos, const char *name, Value dflt)
{
    if (pos >= 0 && pos < a->n) return a->v[pos];
    Value *k = arg_kw(a, name);
    return k ? *k : dflt;
}

/* an integer option (axis, k, ddof...) or nil (AR_AXIS_ALL) */
static bool int_opt(VM *vm, Args *a, Value v, const char *what, long *out)
{
    double d;
    if (v.t == T_NIL) {
        *out = AR_AXIS_ALL;
        return true;
    }
    if (!tp_number(v, &d) || d != floor(d) || fabs(d) > 1e9) {
        vm_error(vm, a->site, "%s() %s must be an integer", a->def->name, what);
        return false;
    }
    *out = (long)d;
    return true;
}

static bool flag(VM *vm, Args *a, int pos, const char *name, bool dflt, bool *out)
{
    bool e = false;
    *out = tp_truthy(vm, kwv(a, pos, name, v_bool(dflt)), a->site, &e);
    return !e;
}

static Value wrap(VM *vm, Args *a, Array *r, const char *err)
{
    if (!r) return vm_error(vm, a->site, "%s", err);
    return arr_wrap(r);
}

static Value scalar(ArScalar s) { return s.is_complex ? v_complex(s.re, s.im) : v_num(s.re); }

/* the one element of a (1,)-shaped result made from scalar operands */
static Value maybe_scalar(VM *vm, Args *a, Array *r, bool all_scalar, const char *err)
{
    if (!r) return vm_error(vm, a->site, "%s", err);
    if (all_scalar && ar_size(r) == 1) {
        Value v = scalar(ar_item(r, 0));
        ar_free(r);
        return v;
    }
    return arr_wrap(r);
}

static Value list_of(Value *v, int n)
{
    ObjList *l = list_new((size_t)n);
    for (int i = 0; i < n; i++) l->v[l->len++] = v[i];
    return v_list(l);
}

/* one array argument, a kernel, one array result */
typedef Array *(*Unary)(const Array *, char *);
static Value unary(VM *vm, Args *a, Unary f)
{
    Array *own;
    const Array *x = arr_arg(vm, a, a->v[0], a->def->name, false, &own);
    if (!x) return v_exc();
    char err[AR_ERRLEN];
    Value r = wrap(vm, a, f(x, err), err);
    ar_free(own);
    return r;
}

/* ---------------------------------------------------------------- numpy.linalg */

static Value bi_inv(VM *vm, Args *a) { return unary(vm, a, ar_inv); }
static Value bi_expm(VM *vm, Args *a) { return unary(vm, a, ar_expm); }

static Value bi_solve(VM *vm, Args *a)
{
    Array *o1, *o2 = NULL;
    const Array *x = arr_arg(vm, a, a->v[0], "solve", false, &o1);
    const Array *y = x ? arr_arg(vm, a, a->v[1], "solve", false, &o2) : NULL;
    char err[AR_ERRLEN];
    Value r = y ? wrap(vm, a, ar_solve(x, y, err), err) : v_exc();
    ar_free(o1);
    ar_free(o2);
    return r;
}

static Value bi_det(VM *vm, Args *a)
{
    Array *own, *out = NULL;
    const Array *x = arr_arg(vm, a, a->v[0], "det", false, &own);
    if (!x) return v_exc();
    char err[AR_ERRLEN];
    ArScalar s;
    int k = ar_det(x, &out, &s, err);
    ar_free(own);
    if (k == AR_ERR) return vm_error(vm, a->site, "%s", err);
    return k == AR_SCALAR ? scalar(s) : arr_wrap(out);
}

static Value bi_pinv(VM *vm, Args *a)
{
    double rc = 1e-15;
    Value rv = kwv(a, 1, "rcond", v_nil());
    if (rv.t != T_NIL && !tp_number(rv, &rc))
        return vm_error(vm, a->site, "pinv() rcond must be a number");
    Array *own;
    const Array *x = arr_arg(vm, a, a->v[0], "pinv", false, &own);
    if (!x) return v_exc();
    char err[AR_ERRLEN];
    Value r = wrap(vm, a, ar_pinv(x, rc, err), err);
    ar_free(own);
    return r;
}

/* eigh / eig: [eigenvalues, eigenvectors] (NumPy's pair) */
static Value eig_pair(VM *vm, Args *a, bool herm)
{
    Array *own, *w = NULL, *v = NULL;
    const Array *x = arr_arg(vm, a, a->v[0], a->def->name, false, &own);
    if (!x) return v_exc();
    if (herm) {
        Value up = kwv(a, 1, "UPLO", v_nil());
        if (up.t != T_NIL && (up.t != T_STR || strcmp(AS_STR(up)->s, "L") != 0)) {
            ar_free(own);
            return vm_error(vm, a->site, "eigh() UPLO must be \"L\" (the lower triangle is read)");
        }
    }
    char err[AR_ERRLEN];
    int k = herm ? ar_eigh(x, &w, &v, err) : ar_eig(x, &w, &v, err);
    ar_free(own);
    if (k) return vm_error(vm, a->site, "%s", err);
    Value p[2] = { arr_wrap(w), arr_wrap(v) };
    return list_of(p, 2);
}
static Value bi_eigh(VM *vm, Args *a) { return eig_pair(vm, a, true); }
static Value bi_eig(VM *vm, Args *a) { return eig_pair(vm, a, false); }

static Value bi_svd(VM *vm, Args *a)
{
    bool full, uv;
    if (!flag(vm, a, 1, "full_matrices", true, &full) || !flag(vm, a, 2, "compute_uv", true, &uv))
        return v_exc();
    Array *own, *u = NULL, *s = NULL, *vh = NULL;
    const Array *x = arr_arg(vm, a, a->v[0], "svd", false, &own);
    if (!x) return v_exc();
    char err[AR_ERRLEN];
    int k = ar_svd(x, full, uv, &u, &s, &vh, err);
    ar_free(own);
    if (k) return vm_error(vm, a->site, "%s", err);
    if (!uv) return arr_wrap(s);
    Value p[3] = { arr_wrap(u), arr_wrap(s), arr_wrap(vh) };
    return list_of(p, 3);
}

static Value bi_qr(VM *vm, Args *a)
{
    Value mv = kwv(a, 1, "mode", v_nil());
    int mode = 0;
    if (mv.t != T_NIL) {
        const char *m = mv.t == T_STR ? AS_STR(mv)->s : "";
        mode = strcmp(m, "reduced") == 0    ? 0
               : strcmp(m, "complete") == 0 ? 1
               : strcmp(m, "r") == 0        ? 2
                                            : -1;
        if (mode < 0)
            return vm_error(vm, a->site, "qr() mode must be \"reduced\", \"complete\" or \"r\"");
    }
    Array *own, *q = NULL, *r = NULL;
    const Array *x = arr_arg(vm, a, a->v[0], "qr", false, &own);
    if (!x) return v_exc();
    char err[AR_ERRLEN];
    int k = ar_qr(x, mode, &q, &r, err);
    ar_free(own);
    if (k) return vm_error(vm, a->site, "%s", err);
    if (mode == 2) return arr_wrap(r);
    Value p[2] = { arr_wrap(q), arr_wrap(r) };
    return list_of(p, 2);
}

/* ---------------------------------------------------------------- trace, diag, outer, sign */

static Value bi_trace(VM *vm, Args *a)
{
    long off;
    Value ov = kwv(a, 1, "offset", v_num(0));
    if (!int_opt(vm, a, ov, "offset", &off)) return v_exc();
    Array *own, *out = NULL;
    const Array *x = arr_arg(vm, a, a->v[0], "trace", false, &own);
    if (!x) return v_exc();
    char err[AR_ERRLEN];
    ArScalar s;
    int k = ar_trace(x, off, &out, &s, err);
    ar_free(own);
    if (k == AR_ERR) return vm_error(vm, a->site, "%s", err);
    return k == AR_SCALAR ? scalar(s) : arr_wrap(out);
}

static Value bi_diag(VM *vm, Args *a)
{
    long k;
    if (!int_opt(vm, a, kwv(a, 1, "k", v_num(0)), "k", &k)) return v_exc();
    Array *own;
    const Array *x = arr_arg(vm, a, a->v[0], "diag", false, &own);
    if (!x) return v_exc();
    char err[AR_ERRLEN];
    Value r = wrap(vm, a, ar_diag(x, k, err), err);
    ar_free(own);
    return r;
}

static Value bi_outer(VM *vm, Args *a)
{
    Array *o1, *o2 = NULL;
    const Array *x = arr_arg(vm, a, a->v[0], "outer", true, &o1);
    const Array *y = x ? arr_arg(vm, a, a->v[1], "outer", true, &o2) : NULL;
    char err[AR_ERRLEN];
    Value r = y ? wrap(vm, a, ar_outer(x, y, err), err) : v_exc();
    ar_free(o1);
    ar_free(o2);
    return r;
}

static Value bi_sign(VM *vm, Args *a)
{
    Array *own;
    const Array *x = arr_arg(vm, a, a->v[0], "sign", true, &own);
    if (!x) return v_exc();
    char err[AR_ERRLEN];
    Value r = maybe_scalar(vm, a, ar_sign(x, err), is_scalar(a->v[0]), err);
    ar_free(own);
    return r;
}

/* ---------------------------------------------------------------- ordering */

static Value argext(VM *vm, Args *a, bool want_max)
{
    long axis;
    if (!int_opt(vm, a, kwv(a, 1, "axis", v_nil()), "axis", &axis)) return v_exc();
    Array *own, *out = NULL;
    const Array *x = arr_arg(vm, a, a->v[0], a->def->name, false, &own);
    if (!x) return v_exc();
    char err[AR_ERRLEN];
    ArScalar s;
    int k = ar_argminmax(x, want_max, (int)axis, &out, &s, err);
    ar_free(own);
    if (k == AR_ERR) return vm_error(vm, a->site, "%s", err);
    return k == AR_SCALAR ? scalar(s) : arr_wrap(out);
}
static Value bi_argmax(VM *vm, Args *a) { return argext(vm, a, true); }
static Value bi_argmin(VM *vm, Args *a) { return argext(vm, a, false); }

static Value sorter(VM *vm, Args *a, bool idx)
{
    long axis;
    if (!int_opt(vm, a, kwv(a, 1, "axis", v_num(-1)), "axis", &axis)) return v_exc();
    Value kind = kwv(a, 2, "kind", v_nil());
    if (kind.t != T_NIL && kind.t != T_STR)
        return vm_error(vm, a->site, "%s() kind must be a string", a->def->name);
    Array *own;
    const Array *x = arr_arg(vm, a, a->v[0], a->def->name, false, &own);
    if (!x) return v_exc();
    char err[AR_ERRLEN];
    Array *r = idx ? ar_argsort(x, (int)axis, err) : ar_sort(x, (int)axis, err);
    ar_free(own);
    return wrap(vm, a, r, err);
}
static Value bi_argsort(VM *vm, Args *a) { return sorter(vm, a, true); }
static Value bi_sort(VM *vm, Args *a) { return sorter(vm, a, false); }

static Value bi_cumsum(VM *vm, Args *a)
{
    long axis;
    if (!int_opt(vm, a, kwv(a, 1, "axis", v_nil()), "axis", &axis)) return v_exc();
    Array *own;
    const Array *x = arr_arg(vm, a, a->v[0], "cumsum", true, &own);
    if (!x) return v_exc();
    char err[AR_ERRLEN];
    Value r = wrap(vm, a, ar_cumsum(x, (int)axis, err), err);
    ar_free(own);
    return r;
}

/* ---------------------------------------------------------------- var, std */

Value np_var(VM *vm, Args *a, bool root)
{
    if (track_is(a->v[0])) return track_np_var(vm, a, root); /* differentiated */
    long axis;
    double ddof = 0;
    Value dv = kwv(a, -1, "ddof", v_num(0));
    if (!int_opt(vm, a, kwv(a, 1, "axis", v_nil()), "axis", &axis)) return v_exc();
    if (!tp_number(dv, &ddof))
        return vm_error(vm, a->site, "%s() ddof must be a number", root ? "std" : "var");
    bool keep;
    if (!flag(vm, a, -1, "keepdims", false, &keep)) return v_exc();
    Array *own, *out = NULL;
    const Array *x = arr_arg(vm, a, a->v[0], root ? "std" : "var", true, &own);
    if (!x) return v_exc();
    char err[AR_ERRLEN];
    ArScalar s;
    ArVarSpec sp = { (int)axis, ddof, keep, root };
    int k = ar_var(x, &sp, &out, &s, err);
    ar_free(own);
    if (k == AR_ERR) return vm_error(vm, a->site, "%s", err);
    return k == AR_SCALAR ? scalar(s) : arr_wrap(out);
}
static Value bi_std(VM *vm, Args *a) { return np_var(vm, a, true); }

/* ---------------------------------------------------------------- where, clip, isclose */

static Value bi_where(VM *vm, Args *a)
{
    char err[AR_ERRLEN];
    if (a->n == 1) { /* where(c): the indices of the non-zero elements, per axis */
        Array *own;
        const Array *c = arr_arg(vm, a, a->v[0], "where", false, &own);
        if (!c) return v_exc();
        int nd = ar_ndim(c);
        size_t n = 0, tot = ar_size(c);
        for (size_t i = 0; i < tot; i++) {
            ArScalar e = ar_item(c, i);
            n += e.re != 0 || e.im != 0;
        }
        Value parts[AR_MAXDIM];
        for (int d = 0; d < nd; d++) {
            Array *r = ar_new(AR_F64, 1, &n, err);
            if (!r) {
                for (int q = 0; q < d; q++) decref(parts[q]);
                ar_free(own);
                return vm_error(vm, a->site, "%s", err);
            }
            parts[d] = arr_wrap(r);
        }
        size_t k = 0;
        for (size_t i = 0; i < tot; i++) {
            ArScalar e = ar_item(c, i);
            if (e.re == 0 && e.im == 0) continue;
            size_t rem = i;
            for (int d = nd - 1; d >= 0; d--) {
                ar_f64(AS_ARR(parts[d]))[k] = (double)(rem % ar_shape(c)[d]);
                rem /= ar_shape(c)[d];
            }
            k++;
        }
        ar_free(own);
        return list_of(parts, nd);
    }
    if (a->n != 3)
        return vm_error(vm, a->site, "where() takes 1 or 3 arguments but %d were given", a->n);
    Array *o[3] = { NULL, NULL, NULL };
    const Array *x[3];
    bool all = true;
    for (int i = 0; i < 3; i++) {
        x[i] = arr_arg(vm, a, a->v[i], "where", true, &o[i]);
        all = all && is_scalar(a->v[i]);
        if (!x[i]) {
            for (int q = 0; q < i; q++) ar_free(o[q]);
            return v_exc();
        }
    }
    Value r = maybe_scalar(vm, a, ar_where(x[0], x[1], x[2], err), all, err);
    for (int i = 0; i < 3; i++) ar_free(o[i]);
    return r;
}

static Value bi_clip(VM *vm, Args *a)
{
    Value lv = kwv(a, 1, "a_min", v_nil()), hv = kwv(a, 2, "a_max", v_nil());
    Array *o[3] = { NULL, NULL, NULL };
    const Array *x = arr_arg(vm, a, a->v[0], "clip", true, &o[0]);
    const Array *lo = x && lv.t != T_NIL ? arr_arg(vm, a, lv, "clip", true, &o[1]) : NULL;
    const Array *hi = x && hv.t != T_NIL ? arr_arg(vm, a, hv, "clip", true, &o[2]) : NULL;
    char err[AR_ERRLEN];
    Value r;
    if (!x || (lv.t != T_NIL && !lo) || (hv.t != T_NIL && !hi))
        r = v_exc();
    else
        r = maybe_scalar(vm, a, ar_clip(x, lo, hi, err),
                         is_scalar(a->v[0]) && (lv.t == T_NIL || is_scalar(lv)) &&
                             (hv.t == T_NIL || is_scalar(hv)),
                         err);
    for (int i = 0; i < 3; i++) ar_free(o[i]);
    return r;
}

static Value closeness(VM *vm, Args *a, bool all)
{
    double rtol = 1e-05, atol = 1e-08;
    Value rv = kwv(a, 2, "rtol", v_nil()), av = kwv(a, 3, "atol", v_nil());
    if ((rv.t != T_NIL && !tp_number(rv, &rtol)) || (av.t != T_NIL && !tp_number(av, &atol)))
        return vm_error(vm, a->site, "%s() rtol and atol must be numbers", a->def->name);
    bool en;
    if (!flag(vm, a, 4, "equal_nan", false, &en)) return v_exc();
    Array *o1, *o2 = NULL;
    const Array *x = arr_arg(vm, a, a->v[0], a->def->name, true, &o1);
    const Array *y = x ? arr_arg(vm, a, a->v[1], a->def->name, true, &o2) : NULL;
    char err[AR_ERRLEN];
    Value r = v_exc();
    if (y) {
        Array *c = ar_isclose(x, y, rtol, atol, en, err);
        if (!c)
            r = vm_error(vm, a->site, "%s", err);
        else if (all) {
            bool ok = true;
            for (size_t i = 0; i < ar_size(c) && ok; i++) ok = ar_item(c, i).re != 0;
            ar_free(c);
            r = v_bool(ok);
        } else
            r = maybe_scalar(vm, a, c, is_scalar(a->v[0]) && is_scalar(a->v[1]), err);
    }
    ar_free(o1);
    ar_free(o2);
    return r;
}
static Value bi_isclose(VM *vm, Args *a) { return closeness(vm, a, false); }
static Value bi_allclose(VM *vm, Args *a) { return closeness(vm, a, true); }

/* ---------------------------------------------------------------- unique, bincount */

static Value bi_unique(VM *vm, Args *a)
{
    bool ri, rv, rc;
    if (!flag(vm, a, 1, "return_index", false, &ri) ||
        !flag(vm, a, 2, "return_inverse", false, &rv) ||
        !flag(vm, a, 3, "return_counts", false, &rc))
        return v_exc();
    Array *own, *u = NULL, *ix = NULL, *inv = NULL, *cnt = NULL;
    const Array *x = arr_arg(vm, a, a->v[0], "unique", true, &own);
    if (!x) return v_exc();
    char err[AR_ERRLEN];
    int k = ar_unique(x, &u, ri ? &ix : NULL, rv ? &inv : NULL, rc ? &cnt : NULL, err);
    ar_free(own);
    if (k) {
        ar_free(u), ar_free(ix), ar_free(inv), ar_free(cnt);
        return vm_error(vm, a->site, "%s", err);
    }
    if (!ri && !rv && !rc) return arr_wrap(u);
    Value p[4];
    int n = 0;
    p[n++] = arr_wrap(u);
    if (ri) p[n++] = arr_wrap(ix);
    if (rv) p[n++] = arr_wrap(inv);
    if (rc) p[n++] = arr_wrap(cnt);
    return list_of(p, n);
}

static Value bi_bincount(VM *vm, Args *a)
{
    Value wv = kwv(a, 1, "weights", v_nil());
    double ml = 0;
    Value mv = kwv(a, 2, "minlength", v_num(0));
    if (!tp_number(mv, &ml) || ml < 0 || ml != floor(ml) || ml > 1e9)
        return vm_error(vm, a->site, "bincount() minlength must be a non-negative integer");
    Array *o1, *o2 = NULL;
    const Array *x = arr_arg(vm, a, a->v[0], "bincount", false, &o1);
    const Array *w = x && wv.t != T_NIL ? arr_arg(vm, a, wv, "bincount", false, &o2) : NULL;
    char err[AR_ERRLEN];
    Value r = !x || (wv.t != T_NIL && !w) ? v_exc()
                                          : wrap(vm, a, ar_bincount(x, w, (size_t)ml, err), err);
    ar_free(o1);
    ar_free(o2);
    return r;
}

/* ---------------------------------------------------------------- joining */

/* a list of arrays (or of lists / numbers) as arrays; n set */
static const Array **seq_arrays(VM *vm, Args *a, Value seq, int *n, Array ***own, bool scalars)
{
    if (seq.t != T_LIST) {
        vm_error(vm, a->site, "%s() needs a list of arrays, not %s", a->def->name, type_name(seq));
        return NULL;
    }
    size_t len = AS_LIST(seq)->len;
    const Array **as = calloc(len + 1, sizeof *as);
    *own = calloc(len + 1, sizeof **own);
    if (!as || !*own) {
        free(as);
        free(*own);
        vm_oom(vm, a->site);
        return NULL;
    }
    for (size_t i = 0; i < len; i++) {
        as[i] = arr_arg(vm, a, AS_LIST(seq)->v[i], a->def->name, scalars, &(*own)[i]);
        if (!as[i]) {
            for (size_t q = 0; q < i; q++) ar_free((*own)[q]);
            free(as);
            free(*own);
            return NULL;
        }
    }
    *n = (int)len;
    return as;
}

static void seq_free(const Array **as, Array **own, int n)
{
    for (int i = 0; i < n; i++) ar_free(own[i]);
    free(as);
    free(own);
}

static Value joiner(VM *vm, Args *a, bool stack)
{
    for (size_t i = 0; a->v[0].t == T_LIST && i < AS_LIST(a->v[0])->len; i++)
        if (track_is(AS_LIST(a->v[0])->v[i])) /* differentiated arrays: their rule */
            return track_np_builtin(vm, a->def, a);
    long axis;
    if (!int_opt(vm, a, kwv(a, 1, "axis", v_num(0)), "axis", &axis)) return v_exc();
    int n;
    Array **own;
    const Array **as = seq_arrays(vm, a, a->v[0], &n, &own, false);
    if (!as) return v_exc();
    char err[AR_ERRLEN];
    Array *flat = NULL;
    if (!stack && axis == AR_AXIS_ALL) { /* axis=nil: the flattened arrays, joined */
        for (int i = 0; i < n; i++) {
            Array *f = ar_reshape(as[i], 1, (long[]){ (long)ar_size(as[i]) }, err);
            ar_free(own[i]);
            own[i] = f;
            as[i] = f;
        }
        axis = 0;
    }
    Array *r = stack ? ar_stack(as, n, (int)axis, err) : ar_concat(as, n, (int)axis, err);
    seq_free(as, own, n);
    ar_free(flat);
    return wrap(vm, a, r, err);
}
static Value bi_concatenate(VM *vm, Args *a) { return joiner(vm, a, false); }
static Value bi_stack(VM *vm, Args *a) { return joiner(vm, a, true); }

static Value bi_block_diag(VM *vm, Args *a)
{
    ObjList tmp = { .len = (size_t)a->n, .v = a->v };
    tmp.h.type = T_LIST;
    Value seq = v_obj(&tmp.h);
    int n;
    Array **own;
    const Array **as = seq_arrays(vm, a, seq, &n, &own, true);
    if (!as) return v_exc();
    char err[AR_ERRLEN];
    Array *r = ar_block_diag(as, n, err);
    seq_free(as, own, n);
    return wrap(vm, a, r, err);
}

static Value bi_polyfit(VM *vm, Args *a)
{
    double deg;
    if (!tp_number(a->v[2], &deg) || !(deg >= 0 && deg <= 1000) || deg != floor(deg))
        return vm_error(vm, a->site, "polyfit() deg must be a non-negative integer");
    Array *o1, *o2 = NULL;
    const Array *x = arr_arg(vm, a, a->v[0], "polyfit", false, &o1);
    const Array *y = x ? arr_arg(vm, a, a->v[1], "polyfit", false, &o2) : NULL;
    char err[AR_ERRLEN];
    Value r = y ? wrap(vm, a, ar_polyfit(x, y, (int)deg, err), err) : v_exc();
    ar_free(o1);
    ar_free(o2);
    return r;
}

/* ---------------------------------------------------------------- the table */

static const char *const kw_pinv[] = { "rcond", NULL };
static const char *const kw_eigh[] = { "UPLO", NULL };
static const char *const kw_svd[] = { "full_matrices", "compute_uv", NULL };
static const char *const kw_qr[] = { "mode", NULL };
static const char *const kw_trace[] = { "offset", NULL };
static const char *const kw_diag[] = { "k", NULL };
static const char *const kw_axis[] = { "axis", NULL };
static const char *const kw_sort[] = { "axis", "kind", NULL };
static const char *const kw_var[] = { "axis", "ddof", "keepdims", NULL };
static const char *const kw_clip[] = { "a_min", "a_max", NULL };
static const char *const kw_close[] = { "rtol", "atol", "equal_nan", NULL };
static const char *const kw_unique[] = { "return_index", "return_inverse", "return_counts", NULL };
static const char *const kw_bincount[] = { "weights", "minlength", NULL };

static const BuiltinDef builtins_np[] = {
    { "inv", bi_inv, 1, 1, 0, NULL, 0 },
    { "solve", bi_solve, 2, 2, 0, NULL, 0 },
    { "det", bi_det, 1, 1, 0, NULL, 0 },
    { "pinv", bi_pinv, 1, 2, 0, kw_pinv, 0 },
    { "eigh", bi_eigh, 1, 2, 0, kw_eigh, 0 },
    { "eig", bi_eig, 1, 1, 0, NULL, 0 },
    { "svd", bi_svd, 1, 3, 0, kw_svd, 0 },
    { "qr", bi_qr, 1, 2, 0, kw_qr, 0 },
    { "expm", bi_expm, 1, 1, 0, NULL, 0 },
    { "trace", bi_trace, 1, 2, 0, kw_trace, 0 },
    { "diag", bi_diag, 1, 2, 0, kw_diag, 0 },
    { "outer", bi_outer, 2, 2, 0, NULL, 0 },
    { "sign", bi_sign, 1, 1, 0, NULL, 0 },
    { "argmax", bi_argmax, 1, 2, 0, kw_axis, 0 },
    { "argmin", bi_argmin, 1, 2, 0, kw_axis, 0 },
    { "argsort", bi_argsort, 1, 3, 0, kw_sort, 0 },
    { "sort", bi_sort, 1, 3, 0, kw_sort, 0 },
    { "cumsum", bi_cumsum, 1, 2, 0, kw_axis, 0 },
    { "std", bi_std, 1, 2, 0, kw_var, 0 },
    { "where", bi_where, 1, 3, 0, NULL, 0 },
    { "clip", bi_clip, 1, 3, 0, kw_clip, 0 },
    { "isclose", bi_isclose, 2, 5, 0, kw_close, 0 },
    { "allclose", bi_allclose, 2, 5, 0, kw_close, 0 },
    { "unique", bi_unique, 1, 4, 0, kw_unique, 0 },
    { "bincount", bi_bincount, 1, 3, 0, kw_bincount, 0 },
    { "concatenate", bi_concatenate, 1, 2, 0, kw_axis, 0 },
    { "stack", bi_stack, 1, 2, 0, kw_axis, 0 },
    { "block_diag", bi_block_diag, 0, -1, 0, NULL, 0 },
    { "polyfit", bi_polyfit, 3, 3, 0, NULL, 0 },
    { NULL, NULL, 0, 0, 0, NULL, 0 },
};

const char *const np_var_keywords[] = { "axis", "ddof", "keepdims", NULL };

void nplib_open(void) { builtins_add(builtins_np); }
