/* test_jup.c — unit tests of the Jupyter wire room (Check): HMAC-SHA256
 * against RFC 4231's test vectors (the key and data split across the four
 * parts as a message signs them), encode then parse round trips (with and
 * without identities, an empty key), and every reason a message is
 * refused: no delimiter, too few frames, unsigned, a malformed or wrong
 * signature, a part that is not JSON or not an object, no msg_type; the
 * JSON builder's output. Knows only jmsg.h and io.h. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "jmsg.h"

static JmFrame fr(const char *s) { return (JmFrame){ (char *)s, strlen(s) }; }

START_TEST(hmac_rfc4231)
{
    /* RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?" */
    char err[200], sig[65];
    JmKey *k = jm_key_new("hmac-sha256", "Jefe", 4, err, sizeof err);
    ck_assert_ptr_nonnull(k);
    JmFrame parts[4] = { fr("what do "), fr("ya want "), fr(""), fr("for nothing?") };
    ck_assert(jm_sign(k, parts, sig));
    ck_assert_str_eq(sig, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    jm_key_free(k);
    /* test case 6: a key longer than the block (131 bytes of 0xaa) */
    char key[131];
    memset(key, 0xaa, sizeof key);
    k = jm_key_new("hmac-sha256", key, sizeof key, err, sizeof err);
    JmFrame p6[4] = { fr("Test Using Larger Than Block-Size Key"), fr(" - Hash Key First"), fr(""),
                      fr("") };
    ck_assert(jm_sign(k, p6, sig));
    ck_assert_str_eq(sig, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    jm_key_free(k);
    /* an empty key signs nothing; another scheme is refused */
    k = jm_key_new("hmac-sha256", "", 0, err, sizeof err);
    ck_assert(jm_sign(k, parts, sig));
    ck_assert_str_eq(sig, "");
    jm_key_free(k);
    ck_assert_ptr_null(jm_key_new("hmac-md5", "x", 1, err, sizeof err));
    ck_assert_msg(strstr(err, "hmac-md5"), "%s", err);
}
END_TEST

static JmFrame *message(JmKey *k, int nids, const char *content, size_t *n)
{
    char *h = jm_header("execute_request", "m1", "sess", "me");
    JmFrame parts[4] = { fr(h), fr("{}"), fr("{}"), fr(content) };
    JmFrame ids[2] = { fr("id-one"), fr("id-two") };
    JmFrame *f = jm_encode(k, ids, (size_t)nids, parts, n);
    free(h);
    return f;
}

START_TEST(round_trip)
{
    char err[200];
    for (int keyed = 0; keyed < 2; keyed++)
        for (int nids = 0; nids <= 2; nids++) {
            JmKey *k = jm_key_new(NULL, "secret", keyed ? 6 : 0, err, sizeof err);
            size_t n;
            JmFrame *f = message(k, nids, "{\"code\": \"1 + 1\", \"silent\": false}", &n);
            ck_assert_uint_eq(n, (size_t)nids + 6);
            ck_assert_uint_eq(f[nids + 1].len, keyed ? 64u : 0u);
            JmMsg m;
            ck_assert_msg(jm_parse(k, f, n, &m, err, sizeof err), "%s", err);
            ck_assert_uint_eq(m.nids, (size_t)nids);
            if (nids) ck_assert_str_eq(m.ids[nids - 1].p, nids == 1 ? "id-one" : "id-two");
            ck_assert_str_eq(m.type, "execute_request");
            ck_assert_str_eq(jm_str(m.json[JM_HEADER], "version"), "5.3");
            ck_assert_str_eq(jm_str(m.json[JM_HEADER], "msg_id"), "m1");
            ck_assert_str_eq(jm_str(m.json[JM_CONTENT], "code"), "1 + 1");
            ck_assert(!jm_bool(m.json[JM_CONTENT], "silent", true));
            ck_assert(jm_bool(m.json[JM_CONTENT], "store_history", true));
            ck_assert_ptr_null(jm_str(m.json[JM_CONTENT], "silent"));
            jm_msg_free(&m);
            jm_frames_free(f, n);
            jm_key_free(k);
        }
}
END_TEST

static void refused(JmKey *k, JmFrame *f, size_t n, const char *why)
{
    JmMsg m;
    char err[200];
    ck_assert(!jm_parse(k, f, n, &m, err, sizeof err));
    ck_assert_msg(strstr(err, why), "'%s' does not say '%s'", err, why);
}

START_TEST(refusals)
{
    char err[200];
    JmKey *k = jm_key_new("hmac-sha256", "secret", 6, err, sizeof err);
    size_t n;
    JmFrame *f = message(k, 1, "{}", &n);
    refused(k, f + 2, n - 2, "no <IDS|MSG> delimiter");
    refused(k, f, n - 1, "not at least 5");
    char *sig = f[2].p;
    size_t siglen = f[2].len;
    f[2] = fr("");
    refused(k, f, n, "unsigned message");
    f[2] = fr("zz");
    refused(k, f, n, "malformed signature");
    char wrong[65];
    memcpy(wrong, sig, 65);
    wrong[10] = wrong[10] == '0' ? '1' : '0';
    f[2] = (JmFrame){ wrong, siglen };
    refused(k, f, n, "bad signature");
    /* the signature covers every part: a changed content is refused */
    f[2] = (JmFrame){ sig, siglen };
    char *content = f[6].p;
    f[6] = fr("{\"x\": 1}");
    refused(k, f, n, "bad signature");
    f[6].p = content;
    f[6].len = 2;
    jm_frames_free(f, n);
    /* well signed, but not a message */
    JmFrame parts[4] = { fr("{\"msg_type\": \"x\"}"), fr("{}"), fr("{}"), fr("{not json") };
    f = jm_encode(k, NULL, 0, parts, &n);
    refused(k, f, n, "content: line 1, column 2");
    jm_frames_free(f, n);
    parts[3] = fr("[1, 2]");
    f = jm_encode(k, NULL, 0, parts, &n);
    refused(k, f, n, "content: not a JSON object");
    jm_frames_free(f, n);
    parts[0] = fr("{\"msg_id\": \"1\"}");
    parts[3] = fr("{}");
    f = jm_encode(k, NULL, 0, parts, &n);
    refused(k, f, n, "header: no msg_type");
    jm_frames_free(f, n);
    jm_key_free(k);
}
END_TEST

START_TEST(builder)
{
    JbArena a;
    jb_init(&a);
    IoJson *o = jb_obj(&a, 4);
    jb_put(o, "status", jb_cstr(&a, "ok"));
    jb_put(o, "n", io_json_number(3));
    IoJson *arr = jb_arr_at(&a, o, "items", 2);
    jb_push(arr, jb_str(&a, "a\"b\n", 4));
    IoJson *in = jb_push_arr(&a, arr, 1);
    jb_push(in, io_json_bool(1));
    jb_obj_at(&a, o, "empty", 0);
    size_t len;
    char *t = jb_dump(o, &len);
    ck_assert_str_eq(
        t, "{\"status\": \"ok\", \"n\": 3, \"items\": [\"a\\\"b\\n\", [true]], \"empty\": {}}");
    ck_assert_uint_eq(len, strlen(t));
    free(t);
    /* strings become valid UTF-8: a stray byte, a truncated sequence, a
     * surrogate and an overlong form each turn into U+FFFD; good text stays */
    const char *bad = "a\xff\xe2\x82 \xed\xa0\x80 \xc0\xaf \xcf\x95\xf0\x9f\x98\x80";
    IoJson u = jb_str(&a, bad, strlen(bad));
    t = jb_dump(&u, &len);
    ck_assert_str_eq(t,
                     "\"a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
                     "\xef\xbf\xbd\xef\xbf\xbd \xcf\x95\xf0\x9f\x98\x80\"");
    free(t);
    jb_free(&a);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jup");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, hmac_rfc4231);
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, builder);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
