/* jmsg.c — Jupyter messages as frames: signing (HMAC-SHA256 through
 * libcrypto's EVP_MAC), checking, parsing and encoding, and a small
 * arena to build the JSON trees io_json_dump writes. Knows bytes, libcrypto
 * and io/'s JSON; no sockets, no interpreter. */
#include "jmsg.h"
#include "qh_assert.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

struct JmKey {
    EVP_MAC *mac; /* NULL for an empty key */
    unsigned char *key;
    size_t len;
};

static const char delim[] = "<IDS|MSG>";

JmKey *jm_key_new(const char *scheme, const char *key, size_t len, char *err, size_t errlen)
{
    if (scheme && *scheme && strcmp(scheme, "hmac-sha256") != 0) {
        snprintf(err, errlen, "signature scheme '%s' is not supported (only hmac-sha256)", scheme);
        return NULL;
    }
    JmKey *k = xcalloc(1, sizeof *k);
    if (len == 0) return k;
    k->mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (!k->mac) {
        snprintf(err, errlen, "libcrypto has no HMAC");
        free(k);
        return NULL;
    }
    k->key = xmalloc(len);
    memcpy(k->key, key, len);
    k->len = len;
    return k;
}

void jm_key_free(JmKey *k)
{
    if (!k) return;
    if (k->mac) EVP_MAC_free(k->mac);
    if (k->key) OPENSSL_cleanse(k->key, k->len);
    free(k->key);
    free(k);
}

/* the raw 32-byte HMAC of the parts */
static bool mac_parts(JmKey *k, const JmFrame parts[4], unsigned char md[32])
{
    EVP_MAC_CTX *c = EVP_MAC_CTX_new(k->mac);
    if (!c) return false;
    char digest[] = "SHA256";
    OSSL_PARAM params[] = { OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                            OSSL_PARAM_construct_end() };
    bool ok = EVP_MAC_init(c, k->key, k->len, params) == 1;
    for (int i = 0; ok && i < 4; i++)
        ok = EVP_MAC_update(c, (const unsigned char *)parts[i].p, parts[i].len) == 1;
    size_t n = 0;
    if (ok) ok = EVP_MAC_final(c, md, &n, 32) == 1 && n == 32;
    EVP_MAC_CTX_free(c);
    return ok;
}

bool jm_sign(JmKey *k, const JmFrame parts[4], char out[65])
{
    out[0] = 0;
    if (!k->mac) return true;
    unsigned char md[32];
    if (!mac_parts(k, parts, md)) return false;
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = 0;
    return true;
}

static JmFrame frame_copy(const char *p, size_t len)
{
    JmFrame f;
    f.p = xmalloc(len + 1);
    if (len) memcpy(f.p, p, len);
    f.p[len] = 0;
    f.len = len;
    return f;
}

void jm_msg_free(JmMsg *m)
{
    for (size_t i = 0; i < m->nids; i++) free(m->ids[i].p);
    free(m->ids);
    for (int i = 0; i < 4; i++) {
        free(m->part[i].p);
        if (m->json[i]) io_json_free(m->json[i]);
    }
    memset(m, 0, sizeof *m);
}

static const char *const part_names[4] = { "header", "parent_header", "metadata", "content" };

bool jm_parse(JmKey *k, const JmFrame *frames, size_t n, JmMsg *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    size_t d = 0;
    while (d < n && !(frames[d].len == sizeof delim - 1 &&
                      memcmp(frames[d].p, delim, sizeof delim - 1) == 0))
        d++;
    if (d == n) {
        snprintf(err, errlen, "no <IDS|MSG> delimiter");
        return false;
    }
    if (n - d < 6) {
        snprintf(err, errlen, "%zu frames after the delimiter, not at least 5", n - d - 1);
        return false;
    }
    const JmFrame *sig = &frames[d + 1], *parts = &frames[d + 2];
    if (k->mac) {
        unsigned char md[32], got[32];
        bool hex_ok = sig->len == 64;
        for (size_t i = 0; hex_ok && i < 32; i++) {
            unsigned v = 0;
            for (int h = 0; h < 2; h++) {
                char c = sig->p[2 * i + (size_t)h];
                unsigned x = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                             : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                             : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                                    : 16u;
                if (x > 15) hex_ok = false;
                v = v * 16 + (x & 15);
            }
            got[i] = (unsigned char)v;
        }
        if (!hex_ok) {
            snprintf(err, errlen, sig->len ? "malformed signature" : "unsigned message");
            return false;
        }
        if (!mac_parts(k, parts, md)) {
            snprintf(err, errlen, "libcrypto failed to compute the signature");
            return false;
        }
        if (CRYPTO_memcmp(md, got, 32) != 0) {
            snprintf(err, errlen, "bad signature");
            return false;
        }
    }
    for (int i = 0; i < 4; i++) {
        char e[200];
        out->part[i] = frame_copy(parts[i].p, parts[i].len);
        out->json[i] = io_json_parse(parts[i].p, parts[i].len, e, sizeof e);
        if (!out->json[i] || out->json[i]->kind != IOJ_OBJECT) {
            if (out->json[i])
                snprintf(err, errlen, "%s: not a JSON object", part_names[i]);
            else
                snprintf(err, errlen, "%s: %s", part_names[i], e);
            jm_msg_free(out);
            return false;
        }
    }
    out->type = jm_str(out->json[JM_HEADER], "msg_type");
    if (!out->type) {
        snprintf(err, errlen, "header: no msg_type");
        jm_msg_free(out);
        return false;
    }
    out->nids = d;
    out->ids = d ? xmalloc(d * sizeof *out->ids) : NULL;
    for (size_t i = 0; i < d; i++) out->ids[i] = frame_copy(frames[i].p, frames[i].len);
    return true;
}

JmFrame *jm_encode(JmKey *k, const JmFrame *ids, size_t nids, const JmFrame parts[4], size_t *n)
{
    char sig[65];
    if (!jm_sign(k, parts, sig)) return NULL;
    *n = nids + 6;
    JmFrame *f = xmalloc(*n * sizeof *f);
    for (size_t i = 0; i < nids; i++) f[i] = frame_copy(ids[i].p, ids[i].len);
    f[nids] = frame_copy(delim, sizeof delim - 1);
    f[nids + 1] = frame_copy(sig, strlen(sig));
    for (int i = 0; i < 4; i++) f[nids + 2 + i] = frame_copy(parts[i].p, parts[i].len);
    return f;
}

void jm_frames_free(JmFrame *f, size_t n)
{
    if (!f) return;
    for (size_t i = 0; i < n; i++) free(f[i].p);
    free(f);
}

char *jm_header(const char *msg_type, const char *msg_id, const char *session, const char *username)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    time_t t = tv.tv_sec;
    gmtime_r(&t, &tm);
    char date[64];
    snprintf(date, sizeof date, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)tv.tv_usec);
    JbArena a;
    jb_init(&a);
    IoJson *h = jb_obj(&a, 6);
    jb_put(h, "msg_id", jb_cstr(&a, msg_id));
    jb_put(h, "session", jb_cstr(&a, session));
    jb_put(h, "username", jb_cstr(&a, username));
    jb_put(h, "date", jb_cstr(&a, date));
    jb_put(h, "msg_type", jb_cstr(&a, msg_type));
    jb_put(h, "version", jb_cstr(&a, "5.3"));
    char *text = jb_dump(h, NULL);
    jb_free(&a);
    return text;
}

/* ---------------------------------------------------------------- building */

void jb_init(JbArena *a) { memset(a, 0, sizeof *a); }

void jb_free(JbArena *a)
{
    for (size_t i = 0; i < a->n; i++) free(a->p[i]);
    free(a->p);
    memset(a, 0, sizeof *a);
}

static void *jb_alloc(JbArena *a, size_t bytes)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 32;
        a->p = xrealloc(a->p, a->cap * sizeof *a->p);
    }
    void *p = xcalloc(1, bytes ? bytes : 1);
    a->p[a->n++] = p;
    return p;
}

static void make_obj(JbArena *a, IoJson *j, size_t cap)
{
    *j = io_json_null();
    j->kind = IOJ_OBJECT;
    j->items = jb_alloc(a, cap * sizeof *j->items);
    j->keys = jb_alloc(a, cap * sizeof *j->keys);
    j->keylens = jb_alloc(a, cap * sizeof *j->keylens);
    j->len = cap; /* the capacity (len is unused for objects) */
}

static void make_arr(JbArena *a, IoJson *j, size_t cap)
{
    *j = io_json_null();
    j->kind = IOJ_ARRAY;
    j->items = jb_alloc(a, cap * sizeof *j->items);
    j->len = cap;
}

IoJson *jb_obj(JbArena *a, size_t cap)
{
    IoJson *j = jb_alloc(a, sizeof *j);
    make_obj(a, j, cap);
    return j;
}

static IoJson *slot(IoJson *obj, const char *key)
{
    qh_assert(obj->kind == IOJ_OBJECT && obj->n < obj->len);
    obj->keys[obj->n] = (char *)key;
    obj->keylens[obj->n] = strlen(key);
    return &obj->items[obj->n++];
}

void jb_put(IoJson *obj, const char *key, IoJson v) { *slot(obj, key) = v; }

IoJson *jb_obj_at(JbArena *a, IoJson *obj, const char *key, size_t cap)
{
    IoJson *j = slot(obj, key);
    make_obj(a, j, cap);
    return j;
}

IoJson *jb_arr_at(JbArena *a, IoJson *obj, const char *key, size_t cap)
{
    IoJson *j = slot(obj, key);
    make_arr(a, j, cap);
    return j;
}

void jb_push(IoJson *arr, IoJson v)
{
    qh_assert(arr->kind == IOJ_ARRAY && arr->n < arr->len);
    arr->items[arr->n++] = v;
}

IoJson *jb_push_arr(JbArena *a, IoJson *arr, size_t cap)
{
    qh_assert(arr->kind == IOJ_ARRAY && arr->n < arr->len);
    IoJson *j = &arr->items[arr->n++];
    make_arr(a, j, cap);
    return j;
}

/* the length of the valid UTF-8 sequence at s (n bytes left), or 0 */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t k = c < 0x80                 ? 1
               : c >= 0xC2 && c <= 0xDF ? 2
               : c >= 0xE0 && c <= 0xEF ? 3
               : c >= 0xF0 && c <= 0xF4 ? 4
                                        : 0;
    if (!k || k > n) return 0;
    for (size_t i = 1; i < k; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (k == 3 && ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F))) return 0;
    if (k == 4 && ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] > 0x8F))) return 0;
    return k;
}

IoJson jb_str(JbArena *a, const char *s, size_t len)
{
    /* JSON text is UTF-8: a byte that starts no valid sequence becomes
     * U+FFFD, as Python's decode(errors="replace") does */
    char *c = jb_alloc(a, 3 * len + 1);
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t k = utf8_len((const unsigned char *)s + i, len - i);
        if (k) {
            memcpy(c + o, s + i, k);
            o += k;
            i += k;
        } else {
            memcpy(c + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        }
    }
    c[o] = 0;
    return io_json_string(c, o);
}

IoJson jb_cstr(JbArena *a, const char *s) { return jb_str(a, s, strlen(s)); }

char *jb_dump(const IoJson *j, size_t *len)
{
    char err[100];
    size_t n;
    char *t = io_json_dump(j, -1, &n, err, sizeof err);
    qh_assert(t); /* our trees are shallow; out of memory ends in xmalloc's way */
    if (len) *len = n;
    return t;
}

/* ---------------------------------------------------------------- reading */

const IoJson *jm_get(const IoJson *obj, const char *key)
{
    if (!obj || obj->kind != IOJ_OBJECT) return NULL;
    size_t kl = strlen(key);
    for (size_t i = 0; i < obj->n; i++)
        if (obj->keylens[i] == kl && memcmp(obj->keys[i], key, kl) == 0) return &obj->items[i];
    return NULL;
}

const char *jm_str(const IoJson *obj, const char *key)
{
    const IoJson *j = jm_get(obj, key);
    return j && j->kind == IOJ_STRING ? j->str : NULL;
}

bool jm_bool(const IoJson *obj, const char *key, bool dflt)
{
    const IoJson *j = jm_get(obj, key);
    return j && j->kind == IOJ_BOOL ? j->b != 0 : dflt;
}

double jm_num(const IoJson *obj, const char *key, double dflt)
{
    const IoJson *j = jm_get(obj, key);
    return j && j->kind == IOJ_NUMBER ? j->num : dflt;
}
