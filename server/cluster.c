/* SPDX-License-Identifier: MIT
 * cluster.c: role-dependent routing and cluster-wide operations. In
 * standalone mode this node is the whole cluster: one proxy entry and one
 * target entry (same id) in the Smap, no redirects, local listing.
 */
#include "cluster.h"
#include "config.h"
#include "daemon.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "prx.h"
#include "route.h"
#include "tgt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t sl_cluster_uptime_ns(void)
{
    return sl_mono_ns() - G.start_mono;
}

bool sl_cluster_ready(void)
{
    return G.ready;
}

const char *sl_rebalance_state(void)
{
    return "-";
}

int sl_cluster_list_page(const struct sl_bck *b, const struct sl_lsomsg *m, struct sl_lspage *out,
                         struct sl_err *err)
{
    return sl_lso_local_page(b, m, G.id, out, err);
}

void sl_route_objects(struct sl_req *r)
{
    sl_tgt_objects(r);
}

void sl_route_buckets(struct sl_req *r)
{
    sl_prx_buckets(r);
}

static void set_config_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    struct sl_actmsg m;
    if (sl_actmsg_parse(r, &m, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    json_t *partial = NULL;
    if (!strcmp(m.action, "set-config") && m.value && json_is_object(m.value)) {
        partial = json_incref(m.value);
    } else if (r->path_len > strlen("/v1/cluster") && strstr(r->path, "/set-config")) {
        /* PUT /v1/cluster/set-config?k=v&... */
        partial = json_object();
        for (int i = 0; i < r->nq; i++) {
            if (!strcmp(r->q[i].k, "transient"))
                continue;
            json_t *tmp = json_object();
            if (sl_config_set_kv(tmp, r->q[i].k, r->q[i].v, &err) < 0) {
                json_decref(tmp);
                json_decref(partial);
                sl_actmsg_free(&m);
                sl_resp_err(r, &err);
                return;
            }
            json_object_update_recursive(partial, tmp);
            json_decref(tmp);
        }
    } else {
        sl_resp_errf(r, SL_EINVAL, "invalid action \"%s\" for PUT %s (valid: set-config)", m.action, r->path);
        sl_actmsg_free(&m);
        return;
    }
    struct sl_config *nc = sl_config_update(sl_conf, partial, &err);
    json_decref(partial);
    sl_actmsg_free(&m);
    if (!nc) {
        sl_resp_err(r, &err);
        return;
    }
    sl_config_install(nc);
    sl_log_set_level(nc->log_level);
    json_t *cj = sl_config_cluster_json(nc);
    sl_node_save_doc("config", cj);
    json_decref(cj);
    sl_logi("cluster config updated to version %lld", (long long)nc->config_version);
    sl_resp_empty(r, 200);
}

void sl_route_cluster(struct sl_req *r)
{
    if (r->method == SL_M_GET) {
        sl_prx_cluster_get(r);
    } else if (r->method == SL_M_PUT) {
        sl_req_buffer_body(r, sl_conf->http_max_body_json, set_config_done);
    } else {
        sl_resp_method_not_allowed(r, "GET, PUT");
    }
}

void sl_route_daemon_other(struct sl_req *r)
{
    if (r->method == SL_M_PUT)
        sl_req_buffer_body(r, sl_conf->http_max_body_json, set_config_done);
    else
        sl_resp_method_not_allowed(r, "GET, PUT");
}

bool sl_route_ext(struct sl_req *r)
{
    (void)r;
    return false;
}

/* ---- start-up ---- */

#include "start.h"
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
        struct sl_config *nc = sl_config_with_cluster(sl_conf, cj, &err);
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

int sl_start_cluster(struct sl_err *err)
{
    load_persisted_config();
    json_t *sj = sl_node_load_doc("smap");
    struct sl_smap *old = NULL;
    if (sj) {
        old = sl_smap_from_json(sj, err);
        json_decref(sj);
    }
    struct sl_smap *s = sl_smap_new();
    if (old && old->uuid[0]) {
        snprintf(s->uuid, sizeof(s->uuid), "%s", old->uuid);
        snprintf(s->creation_time, sizeof(s->creation_time), "%s", old->creation_time);
        s->version = old->version;
    } else {
        new_uuid(s->uuid, sizeof(s->uuid));
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(s->creation_time, sizeof(s->creation_time), "%Y-%m-%d %H:%M:%S", &tm);
    }
    load_bmd(s->uuid);
    if (G.role == SL_ROLE_STANDALONE) {
        struct sl_snode p = G.self, t = G.self;
        p.type = SL_NODE_PROXY;
        t.type = SL_NODE_TARGET;
        sl_smap_add(s, &p);
        sl_smap_add(s, &t);
        snprintf(s->primary, sizeof(s->primary), "%s", G.id);
        /* a new version only when something changed (e.g. the address) */
        bool same = old && old->nnodes == 2 && sl_smap_find(old, G.id) &&
                    !strcmp(sl_smap_find(old, G.id)->url, G.self.url);
        if (!same)
            s->version++;
    }
    if (old)
        sl_smap_put(old);
    json_t *j = sl_smap_json(s);
    sl_node_save_doc("smap", j);
    json_decref(j);
    sl_smap_install(s);
    return 0;
}

int sl_start_after_http(struct sl_err *err)
{
    (void)err;
    return 0;
}

void sl_stop_cluster(void)
{
}
