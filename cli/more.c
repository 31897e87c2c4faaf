/* SPDX-License-Identifier: MIT
 * more.c: more of the commands an `ais` user reaches for (issue 38):
 * object promote, cluster reset-stats|download-logs|shutdown|
 * reload-backend-creds, and the small helpers of the advanced, alias, log
 * and tls groups.
 */
#include "cli.h"
#include "jsonx.h"
#include "meta.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* NODE as p[ID], t[ID] or ID -> ID (new) */
static char *more_node_id(const char *s)
{
    if ((s[0] == 'p' || s[0] == 't') && s[1] == '[') {
        size_t n = strcspn(s + 2, "]");
        return sl_xasprintf("%.*s", (int)n, s + 2);
    }
    return sl_xstrdup(s);
}

/* shale object promote PATH ais://B[/PREFIX] [--target T] [--recursive] [--overwrite-dst] [--delete-src]
 * [--not-file-share] [--wait]: the promote action (jobs/promote.c) on the targets' files under promote.dir */
int cli_object_promote(int argc, char **argv)
{
    struct opts o;
    if (cli_opts_min(&o, "object promote", argc, argv, 2))
        return 1;
    const char *src = o.argv[0];
    if (src[0] != '/') {
        fprintf(stderr, "Error: PATH \"%s\" must be absolute: a file or directory on the targets, inside their "
                        "promote.dir (`shale config cluster promote.dir` shows it)\n", src);
        return 1;
    }
    struct uri u;
    if (uri_parse(o.argv[1], &u, true) < 0)
        return 1;
    int64_t tmo;
    if (cli_timeout(&o, &tmo) < 0) {
        uri_free(&u);
        return 1;
    }
    json_t *v = json_pack("{s:s,s:s,s:b,s:b,s:b,s:b}", "src", src, "obj", u.obj ? u.obj : "", "rcr",
                          opt_bool(&o, "recursive"), "ovw", opt_bool(&o, "overwrite-dst"), "dls",
                          opt_bool(&o, "delete-src"), "notshr", opt_bool(&o, "not-file-share"));
    const char *t = opt_str(&o, "target");
    if (t) {
        if (!*t) {
            fprintf(stderr, "Error: --target: give a target id (t[ID] or ID; `shale show cluster` lists them)\n");
            json_decref(v);
            uri_free(&u);
            return 1;
        }
        char *id = more_node_id(t);
        json_object_set_new(v, "tid", json_string(id));
        free(id);
    }
    char *pq = sl_xasprintf("/v1/objects/%s%s", u.bucket, uri_query(&u));
    json_t *m = json_pack("{s:s,s:s,s:o}", "action", "promote", "name", src, "value", v);
    size_t len;
    char *body = sl_json_dump(m, 0, &len);
    json_decref(m);
    struct cli_resp r;
    cli_req("POST", pq, "application/json", body, len, &r);
    free(body);
    free(pq);
    int rc = 0;
    if (r.status != 200) {
        rc = cli_fail(&r, "promote");
    } else {
        char *id = sl_xstrndup(r.body.p ? r.body.p : "", r.body.len);
        if (!opt_bool(&o, "wait")) {
            cli_job_started(id);
        } else {
            printf("%s\n", id);
            fflush(stdout);
            uint64_t failed = 0;
            size_t shown = 0;
            rc = cli_job_report(id, tmo, opt_bool(&o, "progress"), false, "Promoted", "into the bucket", NULL,
                                &failed, &shown);
            if (!rc && failed)
                rc = 1;
        }
        free(id);
    }
    cli_resp_free(&r);
    uri_free(&u);
    return rc;
}

/* cluster reset-stats [NODE] [--errors-only]: PUT /v1/cluster reset-stats, which the gateway sends to every node
 * of the map (or the one named) */
static int cluster_reset_stats(int argc, char **argv)
{
    struct opts o;
    if (cli_opts(&o, "cluster reset-stats", argc, argv) < 0)
        return 1;
    char *want = o.argc ? more_node_id(o.argv[0]) : NULL;
    json_t *v = json_pack("{s:s,s:b}", "sid", want ? want : "", "errors_only", opt_bool(&o, "errors-only"));
    struct cli_resp r;
    cli_act("PUT", "/v1/cluster", "reset-stats", NULL, v, &r);
    int rc = 0;
    if (r.status != 200) {
        rc = cli_fail(&r, NULL);
    } else {
        json_t *j = cli_resp_json(&r);
        const char *id;
        json_t *x;
        json_object_foreach(j, id, x)
            printf("%s: %s reset to 0\n", id, opt_bool(&o, "errors-only") ? "error counters" : "counters");
        json_decref(j);
    }
    cli_resp_free(&r);
    free(want);
    return rc;
}

/* node id's log through the gateway (GET /v1/reverse/daemon?what=log, Ais-Node-Id): the current one, or with all
 * every log file as one .tar.gz, saved in path ("-": stdout); 0, or 1 after the error */
static int fetch_log(const char *id, bool all, const char *path)
{
    char *h = sl_xasprintf("Ais-Node-Id: %s", id);
    const char *hd[] = { h, NULL };
    struct cli_resp r;
    cli_req_h("GET", all ? "/v1/reverse/daemon?what=log&all=true" : "/v1/reverse/daemon?what=log", hd, NULL, 0, &r);
    free(h);
    int rc = 0;
    if (r.status != 200) {
        char what[160];
        snprintf(what, sizeof(what), "log of %s", id);
        rc = cli_fail(&r, what);
    } else if (!strcmp(path, "-")) {
        fwrite(r.body.p ? r.body.p : "", 1, r.body.len, stdout);
    } else {
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(r.body.p ? r.body.p : "", 1, r.body.len, f) != r.body.len || fclose(f) != 0) {
            fprintf(stderr, "Error: cannot write %s (%s): the log of %s was not saved\n", path, strerror(errno), id);
            if (f)
                unlink(path);
            rc = 1;
        } else {
            printf("%s: %s (%zu bytes)\n", id, path, r.body.len);
        }
    }
    cli_resp_free(&r);
    return rc;
}

/* cluster download-logs [NODE] [--dir D]: every node's logs (or NODE's), one ID.tar.gz each in D */
static int cluster_download_logs(int argc, char **argv)
{
    struct opts o;
    if (cli_opts(&o, "cluster download-logs", argc, argv) < 0)
        return 1;
    const char *dir = opt_str(&o, "dir") ? opt_str(&o, "dir") : ".";
    struct stat st;
    if (!*dir || stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "Error: --dir \"%s\": not a directory (%s); create it first\n", dir,
                *dir ? strerror(errno ? errno : ENOTDIR) : "empty");
        return 1;
    }
    json_t *smap;
    if (cli_get_json("/v1/daemon?what=smap", "cluster map", &smap))
        return 1;
    char *want = o.argc ? more_node_id(o.argv[0]) : NULL;
    int rc = 0, n = 0;
    static const char *const maps[] = { "pmap", "tmap" };
    for (int m = 0; m < 2; m++) {
        const char *id;
        json_t *sn;
        json_object_foreach(json_object_get(smap, maps[m]), id, sn) {
            if (want && strcmp(want, id))
                continue;
            n++;
            char *path = sl_xasprintf("%s/%s.tar.gz", dir, id);
            rc |= fetch_log(id, true, path);
            free(path);
        }
    }
    if (want && !n) {
        fprintf(stderr, "Error: node \"%s\" is not in the cluster map (`shale show cluster` lists the nodes)\n",
                want);
        rc = 1;
    }
    free(want);
    json_decref(smap);
    return rc;
}

/* log get NODE [FILE] [--all]: the node's current log (or all its logs as a .tar.gz) into FILE */
int cli_log_get(struct opts *o)
{
    if (o->argc < 1)
        return cli_usage("log get");
    char *id = more_node_id(o->argv[0]);
    bool all = opt_bool(o, "all");
    char *path = o->argc > 1 ? sl_xstrdup(o->argv[1]) : sl_xasprintf("%s.%s", id, all ? "tar.gz" : "log");
    int rc = fetch_log(id, all, path);
    free(path);
    free(id);
    return rc;
}

/* cluster shutdown [-y]: PUT /v1/cluster shutdown, after asking on a terminal (the targets go first, then the
 * gateways, the one asked last) */
static int cluster_shutdown(int argc, char **argv)
{
    struct opts o;
    if (cli_opts(&o, "cluster shutdown", argc, argv) < 0)
        return 1;
    if (!opt_bool(&o, "yes")) {
        if (!isatty(0)) {
            fprintf(stderr, "Error: `shale cluster shutdown` stops every node of the cluster and asks for "
                            "confirmation, but stdin is not a terminal: add -y (--yes) to shut down without asking\n");
            return 1;
        }
        printf("Shut down the whole cluster at %s (every target, then every gateway)? [Y/N]: ", cli_endpoint());
        fflush(stdout);
        char ans[16] = "";
        if (!fgets(ans, sizeof(ans), stdin) || (ans[0] != 'y' && ans[0] != 'Y')) {
            printf("Operation canceled\n");
            return 1;
        }
    }
    struct cli_resp r;
    cli_act("PUT", "/v1/cluster", "shutdown", NULL, NULL, &r);
    int rc = 0;
    if (r.status != 200) {
        rc = cli_fail(&r, "cluster shutdown");
    } else {
        json_t *j = cli_resp_json(&r);
        const char *id;
        json_t *x;
        json_object_foreach(j, id, x) {
            const char *e = json_string_value(x);
            if (e && *e) {
                printf("%s: not shut down: %s\n", id, e);
                rc = 1;
            } else {
                printf("%s: shutting down\n", id);
            }
        }
        json_decref(j);
        if (!rc)
            printf("Cluster shutdown: every node was asked to stop\n");
    }
    cli_resp_free(&r);
    return rc;
}

/* cluster reload-backend-creds: PUT /v1/cluster reload-creds; prints what the gateway says */
static int cluster_reload_creds(int argc, char **argv)
{
    struct opts o;
    if (cli_opts(&o, "cluster reload-backend-creds", argc, argv) < 0)
        return 1;
    struct cli_resp r;
    cli_act("PUT", "/v1/cluster", "reload-creds", NULL, NULL, &r);
    int rc = 0;
    if (r.status != 200)
        rc = cli_fail(&r, "reload-backend-creds");
    else
        printf("Backend credentials: %.*s\n", (int)r.body.len, r.body.p ? r.body.p : "");
    cli_resp_free(&r);
    return rc;
}

/* the cluster verbs of this file: -1 when verb is none of them */
int cli_cluster_more(const char *verb, int argc, char **argv)
{
    if (!strcmp(verb, "reset-stats"))
        return cluster_reset_stats(argc, argv);
    if (!strcmp(verb, "download-logs"))
        return cluster_download_logs(argc, argv);
    if (!strcmp(verb, "shutdown"))
        return cluster_shutdown(argc, argv);
    if (!strcmp(verb, "reload-backend-creds"))
        return cluster_reload_creds(argc, argv);
    return -1;
}

/* storage mountpath fshc TARGET MOUNTPATH: the target's filesystem health check of one mountpath (PUT
 * /v1/reverse/daemon/mountpaths {"action": "fshc"}); 1 when it is not healthy */
int cli_mpath_fshc(int argc, char **argv)
{
    struct opts o;
    if (cli_opts(&o, "storage mountpath fshc", argc, argv) < 0)
        return 1;
    if (o.argc < 2) {
        fprintf(stderr, "Error: `shale storage mountpath fshc` needs TARGET and MOUNTPATH%s (e.g. `shale storage "
                        "mountpath fshc t[abc123] /data/disk3`)\n", o.argc ? "; MOUNTPATH is missing" : "");
        return 1;
    }
    if (o.argv[1][0] != '/') {
        fprintf(stderr, "Error: MOUNTPATH \"%s\" is not an absolute path: a mountpath is a directory such as "
                        "/data/disk3, as the target sees it (`shale storage mountpath show`)\n", o.argv[1]);
        return 1;
    }
    char *id = more_node_id(o.argv[0]);
    json_t *smap;
    if (cli_get_json("/v1/daemon?what=smap", "cluster map", &smap)) {
        free(id);
        return 1;
    }
    bool gw = json_object_get(json_object_get(smap, "pmap"), id) != NULL,
         tg = json_object_get(json_object_get(smap, "tmap"), id) != NULL;
    json_decref(smap);
    if (!tg) {
        fprintf(stderr, "Error: TARGET %s %s; name a target (`shale show cluster target`)\n", o.argv[0],
                gw ? "is a gateway, which has no mountpaths" : "is not in the cluster map");
        free(id);
        return 1;
    }
    char *h = sl_xasprintf("Ais-Node-Id: %s", id);
    const char *hd[] = { h, "Content-Type: application/json", NULL };
    json_t *msg = json_pack("{s:s,s:s}", "action", "fshc", "value", o.argv[1]);
    size_t len;
    char *body = sl_json_dump(msg, 0, &len);
    json_decref(msg);
    struct cli_resp r;
    cli_req_h("PUT", "/v1/reverse/daemon/mountpaths", hd, body, len, &r);
    free(body);
    free(h);
    int rc = 0;
    if (r.status != 200) {
        rc = cli_fail(&r, "fshc");
    } else {
        json_t *j = cli_resp_json(&r);
        bool ok = json_is_true(json_object_get(j, "healthy"));
        if (cli_json) {
            cli_print_json(j);
        } else {
            printf("t[%s] %s (%s): %s\n", id, sl_json_str(j, "mountpath", o.argv[1]), sl_json_str(j, "state", "?"),
                   ok ? "healthy" : "NOT healthy");
            static const char *const names[][2] = { { "daemon_id", "its .shale/daemon_id names this target" },
                                                    { "probe", "a probe file written, fsync'ed and read back" },
                                                    { "statvfs", "the filesystem answers statvfs" } };
            json_t *checks = json_object_get(j, "checks");
            for (size_t i = 0; i < SL_ARRAY_SIZE(names); i++) {
                json_t *c = json_object_get(checks, names[i][0]);
                const char *e = sl_json_str(c, "error", NULL);
                printf("  %-10s %s: %s\n", names[i][0], json_is_true(json_object_get(c, "ok")) ? "ok" : "FAILED",
                       e ? e : names[i][1]);
            }
        }
        if (!ok)
            rc = 1;
        json_decref(j);
    }
    cli_resp_free(&r);
    free(id);
    return rc;
}

/* a number in [0, n) (a script's pick, not a secret) */
static size_t more_random(size_t n)
{
    srandom((unsigned)((uint64_t)sl_now_ns() ^ (uint64_t)getpid()));
    return (size_t)random() % n;
}

/* advanced random-node [--type proxy|target]: the id of one node picked at random (a target by default) */
int cli_random_node(struct opts *o)
{
    const char *type = opt_str(o, "type") ? opt_str(o, "type") : "target";
    const char *map = !strcmp(type, "target") ? "tmap" : !strcmp(type, "proxy") || !strcmp(type, "gateway") ? "pmap"
                                                                                                            : NULL;
    if (!map) {
        fprintf(stderr, "Error: --type \"%s\": proxy (a gateway) or target\n", type);
        return 1;
    }
    json_t *smap;
    if (cli_get_json("/v1/daemon?what=smap", "cluster map", &smap))
        return 1;
    json_t *m = json_object_get(smap, map);
    size_t n = json_object_size(m), pick = 0;
    int rc = 0;
    if (!n) {
        fprintf(stderr, "Error: the cluster map has no %s\n", map[0] == 't' ? "targets" : "gateways");
        rc = 1;
    } else {
        pick = more_random(n);
        const char *id;
        json_t *sn;
        size_t i = 0;
        json_object_foreach(m, id, sn) {
            if (i++ == pick)
                printf("%s\n", id);
        }
    }
    json_decref(smap);
    return rc;
}

/* advanced random-mountpath TARGET: one of the target's usable mountpaths, picked at random */
int cli_random_mountpath(struct opts *o)
{
    if (o->argc < 1)
        return cli_usage("advanced random-mountpath");
    char *id = more_node_id(o->argv[0]);
    char *h = sl_xasprintf("Ais-Node-Id: %s", id);
    const char *hd[] = { h, NULL };
    struct cli_resp r;
    cli_req_h("GET", "/v1/reverse/daemon?what=mountpaths", hd, NULL, 0, &r);
    free(h);
    int rc = 0;
    if (r.status != 200) {
        rc = cli_fail(&r, "random-mountpath");
    } else {
        json_t *j = cli_resp_json(&r);
        json_t *av = json_object_get(j, "available");
        size_t n = json_array_size(av);
        if (!n) {
            fprintf(stderr, "Error: t[%s] has no usable mountpath (`shale storage mountpath show %s`)\n", id, id);
            rc = 1;
        } else {
            size_t pick = more_random(n);
            printf("%s\n", json_string_value(json_array_get(av, pick)));
        }
        json_decref(j);
    }
    cli_resp_free(&r);
    free(id);
    return rc;
}

/* the bucket's lru.enabled (HEAD, Ais-Bucket-Props): 1, 0, or -1 after the error */
static int lru_state(const char *pq)
{
    struct cli_resp r;
    cli_req("HEAD", pq, NULL, NULL, 0, &r);
    char props[8192];
    int st = -1;
    if (r.status != 200 || !cli_resp_header(&r, "Ais-Bucket-Props", props, sizeof(props))) {
        cli_fail(&r, NULL);
    } else {
        json_t *j = json_loads(props, 0, NULL);
        json_t *en = json_object_get(json_object_get(j, "lru"), "enabled");
        st = json_is_true(en) ? 1 : 0;
        json_decref(j);
    }
    cli_resp_free(&r);
    return st;
}

/* bucket lru ais://B [--enable|--disable]: the bucket's lru.enabled (whether LRU eviction may remove its objects
 * when the disks fill), printed, or set first */
int cli_bucket_lru(int argc, char **argv)
{
    struct opts o;
    if (cli_opts_min(&o, "bucket lru", argc, argv, 1))
        return 1;
    bool en = opt_bool(&o, "enable"), dis = opt_bool(&o, "disable");
    if (en && dis) {
        fprintf(stderr, "Error: --enable and --disable: give one of them (or neither, to see the state)\n");
        return 1;
    }
    struct uri u;
    if (uri_parse(o.argv[0], &u, true) < 0)
        return 1;
    int rc = 1;
    if (u.obj && u.obj[0]) {
        fprintf(stderr, "Error: \"%s\": name a bucket (ais://BUCKET), not an object\n", o.argv[0]);
        goto out;
    }
    char *pq = sl_xasprintf("/v1/buckets/%s%s", u.bucket, uri_query(&u));
    if (en || dis) {
        struct cli_resp r;
        cli_act("PATCH", pq, "set-bprops", "", json_pack("{s:{s:b}}", "lru", "enabled", en), &r);
        int bad = r.status != 200;
        if (bad)
            cli_fail(&r, NULL);
        cli_resp_free(&r);
        if (bad) {
            free(pq);
            goto out;
        }
    }
    int st = lru_state(pq);
    free(pq);
    if (st >= 0) {
        printf("%s://%s: LRU eviction %s%s\n", sl_provider_scheme(u.provider), u.bucket, st ? "enabled" : "disabled",
               en || dis ? " (lru.enabled set)" : "");
        rc = 0;
    }
out:
    uri_free(&u);
    return rc;
}
