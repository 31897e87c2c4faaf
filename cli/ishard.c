/* SPDX-License-Identifier: MIT
 * ishard.c: shale ishard: initial sharding as a cluster job (docs/ishard.md).
 * Flags are named after AIStore's ishard tool; its underscore spellings
 * (-src_bck, -shard_size, -dry_run=show_keys) are accepted too.
 */
#include "cli.h"
#include "jsonx.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the flags that take a value (help.c lists them all), for the underscore spellings */
static const char valued[] = "src-bck,dst-bck,shard-size,shard-template,ext,sample-key-pattern,sample-exts,"
                             "missing-extension-action,ekm,ekm-content,ekm-missing-key,sort,ext-collision,timeout";

static bool takes_value(const char *flag, size_t len)
{
    for (const char *p = valued; *p;) {
        size_t l = strcspn(p, ",");
        if (l == len && !strncmp(p, flag, len))
            return true;
        p += l + (p[l] == ',');
    }
    return false;
}

/* "-src_bck=x" / "--sample_key_pattern" -> "--src-bck=x"; the value after a
 * flag that takes one is left alone, even when it starts with '-' */
static char **normalize(int argc, char **argv)
{
    char **v = sl_xcalloc((size_t)argc + 1, sizeof(char *));
    bool value_next = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (value_next || a[0] != '-' || !a[1] || (a[1] >= '0' && a[1] <= '9')) {
            v[i] = sl_xstrdup(a);
            value_next = false;
            continue;
        }
        const char *name = a[1] == '-' ? a + 2 : a + 1;
        size_t nl = strcspn(name, "=");
        struct sl_buf b;
        sl_buf_init(&b);
        sl_buf_adds(&b, "--");
        for (size_t k = 0; k < nl; k++)
            sl_buf_addc(&b, name[k] == '_' ? '-' : name[k]);
        sl_buf_adds(&b, name + nl);
        v[i] = sl_buf_steal(&b);
        value_next = !name[nl] && takes_value(v[i] + 2, nl);
    }
    return v;
}


static void print_report(const json_t *rep, const json_t *progress, bool dry)
{
    char sz[32], cnt[32];
    json_t *plan = json_object_get(rep, "plan");
    if (dry && json_array_size(plan)) {
        struct table *t = table_new(4, "SHARD", "SAMPLES", "SIZE", "TARGET");
        size_t i;
        json_t *s;
        json_array_foreach(plan, i, s) {
            char n[32];
            snprintf(n, sizeof(n), "%lld", (long long)sl_json_int(s, "samples", 0));
            sl_format_size((uint64_t)sl_json_int(s, "size", 0), sz, sizeof(sz));
            const char *tid = sl_json_str(s, "target", "");
            char tn[64];
            snprintf(tn, sizeof(tn), tid[0] ? "t[%s]" : "-", tid);
            table_row(t, sl_json_str(s, "name", ""), n, sz, tn);
        }
        table_print(t, stdout, !cli_no_headers);
        table_free(t);
        json_array_foreach(plan, i, s) {
            json_t *keys = json_object_get(s, "keys");
            if (!json_array_size(keys))
                continue;
            /* one key per line, indented under its shard, as ais's show_keys */
            printf("%s:\n", sl_json_str(s, "name", ""));
            size_t k;
            json_t *x;
            json_array_foreach(keys, k, x) printf("    %s\n", json_string_value(x));
            if ((long long)json_array_size(keys) < sl_json_int(s, "samples", 0))
                printf("    ... (%lld in all)\n", (long long)sl_json_int(s, "samples", 0));
        }
    }
    json_t *lst = json_object_get(rep, "listed");
    sl_format_count((uint64_t)sl_json_int(lst, "objects", 0), cnt, sizeof(cnt));
    sl_format_size((uint64_t)sl_json_int(lst, "bytes", 0), sz, sizeof(sz));
    printf("%sSource: ais://%s%s%s: %s objects (%s) listed at %s\n", dry ? "\n" : "", sl_json_str(rep, "src", ""),
           sl_json_str(rep, "src_prefix", "")[0] ? "/" : "", sl_json_str(rep, "src_prefix", ""), cnt, sz,
           sl_json_str(lst, "at", ""));
    sl_format_count((uint64_t)sl_json_int(rep, "samples", 0), cnt, sizeof(cnt));
    /* the members' bytes ("bytes" is the planned tars', headers and padding included) */
    sl_format_size((uint64_t)sl_json_int(rep, "member_bytes", sl_json_int(rep, "bytes", 0)), sz, sizeof(sz));
    long long nsh = (long long)sl_json_int(rep, "shards", 0);
    const char *ss = sl_json_int(rep, "samples", 0) == 1 ? "" : "s", *hs = nsh == 1 ? "" : "s";
    const char *dst = sl_json_str(rep, "dst", "");
    if (dry) {
        printf("Would write %s sample%s in %lld shard%s (%s of member data) into ais://%s\n", cnt, ss, nsh, hs, sz,
               dst);
    } else {
        /* the shards' own size (headers and padding included) next to the members' */
        char wsz[32];
        sl_format_size((uint64_t)sl_json_int(progress, "bytes_written", 0), wsz, sizeof(wsz));
        printf("Wrote %s sample%s in %lld shard%s (%s; member data %s) into ais://%s\n", cnt, ss, nsh, hs, wsz, sz,
               dst);
    }
    const char *sort = sl_json_str(json_object_get(rep, "msg"), "sort", "");
    if (!strncmp(sort, "shuffle", 7))
        printf("Order: %s (run again with --sort %s for the same layout)\n", sort, sort);
    json_t *sk = json_object_get(rep, "skipped");
    printf("Skipped: %lld file(s) without extension, %lld sample(s) excluded, %lld unmatched by the EKM, %lld dropped "
           "for extension collisions; %lld incomplete sample(s); %lld sample(s) with members renamed to "
           "<key>.<ext>\n",
           (long long)sl_json_int(sk, "no_extension", 0), (long long)sl_json_int(sk, "excluded_samples", 0),
           (long long)sl_json_int(sk, "ekm_unmatched", 0), (long long)sl_json_int(sk, "collision_samples", 0),
           (long long)sl_json_int(rep, "incomplete_samples", 0), (long long)sl_json_int(rep, "renamed_samples", 0));
    json_t *h = json_object_get(rep, "histogram");
    if (json_array_size(h)) {
        printf("Shard sizes:");
        size_t i;
        json_t *x;
        json_array_foreach(h, i, x)
            printf(" <=%s: %lld", sl_json_str(x, "le", ""), (long long)sl_json_int(x, "shards", 0));
        printf("\n");
    }
    json_t *fam = json_object_get(rep, "families");
    const char *fk;
    json_t *fv;
    json_object_foreach(fam, fk, fv) printf("Family %s: %lld shards, %lld samples\n", fk,
                                            (long long)sl_json_int(fv, "shards", 0),
                                            (long long)sl_json_int(fv, "samples", 0));
    json_t *w = json_object_get(rep, "warnings");
    if (json_array_size(w)) {
        printf("Warnings (%lld):\n", (long long)sl_json_int(rep, "warnings_total", 0));
        size_t i;
        json_t *x;
        json_array_foreach(w, i, x) printf("  %s\n", json_string_value(x));
    }
}

static json_t *status(const char *id, int *rc)
{
    char *pq = sl_xasprintf("/v1/ishard/%s", id);
    json_t *j;
    if (cli_get_json(pq, NULL, &j))
        *rc = 1;
    free(pq);
    return j;
}

int cmd_ishard(int argc, char **argv)
{
    char **av = normalize(argc, argv);
    struct opts o;
    int rc = cli_opts(&o, "ishard", argc, av);
    if (rc < 0) {
        for (int i = 0; i < argc; i++)
            free(av[i]);
        free(av);
        return 1;
    }
    rc = 0;
    json_t *m = json_object();
    const char *src = opt_str(&o, "src-bck"), *dst = opt_str(&o, "dst-bck");
    if (!src || !dst) {
        fprintf(stderr, "Error: ishard needs --src-bck ais://SRC[/PREFIX] and --dst-bck ais://DST\n");
        rc = 1;
        goto out;
    }
    json_object_set_new(m, "src_bck", json_string(src));
    json_object_set_new(m, "dst_bck", json_string(dst));
    static const char *const map[][2] = {
        { "shard-size", "shard_size" }, { "shard-template", "shard_template" }, { "ext", "ext" },
        { "sample-key-pattern", "sample_key_pattern" }, { "sample-exts", "sample_exts" },
        { "missing-extension-action", "missing_extension_action" }, { "ekm-content", "ekm_content" },
        { "ekm-missing-key", "ekm_missing_key" }, { "sort", "sort" }, { "ext-collision", "ext_collision" },
    };
    for (size_t i = 0; i < SL_ARRAY_SIZE(map); i++)
        if (opt_str(&o, map[i][0]))
            json_object_set_new(m, map[i][1], json_string(opt_str(&o, map[i][0])));
    json_object_set_new(m, "collapse", json_boolean(opt_bool(&o, "collapse")));
    json_object_set_new(m, "overwrite", json_boolean(opt_bool(&o, "overwrite")));
    bool dry = opt_bool(&o, "dry-run");
    const char *dv = opt_str(&o, "dry-run");
    if (dry && dv && !strcmp(dv, "false"))
        dry = false;
    if (dry)
        json_object_set_new(m, "dry_run", dv && !strcmp(dv, "show_keys") ? json_string("show_keys") : json_true());
    const char *ekm = opt_str(&o, "ekm");
    if (ekm) {
        char *text = cli_read_file(ekm, NULL);
        if (!text) {
            rc = 1;
            goto out;
        }
        if (sl_has_suffix(ekm, ".lua")) {
            json_t *js = json_string(text);
            if (!js) {
                fprintf(stderr, "Error: %s is not UTF-8 text\n", ekm);
                free(text);
                rc = 1;
                goto out;
            }
            json_object_set_new(m, "ekm_lua", js);
        } else {
            json_error_t je;
            json_t *j = json_loads(text, 0, &je);
            if (!j) {
                fprintf(stderr, "Error: %s: invalid JSON: %s (line %d, column %d)\n", ekm, je.text, je.line,
                        je.column);
                free(text);
                rc = 1;
                goto out;
            }
            json_object_set_new(m, "ekm", j);
        }
        free(text);
    }
    size_t blen;
    char *body = sl_json_dump(m, 0, &blen);
    struct cli_resp r;
    cli_req("POST", "/v1/ishard", "application/json", body, blen, &r);
    free(body);
    if (r.status != 200) {
        rc = cli_fail(&r, NULL);
        cli_resp_free(&r);
        goto out;
    }
    char *id = sl_xstrdup(r.body.p ? r.body.p : "");
    cli_resp_free(&r);
    if (!dry && !opt_bool(&o, "wait") && !opt_bool(&o, "progress")) {
        printf("%s\n", id);
        free(id);
        goto out;
    }
    int64_t tmo = 24 * 3600LL * 1000000000LL;
    const char *ts = opt_str(&o, "timeout");
    if (ts && sl_parse_duration(ts, &tmo) < 0) {
        fprintf(stderr, "Error: --timeout: invalid duration \"%s\"\n", ts);
        free(id);
        rc = 1;
        goto out;
    }
    int64_t deadline = sl_mono_ns() + tmo;
    struct progress *bar = NULL;
    uint64_t shown = 0;
    json_t *st = NULL;
    for (;;) {
        json_decref(st);
        st = status(id, &rc);
        if (!st)
            break;
        const char *state = sl_json_str(st, "state", "");
        json_t *pg = json_object_get(st, "progress");
        if (opt_bool(&o, "progress") && !dry && strcmp(state, "planning")) {
            uint64_t total = (uint64_t)sl_json_int(pg, "shards_total", 0);
            if (!bar && total)
                bar = progress_new("Shards", total, false);
            if (bar) {
                uint64_t done = (uint64_t)sl_json_int(pg, "shards_written", 0);
                if (done > shown) { /* the bar counts up: feed it the difference */
                    progress_add(bar, done - shown);
                    shown = done;
                }
                progress_draw(bar, false);
            }
        }
        if (strcmp(state, "planning") && strcmp(state, "running"))
            break;
        if (sl_mono_ns() > deadline) {
            fprintf(stderr, "Error: timed out waiting for ishard %s\n", id);
            rc = 1;
            break;
        }
        usleep(200000);
    }
    if (bar) {
        progress_draw(bar, true);
        progress_free(bar);
    }
    if (st) {
        if (cli_json)
            cli_print_json(st);
        const char *state = sl_json_str(st, "state", "");
        json_t *rep = json_object_get(st, "report");
        if (!cli_json && json_is_object(rep) && !strcmp(state, "finished")) {
            if (dry)
                printf("[DRY RUN] No modifications on the cluster\n");
            print_report(rep, json_object_get(st, "progress"), dry);
        } else if (!cli_json && json_is_object(rep)) {
            json_t *w = json_object_get(rep, "warnings");
            size_t i;
            json_t *x;
            json_array_foreach(w, i, x) fprintf(stderr, "Warning: %s\n", json_string_value(x));
        }
        json_t *pg = json_object_get(st, "progress");
        if (sl_json_int(pg, "vanished", 0))
            printf("%lld listed object(s) were gone when their shard was written (the shards lack them)\n",
                   (long long)sl_json_int(pg, "vanished", 0));
        if (!strcmp(state, "failed") || !strcmp(state, "aborted")) {
            fprintf(stderr, "Error: ishard %s %s%s%s\n", id, state, sl_json_str(st, "err", "")[0] ? ": " : "",
                    sl_json_str(st, "err", ""));
            rc = 1;
        } else if (!rc && !cli_json) {
            printf("ishard %s %s\n", id, state);
        }
        json_decref(st);
    }
    free(id);
out:
    json_decref(m);
    for (int i = 0; i < argc; i++)
        free(av[i]);
    free(av);
    return rc;
}
