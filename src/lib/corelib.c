/* corelib.c — the core builtins (lang/builtins.md): printing, conversion,
 * containers, strings, math, time and input. Math and reductions on other
 * kinds (arrays, tracked numbers) go through their math and reduce slots.
 * Knows values, the dispatcher and the builtin table; no other room. */
#include "corelib.h"
#include "numfmt.h"
#include "qh_assert.h"
#include "utf8.h"

#include <ctype.h>
#include <errno.h>
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* a lazy builtin's argument i, resolved in place (the argument slots are
 * the caller's stack: the reference is swapped) */
static bool force_arg(VM *vm, Args *a, int i)
{
    if (!is_lazy(a->v[i])) return true;
    Value r = tp_force(vm, a->v[i], a->site);
    if (IS_EXC(r)) return false;
    decref(a->v[i]);
    a->v[i] = r;
    return true;
}

/* a string made from a buffer the program filled (freed here): the string,
 * or a located error when memory ran out or it is too long */
static Value buf_result(VM *vm, Buf *b, const Node *site)
{
    Value r;
    if (buf_failed(b))
        r = vm_oom(vm, site);
    else if (b->len > 0xfffffff0u)
        r = vm_error(vm, site, "string too long");
    else {
        ObjStr *s = str_alloc_try(b->len);
        if (!s)
            r = vm_oom(vm, site);
        else {
            if (b->len) memcpy(s->s, b->p, b->len);
            str_finish(s);
            r = v_obj(&s->h);
        }
    }
    buf_free(b);
    return r;
}

/* list_push for elements the program makes: false after a located error (x released) */
static bool push_or_oom(VM *vm, ObjList *l, Value x, const Node *site)
{
    if (list_push_try(l, x)) return true;
    decref(x);
    vm_oom(vm, site);
    return false;
}

static bool want(VM *vm, Args *a, int i, ValType t, const char *fn)
{
    if (a->v[i].t == t) return true;
    vm_error(vm, a->site, "%s() argument %d must be a %s, not %s", fn, i + 1, type_ops(t)->name,
             type_name(a->v[i]));
    return false;
}

/* ---------------------------------------------------------------- characters */

/* the UTF-8 encoding of code point cp (at most 4 bytes); 0 if cp is not a
 * code point (beyond 0x10ffff, or a surrogate) */
static size_t utf8_encode(double cp, char *o)
{
    if (!(cp >= 0 && cp <= 0x10ffff) || cp != floor(cp) || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return utf8_put((uint32_t)cp, o);
}

/* ord(c): the code point of a one-character string */
static Value bi_ord(VM *vm, Args *a)
{
    Value v = a->v[0];
    if (v.t != T_STR)
        return vm_error(vm, a->site, "ord() needs a one-character string, not %s", type_name(v));
    ObjStr *s = AS_STR(v);
    size_t n = str_nchars(s);
    if (n != 1)
        return vm_error(vm, a->site,
                        "ord() needs a one-character string, got a string of length %zu", n);
    const unsigned char *p = (const unsigned char *)s->s;
    /* one code point; a lone byte that is not UTF-8 (from a \xHH escape) is its value */
    if (s->len == 1) return v_num(p[0]);
    unsigned long c = p[0] >= 0xf0 ? p[0] & 0x07u : p[0] >= 0xe0 ? p[0] & 0x0fu : p[0] & 0x1fu;
    for (uint32_t i = 1; i < s->len; i++) c = (c << 6) | (p[i] & 0x3fu);
    return v_num((double)c);
}

/* chr(i): the one-character string of code point i */
static Value bi_chr(VM *vm, Args *a)
{
    double d;
    if (!arg_num(vm, a, 0, "chr() argument", &d)) return v_exc();
    char o[4];
    size_t n = utf8_encode(d, o);
    if (!n)
        return vm_error(
            vm, a->site,
            "chr() needs a code point: an integer from 0 to 0x10ffff, not a surrogate (got %.17g)",
            d);
    return v_strn(o, n);
}

/* ---------------------------------------------------------------- printing */

static Value bi_print(VM *vm, Args *a)
{
    PrintSep ps = print_line;
    Value *s = arg_kw(a, "sep"), *e = arg_kw(a, "end");
    if (s) {
        if (s->t != T_STR) return vm_error(vm, a->site, "print(): sep must be a string");
        ps.sep = AS_STR(*s)->s;
        ps.seplen = AS_STR(*s)->len;
    }
    if (e) {
        if (e->t != T_STR) return vm_error(vm, a->site, "print(): end must be a string");
        ps.end = AS_STR(*e)->s;
        ps.endlen = AS_STR(*e)->len;
    }
    return tp_print(vm, a->v, a->n, &ps, a->site) ? v_nil() : v_exc();
}

static Value bi_str(VM *vm, Args *a)
{
    if (a->v[0].t == T_STR) {
        incref(a->v[0]);
        return a->v[0];
    }
    if (a->v[0].t == T_NUM) {
        char tmp[NUMFMT_BUF];
        double d = a->v[0].n == 0 ? 0.0 : a->v[0].n;
        int n = numfmt_double(tmp, d);
        return v_strn(tmp, (size_t)n);
    }
    Buf b;
    buf_init(&b);
    if (!tp_repr(vm, &b, a->v[0], false, a->site)) {
        buf_free(&b);
        return v_exc();
    }
    return buf_result(vm, &b, a->site);
}

/* fmt's conversion spec after a '%': flags, width, precision, copied into
 * spec (from its '%'); returns its length, *pp moved past them */
static int fmt_spec(const char **pp, const char *end, char *spec)
{
    const char *p = *pp;
    int sn = 0;
    spec[sn++] = '%';
    while (p < end && strchr("-+ #0", *p) && sn < 10) spec[sn++] = *p++;
    int width_digits = 0;
    while (p < end && isdigit((unsigned char)*p) && width_digits < 4) {
        spec[sn++] = *p++;
        width_digits++;
    }
    if (p < end && *p == '.') {
        spec[sn++] = *p++;
        int pd = 0;
        while (p < end && isdigit((unsigned char)*p) && pd < 3) {
            spec[sn++] = *p++;
            pd++;
        }
    }
    *pp = p;
    return sn;
}

/* fmt's %s of v onto b; nil, or the error */
static Value fmt_s(VM *vm, Args *a, Buf *b, Value v, char *spec, int sn)
{
    Buf s;
    buf_init(&s);
    if (!tp_repr(vm, &s, v, false, a->site)) {
        buf_free(&s);
        return v_exc();
    }
    spec[sn++] = 's';
    spec[sn] = 0;
    int need = snprintf(NULL, 0, spec, s.p ? s.p : "");
    char *tmp = need >= 0 ? malloc((size_t)need + 1) : NULL;
    if (!tmp) {
        buf_free(&s);
        return vm_oom(vm, a->site);
    }
    snprintf(tmp, (size_t)need + 1, spec, s.p ? s.p : "");
    buf_put(b, tmp, (size_t)need);
    free(tmp);
    buf_free(&s);
    return v_nil();
}

/* fmt's %c of x: the character with that code, a one-character string
 * (NUL included), padded to the spec's width; nil, or the error */
static Value fmt_c(VM *vm, Args *a, Buf *b, double x, char *spec, int sn)
{
    char ch[4];
    size_t cn = utf8_encode(trunc(x), ch);
    if (!cn)
        return vm_error(vm, a->site, "fmt(): %%c needs a code point from 0 to 0x10ffff, got %.17g",
                        x);
    spec[sn] = 0;
    long width = 0;
    bool left = false;
    for (int k = 1; k < sn; k++) {
        if (spec[k] == '-')
            left = true;
        else if (isdigit((unsigned char)spec[k]) && (width || spec[k] != '0'))
            width = width * 10 + (spec[k] - '0');
        else if (spec[k] == '.')
            break;
    }
    if (!left)
        for (long k = 1; k < width; k++) buf_putc(b, ' ');
    buf_put(b, ch, cn);
    if (left)
        for (long k = 1; k < width; k++) buf_putc(b, ' ');
    return v_nil();
}

/* fmt's %d %i %x %X %o of x (truncated) onto b; nil, or the error */
static Value fmt_int(VM *vm, Args *a, Buf *b, double x, char conv, char *spec, int sn)
{
    char out[512];
    double d = trunc(x);
    if (!isfinite(d)) return vm_error(vm, a->site, "fmt(): %%%c of a non-finite number", conv);
    if (fabs(d) >= 9.2e18) {
        /* out of integer range: print the integral double */
        spec[sn++] = '.';
        spec[sn++] = '0';
        spec[sn++] = 'f';
        spec[sn] = 0;
        snprintf(out, sizeof out, spec, d);
    } else {
        spec[sn++] = 'l';
        spec[sn++] = 'l';
        spec[sn++] = conv;
        spec[sn] = 0;
        if (conv == 'x' || conv == 'X' || conv == 'o') {
            long long ll = (long long)d;
            if (ll < 0) {
                /* Python prints -0x1f: sign then magnitude */
                snprintf(out, sizeof out, spec, (unsigned long long)(-ll));
                memmove(out + 1, out, strlen(out) + 1);
                out[0] = '-';
            } else
                snprintf(out, sizeof out, spec, (unsigned long long)ll);
        } else
            snprintf(out, sizeof out, spec, (long long)d);
    }
    buf_puts(b, out);
    return v_nil();
}

/* fmt's conversion conv of argument v onto b; nil, or the error */
static Value fmt_arg(VM *vm, Args *a, Buf *b, Value v, char conv, char *spec, int sn)
{
    if (conv == 's') return fmt_s(vm, a, b, v, spec, sn);
    double num;
    if (v.t == T_BOOL)
        v = v_num(v.b);
    else if (v.t != T_NUM && tp_number(v, &num))
        v = v_num(num);
    if (v.t != T_NUM)
        return vm_error(vm, a->site, "fmt(): %%%c needs a number, not %s", conv, type_name(v));
    if (conv == 'c') return fmt_c(vm, a, b, v.n, spec, sn);
    if (conv == 'd' || conv == 'i' || conv == 'x' || conv == 'X' || conv == 'o')
        return fmt_int(vm, a, b, v.n, conv, spec, sn);
    char out[512];
    spec[sn++] = conv;
    spec[sn] = 0;
    snprintf(out, sizeof out, spec, v.n);
    buf_puts(b, out);
    return v_nil();
}

/* fmt(format, args...): C printf for %d %i %f %e %g %s %x (and %X %o %c %E %G %%) */
static Value bi_fmt(VM *vm, Args *a)
{
    if (!want(vm, a, 0, T_STR, "fmt")) return v_exc();
    ObjStr *f = AS_STR(a->v[0]);
    Buf b;
    buf_init(&b);
    int argi = 1;
    const char *p = f->s, *end = f->s + f->len;
    while (p < end) {
        const char *pct = memchr(p, '%', (size_t)(end - p));
        if (!pct) {
            buf_put(&b, p, (size_t)(end - p));
            break;
        }
        buf_put(&b, p, (size_t)(pct - p));
        p = pct + 1;
        if (p < end && *p == '%') {
            buf_putc(&b, '%');
            p++;
            continue;
        }
        char spec[64];
        int sn = fmt_spec(&p, end, spec);
        if (p >= end) {
            buf_free(&b);
            return vm_error(vm, a->site, "fmt(): incomplete format specifier at the end");
        }
        char conv = *p++;
        if (!strchr("dfeEgGsxXioc", conv)) {
            buf_free(&b);
            return vm_error(vm, a->site, "fmt(): unsupported format '%%%c'", conv);
        }
        if (argi >= a->n) {
            buf_free(&b);
            return vm_error(vm, a->site, "fmt(): not enough arguments for the format");
        }
        Value r = fmt_arg(vm, a, &b, a->v[argi++], conv, spec, sn);
        if (IS_EXC(r)) {
            buf_free(&b);
            return r;
        }
    }
    if (argi < a->n) {
        buf_free(&b);
        return vm_error(vm, a->site, "fmt(): too many arguments for the format");
    }
    return buf_result(vm, &b, a->site);
}

/* ---------------------------------------------------------------- conversion */

static bool parse_number(const char *s, double *out)
{
    while (isspace((unsigned char)*s)) s++;
    if (!*s) return false;
    char buf[128];
    size_t n = 0;
    for (const char *p = s; *p && n < sizeof buf - 1; p++)
        if (*p != '_') buf[n++] = *p;
    buf[n] = 0;
    while (n && isspace((unsigned char)buf[n - 1])) buf[--n] = 0;
    char *end;
    errno = 0;
    double d;
    if ((buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X')) ||
        ((buf[0] == '-' || buf[0] == '+') && buf[1] == '0' && (buf[2] == 'x' || buf[2] == 'X')))
        d = (double)strtoll(buf, &end, 16);
    else
        d = strtod(buf, &end);
    if (*end || end == buf) return false;
    *out = d;
    return true;
}

static Value bi_num(VM *vm, Args *a)
{
    Value v = a->v[0];
    if (v.t == T_NUM) return v;
    if (type_of(v)->number) {
        incref(v);
        return v;
    } /* a tracked number stays one */
    if (v.t == T_BOOL) return v_num(v.b);
    if (v.t == T_STR) {
        double d;
        if (!parse_number(AS_STR(v)->s, &d))
            return vm_error(vm, a->site, "num(): cannot parse \"%.60s\" as a number", AS_STR(v)->s);
        return v_num(d);
    }
    return vm_error(vm, a->site, "num() needs a string, number or bool, not %s", type_name(v));
}

static Value bi_int(VM *vm, Args *a)
{
    Value v = a->v[0];
    double d;
    if (tp_number(v, &d)) v = v_num(d);
    if (v.t == T_NUM)
        d = v.n;
    else if (v.t == T_BOOL)
        d = v.b;
    else if (v.t == T_STR) {
        if (!parse_number(AS_STR(v)->s, &d))
            return vm_error(vm, a->site, "int(): cannot parse \"%.60s\" as a number", AS_STR(v)->s);
    } else
        return vm_error(vm, a->site, "int() needs a number, string or bool, not %s", type_name(v));
    if (isnan(d) || isinf(d))
        return vm_error(vm, a->site, "int(): cannot convert %s to an integer",
                        isnan(d) ? "nan" : "inf");
    return v_num(trunc(d));
}

static Value bi_type(VM *vm, Args *a)
{
    (void)vm;
    return v_str(type_name(a->v[0]));
}

static Value bi_complex(VM *vm, Args *a)
{
    double re = 0, im = 0;
    if (a->n >= 1 && !as_complex(a->v[0], &re, &im))
        return vm_error(vm, a->site, "complex() needs numbers");
    if (a->n == 2) {
        if (a->v[1].t != T_NUM)
            return vm_error(vm, a->site, "complex(): imaginary part must be a number");
        im += a->v[1].n;
    }
    return v_complex(re, im);
}

/* ---------------------------------------------------------------- containers */

static Value bi_len(VM *vm, Args *a)
{
    size_t n;
    if (tp_len(a->v[0], &n)) return v_num((double)n);
    return vm_error(vm, a->site, "len() of %s", type_name(a->v[0]));
}

static Value bi_range(VM *vm, Args *a)
{
    long x[3] = { 0, 0, 0 };
    for (int i = 0; i < a->n; i++)
        if (!arg_int(vm, a, i, "range() argument", &x[i])) return v_exc();
    long start = 0, stop, step = 1;
    if (a->n == 1)
        stop = x[0];
    else {
        start = x[0];
        stop = x[1];
        if (a->n == 3) step = x[2];
    }
    if (step == 0) return vm_error(vm, a->site, "range() step must not be zero");
    /* the count in integers, as the loop below takes it (arguments are below 9e15 in magnitude,
     * so no difference overflows; in floating point a span over 2^53 rounded, and the list was
     * allocated one short of what the loop wrote) */
    long span = step > 0 ? stop - start : start - stop, astep = step > 0 ? step : -step;
    long count = span > 0 ? (span - 1) / astep + 1 : 0;
    if (count > 200000000)
        return vm_error(
            vm, a->site,
            "range() of %.0f elements is too large for a list (loop over it with for instead)",
            (double)count);
    ObjList *l = list_new_try((size_t)count);
    if (!l) return vm_oom(vm, a->site);
    for (long i = start; step > 0 ? i < stop : i > stop; i += step) {
        qh_assert(l->len < (size_t)count);
        l->v[l->len++] = v_num((double)i);
    }
    qh_assert(l->len == (size_t)count);
    return v_list(l);
}

static Value bi_append(VM *vm, Args *a)
{
    if (!force_arg(vm, a, 0)) return v_exc();
    if (!want(vm, a, 0, T_LIST, "append")) return v_exc();
    ObjList *l = AS_LIST(a->v[0]);
    if (l->len >= ((size_t)1 << 31)) return vm_error(vm, a->site, "list too long");
    if (!list_push_try(l, a->v[1])) return vm_oom(vm, a->site);
    incref(a->v[1]);
    return v_nil();
}

static Value bi_insert(VM *vm, Args *a)
{
    if (!force_arg(vm, a, 0) || !force_arg(vm, a, 1)) return v_exc();
    if (!want(vm, a, 0, T_LIST, "insert")) return v_exc();
    ObjList *l = AS_LIST(a->v[0]);
    long i;
    if (!arg_int(vm, a, 1, "insert() index", &i)) return v_exc();
    if (i < 0) i += (long)l->len;
    if (i < 0) i = 0;
    if (i > (long)l->len) i = (long)l->len;
    if (!list_push_try(l, v_nil())) return vm_oom(vm, a->site);
    incref(a->v[2]);
    memmove(l->v + i + 1, l->v + i, (l->len - 1 - (size_t)i) * sizeof(Value));
    l->v[i] = a->v[2];
    return v_nil();
}

static Value bi_pop(VM *vm, Args *a)
{
    Value c = a->v[0];
    if (c.t == T_LIST) {
        ObjList *l = AS_LIST(c);
        if (!l->len) return vm_error(vm, a->site, "pop() from an empty list");
        long i = (long)l->len - 1;
        if (a->n > 1) {
            if (!num_to_index(vm, a->v[1], (long)l->len, &i, a->site, "pop()")) return v_exc();
        }
        Value r = l->v[i];
        memmove(l->v + i, l->v + i + 1, (l->len - (size_t)i - 1) * sizeof(Value));
        l->len--;
        return r;
    }
    if (c.t == T_DICT) {
        if (a->n < 2) return vm_error(vm, a->site, "pop() of a dict needs a key");
        Value r;
        if (!key_ok(a->v[1]) || !dict_del(AS_DICT(c), a->v[1], &r)) {
            if (a->n > 2) {
                incref(a->v[2]);
                return a->v[2];
            }
            Buf b;
            buf_init(&b);
            value_repr(&b, a->v[1], true);
            vm_error(vm, a->site, "key %s not in dict", b.p);
            buf_free(&b);
            return v_exc();
        }
        return r;
    }
    return vm_error(vm, a->site, "pop() needs a list or dict, not %s", type_name(c));
}

/* get(dict, key, default=nil): d[key], or default when the key is missing */
static Value bi_get(VM *vm, Args *a)
{
    if (!want(vm, a, 0, T_DICT, "get")) return v_exc();
    Value k = a->v[1];
    if (!key_ok(k) && !to_plain_number(&k))
        return vm_error(vm, a->site, "dict keys are numbers, strings or bools, not %s",
                        type_name(k));
    Value out;
    if (dict_get(AS_DICT(a->v[0]), k, &out)) {
        incref(out);
        return out;
    }
    Value *dv = a->n > 2 ? &a->v[2] : arg_kw(a, "default");
    if (!dv) return v_nil();
    incref(*dv);
    return *dv;
}

/* the elements of any iterable as a new list (lists are shared, not copied:
 * the caller must not keep the result past the argument) */
static bool elements(VM *vm, Value coll, Value *out, const Node *site)
{
    if (coll.t == T_LIST) {
        incref(coll);
        *out = coll;
        return true;
    }
    Iter it;
    if (!tp_iter_begin(vm, coll, &it, site)) return false;
    ObjList *l = list_new(0);
    for (;;) {
        Value x;
        int k = tp_iter_next(vm, coll, &it, &x, site);
        if (k == 0) break;
        if (k < 0) {
            tp_iter_end(&it);
            decref(v_list(l));
            return false;
        }
        if (!list_push_try(l, x)) {
            decref(x);
            tp_iter_end(&it);
            decref(v_list(l));
            vm_oom(vm, site);
            return false;
        }
    }
    tp_iter_end(&it);
    *out = v_list(l);
    return true;
}

/* enumerate(xs, start=0): the list of [index, element] pairs */
static Value bi_enumerate(VM *vm, Args *a)
{
    qh_assert(a->n >= 1 && a->v);
    double start = 0;
    Value *sv = a->n > 1 ? &a->v[1] : arg_kw(a, "start");
    if (sv) {
        if (sv->t != T_NUM)
            return vm_error(vm, a->site, "enumerate() start must be a number, not %s",
                            type_name(*sv));
        start = sv->n;
    }
    Value xs;
    if (!elements(vm, a->v[0], &xs, a->site)) return v_exc();
    ObjList *l = AS_LIST(xs), *r = list_new_try(l->len);
    if (!r) {
        decref(xs);
        return vm_oom(vm, a->site);
    }
    qh_assert(l->len == 0 || l->v);
    for (size_t i = 0; i < l->len; i++) {
        ObjList *p = list_new(2);
        incref(l->v[i]);
        p->v[0] = v_num(start + (double)i);
        p->v[1] = l->v[i];
        p->len = 2;
        r->v[r->len++] = v_list(p);
    }
    decref(xs);
    return v_list(r);
}

/* zip(xs, ys, ...): lists of the i-th elements, as long as the shortest */
static Value bi_zip(VM *vm, Args *a)
{
    int n = a->n;
    Value seqs[n ? n : 1];
    size_t len = (size_t)-1;
    for (int i = 0; i < n; i++) {
        if (!elements(vm, a->v[i], &seqs[i], a->site)) {
            for (int j = 0; j < i; j++) decref(seqs[j]);
            return v_exc();
        }
        if (AS_LIST(seqs[i])->len < len) len = AS_LIST(seqs[i])->len;
    }
    if (!n) len = 0;
    ObjList *r = list_new_try(len);
    if (!r) {
        for (int i = 0; i < n; i++) decref(seqs[i]);
        return vm_oom(vm, a->site);
    }
    for (size_t k = 0; k < len; k++) {
        ObjList *t = list_new((size_t)n);
        for (int i = 0; i < n; i++) {
            Value x = AS_LIST(seqs[i])->v[k];
            incref(x);
            t->v[t->len++] = x;
        }
        r->v[r->len++] = v_list(t);
    }
    for (int i = 0; i < n; i++) decref(seqs[i]);
    return v_list(r);
}

/* any(xs) / all(xs): whether some / every element is true; stops at the first that decides */
static Value any_all(VM *vm, Args *a, bool all)
{
    Value coll = a->v[0];
    Iter it;
    if (!tp_iter_begin(vm, coll, &it, a->site)) return v_exc();
    bool result = all;
    for (;;) {
        Value x;
        int k = tp_iter_next(vm, coll, &it, &x, a->site);
        if (k == 0) break;
        if (k < 0) {
            tp_iter_end(&it);
            return v_exc();
        }
        bool err = false;
        bool t = tp_truthy(vm, x, a->site, &err);
        decref(x);
        if (err) {
            tp_iter_end(&it);
            return v_exc();
        }
        if (t != all) {
            result = !all;
            break;
        }
    }
    tp_iter_end(&it);
    return v_bool(result);
}
static Value bi_any(VM *vm, Args *a) { return any_all(vm, a, false); }
static Value bi_all(VM *vm, Args *a) { return any_all(vm, a, true); }

static Value bi_keys(VM *vm, Args *a)
{
    if (!want(vm, a, 0, T_DICT, "keys")) return v_exc();
    ObjDict *d = AS_DICT(a->v[0]);
    ObjList *l = list_new_try(d->len);
    if (!l) return vm_oom(vm, a->site);
    for (size_t i = 0; i < d->nent; i++)
        if (d->ent[i].live) {
            incref(d->ent[i].key);
            l->v[l->len++] = d->ent[i].key;
        }
    return v_list(l);
}

static Value bi_values(VM *vm, Args *a)
{
    if (!want(vm, a, 0, T_DICT, "values")) return v_exc();
    ObjDict *d = AS_DICT(a->v[0]);
    ObjList *l = list_new_try(d->len);
    if (!l) return vm_oom(vm, a->site);
    for (size_t i = 0; i < d->nent; i++)
        if (d->ent[i].live) {
            incref(d->ent[i].val);
            l->v[l->len++] = d->ent[i].val;
        }
    return v_list(l);
}

static Value bi_items(VM *vm, Args *a)
{
    if (!want(vm, a, 0, T_DICT, "items")) return v_exc();
    ObjDict *d = AS_DICT(a->v[0]);
    ObjList *l = list_new_try(d->len);
    if (!l) return vm_oom(vm, a->site);
    for (size_t i = 0; i < d->nent; i++) {
        if (!d->ent[i].live) continue;
        ObjList *p = list_new(2);
        incref(d->ent[i].key);
        incref(d->ent[i].val);
        p->v[0] = d->ent[i].key;
        p->v[1] = d->ent[i].val;
        p->len = 2;
        l->v[l->len++] = v_list(p);
    }
    return v_list(l);
}

/* merge sort with a comparison that may fail (mixed types) */
typedef struct SortCtx {
    VM *vm;
    Node *site;
    Value key;
    bool err;
    bool reverse;
} SortCtx;

static bool less(SortCtx *c, Value x, Value y)
{
    if (c->err) return false;
    if (x.t == T_NUM && y.t == T_NUM) return c->reverse ? y.n < x.n : x.n < y.n;
    Value r =
        c->reverse ? tp_binop(c->vm, OP_LT, y, x, c->site) : tp_binop(c->vm, OP_LT, x, y, c->site);
    if (IS_EXC(r)) {
        c->err = true;
        return false;
    }
    bool b = r.t == T_BOOL && r.b;
    decref(r);
    return b;
}

static void merge_sort(SortCtx *c, Value *v, Value *k, Value *tv, Value *tk, size_t n)
{
    if (n < 2 || c->err) return;
    size_t m = n / 2;
    merge_sort(c, v, k, tv, tk, m);
    merge_sort(c, v + m, k + m, tv, tk, n - m);
    size_t i = 0, j = m, o = 0;
    while (i < m && j < n) {
        if (less(c, k[j], k[i])) {
            tv[o] = v[j];
            tk[o++] = k[j++];
        } else {
            tv[o] = v[i];
            tk[o++] = k[i++];
        }
    }
    while (i < m) {
        tv[o] = v[i];
        tk[o++] = k[i++];
    }
    while (j < n) {
        tv[o] = v[j];
        tk[o++] = k[j++];
    }
    qh_assert(o == n && i == m && j == n); /* every element merged once */
    memcpy(v, tv, n * sizeof(Value));
    memcpy(k, tk, n * sizeof(Value));
}

/* sorted(xs, key=, reverse=): a new list. Why the shape: the key function
 * is program code and may change xs (pop, append), raise, or return
 * futures that fail; so the elements are taken into the result first (a
 * snapshot, as Python's sorted copies its iterable), every key is owned by
 * the keys array, and every exit releases exactly what was made. */
static Value bi_sorted(VM *vm, Args *a)
{
    Value items;
    if (a->v[0].t == T_LIST) {
        ObjList *l = AS_LIST(a->v[0]), *c = list_new_try(l->len);
        if (!c) return vm_oom(vm, a->site);
        for (size_t i = 0; i < l->len; i++) {
            incref(l->v[i]);
            c->v[c->len++] = l->v[i];
        }
        items = v_list(c);
    } else if (a->v[0].t == T_DICT) {
        items = bi_keys(vm, a);
        if (IS_EXC(items)) return items;
    } else
        return vm_error(vm, a->site, "sorted() needs a list, not %s", type_name(a->v[0]));
    ObjList *r = AS_LIST(items);
    SortCtx c = { vm, a->site, v_nil(), false, false };
    Value *kw = arg_kw(a, "key"), *rv = arg_kw(a, "reverse");
    Value key = kw ? *kw : v_nil();
    if (rv) c.reverse = tp_truthy(vm, *rv, a->site, &c.err);
    size_t n = r->len;
    Value *keys = calloc(n + 1, sizeof(Value)), *tv = malloc((n + 1) * sizeof(Value)),
          *tk = malloc((n + 1) * sizeof(Value));
    if (!keys || !tv || !tk) {
        free(keys);
        free(tv);
        free(tk);
        decref(items);
        return vm_oom(vm, a->site);
    }
    for (size_t i = 0; i < n && !c.err; i++) { /* keys[i] stays nil (no reference) until set */
        Value e = tp_force(vm, r->v[i], a->site);
        if (IS_EXC(e)) {
            c.err = true;
            break;
        }
        decref(r->v[i]);
        r->v[i] = e;
        if (key.t != T_NIL) {
            incref(key); /* the call may drop the caller's reference */
            Value k = vm_call(vm, key, 1, &e, a->site);
            decref(key);
            if (IS_EXC(k)) {
                c.err = true;
                break;
            }
            keys[i] = k;
        } else {
            incref(e);
            keys[i] = e;
        }
    }
    if (!c.err) merge_sort(&c, r->v, keys, tv, tk, n);
    for (size_t i = 0; i < n; i++) decref(keys[i]);
    free(keys);
    free(tv);
    free(tk);
    if (c.err) {
        decref(items);
        return v_exc();
    }
    return items;
}

static Value bi_reversed(VM *vm, Args *a)
{
    Value v = a->v[0];
    if (v.t == T_LIST) {
        ObjList *l = AS_LIST(v), *r = list_new_try(l->len);
        if (!r) return vm_oom(vm, a->site);
        for (size_t i = l->len; i-- > 0;) {
            incref(l->v[i]);
            r->v[r->len++] = l->v[i];
        }
        return v_list(r);
    }
    if (v.t == T_STR) {
        ObjStr *s = AS_STR(v);
        ObjStr *r = str_alloc_try(s->len);
        if (!r) return vm_oom(vm, a->site);
        size_t o = 0, i = s->len;
        while (i > 0) {
            size_t e = i;
            i--;
            while (i > 0 && ((unsigned char)s->s[i] & 0xc0) == 0x80) i--;
            memcpy(r->s + o, s->s + i, e - i);
            o += e - i;
        }
        str_finish(r);
        return v_obj(&r->h);
    }
    return vm_error(vm, a->site, "reversed() needs a list or string, not %s", type_name(v));
}

static Value bi_error(VM *vm, Args *a)
{
    Buf b;
    buf_init(&b);
    if (!tp_repr(vm, &b, a->v[0], false, a->site)) {
        buf_free(&b);
        return v_exc();
    }
    vm_error(vm, a->site, "%s", b.p ? b.p : "");
    buf_free(&b);
    return v_exc();
}

/* ---------------------------------------------------------------- time and input */

static Value bi_clock(VM *vm, Args *a)
{
    (void)vm;
    (void)a;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return v_num((double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
}

static Value bi_sleep(VM *vm, Args *a)
{
    double s;
    if (!arg_num(vm, a, 0, "sleep() seconds", &s)) return v_exc();
    if (s < 0 || isnan(s))
        return vm_error(vm, a->site, "sleep() needs a non-negative number of seconds");
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double el = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) * 1e-9;
        if (el >= s) break;
        if (vm_check_interrupt(vm)) return v_exc();
        double left = s - el;
        if (left > 0.01) left = 0.01;
        struct timespec d = { (time_t)left, (long)((left - (double)(time_t)left) * 1e9) };
        nanosleep(&d, NULL);
    }
    return v_nil();
}

/* input(prompt): the prompt is written as print writes it (flushed), then
 * a line is read from standard input without its newline; nil at the end
 * of input. A host that answers input() itself (the notebook kernel) gets
 * the prompt's text instead. */
static Value bi_input(VM *vm, Args *a)
{
    Buf b;
    buf_init(&b);
    if (a->n > 0 && !tp_repr(vm, &b, a->v[0], false, a->site)) {
        buf_free(&b);
        return v_exc();
    }
    if (buf_failed(&b)) {
        buf_free(&b);
        return vm_oom(vm, a->site);
    }
    Buf line;
    buf_init(&line);
    if (vm->in->hooks.input) {
        int r = vm->in->hooks.input(vm, b.p, b.len, &line, a->site);
        buf_free(&b);
        if (r > 0) return buf_result(vm, &line, a->site);
        buf_free(&line);
        return r == 0 ? v_nil() : v_exc();
    }
    bool ok = vm_write_out(vm, b.p, b.len, true, a->site);
    buf_free(&b);
    if (!ok) {
        buf_free(&line);
        return v_exc();
    }
    int c;
    errno = 0;
    while ((c = getchar()) != EOF && c != '\n') buf_putc(&line, (char)c);
    if (c == EOF && ferror(stdin)) { /* a directory, a closed descriptor, a signal */
        int e = errno ? errno : EIO;
        clearerr(stdin);
        buf_free(&line);
        if (vm_check_interrupt(vm)) return v_exc();
        return vm_error(vm, a->site, "input(): cannot read standard input: %s", strerror(e));
    }
    if (c == EOF && line.len == 0 && !buf_failed(&line)) {
        buf_free(&line);
        return v_nil();
    }
    return buf_result(vm, &line, a->site);
}

/* ---------------------------------------------------------------- strings */

static Value bi_join(VM *vm, Args *a)
{
    Value l = a->v[0];
    Value *sepv = arg_kw(a, "sep");
    Value sep = a->n > 1 ? a->v[1] : (sepv ? *sepv : v_nil());
    if (l.t == T_STR && sep.t == T_LIST) {
        Value t = l;
        l = sep;
        sep = t;
    } /* join(sep, list) too */
    if (l.t != T_LIST) return vm_error(vm, a->site, "join() needs a list, not %s", type_name(l));
    if (sep.t != T_NIL && sep.t != T_STR)
        return vm_error(vm, a->site, "join(): sep must be a string");
    ObjList *xs = AS_LIST(l);
    Buf b;
    buf_init(&b);
    for (size_t i = 0; i < xs->len; i++) {
        if (i && sep.t == T_STR) buf_put(&b, AS_STR(sep)->s, AS_STR(sep)->len);
        Value e = xs->v[i];
        if (e.t == T_STR) {
            buf_put(&b, AS_STR(e)->s, AS_STR(e)->len);
            continue;
        }
        e = tp_force(vm, e, a->site);
        if (IS_EXC(e)) {
            buf_free(&b);
            return e;
        }
        if (e.t == T_STR)
            buf_put(&b, AS_STR(e)->s, AS_STR(e)->len);
        else if (e.t == T_NUM)
            value_repr(&b, e, false);
        else {
            buf_free(&b);
            Value err =
                vm_error(vm, a->site, "join(): element %zu is %s, not a string", i, type_name(e));
            decref(e);
            return err;
        }
        decref(e);
    }
    return buf_result(vm, &b, a->site);
}

static Value bi_split(VM *vm, Args *a)
{
    if (!want(vm, a, 0, T_STR, "split")) return v_exc();
    ObjStr *s = AS_STR(a->v[0]);
    Value *sk = arg_kw(a, "sep");
    Value sep = a->n > 1 ? a->v[1] : (sk ? *sk : v_nil());
    ObjList *l = list_new(0);
    if (sep.t == T_NIL) {
        size_t i = 0;
        while (i < s->len) {
            while (i < s->len && isspace((unsigned char)s->s[i])) i++;
            if (i >= s->len) break;
            size_t j = i;
            while (j < s->len && !isspace((unsigned char)s->s[j])) j++;
            if (!push_or_oom(vm, l, v_strn(s->s + i, j - i), a->site)) {
                decref(v_list(l));
                return v_exc();
            }
            i = j;
        }
        return v_list(l);
    }
    if (sep.t != T_STR) {
        decref(v_list(l));
        return vm_error(vm, a->site, "split(): sep must be a string");
    }
    ObjStr *p = AS_STR(sep);
    if (!p->len) {
        decref(v_list(l));
        return vm_error(vm, a->site, "split(): empty separator");
    }
    const char *cur = s->s, *end = s->s + s->len;
    for (;;) {
        const char *f = memmem(cur, (size_t)(end - cur), p->s, p->len);
        if (!f) {
            if (!push_or_oom(vm, l, v_strn(cur, (size_t)(end - cur)), a->site)) {
                decref(v_list(l));
                return v_exc();
            }
            break;
        }
        if (!push_or_oom(vm, l, v_strn(cur, (size_t)(f - cur)), a->site)) {
            decref(v_list(l));
            return v_exc();
        }
        cur = f + p->len;
        qh_assert(cur <= end); /* a match lies inside the string */
    }
    return v_list(l);
}

static Value bi_replace(VM *vm, Args *a)
{
    for (int i = 0; i < 3; i++)
        if (!want(vm, a, i, T_STR, "replace")) return v_exc();
    ObjStr *s = AS_STR(a->v[0]), *o = AS_STR(a->v[1]), *n = AS_STR(a->v[2]);
    if (!o->len) return vm_error(vm, a->site, "replace(): empty string to replace");
    Buf b;
    buf_init(&b);
    const char *cur = s->s, *end = s->s + s->len;
    for (;;) {
        const char *f = memmem(cur, (size_t)(end - cur), o->s, o->len);
        if (!f) {
            buf_put(&b, cur, (size_t)(end - cur));
            break;
        }
        buf_put(&b, cur, (size_t)(f - cur));
        buf_put(&b, n->s, n->len);
        cur = f + o->len;
        qh_assert(cur <= end);
    }
    return buf_result(vm, &b, a->site);
}

static Value case_map(VM *vm, Args *a, int up)
{
    if (!want(vm, a, 0, T_STR, up ? "upper" : "lower")) return v_exc();
    ObjStr *s = AS_STR(a->v[0]);
    ObjStr *r = str_alloc_try(s->len);
    if (!r) return vm_oom(vm, a->site);
    for (uint32_t i = 0; i < s->len; i++) {
        unsigned char c = (unsigned char)s->s[i];
        r->s[i] = (char)(c < 0x80 ? (up ? toupper(c) : tolower(c)) : c);
    }
    str_finish(r);
    return v_obj(&r->h);
}
static Value bi_upper(VM *vm, Args *a) { return case_map(vm, a, 1); }
static Value bi_lower(VM *vm, Args *a) { return case_map(vm, a, 0); }

static Value bi_strip(VM *vm, Args *a)
{
    if (!want(vm, a, 0, T_STR, "strip")) return v_exc();
    ObjStr *s = AS_STR(a->v[0]);
    const char *chars = NULL;
    if (a->n > 1) {
        if (!want(vm, a, 1, T_STR, "strip")) return v_exc();
        chars = AS_STR(a->v[1])->s;
    }
    size_t i = 0, j = s->len;
#define STRIPPABLE(c) (chars ? ((c) && strchr(chars, (c)) != NULL) : isspace((unsigned char)(c)))
    while (i < j && STRIPPABLE(s->s[i])) i++;
    while (j > i && STRIPPABLE(s->s[j - 1])) j--;
#undef STRIPPABLE
    return v_strn(s->s + i, j - i);
}

static Value bi_startswith(VM *vm, Args *a)
{
    if (!want(vm, a, 0, T_STR, "startswith") || !want(vm, a, 1, T_STR, "startswith"))
        return v_exc();
    ObjStr *s = AS_STR(a->v[0]), *p = AS_STR(a->v[1]);
    return v_bool(p->len <= s->len && memcmp(s->s, p->s, p->len) == 0);
}

static Value bi_endswith(VM *vm, Args *a)
{
    if (!want(vm, a, 0, T_STR, "endswith") || !want(vm, a, 1, T_STR, "endswith")) return v_exc();
    ObjStr *s = AS_STR(a->v[0]), *p = AS_STR(a->v[1]);
    return v_bool(p->len <= s->len && memcmp(s->s + s->len - p->len, p->s, p->len) == 0);
}

static Value bi_find(VM *vm, Args *a)
{
    if (a->v[0].t == T_LIST) {
        ObjList *l = AS_LIST(a->v[0]);
        for (size_t i = 0; i < l->len; i++)
            if (value_eq(l->v[i], a->v[1])) return v_num((double)i);
        return v_num(-1);
    }
    if (!want(vm, a, 0, T_STR, "find") || !want(vm, a, 1, T_STR, "find")) return v_exc();
    ObjStr *s = AS_STR(a->v[0]), *p = AS_STR(a->v[1]);
    const char *f = memmem(s->s, s->len, p->s, p->len);
    if (!f) return v_num(-1);
    size_t cp = 0;
    for (const char *q = s->s; q < f; q++)
        if (((unsigned char)*q & 0xc0) != 0x80) cp++;
    return v_num((double)cp);
}

/* ---------------------------------------------------------------- math */

static Value math1(VM *vm, Args *a, MathFn fn, const char *name)
{
    Value v = a->v[0];
    if (fn == M_LOG && a->n > 1 && v.t != T_NUM && v.t != T_BOOL) {
        /* log(x, base) = log(x) / log(base) */
        Args one = *a;
        one.n = 1;
        Value lx = math1(vm, &one, M_LOG, name);
        if (IS_EXC(lx)) return lx;
        Args b = *a;
        b.n = 1;
        b.v = a->v + 1;
        Value lb = math1(vm, &b, M_LOG, name);
        if (IS_EXC(lb)) {
            decref(lx);
            return lb;
        }
        Value r = tp_binop(vm, OP_DIV, lx, lb, a->site);
        decref(lx);
        decref(lb);
        return r;
    }
    if (v.t == T_COMPLEX) {
        double _Complex z = AS_CPLX(v)->re + AS_CPLX(v)->im * _Complex_I, r;
        switch (fn) {
        case M_ABS: return v_num(cabs(z));
        case M_SQRT: r = csqrt(z); break;
        case M_EXP: r = cexp(z); break;
        case M_LOG: r = clog(z); break;
        case M_SIN: r = csin(z); break;
        case M_COS: r = ccos(z); break;
        case M_TAN: r = ctan(z); break;
        case M_ASIN:
        case M_ACOS:
        case M_ATAN:
        case M_LOG2:
        case M_LOG10:
        case M_FLOOR:
        case M_CEIL:
        case M_ROUND: return vm_error(vm, a->site, "%s() of a complex number", name);
        case M_NFUNCS: qh_unreachable();
        }
        return v_complex(creal(r), cimag(r));
    }
    if (v.t == T_BOOL) v = v_num(v.b);
    if (v.t != T_NUM) {
        Value r = tp_math(vm, fn, v, 0, a->site);
        if (r.t != T_NOTIMPL) return r;
        return vm_error(vm, a->site, "%s() needs a number, not %s", name, type_name(v));
    }
    double x = v.n;
    switch (fn) {
    case M_ABS: return v_num(fabs(x));
    case M_SQRT:
        if (x < 0)
            return vm_error(vm, a->site, "sqrt() of a negative number (%g); use sqrt(complex(x))",
                            x);
        return v_num(sqrt(x));
    case M_SIN: return v_num(sin(x));
    case M_COS: return v_num(cos(x));
    case M_TAN: return v_num(tan(x));
    case M_ASIN:
        if (x < -1 || x > 1) return vm_error(vm, a->site, "asin() argument %g outside [-1, 1]", x);
        return v_num(asin(x));
    case M_ACOS:
        if (x < -1 || x > 1) return vm_error(vm, a->site, "acos() argument %g outside [-1, 1]", x);
        return v_num(acos(x));
    case M_ATAN: return v_num(atan(x));
    case M_EXP: return v_num(exp(x));
    case M_LOG:
    case M_LOG2:
    case M_LOG10:
        if (x <= 0) return vm_error(vm, a->site, "%s() of a non-positive number (%g)", name, x);
        if (fn == M_LOG && a->n > 1) {
            double base;
            if (!arg_num(vm, a, 1, "log() base", &base)) return v_exc();
            if (base <= 0 || base == 1) return vm_error(vm, a->site, "log(): bad base %g", base);
            return v_num(log(x) / log(base));
        }
        return v_num(fn == M_LOG ? log(x) : fn == M_LOG2 ? log2(x) : log10(x));
    case M_FLOOR: return v_num(floor(x));
    case M_CEIL: return v_num(ceil(x));
    case M_ROUND:
    case M_NFUNCS: break; /* round() is bi_round */
    }
    qh_unreachable();
}

#define MATH1(nm, id) \
    static Value bi_##nm(VM *vm, Args *a) { return math1(vm, a, id, #nm); }
MATH1(abs, M_ABS)
MATH1(sqrt, M_SQRT)
MATH1(sin, M_SIN)
MATH1(cos, M_COS)
MATH1(tan, M_TAN)
MATH1(asin, M_ASIN)
MATH1(acos, M_ACOS)
MATH1(atan, M_ATAN)
MATH1(exp, M_EXP)
MATH1(log, M_LOG)
MATH1(log2, M_LOG2)
MATH1(log10, M_LOG10)
MATH1(floor, M_FLOOR)
MATH1(ceil, M_CEIL)

static Value bi_atan2(VM *vm, Args *a)
{
    double y0, x0;
    if ((a->v[0].t != T_NUM || a->v[1].t != T_NUM) && tp_number(a->v[0], &y0) &&
        tp_number(a->v[1], &x0)) {
        /* differentiated numbers: atan2(y, x) = atan(y / x) up to a
         * constant, the same derivative */
        Value q = tp_binop(vm, OP_DIV, a->v[0], a->v[1], a->site);
        if (IS_EXC(q)) return q;
        Value r = q.t == T_NUM ? v_num(atan(q.n)) : tp_math(vm, M_ATAN, q, 0, a->site);
        decref(q);
        if (r.t == T_NOTIMPL) return vm_error(vm, a->site, "atan2() needs numbers");
        if (IS_EXC(r) || r.t == T_NUM) return IS_EXC(r) ? r : v_num(atan2(y0, x0));
        Value c = tp_binop(vm, OP_ADD, r, v_num(atan2(y0, x0) - atan(y0 / x0)), a->site);
        decref(r);
        return c;
    }
    double y, x;
    if (!arg_num(vm, a, 0, "atan2() y", &y) || !arg_num(vm, a, 1, "atan2() x", &x)) return v_exc();
    return v_num(atan2(y, x));
}

static Value bi_round(VM *vm, Args *a)
{
    long digits = 0;
    Value *dk = arg_kw(a, "digits");
    if (a->n > 1) {
        if (!arg_int(vm, a, 1, "round() digits", &digits)) return v_exc();
    } else if (dk) {
        Args t = { 1, dk, 0, NULL, NULL, a->site, NULL };
        if (!arg_int(vm, &t, 0, "round() digits", &digits)) return v_exc();
    }
    double x;
    if (!tp_number(a->v[0], &x)) { /* numbers, and tracked ones (rounded to plain ones) */
        Value r = tp_math(vm, M_ROUND, a->v[0], digits, a->site);
        if (r.t != T_NOTIMPL) return r;
        if (!arg_num(vm, a, 0, "round() argument", &x)) return v_exc();
    }
    if (!isfinite(x)) return v_num(x);
    if (digits == 0) return v_num(nearbyint(x));
    if (digits > 300 || digits < -300) return v_num(digits > 0 ? x : 0);
    if (digits > 0) {
        /* correctly rounded, half to even on the exact binary value, as Python */
        char buf[512];
        snprintf(buf, sizeof buf, "%.*f", (int)digits, x);
        return v_num(strtod(buf, NULL));
    }
    double p = pow(10, (double)-digits);
    return v_num(nearbyint(x / p) * p);
}

static Value minmax(VM *vm, Args *a, bool is_max)
{
    const char *nm = is_max ? "max" : "min";
    if (a->n == 1 && a->v[0].t != T_LIST) {
        Value r = tp_reduce(vm, is_max ? R_MAX : R_MIN, a->v[0], a);
        if (r.t != T_NOTIMPL) return r;
    }
    Value *items = a->v;
    size_t n = (size_t)a->n;
    if (a->n == 1) {
        if (a->v[0].t != T_LIST)
            return vm_error(vm, a->site, "%s() of a single %s: give a list or several numbers", nm,
                            type_name(a->v[0]));
        items = AS_LIST(a->v[0])->v;
        n = AS_LIST(a->v[0])->len;
    }
    if (!n) return vm_error(vm, a->site, "%s() of an empty list", nm);
    Value best = tp_force(vm, items[0], a->site);
    if (IS_EXC(best)) return best;
    for (size_t i = 1; i < n; i++) {
        Value x = tp_force(vm, items[i], a->site);
        if (IS_EXC(x)) {
            decref(best);
            return x;
        }
        Value c = tp_binop(vm, is_max ? OP_GT : OP_LT, x, best, a->site);
        if (IS_EXC(c)) {
            decref(x);
            decref(best);
            return c;
        }
        if (c.t != T_BOOL) {
            /* arrays compare elementwise: no single answer */
            decref(c);
            decref(x);
            decref(best);
            return vm_error(vm, a->site,
                            "%s() compares values one at a time: for arrays use %s(a) of one array",
                            nm, nm);
        }
        if (c.b) {
            decref(best);
            best = x;
        } else
            decref(x);
    }
    return best;
}
static Value bi_min(VM *vm, Args *a) { return minmax(vm, a, false); }
static Value bi_max(VM *vm, Args *a) { return minmax(vm, a, true); }

static Value bi_sum(VM *vm, Args *a)
{
    Value c = a->v[0];
    if (c.t != T_LIST) {
        Value r = tp_reduce(vm, R_SUM, c, a);
        if (r.t != T_NOTIMPL) return r;
        return vm_error(vm, a->site, "sum() needs a list or array, not %s", type_name(c));
    }
    ObjList *l = AS_LIST(c);
    Value acc = a->n > 1 ? a->v[1] : v_num(0);
    incref(acc);
    for (size_t i = 0; i < l->len; i++) {
        Value x = l->v[i];
        if (acc.t == T_NUM && x.t == T_NUM) {
            acc.n += x.n;
            continue;
        }
        Value r = tp_binop(vm, OP_ADD, acc, x, a->site);
        decref(acc);
        if (IS_EXC(r)) return r;
        acc = r;
    }
    return acc;
}

static const char *const kw_print[] = { "sep", "end", NULL };
static const char *const kw_split[] = { "sep", NULL };
static const char *const kw_round[] = { "digits", NULL };
static const char *const kw_sorted[] = { "key", "reverse", NULL };
static const char *const kw_axis[] = { "axis", NULL };
static const char *const kw_start[] = { "start", NULL };
static const char *const kw_default[] = { "default", NULL };

static const BuiltinDef builtins_core[] = {
    { "print", bi_print, 0, -1, BI_IMPURE, kw_print, 0 },
    { "fmt", bi_fmt, 1, -1, 0, NULL, 0 },
    { "str", bi_str, 1, 1, 0, NULL, 0 },
    { "num", bi_num, 1, 1, 0, NULL, 0 },
    { "int", bi_int, 1, 1, 0, NULL, 0 },
    { "type", bi_type, 1, 1, BI_SHALLOW, NULL, 0 },
    { "complex", bi_complex, 0, 2, 0, NULL, 0 },
    { "len", bi_len, 1, 1, BI_SHALLOW, NULL, 0 },
    { "range", bi_range, 1, 3, 0, NULL, 0 },
    { "append", bi_append, 2, 2, BI_LAZY | BI_MUTATES, NULL, 0 },
    { "pop", bi_pop, 1, 3, BI_SHALLOW | BI_MUTATES, NULL, 0 },
    { "insert", bi_insert, 3, 3, BI_LAZY | BI_MUTATES, NULL, 0 },
    { "keys", bi_keys, 1, 1, BI_SHALLOW, NULL, 0 },
    { "values", bi_values, 1, 1, BI_SHALLOW, NULL, 0 },
    { "items", bi_items, 1, 1, BI_SHALLOW, NULL, 0 },
    { "sorted", bi_sorted, 1, 1, BI_CALLS, kw_sorted, 0 },
    { "reversed", bi_reversed, 1, 1, BI_SHALLOW, NULL, 0 },
    { "enumerate", bi_enumerate, 1, 2, BI_SHALLOW, kw_start, 0 },
    { "zip", bi_zip, 0, -1, BI_SHALLOW, NULL, 0 },
    { "any", bi_any, 1, 1, 0, NULL, 0 },
    { "all", bi_all, 1, 1, 0, NULL, 0 },
    { "get", bi_get, 2, 3, BI_SHALLOW, kw_default, 0 },
    { "ord", bi_ord, 1, 1, 0, NULL, 0 },
    { "chr", bi_chr, 1, 1, 0, NULL, 0 },
    { "error", bi_error, 1, 1, 0, NULL, 0 },
    { "clock", bi_clock, 0, 0, 0, NULL, 0 },
    { "sleep", bi_sleep, 1, 1, 0, NULL, 0 },
    { "input", bi_input, 0, 1, BI_IMPURE, NULL, 0 },
    { "join", bi_join, 1, 2, 0, kw_split, 0 },
    { "split", bi_split, 1, 2, 0, kw_split, 0 },
    { "replace", bi_replace, 3, 3, 0, NULL, 0 },
    { "upper", bi_upper, 1, 1, 0, NULL, 0 },
    { "lower", bi_lower, 1, 1, 0, NULL, 0 },
    { "strip", bi_strip, 1, 2, 0, NULL, 0 },
    { "startswith", bi_startswith, 2, 2, 0, NULL, 0 },
    { "endswith", bi_endswith, 2, 2, 0, NULL, 0 },
    { "find", bi_find, 2, 2, 0, NULL, 0 },
    { "abs", bi_abs, 1, 1, 0, NULL, 0 },
    { "sqrt", bi_sqrt, 1, 1, 0, NULL, 0 },
    { "sin", bi_sin, 1, 1, 0, NULL, 0 },
    { "cos", bi_cos, 1, 1, 0, NULL, 0 },
    { "tan", bi_tan, 1, 1, 0, NULL, 0 },
    { "asin", bi_asin, 1, 1, 0, NULL, 0 },
    { "acos", bi_acos, 1, 1, 0, NULL, 0 },
    { "atan", bi_atan, 1, 1, 0, NULL, 0 },
    { "atan2", bi_atan2, 2, 2, 0, NULL, 0 },
    { "exp", bi_exp, 1, 1, 0, NULL, 0 },
    { "log", bi_log, 1, 2, 0, NULL, 0 },
    { "log2", bi_log2, 1, 1, 0, NULL, 0 },
    { "log10", bi_log10, 1, 1, 0, NULL, 0 },
    { "floor", bi_floor, 1, 1, 0, NULL, 0 },
    { "ceil", bi_ceil, 1, 1, 0, NULL, 0 },
    { "round", bi_round, 1, 2, 0, kw_round, 0 },
    { "min", bi_min, 1, -1, 0, kw_axis, 0 },
    { "max", bi_max, 1, -1, 0, kw_axis, 0 },
    { "sum", bi_sum, 1, 2, 0, kw_axis, 0 },
    { "pi", NULL, 0, 0, BI_CONST, NULL, M_PI },
    { "e", NULL, 0, 0, BI_CONST, NULL, M_E },
    { "inf", NULL, 0, 0, BI_CONST, NULL, INFINITY },
    { "nan", NULL, 0, 0, BI_CONST, NULL, NAN },
    { NULL, NULL, 0, 0, 0, NULL, 0 },
};

void corelib_open(void) { builtins_add(builtins_core); }
