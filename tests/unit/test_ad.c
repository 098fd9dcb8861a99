/* test_ad.c — unit tests of the reverse-mode tape (ad.h), Check.
 *
 * Each case is one function written once over "test values" (an array or a
 * number, with its node): the same code computes the value with the array
 * room and, when a tape is given, records the nodes. The backward sweep's
 * gradient is compared with central finite differences of the same
 * function; Jacobians row by row; every node kind is covered, broadcasting
 * included. Knows only ad.h and array.h.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ad.h"

typedef struct TV {
    Array *a;
    double x;
    AdNode n;
} TV; /* a NULL: the number x */

static AdTape *T; /* the tape of the current run, or NULL (finite differences) */

/* Every array a case makes is remembered and freed after the run. */
static Array **made;
static size_t nmade, capmade;
static Array *own(Array *a)
{
    if (nmade == capmade) {
        capmade = capmade ? 2 * capmade : 256;
        made = realloc(made, capmade * sizeof *made);
    }
    made[nmade++] = a;
    return a;
}
static void release_all(void)
{
    for (size_t i = 0; i < nmade; i++) ar_free(made[i]);
    nmade = 0;
}

static TV num(double x, AdNode n)
{
    TV v = { NULL, x, n };
    return v;
}
static TV arr(Array *a, AdNode n)
{
    TV v = { a ? own(a) : NULL, 0, n };
    return v;
}
static AdVal val(TV v) { return v.a ? ad_arr(v.a) : ad_num(v.x); }

static Array *mk(int ndim, const size_t *shape, const double *d)
{
    char err[AR_ERRLEN];
    Array *a = ar_from_data(AR_F64, ndim, shape, d, err);
    ck_assert_msg(a != NULL, "%s", err);
    return a;
}

static TV bin(ArOp op, TV A, TV B)
{
    char err[AR_ERRLEN];
    if (!A.a && !B.a) {
        double x = A.x, y = B.x, r = 0, ca = 0, cb = 0;
        switch ((int)op) {
        case AR_ADD:
            r = x + y;
            ca = 1;
            cb = 1;
            break;
        case AR_SUB:
            r = x - y;
            ca = 1;
            cb = -1;
            break;
        case AR_MUL:
            r = x * y;
            ca = y;
            cb = x;
            break;
        case AR_DIV:
            r = x / y;
            ca = 1 / y;
            cb = -x / (y * y);
            break;
        case AR_POW:
            r = pow(x, y);
            ca = y * pow(x, y - 1);
            cb = r * log(x);
            break;
        default: ck_abort();
        }
        return num(r, T ? ad_s2(T, A.n, ca, B.n, cb) : AD_NONE);
    }
    Array *out;
    if (A.a && B.a)
        out = ar_binop(op, A.a, B.a, err);
    else if (A.a)
        out = ar_binop_scalar(op, A.a, ar_scalar(B.x), 0, err);
    else
        out = ar_binop_scalar(op, B.a, ar_scalar(A.x), 1, err);
    ck_assert_msg(out != NULL, "%s", err);
    return arr(out, T ? ad_ewise(T, op, A.n, val(A), B.n, val(B), out) : AD_NONE);
}

static TV map(ArFunc f, TV A)
{
    char err[AR_ERRLEN];
    if (!A.a) {
        double y;
        switch ((int)f) {
        case AR_SIN: y = sin(A.x); break;
        case AR_EXP: y = exp(A.x); break;
        case AR_LOG: y = log(A.x); break;
        case AR_SQRT: y = sqrt(A.x); break;
        case AR_TAN: y = tan(A.x); break;
        case AR_ATAN: y = atan(A.x); break;
        case AR_ABS: y = fabs(A.x); break;
        default: ck_abort();
        }
        return num(y, T ? ad_s1(T, A.n, ad_dmath(f, A.x, y)) : AD_NONE);
    }
    Array *out = ar_map(f, A.a, err);
    ck_assert_msg(out != NULL, "%s", err);
    AdNode n = AD_NONE;
    if (T) {
        Array *d = ar_copy(out, err);
        double *dp = ar_f64(d);
        const double *x = ar_f64_ro(A.a), *y = ar_f64_ro(out);
        for (size_t i = 0; i < ar_size(out); i++) dp[i] = ad_dmath(f, x[i], y[i]);
        n = ad_map(T, A.n, d);
        ar_free(d);
    }
    return arr(out, n);
}

static TV matmul(TV A, TV B)
{
    char err[AR_ERRLEN];
    Array *out = NULL;
    ArScalar s;
    int k = ar_matmul(A.a, B.a, &out, &s, err);
    ck_assert_msg(k != AR_ERR, "%s", err);
    AdNode n = T ? ad_matmul(T, A.n, A.a, B.n, B.a) : AD_NONE;
    if (k == AR_SCALAR) return num(s.re, n);
    return arr(out, n);
}

static TV sum(TV A, int axis, int mean)
{
    char err[AR_ERRLEN];
    Array *out = NULL;
    ArScalar s;
    int k = ar_reduce(mean ? AR_MEAN : AR_SUM, A.a, axis, &out, &s, err);
    ck_assert(k != AR_ERR);
    double scale = 1;
    if (mean) scale = 1.0 / (double)(axis == AR_AXIS_ALL ? ar_size(A.a) : ar_dim(A.a, axis));
    AdNode n = T ? ad_sum(T, A.n, axis, scale) : AD_NONE;
    if (k == AR_SCALAR) return num(s.re, n);
    return arr(out, n);
}

/* iota: the flat positions of A, shaped like A */
static Array *iota(const Array *a)
{
    char err[AR_ERRLEN];
    Array *p = ar_new(AR_F64, ar_ndim(a), ar_shape(a), err);
    double *d = ar_f64(p);
    for (size_t i = 0; i < ar_size(p); i++) d[i] = (double)i;
    return p;
}

static TV gather_from(TV A, Array *posarr, int ndim, const size_t *shape, Array *value,
                      double scalar)
{
    size_t n = ar_size(posarr);
    size_t *src = malloc(n * sizeof(size_t));
    for (size_t i = 0; i < n; i++) src[i] = (size_t)ar_f64_ro(posarr)[i];
    AdNode node = T ? ad_gather(T, A.n, n, src, ndim, shape) : AD_NONE;
    free(src);
    if (!value) return num(scalar, node);
    return arr(value, node);
}

static TV index_(TV A, const ArIndex *ix, int nix)
{
    char err[AR_ERRLEN];
    ArScalar s, ps;
    Array *out = NULL, *pout = NULL;
    Array *io = iota(A.a);
    int k = ar_index(A.a, ix, nix, &s, &out, err);
    ck_assert_msg(k != AR_ERR, "%s", err);
    int kp = ar_index(io, ix, nix, &ps, &pout, err);
    ar_free(io);
    if (k == AR_SCALAR) {
        size_t one = 1;
        Array *pa = mk(1, &one, &ps.re);
        TV r = gather_from(A, pa, 0, NULL, NULL, s.re);
        ar_free(pa);
        return r;
    }
    (void)kp;
    TV r = gather_from(A, pout, ar_ndim(out), ar_shape(out), out, 0);
    ar_free(pout);
    return r;
}

static TV transpose(TV A)
{
    char err[AR_ERRLEN];
    Array *out = ar_transpose(A.a, err), *io = iota(A.a), *p = ar_transpose(io, err);
    TV r = gather_from(A, p, ar_ndim(out), ar_shape(out), out, 0);
    ar_free(io);
    ar_free(p);
    return r;
}

static TV reshape(TV A, int ndim, const long *shape)
{
    char err[AR_ERRLEN];
    Array *out = ar_reshape(A.a, ndim, shape, err);
    ck_assert(out != NULL);
    return arr(out,
               T ? ad_gather(T, A.n, ar_size(out), NULL, ar_ndim(out), ar_shape(out)) : AD_NONE);
}

/* array([v0, v1, ...]) of numbers or equal-shaped arrays */
static TV stack(int n, const TV *v)
{
    char err[AR_ERRLEN];
    size_t each = v[0].a ? ar_size(v[0].a) : 1;
    double *d = malloc((size_t)n * each * sizeof(double));
    AdNode par[16];
    size_t sizes[16];
    for (int i = 0; i < n; i++) {
        if (v[i].a)
            memcpy(d + (size_t)i * each, ar_f64_ro(v[i].a), each * sizeof(double));
        else
            d[i] = v[i].x;
        par[i] = v[i].n;
        sizes[i] = each;
    }
    size_t shape[AR_MAXDIM];
    int nd = 1;
    shape[0] = (size_t)n;
    if (v[0].a) {
        memcpy(shape + 1, ar_shape(v[0].a), (size_t)ar_ndim(v[0].a) * sizeof(size_t));
        nd += ar_ndim(v[0].a);
    }
    Array *out = ar_from_data(AR_F64, nd, shape, d, err);
    free(d);
    return arr(out, T ? ad_concat(T, n, par, sizes, nd, shape) : AD_NONE);
}

/* A[ix] = V (V a number or an array broadcast over the region), a new value */
static TV setitems(TV A, const ArIndex *ix, int nix, TV V)
{
    char err[AR_ERRLEN];
    Array *out = ar_copy(A.a, err);
    if (V.a)
        ck_assert(ar_assign_array(out, ix, nix, V.a, err) == 0);
    else
        ck_assert(ar_assign_scalar(out, ix, nix, ar_scalar(V.x), err) == 0);
    AdNode node = AD_NONE;
    if (T) {
        Array *io = iota(A.a), *pos = NULL;
        ArScalar ps;
        int k = ar_index(io, ix, nix, &ps, &pos, err);
        size_t np = k == AR_SCALAR ? 1 : ar_size(pos);
        size_t *p = malloc(np * sizeof(size_t)), *vm = malloc(np * sizeof(size_t));
        for (size_t i = 0; i < np; i++)
            p[i] = k == AR_SCALAR ? (size_t)ps.re : (size_t)ar_f64_ro(pos)[i];
        if (V.a) { /* the value's positions, broadcast like ar_assign_array does */
            Array *vi = iota(V.a),
                  *z = ar_new(AR_F64, k == AR_SCALAR ? 1 : ar_ndim(pos),
                              k == AR_SCALAR ? (size_t[]){ 1 } : ar_shape(pos), err);
            Array *b = ar_binop(AR_ADD, z, vi, err);
            for (size_t i = 0; i < np; i++) vm[i] = (size_t)ar_f64_ro(b)[i];
            ar_free(vi);
            ar_free(z);
            ar_free(b);
        } else {
            for (size_t i = 0; i < np; i++) vm[i] = 0;
        }
        node = ad_setitems(T, A.n, ar_ndim(A.a), ar_shape(A.a), V.n, &(AdScatter){ np, p, vm });
        free(p);
        free(vm);
        ar_free(io);
        ar_free(pos);
    }
    return arr(out, node);
}

/* An "external" function with a known Jacobian (a stand-in for a quantum
   call): y = [sin(u0) u1, u0 + u1^2, exp(u0 - u1)] of two numbers. */
static TV external(TV u0, TV u1)
{
    double a = u0.x, b = u1.x;
    double y[3] = { sin(a) * b, a + b * b, exp(a - b) };
    size_t three = 3;
    Array *out = mk(1, &three, y);
    AdNode n = AD_NONE;
    if (T && (u0.n != AD_NONE || u1.n != AD_NONE)) {
        AdNode par[2] = { u0.n, u1.n };
        n = ad_jac(T, 2, par, 1, &three);
        ck_assert(n >= 0);
        double J[6] = { cos(a) * b, sin(a), 1, 2 * b, exp(a - b), -exp(a - b) };
        ck_assert_int_eq(ad_jac_set(T, n, J), 0);
    }
    return arr(out, n);
}

/* ---- the cases: f(x, s) -> a number, x of shape (3, 4), s a number ------ */

typedef TV (*Case)(TV x, TV s);

static TV case_elementwise(TV x, TV s)
{
    TV y = bin(AR_MUL, x, s); /* array * number */
    TV z = bin(AR_ADD, map(AR_SIN, y), bin(AR_POW, x, num(2, AD_NONE)));
    TV w = bin(AR_DIV, z, bin(AR_ADD, map(AR_EXP, x), num(1, AD_NONE)));
    TV q = bin(AR_SUB, num(3, AD_NONE), w); /* number - array */
    return sum(bin(AR_MUL, q, q), AR_AXIS_ALL, 0);
}

static TV case_broadcast(TV x, TV s)
{
    char err[AR_ERRLEN];
    TV row = index_(x, (ArIndex[]){ ar_ix(1) }, 1);              /* shape (4,) */
    TV col = index_(x, (ArIndex[]){ ar_ix_all(), ar_ix(2) }, 2); /* shape (3,) */
    TV c2 = reshape(col, 2, (long[]){ 3, 1 });
    TV m = bin(AR_MUL, bin(AR_SUB, x, row), c2); /* (3,4) - (4,) times (3,1) */
    TV p = bin(AR_POW, map(AR_ABS, m), bin(AR_ADD, s, num(1.5, AD_NONE))); /* tracked exponent */
    (void)err;
    return bin(AR_ADD, sum(p, AR_AXIS_ALL, 1), sum(sum(m, 0, 0), AR_AXIS_ALL, 0));
}

static TV case_linalg(TV x, TV s)
{
    TV xt = transpose(x);                                      /* (4,3) */
    TV g = matmul(x, xt);                                      /* (3,3) */
    TV v = index_(x, (ArIndex[]){ ar_ix_all(), ar_ix(0) }, 2); /* (3,) */
    TV gv = matmul(g, v);                                      /* matrix @ vector */
    TV vg = matmul(v, g);                                      /* vector @ matrix */
    TV d = matmul(gv, vg);                                     /* vector @ vector: a number */
    TV r = sum(map(AR_TAN, bin(AR_MUL, sum(x, 1, 1), num(0.1, AD_NONE))), AR_AXIS_ALL,
               0); /* mean along axis 1 */
    return bin(AR_ADD, bin(AR_MUL, d, num(1e-3, AD_NONE)), bin(AR_MUL, r, s));
}

static TV case_scalars(TV x, TV s)
{
    /* a loop of scalar arithmetic over indexed elements, with control flow
       on the values */
    TV acc = num(0, AD_NONE);
    for (long i = 0; i < 3; i++)
        for (long j = 0; j < 4; j++) {
            TV e = index_(x, (ArIndex[]){ ar_ix(i), ar_ix(j) }, 2);
            TV t = e.x > 0 ? bin(AR_MUL, e, s) : bin(AR_DIV, e, bin(AR_ADD, s, num(2, AD_NONE)));
            acc = bin(AR_ADD, acc, map(AR_ATAN, t));
            if (j == 3)
                acc =
                    bin(AR_MUL, acc, map(AR_SQRT, bin(AR_ADD, bin(AR_MUL, e, e), num(1, AD_NONE))));
        }
    return acc;
}

static TV case_stack_set(TV x, TV s)
{
    TV parts[3];
    for (long i = 0; i < 3; i++) {
        TV e = index_(x, (ArIndex[]){ ar_ix(i), ar_ix(i + 1) }, 2);
        parts[i] = bin(AR_MUL, e, s);
    }
    TV v = stack(3, parts); /* from numbers */
    TV rows[2] = { index_(x, (ArIndex[]){ ar_ix(0) }, 1), index_(x, (ArIndex[]){ ar_ix(2) }, 1) };
    TV m = stack(2, rows); /* from arrays: (2,4) */
    TV y = setitems(x, (ArIndex[]){ ar_ix(1), ar_ix_slice(1, 3, 1) }, 2, s); /* x[1, 1:3] = s */
    TV y2 =
        setitems(y, (ArIndex[]){ ar_ix(2) }, 1, index_(m, (ArIndex[]){ ar_ix(1) }, 1)); /* a row */
    TV y3 = setitems(y2, (ArIndex[]){ ar_ix_all(), ar_ix(0) }, 2, v); /* a column from numbers */
    return bin(AR_ADD, sum(map(AR_SIN, y3), AR_AXIS_ALL, 0),
               sum(bin(AR_MUL, m, m), AR_AXIS_ALL, 0));
}

static TV case_external(TV x, TV s)
{
    TV a = index_(x, (ArIndex[]){ ar_ix(0), ar_ix(1) }, 2);
    TV b = bin(AR_MUL, s, index_(x, (ArIndex[]){ ar_ix(2), ar_ix(3) }, 2));
    TV y = external(a, b);
    TV y2 = external(index_(y, (ArIndex[]){ ar_ix(0) }, 1),
                     index_(y, (ArIndex[]){ ar_ix(2) }, 1)); /* chained */
    TV w = matmul(y, y2);
    return bin(AR_ADD, w, sum(bin(AR_MUL, y, y), AR_AXIS_ALL, 0));
}

static double run(Case c, const double *xd, double s)
{
    size_t shape[2] = { 3, 4 };
    TV x = arr(mk(2, shape, xd), AD_NONE);
    TV r = c(x, num(s, AD_NONE));
    release_all();
    return r.x;
}

static void check_case(Case c, const char *name, unsigned seed)
{
    Rng r;
    rng_seed(&r, seed);
    double xd[12];
    for (int i = 0; i < 12; i++) xd[i] = rng_normal(&r) * 0.8;
    double s = 0.7 + 0.2 * rng_uniform(&r);
    T = ad_new();
    size_t shape[2] = { 3, 4 };
    AdNode xn = ad_input(T, 2, shape), sn = ad_input(T, 0, NULL);
    TV out = c(arr(mk(2, shape, xd), xn), num(s, sn));
    ck_assert_msg(out.n >= 0, "%s: %s", name, ad_error(T));
    AdGrad *g = ad_grad_new();
    ck_assert_msg(ad_backward(T, out.n, NULL, g) == 0, "%s", ad_error(T));
    const double *gx = ad_adjoint(g, xn), *gs = ad_adjoint(g, sn);
    AdTape *keep = T;
    T = NULL;
    const double h = 1e-6;
    ck_assert(fabs(run(c, xd, s) - out.x) < 1e-12 * (1 + fabs(out.x)));
    for (int i = 0; i < 13; i++) {
        double xp[12], xm[12];
        memcpy(xp, xd, sizeof xp);
        memcpy(xm, xd, sizeof xm);
        double sp = s, sm = s;
        if (i < 12) {
            xp[i] += h;
            xm[i] -= h;
        } else {
            sp += h;
            sm -= h;
        }
        double fd = (run(c, xp, sp) - run(c, xm, sm)) / (2 * h);
        double got = i < 12 ? gx[i] : gs[0];
        ck_assert_msg(fabs(got - fd) < 1e-6 * (1 + fabs(fd)),
                      "%s: d/d%s%d = %.12g, finite differences %.12g", name, i < 12 ? "x" : "s",
                      i < 12 ? i : 0, got, fd);
    }
    ad_grad_free(g);
    ad_free(keep);
    release_all();
}

START_TEST(test_cases)
{
    check_case(case_elementwise, "elementwise", 1);
    check_case(case_broadcast, "broadcast", 2);
    check_case(case_linalg, "linalg", 3);
    check_case(case_scalars, "scalars", 4);
    check_case(case_stack_set, "stack/set", 5);
    check_case(case_external, "external", 6);
}
END_TEST

START_TEST(test_jacobian_rows)
{
    /* backward with a seed per output gives the Jacobian row by row; buffers
       are reused across sweeps */
    T = ad_new();
    AdNode u = ad_input(T, 0, NULL), v = ad_input(T, 0, NULL);
    TV y = external(num(0.3, u), num(-1.2, v));
    AdGrad *g = ad_grad_new();
    double J[6] = { cos(0.3) * -1.2, sin(0.3), 1, 2 * -1.2, exp(1.5), -exp(1.5) };
    for (int r = 0; r < 3; r++) {
        double seed[3] = { 0, 0, 0 };
        seed[r] = 1;
        ck_assert_int_eq(ad_backward(T, y.n, seed, g), 0);
        ck_assert(fabs(ad_adjoint(g, u)[0] - J[2 * r]) < 1e-15);
        ck_assert(fabs(ad_adjoint(g, v)[0] - J[2 * r + 1]) < 1e-15);
    }
    ad_grad_free(g);
    ad_free(T);
    T = NULL;
    release_all();
    free(made);
    made = NULL;
    capmade = 0;
}
END_TEST

START_TEST(test_constants_and_errors)
{
    AdTape *t = ad_new();
    /* operations on constants make no nodes */
    ck_assert_int_eq(ad_s2(t, AD_NONE, 1, AD_NONE, 2), AD_NONE);
    ck_assert_int_eq(ad_s1(t, AD_NONE, 1), AD_NONE);
    ck_assert_int_eq((int)ad_len(t), 0);
    AdNode x = ad_input(t, 0, NULL);
    AdNode y = ad_s2(t, x, 2.0, AD_NONE, 0);
    ck_assert_int_eq(y, 1);
    /* an unreached input has a zero adjoint */
    AdNode z = ad_input(t, 0, NULL);
    AdGrad *g = ad_grad_new();
    ck_assert_int_eq(ad_backward(t, y, NULL, g), 0);
    ck_assert(ad_adjoint(g, x)[0] == 2);
    ck_assert(ad_adjoint(g, z)[0] == 0);
    /* a Jacobian node must be filled in before the sweep */
    AdNode j = ad_jac(t, 1, &x, 0, NULL);
    ck_assert_int_eq(ad_backward(t, j, NULL, g), -1);
    ck_assert_str_eq(ad_error(t), "internal error: a Jacobian node was not filled in");
    /* bad operands propagate */
    ck_assert_int_eq(ad_s1(t, AD_ERR, 1), AD_ERR);
    ck_assert_int_eq(ad_gather(t, x, 1, (size_t[]){ 3 }, 0, NULL), AD_ERR);
    ck_assert_str_eq(ad_error(t), "gather: position 3 out of range");
    char err[AR_ERRLEN];
    size_t sh[3] = { 2, 2, 2 };
    Array *a3 = ar_zeros(AR_F64, 3, sh, err);
    AdNode n3 = ad_input(t, 3, sh);
    ck_assert_int_eq(ad_matmul(t, n3, a3, n3, a3), AD_ERR);
    ck_assert_str_eq(ad_error(t),
                     "@ of arrays with more than 2 dimensions cannot be differentiated");
    ck_assert_int_eq(ad_ewise(t, AR_LT, n3, ad_arr(a3), AD_NONE, ad_num(0), a3), AD_ERR);
    ck_assert_str_eq(ad_error(t), "operator < has no derivative");
    ar_free(a3);
    ad_grad_free(g);
    ad_free(t);
}
END_TEST

START_TEST(test_long_chain)
{
    /* 100000 scalar operations: one sweep, linear time */
    AdTape *t = ad_new();
    AdNode x = ad_input(t, 0, NULL), y = x;
    double d = 1;
    for (int i = 0; i < 100000; i++) {
        double c = (i % 2) ? 1.0000001 : 0.9999999;
        y = ad_s2(t, y, c, AD_NONE, 0);
        d *= c;
    }
    AdGrad *g = ad_grad_new();
    ck_assert_int_eq(ad_backward(t, y, NULL, g), 0);
    ck_assert(fabs(ad_adjoint(g, x)[0] - d) <
              1e-9); /* the same factors, multiplied in the other order */
    ad_grad_free(g);
    ad_free(t);
}
END_TEST

static Suite *ad_suite(void)
{
    Suite *s = suite_create("ad");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_cases);
    tcase_add_test(tc, test_jacobian_rows);
    tcase_add_test(tc, test_constants_and_errors);
    tcase_add_test(tc, test_long_chain);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ad_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
