/* SPDX-License-Identifier: MIT
 * daemon.c: endpoints every node serves: /v1/health, GET /v1/daemon?what=,
 * /metrics.
 */
#include "daemon.h"
#include "arch.h"
#include "cluster.h"
#include "conf.h"
#include "http.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "reb.h"
#include "stats.h"
#include "store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

static void uptime_headers(struct sl_req *r)
{
    int64_t up = sl_mono_ns() - G.start_mono;
    sl_hdr_addf(r, "Ais-Node-Uptime", "%lld", (long long)up);
    sl_hdr_addf(r, "Ais-Cluster-Uptime", "%lld", (long long)sl_cluster_uptime_ns());
}

/* {"version": "N"} of a cluster document ("rmd", "etlmd"); "0" before the first one */
static json_t *doc_version_json(const char *name)
{
    json_t *d = sl_cluster_doc(name), *o = json_object();
    char v[32];
    snprintf(v, sizeof(v), "%lld", (long long)(d ? sl_json_int(d, "version", 0) : 0));
    json_decref(d);
    json_object_set_new(o, "version", json_string(v));
    return o;
}

/* AIStore's NodeStateFlags (cmn/cos/node_state.go), the bits Shale can tell */
enum {
    NSF_CLUSTER_STARTED = 1 << 1,  /* primary: cluster started; others: joined */
    NSF_NODE_STARTED = 1 << 2,
    NSF_REBALANCING = 1 << 3,
    NSF_MAINTENANCE = 1 << 10,
    NSF_NO_MOUNTPATHS = 1 << 14,
};

static uint64_t node_state_flags(const struct sl_smap *s)
{
    uint64_t f = 0;
    if (G.ready) {
        f |= NSF_NODE_STARTED;
        if (G.role == SL_ROLE_STANDALONE || sl_smap_find(s, G.id))
            f |= NSF_CLUSTER_STARTED;
    }
    const struct sl_snode *me = sl_smap_find(s, G.id);
    if (me && (me->flags & (SL_SNF_MAINT | SL_SNF_DECOMM)))
        f |= NSF_MAINTENANCE;
    if (G.role == SL_ROLE_TARGET && sl_reb_active())
        f |= NSF_REBALANCING;
    if (sl_is_target() && sl_store_nmpaths() == 0)
        f |= NSF_NO_MOUNTPATHS;
    return f;
}

json_t *sl_node_state_info(void)
{
    struct sl_smap *s = sl_smap_get();
    struct sl_bmd *b = sl_bmd_get();
    json_t *o = json_object(), *sm = json_object(), *pr = json_object();
    const struct sl_snode *p = sl_smap_primary(s);
    json_object_set_new(pr, "pub_url", json_string(p ? p->url : ""));
    json_object_set_new(pr, "control_url", json_string(p ? p->ctrl_url : ""));
    json_object_set_new(pr, "id", json_string(p ? p->id : ""));
    json_object_set_new(sm, "Primary", pr);
    json_object_set_new(sm, "uuid", json_string(s->uuid));
    char v[32];
    snprintf(v, sizeof(v), "%lld", (long long)s->version);
    json_object_set_new(sm, "version", json_string(v));
    json_object_set_new(o, "smap", sm);
    json_t *bm = json_object();
    json_object_set_new(bm, "uuid", json_string(b->uuid));
    snprintf(v, sizeof(v), "%lld", (long long)b->version);
    json_object_set_new(bm, "version", json_string(v));
    json_object_set_new(o, "bmd", bm);
    json_object_set_new(o, "rmd", doc_version_json("rmd"));
    json_t *cf = json_object();
    snprintf(v, sizeof(v), "%lld", (long long)sl_conf->config_version);
    json_object_set_new(cf, "version", json_string(v));
    json_object_set_new(o, "config", cf);
    json_object_set_new(o, "etlmd", doc_version_json("etlmd"));
    json_object_set_new(o, "flags", json_integer((json_int_t)node_state_flags(s)));
    sl_smap_put(s);
    sl_bmd_put(b);
    return o;
}

void sl_h_health(struct sl_req *r)
{
    if (r->method != SL_M_GET && r->method != SL_M_HEAD) {
        sl_resp_method_not_allowed(r, "GET, HEAD");
        return;
    }
    bool prr = sl_req_query_bool(r, "prr"), cii = sl_req_query_bool(r, "cii") || sl_req_query_bool(r, "cii-apr");
    if (prr && cii) {
        sl_resp_errf(r, SL_EINVAL, "invalid health query: 'prr' and 'cii' cannot be combined");
        return;
    }
    uptime_headers(r);
    if (!G.ready || G.stopping) {
        sl_resp_errf(r, SL_EUNAVAIL, "%s is %s", G.name, G.stopping ? "shutting down" : "starting up, not ready yet");
        return;
    }
    if (cii) {
        sl_resp_json_new(r, 200, sl_node_state_info());
        return;
    }
    if (prr && !sl_cluster_ready()) {
        sl_resp_errf(r, SL_EUNAVAIL, "%s: cluster is not ready yet (targets joining or rebalancing)", G.name);
        return;
    }
    sl_resp_empty(r, 200);
}

/* System CPU utilisation in percent over the interval since the previous
 * sample (at least 1 s apart; the first one covers the time since boot), from
 * /proc/stat. -1 when unreadable. */
static int cpu_util_pct(void)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static unsigned long long prev_total, prev_idle;
    static int64_t prev_mono;
    static int last = -1;
    unsigned long long v[10] = { 0 };
    FILE *f = fopen("/proc/stat", "r");
    int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                       &v[4], &v[5], &v[6], &v[7], &v[8], &v[9])
              : 0;
    if (f)
        fclose(f);
    if (n < 4)
        return -1;
    /* guest time (8, 9) is already counted in user and nice */
    unsigned long long idle = v[3] + v[4], total = 0;
    for (int i = 0; i < 8; i++)
        total += v[i];
    pthread_mutex_lock(&mu);
    int64_t now = sl_mono_ns();
    if (last < 0 || now - prev_mono >= 1000000000LL) {
        unsigned long long dt = total - prev_total, di = idle - prev_idle;
        if (dt > 0 && di <= dt) {
            last = (int)((100 * (dt - di) + dt / 2) / dt);
            prev_total = total;
            prev_idle = idle;
            prev_mono = now;
        }
    }
    int pct = last;
    pthread_mutex_unlock(&mu);
    return pct;
}

static json_t *node_status(void)
{
    json_t *o = json_object();
    json_object_set_new(o, "snode", sl_snode_json(&G.self));
    struct sl_smap *s = sl_smap_get();
    char v[32];
    snprintf(v, sizeof(v), "%lld", (long long)s->version);
    sl_smap_put(s);
    json_object_set_new(o, "smap_version", json_string(v));
    json_object_set_new(o, "version", json_string(SL_VERSION));
    json_object_set_new(o, "build_time", json_string(__DATE__ " " __TIME__));
    json_object_set_new(o, "status", json_string(G.ready ? "online" : "starting"));
    json_object_set_new(o, "deployment", json_string("linux"));
    json_object_set_new(o, "role", json_string(sl_role_name(G.role)));
    struct sysinfo si;
    json_t *mc = json_object();
    if (sysinfo(&si) == 0) {
        uint64_t total = (uint64_t)si.totalram * si.mem_unit, fr = (uint64_t)si.freeram * si.mem_unit;
        json_object_set_new(mc, "mem_total", sl_json_u64(total));
        json_object_set_new(mc, "mem_free", sl_json_u64(fr));
        json_object_set_new(mc, "mem_used_pct", json_real(total ? 100.0 * (double)(total - fr) / (double)total : 0));
        json_object_set_new(mc, "load_avg", json_real((double)si.loads[0] / 65536.0));
    }
    json_object_set_new(mc, "cpus", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
    int cpu = cpu_util_pct();
    if (cpu >= 0)
        json_object_set_new(mc, "cpu_util", json_integer(cpu)); /* AIStore's MemCPUInfo.cpu_util */
    json_object_set_new(o, "memcpu", mc);
    json_object_set_new(o, "uptime", sl_json_u64((uint64_t)(sl_mono_ns() - G.start_mono)));
    if (sl_is_target()) {
        uint64_t used = 0, total = 0;
        sl_store_capacity(&used, &total);
        json_t *cap = json_object();
        json_object_set_new(cap, "used", sl_json_u64(used));
        json_object_set_new(cap, "total", sl_json_u64(total));
        json_object_set_new(cap, "num_disks", json_integer(sl_store_nmpaths()));
        json_t *mps = json_array();
        for (int i = 0; i < sl_store_nmpaths(); i++)
            json_array_append_new(mps, json_string(sl_store_mpath(i)->path));
        json_object_set_new(cap, "mountpaths", mps);
        json_object_set_new(o, "capacity", cap);
        json_object_set_new(o, "rebalance", json_string(sl_rebalance_state()));
    }
    json_object_set_new(o, "tracker", sl_stats_tracker_json());
    return o;
}

void sl_h_daemon_get(struct sl_req *r)
{
    const char *what = sl_req_query(r, "what");
    if (!what || !*what) {
        sl_resp_errf(r, SL_EINVAL,
                     "GET /v1/daemon requires a 'what' query: one of smap, bmd, config, snode, node_status, "
                     "software_version, log");
        return;
    }
    if (!strcmp(what, "smap")) {
        struct sl_smap *s = sl_smap_get();
        sl_resp_json_new(r, 200, sl_smap_json(s));
        sl_smap_put(s);
    } else if (!strcmp(what, "bmd")) {
        struct sl_bmd *b = sl_bmd_get();
        sl_resp_json_new(r, 200, sl_bmd_json(b));
        sl_bmd_put(b);
    } else if (!strcmp(what, "config")) {
        sl_resp_json(r, 200, sl_conf->root);
    } else if (!strcmp(what, "snode")) {
        sl_resp_json_new(r, 200, sl_snode_json(&G.self));
    } else if (!strcmp(what, "node_status") || !strcmp(what, "node_stats")) {
        sl_resp_json_new(r, 200, node_status());
    } else if (!strcmp(what, "software_version")) {
        sl_resp_text(r, 200, SL_VERSION);
    } else if (!strcmp(what, "log")) {
        const char *path = sl_log_path();
        struct sl_buf b;
        sl_buf_init(&b);
        if (!path || sl_read_file(path, &b, 64 * SL_MIB) < 0) {
            sl_buf_free(&b);
            sl_resp_errf(r, SL_ENOENT, "%s: log is written to stderr only (no log_dir configured)", G.name);
            return;
        }
        sl_resp_bytes(r, 200, "text/plain; charset=utf-8", b.p, b.len);
        sl_buf_free(&b);
    } else if (!strcmp(what, "plugins")) {
        sl_resp_json_new(r, 200, sl_arch_plugins_json());
    } else {
        sl_resp_errf(r, SL_EINVAL, "invalid 'what=%s' request: unrecognized 'what=%s' query (valid: smap, bmd, config, "
                     "snode, node_status, software_version, log, plugins)", what, what);
    }
}

void sl_h_metrics(struct sl_req *r)
{
    struct sl_buf b;
    sl_buf_init(&b);
    sl_stats_render(&b, G.role == SL_ROLE_PROXY ? "ais_proxy" : "ais_target", G.id);
    if (sl_is_target()) {
        uint64_t used = 0, total = 0;
        sl_store_capacity(&used, &total);
        sl_buf_printf(&b, "# TYPE ais_target_capacity_used gauge\nais_target_capacity_used{node_id=\"%s\"} %llu\n",
                      G.id, (unsigned long long)used);
        sl_buf_printf(&b, "# TYPE ais_target_capacity_total gauge\nais_target_capacity_total{node_id=\"%s\"} %llu\n",
                      G.id, (unsigned long long)total);
    }
    sl_buf_printf(&b, "# TYPE ais_%s_uptime_ns gauge\nais_%s_uptime_ns{node_id=\"%s\"} %lld\n",
                  G.role == SL_ROLE_PROXY ? "proxy" : "target", G.role == SL_ROLE_PROXY ? "proxy" : "target", G.id,
                  (long long)(sl_mono_ns() - G.start_mono));
    sl_resp_bytes(r, 200, "text/plain; version=0.0.4", b.p ? b.p : "", b.len);
    sl_buf_free(&b);
}
