/* SPDX-License-Identifier: MIT
 * scrub.c: job scrub, every object's bytes checked against its checksum,
 * on every target, in the background:
 *
 *   PUT /v1/cluster {"action": "start", "value": {"Kind": "scrub"[, "Buckets": [Bck...] | "Bck": Bck]}}
 *                                                                       -> job id (text)
 *
 * Each target walks the objects recorded on its mountpaths (every bucket,
 * or those named) and reads each one through the read path with the check
 * on (read.c, SL_READ_VALIDATE), as a GET with validate-checksum would: a
 * damaged main replica of a mirrored bucket is restored from a good copy
 * (store.c), one of an erasure-coded bucket rebuilt from its slices, one of
 * a remote-backed bucket fetched again; in any other bucket it stays and is
 * logged ("... the copy here is damaged") and counted (err_cksum_n, and the
 * job's err-objs), so that the next read is refused as damaged rather than
 * served. In an erasure-coded bucket the slices and replicas held here are
 * checked too, against their own checksums, and a damaged one is encoded
 * again by its object's main target (ec.c sl_ec_scrub_slices). Stats:
 * loc-objs / loc-bytes objects checked, out-objs slices checked, in-objs
 * made again, err-objs damaged. One run per target at a time.
 *
 * scrub.interval (0: off) makes each target start a run over every bucket
 * by itself that long after its last one started.
 */
#include "scrub.h"
#include "bcklist.h"
#include "bg.h"
#include "cluster.h"
#include "conf.h"
#include "ec.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "read.h"
#include "store.h"
#include "xact.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct scrub_req {
    char id[40];
    json_t *bcks;               /* "provider/name" strings, or NULL: every bucket */
};

static pthread_mutex_t run_mu = PTHREAD_MUTEX_INITIALIZER;
static bool running;
static int64_t last_start;      /* sl_mono_ns() of the last run started here */

struct walk {
    struct sl_job *job;
    const struct sl_bck *b;
};

static bool check_one(void *arg, const char *name, size_t nlen)
{
    struct walk *w = arg;
    if (sl_job_aborting(w->job) || sl_bg_stopping())
        return true;
    struct sl_read rd;
    struct sl_err err = { 0 };
    if (sl_read_open(w->b, name, nlen, SL_READ_VALIDATE, NULL, &rd, &err) == 0) {
        sl_job_add(&w->job->loc_objs, 1);
        sl_job_add(&w->job->loc_bytes, rd.md.size);
        if (rd.repaired)
            sl_job_add(&w->job->in_objs, 1);
        sl_read_done(&rd);
    } else if (err.code == SL_ECKSUM) {
        sl_job_add(&w->job->err_objs, 1);
    } else if (err.code != SL_ENOOBJ) { /* (deleted meanwhile: nothing to check) */
        sl_logw("scrub %s: %s", w->job->id, err.msg);
    }
    return false;
}

static void *scrub_thread(void *arg)
{
    struct scrub_req *q = arg;
    struct sl_job *job = sl_job_start("scrub", q->id, "", "");
    struct sl_bmd *bmd = sl_bmd_get();
    int64_t t0 = sl_mono_ns();
    for (int k = 0; k < bmd->n && !sl_job_aborting(job); k++) {
        const struct sl_bck *b = &bmd->bcks[k];
        if (!sl_bcklist_has(q->bcks, b))
            continue;
        struct walk w = { job, b };
        for (int i = 0; i < sl_store_nmpaths() && !sl_job_aborting(job); i++) {
            struct sl_err err = { 0 };
            if (sl_store_walk(sl_store_mpath(i), b, NULL, check_one, &w, &err) < 0)
                sl_logw("scrub %s: %s://%s on %s: %s", job->id, sl_provider_scheme(b->provider), b->name,
                        sl_store_mpath(i)->path, err.msg);
        }
        sl_ec_scrub_slices(b, job); /* (the slices and replicas held here, of an erasure-coded bucket) */
    }
    sl_bmd_put(bmd);
    sl_logi("scrub %s: %llu object(s) checked (%llu bytes) and %llu EC slice(s) in %.1f s: %llu made again, %llu "
            "damaged", job->id, (unsigned long long)__atomic_load_n(&job->loc_objs, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(&job->loc_bytes, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(&job->out_objs, __ATOMIC_RELAXED), (double)(sl_mono_ns() - t0) / 1e9,
            (unsigned long long)__atomic_load_n(&job->in_objs, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(&job->err_objs, __ATOMIC_RELAXED));
    sl_job_finish(job, sl_job_aborting(job) ? "aborted" : NULL);
    sl_job_put(job);
    pthread_mutex_lock(&run_mu);
    running = false;
    pthread_mutex_unlock(&run_mu);
    json_decref(q->bcks);
    free(q);
    return NULL;
}

/* start job q here (takes q); refused while one runs */
static int start_here(struct scrub_req *q, struct sl_err *err)
{
    pthread_mutex_lock(&run_mu);
    bool busy = running;
    running = true;
    if (!busy)
        last_start = sl_mono_ns();
    pthread_mutex_unlock(&run_mu);
    if (busy) {
        json_decref(q->bcks);
        free(q);
        return sl_errf(err, SL_EBUSY, "t[%s]: a scrub job is running already (stop it with `shale job stop scrub`)",
                       G.id);
    }
    sl_run_detached(scrub_thread, q);
    return 0;
}

/* target: POST /v1/internal/scrub/start {"id", "buckets"} */
static void internal_start(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    if (!json_is_object(j)) {
        sl_resp_errf(r, SL_EINVAL, "scrub start: the body must be {\"id\": ..., \"buckets\": [...]}");
        json_decref(j);
        return;
    }
    struct scrub_req *q = sl_xcalloc(1, sizeof(*q));
    snprintf(q->id, sizeof(q->id), "%s", sl_json_str(j, "id", ""));
    json_t *b = json_object_get(j, "buckets");
    q->bcks = json_is_array(b) ? json_incref(b) : NULL;
    json_decref(j);
    if (start_here(q, &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
}

static bool scrub_internal(struct sl_req *r)
{
    if (strcmp(r->path, "/v1/internal/scrub/start"))
        return false;
    if (r->method != SL_M_POST)
        sl_resp_method_not_allowed(r, "POST");
    else
        sl_req_buffer_body(r, 1024 * 1024, internal_start);
    return true;
}

/* the gateway: every target that is not offline starts the job */
static void start_run(struct sl_req *r, void *arg)
{
    struct scrub_req *q = arg;
    struct sl_err err = { 0 };
    char id[40];
    snprintf(id, sizeof(id), "%s", q->id);
    if (G.role == SL_ROLE_STANDALONE) {
        if (start_here(q, &err) < 0)
            sl_resp_err(r, &err);
        else
            sl_resp_text(r, 200, id);
        return;
    }
    json_t *body = json_pack("{s:s,s:O?}", "id", q->id, "buckets", q->bcks);
    if (sl_tfan_start_job(SL_TF_SKIP_OFFLINE, "/v1/internal/scrub/start", body, "start scrub", id, &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_text(r, 200, id);
    json_decref(body);
    json_decref(q->bcks);
    free(q);
}

static void req_free(void *arg)
{
    struct scrub_req *q = arg;
    json_decref(q->bcks);
    free(q);
}

static bool scrub_cluster_start(struct sl_req *r, const char *kind, const json_t *value)
{
    if (strcmp(kind, "scrub"))
        return false;
    struct sl_err err = { 0 };
    struct scrub_req *q = sl_xcalloc(1, sizeof(*q));
    if (sl_bcklist_parse(value, "start scrub", &q->bcks, &err) < 0) {
        free(q);
        sl_resp_err(r, &err);
        return true;
    }
    sl_job_id(q->id, sizeof(q->id), "");
    sl_req_offload(r, start_run, req_free, q);
    return true;
}

/* ---- a target's own runs, every scrub.interval ---- */

static void *watch_thread(void *arg)
{
    (void)arg;
    for (;;) {
        sleep(1);
        if (sl_bg_stopping())
            return NULL;
        int64_t iv = sl_conf->scrub_interval_ns;
        pthread_mutex_lock(&run_mu);
        bool due = iv > 0 && !running && sl_mono_ns() - last_start >= iv;
        pthread_mutex_unlock(&run_mu);
        if (!due)
            continue;
        struct scrub_req *q = sl_xcalloc(1, sizeof(*q));
        sl_job_id(q->id, sizeof(q->id), "");
        char id[40];
        snprintf(id, sizeof(id), "%s", q->id);
        struct sl_err err = { 0 };
        if (start_here(q, &err) == 0)
            sl_logi("scrub %s: started by the target itself (scrub.interval)", id);
    }
    return NULL;
}

static void scrub_start(void)
{
    pthread_t t;
    if (!sl_is_target())
        return;
    last_start = sl_mono_ns(); /* (the first run one interval after the start) */
    if (pthread_create(&t, NULL, watch_thread, NULL) == 0)
        pthread_detach(t);
    else
        sl_logw("scrub: cannot start the scrub.interval watcher; scrub runs only when started");
}

const struct sl_module sl_scrub_module = {
    .name = "scrub",
    .internal = scrub_internal,
    .cluster_start = scrub_cluster_start,
    .start_kinds = ", scrub",
    .start = scrub_start,
};
