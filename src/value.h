/* value.h — the values of qh and their reference-counted objects.
 *
 * A Value is a 16-byte tagged union; heap objects start with an Obj header
 * whose count is touched only by the thread that owns the value (the main
 * interpreter, or one task). Values cross threads only as deep copies
 * (value_copy_deep), so no count is ever shared. Objects made from source
 * constants are immortal (their count is never changed) because the AST is
 * read by every thread. Must not know the evaluator, parser or executor. */
#ifndef QH_VALUE_H
#define QH_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum ValType {
    T_NIL, T_BOOL, T_NUM, T_BUILTIN, T_UNBOUND, T_EXC,   /* immediate */
    T_STR, T_LIST, T_DICT, T_FUNC, T_COMPLEX, T_ARRAY, T_DEVICE, T_OP,
    T_MODULE, T_FUTURE, T_CELL, T_GRADFN, T_DUAL,         /* heap */
    T_NTYPES
} ValType;

typedef struct Obj {
    uint32_t rc;        /* OBJ_IMMORTAL: never counted, never freed */
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
    uint32_t len;       /* bytes */
    uint32_t hash;
    int32_t nchars;     /* code points, -1 until counted */
    bool ascii;
    char s[];           /* NUL-terminated */
} ObjStr;

typedef struct ObjList {
    Obj h;
    size_t len, cap;
    Value *v;
} ObjList;

typedef struct DictEnt { Value key, val; uint32_t hash; bool live; } DictEnt;
typedef struct ObjDict {
    Obj h;
    size_t len;         /* live entries */
    size_t nent, cap;   /* entries used (incl. deleted), capacity */
    DictEnt *ent;
    int32_t *idx;       /* open-addressed index into ent, -1 empty */
    size_t idxcap;      /* power of two */
} ObjDict;

typedef struct ObjComplex { Obj h; double re, im; } ObjComplex;

typedef struct ObjCell { Obj h; Value v; } ObjCell;

static inline Value v_nil(void) { Value v; v.t = T_NIL; v.o = NULL; return v; }
static inline Value v_bool(bool b) { Value v; v.t = T_BOOL; v.o = NULL; v.b = b; return v; }
static inline Value v_num(double n) { Value v; v.t = T_NUM; v.n = n; return v; }
static inline Value v_obj(Obj *o) { Value v; v.t = o->type; v.o = o; return v; }
static inline Value v_exc(void) { Value v; v.t = T_EXC; v.o = NULL; return v; }
static inline Value v_unbound(void) { Value v; v.t = T_UNBOUND; v.o = NULL; return v; }
static inline bool is_obj(Value v) { return v.t >= T_STR; }
#define IS_EXC(v) ((v).t == T_EXC)

void obj_free(Obj *o);
static inline void incref(Value v)
{
    if (v.t >= T_STR && v.o->rc != OBJ_IMMORTAL) v.o->rc++;
}
static inline void decref(Value v)
{
    if (v.t >= T_STR && v.o->rc != OBJ_IMMORTAL && --v.o->rc == 0) obj_free(v.o);
}

#define AS_STR(v) ((ObjStr *)(v).o)
#define AS_LIST(v) ((ObjList *)(v).o)
#define AS_DICT(v) ((ObjDict *)(v).o)
#define AS_CPLX(v) ((ObjComplex *)(v).o)
#define AS_CELL(v) ((ObjCell *)(v).o)

/* Allocation of a zeroed object of the given size and type (count 1). */
Obj *obj_alloc(size_t size, ValType type);
/* Turns a freshly made object into an immortal one (for AST constants). */
void obj_make_immortal(Obj *o);

/* strings */
uint32_t str_hash(const char *s, size_t n);
ObjStr *str_new(const char *s, size_t n);
ObjStr *str_from(const char *s);
ObjStr *str_alloc(size_t n);          /* caller fills s[0..n), then str_finish */
void str_finish(ObjStr *s);
Value v_str(const char *s);
Value v_strn(const char *s, size_t n);
size_t str_nchars(ObjStr *s);
/* byte offset of code point i (i <= nchars) */
size_t str_offset(ObjStr *s, size_t i);
bool str_eq(const ObjStr *a, const ObjStr *b);

/* lists */
ObjList *list_new(size_t cap);
void list_push(ObjList *l, Value v);  /* takes the reference */
Value v_list(ObjList *l);

/* dicts */
ObjDict *dict_new(void);
ObjDict *dict_new_sized(size_t n);   /* room for n entries */
bool dict_get(ObjDict *d, Value key, Value *out);   /* borrowed */
void dict_set(ObjDict *d, Value key, Value val);    /* increfs both */
bool dict_del(ObjDict *d, Value key, Value *out);   /* out: owned */
bool key_ok(Value k);                               /* numbers, strings, bools */

Value v_complex(double re, double im);
ObjCell *cell_new(Value v);

/* equality by value (==); numbers and complex compare numerically */
bool value_eq(Value a, Value b);
uint32_t value_hash(Value v);

/* growable byte buffer for printing */
typedef struct Buf { char *p; size_t len, cap; } Buf;
void buf_init(Buf *b);
void buf_put(Buf *b, const char *s, size_t n);
void buf_puts(Buf *b, const char *s);
void buf_putc(Buf *b, char c);
void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_free(Buf *b);

/* str(v) written into b; quoted: strings inside containers. Futures must
 * have been resolved by the caller (the printer knows nothing of waiting). */
void value_repr(Buf *b, Value v, bool quoted);
const char *type_name(Value v);

/* Hooks for object kinds that live in other rooms (functions, arrays,
 * operators, modules, futures): free, print and deep-copy. Registered once
 * at start-up by the evaluator before any thread exists. */
typedef struct CopyCtx CopyCtx;
typedef struct ObjHooks {
    void (*free)(Obj *o);
    void (*repr)(Buf *b, Value v);
    Value (*copy)(Value v, CopyCtx *cc);    /* deep copy into the copier's heap */
    bool (*eq)(Value a, Value b);
    void (*clear)(Obj *o);                  /* drop what it holds (breaking cycles), or NULL */
} ObjHooks;
void value_set_hooks(ValType t, const ObjHooks *h);
/* How a module empties its globals (copy_release_modules). */
void value_set_module_clear(void (*fn)(Obj *mod));

/* Cycle sweeping for a task: between begin and end, containers made on
 * this thread are remembered; at end every one still alive is garbage
 * (the task's result was copied out first) and is emptied, which frees
 * reference cycles counting cannot. pause stops remembering new ones. */
void value_track_begin(void);
bool value_track_pause(void);           /* returns whether it was on */
void value_track_resume(bool was_on);
void value_track_end(void);
void value_track_adopt(Value v);      /* containers made for the task elsewhere */

/* Deep copy for moving values between threads. The memo keeps shared
 * structure shared and cycles finite. Futures met inside are handed to
 * cc->on_future (the copier decides: record a dependency, or resolve). */
struct CopyCtx {
    void **from, **to;          /* memo, open addressing */
    size_t cap, n;
    void *user;
    /* modules copied (strong references): their globals hold functions
     * that hold them, a cycle the copier breaks with copy_release_modules
     * when the copies are no longer used */
    Obj **mods;
    size_t nmods, capmods;
    Value (*on_future)(Value fut, CopyCtx *cc);
    const char *error;          /* set when something cannot be copied */
    bool share_code;            /* same thread: functions and modules are shared, not copied */
    int depth;                  /* nesting of the value being copied */
    bool no_code;               /* functions and modules may not be copied (task results) */
};
void copy_init(CopyCtx *cc);
/* Frees the memo; the module list stays (see copy_release_modules). */
void copy_done(CopyCtx *cc);
/* Records a module copied by cc (a new reference is taken). */
void copy_note_module(CopyCtx *cc, Obj *mod);
/* Breaks the cycles of the modules cc copied (clears their globals) and
 * drops the references: call when nothing copied is in use any more. */
void copy_release_modules(CopyCtx *cc);
/* Moves cc's module list into dst (a CopyCtx kept for later release). */
void copy_move_modules(CopyCtx *dst, CopyCtx *cc);
Value value_copy_deep(Value v, CopyCtx *cc);
Obj *copy_memo_get(CopyCtx *cc, const void *from);
void copy_memo_put(CopyCtx *cc, const void *from, void *to);

#endif
