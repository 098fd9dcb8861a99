/* test_lex.c — Check unit tests of the lexer (src/lex.c, lang/lexical.md):
 * every token kind, keywords against names, number and string literals
 * with every escape, errors with their messages, comments, the shebang
 * line, newline tokens and line/column positions. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lex.h"

/* All tokens of a source up to and including EOF (or the first error). */
typedef struct Toks {
    Token t[256];
    int n;
} Toks;

static void lex_all(Toks *out, const char *src)
{
    Lexer lx;
    lex_init(&lx, src, strlen(src));
    out->n = 0;
    for (;;) {
        ck_assert_int_lt(out->n, 256);
        Token t = lex_next(&lx);
        out->t[out->n++] = t;
        if (t.kind == TK_EOF || t.kind == TK_ERROR) break;
    }
}

static void toks_free(Toks *ts)
{
    for (int i = 0; i < ts->n; i++) free(ts->t[i].str);
    ts->n = 0;
}

/* Lexes src and checks the kinds, ending with EOF (not listed in `want`). */
static void check_kinds(const char *src, const TokKind *want, int nwant)
{
    Toks ts;
    lex_all(&ts, src);
    ck_assert_msg(ts.n == nwant + 1, "\"%s\": %d tokens, want %d", src, ts.n - 1, nwant);
    for (int i = 0; i < nwant; i++)
        ck_assert_msg(ts.t[i].kind == want[i], "\"%s\": token %d is %s (%d), want %s (%d)", src, i,
                      lex_kind_name(ts.t[i].kind), ts.t[i].kind, lex_kind_name(want[i]), want[i]);
    ck_assert_int_eq(ts.t[nwant].kind, TK_EOF);
    toks_free(&ts);
}
#define KINDS(src, ...)                                        \
    do {                                                       \
        const TokKind w_[] = { __VA_ARGS__ };                  \
        check_kinds(src, w_, (int)(sizeof w_ / sizeof w_[0])); \
    } while (0)

/* The single token of src (freed by the caller through its str). */
static Token one(const char *src)
{
    Lexer lx;
    lex_init(&lx, src, strlen(src));
    Token t = lex_next(&lx);
    if (t.kind != TK_ERROR) {
        Token e = lex_next(&lx);
        ck_assert_msg(e.kind == TK_EOF, "\"%s\": more than one token (next: %s)", src,
                      lex_kind_name(e.kind));
        free(e.str);
    }
    return t;
}

static void check_num(const char *src, TokKind kind, double want)
{
    Token t = one(src);
    ck_assert_msg(t.kind == kind, "\"%s\" lexed as %s (%s)", src, lex_kind_name(t.kind),
                  t.str ? t.str : "");
    ck_assert_msg(t.num == want, "\"%s\" = %.17g, want %.17g", src, t.num, want);
    ck_assert_int_eq((int)t.len, (int)strlen(src));
    free(t.str);
}

/* Checks a string literal's decoded bytes. */
static void check_str(const char *src, const char *want, size_t wantlen)
{
    Token t = one(src);
    ck_assert_msg(t.kind == TK_STR, "%s lexed as %s (%s)", src, lex_kind_name(t.kind),
                  t.str ? t.str : "");
    ck_assert_msg(t.strlen == wantlen, "%s: %zu bytes, want %zu", src, t.strlen, wantlen);
    ck_assert_msg(memcmp(t.str, want, wantlen) == 0, "%s decoded wrongly", src);
    ck_assert_int_eq(t.str[t.strlen], 0);
    ck_assert_int_eq((int)t.len, (int)strlen(src));
    free(t.str);
}

/* Checks that src gives an error token at line:col whose message contains msgpart. */
static void check_error(const char *src, int line, int col, const char *msgpart)
{
    Toks ts;
    lex_all(&ts, src);
    Token *e = &ts.t[ts.n - 1];
    ck_assert_msg(e->kind == TK_ERROR, "\"%s\": no error token (last: %s)", src,
                  lex_kind_name(e->kind));
    ck_assert_msg(e->str != NULL, "\"%s\": error without a message", src);
    ck_assert_msg(strstr(e->str, msgpart) != NULL, "\"%s\": message \"%s\" lacks \"%s\"", src,
                  e->str, msgpart);
    ck_assert_msg(e->line == line && e->col == col, "\"%s\": error at %d:%d, want %d:%d", src,
                  e->line, e->col, line, col);
    toks_free(&ts);
}

/* ================================================================ kinds */

START_TEST(punctuation)
{
    KINDS("( ) [ ] { } , . : ;", TK_LPAREN, TK_RPAREN, TK_LBRACK, TK_RBRACK, TK_LBRACE, TK_RBRACE,
          TK_COMMA, TK_DOT, TK_COLON, TK_SEMI);
    KINDS("+ - * / // % @ **", TK_PLUS, TK_MINUS, TK_STAR, TK_SLASH, TK_DSLASH, TK_PERCENT, TK_AT,
          TK_POW);
    KINDS("= += -= *= /=", TK_ASSIGN, TK_PLUSEQ, TK_MINUSEQ, TK_STAREQ, TK_SLASHEQ);
    KINDS("== != < <= > >=", TK_EQ, TK_NE, TK_LT, TK_LE, TK_GT, TK_GE);
    KINDS("& | ^ ~ << >>", TK_AMP, TK_PIPE, TK_CARET, TK_TILDE, TK_SHL, TK_SHR);
    KINDS("//= %= **= @= &= |= ^= <<= >>=", TK_DSLASHEQ, TK_PERCENTEQ, TK_POWEQ, TK_ATEQ, TK_AMPEQ,
          TK_PIPEEQ, TK_CARETEQ, TK_SHLEQ, TK_SHREQ);
    /* no spaces: longest match */
    KINDS("a<<=b<<c<=d<e", TK_NAME, TK_SHLEQ, TK_NAME, TK_SHL, TK_NAME, TK_LE, TK_NAME, TK_LT,
          TK_NAME);
    KINDS("a>>=b>>c>=d>e", TK_NAME, TK_SHREQ, TK_NAME, TK_SHR, TK_NAME, TK_GE, TK_NAME, TK_GT,
          TK_NAME);
    KINDS("a**=b//=c%=d", TK_NAME, TK_POWEQ, TK_NAME, TK_DSLASHEQ, TK_NAME, TK_PERCENTEQ, TK_NAME);
    KINDS("a<<<b", TK_NAME, TK_SHL, TK_LT, TK_NAME);
    KINDS("~~x^y", TK_TILDE, TK_TILDE, TK_NAME, TK_CARET, TK_NAME);
    KINDS("a&b|c", TK_NAME, TK_AMP, TK_NAME, TK_PIPE, TK_NAME);
    KINDS("a**b*c", TK_NAME, TK_POW, TK_NAME, TK_STAR, TK_NAME);
    KINDS("a***b", TK_NAME, TK_POW, TK_STAR, TK_NAME);
    KINDS("a//b/c", TK_NAME, TK_DSLASH, TK_NAME, TK_SLASH, TK_NAME);
    KINDS("x+=1", TK_NAME, TK_PLUSEQ, TK_NUM);
    KINDS("x+ =1", TK_NAME, TK_PLUS, TK_ASSIGN, TK_NUM);
    KINDS("a<=b>=c==d!=e", TK_NAME, TK_LE, TK_NAME, TK_GE, TK_NAME, TK_EQ, TK_NAME, TK_NE, TK_NAME);
    KINDS("a===b", TK_NAME, TK_EQ, TK_ASSIGN, TK_NAME);
    KINDS("f(x)[0].y", TK_NAME, TK_LPAREN, TK_NAME, TK_RPAREN, TK_LBRACK, TK_NUM, TK_RBRACK, TK_DOT,
          TK_NAME);
    Toks ts;
    lex_all(&ts, "");
    ck_assert_int_eq(ts.n, 1);
    ck_assert_int_eq(ts.t[0].kind, TK_EOF);
    ck_assert_int_eq(ts.t[0].line, 1);
    ck_assert_int_eq(ts.t[0].col, 1);
    toks_free(&ts);
    lex_all(&ts, "  \t  ");
    ck_assert_int_eq(ts.n, 1);
    ck_assert_int_eq(ts.t[0].kind, TK_EOF);
    toks_free(&ts);
}
END_TEST

START_TEST(pow_vs_star)
{
    Toks ts;
    lex_all(&ts, "2**3 * 4");
    ck_assert_int_eq(ts.t[1].kind, TK_POW);
    ck_assert_int_eq((int)ts.t[1].len, 2);
    ck_assert_int_eq(ts.t[1].col, 2);
    ck_assert_int_eq(ts.t[3].kind, TK_STAR);
    ck_assert_int_eq((int)ts.t[3].len, 1);
    ck_assert_int_eq(ts.t[3].col, 6);
    toks_free(&ts);
    lex_all(&ts, "a *= 2 ** 2");
    ck_assert_int_eq(ts.t[1].kind, TK_STAREQ);
    ck_assert_int_eq(ts.t[3].kind, TK_POW);
    toks_free(&ts);
}
END_TEST

START_TEST(keywords)
{
    static const struct {
        const char *w;
        TokKind k;
    } kw[] = {
        { "fn", TK_FN },         { "qfn", TK_QFN },       { "on", TK_ON },
        { "return", TK_RETURN }, { "if", TK_IF },         { "elif", TK_ELIF },
        { "else", TK_ELSE },     { "while", TK_WHILE },   { "for", TK_FOR },
        { "in", TK_IN },         { "break", TK_BREAK },   { "continue", TK_CONTINUE },
        { "and", TK_AND },       { "or", TK_OR },         { "not", TK_NOT },
        { "true", TK_TRUE },     { "false", TK_FALSE },   { "nil", TK_NIL },
        { "import", TK_IMPORT }, { "global", TK_GLOBAL }, { "try", TK_TRY },
        { "catch", TK_CATCH },
    };
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++) {
        Token t = one(kw[i].w);
        ck_assert_msg(t.kind == kw[i].k, "'%s' lexed as %s", kw[i].w, lex_kind_name(t.kind));
        ck_assert_int_eq((int)t.len, (int)strlen(kw[i].w));
        /* a keyword with more letters, digits or '_' around it is a name */
        char buf[32];
        const char *fmts[] = { "%sx", "x%s", "%s_", "_%s", "%s1" };
        for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
            snprintf(buf, sizeof buf, fmts[f], kw[i].w);
            Token n = one(buf);
            ck_assert_msg(n.kind == TK_NAME, "'%s' lexed as %s, want a name", buf,
                          lex_kind_name(n.kind));
            ck_assert_int_eq((int)n.len, (int)strlen(buf));
        }
        /* keywords are case-sensitive (True and False are reserved: not qh) */
        snprintf(buf, sizeof buf, "%s", kw[i].w);
        buf[0] = (char)(buf[0] - 'a' + 'A');
        Token u = one(buf);
        if (strcmp(buf, "True") == 0 || strcmp(buf, "False") == 0) {
            ck_assert_msg(u.kind == TK_ERROR, "'%s' lexed as %s", buf, lex_kind_name(u.kind));
            free(u.str);
        } else {
            ck_assert_msg(u.kind == TK_NAME, "'%s' lexed as %s", buf, lex_kind_name(u.kind));
        }
    }
}
END_TEST

START_TEST(names)
{
    const char *names[] = { "x",      "_",       "_x1",      "camelCase", "snake_case_2",
                            "A",      "Z9",      "__init__", "true_",     "none",
                            "passes", "lambda_", "Lambda",   "isa",       "match",
                            "case",   "self",    "this",     "function" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        Token t = one(names[i]);
        ck_assert_msg(t.kind == TK_NAME, "'%s' lexed as %s", names[i], lex_kind_name(t.kind));
        ck_assert_int_eq((int)t.len, (int)strlen(names[i]));
        ck_assert(memcmp(t.start, names[i], t.len) == 0);
    }
    /* a name cannot start with a digit: 9x is malformed */
    Token t = one("9x");
    ck_assert_int_eq(t.kind, TK_ERROR);
    free(t.str);
}
END_TEST

/* Python's words that qh does not have are reserved: each is an error that
 * says what to write instead (lang/lexical.md#keywords). */
START_TEST(not_qh_words)
{
    static const struct {
        const char *src;
        const char *msg;
    } w[] = {
        { "lambda", "'lambda' is not part of qh: use fn (x) { return ... }" },
        { "def", "'def' is not part of qh: functions are defined with fn NAME(params) { ... }" },
        { "class", "'class' is not part of qh" },
        { "yield", "'yield' is not part of qh: qh has no generators" },
        { "nonlocal", "'nonlocal' is not part of qh" },
        { "del", "'del' is not part of qh: use pop(list, i) or pop(dict, key)" },
        { "is", "'is' is not part of qh: use ==" },
        { "pass", "'pass' is not part of qh: an empty block is written {}" },
        { "raise", "'raise' is not part of qh: use error(message)" },
        { "assert", "'assert' is not part of qh" },
        { "except", "'except' is not part of qh: use try { ... } catch e { ... }" },
        { "finally", "'finally' is not part of qh" },
        { "with", "'with' is not part of qh" },
        { "async", "'async' is not part of qh" },
        { "await", "'await' is not part of qh" },
        { "from", "'from' is not part of qh" },
        { "as", "'as' is not part of qh" },
        { "None", "'None' is not part of qh: use nil" },
        { "True", "'True' is not part of qh: use true" },
        { "False", "'False' is not part of qh: use false" },
    };
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        Token t = one(w[i].src);
        ck_assert_msg(t.kind == TK_ERROR, "'%s' lexed as %s", w[i].src, lex_kind_name(t.kind));
        ck_assert_msg(strstr(t.str, w[i].msg) != NULL, "'%s': message %s", w[i].src, t.str);
        ck_assert_int_eq((int)t.len, (int)strlen(w[i].src));
        free(t.str);
    }
    check_error("x = lambda y: y", 1, 5, "'lambda' is not part of qh");
    check_error("if a && b { }", 1, 6, "unexpected '&&' (use 'and')");
    check_error("if a || b { }", 1, 6, "unexpected '||' (use 'or')");
}
END_TEST

START_TEST(kind_names)
{
    ck_assert_str_eq(lex_kind_name(TK_POW), "'**'");
    ck_assert_str_eq(lex_kind_name(TK_DSLASH), "'//'");
    ck_assert_str_eq(lex_kind_name(TK_PLUSEQ), "'+='");
    ck_assert_str_eq(lex_kind_name(TK_SHREQ), "'>>='");
    ck_assert_str_eq(lex_kind_name(TK_TILDE), "'~'");
    ck_assert_str_eq(lex_kind_name(TK_EOF), "end of file");
    ck_assert_str_eq(lex_kind_name(TK_NAME), "name");
    ck_assert_str_eq(lex_kind_name(TK_ELIF), "'elif'");
    /* every kind has a name */
    for (int k = 0; k < TK_NKINDS; k++) {
        const char *n = lex_kind_name((TokKind)k);
        ck_assert_ptr_nonnull(n);
        ck_assert_msg(strcmp(n, "token") != 0, "kind %d has no name", k);
    }
}
END_TEST

/* ================================================================ numbers */

START_TEST(numbers)
{
    check_num("42", TK_NUM, 42);
    check_num("0", TK_NUM, 0);
    check_num("3.14", TK_NUM, 3.14);
    check_num(".5", TK_NUM, 0.5);
    check_num("5.", TK_NUM, 5.0);
    check_num("1e-3", TK_NUM, 1e-3);
    check_num("1E3", TK_NUM, 1000);
    check_num("2.5e+2", TK_NUM, 250);
    check_num("0x1f", TK_NUM, 31);
    check_num("0XFF", TK_NUM, 255);
    check_num("0xdead_beef", TK_NUM, 3735928559.0);
    check_num("1_000_000", TK_NUM, 1000000);
    check_num("1_0.2_5", TK_NUM, 10.25);
    check_num("0.1", TK_NUM, 0.1);
    check_num("123456789012345678901234567890", TK_NUM, 123456789012345678901234567890.0);
    check_num("0x10000000000000001", TK_NUM, 18446744073709551617.0); /* more than 64 bits */
}
END_TEST

/* Hex literals beyond 2^53 are rounded once, correctly, like any other
 * literal (Python: float(0x2000000000000101) == 2**61 + 512). */
START_TEST(hex_rounding)
{
    check_num("0x20000000000000", TK_NUM, 9007199254740992.0);        /* 2^53, 14 digits */
    check_num("0xFFFFFFFFFFFFF", TK_NUM, 4503599627370495.0);         /* 15 digits, exact */
    check_num("0x2000000000000101", TK_NUM, 2305843009213694464.0);   /* 2^61 + 257 -> 2^61 + 512 */
    check_num("0x20000000000001010", TK_NUM, 36893488147419111424.0); /* the same, times 16 */
}
END_TEST

START_TEST(imaginary)
{
    check_num("2j", TK_IMAG, 2);
    check_num("0.5j", TK_IMAG, 0.5);
    check_num("1e2j", TK_IMAG, 100);
    check_num("3J", TK_IMAG, 3);
    check_num(".25j", TK_IMAG, 0.25);
    /* 2jx is not a number followed by a name */
    Token t = one("2jx");
    ck_assert_int_eq(t.kind, TK_ERROR);
    free(t.str);
}
END_TEST

START_TEST(number_followed)
{
    /* a number and a following operator or bracket */
    KINDS("1+2", TK_NUM, TK_PLUS, TK_NUM);
    KINDS("1-2", TK_NUM, TK_MINUS, TK_NUM);
    KINDS("a[1:3]", TK_NAME, TK_LBRACK, TK_NUM, TK_COLON, TK_NUM, TK_RBRACK);
    KINDS("x.y", TK_NAME, TK_DOT, TK_NAME);
    KINDS("1.5.x", TK_NUM, TK_DOT, TK_NAME);
    Toks ts;
    lex_all(&ts, "3-.5");
    ck_assert_int_eq(ts.t[0].kind, TK_NUM);
    ck_assert(ts.t[0].num == 3);
    ck_assert_int_eq(ts.t[1].kind, TK_MINUS);
    ck_assert_int_eq(ts.t[2].kind, TK_NUM);
    ck_assert(ts.t[2].num == 0.5);
    toks_free(&ts);
}
END_TEST

START_TEST(bad_numbers)
{
    check_error("x = 1e", 1, 5, "exponent");
    check_error("x = 1e+", 1, 5, "exponent");
    check_error("0x", 1, 1, "hex");
    check_error("0xg", 1, 1, "hex");
    check_error("12abc", 1, 1, "malformed number");
    check_error("0x1fz", 1, 1, "malformed number");
}
END_TEST

/* ================================================================ strings */

START_TEST(string_plain)
{
    check_str("\"hello\"", "hello", 5);
    check_str("'hello'", "hello", 5);
    check_str("\"\"", "", 0);
    check_str("''", "", 0);
    check_str("\"it's\"", "it's", 4);
    check_str("'say \"hi\"'", "say \"hi\"", 8);
    check_str("\"# not a comment\"", "# not a comment", 15);
    check_str("\"caf\xc3\xa9 \xe2\x82\xac\"", "caf\xc3\xa9 \xe2\x82\xac", 9); /* raw UTF-8 kept */
}
END_TEST

START_TEST(string_escapes)
{
    check_str("\"a\\nb\"", "a\nb", 3);
    check_str("\"\\t\"", "\t", 1);
    check_str("\"\\r\"", "\r", 1);
    check_str("\"\\\\\"", "\\", 1);
    check_str("\"\\\"\"", "\"", 1);
    check_str("'\\''", "'", 1);
    check_str("\"\\'\"", "'", 1);
    check_str("'\\\"'", "\"", 1);
    check_str("\"a\\0b\"", "a\0b", 3); /* NUL inside a string */
    check_str("\"\\x41\\x7a\"", "Az", 2);
    check_str("\"\\xff\"", "\xff", 1);
    check_str("\"\\xA0\"", "\xa0", 1);
    check_str("\"\\x00\"", "\0", 1);
    check_str("\"\\u{41}\"", "A", 1);
    check_str("\"\\u{e9}\"", "\xc3\xa9", 2);             /* 2-byte UTF-8 */
    check_str("\"\\u{20AC}\"", "\xe2\x82\xac", 3);       /* 3-byte */
    check_str("\"\\u{1F600}\"", "\xf0\x9f\x98\x80", 4);  /* 4-byte */
    check_str("\"\\u{10FFFF}\"", "\xf4\x8f\xbf\xbf", 4); /* the last code point */
    check_str("\"\\u{0000e9}\"", "\xc3\xa9", 2);         /* leading zeros */
    check_str("\"\\u{7f}\\u{80}\\u{7ff}\\u{800}\\u{ffff}\\u{10000}\"",
              "\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80", 15);
    check_str("\"\\n\\t\\r\\\\\\\"\\'\\0\\x41\\u{263A}\"", "\n\t\r\\\"'\0A\xe2\x98\xba", 11);
}
END_TEST

START_TEST(string_unterminated)
{
    check_error("\"abc", 1, 1, "unterminated string");
    check_error("x = 'abc", 1, 5, "unterminated string");
    check_error("x = \"abc\ny = 1", 1, 5, "unterminated string"); /* strings do not span lines */
    check_error("\"abc\\\"", 1, 1, "unterminated string");        /* the quote is escaped */
    check_error("\"abc'", 1, 1, "unterminated string");           /* the other quote */
    check_error("a\n  \"xyz", 2, 3, "unterminated string");
    check_error("\"abc\\", 1, 1, "unterminated string");
}
END_TEST

START_TEST(string_bad_escape)
{
    check_error("\"a\\qb\"", 1, 3, "unknown escape sequence '\\q'");
    check_error("x = \"\\a\"", 1, 6, "unknown escape");
    check_error("\"\\x4\"", 1, 2, "\\x");
    check_error("\"\\xg0\"", 1, 2, "\\x");
    check_error("\"\\x\"", 1, 2, "\\x");
    check_error("\"\\u41\"", 1, 2, "\\u");
    check_error("\"\\u{}\"", 1, 2, "\\u");
    check_error("\"\\u{110000}\"", 1, 2, "\\u"); /* beyond Unicode */
    check_error("\"\\u{D800}\"", 1, 2, "\\u");   /* a surrogate */
    check_error("\"\\u{41\"", 1, 2, "\\u");
    check_error("\"\\u{4g}\"", 1, 2, "\\u");
}
END_TEST

START_TEST(string_positions)
{
    Toks ts;
    lex_all(&ts, "s = \"a\\tb\" + 'c'");
    ck_assert_int_eq(ts.t[2].kind, TK_STR);
    ck_assert_int_eq(ts.t[2].col, 5);
    ck_assert_int_eq((int)ts.t[2].len, 6); /* the source text, quotes included */
    ck_assert(memcmp(ts.t[2].start, "\"a\\tb\"", 6) == 0);
    ck_assert_int_eq(ts.t[3].kind, TK_PLUS);
    ck_assert_int_eq(ts.t[3].col, 12);
    ck_assert_int_eq(ts.t[4].kind, TK_STR);
    ck_assert_int_eq(ts.t[4].col, 14);
    toks_free(&ts);
}
END_TEST

/* ================================================================ layout */

START_TEST(newlines_and_positions)
{
    const char *src = "x = 1\n  y=22\n\nfoo(a, b)\n";
    Toks ts;
    lex_all(&ts, src);
    struct {
        TokKind k;
        int line, col;
    } want[] = {
        { TK_NAME, 1, 1 },    { TK_ASSIGN, 1, 3 }, { TK_NUM, 1, 5 },    { TK_NEWLINE, 1, 6 },
        { TK_NAME, 2, 3 },    { TK_ASSIGN, 2, 4 }, { TK_NUM, 2, 5 },    { TK_NEWLINE, 2, 7 },
        { TK_NEWLINE, 3, 1 }, { TK_NAME, 4, 1 },   { TK_LPAREN, 4, 4 }, { TK_NAME, 4, 5 },
        { TK_COMMA, 4, 6 },   { TK_NAME, 4, 8 },   { TK_RPAREN, 4, 9 }, { TK_NEWLINE, 4, 10 },
        { TK_EOF, 5, 1 },
    };
    int nw = (int)(sizeof want / sizeof want[0]);
    ck_assert_int_eq(ts.n, nw);
    for (int i = 0; i < nw; i++) {
        ck_assert_msg(
            ts.t[i].kind == want[i].k && ts.t[i].line == want[i].line && ts.t[i].col == want[i].col,
            "token %d: %s at %d:%d, want %s at %d:%d", i, lex_kind_name(ts.t[i].kind), ts.t[i].line,
            ts.t[i].col, lex_kind_name(want[i].k), want[i].line, want[i].col);
    }
    ck_assert_int_eq((int)ts.t[3].len, 1);
    toks_free(&ts);
}
END_TEST

START_TEST(tabs_and_cr)
{
    /* columns count bytes: a tab is one column; \r\n ends a line like \n */
    Toks ts;
    lex_all(&ts, "\tx = 1\r\ny");
    ck_assert_int_eq(ts.t[0].kind, TK_NAME);
    ck_assert_int_eq(ts.t[0].col, 2);
    ck_assert_int_eq(ts.t[3].kind, TK_NEWLINE);
    ck_assert_int_eq(ts.t[4].kind, TK_NAME);
    ck_assert_int_eq(ts.t[4].line, 2);
    ck_assert_int_eq(ts.t[4].col, 1);
    toks_free(&ts);
    /* columns after UTF-8 text in a string count bytes */
    lex_all(&ts, "\"\xc3\xa9\" x");
    ck_assert_int_eq(ts.t[1].kind, TK_NAME);
    ck_assert_int_eq(ts.t[1].col, 6);
    toks_free(&ts);
}
END_TEST

START_TEST(comments)
{
    KINDS("x = 1 # a comment", TK_NAME, TK_ASSIGN, TK_NUM);
    KINDS("# only a comment\n", TK_NEWLINE);
    KINDS("# c1\n# c2\nx", TK_NEWLINE, TK_NEWLINE, TK_NAME);
    KINDS("x # c ( [ { \" '\ny", TK_NAME, TK_NEWLINE, TK_NAME);
    KINDS("s = \"a # b\" # c", TK_NAME, TK_ASSIGN, TK_STR);
    Toks ts;
    lex_all(&ts, "a # comment\nb");
    ck_assert_int_eq(ts.t[1].kind, TK_NEWLINE);
    ck_assert_int_eq(ts.t[1].line, 1);
    ck_assert_int_eq(ts.t[1].col, 12);
    ck_assert_int_eq(ts.t[2].line, 2);
    toks_free(&ts);
}
END_TEST

START_TEST(shebang)
{
    Toks ts;
    lex_all(&ts, "#!/usr/bin/env qh\nprint(1)\n");
    ck_assert_int_eq(ts.t[0].kind, TK_NEWLINE);
    ck_assert_int_eq(ts.t[0].line, 1);
    ck_assert_int_eq(ts.t[1].kind, TK_NAME);
    ck_assert_int_eq(ts.t[1].line, 2);
    ck_assert_int_eq(ts.t[1].col, 1);
    toks_free(&ts);
    /* a UTF-8 byte-order mark is skipped */
    lex_all(&ts, "\xef\xbb\xbfx");
    ck_assert_int_eq(ts.t[0].kind, TK_NAME);
    ck_assert_int_eq((int)ts.t[0].len, 1);
    toks_free(&ts);
}
END_TEST

START_TEST(line_joining)
{
    /* a backslash at the end of a line joins it to the next */
    Toks ts;
    lex_all(&ts, "x = 1 + \\\n    2\ny");
    ck_assert_int_eq(ts.t[3].kind, TK_PLUS);
    ck_assert_int_eq(ts.t[4].kind, TK_NUM);
    ck_assert_int_eq(ts.t[4].line, 2);
    ck_assert_int_eq(ts.t[4].col, 5);
    ck_assert_int_eq(ts.t[5].kind, TK_NEWLINE);
    ck_assert_int_eq(ts.t[6].kind, TK_NAME);
    ck_assert_int_eq(ts.t[6].line, 3);
    toks_free(&ts);
    /* inside a string too */
    check_str("\"ab\\\ncd\"", "abcd", 4);
}
END_TEST

/* A string with a line continuation is one token, placed where it starts
 * (its line and column are what diagnostics and AST nodes show). */
START_TEST(string_continuation_position)
{
    Toks ts;
    lex_all(&ts, "s = \"ab\\\ncd\" + x");
    ck_assert_int_eq(ts.t[2].kind, TK_STR);
    ck_assert_msg(ts.t[2].line == 1 && ts.t[2].col == 5, "string at %d:%d, want 1:5", ts.t[2].line,
                  ts.t[2].col);
    ck_assert_int_eq(ts.t[3].kind, TK_PLUS);
    ck_assert_int_eq(ts.t[3].line, 2);
    ck_assert_int_eq(ts.t[3].col, 5);
    toks_free(&ts);
}
END_TEST

START_TEST(string_continuation_error_position)
{
    /* an unterminated string after a continuation is reported where it starts */
    check_error("x = \"ab\\\ncd", 1, 5, "unterminated string");
}
END_TEST

/* Files with CRLF line ends: the carriage return is blank space, so a
 * backslash before "\r\n" joins lines as it does before "\n". */
START_TEST(line_joining_crlf)
{
    KINDS("x = 1\r\ny", TK_NAME, TK_ASSIGN, TK_NUM, TK_NEWLINE, TK_NAME);
    KINDS("x = 1 + \\\r\n  2", TK_NAME, TK_ASSIGN, TK_NUM, TK_PLUS, TK_NUM);
    check_str("\"ab\\\r\ncd\"", "abcd", 4);
}
END_TEST

START_TEST(eof_and_after)
{
    Lexer lx;
    lex_init(&lx, "x", 1);
    Token t = lex_next(&lx);
    ck_assert_int_eq(t.kind, TK_NAME);
    /* EOF repeats */
    for (int i = 0; i < 3; i++) {
        t = lex_next(&lx);
        ck_assert_int_eq(t.kind, TK_EOF);
        ck_assert_int_eq((int)t.len, 0);
    }
    /* the length given is respected: no reading past it */
    lex_init(&lx, "ab cd", 2);
    t = lex_next(&lx);
    ck_assert_int_eq(t.kind, TK_NAME);
    ck_assert_int_eq((int)t.len, 2);
    ck_assert_int_eq(lex_next(&lx).kind, TK_EOF);
    lex_init(&lx, "12345", 2);
    t = lex_next(&lx);
    ck_assert_int_eq(t.kind, TK_NUM);
    ck_assert(t.num == 12);
    ck_assert_int_eq(lex_next(&lx).kind, TK_EOF);
    lex_init(&lx, "\"ab\"", 3);
    t = lex_next(&lx);
    ck_assert_int_eq(t.kind, TK_ERROR);
    free(t.str);
}
END_TEST

START_TEST(bad_characters)
{
    check_error("x = $", 1, 5, "unexpected character '$'");
    check_error("a ! b", 1, 3, "'!'");
    check_error("a ? b", 1, 3, "'?'");
    check_error("x = \x01", 1, 5, "control character");
    check_error("x = \xc3\xa9", 1, 5, "outside a string");
    check_error("`", 1, 1, "'`'");
    /* after an error the lexer goes on with the next character */
    Lexer lx;
    lex_init(&lx, "$ x", 3);
    Token t = lex_next(&lx);
    ck_assert_int_eq(t.kind, TK_ERROR);
    free(t.str);
    t = lex_next(&lx);
    ck_assert_int_eq(t.kind, TK_NAME);
    ck_assert_int_eq(t.col, 3);
}
END_TEST

static Suite *lex_suite(void)
{
    Suite *s = suite_create("lex");
    TCase *tc = tcase_create("kinds");
    tcase_add_test(tc, punctuation);
    tcase_add_test(tc, pow_vs_star);
    tcase_add_test(tc, keywords);
    tcase_add_test(tc, names);
    tcase_add_test(tc, not_qh_words);
    tcase_add_test(tc, kind_names);
    suite_add_tcase(s, tc);

    tc = tcase_create("numbers");
    tcase_add_test(tc, numbers);
    tcase_add_test(tc, hex_rounding);
    tcase_add_test(tc, imaginary);
    tcase_add_test(tc, number_followed);
    tcase_add_test(tc, bad_numbers);
    suite_add_tcase(s, tc);

    tc = tcase_create("strings");
    tcase_add_test(tc, string_plain);
    tcase_add_test(tc, string_escapes);
    tcase_add_test(tc, string_unterminated);
    tcase_add_test(tc, string_bad_escape);
    tcase_add_test(tc, string_positions);
    suite_add_tcase(s, tc);

    tc = tcase_create("layout");
    tcase_add_test(tc, newlines_and_positions);
    tcase_add_test(tc, tabs_and_cr);
    tcase_add_test(tc, comments);
    tcase_add_test(tc, shebang);
    tcase_add_test(tc, line_joining);
    tcase_add_test(tc, string_continuation_position);
    tcase_add_test(tc, string_continuation_error_position);
    tcase_add_test(tc, line_joining_crlf);
    tcase_add_test(tc, eof_and_after);
    tcase_add_test(tc, bad_characters);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(lex_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
