/* grad.c — gradients of quantum functions (lang/quantum.md, grad): the
 * function grad(f) returns (a kind with a call slot), and the three methods
 * computed on whichever VM runs the call: adjoint (one forward and one
 * backward sweep), parameter-shift (two or four shifted runs per gate
 * parameter, shared with idle workers) and finite differences. A gradient
 * call is dispatched like a qfn call (async.h) with this room's body.
 * Knows values, the evaluator's call binding, the quantum runtime's entry,
 * dual numbers and the tape, arrays, and the executor for helper tasks. */
#include "grad.h"
#include "array.h"
#include "arrayval.h"
#include "async.h"
#include "dual.h"
#include "eval.h"
#include "exec.h"
#include "qh_assert.h"
#include "qrt.h"

#include <pthread.h>
#include <stdatomic.h>

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the grad function object */

typedef struct ObjGrad { Obj h; Value f; int argnum; GradMethod method; } ObjGrad;
#define AS_GRAD(v) ((ObjGrad *)(v).o)

static const char *const method_names[GRAD_NMETHODS] = {
    [GRAD_ADJOINT] = "adjoint", [GRAD_SHIFT] = "parameter-shift", [GRAD_FD] = "finite-diff",
};

static void grad_free(Obj *o) { decref(((ObjGrad *)o)->f); free(o); }
static void grad_clear(Obj *o) { ObjGrad *g = (ObjGrad *)o; Value f = g->f; g->f = v_nil(); decref(f); }
static void grad_traverse(Obj *o, void (*visit)(Value, void *), void *ud) { visit(((ObjGrad *)o)->f, ud); }
static void grad_repr(Buf *b, Value v, bool quoted)
{
    (void)quoted;
    ObjGrad *g = AS_GRAD(v);
    if (g->f.t != T_FUNC) { buf_puts(b, "<grad>"); return; }
    buf_printf(b, "<grad of %s, argnum=%d, method=\"%s\">", AS_FUNC(g->f)->p->name, g->argnum, method_names[g->method]);
}
static Value grad_copy(Value v, CopyCtx *cc)
{
    ObjGrad *g = AS_GRAD(v), *n = (ObjGrad *)obj_alloc(sizeof(ObjGrad), T_GRADFN);
    copy_memo_put(cc, g, n);
    n->argnum = g->argnum;
    n->method = g->method;
    n->f = value_copy_deep(g->f, cc);
    return v_obj(&n->h);
}

static Value bi_grad(VM *vm, Args *a)
{
    Value f = a->v[0];
    if (f.t != T_FUNC || !AS_FUNC(f)->p->is_qfn || AS_FUNC(f)->device.t != T_DEVICE)
        return vm_error(vm, a->site, "grad() needs a quantum function with a device (qfn ... on DEVICE), not %s",
                        f.t == T_FUNC ? "a plain function" : type_name(f));
    Value *an = arg_kw(a, "argnum"), *m = arg_kw(a, "method");
    int argnum = 0;
    GradMethod method = GRAD_ADJOINT;
    if (an) {
        if (an->t != T_NUM || an->n != floor(an->n) || an->n < 0 || an->n > 1e6) return vm_error(vm, a->site, "grad(): argnum must be a non-negative integer");
        argnum = (int)an->n;
        if (argnum >= AS_FUNC(f)->p->nparams)
            return vm_error(vm, a->site, "grad(): argnum=%d but %s() has %d parameter%s", argnum, AS_FUNC(f)->p->name,
                            AS_FUNC(f)->p->nparams, AS_FUNC(f)->p->nparams == 1 ? "" : "s");
    } else if (AS_FUNC(f)->p->nparams == 0) {
        return vm_error(vm, a->site, "grad(): %s() has no parameters to differentiate", AS_FUNC(f)->p->name);
    }
    if (m) {
        if (m->t != T_STR) return vm_error(vm, a->site, "grad(): method must be a string");
        int k;
        for (k = 0; k < GRAD_NMETHODS; k++) if (strcmp(AS_STR(*m)->s, method_names[k]) == 0) break;
        if (k == GRAD_NMETHODS) return vm_error(vm, a->site, "grad(): unknown method \"%.40s\" (adjoint, parameter-shift, finite-diff)", AS_STR(*m)->s);
        method = (GradMethod)k;
    }
    ObjGrad *g = (ObjGrad *)obj_alloc(sizeof(ObjGrad), T_GRADFN);
    g->f = f;
    incref(f);
    g->argnum = argnum;
    g->method = method;
    return v_obj(&g->h);
}

/* ---------------------------------------------------------------- computing a gradient */

typedef struct GradArg { int argnum; GradMethod method; } GradArg;
static Value grad_compute(VM *vm, ObjFunc *f, Value *params, int argnum, GradMethod method, uint64_t seed, uint64_t index, const Node *site);

/* the body of a gradient task: the bound parameters (references taken) */
static Value grad_body(VM *vm, ObjFunc *f, Value *params, uint64_t seed, uint64_t index, const Node *site, const void *arg)
{
    const GradArg *ga = arg;
    /* a gradient reads its arguments: futures passed in (finished: the task
     * depended on them) are resolved here, in the task */
    if (!tp_force_args(vm, params, f->p->nparams, site, NULL, true)) {
        for (int i = 0; i < f->p->nlocals; i++) decref(params[i]);
        return v_exc();
    }
    Value r = grad_compute(vm, f, params, ga->argnum, ga->method, seed, index, site);
    for (int i = 0; i < f->p->nlocals; i++) decref(params[i]);
    return r;
}

/* grad(f)(args...): bound like a call of f, dispatched like one (futures
 * among the arguments chain, never block) */
static Value gradfn_call(VM *vm, Value gv, Args *a)
{
    ObjGrad *g = AS_GRAD(gv);
    ObjFunc *f = AS_FUNC(g->f);
    size_t base = vm->sp;
    size_t need = (size_t)(f->p->nlocals > a->n ? f->p->nlocals : a->n) + 4;
    if (base + need >= vm->cap) return vm_error(vm, a->site, "maximum recursion depth exceeded (value stack full)");
    Value *slots = vm->stack + base;
    /* futures are passed on: the gradient's task chains on them like a qfn call */
    for (int i = 0; i < a->n; i++) { incref(a->v[i]); slots[i] = a->v[i]; }
    Value kwv[a->nkw ? a->nkw : 1];
    for (int i = 0; i < a->nkw; i++) { incref(a->kw[i]); kwv[i] = a->kw[i]; }
    Args kw = { 0, NULL, a->nkw, a->kwname, kwv, a->site, NULL };
    vm->sp = base + need - 4;
    if (!eval_bind_args(vm, f, slots, a->n, &kw, a->site)) { vm->sp = base; return v_exc(); }
    GradArg ga = { g->argnum, g->method };
    Value r = async_dispatch(vm, f, slots, a->site, grad_body, &ga, sizeof ga, "grad ");
    vm->sp = base;
    return r;
}

/* the input as numbers: a number or a real float array (any shape) */
typedef struct Input { double *x; size_t n; int ndim; size_t shape[AR_MAXDIM]; bool scalar; } Input;

static bool read_input(VM *vm, Value v, Input *in, const Node *site, const char *fname, int argnum)
{
    memset(in, 0, sizeof *in);
    if (v.t == T_NUM || v.t == T_BOOL) {
        in->scalar = true;
        in->n = 1;
        in->x = malloc(sizeof(double));
        in->x[0] = v.t == T_NUM ? v.n : v.b;
        return true;
    }
    Value arr = v;
    bool tmp = false;
    if (v.t == T_LIST) {
        arr = vm_call(vm, builtin_named("array"), 1, &v, (Node *)site);
        if (IS_EXC(arr)) return false;
        tmp = true;
    }
    if (arr.t != T_ARRAY || ar_is_complex(AS_ARR(arr))) {
        if (tmp) decref(arr);
        vm_error(vm, site, "grad: argument %d of %s() must be a number or a float array, not %s", argnum, fname, type_name(v));
        return false;
    }
    Array *A = AS_ARR(arr);
    in->n = ar_size(A);
    in->ndim = ar_ndim(A);
    memcpy(in->shape, ar_shape(A), (size_t)in->ndim * sizeof(size_t));
    in->x = malloc((in->n + 1) * sizeof(double));
    memcpy(in->x, ar_f64_ro(A), in->n * sizeof(double));
    if (tmp) decref(arr);
    return true;
}

/* the input as the function sees it: duals (ntan tangents, input j seeds
 * tangent j), nested as lists for arrays; or plain numbers with x[j] moved by h */
static Value build_arg(const Input *in, int ntan, long moved, double h, size_t *pos, int depth)
{
    if (in->scalar || depth == in->ndim) {
        size_t j = *pos;
        (*pos)++;
        double x = in->x[j] + ((long)j == moved ? h : 0);
        if (ntan == 0) return v_num(x);
        ObjDual *d = dual_alloc(x, ntan);
        d->d[j] = 1;
        return v_obj(&d->h);
    }
    if (ntan == 0 && depth == 0) {
        /* plain runs keep the argument an array */
        char err[AR_ERRLEN];
        Array *a = ar_from_data(AR_F64, in->ndim, in->shape, in->x, err);
        if (!a) return v_nil();
        if (moved >= 0) ar_f64(a)[moved] += h;
        *pos += in->n;
        return arr_wrap(a);
    }
    size_t len = in->shape[depth];
    ObjList *l = list_new(len);
    for (size_t i = 0; i < len; i++) l->v[l->len++] = build_arg(in, ntan, moved, h, pos, depth + 1);
    return v_list(l);
}

/* one run of f on this VM with the argument replaced; the result as a value */
static Value run_once(VM *vm, ObjFunc *f, Value *params, int argnum, Value arg, uint64_t seed, uint64_t index,
                      const Node *site, QTape *tape)
{
    FnProto *p = f->p;
    size_t base = vm->sp;
    size_t need = (size_t)p->nlocals + 4;
    if (base + need >= vm->cap) { decref(arg); return vm_error(vm, site, "maximum recursion depth exceeded"); }
    Value *slots = vm->stack + base;
    CopyCtx cc;
    copy_init(&cc);
    cc.share_code = true;
    for (int i = 0; i < p->nparams; i++) slots[i] = i == argnum ? arg : value_copy_deep(params[i], &cc);
    copy_done(&cc);
    for (int i = p->nparams; i < p->nlocals; i++) slots[i] = v_unbound();
    vm->sp = base + (size_t)p->nlocals;
    Value r = qrt_run_with(vm, f, seed, index, slots, site, tape);
    vm->sp = base;
    return r;
}

static bool result_number(VM *vm, Value r, double *v, const double **d, int *n, const char *fname, const Node *site)
{
    *d = NULL;
    *n = 0;
    if (r.t == T_NUM) { *v = r.n; return true; }
    if (r.t == T_DUAL) { *v = AS_DUAL(r)->v; *d = AS_DUAL(r)->d; *n = AS_DUAL(r)->n; return true; }
    vm_error(vm, site, "grad: %s() must return a number (a scalar cost), not %s", fname, type_name(r));
    return false;
}

static Value make_result(VM *vm, const Input *in, const double *g, const Node *site)
{
    if (in->scalar) return v_num(g[0]);
    char err[AR_ERRLEN];
    Array *a = ar_from_data(AR_F64, in->ndim, in->shape, g, err);
    if (!a) return vm_error(vm, site, "%s", err);
    return arr_wrap(a);
}

/* ---- parameter-shift evaluations shared among workers ----
 * A job is a list of shifted runs; the gradient task and helper tasks on
 * idle workers claim runs from an atomic counter. The gradient task never
 * waits for a queued helper, only for runs in progress, so no worker can
 * block another. The master copies of the function and its arguments are
 * read (copied) by every runner and changed by none. */
typedef struct ShiftJob {
    atomic_int refs;
    atomic_int next, active;
    int total;
    int *op, *param;        /* run i: gate op[i], parameter param[i] moved by shift[i] */
    double *shift;
    double *out;            /* run i: the values of its expvals, nexp each */
    int nexp;
    uint64_t shape;         /* the forward pass's gates: every shifted run must repeat them */
    Value fn;               /* master copies */
    Value *params; int nparams;
    int argnum;
    Input in;
    uint64_t seed, index;
    Interp *interp;
    CopyCtx mods;           /* modules of the master copies */
    char err[1100];
    atomic_int failed;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} ShiftJob;

static void job_release(void *p)
{
    ShiftJob *j = p;
    if (atomic_fetch_sub_explicit(&j->refs, 1, memory_order_acq_rel) != 1) return;
    for (int i = 0; i < j->nparams; i++) decref(j->params[i]);
    copy_release_modules(&j->mods);
    decref(j->fn);
    free(j->params); free(j->op); free(j->param); free(j->out); free(j->in.x);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

/* claims and runs shifted evaluations until none is left */
static void job_work(ShiftJob *j, VM *vm)
{
    for (;;) {
        atomic_fetch_add(&j->active, 1);
        int i = atomic_fetch_add(&j->next, 1);
        if (i >= j->total || atomic_load(&j->failed)) {
            pthread_mutex_lock(&j->mu);
            atomic_fetch_sub(&j->active, 1);
            pthread_cond_broadcast(&j->cv);
            pthread_mutex_unlock(&j->mu);
            return;
        }
        CopyCtx cc;
        copy_init(&cc);
        Value fn = value_copy_deep(j->fn, &cc);
        Value *params = malloc((size_t)(j->nparams + 1) * sizeof(Value));
        for (int k = 0; k < j->nparams; k++) params[k] = value_copy_deep(j->params[k], &cc);
        copy_done(&cc);
        QTape st;
        memset(&st, 0, sizeof st);
        double evals[GRAD_MAX_EXPVALS];
        st.method = GRAD_SHIFT;
        st.shift_op = j->op[i];
        st.shift_param = j->param[i];
        st.shift = j->shift[i];
        st.evals = evals;
        size_t p0 = 0;
        Value plain = build_arg(&j->in, 0, -1, 0, &p0, 0);
        Value r = run_once(vm, AS_FUNC(fn), params, j->argnum, plain, j->seed, j->index, NULL, &st);
        tape_free(&st);
        if (IS_EXC(r)) {
            if (!atomic_exchange(&j->failed, 1)) snprintf(j->err, sizeof j->err, "%s", vm->err.msg);
        } else if (st.nevals != j->nexp || st.shape != j->shape) {
            if (!atomic_exchange(&j->failed, 1))
                snprintf(j->err, sizeof j->err, "grad(method=\"parameter-shift\"): the circuit changes when a gate angle is shifted "
                         "(it depends on a measured value); use method=\"finite-diff\"");
        } else {
            memcpy(j->out + (size_t)i * (size_t)j->nexp, evals, (size_t)j->nexp * sizeof(double));
        }
        if (!IS_EXC(r)) decref(r);
        for (int k = 0; k < j->nparams; k++) decref(params[k]);
        free(params);
        copy_release_modules(&cc);
        decref(fn);
        pthread_mutex_lock(&j->mu);
        atomic_fetch_sub(&j->active, 1);
        pthread_cond_broadcast(&j->cv);
        pthread_mutex_unlock(&j->mu);
    }
}

static void job_helper_run(void *p, ExecTask *t)
{
    ShiftJob *j = p;
    VM vm;
    vm_init(&vm, j->interp, true);
    vm.cancel = exec_task_cancel_flag(t);
    job_work(j, &vm);
    vm_free(&vm);
    exec_task_done(t, NULL, NULL);
}

/* runs every shifted evaluation, on idle workers too when there are any */
static bool run_shifts(VM *vm, ObjFunc *f, Value *params, int argnum, const Input *in, int *ops, int *prm,
                       double *shifts, int nruns, double *out, int nexp, uint64_t shape,
                       uint64_t seed, uint64_t index, const Node *site)
{
    ShiftJob *j = calloc(1, sizeof *j);
    atomic_init(&j->refs, 1);
    j->total = nruns;
    j->nexp = nexp;
    j->shape = shape;
    j->op = ops; j->param = prm; j->shift = shifts; j->out = out;
    j->argnum = argnum;
    j->in = *in;
    j->in.x = malloc((in->n + 1) * sizeof(double));
    memcpy(j->in.x, in->x, in->n * sizeof(double));
    j->seed = seed; j->index = index;
    j->interp = vm->in;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    CopyCtx cc;
    copy_init(&cc);
    /* the master copies may be freed by a helper thread: not this task's garbage */
    bool tracked = value_track_pause();
    j->fn = value_copy_deep(v_obj(&f->h), &cc);
    j->nparams = f->p->nparams;
    j->params = malloc((size_t)(j->nparams + 1) * sizeof(Value));
    for (int k = 0; k < j->nparams; k++) j->params[k] = value_copy_deep(params[k], &cc);
    copy_done(&cc);
    copy_move_modules(&j->mods, &cc);
    value_track_resume(tracked);
    Exec *e = vm->in->exec;
    if (e && vm->is_task && j->total > 1) {
        int helpers = exec_nworkers(e) - 1;
        if (helpers > j->total - 1) helpers = j->total - 1;
        for (int h = 0; h < helpers; h++) {
            atomic_fetch_add(&j->refs, 1);
            Fut *hf = exec_submit(e, job_helper_run, j, job_release, NULL, 0, "grad shift", site ? site->line : 0);
            if (hf) fut_release(hf);
        }
    }
    job_work(j, vm);
    pthread_mutex_lock(&j->mu);
    while (atomic_load(&j->active) > 0) pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
    bool ok = !atomic_load(&j->failed);
    if (!ok) vm_error(vm, site, "%s", j->err);
    j->op = NULL; j->param = NULL; j->shift = NULL; j->out = NULL;     /* the caller's arrays */
    job_release(j);
    return ok;
}

/* Computes grad(f)(params) on this VM. params: the bound parameters
 * (borrowed; each run copies them). */
static Value grad_compute(VM *vm, ObjFunc *f, Value *params, int argnum, GradMethod method, uint64_t seed, uint64_t index, const Node *site)
{
    const char *fname = f->p->name;
    Input in;
    if (!read_input(vm, params[argnum], &in, site, fname, argnum)) return v_exc();
    size_t n = in.n;
    double *g = calloc(n + 1, sizeof(double));
    Value result = v_nil();
    QTape tape;
    memset(&tape, 0, sizeof tape);
    tape.ninputs = (int)n;
    if (method == GRAD_ADJOINT || method == GRAD_SHIFT) {
        /* the forward pass: inputs and expvals carry tangents */
        tape.method = method;
        tape.ntan = (int)n + GRAD_MAX_EXPVALS;
        tape.record = true;
        size_t pos = 0;
        Value arg = build_arg(&in, tape.ntan, -1, 0, &pos, 0);
        Value r = run_once(vm, f, params, argnum, arg, seed, index, site, &tape);
        if (IS_EXC(r)) goto fail;
        double v;
        const double *d;
        int nd;
        if (!result_number(vm, r, &v, &d, &nd, fname, site)) { decref(r); goto fail; }
        for (size_t j = 0; j < n; j++) g[j] = d ? d[j] : 0;      /* the explicit dependence */
        double dr[GRAD_MAX_EXPVALS];                              /* d result / d expval_k */
        for (int k = 0; k < tape.nobs; k++) dr[k] = d ? d[n + (size_t)k] : 0;
        decref(r);
        if (tape.nondiff) {
            vm_error(vm, site, "grad(method=\"%s\") cannot follow %s(); use method=\"finite-diff\"",
                     method_names[method], tape.nondiff);
            goto fail;
        }
        if (method == GRAD_ADJOINT) {
            for (int k = 0; k < tape.nobs; k++)
                for (size_t j = 0; j < n; j++) g[j] += dr[k] * tape.adj[(size_t)k * n + j];
            goto done;
        }
        int nexp = tape.nobs;
        /* the runs: two-term rule (generator eigenvalues +-1/2, or 0 and 1),
         * or the four-term rule where the spectrum is {0, +-1/2} (controlled
         * rotations, Single/DoubleExcitation):
         * f' = c+ [f(t+pi/2) - f(t-pi/2)] - c- [f(t+3pi/2) - f(t-3pi/2)] */
        int nruns = 0, cap = 32;
        int *ops = malloc((size_t)cap * sizeof(int)), *prm = malloc((size_t)cap * sizeof(int));
        double *sh = malloc((size_t)cap * sizeof(double)), *coef = malloc((size_t)cap * sizeof(double));
        const double cp = (M_SQRT2 + 1) / (4 * M_SQRT2), cm = (M_SQRT2 - 1) / (4 * M_SQRT2);
        for (int k = 0; k < tape.nops; k++) {
            TapeOp *o = &tape.ops[k];
            if (!o->tan) continue;
            const SvGateInfo *gi = sv_gate_info(o->op.gate);
            bool phase_like = o->op.gate == SV_PHASESHIFT || o->op.gate == SV_CPHASE;
            bool four = o->op.nctrl ? !phase_like : !gi->shift_rule;
            for (int p = 0; p < o->op.nparams; p++) {
                bool any = false;
                for (size_t j = 0; j < n; j++) if (o->tan[(size_t)p * (size_t)tape.ntan + j] != 0) any = true;
                if (!any || !nexp) continue;
                if (nruns + 4 > cap) {
                    cap *= 2;
                    ops = realloc(ops, (size_t)cap * sizeof(int)); prm = realloc(prm, (size_t)cap * sizeof(int));
                    sh = realloc(sh, (size_t)cap * sizeof(double)); coef = realloc(coef, (size_t)cap * sizeof(double));
                }
                double s4[4] = { M_PI_2, -M_PI_2, 3 * M_PI_2, -3 * M_PI_2 };
                double c4[4] = { cp, -cp, -cm, cm };
                double c2[2] = { 0.5, -0.5 };
                int k_runs = four ? 4 : 2;
                for (int r = 0; r < k_runs; r++) {
                    ops[nruns] = k; prm[nruns] = p; sh[nruns] = s4[r];
                    coef[nruns] = four ? c4[r] : c2[r];
                    nruns++;
                }
            }
        }
        double *e = malloc((size_t)(nruns * nexp + 1) * sizeof(double));
        if (nruns && !run_shifts(vm, f, params, argnum, &in, ops, prm, sh, nruns, e, nexp, tape.shape, seed, index, site)) {
            free(ops); free(prm); free(sh); free(coef); free(e);
            goto fail;
        }
        for (int r = 0; r < nruns; r++) {
            TapeOp *o = &tape.ops[ops[r]];
            double w = 0;                       /* d result / d angle, through every expval */
            for (int k = 0; k < nexp; k++) w += dr[k] * e[(size_t)r * (size_t)nexp + (size_t)k];
            w *= coef[r];
            for (size_t j = 0; j < n; j++) g[j] += w * o->tan[(size_t)prm[r] * (size_t)tape.ntan + j];
        }
        free(ops); free(prm); free(sh); free(coef); free(e);
    } else {
        double h = 1e-6;
        for (size_t j = 0; j < n; j++) {
            double e[2];
            for (int s = 0; s < 2; s++) {
                size_t p0 = 0;
                Value plain = build_arg(&in, 0, (long)j, s == 0 ? h : -h, &p0, 0);
                Value rr = run_once(vm, f, params, argnum, plain, seed, index, site, NULL);
                if (IS_EXC(rr)) goto fail;
                double vv;
                const double *dd;
                int nn;
                if (!result_number(vm, rr, &vv, &dd, &nn, fname, site)) { decref(rr); goto fail; }
                decref(rr);
                e[s] = vv;
            }
            g[j] = (e[0] - e[1]) / (2 * h);
        }
    }
done:
    result = make_result(vm, &in, g, site);
    tape_free(&tape);
    free(g);
    free(in.x);
    return result;
fail:
    tape_free(&tape);
    free(g);
    free(in.x);
    return v_exc();
}

static const char *const kw_grad[] = { "argnum", "method", NULL };
static const BuiltinDef builtins_grad[] = {
    { "grad", bi_grad, 1, 1, 0, kw_grad, 0 },
    { NULL, NULL, 0, 0, 0, NULL, 0 },
};

static const TypeOps gradfn_ops = {
    .name = "function", .flags = TF_CODE,
    .free = grad_free, .clear = grad_clear, .traverse = grad_traverse,
    .copy = grad_copy, .repr = grad_repr, .call = gradfn_call,
};

void grad_open(void)
{
    type_register(T_GRADFN, &gradfn_ops);
    builtins_add(builtins_grad);
}
