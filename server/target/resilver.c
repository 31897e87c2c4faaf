/* SPDX-License-Identifier: MIT
 * resilver.c: job resilver on a target. It walks the metadata of every
 * mountpath, bucket by bucket: an object recorded on a mountpath that is
 * not its HRW one is moved there (sl_store_move: copy and fsync, commit the
 * metadata there, then remove the old; a crash loses nothing), and each
 * object of a mirrored bucket gets mirror.copies replicas again
 * (sl_mirror_fix), which also re-makes a copy whose file was lost. Reads
 * find an object wherever it is meanwhile (store.c looks on the other
 * mountpaths when the HRW one misses). Before that, an object whose main
 * replica's mountpath was lost with its metadata gets one from a mirror
 * copy, whose record says what the object is (sl_store_promote).
 *
 * Stats: in-objs/in-bytes the objects moved (or promoted), loc-objs/
 * loc-bytes the mirror copies made, out-objs the copies removed, err-objs
 * the objects that failed (each logged). A run that completes without errors clears the
 * pending mark in the node metadata (sl_store_resilvered); an aborted,
 * failed or interrupted one leaves it, so the next start runs again.
 */
#include "resilver.h"
#include "bg.h"
#include "log.h"
#include "mirror.h"
#include "node.h"
#include "store.h"
#include "xact.h"

#include <pthread.h>
#include <stdio.h>

static struct sl_workers wk;
static pthread_mutex_t run_mu = PTHREAD_MUTEX_INITIALIZER; /* held by the run that walks */

void sl_resilver_quiesce(int64_t timeout_ms)
{
    sl_workers_quiesce(&wk, timeout_ms, "resilver");
}

const struct sl_store_hooks sl_resilver_hooks = {
    .name = "resilver",
    .quiesce = sl_resilver_quiesce, /* (it moves objects between mountpaths) */
};

struct visit {
    struct sl_job *job;
    const struct sl_bck *b;
    struct sl_mpath *mp;
    int want;                   /* replicas of the bucket's objects */
    bool promote;               /* walking the copies' records */
};

static bool stopping(const struct sl_job *job)
{
    return sl_job_aborting(job) || wk.stopping;
}

static void failed(struct visit *v, const char *name, size_t nlen, const struct sl_err *e)
{
    sl_logw("resilver %s: %s://%s/%.*s on %s: %s", v->job->id, sl_provider_scheme(v->b->provider), v->b->name,
            (int)SL_MIN(nlen, 200), name, v->mp->path, e->msg);
    sl_job_add(&v->job->err_objs, 1);
}

/* What came of moving (or promoting) one object: counted, or logged. */
static void tally(struct visit *v, const char *name, size_t nlen, int rc, uint64_t bytes, const struct sl_err *e)
{
    if (rc < 0)
        failed(v, name, nlen, e);
    if (rc == 1) {
        sl_job_add(&v->job->in_objs, 1);
        sl_job_add(&v->job->in_bytes, bytes);
    }
}

/* One object: moved to its HRW mountpath and given its copies, or (when
 * v->promote: it has a copy's record on v->mp but no metadata anywhere, its
 * main's mountpath lost) its copy made the main replica. */
static bool visit_obj(void *arg, const char *name, size_t nlen)
{
    struct visit *v = arg;
    if (stopping(v->job))
        return true;
    struct sl_err e = { 0 };
    uint64_t bytes = 0;
    if (v->promote) {
        tally(v, name, nlen, sl_store_promote(v->b, name, nlen, &bytes, &e), bytes, &e);
        return false;
    }
    int rc = sl_store_move(v->b, name, nlen, v->mp, &bytes, &e);
    tally(v, name, nlen, rc, bytes, &e);
    if (rc >= 0 && v->want > 1 && sl_mirror_fix(v->b, name, nlen, v->want, v->job, &e) < 0 && e.code != SL_ENOOBJ)
        failed(v, name, nlen, &e);
    return false;
}

/* every object of every bucket recorded on mp (promote: whose copy's
 * record is on mp) */
static void walk_mpath(struct sl_job *job, const struct sl_bmd *bmd, struct sl_mpath *mp, bool promote)
{
    for (int i = 0; i < bmd->n && !stopping(job); i++) {
        struct visit v = { .job = job, .b = &bmd->bcks[i], .mp = mp, .want = sl_mirror_want(&bmd->bcks[i]),
                           .promote = promote };
        struct sl_err err = { 0 };
        if ((promote ? sl_store_walk_copies(mp, v.b, visit_obj, &v, &err)
                     : sl_store_walk(mp, v.b, NULL, visit_obj, &v, &err)) < 0) {
            sl_logw("resilver %s: %s on %s: %s", job->id, v.b->name, mp->path, err.msg);
            sl_job_add(&job->err_objs, 1);
        }
    }
}

/* The mountpaths that were removed first (while their directories can
 * still be read, their objects are moved off them), then the others. */
static void walk_all(struct sl_job *job)
{
    struct sl_bmd *bmd = sl_bmd_get();
    json_t *removed = sl_store_resilver_removed(), *p;
    size_t i;
    json_array_foreach(removed, i, p) {
        struct sl_err err = { 0 };
        struct sl_mpath *mp = sl_store_detached_open(json_string_value(p), &err);
        if (!mp) {
            sl_logw("resilver %s: removed mountpath %s cannot be read (%s): the objects whose main replica was "
                    "there get one from their mirror copies (from other targets' EC slices otherwise)",
                    job->id, json_string_value(p), err.msg);
            continue;
        }
        sl_logi("resilver %s: moving the objects off removed mountpath %s", job->id, mp->path);
        walk_mpath(job, bmd, mp, false);
        sl_store_detached_close(mp);
    }
    json_decref(removed);
    /* objects of which only mirror copies are left get a main replica first: the walk below then gives
     * them their copies back */
    for (int m = 0; m < sl_store_nmpaths() && !stopping(job); m++)
        if (!sl_store_mpath_gone(sl_store_mpath(m)))
            walk_mpath(job, bmd, sl_store_mpath(m), true);
    /* the disabled ones first: they are to be emptied; then the others (disabled ones again, for what a
     * PUT placed before the change committed there meanwhile) */
    for (int pass = 0; pass < 2; pass++)
        for (int m = 0; m < sl_store_nmpaths() && !stopping(job); m++) {
            struct sl_mpath *mp = sl_store_mpath(m);
            if (!sl_store_mpath_gone(mp) && (pass == 1 || !sl_store_mpath_usable(mp)))
                walk_mpath(job, bmd, mp, false);
        }
    sl_bmd_put(bmd);
}

static bool any_obj(void *arg, const char *name, size_t nlen)
{
    (void)name;
    (void)nlen;
    *(bool *)arg = true;
    return true;
}

/* After a complete run: a mountpath being detached that holds no object
 * (nor a copy's record) of any bucket any more is forgotten. */
static void forget_detached(struct sl_job *job)
{
    struct sl_bmd *bmd = sl_bmd_get();
    for (int m = 0; m < sl_store_nmpaths(); m++) {
        struct sl_mpath *mp = sl_store_mpath(m);
        if (!__atomic_load_n(&mp->detaching, __ATOMIC_ACQUIRE) || sl_store_mpath_gone(mp))
            continue;
        bool some = false;
        for (int i = 0; i < bmd->n && !some; i++) {
            struct sl_err err = { 0 };
            if (sl_store_walk(mp, &bmd->bcks[i], NULL, any_obj, &some, &err) < 0 ||
                sl_store_walk_copies(mp, &bmd->bcks[i], any_obj, &some, &err) < 0)
                some = true;
        }
        if (some)
            sl_logw("resilver %s: mountpath %s being detached still holds objects (written to it while the resilver "
                    "ran?): kept until a resilver leaves nothing there (`shale storage resilver`)", job->id,
                    mp->path);
        else
            sl_store_mpath_forget(mp);
    }
    sl_bmd_put(bmd);
}

static void *run(void *arg)
{
    struct sl_job *job = arg;
    if (!sl_workers_enter(&wk)) {
        sl_job_finish(job, "aborted: the target is shutting down");
        sl_job_put(job);
        return NULL;
    }
    pthread_mutex_lock(&run_mu); /* (a preempted run ends first) */
    int64_t t0 = sl_mono_ns();
    if (!stopping(job)) {
        sl_logi("resilver %s: %d mountpath(s): moving objects to their mountpaths, restoring mirror copies", job->id,
                sl_store_nmpaths());
        walk_all(job);
    }
    bool complete = !stopping(job) && !job->err_objs;
    if (complete) {
        sl_store_resilvered();
        forget_detached(job);
    }
    sl_logi("resilver %s: %s: %llu object(s) (%llu bytes) moved, %llu mirror cop%s made, %llu removed, %llu "
            "error(s) in %.1f s", job->id, complete ? "done" : stopping(job) ? "aborted" : "incomplete",
            (unsigned long long)job->in_objs, (unsigned long long)job->in_bytes, (unsigned long long)job->loc_objs,
            job->loc_objs == 1 ? "y" : "ies", (unsigned long long)job->out_objs, (unsigned long long)job->err_objs,
            (double)(sl_mono_ns() - t0) / 1e9);
    if (stopping(job)) {
        sl_job_finish(job, "aborted");
    } else if (job->err_objs) {
        char why[300];
        snprintf(why, sizeof(why), "t[%s]: %llu object(s) could not be moved or mirrored (see the target's log); "
                 "fix the cause and run `shale storage resilver` again", G.id, (unsigned long long)job->err_objs);
        sl_job_fail(job, why);
    } else {
        sl_job_finish(job, NULL);
    }
    pthread_mutex_unlock(&run_mu);
    sl_job_put(job);
    sl_workers_leave(&wk);
    return NULL;
}

int sl_resilver_start(const char *id, char *out, size_t osz, struct sl_err *err)
{
    if (!sl_store_nmpaths())
        return sl_errf(err, SL_EUNAVAIL, "t[%s] has no mountpaths: nothing to resilver", G.id);
    if (wk.stopping)
        return sl_errf(err, SL_EUNAVAIL, "t[%s] is shutting down: resilver not started", G.id);
    int n = sl_job_abort(NULL, "resilver"); /* the newest run preempts */
    struct sl_job *job = sl_job_start("resilver", id, "", "");
    if (n)
        sl_logi("resilver %s: preempts the run that was going", job->id);
    if (out)
        snprintf(out, osz, "%s", job->id);
    sl_run_detached(run, job);
    return 0;
}
