/* SPDX-License-Identifier: MIT
 * etl.c: shale etl init|show|view-logs|stop|start|rm|object|bucket
 * (cli.md §2.2; docs/etl.md). Transforms are Lua scripts run by the targets.
 */
#include "cli.h"
#include "jsonx.h"
#include "b64.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* base64 text -> new bytes (*n of them; NUL-terminated); bad input -> empty */
static char *b64_decode(const char *b64, size_t *n)
{
    size_t bl = strlen(b64);
    char *raw = sl_xmalloc(sl_b64_decoded_max(bl) + 1);
    ssize_t k = sl_b64_decode(b64, bl, SL_B64_NOPAD | SL_B64_SPACE, raw, NULL, 0);
    if (k < 0)
        k = 0;
    raw[k] = 0;
    *n = (size_t)k;
    return raw;
}

static int etl_init(struct opts *o)
{
    const char *spec = opt_str(o, "spec");
    json_t *msg;
    if (spec) {
        if (!(msg = cli_read_spec(spec, "ETL spec")))
            return 1;
        const char *nm = opt_str(o, "name");
        if (nm)
            json_object_set_new(msg, "name", json_string(nm));
    } else {
        const char *name = opt_str(o, "name"), *code = opt_str(o, "code");
        if (!name || !code) {
            fprintf(stderr, "Error: etl init needs --name NAME and --code FILE.lua (or --spec FILE.json)\n");
            return 1;
        }
        size_t len;
        char *src = cli_read_file(code, &len);
        if (!src)
            return 1;
        json_t *c = json_stringn(src, len);
        free(src);
        if (!c) {
            fprintf(stderr, "Error: %s is not UTF-8 text (Lua source is expected; bytecode is refused)\n", code);
            return 1;
        }
        msg = json_object();
        json_object_set_new(msg, "name", json_string(name));
        json_object_set_new(msg, "runtime", json_string("lua"));
        json_object_set_new(msg, "code", c);
    }
    static const char *fl[][2] = { { "mode", "mode" }, { "obj-timeout", "obj_timeout" },
                                   { "mem-limit", "mem_limit" }, { "max-output", "max_output" } };
    for (size_t i = 0; i < SL_ARRAY_SIZE(fl); i++) {
        const char *v = opt_str(o, fl[i][0]);
        if (v)
            json_object_set_new(msg, fl[i][1], json_string(v));
    }
    const char *seed = opt_str(o, "seed");
    if (seed) {
        char *end;
        unsigned long long v = strtoull(seed, &end, 10);
        if (!*seed || *end || seed[0] == '-' || v > INT64_MAX) {
            fprintf(stderr, "Error: --seed %s: give a whole number from 0 to %lld\n", seed, (long long)INT64_MAX);
            json_decref(msg);
            return 1;
        }
        json_object_set_new(msg, "seed", json_integer((json_int_t)v));
    }
    size_t blen;
    char *body = sl_json_dump(msg, 0, &blen);
    char *name = sl_xstrdup(sl_json_str(msg, "name", ""));
    const char *mode = sl_json_str(msg, "mode", "object");
    char *m = sl_xstrdup(mode[0] ? mode : "object");
    json_decref(msg);
    struct cli_resp r;
    cli_req("PUT", "/v1/etl", "application/json", body, blen, &r);
    free(body);
    int rc = 0;
    if (r.status != 200)
        rc = cli_fail(&r, NULL);
    else
        printf("ETL \"%s\" initialised (%s mode, Lua), job %s\n", name, m, r.body.p ? r.body.p : "");
    cli_resp_free(&r);
    free(name);
    free(m);
    return rc;
}

/* GET /v1/etl/NAME<rest> (NAME path-encoded): 0 and *out its JSON, or 1
 * after printing the error */
static int etl_get(const char *name, const char *rest, json_t **out)
{
    char *en = sl_url_encode_path(name, strlen(name));
    char *pq = sl_xasprintf("/v1/etl/%s%s", en, rest);
    free(en);
    int rc = cli_get_json(pq, NULL, out);
    free(pq);
    return rc;
}

static int etl_show_errors(struct opts *o)
{
    if (o->argc < 3)
        return cli_usage("etl show");
    char *q = sl_xasprintf("%s%s", o->argc > 3 ? "?uuid=" : "", o->argc > 3 ? o->argv[3] : "");
    json_t *j;
    int rc = etl_get(o->argv[2], q, &j);
    free(q);
    if (rc || !j)
        return rc;
    json_t *errs = json_object_get(j, "obj_errors");
    if (cli_json) {
        cli_print_json(errs);
    } else if (!json_array_size(errs)) {
        printf("No errors\n");
    } else {
        cli_print_obj_errors(errs, "obj_name");
    }
    json_decref(j);
    return 0;
}

static int etl_show(struct opts *o)
{
    if (o->argc >= 2 && !strcmp(o->argv[1], "errors"))
        return etl_show_errors(o);
    if (o->argc > 2) {
        fprintf(stderr, "Error: unexpected argument \"%s\": `shale etl show` takes one ETL name (or: etl show "
                "errors NAME [JOB_ID])\n", o->argv[2]);
        return 1;
    }
    json_t *j;
    int rc;
    if (o->argc < 2) {
        rc = cli_get_json("/v1/etl", NULL, &j);
        if (rc || !j)
            return rc;
        if (cli_json) {
            cli_print_json(j);
        } else if (!json_array_size(j)) {
            printf("No ETLs (initialise one with `shale etl init --name NAME --code FILE.lua`)\n");
        } else {
            struct table *t = table_new(9, "NAME", "MODE", "STAGE", "JOB ID", "OBJECTS", "SAMPLES", "IN", "OUT",
                                        "ERRORS");
            size_t i;
            json_t *e;
            json_array_foreach(j, i, e) {
                char oc[32], sc[32] = "-", in[32], out[32], ec[32];
                sl_format_count((uint64_t)sl_json_int(e, "obj_count", 0), oc, sizeof(oc));
                if (json_object_get(e, "sample_count")) /* (sample mode: OBJECTS are the shards) */
                    sl_format_count((uint64_t)sl_json_int(e, "sample_count", 0), sc, sizeof(sc));
                sl_format_size((uint64_t)sl_json_int(e, "in_bytes", 0), in, sizeof(in));
                sl_format_size((uint64_t)sl_json_int(e, "out_bytes", 0), out, sizeof(out));
                sl_format_count((uint64_t)sl_json_int(e, "err_count", 0), ec, sizeof(ec));
                table_row(t, sl_json_str(e, "id", ""), sl_json_str(e, "mode", ""), sl_json_str(e, "stage", ""),
                          sl_json_str(e, "xaction_id", ""), oc, sc, in, out, ec);
            }
            table_print(t, stdout, !cli_no_headers);
            table_free(t);
        }
        json_decref(j);
        return 0;
    }
    rc = etl_get(o->argv[1], "", &j);
    if (rc || !j)
        return rc;
    json_t *im = json_object_get(j, "init_msg");
    if (cli_json) {
        cli_print_json(j);
    } else {
        struct table *t = table_new(2, "PROPERTY", "VALUE");
        static const char *keys[] = { "name", "runtime", "mode", "stage", "xaction_id", "obj_timeout", "mem_limit",
                                      "max_output", "created" };
        for (size_t i = 0; i < SL_ARRAY_SIZE(keys); i++)
            table_row(t, keys[i], sl_json_str(im, keys[i], "-"));
        char ne[32];
        snprintf(ne, sizeof(ne), "%zu", json_array_size(json_object_get(j, "obj_errors")));
        table_row(t, "errors", ne);
        table_print(t, stdout, !cli_no_headers);
        table_free(t);
        /* the code comes base64-encoded, as AIStore's clients expect */
        size_t len;
        char *code = b64_decode(sl_json_str(im, "code", ""), &len);
        printf("\nCODE:\n%.*s%s", (int)len, code, len && code[len - 1] == '\n' ? "" : "\n");
        free(code);
    }
    json_decref(j);
    return 0;
}

static int etl_logs(struct opts *o)
{
    if (o->argc < 2)
        return cli_usage("etl view-logs");
    const char *tid = o->argc > 2 ? o->argv[2] : NULL;
    char tb[64] = "";
    if (tid) {
        /* accept t[ID] too */
        if (!strncmp(tid, "t[", 2) && tid[strlen(tid) - 1] == ']')
            snprintf(tb, sizeof(tb), "%.*s", (int)strlen(tid) - 3, tid + 2);
        else
            snprintf(tb, sizeof(tb), "%s", tid);
    }
    char *q = sl_xasprintf("/logs%s%s", tid ? "/" : "", tb);
    json_t *j;
    int rc = etl_get(o->argv[1], q, &j);
    free(q);
    if (rc || !j)
        return rc;
    size_t i;
    json_t *e;
    json_array_foreach(j, i, e) {
        size_t n;
        char *raw = b64_decode(sl_json_str(e, "logs", ""), &n);
        if (json_array_size(j) > 1 || !tid)
            printf("t[%s]:\n", sl_json_str(e, "target_id", ""));
        fwrite(raw, 1, n, stdout);
        if (!n)
            printf("(no output)\n");
        free(raw);
    }
    json_decref(j);
    return 0;
}

static int etl_simple(struct opts *o, const char *verb)
{
    if (o->argc < 2) {
        char path[32];
        snprintf(path, sizeof(path), "etl %s", verb);
        return cli_usage(path);
    }
    int rc = 0;
    for (int i = 1; i < o->argc; i++) {
        char *en = sl_url_encode_path(o->argv[i], strlen(o->argv[i]));
        char *pq = !strcmp(verb, "rm") ? sl_xasprintf("/v1/etl/%s", en) : sl_xasprintf("/v1/etl/%s/%s", en, verb);
        free(en);
        struct cli_resp r;
        cli_req(!strcmp(verb, "rm") ? "DELETE" : "POST", pq, NULL, NULL, 0, &r);
        free(pq);
        if (r.status != 200)
            rc = cli_fail(&r, NULL);
        else
            printf("ETL \"%s\" %s\n", o->argv[i],
                   !strcmp(verb, "rm") ? "removed" : !strcmp(verb, "stop") ? "stopped" : "started");
        cli_resp_free(&r);
    }
    return rc;
}

static int etl_stop(struct opts *o)
{
    return etl_simple(o, "stop");
}

static int etl_start(struct opts *o)
{
    return etl_simple(o, "start");
}

static int etl_rm(struct opts *o)
{
    return etl_simple(o, "rm");
}

static int etl_object(struct opts *o)
{
    if (o->argc < 3)
        return cli_usage("etl object");
    char *av[8];
    int ac = 0;
    av[ac++] = o->argv[2];
    if (o->argc > 3)
        av[ac++] = o->argv[3];
    av[ac++] = "--etl-name";
    av[ac++] = o->argv[1];
    const char *args = opt_str(o, "args");
    if (args) {
        av[ac++] = "--etl-args";
        av[ac++] = (char *)args;
    }
    av[ac] = NULL;
    return cmd_get(ac, av);
}

/* "{jpg:png, txt:json}" or '{"jpg":"png"}' -> JSON object */
static json_t *parse_ext(const char *s)
{
    json_t *j = json_loads(s, 0, NULL);
    if (json_is_object(j))
        return j;
    json_decref(j);
    j = json_object();
    char *d = sl_xstrdup(s), *save = NULL;
    char *p = d;
    while (*p == ' ')
        p++;
    char *e = p + strlen(p);
    while (e > p && e[-1] == ' ')
        *--e = 0;
    /* braces are optional, but both or neither: "{txt:md" is a typo */
    bool open = *p == '{', close = e > p && e[-1] == '}';
    if (open != close || (open && e - p < 2)) {
        json_decref(j);
        free(d);
        return NULL;
    }
    if (open) {
        p++;
        *--e = 0;
    }
    for (char *t = strtok_r(p, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *c = strchr(t, ':');
        if (!c) {
            json_decref(j);
            free(d);
            return NULL;
        }
        *c = 0;
        while (*t == ' ' || *t == '.')
            t++;
        char *v = c + 1;
        while (*v == ' ' || *v == '.')
            v++;
        char *ve = v + strlen(v);
        while (ve > v && ve[-1] == ' ')
            *--ve = 0;
        char *ke = t + strlen(t);
        while (ke > t && ke[-1] == ' ')
            *--ke = 0;
        if (!*t || !*v) { /* "{:png}", "{jpg:}" */
            json_decref(j);
            free(d);
            return NULL;
        }
        json_object_set_new(j, t, json_string(v));
    }
    free(d);
    return j;
}

static int etl_bucket(struct opts *o)
{
    if (o->argc < 4)
        return cli_usage("etl bucket");
    int64_t tmo;
    if (cli_timeout(o, &tmo) < 0)
        return 1;
    struct uri src, dst;
    if (uri_parse(o->argv[2], &src, true) < 0)
        return 1;
    if (uri_parse(o->argv[3], &dst, true) < 0) {
        uri_free(&src);
        return 1;
    }
    json_t *v = json_object();
    json_object_set_new(v, "id", json_string(o->argv[1]));
    const char *tmpl = opt_str(o, "template"), *list = opt_str(o, "list"), *prefix = opt_str(o, "prefix");
    if (!prefix && src.obj[0] && !tmpl && !list)
        prefix = src.obj;
    if (prefix)
        json_object_set_new(v, "prefix", json_string(prefix));
    if (opt_str(o, "prepend"))
        json_object_set_new(v, "prepend", json_string(opt_str(o, "prepend")));
    if (opt_str(o, "args"))
        json_object_set_new(v, "etl_args", json_string(opt_str(o, "args")));
    bool dry = opt_bool(o, "dry-run");
    json_object_set_new(v, "dry_run", json_boolean(dry));
    json_object_set_new(v, "coer", json_boolean(opt_bool(o, "cont-on-err")));
    json_object_set_new(v, "num-workers", json_integer(opt_int(o, "num-workers", 0)));
    int rc = 0;
    if (opt_str(o, "ext")) {
        json_t *ext = parse_ext(opt_str(o, "ext"));
        if (!ext) {
            fprintf(stderr, "Error: --ext \"%s\": expected '{old:new, ...}' such as '{jpg:png}'\n", opt_str(o, "ext"));
            json_decref(v);
            uri_free(&src);
            uri_free(&dst);
            return 1;
        }
        json_object_set_new(v, "ext", ext);
    }
    const char *action = "etl-bck";
    char *pq;
    if (tmpl || list) {
        action = "etl-listrange";
        if (tmpl) {
            json_object_set_new(v, "template", json_string(tmpl));
        } else {
            json_object_set_new(v, "objnames", cli_names(list));
        }
        json_object_set_new(v, "tobck", json_pack("{s:s,s:s}", "name", dst.bucket, "provider", "ais"));
        pq = sl_xasprintf("/v1/buckets/%s%s", src.bucket, uri_query(&src));
    } else { /* (the source may be a remote bucket: s3://) */
        pq = sl_xasprintf("/v1/buckets/%s%s&bck_to=ais/@%%23/%s/", src.bucket, uri_query(&src), dst.bucket);
    }
    char *id = cli_act_id("POST", pq, action, v, NULL);
    free(pq);
    if (!id) {
        uri_free(&src);
        uri_free(&dst);
        return 1;
    }
    if (!opt_bool(o, "wait") && !dry) {
        cli_job_started(id);
        free(id);
        uri_free(&src);
        uri_free(&dst);
        return 0;
    }
    char where[300], would[300];
    snprintf(where, sizeof(where), "into ais://%s", dst.bucket);
    snprintf(would, sizeof(would), "put into bucket ais://%s", dst.bucket);
    uint64_t failed;
    size_t shown;
    rc = cli_job_report(id, tmo, opt_bool(o, "progress"), dry, "Transformed", where, would, &failed, &shown);
    if (failed > shown)
        printf("(first %zu shown; all: shale etl show errors %s %s)\n", shown, o->argv[1], id);
    if (failed && !rc)
        rc = 1;
    free(id);
    uri_free(&src);
    uri_free(&dst);
    return rc;
}

int cmd_etl(int argc, char **argv)
{
    static const struct cli_verb verbs[] = {
        { "init", etl_init, NULL }, { "show", etl_show, NULL }, { "ls", etl_show, "etl show" },
        { "view-logs", etl_logs, NULL }, { "logs", etl_logs, "etl view-logs" }, { "stop", etl_stop, NULL },
        { "start", etl_start, NULL }, { "rm", etl_rm, NULL }, { "object", etl_object, NULL },
        { "bucket", etl_bucket, NULL },
    };
    /* the handlers read the verb as o.argv[0] */
    return cli_run_verb("etl", verbs, SL_ARRAY_SIZE(verbs), argc, argv, true);
}
