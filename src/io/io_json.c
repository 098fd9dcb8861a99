/* io_json.c — JSON text to a tree and a tree to text (Python's json style).
 *
 * A recursive-descent parser with a nesting limit (no stack overflow on
 * hostile input) that reports line and column; a dumper that writes what
 * json.dumps writes (separators, indentation, NaN/Infinity), numbers in
 * qh's own shortest form. Must not know about the language's values.
 */
#include "io.h"
#include "qh_assert.h"
#include "io_impl.h"
#include "numfmt.h"
#include "utf8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 512

/* ---- parsing -------------------------------------------------------------- */

typedef struct P {
    const char *s, *e, *p;
    char *err;
    size_t errlen;
    int failed;
} P;

/* Why: every error points at the line and column where reading stopped. */
static void fail(P *p, const char *what)
{
    if (p->failed) return;
    p->failed = 1;
    size_t line = 1, col = 1;
    for (const char *q = p->s; q < p->p && q < p->e; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else if (((unsigned char)*q & 0xC0) != 0x80)
            col++;
    }
    qh_errf(p->err, p->errlen, "line %zu, column %zu: %s", line, col, what);
}

static void ws(P *p)
{
    while (p->p < p->e && (*p->p == ' ' || *p->p == '\t' || *p->p == '\n' || *p->p == '\r')) p->p++;
}

static int lit(P *p, const char *w)
{
    size_t l = strlen(w);
    if ((size_t)(p->e - p->p) >= l && memcmp(p->p, w, l) == 0) {
        p->p += l;
        return 1;
    }
    return 0;
}

typedef struct Buf {
    char *d;
    size_t n, cap;
    int oom;
    size_t bad; /* dumping: 1 + the offset of the first invalid UTF-8 byte of a string */
    unsigned char badbyte;
} Buf;

static void put(Buf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 64;
        while (c < b->n + n + 1) c *= 2;
        char *d = realloc(b->d, c);
        if (!d) {
            b->oom = 1;
            return;
        }
        b->d = d;
        b->cap = c;
    }
    qh_assert(b->n + n < b->cap);
    memcpy(b->d + b->n, s, n);
    b->n += n;
    b->d[b->n] = 0;
}

static void put_utf8(Buf *b, unsigned cp)
{
    char u[4];
    put(b, u, utf8_put(cp, u));
}

/* The length of the valid UTF-8 sequence at s (n bytes left), or 0: no
   overlong forms, no surrogates (ED A0..BF), nothing past U+10FFFF. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t k = c < 0x80                 ? 1
               : c >= 0xC2 && c < 0xE0  ? 2
               : c >= 0xE0 && c < 0xF0  ? 3
               : c >= 0xF0 && c <= 0xF4 ? 4
                                        : 0;
    if (k == 0 || k > n) return 0;
    for (size_t j = 1; j < k; j++)
        if ((s[j] & 0xC0) != 0x80) return 0;
    if (k == 3 && ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0))) return 0;
    if (k == 4 && ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90))) return 0;
    return k;
}

static int hex4(P *p, unsigned *v)
{
    if (p->e - p->p < 4) return -1;
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) return -1;
        *v = *v * 16 + (unsigned)d;
    }
    p->p += 4;
    return 0;
}

/* A \\u escape at p->p (after the 'u'), a surrogate pair as one code
 * point, into b; -1 (failed) if it is bad or a lone surrogate. */
static int u_escape(P *p, Buf *b)
{
    unsigned cp;
    if (hex4(p, &cp)) {
        fail(p, "bad \\u escape");
        return -1;
    }
    if (cp >= 0xD800 && cp < 0xDC00 && p->e - p->p >= 6 && p->p[0] == '\\' && p->p[1] == 'u') {
        const char *save = p->p;
        unsigned lo;
        p->p += 2;
        if (!hex4(p, &lo) && lo >= 0xDC00 && lo < 0xE000)
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        else
            p->p = save;
    }
    if (cp >= 0xD800 && cp < 0xE000) {
        /* Python keeps a lone surrogate in its str; a qh string is UTF-8 and
           cannot hold one: refused rather than written as invalid UTF-8 */
        char m[80];
        snprintf(m, sizeof m, "lone surrogate \\u%04x (qh's strings are UTF-8)", cp);
        p->p -= 6;
        fail(p, m);
        return -1;
    }
    qh_assert(cp < 0x110000);
    put_utf8(b, cp);
    return 0;
}

/* A string at p->p (after its opening quote is checked). */
static int string(P *p, char **out, size_t *len)
{
    p->p++;
    Buf b = { 0 };
    put(&b, "", 0);
    for (;;) {
        if (p->p >= p->e) {
            fail(p, "unterminated string");
            break;
        }
        const char *a = p->p;
        int badutf8 = 0;
        while (p->p < p->e && *p->p != '"' && *p->p != '\\' && (unsigned char)*p->p >= 0x20) {
            if ((unsigned char)*p->p < 0x80) {
                p->p++;
                continue;
            }
            size_t k = utf8_seq((const unsigned char *)p->p, (size_t)(p->e - p->p));
            if (!k) {
                badutf8 = 1;
                break;
            }
            p->p += k;
        }
        put(&b, a, (size_t)(p->p - a));
        if (badutf8) { /* Python decodes the text first and refuses it */
            char m[64];
            snprintf(m, sizeof m, "invalid UTF-8 (byte 0x%02x)", (unsigned char)*p->p);
            fail(p, m);
            break;
        }
        if (p->p >= p->e) {
            fail(p, "unterminated string");
            break;
        }
        char c = *p->p;
        if (c == '"') {
            p->p++;
            break;
        }
        if (c != '\\') {
            fail(p, "control character in a string");
            break;
        }
        p->p++;
        if (p->p >= p->e) {
            fail(p, "unterminated string");
            break;
        }
        char x = *p->p++;
        const char *m = NULL;
        switch (x) {
        case '"': m = "\""; break;
        case '\\': m = "\\"; break;
        case '/': m = "/"; break;
        case 'b': m = "\b"; break;
        case 'f': m = "\f"; break;
        case 'n': m = "\n"; break;
        case 'r': m = "\r"; break;
        case 't': m = "\t"; break;
        case 'u':
            if (u_escape(p, &b)) goto out;
            continue;
        default:
            p->p--;
            fail(p, "bad escape in a string");
            goto out;
        }
        put(&b, m, 1);
    }
out:
    if (p->failed || b.oom) {
        if (b.oom) fail(p, "out of memory");
        free(b.d);
        return -1;
    }
    *out = b.d;
    *len = b.n;
    return 0;
}

static void free_node(IoJson *j);

static int value(P *p, IoJson *j, int depth);

static int number(P *p, IoJson *j)
{
    const char *a = p->p;
    if (p->p < p->e && *p->p == '-') p->p++;
    if (lit(p, "Infinity")) {
        j->kind = IOJ_NUMBER;
        j->num = *a == '-' ? -INFINITY : INFINITY;
        return 0;
    }
    if (p->p >= p->e || *p->p < '0' || *p->p > '9') {
        fail(p, "expected a value");
        return -1;
    }
    if (*p->p == '0')
        p->p++;
    else
        while (p->p < p->e && *p->p >= '0' && *p->p <= '9') p->p++;
    if (p->p < p->e && *p->p == '.') {
        p->p++;
        if (p->p >= p->e || *p->p < '0' || *p->p > '9') {
            fail(p, "expected a digit after '.'");
            return -1;
        }
        while (p->p < p->e && *p->p >= '0' && *p->p <= '9') p->p++;
    }
    if (p->p < p->e && (*p->p == 'e' || *p->p == 'E')) {
        p->p++;
        if (p->p < p->e && (*p->p == '+' || *p->p == '-')) p->p++;
        if (p->p >= p->e || *p->p < '0' || *p->p > '9') {
            fail(p, "expected a digit in the exponent");
            return -1;
        }
        while (p->p < p->e && *p->p >= '0' && *p->p <= '9') p->p++;
    }
    char tmp[512];
    size_t l = (size_t)(p->p - a);
    char *big = l < sizeof tmp ? tmp : malloc(l + 1);
    if (!big) {
        fail(p, "out of memory");
        return -1;
    }
    memcpy(big, a, l);
    big[l] = 0;
    j->kind = IOJ_NUMBER;
    j->num = strtod(big, NULL);
    if (big != tmp) free(big);
    return 0;
}

/* Why: arrays and objects share the growth and the separators. */
static int container(P *p, IoJson *j, int depth, int obj)
{
    if (depth >= JSON_MAX_DEPTH) {
        fail(p, "nested too deeply");
        return -1;
    }
    p->p++;
    j->kind = obj ? IOJ_OBJECT : IOJ_ARRAY;
    size_t cap = 0;
    ws(p);
    if (p->p < p->e && *p->p == (obj ? '}' : ']')) {
        p->p++;
        return 0;
    }
    for (;;) {
        if (j->n == cap) {
            size_t nc = cap ? 2 * cap : 4;
            IoJson *ni = realloc(j->items, nc * sizeof *ni);
            if (ni) j->items = ni;
            char **nk = obj ? realloc(j->keys, nc * sizeof *nk) : NULL;
            if (nk) j->keys = nk;
            size_t *nl = obj ? realloc(j->keylens, nc * sizeof *nl) : NULL;
            if (nl) j->keylens = nl;
            if (!ni || (obj && (!nk || !nl))) {
                fail(p, "out of memory");
                return -1;
            }
            cap = nc;
        }
        qh_assert(j->n < cap && p->p <= p->e); /* a slot for this element */
        ws(p);
        if (obj) {
            if (p->p >= p->e || *p->p != '"') {
                fail(p, "expected a string key");
                return -1;
            }
            if (string(p, &j->keys[j->n], &j->keylens[j->n])) return -1;
            ws(p);
            if (p->p >= p->e || *p->p != ':') {
                free(j->keys[j->n]);
                fail(p, "expected ':'");
                return -1;
            }
            p->p++;
            ws(p);
        }
        memset(&j->items[j->n], 0, sizeof(IoJson));
        if (value(p, &j->items[j->n], depth + 1)) {
            free_node(&j->items[j->n]);
            if (obj) free(j->keys[j->n]);
            return -1;
        }
        j->n++;
        ws(p);
        if (p->p < p->e && *p->p == ',') {
            p->p++;
            continue;
        }
        if (p->p < p->e && *p->p == (obj ? '}' : ']')) {
            p->p++;
            return 0;
        }
        fail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        return -1;
    }
}

static int value(P *p, IoJson *j, int depth)
{
    ws(p);
    if (p->p >= p->e) {
        fail(p, "unexpected end of input");
        return -1;
    }
    switch (*p->p) {
    case '{': return container(p, j, depth, 1);
    case '[': return container(p, j, depth, 0);
    case '"': j->kind = IOJ_STRING; return string(p, &j->str, &j->len);
    case 't':
        if (lit(p, "true")) {
            j->kind = IOJ_BOOL;
            j->b = 1;
            return 0;
        }
        break;
    case 'f':
        if (lit(p, "false")) {
            j->kind = IOJ_BOOL;
            j->b = 0;
            return 0;
        }
        break;
    case 'n':
        if (lit(p, "null")) {
            j->kind = IOJ_NULL;
            return 0;
        }
        break;
    case 'N':
        if (lit(p, "NaN")) {
            j->kind = IOJ_NUMBER;
            j->num = NAN;
            return 0;
        }
        break;
    default: return number(p, j);
    }
    fail(p, "expected a value");
    return -1;
}

static void free_node(IoJson *j)
{
    if (!j) return;
    if (j->kind == IOJ_STRING) free(j->str);
    if (j->kind == IOJ_ARRAY || j->kind == IOJ_OBJECT) {
        qh_assert(j->n == 0 || j->items);
        qh_assert(j->kind == IOJ_ARRAY || j->n == 0 || (j->keys && j->keylens));
        for (size_t i = 0; i < j->n; i++) {
            free_node(&j->items[i]);
            if (j->kind == IOJ_OBJECT) free(j->keys[i]);
        }
        free(j->items);
        free(j->keys);
        free(j->keylens);
    }
}

void io_json_free(IoJson *j)
{
    free_node(j);
    free(j);
}

IoJson *io_json_parse(const char *text, size_t len, char *err, size_t errlen)
{
    P p = { text, text + len, text, err, errlen, 0 };
    IoJson *j = calloc(1, sizeof *j);
    if (!j) {
        qh_errf(err, errlen, "out of memory");
        return NULL;
    }
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) p.p += 3; /* a UTF-8 BOM */
    if (value(&p, j, 0) == 0) {
        ws(&p);
        if (p.p < p.e) fail(&p, "extra data after the value");
    }
    if (p.failed) {
        io_json_free(j);
        return NULL;
    }
    return j;
}

/* ---- building and dumping ------------------------------------------------- */

IoJson io_json_null(void)
{
    IoJson j;
    memset(&j, 0, sizeof j);
    j.kind = IOJ_NULL;
    return j;
}
IoJson io_json_bool(int b)
{
    IoJson j = io_json_null();
    j.kind = IOJ_BOOL;
    j.b = b != 0;
    return j;
}
IoJson io_json_number(double x)
{
    IoJson j = io_json_null();
    j.kind = IOJ_NUMBER;
    j.num = x;
    return j;
}

IoJson io_json_string(const char *s, size_t len)
{
    IoJson j = io_json_null();
    j.kind = IOJ_STRING;
    j.str = (char *)s;
    j.len = len;
    return j;
}

static void dump_string(Buf *b, const char *s, size_t n)
{
    put(b, "\"", 1);
    size_t a = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[8];
        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\r')
            esc = "\\r";
        else if (c == '\t')
            esc = "\\t";
        else if (c == '\b')
            esc = "\\b";
        else if (c == '\f')
            esc = "\\f";
        else if (c < 0x20 || c == 0x7f) {
            snprintf(u, sizeof u, "\\u%04x", c);
            esc = u;
        } else if (c >= 0x80) {
            size_t k = utf8_seq((const unsigned char *)s + i, n - i);
            if (k) {
                i += k - 1;
                continue;
            }
            if (c == 0xED && n - i >= 3 && ((unsigned char)s[i + 1] & 0xE0) == 0xA0 &&
                ((unsigned char)s[i + 2] & 0xC0) == 0x80) {
                /* a surrogate encoded as UTF-8 bytes: the escape Python writes */
                unsigned cp =
                    0xD000u | ((unsigned)(s[i + 1] & 0x3F) << 6) | (unsigned)(s[i + 2] & 0x3F);
                snprintf(u, sizeof u, "\\u%04x", cp);
                put(b, s + a, i - a);
                put(b, u, strlen(u));
                i += 2;
                a = i + 1;
                continue;
            }
            if (!b->bad) {
                b->bad = i + 1;
                b->badbyte = c;
            }
            continue;
        }
        if (esc) {
            put(b, s + a, i - a);
            put(b, esc, strlen(esc));
            a = i + 1;
        }
    }
    put(b, s + a, n - a);
    put(b, "\"", 1);
}

static void newline(Buf *b, int indent, int depth)
{
    put(b, "\n", 1);
    for (int i = 0; i < indent * depth; i++) put(b, " ", 1);
}

static int dump(Buf *b, const IoJson *j, int indent, int depth)
{
    if (depth > JSON_MAX_DEPTH) return -1;
    switch (j->kind) {
    case IOJ_NULL: put(b, "null", 4); return 0;
    case IOJ_BOOL: put(b, j->b ? "true" : "false", j->b ? 4 : 5); return 0;
    case IOJ_NUMBER: {
        if (isnan(j->num)) {
            put(b, "NaN", 3);
            return 0;
        }
        if (isinf(j->num)) {
            put(b, j->num < 0 ? "-Infinity" : "Infinity", j->num < 0 ? 9 : 8);
            return 0;
        }
        if (j->num == 0 && signbit(j->num)) { /* Python's json writes -0.0; qh prints 0 */
            put(b, "-0.0", 4);
            return 0;
        }
        char t[NUMFMT_BUF];
        int l = numfmt_double(t, j->num);
        put(b, t, (size_t)l);
        return 0;
    }
    case IOJ_STRING: dump_string(b, j->str ? j->str : "", j->len); return 0;
    case IOJ_ARRAY:
    case IOJ_OBJECT: {
        int obj = j->kind == IOJ_OBJECT;
        put(b, obj ? "{" : "[", 1);
        for (size_t i = 0; i < j->n; i++) {
            if (i) put(b, indent >= 0 ? "," : ", ", indent >= 0 ? 1 : 2);
            if (indent >= 0) newline(b, indent, depth + 1);
            if (obj) {
                dump_string(b, j->keys[i], j->keylens ? j->keylens[i] : strlen(j->keys[i]));
                put(b, ": ", 2);
            }
            if (dump(b, &j->items[i], indent, depth + 1)) return -1;
        }
        if (indent >= 0 && j->n) newline(b, indent, depth);
        put(b, obj ? "}" : "]", 1);
        return 0;
    }
    }
    return -1;
}

char *io_json_dump(const IoJson *j, int indent, size_t *len, char *err, size_t errlen)
{
    Buf b = { 0 };
    put(&b, "", 0);
    if (!j || dump(&b, j, indent, 0) != 0) {
        free(b.d);
        qh_errf(err, errlen, "nested deeper than %d", JSON_MAX_DEPTH);
        return NULL;
    }
    if (b.oom) {
        free(b.d);
        qh_errf(err, errlen, "out of memory");
        return NULL;
    }
    if (b.bad) { /* JSON text is Unicode: a string of other bytes has no JSON form */
        free(b.d);
        qh_errf(err, errlen, "a string is not valid UTF-8 (byte 0x%02x at offset %zu)", b.badbyte,
                b.bad - 1);
        return NULL;
    }
    if (len) *len = b.n;
    return b.d;
}
