/* arena.c — bump allocation for the nodes and names of one source file.
 * Freed all at once with the module. Knows nothing else. */
#include "ast.h"
#include "qh_assert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Chunk {
    struct Chunk *next;
    size_t used, cap;
    max_align_t data[];
} Chunk;
struct Arena {
    Chunk *head;
};

Arena *arena_new(void) { return xcalloc(1, sizeof(Arena)); }

void *arena_alloc(Arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (!a->head || a->head->used + n > a->head->cap) {
        size_t cap = n > 65536 ? n : 65536;
        Chunk *c = xmalloc(sizeof(Chunk) + cap);
        c->next = a->head;
        c->used = 0;
        c->cap = cap;
        a->head = c;
    }
    qh_assert(a->head->used % 16 == 0 && a->head->used + n <= a->head->cap);
    void *p = (char *)a->head->data + a->head->used;
    a->head->used += n;
    memset(p, 0, n);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

void arena_free(Arena *a)
{
    if (!a) return;
    Chunk *c = a->head;
    while (c) {
        Chunk *n = c->next;
        free(c);
        c = n;
    }
    free(a);
}
