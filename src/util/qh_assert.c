/* qh_assert.c — what a failed invariant and an exhausted heap do (see
 * qh_assert.h). */
#include "qh_assert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void qh_assert_fail(const char *what, const char *file, int line, const char *func)
{
    fflush(stdout);
    fprintf(stderr, "qh: internal error: %s (%s:%d, %s)\n", what, file, line, func);
    abort();
}

void qh_out_of_memory(void)
{
    fflush(stdout);
    fputs("qh: out of memory\n", stderr);
    _Exit(70);
}

char *xstrdup(const char *s)
{
    char *p = strdup(s);
    if (!p) qh_out_of_memory();
    return p;
}

char *xstrndup(const char *s, size_t n)
{
    char *p = strndup(s, n);
    if (!p) qh_out_of_memory();
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) qh_out_of_memory();
    return p;
}
