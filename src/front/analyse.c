/* analyse.c — purity of functions, what each qfn takes along, and the
 * per-statement dependency facts that --deps prints. Runs after resolve;
 * afterwards the AST is never written again. Knows the AST and the builtin
 * flags, not evaluation. */
#include "analyse.h"
#include "builtins.h"
#include "diag.h"
#include "laplan.h"
#include "qh_assert.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct IntSet {
    int *v;
    int n, cap;
} IntSet;
static void set_add(IntSet *s, int x)
{
    for (int i = 0; i < s->n; i++)
        if (s->v[i] == x) return;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 8;
        s->v = xrealloc(s->v, (size_t)s->cap * sizeof(int));
    }
    s->v[s->n++] = x;
}
static bool set_has(const IntSet *s, int x)
{
    for (int i = 0; i < s->n; i++)
        if (s->v[i] == x) return true;
    return false;
}

typedef struct Walk {
    ModInfo *m;
    IntSet writes, reads, passes, qcalls, calls;
    const char *why;
    int why_line, why_col; /* first impurity */
    bool in_fn;            /* walking a function body */
} Walk;

static void impure(Walk *w, const Node *n, const char *why)
{
    if (!w->why) {
        w->why = why;
        w->why_line = n->line;
        w->why_col = n->col;
    }
}

/* the proto bound to a global slot by a top-level fn/qfn statement, if any;
 * of several, the last (what the name holds once they have all run, and the
 * REPL's redefinition) */
static FnProto *proto_of_global(ModInfo *m, int slot)
{
    for (int i = m->nprotos - 1; i >= 0; i--) {
        FnProto *f = m->protos[i];
        if (f->binding && f->binding->kind == N_GLOBAL && f->binding->u.var.slot == slot) return f;
    }
    return NULL;
}

static void walk(Walk *w, Node *n, bool need);
static void walk_list(Walk *w, Node **v, int k, bool need)
{
    for (int i = 0; i < k; i++) walk(w, v[i], need);
}

static void walk_target(Walk *w, Node *t)
{
    if (t->kind == N_GLOBAL) {
        set_add(&w->writes, t->u.var.slot);
        if (w->in_fn) impure(w, t, "assigns the global variable");
    } else if (t->kind == N_INDEX) {
        /* x[i] = v changes x: a write and a read of x */
        Node *o = t->u.index.obj;
        while (o->kind == N_INDEX) o = o->u.index.obj;
        if (o->kind == N_GLOBAL) set_add(&w->writes, o->u.var.slot);
        walk(w, t->u.index.obj, true);
        walk_list(w, t->u.index.idx, t->u.index.nidx, true);
    }
}

/* a call: a qfn's arguments are passed along, a builtin's effects noted */
static void walk_call(Walk *w, Node *n)
{
    Node *fn = n->u.call.fn;
    bool pass = false;
    if (fn->kind == N_BUILTIN) {
        const BuiltinDef *b = builtin_get(fn->u.var.slot);
        if (b->flags & BI_IMPURE)
            impure(w, n,
                   b->name[0] == 'p'               ? "prints"
                   : strcmp(b->name, "input") == 0 ? "reads input"
                                                   : "reads or writes files");
        pass = (b->flags & BI_LAZY) != 0;
    } else if (fn->kind == N_GLOBAL) {
        set_add(&w->calls, fn->u.var.slot);
        FnProto *f = proto_of_global(w->m, fn->u.var.slot);
        if (f && f->is_qfn) {
            set_add(&w->qcalls, fn->u.var.slot);
            pass = true;
        }
        set_add(&w->reads, fn->u.var.slot);
    } else {
        walk(w, fn, true);
    }
    walk_list(w, n->u.call.args, n->u.call.nargs, !pass);
    for (int i = 0; i < n->u.call.nkw; i++) walk(w, n->u.call.kw[i].value, !pass);
}

/* walk's statements */
static void walk_stmt(Walk *w, Node *n)
{
    switch ((NodeKind)n->kind) {
    case N_BLOCK: walk_list(w, n->u.list.items, n->u.list.n, true); return;
    case N_EXPRSTMT:
    case N_RETURN: walk(w, n->u.expr.expr, false); return;
    case N_ASSIGN:
        walk(w, n->u.assign.value, false);
        walk_target(w, n->u.assign.target);
        return;
    case N_AUGASSIGN:
        walk(w, n->u.assign.value, true);
        walk(w, n->u.assign.target, true);
        walk_target(w, n->u.assign.target);
        return;
    case N_DESTRUCT:
        walk(w, n->u.destruct.value, true);
        for (int i = 0; i < n->u.destruct.n; i++) walk_target(w, n->u.destruct.targets[i]);
        return;
    case N_IF:
        walk(w, n->u.ifs.cond, true);
        walk(w, n->u.ifs.then, true);
        walk(w, n->u.ifs.els, true);
        return;
    case N_WHILE:
        walk(w, n->u.whiles.cond, true);
        walk(w, n->u.whiles.body, true);
        return;
    case N_FOR:
        walk(w, n->u.fors.iter, true);
        for (int i = 0; i < n->u.fors.nvars; i++) walk_target(w, n->u.fors.vars[i]);
        walk(w, n->u.fors.body, true);
        return;
    case N_TRY:
        walk(w, n->u.tries.body, true);
        if (n->u.tries.var) walk_target(w, n->u.tries.var);
        walk(w, n->u.tries.handler, true);
        return;
    case N_FNDEF: {
        FnProto *f = n->u.fn;
        for (int i = 0; i < f->nparams; i++) walk(w, f->defaults[i], true);
        walk(w, f->device, true);
        if (w->in_fn && f->binding->kind != N_GLOBAL) {
            /* a nested function: its impurity is the body's (it may be called here) */
            if (f->analysed && !f->pure && f->impure_line > 0) impure(w, n, f->impure_why);
        }
        walk_target(w, f->binding);
        return;
    }
    case N_IMPORT:
        impure(w, n, "imports a module");
        walk_target(w, n->u.import.var);
        return;
    case N_BREAK:
    case N_CONTINUE:
    case N_GLOBALDECL:
    case N_PASS: return;
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
    case N_NKINDS: break; /* expressions: walk's */
    }
    qh_unreachable();
}

/* need: the value of n is needed (not just passed along) */
static void walk(Walk *w, Node *n, bool need)
{
    if (!n) return;
    switch ((NodeKind)n->kind) {
    case N_GLOBAL:
        if (need)
            set_add(&w->reads, n->u.var.slot);
        else
            set_add(&w->passes, n->u.var.slot);
        break;
    case N_LIST: walk_list(w, n->u.list.items, n->u.list.n, need); break;
    case N_DICT:
        walk_list(w, n->u.dict.keys, n->u.dict.n, true);
        walk_list(w, n->u.dict.vals, n->u.dict.n, need);
        break;
    case N_UNARY:
    case N_NOT: walk(w, n->u.bin.a, true); break;
    case N_BINARY:
    case N_AND:
    case N_OR:
        walk(w, n->u.bin.a, true);
        walk(w, n->u.bin.b, true);
        break;
    case N_CALL: walk_call(w, n); break;
    case N_INDEX:
        walk(w, n->u.index.obj, true);
        walk_list(w, n->u.index.idx, n->u.index.nidx, true);
        break;
    case N_SLICE:
        walk(w, n->u.slice.lo, true);
        walk(w, n->u.slice.hi, true);
        walk(w, n->u.slice.step, true);
        break;
    case N_MEMBER: walk(w, n->u.member.obj, true); break;
    case N_COND:
        walk(w, n->u.ifs.cond, true);
        walk(w, n->u.ifs.then, need);
        walk(w, n->u.ifs.els, need);
        break;
    case N_LISTCOMP:
    case N_DICTCOMP:
        /* the variables are the comprehension's own (locals, never globals) */
        for (int i = 0; i < n->u.comp.nclauses; i++) {
            CompClause *c = &n->u.comp.clauses[i];
            walk(w, c->iter, true);
            walk_list(w, c->conds, c->nconds, true);
        }
        walk(w, n->u.comp.key, true);
        walk(w, n->u.comp.elt, need);
        break;
    case N_FNEXPR: {
        FnProto *f = n->u.fn;
        for (int i = 0; i < f->nparams; i++) walk(w, f->defaults[i], true);
        /* a closure made here may run here: its impurity is this body's */
        if (w->in_fn && f->analysed && !f->pure && f->impure_line > 0) impure(w, n, f->impure_why);
        break;
    }
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
    case N_PASS: walk_stmt(w, n); break;
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
    case N_BUILTIN:
    case N_SELF: break;
    }
}

static void free_walk(Walk *w)
{
    free(w->writes.v);
    free(w->reads.v);
    free(w->passes.v);
    free(w->qcalls.v);
    free(w->calls.v);
}

static int *dup_ints(const IntSet *s, int *n)
{
    *n = s->n;
    if (!s->n) return NULL;
    int *v = xmalloc((size_t)s->n * sizeof(int));
    memcpy(v, s->v, (size_t)s->n * sizeof(int));
    return v;
}

/* a function body: its own facts, nested function bodies included (a
 * closure made inside runs with the same copied state) */
static void analyse_fn(ModInfo *m, FnProto *f)
{
    Walk w;
    memset(&w, 0, sizeof w);
    w.m = m;
    w.in_fn = true;
    walk(&w, f->body, true);
    IntSet all = { 0 };
    for (int i = 0; i < w.reads.n; i++) set_add(&all, w.reads.v[i]);
    for (int i = 0; i < w.passes.n; i++) set_add(&all, w.passes.v[i]);
    free(f->global_reads);
    free(f->global_calls);
    f->global_reads = dup_ints(&all, &f->nglobal_reads);
    f->global_calls = dup_ints(&w.calls, &f->nglobal_calls);
    free(all.v);
    f->pure = w.why == NULL;
    f->impure_why = w.why;
    f->impure_line = w.why_line;
    f->impure_col = w.why_col;
    f->analysed = true;
    free_walk(&w);
}

/* nested function expressions inside f: their reads count for f too */
static void nested_reads(ModInfo *m, FnProto *f, Node *n, IntSet *reads);
static void nested_list(ModInfo *m, FnProto *f, Node **v, int k, IntSet *r)
{
    for (int i = 0; i < k; i++) nested_reads(m, f, v[i], r);
}
static void nested_reads(ModInfo *m, FnProto *f, Node *n, IntSet *r)
{
    if (!n) return;
    switch ((NodeKind)n->kind) {
    case N_FNEXPR:
    case N_FNDEF:
        for (int i = 0; i < n->u.fn->nglobal_reads; i++) set_add(r, n->u.fn->global_reads[i]);
        nested_reads(m, f, n->u.fn->body, r);
        break;
    case N_LIST:
    case N_BLOCK: nested_list(m, f, n->u.list.items, n->u.list.n, r); break;
    case N_DICT: nested_list(m, f, n->u.dict.vals, n->u.dict.n, r); break;
    case N_BINARY:
    case N_AND:
    case N_OR:
        nested_reads(m, f, n->u.bin.a, r);
        nested_reads(m, f, n->u.bin.b, r);
        break;
    case N_UNARY:
    case N_NOT: nested_reads(m, f, n->u.bin.a, r); break;
    case N_COND:
        nested_reads(m, f, n->u.ifs.cond, r);
        nested_reads(m, f, n->u.ifs.then, r);
        nested_reads(m, f, n->u.ifs.els, r);
        break;
    case N_LISTCOMP:
    case N_DICTCOMP:
        for (int i = 0; i < n->u.comp.nclauses; i++) {
            CompClause *c = &n->u.comp.clauses[i];
            nested_reads(m, f, c->iter, r);
            nested_list(m, f, c->conds, c->nconds, r);
        }
        nested_reads(m, f, n->u.comp.key, r);
        nested_reads(m, f, n->u.comp.elt, r);
        break;
    case N_CALL:
        nested_reads(m, f, n->u.call.fn, r);
        nested_list(m, f, n->u.call.args, n->u.call.nargs, r);
        for (int i = 0; i < n->u.call.nkw; i++) nested_reads(m, f, n->u.call.kw[i].value, r);
        break;
    case N_EXPRSTMT:
    case N_RETURN: nested_reads(m, f, n->u.expr.expr, r); break;
    case N_ASSIGN:
    case N_AUGASSIGN: nested_reads(m, f, n->u.assign.value, r); break;
    case N_IF:
        nested_reads(m, f, n->u.ifs.then, r);
        nested_reads(m, f, n->u.ifs.els, r);
        break;
    case N_WHILE: nested_reads(m, f, n->u.whiles.body, r); break;
    case N_FOR: nested_reads(m, f, n->u.fors.body, r); break;
    case N_TRY:
        nested_reads(m, f, n->u.tries.body, r);
        nested_reads(m, f, n->u.tries.handler, r);
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
    case N_INDEX:
    case N_SLICE:
    case N_MEMBER:
    case N_DESTRUCT:
    case N_BREAK:
    case N_CONTINUE:
    case N_IMPORT:
    case N_GLOBALDECL:
    case N_PASS: break;
    }
}

bool analyse_body(ModInfo *m, Node *body, int first_proto, FILE *diag)
{
    /* inner functions first: an outer body takes on what its closures do */
    for (int i = m->nprotos - 1; i >= first_proto; i--) analyse_fn(m, m->protos[i]);
    /* nested closures' reads, innermost first (protos are in parse order: outer before inner) */
    for (int i = m->nprotos - 1; i >= first_proto; i--) {
        FnProto *f = m->protos[i];
        IntSet r = { 0 };
        for (int k = 0; k < f->nglobal_reads; k++) set_add(&r, f->global_reads[k]);
        nested_reads(m, f, f->body, &r);
        free(f->global_reads);
        f->global_reads = dup_ints(&r, &f->nglobal_reads);
        free(r.v);
    }
    /* purity through calls of top-level functions: a fixpoint */
    bool changed = true;
    while (changed) {
        changed = false;
        for (int i = 0; i < m->nprotos; i++) {
            FnProto *f = m->protos[i];
            if (!f->pure) continue;
            for (int k = 0; k < f->nglobal_calls; k++) {
                FnProto *g = proto_of_global(m, f->global_calls[k]);
                if (g && !g->pure && !g->is_qfn) {
                    f->pure = false;
                    f->impure_why = NULL;
                    f->impure_line = -(int)(g - g) - 1;
                    /* remember whom: through the callee's name */
                    f->impure_why = g->name;
                    changed = true;
                    break;
                }
            }
        }
    }
    bool ok = true;
    for (int i = first_proto; i < m->nprotos; i++) {
        FnProto *f = m->protos[i];
        if (!f->is_qfn || f->pure) continue;
        char msg[400];
        if (f->impure_line > 0) {
            snprintf(msg, sizeof msg,
                     "quantum function '%s' %s: a qfn body may not print, read "
                     "input, read or "
                     "write files, import or assign globals",
                     f->name, f->impure_why);
            diag_print(diag, mod_msg_src(m), f->impure_line, f->impure_col, "error", msg);
        } else {
            snprintf(msg, sizeof msg,
                     "quantum function '%s' calls '%s', which prints, reads input, "
                     "reads or writes "
                     "files, imports or assigns globals",
                     f->name, f->impure_why);
            diag_print(diag, mod_msg_src(m), f->line, f->col, "error", msg);
        }
        ok = false;
    }
    /* per top-level statement facts */
    for (int i = 0; i < body->u.list.n; i++) {
        Node *s = body->u.list.items[i];
        Walk w;
        memset(&w, 0, sizeof w);
        w.m = m;
        walk(&w, s, true);
        DepInfo *d = xcalloc(1, sizeof *d);
        d->writes = dup_ints(&w.writes, &d->nwrites);
        d->reads = dup_ints(&w.reads, &d->nreads);
        d->passes = dup_ints(&w.passes, &d->npasses);
        d->qcalls = dup_ints(&w.qcalls, &d->nqcalls);
        d->impure = w.why != NULL;
        s->dep = d;
        free_walk(&w);
    }
    laplan_analyse(m, body, first_proto); /* which loops may start their calls early */
    return ok;
}

bool analyse_module(ModInfo *m, FILE *diag) { return analyse_body(m, m->body, 0, diag); }

void analyse_free_body(Node *body)
{
    for (int i = 0; i < body->u.list.n; i++) {
        DepInfo *d = body->u.list.items[i]->dep;
        if (!d) continue;
        free(d->writes);
        free(d->reads);
        free(d->passes);
        free(d->qcalls);
        free(d);
        body->u.list.items[i]->dep = NULL;
    }
}

/* ---- --deps: a straight-line walk that tracks which globals may hold a
 * future, and from which call ---- */

typedef struct Origin {
    int nsrc;
    const Source *src[8]; /* where each call was made */
    int src_line[8];
    int src_fn[8];
} Origin;

struct DepsState {
    Origin *holds;
    int n;
};

DepsState *analyse_deps_new(void) { return xcalloc(1, sizeof(DepsState)); }
void analyse_deps_free(DepsState *st)
{
    if (!st) return;
    free(st->holds);
    free(st);
}

static void origin_add(Origin *o, const Source *src, int line, int fn)
{
    for (int i = 0; i < o->nsrc; i++)
        if (o->src[i] == src && o->src_line[i] == line && o->src_fn[i] == fn) return;
    if (o->nsrc < 8) {
        o->src[o->nsrc] = src;
        o->src_line[o->nsrc] = line;
        o->src_fn[o->nsrc] = fn;
        o->nsrc++;
    }
}

/* "line N" in a file, "entry N" (", line L") for a REPL entry */
static const char *label(char *buf, size_t n, const Source *src, int line)
{
    if (src && src->entry > 0) {
        if (line > 1)
            snprintf(buf, n, "entry %d, line %d", src->entry, line);
        else
            snprintf(buf, n, "entry %d", src->entry);
    } else {
        snprintf(buf, n, "line %d", line);
    }
    return buf;
}

static void print_names(FILE *out, ModInfo *m, const int *v, int n)
{
    for (int i = 0; i < n; i++) fprintf(out, "%s%s", i ? ", " : "", m->gnames[v[i]]);
}

/* what qfn f takes along: what it reads, and what the functions it reads
 * read, transitively */
static void print_takes_along(FILE *out, ModInfo *m, FnProto *f)
{
    IntSet all = { 0 };
    FnProto *stack[256];
    int sp = 0;
    stack[sp++] = f;
    while (sp) {
        FnProto *g = stack[--sp];
        for (int k = 0; k < g->nglobal_reads; k++) {
            int slot = g->global_reads[k];
            if (set_has(&all, slot)) continue;
            set_add(&all, slot);
            FnProto *h = proto_of_global(m, slot);
            if (h && h != f && sp < 256) stack[sp++] = h;
        }
    }
    fprintf(out, "; takes along: ");
    if (!all.n) fprintf(out, "nothing");
    print_names(out, m, all.v, all.n);
    free(all.v);
}

/* a line per function bound to a global, protos [first, end) */
static void print_fns(FILE *out, ModInfo *m, const Source *src, int first, int end)
{
    char at[64];
    for (int i = first; i < end; i++) {
        FnProto *f = m->protos[i];
        if (!f->binding || f->binding->kind != N_GLOBAL) continue;
        fprintf(out, "%s %s (%s): %s", f->is_qfn ? "qfn" : "fn", f->name,
                label(at, sizeof at, src, f->line), f->pure ? "pure" : "impure");
        if (f->is_qfn) print_takes_along(out, m, f);
        fputc('\n', out);
    }
}

/* a statement's line: the qfns it dispatches, the globals it writes and
 * the values it reads */
static void print_stmt_deps(FILE *out, ModInfo *m, const DepInfo *d, const char *at)
{
    fprintf(out, "%s:", at);
    bool any = false;
    if (d->nqcalls) {
        fprintf(out, " dispatches ");
        for (int k = 0; k < d->nqcalls; k++)
            fprintf(out, "%s%s()", k ? ", " : "", m->gnames[d->qcalls[k]]);
        any = true;
    }
    if (d->nwrites) {
        fprintf(out, "%s writes ", any ? ";" : "");
        print_names(out, m, d->writes, d->nwrites);
        any = true;
    }
    if (d->nreads) {
        int shown = 0;
        for (int k = 0; k < d->nreads; k++) {
            FnProto *f = proto_of_global(m, d->reads[k]);
            if (f) continue; /* calling a function is not reading a value */
            fprintf(out, "%s%s", shown ? ", " : (any ? "; reads " : " reads "),
                    m->gnames[d->reads[k]]);
            shown++;
        }
        if (shown) any = true;
    }
    if (!any) fprintf(out, " -");
    fputc('\n', out);
}

/* a statement's waits (value-needing reads of globals that may hold
 * futures) and chains (futures passed on into new calls) */
static void print_waits(FILE *out, ModInfo *m, const Origin *holds, const DepInfo *d,
                        const char *at)
{
    char from[64];
    for (int k = 0; k < d->nreads; k++) {
        const Origin *o = &holds[d->reads[k]];
        for (int j = 0; j < o->nsrc; j++)
            fprintf(out, "%s waits for %s() from %s (via %s)\n", at, m->gnames[o->src_fn[j]],
                    label(from, sizeof from, o->src[j], o->src_line[j]), m->gnames[d->reads[k]]);
    }
    if (!d->nqcalls) return;
    for (int k = 0; k < d->npasses; k++) {
        const Origin *o = &holds[d->passes[k]];
        for (int j = 0; j < o->nsrc; j++)
            fprintf(out, "%s chains on %s() from %s (via %s), in the background\n", at,
                    m->gnames[o->src_fn[j]], label(from, sizeof from, o->src[j], o->src_line[j]),
                    m->gnames[d->passes[k]]);
    }
}

/* the futures the globals hold after statement s (at src) */
static void update_holds(Origin *holds, const Source *src, const Node *s, const DepInfo *d)
{
    /* what this statement leaves behind */
    Origin made = { 0 };
    for (int k = 0; k < d->nqcalls; k++) origin_add(&made, src, s->line, d->qcalls[k]);
    /* a new call's future replaces the ones it chains on; without a call,
     * futures passed along (y = x, [x, y]) are held as they are */
    for (int k = 0; k < d->npasses && !d->nqcalls; k++) {
        Origin *o = &holds[d->passes[k]];
        for (int j = 0; j < o->nsrc; j++)
            origin_add(&made, o->src[j], o->src_line[j], o->src_fn[j]);
    }
    for (int k = 0; k < d->nwrites; k++) {
        int g = d->writes[k];
        bool read_here = false;
        for (int j = 0; j < d->nreads; j++)
            if (d->reads[j] == g) read_here = true;
        if (read_here && !made.nsrc) {
            holds[g].nsrc = 0;
            continue;
        } /* resolved by this statement */
        if (s->kind == N_ASSIGN || s->kind == N_DESTRUCT || s->kind == N_FOR)
            holds[g] = made;
        else
            for (int j = 0; j < made.nsrc; j++)
                origin_add(&holds[g], made.src[j], made.src_line[j], made.src_fn[j]);
    }
    /* a value-needing read resolves the future it needed */
    for (int k = 0; k < d->nreads; k++) {
        bool written = false;
        for (int j = 0; j < d->nwrites; j++)
            if (d->writes[j] == d->reads[k]) written = true;
        if (!written) holds[d->reads[k]].nsrc = 0;
    }
}

void analyse_deps_part(ModInfo *m, const Source *src, Node *body, int first_proto, int end_proto,
                       DepsState *st, FILE *out)
{
    DepsState own = { NULL, 0 };
    if (!st) st = &own;
    if (st->n < m->nglobals) {
        st->holds = xrealloc(st->holds, (size_t)m->nglobals * sizeof(Origin));
        memset(st->holds + st->n, 0, (size_t)(m->nglobals - st->n) * sizeof(Origin));
        st->n = m->nglobals;
    }
    Origin *holds = st->holds;
    char at[64];
    if (out && src->entry > 0)
        fprintf(out, "# entry %d: dependency analysis\n", src->entry);
    else if (out)
        fprintf(out, "# %s: dependency analysis\n", src->name);
    if (out) print_fns(out, m, src, first_proto, end_proto);
    for (int i = 0; i < body->u.list.n; i++) {
        Node *s = body->u.list.items[i];
        DepInfo *d = s->dep;
        if (!d) continue;
        label(at, sizeof at, src, s->line);
        if (out) {
            print_stmt_deps(out, m, d, at);
            laplan_print(s, at, out); /* calls a loop may start early */
            print_waits(out, m, holds, d, at);
            laplan_print_straight(s, at, out); /* calls it may start early */
        }
        update_holds(holds, src, s, d);
    }
    free(own.holds);
}

void analyse_print_deps(ModInfo *m, Node *body, FILE *out)
{
    analyse_deps_part(m, m->src, body, 0, m->nprotos, NULL, out);
}
