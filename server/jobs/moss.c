/* SPDX-License-Identifier: MIT
 * moss.c: get-batch (AIStore's "moss", spec §9): many objects, shard
 * members and byte ranges, from any targets, as one archive in request
 * order.
 *
 *   gateway  GET /v1/ml/moss[/BUCKET] + MossReq: checks the request (400s),
 *            picks a designated target (DT) and answers 307 to it
 *   DT       the same request: opens its own items; asks every other
 *            target that owns items for all of them in one request; once
 *            every item's size or error is known, writes the archive
 *            (streaming: as it goes, with back-pressure; else multipart:
 *            a "metadata" part, then the "archive" part)
 *   holders  POST /v1/internal/moss/pull [[bck,provider,obj,archpath,
 *            start,length],...] -> 8-byte length + JSON [[status,size,
 *            "err"],...], then the bytes of every item that has no error,
 *            back to back in request order
 *
 * Items a holder sends wait in a spool on the DT (memory up to
 * get_batch.mem shared by all requests, then disk), so a batch never has to
 * fit in memory. A change of cluster map during a request ends it with an
 * error: an item is never read from a target that no longer owns it.
 *
 * moss_int.h says how the files of get-batch divide it. This file: the
 * gateway, the routes and the module.
 */
#include "moss_int.h"
#include "node.h"
#include "peer.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* the gateway                                                        */
/* ------------------------------------------------------------------ */

/* the bucket in /v1/ml/moss/BUCKET[/...] (new), or NULL */
static char *path_bucket(const struct sl_req *r, int *nseg)
{
    const char *p = r->path + strlen("/v1/ml/moss");
    char *segs[8];
    int n = 0;
    while (*p == '/' && n < 8) {
        p++;
        const char *e = strchr(p, '/');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l)
            segs[n++] = sl_xstrndup(p, l);
        p += l;
    }
    *nseg = n;
    /* BUCKET, XID/WID/NAT (the gateway's redirect), or BUCKET/XID/WID/NAT */
    char *b = n == 1 || n == 4 ? segs[0] : NULL;
    for (int i = 0; i < n; i++)
        if (segs[i] != b)
            free(segs[i]);
    return b;
}

static void gw_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    int nseg;
    char *bucket = path_bucket(r, &nseg);
    struct moss m;
    memset(&m, 0, sizeof(m));
    json_t *j = sl_req_body_json(r, &err);
    int rc = j ? moss_parse(j, bucket, sl_req_query(r, "provider"), &m, &err) : -1;
    if (rc == 0)
        rc = moss_allow(r, &m, &err);
    json_decref(j);
    if (rc < 0) {
        moss_free(&m);
        free(bucket);
        sl_resp_err(r, &err);
        return;
    }
    struct sl_smap *sm = sl_smap_get();
    char xid[32];
    sl_job_id(xid, sizeof(xid), "gbt-");
    const struct sl_snode *t = sl_smap_hrw_target(sm, xid, strlen(xid));
    if (m.coloc && t) {
        /* target-aware: the target that owns the most items */
        int best = 0;
        for (int k = 0; k < sm->nnodes; k++) {
            const struct sl_snode *c = &sm->nodes[k];
            if (c->type != SL_NODE_TARGET || (c->flags & SL_SNF_OFFLINE))
                continue;
            int cnt = 0;
            for (int i = 0; i < m.n; i++) {
                struct sl_buf un;
                sl_buf_init(&un);
                sl_obj_uname(&un, m.it[i].prov ? m.it[i].prov : "ais", m.it[i].bck, m.it[i].obj,
                             strlen(m.it[i].obj));
                const struct sl_snode *o = sl_smap_hrw_target(sm, un.p, un.len);
                sl_buf_free(&un);
                cnt += o && !strcmp(o->id, c->id);
            }
            if (cnt > best) {
                best = cnt;
                t = c;
            }
        }
    }
    int nat = 0;
    for (int k = 0; k < sm->nnodes; k++)
        nat += sm->nodes[k].type == SL_NODE_TARGET && !(sm->nodes[k].flags & SL_SNF_OFFLINE);
    if (!t) {
        sl_resp_errf(r, SL_EUNAVAIL, "get-batch: the cluster has no active targets");
    } else {
        struct sl_buf url;
        sl_buf_init(&url);
        sl_buf_printf(&url, "%s/v1/ml/moss", t->url);
        if (bucket) {
            char *eb = sl_url_encode_path(bucket, strlen(bucket));
            sl_buf_printf(&url, "/%s", eb);
            free(eb);
        }
        sl_buf_printf(&url, "/%s/%s/%d", xid, "0", nat);
        const char *q = strchr(r->raw_uri, '?');
        if (q && q[1])
            sl_buf_adds(&url, q);
        /* the target takes only the body checked here (its buckets' GET) */
        sl_peer_redirect_url(&url, G.id, r->method_str, &r->body);
        sl_resp_redirect(r, 307, url.p);
        sl_buf_free(&url);
    }
    sl_smap_put(sm);
    moss_free(&m);
    free(bucket);
}

static void dt_done(struct sl_req *r)
{
    int nseg;
    char *bucket = path_bucket(r, &nseg);
    sl_req_offload(r, moss_dt_run, free, bucket);
}

static void moss_route(struct sl_req *r)
{
    if (!sl_req_path_is(r, "/v1/ml/moss")) {
        sl_resp_errf(r, SL_ENOENT, "no such ML endpoint %s (get-batch is GET /v1/ml/moss[/BUCKET] with a JSON "
                     "body)", r->path);
        return;
    }
    if (r->method != SL_M_GET) {
        sl_resp_method_not_allowed(r, "GET");
        return;
    }
    uint64_t lim = sl_conf->http_max_body_json ? sl_conf->http_max_body_json : 16 * SL_MIB;
    sl_req_buffer_body(r, lim, G.role == SL_ROLE_PROXY ? gw_done : dt_done);
}

static bool moss_internal_route(struct sl_req *r)
{
    if (strcmp(r->path, "/v1/internal/moss/pull"))
        return false;
    if (r->method != SL_M_POST) {
        sl_resp_method_not_allowed(r, "POST");
        return true;
    }
    sl_req_buffer_body(r, 64 * SL_MIB, moss_pull_done);
    return true;
}

static const char *const moss_paths[] = { "/v1/ml/moss", NULL };

const struct sl_module sl_moss_module = {
    .name = "get-batch",
    .paths = moss_paths,
    .route = moss_route,
    .internal = moss_internal_route,
    .start = moss_watch_start,
};
