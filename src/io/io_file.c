/* io_file.c — whole files in and out, and NumPy's .npy format.
 *
 * Reading keeps the OS's reason for a failure (strerror) beside the path;
 * .npy headers are parsed from their Python-literal dict ('descr',
 * 'fortran_order', 'shape'), data converted to float64 / complex128 in C
 * order. Must not know about the language's values.
 */
#include "io.h"
#include "io_impl.h"
#include "afile.h"
#include "qh_assert.h"
#include "stop.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void io_array_free(IoArray *a)
{
    if (!a) return;
    free(a->data);
    a->data = NULL;
    a->n = 0;
}

/* ---- text ----------------------------------------------------------------- */

/* Why: every reader starts from the whole file; the error names the path
   and the OS's reason ("No such file or directory", "Permission denied",
   "Is a directory"). */
char *io_read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    if (!path) {
        qh_errf(err, errlen, "no path");
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        qh_errf(err, errlen, "'%s': %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        qh_errf(err, errlen, "'%s': %s", path, strerror(EISDIR));
        return NULL;
    }
    size_t cap = 4096, n = 0;
    /* a size is known only for a regular file: anything else (a device such
       as /dev/zero, a pipe, a /proc file) is read up to IO_MAX_STREAM bytes,
       and a regular file that grows while read up to that much more */
    size_t limit = IO_MAX_STREAM;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        cap = (size_t)st.st_size + 1;
        limit = (size_t)st.st_size + IO_MAX_STREAM;
    }
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        qh_errf(err, errlen, "'%s': out of memory", path);
        return NULL;
    }
    for (;;) {
        if (n >= limit) {
            free(buf);
            fclose(f);
            qh_errf(err, errlen, "'%s': more than %zu bytes (not a regular file, or still growing)",
                    path, limit);
            return NULL;
        }
        if (n + 1 >= cap) {
            size_t nc = cap * 2;
            if (nc > limit + 1) nc = limit + 1;
            char *nb = realloc(buf, nc);
            if (!nb) {
                free(buf);
                fclose(f);
                qh_errf(err, errlen, "'%s': out of memory", path);
                return NULL;
            }
            buf = nb;
            cap = nc;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) break;
        if (qh_stop_requested()) { /* SIGINT/SIGTERM during a long read */
            free(buf);
            fclose(f);
            qh_errf(err, errlen, "'%s': interrupted", path);
            return NULL;
        }
    }
    if (ferror(f)) {
        int e = errno;
        free(buf);
        fclose(f);
        qh_errf(err, errlen, "'%s': %s", path, e ? strerror(e) : "read error");
        return NULL;
    }
    fclose(f);
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

int io_write_file(const char *path, const char *data, size_t len, int append, char *err,
                  size_t errlen)
{
    if (!path) return qh_errf(err, errlen, "no path");
    if (!append) { /* replaced whole or not at all (afile.h): a failed write keeps the old file */
        AFile af;
        if (afile_open(&af, path) != 0)
            return qh_errf(err, errlen, "'%s': %s", path, strerror(errno));
        if (len && fwrite(data, 1, len, af.f) != len) {
            int e = errno ? errno : EIO;
            afile_abort(&af);
            return qh_errf(err, errlen, "'%s': %s", path, strerror(e));
        }
        if (afile_commit(&af) != 0) return qh_errf(err, errlen, "'%s': %s", path, strerror(errno));
        return 0;
    }
    FILE *f = fopen(path, "ab");
    if (!f) return qh_errf(err, errlen, "'%s': %s", path, strerror(errno));
    size_t put = len ? fwrite(data, 1, len, f) : 0;
    int e = errno;
    if (fclose(f) != 0 || put != len)
        return qh_errf(err, errlen, "'%s': %s", path, strerror(put != len ? e : errno));
    return 0;
}

size_t io_split_lines(const char *t, size_t len, const char **starts, size_t *lens)
{
    size_t n = 0, i = 0;
    while (i < len) {
        size_t a = i;
        while (i < len && t[i] != '\n' && t[i] != '\r') i++;
        if (starts) {
            starts[n] = t + a;
            lens[n] = i - a;
        }
        n++;
        if (i < len && t[i] == '\r' && i + 1 < len && t[i + 1] == '\n') i++;
        if (i < len) i++;
    }
    return n;
}

/* ---- npy ------------------------------------------------------------------ */

static int host_le(void)
{
    uint16_t x = 1;
    unsigned char c;
    memcpy(&c, &x, 1);
    return c == 1;
}

typedef struct Dtype {
    char kind;
    int size;
    int swap;
} Dtype; /* kind: f c i u b */

/* Why: numpy writes descr as a byte order and a type code: '<f8', '|b1'
   (the string already read from the header's literal). */
static int parse_descr(const char *s, Dtype *dt)
{
    /* NumPy's names and one-letter codes (native byte order) */
    static const struct {
        const char *name, *code;
    } names[] = { { "float64", "f8" },     { "float32", "f4" },   { "float16", "f2" },
                  { "double", "f8" },      { "single", "f4" },    { "half", "f2" },
                  { "complex128", "c16" }, { "complex64", "c8" }, { "cdouble", "c16" },
                  { "csingle", "c8" },     { "int64", "i8" },     { "int32", "i4" },
                  { "int16", "i2" },       { "int8", "i1" },      { "uint64", "u8" },
                  { "uint32", "u4" },      { "uint16", "u2" },    { "uint8", "u1" },
                  { "bool", "b1" },        { "d", "f8" },         { "f", "f4" },
                  { "e", "f2" },           { "D", "c16" },        { "F", "c8" },
                  { "?", "b1" },           { "b", "i1" },         { "B", "u1" },
                  { "h", "i2" },           { "H", "u2" },         { "i", "i4" },
                  { "I", "u4" },           { "q", "i8" },         { "Q", "u8" } };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i].name) == 0) {
            s = names[i].code;
            break;
        }
    size_t l = strlen(s);
    if (l < 2) return -1;
    char order = s[0];
    const char *t = s + 1;
    if (order != '<' && order != '>' && order != '|' && order != '=') {
        order = '=';
        t = s;
    }
    dt->kind = t[0];
    if (t[1] < '0' || t[1] > '9') return -1;
    char *e;
    long sz = strtol(t + 1, &e, 10);
    if (*e != 0 || sz <= 0) return -1;
    dt->size = (int)sz;
    int le = host_le();
    dt->swap = (order == '<' && !le) || (order == '>' && le);
    switch (dt->kind) {
    case 'f': return sz == 2 || sz == 4 || sz == 8 ? 0 : -1;
    case 'c': return sz == 8 || sz == 16 ? 0 : -1;
    case 'i':
    case 'u': return sz == 1 || sz == 2 || sz == 4 || sz == 8 ? 0 : -1;
    case 'b': return sz == 1 ? 0 : -1;
    default: return -1;
    }
}

/* IEEE half to double. */
static double half(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

/* One scalar of the given dtype at p to a double. */
static double scalar(const unsigned char *p, int kind, int size, int swap)
{
    unsigned char b[8];
    for (int i = 0; i < size; i++) b[i] = swap ? p[size - 1 - i] : p[i];
    switch (kind) {
    case 'f':
        if (size == 8) {
            double d;
            memcpy(&d, b, 8);
            return d;
        }
        if (size == 4) {
            float f;
            memcpy(&f, b, 4);
            return f;
        }
        {
            uint16_t h;
            memcpy(&h, b, 2);
            return half(h);
        }
    case 'i':
        if (size == 8) {
            int64_t v;
            memcpy(&v, b, 8);
            return (double)v;
        }
        if (size == 4) {
            int32_t v;
            memcpy(&v, b, 4);
            return v;
        }
        if (size == 2) {
            int16_t v;
            memcpy(&v, b, 2);
            return v;
        }
        return (int8_t)b[0];
    case 'u':
        if (size == 8) {
            uint64_t v;
            memcpy(&v, b, 8);
            return (double)v;
        }
        if (size == 4) {
            uint32_t v;
            memcpy(&v, b, 4);
            return v;
        }
        if (size == 2) {
            uint16_t v;
            memcpy(&v, b, 2);
            return v;
        }
        return b[0];
    default: return b[0] != 0;
    }
}

int io_npy_parse(const unsigned char *buf, size_t len, const char *name, IoArray *out, char *err,
                 size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!name) name = "<npy>";
    if (len < 10 || memcmp(buf, "\x93NUMPY", 6) != 0)
        return qh_errf(err, errlen, "'%s': not a .npy file (bad magic string)", name);
    int major = buf[6];
    size_t hl, off;
    if (buf[7] != 0 && major >= 1 && major <= 3)
        return qh_errf(err, errlen, "'%s': unsupported .npy version %d.%d", name, major, buf[7]);
    if (major == 1) {
        hl = (size_t)buf[8] | (size_t)buf[9] << 8;
        off = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12) return qh_errf(err, errlen, "'%s': bad .npy header (truncated)", name);
        hl = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        off = 12;
    } else {
        return qh_errf(err, errlen, "'%s': unsupported .npy version %d.%d", name, major, buf[7]);
    }
    if (hl > len - off) return qh_errf(err, errlen, "'%s': bad .npy header (truncated)", name);
    NpyHeader hd;
    int hr = io_npy_header(buf + off, hl, major, name, &hd, err, errlen);
    if (hr < 0) return -1;
    const char *code = hd.descr;
    int fortran = hd.fortran, nd = hd.ndim;
    qh_assert(nd >= 0 && nd <= IO_MAX_DIMS);
    memcpy(out->shape, hd.shape, sizeof hd.shape);
    Dtype dt;
    if (hr > 0 || parse_descr(code, &dt) != 0)
        return qh_errf(err, errlen,
                       "'%s': unsupported dtype '%s' (numbers only: float, complex, int, bool)",
                       name, code);
    size_t n = 1;
    for (int i = 0; i < nd; i++) {
        size_t v = out->shape[i];
        if (v && n > SIZE_MAX / 16 / v) return qh_errf(err, errlen, "'%s': shape too large", name);
        n *= v;
    }
    out->ndim = nd;
    out->n = n;
    out->is_complex = dt.kind == 'c';
    size_t need = n * (size_t)dt.size, have = len - off - hl;
    if (have < need)
        return qh_errf(err, errlen,
                       "'%s': bad .npy data: %zu bytes, the shape and dtype '%s' need %zu", name,
                       have, code, need);
    size_t nd_out = out->is_complex ? 2 * n : n;
    out->data = malloc((nd_out ? nd_out : 1) * sizeof(double));
    if (!out->data) return qh_errf(err, errlen, "'%s': out of memory", name);
    const unsigned char *d = buf + off + hl;
    int es = out->is_complex ? dt.size / 2 : dt.size;
    /* element k of the file is element idx(k) of C order */
    size_t strides[IO_MAX_DIMS];
    if (fortran && nd > 1) {
        size_t s = 1;
        for (int i = nd - 1; i >= 0; i--) {
            strides[i] = s;
            s *= out->shape[i];
        }
    }
    size_t cidx[IO_MAX_DIMS] = { 0 };
    for (size_t k = 0; k < n; k++) {
        if ((k & 0xFFFFF) == 0xFFFFF && qh_stop_requested()) {
            free(out->data);
            out->data = NULL;
            return qh_errf(err, errlen, "'%s': interrupted", name);
        }
        size_t at = k;
        if (fortran && nd > 1) {
            at = 0;
            for (int i = 0; i < nd; i++) at += cidx[i] * strides[i];
            for (int i = 0; i < nd; i++) { /* next Fortran index: first axis fastest */
                if (++cidx[i] < out->shape[i]) break;
                cidx[i] = 0;
            }
        }
        const unsigned char *p = d + k * (size_t)dt.size;
        if (out->is_complex) {
            out->data[2 * at] = scalar(p, 'f', es, dt.swap);
            out->data[2 * at + 1] = scalar(p + es, 'f', es, dt.swap);
        } else {
            out->data[at] = scalar(p, dt.kind, dt.size, dt.swap);
        }
    }
    return 0;
}

int io_npy_read(const char *path, IoArray *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    size_t len;
    char *buf = io_read_file(path, &len, err, errlen);
    if (!buf) return -1;
    int rc = io_npy_parse((const unsigned char *)buf, len, path, out, err, errlen);
    free(buf);
    if (rc != 0) io_array_free(out);
    return rc;
}

unsigned char *io_npy_encode(const IoArray *a, size_t *len, char *err, size_t errlen)
{
    if (!a || a->ndim < 0 || a->ndim > IO_MAX_DIMS) {
        qh_errf(err, errlen, "bad array");
        return NULL;
    }
    char dict[64 + 24 * IO_MAX_DIMS];
    int at = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                      a->is_complex ? "<c16" : "<f8");
    for (int i = 0; i < a->ndim; i++)
        at += snprintf(dict + at, sizeof dict - (size_t)at, i ? ", %zu" : "%zu", a->shape[i]);
    at += snprintf(dict + at, sizeof dict - (size_t)at, "%s), }", a->ndim == 1 ? "," : "");
    size_t hl = (size_t)at + 1, pre = 10; /* + '\n' */
    size_t total = pre + hl;
    size_t pad = (64 - total % 64) % 64;
    hl += pad;
    int v2 = hl > 65535;
    if (v2) {
        pre = 12;
        total = pre + (size_t)at + 1;
        pad = (64 - total % 64) % 64;
        hl = (size_t)at + 1 + pad;
    }
    qh_assert((size_t)at < sizeof dict && (pre + hl) % 64 == 0); /* NumPy's alignment */
    size_t es = a->is_complex ? 16 : 8, bytes = a->n * es;
    unsigned char *buf = malloc(pre + hl + bytes);
    if (!buf) {
        qh_errf(err, errlen, "out of memory");
        return NULL;
    }
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = v2 ? 2 : 1;
    buf[7] = 0;
    buf[8] = (unsigned char)(hl & 255);
    buf[9] = (unsigned char)((hl >> 8) & 255);
    if (v2) {
        buf[10] = (unsigned char)((hl >> 16) & 255);
        buf[11] = (unsigned char)((hl >> 24) & 255);
    }
    memcpy(buf + pre, dict, (size_t)at);
    memset(buf + pre + at, ' ', pad);
    buf[pre + hl - 1] = '\n';
    unsigned char *d = buf + pre + hl;
    size_t nd = a->is_complex ? 2 * a->n : a->n;
    if (host_le()) {
        if (nd) memcpy(d, a->data, nd * 8);
    } else {
        for (size_t i = 0; i < nd; i++) {
            unsigned char b[8];
            memcpy(b, &a->data[i], 8);
            for (int k = 0; k < 8; k++) d[8 * i + k] = b[7 - k];
        }
    }
    *len = pre + hl + bytes;
    return buf;
}

int io_npy_write(const char *path, const IoArray *a, char *err, size_t errlen)
{
    size_t len;
    char why[200];
    unsigned char *buf = io_npy_encode(a, &len, why, sizeof why);
    if (!buf) return qh_errf(err, errlen, "'%s': %s", path, why); /* errors name the file */
    int rc = io_write_file(path, (const char *)buf, len, 0, err, errlen);
    free(buf);
    return rc;
}
