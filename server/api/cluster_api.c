/* SPDX-License-Identifier: MIT
 * cluster_api.c: the role-dependent half of routing and the cluster's own
 * HTTP surface: object requests (a gateway redirects them to the HRW owner,
 * GET 301 and others 307 with pid/utm, or answers 503 naming an offline
 * owner), bucket and cluster requests (a non-primary gateway relays writes
 * to the primary), the admin API (PUT /v1/cluster, PUT /v1/daemon), job
 * status (GET /v1/cluster?what=status...), and the internal endpoints the
 * cluster floor serves (metasync, join, per-target listing, job fan-out).
 */
#include "route.h"
#include "bsumm.h"
#include "access.h"
#include "authn.h"
#include "cluster.h"
#include "ec.h"
#include "module.h"
#include "conf.h"
#include "daemon.h"
#include "jsonx.h"
#include "log.h"
#include "lost.h"
#include "vote.h"
#include "node.h"
#include "prx.h"
#include "putb.h"
#include "read.h"
#include "remais.h"
#include "stats.h"
#include "tgt.h"
#include "backend.h"
#include "xact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- admin actions (PUT /v1/cluster) ---- */

/* set-config of partial (consumed) */
static void set_config(struct sl_req *r, json_t *partial)
{
    struct sl_err err = { 0 };
    json_t *restart = json_array();
    if (sl_cluster_set_config(partial, restart, &err) < 0)
        sl_resp_err(r, &err);
    else if (json_array_size(restart))
        /* stored; these apply when the nodes restart */
        sl_resp_json_new(r, 200, json_pack("{s:O,s:s}", "restart_required", restart, "message",
                                           "stored; the keys in restart_required take effect when each node "
                                           "restarts"));
    else
        sl_resp_empty(r, 200);
    json_decref(restart);
    json_decref(partial);
}

/* reset-config (PUT /v1/cluster: every node; PUT /v1/daemon: this one) */
static void reset_config(struct sl_req *r, bool cluster_wide)
{
    struct sl_err err = { 0 };
    json_t *restart = json_array();
    if (sl_cluster_reset_config(cluster_wide, restart, &err) < 0)
        sl_resp_err(r, &err);
    else if (json_array_size(restart))
        sl_resp_json_new(r, 200, json_pack("{s:O,s:s}", "restart_required", restart, "message",
                                           "reset; the keys in restart_required take the files' values when "
                                           "each node restarts"));
    else
        sl_resp_empty(r, 200);
    json_decref(restart);
}

static void reset_config_node(struct sl_req *r, void *arg)
{
    (void)arg;
    reset_config(r, false);
}

static void config_partial_free(void *arg)
{
    json_decref(arg);
}

/* set-config that touches mirror.* (pool thread): the default replicas of
 * new buckets may not exceed any target's mountpaths (as set-bprops) */
static void set_config_mirror(struct sl_req *r, void *arg)
{
    json_t *partial = arg, *mi = json_object_get(partial, "mirror");
    struct sl_err err = { 0 };
    json_t *en = json_object_get(mi, "enabled"), *cp = json_object_get(mi, "copies");
    bool on = en ? json_is_true(en) : sl_conf->mirror_enabled;
    long long n = cp ? (json_is_integer(cp) ? json_integer_value(cp) : atoll(json_string_value(cp) ?: "0"))
                     : sl_conf->mirror_copies;
    if (n == 0)
        n = 2;
    int min = -1;
    char who[64] = "";
    if (on && n > 1 && n <= 32) {
        if (sl_prx_min_mountpaths(&min, who, sizeof(who), &err) < 0) {
            sl_resp_err(r, &err);
            json_decref(partial);
            return;
        }
        if (n > min) {
            sl_resp_errf(r, SL_EINVAL, "not enough mountpaths (%d) to configure new buckets as %lld-way mirror "
                         "(mirror.copies, the cluster's default; %s has %d): add mountpaths or set fewer copies; "
                         "nothing was changed", min, n, who, min);
            json_decref(partial);
            return;
        }
    }
    set_config(r, partial);
}

/* PUT /v1/cluster rotate-logs (value {"sid": ID} optional): each node of the
 * map (or the one named) rotates its log; a pool thread, it waits on peers.
 * 200 {"ID": "log file" | "" (logs to stderr)}, or the first failure. */
static void rotate_logs_run(struct sl_req *r, void *arg)
{
    const char *sid = arg;
    struct sl_smap *sm = sl_smap_get();
    json_t *out = json_object();
    char bad[600] = "";
    int n = 0;
    for (int i = 0; i < sm->nnodes; i++) {
        const struct sl_snode *nd = &sm->nodes[i];
        if (*sid && strcmp(sid, nd->id))
            continue;
        n++;
        if (!strcmp(nd->id, G.id)) {
            json_object_set_new(out, nd->id, json_string(sl_log_rotate() ? sl_log_path() : ""));
            continue;
        }
        char *url = sl_xasprintf("%s/v1/daemon", nd->ctrl_url);
        static const char body[] = "{\"action\":\"rotate-logs\"}";
        struct sl_peer_hdr h = { "Content-Type", "application/json" };
        struct sl_peer_resp pr;
        int rc = sl_peer_call("PUT", url, &h, 1, body, sizeof(body) - 1, 0, &pr);
        if (rc < 0 || pr.status != 200) {
            if (!bad[0])
                snprintf(bad, sizeof(bad), "%.48s: %.400s", nd->id, pr.err[0] ? pr.err : "error");
        } else
            json_object_set_new(out, nd->id, json_stringn(pr.body.p ? pr.body.p : "", pr.body.len));
        sl_peer_resp_free(&pr);
        free(url);
    }
    int64_t ver = sm->version;
    sl_smap_put(sm);
    if (*sid && !n)
        sl_resp_errf(r, SL_ENOENT, "rotate-logs: node \"%s\" is not in the cluster map v%lld (the nodes: GET "
                     "/v1/daemon?what=smap)", sid, (long long)ver);
    else if (bad[0])
        sl_resp_errf(r, SL_EUNAVAIL, "rotate-logs: node %s (the others were rotated); retry when it answers", bad);
    else
        sl_resp_json_new(r, 200, out), out = NULL;
    json_decref(out);
    free(arg); /* (sid: the offload's cancel frees it only when this does not run) */
}

/* PUT /v1/cluster reset-stats (value: AIStore's errorsOnly bool, or {"sid": ID, "errors_only": bool}): each
 * node of the map (or the one named) zeroes its counters; a pool thread, it waits on peers. 200 {"ID": ""}, or
 * the first failure. */
struct reset_arg {
    char *sid;
    bool errors_only;
};

static void reset_arg_free(void *arg)
{
    struct reset_arg *a = arg;
    free(a->sid);
    free(a);
}

static void reset_stats_run(struct sl_req *r, void *arg)
{
    struct reset_arg *a = arg;
    struct sl_smap *sm = sl_smap_get();
    json_t *out = json_object();
    char bad[600] = "";
    int n = 0;
    char *body = sl_xasprintf("{\"action\":\"reset-stats\",\"value\":%s}", a->errors_only ? "true" : "false");
    for (int i = 0; i < sm->nnodes; i++) {
        const struct sl_snode *nd = &sm->nodes[i];
        if (*a->sid && strcmp(a->sid, nd->id))
            continue;
        n++;
        if (!strcmp(nd->id, G.id)) {
            sl_stats_reset(a->errors_only);
            json_object_set_new(out, nd->id, json_string(""));
            continue;
        }
        char *url = sl_xasprintf("%s/v1/daemon", nd->ctrl_url);
        struct sl_peer_hdr h = { "Content-Type", "application/json" };
        struct sl_peer_resp pr;
        int rc = sl_peer_call("PUT", url, &h, 1, body, strlen(body), 0, &pr);
        if (rc < 0 || pr.status != 200) {
            if (!bad[0])
                snprintf(bad, sizeof(bad), "%.48s: %.400s", nd->id, pr.err[0] ? pr.err : "error");
        } else
            json_object_set_new(out, nd->id, json_string(""));
        sl_peer_resp_free(&pr);
        free(url);
    }
    free(body);
    int64_t ver = sm->version;
    sl_smap_put(sm);
    if (*a->sid && !n)
        sl_resp_errf(r, SL_ENOENT, "reset-stats: node \"%s\" is not in the cluster map v%lld (the nodes: GET "
                     "/v1/daemon?what=smap)", a->sid, (long long)ver);
    else if (bad[0])
        sl_resp_errf(r, SL_EUNAVAIL, "reset-stats: node %s (the others were reset); retry when it answers", bad);
    else
        sl_resp_json_new(r, 200, out), out = NULL;
    json_decref(out);
    reset_arg_free(a); /* (the offload's cancel frees it only when this does not run) */
}

/* PUT /v1/cluster shutdown (AIStore's whole-cluster shutdown): every target,
 * then every other gateway, is asked to shut down; then this one answers
 * {"ID": "" | what failed} and shuts down itself. A pool thread: it waits on
 * every node. */
static void shutdown_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_smap *sm = sl_smap_get();
    json_t *out = json_object();
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < sm->nnodes; i++) {
            const struct sl_snode *nd = &sm->nodes[i];
            if ((pass == 0) != (nd->type == SL_NODE_TARGET) || !strcmp(nd->id, G.id))
                continue;
            char *url = sl_xasprintf("%s/v1/daemon", nd->ctrl_url);
            static const char body[] = "{\"action\":\"shutdown\"}";
            struct sl_peer_hdr h = { "Content-Type", "application/json" };
            struct sl_peer_resp pr;
            int rc = sl_peer_call("PUT", url, &h, 1, body, sizeof(body) - 1, sl_conf->cplane_timeout_ns / 1000000,
                                  &pr);
            if (rc < 0 || pr.status != 200)
                json_object_set_new(out, nd->id, json_string(pr.err[0] ? pr.err : "no answer"));
            else
                json_object_set_new(out, nd->id, json_string(""));
            sl_peer_resp_free(&pr);
            free(url);
        }
    }
    json_object_set_new(out, G.id, json_string(""));
    sl_smap_put(sm);
    sl_resp_json_new(r, 200, out);
    sl_cluster_shutdown_self("cluster shutdown requested via PUT /v1/cluster");
}

/* reset-stats's value: true/false/null (AIStore's errorsOnly) or {"sid", "errors_only"}; -1 on anything else */
static int reset_value(const json_t *v, struct reset_arg *a, struct sl_err *err)
{
    if (!v || json_is_null(v) || json_is_boolean(v)) {
        a->errors_only = json_is_true(v);
        a->sid = sl_xstrdup("");
        return 0;
    }
    if (!json_is_object(v))
        return sl_errf(err, SL_EINVAL, "reset-stats: \"value\" must be true/false (errors only) or {\"sid\": "
                       "NODE, \"errors_only\": BOOL}");
    json_t *eo = json_object_get(v, "errors_only");
    if (eo && !json_is_boolean(eo))
        return sl_errf(err, SL_EINVAL, "reset-stats: \"errors_only\" must be true or false");
    a->errors_only = json_is_true(eo);
    a->sid = sl_xstrdup(sl_json_str(v, "sid", ""));
    return 0;
}

static void cluster_put_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    struct sl_actmsg m;
    if (sl_remais_put(r)) /* PUT /v1/cluster/attach|detach?what=remote */
        return;
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
        if (sl_access_enabling_auth(r, partial, &err) < 0) {
            json_decref(partial);
            sl_actmsg_free(&m);
            sl_resp_err(r, &err);
            return;
        }
        if (json_object_get(partial, "mirror"))
            /* the mirror default must fit the targets' mountpaths: they are asked, off the HTTP thread */
            sl_req_offload(r, set_config_mirror, config_partial_free, partial);
        else
            set_config(r, partial);
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
            bool skip_reb = sl_json_bool(m.value, "skip_rebalance", false);
            bool no_shutdown = sl_json_bool(m.value, "no_shutdown", false);
            bool force = sl_json_bool(m.value, "force", false);
            char *reb = NULL;
            if (sl_cluster_member_action(a, sid, skip_reb, no_shutdown, force, &reb, &err) < 0)
                sl_resp_err(r, &err);
            else if (!strcmp(a, "shutdown-node"))
                sl_resp_empty(r, 200);
            else
                sl_resp_text(r, 200, reb ? reb : "");
            free(reb);
        }
    } else if (!strcmp(a, "reset-config")) {
        reset_config(r, true);
    } else if (!strcmp(a, "rm-unsafe")) {
        const char *sid = json_is_object(m.value) ? sl_json_str(m.value, "sid", "") : "";
        if (G.role == SL_ROLE_STANDALONE)
            sl_resp_errf(r, SL_EUNSUPP, "%s: a standalone node has no other nodes", a);
        else if (sl_cluster_rm_unsafe(sid, &err) < 0)
            sl_resp_err(r, &err);
        else
            sl_resp_empty(r, 200);
    } else if (!strcmp(a, "rotate-logs")) {
        const char *sid = json_is_object(m.value) ? sl_json_str(m.value, "sid", "") : "";
        sl_req_offload(r, rotate_logs_run, free, sl_xstrdup(sid));
    } else if (!strcmp(a, "shutdown")) {
        if (G.role == SL_ROLE_STANDALONE) {
            sl_resp_empty(r, 200);
            sl_cluster_shutdown_self("requested via PUT /v1/cluster");
        } else {
            sl_logi("cluster shutdown requested: the targets, then the gateways");
            sl_req_offload(r, shutdown_run, NULL, NULL);
        }
    } else if (!strcmp(a, "reload-creds")) {
        /* AIStore's reload-backend-creds: the aws backend plugin reads its credentials file (and the bucket's
         * profile) at every call (plugins/backend_s3.c), so a changed file is in use already; the environment
         * ($AWS_ACCESS_KEY_ID ...) is the process's and changes only with a restart */
        sl_logi("reload-creds: the backends read their credentials at every call; nothing cached to reload");
        sl_resp_text(r, 200, "the aws backend reads its credentials file ($AWS_SHARED_CREDENTIALS_FILE, else "
                     "~/.aws/credentials) at every call: a changed file is in use already; credentials from the "
                     "targets' environment ($AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY) change only when the targets "
                     "restart");
    } else if (!strcmp(a, "reset-stats")) {
        struct reset_arg *ra = sl_xcalloc(1, sizeof(*ra));
        if (reset_value(m.value, ra, &err) < 0) {
            reset_arg_free(ra);
            sl_resp_err(r, &err);
        } else {
            sl_req_offload(r, reset_stats_run, reset_arg_free, ra);
        }
    } else if (!strcmp(a, "clear-lost")) {
        /* the operator accepts the loss recorded with a target removed by force */
        const char *sid = json_is_object(m.value) ? sl_json_str(m.value, "sid", "") : "";
        if (G.role == SL_ROLE_STANDALONE)
            sl_resp_errf(r, SL_EUNSUPP, "%s: a standalone node has no other nodes", a);
        else if (sl_lost_clear(sid, &err) < 0)
            sl_resp_err(r, &err);
        else
            sl_resp_empty(r, 200);
    } else if (!strcmp(a, "start")) {
        const char *kind = sl_job_kind_norm(sl_json_str(m.value, "kind", ""));
        if (!strcmp(kind, "rebalance")) {
            if (G.role == SL_ROLE_STANDALONE) {
                sl_resp_errf(r, SL_EUNSUPP, "start rebalance: a standalone node has nothing to rebalance");
            } else {
                char *id = sl_cluster_rebalance("requested by the user");
                if (id)
                    sl_resp_text(r, 200, id);
                else
                    sl_resp_errf(r, SL_EINVAL, "rebalance is disabled (rebalance.enabled=false)");
                free(id);
            }
        } else if (!sl_modules_cluster_start(r, kind, m.value)) {
            sl_resp_errf(r, SL_EINVAL, "start: unsupported job kind \"%s\" (startable: rebalance%s)", kind,
                         sl_modules_start_kinds());
        }
    } else if (!strcmp(a, "stop")) {
        const char *id = sl_json_str(m.value, "id", ""), *kind = sl_json_str(m.value, "kind", "");
        if (!id[0] && !kind[0]) {
            sl_resp_errf(r, SL_EINVAL, "stop: value must name the job: {\"ID\": \"...\"} and/or {\"Kind\": \"...\"}");
        } else {
            int n = sl_cluster_stop_jobs(id, kind);
            sl_logi("stop %s %s: %d running instance(s) asked to abort", kind, id, n);
            sl_resp_empty(r, 200);
        }
    } else {
        sl_resp_errf(r, SL_EINVAL, "invalid action \"%s\" for PUT /v1/cluster (valid: set-config, reset-config, "
                     "start-maintenance, stop-maintenance, decommission-node, shutdown-node, rm-unsafe, clear-lost, "
                     "rotate-logs, reset-stats, shutdown, reload-creds, start, stop)", a);
    }
    sl_actmsg_free(&m);
}

/* target side of the listing fan-out */
/* a page of this target's metadata (an LMDB walk): off the HTTP thread */
static void internal_lso_run(struct sl_req *r, void *arg)
{
    (void)arg;
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
        sl_lspage_msgpack_peer(&pg, &out);
        size_t len = out.len;
        sl_resp_bytes_owned(r, 200, "application/msgpack", sl_buf_steal(&out), len);
    }
    sl_lspage_free(&pg);
    sl_lsomsg_free(&lm);
    sl_actmsg_free(&m);
    sl_bck_release(&b);
}

static void internal_lso_done(struct sl_req *r)
{
    sl_req_offload(r, internal_lso_run, NULL, NULL);
}

/* ---- object redirects (gateway) ---- */

/* A read whose owner is offline goes where the read path can serve it
 * (sl_read_target: for an erasure-coded bucket, the next target of the
 * object's HRW list that is up, which rebuilds it from the slices). */
void sl_route_redirect_obj(struct sl_req *r, const char *bucket, const char *name, size_t nlen)
{
    struct sl_err err = { 0 };
    r->op = SL_OP_REDIRECT;
    struct sl_bck b;
    if (sl_bck_resolve(bucket, sl_req_query(r, "provider"), sl_req_query(r, "namespace"), &b, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    struct sl_smap *s = sl_smap_get();
    struct sl_buf un;
    sl_buf_init(&un);
    sl_obj_uname(&un, b.provider, b.name, name, nlen);
    const struct sl_snode *t = sl_smap_hrw_target(s, un.p, un.len);
    sl_buf_free(&un);
    /* an append with a handle goes to the target that holds the session:
     * the handle's first field (spec native-gaps.md §2) */
    const char *ah = r->method == SL_M_PUT && sl_req_query(r, "append_type") ? sl_req_query(r, "append_handle") : NULL;
    bool bad_handle = false;
    if (ah && *ah) {
        const char *bar = strchr(ah, '|');
        int fields = 1;
        for (const char *c = ah; *c; c++)
            fields += *c == '|';
        bad_handle = !bar || fields != 4;
        t = NULL;
        for (int i = 0; !bad_handle && i < s->nnodes; i++)
            if (s->nodes[i].type == SL_NODE_TARGET && strlen(s->nodes[i].id) == (size_t)(bar - ah) &&
                !memcmp(s->nodes[i].id, ah, (size_t)(bar - ah)))
                t = &s->nodes[i];
    }
    if (bad_handle) {
        sl_resp_errf(r, SL_EINVAL, "invalid APPEND handle: \"%s\"", ah);
    } else if (ah && *ah && !t) {
        sl_resp_errf(r, SL_ENOENT, "APPEND handle \"%s\": its target is not in the cluster map (start the append "
                     "again without a handle)", ah);
    } else if (!t) {
        sl_resp_errf(r, SL_EUNAVAIL, "%s: the cluster has no active targets", G.name);
    } else if ((t->flags & SL_SNF_OFFLINE) && (r->method == SL_M_GET || r->method == SL_M_HEAD) &&
               (t = sl_read_target(s, &b, name, nlen)) != NULL && (t->flags & SL_SNF_OFFLINE)) {
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
        sl_buf_adds(&url, base); /* (no printf on the redirect path: ~0.5 us of each) */
        sl_buf_adds(&url, "/v1/objects/");
        sl_buf_adds(&url, encb);
        sl_buf_addc(&url, '/');
        sl_buf_adds(&url, enco);
        free(encb);
        free(enco);
        /* the original query as sent (no provider added: AIStore adds only pid and utm) */
        const char *q = strchr(r->raw_uri, '?');
        if (q && q[1])
            sl_buf_adds(&url, q);
        /* a body read here (redirect_checked_body) is the one the target takes */
        sl_peer_redirect_url(&url, G.id, r->method_str, r->body_mode == SL_BODY_BUFFER ? &r->body : NULL);
        sl_resp_redirect(r, r->method == SL_M_GET ? 301 : 307, url.p);
        sl_buf_free(&url);
    }
    sl_smap_put(s);
    sl_bck_release(&b);
}

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
    sl_route_redirect_obj(r, bucket, name, nlen);
    free(bucket);
}

static void redirect_after_body(struct sl_req *r)
{
    redirect_object(r);
}

static void redirect_checked_body(struct sl_req *r)
{
    if (r->method == SL_M_POST) { /* the action's permission (the access hook) */
        struct sl_err err = { 0 };
        struct sl_actmsg m;
        if (sl_actmsg_parse(r, &m, &err) < 0) {
            sl_resp_err(r, &err);
            return;
        }
        sl_actmsg_free(&m);
    }
    redirect_object(r);
}

/* How long a gateway waits for the first byte of a body that the client
 * announced (Content-Length, no Expect) before it answers the redirect from
 * the headers alone: clients that send at once are well inside it */
#define BODY_WAIT_MS 50

/* On the peer pool: whether the body starts to arrive (sl_req_body_coming
 * marks it); the request is routed again at its headers either way. */
static void wait_for_body(struct sl_req *r, void *arg)
{
    (void)arg;
    sl_req_body_coming(r, BODY_WAIT_MS);
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
         * connection survives the redirect; large ones (or Expect: 100) are
         * not. Under TLS a client still sending gets a broken connection
         * instead of the redirect (plain TCP mostly delivers it), so there the
         * limit is higher: clients sending more without Expect fail */
        const char *expect = sl_req_header(r, "Expect");
        int64_t drain = sl_conf->use_https ? 256 * SL_MIB : 4 * SL_MIB;
        if (sl_auth_on() && r->method != SL_M_PUT && r->method != SL_M_GET && r->method != SL_M_HEAD) {
            /* with auth on, a body that names an operation is read here, its
             * action checked, and its hash signed into the redirect: the
             * target takes only that body */
            sl_req_buffer_body(r, sl_conf->http_max_body_json, redirect_checked_body);
            return;
        }
        if (r->content_length > 0 && r->content_length <= drain && !expect) {
            /* ... but only a body that is on its way: a client that sent
             * its headers and waits for the redirect before sending (the
             * AIStore SDK's writer over TLS) is answered from the headers,
             * after at most BODY_WAIT_MS without a byte of it */
            if (!r->rerouted && !sl_req_body_coming(r, 0)) {
                sl_req_offload_peer_reroute(r, wait_for_body, NULL, NULL);
                return;
            }
            if (r->body_coming) {
                r->body_mode = SL_BODY_DISCARD;
                r->on_done = redirect_after_body;
                return;
            }
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
    if (G.role == SL_ROLE_STANDALONE || sl_is_primary()) {
        sl_prx_buckets(r);
        return;
    }
    if (G.role == SL_ROLE_PROXY) {
        if (r->method == SL_M_GET || r->method == SL_M_HEAD)
            sl_prx_buckets(r);
        else
            sl_forward_to_primary(r);
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
    if (!m.action[0] && json_is_object(m.root) && (json_object_get(m.root, "auth") || json_object_get(m.root, "log"))) {
        /* AuthN's PUT /v1/daemon {"auth": {...}, "log": {...}}: its configuration */
        sl_authn_config_put(r, m.root);
        sl_actmsg_free(&m);
        return;
    }
    if (!strcmp(m.action, "shutdown") || !strcmp(m.action, "shutdown-node")) {
        sl_resp_empty(r, 200);
        sl_cluster_shutdown_self("requested via PUT /v1/daemon");
    } else if (!strcmp(m.action, "rotate-logs")) {
        /* a rename and an open under the log's lock, as every write past
         * log.max_size does: fine on this thread */
        if (sl_log_rotate()) {
            sl_logi("log rotated (requested via PUT /v1/daemon)");
            sl_resp_text(r, 200, sl_log_path());
        } else
            sl_resp_text(r, 200, "");
    } else if (!strcmp(m.action, "reset-stats")) {
        struct reset_arg ra = { 0 };
        if (reset_value(m.value, &ra, &err) < 0) {
            sl_resp_err(r, &err);
        } else {
            sl_stats_reset(ra.errors_only); /* (relaxed stores: fine on this thread) */
            sl_logi("stats reset%s (requested via PUT /v1/daemon)", ra.errors_only ? " (errors only)" : "");
            sl_resp_empty(r, 200);
        }
        free(ra.sid);
    } else if (!strcmp(m.action, "reset-config")) {
        sl_req_offload(r, reset_config_node, NULL, NULL); /* (reads the files, saves the config: a pool thread) */
    } else if (!strcmp(m.action, "rm-unsafe") && G.role != SL_ROLE_STANDALONE && !sl_is_primary()) {
        /* the primary removes this node from the map next: it stays up (AIStore's ActRmNodeUnsafe) */
        sl_cluster_removed_unsafe();
        sl_resp_empty(r, 200);
    } else if (!strcmp(m.action, "set-config") && G.role == SL_ROLE_STANDALONE) {
        sl_actmsg_free(&m);
        cluster_put_done(r);
        return;
    } else {
        sl_resp_errf(r, SL_EINVAL, "invalid action \"%s\" for PUT /v1/daemon (valid: shutdown, rotate-logs, reset-stats, reset-config%s)", m.action,
                     G.role == SL_ROLE_STANDALONE ? ", set-config" : "; change configuration with PUT /v1/cluster");
    }
    sl_actmsg_free(&m);
}

/* ---- enable-bend / disable-bend (AIStore's `advanced enable-backend|disable-backend`) ---- */

static bool cloud_provider(const char *np)
{
    return np && (!strcmp(np, "aws") || !strcmp(np, "gcp") || !strcmp(np, "azure") || !strcmp(np, "oci"));
}

/* the words of path after prefix: "ACT/PROV[/X]" -> act, prov, x (copies) */
static int bend_words(const char *path, const char *prefix, char *act, char *prov, char *x, size_t sz)
{
    act[0] = prov[0] = x[0] = '\0';
    const char *p = path + strlen(prefix);
    char *outs[3] = { act, prov, x };
    for (int i = 0; i < 3 && *p; i++) {
        size_t n = strcspn(p, "/");
        if (n >= sz)
            return -1;
        memcpy(outs[i], p, n);
        outs[i][n] = '\0';
        p += n;
        if (*p == '/')
            p++;
    }
    return *p ? -1 : 0;
}

/* PUT /v1/daemon/{enable,disable}-bend/PROVIDER/{begin,commit} on a target (a flag under a mutex: on this thread) */
static void daemon_bend(struct sl_req *r)
{
    char act[32], prov[32], phase[32];
    struct sl_err err = { 0 };
    if (bend_words(r->path, "/v1/daemon/", act, prov, phase, sizeof(act)) < 0 || !prov[0] ||
        (strcmp(phase, "begin") && strcmp(phase, "commit"))) {
        sl_resp_errf(r, SL_EINVAL, "invalid URL %s: PUT /v1/daemon/%s/PROVIDER/begin|commit", r->path, act);
        return;
    }
    const char *np = sl_provider_norm(prov);
    if (G.role == SL_ROLE_PROXY)
        sl_resp_errf(r, SL_EINVAL, "%s is a gateway: backends are the targets' (PUT /v1/cluster/%s/%s)", G.name, act,
                     prov);
    else if (!cloud_provider(np))
        sl_resp_errf(r, SL_EINVAL, "expecting cloud storage provider (aws, gcp, azure, oci; have \"%s\")", prov);
    else if (sl_backend_set_enabled(np, !strcmp(act, "enable-bend"), !strcmp(phase, "commit"), &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
}

/* PUT /v1/cluster/{enable,disable}-bend/PROVIDER[/NODE] on a gateway: every
 * target (or the one named) checks (begin), then switches (commit); a pool
 * thread, it waits on the targets */
static void cluster_bend_run(struct sl_req *r, void *arg)
{
    (void)arg;
    char act[32], prov[32], node[64];
    if (bend_words(r->path, "/v1/cluster/", act, prov, node, sizeof(node)) < 0 || !prov[0]) {
        sl_resp_errf(r, SL_EINVAL, "invalid URL %s: missing cloud backend (PUT /v1/cluster/%s/PROVIDER[/NODE])",
                     r->path, act);
        return;
    }
    const char *tag = !strcmp(act, "enable-bend") ? "enable" : "disable";
    const char *np = sl_provider_norm(prov);
    if (!cloud_provider(np)) {
        sl_resp_errf(r, SL_EINVAL, "can only %s cloud backend (aws, gcp, azure, oci; have \"%s\")%s", tag, prov,
                     np && !strcmp(np, "ais") ? ": remote clusters are detached with `shale cluster remote-detach`"
                                              : "");
        return;
    }
    if (G.role == SL_ROLE_STANDALONE) { /* its own backends */
        struct sl_err err = { 0 };
        bool on = !strcmp(tag, "enable");
        if (sl_backend_set_enabled(np, on, false, &err) < 0 || sl_backend_set_enabled(np, on, true, &err) < 0)
            sl_resp_err(r, &err);
        else
            sl_resp_empty(r, 200);
        return;
    }
    struct sl_smap *sm = sl_smap_get();
    const struct sl_snode **who = sl_xcalloc((size_t)(sm->nnodes ? sm->nnodes : 1), sizeof(*who));
    int n = 0;
    for (int i = 0; i < sm->nnodes; i++)
        if (sm->nodes[i].type == SL_NODE_TARGET && (!node[0] || !strcmp(node, sm->nodes[i].id)))
            who[n++] = &sm->nodes[i];
    char bad[700] = "";
    int bad_status = 0;
    if (node[0] && !n)
        sl_resp_errf(r, SL_ENOENT, "%s-backend: target \"%s\" is not in the cluster map v%lld (the targets: GET "
                     "/v1/daemon?what=smap); nothing was changed", tag, node, (long long)sm->version);
    for (int ph = 0; ph < 2 && n && !bad[0]; ph++) {
        const char *phase = ph ? "commit" : "begin";
        struct sl_fan *f = sl_xcalloc((size_t)n, sizeof(*f));
        for (int i = 0; i < n; i++) {
            f[i].url = sl_xasprintf("%s/v1/daemon/%s/%s/%s", who[i]->ctrl_url, act, np, phase);
            f[i].method = "PUT";
        }
        sl_peer_fanout(f, n, sl_conf->cplane_timeout_ns / 1000000);
        for (int i = 0; i < n && !bad[0]; i++) {
            if (f[i].ok && f[i].resp.status == 200)
                continue;
            char nm[80];
            sl_snode_name(who[i], nm, sizeof(nm));
            bad_status = f[i].ok ? f[i].resp.status : 503;
            snprintf(bad, sizeof(bad), "node %s failed to %s \"%s\" backend (phase %s): %.500s%s", nm, tag, np, phase,
                     f[i].resp.err[0] ? f[i].resp.err : "no answer", ph ? " (the targets before it switched)" : "");
        }
        sl_peer_fanout_free_urls(f, n);
        free(f);
    }
    if (bad[0])
        sl_resp_errf(r, sl_code_from_status(bad_status), "%s", bad);
    else if (n)
        sl_resp_empty(r, 200);
    else if (!node[0])
        sl_resp_errf(r, SL_EUNAVAIL, "%s-backend: the cluster has no targets", tag);
    free(who);
    sl_smap_put(sm);
}

static bool is_bend(const struct sl_req *r, const char *base)
{
    char a[64], b[64];
    snprintf(a, sizeof(a), "%s/enable-bend", base);
    snprintf(b, sizeof(b), "%s/disable-bend", base);
    return sl_req_path_is(r, a) || sl_req_path_is(r, b);
}

void sl_route_daemon_other(struct sl_req *r)
{
    if (sl_mpath_route(r))
        return;
    if (r->method == SL_M_PUT && is_bend(r, "/v1/daemon")) {
        daemon_bend(r);
        return;
    }
    if (r->method == SL_M_PUT)
        sl_req_buffer_body(r, sl_conf->http_max_body_json, daemon_put_done);
    else
        sl_resp_method_not_allowed(r, "GET, PUT");
}

/* Admin actions call every node (metasync, rebalance, shutdown): off the
 * HTTP thread. Attaching a remote cluster offloads its own work. */
static void cluster_put_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    if (sl_cluster_fence(&err) < 0)
        sl_resp_err(r, &err);
    else
        cluster_put_done(r);
}

static void cluster_put_offload(struct sl_req *r)
{
    if (!sl_remais_put(r))
        sl_req_offload(r, cluster_put_run, NULL, NULL);
}

/* a join calls the joiner (pre-sync) and every node (metasync): off the HTTP thread */
static void join_run(struct sl_req *r, void *arg)
{
    (void)arg;
    sl_cluster_join_done(r);
}

static void join_offload(struct sl_req *r)
{
    sl_req_offload(r, join_run, NULL, NULL);
}

/* PUT /v1/cluster/proxy/ID: make gateway ID the primary (on the primary) */
static void set_primary_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    const char *id = r->path + strlen("/v1/cluster/proxy/");
    if (!*id || strchr(id, '/'))
        sl_resp_errf(r, SL_EINVAL, "set-primary: PUT /v1/cluster/proxy/<gateway id>");
    else if (sl_cluster_set_primary(id, &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
}

void sl_route_cluster(struct sl_req *r)
{
    if (sl_has_prefix(r->path, "/v1/cluster/proxy/")) {
        if (r->method != SL_M_PUT)
            sl_resp_method_not_allowed(r, "PUT");
        else if (G.role == SL_ROLE_STANDALONE)
            sl_resp_errf(r, SL_EUNSUPP, "set-primary: a standalone node is its own primary");
        else if (G.role != SL_ROLE_PROXY)
            sl_resp_errf(r, SL_EINVAL, "%s is a storage target: send PUT /v1/cluster/proxy/ID to a gateway", G.name);
        else if (!sl_is_primary())
            sl_forward_to_primary(r);
        else
            sl_req_offload(r, set_primary_run, NULL, NULL);
        return;
    }
    if (is_bend(r, "/v1/cluster")) {
        if (r->method != SL_M_PUT)
            sl_resp_method_not_allowed(r, "PUT");
        else if (G.role == SL_ROLE_TARGET)
            sl_resp_errf(r, SL_EINVAL, "%s is a storage target: send PUT %s to a gateway", G.name, r->path);
        else
            sl_req_offload(r, cluster_bend_run, NULL, NULL);
        return;
    }
    if (r->path_len >= strlen("/v1/cluster/join") && sl_has_prefix(r->path, "/v1/cluster/join")) {
        if (r->method != SL_M_POST) {
            sl_resp_method_not_allowed(r, "POST");
            return;
        }
        if (!sl_is_primary() && G.role == SL_ROLE_PROXY) {
            sl_forward_to_primary(r);
            return;
        }
        sl_req_buffer_body(r, sl_conf->http_max_body_json, join_offload);
        return;
    }
    if (r->method == SL_M_GET) {
        if (G.role == SL_ROLE_TARGET) {
            sl_resp_errf(r, SL_EINVAL, "%s is a storage target: send GET /v1/cluster to a gateway", G.name);
            return;
        }
        sl_prx_cluster_get(r);
    } else if (r->method == SL_M_PUT) {
        if (G.role == SL_ROLE_STANDALONE || sl_is_primary())
            sl_req_buffer_body(r, sl_conf->http_max_body_json, cluster_put_offload);
        else if (G.role == SL_ROLE_PROXY)
            sl_forward_to_primary(r);
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

bool sl_route_cluster_internal(struct sl_req *r)
{
    if (sl_vote_route(r))
        return true;
    if (!strcmp(r->path, "/v1/metasync")) {
        if (r->method != SL_M_PUT)
            sl_resp_method_not_allowed(r, "PUT");
        else
            sl_req_buffer_body(r, 256 * SL_MIB, sl_cluster_metasync_done);
        return true;
    }
    if (sl_has_prefix(r->path, "/v1/internal/lso/")) {
        if (!sl_is_target())
            sl_resp_errf(r, SL_EINVAL, "%s is not a storage target", G.name);
        else
            sl_req_buffer_body(r, sl_conf->http_max_body_json, internal_lso_done);
        return true;
    }
    if (!strcmp(r->path, "/v1/internal/putb")) {
        sl_putb_internal(r);
        return true;
    }
    if (!strcmp(r->path, "/v1/internal/jobs")) {
        internal_jobs(r);
        return true;
    }
    if (!strcmp(r->path, "/v1/internal/bsumm")) {
        if (!sl_is_target() && G.role != SL_ROLE_STANDALONE)
            sl_resp_errf(r, SL_EINVAL, "%s is not a storage target", G.name);
        else
            sl_bsumm_internal(r);
        return true;
    }
    return false;
}
