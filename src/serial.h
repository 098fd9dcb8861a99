/* serial.h — values as bytes for another process: what a task and its
 * result become to travel between the MPI ranks of doc/distributed.md.
 *
 * A writer turns a value graph into bytes and a reader turns them back
 * into a fresh graph, as a deep copy (value_copy_deep) does between
 * threads: shared structure stays shared and cycles stay finite (an object
 * met again is written as a reference to its first appearance). Numbers
 * travel as their bit patterns, so a value read back is bit-identical.
 * This room's kinds are handled here; every other kind through the ser and
 * deser slots of its TypeOps (value.h); a kind without them "cannot be sent
 * to another rank" (the error names it). Functions and modules travel by
 * reference to the code every rank parsed from the same sources (func.h:
 * SerCode), never as code.
 *
 * The format is read only by the same build of qh with the same program
 * (the ranks check both at start-up): tags are the kinds' tags, builtins
 * their table indices. A reader checks every length against the input and
 * fails cleanly on short or malformed data.
 *
 * Not thread-safe per context; contexts are independent. Knows values
 * only. Prefix ser_ (writing), des_ (reading). */
#ifndef QH_SERIAL_H
#define QH_SERIAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "value.h"

struct SerCtx {
    /* writing */
    Buf out;
    CopyCtx memo;    /* object -> its number + 1 (as a pointer) */
    size_t nwritten; /* objects numbered so far */
    /* reading */
    const unsigned char *in;
    size_t len, pos;
    Value *objs; /* values by number (references, released by ser_free) */
    size_t nobjs, capobjs;
    /* both */
    const void *code; /* the code table (func.h SerCode), or NULL: no functions */
    void *user;       /* for the slots of kinds above this room */
    /* writing only: bytes for comparison in this process, never read back
     * (a task's canonical bytes, task.h): code by its address (functions,
     * modules: no code table needed), a future not yet read by its call */
    bool local;
    int depth;
    bool failed;
    char error[200]; /* why, once failed */
};

/* Writing: ser_init, ser_value (any number of times), then the bytes are
 * in sc->out (sc->out.p, sc->out.len) until ser_free. */
void ser_init(SerCtx *sc, const void *code);
/* Appends v; false (sc->error says what cannot be sent) on failure. */
bool ser_value(SerCtx *sc, Value v);
/* Reading: des_init over len bytes (not copied: they must outlive the
 * reads), then des_value for each value written, in order. */
void des_init(SerCtx *sc, const void *bytes, size_t len, const void *code);
/* The next value (a new reference), or v_exc() with sc->error set. */
Value des_value(SerCtx *sc);
/* True when every byte has been read. */
bool des_at_end(const SerCtx *sc);
void ser_free(SerCtx *sc);

/* Records a failure (the first one wins); returns false / v_exc() for
 * convenience. */
bool ser_fail(SerCtx *sc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
Value des_fail(SerCtx *sc, const char *what);

/* ---- primitives for the slots (little-endian as the machine has it: the
 * ranks run the same build) ---- */
void ser_u8(SerCtx *sc, unsigned v);
void ser_u32(SerCtx *sc, uint32_t v);
void ser_u64(SerCtx *sc, uint64_t v);
void ser_f64(SerCtx *sc, double v);
void ser_bytes(SerCtx *sc, const void *p, size_t n);
/* a byte string with its length (NUL-terminated when read back) */
void ser_str(SerCtx *sc, const char *s, size_t n);

bool des_u8(SerCtx *sc, uint8_t *v);
bool des_u32(SerCtx *sc, uint32_t *v);
bool des_u64(SerCtx *sc, uint64_t *v);
bool des_f64(SerCtx *sc, double *v);
bool des_bytes(SerCtx *sc, void *p, size_t n);
/* Borrowed pointer into the input (NUL-terminated), or NULL on failure. */
const char *des_str(SerCtx *sc, uint32_t *n);
/* A count of items of at least `each` bytes that the rest of the input can
 * hold (guards allocations sized by the input). */
bool des_count(SerCtx *sc, uint64_t *n, size_t each);
/* Whether the rest of the input can hold n items of at least `each` bytes
 * (a count read otherwise, checked before it sizes an allocation); fails
 * the read ("count") when it cannot. */
bool des_room(SerCtx *sc, uint64_t n, size_t each);

/* A deser slot that makes its object before reading what it holds (so
 * that cycles through it are read back) registers it under its number. */
void des_note(SerCtx *sc, size_t id, Obj *o);

#endif
