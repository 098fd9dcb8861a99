/* resolve.c — names to slots (locals, cells, upvalues, globals, builtins).
 * Runs once per source after parsing; rewrites N_NAME nodes in place and
 * fills each FnProto's frame layout. Knows the AST, not evaluation. */
#include "resolve.h"
#include "qh_assert.h"
#include "diag.h"

#include <stdlib.h>
#include <string.h>

/* A comprehension variable in scope: its name and its slot. */
typedef struct CompBind {
    const char *name;
    int slot;
} CompBind;

typedef struct Scope {
    struct Scope *parent; /* enclosing function scope, NULL at module level */
    FnProto *fn;          /* NULL: the module level */
    const char **locals;
    int nlocals, caplocals;
    bool *is_cell;
    bool *hidden; /* a comprehension's variable: never found by name */
    int *nassign; /* how many places assign each local */
    CompBind *binds;
    int nbinds, capbinds; /* comprehension variables in scope, innermost last */
    const char **globals;
    int nglobals, capglobals; /* `global` declarations */
    Node **refs;
    int nrefs, caprefs; /* local references, patched to cells */
    UpvalDesc *up;
    const char **upnames;
    int nup, capup;
} Scope;

typedef struct Resolver {
    ModInfo *m;
    BuiltinLookup builtins;
    FILE *diag;
    bool ok;
    bool warn;
    Node **unbound;
    int nunbound, capunbound; /* module-level reads to check */
} Resolver;

static void *grow(void *p, int *cap, int need, size_t elt)
{
    if (need <= *cap) return p;
    int c = *cap ? *cap : 8;
    while (c < need) c *= 2;
    p = xrealloc(p, (size_t)c * elt);
    *cap = c;
    return p;
}

static int global_slot(Resolver *r, const char *name, bool assign)
{
    ModInfo *m = r->m;
    Value v;
    if (!m->gindex) m->gindex = dict_new();
    ObjStr *key = str_from(name);
    if (dict_get(m->gindex, v_obj(&key->h), &v)) {
        int slot = (int)v.n;
        qh_assert(slot >= 0 && slot < m->nglobals && strcmp(m->gnames[slot], name) == 0);
        if (assign) m->gassigned[slot] = true;
        free(key);
        return slot;
    }
    int slot = m->nglobals;
    int cap = m->capglobals;
    m->gnames = grow(m->gnames, &cap, slot + 1, sizeof(char *));
    cap = m->capglobals;
    m->gkeys = grow(m->gkeys, &cap, slot + 1, sizeof(ObjStr *));
    cap = m->capglobals;
    m->gassigned = grow(m->gassigned, &cap, slot + 1, sizeof(bool));
    cap = m->capglobals;
    m->gbuiltin = grow(m->gbuiltin, &cap, slot + 1, sizeof(int));
    m->capglobals = cap;
    /* the key lives as long as the module: make it immortal in the arena */
    ObjStr *k = arena_alloc(m->arena, sizeof(ObjStr) + key->len + 1);
    memcpy(k, key, sizeof(ObjStr) + key->len + 1);
    k->h.rc = OBJ_IMMORTAL;
    free(key);
    m->gnames[slot] = k->s;
    m->gkeys[slot] = k;
    m->gassigned[slot] = assign;
    m->gbuiltin[slot] = r->builtins(name);
    m->nglobals++;
    dict_set(m->gindex, v_obj(&k->h), v_num(slot));
    qh_assert(m->nglobals <= m->capglobals);
    return slot;
}

int resolve_global_slot(const ModInfo *m, const char *name)
{
    if (!m->gindex) return -1;
    ObjStr *key = str_from(name);
    Value v;
    bool found = dict_get(m->gindex, v_obj(&key->h), &v);
    free(key);
    return found ? (int)v.n : -1;
}

static int find_local(Scope *s, const char *name)
{
    for (int i = 0; i < s->nlocals; i++)
        if (!s->hidden[i] && strcmp(s->locals[i], name) == 0) return i;
    return -1;
}
/* the slot of a comprehension variable in scope, or -1 */
static int find_comp(Scope *s, const char *name)
{
    for (int i = s->nbinds - 1; i >= 0; i--)
        if (strcmp(s->binds[i].name, name) == 0) return s->binds[i].slot;
    return -1;
}
static bool declared_global(Scope *s, const char *name)
{
    for (int i = 0; i < s->nglobals; i++)
        if (strcmp(s->globals[i], name) == 0) return true;
    return false;
}
/* a new slot of the frame (a comprehension's variable when hidden) */
static int new_local(Scope *s, const char *name, bool hidden)
{
    int cap = s->caplocals;
    s->locals = grow(s->locals, &cap, s->nlocals + 1, sizeof(char *));
    cap = s->caplocals;
    s->is_cell = grow(s->is_cell, &cap, s->nlocals + 1, sizeof(bool));
    cap = s->caplocals;
    s->hidden = grow(s->hidden, &cap, s->nlocals + 1, sizeof(bool));
    cap = s->caplocals;
    s->nassign = grow(s->nassign, &cap, s->nlocals + 1, sizeof(int));
    s->caplocals = cap;
    s->locals[s->nlocals] = name;
    s->is_cell[s->nlocals] = false;
    s->hidden[s->nlocals] = hidden;
    s->nassign[s->nlocals] = 0;
    qh_assert(s->nlocals < s->caplocals);
    return s->nlocals++;
}
static int add_local(Scope *s, const char *name)
{
    int i = find_local(s, name);
    if (i >= 0) return i;
    return new_local(s, name, false);
}
static void free_scope(Scope *s)
{
    free(s->locals);
    free(s->is_cell);
    free(s->hidden);
    free(s->nassign);
    free(s->globals);
    free(s->refs);
    free(s->up);
    free(s->upnames);
    free(s->binds);
}

static void error_at(Resolver *r, const Node *n, const char *msg)
{
    diag_print(r->diag, mod_msg_src(r->m), n->line, n->col, "error", msg);
    r->ok = false;
}

/* Pass 1 over a function body: the names it assigns (its locals) and its
 * `global` declarations. Nested function bodies are not entered. */
static void collect(Resolver *r, Scope *s, Node *n);
static void collect_target(Resolver *r, Scope *s, Node *t)
{
    (void)r;
    if (t->kind == N_NAME && !declared_global(s, t->u.var.name)) {
        int i = add_local(s, t->u.var.name);
        s->nassign[i]++;
    }
}
static void collect_list(Resolver *r, Scope *s, Node **v, int n)
{
    for (int i = 0; i < n; i++) collect(r, s, v[i]);
}
static void collect(Resolver *r, Scope *s, Node *n)
{
    if (!n) return;
    switch ((NodeKind)n->kind) {
    case N_BLOCK: collect_list(r, s, n->u.list.items, n->u.list.n); break;
    case N_ASSIGN:
    case N_AUGASSIGN: collect_target(r, s, n->u.assign.target); break;
    case N_DESTRUCT:
        for (int i = 0; i < n->u.destruct.n; i++) collect_target(r, s, n->u.destruct.targets[i]);
        break;
    case N_IF:
        collect(r, s, n->u.ifs.then);
        collect(r, s, n->u.ifs.els);
        break;
    case N_WHILE: collect(r, s, n->u.whiles.body); break;
    case N_FOR:
        for (int i = 0; i < n->u.fors.nvars; i++) collect_target(r, s, n->u.fors.vars[i]);
        collect(r, s, n->u.fors.body);
        break;
    case N_TRY:
        collect(r, s, n->u.tries.body);
        if (n->u.tries.var) collect_target(r, s, n->u.tries.var);
        collect(r, s, n->u.tries.handler);
        break;
    case N_FNDEF: {
        Node fake = { .kind = N_NAME };
        fake.u.var.name = n->u.fn->name;
        collect_target(r, s, &fake);
        break;
    }
    case N_IMPORT: collect_target(r, s, n->u.import.var); break;
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
    case N_PASS: break;
    }
}
static void collect_globals(Resolver *r, Scope *s, Node *n)
{
    if (!n) return;
    switch ((NodeKind)n->kind) {
    case N_BLOCK:
        for (int i = 0; i < n->u.list.n; i++) collect_globals(r, s, n->u.list.items[i]);
        break;
    case N_IF:
        collect_globals(r, s, n->u.ifs.then);
        collect_globals(r, s, n->u.ifs.els);
        break;
    case N_WHILE: collect_globals(r, s, n->u.whiles.body); break;
    case N_FOR: collect_globals(r, s, n->u.fors.body); break;
    case N_TRY:
        collect_globals(r, s, n->u.tries.body);
        collect_globals(r, s, n->u.tries.handler);
        break;
    case N_GLOBALDECL:
        for (int i = 0; i < n->u.global.n; i++) {
            const char *nm = n->u.global.names[i];
            if (find_local(s, nm) >= 0 && s->fn && !declared_global(s, nm)) {
                bool param = false;
                for (int k = 0; k < s->fn->nparams; k++)
                    if (strcmp(s->fn->params[k], nm) == 0) param = true;
                if (param) {
                    error_at(r, n, "a parameter cannot be declared global");
                    continue;
                }
            }
            int cap = s->capglobals;
            s->globals = grow(s->globals, &cap, s->nglobals + 1, sizeof(char *));
            s->capglobals = cap;
            s->globals[s->nglobals++] = nm;
        }
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
    case N_PASS: break;
    }
}

/* Finds name as an upvalue of scope s (captured from an enclosing function,
 * or from a comprehension around s, at any level). */
static int find_upval(Resolver *r, Scope *s, const char *name)
{
    for (int i = 0; i < s->nup; i++)
        if (strcmp(s->upnames[i], name) == 0) return i;
    Scope *p = s->parent;
    if (!p) return -1;
    UpvalDesc d;
    int li = find_comp(p, name);
    if (li < 0) {
        if (!p->fn) return -1; /* the module level holds globals, not locals */
        if (declared_global(p, name)) return -1;
        li = find_local(p, name);
    }
    if (li >= 0) {
        p->is_cell[li] = true;
        d.from_local = true;
        d.index = li;
    } else {
        int ui = find_upval(r, p, name);
        if (ui < 0) return -1;
        d.from_local = false;
        d.index = ui;
    }
    int cap = s->capup;
    s->up = grow(s->up, &cap, s->nup + 1, sizeof(UpvalDesc));
    cap = s->capup;
    s->upnames = grow(s->upnames, &cap, s->nup + 1, sizeof(char *));
    s->capup = cap;
    s->up[s->nup] = d;
    s->upnames[s->nup] = name;
    /* a cell of the enclosing frame, or an upvalue the enclosing function has already */
    qh_assert(d.from_local ? d.index < p->nlocals && p->is_cell[d.index] : d.index < p->nup);
    return s->nup++;
}

static void resolve_node(Resolver *r, Scope *s, Node *n);
static void resolve_list(Resolver *r, Scope *s, Node **v, int n)
{
    for (int i = 0; i < n; i++) resolve_node(r, s, v[i]);
}

/* name -> local | cell | upvalue | global | builtin */
static void local_ref(Scope *s, Node *n, int slot)
{
    qh_assert(slot >= 0 && slot < s->nlocals); /* a slot of this frame */
    n->kind = N_LOCAL;
    n->u.var.slot = slot;
    int cap = s->caprefs;
    s->refs = grow(s->refs, &cap, s->nrefs + 1, sizeof(Node *));
    s->caprefs = cap;
    s->refs[s->nrefs++] = n;
}

static void resolve_name(Resolver *r, Scope *s, Node *n, bool assign)
{
    const char *name = n->u.var.name;
    int ci = find_comp(s, name);
    if (ci >= 0) {
        local_ref(s, n, ci);
        return;
    }
    if (s->fn && !declared_global(s, name)) {
        int li = find_local(s, name);
        if (li >= 0) {
            local_ref(s, n, li);
            return;
        }
        /* a local function calling itself: the running closure, not a
         * cell holding it (which would make a reference cycle) */
        Scope *ps = s->parent;
        if (!assign && ps && ps->fn && strcmp(name, s->fn->name) == 0 &&
            !declared_global(ps, name)) {
            int pl = find_local(ps, name);
            if (pl >= 0 && ps->nassign[pl] == 1) {
                n->kind = N_SELF;
                n->u.var.slot = 0;
                return;
            }
        }
        int ui = find_upval(r, s, name);
        if (ui >= 0) {
            qh_assert(ui < s->nup && strcmp(s->upnames[ui], name) == 0);
            n->kind = N_UPVAL;
            n->u.var.slot = ui;
            return;
        }
    }
    int slot = -1;
    if (!assign && r->m->gindex) slot = resolve_global_slot(r->m, name);
    if (slot < 0) {
        int bi = r->builtins(name);
        if (!assign && bi >= 0) {
            n->kind = N_BUILTIN;
            n->u.var.slot = bi;
            return;
        }
        slot = global_slot(r, name, assign);
    } else if (assign) {
        r->m->gassigned[slot] = true;
    }
    n->kind = N_GLOBAL;
    n->u.var.slot = slot;
    if (!assign) {
        int cap = r->capunbound;
        r->unbound = grow(r->unbound, &cap, r->nunbound + 1, sizeof(Node *));
        r->capunbound = cap;
        r->unbound[r->nunbound++] = n;
    }
}

static void resolve_fn(Resolver *r, Scope *outer, FnProto *f)
{
    Scope s;
    memset(&s, 0, sizeof s);
    s.parent = outer;
    s.fn = f;
    for (int i = 0; i < f->nparams; i++) {
        int k = add_local(&s, f->params[i]);
        s.nassign[k]++;
    }
    collect_globals(r, &s, f->body);
    collect(r, &s, f->body);
    /* defaults are evaluated in the enclosing scope, at definition */
    for (int i = 0; i < f->nparams; i++)
        if (f->defaults[i]) resolve_node(r, outer, f->defaults[i]);
    if (f->device) resolve_node(r, outer, f->device);
    resolve_node(r, &s, f->body);
    for (int i = 0; i < s.nrefs; i++)
        if (s.is_cell[s.refs[i]->u.var.slot]) s.refs[i]->kind = N_LOCALCELL;
    f->nlocals = s.nlocals;
    f->local_is_cell = xmalloc((size_t)(s.nlocals + 1) * sizeof(bool));
    f->local_names = xmalloc((size_t)(s.nlocals + 1) * sizeof(char *));
    f->has_cells = false;
    for (int i = 0; i < s.nlocals; i++) {
        f->local_is_cell[i] = s.is_cell[i];
        f->local_names[i] = s.locals[i];
        if (s.is_cell[i]) f->has_cells = true;
    }
    f->nupvals = s.nup;
    f->upvals = xmalloc((size_t)(s.nup + 1) * sizeof(UpvalDesc));
    if (s.nup) memcpy(f->upvals, s.up, (size_t)s.nup * sizeof(UpvalDesc));
    free_scope(&s);
}

/* A comprehension: its variables are its own (lang/statements.md#comprehensions).
 * They get slots of their own in the enclosing function's frame; at the
 * module level, an outermost comprehension gets a frame of its own (the
 * node records its size) and its nested comprehensions share it. The
 * first iterable is evaluated outside, the rest inside. */
static void resolve_comp(Resolver *r, Scope *s, Node *n)
{
    CompClause *cl = n->u.comp.clauses;
    int nc = n->u.comp.nclauses;
    bool own_frame = !s->fn && s->nbinds == 0;
    resolve_node(r, s, cl[0].iter);
    int saved = s->nbinds;
    for (int i = 0; i < nc; i++) {
        for (int k = 0; k < cl[i].nvars; k++) {
            const char *nm = cl[i].vars[k]->u.var.name;
            bool dup = false;
            for (int j = saved; j < s->nbinds; j++)
                if (strcmp(s->binds[j].name, nm) == 0) dup = true;
            if (dup) continue;
            int cap = s->capbinds;
            s->binds = grow(s->binds, &cap, s->nbinds + 1, sizeof(CompBind));
            s->capbinds = cap;
            s->binds[s->nbinds].name = nm;
            s->binds[s->nbinds].slot = new_local(s, nm, true);
            s->nbinds++;
        }
    }
    for (int i = 0; i < nc; i++) {
        if (i > 0) resolve_node(r, s, cl[i].iter);
        for (int k = 0; k < cl[i].nvars; k++) resolve_name(r, s, cl[i].vars[k], true);
        resolve_list(r, s, cl[i].conds, cl[i].nconds);
    }
    resolve_node(r, s, n->u.comp.key);
    resolve_node(r, s, n->u.comp.elt);
    s->nbinds = saved;
    if (own_frame) {
        /* variables captured by closures made inside live in cells */
        for (int i = 0; i < s->nrefs; i++)
            if (s->is_cell[s->refs[i]->u.var.slot]) s->refs[i]->kind = N_LOCALCELL;
        n->u.comp.frame = s->nlocals;
        s->nlocals = 0;
        s->nrefs = 0;
    }
}

static void resolve_target(Resolver *r, Scope *s, Node *t)
{
    if (t->kind == N_NAME)
        resolve_name(r, s, t, true);
    else
        resolve_node(r, s, t);
}

/* x op= v: the target is bound, and a global one is also read */
static void resolve_augassign(Resolver *r, Scope *s, Node *n)
{
    resolve_node(r, s, n->u.assign.value);
    if (n->u.assign.target->kind != N_NAME) {
        resolve_node(r, s, n->u.assign.target);
        return;
    }
    resolve_name(r, s, n->u.assign.target, true);
    if (n->u.assign.target->kind == N_GLOBAL) {
        int cap = r->capunbound;
        r->unbound = grow(r->unbound, &cap, r->nunbound + 1, sizeof(Node *));
        r->capunbound = cap;
        r->unbound[r->nunbound++] = n->u.assign.target;
    }
}

/* fn name(...) {...}: the name is bound in the enclosing scope; the body
 * sees itself through it */
static void resolve_fndef(Resolver *r, Scope *s, Node *n)
{
    FnProto *f = n->u.fn;
    Node *nm = arena_alloc(r->m->arena, sizeof(Node));
    nm->kind = N_NAME;
    nm->line = n->line;
    nm->col = n->col;
    nm->u.var.name = f->name;
    resolve_target(r, s, nm);
    resolve_fn(r, s, f);
    f->binding = nm;
}

static void resolve_node(Resolver *r, Scope *s, Node *n)
{
    if (!n) return;
    switch ((NodeKind)n->kind) {
    case N_NAME: resolve_name(r, s, n, false); break;
    case N_LIST:
    case N_BLOCK: resolve_list(r, s, n->u.list.items, n->u.list.n); break;
    case N_DICT:
        resolve_list(r, s, n->u.dict.keys, n->u.dict.n);
        resolve_list(r, s, n->u.dict.vals, n->u.dict.n);
        break;
    case N_UNARY:
    case N_NOT: resolve_node(r, s, n->u.bin.a); break;
    case N_BINARY:
    case N_AND:
    case N_OR:
        resolve_node(r, s, n->u.bin.a);
        resolve_node(r, s, n->u.bin.b);
        break;
    case N_CALL:
        resolve_node(r, s, n->u.call.fn);
        resolve_list(r, s, n->u.call.args, n->u.call.nargs);
        for (int i = 0; i < n->u.call.nkw; i++) resolve_node(r, s, n->u.call.kw[i].value);
        break;
    case N_INDEX:
        resolve_node(r, s, n->u.index.obj);
        resolve_list(r, s, n->u.index.idx, n->u.index.nidx);
        break;
    case N_SLICE:
        resolve_node(r, s, n->u.slice.lo);
        resolve_node(r, s, n->u.slice.hi);
        resolve_node(r, s, n->u.slice.step);
        break;
    case N_MEMBER: resolve_node(r, s, n->u.member.obj); break;
    case N_FNEXPR: resolve_fn(r, s, n->u.fn); break;
    case N_LISTCOMP:
    case N_DICTCOMP: resolve_comp(r, s, n); break;
    case N_EXPRSTMT:
    case N_RETURN: resolve_node(r, s, n->u.expr.expr); break;
    case N_ASSIGN:
        resolve_node(r, s, n->u.assign.value);
        resolve_target(r, s, n->u.assign.target);
        break;
    case N_AUGASSIGN: resolve_augassign(r, s, n); break;
    case N_DESTRUCT:
        resolve_node(r, s, n->u.destruct.value);
        for (int i = 0; i < n->u.destruct.n; i++) resolve_target(r, s, n->u.destruct.targets[i]);
        break;
    case N_IF:
    case N_COND:
        resolve_node(r, s, n->u.ifs.cond);
        resolve_node(r, s, n->u.ifs.then);
        resolve_node(r, s, n->u.ifs.els);
        break;
    case N_WHILE:
        resolve_node(r, s, n->u.whiles.cond);
        resolve_node(r, s, n->u.whiles.body);
        break;
    case N_FOR:
        resolve_node(r, s, n->u.fors.iter);
        for (int i = 0; i < n->u.fors.nvars; i++) resolve_target(r, s, n->u.fors.vars[i]);
        resolve_node(r, s, n->u.fors.body);
        break;
    case N_TRY:
        resolve_node(r, s, n->u.tries.body);
        if (n->u.tries.var) resolve_target(r, s, n->u.tries.var);
        resolve_node(r, s, n->u.tries.handler);
        break;
    case N_FNDEF: resolve_fndef(r, s, n); break;
    case N_IMPORT: resolve_target(r, s, n->u.import.var); break;
    case N_GLOBALDECL:
        if (!s->fn) error_at(r, n, "'global' outside a function");
        break;
    case N_NKINDS: qh_unreachable();
    case N_NUM:
    case N_IMAG:
    case N_STR:
    case N_TRUE:
    case N_FALSE:
    case N_NIL:
    case N_LOCAL:
    case N_LOCALCELL:
    case N_UPVAL:
    case N_GLOBAL:
    case N_BUILTIN:
    case N_SELF:
    case N_BREAK:
    case N_CONTINUE:
    case N_PASS: break;
    }
}

bool resolve_module(ModInfo *m, Node *body, BuiltinLookup builtins, FILE *diag, bool warn_unbound)
{
    Resolver r;
    memset(&r, 0, sizeof r);
    r.m = m;
    r.builtins = builtins;
    r.diag = diag;
    r.ok = true;
    Scope top;
    memset(&top, 0, sizeof top);
    /* first every top-level binding, so reads anywhere see the global */
    for (int i = 0; i < body->u.list.n; i++) {
        Scope tmp;
        memset(&tmp, 0, sizeof tmp);
        Node *st = body->u.list.items[i];
        collect(&r, &tmp, st);
        for (int k = 0; k < tmp.nlocals; k++) global_slot(&r, tmp.locals[k], true);
        free_scope(&tmp);
    }
    /* names a function declares global are globals everywhere (so a builtin
     * of the same name is shadowed in every function, as in Python) */
    for (int i = 0; i < m->nprotos; i++) {
        Scope tmp;
        memset(&tmp, 0, sizeof tmp);
        tmp.fn = m->protos[i];
        collect_globals(&r, &tmp, m->protos[i]->body);
        for (int k = 0; k < tmp.nglobals; k++) global_slot(&r, tmp.globals[k], true);
        free_scope(&tmp);
    }
    resolve_node(&r, &top, body);
    free_scope(&top);
    if (warn_unbound && r.ok) {
        bool *warned = xcalloc((size_t)m->nglobals + 1, sizeof(bool));
        for (int i = 0; i < r.nunbound; i++) {
            Node *n = r.unbound[i];
            int g = n->u.var.slot;
            if (!m->gassigned[g] && m->gbuiltin[g] < 0 && !warned[g]) {
                char msg[300];
                snprintf(msg, sizeof msg, "name '%s' is never bound in this file", n->u.var.name);
                diag_print(diag, mod_msg_src(m), n->line, n->col, "warning", msg);
                warned[g] = true;
            }
        }
        free(warned);
    }
    free(r.unbound);
    return r.ok;
}

int resolve_declare(ModInfo *m, const char *name, BuiltinLookup builtins)
{
    Resolver r;
    memset(&r, 0, sizeof r);
    r.m = m;
    r.builtins = builtins;
    return global_slot(&r, name, true);
}

/* ---- builtins hidden by globals ---- */

typedef struct HideSite {
    const Source *src;
    int line, col;
} HideSite;
struct HideMemo {
    int n;          /* slots covered */
    HideSite *bind; /* first binding that is not a function (src NULL: none) */
    HideSite *call; /* first call that reaches the global */
    bool *warned;
};

HideMemo *resolve_hide_new(void) { return xcalloc(1, sizeof(HideMemo)); }

void resolve_hide_free(HideMemo *h)
{
    if (!h) return;
    free(h->bind);
    free(h->call);
    free(h->warned);
    free(h);
}

static void hide_grow(HideMemo *h, int n)
{
    if (n <= h->n) return;
    h->bind = xrealloc(h->bind, (size_t)n * sizeof(HideSite));
    h->call = xrealloc(h->call, (size_t)n * sizeof(HideSite));
    h->warned = xrealloc(h->warned, (size_t)n * sizeof(bool));
    for (int i = h->n; i < n; i++) {
        h->bind[i] = (HideSite){ NULL, 0, 0 };
        h->call[i] = (HideSite){ NULL, 0, 0 };
        h->warned[i] = false;
    }
    h->n = n;
}

typedef struct HideWalk {
    ModInfo *m;
    HideMemo *h;
    BuiltinLookup builtins;
    FILE *diag;
} HideWalk;

static void hide_note(HideSite *site, const HideWalk *w, const Node *n)
{
    qh_assert(site);
    if (!site->src) *site = (HideSite){ mod_msg_src(w->m), n->line, n->col };
}

/* a binding of a global: `callable` when it binds a function made right there */
static void hide_bind(HideWalk *w, const Node *t, bool callable)
{
    if (t->kind != N_GLOBAL || callable) return;
    int g = t->u.var.slot;
    if (g < w->h->n && w->m->gbuiltin[g] >= 0) hide_note(&w->h->bind[g], w, t);
}

static void hide_walk(HideWalk *w, const Node *n);
static void hide_list(HideWalk *w, Node *const *v, int k)
{
    for (int i = 0; i < k; i++) hide_walk(w, v[i]);
}
/* Locals named like a builtin, inside one function body (nested function
 * bodies are checked on their own): bound by something other than a
 * function, and called there. */
typedef struct LocalHide {
    const FnProto *f;
    HideSite *bind, *call;
} LocalHide;
static void local_walk(const HideWalk *w, LocalHide *lh, const Node *n);
static void local_list(const HideWalk *w, LocalHide *lh, Node *const *v, int k)
{
    for (int i = 0; i < k; i++) local_walk(w, lh, v[i]);
}
static bool is_local(const Node *t) { return t->kind == N_LOCAL || t->kind == N_LOCALCELL; }
static void local_bind(const HideWalk *w, LocalHide *lh, const Node *t, bool callable)
{
    if (!is_local(t) || callable) return;
    HideSite *b = &lh->bind[t->u.var.slot];
    if (!b->src) *b = (HideSite){ mod_msg_src(w->m), t->line, t->col };
}
/* A call: of a local, noted (the first one) */
static void local_call(const HideWalk *w, LocalHide *lh, const Node *n)
{
    const Node *fn = n->u.call.fn;
    if (is_local(fn)) {
        qh_assert(fn->u.var.slot >= 0 && fn->u.var.slot < lh->f->nlocals);
        HideSite *c = &lh->call[fn->u.var.slot];
        if (!c->src) *c = (HideSite){ mod_msg_src(w->m), fn->line, fn->col };
    } else {
        local_walk(w, lh, fn);
    }
    local_list(w, lh, n->u.call.args, n->u.call.nargs);
    for (int i = 0; i < n->u.call.nkw; i++) local_walk(w, lh, n->u.call.kw[i].value);
}

/* A comprehension inside a function: its variables are the function's
 * locals (slots of its frame), bound by the comprehension; its parts are
 * walked for calls. */
static void local_comp(const HideWalk *w, LocalHide *lh, const Node *n)
{
    const CompClause *cl = n->u.comp.clauses;
    qh_assert(n->u.comp.nclauses >= 1 && n->u.comp.frame == 0);
    for (int i = 0; i < n->u.comp.nclauses; i++) {
        local_walk(w, lh, cl[i].iter);
        for (int k = 0; k < cl[i].nvars; k++) local_bind(w, lh, cl[i].vars[k], false);
        local_list(w, lh, cl[i].conds, cl[i].nconds);
    }
    local_walk(w, lh, n->u.comp.key);
    local_walk(w, lh, n->u.comp.elt);
}
static void local_walk(const HideWalk *w, LocalHide *lh, const Node *n)
{
    if (!n) return;
    switch ((NodeKind)n->kind) {
    case N_LIST:
    case N_BLOCK: local_list(w, lh, n->u.list.items, n->u.list.n); break;
    case N_DICT:
        local_list(w, lh, n->u.dict.keys, n->u.dict.n);
        local_list(w, lh, n->u.dict.vals, n->u.dict.n);
        break;
    case N_UNARY:
    case N_NOT: local_walk(w, lh, n->u.bin.a); break;
    case N_BINARY:
    case N_AND:
    case N_OR:
        local_walk(w, lh, n->u.bin.a);
        local_walk(w, lh, n->u.bin.b);
        break;
    case N_CALL: local_call(w, lh, n); break;
    case N_INDEX:
        local_walk(w, lh, n->u.index.obj);
        local_list(w, lh, n->u.index.idx, n->u.index.nidx);
        break;
    case N_SLICE:
        local_walk(w, lh, n->u.slice.lo);
        local_walk(w, lh, n->u.slice.hi);
        local_walk(w, lh, n->u.slice.step);
        break;
    case N_MEMBER: local_walk(w, lh, n->u.member.obj); break;
    case N_EXPRSTMT:
    case N_RETURN: local_walk(w, lh, n->u.expr.expr); break;
    case N_ASSIGN:
        local_walk(w, lh, n->u.assign.value);
        local_bind(w, lh, n->u.assign.target, n->u.assign.value->kind == N_FNEXPR);
        if (!is_local(n->u.assign.target)) local_walk(w, lh, n->u.assign.target);
        break;
    case N_AUGASSIGN:
        local_walk(w, lh, n->u.assign.value);
        local_bind(w, lh, n->u.assign.target, false);
        break;
    case N_DESTRUCT:
        local_walk(w, lh, n->u.destruct.value);
        for (int i = 0; i < n->u.destruct.n; i++)
            local_bind(w, lh, n->u.destruct.targets[i], false);
        break;
    case N_IF:
    case N_COND:
        local_walk(w, lh, n->u.ifs.cond);
        local_walk(w, lh, n->u.ifs.then);
        local_walk(w, lh, n->u.ifs.els);
        break;
    case N_WHILE:
        local_walk(w, lh, n->u.whiles.cond);
        local_walk(w, lh, n->u.whiles.body);
        break;
    case N_FOR:
        local_walk(w, lh, n->u.fors.iter);
        for (int i = 0; i < n->u.fors.nvars; i++) local_bind(w, lh, n->u.fors.vars[i], false);
        local_walk(w, lh, n->u.fors.body);
        break;
    case N_TRY:
        local_walk(w, lh, n->u.tries.body);
        if (n->u.tries.var) local_bind(w, lh, n->u.tries.var, false);
        local_walk(w, lh, n->u.tries.handler);
        break;
    case N_IMPORT: local_bind(w, lh, n->u.import.var, false); break;
    case N_LISTCOMP:
    case N_DICTCOMP: local_comp(w, lh, n); break;
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
    case N_FNDEF:
    case N_GLOBALDECL:
    case N_PASS: break; /* nested functions: checked on their own */
    }
}

static void hide_fn(HideWalk *w, const FnProto *f)
{
    for (int i = 0; i < f->nparams; i++) hide_walk(w, f->defaults[i]);
    hide_walk(w, f->device);
    hide_walk(w, f->body);
    if (!w->diag || f->nlocals == 0) return;
    LocalHide lh = { f, xcalloc((size_t)f->nlocals, sizeof(HideSite)),
                     xcalloc((size_t)f->nlocals, sizeof(HideSite)) };
    local_walk(w, &lh, f->body);
    for (int i = 0; i < f->nlocals; i++) {
        const char *name = f->local_names[i];
        if (!lh.bind[i].src || !lh.call[i].src || w->builtins(name) < 0) continue;
        char where[300], msg[700];
        diag_where(where, sizeof where, lh.call[i].src, lh.call[i].line);
        snprintf(msg, sizeof msg, "'%s' hides the builtin %s(), called at %s", name, name, where);
        diag_print(w->diag, lh.bind[i].src, lh.bind[i].line, lh.bind[i].col, "warning", msg);
    }
    free(lh.bind);
    free(lh.call);
}

/* A call: of a global bound to a builtin's name, noted */
static void hide_call(HideWalk *w, const Node *n)
{
    const Node *fn = n->u.call.fn;
    if (fn->kind == N_GLOBAL) {
        int g = fn->u.var.slot;
        qh_assert(g >= 0 && g < w->m->nglobals);
        if (g < w->h->n && w->m->gbuiltin[g] >= 0) hide_note(&w->h->call[g], w, fn);
    } else {
        hide_walk(w, fn);
    }
    hide_list(w, n->u.call.args, n->u.call.nargs);
    for (int i = 0; i < n->u.call.nkw; i++) hide_walk(w, n->u.call.kw[i].value);
}

/* A comprehension: its parts are walked for calls (its variables are
 * locals, of its own frame at the top level: never a global binding). */
static void hide_comp(HideWalk *w, const Node *n)
{
    const CompClause *cl = n->u.comp.clauses;
    qh_assert(n->u.comp.nclauses >= 1);
    for (int i = 0; i < n->u.comp.nclauses; i++) {
        hide_walk(w, cl[i].iter);
        hide_list(w, cl[i].conds, cl[i].nconds);
    }
    hide_walk(w, n->u.comp.key);
    hide_walk(w, n->u.comp.elt);
}
static void hide_walk(HideWalk *w, const Node *n)
{
    if (!n) return;
    switch ((NodeKind)n->kind) {
    case N_LIST:
    case N_BLOCK: hide_list(w, n->u.list.items, n->u.list.n); break;
    case N_DICT:
        hide_list(w, n->u.dict.keys, n->u.dict.n);
        hide_list(w, n->u.dict.vals, n->u.dict.n);
        break;
    case N_UNARY:
    case N_NOT: hide_walk(w, n->u.bin.a); break;
    case N_BINARY:
    case N_AND:
    case N_OR:
        hide_walk(w, n->u.bin.a);
        hide_walk(w, n->u.bin.b);
        break;
    case N_CALL: hide_call(w, n); break;
    case N_INDEX:
        hide_walk(w, n->u.index.obj);
        hide_list(w, n->u.index.idx, n->u.index.nidx);
        break;
    case N_SLICE:
        hide_walk(w, n->u.slice.lo);
        hide_walk(w, n->u.slice.hi);
        hide_walk(w, n->u.slice.step);
        break;
    case N_MEMBER: hide_walk(w, n->u.member.obj); break;
    case N_FNEXPR: hide_fn(w, n->u.fn); break;
    case N_EXPRSTMT:
    case N_RETURN: hide_walk(w, n->u.expr.expr); break;
    case N_ASSIGN:
    case N_AUGASSIGN: /* x = fn ... binds a function: meant */
        hide_walk(w, n->u.assign.value);
        hide_walk(w, n->u.assign.target);
        hide_bind(w, n->u.assign.target,
                  n->kind == N_ASSIGN && n->u.assign.value->kind == N_FNEXPR);
        break;
    case N_DESTRUCT:
        hide_walk(w, n->u.destruct.value);
        for (int i = 0; i < n->u.destruct.n; i++) {
            hide_walk(w, n->u.destruct.targets[i]);
            hide_bind(w, n->u.destruct.targets[i], false);
        }
        break;
    case N_IF:
    case N_COND:
        hide_walk(w, n->u.ifs.cond);
        hide_walk(w, n->u.ifs.then);
        hide_walk(w, n->u.ifs.els);
        break;
    case N_WHILE:
        hide_walk(w, n->u.whiles.cond);
        hide_walk(w, n->u.whiles.body);
        break;
    case N_FOR:
        hide_walk(w, n->u.fors.iter);
        for (int i = 0; i < n->u.fors.nvars; i++) hide_bind(w, n->u.fors.vars[i], false);
        hide_walk(w, n->u.fors.body);
        break;
    case N_TRY:
        hide_walk(w, n->u.tries.body);
        if (n->u.tries.var) hide_bind(w, n->u.tries.var, false);
        hide_walk(w, n->u.tries.handler);
        break;
    case N_FNDEF: hide_fn(w, n->u.fn); break; /* binds a function: meant */
    case N_IMPORT: hide_bind(w, n->u.import.var, false); break;
    case N_LISTCOMP:
    case N_DICTCOMP: hide_comp(w, n); break;
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
    case N_BREAK:
    case N_CONTINUE:
    case N_GLOBALDECL:
    case N_PASS: break;
    }
}

void resolve_warn_hidden(ModInfo *m, Node *body, BuiltinLookup builtins, HideMemo *memo, FILE *diag)
{
    HideMemo *h = memo ? memo : resolve_hide_new();
    hide_grow(h, m->nglobals);
    HideWalk w = { m, h, builtins, diag };
    hide_walk(&w, body);
    for (int g = 0; diag && g < m->nglobals; g++) {
        if (h->warned[g] || !h->bind[g].src || !h->call[g].src) continue;
        char where[300], msg[700];
        diag_where(where, sizeof where, h->call[g].src, h->call[g].line);
        snprintf(msg, sizeof msg, "'%s' hides the builtin %s(), called at %s", m->gnames[g],
                 m->gnames[g], where);
        diag_print(diag, h->bind[g].src, h->bind[g].line, h->bind[g].col, "warning", msg);
        h->warned[g] = true;
    }
    if (!memo) resolve_hide_free(h);
}
