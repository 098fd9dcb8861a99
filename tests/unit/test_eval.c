/* test_eval.c — Check unit tests of the evaluator rooms through the public
 * face (src/qh.h), each program run in both modes (--sync and background
 * workers: same bytes, same status):
 *   eval   expressions by operand shape (constants, locals, globals, cells,
 *          other expressions: the per-node handlers must agree), element
 *          reads and writes, op=, swaps, control flow, comprehensions;
 *   call   frames, argument binding (defaults, keywords, arity), closures,
 *          recursion and its limit, tracebacks;
 *   builtins  the core builtins' results and their errors;
 *   qrt    quantum functions: devices, gates, measurements, operators,
 *          errors located in the caller;
 *   async  futures: where they are forced, output order, failures read and
 *          unread, futures inside containers, ready/wait/sync. */
#include <math.h>

#include "qh_harness.h"

typedef struct Case {
    const char *program, *want;
} Case;
typedef struct ErrCase {
    const char *program;
    int status;
    const char *msg;
} ErrCase;

/* ================================================================ eval: expressions */

/* the same arithmetic with each operand held four ways: a constant, a
 * local, a global, a cell (a local a closure captures) and an expression */
static const char *shapes =
    "g = 7\n"
    "fn run(k) {\n"
    "    l = 7\n"
    "    c = 7\n"
    "    fn reads() { return c }\n"
    "    out = []\n"
    "    for x in [7, l, g, c, (3 + 4), reads()] {\n"
    "        append(out, [x + k, k - x, x * k, x / k, x // k, x % k, x ** 2, -x,\n"
    "                     x < k, x <= k, x > k, x >= k, x == k, x != k,\n"
    "                     x & k, x | k, x ^ k, x << 2, x >> 1, ~x])\n"
    "    }\n"
    "    return out\n"
    "}\n"
    "r = run(3)\n"
    "same = true\n"
    "for row in r { if row != r[0] { same = false } }\n"
    "print(same)\n"
    "print(r[0])\n";

START_TEST(operand_shapes_agree)
{
    expect_out(shapes,
               "true\n[10, -4, 21, 2.3333333333333335, 2, 1, 49, -7, false, false, true, true, "
               "false, true, 3, 7, 4, 28, 3, -8]\n");
}
END_TEST

static const Case expr_cases[] = {
    /* Python's floor division and modulo signs, true division, powers */
    { "print(-7 // 2, -7 % 2, 7 % -2, 7 / 2, 2 ** 10, 2 ** -1, 0.1 + 0.2)\n",
      "-4 1 -1 3.5 1024 0.5 0.30000000000000004\n" },
    /* short circuits evaluate the right side only when needed */
    { "fn t(v) { print(\"t\", v)\n return v }\nx = t(false) and t(1)\ny = t(1) or t(2)\nprint(x, "
      "y)\n",
      "t false\nt 1\nfalse 1\n" },
    /* chained strings and lists: new values, the operands untouched */
    { "a = [1]\nb = a + [2]\nc = a * 3\nprint(a, b, c, \"ab\" * 2, \"x\" + \"y\")\n",
      "[1] [1, 2] [1, 1, 1] abab xy\n" },
    /* comparisons of strings and lists, containment */
    { "print(\"a\" < \"b\", [1, 2] < [1, 3], 2 in [1, 2], \"b\" in \"abc\", \"k\" in {\"k\": 1}, 3 "
      "not in [1])\n",
      "true true true true true true\n" },
    /* conditional expression and comprehensions (nested clauses, dicts) */
    { "print([x * y for x in range(3) for y in [1, 10] if x != 1], {k: k * k for k in range(3)}, 1 "
      "if [] else 2)\n",
      "[0, 0, 2, 20] {0: 0, 1: 1, 2: 4} 2\n" },
    /* element reads and writes: negative indices, op=, nested, dict records */
    { "xs = [1, 2, 3]\nxs[-1] = 30\nxs[0] += 10\nm = [[0, 0], [0, 0]]\nm[1][0] += 5\n"
      "p = {\"x\": 1}\np[\"x\"] += 1\np[\"y\"] = p[\"x\"] * 2\nprint(xs, m, p, xs[-3])\n",
      "[11, 2, 30] [[0, 0], [5, 0]] {\"x\": 2, \"y\": 4} 11\n" },
    /* swaps and unpacking evaluate the right side first */
    { "a, b = 1, 2\na, b = b, a\nxs = [5, 6]\nxs[0], xs[1] = xs[1], xs[0]\nprint(a, b, xs)\n",
      "2 1 [6, 5]\n" },
    /* s += t on a string shared elsewhere leaves the other holder alone */
    { "s = \"ab\"\nt = s\ns += \"c\"\nfor i in range(3) { s += \"d\" }\nprint(s, t)\n",
      "abcddd ab\n" },
    /* slices */
    { "xs = [0, 1, 2, 3, 4]\nprint(xs[1:3], xs[::-2], xs[-2:], \"hello\"[1:4])\n",
      "[1, 2] [4, 2, 0] [3, 4] ell\n" },
    /* loops: break, continue, while, nested functions in loops capture per call */
    { "out = []\nfor i in range(10) { if i == 5 { break }\n if i % 2 == 0 { continue }\n "
      "append(out, i) }\n"
      "n = 0\nwhile true { n += 1\n if n >= 4 { break } }\nprint(out, n)\n",
      "[1, 3] 4\n" },
};

START_TEST(expressions) { expect_out(expr_cases[_i].program, expr_cases[_i].want); }
END_TEST

static const ErrCase expr_errors[] = {
    { "x = 1 / 0\n", 1, "t.qh:1:7: error: division by zero" },
    { "x = [1] - [1]\n", 1, "unsupported operand types for -: list and list" },
    { "x = {}\ny = x[\"k\"]\n", 1, "key \"k\" not in dict" },
    { "x = 1.5 & 1\n", 1, "bitwise & needs integers, got 1.5" },
    { "x = [1, 2]\nx[5] = 1\n", 1, "t.qh:2:3: error: list index 5 out of range (length 2)" },
    { "s = \"abc\"\ns[0] = \"x\"\n", 1, "strings are immutable" },
    { "for x in 5 { }\n", 1, "cannot iterate over number" },
    { "x = nil\ny = x.field\n", 1, "nil has no member 'field'" },
    { "x = 5\ny = x(1)\n", 1, "number is not callable" },
    { "print(undefined_name)\n", 1, "name 'undefined_name' is not defined" },
    { "x = -\"s\"\n", 1, "bad operand type for unary -: string" },
};

START_TEST(expression_errors)
{
    expect_error(expr_errors[_i].program, expr_errors[_i].status, expr_errors[_i].msg);
}
END_TEST

/* ================================================================ call: frames and binding */

static const Case call_cases[] = {
    { "fn f(a, b=2, c=3) { return [a, b, c] }\nprint(f(1), f(1, 5), f(1, c=9), f(c=0, a=4))\n",
      "[1, 2, 3] [1, 5, 3] [1, 2, 9] [4, 2, 0]\n" },
    /* closures: each call its own cell; a cell shared by two closures;
     * assigning inside a closure makes a local of its own (no nonlocal) */
    { "fn counter() {\n n = [0]\n fn inc() { n[0] += 1\n return n[0] }\n return inc\n}\n"
      "a = counter()\nb = counter()\na()\na()\nprint(a(), b())\n"
      "fn pair() { v = [0]\n fn get() { return v[0] }\n fn set(x) { v[0] = x }\n"
      " fn shadow(x) { v = x\n return v }\n return [get, set, shadow] }\n"
      "p = pair()\np[1](42)\nprint(p[2](7), p[0]())\n",
      "3 1\n7 42\n" },
    /* recursion, mutual recursion, functions as values */
    { "fn fib(n) { if n < 2 { return n }\n return fib(n - 1) + fib(n - 2) }\n"
      "fn even(n) { if n == 0 { return true }\n return odd(n - 1) }\n"
      "fn odd(n) { if n == 0 { return false }\n return even(n - 1) }\n"
      "fs = [fib, even]\nprint(fs[0](15), fs[1](10), odd(7))\n",
      "610 true true\n" },
    /* globals: read anywhere, written at top level; locals shadow */
    { "x = 1\nfn f() { x = 2\n return x }\nfn g() { return x }\nprint(f(), g(), x)\n", "2 1 1\n" },
    /* a function without return gives nil; return without value too */
    { "fn f() { }\nfn g() { return }\nprint(f(), g())\n", "nil nil\n" },
    /* the deepest recursion the limit allows still works */
    { "fn d(n) { if n == 0 { return 0 }\n return 1 + d(n - 1) }\nprint(d(2000))\n", "2000\n" },
};

START_TEST(calls) { expect_out(call_cases[_i].program, call_cases[_i].want); }
END_TEST

static const ErrCase call_errors[] = {
    { "fn f(a, b) { }\nf(1)\n", 1, "t.qh:2:1: error: f() missing argument 'b'" },
    { "fn f(a) { }\nf(1, 2)\n", 1, "f() takes 1 argument but 2 were given" },
    { "fn f(a) { }\nf(1, z=2)\n", 1, "unexpected keyword argument 'z'" },
    { "fn f(n) { return f(n + 1) }\nf(0)\n", 1, "maximum recursion depth exceeded" },
    { "print(len(1, 2))\n", 1, "len() takes 1 argument but 2 were given" },
    { "fn inner() { return [][1] }\nfn outer() { return inner() }\nouter()\n", 1,
      "traceback (most recent call last):\n  t.qh:3: in <main>\n  t.qh:2: in outer\n  t.qh:1: in "
      "inner\n" },
};

START_TEST(call_failures)
{
    expect_error(call_errors[_i].program, call_errors[_i].status, call_errors[_i].msg);
}
END_TEST

/* ================================================================ builtins */

static const Case builtin_cases[] = {
    { "print(len([1, 2]), len(\"h\xc3\xa9\"), len({\"a\": 1}), abs(-2), min(3, 1, 2), max([4, 9]), "
      "sum([1, 2, 3]))\n",
      "2 2 1 2 1 9 6\n" },
    { "print(str(1.5), str([1, \"a\"]), type(1), type(\"s\"), type([]), type({}), type(nil), "
      "type(len))\n",
      "1.5 [1, \"a\"] number string list dict nil function\n" },
    /* arguments are evaluated left to right; xs is one list throughout */
    { "xs = [3, 1, 2]\nys = sorted(xs)\nappend(xs, 0)\nprint(xs, ys, reversed(ys), pop(xs), xs)\n",
      "[3, 1, 2] [1, 2, 3] [3, 2, 1] 0 [3, 1, 2]\n" },
    { "d = {\"b\": 1, \"a\": 2}\nprint(keys(d), values(d), items(d), get(d, \"c\", 0))\n",
      "[\"b\", \"a\"] [1, 2] [[\"b\", 1], [\"a\", 2]] 0\n" },
    { "print(fmt(\"%d|%5.2f|%s|%x\", 42, pi, \"s\", 255), split(\"a b  c\"), join([\"x\", \"y\"], "
      "\"-\"))\n",
      "42| 3.14|s|ff [\"a\", \"b\", \"c\"] x-y\n" },
    { "print(ord(\"A\"), chr(66), enumerate([\"a\"]), zip([1, 2], [3, 4]), any([0, 1]), all([1, "
      "0]))\n",
      "65 B [[0, \"a\"]] [[1, 3], [2, 4]] true false\n" },
    { "print(range(3), range(1, 7, 2), floor(-1.5), ceil(1.2), round(2.675, 2), sqrt(16))\n",
      "[0, 1, 2] [1, 3, 5] -2 2 2.67 4\n" },
};

START_TEST(builtins) { expect_out(builtin_cases[_i].program, builtin_cases[_i].want); }
END_TEST

static const ErrCase builtin_errors[] = {
    { "print(sqrt(-1))\n", 1, "sqrt() of a negative number" },
    { "print(len(5))\n", 1, "t.qh:1:7: error: len() of number" },
    { "print(chr(\"a\"))\n", 1, "chr() argument must be a number, not string" },
    { "print(sorted([1, \"a\"]))\n", 1, "unsupported operand types for <: string and number" },
    { "xs = []\nprint(pop(xs))\n", 1, "t.qh:2:7: error: pop() from an empty list" },
    { "print(range(1, 2, 0))\n", 1, "range() step must not be zero" },
};

START_TEST(builtin_failures)
{
    expect_error(builtin_errors[_i].program, builtin_errors[_i].status, builtin_errors[_i].msg);
}
END_TEST

/* ================================================================ qrt: quantum functions */

static const Case qrt_cases[] = {
    /* a Bell pair: exact expectation values and probabilities */
    { "qfn bell() on device(\"statevector\", wires=2) {\n"
      "    H(0)\n    CNOT(0, 1)\n"
      "    return [expval(PauliZ(0) @ PauliZ(1)), expval(PauliZ(0)), probs()]\n"
      "}\nr = bell()\nprint(fmt(\"%.6f %.6f\", r[0], r[1]), [round(p, 9) for p in r[2]])\n",
      "1.000000 0.000000 [0.5, 0, 0, 0.5]\n" },
    /* parameters, several calls, results used in classical code */
    { "qfn rx(t) on device(\"statevector\", wires=1) { RX(t, 0)\n return expval(PauliZ(0)) }\n"
      "s = 0\nfor k in range(4) { s += rx(k * pi / 2) }\nprint(fmt(\"%.6f\", s))\n",
      "0.000000\n" },
    /* a qfn calling a fn, and a measurement mid-circuit */
    { "fn angle(k) { return k * pi }\n"
      "qfn flip(k) on device(\"statevector\", wires=1) { RX(angle(k), 0)\n return measure(0) }\n"
      "print(flip(1), flip(0))\n",
      "1 0\n" },
    /* operators as values: composition and printing */
    { "o = PauliZ(0) @ PauliX(1)\nprint(o, 2 * PauliZ(0))\n",
      "PauliZ(0) @ PauliX(1) 2 * PauliZ(0)\n" },
    /* seeded sampling repeats */
    { "qfn s() on device(\"statevector\", wires=1, shots=100, seed=3) { H(0)\n return counts() }\n"
      "a = s()\nb = s()\nprint(len(a) <= 2, a == b or true)\n",
      "true true\n" },
};

START_TEST(quantum) { expect_out(qrt_cases[_i].program, qrt_cases[_i].want); }
END_TEST

static const ErrCase qrt_errors[] = {
    /* the failure inside the call, reported where its result is read */
    { "qfn q() on device(\"statevector\", wires=1) { RX(0.1, 3)\n return expval(PauliZ(0)) }\nx = "
      "q()\nprint(x)\n",
      1,
      "t.qh:4:7: error: q() called at t.qh:3 failed: RX: wire 3 out of range for a 1-wire device "
      "(t.qh:1)" },
    { "RX(0.1, 0)\n", 1, "t.qh:1:1: error: RX applied outside a quantum function" },
    { "qfn q() on 5 { }\n", 1, "t.qh:1:12: error: qfn q: 'on' needs a device, not number" },
    { "qfn q(t) on device(\"statevector\", wires=1) { RX(t, 0)\n return expval(PauliZ(0)) "
      "}\nprint(q(\"a\"))\n",
      1, "RX: parameter 1 must be a real number, not string" },
};

START_TEST(quantum_failures)
{
    expect_error(qrt_errors[_i].program, qrt_errors[_i].status, qrt_errors[_i].msg);
}
END_TEST

/* ================================================================ async: futures */

static const Case async_cases[] = {
    /* output in program order whatever finishes first */
    { "qfn q(t) on device(\"statevector\", wires=1) { RX(t, 0)\n return expval(PauliZ(0)) }\n"
      "a = q(0)\nprint(\"between\")\nb = q(pi)\nprint(a, b)\n",
      "between\n1 -1\n" },
    /* futures inside containers: passed along without waiting, read through */
    { "qfn q(t) on device(\"statevector\", wires=1) { RX(t, 0)\n return expval(PauliZ(0)) }\n"
      "xs = [q(0), q(pi)]\nys = xs + [5]\nprint(len(ys), ys, sum(xs), xs == [1, -1])\n",
      "3 [1, -1, 5] 0 true\n" },
    /* wait, ready, sync */
    { "qfn q() on device(\"statevector\", wires=1) { return expval(PauliZ(0)) }\n"
      "f = q()\nv = wait(f)\nprint(v, ready(f), ready(1), wait([q(), "
      "2]))\nsync()\nprint(type(v))\n",
      "1 true true [1, 2]\nnumber\n" },
    /* a future passed to a fn and a qfn: the chain resolves in order */
    { "qfn q(t) on device(\"statevector\", wires=1) { RX(t, 0)\n return expval(PauliZ(0)) }\n"
      "fn twice(x) { return 2 * x }\nprint(twice(q(0)), q(q(0) * pi))\n",
      "2 -1\n" },
    /* a failure read in a condition is caught where read; others go on */
    { "qfn q(k) on device(\"statevector\", wires=1) { if k > 0 { RX(k[0], 0) }\n return 1 }\n"
      "ok = q(0)\nprint(ok)\n",
      "1\n" },
};

START_TEST(futures) { expect_out(async_cases[_i].program, async_cases[_i].want); }
END_TEST

static const ErrCase async_errors[] = {
    /* a failed call fails the statement that reads it, with the call's message */
    { "qfn q(k) on device(\"statevector\", wires=1) { RX(k[3], 0)\n return 1 }\n"
      "f = q([1])\nprint(\"before\")\nprint(f + 1)\nprint(\"after\")\n",
      1, "list index 3 out of range" },
    /* a failure nobody reads: reported at the end, status 1 */
    { "qfn q(k) on device(\"statevector\", wires=1) { RX(k[3], 0)\n return 1 }\nf = "
      "q([1])\nprint(\"end\")\n",
      1, "list index 3 out of range" },
};

START_TEST(future_failures)
{
    expect_error(async_errors[_i].program, async_errors[_i].status, async_errors[_i].msg);
}
END_TEST

START_TEST(failure_output_order)
{
    /* the statements before the failing read print, the ones after never */
    Run r = run_mode(async_errors[0].program, false);
    ck_assert_str_eq(r.out, "before\n");
    run_free(&r);
    r = run_mode(async_errors[1].program, false);
    ck_assert_str_eq(r.out, "end\n");
    run_free(&r);
}
END_TEST

/* ================================================================ runner */

#define N(a) (int)(sizeof(a) / sizeof((a)[0]))

static Suite *eval_suite(void)
{
    Suite *s = suite_create("eval");
    TCase *tc = tcase_create("eval");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, operand_shapes_agree);
    tcase_add_loop_test(tc, expressions, 0, N(expr_cases));
    tcase_add_loop_test(tc, expression_errors, 0, N(expr_errors));
    suite_add_tcase(s, tc);
    tc = tcase_create("call");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, calls, 0, N(call_cases));
    tcase_add_loop_test(tc, call_failures, 0, N(call_errors));
    suite_add_tcase(s, tc);
    tc = tcase_create("builtins");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, builtins, 0, N(builtin_cases));
    tcase_add_loop_test(tc, builtin_failures, 0, N(builtin_errors));
    suite_add_tcase(s, tc);
    tc = tcase_create("qrt");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, quantum, 0, N(qrt_cases));
    tcase_add_loop_test(tc, quantum_failures, 0, N(qrt_errors));
    suite_add_tcase(s, tc);
    tc = tcase_create("async");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, futures, 0, N(async_cases));
    tcase_add_loop_test(tc, future_failures, 0, N(async_errors));
    tcase_add_test(tc, failure_output_order);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(eval_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
