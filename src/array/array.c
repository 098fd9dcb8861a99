/* array.c — the core of the array room: allocation of headers and shared
 * reference-counted buffers, copy-on-write, the makers (zeros, eye, linspace,
 * randn, ...), dtype conversion, reshape/transpose and printing (§3).
 *
 * Must not know about interpreter values, the executor or quantum; numbers
 * print through src/util/numfmt so arrays print like qh scalars. */
#include "ar_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qblas.h"

#include "numfmt.h"
#include "stop.h"

/* Test hook: allocations left before failures begin (< 0: never fail).
 * Thread-local so one thread's test cannot break another's allocations. */
static _Thread_local long fail_countdown = -1;

/* Why: lets the tests drive every allocation-failure path. */
void ar_test_fail_alloc(long n) { fail_countdown = n; }

/* Why: one place where the room allocates, so the failure hook sees all. */
void *ar__malloc(size_t n)
{
    if (fail_countdown >= 0) {
        if (fail_countdown == 0) return NULL;
        fail_countdown--;
    }
    return malloc(n ? n : 1);
}

/* Why: the partner of ar__malloc, so the pairing stays visible. */
void ar__free(void *p) { free(p); }

/* Why: 64-byte aligned buffers (cache lines, AVX-512 loads) for BLAS and the
 * elementwise kernels, under the same failure hook as ar__malloc. */
static void *aligned_block(size_t n)
{
    if (fail_countdown >= 0) {
        if (fail_countdown == 0) return NULL;
        fail_countdown--;
    }
    void *p = NULL;
    if (posix_memalign(&p, AR_ALIGN, n)) return NULL;
    return p;
}

/* Why: every error message goes through one formatter that tolerates a NULL
 * err buffer and truncates safely. */
int ar__err(char *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, AR_ERRLEN, fmt, ap);
        va_end(ap);
    }
    return AR_ERR;
}

/* Why: mismatch messages state shapes in Python's tuple notation. */
int ar__shape_fmt(char *buf, size_t cap, int ndim, const size_t *shape)
{
    size_t n = 0;
    int w = snprintf(buf, cap, "(");
    n += w > 0 ? (size_t)w : 0;
    for (int i = 0; i < ndim; i++) {
        w = snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, "%s%zu", i ? ", " : "",
                     shape[i]);
        n += w > 0 ? (size_t)w : 0;
    }
    w = snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, "%s)", ndim == 1 ? "," : "");
    n += w > 0 ? (size_t)w : 0;
    return (int)n;
}

/* Why: the interpreter's messages quote shapes the same way we do. */
int ar_shape_str(const Array *a, char *buf, size_t cap)
{
    return ar__shape_fmt(buf, cap, a->ndim, a->shape);
}

/* ---- per-thread cache of large buffers --------------------------------------
 * A fresh multi-megabyte block costs a page fault per 4 KiB on first touch
 * (about 10% of a 1000x1000 dgemm); a block just freed by this thread is
 * still mapped and warm. So the last release of a large buffer parks it
 * here and the next large allocation of a similar size takes it back. The
 * cache is thread-local (no locks; a buffer is parked by whichever thread
 * drops the last reference), small and bounded, and emptied at thread exit
 * or by ar_cache_trim(). */
#define CACHE_MIN   ((size_t)1 << 20) /* smaller blocks: plain malloc */
#define CACHE_SLOTS 4
#define CACHE_LIMIT ((size_t)128 << 20) /* bytes parked per thread, at most */

typedef struct {
    ArBuf *blk[CACHE_SLOTS];
    int n;
    int registered; /* thread-exit destructor installed */
    size_t bytes;
} BufCache;

static _Thread_local BufCache tcache;
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

/* Why: frees what a thread parked, at its exit (pthread key destructor). */
static void cache_drop(void *p)
{
    BufCache *c = p;
    for (int i = 0; i < c->n; i++) free(c->blk[i]);
    c->n = 0;
    c->bytes = 0;
}

/* Why: one key for all threads, made on first use (pthread_once). */
static void cache_key_make(void)
{
    if (pthread_key_create(&cache_key, cache_drop)) cache_key = (pthread_key_t)-1;
}

/* Why: reuse only blocks that fit without wasting more than half of them. */
static ArBuf *cache_take(size_t need)
{
    int best = -1;
    for (int i = 0; i < tcache.n; i++) {
        size_t cap = tcache.blk[i]->cap;
        if (cap >= need && cap / 2 <= need && (best < 0 || cap < tcache.blk[best]->cap)) best = i;
    }
    if (best < 0) return NULL;
    ArBuf *b = tcache.blk[best];
    tcache.bytes -= b->cap;
    tcache.blk[best] = tcache.blk[--tcache.n];
    return b;
}

/* Why: parks a dead large block if there is room; 0 if the caller must free. */
static int cache_put(ArBuf *b)
{
    if (b->cap < CACHE_MIN || tcache.n == CACHE_SLOTS || tcache.bytes + b->cap > CACHE_LIMIT)
        return 0;
    if (!tcache.registered) {
        pthread_once(&cache_once, cache_key_make);
        if (pthread_setspecific(cache_key, &tcache)) return 0;
        tcache.registered = 1;
    }
    tcache.blk[tcache.n++] = b;
    tcache.bytes += b->cap;
    return 1;
}

/* Why: lets the interpreter (and leak checkers) give parked memory back. */
void ar_cache_trim(void) { cache_drop(&tcache); }

/* Why: the buffer is the unit of sharing; it starts with one reference. */
static ArBuf *buf_new(size_t nbytes, char *err)
{
    if (nbytes > (size_t)PTRDIFF_MAX - AR_ALIGN) {
        ar__err(err, "array too large (%zu bytes)", nbytes);
        return NULL;
    }
    ArBuf *b = nbytes >= CACHE_MIN ? cache_take(nbytes) : NULL;
    if (!b) {
        b = aligned_block(AR_ALIGN + nbytes);
        if (!b) {
            ar__err(err, "out of memory allocating an array of %zu bytes", nbytes);
            return NULL;
        }
        b->cap = nbytes;
    }
    atomic_init(&b->rc, 1);
    b->nbytes = nbytes;
    return b;
}

/* Why: the last header to let go frees (or parks) the buffer; acq_rel on
 * the decrement orders every other thread's reads before that (a plain
 * release + acquire fence would do, but ThreadSanitizer cannot see fences). */
static void buf_release(ArBuf *b)
{
    if (!b) return;
    if (atomic_fetch_sub_explicit(&b->rc, 1, memory_order_acq_rel) == 1) {
        if (!cache_put(b)) free(b);
    }
}

/* Why: validates a shape once for every maker (ndim range, overflow of the
 * element count and byte size) so no later multiplication can wrap. */
static int check_shape(ArType t, int ndim, const size_t *shape, size_t *size, char *err)
{
    if (ndim < 1 || ndim > AR_MAXDIM)
        return ar__err(err, "arrays have 1 to %d dimensions, not %d", AR_MAXDIM, ndim);
    if (t != AR_F64 && t != AR_C128) return ar__err(err, "unknown array type %d", (int)t);
    size_t n = 1, lim = ((size_t)PTRDIFF_MAX - AR_ALIGN) / ar__esize(t);
    int zero = 0;
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0) zero = 1;
    for (int i = 0; i < ndim && !zero; i++) {
        if (n > lim / shape[i]) {
            char sh[160];
            ar__shape_fmt(sh, sizeof sh, ndim, shape);
            return ar__err(err, "array too large: shape %s", sh);
        }
        n *= shape[i];
    }
    for (int i = 0; i < ndim; i++) {
        if (shape[i] > (size_t)PTRDIFF_MAX / 16) { /* keeps strides in range */
            char sh[160];
            ar__shape_fmt(sh, sizeof sh, ndim, shape);
            return ar__err(err, "array too large: shape %s", sh);
        }
    }
    *size = zero ? 0 : n;
    return 0;
}

/* Why: kernels that overwrite every element skip the zero fill. */
Array *ar__alloc(ArType t, int ndim, const size_t *shape, char *err)
{
    size_t size;
    if (check_shape(t, ndim, shape, &size, err)) return NULL;
    Array *a = ar__malloc(sizeof *a);
    if (!a) {
        ar__err(err, "out of memory allocating an array header");
        return NULL;
    }
    a->buf = buf_new(size * ar__esize(t), err);
    if (!a->buf) {
        free(a);
        return NULL;
    }
    a->type = t;
    a->ndim = ndim;
    a->size = size;
    a->mask = 0;
    memset(a->shape, 0, sizeof a->shape);
    memcpy(a->shape, shape, (size_t)ndim * sizeof *shape);
    qh_assert(ar__valid(a));
    return a;
}

/* Why: the basic maker; every element starts as 0. */
Array *ar_new(ArType t, int ndim, const size_t *shape, char *err)
{
    Array *a = ar__alloc(t, ndim, shape, err);
    if (a) memset(ar__data(a), 0, a->buf->nbytes);
    return a;
}

/* Why: the interpreter builds arrays from lists and tests from literals. */
Array *ar_from_data(ArType t, int ndim, const size_t *shape, const void *data, char *err)
{
    Array *a = ar__alloc(t, ndim, shape, err);
    if (a && a->buf->nbytes) memcpy(ar__data(a), data, a->buf->nbytes);
    return a;
}

/* Why: O(1) snapshot — the way a background task receives an array that can
 * never change under it. */
Array *ar_copy(const Array *a, char *err)
{
    qh_assert(ar__valid(a));
    Array *c = ar__malloc(sizeof *c);
    if (!c) {
        ar__err(err, "out of memory allocating an array header");
        return NULL;
    }
    *c = *a;
    atomic_fetch_add_explicit(&a->buf->rc, 1, memory_order_relaxed);
    return c;
}

/* Why: headers are owned singly; buffers are shared and counted. */
void ar_free(Array *a)
{
    if (!a) return;
    qh_assert(ar__valid(a));
    buf_release(a->buf);
    free(a);
}

/* Why: copy-on-write — a header about to be written through must not be
 * sharing its buffer. A count of 1 cannot grow behind our back: only this
 * thread's header references the buffer. */
int ar__unique(Array *a, char *err)
{
    qh_assert(ar__valid(a));
    if (atomic_load_explicit(&a->buf->rc, memory_order_acquire) == 1) return 0;
    ArBuf *nb = buf_new(a->buf->nbytes, err);
    if (!nb) return AR_ERR;
    if (a->buf->nbytes) memcpy((char *)nb + AR_ALIGN, ar__data(a), a->buf->nbytes);
    buf_release(a->buf);
    a->buf = nb;
    qh_assert(ar__valid(a) && atomic_load_explicit(&nb->rc, memory_order_relaxed) == 1);
    return 0;
}

/* Why: assigning a complex value into a float array makes it complex. */
int ar__promote(Array *a, char *err)
{
    if (a->type == AR_C128) return 0;
    ArBuf *nb = buf_new(a->size * sizeof(double _Complex), err);
    if (!nb) return AR_ERR;
    const double *s = ar__data(a);
    double _Complex *d = (double _Complex *)((char *)nb + AR_ALIGN);
    for (size_t i = 0; i < a->size; i++) d[i] = s[i];
    buf_release(a->buf);
    a->buf = nb;
    a->type = AR_C128;
    qh_assert(ar__valid(a));
    return 0;
}

/* Why: Array is opaque; these are the interpreter's window on its shape. */
ArType ar_type(const Array *a) { return a->type; }
int ar_is_complex(const Array *a) { return a->type == AR_C128; }
int ar_ndim(const Array *a) { return a->ndim; }
size_t ar_size(const Array *a) { return a->size; }
const size_t *ar_shape(const Array *a) { return a->shape; }
size_t ar_len(const Array *a)
{
    qh_assert(ar__valid(a));
    return a->shape[0];
}

/* Why: shape(a)[-1] style access; 0 for an axis that does not exist. */
size_t ar_dim(const Array *a, int axis)
{
    if (axis < 0) axis += a->ndim;
    return axis >= 0 && axis < a->ndim ? a->shape[axis] : 0;
}

/* Why: lets tests observe sharing and copy-on-write. */
size_t ar_refcount(const Array *a)
{
    return atomic_load_explicit(&a->buf->rc, memory_order_relaxed);
}

/* Why: reading never needs a private buffer, so it never copies. */
const double *ar_f64_ro(const Array *a) { return a->type == AR_F64 ? ar__data(a) : NULL; }

const double _Complex *ar_c128_ro(const Array *a)
{
    return a->type == AR_C128 ? ar__data(a) : NULL;
}

/* Why: fast fills by the interpreter must not write into a shared buffer. */
double *ar_f64(Array *a)
{
    if (a->type != AR_F64 || ar__unique(a, NULL)) return NULL;
    return ar__data(a);
}

/* Why: the complex counterpart of ar_f64. */
double _Complex *ar_c128(Array *a)
{
    if (a->type != AR_C128 || ar__unique(a, NULL)) return NULL;
    return ar__data(a);
}

/* Why: generic element read for iteration and tests. */
ArScalar ar_item(const Array *a, size_t i)
{
    qh_assert(i < a->size);
    if (a->type == AR_F64) return ar_scalar(((const double *)ar__data(a))[i]);
    double _Complex z = ((const double _Complex *)ar__data(a))[i];
    return ar_cscalar(creal(z), cimag(z));
}

/* ---- makers ---------------------------------------------------------------- */

/* Why: zeros(n, m...) of the language; ar_new already zero-fills. */
Array *ar_zeros(ArType t, int ndim, const size_t *shape, char *err)
{
    return ar_new(t, ndim, shape, err);
}

/* Why: ones(n, m...), in either dtype. */
Array *ar_ones(ArType t, int ndim, const size_t *shape, char *err)
{
    return ar_full(ndim, shape, t == AR_C128 ? ar_cscalar(1, 0) : ar_scalar(1), err);
}

/* Why: identity matrices are the usual start of operator arithmetic. */
Array *ar_eye(size_t n, char *err)
{
    size_t sh[2] = { n, n };
    Array *a = ar_new(AR_F64, 2, sh, err);
    if (!a) return NULL;
    double *d = ar__data(a);
    for (size_t i = 0; i < n; i++) d[i * n + i] = 1.0;
    return a;
}

/* Why: full(shape, v); the dtype follows the scalar. */
Array *ar_full(int ndim, const size_t *shape, ArScalar v, char *err)
{
    Array *a = ar__alloc(v.is_complex ? AR_C128 : AR_F64, ndim, shape, err);
    if (!a) return NULL;
    if (v.is_complex) {
        double _Complex z = ar__cx(v.re, v.im), *d = ar__data(a);
        for (size_t i = 0; i < a->size; i++) d[i] = z;
    } else {
        double *d = ar__data(a);
        for (size_t i = 0; i < a->size; i++) d[i] = v.re;
    }
    return a;
}

/* Why: NumPy's linspace (endpoint included, last element exactly b). */
Array *ar_linspace(double a, double b, long n, char *err)
{
    if (n < 0) {
        ar__err(err, "linspace: number of points must be non-negative, got %ld", n);
        return NULL;
    }
    size_t sh[1] = { (size_t)n };
    Array *r = ar__alloc(AR_F64, 1, sh, err);
    if (!r) return NULL;
    double *d = ar__data(r);
    if (n == 1) {
        d[0] = a;
    } else if (n > 1) {
        double step = (b - a) / (double)(n - 1);
        for (long i = 0; i < n; i++) d[i] = a + (double)i * step;
        d[n - 1] = b;
    }
    return r;
}

/* Why: NumPy's arange for floats: length ceil((b - a) / step). */
Array *ar_arange(double a, double b, double step, char *err)
{
    if (step == 0 || isnan(step) || isnan(a) || isnan(b)) {
        ar__err(err,
                step == 0 ? "arange: step must not be zero" : "arange: arguments must not be nan");
        return NULL;
    }
    double len = ceil((b - a) / step);
    if (!(len > 0)) len = 0;
    if (len > (double)(PTRDIFF_MAX / 16)) {
        ar__err(err, "arange: too many elements (%g)", len);
        return NULL;
    }
    size_t sh[1] = { (size_t)len };
    Array *r = ar__alloc(AR_F64, 1, sh, err);
    if (!r) return NULL;
    double *d = ar__data(r);
    for (size_t i = 0; i < sh[0]; i++) d[i] = a + (double)i * step;
    return r;
}

/* Why: randn(..., seed=) must be reproducible: one stream, row-major order. */
Array *ar_randn(int ndim, const size_t *shape, Rng *rng, char *err)
{
    Array *a = ar__alloc(AR_F64, ndim, shape, err);
    if (!a) return NULL;
    double *d = ar__data(a);
    for (size_t i = 0; i < a->size; i++) d[i] = rng_normal(rng);
    return a;
}

/* Why: rand(...): uniform [0, 1), same stream discipline as ar_randn. */
Array *ar_rand(int ndim, const size_t *shape, Rng *rng, char *err)
{
    Array *a = ar__alloc(AR_F64, ndim, shape, err);
    if (!a) return NULL;
    double *d = ar__data(a);
    for (size_t i = 0; i < a->size; i++) d[i] = rng_uniform(rng);
    return a;
}

/* ---- conversion -------------------------------------------------------------- */

/* Why: mixed float/complex kernels promote their float operand. */
Array *ar_to_complex(const Array *a, char *err)
{
    if (a->type == AR_C128) return ar_copy(a, err);
    Array *c = ar__alloc(AR_C128, a->ndim, a->shape, err);
    if (!c) return NULL;
    const double *s = ar__data(a);
    double _Complex *d = ar__data(c);
    for (size_t i = 0; i < a->size; i++) d[i] = s[i];
    return c;
}

/* Why: explicit conversions; silently dropping imaginary parts would hide
 * bugs, so complex -> float requires them to be zero. */
Array *ar_astype(const Array *a, ArType t, char *err)
{
    if (t == a->type) return ar_copy(a, err);
    if (t == AR_C128) return ar_to_complex(a, err);
    if (t != AR_F64) {
        ar__err(err, "unknown array type %d", (int)t);
        return NULL;
    }
    const double _Complex *s = ar__data(a);
    for (size_t i = 0; i < a->size; i++) {
        if (cimag(s[i]) != 0) {
            ar__err(err, "cannot convert a complex array with non-zero imaginary "
                         "parts to float (use real())");
            return NULL;
        }
    }
    return ar_real(a, err);
}

/* ---- shape --------------------------------------------------------------------- */

/* Why: reshape never moves data (arrays are contiguous), so it shares. */
Array *ar_reshape(const Array *a, int ndim, const long *shape, char *err)
{
    char from[160], to[200];
    ar__shape_fmt(from, sizeof from, a->ndim, a->shape);
    if (ndim < 1 || ndim > AR_MAXDIM) {
        ar__err(err, "reshape: arrays have 1 to %d dimensions, not %d", AR_MAXDIM, ndim);
        return NULL;
    }
    { /* the requested shape as typed, -1 included */
        size_t n = 0;
        n += (size_t)snprintf(to, sizeof to, "(");
        for (int i = 0; i < ndim && n < sizeof to; i++)
            n += (size_t)snprintf(to + n, sizeof to - n, "%s%ld", i ? ", " : "", shape[i]);
        if (n < sizeof to) snprintf(to + n, sizeof to - n, "%s)", ndim == 1 ? "," : "");
    }
    int infer = -1;
    size_t known = 1, sh[AR_MAXDIM];
    int zero = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == -1) {
            if (infer >= 0) {
                ar__err(err, "reshape: only one dimension may be -1, got %s", to);
                return NULL;
            }
            infer = i;
            continue;
        }
        if (shape[i] < 0) {
            ar__err(err, "reshape: negative dimension in %s", to);
            return NULL;
        }
        sh[i] = (size_t)shape[i];
        if (sh[i] == 0)
            zero = 1;
        else if (known > SIZE_MAX / sh[i])
            known = SIZE_MAX; /* saturate */
        else
            known *= sh[i];
    }
    if (infer >= 0) {
        if (zero || a->size % known) {
            ar__err(err, "cannot reshape array of size %zu into shape %s", a->size, to);
            return NULL;
        }
        sh[infer] = a->size / known;
    } else if ((zero ? 0 : known) != a->size) {
        ar__err(err, "cannot reshape array of size %zu into shape %s", a->size, to);
        return NULL;
    }
    size_t size;
    if (check_shape(a->type, ndim, sh, &size, err)) return NULL;
    Array *r = ar_copy(a, err);
    if (!r) return NULL;
    r->ndim = ndim;
    memset(r->shape, 0, sizeof r->shape);
    memcpy(r->shape, sh, (size_t)ndim * sizeof *sh);
    qh_assert(ar__valid(r) && r->size == a->size); /* the same elements, another shape */
    return r;
}

/* Why: cache-blocked 2-d transpose of elements of size esz; the common
 * (matrix) case of ar_transpose. */
static void transpose2(char *d, const char *s, size_t m, size_t n, size_t esz)
{
    const size_t B = 32;
    for (size_t i0 = 0; i0 < m; i0 += B)
        for (size_t j0 = 0; j0 < n; j0 += B) {
            size_t i1 = i0 + B < m ? i0 + B : m, j1 = j0 + B < n ? j0 + B : n;
            if (esz == sizeof(double)) {
                const double *sd = (const double *)s;
                double *dd = (double *)d;
                for (size_t i = i0; i < i1; i++)
                    for (size_t j = j0; j < j1; j++) dd[j * m + i] = sd[i * n + j];
            } else {
                const double _Complex *sc = (const double _Complex *)s;
                double _Complex *dc = (double _Complex *)d;
                for (size_t i = i0; i < i1; i++)
                    for (size_t j = j0; j < j1; j++) dc[j * m + i] = sc[i * n + j];
            }
        }
}

/* Why: transpose(a) — the matrix transpose, n-d reverses the axes (NumPy). */
Array *ar_transpose(const Array *a, char *err)
{
    if (a->ndim == 1) return ar_copy(a, err);
    size_t sh[AR_MAXDIM];
    for (int i = 0; i < a->ndim; i++) sh[i] = a->shape[a->ndim - 1 - i];
    Array *r = ar__alloc(a->type, a->ndim, sh, err);
    if (!r) return NULL;
    r->mask = a->mask;
    size_t esz = ar__esize(a->type);
    if (a->ndim == 2) {
        transpose2(ar__data(r), ar__data(a), a->shape[0], a->shape[1], esz);
        return r;
    }
    if (a->size == 0) return r;
    /* general: walk the output in order, source strides reversed */
    size_t sst[AR_MAXDIM], idx[AR_MAXDIM] = { 0 };
    size_t st = 1;
    for (int i = a->ndim - 1; i >= 0; i--) {
        sst[a->ndim - 1 - i] = st; /* output axis k = source axis ndim-1-k */
        st *= a->shape[i];
    }
    qh_assert(st == a->size); /* the source strides span the block, C order */
    const char *s = ar__data(a);
    char *d = ar__data(r);
    size_t off = 0;
    for (size_t k = 0; k < r->size; k++) {
        memcpy(d + k * esz, s + off * esz, esz);
        for (int ax = r->ndim - 1; ax >= 0; ax--) {
            off += sst[ax];
            if (++idx[ax] < sh[ax]) break;
            off -= sst[ax] * sh[ax];
            idx[ax] = 0;
        }
    }
    qh_assert(off == 0); /* the walk wrapped round every axis back to the start */
    return r;
}

/* ---- printing -------------------------------------------------------------------- */

typedef struct {
    char *p;
    size_t len, cap;
    int oom; /* out of memory, or stopped (stop.h) */
    unsigned ticks;
} Sb;

/* Why: a growable string so large arrays print in full. */
static void sb_put(Sb *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 64;
        while (nc < b->len + n + 1) nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

/* Why: prints one axis level recursively: "[" elements or sub-lists "]". */
static void fmt_axis(Sb *b, const Array *a, int axis, size_t off)
{
    size_t stride = 1;
    for (int i = axis + 1; i < a->ndim; i++) stride *= a->shape[i];
    sb_put(b, "[", 1);
    for (size_t k = 0; k < a->shape[axis]; k++) {
        if (b->oom) return; /* out of memory, or stopped */
        if (k) sb_put(b, ", ", 2);
        if ((++b->ticks & 0xFFFF) == 0 && qh_stop_requested()) {
            b->oom = 1; /* SIGINT/SIGTERM while printing a big array */
            return;
        }
        if (axis + 1 < a->ndim) {
            fmt_axis(b, a, axis + 1, off + k * stride);
        } else {
            char t[NUMFMT_CBUF];
            int n;
            if (a->type == AR_F64) {
                n = numfmt_double(t, ((const double *)ar__data(a))[off + k]);
            } else {
                double _Complex z = ((const double _Complex *)ar__data(a))[off + k];
                n = numfmt_complex(t, creal(z), cimag(z));
            }
            sb_put(b, t, (size_t)n);
        }
    }
    sb_put(b, "]", 1);
}

/* Why: str(a) per lang/values.md, every element, nested lists per axis. */
char *ar_format(const Array *a)
{
    Sb b = { NULL, 0, 0, 0, 0 };
    sb_put(&b, "array(", 6);
    size_t n = 1;
    for (int i = 0; i < a->ndim; i++) n *= a->shape[i];
    if (n == 0 && a->ndim > 1) {
        /* as NumPy: an empty array by its shape (its nested lists could be
           10^10 "[]" for a shape (100000, 100000, 0)) */
        sb_put(&b, "[], shape=(", 11);
        for (int i = 0; i < a->ndim; i++) {
            char t[32];
            int l = snprintf(t, sizeof t, i ? ", %zu" : "%zu", a->shape[i]);
            sb_put(&b, t, (size_t)l);
        }
        sb_put(&b, "))", 2);
    } else {
        fmt_axis(&b, a, 0, 0);
        sb_put(&b, ")", 1);
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* ---- BLAS threads ------------------------------------------------------------------ */

/* Why: the executor decides how many cores BLAS may use next to its tasks. */
void ar_set_blas_threads(int n) { qblas_set_threads(n); }

/* Why: so the executor can restore what it changed. */
int ar_blas_threads(void) { return qblas_threads(); }

int ar_is_mask(const Array *a) { return a->mask; }
void ar_set_mask(Array *a, int on) { a->mask = on != 0; }

int ar__common_type(const Array *a, const Array *b, Array **ca, Array **cb, const Array **pa,
                    const Array **pb, char *err)
{
    int cx = a->type == AR_C128 || b->type == AR_C128;
    *ca = cx && a->type == AR_F64 ? ar_to_complex(a, err) : NULL;
    *cb = cx && b->type == AR_F64 ? ar_to_complex(b, err) : NULL;
    *pa = *ca ? *ca : a;
    *pb = *cb ? *cb : b;
    if ((*pa)->type != (*pb)->type) {
        ar_free(*ca);
        ar_free(*cb);
        *ca = *cb = NULL;
        return -1;
    }
    return 0;
}
