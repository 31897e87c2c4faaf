/* SPDX-License-Identifier: MIT
 * advanced.c: shale advanced resilver|check-lock|rotate-logs|remove-from-smap|
 * enable-backend|disable-backend (ais's `advanced` commands for operators).
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* advanced resilver [TARGET] [--wait]: the same job as `job start resilver` */
static int adv_resilver(struct opts *o)
{
    return cli_resilver_start(o, o->argc ? o->argv[0] : NULL);
}

/* advanced check-lock ais://B/O: whether the object's name lock is held now */
static int adv_check_lock(struct opts *o)
{
    if (o->argc < 1)
        return cli_usage("advanced check-lock");
    struct uri u;
    if (uri_parse(o->argv[0], &u, true) < 0)
        return 1;
    if (!u.obj || !u.obj[0]) {
        fprintf(stderr, "Error: \"%s\": name an object (ais://BUCKET/OBJECT), not a bucket\n", o->argv[0]);
        uri_free(&u);
        return 1;
    }
    char *p = uri_obj_path(&u, u.obj);
    char pq[8192];
    snprintf(pq, sizeof(pq), "%s%s", p, uri_query(&u));
    free(p);
    struct cli_resp r;
    cli_act("POST", pq, "check-lock", NULL, NULL, &r);
    int rc = 0;
    if (r.status == 200)
        printf("%s://%s/%s is not locked\n", u.provider, u.bucket, u.obj);
    else
        rc = cli_fail(&r, "check-lock");
    cli_resp_free(&r);
    uri_free(&u);
    return rc;
}

/* NODE as p[ID], t[ID] or ID -> ID (new) */
static char *node_id(const char *s)
{
    if ((s[0] == 'p' || s[0] == 't') && s[1] == '[') {
        size_t n = strcspn(s + 2, "]");
        return sl_xasprintf("%.*s", (int)n, s + 2);
    }
    return sl_xstrdup(s);
}

/* advanced rotate-logs [NODE]: PUT /v1/cluster rotate-logs, which the
 * gateway sends to every node of the map (or to the one named) */
static int adv_rotate_logs(struct opts *o)
{
    char *want = o->argc ? node_id(o->argv[0]) : NULL;
    struct cli_resp r;
    cli_act("PUT", "/v1/cluster", "rotate-logs", NULL, want ? json_pack("{s:s}", "sid", want) : NULL, &r);
    free(want);
    if (r.status != 200) {
        int rc = cli_fail(&r, NULL);
        cli_resp_free(&r);
        return rc;
    }
    json_t *j = cli_resp_json(&r);
    cli_resp_free(&r);
    const char *id;
    json_t *v;
    json_object_foreach(j, id, v) {
        const char *f = json_string_value(v);
        if (f && *f)
            printf("%s: rotated %s (the old log is %s.1)\n", id, f, f);
        else
            printf("%s: logs to stderr, no log file to rotate\n", id);
    }
    json_decref(j);
    return 0;
}

/* advanced remove-from-smap NODE: PUT /v1/cluster rm-unsafe {"sid"} (ais's
 * api.RemoveNodeUnsafe): out of the cluster map at once, no rebalance */
static int adv_rm_from_smap(struct opts *o)
{
    if (o->argc < 1)
        return cli_usage("advanced remove-from-smap");
    char *id = node_id(o->argv[0]);
    struct cli_resp r;
    cli_act("PUT", "/v1/cluster", "rm-unsafe", NULL, json_pack("{s:s,s:b}", "sid", id, "skip_rebalance", 1), &r);
    int rc = 0;
    if (r.status == 200)
        printf("Node %s removed from the cluster map (no rebalance; it keeps running and joins again when "
               "restarted)\n", id);
    else
        rc = cli_fail(&r, "remove-from-smap");
    cli_resp_free(&r);
    free(id);
    return rc;
}

/* advanced enable-backend|disable-backend PROVIDER [NODE]: PUT
 * /v1/cluster/{enable,disable}-bend/PROVIDER[/NODE] (AIStore's routes); the
 * targets (or the one named) switch the backend in two phases */
static int adv_bend(struct opts *o, bool on)
{
    const char *path = on ? "advanced enable-backend" : "advanced disable-backend";
    if (o->argc < 1)
        return cli_usage(path);
    char prov[32];
    size_t n = strcspn(o->argv[0], ":/");
    if (!n || n >= sizeof(prov) || (o->argv[0][n] && strcmp(o->argv[0] + n, "://"))) {
        fprintf(stderr, "Error: PROVIDER \"%s\": a cloud provider such as aws (s3), gcp (gs), azure (az), oci\n",
                o->argv[0]);
        return 1;
    }
    snprintf(prov, sizeof(prov), "%.*s", (int)n, o->argv[0]);
    char *id = o->argc > 1 ? node_id(o->argv[1]) : NULL;
    char pq[256];
    snprintf(pq, sizeof(pq), "/v1/cluster/%s/%s%s%s", on ? "enable-bend" : "disable-bend", prov, id ? "/" : "",
             id ? id : "");
    struct cli_resp r;
    cli_req("PUT", pq, NULL, NULL, 0, &r);
    int rc = 0;
    if (r.status == 200)
        printf("Backend %s %s on %s%s\n", prov, on ? "enabled" : "disabled", id ? "target " : "every target",
               id ? id : "");
    else
        rc = cli_fail(&r, on ? "enable-backend" : "disable-backend");
    cli_resp_free(&r);
    free(id);
    return rc;
}

static int adv_enable_bend(struct opts *o)
{
    return adv_bend(o, true);
}

static int adv_disable_bend(struct opts *o)
{
    return adv_bend(o, false);
}

int cmd_advanced(int argc, char **argv)
{
    static const struct cli_verb verbs[] = { { "resilver", adv_resilver, NULL },
                                             { "check-lock", adv_check_lock, NULL },
                                             { "rotate-logs", adv_rotate_logs, NULL },
                                             { "remove-from-smap", adv_rm_from_smap, NULL },
                                             { "enable-backend", adv_enable_bend, NULL },
                                             { "disable-backend", adv_disable_bend, NULL },
                                             { "random-node", cli_random_node, NULL },
                                             { "random-mountpath", cli_random_mountpath, NULL } };
    return cli_run_verb("advanced", verbs, SL_ARRAY_SIZE(verbs), argc, argv, false);
}

/* shale scrub [ais://B ...] [--wait] [--progress] */
int cmd_scrub(int argc, char **argv)
{
    struct opts o;
    if (cli_opts(&o, "scrub", argc, argv) < 0)
        return 1;
    return cli_scrub_start(&o);
}
