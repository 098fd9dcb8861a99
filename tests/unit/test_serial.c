/* test_serial.c — Check unit tests of src/serial.c and the kinds' ser/deser
 * slots: every kind a task may carry to another rank comes back equal (by
 * value_eq and by its printed form), numbers bit for bit, shared structure
 * and cycles kept, functions callable with their captured values and the
 * globals they read; a kind without slots, a module outside the code table
 * and a future still running are refused with a message; truncated or
 * corrupted input fails cleanly at every length. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrayval.h"
#include "array.h"
#include "func.h"
#include "load.h"
#include "qh.h"
#include "serial.h"
#include "sv.h"

static const char program[] =
    "x = 0.1 + 0.2\n"
    "neg = -0.0\n"
    "big = 1e308 * 10\n"
    "s = \"h\\u{e9}llo\\nworld\"\n"
    "l = [1, \"two\", [3, 4], nil, true, false]\n"
    "d = {\"a\": 1, 2: [3], true: {\"x\": \"y\"}}\n"
    "c = 1.5 + 2j\n"
    "a = array([[1, 2.5], [3, 4]])\n"
    "ca = array([1 + 1j, 2])\n"
    "dev = device(\"statevector\", wires=3, shots=100, seed=7)\n"
    "k = 10\n"
    "fn add(p, q=2) { return p + q }\n"
    "fn mk(n) { fn inner(x) { return x + n + k } \n return inner }\n"
    "cl = mk(5)\n"
    "qfn circ(t) on dev { RX(t, 0)\n return expval(PauliZ(0)) }\n"
    "g = RX(0.5, wires=[1])\n"
    "cg = ctrl(PauliX(2), control=[0])\n"
    "obs = 0.5 * PauliZ(0) @ PauliX(1) + PauliY(2)\n"
    "hob = 2 * Hermitian(array([[1, 2j], [-2j, 3]]), wires=[1]) @ "
    "PauliZ(0) + Projector([1, 0], wires=[0, 2])\n"
    "bg = RX(array([0.1, 0.2, 0.3]), wires=[0])\n"
    "u = QubitUnitary(array([[0, 1], [1, 0]]), wires=[0])\n"
    "wide = MultiRZ(0.1, wires=range(64))\n"
    "adj = adjoint(circ)\n"
    "bi = len\n"
    "shared = [1, 2]\n"
    "pair = [shared, shared]\n"
    "cyc = [1]\n"
    "append(cyc, cyc)\n"
    "fut = circ(0.3)\n"
    "done = wait(fut)\n"
    "mask = array([1, 0, 1]) > 0\n"
    "nomask = array([1, 0, 1])\n"
    "qc = qasm(\"OPENQASM 2.0; qreg q[2]; creg c[2]; h q[0]; cx q[0], q[1]; "
    "if (c == 1) x q[1]; measure q -> c;\")\n"
    "mdev = device(\"mixed\", wires=2)\n"
    "ch = DepolarizingChannel(0.1, wires=0)\n";

static qh_State *Q;
static qh_Program *P;
static SerCode code;
static CopyCtx kept; /* modules read: cycles broken at teardown */

static void setup(void)
{
    qh_Config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.err = stderr;
    Q = qh_open(&cfg);
    P = qh_compile(Q, "serial.qh", program, strlen(program), stderr);
    ck_assert_ptr_nonnull(P);
    ck_assert_int_eq(qh_run(Q, P), 0);
    load_code_table(qh_interp(Q), qh_program_info(P), &code);
    copy_init(&kept);
}

static void teardown(void)
{
    copy_release_modules(&kept);
    load_code_free(&code);
    qh_close(Q, 0);
}

static Value global(const char *name)
{
    Value v;
    ck_assert_msg(qh_get_global(Q, name, &v), "no global %s", name);
    return v;
}

static char *repr_of(Value v)
{
    Buf b;
    buf_init(&b);
    value_repr(&b, v, true);
    char *s = strdup(b.p ? b.p : "");
    buf_free(&b);
    return s;
}

/* v -> bytes -> a new value (checked to use every byte) */
static Value roundtrip(Value v, size_t *nbytes)
{
    SerCtx w;
    ser_init(&w, &code);
    ck_assert_msg(ser_value(&w, v), "ser failed: %s", w.error);
    SerCtx r;
    des_init(&r, w.out.p, w.out.len, &code);
    Value out = des_value(&r);
    ck_assert_msg(!IS_EXC(out), "deser failed: %s", r.error);
    ck_assert(des_at_end(&r));
    if (nbytes) *nbytes = w.out.len;
    copy_move_modules(&kept, &r.memo); /* as a task keeps them until it ends */
    ser_free(&r);
    ser_free(&w);
    return out;
}

/* a value read back, let go (with the cycles it may hold) */
static void drop(Value v)
{
    value_break_cycles(&v, 1);
    decref(v);
}

static void check_same(const char *name)
{
    Value v = global(name);
    Value w = roundtrip(v, NULL);
    char *a = repr_of(v), *b = repr_of(w);
    ck_assert_msg(strcmp(a, b) == 0, "%s: %s became %s", name, a, b);
    if (type_of(v)->eq || v.t < T_FUNC)
        ck_assert_msg(value_eq(v, w), "%s: not equal after the trip", name);
    free(a);
    free(b);
    decref(v);
    drop(w);
}

START_TEST(test_plain_kinds)
{
    const char *names[] = { "x",   "neg", "big", "s",   "l",   "d",  "c", "a",  "ca",
                            "dev", "g",   "cg",  "obs", "hob", "bg", "u", "bi", "done" };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) check_same(names[i]);
}
END_TEST

START_TEST(test_numbers_bits)
{
    const char *names[] = { "x", "neg", "big" };
    for (int i = 0; i < 3; i++) {
        Value v = global(names[i]), w = roundtrip(v, NULL);
        ck_assert_int_eq(w.t, T_NUM);
        ck_assert(memcmp(&v.n, &w.n, sizeof(double)) == 0);
        drop(w);
    }
}
END_TEST

/* a comparison's result stays a mask (it indexes as NumPy's bool), and a
 * 0/1 array stays positions: the same numbers, different meanings */
START_TEST(test_array_mask)
{
    Value m = global("mask"), n = global("nomask");
    Value wm = roundtrip(m, NULL), wn = roundtrip(n, NULL);
    ck_assert(ar_is_mask(AS_ARR(wm)));
    ck_assert(!ar_is_mask(AS_ARR(wn)));
    decref(m);
    decref(n);
    drop(wm);
    drop(wn);
}
END_TEST

START_TEST(test_shared_and_cycles)
{
    Value p = global("pair"), q = roundtrip(p, NULL);
    ck_assert_int_eq(q.t, T_LIST);
    ck_assert_ptr_eq(AS_LIST(q)->v[0].o, AS_LIST(q)->v[1].o); /* still one list */
    ck_assert_ptr_ne(AS_LIST(q)->v[0].o, AS_LIST(p)->v[0].o); /* a new one */
    decref(p);
    drop(q);
    Value c = global("cyc"), d = roundtrip(c, NULL);
    ck_assert_int_eq(AS_LIST(d)->len, 2);
    ck_assert_ptr_eq(AS_LIST(d)->v[1].o, d.o); /* contains itself */
    decref(c);
    drop(d);
}
END_TEST

static double call_num(Value f, int n, Value *args)
{
    Value r = qh_call(Q, f, n, args);
    ck_assert_msg(!IS_EXC(r), "call failed: %s", qh_error_message(Q));
    ck_assert_int_eq(r.t, T_NUM);
    return r.n;
}

START_TEST(test_functions)
{
    Value add = global("add"), add2 = roundtrip(add, NULL);
    Value one = v_num(1);
    ck_assert(call_num(add2, 1, &one) == 3); /* the default came along */
    Value cl = global("cl"), cl2 = roundtrip(cl, NULL);
    ck_assert(call_num(cl2, 1, &one) == 16);               /* its cell and the global k */
    ck_assert_ptr_ne(AS_FUNC(cl2)->mod, AS_FUNC(cl)->mod); /* a module of its own */
    ck_assert_ptr_eq(AS_FUNC(cl2)->p, AS_FUNC(cl)->p);     /* the same code */
    /* a qfn with its device */
    Value circ = global("circ"), circ2 = roundtrip(circ, NULL);
    ck_assert_int_eq(AS_FUNC(circ2)->device.t, T_DEVICE);
    decref(add);
    drop(add2);
    decref(cl);
    drop(cl2);
    decref(circ);
    drop(circ2);
    check_same("adj");
}
END_TEST

START_TEST(test_refusals)
{
    /* a module that is not in the table */
    SerCode empty = { NULL, NULL, NULL, 0 };
    SerCtx w;
    Value cl = global("cl");
    ser_init(&w, &empty);
    ck_assert(!ser_value(&w, cl));
    ck_assert_msg(strstr(w.error, "cannot be sent to another rank") != NULL, "%s", w.error);
    ser_free(&w);
    decref(cl);
    /* a future still running */
    Value fut = global("fut"); /* resolved by wait(): it travels as its value */
    Value v = roundtrip(fut, NULL);
    ck_assert_int_eq(v.t, T_NUM);
    drop(v);
    decref(fut);
}
END_TEST

/* Every prefix of a valid encoding, and every one-byte corruption of it,
 * is read without a crash: a clean failure (or, for corruption, any value). */
START_TEST(test_truncated_and_corrupt)
{
    const char *names[] = { "l", "d", "a", "cl", "obs", "hob", "bg", "u", "dev", "adj" };
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        Value v = global(names[k]);
        SerCtx w;
        ser_init(&w, &code);
        ck_assert(ser_value(&w, v));
        for (size_t n = 0; n < w.out.len; n++) {
            SerCtx r;
            des_init(&r, w.out.p, n, &code);
            Value x = des_value(&r);
            ck_assert_msg(IS_EXC(x), "%s: a prefix of %zu bytes read as a value", names[k], n);
            ck_assert(r.error[0]);
            ser_free(&r);
        }
        unsigned char *copy = malloc(w.out.len);
        for (size_t n = 0; n < w.out.len; n++) {
            memcpy(copy, w.out.p, w.out.len);
            copy[n] ^= 0x5a;
            SerCtx r;
            des_init(&r, copy, w.out.len, &code);
            Value x = des_value(&r);
            if (!IS_EXC(x)) {
                value_break_cycles(&x, 1);
                decref(x);
            }
            ser_free(&r);
        }
        free(copy);
        ser_free(&w);
        decref(v);
    }
}
END_TEST

/* Uses a value read back the ways that dereference its ids: its text,
   and the builtins that walk a circuit's ops or an operator's gate. */
static void use(Value x)
{
    free(repr_of(x));
    static const char *fns[] = { "to_qasm", "specs", "matrix" };
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        Value f;
        if (!qh_get_global(Q, fns[i], &f)) continue;
        Value r = qh_call(Q, f, 1, &x);
        if (!IS_EXC(r)) decref(r);
        decref(f);
    }
}

/* Another rank's bytes with every id and index replaced by hostile values
 * (a 32-bit word at each offset: -1, 64, INT_MAX): each is refused or
 * reads as a value that can be used without a crash or a sanitizer report
 * (gate and channel ids, wire numbers, bit numbers, condition indices,
 * wire counts against 1 << nwires). */
START_TEST(test_hostile_ids)
{
    const char *names[] = { "g", "cg", "u", "qc", "ch" };
    const int32_t bad[] = { -1, 64, 0x7fffffff };
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        Value v = global(names[k]);
        SerCtx w;
        ser_init(&w, &code);
        ck_assert(ser_value(&w, v));
        unsigned char *copy = malloc(w.out.len);
        for (size_t n = 0; n + 4 <= w.out.len; n++)
            for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
                memcpy(copy, w.out.p, w.out.len);
                memcpy(copy + n, &bad[b], 4);
                SerCtx r;
                des_init(&r, copy, w.out.len, &code);
                Value x = des_value(&r);
                if (!IS_EXC(x)) {
                    use(x);
                    value_break_cycles(&x, 1);
                    decref(x);
                } else {
                    ck_assert(r.error[0]);
                }
                copy_move_modules(&kept, &r.memo);
                ser_free(&r);
            }
        free(copy);
        ser_free(&w);
        decref(v);
    }
}
END_TEST

/* A modifier whose function is itself, a device whose noise function is
 * itself: refused (calling either would recurse forever). */
START_TEST(test_self_reference)
{
    const char *names[] = { "adj", "dev" };
    for (size_t k = 0; k < 2; k++) {
        Value v = global(names[k]);
        SerCtx w;
        ser_init(&w, &code);
        ck_assert(ser_value(&w, v));
        /* the modifier's function / the device's noise is its last value: a
           whole module for adj (replaced by cutting there), nil for dev */
        size_t cut = w.out.len - 1;
        if (k == 0) cut = 1 + 1 + 4; /* tag, adjoint flag, nctrl = 0 */
        unsigned char *copy = malloc(cut + 9);
        memcpy(copy, w.out.p, cut);
        copy[cut] = 0xff; /* a reference to object 0: the value itself */
        memset(copy + cut + 1, 0, 8);
        SerCtx r;
        des_init(&r, copy, cut + 9, &code);
        Value x = des_value(&r);
        ck_assert_msg(IS_EXC(x), "%s: a self-reference was read", names[k]);
        ck_assert(r.error[0]);
        ser_free(&r);
        free(copy);
        ser_free(&w);
        decref(v);
    }
}
END_TEST

/* the offset of the only occurrence of `pat` in `buf` (two occurrences fail the test) */
static size_t find_once(const unsigned char *buf, size_t len, const void *pat, size_t n)
{
    size_t at = len;
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(buf + i, pat, n) == 0) {
            ck_assert_msg(at == len, "the pattern occurs twice");
            at = i;
        }
    ck_assert_msg(at < len, "the pattern does not occur");
    return at;
}

/* An operator read back claims a width whose 2^k x 2^k matrix cannot exist (wider than
 * QubitUnitary's SV_MAX_DENSE; 64 wires made 1 << 64; 32 made d * d wrap to 0, so an empty
 * matrix matched): refused, whether its matrix bytes are the original ones or none. An
 * operator on all 64 wires without a matrix travels. */
START_TEST(test_operator_width)
{
    check_same("wide");
    Value u = global("u");
    SerCtx w;
    ser_init(&w, &code);
    ck_assert(ser_value(&w, u));
    const unsigned char *enc = (const unsigned char *)w.out.p;
    size_t len = w.out.len;
    int head[3] = { SV_QUBITUNITARY, 1, 0 }; /* SvOp's gate, nwires, wires[0] */
    size_t at = find_once(enc, len, head, sizeof head) + offsetof(SvOp, nwires);
    /* the matrix: its length, its presence, then [[0, 1], [1, 0]] as complex numbers */
    double m[8] = { 0, 0, 1, 0, 1, 0, 0, 0 };
    size_t mat = find_once(enc, len, m, sizeof m) - sizeof(uint64_t) - 1;
    unsigned char *bad = malloc(len);
    const int widths[] = { 1, 11, 20, 31, 32, 33, 63, 64 };
    for (size_t k = 0; k < sizeof widths / sizeof *widths; k++)
        for (int empty = 0; empty < 2; empty++) {
            size_t n = len;
            memcpy(bad, enc, len);
            memcpy(bad + at, &widths[k], sizeof(int));
            if (empty) { /* the matrix as present with 0 bytes */
                uint64_t zero = 0;
                memcpy(bad + mat, &zero, sizeof zero);
                size_t tail = mat + sizeof zero + 1 + sizeof m;
                memmove(bad + mat + sizeof zero + 1, enc + tail, len - tail);
                n = len - sizeof m;
            }
            SerCtx r;
            des_init(&r, bad, n, &code);
            Value x = des_value(&r);
            if (widths[k] == 1 && !empty) {
                ck_assert_msg(!IS_EXC(x), "the unchanged encoding: %s", r.error);
                drop(x);
            } else {
                ck_assert_msg(IS_EXC(x), "%d wires%s read as an operator", widths[k],
                              empty ? " with an empty matrix" : "");
                ck_assert_msg(strstr(r.error, "operator") != NULL, "%s", r.error);
            }
            copy_move_modules(&kept, &r.memo);
            ser_free(&r);
        }
    free(bad);
    ser_free(&w);
    decref(u);
}
END_TEST


static Suite *suite(void)
{
    Suite *s = suite_create("serial");
    TCase *tc = tcase_create("roundtrip");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_plain_kinds);
    tcase_add_test(tc, test_numbers_bits);
    tcase_add_test(tc, test_shared_and_cycles);
    tcase_add_test(tc, test_array_mask);
    tcase_add_test(tc, test_functions);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_truncated_and_corrupt);
    tcase_add_test(tc, test_hostile_ids);
    tcase_add_test(tc, test_self_reference);
    tcase_add_test(tc, test_operator_width);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
