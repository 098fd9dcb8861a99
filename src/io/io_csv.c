/* io_csv.c — CSV text to a 2-d float64 array, as numpy.loadtxt reads it.
 *
 * Lines are split at the delimiter (or at runs of blanks), comments and
 * blank lines dropped, each field read with strtod; the first bad field
 * or ragged row stops with its line number. Must not know about values.
 */
#include "io.h"
#include "io_impl.h"
#include "qh_assert.h"
#include "stop.h"

#include <stdlib.h>
#include <string.h>

static int blank(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

/* One field [a, b): trimmed, unquoted, parsed. 0 or -1 (not a number;
   a NUL byte anywhere in it, which strtod would stop at, is not one). */
static int field(const char *a, const char *b, double *out)
{
    while (a < b && blank(*a)) a++;
    while (b > a && blank(b[-1])) b--;
    if (b - a >= 2 && *a == '"' && b[-1] == '"') {
        a++;
        b--;
        while (a < b && blank(*a)) a++;
        while (b > a && blank(b[-1])) b--;
    }
    size_t l = (size_t)(b - a);
    if (l == 0 || memchr(a, 0, l)) return -1;
    char small[512];
    char *tmp = l < sizeof small ? small : malloc(l + 1);
    if (!tmp) return -2;
    memcpy(tmp, a, l);
    tmp[l] = 0;
    char *e;
    *out = strtod(tmp, &e);
    int ok = *e == 0;
    if (tmp != small) free(tmp);
    return ok ? 0 : -1;
}

/* The field as shown in a message: at most 40 bytes, a NUL as \0. */
static void shown(char *dst, size_t cap, const char *a, const char *b)
{
    size_t k = 0;
    for (const char *p = a; p < b && p - a < 40 && k + 3 < cap; p++) {
        if (*p == 0) {
            dst[k++] = '\\';
            dst[k++] = '0';
        } else {
            dst[k++] = *p;
        }
    }
    dst[k] = 0;
}

int io_csv_parse(const IoCsvText *in, IoArray *out, char *err, size_t errlen)
{
    const char *text = in->text, *name = in->name;
    size_t len = in->len;
    char delim = in->delim;
    long skip = in->skip;
    memset(out, 0, sizeof *out);
    if (!name) name = "<csv>";
    if (skip < 0) return qh_errf(err, errlen, "'%s': skip must be >= 0, got %ld", name, skip);
    if (delim == '\n' || delim == '\r' || delim == '#' || delim == '"' || delim == 0)
        return qh_errf(err, errlen, "'%s': bad delimiter", name);
    size_t cap = 64, n = 0, cols = 0, rows = 0;
    double *v = malloc(cap * sizeof(double));
    if (!v) return qh_errf(err, errlen, "'%s': out of memory", name);
    size_t i = 0, line = 0;
    while (i < len) {
        size_t a = i;
        while (i < len && text[i] != '\n' && text[i] != '\r') i++;
        size_t e = i;
        if (i < len && text[i] == '\r' && i + 1 < len && text[i + 1] == '\n') i++;
        if (i < len) i++;
        line++;
        if ((line & 0xFFFF) == 0 && qh_stop_requested()) {
            free(v);
            return qh_errf(err, errlen, "'%s': interrupted", name);
        }
        if ((long)(line - 1) < skip) continue;
        const char *s = text + a, *end = text + e;
        const char *hash = memchr(s, '#', (size_t)(end - s));
        if (hash) end = hash;
        const char *p = s;
        while (p < end && (blank(*p) || *p == '\r')) p++;
        if (p == end) continue; /* blank or comment line */
        size_t k = 0;
        const char *f = delim == ' ' ? p : s;
        for (;;) {
            const char *g = f;
            if (delim == ' ')
                while (g < end && !blank(*g)) g++;
            else
                while (g < end && *g != delim) g++;
            if (n == cap) {
                cap *= 2;
                double *nv = realloc(v, cap * sizeof(double));
                if (!nv) {
                    free(v);
                    return qh_errf(err, errlen, "'%s': out of memory", name);
                }
                v = nv;
            }
            int fr = field(f, g, &v[n]);
            if (fr != 0) {
                const char *fa = f, *fb = g;
                while (fa < fb && blank(*fa)) fa++;
                while (fb > fa && blank(fb[-1])) fb--;
                char txt[100];
                shown(txt, sizeof txt, fa, fb);
                if (fr == -2)
                    qh_errf(err, errlen, "'%s': out of memory", name);
                else
                    qh_errf(err, errlen, "'%s': line %zu, field %zu: '%s' is not a number", name,
                            line, k + 1, txt);
                free(v);
                return -1;
            }
            n++;
            k++;
            if (g >= end) break;
            f = g + 1;
            if (delim == ' ') {
                while (f < end && blank(*f)) f++;
                if (f >= end) break;
            }
        }
        if (rows == 0)
            cols = k;
        else if (k != cols) {
            free(v);
            return qh_errf(err, errlen, "'%s': line %zu: expected %zu field%s, got %zu", name, line,
                           cols, cols == 1 ? "" : "s", k);
        }
        qh_assert(n == (rows + 1) * cols); /* every row so far has cols fields */
        rows++;
    }
    qh_assert(n == rows * cols);
    out->ndim = 2;
    out->shape[0] = rows;
    out->shape[1] = cols;
    out->n = n;
    out->data = v;
    return 0;
}

int io_csv_read(const char *path, char delim, long skip, IoArray *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    size_t len;
    char *buf = io_read_file(path, &len, err, errlen);
    if (!buf) return -1;
    IoCsvText in = { buf, len, path, delim, skip };
    int rc = io_csv_parse(&in, out, err, errlen);
    free(buf);
    return rc;
}
