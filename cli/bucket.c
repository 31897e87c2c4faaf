/* SPDX-License-Identifier: MIT
 * bucket.c: shale bucket create|ls|rm|props, and `shale ls` (buckets or
 * objects).
 */
#include "cli.h"
#include "jsonx.h"
#include "meta.h"
#include "template.h"

#include <msgpack.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* One "key.sub=value" of a props list into val (nested objects; true and
 * false are booleans). backend_bck=s3://NAME is the remote bucket behind
 * this one, as AIStore's CLI writes it ("" or none detaches). -1 after
 * saying what is wrong. */
static int props_kv(json_t *val, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) {
        fprintf(stderr, "Error: \"%s\" is not key=value\n", kv);
        return -1;
    }
    char *k = sl_xstrndup(kv, (size_t)(eq - kv));
    const char *v = eq + 1;
    json_t *jv;
    if (!strcmp(k, "backend_bck")) {
        char prov[16] = "", name[128] = "";
        const char *sch = strstr(v, "://");
        if (*v && strcmp(v, "none") && (!sch || (size_t)(sch - v) >= sizeof(prov) || !sch[3])) {
            fprintf(stderr, "Error: backend_bck=%s: write the remote bucket as PROVIDER://NAME (s3://origin), or "
                    "\"\" to detach\n", v);
            free(k);
            return -1;
        }
        char alias[80] = "";
        if (*v && strcmp(v, "none")) {
            snprintf(prov, sizeof(prov), "%.*s", (int)(sch - v), v);
            snprintf(name, sizeof(name), "%s", sch + 3);
            const char *sl = strchr(sch + 3, '/');
            if (name[0] == '@' && sl) { /* ais://@ALIAS/NAME: a bucket of an attached remote cluster */
                snprintf(alias, sizeof(alias), "%.*s", (int)(sl - sch - 4), sch + 4);
                snprintf(name, sizeof(name), "%s", sl + 1);
            }
        }
        jv = json_pack("{s:s,s:s,s:{s:s,s:s}}", "name", name, "provider", prov, "namespace", "uuid", alias, "name",
                       "");
    } else {
        jv = !strcmp(v, "true") ? json_true() : !strcmp(v, "false") ? json_false() : json_string(v);
    }
    json_t *cur = val;
    char *save = NULL;
    for (char *p = strtok_r(k, ".", &save); p;) {
        char *next = strtok_r(NULL, ".", &save);
        if (!next) {
            json_object_set_new(cur, p, jv);
            break;
        }
        json_t *sub = json_object_get(cur, p);
        if (!json_is_object(sub)) {
            sub = json_object();
            json_object_set_new(cur, p, sub);
        }
        cur = sub;
        p = next;
    }
    free(k);
    return 0;
}
static int bucket_create(struct opts *o)
{
    if (o->argc < 1)
        return cli_usage("bucket create");
    int rc = 0;
    for (int i = 0; i < o->argc; i++) {
        struct uri u;
        if (uri_parse(o->argv[i], &u, true) < 0)
            return 1;
        json_t *props = NULL;
        const char *ps = opt_str(o, "props");
        if (ps && *ps) {
            json_error_t je;
            props = json_loads(ps, 0, &je);
            if (!props) { /* "k=v k2=v2" */
                props = json_object();
                char *cp = sl_xstrdup(ps), *save = NULL;
                for (char *t = strtok_r(cp, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
                    if (props_kv(props, t) < 0) {
                        free(cp);
                        json_decref(props);
                        return 1;
                    }
                }
                free(cp);
            }
        }
        struct cli_resp r;
        char *pq = sl_xasprintf("/v1/buckets/%s%s%s", u.bucket, uri_query(&u),
                                opt_bool(o, "skip-lookup") ? "&dont_head_remote_bck=true" : "");
        cli_act("POST", pq, "create-bck", "", props, &r);
        free(pq);
        if (r.status != 200) {
            if (r.status == 409 && opt_bool(o, "ignore-error")) {
            } else {
                char what[128];
                snprintf(what, sizeof(what), "Create bucket \"%s://%s\" failed", sl_provider_scheme(u.provider),
                         u.bucket);
                rc = cli_fail(&r, what);
            }
        } else {
            printf("\"%s://%s\" bucket created\n", sl_provider_scheme(u.provider), u.bucket);
        }
        cli_resp_free(&r);
        uri_free(&u);
    }
    return rc;
}

static int bucket_rm(struct opts *o)
{
    if (o->argc < 1)
        return cli_usage("bucket rm");
    if (!opt_bool(o, "yes")) {
        /* as ais: destroying asks first; without a terminal to ask on, refuse */
        if (!isatty(0)) {
            fprintf(stderr, "Error: `shale bucket rm` destroys %s and all its objects and asks for confirmation, "
                            "but stdin is not a terminal: add -y (--yes) to destroy without asking\n",
                    o->argc == 1 ? o->argv[0] : "these buckets");
            return 1;
        }
        printf("Destroy %d bucket%s (", o->argc, o->argc == 1 ? "" : "s");
        for (int i = 0; i < o->argc; i++)
            printf("%s%s", i ? ", " : "", o->argv[i]);
        printf(") and every object in %s? [Y/N]: ", o->argc == 1 ? "it" : "them");
        fflush(stdout);
        char ans[16] = "";
        if (!fgets(ans, sizeof(ans), stdin) || (ans[0] != 'y' && ans[0] != 'Y')) {
            printf("Operation canceled\n");
            return 1;
        }
    }
    int rc = 0;
    for (int i = 0; i < o->argc; i++) {
        struct uri u;
        if (uri_parse(o->argv[i], &u, true) < 0)
            return 1;
        struct cli_resp r;
        char *pq = sl_xasprintf("/v1/buckets/%s%s", u.bucket, uri_query(&u));
        cli_act("DELETE", pq, "destroy-bck", "", NULL, &r);
        free(pq);
        if (r.status != 200) {
            if (!(r.status == 404 && opt_bool(o, "ignore-error")))
                rc = cli_fail(&r, NULL);
        } else {
            printf("\"%s://%s\" destroyed\n", sl_provider_scheme(u.provider), u.bucket);
        }
        cli_resp_free(&r);
        uri_free(&u);
    }
    return rc;
}

static int list_buckets(struct opts *o)
{
    json_t *j;
    int rc = cli_get_json("/v1/buckets", "list buckets", &j); /* every provider's */
    if (rc)
        return rc;
    if (cli_json) {
        cli_print_json(j);
    } else {
        struct table *t = table_new(2, "NAME", "PRESENT");
        size_t i;
        json_t *b;
        json_array_foreach(j, i, b) {
            char n[128];
            snprintf(n, sizeof(n), "%s://%s", sl_provider_scheme(json_string_value(json_object_get(b, "provider"))),
                     json_string_value(json_object_get(b, "name")));
            table_row(t, n, "yes");
        }
        table_print(t, stdout, !cli_no_headers);
        if (!cli_no_headers)
            printf("Total: %zu bucket%s\n", json_array_size(j), json_array_size(j) == 1 ? "" : "s");
        table_free(t);
    }
    json_decref(j);
    (void)o;
    return 0;
}

/* list objects with paging; prints a table */
/* `ls ais://B --summary`, `bucket summary ais://B[/PREFIX]`: AIStore's
 * summary-bck, polled until it is done */
static int bucket_summary(struct opts *o, struct uri *u)
{
    char *pq = sl_xasprintf("/v1/buckets/%s%s", u->bucket, uri_query(u));
    const char *prefix = opt_str(o, "prefix") ? opt_str(o, "prefix") : u->obj;
    struct cli_resp r;
    cli_act("GET", pq, "summary-bck", "", json_pack("{s:s,s:s}", "uuid", "", "prefix", prefix), &r);
    if (r.status != 202) {
        int rc = cli_fail(&r, "summary");
        cli_resp_free(&r);
        free(pq);
        return rc;
    }
    char *id = sl_xstrndup(r.body.p ? r.body.p : "", r.body.len);
    cli_resp_free(&r);
    json_t *res = NULL;
    int rc = 1;
    for (int i = 0; i < 36000; i++) { /* at most an hour */
        cli_act("GET", pq, "summary-bck", "", json_pack("{s:s,s:s}", "uuid", id, "prefix", prefix), &r);
        if (r.status == 200) {
            res = cli_resp_json(&r);
            cli_resp_free(&r);
            rc = 0;
            break;
        }
        if (r.status != 202) {
            rc = cli_fail(&r, "summary");
            cli_resp_free(&r);
            break;
        }
        cli_resp_free(&r);
        usleep(100000);
    }
    free(id);
    free(pq);
    if (rc)
        return rc;
    json_t *x = json_array_get(res, 0);
    if (cli_json) {
        cli_print_json(x);
    } else {
        json_t *oc = json_object_get(x, "ObjCount"), *os = json_object_get(x, "ObjSize"),
               *ts = json_object_get(x, "TotalSize");
        char cnt[32], mn[32], av[32], mx[32], tot[32], name[300], sizes[120], pct[16];
        sl_format_count(strtoull(sl_json_str(oc, "obj_count_present", "0"), NULL, 10), cnt, sizeof(cnt));
        sl_format_size((uint64_t)sl_json_int(os, "obj_min_size", 0), mn, sizeof(mn));
        sl_format_size((uint64_t)sl_json_int(os, "obj_avg_size", 0), av, sizeof(av));
        sl_format_size((uint64_t)sl_json_int(os, "obj_max_size", 0), mx, sizeof(mx));
        sl_format_size(strtoull(sl_json_str(ts, "size_all_present_objs", "0"), NULL, 10), tot, sizeof(tot));
        snprintf(name, sizeof(name), "ais://%s%s%s", u->bucket, prefix[0] ? "/" : "", prefix);
        snprintf(sizes, sizeof(sizes), "%s, %s, %s", mn, av, mx);
        snprintf(pct, sizeof(pct), "%lld%%", (long long)sl_json_int(x, "used_pct", 0));
        struct table *t = table_new(5, "NAME", "OBJECTS", "OBJECT SIZES (min, avg, max)", "TOTAL OBJECT SIZE",
                                    "USAGE(%)");
        table_row(t, name, cnt, sizes, tot, pct);
        table_print(t, stdout, !cli_no_headers);
        table_free(t);
    }
    json_decref(res);
    return 0;
}

static int list_objects(struct opts *o, struct uri *u)
{
    if (opt_bool(o, "summary"))
        return bucket_summary(o, u);
    const char *props = opt_str(o, "props");
    bool all = props && !strcmp(props, "all");
    bool name_only = opt_bool(o, "name-only");
    bool paged = opt_bool(o, "paged");
    long long limit = opt_int(o, "limit", 0);
    long long psize = opt_int(o, "page-size", 0);
    const char *prefix = opt_str(o, "prefix");
    if (!prefix)
        prefix = u->obj;
    /* --regex and --template select names, as ais's do; the listing asks for the template's prefix */
    regex_t re;
    bool have_re = false;
    const char *rx = opt_str(o, "regex");
    if (rx) {
        int e = regcomp(&re, rx, REG_EXTENDED | REG_NOSUB);
        if (e) {
            char msg[200];
            regerror(e, &re, msg, sizeof(msg));
            fprintf(stderr, "Error: --regex \"%s\": %s\n", rx, msg);
            return 1;
        }
        have_re = true;
    }
    struct sl_tmpl *tp = NULL;
    const char *tmpl = opt_str(o, "template");
    json_t *tnames = NULL;
    if (tmpl) {
        struct sl_err terr = { 0 };
        if (sl_tmpl_parse(tmpl, &tp, &terr) < 0) {
            fprintf(stderr, "Error: --template: %s\n", terr.msg);
            if (have_re)
                regfree(&re);
            return 1;
        }
        prefix = sl_tmpl_prefix(tp);
        if (sl_tmpl_is_range(tp) && sl_tmpl_count(tp) <= 10000000) {
            tnames = json_object();
            struct sl_buf nb;
            sl_buf_init(&nb);
            for (uint64_t i = 0; i < sl_tmpl_count(tp); i++) {
                sl_tmpl_at(tp, i, &nb);
                json_object_set_new(tnames, nb.p, json_true());
            }
            sl_buf_free(&nb);
        }
    }
    bool count_only = opt_bool(o, "count-only"), no_footers = opt_bool(o, "no-footers");
    const char *start_after = opt_str(o, "start-after");
    unsigned long long flags = 0;
    if (name_only)
        flags |= 16;
    if (opt_bool(o, "nr"))
        flags |= 2048;
    if (opt_bool(o, "archive"))
        flags |= 8;
    if (opt_bool(o, "cached")) /* a remote-backed bucket: only what the cluster holds */
        flags |= 1;
    const char *inv_name = opt_str(o, "inv-name");
    if (inv_name && !opt_bool(o, "inventory")) {
        fprintf(stderr, "Error: --inv-name names the inventory to list from: add --inventory\n");
        return 1;
    }
    if (opt_bool(o, "inventory")) /* from the bucket's inventory (server/jobs/nbi.c) */
        flags |= 32768;
    /* all: the columns of `ais ls --props all` (custom only when asked for) */
    const char *want = name_only ? "name" : all ? "name,size,checksum,atime,version,cached,location,status,copies"
                                  : props && *props ? props : "name,size";
    char *token = sl_xstrdup(""), *uuid = sl_xstrdup("");
    long long total = 0;
    int page = 0, rc = 0;
    struct table *t = NULL;
    /* columns */
    char *cols[12];
    int ncols = 0;
    cols[ncols++] = "NAME";
    if (!name_only) {
        char *cp = sl_xstrdup(want), *save = NULL;
        for (char *tk = strtok_r(cp, ",", &save); tk; tk = strtok_r(NULL, ",", &save)) {
            if (!strcmp(tk, "name"))
                continue;
            static const struct { const char *p, *h; } map[] = {
                { "size", "SIZE" }, { "checksum", "CHECKSUM" }, { "atime", "ATIME" }, { "version", "VERSION" },
                { "cached", "CACHED" }, { "location", "TARGET URL" }, { "status", "STATUS" },
                { "copies", "COPIES" }, { "custom", "CUSTOM" },
            };
            for (size_t k = 0; k < sizeof(map) / sizeof(map[0]); k++)
                if (!strcmp(tk, map[k].p) && ncols < 12)
                    cols[ncols++] = (char *)map[k].h;
        }
        free(cp);
    }
    json_t *all_entries = cli_json ? json_array() : NULL;
    char fl[32];
    snprintf(fl, sizeof(fl), "%llu", flags);
    char *pq = sl_xasprintf("/v1/buckets/%s%s", u->bucket, uri_query(u));
    for (;;) {
        long long ps = psize;
        if (limit && (!ps || ps > limit - total))
            ps = limit - total;
        json_t *msg = json_pack("{s:s,s:s,s:s,s:I}", "props", want, "prefix", prefix, "flags", fl, "pagesize",
                                (json_int_t)ps);
        if (start_after && !page)
            json_object_set_new(msg, "start_after", json_string(start_after));
        if (inv_name && *inv_name)
            json_object_set_new(msg, "inv_name", json_string(inv_name));
        json_t *j = cli_list_page(pq, msg, &token, &uuid);
        if (!j) {
            rc = 1;
            break;
        }
        json_t *ents = json_object_get(j, "entries");
        if (!t)
            t = table_new_arr(ncols, (const char *const *)cols);
        size_t i;
        json_t *e;
        int npage = 0;
        json_array_foreach(ents, i, e) {
            const char *nm = json_string_value(json_object_get(e, "name"));
            if ((have_re && regexec(&re, nm ? nm : "", 0, NULL, 0) != 0) ||
                (tnames && !json_object_get(tnames, nm ? nm : "")))
                continue;
            npage++;
            if (count_only)
                continue;
            if (all_entries) {
                json_array_append(all_entries, e);
                continue;
            }
            char *cell[12] = { 0 };
            char sz[32], ncp[16];
            cell[0] = (char *)json_string_value(json_object_get(e, "name"));
            for (int c = 1; c < ncols; c++) {
                const char *h = cols[c];
                if (!strcmp(h, "SIZE")) {
                    const char *s = json_string_value(json_object_get(e, "size"));
                    uint64_t n = s ? strtoull(s, NULL, 10) : 0;
                    long long fl2 = json_integer_value(json_object_get(e, "flags"));
                    if (fl2 & 256)
                        snprintf(sz, sizeof(sz), "-");
                    else if (opt_bool(o, "bytes"))
                        snprintf(sz, sizeof(sz), "%llu", (unsigned long long)n);
                    else
                        sl_format_size(n, sz, sizeof(sz));
                    cell[c] = sz;
                } else if (!strcmp(h, "CHECKSUM")) {
                    cell[c] = (char *)json_string_value(json_object_get(e, "checksum"));
                } else if (!strcmp(h, "ATIME")) {
                    cell[c] = (char *)json_string_value(json_object_get(e, "atime"));
                } else if (!strcmp(h, "VERSION")) {
                    cell[c] = (char *)json_string_value(json_object_get(e, "version"));
                } else if (!strcmp(h, "CACHED")) {
                    cell[c] = json_integer_value(json_object_get(e, "flags")) & 64 ? "yes" : "no";
                } else if (!strcmp(h, "TARGET URL")) {
                    cell[c] = (char *)json_string_value(json_object_get(e, "location"));
                } else if (!strcmp(h, "STATUS")) {
                    /* the low bits of flags: 0 = ok, else misplaced or a copy (AIStore's apc.Loc*) */
                    cell[c] = json_integer_value(json_object_get(e, "flags")) & 31 ? "misplaced" : "ok";
                } else if (!strcmp(h, "COPIES")) {
                    json_int_t nc = json_integer_value(json_object_get(e, "copies"));
                    snprintf(ncp, sizeof(ncp), "%lld", (long long)nc);
                    cell[c] = nc ? ncp : NULL;
                } else if (!strcmp(h, "CUSTOM")) {
                    cell[c] = (char *)json_string_value(json_object_get(e, "custom-md"));
                }
                if (!cell[c])
                    cell[c] = "-";
            }
            table_row_arr(t, (const char *const *)cell);
        }
        total += npage;
        page++;
        json_decref(j);
        if (paged && !cli_json) {
            table_print(t, stdout, !cli_no_headers);
            char cnt[32];
            sl_format_count((uint64_t)npage, cnt, sizeof(cnt));
            if (!cli_no_headers)
                printf("Page %d: %s names\n", page, cnt);
            table_free(t);
            t = NULL;
        }
        if (!token[0] || (limit && total >= limit))
            break;
    }
    if (rc == 0) {
        if (cli_json && count_only) {
            printf("%lld\n", total);
        } else if (cli_json) {
            cli_print_json(all_entries);
        } else if (t && !count_only) {
            table_print(t, stdout, !cli_no_headers);
        }
        if (!cli_json && (count_only || (!cli_no_headers && !no_footers)) && !paged) {
            char cnt[32];
            sl_format_count((uint64_t)total, cnt, sizeof(cnt));
            printf("Listed %s names\n", cnt);
        }
    }
    json_decref(all_entries);
    if (t)
        table_free(t);
    free(pq);
    free(token);
    free(uuid);
    if (have_re)
        regfree(&re);
    json_decref(tnames);
    sl_tmpl_free(tp);
    return rc;
}

int cmd_ls(int argc, char **argv)
{
    struct opts o;
    if (cli_opts(&o, "ls", argc, argv) < 0)
        return 1;
    if (o.argc == 0 || !strcmp(o.argv[0], "ais") || !strcmp(o.argv[0], "ais:") || !strcmp(o.argv[0], "ais://"))
        return list_buckets(&o);
    struct uri u;
    if (uri_parse(o.argv[0], &u, true) < 0)
        return 1;
    int rc = list_objects(&o, &u);
    uri_free(&u);
    return rc;
}

/* The bucket's props (HEAD, Ais-Bucket-Props); NULL when unavailable. */
static json_t *props_fetch(const char *pq)
{
    struct cli_resp r;
    char props[8192];
    json_t *j = NULL;
    cli_req("HEAD", pq, NULL, NULL, 0, &r);
    if (r.status == 200 && cli_resp_header(&r, "Ais-Bucket-Props", props, sizeof(props)))
        j = json_loads(props, 0, NULL);
    cli_resp_free(&r);
    return j;
}

static int bucket_props(struct opts *o)
{
    if (o->argc < 2)
        return cli_usage("bucket props");
    if (!strcmp(o->argv[0], "show") && o->argc > 2) {
        fprintf(stderr, "Error: unexpected argument \"%s\": `shale bucket props show` takes one bucket\n",
                o->argv[2]);
        return 1;
    }
    struct uri u;
    if (uri_parse(o->argv[1], &u, true) < 0)
        return 1;
    struct cli_resp r;
    char *pq = sl_xasprintf("/v1/buckets/%s%s", u.bucket, uri_query(&u));
    int rc = 0;
    if (!strcmp(o->argv[0], "show")) {
        cli_req("HEAD", pq, NULL, NULL, 0, &r);
        char props[8192];
        if (r.status != 200 || !cli_resp_header(&r, "Ais-Bucket-Props", props, sizeof(props))) {
            rc = cli_fail(&r, NULL);
        } else {
            json_error_t je;
            json_t *j = json_loads(props, 0, &je);
            if (cli_json) {
                cli_print_json(j);
            } else {
                struct table *t = table_new(2, "PROPERTY", "VALUE");
                const char *k, *k2;
                json_t *v, *v2;
                json_object_foreach(j, k, v) {
                    if (json_is_object(v)) {
                        json_object_foreach(v, k2, v2) {
                            char key[128];
                            snprintf(key, sizeof(key), "%s.%s", k, k2);
                            char *s = json_is_string(v2) ? sl_xstrdup(json_string_value(v2))
                                                         : json_dumps(v2, JSON_ENCODE_ANY);
                            table_row(t, key, s);
                            free(s);
                        }
                    } else {
                        char *s = json_is_string(v) ? sl_xstrdup(json_string_value(v)) : json_dumps(v, JSON_ENCODE_ANY);
                        table_row(t, k, s);
                        free(s);
                    }
                }
                table_print(t, stdout, !cli_no_headers);
                table_free(t);
            }
            json_decref(j);
        }
    } else if (!strcmp(o->argv[0], "set")) {
        json_t *val = json_object();
        for (int i = 2; i < o->argc; i++) {
            if (props_kv(val, o->argv[i]) < 0) {
                json_decref(val);
                free(pq);
                return 1;
            }
        }
        json_t *before = props_fetch(pq);
        cli_act("PATCH", pq, "set-bprops", "", val, &r);
        if (r.status != 200) {
            rc = cli_fail(&r, NULL);
        } else {
            json_t *after = props_fetch(pq);
            printf("Bucket props successfully updated\n");
            cli_print_changes(before, after, o->argv + 2, o->argc - 2);
            json_decref(after);
        }
        json_decref(before);
    } else if (!strcmp(o->argv[0], "reset")) {
        /* reset-bprops: the cluster's defaults again; the bucket keeps its provider, bid and creation time */
        if (o->argc > 2) {
            fprintf(stderr, "Error: unexpected argument \"%s\": `shale bucket props reset` takes one bucket and "
                            "no KEY=VALUE\n", o->argv[2]);
            free(pq);
            uri_free(&u);
            return 1;
        }
        cli_act("PATCH", pq, "reset-bprops", "", NULL, &r);
        if (r.status != 200)
            rc = cli_fail(&r, NULL);
        else
            printf("Bucket %s props reset to the cluster defaults\n", o->argv[1]);
    } else {
        fprintf(stderr, "Error: unknown props verb \"%s\" (show, set, reset)\n", o->argv[0]);
        free(pq);
        uri_free(&u);
        return 1;
    }
    cli_resp_free(&r);
    free(pq);
    uri_free(&u);
    return rc;
}

/* shale bucket mv ais://SRC ais://DST [--wait]: move-bck */
static int bucket_mv(int argc, char **argv)
{
    struct opts o;
    if (cli_opts_min(&o, "bucket mv", argc, argv, 2))
        return 1;
    int64_t tmo;
    struct uri src, dst;
    if (cli_timeout(&o, &tmo) < 0 || uri_parse(o.argv[0], &src, true) < 0)
        return 1;
    if (uri_parse(o.argv[1], &dst, true) < 0) {
        uri_free(&src);
        return 1;
    }
    int rc = 1;
    if ((src.obj && *src.obj) || (dst.obj && *dst.obj)) {
        fprintf(stderr, "Error: `shale bucket mv` renames whole buckets: give ais://SRC ais://DST without object "
                        "names\n");
        goto out;
    }
    char *eb = sl_url_encode_path(src.bucket, strlen(src.bucket)), *to = sl_xasprintf("ais/@#/%s/", dst.bucket);
    char *q = sl_url_encode_query(to);
    char *pq = sl_xasprintf("/v1/buckets/%s?provider=%s&bck_to=%s", eb, src.provider, q);
    char *id = cli_act_id("POST", pq, "move-bck", NULL, "rename the bucket");
    free(eb);
    free(to);
    free(q);
    free(pq);
    if (!id)
        goto out;
    printf("%s\n", id);
    if (opt_bool(&o, "wait")) {
        rc = cli_job_wait(id, tmo, opt_bool(&o, "progress"));
        /* the copy is done; the gateway then drops the old name */
        char *hq = sl_xasprintf("/v1/buckets/%s?provider=%s", src.bucket, src.provider);
        for (int i = 0; rc == 0 && i < 300; i++) {
            struct cli_resp r;
            cli_req("HEAD", hq, NULL, NULL, 0, &r);
            long st = r.status;
            cli_resp_free(&r);
            if (st == 404)
                break;
            usleep(100000);
        }
        free(hq);
        if (rc == 0)
            printf("ais://%s is now ais://%s\n", src.bucket, dst.bucket);
    } else {
        printf("Renaming ais://%s to ais://%s (follow it with `shale job wait %s`)\n", src.bucket, dst.bucket, id);
        rc = 0;
    }
    free(id);
out:
    uri_free(&src);
    uri_free(&dst);
    return rc;
}

int cmd_bucket(int argc, char **argv)
{
    if (argc < 1)
        return cli_usage("bucket");
    struct opts o;
    const char *verb = argv[0];
    if (!strcmp(verb, "ls"))
        return cmd_ls(argc - 1, argv + 1);
    if (!strcmp(verb, "cp"))
        return cli_cp("bucket cp", argc - 1, argv + 1);
    if (!strcmp(verb, "mv"))
        return bucket_mv(argc - 1, argv + 1);
    if (!strcmp(verb, "evict"))
        return cmd_evict(argc - 1, argv + 1);
    if (!strcmp(verb, "lru"))
        return cli_bucket_lru(argc - 1, argv + 1);
    if (!strcmp(verb, "summary")) {
        struct uri u;
        if (cli_opts_min(&o, "bucket summary", argc - 1, argv + 1, 1))
            return 1;
        if (uri_parse(o.argv[0], &u, true) < 0)
            return 1;
        int rc = bucket_summary(&o, &u);
        uri_free(&u);
        return rc;
    }
    static const char *const verbs[] = { "create", "rm", "props" };
    for (size_t i = 0; i < SL_ARRAY_SIZE(verbs); i++) {
        if (strcmp(verb, verbs[i]))
            continue;
        char path[32];
        snprintf(path, sizeof(path), "bucket %s", verb);
        if (cli_opts(&o, path, argc - 1, argv + 1) < 0)
            return 1;
        return i == 0 ? bucket_create(&o) : i == 1 ? bucket_rm(&o) : bucket_props(&o);
    }
    fprintf(stderr, "Error: unknown command \"bucket %s\" (create, ls, rm, props, lru, summary, cp, mv, evict)\n", verb);
    return 1;
}

int cmd_create(int argc, char **argv)
{
    struct opts o;
    if (cli_opts(&o, "create", argc, argv) < 0)
        return 1;
    return bucket_create(&o);
}

int cmd_rmb(int argc, char **argv)
{
    struct opts o;
    if (cli_opts(&o, "rmb", argc, argv) < 0)
        return 1;
    return bucket_rm(&o);
}

/* ---- nbi create | rm, and `show nbi` (called by show.c) ---- */

static int nbi_create(int argc, char **argv)
{
    struct opts o;
    if (cli_opts_min(&o, "nbi create", argc, argv, 1))
        return 1;
    int64_t tmo;
    struct uri u;
    if (cli_timeout(&o, &tmo) < 0 || uri_parse(o.argv[0], &u, true) < 0)
        return 1;
    json_t *v = json_object();
    if (opt_str(&o, "inv-name"))
        json_object_set_new(v, "name", json_string(opt_str(&o, "inv-name")));
    if (opt_str(&o, "prefix"))
        json_object_set_new(v, "prefix", json_string(opt_str(&o, "prefix")));
    if (opt_bool(&o, "force"))
        json_object_set_new(v, "force", json_true());
    char *eb = sl_url_encode_path(u.bucket, strlen(u.bucket));
    char *pq = sl_xasprintf("/v1/buckets/%s%s", eb, uri_query(&u));
    free(eb);
    char *id = cli_act_id("POST", pq, "create-inventory", v, "create the inventory");
    free(pq);
    int rc = 1;
    if (id) {
        if (opt_bool(&o, "wait")) {
            rc = cli_job_wait(id, tmo, opt_bool(&o, "progress"));
            if (rc == 0)
                printf("Created the inventory of %s://%s (job %s); list from it with `shale ls %s://%s --inventory`\n",
                       sl_provider_scheme(u.provider), u.bucket, id, sl_provider_scheme(u.provider), u.bucket);
        } else {
            cli_job_started(id);
            rc = 0;
        }
        free(id);
    }
    uri_free(&u);
    return rc;
}

static int nbi_rm(int argc, char **argv)
{
    struct opts o;
    if (cli_opts_min(&o, "nbi rm", argc, argv, 1))
        return 1;
    struct uri u;
    if (uri_parse(o.argv[0], &u, true) < 0)
        return 1;
    char *eb = sl_url_encode_path(u.bucket, strlen(u.bucket));
    char *pq = sl_xasprintf("/v1/buckets/%s%s", eb, uri_query(&u));
    free(eb);
    const char *nm = opt_str(&o, "inv-name");
    struct cli_resp r;
    cli_act("DELETE", pq, "destroy-inventory", nm ? nm : "", NULL, &r);
    free(pq);
    int rc = r.status == 200 ? 0 : cli_fail(&r, NULL);
    if (!rc)
        printf("Removed the inventory%s%s%s of %s://%s\n", nm ? " \"" : "", nm ? nm : "", nm ? "\"" : "",
               sl_provider_scheme(u.provider), u.bucket);
    cli_resp_free(&r);
    uri_free(&u);
    return rc;
}

int cli_show_nbi(int argc, char **argv)
{
    struct opts o;
    if (cli_opts_min(&o, "nbi show", argc, argv, 1)) /* (`show nbi`: an alias show.c's owner adds) */
        return 1;
    struct uri u;
    if (uri_parse(o.argv[0], &u, true) < 0)
        return 1;
    char *eb = sl_url_encode_path(u.bucket, strlen(u.bucket));
    char *pq = sl_xasprintf("/v1/buckets/%s%s", eb, uri_query(&u));
    free(eb);
    const char *nm = opt_str(&o, "inv-name");
    struct cli_resp r;
    cli_act("GET", pq, "show-inventory", nm ? nm : "", NULL, &r);
    free(pq);
    int rc = 1;
    json_t *j = r.status == 200 ? cli_resp_json(&r) : NULL;
    if (r.status != 200) {
        rc = cli_fail(&r, NULL);
    } else if (cli_json) {
        cli_print_json(j);
        rc = 0;
    } else if (!json_object_size(j)) {
        printf("%s://%s has no inventory (make one with `shale nbi create %s`)\n", sl_provider_scheme(u.provider),
               u.bucket, o.argv[0]);
        rc = 0;
    } else {
        struct table *t = table_new(5, "NAME", "PREFIX", "OBJECTS", "SIZE", "FINISHED");
        const char *k;
        json_t *e;
        json_object_foreach(j, k, e) {
            char n[32], sz[32], fin[64];
            snprintf(n, sizeof(n), "%lld", (long long)json_integer_value(json_object_get(e, "ntotal")));
            sl_format_size((uint64_t)json_integer_value(json_object_get(e, "size")), sz, sizeof(sz));
            long long fi = (long long)json_integer_value(json_object_get(e, "finished"));
            if (fi)
                sl_format_gotime(fi, "02 Jan 06 15:04:05 MST", fin, sizeof(fin));
            else
                snprintf(fin, sizeof(fin), "-");
            const char *pf = json_string_value(json_object_get(e, "prefix"));
            table_row(t, k, pf && *pf ? pf : "-", n, sz, fin);
        }
        table_print(t, stdout, !cli_no_headers);
        table_free(t);
        rc = 0;
    }
    json_decref(j);
    cli_resp_free(&r);
    uri_free(&u);
    return rc;
}

int cmd_nbi(int argc, char **argv)
{
    if (argc < 1)
        return cli_usage("nbi");
    if (!strcmp(argv[0], "create"))
        return nbi_create(argc - 1, argv + 1);
    if (!strcmp(argv[0], "rm"))
        return nbi_rm(argc - 1, argv + 1);
    if (!strcmp(argv[0], "show"))
        return cli_show_nbi(argc - 1, argv + 1);
    fprintf(stderr, "Error: unknown command \"nbi %s\" (create, rm, show)\n", argv[0]);
    return 1;
}
