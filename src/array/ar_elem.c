/* ar_elem.c — elementwise work on arrays: binary operators and comparisons
 * with NumPy broadcasting, unary minus, the math functions (sin ... round),
 * real/imag/conj, reductions (sum mean min max, whole or along an axis) and
 * the equality / containment helpers the interpreter needs for == and `in`.
 *
 * Layering: the public entry points validate (shapes, dtypes) and name the
 * operation in their errors, then dispatch to small typed kernels. Must not
 * know about interpreter values, the executor or quantum. */
#include "ar_internal.h"

#include <math.h>
#include <string.h>

/* ---- broadcasting ------------------------------------------------------------ */

/* Why: NumPy's rule — align shapes on the right; sizes must match or be 1. */
int ar__bcast_shape(int na, const size_t *sa, int nb, const size_t *sb, int *nout, size_t *out)
{
    int n = na > nb ? na : nb;
    qh_assert(na >= 0 && nb >= 0 && n <= AR_MAXDIM);
    for (int i = 0; i < n; i++) {
        size_t x = i < na ? sa[na - 1 - i] : 1, y = i < nb ? sb[nb - 1 - i] : 1;
        if (x == y || y == 1)
            out[n - 1 - i] = x;
        else if (x == 1)
            out[n - 1 - i] = y;
        else
            return -1;
    }
    *nout = n;
    return 0;
}

/* Why: broadcasting is reading with stride 0 along stretched axes. */
void ar__bcast_strides(int n, const size_t *s, int nout, const size_t *out, ptrdiff_t *st)
{
    qh_assert(n <= nout && nout <= AR_MAXDIM);
    ptrdiff_t acc = 1;
    for (int i = nout - 1; i >= 0; i--) {
        int j = i - (nout - n);
        if (j < 0) {
            st[i] = 0;
        } else {
            /* an operand's axis is the result's or stretched from 1 */
            qh_assert(s[j] == out[i] || s[j] == 1);
            st[i] = s[j] == 1 ? 0 : acc;
            acc *= (ptrdiff_t)s[j];
        }
    }
    (void)out;
}

/* ---- binary kernels --------------------------------------------------------------- */

typedef void (*Kernel)(void *o, const void *a, ptrdiff_t sa, const void *b, ptrdiff_t sb, size_t n);

/* One kernel per (operator, dtype): x and y are the operands in EXPR; the
 * stride cases let the compiler vectorise the contiguous and scalar ones. */
#define KERNEL(name, TI, TO, EXPR)                                                         \
    static void name(void *o_, const void *a_, ptrdiff_t sa, const void *b_, ptrdiff_t sb, \
                     size_t n)                                                             \
    {                                                                                      \
        TO *restrict o = o_;                                                               \
        const TI *restrict a = a_, *restrict b = b_;                                       \
        if (sa == 1 && sb == 1) {                                                          \
            for (size_t i = 0; i < n; i++) {                                               \
                TI x = a[i], y = b[i];                                                     \
                o[i] = (EXPR);                                                             \
            }                                                                              \
        } else if (sa == 1 && sb == 0) {                                                   \
            TI y = b[0];                                                                   \
            for (size_t i = 0; i < n; i++) {                                               \
                TI x = a[i];                                                               \
                o[i] = (EXPR);                                                             \
            }                                                                              \
        } else if (sa == 0 && sb == 1) {                                                   \
            TI x = a[0];                                                                   \
            for (size_t i = 0; i < n; i++) {                                               \
                TI y = b[i];                                                               \
                o[i] = (EXPR);                                                             \
            }                                                                              \
        } else {                                                                           \
            for (size_t i = 0; i < n; i++) {                                               \
                TI x = a[(ptrdiff_t)i * sa], y = b[(ptrdiff_t)i * sb];                     \
                o[i] = (EXPR);                                                             \
            }                                                                              \
        }                                                                                  \
    }

typedef double _Complex cplx;

/* NumPy's (and the textbook) product: no C99 Annex G NaN recovery, so it
 * vectorises; inf*finite cases differ from __muldc3 only in NaN signs. */
static inline cplx cmul(cplx x, cplx y)
{
    return ar__cx(creal(x) * creal(y) - cimag(x) * cimag(y),
                  creal(x) * cimag(y) + cimag(x) * creal(y));
}

/* Why: complex powers with small integer exponents must be exact ((1j)**2 is
 * -1, not -1+1.2e-16j), so they use repeated squaring as NumPy does. */
static cplx cpow_q(cplx x, cplx y)
{
    if (cimag(y) == 0) {
        double e = creal(y);
        if (e == floor(e) && fabs(e) < 100) {
            long m = (long)fabs(e);
            cplx r = 1, base = x;
            while (m) {
                if (m & 1) r = cmul(r, base);
                base = cmul(base, base);
                m >>= 1;
            }
            return e < 0 ? 1.0 / r : r;
        }
    }
    if (creal(x) == 0 && cimag(x) == 0) {
        if (creal(y) > 0 && cimag(y) == 0) return 0;
    }
    return cpow(x, y);
}

KERNEL(k_add_ff, double, double, x + y)
KERNEL(k_sub_ff, double, double, x - y)
KERNEL(k_mul_ff, double, double, (x) * (y))
KERNEL(k_div_ff, double, double, x / y)
KERNEL(k_pow_ff, double, double, pow(x, y))
KERNEL(k_eq_ff, double, double, (double)(x == y))
KERNEL(k_ne_ff, double, double, (double)(x != y))
KERNEL(k_lt_ff, double, double, (double)(x < y))
KERNEL(k_le_ff, double, double, (double)(x <= y))
KERNEL(k_gt_ff, double, double, (double)(x > y))
KERNEL(k_ge_ff, double, double, (double)(x >= y))
KERNEL(k_atan2_ff, double, double, atan2(x, y))

KERNEL(k_add_cc, cplx, cplx, x + y)
KERNEL(k_sub_cc, cplx, cplx, x - y)
KERNEL(k_mul_cc, cplx, cplx, cmul(x, y))
KERNEL(k_div_cc, cplx, cplx, x / y)
KERNEL(k_pow_cc, cplx, cplx, cpow_q(x, y))
KERNEL(k_eq_cc, cplx, double, (double)(creal(x) == creal(y) && cimag(x) == cimag(y)))
KERNEL(k_ne_cc, cplx, double, (double)(creal(x) != creal(y) || cimag(x) != cimag(y)))

static const Kernel kern_ff[AR_NOPS] = {
    k_add_ff, k_sub_ff, k_mul_ff, k_div_ff, k_pow_ff, k_eq_ff,
    k_ne_ff,  k_lt_ff,  k_le_ff,  k_gt_ff,  k_ge_ff,  k_atan2_ff,
};
static const Kernel kern_cc[AR_NOPS] = {
    k_add_cc, k_sub_cc, k_mul_cc, k_div_cc, k_pow_cc, k_eq_cc,
    k_ne_cc,  NULL,     NULL,     NULL,     NULL,     NULL,
};

static const char *const op_names[AR_NOPS] = {
    "+", "-", "*", "/", "**", "==", "!=", "<", "<=", ">", ">=", "atan2",
};

/* Why: the interpreter names the operator in its own messages. */
const char *ar_op_name(ArOp op) { return (unsigned)op < AR_NOPS ? op_names[op] : "?"; }

/* Why: comparisons always produce float 0/1 arrays. */
static int is_cmp(ArOp op) { return op >= AR_EQ && op <= AR_GE; }

/* Why: the validated, same-dtype core of every binary operation: broadcast
 * shape, one output allocation, kernel over innermost runs. */
static Array *binop_typed(ArOp op, const Array *a, const Array *b, int nout, const size_t *oshape,
                          char *err)
{
    ArType ot = is_cmp(op) ? AR_F64 : a->type;
    Kernel k = a->type == AR_C128 ? kern_cc[op] : kern_ff[op];
    Array *r = ar__alloc(ot, nout, oshape, err);
    if (!r || r->size == 0) return r;
    size_t ie = ar__esize(a->type), oe = ar__esize(ot);
    const char *pa = ar__data(a), *pb = ar__data(b);
    char *po = ar__data(r);
    if (a->size == r->size && b->size == r->size) { /* same shapes */
        k(po, pa, 1, pb, 1, r->size);
        return r;
    }
    if (a->size == 1 && b->size == r->size) {
        k(po, pa, 0, pb, 1, r->size);
        return r;
    }
    if (b->size == 1 && a->size == r->size) {
        k(po, pa, 1, pb, 0, r->size);
        return r;
    }
    ptrdiff_t sa[AR_MAXDIM], sb[AR_MAXDIM];
    ar__bcast_strides(a->ndim, a->shape, nout, oshape, sa);
    ar__bcast_strides(b->ndim, b->shape, nout, oshape, sb);
    size_t idx[AR_MAXDIM] = { 0 }, inner = oshape[nout - 1];
    ptrdiff_t oa = 0, ob = 0;
    for (;;) {
        /* each run reads inside both operands and writes inside the result */
        qh_assert(oa >= 0 && (size_t)oa < a->size && ob >= 0 && (size_t)ob < b->size);
        qh_assert(po + inner * oe <= (char *)ar__data(r) + r->size * oe);
        k(po, pa + oa * (ptrdiff_t)ie, sa[nout - 1], pb + ob * (ptrdiff_t)ie, sb[nout - 1], inner);
        po += inner * oe;
        int d = nout - 2;
        for (; d >= 0; d--) {
            oa += sa[d];
            ob += sb[d];
            if (++idx[d] < oshape[d]) break;
            oa -= sa[d] * (ptrdiff_t)oshape[d];
            ob -= sb[d] * (ptrdiff_t)oshape[d];
            idx[d] = 0;
        }
        if (d < 0) break;
    }
    qh_assert(oa == 0 && ob == 0 && po == (char *)ar__data(r) + r->size * oe); /* all written */
    return r;
}

/* Why: a op b for the interpreter's + - * / ** == != < <= > >= on arrays:
 * validates, promotes float to complex when the other side is complex. */
Array *ar_binop(ArOp op, const Array *a, const Array *b, char *err)
{
    if ((unsigned)op >= AR_NOPS) {
        ar__err(err, "unknown array operator %d", (int)op);
        return NULL;
    }
    int cx = a->type == AR_C128 || b->type == AR_C128;
    if (cx && !kern_cc[op]) {
        if (op == AR_ATAN2)
            ar__err(err, "atan2 is not defined for complex arrays");
        else
            ar__err(err, "ordering comparison '%s' is not defined for complex arrays",
                    op_names[op]);
        return NULL;
    }
    int nout;
    size_t oshape[AR_MAXDIM];
    if (ar__bcast_shape(a->ndim, a->shape, b->ndim, b->shape, &nout, oshape)) {
        char sa[160], sb[160];
        ar__shape_fmt(sa, sizeof sa, a->ndim, a->shape);
        ar__shape_fmt(sb, sizeof sb, b->ndim, b->shape);
        if (op == AR_ATAN2)
            ar__err(err, "shape mismatch: atan2(%s, %s)", sa, sb);
        else
            ar__err(err, "shape mismatch: %s %s %s", sa, op_names[op], sb);
        return NULL;
    }
    if (!cx || (a->type == b->type)) {
        Array *r = binop_typed(op, a, b, nout, oshape, err);
        if (r && is_cmp(op)) r->mask = 1;
        return r;
    }
    Array *ca = a->type == AR_C128 ? NULL : ar_to_complex(a, err);
    Array *cb = b->type == AR_C128 ? NULL : ar_to_complex(b, err);
    Array *r = NULL;
    if ((a->type == AR_C128 || ca) && (b->type == AR_C128 || cb))
        r = binop_typed(op, ca ? ca : a, cb ? cb : b, nout, oshape, err);
    if (r && is_cmp(op)) r->mask = 1;
    ar_free(ca);
    ar_free(cb);
    return r;
}

/* Why: array op number and number op array without building an array from
 * the number in the interpreter; the scalar broadcasts with stride 0. */
Array *ar_binop_scalar(ArOp op, const Array *a, ArScalar s, int scalar_left, char *err)
{
    size_t one = 1;
    Array *sa;
    if (s.is_complex) {
        double _Complex z = ar__cx(s.re, s.im);
        sa = ar_from_data(AR_C128, 1, &one, &z, err);
    } else {
        sa = ar_from_data(AR_F64, 1, &one, &s.re, err);
    }
    if (!sa) return NULL;
    /* a (1,)-shaped operand never changes a's shape under broadcasting */
    Array *r = scalar_left ? ar_binop(op, sa, a, err) : ar_binop(op, a, sa, err);
    ar_free(sa);
    return r;
}

/* Why: unary minus. */
Array *ar_neg(const Array *a, char *err)
{
    Array *r = ar__alloc(a->type, a->ndim, a->shape, err);
    if (!r) return NULL;
    if (a->type == AR_F64) {
        const double *s = ar__data(a);
        double *d = ar__data(r);
        for (size_t i = 0; i < a->size; i++) d[i] = -s[i];
    } else {
        const cplx *s = ar__data(a);
        cplx *d = ar__data(r);
        for (size_t i = 0; i < a->size; i++) d[i] = -s[i];
    }
    return r;
}

/* ---- elementwise functions -------------------------------------------------------- */

/* Why: round() is half-to-even (Python's and NumPy's), which nearbyint is
 * in the default rounding mode; complex log2/log10 scale clog. */
static double f_round(double x) { return nearbyint(x); }

static cplx c_log2(cplx z)
{
    cplx l = clog(z);
    return ar__cx(creal(l) / M_LN2, cimag(l) / M_LN2);
}

static cplx c_log10(cplx z)
{
    cplx l = clog(z);
    return ar__cx(creal(l) / M_LN10, cimag(l) / M_LN10);
}

static const char *const func_names[AR_NFUNCS] = {
    "sin",  "cos",   "tan",  "asin", "acos",  "atan", "exp",   "log",
    "log2", "log10", "sqrt", "abs",  "floor", "ceil", "round",
};
static double (*const ffun[AR_NFUNCS])(double) = {
    sin, cos, tan, asin, acos, atan, exp, log, log2, log10, sqrt, fabs, floor, ceil, f_round,
};
static cplx (*const cfun[AR_NFUNCS])(cplx) = {
    csin,   ccos,    ctan,  casin, cacos, catan, cexp, clog,
    c_log2, c_log10, csqrt, NULL,  NULL,  NULL,  NULL,
};

/* Why: for the interpreter's messages. */
const char *ar_func_name(ArFunc f) { return (unsigned)f < AR_NFUNCS ? func_names[f] : "?"; }

/* Why: the language's math builtins applied elementwise (§6, §7). */
Array *ar_map(ArFunc f, const Array *a, char *err)
{
    if ((unsigned)f >= AR_NFUNCS) {
        ar__err(err, "unknown array function %d", (int)f);
        return NULL;
    }
    if (a->type == AR_F64) {
        Array *r = ar__alloc(AR_F64, a->ndim, a->shape, err);
        if (!r) return NULL;
        const double *s = ar__data(a);
        double *d = ar__data(r);
        double (*fn)(double) = ffun[f];
        for (size_t i = 0; i < a->size; i++) d[i] = fn(s[i]);
        return r;
    }
    const cplx *s = ar__data(a);
    if (f == AR_ABS) {
        Array *r = ar__alloc(AR_F64, a->ndim, a->shape, err);
        if (!r) return NULL;
        double *d = ar__data(r);
        for (size_t i = 0; i < a->size; i++) d[i] = cabs(s[i]);
        return r;
    }
    if (!cfun[f]) {
        ar__err(err, "%s is not defined for complex arrays", func_names[f]);
        return NULL;
    }
    Array *r = ar__alloc(AR_C128, a->ndim, a->shape, err);
    if (!r) return NULL;
    cplx *d = ar__data(r);
    cplx (*fn)(cplx) = cfun[f];
    for (size_t i = 0; i < a->size; i++) d[i] = fn(s[i]);
    return r;
}

/* Why: the three maps named in §7 get their own entry points. */
Array *ar_abs(const Array *a, char *err) { return ar_map(AR_ABS, a, err); }
Array *ar_sqrt(const Array *a, char *err) { return ar_map(AR_SQRT, a, err); }
Array *ar_exp(const Array *a, char *err) { return ar_map(AR_EXP, a, err); }

/* Why: round(x, digits) on arrays, NumPy's rule (half to even on the scaled
 * value). */
Array *ar_round(const Array *a, int digits, char *err)
{
    if (a->type == AR_C128) {
        ar__err(err, "round is not defined for complex arrays");
        return NULL;
    }
    if (digits == 0) return ar_map(AR_ROUND, a, err);
    Array *r = ar__alloc(AR_F64, a->ndim, a->shape, err);
    if (!r) return NULL;
    const double *s = ar__data(a);
    double *d = ar__data(r);
    double f = pow(10.0, digits < 0 ? -digits : digits);
    for (size_t i = 0; i < a->size; i++)
        d[i] = digits > 0 ? nearbyint(s[i] * f) / f : nearbyint(s[i] / f) * f;
    return r;
}

/* Why: real() of a float array is the array itself: share, O(1). */
Array *ar_real(const Array *a, char *err)
{
    if (a->type == AR_F64) return ar_copy(a, err);
    Array *r = ar__alloc(AR_F64, a->ndim, a->shape, err);
    if (!r) return NULL;
    const cplx *s = ar__data(a);
    double *d = ar__data(r);
    for (size_t i = 0; i < a->size; i++) d[i] = creal(s[i]);
    return r;
}

/* Why: imag() of a float array is all zeros (NumPy's rule). */
Array *ar_imag(const Array *a, char *err)
{
    if (a->type == AR_F64) return ar_new(AR_F64, a->ndim, a->shape, err);
    Array *r = ar__alloc(AR_F64, a->ndim, a->shape, err);
    if (!r) return NULL;
    const cplx *s = ar__data(a);
    double *d = ar__data(r);
    for (size_t i = 0; i < a->size; i++) d[i] = cimag(s[i]);
    return r;
}

/* Why: conj() of a float array is the array itself: share, O(1). */
Array *ar_conj(const Array *a, char *err)
{
    if (a->type == AR_F64) return ar_copy(a, err);
    Array *r = ar__alloc(AR_C128, a->ndim, a->shape, err);
    if (!r) return NULL;
    const cplx *s = ar__data(a);
    cplx *d = ar__data(r);
    for (size_t i = 0; i < a->size; i++) d[i] = conj(s[i]);
    return r;
}

/* ---- reductions ------------------------------------------------------------------- */

/* Why: NumPy's pairwise summation, exactly (its pairwise_sum loops): fewer
 * than 8 elements in order; up to 128 in eight running sums combined as
 * ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)) plus the rest in
 * order; beyond, two halves split at a multiple of 8. So sum() and mean()
 * give NumPy's last bits, with O(log n) rounding error. */
static double psum_f(const double *x, size_t n)
{
    if (n < 8) {
        double s = 0.;
        for (size_t i = 0; i < n; i++) s += x[i];
        return s;
    }
    if (n <= 128) {
        double r[8];
        for (int j = 0; j < 8; j++) r[j] = x[j];
        size_t i = 8;
        for (; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += x[i + (size_t)j];
        double s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) s += x[i];
        return s;
    }
    size_t h = n / 2;
    h -= h % 8;
    return psum_f(x, h) + psum_f(x + h, n - h);
}

/* Why: NumPy's pairwise summation of complex elements (its loop runs over
 * the interleaved doubles: four running complex sums). */
static void psum_c2(const double *x, size_t n, double *re, double *im)
{
    if (n < 8) {
        *re = 0.;
        *im = 0.;
        for (size_t i = 0; i < n; i += 2) {
            *re += x[i];
            *im += x[i + 1];
        }
        return;
    }
    if (n <= 128) {
        double r[8];
        for (int j = 0; j < 8; j++) r[j] = x[j];
        size_t i = 8;
        for (; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += x[i + (size_t)j];
        *re = ((r[0] + r[2]) + (r[4] + r[6]));
        *im = ((r[1] + r[3]) + (r[5] + r[7]));
        for (; i < n; i += 2) {
            *re += x[i];
            *im += x[i + 1];
        }
        return;
    }
    size_t h = n / 2;
    h -= h % 8;
    double r1, i1, r2, i2;
    psum_c2(x, h, &r1, &i1);
    psum_c2(x + h, n - h, &r2, &i2);
    *re = r1 + r2;
    *im = i1 + i2;
}

/* Why: NumPy's reduction hands its inner loop at most 8192 elements at a
 * time (the iterator's buffer size) and adds each block's pairwise sum to
 * the running total: the same here, so long sums agree to the last bit. */
#define NP_BUFSIZE 8192

static double sum_f(const double *x, size_t n)
{
    if (n <= NP_BUFSIZE) return psum_f(x, n);
    double s = 0.;
    for (size_t i = 0; i < n; i += NP_BUFSIZE)
        s += psum_f(x + i, n - i < NP_BUFSIZE ? n - i : NP_BUFSIZE);
    return s;
}

static cplx psum_c(const cplx *x, size_t n)
{
    double re = 0., im = 0.;
    for (size_t i = 0; i < n || i == 0; i += NP_BUFSIZE) {
        size_t m = n - i < NP_BUFSIZE ? n - i : NP_BUFSIZE;
        double r, q;
        psum_c2((const double *)(x + i), 2 * m, &r, &q);
        if (n <= NP_BUFSIZE) return ar__cx(r, q);
        re += r;
        im += q;
    }
    return ar__cx(re, im);
}

static const char *const red_names[] = { "sum", "mean", "min", "max" };

/* Why: min/max of n values at stride st; NaN wins as in NumPy. */
static double minmax(const double *x, size_t n, ptrdiff_t st, int want_max)
{
    double m = x[0];
    if (isnan(m)) return m;
    for (size_t i = 1; i < n; i++) {
        double v = x[(ptrdiff_t)i * st];
        if (isnan(v)) return v;
        if (want_max ? v > m : v < m) m = v;
    }
    return m;
}

/* Why: a whole-array reduction to one number. */
static int reduce_all(ArReduce r, const Array *a, ArScalar *s, char *err)
{
    if (a->type == AR_F64) {
        const double *x = ar__data(a);
        if (r == AR_SUM || r == AR_MEAN) {
            double v = sum_f(x, a->size);
            *s = ar_scalar(r == AR_MEAN ? v / (double)a->size : v);
        } else {
            *s = ar_scalar(minmax(x, a->size, 1, r == AR_MAX));
        }
    } else {
        cplx v = psum_c(ar__data(a), a->size);
        if (r == AR_MEAN) v = ar__cx(creal(v) / (double)a->size, cimag(v) / (double)a->size);
        *s = ar_cscalar(creal(v), cimag(v));
    }
    (void)err;
    return AR_SCALAR;
}

/* Why: reduction along one axis: outer x n x inner blocks, accumulating
 * whole inner rows so memory is read in order. */
static Array *reduce_axis(ArReduce r, const Array *a, int axis, char *err)
{
    size_t outer = 1, inner = 1, n = a->shape[axis], sh[AR_MAXDIM];
    int nd = 0;
    for (int d = 0; d < a->ndim; d++) {
        if (d < axis) outer *= a->shape[d];
        if (d > axis) inner *= a->shape[d];
        if (d != axis) sh[nd++] = a->shape[d];
    }
    Array *res = ar__alloc(a->type, nd, sh, err);
    if (!res) return NULL;
    if (a->type == AR_F64) {
        const double *x = ar__data(a);
        double *o = ar__data(res);
        for (size_t p = 0; p < outer; p++) {
            double *op = o + p * inner;
            const double *xp = x + p * n * inner;
            if (r == AR_MIN || r == AR_MAX) {
                for (size_t i = 0; i < inner; i++)
                    op[i] = minmax(xp + i, n, (ptrdiff_t)inner, r == AR_MAX);
                continue;
            }
            if (inner == 1) { /* along the last axis: pairwise, as NumPy */
                op[0] = sum_f(xp, n);
            } else { /* along an outer axis: row by row, as NumPy */
                for (size_t i = 0; i < inner; i++) op[i] = 0;
                for (size_t k = 0; k < n; k++)
                    for (size_t i = 0; i < inner; i++) op[i] += xp[k * inner + i];
            }
            if (r == AR_MEAN)
                for (size_t i = 0; i < inner; i++) op[i] /= (double)n;
        }
    } else {
        const cplx *x = ar__data(a);
        cplx *o = ar__data(res);
        for (size_t p = 0; p < outer; p++) {
            cplx *op = o + p * inner;
            const cplx *xp = x + p * n * inner;
            if (inner == 1) {
                op[0] = psum_c(xp, n);
            } else {
                for (size_t i = 0; i < inner; i++) op[i] = 0;
                for (size_t k = 0; k < n; k++)
                    for (size_t i = 0; i < inner; i++) op[i] += xp[k * inner + i];
            }
            if (r == AR_MEAN)
                for (size_t i = 0; i < inner; i++)
                    op[i] = ar__cx(creal(op[i]) / (double)n, cimag(op[i]) / (double)n);
        }
    }
    return res;
}

/* Why: sum/mean/min/max for the interpreter, whole or along an axis. */
int ar_reduce(ArReduce r, const Array *a, int axis, Array **out, ArScalar *s, char *err)
{
    if ((unsigned)r > AR_MAX) return ar__err(err, "unknown reduction %d", (int)r);
    const char *name = red_names[r];
    if ((r == AR_MIN || r == AR_MAX) && a->type == AR_C128)
        return ar__err(err, "%s is not defined for complex arrays", name);
    if (axis != AR_AXIS_ALL) {
        int ax = axis < 0 ? axis + a->ndim : axis;
        if (ax < 0 || ax >= a->ndim)
            return ar__err(err, "%s: axis %d is out of range for a %d-d array", name, axis,
                           a->ndim);
        if (a->ndim > 1) {
            if (r != AR_SUM && a->shape[ax] == 0) return ar__err(err, "%s of an empty array", name);
            Array *res = reduce_axis(r, a, ax, err);
            if (!res) return AR_ERR;
            *out = res;
            return AR_ARRAY;
        }
    }
    if (r != AR_SUM && a->size == 0) return ar__err(err, "%s of an empty array", name);
    return reduce_all(r, a, s, err);
}

/* Why: whole-array shorthands for the interpreter's sum/mean/min/max. */
int ar_sum(const Array *a, ArScalar *s, char *err)
{
    return ar_reduce(AR_SUM, a, AR_AXIS_ALL, NULL, s, err) == AR_ERR ? AR_ERR : 0;
}
int ar_mean(const Array *a, ArScalar *s, char *err)
{
    return ar_reduce(AR_MEAN, a, AR_AXIS_ALL, NULL, s, err) == AR_ERR ? AR_ERR : 0;
}
int ar_min(const Array *a, ArScalar *s, char *err)
{
    return ar_reduce(AR_MIN, a, AR_AXIS_ALL, NULL, s, err) == AR_ERR ? AR_ERR : 0;
}
int ar_max(const Array *a, ArScalar *s, char *err)
{
    return ar_reduce(AR_MAX, a, AR_AXIS_ALL, NULL, s, err) == AR_ERR ? AR_ERR : 0;
}

/* ---- equality ----------------------------------------------------------------------- */

/* Why: the interpreter's == between two arrays as one boolean (e.g. for
 * dict lookups and tests): same shape and every element equal by value. */
int ar_equal(const Array *a, const Array *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    for (size_t i = 0; i < a->size; i++) {
        ArScalar x = ar_item(a, i), y = ar_item(b, i);
        if (x.re != y.re || x.im != y.im) return 0;
    }
    return 1;
}

/* Why: `v in a`. */
int ar_contains(const Array *a, ArScalar v)
{
    double im = v.is_complex ? v.im : 0;
    if (a->type == AR_F64) {
        if (im != 0) return 0;
        const double *x = ar__data(a);
        for (size_t i = 0; i < a->size; i++)
            if (x[i] == v.re) return 1;
        return 0;
    }
    const cplx *x = ar__data(a);
    for (size_t i = 0; i < a->size; i++)
        if (creal(x[i]) == v.re && cimag(x[i]) == im) return 1;
    return 0;
}
