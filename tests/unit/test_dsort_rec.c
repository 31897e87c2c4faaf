/* SPDX-License-Identifier: MIT
 * test_dsort_rec.c: dsort's records (server/jobs/dsort_rec.c) on shards
 * written here through the real format plugins: grouping by WebDataset key
 * (also when a key's members are not adjacent), every ordering, the same
 * shuffle whatever order the shards are read in, and packing into named
 * output shards.
 */
#include "tap.h"
#include "test_arch_helpers.h"
#include "dsort_ekm.h"
#include "dsort_rec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct sl_plug *fmt_of(const char *ext)
{
    char n[32];
    snprintf(n, sizeof(n), "x%s", ext);
    return sl_arch_format_by_name(n, strlen(n));
}

/* a shard of members "name=content" in memory */
static void mk_shard(const char *ext, const char *const *m, struct sl_buf *out)
{
    struct sl_plug_memio io;
    struct sl_plug_writer *w = NULL;
    struct sl_err err = { 0 };
    sl_buf_init(out);
    sl_plug_memio_init(&io, NULL, 0, out, "test-shard");
    if (sl_plug_writer_open(fmt_of(ext), &io.io, 0, &w, &err) < 0) {
        printf("Bail out! writer: %s\n", err.msg);
        exit(1);
    }
    for (; *m; m++) {
        const char *eq = strchr(*m, '=');
        sl_plug_writer_add(w, *m, (size_t)(eq - *m), (int64_t)strlen(eq + 1), 1700000000, 0644, &err);
        sl_plug_writer_write(w, eq + 1, strlen(eq + 1), &err);
    }
    if (sl_plug_writer_finish(w, &err) < 0) {
        printf("Bail out! finish: %s\n", err.msg);
        exit(1);
    }
    sl_plug_writer_close(w);
}

static int read_into(const char *ext, const struct sl_buf *b, int shard, const struct sl_dsort_spec *s,
                     struct sl_dsort_recs *r, struct sl_err *err)
{
    struct sl_plug_memio io;
    sl_plug_memio_init(&io, b->p, b->len, NULL, "test-shard");
    return sl_dsort_read_shard(fmt_of(ext), &io.io, "ais://src/test-shard", shard, s, r, err);
}

static void keys_of(const struct sl_dsort_recs *r, const int *o, char *out, size_t cap)
{
    out[0] = 0;
    for (size_t i = 0; i < r->n; i++) {
        size_t l = strlen(out);
        snprintf(out + l, cap - l, "%s%s", i ? "," : "", r->v[o[i]].key);
    }
}

static const char *const shard0[] = { "a/1.jpg=J1", "a/1.cls=3", "a/2.jpg=J2", "a/2.cls=1", "b/3.jpg=J3",
                                      "b/3.cls=2", NULL };
static const char *const shard1[] = { "x.jpg=JX", "y.jpg=JY", "x.seg.png=PX", "y.cls=5", "x.cls=4", NULL };

static void spec(struct sl_dsort_spec *s, int alg)
{
    memset(s, 0, sizeof(*s));
    s->alg = alg;
    s->in_ext = ".tar";
    s->out_ext = ".tar";
    s->out_format = "out-{00..99}";
}

static void test_records(void)
{
    struct sl_buf b0, b1;
    mk_shard(".tar", shard0, &b0);
    mk_shard(".tgz", shard1, &b1);
    struct sl_dsort_spec s;
    spec(&s, SL_DSORT_ALPHANUMERIC);
    struct sl_dsort_recs r = { 0 };
    struct sl_err err = { 0 };
    TAP_OK(read_into(".tar", &b0, 0, &s, &r, &err) == 0, "read a tar shard: %s", err.msg);
    TAP_OK(read_into(".tgz", &b1, 1, &s, &r, &err) == 0, "and a tgz shard: %s", err.msg);
    TAP_EQ_INT((int)r.n, 5, "five records");
    TAP_EQ_STR(r.v[0].key, "a/1", "key = name up to the first dot of the basename");
    TAP_EQ_INT(r.v[0].nm, 2, "a record holds all its members");
    TAP_EQ_STR(r.v[3].key, "x", "records of the second shard");
    TAP_EQ_INT(r.v[3].nm, 3, "members of x that were not adjacent still form one record");
    TAP_OK(r.v[3].nm == 3 && !strcmp(r.v[3].m[0].name, "x.jpg") && !strcmp(r.v[3].m[1].name, "x.seg.png") &&
               !strcmp(r.v[3].m[2].name, "x.cls"),
           "in the order the shard holds them");
    TAP_OK(r.v[3].bytes == 5 && r.v[3].shard == 1 && r.v[3].seq == 0, "size, shard and position");

    int *o;
    char k[256];
    TAP_OK(sl_dsort_order(&r, &s, &o, &err) == 0, "alphanumeric");
    keys_of(&r, o, k, sizeof(k));
    TAP_EQ_STR(k, "a/1,a/2,b/3,x,y", "alphanumeric order");
    free(o);
    s.decreasing = true;
    sl_dsort_order(&r, &s, &o, &err);
    keys_of(&r, o, k, sizeof(k));
    TAP_EQ_STR(k, "y,x,b/3,a/2,a/1", "decreasing");
    free(o);
    s.decreasing = false;
    s.alg = SL_DSORT_NONE;
    sl_dsort_order(&r, &s, &o, &err);
    keys_of(&r, o, k, sizeof(k));
    TAP_EQ_STR(k, "a/1,a/2,b/3,x,y", "none: the input order");
    free(o);
    sl_dsort_recs_free(&r);

    /* content: the .cls member is the key */
    spec(&s, SL_DSORT_CONTENT);
    s.content_ext = ".cls";
    s.content_key_type = SL_DSORT_CKEY_INT;
    TAP_OK(read_into(".tar", &b0, 0, &s, &r, &err) == 0 && read_into(".tgz", &b1, 1, &s, &r, &err) == 0,
           "content: read: %s", err.msg);
    sl_dsort_order(&r, &s, &o, &err);
    keys_of(&r, o, k, sizeof(k));
    TAP_EQ_STR(k, "a/2,b/3,a/1,x,y", "content int order (1,2,3,4,5)");
    free(o);
    sl_dsort_recs_free(&r);
    s.content_key_type = SL_DSORT_CKEY_STRING;
    read_into(".tar", &b0, 0, &s, &r, &err);
    sl_dsort_order(&r, &s, &o, &err);
    keys_of(&r, o, k, sizeof(k));
    TAP_EQ_STR(k, "a/2,b/3,a/1", "content string order");
    free(o);
    sl_dsort_recs_free(&r);

    static const char *const nocls[] = { "p.jpg=1", "p.cls=7", "q.jpg=2", NULL };
    static const char *const badcls[] = { "p.jpg=1", "p.cls=seven", NULL };
    struct sl_buf b2, b3;
    mk_shard(".tar", nocls, &b2);
    mk_shard(".tar", badcls, &b3);
    s.content_key_type = SL_DSORT_CKEY_INT;
    TAP_OK(read_into(".tar", &b2, 0, &s, &r, &err) < 0 && strstr(err.msg, "record q") && strstr(err.msg, ".cls"),
           "a record without the key member is named: %s", err.msg);
    sl_dsort_recs_free(&r);
    memset(&err, 0, sizeof(err));
    TAP_OK(read_into(".tar", &b3, 0, &s, &r, &err) < 0 && strstr(err.msg, "seven"),
           "a key that is not an integer is named: %s", err.msg);
    sl_dsort_recs_free(&r);
    sl_buf_free(&b2);
    sl_buf_free(&b3);
    sl_buf_free(&b0);
    sl_buf_free(&b1);
}

static void test_lua(void)
{
    struct sl_buf b0, b1;
    mk_shard(".tar", shard0, &b0);
    static const char *const adjacent[] = { "x.jpg=JX", "x.cls=4", "y.jpg=JY", "y.cls=5", NULL };
    mk_shard(".tar", adjacent, &b1);
    struct sl_dsort_spec s;
    spec(&s, SL_DSORT_LUA);
    s.script = "function sort_key(r)\n"
               "  assert(r.shard:find('test%-shard'))\n"
               "  return -tonumber(r:read('.cls')) + #r.members * 0\n"
               "end\n";
    struct sl_dsort_recs r = { 0 };
    struct sl_err err = { 0 };
    TAP_OK(read_into(".tar", &b0, 0, &s, &r, &err) == 0 && read_into(".tar", &b1, 1, &s, &r, &err) == 0,
           "lua: records keyed by sort_key: %s", err.msg);
    int *o;
    char k[256];
    TAP_OK(sl_dsort_order(&r, &s, &o, &err) == 0, "lua order: %s", err.msg);
    keys_of(&r, o, k, sizeof(k));
    TAP_EQ_STR(k, "y,x,a/1,b/3,a/2", "sort_key = -cls: 5,4,3,2,1");
    free(o);
    sl_dsort_recs_free(&r);

    s.script = "function sort_key(r)\n  return r.key .. nil\nend\n";
    memset(&err, 0, sizeof(err));
    TAP_OK(read_into(".tar", &b0, 0, &s, &r, &err) < 0 && strstr(err.msg, "record a/1") && strstr(err.msg, "line 2:"),
           "a failing sort_key names the record and the line: %s", err.msg);
    sl_dsort_recs_free(&r);
    s.script = "function sort_key(r)\n  return {}\nend\n";
    memset(&err, 0, sizeof(err));
    TAP_OK(read_into(".tar", &b0, 0, &s, &r, &err) < 0 && strstr(err.msg, "string or a number"),
           "sort_key must return a string or a number: %s", err.msg);
    sl_dsort_recs_free(&r);
    s.script = "function sort_key(r)\n  if r.key == 'x' then return 'a' end\n  return 1\nend\n";
    memset(&err, 0, sizeof(err));
    TAP_OK(read_into(".tar", &b1, 0, &s, &r, &err) == 0 && sl_dsort_order(&r, &s, &o, &err) < 0 &&
               strstr(err.msg, "one type"), "mixed key types are refused: %s", err.msg);
    sl_dsort_recs_free(&r);
    struct sl_buf b2;
    mk_shard(".tar", shard1, &b2); /* x's members are not adjacent */
    s.script = "function sort_key(r) return r.key end";
    memset(&err, 0, sizeof(err));
    TAP_OK(read_into(".tar", &b2, 0, &s, &r, &err) < 0 && strstr(err.msg, "not adjacent"),
           "lua needs adjacent members: %s", err.msg);
    sl_dsort_recs_free(&r);
    sl_buf_free(&b0);
    sl_buf_free(&b1);
    sl_buf_free(&b2);
}

static void test_ekm(void)
{
    struct sl_dsort_ekm e;
    struct sl_err err = { 0 };
    json_t *warn = json_array();
    const char *js = "{\"cats-%d\": [\"^cat\", \"kitten\"], \"dogs-{0..9}\": [\"^dog\"]}";
    TAP_OK(sl_dsort_ekm_parse(js, strlen(js), "ais://b/ekm.json", "\t", SL_DSORT_ABORT, warn, &e, &err) == 0 &&
               e.n == 3, "JSON EKM: %s", err.msg);
    const char *t;
    TAP_OK(sl_dsort_ekm_match(&e, "cat/1", &t, &err) == 0 && t && !strcmp(t, "cats-%d"), "a key to its family");
    TAP_OK(sl_dsort_ekm_match(&e, "bird/1", &t, &err) == 0 && !t, "no rule: no family");
    sl_dsort_ekm_free(&e);
    const char *both = "^a\tx-%d\n^ab\ty-%d\n";
    sl_dsort_ekm_parse(both, strlen(both), "ekm.txt", "\t", SL_DSORT_ABORT, warn, &e, &err);
    TAP_OK(sl_dsort_ekm_match(&e, "abc", &t, &err) < 0 && strstr(err.msg, "two EKM rules"),
           "two rules for one key: %s", err.msg);
    sl_dsort_ekm_free(&e);
    const char *bad = "^a\tx-%d\nno separator here\n";
    memset(&err, 0, sizeof(err));
    TAP_OK(sl_dsort_ekm_parse(bad, strlen(bad), "ekm.txt", "\t", SL_DSORT_ABORT, warn, &e, &err) < 0 &&
               strstr(err.msg, "line 2"), "a malformed line aborts, named: %s", err.msg);
    TAP_OK(sl_dsort_ekm_parse(bad, strlen(bad), "ekm.txt", "\t", SL_DSORT_WARN, warn, &e, &err) == 0 && e.n == 1 &&
               json_array_size(warn) == 1, "or is skipped with a warning");
    sl_dsort_ekm_free(&e);
    const char *badre = "{\"x-%d\": [\"(\"]}";
    memset(&err, 0, sizeof(err));
    TAP_OK(sl_dsort_ekm_parse(badre, strlen(badre), "e.json", "\t", SL_DSORT_ABORT, warn, &e, &err) < 0 &&
               strstr(err.msg, "not a valid regular expression"), "a bad regex: %s", err.msg);
    json_decref(warn);

    /* families pack on their own, each with its template */
    struct sl_buf b0;
    mk_shard(".tar", shard0, &b0);
    struct sl_dsort_spec s;
    spec(&s, SL_DSORT_ALPHANUMERIC);
    s.shard_size = 1;
    struct sl_dsort_recs r = { 0 };
    read_into(".tar", &b0, 0, &s, &r, &err);
    for (size_t i = 0; i < r.n; i++)
        r.v[i].family = sl_xstrdup(r.v[i].key[0] == 'a' ? "fa-%d" : "fb-%d");
    int *o;
    struct sl_dsort_out *out;
    size_t n;
    sl_dsort_order(&r, &s, &o, &err);
    TAP_OK(sl_dsort_pack(&r, o, &s, &out, &n, &err) == 0 && n == 3, "EKM families: %s", err.msg);
    TAP_OK(n == 3 && !strcmp(out[0].name, "fa-0.tar") && !strcmp(out[1].name, "fa-1.tar") &&
               !strcmp(out[2].name, "fb-0.tar"), "each family named from its own template");
    sl_dsort_outs_free(out, n);
    free(o);
    sl_dsort_recs_free(&r);
    sl_buf_free(&b0);
}

/* n shards of m single-member records each, read in the order given */
static void many(struct sl_dsort_recs *r, const struct sl_dsort_spec *s, const int *read_order, int n, int m)
{
    struct sl_err err = { 0 };
    for (int i = 0; i < n; i++) {
        int sh = read_order[i];
        const char *names[64];
        char bufs[64][160];
        for (int j = 0; j < m; j++) {
            snprintf(bufs[j], sizeof(bufs[j]), "s%02d-r%02d.bin=%0*d", sh, j, 100 + sh, 0);
            names[j] = bufs[j];
        }
        names[m] = NULL;
        struct sl_buf b;
        mk_shard(".tar", names, &b);
        read_into(".tar", &b, sh, s, r, &err);
        sl_buf_free(&b);
    }
}

static void test_shuffle_and_pack(void)
{
    struct sl_dsort_spec s;
    spec(&s, SL_DSORT_SHUFFLE);
    s.seed = 42;
    int fwd[] = { 0, 1, 2, 3 }, rev[] = { 3, 1, 0, 2 };
    struct sl_dsort_recs r1 = { 0 }, r2 = { 0 }, r3 = { 0 };
    many(&r1, &s, fwd, 4, 10);
    many(&r2, &s, rev, 4, 10);
    int *o1, *o2, *o3;
    struct sl_err err = { 0 };
    char k1[2048], k2[2048], k3[2048];
    sl_dsort_order(&r1, &s, &o1, &err);
    sl_dsort_order(&r2, &s, &o2, &err);
    keys_of(&r1, o1, k1, sizeof(k1));
    keys_of(&r2, o2, k2, sizeof(k2));
    TAP_OK(!strcmp(k1, k2), "the same seed gives the same order whatever order the shards were read in");
    s.seed = 43;
    many(&r3, &s, fwd, 4, 10);
    sl_dsort_order(&r3, &s, &o3, &err);
    keys_of(&r3, o3, k3, sizeof(k3));
    TAP_OK(strcmp(k1, k3) != 0, "another seed, another order");
    TAP_OK(strncmp(k1, "s00-r00,s00-r01,s00-r02", 23) != 0, "a shuffle is not the input order");

    /* pack: 40 records of one 100..103-byte member; counted as written in a
     * tar (a 512-byte header and the data padded to 512: 1024 each, and the
     * 1024 bytes that end a tar), as ishard counts */
    struct sl_dsort_out *out;
    size_t n;
    s.shard_size = 11 * 1024;
    TAP_OK(sl_dsort_pack(&r1, o1, &s, &out, &n, &err) == 0, "pack: %s", err.msg);
    TAP_EQ_INT((int)n, 4, "11 KiB shards of ~100-byte records (1 KiB each in a tar): 4 shards of 10");
    TAP_EQ_INT((int)out[0].bytes, 11 * 1024, "a shard's bytes are what the tar will hold");
    TAP_EQ_STR(out[0].name, "out-00.tar", "named from the template, with the output extension");
    size_t total = 0;
    bool full = true;
    for (size_t i = 0; i < n; i++) {
        total += out[i].count;
        if (i + 1 < n && out[i].bytes < s.shard_size)
            full = false;
    }
    TAP_OK(total == 40 && full, "every record once; every shard but the last reaches the size");
    sl_dsort_outs_free(out, n);
    s.shard_size = 1000;    /* smaller than one record as written: one record a shard */
    TAP_OK(sl_dsort_pack(&r1, o1, &s, &out, &n, &err) == 0 && n == 40 && out[0].count == 1,
           "a shard size below one record's: a record a shard (%zu shards)", n);
    sl_dsort_outs_free(out, n);
    s.shard_size = 0;
    s.out_format = "even-{0..3}";
    TAP_OK(sl_dsort_pack(&r1, o1, &s, &out, &n, &err) == 0 && n == 4 &&
               out[0].count + out[1].count + out[2].count + out[3].count == 40 && out[3].count >= 8,
           "no shard size: spread evenly over the template's names");
    sl_dsort_outs_free(out, n);
    s.shard_size = 300;
    s.out_format = "few-{0..2}";
    TAP_OK(sl_dsort_pack(&r1, o1, &s, &out, &n, &err) < 0 && strstr(err.msg, "yields 3 names"),
           "a template with too few names: %s", err.msg);
    free(o1);
    free(o2);
    free(o3);
    sl_dsort_recs_free(&r1);
    sl_dsort_recs_free(&r2);
    sl_dsort_recs_free(&r3);
}

int main(void)
{
    tp_arch_load();
    test_records();
    test_shuffle_and_pack();
    test_lua();
    test_ekm();
    sl_arch_fini();
    return tap_done();
}
