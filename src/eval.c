/* eval.c — the tree-walking evaluator: expressions, assignment and
 * statements on one VM (one thread's state). Names were resolved to slots
 * before, so nothing here looks a name up by string on the hot path. The
 * kinds of the value room (numbers, lists, dicts, strings) have inline
 * fast paths; every other operation goes through the dispatcher (types.h),
 * which forces futures where a value is needed. Calls are call.c's.
 *
 * Each of eval() and exec_stmt() has a small hot switch for what inner
 * loops run and a cold twin for the rest: a kind is handled in exactly one
 * of them. New node kinds go in the cold switches (eval_cold,
 * exec_stmt_cold) unless they are hot. Knows values, the dispatcher, the
 * VM, the AST and function objects; nothing of any other room. */
#include "eval.h"
#include "arith.h"
#include "qh_assert.h"
#include "trace.h"

#include <math.h>
#include <string.h>

static Value eval(VM *vm, Node *n);
static ExecStatus stmt(VM *vm, Node *s);
static ExecStatus block(VM *vm, Node *b);
static bool condition(VM *vm, Node *cond, bool *err);

/* ---------------------------------------------------------------- helpers */

static __attribute__((noinline)) Value eval_name_error(VM *vm, Node *n)
{
    if (n->kind == N_GLOBAL) return vm_error(vm, n, "name '%s' is not defined", n->u.var.name);
    if (n->kind == N_UPVAL) return vm_error(vm, n, "free variable '%s' used before it was assigned", n->u.var.name);
    return vm_error(vm, n, "local variable '%s' used before it was assigned", n->u.var.name);
}

/* Leaves that need no call: numbers and plain variables holding numbers.
 * Borrowed values are fine here: numbers carry no count. */
static inline bool leaf_number(VM *vm, const Node *n, double *out)
{
    const Value *v;
    switch (n->kind) {
    case N_NUM: *out = n->u.num; return true;
    case N_LOCAL: v = &vm->frame->slots[n->u.var.slot]; break;
    case N_GLOBAL: v = &vm->mod->globals[n->u.var.slot]; break;
    default: return false;
    }
    if (v->t != T_NUM) return false;
    *out = v->n;
    return true;
}

/* evaluates and forces one subexpression */
static Value eval_forced(VM *vm, Node *n)
{
    Value raw = eval(vm, n);
    if (IS_EXC(raw) || !is_lazy(raw)) return raw;
    Value v = tp_force(vm, raw, n);
    decref(raw);
    return v;
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
                if (IS_EXC(x[j])) { for (int i = 0; i < j; i++) decref(x[i]); goto fail; }
            }
            out[k] = v_slice(x[0], x[1], x[2]);
        } else {
            out[k] = eval_forced(vm, s);
            if (IS_EXC(out[k])) goto fail;
            if (!tp_resolve_in(vm, out[k], s)) { decref(out[k]); goto fail; }   /* a list of indices is read */
        }
        continue;
    fail:
        for (int j = 0; j < k; j++) decref(out[j]);
        return false;
    }
    return true;
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
            Value d = eval(vm, p->defaults[i]);
            if (IS_EXC(d)) { decref(fv); return d; }
            f->defaults[i] = d;
        }
    }
    if (p->nupvals) {
        f->up = xcalloc((size_t)p->nupvals, sizeof(ObjCell *));
        for (int i = 0; i < p->nupvals; i++) {
            UpvalDesc d = p->upvals[i];
            ObjCell *c = d.from_local ? AS_CELL(vm->frame->slots[d.index]) : vm->frame->fn->up[d.index];
            incref(v_obj(&c->h));
            f->up[i] = c;
        }
    }
    if (p->device) {
        Value dd = eval_forced(vm, p->device);
        if (IS_EXC(dd)) { decref(fv); return dd; }
        if (!(type_of(dd)->flags & TF_DEVICE)) {
            decref(fv);
            Value e = vm_error(vm, p->device, "qfn %s: 'on' needs a device, not %s", p->name, type_name(dd));
            decref(dd);
            return e;
        }
        f->device = dd;
    }
    return fv;
}

/* ---------------------------------------------------------------- comprehensions */

static bool store(VM *vm, Node *t, Value v);
static bool destructure(VM *vm, Node **targets, int n, Value v, const Node *site);
static bool is_range_call(const Node *it);
static bool range_args(VM *vm, Node *it, double *start, double *stop, double *step);

/* what a comprehension's `for` clause walks: range(...) called directly (no
 * list is built), or any iterable through the dispatcher */
typedef struct CompIter { bool range; double x, stop, step; Value coll; Iter it; Node *site; } CompIter;

static bool comp_iter_begin(VM *vm, Node *it, CompIter *ci)
{
    ci->site = it;
    ci->coll = v_nil();
    ci->range = is_range_call(it);
    if (ci->range) return range_args(vm, it, &ci->x, &ci->stop, &ci->step);
    ci->coll = eval_forced(vm, it);
    if (IS_EXC(ci->coll)) return false;
    if (!tp_iter_begin(vm, ci->coll, &ci->it, it)) { decref(ci->coll); return false; }
    return true;
}

/* 1: *out is the next element (a new reference); 0: done; -1: error */
static int comp_iter_next(VM *vm, CompIter *ci, Value *out)
{
    if (ci->range) {
        if (ci->step > 0 ? ci->x >= ci->stop : ci->x <= ci->stop) return 0;
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
                if (at_end) continue;           /* closures may hold it */
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
        if (got <= 0) { ok = got == 0; break; }
        if (c->nvars == 1) ok = store(vm, c->vars[0], v);
        else { ok = destructure(vm, c->vars, c->nvars, v, c->iter); decref(v); }
        if (!ok) break;
        bool pass = true;
        for (int k = 0; k < c->nconds && pass && ok; k++) {
            Value cv = eval(vm, c->conds[k]);
            if (IS_EXC(cv)) { ok = false; break; }
            if (cv.t == T_BOOL) pass = cv.b;
            else {
                bool err = false;
                pass = tp_truthy(vm, cv, c->conds[k], &err);
                decref(cv);
                if (err) ok = false;
            }
        }
        if (!ok) break;
        if (pass) {
            if (ci + 1 < n->u.comp.nclauses) {
                ok = comp_clause(vm, n, ci + 1, acc);
            } else if (n->kind == N_LISTCOMP) {
                Value e = eval(vm, n->u.comp.elt);
                if (IS_EXC(e)) ok = false;
                else list_push(AS_LIST(acc), e);
            } else {
                Value k = eval_forced(vm, n->u.comp.key);
                if (IS_EXC(k)) ok = false;
                else if (!key_ok(k)) {
                    vm_error(vm, n->u.comp.key, "dict keys are numbers, strings or bools, not %s", type_name(k));
                    decref(k);
                    ok = false;
                } else {
                    Value e = eval(vm, n->u.comp.elt);
                    if (IS_EXC(e)) ok = false;
                    else { dict_set(AS_DICT(acc), k, e); decref(e); }
                    decref(k);
                }
            }
            if (!ok) break;
        }
        if (((++tick & 1023) == 0) && atomic_load(&vm->in->sigint) && vm_check_interrupt(vm)) { ok = false; break; }
    }
    comp_iter_end(&it);
    return ok;
}

/* [elt for ...] and {key: elt for ...}. At the module level the outermost
 * comprehension runs in a frame of its own that holds its variables (the
 * resolver sized it); elsewhere they are slots of the running frame. */
static __attribute__((noinline)) Value eval_comp(VM *vm, Node *n)
{
    Frame fr;
    size_t base = vm->sp;
    int nslots = n->u.comp.frame;
    if (nslots) {
        if (base + (size_t)nslots + 8 >= vm->cap) return vm_error(vm, n, "maximum recursion depth exceeded (value stack full)");
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
    if (nslots) {
        vm->frame = fr.parent;
        while (vm->sp > base) decref(vm->stack[--vm->sp]);
    }
    if (!ok) { decref(acc); return v_exc(); }
    return acc;
}

/* ---------------------------------------------------------------- expressions */

/* obj[i, ...] outside the list[number] fast path */
static __attribute__((noinline)) Value eval_index(VM *vm, Node *n)
{
    Value obj = eval(vm, n->u.index.obj);
    if (IS_EXC(obj)) return obj;
    int ni = n->u.index.nidx;
    if (ni == 1 && obj.t == T_LIST && n->u.index.idx[0]->kind != N_SLICE) {
        /* list[expression] */
        Value i = eval(vm, n->u.index.idx[0]);
        if (IS_EXC(i)) { decref(obj); return i; }
        if (i.t == T_NUM) {
            ObjList *l = AS_LIST(obj);
            double d = i.n;
            if (d >= 0 && d < (double)l->len && d == (double)(size_t)d) {
                Value r = l->v[(size_t)d];
                incref(r);
                decref(obj);
                return r;
            }
        }
        Value iv = tp_force(vm, i, n->u.index.idx[0]);
        decref(i);
        if (IS_EXC(iv)) { decref(obj); return iv; }
        Value r = tp_index(vm, obj, 1, &iv, n, n->u.index.idx);
        decref(iv); decref(obj);
        return r;
    }
    Value idx[ni];
    if (!eval_subscripts(vm, n, idx)) { decref(obj); return v_exc(); }
    Value r = tp_index(vm, obj, ni, idx, n, n->u.index.idx);
    for (int i = 0; i < ni; i++) decref(idx[i]);
    decref(obj);
    return r;
}

/* the kinds eval() does not handle */
__attribute__((noinline))
static Value eval_cold(VM *vm, Node *n)
{
    switch ((NodeKind)n->kind) {
    case N_IMAG: return v_complex(0, n->u.num);
    case N_STR: return v_obj(&n->u.str->h);
    case N_TRUE: return v_bool(true);
    case N_FALSE: return v_bool(false);
    case N_NIL: return v_nil();
    case N_LOCALCELL: {
        Value v = AS_CELL(vm->frame->slots[n->u.var.slot])->v;
        if (v.t == T_UNBOUND) return eval_name_error(vm, n);
        incref(v);
        return v;
    }
    case N_UPVAL: {
        Value v = vm->frame->fn->up[n->u.var.slot]->v;
        if (v.t == T_UNBOUND) return eval_name_error(vm, n);
        incref(v);
        return v;
    }
    case N_BUILTIN: return builtin_value(n->u.var.slot);
    case N_UNARY: {
        Value a = eval(vm, n->u.bin.a);
        if (IS_EXC(a)) return a;
        Value r = tp_unop(vm, (BinOp)n->op, a, n);
        decref(a);
        return r;
    }
    case N_NOT: {
        Value a = eval(vm, n->u.bin.a);
        if (IS_EXC(a)) return a;
        bool err = false;
        bool t = tp_truthy(vm, a, n, &err);
        decref(a);
        return err ? v_exc() : v_bool(!t);
    }
    case N_AND: case N_OR: {
        Value a = eval(vm, n->u.bin.a);
        if (IS_EXC(a)) return a;
        bool err = false;
        bool t = tp_truthy(vm, a, n, &err);
        if (err) { decref(a); return v_exc(); }
        if ((n->kind == N_AND) != t) {
            /* short circuit: the operand decides, and is the value (resolved) */
            Value r = tp_force(vm, a, n);
            decref(a);
            return r;
        }
        decref(a);
        return eval(vm, n->u.bin.b);
    }
    case N_LIST: {
        ObjList *l = list_new((size_t)n->u.list.n);
        for (int i = 0; i < n->u.list.n; i++) {
            Value v = eval(vm, n->u.list.items[i]);
            if (IS_EXC(v)) { decref(v_list(l)); return v; }
            l->v[l->len++] = v;
        }
        return v_list(l);
    }
    case N_DICT: {
        ObjDict *d = dict_new_sized((size_t)n->u.dict.n);
        Value dv = v_obj(&d->h);
        for (int i = 0; i < n->u.dict.n; i++) {
            Value kk = eval_forced(vm, n->u.dict.keys[i]);
            if (IS_EXC(kk)) { decref(dv); return kk; }
            if (!key_ok(kk)) {
                Value e = vm_error(vm, n->u.dict.keys[i], "dict keys are numbers, strings or bools, not %s", type_name(kk));
                decref(kk); decref(dv);
                return e;
            }
            Value v = eval(vm, n->u.dict.vals[i]);
            if (IS_EXC(v)) { decref(kk); decref(dv); return v; }
            dict_set(d, kk, v);
            decref(kk); decref(v);
        }
        return dv;
    }
    case N_MEMBER: {
        Value obj = eval(vm, n->u.member.obj);
        if (IS_EXC(obj)) return obj;
        Value r = tp_member(vm, obj, n->u.member.key, n);
        decref(obj);
        return r;
    }
    case N_FNEXPR: return make_closure(vm, n->u.fn);
    case N_COND: {
        bool err = false;
        bool t = condition(vm, n->u.ifs.cond, &err);
        if (err) return v_exc();
        return eval(vm, t ? n->u.ifs.then : n->u.ifs.els);
    }
    case N_LISTCOMP: case N_DICTCOMP: return eval_comp(vm, n);
    case N_SLICE: return vm_error(vm, n, "a slice is only allowed inside [ ]");
    /* handled by eval(), or never evaluated (statements, unresolved names) */
    case N_NUM: case N_LOCAL: case N_GLOBAL: case N_SELF: case N_BINARY: case N_CALL: case N_INDEX:
    case N_NAME: case N_EXPRSTMT: case N_ASSIGN: case N_AUGASSIGN: case N_DESTRUCT: case N_IF:
    case N_WHILE: case N_FOR: case N_BREAK: case N_CONTINUE: case N_RETURN: case N_FNDEF: case N_TRY:
    case N_IMPORT: case N_GLOBALDECL: case N_BLOCK: case N_PASS: case N_NKINDS:
        qh_unreachable();
    }
    qh_unreachable();
}

/* The hot kinds stay here, small, so a recursive evaluation costs little;
 * everything else is in eval_cold. */
static Value eval(VM *vm, Node *n)
{
    switch (n->kind) {
    case N_NUM: return v_num(n->u.num);
    case N_LOCAL: {
        Value v = vm->frame->slots[n->u.var.slot];
        if (v.t == T_UNBOUND) return eval_name_error(vm, n);
        incref(v);
        return v;
    }
    case N_GLOBAL: {
        Value v = vm->mod->globals[n->u.var.slot];
        if (v.t == T_UNBOUND) return eval_name_error(vm, n);
        incref(v);
        return v;
    }
    case N_BINARY: {
        Value a, b;
        double x, y;
        if (leaf_number(vm, n->u.bin.a, &x)) a = v_num(x);
        else { a = eval(vm, n->u.bin.a); if (IS_EXC(a)) return a; }
        if (leaf_number(vm, n->u.bin.b, &y)) b = v_num(y);
        else { b = eval(vm, n->u.bin.b); if (IS_EXC(b)) { decref(a); return b; } }
        if (a.t == T_NUM && b.t == T_NUM) {
            x = a.n; y = b.n;
            switch (n->op) {
            case OP_ADD: return v_num(x + y);
            case OP_SUB: return v_num(x - y);
            case OP_MUL: return v_num(x * y);
            case OP_LT: return v_bool(x < y);
            case OP_LE: return v_bool(x <= y);
            case OP_GT: return v_bool(x > y);
            case OP_GE: return v_bool(x >= y);
            case OP_EQ: return v_bool(x == y);
            case OP_NE: return v_bool(x != y);
            case OP_MOD:
                if (y > 0 && x >= 0 && x < 9007199254740992.0 && y < 9007199254740992.0 && x == (double)(int64_t)x && y == (double)(int64_t)y)
                    return v_num((double)((int64_t)x % (int64_t)y));
                return arith_num(vm, (BinOp)n->op, x, y, n);
            default: return arith_num(vm, (BinOp)n->op, x, y, n);
            }
        }
        Value r = tp_binop(vm, (BinOp)n->op, a, b, n);
        decref(a); decref(b);
        return r;
    }
    case N_CALL: return eval_call(vm, n);
    case N_SELF: {
        Value v = v_obj(&vm->frame->fn->h);
        incref(v);
        return v;
    }
    case N_INDEX: {
        /* list[number] */
        const Node *o = n->u.index.obj;
        double d;
        if (n->u.index.nidx != 1 || (o->kind != N_LOCAL && o->kind != N_GLOBAL) ||
            !leaf_number(vm, n->u.index.idx[0], &d)) return eval_index(vm, n);
        Value lv = o->kind == N_LOCAL ? vm->frame->slots[o->u.var.slot] : vm->mod->globals[o->u.var.slot];
        if (lv.t != T_LIST) return eval_index(vm, n);
        ObjList *l = AS_LIST(lv);
        if (d >= 0 && d < (double)l->len && d == (double)(size_t)d) {
            Value r = l->v[(size_t)d];
            incref(r);
            return r;
        }
        return eval_index(vm, n);
    }
    default: return eval_cold(vm, n);
    }
}

/* ---------------------------------------------------------------- assignment */

static bool store_cold(VM *vm, Node *t, Value v);

/* binds a target: the common kinds inline, the rest in store_cold */
static inline bool store(VM *vm, Node *t, Value v)     /* takes the reference */
{
    Value *slot;
    if (t->kind == N_LOCAL) slot = &vm->frame->slots[t->u.var.slot];
    else if (t->kind == N_GLOBAL && !vm->is_task) slot = &vm->mod->globals[t->u.var.slot];
    else if (t->kind == N_INDEX && t->u.index.nidx == 1 &&
             (t->u.index.obj->kind == N_LOCAL || t->u.index.obj->kind == N_GLOBAL)) {
        /* list[number] = v */
        const Node *o = t->u.index.obj;
        Value lv = o->kind == N_LOCAL ? vm->frame->slots[o->u.var.slot] : vm->mod->globals[o->u.var.slot];
        double d;
        if (lv.t != T_LIST || !leaf_number(vm, t->u.index.idx[0], &d)) return store_cold(vm, t, v);
        ObjList *l = AS_LIST(lv);
        if (!(d >= 0 && d < (double)l->len && d == (double)(size_t)d)) return store_cold(vm, t, v);
        slot = &l->v[(size_t)d];
    }
    else return store_cold(vm, t, v);
    Value old = *slot;
    *slot = v;
    decref(old);
    return true;
}

static __attribute__((noinline)) void global_in_task(VM *vm, const Node *t)
{
    vm_error(vm, t, "cannot assign the global variable '%s' inside a quantum function: a qfn may not print, "
             "read input, import or assign globals (here through a function value)", t->u.var.name);
}

/* the targets store() does not handle */
__attribute__((noinline))
static bool store_cold(VM *vm, Node *t, Value v)     /* takes the reference */
{
    Value *slot;
    switch (t->kind) {
    case N_LOCALCELL: slot = &AS_CELL(vm->frame->slots[t->u.var.slot])->v; break;
    case N_UPVAL: slot = &vm->frame->fn->up[t->u.var.slot]->v; break;
    case N_GLOBAL:
        /* in a task (store() takes the main program's): only a function
         * value can bring such an assignment there; it would change the
         * task's copy, never the program's variable */
        qh_assert(vm->is_task);
        decref(v);
        global_in_task(vm, t);
        return false;
    case N_INDEX: {
        Value obj = eval(vm, t->u.index.obj);
        if (IS_EXC(obj)) { decref(v); return false; }
        int ni = t->u.index.nidx;
        Value idx[ni];
        if (!eval_subscripts(vm, t, idx)) { decref(obj); decref(v); return false; }
        bool ok = tp_setindex(vm, obj, ni, idx, v, t, t->u.index.idx);
        for (int i = 0; i < ni; i++) decref(idx[i]);
        decref(obj);
        decref(v);
        return ok;
    }
    default:
        /* the resolver only makes assignable targets */
        qh_unreachable();
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
        vm_error(vm, site, "cannot unpack %s %s of length %zu into %d names", strchr("aeiou", nm[0]) ? "an" : "a", nm, len, n);
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
        } else if (!store(vm, targets[i], x)) ok = false;
    }
    tp_iter_end(&it);
done:
    decref(seq);
    return ok;
}

static ExecStatus aug_assign(VM *vm, Node *s)
{
    Node *t = s->u.assign.target;
    BinOp op = (BinOp)s->op;
    if (t->kind == N_LOCAL || (t->kind == N_GLOBAL && !vm->is_task)) {
        /* number op= number on a plain variable: in place */
        Value *slot = t->kind == N_LOCAL ? &vm->frame->slots[t->u.var.slot] : &vm->mod->globals[t->u.var.slot];
        if (slot->t == T_NUM) {
            double y;
            Value rv;
            if (leaf_number(vm, s->u.assign.value, &y)) rv = v_num(y);
            else { rv = eval(vm, s->u.assign.value); if (IS_EXC(rv)) return S_ERR; }
            /* the slot may have changed while the value was evaluated */
            slot = t->kind == N_LOCAL ? &vm->frame->slots[t->u.var.slot] : &vm->mod->globals[t->u.var.slot];
            if (rv.t == T_NUM && slot->t == T_NUM) {
                double x = slot->n;
                switch (op) {
                case OP_ADD: slot->n = x + rv.n; return S_OK;
                case OP_SUB: slot->n = x - rv.n; return S_OK;
                case OP_MUL: slot->n = x * rv.n; return S_OK;
                default: {
                    Value r = arith_num(vm, op, x, rv.n, s);
                    if (IS_EXC(r)) return S_ERR;
                    *slot = r;
                    return S_OK;
                }
                }
            }
            Value cur = *slot;
            if (cur.t == T_UNBOUND) { decref(rv); eval_name_error(vm, t); return S_ERR; }
            incref(cur);
            Value r = tp_binop(vm, op, cur, rv, s);
            decref(cur); decref(rv);
            if (IS_EXC(r)) return S_ERR;
            return store(vm, t, r) ? S_OK : S_ERR;
        }
    }
    Value rhs = eval(vm, s->u.assign.value);
    if (IS_EXC(rhs)) return S_ERR;
    if (t->kind == N_INDEX) {
        Value obj = eval(vm, t->u.index.obj);
        if (IS_EXC(obj)) { decref(rhs); return S_ERR; }
        int ni = t->u.index.nidx;
        Value idx[ni];
        if (!eval_subscripts(vm, t, idx)) { decref(obj); decref(rhs); return S_ERR; }
        Value cur = tp_index(vm, obj, ni, idx, t, t->u.index.idx);
        bool ok = false;
        if (!IS_EXC(cur)) {
            Value r = (cur.t == T_NUM && rhs.t == T_NUM) ? arith_num(vm, op, cur.n, rhs.n, s) : tp_binop(vm, op, cur, rhs, s);
            decref(cur);
            if (!IS_EXC(r)) { ok = tp_setindex(vm, obj, ni, idx, r, t, t->u.index.idx); decref(r); }
        }
        for (int i = 0; i < ni; i++) decref(idx[i]);
        decref(obj); decref(rhs);
        return ok ? S_OK : S_ERR;
    }
    Value cur = eval(vm, t);
    if (IS_EXC(cur)) { decref(rhs); return S_ERR; }
    Value r;
    if (cur.t == T_NUM && rhs.t == T_NUM) r = arith_num(vm, op, cur.n, rhs.n, s);
    else if (op == OP_ADD && cur.t == T_LIST && rhs.t == T_LIST) {
        /* xs += ys extends in place, as in Python */
        ObjList *l = AS_LIST(cur), *y = AS_LIST(rhs);
        size_t ny = y->len;
        for (size_t i = 0; i < ny; i++) { incref(y->v[i]); list_push(l, y->v[i]); }
        r = cur; incref(r);
    } else r = tp_binop(vm, op, cur, rhs, s);
    decref(cur); decref(rhs);
    if (IS_EXC(r)) return S_ERR;
    return store(vm, t, r) ? S_OK : S_ERR;
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

static bool is_range_call(const Node *it)
{
    return it->kind == N_CALL && it->u.call.fn->kind == N_BUILTIN &&
           strcmp(builtin_get(it->u.call.fn->u.var.slot)->name, "range") == 0 &&
           it->u.call.nkw == 0 && it->u.call.nargs >= 1 && it->u.call.nargs <= 3;
}

/* the bounds of range(...) called directly (a for loop or a comprehension) */
static bool range_args(VM *vm, Node *it, double *start, double *stop, double *step)
{
    double a[3] = { 0, 0, 0 };
    for (int i = 0; i < it->u.call.nargs; i++) {
        Value v = eval_forced(vm, it->u.call.args[i]);
        if (IS_EXC(v)) return false;
        if (v.t != T_NUM || v.n != floor(v.n)) {
            vm_error(vm, it->u.call.args[i], "range() arguments must be integers, not %s", v.t == T_NUM ? "a fraction" : type_name(v));
            decref(v);
            return false;
        }
        a[i] = v.n;
    }
    *start = 0; *step = 1;
    if (it->u.call.nargs == 1) *stop = a[0];
    else { *start = a[0]; *stop = a[1]; if (it->u.call.nargs == 3) *step = a[2]; }
    if (*step == 0) { vm_error(vm, it, "range() step must not be zero"); return false; }
    return true;
}

/* for i in range(...): no list is built */
static ExecStatus exec_for_range(VM *vm, Node *s)
{
    double start, stop, step;
    if (!range_args(vm, s->u.fors.iter, &start, &stop, &step)) return S_ERR;
    Node *var = s->u.fors.var;
    bool fast = s->u.fors.nvars == 1 && (var->kind == N_LOCAL || (var->kind == N_GLOBAL && !vm->is_task));
    unsigned tick = 0;
    for (double x = start; step > 0 ? x < stop : x > stop; x += step) {
        ExecStatus st;
        if (fast) {
            Value *slot = var->kind == N_LOCAL ? &vm->frame->slots[var->u.var.slot] : &vm->mod->globals[var->u.var.slot];
            decref(*slot);
            *slot = v_num(x);
            st = block(vm, s->u.fors.body);
            if (st == S_CONTINUE) st = S_OK;
        } else {
            st = for_body(vm, s, v_num(x));
        }
        if (st == S_BREAK) return S_OK;
        if (st != S_OK) return st;
        if (((++tick & 1023) == 0) && atomic_load(&vm->in->sigint) && vm_check_interrupt(vm)) return S_ERR;
    }
    return S_OK;
}

static ExecStatus exec_for(VM *vm, Node *s)
{
    Node *it = s->u.fors.iter;
    if (is_range_call(it)) return exec_for_range(vm, s);
    Value coll = eval_forced(vm, it);
    if (IS_EXC(coll)) return S_ERR;
    ExecStatus result = S_OK;
    if (coll.t == T_LIST) {
        ObjList *l = AS_LIST(coll);
        for (size_t i = 0; i < l->len; i++) {
            incref(l->v[i]);
            ExecStatus st = for_body(vm, s, l->v[i]);
            if (st == S_BREAK) break;
            if (st != S_OK) { result = st; break; }
        }
        decref(coll);
        return result;
    }
    Iter iter;
    if (!tp_iter_begin(vm, coll, &iter, it)) { decref(coll); return S_ERR; }
    for (;;) {
        Value x;
        int k = tp_iter_next(vm, coll, &iter, &x, it);
        if (k < 0) { result = S_ERR; break; }
        if (k == 0) break;
        ExecStatus st = for_body(vm, s, x);
        if (st == S_BREAK) break;
        if (st != S_OK) { result = st; break; }
    }
    tp_iter_end(&iter);
    decref(coll);
    return result;
}

/* ---------------------------------------------------------------- statements */

static ExecStatus exec_stmt_cold(VM *vm, Node *s);

static bool condition(VM *vm, Node *cond, bool *err)
{
    Value c = eval(vm, cond);
    if (IS_EXC(c)) { *err = true; return false; }
    if (c.t == T_BOOL) return c.b;
    bool t = tp_truthy(vm, c, cond, err);
    decref(c);
    return t;
}

/* The statements of inner loops inline; the rest in exec_stmt_cold. */
static ExecStatus stmt(VM *vm, Node *s)
{
    switch (s->kind) {
    case N_ASSIGN: {
        Value v = eval(vm, s->u.assign.value);
        if (IS_EXC(v)) return S_ERR;
        return store(vm, s->u.assign.target, v) ? S_OK : S_ERR;
    }
    case N_AUGASSIGN: return aug_assign(vm, s);
    case N_IF: {
        bool err = false;
        bool t = condition(vm, s->u.ifs.cond, &err);
        if (err) return S_ERR;
        if (t) return block(vm, s->u.ifs.then);
        if (!s->u.ifs.els) return S_OK;
        return s->u.ifs.els->kind == N_IF ? stmt(vm, s->u.ifs.els) : block(vm, s->u.ifs.els);
    }
    case N_RETURN: {
        if (!vm->frame || !vm->frame->fn) return exec_stmt_cold(vm, s);
        Value v = s->u.expr.expr ? eval(vm, s->u.expr.expr) : v_nil();
        if (IS_EXC(v)) return S_ERR;
        decref(vm->ret);
        vm->ret = v;
        return S_RETURN;
    }
    default: return exec_stmt_cold(vm, s);
    }
}

/* the statements exec_stmt does not handle */
__attribute__((noinline))
static ExecStatus exec_stmt_cold(VM *vm, Node *s)
{
    switch ((NodeKind)s->kind) {
    case N_EXPRSTMT: {
        Value v = eval(vm, s->u.expr.expr);
        if (IS_EXC(v)) return S_ERR;
        if (is_lazy(v) && (vm->q || vm->is_task)) {
            /* inside a quantum function the value decides (an operator a
             * call returned applies); a task's futures are all finished.
             * The main program lets a dropped call's future run on. */
            Value r = tp_force(vm, v, s);
            decref(v);
            if (IS_EXC(r)) return S_ERR;
            v = r;
        }
        const TypeOps *t = type_of(v);
        if (t->stmt) {
            /* a value with an effect of its own as a statement (an operator applies) */
            Value r = t->stmt(vm, v, s);
            decref(v);
            if (IS_EXC(r)) return S_ERR;
            decref(r);
            return S_OK;
        }
        decref(v);
        return S_OK;
    }
    case N_DESTRUCT: {
        Value v = eval(vm, s->u.destruct.value);
        if (IS_EXC(v)) return S_ERR;
        bool ok = destructure(vm, s->u.destruct.targets, s->u.destruct.n, v, s->u.destruct.value);
        decref(v);
        return ok ? S_OK : S_ERR;
    }
    case N_WHILE: {
        for (;;) {
            bool err = false;
            bool t = condition(vm, s->u.whiles.cond, &err);
            if (err) return S_ERR;
            if (!t) return S_OK;
            ExecStatus st = block(vm, s->u.whiles.body);
            if (st == S_BREAK) return S_OK;
            if (st == S_RETURN || st == S_ERR) return st;
            if (atomic_load(&vm->in->sigint) && vm_check_interrupt(vm)) return S_ERR;
        }
    }
    case N_FOR: return exec_for(vm, s);
    case N_BREAK: return S_BREAK;
    case N_CONTINUE: return S_CONTINUE;
    case N_RETURN:      /* exec_stmt runs it inside a function */
        vm_error(vm, s, "'return' outside a function");
        return S_ERR;
    case N_FNDEF: {
        Value f = make_closure(vm, s->u.fn);
        if (IS_EXC(f)) return S_ERR;
        return store(vm, s->u.fn->binding, f) ? S_OK : S_ERR;
    }
    case N_TRY: {
        size_t sp = vm->sp;
        Frame *fr = vm->frame;
        int depth = vm->depth;
        ObjModule *mod = vm->mod;
        ExecStatus st = block(vm, s->u.tries.body);
        if (st != S_ERR) return st;
        if (vm->err.interrupted) return S_ERR;
        /* unwind to the try's own frame */
        while (vm->sp > sp) decref(vm->stack[--vm->sp]);
        vm->frame = fr; vm->depth = depth; vm->mod = mod;
        if (s->u.tries.var && !store(vm, s->u.tries.var, v_str(vm->err.msg))) return S_ERR;
        return block(vm, s->u.tries.handler);
    }
    case N_IMPORT: {
        if (!vm->in->hooks.import) { vm_error(vm, s, "import is not available here"); return S_ERR; }
        if (vm->is_task) {
            vm_error(vm, s, "cannot import inside a quantum function: a qfn may not print, read input, import or "
                     "assign globals (here through a function value)");
            return S_ERR;
        }
        Value m = vm->in->hooks.import(vm, s->u.import.name, s);
        if (IS_EXC(m)) return S_ERR;
        return store(vm, s->u.import.var, m) ? S_OK : S_ERR;
    }
    case N_GLOBALDECL: case N_PASS: return S_OK;
    case N_BLOCK: return block(vm, s);
    /* handled by exec_stmt, or expressions (never statements) */
    case N_ASSIGN: case N_AUGASSIGN: case N_IF:
    case N_NUM: case N_IMAG: case N_STR: case N_TRUE: case N_FALSE: case N_NIL: case N_NAME:
    case N_LOCAL: case N_LOCALCELL: case N_UPVAL: case N_GLOBAL: case N_BUILTIN: case N_SELF:
    case N_LIST: case N_DICT: case N_UNARY: case N_BINARY: case N_AND: case N_OR: case N_NOT:
    case N_CALL: case N_INDEX: case N_SLICE: case N_MEMBER: case N_FNEXPR: case N_NKINDS:
    case N_COND: case N_LISTCOMP: case N_DICTCOMP:
        qh_unreachable();
    }
    qh_unreachable();
}

static ExecStatus block(VM *vm, Node *b)
{
    Node **items = b->u.list.items;
    int n = b->u.list.n;
    for (int i = 0; i < n; i++) {
        ExecStatus st = stmt(vm, items[i]);
        if (st != S_OK) return st;
    }
    return S_OK;
}

/* ---------------------------------------------------------------- frames */

static bool check_stack(VM *vm, const Node *site)
{
    char here;
    size_t used = (size_t)(vm->stack_base > &here ? vm->stack_base - &here : &here - vm->stack_base);
    if (vm->depth >= vm->max_depth || used > vm->stack_limit) {
        vm_error(vm, site, "maximum recursion depth exceeded (%d calls deep)", vm->depth);
        return false;
    }
    return true;
}

Value eval_run_body(VM *vm, ObjFunc *f, Value *slots, const Node *site)
{
    FnProto *p = f->p;
    if (!check_stack(vm, site)) {
        for (int i = 0; i < p->nlocals; i++) decref(slots[i]);
        return v_exc();
    }
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
    if (st == S_ERR) { vm_tb_push(vm, site); return v_exc(); }
    if (st == S_RETURN) { Value r = vm->ret; vm->ret = v_nil(); return r; }
    return v_nil();
}

/* the entry points for call.c and the rooms above */
Value eval_expr(VM *vm, Node *e) { return eval(vm, e); }
ExecStatus exec_stmt(VM *vm, Node *s) { return stmt(vm, s); }
ExecStatus exec_block(VM *vm, Node *b) { return block(vm, b); }

/* ---------------------------------------------------------------- running a module */

/* --trace: a main-thread statement from ts_us to now */
static void trace_stmt(Trace *t, int line, double ts_us)
{
    char name[64], args[64];
    snprintf(name, sizeof name, "line %d", line);
    snprintf(args, sizeof args, "{\"line\":%d}", line);
    trace_complete(t, 0, name, "statement", ts_us, trace_now_us(t) - ts_us, args);
}

bool vm_run_module(VM *vm, ObjModule *m)
{
    const Source *saved_top = vm->top_src;
    vm->top_src = NULL;             /* a module's own statements report its own source */
    ObjModule *saved = vm->mod;
    Frame *saved_frame = vm->frame;
    vm->mod = m;
    vm->frame = NULL;
    Node *body = m->info->body;
    bool ok = true;
    Trace *trace = vm->is_task ? NULL : vm->in->trace;
    for (int i = 0; i < body->u.list.n; i++) {
        Node *s = body->u.list.items[i];
        int saved_line = vm->cur_line;
        vm->cur_line = s->line;
        double ts = trace ? trace_now_us(trace) : 0;
        ExecStatus st = stmt(vm, s);
        if (trace) trace_stmt(trace, s->line, ts);
        vm->cur_line = saved_line;
        if (st == S_ERR) { ok = false; break; }
        if (st == S_BREAK || st == S_CONTINUE) {
            vm_error(vm, s, "'break' or 'continue' outside a loop");
            ok = false;
            break;
        }
    }
    vm->mod = saved;
    vm->frame = saved_frame;
    vm->top_src = saved_top;
    return ok;
}
