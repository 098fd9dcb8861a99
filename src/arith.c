/* arith.c — the operator slots of the value room's kinds: numbers (and
 * their Python-like floor division, modulo and powers), complex numbers,
 * strings and lists (+, *, comparisons). Every slot answers "not
 * implemented" for an operand kind it does not know, so that the other
 * operand's kind (an array, an operator, a tracked number ...) may. Knows
 * values and the dispatcher (types.h). */
#include "arith.h"
#include "qh_assert.h"

#include <complex.h>
#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- numbers */

/* Bitwise operators work on integers of magnitude below 2^53, the ones a
 * double holds exactly, with Python's meaning (two's complement of
 * unbounded width); any other operand, and a result outside that range,
 * is an error (lang/values.md#bitwise-operators). */
static Value bit_op(VM *vm, BinOp op, double a, double b, const Node *site)
{
    int64_t x, y, r;
    if (!num_int53(a, &x)) return tp_bit_error(vm, op, a, site);
    if (!num_int53(b, &y)) return tp_bit_error(vm, op, b, site);
    switch (op) {
    case OP_BAND: r = x & y; break;
    case OP_BOR: r = x | y; break;
    case OP_BXOR: r = x ^ y; break;
    case OP_SHL:
        if (y < 0) return vm_error(vm, site, "negative shift count %lld", (long long)y);
        if (x != 0 && (y >= 53 || (x < 0 ? -x : x) >= ((int64_t)1 << (53 - y))))
            return vm_error(vm, site,
                            "%lld << %lld is out of range (integers must stay below 2**53)",
                            (long long)x, (long long)y);
        r = x == 0 ? 0 : (int64_t)((uint64_t)x << y);
        break;
    case OP_SHR:
        if (y < 0) return vm_error(vm, site, "negative shift count %lld", (long long)y);
        if (y > 62) y = 62;
        r = x >= 0 ? x >> y : ~(~x >> y); /* floor division by 2^y */
        break;
    case OP_ADD:
    case OP_SUB:
    case OP_MUL:
    case OP_DIV:
    case OP_IDIV:
    case OP_MOD:
    case OP_POW:
    case OP_MATMUL:
    case OP_EQ:
    case OP_NE:
    case OP_LT:
    case OP_LE:
    case OP_GT:
    case OP_GE:
    case OP_IN:
    case OP_NOTIN:
    case OP_NEG:
    case OP_POS:
    case OP_INVERT:
    case OP_NOPS: qh_unreachable();
    }
    /* & | ^ of two such integers can reach -2^53 (e.g. -1 ^ (2^53 - 1)) */
    if (!((double)r > -NUM_INT53 && (double)r < NUM_INT53))
        return vm_error(vm, site, "result of %s is out of range (integers must stay below 2**53)",
                        op_symbol(op));
    return v_num((double)r);
}

static double py_mod(double a, double b)
{
    double r = fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

Value arith_num(VM *vm, BinOp op, double a, double b, const Node *site)
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
        if (b > 0 && a >= 0 && a < 9007199254740992.0 && b < 9007199254740992.0 &&
            a == (double)(int64_t)a && b == (double)(int64_t)b)
            return v_num((double)((int64_t)a % (int64_t)b));
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
    case OP_BAND:
    case OP_BOR:
    case OP_BXOR:
    case OP_SHL:
    case OP_SHR: return bit_op(vm, op, a, b, site);
    case OP_MATMUL:
    case OP_IN:
    case OP_NOTIN:
    case OP_NEG:
    case OP_POS:
    case OP_INVERT:
    case OP_NOPS:
        return vm_error(vm, site, "unsupported operand types for %s: number and number",
                        op_symbol(op));
    }
    qh_unreachable();
}

static Value complex_op(VM *vm, BinOp op, double ar, double ai, double br, double bi,
                        const Node *site)
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
            while (n) {
                if (n & 1) acc *= base;
                base *= base;
                n >>= 1;
            }
            z = br < 0 ? 1.0 / acc : acc;
        }
        return v_complex(creal(z), cimag(z));
    }
    case OP_EQ: return v_bool(ar == br && ai == bi);
    case OP_NE: return v_bool(!(ar == br && ai == bi));
    case OP_IDIV:
    case OP_MOD:
    case OP_MATMUL:
    case OP_LT:
    case OP_LE:
    case OP_GT:
    case OP_GE:
    case OP_IN:
    case OP_NOTIN:
    case OP_NEG:
    case OP_POS:
    case OP_NOPS:
    case OP_BAND:
    case OP_BOR:
    case OP_BXOR:
    case OP_SHL:
    case OP_SHR:
    case OP_INVERT:
        return vm_error(vm, site, "unsupported operation %s on complex numbers", op_symbol(op));
    }
    qh_unreachable();
}

static Value seq_repeat(VM *vm, Value seq, double times, const Node *site);

/* number op x, or x op number: complex partners, and repetition */
static Value num_binop(VM *vm, BinOp op, Value a, Value b, const Node *site)
{
    if (a.t == T_NUM && b.t == T_NUM) return arith_num(vm, op, a.n, b.n, site);
    double ar, ai, br, bi;
    if (as_complex(a, &ar, &ai) && as_complex(b, &br, &bi))
        return complex_op(vm, op, ar, ai, br, bi, site);
    return v_notimpl();
}

static Value complex_binop(VM *vm, BinOp op, Value a, Value b, const Node *site)
{
    double ar, ai, br, bi;
    if (as_complex(a, &ar, &ai) && as_complex(b, &br, &bi))
        return complex_op(vm, op, ar, ai, br, bi, site);
    return v_notimpl();
}

static Value complex_unop(VM *vm, BinOp op, Value a, const Node *site)
{
    (void)vm;
    (void)site;
    if (op == OP_INVERT) return v_notimpl();
    if (op == OP_NEG) return v_complex(-AS_CPLX(a)->re, -AS_CPLX(a)->im);
    incref(a);
    return a;
}

/* ---------------------------------------------------------------- strings */

static int str_cmp(const ObjStr *a, const ObjStr *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->s, b->s, n);
    if (c) return c;
    return a->len < b->len ? -1 : a->len > b->len;
}

static Value str_binop(VM *vm, BinOp op, Value a, Value b, const Node *site)
{
    if (a.t == T_STR && b.t == T_STR) {
        ObjStr *x = AS_STR(a), *y = AS_STR(b);
        switch (op) {
        case OP_ADD: {
            if ((size_t)x->len + y->len > 0xfffffff0u) return vm_error(vm, site, "string too long");
            ObjStr *r = str_alloc_try((size_t)x->len + y->len);
            if (!r) return vm_oom(vm, site);
            memcpy(r->s, x->s, x->len);
            memcpy(r->s + x->len, y->s, y->len);
            str_finish(r);
            return v_obj(&r->h);
        }
        case OP_LT: return v_bool(str_cmp(x, y) < 0);
        case OP_LE: return v_bool(str_cmp(x, y) <= 0);
        case OP_GT: return v_bool(str_cmp(x, y) > 0);
        case OP_GE: return v_bool(str_cmp(x, y) >= 0);
        case OP_NOPS: qh_unreachable();
        case OP_SUB:
        case OP_MUL:
        case OP_DIV:
        case OP_IDIV:
        case OP_MOD:
        case OP_POW:
        case OP_MATMUL:
        case OP_EQ:
        case OP_NE:
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
    }
    double times; /* a count: a number, or a kind standing for one (its plain value) */
    if (op == OP_MUL && a.t == T_STR && tp_number(b, &times)) return seq_repeat(vm, a, times, site);
    if (op == OP_MUL && b.t == T_STR && tp_number(a, &times)) return seq_repeat(vm, b, times, site);
    if (op == OP_MOD && a.t == T_STR)
        return vm_error(vm, site, "use fmt(format, args...) to format strings");
    return v_notimpl();
}

/* ---------------------------------------------------------------- lists */


static Value seq_repeat(VM *vm, Value seq, double times, const Node *site)
{
    if (times != floor(times))
        return vm_error(vm, site, "can only repeat a sequence an integer number of times");
    long n = times < 0 ? 0 : times > 4e9 ? 4000000000L : (long)times;
    if (seq.t == T_STR) {
        ObjStr *s = AS_STR(seq);
        if (n && (double)s->len * (double)n > 2e9)
            return vm_error(vm, site, "string too long (%.0f bytes)", (double)s->len * (double)n);
        ObjStr *r = str_alloc_try(s->len * (size_t)n);
        if (!r) return vm_oom(vm, site);
        for (long i = 0; i < n; i++) memcpy(r->s + (size_t)i * s->len, s->s, s->len);
        str_finish(r);
        return v_obj(&r->h);
    }
    ObjList *l = AS_LIST(seq);
    if (n && (double)l->len * (double)n > 1e9) return vm_error(vm, site, "list too long");
    ObjList *r = list_new_try(l->len * (size_t)n);
    if (!r) return vm_oom(vm, site);
    for (long i = 0; i < n; i++)
        for (size_t k = 0; k < l->len; k++) {
            incref(l->v[k]);
            r->v[r->len++] = l->v[k];
        }
    return v_list(r);
}

static Value list_binop(VM *vm, BinOp op, Value a, Value b, const Node *site)
{
    if (a.t == T_LIST && b.t == T_LIST) {
        ObjList *x = AS_LIST(a), *y = AS_LIST(b);
        if (op == OP_ADD) {
            ObjList *r = list_new_try(x->len + y->len);
            if (!r) return vm_oom(vm, site);
            for (size_t i = 0; i < x->len; i++) {
                incref(x->v[i]);
                r->v[r->len++] = x->v[i];
            }
            for (size_t i = 0; i < y->len; i++) {
                incref(y->v[i]);
                r->v[r->len++] = y->v[i];
            }
            return v_list(r);
        }
        if (op >= OP_LT && op <= OP_GE) {
            size_t n = x->len < y->len ? x->len : y->len;
            for (size_t i = 0; i < n; i++) {
                if (value_eq(x->v[i], y->v[i])) continue;
                return tp_binop(vm, op, x->v[i], y->v[i], site);
            }
            return arith_num(vm, op, (double)x->len, (double)y->len, site);
        }
    }
    double times;
    if (op == OP_MUL && a.t == T_LIST && tp_number(b, &times))
        return seq_repeat(vm, a, times, site);
    if (op == OP_MUL && b.t == T_LIST && tp_number(a, &times))
        return seq_repeat(vm, b, times, site);
    return v_notimpl();
}

/* ---------------------------------------------------------------- registration */

static const TypeOps num_ops = { .name = "number", .binop = num_binop };
static const TypeOps complex_ops = { .name = "complex",
                                     .binop = complex_binop,
                                     .unop = complex_unop };
static const TypeOps str_ops = { .name = "string", .binop = str_binop };
static const TypeOps list_ops = { .name = "list", .flags = TF_TRACK, .binop = list_binop };

void arith_open(void)
{
    type_register(T_NUM, &num_ops);
    type_register(T_COMPLEX, &complex_ops);
    type_register(T_STR, &str_ops);
    type_register(T_LIST, &list_ops);
}
