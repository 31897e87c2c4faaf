/* SPDX-License-Identifier: MIT
 * xact.c: see xact.h. Finished jobs are kept (the last MAX_DONE) so their
 * status can still be queried.
 */
#include "xact.h"
#include "jsonx.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DONE 256

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct sl_job **jobs;
static int njobs, capjobs;

void sl_job_add(uint64_t *ctr, uint64_t v)
{
    __atomic_add_fetch(ctr, v, __ATOMIC_RELAXED);
}

bool sl_job_aborting(const struct sl_job *j)
{
    return __atomic_load_n(&j->abort_req, __ATOMIC_RELAXED);
}

static void job_free(struct sl_job *j)
{
    json_decref(j->ext);
    free(j);
}

struct sl_job *sl_job_start(const char *kind, const char *id, const char *bck, const char *dst_bck)
{
    struct sl_job *j = sl_xcalloc(1, sizeof(*j));
    if (id && *id)
        snprintf(j->id, sizeof(j->id), "%s", id);
    else
        sl_job_id(j->id, sizeof(j->id), "");
    snprintf(j->kind, sizeof(j->kind), "%s", kind);
    snprintf(j->bck, sizeof(j->bck), "%s", bck ? bck : "");
    snprintf(j->dst_bck, sizeof(j->dst_bck), "%s", dst_bck ? dst_bck : "");
    j->start_ns = sl_now_ns();
    j->refs = 2; /* registry + caller */
    pthread_mutex_lock(&mu);
    /* drop the oldest finished jobs beyond the limit */
    int done = 0;
    for (int i = 0; i < njobs; i++)
        if (jobs[i]->end_ns)
            done++;
    for (int i = 0; i < njobs && done >= MAX_DONE;) {
        if (jobs[i]->end_ns) {
            struct sl_job *o = jobs[i];
            memmove(&jobs[i], &jobs[i + 1], (size_t)(njobs - i - 1) * sizeof(*jobs));
            njobs--;
            done--;
            if (--o->refs == 0)
                job_free(o);
        } else {
            i++;
        }
    }
    if (njobs == capjobs) {
        capjobs = capjobs ? capjobs * 2 : 32;
        jobs = sl_xrealloc(jobs, (size_t)capjobs * sizeof(*jobs));
    }
    jobs[njobs++] = j;
    pthread_mutex_unlock(&mu);
    return j;
}

static void job_end(struct sl_job *j, const char *err, bool failed)
{
    pthread_mutex_lock(&mu);
    if (err && *err)
        snprintf(j->err, sizeof(j->err), "%s", err);
    j->aborted = j->abort_req && !failed;
    j->end_ns = sl_now_ns();
    pthread_mutex_unlock(&mu);
}

void sl_job_finish(struct sl_job *j, const char *err)
{
    job_end(j, err, false);
}

void sl_job_fail(struct sl_job *j, const char *err)
{
    job_end(j, err && *err ? err : "failed", true);
}

void sl_job_put(struct sl_job *j)
{
    if (!j)
        return;
    pthread_mutex_lock(&mu);
    int r = --j->refs;
    pthread_mutex_unlock(&mu);
    if (r == 0)
        job_free(j);
}

struct sl_job *sl_job_get(const char *id)
{
    struct sl_job *found = NULL;
    pthread_mutex_lock(&mu);
    for (int i = njobs - 1; i >= 0; i--) {
        if (!strcmp(jobs[i]->id, id)) {
            found = jobs[i];
            found->refs++;
            break;
        }
    }
    pthread_mutex_unlock(&mu);
    return found;
}

int sl_job_remove(const char *id)
{
    int n = 0;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < njobs; i++)
        if (!strcmp(jobs[i]->id, id) && !jobs[i]->end_ns) {
            pthread_mutex_unlock(&mu);
            return -1;
        }
    for (int i = 0; i < njobs;) {
        if (strcmp(jobs[i]->id, id)) {
            i++;
            continue;
        }
        struct sl_job *o = jobs[i];
        memmove(&jobs[i], &jobs[i + 1], (size_t)(njobs - i - 1) * sizeof(*jobs));
        njobs--;
        n++;
        if (--o->refs == 0)
            job_free(o);
    }
    pthread_mutex_unlock(&mu);
    return n;
}

static bool match(const struct sl_job *j, const char *id, const char *kind)
{
    if (id && *id && strcmp(j->id, id))
        return false;
    if (kind && *kind && strcmp(j->kind, sl_job_kind_norm(kind)))
        return false;
    return true;
}

int sl_job_abort(const char *id, const char *kind)
{
    int n = 0;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < njobs; i++) {
        if (match(jobs[i], id, kind) && !jobs[i]->end_ns) {
            jobs[i]->abort_req = true;
            n++;
        }
    }
    pthread_mutex_unlock(&mu);
    return n;
}

json_t *sl_job_ext_copy(struct sl_job *j)
{
    pthread_mutex_lock(&mu);
    json_t *e = j->ext ? json_deep_copy(j->ext) : json_object();
    pthread_mutex_unlock(&mu);
    return e;
}

void sl_job_set_ext(struct sl_job *j, json_t *ext)
{
    pthread_mutex_lock(&mu);
    json_decref(j->ext);
    j->ext = ext;
    pthread_mutex_unlock(&mu);
}

static json_t *ctr(uint64_t v)
{
    char s[32];
    snprintf(s, sizeof(s), "%llu", (unsigned long long)__atomic_load_n(&v, __ATOMIC_RELAXED));
    return json_string(s);
}

static json_t *bck_json(const char *name)
{
    json_t *b = json_object();
    json_object_set_new(b, "name", json_string(name));
    json_object_set_new(b, "provider", json_string(name[0] ? "ais" : ""));
    json_t *ns = json_object();
    json_object_set_new(ns, "uuid", json_string(""));
    json_object_set_new(ns, "name", json_string(""));
    json_object_set_new(b, "namespace", ns);
    return b;
}

/* caller holds mu */
static json_t *snap_locked(const struct sl_job *j)
{
    json_t *o = json_object();
    char t[64];
    json_object_set_new(o, "ext", j->ext ? json_incref(j->ext) : json_null());
    sl_format_gotime(j->start_ns, "2006-01-02T15:04:05.000000000Z07:00", t, sizeof(t));
    json_object_set_new(o, "start-time", json_string(t));
    if (j->end_ns)
        sl_format_gotime(j->end_ns, "2006-01-02T15:04:05.000000000Z07:00", t, sizeof(t));
    else
        snprintf(t, sizeof(t), "0001-01-01T00:00:00Z");
    json_object_set_new(o, "end-time", json_string(t));
    json_object_set_new(o, "bck", bck_json(j->bck));
    json_object_set_new(o, "src-bck", bck_json(j->bck));
    json_object_set_new(o, "dst-bck", bck_json(j->dst_bck));
    json_object_set_new(o, "id", json_string(j->id));
    json_object_set_new(o, "kind", json_string(j->kind));
    json_object_set_new(o, "abort-err", json_string(j->aborted ? (j->err[0] ? j->err : "aborted") : ""));
    json_object_set_new(o, "err", json_string(j->err));
    json_object_set_new(o, "glob.id", json_string("0"));
    json_t *st = json_object();
    json_object_set_new(st, "loc-objs", ctr(j->loc_objs));
    json_object_set_new(st, "loc-bytes", ctr(j->loc_bytes));
    json_object_set_new(st, "out-objs", ctr(j->out_objs));
    json_object_set_new(st, "out-bytes", ctr(j->out_bytes));
    json_object_set_new(st, "in-objs", ctr(j->in_objs));
    json_object_set_new(st, "in-bytes", ctr(j->in_bytes));
    json_object_set_new(st, "err-objs", ctr(j->err_objs));
    json_object_set_new(o, "stats", st);
    json_object_set_new(o, "aborted", json_boolean(j->aborted));
    json_object_set_new(o, "is_idle", json_boolean(j->end_ns != 0 || j->idle));
    /* Shale: raw nanoseconds for easy aggregation */
    json_object_set_new(o, "start_ns", json_integer(j->start_ns));
    json_object_set_new(o, "end_ns", json_integer(j->end_ns));
    return o;
}

json_t *sl_job_snap(const struct sl_job *j)
{
    pthread_mutex_lock(&mu);
    json_t *o = snap_locked(j);
    pthread_mutex_unlock(&mu);
    return o;
}

json_t *sl_jobs_snaps(const char *id, const char *kind, bool only_running)
{
    json_t *arr = json_array();
    pthread_mutex_lock(&mu);
    for (int i = njobs - 1; i >= 0; i--) {
        if (!match(jobs[i], id, kind))
            continue;
        if (only_running && jobs[i]->end_ns)
            continue;
        json_array_append_new(arr, snap_locked(jobs[i]));
    }
    pthread_mutex_unlock(&mu);
    return arr;
}

const char *sl_job_kind_norm(const char *kind)
{
    static const struct {
        const char *display, *kind;
    } map[] = {
        { "copy-bucket", "copy-bck" }, { "copy-objects", "copy-listrange" }, { "etl-bucket", "etl-bck" },
        { "etl-objects", "etl-listrange" }, { "archive-objects", "archive" }, { "create-archive", "archive" },
        { "delete-objects", "delete-listrange" }, { "rebalance", "rebalance" }, { "ishard", "ishard" },
    };
    for (size_t i = 0; i < SL_ARRAY_SIZE(map); i++)
        if (!strcmp(kind, map[i].display))
            return map[i].kind;
    return kind;
}

static const char *const kinds[] = {
    "rebalance", "resilver", "lru", "cleanup-store", "copy-bck", "copy-listrange", "etl-bck", "etl-listrange",
    "archive", "delete-listrange", "evict-listrange", "evict-remote-bck", "prefetch-listrange", "make-n-copies",
    "put-copies", "ec-encode", "ec-get", "ec-put", "ec-resp", "rechunk", "blob-download", "download", "dsort",
    "get-batch", "list", "summary", "promote", "move-bck", "load-lom-cache", "election", "ishard", "scrub",
    "lifecycle",
};

bool sl_job_kind_known(const char *kind)
{
    const char *k = sl_job_kind_norm(kind);
    for (size_t i = 0; i < SL_ARRAY_SIZE(kinds); i++)
        if (!strcmp(kinds[i], k))
            return true;
    return false;
}

static char kinds_buf[1024];

static void kinds_build(void)
{
    size_t o = 0;
    for (size_t i = 0; i < SL_ARRAY_SIZE(kinds); i++)
        o += (size_t)snprintf(kinds_buf + o, sizeof(kinds_buf) - o, "%s%s", i ? ", " : "", kinds[i]);
}

const char *sl_job_kinds(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, kinds_build);
    return kinds_buf;
}
