/* value.h — the values of qh, their reference-counted objects, and the
 * per-kind operation table (TypeOps) through which every kind is handled.
 *
 * A Value is a 16-byte tagged union; heap objects start with an Obj header
 * whose count is touched only by the thread that owns the value (the main
 * interpreter, or one task). Values cross threads only as deep copies
 * (value_copy_deep), so no count is ever shared. Objects made from source
 * constants are immortal (their count is never changed) because the AST is
 * read by every thread.
 *
 * This room owns strings, lists, dicts, complex numbers, cells and slices
 * and handles them inline; every other kind (functions, modules, arrays,
 * futures, ...) is described by the TypeOps its own room registers at
 * start-up. Must not know the evaluator, parser or executor: the slots that
 * evaluate take an opaque VM. */
#ifndef QH_VALUE_H
#define QH_VALUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qh_assert.h"

typedef enum ValType {
    T_NIL,
    T_BOOL,
    T_NUM,
    T_BUILTIN,
    T_UNBOUND,
    T_EXC,
    T_NOTIMPL, /* immediate */
    T_STR,
    T_LIST,
    T_DICT,
    T_COMPLEX,
    T_CELL,
    T_SLICE, /* heap: this room's kinds */
    T_FUNC,
    T_MODULE, /* heap: the evaluator's */
    T_ARRAY,
    T_DEVICE,
    T_OP,
    T_FUTURE,
    T_GRADFN, /* heap: other rooms' */
    T_NTYPES, /* tags from here on: type_register_new */
    T_MAXTYPES = 256
} ValType;
#define T_FIRST_OBJ T_STR

/* The operators of the language (the evaluator's dispatch and the kinds'
 * binop/unop slots speak them). */
typedef enum BinOp {
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_IDIV,
    OP_MOD,
    OP_POW,
    OP_MATMUL,
    OP_EQ,
    OP_NE,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE,
    OP_IN,
    OP_NOTIN,
    OP_NEG,
    OP_POS,
    OP_BAND,
    OP_BOR,
    OP_BXOR,
    OP_SHL,
    OP_SHR,    /* on integers below 2^53 (lang/values.md) */
    OP_INVERT, /* unary ~ */
    OP_NOPS
} BinOp;

typedef struct Obj {
    uint32_t rc; /* OBJ_IMMORTAL: never counted, never freed */
    uint8_t type;
} Obj;
#define OBJ_IMMORTAL 0xffffffffu

struct BuiltinDef;
typedef struct Value {
    uint8_t t;
    union {
        bool b;
        double n;
        Obj *o;
        const struct BuiltinDef *bi;
    };
} Value;

typedef struct ObjStr {
    Obj h;
    uint32_t len;   /* bytes */
    uint32_t hash;  /* FNV-1a of the bytes (str_append continues it) */
    int32_t nchars; /* code points, -1 until counted */
    uint32_t cap;   /* bytes s can hold before the NUL (>= len; str_append grows it) */
    bool ascii;
    char s[]; /* NUL-terminated */
} ObjStr;

/* A list made with a known length holds its elements in the same
 * allocation (v points just past the header) until it outgrows them. */
typedef struct ObjList {
    Obj h;
    size_t len, cap;
    Value *v;
    size_t icap; /* elements the allocation itself holds (list_new) */
} ObjList;

typedef struct DictEnt {
    Value key, val;
    uint32_t hash;
    bool live;
} DictEnt;
typedef struct ObjDict {
    Obj h;
    size_t len;       /* live entries */
    size_t nent, cap; /* entries used (incl. deleted), capacity */
    DictEnt *ent;
    int32_t *idx;  /* open-addressed index into ent, -1 empty */
    size_t idxcap; /* power of two */
} ObjDict;

typedef struct ObjComplex {
    Obj h;
    double re, im;
} ObjComplex;

typedef struct ObjCell {
    Obj h;
    Value v;
} ObjCell;

/* a[lo:hi:step] as the index slot sees it: numbers or nil, resolved */
typedef struct ObjSlice {
    Obj h;
    Value lo, hi, step;
} ObjSlice;

static inline Value v_nil(void)
{
    Value v;
    v.t = T_NIL;
    v.o = NULL;
    return v;
}
static inline Value v_bool(bool b)
{
    Value v;
    v.t = T_BOOL;
    v.o = NULL;
    v.b = b;
    return v;
}
static inline Value v_num(double n)
{
    Value v;
    v.t = T_NUM;
    v.n = n;
    return v;
}
static inline Value v_obj(Obj *o)
{
    qh_assert(o->type >= T_FIRST_OBJ); /* the tags below are immediate values */
    Value v;
    v.t = o->type;
    v.o = o;
    return v;
}
static inline Value v_exc(void)
{
    Value v;
    v.t = T_EXC;
    v.o = NULL;
    return v;
}
static inline Value v_unbound(void)
{
    Value v;
    v.t = T_UNBOUND;
    v.o = NULL;
    return v;
}
static inline Value v_notimpl(void)
{
    Value v;
    v.t = T_NOTIMPL;
    v.o = NULL;
    return v;
}
static inline bool is_obj(Value v) { return v.t >= T_FIRST_OBJ; }
#define IS_EXC(v) ((v).t == T_EXC)

/* d as an integer of magnitude below 2^53, the integers a double holds
 * exactly (what the bitwise operators take); false if it is not one. */
#define NUM_INT53 9007199254740992.0
static inline bool num_int53(double d, int64_t *out)
{
    if (!(d > -NUM_INT53 && d < NUM_INT53) || d != (double)(int64_t)d) return false;
    *out = (int64_t)d;
    return true;
}

void obj_free(Obj *o);
/* A live object has a count of at least 1: taking or dropping a reference to one at 0 is a
 * use after free (qh_assert, in debug and sanitizer builds). */
static inline void incref(Value v)
{
    if (v.t >= T_FIRST_OBJ && v.o->rc != OBJ_IMMORTAL) {
        qh_assert(v.o->rc > 0);
        v.o->rc++;
    }
}
static inline void decref(Value v)
{
    if (v.t >= T_FIRST_OBJ && v.o->rc != OBJ_IMMORTAL) {
        qh_assert(v.o->rc > 0);
        if (--v.o->rc == 0) obj_free(v.o);
    }
}

#define AS_STR(v)   ((ObjStr *)(v).o)
#define AS_LIST(v)  ((ObjList *)(v).o)
#define AS_DICT(v)  ((ObjDict *)(v).o)
#define AS_CPLX(v)  ((ObjComplex *)(v).o)
#define AS_CELL(v)  ((ObjCell *)(v).o)
#define AS_SLICE(v) ((ObjSlice *)(v).o)

/* Returns this thread's cache of small blocks to malloc (threads that
 * made values call it as they end; it also runs by itself then). */
void value_thread_cleanup(void);
/* Allocation of a zeroed object of the given size and type (count 1). */
Obj *obj_alloc(size_t size, ValType type);
/* Turns a freshly made object into an immortal one (for AST constants; it
 * is no longer collected). */
void obj_make_immortal(Obj *o);

/* strings */
uint32_t str_hash(const char *s, size_t n);
ObjStr *str_new(const char *s, size_t n);
ObjStr *str_from(const char *s);
ObjStr *str_alloc(size_t n); /* caller fills s[0..n), then str_finish */
void str_finish(ObjStr *s);

/* Memory: the functions that allocate (str_alloc, str_new, list_new,
 * list_push, dict_set, obj_alloc, ...) treat running out as fatal
 * ("qh: out of memory", exit 70): right for sizes the program does not
 * choose. Where the program chooses the size (repetition, concatenation,
 * growth by append or assignment, join, range ...) use the _try forms and
 * report a located "out of memory" (vm_oom). */
ObjStr *str_alloc_try(size_t n); /* NULL when out of memory (or n > 4 GiB) */
/* Appends n bytes to s in place, growing its capacity geometrically (so
 * `s += t` in a loop is amortised linear). Only for a string its caller
 * holds alone (count 1, not immortal): it may move, the result is the
 * string. NULL (s untouched) if the result would exceed 4 GiB or memory
 * runs out. */
ObjStr *str_append(ObjStr *s, const ObjStr *t);
Value v_str(const char *s);
Value v_strn(const char *s, size_t n);
size_t str_nchars(ObjStr *s);
/* byte offset of code point i (i <= nchars) */
size_t str_offset(ObjStr *s, size_t i);
bool str_eq(const ObjStr *a, const ObjStr *b);

/* lists */
ObjList *list_new(size_t cap);
void list_push(ObjList *l, Value v);     /* takes the reference */
ObjList *list_new_try(size_t cap);       /* NULL when out of memory */
bool list_push_try(ObjList *l, Value v); /* false (v still the caller's) when out of memory */
bool list_reserve(ObjList *l, size_t n); /* room for n elements in all; false when out of memory */
Value v_list(ObjList *l);

/* dicts */
ObjDict *dict_new(void);
ObjDict *dict_new_sized(size_t n);                   /* room for n entries */
bool dict_get(ObjDict *d, Value key, Value *out);    /* borrowed */
void dict_set(ObjDict *d, Value key, Value val);     /* increfs both */
bool dict_set_try(ObjDict *d, Value key, Value val); /* false (nothing taken) when out of memory */
bool dict_del(ObjDict *d, Value key, Value *out);    /* out: owned */
/* The entry index of key in d->ent, or -1 (for callers that cache it). */
long dict_index(ObjDict *d, Value key);
bool key_ok(Value k); /* numbers, strings, bools */
/* A value of a kind that stands for a real number (a number slot:
 * differentiated numbers), where only its value counts (a dict key, a
 * slice bound): *k becomes that plain number and true (the caller drops
 * its reference to the old value if it held one); false for any other
 * value, left as it is. */
bool to_plain_number(Value *k);

Value v_complex(double re, double im);
ObjCell *cell_new(Value v);
Value v_slice(Value lo, Value hi, Value step); /* takes the references */

/* equality by value (==); numbers and complex compare numerically */
bool value_eq(Value a, Value b);
uint32_t value_hash(Value v);

/* growable byte buffer for printing */
typedef struct Buf {
    char *p;
    size_t len, cap;
    bool failed;
} Buf;
void buf_init(Buf *b);
void buf_put(Buf *b, const char *s, size_t n);
void buf_puts(Buf *b, const char *s);
void buf_putc(Buf *b, char c);
void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_free(Buf *b);
/* Memory ran out while it grew: its contents are incomplete. */
bool buf_failed(const Buf *b);

/* str(v) written into b; quoted: strings inside containers. Futures must
 * have been resolved by the caller (the printer knows nothing of waiting). */
void value_repr(Buf *b, Value v, bool quoted);
const char *type_name(Value v);

/* ---- the per-kind operation table ----
 *
 * One TypeOps per kind, in the spirit of Lua's metatables. The kinds of this
 * room are handled inline by value.c and the evaluator's fast paths; their
 * entries carry the evaluator's slots only. Every other kind registers its
 * table from its own room at start-up (type_register for the tags named in
 * ValType, type_register_new for a kind nobody else needs to name), before
 * any thread exists; afterwards the table is read-only. A NULL slot means
 * "not supported": the dispatcher (types.h) gives the error.
 *
 * Lifecycle slots take no VM (decref may run anywhere). Evaluation slots
 * receive forced operands: a lazy kind (TF_LAZY, a future) is resolved by
 * the dispatcher through its force slot before any other slot sees it. */
typedef struct VM VM;
typedef struct Node Node;
typedef struct Args Args;
typedef struct CopyCtx CopyCtx;
typedef struct SerCtx SerCtx;

/* math builtins a kind may implement (abs(x), sqrt(x), ..., round(x, d)) */
typedef enum MathFn {
    M_ABS,
    M_SQRT,
    M_SIN,
    M_COS,
    M_TAN,
    M_ASIN,
    M_ACOS,
    M_ATAN,
    M_EXP,
    M_LOG,
    M_LOG2,
    M_LOG10,
    M_FLOOR,
    M_CEIL,
    M_ROUND,
    M_NFUNCS
} MathFn;
/* reductions a kind may implement (sum, min, max, mean with axis=) */
typedef enum ReduceFn { R_SUM, R_MIN, R_MAX, R_MEAN, R_NFUNCS } ReduceFn;

/* A walk over a collection: pos counts the elements handed out; aux is the
 * kind's own state (a snapshot, say), released by the dispatcher. */
typedef struct Iter {
    size_t pos;
    Value aux;
} Iter;

enum {
    TF_LAZY = 1,       /* stands for a value not known yet: force before reading */
    TF_CODE = 2,       /* functions and modules: shared or refused by copies (CopyCtx) */
    TF_TRACK = 4,      /* a container that may form cycles: tasks sweep it (value_track_*) */
    TF_DEVICE = 8,     /* can be a qfn's device (`qfn f() on DEVICE`) */
    TF_INTERCEPT = 16, /* builtins called with it go to its builtin slot first */
    TF_LEAF = 32,      /* holds no values (its free slot releases no reference, it is not
                           TF_TRACK): freed by that slot at once, no pending list */
};

typedef struct TypeOps {
    const char *name; /* what type() says */
    unsigned flags;   /* TF_* */
    /* ---- lifecycle (value.c) ---- */
    void (*free)(Obj *o);  /* release what it holds, then the object */
    void (*clear)(Obj *o); /* drop the references it holds (breaks cycles) */
    void (*traverse)(Obj *o, void (*visit)(Value child, void *ud), void *ud); /* its children */
    Value (*copy)(Value v, CopyCtx *cc); /* deep copy for another thread */
    /* bytes for another process (serial.h): write what v holds; read it back
     * (a new reference, or v_exc()). NULL: cannot be sent to another rank */
    bool (*ser)(Value v, SerCtx *sc);
    Value (*deser)(SerCtx *sc, ValType t, size_t id);
    void (*repr)(Buf *b, Value v, bool quoted); /* str(v) */
    bool (*eq)(Value a, Value b); /* a and b of this kind: equal values? (identity if NULL) */
    uint32_t (*hash)(Value v);    /* usable as a dict key (with eq) */
    bool (*number)(Value v,
                   double *out); /* stands for a real number (tracked numbers): its plain value */
    /* ---- evaluation (types.h dispatches; the VM reports errors) ---- */
    Value (*force)(VM *vm, Value v, const Node *site); /* TF_LAZY: the value, a new reference */
    /* a op b where a or b is of this kind: a new reference, v_exc() after an
     * error, or v_notimpl() to let the other operand's kind try */
    Value (*binop)(VM *vm, BinOp op, Value a, Value b, const Node *site);
    /* -a, +a, ~a (OP_NEG, OP_POS, OP_INVERT): a result, or v_notimpl() for
     * an operator the kind does not have (the caller reports it) */
    Value (*unop)(VM *vm, BinOp op, Value a, const Node *site);
    bool (*truthy)(Value v); /* true if NULL */
    /* obj[idx...]; isite[k] locates subscript k for messages (may be NULL) */
    Value (*index)(VM *vm, Value obj, int nidx, const Value *idx, const Node *site,
                   Node *const *isite);
    bool (*setindex)(VM *vm, Value obj, int nidx, const Value *idx, Value v, const Node *site,
                     Node *const *isite);
    bool (*len)(Value v, size_t *out);
    /* next element into *out (new reference): 1, or 0 at the end, -1 on error */
    int (*iter)(VM *vm, Value coll, Iter *it, Value *out, const Node *site);
    Value (*contains)(VM *vm, Value coll, Value x, const Node *site); /* x in coll: a bool */
    Value (*call)(VM *vm, Value fn, Args *a);
    Value (*member)(VM *vm, Value obj, const ObjStr *name, const Node *site);
    Value (*math)(VM *vm, MathFn fn, Value v, long arg, const Node *site); /* arg: round's digits */
    Value (*reduce)(VM *vm, ReduceFn fn, Value v, Args *a); /* a: the builtin's arguments */
    Value (*stmt)(VM *vm, Value v, const Node *site); /* the value as an expression statement */
    /* TF_INTERCEPT: a builtin called with a value of this kind among its
     * arguments (positional or keyword): the result, or v_notimpl() to let
     * the builtin run as usual (differentiated values: grad's tracked kinds) */
    Value (*builtin)(VM *vm, const struct BuiltinDef *bd, Args *a);
} TypeOps;

/* The table, indexed by tag; every tag a live value can carry has an entry.
 * value_flags mirrors each entry's flags (one load on hot paths). */
extern const TypeOps *value_types[T_MAXTYPES];
extern unsigned char value_flags[T_MAXTYPES];
/* every tag a value carries was registered (type_register, type_register_new) */
static inline const TypeOps *type_of(Value v)
{
    qh_assert(value_types[v.t] != NULL);
    return value_types[v.t];
}
static inline const TypeOps *type_ops(unsigned t)
{
    qh_assert(t < T_MAXTYPES);
    return value_types[t];
}
static inline bool is_lazy(Value v) { return (value_flags[v.t] & TF_LAZY) != 0; }
/* Objects of lazy kinds alive now, on any thread (their rooms count them in
 * and out). While it is zero no container can hold one, so the dispatcher
 * skips looking for them inside containers. */
extern atomic_long value_lazy_live;
/* Installs the table of a tag named in ValType (start-up only). */
void type_register(ValType t, const TypeOps *ops);
/* A new kind: its fresh tag (start-up only; aborts past T_MAXTYPES). */
ValType type_register_new(const TypeOps *ops);

/* Traversal and cycle breaking over any kind: the children of o (lists,
 * dicts, cells inline; others through their traverse slot), and dropping
 * them. */
void value_traverse(Obj *o, void (*visit)(Value child, void *ud), void *ud);
void value_clear(Obj *o);
/* Breaks every reference cycle reachable from the roots by clearing each
 * reachable object that can hold references once (at exit: nothing is in
 * use), so that releasing the roots frees everything. */
void value_break_cycles(const Value *roots, int nroots);

/* ---- cycle collection (gc.c) ----
 * Kinds that can form cycles (TF_TRACK) are tracked by the collector:
 * their objects carry a header in front (so a TF_TRACK kind's free slot
 * must release the object with obj_dealloc, never free) and are linked
 * into the heap of the thread that made them. Each thread collects its
 * own heap only (CPython's trial deletion through the traverse and clear
 * slots, two generations, run by allocation pressure): an object is
 * counted, changed and freed only by the thread whose heap holds it.
 * Values handed to another thread are deep copies made between
 * value_track_pause and value_track_resume (untracked), and that thread
 * links them into its heap with value_track_adopt. */
Obj *obj_alloc_part(size_t size, size_t zeroed,
                    ValType type); /* only the first zeroed bytes zeroed */
void obj_dealloc(Obj *o);          /* the memory of an object (a free slot's last step) */
bool obj_freeing(void);            /* objects wait to be freed on this thread now */
void value_track_begin(void);      /* a task starts on this thread */
bool value_track_pause(
    void); /* objects made from now on are untracked; returns whether it was on */
void value_track_resume(bool was_on);
void value_track_end(void); /* a task ended: collect what it left in cycles */
void value_track_adopt(
    Value v); /* link the untracked objects reachable from v into this thread's heap */
void value_gc_collect(bool full); /* collect this thread's heap now */
void value_gc_thread_end(void);   /* the thread ends: collect, untrack the rest */
typedef struct ValueGcStats {
    unsigned long collections, freed;
    size_t tracked;
} ValueGcStats;
void value_gc_stats(ValueGcStats *out);
/* obj_dealloc for an untracked object of more than 136 bytes made by
 * obj_alloc(size, ...): its block may serve the thread's next object of
 * that size (an operator per gate statement, without malloc) */
void obj_dealloc_size(Obj *o, size_t size);

/* Deep copy for moving values between threads. The memo keeps shared
 * structure shared and cycles finite. Futures met inside are handed to
 * cc->on_future (the copier decides: record a dependency, or resolve). */
#define COPY_SMALL 8
struct CopyCtx {
    void **from, **to; /* memo, open addressing (the inline arrays first) */
    size_t cap, n;
    void *sfrom[COPY_SMALL], *sto[COPY_SMALL];
    void *user;
    /* modules copied (strong references): their globals hold functions
     * that hold them, a cycle the copier breaks with copy_release_modules
     * when the copies are no longer used */
    Obj **mods;
    size_t nmods, capmods;
    Value (*on_future)(Value fut, CopyCtx *cc);
    const char *error; /* set when something cannot be copied */
    bool share_code;   /* same thread: functions and modules are shared, not copied */
    int depth;         /* nesting of the value being copied */
    bool no_code;      /* functions and modules may not be copied (task results) */
};
void copy_init(CopyCtx *cc);
/* Frees the memo; the module list stays (see copy_release_modules). A
 * CopyCtx points into itself: never copy one by value. */
void copy_done(CopyCtx *cc);
/* Records a module copied by cc (a new reference is taken). */
void copy_note_module(CopyCtx *cc, Obj *mod);
/* Breaks the cycles of the modules cc copied (clears them) and
 * drops the references: call when nothing copied is in use any more. */
void copy_release_modules(CopyCtx *cc);
/* Moves cc's module list into dst (a CopyCtx kept for later release). */
void copy_move_modules(CopyCtx *dst, CopyCtx *cc);
Value value_copy_deep(Value v, CopyCtx *cc);
Obj *copy_memo_get(CopyCtx *cc, const void *from);
void copy_memo_put(CopyCtx *cc, const void *from, void *to);

#endif
