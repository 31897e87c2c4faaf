/* SPDX-License-Identifier: MIT
 * scrub.c: job scrub, every object's bytes checked against its checksum,
 * on every target, in the background:
 *
 *   PUT /v1/cluster {"action": "start", "value": {"Kind": "scrub"[, "Buckets": [Bck...] | "Bck": Bck]
 *                                                 [, "Fix": true]}}  -> job id (text)
 *
 * Each target walks the objects recorded on its mountpaths (every bucket,
 * or those named) and looks at each one without changing anything (as
 * AIStore's `ais storage validate` / `ais scrub` report): the file the size
 * its metadata says, its bytes against its checksum, recorded as damaged,
 * a mirrored object's main replica missing or damaged, fewer mirror copies
 * than the bucket wants (or a recorded copy's file gone), the object on a
 * mountpath that is not its HRW one (misplaced). In an erasure-coded
 * bucket the slices and replicas held here are checked too, against their
 * own checksums (ec.c sl_ec_scrub_slices).
 *
 * Without Fix that is all: the problems are counted and listed. With Fix
 * each damaged object is repaired as a GET with validate-checksum would
 * (read.c, SL_READ_VALIDATE): a mirrored one restored from a good copy, an
 * erasure-coded one rebuilt from its slices, a remote-backed one fetched
 * again; in any other bucket it stays, recorded as damaged, so that the
 * next read is refused rather than served. Missing copies are made again
 * (sl_mirror_fix), a misplaced object is moved to its mountpath
 * (sl_store_move), a damaged slice's object encoded again by its main
 * target. Each object is then looked at again: FIXED says whether it is
 * whole now.
 *
 * The job's ext holds the first SCRUB_LIST_MAX damaged objects of this
 * target, {"damaged": [{"obj", "problem", "fixed"}], "damaged_n", "fix"},
 * for the CLI's OBJECT | PROBLEM | FIXED table. Stats: loc-objs / loc-bytes
 * objects checked, out-objs slices checked, in-objs repaired, err-objs
 * damaged objects left as they are (detect-only: every one found) and
 * damaged slices. One run per target at a time.
 *
 * scrub.interval (0: off) makes each target start a run over every bucket
 * by itself that long after its last one started (detect-only).
 */
#include "scrub.h"
#include "bcklist.h"
#include "bg.h"
#include "cluster.h"
#include "conf.h"
#include "ec.h"
#include "jsonx.h"
#include "log.h"
#include "mirror.h"
#include "node.h"
#include "read.h"
#include "store.h"
#include "xact.h"

#include <sys/stat.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SCRUB_LIST_MAX 1000 /* damaged objects listed in the job's status, per target */

struct walk {
    struct sl_job *job;
    const struct sl_bck *b;
    struct sl_mpath *mp;  /* the mountpath being walked */
    bool fix;
    json_t *list;         /* [{"obj", "problem", "fixed"}] */
    uint64_t ndamaged;
    int64_t last_ext;     /* sl_mono_ns() of the last status update */
};

/* the list into the job's status (now and then while it runs, and at the end) */
static void publish(struct walk *w, bool now)
{
    if (!now && sl_mono_ns() - w->last_ext < 500000000LL)
        return;
    w->last_ext = sl_mono_ns();
    sl_job_set_ext(w->job, json_pack("{s:O,s:I,s:b,s:i}", "damaged", w->list, "damaged_n", (json_int_t)w->ndamaged,
                                     "fix", w->fix, "max", SCRUB_LIST_MAX));
}

static void report(void *arg, const char *cname, const char *problem, bool fixed)
{
    struct walk *w = arg;
    w->ndamaged++;
    if (json_array_size(w->list) < SCRUB_LIST_MAX)
        json_array_append_new(w->list, json_pack("{s:s,s:s,s:b}", "obj", cname, "problem", problem, "fixed", fixed));
    publish(w, false);
}

enum { P_DATA = 1, P_COPIES = 2, P_PLACE = 4 };

static void add_why(char *why, size_t n, const char *fmt, ...) SL_PRINTF(3, 4);
static void add_why(char *why, size_t n, const char *fmt, ...)
{
    size_t l = strlen(why);
    if (l && l + 2 < n) {
        snprintf(why + l, n - l, "; ");
        l += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why + l, n - l, fmt, ap);
    va_end(ap);
}

/* What is wrong with b/name (recorded on mp) here, changing nothing: a mask
 * of P_* (0: nothing) and why; -1 gone meanwhile (or unreadable: err). */
static int inspect(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath *mp, uint64_t *size,
                   char *why, size_t n, struct sl_err *err)
{
    why[0] = '\0';
    int fd = -1;
    struct sl_objmd md;
    struct sl_mpath *at = NULL;
    int rc = sl_obj_open_ex(b, name, nlen, SL_OPEN_VALIDATE | SL_OPEN_DEFER, &fd, &md, &at, err);
    if (rc == 1) {
        add_why(why, n, "main replica missing or damaged (a mirror copy is left)");
        return P_DATA;
    }
    if (rc < 0)
        return -1;
    int bad = 0;
    *size = md.size;
    const char *rec = sl_objmd_get_custom(&md, SL_DAMAGED_KEY);
    struct stat st;
    if (rec) {
        add_why(why, n, "recorded as damaged (%s)", rec);
        bad |= P_DATA;
    } else if (fstat(fd, &st) == 0 && (uint64_t)st.st_size != md.size) {
        add_why(why, n, "size mismatch (the file has %llu bytes, the metadata %llu)", (unsigned long long)st.st_size,
                (unsigned long long)md.size);
        bad |= P_DATA;
    } else if (md.ncopies == 0 && md.cksum_type != SL_CK_NONE && md.cksum[0]) {
        /* (a mirrored main replica was checked by the store's open) */
        char ck[SL_CKSUM_HEX_MAX] = "";
        if (sl_cksum_fd(md.cksum_type, fd, ck) < 0 || strcmp(ck, md.cksum)) {
            add_why(why, n, "checksum mismatch (stored %s(%s), the data hashes to %s)", sl_cksum_name(md.cksum_type),
                    md.cksum, ck[0] ? ck : "an unreadable file");
            bad |= P_DATA;
        }
    }
    close(fd);
    int want = sl_mirror_want(b), have = 1;
    for (int i = 0; i < md.ncopies; i++) {
        struct sl_mpath *cm = sl_store_mpath_by_digest(md.copies[i]);
        struct sl_buf f;
        sl_buf_init(&f);
        if (cm)
            sl_obj_copy_fqn(&f, cm, b, name, nlen);
        if (cm && stat(f.p, &st) == 0 && (uint64_t)st.st_size == md.size)
            have++;
        else if (!(bad & P_COPIES)) {
            add_why(why, n, "missing copy (%s)", cm ? cm->path : "its mountpath is gone");
            bad |= P_COPIES;
        }
        sl_buf_free(&f);
    }
    if (have < want && !(bad & P_COPIES) && have - 1 == md.ncopies) {
        add_why(why, n, "missing copy (%d of %d replicas)", have, want);
        bad |= P_COPIES;
    }
    struct sl_buf un;
    sl_buf_init(&un);
    sl_obj_uname(&un, b->provider, b->name, name, nlen);
    struct sl_mpath *hrw = sl_store_pick(un.p, un.len);
    sl_buf_free(&un);
    if (hrw && mp != hrw) {
        add_why(why, n, "misplaced (on %s, its mountpath is %s)", mp->path, hrw->path);
        bad |= P_PLACE;
    }
    sl_objmd_free(&md);
    return bad;
}

/* --fix: what the problems in bad call for (each best effort; the caller
 * looks again) */
static void repair(struct walk *w, const char *name, size_t nlen, int bad)
{
    struct sl_err err = { 0 };
    if (bad & P_DATA) {
        struct sl_read rd;
        if (sl_read_open(w->b, name, nlen, SL_READ_VALIDATE | SL_READ_RAW, NULL, &rd, &err) == 0)
            sl_read_done(&rd);
        memset(&err, 0, sizeof(err));
    }
    if (bad & P_PLACE) {
        uint64_t bytes = 0;
        if (sl_store_move(w->b, name, nlen, w->mp, &bytes, &err) < 0)
            sl_logw("scrub %s: %s", w->job->id, err.msg);
        memset(&err, 0, sizeof(err));
    }
    if (bad & P_COPIES) {
        if (sl_mirror_fix(w->b, name, nlen, sl_mirror_want(w->b), NULL, &err) < 0)
            sl_logw("scrub %s: %s", w->job->id, err.msg);
    }
}

static bool check_one(void *arg, const char *name, size_t nlen)
{
    struct walk *w = arg;
    if (sl_job_aborting(w->job) || sl_bg_stopping())
        return true;
    char why[1024], cn[400];
    uint64_t size = 0;
    struct sl_err err = { 0 };
    int bad = inspect(w->b, name, nlen, w->mp, &size, why, sizeof(why), &err);
    if (bad < 0) {
        if (err.code != SL_ENOOBJ) /* (deleted meanwhile: nothing to check) */
            sl_logw("scrub %s: %s", w->job->id, err.msg);
        return false;
    }
    sl_job_add(&w->job->loc_objs, 1);
    sl_job_add(&w->job->loc_bytes, size);
    if (!bad)
        return false;
    sl_obj_cname(cn, sizeof(cn), w->b, name, nlen);
    bool fixed = false;
    if (w->fix) {
        repair(w, name, nlen, bad);
        char again[1024];
        struct sl_err e2 = { 0 };
        struct sl_mpath *now = NULL;
        /* (moved: it is recorded on its HRW mountpath now) */
        if (bad & P_PLACE) {
            struct sl_buf un;
            sl_buf_init(&un);
            sl_obj_uname(&un, w->b->provider, w->b->name, name, nlen);
            now = sl_store_pick(un.p, un.len);
            sl_buf_free(&un);
        }
        fixed = inspect(w->b, name, nlen, now ? now : w->mp, &size, again, sizeof(again), &e2) == 0;
        if (fixed)
            sl_job_add(&w->job->in_objs, 1);
    }
    if (!fixed)
        sl_job_add(&w->job->err_objs, 1);
    sl_logw("scrub %s: %s: %s%s", w->job->id, cn, why, !w->fix ? " (left as it is: scrub without fix)"
                                                      : fixed ? " (fixed)" : " (not fixed)");
    report(w, cn, why, fixed);
    return false;
}

static void scrub_run(struct sl_job *job, const struct sl_bljob_req *q)
{
    struct sl_bmd *bmd = sl_bmd_get();
    int64_t t0 = sl_mono_ns();
    struct walk w = { .job = job, .fix = q->fix, .list = json_array() };
    for (int k = 0; k < bmd->n && !sl_job_aborting(job); k++) {
        const struct sl_bck *b = &bmd->bcks[k];
        if (!sl_bcklist_has(q->bcks, b))
            continue;
        w.b = b;
        for (int i = 0; i < sl_store_nmpaths() && !sl_job_aborting(job); i++) {
            struct sl_err err = { 0 };
            w.mp = sl_store_mpath(i);
            if (sl_store_walk(w.mp, b, NULL, check_one, &w, &err) < 0)
                sl_logw("scrub %s: %s://%s on %s: %s", job->id, sl_provider_scheme(b->provider), b->name,
                        w.mp->path, err.msg);
        }
        /* (the slices and replicas held here, of an erasure-coded bucket) */
        sl_ec_scrub_slices(b, job, q->fix, report, &w);
    }
    sl_bmd_put(bmd);
    publish(&w, true);
    json_decref(w.list);
    sl_logi("scrub %s%s: %llu object(s) checked (%llu bytes) and %llu EC slice(s) in %.1f s: %llu damaged left, "
            "%llu repaired", job->id, q->fix ? " (fix)" : "", (unsigned long long)__atomic_load_n(&job->loc_objs, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(&job->loc_bytes, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(&job->out_objs, __ATOMIC_RELAXED), (double)(sl_mono_ns() - t0) / 1e9,
            (unsigned long long)__atomic_load_n(&job->err_objs, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(&job->in_objs, __ATOMIC_RELAXED));
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

static int64_t interval(void)
{
    return sl_conf->scrub_interval_ns;
}

static void scrub_start(void)
{
    sl_bljob_every(&scrub_job, interval, "scrub.interval");
}

const struct sl_module sl_scrub_module = {
    .name = "scrub",
    .internal = scrub_internal,
    .cluster_start = scrub_cluster_start,
    .start_kinds = ", scrub",
    .start = scrub_start,
};
