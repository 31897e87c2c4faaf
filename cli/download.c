/* SPDX-License-Identifier: MIT
 * download.c: `shale download SRC ais://BUCKET[/DIR]`, AIStore's `ais
 * download`: one URL, a brace range of URLs, or the names of an
 * --object-list file under a base URL, fetched into a bucket by job
 * download (server/jobs/download.c; POST /v1/download); or a remote
 * bucket's objects into its cached copy (type backend, --sync).
 */
#include "cli.h"
#include "jsonx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool http_url(const char *s)
{
    return !strncasecmp(s, "http://", 7) || !strncasecmp(s, "https://", 8);
}

/* --object-list FILE: a JSON array of names, else one name a line */
static json_t *object_list(const char *path, const char *base)
{
    size_t len;
    char *text = cli_read_file(path, &len);
    if (!text)
        return NULL;
    json_t *names = json_loads(text, 0, NULL);
    if (!names) {
        names = json_array();
        for (char *save = NULL, *l = strtok_r(text, "\r\n", &save); l; l = strtok_r(NULL, "\r\n", &save))
            if (l[0])
                json_array_append_new(names, json_string(l));
    }
    free(text);
    if (!json_is_array(names) || !json_array_size(names)) {
        fprintf(stderr, "Error: --object-list %s: expected a JSON array of object names or one name a line, and "
                "at least one name\n", path);
        json_decref(names);
        return NULL;
    }
    json_t *urls = json_array();
    size_t i;
    json_t *v;
    size_t bl = strlen(base);
    json_array_foreach(names, i, v) {
        if (!json_is_string(v)) {
            fprintf(stderr, "Error: --object-list %s: element %zu is not a string (an object name)\n", path, i);
            json_decref(names);
            json_decref(urls);
            return NULL;
        }
        const char *n = json_string_value(v);
        while (*n == '/')
            n++;
        char *u = sl_xasprintf("%s%s%s", base, bl && base[bl - 1] == '/' ? "" : "/", n);
        json_array_append_new(urls, json_string(u));
        free(u);
    }
    json_decref(names);
    return urls;
}

/* shale download s3://B[/PREFIX] [s3://B] [--sync]: type backend, the
 * bucket's remote objects (under PREFIX) into its cached copy: the body, or
 * NULL after printing the error */
static json_t *backend_body(const struct opts *o)
{
    struct uri u, d;
    if (uri_parse(o->argv[0], &u, true) < 0)
        return NULL;
    if (o->argc > 1) {
        if (uri_parse(o->argv[1], &d, true) < 0) {
            uri_free(&u);
            return NULL;
        }
        bool same = !strcmp(d.provider, u.provider) && !strcmp(d.bucket, u.bucket) && (!d.obj || !d.obj[0]);
        uri_free(&d);
        if (!same) {
            fprintf(stderr, "Error: DESTINATION \"%s\": a bucket's download (type backend) goes into that bucket's "
                    "own cached copy: name %s://%s or leave it out (into another bucket: `shale bucket cp`)\n",
                    o->argv[1], u.provider, u.bucket);
            uri_free(&u);
            return NULL;
        }
    }
    json_t *body = json_pack("{s:s,s:{s:s,s:s},s:s,s:b}", "type", "backend", "bucket", "name", u.bucket, "provider",
                             u.provider, "prefix", u.obj ? u.obj : "", "synchronize", opt_bool(o, "sync"));
    uri_free(&u);
    return body;
}

int cmd_download(int argc, char **argv)
{
    struct opts o;
    if (cli_opts_min(&o, "download", argc, argv, 1))
        return 1;
    const char *src = o.argv[0];
    bool bucket_src = false;
    static const char *const bschemes[] = { "ais://", "s3://", "gs://", "az://", "oc://" };
    for (size_t i = 0; i < SL_ARRAY_SIZE(bschemes); i++)
        bucket_src |= !strncmp(src, bschemes[i], strlen(bschemes[i]));
    json_t *body = NULL;
    if (bucket_src) {
        if (opt_str(&o, "object-list")) {
            fprintf(stderr, "Error: --object-list takes a base URL (http:// or https://), not a bucket\n");
            return 1;
        }
        if (!(body = backend_body(&o)))
            return 1;
    } else {
        if (o.argc < 2)
            return cli_usage("download");
        if (opt_bool(&o, "sync")) {
            fprintf(stderr, "Error: --sync: only a bucket's download (SOURCE s3://BUCKET[/PREFIX]) synchronizes\n");
            return 1;
        }
        if (!http_url(src)) {
            fprintf(stderr, "Error: SOURCE \"%s\": only http:// and https:// URLs (or a remote bucket, "
                    "s3://BUCKET[/PREFIX]) can be downloaded (e.g. https://host/shard-{000..099}.tar)\n", src);
            return 1;
        }
        struct uri u;
        if (uri_parse(o.argv[1], &u, true) < 0)
            return 1;
        if (strcmp(u.provider, "ais")) {
            fprintf(stderr, "Error: DESTINATION \"%s\": download writes into an ais:// bucket\n", o.argv[1]);
            uri_free(&u);
            return 1;
        }
        body = json_pack("{s:{s:s,s:s},s:s}", "bucket", "name", u.bucket, "provider", "ais", "subdir", u.obj);
        uri_free(&u);
    }
    const char *ts = opt_str(&o, "timeout");
    if (ts) {
        int64_t ns;
        if (sl_parse_duration(ts, &ns) < 0 || ns <= 0) {
            fprintf(stderr, "Error: --timeout: invalid duration \"%s\" (the time allowed for each object, e.g. "
                    "30s, 5m)\n", ts);
            json_decref(body);
            return 1;
        }
        json_object_set_new(body, "timeout", json_string(ts));
    }
    const char *lc = opt_str(&o, "limit-connections");
    if (lc) {
        char *end;
        long n = strtol(lc, &end, 10);
        if (!*lc || *end || n < 1 || n > 256) {
            fprintf(stderr, "Error: --limit-connections \"%s\": the transfers at a time on each target, 1 to 256\n",
                    lc);
            json_decref(body);
            return 1;
        }
        json_object_set_new(body, "limits", json_pack("{s:i}", "connections", (int)n));
    }
    if (opt_str(&o, "description"))
        json_object_set_new(body, "description", json_string(opt_str(&o, "description")));
    const char *ol = opt_str(&o, "object-list");
    if (bucket_src) {
        /* (the body has its type) */
    } else if (ol) {
        json_t *urls = object_list(ol, src);
        if (!urls) {
            json_decref(body);
            return 1;
        }
        json_object_set_new(body, "type", json_string("multi"));
        json_object_set_new(body, "objects", urls);
    } else if (strchr(src, '{')) {
        json_object_set_new(body, "type", json_string("range"));
        json_object_set_new(body, "template", json_string(src));
    } else {
        json_object_set_new(body, "type", json_string("single"));
        json_object_set_new(body, "link", json_string(src));
    }
    size_t blen;
    char *bs = sl_json_dump(body, 0, &blen);
    json_decref(body);
    struct cli_resp r;
    cli_req("POST", "/v1/download", "application/json", bs, blen, &r);
    free(bs);
    if (r.status != 200) {
        int rc = cli_fail(&r, "download");
        cli_resp_free(&r);
        return rc;
    }
    json_t *j = cli_resp_json(&r);
    cli_resp_free(&r);
    char *id = sl_xstrdup(sl_json_str(j, "id", ""));
    json_decref(j);
    int rc = 0;
    if (!opt_bool(&o, "wait") && !opt_bool(&o, "progress")) {
        cli_job_started(id);
    } else {
        printf("%s\n", id);
        fflush(stdout);
        uint64_t failed = 0;
        size_t shown = 0;
        rc = cli_job_report(id, 30LL * 24 * 3600 * 1000000000LL, opt_bool(&o, "progress"), false, "Downloaded",
                            "into the bucket", NULL, &failed, &shown);
        if (!rc && failed)
            rc = 1;
    }
    free(id);
    return rc;
}
