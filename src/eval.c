/* eval.c — the tree-walking evaluator: expressions, assignment and
 * statements on one VM (one thread's state). Names were resolved to slots
 * before, so nothing here looks a name up by string on the hot path. The
 * kinds of the value room (numbers, lists, dicts, strings) have inline
 * fast paths; every other operation goes through the dispatcher (types.h),
 * which forces futures where a value is needed. Calls (evaluating the
 * callee and arguments, binding, the call slots) are call.c's; running a
 * bound frame's body (eval_run_body) is here, where the statement loop can
 * be inlined into it (measured: a call costs about 11 instructions more
 * across files).
 *
 * The tree stays what runs, but each node carries a handler (Node.run)
 * chosen once by prepare() from its kind and shape: an addition whose
 * right operand is a constant, a dict read with a constant string key, an
 * assignment to a local, a swap `a, b = b, a`... Every handler is small
 * and correct for any operands: its fast path is guarded by type checks
 * and falls back to the general one. prepare() runs on the main thread
 * before a module's code first runs (vm_run_module, and the entry points
 * below for REPL entries); afterwards the tree is only read, except the
 * dict-entry cache of an index node, which any thread may update
 * (relaxed atomics: a stale cache only costs a lookup).
 *
 * Knows values, the dispatcher, the VM, the AST and function objects;
 * nothing of any other room. */
#include "eval.h"
#include "arith.h"
#include "qh_assert.h"
#include "trace.h"

#include <math.h>
#include <string.h>

#define EVAL(vm, n) ((n)->run.ev((vm), (n)))
#define EXEC(vm, s) ((s)->run.ex((vm), (s)))

static void prepare_at(Node *n, int depth);
static inline void prepare(Node *n) { prepare_at(n, 0); }
static ExecStatus block(VM *vm, Node *b);
static Value ev_call(VM *vm, Node *n);
static bool store(VM *vm, Node *t, Value v);
static bool destructure(VM *vm, Node **targets, int n, Value v, const Node *site);

/* ---------------------------------------------------------------- helpers */

static __attribute__((noinline)) Value eval_name_error(VM *vm, Node *n)
{
    if (n->kind == N_GLOBAL) return vm_error(vm, n, "name '%s' is not defined", n->u.var.name);
    if (n->kind == N_UPVAL)
        return vm_error(vm, n, "free variable '%s' used before it was assigned", n->u.var.name);
    return vm_error(vm, n, "local variable '%s' used before it was assigned", n->u.var.name);
}

/* evaluates and forces one subexpression */
/* v itself, or its value when it is lazy (takes v) */
static Value forced(VM *vm, Value v, Node *site)
{
    if (IS_EXC(v) || !is_lazy(v)) return v;
    Value f = tp_force(vm, v, site);
    decref(v);
    return f;
}

static Value eval_forced(VM *vm, Node *n) { return forced(vm, EVAL(vm, n), n); }

/* a condition's truth: 1, 0, or -1 on an error */
static inline int truth(VM *vm, Node *c)
{
    Value v = EVAL(vm, c);
    if (v.t == T_BOOL) return v.b;
    if (IS_EXC(v)) return -1;
    if (v.t == T_NUM) return v.n != 0;
    bool err = false;
    bool t = tp_truthy(vm, v, c, &err);
    decref(v);
    return err ? -1 : t;
}

/* evaluates the subscripts of an index node (forced); slices become
 * T_SLICE values */
static bool eval_subscripts(VM *vm, Node *n, Value *out)
{
    for (int k = 0; k < n->u.index.nidx; k++) {
        Node *s = n->u.index.idx[k];
        if (s->kind == N_SLICE) {
            Node *parts[3] = { s->u.slice.lo, s->u.slice.hi, s->u.slice.step };
            Value x[3] = { v_nil(), v_nil(), v_nil() };
            for (int j = 0; j < 3; j++) {
                if (!parts[j]) continue;
                x[j] = eval_forced(vm, parts[j]);
                if (IS_EXC(x[j])) {
                    for (int i = 0; i < j; i++) decref(x[i]);
                    goto fail;
                }
            }
            out[k] = v_slice(x[0], x[1], x[2]);
        } else {
            out[k] = eval_forced(vm, s);
            if (IS_EXC(out[k])) goto fail;
            if (!tp_resolve_in(vm, out[k], s)) {
                decref(out[k]);
                goto fail;
            } /* a list of indices is read */
        }
        continue;
    fail:
        for (int j = 0; j < k; j++) decref(out[j]);
        return false;
    }
    return true;
}

/* ---------------------------------------------------------------- operand shapes */

/* An operand of a binary node (and the value of an assignment) is read in
 * place when it is a constant number or a variable holding a number: the
 * shape is noted in the parent's flag by prepare(), two bits per operand. */
enum { OPD_ANY, OPD_NUM, OPD_LOCAL, OPD_GLOBAL };

static unsigned operand_shape(const Node *c)
{
    if (c->kind == N_NUM) return OPD_NUM;
    if (c->kind == N_LOCAL) return OPD_LOCAL;
    if (c->kind == N_GLOBAL) return OPD_GLOBAL;
    return OPD_ANY;
}

/* the operand's value: borrowed for a number read in place (numbers carry
 * no count), else a new reference or v_exc() */
static inline Value operand(VM *vm, Node *c, unsigned shape)
{
    if (shape == OPD_NUM) return v_num(c->u.num);
    if (shape == OPD_LOCAL) {
        Value v = vm->frame->slots[c->u.var.slot];
        if (v.t == T_NUM) return v;
    } else if (shape == OPD_GLOBAL) {
        Value v = vm->mod->globals[c->u.var.slot];
        if (v.t == T_NUM) return v;
    }
    return EVAL(vm, c);
}

#define OPD_A(n) ((unsigned)(n)->flag & 3u)
#define OPD_B(n) (((unsigned)(n)->flag >> 2) & 3u)

/* ---------------------------------------------------------------- leaves */

static Value ev_num(VM *vm, Node *n)
{
    (void)vm;
    return v_num(n->u.num);
}
static Value ev_imag(VM *vm, Node *n)
{
    (void)vm;
    return v_complex(0, n->u.num);
}
static Value ev_str(VM *vm, Node *n)
{
    (void)vm;
    return v_obj(&n->u.str->h);
}
static Value ev_true(VM *vm, Node *n)
{
    (void)vm;
    (void)n;
    return v_bool(true);
}
static Value ev_false(VM *vm, Node *n)
{
    (void)vm;
    (void)n;
    return v_bool(false);
}
static Value ev_nil(VM *vm, Node *n)
{
    (void)vm;
    (void)n;
    return v_nil();
}

/* The resolver's slots fit the frame, module, cells and closure they are read from */
static Value ev_local(VM *vm, Node *n)
{
    qh_assert(n->u.var.slot >= 0 && (!vm->frame->p || n->u.var.slot < vm->frame->p->nlocals));
    Value v = vm->frame->slots[n->u.var.slot];
    if (v.t == T_UNBOUND) return eval_name_error(vm, n);
    incref(v);
    return v;
}

static Value ev_global(VM *vm, Node *n)
{
    qh_assert(n->u.var.slot >= 0 && n->u.var.slot < vm->mod->nglobals);
    Value v = vm->mod->globals[n->u.var.slot];
    if (v.t == T_UNBOUND) return eval_name_error(vm, n);
    incref(v);
    return v;
}

static Value ev_localcell(VM *vm, Node *n)
{
    qh_assert(vm->frame->slots[n->u.var.slot].t == T_CELL); /* made a cell at the call */
    Value v = AS_CELL(vm->frame->slots[n->u.var.slot])->v;
    if (v.t == T_UNBOUND) return eval_name_error(vm, n);
    incref(v);
    return v;
}

static Value ev_upval(VM *vm, Node *n)
{
    qh_assert(vm->frame->fn && n->u.var.slot < vm->frame->fn->p->nupvals);
    Value v = vm->frame->fn->up[n->u.var.slot]->v;
    if (v.t == T_UNBOUND) return eval_name_error(vm, n);
    incref(v);
    return v;
}

static Value ev_builtin(VM *vm, Node *n)
{
    (void)vm;
    return builtin_value(n->u.var.slot);
}

static Value ev_self(VM *vm, Node *n)
{
    (void)n;
    Value v = v_obj(&vm->frame->fn->h);
    incref(v);
    return v;
}

static Value ev_slice(VM *vm, Node *n)
{
    return vm_error(vm, n, "a slice is only allowed inside [ ]");
}

/* ---------------------------------------------------------------- operators */

/* any operands: the dispatcher (takes the references) */
static __attribute__((noinline)) Value binop_slow(VM *vm, Node *n, Value a, Value b)
{
    Value r = (a.t == T_NUM && b.t == T_NUM) ? arith_num(vm, (BinOp)n->op, a.n, b.n, n)
                                             : tp_binop(vm, (BinOp)n->op, a, b, n);
    decref(a);
    decref(b);
    return r;
}

/* the bitwise operators: integers of magnitude below 2^53 in, and out */
static inline bool i53(double d)
{
    return d > -NUM_INT53 && d < NUM_INT53 && d == (double)(int64_t)d;
}
static inline bool shl_ok(double x, double y)
{
    return i53(x) && i53(y) && y >= 0 && y < 53 &&
           (x < 0 ? -x : x) < (double)((int64_t)1 << (53 - (int)y));
}
static inline double shr53(double x, double y)
{
    int64_t i = (int64_t)x;
    int k = y < 62 ? (int)y : 62;
    return (double)(i >= 0 ? i >> k : ~(~i >> k));
}
/* One handler per operator: both operands, then the number case inline
 * (the code given must return the result for two numbers x and y, or fall to the
 * general path for the cases it leaves out: errors, complex results). */
#define BINOP(name, ...)                             \
    static Value name(VM *vm, Node *n)               \
    {                                                \
        Value a = operand(vm, n->u.bin.a, OPD_A(n)); \
        if (IS_EXC(a)) return a;                     \
        Value b = operand(vm, n->u.bin.b, OPD_B(n)); \
        if (IS_EXC(b)) {                             \
            decref(a);                               \
            return b;                                \
        }                                            \
        if (a.t == T_NUM && b.t == T_NUM) {          \
            double x = a.n, y = b.n;                 \
            __VA_ARGS__                              \
        }                                            \
        return binop_slow(vm, n, a, b);              \
    }

BINOP(ev_add, return v_num(x + y);)
BINOP(ev_sub, return v_num(x - y);)
BINOP(ev_mul, return v_num(x * y);)
BINOP(ev_div, if (y != 0) return v_num(x / y);)
BINOP(ev_idiv, if (y != 0) return v_num(floor(x / y));)
/* clang-format off */
BINOP(ev_mod,
      if (y > 0 && x >= 0 && x < NUM_INT53 && y < NUM_INT53 && x == (double)(int64_t)x &&
          y == (double)(int64_t)y)
          return v_num((double)((int64_t)x % (int64_t)y));
      if (y != 0) {
          double r = fmod(x, y);
          if (r != 0 && ((r < 0) != (y < 0))) r += y;
          return v_num(r);
      })
BINOP(ev_pow,
      if (y == 2) return v_num(x * x);
      if (!(x < 0 && y != floor(y)) && !(x == 0 && y < 0)) return v_num(pow(x, y));)
/* clang-format on */
BINOP(ev_lt, return v_bool(x < y);)
BINOP(ev_le, return v_bool(x <= y);)
BINOP(ev_gt, return v_bool(x > y);)
BINOP(ev_ge, return v_bool(x >= y);)
BINOP(ev_eq, return v_bool(x == y);)
BINOP(ev_ne, return v_bool(x != y);)
BINOP(ev_band, if (i53(x) && i53(y)) return v_num((double)((int64_t)x & (int64_t)y));)
BINOP(ev_bor, if (i53(x) && i53(y)) return v_num((double)((int64_t)x | (int64_t)y));)
BINOP(ev_bxor, if (i53(x) && i53(y)) return v_num((double)((int64_t)x ^ (int64_t)y));)
BINOP(ev_shl, if (shl_ok(x, y)) return v_num((double)(int64_t)((uint64_t)(int64_t)x << (int)y));)
BINOP(ev_shr, if (i53(x) && i53(y) && y >= 0) return v_num(shr53(x, y));)
/* in, not in, @: the dispatcher */
BINOP(ev_binop, (void)x; (void)y;)

/* Handlers made for one operand shape (K a constant number, L a local, G
 * a global, X anything else): the leaves are read in place, without a
 * call. When the operands are not two numbers, or the fast case does not
 * apply (COND false: a division by zero...), they hand over to the
 * operator's general handler, or finish with binop_slow once a non-leaf
 * operand has been evaluated (it must not be evaluated twice). A leaf on
 * the left is read before the right operand runs, as evaluation order
 * requires. */
#define LEAF_K(vm, c, x, gen) x = (c)->u.num;
#define LEAF_L(vm, c, x, gen)                                   \
    {                                                           \
        const Value *p_ = &(vm)->frame->slots[(c)->u.var.slot]; \
        if (p_->t != T_NUM) { return gen(vm, n); }              \
        x = p_->n;                                              \
    }
#define LEAF_G(vm, c, x, gen)                                   \
    {                                                           \
        const Value *p_ = &(vm)->mod->globals[(c)->u.var.slot]; \
        if (p_->t != T_NUM) { return gen(vm, n); }              \
        x = p_->n;                                              \
    }

#define BIN_LL(name, gen, A, B, COND, EXPR)                                                      \
    static Value name(VM *vm, Node *n)                                                           \
    {                                                                                            \
        double x, y;                                                                             \
        LEAF_##A(vm, n->u.bin.a, x, gen) LEAF_##B(vm, n->u.bin.b, y, gen) if (COND) return EXPR; \
        return gen(vm, n);                                                                       \
    }
#define BIN_XL(name, gen, B, COND, EXPR)                    \
    static Value name(VM *vm, Node *n)                      \
    {                                                       \
        Value a = EVAL(vm, n->u.bin.a);                     \
        if (IS_EXC(a)) return a;                            \
        Node *cb = n->u.bin.b;                              \
        if (a.t == T_NUM) {                                 \
            double x = a.n, y;                              \
            LEAF_##B##_OR(vm, cb, y) if (COND) return EXPR; \
        }                                                   \
    slow_b:                                                 \
        __attribute__((unused));                            \
        Value b = EVAL(vm, cb);                             \
        if (IS_EXC(b)) {                                    \
            decref(a);                                      \
            return b;                                       \
        }                                                   \
        return binop_slow(vm, n, a, b);                     \
    }
#define BIN_LX(name, gen, A, COND, EXPR)                                 \
    static Value name(VM *vm, Node *n)                                   \
    {                                                                    \
        double x, y;                                                     \
        LEAF_##A(vm, n->u.bin.a, x, gen) Value b = EVAL(vm, n->u.bin.b); \
        if (IS_EXC(b)) return b;                                         \
        if (b.t == T_NUM) {                                              \
            y = b.n;                                                     \
            if (COND) return EXPR;                                       \
        }                                                                \
        return binop_slow(vm, n, v_num(x), b);                           \
    }
/* the right leaf of an X-leaf handler: a number, or on to the slow path */
#define LEAF_K_OR(vm, c, y) y = (c)->u.num;
#define LEAF_L_OR(vm, c, y)                                     \
    {                                                           \
        const Value *p_ = &(vm)->frame->slots[(c)->u.var.slot]; \
        if (p_->t == T_NUM) {                                   \
            y = p_->n;                                          \
        } else                                                  \
            goto slow_b;                                        \
    }
#define LEAF_G_OR(vm, c, y)                                     \
    {                                                           \
        const Value *p_ = &(vm)->mod->globals[(c)->u.var.slot]; \
        if (p_->t == T_NUM) {                                   \
            y = p_->n;                                          \
        } else                                                  \
            goto slow_b;                                        \
    }

/* every shape of one operator: NAME_KL, NAME_LL, ... (NAME itself is XX) */
#define BIN_SHAPES(nm, COND, EXPR)                         \
    BIN_LL(nm##_KL, nm, K, L, COND, EXPR)                  \
    BIN_LL(nm##_KG, nm, K, G, COND, EXPR)                  \
    BIN_LL(nm##_LK, nm, L, K, COND, EXPR)                  \
    BIN_LL(nm##_LL, nm, L, L, COND, EXPR)                  \
    BIN_LL(nm##_LG, nm, L, G, COND, EXPR)                  \
    BIN_LL(nm##_GK, nm, G, K, COND, EXPR)                  \
    BIN_LL(nm##_GL, nm, G, L, COND, EXPR)                  \
    BIN_LL(nm##_GG, nm, G, G, COND, EXPR)                  \
    BIN_XL(nm##_XK, nm, K, COND, EXPR)                     \
    BIN_XL(nm##_XL, nm, L, COND, EXPR)                     \
    BIN_XL(nm##_XG, nm, G, COND, EXPR)                     \
    BIN_LX(nm##_KX, nm, K, COND, EXPR)                     \
    BIN_LX(nm##_LX, nm, L, COND, EXPR)                     \
    BIN_LX(nm##_GX, nm, G, COND, EXPR)                     \
    static const EvalFn nm##_shapes[4][4] = {              \
        /* a: X */ { nm, nm##_XK, nm##_XL, nm##_XG },      \
        /* a: K */ { nm##_KX, nm, nm##_KL, nm##_KG },      \
        /* a: L */ { nm##_LX, nm##_LK, nm##_LL, nm##_LG }, \
        /* a: G */ { nm##_GX, nm##_GK, nm##_GL, nm##_GG }, \
    }

BIN_SHAPES(ev_add, 1, v_num(x + y));
BIN_SHAPES(ev_sub, 1, v_num(x - y));
BIN_SHAPES(ev_mul, 1, v_num((x) * (y)));
BIN_SHAPES(ev_div, y != 0, v_num(x / y));
BIN_SHAPES(ev_lt, 1, v_bool(x < y));
BIN_SHAPES(ev_le, 1, v_bool(x <= y));
BIN_SHAPES(ev_gt, 1, v_bool(x > y));
BIN_SHAPES(ev_ge, 1, v_bool(x >= y));
BIN_SHAPES(ev_eq, 1, v_bool(x == y));
BIN_SHAPES(ev_ne, 1, v_bool(x != y));

BIN_SHAPES(ev_band, i53(x) && i53(y), v_num((double)((int64_t)x &(int64_t)y)));
BIN_SHAPES(ev_bor, i53(x) && i53(y), v_num((double)((int64_t)x | (int64_t)y)));
BIN_SHAPES(ev_bxor, i53(x) && i53(y), v_num((double)((int64_t)x ^ (int64_t)y)));
BIN_SHAPES(ev_shl, shl_ok(x, y), v_num((double)(int64_t)((uint64_t)(int64_t)x << (int)y)));
BIN_SHAPES(ev_shr, i53(x) && i53(y) && y >= 0, v_num(shr53(x, y)));

static Value ev_unary(VM *vm, Node *n)
{
    Value a = EVAL(vm, n->u.bin.a);
    if (IS_EXC(a)) return a;
    if (a.t == T_NUM && n->op != OP_INVERT) return v_num(n->op == OP_NEG ? -a.n : a.n);
    Value r = tp_unop(vm, (BinOp)n->op, a, n);
    decref(a);
    return r;
}

static Value ev_not(VM *vm, Node *n)
{
    int t = truth(vm, n->u.bin.a);
    return t < 0 ? v_exc() : v_bool(!t);
}

static Value ev_andor(VM *vm, Node *n)
{
    Value a = EVAL(vm, n->u.bin.a);
    if (IS_EXC(a)) return a;
    bool err = false;
    bool t = a.t == T_BOOL ? a.b : tp_truthy(vm, a, n, &err);
    if (err) {
        decref(a);
        return v_exc();
    }
    if ((n->kind == N_AND) != t) {
        /* short circuit: the operand decides, and is the value (resolved) */
        if (!is_lazy(a)) return a;
        Value r = tp_force(vm, a, n);
        decref(a);
        return r;
    }
    decref(a);
    return EVAL(vm, n->u.bin.b);
}

static Value ev_cond(VM *vm, Node *n)
{
    int t = truth(vm, n->u.ifs.cond);
    if (t < 0) return v_exc();
    return t ? EVAL(vm, n->u.ifs.then) : EVAL(vm, n->u.ifs.els);
}

/* ---------------------------------------------------------------- containers */

static Value ev_list(VM *vm, Node *n)
{
    ObjList *l = list_new((size_t)n->u.list.n);
    for (int i = 0; i < n->u.list.n; i++) {
        Value v = EVAL(vm, n->u.list.items[i]);
        if (IS_EXC(v)) {
            decref(v_list(l));
            return v;
        }
        l->v[l->len++] = v;
    }
    return v_list(l);
}

static Value ev_dict(VM *vm, Node *n)
{
    ObjDict *d = dict_new_sized((size_t)n->u.dict.n);
    Value dv = v_obj(&d->h);
    for (int i = 0; i < n->u.dict.n; i++) {
        Value kk = eval_forced(vm, n->u.dict.keys[i]);
        if (IS_EXC(kk)) {
            decref(dv);
            return kk;
        }
        if (!key_ok(kk)) {
            Value p = kk;
            if (to_plain_number(&p)) {
                decref(kk);
                kk = p;
            }
        }
        if (!key_ok(kk)) {
            Value e = vm_error(vm, n->u.dict.keys[i],
                               "dict keys are numbers, strings or bools, not %s", type_name(kk));
            decref(kk);
            decref(dv);
            return e;
        }
        Value v = EVAL(vm, n->u.dict.vals[i]);
        if (IS_EXC(v)) {
            decref(kk);
            decref(dv);
            return v;
        }
        dict_set(d, kk, v);
        decref(kk);
        decref(v);
    }
    return dv;
}

/* ---------------------------------------------------------------- indexing */

/* d[k] for a constant string key k (an interned constant, so the entry
 * that holds it is found by pointer): the entry, through the node's cache
 * of where it was last time, or NULL if the key is missing. */
static inline DictEnt *dict_entry_const(ObjDict *d, Node *n, ObjStr *key)
{
    unsigned c = (unsigned)__atomic_load_n(&n->u.index.cache, __ATOMIC_RELAXED);
    if (c < d->nent) {
        DictEnt *e = &d->ent[c];
        if (e->key.o == &key->h && e->live) return e;
    }
    long i = dict_index(d, v_obj(&key->h));
    if (i < 0) return NULL;
    __atomic_store_n(&n->u.index.cache, (int)i, __ATOMIC_RELAXED);
    return &d->ent[i];
}

/* the element of list l at index d (negative from the end), or NULL if d
 * is not an integer in range */
static inline Value *list_at(ObjList *l, double d)
{
    if (!(d > -9e15 && d < 9e15)) return NULL;
    int64_t k = (int64_t)d;
    if ((double)k != d) return NULL;
    if (k < 0) k += (int64_t)l->len;
    if ((uint64_t)k >= l->len) return NULL;
    return &l->v[k];
}

/* the element a list or dict holds for one plain subscript value, or NULL
 * when the general path must decide (out of range, missing key, errors,
 * other kinds) */
static inline Value *elem_fast(Node *n, Value obj, Value i)
{
    if (obj.t == T_LIST && i.t == T_NUM) return list_at(AS_LIST(obj), i.n);
    if (obj.t == T_DICT && i.t == T_STR) {
        Node *ix = n->u.index.idx[0];
        if (ix->kind == N_STR) {
            DictEnt *e = dict_entry_const(AS_DICT(obj), n, ix->u.str);
            return e ? &e->val : NULL;
        }
        long k = dict_index(AS_DICT(obj), i);
        return k >= 0 ? &AS_DICT(obj)->ent[k].val : NULL;
    }
    return NULL;
}

/* An index node with one plain subscript notes its shape in its flag:
 * bits 0-1 the container (OPD_LOCAL, OPD_GLOBAL or OPD_ANY), bits 2-4 the
 * subscript (IX_*). When the subscript is a leaf, nothing runs between
 * reading the container and using the element, so a container held by a
 * variable is borrowed, not counted. */
enum { IX_ANY, IX_NUM, IX_LOCAL, IX_GLOBAL, IX_STR };
#define IX_OBJ(n) ((unsigned)(n)->flag & 3u)
#define IX_SUB(n) (((unsigned)(n)->flag >> 2) & 7u)

static unsigned subscript_shape(const Node *c)
{
    if (c->kind == N_NUM) return IX_NUM;
    if (c->kind == N_LOCAL) return IX_LOCAL;
    if (c->kind == N_GLOBAL) return IX_GLOBAL;
    if (c->kind == N_STR) return IX_STR;
    return IX_ANY;
}

/* obj[leaf] for a list and a number, or a dict and a constant key; NULL
 * when the general path must decide */
static inline Value *elem_leaf(VM *vm, Node *n, Value obj)
{
    Node *ix = n->u.index.idx[0];
    unsigned si = IX_SUB(n);
    if (obj.t == T_LIST) {
        const Value *iv;
        double d;
        switch (si) {
        case IX_NUM: d = ix->u.num; goto have;
        case IX_LOCAL: iv = &vm->frame->slots[ix->u.var.slot]; break;
        case IX_GLOBAL: iv = &vm->mod->globals[ix->u.var.slot]; break;
        default: return NULL;
        }
        if (iv->t != T_NUM) return NULL;
        d = iv->n;
    have:
        return list_at(AS_LIST(obj), d);
    }
    if (obj.t == T_DICT && si == IX_STR) {
        DictEnt *e = dict_entry_const(AS_DICT(obj), n, ix->u.str);
        return e ? &e->val : NULL;
    }
    return NULL;
}

/* the variable a container shape names (borrowed) */
static inline Value ix_var(VM *vm, Node *o, unsigned so)
{
    return so == OPD_LOCAL ? vm->frame->slots[o->u.var.slot] : vm->mod->globals[o->u.var.slot];
}

/* obj[i] in general: slices, several subscripts, any kind */
static __attribute__((noinline)) Value index_general(VM *vm, Node *n, Value obj)
{
    int ni = n->u.index.nidx;
    Value idx[ni];
    if (!eval_subscripts(vm, n, idx)) return v_exc();
    Value r = tp_index(vm, obj, ni, idx, n, n->u.index.idx);
    for (int i = 0; i < ni; i++) decref(idx[i]);
    return r;
}

/* obj[i] with one plain subscript, past the fast paths, the subscript
 * evaluated (takes obj and i) */
static __attribute__((noinline)) Value index1_take(VM *vm, Node *n, Value obj, Value i)
{
    Node *ix = n->u.index.idx[0];
    i = forced(vm, i, ix);
    if (IS_EXC(i)) {
        decref(obj);
        return i;
    }
    if (!tp_resolve_in(vm, i, ix)) {
        decref(i);
        decref(obj);
        return v_exc();
    } /* a list of indices is read */
    Value *e = elem_fast(n, obj, i);
    Value r;
    if (e) {
        r = *e;
        incref(r);
    } else
        r = tp_index(vm, obj, 1, &i, n, n->u.index.idx);
    decref(i);
    decref(obj);
    return r;
}

/* obj[i] with one plain subscript, past the fast paths (takes obj) */
static Value index1_slow(VM *vm, Node *n, Value obj)
{
    Value i = EVAL(vm, n->u.index.idx[0]);
    if (IS_EXC(i)) {
        decref(obj);
        return i;
    }
    return index1_take(vm, n, obj, i);
}

/* obj[i] with one plain subscript */
static Value ev_index1(VM *vm, Node *n)
{
    Node *o = n->u.index.obj;
    unsigned so = IX_OBJ(n);
    if (so != OPD_ANY && IX_SUB(n) != IX_ANY) {
        Value *e = elem_leaf(vm, n, ix_var(vm, o, so));
        if (e) {
            Value r = *e;
            incref(r);
            return r;
        }
    }
    Value obj = EVAL(vm, o);
    if (IS_EXC(obj)) return obj;
    if (IX_SUB(n) != IX_ANY) {
        Value *e = elem_leaf(vm, n, obj);
        if (e) {
            Value r = *e;
            incref(r);
            decref(obj);
            return r;
        }
    }
    return index1_slow(vm, n, obj);
}

/* obj[i] for each shape of a variable container (L, G) and a leaf number
 * subscript (K, L, G): a list element without a call or a branch on shapes;
 * anything else to ev_index1 */
#define IXOBJ_L(vm, o)    ((vm)->frame->slots[(o)->u.var.slot])
#define IXOBJ_G(vm, o)    ((vm)->mod->globals[(o)->u.var.slot])
#define IXNUM_K(vm, c, d) d = (c)->u.num;
#define IXNUM_L(vm, c, d)                                       \
    {                                                           \
        const Value *p_ = &(vm)->frame->slots[(c)->u.var.slot]; \
        if (p_->t != T_NUM) { return ev_index1(vm, n); }        \
        d = p_->n;                                              \
    }
#define IXNUM_G(vm, c, d)                                       \
    {                                                           \
        const Value *p_ = &(vm)->mod->globals[(c)->u.var.slot]; \
        if (p_->t != T_NUM) { return ev_index1(vm, n); }        \
        d = p_->n;                                              \
    }
#define IX_READ(name, O, I)                                                      \
    static Value name(VM *vm, Node *n)                                           \
    {                                                                            \
        Value obj = IXOBJ_##O(vm, n->u.index.obj);                               \
        if (obj.t != T_LIST) return ev_index1(vm, n);                            \
        double d;                                                                \
        IXNUM_##I(vm, n->u.index.idx[0], d) Value *e = list_at(AS_LIST(obj), d); \
        if (!e) return ev_index1(vm, n);                                         \
        Value r = *e;                                                            \
        incref(r);                                                               \
        return r;                                                                \
    }
IX_READ(ev_index_LK, L, K)
IX_READ(ev_index_LL, L, L)
IX_READ(ev_index_LG, L, G)
IX_READ(ev_index_GK, G, K)
IX_READ(ev_index_GL, G, L)
IX_READ(ev_index_GG, G, G)

/* xs[e] for a local list and a subscript that is not a leaf (xs[k - 1]):
 * the subscript runs, then the list is read. Nothing the subscript runs
 * can rebind a local (a variable a closure captures is a cell, not
 * N_LOCAL), so the order is the general path's; the slot is read again
 * after the subscript since a call may move the frame's slots. */
static Value ev_index_LX(VM *vm, Node *n)
{
    int slot = n->u.index.obj->u.var.slot;
    if (vm->frame->slots[slot].t != T_LIST) return ev_index1(vm, n);
    Value i = EVAL(vm, n->u.index.idx[0]);
    Value obj = vm->frame->slots[slot];
    if (i.t == T_NUM && obj.t == T_LIST) {
        Value *e = list_at(AS_LIST(obj), i.n);
        if (e) {
            Value r = *e;
            incref(r);
            return r;
        }
    }
    if (IS_EXC(i)) return i;
    incref(obj);
    return index1_take(vm, n, obj, i);
}

/* d["key"] for a variable holding a dict record: the cached entry */
#define IX_KEY(name, O)                                                           \
    static Value name(VM *vm, Node *n)                                            \
    {                                                                             \
        Value obj = IXOBJ_##O(vm, n->u.index.obj);                                \
        if (obj.t != T_DICT) return ev_index1(vm, n);                             \
        DictEnt *e = dict_entry_const(AS_DICT(obj), n, n->u.index.idx[0]->u.str); \
        if (!e) return ev_index1(vm, n);                                          \
        Value r = e->val;                                                         \
        incref(r);                                                                \
        return r;                                                                 \
    }
IX_KEY(ev_index_LS, L)
IX_KEY(ev_index_GS, G)

static Value ev_index(VM *vm, Node *n)
{
    Value obj = EVAL(vm, n->u.index.obj);
    if (IS_EXC(obj)) return obj;
    Value r = index_general(vm, n, obj);
    decref(obj);
    return r;
}

static Value ev_member(VM *vm, Node *n)
{
    Value obj = EVAL(vm, n->u.member.obj);
    if (IS_EXC(obj)) return obj;
    Value r = tp_member(vm, obj, n->u.member.key, n);
    decref(obj);
    return r;
}

/* ---------------------------------------------------------------- closures */

static Value make_closure(VM *vm, FnProto *p)
{
    ObjFunc *f = func_new(p, vm->mod);
    Value fv = v_obj(&f->h);
    if (p->nparams) {
        f->defaults = xmalloc((size_t)p->nparams * sizeof(Value));
        for (int i = 0; i < p->nparams; i++) f->defaults[i] = v_unbound();
        for (int i = 0; i < p->nparams; i++) {
            if (!p->defaults[i]) continue;
            Value d = EVAL(vm, p->defaults[i]);
            if (IS_EXC(d)) {
                decref(fv);
                return d;
            }
            f->defaults[i] = d;
        }
    }
    if (p->nupvals) {
        f->up = xcalloc((size_t)p->nupvals, sizeof(ObjCell *));
        for (int i = 0; i < p->nupvals; i++) {
            UpvalDesc d = p->upvals[i];
            /* a cell of the defining frame, or one the defining function closed over */
            qh_assert(d.from_local ? vm->frame->slots[d.index].t == T_CELL
                                   : vm->frame->fn && d.index < vm->frame->fn->p->nupvals);
            ObjCell *c =
                d.from_local ? AS_CELL(vm->frame->slots[d.index]) : vm->frame->fn->up[d.index];
            incref(v_obj(&c->h));
            f->up[i] = c;
        }
    }
    if (p->device) {
        Value dd = eval_forced(vm, p->device);
        if (IS_EXC(dd)) {
            decref(fv);
            return dd;
        }
        if (!(type_of(dd)->flags & TF_DEVICE)) {
            decref(fv);
            Value e = vm_error(vm, p->device, "qfn %s: 'on' needs a device, not %s", p->name,
                               type_name(dd));
            decref(dd);
            return e;
        }
        f->device = dd;
    }
    return fv;
}

static Value ev_fnexpr(VM *vm, Node *n) { return make_closure(vm, n->u.fn); }

/* ---------------------------------------------------------------- iteration */

static bool is_range_call(const Node *it)
{
    return it->kind == N_CALL && it->u.call.fn->kind == N_BUILTIN &&
           strcmp(builtin_get(it->u.call.fn->u.var.slot)->name, "range") == 0 &&
           it->u.call.nkw == 0 && it->u.call.nargs >= 1 && it->u.call.nargs <= 3;
}

/* qh's numbers are exact integers up to 2^53: a range stops there */
#define RANGE_EXACT 9007199254740992.0

/* Why: past 2^53, x + 1 == x: a range going there would repeat its last
   value forever (Python's integers are exact: qh refuses rather than
   loop or skip values). */
static Value range_past(VM *vm, Node *it)
{
    return vm_error(vm, it,
                    "range() passed 2^53 (9007199254740992): past it numbers are not exact "
                    "integers");
}

/* the bounds of range(...) called directly (a for loop or a comprehension);
   *past: stop was beyond 2^53 and is 2^53 now (reaching it is an error) */
static bool range_args(VM *vm, Node *it, double *start, double *stop, double *step, bool *past)
{
    double a[3] = { 0, 0, 0 };
    for (int i = 0; i < it->u.call.nargs; i++) {
        Value v = eval_forced(vm, it->u.call.args[i]);
        if (IS_EXC(v)) return false;
        if (v.t != T_NUM || v.n != floor(v.n)) {
            if (v.t == T_NUM)
                vm_error(vm, it->u.call.args[i], "range() argument must be an integer, got %g",
                         v.n);
            else
                vm_error(vm, it->u.call.args[i], "range() argument must be an integer, not %s",
                         type_name(v));
            decref(v);
            return false;
        }
        a[i] = v.n;
    }
    *start = 0;
    *step = 1;
    if (it->u.call.nargs == 1)
        *stop = a[0];
    else {
        *start = a[0];
        *stop = a[1];
        if (it->u.call.nargs == 3) *step = a[2];
    }
    if (*step == 0) {
        vm_error(vm, it, "range() step must not be zero");
        return false;
    }
    *past = false;
    if (fabs(*start) > RANGE_EXACT) {
        range_past(vm, it);
        return false;
    }
    if (*step > 0 ? *stop > RANGE_EXACT : *stop < -RANGE_EXACT) {
        *stop = *step > 0 ? RANGE_EXACT : -RANGE_EXACT;
        *past = true;
    }
    return true;
}

/* ---------------------------------------------------------------- comprehensions */

/* what a comprehension's `for` clause walks: range(...) called directly (no
 * list is built), or any iterable through the dispatcher */
typedef struct CompIter {
    bool range, past;
    double x, stop, step;
    Value coll;
    Iter it;
    Node *site;
} CompIter;

static bool comp_iter_begin(VM *vm, Node *it, CompIter *ci)
{
    ci->site = it;
    ci->coll = v_nil();
    ci->range = is_range_call(it);
    if (ci->range) return range_args(vm, it, &ci->x, &ci->stop, &ci->step, &ci->past);
    ci->coll = eval_forced(vm, it);
    if (IS_EXC(ci->coll)) return false;
    if (!tp_iter_begin(vm, ci->coll, &ci->it, it)) {
        decref(ci->coll);
        return false;
    }
    return true;
}

/* 1: *out is the next element (a new reference); 0: done; -1: error */
static int comp_iter_next(VM *vm, CompIter *ci, Value *out)
{
    if (ci->range) {
        if (ci->step > 0 ? ci->x >= ci->stop : ci->x <= ci->stop) {
            if (ci->past) {
                range_past(vm, ci->site);
                return -1;
            }
            return 0;
        }
        *out = v_num(ci->x);
        ci->x += ci->step;
        return 1;
    }
    return tp_iter_next(vm, ci->coll, &ci->it, out, ci->site);
}

static void comp_iter_end(CompIter *ci)
{
    if (ci->range) return;
    tp_iter_end(&ci->it);
    decref(ci->coll);
}

/* A comprehension's variables start unbound at each evaluation; one that a
 * closure captures gets a new cell, so closures made by two evaluations do
 * not share it (as in Python). At the end the plain ones are released. */
static void comp_reset(VM *vm, Node *n, bool at_end)
{
    for (int i = 0; i < n->u.comp.nclauses; i++) {
        CompClause *c = &n->u.comp.clauses[i];
        for (int k = 0; k < c->nvars; k++) {
            Node *v = c->vars[k];
            qh_assert(v->kind == N_LOCAL || v->kind == N_LOCALCELL);
            Value *slot = &vm->frame->slots[v->u.var.slot];
            Value old = *slot;
            if (v->kind == N_LOCALCELL) {
                if (at_end) continue; /* closures may hold it */
                *slot = v_obj(&cell_new(v_unbound())->h);
            } else {
                *slot = v_unbound();
            }
            decref(old);
        }
    }
}

/* clause ci and the ones after it; the innermost adds to acc */
static bool comp_clause(VM *vm, Node *n, int ci, Value acc)
{
    CompClause *c = &n->u.comp.clauses[ci];
    CompIter it;
    if (!comp_iter_begin(vm, c->iter, &it)) return false;
    bool ok = true;
    unsigned tick = 0;
    for (;;) {
        Value v;
        int got = comp_iter_next(vm, &it, &v);
        if (got <= 0) {
            ok = got == 0;
            break;
        }
        if (c->nvars == 1)
            ok = store(vm, c->vars[0], v);
        else {
            ok = destructure(vm, c->vars, c->nvars, v, c->iter);
            decref(v);
        }
        if (!ok) break;
        bool pass = true;
        for (int k = 0; k < c->nconds && pass; k++) {
            int t = truth(vm, c->conds[k]);
            if (t < 0) {
                ok = false;
                break;
            }
            pass = t;
        }
        if (!ok) break;
        if (pass) {
            if (ci + 1 < n->u.comp.nclauses) {
                ok = comp_clause(vm, n, ci + 1, acc);
            } else if (n->kind == N_LISTCOMP) {
                Value e = EVAL(vm, n->u.comp.elt);
                if (IS_EXC(e))
                    ok = false;
                else if (!list_push_try(AS_LIST(acc), e)) {
                    decref(e);
                    vm_oom(vm, n);
                    ok = false;
                }
            } else {
                Value k = eval_forced(vm, n->u.comp.key);
                if (!IS_EXC(k) && !key_ok(k)) {
                    Value p = k;
                    if (to_plain_number(&p)) {
                        decref(k);
                        k = p;
                    }
                }
                if (IS_EXC(k))
                    ok = false;
                else if (!key_ok(k)) {
                    vm_error(vm, n->u.comp.key, "dict keys are numbers, strings or bools, not %s",
                             type_name(k));
                    decref(k);
                    ok = false;
                } else {
                    Value e = EVAL(vm, n->u.comp.elt);
                    if (IS_EXC(e))
                        ok = false;
                    else {
                        if (!dict_set_try(AS_DICT(acc), k, e)) {
                            vm_oom(vm, n);
                            ok = false;
                        }
                        decref(e);
                    }
                    decref(k);
                }
            }
            if (!ok) break;
        }
        if (((++tick & 1023) == 0) && vm_attention(vm) && vm_check_interrupt(vm)) {
            ok = false;
            break;
        }
    }
    comp_iter_end(&it);
    return ok;
}

/* [elt for ...] and {key: elt for ...}. At the module level the outermost
 * comprehension runs in a frame of its own that holds its variables (the
 * resolver sized it); elsewhere they are slots of the running frame. */
static Value ev_comp(VM *vm, Node *n)
{
    Frame fr;
    size_t base = vm->sp;
    int nslots = n->u.comp.frame;
    if (nslots) {
        if (base + (size_t)nslots + 8 >= vm->cap)
            return vm_error(vm, n, "maximum recursion depth exceeded (value stack full)");
        Value *slots = vm->stack + base;
        for (int i = 0; i < nslots; i++) slots[i] = v_unbound();
        vm->sp = base + (size_t)nslots;
        fr = (Frame){ NULL, NULL, slots, vm->frame };
        vm->frame = &fr;
    }
    qh_assert(vm->frame);
    Value acc = n->kind == N_LISTCOMP ? v_list(list_new(0)) : v_obj(&dict_new()->h);
    comp_reset(vm, n, false);
    bool ok = comp_clause(vm, n, 0, acc);
    comp_reset(vm, n, true);
    qh_assert(vm->sp == base + (size_t)nslots); /* the clauses leave the frame as they found it */
    if (nslots) {
        qh_assert(vm->frame == &fr);
        vm->frame = fr.parent;
        while (vm->sp > base) decref(vm->stack[--vm->sp]);
    }
    if (!ok) {
        decref(acc);
        return v_exc();
    }
    return acc;
}

/* ---------------------------------------------------------------- assignment */

/* A global assigned inside a task: only a function value can bring such an
 * assignment there (the analysis rejects qfn bodies that do it); it would
 * change the task's copy, never the program's variable. */
static __attribute__((noinline)) bool global_in_task(VM *vm, const Node *t)
{
    vm_error(
        vm, t,
        "cannot assign the global variable '%s' inside a quantum function: a qfn may not print, "
        "read input, import or assign globals (here through a function value)",
        t->u.var.name);
    return false;
}

/* the slot a variable target names (NULL: a global inside a task, or not
 * a variable) */
static inline Value *var_slot(VM *vm, Node *t)
{
    switch ((NodeKind)t->kind) {
    case N_LOCAL: return &vm->frame->slots[t->u.var.slot];
    case N_GLOBAL: return vm->is_task ? NULL : &vm->mod->globals[t->u.var.slot];
    case N_LOCALCELL:
        qh_assert(vm->frame->slots[t->u.var.slot].t == T_CELL); /* made a cell at the call */
        return &AS_CELL(vm->frame->slots[t->u.var.slot])->v;
    case N_UPVAL:
        qh_assert(vm->frame->fn && t->u.var.slot < vm->frame->fn->p->nupvals);
        return &vm->frame->fn->up[t->u.var.slot]->v;
    case N_NKINDS: qh_unreachable();
    case N_NUM:
    case N_IMAG:
    case N_STR:
    case N_TRUE:
    case N_FALSE:
    case N_NIL:
    case N_NAME:
    case N_BUILTIN:
    case N_SELF:
    case N_LIST:
    case N_DICT:
    case N_UNARY:
    case N_BINARY:
    case N_AND:
    case N_OR:
    case N_NOT:
    case N_CALL:
    case N_INDEX:
    case N_SLICE:
    case N_MEMBER:
    case N_FNEXPR:
    case N_COND:
    case N_LISTCOMP:
    case N_DICTCOMP:
    case N_EXPRSTMT:
    case N_ASSIGN:
    case N_AUGASSIGN:
    case N_DESTRUCT:
    case N_IF:
    case N_WHILE:
    case N_FOR:
    case N_BREAK:
    case N_CONTINUE:
    case N_RETURN:
    case N_FNDEF:
    case N_TRY:
    case N_IMPORT:
    case N_GLOBALDECL:
    case N_BLOCK:
    case N_PASS: return NULL;
    }
    qh_unreachable();
}

/* obj[i] = v with one plain subscript, past the fast paths, the subscript
 * evaluated (takes obj, i and v) */
static __attribute__((noinline)) bool store_index1_take(VM *vm, Node *t, Value obj, Value i,
                                                        Value v)
{
    Node *ix = t->u.index.idx[0];
    i = forced(vm, i, ix);
    bool ok = !IS_EXC(i) && tp_resolve_in(vm, i, ix);
    Value *e = ok ? elem_fast(t, obj, i) : NULL;
    if (e) {
        Value old = *e;
        *e = v;
        decref(old);
    } else {
        if (ok) ok = tp_setindex(vm, obj, 1, &i, v, t, t->u.index.idx);
        decref(v);
    }
    if (!IS_EXC(i)) decref(i);
    decref(obj);
    return ok;
}

/* obj[i] = v past the fast path (takes the reference to v) */
static __attribute__((noinline)) bool store_index_slow(VM *vm, Node *t, Value v)
{
    Value obj = EVAL(vm, t->u.index.obj);
    if (IS_EXC(obj)) {
        decref(v);
        return false;
    }
    bool ok;
    if (t->u.index.nidx == 1 && t->u.index.idx[0]->kind != N_SLICE) {
        Value i = EVAL(vm, t->u.index.idx[0]);
        if (IS_EXC(i)) {
            decref(obj);
            decref(v);
            return false;
        }
        return store_index1_take(vm, t, obj, i, v);
    } else {
        int ni = t->u.index.nidx;
        Value idx[ni];
        if (!eval_subscripts(vm, t, idx)) {
            decref(obj);
            decref(v);
            return false;
        }
        ok = tp_setindex(vm, obj, ni, idx, v, t, t->u.index.idx);
        for (int i = 0; i < ni; i++) decref(idx[i]);
        decref(v);
    }
    decref(obj);
    return ok;
}

/* xs[e] = v for a local list and a subscript that is not a leaf: the
 * subscript runs, then the list is read (see ev_index_LX) */
static __attribute__((noinline)) bool store_index_LX(VM *vm, Node *t, Value v)
{
    int slot = t->u.index.obj->u.var.slot;
    if (vm->frame->slots[slot].t != T_LIST) return store_index_slow(vm, t, v);
    Value i = EVAL(vm, t->u.index.idx[0]);
    Value obj = vm->frame->slots[slot];
    Value *e = i.t == T_NUM && obj.t == T_LIST ? list_at(AS_LIST(obj), i.n) : NULL;
    if (e) {
        Value old = *e;
        *e = v;
        decref(old);
        return true;
    }
    if (IS_EXC(i)) {
        decref(v);
        return false;
    }
    incref(obj);
    return store_index1_take(vm, t, obj, i, v);
}

/* obj[i] = v (takes the reference to v) */
static inline bool store_index(VM *vm, Node *t, Value v)
{
    unsigned so = IX_OBJ(t);
    if (so != OPD_ANY && IX_SUB(t) != IX_ANY) {
        Value *e = elem_leaf(vm, t, ix_var(vm, t->u.index.obj, so));
        if (e) {
            Value old = *e;
            *e = v;
            decref(old);
            return true;
        }
    } else if (so == OPD_LOCAL) {
        return store_index_LX(vm, t, v);
    }
    return store_index_slow(vm, t, v);
}

/* binds a target (takes the reference) */
static bool store(VM *vm, Node *t, Value v)
{
    Value *slot = var_slot(vm, t);
    if (!slot) {
        if (t->kind == N_GLOBAL) {
            decref(v);
            return global_in_task(vm, t);
        }
        qh_assert(t->kind == N_INDEX); /* the resolver only makes assignable targets */
        return store_index(vm, t, v);
    }
    Value old = *slot;
    *slot = v;
    decref(old);
    return true;
}

/* a, b = v: a list, or any kind with a length and an iteration */
static bool destructure(VM *vm, Node **targets, int n, Value v, const Node *site)
{
    Value seq = tp_force(vm, v, site);
    if (IS_EXC(seq)) return false;
    bool ok = false;
    if (seq.t == T_LIST) {
        ObjList *l = AS_LIST(seq);
        if ((int)l->len != n) {
            vm_error(vm, site, "cannot unpack a list of %zu into %d names", l->len, n);
            goto done;
        }
        for (int i = 0; i < n; i++) {
            incref(l->v[i]);
            if (!store(vm, targets[i], l->v[i])) goto done;
        }
        ok = true;
        goto done;
    }
    const TypeOps *t = type_of(seq);
    size_t len;
    if (!t->iter || !t->len || !t->len(seq, &len)) {
        vm_error(vm, site, "cannot unpack %s into %d names", type_name(seq), n);
        goto done;
    }
    if ((int)len != n) {
        const char *nm = type_name(seq);
        vm_error(vm, site, "cannot unpack %s %s of length %zu into %d names",
                 strchr("aeiou", nm[0]) ? "an" : "a", nm, len, n);
        goto done;
    }
    Iter it;
    if (!tp_iter_begin(vm, seq, &it, site)) goto done;
    ok = true;
    for (int i = 0; i < n && ok; i++) {
        Value x;
        int k = tp_iter_next(vm, seq, &it, &x, site);
        if (k <= 0) {
            if (k == 0) vm_error(vm, site, "cannot unpack %s into %d names", type_name(seq), n);
            ok = false;
        } else if (!store(vm, targets[i], x))
            ok = false;
    }
    tp_iter_end(&it);
done:
    decref(seq);
    return ok;
}

static ExecStatus ex_assign_local(VM *vm, Node *s)
{
    Value v = EVAL(vm, s->u.assign.value);
    if (IS_EXC(v)) return S_ERR;
    qh_assert(s->u.assign.target->kind == N_LOCAL && s->u.assign.target->u.var.slot >= 0 &&
              (!vm->frame->p || s->u.assign.target->u.var.slot < vm->frame->p->nlocals));
    Value *slot = &vm->frame->slots[s->u.assign.target->u.var.slot];
    Value old = *slot;
    *slot = v;
    decref(old);
    return S_OK;
}

static ExecStatus ex_assign_global(VM *vm, Node *s)
{
    Value v = EVAL(vm, s->u.assign.value);
    if (IS_EXC(v)) return S_ERR;
    if (vm->is_task) {
        decref(v);
        global_in_task(vm, s->u.assign.target);
        return S_ERR;
    }
    qh_assert(s->u.assign.target->kind == N_GLOBAL &&
              s->u.assign.target->u.var.slot < vm->mod->nglobals);
    Value *slot = &vm->mod->globals[s->u.assign.target->u.var.slot];
    Value old = *slot;
    *slot = v;
    decref(old);
    return S_OK;
}

static ExecStatus ex_assign_index(VM *vm, Node *s)
{
    Value v = EVAL(vm, s->u.assign.value);
    if (IS_EXC(v)) return S_ERR;
    return store_index(vm, s->u.assign.target, v) ? S_OK : S_ERR;
}

static ExecStatus ex_assign(VM *vm, Node *s)
{
    Value v = EVAL(vm, s->u.assign.value);
    if (IS_EXC(v)) return S_ERR;
    return store(vm, s->u.assign.target, v) ? S_OK : S_ERR;
}

/* `s = s + t` on a string variable that nothing else holds: appended in
 * place, as `s += t` is (the Python idiom; see ex_aug_var) */
static bool append_in_place(VM *vm, Value *slot, ObjStr *old, Value rhs, const Node *site);

static ExecStatus ex_assign_concat(VM *vm, Node *s)
{
    Node *t = s->u.assign.target, *add = s->u.assign.value;
    Value *slot = var_slot(vm, t);
    if (!slot || slot->t != T_STR || slot->o->rc != 1) return ex_assign(vm, s);
    /* hold the old string while the right operand runs: it may rebind t */
    Value old = *slot;
    incref(old);
    Value b = EVAL(vm, add->u.bin.b);
    if (IS_EXC(b)) {
        decref(old);
        return S_ERR;
    }
    slot = var_slot(vm, t);
    if (slot && slot->o == old.o && old.o->rc == 2 && b.t == T_STR) {
        decref(old);
        bool ok = append_in_place(vm, slot, AS_STR(old), b, add);
        decref(b);
        return ok ? S_OK : S_ERR;
    }
    Value r = tp_binop(vm, OP_ADD, old, b, add);
    decref(old);
    decref(b);
    if (IS_EXC(r)) return S_ERR;
    return store(vm, t, r) ? S_OK : S_ERR;
}

/* a, b = x, y: no list is made; every value is computed before any target
 * is assigned */
static ExecStatus ex_destruct_list(VM *vm, Node *s)
{
    int n = s->u.destruct.n;
    Node **items = s->u.destruct.value->u.list.items;
    Value tmp[n];
    for (int i = 0; i < n; i++) {
        tmp[i] = EVAL(vm, items[i]);
        if (IS_EXC(tmp[i])) {
            for (int j = 0; j < i; j++) decref(tmp[j]);
            return S_ERR;
        }
    }
    for (int i = 0; i < n; i++) {
        if (!store(vm, s->u.destruct.targets[i], tmp[i])) {
            for (int j = i + 1; j < n; j++) decref(tmp[j]);
            return S_ERR;
        }
    }
    return S_OK;
}

static ExecStatus ex_destruct(VM *vm, Node *s)
{
    Value v = EVAL(vm, s->u.destruct.value);
    if (IS_EXC(v)) return S_ERR;
    bool ok = destructure(vm, s->u.destruct.targets, s->u.destruct.n, v, s->u.destruct.value);
    decref(v);
    return ok ? S_OK : S_ERR;
}

/* ---------------------------------------------------------------- augmented assignment */

static bool append_in_place(VM *vm, Value *slot, ObjStr *old, Value rhs, const Node *site)
{
    qh_assert(slot->o == &old->h && old->h.rc == 1);
    ObjStr *r = str_append(old, AS_STR(rhs));
    if (!r) {
        if ((size_t)old->len + AS_STR(rhs)->len > 0xfffffff0u)
            vm_error(vm, site, "string too long");
        else
            vm_oom(vm, site);
        return false;
    }
    slot->o = &r->h;
    return true;
}

/* cur op rhs (references taken) */
static Value aug_value(VM *vm, Node *s, Value cur, Value rhs)
{
    BinOp op = (BinOp)s->op;
    Value r;
    if (cur.t == T_NUM && rhs.t == T_NUM)
        r = arith_num(vm, op, cur.n, rhs.n, s);
    else if (op == OP_ADD && cur.t == T_LIST && rhs.t == T_LIST) {
        /* xs += ys extends in place, as in Python */
        ObjList *l = AS_LIST(cur), *y = AS_LIST(rhs);
        size_t ny = y->len;
        if (!list_reserve(l, l->len + ny))
            r = vm_oom(vm, s);
        else {
            for (size_t i = 0; i < ny; i++) {
                incref(y->v[i]);
                l->v[l->len++] = y->v[i];
            }
            r = cur;
            incref(r);
        }
    } else
        r = tp_binop(vm, op, cur, rhs, s);
    decref(cur);
    decref(rhs);
    return r;
}

/* x op= v on a variable: numbers in place; a string that nothing else
 * holds is appended to in place (amortised: `s += t` in a loop is linear) */
static ExecStatus ex_aug_var(VM *vm, Node *s)
{
    Node *t = s->u.assign.target;
    BinOp op = (BinOp)s->op;
    Value *slot = var_slot(vm, t);
    if (!slot) return global_in_task(vm, t) ? S_OK : S_ERR;
    /* x's value is read before the operand runs (which may rebind x) */
    Value cur = *slot;
    if (cur.t == T_UNBOUND) {
        eval_name_error(vm, t);
        return S_ERR;
    }
    incref(cur);
    Value rhs = operand(vm, s->u.assign.value, OPD_B(s));
    if (IS_EXC(rhs)) {
        decref(cur);
        return S_ERR;
    }
    slot = var_slot(vm, t);
    if (cur.t == T_NUM && rhs.t == T_NUM) {
        double x = cur.n, y = rhs.n, r = 0;
        switch (op) {
        case OP_ADD: r = x + y; break;
        case OP_SUB: r = x - y; break;
        case OP_MUL: r = x * y; break;
        case OP_NOPS: qh_unreachable();
        case OP_DIV:
        case OP_IDIV:
        case OP_MOD:
        case OP_POW:
        case OP_MATMUL:
        case OP_EQ:
        case OP_NE:
        case OP_LT:
        case OP_LE:
        case OP_GT:
        case OP_GE:
        case OP_IN:
        case OP_NOTIN:
        case OP_NEG:
        case OP_POS:
        case OP_BAND:
        case OP_BOR:
        case OP_BXOR:
        case OP_SHL:
        case OP_SHR:
        case OP_INVERT: {
            Value v = arith_num(vm, op, x, y, s);
            if (IS_EXC(v)) return S_ERR;
            Value old = *slot;
            *slot = v;
            decref(old);
            return S_OK;
        }
        }
        Value old = *slot;
        *slot = v_num(r);
        decref(old);
        return S_OK;
    }
    if (op == OP_ADD && cur.t == T_STR && rhs.t == T_STR && slot->t == T_STR && slot->o == cur.o &&
        cur.o->rc == 2) {
        decref(cur);
        bool ok = append_in_place(vm, slot, AS_STR(cur), rhs, s);
        decref(rhs);
        return ok ? S_OK : S_ERR;
    }
    Value r = aug_value(vm, s, cur, rhs);
    if (IS_EXC(r)) return S_ERR;
    return store(vm, t, r) ? S_OK : S_ERR;
}

/* x op= leaf for a local or global x and a constant or variable operand,
 * + - * on numbers in place; anything else to ex_aug_var */
#define AUGT_L(vm, t)    (&(vm)->frame->slots[(t)->u.var.slot])
#define AUGT_G(vm, t)    ((vm)->is_task ? NULL : &(vm)->mod->globals[(t)->u.var.slot])
#define AUGV_K(vm, c, y) y = (c)->u.num;
#define AUGV_L(vm, c, y)                                        \
    {                                                           \
        const Value *p_ = &(vm)->frame->slots[(c)->u.var.slot]; \
        if (p_->t != T_NUM) { return ex_aug_var(vm, s); }       \
        y = p_->n;                                              \
    }
#define AUGV_G(vm, c, y)                                        \
    {                                                           \
        const Value *p_ = &(vm)->mod->globals[(c)->u.var.slot]; \
        if (p_->t != T_NUM) { return ex_aug_var(vm, s); }       \
        y = p_->n;                                              \
    }
#define AUG_VAR(name, T, V, OPX)                                    \
    static ExecStatus name(VM *vm, Node *s)                         \
    {                                                               \
        Value *slot = AUGT_##T(vm, s->u.assign.target);             \
        if (!slot || slot->t != T_NUM) return ex_aug_var(vm, s);    \
        double y;                                                   \
        AUGV_##V(vm, s->u.assign.value, y) slot->n = slot->n OPX y; \
        return S_OK;                                                \
    }
#define AUG_VARS(op, OPX)                                   \
    AUG_VAR(ex_aug_##op##_LK, L, K, OPX)                    \
    AUG_VAR(ex_aug_##op##_LL, L, L, OPX)                    \
    AUG_VAR(ex_aug_##op##_LG, L, G, OPX)                    \
    AUG_VAR(ex_aug_##op##_GK, G, K, OPX)                    \
    AUG_VAR(ex_aug_##op##_GL, G, L, OPX)                    \
    AUG_VAR(ex_aug_##op##_GG, G, G, OPX)                    \
    static const ExecFn ex_aug_##op##_shapes[4][4] = {      \
        [OPD_LOCAL] = { [OPD_NUM] = ex_aug_##op##_LK,       \
                        [OPD_LOCAL] = ex_aug_##op##_LL,     \
                        [OPD_GLOBAL] = ex_aug_##op##_LG },  \
        [OPD_GLOBAL] = { [OPD_NUM] = ex_aug_##op##_GK,      \
                         [OPD_LOCAL] = ex_aug_##op##_GL,    \
                         [OPD_GLOBAL] = ex_aug_##op##_GG }, \
    };
AUG_VARS(add, +)
AUG_VARS(sub, -)
AUG_VARS(mul, *)

/* obj[i] op= v past the fast path: the container and subscript are
 * evaluated once (takes rhs) */
static __attribute__((noinline)) ExecStatus aug_index_slow(VM *vm, Node *s, Value rhs)
{
    Node *t = s->u.assign.target;
    Value obj = EVAL(vm, t->u.index.obj);
    if (IS_EXC(obj)) {
        decref(rhs);
        return S_ERR;
    }
    int ni = t->u.index.nidx;
    Value idx[ni];
    if (!eval_subscripts(vm, t, idx)) {
        decref(obj);
        decref(rhs);
        return S_ERR;
    }
    bool ok = false;
    Value *e = ni == 1 && t->u.index.idx[0]->kind != N_SLICE ? elem_fast(t, obj, idx[0]) : NULL;
    if (e && e->t == T_NUM && rhs.t == T_NUM) {
        Value r = arith_num(vm, (BinOp)s->op, e->n, rhs.n, s);
        if (!IS_EXC(r)) {
            *e = r;
            ok = true;
        }
    } else {
        Value cur = tp_index(vm, obj, ni, idx, t, t->u.index.idx);
        if (!IS_EXC(cur)) {
            Value r = aug_value(vm, s, cur, rhs);
            rhs = v_nil();
            if (!IS_EXC(r)) {
                ok = tp_setindex(vm, obj, ni, idx, r, t, t->u.index.idx);
                decref(r);
            }
        }
    }
    for (int i = 0; i < ni; i++) decref(idx[i]);
    decref(obj);
    decref(rhs);
    return ok ? S_OK : S_ERR;
}

/* obj[i] op= v; numbers in a list or a dict record in place */
static ExecStatus ex_aug_index(VM *vm, Node *s)
{
    Node *t = s->u.assign.target;
    Value rhs = operand(vm, s->u.assign.value, OPD_B(s));
    if (IS_EXC(rhs)) return S_ERR;
    unsigned so = IX_OBJ(t);
    if (rhs.t == T_NUM && so != OPD_ANY && IX_SUB(t) != IX_ANY) {
        Value *e = elem_leaf(vm, t, ix_var(vm, t->u.index.obj, so));
        if (e && e->t == T_NUM) {
            double x = e->n, y = rhs.n;
            switch ((BinOp)s->op) {
            case OP_ADD: e->n = x + y; return S_OK;
            case OP_SUB: e->n = x - y; return S_OK;
            case OP_MUL: e->n = x * y; return S_OK;
            case OP_NOPS: qh_unreachable();
            case OP_DIV:
            case OP_IDIV:
            case OP_MOD:
            case OP_POW:
            case OP_MATMUL:
            case OP_EQ:
            case OP_NE:
            case OP_LT:
            case OP_LE:
            case OP_GT:
            case OP_GE:
            case OP_IN:
            case OP_NOTIN:
            case OP_NEG:
            case OP_POS:
            case OP_BAND:
            case OP_BOR:
            case OP_BXOR:
            case OP_SHL:
            case OP_SHR:
            case OP_INVERT: {
                Value r = arith_num(vm, (BinOp)s->op, x, y, s);
                if (IS_EXC(r)) return S_ERR;
                *e = r;
                return S_OK;
            }
            }
        }
    }
    return aug_index_slow(vm, s, rhs);
}

/* ---------------------------------------------------------------- loops */

/* runs the loop body with the loop variable(s) bound to v (reference taken) */
static ExecStatus for_body(VM *vm, Node *s, Value v)
{
    if (s->u.fors.nvars == 1) {
        if (!store(vm, s->u.fors.var, v)) return S_ERR;
    } else {
        bool ok = destructure(vm, s->u.fors.vars, s->u.fors.nvars, v, s->u.fors.iter);
        decref(v);
        if (!ok) return S_ERR;
    }
    ExecStatus st = block(vm, s->u.fors.body);
    if (st == S_CONTINUE) return S_OK;
    return st;
}

/* A loop with a lookahead plan (laplan.h) run by the main program: it
 * records where its iterations stand (VM.loops) so that calls of the next
 * iterations can start while the program waits (lookahead.c). coll: the
 * list iterated, or nil for a range (start, stop, step). */
static __attribute__((noinline)) ExecStatus ex_for_planned(VM *vm, Node *s, Value coll,
                                                           double start, double stop, double step)
{
    LoopCtx lc = { s,     vm->frame, 0,    vm->qcall_seq, coll,      0,
                   start, step,      stop, start,         vm->loops, vm->mod };
    vm->loops = &lc;
    ExecStatus result = S_OK;
    unsigned tick = 0;
    if (coll.t == T_LIST) {
        ObjList *l = AS_LIST(coll);
        for (size_t i = 0; i < l->len; i++, lc.iter++) {
            lc.pos = i;
            lc.iter_seq = vm->qcall_seq;
            incref(l->v[i]);
            ExecStatus st = for_body(vm, s, l->v[i]);
            if (st == S_BREAK) break;
            if (st != S_OK) {
                result = st;
                break;
            }
        }
    } else {
        for (double x = start; step > 0 ? x < stop : x > stop; x += step, lc.iter++) {
            lc.x = x;
            lc.iter_seq = vm->qcall_seq;
            ExecStatus st = for_body(vm, s, v_num(x));
            if (st == S_BREAK) break;
            if (st != S_OK) {
                result = st;
                break;
            }
            if (((++tick & 1023) == 0) && vm_attention(vm) && vm_check_interrupt(vm)) {
                result = S_ERR;
                break;
            }
        }
    }
    vm->loops = lc.up;
    if (vm->la_watch && vm->in->hooks.loop_exit) vm->in->hooks.loop_exit(vm, &lc);
    return result;
}

/* for i in range(...): no list is built */
static ExecStatus ex_for_range(VM *vm, Node *s)
{
    double start, stop, step;
    bool past;
    if (!range_args(vm, s->u.fors.iter, &start, &stop, &step, &past)) return S_ERR;
    if (s->u.fors.plan && vm->la_on && !past)
        return ex_for_planned(vm, s, v_nil(), start, stop, step);
    Node *var = s->u.fors.var;
    bool fast =
        s->u.fors.nvars == 1 && (var->kind == N_LOCAL || (var->kind == N_GLOBAL && !vm->is_task));
    unsigned tick = 0;
    for (double x = start; step > 0 ? x < stop : x > stop; x += step) {
        ExecStatus st;
        if (fast) {
            Value *slot = var->kind == N_LOCAL ? &vm->frame->slots[var->u.var.slot]
                                               : &vm->mod->globals[var->u.var.slot];
            decref(*slot);
            *slot = v_num(x);
            st = block(vm, s->u.fors.body);
            if (st == S_CONTINUE) st = S_OK;
        } else {
            st = for_body(vm, s, v_num(x));
        }
        if (st == S_BREAK) return S_OK;
        if (st != S_OK) return st;
        if (((++tick & 1023) == 0) && vm_attention(vm) && vm_check_interrupt(vm)) return S_ERR;
    }
    if (past) {
        range_past(vm, s->u.fors.iter);
        return S_ERR;
    }
    return S_OK;
}

static ExecStatus ex_for(VM *vm, Node *s)
{
    Node *it = s->u.fors.iter;
    Value coll = eval_forced(vm, it);
    if (IS_EXC(coll)) return S_ERR;
    ExecStatus result = S_OK;
    if (coll.t == T_LIST && s->u.fors.plan && vm->la_on) {
        result = ex_for_planned(vm, s, coll, 0, 0, 0);
        decref(coll);
        return result;
    }
    if (coll.t == T_LIST) {
        /* a list: its elements bound directly (a local in place; several
         * names from an element that is a list of as many) */
        ObjList *l = AS_LIST(coll);
        Node *var = s->u.fors.var;
        int nv = s->u.fors.nvars;
        for (size_t i = 0; i < l->len; i++) {
            Value x = l->v[i];
            incref(x);
            bool ok = true;
            if (nv == 1) {
                if (var->kind == N_LOCAL) {
                    Value *slot = &vm->frame->slots[var->u.var.slot];
                    Value old = *slot;
                    *slot = x;
                    decref(old);
                } else
                    ok = store(vm, var, x);
            } else if (x.t == T_LIST && AS_LIST(x)->len == (size_t)nv) {
                ObjList *e = AS_LIST(x);
                for (int k = 0; k < nv && ok; k++) {
                    incref(e->v[k]);
                    ok = store(vm, s->u.fors.vars[k], e->v[k]);
                }
                decref(x);
            } else {
                ok = destructure(vm, s->u.fors.vars, nv, x, it);
                decref(x);
            }
            if (!ok) {
                result = S_ERR;
                break;
            }
            ExecStatus st = block(vm, s->u.fors.body);
            if (st == S_CONTINUE || st == S_OK) continue;
            if (st != S_BREAK) result = st;
            break;
        }
        decref(coll);
        return result;
    }
    Iter iter;
    if (!tp_iter_begin(vm, coll, &iter, it)) {
        decref(coll);
        return S_ERR;
    }
    for (;;) {
        Value x;
        int k = tp_iter_next(vm, coll, &iter, &x, it);
        if (k < 0) {
            result = S_ERR;
            break;
        }
        if (k == 0) break;
        ExecStatus st = for_body(vm, s, x);
        if (st == S_BREAK) break;
        if (st != S_OK) {
            result = st;
            break;
        }
    }
    tp_iter_end(&iter);
    decref(coll);
    return result;
}

static ExecStatus ex_while(VM *vm, Node *s)
{
    for (;;) {
        int t = truth(vm, s->u.whiles.cond);
        if (t < 0) return S_ERR;
        if (!t) return S_OK;
        ExecStatus st = block(vm, s->u.whiles.body);
        if (st == S_BREAK) return S_OK;
        if (st == S_RETURN || st == S_ERR) return st;
        if (vm_attention(vm) && vm_check_interrupt(vm)) return S_ERR;
    }
}

/* ---------------------------------------------------------------- statements */

static ExecStatus ex_if(VM *vm, Node *s)
{
    for (;;) {
        int t = truth(vm, s->u.ifs.cond);
        if (t < 0) return S_ERR;
        if (t) return block(vm, s->u.ifs.then);
        Node *e = s->u.ifs.els;
        if (!e) return S_OK;
        if (e->kind != N_IF) return block(vm, e);
        s = e;
    }
}

static ExecStatus ex_return(VM *vm, Node *s)
{
    if (!vm->frame || !vm->frame->fn) {
        vm_error(vm, s, "'return' outside a function");
        return S_ERR;
    }
    Value v = s->u.expr.expr ? EVAL(vm, s->u.expr.expr) : v_nil();
    if (IS_EXC(v)) return S_ERR;
    decref(vm->ret);
    vm->ret = v;
    return S_RETURN;
}

/* an expression for its effect; a value with an effect of its own as a
 * statement (an operator applies) through its kind's stmt slot */
static ExecStatus ex_expr(VM *vm, Node *s)
{
    Value v = EVAL(vm, s->u.expr.expr);
    if (IS_EXC(v)) return S_ERR;
    if (v.t < T_FIRST_OBJ) return S_OK;
    if (is_lazy(v) && (vm->q || vm->is_task)) {
        /* inside a quantum function the value decides (an operator a call
         * returned applies); a task's futures are all finished. The main
         * program lets a dropped call's future run on. */
        Value r = tp_force(vm, v, s);
        decref(v);
        if (IS_EXC(r)) return S_ERR;
        v = r;
    }
    const TypeOps *t = type_of(v);
    if (t->stmt) {
        Value r = t->stmt(vm, v, s);
        decref(v);
        if (IS_EXC(r)) return S_ERR;
        decref(r);
        return S_OK;
    }
    decref(v);
    return S_OK;
}

static ExecStatus ex_break(VM *vm, Node *s)
{
    (void)vm;
    (void)s;
    return S_BREAK;
}
static ExecStatus ex_continue(VM *vm, Node *s)
{
    (void)vm;
    (void)s;
    return S_CONTINUE;
}
static ExecStatus ex_pass(VM *vm, Node *s)
{
    (void)vm;
    (void)s;
    return S_OK;
}

static ExecStatus ex_fndef(VM *vm, Node *s)
{
    Value f = make_closure(vm, s->u.fn);
    if (IS_EXC(f)) return S_ERR;
    return store(vm, s->u.fn->binding, f) ? S_OK : S_ERR;
}

static ExecStatus ex_try(VM *vm, Node *s)
{
    size_t sp = vm->sp;
    Frame *fr = vm->frame;
    int depth = vm->depth;
    ObjModule *mod = vm->mod;
    ExecStatus st = block(vm, s->u.tries.body);
    if (st != S_ERR) {
        qh_assert(vm->sp == sp && vm->frame == fr && vm->depth == depth);
        return st;
    }
    if (vm->err.interrupted) return S_ERR;
    qh_assert(vm->sp >= sp && vm->depth >= depth); /* an error unwinds only inward frames */
    /* unwind to the try's own frame */
    while (vm->sp > sp) decref(vm->stack[--vm->sp]);
    vm->frame = fr;
    vm->depth = depth;
    vm->mod = mod;
    if (s->u.tries.var && !store(vm, s->u.tries.var, v_str(vm->err.msg))) return S_ERR;
    return block(vm, s->u.tries.handler);
}

static ExecStatus ex_import(VM *vm, Node *s)
{
    if (!vm->in->hooks.import) {
        vm_error(vm, s, "import is not available here");
        return S_ERR;
    }
    if (vm->is_task) {
        vm_error(
            vm, s,
            "cannot import inside a quantum function: a qfn may not print, read input, import or "
            "assign globals (here through a function value)");
        return S_ERR;
    }
    Value m = vm->in->hooks.import(vm, s->u.import.name, s);
    if (IS_EXC(m)) return S_ERR;
    return store(vm, s->u.import.var, m) ? S_OK : S_ERR;
}

/* inlined into every loop, branch and body (with the hot statement switch
 * a call away): callgrind, 1 to 3% fewer instructions on loops and calls */
static inline __attribute__((always_inline)) ExecStatus block(VM *vm, Node *b)
{
    Node **items = b->u.list.items;
    int n = b->u.list.n;
    for (int i = 0; i < n; i++) {
        ExecStatus st = EXEC(vm, items[i]);
        if (st != S_OK) return st;
    }
    return S_OK;
}

static ExecStatus ex_block(VM *vm, Node *s) { return block(vm, s); }

/* ---------------------------------------------------------------- prepare */

static void prepare_list(Node **v, int n)
{
    for (int i = 0; i < n; i++) prepare(v[i]);
}
static void prepare_list_at(int depth, Node **v, int n)
{
    for (int i = 0; i < n; i++) prepare_at(v[i], depth);
}

static void prepare_fn(FnProto *f)
{
    for (int i = 0; i < f->nparams; i++)
        if (f->defaults[i]) prepare(f->defaults[i]);
    if (f->device) prepare(f->device);
    prepare(f->body);
}

/* t and v name the same variable */
static bool var_kind_same(const Node *t, const Node *v)
{
    return t->kind == v->kind && t->u.var.slot == v->u.var.slot &&
           (t->kind == N_LOCAL || t->kind == N_GLOBAL || t->kind == N_LOCALCELL ||
            t->kind == N_UPVAL);
}

static EvalFn binop_handler(BinOp op, unsigned sa, unsigned sb)
{
    switch (op) {
    case OP_ADD: return ev_add_shapes[sa][sb];
    case OP_SUB: return ev_sub_shapes[sa][sb];
    case OP_MUL: return ev_mul_shapes[sa][sb];
    case OP_DIV: return ev_div_shapes[sa][sb];
    case OP_IDIV: return ev_idiv;
    case OP_MOD: return ev_mod;
    case OP_POW: return ev_pow;
    case OP_LT: return ev_lt_shapes[sa][sb];
    case OP_LE: return ev_le_shapes[sa][sb];
    case OP_GT: return ev_gt_shapes[sa][sb];
    case OP_GE: return ev_ge_shapes[sa][sb];
    case OP_EQ: return ev_eq_shapes[sa][sb];
    case OP_NE: return ev_ne_shapes[sa][sb];
    case OP_BAND: return ev_band_shapes[sa][sb];
    case OP_BOR: return ev_bor_shapes[sa][sb];
    case OP_BXOR: return ev_bxor_shapes[sa][sb];
    case OP_SHL: return ev_shl_shapes[sa][sb];
    case OP_SHR: return ev_shr_shapes[sa][sb];
    case OP_MATMUL:
    case OP_IN:
    case OP_NOTIN: return ev_binop;
    case OP_NEG:
    case OP_POS:
    case OP_INVERT:
    case OP_NOPS: break;
    }
    qh_unreachable();
}

/* Expression depth. Only calls check the C stack (check_stack), but one
 * expression can nest 20,000 operators deep (parse.c's chains) and would
 * overflow the stack where a deep recursion left less than that: every
 * DEEP_EVERY-th level of an expression below its statement runs through
 * ev_deep, which checks the stack like a call and then runs the kind's
 * general handler. Ordinary expressions are never that deep: no cost. */
#define DEEP_EVERY 64

/* the general handler of an expression kind that evaluates children; NULL
 * for leaves (nothing below them) */
static EvalFn deep_handler(const Node *n)
{
    switch ((NodeKind)((NodeKind)n->kind)) {
    case N_BINARY: return binop_handler((BinOp)n->op, OPD_A(n), OPD_B(n));
    case N_AND:
    case N_OR: return ev_andor;
    case N_UNARY: return ev_unary;
    case N_NOT: return ev_not;
    case N_CALL: return ev_call;
    case N_INDEX: return ev_index;
    case N_MEMBER: return ev_member;
    case N_COND: return ev_cond;
    case N_LIST: return ev_list;
    case N_DICT: return ev_dict;
    case N_LISTCOMP:
    case N_DICTCOMP: return ev_comp;
    case N_NKINDS: qh_unreachable();
    case N_NUM:
    case N_IMAG:
    case N_STR:
    case N_TRUE:
    case N_FALSE:
    case N_NIL:
    case N_NAME:
    case N_LOCAL:
    case N_LOCALCELL:
    case N_UPVAL:
    case N_GLOBAL:
    case N_BUILTIN:
    case N_SELF:
    case N_SLICE:
    case N_FNEXPR:
    case N_EXPRSTMT:
    case N_ASSIGN:
    case N_AUGASSIGN:
    case N_DESTRUCT:
    case N_IF:
    case N_WHILE:
    case N_FOR:
    case N_BREAK:
    case N_CONTINUE:
    case N_RETURN:
    case N_FNDEF:
    case N_TRY:
    case N_IMPORT:
    case N_GLOBALDECL:
    case N_BLOCK:
    case N_PASS: return NULL;
    }
    qh_unreachable();
}

static inline size_t stack_used(const VM *vm);
static Value ev_deep(VM *vm, Node *n)
{
    if (stack_used(vm) > vm->stack_limit)
        return vm_error(
            vm, n,
            "maximum recursion depth exceeded (an expression nested too deeply, %d calls deep)",
            vm->depth);
    return deep_handler(n)(vm, n);
}

/* the handler of an index n (its parts prepared), by the shapes of a
 * single subscript and of the object */
static void prepare_index(Node *n, int depth)
{
#define SUB(x) prepare_at((x), depth + 1)
    SUB(n->u.index.obj);
    for (int i = 0; i < n->u.index.nidx; i++) {
        Node *s = n->u.index.idx[i];
        if (s->kind == N_SLICE) {
            SUB(s->u.slice.lo);
            SUB(s->u.slice.hi);
            SUB(s->u.slice.step);
        }
        SUB(s);
    }
#undef SUB
    if (n->u.index.nidx == 1 && n->u.index.idx[0]->kind != N_SLICE) {
        unsigned so = operand_shape(n->u.index.obj);
        unsigned si = subscript_shape(n->u.index.idx[0]);
        n->flag = (uint8_t)((so == OPD_LOCAL || so == OPD_GLOBAL ? so : OPD_ANY) | si << 2);
        static const EvalFn shaped[4][5] = {
            [OPD_LOCAL] = { [IX_ANY] = ev_index_LX,
                            [IX_NUM] = ev_index_LK,
                            [IX_LOCAL] = ev_index_LL,
                            [IX_GLOBAL] = ev_index_LG,
                            [IX_STR] = ev_index_LS },
            [OPD_GLOBAL] = { [IX_NUM] = ev_index_GK,
                             [IX_LOCAL] = ev_index_GL,
                             [IX_GLOBAL] = ev_index_GG,
                             [IX_STR] = ev_index_GS },
        };
        n->run.ev = shaped[so][si] ? shaped[so][si] : ev_index1;
    } else {
        n->run.ev = ev_index;
    }
}

static void prepare_comp(Node *n, int depth)
{
    for (int i = 0; i < n->u.comp.nclauses; i++) {
        CompClause *c = &n->u.comp.clauses[i];
        prepare_list_at(depth + 1, c->vars, c->nvars);
        prepare_at(c->iter, depth + 1);
        prepare_list_at(depth + 1, c->conds, c->nconds);
    }
    prepare_at(n->u.comp.key, depth + 1);
    prepare_at(n->u.comp.elt, depth + 1);
}

/* the handler of an assignment t = v, by their shapes */
static ExecFn assign_handler(const Node *t, const Node *v)
{
    if (v->kind == N_BINARY && v->op == OP_ADD && var_kind_same(t, v->u.bin.a))
        return ex_assign_concat;
    if (t->kind == N_LOCAL) return ex_assign_local;
    if (t->kind == N_GLOBAL) return ex_assign_global;
    if (t->kind == N_INDEX) return ex_assign_index;
    return ex_assign;
}

/* the handler of an augmented assignment n, by its operator and the shapes
 * of its target and value */
static ExecFn aug_handler(Node *n)
{
    Node *t = n->u.assign.target;
    n->flag = (uint8_t)(operand_shape(n->u.assign.value) << 2);
    unsigned st = operand_shape(t), sv = operand_shape(n->u.assign.value);
    const ExecFn *row = n->op == OP_ADD   ? ex_aug_add_shapes[st]
                        : n->op == OP_SUB ? ex_aug_sub_shapes[st]
                        : n->op == OP_MUL ? ex_aug_mul_shapes[st]
                                          : NULL;
    if (row && row[sv]) return row[sv];
    return t->kind == N_INDEX ? ex_aug_index : ex_aug_var;
}

/* a, b = x, y (as many values as targets): no list is made */
static ExecFn destruct_handler(const Node *n)
{
    const Node *v = n->u.destruct.value;
    return v->kind == N_LIST && v->u.list.n == n->u.destruct.n ? ex_destruct_list : ex_destruct;
}

/* prepare_node's statements: their parts are statements or expressions
 * of their own (depth 0) */
static void prepare_stmt(Node *n)
{
    switch ((NodeKind)n->kind) {
    case N_EXPRSTMT:
    case N_RETURN:
        prepare(n->u.expr.expr);
        n->run.ex = n->kind == N_RETURN ? ex_return : ex_expr;
        return;
    case N_ASSIGN:
        prepare(n->u.assign.target);
        prepare(n->u.assign.value);
        n->run.ex = assign_handler(n->u.assign.target, n->u.assign.value);
        return;
    case N_AUGASSIGN:
        prepare(n->u.assign.target);
        prepare(n->u.assign.value);
        n->run.ex = aug_handler(n);
        return;
    case N_DESTRUCT:
        prepare_list(n->u.destruct.targets, n->u.destruct.n);
        prepare(n->u.destruct.value);
        n->run.ex = destruct_handler(n);
        return;
    case N_IF:
        prepare(n->u.ifs.cond);
        prepare(n->u.ifs.then);
        prepare(n->u.ifs.els);
        n->run.ex = ex_if;
        return;
    case N_WHILE:
        prepare(n->u.whiles.cond);
        prepare(n->u.whiles.body);
        n->run.ex = ex_while;
        return;
    case N_FOR:
        prepare_list(n->u.fors.vars, n->u.fors.nvars);
        prepare(n->u.fors.iter);
        prepare(n->u.fors.body);
        n->run.ex = is_range_call(n->u.fors.iter) ? ex_for_range : ex_for;
        return;
    case N_BREAK: n->run.ex = ex_break; return;
    case N_CONTINUE: n->run.ex = ex_continue; return;
    case N_FNDEF:
        prepare(n->u.fn->binding);
        prepare_fn(n->u.fn);
        n->run.ex = ex_fndef;
        return;
    case N_TRY:
        prepare(n->u.tries.body);
        prepare(n->u.tries.var);
        prepare(n->u.tries.handler);
        n->run.ex = ex_try;
        return;
    case N_IMPORT:
        prepare(n->u.import.var);
        n->run.ex = ex_import;
        return;
    case N_GLOBALDECL:
    case N_PASS: n->run.ex = ex_pass; return;
    case N_BLOCK:
        prepare_list(n->u.list.items, n->u.list.n);
        n->run.ex = ex_block;
        return;
    case N_NUM:
    case N_IMAG:
    case N_STR:
    case N_TRUE:
    case N_FALSE:
    case N_NIL:
    case N_NAME:
    case N_LOCAL:
    case N_LOCALCELL:
    case N_UPVAL:
    case N_GLOBAL:
    case N_BUILTIN:
    case N_SELF:
    case N_LIST:
    case N_DICT:
    case N_UNARY:
    case N_BINARY:
    case N_AND:
    case N_OR:
    case N_NOT:
    case N_CALL:
    case N_INDEX:
    case N_SLICE:
    case N_MEMBER:
    case N_FNEXPR:
    case N_COND:
    case N_LISTCOMP:
    case N_DICTCOMP:
    case N_NKINDS: break; /* expressions: prepare_node's */
    }
    qh_unreachable();
}

/* Chooses the handler of n (and of everything under it) from its kind and
 * shape; depth is n's distance from its statement (see ev_deep). Idempotent. */
static void prepare_node(Node *n, int depth)
{
#define SUB(x) prepare_at((x), depth + 1)
    if (!n) return;
    switch ((NodeKind)n->kind) {
    case N_NUM: n->run.ev = ev_num; return;
    case N_IMAG: n->run.ev = ev_imag; return;
    case N_STR: n->run.ev = ev_str; return;
    case N_TRUE: n->run.ev = ev_true; return;
    case N_FALSE: n->run.ev = ev_false; return;
    case N_NIL: n->run.ev = ev_nil; return;
    case N_LOCAL: n->run.ev = ev_local; return;
    case N_LOCALCELL: n->run.ev = ev_localcell; return;
    case N_UPVAL: n->run.ev = ev_upval; return;
    case N_GLOBAL: n->run.ev = ev_global; return;
    case N_BUILTIN: n->run.ev = ev_builtin; return;
    case N_SELF: n->run.ev = ev_self; return;
    case N_LIST:
        prepare_list_at(depth + 1, n->u.list.items, n->u.list.n);
        n->run.ev = ev_list;
        return;
    case N_DICT:
        prepare_list_at(depth + 1, n->u.dict.keys, n->u.dict.n);
        prepare_list_at(depth + 1, n->u.dict.vals, n->u.dict.n);
        n->run.ev = ev_dict;
        return;
    case N_UNARY:
        SUB(n->u.bin.a);
        n->run.ev = ev_unary;
        return;
    case N_NOT:
        SUB(n->u.bin.a);
        n->run.ev = ev_not;
        return;
    case N_AND:
    case N_OR:
        SUB(n->u.bin.a);
        SUB(n->u.bin.b);
        n->run.ev = ev_andor;
        return;
    case N_BINARY:
        SUB(n->u.bin.a);
        SUB(n->u.bin.b);
        n->flag = (uint8_t)(operand_shape(n->u.bin.a) | operand_shape(n->u.bin.b) << 2);
        n->run.ev = binop_handler((BinOp)n->op, OPD_A(n), OPD_B(n));
        return;
    case N_CALL:
        SUB(n->u.call.fn);
        prepare_list_at(depth + 1, n->u.call.args, n->u.call.nargs);
        for (int i = 0; i < n->u.call.nkw; i++) SUB(n->u.call.kw[i].value);
        n->run.ev = ev_call;
        return;
    case N_INDEX: prepare_index(n, depth); return;
    case N_SLICE: n->run.ev = ev_slice; return;
    case N_MEMBER:
        SUB(n->u.member.obj);
        n->run.ev = ev_member;
        return;
    case N_FNEXPR:
        prepare_fn(n->u.fn);
        n->run.ev = ev_fnexpr;
        return;
    case N_COND:
        SUB(n->u.ifs.cond);
        SUB(n->u.ifs.then);
        SUB(n->u.ifs.els);
        n->run.ev = ev_cond;
        return;
    case N_LISTCOMP:
    case N_DICTCOMP:
        prepare_comp(n, depth);
        n->run.ev = ev_comp;
        return;
    case N_EXPRSTMT:
    case N_ASSIGN:
    case N_AUGASSIGN:
    case N_DESTRUCT:
    case N_IF:
    case N_WHILE:
    case N_FOR:
    case N_BREAK:
    case N_CONTINUE:
    case N_RETURN:
    case N_FNDEF:
    case N_TRY:
    case N_IMPORT:
    case N_GLOBALDECL:
    case N_PASS:
    case N_BLOCK: prepare_stmt(n); return;
    case N_NAME: return; /* unresolved: never run (an error stopped the pipeline) */
    case N_NKINDS: break;
    }
#undef SUB
    qh_unreachable();
}

/* c's value is forced as soon as c returns (eval.h, EVAL_FORCED_AT_ONCE) */
static void forced_at_once(Node *c)
{
    if (c && c->kind == N_CALL) c->flag |= EVAL_FORCED_AT_ONCE;
}

/* Marks the calls among n's parts whose value n forces as soon as they
 * return: the operand of a unary operator, not, and/or's left side; a
 * binary operator's right operand (and its left when the right one is a
 * leaf: nothing runs in between); a condition; an augmented assignment's
 * value; the arguments of a builtin that reads them, which call.c's fast
 * path forces as each is evaluated (positional only), and the one of a
 * builtin flagged BI_FORCES (wait). */
static void note_forced(Node *n)
{
    NodeKind k = (NodeKind)n->kind;
    if (k == N_UNARY || k == N_NOT || k == N_AND || k == N_OR) {
        forced_at_once(n->u.bin.a);
    } else if (k == N_BINARY) {
        forced_at_once(n->u.bin.b);
        if (operand_shape(n->u.bin.b) != OPD_ANY) forced_at_once(n->u.bin.a);
    } else if (k == N_COND || k == N_IF) {
        forced_at_once(n->u.ifs.cond);
    } else if (k == N_WHILE) {
        forced_at_once(n->u.whiles.cond);
    } else if (k == N_AUGASSIGN) {
        forced_at_once(n->u.assign.value);
    } else if (k == N_CALL && n->u.call.fn->kind == N_BUILTIN && !n->u.call.nkw) {
        const BuiltinDef *bd = builtin_get(n->u.call.fn->u.var.slot);
        bool reads = !(bd->flags & BI_LAZY) || ((bd->flags & BI_FORCES) && n->u.call.nargs == 1);
        for (int i = 0; reads && i < n->u.call.nargs; i++) forced_at_once(n->u.call.args[i]);
    }
}

static void prepare_at(Node *n, int depth)
{
    if (!n) return;
    prepare_node(n, depth);
    note_forced(n);
    if (depth >= DEEP_EVERY && depth % DEEP_EVERY == 0) {
        EvalFn h = deep_handler(n);
        if (h) n->run.ev = ev_deep;
    }
}

/* Prepares a module's code once, on the main thread before it runs: the
 * top-level statements and every function defined in the file. */
static void prepare_module(ModInfo *m)
{
    if (m->prepared) return;
    prepare(m->body);
    for (int i = 0; i < m->nprotos; i++) prepare_fn(m->protos[i]);
    m->prepared = true;
}

/* ---------------------------------------------------------------- frames */

/* bytes of this thread's C stack in use below the VM's base */
static inline size_t stack_used(const VM *vm)
{
    char here;
    return (size_t)(vm->stack_base > &here ? vm->stack_base - &here : &here - vm->stack_base);
}

static bool check_stack(VM *vm, const Node *site)
{
    size_t used = stack_used(vm);
    if (vm->depth >= vm->max_depth || used > vm->stack_limit) {
        vm_error(vm, site, "maximum recursion depth exceeded (%d calls deep)", vm->depth);
        return false;
    }
    return true;
}

/* runs f's body in a frame of bound slots (their references are taken) */
static inline Value run_body(VM *vm, ObjFunc *f, Value *slots, const Node *site)
{
    FnProto *p = f->p;
    if (!check_stack(vm, site)) {
        for (int i = 0; i < p->nlocals; i++) decref(slots[i]);
        return v_exc();
    }
    if (__builtin_expect(!p->body->run.ex, 0)) prepare_fn(p);
    if (p->has_cells)
        for (int i = 0; i < p->nlocals; i++)
            if (p->local_is_cell[i]) slots[i] = v_obj(&cell_new(slots[i])->h);
    Frame fr = { p, f, slots, vm->frame };
    ObjModule *saved_mod = vm->mod;
    vm->frame = &fr;
    vm->mod = f->mod;
    vm->depth++;
    ExecStatus st = block(vm, p->body);
    vm->depth--;
    vm->frame = fr.parent;
    vm->mod = saved_mod;
    for (int i = 0; i < p->nlocals; i++) decref(slots[i]);
    if (st == S_ERR) {
        vm_tb_push(vm, site);
        return v_exc();
    }
    if (st == S_RETURN) {
        Value r = vm->ret;
        vm->ret = v_nil();
        return r;
    }
    return v_nil();
}

Value eval_run_body(VM *vm, ObjFunc *f, Value *slots, const Node *site)
{
    return run_body(vm, f, slots, site);
}

/* f(args): a plain function with as many positional arguments as it has
 * parameters, whose evaluated arguments become its frame in place and
 * whose body runs here; every other call through call.c */
static Value ev_call(VM *vm, Node *n)
{
    Value callee = EVAL(vm, n->u.call.fn);
    if (callee.t != T_FUNC) return IS_EXC(callee) ? callee : eval_call_callee(vm, n, callee);
    ObjFunc *f = AS_FUNC(callee);
    FnProto *p = f->p;
    int na = n->u.call.nargs, nl = p->nlocals;
    size_t base = vm->sp;
    if (na != p->nparams || n->u.call.nkw || p->is_qfn || base + (size_t)nl + 8 >= vm->cap)
        return eval_call_callee(vm, n, callee);
    Value *slots = vm->stack + base;
    for (int i = 0; i < na; i++) {
        Value v = EVAL(vm, n->u.call.args[i]);
        if (IS_EXC(v)) {
            while (vm->sp > base) decref(vm->stack[--vm->sp]);
            decref(callee);
            return v;
        }
        vm->stack[vm->sp++] = v;
    }
    for (int i = na; i < nl; i++) slots[i] = v_unbound();
    vm->sp = base + (size_t)nl;
    Value r = run_body(vm, f, slots, n);
    qh_assert(vm->sp == base + (size_t)nl);
    vm->sp = base;
    decref(callee);
    return r;
}

/* the entry points for call.c and the rooms above (a REPL entry's code is
 * prepared the first time it runs) */
Value eval_expr(VM *vm, Node *e)
{
    if (__builtin_expect(!e->run.ev, 0)) prepare(e);
    return EVAL(vm, e);
}

ExecStatus exec_stmt(VM *vm, Node *s)
{
    if (__builtin_expect(!s->run.ex, 0)) prepare(s);
    return EXEC(vm, s);
}

ExecStatus exec_block(VM *vm, Node *b)
{
    if (__builtin_expect(!b->run.ex, 0)) prepare(b);
    return block(vm, b);
}

/* ---------------------------------------------------------------- running a module */

/* --trace: a main-thread statement from ts_us to now */
static void trace_stmt(Trace *t, int line, double ts_us)
{
    char name[64], args[64];
    snprintf(name, sizeof name, "line %d", line);
    snprintf(args, sizeof args, "{\"line\":%d}", line);
    trace_complete(t, 0, name, "statement", ts_us, trace_now_us(t) - ts_us, args);
}

void eval_prepare_module(ModInfo *m) { prepare_module(m); }

bool vm_run_module(VM *vm, ObjModule *m)
{
    prepare_module(m->info);
    const Source *saved_top = vm->top_src;
    vm->top_src = NULL; /* a module's own statements report its own source */
    ObjModule *saved = vm->mod;
    Frame *saved_frame = vm->frame;
    vm->mod = m;
    vm->frame = NULL;
    Node *body = m->info->body;
    bool ok = true;
    Trace *trace = vm->is_task ? NULL : vm->in->trace;
    StraightCtx saved_straight = vm->straight;
    if (vm->la_on) vm->straight = (StraightCtx){ body, 0, 0, m };
    for (int i = 0; i < body->u.list.n; i++) {
        Node *s = body->u.list.items[i];
        int saved_line = vm->cur_line;
        vm->cur_line = s->line;
        if (vm->la_on) {
            vm->straight.i = i;
            vm->straight.seq = vm->qcall_seq;
        }
        double ts = trace ? trace_now_us(trace) : 0;
        ExecStatus st = EXEC(vm, s);
        if (trace) trace_stmt(trace, s->line, ts);
        vm->cur_line = saved_line;
        if (st == S_ERR) {
            ok = false;
            break;
        }
        if (st == S_BREAK || st == S_CONTINUE) {
            vm_error(vm, s, "'break' or 'continue' outside a loop");
            ok = false;
            break;
        }
    }
    vm->straight = saved_straight;
    vm->mod = saved;
    vm->frame = saved_frame;
    vm->top_src = saved_top;
    return ok;
}
