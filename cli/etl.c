/* SPDX-License-Identifier: MIT
 * etl.c: shale etl init|show|view-logs|stop|start|rm|object|bucket
 * (cli.md §2.2; docs/etl.md). Transforms are Lua scripts run by the targets.
 */
#include "cli.h"
#include "jsonx.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: shale etl COMMAND\n\n"
            "  init --name NAME --code FILE.lua [--mode object|sample] [--obj-timeout 45s] [--mem-limit 64MiB]\n"
            "       [--max-output 64MiB]\n"
            "       init --spec FILE.json           (the PUT /v1/etl message)\n"
            "  show [NAME]                          list ETLs, or one ETL's definition\n"
            "  show errors NAME [JOB_ID]            objects the transform failed on\n"
            "  view-logs NAME [TARGET_ID]           what the script printed (shale.log/print)\n"
            "  stop NAME | start NAME | rm NAME\n"
            "  object NAME ais://B/O OUT|- [--args ARGS]   one object through the ETL\n"
            "  bucket NAME ais://SRC ais://DST [--prefix P | --template T | --list a,b] [--ext '{jpg:png}']\n"
            "         [--prepend P] [--dry-run] [--num-workers N] [--cont-on-err] [--args ARGS] [--wait]\n"
            "         [--timeout 1h]                offline transform, bucket to bucket\n");
}


/* base64 text -> new bytes (*n of them; NUL-terminated); bad input -> empty */
static char *b64_decode(const char *b64, size_t *n)
{
    size_t bl = strlen(b64);
    unsigned char *raw = sl_xmalloc(bl / 4 * 3 + 4);
    int k = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)bl);
    if (k < 0)
        k = 0;
    while (k > 0 && bl && b64[bl - 1] == '=') { /* EVP_DecodeBlock counts padding */
        k--;
        bl--;
    }
    raw[k] = 0;
    *n = (size_t)k;
    return (char *)raw;
}

static int etl_init(struct opts *o)
{
    const char *spec = opt_str(o, "spec");
    json_t *msg;
    if (spec) {
        if (!(msg = cli_read_json(spec)))
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

static json_t *get_json(const char *pq, int *rc)
{
    struct cli_resp r;
    cli_req("GET", pq, NULL, NULL, 0, &r);
    json_t *j = NULL;
    if (r.status != 200)
        *rc = cli_fail(&r, NULL);
    else
        j = cli_resp_json(&r);
    cli_resp_free(&r);
    return j;
}

/* OBJECT ECODE ERROR, one line per error (the first line of its message) */
static void print_errors(json_t *errs, const char *objkey)
{
    struct table *t = table_new(3, "OBJECT", "ECODE", "ERROR");
    size_t i;
    json_t *e;
    json_array_foreach(errs, i, e) {
        char ec[16];
        snprintf(ec, sizeof(ec), "%lld", (long long)sl_json_int(e, "ecode", 0));
        char *msg = sl_xstrdup(sl_json_str(e, "msg", ""));
        char *nl = strchr(msg, '\n');
        if (nl)
            *nl = 0;
        table_row(t, sl_json_str(e, objkey, ""), ec, msg);
        free(msg);
    }
    table_print(t, stdout, !cli_no_headers);
    table_free(t);
}

static void print_json(json_t *j)
{
    char *s = sl_json_dump(j, SL_JD_PRETTY, NULL);
    printf("%s\n", s);
    free(s);
}

static int etl_show_errors(struct opts *o)
{
    if (o->argc < 3) {
        fprintf(stderr, "Usage: shale etl show errors NAME [JOB_ID]\n");
        return 1;
    }
    char *en = sl_url_encode_path(o->argv[2], strlen(o->argv[2]));
    char *pq = sl_xasprintf("/v1/etl/%s%s%s", en, o->argc > 3 ? "?uuid=" : "", o->argc > 3 ? o->argv[3] : "");
    free(en);
    int rc = 0;
    json_t *j = get_json(pq, &rc);
    free(pq);
    if (!j)
        return rc;
    json_t *errs = json_object_get(j, "obj_errors");
    if (cli_json) {
        print_json(errs);
    } else if (!json_array_size(errs)) {
        printf("No errors\n");
    } else {
        print_errors(errs, "obj_name");
    }
    json_decref(j);
    return 0;
}

static int etl_show(struct opts *o)
{
    if (o->argc >= 2 && !strcmp(o->argv[1], "errors"))
        return etl_show_errors(o);
    int rc = 0;
    if (o->argc < 2) {
        json_t *j = get_json("/v1/etl", &rc);
        if (!j)
            return rc;
        if (cli_json) {
            print_json(j);
        } else if (!json_array_size(j)) {
            printf("No ETLs (initialise one with `shale etl init --name NAME --code FILE.lua`)\n");
        } else {
            struct table *t = table_new(8, "NAME", "MODE", "STAGE", "JOB ID", "OBJECTS", "IN", "OUT", "ERRORS");
            size_t i;
            json_t *e;
            json_array_foreach(j, i, e) {
                char oc[32], in[32], out[32], ec[32];
                sl_format_count((uint64_t)sl_json_int(e, "obj_count", 0), oc, sizeof(oc));
                sl_format_size((uint64_t)sl_json_int(e, "in_bytes", 0), in, sizeof(in));
                sl_format_size((uint64_t)sl_json_int(e, "out_bytes", 0), out, sizeof(out));
                sl_format_count((uint64_t)sl_json_int(e, "err_count", 0), ec, sizeof(ec));
                table_row(t, sl_json_str(e, "id", ""), sl_json_str(e, "mode", ""), sl_json_str(e, "stage", ""),
                          sl_json_str(e, "xaction_id", ""), oc, in, out, ec);
            }
            table_print(t, stdout, !cli_no_headers);
            table_free(t);
        }
        json_decref(j);
        return 0;
    }
    char *en = sl_url_encode_path(o->argv[1], strlen(o->argv[1]));
    char *pq = sl_xasprintf("/v1/etl/%s", en);
    free(en);
    json_t *j = get_json(pq, &rc);
    free(pq);
    if (!j)
        return rc;
    json_t *im = json_object_get(j, "init_msg");
    if (cli_json) {
        print_json(j);
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
    if (o->argc < 2) {
        fprintf(stderr, "Usage: shale etl view-logs NAME [TARGET_ID]\n");
        return 1;
    }
    const char *tid = o->argc > 2 ? o->argv[2] : NULL;
    char tb[64] = "";
    if (tid) {
        /* accept t[ID] too */
        if (!strncmp(tid, "t[", 2) && tid[strlen(tid) - 1] == ']')
            snprintf(tb, sizeof(tb), "%.*s", (int)strlen(tid) - 3, tid + 2);
        else
            snprintf(tb, sizeof(tb), "%s", tid);
    }
    char *en = sl_url_encode_path(o->argv[1], strlen(o->argv[1]));
    char *pq = sl_xasprintf("/v1/etl/%s/logs%s%s", en, tid ? "/" : "", tb);
    free(en);
    int rc = 0;
    json_t *j = get_json(pq, &rc);
    free(pq);
    if (!j)
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
        fprintf(stderr, "Usage: shale etl %s NAME\n", verb);
        return 1;
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

static int etl_object(struct opts *o)
{
    if (o->argc < 3) {
        fprintf(stderr, "Usage: shale etl object NAME ais://BUCKET/OBJECT [OUT_FILE|-] [--args ARGS]\n");
        return 1;
    }
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

/* totals over targets for one job */
static void job_totals(const char *id, uint64_t *objs, uint64_t *bytes, uint64_t *failed, json_t **errors)
{
    *objs = *bytes = *failed = 0;
    *errors = json_array();
    json_t *q = json_pack("{s:s}", "ID", id);
    size_t len;
    char *body = sl_json_dump(q, 0, &len);
    json_decref(q);
    struct cli_resp r;
    cli_req("GET", "/v1/cluster?what=qryxstats", "application/json", body, len, &r);
    free(body);
    json_t *j = r.status == 200 ? cli_resp_json(&r) : NULL;
    cli_resp_free(&r);
    const char *tid;
    json_t *arr;
    json_object_foreach(j, tid, arr) {
        size_t i;
        json_t *s;
        json_array_foreach(arr, i, s) {
            json_t *st = json_object_get(s, "stats");
            *objs += (uint64_t)sl_json_int(st, "out-objs", 0);
            *bytes += (uint64_t)sl_json_int(st, "out-bytes", 0);
            *failed += (uint64_t)sl_json_int(st, "err-objs", 0);
            size_t k;
            json_t *e;
            json_array_foreach(json_object_get(json_object_get(s, "ext"), "errors"), k, e)
                json_array_append(*errors, e);
        }
    }
    json_decref(j);
}

static int etl_bucket(struct opts *o)
{
    if (o->argc < 4) {
        fprintf(stderr, "Usage: shale etl bucket NAME ais://SRC ais://DST [--prefix P|--template T|--list a,b] "
                        "[--ext '{jpg:png}'] [--prepend P] [--dry-run] [--wait]\n");
        return 1;
    }
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
            json_t *a = json_array();
            char *d = sl_xstrdup(list), *save = NULL;
            for (char *t = strtok_r(d, ",", &save); t; t = strtok_r(NULL, ",", &save))
                json_array_append_new(a, json_string(t));
            free(d);
            json_object_set_new(v, "objnames", a);
        }
        json_object_set_new(v, "tobck", json_pack("{s:s,s:s}", "name", dst.bucket, "provider", "ais"));
        pq = sl_xasprintf("/v1/buckets/%s?provider=ais", src.bucket);
    } else {
        pq = sl_xasprintf("/v1/buckets/%s?provider=ais&bck_to=ais/@%%23/%s/", src.bucket, dst.bucket);
    }
    struct cli_resp r;
    cli_act("POST", pq, action, "", v, &r);
    free(pq);
    if (r.status != 200) {
        rc = cli_fail(&r, NULL);
        cli_resp_free(&r);
        uri_free(&src);
        uri_free(&dst);
        return rc;
    }
    char *id = sl_xstrdup(r.body.p ? r.body.p : "");
    cli_resp_free(&r);
    if (!opt_bool(o, "wait") && !dry) {
        printf("%s\n", id);
        if (isatty(STDOUT_FILENO))
            fprintf(stderr, "Job %s started: follow it with `shale job wait %s --progress` or `shale job show %s`\n",
                    id, id, id);
        free(id);
        uri_free(&src);
        uri_free(&dst);
        return 0;
    }
    int64_t tmo = 3600LL * 1000000000LL;
    const char *ts = opt_str(o, "timeout");
    if (ts && sl_parse_duration(ts, &tmo) < 0) {
        fprintf(stderr, "Error: --timeout: invalid duration \"%s\"\n", ts);
        tmo = 3600LL * 1000000000LL;
    }
    rc = cli_job_wait(id, tmo, false);
    uint64_t objs, bytes, failed;
    json_t *errs;
    job_totals(id, &objs, &bytes, &failed, &errs);
    char sz[32], cnt[32];
    sl_format_size(bytes, sz, sizeof(sz));
    sl_format_count(objs, cnt, sizeof(cnt));
    if (dry) {
        printf("[DRY RUN] No modifications on the cluster\n");
        printf("%s object%s (%s) would have been put into bucket ais://%s\n", cnt, objs == 1 ? "" : "s", sz,
               dst.bucket);
    } else {
        printf("Transformed %s object%s (%s) into ais://%s\n", cnt, objs == 1 ? "" : "s", sz, dst.bucket);
    }
    if (failed) {
        printf("%llu object(s) failed:\n", (unsigned long long)failed);
        print_errors(errs, "obj");
        if (failed > json_array_size(errs))
            printf("(first %zu shown; all: shale etl show errors %s %s)\n", json_array_size(errs), o->argv[1], id);
        if (!rc)
            rc = 1;
    }
    json_decref(errs);
    free(id);
    uri_free(&src);
    uri_free(&dst);
    return rc;
}

int cmd_etl(int argc, char **argv)
{
    if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h") || !strcmp(argv[0], "help")) {
        usage(argc < 1 ? stderr : stdout);
        return argc < 1 ? 1 : 0;
    }
    struct opts o;
    if (opts_parse(&o, argc, argv,
                   "name,code,spec,mode,obj-timeout,mem-limit,max-output,args,prefix,template,list,ext,prepend,"
                   "num-workers,timeout",
                   "dry-run,cont-on-err,wait") < 0)
        return 1;
    if (!o.argc) {
        usage(stderr);
        return 1;
    }
    const char *c = o.argv[0];
    if (!strcmp(c, "init"))
        return etl_init(&o);
    if (!strcmp(c, "show") || !strcmp(c, "ls"))
        return etl_show(&o);
    if (!strcmp(c, "view-logs") || !strcmp(c, "logs"))
        return etl_logs(&o);
    if (!strcmp(c, "stop") || !strcmp(c, "start") || !strcmp(c, "rm"))
        return etl_simple(&o, c);
    if (!strcmp(c, "object"))
        return etl_object(&o);
    if (!strcmp(c, "bucket"))
        return etl_bucket(&o);
    fprintf(stderr, "Error: unknown etl command \"%s\"\n\n", c);
    usage(stderr);
    return 1;
}
