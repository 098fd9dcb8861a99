/* test_value.c — Check unit tests of the values (src/value.c): strings,
 * lists, insertion-ordered dicts, equality, printing (lang/values.md),
 * deep copy (shared structure, cycles, independence) and reference counts.
 *
 * Reference counts are checked two ways: by reading `rc`, and by counting
 * the frees of probe objects (a type whose free hook counts), so a leak or
 * a double free shows here even without a sanitizer. Run this file under
 * ASan or valgrind too. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "value.h"

/* ================================================================ helpers */

static char *repr(Value v, bool quoted)
{
    Buf b;
    buf_init(&b);
    value_repr(&b, v, quoted);
    char *s = strdup(b.p ? b.p : "");
    buf_free(&b);
    return s;
}

#define CHECK_REPR(v, quoted, want)                                                      \
    do {                                                                                 \
        char *got_ = repr((v), (quoted));                                                \
        ck_assert_msg(strcmp(got_, (want)) == 0, "repr: got %s, want %s", got_, (want)); \
        free(got_);                                                                      \
    } while (0)

/* Probe objects: a kind registered here (type_register_new) whose free
 * slot counts, to watch frees; and a lazy kind standing for a future. */
typedef struct Probe {
    Obj h;
    int id;
} Probe;
static int probes_freed;
static ValType probe_tag, lazy_tag;
static void probe_free(Obj *o)
{
    probes_freed++;
    free(o);
}
static void probe_repr(Buf *b, Value v, bool quoted)
{
    (void)quoted;
    buf_printf(b, "<probe %d>", ((Probe *)v.o)->id);
}
static Value probe_copy(Value v, CopyCtx *cc)
{
    (void)cc;
    Probe *p = (Probe *)obj_alloc(sizeof(Probe), probe_tag);
    p->id = ((Probe *)v.o)->id + 1000;
    return v_obj(&p->h);
}
static const TypeOps probe_ops = {
    .name = "probe", .free = probe_free, .repr = probe_repr, .copy = probe_copy
};
static const TypeOps lazy_ops = { .name = "future", .flags = TF_LAZY };
static void install_probe_hooks(void)
{
    if (!probe_tag) {
        probe_tag = type_register_new(&probe_ops);
        lazy_tag = type_register_new(&lazy_ops);
    }
    probes_freed = 0;
}
static Value probe_new(int id)
{
    Probe *p = (Probe *)obj_alloc(sizeof(Probe), probe_tag);
    p->id = id;
    return v_obj(&p->h);
}

static Value list_of(int n, ...)
{
    ObjList *l = list_new(0);
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) list_push(l, va_arg(ap, Value));
    va_end(ap);
    return v_list(l);
}

/* Keys of a dict in iteration (insertion) order, as numbers. */
static int dict_num_keys(ObjDict *d, double *out, int max)
{
    int k = 0;
    for (size_t i = 0; i < d->nent; i++)
        if (d->ent[i].live && k < max) out[k++] = d->ent[i].key.n;
    return k;
}

/* ================================================================ strings */

START_TEST(str_basics)
{
    ObjStr *s = str_new("hello", 5);
    ck_assert_int_eq(s->h.type, T_STR);
    ck_assert_uint_eq(s->h.rc, 1);
    ck_assert_uint_eq(s->len, 5);
    ck_assert_str_eq(s->s, "hello");
    ck_assert(s->ascii);
    ck_assert_uint_eq(str_nchars(s), 5);
    ck_assert_uint_eq(s->hash, str_hash("hello", 5));
    ObjStr *t = str_from("hello");
    ck_assert_ptr_ne(s, t);
    ck_assert_uint_eq(s->hash, t->hash);
    ck_assert(str_eq(s, t));
    ObjStr *u = str_from("hellp");
    ck_assert(!str_eq(s, u));
    ObjStr *e = str_from("");
    ck_assert_uint_eq(e->len, 0);
    ck_assert_uint_eq(str_nchars(e), 0);
    ck_assert_int_eq(e->s[0], 0);
    /* bytes after n are not taken */
    ObjStr *p = str_new("abcdef", 3);
    ck_assert_str_eq(p->s, "abc");
    ck_assert_uint_eq(p->len, 3);
    ck_assert_uint_eq(p->hash, str_hash("abc", 3));
    decref(v_obj(&s->h));
    decref(v_obj(&t->h));
    decref(v_obj(&u->h));
    decref(v_obj(&e->h));
    decref(v_obj(&p->h));
}
END_TEST

START_TEST(str_embedded_nul)
{
    ObjStr *a = str_new("a\0b", 3), *b = str_new("a\0c", 3), *c = str_new("a\0b", 3);
    ck_assert_uint_eq(a->len, 3);
    ck_assert(!str_eq(a, b));
    ck_assert(str_eq(a, c));
    ck_assert_uint_eq(str_nchars(a), 3);
    Value va = v_obj(&a->h), vb = v_obj(&b->h);
    ck_assert(!value_eq(va, vb));
    decref(va);
    decref(vb);
    decref(v_obj(&c->h));
}
END_TEST

START_TEST(str_hash_equality)
{
    /* equal content, equal hash; the hash is FNV-1a of the bytes */
    ck_assert_uint_eq(str_hash("", 0), 2166136261u);
    ck_assert_uint_eq(str_hash("a", 1), 0xe40c292cu);
    ck_assert_uint_eq(str_hash("foobar", 6), 0xbf9cf968u);
    for (int i = 0; i < 200; i++) {
        char buf[32];
        int n = snprintf(buf, sizeof buf, "key%d", i);
        Value a = v_strn(buf, (size_t)n), b = v_str(buf);
        ck_assert_uint_eq(value_hash(a), value_hash(b));
        ck_assert(value_eq(a, b));
        decref(a);
        decref(b);
    }
    ck_assert_uint_eq(value_hash(v_num(0.0)), value_hash(v_num(-0.0)));
    ck_assert_uint_ne(value_hash(v_bool(true)), value_hash(v_bool(false)));
}
END_TEST

START_TEST(str_utf8)
{
    /* h é l l o € 😀 : 1 2 1 1 1 3 4 bytes */
    const char *txt = "h\xc3\xa9llo\xe2\x82\xac\xf0\x9f\x98\x80";
    ObjStr *s = str_from(txt);
    ck_assert_uint_eq(s->len, 13);
    ck_assert(!s->ascii);
    ck_assert_uint_eq(str_nchars(s), 7);
    ck_assert_int_eq(s->nchars, 7); /* counted once, cached */
    size_t want[] = { 0, 1, 3, 4, 5, 6, 9, 13 };
    for (size_t i = 0; i <= 7; i++)
        ck_assert_msg(str_offset(s, i) == want[i], "offset of %zu: %zu, want %zu", i,
                      str_offset(s, i), want[i]);
    ObjStr *a = str_from("plain");
    for (size_t i = 0; i <= 5; i++) ck_assert_uint_eq(str_offset(a, i), i);
    /* str_alloc + str_finish */
    ObjStr *b = str_alloc(4);
    memcpy(b->s, "\xc3\xa9\xc3\xa9", 4);
    str_finish(b);
    ck_assert(!b->ascii);
    ck_assert_uint_eq(str_nchars(b), 2);
    ck_assert_uint_eq(str_offset(b, 1), 2);
    ck_assert_uint_eq(b->hash, str_hash("\xc3\xa9\xc3\xa9", 4));
    decref(v_obj(&s->h));
    decref(v_obj(&a->h));
    decref(v_obj(&b->h));
}
END_TEST

/* ================================================================ lists */

START_TEST(list_push_grow)
{
    ObjList *l = list_new(0);
    ck_assert_uint_eq(l->len, 0);
    for (int i = 0; i < 1000; i++) {
        list_push(l, v_num(i));
        ck_assert_uint_eq(l->len, (size_t)i + 1);
        ck_assert_uint_ge(l->cap, l->len);
    }
    for (int i = 0; i < 1000; i++) {
        ck_assert_int_eq(l->v[i].t, T_NUM);
        ck_assert(l->v[i].n == i);
    }
    Value v = v_list(l);
    ck_assert_int_eq(v.t, T_LIST);
    ck_assert_str_eq(type_name(v), "list");
    decref(v);
    ObjList *m = list_new(3);
    ck_assert_uint_eq(m->cap, 3);
    for (int i = 0; i < 10; i++) list_push(m, v_str("s"));
    ck_assert_uint_eq(m->len, 10);
    decref(v_list(m));
}
END_TEST

/* ================================================================ dicts */

START_TEST(dict_insertion_order)
{
    ObjDict *d = dict_new();
    enum { N = 1000 };
    for (int i = 0; i < N; i++) {
        double k = (double)((i * 7919) % N); /* a permutation of 0..N-1 */
        dict_set(d, v_num(k), v_num(i));
        ck_assert_uint_eq(d->len, (size_t)i + 1);
    }
    static double keys[N];
    ck_assert_int_eq(dict_num_keys(d, keys, N), N);
    for (int i = 0; i < N; i++) ck_assert(keys[i] == (double)((i * 7919) % N));
    for (int i = 0; i < N; i++) {
        Value out;
        ck_assert(dict_get(d, v_num((double)((i * 7919) % N)), &out));
        ck_assert(out.n == i);
    }
    Value out;
    ck_assert(!dict_get(d, v_num(N), &out));
    ck_assert(!dict_get(d, v_num(0.5), &out));
    decref(v_obj(&d->h));

    /* string keys */
    d = dict_new();
    char buf[32];
    for (int i = 0; i < N; i++) {
        snprintf(buf, sizeof buf, "k%d", N - i);
        Value k = v_str(buf);
        dict_set(d, k, v_num(i));
        decref(k);
    }
    int j = 0;
    for (size_t i = 0; i < d->nent; i++) {
        if (!d->ent[i].live) continue;
        snprintf(buf, sizeof buf, "k%d", N - j);
        ck_assert_str_eq(AS_STR(d->ent[i].key)->s, buf);
        ck_assert(d->ent[i].val.n == j);
        j++;
    }
    ck_assert_int_eq(j, N);
    Value k = v_str("k1");
    ck_assert(dict_get(d, k, &out));
    ck_assert(out.n == N - 1);
    decref(k);
    decref(v_obj(&d->h));
}
END_TEST

START_TEST(dict_overwrite_keeps_position)
{
    ObjDict *d = dict_new();
    Value a = v_str("a"), b = v_str("b"), c = v_str("c");
    dict_set(d, a, v_num(1));
    dict_set(d, b, v_num(2));
    dict_set(d, c, v_num(3));
    Value a2 = v_str("a");
    dict_set(d, a2, v_num(10));
    ck_assert_uint_eq(d->len, 3);
    CHECK_REPR(v_obj(&d->h), false, "{\"a\": 10, \"b\": 2, \"c\": 3}");
    /* delete, then reinsert: goes to the end */
    Value out;
    ck_assert(dict_del(d, a, &out));
    ck_assert(out.n == 10);
    ck_assert_uint_eq(d->len, 2);
    ck_assert(!dict_get(d, a, &out));
    ck_assert(!dict_del(d, a, &out));
    CHECK_REPR(v_obj(&d->h), false, "{\"b\": 2, \"c\": 3}");
    dict_set(d, a, v_num(4));
    CHECK_REPR(v_obj(&d->h), false, "{\"b\": 2, \"c\": 3, \"a\": 4}");
    ck_assert(dict_get(d, a2, &out));
    ck_assert(out.n == 4);
    decref(a);
    decref(b);
    decref(c);
    decref(a2);
    decref(v_obj(&d->h));
}
END_TEST

START_TEST(dict_key_kinds)
{
    ObjDict *d = dict_new();
    Value sn = v_str("num"), sb = v_str("bool"), s0 = v_str("zero"), sf = v_str("false");
    dict_set(d, v_num(1), sn);
    dict_set(d, v_bool(true), sb);
    dict_set(d, v_num(0), s0);
    dict_set(d, v_bool(false), sf);
    ck_assert_uint_eq(d->len, 4); /* 1 and true are distinct keys */
    Value out;
    ck_assert(dict_get(d, v_num(1), &out));
    ck_assert_str_eq(AS_STR(out)->s, "num");
    ck_assert(dict_get(d, v_bool(true), &out));
    ck_assert_str_eq(AS_STR(out)->s, "bool");
    ck_assert(dict_get(d, v_bool(false), &out));
    ck_assert_str_eq(AS_STR(out)->s, "false");
    /* -0 and 0 are the same key */
    ck_assert(dict_get(d, v_num(-0.0), &out));
    ck_assert_str_eq(AS_STR(out)->s, "zero");
    Value sm = v_str("minus zero");
    dict_set(d, v_num(-0.0), sm);
    ck_assert_uint_eq(d->len, 4);
    ck_assert(dict_get(d, v_num(0.0), &out));
    ck_assert_str_eq(AS_STR(out)->s, "minus zero");
    /* a string "1" is not the number 1 */
    Value one = v_str("1");
    ck_assert(!dict_get(d, one, &out));
    decref(one);
    ck_assert(key_ok(v_num(1)));
    ck_assert(key_ok(v_bool(false)));
    ck_assert(key_ok(sn));
    ck_assert(!key_ok(v_nil()));
    Value l = v_list(list_new(0));
    ck_assert(!key_ok(l));
    decref(l);
    decref(sn);
    decref(sb);
    decref(s0);
    decref(sf);
    decref(sm);
    decref(v_obj(&d->h));
}
END_TEST

START_TEST(dict_many_deletes)
{
    ObjDict *d = dict_new();
    enum { N = 2000 };
    for (int i = 0; i < N; i++) dict_set(d, v_num(i), v_num(i * 10));
    Value out;
    for (int i = 0; i < N; i += 2) {
        ck_assert(dict_del(d, v_num(i), &out));
        ck_assert(out.n == i * 10);
    }
    ck_assert_uint_eq(d->len, N / 2);
    for (int i = 0; i < N; i++) {
        bool found = dict_get(d, v_num(i), &out);
        ck_assert_msg(found == (i % 2 == 1), "key %d: found %d", i, found);
        if (found) ck_assert(out.n == i * 10);
    }
    /* insert more: the table is rebuilt with its tombstones gone */
    for (int i = N; i < 2 * N; i++) dict_set(d, v_num(i), v_num(i * 10));
    ck_assert_uint_eq(d->len, N / 2 + N);
    static double keys[3 * N];
    int k = dict_num_keys(d, keys, 3 * N);
    ck_assert_int_eq(k, N / 2 + N);
    for (int i = 0; i < N / 2; i++) ck_assert(keys[i] == 2 * i + 1);
    for (int i = 0; i < N; i++) ck_assert(keys[N / 2 + i] == N + i);
    for (int i = 0; i < 2 * N; i++) {
        bool found = dict_get(d, v_num(i), &out);
        ck_assert_msg(found == (i >= N || i % 2 == 1), "key %d after rebuild: found %d", i, found);
    }
    /* delete everything, then the dict works as new */
    for (int i = 0; i < 2 * N; i++) dict_del(d, v_num(i), &out);
    ck_assert_uint_eq(d->len, 0);
    CHECK_REPR(v_obj(&d->h), false, "{}");
    dict_set(d, v_num(7), v_num(70));
    ck_assert(dict_get(d, v_num(7), &out));
    ck_assert(out.n == 70);
    CHECK_REPR(v_obj(&d->h), false, "{7: 70}");
    decref(v_obj(&d->h));
}
END_TEST

START_TEST(dict_churn_bounded)
{
    /* insert/delete of the same keys forever: memory stays bounded */
    ObjDict *d = dict_new();
    Value out;
    int bad = 0;
    for (int round = 0; round < 100000; round++) {
        dict_set(d, v_num(round % 5), v_num(round));
        if (!dict_del(d, v_num(round % 5), &out) || out.n != round) bad++;
    }
    ck_assert_int_eq(bad, 0);
    ck_assert_uint_eq(d->len, 0);
    ck_assert_uint_lt(d->idxcap, 1024);
    ck_assert_uint_lt(d->cap, 1024);
    dict_set(d, v_num(1), v_num(2));
    ck_assert(dict_get(d, v_num(1), &out));
    decref(v_obj(&d->h));
}
END_TEST

/* ================================================================ equality */

START_TEST(eq_scalars)
{
    ck_assert(value_eq(v_num(1), v_num(1)));
    ck_assert(!value_eq(v_num(1), v_num(2)));
    ck_assert(value_eq(v_num(0.0), v_num(-0.0)));
    ck_assert(!value_eq(v_num(NAN), v_num(NAN)));
    ck_assert(!value_eq(v_num(1), v_bool(true))); /* 1 != true */
    ck_assert(!value_eq(v_num(0), v_bool(false)));
    ck_assert(!value_eq(v_nil(), v_bool(false)));
    ck_assert(!value_eq(v_nil(), v_num(0)));
    ck_assert(value_eq(v_nil(), v_nil()));
    ck_assert(value_eq(v_bool(true), v_bool(true)));
    ck_assert(!value_eq(v_bool(true), v_bool(false)));
    Value s1 = v_str("abc"), s2 = v_str("abc"), s3 = v_str("abd"), one = v_str("1");
    ck_assert(value_eq(s1, s2));
    ck_assert(!value_eq(s1, s3));
    ck_assert(!value_eq(one, v_num(1)));
    decref(s1);
    decref(s2);
    decref(s3);
    decref(one);
}
END_TEST

START_TEST(eq_complex)
{
    Value c10 = v_complex(1, 0), c11 = v_complex(1, 1), c11b = v_complex(1, 1);
    ck_assert_str_eq(type_name(c10), "complex");
    ck_assert(value_eq(c10, v_num(1)));
    ck_assert(value_eq(v_num(1), c10));
    ck_assert(!value_eq(c11, v_num(1)));
    ck_assert(value_eq(c11, c11b));
    ck_assert(!value_eq(c10, c11));
    ck_assert(!value_eq(c10, v_bool(true)));
    decref(c10);
    decref(c11);
    decref(c11b);
}
END_TEST

START_TEST(eq_containers)
{
    Value a = list_of(2, v_num(1), list_of(2, v_num(2), v_str("x")));
    Value b = list_of(2, v_num(1), list_of(2, v_num(2), v_str("x")));
    Value c = list_of(2, v_num(1), list_of(2, v_num(2), v_str("y")));
    Value d = list_of(1, v_num(1));
    ck_assert(value_eq(a, b));
    ck_assert(value_eq(a, a));
    ck_assert(!value_eq(a, c));
    ck_assert(!value_eq(a, d));
    Value e1 = list_of(0), e2 = list_of(0);
    ck_assert(value_eq(e1, e2));
    ck_assert(!value_eq(e1, v_nil()));
    /* dicts compare by content, not by order */
    ObjDict *x = dict_new(), *y = dict_new();
    Value ka = v_str("a"), kb = v_str("b");
    dict_set(x, ka, v_num(1));
    dict_set(x, kb, b);
    dict_set(y, kb, a);
    dict_set(y, ka, v_num(1));
    ck_assert(value_eq(v_obj(&x->h), v_obj(&y->h)));
    dict_set(y, ka, v_num(2));
    ck_assert(!value_eq(v_obj(&x->h), v_obj(&y->h)));
    ck_assert(!value_eq(v_obj(&x->h), a));
    decref(ka);
    decref(kb);
    decref(v_obj(&x->h));
    decref(v_obj(&y->h));
    decref(a);
    decref(b);
    decref(c);
    decref(d);
    decref(e1);
    decref(e2);
}
END_TEST

/* ================================================================ printing */

START_TEST(repr_scalars)
{
    CHECK_REPR(v_nil(), false, "nil");
    CHECK_REPR(v_bool(true), false, "true");
    CHECK_REPR(v_bool(false), false, "false");
    CHECK_REPR(v_num(3), false, "3");
    CHECK_REPR(v_num(-7), false, "-7");
    CHECK_REPR(v_num(2.5), false, "2.5");
    CHECK_REPR(v_num(-0.0), false, "0");
    CHECK_REPR(v_num(0.1 + 0.2), false, "0.30000000000000004");
    CHECK_REPR(v_num(1e-05), false, "1e-05");
    CHECK_REPR(v_num(INFINITY), false, "inf");
    CHECK_REPR(v_num(NAN), false, "nan");
    Value c = v_complex(1, 2), j = v_complex(0, 1), h = v_complex(0.5, -1);
    CHECK_REPR(c, false, "(1+2j)");
    CHECK_REPR(j, false, "1j");
    CHECK_REPR(h, false, "(0.5-1j)");
    decref(c);
    decref(j);
    decref(h);
    Value s = v_str("hi there");
    CHECK_REPR(s, false, "hi there");
    CHECK_REPR(s, true, "\"hi there\"");
    decref(s);
}
END_TEST

START_TEST(repr_containers)
{
    Value l = list_of(5, v_num(1), v_str("two"), v_num(3.5), v_nil(), v_bool(true));
    CHECK_REPR(l, false, "[1, \"two\", 3.5, nil, true]");
    CHECK_REPR(l, true, "[1, \"two\", 3.5, nil, true]");
    decref(l);
    ObjDict *d = dict_new();
    Value ka = v_str("a"), kb = v_str("b");
    Value inner = list_of(2, v_num(2), v_num(3));
    dict_set(d, ka, v_num(1));
    dict_set(d, kb, inner);
    CHECK_REPR(v_obj(&d->h), false, "{\"a\": 1, \"b\": [2, 3]}");
    dict_set(d, v_num(2), v_bool(false));
    dict_set(d, v_bool(true), v_nil());
    CHECK_REPR(v_obj(&d->h), false, "{\"a\": 1, \"b\": [2, 3], 2: false, true: nil}");
    decref(ka);
    decref(kb);
    decref(inner);
    decref(v_obj(&d->h));
    Value e = list_of(0);
    CHECK_REPR(e, false, "[]");
    decref(e);
    ObjDict *ed = dict_new();
    CHECK_REPR(v_obj(&ed->h), false, "{}");
    decref(v_obj(&ed->h));
    Value nested = list_of(3, list_of(0), list_of(1, list_of(1, v_num(1))), v_complex(1, -2));
    CHECK_REPR(nested, false, "[[], [[1]], (1-2j)]");
    decref(nested);
}
END_TEST

START_TEST(repr_string_escapes)
{
    Value s = v_strn("a\"b\\c\nd\te\rf\x01g\x7f", 14);
    CHECK_REPR(s, true, "\"a\\\"b\\\\c\\nd\\te\\rf\\x01g\\x7f\"");
    CHECK_REPR(s, false, "a\"b\\c\nd\te\rf\x01g\x7f");
    Value z = v_strn("x\0y", 3);
    CHECK_REPR(z, true, "\"x\\x00y\"");
    Value u = v_str("caf\xc3\xa9 'q'");
    CHECK_REPR(u, true, "\"caf\xc3\xa9 'q'\""); /* UTF-8 and ' are kept */
    Value l = list_of(3, s, z, u);
    CHECK_REPR(l, false,
               "[\"a\\\"b\\\\c\\nd\\te\\rf\\x01g\\x7f\", \"x\\x00y\", \"caf\xc3\xa9 'q'\"]");
    decref(l);
}
END_TEST

START_TEST(repr_self_reference)
{
    ObjList *l = list_new(0);
    list_push(l, v_num(1));
    incref(v_list(l));
    list_push(l, v_list(l));
    CHECK_REPR(v_list(l), false, "[1, [...]]");
    /* break the cycle to free */
    l->len = 1;
    decref(v_list(l));
    decref(v_list(l));

    ObjDict *d = dict_new();
    Value k = v_str("self");
    dict_set(d, k, v_obj(&d->h));
    CHECK_REPR(v_obj(&d->h), false, "{\"self\": {...}}");
    Value out;
    dict_del(d, k, &out);
    decref(out);
    decref(k);
    decref(v_obj(&d->h));
}
END_TEST

/* A cycle through two containers prints like Python's: the container being
 * printed shows as [...] / {...} wherever it recurs, instead of recursing
 * until the stack runs out. */
START_TEST(repr_indirect_cycle)
{
    ObjList *a = list_new(0), *b = list_new(0);
    list_push(a, v_num(1));
    incref(v_list(b));
    list_push(a, v_list(b));
    incref(v_list(a));
    list_push(b, v_list(a));
    CHECK_REPR(v_list(a), false, "[1, [[...]]]");
    b->len = 0;
    decref(v_list(a));
    decref(v_list(a));
    decref(v_list(b));
}
END_TEST

START_TEST(repr_indirect_cycle_dict)
{
    ObjDict *d = dict_new();
    ObjList *l = list_new(0);
    incref(v_obj(&d->h));
    list_push(l, v_obj(&d->h));
    Value k = v_str("l");
    dict_set(d, k, v_list(l));
    CHECK_REPR(v_obj(&d->h), false, "{\"l\": [{...}]}");
    l->len = 0;
    decref(v_obj(&d->h));
    decref(v_list(l));
    decref(k);
    decref(v_obj(&d->h));
}
END_TEST

START_TEST(repr_hooks_and_types)
{
    install_probe_hooks();
    Value p = probe_new(5);
    CHECK_REPR(p, false, "<probe 5>");
    Value l = list_of(1, p);
    CHECK_REPR(l, false, "[<probe 5>]");
    decref(l);
    ck_assert_int_eq(probes_freed, 1);
    ck_assert_str_eq(type_name(v_nil()), "nil");
    ck_assert_str_eq(type_name(v_bool(true)), "bool");
    ck_assert_str_eq(type_name(v_num(1)), "number");
    Value s = v_str("");
    ck_assert_str_eq(type_name(s), "string");
    decref(s);
    ObjDict *d = dict_new();
    ck_assert_str_eq(type_name(v_obj(&d->h)), "dict");
    decref(v_obj(&d->h));
    Buf b;
    buf_init(&b);
    buf_printf(&b, "%d-%s", 42, "x");
    buf_putc(&b, '!');
    buf_puts(&b, "yz");
    ck_assert_str_eq(b.p, "42-x!yz");
    ck_assert_uint_eq(b.len, 7);
    for (int i = 0; i < 1000; i++) buf_printf(&b, "%04d", i);
    ck_assert_uint_eq(b.len, 7 + 4000);
    ck_assert_uint_eq(strlen(b.p), b.len);
    buf_free(&b);
}
END_TEST

/* ================================================================ deep copy */

START_TEST(copy_shared_stays_shared)
{
    Value inner = list_of(2, v_num(1), v_str("s"));
    incref(inner);
    Value outer = list_of(3, inner, inner, v_str("t"));
    CopyCtx cc;
    copy_init(&cc);
    Value c = value_copy_deep(outer, &cc);
    copy_done(&cc);
    ck_assert_ptr_null(cc.error);
    ck_assert_int_eq(c.t, T_LIST);
    ck_assert_ptr_ne(c.o, outer.o);
    ObjList *cl = AS_LIST(c);
    ck_assert_uint_eq(cl->len, 3);
    ck_assert_ptr_eq(cl->v[0].o, cl->v[1].o); /* shared in the original: shared in the copy */
    ck_assert_ptr_ne(cl->v[0].o, inner.o);
    ck_assert_uint_eq(cl->v[0].o->rc, 2);
    ck_assert_ptr_ne(AS_LIST(cl->v[0])->v[1].o, AS_LIST(inner)->v[1].o); /* strings copied too */
    ck_assert(value_eq(c, outer));
    decref(c);
    decref(outer);
}
END_TEST

START_TEST(copy_is_independent)
{
    Value inner = list_of(1, v_num(1));
    ObjDict *d = dict_new();
    Value k = v_str("k");
    dict_set(d, k, inner);
    Value orig = list_of(2, inner, v_obj(&d->h)); /* takes inner and d */
    CopyCtx cc;
    copy_init(&cc);
    Value c = value_copy_deep(orig, &cc);
    copy_done(&cc);
    char *before = repr(c, false);
    /* change the original everywhere */
    list_push(AS_LIST(inner), v_num(2));
    list_push(AS_LIST(orig), v_num(3));
    dict_set(d, v_num(9), v_num(9));
    char *after = repr(c, false);
    ck_assert_str_eq(before, after);
    ck_assert_str_eq(after, "[[1], {\"k\": [1]}]");
    /* and the copy's change leaves the original alone */
    list_push(AS_LIST(AS_LIST(c)->v[0]), v_num(5));
    CHECK_REPR(orig, false, "[[1, 2], {\"k\": [1, 2], 9: 9}, 3]");
    /* within the copy, the list is shared between the two places, as in the original */
    CHECK_REPR(c, false, "[[1, 5], {\"k\": [1, 5]}]");
    free(before);
    free(after);
    decref(k);
    decref(c);
    decref(orig);
}
END_TEST

START_TEST(copy_cycles_terminate)
{
    ObjList *l = list_new(0);
    list_push(l, v_num(1));
    incref(v_list(l));
    list_push(l, v_list(l));
    CopyCtx cc;
    copy_init(&cc);
    Value c = value_copy_deep(v_list(l), &cc);
    copy_done(&cc);
    ObjList *cl = AS_LIST(c);
    ck_assert_ptr_ne(cl, l);
    ck_assert_uint_eq(cl->len, 2);
    ck_assert_ptr_eq(cl->v[1].o, &cl->h); /* the copy refers to itself */
    cl->len = 1;
    decref(c);
    decref(c);
    l->len = 1;
    decref(v_list(l));
    decref(v_list(l));

    ObjDict *d = dict_new();
    Value k = v_str("me");
    dict_set(d, k, v_obj(&d->h));
    copy_init(&cc);
    Value cd = value_copy_deep(v_obj(&d->h), &cc);
    copy_done(&cc);
    Value out;
    ck_assert(dict_get(AS_DICT(cd), k, &out));
    ck_assert_ptr_eq(out.o, cd.o);
    ck_assert(dict_del(AS_DICT(cd), k, &out));
    decref(out);
    decref(cd);
    ck_assert(dict_del(d, k, &out));
    decref(out);
    decref(v_obj(&d->h));
    decref(k);
}
END_TEST

START_TEST(copy_scalars_cells_immortals)
{
    CopyCtx cc;
    copy_init(&cc);
    Value n = value_copy_deep(v_num(2.5), &cc);
    ck_assert(n.t == T_NUM && n.n == 2.5);
    ck_assert_int_eq(value_copy_deep(v_nil(), &cc).t, T_NIL);
    Value cx = v_complex(1, 2);
    Value cc2 = value_copy_deep(cx, &cc);
    ck_assert(value_eq(cx, cc2));
    /* a cell and its content */
    Value s = v_str("in a cell");
    ObjCell *cell = cell_new(s);
    Value ccell = value_copy_deep(v_obj(&cell->h), &cc);
    ck_assert_int_eq(ccell.t, T_CELL);
    ck_assert_ptr_ne(ccell.o, &cell->h);
    ck_assert(value_eq(AS_CELL(ccell)->v, s));
    ck_assert_ptr_ne(AS_CELL(ccell)->v.o, s.o);
    /* immortal objects are shared, not copied, and never counted */
    ObjStr *im = str_from("constant");
    obj_make_immortal(&im->h);
    Value vi = v_obj(&im->h);
    Value ci = value_copy_deep(vi, &cc);
    ck_assert_ptr_eq(ci.o, vi.o);
    incref(vi);
    decref(vi);
    decref(vi);
    ck_assert_uint_eq(im->h.rc, OBJ_IMMORTAL);
    Value l = list_of(1, vi);
    Value cl = value_copy_deep(l, &cc);
    ck_assert_ptr_eq(AS_LIST(cl)->v[0].o, vi.o);
    copy_done(&cc);
    decref(l);
    decref(cl);
    ck_assert_uint_eq(im->h.rc, OBJ_IMMORTAL);
    free(im);
    decref(cx);
    decref(cc2);
    decref(v_obj(&cell->h));
    decref(ccell);
}
END_TEST

static Value on_future_cb(Value fut, CopyCtx *cc)
{
    (void)fut;
    (*(int *)cc->user)++;
    return v_num(77);
}

START_TEST(copy_hooks_and_errors)
{
    install_probe_hooks();
    /* a type with a copy hook */
    Value p = probe_new(1);
    Value l = list_of(2, p, v_num(2));
    CopyCtx cc;
    copy_init(&cc);
    Value c = value_copy_deep(l, &cc);
    ck_assert_ptr_null(cc.error);
    CHECK_REPR(c, false, "[<probe 1001>, 2]");
    copy_done(&cc);
    decref(c);
    decref(l);
    ck_assert_int_eq(probes_freed, 2);
    /* futures go to on_future */
    Obj *fut = obj_alloc(sizeof(Obj) + 16, lazy_tag);
    int calls = 0;
    copy_init(&cc);
    cc.user = &calls;
    cc.on_future = on_future_cb;
    Value fl = list_of(1, v_obj(fut));
    Value cf = value_copy_deep(fl, &cc);
    copy_done(&cc);
    ck_assert_int_eq(calls, 1);
    CHECK_REPR(cf, false, "[77]");
    decref(cf);
    /* a type that cannot be copied sets the error */
    copy_init(&cc);
    Value e = value_copy_deep(fl, &cc);
    ck_assert_ptr_nonnull(cc.error);
    ck_assert_str_eq(cc.error, "future");
    copy_done(&cc);
    decref(e);
    AS_LIST(fl)->len = 0; /* the future object has no free hook: free it here */
    decref(fl);
    free(fut);
}
END_TEST

START_TEST(copy_memo_many)
{
    /* many distinct objects: the memo grows and keeps sharing right */
    enum { N = 5000 };
    ObjList *l = list_new(0);
    for (int i = 0; i < N; i++) {
        Value s = list_of(1, v_num(i));
        incref(s); /* two references, one for each place */
        list_push(l, s);
        list_push(l, s);
    }
    CopyCtx cc;
    copy_init(&cc);
    Value c = value_copy_deep(v_list(l), &cc);
    copy_done(&cc);
    ObjList *cl = AS_LIST(c);
    ck_assert_uint_eq(cl->len, 2 * N);
    for (int i = 0; i < N; i++) {
        ck_assert_ptr_eq(cl->v[2 * i].o, cl->v[2 * i + 1].o);
        ck_assert(AS_LIST(cl->v[2 * i])->v[0].n == i);
        if (i) ck_assert_ptr_ne(cl->v[2 * i].o, cl->v[2 * i - 2].o);
    }
    decref(c);
    decref(v_list(l));
}
END_TEST

/* ================================================================ refcounts */

START_TEST(rc_immortal)
{
    ObjStr *s = str_from("forever");
    obj_make_immortal(&s->h);
    Value v = v_obj(&s->h);
    for (int i = 0; i < 10; i++) decref(v);
    for (int i = 0; i < 10; i++) incref(v);
    ck_assert_uint_eq(s->h.rc, OBJ_IMMORTAL);
    ObjList *l = list_new(0);
    list_push(l, v);
    decref(v_list(l));
    ck_assert_uint_eq(s->h.rc, OBJ_IMMORTAL);
    ck_assert_str_eq(s->s, "forever");
    free(s);
    /* immediates ignore counting */
    incref(v_num(1));
    decref(v_num(1));
    decref(v_nil());
    decref(v_bool(true));
}
END_TEST

START_TEST(rc_list_and_dict)
{
    Value s = v_str("x");
    ck_assert_uint_eq(s.o->rc, 1);
    ObjList *l = list_new(0);
    incref(s);
    list_push(l, s); /* takes the reference */
    ck_assert_uint_eq(s.o->rc, 2);
    decref(v_list(l));
    ck_assert_uint_eq(s.o->rc, 1);

    ObjDict *d = dict_new();
    Value k = v_str("key"), v = v_str("val"), v2 = v_str("val2");
    dict_set(d, k, v); /* increfs both */
    ck_assert_uint_eq(k.o->rc, 2);
    ck_assert_uint_eq(v.o->rc, 2);
    dict_set(d, k, v2); /* overwrite: the old value is released, the key kept */
    ck_assert_uint_eq(k.o->rc, 2);
    ck_assert_uint_eq(v.o->rc, 1);
    ck_assert_uint_eq(v2.o->rc, 2);
    Value out;
    ck_assert(dict_get(d, k, &out)); /* borrowed */
    ck_assert_uint_eq(v2.o->rc, 2);
    ck_assert(dict_del(d, k, &out)); /* out: owned */
    ck_assert_ptr_eq(out.o, v2.o);
    ck_assert_uint_eq(k.o->rc, 1);
    ck_assert_uint_eq(v2.o->rc, 2);
    decref(out);
    ck_assert_uint_eq(v2.o->rc, 1);
    dict_set(d, k, v);
    decref(v_obj(&d->h));
    ck_assert_uint_eq(k.o->rc, 1);
    ck_assert_uint_eq(v.o->rc, 1);
    decref(s);
    decref(k);
    decref(v);
    decref(v2);

    ObjCell *c = cell_new(v_str("held"));
    Value inner = c->v;
    incref(inner);
    decref(v_obj(&c->h));
    ck_assert_uint_eq(inner.o->rc, 1);
    decref(inner);
}
END_TEST

/* obj_dealloc_size: a block past the small classes serves the thread's
 * next object of exactly its size (an operator per gate statement); other
 * sizes get their own, a full set of slots gives up its oldest, and a
 * thread's slots go back to malloc when it ends (ASan's leak check). */
typedef struct Big {
    Obj h;
    char body[700];
} Big;
static void big_free_slot(Obj *o) { obj_dealloc_size(o, sizeof(Big)); }
static const TypeOps big_ops = { .name = "big", .free = big_free_slot };
static ValType big_tag;
/* a block taken back from a slot is the caller's: the thread's end frees
   only the blocks still waiting (the main thread frees this one) */
static void *big_round_trip(void *unused)
{
    (void)unused;
    Obj *a = obj_alloc(sizeof(Big), big_tag);
    Obj *w = obj_alloc(sizeof(Big) + 32, big_tag); /* one waiting at the end */
    obj_dealloc_size(w, sizeof(Big) + 32);
    obj_dealloc_size(a, sizeof(Big));
    Obj *b = obj_alloc(sizeof(Big), big_tag);
    if (b != a) return NULL;
    value_thread_cleanup(); /* what the thread's end does: b is not freed */
    memset(((Big *)b)->body, 2, sizeof((Big *)b)->body);
    obj_dealloc_size(b, sizeof(Big));
    value_thread_cleanup(); /* b freed once (glibc aborts on a double free) */
    b = obj_alloc(sizeof(Big), big_tag);
    return b;
}
START_TEST(big_blocks_reused_by_size)
{
    if (!big_tag) big_tag = type_register_new(&big_ops);
    Obj *a = obj_alloc(sizeof(Big), big_tag);
    memset(((Big *)a)->body, 0x5a, sizeof((Big *)a)->body);
    Value va = v_obj(a);
    decref(va); /* the kind's free slot hands the block back by size */
    Obj *b = obj_alloc(sizeof(Big), big_tag);
    ck_assert_ptr_eq(b, a);
    ck_assert_uint_eq(b->rc, 1);
    for (size_t i = 0; i < sizeof((Big *)b)->body; i++) /* zeroed like any new object */
        ck_assert_int_eq(((Big *)b)->body[i], 0);
    Obj *c = obj_alloc_part(sizeof(Big) + 64, 0, big_tag); /* another size: another block */
    ck_assert_ptr_ne(c, b);
    obj_dealloc_size(b, sizeof(Big));
    obj_dealloc_size(c, sizeof(Big) + 64);
    Obj *d = obj_alloc_part(sizeof(Big) + 64, 0, big_tag);
    ck_assert_ptr_eq(d, c);
    obj_dealloc_size(d, sizeof(Big) + 64);
    /* more blocks than slots: each is kept or freed, none lost (ASan) */
    Obj *many[10];
    for (int i = 0; i < 10; i++) many[i] = obj_alloc_part(sizeof(Big) + 16 * (size_t)i, 0, big_tag);
    for (int i = 0; i < 10; i++) obj_dealloc_size(many[i], sizeof(Big) + 16 * (size_t)i);
    pthread_t t;
    void *same = NULL;
    ck_assert_int_eq(pthread_create(&t, NULL, big_round_trip, NULL), 0);
    ck_assert_int_eq(pthread_join(t, &same), 0);
    ck_assert_ptr_nonnull(same);
    memset(((Big *)same)->body, 1, sizeof((Big *)same)->body); /* still ours */
    obj_dealloc_size(same, sizeof(Big));
}
END_TEST

START_TEST(rc_frees_counted)
{
    install_probe_hooks();
    /* a probe in a list in a dict in a list, and one shared by two lists */
    Value shared = probe_new(0);
    Value l1 = list_of(2, probe_new(1), shared);
    incref(shared);
    Value l2 = list_of(1, shared);
    ObjDict *d = dict_new();
    Value k = v_str("k");
    dict_set(d, k, l1);
    decref(l1);
    Value top = list_of(2, v_obj(&d->h), l2);
    ck_assert_int_eq(probes_freed, 0);
    ck_assert_uint_eq(shared.o->rc, 2);
    /* overwriting a dict value frees what only it held */
    Value p5 = probe_new(5);
    dict_set(d, v_num(1), p5);
    decref(p5);
    dict_set(d, v_num(1), v_nil());
    ck_assert_int_eq(probes_freed, 1);
    /* deleting frees through the returned reference */
    Value p6 = probe_new(6), out;
    dict_set(d, v_num(2), p6);
    decref(p6);
    ck_assert(dict_del(d, v_num(2), &out));
    ck_assert_int_eq(probes_freed, 1);
    decref(out);
    ck_assert_int_eq(probes_freed, 2);
    decref(top);
    ck_assert_int_eq(probes_freed, 4);
    decref(k);
    /* a deep copy owns its own probes */
    Value l = list_of(2, probe_new(7), probe_new(8));
    CopyCtx cc;
    copy_init(&cc);
    Value c = value_copy_deep(l, &cc);
    copy_done(&cc);
    decref(l);
    ck_assert_int_eq(probes_freed, 6);
    decref(c);
    ck_assert_int_eq(probes_freed, 8);
}
END_TEST

static Suite *value_suite(void)
{
    Suite *s = suite_create("value");
    TCase *tc = tcase_create("strings");
    tcase_add_test(tc, str_basics);
    tcase_add_test(tc, str_embedded_nul);
    tcase_add_test(tc, str_hash_equality);
    tcase_add_test(tc, str_utf8);
    suite_add_tcase(s, tc);

    tc = tcase_create("containers");
    tcase_add_test(tc, list_push_grow);
    tcase_add_test(tc, dict_insertion_order);
    tcase_add_test(tc, dict_overwrite_keeps_position);
    tcase_add_test(tc, dict_key_kinds);
    tcase_add_test(tc, dict_many_deletes);
    tcase_add_test(tc, dict_churn_bounded);
    suite_add_tcase(s, tc);

    tc = tcase_create("equality");
    tcase_add_test(tc, eq_scalars);
    tcase_add_test(tc, eq_complex);
    tcase_add_test(tc, eq_containers);
    suite_add_tcase(s, tc);

    tc = tcase_create("printing");
    tcase_add_test(tc, repr_scalars);
    tcase_add_test(tc, repr_containers);
    tcase_add_test(tc, repr_string_escapes);
    tcase_add_test(tc, repr_self_reference);
    tcase_add_test(tc, repr_indirect_cycle);
    tcase_add_test(tc, repr_indirect_cycle_dict);
    tcase_add_test(tc, repr_hooks_and_types);
    suite_add_tcase(s, tc);

    tc = tcase_create("copy");
    tcase_add_test(tc, copy_shared_stays_shared);
    tcase_add_test(tc, copy_is_independent);
    tcase_add_test(tc, copy_cycles_terminate);
    tcase_add_test(tc, copy_scalars_cells_immortals);
    tcase_add_test(tc, copy_hooks_and_errors);
    tcase_add_test(tc, copy_memo_many);
    suite_add_tcase(s, tc);

    tc = tcase_create("refcounts");
    tcase_add_test(tc, rc_immortal);
    tcase_add_test(tc, rc_list_and_dict);
    tcase_add_test(tc, rc_frees_counted);
    tcase_add_test(tc, big_blocks_reused_by_size);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(value_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
