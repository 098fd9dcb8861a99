/* gc.h — the value room's inside view of the cycle collector (gc.c): the
 * header in front of every object of a TF_TRACK kind, the per-thread
 * heap, and the fast paths that link an object into and out of the
 * calling thread's heap (inline: every list, dict and cell pays them).
 * value.c allocates and frees the memory; gc.c owns the heaps and
 * collects. Everyone else uses value.h. */
#ifndef QH_GC_H
#define QH_GC_H

#include <stdint.h>
#include "qh_assert.h"
#include "value.h"

typedef struct GcHeap GcHeap;
typedef struct GcHead {
    struct GcHead *next, *prev; /* in a heap's list; both NULL when untracked */
    GcHeap *heap;               /* the heap it is linked in, or NULL */
    intptr_t refs;              /* GC_IN_YOUNG or GC_IN_OLD outside a collection */
} GcHead;
/* bytes of the header before a tracked object (keeps malloc's 16-byte alignment) */
#define GC_HEAD 32

/* refs outside a collection: which generation (never a count) */
#define GC_IN_YOUNG INTPTR_MIN
#define GC_IN_OLD   (INTPTR_MIN + 1)
#define GC_YOUNG    16000 /* tracked objects made between collections */

struct GcHeap {
    GcHead young, old;     /* circular lists with sentinels */
    size_t nold;           /* objects in old (young ones: allocs) */
    size_t old_after_full; /* nold after the last full collection */
    size_t allocs;         /* tracked objects made since the last collection */
    bool paused;           /* objects made now are for another thread: untracked */
    bool collecting;
    unsigned long collections, freed;
};

/* initial-exec: one load off the thread pointer (the core library is
 * built position-independent, whose default TLS model calls a function) */
#define TLS_FAST __attribute__((tls_model("initial-exec")))
extern TLS_FAST _Thread_local GcHeap *gc_tls_heap; /* this thread's heap (gc.c) */

/* The heap, made on first use, after a collection if one is due. */
GcHeap *gc_heap_due(void);

static inline GcHead *gc_head_of(Obj *o) { return (GcHead *)o - 1; }
static inline void gc_list_unlink(GcHead *g)
{
    g->prev->next = g->next;
    g->next->prev = g->prev;
}
static inline void gc_list_append(GcHead *s, GcHead *g)
{
    g->prev = s->prev;
    g->next = s;
    s->prev->next = g;
    s->prev = g;
}

/* o was just made (its memory starts GC_HEAD bytes before it): link it
 * into this thread's heap, unless tracking is paused; may collect first. */
static inline void gc_track(Obj *o)
{
    GcHeap *h = gc_tls_heap;
    if (__builtin_expect(!h || h->allocs >= GC_YOUNG, 0)) h = gc_heap_due();
    GcHead *g = gc_head_of(o);
    g->refs = GC_IN_YOUNG;
    if (__builtin_expect(!h->paused, 1)) {
        g->heap = h;
        gc_list_append(&h->young, g);
        h->allocs++;
    } else {
        g->heap = NULL;
        g->next = g->prev = NULL;
    }
}

/* o is being freed or made immortal: out of its heap (this thread's). */
static inline void gc_untrack(Obj *o)
{
    GcHead *g = gc_head_of(o);
    if (!g->heap) return;
    qh_assert(g->heap == gc_tls_heap); /* freed by the thread whose heap holds it */
    if (g->refs == GC_IN_OLD) g->heap->nold--;
    gc_list_unlink(g);
    g->next = g->prev = NULL;
    g->heap = NULL;
}

#endif
