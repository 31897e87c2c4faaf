/* SPDX-License-Identifier: MIT
 * resilver_job.c: how job resilver (target/resilver.c) starts.
 *
 *   PUT /v1/cluster {"action": "start", "value": {"Kind": "resilver"[, "DaemonID": "<target id>"]}}
 *                                                                       -> job id (text)
 *
 * The gateway starts it on every target that is not offline, or on the one
 * named, with POST /v1/internal/resilver/start {"id"}. A target also starts
 * it by itself once it serves, when its mountpaths differ from those of the
 * last completed resilver, fsck found objects on the wrong mountpath, or a
 * mountpath of the last run came back without its contents (a replaced
 * disk: sl_store_resilver_pending). While it serves, a watcher checks every
 * 5 s that each mountpath still has its contents (sl_store_mpath_check).
 */
#include "resilver_job.h"
#include "bg.h"
#include "cluster.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "resilver.h"
#include "store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct rq {
    char id[40];
    char tid[sizeof(((struct sl_snode *)0)->id)];   /* "": every target */
};

/* target: POST /v1/internal/resilver/start {"id"} */
static void internal_start(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    const char *id = sl_json_str(j, "id", "");
    if (!json_is_object(j) || !*id)
        sl_resp_errf(r, SL_EINVAL, "resilver start: expected {\"id\": \"<job id>\"}");
    else if (sl_resilver_start(id, NULL, 0, &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
    json_decref(j);
}

static bool resilver_internal(struct sl_req *r)
{
    if (strcmp(r->path, "/v1/internal/resilver/start"))
        return false;
    if (r->method != SL_M_POST)
        sl_resp_method_not_allowed(r, "POST");
    else if (!sl_is_target())
        sl_resp_errf(r, SL_EINVAL, "%s is a gateway: resilver runs on targets", G.id);
    else
        sl_req_buffer_body(r, 64 * 1024, internal_start);
    return true;
}

/* the gateway (off the HTTP thread): the target(s) start it */
static void start_run(struct sl_req *r, void *arg)
{
    struct rq *q = arg;
    struct sl_err err = { 0 };
    int rc;
    if (G.role == SL_ROLE_STANDALONE) {
        rc = sl_resilver_start(q->id, NULL, 0, &err);
    } else {
        json_t *body = json_pack("{s:s}", "id", q->id);
        rc = sl_tfan_start_job_at(q->tid[0] ? q->tid : NULL, SL_TF_SKIP_OFFLINE, "/v1/internal/resilver/start", body,
                                  "start resilver", q->id, &err);
        json_decref(body);
    }
    if (rc < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_text(r, 200, q->id);
    free(q);
}

/* DaemonID names a target of the cluster (this node when standalone) */
static int check_target(const char *tid, struct sl_err *err)
{
    if (G.role == SL_ROLE_STANDALONE)
        return strcmp(tid, G.id) ? sl_errf(err, SL_ENOENT, "start resilver: node \"%s\" is not in the cluster: this "
                                           "standalone node (%s) is its only target", tid, G.id) : 0;
    struct sl_smap *s = sl_smap_get();
    const struct sl_snode *n = sl_smap_find(s, tid);
    int rc = 0;
    if (!n)
        rc = sl_errf(err, SL_ENOENT, "start resilver: target \"%s\" is not in the cluster map (see `shale show "
                     "cluster target`)", tid);
    else if (n->type != SL_NODE_TARGET)
        rc = sl_errf(err, SL_EINVAL, "start resilver: %s is a proxy, which stores nothing: name a target", tid);
    else if (n->flags & SL_SNF_OFFLINE)
        rc = sl_errf(err, SL_EUNAVAIL, "start resilver: target t[%s] is offline; start it again when it is back", tid);
    sl_smap_put(s);
    return rc;
}

static bool resilver_cluster_start(struct sl_req *r, const char *kind, const json_t *value)
{
    if (strcmp(kind, "resilver"))
        return false;
    struct sl_err err = { 0 };
    json_t *d = sl_json_get(value, "daemonid");
    const char *tid = json_is_string(d) ? json_string_value(d) : "";
    if (d && !json_is_null(d) && !json_is_string(d)) {
        sl_resp_errf(r, SL_EINVAL, "start resilver: \"DaemonID\" must be a target id (a string)");
        return true;
    }
    if (strlen(tid) >= sizeof(((struct rq *)0)->tid)) {
        sl_resp_errf(r, SL_EINVAL, "start resilver: \"DaemonID\" is too long to be a node id");
        return true;
    }
    if (tid[0] && check_target(tid, &err) < 0) {
        sl_resp_err(r, &err);
        return true;
    }
    struct rq *q = sl_xcalloc(1, sizeof(*q));
    sl_job_id(q->id, sizeof(q->id), "");
    snprintf(q->tid, sizeof(q->tid), "%s", tid);
    sl_req_offload(r, start_run, free, q);
    return true;
}

static void *mpath_watch(void *arg)
{
    (void)arg;
    for (;;) {
        for (int i = 0; i < 5; i++) {
            if (sl_bg_stopping())
                return NULL;
            sleep(1);
        }
        sl_store_mpath_check();
    }
    return NULL;
}

static void resilver_start(void)
{
    char id[64];
    struct sl_err err = { 0 };
    if (!sl_is_target())
        return;
    pthread_t t;
    if (pthread_create(&t, NULL, mpath_watch, NULL) == 0)
        pthread_detach(t);
    else
        sl_logw("resilver: cannot start the mountpath watcher; a disk lost while the target runs goes unnoticed");
    if (!sl_store_resilver_pending())
        return;
    if (sl_resilver_start(NULL, id, sizeof(id), &err) < 0)
        sl_logw("resilver: not started: %s", err.msg);
    else
        sl_logi("resilver %s: started by the target itself", id);
}

const struct sl_module sl_resilver_module = {
    .name = "resilver",
    .internal = resilver_internal,
    .cluster_start = resilver_cluster_start,
    .start_kinds = ", resilver",
    .start = resilver_start,
};
