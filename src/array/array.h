/* array.h — the dense-array room of qh (prefix ar_): n-dimensional float64 /
 * complex128 arrays with NumPy-style broadcasting, BLAS matrix products and
 * LAPACK Hermitian eigenvalues (lang/arrays.md), printed per lang/values.md.
 *
 * Must not know about the interpreter's values, the executor or quantum: it
 * is pure C on OpenBLAS, plus src/util (numfmt for printing, rng for random
 * fills). The interpreter wraps an Array* inside its own value.
 *
 * Ownership: an Array header is owned by one thread. Its element buffer is a
 * separate block with an atomic reference count, shared between headers:
 * ar_copy() is O(1), and every mutating entry point makes the buffer unique
 * first (copy-on-write), so a header handed to another thread via ar_copy()
 * never sees later changes made through the original.
 *
 * Errors: every fallible function takes `char *err` (AR_ERRLEN bytes, may be
 * NULL) and returns NULL / AR_ERR with a message there. Allocation failures
 * and over-large sizes are errors, never aborts. */
#ifndef QH_ARRAY_H
#define QH_ARRAY_H

#include <complex.h>
#include <limits.h>
#include <stddef.h>

#include "rng.h"

#define AR_MAXDIM 8   /* most dimensions an array may have */
#define AR_ERRLEN 256 /* size of every err buffer */

typedef enum { AR_F64 = 0, AR_C128 = 1 } ArType;

typedef struct Array Array; /* opaque; see array.c */

/* A number crossing the interface: complex when is_complex, else re alone. */
typedef struct {
    double re, im;
    int is_complex;
} ArScalar;

static inline ArScalar ar_scalar(double re)
{
    ArScalar s = { re, 0.0, 0 };
    return s;
}
static inline ArScalar ar_cscalar(double re, double im)
{
    ArScalar s = { re, im, 1 };
    return s;
}

/* Results of the functions that yield either a scalar or an array. */
enum { AR_ERR = -1, AR_SCALAR = 0, AR_ARRAY = 1 };

/* ---- creation, sharing, inspection ------------------------------------ */

/* Zero-filled array of the given shape (1..AR_MAXDIM dims, sizes may be 0). */
Array *ar_new(ArType t, int ndim, const size_t *shape, char *err);
/* Array of the given shape filled from `data` (doubles for AR_F64, interleaved
 * re,im doubles / double _Complex for AR_C128), row-major. */
Array *ar_from_data(ArType t, int ndim, const size_t *shape, const void *data, char *err);
/* New header sharing a's buffer: O(1); later writes to either are unseen by
 * the other (copy-on-write). */
Array *ar_copy(const Array *a, char *err);
/* Frees the header and drops its buffer reference. NULL is allowed. */
void ar_free(Array *a);

ArType ar_type(const Array *a);
int ar_is_complex(const Array *a);
int ar_ndim(const Array *a);
size_t ar_size(const Array *a);          /* number of elements */
const size_t *ar_shape(const Array *a);  /* ar_ndim() entries */
size_t ar_dim(const Array *a, int axis); /* negative counts from the end */
size_t ar_len(const Array *a);           /* length of axis 0 (len(a)) */
/* Shape as text, Python's tuple style: "(2, 3)", "(3,)". Returns length. */
int ar_shape_str(const Array *a, char *buf, size_t cap);

/* Read-only element pointers (NULL if the dtype does not match). */
const double *ar_f64_ro(const Array *a);
const double _Complex *ar_c128_ro(const Array *a);
/* Writable element pointers for fast fills: the buffer is made unique first.
 * NULL if the dtype does not match or the copy could not be allocated. */
double *ar_f64(Array *a);
double _Complex *ar_c128(Array *a);
/* Element at flat (row-major) position i < ar_size(a). */
ArScalar ar_item(const Array *a, size_t i);
/* Number of live headers on a's buffer (tests / diagnostics). */
size_t ar_refcount(const Array *a);

/* ---- makers -------------------------------------------------------------- */

Array *ar_zeros(ArType t, int ndim, const size_t *shape, char *err);
Array *ar_ones(ArType t, int ndim, const size_t *shape, char *err);
Array *ar_eye(size_t n, char *err);
/* Filled with v; complex iff v is. */
Array *ar_full(int ndim, const size_t *shape, ArScalar v, char *err);
/* n points from a to b inclusive (NumPy's linspace). */
Array *ar_linspace(double a, double b, long n, char *err);
/* a, a+step, ... below b (above b for step < 0); length ceil((b-a)/step). */
Array *ar_arange(double a, double b, double step, char *err);
/* Standard normal / uniform [0,1) deviates drawn from r in row-major order. */
Array *ar_randn(int ndim, const size_t *shape, Rng *r, char *err);
Array *ar_rand(int ndim, const size_t *shape, Rng *r, char *err);

/* ---- conversion ---------------------------------------------------------- */

/* Complex version of a (shares the buffer if a is complex already). */
Array *ar_to_complex(const Array *a, char *err);
/* a converted to t; complex -> float is an error unless every imaginary
 * part is zero. */
Array *ar_astype(const Array *a, ArType t, char *err);

/* ---- indexing ------------------------------------------------------------ */

enum { AR_IX_INT = 0, AR_IX_SLICE = 1, AR_IX_ARRAY = 2 };
#define AR_IX_NONE LONG_MIN /* an omitted slice bound or step */

/* One axis of an index: an integer (negative counts from the end) or a
 * Python slice start:stop:step (AR_IX_NONE for omitted parts). */
typedef struct {
    int kind;
    long i;
    long start, stop, step;
    const Array *arr; /* AR_IX_ARRAY: integer indices, or a mask (ar_is_mask) */
    Array *own;       /* freed by ar_ix_release (an index made for the call) */
} ArIndex;

static inline ArIndex ar_ix(long i)
{
    ArIndex x = { AR_IX_INT, i, 0, 0, 0, NULL, NULL };
    return x;
}
static inline ArIndex ar_ix_slice(long start, long stop, long step)
{
    ArIndex x = { AR_IX_SLICE, 0, start, stop, step, NULL, NULL };
    return x;
}
static inline ArIndex ar_ix_all(void) { return ar_ix_slice(AR_IX_NONE, AR_IX_NONE, AR_IX_NONE); }

/* An index array: integer positions along one axis, or a mask (a
 * comparison's result, or made one with ar_set_mask) selecting the elements
 * where it is non-zero along as many axes as it has. NumPy's advanced
 * indexing rules: index arrays (and integers beside them) broadcast
 * together, their result axes go where the first one stood if they are
 * adjacent, else first; the result is a copy. */
static inline ArIndex ar_ix_array(const Array *a)
{
    ArIndex x = { AR_IX_ARRAY, 0, 0, 0, 0, a, NULL };
    return x;
}
/* Frees the arrays the indices own (own != NULL). */
void ar_ix_release(ArIndex *ix, int n);
/* A comparison's result is a mask; the flag follows copies and reshapes. */
int ar_is_mask(const Array *a);
void ar_set_mask(Array *a, int on);

/* a[ix...]: nix <= ndim axes; missing trailing axes are taken whole.
 * Returns AR_SCALAR with *s when every axis got an integer, else AR_ARRAY
 * with a new array (a copy) in *out; AR_ERR on error. */
int ar_index(const Array *a, const ArIndex *ix, int nix, ArScalar *s, Array **out, char *err);
/* Integer-only form of ar_index: a[i], a[i, j]. */
int ar_get(const Array *a, const long *idx, int nidx, ArScalar *s, Array **out, char *err);
/* a[ix...] = v (v broadcast over the selected region). A float array that
 * receives a complex value becomes complex. Returns 0 or AR_ERR. */
int ar_assign_scalar(Array *a, const ArIndex *ix, int nix, ArScalar v, char *err);
/* a[ix...] = v where v broadcasts to the selected region's shape. */
int ar_assign_array(Array *a, const ArIndex *ix, int nix, const Array *v, char *err);
/* Integer-only form: a[i, j] = v, a[i] = v. */
int ar_set(Array *a, const long *idx, int nidx, ArScalar v, char *err);

/* ---- shape ----------------------------------------------------------------- */

/* Same elements, new shape (one entry may be -1: inferred). O(1): shares. */
Array *ar_reshape(const Array *a, int ndim, const long *shape, char *err);
/* Axes reversed (the matrix transpose for 2-d); a copy. */
Array *ar_transpose(const Array *a, char *err);

/* ---- elementwise arithmetic ------------------------------------------------ */

typedef enum {
    AR_ADD,
    AR_SUB,
    AR_MUL,
    AR_DIV,
    AR_POW,
    AR_EQ,
    AR_NE,
    AR_LT,
    AR_LE,
    AR_GT,
    AR_GE,
    AR_ATAN2, /* atan2(a, b), float only */
    AR_NOPS
} ArOp;

/* Symbol of op for messages: "+", "**", "<=", "atan2". */
const char *ar_op_name(ArOp op);
/* a op b with NumPy broadcasting; complex if either is; comparisons give
 * float 0/1 arrays (ordering comparisons of complex are errors). */
Array *ar_binop(ArOp op, const Array *a, const Array *b, char *err);
/* a op s (scalar_left = 0) or s op a (scalar_left = 1). */
Array *ar_binop_scalar(ArOp op, const Array *a, ArScalar s, int scalar_left, char *err);
Array *ar_neg(const Array *a, char *err);

/* ---- linear algebra -------------------------------------------------------- */

/* a @ b: 2-d@2-d gemm, 2-d@1-d and 1-d@2-d gemv, 1-d@1-d inner product
 * (AR_SCALAR in *s, no conjugation), n-d stacks of matrices broadcast.
 * float@complex promotes. Returns AR_SCALAR, AR_ARRAY (*out) or AR_ERR. */
int ar_matmul(const Array *a, const Array *b, Array **out, ArScalar *s, char *err);
/* dot(a, b): the same as a @ b for 1-d and 2-d operands. */
int ar_dot(const Array *a, const Array *b, Array **out, ArScalar *s, char *err);
/* Kronecker product (operands of unequal ndim are padded with leading 1s). */
Array *ar_kron(const Array *a, const Array *b, char *err);
/* 2-norm of all elements (Frobenius for a matrix). */
double ar_norm(const Array *a);

/* ---- numpy.linalg (ar_lapack.c): NumPy's LAPACK routine on a column-major
 * copy of each matrix, so results are NumPy's for the same LAPACK. Stacks
 * (leading axes) loop where NumPy's do; inf/nan inputs are errors. ---- */

/* Eigenvalues of a Hermitian (real symmetric) matrix (or stack),
 * ascending, as a float array; only the lower triangle (a[i][j], j <= i) is
 * read (NumPy's UPLO='L'), Hermiticity is not checked. */
Array *ar_eigvalsh(const Array *a, char *err);
/* eigh: eigenvalues (float, ascending) and eigenvectors (columns of *v, the
 * input's dtype); v NULL: values only. 0 or AR_ERR. */
int ar_eigh(const Array *a, Array **w, Array **v, char *err);
/* eig (geev): eigenvalues and right eigenvectors (columns); complex unless
 * a real matrix has only real eigenvalues, as NumPy. 0 or AR_ERR. */
int ar_eig(const Array *a, Array **w, Array **v, char *err);
/* inv (gesv with B = I); "singular matrix" when it is. */
Array *ar_inv(const Array *a, char *err);
/* solve(a, b): a (..., M, M), b (M,) a vector or (..., M, K) matrices
 * (NumPy 2's rule), stacks broadcast. */
Array *ar_solve(const Array *a, const Array *b, char *err);
/* det as NumPy computes it (sign * exp(log|det|) from getrf): AR_SCALAR for
 * a matrix, AR_ARRAY for a stack. */
int ar_det(const Array *a, Array **out, ArScalar *s, char *err);
/* svd (gesdd): u, s, vh with full_matrices (full) and compute_uv (uv: when
 * 0, only *s is set). 0 or AR_ERR. */
int ar_svd(const Array *a, int full, int uv, Array **u, Array **s, Array **vh, char *err);
/* qr of a 2-d matrix; mode 0 'reduced', 1 'complete', 2 'r' (*q NULL). */
int ar_qr(const Array *a, int mode, Array **q, Array **r, char *err);
/* pinv of a 2-d matrix (NumPy's: SVD, singular values <= rcond * max cut). */
Array *ar_pinv(const Array *a, double rcond, char *err);
/* least squares (gelsd) of a float m x n matrix and an m-vector; *rank set. */
Array *ar_lstsq_vec(const Array *A, const Array *b, double rcond, int *rank, char *err);
/* the matrix exponential (Pade scaling and squaring). */
Array *ar_expm(const Array *a, char *err);

/* ---- NumPy's array functions (ar_np.c) --------------------------------------- */

/* trace (sum of the offset diagonal of the first two axes): AR_SCALAR for
 * 2-d, AR_ARRAY over the remaining axes. */
int ar_trace(const Array *a, long offset, Array **out, ArScalar *s, char *err);
/* diag(v, k): a 1-d v as the k-th diagonal of a square matrix; a 2-d v's
 * k-th diagonal. */
Array *ar_diag(const Array *a, long k, char *err);
/* outer(a, b) of the flattened operands. */
Array *ar_outer(const Array *a, const Array *b, char *err);
/* sign: -1, 0, 1 (nan kept); complex z / |z| (NumPy 2). */
Array *ar_sign(const Array *a, char *err);
/* argmax / argmin: flat (AR_AXIS_ALL, AR_SCALAR) or along an axis. */
int ar_argminmax(const Array *a, int want_max, int axis, Array **out, ArScalar *s, char *err);
/* stable sort / argsort along an axis (AR_AXIS_ALL: flattened); nan last. */
Array *ar_sort(const Array *a, int axis, char *err);
Array *ar_argsort(const Array *a, int axis, char *err);
/* cumsum along an axis (AR_AXIS_ALL: flattened). */
Array *ar_cumsum(const Array *a, int axis, char *err);
/* var (root 0) / std (root 1) with ddof and keepdims (then AR_ARRAY). */
typedef struct ArVarSpec {
    int axis; /* or AR_AXIS_ALL */
    double ddof;
    int keepdims;
    int root; /* std: the square root of var */
} ArVarSpec;
int ar_var(const Array *a, const ArVarSpec *sp, Array **out, ArScalar *s, char *err);
/* where(c, x, y), clip(a, lo, hi) (lo or hi may be NULL) and isclose,
 * broadcasting all operands. */
Array *ar_where(const Array *c, const Array *x, const Array *y, char *err);
Array *ar_clip(const Array *a, const Array *lo, const Array *hi, char *err);
Array *ar_isclose(const Array *a, const Array *b, double rtol, double atol, int equal_nan,
                  char *err);
/* unique of the flattened array: sorted values, and optionally the first
 * index, inverse and counts (NULL: not wanted). 0 or AR_ERR. */
int ar_unique(const Array *a, Array **u, Array **index, Array **inverse, Array **counts, char *err);
/* bincount(x, weights (may be NULL), minlength). */
Array *ar_bincount(const Array *x, const Array *w, size_t minlength, char *err);
/* concatenate along an existing axis / stack along a new one. */
Array *ar_concat(const Array *const *as, int n, int axis, char *err);
Array *ar_stack(const Array *const *as, int n, int axis, char *err);
/* scipy.linalg.block_diag of 0..2-d arrays. */
Array *ar_block_diag(const Array *const *as, int n, char *err);
/* polyfit(x, y, deg): coefficients, highest power first. */
Array *ar_polyfit(const Array *x, const Array *y, int deg, char *err);

/* ---- reductions ------------------------------------------------------------ */

typedef enum { AR_SUM, AR_MEAN, AR_MIN, AR_MAX } ArReduce;
#define AR_AXIS_ALL INT_MIN

/* Reduce all elements (axis = AR_AXIS_ALL) -> AR_SCALAR, or along one axis
 * (negative counts from the end) -> AR_ARRAY, or AR_SCALAR for a 1-d array.
 * min/max of complex and min/max/mean of nothing are errors; NaN propagates. */
int ar_reduce(ArReduce r, const Array *a, int axis, Array **out, ArScalar *s, char *err);
/* Whole-array shorthands (return 0 or AR_ERR). */
int ar_sum(const Array *a, ArScalar *s, char *err);
int ar_mean(const Array *a, ArScalar *s, char *err);
int ar_min(const Array *a, ArScalar *s, char *err);
int ar_max(const Array *a, ArScalar *s, char *err);

/* ---- elementwise functions ------------------------------------------------- */

typedef enum {
    AR_SIN,
    AR_COS,
    AR_TAN,
    AR_ASIN,
    AR_ACOS,
    AR_ATAN,
    AR_EXP,
    AR_LOG,
    AR_LOG2,
    AR_LOG10,
    AR_SQRT,
    AR_ABS,
    AR_FLOOR,
    AR_CEIL,
    AR_ROUND,
    AR_NFUNCS
} ArFunc;

/* Name of f: "sin", "log10". */
const char *ar_func_name(ArFunc f);
/* f applied to every element. Complex input works for the analytic functions
 * (abs gives float); floor/ceil/round of complex are errors. Float domain
 * errors give NaN as in NumPy (sqrt(-1) is nan; use a complex array). round
 * is half-to-even. */
Array *ar_map(ArFunc f, const Array *a, char *err);
Array *ar_abs(const Array *a, char *err);
Array *ar_sqrt(const Array *a, char *err);
Array *ar_exp(const Array *a, char *err);
/* round(a, digits): NumPy's rule, rint(a * 10^d) / 10^d. */
Array *ar_round(const Array *a, int digits, char *err);
/* Real part, imaginary part (float arrays), complex conjugate. */
Array *ar_real(const Array *a, char *err);
Array *ar_imag(const Array *a, char *err);
Array *ar_conj(const Array *a, char *err);

/* ---- comparison helpers for the interpreter -------------------------------- */

/* 1 if same shape and equal values (float and complex compare by value). */
int ar_equal(const Array *a, const Array *b);
/* 1 if some element equals v. */
int ar_contains(const Array *a, ArScalar v);

/* ---- printing ---------------------------------------------------------------- */

/* "array([1, 2.5, 3])", "array([[1, 2], [3, 4]])", complex elements as
 * "(1+2j)"; every element printed. malloc'd; NULL if out of memory. */
char *ar_format(const Array *a);

/* ---- BLAS threads -------------------------------------------------------------- */

/* Sets / reads OpenBLAS's thread count (process-wide). */
void ar_set_blas_threads(int n);
int ar_blas_threads(void);

/* ---- memory ------------------------------------------------------------------- */

/* Large buffers (>= 1 MiB) whose last reference a thread drops are parked in
 * that thread's small cache (at most 4 blocks, 128 MiB) and reused by its
 * next similar-sized allocation: a fresh block would page-fault on first
 * touch, costing ~10% of a 1000x1000 matrix product. The cache is emptied
 * at thread exit; ar_cache_trim() empties the calling thread's now. */
void ar_cache_trim(void);

/* ---- test hook ------------------------------------------------------------------ */

/* Makes the calling thread's allocations in this room fail after n more
 * succeed (n < 0: never fail, the default). For tests of error paths. */
void ar_test_fail_alloc(long n);

#endif
