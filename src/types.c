/* types.c — the dispatcher (types.h): forcing lazy values, operators by
 * the operands' kinds, truthiness, indexing, length, iteration, contains,
 * calls, members, printing with futures inside. Lists, dicts and strings
 * are handled here inline; every other kind through its TypeOps slots.
 * Knows values, the VM's errors and the builtin table. */
#include "types.h"
#include "qh_assert.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- forcing */

Value tp_force(VM *vm, Value v, const Node *site)
{
    if (!is_lazy(v)) {
        incref(v);
        return v;
    }
    Value r = type_of(v)->force(vm, v, site);
    while (!IS_EXC(r) && is_lazy(r)) { /* a future of a future */
        Value n = type_of(r)->force(vm, r, site);
        decref(r);
        r = n;
    }
    return r;
}

/* ---------------------------------------------------------------- futures inside containers */

static inline bool is_container(Value v) { return v.t == T_LIST || v.t == T_DICT; }

/* The walk of tp_resolve_in: the containers still to visit (a stack that
 * starts in small[] and grows on the heap) and those met already. */
typedef struct ResolveWalk {
    VM *vm;
    const Node *site;
    Value *st; /* small, or a heap block of cap values */
    size_t n, cap;
    Value small[32];
    CopyCtx seen;
} ResolveWalk;

/* one element slot: forced in place if lazy; a container to walk is pushed */
static bool resolve_slot(ResolveWalk *w, Value *slot)
{
    Value e = *slot;
    if (is_lazy(e)) {
        Value r = tp_force(w->vm, e, w->site);
        if (IS_EXC(r)) return false;
        *slot = r; /* the value a resolved future stands for */
        decref(e);
        e = r;
    }
    if (!is_container(e) || (e.t == T_LIST ? AS_LIST(e)->len == 0 : AS_DICT(e)->len == 0))
        return true;
    if (copy_memo_get(&w->seen, e.o)) return true; /* met before (shared, or a cycle) */
    copy_memo_put(&w->seen, e.o, e.o);
    qh_assert(w->n <= w->cap);
    if (w->n == w->cap) {
        size_t nc = w->cap * 2;
        Value *ns = xmalloc(nc * sizeof(Value));
        memcpy(ns, w->st, w->n * sizeof(Value));
        if (w->st != w->small) free(w->st);
        w->st = ns;
        w->cap = nc;
    }
    w->st[w->n++] = e;
    return true;
}

bool tp_resolve_in(VM *vm, Value v, const Node *site)
{
    if (!is_container(v) || atomic_load_explicit(&value_lazy_live, memory_order_relaxed) == 0)
        return true;
    ResolveWalk w;
    w.vm = vm;
    w.site = site;
    w.st = w.small;
    w.n = 0;
    w.cap = sizeof w.small / sizeof w.small[0];
    copy_init(&w.seen);
    w.st[w.n++] = v;
    bool ok = true;
    /* Borrowed references: nothing runs user code while futures are forced
     * (a task runs on its own copies), so no container here can be freed. */
    while (w.n && ok) {
        Value c = w.st[--w.n];
        qh_assert(is_container(c));
        if (c.t == T_LIST) {
            ObjList *l = AS_LIST(c);
            for (size_t i = 0; i < l->len && ok; i++) ok = resolve_slot(&w, &l->v[i]);
        } else {
            ObjDict *d = AS_DICT(c);
            for (size_t i = 0; i < d->nent && ok; i++)
                if (d->ent[i].live) ok = resolve_slot(&w, &d->ent[i].val);
        }
    }
    if (w.st != w.small) free(w.st);
    copy_done(&w.seen);
    return ok;
}

bool tp_force_args(VM *vm, Value *v, int n, const Node *site, Node *const *vsite, bool deep)
{
    for (int i = 0; i < n; i++) {
        const Node *at = vsite && vsite[i] ? vsite[i] : site;
        if (is_lazy(v[i])) {
            Value r = tp_force(vm, v[i], at);
            if (IS_EXC(r)) return false;
            decref(v[i]);
            v[i] = r;
        }
        if (deep && is_container(v[i]) && !tp_resolve_in(vm, v[i], at)) return false;
    }
    return true;
}

/* forces two operands; false (nothing held) on error */
static bool force2(VM *vm, Value *a, Value *b, const Node *site)
{
    Value fa = tp_force(vm, *a, site);
    if (IS_EXC(fa)) return false;
    Value fb = tp_force(vm, *b, site);
    if (IS_EXC(fb)) {
        decref(fa);
        return false;
    }
    *a = fa;
    *b = fb;
    return true;
}

/* ---------------------------------------------------------------- operators */

const char *op_symbol(BinOp op)
{
    static const char *const s[OP_NOPS] = {
        [OP_ADD] = "+",   [OP_SUB] = "-",  [OP_MUL] = "*",  [OP_DIV] = "/",
        [OP_IDIV] = "//", [OP_MOD] = "%",  [OP_POW] = "**", [OP_MATMUL] = "@",
        [OP_EQ] = "==",   [OP_NE] = "!=",  [OP_LT] = "<",   [OP_LE] = "<=",
        [OP_GT] = ">",    [OP_GE] = ">=",  [OP_IN] = "in",  [OP_NOTIN] = "not in",
        [OP_NEG] = "-",   [OP_POS] = "+",  [OP_BAND] = "&", [OP_BOR] = "|",
        [OP_BXOR] = "^",  [OP_SHL] = "<<", [OP_SHR] = ">>", [OP_INVERT] = "~",
    };
    qh_assert((unsigned)op < OP_NOPS && s[op]);
    return s[op];
}

Value tp_binop(VM *vm, BinOp op, Value a, Value b, const Node *site)
{
    if (is_lazy(a) || is_lazy(b)) {
        if (!force2(vm, &a, &b, site)) return v_exc();
        Value r = tp_binop(vm, op, a, b, site);
        decref(a);
        decref(b);
        return r;
    }
    if ((is_container(a) || is_container(b)) &&
        atomic_load_explicit(&value_lazy_live, memory_order_relaxed)) {
        /* the operator reads the elements, unless it only passes them along
         * (concatenation, repetition) or reads what it needs itself (`in`:
         * a dict's keys, a list's elements up to the first equal one) */
        bool along = (op == OP_ADD && a.t == T_LIST && b.t == T_LIST) ||
                     (op == OP_MUL &&
                      ((a.t == T_LIST && b.t == T_NUM) || (a.t == T_NUM && b.t == T_LIST))) ||
                     op == OP_IN || op == OP_NOTIN;
        if (!along && (!tp_resolve_in(vm, a, site) || !tp_resolve_in(vm, b, site))) return v_exc();
    }
    if (op == OP_IN || op == OP_NOTIN) {
        Value r = tp_contains(vm, b, a, site);
        if (op == OP_NOTIN && !IS_EXC(r)) r.b = !r.b;
        return r;
    }
    const TypeOps *ta = type_of(a), *tb = type_of(b);
    if (ta->binop) {
        Value r = ta->binop(vm, op, a, b, site);
        if (r.t != T_NOTIMPL) return r;
    }
    if (tb != ta && tb->binop) {
        Value r = tb->binop(vm, op, a, b, site);
        if (r.t != T_NOTIMPL) return r;
    }
    if (op == OP_EQ) return v_bool(value_eq(a, b));
    if (op == OP_NE) return v_bool(!value_eq(a, b));
    return vm_error(vm, site, "unsupported operand types for %s: %s and %s", op_symbol(op),
                    type_name(a), type_name(b));
}

Value tp_bit_error(VM *vm, BinOp op, double x, const Node *site)
{
    if (isnan(x) || isinf(x) || x == floor(x))
        return vm_error(vm, site, "bitwise %s needs integers of magnitude below 2**53, got %.17g",
                        op_symbol(op), x);
    return vm_error(vm, site, "bitwise %s needs integers, got %.17g", op_symbol(op), x);
}

Value tp_unop(VM *vm, BinOp op, Value a, const Node *site)
{
    qh_assert(op == OP_NEG || op == OP_POS || op == OP_INVERT);
    if (op == OP_INVERT && a.t == T_NUM) {
        int64_t k;
        if (!num_int53(a.n, &k)) return tp_bit_error(vm, op, a.n, site);
        return v_num((double)~k);
    }
    if (a.t == T_NUM) return v_num(op == OP_NEG ? -a.n : a.n);
    if (is_lazy(a)) {
        Value f = tp_force(vm, a, site);
        if (IS_EXC(f)) return f;
        Value r = tp_unop(vm, op, f, site);
        decref(f);
        return r;
    }
    /* the kinds' unop slots see -, + and ~ (not implemented: the error below) */
    const TypeOps *t = type_of(a);
    if (t->unop) {
        Value r = t->unop(vm, op, a, site);
        if (r.t != T_NOTIMPL) return r;
    }
    return vm_error(vm, site, "bad operand type for unary %s: %s", op_symbol(op), type_name(a));
}

bool tp_truthy(VM *vm, Value v, const Node *site, bool *err)
{
    switch (v.t) {
    case T_NIL: return false;
    case T_BOOL: return v.b;
    case T_NUM: return v.n != 0;
    case T_STR: return AS_STR(v)->len != 0;
    case T_LIST: return AS_LIST(v)->len != 0;
    case T_DICT: return AS_DICT(v)->len != 0;
    case T_COMPLEX: return AS_CPLX(v)->re != 0 || AS_CPLX(v)->im != 0;
    default: break;
    }
    if (is_lazy(v)) {
        Value r = tp_force(vm, v, site);
        if (IS_EXC(r)) {
            *err = true;
            return false;
        }
        bool t = tp_truthy(vm, r, site, err);
        decref(r);
        return t;
    }
    const TypeOps *t = type_of(v);
    return t->truthy ? t->truthy(v) : true;
}

/* ---------------------------------------------------------------- contains */

Value tp_contains(VM *vm, Value coll, Value x, const Node *site)
{
    if (is_lazy(x)) {
        Value fx = tp_force(vm, x, site);
        if (IS_EXC(fx)) return fx;
        Value r = tp_contains(vm, coll, fx, site);
        decref(fx);
        return r;
    }
    /* only what is compared is read: the value looked for, a list's
     * elements up to the first equal one, a dict's keys (never its values) */
    if (!tp_resolve_in(vm, x, site)) return v_exc();
    switch (coll.t) {
    case T_LIST: {
        ObjList *l = AS_LIST(coll);
        for (size_t i = 0; i < l->len; i++) {
            Value e = l->v[i];
            if (is_lazy(e)) {
                Value r = tp_force(vm, e, site);
                if (IS_EXC(r)) return r;
                if (!tp_resolve_in(vm, r, site)) {
                    decref(r);
                    return v_exc();
                }
                bool eq = value_eq(r, x);
                decref(r);
                if (eq) return v_bool(true);
                continue;
            }
            if (!tp_resolve_in(vm, e, site)) return v_exc();
            if (value_eq(l->v[i], x)) return v_bool(true);
        }
        return v_bool(false);
    }
    case T_DICT: {
        if (!key_ok(x) && !to_plain_number(&x)) return v_bool(false);
        Value o;
        return v_bool(dict_get(AS_DICT(coll), x, &o));
    }
    case T_STR:
        if (x.t != T_STR)
            return vm_error(vm, site, "'in <string>' needs a string on the left, not %s",
                            type_name(x));
        return v_bool(memmem(AS_STR(coll)->s, AS_STR(coll)->len, AS_STR(x)->s, AS_STR(x)->len) !=
                      NULL);
    default: break;
    }
    if (is_lazy(coll)) {
        Value c = tp_force(vm, coll, site);
        if (IS_EXC(c)) return c;
        Value r = tp_contains(vm, c, x, site);
        decref(c);
        return r;
    }
    const TypeOps *t = type_of(coll);
    if (t->contains) return t->contains(vm, coll, x, site);
    return vm_error(vm, site,
                    "'in' needs a collection (a list, dict, string or array) on the right, not %s",
                    type_name(coll));
}

/* ---------------------------------------------------------------- indexing */

bool num_to_index(VM *vm, Value v, long len, long *out, const Node *site, const char *what)
{
    double d;
    if (v.t == T_NUM)
        d = v.n;
    else if (!tp_number(v, &d)) {
        vm_error(vm, site, "%s index must be a number, not %s", what, type_name(v));
        return false;
    }
    if (d != floor(d) || !isfinite(d)) {
        vm_error(vm, site, "%s index must be an integer, got %g", what, d);
        return false;
    }
    double orig = d;
    if (d < 0) d += (double)len;
    if (d < 0 || d >= (double)len) {
        vm_error(vm, site, "%s index %g out of range (length %ld)", what, orig, len);
        return false;
    }
    *out = (long)d;
    qh_assert(*out >= 0 && *out < len);
    return true;
}

bool slice_indices(VM *vm, const ObjSlice *sl, long len, long *start, long *stop, long *st,
                   const Node *site)
{
    long s = 1;
    if (sl->step.t != T_NIL) {
        if (sl->step.t != T_NUM || sl->step.n != floor(sl->step.n) || sl->step.n == 0) {
            vm_error(vm, site, "slice step must be a nonzero integer");
            return false;
        }
        s = sl->step.n > 1e15 ? (long)1e15 : sl->step.n < -1e15 ? -(long)1e15 : (long)sl->step.n;
    }
    long a, b;
    Value bounds[2] = { sl->lo, sl->hi };
    long *outs[2] = { &a, &b };
    for (int i = 0; i < 2; i++) {
        Value x = bounds[i];
        if (x.t == T_NIL) {
            *outs[i] = i == 0 ? (s > 0 ? 0 : len - 1) : (s > 0 ? len : -1);
            continue;
        }
        if (x.t != T_NUM || x.n != floor(x.n)) {
            vm_error(vm, site, "slice bounds must be integers");
            return false;
        }
        double d = x.n;
        if (d < 0) d += (double)len;
        if (s > 0) {
            if (d < 0) d = 0;
            if (d > (double)len) d = (double)len;
        } else {
            if (d < -1) d = -1;
            if (d > (double)len - 1) d = (double)len - 1;
        }
        *outs[i] = (long)d;
    }
    /* Python's clamping: a forward slice runs within [0, len], a backward one within [-1,
     * len - 1], so every element it visits (a, a + s, ... short of b) is in range */
    qh_assert(s > 0 ? 0 <= a && a <= len && 0 <= b && b <= len
                    : -1 <= a && a < len && -1 <= b && b < len);
    *start = a;
    *stop = b;
    *st = s;
    return true;
}

static const Node *isite_at(Node *const *isite, int k, const Node *site)
{
    return isite && isite[k] ? isite[k] : site;
}

static Value key_missing(VM *vm, Value key, const Node *site)
{
    Buf b;
    buf_init(&b);
    value_repr(&b, key, true);
    vm_error(vm, site, "key %s not in dict", b.p);
    buf_free(&b);
    return v_exc();
}

static Value index_list(VM *vm, ObjList *l, Value i, const Node *site, const Node *isite)
{
    if (i.t == T_SLICE) {
        long a, b, s;
        if (!slice_indices(vm, AS_SLICE(i), (long)l->len, &a, &b, &s, site)) return v_exc();
        size_t n = s > 0 ? (b > a ? (size_t)((b - a + s - 1) / s) : 0)
                         : (a > b ? (size_t)((a - b - s - 1) / -s) : 0);
        ObjList *r = list_new_try(n);
        if (!r) return vm_oom(vm, site);
        for (long k = a; s > 0 ? k < b : k > b; k += s) {
            qh_assert(k >= 0 && (size_t)k < l->len);
            incref(l->v[k]);
            r->v[r->len++] = l->v[k];
        }
        qh_assert(r->len == n);
        return v_list(r);
    }
    long k;
    if (!num_to_index(vm, i, (long)l->len, &k, isite, "list")) return v_exc();
    incref(l->v[k]);
    return l->v[k];
}

static Value index_str(VM *vm, ObjStr *s, Value i, const Node *site, const Node *isite)
{
    long n = (long)str_nchars(s);
    if (i.t == T_SLICE) {
        long a, b, st;
        if (!slice_indices(vm, AS_SLICE(i), n, &a, &b, &st, site)) return v_exc();
        if (st == 1) {
            if (b < a) b = a;
            qh_assert(0 <= a && a <= b && b <= n);
            size_t o1 = str_offset(s, (size_t)a), o2 = str_offset(s, (size_t)b);
            return v_strn(s->s + o1, o2 - o1);
        }
        Buf bf;
        buf_init(&bf);
        for (long k = a; st > 0 ? k < b : k > b; k += st) {
            size_t o1 = str_offset(s, (size_t)k), o2 = str_offset(s, (size_t)k + 1);
            buf_put(&bf, s->s + o1, o2 - o1);
        }
        if (buf_failed(&bf)) {
            buf_free(&bf);
            return vm_oom(vm, site);
        }
        Value r = v_strn(bf.len ? bf.p : "", bf.len);
        buf_free(&bf);
        return r;
    }
    long k;
    if (!num_to_index(vm, i, n, &k, isite, "string")) return v_exc();
    size_t o1 = str_offset(s, (size_t)k), o2 = str_offset(s, (size_t)k + 1);
    qh_assert(o1 < o2 && o2 <= s->len); /* one whole UTF-8 character */
    return v_strn(s->s + o1, o2 - o1);
}

Value tp_index(VM *vm, Value obj, int nidx, const Value *idx, const Node *site, Node *const *isite)
{
    switch (obj.t) {
    case T_LIST:
        if (nidx == 1) return index_list(vm, AS_LIST(obj), idx[0], site, isite_at(isite, 0, site));
        if (nidx > 1) {
            /* nested lists: a[i, j] is a[i][j] */
            Value cur = obj;
            incref(cur);
            for (int k = 0; k < nidx; k++) {
                Value nx = tp_index(vm, cur, 1, idx + k, site, isite ? isite + k : NULL);
                decref(cur);
                if (IS_EXC(nx)) return nx;
                cur = nx;
            }
            return cur;
        }
        break;
    case T_DICT:
        if (nidx != 1) break;
        if (idx[0].t == T_SLICE) return vm_error(vm, site, "a dict cannot be sliced");
        Value key = idx[0];
        if (!key_ok(key) && !to_plain_number(&key))
            return vm_error(vm, isite_at(isite, 0, site),
                            "dict keys are numbers, strings or bools, not %s", type_name(key));
        Value out;
        if (!dict_get(AS_DICT(obj), key, &out))
            return key_missing(vm, key, isite_at(isite, 0, site));
        incref(out);
        return out;
    case T_STR:
        if (nidx == 1) return index_str(vm, AS_STR(obj), idx[0], site, isite_at(isite, 0, site));
        break;
    default: {
        if (is_lazy(obj)) {
            Value r = tp_force(vm, obj, site);
            if (IS_EXC(r)) return r;
            Value x = tp_index(vm, r, nidx, idx, site, isite);
            decref(r);
            return x;
        }
        const TypeOps *t = type_of(obj);
        if (t->index) return t->index(vm, obj, nidx, idx, site, isite);
        return vm_error(vm, site, "%s is not indexable", type_name(obj));
    }
    }
    return vm_error(vm, site, "a %s takes one index, not %d", type_name(obj), nidx);
}

bool tp_setindex(VM *vm, Value obj, int nidx, const Value *idx, Value v, const Node *site,
                 Node *const *isite)
{
    switch (obj.t) {
    case T_LIST:
    case T_DICT:
        if (nidx != 1) {
            vm_error(vm, site, "a %s takes one index, not %d", type_name(obj), nidx);
            return false;
        }
        if (idx[0].t == T_SLICE) {
            vm_error(vm, site, "slice assignment is only for arrays");
            return false;
        }
        if (obj.t == T_LIST) {
            ObjList *l = AS_LIST(obj);
            long k;
            if (!num_to_index(vm, idx[0], (long)l->len, &k, isite_at(isite, 0, site), "list"))
                return false;
            incref(v);
            Value old = l->v[k];
            l->v[k] = v;
            decref(old);
            return true;
        }
        Value key = idx[0];
        if (!key_ok(key) && !to_plain_number(&key)) {
            vm_error(vm, isite_at(isite, 0, site),
                     "dict keys are numbers, strings or bools, not %s", type_name(key));
            return false;
        }
        if (!dict_set_try(AS_DICT(obj), key, v)) {
            vm_oom(vm, site);
            return false;
        }
        return true;
    case T_STR:
        if (nidx != 1) {
            vm_error(vm, site, "a %s takes one index, not %d", type_name(obj), nidx);
            return false;
        }
        if (idx[0].t == T_SLICE) {
            vm_error(vm, site, "slice assignment is only for arrays");
            return false;
        }
        vm_error(vm, site, "strings are immutable");
        return false;
    default: {
        if (is_lazy(obj)) {
            Value r = tp_force(vm, obj, site);
            if (IS_EXC(r)) return false;
            bool ok = tp_setindex(vm, r, nidx, idx, v, site, isite);
            decref(r);
            return ok;
        }
        const TypeOps *t = type_of(obj);
        if (t->setindex) {
            /* other kinds read the value they store (arrays hold numbers) */
            Value fv = v;
            incref(fv);
            if (!tp_force_args(vm, &fv, 1, site, NULL, true)) {
                decref(fv);
                return false;
            }
            bool ok = t->setindex(vm, obj, nidx, idx, fv, site, isite);
            decref(fv);
            return ok;
        }
        if (nidx != 1) {
            vm_error(vm, site, "a %s takes one index, not %d", type_name(obj), nidx);
            return false;
        }
        if (idx[0].t == T_SLICE) {
            vm_error(vm, site, "slice assignment is only for arrays");
            return false;
        }
        vm_error(vm, site, "%s does not support element assignment", type_name(obj));
        return false;
    }
    }
}

bool tp_len(Value v, size_t *out)
{
    switch (v.t) {
    case T_STR: *out = str_nchars(AS_STR(v)); return true;
    case T_LIST: *out = AS_LIST(v)->len; return true;
    case T_DICT: *out = AS_DICT(v)->len; return true;
    default: {
        const TypeOps *t = type_of(v);
        return t->len && t->len(v, out);
    }
    }
}

/* ---------------------------------------------------------------- iteration */

bool tp_iter_begin(VM *vm, Value coll, Iter *it, const Node *site)
{
    it->pos = 0;
    it->aux = v_nil();
    switch (coll.t) {
    case T_LIST:
    case T_STR: return true;
    case T_DICT: {
        /* a snapshot of the keys: the body may change the dict */
        ObjDict *d = AS_DICT(coll);
        ObjList *keys = list_new_try(d->len);
        if (!keys) {
            vm_oom(vm, site);
            return false;
        }
        for (size_t i = 0; i < d->nent; i++)
            if (d->ent[i].live) {
                incref(d->ent[i].key);
                keys->v[keys->len++] = d->ent[i].key;
            }
        it->aux = v_list(keys);
        return true;
    }
    default:
        if (type_of(coll)->iter) return true;
        vm_error(vm, site, "cannot iterate over %s", type_name(coll));
        return false;
    }
}

int tp_iter_next(VM *vm, Value coll, Iter *it, Value *out, const Node *site)
{
    switch (coll.t) {
    case T_LIST: {
        ObjList *l = AS_LIST(coll);
        if (it->pos >= l->len) return 0;
        *out = l->v[it->pos++];
        incref(*out);
        return 1;
    }
    case T_STR: {
        ObjStr *s = AS_STR(coll);
        size_t off = it->pos; /* a byte offset */
        if (off >= s->len) return 0;
        size_t e = off + 1;
        while (e < s->len && ((unsigned char)s->s[e] & 0xc0) == 0x80) e++;
        *out = v_strn(s->s + off, e - off);
        it->pos = e;
        return 1;
    }
    case T_DICT: {
        ObjList *keys = AS_LIST(it->aux);
        if (it->pos >= keys->len) return 0;
        *out = keys->v[it->pos++];
        incref(*out);
        return 1;
    }
    default: return type_of(coll)->iter(vm, coll, it, out, site);
    }
}

void tp_iter_end(Iter *it)
{
    decref(it->aux);
    it->aux = v_nil();
}

/* ---------------------------------------------------------------- calls and members */

Value tp_call(VM *vm, Value fn, Args *a)
{
    const TypeOps *t = type_of(fn);
    if (t->call) return t->call(vm, fn, a);
    if (is_lazy(fn)) {
        Value r = tp_force(vm, fn, a->site);
        if (IS_EXC(r)) return r;
        Value x = tp_call(vm, r, a);
        decref(r);
        return x;
    }
    return vm_error(vm, a->site, "%s is not callable", type_name(fn));
}

Value vm_call(VM *vm, Value fn, int nargs, Value *args, Node *site)
{
    Args a = { nargs, args, 0, NULL, NULL, site, NULL };
    return tp_call(vm, fn, &a);
}

Value tp_member(VM *vm, Value obj, const ObjStr *name, const Node *site)
{
    if (is_lazy(obj)) {
        Value r = tp_force(vm, obj, site);
        if (IS_EXC(r)) return r;
        Value x = tp_member(vm, r, name, site);
        decref(r);
        return x;
    }
    const TypeOps *t = type_of(obj);
    if (t->member) return t->member(vm, obj, name, site);
    return vm_error(vm, site, "%s has no member '%s'", type_name(obj), name->s);
}

/* ---------------------------------------------------------------- numbers and math */

bool tp_number(Value v, double *out)
{
    if (v.t == T_NUM) {
        *out = v.n;
        return true;
    }
    const TypeOps *t = type_of(v);
    return t->number && t->number(v, out);
}

bool as_complex(Value v, double *re, double *im)
{
    if (v.t == T_NUM) {
        *re = v.n;
        *im = 0;
        return true;
    }
    if (v.t == T_COMPLEX) {
        *re = AS_CPLX(v)->re;
        *im = AS_CPLX(v)->im;
        return true;
    }
    return false;
}

Value tp_math(VM *vm, MathFn fn, Value v, long arg, const Node *site)
{
    qh_assert((unsigned)fn < M_NFUNCS);
    const TypeOps *t = type_of(v);
    return t->math ? t->math(vm, fn, v, arg, site) : v_notimpl();
}

bool tp_intercepts(const Args *a)
{
    for (int i = 0; i < a->n + a->nkw; i++) {
        Value v = i < a->n ? a->v[i] : a->kw[i - a->n];
        if (v.t >= T_FIRST_OBJ && (type_of(v)->flags & TF_INTERCEPT)) return true;
    }
    return false;
}

Value tp_builtin(VM *vm, const struct BuiltinDef *bd, Args *a)
{
    for (int i = 0; i < a->n + a->nkw; i++) {
        Value v = i < a->n ? a->v[i] : a->kw[i - a->n];
        const TypeOps *t = type_of(v);
        if (v.t >= T_FIRST_OBJ && (t->flags & TF_INTERCEPT) && t->builtin)
            return t->builtin(vm, bd, a);
    }
    return v_notimpl();
}

Value tp_reduce(VM *vm, ReduceFn fn, Value v, Args *a)
{
    qh_assert((unsigned)fn < R_NFUNCS);
    const TypeOps *t = type_of(v);
    return t->reduce ? t->reduce(vm, fn, v, a) : v_notimpl();
}

/* ---------------------------------------------------------------- printing */

typedef struct ReprUp {
    const Obj *o;
    const struct ReprUp *up;
} ReprUp;

static bool repr_rec(VM *vm, Buf *b, Value v, bool quoted, const Node *site, const ReprUp *st)
{
    int depth = 0;
    for (const ReprUp *u = st; u; u = u->up, depth++)
        if ((is_obj(v) && u->o == v.o) || depth > 500) {
            buf_puts(b, v.t == T_DICT ? "{...}" : "[...]");
            return true;
        }
    switch (v.t) {
    case T_LIST: {
        ObjList *l = AS_LIST(v);
        ReprUp me = { v.o, st };
        buf_putc(b, '[');
        for (size_t i = 0; i < l->len; i++) {
            if (i) buf_puts(b, ", ");
            if (!repr_rec(vm, b, l->v[i], true, site, &me)) return false;
        }
        buf_putc(b, ']');
        return true;
    }
    case T_DICT: {
        ObjDict *d = AS_DICT(v);
        ReprUp me = { v.o, st };
        buf_putc(b, '{');
        bool first = true;
        for (size_t i = 0; i < d->nent; i++) {
            if (!d->ent[i].live) continue;
            if (!first) buf_puts(b, ", ");
            first = false;
            value_repr(b, d->ent[i].key, true);
            buf_puts(b, ": ");
            if (!repr_rec(vm, b, d->ent[i].val, true, site, &me)) return false;
        }
        buf_putc(b, '}');
        return true;
    }
    default:
        if (is_lazy(v)) {
            Value r = tp_force(vm, v, site);
            if (IS_EXC(r)) return false;
            bool ok = repr_rec(vm, b, r, quoted, site, st);
            decref(r);
            return ok;
        }
        value_repr(b, v, quoted);
        return true;
    }
}

bool tp_repr(VM *vm, Buf *b, Value v, bool quoted, const Node *site)
{
    if (!repr_rec(vm, b, v, quoted, site, NULL)) return false;
    if (buf_failed(b)) {
        vm_oom(vm, site);
        return false;
    }
    return true;
}

const PrintSep print_line = { " ", "\n", 1, 1 };

bool tp_print(VM *vm, const Value *v, int n, const PrintSep *ps, const Node *site)
{
    Buf b;
    buf_init(&b);
    bool ok = true;
    for (int i = 0; ok && i < n; i++) {
        if (i) buf_put(&b, ps->sep, ps->seplen);
        ok = tp_repr(vm, &b, v[i], false, site);
    }
    if (ok) buf_put(&b, ps->end, ps->endlen);
    if (ok && buf_failed(&b)) ok = (vm_oom(vm, site), false);
    if (ok) ok = vm_write_out(vm, b.p, b.len, false, site);
    buf_free(&b);
    return ok;
}

/* ---------------------------------------------------------------- builtin arguments */

bool arg_num(VM *vm, Args *a, int i, const char *what, double *out)
{
    Value v = a->v[i];
    if (v.t != T_NUM) {
        vm_error(vm, a->site, "%s must be a number, not %s", what, type_name(v));
        return false;
    }
    *out = v.n;
    return true;
}

bool arg_int(VM *vm, Args *a, int i, const char *what, long *out)
{
    Value v = a->v[i];
    to_plain_number(&v); /* an integer argument only counts: a tracked number's value */
    if (v.t != T_NUM) {
        vm_error(vm, a->site, "%s must be an integer, not %s", what, type_name(v));
        return false;
    }
    if (v.n != floor(v.n) || fabs(v.n) > 9e15) {
        vm_error(vm, a->site, "%s must be an integer, got %g", what, v.n);
        return false;
    }
    *out = (long)v.n;
    return true;
}

Value *arg_kw(Args *a, const char *name)
{
    for (int i = 0; i < a->nkw; i++)
        if (strcmp(a->kwname[i]->s, name) == 0) return &a->kw[i];
    return NULL;
}
