/* SPDX-License-Identifier: MIT
 * cluster.c: roles, membership, metasync and keepalive.
 *
 *  - standalone: this node is the whole cluster (one proxy entry and one
 *    target entry with the same id), no redirects, local listing;
 *  - primary proxy: owns Smap/BMD/config/RMD/EtlMD, versions every change and
 *    pushes it to all nodes (metasync), admits joining nodes, checks liveness,
 *    drives rebalance, maintenance and decommission;
 *  - other proxies and targets join the primary and receive metasync.
 *
 * What is asked of every target at once (job status, listings) is in
 * fanout.c; the HTTP side of the admin API and the object redirects are in
 * api/cluster_api.c.
 */
#include "cluster.h"
#include "bg.h"
#include "conf.h"
#include "jsonx.h"
#include "log.h"
#include "lost.h"
#include "node.h"
#include "peer.h"
#include "reb.h"
#include "sec.h"
#include "start.h"
#include "vote.h"
#include "stats.h"
#include "xact.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t cmu = PTHREAD_MUTEX_INITIALIZER;
static json_t *rmd;        /* {"version": N, "id": "gN"} */
/* Documents the job modules own ({"version": N, ...}), pushed by metasync
 * and persisted on every node: EtlMD (etl.c), PlanMD (plan.c). */
static struct mdoc {
    const char *name;
    json_t *d;
    sl_doc_listener fn;
} mdocs[] = { { "etlmd", NULL, NULL }, { "planmd", NULL, NULL }, { "s3md", NULL, NULL }, { "remais", NULL, NULL },
                { "authmd", NULL, NULL }, { "lostmd", NULL, NULL } };

static struct mdoc *mdoc_of(const char *name)
{
    for (size_t i = 0; i < SL_ARRAY_SIZE(mdocs); i++)
        if (!strcmp(mdocs[i].name, name))
            return &mdocs[i];
    return NULL;
}
static bool primary;
static pthread_t ka_thr;
static volatile bool ka_stop, ka_live;

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
    struct mdoc *m = mdoc_of(name);
    json_t *d = m ? m->d : !strcmp(name, "rmd") ? rmd : NULL;
    d = d ? json_incref(d) : NULL;
    pthread_mutex_unlock(&cmu);
    return d;
}

void sl_cluster_doc_listen(const char *name, sl_doc_listener fn)
{
    struct mdoc *m = mdoc_of(name);
    if (m)
        m->fn = fn;
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
    for (size_t i = 0; i < SL_ARRAY_SIZE(mdocs); i++)
        if (mdocs[i].d)
            json_object_set(o, mdocs[i].name, mdocs[i].d);
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

static void become_primary(void *arg);

static void on_smap(const struct sl_smap *old, const struct sl_smap *cur)
{
    if (G.role == SL_ROLE_TARGET)
        sl_reb_smap_changed(old, cur);
    if (primary)
        push_one("smap", sl_smap_json(cur));
    if (G.role != SL_ROLE_PROXY || !cur->primary[0] || !G.ready)
        return;
    bool me = !strcmp(cur->primary, G.id);
    if (me && !primary) {
        /* set-primary named this gateway: take the role (off this lock) */
        sl_bg_submit(become_primary, NULL);
    } else if (!me && primary) {
        __atomic_store_n(&primary, false, __ATOMIC_RELEASE);
        ka_stop = true; /* the keepalive loop ends; joined by whoever starts the next */
        sl_logi("%s is no longer the primary: %s is (Smap v%lld)", G.name, cur->primary, (long long)cur->version);
    }
}

void sl_cluster_shutdown_self(const char *why)
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
static int apply_docs_locked(json_t *docs, struct sl_err *err);

/* Documents apply one set at a time: two pushes applied at once could
 * install an older config over a newer one (each checks, then installs). */
static int apply_docs(json_t *docs, struct sl_err *err)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mu);
    int rc = apply_docs_locked(docs, err);
    pthread_mutex_unlock(&mu);
    return rc;
}

static int apply_docs_locked(json_t *docs, struct sl_err *err)
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
                    sl_cluster_shutdown_self("this node was removed from the cluster map (decommissioned)");
            }
        }
    }
    if ((d = json_object_get(docs, "rmd"))) {
        pthread_mutex_lock(&cmu);
        bool newer = doc_version(d) > doc_version(rmd);
        pthread_mutex_unlock(&cmu);
        if (newer) {
            set_rmd(d);
            /* not before this target is in the map: a joiner's pre-sync has
             * the map without it, and a rebalance run with that map would
             * send every object it holds away (it starts the latest one once
             * it has joined, sl_start_after_http) */
            struct sl_smap *sm = sl_smap_get();
            bool member = sl_smap_find(sm, G.id) != NULL;
            sl_smap_put(sm);
            if (G.role == SL_ROLE_TARGET && member)
                sl_reb_start(sl_json_str(d, "id", "g0"));
        }
    }
    for (size_t i = 0; i < SL_ARRAY_SIZE(mdocs); i++) {
        struct mdoc *m = &mdocs[i];
        if (!(d = json_object_get(docs, m->name)))
            continue;
        pthread_mutex_lock(&cmu);
        bool newer = doc_version(d) > doc_version(m->d);
        if (newer) {
            json_decref(m->d);
            m->d = json_incref(d);
        }
        pthread_mutex_unlock(&cmu);
        if (newer) {
            sl_node_save_doc(m->name, d);
            if (m->fn)
                m->fn(d);
        }
    }
    return 0;
}

int sl_cluster_set_doc(const char *name, json_t *doc)
{
    struct mdoc *m = mdoc_of(name);
    if (!m) {
        json_decref(doc);
        return -1;
    }
    pthread_mutex_lock(&cmu);
    int64_t v = doc_version(m->d) + 1;
    json_object_set_new(doc, "version", json_integer(v));
    json_decref(m->d);
    m->d = json_incref(doc);
    pthread_mutex_unlock(&cmu);
    sl_node_save_doc(m->name, doc);
    if (m->fn)
        m->fn(doc);
    if (primary)
        push_one(m->name, json_incref(doc));
    json_decref(doc);
    return 0;
}

static const char known_docs[] = "uuid, smap, bmd, config, rmd, etlmd, planmd, s3md, remais, authmd";

/* A received metasync body is checked whole before any of it is applied:
 * junk, an unknown document or one that would not parse is refused and
 * nothing changes (apply_docs skips what it cannot use, one document at a
 * time, and an Smap without this node in it shuts the node down). */
static int check_docs(json_t *docs, struct sl_err *err)
{
    struct sl_smap *cur = sl_smap_get();
    char uuid[sizeof(cur->uuid)];
    snprintf(uuid, sizeof(uuid), "%s", cur->uuid);
    sl_smap_put(cur);
    int n = 0;
    const char *k;
    json_t *d;
    json_object_foreach(docs, k, d) {
        if (!strcmp(k, "uuid")) {
            if (!json_is_string(d))
                return sl_errf(err, SL_EINVAL, "metasync: \"uuid\" must be a string");
            continue;
        }
        n++;
        if (strcmp(k, "smap") && strcmp(k, "bmd") && strcmp(k, "config") && strcmp(k, "rmd") && !mdoc_of(k))
            return sl_errf(err, SL_EINVAL, "metasync: unknown document \"%.64s\" (known: %s); nothing was applied", k,
                           known_docs);
        if (!json_is_object(d))
            return sl_errf(err, SL_EINVAL, "metasync: document \"%s\" must be a JSON object; nothing was applied", k);
        int64_t v = sl_json_int(d, "version", -1);
        if (v < 0 || (v == 0 && strcmp(k, "bmd") && strcmp(k, "config")))
            return sl_errf(err, SL_EINVAL, "metasync: document \"%s\" has no valid \"version\" (a positive integer); "
                           "nothing was applied", k);
        if (!strcmp(k, "smap")) {
            struct sl_smap *sm = sl_smap_from_json(d, err);
            if (!sm)
                return sl_errf(err, SL_EINVAL, "metasync: invalid Smap: %s; nothing was applied", err->msg);
            bool noprim = !sl_smap_primary(sm), other = uuid[0] && strcmp(sm->uuid, uuid);
            char su[sizeof(sm->uuid)];
            snprintf(su, sizeof(su), "%s", sm->uuid);
            sl_smap_put(sm);
            if (noprim)
                return sl_errf(err, SL_EINVAL, "metasync: invalid Smap v%lld: its primary (proxy_si) is not one of its "
                               "proxies; nothing was applied", (long long)v);
            if (other)
                return sl_errf(err, SL_EINVAL, "metasync: the Smap is of cluster \"%s\", this node is in cluster %s; "
                               "nothing was applied", su, uuid);
        } else if (!strcmp(k, "bmd")) {
            struct sl_bmd *b = sl_bmd_from_json(d, err);
            if (!b)
                return sl_errf(err, SL_EINVAL, "metasync: invalid BMD: %s; nothing was applied", err->msg);
            sl_bmd_put(b);
        } else if (!strcmp(k, "rmd")) {
            if (!json_is_string(json_object_get(d, "id")))
                return sl_errf(err, SL_EINVAL, "metasync: the RMD has no \"id\"; nothing was applied");
        } else if (!strcmp(k, "config") && v > sl_conf->config_version) {
            json_t *c = json_deep_copy(d);
            json_object_del(c, "version");
            struct sl_config *nc = sl_config_with_cluster(sl_conf, c, err);
            json_decref(c);
            if (!nc)
                return sl_errf(err, SL_EINVAL, "metasync: invalid config v%lld: %s; nothing was applied", (long long)v,
                               err->msg);
            sl_config_free(nc);
        }
    }
    if (!n)
        return sl_errf(err, SL_EINVAL, "metasync: no document in the body (expected one or more of %s)", known_docs);
    return 0;
}

/* applying writes the documents to disk (fsync'ed) and may start jobs: on
 * the pool, not on the HTTP thread */
static void metasync_apply(struct sl_req *r, void *arg)
{
    json_t *j = arg;
    struct sl_err err = { 0 };
    if (apply_docs(j, &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
    json_decref(j);
}

static void json_decref_v(void *arg)
{
    json_decref(arg);
}

void sl_cluster_metasync_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        if (!err.msg[0])
            sl_errf(&err, SL_EINVAL, "metasync: body must be a JSON object of documents (%s)", known_docs);
        sl_resp_err(r, &err);
        return;
    }
    if (check_docs(j, &err) < 0) {
        sl_resp_err(r, &err);
        json_decref(j);
        return;
    }
    sl_req_offload_peer(r, metasync_apply, json_decref_v, j); /* (not behind long jobs on the main pool) */
}

/* A target that learns of a bucket late (a redirected request arrived before
 * the metasync) pulls the BMD from the primary once. */
static int refresh_bmd_now(void)
{
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

static bool bmd_pulling;
static int64_t bmd_pull_last;

static void refresh_bmd_bg(void *arg)
{
    (void)arg;
    refresh_bmd_now();
    __atomic_store_n(&bmd_pulling, false, __ATOMIC_RELEASE);
}

int sl_cluster_refresh_bmd(void)
{
    if (G.role == SL_ROLE_STANDALONE || primary)
        return 0;
    if (!sl_http_thread()) {
        /* one pull at a time; who waited for another's takes its result */
        static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
        static unsigned done;
        unsigned seen = __atomic_load_n(&done, __ATOMIC_ACQUIRE);
        pthread_mutex_lock(&mu);
        int rc = 1;
        if (__atomic_load_n(&done, __ATOMIC_ACQUIRE) == seen) {
            rc = refresh_bmd_now();
            __atomic_add_fetch(&done, 1, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&mu);
        return rc;
    }
    /* an HTTP thread never waits on a peer: the pull runs on the peer pool
     * (one at a time, at most once a second, whatever the requests for
     * unknown buckets), and this request answers from the BMD there is */
    int64_t now = sl_mono_ns();
    if (now - __atomic_load_n(&bmd_pull_last, __ATOMIC_RELAXED) >= 1000000000LL &&
        !__atomic_exchange_n(&bmd_pulling, true, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&bmd_pull_last, now, __ATOMIC_RELAXED);
        sl_bg_submit_to(SL_POOL_PEER, refresh_bmd_bg, NULL);
    }
    return 0;
}

/* ---- rebalance / membership edits (primary) ---- */

char *sl_cluster_rebalance(const char *why)
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
        /* non-electable is the joiner's own setting (proxy.non_electable) */
        n.flags = (old->flags & ~(uint64_t)(SL_SNF_OFFLINE | SL_SNF_NONELECTABLE)) | (ja->n.flags & SL_SNF_NONELECTABLE);
        if (old->flags == n.flags && !strcmp(old->url, n.url) && !strcmp(old->ctrl_url, n.ctrl_url) &&
            !strcmp(old->data_url, n.data_url))
            return 1; /* nothing changed */
    } else {
        ja->new_target = n.type == SL_NODE_TARGET;
    }
    sl_smap_add(s, &n);
    return 0;
}

static json_t *fetch_doc(const char *ctrl_url, const char *what);

static int edit_version_past(struct sl_smap *s, void *arg, struct sl_err *err)
{
    (void)err;
    int64_t v = *(int64_t *)arg;
    if (s->version < v)
        s->version = v; /* sl_smap_modify adds one */
    return 0;
}

/* A joiner that has newer metadata than this primary (a gateway elected
 * while this one was down made changes; the whole cluster restarted and
 * this one, configured as the primary, came up first): take its BMD, and
 * number the Smap past its version, so that the joiner and the nodes like it
 * accept this primary's documents. */
static void catch_up(const json_t *j, const struct sl_snode *n)
{
    int64_t jsv = sl_json_int(j, "smap_version", 0), jbv = sl_json_int(j, "bmd_version", 0);
    struct sl_bmd *bm = sl_bmd_get();
    int64_t mybv = bm->version;
    sl_bmd_put(bm);
    if (jbv > mybv) {
        json_t *d = fetch_doc(n->ctrl_url, "bmd");
        struct sl_err e2;
        struct sl_bmd *b = d ? sl_bmd_from_json(d, &e2) : NULL;
        if (b && sl_bmd_receive(b) == 1)
            sl_logw("join: %s has a newer bucket map (v%lld, this primary v%lld): taken", n->id, (long long)jbv,
                    (long long)mybv);
        json_decref(d);
    }
    struct sl_smap *s = sl_smap_get();
    int64_t mysv = s->version;
    sl_smap_put(s);
    if (jsv >= mysv) {
        struct sl_err e2 = { 0 };
        sl_logw("join: %s has a newer cluster map (v%lld, this primary v%lld): numbering this one past it", n->id,
                (long long)jsv, (long long)mysv);
        sl_smap_modify(edit_version_past, &jsv, &e2);
    }
}

void sl_cluster_join_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    if (!primary) {
        sl_resp_errf(r, SL_EINVAL, "%s is not the primary proxy; join via proxy.primary_url", G.name);
        return;
    }
    struct sl_smap *s = NULL;
    struct join_arg ja;
    memset(&ja, 0, sizeof(ja));
    json_t *j = sl_req_body_json(r, &err);
    if (!j || !json_is_object(j)) {
        sl_errf(&err, SL_EINVAL, "join: body must be {\"snode\": {...}, \"uuid\": \"...\"}");
        goto fail;
    }
    if (sl_snode_from_json(json_object_get(j, "snode"), &ja.n, &err) < 0)
        goto fail;
    s = sl_smap_get();
    const char *uuid = sl_json_str(j, "uuid", "");
    if (uuid[0] && strcmp(uuid, s->uuid)) {
        char nm[80];
        sl_snode_name(&ja.n, nm, sizeof(nm));
        sl_errf(&err, SL_EEXIST,
                "%s was a member of cluster %s, but this is cluster %s (primary %s): it cannot join. To "
                "add it to this cluster, stop it and remove its node metadata (confdir/meta and "
                "confdir/node_id) and start it again; to keep it in its own cluster, set proxy.primary_url "
                "to that cluster's primary",
                nm, uuid, s->uuid, G.name);
        goto fail;
    }
    sl_smap_put(s);
    catch_up(j, &ja.n);
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
        /* a node whose certificate this cluster does not trust (or that
         * does not take our signature) is not let in */
        bool tls = !pr.status && (strstr(pr.err, "SSL") || strstr(pr.err, "certificate"));
        if (tls || pr.status == 401) {
            sl_errf(&err, SL_EEXIST, "the primary cannot call the joining node at %s: %s (%s)", url, pr.err,
                    tls ? "its certificate is not signed by the CA in net.http.client_ca_tls, or does not name "
                          "its address" : "it does not take this cluster's signature: another cluster secret");
            sl_peer_resp_free(&pr);
            free(url);
            sl_resp_err(r, &err);
            return;
        }
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
    /* a target removed by force may be back with its data (before the
     * rebalance moves any of it away) */
    if (ja.n.type == SL_NODE_TARGET)
        sl_lost_rejoined(ja.n.id, ja.n.ctrl_url);
    if (ja.new_target) {
        char *id = sl_cluster_rebalance("target joined");
        free(id);
    }
    sl_resp_json_new(r, 200, all_docs());
    return;
fail:
    sl_smap_put(s);
    json_decref(j);
    sl_resp_err(r, &err);
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

/* a copy of node id's entry in the current Smap; false when it has none */
static bool find_node(const char *id, struct sl_snode *out)
{
    struct sl_smap *s = sl_smap_get();
    const struct sl_snode *n = sl_smap_find(s, id);
    if (n)
        *out = *n;
    sl_smap_put(s);
    return n != NULL;
}

static void remove_node(const char *id, bool no_shutdown)
{
    struct sl_snode n;
    bool have = find_node(id, &n);
    struct flag_arg fa = { .id = id, .remove = true };
    struct sl_err err;
    if (sl_smap_modify(edit_flags, &fa, &err) < 0)
        return;
    sl_logi("node %s removed from the cluster map (decommissioned)", id);
    if (have && !no_shutdown)
        ask_shutdown(&n);
}

/* ---- admin actions on the cluster (PUT /v1/cluster, api/) ---- */

int sl_cluster_set_config(json_t *partial, json_t *restart, struct sl_err *err)
{
    struct sl_config *nc = sl_config_update(sl_conf, partial, restart, err);
    if (!nc)
        return -1;
    sl_config_install(nc);
    sl_log_set_level(nc->log_level);
    json_t *cj = sl_config_cluster_json(nc);
    sl_node_save_doc("config", cj);
    json_decref(cj);
    sl_logi("cluster config updated to version %lld", (long long)nc->config_version);
    if (primary)
        push_one("config", config_doc());
    return 0;
}

/* Decommissioning a target whose objects cannot move away (it is offline,
 * or the rebalance is skipped) loses those that exist nowhere else: refused
 * unless forced; forced, the loss is recorded (lost.h). 0 = go ahead. */
static int check_loss(const char *a, const struct sl_snode *n, bool skip_reb, bool force, struct sl_err *err)
{
    bool offline = n->flags & SL_SNF_OFFLINE;
    if (!offline && !skip_reb)
        return 0;
    /* (skip_reb also stands for rebalance.enabled false) */
    json_t *detail = NULL;
    int64_t it = 0;
    int64_t cnt = sl_lost_holdings(n->id, n->ctrl_url, !offline, &detail, &it);
    int rc = 0;
    if (cnt != 0 && !force) {
        char *what = sl_lost_describe(detail);
        char age[64] = "";
        if (it)
            snprintf(age, sizeof(age), " (its inventory of %llds ago)", (long long)((sl_now_ns() - it) / 1000000000LL));
        rc = sl_errf(err, SL_EEXIST,
                     "%s t[%s] refused: %s, so its objects cannot be moved away, and %s%s%s. Bring the target "
                     "back and retry%s, or force it (\"force\": true; CLI --force): the loss is then recorded "
                     "and listings of those buckets say so until the target's data is re-attached or the loss "
                     "acknowledged",
                     a, n->id, offline ? "the target is offline (it stopped answering keepalives)"
                                       : sl_conf->rebalance_enabled ? "the rebalance is skipped (skip_rebalance)"
                                                                    : "rebalance.enabled is false",
                     cnt < 0 ? "how many of them exist nowhere else is unknown (this primary has no inventory "
                               "of it: it was down since this primary started)"
                             : "these exist nowhere else: ",
                     cnt < 0 ? "" : what, age,
                     offline ? "" : sl_conf->rebalance_enabled ? " without skip_rebalance"
                                                               : " with rebalance.enabled true");
        free(what);
    } else if (cnt != 0) {
        sl_lost_record(n->id, n->url, a, detail, it, cnt < 0);
    }
    if (rc == 0 && skip_reb)
        sl_lost_gone(n->id); /* its slices and replicas go too, and nothing re-encodes them yet */
    json_decref(detail);
    return rc;
}

int sl_cluster_member_action(const char *a, const char *sid, bool skip_reb, bool no_shutdown, bool force,
                             char **reb_out, struct sl_err *err)
{
    *reb_out = NULL;
    struct flag_arg fa = { .id = sid };
    if (!strcmp(a, "start-maintenance"))
        fa.set = SL_SNF_MAINT;
    else if (!strcmp(a, "stop-maintenance"))
        fa.clear = SL_SNF_MAINT | SL_SNF_DECOMM;
    else if (!strcmp(a, "decommission-node"))
        fa.set = SL_SNF_DECOMM;
    else if (strcmp(a, "shutdown-node"))
        return sl_errf(err, SL_EINVAL, "invalid node action \"%s\"", a);
    struct sl_snode ncopy;
    bool have = find_node(sid, &ncopy);
    bool is_target = have && ncopy.type == SL_NODE_TARGET;
    if (!have)
        return sl_errf(err, SL_ENOENT, "%s: node %s is not in the cluster map", a, sid);
    if (!strcmp(a, "shutdown-node")) {
        ask_shutdown(&ncopy);
        return 0;
    }
    /* without a rebalance (skipped, or rebalance.enabled false) nothing moves away */
    if (is_target && !strcmp(a, "decommission-node") &&
        check_loss(a, &ncopy, skip_reb || !sl_conf->rebalance_enabled, force, err) < 0)
        return -1;
    if (sl_smap_modify(edit_flags, &fa, err) < 0)
        return -1;
    char *reb = NULL;
    bool decomm = !strcmp(a, "decommission-node");
    if (is_target && !skip_reb)
        reb = sl_cluster_rebalance(a);
    if (decomm && (!reb || !is_target))
        remove_node(sid, no_shutdown);
    else if (decomm || !strcmp(a, "start-maintenance"))
        add_pending(sid, reb, decomm, no_shutdown);
    sl_logi("%s %s%s%s", a, sid, reb ? ", rebalance " : "", reb ? reb : "");
    *reb_out = reb;
    return 0;
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
        bool done = true, failed = false;
        char why[600] = "";
        if (p->reb[0]) {
            struct sl_err err = { 0 };
            json_t *per = sl_cluster_job_snaps(p->reb, "rebalance", false, &err);
            json_t *st = sl_cluster_job_status(per, p->reb);
            done = !err.msg[0] && st && sl_json_int(st, "end_time", 0) != 0;
            if (done && json_is_true(json_object_get(st, "aborted"))) {
                /* a newer rebalance took over (another membership change): follow it */
                json_t *d = sl_cluster_doc("rmd");
                const char *latest = sl_json_str(d, "id", "");
                if (latest[0] && strcmp(latest, p->reb)) {
                    pthread_mutex_lock(&cmu);
                    for (int j = 0; j < npending; j++)
                        if (!strcmp(pending[j].id, p->id))
                            snprintf(pending[j].reb, sizeof(pending[j].reb), "%s", latest);
                    pthread_mutex_unlock(&cmu);
                    done = false;
                } else {
                    failed = true;
                    snprintf(why, sizeof(why), "rebalance %s was aborted", p->reb);
                }
                json_decref(d);
            } else if (done && sl_json_str(st, "err", "")[0]) {
                failed = true;
                snprintf(why, sizeof(why), "rebalance %s ended with errors: %.500s", p->reb, sl_json_str(st, "err", ""));
            }
            json_decref(st);
            json_decref(per);
        }
        if (!done)
            continue;
        if (failed && p->decommission) {
            /* objects may still be only there: the node stays (flagged) */
            sl_loge("decommission of %s stopped: %s; the node stays in the cluster map, flagged decommissioning. "
                    "Run `shale start rebalance` and decommission it again once that ends without errors",
                    p->id, why);
        } else if (p->decommission)
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

static void adopt_smap_from(const char *ctrl_url);

/* a node whose cii (health?cii=true) names a newer Smap of this cluster with
 * another primary: its ctrl URL (malloc'd), else NULL */
static char *newer_primary_in(const struct sl_fan *f, const struct sl_snode *const *who, int n, const struct sl_smap *s)
{
    for (int i = 0; i < n; i++) {
        if (!f[i].ok || f[i].resp.status != 200)
            continue;
        json_error_t je;
        json_t *ci = json_loadb(f[i].resp.body.p, f[i].resp.body.len, 0, &je);
        json_t *sm = json_object_get(ci, "smap");
        const char *pid = sl_json_str(json_object_get(sm, "Primary"), "id", "");
        bool newer = sm && !strcmp(sl_json_str(sm, "uuid", ""), s->uuid) && sl_json_int(sm, "version", 0) > s->version &&
                     pid[0] && strcmp(pid, G.id);
        json_decref(ci);
        if (newer)
            return sl_xstrdup(who[i]->ctrl_url);
    }
    return NULL;
}

int sl_cluster_fence(struct sl_err *err)
{
    if (!primary || G.role == SL_ROLE_STANDALONE)
        return 0;
    /* the other gateways (one of them would be the one elected instead of
     * this primary, had it been paused or cut off) */
    struct sl_smap *s = sl_smap_get();
    struct sl_fan *f = sl_xcalloc((size_t)s->nnodes + 1, sizeof(*f));
    const struct sl_snode **who = sl_xcalloc((size_t)s->nnodes + 1, sizeof(*who));
    int n = 0;
    for (int i = 0; i < s->nnodes; i++) {
        const struct sl_snode *nd = &s->nodes[i];
        if (nd->type != SL_NODE_PROXY || !strcmp(nd->id, G.id) || (nd->flags & SL_SNF_OFFLINE))
            continue;
        f[n] = (struct sl_fan){ .url = sl_xasprintf("%s/v1/health?cii=true", nd->ctrl_url), .method = "GET" };
        who[n++] = nd;
    }
    sl_peer_fanout(f, n, 0);
    char *deposer = newer_primary_in(f, who, n, s);
    sl_peer_fanout_free_urls(f, n);
    free(f);
    free(who);
    sl_smap_put(s);
    if (!deposer)
        return 0;
    sl_logw("%s: another gateway was elected primary meanwhile (it was paused or cut off): stepping down", G.name);
    adopt_smap_from(deposer);
    free(deposer);
    return sl_errf(err, SL_EUNAVAIL, "%s is no longer the primary: another gateway was elected while it was paused "
                   "or cut off; nothing was changed. Retry (this gateway forwards to the new primary now)", G.name);
}

static void push_to(const char *ctrl_url)
{
    json_t *docs = all_docs();
    char *url = sl_xasprintf("%s/v1/metasync", ctrl_url);
    struct sl_peer_resp r;
    sl_peer_json("PUT", url, docs, 0, &r);
    if (r.status != 200)
        sl_logw("metasync to %s failed: %s", url, r.err);
    sl_peer_resp_free(&r);
    free(url);
}

/* GET ctrl_url/v1/daemon?what=WHAT: the document (new reference) or NULL */
static json_t *fetch_doc(const char *ctrl_url, const char *what)
{
    char *url = sl_xasprintf("%s/v1/daemon?what=%s", ctrl_url, what);
    struct sl_peer_resp r;
    json_t *j = NULL;
    if (sl_peer_call("GET", url, NULL, 0, NULL, 0, 0, &r) == 0 && r.status == 200) {
        json_error_t je;
        j = sl_json_loadb_u64(r.body.p, r.body.len, &je);
    }
    sl_peer_resp_free(&r);
    free(url);
    return j;
}

/* take the Smap (and the BMD: buckets made meanwhile) of the node at ctrl_url */
static void adopt_smap_from(const char *ctrl_url)
{
    struct sl_err e2;
    json_t *j = fetch_doc(ctrl_url, "bmd");
    struct sl_bmd *b = j ? sl_bmd_from_json(j, &e2) : NULL;
    if (b)
        sl_bmd_receive(b);
    json_decref(j);
    j = fetch_doc(ctrl_url, "smap");
    struct sl_smap *o = j ? sl_smap_from_json(j, &e2) : NULL;
    if (o)
        sl_smap_receive(o);
    json_decref(j);
}

int64_t sl_keepalive_wait(const volatile bool *stop)
{
    int64_t ms = sl_conf->keepalive_interval_ns / 1000000;
    if (ms < 200)
        ms = 200;
    for (int64_t t = 0; t < ms && !*stop; t += 100)
        sl_sleep_ms(100);
    return ms;
}

static void *keepalive(void *arg)
{
    struct ka *st = NULL;
    int nst = 0;
    sl_peer_abort_on(&ka_stop); /* a stop does not wait for a node that does not answer */
    while (!ka_stop) {
        sl_keepalive_wait(&ka_stop);
        if (ka_stop)
            break;
        struct sl_smap *s = sl_smap_get();
        struct sl_fan *f = sl_xcalloc((size_t)(s->nnodes ? s->nnodes : 1), sizeof(*f));
        const struct sl_snode **who = sl_xcalloc((size_t)(s->nnodes ? s->nnodes : 1), sizeof(*who));
        int n = 0;
        for (int i = 0; i < s->nnodes; i++) {
            if (!strcmp(s->nodes[i].id, G.id))
                continue;
            /* cii: each node's Smap version and primary (a newer one means this
             * primary was replaced while it was paused or cut off) */
            f[n].url = sl_xasprintf("%s/v1/health?cii=true", s->nodes[i].ctrl_url);
            who[n++] = &s->nodes[i];
        }
        sl_peer_fanout(f, n, sl_conf->max_keepalive_ns / 1000000);
        char *deposer = newer_primary_in(f, who, n, s);
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
                /* it missed every change while it was away, not only the Smap's */
                push_to(who[i]->ctrl_url);
            } else if (!ok && !(who[i]->flags & SL_SNF_OFFLINE) && st[k].fails >= sl_conf->keepalive_factor) {
                fa.set = SL_SNF_OFFLINE;
                sl_logw("node %s (%s) did not answer %d keepalive(s): flagged offline (%s)", who[i]->id,
                        who[i]->url, st[k].fails, f[i].resp.err);
                sl_smap_modify(edit_flags, &fa, &err);
            }
        }
        sl_peer_fanout_free_urls(f, n);
        free(f);
        free(who);
        sl_smap_put(s);
        if (deposer) {
            /* another gateway was elected meanwhile: take its map (this one steps down in on_smap) */
            sl_logw("%s: a node has a newer cluster map naming another primary: stepping down", G.name);
            adopt_smap_from(deposer);
            free(deposer);
            continue;
        }
        finish_pending();
        sl_lost_tick();
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
    json_t *d;
    if ((d = sl_node_load_doc("rmd")))
        rmd = d;
    for (size_t i = 0; i < SL_ARRAY_SIZE(mdocs); i++)
        if ((d = sl_node_load_doc(mdocs[i].name)))
            mdocs[i].d = d;
    primary = G.role == SL_ROLE_PROXY && is_self_url(sl_conf->primary_url);
    /* the primary (or a standalone node) creates the cluster secret at its
     * first start; every other node must be given a copy */
    if (sl_sec_init(NULL, primary || G.role == SL_ROLE_STANDALONE, err) < 0) {
        if (old)
            sl_smap_put(old);
        return -1;
    }
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
    sl_bmd_listen(on_bmd);
    sl_smap_listen(on_smap);
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
    struct sl_bmd *bm = sl_bmd_get();
    json_object_set_new(body, "bmd_version", json_integer(bm->version));
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
            rc = docs ? apply_docs(docs, err) : sl_errf(err, SL_EIO, "join: bad response from %s", url);
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

static void start_keepalive(void)
{
    static pthread_mutex_t ka_mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&ka_mu);
    if (ka_live) {
        ka_stop = true;
        pthread_join(ka_thr, NULL);
        ka_live = false;
    }
    ka_stop = false;
    if (pthread_create(&ka_thr, NULL, keepalive, NULL) == 0)
        ka_live = true;
    pthread_mutex_unlock(&ka_mu);
}

/* This gateway is named primary (set-primary, or it won an election):
 * check liveness from now on and give every node every document. */
static void become_primary(void *arg)
{
    (void)arg;
    if (primary)
        return;
    __atomic_store_n(&primary, true, __ATOMIC_RELEASE);
    start_keepalive();
    json_t *docs = all_docs();
    push(docs);
    json_decref(docs);
    struct sl_smap *s = sl_smap_get();
    sl_logi("%s is the primary proxy now (cluster %s, Smap v%lld)", G.name, s->uuid, (long long)s->version);
    sl_smap_put(s);
}

void sl_cluster_assume_primary(void)
{
    become_primary(NULL);
}

static int edit_take_over(struct sl_smap *s, void *arg, struct sl_err *err)
{
    (void)err;
    const char *old = arg;
    snprintf(s->primary, sizeof(s->primary), "%s", G.id);
    for (int i = 0; i < s->nnodes; i++)
        if (!strcmp(s->nodes[i].id, old))
            s->nodes[i].flags |= SL_SNF_OFFLINE;
    return 0;
}

void sl_cluster_take_over(const char *old)
{
    __atomic_store_n(&primary, true, __ATOMIC_RELEASE);
    struct sl_err err = { 0 };
    if (sl_smap_modify(edit_take_over, (void *)old, &err) < 0) /* pushed to every node (on_smap) */
        sl_loge("take over from %s: %s", old, err.msg);
    __atomic_store_n(&primary, false, __ATOMIC_RELEASE);
    become_primary(NULL);
}

static int edit_set_primary(struct sl_smap *s, void *arg, struct sl_err *err)
{
    const char *id = arg;
    const struct sl_snode *n = sl_smap_find(s, id);
    if (!n || n->type != SL_NODE_PROXY)
        return sl_errf(err, SL_ENOENT, "set-primary: %s is not a gateway (proxy) of this cluster (see GET "
                       "/v1/daemon?what=smap)", id);
    if (n->flags & (SL_SNF_NONELECTABLE | SL_SNF_MAINT | SL_SNF_DECOMM | SL_SNF_OFFLINE))
        return sl_errf(err, SL_EINVAL, "set-primary: gateway %s cannot be the primary: it is %s", id,
                       n->flags & SL_SNF_NONELECTABLE ? "non-electable (proxy.non_electable)"
                       : n->flags & SL_SNF_OFFLINE    ? "offline"
                                                      : "in maintenance or being decommissioned");
    if (!strcmp(s->primary, id))
        return 1;
    snprintf(s->primary, sizeof(s->primary), "%s", id);
    return 0;
}

int sl_cluster_set_primary(const char *id, struct sl_err *err)
{
    if (!primary)
        return sl_errf(err, SL_EINVAL, "set-primary: %s is not the primary", G.name);
    struct sl_snode nc;
    bool have = find_node(id, &nc);
    /* the new primary must answer before the role moves */
    if (have && strcmp(id, G.id)) {
        char *url = sl_xasprintf("%s/v1/health", nc.ctrl_url);
        struct sl_peer_resp r;
        bool ok = sl_peer_call("GET", url, NULL, 0, NULL, 0, 0, &r) == 0 && r.status == 200;
        char why[600];
        snprintf(why, sizeof(why), "%s", r.status ? "not ready" : r.err);
        sl_peer_resp_free(&r);
        free(url);
        if (!ok)
            return sl_errf(err, SL_EUNAVAIL, "set-primary: gateway %s (%s) does not answer (%s); nothing changed",
                           id, nc.url, why);
    }
    if (sl_smap_modify(edit_set_primary, (void *)id, err) < 0)
        return -1;
    sl_logi("set-primary: %s is the primary now", id);
    return 0;
}

/* A gateway configured as the primary that restarts after another took
 * over: if a node of its last Smap knows a newer Smap of this cluster with
 * another primary, that one is the primary (its ctrl URL, malloc'd). */
static char *current_primary_elsewhere(void)
{
    struct sl_smap *s = sl_smap_get();
    char *found = NULL;
    for (int i = 0; i < s->nnodes && !found; i++) {
        const struct sl_snode *n = &s->nodes[i];
        if (!strcmp(n->id, G.id))
            continue;
        char *url = sl_xasprintf("%s/v1/daemon?what=smap", n->ctrl_url);
        struct sl_peer_resp r;
        if (sl_peer_call("GET", url, NULL, 0, NULL, 0, 1000, &r) == 0 && r.status == 200) {
            json_error_t je;
            json_t *j = sl_json_loadb_u64(r.body.p, r.body.len, &je);
            struct sl_err e2;
            struct sl_smap *o = j ? sl_smap_from_json(j, &e2) : NULL;
            const struct sl_snode *op = o ? sl_smap_primary(o) : NULL;
            if (o && op && !strcmp(o->uuid, s->uuid) && o->version > s->version && strcmp(o->primary, G.id))
                found = sl_xstrdup(op->ctrl_url);
            if (o)
                sl_smap_put(o);
            json_decref(j);
        }
        sl_peer_resp_free(&r);
        free(url);
    }
    sl_smap_put(s);
    return found;
}

int sl_start_after_http(struct sl_err *err)
{
    sl_peer_global_init();
    if (G.role == SL_ROLE_STANDALONE)
        return 0;
    char *elsewhere = primary ? current_primary_elsewhere() : NULL;
    if (elsewhere) {
        sl_logw("%s was the primary, but the cluster elected another meanwhile (%s): joining it as a gateway",
                G.name, elsewhere);
        __atomic_store_n(&primary, false, __ATOMIC_RELEASE);
        join_hint = elsewhere;
    }
    if (primary) {
        struct sl_smap *s = sl_smap_get();
        sl_logi("%s is the primary proxy (cluster %s)", G.name, s->uuid);
        sl_smap_put(s);
        start_keepalive();
        sl_vote_start();
        /* re-announce our view: nodes that restarted while we were down catch up */
        json_t *docs = all_docs();
        push(docs);
        json_decref(docs);
        return 0;
    }
    if (join(err) < 0)
        return -1;
    sl_vote_start();
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
    sl_vote_stop();
    if (ka_live) {
        ka_stop = true;
        pthread_join(ka_thr, NULL);
        ka_live = false;
    }
    if (G.role == SL_ROLE_TARGET)
        sl_reb_stop();
    pthread_mutex_lock(&cmu);
    json_decref(rmd);
    rmd = NULL;
    for (size_t i = 0; i < SL_ARRAY_SIZE(mdocs); i++) {
        json_decref(mdocs[i].d);
        mdocs[i].d = NULL;
    }
    pthread_mutex_unlock(&cmu);
}
