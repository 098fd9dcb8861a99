/* track_np.c — the derivatives of NumPy's functions (nplib.c) on tracked
 * values, the rules autograd and JAX use: inv, solve, det and eigh (their
 * Jacobians, dense, for the small matrices of variational work), trace,
 * diag, outer, concatenate/stack and where (gathers of the operands'
 * elements), clip (1 inside the bounds, 0 where the result is a bound, as
 * autograd), cumsum (a triangular Jacobian), var/std (composed from
 * differentiated mean, sum and arithmetic, so the values are nplib's to the
 * last bit), sign, argmax/argmin/argsort, isclose/allclose, unique's
 * counts and bincount without weights (no derivative: they run on the
 * plain values). Knows values, the dispatcher, the tracked kinds
 * (track.h), the tape (ad.h) and the array room. */
#include "track_np.h"
#include "array.h"
#include "arrayval.h"
#include "builtins.h"
#include "qh_assert.h"
#include "track.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define JAC_MAX 32 /* largest matrix whose dense Jacobian is recorded (n^4 entries) */

/* An operand: a primal array (or number) and its node. */
typedef struct TOpd {
    const Array *a; /* NULL for a number */
    double x;
    AdNode n;
    Value hold; /* an array made from a list, or a number made into an array */
} TOpd;

static AdTape *tape(VM *vm) { return vm->ad->tape; }

/* Why: arrays, tracked arrays, lists (through array(), which tracks their
 * tracked elements) and numbers as one kind of operand. */
static bool topd(VM *vm, Value v, TOpd *o, bool number_ok, const Node *site)
{
    memset(o, 0, sizeof *o);
    o->n = AD_NONE;
    o->hold = v_nil();
    if (v.t == T_LIST) {
        Value a = vm_call(vm, builtin_named("array"), 1, &v, (Node *)site);
        if (IS_EXC(a)) return false;
        bool ok = topd(vm, a, o, number_ok, site);
        if (ok)
            o->hold = a;
        else
            decref(a);
        return ok;
    }
    if (v.t == T_ARRAY) {
        o->a = AS_ARR(v);
        return true;
    }
    if (track_is_arr(v)) {
        o->a = track_array(v);
        o->n = track_node(v);
        return true;
    }
    bool err = false;
    if (number_ok && track_number(vm, v, &o->x, &o->n, site, &err)) return true;
    if (!err) vm_error(vm, site, "expected an array, not %s", type_name(v));
    return false;
}

/* a number operand as a (1,) array, for the gathers */
static bool as_array(VM *vm, TOpd *o, const Node *site)
{
    if (o->a) return true;
    char err[AR_ERRLEN];
    size_t one = 1;
    Array *a = ar_full(1, &one, ar_scalar(o->x), err);
    if (!a) return vm_error(vm, site, "%s", err), false;
    o->hold = arr_wrap(a);
    o->a = a;
    return true;
}

static void drop(TOpd *o) { decref(o->hold); }

static Array *iota_of(size_t n, size_t base, int nd, const size_t *sh, char *err)
{
    Array *p = ar_new(AR_F64, nd, sh, err);
    double *d = p ? ar_f64(p) : NULL;
    for (size_t i = 0; d && i < n; i++) d[i] = (double)(base + i);
    return p;
}

/* Why: a linear selection out = concat(parents)[src] as one node: the
 * operands' nodes concatenated, then gathered (constants as AD_NONE). */
static AdNode select_node(VM *vm, TOpd *ops, int nops, const Array *pos, const Array *out)
{
    AdNode par[16];
    size_t sz[16];
    bool any = false;
    for (int i = 0; i < nops; i++) {
        par[i] = ops[i].n;
        sz[i] = ops[i].a ? ar_size(ops[i].a) : 1;
        any |= ops[i].n != AD_NONE;
    }
    if (!any) return AD_NONE;
    size_t tot = 0;
    for (int i = 0; i < nops; i++) tot += sz[i];
    AdNode cat = nops == 1 ? par[0] : ad_concat(tape(vm), nops, par, sz, 1, &tot);
    size_t n = ar_size(pos);
    size_t *src = malloc((n ? n : 1) * sizeof *src);
    if (!src) return AD_ERR;
    for (size_t i = 0; i < n; i++) src[i] = (size_t)ar_f64_ro(pos)[i];
    AdNode r = ad_gather(tape(vm), cat, n, src, ar_ndim(out), ar_shape(out));
    free(src);
    return r;
}

static Value result(VM *vm, Array *out, AdNode n, const char *err, const Node *site)
{
    if (!out) return vm_error(vm, site, "%s", err);
    return track_arr(vm, out, n, site);
}

/* ---------------------------------------------------------------- linear selections */

/* trace, diag, outer, concatenate/stack, where: run the plain kernel on the
 * values and on position arrays (iota) to learn which element went where. */
static Value b_trace(VM *vm, Args *a)
{
    TOpd A;
    if (!topd(vm, a->v[0], &A, false, a->site)) return v_exc();
    char err[AR_ERRLEN];
    if (ar_ndim(A.a) != 2 || a->n > 1 || a->nkw) {
        drop(&A);
        return vm_error(vm, a->site, "trace() of a differentiated array: a 2-d matrix, offset 0");
    }
    size_t m = ar_shape(A.a)[0], n = ar_shape(A.a)[1], k = m < n ? m : n;
    size_t *src = malloc((k ? k : 1) * sizeof *src);
    double s = 0;
    for (size_t i = 0; src && i < k; i++) {
        src[i] = i * n + i;
        s += ar_f64_ro(A.a)[src[i]];
    }
    Array *out = NULL;
    ArScalar sv;
    int rc = ar_trace(A.a, 0, &out, &sv, err); /* the value as nplib computes it */
    AdNode g = src ? ad_gather(tape(vm), A.n, k, src, 1, &k) : AD_ERR;
    free(src);
    drop(&A);
    (void)s;
    if (rc == AR_ERR) return vm_error(vm, a->site, "%s", err);
    return track_num(vm, sv.re, ad_sum(tape(vm), g, AR_AXIS_ALL, 1.0), a->site);
}

static Value b_diag(VM *vm, Args *a)
{
    TOpd A;
    if (!topd(vm, a->v[0], &A, false, a->site)) return v_exc();
    long k = 0;
    Value kv = a->n > 1 ? a->v[1] : arg_kw(a, "k") ? *arg_kw(a, "k") : v_num(0);
    double kd;
    if (!tp_number(kv, &kd) || kd != floor(kd)) {
        drop(&A);
        return vm_error(vm, a->site, "diag() k must be an integer");
    }
    k = (long)kd;
    char err[AR_ERRLEN];
    Array *out = ar_diag(A.a, k, err),
          *io = out ? iota_of(ar_size(A.a), 1, ar_ndim(A.a), ar_shape(A.a), err) : NULL;
    Array *pos = io ? ar_diag(io, k, err) : NULL;
    Value r;
    if (!pos) {
        r = vm_error(vm, a->site, "%s", err);
        ar_free(out);
    } else if (ar_ndim(A.a) == 2) { /* a gather: positions are iota + 1 */
        double *p = ar_f64(pos);
        for (size_t i = 0; i < ar_size(pos); i++) p[i] -= 1;
        r = result(vm, out, select_node(vm, &A, 1, pos, out), err, a->site);
    } else { /* 1-d v onto a zero matrix: the non-zero positions take v */
        size_t n = ar_size(out), cnt = 0;
        size_t *ps = malloc((n ? n : 1) * sizeof *ps), *vm_ = malloc((n ? n : 1) * sizeof *vm_);
        for (size_t i = 0; ps && vm_ && i < n; i++) {
            double p = ar_f64_ro(pos)[i];
            if (p > 0) {
                ps[cnt] = i;
                vm_[cnt++] = (size_t)p - 1;
            }
        }
        AdNode nd = ps && vm_ ? ad_setitems(tape(vm), AD_NONE, ar_ndim(out), ar_shape(out), A.n,
                                            &(AdScatter){ cnt, ps, vm_ })
                              : AD_ERR;
        free(ps);
        free(vm_);
        r = result(vm, out, nd, err, a->site);
    }
    ar_free(io);
    ar_free(pos);
    drop(&A);
    return r;
}

static Value b_outer(VM *vm, Args *a)
{
    TOpd A, B;
    if (!topd(vm, a->v[0], &A, true, a->site)) return v_exc();
    if (!topd(vm, a->v[1], &B, true, a->site) || !as_array(vm, &A, a->site) ||
        !as_array(vm, &B, a->site)) {
        drop(&A);
        return v_exc();
    }
    char err[AR_ERRLEN];
    size_t n = ar_size(A.a), m = ar_size(B.a), sh[2] = { n, m }, nm = n * m;
    Array *out = ar_outer(A.a, B.a, err);
    size_t *sa = malloc((nm ? nm : 1) * sizeof *sa), *sb = malloc((nm ? nm : 1) * sizeof *sb);
    double *ga = malloc((nm ? nm : 1) * sizeof *ga), *gb = malloc((nm ? nm : 1) * sizeof *gb);
    Value r;
    if (!out || !sa || !sb || !ga || !gb) {
        r = out ? vm_error(vm, a->site, "out of memory") : vm_error(vm, a->site, "%s", err);
        ar_free(out);
    } else {
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < m; j++) {
                sa[i * m + j] = i;
                sb[i * m + j] = j;
                ga[i * m + j] = ar_f64_ro(A.a)[i];
                gb[i * m + j] = ar_f64_ro(B.a)[j];
            }
        Array *GA = ar_from_data(AR_F64, 2, sh, ga, err),
              *GB = GA ? ar_from_data(AR_F64, 2, sh, gb, err) : NULL;
        AdNode nA = A.n == AD_NONE ? AD_NONE : ad_gather(tape(vm), A.n, nm, sa, 2, sh);
        AdNode nB = B.n == AD_NONE ? AD_NONE : ad_gather(tape(vm), B.n, nm, sb, 2, sh);
        AdNode nd = GB ? ad_ewise(tape(vm), AR_MUL, nA, ad_arr(GA), nB, ad_arr(GB), out) : AD_ERR;
        r = result(vm, out, nd, err, a->site);
        ar_free(GA);
        ar_free(GB);
    }
    free(sa), free(sb), free(ga), free(gb);
    drop(&A);
    drop(&B);
    return r;
}

/* concatenate(arrays, axis) / stack(arrays, axis) */
static Value b_join(VM *vm, Args *a, bool stack)
{
    Value seq = a->v[0];
    if (seq.t != T_LIST || AS_LIST(seq)->len > 16 || AS_LIST(seq)->len == 0)
        return vm_error(vm, a->site, "%s() of differentiated arrays: a list of 1 to 16 arrays",
                        stack ? "stack" : "concatenate");
    long axis = 0;
    Value av = a->n > 1 ? a->v[1] : arg_kw(a, "axis") ? *arg_kw(a, "axis") : v_num(0);
    double ad;
    if (!tp_number(av, &ad) || ad != floor(ad))
        return vm_error(vm, a->site, "%s() axis must be an integer",
                        stack ? "stack" : "concatenate");
    axis = (long)ad;
    int n = (int)AS_LIST(seq)->len, got = 0;
    TOpd ops[16];
    const Array *vals[16], *poss[16];
    Array *pos_own[16] = { 0 };
    char err[AR_ERRLEN];
    bool ok = true;
    size_t base = 0;
    for (; got < n && ok; got++) {
        ok = topd(vm, AS_LIST(seq)->v[got], &ops[got], false, a->site);
        if (!ok) break;
        vals[got] = ops[got].a;
        pos_own[got] =
            iota_of(ar_size(ops[got].a), base, ar_ndim(ops[got].a), ar_shape(ops[got].a), err);
        poss[got] = pos_own[got];
        base += ar_size(ops[got].a);
        ok = pos_own[got] != NULL;
        if (!ok) vm_error(vm, a->site, "%s", err);
    }
    Value r = v_exc();
    if (ok) {
        Array *out = stack ? ar_stack(vals, n, (int)axis, err) : ar_concat(vals, n, (int)axis, err);
        Array *pos =
            out ? (stack ? ar_stack(poss, n, (int)axis, err) : ar_concat(poss, n, (int)axis, err))
                : NULL;
        if (!pos) {
            ar_free(out);
            r = vm_error(vm, a->site, "%s", err);
        } else
            r = result(vm, out, select_node(vm, ops, n, pos, out), err, a->site);
        ar_free(pos);
    }
    for (int i = 0; i < got; i++) {
        drop(&ops[i]);
        ar_free(pos_own[i]);
    }
    return r;
}

/* where(c, x, y): c plain; the result's elements come from x or y */
static Value b_where(VM *vm, Args *a)
{
    if (a->n != 3)
        return vm_error(
            vm, a->site,
            "where(c) of a differentiated array has no derivative: use its plain values");
    if (track_is(a->v[0]))
        return vm_error(vm, a->site, "where(): the condition must not be differentiated");
    TOpd C, X, Y;
    if (!topd(vm, a->v[0], &C, true, a->site)) return v_exc();
    if (!as_array(vm, &C, a->site) || !topd(vm, a->v[1], &X, true, a->site)) {
        drop(&C);
        return v_exc();
    }
    if (!as_array(vm, &X, a->site) || !topd(vm, a->v[2], &Y, true, a->site)) {
        drop(&C);
        drop(&X);
        return v_exc();
    }
    char err[AR_ERRLEN];
    Value r = v_exc();
    if (as_array(vm, &Y, a->site)) {
        Array *out = ar_where(C.a, X.a, Y.a, err);
        Array *px = out ? iota_of(ar_size(X.a), 0, ar_ndim(X.a), ar_shape(X.a), err) : NULL;
        Array *py =
            px ? iota_of(ar_size(Y.a), ar_size(X.a), ar_ndim(Y.a), ar_shape(Y.a), err) : NULL;
        Array *pos = py ? ar_where(C.a, px, py, err) : NULL;
        TOpd xy[2] = { X, Y };
        r = pos ? result(vm, out, select_node(vm, xy, 2, pos, out), err, a->site)
                : vm_error(vm, a->site, "%s", err);
        if (!pos) ar_free(out);
        ar_free(px);
        ar_free(py);
        ar_free(pos);
    }
    drop(&C);
    drop(&X);
    drop(&Y);
    return r;
}

/* ---------------------------------------------------------------- elementwise */

/* clip(a, lo, hi): autograd's rule, 1 where the result is not a bound */
static Value b_clip(VM *vm, Args *a)
{
    TOpd A;
    Value lv = a->n > 1 ? a->v[1] : arg_kw(a, "a_min") ? *arg_kw(a, "a_min") : v_nil();
    Value hv = a->n > 2 ? a->v[2] : arg_kw(a, "a_max") ? *arg_kw(a, "a_max") : v_nil();
    if (track_is(lv) || track_is(hv))
        return vm_error(vm, a->site,
                        "clip(): differentiated bounds are not supported (the array may be)");
    if (!topd(vm, a->v[0], &A, true, a->site)) return v_exc();
    bool num = !A.a;
    if (!as_array(vm, &A, a->site)) return v_exc();
    Value pa[3] = { v_nil(), lv, hv };
    Value plain = arr_wrap(ar_copy(A.a, NULL));
    pa[0] = plain;
    Args pargs = { 3, pa, 0, NULL, NULL, a->site, a->def };
    Value pr = a->def->fn(vm, &pargs); /* nplib's clip on the values */
    decref(plain);
    if (IS_EXC(pr)) {
        drop(&A);
        return pr;
    }
    Array *out = pr.t == T_ARRAY ? ar_copy(AS_ARR(pr), NULL) : NULL;
    double one = pr.t == T_NUM ? pr.n : 0;
    decref(pr);
    char err[AR_ERRLEN];
    size_t n = ar_size(A.a);
    Array *der = ar_new(AR_F64, ar_ndim(A.a), ar_shape(A.a), err);
    /* the bounds broadcast to the array's shape (where(a, L, L) is L so) */
    TOpd L = { NULL, NAN, AD_NONE, v_nil() }, H = { NULL, NAN, AD_NONE, v_nil() };
    Array *lb = NULL, *hb = NULL;
    bool ok = der && (num || (out && ar_size(out) == n));
    if (ok && lv.t != T_NIL)
        ok = topd(vm, lv, &L, true, a->site) && as_array(vm, &L, a->site) &&
             (lb = ar_where(A.a, L.a, L.a, err)) && ar_size(lb) == n;
    if (ok && hv.t != T_NIL)
        ok = topd(vm, hv, &H, true, a->site) && as_array(vm, &H, a->site) &&
             (hb = ar_where(A.a, H.a, H.a, err)) && ar_size(hb) == n;
    drop(&L);
    drop(&H);
    Value r;
    if (!ok) {
        ar_free(out);
        ar_free(der);
        ar_free(lb);
        ar_free(hb);
        drop(&A);
        return vm_error(vm, a->site,
                        "clip() of a differentiated array: the bounds must broadcast to its shape");
    }
    for (size_t i = 0; i < n; i++) {
        double y = num ? one : ar_f64_ro(out)[i];
        double l = lb ? ar_f64_ro(lb)[i] : NAN, h = hb ? ar_f64_ro(hb)[i] : NAN;
        ar_f64(der)[i] = (y != l && y != h) ? 1.0 : 0.0;
    }
    ar_free(lb);
    ar_free(hb);
    AdNode nd = ad_map(tape(vm), A.n, der);
    ar_free(der);
    if (num) {
        ar_free(out);
        r = track_num(
            vm, one, nd == AD_NONE ? AD_NONE : ad_gather(tape(vm), nd, 1, (size_t[]){ 0 }, 0, NULL),
            a->site);
    } else
        r = result(vm, out, nd, err, a->site);
    drop(&A);
    return r;
}

/* cumsum(a, axis=nil): the Jacobian, ones below the diagonal of each line */
static Value b_cumsum(VM *vm, Args *a)
{
    TOpd A;
    if (!topd(vm, a->v[0], &A, false, a->site)) return v_exc();
    Value av = a->n > 1 ? a->v[1] : arg_kw(a, "axis") ? *arg_kw(a, "axis") : v_nil();
    double ad = 0;
    int axis = AR_AXIS_ALL;
    if (av.t != T_NIL) {
        if (!tp_number(av, &ad) || ad != floor(ad)) {
            drop(&A);
            return vm_error(vm, a->site, "cumsum() axis must be an integer");
        }
        axis = (int)ad;
    }
    char err[AR_ERRLEN];
    size_t N = ar_size(A.a);
    if (N > 2048) {
        drop(&A);
        return vm_error(
            vm, a->site,
            "cumsum() of a differentiated array of more than 2048 elements is not supported");
    }
    Array *out = ar_cumsum(A.a, axis, err);
    /* J[i][j] = 1 where input j is summed into output i: cumsum of one-hot inputs */
    double *J = out ? calloc(N * N + 1, sizeof *J) : NULL;
    Array *e = J ? ar_new(AR_F64, ar_ndim(A.a), ar_shape(A.a), err) : NULL;
    bool ok = e != NULL;
    for (size_t j = 0; ok && j < N; j++) {
        ar_f64(e)[j] = 1;
        Array *c = ar_cumsum(e, axis, err);
        ar_f64(e)[j] = 0;
        ok = c != NULL;
        for (size_t i = 0; ok && i < N; i++) J[i * N + j] = ar_f64_ro(c)[i];
        ar_free(c);
    }
    AdNode nd = AD_NONE;
    if (ok && A.n != AD_NONE) {
        nd = ad_jac(tape(vm), 1, &A.n, ar_ndim(out), ar_shape(out));
        if (nd >= 0 && ad_jac_set(tape(vm), nd, J)) nd = AD_ERR;
    }
    free(J);
    ar_free(e);
    drop(&A);
    if (!ok) {
        ar_free(out);
        return vm_error(vm, a->site, "%s", err);
    }
    return result(vm, out, nd, err, a->site);
}

/* ---------------------------------------------------------------- linear algebra */

/* the Jacobian node of out (shape of out) over the non-constant parents */
static AdNode jac_node(VM *vm, const AdNode *par, int np, const Array *out, const double *J)
{
    AdNode p[4];
    int k = 0;
    for (int i = 0; i < np; i++)
        if (par[i] != AD_NONE) p[k++] = par[i];
    qh_assert(k > 0);
    AdNode nd =
        out ? ad_jac(tape(vm), k, p, ar_ndim(out), ar_shape(out)) : ad_jac(tape(vm), k, p, 0, NULL);
    if (nd >= 0 && ad_jac_set(tape(vm), nd, J)) return AD_ERR;
    return nd;
}

static bool small_square(VM *vm, const Array *A, const char *who, const Node *site)
{
    if (ar_ndim(A) != 2 || ar_shape(A)[0] != ar_shape(A)[1])
        return vm_error(vm, site, "%s() of a differentiated array: a square 2-d matrix", who),
               false;
    if (ar_shape(A)[0] > JAC_MAX)
        return vm_error(
                   vm, site,
                   "%s() of a differentiated %zux%zu matrix: at most %dx%d (its Jacobian is dense)",
                   who, ar_shape(A)[0], ar_shape(A)[0], JAC_MAX, JAC_MAX),
               false;
    if (ar_is_complex(A))
        return vm_error(vm, site, "%s(): complex matrices cannot be differentiated", who), false;
    return true;
}

/* inv: d inv(A) = -inv(A) dA inv(A); det: d det = det inv(A)^T : dA */
static Value b_inv_det(VM *vm, Args *a, bool det)
{
    TOpd A;
    if (!topd(vm, a->v[0], &A, false, a->site)) return v_exc();
    const char *who = det ? "det" : "inv";
    if (!small_square(vm, A.a, who, a->site)) {
        drop(&A);
        return v_exc();
    }
    char err[AR_ERRLEN];
    size_t n = ar_shape(A.a)[0];
    Array *X = ar_inv(A.a, err);
    if (!X) {
        drop(&A);
        return vm_error(vm, a->site, "%s%s", err,
                        det ? " (the derivative of det needs an invertible matrix)" : "");
    }
    const double *x = ar_f64_ro(X);
    Value r;
    if (det) {
        Array *dout = NULL;
        ArScalar d;
        if (ar_det(A.a, &dout, &d, err) == AR_ERR) {
            ar_free(X);
            drop(&A);
            return vm_error(vm, a->site, "%s", err);
        }
        double *J = malloc(n * n * sizeof *J);
        for (size_t k = 0; J && k < n; k++)
            for (size_t l = 0; l < n; l++) J[k * n + l] = d.re * x[l * n + k];
        r = J ? track_num(vm, d.re, jac_node(vm, &A.n, 1, NULL, J), a->site) : vm_oom(vm, a->site);
        free(J);
        ar_free(X);
    } else {
        size_t n2 = n * n;
        double *J = malloc(n2 * n2 * sizeof *J);
        for (size_t i = 0; J && i < n; i++)
            for (size_t j = 0; j < n; j++)
                for (size_t k = 0; k < n; k++)
                    for (size_t l = 0; l < n; l++)
                        J[(i * n + j) * n2 + k * n + l] = -x[i * n + k] * x[l * n + j];
        r = J ? result(vm, X, jac_node(vm, &A.n, 1, X, J), err, a->site) : vm_oom(vm, a->site);
        if (!J) ar_free(X);
        free(J);
    }
    drop(&A);
    return r;
}

/* solve(A, b): x = inv(A) b; dx = inv(A) (db - dA x) */
static Value b_solve(VM *vm, Args *a)
{
    TOpd A, B;
    if (!topd(vm, a->v[0], &A, false, a->site)) return v_exc();
    if (!topd(vm, a->v[1], &B, false, a->site)) {
        drop(&A);
        return v_exc();
    }
    Value r = v_exc();
    char err[AR_ERRLEN];
    if (small_square(vm, A.a, "solve", a->site)) {
        size_t n = ar_shape(A.a)[0];
        int vec = ar_ndim(B.a) == 1;
        size_t k = vec ? 1 : ar_shape(B.a)[1];
        Array *Xs = ar_solve(A.a, B.a, err), *Ai = Xs ? ar_inv(A.a, err) : NULL;
        if (!Ai || ar_ndim(B.a) > 2) {
            ar_free(Xs);
            r = vm_error(vm, a->site, "%s",
                         Ai ? "solve() of differentiated arrays: b 1-d or 2-d" : err);
        } else {
            const double *ai = ar_f64_ro(Ai), *x = ar_f64_ro(Xs);
            size_t m = n * k, wa = A.n != AD_NONE ? n * n : 0, wb = B.n != AD_NONE ? n * k : 0;
            double *J = calloc(m * (wa + wb) + 1, sizeof *J);
            for (size_t i = 0; J && i < n; i++)
                for (size_t j = 0; j < k; j++) {
                    double *row = J + (i * k + j) * (wa + wb);
                    for (size_t p = 0; wa && p < n; p++)
                        for (size_t q = 0; q < n; q++)
                            row[p * n + q] = -ai[i * n + p] * x[q * k + j];
                    for (size_t p = 0; wb && p < n; p++) row[wa + p * k + j] = ai[i * n + p];
                }
            AdNode par[2] = { A.n, B.n };
            r = J ? result(vm, Xs, jac_node(vm, par, 2, Xs, J), err, a->site) : vm_oom(vm, a->site);
            if (!J) ar_free(Xs);
            free(J);
            ar_free(Ai);
        }
    }
    drop(&A);
    drop(&B);
    return r;
}

/* eigh(A) with distinct eigenvalues: dw_k = v_k^T dA v_k, dV = V (F o
 * (V^T dA V)), F_lk = 1/(w_k - w_l); NumPy reads the lower triangle, so an
 * off-diagonal input below it counts for both of its mirror places (as
 * autograd's rule) and one above it not at all. */
static Value b_eigh(VM *vm, Args *a)
{
    TOpd A;
    if (!topd(vm, a->v[0], &A, false, a->site)) return v_exc();
    if (!small_square(vm, A.a, "eigh", a->site)) {
        drop(&A);
        return v_exc();
    }
    char err[AR_ERRLEN];
    size_t n = ar_shape(A.a)[0], n2 = n * n;
    Array *W = NULL, *V = NULL;
    if (ar_eigh(A.a, &W, &V, err)) {
        drop(&A);
        return vm_error(vm, a->site, "%s", err);
    }
    const double *w = ar_f64_ro(W), *v = ar_f64_ro(V);
    for (size_t i = 1; i < n; i++)
        if (w[i] == w[i - 1]) {
            double rep = w[i];
            ar_free(W);
            ar_free(V);
            drop(&A);
            return vm_error(vm, a->site,
                            "eigh() of a differentiated matrix with a repeated eigenvalue (%g) has "
                            "no derivative",
                            rep);
        }
    double *G = malloc(n2 * sizeof *G), *Jw = calloc(n * n2 + 1, sizeof *Jw),
           *Jv = calloc(n2 * n2 + 1, sizeof *Jv);
    if (!G || !Jw || !Jv) {
        free(G), free(Jw), free(Jv);
        ar_free(W);
        ar_free(V);
        drop(&A);
        return vm_oom(vm, a->site);
    }
    /* row of an output: G[p][q] = d out / d A_sym[p][q], folded onto the lower triangle */
    for (size_t o = 0; o < n + n2; o++) {
        for (size_t p = 0; p < n; p++)
            for (size_t q = 0; q < n; q++) {
                double g;
                if (o < n) {
                    g = v[p * n + o] * v[q * n + o];
                } else {
                    size_t r = (o - n) / n, c = (o - n) % n; /* V[r][c] */
                    g = 0;
                    for (size_t l = 0; l < n; l++)
                        if (l != c) g += v[r * n + l] * v[p * n + l] * v[q * n + c] / (w[c] - w[l]);
                }
                G[p * n + q] = g;
            }
        double *row = o < n ? Jw + o * n2 : Jv + (o - n) * n2;
        for (size_t p = 0; p < n; p++)
            for (size_t q = 0; q <= p; q++)
                row[p * n + q] = p == q ? G[p * n + p] : G[p * n + q] + G[q * n + p];
    }
    free(G);
    AdNode nw = A.n == AD_NONE ? AD_NONE : jac_node(vm, &A.n, 1, W, Jw);
    AdNode nv = A.n == AD_NONE ? AD_NONE : jac_node(vm, &A.n, 1, V, Jv);
    free(Jw);
    free(Jv);
    drop(&A);
    Value tw = result(vm, W, nw, err, a->site);
    if (IS_EXC(tw)) {
        ar_free(V);
        return tw;
    }
    Value tv = result(vm, V, nv, err, a->site);
    if (IS_EXC(tv)) {
        decref(tw);
        return tv;
    }
    ObjList *l = list_new(2);
    l->v[l->len++] = tw;
    l->v[l->len++] = tv;
    return v_list(l);
}

/* ---------------------------------------------------------------- var, std */

static Value call_kw(VM *vm, const char *fn, Value x, Value axis, const Node *site)
{
    ObjStr *k = str_new("axis", 4);
    Value kv[1] = { axis };
    ObjStr *names[1] = { k };
    Args ar = { 1, &x, axis.t == T_NIL ? 0 : 1, names, kv, (Node *)site, NULL };
    Value r = tp_call(vm, builtin_named(fn), &ar);
    decref(v_obj(&k->h));
    return r;
}

Value track_np_var(VM *vm, Args *a, bool root)
{
    Value x = a->v[0];
    Value axis = a->n > 1 ? a->v[1] : arg_kw(a, "axis") ? *arg_kw(a, "axis") : v_nil();
    Value *dk = arg_kw(a, "ddof"), *kk = arg_kw(a, "keepdims");
    double ddof = 0;
    if (dk && !tp_number(*dk, &ddof))
        return vm_error(vm, a->site, "%s() ddof must be a number", root ? "std" : "var");
    bool kerr = false, keep = kk && tp_truthy(vm, *kk, a->site, &kerr);
    if (kerr) return v_exc();
    if (!track_is_arr(x))
        return vm_error(vm, a->site, "%s() of a differentiated value needs an array",
                        root ? "std" : "var");
    const Array *A = track_array(x);
    int nd = ar_ndim(A);
    double ax = 0;
    if (axis.t != T_NIL && (!tp_number(axis, &ax) || ax != floor(ax) || ax < -nd || ax >= nd))
        return vm_error(vm, a->site, "%s() axis out of range", root ? "std" : "var");
    int axn = ax < 0 ? (int)ax + nd : (int)ax;
    size_t n = axis.t == T_NIL ? ar_size(A) : ar_shape(A)[axn];
    Value m = call_kw(vm, "mean", x, axis, a->site), mk = m, d, sq, s, r;
    if (IS_EXC(m)) return m;
    Value shp = v_nil();
    if (axis.t != T_NIL && nd > 1) { /* mean with the axis kept, for the broadcast */
        ObjList *l = list_new((size_t)nd);
        for (int q = 0; q < nd; q++) l->v[l->len++] = v_num(q == axn ? 1 : (double)ar_shape(A)[q]);
        shp = v_list(l);
        Value ra[2] = { m, shp };
        mk = vm_call(vm, builtin_named("reshape"), 2, ra, (Node *)a->site);
        decref(m);
        if (IS_EXC(mk)) {
            decref(shp);
            return mk;
        }
    }
    d = tp_binop(vm, OP_SUB, x, mk, a->site);
    decref(mk);
    if (IS_EXC(d)) return decref(shp), d;
    sq = tp_binop(vm, OP_MUL, d, d, a->site);
    decref(d);
    if (IS_EXC(sq)) return decref(shp), sq;
    s = call_kw(vm, "sum", sq, axis, a->site);
    decref(sq);
    if (IS_EXC(s)) return decref(shp), s;
    double cnt = (double)n - ddof;
    r = tp_binop(vm, OP_DIV, s, v_num(cnt < 0 ? 0 : cnt), a->site);
    decref(s);
    if (!IS_EXC(r) && root) {
        Value q = tp_math(vm, M_SQRT, r, 0, a->site);
        decref(r);
        r = q;
    }
    if (!IS_EXC(r) && keep) {
        if (shp.t == T_NIL) {
            ObjList *l = list_new((size_t)nd);
            for (int q = 0; q < nd; q++) l->v[l->len++] = v_num(1);
            shp = v_list(l);
        }
        Value arr = r;
        if (track_is_num(r) || r.t == T_NUM) { /* a number: as a one-element array first */
            ObjList *one = list_new(1);
            incref(r);
            one->v[one->len++] = r;
            Value lv = v_list(one);
            arr = vm_call(vm, builtin_named("array"), 1, &lv, (Node *)a->site);
            decref(lv);
            decref(r);
            if (IS_EXC(arr)) return decref(shp), arr;
        }
        Value ra[2] = { arr, shp };
        r = vm_call(vm, builtin_named("reshape"), 2, ra, (Node *)a->site);
        decref(arr);
    }
    decref(shp);
    return r;
}

/* ---------------------------------------------------------------- dispatch */

Value track_np_builtin(VM *vm, const BuiltinDef *bd, Args *a)
{
    const char *n = bd->name;
    if (strcmp(n, "inv") == 0) return b_inv_det(vm, a, false);
    if (strcmp(n, "det") == 0) return b_inv_det(vm, a, true);
    if (strcmp(n, "solve") == 0) return b_solve(vm, a);
    if (strcmp(n, "eigh") == 0) return b_eigh(vm, a);
    if (strcmp(n, "trace") == 0) return b_trace(vm, a);
    if (strcmp(n, "diag") == 0) return b_diag(vm, a);
    if (strcmp(n, "outer") == 0) return b_outer(vm, a);
    if (strcmp(n, "concatenate") == 0) return b_join(vm, a, false);
    if (strcmp(n, "stack") == 0) return b_join(vm, a, true);
    if (strcmp(n, "where") == 0) return b_where(vm, a);
    if (strcmp(n, "clip") == 0) return b_clip(vm, a);
    if (strcmp(n, "cumsum") == 0) return b_cumsum(vm, a);
    if (strcmp(n, "std") == 0) return track_np_var(vm, a, true);
    return v_notimpl();
}

/* builtins whose results have no derivative: they run on the plain values */
const char *const track_np_plain[] = { "sign",        "argmax",    "argmin",   "argsort",
                                       "isclose",     "allclose",  "bincount", "random_state",
                                       "default_rng", "pauli_sum", NULL };
