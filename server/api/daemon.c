/* SPDX-License-Identifier: MIT
 * daemon.c: endpoints every node serves: /v1/health, GET /v1/daemon?what=,
 * /metrics.
 */
#include "daemon.h"
#include "authn.h"
#include "accept.h"
#include "arch.h"
#include "cluster.h"
#include "conf.h"
#include "diskstats.h"
#include "http.h"
#include "jsonx.h"
#include "log.h"
#include "lost.h"
#include "node.h"
#include "reb.h"
#include "stats.h"
#include "store.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    json_object_set_new(sm, "term", json_integer(s->term));
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
    if (G.role == SL_ROLE_TARGET) {
        char tok[64];
        sl_lost_token(tok, sizeof(tok)); /* (the primary's inventory of this target holds while it is the same) */
        json_object_set_new(o, "holdings", json_string(tok));
    }
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

/* the mountpaths' paths (new array of borrowed strings) */
static const char **mpath_list(void)
{
    int n = sl_store_nmpaths();
    const char **p = sl_xcalloc((size_t)(n > 0 ? n : 1), sizeof(char *));
    for (int i = 0; i < n; i++)
        p[i] = sl_store_mpath(i)->path;
    return p;
}

/* {"/mp": {"used", "avail", "total"}} of each mountpath's filesystem (statvfs) */
static json_t *mpath_usage_json(void)
{
    json_t *o = json_object();
    for (int i = 0; i < sl_store_nmpaths(); i++) {
        uint64_t used = 0, total = 0;
        if (sl_store_mpath_usage(i, &used, &total) < 0)
            continue;
        json_t *u = json_object();
        json_object_set_new(u, "used", sl_json_u64(used));
        json_object_set_new(u, "avail", sl_json_u64(total > used ? total - used : 0));
        json_object_set_new(u, "total", sl_json_u64(total));
        json_object_set_new(o, sl_store_mpath(i)->path, u);
    }
    return o;
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
        json_t *mps = json_array(), *mst = json_object();
        int usable = 0;
        for (int i = 0; i < sl_store_nmpaths(); i++) {
            struct sl_mpath *mp = sl_store_mpath(i);
            if (sl_store_mpath_gone(mp))
                continue; /* (detached) */
            usable += sl_store_mpath_usable(mp);
            json_array_append_new(mps, json_string(mp->path));
            json_object_set_new(mst, mp->path, json_string(sl_store_mpath_state(mp)));
        }
        json_object_set_new(cap, "num_disks", json_integer(usable)); /* (in placement: what a mirror can use) */
        json_object_set_new(cap, "mountpaths", mps);
        json_object_set_new(cap, "mountpath_state", mst); /* (Shale's: ok, emptied, vanished) */
        json_object_set_new(cap, "mountpath_usage", mpath_usage_json());
        json_object_set_new(o, "capacity", cap);
        /* the disks under the mountpaths: cumulative counters, made rates by whoever samples twice */
        const char **paths = mpath_list();
        json_t *disk, *none;
        sl_disk_json(paths, sl_store_nmpaths(), &disk, &none);
        free(paths);
        json_object_set_new(o, "disk", disk);
        json_object_set_new(o, "disk_none", none);
        json_object_set_new(o, "disk_mono_ns", sl_json_u64((uint64_t)sl_mono_ns()));
        json_object_set_new(o, "rebalance", json_string(sl_reb_state()));
    }
    json_object_set_new(o, "tracker", sl_stats_tracker_json());
    return o;
}

static void node_status_run(struct sl_req *r, void *arg)
{
    (void)arg;
    sl_resp_json_new(r, 200, node_status());
}

/* ---- GET /v1/daemon?what=log[&severity=][&offset=][&all=true] ---- */

#define LOG_MAX (64 * SL_MIB) /* what one answer carries: a longer log's last part */

/* the lines of a log file at or above the severity: i (all), or w and e
 * (warnings and errors, which AIStore keeps in one file) */
static void log_filter(const struct sl_buf *in, bool errors_only, struct sl_buf *out)
{
    if (!errors_only) {
        sl_buf_add(out, in->p, in->len);
        return;
    }
    for (size_t i = 0; i < in->len;) {
        const char *nl = memchr(in->p + i, '\n', in->len - i);
        size_t n = nl ? (size_t)(nl - (in->p + i)) + 1 : in->len - i;
        const char *l = in->p + i;
        /* glog lines start with the severity letter; JSON lines carry "level" */
        bool keep = (n > 1 && (l[0] == 'W' || l[0] == 'E') && l[1] == ' ') ||
                    (l[0] == '{' && (memmem(l, n, "\"level\":\"warning\"", 17) || memmem(l, n, "\"level\":\"error\"",
                                                                                      15)));
        if (keep)
            sl_buf_add(out, l, n);
        i += n;
    }
}

/* the last max bytes of a log file (from a line start when cut), into out */
static int log_read(const char *path, size_t max, struct sl_buf *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        errno = e;
        return -1;
    }
    size_t size = (size_t)st.st_size, n = SL_MIN(size, max);
    off_t from = (off_t)(size - n);
    sl_buf_reserve(out, n + 1);
    ssize_t r = n ? pread(fd, out->p, n, from) : 0;
    int e = errno;
    close(fd);
    if (r < 0) {
        errno = e;
        return -1;
    }
    out->len = (size_t)r;
    out->p[out->len] = 0;
    if (from > 0) {
        /* cut: start at the first whole line */
        char *nl = memchr(out->p, '\n', out->len);
        size_t skip = nl ? (size_t)(nl - out->p) + 1 : out->len;
        memmove(out->p, out->p + skip, out->len - skip + 1);
        out->len -= skip;
    }
    return 0;
}

static la_ssize_t tgz_write(struct archive *a, void *ctx, const void *buf, size_t n)
{
    (void)a;
    return sl_buf_add(ctx, buf, n) < 0 ? -1 : (la_ssize_t)n;
}

static void log_run(struct sl_req *r, void *arg)
{
    (void)arg;
    const char *sev = sl_req_query(r, "severity"), *off = sl_req_query(r, "offset"), *all = sl_req_query(r, "all");
    bool errors_only = false;
    if (sev && *sev) {
        char c = (char)(*sev | 0x20);
        if (c == 'w' || c == 'e')
            errors_only = true;
        else if (c != 'i') {
            sl_resp_errf(r, SL_EINVAL, "unknown log severity \"%s\" (valid: info, warning, error, or i, w, e)", sev);
            return;
        }
    }
    uint64_t offset = 0;
    char *end = NULL;
    if (off && *off)
        offset = strtoull(off, &end, 10);
    if (off && *off && (*end || *off == '-')) {
        sl_resp_errf(r, SL_EINVAL, "invalid log offset \"%s\": a byte offset (non-negative integer)", off);
        return;
    }
    const char *path = sl_log_path();
    if (!path) {
        sl_resp_errf(r, SL_ENOENT, "%s: the log goes to stderr only (no log_dir configured)", G.name);
        return;
    }
    bool tgz = all && (!strcmp(all, "true") || !strcmp(all, "1"));
    struct sl_buf raw, sel, out;
    sl_buf_init(&raw);
    sl_buf_init(&sel);
    sl_buf_init(&out);
    if (!tgz) {
        if (log_read(path, LOG_MAX, &raw) < 0) {
            sl_resp_errf(r, SL_ENOENT, "%s: cannot read its log %s: %s", G.name, path, strerror(errno));
        } else {
            log_filter(&raw, errors_only, &sel);
            if (offset > sel.len)
                sl_resp_errf(r, SL_EINVAL, "log likely rotated (offset %llu, size %llu): read it again from offset=0",
                             (unsigned long long)offset, (unsigned long long)sel.len);
            else
                sl_resp_bytes(r, 200, "text/plain; charset=utf-8", sel.p + offset, sel.len - offset);
        }
    } else {
        /* the log and its rotated predecessor, as a tar.gz */
        struct archive *a = archive_write_new();
        archive_write_set_format_pax_restricted(a);
        archive_write_add_filter_gzip(a);
        int rc = archive_write_open(a, &out, NULL, tgz_write, NULL);
        char *paths[2] = { sl_xstrdup(path), sl_xasprintf("%s.1", path) };
        for (int i = 0; i < 2 && rc == ARCHIVE_OK; i++) {
            sl_buf_reset(&raw);
            sl_buf_reset(&sel);
            if (log_read(paths[i], LOG_MAX / 2, &raw) < 0)
                continue; /* no rotated log yet */
            log_filter(&raw, errors_only, &sel);
            const char *base = strrchr(paths[i], '/');
            struct archive_entry *e = archive_entry_new();
            archive_entry_set_pathname(e, base ? base + 1 : paths[i]);
            archive_entry_set_size(e, (la_int64_t)sel.len);
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_perm(e, 0644);
            archive_entry_set_mtime(e, time(NULL), 0);
            rc = archive_write_header(a, e);
            if (rc == ARCHIVE_OK && sel.len && archive_write_data(a, sel.p, sel.len) < 0)
                rc = ARCHIVE_FATAL;
            archive_entry_free(e);
        }
        if (rc == ARCHIVE_OK)
            rc = archive_write_close(a);
        if (rc != ARCHIVE_OK)
            sl_resp_errf(r, SL_EINTERNAL, "%s: packing its logs: %s", G.name, archive_error_string(a));
        else
            sl_resp_bytes(r, 200, "application/gzip", out.p, out.len);
        archive_write_free(a);
        free(paths[0]);
        free(paths[1]);
    }
    sl_buf_free(&raw);
    sl_buf_free(&sel);
    sl_buf_free(&out);
}

void sl_h_daemon_get(struct sl_req *r)
{
    const char *what = sl_req_query(r, "what");
    if (!what && r->nq == 0 && G.role != SL_ROLE_TARGET) { /* AuthN's GET /v1/daemon: its configuration */
        sl_authn_config_get(r);
        return;
    }
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
        sl_resp_json_new(r, 200, sl_config_redacted(sl_conf->root));
    } else if (!strcmp(what, "snode")) {
        sl_resp_json_new(r, 200, sl_snode_json(&G.self));
    } else if (!strcmp(what, "node_status") || !strcmp(what, "node_stats")) {
        sl_req_offload_disk(r, node_status_run, NULL, NULL); /* (statvfs, stat and /proc reads: off the HTTP thread) */
    } else if (!strcmp(what, "software_version")) {
        sl_resp_text(r, 200, SL_VERSION);
    } else if (!strcmp(what, "log")) {
        sl_req_offload(r, log_run, NULL, NULL);
    } else if (!strcmp(what, "plugins")) {
        sl_resp_json_new(r, 200, sl_arch_plugins_json());
    } else if (!strcmp(what, "mountpaths")) {
        if (sl_is_target())
            sl_resp_json_new(r, 200, sl_mpath_list_json());
        else
            sl_resp_errf(r, SL_EINVAL, "%s is a gateway, which has no mountpaths: ask a target (GET "
                         "/v1/reverse/daemon?what=mountpaths with header Ais-Node-Id)", G.name);
    } else {
        sl_resp_errf(r, SL_EINVAL, "invalid 'what=%s' request: unrecognized 'what=%s' query (valid: smap, bmd, config, "
                     "snode, node_status, software_version, log, plugins, mountpaths)", what, what);
    }
}

/* ---- GET /v1/reverse/daemon?what=...: through the gateway, to node Ais-Node-Id ---- */

static void reverse_run(struct sl_req *r, void *arg)
{
    char *id = arg;
    struct sl_smap *sm = sl_smap_get();
    const struct sl_snode *n = sl_smap_find(sm, id);
    if (!n) {
        sl_resp_errf(r, SL_ENOENT, "node \"%s\" is not in the cluster map v%lld (the nodes: GET /v1/daemon?what=smap)",
                     id, (long long)sm->version);
        sl_smap_put(sm);
        free(id);
        return;
    }
    const char *q = strchr(r->raw_uri, '?');
    char *url = sl_xasprintf("%s/v1/daemon%s", n->ctrl_url, q ? q : "");
    sl_smap_put(sm);
    struct sl_peer_resp pr;
    bool put = r->method == SL_M_PUT; /* an action for that node: {"action": "reset-config"}, ... */
    struct sl_peer_hdr h = { "Content-Type", "application/json" };
    int rc = sl_peer_call(put ? "PUT" : "GET", url, put ? &h : NULL, put ? 1 : 0, put && r->body.len ? r->body.p : NULL,
                          put ? r->body.len : 0, sl_conf->cplane_timeout_ns / 1000000 * 5, &pr);
    if (rc < 0) {
        sl_resp_errf(r, SL_EUNAVAIL, "node %s did not answer: %s", id, pr.err);
    } else {
        const char *what = sl_req_query(r, "what"), *all = sl_req_query(r, "all");
        const char *ct = pr.status >= 400 || put ? "application/json"
                         : what && !strcmp(what, "log") ? (all && *all && strcmp(all, "false") ? "application/gzip"
                                                                                              : "text/plain; charset=utf-8")
                         : what && !strcmp(what, "software_version") ? "text/plain; charset=utf-8"
                                                                    : "application/json";
        sl_resp_bytes(r, (int)pr.status, ct, pr.body.p ? pr.body.p : "", pr.body.len);
    }
    sl_peer_resp_free(&pr);
    free(url);
    free(id);
}

static void reverse_put_done(struct sl_req *r)
{
    sl_req_offload(r, reverse_run, free, sl_xstrdup(sl_req_header(r, "Ais-Node-Id")));
}

void sl_h_reverse(struct sl_req *r)
{
    bool mpaths = r->path_len == strlen("/v1/reverse/daemon/mountpaths") &&
                  !memcmp(r->path, "/v1/reverse/daemon/mountpaths", r->path_len);
    if (!mpaths && (r->path_len != strlen("/v1/reverse/daemon") ||
                    memcmp(r->path, "/v1/reverse/daemon", r->path_len))) {
        sl_resp_errf(r, SL_ENOENT, "no such endpoint %s (the reverse paths are GET /v1/reverse/daemon?what=..., PUT "
                     "/v1/reverse/daemon with an action, and PUT|POST|DELETE /v1/reverse/daemon/mountpaths, with "
                     "header Ais-Node-Id)", r->path);
        return;
    }
    if (!mpaths && r->method != SL_M_GET && r->method != SL_M_PUT) {
        sl_resp_method_not_allowed(r, "GET, PUT");
        return;
    }
    const char *id = sl_req_header(r, "Ais-Node-Id");
    if (!id || !*id) {
        sl_resp_errf(r, SL_EINVAL, "%s %s: name the node in the Ais-Node-Id header (the nodes: GET "
                     "/v1/daemon?what=smap)", r->method_str, r->path);
        return;
    }
    if (mpaths && r->method != SL_M_GET) {
        sl_mpath_reverse(r, id);
        return;
    }
    if (!strcmp(id, G.id)) {
        if (r->method == SL_M_PUT) /* (route.c sends those to sl_route_daemon_other) */
            sl_resp_errf(r, SL_EINTERNAL, "PUT /v1/reverse/daemon to this node itself: not routed");
        else
            sl_h_daemon_get(r);
        return;
    }
    if (G.role != SL_ROLE_PROXY) {
        sl_resp_errf(r, SL_EINVAL, "%s is not a gateway: send /v1/reverse/daemon to a gateway, or GET /v1/daemon "
                     "to the node itself", G.name);
        return;
    }
    if (r->method == SL_M_PUT)
        sl_req_buffer_body(r, sl_conf->http_max_body_json, reverse_put_done);
    else
        sl_req_offload(r, reverse_run, free, sl_xstrdup(id));
}

static void metrics_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_buf b;
    sl_buf_init(&b);
    const char *role = G.role == SL_ROLE_PROXY ? "proxy" : "target";
    char prefix[16];
    snprintf(prefix, sizeof(prefix), "ais_%s", role);
    sl_stats_render(&b, prefix, G.id);
    if (sl_is_target()) {
        uint64_t used = 0, total = 0;
        sl_store_capacity(&used, &total);
        sl_buf_printf(&b, "# HELP ais_target_capacity_used bytes used on the mountpaths' filesystems\n"
                          "# TYPE ais_target_capacity_used gauge\nais_target_capacity_used{node_id=\"%s\"} %llu\n",
                      G.id, (unsigned long long)used);
        sl_buf_printf(&b, "# HELP ais_target_capacity_total bytes on the mountpaths' filesystems\n"
                          "# TYPE ais_target_capacity_total gauge\nais_target_capacity_total{node_id=\"%s\"} %llu\n",
                      G.id, (unsigned long long)total);
        sl_buf_printf(&b, "# HELP shale_capacity_used_bytes bytes used on the mountpaths' filesystems\n"
                          "# TYPE shale_capacity_used_bytes gauge\nshale_capacity_used_bytes{node_id=\"%s\"} %llu\n",
                      G.id, (unsigned long long)used);
        sl_buf_printf(&b, "# HELP shale_capacity_bytes bytes on the mountpaths' filesystems\n"
                          "# TYPE shale_capacity_bytes gauge\nshale_capacity_bytes{node_id=\"%s\"} %llu\n",
                      G.id, (unsigned long long)total);
        const char **paths = mpath_list();
        sl_disk_render(&b, prefix, G.id, paths, sl_store_nmpaths());
        free(paths);
    }
    unsigned conns[256], nl = sl_accept_loads(conns, 256);
    sl_buf_printf(&b, "# HELP shale_http_connections client connections open, per HTTP poll loop\n"
                      "# TYPE shale_http_connections gauge\n");
    for (unsigned i = 0; i < nl; i++)
        sl_buf_printf(&b, "shale_http_connections{node_id=\"%s\",loop=\"%u\"} %u\n", G.id, i, conns[i]);
    double up = (double)(sl_mono_ns() - G.start_mono) / 1e9;
    sl_buf_printf(&b, "# HELP ais_%s_uptime seconds since the node started\n# TYPE ais_%s_uptime gauge\n"
                      "ais_%s_uptime{node_id=\"%s\"} %.3f\n", role, role, role, G.id, up);
    sl_buf_printf(&b, "# HELP shale_uptime_seconds seconds since the node started\n# TYPE shale_uptime_seconds gauge\n"
                      "shale_uptime_seconds{node_id=\"%s\",role=\"%s\"} %.3f\n", G.id, role, up);
    sl_resp_bytes(r, 200, "text/plain; version=0.0.4", b.p ? b.p : "", b.len);
    sl_buf_free(&b);
}

void sl_h_metrics(struct sl_req *r)
{
    if (sl_is_target())
        sl_req_offload_disk(r, metrics_run, NULL, NULL); /* (statvfs and /proc/diskstats: off the HTTP thread) */
    else
        metrics_run(r, NULL);
}
