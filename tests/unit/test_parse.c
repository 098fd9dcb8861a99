/* test_parse.c — Check unit tests of the parser (src/parse.c): the shape of
 * the AST for every construct of lang/lexical.md and lang/statements.md, operator
 * precedence and associativity, syntax errors with their exact
 * FILE:LINE:COL and message (§5), the nesting guard, and parse_incomplete
 * (what the REPL uses to ask for more lines).
 *
 * Shapes are checked through a small S-expression printer of the AST, so a
 * test reads like the tree it expects: "1 + 2 * 3" -> "(+ 1 (* 2 3))". */
#include <check.h>
#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ast.h"
#include "diag.h"
#include "parse.h"

/* ================================================================ helpers */

typedef struct Parsed {
    Source *src;
    ModInfo *m;
    char *diag; /* everything the parser printed */
} Parsed;

static Parsed parse_text(const char *text)
{
    Parsed p;
    p.src = source_from_text("t.qh", text, strlen(text));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    p.m = parse_source(p.src, f);
    fclose(f);
    p.diag = buf;
    return p;
}

static void parsed_free(Parsed *p)
{
    parse_free(p->m);
    source_free(p->src);
    free(p->diag);
}

/* growable string for the printer */
typedef struct Str {
    char *p;
    size_t n, cap;
} Str;
static void sput(Str *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[512];
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    if (s->n + (size_t)k + 1 > s->cap) {
        s->cap = (s->n + (size_t)k + 1) * 2;
        s->p = realloc(s->p, s->cap);
    }
    memcpy(s->p + s->n, tmp, (size_t)k + 1);
    s->n += (size_t)k;
}

static const char *op_name(int op)
{
    static const char *names[] = {
        [OP_ADD] = "+",   [OP_SUB] = "-",   [OP_MUL] = "*",  [OP_DIV] = "/",
        [OP_IDIV] = "//", [OP_MOD] = "%",   [OP_POW] = "**", [OP_MATMUL] = "@",
        [OP_EQ] = "==",   [OP_NE] = "!=",   [OP_LT] = "<",   [OP_LE] = "<=",
        [OP_GT] = ">",    [OP_GE] = ">=",   [OP_IN] = "in",  [OP_NOTIN] = "notin",
        [OP_NEG] = "neg", [OP_POS] = "pos", [OP_BAND] = "&", [OP_BOR] = "|",
        [OP_BXOR] = "^",  [OP_SHL] = "<<",  [OP_SHR] = ">>", [OP_INVERT] = "~",
    };
    return op >= 0 && op <= OP_INVERT ? names[op] : "?op";
}

static void sx(Str *s, const Node *n);
static void sx_list(Str *s, Node *const *v, int k)
{
    for (int i = 0; i < k; i++) {
        sput(s, " ");
        sx(s, v[i]);
    }
}
static void sx_opt(Str *s, const Node *n)
{
    if (n)
        sx(s, n);
    else
        sput(s, "_");
}

static void sx_params(Str *s, const FnProto *f)
{
    sput(s, "(");
    for (int i = 0; i < f->nparams; i++) {
        sput(s, "%s%s", i ? " " : "", f->params[i]);
        if (f->defaults[i]) {
            sput(s, "=");
            sx(s, f->defaults[i]);
        }
    }
    sput(s, ")");
}

static void sx_block(Str *s, const Node *b)
{
    if (!b) {
        sput(s, "_");
        return;
    }
    if (b->kind != N_BLOCK) {
        sx(s, b);
        return;
    }
    sput(s, "{");
    for (int i = 0; i < b->u.list.n; i++) {
        if (i) sput(s, "; ");
        sx(s, b->u.list.items[i]);
    }
    sput(s, "}");
}

/* An S-expression of a node: names print bare, numbers with %g. */
static void sx(Str *s, const Node *n)
{
    if (!n) {
        sput(s, "<null>");
        return;
    }
    switch (n->kind) {
    case N_NUM: sput(s, "%g", n->u.num); break;
    case N_IMAG: sput(s, "%gj", n->u.num); break;
    case N_STR: sput(s, "\"%s\"", n->u.str->s); break;
    case N_TRUE: sput(s, "true"); break;
    case N_FALSE: sput(s, "false"); break;
    case N_NIL: sput(s, "nil"); break;
    case N_NAME:
    case N_LOCAL:
    case N_LOCALCELL:
    case N_UPVAL:
    case N_GLOBAL:
    case N_BUILTIN: sput(s, "%s", n->u.var.name); break;
    case N_LIST:
        sput(s, "[");
        for (int i = 0; i < n->u.list.n; i++) {
            if (i) sput(s, " ");
            sx(s, n->u.list.items[i]);
        }
        sput(s, "]");
        break;
    case N_DICT:
        sput(s, "{");
        for (int i = 0; i < n->u.dict.n; i++) {
            if (i) sput(s, " ");
            sx(s, n->u.dict.keys[i]);
            sput(s, ":");
            sx(s, n->u.dict.vals[i]);
        }
        sput(s, "}");
        break;
    case N_UNARY:
        sput(s, "(%s ", op_name(n->op));
        sx(s, n->u.bin.a);
        sput(s, ")");
        break;
    case N_BINARY:
        sput(s, "(%s ", op_name(n->op));
        sx(s, n->u.bin.a);
        sput(s, " ");
        sx(s, n->u.bin.b);
        sput(s, ")");
        break;
    case N_AND:
        sput(s, "(and ");
        sx(s, n->u.bin.a);
        sput(s, " ");
        sx(s, n->u.bin.b);
        sput(s, ")");
        break;
    case N_OR:
        sput(s, "(or ");
        sx(s, n->u.bin.a);
        sput(s, " ");
        sx(s, n->u.bin.b);
        sput(s, ")");
        break;
    case N_NOT:
        sput(s, "(not ");
        sx(s, n->u.bin.a);
        sput(s, ")");
        break;
    case N_CALL:
        sput(s, "(call ");
        sx(s, n->u.call.fn);
        sx_list(s, n->u.call.args, n->u.call.nargs);
        for (int i = 0; i < n->u.call.nkw; i++) {
            sput(s, " %s=", n->u.call.kw[i].name);
            sx(s, n->u.call.kw[i].value);
        }
        sput(s, ")");
        break;
    case N_INDEX:
        sput(s, "(index ");
        sx(s, n->u.index.obj);
        sx_list(s, n->u.index.idx, n->u.index.nidx);
        sput(s, ")");
        break;
    case N_SLICE:
        sput(s, "(slice ");
        sx_opt(s, n->u.slice.lo);
        sput(s, " ");
        sx_opt(s, n->u.slice.hi);
        sput(s, " ");
        sx_opt(s, n->u.slice.step);
        sput(s, ")");
        break;
    case N_MEMBER:
        sput(s, "(. ");
        sx(s, n->u.member.obj);
        sput(s, " %s)", n->u.member.name);
        break;
    case N_FNEXPR:
        sput(s, "(fn ");
        sx_params(s, n->u.fn);
        sput(s, " ");
        sx_block(s, n->u.fn->body);
        sput(s, ")");
        break;
    case N_COND:
        sput(s, "(ifexpr ");
        sx(s, n->u.ifs.then);
        sput(s, " ");
        sx(s, n->u.ifs.cond);
        sput(s, " ");
        sx(s, n->u.ifs.els);
        sput(s, ")");
        break;
    case N_LISTCOMP:
    case N_DICTCOMP:
        sput(s, n->kind == N_LISTCOMP ? "(listcomp " : "(dictcomp ");
        if (n->u.comp.key) {
            sx(s, n->u.comp.key);
            sput(s, ":");
        }
        sx(s, n->u.comp.elt);
        for (int i = 0; i < n->u.comp.nclauses; i++) {
            const CompClause *c = &n->u.comp.clauses[i];
            sput(s, " (for");
            sx_list(s, c->vars, c->nvars);
            sput(s, " in ");
            sx(s, c->iter);
            for (int k = 0; k < c->nconds; k++) {
                sput(s, " if ");
                sx(s, c->conds[k]);
            }
            sput(s, ")");
        }
        sput(s, ")");
        break;
    case N_EXPRSTMT: sx(s, n->u.expr.expr); break;
    case N_ASSIGN:
        sput(s, "(= ");
        sx(s, n->u.assign.target);
        sput(s, " ");
        sx(s, n->u.assign.value);
        sput(s, ")");
        break;
    case N_AUGASSIGN:
        sput(s, "(%s= ", op_name(n->op));
        sx(s, n->u.assign.target);
        sput(s, " ");
        sx(s, n->u.assign.value);
        sput(s, ")");
        break;
    case N_DESTRUCT:
        sput(s, "(destruct");
        sx_list(s, n->u.destruct.targets, n->u.destruct.n);
        sput(s, " ");
        sx(s, n->u.destruct.value);
        sput(s, ")");
        break;
    case N_IF:
        sput(s, "(if ");
        sx(s, n->u.ifs.cond);
        sput(s, " ");
        sx_block(s, n->u.ifs.then);
        if (n->u.ifs.els) {
            sput(s, " ");
            sx_block(s, n->u.ifs.els);
        }
        sput(s, ")");
        break;
    case N_WHILE:
        sput(s, "(while ");
        sx(s, n->u.whiles.cond);
        sput(s, " ");
        sx_block(s, n->u.whiles.body);
        sput(s, ")");
        break;
    case N_FOR:
        sput(s, "(for (");
        for (int i = 0; i < n->u.fors.nvars; i++) {
            if (i) sput(s, " ");
            sx(s, n->u.fors.vars[i]);
        }
        sput(s, ") ");
        sx(s, n->u.fors.iter);
        sput(s, " ");
        sx_block(s, n->u.fors.body);
        sput(s, ")");
        break;
    case N_BREAK: sput(s, "break"); break;
    case N_CONTINUE: sput(s, "continue"); break;
    case N_RETURN:
        if (n->u.expr.expr) {
            sput(s, "(return ");
            sx(s, n->u.expr.expr);
            sput(s, ")");
        } else
            sput(s, "(return)");
        break;
    case N_FNDEF: {
        const FnProto *f = n->u.fn;
        sput(s, "(%s %s ", f->is_qfn ? "qfn" : "fndef", f->name);
        sx_params(s, f);
        if (f->device) {
            sput(s, " on ");
            sx(s, f->device);
        }
        sput(s, " ");
        sx_block(s, f->body);
        sput(s, ")");
        break;
    }
    case N_TRY:
        sput(s, "(try ");
        sx_block(s, n->u.tries.body);
        sput(s, " ");
        sx_opt(s, n->u.tries.var);
        sput(s, " ");
        sx_block(s, n->u.tries.handler);
        sput(s, ")");
        break;
    case N_IMPORT: sput(s, "(import %s)", n->u.import.name); break;
    case N_GLOBALDECL:
        sput(s, "(global");
        for (int i = 0; i < n->u.global.n; i++) sput(s, " %s", n->u.global.names[i]);
        sput(s, ")");
        break;
    case N_BLOCK: sx_block(s, n); break;
    case N_PASS: sput(s, "pass"); break;
    default: sput(s, "<kind %d>", n->kind); break;
    }
}

/* The module's statements as S-expressions joined by "; ". */
static char *module_sx(const ModInfo *m)
{
    Str s = { 0 };
    sput(&s, "");
    for (int i = 0; i < m->body->u.list.n; i++) {
        if (i) sput(&s, "; ");
        sx(&s, m->body->u.list.items[i]);
    }
    return s.p;
}

/* Parses text, which must succeed silently, and compares the tree. */
static void check_ast_at(const char *file, int line, const char *text, const char *want)
{
    Parsed p = parse_text(text);
    ck_assert_msg(p.m != NULL, "%s:%d: \"%s\" did not parse: %s", file, line, text, p.diag);
    ck_assert_msg(p.diag == NULL || p.diag[0] == 0, "%s:%d: \"%s\" printed: %s", file, line, text,
                  p.diag);
    char *got = module_sx(p.m);
    ck_assert_msg(strcmp(got, want) == 0, "%s:%d: \"%s\"\n  got  %s\n  want %s", file, line, text,
                  got, want);
    free(got);
    parsed_free(&p);
}
#define CHECK_AST(text, want) check_ast_at(__FILE__, __LINE__, text, want)

/* Parses text, which must fail; the first line of the diagnostic must be
 * exactly `want` (FILE:LINE:COL: error: MESSAGE). Returns nothing; the
 * whole diagnostic must also show the source line and a caret. */
static void check_error_at(const char *file, int line, const char *text, const char *want)
{
    Parsed p = parse_text(text);
    ck_assert_msg(p.m == NULL, "%s:%d: \"%s\" parsed, want an error", file, line, text);
    ck_assert_msg(p.diag != NULL && p.diag[0], "%s:%d: \"%s\": no diagnostic", file, line, text);
    const char *nl = strchr(p.diag, '\n');
    size_t n = nl ? (size_t)(nl - p.diag) : strlen(p.diag);
    ck_assert_msg(strlen(want) == n && strncmp(p.diag, want, n) == 0,
                  "%s:%d: \"%s\"\n  got  %.*s\n  want %s", file, line, text, (int)n, p.diag, want);
    ck_assert_msg(strchr(p.diag, '^') != NULL, "%s:%d: no caret in %s", file, line, p.diag);
    parsed_free(&p);
}
#define CHECK_ERROR(text, want) check_error_at(__FILE__, __LINE__, text, want)

/* The first statement of a parsed module. */
static Node *stmt(const Parsed *p, int i)
{
    ck_assert_int_lt(i, p->m->body->u.list.n);
    return p->m->body->u.list.items[i];
}

/* ================================================================ precedence */

START_TEST(prec_arith)
{
    CHECK_AST("1 + 2 * 3", "(+ 1 (* 2 3))");
    CHECK_AST("1 * 2 + 3", "(+ (* 1 2) 3)");
    CHECK_AST("(1 + 2) * 3", "(* (+ 1 2) 3)");
    CHECK_AST("1 - 2 - 3", "(- (- 1 2) 3)");
    CHECK_AST("8 / 4 / 2", "(/ (/ 8 4) 2)");
    CHECK_AST("a // b % c", "(% (// a b) c)");
    CHECK_AST("a % b * c", "(* (% a b) c)");
    CHECK_AST("a + b - c + d", "(+ (- (+ a b) c) d)");
    CHECK_AST("1 + 2j", "(+ 1 2j)");
}
END_TEST

START_TEST(prec_power_unary)
{
    CHECK_AST("-2 ** 2", "(neg (** 2 2))");
    CHECK_AST("2 ** -1", "(** 2 -1)");
    CHECK_AST("2 ** 3 ** 2", "(** 2 (** 3 2))");
    CHECK_AST("-x ** 2", "(neg (** x 2))");
    CHECK_AST("2 ** -x", "(** 2 (neg x))");
    CHECK_AST("-x", "(neg x)");
    CHECK_AST("+x", "(pos x)");
    CHECK_AST("- -x", "(neg (neg x))");
    CHECK_AST("-2", "-2"); /* a negative literal is folded */
    CHECK_AST("2 * -3", "(* 2 -3)");
    CHECK_AST("1 - -2", "(- 1 -2)");
    CHECK_AST("-2j", "-2j");
    CHECK_AST("-a.b", "(neg (. a b))");
    CHECK_AST("-f(1) * 2", "(* (neg (call f 1)) 2)");
    CHECK_AST("a ** b[1]", "(** a (index b 1))");
    CHECK_AST("x ** 2 * 3", "(* (** x 2) 3)");
}
END_TEST

START_TEST(prec_logic)
{
    CHECK_AST("a or b and c", "(or a (and b c))");
    CHECK_AST("a and b or c", "(or (and a b) c)");
    CHECK_AST("a or b or c", "(or (or a b) c)");
    CHECK_AST("not a == b", "(not (== a b))");
    CHECK_AST("not a and b", "(and (not a) b)");
    CHECK_AST("not not a", "(not (not a))");
    CHECK_AST("a + b < c * d", "(< (+ a b) (* c d))");
    CHECK_AST("a < b and b < c", "(and (< a b) (< b c))");
    CHECK_AST("a in b", "(in a b)");
    CHECK_AST("a not in b", "(notin a b)");
    CHECK_AST("not a in b", "(not (in a b))");
    CHECK_AST("a != b or c >= d", "(or (!= a b) (>= c d))");
    CHECK_AST("a <= b", "(<= a b)");
    CHECK_AST("a > b", "(> a b)");
}
END_TEST

START_TEST(prec_bitwise)
{
    /* Python's levels: | lowest, then ^, &, shifts, then + - */
    CHECK_AST("a | b ^ c & d", "(| a (^ b (& c d)))");
    CHECK_AST("a & b ^ c | d", "(| (^ (& a b) c) d)");
    CHECK_AST("a << 1 + 2", "(<< a (+ 1 2))");
    CHECK_AST("a + 1 << 2", "(<< (+ a 1) 2)");
    CHECK_AST("a << b >> c", "(>> (<< a b) c)");
    CHECK_AST("1 << k < n", "(< (<< 1 k) n)");
    CHECK_AST("a & b == c", "(== (& a b) c)");
    CHECK_AST("not a & b", "(not (& a b))");
    CHECK_AST("x & 1 and y | 2", "(and (& x 1) (| y 2))");
    CHECK_AST("~a", "(~ a)");
    CHECK_AST("~~a", "(~ (~ a))");
    CHECK_AST("-~a", "(neg (~ a))");
    CHECK_AST("~a ** 2", "(~ (** a 2))");
    CHECK_AST("~a * b", "(* (~ a) b)");
    CHECK_AST("a & b & c", "(& (& a b) c)");
    CHECK_AST("(a | b) & c", "(& (| a b) c)");
}
END_TEST

START_TEST(conditional_expr)
{
    CHECK_AST("x = a if c else b", "(= x (ifexpr a c b))");
    CHECK_AST("x = a if c else b if d else e", "(= x (ifexpr a c (ifexpr b d e)))");
    CHECK_AST("x = (a if c else b) if d else e", "(= x (ifexpr (ifexpr a c b) d e))");
    CHECK_AST("x = a or b if c or d else e and f", "(= x (ifexpr (or a b) (or c d) (and e f)))");
    CHECK_AST("x = a + 1 if not c else -b", "(= x (ifexpr (+ a 1) (not c) (neg b)))");
    CHECK_AST("f(a if c else b, k=1 if c else 2)", "(call f (ifexpr a c b) k=(ifexpr 1 c 2))");
    CHECK_AST("return_ = [a if c else b]", "(= return_ [(ifexpr a c b)])");
    CHECK_AST("fn g() { return a if c else b }", "(fndef g () {(return (ifexpr a c b))})");
    CHECK_AST("x = (a\n if c\n else b)", "(= x (ifexpr a c b))");
    CHECK_AST("if a if b else c { d }", "(if (ifexpr a b c) {d})");
    CHECK_AST("x = a if b else c, d", "(= x [(ifexpr a b c) d])");
}
END_TEST

START_TEST(comprehensions)
{
    CHECK_AST("[x * x for x in xs]", "(listcomp (* x x) (for x in xs))");
    CHECK_AST("[x for x in xs if x > 0]", "(listcomp x (for x in xs if (> x 0)))");
    CHECK_AST("[x for x in xs if a if b]", "(listcomp x (for x in xs if a if b))");
    CHECK_AST("[[i, j] for i in range(n) for j in range(i)]",
              "(listcomp [i j] (for i in (call range n)) (for j in (call range i)))");
    CHECK_AST("[y for x in xss if x for y in x if y]",
              "(listcomp y (for x in xss if x) (for y in x if y))");
    CHECK_AST("[k for k, v in items(d)]", "(listcomp k (for k v in (call items d)))");
    CHECK_AST("[a if c else b for x in xs]", "(listcomp (ifexpr a c b) (for x in xs))");
    CHECK_AST("[x for x in a or b]", "(listcomp x (for x in (or a b)))");
    CHECK_AST("[[i * j for j in r] for i in r]",
              "(listcomp (listcomp (* i j) (for j in r)) (for i in r))");
    CHECK_AST("{k: v for k, v in items(d)}", "(dictcomp k:v (for k v in (call items d)))");
    CHECK_AST("{x: x * 2 for x in xs if x}", "(dictcomp x:(* x 2) (for x in xs if x))");
    CHECK_AST("x = [\n  f(x)\n  for x in xs\n  if p(x)\n]",
              "(= x (listcomp (call f x) (for x in xs if (call p x))))");
    CHECK_AST("[x for x in xs][0]", "(index (listcomp x (for x in xs)) 0)");
    CHECK_AST("[]", "[]");
    CHECK_AST("[1, 2,]", "[1 2]");
    CHECK_AST("{}", "{}");
}
END_TEST

START_TEST(augmented_ops)
{
    CHECK_AST("x //= 2", "(//= x 2)");
    CHECK_AST("x %= 2", "(%= x 2)");
    CHECK_AST("x **= 2", "(**= x 2)");
    CHECK_AST("a @= b", "(@= a b)");
    CHECK_AST("x &= 1", "(&= x 1)");
    CHECK_AST("x |= 1 << k", "(|= x (<< 1 k))");
    CHECK_AST("x ^= y", "(^= x y)");
    CHECK_AST("x <<= 1", "(<<= x 1)");
    CHECK_AST("xs[i] >>= 1", "(>>= (index xs i) 1)");
}
END_TEST

START_TEST(prec_matmul)
{
    /* @ sits with * / // % and associates to the left */
    CHECK_AST("x @ y * z", "(* (@ x y) z)");
    CHECK_AST("x * y @ z", "(@ (* x y) z)");
    CHECK_AST("x @ y @ z", "(@ (@ x y) z)");
    CHECK_AST("a + x @ y", "(+ a (@ x y))");
    CHECK_AST("0.5 * Z(0) @ Z(1) - 0.2 * X(0)",
              "(- (@ (* 0.5 (call Z 0)) (call Z 1)) (* 0.2 (call X 0)))");
}
END_TEST

START_TEST(literals)
{
    CHECK_AST("x = 42", "(= x 42)");
    CHECK_AST("x = 0x1f + 1_000", "(= x (+ 31 1000))");
    CHECK_AST("x = 0.5j", "(= x 0.5j)");
    CHECK_AST("x = \"a\\tb\"", "(= x \"a\tb\")");
    CHECK_AST("x = \"ab\" 'cd' \"ef\"", "(= x \"abcdef\")"); /* adjacent strings join */
    CHECK_AST("x = [true, false, nil]", "(= x [true false nil])");
    CHECK_AST("x = []", "(= x [])");
    CHECK_AST("x = [1, [2, 3]]", "(= x [1 [2 3]])");
    CHECK_AST("x = [1, 2,]", "(= x [1 2])");
}
END_TEST

/* ================================================================ postfix */

START_TEST(calls)
{
    CHECK_AST("f()", "(call f)");
    CHECK_AST("f(1, 2)", "(call f 1 2)");
    CHECK_AST("f(1, b=2, c=3)", "(call f 1 b=2 c=3)");
    CHECK_AST("f(a=1)", "(call f a=1)");
    CHECK_AST("f(a == 1)", "(call f (== a 1))");
    CHECK_AST("f(1,)", "(call f 1)");
    CHECK_AST("f(g(1))(2)", "(call (call f (call g 1)) 2)");
    CHECK_AST("device(\"statevector\", wires=3)", "(call device \"statevector\" wires=3)");
    CHECK_AST("m.f(1)", "(call (. m f) 1)");

    Parsed p = parse_text("  f(1, key=2)");
    ck_assert_ptr_nonnull(p.m);
    Node *c = stmt(&p, 0)->u.expr.expr;
    ck_assert_int_eq(c->kind, N_CALL);
    ck_assert_int_eq(c->line, 1);
    ck_assert_int_eq(c->col, 3); /* a call is placed at its callee */
    ck_assert_int_eq(c->u.call.nkw, 1);
    ck_assert_str_eq(c->u.call.kw[0].key->s, "key");
    ck_assert_int_eq(c->u.call.kw[0].key->h.rc, OBJ_IMMORTAL);
    parsed_free(&p);
}
END_TEST

START_TEST(index_slice_member)
{
    CHECK_AST("a[1]", "(index a 1)");
    CHECK_AST("a[1:3]", "(index a (slice 1 3 _))");
    CHECK_AST("a[::2]", "(index a (slice _ _ 2))");
    CHECK_AST("a[:]", "(index a (slice _ _ _))");
    CHECK_AST("a[1:]", "(index a (slice 1 _ _))");
    CHECK_AST("a[:-1]", "(index a (slice _ -1 _))");
    CHECK_AST("a[1:10:2]", "(index a (slice 1 10 2))");
    CHECK_AST("a[::-1]", "(index a (slice _ _ -1))");
    CHECK_AST("a[i, j]", "(index a i j)");
    CHECK_AST("a[1:2, ::3]", "(index a (slice 1 2 _) (slice _ _ 3))");
    CHECK_AST("a[i][j]", "(index (index a i) j)");
    CHECK_AST("a[i + 1]", "(index a (+ i 1))");
    CHECK_AST("m.x", "(. m x)");
    CHECK_AST("m.x.y", "(. (. m x) y)");
    CHECK_AST("f(x)[1].y ** 2", "(** (. (index (call f x) 1) y) 2)");
    CHECK_AST("a[1] = 2", "(= (index a 1) 2)");
    CHECK_AST("d[\"k\"] = 3", "(= (index d \"k\") 3)");
}
END_TEST

/* ================================================================ statements */

START_TEST(dict_vs_block)
{
    CHECK_AST("d = {}", "(= d {})");
    CHECK_AST("d = {\"a\": 1, 2: \"b\"}", "(= d {\"a\":1 2:\"b\"})");
    CHECK_AST("d = {\"a\": {\"b\": [1]},}", "(= d {\"a\":{\"b\":[1]}})");
    CHECK_AST("if x { y = {} }", "(if x {(= y {})})");
    CHECK_AST("if x {}", "(if x {})");
    CHECK_AST("while x { {1: 2} }", "(while x {{1:2}})");
    CHECK_AST("if x == {} { }", "(if (== x {}) {})");
    CHECK_AST("f({\"k\": 1})", "(call f {\"k\":1})");
}
END_TEST

START_TEST(if_chains)
{
    CHECK_AST("if a { x = 1 }", "(if a {(= x 1)})");
    CHECK_AST("if a { x = 1 } else { x = 2 }", "(if a {(= x 1)} {(= x 2)})");
    CHECK_AST("if a { } elif b { } else { }", "(if a {} (if b {} {}))");
    CHECK_AST("if a { } else if b { } else { }", "(if a {} (if b {} {}))");
    CHECK_AST("if a { } elif b { } elif c { }", "(if a {} (if b {} (if c {})))");
    CHECK_AST("if a {\n  x = 1\n}\nelse {\n  x = 2\n}\ny = 3",
              "(if a {(= x 1)} {(= x 2)}); (= y 3)");
    CHECK_AST("if a {\n}\n\nelif b {\n}", "(if a {} (if b {}))");
    CHECK_AST("if a { x = 1 }\ny = 2", "(if a {(= x 1)}); (= y 2)");
}
END_TEST

START_TEST(loops)
{
    CHECK_AST("while i < 10 { i += 1 }", "(while (< i 10) {(+= i 1)})");
    CHECK_AST("for i in range(10) { s += i }", "(for (i) (call range 10) {(+= s i)})");
    CHECK_AST("for k, v in d { }", "(for (k v) d {})");
    CHECK_AST("for a, b, c in xs { break; continue }", "(for (a b c) xs {break; continue})");
    Parsed p = parse_text("for k, v in d { }");
    ck_assert_ptr_nonnull(p.m);
    Node *f = stmt(&p, 0);
    ck_assert_int_eq(f->kind, N_FOR);
    ck_assert_int_eq(f->u.fors.nvars, 2);
    ck_assert_ptr_eq(f->u.fors.var, f->u.fors.vars[0]);
    ck_assert_int_eq(f->u.fors.vars[1]->kind, N_NAME);
    ck_assert_int_eq(f->u.fors.vars[1]->col, 8);
    parsed_free(&p);
}
END_TEST

START_TEST(try_catch)
{
    CHECK_AST("try { f() } catch e { print(e) }", "(try {(call f)} e {(call print e)})");
    CHECK_AST("try { f() } catch { }", "(try {(call f)} _ {})");
    CHECK_AST("try {\n  f()\n}\ncatch e {\n}", "(try {(call f)} e {})");
}
END_TEST

START_TEST(assignments)
{
    CHECK_AST("x = 1", "(= x 1)");
    CHECK_AST("x += 1", "(+= x 1)");
    CHECK_AST("x -= 1", "(-= x 1)");
    CHECK_AST("x *= 2 + 1", "(*= x (+ 2 1))");
    CHECK_AST("x /= 2", "(/= x 2)");
    CHECK_AST("xs[0] += 1", "(+= (index xs 0) 1)");
    CHECK_AST("a, b = pair()", "(destruct a b (call pair))");
    CHECK_AST("a, b, c = [1, 2, 3]", "(destruct a b c [1 2 3])");
    CHECK_AST("xs[0], d[\"k\"] = f()", "(destruct (index xs 0) (index d \"k\") (call f))");
    Parsed p = parse_text("\n  total += 2");
    ck_assert_ptr_nonnull(p.m);
    Node *s = stmt(&p, 0);
    ck_assert_int_eq(s->kind, N_AUGASSIGN);
    ck_assert_int_eq(s->op, OP_ADD);
    ck_assert_int_eq(s->u.assign.target->line, 2);
    ck_assert_int_eq(s->u.assign.target->col, 3);
    parsed_free(&p);
    p = parse_text("a, b = f()");
    s = stmt(&p, 0);
    ck_assert_int_eq(s->kind, N_DESTRUCT);
    ck_assert_int_eq(s->line, 1);
    ck_assert_int_eq(s->col, 1);
    parsed_free(&p);
}
END_TEST

START_TEST(functions)
{
    CHECK_AST("fn add(a, b=1) { return a + b }", "(fndef add (a b=1) {(return (+ a b))})");
    CHECK_AST("fn f() { }", "(fndef f () {})");
    CHECK_AST("fn f() { return }", "(fndef f () {(return)})");
    CHECK_AST("fn f(a=[1, 2], b=g(x)) {}", "(fndef f (a=[1 2] b=(call g x)) {})");
    CHECK_AST("sq = fn (v) { return v * v }", "(= sq (fn (v) {(return (* v v))}))");
    CHECK_AST("f = fn() {}", "(= f (fn () {}))");
    CHECK_AST("g = fn (x, y=2) { return x }", "(= g (fn (x y=2) {(return x)}))");
    CHECK_AST("map(fn (x) { return x }, xs)", "(call map (fn (x) {(return x)}) xs)");
    CHECK_AST("fn f() { return a, b }", "(fndef f () {(return [a b])})");
    CHECK_AST("fn f() { return [a, b] }", "(fndef f () {(return [a b])})");
    CHECK_AST("fn f() { return a, b + 1, c }", "(fndef f () {(return [a (+ b 1) c])})");
    CHECK_AST("fn outer() { fn inner() { return 1 }\n return inner }",
              "(fndef outer () {(fndef inner () {(return 1)}); (return inner)})");
    Parsed p = parse_text("x = 1\nfn add(a, b=1) {\n  return a + b\n}\n");
    ck_assert_ptr_nonnull(p.m);
    Node *d = stmt(&p, 1);
    ck_assert_int_eq(d->kind, N_FNDEF);
    FnProto *f = d->u.fn;
    ck_assert_str_eq(f->name, "add");
    ck_assert(!f->is_qfn);
    ck_assert_int_eq(f->line, 2);
    ck_assert_int_eq(f->col, 1);
    ck_assert_int_eq(f->nparams, 2);
    ck_assert_ptr_null(f->defaults[0]);
    ck_assert_ptr_nonnull(f->defaults[1]);
    ck_assert_str_eq(f->param_keys[1]->s, "b");
    ck_assert_ptr_eq(f->mod, p.m);
    ck_assert_int_eq(p.m->nprotos, 1);
    ck_assert_ptr_eq(p.m->protos[0], f);
    parsed_free(&p);
}
END_TEST

START_TEST(qfn_defs)
{
    CHECK_AST("qfn circuit(phi) on dev { RX(phi, 0) }",
              "(qfn circuit (phi) on dev {(call RX phi 0)})");
    CHECK_AST(
        "qfn bell() on device(\"statevector\", wires=2) {\n  Hadamard(0)\n  return probs()\n}",
        "(qfn bell () on (call device \"statevector\" wires=2) {(call Hadamard 0); (return (call "
        "probs))})");
    CHECK_AST("qfn hybrid(x, n=3) { return x }", "(qfn hybrid (x n=3) {(return x)})");
    Parsed p = parse_text("qfn c(p) on dev { }\nfn g() { h = fn () { } }");
    ck_assert_ptr_nonnull(p.m);
    FnProto *q = stmt(&p, 0)->u.fn;
    ck_assert(q->is_qfn);
    ck_assert_ptr_nonnull(q->device);
    ck_assert_int_eq(q->device->kind, N_NAME);
    /* protos in parse order: outer before inner */
    ck_assert_int_eq(p.m->nprotos, 3);
    ck_assert_str_eq(p.m->protos[0]->name, "c");
    ck_assert_str_eq(p.m->protos[1]->name, "g");
    ck_assert_str_eq(p.m->protos[2]->name, "<anonymous>");
    parsed_free(&p);
}
END_TEST

START_TEST(misc_statements)
{
    CHECK_AST("import optimize", "(import optimize)");
    CHECK_AST("fn f() { global a, b\n a = 1 }", "(fndef f () {(global a b); (= a 1)})");
    CHECK_AST("x = 1; y = 2", "(= x 1); (= y 2)");
    CHECK_AST("x = 1;; y = 2;", "(= x 1); (= y 2)");
    CHECK_AST(";\n;x = 1", "(= x 1)");
    CHECK_AST("if a { x = 1; y = 2; }", "(if a {(= x 1); (= y 2)})");
    CHECK_AST("", "");
    CHECK_AST("\n\n# only comments\n\n", "");
    CHECK_AST("#!/usr/bin/env qh\nprint(1)", "(call print 1)");
    CHECK_AST("x = 1 # trailing\ny = 2", "(= x 1); (= y 2)");
    CHECK_AST("x = 1 + \\\n  2", "(= x (+ 1 2))");
}
END_TEST

START_TEST(newlines_in_brackets)
{
    CHECK_AST("x = [1,\n  2,\n  3\n]", "(= x [1 2 3])");
    CHECK_AST("f(\n  1,\n  b=2\n)", "(call f 1 b=2)");
    CHECK_AST("d = {\n  \"a\": 1,\n  \"b\": 2,\n}", "(= d {\"a\":1 \"b\":2})");
    CHECK_AST("x = (1 +\n  2)", "(= x (+ 1 2))");
    CHECK_AST("x = a[\n1\n]", "(= x (index a 1))");
    CHECK_AST("x = [1, # one\n 2]", "(= x [1 2])");
    CHECK_AST("x = (a\n  and b)", "(= x (and a b))");
    /* a function body inside brackets has statements again */
    CHECK_AST("f(fn (x) {\n  y = x\n  return y\n}, 2)",
              "(call f (fn (x) {(= y x); (return y)}) 2)");
    /* outside brackets a newline ends the statement */
    CHECK_AST("x = 1\n+2", "(= x 1); (pos 2)");
    CHECK_AST("x = 1\n-2", "(= x 1); -2");
}
END_TEST

START_TEST(node_positions)
{
    Parsed p = parse_text("x = 1\n  y = a + b * c\n\tz = f(\n1)");
    ck_assert_ptr_nonnull(p.m);
    ck_assert_int_eq(p.m->body->u.list.n, 3);
    Node *s1 = stmt(&p, 1);
    ck_assert_int_eq(s1->kind, N_ASSIGN);
    ck_assert_int_eq(s1->line, 2);
    ck_assert_int_eq(s1->col, 3);
    Node *plus = s1->u.assign.value;
    ck_assert_int_eq(plus->kind, N_BINARY);
    ck_assert_int_eq(plus->line, 2);
    ck_assert_int_eq(plus->col, 9); /* at the operator */
    ck_assert_int_eq(plus->u.bin.b->col, 13);
    Node *s2 = stmt(&p, 2);
    ck_assert_int_eq(s2->line, 3);
    ck_assert_int_eq(s2->col, 2);
    Node *one = s2->u.assign.value->u.call.args[0];
    ck_assert_int_eq(one->line, 4);
    ck_assert_int_eq(one->col, 1);
    parsed_free(&p);
    /* a string constant is immortal and has its length in code points */
    p = parse_text("s = \"h\xc3\xa9llo\"");
    ck_assert_ptr_nonnull(p.m);
    ObjStr *str = stmt(&p, 0)->u.assign.value->u.str;
    ck_assert_int_eq(str->h.rc, OBJ_IMMORTAL);
    ck_assert_int_eq((int)str->len, 6);
    ck_assert_int_eq(str->nchars, 5);
    ck_assert_uint_eq(str->hash, str_hash("h\xc3\xa9llo", 6));
    parsed_free(&p);
}
END_TEST

/* ================================================================ errors */

START_TEST(error_positions)
{
    CHECK_ERROR("fn broken( { }", "t.qh:1:12: error: expected name as a parameter name, found '{'");
    CHECK_ERROR("if x {\n  y = 1\n",
                "t.qh:1:6: error: unterminated block: this '{' is never closed");
    CHECK_ERROR("fn f() {\n  if x {\n  }\n",
                "t.qh:1:8: error: unterminated block: this '{' is never closed");
    CHECK_ERROR("a < b < c",
                "t.qh:1:7: error: comparisons do not chain: write (a < b) and (b < c)");
    CHECK_ERROR("ok = a == b != c",
                "t.qh:1:13: error: comparisons do not chain: write (a < b) and (b < c)");
    CHECK_ERROR("x = = 1", "t.qh:1:5: error: expected an expression, found '='");
    CHECK_ERROR("a = 1\nb = 2\nc = = 3", "t.qh:3:5: error: expected an expression, found '='");
    CHECK_ERROR("f(a=1, 2)", "t.qh:1:8: error: positional argument follows keyword argument");
    CHECK_ERROR("f(a=1, a=2)", "t.qh:1:8: error: keyword argument 'a' repeated");
}
END_TEST

START_TEST(error_messages)
{
    CHECK_ERROR("x = 1 +", "t.qh:1:8: error: unexpected end of file: expected an expression");
    CHECK_ERROR("x = 1 +\ny = 2",
                "t.qh:1:8: error: unexpected end of line: expected an expression");
    CHECK_ERROR("x = 1 2",
                "t.qh:1:7: error: expected a newline or ';' after the statement, found number '2'");
    CHECK_ERROR("x = 1 y",
                "t.qh:1:7: error: expected a newline or ';' after the statement, found name 'y'");
    CHECK_ERROR("a = b = 1", "t.qh:1:7: error: chained assignment is not supported");
    CHECK_ERROR("x = (1, 2)", "t.qh:1:7: error: qh has no tuples: use a list [a, b]");
    CHECK_ERROR("1 = x", "t.qh:1:1: error: cannot assign to this expression");
    CHECK_ERROR("f() = 1", "t.qh:1:1: error: cannot assign to this expression");
    CHECK_ERROR("m.x = 1", "t.qh:1:2: error: cannot assign to a module member");
    CHECK_ERROR("a, 2 = f()", "t.qh:1:4: error: cannot assign to this expression");
    CHECK_ERROR("}", "t.qh:1:1: error: unexpected '}' with no block open");
    CHECK_ERROR("x = a if c", "t.qh:1:11: error: expected 'else' in the conditional expression (a "
                              "if c else b), found end of file");
    CHECK_ERROR("x = a if c\nelse b", "t.qh:1:11: error: expected 'else' in the conditional "
                                      "expression (a if c else b), found newline");
    CHECK_ERROR("x = [x for x in xs if a else b]",
                "t.qh:1:25: error: expected ']' to close the list comprehension, found 'else'");
    CHECK_ERROR("x = [x for in xs]",
                "t.qh:1:12: error: expected name as the comprehension variable, found 'in'");
    CHECK_ERROR(
        "x = [x for x of xs]",
        "t.qh:1:14: error: expected 'in' after the comprehension variable, found name 'of'");
    CHECK_ERROR("x = [a, b for a in xs]",
                "t.qh:1:11: error: expected ']' to close the list, found 'for'");
    CHECK_ERROR("x = {x for x in xs}",
                "t.qh:1:8: error: qh has no sets: write a dict comprehension {x: true for ...} or "
                "a list comprehension [x for ...]");
    CHECK_ERROR("x = {1, 2}", "t.qh:1:7: error: qh has no sets: a dict needs key: value (use a "
                              "list [a, b] or a dict {a: true})");
    CHECK_ERROR(
        "x = (x for x in xs)",
        "t.qh:1:8: error: qh has no generator expressions: use a list comprehension [... for ...]");
    CHECK_ERROR("s = sum(x for x in xs)", "t.qh:1:11: error: qh has no generator expressions: use "
                                          "a list comprehension [... for ...]");
    CHECK_ERROR("x = lambda y: y",
                "t.qh:1:5: error: 'lambda' is not part of qh: use fn (x) { return ... }");
    CHECK_ERROR("del xs[0]",
                "t.qh:1:1: error: 'del' is not part of qh: use pop(list, i) or pop(dict, key)");
    CHECK_ERROR("if x is None { }",
                "t.qh:1:6: error: 'is' is not part of qh: use == and != (nil == nil is true)");
    CHECK_ERROR("if x:\n  y = 1", "t.qh:1:5: error: expected '{' to open a block, found ':' (qh "
                                  "blocks are { ... }, not ':' and indentation)");
    CHECK_ERROR("x = a &", "t.qh:1:8: error: unexpected end of file: expected an expression");
    CHECK_ERROR("x = a << << b", "t.qh:1:10: error: expected an expression, found '<<'");
    CHECK_ERROR("x &&= 1", "t.qh:1:3: error: unexpected '&&' (use 'and')");
    CHECK_ERROR("fn f(a=1, b) {}",
                "t.qh:1:11: error: parameter 'b' without a default follows one with a default");
    CHECK_ERROR("fn f(a, a) {}", "t.qh:1:9: error: duplicate parameter 'a'");
    CHECK_ERROR("x = a[]", "t.qh:1:6: error: empty index");
    CHECK_ERROR("x = [1, 2", "t.qh:1:10: error: expected ']' to close the list, found end of file");
    CHECK_ERROR("f(1 2)",
                "t.qh:1:5: error: expected ')' to close the argument list, found number '2'");
    CHECK_ERROR(
        "d = {\"a\" 1}",
        "t.qh:1:10: error: expected ':' between a dict key and its value, found number '1'");
    CHECK_ERROR("if x\n{ }", "t.qh:1:5: error: expected '{' to open a block, found newline");
    /* `{ }` after `while` is an (empty dict) condition; the block is missing */
    CHECK_ERROR("while { }", "t.qh:1:10: error: expected '{' to open a block, found end of file");
    CHECK_ERROR("for 1 in x { }",
                "t.qh:1:5: error: expected name as the loop variable, found number '1'");
    CHECK_ERROR("for i x { }",
                "t.qh:1:7: error: expected 'in' after the loop variable, found name 'x'");
    CHECK_ERROR("try { } x = 1",
                "t.qh:1:9: error: expected 'catch' after the try block, found name 'x'");
    CHECK_ERROR("qfn (x) { }", "t.qh:1:5: error: expected name after 'qfn', found '('");
    CHECK_ERROR("import 3", "t.qh:1:8: error: expected name after 'import', found number '3'");
    CHECK_ERROR(
        "x = m.1",
        "t.qh:1:6: error: expected a newline or ';' after the statement, found number '.1'");
    CHECK_ERROR("x = m.(1)", "t.qh:1:7: error: expected name after '.', found '('");
    CHECK_ERROR("else { }", "t.qh:1:1: error: expected an expression, found 'else'");
}
END_TEST

/* Errors found by the lexer are reported by the parser at their place. */
START_TEST(lexical_errors)
{
    CHECK_ERROR("x = \"abc", "t.qh:1:5: error: unterminated string");
    CHECK_ERROR("x = 1\ny = $", "t.qh:2:5: error: unexpected character '$'");
    CHECK_ERROR("s = \"a\\qb\"", "t.qh:1:7: error: unknown escape sequence '\\q'");
    CHECK_ERROR("x = 1e", "t.qh:1:5: error: malformed number: exponent has no digits");
    CHECK_ERROR("x = 1 $", "t.qh:1:7: error: unexpected character '$'");
    /* only the first error is reported */
    Parsed p = parse_text("x = $\ny = $");
    ck_assert_ptr_null(p.m);
    ck_assert_ptr_null(strstr(p.diag, ":2:"));
    parsed_free(&p);
    CHECK_ERROR("d = {\"a\": \"b}", "t.qh:1:11: error: unterminated string");
    /* where the parser expected a particular token, the lexer's message is
     * still the one shown (not "found error") */
    CHECK_ERROR("x = [1 $]", "t.qh:1:8: error: unexpected character '$'");
    CHECK_ERROR("f(1 $)", "t.qh:1:5: error: unexpected character '$'");
    CHECK_ERROR("if a ! b { }", "t.qh:1:6: error: unexpected character '!' (use 'not')");
    CHECK_ERROR("d = {\"a\" \"b: 1}", "t.qh:1:10: error: unterminated string");
}
END_TEST

START_TEST(error_caret)
{
    Parsed p = parse_text("y = 0\nx = = 1\n");
    ck_assert_ptr_null(p.m);
    ck_assert_str_eq(p.diag, "t.qh:2:5: error: expected an expression, found '='\n"
                             "    2 | x = = 1\n"
                             "      |     ^\n");
    parsed_free(&p);
}
END_TEST

/* ================================================================ nesting */

static char *repeat3(const char *open, int n, const char *mid, const char *close)
{
    size_t lo = strlen(open), lm = strlen(mid), lc = strlen(close);
    char *s = malloc(lo * (size_t)n + lm + lc * (size_t)n + 1), *o = s;
    for (int i = 0; i < n; i++) {
        memcpy(o, open, lo);
        o += lo;
    }
    memcpy(o, mid, lm);
    o += lm;
    for (int i = 0; i < n; i++) {
        memcpy(o, close, lc);
        o += lc;
    }
    *o = 0;
    return s;
}

/* Nesting 10,000 deep is a syntax error "nesting too deep", not a crash. */
static void check_too_deep(const char *open, const char *mid, const char *close)
{
    char *src = repeat3(open, 10000, mid, close);
    Parsed p = parse_text(src);
    ck_assert_msg(p.m == NULL, "10000 x '%s' parsed", open);
    ck_assert_msg(p.diag && strstr(p.diag, "error: nesting too deep"), "10000 x '%s': %s", open,
                  p.diag ? p.diag : "(nothing)");
    ck_assert_msg(strncmp(p.diag, "t.qh:", 5) == 0, "10000 x '%s': %.80s", open, p.diag);
    parsed_free(&p);
    free(src);
}

START_TEST(deep_nesting_is_an_error)
{
    check_too_deep("(", "1", ")");
    check_too_deep("[", "1", "]");
    check_too_deep("{1: ", "1", "}");
    check_too_deep("-", "x", "");
    check_too_deep("not ", "x", "");
    check_too_deep("2 ** ", "2", "");
    check_too_deep("f(", "1", ")");
    check_too_deep("a[", "1", "]");
    check_too_deep("fn () { return ", "1", " }");
    check_too_deep("if x { ", "y = 1", " }");
    check_too_deep("while x {\n", "y = 1", "\n}");
}
END_TEST

START_TEST(moderate_nesting_is_fine)
{
    char *src = repeat3("(", 100, "1", ")");
    Parsed p = parse_text(src);
    ck_assert_msg(p.m != NULL, "100 parentheses: %s", p.diag);
    ck_assert_int_eq(stmt(&p, 0)->u.expr.expr->kind, N_NUM);
    parsed_free(&p);
    free(src);
    src = repeat3("if x {\n", 50, "y = 1", "\n}");
    p = parse_text(src);
    ck_assert_msg(p.m != NULL, "50 nested blocks: %s", p.diag);
    parsed_free(&p);
    free(src);
    src = repeat3("[", 100, "", "]");
    p = parse_text(src);
    ck_assert_msg(p.m != NULL, "100 nested lists: %s", p.diag);
    parsed_free(&p);
    free(src);
}
END_TEST

/* A long flat chain is not nesting: it parses. */
START_TEST(long_flat_chains)
{
    enum { N = 20000 };
    char *src = malloc(N * 4 + 16), *o = src;
    o += sprintf(o, "x = 1");
    for (int i = 1; i < N; i++) o += sprintf(o, " + 1");
    Parsed p = parse_text(src);
    ck_assert_msg(p.m != NULL, "%s", p.diag);
    parsed_free(&p);
    /* many statements */
    o = src;
    for (int i = 0; i < N / 4; i++) o += sprintf(o, "a=%d\n", i % 10);
    p = parse_text(src);
    ck_assert_ptr_nonnull(p.m);
    ck_assert_int_eq(p.m->body->u.list.n, N / 4);
    parsed_free(&p);
    free(src);
}
END_TEST

/* ================================================================ parse_incomplete */

static bool incomplete(const char *s) { return parse_incomplete(s, strlen(s)); }

START_TEST(incomplete_input)
{
    ck_assert(incomplete("f(1,"));
    ck_assert(incomplete("f(1, 2"));
    ck_assert(incomplete("x = [1, 2"));
    ck_assert(incomplete("d = {\"a\": 1"));
    ck_assert(incomplete("if x {"));
    ck_assert(incomplete("fn f() {\n  y = 1\n"));
    ck_assert(incomplete("x = ((1 + 2)"));
    ck_assert(incomplete("x = \"abc"));
    ck_assert(incomplete("x = 'abc"));
    ck_assert(incomplete("x = \"abc\\\n")); /* continued string */
    /* a trailing operator is not a continuation: in a script `x = 1 +`
     * then a newline is a syntax error, and the REPL agrees */
    ck_assert(!incomplete("x = 1 +"));
    ck_assert(!incomplete("x = a and"));
    ck_assert(!incomplete("x ="));
    ck_assert(incomplete("if x {\n  f(\n"));
    ck_assert(incomplete("if x {\n} else {"));
}
END_TEST

/* A line ending in a backslash joins the next one (the lexer's explicit
 * line joining): the REPL, which passes the lines without their final
 * newline, must ask for more. */
START_TEST(incomplete_backslash)
{
    ck_assert(incomplete("x = 1 + \\\n")); /* with the newline: joined, then a trailing '+' */
    ck_assert(incomplete("x = foo \\"));
    ck_assert(incomplete("print(1) \\"));
}
END_TEST

START_TEST(complete_input)
{
    ck_assert(!incomplete(""));
    ck_assert(!incomplete("x = 1"));
    ck_assert(!incomplete("x = 1\n"));
    ck_assert(!incomplete("f(1)"));
    ck_assert(!incomplete("if x {\n  y = 1\n}"));
    ck_assert(!incomplete("x = \"(\"")); /* brackets inside strings do not count */
    ck_assert(!incomplete("x = '{['"));
    ck_assert(!incomplete("x = 1 # ("));        /* nor inside comments */
    ck_assert(!incomplete("x = (1 + 2))"));     /* too many closers: an error, not more input */
    ck_assert(!incomplete("x = $ ("));          /* a lexical error: not more input */
    ck_assert(!incomplete("x = \"abc\ny = 1")); /* the string ended at the newline: an error */
    ck_assert(!incomplete("x = -1"));
    ck_assert(!incomplete("d = {}"));
}
END_TEST

/* ================================================================ memory */

/* Heap bytes in use (glibc's count; stays 0 under a sanitizer's allocator,
 * which finds leaks itself). */
static long heap_in_use(void) { return (long)mallinfo2().uordblks; }

/* Parses text n times and returns how much the heap grew. */
static long heap_growth(const char *text, int n)
{
    /* warm up: first-time allocations of stdio and the like */
    for (int i = 0; i < 10; i++) {
        Parsed p = parse_text(text);
        parsed_free(&p);
    }
    long before = heap_in_use();
    for (int i = 0; i < n; i++) {
        Parsed p = parse_text(text);
        parsed_free(&p);
    }
    return heap_in_use() - before;
}

START_TEST(parse_free_releases_all)
{
    long g =
        heap_growth("fn f(a, b=[1, 2]) {\n  return g(a, k=b)[0:1]\n}\nx = {\"a\": f(1)}\n", 2000);
    ck_assert_msg(g < 16384, "2000 parses kept %ld bytes", g);
}
END_TEST

/* A syntax error (the REPL meets many) frees what the parse had built so
 * far: nothing grows with the number of errors. */
START_TEST(syntax_errors_do_not_leak)
{
    const char *bad[] = {
        "f(1, 2, g(3, 4, $",
        "if x {\n  y = [1, 2, 3]\n  z = {1: 2}\n",
        "x = 1\ny = 2\nfn f(a, b) { return a +",
        "d = {\"a\": 1, \"b\": [1, 2, f(x, y=1, 2)]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        long g = heap_growth(bad[i], 2000);
        ck_assert_msg(g < 16384, "2000 failed parses of \"%s\" kept %ld bytes", bad[i], g);
    }
}
END_TEST

static Suite *parse_suite(void)
{
    Suite *s = suite_create("parse");
    TCase *tc = tcase_create("precedence");
    tcase_add_test(tc, prec_arith);
    tcase_add_test(tc, prec_power_unary);
    tcase_add_test(tc, prec_logic);
    tcase_add_test(tc, prec_matmul);
    tcase_add_test(tc, prec_bitwise);
    tcase_add_test(tc, conditional_expr);
    tcase_add_test(tc, comprehensions);
    tcase_add_test(tc, augmented_ops);
    tcase_add_test(tc, literals);
    suite_add_tcase(s, tc);

    tc = tcase_create("postfix");
    tcase_add_test(tc, calls);
    tcase_add_test(tc, index_slice_member);
    suite_add_tcase(s, tc);

    tc = tcase_create("statements");
    tcase_add_test(tc, dict_vs_block);
    tcase_add_test(tc, if_chains);
    tcase_add_test(tc, loops);
    tcase_add_test(tc, try_catch);
    tcase_add_test(tc, assignments);
    tcase_add_test(tc, functions);
    tcase_add_test(tc, qfn_defs);
    tcase_add_test(tc, misc_statements);
    tcase_add_test(tc, newlines_in_brackets);
    tcase_add_test(tc, node_positions);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_test(tc, error_positions);
    tcase_add_test(tc, error_messages);
    tcase_add_test(tc, lexical_errors);
    tcase_add_test(tc, error_caret);
    suite_add_tcase(s, tc);

    tc = tcase_create("nesting");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, deep_nesting_is_an_error);
    tcase_add_test(tc, moderate_nesting_is_fine);
    tcase_add_test(tc, long_flat_chains);
    suite_add_tcase(s, tc);

    tc = tcase_create("incomplete");
    tcase_add_test(tc, incomplete_input);
    tcase_add_test(tc, complete_input);
    tcase_add_test(tc, incomplete_backslash);
    suite_add_tcase(s, tc);

    tc = tcase_create("memory");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, parse_free_releases_all);
    tcase_add_test(tc, syntax_errors_do_not_leak);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(parse_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
