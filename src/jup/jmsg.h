/* jmsg.h — the Jupyter wire protocol (messaging 5.3), prefix jm_: a message
 * as the frames ZeroMQ carries ([identities..., "<IDS|MSG>", signature,
 * header, parent_header, metadata, content, buffers...]), signed and
 * checked with HMAC-SHA256 (OpenSSL's libcrypto), its JSON parts read and
 * built with io/'s JSON reader and writer.
 *
 * Plain C over bytes: it knows no sockets, no interpreter and no values
 * (the notebook kernel, src/kernel.c, moves the frames). Nothing here is
 * global; a key may be used from one thread at a time. */
#ifndef QH_JMSG_H
#define QH_JMSG_H

#include <stdbool.h>
#include <stddef.h>
#include "io.h"

/* One frame of a multipart message (heap bytes, NUL-terminated for
 * convenience, the NUL not counted). */
typedef struct JmFrame {
    char *p;
    size_t len;
} JmFrame;

/* The signing key of a connection (connection file: "key",
 * "signature_scheme"). An empty key signs nothing: the signature is "" and
 * is not checked (as jupyter_client does). */
typedef struct JmKey JmKey;
/* NULL + err if scheme is not "hmac-sha256" or libcrypto cannot make it. */
JmKey *jm_key_new(const char *scheme, const char *key, size_t len, char *err, size_t errlen);
void jm_key_free(JmKey *k);
/* The signature of the four JSON parts, lowercase hex (64 characters and a
 * NUL; "" for an empty key). False if libcrypto failed. */
bool jm_sign(JmKey *k, const JmFrame parts[4], char out[65]);

/* A message received. */
typedef struct JmMsg {
    JmFrame *ids; /* the routing identities before the delimiter (copies) */
    size_t nids;
    JmFrame part[4];  /* header, parent_header, metadata, content: their text */
    IoJson *json[4];  /* the same, parsed (each an object) */
    const char *type; /* header.msg_type (inside json[0]) */
} JmMsg;
enum { JM_HEADER, JM_PARENT, JM_METADATA, JM_CONTENT };

/* Reads the frames of one message: the delimiter, a valid signature (in
 * constant time), four JSON objects, a header with a msg_type. False + err
 * ("no <IDS|MSG> delimiter", "bad signature", "content: line 1, column 3:
 * ...") on anything else: such a message is dropped. The frames are
 * borrowed; out owns copies. */
bool jm_parse(JmKey *k, const JmFrame *frames, size_t n, JmMsg *out, char *err, size_t errlen);
void jm_msg_free(JmMsg *m);

/* The frames of a message to send: ids (may be NULL), the delimiter, the
 * signature, then the four parts as given (texts). *n is the number of
 * frames; free them with jm_frames_free. NULL if signing failed. */
JmFrame *jm_encode(JmKey *k, const JmFrame *ids, size_t nids, const JmFrame parts[4], size_t *n);
void jm_frames_free(JmFrame *f, size_t n);

/* The text of a header: msg_id, session, username, date (ISO 8601 UTC with
 * microseconds), msg_type, version "5.3". Heap (free it). */
char *jm_header(const char *msg_type, const char *msg_id, const char *session,
                const char *username);

/* ---- building JSON trees to dump (io_json_dump): every node and string
 * lives in the arena until jb_free. Objects and arrays have a fixed
 * capacity; a child is filled in place (jb_obj_at, jb_arr_at return it). */
typedef struct JbArena {
    void **p;
    size_t n, cap;
} JbArena;
void jb_init(JbArena *a);
void jb_free(JbArena *a);
IoJson *jb_obj(JbArena *a, size_t cap);                                  /* a new object */
void jb_put(IoJson *obj, const char *key, IoJson v);                     /* key: a literal */
IoJson *jb_obj_at(JbArena *a, IoJson *obj, const char *key, size_t cap); /* a member object */
IoJson *jb_arr_at(JbArena *a, IoJson *obj, const char *key, size_t cap); /* a member array */
void jb_push(IoJson *arr, IoJson v);
IoJson *jb_push_arr(JbArena *a, IoJson *arr, size_t cap); /* an array item that is an array */
IoJson jb_str(JbArena *a, const char *s, size_t len);     /* a copy of s, valid UTF-8 */
IoJson jb_cstr(JbArena *a, const char *s);                /* a copy of a C string */
/* The tree's text on one line (heap, free it; *len its length). */
char *jb_dump(const IoJson *j, size_t *len);

/* ---- reading: members of a parsed object ---- */
const IoJson *jm_get(const IoJson *obj, const char *key); /* NULL if absent */
const char *jm_str(const IoJson *obj, const char *key);   /* NULL if absent or not a string */
bool jm_bool(const IoJson *obj, const char *key, bool dflt);
double jm_num(const IoJson *obj, const char *key, double dflt);

#endif
