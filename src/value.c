/* value.c — objects, strings, lists, dicts, equality, printing, deep copy,
 * and the per-kind operation table. Must not know the evaluator, parser or
 * executor: kinds owned by other rooms plug in through their TypeOps. */
#include "value.h"
#include "gc.h"
#include "numfmt.h"
#include "qh_assert.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ---- the per-kind table ----
 * Filled at start-up before any thread exists (one-time init), read-only
 * afterwards. This room's kinds have names from the start; their other
 * slots come from the evaluator's registration. */
static const TypeOps nil_ops = { .name = "nil" }, bool_ops = { .name = "bool" },
                     num_ops = { .name = "number" }, builtin_ops = { .name = "function" },
                     unbound_ops = { .name = "unbound" }, exc_ops = { .name = "error" },
                     notimpl_ops = { .name = "not implemented" }, str_ops = { .name = "string" },
                     list_ops = { .name = "list", .flags = TF_TRACK },
                     dict_ops = { .name = "dict", .flags = TF_TRACK },
                     complex_ops = { .name = "complex" },
                     cell_ops = { .name = "cell", .flags = TF_TRACK },
                     slice_ops = { .name = "slice" };
static const TypeOps unregistered_ops = { .name = "?" };

const TypeOps *value_types[T_MAXTYPES] = {
    [T_NIL] = &nil_ops,
    [T_BOOL] = &bool_ops,
    [T_NUM] = &num_ops,
    [T_BUILTIN] = &builtin_ops,
    [T_UNBOUND] = &unbound_ops,
    [T_EXC] = &exc_ops,
    [T_NOTIMPL] = &notimpl_ops,
    [T_STR] = &str_ops,
    [T_LIST] = &list_ops,
    [T_DICT] = &dict_ops,
    [T_COMPLEX] = &complex_ops,
    [T_CELL] = &cell_ops,
    [T_SLICE] = &slice_ops,
    [T_FUNC] = &unregistered_ops,
    [T_MODULE] = &unregistered_ops,
    [T_ARRAY] = &unregistered_ops,
    [T_DEVICE] = &unregistered_ops,
    [T_OP] = &unregistered_ops,
    [T_FUTURE] = &unregistered_ops,
    [T_GRADFN] = &unregistered_ops,
};
unsigned char value_flags[T_MAXTYPES] = {
    [T_LIST] = TF_TRACK,
    [T_DICT] = TF_TRACK,
    [T_CELL] = TF_TRACK,
};
static unsigned next_tag = T_NTYPES;
atomic_long value_lazy_live;

void type_register(ValType t, const TypeOps *ops)
{
    if ((unsigned)t >= T_NTYPES || !ops || !ops->name || ops->flags > 0xff) {
        fputs("qh: bad type registration\n", stderr);
        abort();
    }
    value_types[t] = ops;
    value_flags[t] = (unsigned char)ops->flags;
}

ValType type_register_new(const TypeOps *ops)
{
    if (next_tag >= T_MAXTYPES || !ops || !ops->name || ops->flags > 0xff) {
        fputs("qh: too many value kinds\n", stderr);
        abort();
    }
    value_types[next_tag] = ops;
    value_flags[next_tag] = (unsigned char)ops->flags;
    return (ValType)next_tag++;
}

/* ---- small objects: per-thread free lists ----
 * Blocks of up to 136 bytes (16c + 8 for class c) freed by this room's kinds
 * wait on the freeing thread's list of their size for the next object of
 * that size, as CPython's allocator keeps them: a tree of small lists is
 * made and dropped without malloc. A block is always a malloc'd block of
 * exactly its class's size, so a list may hand it to any thread and
 * free() may take it; each list is bounded, and a thread's lists are
 * returned to malloc when the thread ends. */
#define SMALL_CLASSES 8
#define SMALL_KEEP    1024
/* Past the classes, the few last blocks of up to 1 KiB that a kind of
 * another room gave back by size (obj_dealloc_size: an operator, made and
 * dropped for every gate statement) wait for the next object of exactly
 * that size: the newest replaces the oldest. */
#define BIG_SLOTS 4
#define BIG_MAX   1024
typedef struct SmallBlock {
    struct SmallBlock *next;
} SmallBlock;
typedef struct SmallCache {
    SmallBlock *head[SMALL_CLASSES + 1];
    unsigned n[SMALL_CLASSES + 1];
    void *big[BIG_SLOTS];
    size_t bigsz[BIG_SLOTS]; /* 0: the slot is empty */
    unsigned bignext;        /* the slot the next block goes to when none is empty */
    bool keyed;
} SmallCache;
static _Thread_local SmallCache small;
static pthread_key_t small_key;
static pthread_once_t small_once = PTHREAD_ONCE_INIT;

static void small_release(void *unused)
{
    (void)unused;
    for (int c = 1; c <= SMALL_CLASSES; c++)
        while (small.head[c]) {
            SmallBlock *b = small.head[c];
            small.head[c] = b->next;
            free(b);
        }
    for (int i = 0; i < BIG_SLOTS; i++)
        if (small.bigsz[i]) free(small.big[i]);
    memset(&small, 0, sizeof small);
}
static void small_key_init(void) { pthread_key_create(&small_key, small_release); }

/* Class c holds blocks of 16c + 8 bytes: exactly what a glibc chunk of
 * 16c + 16 bytes gives (8 bytes of it are malloc's header), so rounding a
 * request up to its class costs no memory (rounding to 16c instead made a
 * 33-40 byte string take a 64-byte chunk, not 48: +30% resident on many
 * small strings). Objects are never smaller than 17 bytes. */
static inline size_t small_class(size_t size) { return size <= 24 ? 1 : (size + 7) >> 4; }
static inline size_t small_size(size_t c) { return (c << 4) + 8; }
/* the size a block for `size` bytes has: its class's, or `size` past the
 * classes. An object that grows in place (str_append) asks for this, so
 * that its block's size is the one free_one computes back from it. */
static inline size_t small_round(size_t size)
{
    size_t c = small_class(size);
    return c > SMALL_CLASSES ? size : small_size(c);
}

/* NULL when memory runs out (the caller decides: fatal or located) */
static inline void *small_alloc_try(size_t size)
{
    size_t c = small_class(size);
    if (c > SMALL_CLASSES) {
        if (size <= BIG_MAX)
            for (int i = 0; i < BIG_SLOTS; i++)
                if (small.bigsz[i] == size) {
                    void *p = small.big[i];
                    small.big[i] = NULL;
                    small.bigsz[i] = 0;
                    return p;
                }
        return malloc(size);
    }
    SmallBlock *b = small.head[c];
    if (!b) return malloc(small_size(c));
    qh_assert(small.n[c] > 0 && small.n[c] <= SMALL_KEEP); /* the list's count is its length */
    small.head[c] = b->next;
    small.n[c]--;
    return b;
}

/* The thread is about to keep a block: its lists and slots are released
   when it ends. */
static inline void small_keep(void)
{
    if (small.keyed) return;
    pthread_once(&small_once, small_key_init);
    pthread_setspecific(small_key, &small);
    small.keyed = true;
}

static inline void small_free(void *p, size_t size)
{
    size_t c = small_class(size);
    if (c > SMALL_CLASSES || small.n[c] >= SMALL_KEEP) {
        free(p);
        return;
    }
    small_keep();
    SmallBlock *b = p;
    b->next = small.head[c];
    small.head[c] = b;
    small.n[c]++;
}

/* a block past the classes into a slot (obj_dealloc_size) */
static void big_free(void *p, size_t size)
{
    if (size > BIG_MAX) {
        free(p);
        return;
    }
    small_keep();
    int at = -1;
    for (int i = 0; i < BIG_SLOTS && at < 0; i++)
        if (small.bigsz[i] == 0) at = i;
    if (at < 0) { /* all kept: the oldest goes */
        at = (int)(small.bignext++ % BIG_SLOTS);
        free(small.big[at]);
    }
    small.big[at] = p;
    small.bigsz[at] = size;
}

void value_thread_cleanup(void) { small_release(NULL); }

/* Kinds that can form cycles get the collector's header in front (gc.h). */
static Obj *obj_alloc_part_try(size_t size, size_t zeroed, ValType type)
{
    size_t head = (value_flags[type] & TF_TRACK) ? GC_HEAD : 0;
    char *p = small_alloc_try(head + size);
    if (!p) return NULL;
    Obj *o = (Obj *)(p + head);
    if (zeroed) memset(o, 0, zeroed);
    o->rc = 1;
    o->type = (uint8_t)type;
    if (head) gc_track(o);
    return o;
}

Obj *obj_alloc_part(size_t size, size_t zeroed, ValType type)
{
    Obj *o = obj_alloc_part_try(size, zeroed, type);
    if (__builtin_expect(!o, 0)) qh_out_of_memory();
    return o;
}

Obj *obj_alloc(size_t size, ValType type) { return obj_alloc_part(size, size, type); }

void obj_dealloc_size(Obj *o, size_t size)
{
    qh_assert(!(value_flags[o->type] & TF_TRACK) && small_class(size) > SMALL_CLASSES);
    big_free(o, size);
}

void obj_dealloc(Obj *o)
{
    if (!(value_flags[o->type] & TF_TRACK)) {
        free(o);
        return;
    }
    gc_untrack(o);
    free((char *)o - GC_HEAD);
}

/* this room's kinds: the block back to the small lists */
static inline void dealloc_sized(Obj *o, size_t size)
{
    if (value_flags[o->type] & TF_TRACK) {
        gc_untrack(o);
        small_free((char *)o - GC_HEAD, GC_HEAD + size);
    } else
        small_free(o, size);
}

void obj_make_immortal(Obj *o)
{
    o->rc = OBJ_IMMORTAL;
    if (value_flags[o->type] & TF_TRACK) gc_untrack(o); /* read by every thread, never collected */
}

/* Children whose count reaches zero while a parent is being freed wait
 * here, so freeing a million-deep nest of lists takes no deep recursion. */
static _Thread_local Obj *pending_small[64]; /* the common case: no allocation */
static _Thread_local Obj **pending;
static _Thread_local size_t npending, cappending;
static _Thread_local int freeing;

static void free_one(Obj *o);
/* a list whose elements still sit in its own allocation (list_new) */
static inline bool list_inline(const ObjList *l) { return l->v == (const Value *)(l + 1); }

void obj_free(Obj *o)
{
    if (value_flags[o->type] & TF_LEAF) {
        value_types[o->type]->free(o);
        return;
    } /* nothing inside */
    if (freeing) {
        if (npending == cappending) {
            if (!pending) {
                pending = pending_small;
                cappending = sizeof pending_small / sizeof pending_small[0];
            } else {
                size_t nc = cappending * 2;
                Obj **np = xmalloc(nc * sizeof(Obj *));
                memcpy(np, pending, npending * sizeof(Obj *));
                if (pending != pending_small) free(pending);
                pending = np;
                cappending = nc;
            }
        }
        pending[npending++] = o;
        return;
    }
    freeing = 1;
    free_one(o);
    while (npending) free_one(pending[--npending]);
    freeing = 0;
    if (pending != pending_small) free(pending);
    pending = NULL;
    cappending = 0;
}

/* Frees one object whose count reached zero, releasing what it holds. */
static void free_one(Obj *o)
{
    size_t size;
    switch (o->type) {
    case T_STR: size = sizeof(ObjStr) + ((ObjStr *)o)->cap + 1; break;
    case T_COMPLEX: size = sizeof(ObjComplex); break;
    case T_SLICE: {
        ObjSlice *sl = (ObjSlice *)o;
        decref(sl->lo);
        decref(sl->hi);
        decref(sl->step);
        size = sizeof(ObjSlice);
        break;
    }
    case T_LIST: {
        ObjList *l = (ObjList *)o;
        for (size_t i = 0; i < l->len; i++) decref(l->v[i]);
        if (list_inline(l))
            size = sizeof(ObjList) + l->cap * sizeof(Value);
        else {
            free(l->v);
            size = sizeof(ObjList) + l->icap * sizeof(Value);
        }
        break;
    }
    case T_DICT: {
        ObjDict *d = (ObjDict *)o;
        for (size_t i = 0; i < d->nent; i++)
            if (d->ent[i].live) {
                decref(d->ent[i].key);
                decref(d->ent[i].val);
            }
        free(d->ent);
        free(d->idx);
        size = sizeof(ObjDict);
        break;
    }
    case T_CELL:
        decref(((ObjCell *)o)->v);
        size = sizeof(ObjCell);
        break;
    default:
        if (value_types[o->type]->free) {
            value_types[o->type]->free(o);
            return;
        }
        obj_dealloc(o);
        return;
    }
    dealloc_sized(o, size);
}

bool obj_freeing(void) { return freeing != 0; }

/* ---- children: traversal and clearing ---- */

void value_traverse(Obj *o, void (*visit)(Value child, void *ud), void *ud)
{
    switch (o->type) {
    case T_LIST: {
        ObjList *l = (ObjList *)o;
        for (size_t i = 0; i < l->len; i++) visit(l->v[i], ud);
        return;
    }
    case T_DICT: {
        ObjDict *d = (ObjDict *)o;
        for (size_t i = 0; i < d->nent; i++)
            if (d->ent[i].live) {
                visit(d->ent[i].key, ud);
                visit(d->ent[i].val, ud);
            }
        return;
    }
    case T_CELL: visit(((ObjCell *)o)->v, ud); return;
    case T_SLICE: {
        ObjSlice *s = (ObjSlice *)o;
        visit(s->lo, ud);
        visit(s->hi, ud);
        visit(s->step, ud);
        return;
    }
    case T_STR:
    case T_COMPLEX: return;
    default:
        if (value_types[o->type]->traverse) value_types[o->type]->traverse(o, visit, ud);
    }
}

void value_clear(Obj *o)
{
    switch (o->type) {
    case T_LIST: {
        ObjList *l = (ObjList *)o;
        size_t k = l->len;
        l->len = 0;
        for (size_t j = 0; j < k; j++) decref(l->v[j]);
        return;
    }
    case T_DICT: {
        ObjDict *d = (ObjDict *)o;
        for (size_t j = 0; j < d->nent; j++)
            if (d->ent[j].live) {
                Value v = d->ent[j].val;
                d->ent[j].val = v_nil();
                decref(v);
            }
        return;
    }
    case T_CELL: {
        Value v = ((ObjCell *)o)->v;
        ((ObjCell *)o)->v = v_nil();
        decref(v);
        return;
    }
    case T_STR:
    case T_COMPLEX:
    case T_SLICE: return;
    default:
        if (value_types[o->type]->clear) value_types[o->type]->clear(o);
    }
}

/* Every object reachable from the roots that can hold references (seen
 * once, memo in a CopyCtx), then each one emptied. */
typedef struct Sweep {
    Obj **v;
    size_t n, cap;
    CopyCtx seen;
} Sweep;

static bool holds_refs(const Obj *o)
{
    switch (o->type) {
    case T_LIST:
    case T_DICT:
    case T_CELL: return true;
    case T_STR:
    case T_COMPLEX:
    case T_SLICE: return false;
    default: return value_types[o->type]->clear != NULL;
    }
}

static void sweep_visit(Value v, void *ud)
{
    Sweep *s = ud;
    if (!is_obj(v) || v.o->rc == OBJ_IMMORTAL || !holds_refs(v.o)) return;
    if (copy_memo_get(&s->seen, v.o)) return;
    copy_memo_put(&s->seen, v.o, v.o);
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->v = xrealloc(s->v, s->cap * sizeof(Obj *));
    }
    incref(v);
    s->v[s->n++] = v.o;
}

void value_break_cycles(const Value *roots, int nroots)
{
    Sweep s;
    memset(&s, 0, sizeof s);
    copy_init(&s.seen);
    for (int i = 0; i < nroots; i++) sweep_visit(roots[i], &s);
    /* the list grows as it is walked */
    for (size_t i = 0; i < s.n; i++) value_traverse(s.v[i], sweep_visit, &s);
    for (size_t i = 0; i < s.n; i++) value_clear(s.v[i]);
    for (size_t i = 0; i < s.n; i++) decref(v_obj(s.v[i]));
    free(s.v);
    copy_done(&s.seen);
}

/* ---- strings ---- */

uint32_t str_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

ObjStr *str_alloc_try(size_t n)
{
    if (n > 0xfffffff0u) return NULL;
    ObjStr *s = small_alloc_try(sizeof(ObjStr) + n + 1);
    if (!s) return NULL;
    s->h.rc = 1;
    s->h.type = T_STR;
    s->len = (uint32_t)n;
    s->cap = (uint32_t)n;
    s->nchars = -1;
    s->s[n] = 0;
    return s;
}

ObjStr *str_alloc(size_t n)
{
    qh_assert(n <= 0xfffffff0u);
    ObjStr *s = str_alloc_try(n);
    if (!s) qh_out_of_memory();
    return s;
}

ObjStr *str_append(ObjStr *s, const ObjStr *t)
{
    qh_assert(s->len <= s->cap && s->h.rc == 1); /* grown in place: only its owner sees it */
    size_t need = (size_t)s->len + t->len;
    if (need > 0xfffffff0u) return NULL;
    bool self = t == s; /* s += s: s may move below */
    if (need > s->cap) {
        size_t nc = need < 2 * (size_t)s->len ? 2 * (size_t)s->len : need;
        if (nc < 32) nc = 32;
        if (nc > 0xfffffff0u) nc = need;
        size_t total = small_round(sizeof(ObjStr) + nc + 1);
        nc = total - sizeof(ObjStr) - 1;
        ObjStr *g = realloc(s, total);
        if (!g) return NULL; /* s is unchanged */
        s = g;
        s->cap = (uint32_t)nc;
    }
    size_t tl = self ? s->len : t->len;
    memmove(s->s + s->len, self ? s->s : t->s, tl);
    uint32_t h = s->hash; /* FNV-1a goes on byte by byte */
    for (size_t i = 0; i < tl; i++) {
        h ^= (unsigned char)s->s[s->len + i];
        h *= 16777619u;
    }
    s->hash = h;
    if (self) {
        s->nchars = s->nchars >= 0 ? 2 * s->nchars : -1;
    } else {
        s->nchars = s->nchars >= 0 && t->nchars >= 0 ? s->nchars + t->nchars : -1;
        s->ascii = s->ascii && t->ascii;
    }
    s->len = (uint32_t)need;
    s->s[need] = 0;
    qh_assert(s->len <= s->cap);
    return s;
}

void str_finish(ObjStr *s)
{
    qh_assert(s->len <= s->cap);
    s->s[s->len] = 0;
    s->hash = str_hash(s->s, s->len);
    bool ascii = true;
    for (uint32_t i = 0; i < s->len; i++)
        if ((unsigned char)s->s[i] >= 0x80) {
            ascii = false;
            break;
        }
    s->ascii = ascii;
    s->nchars = ascii ? (int32_t)s->len : -1;
}

ObjStr *str_new(const char *p, size_t n)
{
    ObjStr *s = str_alloc(n);
    memcpy(s->s, p, n);
    str_finish(s);
    return s;
}
ObjStr *str_from(const char *p) { return str_new(p, strlen(p)); }
Value v_str(const char *s) { return v_obj(&str_from(s)->h); }
Value v_strn(const char *s, size_t n) { return v_obj(&str_new(s, n)->h); }

size_t str_nchars(ObjStr *s)
{
    if (s->nchars < 0) {
        size_t c = 0;
        for (uint32_t i = 0; i < s->len; i++)
            if (((unsigned char)s->s[i] & 0xc0) != 0x80) c++;
        s->nchars =
            (int32_t)c; /* only on thread-owned strings: immortal ones are counted at creation */
    }
    return (size_t)s->nchars;
}

size_t str_offset(ObjStr *s, size_t i)
{
    qh_assert(!s->ascii || i <= s->len);
    if (s->ascii) return i;
    size_t off = 0, c = 0;
    while (off < s->len) {
        if (((unsigned char)s->s[off] & 0xc0) != 0x80) {
            if (c == i) return off;
            c++;
        }
        off++;
    }
    return s->len;
}

bool str_eq(const ObjStr *a, const ObjStr *b)
{
    return a == b || (a->len == b->len && a->hash == b->hash && memcmp(a->s, b->s, a->len) == 0);
}

/* ---- lists ---- */

ObjList *list_new_try(size_t cap)
{
    /* one allocation: the header and room for cap elements (not zeroed) */
    if (cap > ((size_t)1 << 40)) return NULL;
    ObjList *l = (ObjList *)obj_alloc_part_try(sizeof(ObjList) + cap * sizeof(Value), 0, T_LIST);
    if (!l) return NULL;
    l->len = 0;
    l->cap = l->icap = cap;
    l->v = cap ? (Value *)(l + 1) : NULL;
    return l;
}

ObjList *list_new(size_t cap)
{
    ObjList *l = list_new_try(cap);
    if (!l) qh_out_of_memory();
    return l;
}

bool list_reserve(ObjList *l, size_t n)
{
    if (n <= l->cap) return true;
    size_t nc = l->cap ? l->cap * 2 : 4;
    if (nc < n) nc = n;
    if (nc > ((size_t)1 << 40)) return false;
    Value *nv;
    if (list_inline(l)) {
        nv = malloc(nc * sizeof(Value));
        if (!nv) return false;
        memcpy(nv, l->v, l->len * sizeof(Value));
    } else {
        nv = realloc(l->v, nc * sizeof(Value));
        if (!nv) return false;
    }
    l->v = nv;
    l->cap = nc;
    qh_assert(l->len <= l->cap && !list_inline(l));
    return true;
}

bool list_push_try(ObjList *l, Value v)
{
    qh_assert(l->len <= l->cap);
    if (l->len == l->cap && !list_reserve(l, l->len + 1)) return false;
    l->v[l->len++] = v;
    return true;
}

void list_push(ObjList *l, Value v)
{
    if (!list_push_try(l, v)) qh_out_of_memory();
}

Value v_list(ObjList *l) { return v_obj(&l->h); }

/* ---- dicts: insertion-ordered entries plus an open-addressed index ---- */

#define DICT_SMALL 8

ObjDict *dict_new(void) { return (ObjDict *)obj_alloc(sizeof(ObjDict), T_DICT); }

ObjDict *dict_new_sized(size_t n)
{
    ObjDict *d = dict_new();
    if (n && n <= DICT_SMALL) {
        d->cap = n;
        d->ent = xmalloc(n * sizeof(DictEnt));
    }
    return d;
}

bool key_ok(Value k)
{
    return k.t == T_NUM || k.t == T_STR || k.t == T_BOOL || value_types[k.t]->hash;
}

bool to_plain_number(Value *k)
{
    double d;
    if (k->t == T_NUM || !value_types[k->t]->number || !value_types[k->t]->number(*k, &d))
        return false;
    *k = v_num(d);
    return true;
}

uint32_t value_hash(Value v)
{
    switch (v.t) {
    case T_STR: return AS_STR(v)->hash;
    case T_BOOL: return v.b ? 0x9e3779b9u : 0x7f4a7c15u;
    case T_NUM: {
        double d = v.n == 0 ? 0.0 : v.n;
        uint64_t u;
        memcpy(&u, &d, sizeof u);
        u ^= u >> 33;
        u *= 0xff51afd7ed558ccdULL;
        u ^= u >> 33;
        return (uint32_t)u;
    }
    default: return value_types[v.t]->hash ? value_types[v.t]->hash(v) : 0;
    }
}

static bool key_eq(Value a, Value b)
{
    if (a.t != b.t) return false;
    switch (a.t) {
    case T_STR: return str_eq(AS_STR(a), AS_STR(b));
    case T_NUM: return a.n == b.n;
    case T_BOOL: return a.b == b.b;
    default: return value_types[a.t]->eq ? value_types[a.t]->eq(a, b) : a.o == b.o;
    }
}

/* Small dicts (up to DICT_SMALL entries) have no index: a scan of the
 * entries is faster than hashing into a table, and saves an allocation. */

static long dict_find(ObjDict *d, Value key, uint32_t h, size_t *slot)
{
    if (!d->idxcap) {
        if (slot) *slot = 0;
        for (size_t i = 0; i < d->nent; i++)
            if (d->ent[i].live && d->ent[i].hash == h && key_eq(d->ent[i].key, key)) return (long)i;
        return -1;
    }
    /* a power of two with a free slot left, so every probe ends */
    qh_assert((d->idxcap & (d->idxcap - 1)) == 0 && d->nent < d->idxcap);
    size_t mask = d->idxcap - 1, i = h & mask;
    for (;;) {
        int32_t e = d->idx[i];
        qh_assert(e >= -2 && e < (int32_t)d->nent);
        if (e == -1) {
            if (slot) *slot = i;
            return -1;
        }
        if (e >= 0 && d->ent[e].hash == h && key_eq(d->ent[e].key, key)) {
            if (slot) *slot = i;
            return e;
        }
        i = (i + 1) & mask;
    }
}

static bool dict_rebuild(ObjDict *d, size_t idxcap)
{
    int32_t *idx = malloc(idxcap * sizeof(int32_t));
    if (!idx) return false;
    /* compact the entries and rebuild the index */
    size_t j = 0;
    for (size_t i = 0; i < d->nent; i++)
        if (d->ent[i].live) d->ent[j++] = d->ent[i];
    d->nent = j;
    free(d->idx);
    d->idxcap = idxcap;
    d->idx = idx;
    for (size_t i = 0; i < idxcap; i++) d->idx[i] = -1;
    for (size_t i = 0; i < d->nent; i++) {
        size_t k = d->ent[i].hash & (idxcap - 1);
        while (d->idx[k] != -1) k = (k + 1) & (idxcap - 1);
        d->idx[k] = (int32_t)i;
    }
    qh_assert(d->nent == d->len); /* compacted: every entry is live */
    return true;
}

long dict_index(ObjDict *d, Value key) { return dict_find(d, key, value_hash(key), NULL); }

bool dict_get(ObjDict *d, Value key, Value *out)
{
    long e = dict_find(d, key, value_hash(key), NULL);
    if (e < 0) return false;
    *out = d->ent[e].val;
    return true;
}

bool dict_set_try(ObjDict *d, Value key, Value val)
{
    uint32_t h = value_hash(key);
    long e = dict_find(d, key, h, NULL);
    if (e >= 0) {
        incref(val);
        decref(d->ent[e].val);
        d->ent[e].val = val;
        return true;
    }
    if (d->idxcap ? (d->nent + 1) * 4 > d->idxcap * 3 : d->nent + 1 > DICT_SMALL) {
        size_t c = 16;
        while (c * 3 < (d->len + 1) * 4 * 2) c *= 2;
        if (!dict_rebuild(d, c)) return false;
    } else if (!d->idxcap && d->nent == d->cap && d->nent > d->len) {
        /* small and full of deleted entries: compact */
        size_t j = 0;
        for (size_t i = 0; i < d->nent; i++)
            if (d->ent[i].live) d->ent[j++] = d->ent[i];
        d->nent = j;
    }
    if (d->nent == d->cap) {
        size_t nc = d->cap ? d->cap * 2 : 4;
        DictEnt *ne = realloc(d->ent, nc * sizeof(DictEnt));
        if (!ne) return false;
        d->ent = ne;
        d->cap = nc;
    }
    incref(val);
    incref(key);
    d->ent[d->nent] = (DictEnt){ key, val, h, true };
    if (d->idxcap) {
        size_t slot;
        dict_find(d, key, h, &slot);
        d->idx[slot] = (int32_t)d->nent;
    }
    d->nent++;
    d->len++;
    qh_assert(d->len <= d->nent && d->nent <= d->cap);
    return true;
}

void dict_set(ObjDict *d, Value key, Value val)
{
    if (!dict_set_try(d, key, val)) qh_out_of_memory();
}

bool dict_del(ObjDict *d, Value key, Value *out)
{
    size_t slot;
    long e = dict_find(d, key, value_hash(key), &slot);
    if (e < 0) return false;
    qh_assert(d->len > 0 && d->ent[e].live);
    if (d->idxcap) d->idx[slot] = -2; /* tombstone */
    d->ent[e].live = false;
    decref(d->ent[e].key);
    *out = d->ent[e].val;
    d->len--;
    return true;
}

Value v_complex(double re, double im)
{
    ObjComplex *c = (ObjComplex *)obj_alloc(sizeof(ObjComplex), T_COMPLEX);
    c->re = re;
    c->im = im;
    return v_obj(&c->h);
}

ObjCell *cell_new(Value v)
{
    ObjCell *c = (ObjCell *)obj_alloc(sizeof(ObjCell), T_CELL);
    c->v = v;
    return c;
}

/* a slice bound as the slice keeps it: the plain value of a kind standing
 * for a number (the reference taken is dropped) */
static Value plain_bound(Value v)
{
    Value p = v;
    if (!to_plain_number(&p)) return v;
    decref(v);
    return p;
}

Value v_slice(Value lo, Value hi, Value step)
{
    ObjSlice *s = (ObjSlice *)obj_alloc(sizeof(ObjSlice), T_SLICE);
    s->lo = plain_bound(lo);
    s->hi = plain_bound(hi);
    s->step = plain_bound(step);
    return v_obj(&s->h);
}

/* ---- equality ---- */

static bool eq_rec(Value a, Value b, int depth);
bool value_eq(Value a, Value b) { return eq_rec(a, b, 0); }

/* equality, with nesting beyond 1000 levels compared by identity */
static bool eq_rec(Value a, Value b, int depth)
{
    if (a.t == T_NUM && b.t == T_NUM) return a.n == b.n;
    if ((a.t == T_NUM || a.t == T_COMPLEX) && (b.t == T_NUM || b.t == T_COMPLEX)) {
        double ar = a.t == T_NUM ? a.n : AS_CPLX(a)->re, ai = a.t == T_NUM ? 0 : AS_CPLX(a)->im;
        double br = b.t == T_NUM ? b.n : AS_CPLX(b)->re, bi = b.t == T_NUM ? 0 : AS_CPLX(b)->im;
        return ar == br && ai == bi;
    }
    if (a.t != b.t) return false;
    switch (a.t) {
    case T_NIL: return true;
    case T_BOOL: return a.b == b.b;
    case T_BUILTIN: return a.bi == b.bi;
    case T_STR: return str_eq(AS_STR(a), AS_STR(b));
    case T_LIST: {
        ObjList *x = AS_LIST(a), *y = AS_LIST(b);
        if (x == y) return true;
        if (x->len != y->len || depth > 1000) return false;
        for (size_t i = 0; i < x->len; i++)
            if (!eq_rec(x->v[i], y->v[i], depth + 1)) return false;
        return true;
    }
    case T_DICT: {
        ObjDict *x = AS_DICT(a), *y = AS_DICT(b);
        if (x == y) return true;
        if (x->len != y->len || depth > 1000) return false;
        for (size_t i = 0; i < x->nent; i++) {
            if (!x->ent[i].live) continue;
            Value o;
            if (!dict_get(y, x->ent[i].key, &o) || !eq_rec(x->ent[i].val, o, depth + 1))
                return false;
        }
        return true;
    }
    default:
        if (value_types[a.t]->eq) return value_types[a.t]->eq(a, b);
        return a.o == b.o;
    }
}

/* ---- buffers ---- */

void buf_init(Buf *b)
{
    b->p = NULL;
    b->len = b->cap = 0;
    b->failed = false;
}
bool buf_failed(const Buf *b) { return b->failed; }
/* room for n more bytes and the NUL; false (and the buffer marked) when
 * memory runs out: what follows is dropped, the caller reports it */
static bool buf_grow(Buf *b, size_t n)
{
    if (b->failed) return false;
    if (b->len + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 64;
        while (c < b->len + n + 1 && c < ((size_t)1 << 62)) c *= 2;
        char *p = c >= b->len + n + 1 ? realloc(b->p, c) : NULL;
        if (!p) {
            b->failed = true;
            return false;
        }
        b->p = p;
        b->cap = c;
    }
    return true;
}
void buf_put(Buf *b, const char *s, size_t n)
{
    if (!buf_grow(b, n)) return;
    qh_assert(b->len + n < b->cap);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}
void buf_puts(Buf *b, const char *s) { buf_put(b, s, strlen(s)); }
void buf_putc(Buf *b, char c) { buf_put(b, &c, 1); }
void buf_printf(Buf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0 && buf_grow(b, (size_t)n)) {
        vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}
void buf_free(Buf *b)
{
    free(b->p);
    buf_init(b);
}

/* ---- printing ---- */

const char *type_name(Value v) { return value_types[v.t]->name; }

static void repr_string(Buf *b, ObjStr *s)
{
    buf_putc(b, '"');
    for (uint32_t i = 0; i < s->len; i++) {
        unsigned char c = (unsigned char)s->s[i];
        switch (c) {
        case '"': buf_puts(b, "\\\""); break;
        case '\\': buf_puts(b, "\\\\"); break;
        case '\n': buf_puts(b, "\\n"); break;
        case '\t': buf_puts(b, "\\t"); break;
        case '\r': buf_puts(b, "\\r"); break;
        default:
            if (c < 0x20 || c == 0x7f)
                buf_printf(b, "\\x%02x", c);
            else
                buf_putc(b, (char)c);
        }
    }
    buf_putc(b, '"');
}

/* containers being printed, outermost first: a container met again prints
 * as [...] or {...} (cycles of any length) */
typedef struct ReprStack {
    const Obj *o;
    const struct ReprStack *up;
} ReprStack;
static bool repr_seen(const ReprStack *st, const Obj *o)
{
    int depth = 0;
    for (; st; st = st->up, depth++)
        if (st->o == o || depth > 500) return true;
    return false;
}
static void repr_rec(Buf *b, Value v, bool quoted, const ReprStack *st);

void value_repr(Buf *b, Value v, bool quoted) { repr_rec(b, v, quoted, NULL); }

static void repr_rec(Buf *b, Value v, bool quoted, const ReprStack *st)
{
    char tmp[NUMFMT_CBUF];
    switch (v.t) {
    case T_NIL: buf_puts(b, "nil"); break;
    case T_BOOL: buf_puts(b, v.b ? "true" : "false"); break;
    case T_NUM: {
        double d = v.n == 0 ? 0.0 : v.n; /* -0 prints as 0 */
        numfmt_double(tmp, d);
        buf_puts(b, tmp);
        break;
    }
    case T_COMPLEX:
        numfmt_complex(tmp, AS_CPLX(v)->re, AS_CPLX(v)->im);
        buf_puts(b, tmp);
        break;
    case T_STR:
        if (quoted)
            repr_string(b, AS_STR(v));
        else
            buf_put(b, AS_STR(v)->s, AS_STR(v)->len);
        break;
    case T_LIST: {
        ObjList *l = AS_LIST(v);
        if (repr_seen(st, v.o)) {
            buf_puts(b, "[...]");
            break;
        }
        ReprStack me = { v.o, st };
        buf_putc(b, '[');
        for (size_t i = 0; i < l->len; i++) {
            if (i) buf_puts(b, ", ");
            repr_rec(b, l->v[i], true, &me);
        }
        buf_putc(b, ']');
        break;
    }
    case T_DICT: {
        ObjDict *d = AS_DICT(v);
        if (repr_seen(st, v.o)) {
            buf_puts(b, "{...}");
            break;
        }
        ReprStack me = { v.o, st };
        buf_putc(b, '{');
        bool first = true;
        for (size_t i = 0; i < d->nent; i++) {
            if (!d->ent[i].live) continue;
            if (!first) buf_puts(b, ", ");
            first = false;
            repr_rec(b, d->ent[i].key, true, &me);
            buf_puts(b, ": ");
            repr_rec(b, d->ent[i].val, true, &me);
        }
        buf_putc(b, '}');
        break;
    }
    case T_SLICE: {
        ObjSlice *sl = AS_SLICE(v);
        buf_puts(b, "slice(");
        repr_rec(b, sl->lo, true, st);
        buf_puts(b, ", ");
        repr_rec(b, sl->hi, true, st);
        buf_puts(b, ", ");
        repr_rec(b, sl->step, true, st);
        buf_putc(b, ')');
        break;
    }
    default:
        if (value_types[v.t]->repr)
            value_types[v.t]->repr(b, v, quoted);
        else
            buf_printf(b, "<%s>", type_name(v));
    }
}

/* ---- deep copy ---- */

void copy_init(CopyCtx *cc)
{
    memset(cc, 0, sizeof *cc);
    cc->from = cc->sfrom; /* a small copy needs no allocation */
    cc->to = cc->sto;
    cc->cap = COPY_SMALL;
}
void copy_done(CopyCtx *cc)
{
    if (cc->from != cc->sfrom) {
        free(cc->from);
        free(cc->to);
    }
    cc->from = cc->to = NULL;
    cc->cap = cc->n = 0;
}

void copy_note_module(CopyCtx *cc, Obj *mod)
{
    if (cc->nmods == cc->capmods) {
        cc->capmods = cc->capmods ? cc->capmods * 2 : 4;
        cc->mods = xrealloc(cc->mods, cc->capmods * sizeof(Obj *));
    }
    mod->rc++;
    cc->mods[cc->nmods++] = mod;
}

void copy_move_modules(CopyCtx *dst, CopyCtx *cc)
{
    if (!dst->nmods) {
        /* the list itself moves */
        free(dst->mods);
        dst->mods = cc->mods;
        dst->nmods = cc->nmods;
        dst->capmods = cc->capmods;
        cc->mods = NULL;
        cc->nmods = cc->capmods = 0;
        return;
    }
    for (size_t i = 0; i < cc->nmods; i++) {
        copy_note_module(dst, cc->mods[i]);
        Value v = v_obj(cc->mods[i]);
        decref(v);
    }
    free(cc->mods);
    cc->mods = NULL;
    cc->nmods = cc->capmods = 0;
}

void copy_release_modules(CopyCtx *cc)
{
    for (size_t i = 0; i < cc->nmods; i++) {
        Value v = v_obj(cc->mods[i]);
        value_clear(cc->mods[i]);
        decref(v);
    }
    free(cc->mods);
    cc->mods = NULL;
    cc->nmods = cc->capmods = 0;
}

static size_t ptr_hash(const void *p)
{
    uintptr_t u = (uintptr_t)p;
    return (size_t)((u >> 4) * 0x9e3779b97f4a7c15ULL);
}

Obj *copy_memo_get(CopyCtx *cc, const void *from)
{
    if (!cc->cap) return NULL;
    qh_assert((cc->cap & (cc->cap - 1)) == 0 && cc->n * 2 <= cc->cap);
    size_t i = ptr_hash(from) & (cc->cap - 1);
    while (cc->from[i]) {
        if (cc->from[i] == from) return cc->to[i];
        i = (i + 1) & (cc->cap - 1);
    }
    return NULL;
}

void copy_memo_put(CopyCtx *cc, const void *from, void *to)
{
    if ((cc->n + 1) * 2 > cc->cap) {
        size_t ncap = cc->cap ? cc->cap * 2 : 16;
        void **nf = calloc(ncap, sizeof(void *)), **nt = calloc(ncap, sizeof(void *));
        if (!nf || !nt) {
            fputs("qh: out of memory\n", stderr);
            abort();
        }
        for (size_t i = 0; i < cc->cap; i++) {
            if (!cc->from[i]) continue;
            size_t j = ptr_hash(cc->from[i]) & (ncap - 1);
            while (nf[j]) j = (j + 1) & (ncap - 1);
            nf[j] = cc->from[i];
            nt[j] = cc->to[i];
        }
        if (cc->from != cc->sfrom) {
            free(cc->from);
            free(cc->to);
        }
        cc->from = nf;
        cc->to = nt;
        cc->cap = ncap;
    }
    qh_assert(from && (cc->n + 1) * 2 <= cc->cap); /* a free slot is left: the probe ends */
    size_t i = ptr_hash(from) & (cc->cap - 1);
    while (cc->from[i]) i = (i + 1) & (cc->cap - 1);
    cc->from[i] = (void *)from;
    cc->to[i] = to;
    cc->n++;
}

Value value_copy_deep(Value v, CopyCtx *cc)
{
    if (!is_obj(v)) return v;
    if (cc->depth > 2000) {
        cc->error = "a value nested more than 2000 levels deep";
        return v_nil();
    }
    if (v.o->rc == OBJ_IMMORTAL) return v; /* constants are shared, never counted */
    const TypeOps *ops = value_types[v.t];
    if (ops->flags & TF_CODE) {
        if (cc->share_code) {
            incref(v);
            return v;
        }
        if (cc->no_code) {
            cc->error = v.t == T_MODULE ? "a module" : "a function";
            return v_nil();
        }
    }
    Obj *seen = copy_memo_get(cc, v.o);
    if (seen) {
        Value r = v_obj(seen);
        incref(r);
        return r;
    }
    switch (v.t) {
    case T_STR: {
        ObjStr *s = AS_STR(v);
        ObjStr *n = str_alloc_try(s->len);
        if (!n) {
            cc->error = "a string (out of memory)";
            return v_nil();
        }
        memcpy(n->s, s->s, s->len);
        n->hash = s->hash;
        n->ascii = s->ascii;
        n->nchars = s->ascii ? (int32_t)s->len : -1;
        n->s[n->len] = 0;
        copy_memo_put(cc, s, n);
        return v_obj(&n->h);
    }
    case T_COMPLEX: return v_complex(AS_CPLX(v)->re, AS_CPLX(v)->im);
    case T_LIST: {
        ObjList *l = AS_LIST(v), *n = list_new_try(l->len);
        if (!n) {
            cc->error = "a list (out of memory)";
            return v_nil();
        }
        copy_memo_put(cc, l, n);
        cc->depth++;
        for (size_t i = 0; i < l->len; i++) n->v[n->len++] = value_copy_deep(l->v[i], cc);
        cc->depth--;
        return v_list(n);
    }
    case T_DICT: {
        ObjDict *d = AS_DICT(v), *n = dict_new();
        copy_memo_put(cc, d, n);
        cc->depth++;
        for (size_t i = 0; i < d->nent; i++) {
            if (!d->ent[i].live) continue;
            Value k = value_copy_deep(d->ent[i].key, cc), x = value_copy_deep(d->ent[i].val, cc);
            dict_set(n, k, x);
            decref(k);
            decref(x);
        }
        cc->depth--;
        return v_obj(&n->h);
    }
    case T_CELL: {
        ObjCell *c = cell_new(v_nil());
        copy_memo_put(cc, v.o, c);
        c->v = value_copy_deep(AS_CELL(v)->v, cc);
        return v_obj(&c->h);
    }
    case T_SLICE: {
        ObjSlice *sl = AS_SLICE(v);
        return v_slice(value_copy_deep(sl->lo, cc), value_copy_deep(sl->hi, cc),
                       value_copy_deep(sl->step, cc));
    }
    default:
        if ((ops->flags & TF_LAZY) && cc->on_future) return cc->on_future(v, cc);
        if (ops->copy) return ops->copy(v, cc);
        cc->error = ops->name;
        return v_nil();
    }
}
