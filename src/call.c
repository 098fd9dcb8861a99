/* call.c — calls and frames: evaluating a call's callee and arguments onto
 * the VM's value stack (where they become the callee's frame), binding
 * positional and keyword arguments and defaults, running a body in a new
 * frame, the recursion limits, and the call slots of the evaluator's
 * callable kinds (functions, builtins). A qfn call goes to the hook the
 * async room installed. Knows the dispatcher, the VM and function objects;
 * statements are run by eval.c. */
#include "eval.h"
#include "qh_assert.h"
#include "serial.h"

#include <string.h>

#define MAX_KWARGS 64

/* A builtin that prints or reads input, called inside a task: only a
 * function value can bring it there (the analysis rejects qfn bodies that
 * name one), and its effect would leave program order. */

/* Why: SIGINT/SIGTERM during a builtin (a long load, str, QASM expansion,
 * linear algebra: the lower rooms stop at their safe points, stop.h) end
 * the statement there: the error is not catchable and the next statement
 * does not run. */
static Value builtin_done(VM *vm, Value r, const Node *site)
{
    if (vm->watch_interrupt && atomic_load_explicit(&vm->in->interrupt, memory_order_relaxed)) {
        if (!IS_EXC(r)) decref(r);
        return vm_interrupted(vm, site);
    }
    return r;
}

static __attribute__((noinline)) Value impure_in_task(VM *vm, const BuiltinDef *bd,
                                                      const Node *site)
{
    return vm_error(
        vm, site,
        "%s() cannot run inside a quantum function: a qfn may not print, read input, import or "
        "assign globals (here it came as a function value)",
        bd->name);
}

/* the futures inside a builtin's container arguments, resolved (in place) */
static bool builtin_resolve(VM *vm, const BuiltinDef *bd, Value *v, int n, const Node *site)
{
    if (bd->flags & (BI_LAZY | BI_SHALLOW) ||
        !atomic_load_explicit(&value_lazy_live, memory_order_relaxed))
        return true;
    for (int i = 0; i < n; i++)
        if (!tp_resolve_in(vm, v[i], site)) return false;
    return true;
}

bool eval_bind_args(VM *vm, ObjFunc *f, Value *slots, int nargs, Args *kw, const Node *site)
{
    FnProto *p = f->p;
    if (nargs > p->nparams) {
        for (int i = 0; i < nargs; i++) decref(slots[i]);
        if (kw)
            for (int j = 0; j < kw->nkw; j++) decref(kw->kw[j]);
        vm_error(vm, site, "%s() takes %d argument%s but %d were given", p->name, p->nparams,
                 p->nparams == 1 ? "" : "s", nargs);
        return false;
    }
    for (int i = nargs; i < p->nlocals; i++) slots[i] = v_unbound();
    if (kw) {
        for (int k = 0; k < kw->nkw; k++) {
            int at = -1;
            for (int i = 0; i < p->nparams; i++)
                if (str_eq(p->param_keys[i], kw->kwname[k])) {
                    at = i;
                    break;
                }
            if (at < 0 || slots[at].t != T_UNBOUND) {
                for (int i = 0; i < p->nparams; i++) decref(slots[i]);
                for (int j = k; j < kw->nkw; j++) decref(kw->kw[j]);
                if (at < 0)
                    vm_error(vm, site, "%s() got an unexpected keyword argument '%s'", p->name,
                             kw->kwname[k]->s);
                else
                    vm_error(vm, site, "%s() got multiple values for argument '%s'", p->name,
                             kw->kwname[k]->s);
                return false;
            }
            slots[at] = kw->kw[k];
        }
    }
    for (int i = nargs; i < p->nparams; i++) {
        if (slots[i].t != T_UNBOUND) continue;
        if (f->defaults && f->defaults[i].t != T_UNBOUND) {
            slots[i] = f->defaults[i];
            incref(slots[i]);
            continue;
        }
        for (int j = 0; j < p->nparams; j++) decref(slots[j]);
        vm_error(vm, site, "%s() missing argument '%s'", p->name, p->params[i]);
        return false;
    }
    return true;
}

/* a bound frame: a plain body, or a qfn through the async room's hook */
static Value run_bound(VM *vm, ObjFunc *f, Value *slots, const Node *site)
{
    if (!f->p->is_qfn) return eval_run_body(vm, f, slots, site);
    if (!vm->in->hooks.qfn_call) {
        for (int i = 0; i < f->p->nlocals; i++) decref(slots[i]);
        return vm_error(vm, site, "%s(): quantum functions are not available here", f->p->name);
    }
    return vm->in->hooks.qfn_call(vm, f, slots, site);
}

/* The value stack is a stack: a call pops back to where its arguments began, never below */
static void pop_to(VM *vm, size_t base)
{
    qh_assert(base <= vm->sp && vm->sp <= vm->cap);
    while (vm->sp > base) decref(vm->stack[--vm->sp]);
}

/* call -> callee(args) in general: keywords, qfns, any callable kind */
static Value eval_call_general(VM *vm, Node *n, Value callee);

/* The common cases first: a builtin or a plain function with positional
 * arguments only, whose arguments become its frame in place. */
Value eval_call(VM *vm, Node *n)
{
    Value callee = eval_node(vm, n->u.call.fn);
    if (IS_EXC(callee)) return callee;
    return eval_call_callee(vm, n, callee);
}

Value eval_call_callee(VM *vm, Node *n, Value callee)
{
    int nargs = n->u.call.nargs;
    if (callee.t == T_BUILTIN && !n->u.call.nkw) {
        const BuiltinDef *bd = callee.bi;
        if (nargs < bd->min || (bd->max >= 0 && nargs > bd->max) || !bd->fn)
            return eval_call_general(vm, n, callee);
        size_t base = vm->sp;
        if (base + (size_t)nargs + 8 >= vm->cap)
            return vm_error(vm, n, "maximum recursion depth exceeded (value stack full)");
        for (int i = 0; i < nargs; i++) {
            Value v = eval_node(vm, n->u.call.args[i]);
            if (IS_EXC(v)) {
                pop_to(vm, base);
                return v;
            }
            if (is_lazy(v) && !(bd->flags & BI_LAZY)) {
                Value r = tp_force(vm, v, n->u.call.args[i]);
                decref(v);
                if (IS_EXC(r)) {
                    pop_to(vm, base);
                    return r;
                }
                v = r;
            }
            vm->stack[vm->sp++] = v;
        }
        if ((bd->flags & BI_IMPURE) && vm->is_task) {
            pop_to(vm, base);
            return impure_in_task(vm, bd, n);
        }
        if (!builtin_resolve(vm, bd, vm->stack + base, nargs, n)) {
            pop_to(vm, base);
            return v_exc();
        }
        qh_assert(vm->sp == base + (size_t)nargs);
        Args a = { nargs, vm->stack + base, 0, NULL, NULL, n, bd };
        Value r = tp_intercepts(&a) ? tp_builtin(vm, bd, &a) : v_notimpl();
        if (r.t == T_NOTIMPL) r = bd->fn(vm, &a);
        qh_assert(vm->sp == base + (size_t)nargs); /* a builtin leaves the stack as it found it */
        pop_to(vm, base);
        return builtin_done(vm, r, n);
    }
    if (callee.t != T_FUNC || n->u.call.nkw) return eval_call_general(vm, n, callee);
    ObjFunc *f = AS_FUNC(callee);
    FnProto *p = f->p;
    if (p->is_qfn || nargs > p->nparams) return eval_call_general(vm, n, callee);
    size_t base = vm->sp;
    int nl = p->nlocals;
    if (base + (size_t)nl + 8 >= vm->cap) {
        decref(callee);
        return vm_error(vm, n, "maximum recursion depth exceeded (value stack full)");
    }
    Value *slots = vm->stack + base;
    for (int i = 0; i < nargs; i++) {
        Value v = eval_node(vm, n->u.call.args[i]);
        if (IS_EXC(v)) {
            pop_to(vm, base);
            decref(callee);
            return v;
        }
        vm->stack[vm->sp++] = v;
    }
    vm->sp = base + (size_t)nl;
    if (nargs < p->nparams) {
        if (!eval_bind_args(vm, f, slots, nargs, NULL, n)) {
            vm->sp = base;
            decref(callee);
            return v_exc();
        }
    } else {
        for (int i = nargs; i < nl; i++) slots[i] = v_unbound();
    }
    Value r = eval_run_body(vm, f, slots, n);
    qh_assert(vm->sp == base + (size_t)nl); /* the body leaves its frame as it found it */
    vm->sp = base;
    decref(callee);
    return r;
}

__attribute__((noinline)) static Value eval_call_general(VM *vm, Node *n, Value callee)
{
    if (is_lazy(callee)) {
        Value r = tp_force(vm, callee, n);
        decref(callee);
        if (IS_EXC(r)) return r;
        callee = r;
    }
    int nargs = n->u.call.nargs, nkw = n->u.call.nkw;
    qh_assert(nargs >= 0 && nkw >= 0 && nkw <= MAX_KWARGS);
    ObjStr *kwnames[MAX_KWARGS];
    size_t base = vm->sp;
    size_t need = (size_t)nargs + (size_t)nkw + 8;
    if (callee.t == T_FUNC) need += (size_t)AS_FUNC(callee)->p->nlocals;
    if (base + need >= vm->cap) {
        decref(callee);
        return vm_error(vm, n, "maximum recursion depth exceeded (value stack full)");
    }
    for (int i = 0; i < nargs; i++) {
        Value v = eval_node(vm, n->u.call.args[i]);
        if (IS_EXC(v)) goto fail;
        vm->stack[vm->sp++] = v;
    }
    for (int i = 0; i < nkw; i++) {
        Value v = eval_node(vm, n->u.call.kw[i].value);
        if (IS_EXC(v)) goto fail;
        vm->stack[vm->sp++] = v;
        kwnames[i] = n->u.call.kw[i].key;
    }
    qh_assert(vm->sp == base + (size_t)nargs + (size_t)nkw);
    Value *argv = vm->stack + base;
    Value result;
    if (callee.t == T_FUNC) {
        /* the arguments become the frame in place */
        ObjFunc *f = AS_FUNC(callee);
        Value *slots = argv;
        Value tmp[nkw ? nkw : 1];
        Args kw = { 0, NULL, nkw, kwnames, tmp, n, NULL };
        /* keywords sit after the positionals: move them out of the frame's way */
        memcpy(tmp, argv + nargs, (size_t)nkw * sizeof(Value));
        vm->sp = base + (size_t)(f->p->nlocals > nargs ? f->p->nlocals : nargs);
        if (!eval_bind_args(vm, f, slots, nargs, nkw ? &kw : NULL, n)) {
            vm->sp = base;
            decref(callee);
            return v_exc();
        }
        result = run_bound(vm, f, slots, n);
        vm->sp = base;
        decref(callee);
        return result;
    }
    if (callee.t == T_BUILTIN && !(callee.bi->flags & BI_LAZY)) {
        for (int i = 0; i < nargs + nkw; i++) {
            if (is_lazy(argv[i])) {
                Value r = tp_force(vm, argv[i],
                                   i < nargs ? n->u.call.args[i] : n->u.call.kw[i - nargs].value);
                if (IS_EXC(r)) goto fail;
                decref(argv[i]);
                argv[i] = r;
            }
        }
    }
    {
        Args a = { nargs, argv, nkw, kwnames, argv + nargs, n, NULL };
        result = tp_call(vm, callee, &a);
    }
    pop_to(vm, base);
    decref(callee);
    return result;
fail:
    pop_to(vm, base);
    decref(callee);
    return v_exc();
}

/* ---------------------------------------------------------------- call slots */

/* a function called with evaluated arguments (borrowed) */
Value *eval_bind_frame(VM *vm, ObjFunc *f, Args *a, size_t *base)
{
    *base = vm->sp;
    size_t need = (size_t)(f->p->nlocals > a->n ? f->p->nlocals : a->n) + 4;
    if (*base + need >= vm->cap) {
        vm_error(vm, a->site, "maximum recursion depth exceeded (value stack full)");
        return NULL;
    }
    Value *slots = vm->stack + *base;
    for (int i = 0; i < a->n; i++) {
        incref(a->v[i]);
        slots[i] = a->v[i];
    }
    Value kwv[a->nkw ? a->nkw : 1];
    for (int i = 0; i < a->nkw; i++) {
        incref(a->kw[i]);
        kwv[i] = a->kw[i];
    }
    Args kw = { 0, NULL, a->nkw, a->kwname, kwv, a->site, NULL };
    vm->sp = *base + need - 4;
    qh_assert(vm->sp < vm->cap);
    if (!eval_bind_args(vm, f, slots, a->n, &kw, a->site)) {
        vm->sp = *base;
        return NULL;
    }
    return slots;
}

static Value func_call(VM *vm, Value fn, Args *a)
{
    ObjFunc *f = AS_FUNC(fn);
    size_t base;
    Value *slots = eval_bind_frame(vm, f, a, &base);
    if (!slots) return v_exc();
    Value r = run_bound(vm, f, slots, a->site);
    vm->sp = base;
    return r;
}

/* a builtin: arity and keywords checked, then its C function */
static Value builtin_call(VM *vm, Value fn, Args *a)
{
    const BuiltinDef *bd = fn.bi;
    if (a->n < bd->min || (bd->max >= 0 && a->n > bd->max)) {
        if (bd->min == bd->max)
            return vm_error(vm, a->site, "%s() takes %d argument%s but %d were given", bd->name,
                            bd->min, bd->min == 1 ? "" : "s", a->n);
        if (a->n < bd->min)
            return vm_error(vm, a->site, "%s() takes at least %d argument%s but %d were given",
                            bd->name, bd->min, bd->min == 1 ? "" : "s", a->n);
        return vm_error(vm, a->site, "%s() takes at most %d argument%s but %d were given", bd->name,
                        bd->max, bd->max == 1 ? "" : "s", a->n);
    }
    for (int k = 0; k < a->nkw; k++) {
        bool ok = false;
        for (const char *const *w = bd->kwnames; w && *w; w++)
            if (strcmp(*w, a->kwname[k]->s) == 0) ok = true;
        if (!ok)
            return vm_error(vm, a->site, "%s() got an unexpected keyword argument '%s'", bd->name,
                            a->kwname[k]->s);
    }
    qh_assert(bd->fn);
    if ((bd->flags & BI_IMPURE) && vm->is_task) return impure_in_task(vm, bd, a->site);
    if (!builtin_resolve(vm, bd, a->v, a->n, a->site) ||
        !builtin_resolve(vm, bd, a->kw, a->nkw, a->site))
        return v_exc();
    a->def = bd;
    if (tp_intercepts(a)) { /* differentiated values: their kind decides first */
        Value r = tp_builtin(vm, bd, a);
        if (r.t != T_NOTIMPL) return builtin_done(vm, r, a->site);
    }
    return builtin_done(vm, bd->fn(vm, a), a->site);
}

/* a builtin travels as its index in the builtin table (the same on every rank) */
static bool builtin_ser(Value v, SerCtx *sc)
{
    for (int i = 0; i < builtin_count(); i++)
        if (builtin_get(i) == v.bi) {
            ser_u32(sc, (uint32_t)i);
            return true;
        }
    return ser_fail(sc, "a builtin missing from the table cannot be sent to another rank");
}

static Value builtin_deser(SerCtx *sc, ValType t, size_t id)
{
    (void)t;
    (void)id;
    uint32_t i;
    if (!des_u32(sc, &i)) return v_exc();
    if (i >= (uint32_t)builtin_count() || (builtin_get((int)i)->flags & BI_CONST))
        return des_fail(sc, "builtin");
    return builtin_value((int)i);
}

static const TypeOps func_ops = {
    .name = "function",
    .flags = TF_CODE | TF_TRACK,
    .free = func_free,
    .clear = func_clear,
    .traverse = func_traverse,
    .copy = func_copy,
    .ser = func_ser,
    .deser = func_deser,
    .repr = func_repr,
    .call = func_call,
};

static const TypeOps builtin_ops = {
    .name = "function", .ser = builtin_ser, .deser = builtin_deser, .call = builtin_call
};

void call_open(void)
{
    type_register(T_FUNC, &func_ops);
    type_register(T_BUILTIN, &builtin_ops);
}
