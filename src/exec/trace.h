/* trace.h — a timeline of a run in Chrome trace-event JSON (--trace FILE).
 *
 * The file opens in Perfetto (ui.perfetto.dev) or chrome://tracing: one
 * track per thread (tid 0 = the main thread, 1..N = executor workers, then
 * remote slots; under mpirun one process per rank),
 * complete slices ("X") for statements, waits and tasks, and flow arrows
 * ("s" -> "f") from a dispatch to the start of its task. Appends are short
 * and take one mutex, so any thread may record. Times are microseconds on
 * the monotonic clock, relative to trace_new.
 *
 * Must not know: the executor, the language, quantum. */
#ifndef QH_TRACE_H
#define QH_TRACE_H

#include <stddef.h>

typedef struct Trace Trace;

Trace *trace_new(void);
void trace_free(Trace *tr);

/* Microseconds since trace_new, monotonic. */
double trace_now_us(const Trace *tr);
/* The same scale for a moment already read from CLOCK_MONOTONIC, in
 * seconds (so a recorder can stamp an event after the fact). */
double trace_mono_to_us(const Trace *tr, double mono_seconds);

/* A slice of dur_us starting at ts_us on thread tid. name and cat are
 * escaped; args_json, if not NULL, must be a JSON object text ("{...}") and
 * is copied as is. */
void trace_complete(Trace *tr, int tid, const char *name, const char *cat, double ts_us,
                    double dur_us, const char *args_json);
/* A flow arrow: start on tid at ts_us, end (binding to the enclosing
 * slice, "bp":"e") on another thread. id pairs the two. */
void trace_flow_start(Trace *tr, int tid, unsigned long id, double ts_us);
void trace_flow_end(Trace *tr, int tid, unsigned long id, double ts_us);
/* An instant event ("i", thread scope), e.g. an interrupt. */
void trace_instant(Trace *tr, int tid, const char *name, const char *cat, double ts_us);
/* Names a track (metadata "M", thread_name). */
void trace_thread_name(Trace *tr, int tid, const char *name);

/* Under mpirun: every event of this trace belongs to Perfetto process
 * `pid` (1 by default), named `name`. Set before recording. */
void trace_set_process(Trace *tr, int pid, const char *name);
/* The events recorded so far as one text (malloc'd; *len its length), and
 * such a text from another trace appended as is (another process's events,
 * on the same time origin). */
char *trace_events(Trace *tr, size_t *len);
void trace_append_events(Trace *tr, const char *events, size_t len);

/* Number of events recorded so far. */
size_t trace_count(Trace *tr);

/* Writes {"traceEvents":[...],"displayTimeUnit":"ms"} to path ("-" is
 * stdout). Returns 0, or -1 with errno set. The trace stays usable. */
int trace_write(Trace *tr, const char *path);

/* Appends s to buf as a JSON string literal (with quotes), escaping
 * quotes, backslashes and control characters; truncates (keeping the
 * string valid) if buf is short. Returns the length written. Exposed so
 * callers can build args_json safely. */
size_t trace_json_string(char *buf, size_t cap, const char *s);

#endif
