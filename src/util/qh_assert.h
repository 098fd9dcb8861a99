/* qh_assert.h — stated invariants and the memory policy for fixed-size
 * internal allocations.
 *
 * qh_assert(c): checked in debug and sanitizer builds (NDEBUG unset: the
 * top meson.build undefines it under b_sanitize whatever the buildtype),
 * free in release builds. qh_unreachable(): the default of a switch that covers
 * every case; it aborts with a message in every build (it costs nothing
 * where it is never reached, and a broken invariant must not run on).
 *
 * xmalloc / xcalloc / xrealloc / xstrdup: for small allocations whose size
 * the program does not choose (objects, frames, tables). Failure prints
 * "qh: out of memory" and exits with status 70 (EX_SOFTWARE-like): there is
 * no way to go on. Where the size comes from the program (list, string and
 * dict growth, repetition, concatenation, arrays) the caller checks and
 * reports a located, catchable "out of memory" instead. Knows nothing else. */
#ifndef QH_ASSERT_H
#define QH_ASSERT_H

#include <stddef.h>

_Noreturn void qh_assert_fail(const char *what, const char *file, int line, const char *func);
_Noreturn void qh_out_of_memory(void);

#ifdef NDEBUG
#define qh_assert(c) ((void)sizeof(c))
#else
#define qh_assert(c) ((c) ? (void)0 : qh_assert_fail(#c, __FILE__, __LINE__, __func__))
#endif
#define qh_unreachable() qh_assert_fail("unreachable code reached", __FILE__, __LINE__, __func__)

#include <stdlib.h>
static inline void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (__builtin_expect(!p, 0)) qh_out_of_memory();
    return p;
}
void *xcalloc(size_t n, size_t size);
static inline void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (__builtin_expect(!p, 0)) qh_out_of_memory();
    return p;
}
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

#endif
