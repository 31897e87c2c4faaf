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
#include "jsonx.h"
#include "log.h"
#include "module.h"
#include "node.h"
#include "store.h"
#include "xact.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "md.h"

struct cleanup_req {
    char id[40];
    json_t *bcks;               /* names, or NULL: every bucket */
};

static pthread_mutex_t run_mu = PTHREAD_MUTEX_INITIALIZER;
static bool running;

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

static void *cleanup_thread(void *arg)
{
    struct cleanup_req *q = arg;
    struct sl_job *job = sl_job_start("cleanup-store", q->id, "", "");
    struct sl_bmd *bmd = sl_bmd_get();
    for (int i = 0; i < sl_store_nmpaths() && !sl_job_aborting(job); i++) {
        struct sl_mpath *mp = sl_store_mpath(i);
        for (int k = 0; k < bmd->n && !sl_job_aborting(job); k++) {
            const struct sl_bck *b = &bmd->bcks[k];
            if (!sl_bcklist_has(q->bcks, b))
                continue;
            clean_work(job, mp, b);
        }
    }
    sl_bmd_put(bmd);
    sl_logi("cleanup-store %s: %llu work file(s) removed (%llu bytes)", job->id, (unsigned long long)job->out_objs,
            (unsigned long long)job->out_bytes);
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
static int start_here(struct cleanup_req *q, struct sl_err *err)
{
    pthread_mutex_lock(&run_mu);
    bool busy = running;
    running = true;
    pthread_mutex_unlock(&run_mu);
    if (busy) {
        json_decref(q->bcks);
        free(q);
        return sl_errf(err, SL_EBUSY, "t[%s]: a cleanup-store job is running already", G.id);
    }
    sl_run_detached(cleanup_thread, q);
    return 0;
}

/* target: POST /v1/internal/cleanup/start {"id", "buckets"} */
static void internal_start(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    if (!json_is_object(j)) {
        sl_resp_errf(r, SL_EINVAL, "cleanup-store start: bad body");
        json_decref(j);
        return;
    }
    struct cleanup_req *q = sl_xcalloc(1, sizeof(*q));
    snprintf(q->id, sizeof(q->id), "%s", sl_json_str(j, "id", ""));
    json_t *b = json_object_get(j, "buckets");
    q->bcks = json_is_array(b) ? json_incref(b) : NULL;
    json_decref(j);
    if (start_here(q, &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
}

static bool cleanup_internal(struct sl_req *r)
{
    if (strcmp(r->path, "/v1/internal/cleanup/start"))
        return false;
    if (r->method != SL_M_POST)
        sl_resp_method_not_allowed(r, "POST");
    else
        sl_req_buffer_body(r, 1024 * 1024, internal_start);
    return true;
}

/* the gateway: every target that is up starts it */
static void start_run(struct sl_req *r, void *arg)
{
    struct cleanup_req *q = arg;
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
    if (sl_tfan_start_job(SL_TF_SKIP_OFFLINE, "/v1/internal/cleanup/start", body, "start cleanup-store", id, &err) <
        0)
        sl_resp_err(r, &err);
    else
        sl_resp_text(r, 200, id);
    json_decref(body);
    json_decref(q->bcks);
    free(q);
}

static void req_free(void *arg)
{
    struct cleanup_req *q = arg;
    json_decref(q->bcks);
    free(q);
}

static bool cleanup_cluster_start(struct sl_req *r, const char *kind, const json_t *value)
{
    if (strcmp(kind, "cleanup-store"))
        return false;
    struct sl_err err = { 0 };
    struct cleanup_req *q = sl_xcalloc(1, sizeof(*q));
    if (sl_bcklist_parse(value, "start cleanup-store", &q->bcks, &err) < 0) {
        free(q);
        sl_resp_err(r, &err);
        return true;
    }
    sl_job_id(q->id, sizeof(q->id), "");
    sl_req_offload(r, start_run, req_free, q);
    return true;
}

const struct sl_module sl_cleanup_module = {
    .name = "cleanup-store",
    .internal = cleanup_internal,
    .cluster_start = cleanup_cluster_start,
    .start_kinds = ", cleanup-store",
};
