/* laplan.c — lookahead plans for `for` loops (laplan.h): the proof that an
 * iteration's quantum calls can be started before the iteration runs.
 * Knows the AST and the builtin table. */
#include "laplan.h"
#include "builtins.h"
#include "qh_assert.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- small sets */

typedef struct Set {
    int *v;
    int n, cap;
} Set;
static void set_add(Set *s, int x)
{
    for (int i = 0; i < s->n; i++)
        if (s->v[i] == x) return;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->v = xrealloc(s->v, (size_t)s->cap * sizeof(int));
    }
    s->v[s->n++] = x;
}
static bool set_has(const Set *s, int x)
{
    for (int i = 0; i < s->n; i++)
        if (s->v[i] == x) return true;
    return false;
}
static void set_del(Set *s, int x)
{
    for (int i = 0; i < s->n; i++)
        if (s->v[i] == x) {
            s->v[i] = s->v[--s->n];
            return;
        }
}

/* a plain variable (a frame slot or a global) as one number, else -1 */
static int var_key(const Node *n)
{
    if (n->kind == N_LOCAL) return 2 * n->u.var.slot;
    if (n->kind == N_GLOBAL) return 2 * n->u.var.slot + 1;
    return -1;
}

/* the function bound to a global by a top-level definition, if any */
static FnProto *proto_of_global(ModInfo *m, int slot)
{
    for (int i = 0; i < m->nprotos; i++) {
        FnProto *f = m->protos[i];
        if (f->binding && f->binding->kind == N_GLOBAL && f->binding->u.var.slot == slot) return f;
    }
    return NULL;
}

static FnProto *qfn_called(ModInfo *m, const Node *n)
{
    if (n->kind != N_CALL || n->u.call.fn->kind != N_GLOBAL) return NULL;
    FnProto *f = proto_of_global(m, n->u.call.fn->u.var.slot);
    return f && f->is_qfn ? f : NULL;
}

/* does f (a plain function) make quantum calls, directly or through the
 * functions it calls by name? */
static bool makes_qcalls(ModInfo *m, FnProto *f, Set *seen)
{
    for (int k = 0; k < f->nglobal_calls; k++) {
        int g = f->global_calls[k];
        if (set_has(seen, g)) continue;
        set_add(seen, g);
        FnProto *h = proto_of_global(m, g);
        if (!h) continue;
        if (h->is_qfn || makes_qcalls(m, h, seen)) return true;
    }
    return false;
}

/* the line of the first statement in n that binds global `slot` other than
 * def's own definition, else 0 */
static int binds_global(const Node *n, int slot, const FnProto *def);
static int binds_list(Node *const *v, int k, int slot, const FnProto *def)
{
    for (int i = 0; i < k; i++) {
        int l = binds_global(v[i], slot, def);
        if (l) return l;
    }
    return 0;
}
static int target_is(const Node *t, int slot)
{
    return t && t->kind == N_GLOBAL && t->u.var.slot == slot;
}
static int binds_global(const Node *n, int slot, const FnProto *def)
{
    if (!n) return 0;
    int l = 0;
    switch (n->kind) {
    case N_BLOCK: return binds_list(n->u.list.items, n->u.list.n, slot, def);
    case N_ASSIGN:
    case N_AUGASSIGN: return target_is(n->u.assign.target, slot) ? n->line : 0;
    case N_DESTRUCT:
        for (int i = 0; i < n->u.destruct.n; i++)
            if (target_is(n->u.destruct.targets[i], slot)) return n->line;
        return 0;
    case N_FOR:
        if (n->u.fors.nvars == 1 ? target_is(n->u.fors.var, slot) : 0) return n->line;
        for (int i = 0; n->u.fors.nvars > 1 && i < n->u.fors.nvars; i++)
            if (target_is(n->u.fors.vars[i], slot)) return n->line;
        return binds_global(n->u.fors.body, slot, def);
    case N_WHILE: return binds_global(n->u.whiles.body, slot, def);
    case N_IF:
        l = binds_global(n->u.ifs.then, slot, def);
        return l ? l : binds_global(n->u.ifs.els, slot, def);
    case N_TRY:
        if (target_is(n->u.tries.var, slot)) return n->line;
        l = binds_global(n->u.tries.body, slot, def);
        return l ? l : binds_global(n->u.tries.handler, slot, def);
    case N_FNDEF: return n->u.fn != def && target_is(n->u.fn->binding, slot) ? n->line : 0;
    case N_IMPORT: return target_is(n->u.import.var, slot) ? n->line : 0;
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
    case N_BREAK:
    case N_CONTINUE:
    case N_RETURN:
    case N_GLOBALDECL:
    case N_PASS: return 0;
    }
    qh_unreachable();
}

/* a line where the name of def (bound to global slot) is bound again: by
 * another definition, an assignment, a loop, an import, anywhere in the
 * module's code (function bodies included); 0 if none */
static int rebound_at(ModInfo *m, const Node *modbody, int slot, const FnProto *def)
{
    int l = binds_global(modbody, slot, def);
    for (int i = 0; !l && i < m->nprotos; i++) l = binds_global(m->protos[i]->body, slot, def);
    return l;
}

/* ---------------------------------------------------------------- the body */

typedef struct Ctx {
    ModInfo *m;
    const Node *modbody; /* the module's top-level code */
    char why[200];       /* the first reason the loop gets no plan (--deps) */
    char pwhy[160];      /* why the last expression was not pure */
    Set writes;          /* plain variables the body rebinds anywhere */
    Set loopvars;
    Set step_only; /* rebound only by steps (top-level pure assignments and sites) */
    Set defined;   /* assigned by a step met so far */
    LaStep *steps;
    int nsteps, cap;
    int nsites;
    bool nested;     /* a step is an inner loop */
    LaCheck *checks; /* the steps' checks (a step's checks: an offset into them until the
                        plan is made) */
    int nchecks, capchecks;
    bool fail;
} Ctx;

/* what a Ctx holds on the heap (its sets, steps and checks) */
static void ctx_free(Ctx *c)
{
    free(c->writes.v);
    free(c->loopvars.v);
    free(c->step_only.v);
    free(c->defined.v);
    free(c->steps);
    free(c->checks);
}

static void add_check(Ctx *c, int slot, FnProto *proto)
{
    if (c->nchecks == c->capchecks) {
        c->capchecks = c->capchecks ? c->capchecks * 2 : 8;
        c->checks = realloc(c->checks, (size_t)c->capchecks * sizeof(LaCheck));
    }
    c->checks[c->nchecks++] = (LaCheck){ slot, proto };
}

/* a step; a site's checks are the ones added since `first` */
static void add_step(Ctx *c, LaStepKind k, Node *target, Node *expr, int first, int ncalls)
{
    if (c->nsteps == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 8;
        c->steps = xrealloc(c->steps, (size_t)c->cap * sizeof(LaStep));
    }
    c->steps[c->nsteps++] =
        (LaStep){ k, target, expr, (const LaCheck *)(intptr_t)first, c->nchecks - first, ncalls };
    if (k == LA_SITE) c->nsites += ncalls;
}

/* the loop gets no plan: the first reason is kept for --deps */
static void refuse(Ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refuse(Ctx *c, const char *fmt, ...)
{
    c->fail = true;
    if (c->why[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof c->why, fmt, ap);
    va_end(ap);
}

static bool not_pure(Ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool not_pure(Ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->pwhy, sizeof c->pwhy, fmt, ap);
    va_end(ap);
    return false;
}

static const char *var_name(const Node *n)
{
    return (n->kind == N_LOCAL || n->kind == N_GLOBAL || n->kind == N_LOCALCELL ||
            n->kind == N_UPVAL) &&
                   n->u.var.name
               ? n->u.var.name
               : "?";
}

static void write_target(Ctx *c, Node *t)
{
    int k = var_key(t);
    if (k >= 0) set_add(&c->writes, k);
}

/* every plain variable a statement (or expression) rebinds, nested ones included */
static void collect_writes(Ctx *c, Node *n)
{
    if (!n) return;
    switch (n->kind) {
    case N_BLOCK:
        for (int i = 0; i < n->u.list.n; i++) collect_writes(c, n->u.list.items[i]);
        break;
    case N_ASSIGN:
    case N_AUGASSIGN:
        write_target(c, n->u.assign.target);
        collect_writes(c, n->u.assign.value);
        break;
    case N_DESTRUCT:
        for (int i = 0; i < n->u.destruct.n; i++) write_target(c, n->u.destruct.targets[i]);
        break;
    case N_FOR:
        if (n->u.fors.nvars == 1)
            write_target(c, n->u.fors.var);
        else
            for (int i = 0; i < n->u.fors.nvars; i++) write_target(c, n->u.fors.vars[i]);
        collect_writes(c, n->u.fors.body);
        break;
    case N_WHILE: collect_writes(c, n->u.whiles.body); break;
    case N_IF:
        collect_writes(c, n->u.ifs.then);
        collect_writes(c, n->u.ifs.els);
        break;
    case N_TRY:
        collect_writes(c, n->u.tries.body);
        if (n->u.tries.var) write_target(c, n->u.tries.var);
        collect_writes(c, n->u.tries.handler);
        break;
    case N_FNDEF: write_target(c, n->u.fn->binding); break;
    case N_IMPORT: write_target(c, n->u.import.var); break;
    case N_EXPRSTMT: collect_writes(c, n->u.expr.expr); break;
    case N_LISTCOMP:
    case N_DICTCOMP:
        for (int i = 0; i < n->u.comp.nclauses; i++)
            for (int j = 0; j < n->u.comp.clauses[i].nvars; j++)
                write_target(c, n->u.comp.clauses[i].vars[j]);
        break;
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
    case N_BREAK:
    case N_CONTINUE:
    case N_RETURN:
    case N_GLOBALDECL:
    case N_PASS: break;
    }
}

/* the line of a break or continue of this loop, or a return, anywhere in n; 0 if none */
static int leaves_early(const Node *n, int inner)
{
    if (!n) return 0;
    int l = 0;
    switch (n->kind) {
    case N_BREAK:
    case N_CONTINUE: return inner == 0 ? n->line : 0;
    case N_RETURN: return n->line;
    case N_BLOCK:
        for (int i = 0; i < n->u.list.n && !l; i++) l = leaves_early(n->u.list.items[i], inner);
        return l;
    case N_IF:
        l = leaves_early(n->u.ifs.then, inner);
        return l ? l : leaves_early(n->u.ifs.els, inner);
    case N_WHILE: return leaves_early(n->u.whiles.body, inner + 1);
    case N_FOR: return leaves_early(n->u.fors.body, inner + 1);
    case N_TRY:
        l = leaves_early(n->u.tries.body, inner);
        return l ? l : leaves_early(n->u.tries.handler, inner);
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
    case N_FNDEF:
    case N_IMPORT:
    case N_GLOBALDECL:
    case N_PASS: return 0;
    }
    qh_unreachable();
}

/* Builtins an argument may use: they compute a value from their arguments
 * and nothing else (no output, input, clock, random numbers, waiting,
 * changing a container, calling a function they are given). Gates and
 * observables are values too. */
static bool value_builtin(const BuiltinDef *b)
{
    static const char *const ok[] = {
        "abs",       "sqrt",      "sin",         "cos",     "tan",      "asin",   "acos",
        "atan",      "atan2",     "exp",         "log",     "log2",     "log10",  "floor",
        "ceil",      "round",     "min",         "max",     "sum",      "len",    "range",
        "num",       "int",       "str",         "fmt",     "complex",  "type",   "array",
        "zeros",     "ones",      "eye",         "full",    "linspace", "arange", "shape",
        "reshape",   "transpose", "tolist",      "dot",     "kron",     "mean",   "norm",
        "real",      "imag",      "conj",        "keys",    "values",   "items",  "reversed",
        "enumerate", "zip",       "any",         "all",     "get",      "ord",    "chr",
        "join",      "split",     "replace",     "upper",   "lower",    "strip",  "startswith",
        "endswith",  "find",      "hamiltonian", "adjoint", "ctrl",     "matrix", NULL,
    };
    if (b->flags & (BI_IMPURE | BI_MUTATES | BI_QUANTUM | BI_LAZY | BI_CALLS)) return false;
    if (b->flags & BI_GATE) return true;
    for (const char *const *n = ok; *n; n++)
        if (strcmp(*n, b->name) == 0) return true;
    return false;
}

/* may a step read this variable? the loop's own, one the body never
 * rebinds, or one a step of this iteration has already set */
static bool readable(Ctx *c, const Node *n)
{
    int k = var_key(n);
    if (k < 0) return false; /* a cell or an upvalue: closures may change it */
    if (set_has(&c->loopvars, k) || !set_has(&c->writes, k)) return true;
    return set_has(&c->step_only, k) && set_has(&c->defined, k);
}

/* computable ahead of time with no effect and no call of a function */
static bool pure_expr(Ctx *c, const Node *n)
{
    if (!n) return true;
    switch (n->kind) {
    case N_NUM:
    case N_IMAG:
    case N_STR:
    case N_TRUE:
    case N_FALSE:
    case N_NIL:
    case N_BUILTIN: return true;
    case N_LOCAL:
    case N_GLOBAL:
    case N_LOCALCELL:
    case N_UPVAL:
        if (readable(c, n)) return true;
        if (var_key(n) < 0)
            return not_pure(c, "%s is a closure's variable, which a call may change (rebinding)",
                            var_name(n));
        return not_pure(c, "%s is rebound in the body after the call's turn (rebinding)",
                        var_name(n));
    case N_UNARY:
    case N_NOT: return pure_expr(c, n->u.bin.a);
    case N_BINARY:
    case N_AND:
    case N_OR: return pure_expr(c, n->u.bin.a) && pure_expr(c, n->u.bin.b);
    case N_COND:
        return pure_expr(c, n->u.ifs.cond) && pure_expr(c, n->u.ifs.then) &&
               pure_expr(c, n->u.ifs.els);
    case N_LIST:
        for (int i = 0; i < n->u.list.n; i++)
            if (!pure_expr(c, n->u.list.items[i])) return false;
        return true;
    case N_DICT:
        for (int i = 0; i < n->u.dict.n; i++)
            if (!pure_expr(c, n->u.dict.keys[i]) || !pure_expr(c, n->u.dict.vals[i])) return false;
        return true;
    case N_INDEX:
        if (!pure_expr(c, n->u.index.obj)) return false;
        for (int i = 0; i < n->u.index.nidx; i++)
            if (!pure_expr(c, n->u.index.idx[i])) return false;
        return true;
    case N_SLICE:
        return pure_expr(c, n->u.slice.lo) && pure_expr(c, n->u.slice.hi) &&
               pure_expr(c, n->u.slice.step);
    case N_CALL: {
        const Node *fn = n->u.call.fn;
        if (fn->kind != N_BUILTIN)
            return not_pure(c, "it calls %s() at line %d, which is not a value builtin (effect)",
                            var_name(fn), n->line);
        const BuiltinDef *b = builtin_get(fn->u.var.slot);
        if (!value_builtin(b))
            return not_pure(c, "%s() at line %d %s (effect)", b->name, n->line,
                            b->flags & BI_CALLS     ? "may call user code"
                            : b->flags & BI_MUTATES ? "changes a container"
                            : b->flags & BI_IMPURE  ? "has an effect"
                            : b->flags & BI_LAZY    ? "looks at futures"
                                                    : "is not computed ahead (random numbers, the "
                                                      "clock, waiting, ...)");
        for (int i = 0; i < n->u.call.nargs; i++)
            if (!pure_expr(c, n->u.call.args[i])) return false;
        for (int i = 0; i < n->u.call.nkw; i++)
            if (!pure_expr(c, n->u.call.kw[i].value)) return false;
        return true;
    }
    case N_NKINDS: qh_unreachable();
    case N_NAME:
    case N_SELF:
    case N_MEMBER:
    case N_FNEXPR:
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
    case N_PASS:
        return not_pure(c, "an argument at line %d is not computed ahead (effect)", n->line);
    }
    qh_unreachable();
}

/* the globals a qfn takes along: what it reads, and what the functions it
 * reads by name read, transitively */
static void takes_along(ModInfo *m, FnProto *f, Set *out)
{
    for (int k = 0; k < f->nglobal_reads; k++) {
        int g = f->global_reads[k];
        if (set_has(out, g)) continue;
        set_add(out, g);
        FnProto *h = proto_of_global(m, g);
        if (h && h != f) takes_along(m, h, out);
    }
}

/* a quantum call site: its callee is bound once and never rebound, its
 * arguments are pure, and what it takes along is not rebound by anything
 * but steps and the loop; false with c->pwhy saying why */
static bool site_ok(Ctx *c, Node *n, FnProto *f)
{
    int g = n->u.call.fn->u.var.slot;
    const char *name = f->name;
    int again = rebound_at(c->m, c->modbody, g, f);
    if (again)
        return not_pure(c,
                        "%s is bound again at line %d, so the call may not be the qfn of line %d "
                        "(rebinding)",
                        name, again, f->line);
    for (int i = 0; i < n->u.call.nargs; i++)
        if (!pure_expr(c, n->u.call.args[i])) return false;
    for (int i = 0; i < n->u.call.nkw; i++)
        if (!pure_expr(c, n->u.call.kw[i].value)) return false;
    Set t = { 0 };
    takes_along(c->m, f, &t);
    bool ok = true;
    for (int i = 0; i < t.n && ok; i++) {
        int k = 2 * t.v[i] + 1;
        if (set_has(&c->writes, k) && !set_has(&c->loopvars, k) && !set_has(&c->step_only, k)) {
            ok = false;
            not_pure(c, "%s() takes along %s, which the body rebinds (rebinding)", name,
                     c->m->gnames[t.v[i]]);
        }
    }
    free(t.v);
    return ok;
}

/* A wrapper's direct call n of qfn q: not under a condition, q bound once,
 * and nothing q takes along rebound in the body; adds its checks. */
static bool wrap_qfn_call(Ctx *c, const Node *n, FnProto *q, bool cond)
{
    const Node *fn = n->u.call.fn;
    if (cond)
        return not_pure(c, "%s() at line %d runs only sometimes (condition)", q->name, n->line);
    int again = rebound_at(c->m, c->modbody, fn->u.var.slot, q);
    if (again) return not_pure(c, "%s is bound again at line %d (rebinding)", q->name, again);
    Set t = { 0 };
    takes_along(c->m, q, &t);
    for (int i = 0; i < t.n; i++)
        if (set_has(&c->writes, 2 * t.v[i] + 1)) {
            not_pure(c, "%s() takes along %s, which the body rebinds (rebinding)", q->name,
                     c->m->gnames[t.v[i]]);
            free(t.v);
            return false;
        }
    free(t.v);
    add_check(c, fn->u.var.slot, q);
    return true;
}

/* An expression of a wrapper's body (see wrapper_ok): constants, its own
 * frame's variables, globals the loop never rebinds, operators, indexing,
 * value builtins, and direct calls of qfns bound once, not under a
 * condition (each adds its checks and counts one call). */
static bool wrap_expr(Ctx *c, const Node *n, bool cond, int *ncalls)
{
    if (!n) return true;
    switch (n->kind) {
    case N_NUM:
    case N_IMAG:
    case N_STR:
    case N_TRUE:
    case N_FALSE:
    case N_NIL:
    case N_BUILTIN:
    case N_LOCAL: return true;
    case N_GLOBAL:
        if (!set_has(&c->writes, 2 * n->u.var.slot + 1)) return true;
        return not_pure(c, "%s is rebound in the body (rebinding)", var_name(n));
    case N_UNARY:
    case N_NOT: return wrap_expr(c, n->u.bin.a, cond, ncalls);
    case N_BINARY:
        return wrap_expr(c, n->u.bin.a, cond, ncalls) && wrap_expr(c, n->u.bin.b, cond, ncalls);
    case N_AND:
    case N_OR:
        return wrap_expr(c, n->u.bin.a, cond, ncalls) && wrap_expr(c, n->u.bin.b, true, ncalls);
    case N_COND:
        return wrap_expr(c, n->u.ifs.cond, cond, ncalls) &&
               wrap_expr(c, n->u.ifs.then, true, ncalls) &&
               wrap_expr(c, n->u.ifs.els, true, ncalls);
    case N_LIST:
        for (int i = 0; i < n->u.list.n; i++)
            if (!wrap_expr(c, n->u.list.items[i], cond, ncalls)) return false;
        return true;
    case N_DICT:
        for (int i = 0; i < n->u.dict.n; i++)
            if (!wrap_expr(c, n->u.dict.keys[i], cond, ncalls) ||
                !wrap_expr(c, n->u.dict.vals[i], cond, ncalls))
                return false;
        return true;
    case N_INDEX:
        if (!wrap_expr(c, n->u.index.obj, cond, ncalls)) return false;
        for (int i = 0; i < n->u.index.nidx; i++)
            if (!wrap_expr(c, n->u.index.idx[i], cond, ncalls)) return false;
        return true;
    case N_SLICE:
        return wrap_expr(c, n->u.slice.lo, cond, ncalls) &&
               wrap_expr(c, n->u.slice.hi, cond, ncalls) &&
               wrap_expr(c, n->u.slice.step, cond, ncalls);
    case N_CALL: {
        const Node *fn = n->u.call.fn;
        FnProto *q = qfn_called(c->m, n);
        if (q) {
            if (!wrap_qfn_call(c, n, q, cond)) return false;
            (*ncalls)++;
        } else if (fn->kind != N_BUILTIN || !value_builtin(builtin_get(fn->u.var.slot)))
            return not_pure(c, "a call at line %d is not a value builtin nor a qfn (effect)",
                            n->line);
        for (int i = 0; i < n->u.call.nargs; i++)
            if (!wrap_expr(c, n->u.call.args[i], cond, ncalls)) return false;
        for (int i = 0; i < n->u.call.nkw; i++)
            if (!wrap_expr(c, n->u.call.kw[i].value, cond, ncalls)) return false;
        return true;
    }
    case N_NKINDS: qh_unreachable();
    case N_NAME:
    case N_LOCALCELL:
    case N_UPVAL:
    case N_SELF:
    case N_MEMBER:
    case N_FNEXPR:
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
    case N_PASS:
        return not_pure(c, "an expression at line %d is not computed ahead (effect)", n->line);
    }
    qh_unreachable();
}

/* A plain fn that may run ahead whole (a wrapper of qfn calls): no
 * closure's variables, a body of assignments to its own plain variables
 * and one final return, each made of wrap_expr's expressions; *ncalls: the
 * quantum calls it makes, every time. Its checks are added to c. */
static bool wrapper_ok(Ctx *c, FnProto *f, int *ncalls)
{
    *ncalls = 0;
    const Node *b = f->body;
    if (f->is_qfn || f->nupvals || !b || b->kind != N_BLOCK || !b->u.list.n)
        return not_pure(c, "%s() is not a plain function of straight-line code (not reached)",
                        f->name);
    for (int i = 0; i < b->u.list.n; i++) {
        const Node *s = b->u.list.items[i];
        bool last = i == b->u.list.n - 1;
        if (last && s->kind == N_RETURN) {
            if (!wrap_expr(c, s->u.expr.expr, false, ncalls)) return false;
        } else if (!last && s->kind == N_ASSIGN && s->u.assign.target->kind == N_LOCAL) {
            if (!wrap_expr(c, s->u.assign.value, false, ncalls)) return false;
        } else
            return not_pure(c,
                            "%s() is not straight-line assignments and a return (line %d) "
                            "(not reached)",
                            f->name, s->line);
    }
    return *ncalls > 0;
}

static void scan(Ctx *c, Node *n, bool cond);

/* a call of f, a pure function bound to a global that makes quantum calls
 * (a wrapper of qfn calls): a site of its own, run ahead whole */
static void scan_wrapper_call(Ctx *c, Node *n, FnProto *f, bool cond)
{
    Node *fn = n->u.call.fn;
    const char *name = var_name(fn);
    int first = c->nchecks, ncalls = 0, again;
    if (cond)
        refuse(c, "%s() at line %d runs only sometimes (condition)", name, n->line);
    else if ((again = rebound_at(c->m, c->modbody, fn->u.var.slot, f)) != 0)
        refuse(c, "%s is bound again at line %d (rebinding)", name, again);
    else {
        add_check(c, fn->u.var.slot, f);
        bool ok = wrapper_ok(c, f, &ncalls);
        for (int i = 0; ok && i < n->u.call.nargs; i++) ok = pure_expr(c, n->u.call.args[i]);
        for (int i = 0; ok && i < n->u.call.nkw; i++) ok = pure_expr(c, n->u.call.kw[i].value);
        if (!ok)
            refuse(c, "%s() at line %d makes quantum calls: %s", name, n->line, c->pwhy);
        else
            add_step(c, LA_SITE, NULL, n, first, ncalls);
    }
}

/* a call of a function bound to a global, not a qfn: true when scan is
 * done with it (a wrapper's site, or refused) */
static bool scan_global_call(Ctx *c, Node *n, bool cond)
{
    Node *fn = n->u.call.fn;
    FnProto *f = proto_of_global(c->m, fn->u.var.slot);
    Set seen = { 0 };
    const char *name = var_name(fn);
    if (!f)
        refuse(c, "it calls %s() at line %d, a function value (effect)", name, n->line);
    else if (!f->pure)
        refuse(c, "it calls %s() at line %d, which is not pure (effect)", name, n->line);
    else if (set_has(&c->writes, 2 * fn->u.var.slot + 1))
        refuse(c, "%s is rebound in the body (rebinding)", name);
    else if (makes_qcalls(c->m, f, &seen)) {
        scan_wrapper_call(c, n, f, cond);
        free(seen.v);
        return true;
    }
    free(seen.v);
    return c->fail;
}

/* a call: a qfn's becomes a site step, after its arguments */
static void scan_call(Ctx *c, Node *n, bool cond)
{
    FnProto *q = qfn_called(c->m, n);
    Node *fn = n->u.call.fn;
    if (!q) {
        if (fn->kind == N_GLOBAL) {
            if (scan_global_call(c, n, cond)) return;
        } else if (fn->kind != N_BUILTIN) {
            /* a function value: who knows what it calls */
            refuse(c, "it calls a function value at line %d (effect)", n->line);
            return;
        }
    }
    for (int i = 0; i < n->u.call.nargs; i++) scan(c, n->u.call.args[i], cond);
    for (int i = 0; i < n->u.call.nkw; i++) scan(c, n->u.call.kw[i].value, cond);
    if (q) {
        if (cond) {
            refuse(c,
                   "%s() at line %d runs only sometimes (under if, while, an inner for, try, "
                   "and/or or a conditional) (condition)",
                   q->name, n->line);
            return;
        }
        if (!site_ok(c, n, q)) {
            refuse(c, "%s", c->pwhy);
            return;
        }
        int first = c->nchecks;
        add_check(c, n->u.call.fn->u.var.slot, q);
        add_step(c, LA_SITE, NULL, n, first, 1);
    }
}

/* a comprehension: its first iterable runs once, the rest only sometimes */
static void scan_comp(Ctx *c, Node *n, bool cond)
{
    for (int i = 0; i < n->u.comp.nclauses; i++) {
        CompClause *cl = &n->u.comp.clauses[i];
        scan(c, cl->iter, i == 0 ? cond : true);
        for (int j = 0; j < cl->nconds; j++) scan(c, cl->conds[j], true);
    }
    scan(c, n->u.comp.key, true);
    scan(c, n->u.comp.elt, true);
}

/* Walks an expression evaluated exactly once per iteration (cond: only
 * sometimes), in evaluation order: quantum calls become site steps; every
 * other call must be a builtin or a pure function that makes no quantum
 * calls. */
static void scan(Ctx *c, Node *n, bool cond)
{
    if (!n || c->fail) return;
    switch (n->kind) {
    case N_CALL: scan_call(c, n, cond); return;
    case N_UNARY:
    case N_NOT: scan(c, n->u.bin.a, cond); return;
    case N_BINARY:
        scan(c, n->u.bin.a, cond);
        scan(c, n->u.bin.b, cond);
        return;
    case N_AND:
    case N_OR:
        scan(c, n->u.bin.a, cond);
        scan(c, n->u.bin.b, true);
        return;
    case N_COND:
        scan(c, n->u.ifs.cond, cond);
        scan(c, n->u.ifs.then, true);
        scan(c, n->u.ifs.els, true);
        return;
    case N_LIST:
        for (int i = 0; i < n->u.list.n; i++) scan(c, n->u.list.items[i], cond);
        return;
    case N_DICT:
        for (int i = 0; i < n->u.dict.n; i++) {
            scan(c, n->u.dict.keys[i], cond);
            scan(c, n->u.dict.vals[i], cond);
        }
        return;
    case N_INDEX:
        scan(c, n->u.index.obj, cond);
        for (int i = 0; i < n->u.index.nidx; i++) scan(c, n->u.index.idx[i], cond);
        return;
    case N_SLICE:
        scan(c, n->u.slice.lo, cond);
        scan(c, n->u.slice.hi, cond);
        scan(c, n->u.slice.step, cond);
        return;
    case N_MEMBER: scan(c, n->u.member.obj, cond); return;
    case N_LISTCOMP:
    case N_DICTCOMP: scan_comp(c, n, cond); return;
    /* compound statements: each part runs a number of times the analysis does not know */
    case N_IF:
        scan(c, n->u.ifs.cond, cond);
        scan(c, n->u.ifs.then, true);
        scan(c, n->u.ifs.els, true);
        return;
    case N_WHILE:
        scan(c, n->u.whiles.cond, true);
        scan(c, n->u.whiles.body, true);
        return;
    case N_FOR:
        scan(c, n->u.fors.iter, cond);
        scan(c, n->u.fors.body, true);
        return;
    case N_TRY:
        scan(c, n->u.tries.body, true);
        scan(c, n->u.tries.handler, true);
        return;
    case N_BLOCK:
        for (int i = 0; i < n->u.list.n; i++) scan(c, n->u.list.items[i], cond);
        return;
    case N_EXPRSTMT:
    case N_RETURN: scan(c, n->u.expr.expr, cond); return;
    case N_ASSIGN:
    case N_AUGASSIGN:
        scan(c, n->u.assign.value, cond);
        if (n->u.assign.target->kind == N_INDEX) scan(c, n->u.assign.target, cond);
        return;
    case N_DESTRUCT: scan(c, n->u.destruct.value, cond); return;
    case N_FNDEF:
        for (int i = 0; i < n->u.fn->nparams; i++) scan(c, n->u.fn->defaults[i], cond);
        scan(c, n->u.fn->device, cond);
        return;
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
    case N_FNEXPR:
    case N_BREAK:
    case N_CONTINUE:
    case N_IMPORT:
    case N_GLOBALDECL:
    case N_PASS: return; /* names, constants, closures (their bodies run when called) */
    }
    qh_unreachable();
}

/* does n read a plain variable the body rebinds (or a closure's)? */
static bool reads_written(Ctx *c, const Node *n)
{
    if (!n) return false;
    switch (n->kind) {
    case N_LOCAL:
    case N_GLOBAL: return set_has(&c->writes, var_key(n));
    case N_LOCALCELL:
    case N_UPVAL: return true;
    case N_UNARY:
    case N_NOT: return reads_written(c, n->u.bin.a);
    case N_BINARY:
    case N_AND:
    case N_OR: return reads_written(c, n->u.bin.a) || reads_written(c, n->u.bin.b);
    case N_COND:
        return reads_written(c, n->u.ifs.cond) || reads_written(c, n->u.ifs.then) ||
               reads_written(c, n->u.ifs.els);
    case N_LIST:
        for (int i = 0; i < n->u.list.n; i++)
            if (reads_written(c, n->u.list.items[i])) return true;
        return false;
    case N_DICT:
        for (int i = 0; i < n->u.dict.n; i++)
            if (reads_written(c, n->u.dict.keys[i]) || reads_written(c, n->u.dict.vals[i]))
                return true;
        return false;
    case N_INDEX:
        if (reads_written(c, n->u.index.obj)) return true;
        for (int i = 0; i < n->u.index.nidx; i++)
            if (reads_written(c, n->u.index.idx[i])) return true;
        return false;
    case N_SLICE:
        return reads_written(c, n->u.slice.lo) || reads_written(c, n->u.slice.hi) ||
               reads_written(c, n->u.slice.step);
    case N_CALL:
        for (int i = 0; i < n->u.call.nargs; i++)
            if (reads_written(c, n->u.call.args[i])) return true;
        for (int i = 0; i < n->u.call.nkw; i++)
            if (reads_written(c, n->u.call.kw[i].value)) return true;
        return false;
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
    case N_MEMBER:
    case N_FNEXPR:
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
    case N_PASS: return false;
    }
    qh_unreachable();
}

/* the body's last statement, an inner loop with a plan over a collection
 * the same every iteration, after steps: a step of its own (LA_LOOP) */
static bool inner_loop_step(Ctx *c, Node *s, bool last)
{
    if (!last || s->kind != N_FOR || !s->u.fors.plan || c->nsites) return false;
    Node *it = s->u.fors.iter;
    if (!pure_expr(c, it) || reads_written(c, it)) {
        refuse(c, "the inner loop at line %d iterates over what the body changes (rebinding)",
               s->line);
        return true;
    }
    add_step(c, LA_LOOP, NULL, s, c->nchecks, 0);
    c->nested = true;
    return true;
}

/* One pass over the body's statements with the current step_only; false
 * if a statement assumed to be a step is not one (then its target leaves
 * step_only and the caller tries again). */
static bool make_steps(Ctx *c, Node *body)
{
    c->nsteps = c->nsites = 0;
    c->nchecks = 0;
    c->nested = false;
    c->defined.n = 0;
    c->fail = false;
    c->why[0] = 0;
    for (int i = 0; i < body->u.list.n && !c->fail; i++) {
        Node *s = body->u.list.items[i];
        int tk = s->kind == N_ASSIGN ? var_key(s->u.assign.target) : -1;
        if (tk >= 0 && set_has(&c->step_only, tk)) {
            Node *v = s->u.assign.value;
            FnProto *q = qfn_called(c->m, v);
            if (q && site_ok(c, v, q)) {
                int first = c->nchecks;
                add_check(c, v->u.call.fn->u.var.slot, q);
                add_step(c, LA_SITE, s->u.assign.target, v, first, 1);
            } else if (!q && pure_expr(c, v))
                add_step(c, LA_ASSIGN, s->u.assign.target, v, c->nchecks, 0);
            else {
                set_del(&c->step_only, tk);
                return false;
            }
            set_add(&c->defined, tk);
            continue;
        }
        if (inner_loop_step(c, s, i == body->u.list.n - 1)) continue;
        scan(c, s, false);
    }
    return true;
}

/* the qfn call sites anywhere in n, as "c() (line 3), d() (line 5)" */
static void list_sites(ModInfo *m, const Node *n, char *buf, size_t cap);
static void list_sites_v(ModInfo *m, Node *const *v, int k, char *buf, size_t cap)
{
    for (int i = 0; i < k; i++) list_sites(m, v[i], buf, cap);
}
static void list_sites(ModInfo *m, const Node *n, char *buf, size_t cap)
{
    if (!n) return;
    switch (n->kind) {
    case N_CALL: {
        FnProto *q = qfn_called(m, n);
        if (!q && n->u.call.fn->kind == N_GLOBAL) { /* a function making quantum calls */
            FnProto *f = proto_of_global(m, n->u.call.fn->u.var.slot);
            Set seen = { 0 };
            if (f && makes_qcalls(m, f, &seen)) q = f;
            free(seen.v);
        }
        size_t len = strlen(buf);
        if (q && len + 1 < cap)
            snprintf(buf + len, cap - len, "%s%s() (line %d)", len ? ", " : "", q->name, n->line);
        list_sites(m, n->u.call.fn, buf, cap);
        list_sites_v(m, n->u.call.args, n->u.call.nargs, buf, cap);
        for (int i = 0; i < n->u.call.nkw; i++) list_sites(m, n->u.call.kw[i].value, buf, cap);
        return;
    }
    case N_UNARY:
    case N_NOT: list_sites(m, n->u.bin.a, buf, cap); return;
    case N_BINARY:
    case N_AND:
    case N_OR:
        list_sites(m, n->u.bin.a, buf, cap);
        list_sites(m, n->u.bin.b, buf, cap);
        return;
    case N_COND:
    case N_IF:
        list_sites(m, n->u.ifs.cond, buf, cap);
        list_sites(m, n->u.ifs.then, buf, cap);
        list_sites(m, n->u.ifs.els, buf, cap);
        return;
    case N_LIST:
    case N_BLOCK: list_sites_v(m, n->u.list.items, n->u.list.n, buf, cap); return;
    case N_DICT:
        list_sites_v(m, n->u.dict.keys, n->u.dict.n, buf, cap);
        list_sites_v(m, n->u.dict.vals, n->u.dict.n, buf, cap);
        return;
    case N_INDEX:
        list_sites(m, n->u.index.obj, buf, cap);
        list_sites_v(m, n->u.index.idx, n->u.index.nidx, buf, cap);
        return;
    case N_MEMBER: list_sites(m, n->u.member.obj, buf, cap); return;
    case N_LISTCOMP:
    case N_DICTCOMP:
        for (int i = 0; i < n->u.comp.nclauses; i++) {
            list_sites(m, n->u.comp.clauses[i].iter, buf, cap);
            list_sites_v(m, n->u.comp.clauses[i].conds, n->u.comp.clauses[i].nconds, buf, cap);
        }
        list_sites(m, n->u.comp.key, buf, cap);
        list_sites(m, n->u.comp.elt, buf, cap);
        return;
    case N_WHILE:
        list_sites(m, n->u.whiles.cond, buf, cap);
        list_sites(m, n->u.whiles.body, buf, cap);
        return;
    case N_FOR:
        list_sites(m, n->u.fors.iter, buf, cap);
        list_sites(m, n->u.fors.body, buf, cap);
        return;
    case N_TRY:
        list_sites(m, n->u.tries.body, buf, cap);
        list_sites(m, n->u.tries.handler, buf, cap);
        return;
    case N_EXPRSTMT:
    case N_RETURN: list_sites(m, n->u.expr.expr, buf, cap); return;
    case N_ASSIGN:
    case N_AUGASSIGN:
        list_sites(m, n->u.assign.value, buf, cap);
        list_sites(m, n->u.assign.target, buf, cap);
        return;
    case N_DESTRUCT: list_sites(m, n->u.destruct.value, buf, cap); return;
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
    case N_BREAK:
    case N_CONTINUE:
    case N_FNDEF:
    case N_IMPORT:
    case N_GLOBALDECL:
    case N_PASS: return;
    }
    qh_unreachable();
}

static LaPlan *plan_loop(ModInfo *m, const Node *modbody, Node *loop)
{
    Node *body = loop->u.fors.body;
    Ctx c;
    memset(&c, 0, sizeof c);
    c.m = m;
    c.modbody = modbody;
    LaPlan *plan = NULL;
    int early = leaves_early(body, 0);
    if (early) {
        refuse(&c, "an iteration may end early (break, continue or return at line %d) (condition)",
               early);
        goto done;
    }
    /* the loop's variables: plain ones only (a cell may be changed by a closure) */
    int nv = loop->u.fors.nvars;
    for (int i = 0; i < nv; i++) {
        int k = var_key(nv == 1 ? loop->u.fors.var : loop->u.fors.vars[i]);
        if (k < 0) {
            refuse(&c, "the loop's variable is a closure's, which a call may change (rebinding)");
            goto done;
        }
        set_add(&c.loopvars, k);
    }
    collect_writes(&c, body);
    for (int i = 0; i < c.loopvars.n; i++)
        if (set_has(&c.writes, c.loopvars.v[i])) { /* the body rebinds them */
            refuse(&c, "the body rebinds the loop's variable (rebinding)");
            goto done;
        }
    /* candidates for steps: variables rebound only by top-level plain assignments */
    {
        Set top = { 0 }, other = { 0 };
        for (int i = 0; i < body->u.list.n; i++) {
            Node *s = body->u.list.items[i];
            int k = s->kind == N_ASSIGN ? var_key(s->u.assign.target) : -1;
            if (k >= 0)
                set_add(&top, k);
            else {
                Ctx tmp;
                memset(&tmp, 0, sizeof tmp);
                collect_writes(&tmp, s);
                for (int j = 0; j < tmp.writes.n; j++) set_add(&other, tmp.writes.v[j]);
                free(tmp.writes.v);
            }
        }
        for (int i = 0; i < top.n; i++)
            if (!set_has(&other, top.v[i]) && !set_has(&c.loopvars, top.v[i]))
                set_add(&c.step_only, top.v[i]);
        free(top.v);
        free(other.v);
    }
    while (!make_steps(&c, body)) {}
    if (c.fail || (!c.nsites && !c.nested)) goto done;
    int last = c.nsteps;
    while (last > 0 && c.steps[last - 1].kind == LA_ASSIGN) last--;
    plan = arena_alloc(m->arena, sizeof *plan);
    plan->steps = arena_alloc(m->arena, (size_t)last * sizeof(LaStep));
    if (last) memcpy(plan->steps, c.steps, (size_t)last * sizeof(LaStep));
    LaCheck *checks = arena_alloc(m->arena, (size_t)(c.nchecks + 1) * sizeof(LaCheck));
    if (c.nchecks) memcpy(checks, c.checks, (size_t)c.nchecks * sizeof(LaCheck));
    for (int i = 0; i < last; i++) /* offsets become pointers */
        plan->steps[i].checks = checks + (intptr_t)plan->steps[i].checks;
    plan->nsteps = last;
    plan->nsites = c.nsites;
    plan->nested = c.nested;
done:
    if (!plan && c.why[0]) {
        char sites[400] = "";
        list_sites(m, body, sites, sizeof sites);
        if (sites[0]) {
            char text[640];
            int k = snprintf(text, sizeof text, "%s refused: %s", sites, c.why);
            loop->u.fors.la_why =
                arena_strndup(m->arena, text, k < (int)sizeof text ? (size_t)k : sizeof text - 1);
        }
    }
    ctx_free(&c);
    return plan;
}

/* ---------------------------------------------------------------- straight-line code */

/* the plain variable an assignment target or a container argument is rooted in (l in
 * l[0][k], d.x), else -1 */
static int root_key(const Node *n)
{
    while (n && (n->kind == N_INDEX || n->kind == N_MEMBER || n->kind == N_SLICE))
        n = n->kind == N_INDEX ? n->u.index.obj : n->kind == N_MEMBER ? n->u.member.obj : NULL;
    return n ? var_key(n) : -1;
}

static int sl_count(Ctx *c, const Node *n, bool cond, Set *w);
static int sl_sum(Ctx *c, Node *const *v, int k, bool cond, Set *w)
{
    int t = 0;
    for (int i = 0; i < k && t >= 0; i++) {
        int x = sl_count(c, v[i], cond, w);
        t = x < 0 ? -1 : t + x;
    }
    return t;
}
static int sl_add(int a, int b) { return a < 0 || b < 0 ? -1 : a + b; }

/* the quantum calls of n's call, each time it runs (-1: unknown, c->pwhy says why); the
 * containers it may change in place go to w */
static int sl_call(Ctx *c, const Node *n, bool cond, Set *w)
{
    const Node *fn = n->u.call.fn;
    int own = 0, args = sl_sum(c, n->u.call.args, n->u.call.nargs, cond, w);
    for (int i = 0; i < n->u.call.nkw && args >= 0; i++)
        args = sl_add(args, sl_count(c, n->u.call.kw[i].value, cond, w));
    if (args < 0) return -1;
    FnProto *q = qfn_called(c->m, n);
    if (q) {
        if (cond)
            return not_pure(c, "%s() at line %d runs only sometimes (condition)", q->name, n->line),
                   -1;
        int again = rebound_at(c->m, c->modbody, fn->u.var.slot, q);
        if (again)
            return not_pure(c, "%s is bound again at line %d (rebinding)", q->name, again), -1;
        own = 1;
    } else if (fn->kind == N_BUILTIN) {
        const BuiltinDef *b = builtin_get(fn->u.var.slot);
        if (b->flags & (BI_CALLS | BI_QUANTUM))
            return not_pure(c, "%s() at line %d may call user code (effect)", b->name, n->line), -1;
        if (strcmp(b->name, "error") == 0)
            return not_pure(c, "error() at line %d may end the program (condition)", n->line), -1;
        if ((b->flags & BI_MUTATES) && n->u.call.nargs) {
            int k = root_key(n->u.call.args[0]);
            if (k < 0)
                return not_pure(c, "%s() at line %d changes a container (effect)", b->name,
                                n->line),
                       -1;
            set_add(w, k);
        }
    } else if (fn->kind == N_GLOBAL) {
        FnProto *f = proto_of_global(c->m, fn->u.var.slot);
        Set seen = { 0 };
        bool qc = f && makes_qcalls(c->m, f, &seen);
        free(seen.v);
        int nc = 0;
        if (qc && !cond && f->pure && !rebound_at(c->m, c->modbody, fn->u.var.slot, f) &&
            wrapper_ok(c, f, &nc))
            return args + nc; /* a wrapper: its calls, every time */
        if (!f || !f->pure || qc || rebound_at(c->m, c->modbody, fn->u.var.slot, f))
            return not_pure(c,
                            "it calls %s() at line %d, which may make quantum calls or change "
                            "what they read (effect)",
                            var_name(fn), n->line),
                   -1;
        for (int i = 0; i < n->u.call.nargs; i++) { /* a pure function may change its argument */
            int k = root_key(n->u.call.args[i]);
            if (k >= 0) set_add(w, k);
        }
    } else
        return not_pure(c, "it calls a function value at line %d (effect)", n->line), -1;
    return args + own;
}

static int sl_count(Ctx *c, const Node *n, bool cond, Set *w)
{
    if (!n) return 0;
    switch ((NodeKind)n->kind) {
    case N_CALL: return sl_call(c, n, cond, w);
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
    case N_FNEXPR:
    case N_BREAK:
    case N_CONTINUE:
    case N_GLOBALDECL:
    case N_PASS: return 0;
    case N_UNARY:
    case N_NOT: return sl_count(c, n->u.bin.a, cond, w);
    case N_BINARY:
        return sl_add(sl_count(c, n->u.bin.a, cond, w), sl_count(c, n->u.bin.b, cond, w));
    case N_AND:
    case N_OR: return sl_add(sl_count(c, n->u.bin.a, cond, w), sl_count(c, n->u.bin.b, true, w));
    case N_COND:
    case N_IF:
        return sl_add(
            sl_count(c, n->u.ifs.cond, cond, w),
            sl_add(sl_count(c, n->u.ifs.then, true, w), sl_count(c, n->u.ifs.els, true, w)));
    case N_LIST:
    case N_BLOCK: return sl_sum(c, n->u.list.items, n->u.list.n, cond, w);
    case N_DICT:
        return sl_add(sl_sum(c, n->u.dict.keys, n->u.dict.n, cond, w),
                      sl_sum(c, n->u.dict.vals, n->u.dict.n, cond, w));
    case N_INDEX:
        return sl_add(sl_count(c, n->u.index.obj, cond, w),
                      sl_sum(c, n->u.index.idx, n->u.index.nidx, cond, w));
    case N_SLICE:
        return sl_add(
            sl_count(c, n->u.slice.lo, cond, w),
            sl_add(sl_count(c, n->u.slice.hi, cond, w), sl_count(c, n->u.slice.step, cond, w)));
    case N_MEMBER: return sl_count(c, n->u.member.obj, cond, w);
    case N_LISTCOMP:
    case N_DICTCOMP: {
        int t = 0;
        for (int i = 0; i < n->u.comp.nclauses && t >= 0; i++) {
            CompClause *cl = &n->u.comp.clauses[i];
            t = sl_add(t, sl_count(c, cl->iter, i == 0 ? cond : true, w));
            t = sl_add(t, sl_sum(c, cl->conds, cl->nconds, true, w));
        }
        return sl_add(
            t, sl_add(sl_count(c, n->u.comp.key, true, w), sl_count(c, n->u.comp.elt, true, w)));
    }
    case N_WHILE:
    case N_FOR: {
        int t = n->kind == N_FOR ? sl_count(c, n->u.fors.iter, cond, w)
                                 : sl_count(c, n->u.whiles.cond, true, w);
        int b = sl_count(c, n->kind == N_FOR ? n->u.fors.body : n->u.whiles.body, true, w);
        if (t >= 0 && b != 0)
            return not_pure(c,
                            "the loop at line %d makes quantum calls a number of times not known "
                            "ahead (condition)",
                            n->line),
                   -1;
        return t;
    }
    case N_TRY:
        return not_pure(c, "a try at line %d may skip what follows (condition)", n->line), -1;
    case N_IMPORT: return not_pure(c, "an import at line %d runs a module (effect)", n->line), -1;
    case N_EXPRSTMT:
    case N_RETURN: return sl_count(c, n->u.expr.expr, cond, w);
    case N_ASSIGN:
    case N_AUGASSIGN: {
        const Node *t = n->u.assign.target;
        if (t->kind == N_INDEX || t->kind == N_MEMBER) {
            int k = root_key(t);
            if (k < 0)
                return not_pure(c, "line %d changes a container in place (effect)", n->line), -1;
            set_add(w, k);
        }
        return sl_add(sl_count(c, n->u.assign.value, cond, w),
                      t->kind == N_INDEX || t->kind == N_MEMBER ? sl_count(c, t, cond, w) : 0);
    }
    case N_DESTRUCT: return sl_count(c, n->u.destruct.value, cond, w);
    case N_FNDEF: {
        int t = 0;
        for (int i = 0; i < n->u.fn->nparams && t >= 0; i++)
            t = sl_add(t, sl_count(c, n->u.fn->defaults[i], cond, w));
        return sl_add(t, sl_count(c, n->u.fn->device, cond, w));
    }
    case N_NKINDS: break;
    }
    qh_unreachable();
}


/* scans statement s for its calls with c->writes as what may change before they
 * run; true if every call it makes is a site */
static bool sl_scan(Ctx *c, Node *s, int ncalls)
{
    c->nsteps = c->nsites = c->nchecks = 0;
    c->nested = false;
    c->fail = false;
    c->why[0] = 0;
    scan(c, s, false);
    if (!c->fail && c->nsites != ncalls)
        snprintf(c->why, sizeof c->why, "not every call is planned (condition)");
    return !c->fail && c->nsites == ncalls;
}

/* st's plan: c's steps and checks, copied into the arena */
static void sl_keep(ModInfo *m, LaStraight *st, const Ctx *c)
{
    LaStep *steps = arena_alloc(m->arena, (size_t)(c->nsteps + 1) * sizeof(LaStep));
    LaCheck *checks = arena_alloc(m->arena, (size_t)(c->nchecks + 1) * sizeof(LaCheck));
    if (c->nsteps) memcpy(steps, c->steps, (size_t)c->nsteps * sizeof(LaStep));
    if (c->nchecks) memcpy(checks, c->checks, (size_t)c->nchecks * sizeof(LaCheck));
    for (int k = 0; k < c->nsteps; k++) steps[k].checks = checks + (intptr_t)steps[k].checks;
    st->plan.steps = steps;
    st->plan.nsteps = c->nsteps;
    st->plan.nsites = c->nsites;
}

/* Statement j's window (laplan.h's LaStraight): back from j - 1 while the
 * statements make a known number of calls and change nothing its calls read */
/* --deps: why statement s's calls may not start while the statement at
 * line `line` (its writes w) waits: a global it rebinds or changes that
 * s reads, or that a qfn s calls takes along */
static void sl_rebinds(ModInfo *m, const Node *s, const Set *w, int line, char *why, size_t cap)
{
    const DepInfo *d = s->dep;
    for (int k = 0; k < d->nreads + d->npasses; k++) {
        int g = k < d->nreads ? d->reads[k] : d->passes[k - d->nreads];
        if (set_has(w, 2 * g + 1)) {
            snprintf(why, cap, "line %d rebinds or changes %s, which the call reads (rebinding)",
                     line, m->gnames[g]);
            return;
        }
    }
    for (int k = 0; k < d->nqcalls; k++) {
        FnProto *f = proto_of_global(m, d->qcalls[k]);
        Set t = { 0 };
        if (f) takes_along(m, f, &t);
        for (int x = 0; x < t.n; x++)
            if (set_has(w, 2 * t.v[x] + 1)) {
                snprintf(why, cap,
                         "line %d rebinds or changes %s, which %s() takes along (rebinding)", line,
                         m->gnames[t.v[x]], f->name);
                free(t.v);
                return;
            }
        free(t.v);
    }
    snprintf(
        why, cap,
        "line %d rebinds or changes what its arguments read or the qfn takes along (rebinding)",
        line);
}

static void sl_window(ModInfo *m, Node *body, LaStraight **ls, Set *writes, int j)
{
    LaStraight *st = ls[j];
    Node *s = body->u.list.items[j];
    Ctx c;
    memset(&c, 0, sizeof c);
    c.m = m;
    c.modbody = body;
    char why[240] = "";
    if (!sl_scan(&c, s, st->ncalls)) {
        snprintf(why, sizeof why, "%s", c.why);
    } else {
        int i = j - 1;
        for (; i >= 0 && i >= j - LA_STRAIGHT_REACH; i--) {
            const Node *si = body->u.list.items[i];
            if (!ls[i] || ls[i]->ncalls < 0) {
                snprintf(why, sizeof why, "line %d may make other quantum calls or skip it: %s",
                         si->line, ls[i] && ls[i]->why ? ls[i]->why : "not analysed");
                break;
            }
            for (int k = 0; k < writes[i].n; k++) set_add(&c.writes, writes[i].v[k]);
            if (!sl_scan(&c, s, st->ncalls)) {
                sl_rebinds(m, s, &writes[i], si->line, why, sizeof why);
                break;
            }
        }
        st->from = i + 1;
        st->first_line = body->u.list.items[st->from < j ? st->from : j - 1]->line;
        st->last_line = body->u.list.items[j - 1]->line;
        if (st->from < j) { /* the widest window's plan (the same steps as any narrower one's) */
            c.writes.n = 0;
            for (int k = st->from; k < j; k++)
                for (int x = 0; x < writes[k].n; x++) set_add(&c.writes, writes[k].v[x]);
            if (sl_scan(&c, s, st->ncalls))
                sl_keep(m, st, &c);
            else
                st->from = j;
        }
    }
    if (why[0]) st->why = arena_strndup(m->arena, why, strlen(why));
    ctx_free(&c);
}

/* The straight-line facts of every statement of a top-level block (laplan.h's LaStraight). */
static void plan_straight(ModInfo *m, Node *body)
{
    int n = body->u.list.n;
    Set *writes = xcalloc((size_t)n + 1, sizeof(Set)); /* per statement: rebinds and changes */
    LaStraight **ls = xcalloc((size_t)n + 1, sizeof *ls);
    for (int i = 0; i < n; i++) {
        Node *s = body->u.list.items[i];
        if (!s->dep) continue;
        Ctx c;
        memset(&c, 0, sizeof c);
        c.m = m;
        c.modbody = body;
        LaStraight *st = arena_alloc(m->arena, sizeof *st);
        memset(st, 0, sizeof *st);
        st->ncalls = sl_count(&c, s, false, &writes[i]);
        if (st->ncalls < 0) st->why = arena_strndup(m->arena, c.pwhy, strlen(c.pwhy));
        collect_writes(&c, s);
        for (int k = 0; k < c.writes.n; k++) set_add(&writes[i], c.writes.v[k]);
        ctx_free(&c); /* a wrapper's checks too (wrapper_ok) */
        st->from = i;
        ls[i] = st;
        s->dep->straight = st;
    }
    int firstq = -1; /* the first statement making quantum calls: none waits before it */
    for (int j = 0; j < n; j++)
        if (ls[j] && ls[j]->ncalls > 0) {
            ls[j]->first = firstq < 0;
            if (firstq < 0) firstq = j;
            if (j) sl_window(m, body, ls, writes, j);
            if (ls[j]->from < firstq && firstq < j) /* --deps names the lines that may wait */
                ls[j]->first_line = body->u.list.items[firstq]->line;
        }
    for (int i = 0; i < n; i++) free(writes[i].v);
    free(writes);
    free(ls);
}

/* every `for` in n, inner ones included */
static void visit(ModInfo *m, const Node *modbody, Node *n)
{
    if (!n) return;
    switch (n->kind) {
    case N_BLOCK:
        for (int i = 0; i < n->u.list.n; i++) visit(m, modbody, n->u.list.items[i]);
        break;
    case N_IF:
        visit(m, modbody, n->u.ifs.then);
        visit(m, modbody, n->u.ifs.els);
        break;
    case N_WHILE: visit(m, modbody, n->u.whiles.body); break;
    case N_TRY:
        visit(m, modbody, n->u.tries.body);
        visit(m, modbody, n->u.tries.handler);
        break;
    case N_FOR: /* inner loops first: an outer plan may take one as a step */
        visit(m, modbody, n->u.fors.body);
        n->u.fors.la_why = NULL;
        n->u.fors.plan = plan_loop(m, modbody, n);
        break;
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
    case N_BREAK:
    case N_CONTINUE:
    case N_RETURN:
    case N_FNDEF:
    case N_IMPORT:
    case N_GLOBALDECL:
    case N_PASS: break;
    }
}

void laplan_analyse(ModInfo *m, Node *body, int first_proto)
{
    visit(m, body, body);
    if (body == m->body) plan_straight(m, body); /* a module's block (not a REPL entry's) */
    for (int i = first_proto; i < m->nprotos; i++)
        if (!m->protos[i]->is_qfn) visit(m, body, m->protos[i]->body);
}

/* ---------------------------------------------------------------- --deps */

static void print_plans(const Node *n, const char *at, FILE *out)
{
    if (!n) return;
    switch (n->kind) {
    case N_BLOCK:
        for (int i = 0; i < n->u.list.n; i++) print_plans(n->u.list.items[i], at, out);
        break;
    case N_IF:
        print_plans(n->u.ifs.then, at, out);
        print_plans(n->u.ifs.els, at, out);
        break;
    case N_WHILE: print_plans(n->u.whiles.body, at, out); break;
    case N_TRY:
        print_plans(n->u.tries.body, at, out);
        print_plans(n->u.tries.handler, at, out);
        break;
    case N_FNDEF: print_plans(n->u.fn->body, at, out); break;
    case N_FOR: {
        const LaPlan *p = n->u.fors.plan;
        if (p) {
            fprintf(out, "%s: the loop at line %d may start ", at, n->line);
            int k = 0;
            for (int i = 0; i < p->nsteps; i++) {
                const Node *c = p->steps[i].expr;
                if (p->steps[i].kind == LA_LOOP)
                    fprintf(out, "%sthe calls of the loop at line %d", k++ ? ", " : "", c->line);
                if (p->steps[i].kind != LA_SITE) continue;
                fprintf(out, "%s%s() (line %d)", k++ ? ", " : "", c->u.call.fn->u.var.name,
                        c->line);
            }
            fprintf(out, " of its next iterations early, while it waits (lookahead)\n");
        } else if (n->u.fors.la_why) {
            fprintf(out, "%s: the loop at line %d starts no call early: %s\n", at, n->line,
                    n->u.fors.la_why);
        }
        print_plans(n->u.fors.body, at, out);
        break;
    }
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
    case N_BREAK:
    case N_CONTINUE:
    case N_RETURN:
    case N_IMPORT:
    case N_GLOBALDECL:
    case N_PASS: break;
    }
}

/* straight-line code: what a top-level statement's calls may do (LaStraight) */
static void print_straight(const Node *stmt, const char *at, FILE *out)
{
    const LaStraight *st = stmt->dep ? stmt->dep->straight : NULL;
    if (!st || st->ncalls == 0) return;
    if (st->ncalls < 0) { /* a loop explains itself (print_plans) */
        if (stmt->dep->nqcalls && stmt->kind != N_FOR && st->why)
            fprintf(out, "%s: straight-line code starts no call of line %d early: %s\n", at,
                    stmt->line, st->why);
        return;
    }
    if (st->first) return;
    if (st->plan.nsteps) {
        fprintf(out, "%s: straight-line code may start ", at);
        for (int i = 0, k = 0; i < st->plan.nsteps; i++) {
            const Node *c = st->plan.steps[i].expr;
            if (st->plan.steps[i].kind != LA_SITE) continue;
            int same = 1; /* the same callee on the same line: counted, not repeated */
            while (i + same < st->plan.nsteps && st->plan.steps[i + same].kind == LA_SITE &&
                   st->plan.steps[i + same].expr->line == c->line &&
                   strcmp(st->plan.steps[i + same].expr->u.call.fn->u.var.name,
                          c->u.call.fn->u.var.name) == 0)
                same++;
            fprintf(out, "%s%s() (line %d", k++ ? ", " : "", c->u.call.fn->u.var.name, c->line);
            if (same > 1) fprintf(out, ", %d calls", same);
            fputc(')', out);
            i += same - 1;
        }
        if (st->first_line == st->last_line)
            fprintf(out, " early while line %d waits (lookahead)", st->first_line);
        else
            fprintf(out, " early while lines %d-%d wait (lookahead)", st->first_line,
                    st->last_line);
        if (st->why) fprintf(out, "; not before: %s", st->why);
        fputc('\n', out);
    } else if (st->why) {
        fprintf(out, "%s: straight-line code starts no call of line %d early: %s\n", at, stmt->line,
                st->why);
    }
}

void laplan_print(const Node *stmt, const char *at, FILE *out) { print_plans(stmt, at, out); }

void laplan_print_straight(const Node *stmt, const char *at, FILE *out)
{
    print_straight(stmt, at, out);
}
