/* diag.c — printing diagnostics with source line and caret, and reading
 * sources. Knows sources, not values or evaluation. */
#include "diag.h"
#include "qh_assert.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *diag_line(const Source *src, int line, size_t *n)
{
    const char *p = src->text, *end = src->text + src->len;
    for (int l = 1; l < line && p < end; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            p = end;
            break;
        }
        p = nl + 1;
    }
    const char *e = memchr(p, '\n', (size_t)(end - p));
    if (!e) e = end;
    *n = (size_t)(e - p);
    return p;
}

void diag_print(FILE *out, const Source *src, int line, int col, const char *kind, const char *msg)
{
    const char *name = src ? src->name : "<unknown>";
    if (line > 0)
        fprintf(out, "%s:%d:%d: %s: %s\n", name, line, col, kind, msg);
    else
        fprintf(out, "%s: %s: %s\n", name, kind, msg);
    if (!src || line <= 0) return;
    size_t n;
    const char *l = diag_line(src, line, &n);
    if (n > 200) {
        /* very long lines: show a window around the column */
        size_t c0 = col > 80 ? (size_t)col - 80 : 0;
        if (c0 > n) c0 = n;
        size_t w = n - c0 < 160 ? n - c0 : 160;
        fprintf(out, "%5d | ...%.*s...\n", line, (int)w, l + c0);
        fprintf(out, "      | %*s^\n", (int)((size_t)col - 1 - c0 + 3), "");
        return;
    }
    fprintf(out, "%5d | ", line);
    for (size_t i = 0; i < n; i++) fputc(l[i] == '\t' ? ' ' : (l[i] == '\r' ? ' ' : l[i]), out);
    fputc('\n', out);
    fprintf(out, "      | ");
    /* caret under the column, counting code points so UTF-8 lines line up */
    int cols = 0;
    for (int i = 0; i < col - 1 && (size_t)i < n; i++)
        if (((unsigned char)l[i] & 0xc0) != 0x80) cols++;
    fprintf(out, "%*s^\n", cols, "");
}

const char *diag_where(char *buf, size_t n, const Source *src, int line)
{
    if (src && src->entry > 0) {
        char own[32];
        const char *who = src->label;
        if (!who) {
            snprintf(own, sizeof own, "entry %d", src->entry);
            who = own;
        }
        if (line > 1)
            snprintf(buf, n, "%s, line %d", who, line);
        else
            snprintf(buf, n, "%s", who);
    } else {
        snprintf(buf, n, "%s:%d", src ? src->name : "<unknown>", line);
    }
    return buf;
}

Source *source_from_text(const char *name, const char *text, size_t len)
{
    Source *s = xcalloc(1, sizeof *s);
    s->name = xstrdup(name);
    s->text = xmalloc(len + 1);
    memcpy(s->text, text, len);
    s->text[len] = 0;
    s->len = len;
    return s;
}

#define SOURCE_MAX_BYTES (64 << 20)

Source *source_from_file(const char *path, const char *shown, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n >= SOURCE_MAX_BYTES) { /* qh /dev/zero: not read until memory runs out */
            free(buf);
            fclose(f);
            snprintf(err, errlen, "'%s' is larger than %d MiB (the limit of a program's file)",
                     path, SOURCE_MAX_BYTES >> 20);
            return NULL;
        }
        if (n == cap) {
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                snprintf(err, errlen, "'%s' is too large", path);
                return NULL;
            }
            buf = nb;
        }
    }
    if (ferror(f)) {
        snprintf(err, errlen, "cannot read '%s': %s", path, strerror(errno));
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    Source *s = xcalloc(1, sizeof *s);
    s->name = xstrdup(shown ? shown : path);
    s->path = xstrdup(path);
    s->text = buf;
    s->len = n;
    buf = xrealloc(buf, n + 1);
    s->text = buf;
    s->text[n] = 0;
    return s;
}

void source_free(Source *s)
{
    if (!s) return;
    free(s->name);
    free(s->path);
    free(s->label);
    free(s->text);
    free(s);
}
