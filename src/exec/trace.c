/* trace.c — Chrome trace-event JSON buffer (trace.h).
 *
 * Each event is formatted into a private buffer first, then appended to
 * one growing text under the mutex, so the lock is held only for a
 * memcpy. The text holds comma-separated event objects; trace_write wraps
 * them. Must not know: the executor, the language, quantum. */
#include "trace.h"
#include "afile.h"
#include "qh_assert.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct Trace {
    pthread_mutex_t mu;
    char *buf;
    size_t len, cap;
    size_t count;
    int pid; /* the Perfetto process of every event (1 unless set) */
    struct timespec t0;
};

/* Why: one owner of the buffer and the time origin. */
Trace *trace_new(void)
{
    Trace *tr = calloc(1, sizeof *tr);
    if (!tr) return NULL;
    pthread_mutex_init(&tr->mu, NULL);
    clock_gettime(CLOCK_MONOTONIC, &tr->t0);
    tr->pid = 1;
    return tr;
}

/* Why: after trace_write at exit. */
void trace_free(Trace *tr)
{
    if (!tr) return;
    pthread_mutex_destroy(&tr->mu);
    free(tr->buf);
    free(tr);
}

/* Why: every recorder stamps events on the same monotonic origin. t0 is
 * written once before the Trace is shared, so reading it needs no lock. */
double trace_now_us(const Trace *tr)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)(ts.tv_sec - tr->t0.tv_sec) * 1e6 + (double)(ts.tv_nsec - tr->t0.tv_nsec) * 1e-3;
}

/* Why: the executor measures times with its own monotonic reads and
 * stamps them later; this puts them on the trace's origin. */
double trace_mono_to_us(const Trace *tr, double mono_seconds)
{
    double t0 = (double)tr->t0.tv_sec + (double)tr->t0.tv_nsec * 1e-9;
    return (mono_seconds - t0) * 1e6;
}

/* Why: names come from user code (function names, labels) and must not
 * break the JSON. Invalid UTF-8 is passed through; control bytes become
 * \u00XX. Stops early rather than cut an escape in half. */
size_t trace_json_string(char *buf, size_t cap, const char *s)
{
    size_t n = 0;
    if (cap < 3) {
        if (cap) buf[0] = 0;
        return 0;
    }
    buf[n++] = '"';
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        char esc[8];
        size_t k;
        switch (*p) {
        case '"':
            memcpy(esc, "\\\"", 2);
            k = 2;
            break;
        case '\\':
            memcpy(esc, "\\\\", 2);
            k = 2;
            break;
        case '\n':
            memcpy(esc, "\\n", 2);
            k = 2;
            break;
        case '\r':
            memcpy(esc, "\\r", 2);
            k = 2;
            break;
        case '\t':
            memcpy(esc, "\\t", 2);
            k = 2;
            break;
        default:
            if (*p < 0x20 || *p == 0x7f) {
                snprintf(esc, sizeof esc, "\\u%04x", *p);
                k = 6;
            } else {
                esc[0] = (char)*p;
                k = 1;
            }
        }
        if (n + k + 2 > cap) /* room for the closing quote and NUL */
            break;
        memcpy(buf + n, esc, k);
        n += k;
    }
    qh_assert(n + 2 <= cap); /* the loop left room for the quote and the NUL */
    buf[n++] = '"';
    buf[n] = 0;
    return n;
}

/* Why: the only writer of the shared text; short critical section. */
static void append(Trace *tr, const char *ev, size_t len)
{
    pthread_mutex_lock(&tr->mu);
    size_t need = tr->len + len + 2;
    if (need > tr->cap) {
        size_t cap = tr->cap ? tr->cap : 4096;
        while (cap < need) cap *= 2;
        char *b = realloc(tr->buf, cap);
        if (!b) { /* drop the event rather than crash */
            pthread_mutex_unlock(&tr->mu);
            return;
        }
        tr->buf = b;
        tr->cap = cap;
    }
    qh_assert(tr->len + len + 2 <= tr->cap && (tr->len == 0) == (tr->count == 0));
    if (tr->len) {
        tr->buf[tr->len++] = ',';
        tr->buf[tr->len++] = '\n';
    }
    memcpy(tr->buf + tr->len, ev, len);
    tr->len += len;
    tr->count++;
    pthread_mutex_unlock(&tr->mu);
}

/* Why: format outside the lock into a stack buffer, or the heap for the
 * rare long one (big args). */
static void emitf(Trace *tr, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        append(tr, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) return;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    append(tr, big, (size_t)n);
    free(big);
}

/* Why: a slice on a track: a task, a statement, a wait. */
void trace_complete(Trace *tr, int tid, const char *name, const char *cat, double ts_us,
                    double dur_us, const char *args_json)
{
    if (!tr) return;
    char jn[256], jc[64];
    trace_json_string(jn, sizeof jn, name);
    trace_json_string(jc, sizeof jc, cat ? cat : "qh");
    if (dur_us < 0) dur_us = 0;
    if (args_json && *args_json)
        emitf(tr,
              "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"name\":%s,\"cat\":%s,"
              "\"ts\":%.3f,\"dur\":%.3f,\"args\":%s}",
              tr->pid, tid, jn, jc, ts_us, dur_us, args_json);
    else
        emitf(tr,
              "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"name\":%s,\"cat\":%s,"
              "\"ts\":%.3f,\"dur\":%.3f}",
              tr->pid, tid, jn, jc, ts_us, dur_us);
}

/* Why: flow ids are global in a file; each rank numbers its own from 1. */
static unsigned long long flow_id(const Trace *tr, unsigned long id)
{
    return (unsigned long long)(tr->pid - 1) << 40 | id;
}

/* Why: the dispatch end of a dispatch-to-start arrow. */
void trace_flow_start(Trace *tr, int tid, unsigned long id, double ts_us)
{
    if (!tr) return;
    emitf(tr,
          "{\"ph\":\"s\",\"pid\":%d,\"tid\":%d,\"name\":\"dispatch\",\"cat\":\"flow\","
          "\"id\":%llu,\"ts\":%.3f}",
          tr->pid, tid, flow_id(tr, id), ts_us);
}

/* Why: the task end of the arrow; "bp":"e" binds it to the task slice
 * that encloses ts (the task starts at that very moment). */
void trace_flow_end(Trace *tr, int tid, unsigned long id, double ts_us)
{
    if (!tr) return;
    emitf(tr,
          "{\"ph\":\"f\",\"bp\":\"e\",\"pid\":%d,\"tid\":%d,\"name\":\"dispatch\","
          "\"cat\":\"flow\",\"id\":%lu,\"ts\":%.3f}",
          tr->pid, tid, id, ts_us);
}

/* Why: marks a moment (Ctrl-C, a cancellation). */
void trace_instant(Trace *tr, int tid, const char *name, const char *cat, double ts_us)
{
    if (!tr) return;
    char jn[256], jc[64];
    trace_json_string(jn, sizeof jn, name);
    trace_json_string(jc, sizeof jc, cat ? cat : "qh");
    emitf(tr, "{\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%d,\"name\":%s,\"cat\":%s,\"ts\":%.3f}",
          tr->pid, tid, jn, jc, ts_us);
}

/* Why: tracks read "main", "worker 1", ... instead of bare numbers. */
void trace_thread_name(Trace *tr, int tid, const char *name)
{
    if (!tr) return;
    char jn[256];
    trace_json_string(jn, sizeof jn, name);
    emitf(tr,
          "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":%s}}",
          tr->pid, tid, jn);
}

/* Why: under mpirun each rank is a Perfetto process of its own; set before
 * any event is recorded. */
void trace_set_process(Trace *tr, int pid, const char *name)
{
    if (!tr) return;
    tr->pid = pid;
    char jn[256];
    trace_json_string(jn, sizeof jn, name);
    emitf(tr, "{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\",\"args\":{\"name\":%s}}", pid,
          jn);
    emitf(tr,
          "{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":%d}}",
          pid, pid);
}

/* Why: a serving rank's events travel to rank 0, which writes one file. */
char *trace_events(Trace *tr, size_t *len)
{
    pthread_mutex_lock(&tr->mu);
    qh_assert(tr->len <= tr->cap);
    char *out = malloc(tr->len + 1);
    if (out) {
        if (tr->len) memcpy(out, tr->buf, tr->len);
        out[tr->len] = 0;
        *len = tr->len;
    }
    pthread_mutex_unlock(&tr->mu);
    return out;
}

void trace_append_events(Trace *tr, const char *events, size_t len)
{
    if (tr && len) append(tr, events, len);
}

/* Why: tests and --stats can tell whether anything was recorded. */
size_t trace_count(Trace *tr)
{
    pthread_mutex_lock(&tr->mu);
    size_t n = tr->count;
    pthread_mutex_unlock(&tr->mu);
    return n;
}

/* Why: --trace FILE at exit (or on demand). Holds the lock while writing
 * so the file is one consistent snapshot. */
int trace_write(Trace *tr, const char *path)
{
    AFile af; /* replaced whole or not at all */
    FILE *f = stdout;
    if (strcmp(path, "-") != 0) {
        if (afile_open(&af, path) != 0) return -1;
        f = af.f;
    }
    pthread_mutex_lock(&tr->mu);
    fputs("{\"traceEvents\":[\n", f);
    if (tr->len) fwrite(tr->buf, 1, tr->len, f);
    fputs("\n],\"displayTimeUnit\":\"ms\"}\n", f);
    pthread_mutex_unlock(&tr->mu);
    if (f != stdout) return afile_commit(&af);
    int err = ferror(f);
    int save = errno;
    err |= fflush(f) != 0;
    if (err) {
        errno = save ? save : EIO;
        return -1;
    }
    return 0;
}
