/* SPDX-License-Identifier: MIT
 * lru.c: LRU eviction under the space watermarks (spec native-gaps.md §5.3):
 *
 *   PUT /v1/cluster {"action": "start", "value": {"Kind": "lru", "Buckets": [Bck...] | "Bck": Bck,
 *                                                 "Force": bool}}                     -> job id (text)
 *
 * On every target, job lru looks at each mountpath: at or below
 * space.highwm there is nothing to do; above it, it frees space down to
 * space.lowwm by deleting the least recently used objects (the later of
 * their last write and last read) of the buckets whose props say
 * lru.enabled, skipping those used within their bucket's
 * lru.dont_evict_time. "Force" includes buckets with lru.enabled false
 * (never objects inside dont_evict_time); "Buckets" limits the job to them.
 * An ais:// bucket starts with lru.enabled false: it is a cache only when
 * its owner says so, since for it eviction is deletion. An s3:// bucket
 * starts with it true: eviction drops a copy the remote still has (so does
 * it for an ais:// bucket with a backend_bck, once enabled).
 *
 * A target also checks its mountpaths every lru.capacity_upd_time and
 * starts the job by itself above space.highwm.
 */
#include "lru.h"
#include "bcklist.h"
#include "bg.h"
#include "cluster.h"
#include "conf.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "peer.h"
#include "stats.h"
#include "store.h"
#include "xact.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "md.h"

struct cand {
    int64_t atime;
    int64_t mtime;              /* as scanned: deleted only if still so */
    uint64_t size;
    int bck;                    /* index into the run's buckets */
    char *name;
    size_t nlen;
};

static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    return x->atime < y->atime ? -1 : x->atime > y->atime;
}

static bool wanted(const struct sl_bljob_req *q, const struct sl_bck *b)
{
    if (!sl_bcklist_has(q->bcks, b))
        return false;
    json_t *lru = json_object_get(b->props, "lru");
    return q->force || json_is_true(json_object_get(lru, "enabled"));
}

static int64_t dont_evict_ns(const struct sl_bck *b)
{
    int64_t ns = 2LL * 3600 * 1000000000LL;
    const char *s = json_string_value(json_object_get(json_object_get(b->props, "lru"), "dont_evict_time"));
    if (s && sl_parse_duration(s, &ns) < 0) /* set-bprops refuses such values */
        ns = 2LL * 3600 * 1000000000LL;
    return ns;
}

/* free mountpath i down to lowwm (if it is above highwm) */
static void evict_mpath(struct sl_job *job, const struct sl_bljob_req *q, const struct sl_bmd *bmd, int i)
{
    uint64_t used, total;
    if (sl_store_mpath_usage(i, &used, &total) < 0 || !total)
        return;
    if (used * 100 <= (uint64_t)sl_conf->space_high_pct * total)
        return;
    uint64_t want = used - (uint64_t)sl_conf->space_low_pct * total / 100, freed = 0;
    struct sl_mpath *mp = sl_store_mpath(i);
    int64_t now = sl_now_ns();
    struct cand *c = NULL;
    size_t n = 0, cap = 0;
    for (int k = 0; k < bmd->n && !sl_job_aborting(job); k++) {
        const struct sl_bck *b = &bmd->bcks[k];
        if (!wanted(q, b))
            continue;
        int64_t keep = dont_evict_ns(b);
        struct sl_md_iter *it;
        struct sl_err err = { 0 };
        if (sl_md_iter_open(mp->md, b->bid, "", 0, NULL, 0, &it, &err) < 0) {
            sl_logw("lru %s: %s on %s: %s", job->id, b->name, mp->path, err.msg);
            continue;
        }
        while (sl_md_iter_next(it) == 1) {
            size_t nl;
            const char *nm = sl_md_iter_name(it, &nl);
            const struct sl_objmd *md = sl_md_iter_md(it);
            int64_t at = md->atime > md->mtime ? md->atime : md->mtime;
            int64_t rd = sl_store_last_read(b->bid, nm, nl);
            if (rd > at)
                at = rd;
            if (now - at < keep)
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 1024;
                c = sl_xrealloc(c, cap * sizeof(*c));
            }
            c[n++] = (struct cand){ at, md->mtime, md->size, k, sl_xstrndup(nm, nl), nl };
        }
        sl_md_iter_close(it);
    }
    if (n)
        qsort(c, n, sizeof(*c), cand_cmp);
    for (size_t j = 0; j < n && freed < want && !sl_job_aborting(job); j++) {
        const struct sl_bck *b = &bmd->bcks[c[j].bck];
        /* read again since the scan: keep it */
        if (sl_store_last_read(b->bid, c[j].name, c[j].nlen) > c[j].atime)
            continue;
        struct sl_err err = { 0 };
        int rc = sl_obj_delete_if(b, c[j].name, c[j].nlen, c[j].mtime, &err);
        if (rc == 0) {
            freed += c[j].size;
            sl_job_add(&job->loc_objs, 1);
            sl_job_add(&job->loc_bytes, c[j].size);
            sl_stats_add("lru_evict_n", 1);
            sl_stats_add("lru_evict_size", c[j].size);
        } else if (rc < 0 && err.code != SL_ENOOBJ) {
            sl_logw("lru %s: evicting %s/%.*s: %s", job->id, b->name, (int)SL_MIN(c[j].nlen, 200), c[j].name,
                    err.msg);
        }
    }
    for (size_t j = 0; j < n; j++)
        free(c[j].name);
    free(c);
    sl_logi("lru %s: %s was %.1f%% full (highwm %d%%): %llu bytes evicted of %llu wanted", job->id, mp->path,
            100.0 * (double)used / (double)total, sl_conf->space_high_pct, (unsigned long long)freed,
            (unsigned long long)want);
}

static void lru_run(struct sl_job *job, const struct sl_bljob_req *q)
{
    struct sl_bmd *bmd = sl_bmd_get();
    for (int i = 0; i < sl_store_nmpaths() && !sl_job_aborting(job); i++)
        if (!sl_store_mpath_gone(sl_store_mpath(i))) /* (a detached one holds nothing of this target) */
            evict_mpath(job, q, bmd, i);
    sl_bmd_put(bmd);
}

static struct sl_bljob lru_job = SL_BLJOB_INIT("lru", "/v1/internal/lru/start", "", lru_run);

static bool lru_internal(struct sl_req *r)
{
    return sl_bljob_internal(&lru_job, r);
}

static bool lru_cluster_start(struct sl_req *r, const char *kind, const json_t *value)
{
    return sl_bljob_cluster_start(&lru_job, r, kind, value);
}

/* ---- a target's own check, every lru.capacity_upd_time ---- */

static void *watch_thread(void *arg)
{
    (void)arg;
    int64_t last = sl_mono_ns();
    for (;;) {
        sleep(1);
        if (sl_bg_stopping())
            return NULL;
        if (sl_mono_ns() - last < sl_conf->lru_capacity_upd_ns)
            continue;
        last = sl_mono_ns();
        bool over = false;
        for (int i = 0; i < sl_store_nmpaths(); i++) {
            uint64_t used, total;
            if (!sl_store_mpath_gone(sl_store_mpath(i)) && sl_store_mpath_usage(i, &used, &total) == 0 && total &&
                used * 100 > (uint64_t)sl_conf->space_high_pct * total)
                over = true;
        }
        if (!over)
            continue;
        char id[40];
        struct sl_err err = { 0 };
        if (sl_bljob_start_here(&lru_job, NULL, NULL, false, false, id, &err) == 0)
            sl_logi("lru %s: a mountpath is above space.highwm (%d%%): evicting", id, sl_conf->space_high_pct);
    }
    return NULL;
}

static void lru_start(void)
{
    pthread_t t;
    if (!sl_is_target())
        return;
    if (pthread_create(&t, NULL, watch_thread, NULL) == 0)
        pthread_detach(t);
    else
        sl_logw("lru: cannot start the capacity check; eviction runs only when started");
}

const struct sl_module sl_lru_module = {
    .name = "lru",
    .internal = lru_internal,
    .cluster_start = lru_cluster_start,
    .start_kinds = ", lru",
    .start = lru_start,
};
