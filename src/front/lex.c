/* lex.c — turns UTF-8 source into tokens. Comments run from # to the end of
 * the line (so a #! line is one); newlines are tokens, and the parser decides
 * where they end statements. Knows nothing of the AST or of values. */
#include "lex.h"
#include "qh_assert.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lex_init(Lexer *lx, const char *src, size_t len)
{
    lx->src = lx->p = src;
    lx->end = src + len;
    lx->line = 1;
    lx->line_start = src;
    lx->tok_line = 1;
    lx->tok_line_start = src;
    /* a UTF-8 byte-order mark is skipped */
    if (len >= 3 && (unsigned char)src[0] == 0xef && (unsigned char)src[1] == 0xbb &&
        (unsigned char)src[2] == 0xbf)
        lx->p += 3;
}

static const struct {
    const char *w;
    TokKind k;
} keywords[] = {
    { "fn", TK_FN },         { "qfn", TK_QFN },       { "on", TK_ON },
    { "return", TK_RETURN }, { "if", TK_IF },         { "elif", TK_ELIF },
    { "else", TK_ELSE },     { "while", TK_WHILE },   { "for", TK_FOR },
    { "in", TK_IN },         { "break", TK_BREAK },   { "continue", TK_CONTINUE },
    { "and", TK_AND },       { "or", TK_OR },         { "not", TK_NOT },
    { "true", TK_TRUE },     { "false", TK_FALSE },   { "nil", TK_NIL },
    { "import", TK_IMPORT }, { "global", TK_GLOBAL }, { "try", TK_TRY },
    { "catch", TK_CATCH },
};

/* Words of Python (and a few of other languages) that qh does not have. They
 * are reserved, so that using one says what to write instead rather than
 * failing later with "found name ..." (lang/lexical.md#keywords). */
static const struct {
    const char *w;
    const char *hint;
} not_qh[] = {
    { "lambda", "use fn (x) { return ... }" },
    { "def", "functions are defined with fn NAME(params) { ... }" },
    { "class", "qh has no classes: use dicts for records and fn for behaviour" },
    { "yield", "qh has no generators: build a list and return it" },
    { "nonlocal", "an inner function cannot rebind an outer local; mutate a container instead "
                  "(e.g. n[0] += 1)" },
    { "del", "use pop(list, i) or pop(dict, key)" },
    { "is", "use == and != (nil == nil is true)" },
    { "pass", "an empty block is written {}" },
    { "raise", "use error(message)" },
    { "assert", "use if not (...) { error(message) }" },
    { "except", "use try { ... } catch e { ... }" },
    { "finally", "qh has no finally: put the clean-up after the try/catch" },
    { "with", "qh has no context managers" },
    { "async", "a qfn call is asynchronous already: it returns a future at once" },
    { "await", "a future is waited for where its value is needed, or with wait(x)" },
    { "from", "use import NAME and NAME.member" },
    { "as", "use import NAME and bind another name with NAME2 = NAME" },
    { "None", "use nil" },
    { "True", "use true" },
    { "False", "use false" },
};

const char *lex_keyword(int i)
{
    return i >= 0 && (size_t)i < sizeof keywords / sizeof keywords[0] ? keywords[i].w : NULL;
}

const char *lex_kind_name(TokKind k)
{
    static const char *const names[TK_NKINDS] = {
        [TK_EOF] = "end of file", [TK_NEWLINE] = "newline", [TK_ERROR] = "error",
        [TK_NAME] = "name",       [TK_NUM] = "number",      [TK_IMAG] = "number",
        [TK_STR] = "string",      [TK_LPAREN] = "'('",      [TK_RPAREN] = "')'",
        [TK_LBRACK] = "'['",      [TK_RBRACK] = "']'",      [TK_LBRACE] = "'{'",
        [TK_RBRACE] = "'}'",      [TK_COMMA] = "','",       [TK_DOT] = "'.'",
        [TK_COLON] = "':'",       [TK_SEMI] = "';'",        [TK_PLUS] = "'+'",
        [TK_MINUS] = "'-'",       [TK_STAR] = "'*'",        [TK_SLASH] = "'/'",
        [TK_DSLASH] = "'//'",     [TK_PERCENT] = "'%'",     [TK_AT] = "'@'",
        [TK_POW] = "'**'",        [TK_AMP] = "'&'",         [TK_PIPE] = "'|'",
        [TK_CARET] = "'^'",       [TK_TILDE] = "'~'",       [TK_SHL] = "'<<'",
        [TK_SHR] = "'>>'",        [TK_ASSIGN] = "'='",      [TK_PLUSEQ] = "'+='",
        [TK_MINUSEQ] = "'-='",    [TK_STAREQ] = "'*='",     [TK_SLASHEQ] = "'/='",
        [TK_DSLASHEQ] = "'//='",  [TK_PERCENTEQ] = "'%='",  [TK_POWEQ] = "'**='",
        [TK_ATEQ] = "'@='",       [TK_AMPEQ] = "'&='",      [TK_PIPEEQ] = "'|='",
        [TK_CARETEQ] = "'^='",    [TK_SHLEQ] = "'<<='",     [TK_SHREQ] = "'>>='",
        [TK_EQ] = "'=='",         [TK_NE] = "'!='",         [TK_LT] = "'<'",
        [TK_LE] = "'<='",         [TK_GT] = "'>'",          [TK_GE] = "'>='",
        [TK_FN] = "'fn'",         [TK_QFN] = "'qfn'",       [TK_ON] = "'on'",
        [TK_RETURN] = "'return'", [TK_IF] = "'if'",         [TK_ELIF] = "'elif'",
        [TK_ELSE] = "'else'",     [TK_WHILE] = "'while'",   [TK_FOR] = "'for'",
        [TK_IN] = "'in'",         [TK_BREAK] = "'break'",   [TK_CONTINUE] = "'continue'",
        [TK_AND] = "'and'",       [TK_OR] = "'or'",         [TK_NOT] = "'not'",
        [TK_TRUE] = "'true'",     [TK_FALSE] = "'false'",   [TK_NIL] = "'nil'",
        [TK_IMPORT] = "'import'", [TK_GLOBAL] = "'global'", [TK_TRY] = "'try'",
        [TK_CATCH] = "'catch'",
    };
    return k < TK_NKINDS && names[k] ? names[k] : "token";
}

static Token make(Lexer *lx, TokKind k, const char *start)
{
    /* a token lies inside the text, on or after the start of the line it starts on */
    qh_assert(lx->src <= start && start <= lx->p && lx->p <= lx->end);
    qh_assert(lx->tok_line_start <= start && lx->tok_line >= 1);
    Token t;
    memset(&t, 0, sizeof t);
    t.kind = k;
    t.start = start;
    t.len = (size_t)(lx->p - start);
    t.line = lx->tok_line;
    t.col = (int)(start - lx->tok_line_start) + 1;
    return t;
}

static Token error_at(Lexer *lx, const char *start, const char *msg)
{
    Token t = make(lx, TK_ERROR, start);
    t.str = xstrdup(msg);
    return t;
}

static void put_utf8(char *o, size_t *n, unsigned long cp)
{
    if (cp < 0x80)
        o[(*n)++] = (char)cp;
    else if (cp < 0x800) {
        o[(*n)++] = (char)(0xc0 | (cp >> 6));
        o[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        o[(*n)++] = (char)(0xe0 | (cp >> 12));
        o[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else {
        o[(*n)++] = (char)(0xf0 | (cp >> 18));
        o[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
        o[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[(*n)++] = (char)(0x80 | (cp & 0x3f));
    }
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* string -> '"' chars '"' | "'" chars "'" with the escapes of §2 */
static Token lex_string(Lexer *lx, const char *start)
{
    char q = *lx->p++;
    size_t cap = 32, n = 0;
    char *o = xmalloc(cap);
    for (;;) {
        if (n + 8 > cap) {
            cap *= 2;
            o = xrealloc(o, cap);
        }
        if (lx->p >= lx->end || *lx->p == '\n') {
            free(o);
            return error_at(lx, start, "unterminated string");
        }
        char c = *lx->p++;
        if (c == q) break;
        if (c != '\\') {
            o[n++] = c;
            continue;
        }
        if (lx->p >= lx->end) {
            free(o);
            return error_at(lx, start, "unterminated string");
        }
        char e = *lx->p++;
        switch (e) {
        case 'n': o[n++] = '\n'; break;
        case 't': o[n++] = '\t'; break;
        case 'r': o[n++] = '\r'; break;
        case '\\': o[n++] = '\\'; break;
        case '"': o[n++] = '"'; break;
        case '\'': o[n++] = '\''; break;
        case '0': o[n++] = '\0'; break;
        case '\n':
            lx->line++;
            lx->line_start = lx->p;
            break; /* line continuation */
        case '\r':
            if (lx->p < lx->end && *lx->p == '\n') {
                lx->p++;
                lx->line++;
                lx->line_start = lx->p;
                break;
            }
            free(o);
            return error_at(lx, lx->p - 2, "unknown escape sequence '\\' before a carriage return");
        case 'x': {
            int h1 = lx->p < lx->end ? hexval(lx->p[0]) : -1;
            int h2 = lx->p + 1 < lx->end ? hexval(lx->p[1]) : -1;
            if (h1 < 0 || h2 < 0) {
                free(o);
                return error_at(lx, lx->p - 2, "bad \\x escape: need two hex digits");
            }
            o[n++] = (char)(h1 * 16 + h2);
            lx->p += 2;
            break;
        }
        case 'u': {
            const char *es = lx->p - 2;
            if (lx->p >= lx->end || *lx->p != '{') {
                free(o);
                return error_at(lx, es, "bad \\u escape: expected \\u{HHHH}");
            }
            lx->p++;
            unsigned long cp = 0;
            int digits = 0;
            while (lx->p < lx->end && hexval(*lx->p) >= 0 && digits < 8) {
                cp = cp * 16 + (unsigned long)hexval(*lx->p++);
                digits++;
            }
            if (lx->p >= lx->end || *lx->p != '}' || digits == 0 || cp > 0x10ffff ||
                (cp >= 0xd800 && cp <= 0xdfff)) {
                free(o);
                return error_at(lx, es,
                                "bad \\u escape: expected \\u{HHHH} with a valid code point");
            }
            lx->p++;
            put_utf8(o, &n, cp);
            break;
        }
        default: {
            free(o);
            char msg[64];
            snprintf(msg, sizeof msg, "unknown escape sequence '\\%c'",
                     (e >= 32 && e < 127) ? e : '?');
            return error_at(lx, lx->p - 2, msg);
        }
        }
    }
    Token t = make(lx, TK_STR, start);
    o[n] = 0;
    t.str = o;
    t.strlen = n;
    return t;
}

/* number -> digits [. digits] [e [+-] digits] [j] | 0x hex | . digits ...; '_' separates digits */
static Token lex_number(Lexer *lx, const char *start)
{
    char buf[128];
    size_t n = 0;
    bool hex = false;
    if (lx->p[0] == '0' && lx->p + 1 < lx->end && (lx->p[1] == 'x' || lx->p[1] == 'X')) {
        lx->p += 2;
        hex = true;
        unsigned long long v = 0;
        int digits = 0;
        double dv = 0;
        while (lx->p < lx->end && (hexval(*lx->p) >= 0 || *lx->p == '_')) {
            if (*lx->p != '_') {
                v = v * 16 + (unsigned)hexval(*lx->p);
                dv = dv * 16 + hexval(*lx->p);
                digits++;
            }
            lx->p++;
        }
        if (!digits) return error_at(lx, start, "malformed hex number");
        Token t = make(lx, TK_NUM, start);
        if (digits > 16) {
            /* beyond 64 bits: strtod rounds a hex string correctly */
            char hb[160];
            size_t k = 0;
            hb[k++] = '0';
            hb[k++] = 'x';
            for (const char *q = start + 2; q < lx->p && k < sizeof hb - 1; q++)
                if (*q != '_') hb[k++] = *q;
            hb[k] = 0;
            t.num = k < sizeof hb - 1 ? strtod(hb, NULL) : dv;
        } else {
            t.num = (double)v; /* up to 64 bits: one correctly rounded conversion */
        }
        if (lx->p < lx->end && (isalnum((unsigned char)*lx->p) || *lx->p == '_'))
            return error_at(lx, start, "malformed number");
        return t;
    }
    (void)hex;
    bool bad = false;
#define TAKE()                  \
    do {                        \
        if (n < sizeof buf - 1) \
            buf[n++] = *lx->p;  \
        else                    \
            bad = true;         \
        lx->p++;                \
    } while (0)
    while (lx->p < lx->end && (isdigit((unsigned char)*lx->p) || *lx->p == '_')) {
        if (*lx->p == '_') {
            lx->p++;
            continue;
        }
        TAKE();
    }
    if (lx->p < lx->end && *lx->p == '.' && lx->p + 1 <= lx->end &&
        (lx->p + 1 == lx->end || isdigit((unsigned char)lx->p[1]) ||
         !isalpha((unsigned char)lx->p[1]))) {
        TAKE();
        while (lx->p < lx->end && (isdigit((unsigned char)*lx->p) || *lx->p == '_')) {
            if (*lx->p == '_') {
                lx->p++;
                continue;
            }
            TAKE();
        }
    }
    if (lx->p < lx->end && (*lx->p == 'e' || *lx->p == 'E')) {
        const char *save = lx->p;
        size_t nsave = n;
        TAKE();
        if (lx->p < lx->end && (*lx->p == '+' || *lx->p == '-')) TAKE();
        if (lx->p < lx->end && isdigit((unsigned char)*lx->p)) {
            while (lx->p < lx->end && isdigit((unsigned char)*lx->p)) TAKE();
        } else {
            lx->p = save;
            n = nsave;
            return error_at(lx, start, "malformed number: exponent has no digits");
        }
    }
#undef TAKE
    buf[n] = 0;
    if (bad) return error_at(lx, start, "number literal too long");
    TokKind k = TK_NUM;
    if (lx->p < lx->end && (*lx->p == 'j' || *lx->p == 'J')) {
        lx->p++;
        k = TK_IMAG;
    }
    if (lx->p < lx->end && (isalnum((unsigned char)*lx->p) || *lx->p == '_'))
        return error_at(lx, start, "malformed number");
    Token t = make(lx, k, start);
    t.num = strtod(buf, NULL);
    return t;
}

/* past blanks, comments and explicit line joins */
static void skip_blank(Lexer *lx)
{
    for (;;) {
        while (lx->p < lx->end &&
               (*lx->p == ' ' || *lx->p == '\t' || *lx->p == '\r' || *lx->p == '\f'))
            lx->p++;
        if (lx->p < lx->end && *lx->p == '#') {
            while (lx->p < lx->end && *lx->p != '\n') lx->p++;
            continue;
        }
        if (lx->p + 1 < lx->end && lx->p[0] == '\\' &&
            lx->p[1] == '\n') { /* explicit line joining */
            lx->p += 2;
            lx->line++;
            lx->line_start = lx->p;
            continue;
        }
        if (lx->p + 2 < lx->end && lx->p[0] == '\\' && lx->p[1] == '\r' && lx->p[2] == '\n') {
            lx->p += 3;
            lx->line++;
            lx->line_start = lx->p;
            continue;
        }
        break;
    }
}

/* a name or a keyword from start (a letter or '_') */
static Token lex_word(Lexer *lx, const char *start)
{
    while (lx->p < lx->end && (isalnum((unsigned char)*lx->p) || *lx->p == '_')) lx->p++;
    size_t n = (size_t)(lx->p - start);
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
        if (strlen(keywords[i].w) == n && memcmp(keywords[i].w, start, n) == 0)
            return make(lx, keywords[i].k, start);
    for (size_t i = 0; i < sizeof not_qh / sizeof not_qh[0]; i++)
        if (strlen(not_qh[i].w) == n && memcmp(not_qh[i].w, start, n) == 0) {
            char msg[200];
            snprintf(msg, sizeof msg, "'%s' is not part of qh: %s", not_qh[i].w, not_qh[i].hint);
            return error_at(lx, start, msg);
        }
    return make(lx, TK_NAME, start);
}

/* c at start is no token's: an error (a UTF-8 sequence skipped whole) */
static Token bad_char(Lexer *lx, const char *start, char c)
{
    char msg[64];
    unsigned char uc = (unsigned char)c;
    if (uc >= 0x80) {
        /* skip the whole UTF-8 sequence so the caret lands on its start */
        while (lx->p < lx->end && ((unsigned char)*lx->p & 0xc0) == 0x80) lx->p++;
        snprintf(msg, sizeof msg, "unexpected character outside a string");
    } else if (uc < 32 || uc == 127) {
        snprintf(msg, sizeof msg, "unexpected control character 0x%02x", uc);
    } else {
        snprintf(msg, sizeof msg, "unexpected character '%c'", c);
    }
    return error_at(lx, start, msg);
}

/* an operator or punctuation mark c at start; a bad character is an error */
static Token lex_operator(Lexer *lx, const char *start, char c)
{
    lx->p++;
    char d = lx->p < lx->end ? *lx->p : 0;
#define TWO(ch, k2, k1)             \
    if (d == (ch)) {                \
        lx->p++;                    \
        return make(lx, k2, start); \
    }                               \
    return make(lx, k1, start)
    /* a third character after a two-character operator: '**=', '//=', '<<=', '>>=' */
#define TWO2(ch, k3, k2)                     \
    if (lx->p < lx->end && *lx->p == (ch)) { \
        lx->p++;                             \
        return make(lx, k3, start);          \
    }                                        \
    return make(lx, k2, start)
    switch (c) {
    case '(': return make(lx, TK_LPAREN, start);
    case ')': return make(lx, TK_RPAREN, start);
    case '[': return make(lx, TK_LBRACK, start);
    case ']': return make(lx, TK_RBRACK, start);
    case '{': return make(lx, TK_LBRACE, start);
    case '}': return make(lx, TK_RBRACE, start);
    case ',': return make(lx, TK_COMMA, start);
    case '.': return make(lx, TK_DOT, start);
    case ':': return make(lx, TK_COLON, start);
    case ';': return make(lx, TK_SEMI, start);
    case '~': return make(lx, TK_TILDE, start);
    case '@': TWO('=', TK_ATEQ, TK_AT);
    case '%': TWO('=', TK_PERCENTEQ, TK_PERCENT);
    case '^': TWO('=', TK_CARETEQ, TK_CARET);
    case '&':
        if (d == '&') {
            lx->p++;
            return error_at(lx, start, "unexpected '&&' (use 'and')");
        }
        TWO('=', TK_AMPEQ, TK_AMP);
    case '|':
        if (d == '|') {
            lx->p++;
            return error_at(lx, start, "unexpected '||' (use 'or')");
        }
        TWO('=', TK_PIPEEQ, TK_PIPE);
    case '+': TWO('=', TK_PLUSEQ, TK_PLUS);
    case '-': TWO('=', TK_MINUSEQ, TK_MINUS);
    case '*':
        if (d == '*') {
            lx->p++;
            TWO2('=', TK_POWEQ, TK_POW);
        }
        TWO('=', TK_STAREQ, TK_STAR);
    case '/':
        if (d == '/') {
            lx->p++;
            TWO2('=', TK_DSLASHEQ, TK_DSLASH);
        }
        TWO('=', TK_SLASHEQ, TK_SLASH);
    case '=': TWO('=', TK_EQ, TK_ASSIGN);
    case '<':
        if (d == '<') {
            lx->p++;
            TWO2('=', TK_SHLEQ, TK_SHL);
        }
        TWO('=', TK_LE, TK_LT);
    case '>':
        if (d == '>') {
            lx->p++;
            TWO2('=', TK_SHREQ, TK_SHR);
        }
        TWO('=', TK_GE, TK_GT);
    case '!':
        if (d == '=') {
            lx->p++;
            return make(lx, TK_NE, start);
        }
        return error_at(lx, start, "unexpected character '!' (use 'not')");
    }
#undef TWO
#undef TWO2
    return bad_char(lx, start, c);
}

Token lex_next(Lexer *lx)
{
    skip_blank(lx);
    const char *start = lx->p;
    qh_assert(lx->line_start <= lx->p && lx->line >= 1);
    lx->tok_line = lx->line;
    lx->tok_line_start = lx->line_start;
    if (lx->p >= lx->end) return make(lx, TK_EOF, start);
    char c = *lx->p;
    if (c == '\n') {
        Token t = make(lx, TK_NEWLINE, start);
        lx->p++;
        t.len = 1;
        lx->line++;
        lx->line_start = lx->p;
        return t;
    }
    if (isalpha((unsigned char)c) || c == '_') return lex_word(lx, start);
    if (isdigit((unsigned char)c) ||
        (c == '.' && lx->p + 1 < lx->end && isdigit((unsigned char)lx->p[1])))
        return lex_number(lx, start);
    if (c == '"' || c == '\'') return lex_string(lx, start);
    return lex_operator(lx, start, c);
}
