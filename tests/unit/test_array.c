/* test_array.c — Check unit tests of the array room (src/array) against
 * hand-computed values: makers, copy-on-write, indexing and assignment,
 * broadcasting, BLAS products, kron, reductions, math functions, LAPACK
 * eigenvalues, printing, and the allocation-failure paths.
 * Uses only array.h (and rng.h); knows nothing of the interpreter. */
#include <check.h>
#include <complex.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "qblas.h"

#define EPS 1e-12

static char err[AR_ERRLEN];

/* ---- helpers ------------------------------------------------------------------ */

/* Why: float array of any shape from a literal. */
static Array *mkf(int ndim, const size_t *sh, const double *d)
{
    Array *a = ar_from_data(AR_F64, ndim, sh, d, err);
    ck_assert_msg(a != NULL, "%s", err);
    return a;
}

/* Why: complex array from interleaved (re, im) pairs. */
static Array *mkc(int ndim, const size_t *sh, const double *reim)
{
    Array *a = ar_from_data(AR_C128, ndim, sh, reim, err);
    ck_assert_msg(a != NULL, "%s", err);
    return a;
}

#define SH(...)       ((const size_t[]){ __VA_ARGS__ })
#define D(...)        ((const double[]){ __VA_ARGS__ })
#define A1(n, ...)    mkf(1, SH(n), D(__VA_ARGS__))
#define A2(m, n, ...) mkf(2, SH(m, n), D(__VA_ARGS__))
#define C1(n, ...)    mkc(1, SH(n), D(__VA_ARGS__))
#define C2(m, n, ...) mkc(2, SH(m, n), D(__VA_ARGS__))

/* Temporaries used inline are kept here and freed after each test. */
static Array *pool[64];
static int npool;

static Array *keep(Array *a)
{
    ck_assert(npool < 64);
    pool[npool++] = a;
    return a;
}

static void pool_free(void)
{
    while (npool) ar_free(pool[--npool]);
}

#define TA1(...) keep(A1(__VA_ARGS__))
#define TA2(...) keep(A2(__VA_ARGS__))
#define TC1(...) keep(C1(__VA_ARGS__))

/* Why: the printed form is the most readable whole-array comparison. */
static void fmt_is(Array *a, const char *want)
{
    ck_assert_ptr_nonnull(a);
    char *s = ar_format(a);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s, want);
    free(s);
}

/* Prints, compares and frees (for temporaries). */
static void fmt_is_free(Array *a, const char *want)
{
    ck_assert_msg(a != NULL, "%s", err);
    fmt_is(a, want);
    ar_free(a);
}

static void close_to(const Array *a, const double *want, size_t n, double tol)
{
    ck_assert_uint_eq(ar_size(a), n);
    for (size_t i = 0; i < n; i++) {
        ArScalar s = ar_item(a, i);
        ck_assert_msg(fabs(s.re - want[i]) <= tol, "element %zu: %.17g != %.17g", i, s.re, want[i]);
        ck_assert_msg(fabs(s.im) <= tol, "element %zu has imaginary part %g", i, s.im);
    }
}

static void cclose_to(const Array *a, const double *reim, size_t n, double tol)
{
    ck_assert(ar_is_complex(a));
    ck_assert_uint_eq(ar_size(a), n);
    for (size_t i = 0; i < n; i++) {
        ArScalar s = ar_item(a, i);
        ck_assert_msg(fabs(s.re - reim[2 * i]) <= tol && fabs(s.im - reim[2 * i + 1]) <= tol,
                      "element %zu: (%g, %g) != (%g, %g)", i, s.re, s.im, reim[2 * i],
                      reim[2 * i + 1]);
    }
}

static void err_is(const char *want)
{
    ck_assert_str_eq(err, want);
    err[0] = 0;
}

/* ---- creation, makers ------------------------------------------------------------ */

START_TEST(t_new_and_shape)
{
    Array *a = ar_new(AR_F64, 2, SH(2, 3), err);
    ck_assert_int_eq(ar_ndim(a), 2);
    ck_assert_uint_eq(ar_size(a), 6);
    ck_assert_uint_eq(ar_shape(a)[0], 2);
    ck_assert_uint_eq(ar_shape(a)[1], 3);
    ck_assert_uint_eq(ar_dim(a, -1), 3);
    ck_assert_uint_eq(ar_len(a), 2);
    ck_assert(!ar_is_complex(a));
    ck_assert_int_eq(((uintptr_t)ar_f64_ro(a)) % 64, 0);
    char buf[64];
    ar_shape_str(a, buf, sizeof buf);
    ck_assert_str_eq(buf, "(2, 3)");
    fmt_is(a, "array([[0, 0, 0], [0, 0, 0]])");
    ar_free(a);

    a = ar_zeros(AR_C128, 1, SH(3), err);
    ar_shape_str(a, buf, sizeof buf);
    ck_assert_str_eq(buf, "(3,)");
    ck_assert_int_eq(((uintptr_t)ar_c128_ro(a)) % 64, 0);
    ck_assert_ptr_null(ar_f64_ro(a));
    fmt_is_free(a, "array([0j, 0j, 0j])");

    fmt_is_free(ar_ones(AR_F64, 2, SH(2, 2), err), "array([[1, 1], [1, 1]])");
    fmt_is_free(ar_ones(AR_C128, 1, SH(2), err), "array([(1+0j), (1+0j)])");
    fmt_is_free(ar_eye(3, err), "array([[1, 0, 0], [0, 1, 0], [0, 0, 1]])");
    fmt_is_free(ar_full(2, SH(1, 2), ar_scalar(2.5), err), "array([[2.5, 2.5]])");
    fmt_is_free(ar_full(1, SH(2), ar_cscalar(1, -2), err), "array([(1-2j), (1-2j)])");
    fmt_is_free(ar_zeros(AR_F64, 1, SH(0), err), "array([])");
    fmt_is_free(ar_zeros(AR_F64, 2, SH(2, 0), err), "array([], shape=(2, 0))");
    fmt_is_free(ar_zeros(AR_F64, 3, SH(100000, 100000, 0), err),
                "array([], shape=(100000, 100000, 0))");
    fmt_is_free(ar_zeros(AR_C128, 2, SH(0, 3), err), "array([], shape=(0, 3))");
    /* 3-d */
    a = ar_arange(0, 8, 1, err);
    Array *b = ar_reshape(a, 3, (const long[]){ 2, 2, 2 }, err);
    fmt_is_free(b, "array([[[0, 1], [2, 3]], [[4, 5], [6, 7]]])");
    ar_free(a);
}
END_TEST

START_TEST(t_new_errors)
{
    ck_assert_ptr_null(ar_new(AR_F64, 0, SH(1), err));
    err_is("arrays have 1 to 8 dimensions, not 0");
    ck_assert_ptr_null(ar_new(AR_F64, 9, SH(1, 1, 1, 1, 1, 1, 1, 1, 1), err));
    err_is("arrays have 1 to 8 dimensions, not 9");
    ck_assert_ptr_null(ar_new(AR_F64, 2, SH((size_t)1 << 40, (size_t)1 << 40), err));
    ck_assert_str_eq(err, "array too large: shape (1099511627776, 1099511627776)");
    ck_assert_ptr_null(ar_new(AR_C128, 1, SH(SIZE_MAX), err));
    ck_assert(strncmp(err, "array too large", 15) == 0);
    /* over 1e15 bytes is refused by the allocator, not an abort */
    ck_assert_ptr_null(ar_new(AR_F64, 1, SH((size_t)1 << 55), err));
    ck_assert(strstr(err, "out of memory") != NULL || strstr(err, "too large") != NULL);
}
END_TEST

START_TEST(t_linspace_arange)
{
    fmt_is_free(ar_linspace(0, 1, 5, err), "array([0, 0.25, 0.5, 0.75, 1])");
    fmt_is_free(ar_linspace(2, 3, 1, err), "array([2])");
    fmt_is_free(ar_linspace(2, 3, 0, err), "array([])");
    fmt_is_free(ar_linspace(1, -1, 3, err), "array([1, 0, -1])");
    Array *a = ar_linspace(0, 0.3, 4, err); /* last element is b exactly */
    ck_assert(ar_item(a, 3).re == 0.3);
    ar_free(a);
    ck_assert_ptr_null(ar_linspace(0, 1, -1, err));
    err_is("linspace: number of points must be non-negative, got -1");

    fmt_is_free(ar_arange(0, 1, 0.25, err), "array([0, 0.25, 0.5, 0.75])");
    fmt_is_free(ar_arange(5, 0, -2, err), "array([5, 3, 1])");
    fmt_is_free(ar_arange(0, 0, 1, err), "array([])");
    fmt_is_free(ar_arange(3, 0, 1, err), "array([])");
    fmt_is_free(ar_arange(0, 5, 1, err), "array([0, 1, 2, 3, 4])");
    ck_assert_ptr_null(ar_arange(0, 1, 0, err));
    err_is("arange: step must not be zero");
}
END_TEST

START_TEST(t_random)
{
    Rng r1, r2, r3;
    rng_seed(&r1, 42);
    rng_seed(&r2, 42);
    rng_seed(&r3, 43);
    Array *a = ar_randn(2, SH(3, 4), &r1, err);
    Array *b = ar_randn(2, SH(3, 4), &r2, err);
    Array *c = ar_randn(2, SH(3, 4), &r3, err);
    ck_assert(ar_equal(a, b));
    ck_assert(!ar_equal(a, c));
    /* same stream, row-major: element k is the k-th deviate */
    Rng r4;
    rng_seed(&r4, 42);
    for (size_t i = 0; i < 12; i++) ck_assert(ar_item(a, i).re == rng_normal(&r4));
    ar_free(a);
    ar_free(b);
    ar_free(c);

    size_t n = 200000;
    a = ar_randn(1, &n, &r1, err);
    ArScalar m;
    ck_assert_int_eq(ar_mean(a, &m, err), 0);
    ck_assert_msg(fabs(m.re) < 0.01, "mean %g", m.re);
    Array *sq = ar_binop(AR_MUL, a, a, err);
    ArScalar v;
    ar_mean(sq, &v, err);
    ck_assert_msg(fabs(v.re - 1) < 0.02, "variance %g", v.re);
    ar_free(sq);
    ar_free(a);

    a = ar_rand(1, &n, &r1, err);
    ArScalar lo, hi;
    ar_min(a, &lo, err);
    ar_max(a, &hi, err);
    ar_mean(a, &m, err);
    ck_assert(lo.re >= 0 && hi.re < 1);
    ck_assert_msg(fabs(m.re - 0.5) < 0.01, "mean %g", m.re);
    ar_free(a);
}
END_TEST

/* ---- copy-on-write ------------------------------------------------------------------ */

START_TEST(t_cow)
{
    Array *a = A2(2, 2, 1, 2, 3, 4);
    Array *b = ar_copy(a, err);
    ck_assert_uint_eq(ar_refcount(a), 2);
    ck_assert_ptr_eq(ar_f64_ro(a), ar_f64_ro(b)); /* O(1): same buffer */
    ck_assert_int_eq(ar_set(b, (const long[]){ 0, 1 }, 2, ar_scalar(20), err), 0);
    fmt_is(a, "array([[1, 2], [3, 4]])"); /* original unchanged */
    fmt_is(b, "array([[1, 20], [3, 4]])");
    ck_assert_uint_eq(ar_refcount(a), 1);
    ck_assert_uint_eq(ar_refcount(b), 1);

    /* writable pointer of a shared buffer is a private copy */
    Array *c = ar_copy(a, err);
    double *w = ar_f64(c);
    ck_assert_ptr_nonnull(w);
    ck_assert_ptr_ne(w, ar_f64_ro(a));
    w[0] = -1;
    fmt_is(a, "array([[1, 2], [3, 4]])");
    fmt_is(c, "array([[-1, 2], [3, 4]])");
    ck_assert_ptr_null(ar_c128(c));
    /* a unique buffer is written in place */
    ck_assert_ptr_eq(ar_f64(c), w);

    /* reshape shares; writes through either stay private */
    Array *r = ar_reshape(a, 1, (const long[]){ -1 }, err);
    ck_assert_uint_eq(ar_refcount(a), 2);
    ar_set(r, (const long[]){ 3 }, 1, ar_scalar(99), err);
    fmt_is(a, "array([[1, 2], [3, 4]])");
    fmt_is(r, "array([1, 2, 3, 99])");

    /* freeing the original leaves the copy intact */
    Array *d = ar_copy(a, err);
    ar_free(a);
    fmt_is(d, "array([[1, 2], [3, 4]])");
    ck_assert_uint_eq(ar_refcount(d), 1);
    ar_free(b);
    ar_free(c);
    ar_free(d);
    ar_free(r);
}
END_TEST

/* ---- indexing -------------------------------------------------------------------------- */

START_TEST(t_get)
{
    Array *a = A2(3, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9);
    ArScalar s;
    Array *o = NULL;
    ck_assert_int_eq(ar_get(a, (const long[]){ 1, 2 }, 2, &s, &o, err), AR_SCALAR);
    ck_assert(s.re == 6 && !s.is_complex);
    ck_assert_int_eq(ar_get(a, (const long[]){ -1, -3 }, 2, &s, &o, err), AR_SCALAR);
    ck_assert(s.re == 7);
    ck_assert_int_eq(ar_get(a, (const long[]){ 1 }, 1, &s, &o, err), AR_ARRAY);
    fmt_is_free(o, "array([4, 5, 6])");
    ck_assert_int_eq(ar_get(a, (const long[]){ -1 }, 1, &s, &o, err), AR_ARRAY);
    fmt_is_free(o, "array([7, 8, 9])");

    ck_assert_int_eq(ar_get(a, (const long[]){ 3 }, 1, &s, &o, err), AR_ERR);
    err_is("index 3 is out of range for axis 0 with length 3");
    ck_assert_int_eq(ar_get(a, (const long[]){ 0, -4 }, 2, &s, &o, err), AR_ERR);
    err_is("index -4 is out of range for axis 1 with length 3");
    ck_assert_int_eq(ar_get(a, (const long[]){ 0, 0, 0 }, 3, &s, &o, err), AR_ERR);
    err_is("too many indices: 3 for a 2-d array");

    Array *v = A1(3, 10, 20, 30);
    ck_assert_int_eq(ar_get(v, (const long[]){ -1 }, 1, &s, &o, err), AR_SCALAR);
    ck_assert(s.re == 30);
    ar_free(v);

    Array *c = C1(2, 1, 2, 3, -4);
    ck_assert_int_eq(ar_get(c, (const long[]){ 1 }, 1, &s, &o, err), AR_SCALAR);
    ck_assert(s.is_complex && s.re == 3 && s.im == -4);
    ar_free(c);

    /* a row taken out is a copy: writing a later does not change it */
    ar_get(a, (const long[]){ 0 }, 1, &s, &o, err);
    ar_set(a, (const long[]){ 0, 0 }, 2, ar_scalar(100), err);
    fmt_is_free(o, "array([1, 2, 3])");
    ar_free(a);
}
END_TEST

START_TEST(t_slices)
{
    Array *a = A2(3, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9);
    ArScalar s;
    Array *o;
    const long N = AR_IX_NONE;
    ArIndex ix[2];

    ix[0] = ar_ix_slice(1, 3, N); /* a[1:3] */
    ck_assert_int_eq(ar_index(a, ix, 1, &s, &o, err), AR_ARRAY);
    fmt_is_free(o, "array([[4, 5, 6], [7, 8, 9]])");
    ix[0] = ar_ix_all(); /* a[:, 0] */
    ix[1] = ar_ix(0);
    ck_assert_int_eq(ar_index(a, ix, 2, &s, &o, err), AR_ARRAY);
    fmt_is_free(o, "array([1, 4, 7])");
    ix[0] = ar_ix(-1); /* a[-1, 1:] */
    ix[1] = ar_ix_slice(1, N, N);
    ar_index(a, ix, 2, &s, &o, err);
    fmt_is_free(o, "array([8, 9])");
    ix[0] = ar_ix_slice(N, N, -1); /* a[::-1, ::2] */
    ix[1] = ar_ix_slice(N, N, 2);
    ar_index(a, ix, 2, &s, &o, err);
    fmt_is_free(o, "array([[7, 9], [4, 6], [1, 3]])");
    ix[0] = ar_ix_slice(-2, N, N); /* a[-2:] */
    ar_index(a, ix, 1, &s, &o, err);
    fmt_is_free(o, "array([[4, 5, 6], [7, 8, 9]])");
    ix[0] = ar_ix_slice(5, 10, N); /* a[5:10]: empty */
    ar_index(a, ix, 1, &s, &o, err);
    char buf[32];
    ar_shape_str(o, buf, sizeof buf);
    ck_assert_str_eq(buf, "(0, 3)");
    fmt_is_free(o, "array([], shape=(0, 3))");
    ix[0] = ar_ix_slice(2, 0, -1); /* a[2:0:-1, -1] */
    ix[1] = ar_ix(-1);
    ar_index(a, ix, 2, &s, &o, err);
    fmt_is_free(o, "array([9, 6])");
    ix[0] = ar_ix_slice(0, 3, 0);
    ck_assert_int_eq(ar_index(a, ix, 1, &s, &o, err), AR_ERR);
    err_is("slice step cannot be zero (axis 0)");

    Array *v = A1(6, 0, 1, 2, 3, 4, 5);
    ix[0] = ar_ix_slice(-100, 100, 2);
    ar_index(v, ix, 1, &s, &o, err);
    fmt_is_free(o, "array([0, 2, 4])");
    ix[0] = ar_ix_slice(4, -100, -3);
    ar_index(v, ix, 1, &s, &o, err);
    fmt_is_free(o, "array([4, 1])");
    ar_free(v);

    Array *c = C2(2, 2, 1, 1, 2, 2, 3, 3, 4, 4);
    ix[0] = ar_ix_all();
    ix[1] = ar_ix(1);
    ar_index(c, ix, 2, &s, &o, err);
    fmt_is_free(o, "array([(2+2j), (4+4j)])");
    ar_free(c);
    ar_free(a);
}
END_TEST

START_TEST(t_assign)
{
    Array *a = ar_zeros(AR_F64, 2, SH(2, 3), err);
    const long N = AR_IX_NONE;
    ArIndex ix[2];
    ck_assert_int_eq(ar_set(a, (const long[]){ 0, 1 }, 2, ar_scalar(5), err), 0);
    ck_assert_int_eq(ar_set(a, (const long[]){ -1, -1 }, 2, ar_scalar(7), err), 0);
    fmt_is(a, "array([[0, 5, 0], [0, 0, 7]])");
    ck_assert_int_eq(ar_set(a, (const long[]){ 1 }, 1, ar_scalar(2), err), 0); /* fill row */
    fmt_is(a, "array([[0, 5, 0], [2, 2, 2]])");

    Array *row = A1(3, 1, 2, 3);
    ix[0] = ar_ix(0); /* a[0] = row */
    ck_assert_int_eq(ar_assign_array(a, ix, 1, row, err), 0);
    fmt_is(a, "array([[1, 2, 3], [2, 2, 2]])");
    ix[0] = ar_ix_all(); /* a[:] = row */
    ck_assert_int_eq(ar_assign_array(a, ix, 1, row, err), 0);
    fmt_is(a, "array([[1, 2, 3], [1, 2, 3]])");
    Array *col = A1(2, 8, 9);
    ix[0] = ar_ix_all(); /* a[:, 2] = col */
    ix[1] = ar_ix(2);
    ck_assert_int_eq(ar_assign_array(a, ix, 2, col, err), 0);
    fmt_is(a, "array([[1, 2, 8], [1, 2, 9]])");
    ix[0] = ar_ix_all(); /* a[:, ::2] = -1 */
    ix[1] = ar_ix_slice(N, N, 2);
    ck_assert_int_eq(ar_assign_scalar(a, ix, 2, ar_scalar(-1), err), 0);
    fmt_is(a, "array([[-1, 2, -1], [-1, 2, -1]])");

    ix[0] = ar_ix(0); /* a[0] = (2,) */
    ck_assert_int_eq(ar_assign_array(a, ix, 1, col, err), AR_ERR);
    err_is("could not broadcast array of shape (2,) into shape (3,)");
    ck_assert_int_eq(ar_set(a, (const long[]){ 2, 0 }, 2, ar_scalar(1), err), AR_ERR);
    err_is("index 2 is out of range for axis 0 with length 2");

    /* a complex value makes the array complex */
    ck_assert_int_eq(ar_set(a, (const long[]){ 0, 0 }, 2, ar_cscalar(0, 1), err), 0);
    ck_assert(ar_is_complex(a));
    fmt_is(a, "array([[1j, (2+0j), (-1+0j)], [(-1+0j), (2+0j), (-1+0j)]])");
    /* and a float row goes into a complex array */
    ix[0] = ar_ix(1);
    ck_assert_int_eq(ar_assign_array(a, ix, 1, row, err), 0);
    fmt_is(a, "array([[1j, (2+0j), (-1+0j)], [(1+0j), (2+0j), (3+0j)]])");
    ar_free(a);

    /* a[::-1] = a: the source is read as it was before the write */
    a = A2(2, 2, 1, 2, 3, 4);
    ix[0] = ar_ix_slice(N, N, -1);
    ck_assert_int_eq(ar_assign_array(a, ix, 1, a, err), 0);
    fmt_is(a, "array([[3, 4], [1, 2]])");
    /* assigning into a copy leaves the original alone */
    Array *b = ar_copy(a, err);
    ix[0] = ar_ix(0);
    ar_assign_array(b, ix, 1, col, err);
    fmt_is(a, "array([[3, 4], [1, 2]])");
    fmt_is(b, "array([[8, 9], [1, 2]])");
    ar_free(a);
    ar_free(b);
    ar_free(row);
    ar_free(col);
}
END_TEST

/* ---- shape ---------------------------------------------------------------------------------- */

START_TEST(t_reshape_transpose)
{
    Array *a = A1(6, 1, 2, 3, 4, 5, 6);
    fmt_is_free(ar_reshape(a, 2, (const long[]){ 2, 3 }, err), "array([[1, 2, 3], [4, 5, 6]])");
    Array *r = ar_reshape(a, 2, (const long[]){ 3, -1 }, err);
    char buf[32];
    ar_shape_str(r, buf, sizeof buf);
    ck_assert_str_eq(buf, "(3, 2)");
    fmt_is(r, "array([[1, 2], [3, 4], [5, 6]])");
    ck_assert_ptr_null(ar_reshape(a, 2, (const long[]){ 4, -1 }, err));
    err_is("cannot reshape array of size 6 into shape (4, -1)");
    ck_assert_ptr_null(ar_reshape(a, 2, (const long[]){ 4, 2 }, err));
    err_is("cannot reshape array of size 6 into shape (4, 2)");
    ck_assert_ptr_null(ar_reshape(a, 2, (const long[]){ -1, -1 }, err));
    err_is("reshape: only one dimension may be -1, got (-1, -1)");

    Array *t = ar_transpose(r, err);
    fmt_is_free(t, "array([[1, 3, 5], [2, 4, 6]])");
    fmt_is_free(ar_transpose(a, err), "array([1, 2, 3, 4, 5, 6])");
    ar_free(r);
    ar_free(a);

    /* n-d: axes reversed, t[k, j, i] == a[i, j, k] */
    a = ar_arange(0, 24, 1, err);
    r = ar_reshape(a, 3, (const long[]){ 2, 3, 4 }, err);
    t = ar_transpose(r, err);
    ar_shape_str(t, buf, sizeof buf);
    ck_assert_str_eq(buf, "(4, 3, 2)");
    for (long i = 0; i < 2; i++)
        for (long j = 0; j < 3; j++)
            for (long k = 0; k < 4; k++) {
                ArScalar x, y;
                Array *o;
                ar_get(r, (const long[]){ i, j, k }, 3, &x, &o, err);
                ar_get(t, (const long[]){ k, j, i }, 3, &y, &o, err);
                ck_assert(x.re == y.re);
            }
    ar_free(a);
    ar_free(r);
    ar_free(t);

    /* big 2-d transpose (crosses the 32-element blocks), complex, no conj */
    Array *c = C2(1, 2, 1, 2, 3, 4);
    fmt_is_free(ar_transpose(c, err), "array([[(1+2j)], [(3+4j)]])");
    ar_free(c);
    a = ar_arange(0, 70 * 45, 1, err);
    r = ar_reshape(a, 2, (const long[]){ 70, 45 }, err);
    t = ar_transpose(r, err);
    const double *td = ar_f64_ro(t);
    for (size_t i = 0; i < 70; i++)
        for (size_t j = 0; j < 45; j++) ck_assert(td[j * 70 + i] == (double)(i * 45 + j));
    ar_free(a);
    ar_free(r);
    ar_free(t);
}
END_TEST

/* ---- elementwise
 * ------------------------------------------------------------------------------ */

START_TEST(t_binop_same_shape)
{
    Array *a = A1(3, 1, 2, 3), *b = A1(3, 4, 5, 6);
    fmt_is_free(ar_binop(AR_ADD, a, b, err), "array([5, 7, 9])");
    fmt_is_free(ar_binop(AR_SUB, a, b, err), "array([-3, -3, -3])");
    fmt_is_free(ar_binop(AR_MUL, a, b, err), "array([4, 10, 18])");
    fmt_is_free(ar_binop(AR_DIV, a, b, err), "array([0.25, 0.4, 0.5])");
    fmt_is_free(ar_binop(AR_POW, a, b, err), "array([1, 32, 729])");
    fmt_is_free(ar_neg(a, err), "array([-1, -2, -3])");
    Array *z = A1(3, 0, -1, 0);
    Array *zero = ar_zeros(AR_F64, 1, SH(3), err);
    fmt_is_free(ar_binop(AR_DIV, z, zero, err), "array([nan, -inf, nan])");
    fmt_is_free(ar_binop(AR_DIV, a, zero, err), "array([inf, inf, inf])");
    ar_free(z);
    ar_free(zero);
    ar_free(a);
    ar_free(b);
}
END_TEST

START_TEST(t_binop_scalar)
{
    Array *a = A1(3, 1, 2, 4);
    fmt_is_free(ar_binop_scalar(AR_SUB, a, ar_scalar(1), 0, err), "array([0, 1, 3])");
    fmt_is_free(ar_binop_scalar(AR_SUB, a, ar_scalar(1), 1, err), "array([0, -1, -3])");
    fmt_is_free(ar_binop_scalar(AR_DIV, a, ar_scalar(2), 0, err), "array([0.5, 1, 2])");
    fmt_is_free(ar_binop_scalar(AR_DIV, a, ar_scalar(2), 1, err), "array([2, 1, 0.5])");
    fmt_is_free(ar_binop_scalar(AR_POW, a, ar_scalar(2), 0, err), "array([1, 4, 16])");
    fmt_is_free(ar_binop_scalar(AR_POW, a, ar_scalar(2), 1, err), "array([2, 4, 16])");
    fmt_is_free(ar_binop_scalar(AR_MUL, a, ar_cscalar(0, 1), 1, err), "array([1j, 2j, 4j])");
    fmt_is_free(ar_binop_scalar(AR_ADD, a, ar_cscalar(0.5, -1), 0, err),
                "array([(1.5-1j), (2.5-1j), (4.5-1j)])");
    fmt_is_free(ar_binop_scalar(AR_LT, a, ar_scalar(2), 0, err), "array([1, 0, 0])");
    fmt_is_free(ar_binop_scalar(AR_LT, a, ar_scalar(2), 1, err), "array([0, 0, 1])");
    fmt_is_free(ar_binop_scalar(AR_GE, a, ar_scalar(2), 0, err), "array([0, 1, 1])");
    /* scalar op 2-d keeps the shape */
    Array *m = A2(2, 2, 1, 2, 3, 4);
    fmt_is_free(ar_binop_scalar(AR_MUL, m, ar_scalar(10), 1, err), "array([[10, 20], [30, 40]])");
    ar_free(m);
    ar_free(a);
}
END_TEST

START_TEST(t_broadcast)
{
    Array *m = A2(2, 3, 1, 2, 3, 4, 5, 6), *v = A1(3, 10, 20, 30);
    fmt_is_free(ar_binop(AR_ADD, m, v, err), "array([[11, 22, 33], [14, 25, 36]])");
    fmt_is_free(ar_binop(AR_SUB, v, m, err), "array([[9, 18, 27], [6, 15, 24]])");
    Array *c = A2(3, 1, 1, 2, 3), *r = A2(1, 4, 1, 10, 100, 1000);
    Array *o = ar_binop(AR_MUL, c, r, err);
    char buf[32];
    ar_shape_str(o, buf, sizeof buf);
    ck_assert_str_eq(buf, "(3, 4)");
    fmt_is_free(o, "array([[1, 10, 100, 1000], [2, 20, 200, 2000], [3, 30, 300, 3000]])");
    /* (2, 1, 3) + (4, 1) -> (2, 4, 3) */
    Array *x = ar_arange(0, 6, 1, err);
    Array *x3 = ar_reshape(x, 3, (const long[]){ 2, 1, 3 }, err);
    Array *y = A2(4, 1, 0, 10, 20, 30);
    o = ar_binop(AR_ADD, x3, y, err);
    ar_shape_str(o, buf, sizeof buf);
    ck_assert_str_eq(buf, "(2, 4, 3)");
    ArScalar s;
    Array *tmp;
    ar_get(o, (const long[]){ 1, 2, 1 }, 3, &s, &tmp, err);
    ck_assert(s.re == 4 + 20);
    ar_free(o);
    /* size-1 arrays broadcast over everything, size 0 stays empty */
    Array *one = A1(1, 5);
    fmt_is_free(ar_binop(AR_SUB, one, m, err), "array([[4, 3, 2], [1, 0, -1]])");
    Array *e = ar_zeros(AR_F64, 2, SH(0, 3), err);
    o = ar_binop(AR_ADD, e, v, err);
    ar_shape_str(o, buf, sizeof buf);
    ck_assert_str_eq(buf, "(0, 3)");
    ar_free(o);

    Array *mt = A2(3, 2, 1, 2, 3, 4, 5, 6);
    ck_assert_ptr_null(ar_binop(AR_ADD, m, mt, err));
    err_is("shape mismatch: (2, 3) + (3, 2)");
    Array *w = A1(2, 1, 2);
    ck_assert_ptr_null(ar_binop(AR_LE, m, w, err));
    err_is("shape mismatch: (2, 3) <= (2,)");
    ar_free(w);
    ar_free(mt);
    ar_free(e);
    ar_free(one);
    ar_free(x);
    ar_free(x3);
    ar_free(y);
    ar_free(c);
    ar_free(r);
    ar_free(m);
    ar_free(v);
}
END_TEST

START_TEST(t_complex_arith)
{
    Array *a = C1(2, 1, 2, 0, 1), *b = C1(2, 3, -1, 0, 1);
    /* (1+2j)(3-1j) = 5+5j; 1j*1j = -1 */
    fmt_is_free(ar_binop(AR_MUL, a, b, err), "array([(5+5j), (-1+0j)])");
    fmt_is_free(ar_binop(AR_ADD, a, b, err), "array([(4+1j), 2j])");
    Array *d = C1(1, 1, -1);
    /* (1+2j)/(1-1j) = -0.5+1.5j */
    Array *q = ar_binop(AR_DIV, a, d, err);
    cclose_to(q, D(-0.5, 1.5, -0.5, 0.5), 2, EPS);
    ar_free(q);
    /* exact small integer powers: 1j**2 = -1, (1+2j)**3 = -11-2j, 1j**-1 = -1j */
    fmt_is_free(ar_binop_scalar(AR_POW, a, ar_scalar(2), 0, err), "array([(-3+4j), (-1+0j)])");
    fmt_is_free(ar_binop_scalar(AR_POW, a, ar_scalar(3), 0, err), "array([(-11-2j), (-0-1j)])");
    q = ar_binop_scalar(AR_POW, a, ar_scalar(-1), 0, err);
    cclose_to(q, D(0.2, -0.4, 0, -1), 2, EPS);
    ar_free(q);
    /* non-integer power: 1j ** 0.5 = (1+1j)/sqrt(2) */
    Array *i1 = C1(1, 0, 1);
    q = ar_binop_scalar(AR_POW, i1, ar_scalar(0.5), 0, err);
    cclose_to(q, D(M_SQRT1_2, M_SQRT1_2), 1, EPS);
    ar_free(q);
    /* float op complex promotes, complex result */
    Array *f = A1(2, 1, 2);
    fmt_is_free(ar_binop(AR_SUB, f, a, err), "array([-2j, (2-1j)])");
    fmt_is_free(ar_binop(AR_EQ, a, a, err), "array([1, 1])");
    fmt_is_free(ar_binop(AR_NE, a, b, err), "array([1, 0])");
    Array *cf = C1(2, 1, 0, 2, 1);
    fmt_is_free(ar_binop(AR_EQ, f, cf, err), "array([1, 0])");
    ck_assert_ptr_null(ar_binop(AR_LT, a, b, err));
    err_is("ordering comparison '<' is not defined for complex arrays");
    ck_assert_ptr_null(ar_binop_scalar(AR_GE, f, ar_cscalar(1, 1), 0, err));
    err_is("ordering comparison '>=' is not defined for complex arrays");
    fmt_is_free(ar_neg(a, err), "array([(-1-2j), (-0-1j)])");
    ar_free(cf);
    ar_free(f);
    ar_free(i1);
    ar_free(d);
    ar_free(a);
    ar_free(b);
}
END_TEST

START_TEST(t_compare)
{
    Array *a = A1(4, 1, 2, 3, NAN), *b = A1(4, 3, 2, 1, NAN);
    fmt_is_free(ar_binop(AR_EQ, a, b, err), "array([0, 1, 0, 0])");
    fmt_is_free(ar_binop(AR_NE, a, b, err), "array([1, 0, 1, 1])");
    fmt_is_free(ar_binop(AR_LT, a, b, err), "array([1, 0, 0, 0])");
    fmt_is_free(ar_binop(AR_LE, a, b, err), "array([1, 1, 0, 0])");
    fmt_is_free(ar_binop(AR_GT, a, b, err), "array([0, 0, 1, 0])");
    fmt_is_free(ar_binop(AR_GE, a, b, err), "array([0, 1, 1, 0])");
    Array *y = A1(2, 1, -1), *x = A1(2, 1, 0);
    Array *t = ar_binop(AR_ATAN2, y, x, err);
    close_to(t, D(M_PI / 4, -M_PI / 2), 2, EPS);
    ar_free(t);
    Array *c = C1(1, 1, 1);
    ck_assert_ptr_null(ar_binop(AR_ATAN2, c, c, err));
    err_is("atan2 is not defined for complex arrays");
    ck_assert_str_eq(ar_op_name(AR_POW), "**");
    ar_free(c);
    ar_free(x);
    ar_free(y);
    ar_free(a);
    ar_free(b);
}
END_TEST

/* ---- linear algebra
 * ------------------------------------------------------------------------------ */

START_TEST(t_matmul)
{
    Array *a = A2(2, 3, 1, 2, 3, 4, 5, 6), *b = A2(3, 2, 7, 8, 9, 10, 11, 12);
    Array *o = NULL;
    ArScalar s;
    ck_assert_int_eq(ar_matmul(a, b, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([[58, 64], [139, 154]])");
    ck_assert_int_eq(ar_matmul(b, a, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([[39, 54, 69], [49, 68, 87], [59, 82, 105]])");
    /* gemv both sides */
    Array *x = A1(3, 1, 0, -1), *y = A1(2, 1, -1);
    ck_assert_int_eq(ar_matmul(a, x, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([-2, -2])");
    ck_assert_int_eq(ar_matmul(y, a, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([-3, -3, -3])");
    /* inner product */
    Array *z = A1(3, 4, 5, 6);
    ck_assert_int_eq(ar_matmul(x, z, &o, &s, err), AR_SCALAR);
    ck_assert(s.re == -2 && !s.is_complex);
    /* 1x1 results still go through the right path */
    Array *r1 = A2(1, 3, 1, 2, 3), *c1 = A2(3, 1, 4, 5, 6);
    ck_assert_int_eq(ar_matmul(r1, c1, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([[32]])");
    ck_assert_int_eq(ar_matmul(c1, r1, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([[4, 8, 12], [5, 10, 15], [6, 12, 18]])");

    /* errors name both shapes */
    ck_assert_int_eq(ar_matmul(a, a, &o, &s, err), AR_ERR);
    err_is("matmul: shapes (2, 3) and (2, 3) are not aligned");
    ck_assert_int_eq(ar_matmul(x, y, &o, &s, err), AR_ERR);
    err_is("matmul: shapes (3,) and (2,) are not aligned");
    ck_assert_int_eq(ar_matmul(y, b, &o, &s, err), AR_ERR);
    err_is("matmul: shapes (2,) and (3, 2) are not aligned");

    /* k = 0 and empty results */
    Array *e1 = ar_zeros(AR_F64, 2, SH(2, 0), err), *e2 = ar_zeros(AR_F64, 2, SH(0, 3), err);
    ck_assert_int_eq(ar_matmul(e1, e2, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([[0, 0, 0], [0, 0, 0]])");
    ck_assert_int_eq(ar_matmul(e2, b, &o, &s, err), AR_ARRAY); /* (0, 2) */
    ck_assert_uint_eq(ar_size(o), 0);
    ck_assert_uint_eq(ar_dim(o, 1), 2);
    ar_free(o);
    ck_assert_int_eq(ar_matmul(b, e2, &o, &s, err), AR_ERR);
    err_is("matmul: shapes (3, 2) and (0, 3) are not aligned");
    Array *e3 = ar_zeros(AR_F64, 2, SH(0, 2), err);
    ck_assert_int_eq(ar_matmul(e3, TA2(2, 2, 1, 0, 0, 1), &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([], shape=(0, 2))");

    /* stacks: (2, 2, 2) @ (2, 2) */
    Array *st = ar_arange(0, 8, 1, err);
    Array *st3 = ar_reshape(st, 3, (const long[]){ 2, 2, 2 }, err);
    Array *sw = A2(2, 2, 0, 1, 1, 0);
    ck_assert_int_eq(ar_matmul(st3, sw, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([[[1, 0], [3, 2]], [[5, 4], [7, 6]]])");
    ck_assert_int_eq(ar_matmul(st3, y, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([[-1, -1], [-1, -1]])");

    /* dot */
    ck_assert_int_eq(ar_dot(a, b, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([[58, 64], [139, 154]])");
    ck_assert_int_eq(ar_dot(x, z, &o, &s, err), AR_SCALAR);
    ck_assert(s.re == -2);
    ck_assert_int_eq(ar_dot(a, a, &o, &s, err), AR_ERR);
    err_is("dot: shapes (2, 3) and (2, 3) are not aligned");
    ck_assert_int_eq(ar_dot(st3, sw, &o, &s, err), AR_ERR);
    err_is("dot: only 1-d and 2-d arrays, got shapes (2, 2, 2) and (2, 2) (use @)");

    ar_free(st);
    ar_free(st3);
    ar_free(sw);
    ar_free(e1);
    ar_free(e2);
    ar_free(e3);
    ar_free(r1);
    ar_free(c1);
    ar_free(a);
    ar_free(b);
    ar_free(x);
    ar_free(y);
    ar_free(z);
}
END_TEST

START_TEST(t_matmul_complex)
{
    /* [[1, 1j], [0, 2]] @ [[1j, 0], [1, 1]] = [[2j, 1j], [2, 2]] (zgemm) */
    Array *a = C2(2, 2, 1, 0, 0, 1, 0, 0, 2, 0), *b = C2(2, 2, 0, 1, 0, 0, 1, 0, 1, 0);
    Array *o;
    ArScalar s;
    ck_assert_int_eq(ar_matmul(a, b, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([[2j, 1j], [(2+0j), (2+0j)]])");
    /* 3x2 @ 2x3 complex against hand values */
    Array *p = C2(3, 2, 1, 1, 0, 2, 3, 0, 1, -1, 0, 0, 2, 2);
    Array *q = C2(2, 3, 1, 0, 0, 1, 2, -1, 1, 1, 1, 0, 0, 0);
    ck_assert_int_eq(ar_matmul(p, q, &o, &s, err), AR_ARRAY);
    /* row0 = (1+i)[1, i, 2-i] + 2i[1+i, 1, 0] = [1+i-2+2i, i-1+2i, 3+i] */
    cclose_to(o, D(-1, 3, -1, 3, 3, 1, 5, 0, 1, 2, 6, -3, 0, 4, 2, 2, 0, 0), 9, EPS);
    ar_free(o);
    /* zgemv both sides and zdotu (no conjugation) */
    Array *v = C1(2, 0, 1, 2, 0);
    ck_assert_int_eq(ar_matmul(a, v, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([3j, (4+0j)])"); /* [1j+2j, 4] */
    ck_assert_int_eq(ar_matmul(v, a, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([1j, (3+0j)])"); /* [1j, -1+4] */
    Array *w = C1(2, 0, 1, 1, 0);
    ck_assert_int_eq(ar_matmul(v, w, &o, &s, err), AR_SCALAR);
    ck_assert(s.is_complex && s.re == 1 && s.im == 0); /* 1j*1j + 2 */
    /* float @ complex promotes */
    Array *f = A2(2, 2, 1, 2, 3, 4);
    ck_assert_int_eq(ar_matmul(f, b, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([[(2+1j), (2+0j)], [(4+3j), (4+0j)]])");
    Array *fv = A1(2, 1, 1);
    ck_assert_int_eq(ar_matmul(fv, w, &o, &s, err), AR_SCALAR);
    ck_assert(s.is_complex && s.re == 1 && s.im == 1);
    ar_free(fv);
    ar_free(f);
    ar_free(v);
    ar_free(w);
    ar_free(p);
    ar_free(q);
    ar_free(a);
    ar_free(b);
}
END_TEST

START_TEST(t_matmul_big)
{
    /* compare a 70x50 @ 50x30 product against a naive triple loop */
    Rng r;
    rng_seed(&r, 7);
    Array *a = ar_randn(2, SH(70, 50), &r, err), *b = ar_randn(2, SH(50, 30), &r, err);
    Array *o;
    ArScalar s;
    ck_assert_int_eq(ar_matmul(a, b, &o, &s, err), AR_ARRAY);
    const double *A = ar_f64_ro(a), *B = ar_f64_ro(b), *C = ar_f64_ro(o);
    for (size_t i = 0; i < 70; i++)
        for (size_t j = 0; j < 30; j++) {
            double acc = 0;
            for (size_t k = 0; k < 50; k++) acc += A[i * 50 + k] * B[k * 30 + j];
            ck_assert(fabs(acc - C[i * 30 + j]) < 1e-10);
        }
    ar_free(o);
    ar_free(a);
    ar_free(b);
}
END_TEST

START_TEST(t_kron)
{
    Array *a = A2(2, 2, 1, 2, 3, 4), *x = A2(2, 2, 0, 1, 1, 0);
    fmt_is_free(ar_kron(a, x, err),
                "array([[0, 1, 0, 2], [1, 0, 2, 0], [0, 3, 0, 4], [3, 0, 4, 0]])");
    fmt_is_free(ar_kron(x, a, err),
                "array([[0, 0, 1, 2], [0, 0, 3, 4], [1, 2, 0, 0], [3, 4, 0, 0]])");
    Array *u = A1(2, 1, 2), *v = A1(2, 1, 10);
    fmt_is_free(ar_kron(u, v, err), "array([1, 10, 2, 20])");
    Array *col = A2(2, 1, 1, 1);
    fmt_is_free(ar_kron(u, col, err), "array([[1, 2], [1, 2]])");
    /* complex: Y (x) I2 */
    Array *y = C2(2, 2, 0, 0, 0, -1, 0, 1, 0, 0);
    Array *i2 = ar_eye(2, err);
    fmt_is_free(ar_kron(y, i2, err),
                "array([[0j, 0j, -1j, 0j], [0j, 0j, 0j, -1j], [1j, 0j, 0j, 0j], "
                "[0j, 1j, 0j, 0j]])");
    /* 2x3 (x) 1x2: shape (2, 6) */
    Array *m = A2(2, 3, 1, 2, 3, 4, 5, 6), *r = A2(1, 2, 1, -1);
    fmt_is_free(ar_kron(m, r, err), "array([[1, -1, 2, -2, 3, -3], [4, -4, 5, -5, 6, -6]])");
    ar_free(m);
    ar_free(r);
    ar_free(y);
    ar_free(i2);
    ar_free(col);
    ar_free(u);
    ar_free(v);
    ar_free(a);
    ar_free(x);
}
END_TEST

START_TEST(t_norm)
{
    Array *a = A1(2, 3, 4);
    ck_assert(fabs(ar_norm(a) - 5) < EPS);
    Array *m = A2(2, 2, 1, 2, 3, 4);
    ck_assert(fabs(ar_norm(m) - sqrt(30)) < EPS);
    Array *c = C1(2, 0, 3, 4, 0);
    ck_assert(fabs(ar_norm(c) - 5) < EPS);
    Array *e = ar_zeros(AR_F64, 1, SH(0), err);
    ck_assert(ar_norm(e) == 0);
    ar_free(e);
    ar_free(a);
    ar_free(m);
    ar_free(c);
}
END_TEST

START_TEST(t_eigvalsh)
{
    Array *a = A2(2, 2, 2, 1, 1, 2);
    Array *w = ar_eigvalsh(a, err);
    ck_assert_msg(w != NULL, "%s", err);
    close_to(w, D(1, 3), 2, EPS);
    ck_assert(!ar_is_complex(w));
    ar_free(w);
    ar_free(a);

    /* 4x4 tridiagonal [-1 2 -1]: 2 - 2 cos(k pi / 5), k = 1..4 */
    a = A2(4, 4, 2, -1, 0, 0, -1, 2, -1, 0, 0, -1, 2, -1, 0, 0, -1, 2);
    w = ar_eigvalsh(a, err);
    double want[4];
    for (int k = 1; k <= 4; k++) want[k - 1] = 2 - 2 * cos(k * M_PI / 5);
    close_to(w, want, 4, 1e-12);
    ar_free(w);
    /* only the lower triangle is read */
    ar_set(a, (const long[]){ 0, 3 }, 2, ar_scalar(1e6), err);
    w = ar_eigvalsh(a, err);
    close_to(w, want, 4, 1e-12);
    ar_free(w);
    ar_free(a);

    /* complex Hermitian 2x2: I + Y has eigenvalues 0, 2 */
    Array *c = C2(2, 2, 1, 0, 0, -1, 0, 1, 1, 0);
    w = ar_eigvalsh(c, err);
    close_to(w, D(0, 2), 2, 1e-12);
    ar_free(w);
    ar_free(c);
    /* [[2, 1-1j], [1+1j, 3]]: (5 -+ sqrt(1 + 8)) / 2 = 1, 4 */
    c = C2(2, 2, 2, 0, 1, -1, 1, 1, 3, 0);
    w = ar_eigvalsh(c, err);
    close_to(w, D(1, 4), 2, 1e-12);
    ar_free(w);
    ar_free(c);

    /* complex 4x4: Y (x) I + 2 I (x) Z has eigenvalues -3, -1, 1, 3 */
    Array *y = C2(2, 2, 0, 0, 0, -1, 0, 1, 0, 0), *z = A2(2, 2, 1, 0, 0, -1);
    Array *i2 = ar_eye(2, err);
    Array *k1 = ar_kron(y, i2, err), *k2 = ar_kron(i2, z, err);
    Array *k2s = ar_binop_scalar(AR_MUL, k2, ar_scalar(2), 0, err);
    Array *h = ar_binop(AR_ADD, k1, k2s, err);
    ck_assert(ar_is_complex(h));
    w = ar_eigvalsh(h, err);
    ck_assert_msg(w != NULL, "%s", err);
    close_to(w, D(-3, -1, 1, 3), 4, 1e-12);
    ar_free(w);
    ar_free(h);
    ar_free(k1);
    ar_free(k2);
    ar_free(k2s);
    ar_free(i2);
    ar_free(y);
    ar_free(z);

    /* a bigger random symmetric matrix: eigenvalues sum to the trace */
    Rng r;
    rng_seed(&r, 3);
    Array *g = ar_randn(2, SH(40, 40), &r, err);
    Array *gt = ar_transpose(g, err);
    Array *s = ar_binop(AR_ADD, g, gt, err);
    w = ar_eigvalsh(s, err);
    double tr = 0, sum = 0;
    for (size_t i = 0; i < 40; i++) {
        tr += ar_f64_ro(s)[i * 41];
        sum += ar_f64_ro(w)[i];
        if (i) ck_assert(ar_f64_ro(w)[i] >= ar_f64_ro(w)[i - 1]);
    }
    ck_assert(fabs(tr - sum) < 1e-9);
    ar_free(w);
    ar_free(g);
    ar_free(gt);
    ar_free(s);

    Array *ns = A2(2, 3, 1, 2, 3, 4, 5, 6);
    ck_assert_ptr_null(ar_eigvalsh(ns, err));
    err_is("eigvalsh: expected a square matrix, got shape (2, 3)");
    Array *v = A1(2, 1, 2);
    ck_assert_ptr_null(ar_eigvalsh(v, err));
    err_is("eigvalsh: expected a square matrix, got shape (2,)");
    Array *bad = A2(2, 2, 1, NAN, NAN, 1);
    ck_assert_ptr_null(ar_eigvalsh(bad, err));
    err_is("eigvalsh: array must not contain infs or NaNs"); /* NumPy's LinAlgError */
    Array *e = ar_zeros(AR_F64, 2, SH(0, 0), err);
    fmt_is_free(ar_eigvalsh(e, err), "array([])");
    ar_free(e);
    ar_free(bad);
    ar_free(v);
    ar_free(ns);
}
END_TEST

/* ---- reductions
 * ----------------------------------------------------------------------------------- */

START_TEST(t_reduce)
{
    Array *m = A2(2, 3, 1, 2, 3, 4, 5, 6);
    ArScalar s;
    Array *o;
    ck_assert_int_eq(ar_sum(m, &s, err), 0);
    ck_assert(s.re == 21 && !s.is_complex);
    ar_mean(m, &s, err);
    ck_assert(s.re == 3.5);
    ar_min(m, &s, err);
    ck_assert(s.re == 1);
    ar_max(m, &s, err);
    ck_assert(s.re == 6);
    ck_assert_int_eq(ar_reduce(AR_SUM, m, 0, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([5, 7, 9])");
    ck_assert_int_eq(ar_reduce(AR_SUM, m, 1, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([6, 15])");
    ck_assert_int_eq(ar_reduce(AR_MEAN, m, -1, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([2, 5])");
    ck_assert_int_eq(ar_reduce(AR_MIN, m, 0, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([1, 2, 3])");
    ck_assert_int_eq(ar_reduce(AR_MAX, m, 1, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([3, 6])");
    ck_assert_int_eq(ar_reduce(AR_SUM, m, 2, &o, &s, err), AR_ERR);
    err_is("sum: axis 2 is out of range for a 2-d array");
    /* 3-d along the middle axis */
    Array *x = ar_arange(0, 24, 1, err);
    Array *x3 = ar_reshape(x, 3, (const long[]){ 2, 3, 4 }, err);
    ck_assert_int_eq(ar_reduce(AR_SUM, x3, 1, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([[12, 15, 18, 21], [48, 51, 54, 57]])");
    ck_assert_int_eq(ar_reduce(AR_MAX, x3, 2, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([[3, 7, 11], [15, 19, 23]])");
    ar_free(x);
    ar_free(x3);

    /* 1-d with an axis gives a scalar */
    Array *v = A1(4, 3, -1, 4, 1);
    ck_assert_int_eq(ar_reduce(AR_MIN, v, 0, &o, &s, err), AR_SCALAR);
    ck_assert(s.re == -1);
    ck_assert_int_eq(ar_reduce(AR_SUM, v, AR_AXIS_ALL, &o, &s, err), AR_SCALAR);
    ck_assert(s.re == 7);

    /* complex */
    Array *c = C1(2, 1, 2, 3, -4);
    ar_sum(c, &s, err);
    ck_assert(s.is_complex && s.re == 4 && s.im == -2);
    ar_mean(c, &s, err);
    ck_assert(s.is_complex && s.re == 2 && s.im == -1);
    ck_assert_int_eq(ar_min(c, &s, err), AR_ERR);
    err_is("min is not defined for complex arrays");
    Array *c2 = C2(2, 1, 1, 1, 2, 2);
    ck_assert_int_eq(ar_reduce(AR_SUM, c2, 0, &o, &s, err), AR_ARRAY);
    fmt_is_free(o, "array([(3+3j)])");

    /* empty and NaN */
    Array *e = ar_zeros(AR_F64, 1, SH(0), err);
    ck_assert_int_eq(ar_sum(e, &s, err), 0);
    ck_assert(s.re == 0);
    ck_assert_int_eq(ar_max(e, &s, err), AR_ERR);
    err_is("max of an empty array");
    ck_assert_int_eq(ar_mean(e, &s, err), AR_ERR);
    err_is("mean of an empty array");
    Array *n = A1(3, 1, NAN, 3);
    ar_max(n, &s, err);
    ck_assert(isnan(s.re));
    ar_min(n, &s, err);
    ck_assert(isnan(s.re));

    /* pairwise summation: 1e6 copies of 0.1 */
    Array *big = ar_full(1, SH(1000000), ar_scalar(0.1), err);
    ar_sum(big, &s, err);
    ck_assert(fabs(s.re - 100000) < 1e-7);
    ar_free(big);
    ar_free(n);
    ar_free(e);
    ar_free(c);
    ar_free(c2);
    ar_free(v);
    ar_free(m);
}
END_TEST

/* ---- functions
 * --------------------------------------------------------------------------------------- */

START_TEST(t_map)
{
    Array *a = A1(3, 0, 1, 4);
    fmt_is_free(ar_sqrt(a, err), "array([0, 1, 2])");
    Array *o = ar_exp(a, err);
    close_to(o, D(1, M_E, exp(4)), 3, 1e-12);
    ar_free(o);
    fmt_is_free(ar_map(AR_SIN, TA1(1, 0), err), "array([0])");
    fmt_is_free(ar_map(AR_COS, TA1(1, 0), err), "array([1])");
    o = ar_map(AR_TAN, TA1(1, M_PI / 4), err);
    close_to(o, D(1), 1, 1e-15);
    ar_free(o);
    o = ar_map(AR_ASIN, TA1(2, 1, -1), err);
    close_to(o, D(M_PI / 2, -M_PI / 2), 2, EPS);
    ar_free(o);
    o = ar_map(AR_ACOS, TA1(1, -1), err);
    close_to(o, D(M_PI), 1, EPS);
    ar_free(o);
    o = ar_map(AR_ATAN, TA1(1, 1), err);
    close_to(o, D(M_PI / 4), 1, EPS);
    ar_free(o);
    fmt_is_free(ar_map(AR_LOG, TA1(2, 1, 0), err), "array([0, -inf])");
    fmt_is_free(ar_map(AR_LOG2, TA1(2, 8, 0.5), err), "array([3, -1])");
    fmt_is_free(ar_map(AR_LOG10, TA1(2, 1000, 0.01), err), "array([3, -2])");
    fmt_is_free(ar_abs(TA1(3, -3, 0, 2.5), err), "array([3, 0, 2.5])");
    fmt_is_free(ar_map(AR_FLOOR, TA1(3, -1.5, 1.5, 2), err), "array([-2, 1, 2])");
    fmt_is_free(ar_map(AR_CEIL, TA1(3, -1.5, 1.5, 2), err), "array([-1, 2, 2])");
    fmt_is_free(ar_map(AR_ROUND, TA1(5, 0.5, 1.5, 2.5, -0.5, 2.6), err),
                "array([0, 2, 2, 0, 3])"); /* round(-0.5) is -0, which prints as 0 */
    /* NumPy's rule: -2.675 * 100 rounds to -267.5, then half-to-even */
    fmt_is_free(ar_round(TA1(2, 1.2345, -2.675), 2, err), "array([1.23, -2.68])");
    fmt_is_free(ar_round(TA1(2, 1234, 1250), -2, err), "array([1200, 1200])");
    fmt_is_free(ar_sqrt(TA1(1, -1), err), "array([nan])");
    ck_assert_str_eq(ar_func_name(AR_LOG10), "log10");

    /* complex */
    Array *c = C1(2, -1, 0, 3, 4);
    o = ar_sqrt(c, err);
    cclose_to(o, D(0, 1, 2, 1), 2, EPS);
    ar_free(o);
    fmt_is_free(ar_abs(c, err), "array([1, 5])");
    Array *ipi = C1(1, 0, M_PI);
    o = ar_exp(ipi, err);
    cclose_to(o, D(-1, 0), 1, 1e-15);
    ar_free(o);
    o = ar_map(AR_LOG, c, err);
    cclose_to(o, D(0, M_PI, log(5), atan2(4, 3)), 2, EPS);
    ar_free(o);
    o = ar_map(AR_LOG2, TC1(1, 0, 2), err);
    cclose_to(o, D(1, M_PI / 2 / M_LN2), 1, EPS);
    ar_free(o);
    o = ar_map(AR_SIN, TC1(1, 0, 1), err);
    cclose_to(o, D(0, sinh(1)), 1, EPS);
    ar_free(o);
    ck_assert_ptr_null(ar_map(AR_FLOOR, c, err));
    err_is("floor is not defined for complex arrays");
    ck_assert_ptr_null(ar_round(c, 1, err));
    err_is("round is not defined for complex arrays");

    fmt_is_free(ar_real(c, err), "array([-1, 3])");
    fmt_is_free(ar_imag(c, err), "array([0, 4])");
    fmt_is_free(ar_conj(c, err), "array([(-1-0j), (3-4j)])");
    fmt_is_free(ar_real(a, err), "array([0, 1, 4])");
    fmt_is_free(ar_imag(a, err), "array([0, 0, 0])");
    fmt_is_free(ar_conj(a, err), "array([0, 1, 4])");
    ar_free(ipi);
    ar_free(c);
    ar_free(a);
}
END_TEST

START_TEST(t_convert_equal)
{
    Array *a = A1(2, 1, 2);
    Array *c = ar_to_complex(a, err);
    fmt_is(c, "array([(1+0j), (2+0j)])");
    ck_assert(ar_equal(a, c));
    Array *back = ar_astype(c, AR_F64, err);
    fmt_is_free(back, "array([1, 2])");
    Array *c2 = C1(1, 1, 1);
    ck_assert_ptr_null(ar_astype(c2, AR_F64, err));
    err_is("cannot convert a complex array with non-zero imaginary parts to float "
           "(use real())");
    Array *same = ar_astype(a, AR_F64, err);
    ck_assert_uint_eq(ar_refcount(a), 2);
    ar_free(same);

    Array *b = A1(2, 1, 3), *r = A2(1, 2, 1, 2), *n = A1(1, NAN);
    ck_assert(!ar_equal(a, b));
    ck_assert(!ar_equal(a, r)); /* same values, other shape */
    ck_assert(!ar_equal(n, n)); /* nan != nan */
    ck_assert(ar_contains(a, ar_scalar(2)));
    ck_assert(!ar_contains(a, ar_scalar(3)));
    ck_assert(!ar_contains(a, ar_cscalar(2, 1)));
    ck_assert(ar_contains(a, ar_cscalar(2, 0)));
    ck_assert(ar_contains(c2, ar_cscalar(1, 1)));
    ck_assert(!ar_contains(c2, ar_scalar(1)));
    ar_free(b);
    ar_free(r);
    ar_free(n);
    ar_free(c2);
    ar_free(c);
    ar_free(a);
}
END_TEST

/* ---- printing
 * ------------------------------------------------------------------------------------------- */

START_TEST(t_format)
{
    fmt_is_free(A1(3, 1, 2.5, 3), "array([1, 2.5, 3])");
    fmt_is_free(A2(2, 2, 1, 2, 3, 4), "array([[1, 2], [3, 4]])");
    fmt_is_free(A1(4, 0.1, 1e-5, 1.2345678901234567e20, -0.0),
                "array([0.1, 1e-05, 1.2345678901234567e+20, 0])"); /* -0 prints as 0 */
    fmt_is_free(A1(3, NAN, INFINITY, -INFINITY), "array([nan, inf, -inf])");
    fmt_is_free(A1(2, 1e15, 123456789012345), "array([1000000000000000.0, 123456789012345])");
    fmt_is_free(C1(3, 1, 2, 0, 1, 0.5, -1), "array([(1+2j), 1j, (0.5-1j)])");
    fmt_is_free(C1(2, NAN, INFINITY, 0, -INFINITY), "array([(nan+infj), -infj])");
    /* large arrays print in full */
    Array *big = ar_arange(0, 2000, 1, err);
    char *s = ar_format(big);
    ck_assert_ptr_nonnull(strstr(s, ", 1999])"));
    ck_assert_ptr_nonnull(strstr(s, "1000, 1001"));
    free(s);
    ar_free(big);
}
END_TEST

START_TEST(t_blas_threads)
{
    int n0 = ar_blas_threads();
    ck_assert_int_ge(n0, 1);
    ar_set_blas_threads(1);
    ck_assert_int_eq(ar_blas_threads(), 1);
    ar_set_blas_threads(n0);
    ck_assert_int_eq(ar_blas_threads(), n0);
}
END_TEST

/* OpenBLAS is loaded at its first use (src/util/qblas.h), not at start-up:
 * element-wise work leaves it unloaded, a product loads it, and a thread
 * count asked for before the load is the library's once it is loaded. */
START_TEST(t_blas_lazy)
{
    const char *fork = getenv("CK_FORK");
    if (fork && strcmp(fork, "no") == 0) return; /* earlier tests in this process loaded it */
    ck_assert_int_eq(qblas_loaded(), 0);
    char err[AR_ERRLEN];
    size_t shape[2] = { 2, 2 };
    Array *a = ar_new(AR_F64, 2, shape, err);
    ck_assert_ptr_nonnull(a);
    double *p = ar_f64(a);
    p[0] = 1;
    p[1] = 2;
    p[2] = 3;
    p[3] = 4;
    Array *s = ar_binop(AR_ADD, a, a, err);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(qblas_loaded(), 0);
    ar_set_blas_threads(1);
    ck_assert_int_eq(qblas_loaded(), 0);
    Array *m = NULL;
    ArScalar sc;
    ck_assert_int_eq(ar_matmul(a, s, &m, &sc, err), AR_ARRAY);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(qblas_loaded(), 1);
    ck_assert(ar_f64(m)[0] == 14 && ar_f64(m)[1] == 20 && ar_f64(m)[2] == 30 && ar_f64(m)[3] == 44);
    ck_assert_int_eq(ar_blas_threads(), 1);
    ar_free(a);
    ar_free(s);
    ar_free(m);
}
END_TEST

/* ---- threads and the buffer cache ---------------------------------------------- */

typedef struct {
    Array *mine; /* a copy handed over to the thread, which owns it */
    double want;
    int ok;
} Job;

/* Why: a background reader must see its snapshot unchanged while the owner
 * writes, and concurrent copies/frees must keep the count right. */
static void *reader(void *p)
{
    Job *j = p;
    for (int k = 0; k < 50; k++) {
        ArScalar s;
        if (ar_sum(j->mine, &s, NULL) || s.re != j->want) j->ok = 0;
        Array *c = ar_copy(j->mine, NULL);
        ar_free(c);
    }
    ar_free(j->mine); /* may be the last reference: freed/parked here */
    return NULL;
}

START_TEST(t_threads_cow)
{
    size_t n = (size_t)1 << 18; /* 2 MiB: goes through the cache */
    for (int round = 0; round < 10; round++) {
        Array *a = ar_full(1, &n, ar_scalar(1), err);
        Job jobs[4];
        pthread_t th[4];
        for (int i = 0; i < 4; i++) {
            jobs[i].mine = ar_copy(a, err);
            jobs[i].want = (double)n;
            jobs[i].ok = 1;
            ck_assert_int_eq(pthread_create(&th[i], NULL, reader, &jobs[i]), 0);
        }
        for (long k = 0; k < 50; k++) ck_assert_int_eq(ar_set(a, &k, 1, ar_scalar(2), err), 0);
        for (int i = 0; i < 4; i++) {
            pthread_join(th[i], NULL);
            ck_assert(jobs[i].ok);
        }
        ArScalar s;
        ar_sum(a, &s, err);
        ck_assert(s.re == (double)n + 50);
        ck_assert_uint_eq(ar_refcount(a), 1);
        ar_free(a);
    }
    ar_cache_trim();
}
END_TEST

START_TEST(t_cache)
{
    size_t n = (size_t)1 << 18;
    Array *a = ar_full(1, &n, ar_scalar(7), err);
    const double *p = ar_f64_ro(a);
    ar_free(a);
    Array *b = ar_new(AR_F64, 1, &n, err); /* reuses the warm block */
    ck_assert_ptr_eq(ar_f64_ro(b), p);
    ArScalar s;
    ar_max(b, &s, err);
    ck_assert(s.re == 0); /* and zeroes it */
    ar_free(b);
    size_t q = n / 4; /* too small to take it */
    Array *c = ar_new(AR_F64, 1, &q, err);
    ck_assert_ptr_ne(ar_f64_ro(c), p);
    ar_free(c);
    ar_cache_trim();
}
END_TEST

/* ---- allocation failures: every step may fail, none may crash or leak ---- */

static int run_ops(void)
{
    int fails = 0;
    Array *a = NULL, *b = NULL, *c = NULL, *o = NULL;
    ArScalar s;
    a = ar_from_data(AR_F64, 2, SH(2, 2), D(2, 1, 1, 2), err);
    b = ar_from_data(AR_C128, 1, SH(2), D(1, 1, 2, 0), err);
    if (!a || !b) {
        fails++;
        goto out;
    }
    c = ar_binop(AR_ADD, a, b, err);
    if (!c) fails++;
    ar_free(c);
    c = ar_binop_scalar(AR_MUL, a, ar_scalar(2), 1, err);
    if (!c) fails++;
    ar_free(c);
    if (ar_matmul(a, b, &o, &s, err) == AR_ERR)
        fails++;
    else
        ar_free(o);
    c = ar_kron(a, b, err);
    if (!c) fails++;
    ar_free(c);
    c = ar_eigvalsh(a, err);
    if (!c) fails++;
    ar_free(c);
    c = ar_transpose(a, err);
    if (!c) fails++;
    ar_free(c);
    c = ar_copy(a, err);
    if (!c)
        fails++;
    else {
        if (ar_set(c, (const long[]){ 0, 0 }, 2, ar_cscalar(1, 1), err)) fails++;
        ArIndex ix = ar_ix(1);
        if (ar_assign_array(c, &ix, 1, b, err)) fails++;
        ar_free(c);
    }
    if (ar_reduce(AR_SUM, a, 0, &o, &s, err) == AR_ERR)
        fails++;
    else
        ar_free(o);
    if (ar_get(a, (const long[]){ 1 }, 1, &s, &o, err) == AR_ERR)
        fails++;
    else
        ar_free(o);
    c = ar_map(AR_SIN, b, err);
    if (!c) fails++;
    ar_free(c);
out:
    ar_free(a);
    ar_free(b);
    return fails;
}

START_TEST(t_alloc_failures)
{
    ck_assert_int_eq(run_ops(), 0);
    for (long k = 0; k < 60; k++) {
        err[0] = 0;
        ar_test_fail_alloc(k);
        int f = run_ops();
        ar_test_fail_alloc(-1);
        if (f) ck_assert_msg(err[0] != 0, "failure %ld left no message", k);
    }
    ar_test_fail_alloc(0);
    ck_assert_ptr_null(ar_new(AR_F64, 1, SH(3), err));
    err_is("out of memory allocating an array header");
    ar_test_fail_alloc(1);
    ck_assert_ptr_null(ar_new(AR_F64, 1, SH(3), err));
    err_is("out of memory allocating an array of 24 bytes");
    ar_test_fail_alloc(-1);
}
END_TEST

static Suite *array_suite(void)
{
    Suite *s = suite_create("array");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, NULL, pool_free);
    tcase_add_test(tc, t_new_and_shape);
    tcase_add_test(tc, t_new_errors);
    tcase_add_test(tc, t_linspace_arange);
    tcase_add_test(tc, t_random);
    tcase_add_test(tc, t_cow);
    tcase_add_test(tc, t_get);
    tcase_add_test(tc, t_slices);
    tcase_add_test(tc, t_assign);
    tcase_add_test(tc, t_reshape_transpose);
    tcase_add_test(tc, t_binop_same_shape);
    tcase_add_test(tc, t_binop_scalar);
    tcase_add_test(tc, t_broadcast);
    tcase_add_test(tc, t_complex_arith);
    tcase_add_test(tc, t_compare);
    tcase_add_test(tc, t_matmul);
    tcase_add_test(tc, t_matmul_complex);
    tcase_add_test(tc, t_matmul_big);
    tcase_add_test(tc, t_kron);
    tcase_add_test(tc, t_norm);
    tcase_add_test(tc, t_eigvalsh);
    tcase_add_test(tc, t_reduce);
    tcase_add_test(tc, t_map);
    tcase_add_test(tc, t_convert_equal);
    tcase_add_test(tc, t_format);
    tcase_add_test(tc, t_blas_threads);
    tcase_add_test(tc, t_blas_lazy);
    tcase_add_test(tc, t_alloc_failures);
    tcase_add_test(tc, t_threads_cow);
    tcase_add_test(tc, t_cache);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(array_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
