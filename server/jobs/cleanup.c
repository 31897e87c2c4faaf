/* SPDX-License-Identifier: MIT
 * cleanup.c: job cleanup-store, AIStore's storage cleanup (`ais storage
 * cleanup`, spec aistore-api.md §10):
 *
 *   PUT /v1/cluster {"action": "start", "value": {"Kind": "cleanup-store",
 *                    "Buckets": [Bck...] | "Bck": Bck}}           -> job id (text)
 *
 * On every target that is up, for each mountpath, it removes the work
 * files (the %wk directories: interrupted PUTs, appends, uploads) that no
 * request of this process holds open and that nobody wrote for
 * space.dont_cleanup_time; fsck removes them at start-up, this while the
 * target runs. "Buckets" limits it to those buckets. Stats: out-objs and
 * out-bytes, the work files removed. One runs at a time on a target (409).
 *
 * AIStore's cleanup also removes misplaced copies. Here the rebalance does:
 * a sender deletes what it moved once the owner has it, and one killed
 * between the two sends again when it is back (the owner keeps what it has)
 * and deletes then (test_cleanup's note).
 */
#include "cleanup.h"
#include "bcklist.h"
#include "cluster.h"
#include "conf.h"
#include "log.h"
#include "module.h"
#include "node.h"
#include "store.h"
#include "xact.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>



/* ---- work files ---- */

struct fileid {
    dev_t dev;
    ino_t ino;
};

/* the files this process has open now (a work file in use is one of them) */
static struct fileid *open_files(size_t *n)
{
    *n = 0;
    size_t cap = 0;
    struct fileid *v = NULL;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return NULL;
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat st;
        if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st, 0) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 256;
            v = sl_xrealloc(v, cap * sizeof(*v));
        }
        v[(*n)++] = (struct fileid){ st.st_dev, st.st_ino };
    }
    closedir(d);
    return v;
}

static bool is_open(const struct fileid *v, size_t n, const struct stat *st)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].dev == st->st_dev && v[i].ino == st->st_ino)
            return true;
    return false;
}

/* the work files of bucket b on mp */
static void clean_work(struct sl_job *job, struct sl_mpath *mp, const struct sl_bck *b)
{
    char *wk = sl_xasprintf("%s/@%s/%s/%%wk", mp->path, b->provider, b->name);
    DIR *d = opendir(wk);
    if (!d) {
        free(wk);
        return;
    }
    size_t nopen;
    struct fileid *open = open_files(&nopen);
    int64_t now = sl_now_ns();
    struct dirent *de;
    while ((de = readdir(d)) && !sl_job_aborting(job)) {
        struct stat st;
        if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            !S_ISREG(st.st_mode))
            continue;
        int64_t mt = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
        if (now - mt < sl_conf->space_dont_cleanup_ns || is_open(open, nopen, &st))
            continue;
        if (unlinkat(dirfd(d), de->d_name, 0) == 0) {
            sl_job_add(&job->out_objs, 1);
            sl_job_add(&job->out_bytes, (uint64_t)st.st_size);
            sl_logi("cleanup-store %s: removed %s/%s, a work file nobody wrote for %lld s", job->id, wk, de->d_name,
                    (long long)((now - mt) / 1000000000LL));
        } else if (errno != ENOENT) {
            sl_logw("cleanup-store %s: removing %s/%s: %s", job->id, wk, de->d_name, strerror(errno));
        }
    }
    closedir(d);
    free(open);
    free(wk);
}

static void cleanup_run(struct sl_job *job, const struct sl_bljob_req *q)
{
    struct sl_bmd *bmd = sl_bmd_get();
    for (int i = 0; i < sl_store_nmpaths() && !sl_job_aborting(job); i++)
        for (int k = 0; k < bmd->n && !sl_job_aborting(job) && !sl_store_mpath_gone(sl_store_mpath(i)); k++)
            if (sl_bcklist_has(q->bcks, &bmd->bcks[k]))
                clean_work(job, sl_store_mpath(i), &bmd->bcks[k]);
    sl_bmd_put(bmd);
    sl_logi("cleanup-store %s: %llu work file(s) removed (%llu bytes)", job->id, (unsigned long long)job->out_objs,
            (unsigned long long)job->out_bytes);
}

static struct sl_bljob cleanup_job = SL_BLJOB_INIT("cleanup-store", "/v1/internal/cleanup/start", "", cleanup_run);

static bool cleanup_internal(struct sl_req *r)
{
    return sl_bljob_internal(&cleanup_job, r);
}

static bool cleanup_cluster_start(struct sl_req *r, const char *kind, const json_t *value)
{
    return sl_bljob_cluster_start(&cleanup_job, r, kind, value);
}

const struct sl_module sl_cleanup_module = {
    .name = "cleanup-store",
    .internal = cleanup_internal,
    .cluster_start = cleanup_cluster_start,
    .start_kinds = ", cleanup-store",
};
