/* serial.c — the writer and reader of serial.h: numbering of objects for
 * back references, this room's kinds (nil, booleans, numbers, strings,
 * lists, dicts, complex numbers, cells, slices) inline, every other kind
 * through its TypeOps slots. Knows values only. */
#include "serial.h"
#include "qh_assert.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef enum { TAG_REF = 0xff } SerTag; /* an object written before: its number follows */
#define SER_MAX_DEPTH 2000              /* as deep copies */

void ser_init(SerCtx *sc, const void *code)
{
    memset(sc, 0, sizeof *sc);
    buf_init(&sc->out);
    copy_init(&sc->memo);
    sc->code = code;
}

void des_init(SerCtx *sc, const void *bytes, size_t len, const void *code)
{
    memset(sc, 0, sizeof *sc);
    buf_init(&sc->out);
    copy_init(&sc->memo);
    sc->in = bytes;
    sc->len = len;
    sc->code = code;
}

void ser_free(SerCtx *sc)
{
    buf_free(&sc->out);
    /* what a failed read made is garbage, cycles included */
    if (sc->failed && sc->nobjs) value_break_cycles(sc->objs, (int)sc->nobjs);
    copy_release_modules(&sc->memo); /* modules read and not moved elsewhere (func.c) */
    copy_done(&sc->memo);
    for (size_t i = 0; i < sc->nobjs; i++)
        if (!IS_EXC(sc->objs[i])) decref(sc->objs[i]);
    free(sc->objs);
    sc->objs = NULL;
    sc->nobjs = sc->capobjs = 0;
}

bool ser_fail(SerCtx *sc, const char *fmt, ...)
{
    if (sc->failed) return false;
    sc->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sc->error, sizeof sc->error, fmt, ap);
    va_end(ap);
    return false;
}

Value des_fail(SerCtx *sc, const char *what)
{
    ser_fail(sc, "malformed task data (%s)", what);
    return v_exc();
}

bool des_at_end(const SerCtx *sc) { return !sc->failed && sc->pos == sc->len; }

/* ---- primitives ---- */

void ser_bytes(SerCtx *sc, const void *p, size_t n)
{
    if (n) buf_put(&sc->out, p, n);
}
void ser_u8(SerCtx *sc, unsigned v)
{
    unsigned char c = (unsigned char)v;
    ser_bytes(sc, &c, 1);
}
void ser_u32(SerCtx *sc, uint32_t v) { ser_bytes(sc, &v, sizeof v); }
void ser_u64(SerCtx *sc, uint64_t v) { ser_bytes(sc, &v, sizeof v); }
void ser_f64(SerCtx *sc, double v) { ser_bytes(sc, &v, sizeof v); }
void ser_str(SerCtx *sc, const char *s, size_t n)
{
    qh_assert(n <= UINT32_MAX);
    ser_u32(sc, (uint32_t)n);
    ser_bytes(sc, s, n);
    ser_u8(sc, 0);
}

bool des_bytes(SerCtx *sc, void *p, size_t n)
{
    qh_assert(sc->pos <= sc->len); /* the reader never passes the end of its input */
    if (sc->failed) return false;
    if (n > sc->len - sc->pos) {
        des_fail(sc, "truncated");
        return false;
    }
    if (n) memcpy(p, sc->in + sc->pos, n);
    sc->pos += n;
    return true;
}
bool des_u8(SerCtx *sc, uint8_t *v) { return des_bytes(sc, v, 1); }
bool des_u32(SerCtx *sc, uint32_t *v) { return des_bytes(sc, v, sizeof *v); }
bool des_u64(SerCtx *sc, uint64_t *v) { return des_bytes(sc, v, sizeof *v); }
bool des_f64(SerCtx *sc, double *v) { return des_bytes(sc, v, sizeof *v); }

const char *des_str(SerCtx *sc, uint32_t *n)
{
    uint32_t len;
    if (!des_u32(sc, &len)) return NULL;
    if ((size_t)len + 1 > sc->len - sc->pos || sc->in[sc->pos + len] != 0) {
        des_fail(sc, "string");
        return NULL;
    }
    const char *s = (const char *)sc->in + sc->pos;
    sc->pos += (size_t)len + 1;
    qh_assert(sc->pos <= sc->len && s[len] == 0);
    if (n) *n = len;
    return s;
}

bool des_count(SerCtx *sc, uint64_t *n, size_t each)
{
    return des_u64(sc, n) && des_room(sc, *n, each);
}

bool des_room(SerCtx *sc, uint64_t n, size_t each)
{
    if (each && n > (sc->len - sc->pos) / each) {
        des_fail(sc, "count");
        return false;
    }
    qh_assert(!each || n * each <= sc->len - sc->pos); /* no count overflows what is left */
    return true;
}

void des_note(SerCtx *sc, size_t id, Obj *o)
{
    qh_assert(id < sc->nobjs && IS_EXC(sc->objs[id]));
    sc->objs[id] = v_obj(o);
    incref(sc->objs[id]);
}

/* ---- writing ---- */

static bool ser_obj(SerCtx *sc, Value v)
{
    switch (v.t) {
    case T_STR: ser_str(sc, AS_STR(v)->s, AS_STR(v)->len); return true;
    case T_COMPLEX:
        ser_f64(sc, AS_CPLX(v)->re);
        ser_f64(sc, AS_CPLX(v)->im);
        return true;
    case T_LIST: {
        ObjList *l = AS_LIST(v);
        ser_u64(sc, l->len);
        for (size_t i = 0; i < l->len; i++)
            if (!ser_value(sc, l->v[i])) return false;
        return true;
    }
    case T_DICT: {
        ObjDict *d = AS_DICT(v);
        ser_u64(sc, d->len);
        for (size_t i = 0; i < d->nent; i++) {
            if (!d->ent[i].live) continue;
            if (!ser_value(sc, d->ent[i].key) || !ser_value(sc, d->ent[i].val)) return false;
        }
        return true;
    }
    case T_CELL: return ser_value(sc, AS_CELL(v)->v);
    case T_SLICE:
        return ser_value(sc, AS_SLICE(v)->lo) && ser_value(sc, AS_SLICE(v)->hi) &&
               ser_value(sc, AS_SLICE(v)->step);
    default: {
        const TypeOps *ops = type_of(v);
        if (!ops->ser)
            return ser_fail(sc, "%s %s cannot be sent to another rank",
                            strchr("aeiou", ops->name[0]) ? "an" : "a", ops->name);
        return ops->ser(v, sc);
    }
    }
}

bool ser_value(SerCtx *sc, Value v)
{
    if (sc->failed) return false;
    switch (v.t) {
    case T_NIL:
    case T_UNBOUND: ser_u8(sc, v.t); return true;
    case T_BOOL:
        ser_u8(sc, v.t);
        ser_u8(sc, v.b);
        return true;
    case T_NUM:
        ser_u8(sc, v.t);
        ser_f64(sc, v.n);
        return true;
    case T_EXC:
    case T_NOTIMPL: return ser_fail(sc, "an internal marker cannot be sent");
    default: break;
    }
    if (!is_obj(v)) { /* an immediate kind of another room (builtins) */
        const TypeOps *ops = type_of(v);
        if (!ops->ser) return ser_fail(sc, "a %s cannot be sent to another rank", ops->name);
        ser_u8(sc, v.t);
        return ops->ser(v, sc);
    }
    Obj *seen = copy_memo_get(&sc->memo, v.o);
    if (seen) {
        ser_u8(sc, TAG_REF);
        ser_u64(sc, (uint64_t)((uintptr_t)seen - 1));
        return true;
    }
    if (sc->depth > SER_MAX_DEPTH)
        return ser_fail(sc, "a value nested more than %d levels deep cannot be sent",
                        SER_MAX_DEPTH);
    qh_assert(v.t < TAG_REF);
    copy_memo_put(&sc->memo, v.o, (void *)(uintptr_t)(++sc->nwritten));
    ser_u8(sc, v.t);
    sc->depth++;
    bool ok = ser_obj(sc, v);
    sc->depth--;
    return ok;
}

/* ---- reading ---- */

static Value des_list(SerCtx *sc, size_t id)
{
    uint64_t n;
    if (!des_count(sc, &n, 1)) return v_exc();
    ObjList *l = list_new((size_t)n);
    des_note(sc, id, &l->h);
    for (uint64_t i = 0; i < n; i++) {
        Value x = des_value(sc);
        if (IS_EXC(x)) {
            decref(v_list(l));
            return x;
        }
        l->v[l->len++] = x;
    }
    return v_list(l);
}

static Value des_dict(SerCtx *sc, size_t id)
{
    uint64_t n;
    if (!des_count(sc, &n, 2)) return v_exc();
    ObjDict *d = dict_new_sized((size_t)n);
    des_note(sc, id, &d->h);
    Value dv = v_obj(&d->h);
    for (uint64_t i = 0; i < n; i++) {
        Value k = des_value(sc);
        if (IS_EXC(k)) {
            decref(dv);
            return k;
        }
        Value x = des_value(sc);
        if (IS_EXC(x)) {
            decref(k);
            decref(dv);
            return x;
        }
        if (!key_ok(k)) {
            decref(k);
            decref(x);
            decref(dv);
            return des_fail(sc, "dict key");
        }
        dict_set(d, k, x);
        decref(k);
        decref(x);
    }
    return dv;
}

static Value des_obj(SerCtx *sc, ValType t, size_t id)
{
    switch ((int)t) { /* this room's kinds; every other, registered ones too, through TypeOps */
    case T_STR: {
        uint32_t n;
        const char *s = des_str(sc, &n);
        return s ? v_obj(&str_new(s, n)->h) : v_exc();
    }
    case T_COMPLEX: {
        double re, im;
        if (!des_f64(sc, &re) || !des_f64(sc, &im)) return v_exc();
        return v_complex(re, im);
    }
    case T_LIST: return des_list(sc, id);
    case T_DICT: return des_dict(sc, id);
    case T_CELL: {
        ObjCell *c = cell_new(v_nil());
        des_note(sc, id, &c->h);
        Value x = des_value(sc);
        if (IS_EXC(x)) {
            decref(v_obj(&c->h));
            return x;
        }
        c->v = x;
        return v_obj(&c->h);
    }
    case T_SLICE: {
        Value lo = des_value(sc), hi = des_value(sc), st = des_value(sc);
        if (IS_EXC(lo) || IS_EXC(hi) || IS_EXC(st)) {
            if (!IS_EXC(lo)) decref(lo);
            if (!IS_EXC(hi)) decref(hi);
            if (!IS_EXC(st)) decref(st);
            return v_exc();
        }
        return v_slice(lo, hi, st);
    }
    default: {
        const TypeOps *ops = type_ops(t);
        if (!ops || !ops->deser) return des_fail(sc, "kind");
        return ops->deser(sc, t, id);
    }
    }
}

Value des_value(SerCtx *sc)
{
    if (sc->failed) return v_exc();
    uint8_t t;
    if (!des_u8(sc, &t)) return v_exc();
    switch (t) {
    case T_NIL: return v_nil();
    case T_UNBOUND: return v_unbound();
    case T_BOOL: {
        uint8_t b;
        return des_u8(sc, &b) ? v_bool(b != 0) : v_exc();
    }
    case T_NUM: {
        double d;
        return des_f64(sc, &d) ? v_num(d) : v_exc();
    }
    case TAG_REF: {
        uint64_t k;
        if (!des_u64(sc, &k)) return v_exc();
        if (k >= sc->nobjs || IS_EXC(sc->objs[k])) return des_fail(sc, "reference");
        Value r = sc->objs[k];
        incref(r);
        return r;
    }
    default: break;
    }
    const TypeOps *ops = type_ops(t);
    if (t == T_EXC || t == T_NOTIMPL || !ops) return des_fail(sc, "tag");
    if (t < T_FIRST_OBJ) {
        if (!ops->deser) return des_fail(sc, "kind");
        return ops->deser(sc, (ValType)t, 0);
    }
    if (sc->depth > SER_MAX_DEPTH) return des_fail(sc, "depth");
    if (sc->nobjs == sc->capobjs) {
        sc->capobjs = sc->capobjs ? 2 * sc->capobjs : 64;
        sc->objs = xrealloc(sc->objs, sc->capobjs * sizeof(Value));
    }
    size_t id = sc->nobjs++;
    sc->objs[id] = v_exc();
    sc->depth++;
    Value v = des_obj(sc, (ValType)t, id);
    sc->depth--;
    if (IS_EXC(v)) {
        if (!sc->failed) des_fail(sc, "value");
        return v;
    }
    /* a kind may stand for another value (a finished future for its
       value): a later reference gets that value */
    if (IS_EXC(sc->objs[id])) {
        sc->objs[id] = v;
        incref(v);
    }
    return v;
}
