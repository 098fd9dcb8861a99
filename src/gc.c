/* gc.c — the cycle collector of the value room (value.h, "Cycle
 * collection").
 *
 * Reference counting frees everything but cycles. Objects of the kinds
 * that can form cycles (TF_TRACK: lists, dicts, cells, functions, modules)
 * carry a GcHead in front of them and are linked into the heap of the
 * thread that made them. Each thread collects only its own heap: no list,
 * no count and no object of another thread's heap is ever touched (values
 * cross threads only as deep copies, made untracked and adopted by the
 * thread that uses them).
 *
 * A collection is CPython's trial deletion: each object's count, less the
 * references it gets from objects of the set being collected, is what the
 * rest of the program (stacks, frames, C code, other generations, other
 * kinds) holds; everything reachable from an object held that way lives,
 * the rest is cycles nobody can reach: emptied through the clear slot and
 * freed. Two generations: objects made since the last collection are young
 * and are collected every GC_YOUNG tracked allocations; survivors become
 * old, and the old are collected with the young once they have grown by
 * half since the last full collection, so the work per allocation stays
 * bounded however big the heap. Nothing here runs program code.
 *
 * Must not know the evaluator: it sees objects through value_traverse and
 * value_clear only. */
#include "gc.h"
#include "qh_assert.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(GcHead) == GC_HEAD, "GC_HEAD is the header's size");

#define GC_TENTATIVE  (-1)  /* in the set, found unreachable so far */
#define GC_FULL_SLACK 20000 /* old objects that never call for a full collection */

TLS_FAST _Thread_local GcHeap *gc_tls_heap;
static pthread_key_t heap_key;
static pthread_once_t heap_once = PTHREAD_ONCE_INIT;

static inline GcHead *head_of(Obj *o) { return gc_head_of(o); }
static inline Obj *obj_of(GcHead *g) { return (Obj *)(g + 1); }
static inline bool tracked_kind(unsigned t) { return (value_flags[t] & TF_TRACK) != 0; }

static void list_init(GcHead *s) { s->next = s->prev = s; }
/* the lists are circular and doubly linked: each neighbour points back */
static void list_unlink(GcHead *g)
{
    qh_assert(g->next->prev == g && g->prev->next == g);
    gc_list_unlink(g);
}
static void list_append(GcHead *s, GcHead *g)
{
    qh_assert(s->prev->next == s && s->next->prev == s);
    gc_list_append(s, g);
}
/* moves every element of from to the end of to */
static void list_splice(GcHead *to, GcHead *from)
{
    if (from->next == from) return;
    from->next->prev = to->prev;
    to->prev->next = from->next;
    from->prev->next = to;
    to->prev = from->prev;
    list_init(from);
}

static void heap_end(void *p);
static void key_init(void) { pthread_key_create(&heap_key, heap_end); }

static GcHeap *heap_get(void)
{
    if (__builtin_expect(gc_tls_heap != NULL, 1)) return gc_tls_heap;
    GcHeap *h = xcalloc(1, sizeof *h);
    list_init(&h->young);
    list_init(&h->old);
    gc_tls_heap = h;
    qh_assert(h->young.next == &h->young && h->old.next == &h->old);
    pthread_once(&heap_once, key_init);
    pthread_setspecific(heap_key, h);
    return h;
}

static void collect(GcHeap *h, bool full);

/* The heap, made on first use; a collection when GC_YOUNG tracked objects
 * were made since the last (the old too once they grew by half). Kept out
 * of line: the allocation's fast path stays short. */
GcHeap *gc_heap_due(void)
{
    GcHeap *h = heap_get();
    if (h->allocs >= GC_YOUNG)
        collect(h, h->nold > h->old_after_full + h->old_after_full / 2 + GC_FULL_SLACK);
    return h;
}

/* ---------------------------------------------------------------- collecting */

/* Is v an object of the set h is collecting? */
static inline GcHead *in_set(Value v, GcHeap *h)
{
    if (!is_obj(v) || !tracked_kind(v.t) || v.o->rc == OBJ_IMMORTAL) return NULL;
    GcHead *g = head_of(v.o);
    return g->heap == h && g->refs >= GC_TENTATIVE ? g : NULL;
}

static void visit_decref(Value child, void *ud)
{
    GcHead *g = in_set(child, ud);
    if (g && g->refs > 0) g->refs--;
}

typedef struct Reach {
    GcHeap *h;
    GcHead *set;
} Reach;

static void visit_reach(Value child, void *ud)
{
    Reach *r = ud;
    GcHead *g = in_set(child, r->h);
    if (!g) return;
    if (g->refs == 0)
        g->refs = 1;                    /* not scanned yet: it will be, as reachable */
    else if (g->refs == GC_TENTATIVE) { /* thought unreachable: back, to be scanned */
        list_unlink(g);
        list_append(r->set, g);
        g->refs = 1;
    }
}

static void collect(GcHeap *h, bool full)
{
    /* not while objects wait to be freed (their counts are 0 already) */
    if (h->collecting || h->paused || obj_freeing()) return;
    h->collecting = true;
    GcHead set, unreach;
    list_init(&set);
    list_init(&unreach);
    list_splice(&set, &h->young);
    if (full) {
        list_splice(&set, &h->old);
        h->nold = 0;
    }
    /* what the set holds of itself is subtracted from each count; every member is a live
     * object of a tracked kind of this heap, and this collection's own */
    for (GcHead *g = set.next; g != &set; g = g->next) {
        Obj *o = obj_of(g);
        qh_assert(g->heap == h && tracked_kind(o->type));
        qh_assert(o->rc > 0 && o->rc != OBJ_IMMORTAL);
        qh_assert(g->refs == GC_IN_YOUNG || g->refs == GC_IN_OLD);
        g->refs = o->rc;
    }
    for (GcHead *g = set.next; g != &set; g = g->next) value_traverse(obj_of(g), visit_decref, h);
    /* held from outside (refs > 0), or reachable from such: alive */
    Reach r = { h, &set };
    for (GcHead *g = set.next; g != &set;) {
        if (g->refs > 0) {
            value_traverse(obj_of(g), visit_reach, &r);
            g = g->next;
        } else {
            GcHead *next = g->next;
            list_unlink(g);
            list_append(&unreach, g);
            g->refs = GC_TENTATIVE;
            g = next;
        }
    }
    /* the living become old: each was held from outside or reached (refs > 0); the others
     * were all moved out, as found unreachable */
    size_t n = 0;
    for (GcHead *g = set.next; g != &set; g = g->next) {
        qh_assert(g->refs > 0);
        g->refs = GC_IN_OLD;
        n++;
    }
    list_splice(&h->old, &set);
    h->nold += n;
    if (full) h->old_after_full = h->nold;
    h->allocs = 0;
    h->collections++;
    /* the rest are cycles nobody can reach: each kept alive while all are
     * emptied, then let go (freeing unlinks them from the old list) */
    size_t ng = 0;
    for (GcHead *g = unreach.next; g != &unreach; g = g->next) {
        qh_assert(g->refs == GC_TENTATIVE);
        g->refs = GC_IN_OLD;
        ng++;
    }
    if (ng) {
        Obj **garbage = xmalloc(ng * sizeof(Obj *));
        size_t k = 0;
        for (GcHead *g = unreach.next; g != &unreach; g = g->next) garbage[k++] = obj_of(g);
        qh_assert(k == ng);
        list_splice(&h->old, &unreach);
        h->nold += ng;
        for (size_t i = 0; i < ng; i++) garbage[i]->rc++;
        for (size_t i = 0; i < ng; i++) value_clear(garbage[i]);
        for (size_t i = 0; i < ng; i++) decref(v_obj(garbage[i])); /* nold counts them down */
        free(garbage);
        h->freed += ng;
    }
    h->collecting = false;
}

void value_gc_collect(bool full) { collect(heap_get(), full); }

void value_gc_stats(ValueGcStats *out)
{
    GcHeap *h = heap_get();
    memset(out, 0, sizeof *out);
    out->collections = h->collections;
    out->freed = h->freed;
    for (GcHead *g = h->young.next; g != &h->young; g = g->next) out->tracked++;
    for (GcHead *g = h->old.next; g != &h->old; g = g->next) out->tracked++;
}

/* ---------------------------------------------------------------- threads */

void value_track_begin(void) { (void)heap_get(); }

bool value_track_pause(void)
{
    GcHeap *h = heap_get();
    bool was_on = !h->paused;
    h->paused = true;
    return was_on;
}

void value_track_resume(bool was_on) { heap_get()->paused = !was_on; }

/* the end of a task on this thread: what it left in cycles goes now */
void value_track_end(void) { collect(heap_get(), false); }

/* Links the untracked objects reachable from v (made for this thread by
 * another) into this thread's heap. */
static void adopt_visit(Value v, void *ud)
{
    GcHeap *h = ud;
    if (!is_obj(v) || v.o->rc == OBJ_IMMORTAL) return;
    if (tracked_kind(v.t)) {
        GcHead *g = head_of(v.o);
        if (g->heap) {
            qh_assert(g->heap == h); /* copies for this thread hold nothing of another heap */
            return;                  /* tracked already (here): seen */
        }
        qh_assert(g->next == NULL && g->prev == NULL); /* untracked: on no list */
        g->heap = h;
        g->refs = GC_IN_YOUNG;
        list_append(&h->young, g);
        h->allocs++;
    } else if (!value_types[v.t]->traverse && v.t != T_SLICE)
        return; /* holds nothing */
    value_traverse(v.o, adopt_visit, ud);
}

void value_track_adopt(Value v)
{
    GcHeap *h = heap_get();
    if (h->paused) return;
    adopt_visit(v, h);
}

/* A thread ends: its cycles are collected; whatever survives (held by
 * something outside, e.g. another thread's copy not yet released) is
 * untracked, so freeing it later touches no list of a heap that is gone. */
static void heap_end(void *p)
{
    GcHeap *h = p;
    qh_assert(!h->collecting);
    gc_tls_heap = h;
    h->paused = false;
    collect(h, true);
    GcHead *lists[2] = { &h->young, &h->old };
    for (int k = 0; k < 2; k++)
        while (lists[k]->next != lists[k]) {
            GcHead *g = lists[k]->next;
            list_unlink(g);
            g->next = g->prev = NULL;
            g->heap = NULL;
        }
    gc_tls_heap = NULL;
    free(h);
}

void value_gc_thread_end(void)
{
    if (!gc_tls_heap) return;
    GcHeap *h = gc_tls_heap;
    pthread_setspecific(heap_key, NULL);
    heap_end(h);
}
