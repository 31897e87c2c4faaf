/* SPDX-License-Identifier: MIT
 * test_shard_plan.c: the shard planner (server/jobs/shard_plan.c) and the
 * ishard request (ishard_msg.c), run on listings made here: samples by the
 * WebDataset key, no sample split across shards, members adjacent, packing
 * by size and by count, seeded shuffles, the extension policy, shard names
 * from templates, and the request's field checks.
 */
#include "tap.h"
#include "test_arch_helpers.h"
#include "jsonx.h"
#include "shard_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct obj {
    const char *name;
    uint64_t size;
};

/* Parse msg, "list" objs, run every planning step as the coordinator does.
 * Returns the step's rc; *p is the caller's to sl_plan_free (and m). */
static int plan_run(const char *msg, const struct obj *objs, int n, struct sl_ishard_msg *m, struct sl_plan *p)
{
    memset(p, 0, sizeof(*p));
    p->warnings = json_array();
    json_error_t je;
    json_t *v = json_loads(msg, 0, &je);
    if (!v) {
        fprintf(stderr, "# bad test JSON: %s\n", je.text);
        exit(2);
    }
    memset(m, 0, sizeof(*m));
    int rc = sl_ishard_msg_parse(v, m, &p->err);
    json_decref(v);
    if (rc < 0)
        return rc;
    p->m = m;
    snprintf(p->src.name, sizeof(p->src.name), "%s", m->src);
    snprintf(p->dst.name, sizeof(p->dst.name), "%s", m->dst);
    p->o = calloc((size_t)n + 1, sizeof(*p->o));
    p->capo = n + 1;
    for (int i = 0; i < n; i++) {
        p->o[i].name = strdup(objs[i].name);
        p->o[i].nlen = strlen(objs[i].name);
        p->o[i].size = objs[i].size;
    }
    p->no = n;
    if ((rc = sl_plan_samples(p)) < 0 || (rc = sl_plan_policy(p)) < 0 || (rc = sl_plan_ekm(p)) < 0)
        return rc;
    sl_plan_pack(p);
    return sl_plan_names(p);
}

static void plan_done(struct sl_ishard_msg *m, struct sl_plan *p)
{
    sl_plan_free(p);
    sl_ishard_msg_free(m);
}

/* plan_run that must succeed: a TAP line "what: the planner's error" */
static void plan_ok(const char *what, const char *msg, const struct obj *objs, int n, struct sl_ishard_msg *m,
                    struct sl_plan *p)
{
    int rc = plan_run(msg, objs, n, m, p);
    TAP_OK(rc == 0, "%s: %s", what, p->err.msg);
}

/* plan_run that must fail with an error holding part: a TAP line "what: the error" */
static void plan_refused(const char *what, const char *msg, const struct obj *objs, int n, const char *part)
{
    struct sl_ishard_msg m;
    struct sl_plan p;
    int rc = plan_run(msg, objs, n, &m, &p);
    TAP_OK(rc < 0 && strstr(p.err.msg, part), "%s: %s", what, p.err.msg);
    plan_done(&m, &p);
}

/* the sample key (up to the first dot of the basename) of a member name */
static size_t key_len(const char *s)
{
    const char *b = strrchr(s, '/');
    b = b ? b + 1 : s;
    const char *d = strchr(b, '.');
    return d ? (size_t)(d - s) : strlen(s);
}

/* Every shard's members: samples whole, members of a sample adjacent, no
 * key in two shards. Returns the number of members seen. */
static int check_shards(const struct sl_plan *p, const char *what)
{
    char seen[256][64];
    int nseen = 0, members = 0;
    bool ok = true;
    for (int i = 0; i < p->nsh; i++) {
        struct sl_buf enc;
        sl_buf_init(&enc);
        sl_plan_shard_encode(p, &p->sh[i], &enc);
        char last[64] = "";
        const char *q = enc.p ? enc.p : "", *end = q + enc.len;
        while (q < end) {
            struct sl_plan_member pm;
            if (sl_plan_member_next(&q, end, &pm) < 0) {
                ok = false;
                break;
            }
            char obj[256];
            snprintf(obj, sizeof(obj), "%.*s", (int)pm.olen, pm.obj);
            size_t kl = key_len(obj);
            char k[64];
            snprintf(k, sizeof(k), "%.*s", (int)kl, obj);
            members++;
            if (!strcmp(k, last))
                continue;
            for (int s = 0; s < nseen; s++)
                if (!strcmp(seen[s], k))
                    ok = false; /* the key came back: split or not adjacent */
            if (nseen < 256)
                snprintf(seen[nseen++], sizeof(seen[0]), "%s", k);
            snprintf(last, sizeof(last), "%s", k);
        }
        sl_buf_free(&enc);
    }
    TAP_OK(ok, "%s: every sample whole and its members adjacent", what);
    return members;
}

static void test_samples_and_sizes(void)
{
    struct obj o[] = {
        { "a/1.jpg", 1000 }, { "a/1.cls", 10 }, { "a/2.jpg", 1000 }, { "a/2.cls", 10 },
        { "b/3.jpg", 1000 }, { "b/3.cls", 10 }, { "b/4.jpg", 1000 }, { "b/4.cls", 10 },
        { "b/5.jpg", 1000 }, { "b/5.cls", 10 }, { "noext", 5 },       { ".hidden.jpg", 5 },
    };
    struct sl_ishard_msg m;
    struct sl_plan p;
    plan_ok("plan by size",
            "{\"src_bck\":\"ais://raw\",\"dst_bck\":\"ais://sh\",\"shard_size\":\"6KiB\","
            "\"shard_template\":\"shard-{000..099}\"}",
            o, 12, &m, &p);
    TAP_EQ_INT(p.ns, 5, "samples: one per key");
    TAP_EQ_INT((int)p.skipped_noext, 2, "no extension / leading dot skipped");
    TAP_OK(json_array_size(p.warnings) >= 2, "and warned about");
    TAP_EQ_INT(check_shards(&p, "by size"), 10, "all ten members of the five samples are in shards");
    TAP_EQ_INT(p.nsh, 2, "6 KiB shards of 2.5 KiB samples (in tar): closed once full (3 samples), then the rest");
    TAP_EQ_STR(p.sh[0].name, "shard-000.tar", "first name from the template, with the extension");
    bool under = true;
    for (int i = 0; i < p.nsh; i++)
        if (p.sh[i].bytes > 6144 + 2560)
            under = false;
    TAP_OK(under, "a shard overfills by at most its last sample");
    plan_done(&m, &p);

    plan_ok("plan by count", "{\"src_bck\":\"raw\",\"dst_bck\":\"sh\",\"shard_size\":2,\"shard_template\":\"s-%02d\"}",
            o, 12, &m, &p);
    TAP_EQ_INT(p.nsh, 3, "5 samples, 2 per shard -> 3 shards");
    TAP_EQ_INT(p.sh[2].count, 1, "the last shard holds the rest");
    TAP_EQ_STR(p.sh[2].name, "s-02.tar", "printf template");
    check_shards(&p, "by count");
    plan_done(&m, &p);

    plan_refused("a template too small for the shards",
                 "{\"src_bck\":\"raw\",\"dst_bck\":\"sh\",\"shard_size\":1,\"shard_template\":\"s-{0..2}\"}", o, 12,
                 "yields 3 names");
}

static void order_of(const char *msg, const struct obj *o, int n, char *out, size_t cap)
{
    struct sl_ishard_msg m;
    struct sl_plan p;
    out[0] = 0;
    if (plan_run(msg, o, n, &m, &p) == 0) {
        for (int i = 0; i < p.norder; i++) {
            size_t l = strlen(out);
            snprintf(out + l, cap - l, "%s,", p.s[p.order[i]].key);
        }
    }
    plan_done(&m, &p);
}

static void test_order(void)
{
    struct obj o[40];
    char names[40][24];
    for (int i = 0; i < 40; i++) {
        snprintf(names[i], sizeof(names[i]), "k%02d.bin", i);
        o[i].name = names[i];
        o[i].size = 100;
    }
    char a[1024], b[1024], c[1024], inc[1024], dec[1024];
    order_of("{\"src_bck\":\"raw\",\"dst_bck\":\"sh\",\"shard_size\":4,\"sort\":\"shuffle:42\"}", o, 40, a, sizeof(a));
    order_of("{\"src_bck\":\"raw\",\"dst_bck\":\"sh\",\"shard_size\":4,\"sort\":\"shuffle:42\"}", o, 40, b, sizeof(b));
    order_of("{\"src_bck\":\"raw\",\"dst_bck\":\"sh\",\"shard_size\":4,\"sort\":\"shuffle:43\"}", o, 40, c, sizeof(c));
    order_of("{\"src_bck\":\"raw\",\"dst_bck\":\"sh\",\"shard_size\":4,\"sort\":\"alpha\"}", o, 40, inc, sizeof(inc));
    order_of("{\"src_bck\":\"raw\",\"dst_bck\":\"sh\",\"shard_size\":4,\"sort\":\"alpha:dec\"}", o, 40, dec,
             sizeof(dec));
    TAP_OK(a[0] && !strcmp(a, b), "the same seed gives the same order");
    TAP_OK(strcmp(a, c) != 0, "another seed another order");
    TAP_OK(strcmp(a, inc) != 0, "a shuffle is not the sorted order");
    TAP_OK(!strncmp(inc, "k00,k01,k02,", 12), "alpha: increasing (%.12s)", inc);
    TAP_OK(!strncmp(dec, "k39,k38,k37,", 12), "alpha:dec: decreasing (%.12s)", dec);
}

static void test_policy(void)
{
    struct obj o[] = {
        { "1.jpg", 10 }, { "1.cls", 1 }, { "2.jpg", 10 }, { "3.jpg", 10 }, { "3.cls", 1 },
    };
    struct sl_ishard_msg m;
    struct sl_plan p;
    plan_ok("exclude",
            "{\"src_bck\":\"raw\",\"dst_bck\":\"sh\",\"sample_exts\":[\"jpg\",\"cls\"],"
            "\"missing_extension_action\":\"exclude\"}",
            o, 5, &m, &p);
    TAP_EQ_INT((int)p.excluded, 1, "the sample without .cls is excluded");
    TAP_EQ_INT(check_shards(&p, "exclude"), 4, "the other two samples are whole");
    plan_done(&m, &p);

    plan_refused("abort names the incomplete sample",
                 "{\"src_bck\":\"raw\",\"dst_bck\":\"sh\",\"sample_exts\":\"jpg,cls\","
                 "\"missing_extension_action\":\"abort\"}",
                 o, 5, "2");
}

static void test_shards_as_input(void)
{
    struct obj o[] = { { "s-0.tar", 10240 }, { "s-1.tar", 10240 }, { "s-2.tgz", 10240 }, { "readme.txt", 10 } };
    struct sl_ishard_msg m;
    struct sl_plan p;
    int rc = plan_run("{\"src_bck\":\"raw\",\"dst_bck\":\"sh\"}", o, 4, &m, &p);
    char all[4096] = "";
    size_t i;
    json_t *w;
    json_array_foreach(p.warnings, i, w) {
        size_t l = strlen(all);
        snprintf(all + l, sizeof(all) - l, "%s\n", json_string_value(w));
    }
    TAP_OK(rc == 0 && strstr(all, "3 of the 4 source objects are shards") && strstr(all, "dsort"),
           "a bucket of shards is named and dsort suggested: %s", all);
    plan_done(&m, &p);
}

static int parse_err(const char *msg, char *out, size_t n)
{
    json_t *v = json_loads(msg, 0, NULL);
    struct sl_ishard_msg m;
    memset(&m, 0, sizeof(m));
    struct sl_err err = { 0 };
    int rc = sl_ishard_msg_parse(v, &m, &err);
    json_decref(v);
    sl_ishard_msg_free(&m);
    snprintf(out, n, "%s", err.msg);
    return rc < 0 ? err.code : 0;
}

static void test_msg(void)
{
    char e[1024];
    TAP_EQ_INT(parse_err("{\"src_bck\":\"ais://raw/pre/fix\",\"dst_bck\":\"ais://sh\"}", e, sizeof(e)), 0,
               "ais://BUCKET/PREFIX is taken: %s", e);
    TAP_EQ_INT(parse_err("{\"src_bck\":\"s3://raw/pre/\",\"dst_bck\":\"sh\"}", e, sizeof(e)), 0,
               "an s3:// source is taken (a remote bucket): %s", e);
    TAP_EQ_INT(parse_err("{\"src_bck\":\"raw\",\"dst_bck\":\"s3://sh\"}", e, sizeof(e)), SL_EUNSUPP,
               "an s3:// destination is not (501)");
    TAP_OK(strstr(e, "only ais://") != NULL, "and says so: %s", e);
    TAP_EQ_INT(parse_err("{\"src_bck\":\"gs://raw\",\"dst_bck\":\"sh\"}", e, sizeof(e)), 0,
               "(a provider without a backend is for the job's start to refuse)");
    TAP_EQ_INT(parse_err("{\"src_bck\":\"raw\",\"dst_bck\":\"sh/x\"}", e, sizeof(e)), SL_EINVAL,
               "a destination with a prefix is refused");
    TAP_OK(strstr(e, "takes no prefix") != NULL, "and says so: %s", e);
    TAP_EQ_INT(parse_err("{\"src_bck\":\"raw\",\"dst_bck\":\"raw\"}", e, sizeof(e)), SL_EINVAL,
               "the same bucket twice is refused");
    TAP_EQ_INT(parse_err("{\"src_bck\":\"raw\",\"dst_bck\":\"sh\",\"shard_sise\":\"1MiB\"}", e, sizeof(e)),
               SL_EINVAL, "an unknown field is refused");
    TAP_OK(strstr(e, "shard_sise") != NULL, "naming it: %s", e);
    TAP_EQ_INT(parse_err("{\"src_bck\":\"raw\",\"dst_bck\":\"sh\",\"sort\":\"shuffle:x\"}", e, sizeof(e)),
               SL_EINVAL, "a non-numeric seed is refused");
    TAP_EQ_INT(parse_err("{\"src_bck\":\"raw\",\"dst_bck\":\"sh\",\"shard_template\":\"fixed\"}", e, sizeof(e)),
               SL_EINVAL, "a template without a counter is refused");
    TAP_EQ_INT(parse_err("{\"src_bck\":\"a..b\",\"dst_bck\":\"sh\"}", e, sizeof(e)), SL_EINVAL,
               "an invalid bucket name is refused: %s", e);
}

/* the encoded member list read back (sl_plan_member_next): names holding
 * the encoding's own punctuation, and malformed lists refused */
static void test_member_list(void)
{
    const char *ok = "8:a:1=;b.x=5;3:c.d4:k.jp0;";
    const char *p = ok, *end = ok + strlen(ok);
    struct sl_plan_member m;
    TAP_OK(sl_plan_member_next(&p, end, &m) == 0 && m.olen == 8 && !memcmp(m.obj, "a:1=;b.x", 8) && m.mem == m.obj &&
           m.size == 5, "a member keeping its name, punctuation in it");
    TAP_OK(sl_plan_member_next(&p, end, &m) == 0 && m.olen == 3 && !memcmp(m.obj, "c.d", 3) && m.mlen == 4 &&
           !memcmp(m.mem, "k.jp", 4) && m.size == 0 && p == end, "a renamed member, size 0, the list's end");
    static const char *const bad[] = { "9:abc=1;", "3:abc=;", "3:abc=1", "3:abc=x;", "0:=1;", "3abc=1;",
                                       "3:abc2:x", "-3:abc=1;" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        p = bad[i];
        TAP_OK(sl_plan_member_next(&p, bad[i] + strlen(bad[i]), &m) < 0, "malformed list \"%s\" refused", bad[i]);
    }
}

int main(void)
{
    tp_arch_load();
    test_samples_and_sizes();
    test_order();
    test_policy();
    test_shards_as_input();
    test_msg();
    test_member_list();
    sl_arch_fini();
    return tap_done();
}
