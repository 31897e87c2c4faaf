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

static void scrub_run(struct sl_job *job, const struct sl_bljob_req *q)
{
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
}

static struct sl_bljob scrub_job = SL_BLJOB_INIT("scrub", "/v1/internal/scrub/start",
                                                 " (stop it with `shale job stop scrub`)", scrub_run);

static bool scrub_internal(struct sl_req *r)
{
    return sl_bljob_internal(&scrub_job, r);
}

static bool scrub_cluster_start(struct sl_req *r, const char *kind, const json_t *value)
{
    return sl_bljob_cluster_start(&scrub_job, r, kind, value);
}

/* ---- a target's own runs, every scrub.interval ---- */

static void *watch_thread(void *arg)
{
    (void)arg;
    for (;;) {
        sleep(1);
        if (sl_bg_stopping())
            return NULL;
        int64_t iv = sl_conf->scrub_interval_ns, last;
        if (iv <= 0 || sl_bljob_running(&scrub_job, &last) || sl_mono_ns() - last < iv)
            continue;
        char id[40];
        struct sl_err err = { 0 };
        if (sl_bljob_start_here(&scrub_job, NULL, NULL, false, id, &err) == 0)
            sl_logi("scrub %s: started by the target itself (scrub.interval)", id);
    }
    return NULL;
}

static void scrub_start(void)
{
    pthread_t t;
    if (!sl_is_target())
        return;
    pthread_mutex_lock(&scrub_job.mu);
    scrub_job.last_start = sl_mono_ns(); /* (the first run one interval after the start) */
    pthread_mutex_unlock(&scrub_job.mu);
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
