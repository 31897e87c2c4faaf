/* SPDX-License-Identifier: MIT
 * docs.c: the cluster's documents and metasync, the bottom of the cluster
 * floor: the module documents (EtlMD, PlanMD, ...) and the RMD held here,
 * pushing every document from the primary, receiving and checking them on
 * every node, and the hooks of what watches the cluster (cluster.h). Who is
 * primary is kept here too; primary.c changes it.
 */
#include "cluster.h"
#include "cluster_int.h"
#include "bg.h"
#include "conf.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "peer.h"
#include "stats.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- hooks ---- */

static const struct sl_cluster_hooks *hooks[8];
static int nhooks;

void sl_cluster_hook(const struct sl_cluster_hooks *h)
{
    if (nhooks < (int)SL_ARRAY_SIZE(hooks))
        hooks[nhooks++] = h;
    else
        sl_loge("cluster: more than %d hooks; %s not registered", (int)SL_ARRAY_SIZE(hooks), h->name);
}

void sl_cl_serving(void)
{
    for (int i = 0; i < nhooks; i++)
        if (hooks[i]->serving)
            hooks[i]->serving();
}

void sl_cl_stopping(void)
{
    for (int i = 0; i < nhooks; i++)
        if (hooks[i]->stopping)
            hooks[i]->stopping();
}

void sl_cl_smap_changed(const struct sl_smap *old, const struct sl_smap *cur)
{
    for (int i = 0; i < nhooks; i++)
        if (hooks[i]->smap_changed)
            hooks[i]->smap_changed(old, cur);
}

static void hook_rebalance(const char *id)
{
    for (int i = 0; i < nhooks; i++)
        if (hooks[i]->rebalance)
            hooks[i]->rebalance(id);
}

void sl_cl_primary_tick(void)
{
    for (int i = 0; i < nhooks; i++)
        if (hooks[i]->primary_tick)
            hooks[i]->primary_tick();
}

void sl_cl_joined(const struct sl_snode *n)
{
    for (int i = 0; i < nhooks; i++)
        if (hooks[i]->joined)
            hooks[i]->joined(n);
}

void sl_cl_alive(const struct sl_snode *n, const json_t *cii)
{
    for (int i = 0; i < nhooks; i++)
        if (hooks[i]->alive)
            hooks[i]->alive(n, cii);
}

int sl_cl_leaving(const char *action, const struct sl_snode *n, bool no_rebalance, bool force, struct sl_err *err)
{
    for (int i = 0; i < nhooks; i++)
        if (hooks[i]->leaving && hooks[i]->leaving(action, n, no_rebalance, force, err) < 0)
            return -1;
    return 0;
}

int sl_cluster_listing_check(const struct sl_bck *b, struct sl_err *err)
{
    for (int i = 0; i < nhooks; i++)
        if (hooks[i]->listing && hooks[i]->listing(b, err) < 0)
            return -1;
    return 0;
}

/* ---- who is primary ---- */

static bool primary_now; /* this gateway acts as the primary */

bool sl_is_primary(void)
{
    return __atomic_load_n(&primary_now, __ATOMIC_ACQUIRE) || G.role == SL_ROLE_STANDALONE;
}

bool sl_cl_primary(void)
{
    return __atomic_load_n(&primary_now, __ATOMIC_ACQUIRE);
}

void sl_cl_set_primary(bool on)
{
    __atomic_store_n(&primary_now, on, __ATOMIC_RELEASE);
}

pthread_mutex_t sl_cl_mu = PTHREAD_MUTEX_INITIALIZER;
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
int64_t sl_cluster_uptime_ns(void)
{
    return sl_mono_ns() - G.start_mono;
}

bool sl_cluster_ready(void)
{
    return G.ready;
}

int64_t sl_cl_doc_version(const json_t *d)
{
    return d ? sl_json_int(d, "version", 0) : 0;
}

json_t *sl_cluster_doc(const char *name)
{
    pthread_mutex_lock(&sl_cl_mu);
    struct mdoc *m = mdoc_of(name);
    json_t *d = m ? m->d : !strcmp(name, "rmd") ? rmd : NULL;
    d = d ? json_incref(d) : NULL;
    pthread_mutex_unlock(&sl_cl_mu);
    return d;
}

void sl_cluster_doc_listen(const char *name, sl_doc_listener fn)
{
    struct mdoc *m = mdoc_of(name);
    if (m)
        m->fn = fn;
}

/* ---- metasync ---- */

json_t *sl_cl_config_doc(void)
{
    json_t *c = sl_config_cluster_json(sl_conf);
    json_object_set_new(c, "version", json_integer(sl_conf->config_version));
    return c;
}

json_t *sl_cl_all_docs(void)
{
    json_t *o = json_object();
    struct sl_smap *s = sl_smap_get();
    struct sl_bmd *b = sl_bmd_get();
    json_object_set_new(o, "uuid", json_string(s->uuid));
    json_object_set_new(o, "term", json_integer(s->term));
    json_object_set_new(o, "smap", sl_smap_json(s));
    json_object_set_new(o, "bmd", sl_bmd_json(b));
    json_object_set_new(o, "config", sl_cl_config_doc());
    pthread_mutex_lock(&sl_cl_mu);
    if (rmd)
        json_object_set(o, "rmd", rmd);
    for (size_t i = 0; i < SL_ARRAY_SIZE(mdocs); i++)
        if (mdocs[i].d)
            json_object_set(o, mdocs[i].name, mdocs[i].d);
    pthread_mutex_unlock(&sl_cl_mu);
    sl_smap_put(s);
    sl_bmd_put(b);
    return o;
}

/* Push docs to every node but this one (and nodes known to be offline). */
void sl_cl_push(json_t *docs)
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

void sl_cl_push_one(const char *name, json_t *doc)
{
    json_t *o = json_object();
    struct sl_smap *s = sl_smap_get();
    json_object_set_new(o, "uuid", json_string(s->uuid));
    json_object_set_new(o, "term", json_integer(s->term));
    sl_smap_put(s);
    json_object_set_new(o, name, doc);
    sl_cl_push(o);
    json_decref(o);
}

void sl_cl_on_bmd(const struct sl_bmd *old, const struct sl_bmd *cur)
{
    if (sl_cl_primary())
        sl_cl_push_one("bmd", sl_bmd_json(cur));
}

static volatile bool removed_unsafe; /* rm-unsafe: this node stays up outside the map */

void sl_cluster_removed_unsafe(void)
{
    removed_unsafe = true;
    sl_logw("the primary removes this node from the cluster map (rm-unsafe): it keeps running outside the "
            "cluster; restart it to join again");
}

void sl_cluster_shutdown_self(const char *why)
{
    sl_logi("shutting down: %s", why);
    kill(getpid(), SIGTERM);
}

void sl_cl_set_rmd(json_t *d)
{
    pthread_mutex_lock(&sl_cl_mu);
    json_decref(rmd);
    rmd = json_incref(d);
    pthread_mutex_unlock(&sl_cl_mu);
    sl_node_save_doc("rmd", d);
}

/* Apply received documents. Returns -1 with err on a foreign cluster. */
static int apply_docs_locked(json_t *docs, struct sl_err *err);

/* Documents apply one set at a time: two pushes applied at once could
 * install an older config over a newer one (each checks, then installs). */
int sl_cl_apply_docs(json_t *docs, struct sl_err *err)
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
    if ((d = json_object_get(docs, "config")) && sl_cl_doc_version(d) > sl_conf->config_version) {
        json_t *c = json_deep_copy(d);
        json_object_del(c, "version");
        struct sl_config *nc = sl_config_with_cluster(sl_conf, c, err);
        json_decref(c);
        if (nc) {
            sl_cl_config_install(nc);
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
                if (!me && !sl_cl_primary() && G.ready && removed_unsafe)
                    sl_logw("Smap v%lld has no place for this node (removed by rm-unsafe): not serving the "
                            "cluster until it joins again (restart it)", (long long)v);
                else if (!me && !sl_cl_primary() && G.ready)
                    sl_cluster_shutdown_self("this node was removed from the cluster map (decommissioned)");
            }
        }
    }
    if ((d = json_object_get(docs, "rmd"))) {
        pthread_mutex_lock(&sl_cl_mu);
        bool newer = sl_cl_doc_version(d) > sl_cl_doc_version(rmd);
        pthread_mutex_unlock(&sl_cl_mu);
        if (newer) {
            sl_cl_set_rmd(d);
            /* not before this target is in the map: a joiner's pre-sync has
             * the map without it, and a rebalance run with that map would
             * send every object it holds away (it starts the latest one once
             * it has joined, sl_start_after_http) */
            struct sl_smap *sm = sl_smap_get();
            bool member = sl_smap_find(sm, G.id) != NULL;
            sl_smap_put(sm);
            if (G.role == SL_ROLE_TARGET && member)
                hook_rebalance(sl_json_str(d, "id", "g0"));
        }
    }
    for (size_t i = 0; i < SL_ARRAY_SIZE(mdocs); i++) {
        struct mdoc *m = &mdocs[i];
        if (!(d = json_object_get(docs, m->name)))
            continue;
        pthread_mutex_lock(&sl_cl_mu);
        bool newer = sl_cl_doc_version(d) > sl_cl_doc_version(m->d);
        if (newer) {
            json_decref(m->d);
            m->d = json_incref(d);
        }
        pthread_mutex_unlock(&sl_cl_mu);
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
    pthread_mutex_lock(&sl_cl_mu);
    int64_t v = sl_cl_doc_version(m->d) + 1;
    json_object_set_new(doc, "version", json_integer(v));
    json_decref(m->d);
    m->d = json_incref(doc);
    pthread_mutex_unlock(&sl_cl_mu);
    sl_node_save_doc(m->name, doc);
    if (m->fn)
        m->fn(doc);
    if (sl_cl_primary())
        sl_cl_push_one(m->name, json_incref(doc));
    json_decref(doc);
    return 0;
}

static const char known_docs[] = "uuid, smap, bmd, config, rmd, etlmd, planmd, s3md, remais, authmd, lostmd";

/* A received metasync body is checked whole before any of it is applied:
 * junk, an unknown document or one that would not parse is refused and
 * nothing changes (apply_docs skips what it cannot use, one document at a
 * time, and an Smap without this node in it shuts the node down). */
static int check_docs(json_t *docs, struct sl_err *err)
{
    struct sl_smap *cur = sl_smap_get();
    char uuid[sizeof(cur->uuid)];
    snprintf(uuid, sizeof(uuid), "%s", cur->uuid);
    int64_t term = cur->term;
    sl_smap_put(cur);
    json_t *tj = json_object_get(docs, "term");
    if (json_is_integer(tj) && json_integer_value(tj) < term)
        /* a primary the majority replaced (cut off, or paused) that has not heard yet */
        return sl_errf(err, SL_EEXIST, "metasync from a primary of term %lld refused: this node is at term %lld (a "
                       "majority of the gateways elected another primary since); nothing was applied",
                       (long long)json_integer_value(tj), (long long)term);
    int n = 0;
    const char *k;
    json_t *d;
    json_object_foreach(docs, k, d) {
        if (!strcmp(k, "uuid")) {
            if (!json_is_string(d))
                return sl_errf(err, SL_EINVAL, "metasync: \"uuid\" must be a string");
            continue;
        }
        if (!strcmp(k, "term")) { /* the sender's term (its map's) */
            if (!json_is_integer(d) || json_integer_value(d) < 0)
                return sl_errf(err, SL_EINVAL, "metasync: \"term\" must be a non-negative integer");
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
    if (sl_cl_apply_docs(j, &err) < 0)
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
    if (G.role == SL_ROLE_STANDALONE || sl_cl_primary())
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

void sl_cl_push_to(const char *ctrl_url)
{
    json_t *docs = sl_cl_all_docs();
    char *url = sl_xasprintf("%s/v1/metasync", ctrl_url);
    struct sl_peer_resp r;
    sl_peer_json("PUT", url, docs, 0, &r);
    if (r.status != 200)
        sl_logw("metasync to %s failed: %s", url, r.err);
    sl_peer_resp_free(&r);
    free(url);
}

/* GET ctrl_url/v1/daemon?what=WHAT: the document (new reference) or NULL */
json_t *sl_cl_fetch_doc(const char *ctrl_url, const char *what)
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
void sl_cl_adopt_smap_from(const char *ctrl_url)
{
    struct sl_err e2;
    json_t *j = sl_cl_fetch_doc(ctrl_url, "bmd");
    struct sl_bmd *b = j ? sl_bmd_from_json(j, &e2) : NULL;
    if (b)
        sl_bmd_receive(b);
    json_decref(j);
    j = sl_cl_fetch_doc(ctrl_url, "smap");
    struct sl_smap *o = j ? sl_smap_from_json(j, &e2) : NULL;
    if (o)
        sl_smap_receive(o);
    json_decref(j);
}


void sl_cl_config_install(struct sl_config *nc)
{
    sl_config_install(nc);
    sl_log_set_level(nc->log_level);
    json_t *cj = sl_config_cluster_json(nc);
    sl_node_save_doc("config", cj);
    json_decref(cj);
}

/* ---- start and stop ---- */

void sl_cl_docs_load(void)
{
    json_t *d;
    if ((d = sl_node_load_doc("rmd")))
        rmd = d;
    for (size_t i = 0; i < SL_ARRAY_SIZE(mdocs); i++)
        if ((d = sl_node_load_doc(mdocs[i].name)))
            mdocs[i].d = d;
}

void sl_cl_docs_free(void)
{
    pthread_mutex_lock(&sl_cl_mu);
    json_decref(rmd);
    rmd = NULL;
    for (size_t i = 0; i < SL_ARRAY_SIZE(mdocs); i++) {
        json_decref(mdocs[i].d);
        mdocs[i].d = NULL;
    }
    pthread_mutex_unlock(&sl_cl_mu);
}
