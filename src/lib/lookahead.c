/* lookahead.c — lookahead dispatch (lookahead.h, lang/async.md): while the
 * main thread waits for a future inside a loop with a plan (laplan.h), the
 * quantum calls of the loop's next iterations are started. Their arguments
 * are computed by the evaluator itself in a sandbox: the loop's variables
 * and the plan's assignments are set to what the iteration will give them
 * (and put back after), nothing may wait, and each call site makes an early
 * task numbered as the call will be when it is reached; a copy of what it
 * read (its arguments, the globals it took along) is kept. The call, when
 * its statement is reached, takes the early task if everything matches:
 * the site, the number in program order, the function, and the values of
 * its arguments and of those globals, compared with the copies (so a list
 * changed in place meanwhile, through any name, is noticed). Otherwise,
 * and when the loop ends, the early task is cancelled and forgotten: it
 * has no record, so it can never be reported, and the random stream it
 * used is the one the call takes anyway. Main thread only. Knows the
 * evaluator's loop records (vm.h), the plans, task.h's submission and
 * future values, and the executor's cancellation. */
#include "lookahead.h"
#include "eval.h"
#include "laplan.h"
#include "qh_assert.h"
#include "trace.h"

#include <stdlib.h>
#include <string.h>

typedef struct Early {
    const Node *loop; /* the N_FOR whose iteration it belongs to */
    const Node *site; /* the call */
    uint64_t iter;    /* that iteration */
    uint64_t index;   /* the call's number in program order */
    Fut *fut;
    Value fn;      /* the function called */
    Value *params; /* copies of the bound arguments, to compare when reached */
    int nparams;
    int *gslots;  /* the globals of fn's module it took along */
    Value *gvals; /* and copies of their values */
    int ng;
} Early;

typedef struct Lookahead {
    Early *v;
    int n, cap;
    const Node *off[16]; /* loops whose early calls had to be dropped: not again */
    int noff;
    unsigned long started, used, dropped;
} Lookahead;

static Lookahead *la_of(Interp *in)
{
    if (!in->la) in->la = xcalloc(1, sizeof(Lookahead));
    return in->la;
}

static void early_free(Interp *in, Early *e, bool cancel)
{
    if (cancel && !fut_ready(e->fut) && in->exec) exec_cancel_task(in->exec, e->fut);
    fut_release(e->fut);
    decref(e->fn);
    for (int i = 0; i < e->nparams; i++) decref(e->params[i]);
    for (int i = 0; i < e->ng; i++) decref(e->gvals[i]);
    free(e->params);
    free(e->gslots);
    free(e->gvals);
}

/* drops entry i (cancelled, never reported) */
static void drop_at(Interp *in, Lookahead *la, int i)
{
    early_free(in, &la->v[i], true);
    la->v[i] = la->v[--la->n];
    la->dropped++;
}

static void update_watch(VM *vm, Lookahead *la) { vm->la_watch = la->n > 0; }

/* a loop whose early calls turned out wrong (a container changed, arguments
 * differed) stops starting them: the work would be thrown away again */
static void turn_off(Lookahead *la, const Node *loop)
{
    for (int i = 0; i < la->noff; i++)
        if (la->off[i] == loop) return;
    if (la->noff < (int)(sizeof la->off / sizeof la->off[0])) la->off[la->noff++] = loop;
}

static bool is_off(const Lookahead *la, const Node *loop)
{
    for (int i = 0; i < la->noff; i++)
        if (la->off[i] == loop) return true;
    return la->noff == (int)(sizeof la->off / sizeof la->off[0]);
}

/* ---------------------------------------------------------------- comparing arguments */

static bool same_value(Value a, Value b, int depth)
{
    if (depth > 100) return false;
    if (a.t == T_FUTURE || b.t == T_FUTURE) {
        Fut *fa = task_fut_of(a), *fb = task_fut_of(b);
        return fa && fa == fb;
    }
    if (a.t != b.t) return value_eq(a, b);
    if (a.t == T_LIST) {
        ObjList *x = AS_LIST(a), *y = AS_LIST(b);
        if (x->len != y->len) return false;
        for (size_t i = 0; i < x->len; i++)
            if (!same_value(x->v[i], y->v[i], depth + 1)) return false;
        return true;
    }
    if (a.t == T_DICT) {
        ObjDict *x = AS_DICT(a), *y = AS_DICT(b);
        if (x->len != y->len) return false;
        for (size_t i = 0; i < x->nent; i++) {
            if (!x->ent[i].live) continue;
            Value o;
            if (!dict_get(y, x->ent[i].key, &o) || !same_value(x->ent[i].val, o, depth + 1))
                return false;
        }
        return true;
    }
    if (!is_obj(a) || type_of(a)->eq || a.o == b.o) return value_eq(a, b);
    /* a kind without an equality (an operator): the same printed form */
    Buf x, y;
    buf_init(&x);
    buf_init(&y);
    value_repr(&x, a, true);
    value_repr(&y, b, true);
    bool same = x.len == y.len && (!x.len || memcmp(x.p, y.p, x.len) == 0);
    buf_free(&x);
    buf_free(&y);
    return same;
}

static Value share_lazy(Value v, CopyCtx *cc)
{
    (void)cc;
    incref(v);
    return v;
}

/* a function value anywhere in v: what it would take along is not checked ahead */
static bool has_code(Value v, int depth)
{
    if (depth > 100) return true;
    if (is_obj(v) && (value_flags[v.t] & TF_CODE)) return true;
    if (v.t == T_LIST) {
        ObjList *l = AS_LIST(v);
        for (size_t i = 0; i < l->len; i++)
            if (has_code(l->v[i], depth + 1)) return true;
    } else if (v.t == T_DICT) {
        ObjDict *d = AS_DICT(v);
        for (size_t i = 0; i < d->nent; i++)
            if (d->ent[i].live && has_code(d->ent[i].val, depth + 1)) return true;
    }
    return false;
}

/* a copy to compare with later (same thread: functions and futures are
 * shared, containers copied) */
static Value snapshot(Value v)
{
    CopyCtx cc;
    copy_init(&cc);
    cc.share_code = true;
    cc.on_future = share_lazy;
    Value r = value_copy_deep(v, &cc);
    copy_done(&cc);
    return r;
}

/* ---------------------------------------------------------------- starting calls early */

/* the sandbox's call: an early task numbered vm->la_index, and a future on it */
Value lookahead_start(VM *vm, ObjFunc *f, Value *params, const Node *site, TaskBody body)
{
    Interp *in = vm->in;
    int np = f->p->nparams;
    bool ok = body == task_qfn_body() && vm->loops && in->exec;
    for (int i = 0; ok && i < np; i++)
        if (has_code(params[i], 0)) ok = false;
    if (!ok) {
        for (int i = 0; i < f->p->nlocals; i++) decref(params[i]);
        return vm_error(vm, site, "lookahead: not started early");
    }
    const char *cerr = NULL;
    int *taken = NULL, ntaken = 0;
    Fut *fut = task_submit(vm, f, params, site, body, NULL, 0, "", vm->la_index, true, &cerr,
                           &taken, &ntaken);
    if (fut && ntaken < 0) {
        /* it reached state a copy cannot vouch for: not early after all */
        exec_cancel_task(in->exec, fut);
        fut_release(fut);
        fut = NULL;
    }
    if (!fut) {
        for (int i = 0; i < f->p->nlocals; i++) decref(params[i]);
        free(taken);
        return vm_error(vm, site, "lookahead: not started early");
    }
    Lookahead *la = la_of(in);
    if (la->n == la->cap) {
        la->cap = la->cap ? la->cap * 2 : 8;
        la->v = xrealloc(la->v, (size_t)la->cap * sizeof(Early));
    }
    Early *e = &la->v[la->n++];
    e->loop = vm->loops->loop;
    e->site = site;
    e->iter = 0; /* set by the caller (the iteration being run ahead) */
    e->index = vm->la_index;
    e->fut = fut;
    e->fn = v_obj(&f->h);
    incref(e->fn);
    e->nparams = np;
    e->params = xmalloc((size_t)(np + 1) * sizeof(Value));
    for (int i = 0; i < np; i++) e->params[i] = snapshot(params[i]);
    for (int i = 0; i < f->p->nlocals; i++) decref(params[i]);
    e->gslots = taken;
    e->ng = ntaken;
    e->gvals = xmalloc((size_t)(ntaken + 1) * sizeof(Value));
    for (int i = 0; i < ntaken; i++) e->gvals[i] = snapshot(f->mod->globals[taken[i]]);
    la->started++;
    vm->la_index++;
    update_watch(vm, la);
    if (in->trace) {
        char args[96];
        snprintf(args, sizeof args, "{\"line\":%d,\"call\":%llu}", site ? site->line : 0,
                 (unsigned long long)e->index);
        trace_complete(in->trace, 0, "lookahead", "lookahead", trace_now_us(in->trace), 1, args);
    }
    return task_future_new(fut_retain(fut), NULL, "", f->p->name, vm_source(vm),
                           site ? site->line : vm->cur_line, 0);
}

/* the slot a plain variable of the loop's frame lives in */
static Value *var_slot(VM *vm, const Node *v)
{
    return v->kind == N_LOCAL ? &vm->frame->slots[v->u.var.slot] : &vm->mod->globals[v->u.var.slot];
}

typedef struct Saved {
    Value *slot;
    Value old;
} Saved;

static void save_slot(Saved *sv, int *n, Value *slot)
{
    for (int i = 0; i < *n; i++)
        if (sv[i].slot == slot) return;
    sv[*n].slot = slot;
    sv[*n].old = *slot;
    incref(*slot);
    (*n)++;
}

/* Runs iteration iter's steps ahead with elem bound to the loop's variables;
 * its call sites get the numbers base, base + 1, ... False if something
 * cannot be computed ahead (nothing more is started then). */
static bool run_ahead(VM *vm, LoopCtx *lc, const LaPlan *p, uint64_t iter, Value elem,
                      uint64_t base)
{
    const Node *loop = lc->loop;
    int nv = loop->u.fors.nvars;
    Saved sv[64 + 8];
    int ns = 0;
    if (p->nsteps > 64 || nv > 8) return false;
    bool ok = true;
    /* the loop's variables */
    if (nv == 1) {
        Value *slot = var_slot(vm, loop->u.fors.var);
        save_slot(sv, &ns, slot);
        decref(*slot);
        incref(elem);
        *slot = elem;
    } else {
        if (elem.t != T_LIST || (int)AS_LIST(elem)->len != nv) return false;
        for (int i = 0; i < nv; i++) {
            Value x = AS_LIST(elem)->v[i];
            if (is_lazy(x)) {
                ok = false;
                break;
            }
            Value *slot = var_slot(vm, loop->u.fors.vars[i]);
            save_slot(sv, &ns, slot);
            decref(*slot);
            incref(x);
            *slot = x;
        }
    }
    Lookahead *la = la_of(vm->in);
    int first = la->n;
    vm->la_sandbox++;
    vm->la_index = base;
    for (int i = 0; ok && i < p->nsteps; i++) {
        const LaStep *st = &p->steps[i];
        Value v = eval_expr(vm, st->expr);
        if (IS_EXC(v)) {
            ok = false;
            break;
        }
        if (st->target) {
            Value *slot = var_slot(vm, st->target);
            save_slot(sv, &ns, slot);
            decref(*slot);
            *slot = v;
        } else {
            decref(v);
        }
    }
    vm->la_sandbox--;
    for (int i = first; i < la->n; i++) la->v[i].iter = iter;
    /* put every variable back */
    for (int i = ns - 1; i >= 0; i--) {
        Value cur = *sv[i].slot;
        *sv[i].slot = sv[i].old;
        decref(cur);
    }
    return ok;
}

void lookahead_run(VM *vm)
{
    Interp *in = vm->in;
    LoopCtx *lc = vm->loops;
    if (!vm->la_on || vm->la_sandbox || !lc || !in->exec || lc->frame != vm->frame) return;
    const LaPlan *p = lc->loop->u.fors.plan;
    if (vm->qcall_seq - lc->iter_seq != (uint64_t)p->nsites)
        return; /* this iteration's calls are not all made */
    Lookahead *la = la_of(in);
    if (is_off(la, lc->loop)) return;
    /* what is already running ahead for this loop (stale entries go) */
    uint64_t next = lc->iter + 1;
    int ahead = 0;
    for (int i = 0; i < la->n;) {
        Early *e = &la->v[i];
        if (e->loop == lc->loop) {
            if (e->iter <= lc->iter) {
                drop_at(in, la, i);
                continue;
            }
            if (e->iter + 1 > next) next = e->iter + 1;
        }
        i++;
    }
    ahead = (int)(next - lc->iter - 1);
    int depth = in->nworkers < 1 ? 1 : in->nworkers > 8 ? 8 : in->nworkers;
    Value coll = lc->coll;
    while (ahead < depth) {
        /* the element of iteration `next`, as the loop will compute it */
        Value elem;
        if (coll.t == T_LIST) {
            size_t pos = lc->pos + (size_t)(next - lc->iter);
            if (pos >= AS_LIST(coll)->len) break;
            elem = AS_LIST(coll)->v[pos];
            if (is_lazy(elem)) break;
        } else {
            double x = lc->x;
            for (uint64_t k = lc->iter; k < next; k++)
                x += lc->step; /* the loop adds, so must we */
            if (!(lc->step > 0 ? x < lc->stop : x > lc->stop)) break;
            elem = v_num(x);
        }
        if (exec_unfinished(in->exec) + p->nsites >= 16 * (in->nworkers > 4 ? in->nworkers : 4))
            break;
        uint64_t base = vm->qcall_seq + (next - lc->iter - 1) * (uint64_t)p->nsites;
        if (!run_ahead(vm, lc, p, next, elem, base)) break;
        next++;
        ahead++;
    }
    update_watch(vm, la);
}

Fut *lookahead_claim(VM *vm, ObjFunc *f, Value *params, const Node *site, TaskBody body,
                     uint64_t index)
{
    Lookahead *la = vm->in->la;
    if (!la || !la->n) return NULL;
    Fut *got = NULL;
    for (int i = 0; i < la->n;) {
        Early *e = &la->v[i];
        if (e->index > index) {
            i++;
            continue;
        }
        bool match = e->index == index && e->site == site && AS_FUNC(e->fn) == f &&
                     body == task_qfn_body() && e->nparams == f->p->nparams;
        for (int k = 0; match && k < e->nparams; k++)
            if (!same_value(e->params[k], params[k], 0)) match = false;
        /* what it took along has not changed, in place or otherwise */
        for (int k = 0; match && k < e->ng; k++)
            if (e->gslots[k] >= f->mod->nglobals ||
                !same_value(e->gvals[k], f->mod->globals[e->gslots[k]], 0))
                match = false;
        if (match) {
            got = e->fut;
            e->fut = NULL;
            early_free(vm->in, e, false);
            la->v[i] = la->v[--la->n];
            la->used++;
            continue;
        }
        turn_off(la, e->loop);
        drop_at(vm->in, la, i); /* its place has come and gone, or it would differ */
    }
    update_watch(vm, la);
    return got;
}

static void on_loop_exit(VM *vm, LoopCtx *lc)
{
    Lookahead *la = vm->in->la;
    if (!la) return;
    for (int i = 0; i < la->n;)
        if (la->v[i].loop == lc->loop)
            drop_at(vm->in, la, i);
        else
            i++;
    update_watch(vm, la);
}

void lookahead_drop(Interp *in)
{
    Lookahead *la = in->la;
    if (!la) return;
    while (la->n) drop_at(in, la, la->n - 1);
}

void lookahead_stats(Interp *in, FILE *out)
{
    Lookahead *la = in->la;
    if (!la || !la->started) return;
    fprintf(out, "qh stats: lookahead started %lu calls early, %lu used, %lu dropped\n",
            la->started, la->used, la->dropped);
}

void lookahead_free(Interp *in)
{
    lookahead_drop(in);
    if (in->la) {
        free(in->la->v);
        free(in->la);
        in->la = NULL;
    }
}

void lookahead_attach(Interp *in)
{
    in->hooks.loop_exit = on_loop_exit;
    in->hooks.main_wait = lookahead_run;
}
