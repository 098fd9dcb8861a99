/* ar_internal.h — what the files of the array room share and nobody else may
 * see: the layout of Array and of its reference-counted buffer, allocation
 * with the test failure hook, copy-on-write, error formatting and the
 * broadcasting helpers. Knows nothing outside src/array and src/util. */
#ifndef QH_AR_INTERNAL_H
#define QH_AR_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "array.h"
#include "qh_assert.h"

#define AR_ALIGN 64 /* buffer alignment; also the buffer header's size */

/* The shared element block: header, then (at offset AR_ALIGN) the elements. */
typedef struct ArBuf {
    atomic_size_t rc; /* number of Array headers pointing here */
    size_t nbytes;    /* bytes of elements in use */
    size_t cap;       /* bytes of elements the block can hold (>= nbytes) */
} ArBuf;

struct Array {
    ArType type;
    int ndim;
    size_t size; /* product of shape */
    size_t shape[AR_MAXDIM];
    ArBuf *buf;
    int mask; /* a comparison's 0/1 result: indexing with it selects (NumPy's bool) */
};

static inline void *ar__data(const Array *a) { return (char *)a->buf + AR_ALIGN; }
static inline size_t ar__esize(ArType t)
{
    return t == AR_C128 ? sizeof(double _Complex) : sizeof(double);
}

/* The header's invariants (checked by qh_assert where arrays are made, shared and changed):
 * a known type; 1..AR_MAXDIM axes, the unused ones 0; size the product of the shape; the
 * buffer held by at least this header, its elements exactly size of this type, within its
 * capacity. The room has no strides: a C-ordered block, the last axis contiguous. */
static inline bool ar__valid(const Array *a)
{
    if (!a || (a->type != AR_F64 && a->type != AR_C128) || a->ndim < 1 || a->ndim > AR_MAXDIM)
        return false;
    size_t n = 1;
    for (int i = 0; i < AR_MAXDIM; i++) {
        if (i >= a->ndim && a->shape[i] != 0) return false;
        if (i < a->ndim) n *= a->shape[i];
    }
    return n == a->size && a->buf && atomic_load_explicit(&a->buf->rc, memory_order_relaxed) >= 1 &&
           a->buf->nbytes == a->size * ar__esize(a->type) && a->buf->nbytes <= a->buf->cap;
}
/* re + im*i without the NaN/inf pitfalls of re + im*I (CMPLX is missing
 * under clang with glibc). */
static inline double _Complex ar__cx(double re, double im)
{
    union {
        double _Complex z;
        double d[2];
    } u;
    u.d[0] = re;
    u.d[1] = im;
    return u.z;
}

/* Room-wide allocation, honouring ar_test_fail_alloc. */
void *ar__malloc(size_t n);
void ar__free(void *p);

/* printf-style message into err (if err is not NULL); returns AR_ERR. */
int ar__err(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "(2, 3)" / "(3,)" into buf. */
int ar__shape_fmt(char *buf, size_t cap, int ndim, const size_t *shape);

/* Header and buffer with uninitialised elements (kernels overwrite them). */
Array *ar__alloc(ArType t, int ndim, const size_t *shape, char *err);
/* Makes a's buffer unshared before a write. */
int ar__unique(Array *a, char *err);
/* Replaces a float array's buffer by a complex copy of it (in place). */
int ar__promote(Array *a, char *err);

/* a and b of one dtype for a binary kernel: *ca / *cb are complex copies of
 * the float one when the other is complex (NULL where none was needed);
 * *pa / *pb the operands to use. -1 (out of memory, err set) or 0. */
int ar__common_type(const Array *a, const Array *b, Array **ca, Array **cb, const Array **pa,
                    const Array **pb, char *err);

/* Broadcast shape of two shapes (NumPy rules); -1 if incompatible. */
int ar__bcast_shape(int na, const size_t *sa, int nb, const size_t *sb, int *nout, size_t *out);
/* Element strides of an array of shape (n, s) viewed as broadcast to the
 * (nout, out) shape: right-aligned, 0 along broadcast axes. */
void ar__bcast_strides(int n, const size_t *s, int nout, const size_t *out, ptrdiff_t *st);

#endif
