/* test_resolve.c — Check unit tests of the resolver (src/resolve.c) and the
 * analyser (src/analyse.c): every name to the right kind of slot under
 * Python's scoping rule (lang/statements.md), closures through cells and
 * upvalues, builtins and their shadowing, frame sizes; then purity of
 * functions, the qfn body rules (§8) and the per-statement dependency facts
 * (§9). */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyse.h"
#include "ast.h"
#include "diag.h"
#include "builtins.h"
#include "parse.h"
#include "resolve.h"

#include "qh.h"

/* ================================================================ helpers */

typedef struct Res {
    Source *src;
    ModInfo *m;
    bool resolved, analysed;
    char *diag;
} Res;

/* Parses (must succeed), resolves and, if that worked and `analyse` is
 * set, analyses text; diagnostics of both go to r.diag. */
static Res run(const char *text, bool analyse, bool warn)
{
    qh_init();
    Res r;
    memset(&r, 0, sizeof r);
    r.src = source_from_text("t.qh", text, strlen(text));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    r.m = parse_source(r.src, f);
    fflush(f);
    ck_assert_msg(r.m != NULL, "parse failed: %s", buf);
    r.resolved = resolve_module(r.m, r.m->body, builtin_lookup, f, warn);
    if (r.resolved && analyse) r.analysed = analyse_module(r.m, f);
    fclose(f);
    r.diag = buf;
    return r;
}
static Res resolved(const char *text)
{
    Res r = run(text, false, false);
    ck_assert_msg(r.resolved, "resolve failed: %s", r.diag);
    ck_assert_msg(r.diag[0] == 0, "resolve printed: %s", r.diag);
    return r;
}
static Res analysed(const char *text)
{
    Res r = run(text, true, false);
    ck_assert_msg(r.resolved, "resolve failed: %s", r.diag);
    return r;
}

static void res_free(Res *r)
{
    if (r->m) {
        analyse_free_body(r->m->body);
        parse_free(r->m);
    }
    source_free(r->src);
    free(r->diag);
}

/* every name node of the module, including the bindings of fn statements */
typedef struct Names {
    Node **v;
    int n, cap;
} Names;
static void names_add(Names *ns, Node *n)
{
    if (ns->n == ns->cap) {
        ns->cap = ns->cap ? ns->cap * 2 : 64;
        ns->v = realloc(ns->v, (size_t)ns->cap * sizeof(Node *));
    }
    ns->v[ns->n++] = n;
}
static void collect(Names *ns, Node *n);
static void collect_list(Names *ns, Node **v, int k)
{
    for (int i = 0; i < k; i++) collect(ns, v[i]);
}
static void collect_fn(Names *ns, FnProto *f)
{
    for (int i = 0; i < f->nparams; i++) collect(ns, f->defaults[i]);
    collect(ns, f->device);
    collect(ns, f->body);
}
static void collect(Names *ns, Node *n)
{
    if (!n) return;
    switch (n->kind) {
    case N_NAME:
    case N_LOCAL:
    case N_LOCALCELL:
    case N_UPVAL:
    case N_GLOBAL:
    case N_BUILTIN:
    case N_SELF: names_add(ns, n); break;
    case N_LIST:
    case N_BLOCK: collect_list(ns, n->u.list.items, n->u.list.n); break;
    case N_DICT:
        collect_list(ns, n->u.dict.keys, n->u.dict.n);
        collect_list(ns, n->u.dict.vals, n->u.dict.n);
        break;
    case N_UNARY:
    case N_NOT: collect(ns, n->u.bin.a); break;
    case N_BINARY:
    case N_AND:
    case N_OR:
        collect(ns, n->u.bin.a);
        collect(ns, n->u.bin.b);
        break;
    case N_CALL:
        collect(ns, n->u.call.fn);
        collect_list(ns, n->u.call.args, n->u.call.nargs);
        for (int i = 0; i < n->u.call.nkw; i++) collect(ns, n->u.call.kw[i].value);
        break;
    case N_INDEX:
        collect(ns, n->u.index.obj);
        collect_list(ns, n->u.index.idx, n->u.index.nidx);
        break;
    case N_SLICE:
        collect(ns, n->u.slice.lo);
        collect(ns, n->u.slice.hi);
        collect(ns, n->u.slice.step);
        break;
    case N_MEMBER: collect(ns, n->u.member.obj); break;
    case N_FNEXPR: collect_fn(ns, n->u.fn); break;
    case N_FNDEF:
        if (n->u.fn->binding) names_add(ns, n->u.fn->binding);
        collect_fn(ns, n->u.fn);
        break;
    case N_EXPRSTMT:
    case N_RETURN: collect(ns, n->u.expr.expr); break;
    case N_ASSIGN:
    case N_AUGASSIGN:
        collect(ns, n->u.assign.target);
        collect(ns, n->u.assign.value);
        break;
    case N_DESTRUCT:
        collect_list(ns, n->u.destruct.targets, n->u.destruct.n);
        collect(ns, n->u.destruct.value);
        break;
    case N_IF:
        collect(ns, n->u.ifs.cond);
        collect(ns, n->u.ifs.then);
        collect(ns, n->u.ifs.els);
        break;
    case N_WHILE:
        collect(ns, n->u.whiles.cond);
        collect(ns, n->u.whiles.body);
        break;
    case N_FOR:
        collect_list(ns, n->u.fors.vars, n->u.fors.nvars);
        collect(ns, n->u.fors.iter);
        collect(ns, n->u.fors.body);
        break;
    case N_TRY:
        collect(ns, n->u.tries.body);
        collect(ns, n->u.tries.var);
        collect(ns, n->u.tries.handler);
        break;
    case N_IMPORT: collect(ns, n->u.import.var); break;
    case N_COND:
        collect(ns, n->u.ifs.cond);
        collect(ns, n->u.ifs.then);
        collect(ns, n->u.ifs.els);
        break;
    case N_LISTCOMP:
    case N_DICTCOMP:
        for (int i = 0; i < n->u.comp.nclauses; i++) {
            CompClause *c = &n->u.comp.clauses[i];
            collect_list(ns, c->vars, c->nvars);
            collect(ns, c->iter);
            collect_list(ns, c->conds, c->nconds);
        }
        collect(ns, n->u.comp.key);
        collect(ns, n->u.comp.elt);
        break;
    default: break;
    }
}

/* The nth (0-based, by column) name node called `name` on `line`. */
static Node *name_at(const Res *r, const char *name, int line, int nth)
{
    Names ns = { 0 };
    collect(&ns, r->m->body);
    Node *found[64];
    int k = 0;
    for (int i = 0; i < ns.n; i++)
        if (ns.v[i]->line == line && strcmp(ns.v[i]->u.var.name, name) == 0 && k < 64)
            found[k++] = ns.v[i];
    free(ns.v);
    /* sort by column */
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && found[j]->col < found[j - 1]->col; j--) {
            Node *t = found[j];
            found[j] = found[j - 1];
            found[j - 1] = t;
        }
    ck_assert_msg(nth < k, "no name '%s' #%d on line %d (%d found)", name, nth, line, k);
    return found[nth];
}

static const char *kind_str(int k)
{
    switch (k) {
    case N_NAME: return "N_NAME";
    case N_LOCAL: return "N_LOCAL";
    case N_LOCALCELL: return "N_LOCALCELL";
    case N_UPVAL: return "N_UPVAL";
    case N_GLOBAL: return "N_GLOBAL";
    case N_BUILTIN: return "N_BUILTIN";
    case N_SELF: return "N_SELF";
    default: return "other";
    }
}

/* Checks the kind and slot (slot < 0: not checked) of a name node. */
static void expect_name_at(const char *file, int srcline, const Res *r, const char *name, int line,
                           int nth, int kind, int slot)
{
    Node *n = name_at(r, name, line, nth);
    ck_assert_msg(n->kind == kind, "%s:%d: '%s' on line %d is %s, want %s", file, srcline, name,
                  line, kind_str(n->kind), kind_str(kind));
    if (slot >= 0)
        ck_assert_msg(n->u.var.slot == slot, "%s:%d: '%s' on line %d has slot %d, want %d", file,
                      srcline, name, line, n->u.var.slot, slot);
}
#define EXPECT_NAME(r, name, line, nth, kind, slot) \
    expect_name_at(__FILE__, __LINE__, r, name, line, nth, kind, slot)

static FnProto *proto(const Res *r, const char *name)
{
    for (int i = 0; i < r->m->nprotos; i++)
        if (strcmp(r->m->protos[i]->name, name) == 0) return r->m->protos[i];
    ck_abort_msg("no function '%s'", name);
    return NULL;
}

static int gslot(const Res *r, const char *name)
{
    int s = resolve_global_slot(r->m, name);
    ck_assert_msg(s >= 0, "no global '%s'", name);
    ck_assert_str_eq(r->m->gnames[s], name);
    return s;
}

static bool has(const int *v, int n, int x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x) return true;
    return false;
}

/* ================================================================ globals */

START_TEST(toplevel_globals)
{
    Res r = resolved("x = 1\ny = x + 2\nfor i in [1] { z = i }\nprint(y)\n");
    int x = gslot(&r, "x"), y = gslot(&r, "y");
    EXPECT_NAME(&r, "x", 1, 0, N_GLOBAL, x);
    EXPECT_NAME(&r, "x", 2, 0, N_GLOBAL, x);
    EXPECT_NAME(&r, "y", 2, 0, N_GLOBAL, y);
    EXPECT_NAME(&r, "i", 3, 0, N_GLOBAL, gslot(&r, "i"));
    EXPECT_NAME(&r, "i", 3, 1, N_GLOBAL, gslot(&r, "i"));
    EXPECT_NAME(&r, "z", 3, 0, N_GLOBAL, gslot(&r, "z"));
    EXPECT_NAME(&r, "y", 4, 0, N_GLOBAL, y);
    ck_assert(r.m->gassigned[x]);
    ck_assert_int_eq(r.m->gbuiltin[x], -1);
    ck_assert_int_ne(x, y);
    ck_assert_int_eq(resolve_global_slot(r.m, "nothere"), -1);
    ck_assert_ptr_eq(r.m->gkeys[x]->s, r.m->gnames[x]);
    res_free(&r);
}
END_TEST

START_TEST(read_before_assignment_is_global)
{
    /* a top-level read sees the global even before the line that assigns it */
    Res r = resolved("fn f() { return later }\nprint(later)\nlater = 1\n");
    int g = gslot(&r, "later");
    EXPECT_NAME(&r, "later", 1, 0, N_GLOBAL, g);
    EXPECT_NAME(&r, "later", 2, 0, N_GLOBAL, g);
    EXPECT_NAME(&r, "later", 3, 0, N_GLOBAL, g);
    EXPECT_NAME(&r, "f", 1, 0, N_GLOBAL, gslot(&r, "f"));
    res_free(&r);
}
END_TEST

START_TEST(declare_and_slot)
{
    Res r = resolved("x = argv\n");
    int a = gslot(&r, "argv");
    ck_assert_int_eq(resolve_declare(r.m, "argv", builtin_lookup), a);
    int n = r.m->nglobals;
    int b = resolve_declare(r.m, "brand_new", builtin_lookup);
    ck_assert_int_eq(b, n);
    ck_assert_int_eq(r.m->nglobals, n + 1);
    ck_assert_int_eq(resolve_global_slot(r.m, "brand_new"), b);
    ck_assert(r.m->gassigned[b]);
    res_free(&r);
}
END_TEST

/* ================================================================ locals */

START_TEST(params_and_locals)
{
    Res r = resolved("fn f(a, b) {\n"                      /* 1 */
                     "  c = a + b\n"                       /* 2 */
                     "  for i in b { c += i }\n"           /* 3 */
                     "  p, q = [1, 2]\n"                   /* 4 */
                     "  try { c = 1 } catch e { c = e }\n" /* 5 */
                     "  return c\n"                        /* 6 */
                     "}\n");
    FnProto *f = proto(&r, "f");
    EXPECT_NAME(&r, "a", 2, 0, N_LOCAL, 0);
    EXPECT_NAME(&r, "b", 2, 0, N_LOCAL, 1);
    EXPECT_NAME(&r, "c", 2, 0, N_LOCAL, 2);
    EXPECT_NAME(&r, "i", 3, 0, N_LOCAL, 3);
    EXPECT_NAME(&r, "b", 3, 0, N_LOCAL, 1);
    EXPECT_NAME(&r, "c", 3, 0, N_LOCAL, 2);
    EXPECT_NAME(&r, "i", 3, 1, N_LOCAL, 3);
    EXPECT_NAME(&r, "p", 4, 0, N_LOCAL, 4);
    EXPECT_NAME(&r, "q", 4, 0, N_LOCAL, 5);
    EXPECT_NAME(&r, "e", 5, 0, N_LOCAL, 6);
    EXPECT_NAME(&r, "e", 5, 1, N_LOCAL, 6);
    EXPECT_NAME(&r, "c", 6, 0, N_LOCAL, 2);
    ck_assert_int_eq(f->nparams, 2);
    ck_assert_int_eq(f->nlocals, 7);
    ck_assert_int_eq(f->nupvals, 0);
    const char *want[] = { "a", "b", "c", "i", "p", "q", "e" };
    for (int i = 0; i < 7; i++) {
        ck_assert_str_eq(f->local_names[i], want[i]);
        ck_assert(!f->local_is_cell[i]);
    }
    /* nothing of f leaked into the globals */
    ck_assert_int_eq(resolve_global_slot(r.m, "c"), -1);
    ck_assert_int_eq(resolve_global_slot(r.m, "a"), -1);
    EXPECT_NAME(&r, "f", 1, 0, N_GLOBAL, gslot(&r, "f"));
    ck_assert_int_eq(f->binding->kind, N_GLOBAL);
    res_free(&r);
}
END_TEST

START_TEST(assigned_anywhere_is_local)
{
    /* Python's rule: assigned anywhere in the body -> local for the whole body */
    Res r = resolved("x = 1\n"
                     "fn f() {\n"
                     "  y = x\n"
                     "  if y { x = 2 }\n"
                     "  return x\n"
                     "}\n"
                     "fn g() { return x }\n");
    EXPECT_NAME(&r, "x", 3, 0, N_LOCAL, 1);
    EXPECT_NAME(&r, "x", 4, 0, N_LOCAL, 1);
    EXPECT_NAME(&r, "x", 5, 0, N_LOCAL, 1);
    EXPECT_NAME(&r, "y", 3, 0, N_LOCAL, 0);
    EXPECT_NAME(&r, "x", 7, 0, N_GLOBAL, gslot(&r, "x"));
    ck_assert_int_eq(proto(&r, "f")->nlocals, 2);
    ck_assert_int_eq(proto(&r, "g")->nlocals, 0);
    res_free(&r);
}
END_TEST

START_TEST(nlocals_counts)
{
    Res r = resolved("fn none() { return 1 }\n"
                     "fn two(a, b) { return a }\n"
                     "fn more(a) { a = 1; b = 2; b = 3; fn h() { }\n import m\n return b }\n"
                     "fn aug(a) { a += 1; n += 1 }\n"
                     "k = fn (u, v=1) { w = u }\n");
    ck_assert_int_eq(proto(&r, "none")->nlocals, 0);
    ck_assert_int_eq(proto(&r, "two")->nlocals, 2);
    ck_assert_int_eq(proto(&r, "more")->nlocals, 4); /* a b h m */
    ck_assert_int_eq(proto(&r, "aug")->nlocals, 2);  /* a n */
    ck_assert_int_eq(proto(&r, "<anonymous>")->nlocals, 3);
    ck_assert_int_eq(proto(&r, "<anonymous>")->nparams, 2);
    EXPECT_NAME(&r, "m", 4, 0, N_LOCAL, 3);
    EXPECT_NAME(&r, "n", 6, 0, N_LOCAL, 1);
    res_free(&r);
}
END_TEST

START_TEST(global_declaration)
{
    Res r = resolved("x = 0\n"
                     "fn inc() {\n"
                     "  global x\n"
                     "  x = x + 1\n"
                     "  y = x\n"
                     "}\n"
                     "fn mk() { global fresh\n fresh = 1 }\n");
    int x = gslot(&r, "x");
    EXPECT_NAME(&r, "x", 4, 0, N_GLOBAL, x);
    EXPECT_NAME(&r, "x", 4, 1, N_GLOBAL, x);
    EXPECT_NAME(&r, "x", 5, 0, N_GLOBAL, x);
    EXPECT_NAME(&r, "y", 5, 0, N_LOCAL, 0);
    ck_assert_int_eq(proto(&r, "inc")->nlocals, 1);
    /* a global declared and assigned only inside a function */
    int fr = gslot(&r, "fresh");
    EXPECT_NAME(&r, "fresh", 8, 0, N_GLOBAL, fr);
    ck_assert(r.m->gassigned[fr]);
    ck_assert_int_eq(proto(&r, "mk")->nlocals, 0);
    res_free(&r);
}
END_TEST

START_TEST(global_errors)
{
    Res r = run("global x\nx = 1\n", false, false);
    ck_assert(!r.resolved);
    ck_assert_msg(strstr(r.diag, "t.qh:1:1: error: 'global' outside a function") != NULL, "%s",
                  r.diag);
    res_free(&r);
    r = run("if true {\n  global y\n}\n", false, false);
    ck_assert(!r.resolved);
    ck_assert_msg(strstr(r.diag, "t.qh:2:3: error: 'global' outside a function") != NULL, "%s",
                  r.diag);
    res_free(&r);
    r = run("fn f(a) {\n  global a\n}\n", false, false);
    ck_assert(!r.resolved);
    ck_assert_msg(strstr(r.diag, "t.qh:2:3: error: a parameter cannot be declared global") != NULL,
                  "%s", r.diag);
    res_free(&r);
}
END_TEST

/* ================================================================ closures */

/* ================================================================ comprehensions */

/* A comprehension's variables are its own: at the top level they live in a
 * frame of the outermost comprehension (never globals); in a function they
 * are hidden slots after the function's locals (lang/statements.md). */
START_TEST(comprehension_scope_top)
{
    Res r = resolved("x = 1\n"                                       /* 1 */
                     "ys = [x * 2 for x in [x, 2] if x]\n"           /* 2 */
                     "zs = [[x, y] for x in ys for y in range(x)]\n" /* 3 */
                     "d = {k: [v for v in k] for k in [\"ab\"]}\n"); /* 4 */
    int x = gslot(&r, "x");
    /* element, target and condition are the comprehension's; the first iterable is outside */
    EXPECT_NAME(&r, "x", 2, 0, N_LOCAL, 0);
    EXPECT_NAME(&r, "x", 2, 1, N_LOCAL, 0);
    EXPECT_NAME(&r, "x", 2, 2, N_GLOBAL, x);
    EXPECT_NAME(&r, "x", 2, 3, N_LOCAL, 0);
    EXPECT_NAME(&r, "x", 3, 0, N_LOCAL, 0);
    EXPECT_NAME(&r, "y", 3, 0, N_LOCAL, 1);
    EXPECT_NAME(&r, "x", 3, 1, N_LOCAL, 0);
    EXPECT_NAME(&r, "x", 3, 2, N_LOCAL, 0); /* range(x): a later iterable sees x */
    /* a nested comprehension takes further slots of the outermost one's frame */
    EXPECT_NAME(&r, "k", 4, 0, N_LOCAL, 0);
    EXPECT_NAME(&r, "v", 4, 0, N_LOCAL, 1);
    EXPECT_NAME(&r, "k", 4, 2, N_LOCAL, 0);
    Node *s2 = r.m->body->u.list.items[1], *s3 = r.m->body->u.list.items[2],
         *s4 = r.m->body->u.list.items[3];
    ck_assert_int_eq(s2->u.assign.value->u.comp.frame, 1);
    ck_assert_int_eq(s3->u.assign.value->u.comp.frame, 2);
    ck_assert_int_eq(s4->u.assign.value->u.comp.frame, 2);
    ck_assert_int_eq(s4->u.assign.value->u.comp.elt->u.comp.frame, 0);
    /* no global was made for them */
    ck_assert_int_eq(resolve_global_slot(r.m, "y"), -1);
    ck_assert_int_eq(resolve_global_slot(r.m, "k"), -1);
    ck_assert_int_eq(resolve_global_slot(r.m, "v"), -1);
    res_free(&r);
}
END_TEST

START_TEST(comprehension_scope_fn)
{
    Res r = resolved("fn f(n) {\n"                                 /* 1 */
                     "  i = 0\n"                                   /* 2 */
                     "  a = [i for i in range(n)]\n"               /* 3 */
                     "  b = [fn () { return i + n } for i in a]\n" /* 4 */
                     "  return [i, a, b]\n"                        /* 5 */
                     "}\n");
    FnProto *f = proto(&r, "f");
    /* n, i, a, b are the function's; each comprehension's i is a hidden slot of its own */
    EXPECT_NAME(&r, "i", 2, 0, N_LOCAL, 1);
    EXPECT_NAME(&r, "i", 3, 0, N_LOCAL, 4);
    EXPECT_NAME(&r, "i", 3, 1, N_LOCAL, 4);
    EXPECT_NAME(&r, "i", 4, 0, N_UPVAL, -1);
    EXPECT_NAME(&r, "i", 4, 1, N_LOCALCELL, 5);
    EXPECT_NAME(&r, "n", 4, 0, N_UPVAL, -1);
    EXPECT_NAME(&r, "i", 5, 0, N_LOCAL, 1);
    ck_assert_int_eq(f->nlocals, 6);
    ck_assert(f->local_is_cell[5]);
    ck_assert(f->local_is_cell[0]); /* n: captured by the closure */
    ck_assert(!f->local_is_cell[1] && !f->local_is_cell[4]);
    res_free(&r);
}
END_TEST

START_TEST(comprehension_deps)
{
    Res r = analysed("xs = [1]\nys = [x * k for x in xs if x]\n");
    ck_assert_msg(r.analysed, "%s", r.diag);
    DepInfo *d = r.m->body->u.list.items[1]->dep;
    int xs = gslot(&r, "xs"), ys = gslot(&r, "ys");
    ck_assert_int_eq(d->nwrites, 1);
    ck_assert_int_eq(d->writes[0], ys);
    ck_assert(has(d->reads, d->nreads, xs));
    ck_assert_int_eq(resolve_global_slot(r.m, "x"), -1);
    res_free(&r);
}
END_TEST

START_TEST(closure_cells_and_upvals)
{
    Res r = resolved("fn outer() {\n"     /* 1 */
                     "  n = 0\n"          /* 2 */
                     "  fn inner() {\n"   /* 3 */
                     "    return n + 1\n" /* 4 */
                     "  }\n"
                     "  n = 5\n"        /* 6 */
                     "  return inner\n" /* 7 */
                     "}\n");
    FnProto *o = proto(&r, "outer"), *in = proto(&r, "inner");
    EXPECT_NAME(&r, "n", 2, 0, N_LOCALCELL, 0);
    EXPECT_NAME(&r, "n", 6, 0, N_LOCALCELL, 0);
    EXPECT_NAME(&r, "n", 4, 0, N_UPVAL, 0);
    EXPECT_NAME(&r, "inner", 3, 0, N_LOCAL, 1);
    EXPECT_NAME(&r, "inner", 7, 0, N_LOCAL, 1);
    ck_assert_int_eq(o->nlocals, 2);
    ck_assert(o->local_is_cell[0]);
    ck_assert(!o->local_is_cell[1]);
    ck_assert_int_eq(o->nupvals, 0);
    ck_assert_int_eq(in->nlocals, 0);
    ck_assert_int_eq(in->nupvals, 1);
    ck_assert(in->upvals[0].from_local);
    ck_assert_int_eq(in->upvals[0].index, 0);
    res_free(&r);
}
END_TEST

START_TEST(closure_over_param)
{
    Res r = resolved("fn adder(j, k) {\n  return fn (x) { return x + k }\n}\n");
    FnProto *a = proto(&r, "adder"), *f = proto(&r, "<anonymous>");
    EXPECT_NAME(&r, "x", 2, 0, N_LOCAL, 0);
    EXPECT_NAME(&r, "k", 2, 0, N_UPVAL, 0);
    ck_assert(!a->local_is_cell[0]);
    ck_assert(a->local_is_cell[1]);
    ck_assert_int_eq(f->nupvals, 1);
    ck_assert(f->upvals[0].from_local);
    ck_assert_int_eq(f->upvals[0].index, 1);
    res_free(&r);
}
END_TEST

START_TEST(closure_two_levels)
{
    Res r = resolved("fn a() {\n"                    /* 1 */
                     "  u = 0\n"                     /* 2 */
                     "  v = 1\n"                     /* 3 */
                     "  fn b() {\n"                  /* 4 */
                     "    w = 2\n"                   /* 5 */
                     "    fn c() { return v + w }\n" /* 6 */
                     "    return c\n"                /* 7 */
                     "  }\n"
                     "  return b\n" /* 9 */
                     "}\n");
    FnProto *pa = proto(&r, "a"), *pb = proto(&r, "b"), *pc = proto(&r, "c");
    EXPECT_NAME(&r, "u", 2, 0, N_LOCAL, 0);
    EXPECT_NAME(&r, "v", 3, 0, N_LOCALCELL, 1);
    EXPECT_NAME(&r, "w", 5, 0, N_LOCALCELL, 0);
    /* in c: v comes through b's upvalue, w from b's local */
    Node *v = name_at(&r, "v", 6, 0), *w = name_at(&r, "w", 6, 0);
    ck_assert_int_eq(v->kind, N_UPVAL);
    ck_assert_int_eq(w->kind, N_UPVAL);
    ck_assert_int_eq(pc->nupvals, 2);
    UpvalDesc dv = pc->upvals[v->u.var.slot], dw = pc->upvals[w->u.var.slot];
    ck_assert(!dv.from_local); /* b's upvalue ... */
    ck_assert_int_eq(pb->nupvals, 1);
    ck_assert_int_eq(dv.index, 0);       /* ... number 0 */
    ck_assert(pb->upvals[0].from_local); /* which is a's local v */
    ck_assert_int_eq(pb->upvals[0].index, 1);
    ck_assert(dw.from_local);
    ck_assert_int_eq(dw.index, 0); /* b's local w */
    ck_assert(!pa->local_is_cell[0]);
    ck_assert(pa->local_is_cell[1]);
    ck_assert(pb->local_is_cell[0]); /* w */
    ck_assert_int_eq(pa->nupvals, 0);
    res_free(&r);
}
END_TEST

START_TEST(closure_assignment_is_local)
{
    /* without `nonlocal`, assigning in the inner function makes a new local */
    Res r = resolved("fn outer() {\n  n = 0\n  fn inner() { n = 2\n return n }\n  return n\n}\n");
    EXPECT_NAME(&r, "n", 2, 0, N_LOCAL, 0);
    EXPECT_NAME(&r, "n", 3, 0, N_LOCAL, 0);
    EXPECT_NAME(&r, "n", 4, 0, N_LOCAL, 0);
    ck_assert_int_eq(proto(&r, "inner")->nupvals, 0);
    ck_assert(!proto(&r, "outer")->local_is_cell[0]);
    res_free(&r);
}
END_TEST

START_TEST(closure_recursive_local_fn)
{
    /* a local function calling itself names the running closure (N_SELF):
     * no cell holds it, so no reference cycle */
    Res r = resolved("fn outer() {\n  fn rec(k) { return rec(k - 1) }\n  return rec\n}\n");
    FnProto *o = proto(&r, "outer"), *rec = proto(&r, "rec");
    EXPECT_NAME(&r, "rec", 2, 1, N_SELF, 0); /* the call inside its own body */
    EXPECT_NAME(&r, "rec", 3, 0, N_LOCAL, 0);
    ck_assert_int_eq(rec->binding->kind, N_LOCAL);
    ck_assert(!o->local_is_cell[0]);
    ck_assert_int_eq(rec->nupvals, 0);
    res_free(&r);
    /* assigned again elsewhere: the name is a variable, reached through a cell */
    r = resolved("fn outer() {\n  fn rec(k) { return rec(k - 1) }\n  rec = 5\n  return rec\n}\n");
    EXPECT_NAME(&r, "rec", 2, 1, N_UPVAL, 0);
    ck_assert(proto(&r, "outer")->local_is_cell[0]);
    res_free(&r);
}
END_TEST

START_TEST(globals_are_not_captured)
{
    /* module-level names stay globals inside functions: no cells */
    Res r = resolved("g = 1\nfn f() { return fn () { return g } }\n");
    EXPECT_NAME(&r, "g", 2, 0, N_GLOBAL, gslot(&r, "g"));
    ck_assert_int_eq(proto(&r, "<anonymous>")->nupvals, 0);
    /* a global declared in the outer function is a global in the inner one too */
    res_free(&r);
    r = resolved("fn f() {\n  global h\n  h = 1\n  return fn () { return h }\n}\n");
    EXPECT_NAME(&r, "h", 4, 0, N_GLOBAL, gslot(&r, "h"));
    ck_assert_int_eq(proto(&r, "<anonymous>")->nupvals, 0);
    res_free(&r);
}
END_TEST

START_TEST(defaults_in_enclosing_scope)
{
    /* defaults are evaluated where the function is defined */
    Res r = resolved("fn f(a) {\n  return fn (x=a) { return x }\n}\n");
    EXPECT_NAME(&r, "a", 2, 0, N_LOCAL, 0);
    ck_assert_int_eq(proto(&r, "<anonymous>")->nupvals, 0);
    ck_assert(!proto(&r, "f")->local_is_cell[0]);
    res_free(&r);
}
END_TEST

/* ================================================================ builtins */

START_TEST(builtins_resolve)
{
    Res r = resolved("print(len([1]))\nfn f(xs) { return len(xs) }\n");
    int bp = builtin_lookup("print"), bl = builtin_lookup("len");
    ck_assert_int_ge(bp, 0);
    ck_assert_int_ge(bl, 0);
    ck_assert_int_eq(builtin_lookup("no_such_builtin"), -1);
    EXPECT_NAME(&r, "print", 1, 0, N_BUILTIN, bp);
    EXPECT_NAME(&r, "len", 1, 0, N_BUILTIN, bl);
    EXPECT_NAME(&r, "len", 2, 0, N_BUILTIN, bl);
    ck_assert_int_eq(resolve_global_slot(r.m, "print"), -1);
    ck_assert_int_eq(resolve_global_slot(r.m, "len"), -1);
    res_free(&r);
}
END_TEST

START_TEST(builtins_shadowed)
{
    Res r = resolved("len = 5\n"                         /* 1 */
                     "print(len)\n"                      /* 2 */
                     "fn f() { return len }\n"           /* 3 */
                     "fn g(print) { return print }\n"    /* 4 */
                     "fn h() { sum = 1\n return sum }\n" /* 5 */
                     "print(sum([1]))\n");               /* 7 */
    int gl = gslot(&r, "len");
    EXPECT_NAME(&r, "len", 1, 0, N_GLOBAL, gl);
    EXPECT_NAME(&r, "len", 2, 0, N_GLOBAL, gl);
    EXPECT_NAME(&r, "len", 3, 0, N_GLOBAL, gl);
    ck_assert_int_eq(r.m->gbuiltin[gl], builtin_lookup("len"));
    EXPECT_NAME(&r, "print", 2, 0, N_BUILTIN, builtin_lookup("print"));
    EXPECT_NAME(&r, "print", 4, 0, N_LOCAL, 0);
    EXPECT_NAME(&r, "sum", 5, 0, N_LOCAL, 0);
    EXPECT_NAME(&r, "sum", 7, 0, N_BUILTIN, builtin_lookup("sum"));
    res_free(&r);
}
END_TEST

START_TEST(builtins_shadowed_later_or_by_fn)
{
    /* an assignment later in the file shadows for every read */
    Res r = resolved("print(abs(-1))\nfn abs(v) { return v }\nx = max\nmax = 3\n");
    int ga = gslot(&r, "abs"), gm = gslot(&r, "max");
    EXPECT_NAME(&r, "abs", 1, 0, N_GLOBAL, ga);
    EXPECT_NAME(&r, "abs", 2, 0, N_GLOBAL, ga);
    EXPECT_NAME(&r, "max", 3, 0, N_GLOBAL, gm);
    ck_assert_int_eq(r.m->gbuiltin[ga], builtin_lookup("abs"));
    ck_assert_int_eq(r.m->gbuiltin[gm], builtin_lookup("max"));
    ck_assert_int_eq(r.m->gbuiltin[gslot(&r, "x")], -1);
    res_free(&r);
}
END_TEST

/* A builtin's name assigned as a global inside a function (`global len`)
 * is a module global like any other: every read of it in the file is the
 * global (which starts as the builtin), whatever the order of the lines. */
START_TEST(builtins_shadowed_by_global_decl)
{
    Res r = resolved("fn setit() {\n  global len\n  len = 5\n}\nprint(len([1]))\n");
    int g = gslot(&r, "len");
    EXPECT_NAME(&r, "len", 3, 0, N_GLOBAL, g);
    EXPECT_NAME(&r, "len", 5, 0, N_GLOBAL, g);
    ck_assert_int_eq(r.m->gbuiltin[g], builtin_lookup("len"));
    res_free(&r);
    /* the same with the read first */
    r = resolved("print(len([1]))\nfn setit() {\n  global len\n  len = 5\n}\n");
    g = gslot(&r, "len");
    EXPECT_NAME(&r, "len", 4, 0, N_GLOBAL, g);
    EXPECT_NAME(&r, "len", 1, 0, N_GLOBAL, g);
    res_free(&r);
}
END_TEST

START_TEST(unbound_warning)
{
    Res r = run("x = 1\nprint(zz + x)\nfn f() { return yy }\nprint(zz)\n", false, true);
    ck_assert(r.resolved);
    ck_assert_msg(strstr(r.diag, "t.qh:2:7: warning: name 'zz' is never bound in this file") !=
                      NULL,
                  "%s", r.diag);
    ck_assert_msg(strstr(r.diag, "t.qh:3:17: warning: name 'yy' is never bound in this file") !=
                      NULL,
                  "%s", r.diag);
    ck_assert_msg(strstr(r.diag, ":4:") == NULL, "warned twice about zz: %s", r.diag);
    ck_assert_msg(strstr(r.diag, "'x'") == NULL && strstr(r.diag, "'print'") == NULL, "%s", r.diag);
    res_free(&r);
    /* bound through `global` in a function: no warning */
    r = run("fn f() { global g\n g = 1 }\nprint(g)\n", false, true);
    ck_assert(r.resolved);
    ck_assert_msg(r.diag[0] == 0, "%s", r.diag);
    res_free(&r);
}
END_TEST

/* A very long flat expression makes a deep (left-leaning) tree; resolving it
 * must not overflow the C stack (either it resolves, or the parser refuses
 * it with an error). */
START_TEST(long_chain_no_crash)
{
    enum { N = 300000 };
    char *src = malloc(N * 4 + 32), *o = src;
    o += sprintf(o, "x = 1");
    for (int i = 1; i < N; i++) o += sprintf(o, " + 1");
    *o++ = '\n';
    *o = 0;
    qh_init();
    Source *s = source_from_text("t.qh", src, strlen(src));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ModInfo *m = parse_source(s, f);
    if (m) {
        bool ok = resolve_module(m, m->body, builtin_lookup, f, false);
        ck_assert(ok);
        ck_assert(analyse_module(m, f));
        analyse_free_body(m->body);
        parse_free(m);
    } else {
        fflush(f);
        ck_assert_msg(strstr(buf, "error") != NULL, "no diagnostic");
    }
    fclose(f);
    free(buf);
    source_free(s);
    free(src);
}
END_TEST

/* ================================================================ analysis: purity */

START_TEST(pure_and_impure_fns)
{
    Res r = analysed("count = 0\n"                                    /* 1 */
                     "fn sq(v) { return v * v }\n"                    /* 2 */
                     "fn bump() {\n  global count\n  count += 1\n}\n" /* 3-6 */
                     "fn say(x) { print(x) }\n"                       /* 7 */
                     "fn ask() { return input() }\n"                  /* 8 */
                     "fn uses_sq(a) { return sq(a) + count }\n"       /* 9 */
                     "fn uses_say() { say(1) }\n"                     /* 10 */
                     "fn imp() { import optimize }\n"                 /* 11 */
                     "fn local_ok() { t = 1\n t += 2\n return t }\n");
    ck_assert_msg(r.analysed, "%s", r.diag);
    ck_assert_msg(r.diag[0] == 0, "%s", r.diag);
    FnProto *sq = proto(&r, "sq");
    ck_assert(sq->analysed);
    ck_assert(sq->pure);
    FnProto *bump = proto(&r, "bump");
    ck_assert(!bump->pure);
    ck_assert_str_eq(bump->impure_why, "assigns the global variable");
    ck_assert_int_eq(bump->impure_line, 5);
    FnProto *say = proto(&r, "say");
    ck_assert(!say->pure);
    ck_assert_str_eq(say->impure_why, "prints");
    ck_assert_int_eq(say->impure_line, 7);
    ck_assert_int_eq(say->impure_col, 13);
    ck_assert(!proto(&r, "ask")->pure);
    ck_assert_str_eq(proto(&r, "ask")->impure_why, "reads input");
    FnProto *u = proto(&r, "uses_sq");
    ck_assert(u->pure); /* reading a global is pure */
    ck_assert(has(u->global_reads, u->nglobal_reads, gslot(&r, "count")));
    ck_assert(has(u->global_calls, u->nglobal_calls, gslot(&r, "sq")));
    ck_assert(!proto(&r, "uses_say")->pure); /* through the call */
    ck_assert(!proto(&r, "imp")->pure);
    ck_assert_str_eq(proto(&r, "imp")->impure_why, "imports a module");
    ck_assert(proto(&r, "local_ok")->pure);
    res_free(&r);
}
END_TEST

START_TEST(qfn_that_prints_is_rejected)
{
    Res r = analysed("dev = 1\nqfn q(x) on dev {\n  y = x\n  print(y)\n  return y\n}\n");
    ck_assert(!r.analysed);
    ck_assert_msg(strstr(r.diag,
                         "t.qh:4:3: error: quantum function 'q' prints: a qfn body may not print, "
                         "read input, read or write files, import or assign globals") != NULL,
                  "%s", r.diag);
    ck_assert_msg(strstr(r.diag, "    4 |   print(y)") != NULL, "%s", r.diag);
    res_free(&r);
}
END_TEST

START_TEST(qfn_other_impurities)
{
    Res r = analysed("g = 0\nqfn q() {\n  global g\n  g = 1\n}\n");
    ck_assert(!r.analysed);
    ck_assert_msg(
        strstr(r.diag, "t.qh:4:3: error: quantum function 'q' assigns the global variable") != NULL,
        "%s", r.diag);
    res_free(&r);
    r = analysed("qfn q() {\n  import optimize\n}\n");
    ck_assert(!r.analysed);
    ck_assert_msg(strstr(r.diag, "t.qh:2:3: error: quantum function 'q' imports a module") != NULL,
                  "%s", r.diag);
    res_free(&r);
    r = analysed("qfn q() { return input() }\n");
    ck_assert(!r.analysed);
    ck_assert_msg(strstr(r.diag, "t.qh:1:18: error: quantum function 'q' reads input") != NULL,
                  "%s", r.diag);
    res_free(&r);
}
END_TEST

START_TEST(qfn_calling_impure_fn_is_rejected)
{
    Res r = analysed("fn say(x) { print(x) }\nqfn q() {\n  say(1)\n}\n");
    ck_assert(!r.analysed);
    ck_assert_msg(
        strstr(r.diag,
               "t.qh:2:1: error: quantum function 'q' calls 'say', which prints, reads input, "
               "reads or writes files, imports or assigns globals") != NULL,
        "%s", r.diag);
    res_free(&r);
    /* through a chain of calls, defined in any order */
    r = analysed("qfn q() { b() }\nfn b() { return a() }\nfn a() { print(1) }\n");
    ck_assert(!r.analysed);
    ck_assert_msg(strstr(r.diag, "t.qh:1:1: error: quantum function 'q' calls 'b'") != NULL, "%s",
                  r.diag);
    ck_assert(!proto(&r, "b")->pure);
    res_free(&r);
}
END_TEST

START_TEST(qfn_accepted)
{
    Res r =
        analysed("k = 2\n"
                 "fn sq(v) { return v * v }\n"
                 "qfn inner(x) { return sq(x) + k }\n"
                 "qfn outer(y) {\n  t = inner(y)\n  for i in range(3) { t += i }\n  return t\n}\n"
                 "z = outer(1)\n");
    ck_assert_msg(r.analysed, "%s", r.diag);
    ck_assert_msg(r.diag[0] == 0, "%s", r.diag);
    FnProto *in = proto(&r, "inner");
    ck_assert(in->pure);
    ck_assert(in->is_qfn);
    ck_assert(has(in->global_reads, in->nglobal_reads, gslot(&r, "k"))); /* taken along */
    ck_assert(proto(&r, "outer")->pure);
    res_free(&r);
}
END_TEST

/* A function defined inside a qfn body is part of that body: if it prints
 * and the qfn calls it, the qfn prints (lang/quantum.md). */
START_TEST(qfn_with_printing_closure_is_rejected)
{
    Res r = analysed("qfn q() {\n  f = fn () { print(1) }\n  f()\n}\n");
    ck_assert_msg(!r.analysed, "accepted a qfn whose closure prints");
    ck_assert_msg(strstr(r.diag, "quantum function 'q'") != NULL, "%s", r.diag);
    res_free(&r);
    r = analysed("qfn q() {\n  fn inner() { print(1) }\n  inner()\n}\n");
    ck_assert_msg(!r.analysed, "accepted a qfn whose nested fn prints");
    ck_assert_msg(strstr(r.diag, "quantum function 'q'") != NULL, "%s", r.diag);
    res_free(&r);
}
END_TEST

/* ================================================================ analysis: dependencies */

START_TEST(deps_of_statements)
{
    Res r = analysed("qfn circuit(p) { return p }\n" /* 0 */
                     "x = circuit(1)\n"              /* 1 */
                     "y = x + 1\n"                   /* 2 */
                     "z = circuit(x)\n"              /* 3 */
                     "print(y)\n"                    /* 4 */
                     "xs = [1]\n"                    /* 5 */
                     "xs[0] = y\n");                 /* 6 */
    ck_assert_msg(r.analysed, "%s", r.diag);
    int c = gslot(&r, "circuit"), x = gslot(&r, "x"), y = gslot(&r, "y"), z = gslot(&r, "z"),
        xs = gslot(&r, "xs");
    Node **st = r.m->body->u.list.items;
    for (int i = 0; i < r.m->body->u.list.n; i++) ck_assert_ptr_nonnull(st[i]->dep);

    DepInfo *d = st[0]->dep;
    ck_assert_int_eq(d->nwrites, 1);
    ck_assert_int_eq(d->writes[0], c);
    ck_assert_int_eq(d->nqcalls, 0);

    d = st[1]->dep; /* x = circuit(1) */
    ck_assert_int_eq(d->nwrites, 1);
    ck_assert_int_eq(d->writes[0], x);
    ck_assert_int_eq(d->nqcalls, 1);
    ck_assert_int_eq(d->qcalls[0], c);
    ck_assert(!has(d->reads, d->nreads, x));
    ck_assert(!d->impure);

    d = st[2]->dep; /* y = x + 1 */
    ck_assert_int_eq(d->nwrites, 1);
    ck_assert_int_eq(d->writes[0], y);
    ck_assert_int_eq(d->nreads, 1);
    ck_assert_int_eq(d->reads[0], x);
    ck_assert_int_eq(d->nqcalls, 0);
    ck_assert_int_eq(d->npasses, 0);

    d = st[3]->dep; /* z = circuit(x): x only passed on */
    ck_assert_int_eq(d->nwrites, 1);
    ck_assert_int_eq(d->writes[0], z);
    ck_assert_int_eq(d->nqcalls, 1);
    ck_assert(!has(d->reads, d->nreads, x));
    ck_assert_int_eq(d->npasses, 1);
    ck_assert_int_eq(d->passes[0], x);

    d = st[4]->dep; /* print(y) */
    ck_assert(d->impure);
    ck_assert(has(d->reads, d->nreads, y));
    ck_assert_int_eq(d->nwrites, 0);

    d = st[6]->dep; /* xs[0] = y: writes and reads xs; y is only stored */
    ck_assert(has(d->writes, d->nwrites, xs));
    ck_assert(has(d->reads, d->nreads, xs));
    ck_assert(!has(d->reads, d->nreads, y));
    ck_assert(has(d->passes, d->npasses, y));
    res_free(&r);
}
END_TEST

START_TEST(deps_print)
{
    Res r = analysed("qfn circuit(p) { return p }\nx = circuit(1)\ny = x + 1\n");
    ck_assert(r.analysed);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    analyse_print_deps(r.m, r.m->body, f);
    fclose(f);
    ck_assert_msg(strstr(buf, "qfn circuit (line 1): pure; takes along: nothing\n") != NULL, "%s",
                  buf);
    ck_assert_msg(strstr(buf, "line 2: dispatches circuit(); writes x\n") != NULL, "%s", buf);
    ck_assert_msg(strstr(buf, "line 3: writes y; reads x\n") != NULL, "%s", buf);
    ck_assert_msg(strstr(buf, "line 3 waits for circuit() from line 2 (via x)\n") != NULL, "%s",
                  buf);
    free(buf);
    res_free(&r);
}
END_TEST

static Suite *resolve_suite(void)
{
    Suite *s = suite_create("resolve");
    TCase *tc = tcase_create("globals");
    tcase_add_test(tc, toplevel_globals);
    tcase_add_test(tc, read_before_assignment_is_global);
    tcase_add_test(tc, declare_and_slot);
    suite_add_tcase(s, tc);

    tc = tcase_create("locals");
    tcase_add_test(tc, params_and_locals);
    tcase_add_test(tc, assigned_anywhere_is_local);
    tcase_add_test(tc, nlocals_counts);
    tcase_add_test(tc, global_declaration);
    tcase_add_test(tc, global_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("closures");
    tcase_add_test(tc, closure_cells_and_upvals);
    tcase_add_test(tc, comprehension_scope_top);
    tcase_add_test(tc, comprehension_scope_fn);
    tcase_add_test(tc, comprehension_deps);
    tcase_add_test(tc, closure_over_param);
    tcase_add_test(tc, closure_two_levels);
    tcase_add_test(tc, closure_assignment_is_local);
    tcase_add_test(tc, closure_recursive_local_fn);
    tcase_add_test(tc, globals_are_not_captured);
    tcase_add_test(tc, defaults_in_enclosing_scope);
    suite_add_tcase(s, tc);

    tc = tcase_create("builtins");
    tcase_add_test(tc, builtins_resolve);
    tcase_add_test(tc, builtins_shadowed);
    tcase_add_test(tc, builtins_shadowed_later_or_by_fn);
    tcase_add_test(tc, builtins_shadowed_by_global_decl);
    tcase_add_test(tc, unbound_warning);
    tcase_add_test(tc, long_chain_no_crash);
    suite_add_tcase(s, tc);

    tc = tcase_create("analyse");
    tcase_add_test(tc, pure_and_impure_fns);
    tcase_add_test(tc, qfn_that_prints_is_rejected);
    tcase_add_test(tc, qfn_other_impurities);
    tcase_add_test(tc, qfn_calling_impure_fn_is_rejected);
    tcase_add_test(tc, qfn_accepted);
    tcase_add_test(tc, qfn_with_printing_closure_is_rejected);
    tcase_add_test(tc, deps_of_statements);
    tcase_add_test(tc, deps_print);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(resolve_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
