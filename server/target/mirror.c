/* SPDX-License-Identifier: MIT
 * mirror.c: n-way mirroring on one target: making, trimming and checking an
 * object's copies on other mountpaths, restoring a main replica from a copy,
 * and the two jobs that do it in the background (put-copies after PUTs,
 * make-n-copies over a bucket). See mirror.h.
 */
#include "mirror.h"
#include "bqueue.h"
#include "bg.h"
#include "cksum.h"
#include "conf.h"
#include "log.h"
#include "stats.h"
#include "node.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PC_IDLE_NS (5LL * 1000000000LL)    /* a put-copies job with nothing to do for this long ends */

static struct sl_workers wk; /* threads of this file at work, and the stop flag */

static void leave(void)
{
    sl_workers_leave(&wk);
}

void sl_mirror_quiesce(int64_t timeout_ms)
{
    sl_workers_quiesce(&wk, timeout_ms, "mirror");
}

int sl_mirror_want(const struct sl_bck *b)
{
    json_t *mi = json_object_get(b->props, "mirror");
    if (!json_is_true(json_object_get(mi, "enabled")))
        return 1;
    json_int_t n = json_integer_value(json_object_get(mi, "copies"));
    if (n == 0)
        n = 2; /* 0: the default */
    return n < 1 ? 1 : n > SL_OBJ_MAX_COPIES + 1 ? SL_OBJ_MAX_COPIES + 1 : (int)n;
}

/* ---- one copy ---- */

static bool has_copy(const struct sl_objmd *md, uint64_t d)
{
    for (int i = 0; i < md->ncopies; i++)
        if (md->copies[i] == d)
            return true;
    return false;
}

/* The bucket is still the one the object belongs to (not destroyed,
 * not re-created under the same name). */
static bool bucket_alive(const struct sl_bck *b)
{
    struct sl_bmd *bmd = sl_bmd_get();
    const struct sl_bck *k = sl_bmd_find(bmd, b->provider, b->name);
    bool ok = k && k->bid == b->bid;
    sl_bmd_put(bmd);
    return ok;
}

/* Least used mountpath that is not main and holds no copy of md (ties: HRW
 * of the object, so copies spread); NULL when none is left. */
static struct sl_mpath *pick_dest(const struct sl_mpath *main, const struct sl_objmd *md, const char *uname,
                                  size_t ulen)
{
    struct sl_mpath *best = NULL;
    double bu = 0;
    uint64_t bs = 0, d = sl_xxh64(uname, ulen, SL_MLCG32);
    for (int i = 0; i < sl_store_nmpaths(); i++) {
        struct sl_mpath *mp = sl_store_mpath(i);
        if (mp == main || has_copy(md, mp->digest) || !sl_store_mpath_usable(mp))
            continue; /* (no copy on a disabled or detached mountpath) */
        uint64_t used = 0, total = 0;
        double u = sl_store_mpath_usage(i, &used, &total) == 0 && total ? (double)used / (double)total : 1.0;
        u = (double)(int)(u * 100); /* whole percents: the same filesystem is a tie */
        if (sl_conf && sl_conf->space_oos_pct < 100 && u >= sl_conf->space_oos_pct)
            continue; /* at or above space.out_of_space: no copies there either */
        uint64_t s = sl_hrw_mix(mp->digest ^ d);
        if (!best || u < bu || (u == bu && s > bs)) {
            best = mp;
            bu = u;
            bs = s;
        }
    }
    return best;
}

/* A copy of md on cm that is there and of the right size (the checksum is
 * checked when a copy is read instead of a damaged main). */
static bool copy_present(struct sl_mpath *main, struct sl_mpath *cm, const struct sl_bck *b, const char *name,
                         size_t nlen, const struct sl_objmd *md)
{
    if (!cm || cm == main || !sl_store_mpath_usable(cm))
        return false; /* (one on a disabled mountpath is moved: dropped, and made again elsewhere) */
    struct sl_buf f;
    sl_buf_init(&f);
    sl_obj_copy_fqn(&f, cm, b, name, nlen);
    struct stat st;
    bool ok = stat(f.p, &st) == 0 && (uint64_t)st.st_size == md->size;
    sl_buf_free(&f);
    return ok;
}

/* Commit md (the caller holds the object's write lock). */
static int put_md(struct sl_mpath *mp, const struct sl_bck *b, const char *name, size_t nlen,
                  const struct sl_objmd *md, struct sl_err *err)
{
    struct sl_md_op op = { .kind = SL_MD_PUT_OBJ, .bid = b->bid, .name = name, .nlen = nlen, .md = md };
    return sl_md_commit(mp->md, &op, 1, true, err);
}

/* Remove copies beyond keep (and those on mountpaths no longer here):
 * metadata first, then the files. */
static int trim(struct sl_mpath *main, const struct sl_bck *b, const char *name, size_t nlen, int keep,
                struct sl_job *job, struct sl_err *err)
{
    pthread_rwlock_t *lk = sl_obj_lock(b, name, nlen);
    pthread_rwlock_wrlock(lk);
    struct sl_objmd md;
    int rc = sl_md_obj_get(main->md, b->bid, name, nlen, &md, err);
    if (rc <= 0) {
        pthread_rwlock_unlock(lk);
        return rc; /* gone meanwhile: nothing to do */
    }
    uint64_t drop[SL_OBJ_MAX_COPIES];
    int ndrop = 0, kept = 0;
    struct sl_objmd nm = md;
    nm.ncopies = 0;
    for (int i = 0; i < md.ncopies; i++) {
        struct sl_mpath *cm = sl_store_mpath_by_digest(md.copies[i]);
        if (copy_present(main, cm, b, name, nlen, &md) && kept < keep) {
            nm.copies[nm.ncopies++] = md.copies[i];
            kept++;
        } else {
            drop[ndrop++] = md.copies[i];
        }
    }
    rc = 0;
    if (ndrop) {
        rc = put_md(main, b, name, nlen, &nm, err);
        for (int i = 0; rc == 0 && i < ndrop; i++) {
            struct sl_mpath *cm = sl_store_mpath_by_digest(drop[i]);
            if (!cm)
                continue;
            sl_obj_copy_drop(cm, b, name, nlen);
            if (job)
                sl_job_add(&job->out_objs, 1);
        }
    }
    pthread_rwlock_unlock(lk);
    sl_objmd_free(&md);
    return rc;
}

/* Add one copy on a new mountpath: 1 added, 0 none possible (no mountpath
 * left, or the object changed or went meanwhile), -1 err. */
static int add_one(struct sl_mpath *main, const struct sl_bck *b, const char *name, size_t nlen,
                   const char *uname, size_t ulen, struct sl_job *job, struct sl_err *err)
{
    pthread_rwlock_t *lk = sl_obj_lock(b, name, nlen);
    struct sl_objmd md;
    struct sl_buf fqn;
    sl_buf_init(&fqn);
    pthread_rwlock_rdlock(lk);
    int rc = sl_md_obj_get(main->md, b->bid, name, nlen, &md, err);
    int fd = -1, oe = 0;
    if (rc == 1) {
        sl_obj_fqn(&fqn, main, b, name, nlen, md.fname);
        fd = open(fqn.p, O_RDONLY | O_CLOEXEC);
        oe = errno;
    }
    pthread_rwlock_unlock(lk);
    if (rc <= 0) {
        sl_buf_free(&fqn);
        return rc;
    }
    if (fd < 0) {
        sl_errf(err, SL_EIO, "main replica %s: %s", fqn.p, strerror(oe));
        sl_buf_free(&fqn);
        sl_objmd_free(&md);
        return -1;
    }
    struct sl_mpath *dest = pick_dest(main, &md, uname, ulen);
    if (!dest) {
        close(fd);
        sl_buf_free(&fqn);
        sl_objmd_free(&md);
        return 0;
    }
    char *work = NULL;
    rc = sl_store_copy_work(fd, &md, dest, b, &wk.stopping, &work, err);
    close(fd);
    if (rc < 0) {
        sl_buf_free(&fqn);
        sl_objmd_free(&md);
        return -1;
    }
    /* publish: the same object still, and the file complete before the metadata names it */
    pthread_rwlock_wrlock(lk);
    struct sl_objmd cur;
    int cr = sl_md_obj_get(main->md, b->bid, name, nlen, &cur, err);
    rc = 0;
    if (cr == 1 && sl_objmd_same(&cur, &md) && !has_copy(&cur, dest->digest) && cur.ncopies < SL_OBJ_MAX_COPIES &&
        bucket_alive(b)) {
        sl_obj_copy_fqn(&fqn, dest, b, name, nlen);
        if (sl_mkdir_parents(fqn.p, 0755) < 0 || rename(work, fqn.p) < 0) {
            rc = sl_errf(err, SL_EIO, "cannot move a copy into place at %s: %s", fqn.p, strerror(errno));
        } else {
            sl_fault("mirror-after-rename");
            cur.copies[cur.ncopies++] = dest->digest;
            /* the copy's own record (it outlives the main's mountpath), then the main's */
            int rr = sl_obj_copy_record(dest, b, name, nlen, &cur, true, err);
            sl_fault("mirror-after-record");
            if (rr < 0 || put_md(main, b, name, nlen, &cur, err) < 0) {
                sl_obj_copy_drop(dest, b, name, nlen);
                rc = -1;
            } else {
                rc = 1;
                if (job) {
                    sl_job_add(&job->loc_objs, 1);
                    sl_job_add(&job->loc_bytes, md.size);
                }
                sl_stats_add("mirror_copy_n", 1);
            }
        }
    }
    if (rc != 1)
        unlink(work); /* (gone when renamed) */
    pthread_rwlock_unlock(lk);
    if (cr == 1)
        sl_objmd_free(&cur);
    free(work);
    sl_buf_free(&fqn);
    sl_objmd_free(&md);
    return rc;
}

int sl_mirror_fix(const struct sl_bck *b, const char *name, size_t nlen, int want, struct sl_job *job,
                  struct sl_err *err)
{
    struct sl_buf un;
    sl_buf_init(&un);
    sl_obj_uname(&un, b->provider, b->name, name, nlen);
    struct sl_mpath *main = sl_store_pick(un.p, un.len);
    int rc = 0;
    bool restored = false;
    for (int guard = 0; main && guard < SL_OBJ_MAX_COPIES + 2; guard++) {
        struct sl_objmd md;
        int g = sl_md_obj_get(main->md, b->bid, name, nlen, &md, err);
        if (g <= 0) {
            rc = g;
            break;
        }
        int have = 0;
        bool stray = false;
        for (int i = 0; i < md.ncopies; i++) {
            if (copy_present(main, sl_store_mpath_by_digest(md.copies[i]), b, name, nlen, &md))
                have++;
            else
                stray = true; /* gone (its disk replaced?) or not a copy: dropped, then made again */
        }
        sl_objmd_free(&md);
        if (have + 1 > want || stray) {
            rc = trim(main, b, name, nlen, want - 1, job, err);
            if (rc < 0 || have + 1 >= want)
                break;
            continue;
        }
        if (have + 1 == want)
            break;
        rc = add_one(main, b, name, nlen, un.p, un.len, job, err);
        if (rc < 0 && (err->code == SL_ECKSUM || err->code == SL_EIO) && !restored) {
            /* the main replica is missing or damaged: never copy it; restore it from a copy, then go on */
            struct sl_err e2 = { 0 };
            restored = true;
            if (sl_mirror_restore(b, name, nlen, &e2) == 0) {
                rc = 0;
                continue;
            }
            if (e2.code == SL_ENOOBJ) { /* no replica was left: the object is gone */
                rc = 0;
                break;
            }
        }
        if (rc <= 0)
            break;
        rc = 0;
    }
    sl_buf_free(&un);
    return rc < 0 ? -1 : 0;
}

/* ---- restore ---- */

/* Whether the file at path holds md's bytes (size, and checksum when there
 * is one); *fd the open file when so (the caller's). */
static bool replica_ok(const char *path, const struct sl_objmd *md, int *fd)
{
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return false;
    struct stat st;
    char ck[SL_CKSUM_HEX_MAX];
    if (fstat(*fd, &st) == 0 && (uint64_t)st.st_size == md->size &&
        (md->cksum_type == SL_CK_NONE || !md->cksum[0] ||
         (sl_cksum_fd(md->cksum_type, *fd, ck) == 0 && !strcmp(ck, md->cksum))))
        return true;
    close(*fd);
    *fd = -1;
    return false;
}

int sl_mirror_restore(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err)
{
    struct sl_buf un, fqn, cf;
    sl_buf_init(&un);
    sl_buf_init(&fqn);
    sl_buf_init(&cf);
    sl_obj_uname(&un, b->provider, b->name, name, nlen);
    struct sl_mpath *main = sl_store_pick(un.p, un.len);
    sl_buf_free(&un);
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), b, name, nlen);
    if (!main)
        return sl_errf(err, SL_EUNAVAIL, "this node has no mountpaths");
    pthread_rwlock_t *lk = sl_obj_lock(b, name, nlen);
    pthread_rwlock_wrlock(lk);
    struct sl_objmd md;
    int rc = sl_md_obj_get(main->md, b->bid, name, nlen, &md, err);
    if (rc == 0) {
        /* no metadata: only copies may be left of it (its main's mountpath lost), one becomes the main */
        pthread_rwlock_unlock(lk);
        rc = sl_store_promote(b, name, nlen, NULL, err);
        if (rc == 0 && sl_md_obj_get(main->md, b->bid, name, nlen, &md, err) == 1) {
            sl_objmd_free(&md); /* (promoted by another reader, or the resilver, meanwhile) */
            rc = 1;
        }
        if (rc == 0)
            sl_errf(err, SL_ENOOBJ, "%s does not exist", cn);
        return rc > 0 ? 0 : -1;
    }
    if (rc < 0) {
        pthread_rwlock_unlock(lk);
        return -1;
    }
    sl_obj_fqn(&fqn, main, b, name, nlen, md.fname);
    int fd;
    bool main_there = access(fqn.p, F_OK) == 0;
    if (replica_ok(fqn.p, &md, &fd)) { /* repaired meanwhile, or fine after all */
        close(fd);
        pthread_rwlock_unlock(lk);
        sl_objmd_free(&md);
        sl_buf_free(&fqn);
        return 0;
    }
    /* the first intact copy restores the main; the others are checked so the bad ones can go */
    struct sl_objmd nm = md;
    nm.ncopies = 0;
    uint64_t bad[SL_OBJ_MAX_COPIES];
    int nbad = 0, nfiles = main_there ? 1 : 0;
    bool restored = false;
    for (int i = 0; i < md.ncopies; i++) {
        struct sl_mpath *cm = sl_store_mpath_by_digest(md.copies[i]);
        if (cm && cm != main) {
            sl_obj_copy_fqn(&cf, cm, b, name, nlen);
            if (access(cf.p, F_OK) == 0)
                nfiles++;
        }
        if (!cm || cm == main || !replica_ok(cf.p, &md, &fd)) {
            bad[nbad++] = md.copies[i];
            continue;
        }
        if (!restored) {
            char *work = NULL;
            struct sl_err e2 = { 0 };
            if (sl_store_copy_work(fd, &md, main, b, &wk.stopping, &work, &e2) == 0) {
                if (sl_mkdir_parents(fqn.p, 0755) == 0 && rename(work, fqn.p) == 0) {
                    restored = true;
                    sl_logw("%s: main replica %s was %s: restored from the copy on %s", cn, fqn.p,
                            main_there ? "damaged" : "missing", cm->path);
                    sl_stats_add("mirror_restore_n", 1);
                } else {
                    sl_logw("%s: cannot restore %s: %s", cn, fqn.p, strerror(errno));
                    unlink(work);
                }
                free(work);
            } else {
                sl_logw("%s: cannot restore the main replica from %s: %s", cn, cf.p, e2.msg);
            }
        }
        close(fd);
        nm.copies[nm.ncopies++] = md.copies[i];
    }
    rc = 0;
    if (restored) {
        /* bad copies go: metadata first, then their files */
        if (nbad && put_md(main, b, name, nlen, &nm, NULL) == 0) {
            for (int i = 0; i < nbad; i++) {
                struct sl_mpath *cm = sl_store_mpath_by_digest(bad[i]);
                if (!cm || cm == main)
                    continue;
                sl_obj_copy_fqn(&cf, cm, b, name, nlen);
                sl_logw("%s: mirror copy %s is missing or damaged: dropped", cn, cf.p);
                sl_obj_copy_drop(cm, b, name, nlen);
            }
        }
    } else if (nfiles == 0) {
        /* no replica left at all: the object is gone (as after a DELETE interrupted once its files went) */
        struct sl_md_op op = { .kind = SL_MD_DEL_OBJ, .bid = b->bid, .name = name, .nlen = nlen };
        sl_md_commit(main->md, &op, 1, true, NULL);
        rc = sl_errf(err, SL_ENOOBJ, "%s does not exist (its main replica and its %d mirror cop%s are missing; "
                     "the stale metadata was removed)", cn, md.ncopies, md.ncopies == 1 ? "y" : "ies");
    } else if (nm.ncopies) {
        rc = sl_errf(err, SL_EIO, "%s: the main replica %s is %s and could not be restored from its intact "
                     "cop%s (see the log)", cn, fqn.p, main_there ? "damaged" : "missing",
                     nm.ncopies == 1 ? "y" : "ies");
    } else {
        /* nothing intact: nothing is deleted either (left for inspection) */
        rc = sl_errf(err, SL_ECKSUM, "BAD DATA CHECKSUM: %s: the main replica %s is %s and none of its %d mirror "
                     "cop%s is intact; nothing was changed on disk", cn, fqn.p, main_there ? "damaged" : "missing",
                     md.ncopies, md.ncopies == 1 ? "y" : "ies");
    }
    pthread_rwlock_unlock(lk);
    if (restored && nm.ncopies + 1 < sl_mirror_want(b))
        sl_mirror_after_put(b, name, nlen); /* re-create the copies that were dropped */
    sl_objmd_free(&md);
    sl_buf_free(&fqn);
    sl_buf_free(&cf);
    return rc;
}

/* ---- put-copies: copies of new objects, one worker per target ----
 * Each PUT into a mirrored bucket queues its object; a bucket has one
 * put-copies job while it has work (and PC_IDLE_NS after), idle when its
 * queue is empty. A bucket's queue holds at most mirror.burst_buffer
 * objects: past that, the job remembers to go over the whole bucket when
 * the queue has drained (make-n-copies' walk), so a burst costs memory up
 * to the burst buffer and never loses a copy. */

static int burst_of(const struct sl_bck *b)
{
    json_int_t n = json_integer_value(json_object_get(json_object_get(b->props, "mirror"), "burst_buffer"));
    return n > 0 ? (int)n : 512;
}

static void walk_bucket(const struct sl_bck *b, int want, struct sl_job *job);

static void pc_work(const struct sl_bck *b, const char *name, size_t nlen, int op, struct sl_job *job)
{
    (void)op;
    struct sl_err err = { 0 };
    if (sl_mirror_fix(b, name, nlen, sl_mirror_want(b), job, &err) < 0 && err.code != SL_ENOOBJ) {
        char cn[400];
        sl_obj_cname(cn, sizeof(cn), b, name, nlen);
        sl_logw("put-copies %s: %s: %s", job->id, cn, err.msg);
        sl_job_add(&job->err_objs, 1);
    }
}

static void pc_rescan(const struct sl_bck *b, struct sl_job *job)
{
    sl_logi("put-copies %s: more than mirror.burst_buffer=%d objects of %s were waiting: checking the whole "
            "bucket", job->id, burst_of(b), b->name);
    walk_bucket(b, sl_mirror_want(b), job);
}

static const struct sl_bq_ops pc_ops = {
    .kind = "put-copies", .idle_ns = PC_IDLE_NS, .wk = &wk, .work = pc_work, .burst = burst_of, .rescan = pc_rescan,
};
static struct sl_bq pcq = SL_BQ_INIT(&pc_ops);

static void after_put(const struct sl_bck *b, const char *name, size_t nlen, int why)
{
    (void)why; /* a new version and a restored main alike: the copies the bucket wants */
    sl_mirror_after_put(b, name, nlen);
}

const struct sl_store_hooks sl_mirror_hooks = {
    .name = "mirror",
    .after_put = after_put,
    .quiesce = sl_mirror_quiesce, /* (its threads copy between mountpaths) */
    .restore = sl_mirror_restore,
};

void sl_mirror_after_put(const struct sl_bck *b, const char *name, size_t nlen)
{
    if (sl_mirror_want(b) <= 1 || sl_store_nmpaths() < 2)
        return;
    sl_bq_add(&pcq, b, name, nlen, 0);
}

/* ---- make-n-copies: every object of a bucket held here ---- */

struct walk {
    const struct sl_bck *b;
    int want;
    struct sl_job *job;
};

static bool walk_pick(void *arg, const struct sl_objmd *md)
{
    struct walk *w = arg;
    return md->ncopies > 0 || w->want > 1;
}

static bool walk_fix(void *arg, const char *name, size_t nlen)
{
    struct walk *w = arg;
    if (sl_job_aborting(w->job) || wk.stopping)
        return true;
    struct sl_err e = { 0 };
    if (sl_mirror_fix(w->b, name, nlen, w->want, w->job, &e) < 0 && e.code != SL_ENOOBJ) {
        sl_logw("%s %s: %s/%.*s: %s", w->job->kind, w->job->id, w->b->name, (int)SL_MIN(nlen, 200), name, e.msg);
        sl_job_add(&w->job->err_objs, 1);
    }
    return false;
}

/* Objects of b whose main replica is on each mountpath (in batches: no
 * read transaction is held while copying). */
static void walk_bucket(const struct sl_bck *b, int want, struct sl_job *job)
{
    struct walk w = { b, want, job };
    for (int m = 0; m < sl_store_nmpaths() && !sl_job_aborting(job) && !wk.stopping; m++) {
        struct sl_mpath *mp = sl_store_mpath(m);
        struct sl_err err = { 0 };
        if (sl_store_walk(mp, b, walk_pick, walk_fix, &w, &err) < 0)
            sl_logw("%s %s: %s on %s: %s", job->kind, job->id, b->name, mp->path, err.msg);
    }
}

struct mnc {
    char id[64];
    char prov[8];
    char bname[SL_MAX_BCKNAME + 1];
    int copies;
    struct sl_job *job;
};

static void *mnc_thread(void *arg)
{
    struct mnc *q = arg;
    struct sl_job *job = q->job;
    if (!sl_workers_enter_job(&wk, job)) {
        free(q);
        return NULL;
    }
    struct sl_bck b;
    bool found = sl_bmd_copy(q->prov, q->bname, &b);
    char why[300] = "";
    if (!found) {
        snprintf(why, sizeof(why), "t[%s]: bucket %s://%s does not exist here", G.id, sl_provider_scheme(q->prov),
                 q->bname);
    } else {
        sl_logi("make-n-copies %s: %s://%s: %d replica(s) of each object on %d mountpath(s)", job->id,
                sl_provider_scheme(q->prov), q->bname, q->copies, sl_store_nmpaths());
        walk_bucket(&b, q->copies, job);
        sl_bck_release(&b);
        sl_logi("make-n-copies %s: done: %llu copies made, %llu removed, %llu error(s)%s", job->id,
                (unsigned long long)job->loc_objs, (unsigned long long)job->out_objs,
                (unsigned long long)job->err_objs, sl_job_aborting(job) ? " (aborted)" : "");
    }
    if (why[0])
        sl_job_fail(job, why);
    else
        sl_job_finish(job, sl_job_aborting(job) || wk.stopping ? "aborted" : NULL);
    sl_job_put(job);
    free(q);
    leave();
    return NULL;
}

int sl_mirror_start(const char *id, const char *prov, const char *bname, int copies, struct sl_err *err)
{
    if (copies < 1 || copies > SL_OBJ_MAX_COPIES + 1)
        return sl_errf(err, SL_EINVAL, "make-n-copies: %d copies: valid 1-%d", copies, SL_OBJ_MAX_COPIES + 1);
    if (!sl_store_nmpaths())
        return sl_errf(err, SL_EUNAVAIL, "t[%s] has no mountpaths", G.id);
    /* a newer run on the bucket replaces an older one */
    json_t *running = sl_jobs_snaps(NULL, "make-n-copies", true);
    size_t i;
    json_t *s;
    json_array_foreach(running, i, s) {
        const char *bn = json_string_value(json_object_get(json_object_get(s, "bck"), "name"));
        const char *jid = json_string_value(json_object_get(s, "id"));
        if (bn && jid && !strcmp(bn, bname) && strcmp(jid, id))
            sl_job_abort(jid, NULL);
    }
    json_decref(running);
    struct mnc *q = sl_xcalloc(1, sizeof(*q));
    snprintf(q->id, sizeof(q->id), "%s", id);
    snprintf(q->prov, sizeof(q->prov), "%s", prov);
    snprintf(q->bname, sizeof(q->bname), "%s", bname);
    q->copies = copies;
    q->job = sl_job_start("make-n-copies", id, bname, "");
    sl_run_detached(mnc_thread, q);
    return 0;
}
