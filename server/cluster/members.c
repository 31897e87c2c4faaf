/* SPDX-License-Identifier: MIT
 * members.c: the cluster's membership, on the primary: nodes joining
 * (and catching the primary up), the flags of the map (maintenance,
 * decommission, offline), the admin actions on members, the cluster
 * config, starting a rebalance, and the decommission watcher that removes
 * a node once its data has moved away.
 */
#include "cluster.h"
#include "cluster_int.h"
#include "conf.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "peer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pend {
    char id[48];
    char reb[32];
    bool decommission;
    bool no_shutdown;
    bool moves;                 /* it answered: its objects move away, and its own rebalance must end well */
};
static pthread_mutex_t pmu = PTHREAD_MUTEX_INITIALIZER;
static struct pend pending[32];
static int npending;

/* ---- rebalance / membership edits (sl_cl_primary()) ---- */

char *sl_cluster_rebalance(const char *why)
{
    if (!sl_conf->rebalance_enabled) {
        sl_logi("rebalance not started (%s): rebalance.enabled is false", why);
        return NULL;
    }
    json_t *cur = sl_cluster_doc("rmd");
    int64_t v = sl_cl_doc_version(cur) + 1;
    json_decref(cur);
    char id[32];
    snprintf(id, sizeof(id), "g%lld", (long long)v);
    json_t *d = json_pack("{s:I,s:s}", "version", (json_int_t)v, "id", id);
    sl_cl_set_rmd(d);
    json_decref(d);
    sl_logi("rebalance %s: %s", id, why);
    /* everything, not just the RMD: a node that just joined must know every
     * bucket before objects start arriving (documents apply in order: config,
     * BMD, Smap, RMD) */
    json_t *docs = sl_cl_all_docs();
    sl_cl_push(docs);
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

static int edit_version_past(struct sl_smap *s, void *arg, struct sl_err *err)
{
    (void)err;
    const int64_t *tv = arg; /* term, version */
    if (s->term < tv[0])
        s->term = tv[0];
    if (s->version < tv[1])
        s->version = tv[1]; /* sl_smap_modify adds one */
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
    int64_t jst = sl_json_int(j, "smap_term", 0), jbt = sl_json_int(j, "bmd_term", 0);
    struct sl_bmd *bm = sl_bmd_get();
    int64_t mybv = bm->version, mybt = bm->term;
    sl_bmd_put(bm);
    if (sl_md_newer(jbt, jbv, mybt, mybv)) {
        json_t *d = sl_cl_fetch_doc(n->ctrl_url, "bmd");
        struct sl_err e2;
        struct sl_bmd *b = d ? sl_bmd_from_json(d, &e2) : NULL;
        if (b && sl_bmd_receive(b) == 1)
            sl_logw("join: %s has a newer bucket map (v%lld, this primary v%lld): taken", n->id, (long long)jbv,
                    (long long)mybv);
        json_decref(d);
    }
    struct sl_smap *s = sl_smap_get();
    int64_t mysv = s->version, myst = s->term;
    sl_smap_put(s);
    if (jsv >= mysv || jst > myst) {
        struct sl_err e2 = { 0 };
        int64_t tv[2] = { jst, jsv };
        sl_logw("join: %s has a newer cluster map (term %lld v%lld, this primary term %lld v%lld): numbering this "
                "one past it", n->id, (long long)jst, (long long)jsv, (long long)myst, (long long)mysv);
        sl_smap_modify(edit_version_past, tv, &e2);
    }
}

void sl_cluster_join_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    if (!sl_cl_primary()) {
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
        json_t *docs = sl_cl_all_docs();
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
        sl_cl_joined(&ja.n);
    if (ja.new_target) {
        char *id = sl_cluster_rebalance("target joined");
        free(id);
    }
    sl_resp_json_new(r, 200, sl_cl_all_docs());
    return;
fail:
    sl_smap_put(s);
    json_decref(j);
    sl_resp_err(r, &err);
}

int sl_cl_edit_flags(struct sl_smap *s, void *arg, struct sl_err *err)
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

static void add_pending(const char *id, const char *reb, bool decomm, bool no_shutdown, bool moves)
{
    pthread_mutex_lock(&pmu);
    if (npending < (int)SL_ARRAY_SIZE(pending)) {
        struct pend *p = &pending[npending++];
        snprintf(p->id, sizeof(p->id), "%s", id);
        snprintf(p->reb, sizeof(p->reb), "%s", reb ? reb : "");
        p->decommission = decomm;
        p->no_shutdown = no_shutdown;
        p->moves = moves;
    }
    pthread_mutex_unlock(&pmu);
}

/* Whether node n answers now (its health, within a keepalive's time): the
 * map's flags lag a kill by up to keepalive_factor rounds. */
static bool answers(const struct sl_snode *n)
{
    char *url = sl_xasprintf("%s/v1/health", n->ctrl_url);
    struct sl_peer_resp r;
    int64_t ms = sl_conf->max_keepalive_ns / 1000000;
    bool ok = sl_peer_call("GET", url, NULL, 0, NULL, 0, ms > 0 ? ms : 2000, &r) == 0 && r.status == 200;
    sl_peer_resp_free(&r);
    free(url);
    return ok;
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
bool sl_cl_find_node(const char *id, struct sl_snode *out)
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
    bool have = sl_cl_find_node(id, &n);
    struct flag_arg fa = { .id = id, .remove = true };
    struct sl_err err;
    if (sl_smap_modify(sl_cl_edit_flags, &fa, &err) < 0)
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
    sl_cl_config_install(nc);
    sl_logi("cluster config updated to version %lld", (long long)nc->config_version);
    if (sl_cl_primary())
        sl_cl_push_one("config", sl_cl_config_doc());
    return 0;
}

int sl_cluster_reset_config(bool cluster_wide, json_t *restart, struct sl_err *err)
{
    bool push = cluster_wide && sl_cl_primary();
    /* a node alone keeps its version: the next cluster-wide change (a higher one) still reaches it */
    struct sl_config *nc = sl_config_reset(sl_conf, push || G.role == SL_ROLE_STANDALONE, restart, err);
    if (!nc)
        return -1;
    sl_cl_config_install(nc);
    sl_logi("configuration reset to the node's files (runtime changes dropped): version %lld%s",
            (long long)nc->config_version, push ? ", sent to every node" : "");
    if (push)
        sl_cl_push_one("config", sl_cl_config_doc());
    return 0;
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
    bool have = sl_cl_find_node(sid, &ncopy);
    bool is_target = have && ncopy.type == SL_NODE_TARGET;
    if (!have)
        return sl_errf(err, SL_ENOENT, "%s: node %s is not in the cluster map", a, sid);
    if (!strcmp(a, "shutdown-node")) {
        ask_shutdown(&ncopy);
        return 0;
    }
    /* a target flagged online may have died since the last keepalive: asked now. One that does not
     * answer cannot send its objects away; without a rebalance (skipped, or rebalance.enabled false)
     * nothing moves away either */
    bool leaving = is_target && (!strcmp(a, "decommission-node") || !strcmp(a, "start-maintenance"));
    if (leaving && !(ncopy.flags & SL_SNF_OFFLINE) && !answers(&ncopy)) {
        sl_logw("%s %s: the target does not answer (the cluster map still has it online)", a, sid);
        ncopy.flags |= SL_SNF_OFFLINE;
    }
    bool moves = leaving && !(ncopy.flags & SL_SNF_OFFLINE) && !skip_reb && sl_conf->rebalance_enabled;
    if (is_target && !strcmp(a, "decommission-node") && !moves &&
        sl_cl_leaving(a, &ncopy, skip_reb || !sl_conf->rebalance_enabled, force, err) < 0)
        return -1;
    if (sl_smap_modify(sl_cl_edit_flags, &fa, err) < 0)
        return -1;
    char *reb = NULL;
    bool decomm = !strcmp(a, "decommission-node");
    if (is_target && !skip_reb)
        reb = sl_cluster_rebalance(a);
    if (decomm && (!reb || !is_target))
        remove_node(sid, no_shutdown);
    else if (decomm || !strcmp(a, "start-maintenance"))
        add_pending(sid, reb, decomm, no_shutdown, moves);
    sl_logi("%s %s%s%s", a, sid, reb ? ", rebalance " : "", reb ? reb : "");
    *reb_out = reb;
    return 0;
}

/* AIStore's ActRmNodeUnsafe: the node is told first (it keeps running and a
 * map without it does not shut it down), then removed from the map whatever
 * it answered; nothing moves (no rebalance), so objects only it holds are out
 * of reach until it joins again. The keepalive polls only the map's nodes:
 * the node stays out until it restarts and joins (AIStore: api.JoinCluster). */
int sl_cluster_rm_unsafe(const char *sid, struct sl_err *err)
{
    if (!sid || !sid[0])
        return sl_errf(err, SL_EINVAL, "rm-unsafe: value must name the node: {\"sid\": \"<node id>\"}");
    if (!strcmp(sid, G.id))
        return sl_errf(err, SL_EINVAL, "rm-unsafe: %s is the primary proxy and cannot remove itself from the cluster "
                       "map; make another gateway the primary first (shale cluster set-primary)", G.name);
    struct sl_snode n;
    if (!sl_cl_find_node(sid, &n)) {
        struct sl_smap *s = sl_smap_get();
        int64_t v = s->version;
        sl_smap_put(s);
        return sl_errf(err, SL_ENOENT, "rm-unsafe: node \"%s\" is not in the cluster map v%lld (the nodes: GET "
                       "/v1/daemon?what=smap); nothing was changed", sid, (long long)v);
    }
    char *url = sl_xasprintf("%s/v1/daemon", n.ctrl_url);
    struct sl_peer_resp r;
    int64_t ms = sl_conf->max_keepalive_ns / 1000000;
    if (sl_peer_json("PUT", url, json_pack("{s:s}", "action", "rm-unsafe"), ms > 0 ? ms : 2000, &r) < 0 ||
        r.status != 200)
        sl_logw("rm-unsafe %s: the node was not told (%s): removing it anyway; if it is up, it shuts down when "
                "it receives the new map", sid, r.err[0] ? r.err : "no answer");
    sl_peer_resp_free(&r);
    free(url);
    struct flag_arg fa = { .id = sid, .remove = true };
    if (sl_smap_modify(sl_cl_edit_flags, &fa, err) < 0)
        return -1;
    sl_logw("node %s (%s) removed from the cluster map at once (rm-unsafe: no rebalance; objects only it holds "
            "are out of reach until it joins again)", sid, n.url);
    return 0;
}

/* ---- the decommission watcher (each keepalive round) ---- */

void sl_cl_finish_pending(void)
{
    pthread_mutex_lock(&pmu);
    int n = npending;
    struct pend local[32];
    memcpy(local, pending, sizeof(local));
    pthread_mutex_unlock(&pmu);
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
                    pthread_mutex_lock(&pmu);
                    for (int j = 0; j < npending; j++)
                        if (!strcmp(pending[j].id, p->id))
                            snprintf(pending[j].reb, sizeof(pending[j].reb), "%s", latest);
                    pthread_mutex_unlock(&pmu);
                    done = false;
                } else {
                    failed = true;
                    snprintf(why, sizeof(why), "rebalance %s was aborted", p->reb);
                }
                json_decref(d);
            } else if (done && sl_json_str(st, "err", "")[0]) {
                failed = true;
                snprintf(why, sizeof(why), "rebalance %s ended with errors: %.500s", p->reb, sl_json_str(st, "err", ""));
            } else if (done && p->moves) {
                /* the leaving target's own part (sending its objects away) must have ended: the others
                 * end theirs without it when it stops answering */
                bool own = false;
                struct sl_snap_it it;
                for (sl_snaps_first(&it, per, p->reb); it.sn; sl_snaps_next(&it))
                    own |= !strcmp(it.tid, p->id) && sl_json_int(it.sn, "end_ns", 0) != 0;
                struct sl_snode cur;
                bool off = sl_cl_find_node(p->id, &cur) && (cur.flags & SL_SNF_OFFLINE);
                if (!own && off) {
                    failed = true;
                    snprintf(why, sizeof(why), "the target stopped answering before its objects moved away "
                             "(rebalance %s); objects may exist only there. Bring it back, or decommission it "
                             "again: that checks what would be lost", p->reb);
                } else if (!own) {
                    done = false; /* (not asked yet, or answering late: the next round) */
                }
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
        else if (failed)
            sl_logw("maintenance of %s: %s", p->id, why);
        else
            sl_logi("maintenance of %s: data moved away (rebalance %s done)", p->id, p->reb);
        pthread_mutex_lock(&pmu);
        for (int j = 0; j < npending; j++) {
            if (!strcmp(pending[j].id, p->id)) {
                memmove(&pending[j], &pending[j + 1], (size_t)(npending - j - 1) * sizeof(pending[0]));
                npending--;
                break;
            }
        }
        pthread_mutex_unlock(&pmu);
    }
}

