/* eval.c — the tree-walking evaluator: expressions, statements, calls.
 * Works on one VM (one thread's state); names were resolved to slots
 * before, so nothing here looks a name up by string on the hot path.
 * Futures are resolved only where a value is needed (vm_force). Knows
 * values and the AST; reaches arrays, operators and tasks through eval.h. */
#include "eval.h"
#include "diag.h"

#include <complex.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/resource.h>

#define STACK_VALUES (1u << 18)
#define MAX_DEPTH 2500
#define MAX_KWARGS 64

/* ---------------------------------------------------------------- VM */

/* A worker runs one task VM at a time: its value stack is kept for the
 * next task on the same thread instead of being mapped afresh each time. */
static _Thread_local Value *spare_stack;
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;
static void spare_free(void *p) { free(p); }
static void spare_init(void) { pthread_key_create(&spare_key, spare_free); }

void vm_init(VM *vm, Interp *in, bool is_task)
{
    memset(vm, 0, sizeof *vm);
    vm->in = in;
    vm->is_task = is_task;
    vm->cap = STACK_VALUES;
    if (spare_stack) {
        vm->stack = spare_stack;
        spare_stack = NULL;
        pthread_setspecific(spare_key, NULL);
    }
    else vm->stack = malloc(vm->cap * sizeof(Value));
    if (!vm->stack) { fputs("qh: out of memory\n", stderr); abort(); }
    vm->max_depth = MAX_DEPTH;
    char here;
    vm->stack_base = &here;
    if (is_task) {
        vm->stack_limit = 48u << 20;            /* workers have 64 MiB stacks */
    } else {
        struct rlimit rl;
        size_t lim = 8u << 20;
        if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) lim = rl.rlim_cur;
        if (lim > (256u << 20)) lim = 256u << 20;
        vm->stack_limit = lim > (1u << 20) ? lim - (512u << 10) : lim / 2;
    }
    vm->ret = v_nil();
}

void vm_free(VM *vm)
{
    while (vm->sp) decref(vm->stack[--vm->sp]);
    if (vm->is_task && !spare_stack) {
        spare_stack = vm->stack;
        /* freed when the thread ends */
        pthread_once(&spare_once, spare_init);
        pthread_setspecific(spare_key, spare_stack);
    } else free(vm->stack);
    vm->stack = NULL;
}

/* Frees this thread's kept stack (threads call it as they end). */
void vm_thread_cleanup(void)
{
    free(spare_stack);
    spare_stack = NULL;
    pthread_once(&spare_once, spare_init);
    pthread_setspecific(spare_key, NULL);
}

/* ---------------------------------------------------------------- errors */

static const Source *cur_source(VM *vm)
{
    if (vm->frame && vm->frame->fn) return vm->frame->fn->p->mod->src;
    if (vm->top_src) return vm->top_src;
    return vm->mod ? vm->mod->info->src : NULL;
}
static const char *cur_fn_name(VM *vm)
{
    if (vm->frame && vm->frame->fn) return vm->frame->fn->p->name;
    if (vm->mod && vm->mod->name && strcmp(vm->mod->name, "__main__") != 0) return vm->mod->name;
    return "<main>";
}

Value vm_error(VM *vm, const Node *n, const char *fmt, ...)
{
    VMError *e = &vm->err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->src = cur_source(vm);
    e->line = n ? n->line : vm->cur_line;
    e->col = n ? n->col : 1;
    e->ntb = 0;
    e->dropped = 0;
    e->interrupted = false;
    e->tb[e->ntb++] = (TraceEnt){ e->src, e->line, cur_fn_name(vm) };
    return v_exc();
}

/* adds the caller's line as the error leaves a call */
void vm_tb_push(VM *vm, const Node *site)
{
    VMError *e = &vm->err;
    TraceEnt t = { cur_source(vm), site ? site->line : 0, cur_fn_name(vm) };
    if (e->ntb < (int)(sizeof e->tb / sizeof e->tb[0])) e->tb[e->ntb++] = t;
    else { e->dropped++; e->tb[e->ntb - 1] = t; }
}

void vm_print_error(VM *vm, FILE *out)
{
    VMError *e = &vm->err;
    diag_print(out, e->src, e->line, e->col, "error", e->msg);
    if (e->ntb > 1 || e->dropped) {
        fprintf(out, "traceback (most recent call last):\n");
        for (int i = e->ntb - 1; i >= 0; i--) {
            if (i == 0 && e->dropped) fprintf(out, "  ... %d more calls ...\n", e->dropped);
            fprintf(out, "  %s:%d: in %s\n", e->tb[i].src ? e->tb[i].src->name : "?", e->tb[i].line, e->tb[i].fn);
        }
    }
}

bool vm_check_interrupt(VM *vm)
{
    if (atomic_load_explicit(&vm->in->interrupt, memory_order_relaxed) ||
        (vm->cancel && atomic_load_explicit(vm->cancel, memory_order_relaxed))) {
        vm_error(vm, NULL, "interrupted");
        vm->err.interrupted = true;
        return true;
    }
    return false;
}

/* ---------------------------------------------------------------- modules */

static void module_free(Obj *o)
{
    ObjModule *m = (ObjModule *)o;
    for (int i = 0; i < m->nglobals; i++) decref(m->globals[i]);
    free(m->globals);
    free(m);
}

static void module_repr(Buf *b, Value v) { buf_printf(b, "<module %s>", AS_MOD(v)->name); }

/* a module copied into a task: its globals copied deep (shared by memo) */
static void module_clear(Obj *o)
{
    ObjModule *m = (ObjModule *)o;
    if (!m->globals) return;
    for (int i = 0; i < m->nglobals; i++) { Value v = m->globals[i]; m->globals[i] = v_unbound(); decref(v); }
}

static Value module_copy(Value v, CopyCtx *cc)
{
    ObjModule *m = AS_MOD(v);
    ObjModule *n = (ObjModule *)obj_alloc(sizeof(ObjModule), T_MODULE);
    copy_memo_put(cc, m, n);
    copy_note_module(cc, &n->h);
    n->info = m->info;
    n->name = m->name;
    n->loaded = true;
    n->nglobals = m->nglobals;
    n->globals = malloc((size_t)(m->nglobals + 1) * sizeof(Value));
    for (int i = 0; i < m->nglobals; i++) n->globals[i] = v_unbound();
    for (int i = 0; i < m->nglobals; i++) {
        Value g = m->globals[i];
        if (g.t == T_UNBOUND) continue;
        n->globals[i] = value_copy_deep(g, cc);
    }
    return v_obj(&n->h);
}

ObjModule *module_new(ModInfo *info, const char *name)
{
    ObjModule *m = (ObjModule *)obj_alloc(sizeof(ObjModule), T_MODULE);
    m->info = info;
    m->name = name;
    m->nglobals = 0;
    m->globals = NULL;
    module_grow(m);
    return m;
}

void module_grow(ObjModule *m)
{
    int n = m->info->nglobals;
    if (n <= m->nglobals) return;
    m->globals = realloc(m->globals, (size_t)(n + 1) * sizeof(Value));
    for (int i = m->nglobals; i < n; i++) {
        int bi = m->info->gbuiltin[i];
        m->globals[i] = bi >= 0 ? builtin_value(bi) : v_unbound();
    }
    m->nglobals = n;
}

/* ---------------------------------------------------------------- functions */

static void func_free(Obj *o)
{
    ObjFunc *f = (ObjFunc *)o;
    if (f->defaults) { for (int i = 0; i < f->p->nparams; i++) decref(f->defaults[i]); free(f->defaults); }
    if (f->up) { for (int i = 0; i < f->p->nupvals; i++) if (f->up[i]) decref(v_obj(&f->up[i]->h)); free(f->up); }
    decref(f->device);
    if (f->mod) decref(v_obj(&f->mod->h));
    free(f);
}

static void func_repr(Buf *b, Value v)
{
    ObjFunc *f = AS_FUNC(v);
    buf_printf(b, "<%s %s>", f->p->is_qfn ? "qfn" : "fn", f->p->name);
}

/* a function copied into a task: same code, copied defaults, cells, module */
static Value func_copy(Value v, CopyCtx *cc)
{
    ObjFunc *f = AS_FUNC(v);
    ObjFunc *n = (ObjFunc *)obj_alloc(sizeof(ObjFunc), T_FUNC);
    copy_memo_put(cc, f, n);
    n->p = f->p;
    n->device = v_nil();
    if (f->defaults) {
        n->defaults = malloc((size_t)f->p->nparams * sizeof(Value));
        for (int i = 0; i < f->p->nparams; i++) n->defaults[i] = value_copy_deep(f->defaults[i], cc);
    }
    if (f->p->nupvals) {
        n->up = calloc((size_t)f->p->nupvals, sizeof(ObjCell *));
        for (int i = 0; i < f->p->nupvals; i++) {
            Value c = value_copy_deep(v_obj(&f->up[i]->h), cc);
            n->up[i] = (ObjCell *)c.o;
        }
    }
    n->device = value_copy_deep(f->device, cc);
    Value mv = value_copy_deep(v_obj(&f->mod->h), cc);
    n->mod = (ObjModule *)mv.o;
    return v_obj(&n->h);
}

/* drops what a function holds: its defaults, cells, device and module */
static void func_clear(Obj *o)
{
    ObjFunc *f = (ObjFunc *)o;
    if (f->defaults) for (int i = 0; i < f->p->nparams; i++) { Value v = f->defaults[i]; f->defaults[i] = v_unbound(); decref(v); }
    if (f->up) for (int i = 0; i < f->p->nupvals; i++) { ObjCell *c = f->up[i]; f->up[i] = NULL; if (c) decref(v_obj(&c->h)); }
    Value d = f->device; f->device = v_nil(); decref(d);
    ObjModule *m = f->mod; f->mod = NULL; if (m) decref(v_obj(&m->h));
}

static void module_clear(Obj *o);
static const ObjHooks func_hooks = { func_free, func_repr, func_copy, NULL, func_clear };
static const ObjHooks module_hooks = { module_free, module_repr, module_copy, NULL, module_clear };

void eval_register_hooks(void);
void eval_register_hooks(void)
{
    value_set_hooks(T_FUNC, &func_hooks);
    value_set_hooks(T_MODULE, &module_hooks);
    value_set_module_clear(module_clear);
}

/* ---------------------------------------------------------------- helpers */

static inline Value *global_ref(VM *vm, int slot) { return &vm->mod->globals[slot]; }

Value vm_force(VM *vm, Value v, const Node *site)
{
    if (v.t == T_FUTURE) return future_force(vm, v, site);
    incref(v);
    return v;
}

bool vm_truthy(VM *vm, Value v, const Node *site, bool *err)
{
    switch (v.t) {
    case T_NIL: return false;
    case T_BOOL: return v.b;
    case T_NUM: return v.n != 0;
    case T_STR: return AS_STR(v)->len != 0;
    case T_LIST: return AS_LIST(v)->len != 0;
    case T_DICT: return AS_DICT(v)->len != 0;
    case T_COMPLEX: return AS_CPLX(v)->re != 0 || AS_CPLX(v)->im != 0;
    case T_DUAL: return dual_value(v) != 0;
    case T_ARRAY: {
        size_t n = arr_len(v);
        return n != 0;
    }
    case T_FUTURE: {
        Value r = future_force(vm, v, site);
        if (IS_EXC(r)) { *err = true; return false; }
        bool t = vm_truthy(vm, r, site, err);
        decref(r);
        return t;
    }
    default: return true;
    }
}

bool num_to_index(VM *vm, Value v, long len, long *out, const Node *site, const char *what)
{
    if (v.t == T_DUAL) v = v_num(dual_value(v));
    if (v.t != T_NUM) { vm_error(vm, site, "%s index must be a number, not %s", what, type_name(v)); return false; }
    double d = v.n;
    if (d != floor(d) || !isfinite(d)) { vm_error(vm, site, "%s index must be an integer, got %g", what, d); return false; }
    if (d < 0) d += (double)len;
    if (d < 0 || d >= (double)len) {
        vm_error(vm, site, "%s index %g out of range (length %ld)", what, v.n, len);
        return false;
    }
    *out = (long)d;
    return true;
}

bool eval_slice(VM *vm, Value lo, Value hi, Value step, long len, long *start, long *stop, long *st, const Node *site)
{
    long s = 1;
    if (step.t != T_NIL) {
        if (step.t != T_NUM || step.n != floor(step.n) || step.n == 0) {
            vm_error(vm, site, "slice step must be a nonzero integer");
            return false;
        }
        s = (long)step.n;
    }
    long a, b;
    Value bounds[2] = { lo, hi };
    long *outs[2] = { &a, &b };
    for (int i = 0; i < 2; i++) {
        Value x = bounds[i];
        if (x.t == T_NIL) {
            *outs[i] = i == 0 ? (s > 0 ? 0 : len - 1) : (s > 0 ? len : -len - 1);
            if (i == 1 && s < 0) *outs[i] = -1;
            continue;
        }
        if (x.t != T_NUM || x.n != floor(x.n)) { vm_error(vm, site, "slice bounds must be integers"); return false; }
        double d = x.n;
        if (d < 0) d += (double)len;
        if (s > 0) { if (d < 0) d = 0; if (d > (double)len) d = (double)len; }
        else { if (d < -1) d = -1; if (d > (double)len - 1) d = (double)len - 1; }
        *outs[i] = (long)d;
    }
    *start = a; *stop = b; *st = s;
    return true;
}

/* ---------------------------------------------------------------- arithmetic */

bool as_complex(Value v, double *re, double *im)
{
    if (v.t == T_NUM) { *re = v.n; *im = 0; return true; }
    if (v.t == T_COMPLEX) { *re = AS_CPLX(v)->re; *im = AS_CPLX(v)->im; return true; }
    return false;
}


static const char *op_sym(int op)
{
    static const char *s[] = { "+", "-", "*", "/", "//", "%", "**", "@", "==", "!=", "<", "<=", ">", ">=", "in", "not in", "-", "+" };
    return s[op];
}

static double py_mod(double a, double b)
{
    double r = fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

static Value num_op(VM *vm, int op, double a, double b, const Node *site)
{
    switch (op) {
    case OP_ADD: return v_num(a + b);
    case OP_SUB: return v_num(a - b);
    case OP_MUL: return v_num(a * b);
    case OP_DIV:
        if (b == 0) return vm_error(vm, site, "division by zero");
        return v_num(a / b);
    case OP_IDIV:
        if (b == 0) return vm_error(vm, site, "division by zero");
        return v_num(floor(a / b));
    case OP_MOD:
        if (b == 0) return vm_error(vm, site, "modulo by zero");
        return v_num(py_mod(a, b));
    case OP_POW:
        if (a < 0 && b != floor(b)) {
            /* like Python: a negative base to a fractional power is complex */
            double r = pow(-a, b), th = M_PI * b;
            return v_complex(r * cos(th), r * sin(th));
        }
        if (a == 0 && b < 0) return vm_error(vm, site, "zero to a negative power");
        return v_num(pow(a, b));
    case OP_LT: return v_bool(a < b);
    case OP_LE: return v_bool(a <= b);
    case OP_GT: return v_bool(a > b);
    case OP_GE: return v_bool(a >= b);
    case OP_EQ: return v_bool(a == b);
    case OP_NE: return v_bool(a != b);
    default: return vm_error(vm, site, "unsupported operand types for %s: number and number", op_sym(op));
    }
}

static Value complex_op(VM *vm, int op, double ar, double ai, double br, double bi, const Node *site)
{
    switch (op) {
    case OP_ADD: return v_complex(ar + br, ai + bi);
    case OP_SUB: return v_complex(ar - br, ai - bi);
    case OP_MUL: return v_complex(ar * br - ai * bi, ar * bi + ai * br);
    case OP_DIV: {
        if (br == 0 && bi == 0) return vm_error(vm, site, "division by zero");
        double _Complex z = (ar + ai * _Complex_I) / (br + bi * _Complex_I);
        return v_complex(creal(z), cimag(z));
    }
    case OP_POW: {
        if (br == 0 && bi == 0) return v_complex(1, 0);
        if (ar == 0 && ai == 0) {
            if (bi != 0 || br < 0) return vm_error(vm, site, "zero to a negative or complex power");
            return v_complex(0, 0);
        }
        double _Complex z = cpow(ar + ai * _Complex_I, br + bi * _Complex_I);
        if (bi == 0 && br == floor(br) && fabs(br) <= 64) {
            /* exact integer powers, as Python does by repeated multiplication */
            double _Complex base = ar + ai * _Complex_I, acc = 1;
            long n = (long)fabs(br);
            while (n) { if (n & 1) acc *= base; base *= base; n >>= 1; }
            z = br < 0 ? 1.0 / acc : acc;
        }
        return v_complex(creal(z), cimag(z));
    }
    case OP_EQ: return v_bool(ar == br && ai == bi);
    case OP_NE: return v_bool(!(ar == br && ai == bi));
    default: return vm_error(vm, site, "unsupported operation %s on complex numbers", op_sym(op));
    }
}

static Value seq_repeat(VM *vm, Value seq, double times, const Node *site)
{
    if (times != floor(times)) return vm_error(vm, site, "can only repeat a sequence an integer number of times");
    long n = times < 0 ? 0 : (long)times;
    if (seq.t == T_STR) {
        ObjStr *s = AS_STR(seq);
        if (n && (double)s->len * (double)n > 2e9) return vm_error(vm, site, "string too long (%.0f bytes)", (double)s->len * (double)n);
        ObjStr *r = str_alloc(s->len * (size_t)n);
        for (long i = 0; i < n; i++) memcpy(r->s + (size_t)i * s->len, s->s, s->len);
        str_finish(r);
        return v_obj(&r->h);
    }
    ObjList *l = AS_LIST(seq);
    if (l->len && l->v[0].t == T_DUAL)
        return vm_error(vm, site, "arithmetic on a whole differentiated array: inside grad an array argument is a list of numbers, index its elements");
    if (n && (double)l->len * (double)n > 1e9) return vm_error(vm, site, "list too long");
    ObjList *r = list_new(l->len * (size_t)n);
    for (long i = 0; i < n; i++)
        for (size_t k = 0; k < l->len; k++) { incref(l->v[k]); r->v[r->len++] = l->v[k]; }
    return v_list(r);
}

static int str_cmp(ObjStr *a, ObjStr *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->s, b->s, n);
    if (c) return c;
    return a->len < b->len ? -1 : a->len > b->len;
}

static Value contains(VM *vm, Value coll, Value x, const Node *site)
{
    switch (coll.t) {
    case T_LIST: {
        ObjList *l = AS_LIST(coll);
        for (size_t i = 0; i < l->len; i++) {
            Value e = l->v[i];
            if (e.t == T_FUTURE) {
                Value r = future_force(vm, e, site);
                if (IS_EXC(r)) return r;
                bool eq = value_eq(r, x);
                decref(r);
                if (eq) return v_bool(true);
                continue;
            }
            if (value_eq(e, x)) return v_bool(true);
        }
        return v_bool(false);
    }
    case T_DICT: {
        if (!key_ok(x)) return v_bool(false);
        Value o;
        return v_bool(dict_get(AS_DICT(coll), x, &o));
    }
    case T_STR:
        if (x.t != T_STR) return vm_error(vm, site, "'in <string>' needs a string on the left, not %s", type_name(x));
        return v_bool(memmem(AS_STR(coll)->s, AS_STR(coll)->len, AS_STR(x)->s, AS_STR(x)->len) != NULL);
    case T_ARRAY: {
        bool err = false;
        bool r = arr_contains(vm, coll, x, site, &err);
        return err ? v_exc() : v_bool(r);
    }
    default:
        return vm_error(vm, site, "'in' needs a list, dict, string or array on the right, not %s", type_name(coll));
    }
}

/* Slow path of binary operators: everything but number op number. */
Value vm_binop(VM *vm, int op, Value a, Value b, const Node *site)
{
    if (a.t == T_FUTURE || b.t == T_FUTURE) {
        Value fa = vm_force(vm, a, site);
        if (IS_EXC(fa)) return fa;
        Value fb = vm_force(vm, b, site);
        if (IS_EXC(fb)) { decref(fa); return fb; }
        Value r = vm_binop(vm, op, fa, fb, site);
        decref(fa); decref(fb);
        return r;
    }
    if (a.t == T_NUM && b.t == T_NUM) return num_op(vm, op, a.n, b.n, site);
    if ((a.t == T_DUAL || b.t == T_DUAL) && op != OP_IN && op != OP_NOTIN) return dual_binop(vm, op, a, b, site);
    if (op == OP_IN) return contains(vm, b, a, site);
    if (op == OP_NOTIN) {
        Value r = contains(vm, b, a, site);
        if (IS_EXC(r)) return r;
        return v_bool(!r.b);
    }
    if (a.t == T_ARRAY || b.t == T_ARRAY) return arr_binop(vm, op, a, b, site);
    if (a.t == T_OP || b.t == T_OP) return qrt_binop(vm, op, a, b, site);
    double ar, ai, br, bi;
    if (as_complex(a, &ar, &ai) && as_complex(b, &br, &bi)) {
        if (op == OP_EQ || op == OP_NE || a.t == T_COMPLEX || b.t == T_COMPLEX)
            return complex_op(vm, op, ar, ai, br, bi, site);
    }
    if (op == OP_EQ) return v_bool(value_eq(a, b));
    if (op == OP_NE) return v_bool(!value_eq(a, b));
    if (a.t == T_STR && b.t == T_STR) {
        ObjStr *x = AS_STR(a), *y = AS_STR(b);
        switch (op) {
        case OP_ADD: {
            if ((size_t)x->len + y->len > 0xfffffff0u) return vm_error(vm, site, "string too long");
            ObjStr *r = str_alloc((size_t)x->len + y->len);
            memcpy(r->s, x->s, x->len);
            memcpy(r->s + x->len, y->s, y->len);
            str_finish(r);
            return v_obj(&r->h);
        }
        case OP_LT: return v_bool(str_cmp(x, y) < 0);
        case OP_LE: return v_bool(str_cmp(x, y) <= 0);
        case OP_GT: return v_bool(str_cmp(x, y) > 0);
        case OP_GE: return v_bool(str_cmp(x, y) >= 0);
        default: break;
        }
    }
    if (a.t == T_LIST && b.t == T_LIST && op == OP_ADD) {
        ObjList *x = AS_LIST(a), *y = AS_LIST(b);
        if ((x->len && x->v[0].t == T_DUAL) || (y->len && y->v[0].t == T_DUAL))
            return vm_error(vm, site, "arithmetic on a whole differentiated array: inside grad an array argument is a list of numbers, index its elements");
        ObjList *r = list_new(x->len + y->len);
        for (size_t i = 0; i < x->len; i++) { incref(x->v[i]); r->v[r->len++] = x->v[i]; }
        for (size_t i = 0; i < y->len; i++) { incref(y->v[i]); r->v[r->len++] = y->v[i]; }
        return v_list(r);
    }
    if (a.t == T_LIST && b.t == T_LIST && op >= OP_LT && op <= OP_GE) {
        ObjList *x = AS_LIST(a), *y = AS_LIST(b);
        size_t n = x->len < y->len ? x->len : y->len;
        for (size_t i = 0; i < n; i++) {
            if (value_eq(x->v[i], y->v[i])) continue;
            return vm_binop(vm, op, x->v[i], y->v[i], site);
        }
        double lx = (double)x->len, ly = (double)y->len;
        return num_op(vm, op, lx, ly, site);
    }
    if (op == OP_MUL && (a.t == T_STR || a.t == T_LIST) && b.t == T_NUM) return seq_repeat(vm, a, b.n, site);
    if (op == OP_MUL && (b.t == T_STR || b.t == T_LIST) && a.t == T_NUM) return seq_repeat(vm, b, a.n, site);
    if (op == OP_MOD && a.t == T_STR) return vm_error(vm, site, "use fmt(format, args...) to format strings");
    return vm_error(vm, site, "unsupported operand types for %s: %s and %s", op_sym(op), type_name(a), type_name(b));
}

static Value unary_neg(VM *vm, Value v, const Node *site, bool neg)
{
    switch (v.t) {
    case T_NUM: return v_num(neg ? -v.n : v.n);
    case T_COMPLEX: return neg ? v_complex(-AS_CPLX(v)->re, -AS_CPLX(v)->im) : (incref(v), v);
    case T_ARRAY: if (!neg) { incref(v); return v; } return arr_unary_neg(vm, v, site);
    case T_OP: if (!neg) { incref(v); return v; } return qrt_binop(vm, OP_MUL, v_num(-1), v, site);
    case T_DUAL: if (!neg) { incref(v); return v; } return dual_binop(vm, OP_MUL, v_num(-1), v, site);
    case T_FUTURE: {
        Value r = future_force(vm, v, site);
        if (IS_EXC(r)) return r;
        Value x = unary_neg(vm, r, site, neg);
        decref(r);
        return x;
    }
    default: return vm_error(vm, site, "bad operand type for unary %s: %s", neg ? "-" : "+", type_name(v));
    }
}

/* ---------------------------------------------------------------- indexing */

static Value index_value(VM *vm, Value obj, Value *idx, Node **nodes, int nidx, const Node *site)
{
    if (obj.t == T_FUTURE) {
        Value r = future_force(vm, obj, site);
        if (IS_EXC(r)) return r;
        Value x = index_value(vm, r, idx, nodes, nidx, site);
        decref(r);
        return x;
    }
    if (obj.t == T_ARRAY) return arr_index(vm, obj, idx, nodes, nidx, site);
    if (nidx > 1 && obj.t == T_LIST) {
        /* nested lists: a[i, j] is a[i][j] */
        Value cur = obj;
        incref(cur);
        for (int k = 0; k < nidx; k++) {
            Value nx = index_value(vm, cur, idx + k, nodes + k, 1, site);
            decref(cur);
            if (IS_EXC(nx)) return nx;
            cur = nx;
        }
        return cur;
    }
    if (nidx != 1) return vm_error(vm, site, "a %s takes one index, not %d", type_name(obj), nidx);
    Value i = idx[0];
    bool slice = nodes[0]->kind == N_SLICE;
    switch (obj.t) {
    case T_LIST: {
        ObjList *l = AS_LIST(obj);
        if (slice) {
            ObjList *sl = AS_LIST(i);
            long a, b, s;
            if (!eval_slice(vm, sl->v[0], sl->v[1], sl->v[2], (long)l->len, &a, &b, &s, site)) return v_exc();
            ObjList *r = list_new(0);
            for (long k = a; s > 0 ? k < b : k > b; k += s) { incref(l->v[k]); list_push(r, l->v[k]); }
            return v_list(r);
        }
        long k;
        if (!num_to_index(vm, i, (long)l->len, &k, nodes[0], "list")) return v_exc();
        incref(l->v[k]);
        return l->v[k];
    }
    case T_DICT: {
        if (slice) return vm_error(vm, site, "a dict cannot be sliced");
        if (!key_ok(i)) return vm_error(vm, nodes[0], "dict keys are numbers, strings or bools, not %s", type_name(i));
        Value out;
        if (!dict_get(AS_DICT(obj), i, &out)) {
            Buf b; buf_init(&b);
            value_repr(&b, i, true);
            vm_error(vm, nodes[0], "key %s not in dict", b.p);
            buf_free(&b);
            return v_exc();
        }
        incref(out);
        return out;
    }
    case T_STR: {
        ObjStr *s = AS_STR(obj);
        long n = (long)str_nchars(s);
        if (slice) {
            ObjList *sl = AS_LIST(i);
            long a, b, st;
            if (!eval_slice(vm, sl->v[0], sl->v[1], sl->v[2], n, &a, &b, &st, site)) return v_exc();
            if (st == 1) {
                if (b < a) b = a;
                size_t o1 = str_offset(s, (size_t)a), o2 = str_offset(s, (size_t)b);
                return v_strn(s->s + o1, o2 - o1);
            }
            Buf bf; buf_init(&bf);
            for (long k = a; st > 0 ? k < b : k > b; k += st) {
                size_t o1 = str_offset(s, (size_t)k), o2 = str_offset(s, (size_t)k + 1);
                buf_put(&bf, s->s + o1, o2 - o1);
            }
            Value r = v_strn(bf.p ? bf.p : "", bf.len);
            buf_free(&bf);
            return r;
        }
        long k;
        if (!num_to_index(vm, i, n, &k, nodes[0], "string")) return v_exc();
        size_t o1 = str_offset(s, (size_t)k), o2 = str_offset(s, (size_t)k + 1);
        return v_strn(s->s + o1, o2 - o1);
    }
    case T_FUTURE: {
        Value r = future_force(vm, obj, site);
        if (IS_EXC(r)) return r;
        Value x = index_value(vm, r, idx, nodes, nidx, site);
        decref(r);
        return x;
    }
    default:
        return vm_error(vm, site, "%s is not indexable", type_name(obj));
    }
}

static bool set_index(VM *vm, Value obj, Value *idx, Node **nodes, int nidx, Value v, const Node *site)
{
    if (obj.t == T_FUTURE) {
        Value r = future_force(vm, obj, site);
        if (IS_EXC(r)) return false;
        bool ok = set_index(vm, r, idx, nodes, nidx, v, site);
        decref(r);
        return ok;
    }
    if (obj.t == T_ARRAY) return arr_setindex(vm, obj, idx, nodes, nidx, v, site);
    if (nidx != 1) { vm_error(vm, site, "a %s takes one index, not %d", type_name(obj), nidx); return false; }
    if (nodes[0]->kind == N_SLICE) { vm_error(vm, site, "slice assignment is only for arrays"); return false; }
    Value i = idx[0];
    switch (obj.t) {
    case T_LIST: {
        ObjList *l = AS_LIST(obj);
        long k;
        if (!num_to_index(vm, i, (long)l->len, &k, nodes[0], "list")) return false;
        incref(v);
        decref(l->v[k]);
        l->v[k] = v;
        return true;
    }
    case T_DICT:
        if (!key_ok(i)) { vm_error(vm, nodes[0], "dict keys are numbers, strings or bools, not %s", type_name(i)); return false; }
        dict_set(AS_DICT(obj), i, v);
        return true;
    case T_STR: vm_error(vm, site, "strings are immutable"); return false;
    case T_FUTURE: {
        Value r = future_force(vm, obj, site);
        if (IS_EXC(r)) return false;
        bool ok = set_index(vm, r, idx, nodes, nidx, v, site);
        decref(r);
        return ok;
    }
    default: vm_error(vm, site, "%s does not support element assignment", type_name(obj)); return false;
    }
}

/* evaluates the subscripts of an index node; slices become [lo, hi, step] lists */
static Value eval(VM *vm, Node *n);
static bool eval_subscripts(VM *vm, Node *n, Value *out)
{
    for (int k = 0; k < n->u.index.nidx; k++) {
        Node *s = n->u.index.idx[k];
        if (s->kind == N_SLICE) {
            ObjList *l = list_new(3);
            Node *parts[3] = { s->u.slice.lo, s->u.slice.hi, s->u.slice.step };
            for (int j = 0; j < 3; j++) {
                Value x = v_nil();
                if (parts[j]) {
                    Value raw = eval(vm, parts[j]);
                    if (IS_EXC(raw)) { decref(v_list(l)); goto fail; }
                    x = vm_force(vm, raw, parts[j]);
                    decref(raw);
                    if (IS_EXC(x)) { decref(v_list(l)); goto fail; }
                }
                l->v[l->len++] = x;
            }
            out[k] = v_list(l);
        } else {
            Value raw = eval(vm, s);
            if (IS_EXC(raw)) goto fail;
            out[k] = vm_force(vm, raw, s);
            decref(raw);
            if (IS_EXC(out[k])) goto fail;
        }
        continue;
    fail:
        for (int j = 0; j < k; j++) decref(out[j]);
        return false;
    }
    return true;
}

/* ---------------------------------------------------------------- calls */

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

bool eval_bind_args(VM *vm, ObjFunc *f, Value *slots, int nargs, Args *kw, const Node *site)
{
    FnProto *p = f->p;
    if (nargs > p->nparams) {
        for (int i = 0; i < nargs; i++) decref(slots[i]);
        vm_error(vm, site, "%s() takes %d argument%s but %d were given", p->name, p->nparams, p->nparams == 1 ? "" : "s", nargs);
        return false;
    }
    for (int i = nargs; i < p->nlocals; i++) slots[i] = v_unbound();
    if (kw) {
        for (int k = 0; k < kw->nkw; k++) {
            int at = -1;
            for (int i = 0; i < p->nparams; i++) if (str_eq(p->param_keys[i], kw->kwname[k])) { at = i; break; }
            if (at < 0 || slots[at].t != T_UNBOUND) {
                for (int i = 0; i < p->nparams; i++) decref(slots[i]);
                for (int j = k; j < kw->nkw; j++) decref(kw->kw[j]);
                if (at < 0) vm_error(vm, site, "%s() got an unexpected keyword argument '%s'", p->name, kw->kwname[k]->s);
                else vm_error(vm, site, "%s() got multiple values for argument '%s'", p->name, kw->kwname[k]->s);
                return false;
            }
            slots[at] = kw->kw[k];
        }
    }
    for (int i = nargs; i < p->nparams; i++) {
        if (slots[i].t != T_UNBOUND) continue;
        if (f->defaults && f->defaults[i].t != T_UNBOUND) { slots[i] = f->defaults[i]; incref(slots[i]); continue; }
        for (int j = 0; j < p->nparams; j++) decref(slots[j]);
        vm_error(vm, site, "%s() missing argument '%s'", p->name, p->params[i]);
        return false;
    }
    return true;
}

static ExecStatus exec_block(VM *vm, Node *b);

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
    ExecStatus st = exec_block(vm, p->body);
    vm->depth--;
    vm->frame = fr.parent;
    vm->mod = saved_mod;
    for (int i = 0; i < p->nlocals; i++) decref(slots[i]);
    if (st == S_ERR) { vm_tb_push(vm, site); return v_exc(); }
    if (st == S_RETURN) { Value r = vm->ret; vm->ret = v_nil(); return r; }
    return v_nil();
}

/* call -> callee(args): evaluates the arguments on the VM stack, where they
 * become the callee's frame */
static Value eval_call_general(VM *vm, Node *n, Value callee);

/* The common case first: a plain function with positional arguments only,
 * whose arguments become its frame in place. */
static Value eval_call(VM *vm, Node *n)
{
    Value callee = eval(vm, n->u.call.fn);
    if (IS_EXC(callee)) return callee;
    if (callee.t == T_BUILTIN && !n->u.call.nkw) {
        /* a builtin with positional arguments: straight to its function */
        const BuiltinDef *bd = callee.bi;
        int nargs = n->u.call.nargs;
        if (nargs < bd->min || (bd->max >= 0 && nargs > bd->max) || !bd->fn) return eval_call_general(vm, n, callee);
        size_t base = vm->sp;
        if (base + (size_t)nargs + 8 >= vm->cap) return vm_error(vm, n, "maximum recursion depth exceeded (value stack full)");
        for (int i = 0; i < nargs; i++) {
            Value v = eval(vm, n->u.call.args[i]);
            if (IS_EXC(v)) { while (vm->sp > base) decref(vm->stack[--vm->sp]); return v; }
            if (v.t == T_FUTURE && !(bd->flags & BI_LAZY)) {
                Value r = future_force(vm, v, n->u.call.args[i]);
                decref(v);
                if (IS_EXC(r)) { while (vm->sp > base) decref(vm->stack[--vm->sp]); return r; }
                v = r;
            }
            vm->stack[vm->sp++] = v;
        }
        Args a = { nargs, vm->stack + base, 0, NULL, NULL, n, bd };
        Value r = bd->fn(vm, &a);
        while (vm->sp > base) decref(vm->stack[--vm->sp]);
        return r;
    }
    if (callee.t != T_FUNC || n->u.call.nkw) return eval_call_general(vm, n, callee);
    ObjFunc *f = AS_FUNC(callee);
    FnProto *p = f->p;
    int nargs = n->u.call.nargs;
    if (p->is_qfn || nargs > p->nparams) return eval_call_general(vm, n, callee);
    size_t base = vm->sp;
    int nl = p->nlocals;
    if (base + (size_t)nl + 8 >= vm->cap) { decref(callee); return vm_error(vm, n, "maximum recursion depth exceeded (value stack full)"); }
    Value *slots = vm->stack + base;
    for (int i = 0; i < nargs; i++) {
        Value v = eval(vm, n->u.call.args[i]);
        if (IS_EXC(v)) {
            while (vm->sp > base) decref(vm->stack[--vm->sp]);
            decref(callee);
            return v;
        }
        vm->stack[vm->sp++] = v;
    }
    vm->sp = base + (size_t)nl;
    if (nargs < p->nparams || nl > nargs) {
        if (!eval_bind_args(vm, f, slots, nargs, NULL, n)) { vm->sp = base; decref(callee); return v_exc(); }
    }
    Value r = eval_run_body(vm, f, slots, n);
    vm->sp = base;
    decref(callee);
    return r;
}

__attribute__((noinline))
static Value eval_call_general(VM *vm, Node *n, Value callee)
{
    if (callee.t == T_FUTURE) {
        Value r = future_force(vm, callee, n);
        decref(callee);
        if (IS_EXC(r)) return r;
        callee = r;
    }
    int nargs = n->u.call.nargs, nkw = n->u.call.nkw;
    ObjStr *kwnames[MAX_KWARGS];
    size_t base = vm->sp;
    size_t need = (size_t)nargs + (size_t)nkw + 8;
    if (callee.t == T_FUNC) need += (size_t)AS_FUNC(callee)->p->nlocals;
    if (base + need >= vm->cap) { decref(callee); return vm_error(vm, n, "maximum recursion depth exceeded (value stack full)"); }
    for (int i = 0; i < nargs; i++) {
        Value v = eval(vm, n->u.call.args[i]);
        if (IS_EXC(v)) goto fail;
        vm->stack[vm->sp++] = v;
    }
    for (int i = 0; i < nkw; i++) {
        Value v = eval(vm, n->u.call.kw[i].value);
        if (IS_EXC(v)) goto fail;
        vm->stack[vm->sp++] = v;
        kwnames[i] = n->u.call.kw[i].key;
    }
    Value *argv = vm->stack + base;
    Value result;
    if (callee.t == T_FUNC) {
        ObjFunc *f = AS_FUNC(callee);
        Value *slots = argv;
        Args kw = { 0, NULL, nkw, kwnames, argv + nargs, n, NULL };
        if (nkw) {
            /* keywords sit after the positionals: move them out of the frame's way */
            Value tmp[nkw];
            memcpy(tmp, argv + nargs, (size_t)nkw * sizeof(Value));
            kw.kw = tmp;
            vm->sp = base + (size_t)(f->p->nlocals > nargs ? f->p->nlocals : nargs);
            if (!eval_bind_args(vm, f, slots, nargs, &kw, n)) { vm->sp = base; decref(callee); return v_exc(); }
        } else {
            vm->sp = base + (size_t)(f->p->nlocals > nargs ? f->p->nlocals : nargs);
            if (!eval_bind_args(vm, f, slots, nargs, NULL, n)) { vm->sp = base; decref(callee); return v_exc(); }
        }
        if (f->p->is_qfn) result = qfn_call(vm, f, slots, n);
        else result = eval_run_body(vm, f, slots, n);
        vm->sp = base;
        decref(callee);
        return result;
    }
    if (callee.t == T_BUILTIN) {
        const BuiltinDef *bd = callee.bi;
        if (!(bd->flags & BI_LAZY)) {
            for (int i = 0; i < nargs + nkw; i++) {
                if (argv[i].t == T_FUTURE) {
                    Value r = future_force(vm, argv[i], n->u.call.args[i < nargs ? i : 0]);
                    if (IS_EXC(r)) goto fail;
                    decref(argv[i]);
                    argv[i] = r;
                }
            }
        }
        Args a = { nargs, argv, nkw, kwnames, argv + nargs, n, NULL };
        result = vm_call_kw(vm, callee, &a);
        while (vm->sp > base) decref(vm->stack[--vm->sp]);
        return result;
    }
    if (callee.t == T_GRADFN) {
        Args a = { nargs, argv, nkw, kwnames, argv + nargs, n, NULL };
        result = vm_call_kw(vm, callee, &a);
        while (vm->sp > base) decref(vm->stack[--vm->sp]);
        decref(callee);
        return result;
    }
    vm_error(vm, n, "%s is not callable", type_name(callee));
fail:
    while (vm->sp > base) decref(vm->stack[--vm->sp]);
    decref(callee);
    return v_exc();
}

Value gradfn_call(VM *vm, Value g, Args *a);

/* Calls a builtin or function with already-evaluated arguments (borrowed). */
Value vm_call_kw(VM *vm, Value fn, Args *a)
{
    if (fn.t == T_BUILTIN) {
        const BuiltinDef *bd = fn.bi;
        if (a->n < bd->min || (bd->max >= 0 && a->n > bd->max)) {
            if (bd->min == bd->max)
                return vm_error(vm, a->site, "%s() takes %d argument%s but %d were given", bd->name, bd->min, bd->min == 1 ? "" : "s", a->n);
            if (a->n < bd->min)
                return vm_error(vm, a->site, "%s() takes at least %d argument%s but %d were given", bd->name, bd->min, bd->min == 1 ? "" : "s", a->n);
            return vm_error(vm, a->site, "%s() takes at most %d argument%s but %d were given", bd->name, bd->max, bd->max == 1 ? "" : "s", a->n);
        }
        for (int k = 0; k < a->nkw; k++) {
            bool ok = false;
            for (const char *const *w = bd->kwnames; w && *w; w++) if (strcmp(*w, a->kwname[k]->s) == 0) ok = true;
            if (!ok) return vm_error(vm, a->site, "%s() got an unexpected keyword argument '%s'", bd->name, a->kwname[k]->s);
        }
        a->def = bd;
        return bd->fn(vm, a);
    }
    if (fn.t == T_FUNC) {
        ObjFunc *f = AS_FUNC(fn);
        size_t base = vm->sp;
        size_t need = (size_t)(f->p->nlocals > a->n ? f->p->nlocals : a->n) + 4;
        if (base + need >= vm->cap) return vm_error(vm, a->site, "maximum recursion depth exceeded (value stack full)");
        Value *slots = vm->stack + base;
        for (int i = 0; i < a->n; i++) { incref(a->v[i]); slots[i] = a->v[i]; }
        Value kwv[a->nkw ? a->nkw : 1];
        for (int i = 0; i < a->nkw; i++) { incref(a->kw[i]); kwv[i] = a->kw[i]; }
        Args kw = { 0, NULL, a->nkw, a->kwname, kwv, a->site, NULL };
        vm->sp = base + need - 4;
        if (!eval_bind_args(vm, f, slots, a->n, &kw, a->site)) { vm->sp = base; return v_exc(); }
        Value r = f->p->is_qfn ? qfn_call(vm, f, slots, a->site) : eval_run_body(vm, f, slots, a->site);
        vm->sp = base;
        return r;
    }
    if (fn.t == T_GRADFN) return gradfn_call(vm, fn, a);
    if (fn.t == T_FUTURE) {
        Value r = future_force(vm, fn, a->site);
        if (IS_EXC(r)) return r;
        Value x = vm_call_kw(vm, r, a);
        decref(r);
        return x;
    }
    return vm_error(vm, a->site, "%s is not callable", type_name(fn));
}

Value vm_call(VM *vm, Value fn, int nargs, Value *args, Node *site)
{
    Args a = { nargs, args, 0, NULL, NULL, site, NULL };
    return vm_call_kw(vm, fn, &a);
}

/* ---------------------------------------------------------------- closures */

static Value make_closure(VM *vm, FnProto *p)
{
    ObjFunc *f = (ObjFunc *)obj_alloc(sizeof(ObjFunc), T_FUNC);
    f->p = p;
    f->mod = vm->mod;
    incref(v_obj(&vm->mod->h));
    f->device = v_nil();
    Value fv = v_obj(&f->h);
    if (p->nparams) {
        f->defaults = malloc((size_t)p->nparams * sizeof(Value));
        for (int i = 0; i < p->nparams; i++) f->defaults[i] = v_unbound();
        for (int i = 0; i < p->nparams; i++) {
            if (!p->defaults[i]) continue;
            Value d = eval(vm, p->defaults[i]);
            if (IS_EXC(d)) { decref(fv); return d; }
            f->defaults[i] = d;
        }
    }
    if (p->nupvals) {
        f->up = calloc((size_t)p->nupvals, sizeof(ObjCell *));
        for (int i = 0; i < p->nupvals; i++) {
            UpvalDesc d = p->upvals[i];
            ObjCell *c = d.from_local ? AS_CELL(vm->frame->slots[d.index]) : vm->frame->fn->up[d.index];
            incref(v_obj(&c->h));
            f->up[i] = c;
        }
    }
    if (p->device) {
        Value d = eval(vm, p->device);
        if (IS_EXC(d)) { decref(fv); return d; }
        Value dd = vm_force(vm, d, p->device);
        decref(d);
        if (IS_EXC(dd)) { decref(fv); return dd; }
        if (dd.t != T_DEVICE) {
            decref(fv);
            Value e = vm_error(vm, p->device, "qfn %s: 'on' needs a device, not %s", p->name, type_name(dd));
            decref(dd);
            return e;
        }
        f->device = dd;
    }
    return fv;
}

/* ---------------------------------------------------------------- expressions */

static Value eval_name_error(VM *vm, Node *n)
{
    if (n->kind == N_GLOBAL) return vm_error(vm, n, "name '%s' is not defined", n->u.var.name);
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

__attribute__((noinline))
static Value eval_cold(VM *vm, Node *n)
{
    switch (n->kind) {
    case N_NUM: return v_num(n->u.num);
    case N_IMAG: return v_complex(0, n->u.num);
    case N_STR: return v_obj(&n->u.str->h);
    case N_TRUE: return v_bool(true);
    case N_FALSE: return v_bool(false);
    case N_NIL: return v_nil();
    case N_LOCAL: {
        Value v = vm->frame->slots[n->u.var.slot];
        if (v.t == T_UNBOUND) return eval_name_error(vm, n);
        incref(v);
        return v;
    }
    case N_LOCALCELL: {
        Value v = AS_CELL(vm->frame->slots[n->u.var.slot])->v;
        if (v.t == T_UNBOUND) return eval_name_error(vm, n);
        incref(v);
        return v;
    }
    case N_UPVAL: {
        Value v = vm->frame->fn->up[n->u.var.slot]->v;
        if (v.t == T_UNBOUND) return vm_error(vm, n, "free variable '%s' used before it was assigned", n->u.var.name);
        incref(v);
        return v;
    }
    case N_GLOBAL: {
        Value v = *global_ref(vm, n->u.var.slot);
        if (v.t == T_UNBOUND) return eval_name_error(vm, n);
        incref(v);
        return v;
    }
    case N_BUILTIN: return builtin_value(n->u.var.slot);
    /* N_BINARY, N_CALL and bound variables are handled by eval() */
    case N_UNARY: {
        Value a = eval(vm, n->u.bin.a);
        if (IS_EXC(a)) return a;
        if (a.t == T_NUM) return v_num(n->op == OP_NEG ? -a.n : a.n);
        Value r = unary_neg(vm, a, n, n->op == OP_NEG);
        decref(a);
        return r;
    }
    case N_NOT: {
        Value a = eval(vm, n->u.bin.a);
        if (IS_EXC(a)) return a;
        bool err = false;
        bool t = vm_truthy(vm, a, n, &err);
        decref(a);
        return err ? v_exc() : v_bool(!t);
    }
    case N_AND: case N_OR: {
        Value a = eval(vm, n->u.bin.a);
        if (IS_EXC(a)) return a;
        bool err = false;
        bool t = vm_truthy(vm, a, n, &err);
        if (err) { decref(a); return v_exc(); }
        if ((n->kind == N_AND) != t) {
            /* short circuit: the operand decides, and is the value (resolved) */
            Value r = vm_force(vm, a, n);
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
            Value k = eval(vm, n->u.dict.keys[i]);
            if (IS_EXC(k)) { decref(dv); return k; }
            Value kk = vm_force(vm, k, n->u.dict.keys[i]);
            decref(k);
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
    case N_CALL: return eval_call(vm, n);
    case N_INDEX: {
        Value obj = eval(vm, n->u.index.obj);
        if (IS_EXC(obj)) return obj;
        int ni = n->u.index.nidx;
        /* fast path: list[number] */
        if (ni == 1 && obj.t == T_LIST && n->u.index.idx[0]->kind != N_SLICE) {
            double di;
            Value i;
            if (leaf_number(vm, n->u.index.idx[0], &di)) i = v_num(di);
            else { i = eval(vm, n->u.index.idx[0]); if (IS_EXC(i)) { decref(obj); return i; } }
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
            Value iv = vm_force(vm, i, n->u.index.idx[0]);
            decref(i);
            if (IS_EXC(iv)) { decref(obj); return iv; }
            Value r = index_value(vm, obj, &iv, n->u.index.idx, 1, n);
            decref(iv); decref(obj);
            return r;
        }
        Value idx[ni];
        if (!eval_subscripts(vm, n, idx)) { decref(obj); return v_exc(); }
        Value r = index_value(vm, obj, idx, n->u.index.idx, ni, n);
        for (int i = 0; i < ni; i++) decref(idx[i]);
        decref(obj);
        return r;
    }
    case N_MEMBER: {
        Value obj = eval(vm, n->u.member.obj);
        if (IS_EXC(obj)) return obj;
        if (obj.t == T_FUTURE) {
            Value r = future_force(vm, obj, n);
            decref(obj);
            if (IS_EXC(r)) return r;
            obj = r;
        }
        if (obj.t != T_MODULE) {
            Value e = vm_error(vm, n, "%s has no member '%s' (members are for modules)", type_name(obj), n->u.member.name);
            decref(obj);
            return e;
        }
        ObjModule *m = AS_MOD(obj);
        Value slot;
        Value r;
        if (m->info->gindex && dict_get(m->info->gindex, v_obj(&n->u.member.key->h), &slot) &&
            (int)slot.n < m->nglobals && m->globals[(int)slot.n].t != T_UNBOUND) {
            r = m->globals[(int)slot.n];
            incref(r);
        } else {
            r = vm_error(vm, n, "module '%s' has no member '%s'", m->name, n->u.member.name);
        }
        decref(obj);
        return r;
    }
    case N_FNEXPR: return make_closure(vm, n->u.fn);
    case N_SLICE: return vm_error(vm, n, "a slice is only allowed inside [ ]");
    default: return vm_error(vm, n, "internal error: cannot evaluate node kind %d", n->kind);
    }
}

/* The hot kinds stay here, small, so a recursive evaluation costs little;
 * everything else is in eval_cold. */
static Value eval(VM *vm, Node *n)
{
    switch (n->kind) {
    case N_NUM: return v_num(n->u.num);
    case N_LOCAL: {
        Value v = vm->frame->slots[n->u.var.slot];
        if (v.t == T_UNBOUND) break;
        incref(v);
        return v;
    }
    case N_GLOBAL: {
        Value v = vm->mod->globals[n->u.var.slot];
        if (v.t == T_UNBOUND) break;
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
                return num_op(vm, n->op, x, y, n);
            default: return num_op(vm, n->op, x, y, n);
            }
        }
        Value r = vm_binop(vm, n->op, a, b, n);
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
            !leaf_number(vm, n->u.index.idx[0], &d)) break;
        Value lv = o->kind == N_LOCAL ? vm->frame->slots[o->u.var.slot] : vm->mod->globals[o->u.var.slot];
        if (lv.t != T_LIST) break;
        ObjList *l = AS_LIST(lv);
        if (d >= 0 && d < (double)l->len && d == (double)(size_t)d) {
            Value r = l->v[(size_t)d];
            incref(r);
            return r;
        }
        break;
    }
    default: break;
    }
    return eval_cold(vm, n);
}

Value vm_eval_expr(VM *vm, Node *e) { return eval(vm, e); }

/* ---------------------------------------------------------------- assignment */

static bool store_cold(VM *vm, Node *t, Value v);

/* binds a variable: the common kinds inline, the rest in store_cold */
static inline bool store(VM *vm, Node *t, Value v)     /* takes the reference */
{
    Value *slot;
    if (t->kind == N_LOCAL) slot = &vm->frame->slots[t->u.var.slot];
    else if (t->kind == N_GLOBAL) slot = &vm->mod->globals[t->u.var.slot];
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

__attribute__((noinline))
static bool store_cold(VM *vm, Node *t, Value v)     /* takes the reference */
{
    Value *slot;
    switch (t->kind) {
    case N_LOCAL: slot = &vm->frame->slots[t->u.var.slot]; break;
    case N_LOCALCELL: slot = &AS_CELL(vm->frame->slots[t->u.var.slot])->v; break;
    case N_UPVAL: slot = &vm->frame->fn->up[t->u.var.slot]->v; break;
    case N_GLOBAL: slot = global_ref(vm, t->u.var.slot); break;
    case N_INDEX: {
        Value obj = eval(vm, t->u.index.obj);
        if (IS_EXC(obj)) { decref(v); return false; }
        int ni = t->u.index.nidx;
        Value idx[ni];
        if (!eval_subscripts(vm, t, idx)) { decref(obj); decref(v); return false; }
        bool ok = set_index(vm, obj, idx, t->u.index.idx, ni, v, t);
        for (int i = 0; i < ni; i++) decref(idx[i]);
        decref(obj);
        decref(v);
        return ok;
    }
    default:
        decref(v);
        vm_error(vm, t, "cannot assign to this expression");
        return false;
    }
    Value old = *slot;
    *slot = v;
    decref(old);
    return true;
}

static bool destructure(VM *vm, Node **targets, int n, Value v, const Node *site)
{
    Value seq = vm_force(vm, v, site);
    if (IS_EXC(seq)) return false;
    if (seq.t == T_LIST) {
        ObjList *l = AS_LIST(seq);
        if ((int)l->len != n) {
            vm_error(vm, site, "cannot unpack a list of %zu into %d names", l->len, n);
            decref(seq);
            return false;
        }
        for (int i = 0; i < n; i++) {
            incref(l->v[i]);
            if (!store(vm, targets[i], l->v[i])) { decref(seq); return false; }
        }
        decref(seq);
        return true;
    }
    if (seq.t == T_ARRAY) {
        size_t len = arr_len(seq);
        if ((int)len != n) {
            vm_error(vm, site, "cannot unpack an array of length %zu into %d names", len, n);
            decref(seq);
            return false;
        }
        for (int i = 0; i < n; i++) {
            Value r = arr_row(vm, seq, (size_t)i);
            if (IS_EXC(r) || !store(vm, targets[i], r)) { decref(seq); return false; }
        }
        decref(seq);
        return true;
    }
    vm_error(vm, site, "cannot unpack %s into %d names", type_name(seq), n);
    decref(seq);
    return false;
}

static ExecStatus aug_assign(VM *vm, Node *s)
{
    Node *t = s->u.assign.target;
    if (t->kind == N_LOCAL || t->kind == N_GLOBAL) {
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
                switch (s->op) {
                case OP_ADD: slot->n = x + rv.n; return S_OK;
                case OP_SUB: slot->n = x - rv.n; return S_OK;
                case OP_MUL: slot->n = x * rv.n; return S_OK;
                default: {
                    Value r = num_op(vm, s->op, x, rv.n, s);
                    if (IS_EXC(r)) return S_ERR;
                    *slot = r;
                    return S_OK;
                }
                }
            }
            Value cur = *slot;
            if (cur.t == T_UNBOUND) { decref(rv); eval_name_error(vm, t); return S_ERR; }
            incref(cur);
            Value r = vm_binop(vm, s->op, cur, rv, s);
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
        Value cur = index_value(vm, obj, idx, t->u.index.idx, ni, t);
        bool ok = false;
        if (!IS_EXC(cur)) {
            Value r = (cur.t == T_NUM && rhs.t == T_NUM) ? num_op(vm, s->op, cur.n, rhs.n, s) : vm_binop(vm, s->op, cur, rhs, s);
            decref(cur);
            if (!IS_EXC(r)) { ok = set_index(vm, obj, idx, t->u.index.idx, ni, r, t); decref(r); }
        }
        for (int i = 0; i < ni; i++) decref(idx[i]);
        decref(obj); decref(rhs);
        return ok ? S_OK : S_ERR;
    }
    Value cur = eval(vm, t);
    if (IS_EXC(cur)) { decref(rhs); return S_ERR; }
    Value r;
    if (cur.t == T_NUM && rhs.t == T_NUM) r = num_op(vm, s->op, cur.n, rhs.n, s);
    else if (s->op == OP_ADD && cur.t == T_LIST && rhs.t == T_LIST) {
        /* xs += ys extends in place, as in Python */
        ObjList *l = AS_LIST(cur), *y = AS_LIST(rhs);
        size_t ny = y->len;
        for (size_t i = 0; i < ny; i++) { incref(y->v[i]); list_push(l, y->v[i]); }
        r = cur; incref(r);
    } else r = vm_binop(vm, s->op, cur, rhs, s);
    decref(cur); decref(rhs);
    if (IS_EXC(r)) return S_ERR;
    return store(vm, t, r) ? S_OK : S_ERR;
}

/* ---------------------------------------------------------------- statements */

static ExecStatus exec_for(VM *vm, Node *s);
static ExecStatus exec_stmt_cold(VM *vm, Node *s);
static ExecStatus exec_block(VM *vm, Node *b);

/* The statements of inner loops inline; the rest in exec_stmt_cold. */
static ExecStatus exec_stmt(VM *vm, Node *s)
{
    switch (s->kind) {
    case N_ASSIGN: {
        Value v = eval(vm, s->u.assign.value);
        if (IS_EXC(v)) return S_ERR;
        return store(vm, s->u.assign.target, v) ? S_OK : S_ERR;
    }
    case N_AUGASSIGN: return aug_assign(vm, s);
    case N_IF: {
        Value c = eval(vm, s->u.ifs.cond);
        if (IS_EXC(c)) return S_ERR;
        bool t;
        if (c.t == T_BOOL) t = c.b;
        else {
            bool err = false;
            t = vm_truthy(vm, c, s->u.ifs.cond, &err);
            decref(c);
            if (err) return S_ERR;
        }
        if (t) return exec_block(vm, s->u.ifs.then);
        if (!s->u.ifs.els) return S_OK;
        return s->u.ifs.els->kind == N_IF ? exec_stmt(vm, s->u.ifs.els) : exec_block(vm, s->u.ifs.els);
    }
    case N_RETURN: {
        if (!vm->frame || !vm->frame->fn) break;
        Value v = s->u.expr.expr ? eval(vm, s->u.expr.expr) : v_nil();
        if (IS_EXC(v)) return S_ERR;
        decref(vm->ret);
        vm->ret = v;
        return S_RETURN;
    }
    default: break;
    }
    return exec_stmt_cold(vm, s);
}

__attribute__((noinline))
static ExecStatus exec_stmt_cold(VM *vm, Node *s)
{
    switch (s->kind) {
    case N_EXPRSTMT: {
        Value v = eval(vm, s->u.expr.expr);
        if (IS_EXC(v)) return S_ERR;
        if (v.t == T_OP) {
            Value r = qrt_apply_stmt(vm, v, s);
            decref(v);
            if (IS_EXC(r)) return S_ERR;
            return S_OK;
        }
        decref(v);
        return S_OK;
    }
    case N_ASSIGN: {
        Value v = eval(vm, s->u.assign.value);
        if (IS_EXC(v)) return S_ERR;
        return store(vm, s->u.assign.target, v) ? S_OK : S_ERR;
    }
    case N_AUGASSIGN: return aug_assign(vm, s);
    case N_DESTRUCT: {
        Value v = eval(vm, s->u.destruct.value);
        if (IS_EXC(v)) return S_ERR;
        bool ok = destructure(vm, s->u.destruct.targets, s->u.destruct.n, v, s->u.destruct.value);
        decref(v);
        return ok ? S_OK : S_ERR;
    }
    case N_IF: {
        for (;;) {
            Value c = eval(vm, s->u.ifs.cond);
            if (IS_EXC(c)) return S_ERR;
            bool err = false, t;
            if (c.t == T_BOOL) t = c.b;
            else { t = vm_truthy(vm, c, s->u.ifs.cond, &err); decref(c); }
            if (err) return S_ERR;
            if (t) return exec_block(vm, s->u.ifs.then);
            Node *e = s->u.ifs.els;
            if (!e) return S_OK;
            if (e->kind != N_IF) return exec_block(vm, e);
            s = e;
        }
    }
    case N_WHILE: {
        for (;;) {
            Value c = eval(vm, s->u.whiles.cond);
            if (IS_EXC(c)) return S_ERR;
            bool err = false, t;
            if (c.t == T_BOOL) t = c.b;
            else { t = vm_truthy(vm, c, s->u.whiles.cond, &err); decref(c); }
            if (err) return S_ERR;
            if (!t) return S_OK;
            ExecStatus st = exec_block(vm, s->u.whiles.body);
            if (st == S_BREAK) return S_OK;
            if (st == S_RETURN || st == S_ERR) return st;
            if (atomic_load(&vm->in->sigint) && vm_check_interrupt(vm)) return S_ERR;
        }
    }
    case N_FOR: return exec_for(vm, s);
    case N_BREAK: return S_BREAK;
    case N_CONTINUE: return S_CONTINUE;
    case N_RETURN: {
        if (!vm->frame || !vm->frame->fn) { vm_error(vm, s, "'return' outside a function"); return S_ERR; }
        Value v = s->u.expr.expr ? eval(vm, s->u.expr.expr) : v_nil();
        if (IS_EXC(v)) return S_ERR;
        decref(vm->ret);
        vm->ret = v;
        return S_RETURN;
    }
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
        ExecStatus st = exec_block(vm, s->u.tries.body);
        if (st != S_ERR) return st;
        if (vm->err.interrupted) return S_ERR;
        /* unwind to the try's own frame */
        while (vm->sp > sp) decref(vm->stack[--vm->sp]);
        vm->frame = fr; vm->depth = depth; vm->mod = mod;
        if (s->u.tries.var && !store(vm, s->u.tries.var, v_str(vm->err.msg))) return S_ERR;
        return exec_block(vm, s->u.tries.handler);
    }
    case N_IMPORT: {
        Value m = module_import(vm, s->u.import.name, s);
        if (IS_EXC(m)) return S_ERR;
        return store(vm, s->u.import.var, m) ? S_OK : S_ERR;
    }
    case N_GLOBALDECL: case N_PASS: return S_OK;
    case N_BLOCK: return exec_block(vm, s);
    default:
        vm_error(vm, s, "internal error: cannot execute node kind %d", s->kind);
        return S_ERR;
    }
}

static ExecStatus exec_block(VM *vm, Node *b)
{
    Node **items = b->u.list.items;
    int n = b->u.list.n;
    for (int i = 0; i < n; i++) {
        ExecStatus st = exec_stmt(vm, items[i]);
        if (st != S_OK) return st;
    }
    return S_OK;
}

ExecStatus vm_exec(VM *vm, Node *s) { return exec_stmt(vm, s); }

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
    ExecStatus st = exec_block(vm, s->u.fors.body);
    if (st == S_CONTINUE) return S_OK;
    return st;
}

#define LOOP_STEP(st) do { \
        if ((st) == S_BREAK) goto done; \
        if ((st) != S_OK) { result = (st); goto done; } \
    } while (0)

static ExecStatus exec_for(VM *vm, Node *s)
{
    Node *it = s->u.fors.iter;
    ExecStatus result = S_OK;
    Value coll = v_nil();
    /* for i in range(...): no list is built */
    if (it->kind == N_CALL && it->u.call.fn->kind == N_BUILTIN &&
        strcmp(builtin_get(it->u.call.fn->u.var.slot)->name, "range") == 0 &&
        it->u.call.nkw == 0 && it->u.call.nargs >= 1 && it->u.call.nargs <= 3) {
        double a[3];
        for (int i = 0; i < it->u.call.nargs; i++) {
            Value raw = eval(vm, it->u.call.args[i]);
            if (IS_EXC(raw)) return S_ERR;
            Value v = vm_force(vm, raw, it->u.call.args[i]);
            decref(raw);
            if (IS_EXC(v)) return S_ERR;
            if (v.t != T_NUM || v.n != floor(v.n)) {
                vm_error(vm, it->u.call.args[i], "range() arguments must be integers, not %s", v.t == T_NUM ? "a fraction" : type_name(v));
                decref(v);
                return S_ERR;
            }
            a[i] = v.n;
        }
        double start = 0, stop, step = 1;
        if (it->u.call.nargs == 1) stop = a[0];
        else { start = a[0]; stop = a[1]; if (it->u.call.nargs == 3) step = a[2]; }
        if (step == 0) { vm_error(vm, it, "range() step must not be zero"); return S_ERR; }
        Node *var = s->u.fors.var;
        bool fast = s->u.fors.nvars == 1 && (var->kind == N_LOCAL || var->kind == N_GLOBAL);
        unsigned tick = 0;
        for (double x = start; step > 0 ? x < stop : x > stop; x += step) {
            ExecStatus st;
            if (fast) {
                Value *slot = var->kind == N_LOCAL ? &vm->frame->slots[var->u.var.slot] : global_ref(vm, var->u.var.slot);
                decref(*slot);
                *slot = v_num(x);
                st = exec_block(vm, s->u.fors.body);
                if (st == S_CONTINUE) st = S_OK;
            } else {
                st = for_body(vm, s, v_num(x));
            }
            if (st == S_BREAK) goto range_done;
            if (st != S_OK) { result = st; goto range_done; }
            if (((++tick & 1023) == 0) && atomic_load(&vm->in->sigint) && vm_check_interrupt(vm)) { result = S_ERR; goto range_done; }
        }
    range_done:
        return result;
    }
    Value raw = eval(vm, it);
    if (IS_EXC(raw)) return S_ERR;
    coll = vm_force(vm, raw, it);
    decref(raw);
    if (IS_EXC(coll)) return S_ERR;
    switch (coll.t) {
    case T_LIST: {
        ObjList *l = AS_LIST(coll);
        for (size_t i = 0; i < l->len; i++) {
            incref(l->v[i]);
            ExecStatus st = for_body(vm, s, l->v[i]);
            LOOP_STEP(st);
        }
        break;
    }
    case T_STR: {
        ObjStr *str = AS_STR(coll);
        size_t off = 0;
        while (off < str->len) {
            size_t e = off + 1;
            while (e < str->len && ((unsigned char)str->s[e] & 0xc0) == 0x80) e++;
            ExecStatus st = for_body(vm, s, v_strn(str->s + off, e - off));
            LOOP_STEP(st);
            off = e;
        }
        break;
    }
    case T_DICT: {
        ObjDict *d = AS_DICT(coll);
        /* iterate a snapshot of the keys: the body may change the dict */
        size_t n = d->len, k = 0;
        Value *keys = malloc((n ? n : 1) * sizeof(Value));
        for (size_t i = 0; i < d->nent; i++) if (d->ent[i].live) { keys[k] = d->ent[i].key; incref(keys[k]); k++; }
        size_t i;
        for (i = 0; i < k; i++) {
            ExecStatus st = for_body(vm, s, keys[i]);
            if (st != S_OK) { i++; if (st != S_BREAK) result = st; break; }
        }
        for (; i < k; i++) decref(keys[i]);
        free(keys);
        break;
    }
    case T_ARRAY: {
        size_t n = arr_len(coll);
        for (size_t i = 0; i < n; i++) {
            Value r = arr_row(vm, coll, i);
            if (IS_EXC(r)) { result = S_ERR; goto done; }
            ExecStatus st = for_body(vm, s, r);
            LOOP_STEP(st);
        }
        break;
    }
    default:
        vm_error(vm, it, "cannot iterate over %s", type_name(coll));
        result = S_ERR;
    }
done:
    decref(coll);
    return result;
}

/* ---------------------------------------------------------------- printing with futures */

typedef struct ReprUp { const Obj *o; const struct ReprUp *up; } ReprUp;

static bool vm_repr_rec(VM *vm, Buf *b, Value v, bool quoted, const Node *site, const ReprUp *st)
{
    int depth = 0;
    for (const ReprUp *u = st; u; u = u->up, depth++)
        if ((is_obj(v) && u->o == v.o) || depth > 500) { buf_puts(b, v.t == T_DICT ? "{...}" : "[...]"); return true; }
    switch (v.t) {
    case T_FUTURE: {
        Value r = future_force(vm, v, site);
        if (IS_EXC(r)) return false;
        bool ok = vm_repr_rec(vm, b, r, quoted, site, st);
        decref(r);
        return ok;
    }
    case T_LIST: {
        ObjList *l = AS_LIST(v);
        ReprUp me = { v.o, st };
        buf_putc(b, '[');
        for (size_t i = 0; i < l->len; i++) {
            if (i) buf_puts(b, ", ");
            if (!vm_repr_rec(vm, b, l->v[i], true, site, &me)) return false;
        }
        buf_putc(b, ']');
        return true;
    }
    case T_DICT: {
        ObjDict *d = AS_DICT(v);
        ReprUp me = { v.o, st };
        buf_putc(b, '{');
        bool first = true;
        for (size_t i = 0; i < d->nent; i++) {
            if (!d->ent[i].live) continue;
            if (!first) buf_puts(b, ", ");
            first = false;
            value_repr(b, d->ent[i].key, true);
            buf_puts(b, ": ");
            if (!vm_repr_rec(vm, b, d->ent[i].val, true, site, &me)) return false;
        }
        buf_putc(b, '}');
        return true;
    }
    default:
        value_repr(b, v, quoted);
        return true;
    }
}

bool vm_repr(VM *vm, Buf *b, Value v, bool quoted, const Node *site)
{
    return vm_repr_rec(vm, b, v, quoted, site, NULL);
}

/* ---------------------------------------------------------------- running a module */

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
    bool traced = vm->in->trace && !vm->is_task;
    for (int i = 0; i < body->u.list.n; i++) {
        Node *s = body->u.list.items[i];
        int saved_line = vm->cur_line;
        vm->cur_line = s->line;
        double ts = traced ? async_trace_now(vm->in) : 0;
        ExecStatus st = exec_stmt(vm, s);
        if (traced) async_trace_stmt(vm->in, s->line, ts);
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

/* ---------------------------------------------------------------- teardown at exit */

/* Breaks every reference cycle reachable from the given roots (lists and
 * dicts that contain themselves, closures in cells, functions and their
 * modules) by emptying each container once, so that releasing the roots
 * frees everything. Counting cannot see cycles; at exit nothing is in use,
 * so emptying is safe. */
typedef struct Sweep { Obj **v; size_t n, cap; CopyCtx seen; } Sweep;

static void sweep_add(Sweep *s, Value v)
{
    if (!is_obj(v) || v.o->rc == OBJ_IMMORTAL) return;
    switch (v.t) {
    case T_LIST: case T_DICT: case T_CELL: case T_FUNC: case T_MODULE: case T_GRADFN: break;
    default: return;
    }
    if (copy_memo_get(&s->seen, v.o)) return;
    copy_memo_put(&s->seen, v.o, v.o);
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->v = realloc(s->v, s->cap * sizeof(Obj *));
    }
    incref(v);
    s->v[s->n++] = v.o;
}

void vm_teardown(Value *roots, int nroots);
void vm_teardown(Value *roots, int nroots)
{
    Sweep s;
    memset(&s, 0, sizeof s);
    copy_init(&s.seen);
    for (int i = 0; i < nroots; i++) sweep_add(&s, roots[i]);
    /* find everything reachable (the list grows as it is walked) */
    for (size_t i = 0; i < s.n; i++) {
        Obj *o = s.v[i];
        Value v = v_obj(o);
        switch (o->type) {
        case T_LIST: for (size_t k = 0; k < AS_LIST(v)->len; k++) sweep_add(&s, AS_LIST(v)->v[k]); break;
        case T_DICT: {
            ObjDict *d = AS_DICT(v);
            for (size_t k = 0; k < d->nent; k++) if (d->ent[k].live) sweep_add(&s, d->ent[k].val);
            break;
        }
        case T_CELL: sweep_add(&s, AS_CELL(v)->v); break;
        case T_FUNC: {
            ObjFunc *f = AS_FUNC(v);
            for (int k = 0; f->up && k < f->p->nupvals; k++) if (f->up[k]) sweep_add(&s, v_obj(&f->up[k]->h));
            for (int k = 0; f->defaults && k < f->p->nparams; k++) sweep_add(&s, f->defaults[k]);
            if (f->mod) sweep_add(&s, v_obj(&f->mod->h));
            break;
        }
        case T_MODULE: {
            ObjModule *m = AS_MOD(v);
            for (int k = 0; k < m->nglobals; k++) sweep_add(&s, m->globals[k]);
            break;
        }
        default: break;
        }
    }
    /* empty the containers: what they held is released, cycles included */
    for (size_t i = 0; i < s.n; i++) {
        Obj *o = s.v[i];
        Value v = v_obj(o);
        switch (o->type) {
        case T_LIST: {
            ObjList *l = AS_LIST(v);
            size_t n = l->len;
            l->len = 0;
            for (size_t k = 0; k < n; k++) decref(l->v[k]);
            break;
        }
        case T_DICT: {
            ObjDict *d = AS_DICT(v);
            for (size_t k = 0; k < d->nent; k++) {
                if (!d->ent[k].live) continue;
                Value val = d->ent[k].val;
                d->ent[k].val = v_nil();
                decref(val);
            }
            break;
        }
        case T_CELL: { Value x = AS_CELL(v)->v; AS_CELL(v)->v = v_nil(); decref(x); break; }
        case T_MODULE: {
            ObjModule *m = AS_MOD(v);
            for (int k = 0; k < m->nglobals; k++) { Value x = m->globals[k]; m->globals[k] = v_nil(); decref(x); }
            break;
        }
        default: break;
        }
    }
    for (size_t i = 0; i < s.n; i++) decref(v_obj(s.v[i]));
    free(s.v);
    copy_done(&s.seen);
}
