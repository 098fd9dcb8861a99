/* test_types.c — Check unit tests of the per-kind operation table
 * (TypeOps, src/value.h) and its dispatcher (src/types.h): the table every
 * room filled at start-up (each kind's slots and flags consistent), and two
 * kinds registered from this file alone — no edit to the evaluator — that
 * programs then use through every slot: `vec`, a small numeric vector
 * (operators both ways round, comparison, hashing, indexing, element
 * assignment, len, iteration, in, calls, members, math, sum, printing,
 * copies into quantum tasks), and `later`, a lazy kind standing for a
 * value not known yet (a remote future), forced by the dispatcher before
 * any slot or builtin sees it. */
#include <math.h>
#include <stdatomic.h>

#include "builtins.h"
#include "qh_harness.h"
#include "types.h"
#include "vm.h"

/* ================================================================ vec */

#define VEC_MAX 4
typedef struct Vec {
    Obj h;
    int n;
    double x[VEC_MAX];
} Vec;
static ValType T_VEC, T_LATER;

static Value vec_make(int n, const double *x)
{
    Vec *v = (Vec *)obj_alloc(sizeof(Vec), T_VEC);
    v->n = n;
    for (int i = 0; i < n; i++) v->x[i] = x[i];
    return v_obj(&v->h);
}
#define VEC(v) ((Vec *)(v).o)

static void vec_free(Obj *o) { free(o); }
static Value vec_copy(Value v, CopyCtx *cc)
{
    (void)cc;
    return vec_make(VEC(v)->n, VEC(v)->x);
}
static void vec_repr(Buf *b, Value v, bool quoted)
{
    (void)quoted;
    buf_puts(b, "vec(");
    for (int i = 0; i < VEC(v)->n; i++) buf_printf(b, "%s%g", i ? ", " : "", VEC(v)->x[i]);
    buf_puts(b, ")");
}
static bool vec_eq(Value a, Value b)
{
    if (VEC(a)->n != VEC(b)->n) return false;
    for (int i = 0; i < VEC(a)->n; i++)
        if (VEC(a)->x[i] != VEC(b)->x[i]) return false;
    return true;
}
static uint32_t vec_hash(Value v)
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < VEC(v)->n; i++) h = (h ^ (uint32_t)(int64_t)VEC(v)->x[i]) * 16777619u;
    return h;
}

/* vec + vec, vec + number (either side), vec * number (either side),
 * vec @ vec; anything else is the other operand's business */
static Value vec_binop(VM *vm, BinOp op, Value a, Value b, const Node *site)
{
    bool va = a.t == T_VEC, vb = b.t == T_VEC;
    double out[VEC_MAX];
    if (va && vb && (op == OP_ADD || op == OP_MATMUL)) {
        if (VEC(a)->n != VEC(b)->n)
            return vm_error(vm, site, "vec lengths differ: %d and %d", VEC(a)->n, VEC(b)->n);
        double dot = 0;
        for (int i = 0; i < VEC(a)->n; i++) {
            out[i] = VEC(a)->x[i] + VEC(b)->x[i];
            dot += VEC(a)->x[i] * VEC(b)->x[i];
        }
        return op == OP_ADD ? vec_make(VEC(a)->n, out) : v_num(dot);
    }
    Value v = va ? a : b, s = va ? b : a;
    if (va != vb && s.t == T_NUM && (op == OP_ADD || op == OP_MUL)) {
        for (int i = 0; i < VEC(v)->n; i++)
            out[i] = op == OP_ADD ? VEC(v)->x[i] + s.n : VEC(v)->x[i] * s.n;
        return vec_make(VEC(v)->n, out);
    }
    return v_notimpl();
}
static Value vec_unop(VM *vm, BinOp op, Value a, const Node *site)
{
    (void)vm;
    (void)site;
    if (op == OP_INVERT) return v_notimpl();
    double out[VEC_MAX];
    for (int i = 0; i < VEC(a)->n; i++) out[i] = op == OP_NEG ? -VEC(a)->x[i] : VEC(a)->x[i];
    return vec_make(VEC(a)->n, out);
}
static bool vec_truthy(Value v)
{
    for (int i = 0; i < VEC(v)->n; i++)
        if (VEC(v)->x[i] != 0) return true;
    return false;
}
/* the element an index names; messages point at the subscript, as for lists */
static bool vec_at(VM *vm, Value obj, int nidx, const Value *idx, const Node *site,
                   Node *const *isite, long *k)
{
    if (nidx != 1) {
        vm_error(vm, site, "a vec takes one index");
        return false;
    }
    return num_to_index(vm, idx[0], VEC(obj)->n, k, isite && isite[0] ? isite[0] : site, "vec");
}
static Value vec_index(VM *vm, Value obj, int nidx, const Value *idx, const Node *site,
                       Node *const *isite)
{
    long k;
    return vec_at(vm, obj, nidx, idx, site, isite, &k) ? v_num(VEC(obj)->x[k]) : v_exc();
}
static bool vec_setindex(VM *vm, Value obj, int nidx, const Value *idx, Value v, const Node *site,
                         Node *const *isite)
{
    long k;
    if (!vec_at(vm, obj, nidx, idx, site, isite, &k)) return false;
    if (v.t != T_NUM) {
        vm_error(vm, site, "a vec holds numbers, not %s", type_name(v));
        return false;
    }
    VEC(obj)->x[k] = v.n;
    return true;
}
static bool vec_len(Value v, size_t *out)
{
    *out = (size_t)VEC(v)->n;
    return true;
}
static int vec_iter(VM *vm, Value coll, Iter *it, Value *out, const Node *site)
{
    (void)vm;
    (void)site;
    if (it->pos >= (size_t)VEC(coll)->n) return 0;
    *out = v_num(VEC(coll)->x[it->pos++]);
    return 1;
}
static Value vec_contains(VM *vm, Value coll, Value x, const Node *site)
{
    (void)vm;
    (void)site;
    for (int i = 0; i < VEC(coll)->n; i++)
        if (x.t == T_NUM && VEC(coll)->x[i] == x.n) return v_bool(true);
    return v_bool(false);
}
/* calling a vec evaluates the polynomial with those coefficients */
static Value vec_call(VM *vm, Value fn, Args *a)
{
    double x;
    if (a->n != 1)
        return vm_error(vm, a->site, "a vec takes one argument when called, not %d", a->n);
    if (!arg_num(vm, a, 0, "x", &x)) return v_exc();
    double r = 0, p = 1;
    for (int i = 0; i < VEC(fn)->n; i++) {
        r += VEC(fn)->x[i] * p;
        p *= x;
    }
    return v_num(r);
}
static Value vec_member(VM *vm, Value obj, const ObjStr *name, const Node *site)
{
    if (strcmp(name->s, "norm") == 0) {
        double s = 0;
        for (int i = 0; i < VEC(obj)->n; i++) s += VEC(obj)->x[i] * VEC(obj)->x[i];
        return v_num(sqrt(s));
    }
    return vm_error(vm, site, "vec has no member '%s'", name->s);
}
static Value vec_math(VM *vm, MathFn fn, Value v, long arg, const Node *site)
{
    (void)vm;
    (void)arg;
    (void)site;
    if (fn != M_ABS) return v_notimpl();
    double out[VEC_MAX];
    for (int i = 0; i < VEC(v)->n; i++) out[i] = fabs(VEC(v)->x[i]);
    return vec_make(VEC(v)->n, out);
}
static Value vec_reduce(VM *vm, ReduceFn fn, Value v, Args *a)
{
    (void)vm;
    (void)a;
    if (fn != R_SUM) return v_notimpl();
    double s = 0;
    for (int i = 0; i < VEC(v)->n; i++) s += VEC(v)->x[i];
    return v_num(s);
}

static const TypeOps vec_ops = {
    .name = "vec",
    .free = vec_free,
    .copy = vec_copy,
    .repr = vec_repr,
    .eq = vec_eq,
    .hash = vec_hash,
    .binop = vec_binop,
    .unop = vec_unop,
    .truthy = vec_truthy,
    .index = vec_index,
    .setindex = vec_setindex,
    .len = vec_len,
    .iter = vec_iter,
    .contains = vec_contains,
    .call = vec_call,
    .member = vec_member,
    .math = vec_math,
    .reduce = vec_reduce,
};

static Value bi_vec(VM *vm, Args *a)
{
    double x[VEC_MAX];
    for (int i = 0; i < a->n; i++)
        if (!arg_num(vm, a, i, "a vec element", &x[i])) return v_exc();
    return vec_make(a->n, x);
}

/* ================================================================ later: a lazy kind */

typedef struct Later {
    Obj h;
    Value v;
} Later;
static void later_free(Obj *o)
{
    decref(((Later *)o)->v);
    atomic_fetch_sub(&value_lazy_live, 1);
    free(o);
}
static void later_repr(Buf *b, Value v, bool quoted)
{
    (void)v;
    (void)quoted;
    buf_puts(b, "<later>");
}
static Value later_force(VM *vm, Value v, const Node *site)
{
    (void)vm;
    (void)site;
    Value r = ((Later *)v.o)->v;
    incref(r);
    return r;
}
static const TypeOps later_ops = {
    .name = "later",
    .flags = TF_LAZY,
    .free = later_free,
    .repr = later_repr,
    .force = later_force,
};
/* later(x): stands for x (a builtin that takes futures as they are) */
static Value bi_later(VM *vm, Args *a)
{
    (void)vm;
    Later *l = (Later *)obj_alloc(sizeof(Later), T_LATER);
    atomic_fetch_add(&value_lazy_live, 1);
    l->v = a->v[0];
    incref(l->v);
    return v_obj(&l->h);
}

static const BuiltinDef test_builtins[] = {
    { "vec", bi_vec, 0, VEC_MAX, 0, NULL, 0 },
    { "later", bi_later, 1, 1, BI_LAZY, NULL, 0 },
    { NULL, NULL, 0, 0, 0, NULL, 0 },
};

static ValType first_test_tag;

/* the test's own room opening: what any room does from its X_open() */
static void test_open(void)
{
    qh_init();
    T_VEC = type_register_new(&vec_ops);
    T_LATER = type_register_new(&later_ops);
    first_test_tag = T_VEC;
    builtins_add(test_builtins);
}

/* ================================================================ the table the rooms filled */

START_TEST(every_kind_registered)
{
    for (unsigned t = 0; t < first_test_tag; t++) {
        const TypeOps *o = type_ops(t);
        ck_assert_msg(o && o->name && strcmp(o->name, "?") != 0, "tag %u has no table", t);
        ck_assert_msg(value_flags[t] == (o->flags & 0xff), "tag %u (%s): value_flags out of step",
                      t, o->name);
    }
    /* a tag past every registration has the placeholder only */
    ck_assert_ptr_null(type_ops(T_LATER + 1));
}
END_TEST

START_TEST(slots_consistent)
{
    for (unsigned t = T_FUNC; t < first_test_tag; t++) {
        const TypeOps *o = type_ops(t);
        const char *n = o->name;
        /* heap kinds outside the value room: their objects are freed and
         * printed through their own slots */
        ck_assert_msg(o->free && o->repr, "%s (tag %u): free and repr are required", n, t);
        ck_assert_msg(!(o->flags & TF_LAZY) || o->force, "%s: lazy without force", n);
        ck_assert_msg(!o->force || (o->flags & TF_LAZY), "%s: force without TF_LAZY", n);
        ck_assert_msg(!o->clear == !o->traverse, "%s: clear and traverse go together", n);
        ck_assert_msg(!(o->flags & TF_TRACK) || o->traverse, "%s: TF_TRACK without traverse", n);
        ck_assert_msg(!o->hash || o->eq, "%s: hash without eq", n);
        ck_assert_msg(!o->setindex || o->index, "%s: setindex without index", n);
        ck_assert_msg(!(o->flags & TF_INTERCEPT) || o->builtin,
                      "%s: TF_INTERCEPT without builtin slot", n);
        ck_assert_msg(!o->builtin || (o->flags & TF_INTERCEPT),
                      "%s: builtin slot without TF_INTERCEPT", n);
        ck_assert_msg(!(o->flags & TF_LEAF) || (!o->traverse && !(o->flags & (TF_TRACK | TF_LAZY))),
                      "%s: TF_LEAF holds no values", n);
    }
}
END_TEST

START_TEST(named_kinds_slots)
{
    const TypeOps *fut = type_ops(T_FUTURE), *arr = type_ops(T_ARRAY), *op = type_ops(T_OP);
    const TypeOps *dev = type_ops(T_DEVICE), *fn = type_ops(T_FUNC), *mod = type_ops(T_MODULE);
    /* a future: lazy, copied into tasks, a node of the cycle sweep */
    ck_assert(fut->flags & TF_LAZY);
    ck_assert(fut->force && fut->copy && fut->traverse);
    ck_assert(!fut->binop && !fut->index); /* the dispatcher forces it first */
    /* arrays: every evaluation slot but call, member and stmt */
    ck_assert(arr->binop && arr->unop && arr->truthy && arr->index && arr->setindex && arr->len &&
              arr->iter && arr->contains && arr->math && arr->reduce && arr->eq && arr->copy);
    ck_assert(!arr->call && !(arr->flags & TF_LAZY));
    /* operators compose (@, *, +), negate, apply as statements, have members */
    ck_assert(op->binop && op->unop && op->stmt && op->member && op->copy);
    /* devices: what a qfn runs on */
    ck_assert(dev->flags & TF_DEVICE);
    ck_assert(!(fn->flags & TF_DEVICE) && !(arr->flags & TF_DEVICE));
    /* code: shared or refused by copies, callable / with members */
    ck_assert((fn->flags & TF_CODE) && fn->call);
    ck_assert((mod->flags & TF_CODE) && mod->member);
    ck_assert(type_ops(T_BUILTIN)->call);
    /* the value room's inline kinds carry only evaluator slots */
    ck_assert(type_ops(T_NUM)->binop && type_ops(T_STR)->binop && type_ops(T_LIST)->binop);
    ck_assert(type_ops(T_LIST)->flags & TF_TRACK);
    ck_assert(type_ops(T_DICT)->flags & TF_TRACK);
    ck_assert_str_eq(type_ops(T_VEC)->name, "vec");
}
END_TEST

/* ================================================================ vec in programs */

START_TEST(vec_operators)
{
    expect_out("v = vec(1, 2, 3)\nprint(v, type(v))\n", "vec(1, 2, 3) vec\n");
    expect_out("v = vec(1, 2)\nprint(v + vec(10, 20), v + 1, 1 + v, v * 3, 2 * v, -v, +v)\n",
               "vec(11, 22) vec(2, 3) vec(2, 3) vec(3, 6) vec(2, 4) vec(-1, -2) vec(1, 2)\n");
    expect_out("print(vec(1, 2) @ vec(3, 4))\n", "11\n");
    /* op= goes through the same slot */
    expect_out("v = vec(1, 1)\nv += vec(2, 3)\nv *= 2\nprint(v)\n", "vec(6, 8)\n");
    /* equality: the kind's eq; a vec is not a list */
    expect_out(
        "print(vec(1, 2) == vec(1, 2), vec(1, 2) != vec(2, 1), vec(1) == [1], vec(1) == 1)\n",
        "true true false false\n");
    /* neither kind knows the operator: a clear error naming both */
    expect_error("x = vec(1) - vec(2)\n", 1,
                 "t.qh:1:12: error: unsupported operand types for -: vec and vec");
    expect_error("x = \"s\" + vec(2)\n", 1, "unsupported operand types for +: string and vec");
    expect_error("x = vec(1) + vec(1, 2)\n", 1, "t.qh:1:12: error: vec lengths differ: 1 and 2");
    expect_error("x = ~vec(1)\n", 1, "bad operand type for unary ~: vec");
}
END_TEST

START_TEST(vec_truthiness)
{
    expect_out("if vec(0, 0) { print(\"yes\") } else { print(\"no\") }\n"
               "if vec(0, 1) { print(\"yes\") }\n"
               "print(not vec(0), vec(2) and 5, vec(0) or 7)\n"
               "n = 0\nv = vec(3)\nwhile v { v[0] -= 1\n n += 1 }\nprint(n)\n"
               "print(1 if vec(1) else 2)\n",
               "no\nyes\ntrue 5 7\n3\n1\n");
}
END_TEST

START_TEST(vec_elements)
{
    expect_out("v = vec(5, 6, 7)\nprint(v[0], v[-1], len(v))\nv[1] = 60\nv[2] += 3\nprint(v)\n",
               "5 7 3\nvec(5, 60, 10)\n");
    expect_out("s = 0\nfor x in vec(1, 2, 3) { s += x }\nprint(s, [x * 2 for x in vec(1, 2)])\n",
               "6 [2, 4]\n");
    expect_out("print(2 in vec(1, 2), 5 in vec(1, 2), 5 not in vec(1, 2))\n", "true false true\n");
    expect_error("v = vec(1, 2)\nprint(v[2])\n", 1,
                 "t.qh:2:9: error: vec index 2 out of range (length 2)");
    expect_error("v = vec(1, 2)\nv[0] = \"a\"\n", 1, "a vec holds numbers, not string");
    expect_error("v = vec(1)\nprint(v[0, 0])\n", 1, "a vec takes one index");
}
END_TEST

START_TEST(vec_call_member_math)
{
    expect_out("p = vec(1, 2, 3)\nprint(p(2), p(0), vec(3, 4).norm)\n", "17 1 5\n");
    expect_out("fn apply(f, x) { return f(x) }\nprint(apply(vec(0, 1), 9))\n", "9\n");
    expect_out("print(abs(vec(-1, 2)), sum(vec(1, 2, 3)))\n", "vec(1, 2) 6\n");
    expect_error("print(vec(1).size)\n", 1, "vec has no member 'size'");
    expect_error("print(sqrt(vec(4)))\n", 1, "sqrt() needs a number, not vec");
    expect_error("print(vec(1)(1, 2))\n", 1, "a vec takes one argument when called, not 2");
}
END_TEST

START_TEST(vec_as_dict_key_and_in_containers)
{
    expect_out("d = {}\nd[vec(1, 2)] = \"a\"\nd[vec(1, 2)] = \"b\"\nd[vec(2, 1)] = \"c\"\n"
               "print(len(d), d[vec(1, 2)], vec(2, 1) in d)\n"
               "xs = [vec(1), vec(2)]\nprint(xs, vec(2) in xs, sorted([3, 1]))\n",
               "2 b true\n[vec(1), vec(2)] true [1, 3]\n");
}
END_TEST

START_TEST(vec_into_tasks)
{
    /* a vec goes into a quantum call by its copy slot, and comes back in
     * the call's result (a future in the background, forced where read) */
    expect_out("qfn q(v) on device(\"statevector\", wires=1) {\n"
               "    RX(v[0], 0)\n"
               "    return [expval(PauliZ(0)), v * 2]\n"
               "}\n"
               "r = q(vec(pi, 1))\n"
               "print(fmt(\"%.6f\", r[0]), r[1], r[1][1] + 1)\n",
               "-1.000000 vec(6.28319, 2) 3\n");
}
END_TEST

/* ================================================================ later in programs */

START_TEST(lazy_kind_forced_everywhere)
{
    expect_out("a = later(5)\nprint(a + 1, 1 + a, -a, a * a, a == 5, a)\n", "6 6 -5 25 true 5\n");
    expect_out("if later(0) { print(\"yes\") } else { print(\"no\") }\n", "no\n");
    expect_out("xs = later([1, 2, 3])\nprint(len(xs), xs[1], 2 in xs, sum(xs))\n"
               "s = 0\nfor x in xs { s += x }\nprint(s)\n",
               "3 2 true 6\n6\n");
    expect_out("f = later(fn (x) { return x * 10 })\nprint(f(4))\n", "40\n");
    expect_out("print(later(vec(1, 2)) + 1, later(later(7)) + 0)\n", "vec(2, 3) 7\n");
    /* inside containers: comparisons and builtins read through it */
    expect_out("print([later(1), 2] == [1, 2], max([later(9), 3]), str([later(\"x\")]))\n",
               "true 9 [\"x\"]\n");
    expect_out("d = {\"k\": later(3)}\nprint(d[\"k\"] + 1, d)\n", "4 {\"k\": 3}\n");
    expect_error("x = later(\"s\") - 1\n", 1, "unsupported operand types for -: string and number");
}
END_TEST

/* ================================================================ the dispatcher from C */

START_TEST(dispatcher_direct)
{
    /* the dispatcher used from C as a room would, on the main VM of a
     * state (the VM comes from a call of a builtin that hands it over) */
    qh_State *Q = qh_open(NULL);
    Value fn;
    ck_assert(qh_get_global(Q, "vec", &fn));
    Value args[2] = { v_num(3), v_num(4) };
    Value v = qh_call(Q, fn, 2, args);
    ck_assert_int_eq(v.t, T_VEC);
    size_t n;
    ck_assert(tp_len(v, &n) && n == 2);
    double d;
    ck_assert(!tp_number(v, &d));
    Buf b;
    buf_init(&b);
    value_repr(&b, v, false);
    ck_assert_str_eq(b.p, "vec(3, 4)");
    buf_free(&b);
    /* copies for another thread go through the copy slot */
    CopyCtx cc;
    copy_init(&cc);
    Value c = value_copy_deep(v, &cc);
    copy_done(&cc);
    ck_assert(c.o != v.o && value_eq(c, v));
    decref(c);
    ck_assert_int_eq(v.o->rc, 1);
    decref(v);
    ck_assert_int_eq(qh_close(Q, 0), 0);
}
END_TEST

/* ================================================================ runner */

static Suite *types_suite(void)
{
    Suite *s = suite_create("types");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, every_kind_registered);
    tcase_add_test(tc, slots_consistent);
    tcase_add_test(tc, named_kinds_slots);
    tcase_add_test(tc, dispatcher_direct);
    suite_add_tcase(s, tc);
    tc = tcase_create("new kinds");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, vec_operators);
    tcase_add_test(tc, vec_truthiness);
    tcase_add_test(tc, vec_elements);
    tcase_add_test(tc, vec_call_member_math);
    tcase_add_test(tc, vec_as_dict_key_and_in_containers);
    tcase_add_test(tc, vec_into_tasks);
    tcase_add_test(tc, lazy_kind_forced_everywhere);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    test_open();
    SRunner *sr = srunner_create(types_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
