/* SPDX-License-Identifier: MIT
 * lifecycle.c: job lifecycle, S3's bucket lifecycle rules applied (the
 * rules are the bucket's props "lifecycle", set by PUT ?lifecycle,
 * server/api/s3life.c):
 *
 *   PUT /v1/cluster {"action": "start", "value": {"Kind": "lifecycle"[, "Buckets": [Bck...] | "Bck": Bck]}}
 *                                                                       -> job id (text)
 *
 * Each target walks the objects it owns (HRW) of every bucket that has
 * rules (or of those named) and deletes, as a DELETE would, each one that
 * an Enabled rule expires: its filter matches (prefix of the name, every
 * tag of the rule among the object's "s3.tag.N", size strictly above
 * ObjectSizeGreaterThan and below ObjectSizeLessThan) and either now is at
 * or past its Expiration Date, or its Expiration Days have passed since
 * its last write (mtime; as in S3, rounded up to the next midnight UTC).
 * Its own S3 multipart uploads of the bucket whose key matches a rule's
 * prefix and that were initiated more than DaysAfterInitiation ago are
 * aborted. Expiration acts on current objects only (never on the older S3
 * versions and delete markers, KEY\x01SUFFIX). NoncurrentVersionExpiration
 * removes an older version (or a delete marker that is not the key's
 * latest) NoncurrentDays after it became noncurrent -- the mtime of the
 * version just newer than it, which replaced it (rounded up to midnight
 * UTC) -- unless it is among the NewerNoncurrentVersions newest noncurrent
 * versions of its key; the filter's prefix is the key's, its size and tags
 * the version's. ExpiredObjectDeleteMarker removes a delete marker that is
 * all that is left of its key (also when this run removed the rest).
 * Remote buckets are skipped (an expiry would have to delete at the
 * remote). Stats: loc-objs / loc-bytes the objects, versions and markers
 * deleted, out-objs the uploads aborted. One run per target at a time.
 *
 * lifecycle.interval (default 1h, 0s: off) makes each target start a run
 * over every bucket by itself that long after its last one started.
 * lifecycle.debug_days_offset (tests only: refused and ignored unless the
 * node runs with SHALE_TEST_CLOCK=1) adds that many days to "now".
 */
#include "lifecycle.h"
#include "bcklist.h"
#include "backend.h"
#include "bg.h"
#include "cluster.h"
#include "conf.h"
#include "ec.h"
#include "log.h"
#include "node.h"
#include "s3obj.h"
#include "store.h"
#include "xact.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "md.h"

#define DAY_S 86400LL

/* "now" for the rules: unix s, the test clock's days added where allowed */
static int64_t lc_now_s(void)
{
    int64_t now = sl_now_ns() / 1000000000LL;
    if (sl_conf->lifecycle_days_offset && sl_test_clock_allowed())
        now += (int64_t)sl_conf->lifecycle_days_offset * DAY_S;
    return now;
}

/* one Enabled rule, as the job reads it */
struct lrule {
    const char *prefix;         /* "" all */
    size_t plen;
    json_t *tags;               /* {K: V} or NULL */
    int64_t gt, lt;             /* -1: none */
    int64_t days, date;         /* Expiration: 0 none */
    int64_t abort_days;         /* AbortIncompleteMultipartUpload: 0 none */
    int64_t nc_days, nc_newer;  /* NoncurrentVersionExpiration: 0 none; NewerNoncurrentVersions, 0 none */
    bool eodm;                  /* Expiration ExpiredObjectDeleteMarker true */
};

struct lset {
    json_t *doc;
    struct lrule *r;
    int n;
    bool expires, aborts, versions;
};

static int64_t jint(const json_t *o, const char *k, int64_t dflt)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

/* b's Enabled rules; false when it has none */
static bool lset_load(const struct sl_bck *b, struct lset *s)
{
    memset(s, 0, sizeof(*s));
    const char *js = json_string_value(json_object_get(b->props, "lifecycle"));
    if (!js || !*js || !(s->doc = json_loads(js, 0, NULL)))
        return false;
    json_t *rules = json_object_get(s->doc, "rules");
    s->r = sl_xcalloc(json_array_size(rules) + 1, sizeof(*s->r));
    size_t i;
    json_t *o;
    json_array_foreach(rules, i, o) {
        if (strcmp(json_string_value(json_object_get(o, "status")) ?: "", "Enabled"))
            continue;
        json_t *f = json_object_get(o, "filter"), *e = json_object_get(o, "expiration");
        struct lrule *u = &s->r[s->n];
        u->prefix = json_string_value(json_object_get(f, "prefix")) ?: "";
        u->plen = strlen(u->prefix);
        u->tags = json_object_size(json_object_get(f, "tags")) ? json_object_get(f, "tags") : NULL;
        u->gt = jint(f, "gt", -1);
        u->lt = jint(f, "lt", -1);
        u->days = jint(e, "days", 0);
        u->date = json_object_get(e, "date") ? jint(e, "at", 0) : 0;
        u->abort_days = jint(json_object_get(o, "abort_incomplete_multipart_upload"), "days_after_initiation", 0);
        json_t *nv = json_object_get(o, "noncurrent_version_expiration");
        u->nc_days = jint(nv, "noncurrent_days", 0);
        u->nc_newer = jint(nv, "newer_noncurrent_versions", 0);
        u->eodm = json_is_true(json_object_get(e, "expired_object_delete_marker"));
        if (!u->days && !u->date && !u->abort_days && u->nc_days <= 0 && !u->eodm)
            continue;
        s->expires |= u->days || u->date;
        s->aborts |= u->abort_days > 0;
        s->versions |= u->nc_days > 0 || u->eodm;
        s->n++;
    }
    return s->n > 0;
}

static void lset_free(struct lset *s)
{
    free(s->r);
    json_decref(s->doc);
}

static bool tags_match(const json_t *want, const struct sl_objmd *md)
{
    struct kvs t = { 0 };
    s3_tags_of_md(md, &t);
    bool ok = true;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)want, k, v) {
        bool found = false;
        for (int i = 0; i < t.n && !found; i++)
            found = !strcmp(t.kv[i].k, k) && !strcmp(t.kv[i].v, json_string_value(v));
        if (!found) {
            ok = false;
            break;
        }
    }
    s3_kv_free(&t);
    return ok;
}

/* whether a rule of s expires object name (md) at now (unix s) */
static bool expired(const struct lset *s, const char *name, size_t nlen, const struct sl_objmd *md, int64_t now)
{
    for (int i = 0; i < s->n; i++) {
        const struct lrule *u = &s->r[i];
        if (!u->days && !u->date)
            continue;
        if (u->plen > nlen || memcmp(name, u->prefix, u->plen))
            continue;
        if ((u->gt >= 0 && (int64_t)md->size <= u->gt) || (u->lt >= 0 && (int64_t)md->size >= u->lt))
            continue;
        if (u->date) {
            if (now < u->date)
                continue;
        } else {
            int64_t at = md->mtime / 1000000000LL + u->days * DAY_S;
            at = (at + DAY_S - 1) / DAY_S * DAY_S; /* S3: the next midnight UTC */
            if (now < at)
                continue;
        }
        if (u->tags && !tags_match(u->tags, md))
            continue;
        return true;
    }
    return false;
}

struct cand {
    char *name;
    size_t nlen;
    int64_t mtime;
    uint64_t size;
};

/* the expired objects of b on mp that this target owns, deleted */
static void expire_mpath(struct sl_job *job, const struct sl_bck *b, const struct lset *s, struct sl_mpath *mp,
                         int64_t now)
{
    struct sl_md_iter *it;
    struct sl_err err = { 0 };
    if (sl_md_iter_open(mp->md, b->bid, "", 0, NULL, 0, &it, &err) < 0) {
        sl_logw("lifecycle %s: %s on %s: %s", job->id, b->name, mp->path, err.msg);
        return;
    }
    struct sl_smap *smap = sl_smap_get();
    struct cand *c = NULL;
    size_t n = 0, cap = 0;
    while (!sl_job_aborting(job) && sl_md_iter_next(it) == 1) {
        size_t nl;
        const char *nm = sl_md_iter_name(it, &nl);
        const struct sl_objmd *md = sl_md_iter_md(it);
        if (sl_objname_vkey(nm, nl) != nl)
            continue; /* an older S3 version or a delete marker: Expiration acts on current objects only */
        if (!expired(s, nm, nl, md, now) || !sl_obj_owned_here(smap, b, nm, nl))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            c = sl_xrealloc(c, cap * sizeof(*c));
        }
        c[n++] = (struct cand){ sl_xstrndup(nm, nl), nl, md->mtime, md->size };
    }
    sl_md_iter_close(it);
    sl_smap_put(smap);
    for (size_t j = 0; j < n; j++) {
        if (!sl_job_aborting(job) && !sl_bg_stopping()) {
            struct sl_err e2 = { 0 };
            bool dm;
            char vid[24];
            /* a locked version does not expire (s3lock.c); one written since is kept; in a versioned bucket
             * a delete marker goes on top, the object noncurrent (NoncurrentVersionExpiration's then) */
            int rc = s3_lock_check_name(b, c[j].name, c[j].nlen, false, &e2) < 0
                     ? 1 : sl_obj_delete_cur(b, c[j].name, c[j].nlen, c[j].mtime, &dm, vid, &e2);
            if (rc == 0) {
                sl_ec_after_delete(b, c[j].name, c[j].nlen);
                sl_job_add(&job->loc_objs, 1);
                sl_job_add(&job->loc_bytes, c[j].size);
            } else if (rc < 0 && e2.code != SL_ENOOBJ) {
                sl_logw("lifecycle %s: expiring %s/%.*s: %s", job->id, b->name, (int)SL_MIN(c[j].nlen, 200),
                        c[j].name, e2.msg);
            }
        }
        free(c[j].name);
    }
    free(c);
}

/* ---- S3 versions: NoncurrentVersionExpiration, ExpiredObjectDeleteMarker ----
 * A key's versions are, in name order, the current object KEY (if any) then
 * its archives KEY\x01SUFFIX newest first (store_ver.c), all on KEY's
 * mountpath: one walk sees each key's versions in a row. A version became
 * noncurrent when the one just newer than it was written: that one's mtime
 * (the current object's for the newest archive). With no current object the
 * newest archive is the key's current state (a delete marker, as S3 has it)
 * and the archives below it are the noncurrent ones. */

/* whether a NoncurrentVersionExpiration of s removes version (key, md),
 * noncurrent since `since` (unix ns), with `newer` noncurrent versions of
 * its key newer than it */
static bool nc_expired(const struct lset *s, const char *key, size_t klen, const struct sl_objmd *md, int64_t since,
                       int64_t newer, int64_t now)
{
    for (int i = 0; i < s->n; i++) {
        const struct lrule *u = &s->r[i];
        if (u->nc_days <= 0 || newer < u->nc_newer)
            continue;
        if (u->plen > klen || memcmp(key, u->prefix, u->plen))
            continue;
        if ((u->gt >= 0 && (int64_t)md->size <= u->gt) || (u->lt >= 0 && (int64_t)md->size >= u->lt))
            continue;
        int64_t at = since / 1000000000LL + u->nc_days * DAY_S;
        at = (at + DAY_S - 1) / DAY_S * DAY_S; /* S3: the next midnight UTC */
        if (now < at)
            continue;
        if (u->tags && !tags_match(u->tags, md))
            continue;
        return true;
    }
    return false;
}

static bool eodm_rule(const struct lset *s, const char *key, size_t klen)
{
    for (int i = 0; i < s->n; i++)
        if (s->r[i].eodm && s->r[i].plen <= klen && !memcmp(key, s->r[i].prefix, s->r[i].plen))
            return true;
    return false;
}

struct vcand {
    char *name;
    size_t nlen;
    int64_t mtime;
    uint64_t size;
    size_t group;               /* the key's, counted in the walk */
    bool marker_last;           /* a lone delete marker: only once the rest of its group went */
};

struct vgroup {
    struct sl_buf key;
    bool has_cur, owned;
    int64_t prev_mtime;         /* the newer neighbour's */
    int64_t nent, ndel;         /* archives seen, chosen */
    struct vcand first;         /* the newest archive (name owned here) */
    bool first_marker;
    size_t id;
};

struct vlist {
    struct vcand *c;
    size_t n, cap;
};

static void vlist_add(struct vlist *l, struct vcand v)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 256;
        l->c = sl_xrealloc(l->c, l->cap * sizeof(*l->c));
    }
    l->c[l->n++] = v;
}

/* the key's walk is over: its lone delete marker goes when a rule says so */
static void vgroup_end(struct vgroup *g, const struct lset *s, struct vlist *l)
{
    if (g->first.name) {
        if (!g->has_cur && g->first_marker && g->ndel == g->nent - 1 && g->owned &&
            eodm_rule(s, g->key.p, g->key.len)) {
            g->first.marker_last = g->ndel > 0;
            g->first.group = g->id;
            vlist_add(l, g->first);
        } else {
            free(g->first.name);
        }
    }
    g->first.name = NULL;
    g->nent = g->ndel = 0;
    g->has_cur = false;
}

static void vgroup_start(struct vgroup *g, const char *key, size_t klen)
{
    sl_buf_reset(&g->key);
    sl_buf_add(&g->key, key, klen);
    g->id++;
}

static void versions_mpath(struct sl_job *job, const struct sl_bck *b, const struct lset *s, struct sl_mpath *mp,
                           int64_t now)
{
    struct sl_md_iter *it;
    struct sl_err err = { 0 };
    if (sl_md_iter_open(mp->md, b->bid, "", 0, NULL, 0, &it, &err) < 0) {
        sl_logw("lifecycle %s: versions of %s on %s: %s", job->id, b->name, mp->path, err.msg);
        return;
    }
    struct sl_smap *smap = sl_smap_get();
    struct vgroup g;
    memset(&g, 0, sizeof(g));
    sl_buf_init(&g.key);
    struct vlist l = { 0 };
    bool any = false;
    while (!sl_job_aborting(job) && sl_md_iter_next(it) == 1) {
        size_t nl;
        const char *nm = sl_md_iter_name(it, &nl);
        const struct sl_objmd *md = sl_md_iter_md(it);
        size_t kl = sl_objname_vkey(nm, nl);
        bool same = any && g.key.len == kl && !memcmp(g.key.p, nm, kl);
        if (kl == nl) { /* a current object: a key of its own */
            vgroup_end(&g, s, &l);
            vgroup_start(&g, nm, nl);
            g.has_cur = true;
            g.owned = sl_obj_owned_here(smap, b, nm, nl);
            g.prev_mtime = md->mtime;
            any = true;
            continue;
        }
        if (!same) { /* archives of a key without a current object */
            vgroup_end(&g, s, &l);
            vgroup_start(&g, nm, kl);
            g.owned = sl_obj_owned_here(smap, b, nm, nl);
            any = true;
        }
        bool marker = sl_ver_is_marker(md);
        int64_t idx = g.nent++; /* among the archives, newest first */
        int64_t newer = g.has_cur ? idx : idx - 1; /* noncurrent versions newer than it */
        if (!g.has_cur && idx == 0) {
            g.first = (struct vcand){ sl_xstrndup(nm, nl), nl, md->mtime, md->size, 0, false };
            g.first_marker = marker;
        } else if (g.owned && nc_expired(s, g.key.p, g.key.len, md, g.prev_mtime, newer, now)) {
            vlist_add(&l, (struct vcand){ sl_xstrndup(nm, nl), nl, md->mtime, md->size, g.id, false });
            g.ndel++;
        }
        g.prev_mtime = md->mtime;
    }
    if (any)
        vgroup_end(&g, s, &l);
    sl_md_iter_close(it);
    sl_smap_put(smap);
    sl_buf_free(&g.key);
    size_t failed = 0; /* the last group with an archive kept */
    for (size_t j = 0; j < l.n; j++) {
        struct vcand *v = &l.c[j];
        if (!sl_job_aborting(job) && !sl_bg_stopping() && !(v->marker_last && failed == v->group)) {
            struct sl_err e2 = { 0 };
            int rc = sl_obj_delete_if(b, v->name, v->nlen, v->mtime, &e2); /* (written since: kept) */
            if (rc == 0) {
                sl_ec_after_delete(b, v->name, v->nlen);
                sl_job_add(&job->loc_objs, 1);
                sl_job_add(&job->loc_bytes, v->size);
            } else {
                failed = v->group;
                if (rc < 0 && e2.code != SL_ENOOBJ)
                    sl_logw("lifecycle %s: expiring an older version of %s/%.*s: %s", job->id, b->name,
                            (int)SL_MIN(sl_objname_vkey(v->name, v->nlen), 200), v->name, e2.msg);
            }
        }
        free(v->name);
    }
    free(l.c);
}

struct upmatch {
    const struct lset *s;
    int64_t now;
};

static bool upload_old(void *arg, const char *key, size_t klen, int64_t created)
{
    const struct upmatch *m = arg;
    for (int i = 0; i < m->s->n; i++) {
        const struct lrule *u = &m->s->r[i];
        if (u->abort_days > 0 && u->plen <= klen && !memcmp(key, u->prefix, u->plen) &&
            m->now - created / 1000000000LL >= u->abort_days * DAY_S)
            return true;
    }
    return false;
}

static void lifecycle_run(struct sl_job *job, const struct sl_bljob_req *q)
{
    struct sl_bmd *bmd = sl_bmd_get();
    int64_t now = lc_now_s();
    if (now != sl_now_ns() / 1000000000LL)
        sl_logw("lifecycle %s: the test clock is on (lifecycle.debug_days_offset %d): \"now\" is %d days later",
                job->id, sl_conf->lifecycle_days_offset, sl_conf->lifecycle_days_offset);
    for (int k = 0; k < bmd->n && !sl_job_aborting(job); k++) {
        const struct sl_bck *b = &bmd->bcks[k];
        struct lset s;
        if (!sl_bcklist_has(q->bcks, b))
            continue;
        if (!lset_load(b, &s)) {
            lset_free(&s);
            continue;
        }
        if (sl_bck_remote(b)) {
            sl_logw("lifecycle %s: %s://%s has lifecycle rules but is a remote bucket: skipped (an expiry would "
                    "delete at the remote)", job->id, sl_provider_scheme(b->provider), b->name);
        } else {
            for (int i = 0; s.expires && i < sl_store_nmpaths() && !sl_job_aborting(job); i++)
                expire_mpath(job, b, &s, sl_store_mpath(i), now);
            for (int i = 0; s.versions && i < sl_store_nmpaths() && !sl_job_aborting(job); i++)
                versions_mpath(job, b, &s, sl_store_mpath(i), now);
            if (s.aborts) {
                struct upmatch m = { &s, now };
                sl_job_add(&job->out_objs, (uint64_t)s3_uploads_expire(b, upload_old, &m));
            }
        }
        lset_free(&s);
    }
    sl_bmd_put(bmd);
    sl_logi("lifecycle %s: %llu object(s) expired (%llu bytes), %llu multipart upload(s) aborted", job->id,
            (unsigned long long)__atomic_load_n(&job->loc_objs, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(&job->loc_bytes, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(&job->out_objs, __ATOMIC_RELAXED));
}

static struct sl_bljob lifecycle_job = SL_BLJOB_INIT("lifecycle", "/v1/internal/lifecycle/start",
                                                     " (stop it with `shale job stop lifecycle`)", lifecycle_run);

static bool lifecycle_internal(struct sl_req *r)
{
    return sl_bljob_internal(&lifecycle_job, r);
}

static bool lifecycle_cluster_start(struct sl_req *r, const char *kind, const json_t *value)
{
    return sl_bljob_cluster_start(&lifecycle_job, r, kind, value);
}

/* ---- a target's own runs, every lifecycle.interval ---- */

static int64_t interval(void)
{
    return sl_conf->lifecycle_interval_ns;
}

static void lifecycle_start(void)
{
    sl_bljob_every(&lifecycle_job, interval, "lifecycle.interval");
}

const struct sl_module sl_lifecycle_module = {
    .name = "lifecycle",
    .internal = lifecycle_internal,
    .cluster_start = lifecycle_cluster_start,
    .start_kinds = ", lifecycle",
    .start = lifecycle_start,
};
