/* laplan.c — lookahead plans for `for` loops (laplan.h): the proof that an
 * iteration's quantum calls can be started before the iteration runs.
 * Knows the AST and the builtin table. */
#include "laplan.h"
#include "builtins.h"

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
        s->v = realloc(s->v, (size_t)s->cap * sizeof(int));
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

/* ---------------------------------------------------------------- the body */

typedef struct Ctx {
    ModInfo *m;
    Set writes; /* plain variables the body rebinds anywhere */
    Set loopvars;
    Set step_only; /* rebound only by steps (top-level pure assignments and sites) */
    Set defined;   /* assigned by a step met so far */
    LaStep *steps;
    int nsteps, cap;
    int nsites;
    bool fail;
} Ctx;

static void add_step(Ctx *c, LaStepKind k, Node *target, Node *expr)
{
    if (c->nsteps == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 8;
        c->steps = realloc(c->steps, (size_t)c->cap * sizeof(LaStep));
    }
    c->steps[c->nsteps++] = (LaStep){ k, target, expr };
    if (k == LA_SITE) c->nsites++;
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
    default: break;
    }
}

/* a break or continue of this loop, or a return, anywhere in n */
static bool leaves_early(const Node *n, int inner)
{
    if (!n) return false;
    switch (n->kind) {
    case N_BREAK:
    case N_CONTINUE: return inner == 0;
    case N_RETURN: return true;
    case N_BLOCK:
        for (int i = 0; i < n->u.list.n; i++)
            if (leaves_early(n->u.list.items[i], inner)) return true;
        return false;
    case N_IF: return leaves_early(n->u.ifs.then, inner) || leaves_early(n->u.ifs.els, inner);
    case N_WHILE: return leaves_early(n->u.whiles.body, inner + 1);
    case N_FOR: return leaves_early(n->u.fors.body, inner + 1);
    case N_TRY:
        return leaves_early(n->u.tries.body, inner) || leaves_early(n->u.tries.handler, inner);
    default: return false;
    }
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
    if (b->flags & (BI_IMPURE | BI_MUTATES | BI_QUANTUM | BI_LAZY)) return false;
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
    case N_UPVAL: return readable(c, n);
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
        if (n->u.call.fn->kind != N_BUILTIN ||
            !value_builtin(builtin_get(n->u.call.fn->u.var.slot)))
            return false;
        for (int i = 0; i < n->u.call.nargs; i++)
            if (!pure_expr(c, n->u.call.args[i])) return false;
        for (int i = 0; i < n->u.call.nkw; i++)
            if (!pure_expr(c, n->u.call.kw[i].value)) return false;
        return true;
    }
    default: return false;
    }
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

/* a quantum call site: its callee stays bound, its arguments are pure, and
 * what it takes along is not rebound by anything but steps and the loop */
static bool site_ok(Ctx *c, Node *n, FnProto *f)
{
    int g = n->u.call.fn->u.var.slot;
    if (set_has(&c->writes, 2 * g + 1)) return false;
    for (int i = 0; i < n->u.call.nargs; i++)
        if (!pure_expr(c, n->u.call.args[i])) return false;
    for (int i = 0; i < n->u.call.nkw; i++)
        if (!pure_expr(c, n->u.call.kw[i].value)) return false;
    Set t = { 0 };
    takes_along(c->m, f, &t);
    bool ok = true;
    for (int i = 0; i < t.n && ok; i++) {
        int k = 2 * t.v[i] + 1;
        if (set_has(&c->writes, k) && !set_has(&c->loopvars, k) && !set_has(&c->step_only, k))
            ok = false;
    }
    free(t.v);
    return ok;
}

/* Walks an expression evaluated exactly once per iteration (cond: only
 * sometimes), in evaluation order: quantum calls become site steps; every
 * other call must be a builtin or a pure function that makes no quantum
 * calls. */
static void scan(Ctx *c, Node *n, bool cond)
{
    if (!n || c->fail) return;
    switch (n->kind) {
    case N_CALL: {
        FnProto *q = qfn_called(c->m, n);
        Node *fn = n->u.call.fn;
        if (!q) {
            if (fn->kind == N_GLOBAL) {
                FnProto *f = proto_of_global(c->m, fn->u.var.slot);
                Set seen = { 0 };
                bool bad = !f || !f->pure || makes_qcalls(c->m, f, &seen) ||
                           set_has(&c->writes, 2 * fn->u.var.slot + 1);
                free(seen.v);
                if (bad) {
                    c->fail = true;
                    return;
                }
            } else if (fn->kind != N_BUILTIN) {
                c->fail = true; /* a function value: who knows what it calls */
                return;
            }
        }
        for (int i = 0; i < n->u.call.nargs; i++) scan(c, n->u.call.args[i], cond);
        for (int i = 0; i < n->u.call.nkw; i++) scan(c, n->u.call.kw[i].value, cond);
        if (q) {
            if (cond || !site_ok(c, n, q)) {
                c->fail = true;
                return;
            }
            add_step(c, LA_SITE, NULL, n);
        }
        return;
    }
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
    case N_DICTCOMP:
        for (int i = 0; i < n->u.comp.nclauses; i++) {
            CompClause *cl = &n->u.comp.clauses[i];
            scan(c, cl->iter, i == 0 ? cond : true);
            for (int j = 0; j < cl->nconds; j++) scan(c, cl->conds[j], true);
        }
        scan(c, n->u.comp.key, true);
        scan(c, n->u.comp.elt, true);
        return;
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
    default: return; /* names, constants, closures (their bodies run when called) */
    }
}

/* One pass over the body's statements with the current step_only; false
 * if a statement assumed to be a step is not one (then its target leaves
 * step_only and the caller tries again). */
static bool make_steps(Ctx *c, Node *body)
{
    c->nsteps = c->nsites = 0;
    c->defined.n = 0;
    c->fail = false;
    for (int i = 0; i < body->u.list.n && !c->fail; i++) {
        Node *s = body->u.list.items[i];
        int tk = s->kind == N_ASSIGN ? var_key(s->u.assign.target) : -1;
        if (tk >= 0 && set_has(&c->step_only, tk)) {
            Node *v = s->u.assign.value;
            FnProto *q = qfn_called(c->m, v);
            if (q && site_ok(c, v, q))
                add_step(c, LA_SITE, s->u.assign.target, v);
            else if (!q && pure_expr(c, v))
                add_step(c, LA_ASSIGN, s->u.assign.target, v);
            else {
                set_del(&c->step_only, tk);
                return false;
            }
            set_add(&c->defined, tk);
            continue;
        }
        scan(c, s, false);
    }
    return true;
}

static LaPlan *plan_loop(ModInfo *m, Node *loop)
{
    Node *body = loop->u.fors.body;
    if (leaves_early(body, 0)) return NULL;
    Ctx c;
    memset(&c, 0, sizeof c);
    c.m = m;
    LaPlan *plan = NULL;
    /* the loop's variables: plain ones only (a cell may be changed by a closure) */
    int nv = loop->u.fors.nvars;
    for (int i = 0; i < nv; i++) {
        int k = var_key(nv == 1 ? loop->u.fors.var : loop->u.fors.vars[i]);
        if (k < 0) goto done;
        set_add(&c.loopvars, k);
    }
    collect_writes(&c, body);
    for (int i = 0; i < c.loopvars.n; i++)
        if (set_has(&c.writes, c.loopvars.v[i])) goto done; /* the body rebinds them */
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
    if (c.fail || !c.nsites) goto done;
    int last = c.nsteps;
    while (last > 0 && c.steps[last - 1].kind != LA_SITE) last--;
    plan = arena_alloc(m->arena, sizeof *plan);
    plan->steps = arena_alloc(m->arena, (size_t)last * sizeof(LaStep));
    memcpy(plan->steps, c.steps, (size_t)last * sizeof(LaStep));
    plan->nsteps = last;
    plan->nsites = c.nsites;
done:
    free(c.writes.v);
    free(c.loopvars.v);
    free(c.step_only.v);
    free(c.defined.v);
    free(c.steps);
    return plan;
}

/* every `for` in n, inner ones included */
static void visit(ModInfo *m, Node *n)
{
    if (!n) return;
    switch (n->kind) {
    case N_BLOCK:
        for (int i = 0; i < n->u.list.n; i++) visit(m, n->u.list.items[i]);
        break;
    case N_IF:
        visit(m, n->u.ifs.then);
        visit(m, n->u.ifs.els);
        break;
    case N_WHILE: visit(m, n->u.whiles.body); break;
    case N_TRY:
        visit(m, n->u.tries.body);
        visit(m, n->u.tries.handler);
        break;
    case N_FOR:
        n->u.fors.plan = plan_loop(m, n);
        visit(m, n->u.fors.body);
        break;
    default: break;
    }
}

void laplan_analyse(ModInfo *m, Node *body, int first_proto)
{
    visit(m, body);
    for (int i = first_proto; i < m->nprotos; i++)
        if (!m->protos[i]->is_qfn) visit(m, m->protos[i]->body);
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
                if (p->steps[i].kind != LA_SITE) continue;
                const Node *c = p->steps[i].expr;
                fprintf(out, "%s%s() (line %d)", k++ ? ", " : "", c->u.call.fn->u.var.name,
                        c->line);
            }
            fprintf(out, " of its next iterations early, while it waits (lookahead)\n");
        }
        print_plans(n->u.fors.body, at, out);
        break;
    }
    default: break;
    }
}

void laplan_print(const Node *stmt, const char *at, FILE *out) { print_plans(stmt, at, out); }
