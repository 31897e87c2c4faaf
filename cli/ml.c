/* SPDX-License-Identifier: MIT
 * ml.c: `shale ml get-batch`, as `ais ml get-batch` (docs/get-batch.md):
 * many objects, shard members and ranges as one archive in request order.
 */
#include "cli.h"
#include "jsonx.h"
#include "template.h"

#include <stdlib.h>
#include <string.h>

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

int cmd_ml(int argc, char **argv)
{
    if (argc < 1)
        return cli_usage("ml");
    if (strcmp(argv[0], "get-batch")) {
        fprintf(stderr, "Error: unknown command \"ml %s\" (get-batch)\n", argv[0]);
        return 1;
    }
    struct opts o;
    /* -y (do not ask) is taken for ais's sake: this command never asks */
    if (cli_opts(&o, "ml get-batch", argc - 1, argv + 1) < 0)
        return 1;
    return get_batch(&o);
}
