/* SPDX-License-Identifier: MIT
 * blob.c: AIStore's blob download (spec aistore-api.md §4; the SDK's
 * Object.blob_download):
 *
 *   POST /v1/objects/B {"action": "blob-download", "name": O, "value":
 *        {"chunk-size": N, "num-workers": N, "latest-ver": bool}}   -> job id (text)
 *   POST /v1/objects/B/O (the same, the object in the path)
 *
 * The gateway sends it to the object's owner (307); there job
 * blob-download fetches the object from B's remote in ranges of chunk-size
 * (0: backend.blob_chunk), num-workers at a time (0: backend.blob_workers,
 * at least 2), on a thread of its own; its in-bytes grow as the ranges
 * arrive. An object held here already is left as it is, unless latest-ver
 * (then a copy the remote has changed since is fetched again, and one gone
 * there is dropped: the job fails with 404). A GET with Ais-Blob-Download:
 * true (Ais-Blob-Chunk, Ais-Blob-Workers) fetches the same way
 * (backend.c). Only buckets with a remote behind them (400 otherwise).
 */
#include "blob.h"
#include "backend.h"
#include "cluster.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "route.h"
#include "store.h"
#include "xact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct blob_req {
    char id[40];
    struct sl_bck b;
    char *name;
    size_t nlen;
    struct sl_fetch_opts fo;
    bool latest;
};

static void req_free(void *arg)
{
    struct blob_req *q = arg;
    sl_bck_release(&q->b);
    free(q->name);
    free(q);
}

/* value -> q's options (400 for what AIStore's BlobMsg does not have or a bad value) */
static int parse(const json_t *v, struct blob_req *q, struct sl_err *err)
{
    if (v && !json_is_object(v))
        return sl_errf(err, SL_EINVAL, "blob-download: \"value\" must be {\"chunk-size\": N, \"num-workers\": N, "
                       "\"latest-ver\": bool}");
    static const char *const known[] = { "chunk-size", "num-workers", "latest-ver" };
    const char *k = sl_json_unknown_key_exact(v, known, SL_ARRAY_SIZE(known));
    if (k)
        return sl_errf(err, SL_EINVAL, "blob-download: unknown field \"%s\" (valid: chunk-size, num-workers, "
                       "latest-ver)", k);
    json_t *cs = json_object_get(v, "chunk-size"), *nw = json_object_get(v, "num-workers"),
           *lv = json_object_get(v, "latest-ver");
    uint64_t chunk = 0;
    if (json_is_integer(cs) && json_integer_value(cs) >= 0)
        chunk = (uint64_t)json_integer_value(cs);
    else if (cs && !json_is_null(cs) && (!json_is_string(cs) || sl_parse_size(json_string_value(cs), &chunk) < 0))
        return sl_errf(err, SL_EINVAL, "blob-download: \"chunk-size\" must be a number of bytes or a size (\"8MiB\")");
    if (chunk && (chunk < (uint64_t)SL_BLOB_CHUNK_MIN || chunk > (uint64_t)SL_BLOB_CHUNK_MAX))
        return sl_errf(err, SL_EINVAL, "blob-download: \"chunk-size\" %llu is out of range: 64KiB to 2GiB (0: "
                       "backend.blob_chunk)", (unsigned long long)chunk);
    if (nw && !json_is_null(nw) && (!json_is_integer(nw) || json_integer_value(nw) < 0 ||
                                    json_integer_value(nw) > SL_BLOB_WORKERS_MAX))
        return sl_errf(err, SL_EINVAL, "blob-download: \"num-workers\" must be 0 (backend.blob_workers) to %d",
                       SL_BLOB_WORKERS_MAX);
    if (lv && !json_is_null(lv) && !json_is_boolean(lv))
        return sl_errf(err, SL_EINVAL, "blob-download: \"latest-ver\" must be true or false");
    q->fo.chunk = (int64_t)chunk;
    int w = nw ? (int)json_integer_value(nw) : 0;
    q->fo.workers = w ? w : (sl_conf->blob_workers > 1 ? sl_conf->blob_workers : 4); /* (ranged, always) */
    q->latest = json_is_true(lv);
    return 0;
}

static void *blob_thread(void *arg)
{
    struct blob_req *q = arg;
    struct sl_job *job = sl_job_start("blob-download", q->id, q->b.name, "");
    struct sl_err err = { 0 };
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), &q->b, q->name, q->nlen);
    struct sl_objmd md;
    int held = sl_obj_stat(&q->b, q->name, q->nlen, &md, NULL, &err);
    if (held == 1) {
        sl_objmd_free(&md);
        /* the remote's current version: fetched again (whole) when it changed, 404 when gone */
        if (q->latest && sl_backend_refresh(&q->b, q->name, q->nlen, &err) == 0 &&
            sl_obj_stat(&q->b, q->name, q->nlen, &md, NULL, &err) == 1) {
            sl_job_add(&job->loc_objs, 1);
            sl_job_add(&job->loc_bytes, md.size);
            sl_objmd_free(&md);
        }
        if (!err.code)
            sl_logi("blob-download %s: %s is here already%s", job->id, cn, q->latest ? " (the remote's version)" : "");
    } else if (held == 0) {
        memset(&err, 0, sizeof(err));
        q->fo.progress = &job->in_bytes;
        int64_t t0 = sl_mono_ns();
        if (sl_backend_fetch_opts(&q->b, q->name, q->nlen, &q->fo, &err) == 0) {
            sl_job_add(&job->in_objs, 1);
            sl_logi("blob-download %s: %s fetched, %llu bytes in %.2f s (%lld-byte ranges, %d at a time)", job->id,
                    cn, (unsigned long long)job->in_bytes, (double)(sl_mono_ns() - t0) / 1e9,
                    (long long)(q->fo.chunk ? q->fo.chunk : (int64_t)sl_conf->blob_chunk), q->fo.workers);
        }
    }
    if (err.code) {
        sl_job_add(&job->err_objs, 1);
        sl_logw("blob-download %s: %s", job->id, err.msg);
    }
    sl_job_finish(job, err.code ? err.msg : NULL);
    sl_job_put(job);
    req_free(q);
    return NULL;
}

static bool start(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, const struct sl_actmsg *m)
{
    struct sl_err err = { 0 };
    struct blob_req *q = sl_xcalloc(1, sizeof(*q));
    sl_bck_copy(&q->b, b);
    q->name = sl_xstrndup(name, nlen);
    q->nlen = nlen;
    if (!sl_bck_remote(b)) {
        sl_errf(&err, SL_EINVAL, "blob-download: %s://%s has no remote behind it: blob-download fetches an object from "
                "a bucket's remote (s3://, or an ais:// bucket with a backend_bck)", sl_provider_scheme(b->provider),
                b->name);
    } else if (parse(m->value, q, &err) == 0) {
        sl_job_id(q->id, sizeof(q->id), "");
        char id[40];
        snprintf(id, sizeof(id), "%s", q->id);
        sl_run_detached(blob_thread, q);
        sl_resp_text(r, 200, id);
        return true;
    }
    req_free(q);
    sl_resp_err(r, &err);
    return true;
}

/* POST /v1/objects/B/O on its owner */
static bool blob_object_post(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen,
                             struct sl_actmsg *m)
{
    if (strcmp(m->action, "blob-download"))
        return false;
    return start(r, b, name, nlen, m);
}

/* POST /v1/objects/B, the object in "name": a gateway sends it to the owner */
static bool blob_objects_post(struct sl_req *r, const char *bucket, struct sl_actmsg *m)
{
    if (strcmp(m->action, "blob-download"))
        return false;
    struct sl_err err = { 0 };
    size_t nlen = strlen(m->name);
    if (!nlen || sl_objname_check(m->name, nlen, &err) < 0) {
        if (!nlen)
            sl_errf(&err, SL_EINVAL, "blob-download: the object's name goes in \"name\" (or POST /v1/objects/%s/OBJ)",
                    bucket);
        sl_resp_err(r, &err);
        return true;
    }
    if (G.role == SL_ROLE_PROXY) {
        sl_route_redirect_obj(r, bucket, m->name, nlen);
        return true;
    }
    struct sl_bck b;
    if (sl_bck_resolve(bucket, sl_req_query(r, "provider"), sl_req_query(r, "namespace"), &b, &err) < 0) {
        sl_resp_err(r, &err);
        return true;
    }
    start(r, &b, m->name, nlen, m);
    sl_bck_release(&b);
    return true;
}

const struct sl_module sl_blob_module = {
    .name = "blob-download",
    .objects_post = blob_objects_post,
    .object_post = blob_object_post,
};
