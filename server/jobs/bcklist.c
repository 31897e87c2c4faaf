/* SPDX-License-Identifier: MIT
 * bcklist.c: see bcklist.h.
 */
#include "bcklist.h"
#include "bg.h"
#include "cluster.h"
#include "jsonx.h"

#include "log.h"
#include "node.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sl_bcklist_parse(const json_t *v, const char *what, json_t **out, struct sl_err *err)
{
    *out = NULL;
    json_t *list = sl_json_get(v, "buckets"), *one = sl_json_get(v, "bck");
    if (one && !json_is_null(one) && (!list || json_is_null(list))) {
        list = json_array();
        json_array_append(list, one);
    } else {
        json_incref(list);
    }
    if (list && !json_is_null(list) && !json_is_array(list)) {
        json_decref(list);
        return sl_errf(err, SL_EINVAL, "%s: \"Buckets\" must be a list of buckets [{\"name\": ...}]", what);
    }
    size_t i;
    json_t *b;
    json_array_foreach(list, i, b) {
        const char *name = json_is_string(b) ? json_string_value(b) : sl_json_str(b, "name", "");
        const char *prov = json_is_string(b) ? "ais" : sl_json_str(b, "provider", "ais");
        struct sl_bck bk;
        if (sl_bck_resolve(name, prov, NULL, &bk, err) < 0) {
            json_decref(list);
            json_decref(*out);
            *out = NULL;
            return -1;
        }
        if (!*out)
            *out = json_array();
        json_array_append_new(*out, json_sprintf("%s/%s", bk.provider, bk.name));
        sl_bck_release(&bk);
    }
    json_decref(list);
    return 0;
}

bool sl_bcklist_has(const json_t *list, const struct sl_bck *b)
{
    if (!list)
        return true;
    char pn[SL_MAX_BCKNAME + 16];
    snprintf(pn, sizeof(pn), "%s/%s", b->provider, b->name);
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v)
        if (!strcmp(json_string_value(v), pn) || (!strcmp(b->provider, "ais") && !strcmp(json_string_value(v), b->name)))
            return true;
    return false;
}

/* ---- sl_bljob ---- */

static void req_free(void *arg)
{
    struct sl_bljob_req *q = arg;
    json_decref(q->bcks);
    free(q);
}

static void *bljob_thread(void *arg)
{
    struct sl_bljob_req *q = arg;
    struct sl_bljob *j = q->j;
    struct sl_job *job = sl_job_start(j->kind, q->id, "", "");
    j->run(job, q);
    sl_job_finish(job, sl_job_aborting(job) ? "aborted" : NULL);
    sl_job_put(job);
    pthread_mutex_lock(&j->mu);
    j->running = false;
    pthread_mutex_unlock(&j->mu);
    req_free(q);
    return NULL;
}

int sl_bljob_start_here(struct sl_bljob *j, const char *id, const json_t *bcks, bool force, bool fix, char out[40],
                        struct sl_err *err)
{
    pthread_mutex_lock(&j->mu);
    bool busy = j->running;
    if (!busy) {
        j->running = true;
        j->last_start = sl_mono_ns();
    }
    pthread_mutex_unlock(&j->mu);
    if (busy)
        return sl_errf(err, SL_EBUSY, "t[%s]: a %s job is running already%s", G.id, j->kind, j->busy_hint);
    struct sl_bljob_req *q = sl_xcalloc(1, sizeof(*q));
    if (id)
        snprintf(q->id, sizeof(q->id), "%s", id);
    else
        sl_job_id(q->id, sizeof(q->id), "");
    q->bcks = bcks ? json_incref((json_t *)bcks) : NULL;
    q->force = force;
    q->fix = fix;
    q->j = j;
    if (out)
        snprintf(out, 40, "%s", q->id);
    sl_run_detached(bljob_thread, q);
    return 0;
}

bool sl_bljob_running(struct sl_bljob *j, int64_t *last_start)
{
    pthread_mutex_lock(&j->mu);
    bool r = j->running;
    if (last_start)
        *last_start = j->last_start;
    pthread_mutex_unlock(&j->mu);
    return r;
}

/* target: POST <path> {"id", "buckets", "force", "fix"} */
static void internal_start(struct sl_req *r)
{
    struct sl_bljob *j = r->ctx;
    r->ctx = NULL;
    struct sl_err err = { 0 };
    json_t *b = sl_req_body_json(r, &err);
    if (!json_is_object(b)) {
        sl_resp_errf(r, SL_EINVAL, "%s start: the body must be {\"id\": ..., \"buckets\": [...]}", j->kind);
        json_decref(b);
        return;
    }
    json_t *l = json_object_get(b, "buckets");
    if (sl_bljob_start_here(j, sl_json_str(b, "id", ""), json_is_array(l) ? l : NULL,
                            json_is_true(json_object_get(b, "force")), json_is_true(json_object_get(b, "fix")), NULL,
                            &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
    json_decref(b);
}

bool sl_bljob_internal(struct sl_bljob *j, struct sl_req *r)
{
    if (strcmp(r->path, j->path))
        return false;
    if (r->method != SL_M_POST) {
        sl_resp_method_not_allowed(r, "POST");
    } else {
        r->ctx = j; /* (static: nothing to clean up) */
        sl_req_buffer_body(r, 1024 * 1024, internal_start);
    }
    return true;
}

/* the gateway: every target that is not offline starts it (takes q) */
static void start_run(struct sl_req *r, void *arg)
{
    struct sl_bljob_req *q = arg;
    struct sl_bljob *j = q->j;
    struct sl_err err = { 0 };
    char what[64];
    snprintf(what, sizeof(what), "start %s", j->kind);
    int rc;
    if (G.role == SL_ROLE_STANDALONE) {
        rc = sl_bljob_start_here(j, q->id, q->bcks, q->force, q->fix, NULL, &err);
    } else {
        json_t *body = json_pack("{s:s,s:O?,s:b,s:b}", "id", q->id, "buckets", q->bcks, "force", q->force, "fix",
                                 q->fix);
        rc = sl_tfan_start_job(SL_TF_SKIP_OFFLINE, j->path, body, what, q->id, &err);
        json_decref(body);
    }
    if (rc < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_text(r, 200, q->id);
    req_free(q);
}

bool sl_bljob_cluster_start(struct sl_bljob *j, struct sl_req *r, const char *kind, const json_t *value)
{
    if (strcmp(kind, j->kind))
        return false;
    struct sl_err err = { 0 };
    char what[64];
    snprintf(what, sizeof(what), "start %s", j->kind);
    struct sl_bljob_req *q = sl_xcalloc(1, sizeof(*q));
    if (sl_bcklist_parse(value, what, &q->bcks, &err) < 0) {
        free(q);
        sl_resp_err(r, &err);
        return true;
    }
    q->force = json_is_true(sl_json_get(value, "force"));
    q->fix = json_is_true(sl_json_get(value, "fix"));
    q->j = j;
    sl_job_id(q->id, sizeof(q->id), "");
    sl_req_offload(r, start_run, req_free, q);
    return true;
}

/* ---- a target's own runs, every INTERVAL ---- */

struct every {
    struct sl_bljob *j;
    int64_t (*interval)(void);
    const char *setting;
};

static void *every_thread(void *arg)
{
    struct every *e = arg;
    for (;;) {
        sleep(1);
        if (sl_bg_stopping())
            break;
        int64_t iv = e->interval(), last;
        if (iv <= 0 || sl_bljob_running(e->j, &last) || sl_mono_ns() - last < iv)
            continue;
        char id[40];
        struct sl_err err = { 0 };
        if (sl_bljob_start_here(e->j, NULL, NULL, false, false, id, &err) == 0)
            sl_logi("%s %s: started by the target itself (%s)", e->j->kind, id, e->setting);
    }
    free(e);
    return NULL;
}

void sl_bljob_every(struct sl_bljob *j, int64_t (*interval)(void), const char *setting)
{
    if (!sl_is_target())
        return;
    pthread_mutex_lock(&j->mu);
    j->last_start = sl_mono_ns(); /* (the first run one interval after the start) */
    pthread_mutex_unlock(&j->mu);
    struct every *e = sl_xmalloc(sizeof(*e));
    *e = (struct every){ j, interval, setting };
    pthread_t t;
    if (pthread_create(&t, NULL, every_thread, e) == 0) {
        pthread_detach(t);
    } else {
        free(e);
        sl_logw("%s: cannot start the %s watcher; the job runs only when started", j->kind, setting);
    }
}
