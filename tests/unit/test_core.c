/* SPDX-License-Identifier: MIT
 * test_core.c: unit tests for util, checksums, HRW, config, JSON helpers and
 * list-page merging.
 */
#include "tap.h"
#include "sl.h"
#include "b64.h"
#include "rxguard.h"
#include "chunked.h"
#include "cksum.h"
#include "conf.h"
#include "diskstats.h"
#include "jsonx.h"
#include "lso.h"
#include "meta.h"
#include "template.h"

#include <pthread.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <stdlib.h>
#include <string.h>

static void t_sizes(void)
{
    uint64_t v;
    TAP_OK(sl_parse_size("10MiB", &v) == 0 && v == 10 * SL_MIB, "parse 10MiB");
    TAP_OK(sl_parse_size("1.5GiB", &v) == 0 && v == 1610612736ULL, "parse 1.5GiB");
    TAP_OK(sl_parse_size("10KB", &v) == 0 && v == 10000, "parse 10KB (SI)");
    TAP_OK(sl_parse_size("4096", &v) == 0 && v == 4096, "parse plain");
    TAP_OK(sl_parse_size("512 MiB", &v) == 0 && v == 512 * SL_MIB, "parse with space");
    TAP_OK(sl_parse_size("1.2e85", &v) < 0, "a size past 2^64 is refused (found by fuzz/dsort_spec)");
    TAP_OK(sl_parse_size("20000000TiB", &v) < 0, "a size past 2^64 with a unit is refused");
    TAP_OK(sl_parse_size("nan", &v) < 0 && sl_parse_size("inf", &v) < 0, "NaN and infinity are not sizes");
    TAP_OK(sl_parse_size("abc", &v) < 0, "reject abc");
    TAP_OK(sl_parse_size("-1", &v) < 0, "reject negative");
    TAP_OK(sl_parse_size("5XB", &v) < 0, "reject unknown unit");
    char b[32];
    sl_format_size(561, b, sizeof(b));
    TAP_EQ_STR(b, "561B", "format 561B");
    sl_format_size(16 * 1024, b, sizeof(b));
    TAP_EQ_STR(b, "16.00KiB", "format 16KiB");
    sl_format_size(1005034406, b, sizeof(b));
    TAP_EQ_STR(b, "958.48MiB", "format MiB");
    sl_format_size_sp(66060288, b, sizeof(b));
    TAP_EQ_STR(b, "63.00 MiB", "format with space");
    sl_format_count(28230, b, sizeof(b));
    TAP_EQ_STR(b, "28,230", "count separators");
    sl_format_count(1234567, b, sizeof(b));
    TAP_EQ_STR(b, "1,234,567", "count separators 2");
    sl_format_count(12, b, sizeof(b));
    TAP_EQ_STR(b, "12", "count small");
}

static void t_durations(void)
{
    int64_t ns;
    TAP_OK(sl_parse_duration("45s", &ns) == 0 && ns == 45000000000LL, "45s");
    TAP_OK(sl_parse_duration("1m30s", &ns) == 0 && ns == 90000000000LL, "1m30s");
    TAP_OK(sl_parse_duration("500ms", &ns) == 0 && ns == 500000000LL, "500ms (m must not eat ms)");
    TAP_OK(sl_parse_duration("2h", &ns) == 0 && ns == 7200000000000LL, "2h");
    TAP_OK(sl_parse_duration("10", &ns) == 0 && ns == 10000000000LL, "bare seconds");
    TAP_OK(sl_parse_duration("10x", &ns) < 0, "reject unit");
    TAP_OK(sl_parse_duration("", &ns) < 0, "reject empty");
    char b[32];
    sl_format_duration(45000000000LL, b, sizeof(b));
    TAP_EQ_STR(b, "45s", "fmt 45s");
    sl_format_duration(300000000000LL, b, sizeof(b));
    TAP_EQ_STR(b, "5m0s", "fmt 5m0s");
    sl_format_duration(7500000000000LL, b, sizeof(b));
    TAP_EQ_STR(b, "2h5m0s", "fmt 2h5m0s");
    sl_format_duration(1500000000LL, b, sizeof(b));
    TAP_EQ_STR(b, "1.5s", "fmt 1.5s");
    sl_format_duration(250000000LL, b, sizeof(b));
    TAP_EQ_STR(b, "250ms", "fmt 250ms");
}

static void t_strings(void)
{
    char out[64];
    size_t n = sl_url_decode("a%20b+c%2Fd", 11, out, false);
    TAP_OK(n == 7 && !strcmp(out, "a b+c/d"), "url decode path");
    n = sl_url_decode("a%20b+c", 7, out, true);
    TAP_EQ_STR(out, "a b c", "url decode query");
    n = sl_url_decode("x%00y", 5, out, false);
    TAP_OK(n == 3 && out[1] == 0, "url decode keeps NUL visible");
    n = sl_url_decode("bad%zz%4", 8, out, false);
    TAP_EQ_STR(out, "bad%zz%4", "malformed escapes kept");
    char *e = sl_url_encode_path("a b/ü?", strlen("a b/ü?"));
    TAP_EQ_STR(e, "a%20b/%C3%BC%3F", "url encode path");
    free(e);
    TAP_OK(sl_utf8_valid("héllo 日本", strlen("héllo 日本")), "utf8 valid");
    TAP_OK(!sl_utf8_valid("\xff", 1), "utf8 invalid byte");
    TAP_OK(!sl_utf8_valid("\xc3", 1), "utf8 truncated");
    TAP_OK(!sl_utf8_valid("\xc0\xaf", 2), "utf8 overlong");
    TAP_OK(!sl_utf8_valid("\xed\xa0\x80", 3), "utf8 surrogate");
    TAP_OK(sl_utf8_cut("a\xc3\xa9" "b", 4, 2) == 1, "utf8 cut backs off a split character");
    TAP_OK(sl_utf8_cut("a\xc3\xa9" "b", 4, 3) == 3, "utf8 cut keeps a whole character");
    TAP_OK(sl_utf8_cut("ab", 2, 200) == 2, "utf8 cut of a short string");
    char scr[] = "x\xe6\x97\xa5 \xe6\x97 \xff\xe6";
    sl_utf8_scrub(scr);
    TAP_OK(!strcmp(scr, "x\xe6\x97\xa5 ?? ??"), "utf8 scrub replaces only the broken bytes");
    char t[80];
    /* 2024-03-05 07:08:09.123456789 UTC */
    int64_t ns = 1709622489123456789LL;
    sl_format_gotime(ns, "02 Jan 06 15:04 MST", t, sizeof(t));
    TAP_EQ_STR(t, "05 Mar 24 07:08 UTC", "go RFC822");
    sl_format_gotime(ns, "2006-01-02T15:04:05Z07:00", t, sizeof(t));
    TAP_EQ_STR(t, "2024-03-05T07:08:09Z", "go RFC3339");
    sl_format_gotime(ns, "2006-01-02T15:04:05.000Z07:00", t, sizeof(t));
    TAP_EQ_STR(t, "2024-03-05T07:08:09.123Z", "go millis");
    sl_format_gotime(ns, "Mon, 02 Jan 2006 15:04:05 GMT", t, sizeof(t));
    TAP_EQ_STR(t, "Tue, 05 Mar 2024 07:08:09 GMT", "go RFC1123");
    char b36[16];
    sl_base36(1295, b36, sizeof(b36));
    TAP_EQ_STR(b36, "zz", "base36");
    char id[16];
    sl_rand_id(id, 10);
    TAP_OK(strlen(id) == 10 && !(id[0] >= '0' && id[0] <= '9'), "random id");
}

static void t_cksum(void)
{
    char out[SL_CKSUM_HEX_MAX];
    const char *s = "123456789";
    sl_cksum_buf(SL_CK_CRC32C, s, 9, out);
    TAP_EQ_STR(out, "e3069283", "crc32c check value");
    sl_cksum_buf(SL_CK_MD5, "abc", 3, out);
    TAP_EQ_STR(out, "900150983cd24fb0d6963f7d28e17f72", "md5 abc");
    sl_cksum_buf(SL_CK_SHA256, "abc", 3, out);
    TAP_EQ_STR(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "sha256 abc");
    sl_cksum_buf(SL_CK_XXHASH2, "", 0, out);
    TAP_EQ_STR(out, "ef46db3751d8e999", "xxh64 empty");
    sl_cksum_buf(SL_CK_NONE, "abc", 3, out);
    TAP_EQ_STR(out, "", "none");
    /* streaming in odd pieces equals one-shot */
    char big[10007];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (char)(i * 7);
    for (int t = SL_CK_XXHASH; t < SL_CK_MAX; t++) {
        char a[SL_CKSUM_HEX_MAX], b[SL_CKSUM_HEX_MAX];
        sl_cksum_buf(t, big, sizeof(big), a);
        struct sl_cksum c;
        sl_cksum_init(&c, t);
        for (size_t off = 0; off < sizeof(big);) {
            size_t n = (off % 13) + 1;
            if (off + n > sizeof(big))
                n = sizeof(big) - off;
            sl_cksum_update(&c, big + off, n);
            off += n;
        }
        sl_cksum_final(&c, b);
        TAP_EQ_STR(b, a, "streaming %s", sl_cksum_name(t));
    }
    TAP_EQ_INT(sl_cksum_parse("XXHASH2"), SL_CK_XXHASH2, "parse case-insensitive");
    TAP_EQ_INT(sl_cksum_parse("xxhash3"), -1, "no xxhash3");
}

static char *hex32(const unsigned char d[32], char out[65])
{
    sl_hex(d, 32, out);
    return out;
}

/* sl_sha256 and sl_hmac_sha256 keep a context per thread: the same answers
 * as the one-shot functions, call after call, key after key, on any thread */
static void *hash_thread(void *arg)
{
    unsigned char d[32], h[32];
    char x[65];
    int bad = 0;
    for (int i = 0; i < 200; i++) {
        sl_sha256("abc", 3, d);
        bad += strcmp(hex32(d, x), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") != 0;
        sl_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, h);
        bad += strcmp(hex32(h, x), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843") != 0;
    }
    *(int *)arg = bad;
    return NULL;
}

static void t_sha256(void)
{
    unsigned char d[32];
    char x[65];
    sl_sha256("", 0, d);
    TAP_EQ_STR(hex32(d, x), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "sha256 empty");
    sl_sha256("abc", 3, d);
    TAP_EQ_STR(hex32(d, x), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "sha256 abc");
    sl_sha256("abc", 3, d); /* the kept context again */
    TAP_EQ_STR(hex32(d, x), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "sha256 abc again");
    /* RFC 4231 test cases 2 and 1: a new key on the same context each call */
    sl_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d);
    TAP_EQ_STR(hex32(d, x), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", "hmac rfc4231 2");
    unsigned char k1[20];
    memset(k1, 0x0b, sizeof(k1));
    sl_hmac_sha256(k1, sizeof(k1), "Hi There", 8, d);
    TAP_EQ_STR(hex32(d, x), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", "hmac rfc4231 1");
    sl_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d);
    TAP_EQ_STR(hex32(d, x), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", "hmac back to key 2");
    pthread_t th[4];
    int bad[4] = { 0 };
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, hash_thread, &bad[i]);
    int sum = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        sum += bad[i];
    }
    TAP_EQ_INT(sum, 0, "4 threads x 200 hashes and HMACs, all right");
}

static void t_hrw(void)
{
    TAP_OK(sl_hrw_mix(0) == 1905207664160064169ULL, "mix(0)");
    TAP_OK(sl_hrw_mix(1) == 14233695028433725123ULL, "mix(1)");
    TAP_OK(sl_hrw_mix(0xdeadbeef) == 13720712097220112565ULL, "mix(deadbeef)");
    TAP_OK(sl_id_digest("tAAAAAAA1") == 14306125295403117766ULL, "id digest");
    struct sl_smap *s = sl_smap_new();
    const char *ids[] = { "tAAAAAAA1", "tBBBBBBB2", "tCCCCCCC3" };
    for (int i = 0; i < 3; i++) {
        struct sl_snode n;
        memset(&n, 0, sizeof(n));
        snprintf(n.id, sizeof(n.id), "%s", ids[i]);
        n.type = SL_NODE_TARGET;
        snprintf(n.pub_host, sizeof(n.pub_host), "127.0.0.1");
        n.pub_port = 9000 + i;
        sl_snode_set_urls(&n);
        sl_smap_add(s, &n);
    }
    const char *un[] = { "ais/@#/b/o1", "ais/@#/imagenet/train/0001.jpg", "ais/@#/b/x" };
    const char *own[] = { "tBBBBBBB2", "tBBBBBBB2", "tCCCCCCC3" };
    for (int i = 0; i < 3; i++) {
        const struct sl_snode *t = sl_smap_hrw_target(s, un[i], strlen(un[i]));
        TAP_EQ_STR(t ? t->id : NULL, own[i], "hrw owner of %s (matches the Python reference)", un[i]);
    }
    /* maintenance excludes a target */
    s->nodes[1].flags |= SL_SNF_MAINT;
    const struct sl_snode *t = sl_smap_hrw_target(s, un[0], strlen(un[0]));
    TAP_OK(t && strcmp(t->id, "tBBBBBBB2") != 0, "maintenance target skipped");
    /* JSON round trip */
    json_t *j = sl_smap_json(s);
    char *txt = sl_json_dump(j, 0, NULL);
    TAP_OK(strstr(txt, "\"id_digest\":14306125295403117766") != NULL, "id_digest printed as a bare uint64");
    free(txt);
    txt = sl_json_dump(j, SL_JD_U64STR, NULL);
    json_error_t je;
    json_t *j2 = json_loads(txt, 0, &je);
    struct sl_err err;
    struct sl_smap *s2 = sl_smap_from_json(j2, &err);
    TAP_OK(s2 && s2->nnodes == 3 && sl_smap_find(s2, "tCCCCCCC3")->digest == sl_id_digest("tCCCCCCC3"),
           "smap json round trip");
    free(txt);
    json_decref(j);
    json_decref(j2);
    sl_smap_put(s2);
    sl_smap_put(s);
    /* u64-safe parse */
    const char *big = "{\"a\":18446744073709551615,\"b\":[1,9223372036854775808],\"c\":\"99999999999999999999\"}";
    json_t *bj = sl_json_loadb_u64(big, strlen(big), &je);
    TAP_OK(bj && json_is_string(json_object_get(bj, "a")) &&
               !strcmp(json_string_value(json_object_get(bj, "a")), "18446744073709551615") &&
               json_is_integer(json_array_get(json_object_get(bj, "b"), 0)) &&
               json_is_string(json_array_get(json_object_get(bj, "b"), 1)),
           "big integers become strings");
    json_decref(bj);
}

static void t_config(void)
{
    struct sl_err err = { 0 };
    const char *ov[] = { "confdir=/tmp/x", "fspaths=/a,/b", "checksum.type=md5", "host_net.port=9090" };
    struct sl_config *c = sl_config_load(NULL, NULL, ov, 4, &err);
    TAP_OK(c != NULL, "load with overrides: %s", c ? "" : err.msg);
    if (!c)
        return;
    TAP_EQ_INT(c->port, 9090, "port");
    TAP_EQ_INT(c->cksum_type, SL_CK_MD5, "checksum type");
    TAP_EQ_INT(c->nfspaths, 2, "two fspaths");
    TAP_EQ_INT(c->log_level, 3, "default log level");
    TAP_OK(c->cplane_timeout_ns == 2000000000LL, "default timeout");
    const char *bad[] = { "checksum.tpye=md5" };
    struct sl_config *b = sl_config_load(NULL, NULL, bad, 1, &err);
    TAP_OK(!b && strstr(err.msg, "\"checksum.tpye\"") && strstr(err.msg, "type"), "unknown key named: %s", err.msg);
    const char *bad4[] = { "bogus.key=1" };
    b = sl_config_load(NULL, NULL, bad4, 1, &err);
    TAP_OK(!b && strstr(err.msg, "section \"bogus\" does not exist") && strstr(err.msg, "checksum") &&
           strstr(err.msg, "host_net") && !strstr(err.msg, "confdir"), "unknown section named, sections listed: %s",
           err.msg);
    const char *bad5[] = { "net.bogus.x=1" };
    b = sl_config_load(NULL, NULL, bad5, 1, &err);
    TAP_OK(!b && strstr(err.msg, "section \"net.bogus\" does not exist") && strstr(err.msg, "in \"net\": http"),
           "unknown sub-section: %s", err.msg);
    const char *bad2[] = { "checksum.type=crc99" };
    b = sl_config_load(NULL, NULL, bad2, 1, &err);
    TAP_OK(!b && strstr(err.msg, "crc99"), "bad enum value");
    const char *bad3[] = { "timeout.cplane_operation=soon" };
    b = sl_config_load(NULL, NULL, bad3, 1, &err);
    TAP_OK(!b && strstr(err.msg, "duration"), "bad duration");
    json_t *upd = json_pack("{s:{s:s}}", "checksum", "type", "sha256");
    struct sl_config *c2 = sl_config_update(c, upd, NULL, &err);
    TAP_OK(c2 && c2->cksum_type == SL_CK_SHA256 && c2->config_version == c->config_version + 1, "update bumps version");
    json_decref(upd);
    upd = json_pack("{s:{s:i}}", "host_net", "port", 1);
    TAP_OK(!sl_config_update(c, upd, NULL, &err) && strstr(err.msg, "per-node"), "local key refused cluster-wide");
    json_decref(upd);
    json_t *restart = json_array();
    upd = json_pack("{s:s,s:s}", "log.level", "4", "net.http.workers", "7");
    struct sl_config *c3 = sl_config_update(c, upd, restart, &err);
    TAP_OK(c3 && c3->log_level == 4, "flat dotted key in update");
    TAP_OK(json_array_size(restart) == 1 && !strcmp(json_string_value(json_array_get(restart, 0)), "net.http.workers"),
           "a key read at start is reported as needing a restart (and log.level is not)");
    json_decref(restart);
    json_decref(upd);
    /* a key nothing reads: a change is refused, setting the value it has is not */
    upd = json_pack("{s:s}", "space.cleanupwm", "50");
    TAP_OK(!sl_config_update(c, upd, NULL, &err) && strstr(err.msg, "no effect"), "no-op key change refused: %s",
           err.msg);
    json_decref(upd);
    /* the watermarks keep their order */
    upd = json_pack("{s:s}", "space.highwm", "50");
    TAP_OK(!sl_config_update(c, upd, NULL, &err) && strstr(err.msg, "lowwm <= highwm"), "watermarks out of order: %s",
           err.msg);
    json_decref(upd);
    upd = json_pack("{s:s}", "space.cleanupwm", "65");
    struct sl_config *c4 = sl_config_update(c, upd, NULL, &err);
    TAP_OK(c4 != NULL, "no-op key set to its current value is taken");
    sl_config_free(c4);
    json_decref(upd);
    json_t *cj = sl_config_cluster_json(c);
    TAP_OK(!json_object_get(cj, "fspaths") && json_object_get(cj, "checksum"), "cluster part excludes local keys");
    json_decref(cj);
    sl_config_free(c3);
    sl_config_free(c2);
    sl_config_free(c);
}

static void add_ent(struct sl_lspage *p, const char *name)
{
    struct sl_lsent *e = sl_lspage_add(p);
    e->name = sl_xstrdup(name);
    e->nlen = strlen(name);
}

/* in[0] and in[1]: target pages of the NULL-terminated names a and b; out: empty */
static void merge_pages(struct sl_lspage in[2], struct sl_lspage *out, const char *const *a, const char *const *b)
{
    sl_lspage_init(&in[0]);
    sl_lspage_init(&in[1]);
    sl_lspage_init(out);
    for (; *a; a++)
        add_ent(&in[0], *a);
    for (; *b; b++)
        add_ent(&in[1], *b);
}

static void merge_free(struct sl_lspage in[2], struct sl_lspage *out)
{
    sl_lspage_free(out);
    sl_lspage_free(&in[0]);
    sl_lspage_free(&in[1]);
}

static void t_merge(void)
{
    /* target A has more beyond its page; B's later names must not be skipped */
    struct sl_lspage in[2], out;
    merge_pages(in, &out, (const char *[]){ "a1", "a2", NULL }, (const char *[]){ "b1", "dir/", NULL });
    in[0].token = sl_xstrdup("a2");
    sl_lspage_merge(in, 2, 10, &out);
    TAP_EQ_INT(out.n, 2, "merge stops at the smallest full page's last name");
    TAP_EQ_STR(out.token, "a2", "token = last merged name");
    merge_free(in, &out);
    /* duplicates (virtual dirs) collapse, page cut at pagesize */
    merge_pages(in, &out, (const char *[]){ "d/", "x", NULL }, (const char *[]){ "d/", "y", "z", NULL });
    sl_lspage_merge(in, 2, 3, &out);
    TAP_EQ_INT(out.n, 3, "pagesize respected");
    TAP_OK(out.n == 3 && !strcmp(out.ents[0].name, "d/") && !strcmp(out.ents[1].name, "x") &&
               !strcmp(out.ents[2].name, "y"),
           "dup collapsed, sorted");
    TAP_EQ_STR(out.token, "y", "more remains");
    merge_free(in, &out);
    /* shard members (flag 128): after their shard, before the next object
     * even when its name sorts lower ("s.tar.bak" < "s.tar/..."); a page
     * that ends inside the shard has a token naming the member */
    merge_pages(in, &out, (const char *[]){ "s.tar", "s.tar/z", "s.tar/a", "s.tar/m", NULL },
                (const char *[]){ "a", "s.tar.bak", NULL });
    in[0].ents[0].flags = 512;
    for (int i = 0; i < 3; i++) {
        in[0].ents[i + 1].flags = 64 | 128;
        in[0].ents[i + 1].alen = 5;
        in[0].ents[i + 1].aord = (uint64_t)i + 1;
    }
    sl_lspage_merge(in, 2, 4, &out);
    TAP_OK(out.n == 4 && !strcmp(out.ents[0].name, "a") && !strcmp(out.ents[1].name, "s.tar") &&
               !strcmp(out.ents[2].name, "s.tar/z") && !strcmp(out.ents[3].name, "s.tar/a"),
           "members follow their shard, in the target's order, and count toward the page");
    TAP_EQ_STR(out.token, "s.tar/./2/a", "a token inside the shard");
    merge_free(in, &out);
}

static void t_template(void)
{
    struct sl_tmpl *t;
    struct sl_err err;
    struct sl_buf b;
    sl_buf_init(&b);
    TAP_OK(sl_tmpl_parse("shard-{0000..0099..2}.tar", &t, &err) == 0, "parse range with step");
    TAP_EQ_INT(sl_tmpl_count(t), 50, "count with step");
    sl_tmpl_at(t, 0, &b);
    TAP_EQ_STR(b.p, "shard-0000.tar", "first, zero padded");
    sl_tmpl_at(t, 49, &b);
    TAP_EQ_STR(b.p, "shard-0098.tar", "last");
    TAP_EQ_INT(sl_tmpl_at(t, 50, &b), -1, "past the end");
    sl_tmpl_free(t);
    TAP_OK(sl_tmpl_parse("prefix-{0010..0013..2}-gap-{1..2}-suffix", &t, &err) == 0, "two groups");
    TAP_EQ_INT(sl_tmpl_count(t), 4, "2 x 2");
    sl_tmpl_at(t, 1, &b);
    TAP_EQ_STR(b.p, "prefix-0010-gap-2-suffix", "last group varies fastest");
    sl_tmpl_at(t, 3, &b);
    TAP_EQ_STR(b.p, "prefix-0012-gap-2-suffix", "last combination");
    sl_tmpl_free(t);
    TAP_OK(sl_tmpl_parse("pre-@00100", &t, &err) == 0 && sl_tmpl_count(t) == 101, "at-style");
    sl_tmpl_at(t, 7, &b);
    TAP_EQ_STR(b.p, "pre-00007", "at-style padding");
    sl_tmpl_free(t);
    TAP_OK(sl_tmpl_parse("shard-%06d", &t, &err) == 0 && sl_tmpl_count(t) == UINT64_MAX, "printf counter");
    sl_tmpl_at(t, 42, &b);
    TAP_EQ_STR(b.p, "shard-000042", "printf padding");
    sl_tmpl_free(t);
    TAP_OK(sl_tmpl_parse("x{a,bb,c}y", &t, &err) == 0 && sl_tmpl_count(t) == 3, "list");
    sl_tmpl_at(t, 1, &b);
    TAP_EQ_STR(b.p, "xbby", "list item");
    sl_tmpl_free(t);
    TAP_OK(sl_tmpl_parse("train/", &t, &err) == 0 && !sl_tmpl_is_range(t) && !strcmp(sl_tmpl_prefix(t), "train/"),
           "no range = prefix");
    sl_tmpl_free(t);
    TAP_OK(sl_tmpl_parse("*", &t, &err) == 0 && !strcmp(sl_tmpl_prefix(t), ""), "* = everything");
    sl_tmpl_free(t);
    TAP_OK(sl_tmpl_parse("a{5..1}", &t, &err) < 0, "reversed range refused");
    TAP_OK(sl_tmpl_parse("a{1..2", &t, &err) < 0, "unclosed brace refused");
    TAP_OK(sl_tmpl_parse("{0..9999}{0..9999}", &t, &err) < 0 && strstr(err.msg, "more than"), "expansion cap");
    sl_buf_free(&b);
}

/* ---- chunked framing ---- */

struct ck_seen {
    struct sl_buf data, exts, trailers;
    int chunks, ends, stop_at; /* stop_at: the chunk header whose callback says stop (0: none) */
};

static int ck_data(void *arg, const char *p, size_t n)
{
    sl_buf_add(&((struct ck_seen *)arg)->data, p, n);
    return 0;
}

static int ck_chunk(void *arg, uint64_t size, const char *ext, size_t el)
{
    struct ck_seen *s = arg;
    s->chunks++;
    sl_buf_printf(&s->exts, "%llu[%.*s]", (unsigned long long)size, (int)el, ext);
    return s->stop_at && s->chunks == s->stop_at;
}

static int ck_end(void *arg)
{
    ((struct ck_seen *)arg)->ends++;
    return 0;
}

static int ck_trailer(void *arg, const char *line, size_t n)
{
    sl_buf_printf(&((struct ck_seen *)arg)->trailers, "<%.*s>", (int)n, line);
    return 0;
}

/* feed in in pieces of step bytes: rc of the first failure, else 0; *used total */
static int ck_run(const char *in, size_t n, size_t step, struct ck_seen *s, struct sl_chunked *c, size_t *used,
                  const char **why)
{
    struct sl_chunked_cb cb = { s, ck_data, ck_chunk, ck_end, ck_trailer };
    sl_chunked_init(c);
    *used = 0;
    for (size_t off = 0; off < n; off += step) {
        size_t k = n - off < step ? n - off : step, u;
        if (sl_chunked_feed(c, in + off, k, &cb, &u, why) < 0) {
            *used += u;
            return -1;
        }
        *used += u;
        if (u < k)
            break;
    }
    return 0;
}

static void ck_reset(struct ck_seen *s)
{
    sl_buf_free(&s->data);
    sl_buf_free(&s->exts);
    sl_buf_free(&s->trailers);
    memset(s, 0, sizeof(*s));
}

static void t_chunked(void)
{
    static const char ok[] = "5\r\nhello\r\n1a;chunk-signature=abc\r\n0123456789abcdefghijklmnop\r\n"
                             "0;chunk-signature=fin\r\nx-amz-checksum-crc32:AAAA\r\nx-amz-trailer-signature:ts\r\n\r\n";
    struct ck_seen s;
    memset(&s, 0, sizeof(s));
    struct sl_chunked c;
    size_t used;
    const char *why;
    size_t steps[] = { 1, 2, 3, 7, 64, sizeof(ok) };
    for (size_t i = 0; i < SL_ARRAY_SIZE(steps); i++) {
        int rc = ck_run(ok, sizeof(ok) - 1, steps[i], &s, &c, &used, &why);
        TAP_OK(rc == 0 && sl_chunked_done(&c) && used == sizeof(ok) - 1, "chunked: whole, pieces of %zu", steps[i]);
        TAP_OK(s.data.len == 31 && !memcmp(s.data.p, "hello0123456789abcdefghijklmnop", 31) && s.chunks == 3 &&
                   s.ends == 2, "chunked: data and chunk ends (pieces of %zu)", steps[i]);
        TAP_EQ_STR(s.exts.p, "5[]26[chunk-signature=abc]0[chunk-signature=fin]", "chunked: sizes and extensions");
        TAP_EQ_STR(s.trailers.p, "<x-amz-checksum-crc32:AAAA><x-amz-trailer-signature:ts>", "chunked: trailers");
        ck_reset(&s);
    }
    /* what follows the framing is not consumed */
    static const char more[] = "3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1";
    TAP_OK(ck_run(more, sizeof(more) - 1, sizeof(more), &s, &c, &used, &why) == 0 && sl_chunked_done(&c) &&
               used == sizeof(more) - 1 - strlen("GET / HTTP/1.1"), "chunked: stops at the end of the framing");
    ck_reset(&s);
    /* malformed: each refused, with what */
    static const struct {
        const char *in, *why;
    } bad[] = {
        { "z\r\n", "not hexadecimal" },           { "\r\n", "not hexadecimal" },
        { "3 \r\nabc\r\n0\r\n\r\n", "not hexadecimal" }, { "3\nabc\r\n", "not hexadecimal" },
        { "3\r\nabcd\r\n", "not followed by CRLF" }, { "3\r\nabc\n0\r\n\r\n", "not followed by CRLF" },
        { "3\rxabc", "not ended by CRLF" },       { "0\r\nx:y\rz", "not ended by CRLF" },
        { "fffffffffffffffffff\r\n", "not hexadecimal" },
    };
    for (size_t i = 0; i < SL_ARRAY_SIZE(bad); i++) {
        int rc = ck_run(bad[i].in, strlen(bad[i].in), 1, &s, &c, &used, &why);
        TAP_OK(rc < 0 && why && strstr(why, bad[i].why), "chunked: %zu refused (%s)", i, why ? why : "-");
        ck_reset(&s);
    }
    /* bounds: an extension over 1 KiB, trailers over 32 KiB */
    struct sl_buf big;
    sl_buf_init(&big);
    sl_buf_adds(&big, "1;");
    for (int i = 0; i <= SL_CHUNKED_EXT_MAX; i++) /* one byte over */
        sl_buf_addc(&big, 'e');
    sl_buf_adds(&big, "\r\nx\r\n0\r\n\r\n");
    TAP_OK(ck_run(big.p, big.len, 100, &s, &c, &used, &why) < 0 && why && strstr(why, "extension"),
           "chunked: extension over 1 KiB refused");
    ck_reset(&s);
    sl_buf_reset(&big);
    sl_buf_adds(&big, "0\r\n");
    for (int i = 0; i < 40; i++) {
        for (int k = 0; k < 1000; k++)
            sl_buf_addc(&big, k ? 'v' : 'k');
        sl_buf_adds(&big, "\r\n");
    }
    struct sl_chunked_cb quiet = { 0 };
    sl_chunked_init(&c);
    TAP_OK(sl_chunked_feed(&c, big.p, big.len, &quiet, &used, &why) < 0 && why && strstr(why, "32 KiB"),
           "chunked: trailers over 32 KiB refused (counted without a callback)");
    sl_buf_free(&big);
    /* a callback that says stop */
    s.stop_at = 2;
    TAP_OK(ck_run(ok, sizeof(ok) - 1, 5, &s, &c, &used, &why) < 0 && !why && s.chunks == 2,
           "chunked: a callback stops it (no message of the decoder's)");
    ck_reset(&s);
}

static void t_b64(void)
{
    static const struct {
        const char *raw, *std, *url;
    } kv[] = { { "", "", "" },           { "f", "Zg==", "Zg" },         { "fo", "Zm8=", "Zm8" },
               { "foo", "Zm9v", "Zm9v" }, { "foob", "Zm9vYg==", "Zm9vYg" }, { "\xfb\xff", "+/8=", "-_8" } };
    char enc[64], dec[64], why[128];
    for (size_t i = 0; i < SL_ARRAY_SIZE(kv); i++) {
        size_t n = strlen(kv[i].raw);
        TAP_OK(sl_b64_encode(kv[i].raw, n, 0, enc) == strlen(kv[i].std) && !strcmp(enc, kv[i].std) &&
                   sl_b64_encoded_len(n, 0) == strlen(kv[i].std), "b64: encode \"%s\"", kv[i].std);
        TAP_OK(sl_b64_encode(kv[i].raw, n, SL_B64_URL, enc) == strlen(kv[i].url) && !strcmp(enc, kv[i].url) &&
                   sl_b64_encoded_len(n, SL_B64_URL) == strlen(kv[i].url), "b64: url encode \"%s\"", kv[i].url);
        ssize_t k = sl_b64_decode(kv[i].std, strlen(kv[i].std), 0, dec, why, sizeof(why));
        TAP_OK(k == (ssize_t)n && !memcmp(dec, kv[i].raw, n), "b64: decode \"%s\"", kv[i].std);
        k = sl_b64_decode(kv[i].url, strlen(kv[i].url), SL_B64_URL, dec, why, sizeof(why));
        TAP_OK(k == (ssize_t)n && !memcmp(dec, kv[i].raw, n), "b64: url decode \"%s\"", kv[i].url);
    }
    /* padding: required by default, optional with NOPAD, never in the URL form */
    TAP_OK(sl_b64_decode("Zg", 2, 0, dec, why, sizeof(why)) < 0 && strstr(why, "padding"), "b64: padding required");
    TAP_OK(sl_b64_decode("Zg", 2, SL_B64_NOPAD, dec, why, sizeof(why)) == 1, "b64: padding optional");
    TAP_OK(sl_b64_decode("Zg=", 3, SL_B64_NOPAD, dec, why, sizeof(why)) < 0 && strstr(why, "bad padding"),
           "b64: wrong padding refused");
    TAP_OK(sl_b64_decode("Zg==", 4, SL_B64_URL, dec, why, sizeof(why)) < 0 && strstr(why, "0x3d"),
           "b64: no '=' in the URL form");
    TAP_OK(sl_b64_decode("Zg==Zg==", 8, 0, dec, why, sizeof(why)) < 0 && strstr(why, "after '='"),
           "b64: data after padding");
    TAP_OK(sl_b64_decode("Zm9vY", 5, SL_B64_NOPAD, dec, why, sizeof(why)) < 0 && strstr(why, "length"),
           "b64: impossible length");
    TAP_OK(sl_b64_decode("Zm-v", 4, 0, dec, why, sizeof(why)) < 0 && strstr(why, "offset 2"),
           "b64: URL character in the standard form, with its offset");
    TAP_OK(sl_b64_decode("Zm9v\nYg==", 9, 0, dec, why, sizeof(why)) < 0, "b64: whitespace refused by default");
    TAP_OK(sl_b64_decode(" Zm9v\nYg== ", 11, SL_B64_SPACE, dec, why, sizeof(why)) == 4 && !memcmp(dec, "foob", 4),
           "b64: whitespace skipped with SPACE");
    /* every length round-trips, both alphabets */
    unsigned char raw[300], back[400];
    char e[500];
    bool ok = true;
    for (size_t n = 0; n < sizeof(raw); n++) {
        raw[n] = (unsigned char)(n * 37 + 11);
        for (unsigned f = 0; f <= SL_B64_URL; f += SL_B64_URL) {
            size_t el = sl_b64_encode(raw, n, f, e);
            ssize_t dl = sl_b64_decode(e, el, f, back, NULL, 0);
            ok &= dl == (ssize_t)n && !memcmp(raw, back, n) && sl_b64_decoded_max(el) >= n;
        }
    }
    TAP_OK(ok, "b64: lengths 0..299 round-trip in both alphabets");
    /* into buffers of exactly the sizes the header promises (ASan and valgrind see a byte too many) */
    ok = true;
    for (size_t n = 0; n < 12; n++)
        for (unsigned f = 0; f <= SL_B64_URL; f += SL_B64_URL) {
            size_t el = sl_b64_encoded_len(n, f);
            char *eb = malloc(el + 1);
            unsigned char *db = malloc(sl_b64_decoded_max(el) ? sl_b64_decoded_max(el) : 1);
            ok &= sl_b64_encode(raw, n, f, eb) == el && sl_b64_decode(eb, el, f, db, NULL, 0) == (ssize_t)n &&
                  !memcmp(db, raw, n);
            free(eb);
            free(db);
        }
    TAP_OK(ok, "b64: exact buffer sizes");
}

static void t_rxguard(void)
{
    struct sl_err err;
    static const char *const ok[] = { "^train/[a-z]+_[0-9]{3}\\.jpg$", "(cat|dog)s?", "[[:alpha:]]+[]x]*", "a{2}b{3}",
                                      "\\++", "(ab){1,255}", "x{,3}", "((a|b)c)*d", "" };
    for (size_t i = 0; i < SL_ARRAY_SIZE(ok); i++) {
        memset(&err, 0, sizeof(err));
        TAP_OK(sl_regex_guard(ok[i], "t", &err) == 0, "rxguard: \"%s\" passes (%s)", ok[i], err.msg);
    }
    static const struct {
        const char *pat, *why;
    } bad[] = { { "a++++++++++++++++++++", "repeats a repetition" },
                { "a*+", "repeats a repetition" },
                { "(a{0,1000}){0,1000}", "bound of 1000" },
                { "(a{0,200}){0,200}", "expands to more than" },
                { "((((a{9}){9}){9}){9}){9}", "expands to more than" },
                { "x{300}", "bound of 300" },
                { "a{,1000}", "bound of 1000" },
                { "a{,9}{,9}", "repeats a repetition" },
                { "a{99999999999999999999,}", "repetition bound" } };
    for (size_t i = 0; i < SL_ARRAY_SIZE(bad); i++) {
        memset(&err, 0, sizeof(err));
        TAP_OK(sl_regex_guard(bad[i].pat, "t", &err) < 0 && strstr(err.msg, bad[i].why) && err.code == SL_EINVAL,
               "rxguard: \"%s\" refused (%s)", bad[i].pat, err.msg);
    }
    char big[SL_REGEX_LEN_MAX + 2];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    TAP_OK(sl_regex_guard(big, "t", &err) < 0 && strstr(err.msg, "at most"), "rxguard: a pattern over 1 KiB");
    regex_t re;
    memset(&err, 0, sizeof(err));
    TAP_OK(sl_regcomp(&re, "(", REG_EXTENDED, "t", &err) < 0 && strstr(err.msg, "not a valid regular expression"),
           "rxguard: regcomp's own refusal: %s", err.msg);
    TAP_OK(sl_regcomp(&re, "^a[0-9]+$", REG_EXTENDED | REG_NOSUB, "t", &err) == 0 && regexec(&re, "a12", 0, NULL, 0) == 0,
           "rxguard: compiles what passes");
    regfree(&re);
}

/* the block device under a path: none for tmpfs (said so), the root filesystem's disk when it has one
 * (its counters then in /proc/diskstats), an error for a path that is not there */
static void t_diskstats(void)
{
    char name[32], why[160];
    struct stat st;
    if (stat("/dev/shm", &st) == 0 && major(st.st_dev) == 0) {
        int rc = sl_disk_of_path("/dev/shm", name, sizeof(name), why, sizeof(why));
        TAP_OK(rc == 0 && strstr(why, "no block device"), "diskstats: /dev/shm has no block device: %s", why);
    }
    int rc = sl_disk_of_path("/proc", name, sizeof(name), why, sizeof(why));
    TAP_OK(rc == 0 && strstr(why, "no block device"), "diskstats: /proc has none: %s", why);
    TAP_OK(sl_disk_of_path("/nonexistent/x", name, sizeof(name), why, sizeof(why)) < 0 && strstr(why, "cannot stat"),
           "diskstats: a missing path: %s", why);
    if (sl_disk_of_path("/", name, sizeof(name), why, sizeof(why)) == 1) {
        TAP_OK(name[0] && !strchr(name, '/'), "diskstats: / is on disk %s", name);
        struct sl_disk_io d[1];
        memset(d, 0, sizeof(d));
        snprintf(d[0].name, sizeof(d[0].name), "%s", name);
        TAP_OK(sl_disk_read(d, 1) == 0 && d[0].found, "diskstats: %s is in /proc/diskstats (%llu bytes written)",
               name, (unsigned long long)d[0].wr_bytes);
    }
    json_t *disk, *none;
    const char *paths[] = { "/proc", "/" };
    sl_disk_json(paths, 2, &disk, &none);
    TAP_OK(json_is_string(json_object_get(none, "/proc")), "diskstats: node_status names /proc as without a disk");
    TAP_OK(json_object_size(disk) + json_object_size(none) == 2 || json_object_get(none, "/"),
           "diskstats: / is a disk or said to have none");
    json_decref(disk);
    json_decref(none);
}

int main(void)
{
    t_diskstats();
    t_chunked();
    t_rxguard();
    t_b64();
    t_template();
    t_sizes();
    t_durations();
    t_strings();
    t_cksum();
    t_sha256();
    t_hrw();
    t_config();
    t_merge();
    return tap_done();
}
