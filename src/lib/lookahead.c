/* lookahead.c — lookahead dispatch (lookahead.h, lang/async.md): while the
 * main thread waits for a future inside a loop with a plan (laplan.h), the
 * quantum calls of the loop's next iterations are started; at a module's
 * top level, the calls of the statements after the waiting one
 * (straight-line code, laplan.h's LaStraight). Their arguments
 * are computed by the evaluator itself in a sandbox: the loop's variables
 * and the plan's assignments are set to what the iteration will give them
 * (and put back after), nothing may wait, and each call site makes an early
 * task numbered as the call will be when it is reached. Each early task
 * keeps the function object it calls and the canonical bytes of its input
 * (task_canon: its random stream, the copied function with the globals it
 * takes along, the copied arguments, their sharing). The call, when its
 * statement is reached, makes its own task's copies and takes the early
 * task iff it is the same function object and the bytes are identical:
 * exact for every kind through the kinds' ser slots, with no rule of its
 * own (a dict reordered in place, -0.0 for 0.0, complex(1, 0) for 1, an
 * array's dtype, [l, l] for two equal lists all differ in bytes).
 * Otherwise, and when the loop ends, the early task is cancelled and
 * forgotten: it has no record, so it can never be reported, and the
 * random stream it used is the one the call takes anyway. Main thread
 * only. Knows the evaluator's loop records (vm.h), the plans, task.h's
 * submission, canonical bytes and future values, and the executor's
 * cancellation. */
#include "lookahead.h"
#include "eval.h"
#include "laplan.h"
#include "qh_assert.h"
#include "trace.h"

#include <stdlib.h>
#include <string.h>

typedef struct Early {
    const Node *loop; /* the N_FOR whose iteration it belongs to; NULL: straight-line code */
    const Node *stmt; /* straight-line code: the top-level statement it belongs to */
    const Node *site; /* the call */
    uint64_t iter;    /* that iteration */
    uint64_t index;   /* the call's number in program order */
    Fut *fut;
    Value fn;        /* the function object called (a reference: its address stays its own) */
    TaskCanon canon; /* the canonical bytes of its task's input (task.h) */
} Early;

typedef struct Lookahead {
    Early *v;
    int n, cap;
    const Node *off[16]; /* loops whose early calls had to be dropped: not again */
    int noff;
    unsigned long started, used, dropped;
    const Node *owner;        /* the loop being run ahead (run_ahead): the calls started are its */
    int cur_ahead, max_ahead; /* iterations ahead of the running one: now, at most */
    const Node *straight;     /* the top-level statement being run ahead (straight_run), or NULL */
    unsigned long sl_started; /* of started: from straight-line code */
    int sl_max;               /* statements ahead of the waiting one it reached, at most */
    unsigned long checks;     /* claims that compared canonical bytes */
    double check_seconds;     /* their time (the bytes of the call reached, the comparison) */
} Lookahead;

static Lookahead *la_of(Interp *in)
{
    if (!in->la) in->la = xcalloc(1, sizeof(Lookahead));
    return in->la;
}

static void early_free(Interp *in, Early *e, bool cancel)
{
    if (cancel && e->fut && !fut_ready(e->fut) && in->exec) exec_cancel_task(in->exec, e->fut);
    if (e->fut) fut_release(e->fut);
    decref(e->fn);
    task_canon_free(&e->canon);
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

/* ---------------------------------------------------------------- starting calls early */

/* the sandbox's call: an early task numbered vm->la_index, and a future on it */
Value lookahead_start(VM *vm, ObjFunc *f, Value *params, const Node *site, TaskBody body)
{
    Interp *in = vm->in;
    TaskCtx *c = NULL;
    TaskCanon canon;
    Lookahead *la = la_of(in);
    /* a call too short to gain from starting early runs where it is needed */
    if (body == task_qfn_body() && (vm->loops || la->straight) && in->exec &&
        !task_short(in, f->p)) {
        TaskSpec s = { .f = f,
                       .params = params,
                       .site = site,
                       .body = body,
                       .prefix = "",
                       .index = vm->la_index,
                       .early = true };
        const char *cerr = NULL;
        c = task_prepare(vm, &s, &cerr);
        /* what it computes from must have canonical bytes, else it could
         * never be told apart from the call when reached */
        if (c && !task_canon(c, &canon)) {
            task_ctx_free(c);
            c = NULL;
        }
    }
    for (int i = 0; i < f->p->nlocals; i++) decref(params[i]);
    if (!c) return vm_error(vm, site, "lookahead: not started early");
    Fut *fut = task_launch(vm, c);
    if (!fut) {
        task_canon_free(&canon);
        return vm_error(vm, site, "lookahead: not started early");
    }
    if (la->n == la->cap) {
        la->cap = la->cap ? la->cap * 2 : 8;
        la->v = xrealloc(la->v, (size_t)la->cap * sizeof(Early));
    }
    Early *e = &la->v[la->n++];
    e->loop = la->straight ? NULL : la->owner ? la->owner : vm->loops->loop;
    e->stmt = la->straight;
    e->site = site;
    e->iter = 0; /* set by the caller (the iteration being run ahead) */
    e->index = vm->la_index;
    e->fut = fut;
    e->fn = v_obj(&f->h);
    incref(e->fn);
    e->canon = canon;
    la->started++;
    if (la->straight) la->sl_started++;
    vm->la_index++;
    update_watch(vm, la);
    if (in->trace) {
        char args[96];
        snprintf(args, sizeof args, "{\"line\":%d,\"call\":%llu,\"ahead\":%d}",
                 site ? site->line : 0, (unsigned long long)e->index, la->cur_ahead);
        trace_complete(in->trace, 0, "lookahead", "lookahead", trace_now_us(in->trace), 1, args);
    }
    return task_future_new(fut_retain(fut), NULL, "", f->p->name, vm_source(vm),
                           site ? site->line : vm->cur_line, 0);
}

/* the slot a plain variable of the loop's frame lives in (run_ahead runs
 * with the loop's frame and module in scope) */
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
/* binds loop's variables to elem (saved in sv first); false if elem
 * cannot be taken apart ahead */
static bool bind_vars(VM *vm, const Node *loop, Value elem, Saved *sv, int *ns)
{
    int nv = loop->u.fors.nvars;
    if (nv == 1) {
        Value *slot = var_slot(vm, loop->u.fors.var);
        save_slot(sv, ns, slot);
        decref(*slot);
        incref(elem);
        *slot = elem;
        return true;
    }
    if (nv > 8 || elem.t != T_LIST || (int)AS_LIST(elem)->len != nv) return false;
    for (int i = 0; i < nv; i++) {
        Value x = AS_LIST(elem)->v[i];
        if (is_lazy(x)) return false;
        Value *slot = var_slot(vm, loop->u.fors.vars[i]);
        save_slot(sv, ns, slot);
        decref(*slot);
        incref(x);
        *slot = x;
    }
    return true;
}

/* each call's callee, before anything runs ahead: the function the
 * analysis proved the call reaches (a name bound again to another
 * function, a plain fn or any other value, starts nothing); an inner
 * loop's calls too */
static bool callees_ok(VM *vm, const LaPlan *p, int depth)
{
    if (depth > 8) return false;
    for (int i = 0; i < p->nsteps; i++) {
        const LaStep *st = &p->steps[i];
        if (st->kind == LA_LOOP && !callees_ok(vm, st->expr->u.fors.plan, depth + 1)) return false;
        for (int k = 0; k < st->nchecks; k++) {
            const LaCheck *ck = &st->checks[k];
            Value fv = ck->slot < vm->mod->nglobals ? vm->mod->globals[ck->slot] : v_nil();
            if (fv.t != T_FUNC || AS_FUNC(fv)->p != ck->proto) return false;
        }
    }
    return true;
}

#define MAX_SAVED 72

/* An inner loop's elements, as the loop will compute them: the list it
 * iterates, or its range (start, stop, step), from the running one's
 * record (the plan proved its collection is the same every time). */
typedef struct Inner {
    const LoopCtx *lc;
} Inner;

static bool run_steps(VM *vm, const LaPlan *p, Saved *sv, int *ns, const LoopCtx *inner);

/* the steps of an inner loop's every iteration, in order */
static bool run_inner(VM *vm, const Node *loop, Saved *sv, int *ns, const LoopCtx *inner)
{
    const LaPlan *ip = loop->u.fors.plan;
    if (!inner || inner->loop != loop) return false;
    if (inner->coll.t == T_LIST) {
        ObjList *l = AS_LIST(inner->coll);
        for (size_t i = 0; i < l->len; i++) {
            if (is_lazy(l->v[i]) || !bind_vars(vm, loop, l->v[i], sv, ns) ||
                !run_steps(vm, ip, sv, ns, NULL))
                return false;
        }
        return true;
    }
    for (double x = inner->start; inner->step > 0 ? x < inner->stop : x > inner->stop;
         x += inner->step)
        if (!bind_vars(vm, loop, v_num(x), sv, ns) || !run_steps(vm, ip, sv, ns, NULL))
            return false;
    return true;
}

/* A wrapper site ahead stops where it needs its calls' results (it may
 * not wait): done once every call it makes has started, unless the step
 * assigns its value, which later steps may read */
static bool wrapper_started(const VM *vm, const LaStep *st, uint64_t before)
{
    return st->kind == LA_SITE && !st->target && st->ncalls > 0 &&
           vm->la_index - before == (uint64_t)st->ncalls;
}

static bool run_steps(VM *vm, const LaPlan *p, Saved *sv, int *ns, const LoopCtx *inner)
{
    for (int i = 0; i < p->nsteps; i++) {
        const LaStep *st = &p->steps[i];
        if (st->kind == LA_LOOP) {
            if (!run_inner(vm, st->expr, sv, ns, inner)) return false;
            continue;
        }
        if (*ns >= MAX_SAVED - 1) return false;
        uint64_t before = vm->la_index;
        Value v = eval_expr(vm, st->expr);
        if (IS_EXC(v)) {
            if (wrapper_started(vm, st, before)) continue;
            return false;
        }
        if (st->target) {
            Value *slot = var_slot(vm, st->target);
            save_slot(sv, ns, slot);
            decref(*slot);
            *slot = v;
        } else {
            decref(v);
        }
    }
    return true;
}

/* Runs iteration iter's steps ahead with elem bound to the loop's variables
 * (an inner loop of the plan: every iteration of it, its elements from
 * `inner`, the running inner loop's record); its call sites get the
 * numbers base, base + 1, ... False if something cannot be computed ahead
 * (nothing more is started then). */
static bool run_ahead(VM *vm, LoopCtx *lc, const LaPlan *p, uint64_t iter, Value elem,
                      uint64_t base, const LoopCtx *inner)
{
    Saved sv[MAX_SAVED];
    int ns = 0;
    if (p->nsteps > 64) return false;
    bool ok = callees_ok(vm, p, 0) && bind_vars(vm, lc->loop, elem, sv, &ns);
    Lookahead *la = la_of(vm->in);
    int first = la->n;
    vm->la_sandbox++;
    vm->la_index = base;
    la->owner = lc->loop;
    if (ok) ok = run_steps(vm, p, sv, &ns, inner);
    la->owner = NULL;
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

/* the element of lc's iteration `next`, as the loop will compute it;
 * false past its end (or an element still pending) */
static bool elem_of(const LoopCtx *lc, uint64_t next, Value *elem)
{
    if (lc->coll.t == T_LIST) {
        size_t pos = lc->pos + (size_t)(next - lc->iter);
        if (pos >= AS_LIST(lc->coll)->len) return false;
        *elem = AS_LIST(lc->coll)->v[pos];
        return !is_lazy(*elem);
    }
    double x = lc->x;
    for (uint64_t k = lc->iter; k < next; k++) x += lc->step; /* the loop adds, so must we */
    if (!(lc->step > 0 ? x < lc->stop : x > lc->stop)) return false;
    *elem = v_num(x);
    return true;
}

/* iterations of lc after the running one */
static uint64_t left_of(const LoopCtx *lc)
{
    if (lc->coll.t == T_LIST) {
        size_t len = AS_LIST(lc->coll)->len;
        return lc->pos + 1 < len ? (uint64_t)(len - lc->pos - 1) : 0;
    }
    uint64_t n = 0;
    for (double x = lc->x + lc->step; (lc->step > 0 ? x < lc->stop : x > lc->stop) && n < 1u << 20;
         x += lc->step)
        n++;
    return n;
}

static bool index_started(const Lookahead *la, uint64_t index)
{
    for (int i = 0; i < la->n; i++)
        if (la->v[i].index == index) return true;
    return false;
}

/* the window of calls started early: per loop, and for straight-line code */
static int window_of(const Interp *in)
{
    return in->nworkers < 1 ? 1 : in->nworkers > 8 ? 8 : in->nworkers;
}

/* Straight-line code's: one more. With the call being waited for, as many
 * early calls as workers leave one queued: when two calls end together
 * (two statements' calls started at once), a worker idles while the main
 * thread wakes to start the next; one more leaves two queued. */
static int straight_window(const Interp *in) { return window_of(in) + 1; }

/* is the queue or the memory budget full (no more starts early)? */
static bool room_full(Interp *in, uint64_t more)
{
    if (exec_unfinished(in->exec) + more >= 16 * (uint64_t)(in->nworkers > 4 ? in->nworkers : 4))
        return true;
    return in->hooks.mem_budget && in->hooks.mem_held &&
           in->hooks.mem_held(in) >= in->hooks.mem_budget(in);
}

/* Starts the next iterations of lc (whose plan is p) while fewer than
 * `depth` run ahead; per: the calls of one iteration, base0: the number of
 * the first call of iteration lc->iter + 1; all_made: the running
 * iteration's calls are all made (its early calls left are stale). True if
 * it stopped at the loop's end. */
static bool start_next(VM *vm, LoopCtx *lc, const LaPlan *p, uint64_t per, uint64_t base0,
                       const LoopCtx *inner, bool all_made)
{
    Interp *in = vm->in;
    Lookahead *la = la_of(in);
    /* what is already running ahead for this loop (stale entries go) */
    uint64_t next = lc->iter + 1;
    for (int i = 0; i < la->n;) {
        Early *e = &la->v[i];
        if (e->loop == lc->loop) {
            /* stale: its iteration is over (or, all its calls made, running) */
            if (e->iter < lc->iter || (all_made && e->iter == lc->iter)) {
                drop_at(in, la, i);
                continue;
            }
            if (e->iter + 1 > next) next = e->iter + 1;
        }
        i++;
    }
    int ahead = (int)(next - lc->iter - 1);
    int depth = window_of(in);
    while (ahead < depth) {
        Value elem;
        if (!elem_of(lc, next, &elem)) return true;
        if (room_full(in, per)) return false;
        uint64_t base = base0 + (next - lc->iter - 1) * per;
        if (per && index_started(la, base)) { /* an enclosing loop started it already */
            next++;
            ahead++;
            continue;
        }
        /* ahead, the loop's frame and module are in scope, whatever runs now */
        Frame *saved_frame = vm->frame;
        ObjModule *saved_mod = vm->mod;
        vm->frame = lc->frame;
        vm->mod = lc->mod;
        la->cur_ahead = (int)(next - lc->iter);
        if (la->cur_ahead > la->max_ahead) la->max_ahead = la->cur_ahead;
        bool ran = run_ahead(vm, lc, p, next, elem, base, inner);
        vm->frame = saved_frame;
        vm->mod = saved_mod;
        if (!ran) return false;
        next++;
        ahead++;
    }
    return false;
}

/* the loops' part: the next iterations of the innermost loop running */
static void loops_run(VM *vm)
{
    Interp *in = vm->in;
    LoopCtx *lc = vm->loops;
    if (!lc) return;
    /* the wait is in the loop's body, or in a function it called (a
     * wrapper needing its call's result, a helper forcing an argument):
     * no loop of theirs runs in between, or it would be vm->loops */
    const Frame *fr = vm->frame;
    while (fr && fr != lc->frame) fr = fr->parent;
    if (fr != lc->frame) return;
    const LaPlan *p = lc->loop->u.fors.plan;
    if (p->nested) return; /* reached from its inner loop only */
    if (vm->qcall_seq - lc->iter_seq != (uint64_t)p->nsites)
        return; /* this iteration's calls are not all made */
    Lookahead *la = la_of(in);
    if (!is_off(la, lc->loop) &&
        start_next(vm, lc, p, (uint64_t)p->nsites, vm->qcall_seq, NULL, true)) {
        /* at its end: the enclosing loop's next iterations, whose last step
         * is this loop (laplan.h), their calls numbered after this loop's */
        LoopCtx *up = lc->up;
        const LaPlan *op = up ? up->loop->u.fors.plan : NULL;
        if (op && op->nested && up->frame == lc->frame && op->nsteps &&
            op->steps[op->nsteps - 1].expr == lc->loop && !is_off(la, up->loop)) {
            uint64_t left = left_of(lc), per = (left + lc->iter + 1) * (uint64_t)p->nsites;
            start_next(vm, up, op, per, vm->qcall_seq + left * (uint64_t)p->nsites, lc, left == 0);
        }
    }
}

/* runs the calls of top-level statement s (plan st) ahead in the sandbox, with the
 * module's scope; the first is numbered at; false if one could not start */
static bool straight_ahead(VM *vm, const StraightCtx *sc, const Node *s, const LaStraight *st,
                           uint64_t at)
{
    Lookahead *la = la_of(vm->in);
    Frame *saved_frame = vm->frame;
    ObjModule *saved_mod = vm->mod;
    vm->frame = NULL; /* a module's top level has no frame (vm_run_module) */
    vm->mod = sc->mod;
    vm->la_sandbox++;
    vm->la_index = at;
    la->straight = s;
    bool ok = true;
    for (int t = 0; t < st->plan.nsteps && ok; t++) {
        uint64_t before = vm->la_index;
        Value v = eval_expr(vm, st->plan.steps[t].expr);
        if (IS_EXC(v))
            ok = wrapper_started(vm, &st->plan.steps[t], before);
        else
            decref(v);
    }
    la->straight = NULL;
    vm->la_sandbox--;
    vm->frame = saved_frame;
    vm->mod = saved_mod;
    return ok;
}

/* The straight-line part (laplan.h's LaStraight): while top-level statement
 * k waits, the calls of the statements after it whose window reaches back
 * to k, numbered as they will be: k's calls all counted from where the
 * statement began, then each statement's in turn. At most straight_window()
 * calls from straight-line code are outstanding. */
static void straight_run(VM *vm)
{
    Interp *in = vm->in;
    const StraightCtx *sc = &vm->straight;
    if (!sc->block) return;
    const Node *b = sc->block;
    int k = sc->i, n = b->u.list.n;
    const DepInfo *dk = b->u.list.items[k]->dep;
    const LaStraight *sk = dk ? dk->straight : NULL;
    if (!sk || sk->ncalls < 0) return;
    uint64_t base = sc->seq + (uint64_t)sk->ncalls;
    if (vm->qcall_seq > base) return; /* not as counted: start nothing */
    Lookahead *la = la_of(in);
    int ahead = 0, depth = straight_window(in);
    for (int i = 0; i < la->n; i++)
        if (!la->v[i].loop) ahead++;
    for (int j = k + 1; j < n && j <= k + LA_STRAIGHT_REACH && ahead < depth; j++) {
        const Node *s = b->u.list.items[j];
        const LaStraight *st = s->dep ? s->dep->straight : NULL;
        if (!st || st->ncalls < 0) return; /* the numbers past it are not known */
        uint64_t at = base;
        base += (uint64_t)st->ncalls;
        if (st->from > k || !st->plan.nsteps || is_off(la, s) || index_started(la, at)) continue;
        if (room_full(in, (uint64_t)st->ncalls)) return;
        if (!callees_ok(vm, &st->plan, 0)) continue; /* a name holds another function now */
        int before = la->n;
        la->cur_ahead = j - k;
        bool ok = straight_ahead(vm, sc, s, st, at);
        if (la->n > before && j - k > la->sl_max) la->sl_max = j - k;
        ahead += la->n - before;
        if (!ok) continue;
    }
}

void lookahead_run(VM *vm)
{
    Interp *in = vm->in;
    if (!vm->la_on || vm->la_sandbox || !in->exec) return;
    loops_run(vm);
    straight_run(vm);
    update_watch(vm, la_of(in));
}

Fut *lookahead_claim(VM *vm, const TaskSpec *s, const TaskCtx *c)
{
    Lookahead *la = vm->in->la;
    if (!la || !la->n) return NULL;
    Fut *got = NULL;
    bool straight = false; /* got one started from straight-line code */
    TaskCanon now;
    int have = 0; /* the call's bytes: 0 not made yet, 1 made, -1 it has none */
    for (int i = 0; i < la->n;) {
        Early *e = &la->v[i];
        if (e->index > s->index) {
            i++;
            continue;
        }
        /* reused iff the same function object, and a task of the same input:
         * the same bytes (its random stream, what it copied, their sharing) */
        bool match = !got && e->index == s->index && e->site == s->site && AS_FUNC(e->fn) == s->f &&
                     s->body == task_qfn_body() && !s->argsize;
        if (match && !have) {
            double t0 = task_now();
            have = task_canon(c, &now) ? 1 : -1;
            if (have > 0) match = task_canon_same(&e->canon, &now);
            la->check_seconds += task_now() - t0;
            la->checks++;
        } else if (match)
            match = have > 0 && task_canon_same(&e->canon, &now);
        if (match) {
            got = e->fut;
            straight = !e->loop;
            e->fut = NULL;
            early_free(vm->in, e, false);
            la->v[i] = la->v[--la->n];
            la->used++;
            continue;
        }
        turn_off(la, e->loop ? e->loop : e->stmt);
        drop_at(vm->in, la, i); /* its place has come and gone, or it would differ */
    }
    if (have > 0) task_canon_free(&now);
    /* Straight-line code: the window lost a call, so start the next now
     * rather than at the next wait. When the calls finish before they are
     * needed, the main thread may not wait again for several statements,
     * and a worker would idle meanwhile. (The statement running is this
     * call's: its calls are all counted from where it began, as in a wait.) */
    if (straight && vm->la_on && !vm->la_sandbox && vm->in->exec) straight_run(vm);
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
    if (la->started > la->sl_started)
        fprintf(out,
                "qh stats: lookahead reached up to %d iterations ahead (a window of %d per loop)\n",
                la->max_ahead, window_of(in));
    if (la->sl_started)
        fprintf(out,
                "qh stats: lookahead started %lu of them from straight-line code, up to %d "
                "statements ahead of the waiting one (a window of %d calls)\n",
                la->sl_started, la->sl_max, straight_window(in));
    if (la->checks)
        fprintf(out, "qh stats: lookahead checked %lu calls reached, %.1f us each\n", la->checks,
                la->check_seconds * 1e6 / (double)la->checks);
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
