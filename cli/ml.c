/* SPDX-License-Identifier: MIT
 * ml.c: `shale ml get-batch`, as `ais ml get-batch` (docs/get-batch.md):
 * many objects, shard members and ranges as one archive in request order.
 */
#include "cli.h"
#include "jsonx.h"
#include "template.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *mime_of(const char *out)
{
    static const char *const ext[] = { ".tar.lz4", ".tar.gz", ".tgz", ".zip", ".tar" };
    size_t ol = strlen(out);
    for (size_t i = 0; i < SL_ARRAY_SIZE(ext); i++) {
        size_t el = strlen(ext[i]);
        if (ol >= el && !strcmp(out + ol - el, ext[i]))
            return ext[i];
    }
    return ".tar";
}

/* the archive part of a multipart/mixed answer */
static int archive_part(const struct cli_resp *r, const char **p, size_t *n)
{
    char ct[256];
    const char *b = cli_resp_header(r, "Content-Type", ct, sizeof(ct)) ? strstr(ct, "boundary=") : NULL;
    if (!b)
        return -1;
    char delim[128];
    snprintf(delim, sizeof(delim), "\r\n--%s--", b + 9);
    const char *body = r->body.p, *end = body + r->body.len;
    const char *a = memmem(body, r->body.len, "name=\"archive\"", 14);
    const char *s = a ? memmem(a, (size_t)(end - a), "\r\n\r\n", 4) : NULL;
    const char *e = s ? memmem(s, (size_t)(end - s), delim, strlen(delim)) : NULL;
    if (!e)
        return -1;
    *p = s + 4;
    *n = (size_t)(e - (s + 4));
    return 0;
}

static int add_name(void *arg, const json_t *e)
{
    json_array_append_new(arg, json_pack("{s:s}", "objname", sl_json_str(e, "name", "")));
    return 0;
}

/* every object name under prefix in bucket, in listing order, into in */
static int add_prefix(json_t *in, const char *bucket, const char *prefix)
{
    char *pq = sl_xasprintf("/v1/buckets/%s", bucket);
    json_t *msg = json_pack("{s:s,s:s}", "props", "name", "prefix", prefix);
    int rc = cli_list_each(pq, msg, add_name, in);
    json_decref(msg);
    free(pq);
    return rc;
}

/* the length of the shard's name when name is "SHARD.EXT/MEMBER" (EXT one of
 * the archive formats), else 0 */
static size_t shard_len(const char *name)
{
    static const char *const ext[] = { ".tar/", ".tgz/", ".tar.gz/", ".zip/", ".tar.lz4/" };
    size_t best = 0;
    for (size_t i = 0; i < SL_ARRAY_SIZE(ext); i++) {
        const char *p = strstr(name, ext[i]);
        if (p && p[strlen(ext[i])] && (!best || (size_t)(p - name) + strlen(ext[i]) - 1 < best))
            best = (size_t)(p - name) + strlen(ext[i]) - 1;
    }
    return best;
}

static int get_batch(struct opts *o)
{
    if (o->argc < 2)
        return cli_usage("ml get-batch");
    const char *out = o->argv[o->argc - 1];
    json_t *req = NULL;
    const char *spec = opt_str(o, "spec");
    if (spec) {
        if (!(req = cli_read_spec(spec, "get-batch request ({\"in\": [...]})")))
            return 1;
    } else {
        req = json_object();
    }
    json_t *in = json_object_get(req, "in");
    if (!in) {
        in = json_array();
        json_object_set_new(req, "in", in);
    }
    char *bucket = NULL;
    for (int i = 0; i < o->argc - 1; i++) {
        struct uri u;
        if (uri_parse(o->argv[i], &u, true) < 0) {
            json_decref(req);
            free(bucket);
            return 2;
        }
        if (!bucket)
            bucket = sl_xstrdup(u.bucket);
        if (u.obj && *u.obj) {
            /* ais://B/shard.tar/member.jpg: a shard's member (AIStore's CLI splits at the shard) */
            size_t sl = shard_len(u.obj);
            json_t *e = json_pack("{s:s,s:s%}", "bucket", u.bucket, "objname", u.obj, sl ? sl : strlen(u.obj));
            if (sl)
                json_object_set_new(e, "archpath", json_string(u.obj + sl + 1));
            json_array_append_new(in, e);
        }
        uri_free(&u);
    }
    const char *list = opt_str(o, "list"), *tmpl = opt_str(o, "template");
    if (list) {
        char *l = sl_xstrdup(list), *save = NULL;
        for (char *t = strtok_r(l, ",", &save); t; t = strtok_r(NULL, ",", &save))
            if (*t)
                json_array_append_new(in, json_pack("{s:s}", "objname", t));
        free(l);
    }
    if (tmpl) {
        struct sl_tmpl *t;
        struct sl_err err = { 0 };
        if (sl_tmpl_parse(tmpl, &t, &err) < 0) {
            fprintf(stderr, "Error: --template: %s\n", err.msg);
            json_decref(req);
            free(bucket);
            return 2;
        }
        struct sl_buf nb;
        sl_buf_init(&nb);
        for (uint64_t i = 0; i < sl_tmpl_count(t); i++)
            if (sl_tmpl_at(t, i, &nb) == 0)
                json_array_append_new(in, json_pack("{s:s}", "objname", nb.p));
        sl_buf_free(&nb);
        sl_tmpl_free(t);
    }
    const char *prefix = opt_str(o, "prefix");
    if (prefix && (!bucket || add_prefix(in, bucket, prefix) != 0)) {
        if (!bucket)
            fprintf(stderr, "Error: --prefix needs a bucket (ais://BUCKET)\n");
        json_decref(req);
        free(bucket);
        return 1;
    }
    if (!json_array_size(in)) {
        fprintf(stderr, "Error: get-batch: nothing to get: name objects (ais://B/OBJ, --list, --template, "
                "--prefix or --spec)\n");
        json_decref(req);
        free(bucket);
        return 2;
    }
    if (!json_object_get(req, "mime"))
        json_object_set_new(req, "mime", json_string(mime_of(out)));
    if (opt_bool(o, "streaming"))
        json_object_set_new(req, "strm", json_true());
    if (opt_bool(o, "cont-on-err"))
        json_object_set_new(req, "coer", json_true());
    if (opt_bool(o, "omit-src-bck"))
        json_object_set_new(req, "onob", json_true());
    size_t blen;
    char *body = sl_json_dump(req, 0, &blen);
    json_decref(req);
    char *path = bucket ? sl_xasprintf("/v1/ml/moss/%s", bucket) : sl_xstrdup("/v1/ml/moss");
    free(bucket);
    struct cli_resp r;
    int rc = cli_req("GET", path, "application/json", body, blen, &r);
    free(path);
    free(body);
    if (rc < 0 || r.status != 200) {
        /* the server's words name the request's field: here it is a flag */
        char *at = strstr(r.errmsg, "set \"coer\": true");
        if (at) {
            char *rest = sl_xstrdup(at + strlen("set \"coer\": true"));
            snprintf(at, sizeof(r.errmsg) - (size_t)(at - r.errmsg), "add --cont-on-err%s", rest);
            free(rest);
        }
        rc = cli_fail(&r, "get-batch");
        cli_resp_free(&r);
        return rc;
    }
    const char *p = r.body.p;
    size_t n = r.body.len;
    char ct[256] = "";
    cli_resp_header(&r, "Content-Type", ct, sizeof(ct));
    if (!strncmp(ct, "multipart/", 10) && archive_part(&r, &p, &n) < 0) {
        fprintf(stderr, "Error: get-batch: the answer has no archive part\n");
        cli_resp_free(&r);
        return 1;
    }
    FILE *f = strcmp(out, "-") ? fopen(out, "wb") : stdout;
    if (!f || fwrite(p, 1, n, f) != n || (f != stdout && fclose(f) != 0)) {
        fprintf(stderr, "Error: writing %s failed\n", out);
        cli_resp_free(&r);
        return 1;
    }
    if (f != stdout && !opt_bool(o, "nv"))
        printf("Wrote %s (%zu bytes)\n", out, n);
    cli_resp_free(&r);
    return 0;
}

/* ---- epoch plans (docs/get-batch.md §6): PUT/GET/DELETE /v1/ml/plan[/NAME] ---- */

/* a plan name as the server takes it (1-64 of A-Z a-z 0-9 . _ -); else 2 after saying so */
static int plan_name_ok(const char *name)
{
    size_t n = strlen(name);
    bool ok = n >= 1 && n <= 64;
    for (size_t i = 0; ok && i < n; i++)
        ok = (name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= 'a' && name[i] <= 'z') ||
             (name[i] >= '0' && name[i] <= '9') || name[i] == '.' || name[i] == '_' || name[i] == '-';
    if (ok)
        return 0;
    fprintf(stderr, "Error: plan name \"%s\": use 1-64 of A-Z a-z 0-9 . _ - (e.g. train-v1)\n", name);
    return 2;
}

/* a non-negative integer flag: *v (dflt when absent); -1 after naming the flag */
static int nonneg_flag(const struct opts *o, const char *name, long long min, long long dflt, long long *v)
{
    const char *s = opt_str(o, name);
    *v = dflt;
    if (!s)
        return 0;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (!*s || *end || errno || x < min) {
        fprintf(stderr, "Error: --%s expects an integer >= %lld, got \"%s\"\n", name, min, s);
        return -1;
    }
    *v = x;
    return 0;
}

static void plan_row(struct table *t, const json_t *p)
{
    char seed[32], bs[32], samples[32], batches[32], created[32] = "-";
    snprintf(seed, sizeof(seed), "%lld", (long long)sl_json_int(p, "seed", 0));
    snprintf(bs, sizeof(bs), "%lld", (long long)sl_json_int(p, "batch_size", 0));
    snprintf(samples, sizeof(samples), "%lld", (long long)sl_json_int(p, "samples", 0));
    snprintf(batches, sizeof(batches), "%lld", (long long)sl_json_int(p, "batches", 0));
    time_t c = (time_t)sl_json_int(p, "created", 0);
    struct tm tm;
    if (c > 0 && gmtime_r(&c, &tm))
        strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", &tm);
    const char *tmpl = sl_json_str(p, "template", NULL);
    char *shards = tmpl ? sl_xasprintf("%s", tmpl) : sl_xasprintf("%s*.tar", sl_json_str(p, "prefix", ""));
    char *bck = sl_xasprintf("ais://%s", sl_json_str(p, "bck", ""));
    table_row(t, sl_json_str(p, "name", ""), bck, shards, bs, samples, batches, seed,
              json_is_true(json_object_get(p, "drop_last")) ? "yes" : "no", created);
    free(shards);
    free(bck);
}

static struct table *plan_table(void)
{
    return table_new(9, "NAME", "BUCKET", "SHARDS", "BATCH SIZE", "SAMPLES", "BATCHES", "SEED", "DROP LAST",
                     "CREATED");
}

static int plan_create(struct opts *o)
{
    if (o->argc < 2)
        return cli_usage("ml plan create");
    const char *name = o->argv[0];
    if (plan_name_ok(name))
        return 2;
    struct uri u;
    if (uri_parse(o->argv[1], &u, true) < 0)
        return 2;
    if (u.obj && *u.obj) {
        fprintf(stderr, "Error: %s: name the bucket only (ais://BUCKET) and the shards with --template or "
                "--prefix\n", o->argv[1]);
        uri_free(&u);
        return 2;
    }
    const char *tmpl = opt_str(o, "template"), *prefix = opt_str(o, "prefix");
    long long bs, seed, block;
    int bad = 0;
    if (!!tmpl == !!prefix) {
        fprintf(stderr, "Error: ml plan create: name the shards with exactly one of --template 'shard-{0..9}.tar' "
                "or --prefix P\n");
        bad = 1;
    } else if (!opt_str(o, "batch-size")) {
        fprintf(stderr, "Error: ml plan create: --batch-size N is required (samples per batch)\n");
        bad = 1;
    } else if (nonneg_flag(o, "batch-size", 1, 0, &bs) < 0 || nonneg_flag(o, "seed", 0, -1, &seed) < 0 ||
               nonneg_flag(o, "shuffle-block", 1, -1, &block) < 0) {
        bad = 1;
    }
    if (bad) {
        uri_free(&u);
        return 2;
    }
    json_t *req = json_pack("{s:s,s:s,s:I}", "name", name, "bck", u.bucket, "batch_size", (json_int_t)bs);
    uri_free(&u);
    json_object_set_new(req, tmpl ? "template" : "prefix", json_string(tmpl ? tmpl : prefix));
    if (seed >= 0)
        json_object_set_new(req, "seed", json_integer(seed));
    if (block >= 0)
        json_object_set_new(req, "shuffle_block", json_integer(block));
    if (opt_bool(o, "drop-last"))
        json_object_set_new(req, "drop_last", json_true());
    size_t blen;
    char *body = sl_json_dump(req, 0, &blen);
    json_decref(req);
    struct cli_resp r;
    int rc = cli_req("PUT", "/v1/ml/plan", "application/json", body, blen, &r);
    free(body);
    if (rc < 0 || r.status != 200) {
        char what[128];
        snprintf(what, sizeof(what), "ml plan create %s", name);
        rc = cli_fail(&r, what);
        cli_resp_free(&r);
        return rc;
    }
    json_t *p = cli_resp_json(&r);
    cli_resp_free(&r);
    if (cli_json) {
        cli_print_json(p);
    } else {
        printf("Created plan %s: %lld shards, %lld samples, %lld batches of %lld (seed %lld)\n", name,
               (long long)sl_json_int(p, "shards", 0), (long long)sl_json_int(p, "samples", 0),
               (long long)sl_json_int(p, "batches", 0), (long long)sl_json_int(p, "batch_size", 0),
               (long long)sl_json_int(p, "seed", 0));
    }
    json_decref(p);
    return 0;
}

static int plan_ls(struct opts *o)
{
    (void)o;
    json_t *j;
    if (cli_get_json("/v1/ml/plan", "ml plan ls", &j))
        return 1;
    if (cli_json) {
        cli_print_json(j);
        json_decref(j);
        return 0;
    }
    struct table *t = plan_table();
    size_t i;
    json_t *p;
    json_array_foreach(j, i, p)
        plan_row(t, p);
    table_print(t, stdout, !cli_no_headers);
    table_free(t);
    if (!json_array_size(j) && !cli_no_headers)
        printf("No epoch plans (`shale ml plan create --help` makes one)\n");
    json_decref(j);
    return 0;
}

static char *plan_path(const char *name, const char *rest)
{
    char *e = curl_easy_escape(NULL, name, 0);
    char *p = sl_xasprintf("/v1/ml/plan/%s%s", e, rest);
    curl_free(e);
    return p;
}

static int plan_show(struct opts *o)
{
    if (o->argc < 1)
        return cli_usage("ml plan show");
    if (plan_name_ok(o->argv[0]))
        return 2;
    char *pq = plan_path(o->argv[0], "");
    char what[128];
    snprintf(what, sizeof(what), "ml plan show %s", o->argv[0]);
    json_t *p;
    int rc = cli_get_json(pq, what, &p);
    free(pq);
    if (rc)
        return rc;
    if (cli_json) {
        cli_print_json(p);
    } else {
        struct table *t = table_new(2, "PROPERTY", "VALUE");
        static const char *const keys[] = { "name", "bck", "template", "prefix", "batch_size", "drop_last",
                                            "seed", "shuffle_block", "shards", "samples", "batches", "created" };
        for (size_t i = 0; i < SL_ARRAY_SIZE(keys); i++) {
            json_t *v = json_object_get(p, keys[i]);
            if (!v)
                continue;
            char *txt = cli_json_path_text(p, keys[i]);
            if (json_is_array(v)) {
                free(txt);
                txt = sl_xasprintf("%zu", json_array_size(v));
            }
            table_row(t, keys[i], txt);
            free(txt);
        }
        table_print(t, stdout, !cli_no_headers);
        table_free(t);
    }
    json_decref(p);
    return 0;
}

static int plan_rm(struct opts *o)
{
    if (o->argc < 1)
        return cli_usage("ml plan rm");
    int rc = 0;
    for (int i = 0; i < o->argc; i++) {
        if (plan_name_ok(o->argv[i])) {
            rc = 2;
            continue;
        }
        char *pq = plan_path(o->argv[i], "");
        struct cli_resp r;
        int x = cli_req("DELETE", pq, NULL, NULL, 0, &r);
        free(pq);
        if (x < 0 || r.status != 200) {
            if (r.status == 404 && opt_bool(o, "ignore-error")) {
                cli_resp_free(&r);
                continue;
            }
            char what[128];
            snprintf(what, sizeof(what), "ml plan rm %s", o->argv[i]);
            rc = cli_fail(&r, what);
        } else {
            printf("Removed plan %s\n", o->argv[i]);
        }
        cli_resp_free(&r);
    }
    return rc;
}

static int plan_batch(struct opts *o)
{
    if (o->argc < 2)
        return cli_usage("ml plan batch");
    const char *name = o->argv[0], *out = o->argv[1];
    if (plan_name_ok(name))
        return 2;
    long long epoch, index;
    if (!opt_str(o, "epoch") || !opt_str(o, "index")) {
        fprintf(stderr, "Error: ml plan batch: --epoch E and --index I are both required (batch I of epoch E; "
                "`shale ml plan show %s` gives the count)\n", name);
        return 2;
    }
    if (nonneg_flag(o, "epoch", 0, 0, &epoch) < 0 || nonneg_flag(o, "index", 0, 0, &index) < 0)
        return 2;
    char rest[96];
    snprintf(rest, sizeof(rest), "/batch?epoch=%lld&index=%lld", epoch, index);
    char *pq = plan_path(name, rest);
    struct cli_resp r;
    int rc = cli_req("GET", pq, NULL, NULL, 0, &r);
    free(pq);
    if (rc < 0 || r.status != 200) {
        char what[160];
        snprintf(what, sizeof(what), "ml plan batch %s (epoch %lld, index %lld)", name, epoch, index);
        rc = cli_fail(&r, what);
        cli_resp_free(&r);
        return rc;
    }
    FILE *f = strcmp(out, "-") ? fopen(out, "wb") : stdout;
    if (!f || fwrite(r.body.p, 1, r.body.len, f) != r.body.len || (f != stdout && fclose(f) != 0)) {
        fprintf(stderr, "Error: writing %s failed: %s (check the directory exists and is writable)\n", out,
                strerror(errno));
        cli_resp_free(&r);
        return 1;
    }
    if (f != stdout)
        printf("Wrote %s (batch %lld of epoch %lld, %zu bytes)\n", out, index, epoch, r.body.len);
    cli_resp_free(&r);
    return 0;
}

static int cmd_ml_plan(int argc, char **argv)
{
    static const struct cli_verb verbs[] = {
        { "create", plan_create, NULL }, { "ls", plan_ls, NULL }, { "show", plan_show, NULL },
        { "rm", plan_rm, NULL }, { "batch", plan_batch, NULL },
    };
    return cli_run_verb("ml plan", verbs, SL_ARRAY_SIZE(verbs), argc, argv, false);
}

int cmd_ml(int argc, char **argv)
{
    if (argc < 1)
        return cli_usage("ml");
    if (!strcmp(argv[0], "plan"))
        return cmd_ml_plan(argc - 1, argv + 1);
    if (strcmp(argv[0], "get-batch")) {
        fprintf(stderr, "Error: unknown command \"ml %s\" (get-batch, plan)\n", argv[0]);
        return 1;
    }
    struct opts o;
    /* -y (do not ask) is taken for ais's sake: this command never asks */
    if (cli_opts(&o, "ml get-batch", argc - 1, argv + 1) < 0)
        return 1;
    return get_batch(&o);
}
