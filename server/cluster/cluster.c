/* SPDX-License-Identifier: MIT
 * cluster.c: the cluster's roles and start-up. A node is
 *  - standalone: the whole cluster (one proxy entry and one target entry
 *    with the same id), no redirects, local listing;
 *  - the primary proxy: owns Smap/BMD/config/RMD and the modules'
 *    documents, versions every change and pushes it to all nodes (docs.c),
 *    admits joining nodes (members.c), checks liveness (primary.c), drives
 *    rebalance, maintenance and decommission;
 *  - another proxy or a target: joins the primary and receives metasync.
 * Here: loading what the node kept, joining, and the order of start and
 * stop. What is asked of every target at once (job status, listings) is in
 * fanout.c; the HTTP side of the admin API and the object redirects are in
 * api/cluster_api.c.
 */
#include "cluster.h"
#include "cluster_int.h"
#include "conf.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "peer.h"
#include "sec.h"
#include "start.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void new_uuid(char *out, size_t n)
{
    sl_rand_id(out, n > 12 ? 11 : n - 1);
}

static void load_persisted_config(void)
{
    json_t *cj = sl_node_load_doc("config");
    if (!cj)
        return;
    json_t *v = json_object_get(cj, "config_version");
    if (json_is_integer(v) && json_integer_value(v) > sl_conf->config_version) {
        struct sl_err err;
        struct sl_buf ign;
        sl_buf_init(&ign);
        int nign = sl_config_overridden(sl_conf, cj, &ign);
        struct sl_config *nc = sl_config_with_cluster(sl_conf, cj, &err);
        if (nc && nign)
            sl_logw("the persisted cluster config v%lld overrides %d key%s of the configuration file: %s; the "
                    "cluster's value is in effect. To change a cluster key, use `shale config cluster KEY=VALUE` "
                    "(PUT /v1/cluster/set-config), which every node applies and keeps",
                    (long long)json_integer_value(v), nign, nign == 1 ? "" : "s", ign.p);
        sl_buf_free(&ign);
        if (nc) {
            sl_config_install(nc);
            sl_log_set_level(nc->log_level);
            sl_logi("applied persisted cluster config v%lld (runtime changes survive restarts)",
                    (long long)nc->config_version);
        } else {
            sl_logw("persisted cluster config ignored: %s", err.msg);
        }
    }
    json_decref(cj);
}

static void load_bmd(const char *uuid)
{
    json_t *bj = sl_node_load_doc("bmd");
    struct sl_bmd *b = NULL;
    if (bj) {
        struct sl_err err;
        b = sl_bmd_from_json(bj, &err);
        if (!b)
            sl_logw("persisted BMD ignored: %s", err.msg);
        json_decref(bj);
    }
    if (!b) {
        b = sl_bmd_new();
        snprintf(b->uuid, sizeof(b->uuid), "%s", uuid);
    }
    sl_bmd_install(b);
}

static bool is_self_url(const char *url)
{
    if (!url || !url[0])
        return true;
    char a[300], b[300];
    snprintf(a, sizeof(a), "%s", url);
    size_t n = strlen(a);
    while (n && a[n - 1] == '/')
        a[--n] = 0;
    const char *sch = sl_conf->use_https ? "https" : "http";
    snprintf(b, sizeof(b), "%s://127.0.0.1:%d", sch, G.self.pub_port);
    if (!strcmp(a, G.self.url) || !strcmp(a, G.self.ctrl_url) || !strcmp(a, b))
        return true;
    snprintf(b, sizeof(b), "%s://localhost:%d", sch, G.self.pub_port);
    return !strcmp(a, b);
}

int sl_start_cluster(struct sl_err *err)
{
    load_persisted_config();
    json_t *sj = sl_node_load_doc("smap");
    struct sl_smap *old = NULL;
    if (sj) {
        old = sl_smap_from_json(sj, err);
        json_decref(sj);
    }
    sl_cl_docs_load();
    sl_cl_set_primary(G.role == SL_ROLE_PROXY && is_self_url(sl_conf->primary_url));
    /* the primary (or a standalone node) creates the cluster secret at its
     * first start; every other node must be given a copy */
    if (sl_sec_init(NULL, sl_cl_primary() || G.role == SL_ROLE_STANDALONE, err) < 0) {
        if (old)
            sl_smap_put(old);
        return -1;
    }
    struct sl_smap *s = old ? sl_smap_clone(old) : sl_smap_new();
    if (!s->uuid[0] && (G.role == SL_ROLE_STANDALONE || sl_cl_primary())) {
        new_uuid(s->uuid, sizeof(s->uuid));
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(s->creation_time, sizeof(s->creation_time), "%Y-%m-%d %H:%M:%S", &tm);
    }
    load_bmd(s->uuid);
    bool changed = false;
    if (G.role == SL_ROLE_STANDALONE) {
        struct sl_snode p = G.self, t = G.self;
        p.type = SL_NODE_PROXY;
        t.type = SL_NODE_TARGET;
        const struct sl_snode *o = sl_smap_find(s, G.id);
        changed = !o || strcmp(o->url, G.self.url) || s->nnodes != 2;
        sl_smap_remove(s, G.id);
        sl_smap_add(s, &p);
        sl_smap_add(s, &t);
        snprintf(s->primary, sizeof(s->primary), "%s", G.id);
    } else if (sl_cl_primary()) {
        const struct sl_snode *o = sl_smap_find(s, G.id);
        changed = !o || strcmp(o->url, G.self.url) || strcmp(s->primary, G.id);
        struct sl_snode p = G.self;
        if (o)
            p.flags = (o->flags & ~(uint64_t)SL_SNF_NONELECTABLE) | (G.self.flags & SL_SNF_NONELECTABLE);
        sl_smap_add(s, &p);
        snprintf(s->primary, sizeof(s->primary), "%s", G.id);
    }
    if (changed)
        s->version++;
    if (old)
        sl_smap_put(old);
    json_t *j = sl_smap_json(s);
    sl_node_save_doc("smap", j);
    json_decref(j);
    sl_smap_install(s);
    sl_bmd_listen(sl_cl_on_bmd);
    sl_smap_listen(sl_cl_on_smap);
    return 0;
}

static char *join_hint;      /* the primary found at start, before proxy.primary_url */

/* Where to join, in turn: the primary found at start, proxy.primary_url, and
 * the primary and the other gateways of the last Smap this node had (the
 * configured primary may be down after another was elected). */
static int join_urls(char ***out)
{
    struct sl_smap *s = sl_smap_get();
    char **v = sl_xcalloc((size_t)s->nnodes + 3, sizeof(char *));
    int n = 0;
    if (join_hint)
        v[n++] = sl_xstrdup(join_hint);
    if (sl_conf->primary_url[0])
        v[n++] = sl_xstrdup(sl_conf->primary_url);
    const struct sl_snode *p = sl_smap_primary(s);
    if (p && strcmp(p->id, G.id))
        v[n++] = sl_xstrdup(p->ctrl_url);
    for (int i = 0; i < s->nnodes; i++)
        if (s->nodes[i].type == SL_NODE_PROXY && strcmp(s->nodes[i].id, G.id) && (!p || strcmp(s->nodes[i].id, p->id)))
            v[n++] = sl_xstrdup(s->nodes[i].ctrl_url);
    sl_smap_put(s);
    *out = v;
    return n;
}

static int join(struct sl_err *err)
{
    char **urls = NULL;
    int nurls = join_urls(&urls);
    if (!nurls) {
        free(urls);
        return sl_errf(err, SL_EINVAL,
                       "a %s needs the primary proxy's URL: set proxy.primary_url in the config or pass --primary URL",
                       sl_role_name(G.role));
    }
    const char *purl = urls[0];
    struct sl_smap *s = sl_smap_get();
    json_t *body = json_object();
    json_object_set_new(body, "snode", sl_snode_json(&G.self));
    json_object_set_new(body, "uuid", json_string(s->uuid));
    /* newer than the primary's (it restarted with older ones after a
     * failover): the primary catches up (sl_cluster_join_done) */
    json_object_set_new(body, "smap_version", json_integer(s->version));
    json_object_set_new(body, "smap_term", json_integer(s->term));
    struct sl_bmd *bm = sl_bmd_get();
    json_object_set_new(body, "bmd_version", json_integer(bm->version));
    json_object_set_new(body, "bmd_term", json_integer(bm->term));
    sl_bmd_put(bm);
    sl_smap_put(s);
    size_t len;
    char *bs = sl_json_dump(body, SL_JD_U64STR, &len);
    json_decref(body);
    char *url = NULL;
    int64_t deadline = sl_mono_ns() + sl_conf->join_startup_time_ns;
    int rc = -1;
    int attempts = 0;
    sl_peer_abort_on(&G.stopping); /* a SIGTERM ends the wait at once, whatever the primary does */
    while (!G.stopping) {
        struct sl_peer_resp r;
        purl = urls[attempts % nurls];
        free(url);
        url = sl_xasprintf("%s/v1/cluster/join", purl);
        attempts++;
        if (sl_peer_call("POST", url, NULL, 0, bs, len, sl_conf->cplane_timeout_ns / 1000000 * 5, &r) == 0 &&
            r.status == 200) {
            json_error_t je;
            json_t *docs = sl_json_loadb_u64(r.body.p, r.body.len, &je);
            rc = docs ? sl_cl_apply_docs(docs, err) : sl_errf(err, SL_EIO, "join: bad response from %s", url);
            json_decref(docs);
            sl_peer_resp_free(&r);
            break;
        }
        if (r.status == 401 || r.status == 403) {
            rc = sl_errf(err, SL_EUNAUTH, "join refused by %s: %s. This node's cluster secret (%s) is not the "
                         "cluster's: copy cluster.secret from the primary", purl, r.err, sl_sec_path());
            sl_peer_resp_free(&r);
            break;
        }
        if (r.status == 409) {
            rc = sl_errf(err, SL_EEXIST, "join refused by %s: %s", purl, r.err);
            sl_peer_resp_free(&r);
            break;
        }
        if (sl_mono_ns() > deadline) {
            rc = sl_errf(err, SL_EUNAVAIL, "could not join the primary at %s within %.0fs: %s", purl,
                         (double)sl_conf->join_startup_time_ns / 1e9, r.err);
            sl_peer_resp_free(&r);
            break;
        }
        if (attempts == 1 || attempts % 10 == 0)
            sl_logi("waiting for the primary at %s: %s", purl, r.err);
        sl_peer_resp_free(&r);
        for (int i = 0; i < 5 && !G.stopping && attempts % nurls == 0; i++)
            sl_sleep_ms(100);
    }
    sl_peer_abort_on(NULL);
    if (rc < 0 && G.stopping)
        rc = sl_errf(err, SL_EUNAVAIL, "stopped while waiting to join the primary at %s", purl);
    free(url);
    free(bs);
    for (int i = 0; i < nurls; i++)
        free(urls[i]);
    free(urls);
    return rc;
}

int sl_start_after_http(struct sl_err *err)
{
    sl_peer_global_init();
    if (G.role == SL_ROLE_STANDALONE)
        return 0;
    char *elsewhere = sl_cl_primary() ? sl_cl_primary_elsewhere() : NULL;
    if (elsewhere) {
        sl_logw("%s was the primary, but the cluster elected another meanwhile (%s): joining it as a gateway",
                G.name, elsewhere);
        sl_cl_set_primary(false);
        join_hint = elsewhere;
    }
    if (sl_cl_primary()) {
        struct sl_smap *s = sl_smap_get();
        sl_logi("%s is the primary proxy (cluster %s)", G.name, s->uuid);
        sl_smap_put(s);
        sl_cl_start_keepalive();
        sl_cl_serving();
        /* re-announce our view: nodes that restarted while we were down catch up */
        json_t *docs = sl_cl_all_docs();
        sl_cl_push(docs);
        json_decref(docs);
        return 0;
    }
    if (join(err) < 0)
        return -1;
    sl_cl_serving(); /* (a target that missed a rebalance while down runs the latest one: reb.c) */
    return 0;
}

void sl_stop_cluster(void)
{
    sl_cl_stopping();
    sl_cl_stop_keepalive();
    sl_cl_docs_free();
}
