/* SPDX-License-Identifier: MIT
 * mvb.c: renaming a bucket (spec native-gaps.md §5.1):
 *
 *   POST /v1/buckets/FROM?bck_to=ais/@#/TO/ {"action": "move-bck"}   -> job id (text), kind move-bck
 *
 * A rename moves data anyway: an object's owner is the HRW of its bucket
 * and name, so most objects change target. Shale renames by copying, with
 * the guarantee that nothing acknowledged is lost:
 *
 *   1. BMD: TO is created with FROM's properties; FROM is marked
 *      "renamed": TO (and TO "renaming_from": FROM). From then on neither
 *      takes writes but the copy's (409), and reads of both names keep
 *      working: a GET of TO for an object not copied yet is redirected to
 *      FROM.
 *   2. Every target drains FROM: the writes that started before the mark
 *      finish (or the rename is undone).
 *   3. Job move-bck copies FROM into TO on every target (the copy-bck job
 *      under another kind).
 *   4. When every target the copy started on has finished, under the same
 *      cluster map, FROM is removed from the BMD (its targets delete its
 *      data) and TO loses its marks. Until then the job is reported as
 *      running (TO's "renaming_job" mark), so a client that waits for it
 *      sees it finish only once the rename is committed. If the copy
 *      fails, a target leaves or joins, or one stays silent for
 *      MISSING_NS, TO is removed and FROM unmarked: nothing changed.
 *
 * The primary gateway runs and watches renames. One that starts and finds
 * a bucket marked (it restarted mid-rename) resumes it with a new copy.
 */
#include "mvb.h"
#include "cluster.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "peer.h"
#include "store.h"
#include "tcb.h"
#include "xact.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DRAIN_NS (60LL * 1000000000LL)
#define POLL_US 250000

struct mv {
    char id[48];
    char from[SL_MAX_BCKNAME + 1], to[SL_MAX_BCKNAME + 1];
    /* the copy: the cluster map it started under and its targets */
    int64_t smap_ver;
    char (*tids)[48];
    int ntids;
    int64_t missing_since;      /* a target has not answered since (mono ns), or 0 */
};

#define MISSING_NS (300LL * 1000000000LL)

static void mv_free(struct mv *m)
{
    if (m) {
        free(m->tids);
        free(m);
    }
}

/* renames this gateway is watching, by source: one at a time per bucket */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char watching[16][SL_MAX_BCKNAME + 1];

static bool watch_add(const char *from)
{
    pthread_mutex_lock(&mu);
    int free_slot = -1;
    bool dup = false;
    for (int i = 0; i < 16; i++) {
        if (!strcmp(watching[i], from))
            dup = true;
        else if (!watching[i][0] && free_slot < 0)
            free_slot = i;
    }
    bool ok = !dup && free_slot >= 0;
    if (ok)
        snprintf(watching[free_slot], sizeof(watching[free_slot]), "%s", from);
    pthread_mutex_unlock(&mu);
    return ok;
}

static void watch_del(const char *from)
{
    pthread_mutex_lock(&mu);
    for (int i = 0; i < 16; i++)
        if (!strcmp(watching[i], from))
            watching[i][0] = 0;
    pthread_mutex_unlock(&mu);
}

/* ---- BMD edits ---- */

static struct sl_bck *bmd_bck(struct sl_bmd *b, const char *name)
{
    for (int i = 0; i < b->n; i++)
        if (!strcmp(b->bcks[i].provider, "ais") && !strcmp(b->bcks[i].name, name))
            return &b->bcks[i];
    return NULL;
}

/* replace k's props with a copy where key is set to v (NULL: removed) */
static void set_mark(struct sl_bck *k, const char *key, const char *v)
{
    json_t *np = json_deep_copy(k->props);
    if (v)
        json_object_set_new(np, key, json_string(v));
    else
        json_object_del(np, key);
    json_decref(k->props);
    k->props = np;
}

/* 1: TO created like FROM, both marked (already so: nothing to do) */
static int edit_begin(struct sl_bmd *b, void *arg, struct sl_err *err)
{
    const struct mv *m = arg;
    struct sl_bck *f = bmd_bck(b, m->from);
    if (!f)
        return sl_errf(err, SL_ENOBCK, "bucket \"ais://%s\" does not exist", m->from);
    struct sl_bck *t = bmd_bck(b, m->to);
    const char *mark = json_string_value(json_object_get(f->props, "renamed"));
    if (mark && !strcmp(mark, m->to) && t) {
        set_mark(t, "renaming_job", m->id); /* resumed, by a new copy job */
        return 0;
    }
    if (mark && strcmp(mark, m->to))
        return sl_errf(err, SL_EBUSY, "ais://%s is already being renamed to ais://%s", m->from, mark);
    if (t)
        return sl_errf(err, SL_EBCKEXIST, "bucket \"ais://%s\" already exists", m->to);
    /* (marked for TO while TO is gone: start over) */
    json_t *props = json_deep_copy(f->props);
    static const char *const own[] = { "bid", "created", "renamed", "renaming_from", "renaming_job", "name",
                                       "provider" };
    for (size_t i = 0; i < SL_ARRAY_SIZE(own); i++)
        json_object_del(props, own[i]);
    const struct sl_bck *added = sl_bmd_add(b, "ais", m->to, props, err);
    json_decref(props);
    if (!added)
        return -1;
    f = bmd_bck(b, m->from); /* the add may have moved the array */
    set_mark(f, "renamed", m->to);
    set_mark(bmd_bck(b, m->to), "renaming_from", m->from);
    /* the job is not finished while this mark is in the BMD, whatever its
     * targets say (fanout.c sl_cluster_job_status) */
    set_mark(bmd_bck(b, m->to), "renaming_job", m->id);
    return 0;
}

/* 4, done: FROM goes (its data with it), TO is an ordinary bucket */
static int edit_done(struct sl_bmd *b, void *arg, struct sl_err *err)
{
    (void)err;
    const struct mv *m = arg;
    struct sl_bck *t = bmd_bck(b, m->to);
    if (t) {
        set_mark(t, "renaming_from", NULL);
        set_mark(t, "renaming_job", NULL);
    }
    if (bmd_bck(b, m->from))
        sl_bmd_remove(b, "ais", m->from);
    return 0;
}

/* 4, failed: TO goes, FROM as it was */
static int edit_undo(struct sl_bmd *b, void *arg, struct sl_err *err)
{
    (void)err;
    const struct mv *m = arg;
    if (bmd_bck(b, m->to))
        sl_bmd_remove(b, "ais", m->to);
    struct sl_bck *f = bmd_bck(b, m->from);
    if (f)
        set_mark(f, "renamed", NULL);
    return 0;
}

/* ---- 2: drain ---- */

static int drain_all(const char *from, struct sl_err *err)
{
    if (G.role == SL_ROLE_STANDALONE) {
        struct sl_bck b;
        if (sl_bck_resolve(from, "ais", NULL, &b, err) < 0)
            return -1;
        int rc = sl_store_drain(b.bid, DRAIN_NS, err);
        sl_bck_release(&b);
        return rc;
    }
    char *q = sl_url_encode_query(from);
    struct sl_tfan t;
    sl_tfan_init(&t, 0, "POST", "/v1/internal/mvb/drain?bck=%s", q);
    free(q);
    sl_tfan_run(&t, DRAIN_NS / 1000000 + 10000);
    int rc = 0;
    for (int i = 0; i < t.n && rc == 0; i++)
        if (!t.f[i].ok || t.f[i].resp.status != 200)
            rc = sl_errf(err, SL_EUNAVAIL, "move-bck: t[%s] could not stop writes to ais://%s: %s", t.who[i]->id,
                         from, t.f[i].ok ? t.f[i].resp.err : "no answer");
    if (!t.n)
        rc = sl_errf(err, SL_EUNAVAIL, "move-bck: the cluster has no targets");
    sl_tfan_free(&t);
    return rc;
}

/* target: POST /v1/internal/mvb/drain?bck= (offloaded: it waits) */
static void drain_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    struct sl_bck b;
    if (sl_bck_resolve(sl_req_query(r, "bck") ? sl_req_query(r, "bck") : "", "ais", NULL, &b, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    if (sl_store_drain(b.bid, DRAIN_NS, &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
    sl_bck_release(&b);
}

static bool mvb_internal(struct sl_req *r)
{
    if (strcmp(r->path, "/v1/internal/mvb/drain"))
        return false;
    if (r->method != SL_M_POST)
        sl_resp_method_not_allowed(r, "POST");
    else
        sl_req_offload(r, drain_run, NULL, NULL);
    return true;
}

/* ---- 3 and 4: the copy, watched ---- */

/* 1: every target of the copy finished it, 0: not yet, -1: failed (err) */
static int job_state(struct mv *m, struct sl_err *err)
{
    struct sl_smap *sm = sl_smap_get();
    int64_t ver = sm->version;
    sl_smap_put(sm);
    if (G.role != SL_ROLE_STANDALONE && ver != m->smap_ver)
        return sl_errf(err, SL_EUNAVAIL, "the cluster map changed during the copy (v%lld -> v%lld: a target joined "
                       "or left)", (long long)m->smap_ver, (long long)ver);
    struct sl_err e2 = { 0 };
    json_t *all = sl_cluster_job_snaps(m->id, NULL, false, &e2);
    int state = 1;
    bool missing = false;
    for (int i = 0; i < m->ntids && state >= 0; i++) {
        json_t *list = json_object_get(all, G.role == SL_ROLE_STANDALONE ? G.id : m->tids[i]), *snap = NULL, *s;
        size_t k;
        json_array_foreach(list, k, s)
            if (!strcmp(sl_json_str(s, "id", ""), m->id))
                snap = s;
        if (!list) {
            missing = true; /* did not answer: ask again */
            state = 0;
        } else if (!snap) {
            state = sl_errf(err, SL_EUNAVAIL, "t[%s] no longer knows the copy job %s (did it restart?)", m->tids[i],
                            m->id);
        } else if (sl_json_str(snap, "err", "")[0]) {
            state = sl_errf(err, SL_EIO, "t[%s]: %s", m->tids[i], sl_json_str(snap, "err", ""));
        } else if (!strncmp(sl_json_str(snap, "end-time", "0001"), "0001", 4)) {
            state = 0;
        }
    }
    json_decref(all);
    if (state >= 0 && missing) {
        if (!m->missing_since)
            m->missing_since = sl_mono_ns();
        else if (sl_mono_ns() - m->missing_since > MISSING_NS)
            state = sl_errf(err, SL_EUNAVAIL, "a target of the copy did not answer for %lld s",
                            (long long)(MISSING_NS / 1000000000LL));
    } else {
        m->missing_since = 0;
    }
    return state;
}

static void *watch_thread(void *arg)
{
    struct mv *m = arg;
    struct sl_err err = { 0 };
    int st;
    while ((st = job_state(m, &err)) == 0)
        usleep(POLL_US);
    struct sl_err e2 = { 0 };
    if (st > 0) {
        if (sl_bmd_modify(edit_done, m, &e2) < 0)
            sl_loge("move-bck %s: ais://%s copied to ais://%s but the BMD update failed: %s (send the same request "
                    "again to finish)", m->id, m->from, m->to, e2.msg);
        else
            sl_logi("move-bck %s: ais://%s is now ais://%s", m->id, m->from, m->to);
    } else {
        sl_logw("move-bck %s: copying ais://%s to ais://%s failed: %s; undone (ais://%s is as it was)", m->id, m->from,
                m->to, err.msg, m->from);
        if (sl_bmd_modify(edit_undo, m, &e2) < 0)
            sl_loge("move-bck %s: undoing failed too: %s", m->id, e2.msg);
    }
    watch_del(m->from);
    mv_free(m);
    return NULL;
}

/* ---- the gateway ---- */

/* steps 1 to 3, then the watcher takes m; -1 with err (nothing changed,
 * m still the caller's) */
static int mv_run(struct mv *m, struct sl_err *err)
{
    if (!watch_add(m->from))
        return sl_errf(err, SL_EBUSY, "ais://%s is being renamed already (follow it with GET "
                       "/v1/cluster?what=status)", m->from);
    sl_job_id(m->id, sizeof(m->id), "");
    if (sl_bmd_modify(edit_begin, m, err) < 0) {
        watch_del(m->from);
        return -1;
    }
    struct sl_smap *sm = sl_smap_get();
    m->smap_ver = sm->version;
    m->tids = sl_xcalloc((size_t)sm->nnodes + 1, sizeof(*m->tids));
    for (int i = 0; i < sm->nnodes; i++)
        if (sm->nodes[i].type == SL_NODE_TARGET)
            snprintf(m->tids[m->ntids++], sizeof(m->tids[0]), "%s", sm->nodes[i].id);
    if (G.role == SL_ROLE_STANDALONE)
        snprintf(m->tids[m->ntids++], sizeof(m->tids[0]), "%s", G.id);
    sl_smap_put(sm);
    if (drain_all(m->from, err) < 0 || sl_tcb_start_copy("move-bck", m->id, m->from, m->to, err) < 0) {
        struct sl_err e2 = { 0 };
        sl_bmd_modify(edit_undo, m, &e2);
        watch_del(m->from);
        return -1;
    }
    sl_logi("move-bck %s started: ais://%s -> ais://%s", m->id, m->from, m->to);
    return 0;
}

static void start_run(struct sl_req *r, void *arg)
{
    struct mv *m = arg;
    struct sl_err err = { 0 };
    if (mv_run(m, &err) < 0) {
        sl_resp_err(r, &err);
        mv_free(m);
        return;
    }
    sl_resp_text(r, 200, m->id);
    sl_run_detached(watch_thread, m);
}

/* the primary, once started: renames that were under way when the
 * gateway running them stopped */
static void *resume_thread(void *arg)
{
    (void)arg;
    sleep(5); /* the cluster map and the primary settle */
    if (G.role != SL_ROLE_STANDALONE && !sl_is_primary())
        return NULL;
    struct sl_bmd *bmd = sl_bmd_get();
    for (int i = 0; i < bmd->n; i++) {
        const char *to = json_string_value(json_object_get(bmd->bcks[i].props, "renamed"));
        if (!to)
            continue;
        struct mv *m = sl_xcalloc(1, sizeof(*m));
        snprintf(m->from, sizeof(m->from), "%s", bmd->bcks[i].name);
        snprintf(m->to, sizeof(m->to), "%s", to);
        struct sl_err err = { 0 };
        if (!sl_bmd_find(bmd, "ais", m->to)) {
            /* the new name is gone (it cannot be destroyed during a rename, but an old BMD may say so) */
            sl_bmd_modify(edit_undo, m, &err);
            sl_logw("move-bck: ais://%s was being renamed to ais://%s, which does not exist: undone", m->from, m->to);
            mv_free(m);
            continue;
        }
        if (mv_run(m, &err) < 0) {
            sl_logw("move-bck: resuming ais://%s -> ais://%s: %s", m->from, m->to, err.msg);
            mv_free(m);
            continue;
        }
        sl_logi("move-bck %s: resumed ais://%s -> ais://%s", m->id, m->from, m->to);
        sl_run_detached(watch_thread, m);
    }
    sl_bmd_put(bmd);
    return NULL;
}

static void mvb_start(void)
{
    if (G.role == SL_ROLE_TARGET)
        return;
    pthread_t t;
    if (pthread_create(&t, NULL, resume_thread, NULL) == 0)
        pthread_detach(t);
}

static bool mvb_bucket_post(struct sl_req *r, const char *bucket, struct sl_actmsg *am)
{
    if (strcmp(am->action, "move-bck"))
        return false;
    struct sl_err err = { 0 };
    struct sl_bck src;
    if (sl_bck_resolve(bucket, sl_req_query(r, "provider"), NULL, &src, &err) < 0) {
        sl_resp_err(r, &err);
        return true;
    }
    struct mv *m = sl_xcalloc(1, sizeof(*m));
    snprintf(m->from, sizeof(m->from), "%s", src.name);
    bool ais = !strcmp(src.provider, "ais");
    sl_bck_release(&src);
    const char *to = sl_req_query(r, "bck_to");
    char prov[16] = "";
    const char *rest = NULL;
    if (!ais)
        sl_errf(&err, SL_EINVAL, "can only rename AIS ('ais://') bucket (\"%s\" is not)", bucket);
    else if (!to || !*to)
        sl_errf(&err, SL_EINVAL, "move-bck: the new name is required as the query parameter bck_to (e.g. "
                "bck_to=ais/@%%23/newname/)");
    else if (sl_bck_parse(to, SL_BCK_UNAME, prov, sizeof(prov), m->to, sizeof(m->to), &rest, &err) < 0)
        ;
    else if (strcmp(prov, "ais"))
        sl_errf(&err, SL_EINVAL, "can only rename to AIS ('ais://') bucket (\"%s\" is not)", to);
    else if (sl_bck_name_valid(m->to, &err) < 0)
        ;
    else if (!strcmp(m->to, m->from))
        sl_errf(&err, SL_EINVAL, "cannot rename bucket \"ais://%s\" to itself (\"ais://%s\")", m->from, m->to);
    if (err.msg[0]) {
        mv_free(m);
        sl_resp_err(r, &err);
        return true;
    }
    sl_req_offload(r, start_run, (void (*)(void *))mv_free, m);
    return true;
}

const struct sl_module sl_mvb_module = {
    .name = "move-bck",
    .internal = mvb_internal,
    .bucket_post = mvb_bucket_post,
    .post_actions = ", move-bck",
    .start = mvb_start,
};
