/* grad.c — derivatives of whole programs (lang/quantum.md, "Gradients"):
 * the builtins grad, jacobian, hessian and metric_tensor, the kind of the
 * functions they return, and evaluating them. A call of such a function is
 * dispatched like a qfn call (a task, a future); its body evaluates f once
 * with the differentiated arguments replaced by tracked values (track.h),
 * so every operation the evaluation performs records onto a tape; qfn calls
 * made with tracked arguments become Jacobian nodes computed on the
 * workers (diffq.h); one backward sweep per output gives the derivatives.
 * hessian differentiates the exact gradient by central differences.
 * Knows values, the evaluator's call binding, async dispatch, arrays, the
 * tape, the tracked kinds and the quantum side's interface.
 */
#include "grad.h"
#include "array.h"
#include "arrayval.h"
#include "async.h"
#include "diffq.h"
#include "eval.h"
#include "qh_assert.h"
#include "track.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGNUMS 16

typedef enum DKind { D_GRAD, D_JAC, D_HESS, D_METRIC, D_NKINDS } DKind;
static const char *const kind_names[D_NKINDS] = { "grad", "jacobian", "hessian", "metric_tensor" };
/* the future's label prefix: static (a future keeps the pointer) */
static const char *const kind_prefix[D_NKINDS] = { "grad ", "jacobian ", "hessian ",
                                                   "metric_tensor " };
static const char *const method_names[GRAD_NMETHODS] = {
    [GRAD_ADJOINT] = "adjoint",
    [GRAD_SHIFT] = "parameter-shift",
    [GRAD_FD] = "finite-diff",
};

/* What a derivative function computes (also the task body's argument). */
typedef struct DSpec {
    DKind kind;
    int nargnum;
    int argnum[MAX_ARGNUMS];
    bool argnum_list; /* argnum= was a list: one result per position */
    GradMethod method;
    bool method_given; /* method= was given (else adjoint where it can run) */
    bool diag;         /* metric_tensor(approx="diag") */
} DSpec;

typedef struct ObjGrad {
    Obj h;
    Value f;
    DSpec s;
} ObjGrad;
#define AS_GRAD(v) ((ObjGrad *)(v).o)

/* ---------------------------------------------------------------- the function kind */

static void gfn_free(Obj *o)
{
    decref(((ObjGrad *)o)->f);
    free(o);
}
static void gfn_clear(Obj *o)
{
    ObjGrad *g = (ObjGrad *)o;
    Value f = g->f;
    g->f = v_nil();
    decref(f);
}
static void gfn_traverse(Obj *o, void (*visit)(Value, void *), void *ud)
{
    visit(((ObjGrad *)o)->f, ud);
}

static void gfn_repr(Buf *b, Value v, bool quoted)
{
    (void)quoted;
    ObjGrad *g = AS_GRAD(v);
    if (g->f.t != T_FUNC) {
        buf_printf(b, "<%s>", kind_names[g->s.kind]);
        return;
    }
    buf_printf(b, "<%s of %s, argnum=", kind_names[g->s.kind], AS_FUNC(g->f)->p->name);
    if (g->s.argnum_list) {
        buf_putc(b, '[');
        for (int i = 0; i < g->s.nargnum; i++) buf_printf(b, "%s%d", i ? ", " : "", g->s.argnum[i]);
        buf_putc(b, ']');
    } else {
        buf_printf(b, "%d", g->s.argnum[0]);
    }
    if (g->s.kind == D_METRIC)
        buf_printf(b, ", approx=\"%s\">", g->s.diag ? "diag" : "block-diag");
    else
        buf_printf(b, ", method=\"%s\">", method_names[g->s.method]);
}

static Value gfn_copy(Value v, CopyCtx *cc)
{
    ObjGrad *g = AS_GRAD(v), *n = (ObjGrad *)obj_alloc(sizeof(ObjGrad), T_GRADFN);
    copy_memo_put(cc, g, n);
    n->s = g->s;
    n->f = value_copy_deep(g->f, cc);
    return v_obj(&n->h);
}

/* grad(f, argnum=0, method="adjoint") and its siblings */
static Value make_dfn(VM *vm, Args *a, DKind kind)
{
    const char *who = kind_names[kind];
    Value f = a->v[0];
    if (f.t == T_BUILTIN)
        return vm_error(
            vm, a->site,
            "%s() cannot differentiate the builtin %s() itself: wrap it, fn(x) { return %s(x) }",
            who, f.bi->name, f.bi->name);
    if (f.t != T_FUNC)
        return vm_error(vm, a->site, "%s() needs a function (fn or qfn), not %s", who,
                        type_name(f));
    FnProto *p = AS_FUNC(f)->p;
    if (kind == D_METRIC && (!p->is_qfn || AS_FUNC(f)->device.t != T_DEVICE))
        return vm_error(
            vm, a->site,
            "metric_tensor() needs a quantum function with a device (qfn ... on DEVICE)");
    if (!p->pure) {
        const char *why = p->impure_why ? p->impure_why : "has side effects";
        return vm_error(
            vm, a->site,
            "%s(): %s() %s (line %d); a differentiated function runs as a task and must not "
            "print, read input, import or assign globals",
            who, p->name, why, p->impure_line);
    }
    DSpec s;
    memset(&s, 0, sizeof s);
    s.kind = kind;
    s.method = GRAD_ADJOINT;
    Value *an = arg_kw(a, "argnum"), *m = arg_kw(a, "method"), *ap = arg_kw(a, "approx");
    if (an && an->t == T_LIST) {
        ObjList *l = AS_LIST(*an);
        if (l->len == 0 || l->len > MAX_ARGNUMS)
            return vm_error(vm, a->site, "%s(): argnum= needs 1 to %d positions", who, MAX_ARGNUMS);
        s.argnum_list = true;
        s.nargnum = (int)l->len;
        for (size_t i = 0; i < l->len; i++) {
            Value x = l->v[i];
            if (x.t != T_NUM || x.n != floor(x.n) || x.n < 0 || x.n > 1e6)
                return vm_error(vm, a->site, "%s(): argnum must be non-negative integers", who);
            s.argnum[i] = (int)x.n;
            for (size_t j = 0; j < i; j++)
                if (s.argnum[j] == s.argnum[i])
                    return vm_error(vm, a->site, "%s(): argnum %d given twice", who, s.argnum[i]);
        }
    } else if (an) {
        if (an->t != T_NUM || an->n != floor(an->n) || an->n < 0 || an->n > 1e6)
            return vm_error(vm, a->site,
                            "%s(): argnum must be a non-negative integer or a list of them", who);
        s.nargnum = 1;
        s.argnum[0] = (int)an->n;
    } else {
        if (p->nparams == 0)
            return vm_error(vm, a->site, "%s(): %s() has no parameters to differentiate", who,
                            p->name);
        s.nargnum = 1;
    }
    for (int i = 0; i < s.nargnum; i++)
        if (s.argnum[i] >= p->nparams)
            return vm_error(vm, a->site, "%s(): argnum=%d but %s() has %d parameter%s", who,
                            s.argnum[i], p->name, p->nparams, p->nparams == 1 ? "" : "s");
    if ((kind == D_HESS) && s.argnum_list)
        return vm_error(vm, a->site, "hessian(): argnum must be one position");
    if (m) {
        if (kind == D_METRIC)
            return vm_error(vm, a->site,
                            "metric_tensor() got an unexpected keyword argument 'method'");
        if (m->t != T_STR) return vm_error(vm, a->site, "%s(): method must be a string", who);
        int k;
        for (k = 0; k < GRAD_NMETHODS; k++)
            if (strcmp(AS_STR(*m)->s, method_names[k]) == 0) break;
        if (k == GRAD_NMETHODS)
            return vm_error(
                vm, a->site,
                "%s(): unknown method \"%.40s\" (adjoint, parameter-shift, finite-diff)", who,
                AS_STR(*m)->s);
        s.method = (GradMethod)k;
        s.method_given = true;
    }
    if (ap) {
        if (ap->t != T_STR ||
            (strcmp(AS_STR(*ap)->s, "block-diag") != 0 && strcmp(AS_STR(*ap)->s, "diag") != 0))
            return vm_error(vm, a->site,
                            "metric_tensor(): approx must be \"block-diag\" or \"diag\"");
        s.diag = strcmp(AS_STR(*ap)->s, "diag") == 0;
    }
    ObjGrad *g = (ObjGrad *)obj_alloc(sizeof(ObjGrad), T_GRADFN);
    g->f = f;
    incref(f);
    g->s = s;
    return v_obj(&g->h);
}

static Value bi_grad(VM *vm, Args *a) { return make_dfn(vm, a, D_GRAD); }
static Value bi_jacobian(VM *vm, Args *a) { return make_dfn(vm, a, D_JAC); }
static Value bi_hessian(VM *vm, Args *a) { return make_dfn(vm, a, D_HESS); }
static Value bi_metric(VM *vm, Args *a) { return make_dfn(vm, a, D_METRIC); }

/* ---------------------------------------------------------------- inputs and outputs */

/* The structure of one differentiated argument: a number, an array, or a
 * list or dict of those (nested: PennyLane's (weights, bias)), with its
 * tape nodes and its place in the flat input. */
typedef struct Leaf {
    enum { L_NUM, L_ARR, L_LIST, L_DICT } kind;
    AdNode node;
    int ndim;
    size_t shape[AR_MAXDIM];
    size_t size, off; /* scalars, and the first one's flat position */
    int nkids;
    struct Leaf *kids;
    Value *keys; /* L_DICT: the key of each kid, in the dict's order (held) */
} Leaf;

static void leaf_free(Leaf *L)
{
    for (int i = 0; i < L->nkids; i++) {
        leaf_free(&L->kids[i]);
        if (L->keys) decref(L->keys[i]);
    }
    free(L->kids);
    free(L->keys);
    L->kids = NULL;
    L->keys = NULL;
    L->nkids = 0;
}

/* A list of numbers only (no arrays, lists or dicts inside): a Jacobian
   treats it as a 1-d array, as before structured arguments. */
static bool leaf_flat_list(const Leaf *L)
{
    if (L->kind != L_LIST) return false;
    for (int i = 0; i < L->nkids; i++)
        if (L->kids[i].kind != L_NUM) return false;
    return true;
}

/* The differentiated argument a structure is read from, as its error
   names it: argument argnum of fname(), at site. */
typedef struct LeafArg {
    const char *fname;
    int argnum;
    const Node *site;
} LeafArg;

/* The structure and plain values of argument v (no tape yet): x gets the
 * flat values. */
static bool leaf_shape(VM *vm, Value v, Leaf *L, size_t *off, double **x, size_t *cap,
                       const LeafArg *who)
{
    memset(L, 0, sizeof *L);
    L->off = *off;
    size_t n = 0;
    const double *src = NULL;
    double one;
    if (v.t == T_NUM || v.t == T_BOOL) {
        L->kind = L_NUM;
        one = v.t == T_NUM ? v.n : v.b;
        src = &one;
        n = 1;
    } else if (v.t == T_ARRAY && !ar_is_complex(AS_ARR(v))) {
        L->kind = L_ARR;
        L->ndim = ar_ndim(AS_ARR(v));
        memcpy(L->shape, ar_shape(AS_ARR(v)), (size_t)L->ndim * sizeof(size_t));
        src = ar_f64_ro(AS_ARR(v));
        n = ar_size(AS_ARR(v));
    } else if (v.t == T_LIST) {
        ObjList *l = AS_LIST(v);
        L->kind = L_LIST;
        L->nkids = (int)l->len;
        L->kids = xcalloc(l->len + 1, sizeof(Leaf));
        for (size_t i = 0; i < l->len; i++)
            if (!leaf_shape(vm, l->v[i], &L->kids[i], off, x, cap, who)) return false;
        L->size = *off - L->off;
        return true;
    } else if (v.t == T_DICT) {
        ObjDict *d = AS_DICT(v);
        L->kind = L_DICT;
        L->kids = xcalloc(d->len + 1, sizeof(Leaf));
        L->keys = xcalloc(d->len + 1, sizeof(Value));
        for (size_t i = 0; i < d->nent; i++) {
            if (!d->ent[i].live) continue;
            int k = L->nkids++;
            L->keys[k] = d->ent[i].key;
            incref(L->keys[k]);
            if (!leaf_shape(vm, d->ent[i].val, &L->kids[k], off, x, cap, who)) return false;
        }
        L->size = *off - L->off;
        return true;
    } else {
        vm_error(vm, who->site,
                 "argument %d of %s() must be a number, a float array or a list or dict of "
                 "them to be differentiated, not %s",
                 who->argnum, who->fname, v.t == T_ARRAY ? "a complex array" : type_name(v));
        return false;
    }
    if (*off + n > *cap) {
        while (*off + n > *cap) *cap = *cap ? *cap * 2 : 16;
        *x = xrealloc(*x, *cap * sizeof(double));
    }
    if (n) memcpy(*x + *off, src, n * sizeof(double));
    L->size = n;
    *off += n;
    return true;
}

/* A value with the structure of L and the values x (flat): tracked, as new
 * inputs on vm's tape (L keeps their nodes), or plain numbers and arrays. */
static Value leaf_build(VM *vm, Leaf *L, const double *x, const Node *site, bool tracked)
{
    switch (L->kind) {
    case L_NUM:
        if (!tracked) return v_num(x[L->off]);
        L->node = ad_input(vm->ad->tape, 0, NULL);
        return track_num(vm, x[L->off], L->node, site);
    case L_ARR: {
        char err[AR_ERRLEN];
        Array *a = ar_from_data(AR_F64, L->ndim, L->shape, x + L->off, err);
        if (!a) return vm_error(vm, site, "%s", err);
        if (!tracked) return arr_wrap(a);
        L->node = ad_input(vm->ad->tape, L->ndim, L->shape);
        return track_arr(vm, a, L->node, site);
    }
    case L_LIST: {
        ObjList *l = list_new((size_t)L->nkids);
        Value lv = v_list(l);
        for (int i = 0; i < L->nkids; i++) {
            Value e = leaf_build(vm, &L->kids[i], x, site, tracked);
            if (IS_EXC(e)) {
                decref(lv);
                return e;
            }
            l->v[l->len++] = e;
        }
        return lv;
    }
    case L_DICT: {
        ObjDict *d = dict_new_sized((size_t)L->nkids);
        Value dv = v_obj(&d->h);
        for (int i = 0; i < L->nkids; i++) {
            Value e = leaf_build(vm, &L->kids[i], x, site, tracked);
            if (IS_EXC(e)) {
                decref(dv);
                return e;
            }
            dict_set(d, L->keys[i], e);
            decref(e);
        }
        return dv;
    }
    }
    qh_unreachable();
}

/* The inputs' adjoints, flat (L->size values at out + L->off). */
static void leaf_adjoint(const Leaf *L, AdGrad *g, double *out)
{
    if (L->kind == L_LIST || L->kind == L_DICT) {
        for (int i = 0; i < L->nkids; i++) leaf_adjoint(&L->kids[i], g, out);
        return;
    }
    const double *a = ad_adjoint(g, L->node);
    for (size_t i = 0; i < L->size; i++) out[L->off + i] = a ? a[i] : 0;
}


/* The shape a leaf contributes to a Jacobian or Hessian: its own for a
 * number or an array, the flat length for a list. */
static int leaf_dims(const Leaf *L, size_t *shape)
{
    if (L->kind == L_NUM) return 0;
    if (L->kind == L_ARR) {
        memcpy(shape, L->shape, (size_t)L->ndim * sizeof(size_t));
        return L->ndim;
    }
    shape[0] = L->size;
    return 1;
}

/* ---------------------------------------------------------------- one recorded evaluation */

typedef struct Eval {
    int nin;
    Leaf leaf[MAX_ARGNUMS];
    double *x; /* flat input values (all differentiated arguments) */
    size_t n;
    AdCtx *ctx;
    Value out; /* f's result on the tape */
} Eval;

static void eval_free(VM *vm, Eval *e)
{
    decref(e->out);
    e->out = v_nil();
    if (e->ctx) {
        if (e->ctx->dq) diffq_free(e->ctx->dq);
        track_end(vm, e->ctx);
    }
    e->ctx = NULL;
    for (int i = 0; i < e->nin; i++) leaf_free(&e->leaf[i]);
    free(e->x);
    e->x = NULL;
}

/* The structures of the differentiated arguments and their values. */
static bool eval_inputs(VM *vm, ObjFunc *f, Value *params, const DSpec *s, Eval *e,
                        const Node *site)
{
    memset(e, 0, sizeof *e);
    e->out = v_nil();
    size_t cap = 0;
    e->nin = s->nargnum;
    for (int i = 0; i < s->nargnum; i++) {
        Value v = tp_force(vm, params[s->argnum[i]], site);
        if (IS_EXC(v)) {
            e->nin = i;
            return false;
        }
        LeafArg who = { f->p->name, s->argnum[i], site };
        bool ok = leaf_shape(vm, v, &e->leaf[i], &e->n, &e->x, &cap, &who);
        decref(v);
        if (!ok) {
            e->nin = i + 1;
            return false;
        }
    }
    return true;
}

/* f on the tape at inputs x (e->x when x is NULL): e->out, or false. */
static bool eval_record(VM *vm, ObjFunc *f, Value *params, const DSpec *s, Eval *e, const double *x,
                        const Node *site)
{
    if (!x) x = e->x;
    e->ctx = track_begin(vm);
    if (!e->ctx) {
        vm_error(vm, site, "grad: out of memory");
        return false;
    }
    e->ctx->dq = diffq_new(vm, s->method, !s->method_given);
    FnProto *p = f->p;
    size_t base = vm->sp;
    if (base + (size_t)p->nlocals + 8 >= vm->cap) {
        vm_error(vm, site, "maximum recursion depth exceeded (value stack full)");
        return false;
    }
    Value *fr = vm->stack + base;
    for (int i = 0; i < p->nlocals; i++) {
        fr[i] = params[i];
        incref(fr[i]);
    }
    vm->sp = base + (size_t)p->nlocals;
    for (int i = 0; i < s->nargnum; i++) {
        Value t = leaf_build(vm, &e->leaf[i], x, site, true);
        if (IS_EXC(t)) {
            for (int k = 0; k < p->nlocals; k++) decref(fr[k]);
            vm->sp = base;
            return false;
        }
        decref(fr[s->argnum[i]]);
        fr[s->argnum[i]] = t;
    }
    Value r;
    if (p->is_qfn)
        r = vm->in->hooks.qfn_call(vm, f, fr, site);
    else
        r = eval_run_body(vm, f, fr, site);
    vm->sp = base;
    if (IS_EXC(r)) return false;
    /* the result and the quantum calls' results inside its lists and dicts
       forced now: each call's Jacobian node exists before diffq_finish
       fills them ([c(p[0]), c(p[1])] holds two pending results) */
    if (!tp_force_args(vm, &r, 1, site, NULL, true)) {
        decref(r);
        return false;
    }
    e->out = r;
    /* the Jacobians of its quantum calls, before any sweep */
    if (e->ctx->dq && !diffq_finish(e->ctx->dq, vm, site)) return false;
    return true;
}

/* The scalars of a result: (node, position) pairs and the result's shape
 * (a number: ndim 0). Plain numbers count with node AD_NONE. */
typedef struct Outs {
    AdNode *node;
    size_t *pos;
    size_t n, cap;
    int ndim;
    size_t shape[AR_MAXDIM];
} Outs;

static bool outs_add(Outs *o, AdNode n, size_t p)
{
    if (o->n == o->cap) {
        /* each block replaced only when its realloc succeeds (the caller frees both) */
        size_t cap = o->cap ? o->cap * 2 : 16;
        AdNode *node = realloc(o->node, cap * sizeof(AdNode));
        if (node) o->node = node;
        size_t *pos = node ? realloc(o->pos, cap * sizeof(size_t)) : NULL;
        if (!pos) return false;
        o->pos = pos;
        o->cap = cap;
    }
    o->node[o->n] = n;
    o->pos[o->n++] = p;
    return true;
}

static bool outs_walk(VM *vm, Value v, int depth, Outs *o, const char *fname, const Node *site)
{
    if (is_lazy(v)) {
        Value r = tp_force(vm, v, site);
        if (IS_EXC(r)) return false;
        bool ok = outs_walk(vm, r, depth, o, fname, site);
        decref(r);
        return ok;
    }
    if (v.t == T_LIST) {
        ObjList *l = AS_LIST(v);
        if (depth >= AR_MAXDIM) {
            vm_error(vm, site, "jacobian: %s() returned lists nested too deeply", fname);
            return false;
        }
        if (depth == o->ndim && o->n == 0) {
            o->ndim = depth + 1;
            o->shape[depth] = l->len;
        } else if (depth >= o->ndim || o->shape[depth] != l->len) {
            vm_error(vm, site, "jacobian: %s() returned ragged lists", fname);
            return false;
        }
        for (size_t i = 0; i < l->len; i++)
            if (!outs_walk(vm, l->v[i], depth + 1, o, fname, site)) return false;
        return true;
    }
    const Array *A = NULL;
    AdNode an = AD_NONE;
    if (v.t == T_ARRAY)
        A = AS_ARR(v);
    else if (track_is_arr(v)) {
        A = track_array(v);
        an = track_node(v);
    }
    if (A) {
        if (ar_is_complex(A)) {
            vm_error(vm, site, "jacobian: %s() returned a complex array", fname);
            return false;
        }
        int nd = ar_ndim(A);
        if (depth == o->ndim && o->n == 0) {
            if (depth + nd > AR_MAXDIM) {
                vm_error(vm, site, "jacobian: result has too many dimensions");
                return false;
            }
            for (int i = 0; i < nd; i++) o->shape[depth + i] = ar_shape(A)[i];
            o->ndim = depth + nd;
        } else {
            bool same = o->ndim == depth + nd;
            for (int i = 0; same && i < nd; i++) same = o->shape[depth + i] == ar_shape(A)[i];
            if (!same) {
                vm_error(vm, site, "jacobian: %s() returned ragged results", fname);
                return false;
            }
        }
        for (size_t i = 0; i < ar_size(A); i++)
            if (!outs_add(o, an, i)) return false;
        return true;
    }
    double x;
    AdNode n;
    bool err;
    if (!track_number(vm, v, &x, &n, site, &err)) {
        if (!err)
            vm_error(vm, site,
                     "jacobian: %s() must return numbers, a list or an array of them, not %s",
                     fname, type_name(v));
        return false;
    }
    if (depth != o->ndim) {
        vm_error(vm, site, "jacobian: %s() returned ragged results", fname);
        return false;
    }
    return outs_add(o, n, 0);
}

/* The gradient of output scalar (node, pos) with respect to every input,
 * flat: g->n values into row. */
static bool sweep(VM *vm, Eval *e, AdGrad *g, AdNode node, size_t pos, double *row,
                  const Node *site)
{
    memset(row, 0, e->n * sizeof(double));
    if (node == AD_NONE) return true;
    AdTape *t = e->ctx->tape;
    size_t m = ad_size(t, node);
    double *seed = calloc(m ? m : 1, sizeof(double));
    if (!seed) {
        vm_error(vm, site, "grad: out of memory");
        return false;
    }
    seed[pos] = 1;
    int rc = ad_backward(t, node, seed, g);
    free(seed);
    if (rc != 0) {
        vm_error(vm, site, "grad: %s", ad_error(t));
        return false;
    }
    for (int i = 0; i < e->nin; i++) leaf_adjoint(&e->leaf[i], g, row);
    return true;
}

/* The result of a scalar-valued f on the tape: its node (AD_NONE: does not
 * depend on the inputs). */
static bool scalar_out(VM *vm, Value r, AdNode *node, const char *who, const char *fname,
                       const Node *site)
{
    double x;
    bool err;
    if (track_number(vm, r, &x, node, site, &err)) return true;
    if (!err) {
        const char *hint = (r.t == T_LIST || r.t == T_ARRAY || track_is_arr(r))
                               ? "; use jacobian() for lists and arrays"
                               : "";
        vm_error(vm, site, "%s: %s() must return a number (a scalar cost), not %s%s", who, fname,
                 type_name(r), hint);
    }
    return false;
}

/* grad: the gradients in the structure of each differentiated argument */
static Value run_grad(VM *vm, ObjFunc *f, Value *params, const DSpec *s, const Node *site)
{
    Eval e;
    Value result = v_exc();
    AdGrad *g = ad_grad_new();
    if (!eval_inputs(vm, f, params, s, &e, site) || !eval_record(vm, f, params, s, &e, NULL, site))
        goto done;
    AdNode out;
    if (!scalar_out(vm, e.out, &out, "grad", f->p->name, site)) goto done;
    double *row = calloc(e.n + 1, sizeof(double));
    if (!sweep(vm, &e, g, out, 0, row, site)) {
        free(row);
        goto done;
    }
    if (!s->argnum_list)
        result = leaf_build(vm, &e.leaf[0], row, site, false);
    else {
        ObjList *l = list_new((size_t)e.nin);
        result = v_list(l);
        for (int i = 0; i < e.nin; i++) {
            Value gi = leaf_build(vm, &e.leaf[i], row, site, false);
            if (IS_EXC(gi)) {
                decref(result);
                result = gi;
                break;
            }
            l->v[l->len++] = gi;
        }
    }
    free(row);
done:
    ad_grad_free(g);
    eval_free(vm, &e);
    return result;
}

/* An array of shape (oshape..., ishape...) from rows (out x in, flat); a
 * number when both shapes are empty. */
static Value shaped(VM *vm, const double *v, int ond, const size_t *oshape, int ind,
                    const size_t *ishape, const Node *site)
{
    if (ond + ind == 0) return v_num(v[0]);
    if (ond + ind > AR_MAXDIM)
        return vm_error(vm, site, "jacobian: the result would have more than %d dimensions",
                        AR_MAXDIM);
    size_t shape[AR_MAXDIM];
    memcpy(shape, oshape, (size_t)ond * sizeof(size_t));
    memcpy(shape + ond, ishape, (size_t)ind * sizeof(size_t));
    char err[AR_ERRLEN];
    Array *a = ar_from_data(AR_F64, ond + ind, shape, v, err);
    return a ? arr_wrap(a) : vm_error(vm, site, "%s", err);
}

/* The Jacobian's columns of leaf L (J: o->n rows of n): shape out + L's
 * shape for a number or an array (and for a list of numbers, as a 1-d
 * array), and for a list or dict the same structure with each entry's
 * block (PennyLane's jacobian of a tuple of arguments). */
static Value jac_block(VM *vm, const Leaf *L, const double *J, size_t n, const Outs *o,
                       const Node *site)
{
    if ((L->kind == L_LIST && !leaf_flat_list(L)) || L->kind == L_DICT) {
        bool dict = L->kind == L_DICT;
        ObjList *l = dict ? NULL : list_new((size_t)L->nkids);
        ObjDict *d = dict ? dict_new_sized((size_t)L->nkids) : NULL;
        Value rv = dict ? v_obj(&d->h) : v_list(l);
        for (int i = 0; i < L->nkids; i++) {
            Value e = jac_block(vm, &L->kids[i], J, n, o, site);
            if (IS_EXC(e)) {
                decref(rv);
                return e;
            }
            if (dict) {
                dict_set(d, L->keys[i], e);
                decref(e);
            } else
                l->v[l->len++] = e;
        }
        return rv;
    }
    size_t ish[AR_MAXDIM];
    int ind = leaf_dims(L, ish);
    double *blk = xmalloc((o->n * L->size + 1) * sizeof(double));
    for (size_t i = 0; i < o->n; i++)
        memcpy(blk + i * L->size, J + i * n + L->off, L->size * sizeof(double));
    Value r = shaped(vm, blk, o->ndim, o->shape, ind, ish, site);
    free(blk);
    return r;
}

/* jacobian: d out / d in, shape (out..., in...) per differentiated argument */
/* The Jacobian of the outputs o (one sweep per scalar) by each input, in
 * the outputs' shape then the input's (a list over the inputs with
 * argnum=[...]). */
static Value jac_value(VM *vm, Eval *e, AdGrad *g, const Outs *o, const DSpec *s, const Node *site)
{
    Value result = v_exc();
    double *J = calloc(o->n * e->n + 1, sizeof(double));
    double *row = calloc(e->n + 1, sizeof(double));
    if (!J || !row) {
        vm_error(vm, site, "jacobian: out of memory");
        goto done;
    }
    for (size_t i = 0; i < o->n; i++) {
        if (!sweep(vm, e, g, o->node[i], o->pos[i], row, site)) goto done;
        memcpy(J + i * e->n, row, e->n * sizeof(double));
    }
    ObjList *l = s->argnum_list ? list_new((size_t)e->nin) : NULL;
    for (int k = 0; k < e->nin; k++) {
        Value jk = jac_block(vm, &e->leaf[k], J, e->n, o, site);
        if (IS_EXC(jk)) {
            if (l) decref(v_list(l));
            goto done;
        }
        if (!l) {
            result = jk;
            break;
        }
        l->v[l->len++] = jk;
    }
    if (l) result = v_list(l);
done:
    free(J);
    free(row);
    return result;
}

static void outs_free(Outs *o)
{
    free(o->node);
    free(o->pos);
}

/* jacobian: outputs of one shape stacked (a number, an array, lists of
 * them), each output's Jacobian beside the input's shape. A list whose
 * entries differ in shape ([expval(...), probs(...)]) gives one Jacobian
 * per entry, as PennyLane does for a tuple of measurements. */
static Value run_jacobian(VM *vm, ObjFunc *f, Value *params, const DSpec *s, const Node *site)
{
    Eval e;
    Outs o;
    memset(&o, 0, sizeof o);
    Outs *parts = NULL;
    size_t nparts = 0;
    Value result = v_exc();
    AdGrad *g = ad_grad_new();
    if (!eval_inputs(vm, f, params, s, &e, site) || !eval_record(vm, f, params, s, &e, NULL, site))
        goto done;
    if (e.out.t != T_LIST || AS_LIST(e.out)->len == 0) {
        if (!outs_walk(vm, e.out, 0, &o, f->p->name, site)) goto done;
        result = jac_value(vm, &e, g, &o, s, site);
        goto done;
    }
    ObjList *top = AS_LIST(e.out);
    parts = calloc(top->len, sizeof(Outs));
    if (!parts) {
        vm_error(vm, site, "jacobian: out of memory");
        goto done;
    }
    bool same = true;
    for (; nparts < top->len; nparts++) {
        Outs *p = &parts[nparts];
        if (!outs_walk(vm, top->v[nparts], 0, p, f->p->name, site)) {
            nparts++;
            goto done;
        }
        same = same && p->ndim == parts[0].ndim &&
               memcmp(p->shape, parts[0].shape, (size_t)p->ndim * sizeof(size_t)) == 0;
    }
    if (!same) {
        ObjList *l = list_new(nparts);
        for (size_t i = 0; i < nparts; i++) {
            Value ji = jac_value(vm, &e, g, &parts[i], s, site);
            if (IS_EXC(ji)) {
                decref(v_list(l));
                goto done;
            }
            l->v[l->len++] = ji;
        }
        result = v_list(l);
        goto done;
    }
    if (parts[0].ndim + 1 > AR_MAXDIM) {
        vm_error(vm, site, "jacobian: %s() returned lists nested too deeply", f->p->name);
        goto done;
    }
    o.ndim = parts[0].ndim + 1;
    o.shape[0] = nparts;
    for (int i = 0; i < parts[0].ndim; i++) o.shape[i + 1] = parts[0].shape[i];
    for (size_t i = 0; i < nparts; i++)
        for (size_t k = 0; k < parts[i].n; k++)
            if (!outs_add(&o, parts[i].node[k], parts[i].pos[k])) {
                vm_error(vm, site, "jacobian: out of memory");
                goto done;
            }
    result = jac_value(vm, &e, g, &o, s, site);
done:
    for (size_t i = 0; i < nparts; i++) outs_free(&parts[i]);
    free(parts);
    outs_free(&o);
    ad_grad_free(g);
    eval_free(vm, &e);
    return result;
}

/* hessian: central differences of the exact gradient, symmetrised:
 * H[:, j] = (g(x + h e_j) - g(x - h e_j)) / 2h with h = 1e-5 (|x_j| + 1) */
static Value run_hessian(VM *vm, ObjFunc *f, Value *params, const DSpec *s, const Node *site)
{
    Eval e;
    Value result = v_exc();
    AdGrad *g = ad_grad_new();
    double *H = NULL, *gp = NULL, *gm = NULL, *x = NULL;
    if (!eval_inputs(vm, f, params, s, &e, site)) goto done;
    size_t n = e.n;
    H = calloc(n * n + 1, sizeof(double));
    gp = calloc(n + 1, sizeof(double));
    gm = calloc(n + 1, sizeof(double));
    x = malloc((n + 1) * sizeof(double));
    if (!H || !gp || !gm || !x) {
        vm_error(vm, site, "hessian: out of memory");
        goto done;
    }
    for (size_t j = 0; j < n; j++) {
        double h = 1e-5 * (fabs(e.x[j]) + 1);
        for (int side = 0; side < 2; side++) {
            memcpy(x, e.x, n * sizeof(double));
            x[j] += side ? -h : h;
            Eval k = e; /* the same inputs' structure, a fresh tape */
            k.ctx = NULL;
            k.out = v_nil();
            bool ok = eval_record(vm, f, params, s, &k, x, site);
            AdNode out = AD_NONE;
            ok = ok && scalar_out(vm, k.out, &out, "hessian", f->p->name, site);
            ok = ok && sweep(vm, &k, g, out, 0, side ? gm : gp, site);
            decref(k.out);
            if (k.ctx) {
                if (k.ctx->dq) diffq_free(k.ctx->dq);
                track_end(vm, k.ctx);
            }
            if (!ok) goto done;
        }
        for (size_t i = 0; i < n; i++) H[i * n + j] = (gp[i] - gm[i]) / (2 * h);
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            double v = 0.5 * (H[i * n + j] + H[j * n + i]);
            H[i * n + j] = H[j * n + i] = v;
        }
    size_t sh[AR_MAXDIM];
    int nd = leaf_dims(&e.leaf[0], sh);
    result = shaped(vm, H, nd, sh, nd, sh, site);
done:
    free(H);
    free(gp);
    free(gm);
    free(x);
    ad_grad_free(g);
    eval_free(vm, &e);
    return result;
}

/* ---------------------------------------------------------------- calls */

static Value dfn_body(VM *vm, ObjFunc *f, Value *params, uint64_t seed, uint64_t index,
                      const Node *site, const void *arg)
{
    (void)seed;
    (void)index;
    const DSpec *s = arg;
    Value r;
    /* a derivative reads its arguments: futures passed in (finished: the task
     * depended on them) are resolved here, in the task */
    if (!tp_force_args(vm, params, f->p->nparams, site, NULL, true)) {
        for (int i = 0; i < f->p->nlocals; i++) decref(params[i]);
        return v_exc();
    }
    switch (s->kind) {
    case D_GRAD: r = run_grad(vm, f, params, s, site); break;
    case D_JAC: r = run_jacobian(vm, f, params, s, site); break;
    case D_HESS: r = run_hessian(vm, f, params, s, site); break;
    case D_METRIC:
        r = diffq_metric(vm, f, params,
                         &(DiffqMetricAsk){ s->argnum, s->nargnum, s->argnum_list, s->diag }, site);
        break;
    case D_NKINDS:
    default: qh_unreachable();
    }
    for (int i = 0; i < f->p->nlocals; i++) decref(params[i]);
    return r;
}

/* grad(f)(args...): bound like a call of f, dispatched like one (futures
 * among the arguments chain, never block) */
static Value dfn_call(VM *vm, Value gv, Args *a)
{
    ObjGrad *g = AS_GRAD(gv);
    ObjFunc *f = AS_FUNC(g->f);
    size_t base;
    /* futures are passed on: the derivative's task chains on them like a qfn call */
    Value *slots = eval_bind_frame(vm, f, a, &base);
    if (!slots) return v_exc();
    Value r = async_dispatch(vm, &(TaskSpec){ .f = f,
                                              .params = slots,
                                              .site = a->site,
                                              .body = dfn_body,
                                              .arg = &g->s,
                                              .argsize = sizeof g->s,
                                              .prefix = kind_prefix[g->s.kind] });
    vm->sp = base;
    return r;
}

static const char *const kw_grad[] = { "argnum", "method", NULL };
static const char *const kw_metric[] = { "argnum", "approx", NULL };
static const BuiltinDef builtins_grad[] = {
    { "grad", bi_grad, 1, 1, BI_CALLS, kw_grad, 0 },
    { "jacobian", bi_jacobian, 1, 1, BI_CALLS, kw_grad, 0 },
    { "hessian", bi_hessian, 1, 1, BI_CALLS, kw_grad, 0 },
    { "metric_tensor", bi_metric, 1, 1, BI_CALLS, kw_metric, 0 },
    { NULL, NULL, 0, 0, 0, NULL, 0 },
};

static const TypeOps gradfn_ops = {
    .name = "function",
    .flags = TF_CODE,
    .free = gfn_free,
    .clear = gfn_clear,
    .traverse = gfn_traverse,
    .copy = gfn_copy,
    .repr = gfn_repr,
    .call = dfn_call,
};

void grad_open(void)
{
    type_register(T_GRADFN, &gradfn_ops);
    builtins_add(builtins_grad);
}
