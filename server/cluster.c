/* SPDX-License-Identifier: MIT
 * cluster.c: roles, membership and routing.
 *
 *  - standalone: this node is the whole cluster (one proxy entry and one
 *    target entry with the same id), no redirects, local listing;
 *  - primary proxy: owns Smap/BMD/config/RMD/EtlMD, versions every change and
 *    pushes it to all nodes (metasync), admits joining nodes, checks liveness,
 *    drives rebalance, maintenance and decommission;
 *  - other proxies and targets join the primary and receive metasync.
 *
 * Gateways redirect object requests to the HRW owner (GET 301, others 307,
 * with pid/utm), answer 503 naming the owner when it is offline, and merge
 * list pages from every target (failing loudly if one does not answer).
 */
#include "cluster.h"
#include "config.h"
#include "daemon.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "peer.h"
#include "prx.h"
#include "reb.h"
#include "route.h"
#include "start.h"
#include "stats.h"
#include "tgt.h"
#include "xact.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t cmu = PTHREAD_MUTEX_INITIALIZER;
static json_t *rmd;        /* {"version": N, "id": "gN"} */
static json_t *etlmd;      /* {"version": N, ...} owned by the ETL module */
static bool primary;
static pthread_t ka_thr;
static volatile bool ka_stop, ka_live;
static sl_doc_listener etlmd_listener;

struct pend {
    char id[48];
    char reb[32];
    bool decommission;
    bool no_shutdown;
};
static struct pend pending[32];
static int npending;

bool sl_is_primary(void)
{
    return primary || G.role == SL_ROLE_STANDALONE;
}

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
    static __thread char buf[128];
    if (G.role != SL_ROLE_TARGET)
        return "-";
    sl_reb_describe(buf, sizeof(buf));
    return buf;
}

static int64_t doc_version(const json_t *d)
{
    return d ? sl_json_int(d, "version", 0) : 0;
}

json_t *sl_cluster_doc(const char *name)
{
    pthread_mutex_lock(&cmu);
    json_t *d = !strcmp(name, "etlmd") ? etlmd : !strcmp(name, "rmd") ? rmd : NULL;
    d = d ? json_incref(d) : NULL;
    pthread_mutex_unlock(&cmu);
    return d;
}

void sl_cluster_doc_listen(sl_doc_listener fn)
{
    etlmd_listener = fn;
}

/* ---- metasync ---- */

static json_t *config_doc(void)
{
    json_t *c = sl_config_cluster_json(sl_conf);
    json_object_set_new(c, "version", json_integer(sl_conf->config_version));
    return c;
}

static json_t *all_docs(void)
{
    json_t *o = json_object();
    struct sl_smap *s = sl_smap_get();
    struct sl_bmd *b = sl_bmd_get();
    json_object_set_new(o, "uuid", json_string(s->uuid));
    json_object_set_new(o, "smap", sl_smap_json(s));
    json_object_set_new(o, "bmd", sl_bmd_json(b));
    json_object_set_new(o, "config", config_doc());
    pthread_mutex_lock(&cmu);
    if (rmd)
        json_object_set(o, "rmd", rmd);
    if (etlmd)
        json_object_set(o, "etlmd", etlmd);
    pthread_mutex_unlock(&cmu);
    sl_smap_put(s);
    sl_bmd_put(b);
    return o;
}

/* Push docs to every node but this one (and nodes known to be offline). */
static void push(json_t *docs)
{
    struct sl_smap *s = sl_smap_get();
    size_t len;
    char *body = sl_json_dump(docs, SL_JD_U64STR, &len);
    struct sl_fan *f = sl_xcalloc((size_t)(s->nnodes ? s->nnodes : 1), sizeof(*f));
    char **urls = sl_xcalloc((size_t)(s->nnodes ? s->nnodes : 1), sizeof(char *));
    int n = 0;
    for (int i = 0; i < s->nnodes; i++) {
        const struct sl_snode *nd = &s->nodes[i];
        if (!strcmp(nd->id, G.id) || (nd->flags & SL_SNF_OFFLINE))
            continue;
        bool dup = false; /* one push per node id (standalone-style dual entries) */
        for (int j = 0; j < i; j++)
            if (!strcmp(s->nodes[j].id, nd->id))
                dup = true;
        if (dup)
            continue;
        urls[n] = sl_xasprintf("%s/v1/metasync", nd->ctrl_url);
        f[n].url = urls[n];
        f[n].method = "PUT";
        f[n].body = body;
        f[n].blen = len;
        n++;
    }
    sl_peer_fanout(f, n, 0);
    for (int i = 0; i < n; i++) {
        if (!f[i].ok || f[i].resp.status != 200)
            sl_logw("metasync to %s failed: %s", f[i].url, f[i].resp.err);
        free(urls[i]);
    }
    sl_peer_fanout_free(f, n);
    free(f);
    free(urls);
    free(body);
    sl_smap_put(s);
}

static void push_one(const char *name, json_t *doc)
{
    json_t *o = json_object();
    struct sl_smap *s = sl_smap_get();
    json_object_set_new(o, "uuid", json_string(s->uuid));
    sl_smap_put(s);
    json_object_set_new(o, name, doc);
    push(o);
    json_decref(o);
}

static void on_bmd(const struct sl_bmd *old, const struct sl_bmd *cur)
{
    if (primary)
        push_one("bmd", sl_bmd_json(cur));
}

static void on_smap(const struct sl_smap *old, const struct sl_smap *cur)
{
    if (G.role == SL_ROLE_TARGET)
        sl_reb_smap_changed(old, cur);
    if (primary)
        push_one("smap", sl_smap_json(cur));
}

static void shutdown_self(const char *why)
{
    sl_logi("shutting down: %s", why);
    kill(getpid(), SIGTERM);
}

static void set_rmd(json_t *d)
{
    pthread_mutex_lock(&cmu);
    json_decref(rmd);
    rmd = json_incref(d);
    pthread_mutex_unlock(&cmu);
    sl_node_save_doc("rmd", d);
}

/* Apply received documents. Returns -1 with err on a foreign cluster. */
static int apply_docs(json_t *docs, struct sl_err *err)
{
    struct sl_smap *cur = sl_smap_get();
    const char *uuid = sl_json_str(docs, "uuid", "");
    if (cur->uuid[0] && uuid[0] && strcmp(cur->uuid, uuid)) {
        sl_errf(err, SL_EEXIST,
                "%s belongs to cluster %s, not to cluster %s; to move it, stop it, remove its node metadata "
                "(%s/meta and %s/node_id) and start it again, or point proxy.primary_url at the primary of "
                "cluster %s",
                G.name, cur->uuid, uuid, sl_conf->confdir, sl_conf->confdir, cur->uuid);
        sl_smap_put(cur);
        return -1;
    }
    sl_smap_put(cur);
    json_t *d;
    if ((d = json_object_get(docs, "config")) && doc_version(d) > sl_conf->config_version) {
        json_t *c = json_deep_copy(d);
        json_object_del(c, "version");
        struct sl_config *nc = sl_config_with_cluster(sl_conf, c, err);
        json_decref(c);
        if (nc) {
            sl_config_install(nc);
            sl_log_set_level(nc->log_level);
            json_t *cj = sl_config_cluster_json(nc);
            sl_node_save_doc("config", cj);
            json_decref(cj);
            sl_logi("config v%lld received", (long long)nc->config_version);
        } else {
            sl_logw("received config ignored: %s", err->msg);
        }
    }
    if ((d = json_object_get(docs, "bmd"))) {
        struct sl_bmd *b = sl_bmd_from_json(d, err);
        if (b && sl_bmd_receive(b) == 1)
            sl_logi("BMD v%s received", sl_json_str(d, "version", "?"));
    }
    if ((d = json_object_get(docs, "smap"))) {
        struct sl_smap *s = sl_smap_from_json(d, err);
        if (s) {
            bool me = sl_smap_find(s, G.id) != NULL;
            int64_t v = s->version;
            if (sl_smap_receive(s) == 1) {
                sl_logi("Smap v%lld received", (long long)v);
                if (!me && !primary && G.ready)
                    shutdown_self("this node was removed from the cluster map (decommissioned)");
            }
        }
    }
    if ((d = json_object_get(docs, "rmd"))) {
        pthread_mutex_lock(&cmu);
        bool newer = doc_version(d) > doc_version(rmd);
        pthread_mutex_unlock(&cmu);
        if (newer) {
            set_rmd(d);
            if (G.role == SL_ROLE_TARGET)
                sl_reb_start(sl_json_str(d, "id", "g0"));
        }
    }
    if ((d = json_object_get(docs, "etlmd"))) {
        pthread_mutex_lock(&cmu);
        bool newer = doc_version(d) > doc_version(etlmd);
        if (newer) {
            json_decref(etlmd);
            etlmd = json_incref(d);
        }
        pthread_mutex_unlock(&cmu);
        if (newer) {
            sl_node_save_doc("etlmd", d);
            if (etlmd_listener)
                etlmd_listener(d);
        }
    }
    return 0;
}

int sl_cluster_set_etlmd(json_t *doc)
{
    pthread_mutex_lock(&cmu);
    int64_t v = doc_version(etlmd) + 1;
    json_object_set_new(doc, "version", json_integer(v));
    json_decref(etlmd);
    etlmd = json_incref(doc);
    pthread_mutex_unlock(&cmu);
    sl_node_save_doc("etlmd", doc);
    if (etlmd_listener)
        etlmd_listener(doc);
    if (primary)
        push_one("etlmd", json_incref(doc));
    json_decref(doc);
    return 0;
}

static void metasync_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        if (!err.msg[0])
            sl_errf(&err, SL_EINVAL, "metasync: body must be a JSON object of documents");
        sl_resp_err(r, &err);
        return;
    }
    if (apply_docs(j, &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
    json_decref(j);
}

/* A target that learns of a bucket late (a redirected request arrived before
 * the metasync) pulls the BMD from the primary once. */
int sl_cluster_refresh_bmd(void)
{
    if (G.role == SL_ROLE_STANDALONE || primary)
        return 0;
    struct sl_smap *s = sl_smap_get();
    const struct sl_snode *p = sl_smap_primary(s);
    char *url = p ? sl_xasprintf("%s/v1/daemon?what=bmd", p->ctrl_url)
                : sl_conf->primary_url[0] ? sl_xasprintf("%s/v1/daemon?what=bmd", sl_conf->primary_url) : NULL;
    sl_smap_put(s);
    if (!url)
        return -1;
    struct sl_peer_resp r;
    int rc = -1;
    if (sl_peer_call("GET", url, NULL, 0, NULL, 0, 0, &r) == 0 && r.status == 200) {
        json_error_t je;
        json_t *j = sl_json_loadb_u64(r.body.p, r.body.len, &je);
        struct sl_err err;
        struct sl_bmd *b = j ? sl_bmd_from_json(j, &err) : NULL;
        if (b)
            rc = sl_bmd_receive(b);
        json_decref(j);
    }
    sl_peer_resp_free(&r);
    free(url);
    return rc;
}

/* ---- rebalance / membership edits (primary) ---- */

static char *trigger_rebalance(const char *why)
{
    if (!sl_conf->rebalance_enabled) {
        sl_logi("rebalance not started (%s): rebalance.enabled is false", why);
        return NULL;
    }
    pthread_mutex_lock(&cmu);
    int64_t v = doc_version(rmd) + 1;
    pthread_mutex_unlock(&cmu);
    char id[32];
    snprintf(id, sizeof(id), "g%lld", (long long)v);
    json_t *d = json_pack("{s:I,s:s}", "version", (json_int_t)v, "id", id);
    set_rmd(d);
    json_decref(d);
    sl_logi("rebalance %s: %s", id, why);
    /* everything, not just the RMD: a node that just joined must know every
     * bucket before objects start arriving (documents apply in order: config,
     * BMD, Smap, RMD) */
    json_t *docs = all_docs();
    push(docs);
    json_decref(docs);
    return sl_xstrdup(id);
}

struct join_arg {
    struct sl_snode n;
    bool new_target;
};

static int edit_join(struct sl_smap *s, void *arg, struct sl_err *err)
{
    struct join_arg *ja = arg;
    const struct sl_snode *old = sl_smap_find(s, ja->n.id);
    if (old && old->type != ja->n.type)
        return sl_errf(err, SL_EEXIST, "node id %s is already used by a %s", ja->n.id,
                       old->type == SL_NODE_PROXY ? "proxy" : "target");
    struct sl_snode n = ja->n;
    if (old) {
        n.flags = old->flags & ~(uint64_t)SL_SNF_OFFLINE;
        if (old->flags == n.flags && !strcmp(old->url, n.url) && !strcmp(old->ctrl_url, n.ctrl_url) &&
            !strcmp(old->data_url, n.data_url))
            return 1; /* nothing changed */
    } else {
        ja->new_target = n.type == SL_NODE_TARGET;
    }
    sl_smap_add(s, &n);
    return 0;
}

static void join_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    if (!primary) {
        sl_resp_errf(r, SL_EINVAL, "%s is not the primary proxy; join via proxy.primary_url", G.name);
        return;
    }
    json_t *j = sl_req_body_json(r, &err);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        sl_resp_errf(r, SL_EINVAL, "join: body must be {\"snode\": {...}, \"uuid\": \"...\"}");
        return;
    }
    struct join_arg ja;
    memset(&ja, 0, sizeof(ja));
    if (sl_snode_from_json(json_object_get(j, "snode"), &ja.n, &err) < 0) {
        json_decref(j);
        sl_resp_err(r, &err);
        return;
    }
    struct sl_smap *s = sl_smap_get();
    const char *uuid = sl_json_str(j, "uuid", "");
    if (uuid[0] && strcmp(uuid, s->uuid)) {
        char nm[80];
        sl_snode_name(&ja.n, nm, sizeof(nm));
        sl_resp_errf(r, SL_EEXIST,
                     "%s was a member of cluster %s, but this is cluster %s (primary %s): it cannot join. To "
                     "add it to this cluster, stop it and remove its node metadata (confdir/meta and "
                     "confdir/node_id) and start it again; to keep it in its own cluster, set proxy.primary_url "
                     "to that cluster's primary",
                     nm, uuid, s->uuid, G.name);
        sl_smap_put(s);
        json_decref(j);
        return;
    }
    sl_smap_put(s);
    json_decref(j);
    /* the joiner learns every bucket and the config before any gateway can
     * route a request to it */
    {
        json_t *docs = all_docs();
        char *url = sl_xasprintf("%s/v1/metasync", ja.n.ctrl_url);
        struct sl_peer_resp pr;
        sl_peer_json("PUT", url, docs, 0, &pr);
        if (pr.status != 200)
            sl_logw("join: pre-sync of %s failed: %s", url, pr.err);
        sl_peer_resp_free(&pr);
        free(url);
    }
    if (sl_smap_modify(edit_join, &ja, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    char nm[80];
    sl_snode_name(&ja.n, nm, sizeof(nm));
    sl_logi("%s joined from %s%s", nm, ja.n.url, ja.new_target ? " (new target)" : "");
    if (ja.new_target) {
        char *id = trigger_rebalance("target joined");
        free(id);
    }
    sl_resp_json_new(r, 200, all_docs());
}

struct flag_arg {
    const char *id;
    uint64_t set, clear;
    bool remove;
};

static int edit_flags(struct sl_smap *s, void *arg, struct sl_err *err)
{
    struct flag_arg *fa = arg;
    bool found = false, changed = false;
    for (int i = 0; i < s->nnodes; i++) {
        if (strcmp(s->nodes[i].id, fa->id))
            continue;
        found = true;
        uint64_t nf = (s->nodes[i].flags | fa->set) & ~fa->clear;
        if (nf != s->nodes[i].flags) {
            s->nodes[i].flags = nf;
            changed = true;
        }
    }
    if (!found)
        return sl_errf(err, SL_ENOENT, "node %s is not in the cluster map (see GET /v1/daemon?what=smap)", fa->id);
    if (fa->remove) {
        sl_smap_remove(s, fa->id);
        return 0;
    }
    return changed ? 0 : 1;
}

static void add_pending(const char *id, const char *reb, bool decomm, bool no_shutdown)
{
    pthread_mutex_lock(&cmu);
    if (npending < (int)SL_ARRAY_SIZE(pending)) {
        struct pend *p = &pending[npending++];
        snprintf(p->id, sizeof(p->id), "%s", id);
        snprintf(p->reb, sizeof(p->reb), "%s", reb ? reb : "");
        p->decommission = decomm;
        p->no_shutdown = no_shutdown;
    }
    pthread_mutex_unlock(&cmu);
}

static void ask_shutdown(const struct sl_snode *n)
{
    char *url = sl_xasprintf("%s/v1/daemon", n->ctrl_url);
    struct sl_peer_resp r;
    sl_peer_json("PUT", url, json_pack("{s:s}", "action", "shutdown"), 0, &r);
    sl_peer_resp_free(&r);
    free(url);
}

static void remove_node(const char *id, bool no_shutdown)
{
    struct sl_smap *s = sl_smap_get();
    const struct sl_snode *n0 = sl_smap_find(s, id);
    struct sl_snode n;
    bool have = n0 != NULL;
    if (have)
        n = *n0;
    sl_smap_put(s);
    struct flag_arg fa = { .id = id, .remove = true };
    struct sl_err err;
    if (sl_smap_modify(edit_flags, &fa, &err) < 0)
        return;
    sl_logi("node %s removed from the cluster map (decommissioned)", id);
    if (have && !no_shutdown)
        ask_shutdown(&n);
}

/* ---- admin actions (PUT /v1/cluster) ---- */

static void cluster_put_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    struct sl_actmsg m;
    if (sl_actmsg_parse(r, &m, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    const char *a = m.action;
    if (!strcmp(a, "set-config") || (strstr(r->path, "/set-config") && !a[0])) {
        json_t *partial = NULL;
        if (m.value && json_is_object(m.value)) {
            partial = json_incref(m.value);
        } else {
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
        }
        struct sl_config *nc = sl_config_update(sl_conf, partial, &err);
        json_decref(partial);
        if (!nc) {
            sl_resp_err(r, &err);
        } else {
            sl_config_install(nc);
            sl_log_set_level(nc->log_level);
            json_t *cj = sl_config_cluster_json(nc);
            sl_node_save_doc("config", cj);
            json_decref(cj);
            sl_logi("cluster config updated to version %lld", (long long)nc->config_version);
            if (primary)
                push_one("config", config_doc());
            sl_resp_empty(r, 200);
        }
    } else if (!strcmp(a, "start-maintenance") || !strcmp(a, "stop-maintenance") ||
               !strcmp(a, "decommission-node") || !strcmp(a, "shutdown-node")) {
        const char *sid = sl_json_str(m.value, "sid", "");
        if (!sid[0]) {
            sl_resp_errf(r, SL_EINVAL, "%s: value must name the node: {\"sid\": \"<node id>\"}", a);
        } else if (!strcmp(sid, G.id)) {
            sl_resp_errf(r, SL_EINVAL, "%s: %s is the primary proxy and cannot be put into maintenance or "
                         "decommissioned", a, G.name);
        } else if (G.role == SL_ROLE_STANDALONE) {
            sl_resp_errf(r, SL_EUNSUPP, "%s: a standalone node has no other nodes", a);
        } else {
            struct flag_arg fa = { .id = sid };
            bool skip_reb = sl_json_bool(m.value, "skip_rebalance", false);
            bool no_shutdown = sl_json_bool(m.value, "no_shutdown", false);
            if (!strcmp(a, "start-maintenance"))
                fa.set = SL_SNF_MAINT;
            else if (!strcmp(a, "stop-maintenance"))
                fa.clear = SL_SNF_MAINT | SL_SNF_DECOMM;
            else
                fa.set = SL_SNF_DECOMM;
            struct sl_smap *s = sl_smap_get();
            const struct sl_snode *n = sl_smap_find(s, sid);
            bool is_target = n && n->type == SL_NODE_TARGET;
            struct sl_snode ncopy;
            if (n)
                ncopy = *n;
            sl_smap_put(s);
            if (!n) {
                sl_resp_errf(r, SL_ENOENT, "%s: node %s is not in the cluster map", a, sid);
            } else if (!strcmp(a, "shutdown-node")) {
                ask_shutdown(&ncopy);
                sl_resp_empty(r, 200);
            } else if (sl_smap_modify(edit_flags, &fa, &err) < 0) {
                sl_resp_err(r, &err);
            } else {
                char *reb = NULL;
                bool decomm = !strcmp(a, "decommission-node");
                if (is_target && !skip_reb)
                    reb = trigger_rebalance(a);
                if (decomm && (!reb || !is_target))
                    remove_node(sid, no_shutdown);
                else if (decomm || !strcmp(a, "start-maintenance"))
                    add_pending(sid, reb, decomm, no_shutdown);
                sl_logi("%s %s%s%s", a, sid, reb ? ", rebalance " : "", reb ? reb : "");
                sl_resp_text(r, 200, reb ? reb : "");
                free(reb);
            }
        }
    } else if (!strcmp(a, "start")) {
        const char *kind = sl_job_kind_norm(sl_json_str(m.value, "kind", ""));
        if (!strcmp(kind, "rebalance")) {
            if (G.role == SL_ROLE_STANDALONE) {
                sl_resp_errf(r, SL_EUNSUPP, "start rebalance: a standalone node has nothing to rebalance");
            } else {
                char *id = trigger_rebalance("requested by the user");
                if (id)
                    sl_resp_text(r, 200, id);
                else
                    sl_resp_errf(r, SL_EINVAL, "rebalance is disabled (rebalance.enabled=false)");
                free(id);
            }
        } else {
            sl_resp_errf(r, SL_EINVAL, "start: unsupported job kind \"%s\" (startable: rebalance)", kind);
        }
    } else if (!strcmp(a, "stop")) {
        const char *id = sl_json_str(m.value, "id", ""), *kind = sl_json_str(m.value, "kind", "");
        if (!id[0] && !kind[0]) {
            sl_resp_errf(r, SL_EINVAL, "stop: value must name the job: {\"ID\": \"...\"} and/or {\"Kind\": \"...\"}");
        } else {
            int n = sl_job_abort(id, kind);
            struct sl_smap *s = sl_smap_get();
            struct sl_fan f[64];
            char *urls[64];
            int nf = 0;
            char *qi = sl_url_encode_query(id), *qk = sl_url_encode_query(kind);
            for (int i = 0; i < s->nnodes && nf < 64; i++) {
                if (s->nodes[i].type != SL_NODE_TARGET || !strcmp(s->nodes[i].id, G.id))
                    continue;
                urls[nf] = sl_xasprintf("%s/v1/internal/jobs?id=%s&kind=%s", s->nodes[i].ctrl_url, qi, qk);
                memset(&f[nf], 0, sizeof(f[nf]));
                f[nf].url = urls[nf];
                f[nf].method = "DELETE";
                nf++;
            }
            free(qi);
            free(qk);
            sl_peer_fanout(f, nf, 0);
            for (int i = 0; i < nf; i++) {
                json_error_t je;
                json_t *jr = f[i].ok ? json_loadb(f[i].resp.body.p, f[i].resp.body.len, 0, &je) : NULL;
                n += (int)sl_json_int(jr, "aborted", 0);
                json_decref(jr);
                free(urls[i]);
            }
            sl_peer_fanout_free(f, nf);
            sl_smap_put(s);
            sl_logi("stop %s %s: %d running instance(s) asked to abort", kind, id, n);
            sl_resp_empty(r, 200);
        }
    } else {
        sl_resp_errf(r, SL_EINVAL, "invalid action \"%s\" for PUT /v1/cluster (valid: set-config, start-maintenance, "
                     "stop-maintenance, decommission-node, shutdown-node, start, stop)", a);
    }
    sl_actmsg_free(&m);
}

/* ---- forwarding to the primary ---- */

static void forward_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_smap *s = sl_smap_get();
    const struct sl_snode *p = sl_smap_primary(s);
    if (!p) {
        sl_smap_put(s);
        sl_resp_errf(r, SL_EUNAVAIL, "%s: no primary proxy known yet; retry shortly", G.name);
        return;
    }
    const char *q = strchr(r->raw_uri, '?');
    char *enc = sl_url_encode_path(r->path, r->path_len);
    char *url = sl_xasprintf("%s%s%s", p->ctrl_url, enc, q ? q : "");
    free(enc);
    sl_smap_put(s);
    struct sl_peer_hdr h[1];
    int nh = 0;
    const char *ct = sl_req_header(r, "Content-Type");
    (void)ct;
    struct sl_peer_resp pr;
    /* ETL init compiles and runs scripts on every target: allow for that */
    int64_t tmo = sl_has_prefix(r->path, "/v1/etl") ? sl_conf->send_file_time_ns / 1000000
                                                    : sl_conf->cplane_timeout_ns / 1000000 * 5;
    int rc = sl_peer_call(r->method_str, url, h, nh, r->body.len ? r->body.p : NULL, r->body.len, tmo, &pr);
    if (rc < 0) {
        sl_resp_errf(r, SL_EUNAVAIL, "%s: forwarding to the primary failed: %s", G.name, pr.err);
    } else {
        const char *ctype = pr.status >= 400 || (pr.body.len && pr.body.p[0] == '{') || (pr.body.len && pr.body.p[0] == '[')
                                ? "application/json"
                                : NULL;
        sl_resp_bytes(r, (int)pr.status, ctype, pr.body.p ? pr.body.p : "", pr.body.len);
    }
    sl_peer_resp_free(&pr);
    free(url);
}

static void forward_done(struct sl_req *r)
{
    sl_req_offload(r, forward_run, NULL, NULL);
}

static void forward_to_primary(struct sl_req *r)
{
    sl_req_buffer_body(r, sl_conf->http_max_body_json, forward_done);
}

void sl_forward_to_primary(struct sl_req *r)
{
    forward_to_primary(r);
}

/* ---- job status aggregation (GET /v1/cluster?what=status|...) ---- */

/* Fan out to targets; returns {tid: [snap...]} and fails naming a target that did not answer. */
json_t *sl_cluster_job_snaps(const char *id, const char *kind, bool active, struct sl_err *err)
{
    struct sl_smap *s = sl_smap_get();
    json_t *out = json_object();
    if (G.role == SL_ROLE_STANDALONE) {
        json_object_set_new(out, G.id, sl_jobs_snaps(id, kind, active));
        sl_smap_put(s);
        return out;
    }
    struct sl_fan *f = sl_xcalloc((size_t)(s->nnodes ? s->nnodes : 1), sizeof(*f));
    const struct sl_snode **who = sl_xcalloc((size_t)(s->nnodes ? s->nnodes : 1), sizeof(*who));
    char *qi = sl_url_encode_query(id ? id : ""), *qk = sl_url_encode_query(kind ? kind : "");
    int n = 0;
    for (int i = 0; i < s->nnodes; i++) {
        if (s->nodes[i].type != SL_NODE_TARGET || (s->nodes[i].flags & SL_SNF_OFFLINE))
            continue;
        f[n].url = sl_xasprintf("%s/v1/internal/jobs?id=%s&kind=%s&active=%s", s->nodes[i].ctrl_url, qi, qk,
                                active ? "true" : "false");
        who[n++] = &s->nodes[i];
    }
    free(qi);
    free(qk);
    sl_peer_fanout(f, n, 0);
    for (int i = 0; i < n; i++) {
        json_error_t je;
        json_t *arr = f[i].ok && f[i].resp.status == 200 ? json_loadb(f[i].resp.body.p, f[i].resp.body.len, 0, &je)
                                                         : NULL;
        if (!arr) {
            if (err && !err->msg[0])
                sl_errf(err, SL_EUNAVAIL, "job status: target t[%s] did not answer: %s", who[i]->id, f[i].resp.err);
            continue;
        }
        json_object_set_new(out, who[i]->id, arr);
    }
    for (int i = 0; i < n; i++)
        free((char *)f[i].url);
    sl_peer_fanout_free(f, n);
    free(f);
    free(who);
    sl_smap_put(s);
    return out;
}

void sl_cluster_abort_job(const char *id)
{
    if (G.role == SL_ROLE_STANDALONE)
        return;
    struct sl_smap *s = sl_smap_get();
    struct sl_fan *f = sl_xcalloc((size_t)s->nnodes + 1, sizeof(*f));
    int n = 0;
    char *qi = sl_url_encode_query(id);
    for (int i = 0; i < s->nnodes; i++) {
        const struct sl_snode *x = &s->nodes[i];
        if (x->type != SL_NODE_TARGET || !strcmp(x->id, G.id) || (x->flags & SL_SNF_OFFLINE))
            continue;
        f[n].url = sl_xasprintf("%s/v1/internal/jobs?id=%s", x->ctrl_url, qi);
        f[n].method = "DELETE";
        n++;
    }
    free(qi);
    sl_smap_put(s);
    sl_peer_fanout(f, n, 0);
    for (int i = 0; i < n; i++)
        free((char *)f[i].url);
    sl_peer_fanout_free(f, n);
    free(f);
}

/* nl.Status aggregated over targets for one job id; NULL if unknown */
static json_t *aggregate_status(json_t *per, const char *id)
{
    const char *tid;
    json_t *arr;
    bool found = false, running = false, aborted = false, failed = false;
    int64_t end = 0;
    char kind[32] = "", err[1024] = "";
    bool err_generic = false;
    json_object_foreach(per, tid, arr) {
        size_t i;
        json_t *snap;
        json_array_foreach(arr, i, snap) {
            if (strcmp(sl_json_str(snap, "id", ""), id))
                continue;
            found = true;
            snprintf(kind, sizeof(kind), "%s", sl_json_str(snap, "kind", ""));
            int64_t e = sl_json_int(snap, "end_ns", 0);
            if (!e)
                running = true;
            else if (e > end)
                end = e;
            if (sl_json_bool(snap, "aborted", false))
                aborted = true;
            else if (e && sl_json_str(snap, "err", "")[0])
                failed = true;
            /* the root cause wins over the "aborted" of targets that were
             * stopped because of it */
            const char *er = sl_json_str(snap, "err", "");
            bool generic = !strcmp(er, "aborted");
            if (er[0] && (!err[0] || (err_generic && !generic))) {
                snprintf(err, sizeof(err), "t[%s]: %s", tid, er);
                err_generic = generic;
            }
        }
    }
    if (!found)
        return NULL;
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string(kind));
    json_object_set_new(o, "uuid", json_string(id));
    json_object_set_new(o, "err", json_string(err));
    json_object_set_new(o, "end_time", json_integer(running ? 0 : end));
    /* a job that failed on one target and was aborted on the others
     * because of it has failed; "aborted" is for a job someone stopped */
    json_object_set_new(o, "aborted", json_boolean(aborted && !failed));
    json_object_set_new(o, "is_idle", json_boolean(!running));
    return o;
}

bool sl_cluster_job_known(const char *id, struct sl_err *err)
{
    json_t *per = sl_cluster_job_snaps(id, NULL, false, err);
    json_t *st = aggregate_status(per, id);
    bool known = st != NULL;
    json_decref(st);
    json_decref(per);
    return known;
}

static void cluster_get_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    const char *what = sl_req_query(r, "what");
    json_t *q = r->body.len ? sl_req_body_json(r, &err) : json_object();
    if (!q) {
        sl_resp_err(r, &err);
        return;
    }
    if (json_is_null(q)) {
        json_decref(q);
        q = json_object();
    }
    const char *id = sl_json_str(q, "id", sl_req_query(r, "id") ? sl_req_query(r, "id") : "");
    const char *kind = sl_json_str(q, "kind", sl_req_query(r, "kind") ? sl_req_query(r, "kind") : "");
    bool active = sl_json_bool(q, "show_active", false) || sl_json_bool(q, "OnlyRunning", false);
    json_t *per = sl_cluster_job_snaps(NULL, kind, false, &err);
    if (err.msg[0] && !strcmp(what, "status")) {
        json_decref(per);
        json_decref(q);
        sl_resp_err(r, &err);
        return;
    }
    if (!strcmp(what, "qryxstats")) {
        json_t *out = json_object();
        const char *tid;
        json_t *arr;
        json_object_foreach(per, tid, arr) {
            json_t *sel = json_array();
            size_t i;
            json_t *sn;
            json_array_foreach(arr, i, sn) {
                if (id[0] && strcmp(sl_json_str(sn, "id", ""), id))
                    continue;
                if (active && sl_json_int(sn, "end_ns", 0))
                    continue;
                json_array_append(sel, sn);
            }
            if (json_array_size(sel))
                json_object_set_new(out, tid, sel);
            else
                json_decref(sel);
        }
        if (!json_object_size(out))
            sl_resp_errf(r, SL_ENOENT, "no job matches (id \"%s\", kind \"%s\")", id, kind);
        else
            sl_resp_json(r, 200, out);
        json_decref(out);
    } else if (!strcmp(what, "status")) {
        if (!id[0]) {
            /* kind only: the newest job of that kind */
            const char *tid;
            json_t *arr;
            int64_t best = 0;
            json_object_foreach(per, tid, arr) {
                size_t i;
                json_t *sn;
                json_array_foreach(arr, i, sn) {
                    if (sl_json_int(sn, "start_ns", 0) > best) {
                        best = sl_json_int(sn, "start_ns", 0);
                        id = sl_json_str(sn, "id", "");
                    }
                }
            }
        }
        json_t *st = id[0] ? aggregate_status(per, id) : NULL;
        if (!st)
            sl_resp_errf(r, SL_ENOENT, "job \"%s\"%s%s not found on any target", id[0] ? id : kind,
                         kind[0] && id[0] ? " of kind " : "", id[0] ? kind : "");
        else
            sl_resp_json_new(r, 200, st);
    } else { /* status_all, running_all */
        json_t *ids = json_object();
        const char *tid;
        json_t *arr;
        json_object_foreach(per, tid, arr) {
            size_t i;
            json_t *sn;
            json_array_foreach(arr, i, sn) {
                if (id[0] && strcmp(sl_json_str(sn, "id", ""), id))
                    continue; /* kind was filtered by the targets */
                json_object_set_new(ids, sl_json_str(sn, "id", ""), json_string(sl_json_str(sn, "kind", "")));
            }
        }
        json_t *out = json_array();
        const char *jid;
        json_t *jk;
        json_object_foreach(ids, jid, jk) {
            json_t *st = aggregate_status(per, jid);
            if (!st)
                continue;
            bool run = sl_json_int(st, "end_time", 0) == 0;
            if (!strcmp(what, "running_all")) {
                if (run) {
                    char s[128];
                    snprintf(s, sizeof(s), "%s[%s]", json_string_value(jk), jid);
                    json_array_append_new(out, json_string(s));
                }
                json_decref(st);
            } else if (!active || run) {
                json_array_append_new(out, st);
            } else {
                json_decref(st);
            }
        }
        json_decref(ids);
        sl_resp_json_new(r, 200, out);
    }
    json_decref(per);
    json_decref(q);
}

bool sl_cluster_get_ext(struct sl_req *r, const char *what)
{
    if (strcmp(what, "status") && strcmp(what, "qryxstats") && strcmp(what, "status_all") &&
        strcmp(what, "running_all"))
        return false;
    sl_req_buffer_body(r, sl_conf->http_max_body_json, cluster_get_done);
    return true;
}

const char *sl_cluster_get_whats(void)
{
    return ", status, qryxstats, status_all, running_all";
}

/* ---- listing across targets ---- */

int sl_cluster_list_page(const struct sl_bck *b, const struct sl_lsomsg *m, struct sl_lspage *out,
                         struct sl_err *err)
{
    if (G.role == SL_ROLE_STANDALONE)
        return sl_lso_local_page(b, m, G.id, out, err);
    struct sl_smap *s = sl_smap_get();
    int nt = 0;
    for (int i = 0; i < s->nnodes; i++)
        if (s->nodes[i].type == SL_NODE_TARGET)
            nt++;
    if (!nt) {
        sl_smap_put(s);
        return sl_errf(err, SL_EUNAVAIL, "list-objects %s://%s: the cluster has no targets yet",
                       sl_provider_scheme(b->provider), b->name);
    }
    json_t *body = json_pack("{s:s,s:s,s:o}", "action", "list", "name", "", "value", sl_lsomsg_json(m));
    size_t blen;
    char *bs = sl_json_dump(body, 0, &blen);
    json_decref(body);
    struct sl_fan *f = sl_xcalloc((size_t)nt, sizeof(*f));
    const struct sl_snode **who = sl_xcalloc((size_t)nt, sizeof(*who));
    int n = 0, rc = 0;
    for (int i = 0; i < s->nnodes; i++) {
        const struct sl_snode *t = &s->nodes[i];
        if (t->type != SL_NODE_TARGET)
            continue;
        if (t->flags & SL_SNF_OFFLINE) {
            rc = sl_errf(err, SL_EUNAVAIL,
                         "list-objects %s://%s: target t[%s] (%s) is offline; the listing would be incomplete, so "
                         "it is refused; retry when the target is back or after it is decommissioned",
                         sl_provider_scheme(b->provider), b->name, t->id, t->url);
            goto out;
        }
        f[n].url = sl_xasprintf("%s/v1/internal/lso/%s?provider=%s", t->ctrl_url, b->name, b->provider);
        f[n].method = "GET";
        f[n].body = bs;
        f[n].blen = blen;
        f[n].accept = "application/msgpack";
        who[n++] = t;
    }
    sl_peer_fanout(f, n, sl_conf->cplane_timeout_ns / 1000000 * 15);
    struct sl_lspage *pages = sl_xcalloc((size_t)n, sizeof(*pages));
    for (int i = 0; i < n && rc == 0; i++) {
        if (!f[i].ok || f[i].resp.status != 200) {
            rc = sl_errf(err, f[i].ok ? sl_code_from_status((int)f[i].resp.status) : SL_EUNAVAIL,
                         "list-objects %s://%s: target t[%s] (%s) did not answer: %s; the listing would be "
                         "incomplete",
                         sl_provider_scheme(b->provider), b->name, who[i]->id, who[i]->url, f[i].resp.err);
            break;
        }
        if (sl_lspage_from_msgpack(f[i].resp.body.p, f[i].resp.body.len, &pages[i], err) < 0)
            rc = -1;
    }
    if (rc == 0)
        sl_lspage_merge(pages, n, m->pagesize, out);
    for (int i = 0; i < n; i++)
        sl_lspage_free(&pages[i]);
    free(pages);
out:
    /* also the URLs made before an offline target refused the listing */
    for (int i = 0; i < n; i++)
        free((char *)f[i].url);
    sl_peer_fanout_free(f, n);
    free(f);
    free(who);
    free(bs);
    sl_smap_put(s);
    return rc;
}

/* target side of the listing fan-out */
static void internal_lso_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    const char *p = r->path + strlen("/v1/internal/lso/");
    struct sl_bck b;
    if (sl_bck_resolve(p, sl_req_query(r, "provider"), NULL, &b, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    struct sl_actmsg m;
    if (sl_actmsg_parse(r, &m, &err) < 0) {
        sl_bck_release(&b);
        sl_resp_err(r, &err);
        return;
    }
    struct sl_lsomsg lm;
    struct sl_lspage pg;
    sl_lspage_init(&pg);
    if (sl_lsomsg_parse(m.value, &lm, sl_conf->lso_page_size, &err) < 0 ||
        sl_lso_local_page(&b, &lm, G.id, &pg, &err) < 0) {
        sl_resp_err(r, &err);
    } else {
        struct sl_buf out;
        sl_buf_init(&out);
        sl_lspage_msgpack(&pg, &out);
        size_t len = out.len;
        sl_resp_bytes_owned(r, 200, "application/msgpack", sl_buf_steal(&out), len);
    }
    sl_lspage_free(&pg);
    sl_lsomsg_free(&lm);
    sl_actmsg_free(&m);
    sl_bck_release(&b);
}

/* ---- object redirects (gateway) ---- */

static void redirect_object(struct sl_req *r)
{
    struct sl_err err = { 0 };
    char *bucket = NULL;
    const char *name;
    size_t nlen;
    r->op = SL_OP_REDIRECT;
    if (r->path_bad) {
        sl_resp_errf(r, SL_EINVAL, "%s: the URL contains a NUL byte (%%00)", r->method_str);
        return;
    }
    if (sl_req_obj_path(r, &bucket, &name, &nlen, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    struct sl_bck b;
    if (sl_bck_resolve(bucket, sl_req_query(r, "provider"), sl_req_query(r, "namespace"), &b, &err) < 0) {
        free(bucket);
        sl_resp_err(r, &err);
        return;
    }
    free(bucket);
    struct sl_smap *s = sl_smap_get();
    struct sl_buf un;
    sl_buf_init(&un);
    sl_obj_uname(&un, b.provider, b.name, name, nlen);
    const struct sl_snode *t = sl_smap_hrw_target(s, un.p, un.len);
    sl_buf_free(&un);
    if (!t) {
        sl_resp_errf(r, SL_EUNAVAIL, "%s: the cluster has no active targets", G.name);
    } else if (t->flags & SL_SNF_OFFLINE) {
        char cn[400];
        snprintf(cn, sizeof(cn), "%s://%s/%.*s", sl_provider_scheme(b.provider), b.name, (int)SL_MIN(nlen, 300),
                 name);
        sl_resp_errf(r, SL_EUNAVAIL,
                     "%s: the target that owns it, t[%s] (%s), is not responding; retry when it is back (check "
                     "`shale show cluster`)",
                     cn, t->id, t->url);
    } else {
        struct sl_buf url;
        sl_buf_init(&url);
        char *encb = sl_url_encode_path(b.name, strlen(b.name));
        char *enco = sl_url_encode_path(name, nlen);
        /* spec §1.4: GET to the public URL, PUT to the data network, every
         * other verb (HEAD, DELETE, PATCH, POST) to the control network */
        const char *base = r->method == SL_M_GET ? t->url : r->method == SL_M_PUT ? t->data_url : t->ctrl_url;
        sl_buf_printf(&url, "%s/v1/objects/%s/%s", base, encb, enco);
        free(encb);
        free(enco);
        /* the original query as sent (no provider added: AIStore adds only pid and utm) */
        const char *q = strchr(r->raw_uri, '?');
        if (q && q[1])
            sl_buf_adds(&url, q);
        sl_peer_add_redirect_marks(&url, G.id);
        sl_resp_redirect(r, r->method == SL_M_GET ? 301 : 307, url.p);
        sl_buf_free(&url);
    }
    sl_smap_put(s);
    sl_bck_release(&b);
}

static void redirect_after_body(struct sl_req *r)
{
    redirect_object(r);
}

/* POST /v1/objects/BUCKET (promote, blob-download): the object, if any, is
 * named in the body, not in the path */
static bool bucket_level_post(const struct sl_req *r)
{
    const char *p = r->path + strlen("/v1/objects");
    const char *end = r->path + r->path_len;
    while (p < end && *p == '/')
        p++;
    const char *slash = memchr(p, '/', (size_t)(end - p));
    return p < end && (!slash || slash + 1 == end);
}

void sl_route_objects(struct sl_req *r)
{
    if (G.role == SL_ROLE_STANDALONE) {
        sl_tgt_objects(r);
        return;
    }
    if (G.role == SL_ROLE_PROXY) {
        if (r->method == SL_M_POST && bucket_level_post(r)) {
            sl_tgt_objects(r); /* no object to place: the action is answered here */
            return;
        }
        /* a small body that is already on its way is read and dropped, so the
         * connection survives the redirect; large ones (or Expect: 100) are not */
        const char *expect = sl_req_header(r, "Expect");
        if (r->content_length > 0 && r->content_length <= 4 * 1024 * 1024 && !expect) {
            r->body_mode = SL_BODY_DISCARD;
            r->on_done = redirect_after_body;
            return;
        }
        redirect_object(r);
        return;
    }
    /* target */
    bool redirected = sl_req_query(r, "pid") && sl_req_query(r, "utm");
    if (r->method != SL_M_GET && r->method != SL_M_HEAD && !redirected) {
        sl_resp_errf(r, SL_EINVAL, "%s: %s(obj) is expected to be redirected (send it to a gateway: proxy.primary_url)",
                     G.name, r->method_str);
        return;
    }
    sl_tgt_objects(r);
}

void sl_route_buckets(struct sl_req *r)
{
    if (G.role == SL_ROLE_STANDALONE || primary) {
        sl_prx_buckets(r);
        return;
    }
    if (G.role == SL_ROLE_PROXY) {
        if (r->method == SL_M_GET || r->method == SL_M_HEAD)
            sl_prx_buckets(r);
        else
            forward_to_primary(r);
        return;
    }
    /* target: bucket metadata reads only */
    if (r->method == SL_M_HEAD) {
        sl_prx_buckets(r);
        return;
    }
    sl_resp_errf(r, SL_EINVAL, "%s is a storage target: send bucket requests to a gateway (proxy)", G.name);
}

static void daemon_put_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    struct sl_actmsg m;
    if (sl_actmsg_parse(r, &m, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    if (!strcmp(m.action, "shutdown") || !strcmp(m.action, "shutdown-node")) {
        sl_resp_empty(r, 200);
        shutdown_self("requested via PUT /v1/daemon");
    } else if (!strcmp(m.action, "set-config") && G.role == SL_ROLE_STANDALONE) {
        sl_actmsg_free(&m);
        cluster_put_done(r);
        return;
    } else {
        sl_resp_errf(r, SL_EINVAL, "invalid action \"%s\" for PUT /v1/daemon (valid: shutdown%s)", m.action,
                     G.role == SL_ROLE_STANDALONE ? ", set-config" : "; change configuration with PUT /v1/cluster");
    }
    sl_actmsg_free(&m);
}

void sl_route_daemon_other(struct sl_req *r)
{
    if (r->method == SL_M_PUT)
        sl_req_buffer_body(r, sl_conf->http_max_body_json, daemon_put_done);
    else
        sl_resp_method_not_allowed(r, "GET, PUT");
}

void sl_route_cluster(struct sl_req *r)
{
    if (r->path_len >= strlen("/v1/cluster/join") && sl_has_prefix(r->path, "/v1/cluster/join")) {
        if (r->method != SL_M_POST) {
            sl_resp_method_not_allowed(r, "POST");
            return;
        }
        if (!primary && G.role == SL_ROLE_PROXY) {
            forward_to_primary(r);
            return;
        }
        sl_req_buffer_body(r, sl_conf->http_max_body_json, join_done);
        return;
    }
    if (r->method == SL_M_GET) {
        if (G.role == SL_ROLE_TARGET) {
            sl_resp_errf(r, SL_EINVAL, "%s is a storage target: send GET /v1/cluster to a gateway", G.name);
            return;
        }
        sl_prx_cluster_get(r);
    } else if (r->method == SL_M_PUT) {
        if (G.role == SL_ROLE_STANDALONE || primary)
            sl_req_buffer_body(r, sl_conf->http_max_body_json, cluster_put_done);
        else if (G.role == SL_ROLE_PROXY)
            forward_to_primary(r);
        else
            sl_resp_errf(r, SL_EINVAL, "%s is a storage target: send PUT /v1/cluster to a gateway", G.name);
    } else {
        sl_resp_method_not_allowed(r, "GET, PUT");
    }
}

static void internal_jobs(struct sl_req *r)
{
    const char *id = sl_req_query(r, "id"), *kind = sl_req_query(r, "kind");
    if (r->method == SL_M_GET) {
        sl_resp_json_new(r, 200, sl_jobs_snaps(id, kind, sl_req_query_bool(r, "active")));
    } else if (r->method == SL_M_DELETE) {
        int n = sl_job_abort(id, kind);
        sl_resp_json_new(r, 200, json_pack("{s:i}", "aborted", n));
    } else {
        sl_resp_method_not_allowed(r, "GET, DELETE");
    }
}

bool sl_route_ext(struct sl_req *r)
{
    if (!strcmp(r->path, "/v1/metasync")) {
        if (r->method != SL_M_PUT)
            sl_resp_method_not_allowed(r, "PUT");
        else
            sl_req_buffer_body(r, 256 * SL_MIB, metasync_done);
        return true;
    }
    if (sl_has_prefix(r->path, "/v1/internal/lso/")) {
        if (!sl_is_target())
            sl_resp_errf(r, SL_EINVAL, "%s is not a storage target", G.name);
        else
            sl_req_buffer_body(r, sl_conf->http_max_body_json, internal_lso_done);
        return true;
    }
    if (!strcmp(r->path, "/v1/internal/jobs")) {
        internal_jobs(r);
        return true;
    }
    return sl_route_ext_more(r);
}

/* ---- keepalive and decommission watcher (primary) ---- */

struct ka {
    char id[48];
    int fails;
};

static void finish_pending(void)
{
    pthread_mutex_lock(&cmu);
    int n = npending;
    struct pend local[32];
    memcpy(local, pending, sizeof(local));
    pthread_mutex_unlock(&cmu);
    for (int i = 0; i < n; i++) {
        struct pend *p = &local[i];
        bool done = true;
        if (p->reb[0]) {
            struct sl_err err = { 0 };
            json_t *per = sl_cluster_job_snaps(p->reb, "rebalance", false, &err);
            json_t *st = aggregate_status(per, p->reb);
            done = !err.msg[0] && st && sl_json_int(st, "end_time", 0) != 0;
            json_decref(st);
            json_decref(per);
        }
        if (!done)
            continue;
        if (p->decommission)
            remove_node(p->id, p->no_shutdown);
        else
            sl_logi("maintenance of %s: data moved away (rebalance %s done)", p->id, p->reb);
        pthread_mutex_lock(&cmu);
        for (int j = 0; j < npending; j++) {
            if (!strcmp(pending[j].id, p->id)) {
                memmove(&pending[j], &pending[j + 1], (size_t)(npending - j - 1) * sizeof(pending[0]));
                npending--;
                break;
            }
        }
        pthread_mutex_unlock(&cmu);
    }
}

static void *keepalive(void *arg)
{
    struct ka *st = NULL;
    int nst = 0;
    while (!ka_stop) {
        int64_t interval_ms = sl_conf->keepalive_interval_ns / 1000000;
        if (interval_ms < 200)
            interval_ms = 200;
        for (int64_t t = 0; t < interval_ms && !ka_stop; t += 100)
            sl_sleep_ms(100);
        if (ka_stop)
            break;
        struct sl_smap *s = sl_smap_get();
        struct sl_fan *f = sl_xcalloc((size_t)(s->nnodes ? s->nnodes : 1), sizeof(*f));
        const struct sl_snode **who = sl_xcalloc((size_t)(s->nnodes ? s->nnodes : 1), sizeof(*who));
        int n = 0;
        for (int i = 0; i < s->nnodes; i++) {
            if (!strcmp(s->nodes[i].id, G.id))
                continue;
            f[n].url = sl_xasprintf("%s/v1/health", s->nodes[i].ctrl_url);
            who[n++] = &s->nodes[i];
        }
        sl_peer_fanout(f, n, sl_conf->max_keepalive_ns / 1000000);
        for (int i = 0; i < n; i++) {
            bool ok = f[i].ok && f[i].resp.status == 200;
            int k;
            for (k = 0; k < nst; k++)
                if (!strcmp(st[k].id, who[i]->id))
                    break;
            if (k == nst) {
                st = sl_xrealloc(st, (size_t)(nst + 1) * sizeof(*st));
                snprintf(st[nst].id, sizeof(st[nst].id), "%s", who[i]->id);
                st[nst].fails = 0;
                nst++;
            }
            st[k].fails = ok ? 0 : st[k].fails + 1;
            struct flag_arg fa = { .id = who[i]->id };
            struct sl_err err;
            if (ok && (who[i]->flags & SL_SNF_OFFLINE)) {
                fa.clear = SL_SNF_OFFLINE;
                sl_logi("node %s is answering again", who[i]->id);
                sl_smap_modify(edit_flags, &fa, &err);
            } else if (!ok && !(who[i]->flags & SL_SNF_OFFLINE) && st[k].fails >= sl_conf->keepalive_factor) {
                fa.set = SL_SNF_OFFLINE;
                sl_logw("node %s (%s) did not answer %d keepalive(s): flagged offline (%s)", who[i]->id,
                        who[i]->url, st[k].fails, f[i].resp.err);
                sl_smap_modify(edit_flags, &fa, &err);
            }
        }
        for (int i = 0; i < n; i++)
            free((char *)f[i].url);
        sl_peer_fanout_free(f, n);
        free(f);
        free(who);
        sl_smap_put(s);
        finish_pending();
    }
    free(st);
    return NULL;
}

/* ---- start-up ---- */

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

static bool is_self_url(const char *url)
{
    if (!url || !url[0])
        return true;
    char a[300], b[300];
    snprintf(a, sizeof(a), "%s", url);
    size_t n = strlen(a);
    while (n && a[n - 1] == '/')
        a[--n] = 0;
    snprintf(b, sizeof(b), "http://127.0.0.1:%d", G.self.pub_port);
    if (!strcmp(a, G.self.url) || !strcmp(a, G.self.ctrl_url) || !strcmp(a, b))
        return true;
    snprintf(b, sizeof(b), "http://localhost:%d", G.self.pub_port);
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
    json_t *d;
    if ((d = sl_node_load_doc("rmd")))
        rmd = d;
    if ((d = sl_node_load_doc("etlmd")))
        etlmd = d;
    primary = G.role == SL_ROLE_PROXY && is_self_url(sl_conf->primary_url);
    struct sl_smap *s = old ? sl_smap_clone(old) : sl_smap_new();
    if (!s->uuid[0] && (G.role == SL_ROLE_STANDALONE || primary)) {
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
    } else if (primary) {
        const struct sl_snode *o = sl_smap_find(s, G.id);
        changed = !o || strcmp(o->url, G.self.url) || strcmp(s->primary, G.id);
        struct sl_snode p = G.self;
        if (o)
            p.flags = o->flags;
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
    sl_bmd_listen(on_bmd);
    sl_smap_listen(on_smap);
    return 0;
}

static int join(struct sl_err *err)
{
    const char *purl = sl_conf->primary_url;
    if (!purl || !purl[0])
        return sl_errf(err, SL_EINVAL,
                       "a %s needs the primary proxy's URL: set proxy.primary_url in the config or pass --primary URL",
                       sl_role_name(G.role));
    struct sl_smap *s = sl_smap_get();
    json_t *body = json_object();
    json_object_set_new(body, "snode", sl_snode_json(&G.self));
    json_object_set_new(body, "uuid", json_string(s->uuid));
    sl_smap_put(s);
    size_t len;
    char *bs = sl_json_dump(body, SL_JD_U64STR, &len);
    json_decref(body);
    char *url = sl_xasprintf("%s/v1/cluster/join", purl);
    int64_t deadline = sl_mono_ns() + sl_conf->join_startup_time_ns;
    int rc = -1;
    int attempts = 0;
    while (!G.stopping) {
        struct sl_peer_resp r;
        attempts++;
        if (sl_peer_call("POST", url, NULL, 0, bs, len, sl_conf->cplane_timeout_ns / 1000000 * 5, &r) == 0 &&
            r.status == 200) {
            json_error_t je;
            json_t *docs = sl_json_loadb_u64(r.body.p, r.body.len, &je);
            rc = docs ? apply_docs(docs, err) : sl_errf(err, SL_EIO, "join: bad response from %s", url);
            json_decref(docs);
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
        sl_sleep_ms(500);
    }
    free(url);
    free(bs);
    return rc;
}

int sl_start_after_http(struct sl_err *err)
{
    sl_peer_global_init();
    if (G.role == SL_ROLE_STANDALONE)
        return 0;
    if (primary) {
        struct sl_smap *s = sl_smap_get();
        sl_logi("%s is the primary proxy (cluster %s)", G.name, s->uuid);
        sl_smap_put(s);
        ka_stop = false;
        if (pthread_create(&ka_thr, NULL, keepalive, NULL) == 0)
            ka_live = true;
        /* re-announce our view: nodes that restarted while we were down catch up */
        json_t *docs = all_docs();
        push(docs);
        json_decref(docs);
        return 0;
    }
    if (join(err) < 0)
        return -1;
    /* a target that missed a rebalance while down runs the latest one */
    if (G.role == SL_ROLE_TARGET) {
        json_t *d = sl_cluster_doc("rmd");
        if (d && doc_version(d) > 0)
            sl_reb_start(sl_json_str(d, "id", "g0"));
        json_decref(d);
    }
    return 0;
}

void sl_stop_cluster(void)
{
    if (ka_live) {
        ka_stop = true;
        pthread_join(ka_thr, NULL);
        ka_live = false;
    }
    if (G.role == SL_ROLE_TARGET)
        sl_reb_stop();
    pthread_mutex_lock(&cmu);
    json_decref(rmd);
    json_decref(etlmd);
    rmd = etlmd = NULL;
    pthread_mutex_unlock(&cmu);
}
