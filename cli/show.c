/* SPDX-License-Identifier: MIT
 * show.c: `shale show cluster [proxy|target|smap|bmd|config|stats] [NODE]`:
 * proxy and target tables plus a summary, and the sub-views, as
 * `ais show cluster` prints them. NODE is p[ID], t[ID] or ID.
 */
#include "cli.h"
#include "jsonx.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* GET pq ("/v1/daemon?what=...") of node id at url: through the gateway
 * (GET /v1/reverse/daemon, header Ais-Node-Id), which reaches targets that
 * take no direct client requests (auth on) and carries the token */
static json_t *node_get_id(const char *id, const char *url, const char *pq)
{
    struct cli_resp r;
    int rc;
    if (id && sl_has_prefix(pq, "/v1/daemon?") && strcmp(url, cli_endpoint())) {
        char *h = sl_xasprintf("Ais-Node-Id: %s", id), *rp = sl_xasprintf("/v1/reverse%s", pq + 3);
        const char *hd[] = { h, NULL };
        rc = cli_req_h("GET", rp, hd, NULL, 0, &r);
        free(h);
        free(rp);
    } else {
        rc = cli_get_at(url, pq, NULL, &r);
    }
    json_t *j = rc == 0 && r.status == 200 ? cli_resp_json(&r) : NULL;
    cli_resp_free(&r);
    return j;
}

static json_t *node_status(const char *id, const char *url)
{
    return node_get_id(id, url, "/v1/daemon?what=node_status");
}

static void fmt_uptime(int64_t ns, char *out, size_t n)
{
    long long s = ns / 1000000000LL;
    if (s < 60)
        snprintf(out, n, "%llds", s);
    else if (s < 3600)
        snprintf(out, n, "%lldm%llds", s / 60, s % 60);
    else
        snprintf(out, n, "%lldh%lldm", s / 3600, (s % 3600) / 60);
}

static uint64_t ju64(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    if (json_is_integer(v))
        return (uint64_t)json_integer_value(v);
    if (json_is_real(v))
        return (uint64_t)json_real_value(v);
    if (json_is_string(v))
        return strtoull(json_string_value(v), NULL, 10);
    return 0;
}

/* CPU(%): the node's sampled utilisation (cpu_util) when it reports one,
 * else the 1-minute load average over the number of CPUs */
static void cpu_col(json_t *mc, char *out, size_t n)
{
    json_t *u = json_object_get(mc, "cpu_util");
    double pct;
    if (json_is_number(u)) {
        pct = json_number_value(u);
    } else {
        double cpus = json_number_value(json_object_get(mc, "cpus"));
        pct = 100.0 * json_number_value(json_object_get(mc, "load_avg")) / (cpus > 0 ? cpus : 1);
        if (pct > 100)
            pct = 100;
    }
    snprintf(out, n, "%.2f", pct);
}

static void mem_cols(json_t *st, char *used, size_t un, char *avail, size_t an, char *cpu, size_t cn)
{
    json_t *mc = json_object_get(st, "memcpu");
    double pct = json_real_value(json_object_get(mc, "mem_used_pct"));
    snprintf(used, un, "%.2f", pct);
    sl_format_size(ju64(mc, "mem_free"), avail, an);
    cpu_col(mc, cpu, cn);
}

static const char *snode_url(json_t *sn)
{
    return json_string_value(json_object_get(json_object_get(sn, "public_net"), "direct_url"));
}

/* Which node a NODE argument names: id, and 'p', 't' or 0 (either map). */
struct node_sel {
    char id[128];
    char type;
    bool any;       /* no NODE given */
};

static bool sel_match(const struct node_sel *sel, char type, const char *id)
{
    return sel->any || (!strcmp(sel->id, id) && (!sel->type || sel->type == type));
}

/* Parse "p[ID]", "t[ID]" or "ID" and check it against the Smap; 1 found,
 * 0 not a node of this cluster. */
static int sel_parse(json_t *smap, const char *arg, struct node_sel *sel)
{
    size_t n = strlen(arg);
    memset(sel, 0, sizeof(*sel));
    if (n > 3 && (arg[0] == 'p' || arg[0] == 't') && arg[1] == '[' && arg[n - 1] == ']') {
        sel->type = arg[0];
        snprintf(sel->id, sizeof(sel->id), "%.*s", (int)(n - 3), arg + 2);
    } else {
        snprintf(sel->id, sizeof(sel->id), "%s", arg);
    }
    bool inp = json_object_get(json_object_get(smap, "pmap"), sel->id) != NULL;
    bool int_ = json_object_get(json_object_get(smap, "tmap"), sel->id) != NULL;
    return sel->type == 'p' ? inp : sel->type == 't' ? int_ : inp || int_;
}

/* The URL of a selected node (the first map that has it). */
static const char *sel_url(json_t *smap, const struct node_sel *sel)
{
    const char *maps[2] = { "pmap", "tmap" };
    for (int m = 0; m < 2; m++) {
        if (sel->type && sel->type != (m ? 't' : 'p'))
            continue;
        json_t *sn = json_object_get(json_object_get(smap, maps[m]), sel->id);
        if (sn)
            return snode_url(sn);
    }
    return NULL;
}

/* "g4 finished" etc.: the last rebalance as the gateway reports it */
static void rebalance_summary(char *out, size_t n)
{
    struct cli_resp r;
    snprintf(out, n, "none");
    if (cli_query("status", json_pack("{s:s}", "kind", "rebalance"), &r) == 0 && r.status == 200) {
        json_t *st = cli_resp_json(&r);
        const char *id = sl_json_str(st, "uuid", "?"), *err = sl_json_str(st, "err", "");
        if (!sl_json_int(st, "end_time", 0))
            snprintf(out, n, "%s running", id);
        else if (sl_json_bool(st, "aborted", false))
            snprintf(out, n, "%s aborted", id);
        else if (err[0])
            snprintf(out, n, "%s failed: %.200s", id, err);
        else
            snprintf(out, n, "%s finished", id);
        json_decref(st);
    }
    cli_resp_free(&r);
}

/* Proxy and/or target tables (filtered by sel), and the summary when the
 * whole cluster is shown. */
static int show_nodes(json_t *smap, bool proxies, bool targets, const struct node_sel *sel)
{
    const char *primary = json_string_value(json_object_get(json_object_get(smap, "proxy_si"), "daemon_id"));
    int online = 0, disks = 0;
    const char *version = NULL, *build = NULL;
    json_t *statuses = json_object();
    const char *maps[2] = { "pmap", "tmap" };
    for (int m = 0; m < 2; m++) {
        const char *id;
        json_t *sn;
        if (!(m ? targets : proxies))
            continue;
        json_object_foreach(json_object_get(smap, maps[m]), id, sn) {
            if (!sel_match(sel, m ? 't' : 'p', id))
                continue;
            const char *url = snode_url(sn);
            char key[160];
            snprintf(key, sizeof(key), "%c[%s]", m ? 't' : 'p', id);
            json_t *st = url ? node_status(id, url) : NULL;
            json_object_set_new(statuses, key, st ? st : json_null());
        }
    }
    if (cli_json) {
        cli_print_json(statuses);
        json_decref(statuses);
        return 0;
    }
    struct table *tp = table_new(7, "PROXY", "MEM USED(%)", "MEM AVAIL", "SYS CPU(%)", "UPTIME", "STATUS",
                                 "VERSION");
    const char *id;
    json_t *sn;
    int np = 0, nt = 0;
    json_object_foreach(json_object_get(smap, "pmap"), id, sn) {
        char key[160], name[160], used[16] = "-", avail[32] = "-", cpu[16] = "-", up[32] = "-";
        snprintf(key, sizeof(key), "p[%s]", id);
        json_t *st = json_object_get(statuses, key);
        if (!st)
            continue;
        snprintf(name, sizeof(name), "p[%s]%s", id, primary && !strcmp(primary, id) ? "[P]" : "");
        const char *status = "offline", *v = NULL;
        if (json_is_object(st)) {
            mem_cols(st, used, sizeof(used), avail, sizeof(avail), cpu, sizeof(cpu));
            fmt_uptime((int64_t)ju64(st, "uptime"), up, sizeof(up));
            status = json_string_value(json_object_get(st, "status"));
            v = json_string_value(json_object_get(st, "version"));
            version = v ? v : version;
            if (primary && !strcmp(primary, id))
                build = json_string_value(json_object_get(st, "build_time"));
            /* a standalone node is in both maps: count it once */
            if (!json_object_get(json_object_get(smap, "tmap"), id))
                online++;
        }
        table_row(tp, name, used, avail, cpu, up, status ? status : "?", v ? v : "");
        np++;
    }
    struct table *tt = table_new(10, "TARGET", "MEM USED(%)", "MEM AVAIL", "CAP USED(%)", "CAP AVAIL", "CPU(%)",
                                 "REBALANCE", "UPTIME", "STATUS", "VERSION");
    json_object_foreach(json_object_get(smap, "tmap"), id, sn) {
        char key[160], name[160], used[16] = "-", avail[32] = "-", cpu[16] = "-", up[32] = "-", cu[16] = "-",
                                  ca[32] = "-";
        snprintf(key, sizeof(key), "t[%s]", id);
        json_t *st = json_object_get(statuses, key);
        if (!st)
            continue;
        long long fl = json_integer_value(json_object_get(sn, "flags"));
        snprintf(name, sizeof(name), "t[%s]", id);
        const char *status = "offline", *reb = "-", *v = NULL;
        if (json_is_object(st)) {
            mem_cols(st, used, sizeof(used), avail, sizeof(avail), cpu, sizeof(cpu));
            fmt_uptime((int64_t)ju64(st, "uptime"), up, sizeof(up));
            status = json_string_value(json_object_get(st, "status"));
            json_t *cap = json_object_get(st, "capacity");
            uint64_t cused = ju64(cap, "used"), ctot = ju64(cap, "total");
            snprintf(cu, sizeof(cu), "%.2f", ctot ? 100.0 * (double)cused / (double)ctot : 0.0);
            sl_format_size(ctot - cused, ca, sizeof(ca));
            disks += (int)json_integer_value(json_object_get(cap, "num_disks"));
            reb = json_string_value(json_object_get(st, "rebalance"));
            v = json_string_value(json_object_get(st, "version"));
            version = v ? v : version;
            if (!build)
                build = json_string_value(json_object_get(st, "build_time"));
            online++;
        }
        if (fl & 8)
            status = "decommissioning";
        else if (fl & 4)
            status = "maintenance";
        table_row(tt, name, used, avail, cu, ca, cpu, reb ? reb : "-", up, status ? status : "?", v ? v : "");
        nt++;
    }
    if (proxies)
        table_print(tp, stdout, !cli_no_headers);
    if (proxies && targets)
        printf("\n");
    if (targets)
        table_print(tt, stdout, !cli_no_headers);
    table_free(tp);
    table_free(tt);
    if (proxies && targets && sel->any) {
        char reb[300];
        rebalance_summary(reb, sizeof(reb));
        printf("\nSummary:\n");
        printf("   Proxies:\t\t%d\n", np);
        printf("   Targets:\t\t%d (num disks: %d)\n", nt, disks);
        printf("   Cluster Map:\t\tversion %s, UUID %s, primary p[%s]\n",
               json_string_value(json_object_get(smap, "version")),
               json_string_value(json_object_get(smap, "uuid")), primary ? primary : "?");
        printf("   Deployment:\t\tlinux\n");
        printf("   Status:\t\t%d online\n", online);
        printf("   Rebalance:\t\t%s\n", reb);
        printf("   Authentication:\tdisabled\n");
        printf("   Version:\t\t%s\n", version ? version : "");
        printf("   Build:\t\t%s\n", build ? build : "");
    }
    json_decref(statuses);
    return 0;
}

static const char *flags_str(long long fl, char *out, size_t n)
{
    snprintf(out, n, "%s%s%s%s", fl & 4 ? "maintenance " : "", fl & 8 ? "decommissioning " : "",
             fl & (1 << 16) ? "offline " : "", fl & (4 | 8 | (1 << 16)) ? "" : "-");
    size_t l = strlen(out);
    if (l > 1 && out[l - 1] == ' ')
        out[l - 1] = 0;
    return out;
}

static int show_smap(json_t *smap)
{
    if (cli_json) {
        cli_print_json(smap);
        return 0;
    }
    const char *primary = json_string_value(json_object_get(json_object_get(smap, "proxy_si"), "daemon_id"));
    struct table *t = table_new(6, "NODE", "TYPE", "PUBLIC URL", "CONTROL URL", "DATA URL", "FLAGS");
    const char *maps[2] = { "pmap", "tmap" };
    int counts[2] = { 0, 0 };
    for (int m = 0; m < 2; m++) {
        const char *id;
        json_t *sn;
        json_object_foreach(json_object_get(smap, maps[m]), id, sn) {
            char name[160], fl[64];
            snprintf(name, sizeof(name), "%c[%s]%s", m ? 't' : 'p', id,
                     !m && primary && !strcmp(primary, id) ? "[P]" : "");
            const char *cu = json_string_value(json_object_get(json_object_get(sn, "intra_control_net"),
                                                               "direct_url"));
            const char *du = json_string_value(json_object_get(json_object_get(sn, "intra_data_net"), "direct_url"));
            const char *pu = snode_url(sn);
            table_row(t, name, m ? "target" : "proxy", pu ? pu : "", cu ? cu : "", du ? du : "",
                      flags_str(json_integer_value(json_object_get(sn, "flags")), fl, sizeof(fl)));
            counts[m]++;
        }
    }
    table_print(t, stdout, !cli_no_headers);
    table_free(t);
    printf("\nPrimary proxy:\tp[%s]\n", primary ? primary : "?");
    printf("Proxies:\t%d\nTargets:\t%d\n", counts[0], counts[1]);
    printf("Smap version:\t%s\n", sl_json_str(smap, "version", "?"));
    printf("UUID:\t\t%s\n", sl_json_str(smap, "uuid", "?"));
    return 0;
}

static int show_bmd(json_t *bmd)
{
    if (cli_json) {
        cli_print_json(bmd);
        return 0;
    }
    struct table *t = table_new(4, "BUCKET", "BID", "CHECKSUM", "CREATED");
    const char *prov, *ns, *bn;
    json_t *nsmap, *bcks, *props;
    int n = 0;
    json_object_foreach(json_object_get(bmd, "providers"), prov, nsmap) {
        json_object_foreach(nsmap, ns, bcks) {
            json_object_foreach(bcks, bn, props) {
                char name[400], created[64] = "-";
                snprintf(name, sizeof(name), "%s://%s", prov, bn);
                int64_t c = sl_json_int(props, "created", 0);
                if (c > 0) {
                    time_t secs = (time_t)(c / 1000000000LL);
                    struct tm tm;
                    gmtime_r(&secs, &tm);
                    strftime(created, sizeof(created), "%Y-%m-%d %H:%M:%S", &tm);
                }
                char bid[32];
                snprintf(bid, sizeof(bid), "%lld", (long long)sl_json_int(props, "bid", 0));
                const char *ck = sl_json_str(json_object_get(props, "checksum"), "type", "-");
                table_row(t, name, bid, ck, created);
                n++;
            }
        }
    }
    table_print(t, stdout, !cli_no_headers);
    table_free(t);
    printf("\nBuckets:\t%d\nBMD version:\t%s\nUUID:\t\t%s\n", n, sl_json_str(bmd, "version", "?"),
           sl_json_str(bmd, "uuid", "?"));
    return 0;
}

/* config as PROPERTY VALUE rows with dotted names: all of it, or the rows
 * under key (the config section below) */
static int conf_show(json_t *conf, const char *key, const char *whose);

static uint64_t tracker_v(json_t *tr, const char *k)
{
    return ju64(json_object_get(tr, k), "v");
}

static int show_stats(json_t *smap, const struct node_sel *sel)
{
    json_t *all = json_object();
    const char *maps[2] = { "pmap", "tmap" };
    for (int m = 0; m < 2; m++) {
        const char *id;
        json_t *sn;
        json_object_foreach(json_object_get(smap, maps[m]), id, sn) {
            char key[160];
            snprintf(key, sizeof(key), "%c[%s]", m ? 't' : 'p', id);
            if (!sel_match(sel, m ? 't' : 'p', id))
                continue;
            /* a standalone node is in both maps with one set of counters */
            if (!m && json_object_get(json_object_get(smap, "tmap"), id) && sel->any)
                continue;
            json_t *st = snode_url(sn) ? node_status(id, snode_url(sn)) : NULL;
            json_t *tr = json_object_get(st, "tracker");
            json_object_set(all, key, tr ? tr : json_null());
            json_decref(st);
        }
    }
    if (cli_json) {
        cli_print_json(all);
        json_decref(all);
        return 0;
    }
    struct table *t = table_new(9, "NODE", "GET", "GET SIZE", "PUT", "PUT SIZE", "HEAD", "DELETE", "LIST",
                                "ERRORS");
    const char *key;
    json_t *tr;
    json_object_foreach(all, key, tr) {
        if (!json_is_object(tr)) {
            table_row(t, key, "-", "-", "-", "-", "-", "-", "-", "offline");
            continue;
        }
        char c[8][32];
        uint64_t errs = 0;
        const char *k;
        json_t *v;
        json_object_foreach(tr, k, v) {
            if (!strncmp(k, "err.", 4))
                errs += ju64(v, "v");
        }
        snprintf(c[0], sizeof(c[0]), "%llu", (unsigned long long)tracker_v(tr, "get.n"));
        sl_format_size(tracker_v(tr, "get.size"), c[1], sizeof(c[1]));
        snprintf(c[2], sizeof(c[2]), "%llu", (unsigned long long)tracker_v(tr, "put.n"));
        sl_format_size(tracker_v(tr, "put.size"), c[3], sizeof(c[3]));
        snprintf(c[4], sizeof(c[4]), "%llu", (unsigned long long)tracker_v(tr, "head.n"));
        snprintf(c[5], sizeof(c[5]), "%llu", (unsigned long long)tracker_v(tr, "del.n"));
        snprintf(c[6], sizeof(c[6]), "%llu", (unsigned long long)tracker_v(tr, "lst.n"));
        snprintf(c[7], sizeof(c[7]), "%llu", (unsigned long long)errs);
        table_row(t, key, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]);
    }
    table_print(t, stdout, !cli_no_headers);
    table_free(t);
    json_decref(all);
    return 0;
}

static const char *const views[] = { "proxy", "target", "smap", "bmd", "config", "stats", NULL };

static bool is_view(const char *w)
{
    for (int i = 0; views[i]; i++)
        if (!strcmp(w, views[i]))
            return true;
    return false;
}

static int show_cluster(struct opts *o)
{
    const char *view = "", *node = NULL;
    if (o->argc >= 1 && is_view(o->argv[0])) {
        view = o->argv[0];
        node = o->argc >= 2 ? o->argv[1] : NULL;
        if (o->argc > 2) {
            fprintf(stderr, "Error: too many arguments: show cluster %s [NODE]\n", view);
            return 1;
        }
    } else if (o->argc == 1) {
        node = o->argv[0];
    } else if (o->argc > 1) {
        fprintf(stderr, "Error: unknown \"show cluster\" view \"%s\" (proxy, target, smap, bmd, config, stats)\n",
                o->argv[0]);
        return 1;
    }
    json_t *smap;
    int rc = cli_get_json("/v1/daemon?what=smap", "show cluster", &smap);
    if (rc)
        return rc;
    struct node_sel sel = { .any = true };
    if (node && !sel_parse(smap, node, &sel)) {
        if (!view[0])
            fprintf(stderr, "Error: unknown \"show cluster\" argument \"%s\": neither a view (proxy, target, smap, "
                            "bmd, config, stats) nor a node of this cluster (p[ID], t[ID], ID)\n", node);
        else
            fprintf(stderr, "Error: node \"%s\" is not in the cluster map (see `shale show cluster smap`)\n", node);
        json_decref(smap);
        return 1;
    }
    if (!strcmp(view, "proxy") && sel.type == 't') {
        fprintf(stderr, "Error: %s is a target; use `shale show cluster target %s`\n", node, node);
        json_decref(smap);
        return 1;
    }
    if (!strcmp(view, "target") && sel.type == 'p') {
        fprintf(stderr, "Error: %s is a proxy; use `shale show cluster proxy %s`\n", node, node);
        json_decref(smap);
        return 1;
    }
    if (!view[0] && sel.any && cli_json) {
        cli_print_json(smap); /* the cluster map, as before the sub-views existed */
    } else if (!view[0]) {
        /* a node: its row only (both rows for a standalone node's bare id) */
        bool p = sel.any || sel.type != 't', t = sel.any || sel.type != 'p';
        if (!sel.any && !sel.type) {
            p = json_object_get(json_object_get(smap, "pmap"), sel.id) != NULL;
            t = json_object_get(json_object_get(smap, "tmap"), sel.id) != NULL;
        }
        rc = show_nodes(smap, p, t, &sel);
    } else if (!strcmp(view, "proxy") || !strcmp(view, "target")) {
        if (!sel.type && !sel.any)
            sel.type = view[0];
        rc = show_nodes(smap, view[0] == 'p', view[0] == 't', &sel);
    } else if (!strcmp(view, "stats")) {
        rc = show_stats(smap, &sel);
    } else {
        /* smap, bmd, config: the gateway's view, or NODE's own */
        const char *url = sel.any ? cli_endpoint() : sel_url(smap, &sel);
        char pq[64];
        snprintf(pq, sizeof(pq), "%s%s", sel.any && !strcmp(view, "config") ? "/v1/cluster?what=" :
                 "/v1/daemon?what=", !strcmp(view, "config") && sel.any ? "cluster_config" : view);
        json_t *doc = url ? node_get_id(sel.any ? NULL : sel.id, url, pq) : NULL;
        if (!doc) {
            fprintf(stderr, "Error: cannot get the %s from %s\n", view, url ? url : node);
            rc = 1;
        } else if (!strcmp(view, "smap")) {
            rc = show_smap(doc);
        } else if (!strcmp(view, "bmd")) {
            rc = show_bmd(doc);
        } else {
            rc = conf_show(doc, NULL, "the config");
        }
        json_decref(doc);
    }
    json_decref(smap);
    return rc;
}

/* show remote-cluster: the attached remote clusters */
static int show_remote(struct opts *o)
{
    json_t *j;
    int rc = cli_get_json("/v1/cluster?what=remote", "show remote-cluster", &j);
    if (rc)
        return rc;
    if (cli_json) {
        cli_print_json(j);
    } else {
        struct table *t = table_new(5, "ALIAS", "URL", "UUID", "ONLINE", "TARGETS");
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(j, "a"), i, c) {
            json_t *sm = json_object_get(c, "smap");
            char nt[16];
            snprintf(nt, sizeof(nt), "%zu", json_object_size(json_object_get(sm, "tmap")));
            table_row(t, sl_json_str(c, "alias", ""), sl_json_str(c, "url", ""), sl_json_str(c, "uuid", ""),
                      json_is_object(sm) ? "yes" : "no", json_is_object(sm) ? nt : "-");
        }
        table_print(t, stdout, !cli_no_headers);
        table_free(t);
    }
    json_decref(j);
    (void)o;
    return 0;
}

/* ais's `show X ...` spellings of shale's own verbs: run CMD with WORDS then argv[1..] */
static int show_fwd(int (*cmd)(int, char **), const char *w1, const char *w2, int argc, char **argv)
{
    char **v = sl_xcalloc((size_t)argc + 3, sizeof(char *));
    int n = 0;
    if (w1)
        v[n++] = (char *)w1;
    if (w2)
        v[n++] = (char *)w2;
    for (int i = 1; i < argc; i++)
        v[n++] = argv[i];
    int rc = cmd(n, v);
    free(v);
    return rc;
}

json_t *cli_node_status(const char *id, json_t *snode)
{
    return snode_url(snode) ? node_status(id, snode_url(snode)) : NULL;
}

json_t *cli_sel_targets(const char *arg, const char *usage)
{
    json_t *smap;
    if (cli_get_json("/v1/daemon?what=smap", NULL, &smap) < 0 || !smap)
        return NULL;
    struct node_sel sel = { .any = true };
    if (arg && (!sel_parse(smap, arg, &sel) || sel.type == 'p' ||
                !json_object_get(json_object_get(smap, "tmap"), sel.id))) {
        fprintf(stderr, "Error: \"%s\" is not a target in the cluster map (see `shale show cluster target`): `shale "
                "%s`\n", arg, usage);
        json_decref(smap);
        return NULL;
    }
    json_t *out = json_object();
    const char *id;
    json_t *sn;
    json_object_foreach(json_object_get(smap, "tmap"), id, sn) {
        if (sel_match(&sel, 't', id))
            json_object_set(out, id, sn);
    }
    json_decref(smap);
    return out;
}

/* performance throughput: each target's GET/PUT rates between two samples of its counters */
static const char *const tp_keys[4] = { "get.n", "get.size", "put.n", "put.size" };

static int perf_sample(json_t *smap, const struct node_sel *sel, json_t *out)
{
    const char *id;
    json_t *sn;
    json_object_foreach(json_object_get(smap, "tmap"), id, sn) {
        if (!sel_match(sel, 't', id))
            continue;
        json_t *st = snode_url(sn) ? node_status(id, snode_url(sn)) : NULL;
        json_t *tr = json_object_get(st, "tracker");
        json_object_set(out, id, tr ? tr : json_null());
        json_decref(st);
    }
    return 0;
}

static int perf_throughput(struct opts *o)
{
    int64_t every = 5LL * 1000000000LL;
    const char *rs = opt_str(o, "refresh");
    if (rs && (sl_parse_duration(rs, &every) < 0 || every <= 0)) {
        fprintf(stderr, "Error: --refresh: invalid duration \"%s\" (e.g. 1s, 10s, 1m)\n", rs);
        return 1;
    }
    long count = 1;
    const char *cs = opt_str(o, "count");
    if (cs) {
        char *end = NULL;
        count = strtol(cs, &end, 10);
        if (!*cs || *end || count < 1) {
            fprintf(stderr, "Error: --count: \"%s\" is not a positive number of reports\n", cs);
            return 1;
        }
    }
    json_t *smap;
    if (cli_get_json("/v1/daemon?what=smap", NULL, &smap) < 0 || !smap)
        return 1;
    struct node_sel sel = { .any = true };
    if (o->argc > 1) {
        fprintf(stderr, "Error: unexpected argument \"%s\": `shale performance throughput [TARGET]`\n", o->argv[1]);
        json_decref(smap);
        return 1;
    }
    if (o->argc && (!sel_parse(smap, o->argv[0], &sel) || sel.type == 'p')) {
        fprintf(stderr, "Error: \"%s\" is not a target in the cluster map (see `shale show cluster target`)\n",
                o->argv[0]);
        json_decref(smap);
        return 1;
    }
    json_t *prev = json_object();
    perf_sample(smap, &sel, prev);
    for (long n = 0; n < count; n++) {
        struct timespec ts = { (time_t)(every / 1000000000LL), (long)(every % 1000000000LL) };
        nanosleep(&ts, NULL);
        json_t *cur = json_object();
        perf_sample(smap, &sel, cur);
        double secs = (double)every / 1e9;
        json_t *all = json_object();
        struct table *t = table_new(5, "TARGET", "GET(/s)", "GET(bytes/s)", "PUT(/s)", "PUT(bytes/s)");
        const char *id;
        json_t *tr;
        json_object_foreach(cur, id, tr) {
            char name[160];
            snprintf(name, sizeof(name), "t[%s]", id);
            json_t *pt = json_object_get(prev, id);
            if (!json_is_object(tr) || !json_is_object(pt)) {
                table_row(t, name, "-", "-", "-", "-");
                json_object_set_new(all, name, json_null());
                continue;
            }
            double r[4];
            for (int k = 0; k < 4; k++) {
                uint64_t a = tracker_v(pt, tp_keys[k]), b = tracker_v(tr, tp_keys[k]);
                r[k] = b > a ? (double)(b - a) / secs : 0.0;
            }
            char c[4][32];
            snprintf(c[0], sizeof(c[0]), "%.1f", r[0]);
            sl_format_size((uint64_t)r[1], c[1], sizeof(c[1]));
            snprintf(c[2], sizeof(c[2]), "%.1f", r[2]);
            sl_format_size((uint64_t)r[3], c[3], sizeof(c[3]));
            table_row(t, name, c[0], c[1], c[2], c[3]);
            json_object_set_new(all, name, json_pack("{s:f,s:f,s:f,s:f}", "get_per_s", r[0], "get_bytes_per_s", r[1],
                                                     "put_per_s", r[2], "put_bytes_per_s", r[3]));
        }
        if (cli_json)
            cli_print_json(all);
        else {
            if (n)
                printf("\n");
            table_print(t, stdout, !cli_no_headers);
        }
        fflush(stdout);
        table_free(t);
        json_decref(all);
        json_decref(prev);
        prev = cur;
    }
    json_decref(prev);
    json_decref(smap);
    return 0;
}

/* ais's `performance counters [NODE]`: each node's own counters (= show cluster stats) */
int cmd_performance(int argc, char **argv)
{
    if (argc < 1 || argv[0][0] == '-' || !strcmp(argv[0], "counters")) {
        int skip = argc >= 1 && argv[0][0] != '-';
        char **v = sl_xcalloc((size_t)argc + 3, sizeof(char *));
        v[0] = "cluster";
        v[1] = "stats";
        for (int i = skip; i < argc; i++)
            v[i - skip + 2] = argv[i];
        int rc = cmd_show(argc - skip + 2, v);
        free(v);
        return rc;
    }
    if (!strcmp(argv[0], "throughput")) {
        struct opts o;
        if (cli_opts(&o, "performance throughput", argc - 1, argv + 1) < 0)
            return 1;
        return perf_throughput(&o);
    }
    if (!strcmp(argv[0], "latency") || !strcmp(argv[0], "disk") || !strcmp(argv[0], "capacity"))
        return cli_perf(argv[0], argc - 1, argv + 1);
    fprintf(stderr, "Error: unknown command \"performance %s\" (counters, throughput, latency, disk, capacity; see "
            "`shale performance --help`)\n", argv[0]);
    return 1;
}

/* show dashboard: one screen of the cluster: nodes and capacity, throughput over --refresh, running jobs */
static int show_dashboard(struct opts *o)
{
    if (o->argc) {
        fprintf(stderr, "Error: unexpected argument \"%s\": `shale show dashboard` takes none\n", o->argv[0]);
        return 1;
    }
    if (cli_json) {
        fprintf(stderr, "Error: --json: `show dashboard` is for a terminal; use `show cluster --json`, `performance "
                "throughput --json` and `job show --json`\n");
        return 1;
    }
    char *v1[] = { "cluster" };
    printf("== Nodes\n");
    fflush(stdout);
    if (cmd_show(1, v1))
        return 1;
    printf("\n== Throughput\n");
    fflush(stdout);
    struct opts t = *o;
    if (perf_throughput(&t))
        return 1;
    printf("\n== Jobs running\n");
    fflush(stdout);
    char *v2[] = { "show" };
    return cmd_job(1, v2);
}

int cmd_show(int argc, char **argv)
{
    if (argc < 1)
        return cli_usage("show");
    struct opts o;
    if (!strcmp(argv[0], "performance"))
        return cmd_performance(argc - 1, argv + 1);
    if (!strcmp(argv[0], "dashboard")) {
        if (cli_opts(&o, "show dashboard", argc - 1, argv + 1) < 0)
            return 1;
        return show_dashboard(&o);
    }
    if (!strcmp(argv[0], "nbi")) /* ais's `show nbi s3://B` = `nbi show` */
        return cli_show_nbi(argc - 1, argv + 1);
    if (!strcmp(argv[0], "object"))
        return show_fwd(cmd_object, "show", NULL, argc, argv);
    if (!strcmp(argv[0], "bucket"))
        return show_fwd(cmd_bucket, "props", "show", argc, argv);
    if (!strcmp(argv[0], "log"))
        return show_fwd(cmd_log, "show", NULL, argc, argv);
    if (!strcmp(argv[0], "etl"))
        return show_fwd(cmd_etl, "show", NULL, argc, argv);
    if (!strcmp(argv[0], "config"))
        return show_fwd(cmd_config, NULL, NULL, argc, argv);
    if (!strcmp(argv[0], "tls")) /* ais's `show tls` = `tls show` */
        return show_fwd(cmd_tls, "show", NULL, argc, argv);
    if (!strcmp(argv[0], "rebalance") || !strcmp(argv[0], "dsort")) { /* the job's progress per target */
        if (argc > 1 && argv[1][0] != '-') /* show dsort ID: that job */
            return show_fwd(cmd_job, "show", NULL, argc, argv);
        char **v = sl_xcalloc((size_t)argc + 2, sizeof(char *));
        v[0] = "show";
        v[1] = argv[0];
        for (int i = 1; i < argc; i++)
            v[i + 1] = argv[i];
        int rc = cmd_job(argc + 1, v);
        free(v);
        return rc;
    }
    if (!strcmp(argv[0], "cluster")) {
        if (cli_opts(&o, "show cluster", argc - 1, argv + 1) < 0)
            return 1;
        return show_cluster(&o);
    }
    if (!strcmp(argv[0], "storage"))
        return cmd_storage(argc - 1, argv + 1);
    if (!strcmp(argv[0], "remote-cluster")) {
        if (cli_opts(&o, "show remote-cluster", argc - 1, argv + 1) < 0)
            return 1;
        return show_remote(&o);
    }
    if (!strcmp(argv[0], "job") || !strcmp(argv[0], "jobs")) { /* ais's `show job [ID]` */
        char **v = sl_xcalloc((size_t)argc + 1, sizeof(char *));
        v[0] = "show";
        for (int i = 1; i < argc; i++)
            v[i] = argv[i];
        int rc = cmd_job(argc, v);
        free(v);
        return rc;
    }
    fprintf(stderr, "Error: unknown command \"show %s\" (cluster, job, storage, remote-cluster, object, bucket, "
            "config, log, etl, tls, dsort, rebalance, performance, dashboard; see `shale show --help`)\n", argv[0]);
    return 1;
}

/* ---- shale storage: each target's mountpaths and capacity ---- */

/* the Smap from the gateway; NULL after printing the error */
static json_t *get_smap(void)
{
    json_t *smap;
    cli_get_json("/v1/daemon?what=smap", NULL, &smap);
    return smap;
}

/* NODE as p[ID], t[ID] or ID, checked against the Smap; false after printing the error */
static bool node_arg(json_t *smap, const char *node, struct node_sel *sel)
{
    if (sel_parse(smap, node, sel))
        return true;
    fprintf(stderr, "Error: node \"%s\" is not in the cluster map (see `shale show cluster smap`)\n", node);
    return false;
}

static int storage_show(const struct opts *o, bool disks)
{
    json_t *smap = get_smap();
    if (!smap)
        return 1;
    struct node_sel sel = { .any = true };
    if (o->argc && !node_arg(smap, o->argv[0], &sel)) {
        json_decref(smap);
        return 1;
    }
    if (o->argc && (sel.type == 'p' || !json_object_get(json_object_get(smap, "tmap"), sel.id))) {
        fprintf(stderr, "Error: %s is a proxy, which stores nothing; name a target (`shale show cluster target`)\n",
                o->argv[0]);
        json_decref(smap);
        return 1;
    }
    int64_t every = 1000000000LL; /* (storage disk show: one pair of samples of the disks' counters) */
    const char *rs = disks ? opt_str(o, "refresh") : NULL;
    if (rs && (sl_parse_duration(rs, &every) < 0 || every <= 0)) {
        fprintf(stderr, "Error: --refresh: invalid duration \"%s\" (e.g. 1s, 10s, 1m)\n", rs);
        json_decref(smap);
        return 1;
    }
    json_t *all = json_object(), *targets = json_object();
    struct table *t = table_new(6, "TARGET", "MOUNTPATH", "USED", "AVAIL", "TOTAL", "USED(%)");
    struct sl_buf notes;
    sl_buf_init(&notes);
    const char *id;
    json_t *sn;
    int ntargets = 0;
    json_object_foreach(json_object_get(smap, "tmap"), id, sn) {
        if (!sel_match(&sel, 't', id))
            continue;
        ntargets++;
        json_object_set(targets, id, sn);
        char name[160];
        snprintf(name, sizeof(name), "t[%s]", id);
        json_t *st = snode_url(sn) ? node_status(id, snode_url(sn)) : NULL;
        json_t *cap = json_object_get(st, "capacity");
        if (!cap) {
            table_row(t, name, "-", "-", "-", "-", "offline");
            json_object_set_new(all, name, json_null());
            json_decref(st);
            continue;
        }
        uint64_t used = ju64(cap, "used"), total = ju64(cap, "total");
        uint64_t avail = total > used ? total - used : 0;
        char u[32], a[32], tt[32], pct[16];
        sl_format_size(used, u, sizeof(u));
        sl_format_size(avail, a, sizeof(a));
        sl_format_size(total, tt, sizeof(tt));
        snprintf(pct, sizeof(pct), "%.2f", total ? 100.0 * (double)used / (double)total : 0.0);
        json_t *mps = json_object_get(cap, "mountpaths");
        size_t i;
        json_t *mp;
        json_array_foreach(mps, i, mp) {
            if (!i)
                table_row(t, name, json_string_value(mp), u, a, tt, pct);
            else
                table_row(t, "", json_string_value(mp), "", "", "", "");
        }
        if (!json_array_size(mps))
            table_row(t, name, "-", u, a, tt, pct);
        json_t *mst = json_object_get(cap, "mountpath_state");
        json_object_set_new(all, name, json_pack("{s:O,s:I,s:I,s:I,s:f,s:O}", "mountpaths", mps, "used", (json_int_t)used,
                                                 "avail", (json_int_t)avail, "total", (json_int_t)total, "used_pct",
                                                 total ? 100.0 * (double)used / (double)total : 0.0, "state",
                                                 mst ? mst : json_object()));
        const char *mk;
        json_t *mv;
        json_object_foreach(mst, mk, mv) { /* (a disk replaced or lost: said under the table) */
            const char *v = json_string_value(mv);
            if (v && strcmp(v, "ok"))
                sl_buf_printf(&notes, "%s %s: %s\n", name, mk,
                              !strcmp(v, "emptied") ? "found without its contents at start (a replaced disk): "
                                                      "resilvered from the mirror copies on the other mountpaths"
                              : !strcmp(v, "vanished") ? "lost its contents while the target runs: restart the "
                                                         "target with the new disk mounted"
                              : !strcmp(v, "disabled") ? "disabled: no new object goes there and a resilver moves "
                                                         "its objects to the others (`shale storage mountpath enable` "
                                                         "puts it back)"
                              : !strcmp(v, "detaching") ? "being detached: a resilver moves its objects to the "
                                                          "others, then it is forgotten"
                                                       : v);
        }
        json_decref(st);
    }
    struct table *dt = disks && ntargets ? cli_disk_table() : NULL;
    struct sl_buf dnotes;
    sl_buf_init(&dnotes);
    if (dt) { /* the disks' rates: into each target's JSON, or a second table */
        json_t *rates = cli_disk_rates(targets, every, dt, &dnotes), *v;
        const char *k;
        json_object_foreach(rates, k, v) {
            json_t *tj = json_object_get(all, k);
            if (json_is_object(tj) && json_is_object(v))
                json_object_update(tj, v);
        }
        json_decref(rates);
    }
    if (cli_json)
        cli_print_json(all);
    else if (!ntargets)
        printf("No targets in the cluster map\n");
    else
        table_print(t, stdout, !cli_no_headers);
    if (!cli_json && notes.len)
        printf("\n%s", notes.p);
    if (!cli_json && dt) {
        printf("\n");
        table_print(dt, stdout, !cli_no_headers);
        if (dnotes.len)
            printf("%s", dnotes.p);
    }
    if (dt)
        table_free(dt);
    sl_buf_free(&dnotes);
    sl_buf_free(&notes);
    table_free(t);
    json_decref(targets);
    json_decref(all);
    json_decref(smap);
    return 0;
}

/* ---- shale storage mountpath attach|detach|enable|disable TARGET MOUNTPATH ---- */

static int storage_mpath(const char *verb, int argc, char **argv)
{
    static const char *const acts[][4] = {
        /* verb, action, method, what it did */
        { "attach", "attach-mp", "PUT", "attached to" }, { "enable", "enable-mp", "PUT", "enabled on" },
        { "disable", "disable-mp", "POST", "disabled on" }, { "detach", "detach-mp", "DELETE", "being detached from" },
    };
    size_t k = 0;
    while (strcmp(acts[k][0], verb))
        k++;
    char path[64];
    snprintf(path, sizeof(path), "storage mountpath %s", verb);
    struct opts o;
    if (cli_opts(&o, path, argc, argv) < 0)
        return 1;
    if (o.argc < 2) {
        fprintf(stderr, "Error: `shale %s` needs TARGET and MOUNTPATH%s (e.g. `shale %s t[abc123] /data/disk3`)\n",
                path, o.argc ? "; MOUNTPATH is missing" : "", path);
        return 1;
    }
    int64_t tmo;
    if (cli_timeout(&o, &tmo) < 0)
        return 1;
    if (opt_bool(&o, "progress") && !opt_bool(&o, "wait")) {
        fprintf(stderr, "Error: --progress shows the resilver while it is waited for: add --wait\n");
        return 1;
    }
    const char *mp = o.argv[1];
    if (mp[0] != '/') {
        fprintf(stderr, "Error: MOUNTPATH \"%s\" is not an absolute path: a mountpath is a directory such as "
                "/data/disk3, as the target sees it\n", mp);
        return 1;
    }
    json_t *smap = get_smap();
    if (!smap)
        return 1;
    struct node_sel sel = { .any = true };
    if (!node_arg(smap, o.argv[0], &sel)) {
        json_decref(smap);
        return 1;
    }
    if (sel.type == 'p' || !json_object_get(json_object_get(smap, "tmap"), sel.id)) {
        fprintf(stderr, "Error: TARGET %s is a proxy, which has no mountpaths; name a target (`shale show cluster "
                "target`)\n", o.argv[0]);
        json_decref(smap);
        return 1;
    }
    char tid[128];
    snprintf(tid, sizeof(tid), "%s", sel.id);
    json_decref(smap);
    char *h = sl_xasprintf("Ais-Node-Id: %s", tid);
    const char *hd[] = { h, "Content-Type: application/json", NULL };
    json_t *msg = json_pack("{s:s,s:s}", "action", acts[k][1], "value", mp);
    char *body = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    struct cli_resp r;
    cli_req_h(acts[k][2], "/v1/reverse/daemon/mountpaths", hd, body, strlen(body), &r);
    free(body);
    free(h);
    if (r.status != 200) {
        int rc = cli_fail(&r, path);
        cli_resp_free(&r);
        return rc;
    }
    char *id = sl_xstrndup(r.body.p ? r.body.p : "", r.body.len);
    cli_resp_free(&r);
    int rc = 0;
    if (!id[0]) {
        printf("Mountpath %s is %s t[%s] already: nothing to do\n", mp,
               k == 0 ? "attached to" : k == 1 ? "enabled on" : k == 2 ? "disabled on" : "being detached from", tid);
    } else {
        printf("Mountpath %s %s t[%s]; resilver %s moves the objects (`shale job show %s`)\n", mp, acts[k][3], tid, id,
               id);
        if (opt_bool(&o, "wait"))
            rc = cli_job_wait(id, tmo, opt_bool(&o, "progress"));
    }
    free(id);
    return rc;
}

int cmd_storage(int argc, char **argv)
{
    if (argc >= 1 && !strcmp(argv[0], "summary")) { /* ais's storage summary = bucket summary */
        char **v = sl_xcalloc((size_t)argc + 1, sizeof(char *));
        for (int i = 0; i < argc; i++)
            v[i] = argv[i];
        int rc = cmd_bucket(argc, v);
        free(v);
        return rc;
    }
    struct opts o;
    if (argc >= 1 && !strcmp(argv[0], "resilver")) {
        if (cli_opts(&o, "storage resilver", argc - 1, argv + 1) < 0)
            return 1;
        return cli_resilver_start(&o, o.argc ? o.argv[0] : NULL);
    }
    if (argc >= 1 && !strcmp(argv[0], "cleanup")) { /* job cleanup-store on every target */
        if (cli_opts(&o, "storage cleanup", argc - 1, argv + 1) < 0)
            return 1;
        if (o.argc) {
            fprintf(stderr, "Error: unexpected argument \"%s\": `shale storage cleanup` cleans every target's "
                    "mountpaths and takes no argument\n", o.argv[0]);
            return 1;
        }
        int64_t tmo;
        if (cli_timeout(&o, &tmo) < 0)
            return 1;
        if (opt_bool(&o, "progress") && !opt_bool(&o, "wait")) {
            fprintf(stderr, "Error: --progress shows a job while it is waited for: add --wait\n");
            return 1;
        }
        char *id = cli_act_id("PUT", "/v1/cluster", "start", json_pack("{s:s}", "Kind", "cleanup-store"),
                              "start cleanup-store");
        if (!id)
            return 1;
        printf("%s\n", id);
        int rc = opt_bool(&o, "wait") ? cli_job_wait(id, tmo, opt_bool(&o, "progress")) : 0;
        free(id);
        return rc;
    }
    if (argc >= 2 && !strcmp(argv[0], "mountpath") &&
        (!strcmp(argv[1], "attach") || !strcmp(argv[1], "detach") || !strcmp(argv[1], "enable") ||
         !strcmp(argv[1], "disable")))
        return storage_mpath(argv[1], argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[0], "mountpath") && !strcmp(argv[1], "fshc"))
        return cli_mpath_fshc(argc - 2, argv + 2);
    if (argc >= 1 && !strcmp(argv[0], "disk")) { /* storage disk [show]: capacity and the disks' rates */
        int skip = argc >= 2 && !strcmp(argv[1], "show") ? 2 : 1;
        if (cli_opts(&o, "storage disk show", argc - skip, argv + skip) < 0)
            return 1;
        return storage_show(&o, true);
    }
    if (argc >= 1 && (!strcmp(argv[0], "show") || !strcmp(argv[0], "mountpath"))) {
        argc--;
        argv++;
        if (argc >= 1 && !strcmp(argv[0], "show")) { /* storage mountpath|disk show */
            argc--;
            argv++;
        }
    }
    if (cli_opts(&o, "storage", argc, argv) < 0)
        return 1;
    return storage_show(&o, false);
}

/* ---- shale config cluster|node ---- */

struct conf_rows {
    struct table *t;
    const char *key;
    int n;
    const char *near;   /* the closest key, when none matches */
    int near_d;
};

/* a key near cr->key, for "did you mean" */
static void conf_near(struct conf_rows *cr, const char *name)
{
    int d = cli_distance(cr->key, name);
    if (d < cr->near_d) {
        cr->near_d = d;
        free((char *)cr->near);
        cr->near = sl_xstrdup(name);
    }
}

/* the rows of conf under key (the key itself, or a section of it) */
static void conf_select(struct conf_rows *cr, const char *prefix, json_t *v)
{
    if (json_is_object(v)) {
        if (prefix[0] && cr->key[0])
            conf_near(cr, prefix);
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) {
            char *name = prefix[0] ? sl_xasprintf("%s.%s", prefix, k) : sl_xstrdup(k);
            conf_select(cr, name, x);
            free(name);
        }
        return;
    }
    size_t kl = strlen(cr->key);
    if (kl && strcmp(prefix, cr->key) && !(sl_has_prefix(prefix, cr->key) && prefix[kl] == '.')) {
        conf_near(cr, prefix);
        return;
    }
    char *s = json_is_string(v) ? sl_xstrdup(json_string_value(v)) : sl_json_dump(v, 0, NULL);
    table_row(cr->t, prefix, s && s[0] ? s : "-");
    free(s);
    cr->n++;
}

static int conf_show(json_t *conf, const char *key, const char *whose)
{
    if (cli_json) {
        json_t *v = key ? cli_json_path(conf, key) : conf;
        if (v)
            cli_print_json(v);
        else
            fprintf(stderr, "Error: no key \"%s\" in %s\n", key, whose);
        return v ? 0 : 1;
    }
    struct conf_rows cr = { .t = table_new(2, "PROPERTY", "VALUE"), .key = key ? key : "", .near_d = 3 };
    conf_select(&cr, "", conf);
    int rc = 0;
    if (cr.n) {
        table_print(cr.t, stdout, !cli_no_headers);
    } else {
        fprintf(stderr, "Error: no key \"%s\" in %s%s%s%s (`shale config cluster` lists them)\n", key, whose,
                cr.near ? ": did you mean \"" : "", cr.near ? cr.near : "", cr.near ? "\"?" : "");
        rc = 1;
    }
    free((char *)cr.near);
    table_free(cr.t);
    return rc;
}

static json_t *cluster_config(void)
{
    json_t *j;
    cli_get_json("/v1/cluster?what=cluster_config", "cluster config", &j);
    return j;
}

/* KEY=VALUE ... through set-config (PUT /v1/cluster?KEY=VALUE&...) */
static int conf_set(const struct opts *o)
{
    struct sl_buf q;
    sl_buf_init(&q);
    sl_buf_adds(&q, "/v1/cluster/set-config");
    for (int i = 0; i < o->argc; i++) {
        const char *eq = strchr(o->argv[i], '=');
        if (!eq || eq == o->argv[i]) {
            fprintf(stderr, "Error: \"%s\": give either one KEY to show, or KEY=VALUE pairs to set\n", o->argv[i]);
            sl_buf_free(&q);
            return 1;
        }
        char *k = sl_xstrndup(o->argv[i], (size_t)(eq - o->argv[i]));
        char *ek = sl_url_encode_query(k), *ev = sl_url_encode_query(eq + 1);
        sl_buf_printf(&q, "%c%s=%s", i ? '&' : '?', ek, ev);
        free(k);
        free(ek);
        free(ev);
    }
    json_t *before = cluster_config();
    if (!before) {
        sl_buf_free(&q);
        return 1;
    }
    struct cli_resp r;
    cli_act("PUT", q.p, "set-config", "", NULL, &r);
    sl_buf_free(&q);
    int rc = 0;
    if (r.status != 200) {
        rc = cli_fail(&r, "config cluster");
    } else {
        json_t *ans = cli_resp_json(&r), *after = cluster_config();
        printf("Cluster config updated\n");
        cli_print_changes(before, after, o->argv, o->argc);
        json_t *rr = json_object_get(ans, "restart_required");
        if (json_array_size(rr)) {
            printf("Restart required:");
            size_t i;
            json_t *x;
            json_array_foreach(rr, i, x) printf("%s %s", i ? "," : "", json_string_value(x));
            printf(" (server: %s)\n", sl_json_str(ans, "message", "takes effect when each node restarts"));
        }
        json_decref(ans);
        json_decref(after);
    }
    cli_resp_free(&r);
    json_decref(before);
    return rc;
}

static int config_cluster(struct opts *o)
{
    bool set = o->argc && strchr(o->argv[0], '=');
    if (set)
        return conf_set(o);
    if (o->argc > 1) {
        fprintf(stderr, "Error: unexpected argument \"%s\": `shale config cluster` shows one KEY, or sets "
                "KEY=VALUE pairs\n", o->argv[1]);
        return 1;
    }
    json_t *conf = cluster_config();
    if (!conf)
        return 1;
    int rc = conf_show(conf, o->argc ? o->argv[0] : NULL, "the cluster config");
    json_decref(conf);
    return rc;
}

static int config_node(struct opts *o)
{
    if (o->argc < 1)
        return cli_usage("config node");
    if (o->argc > 1 && strchr(o->argv[1], '=')) {
        fprintf(stderr, "Error: the server sets configuration cluster-wide only (PUT /v1/daemon set-config is "
                "refused on cluster nodes); use `shale config cluster %s`\n", o->argv[1]);
        return 1;
    }
    json_t *smap = get_smap();
    if (!smap)
        return 1;
    struct node_sel sel;
    int rc = 1;
    if (node_arg(smap, o->argv[0], &sel)) {
        const char *url = sel_url(smap, &sel);
        json_t *conf = url ? node_get_id(sel.id, url, "/v1/daemon?what=config") : NULL;
        if (!conf) {
            fprintf(stderr, "Error: cannot get the config of %s from %s\n", o->argv[0], url ? url : "?");
        } else {
            char whose[200];
            snprintf(whose, sizeof(whose), "the config of %s", o->argv[0]);
            rc = conf_show(conf, o->argc > 1 ? o->argv[1] : NULL, whose);
        }
        json_decref(conf);
    }
    json_decref(smap);
    return rc;
}

/* config reset [NODE]: reset-config, the runtime changes dropped: cluster-wide (the primary's
 * files, sent to every node) or, NODE, that node's own (PUT /v1/daemon, sent to it) */
static int config_reset(struct opts *o)
{
    if (o->argc > 1) {
        fprintf(stderr, "Error: unexpected argument \"%s\": `shale config reset [NODE]` takes one node at most\n",
                o->argv[1]);
        return 1;
    }
    struct cli_resp r;
    if (o->argc) { /* as AIStore's api.ResetDaemonConfig: PUT /v1/reverse/daemon, Ais-Node-Id */
        json_t *smap = get_smap();
        if (!smap)
            return 1;
        struct node_sel sel;
        bool ok = node_arg(smap, o->argv[0], &sel);
        json_decref(smap);
        if (!ok)
            return 1;
        char *h = sl_xasprintf("Ais-Node-Id: %s", sel.id);
        const char *hd[] = { h, "Content-Type: application/json", NULL };
        static const char body[] = "{\"action\":\"reset-config\"}";
        cli_req_h("PUT", "/v1/reverse/daemon", hd, body, sizeof(body) - 1, &r);
        free(h);
    } else {
        cli_act("PUT", "/v1/cluster", "reset-config", NULL, NULL, &r);
    }
    int rc = 0;
    if (r.status != 200) {
        rc = cli_fail(&r, "config reset");
    } else {
        json_t *ans = cli_resp_json(&r);
        printf("%s configuration reset to %s config file%s\n", o->argc ? o->argv[0] : "Cluster",
               o->argc ? "the node's" : "the primary's", o->argc ? "" : " (every node has it)");
        json_t *rr = json_object_get(ans, "restart_required");
        if (json_array_size(rr)) {
            printf("Restart required:");
            size_t i;
            json_t *x;
            json_array_foreach(rr, i, x) printf("%s %s", i ? "," : "", json_string_value(x));
            printf(" (these take the file's value when each node restarts)\n");
        }
        json_decref(ans);
    }
    cli_resp_free(&r);
    return rc;
}

int cmd_config(int argc, char **argv)
{
    if (argc >= 1 && !strcmp(argv[0], "cli"))
        return cmd_config_cli(argc - 1, argv + 1);
    static const struct cli_verb verbs[] = { { "cluster", config_cluster, NULL }, { "node", config_node, NULL },
                                             { "reset", config_reset, NULL } };
    return cli_run_verb("config", verbs, SL_ARRAY_SIZE(verbs), argc, argv, false);
}
