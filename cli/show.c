/* SPDX-License-Identifier: MIT
 * show.c: `shale show cluster`: proxy and target tables plus a summary, as
 * `ais show cluster` prints them.
 */
#include "cli.h"
#include "jsonx.h"

#include <stdlib.h>
#include <string.h>

static json_t *node_status(const char *url)
{
    char *saved = sl_xstrdup(cli_endpoint());
    cli_set_endpoint(url);
    struct cli_resp r;
    json_t *j = NULL;
    if (cli_req("GET", "/v1/daemon?what=node_status", NULL, NULL, 0, &r) == 0 && r.status == 200)
        j = cli_resp_json(&r);
    cli_resp_free(&r);
    cli_set_endpoint(saved);
    free(saved);
    return j;
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
    return 0;
}

static void mem_cols(json_t *st, char *used, size_t un, char *avail, size_t an, char *load, size_t ln)
{
    json_t *mc = json_object_get(st, "memcpu");
    double pct = json_real_value(json_object_get(mc, "mem_used_pct"));
    snprintf(used, un, "%.2f", pct);
    sl_format_size(ju64(mc, "mem_free"), avail, an);
    snprintf(load, ln, "%.2f", json_real_value(json_object_get(mc, "load_avg")));
}

static int show_cluster(struct opts *o)
{
    struct cli_resp r;
    if (cli_req("GET", "/v1/daemon?what=smap", NULL, NULL, 0, &r) < 0 || r.status != 200) {
        int rc = cli_fail(&r, "show cluster");
        cli_resp_free(&r);
        return rc;
    }
    json_t *smap = cli_resp_json(&r);
    cli_resp_free(&r);
    if (cli_json) {
        char *s = sl_json_dump(smap, SL_JD_PRETTY, NULL);
        printf("%s\n", s);
        free(s);
        json_decref(smap);
        return 0;
    }
    const char *primary = json_string_value(json_object_get(json_object_get(smap, "proxy_si"), "daemon_id"));
    int online = 0, total = 0, disks = 0;
    const char *version = "";
    json_t *statuses = json_object();
    const char *maps[2] = { "pmap", "tmap" };
    for (int m = 0; m < 2; m++) {
        const char *id;
        json_t *sn;
        json_object_foreach(json_object_get(smap, maps[m]), id, sn) {
            const char *url = json_string_value(json_object_get(json_object_get(sn, "public_net"), "direct_url"));
            char key[80];
            snprintf(key, sizeof(key), "%c%s", m ? 't' : 'p', id);
            json_t *st = url ? node_status(url) : NULL;
            json_object_set_new(statuses, key, st ? st : json_null());
        }
    }
    /* PROXY table */
    struct table *tp = table_new(7, "PROXY", "MEM USED(%)", "MEM AVAIL", "LOAD AVERAGE", "UPTIME", "STATUS",
                                 "VERSION");
    const char *id;
    json_t *sn;
    int np = 0, nt = 0;
    json_object_foreach(json_object_get(smap, "pmap"), id, sn) {
        char key[80], name[80], used[16] = "-", avail[32] = "-", load[16] = "-", up[32] = "-";
        snprintf(key, sizeof(key), "p%s", id);
        json_t *st = json_object_get(statuses, key);
        snprintf(name, sizeof(name), "p[%s]%s", id, primary && !strcmp(primary, id) ? "[P]" : "");
        const char *status = "offline";
        if (json_is_object(st)) {
            mem_cols(st, used, sizeof(used), avail, sizeof(avail), load, sizeof(load));
            fmt_uptime((int64_t)ju64(st, "uptime"), up, sizeof(up));
            status = json_string_value(json_object_get(st, "status"));
            version = json_string_value(json_object_get(st, "version"));
        }
        table_row(tp, name, used, avail, load, up, status, version ? version : "");
        np++;
    }
    struct table *tt = table_new(10, "TARGET", "MEM USED(%)", "MEM AVAIL", "CAP USED(%)", "CAP AVAIL", "LOAD AVERAGE",
                                 "REBALANCE", "UPTIME", "STATUS", "VERSION");
    json_object_foreach(json_object_get(smap, "tmap"), id, sn) {
        char key[80], name[80], used[16] = "-", avail[32] = "-", load[16] = "-", up[32] = "-", cu[16] = "-",
                                 ca[32] = "-";
        snprintf(key, sizeof(key), "t%s", id);
        json_t *st = json_object_get(statuses, key);
        long long fl = json_integer_value(json_object_get(sn, "flags"));
        snprintf(name, sizeof(name), "t[%s]", id);
        const char *status = "offline", *reb = "-";
        if (json_is_object(st)) {
            mem_cols(st, used, sizeof(used), avail, sizeof(avail), load, sizeof(load));
            fmt_uptime((int64_t)ju64(st, "uptime"), up, sizeof(up));
            status = json_string_value(json_object_get(st, "status"));
            json_t *cap = json_object_get(st, "capacity");
            uint64_t cused = ju64(cap, "used"), ctot = ju64(cap, "total");
            snprintf(cu, sizeof(cu), "%.2f", ctot ? 100.0 * (double)cused / (double)ctot : 0.0);
            sl_format_size(ctot - cused, ca, sizeof(ca));
            disks += (int)json_integer_value(json_object_get(cap, "num_disks"));
            reb = json_string_value(json_object_get(st, "rebalance"));
            version = json_string_value(json_object_get(st, "version"));
            online++;
        }
        if (fl & 8)
            status = "decommissioning";
        else if (fl & 4)
            status = "maintenance";
        table_row(tt, name, used, avail, cu, ca, load, reb ? reb : "-", up, status, version ? version : "");
        nt++;
    }
    total = nt;
    {
        const char *k;
        json_t *v;
        json_object_foreach(statuses, k, v) if (k[0] == 'p' && json_is_object(v) &&
                                                 !json_object_get(json_object_get(smap, "tmap"), k + 1)) online++,
            total++;
    }
    table_print(tp, stdout, !cli_no_headers);
    printf("\n");
    table_print(tt, stdout, !cli_no_headers);
    table_free(tp);
    table_free(tt);
    printf("\nSummary:\n");
    printf("   Proxies:\t\t%d\n", np);
    printf("   Targets:\t\t%d (num disks: %d)\n", nt, disks);
    printf("   Cluster Map:\t\tversion %s, UUID %s, primary p[%s]\n",
           json_string_value(json_object_get(smap, "version")), json_string_value(json_object_get(smap, "uuid")),
           primary ? primary : "?");
    printf("   Deployment:\t\tlinux\n");
    printf("   Status:\t\t%d online\n", online);
    printf("   Authentication:\tdisabled\n");
    printf("   Version:\t\t%s\n", version ? version : "");
    json_decref(statuses);
    json_decref(smap);
    (void)o;
    (void)total;
    return 0;
}

int cmd_show(int argc, char **argv)
{
    if (argc < 1) {
        fprintf(stderr, "Usage: shale show cluster [--json]\n");
        return 1;
    }
    struct opts o;
    if (opts_parse(&o, argc - 1, argv + 1, "", "") < 0)
        return 1;
    if (!strcmp(argv[0], "cluster"))
        return show_cluster(&o);
    fprintf(stderr, "Error: unknown command \"show %s\" (cluster)\n", argv[0]);
    return 1;
}
