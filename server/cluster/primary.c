/* SPDX-License-Identifier: MIT
 * primary.c: the primary's role: becoming it (elected, set-primary, at
 * start), stepping down (a newer map names another, fencing), handing it
 * on (set-primary), and the keepalive that flags nodes offline and online
 * and drives the decommission watcher and the primary's hooks.
 */
#include "cluster.h"
#include "cluster_int.h"
#include "bg.h"
#include "conf.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "peer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_t ka_thr;
static volatile bool ka_stop, ka_live;

struct ka {
    char id[48];
    int fails;
};

void sl_cl_on_smap(const struct sl_smap *old, const struct sl_smap *cur)
{
    sl_cl_smap_changed(old, cur);
    if (sl_cl_primary())
        sl_cl_push_one("smap", sl_smap_json(cur));
    if (G.role != SL_ROLE_PROXY || !cur->primary[0] || !G.ready)
        return;
    bool me = !strcmp(cur->primary, G.id);
    if (me && !sl_cl_primary()) {
        /* set-primary named this gateway: take the role (off this lock) */
        sl_bg_submit(sl_cl_become_primary, NULL);
    } else if (!me && sl_cl_primary()) {
        sl_cl_set_primary(false);
        ka_stop = true; /* the keepalive loop ends; joined by whoever starts the next */
        sl_logi("%s is no longer the primary: %s is (Smap v%lld)", G.name, cur->primary, (long long)cur->version);
    }
}

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
        bool newer = sm && !strcmp(sl_json_str(sm, "uuid", ""), s->uuid) &&
                     sl_md_newer(sl_json_int(sm, "term", 0), sl_json_int(sm, "version", 0), s->term, s->version) &&
                     pid[0] && strcmp(pid, G.id);
        json_decref(ci);
        if (newer)
            return sl_xstrdup(who[i]->ctrl_url);
    }
    return NULL;
}

/* A node's cii names an older Smap or BMD than this primary's (it missed
 * a push) */
static bool behind_of(const json_t *ci, const struct sl_smap *s)
{
    const json_t *sm = json_object_get(ci, "smap"), *bm = json_object_get(ci, "bmd");
    if (!sm || !bm)
        return false;
    struct sl_bmd *b = sl_bmd_get();
    bool old = sl_md_newer(s->term, s->version, sl_json_int(sm, "term", 0), sl_json_int(sm, "version", 0)) ||
               b->version > sl_json_int(bm, "version", 0);
    sl_bmd_put(b);
    return old;
}

int sl_cluster_fence(struct sl_err *err)
{
    if (!sl_cl_primary() || G.role == SL_ROLE_STANDALONE)
        return 0;
    /* the other gateways (one of them would be the one elected instead of
     * this primary, had it been paused or cut off) */
    struct sl_smap *s = sl_smap_get();
    struct sl_fan *f = sl_xcalloc((size_t)s->nnodes + 1, sizeof(*f));
    const struct sl_snode **who = sl_xcalloc((size_t)s->nnodes + 1, sizeof(*who));
    int n = 0, gws = sl_smap_count(s, SL_NODE_PROXY, false);
    for (int i = 0; i < s->nnodes; i++) {
        const struct sl_snode *nd = &s->nodes[i];
        if (nd->type != SL_NODE_PROXY || !strcmp(nd->id, G.id))
            continue;
        /* (those flagged offline too: a majority is of the map's gateways, not of those this one sees) */
        f[n] = (struct sl_fan){ .url = sl_xasprintf("%s/v1/health?cii=true", nd->ctrl_url), .method = "GET" };
        who[n++] = nd;
    }
    int64_t ms = sl_conf->max_keepalive_ns / 1000000;
    sl_peer_fanout(f, n, ms > 0 ? ms : 2000);
    char *deposer = newer_primary_in(f, who, n, s);
    int answered = 1;
    for (int i = 0; i < n; i++)
        answered += f[i].ok && f[i].resp.status == 200;
    sl_peer_fanout_free_urls(f, n);
    free(f);
    free(who);
    sl_smap_put(s);
    if (!deposer && answered * 2 <= gws) {
        sl_logw("%s: a cluster metadata change refused: %d of the %d gateways answer, not a majority", G.name,
                answered, gws);
        return sl_errf(err, SL_EUNAVAIL, "%s (the primary) reaches %d of the cluster's %d gateways (itself counted); "
                       "a change of cluster metadata needs a majority (%d), and this gateway may be cut off from the "
                       "others by a network failure; nothing was changed. Retry when the network heals, or through a "
                       "gateway on the majority's side (it elects a primary of its own)", G.name, answered, gws,
                       gws / 2 + 1);
    }
    if (!deposer)
        return 0;
    sl_logw("%s: another gateway was elected primary meanwhile (it was paused or cut off): stepping down", G.name);
    sl_cl_adopt_smap_from(deposer);
    free(deposer);
    return sl_errf(err, SL_EUNAVAIL, "%s is no longer the primary: another gateway was elected while it was paused "
                   "or cut off; nothing was changed. Retry (this gateway forwards to the new primary now)", G.name);
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
    bool had_quorum = true;
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
        /* cut off from the majority of the gateways, this primary changes nothing (the majority may
         * elect another): no node flagged offline or online until it reaches them again */
        int gws = sl_smap_count(s, SL_NODE_PROXY, false), gw_ok = 1;
        for (int i = 0; i < n; i++)
            gw_ok += who[i]->type == SL_NODE_PROXY && f[i].ok && f[i].resp.status == 200;
        bool quorum = gw_ok * 2 > gws;
        if (quorum && !had_quorum)
            sl_logi("%s reaches a majority of the gateways again (%d of %d)", G.name, gw_ok, gws);
        else if (!quorum && had_quorum)
            sl_logw("%s reaches %d of the %d gateways, not a majority: no node is flagged offline or online, and "
                    "cluster metadata changes are refused, until it does", G.name, gw_ok, gws);
        had_quorum = quorum;
        for (int i = 0; i < n && quorum; i++) {
            bool ok = f[i].ok && f[i].resp.status == 200;
            bool behind = false;
            if (ok) {
                json_error_t je;
                json_t *ci = json_loadb(f[i].resp.body.p, f[i].resp.body.len, 0, &je);
                if (ci)
                    sl_cl_alive(who[i], ci);
                behind = ci && !(who[i]->flags & SL_SNF_OFFLINE) && behind_of(ci, s);
                json_decref(ci);
            }
            if (behind) { /* it missed a push (a link that failed for a moment): every document again */
                sl_logi("node %s has older cluster metadata than this primary's: pushing it again", who[i]->id);
                sl_cl_push_to(who[i]->ctrl_url);
            }
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
                sl_smap_modify(sl_cl_edit_flags, &fa, &err);
                /* it missed every change while it was away, not only the Smap's */
                sl_cl_push_to(who[i]->ctrl_url);
            } else if (!ok && !(who[i]->flags & SL_SNF_OFFLINE) && st[k].fails >= sl_conf->keepalive_factor) {
                fa.set = SL_SNF_OFFLINE;
                sl_logw("node %s (%s) did not answer %d keepalive(s): flagged offline (%s)", who[i]->id,
                        who[i]->url, st[k].fails, f[i].resp.err);
                sl_smap_modify(sl_cl_edit_flags, &fa, &err);
            }
        }
        sl_peer_fanout_free_urls(f, n);
        free(f);
        free(who);
        sl_smap_put(s);
        if (deposer) {
            /* another gateway was elected meanwhile: take its map (this one steps down in on_smap) */
            sl_logw("%s: a node has a newer cluster map naming another primary: stepping down", G.name);
            sl_cl_adopt_smap_from(deposer);
            free(deposer);
            continue;
        }
        if (quorum) { /* (the decommission watcher and the hooks change the map and documents too) */
            sl_cl_finish_pending();
            sl_cl_primary_tick();
        }
    }
    free(st);
    return NULL;
}

void sl_cl_start_keepalive(void)
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
void sl_cl_become_primary(void *arg)
{
    (void)arg;
    if (sl_cl_primary())
        return;
    sl_cl_set_primary(true);
    sl_cl_start_keepalive();
    json_t *docs = sl_cl_all_docs();
    sl_cl_push(docs);
    json_decref(docs);
    struct sl_smap *s = sl_smap_get();
    sl_logi("%s is the primary proxy now (cluster %s, Smap v%lld)", G.name, s->uuid, (long long)s->version);
    sl_smap_put(s);
}

void sl_cluster_assume_primary(void)
{
    sl_cl_become_primary(NULL);
}

struct take_over {
    const char *old;
    int64_t term;
};

static int edit_take_over(struct sl_smap *s, void *arg, struct sl_err *err)
{
    (void)err;
    const struct take_over *t = arg;
    const char *old = t->old;
    snprintf(s->primary, sizeof(s->primary), "%s", G.id);
    s->term = SL_MAX(s->term, t->term);
    for (int i = 0; i < s->nnodes; i++)
        if (!strcmp(s->nodes[i].id, old))
            s->nodes[i].flags |= SL_SNF_OFFLINE;
    return 0;
}

void sl_cluster_take_over(const char *old, int64_t term)
{
    sl_cl_set_primary(true);
    struct sl_err err = { 0 };
    struct take_over t = { old, term };
    if (sl_smap_modify(edit_take_over, &t, &err) < 0) /* pushed to every node (on_smap) */
        sl_loge("take over from %s: %s", old, err.msg);
    sl_cl_set_primary(false);
    sl_cl_become_primary(NULL);
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
    if (!sl_cl_primary())
        return sl_errf(err, SL_EINVAL, "set-primary: %s is not the primary", G.name);
    struct sl_snode nc;
    bool have = sl_cl_find_node(id, &nc);
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
char *sl_cl_primary_elsewhere(void)
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
            if (o && op && !strcmp(o->uuid, s->uuid) && sl_md_newer(o->term, o->version, s->term, s->version) &&
                strcmp(o->primary, G.id))
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


void sl_cl_stop_keepalive(void)
{
    if (ka_live) {
        ka_stop = true;
        pthread_join(ka_thr, NULL);
        ka_live = false;
    }
}
