/* track.c — the tracked kinds (track.h): a number or an array with its
 * node on the running evaluation's tape. Their slots compute the ordinary
 * result with the array room and record the operation's local derivatives
 * (ad.h); builtins meeting them come here first (the TF_INTERCEPT slot),
 * and are either differentiated here (array, dot, reshape, ...), run on
 * plain values where the result has no derivative (fmt, range, int, ...),
 * left to run as usual where they dispatch back to these slots (sin, sum,
 * min, len, gates, ...), or refused by name. Knows values, the dispatcher,
 * arrays and the tape; nothing of quantum calls or of how gradients are
 * read out (grad.c).
 */
#include "track.h"
#include "array.h"
#include "arith.h"
#include "arrayval.h"
#include "builtins.h"
#include "qh_assert.h"
#include "track_cx.h"
#include "track_np.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct ObjTNum {
    Obj h;
    double x;
    AdNode n;
    uint64_t id;
} ObjTNum;
typedef struct ObjTArr {
    Obj h;
    Array *a;
    AdNode n;
    uint64_t id;
} ObjTArr;
#define TNUM(v) ((ObjTNum *)(v).o)
#define TARR(v) ((ObjTArr *)(v).o)

static ValType T_TNUM = T_NTYPES;
static ValType T_TARR = T_NTYPES;
static atomic_uint_least64_t next_id;

/* Tracked numbers are made and dropped once per operation: each thread
 * keeps the blocks of freed ones for its next (a malloc and a free per
 * operation would cost more than the operation). The list is emptied when
 * the thread ends. */
#define TNUM_CACHE 4096
static _Thread_local Obj *tnum_free_list;
static _Thread_local int tnum_free_count;
static _Thread_local bool tnum_registered;
static pthread_key_t tnum_key;
static pthread_once_t tnum_once = PTHREAD_ONCE_INIT;

static void tnum_cache_drop(void *unused)
{
    (void)unused;
    while (tnum_free_list) {
        Obj *o = tnum_free_list;
        tnum_free_list = *(Obj **)(o + 1);
        free(o);
    }
    tnum_free_count = 0;
}

static void tnum_key_make(void) { pthread_key_create(&tnum_key, tnum_cache_drop); }

/* ---------------------------------------------------------------- contexts */

AdCtx *track_begin(VM *vm)
{
    AdCtx *c = calloc(1, sizeof *c);
    if (!c || !(c->tape = ad_new())) {
        free(c);
        return NULL;
    }
    c->id = atomic_fetch_add(&next_id, 1) + 1;
    c->outer = vm->ad;
    vm->ad = c;
    return c;
}

void track_end(VM *vm, AdCtx *c)
{
    if (!c) return;
    if (vm->ad == c) vm->ad = c->outer;
    ad_free(c->tape);
    free(c);
}

bool track_is_num(Value v) { return v.t == T_TNUM; }
bool track_is_arr(Value v) { return v.t == T_TARR; }
bool track_is(Value v) { return v.t == T_TNUM || v.t == T_TARR; }
const Array *track_array(Value v) { return TARR(v)->a; }
double track_value(Value v) { return TNUM(v)->x; }
AdNode track_node(Value v)
{
    return v.t == T_TNUM ? TNUM(v)->n : v.t == T_TARR ? TARR(v)->n : AD_NONE;
}

static Value tape_error(VM *vm, const Node *site)
{
    const char *e = vm->ad ? ad_error(vm->ad->tape) : "";
    return vm_error(vm, site, "grad: %s", e && *e ? e : "recording the derivative failed");
}

static inline __attribute__((always_inline)) Value tnum_new(VM *vm, double x, AdNode node,
                                                            const Node *site)
{
    if (node == AD_NONE) return v_num(x);
    if (node == AD_ERR) return tape_error(vm, site);
    /* a node of the tape of the differentiation running here */
    qh_assert(vm->ad && node >= 0 && (size_t)node < ad_len(vm->ad->tape));
    ObjTNum *o;
    if (tnum_free_list) {
        Obj *b = tnum_free_list;
        tnum_free_list = *(Obj **)(b + 1);
        tnum_free_count--;
        o = (ObjTNum *)b;
        o->h.rc = 1;
        o->h.type = (uint8_t)T_TNUM;
    } else {
        o = (ObjTNum *)obj_alloc(sizeof(ObjTNum), T_TNUM);
    }
    o->x = x;
    o->n = node;
    o->id = vm->ad->id;
    return v_obj(&o->h);
}

Value track_num(VM *vm, double x, AdNode node, const Node *site)
{
    return tnum_new(vm, x, node, site);
}

Value track_arr(VM *vm, Array *a, AdNode node, const Node *site)
{
    if (node == AD_NONE) return arr_wrap(a);
    if (node == AD_ERR) {
        ar_free(a);
        return tape_error(vm, site);
    }
    qh_assert(vm->ad && node >= 0 && (size_t)node < ad_len(vm->ad->tape));
    qh_assert(ad_size(vm->ad->tape, node) == ar_size(a)); /* one tape value per element */
    ObjTArr *o = (ObjTArr *)obj_alloc(sizeof(ObjTArr), T_TARR);
    o->a = a;
    o->n = node;
    o->id = vm->ad->id;
    return v_obj(&o->h);
}

/* v (tracked) belongs to the evaluation running on vm */
static bool mine(VM *vm, Value v, const Node *site)
{
    uint64_t id = v.t == T_TNUM ? TNUM(v)->id : TARR(v)->id;
    if (vm->ad && vm->ad->id == id) return true;
    vm_error(vm, site,
             "grad: a differentiated value was used outside the evaluation that differentiates it "
             "(a quantum function cannot capture one: pass it as an argument)");
    return false;
}

bool track_number(VM *vm, Value v, double *x, AdNode *node, const Node *site, bool *err)
{
    *err = false;
    if (v.t == T_NUM) {
        *x = v.n;
        *node = AD_NONE;
        return true;
    }
    if (v.t == T_BOOL) {
        *x = v.b;
        *node = AD_NONE;
        return true;
    }
    if (v.t != T_TNUM) return false;
    if (!mine(vm, v, site)) {
        *err = true;
        return false;
    }
    *x = TNUM(v)->x;
    *node = TNUM(v)->n;
    return true;
}

bool track_inside(Value v)
{
    if (track_is(v)) return true;
    if (v.t == T_LIST) {
        ObjList *l = AS_LIST(v);
        for (size_t i = 0; i < l->len; i++)
            if (track_inside(l->v[i])) return true;
    } else if (v.t == T_DICT) {
        ObjDict *d = AS_DICT(v);
        for (size_t i = 0; i < d->nent; i++)
            if (d->ent[i].live && track_inside(d->ent[i].val)) return true;
    }
    return false;
}

Value track_plain(Value v)
{
    if (v.t == T_TNUM) return v_num(TNUM(v)->x);
    if (v.t == T_TARR) {
        char err[AR_ERRLEN];
        Array *c = ar_copy(TARR(v)->a, err);
        return c ? arr_wrap(c) : v_nil();
    }
    if (v.t == T_LIST && track_inside(v)) {
        ObjList *l = AS_LIST(v), *n = list_new(l->len);
        for (size_t i = 0; i < l->len; i++) n->v[n->len++] = track_plain(l->v[i]);
        return v_list(n);
    }
    if (v.t == T_DICT && track_inside(v)) {
        ObjDict *d = AS_DICT(v), *n = dict_new();
        for (size_t i = 0; i < d->nent; i++) {
            if (!d->ent[i].live) continue;
            Value p = track_plain(d->ent[i].val);
            dict_set(n, d->ent[i].key, p);
            decref(p);
        }
        return v_obj(&n->h);
    }
    incref(v);
    return v;
}

/* ---------------------------------------------------------------- lifecycle slots */

static void tnum_free(Obj *o)
{
    if (tnum_free_count >= TNUM_CACHE) {
        free(o);
        return;
    }
    if (!tnum_registered) { /* the thread's first: empty the cache when it ends */
        pthread_once(&tnum_once, tnum_key_make);
        pthread_setspecific(tnum_key, (void *)1);
        tnum_registered = true;
    }
    *(Obj **)(o + 1) = tnum_free_list;
    tnum_free_list = o;
    tnum_free_count++;
}
static void tarr_free(Obj *o)
{
    ar_free(((ObjTArr *)o)->a);
    free(o);
}

static void tnum_repr(Buf *b, Value v, bool quoted) { value_repr(b, v_num(TNUM(v)->x), quoted); }
static void tarr_repr(Buf *b, Value v, bool quoted)
{
    (void)quoted;
    char *s = ar_format(TARR(v)->a);
    if (s) {
        buf_puts(b, s);
        free(s);
    }
}

/* Same thread (a call's copy of its arguments): still tracked. Another
 * thread: the plain value (a tape belongs to one thread). */
static Value tnum_copy(Value v, CopyCtx *cc)
{
    if (!cc->share_code) return v_num(TNUM(v)->x);
    incref(v);
    return v;
}

static Value tarr_copy(Value v, CopyCtx *cc)
{
    char err[AR_ERRLEN];
    Array *c = ar_copy(TARR(v)->a, err);
    if (!c) {
        cc->error = "an array (out of memory)";
        return v_nil();
    }
    if (!cc->share_code) return arr_wrap(c);
    ObjTArr *o = (ObjTArr *)obj_alloc(sizeof(ObjTArr), T_TARR);
    o->a = c;
    o->n = TARR(v)->n;
    o->id = TARR(v)->id;
    copy_memo_put(cc, v.o, o);
    return v_obj(&o->h);
}

static bool tnum_eq(Value a, Value b) { return TNUM(a)->x == TNUM(b)->x; }
static bool tarr_eq(Value a, Value b) { return ar_equal(TARR(a)->a, TARR(b)->a) != 0; }
static bool tnum_truthy(Value v) { return TNUM(v)->x != 0; }
static bool tarr_truthy(Value v) { return ar_len(TARR(v)->a) != 0; }
static bool tarr_len(Value v, size_t *out)
{
    *out = ar_len(TARR(v)->a);
    return true;
}

/* ---------------------------------------------------------------- operands */

/* An operand of an arithmetic operation: a number or an array (plain or
 * tracked), with its node; lists become arrays (hold keeps them). */
typedef struct Opd {
    bool arr;
    double x;
    const Array *a;
    AdNode n;
    Value hold;
} Opd;

static Value make_array(VM *vm, Value list, const Node *site);

/* 1: an operand; 0: not ours (another kind decides); -1: error recorded */
static int operand(VM *vm, Value v, Opd *o, const Node *site)
{
    memset(o, 0, sizeof *o);
    o->n = AD_NONE;
    o->hold = v_nil();
    switch (v.t) {
    case T_NUM: o->x = v.n; return 1;
    case T_BOOL: o->x = v.b; return 1;
    case T_ARRAY:
        if (ar_is_complex(AS_ARR(v))) {
            vm_error(vm, site, "complex arrays cannot be differentiated");
            return -1;
        }
        o->arr = true;
        o->a = AS_ARR(v);
        return 1;
    case T_COMPLEX:
        vm_error(vm, site, "complex arithmetic on a differentiated value cannot be differentiated");
        return -1;
    case T_LIST: {
        Value a = make_array(vm, v, site);
        if (IS_EXC(a)) return -1;
        int k = operand(vm, a, o, site);
        if (k == 1)
            o->hold = a;
        else
            decref(a);
        return k;
    }
    default: break;
    }
    if (v.t == T_TNUM) {
        if (!mine(vm, v, site)) return -1;
        o->x = TNUM(v)->x;
        o->n = TNUM(v)->n;
        return 1;
    }
    if (v.t == T_TARR) {
        if (!mine(vm, v, site)) return -1;
        o->arr = true;
        o->a = TARR(v)->a;
        o->n = TARR(v)->n;
        return 1;
    }
    return 0;
}

static AdTape *tape(VM *vm) { return vm->ad->tape; }

/* a result array with its node (a comparison: plain) */
static Value array_result(VM *vm, Array *out, AdNode n, const char *err, const Node *site)
{
    if (!out) return vm_error(vm, site, "%s", err);
    return track_arr(vm, out, n, site);
}

/* ---------------------------------------------------------------- numbers */

static inline __attribute__((always_inline)) Value scalar_op(VM *vm, BinOp op, double x, AdNode na,
                                                             double y, AdNode nb, const Node *site)
{
    switch (op) {
    case OP_LT: return v_bool(x < y);
    case OP_LE: return v_bool(x <= y);
    case OP_GT: return v_bool(x > y);
    case OP_GE: return v_bool(x >= y);
    case OP_EQ: return v_bool(x == y);
    case OP_NE: return v_bool(x != y);
    case OP_NOPS: qh_unreachable();
    case OP_ADD:
    case OP_SUB:
    case OP_MUL:
    case OP_DIV:
    case OP_IDIV:
    case OP_MOD:
    case OP_POW:
    case OP_MATMUL:
    case OP_IN:
    case OP_NOTIN:
    case OP_NEG:
    case OP_POS:
    case OP_BAND:
    case OP_BOR:
    case OP_BXOR:
    case OP_SHL:
    case OP_SHR:
    case OP_INVERT: break;
    }
    double r = 0, ca = 0, cb = 0; /* r = f(x, y); dr = ca dx + cb dy */
    switch (op) {
    case OP_ADD:
        r = x + y;
        ca = 1;
        cb = 1;
        break;
    case OP_SUB:
        r = x - y;
        ca = 1;
        cb = -1;
        break;
    case OP_MUL:
        r = x * y;
        ca = y;
        cb = x;
        break;
    case OP_DIV:
        if (y == 0) return vm_error(vm, site, "division by zero");
        r = x / y;
        ca = 1 / y;
        cb = -x / (y * y);
        break;
    case OP_IDIV:
        if (y == 0) return vm_error(vm, site, "division by zero");
        return v_num(floor(x / y));
    case OP_MOD: {
        if (y == 0) return vm_error(vm, site, "modulo by zero");
        double q = floor(x / y);
        r = x - y * q;
        ca = 1;
        cb = -q;
        break;
    }
    case OP_POW:
        if (x < 0 && y != floor(y) && nb != AD_NONE)
            return vm_error(vm, site, "a negative number to a differentiated fractional power");
        r = pow(x, y);
        ca = y == 0 ? 0 : y * pow(x, y - 1);
        cb = nb != AD_NONE ? (x > 0 ? r * log(x) : 0) : 0;
        break;
    case OP_MATMUL: return vm_error(vm, site, "@ needs two arrays, not numbers");
    case OP_BAND:
    case OP_BOR:
    case OP_BXOR:
    case OP_SHL:
    case OP_SHR:
        /* integer operations: the plain result, a constant (its derivative
         * is zero wherever it is defined, as for //; lang/quantum.md) */
        return arith_num(vm, op, x, y, site);
    case OP_IN:
    case OP_NOTIN:
    case OP_NEG:
    case OP_POS:
    case OP_INVERT:
    case OP_NOPS:
    case OP_LT:
    case OP_LE:
    case OP_GT:
    case OP_GE:
    case OP_EQ:
    case OP_NE:
        return vm_error(vm, site, "unsupported operation %s on a differentiated number",
                        op_symbol(op));
    }
    return tnum_new(vm, r, ad_s2(tape(vm), na, ca, nb, cb), site);
}

/* ---------------------------------------------------------------- arrays */

static AdVal val(const Opd *o) { return o->arr ? ad_arr(o->a) : ad_num(o->x); }

/* A op B for plain values (at least one an array) */
static Array *plain_op(ArOp op, const Opd *A, const Opd *B, char *err)
{
    if (A->arr && B->arr) return ar_binop(op, A->a, B->a, err);
    if (A->arr) return ar_binop_scalar(op, A->a, ar_scalar(B->x), 0, err);
    return ar_binop_scalar(op, B->a, ar_scalar(A->x), 1, err);
}

static Value array_op(VM *vm, BinOp op, Opd *A, Opd *B, const Node *site)
{
    char err[AR_ERRLEN];
    if (op == OP_MATMUL) {
        if (!A->arr || !B->arr) return vm_error(vm, site, "@ needs two arrays, not a number");
        Array *out = NULL;
        ArScalar s;
        int k = ar_matmul(A->a, B->a, &out, &s, err);
        if (k == AR_ERR) return vm_error(vm, site, "%s", err);
        AdNode n = ad_matmul(tape(vm), A->n, A->a, B->n, B->a);
        if (k == AR_SCALAR) return track_num(vm, s.re, n, site);
        return track_arr(vm, out, n, site);
    }
    if (op == OP_IDIV || op == OP_MOD) {
        Array *q = plain_op(AR_DIV, A, B, err), *fq = q ? ar_map(AR_FLOOR, q, err) : NULL;
        ar_free(q);
        if (!fq) return vm_error(vm, site, "%s", err);
        if (op == OP_IDIV) return arr_wrap(fq);
        /* a % b = a - b * floor(a / b), the floor a constant */
        Opd Q = { true, 0, fq, AD_NONE, v_nil() };
        Array *bq = plain_op(AR_MUL, B, &Q, err);
        Opd BQ = { true, 0, bq, AD_NONE, v_nil() };
        Array *out = bq ? plain_op(AR_SUB, A, &BQ, err) : NULL;
        if (!out) {
            ar_free(fq);
            ar_free(bq);
            return vm_error(vm, site, "%s", err);
        }
        AdNode nbq = ad_ewise(tape(vm), AR_MUL, B->n, val(B), AD_NONE, ad_arr(fq), bq);
        AdNode n = ad_ewise(tape(vm), AR_SUB, A->n, val(A), nbq, ad_arr(bq), out);
        ar_free(fq);
        ar_free(bq);
        return track_arr(vm, out, n, site);
    }
    ArOp aop;
    if (!arr_op_of(op, &aop))
        return vm_error(vm, site, "unsupported operation %s on arrays", op_symbol(op));
    Array *out = plain_op(aop, A, B, err);
    if (!out) return vm_error(vm, site, "%s", err);
    if (aop >= AR_EQ) return arr_wrap(out); /* comparisons: plain 0/1 */
    return array_result(vm, out, ad_ewise(tape(vm), aop, A->n, val(A), B->n, val(B), out), err,
                        site);
}

static Value track_binop(VM *vm, BinOp op, Value a, Value b, const Node *site)
{
    if (op == OP_IN || op == OP_NOTIN) return v_notimpl();
    /* a complex operand: the pair of real parts (track_cx.c) */
    if (track_cx_operand(a) || track_cx_operand(b)) return track_cx_binop(vm, op, a, b, site);
    /* the common case: two numbers */
    if ((a.t == T_TNUM || a.t == T_NUM) && (b.t == T_TNUM || b.t == T_NUM) && vm->ad) {
        uint64_t id = vm->ad->id;
        if ((a.t != T_TNUM || TNUM(a)->id == id) && (b.t != T_TNUM || TNUM(b)->id == id)) {
            if (a.t == T_NUM) return scalar_op(vm, op, a.n, AD_NONE, TNUM(b)->x, TNUM(b)->n, site);
            if (b.t == T_NUM) return scalar_op(vm, op, TNUM(a)->x, TNUM(a)->n, b.n, AD_NONE, site);
            return scalar_op(vm, op, TNUM(a)->x, TNUM(a)->n, TNUM(b)->x, TNUM(b)->n, site);
        }
    }
    Opd A, B;
    int ka = operand(vm, a, &A, site);
    if (ka < 0) return v_exc();
    if (ka == 0) return v_notimpl();
    int kb = operand(vm, b, &B, site);
    if (kb <= 0) {
        decref(A.hold);
        return kb < 0 ? v_exc() : v_notimpl();
    }
    Value r = (!A.arr && !B.arr) ? scalar_op(vm, op, A.x, A.n, B.x, B.n, site)
                                 : array_op(vm, op, &A, &B, site);
    decref(A.hold);
    decref(B.hold);
    return r;
}

static Value track_unop(VM *vm, BinOp op, Value a, const Node *site)
{
    if (op == OP_POS) {
        incref(a);
        return a;
    }
    if (!mine(vm, a, site)) return v_exc();
    if (op == OP_INVERT) /* ~ of a number: a constant, as & | ^ << >> */
        return a.t == T_TNUM ? tp_unop(vm, op, v_num(TNUM(a)->x), site) : v_notimpl();
    if (a.t == T_TNUM) return track_num(vm, -TNUM(a)->x, ad_s1(tape(vm), TNUM(a)->n, -1), site);
    char err[AR_ERRLEN];
    Array *out = ar_neg(TARR(a)->a, err);
    if (!out) return vm_error(vm, site, "%s", err);
    return track_arr(vm, out, ad_scale(tape(vm), TARR(a)->n, -1), site);
}

/* ---------------------------------------------------------------- math */

static Value track_math(VM *vm, MathFn fn, Value v, long arg, const Node *site)
{
    if (!mine(vm, v, site)) return v_exc();
    if (v.t == T_TNUM) {
        double x = TNUM(v)->x, r;
        switch (fn) {
        case M_SQRT:
            if (x < 0) return vm_error(vm, site, "sqrt() of a negative number (%g)", x);
            r = sqrt(x);
            break;
        case M_ASIN:
            if (x < -1 || x > 1) return vm_error(vm, site, "asin() argument %g outside [-1, 1]", x);
            r = asin(x);
            break;
        case M_ACOS:
            if (x < -1 || x > 1) return vm_error(vm, site, "acos() argument %g outside [-1, 1]", x);
            r = acos(x);
            break;
        case M_LOG:
        case M_LOG2:
        case M_LOG10:
            if (x <= 0) return vm_error(vm, site, "log of a non-positive number (%g)", x);
            r = fn == M_LOG ? log(x) : fn == M_LOG2 ? log2(x) : log10(x);
            break;
        case M_ABS: r = fabs(x); break;
        case M_SIN: r = sin(x); break;
        case M_COS: r = cos(x); break;
        case M_TAN: r = tan(x); break;
        case M_ATAN: r = atan(x); break;
        case M_EXP: r = exp(x); break;
        case M_FLOOR: return v_num(floor(x));
        case M_CEIL: return v_num(ceil(x));
        case M_ROUND: { /* round(x, digits) has no derivative: the plain value */
            Value p = v_num(x);
            return tp_call(vm, builtin_named("round"),
                           &(Args){ 2, (Value[]){ p, v_num((double)arg) }, 0, NULL, NULL,
                                    (Node *)site, NULL });
        }
        case M_NFUNCS:
        default: qh_unreachable();
        }
        return track_num(vm, r, ad_s1(tape(vm), TNUM(v)->n, ad_dmath(arr_math_func(fn), x, r)),
                         site);
    }
    char err[AR_ERRLEN];
    const Array *a = TARR(v)->a;
    if (fn == M_FLOOR || fn == M_CEIL || fn == M_ROUND) {
        Array *r = fn == M_ROUND ? ar_round(a,
                                            arg > 300    ? 300
                                            : arg < -308 ? -308
                                                         : (int)arg,
                                            err)
                                 : ar_map(arr_math_func(fn), a, err);
        return r ? arr_wrap(r) : vm_error(vm, site, "%s", err);
    }
    Array *out = ar_map(arr_math_func(fn), a, err), *d = out ? ar_copy(out, err) : NULL;
    if (!out || !d) {
        ar_free(out);
        return vm_error(vm, site, "%s", err);
    }
    double *dp = ar_f64(d);
    const double *x = ar_f64_ro(a), *y = ar_f64_ro(out);
    for (size_t i = 0; i < ar_size(out); i++) dp[i] = ad_dmath(arr_math_func(fn), x[i], y[i]);
    AdNode n = ad_map(tape(vm), TARR(v)->n, d);
    ar_free(d);
    return track_arr(vm, out, n, site);
}

/* ---------------------------------------------------------------- reductions */

static bool axis_arg(VM *vm, Args *a, int *axis)
{
    *axis = AR_AXIS_ALL;
    Value *ax = arg_kw(a, "axis");
    if (ax && ax->t != T_NIL) {
        if (ax->t != T_NUM || ax->n != floor(ax->n) || fabs(ax->n) > 64) {
            vm_error(vm, a->site, "axis must be an integer");
            return false;
        }
        *axis = (int)ax->n;
    }
    return true;
}

static Value track_reduce(VM *vm, ReduceFn fn, Value v, Args *a)
{
    if (v.t != T_TARR) return v_notimpl();
    if (!mine(vm, v, a->site)) return v_exc();
    int axis;
    if (!axis_arg(vm, a, &axis)) return v_exc();
    const Array *A = TARR(v)->a;
    AdNode an = TARR(v)->n;
    char err[AR_ERRLEN];
    ArReduce r = fn == R_SUM ? AR_SUM : fn == R_MEAN ? AR_MEAN : fn == R_MIN ? AR_MIN : AR_MAX;
    Array *out = NULL;
    ArScalar s;
    int k = ar_reduce(r, A, axis, &out, &s, err);
    if (k == AR_ERR) return vm_error(vm, a->site, "%s", err);
    int nd = ar_ndim(A);
    int ax = axis == AR_AXIS_ALL ? AR_AXIS_ALL : (axis < 0 ? axis + nd : axis);
    AdNode n;
    if (fn == R_SUM || fn == R_MEAN) {
        double scale = 1;
        if (fn == R_MEAN)
            scale = 1.0 / (double)(ax == AR_AXIS_ALL || nd <= 1 ? ar_size(A) : ar_shape(A)[ax]);
        n = ad_sum(tape(vm), an, nd <= 1 ? AR_AXIS_ALL : ax, scale);
    } else {
        /* min/max: the derivative flows to the first element reaching it */
        const double *x = ar_f64_ro(A);
        const size_t *sh = ar_shape(A);
        size_t outer = 1, len = ar_size(A), inner = 1;
        if (ax != AR_AXIS_ALL && nd > 1) {
            len = sh[ax];
            for (int i = 0; i < ax; i++) outer *= sh[i];
            for (int i = ax + 1; i < nd; i++) inner *= sh[i];
        }
        size_t m = outer * inner;
        size_t *src = malloc((m ? m : 1) * sizeof(size_t));
        if (!src) {
            ar_free(out);
            return vm_error(vm, a->site, "out of memory");
        }
        for (size_t o = 0; o < outer; o++)
            for (size_t i = 0; i < inner; i++) {
                size_t best = o * len * inner + i;
                for (size_t l = 1; l < len; l++) {
                    size_t p = (o * len + l) * inner + i;
                    if (fn == R_MIN ? x[p] < x[best] : x[p] > x[best]) best = p;
                }
                src[o * inner + i] = best;
            }
        n = k == AR_SCALAR ? ad_gather(tape(vm), an, 1, src, 0, NULL)
                           : ad_gather(tape(vm), an, m, src, ar_ndim(out), ar_shape(out));
        free(src);
    }
    if (k == AR_SCALAR) return track_num(vm, s.re, n, a->site);
    return track_arr(vm, out, n, a->site);
}

/* ---------------------------------------------------------------- indexing */

/* The flat positions of A, shaped like A. */
static Array *iota(const Array *a, char *err)
{
    Array *p = ar_new(AR_F64, ar_ndim(a), ar_shape(a), err);
    if (!p) return NULL;
    double *d = ar_f64(p);
    for (size_t i = 0; i < ar_size(p); i++) d[i] = (double)i;
    return p;
}

static bool parse_ix(VM *vm, int nidx, const Value *idx, const Node *site, Node *const *isite,
                     ArIndex *ix)
{
    if (nidx > AR_MAXDIM) {
        vm_error(vm, site, "too many indices for an array");
        return false;
    }
    for (int i = 0; i < nidx; i++) {
        Value s = idx[i];
        if (s.t == T_TNUM) s = v_num(TNUM(s)->x); /* an index has no derivative */
        if (!arr_subscript(vm, s, isite && isite[i] ? isite[i] : site, &ix[i])) {
            ar_ix_release(ix, i);
            return false;
        }
    }
    return true;
}

/* A[ix]: the plain result and the positions it took */
static Value gather(VM *vm, Value v, const ArIndex *ix, int nidx, const Node *site)
{
    const Array *A = TARR(v)->a;
    char err[AR_ERRLEN];
    ArScalar s;
    Array *out = NULL;
    int k = ar_index(A, ix, nidx, &s, &out, err);
    if (k == AR_ERR) return vm_error(vm, site, "%s", err);
    /* positions: integer subscripts directly, anything else by indexing iota */
    bool ints = k == AR_SCALAR;
    if (ints) {
        size_t pos = 0;
        const size_t *sh = ar_shape(A);
        for (int i = 0; i < nidx; i++) {
            long j = ix[i].i;
            if (j < 0) j += (long)sh[i];
            pos = pos * sh[i] + (size_t)j;
        }
        for (int i = nidx; i < ar_ndim(A); i++) pos *= sh[i];
        qh_assert(pos < ar_size(A) && nidx == ar_ndim(A)); /* a scalar: one index per axis */
        return track_num(vm, s.re, ad_gather(tape(vm), TARR(v)->n, 1, &pos, 0, NULL), site);
    }
    Array *io = iota(A, err), *pa = NULL;
    ArScalar ps;
    if (!io || ar_index(io, ix, nidx, &ps, &pa, err) == AR_ERR) {
        ar_free(io);
        ar_free(out);
        return vm_error(vm, site, "%s", err);
    }
    ar_free(io);
    size_t n = ar_size(pa);
    size_t *src = malloc((n ? n : 1) * sizeof(size_t));
    if (!src) {
        ar_free(pa);
        ar_free(out);
        return vm_error(vm, site, "out of memory");
    }
    const double *pd = ar_f64_ro(pa);
    qh_assert(pd || !n); /* iota is a float array */
    for (size_t i = 0; i < n; i++) {
        qh_assert(pd[i] >= 0 && (size_t)pd[i] < ar_size(A)); /* positions of A's elements */
        src[i] = (size_t)pd[i];
    }
    AdNode node = ad_gather(tape(vm), TARR(v)->n, n, src, ar_ndim(out), ar_shape(out));
    free(src);
    ar_free(pa);
    return track_arr(vm, out, node, site);
}

static Value tarr_index(VM *vm, Value v, int nidx, const Value *idx, const Node *site,
                        Node *const *isite)
{
    if (!mine(vm, v, site)) return v_exc();
    ArIndex ix[AR_MAXDIM];
    if (!parse_ix(vm, nidx, idx, site, isite, ix)) return v_exc();
    Value r = gather(vm, v, ix, nidx, site);
    ar_ix_release(ix, nidx);
    return r;
}

static int tarr_iter(VM *vm, Value v, Iter *it, Value *out, const Node *site)
{
    if (it->pos >= ar_len(TARR(v)->a)) return 0;
    if (!mine(vm, v, site)) return -1;
    ArIndex ix = ar_ix((long)it->pos++);
    *out = gather(vm, v, &ix, 1, site);
    return IS_EXC(*out) ? -1 : 1;
}

static Value tarr_contains(VM *vm, Value v, Value x, const Node *site)
{
    double d;
    if (x.t == T_TNUM)
        d = TNUM(x)->x;
    else if (x.t == T_NUM)
        d = x.n;
    else
        return vm_error(vm, site, "'in <array>' needs a number on the left, not %s", type_name(x));
    return v_bool(ar_contains(TARR(v)->a, ar_scalar(d)) != 0);
}

/* a[ix] = v on a tracked array: a new node, the object updated in place */
static bool tarr_setindex(VM *vm, Value target, int nidx, const Value *idx, Value v,
                          const Node *site, Node *const *isite)
{
    if (!mine(vm, target, site)) return false;
    ArIndex ix[AR_MAXDIM];
    if (!parse_ix(vm, nidx, idx, site, isite, ix)) return false;
    Value fv = tp_force(vm, v, site);
    if (IS_EXC(fv)) {
        ar_ix_release(ix, nidx);
        return false;
    }
    Opd V;
    int k = operand(vm, fv, &V, site);
    decref(fv);
    if (k <= 0) {
        if (k == 0) vm_error(vm, site, "cannot store %s in an array", type_name(v));
        ar_ix_release(ix, nidx);
        return false;
    }
    ObjTArr *o = TARR(target);
    char err[AR_ERRLEN];
    Array *na = ar_copy(o->a, err);
    int rc = na ? (V.arr ? ar_assign_array(na, ix, nidx, V.a, err)
                         : ar_assign_scalar(na, ix, nidx, ar_scalar(V.x), err))
                : AR_ERR;
    Array *io = rc == AR_ERR ? NULL : iota(o->a, err), *pa = NULL;
    ArScalar ps;
    int kp = io ? ar_index(io, ix, nidx, &ps, &pa, err) : AR_ERR;
    size_t np = kp == AR_SCALAR ? 1 : kp == AR_ARRAY ? ar_size(pa) : 0;
    size_t *pos = kp == AR_ERR ? NULL : malloc((np ? np : 1) * sizeof(size_t));
    size_t *vmp = pos ? malloc((np ? np : 1) * sizeof(size_t)) : NULL;
    Array *vmap = NULL;
    bool ok = vmp != NULL;
    if (ok) {
        for (size_t i = 0; i < np; i++)
            pos[i] = kp == AR_SCALAR ? (size_t)ps.re : (size_t)ar_f64_ro(pa)[i];
        if (V.arr && kp == AR_ARRAY) {
            /* where each assigned element comes from in V: V's positions broadcast over the
             * region */
            Array *vi = iota(V.a, err),
                  *z = vi ? ar_new(AR_F64, ar_ndim(pa), ar_shape(pa), err) : NULL;
            vmap = z ? ar_binop(AR_ADD, z, vi, err) : NULL;
            ar_free(vi);
            ar_free(z);
            if (!vmap)
                ok = false;
            else
                for (size_t i = 0; i < np; i++) vmp[i] = (size_t)ar_f64_ro(vmap)[i];
        } else {
            for (size_t i = 0; i < np; i++) vmp[i] = 0;
        }
    }
    AdNode n = AD_ERR;
    if (ok)
        n = ad_setitems(tape(vm), o->n, ar_ndim(o->a), ar_shape(o->a), V.n,
                        &(AdScatter){ np, pos, vmp });
    free(pos);
    free(vmp);
    ar_free(io);
    ar_free(pa);
    ar_free(vmap);
    decref(V.hold);
    ar_ix_release(ix, nidx);
    if (!ok || n == AD_ERR) {
        ar_free(na);
        if (n == AD_ERR && ok)
            tape_error(vm, site);
        else
            vm_error(vm, site, "%s", err);
        return false;
    }
    ar_free(o->a);
    o->a = na;
    o->n = n;
    return true;
}

/* ---------------------------------------------------------------- building arrays */

/* The parts of array(nested list): numbers and arrays in row-major order,
 * with the nested shape. */
typedef struct Parts {
    double *x;
    size_t n, cap;
    AdNode *par;
    size_t *sz;
    size_t np, capp;
    int ndim;
    size_t shape[AR_MAXDIM];
    bool tracked;
} Parts;

static bool part_add(Parts *p, const double *x, size_t n, AdNode node)
{
    if (p->n + n > p->cap) {
        size_t c = p->cap ? p->cap * 2 : 16;
        while (c < p->n + n) c *= 2;
        double *nx = realloc(p->x, c * sizeof(double));
        if (!nx) return false;
        p->x = nx;
        p->cap = c;
    }
    if (n) memcpy(p->x + p->n, x, n * sizeof(double));
    p->n += n;
    /* merge consecutive constants into one part */
    if (node == AD_NONE && p->np && p->par[p->np - 1] == AD_NONE) {
        p->sz[p->np - 1] += n;
        return true;
    }
    if (p->np == p->capp) {
        size_t c = p->capp ? p->capp * 2 : 16;
        AdNode *np_ = realloc(p->par, c * sizeof(AdNode));
        if (!np_) return false;
        p->par = np_;
        size_t *ns = realloc(p->sz, c * sizeof(size_t));
        if (!ns) return false;
        p->sz = ns;
        p->capp = c;
    }
    p->par[p->np] = node;
    p->sz[p->np++] = n;
    if (node != AD_NONE) p->tracked = true;
    return true;
}

static bool parts_walk(VM *vm, Value v, int depth, Parts *p, const Node *site)
{
    if (is_lazy(v)) {
        Value r = tp_force(vm, v, site);
        if (IS_EXC(r)) return false;
        bool ok = parts_walk(vm, r, depth, p, site);
        decref(r);
        return ok;
    }
    const Array *A = NULL;
    AdNode an = AD_NONE;
    if (v.t == T_ARRAY)
        A = AS_ARR(v);
    else if (v.t == T_TARR) {
        if (!mine(vm, v, site)) return false;
        A = TARR(v)->a;
        an = TARR(v)->n;
    }
    if (A) {
        if (ar_is_complex(A)) {
            vm_error(vm, site, "complex arrays cannot be differentiated");
            return false;
        }
        int nd = ar_ndim(A);
        if (depth + nd > AR_MAXDIM) {
            vm_error(vm, site, "array(): more than %d dimensions", AR_MAXDIM);
            return false;
        }
        if (depth == p->ndim && p->n == 0) {
            for (int i = 0; i < nd; i++) p->shape[depth + i] = ar_shape(A)[i];
            p->ndim = depth + nd;
        } else {
            bool same = p->ndim == depth + nd;
            for (int i = 0; same && i < nd; i++) same = p->shape[depth + i] == ar_shape(A)[i];
            if (!same) {
                vm_error(vm, site, "array(): ragged nested lists");
                return false;
            }
        }
        if (!part_add(p, ar_f64_ro(A), ar_size(A), an)) {
            vm_error(vm, site, "array(): out of memory");
            return false;
        }
        return true;
    }
    if (v.t == T_LIST) {
        ObjList *l = AS_LIST(v);
        if (depth >= AR_MAXDIM) {
            vm_error(vm, site, "array(): more than %d dimensions", AR_MAXDIM);
            return false;
        }
        if (depth == p->ndim) {
            if (p->n) {
                vm_error(vm, site, "array(): ragged nested lists");
                return false;
            }
            p->ndim = depth + 1;
            p->shape[depth] = l->len;
        } else if (depth > p->ndim || p->shape[depth] != l->len) {
            vm_error(vm, site, "array(): ragged nested lists");
            return false;
        }
        for (size_t i = 0; i < l->len; i++)
            if (!parts_walk(vm, l->v[i], depth + 1, p, site)) return false;
        return true;
    }
    double x;
    AdNode n;
    bool err;
    if (!track_number(vm, v, &x, &n, site, &err)) {
        if (!err)
            vm_error(vm, site, "array(): elements must be real numbers, not %s", type_name(v));
        return false;
    }
    if (depth != p->ndim) {
        vm_error(vm, site, "array(): ragged nested lists");
        return false;
    }
    if (!part_add(p, &x, 1, n)) {
        vm_error(vm, site, "array(): out of memory");
        return false;
    }
    return true;
}

/* array(list) where the list may hold tracked values */
static Value make_array(VM *vm, Value list, const Node *site)
{
    Parts p;
    memset(&p, 0, sizeof p);
    Value r = v_exc();
    if (parts_walk(vm, list, 0, &p, site)) {
        char err[AR_ERRLEN];
        if (p.ndim == 0)
            r = vm_error(vm, site, "array() needs a list");
        else {
            Array *a = ar_from_data(AR_F64, p.ndim, p.shape, p.x, err);
            if (!a)
                r = vm_error(vm, site, "%s", err);
            else if (!p.tracked)
                r = arr_wrap(a);
            else
                r = track_arr(vm, a, ad_concat(tape(vm), (int)p.np, p.par, p.sz, p.ndim, p.shape),
                              site);
        }
    }
    free(p.x);
    free(p.par);
    free(p.sz);
    return r;
}

/* ---------------------------------------------------------------- builtins */

/* a builtin's argument as an operand array (lists converted) */
static bool arg_array(VM *vm, Args *a, int i, Opd *o, const char *fn)
{
    int k = operand(vm, a->v[i], o, a->site);
    if (k < 0) return false;
    if (k == 0 || !o->arr) {
        decref(o->hold);
        vm_error(vm, a->site, "%s() needs an array, not %s", fn, type_name(a->v[i]));
        return false;
    }
    return true;
}

static Value b_array(VM *vm, Args *a)
{
    if (a->n == 1 && !a->nkw && track_cx_inside(a->v[0]))
        return track_cx_array(vm, a->v[0], a->site); /* complex elements */
    Value *dt = arg_kw(a, "dtype");
    if (dt && dt->t == T_STR && strcmp(AS_STR(*dt)->s, "complex") == 0)
        return vm_error(
            vm, a->site,
            "array(): a complex array of differentiated values cannot be differentiated");
    return make_array(vm, a->v[0], a->site);
}

static Value b_dot(VM *vm, Args *a)
{
    return track_binop(
        vm,
        (a->v[0].t == T_NUM || a->v[0].t == T_TNUM || a->v[1].t == T_NUM || a->v[1].t == T_TNUM)
            ? OP_MUL
            : OP_MATMUL,
        a->v[0], a->v[1], a->site);
}

static Value b_reshape(VM *vm, Args *a)
{
    Opd A;
    if (!arg_array(vm, a, 0, &A, "reshape")) return v_exc();
    Value *src = a->v + 1;
    int n = a->n - 1;
    if (n == 1 && src[0].t == T_LIST) {
        n = (int)AS_LIST(src[0])->len;
        src = AS_LIST(src[0])->v;
    }
    if (n < 1 || n > AR_MAXDIM) {
        decref(A.hold);
        return vm_error(vm, a->site, "reshape(): needs 1 to %d dimensions", AR_MAXDIM);
    }
    long shape[AR_MAXDIM];
    for (int i = 0; i < n; i++) {
        if (src[i].t != T_NUM || src[i].n != floor(src[i].n)) {
            decref(A.hold);
            return vm_error(vm, a->site, "reshape(): dimensions must be integers");
        }
        shape[i] = (long)src[i].n;
    }
    char err[AR_ERRLEN];
    Array *out = ar_reshape(A.a, n, shape, err);
    Value r =
        out ? track_arr(vm, out,
                        ad_gather(tape(vm), A.n, ar_size(out), NULL, ar_ndim(out), ar_shape(out)),
                        a->site)
            : vm_error(vm, a->site, "%s", err);
    decref(A.hold);
    return r;
}

/* a permutation of A's elements (transpose): out[k] = A[pos[k]] */
static Value b_transpose(VM *vm, Args *a)
{
    Opd A;
    if (!arg_array(vm, a, 0, &A, "transpose")) return v_exc();
    char err[AR_ERRLEN];
    Array *out = ar_transpose(A.a, err), *io = out ? iota(A.a, err) : NULL,
          *pt = io ? ar_transpose(io, err) : NULL;
    Value r;
    if (!pt)
        r = vm_error(vm, a->site, "%s", err);
    else {
        size_t n = ar_size(pt);
        size_t *src = malloc((n ? n : 1) * sizeof(size_t));
        for (size_t i = 0; src && i < n; i++) src[i] = (size_t)ar_f64_ro(pt)[i];
        r = src ? track_arr(vm, out, ad_gather(tape(vm), A.n, n, src, ar_ndim(out), ar_shape(out)),
                            a->site)
                : vm_error(vm, a->site, "out of memory");
        if (!src) ar_free(out);
        out = NULL;
        free(src);
    }
    ar_free(out);
    ar_free(io);
    ar_free(pt);
    decref(A.hold);
    return r;
}

static Value b_tolist(VM *vm, Value v, const Node *site)
{
    if (v.t != T_TARR) {
        incref(v);
        return v;
    }
    size_t n = ar_len(TARR(v)->a);
    ObjList *l = list_new(n);
    Value lv = v_list(l);
    for (size_t i = 0; i < n; i++) {
        ArIndex ix = ar_ix((long)i);
        Value row = gather(vm, v, &ix, 1, site);
        if (IS_EXC(row)) {
            decref(lv);
            return row;
        }
        Value r = b_tolist(vm, row, site);
        decref(row);
        if (IS_EXC(r)) {
            decref(lv);
            return r;
        }
        l->v[l->len++] = r;
    }
    return lv;
}

static Value b_shape(VM *vm, Args *a)
{
    (void)vm;
    const Array *A = TARR(a->v[0])->a;
    ObjList *r = list_new((size_t)ar_ndim(A));
    for (int i = 0; i < ar_ndim(A); i++) r->v[r->len++] = v_num((double)ar_shape(A)[i]);
    return v_list(r);
}

static Value b_mean(VM *vm, Args *a)
{
    Value v = a->v[0];
    if (v.t == T_LIST) {
        Value arr = make_array(vm, v, a->site);
        if (IS_EXC(arr)) return arr;
        Value r = arr.t == T_TARR ? track_reduce(vm, R_MEAN, arr, a) : v_notimpl();
        decref(arr);
        return r;
    }
    return track_reduce(vm, R_MEAN, v, a);
}

static Value b_norm(VM *vm, Args *a)
{
    Value v = a->v[0];
    if (v.t == T_TNUM) return tp_math(vm, M_ABS, v, 0, a->site);
    Value arr = v;
    if (v.t == T_LIST) {
        arr = make_array(vm, v, a->site);
        if (IS_EXC(arr)) return arr;
    } else
        incref(arr);
    if (arr.t != T_TARR) {
        decref(arr);
        return v_notimpl();
    }
    /* sqrt(sum(a * a)) */
    Value sq = track_binop(vm, OP_MUL, arr, arr, a->site);
    decref(arr);
    if (IS_EXC(sq)) return sq;
    Args sa = { 1, &sq, 0, NULL, NULL, a->site, a->def };
    Value s = track_reduce(vm, R_SUM, sq, &sa);
    decref(sq);
    if (IS_EXC(s)) return s;
    Value r = s.t == T_TNUM ? track_math(vm, M_SQRT, s, 0, a->site) : v_num(sqrt(s.n));
    decref(s);
    return r;
}

/* kron(A, B) for 1-d and 2-d: out[i*pb + k, j*qb + l] = A[i, j] B[k, l],
 * the product of two gathers */
static Value b_kron(VM *vm, Args *a)
{
    Opd A, B;
    if (!arg_array(vm, a, 0, &A, "kron")) return v_exc();
    if (!arg_array(vm, a, 1, &B, "kron")) {
        decref(A.hold);
        return v_exc();
    }
    char err[AR_ERRLEN];
    Value r;
    int na = ar_ndim(A.a), nb = ar_ndim(B.a);
    if (na > 2 || nb > 2)
        r = vm_error(vm, a->site,
                     "kron() of arrays with more than 2 dimensions cannot be differentiated");
    else {
        size_t pa = ar_shape(A.a)[0], qa = na == 2 ? ar_shape(A.a)[1] : 1;
        size_t pb = ar_shape(B.a)[0], qb = nb == 2 ? ar_shape(B.a)[1] : 1;
        int nd = na == 2 || nb == 2 ? 2 : 1;
        size_t shape[2] = { pa * pb, qa * qb };
        if (nd == 1) shape[0] = pa * pb;
        size_t n = pa * pb * qa * qb;
        size_t *sa = malloc((n ? n : 1) * sizeof(size_t)),
               *sb = malloc((n ? n : 1) * sizeof(size_t));
        double *ga = malloc((n ? n : 1) * sizeof(double)),
               *gb = malloc((n ? n : 1) * sizeof(double));
        const double *xa = ar_f64_ro(A.a), *xb = ar_f64_ro(B.a);
        for (size_t i = 0; i < pa; i++)
            for (size_t j = 0; j < qa; j++)
                for (size_t k = 0; k < pb; k++)
                    for (size_t l = 0; l < qb; l++) {
                        size_t o = (i * pb + k) * (qa * qb) + j * qb + l;
                        sa[o] = i * qa + j;
                        sb[o] = k * qb + l;
                        ga[o] = xa[sa[o]];
                        gb[o] = xb[sb[o]];
                    }
        Array *GA = ar_from_data(AR_F64, nd, shape, ga, err),
              *GB = GA ? ar_from_data(AR_F64, nd, shape, gb, err) : NULL;
        Array *out = GB ? ar_binop(AR_MUL, GA, GB, err) : NULL;
        if (!out)
            r = vm_error(vm, a->site, "%s", err);
        else {
            AdNode nA = A.n == AD_NONE ? AD_NONE : ad_gather(tape(vm), A.n, n, sa, nd, shape);
            AdNode nB = B.n == AD_NONE ? AD_NONE : ad_gather(tape(vm), B.n, n, sb, nd, shape);
            r = track_arr(vm, out, ad_ewise(tape(vm), AR_MUL, nA, ad_arr(GA), nB, ad_arr(GB), out),
                          a->site);
        }
        ar_free(GA);
        ar_free(GB);
        free(sa);
        free(sb);
        free(ga);
        free(gb);
    }
    decref(A.hold);
    decref(B.hold);
    return r;
}

/* atan2(y, x): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2) */
static Value b_atan2(VM *vm, Args *a)
{
    double y, x;
    AdNode ny, nx;
    bool err;
    if (!track_number(vm, a->v[0], &y, &ny, a->site, &err) ||
        !track_number(vm, a->v[1], &x, &nx, a->site, &err)) {
        if (err) return v_exc();
        return vm_error(vm, a->site, "atan2() needs two numbers");
    }
    double r2 = x * x + y * y;
    double cy = r2 > 0 ? x / r2 : 0, cx = r2 > 0 ? -y / r2 : 0;
    return track_num(vm, atan2(y, x), ad_s2(tape(vm), ny, cy, nx, cx), a->site);
}

/* Builtins whose result has no derivative: they run on the plain values. */
static const char *const plain_builtins[] = { "fmt",   "str",  "int",    "type",     "range",
                                              "zeros", "ones", "eye",    "linspace", "arange",
                                              "randn", "rand", "device", "clock",    "sleep",
                                              "error", "join", "find",   "ready",    "chr",
                                              NULL };
/* Builtins that dispatch back to the tracked kinds' slots, or only move
 * values around: they run as usual. */
static const char *const own_way[] = { "len",   "abs",    "sqrt",      "sin",    "cos",  "tan",
                                       "asin",  "acos",   "atan",      "exp",    "log",  "log2",
                                       "log10", "floor",  "ceil",      "round",  "min",  "max",
                                       "sum",   "append", "pop",       "insert", "keys", "values",
                                       "items", "sorted", "reversed",  "wait",   "sync", "print",
                                       "num",   "get",    "enumerate", "zip",    NULL };

/* The builtins by kind, looked up once by name (after every room has
 * added its table): a call compares pointers. */
enum {
    BK_OWN,
    BK_PLAIN,
    BK_NUM,
    BK_ARRAY,
    BK_ATAN2,
    BK_DOT,
    BK_RESHAPE,
    BK_TRANSPOSE,
    BK_TOLIST,
    BK_SHAPE,
    BK_MEAN,
    BK_NORM,
    BK_KRON,
    BK_IDENT,
    BK_IMAG
};
#define BK_SLOTS 256 /* a power of two, well above the ~80 names */
static struct {
    const BuiltinDef *bd;
    int kind;
} bk[BK_SLOTS]; /* open addressing by pointer */
static int nbk;
static pthread_once_t bk_once = PTHREAD_ONCE_INIT;

static unsigned bk_hash(const BuiltinDef *bd)
{
    return (unsigned)((((uintptr_t)bd >> 3) * UINT64_C(0x9e3779b97f4a7c15)) >> 56) & (BK_SLOTS - 1);
}

static void bk_add(const char *name, int kind)
{
    int i = builtin_lookup(name);
    if (i < 0 || nbk >= BK_SLOTS / 2) return;
    const BuiltinDef *bd = builtin_get(i);
    unsigned h = bk_hash(bd);
    while (bk[h].bd && bk[h].bd != bd) h = (h + 1) & (BK_SLOTS - 1);
    if (!bk[h].bd) nbk++;
    bk[h].bd = bd;
    bk[h].kind = kind;
}

static int bk_kind(const BuiltinDef *bd)
{
    for (unsigned h = bk_hash(bd);; h = (h + 1) & (BK_SLOTS - 1)) {
        if (bk[h].bd == bd) return bk[h].kind;
        if (!bk[h].bd) return -1;
    }
}

static void bk_init(void)
{
    for (const char *const *l = own_way; *l; l++)
        bk_add(*l, strcmp(*l, "num") == 0 ? BK_NUM : BK_OWN);
    for (const char *const *l = plain_builtins; *l; l++) bk_add(*l, BK_PLAIN);
    for (const char *const *l = track_np_plain; *l; l++) bk_add(*l, BK_PLAIN);
    static const struct {
        const char *name;
        int kind;
    } mine[] = {
        { "array", BK_ARRAY },     { "atan2", BK_ATAN2 },         { "dot", BK_DOT },
        { "reshape", BK_RESHAPE }, { "transpose", BK_TRANSPOSE }, { "tolist", BK_TOLIST },
        { "shape", BK_SHAPE },     { "mean", BK_MEAN },           { "norm", BK_NORM },
        { "kron", BK_KRON },       { "real", BK_IDENT },          { "conj", BK_IDENT },
        { "imag", BK_IMAG },
    };
    for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++) bk_add(mine[i].name, mine[i].kind);
}

/* The TF_INTERCEPT slot: a builtin met a tracked value. */
static Value track_builtin(VM *vm, const BuiltinDef *bd, Args *a)
{
    if (bd->flags & (BI_GATE | BI_QUANTUM))
        return v_notimpl(); /* the quantum runtime reads tracked parameters */
    pthread_once(&bk_once, bk_init);
    int kind = bk_kind(bd);
    switch (kind) {
    case BK_OWN: return v_notimpl();
    case BK_NUM:
        if (a->n == 1 && track_is(a->v[0])) {
            incref(a->v[0]);
            return a->v[0];
        }
        return v_notimpl();
    case BK_ARRAY: return b_array(vm, a);
    case BK_ATAN2: return a->n == 2 ? b_atan2(vm, a) : v_notimpl();
    case BK_DOT: return a->n == 2 ? b_dot(vm, a) : v_notimpl();
    case BK_RESHAPE: return b_reshape(vm, a);
    case BK_TRANSPOSE: return b_transpose(vm, a);
    case BK_TOLIST:
        if (a->n != 1 || a->v[0].t != T_TARR) return v_notimpl();
        if (!mine(vm, a->v[0], a->site)) return v_exc();
        return b_tolist(vm, a->v[0], a->site);
    case BK_SHAPE: return a->n == 1 && a->v[0].t == T_TARR ? b_shape(vm, a) : v_notimpl();
    case BK_MEAN: return b_mean(vm, a);
    case BK_NORM: return b_norm(vm, a);
    case BK_KRON: return a->n == 2 ? b_kron(vm, a) : v_notimpl();
    case BK_IDENT: incref(a->v[0]); return a->v[0];
    case BK_IMAG: {
        Value p = track_plain(a->v[0]);
        Value r = tp_binop(vm, OP_MUL, p, v_num(0), a->site);
        decref(p);
        return r;
    }
    case BK_PLAIN: {
        Value pv[a->n + a->nkw + 1];
        for (int i = 0; i < a->n + a->nkw; i++)
            pv[i] = track_plain(i < a->n ? a->v[i] : a->kw[i - a->n]);
        Args p = { a->n, pv, a->nkw, a->kwname, pv + a->n, a->site, bd };
        Value r = bd->fn(vm, &p);
        for (int i = 0; i < a->n + a->nkw; i++) decref(pv[i]);
        return r;
    }
    default: break;
    }
    Value np = track_np_builtin(vm, bd, a); /* NumPy's functions (track_np.c) */
    if (np.t != T_NOTIMPL) return np;
    return vm_error(vm, a->site,
                    "%s() cannot take a differentiated value (its result would have no derivative)",
                    bd->name);
}

/* ---------------------------------------------------------------- registration */

/* Where only its value is looked at (an index, a dict key, a repetition
 * count) a tracked number stands for its plain value (lang/quantum.md). */
static bool tnum_number(Value v, double *out)
{
    *out = TNUM(v)->x;
    return true;
}

static const TypeOps tnum_ops = {
    .name = "number",
    .flags = TF_INTERCEPT | TF_LEAF,
    .free = tnum_free,
    .copy = tnum_copy,
    .repr = tnum_repr,
    .eq = tnum_eq,
    .number = tnum_number,
    .binop = track_binop,
    .unop = track_unop,
    .truthy = tnum_truthy,
    .math = track_math,
    .builtin = track_builtin,
};

static const TypeOps tarr_ops = {
    .name = "array",
    .flags = TF_INTERCEPT | TF_LEAF,
    .free = tarr_free,
    .copy = tarr_copy,
    .repr = tarr_repr,
    .eq = tarr_eq,
    .binop = track_binop,
    .unop = track_unop,
    .truthy = tarr_truthy,
    .index = tarr_index,
    .setindex = tarr_setindex,
    .len = tarr_len,
    .iter = tarr_iter,
    .contains = tarr_contains,
    .math = track_math,
    .reduce = track_reduce,
    .builtin = track_builtin,
};

void track_open(void)
{
    T_TNUM = type_register_new(&tnum_ops);
    T_TARR = type_register_new(&tarr_ops);
    track_cx_open();
}
