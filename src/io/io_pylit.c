/* io_pylit.c — a .npy header read as the Python literal it is.
 *
 * NumPy writes the header of a .npy file as the repr of a dict and reads it
 * back with ast.literal_eval (numpy.lib.format._read_array_header): a
 * repeated key keeps its last value, the keys must be exactly 'descr',
 * 'fortran_order' and 'shape', shape a tuple of ints, fortran_order a bool.
 * This file tokenizes and parses the literal the same way (strings with
 * every prefix, escape and implicit concatenation, ints in every base with
 * underscores, Python 2's 'L' suffix in versions 1.0 and 2.0, floats,
 * complex numbers, tuples, lists, dicts, sets, True/False/None, comments),
 * with a nesting limit, then checks it as NumPy does. What it cannot read
 * exactly is refused, never read differently. Must not know about values.
 */
#include "io.h"
#include "io_impl.h"
#include "qh_assert.h"
#include "utf8.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum PlKind {
    PL_STR,
    PL_BYTES,
    PL_INT,
    PL_BOOL,
    PL_NONE,
    PL_FLOAT,
    PL_COMPLEX,
    PL_TUPLE,
    PL_LIST,
    PL_DICT,
    PL_SET
} PlKind;

typedef struct PlVal PlVal;
struct PlVal {
    PlKind k;
    int neg;      /* int: negative */
    int big;      /* int: magnitude beyond 64 bits */
    uint64_t mag; /* int: magnitude; bool: 0/1 */
    char *s;      /* str (UTF-8), bytes */
    size_t len;   /* its length */
    size_t n;     /* tuple, list, set: items; dict: pairs */
    PlVal *items; /* dict: key, value, key, value ... */
};

typedef struct Lx {
    const unsigned char *s, *p, *e;
    int latin1; /* versions 1.0 and 2.0: each byte is a code point */
    int drop_l; /* Python 2's 'L' after a number (numpy's _filter_header) */
    char *err;
    size_t errlen;
    int failed;
} Lx;

#define PL_MAX_DEPTH 100

static int lfail(Lx *x, const char *what)
{
    if (!x->failed) {
        x->failed = 1;
        qh_errf(x->err, x->errlen, "%s at byte %zu of the header", what, (size_t)(x->p - x->s));
    }
    return -1;
}

static void pl_free(PlVal *v)
{
    if (!v) return;
    free(v->s);
    size_t m = v->k == PL_DICT ? 2 * v->n : v->n;
    for (size_t i = 0; i < m; i++) pl_free(&v->items[i]);
    free(v->items);
    v->s = NULL;
    v->items = NULL;
    v->n = 0;
}

/* Skips blanks, comments and backslash-newline continuations; newlines
   count as blanks (inside brackets Python ignores them; a header is one
   expression, and a newline outside brackets only ends it). */
static void skip(Lx *x)
{
    for (;;) {
        while (x->p < x->e &&
               (*x->p == ' ' || *x->p == '\t' || *x->p == '\f' || *x->p == '\n' || *x->p == '\r'))
            x->p++;
        if (x->p < x->e && *x->p == '#') {
            while (x->p < x->e && *x->p != '\n' && *x->p != '\r') x->p++;
            continue;
        }
        if (x->p + 1 < x->e && *x->p == '\\' && (x->p[1] == '\n' || x->p[1] == '\r')) {
            x->p += 2;
            if (x->p[-1] == '\r' && x->p < x->e && *x->p == '\n') x->p++;
            if (x->p == x->e) lfail(x, "a line continuation at the end"); /* Python's EOF error */
            continue;
        }
        break;
    }
}

static int idch(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c >= 0x80;
}

typedef struct SB {
    char *d;
    size_t n, cap;
} SB;

static int sb_put(SB *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 32;
        while (c < b->n + n + 1) c *= 2;
        char *d = realloc(b->d, c);
        if (!d) return -1;
        b->d = d;
        b->cap = c;
    }
    memcpy(b->d + b->n, s, n);
    b->n += n;
    b->d[b->n] = 0;
    return 0;
}

static int sb_cp(SB *b, uint32_t cp)
{
    char u[4];
    return sb_put(b, u, utf8_put(cp, u));
}

static int hexv(unsigned char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* The character a one-letter escape (\\n, \\t, \\' ...) stands for, or -1. */
static int simple_escape(unsigned char d)
{
    switch (d) {
    case '\\': return '\\';
    case '\'': return '\'';
    case '"': return '"';
    case 'a': return 7;
    case 'b': return 8;
    case 'f': return 12;
    case 'n': return 10;
    case 'r': return 13;
    case 't': return 9;
    case 'v': return 11;
    default: return -1;
    }
}

/* The nd hex digits of a \\u (4) or \\U (8) escape at x->p into *cp. */
static int u_escape(Lx *x, int nd, uint32_t *cp)
{
    if (x->e - x->p < nd) return lfail(x, "a bad \\u escape");
    for (int i = 0; i < nd; i++) {
        int h = hexv(x->p[i]);
        if (h < 0) return lfail(x, "a bad \\u escape");
        *cp = *cp * 16 + (uint32_t)h;
    }
    x->p += nd;
    if (*cp > 0x10FFFF) return lfail(x, "a \\U escape beyond U+10FFFF");
    if (*cp >= 0xD800 && *cp < 0xE000) return lfail(x, "a surrogate \\u escape (not read)");
    return 0;
}

/* One string literal at x->p (its prefix already read: raw, bytes), the
   text appended to b (a str as UTF-8, bytes as they are). */
static int str_body(Lx *x, SB *b, int raw, int bytes)
{
    unsigned char q = *x->p;
    int triple = x->e - x->p >= 3 && x->p[1] == q && x->p[2] == q;
    x->p += triple ? 3 : 1;
    for (;;) {
        if (x->p >= x->e) return lfail(x, "unterminated string");
        unsigned char c = *x->p;
        if (c == q && (!triple || (x->e - x->p >= 3 && x->p[1] == q && x->p[2] == q))) {
            x->p += triple ? 3 : 1;
            return 0;
        }
        if ((c == '\n' || c == '\r') && !triple) return lfail(x, "unterminated string");
        if (c != '\\') {
            if (bytes && c >= 0x80) return lfail(x, "a bytes literal with a non-ASCII character");
            int r;
            if (c >= 0x80 && x->latin1)
                r = sb_cp(b, c);
            else
                r = sb_put(b, (const char *)x->p, 1);
            if (r) return lfail(x, "out of memory");
            x->p++;
            continue;
        }
        if (x->p + 1 >= x->e) return lfail(x, "unterminated string");
        unsigned char d = x->p[1];
        if (raw) { /* a raw string keeps the backslash; it still escapes the quote */
            if (sb_put(b, (const char *)x->p, 2)) return lfail(x, "out of memory");
            x->p += 2;
            continue;
        }
        x->p += 2;
        uint32_t cp = 0;
        int ok = 1, lit = simple_escape(d);
        if (lit >= 0) {
            char ch = (char)lit;
            if (sb_put(b, &ch, 1)) return lfail(x, "out of memory");
            continue;
        }
        switch (d) {
        case '\n': continue;
        case '\r':
            if (x->p < x->e && *x->p == '\n') x->p++;
            continue;
        case 'x': {
            if (x->e - x->p < 2 || hexv(x->p[0]) < 0 || hexv(x->p[1]) < 0)
                return lfail(x, "a bad \\x escape");
            cp = (uint32_t)(hexv(x->p[0]) * 16 + hexv(x->p[1]));
            x->p += 2;
            if (bytes) {
                char ch = (char)cp;
                if (sb_put(b, &ch, 1)) return lfail(x, "out of memory");
                continue;
            }
            break;
        }
        case 'u':
        case 'U': {
            if (bytes) { /* not an escape in bytes: kept */
                if (sb_put(b, (const char *)x->p - 2, 2)) return lfail(x, "out of memory");
                continue;
            }
            if (u_escape(x, d == 'u' ? 4 : 8, &cp)) return -1;
            break;
        }
        case 'N': return lfail(x, "a \\N{...} escape (not read)");
        default:
            if (d >= '0' && d <= '7') {
                cp = (uint32_t)(d - '0');
                for (int i = 0; i < 2 && x->p < x->e && *x->p >= '0' && *x->p <= '7'; i++)
                    cp = cp * 8 + (uint32_t)(*x->p++ - '0');
                if (bytes) {
                    char ch = (char)(cp & 255);
                    if (sb_put(b, &ch, 1)) return lfail(x, "out of memory");
                    continue;
                }
                break;
            }
            ok = 0; /* an unknown escape: Python keeps the backslash */
        }
        if (!ok) {
            x->p -= 2;
            if (x->latin1 || x->p[1] < 0x80) {
                if (sb_put(b, "\\", 1) ||
                    (x->p[1] >= 0x80 ? sb_cp(b, x->p[1]) : sb_put(b, (const char *)x->p + 1, 1)))
                    return lfail(x, "out of memory");
                x->p += 2;
            } else { /* a UTF-8 character after the backslash: kept whole by the loop */
                if (sb_put(b, "\\", 1)) return lfail(x, "out of memory");
                x->p += 1;
            }
            continue;
        }
        qh_assert(cp <= 0x10FFFF);
        if (sb_cp(b, cp)) return lfail(x, "out of memory");
    }
}

/* A string prefix at x->p (r, u, b, rb, br in any case), or 0. */
static int str_prefix(Lx *x, int *raw, int *bytes)
{
    const unsigned char *p = x->p;
    int r = 0, b = 0, u = 0;
    while (p < x->e && p - x->p < 2) {
        unsigned char c = *p | 0x20;
        if (c == 'r' && !r && !u)
            r = 1;
        else if (c == 'b' && !b && !u)
            b = 1;
        else if (c == 'u' && !r && !b && p == x->p)
            u = 1;
        else
            break;
        p++;
    }
    if (p < x->e && (*p == '\'' || *p == '"') && (r || b || u || p == x->p)) {
        *raw = r;
        *bytes = b;
        x->p = p;
        return 1;
    }
    return 0;
}

/* A run of adjacent string literals: Python concatenates them. */
static int strings(Lx *x, PlVal *v)
{
    SB b = { 0 };
    int kind = -1;
    for (;;) {
        int raw = 0, bytes = 0;
        const unsigned char *save = x->p;
        if (!str_prefix(x, &raw, &bytes)) {
            x->p = save;
            break;
        }
        if (kind >= 0 && kind != bytes) {
            free(b.d);
            return lfail(x, "bytes and str literals concatenated");
        }
        kind = bytes;
        if (str_body(x, &b, raw, bytes)) {
            free(b.d);
            return -1;
        }
        skip(x);
    }
    if (!b.d && sb_put(&b, "", 0)) return lfail(x, "out of memory");
    v->k = kind == 1 ? PL_BYTES : PL_STR;
    v->s = b.d;
    v->len = b.n;
    return 0;
}

/* A number at x->p: an int (any base, underscores), a float or an imaginary. */
static int number(Lx *x, PlVal *v)
{
    int base = 10;
    if (*x->p == '0' && x->p + 1 < x->e) {
        unsigned char c = x->p[1] | 0x20;
        base = c == 'x' ? 16 : c == 'o' ? 8 : c == 'b' ? 2 : 10;
        if (base != 10) x->p += 2;
    }
    uint64_t mag = 0;
    int big = 0, digits = 0, last_us = 1, nonzero_lead = 0;
    for (; x->p < x->e; x->p++) {
        unsigned char c = *x->p;
        if (c == '_') {
            if (last_us) return lfail(x, "a bad number");
            last_us = 1;
            continue;
        }
        int d = hexv(c);
        if (d < 0 || d >= base) break;
        if (digits == 0 && base == 10 && d != 0) nonzero_lead = 1;
        if (mag > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) big = 1;
        mag = mag * (uint64_t)base + (uint64_t)d;
        digits++;
        last_us = 0;
    }
    if (digits == 0 && !(base == 10 && x->p < x->e && *x->p == '.'))
        return lfail(x, "a bad number");
    if (last_us && digits) return lfail(x, "a bad number");
    if (base == 10 && x->p < x->e &&
        (*x->p == '.' || (*x->p | 0x20) == 'e' || (*x->p | 0x20) == 'j')) {
        if (*x->p == '.') {
            x->p++;
            last_us = 1;
            while (x->p < x->e && ((*x->p >= '0' && *x->p <= '9') || (*x->p == '_' && !last_us))) {
                last_us = *x->p == '_';
                digits += *x->p != '_';
                x->p++;
            }
            if (digits == 0 || (last_us && x->p[-1] == '_')) return lfail(x, "a bad number");
        }
        if (x->p < x->e && (*x->p | 0x20) == 'e') {
            x->p++;
            if (x->p < x->e && (*x->p == '+' || *x->p == '-')) x->p++;
            if (x->p >= x->e || *x->p < '0' || *x->p > '9') return lfail(x, "a bad number");
            while (x->p < x->e && ((*x->p >= '0' && *x->p <= '9') || *x->p == '_')) x->p++;
        }
        v->k = PL_FLOAT;
        if (x->p < x->e && (*x->p | 0x20) == 'j') {
            x->p++;
            v->k = PL_COMPLEX;
        }
    } else {
        /* Python 3 refuses leading zeros in a nonzero decimal: 007 */
        if (base == 10 && !nonzero_lead && mag != 0) return lfail(x, "a bad number");
        v->k = PL_INT;
        v->mag = mag;
        v->big = big;
    }
    if (x->p < x->e && idch(*x->p)) {
        if (x->drop_l && *x->p == 'L' && v->k == PL_INT && (x->p + 1 >= x->e || !idch(x->p[1])))
            x->p++;
        else
            return lfail(x, "a bad number");
    }
    skip(x);
    if (x->drop_l && v->k == PL_INT && x->p < x->e && *x->p == 'L' &&
        (x->p + 1 >= x->e || !idch(x->p[1]))) { /* "3 L": numpy drops the token too */
        x->p++;
        skip(x);
    }
    return 0;
}

static int value(Lx *x, PlVal *v, int depth);

static int push(Lx *x, PlVal *v, size_t *cap, const PlVal *item)
{
    if (v->n == *cap) {
        size_t nc = *cap ? 2 * *cap : 4;
        PlVal *ni = realloc(v->items, nc * sizeof *ni);
        if (!ni) return lfail(x, "out of memory");
        v->items = ni;
        *cap = nc;
    }
    v->items[v->n++] = *item;
    return 0;
}

/* ( ... ), [ ... ], { ... } at x->p */
static int bracket(Lx *x, PlVal *v, int depth)
{
    if (depth >= PL_MAX_DEPTH) {
        qh_errf(x->err, x->errlen, "nested deeper than %d at byte %zu of the header", PL_MAX_DEPTH,
                (size_t)(x->p - x->s));
        x->failed = 1;
        return -1;
    }
    unsigned char open = *x->p++, close = open == '(' ? ')' : open == '[' ? ']' : '}';
    v->k = PL_LIST; /* until it is complete: n counts every item (a dict's keys and values) */
    skip(x);
    size_t cap = 0;
    int commas = 0, items = 0, dict = -1; /* -1 undecided, 1 dict, 0 set */
    if (x->p < x->e && *x->p == close) {
        x->p++;
        skip(x);
        v->k = open == '(' ? PL_TUPLE : open == '[' ? PL_LIST : PL_DICT;
        return 0;
    }
    for (;;) {
        PlVal it = { 0 };
        if (value(x, &it, depth + 1)) {
            pl_free(&it);
            return -1;
        }
        if (open == '{') {
            int colon = x->p < x->e && *x->p == ':';
            if (dict == -1) dict = colon;
            if (dict != colon) {
                pl_free(&it);
                return lfail(x, "a bad dict or set");
            }
        }
        if (push(x, v, &cap, &it)) {
            pl_free(&it);
            return -1;
        }
        items++;
        if (dict == 1) {
            x->p++;
            skip(x);
            PlVal val = { 0 };
            if (value(x, &val, depth + 1)) {
                pl_free(&val);
                return -1;
            }
            if (push(x, v, &cap, &val)) {
                pl_free(&val);
                return -1;
            }
        }
        if (x->p < x->e && *x->p == ',') {
            x->p++;
            commas++;
            skip(x);
            if (x->p < x->e && *x->p == close) break;
            continue;
        }
        if (x->p < x->e && *x->p == close) break;
        return lfail(x, "expected ',' or a closing bracket");
    }
    x->p++;
    skip(x);
    v->k = open == '(' ? PL_TUPLE : open == '[' ? PL_LIST : PL_DICT;
    if (open == '(' && items == 1 && commas == 0) { /* (x) is x */
        PlVal inner = v->items[0];
        free(v->items);
        *v = inner;
    } else if (open == '{') {
        if (dict == 1)
            v->n /= 2;
        else
            v->k = PL_SET;
    }
    return 0;
}

/* A value with its unary signs, and the binary + / - of a real and an
   imaginary number (literal_eval's complex literals, 1+2j). */
static int value(Lx *x, PlVal *v, int depth)
{
    skip(x);
    if (x->p >= x->e) return lfail(x, "unexpected end");
    int neg = 0, signs = 0;
    while (x->p < x->e && (*x->p == '-' || *x->p == '+')) {
        if (++signs > 1) return lfail(x, "more than one sign"); /* literal_eval takes one */
        if (*x->p == '-') neg = !neg;
        x->p++;
        skip(x);
    }
    if (x->p >= x->e) return lfail(x, "unexpected end");
    unsigned char c = *x->p;
    int raw, bytes;
    const unsigned char *save = x->p;
    if (c == '(' || c == '[' || c == '{') {
        if (signs) return lfail(x, "a sign before a non-number");
        return bracket(x, v, depth);
    }
    if (str_prefix(x, &raw, &bytes)) {
        x->p = save;
        if (signs) return lfail(x, "a sign before a non-number");
        return strings(x, v);
    }
    if ((c >= '0' && c <= '9') || c == '.') {
        if (number(x, v)) return -1;
        if (v->k == PL_INT) { v->neg = neg && (v->mag || v->big); }
        if (x->p < x->e && (*x->p == '+' || *x->p == '-') && v->k != PL_COMPLEX) {
            /* a real + an imaginary: complex */
            x->p++;
            skip(x);
            PlVal im = { 0 };
            if (x->p >= x->e || !((*x->p >= '0' && *x->p <= '9') || *x->p == '.') ||
                number(x, &im) || im.k != PL_COMPLEX)
                return lfail(x, "a bad complex number");
            v->k = PL_COMPLEX;
        }
        return 0;
    }
    if (idch(c)) {
        const unsigned char *a = x->p;
        while (x->p < x->e && idch(*x->p)) x->p++;
        size_t l = (size_t)(x->p - a);
        if (signs) return lfail(x, "a sign before a non-number");
        if (l == 4 && memcmp(a, "True", 4) == 0) {
            v->k = PL_BOOL;
            v->mag = 1;
        } else if (l == 5 && memcmp(a, "False", 5) == 0) {
            v->k = PL_BOOL;
        } else if (l == 4 && memcmp(a, "None", 4) == 0) {
            v->k = PL_NONE;
        } else {
            x->p = a;
            return lfail(x, "a name that is not a literal");
        }
        skip(x);
        return 0;
    }
    return lfail(x, "unexpected character");
}

static int is_key(const PlVal *k, const char *name)
{
    return k->k == PL_STR && k->len == strlen(name) && memcmp(k->s, name, k->len) == 0;
}

static int utf8_ok(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        int k = c < 0x80                 ? 0
                : c >= 0xC2 && c < 0xE0  ? 1
                : c >= 0xE0 && c < 0xF0  ? 2
                : c >= 0xF0 && c <= 0xF4 ? 3
                                         : -1;
        if (k < 0 || n - i <= (size_t)k) return 0;
        for (int j = 1; j <= k; j++)
            if ((s[i + (size_t)j] & 0xC0) != 0x80) return 0;
        if (k == 2 && ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] >= 0xA0))) return 0;
        if (k == 3 && ((c == 0xF0 && s[i + 1] < 0x90) || (c == 0xF4 && s[i + 1] >= 0x90))) return 0;
        i += (size_t)k + 1;
    }
    return 1;
}

#define NPY_MAX_HEADER 10000

/* The header's shape (a tuple of ints) into out; -1 + err if it is not one. */
static int npy_shape(const PlVal *vs, const char *name, NpyHeader *out, char *err, size_t errlen)
{
    if (vs->k != PL_TUPLE)
        return qh_errf(err, errlen, "'%s': bad .npy header (shape is not a tuple of ints)", name);
    if (vs->n > IO_MAX_DIMS)
        return qh_errf(err, errlen, "'%s': more than %d dimensions", name, IO_MAX_DIMS);
    for (size_t i = 0; i < vs->n; i++) {
        const PlVal *e = &vs->items[i];
        if (e->k != PL_INT)
            return qh_errf(err, errlen, "'%s': bad .npy header (shape is not a tuple of ints)",
                           name);
        if (e->neg)
            return qh_errf(err, errlen, "'%s': bad .npy header (negative dimension in shape)",
                           name);
        if (e->big || e->mag > SIZE_MAX) return qh_errf(err, errlen, "'%s': shape too large", name);
        out->shape[i] = (size_t)e->mag;
    }
    out->ndim = (int)vs->n;
    return 0;
}

/* The header's dict: descr, fortran_order and shape (the last value of a
 * repeated key wins; every key must be one of the three) into out. */
static int npy_fields(const PlVal *d, const char *name, NpyHeader *out, char *err, size_t errlen)
{
    if (d->k != PL_DICT) return qh_errf(err, errlen, "'%s': bad .npy header (not a dict)", name);
    const PlVal *vd = NULL, *vf = NULL, *vs = NULL;
    for (size_t i = 0; i < d->n; i++) {
        const PlVal *k = &d->items[2 * i], *v = &d->items[2 * i + 1];
        if (is_key(k, "descr"))
            vd = v;
        else if (is_key(k, "fortran_order"))
            vf = v;
        else if (is_key(k, "shape"))
            vs = v;
        else {
            char kn[48];
            if (k->k == PL_STR)
                snprintf(kn, sizeof kn, "'%.*s'", (int)(k->len > 40 ? 40 : k->len), k->s);
            else
                snprintf(kn, sizeof kn, "a key that is not a string");
            return qh_errf(err, errlen,
                           "'%s': bad .npy header (unknown key %s: NumPy's header has exactly "
                           "'descr', 'fortran_order' and 'shape')",
                           name, kn);
        }
    }
    if (!vd || !vf || !vs)
        return qh_errf(err, errlen, "'%s': bad .npy header (missing key '%s')", name,
                       !vd   ? "descr"
                       : !vf ? "fortran_order"
                             : "shape");
    if (npy_shape(vs, name, out, err, errlen) != 0) return -1;
    if (vf->k != PL_BOOL)
        return qh_errf(err, errlen, "'%s': bad .npy header (fortran_order is not a bool)", name);
    out->fortran = vf->mag != 0;
    if (vd->k != PL_STR)
        return qh_errf(err, errlen,
                       "'%s': unsupported dtype (a structured or non-string descr; numbers only: "
                       "float, complex, int, bool)",
                       name);
    size_t descrlen = sizeof out->descr;
    if (vd->len >= descrlen || memchr(vd->s, 0, vd->len)) {
        snprintf(out->descr, descrlen, "%.*s", (int)(descrlen - 1), vd->s);
        return 1; /* the caller refuses it as an unsupported dtype */
    }
    memcpy(out->descr, vd->s, vd->len + 1);
    return 0;
}

int io_npy_header(const unsigned char *h, size_t hl, int major, const char *name, NpyHeader *out,
                  char *err, size_t errlen)
{
    char why[200];
    memset(out, 0, sizeof *out);
    /* numpy counts characters of the decoded header */
    size_t chars = hl;
    if (major >= 3) {
        if (!utf8_ok(h, hl)) return qh_errf(err, errlen, "'%s': bad .npy header (not UTF-8)", name);
        chars = 0;
        for (size_t i = 0; i < hl; i++) chars += (h[i] & 0xC0) != 0x80;
    }
    if (chars > NPY_MAX_HEADER)
        return qh_errf(err, errlen,
                       "'%s': bad .npy header (%zu characters, more than NumPy's limit of %d)",
                       name, chars, NPY_MAX_HEADER);
    Lx x = { h, h, h + hl, major < 3, major <= 2, why, sizeof why, 0 };
    PlVal d = { 0 };
    int rc = value(&x, &d, 0);
    if (rc == 0) {
        skip(&x);
        if (x.failed)
            rc = -1;
        else if (x.p < x.e)
            rc = lfail(&x, "extra text after the dict");
    }
    if (rc != 0) {
        pl_free(&d);
        return qh_errf(err, errlen, "'%s': bad .npy header (%s)", name, why);
    }
    rc = npy_fields(&d, name, out, err, errlen);
    pl_free(&d);
    return rc;
}
