/* test_io.c — unit tests of the data I/O room (Check).
 *
 * Text files (round trips, append, line splitting, the reasons of
 * failures), .npy (round trips, hand-made version 1/2/3 headers, other
 * dtypes, byte orders, Fortran order, bad files) and both ways against
 * NumPy itself when /usr/bin/python3 has numpy (skipped with a message
 * otherwise), CSV (delimiters, skip, comments, quotes, CRLF, errors with
 * line numbers), JSON (parse, errors with line and column, dump in
 * Python's json.dumps layout, round trips). Files go to a fresh
 * directory under /tmp. Knows only io.h.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"

static char dir[256];

static const char *tmp(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) & 3;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/qh_test_io_%d", (int)getpid());
    mkdir(dir, 0700);
}

static void teardown(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* ---- text ----------------------------------------------------------------- */

START_TEST(test_text_files)
{
    char err[512];
    const char *p = tmp("a.txt");
    ck_assert_int_eq(io_write_file(p, "héllo\nworld", 12, 0, err, sizeof err), 0);
    ck_assert_int_eq(io_write_file(p, "\n!", 2, 1, err, sizeof err), 0);
    size_t len;
    char *s = io_read_file(p, &len, err, sizeof err);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(len, 14);
    ck_assert_str_eq(s, "héllo\nworld\n!");
    free(s);
    ck_assert_int_eq(io_write_file(p, "", 0, 0, err, sizeof err), 0);
    s = io_read_file(p, &len, err, sizeof err);
    ck_assert_uint_eq(len, 0);
    ck_assert_str_eq(s, "");
    free(s);
    /* the reasons */
    ck_assert_ptr_null(io_read_file(tmp("missing.txt"), &len, err, sizeof err));
    char want[600];
    snprintf(want, sizeof want, "'%s': No such file or directory", tmp("missing.txt"));
    ck_assert_str_eq(err, want);
    ck_assert_ptr_null(io_read_file(dir, &len, err, sizeof err));
    ck_assert_msg(strstr(err, "Is a directory") != NULL, "%s", err);
    ck_assert_int_eq(io_write_file(tmp("nodir/x.txt"), "x", 1, 0, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "No such file or directory") != NULL, "%s", err);
    if (geteuid() != 0) { /* root reads anything */
        const char *q = tmp("locked.txt");
        io_write_file(q, "x", 1, 0, NULL, 0);
        chmod(q, 0);
        ck_assert_ptr_null(io_read_file(q, &len, err, sizeof err));
        ck_assert_msg(strstr(err, "Permission denied") != NULL, "%s", err);
    }
    ck_assert_int_eq(io_write_file(tmp("a.txt/x"), "x", 1, 0, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "Not a directory") != NULL, "%s", err);
}
END_TEST

START_TEST(test_split_lines)
{
    const char *st[8];
    size_t ln[8];
    const char *t = "a\nbb\r\n\nc\rd\n";
    size_t n = io_split_lines(t, strlen(t), st, ln);
    ck_assert_uint_eq(n, 5); /* "a" "bb" "" "c" "d": no line after the last \n */
    ck_assert_uint_eq(ln[0], 1);
    ck_assert_uint_eq(ln[1], 2);
    ck_assert_uint_eq(ln[2], 0);
    ck_assert(st[3][0] == 'c' && ln[3] == 1);
    ck_assert(st[4][0] == 'd' && ln[4] == 1);
    ck_assert_uint_eq(io_split_lines("x", 1, NULL, NULL), 1);
    ck_assert_uint_eq(io_split_lines("", 0, NULL, NULL), 0);
    ck_assert_uint_eq(io_split_lines("\n", 1, NULL, NULL), 1);
}
END_TEST

/* ---- npy ------------------------------------------------------------------ */

START_TEST(test_npy_roundtrip)
{
    char err[512];
    for (int cplx = 0; cplx < 2; cplx++)
        for (int nd = 0; nd <= 3; nd++) {
            IoArray a;
            memset(&a, 0, sizeof a);
            a.is_complex = cplx;
            a.ndim = nd;
            a.n = 1;
            for (int i = 0; i < nd; i++) {
                a.shape[i] = (size_t)(2 + i);
                a.n *= a.shape[i];
            }
            size_t m = cplx ? 2 * a.n : a.n;
            a.data = malloc(m * sizeof(double));
            for (size_t i = 0; i < m; i++) a.data[i] = (double)i * 0.37 - 1e-300 * (double)(i % 3);
            ck_assert_int_eq(io_npy_write(tmp("r.npy"), &a, err, sizeof err), 0);
            IoArray b;
            ck_assert_msg(io_npy_read(tmp("r.npy"), &b, err, sizeof err) == 0, "%s", err);
            ck_assert_int_eq(b.ndim, nd);
            ck_assert_int_eq(b.is_complex, cplx);
            ck_assert_uint_eq(b.n, a.n);
            for (int i = 0; i < nd; i++) ck_assert_uint_eq(b.shape[i], a.shape[i]);
            ck_assert(memcmp(a.data, b.data, m * sizeof(double)) == 0);
            /* numpy's layout: header a multiple of 64, ends in '\n' */
            size_t len;
            unsigned char *enc = io_npy_encode(&a, &len, err, sizeof err);
            size_t hl = (size_t)enc[8] | (size_t)enc[9] << 8;
            ck_assert_uint_eq((10 + hl) % 64, 0);
            ck_assert_int_eq(enc[10 + hl - 1], '\n');
            free(enc);
            io_array_free(&a);
            io_array_free(&b);
        }
}
END_TEST

/* A hand-made .npy of version v with the given header dict and data. */
static size_t make_npy(unsigned char *buf, int v, const char *dict, const void *data, size_t dlen)
{
    size_t pre = v == 1 ? 10 : 12, hl = strlen(dict) + 1;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)v;
    buf[7] = 0;
    buf[8] = (unsigned char)hl;
    buf[9] = 0;
    if (v > 1) buf[10] = buf[11] = 0;
    memcpy(buf + pre, dict, hl - 1);
    buf[pre + hl - 1] = '\n';
    memcpy(buf + pre + hl, data, dlen);
    return pre + hl + dlen;
}

START_TEST(test_npy_headers_and_dtypes)
{
    unsigned char buf[1024];
    char err[512];
    IoArray a;
    /* versions 2 and 3, int32 little endian */
    int32_t iv[3] = { -1, 7, 1 << 30 };
    for (int v = 2; v <= 3; v++) {
        size_t n = make_npy(buf, v, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", iv,
                            sizeof iv);
        ck_assert_msg(io_npy_parse(buf, n, "x", &a, err, sizeof err) == 0, "%s", err);
        ck_assert(a.ndim == 1 && a.n == 3 && a.data[0] == -1 && a.data[1] == 7 &&
                  a.data[2] == 1 << 30);
        io_array_free(&a);
    }
    /* big-endian float64 */
    unsigned char be[8] = { 0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18 }; /* pi */
    size_t n = make_npy(buf, 1, "{'descr': '>f8', 'fortran_order': False, 'shape': (), }", be, 8);
    ck_assert_int_eq(io_npy_parse(buf, n, "x", &a, err, sizeof err), 0);
    ck_assert(a.ndim == 0 && a.n == 1 && a.data[0] == M_PI);
    io_array_free(&a);
    /* Fortran order 2x3: memory holds columns */
    double f[6] = { 1, 4, 2, 5, 3, 6 };
    n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", f, sizeof f);
    ck_assert_int_eq(io_npy_parse(buf, n, "x", &a, err, sizeof err), 0);
    for (int i = 0; i < 6; i++) ck_assert(a.data[i] == i + 1);
    io_array_free(&a);
    /* float32, complex64, bool, uint8, int64 */
    float fl[2] = { 0.5f, -2.25f };
    n = make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", fl,
                 sizeof fl);
    ck_assert_int_eq(io_npy_parse(buf, n, "x", &a, err, sizeof err), 0);
    ck_assert(a.data[0] == 0.5 && a.data[1] == -2.25 && !a.is_complex);
    io_array_free(&a);
    float c8[4] = { 1, 2, 3, -4 };
    n = make_npy(buf, 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", c8,
                 sizeof c8);
    ck_assert_int_eq(io_npy_parse(buf, n, "x", &a, err, sizeof err), 0);
    ck_assert(a.is_complex && a.data[0] == 1 && a.data[1] == 2 && a.data[3] == -4);
    io_array_free(&a);
    unsigned char bo[3] = { 1, 0, 1 };
    n = make_npy(buf, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", bo, 3);
    ck_assert_int_eq(io_npy_parse(buf, n, "x", &a, err, sizeof err), 0);
    ck_assert(a.data[0] == 1 && a.data[1] == 0 && a.data[2] == 1);
    io_array_free(&a);
    int64_t i8[1] = { -123456789012LL };
    n = make_npy(buf, 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 1), }", i8, 8);
    ck_assert_int_eq(io_npy_parse(buf, n, "x", &a, err, sizeof err), 0);
    ck_assert(a.ndim == 2 && a.data[0] == -123456789012.0);
    io_array_free(&a);
    /* bad files, each with its reason */
    ck_assert_int_eq(
        io_npy_parse((const unsigned char *)"hello world", 11, "h.npy", &a, err, sizeof err), -1);
    ck_assert_str_eq(err, "'h.npy': not a .npy file (bad magic string)");
    n = make_npy(buf, 1, "{'descr': '<U3', 'fortran_order': False, 'shape': (1,), }",
                 "abcabcabcabc", 12);
    ck_assert_int_eq(io_npy_parse(buf, n, "u.npy", &a, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "unsupported dtype '<U3'") != NULL, "%s", err);
    n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", f, 16);
    ck_assert_int_eq(io_npy_parse(buf, n, "t.npy", &a, err, sizeof err), -1);
    ck_assert_str_eq(err, "'t.npy': bad .npy data: 16 bytes, the shape and dtype '<f8' need 24");
    n = make_npy(buf, 4, "{}", "", 0);
    ck_assert_int_eq(io_npy_parse(buf, n, "v.npy", &a, err, sizeof err), -1);
    ck_assert_str_eq(err, "'v.npy': unsupported .npy version 4.0");
    ck_assert_int_eq(io_npy_read(tmp("none.npy"), &a, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "No such file or directory") != NULL, "%s", err);
}
END_TEST

static int have_numpy(void)
{
    return access("/usr/bin/python3", X_OK) == 0 &&
           system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0;
}

START_TEST(test_npy_against_numpy)
{
    if (!have_numpy()) {
        fprintf(stderr, "test_npy_against_numpy: SKIPPED (no /usr/bin/python3 with numpy)\n");
        return;
    }
    char err[512], cmd[4096];
    /* qh writes, numpy reads and checks every element */
    IoArray a;
    memset(&a, 0, sizeof a);
    a.ndim = 2;
    a.shape[0] = 3;
    a.shape[1] = 4;
    a.n = 12;
    a.data = malloc(12 * sizeof(double));
    for (int i = 0; i < 12; i++) a.data[i] = i * 1.5 - 3 + (i == 5 ? 1e-300 : 0);
    ck_assert_int_eq(io_npy_write(tmp("q.npy"), &a, err, sizeof err), 0);
    io_array_free(&a);
    memset(&a, 0, sizeof a);
    a.is_complex = 1;
    a.ndim = 1;
    a.shape[0] = 5;
    a.n = 5;
    a.data = malloc(10 * sizeof(double));
    for (int i = 0; i < 10; i++) a.data[i] = i % 2 ? -i * 0.25 : i * 0.1;
    ck_assert_int_eq(io_npy_write(tmp("qc.npy"), &a, err, sizeof err), 0);
    io_array_free(&a);
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c \"import numpy as np, sys\n"
             "a = np.load('%s'); c = np.load('%s')\n"
             "w = np.arange(12).reshape(3, 4) * 1.5 - 3; w[1, 1] += 1e-300\n"
             "wc = np.array([i * 0.1 + 1j * (-(i + 1) * 0.25) for i in range(0, 10, 2)])\n"
             "ok = a.dtype == np.float64 and a.shape == (3, 4) and (a == w).all() and c.dtype == "
             "np.complex128 and (c == wc).all()\n"
             "sys.exit(0 if ok else 1)\"",
             tmp("q.npy"), tmp("qc.npy"));
    ck_assert_msg(system(cmd) == 0, "numpy did not read qh's files back");
    /* numpy writes (several dtypes, orders, versions), qh reads */
    snprintf(cmd, sizeof cmd,
             "cd '%s' && /usr/bin/python3 -c \"import numpy as np\n"
             "x = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 7\n"
             "np.save('f8.npy', x)\n"
             "np.save('c16.npy', x.astype(complex) * (1 - 2j))\n"
             "np.save('fo.npy', np.asfortranarray(x))\n"
             "np.save('i4.npy', np.arange(-3, 3, dtype=np.int32))\n"
             "np.save('f4be.npy', np.arange(4, dtype='>f4') / 4)\n"
             "from numpy.lib import format as F\n"
             "for v in ((2, 0), (3, 0)):\n"
             "    with open('v%%d.npy' %% v[0], 'wb') as f: F.write_array(f, x, version=v)\n"
             "\"",
             dir);
    ck_assert_msg(system(cmd) == 0, "numpy could not write the files");
    const char *names[] = { "f8.npy", "c16.npy", "fo.npy", "v2.npy", "v3.npy" };
    for (int k = 0; k < 5; k++) {
        ck_assert_msg(io_npy_read(tmp(names[k]), &a, err, sizeof err) == 0, "%s", err);
        ck_assert(a.ndim == 3 && a.shape[0] == 2 && a.shape[1] == 3 && a.shape[2] == 4);
        for (int i = 0; i < 24; i++) {
            if (k == 1) {
                ck_assert(a.data[2 * i] == i / 7.0 && a.data[2 * i + 1] == -2 * (i / 7.0));
            } else {
                ck_assert_msg(a.data[i] == i / 7.0, "%s[%d] = %g", names[k], i, a.data[i]);
            }
        }
        io_array_free(&a);
    }
    ck_assert_int_eq(io_npy_read(tmp("i4.npy"), &a, err, sizeof err), 0);
    for (int i = 0; i < 6; i++) ck_assert(a.data[i] == i - 3);
    io_array_free(&a);
    ck_assert_int_eq(io_npy_read(tmp("f4be.npy"), &a, err, sizeof err), 0);
    for (int i = 0; i < 4; i++) ck_assert(a.data[i] == i / 4.0);
    io_array_free(&a);
}
END_TEST

/* ---- csv ------------------------------------------------------------------ */

START_TEST(test_csv)
{
    char err[512];
    IoArray a;
    const char *t = "x,y,label\n# a comment\n1, 2.5 ,0\r\n\n-3e2,\"4\",1 # trailing\n nan,inf,-0\n";
    ck_assert_msg(
        io_csv_parse(&(IoCsvText){ t, strlen(t), "d.csv", ',', 1 }, &a, err, sizeof err) == 0, "%s",
        err);
    ck_assert(a.ndim == 2 && a.shape[0] == 3 && a.shape[1] == 3);
    ck_assert(a.data[0] == 1 && a.data[1] == 2.5 && a.data[3] == -300 && a.data[4] == 4 &&
              a.data[5] == 1);
    ck_assert(isnan(a.data[6]) && isinf(a.data[7]));
    io_array_free(&a);
    /* without skip the header is a bad field, named with its line */
    ck_assert_int_eq(
        io_csv_parse(&(IoCsvText){ t, strlen(t), "d.csv", ',', 0 }, &a, err, sizeof err), -1);
    ck_assert_str_eq(err, "'d.csv': line 1, field 1: 'x' is not a number");
    const char *r = "1;2;3\n4;5\n";
    ck_assert_int_eq(
        io_csv_parse(&(IoCsvText){ r, strlen(r), "r.csv", ';', 0 }, &a, err, sizeof err), -1);
    ck_assert_str_eq(err, "'r.csv': line 2: expected 3 fields, got 2");
    const char *e = "1,,3\n";
    ck_assert_int_eq(
        io_csv_parse(&(IoCsvText){ e, strlen(e), "e.csv", ',', 0 }, &a, err, sizeof err), -1);
    ck_assert_str_eq(err, "'e.csv': line 1, field 2: '' is not a number");
    const char *w = "  1   2\t3\n4 5 6  \n";
    ck_assert_int_eq(
        io_csv_parse(&(IoCsvText){ w, strlen(w), "w.txt", ' ', 0 }, &a, err, sizeof err), 0);
    ck_assert(a.shape[0] == 2 && a.shape[1] == 3 && a.data[5] == 6);
    io_array_free(&a);
    const char *one = "7\n8"; /* a single column stays 2-d; no final newline */
    ck_assert_int_eq(
        io_csv_parse(&(IoCsvText){ one, strlen(one), "o.csv", ',', 0 }, &a, err, sizeof err), 0);
    ck_assert(a.shape[0] == 2 && a.shape[1] == 1 && a.data[1] == 8);
    io_array_free(&a);
    ck_assert_int_eq(io_csv_parse(&(IoCsvText){ "", 0, "z.csv", ',', 0 }, &a, err, sizeof err), 0);
    ck_assert(a.shape[0] == 0 && a.shape[1] == 0);
    io_array_free(&a);
    io_write_file(tmp("f.csv"), "h1,h2\n0.5,1\n2,3\n", 16, 0, NULL, 0);
    ck_assert_int_eq(io_csv_read(tmp("f.csv"), ',', 1, &a, err, sizeof err), 0);
    ck_assert(a.shape[0] == 2 && a.data[0] == 0.5 && a.data[3] == 3);
    io_array_free(&a);
    ck_assert_int_eq(io_csv_read(tmp("g.csv"), ',', 0, &a, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "g.csv': No such file or directory") != NULL, "%s", err);
    ck_assert_int_eq(io_csv_parse(&(IoCsvText){ "1", 1, "s.csv", ',', -1 }, &a, err, sizeof err),
                     -1);
}
END_TEST

/* ---- json ----------------------------------------------------------------- */

START_TEST(test_json_parse)
{
    char err[512];
    const char *t =
        "{\"a\": [1, 2.5, -3e2, true, false, null], \"s\": \"x\\n\\u00e9\\ud83d\\ude00\\\"\",\n"
        " \"o\": {}, \"e\": [], \"n\": NaN, \"i\": -Infinity}";
    IoJson *j = io_json_parse(t, strlen(t), err, sizeof err);
    ck_assert_msg(j != NULL, "%s", err);
    ck_assert_int_eq(j->kind, IOJ_OBJECT);
    ck_assert_uint_eq(j->n, 6);
    ck_assert_str_eq(j->keys[0], "a");
    IoJson *a = &j->items[0];
    ck_assert(a->kind == IOJ_ARRAY && a->n == 6);
    ck_assert(a->items[1].num == 2.5 && a->items[2].num == -300);
    ck_assert(a->items[3].kind == IOJ_BOOL && a->items[3].b == 1 && a->items[5].kind == IOJ_NULL);
    ck_assert_str_eq(j->items[1].str, "x\n\xc3\xa9\xf0\x9f\x98\x80\"");
    ck_assert(j->items[2].kind == IOJ_OBJECT && j->items[2].n == 0);
    ck_assert(isnan(j->items[4].num) && isinf(j->items[5].num) && j->items[5].num < 0);
    io_json_free(j);
    /* errors: line and column of where reading stopped */
    struct {
        const char *text, *msg;
    } bad[] = {
        { "[1, 2", "line 1, column 6: expected ',' or ']'" },
        { "{\"a\" 1}", "line 1, column 6: expected ':'" },
        { "[1,\n  x]", "line 2, column 3: expected a value" },
        { "\"abc", "line 1, column 5: unterminated string" },
        { "[01]", "line 1, column 3: expected ',' or ']'" },
        { "1 2", "line 1, column 3: extra data after the value" },
        { "", "line 1, column 1: unexpected end of input" },
        { "{1: 2}", "line 1, column 2: expected a string key" },
        { "\"a\tb\"", "line 1, column 3: control character in a string" },
        { "[1.]", "line 1, column 4: expected a digit after '.'" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_ptr_null(io_json_parse(bad[i].text, strlen(bad[i].text), err, sizeof err));
        ck_assert_str_eq(err, bad[i].msg);
    }
    /* deep nesting is an error, not a crash */
    char deep[4000];
    memset(deep, '[', sizeof deep);
    ck_assert_ptr_null(io_json_parse(deep, sizeof deep, err, sizeof err));
    ck_assert_msg(strstr(err, "nested too deeply") != NULL, "%s", err);
}
END_TEST

START_TEST(test_json_dump)
{
    char err[512];
    const char *t = "{\"a\": [1, 2.5, {\"b\": null}], \"c\": \"q\\\"\\\\\\n\\u0001\", \"d\": [], "
                    "\"e\": {}, \"t\": true}";
    IoJson *j = io_json_parse(t, strlen(t), err, sizeof err);
    ck_assert_ptr_nonnull(j);
    size_t len;
    char *s = io_json_dump(j, -1, &len, err, sizeof err);
    ck_assert_str_eq(s, t); /* the compact form is json.dumps's */
    free(s);
    s = io_json_dump(j, 2, &len, err, sizeof err);
    ck_assert_str_eq(
        s, "{\n  \"a\": [\n    1,\n    2.5,\n    {\n      \"b\": null\n    }\n  ],\n"
           "  \"c\": \"q\\\"\\\\\\n\\u0001\",\n  \"d\": [],\n  \"e\": {},\n  \"t\": true\n}");
    /* and it reads back to the same text */
    IoJson *k = io_json_parse(s, len, err, sizeof err);
    ck_assert_ptr_nonnull(k);
    char *s2 = io_json_dump(k, -1, NULL, err, sizeof err);
    ck_assert_str_eq(s2, t);
    free(s);
    free(s2);
    io_json_free(j);
    io_json_free(k);
    IoJson nums[4] = { io_json_number(1e20), io_json_number(0.1), io_json_number(NAN),
                       io_json_number(-INFINITY) };
    IoJson arr = io_json_null();
    arr.kind = IOJ_ARRAY;
    arr.n = 4;
    arr.items = nums;
    s = io_json_dump(&arr, -1, NULL, err, sizeof err);
    ck_assert_str_eq(s, "[1e+20, 0.1, NaN, -Infinity]");
    free(s);
    IoJson str = io_json_string("a\0b", 3);
    s = io_json_dump(&str, 0, NULL, err, sizeof err);
    ck_assert_str_eq(s, "\"a\\u0000b\"");
    free(s);
}
END_TEST

static Suite *io_suite(void)
{
    Suite *s = suite_create("io");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_text_files);
    tcase_add_test(tc, test_split_lines);
    tcase_add_test(tc, test_npy_roundtrip);
    tcase_add_test(tc, test_npy_headers_and_dtypes);
    tcase_add_test(tc, test_npy_against_numpy);
    tcase_add_test(tc, test_csv);
    tcase_add_test(tc, test_json_parse);
    tcase_add_test(tc, test_json_dump);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(io_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
