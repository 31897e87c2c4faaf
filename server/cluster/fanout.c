/* SPDX-License-Identifier: MIT
 * fanout.c: what the cluster asks of all its targets at once: job
 * snapshots and aborts, exact merged listings, and the relay of a request
 * to the primary. See cluster.h.
 */
#include "cluster.h"
#include "conf.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "peer.h"
#include "xact.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- one request to each target ---- */

void sl_tfan_init(struct sl_tfan *t, unsigned flags, const char *method, const char *path_fmt, ...)
{
    memset(t, 0, sizeof(*t));
    t->s = sl_smap_get();
    int cap = t->s->nnodes ? t->s->nnodes : 1;
    t->f = sl_xcalloc((size_t)cap, sizeof(*t->f));
    t->who = sl_xcalloc((size_t)cap, sizeof(*t->who));
    va_list ap;
    va_start(ap, path_fmt);
    char *path = NULL;
    if (vasprintf(&path, path_fmt, ap) < 0)
        abort();
    va_end(ap);
    for (int i = 0; i < t->s->nnodes; i++) {
        const struct sl_snode *x = &t->s->nodes[i];
        if (x->type != SL_NODE_TARGET || ((flags & SL_TF_SKIP_SELF) && !strcmp(x->id, G.id)) ||
            ((flags & SL_TF_SKIP_OFFLINE) && (x->flags & SL_SNF_OFFLINE)))
            continue;
        t->f[t->n].url = sl_xasprintf("%s%s", x->ctrl_url, path);
        t->f[t->n].method = method;
        t->who[t->n++] = x;
    }
    free(path);
}

void sl_tfan_run(struct sl_tfan *t, int64_t timeout_ms)
{
    sl_peer_fanout(t->f, t->n, timeout_ms);
}

void sl_tfan_free(struct sl_tfan *t)
{
    for (int i = 0; i < t->n; i++)
        free((char *)t->f[i].url);
    sl_peer_fanout_free(t->f, t->n);
    free(t->f);
    free(t->who);
    sl_smap_put(t->s);
    memset(t, 0, sizeof(*t));
}

/* the JSON body of one fan-out answer (new reference), NULL if none came
 * or it is not JSON */
static json_t *fan_json(const struct sl_fan *f)
{
    json_error_t je;
    return f->ok ? json_loadb(f->resp.body.p, f->resp.body.len, 0, &je) : NULL;
}

/* ---- forwarding to the primary ---- */

static void forward_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_smap *s = sl_smap_get();
    const struct sl_snode *p = sl_smap_primary(s);
    if (!p) {
        sl_smap_put(s);
        sl_resp_errf(r, SL_EUNAVAIL, "%s: no primary proxy known yet; retry shortly", G.name);
        return;
    }
    if (!strcmp(p->id, G.id)) { /* never to itself: its map names it, it takes the role (vote.c watcher) */
        sl_smap_put(s);
        sl_resp_errf(r, SL_EUNAVAIL, "%s: the cluster map names this gateway the primary and it is taking the "
                     "role; retry in a few seconds", G.name);
        return;
    }
    const char *q = strchr(r->raw_uri, '?');
    char *enc = sl_url_encode_path(r->path, r->path_len);
    char *url = sl_xasprintf("%s%s%s", p->ctrl_url, enc, q ? q : "");
    free(enc);
    sl_smap_put(s);
    /* a client's request: the primary checks its token (api/access.c) */
    struct sl_peer_hdr h[2];
    int nh = 0;
    h[nh++] = (struct sl_peer_hdr){ "Ais-Client-Fwd", "1" };
    const char *auth = sl_req_header(r, "Authorization");
    if (auth)
        h[nh++] = (struct sl_peer_hdr){ "Authorization", auth };
    struct sl_peer_resp pr;
    /* ETL init compiles and runs scripts on every target: allow for that */
    int64_t tmo = sl_has_prefix(r->path, "/v1/etl") ? sl_conf->send_file_time_ns / 1000000
                                                    : sl_conf->cplane_timeout_ns / 1000000 * 5;
    int rc = sl_peer_call(r->method_str, url, h, nh, r->body.len ? r->body.p : NULL, r->body.len, tmo, &pr);
    if (rc < 0) {
        sl_resp_errf(r, SL_EUNAVAIL, "%s: forwarding to the primary failed: %s", G.name, pr.err);
    } else {
        bool json = pr.body.len && (pr.body.p[0] == '{' || pr.body.p[0] == '[');
        const char *ctype = pr.status >= 400 || json ? "application/json" : NULL;
        sl_resp_bytes(r, (int)pr.status, ctype, pr.body.p ? pr.body.p : "", pr.body.len);
    }
    sl_peer_resp_free(&pr);
    free(url);
}

static void forward_done(struct sl_req *r)
{
    sl_req_offload(r, forward_run, NULL, NULL);
}

void sl_forward_buffered_to_primary(struct sl_req *r)
{
    forward_done(r);
}

void sl_forward_to_primary(struct sl_req *r)
{
    sl_req_buffer_body(r, sl_conf->http_max_body_json, forward_done);
}

/* ---- job status aggregation (GET /v1/cluster?what=status|...) ---- */

/* Fan out to targets; returns {tid: [snap...]} and fails naming a target that did not answer. */
json_t *sl_cluster_job_snaps(const char *id, const char *kind, bool active, struct sl_err *err)
{
    json_t *out = json_object();
    if (G.role == SL_ROLE_STANDALONE) {
        json_object_set_new(out, G.id, sl_jobs_snaps(id, kind, active));
        return out;
    }
    char *qi = sl_url_encode_query(id ? id : ""), *qk = sl_url_encode_query(kind ? kind : "");
    struct sl_tfan t;
    sl_tfan_init(&t, SL_TF_SKIP_OFFLINE, "GET", "/v1/internal/jobs?id=%s&kind=%s&active=%s", qi, qk,
                 active ? "true" : "false");
    free(qi);
    free(qk);
    sl_tfan_run(&t, 0);
    for (int i = 0; i < t.n; i++) {
        json_t *arr = t.f[i].resp.status == 200 ? fan_json(&t.f[i]) : NULL;
        if (!arr) {
            if (err && !err->msg[0])
                sl_errf(err, SL_EUNAVAIL, "job status: target t[%s] did not answer: %s", t.who[i]->id,
                        t.f[i].resp.err);
            continue;
        }
        json_object_set_new(out, t.who[i]->id, arr);
    }
    sl_tfan_free(&t);
    return out;
}

void sl_cluster_abort_job(const char *id)
{
    if (G.role == SL_ROLE_STANDALONE)
        return;
    char *qi = sl_url_encode_query(id);
    struct sl_tfan t;
    sl_tfan_init(&t, SL_TF_SKIP_SELF | SL_TF_SKIP_OFFLINE, "DELETE", "/v1/internal/jobs?id=%s", qi);
    free(qi);
    sl_tfan_run(&t, 0);
    sl_tfan_free(&t);
}

int sl_cluster_stop_jobs(const char *id, const char *kind)
{
    int n = sl_job_abort(id, kind);
    char *qi = sl_url_encode_query(id), *qk = sl_url_encode_query(kind);
    struct sl_tfan t;
    sl_tfan_init(&t, SL_TF_SKIP_SELF, "DELETE", "/v1/internal/jobs?id=%s&kind=%s", qi, qk);
    free(qi);
    free(qk);
    sl_tfan_run(&t, 0);
    for (int i = 0; i < t.n; i++) {
        json_t *jr = fan_json(&t.f[i]);
        n += (int)sl_json_int(jr, "aborted", 0);
        json_decref(jr);
    }
    sl_tfan_free(&t);
    return n;
}

static void snaps_settle(struct sl_snap_it *it) /* on the next matching snapshot from (oi, i) on, or sn NULL */
{
    for (; it->oi; it->oi = json_object_iter_next(it->per, it->oi), it->i = 0) {
        it->tid = json_object_iter_key(it->oi);
        it->arr = json_object_iter_value(it->oi);
        for (; it->i < json_array_size(it->arr); it->i++) {
            it->sn = json_array_get(it->arr, it->i);
            if (!it->id || !strcmp(sl_json_str(it->sn, "id", ""), it->id))
                return;
        }
    }
    it->sn = NULL;
}

void sl_snaps_first(struct sl_snap_it *it, json_t *per, const char *id)
{
    memset(it, 0, sizeof(*it));
    it->per = per;
    it->id = id;
    it->oi = per ? json_object_iter(per) : NULL;
    snaps_settle(it);
}

void sl_snaps_next(struct sl_snap_it *it)
{
    it->i++;
    snaps_settle(it);
}

int sl_cluster_job_begin(const char *kind, const char *prefix, const char *path, json_t *body,
                         int (*local)(const char *id, const json_t *body, struct sl_err *err), char *id, size_t idlen,
                         struct sl_err *err)
{
    sl_job_id(id, idlen, prefix);
    json_object_set_new(body, "id", json_string(id));
    if (G.role != SL_ROLE_STANDALONE)
        return sl_cluster_to_coordinator(kind, id, path, body, err);
    int rc = local(id, body, err);
    json_decref(body);
    return rc;
}

void sl_cluster_job_begun(struct sl_req *r, int (*local)(const char *id, const json_t *body, struct sl_err *err),
                          const char *what)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    if (!json_is_object(j) || local(sl_json_str(j, "id", ""), j, &err) < 0) {
        if (!err.msg[0])
            sl_errf(&err, SL_EINVAL, "%s: bad body (expected {\"id\": ..., ...})", what);
        sl_resp_err(r, &err);
    } else {
        sl_resp_empty(r, 200);
    }
    json_decref(j);
}

/* A bucket rename whose copy job is id still marked in this node's BMD
 * (jobs/mvb.c: the mark goes when the rename is committed). */
static bool rename_pending(const char *id)
{
    struct sl_bmd *b = sl_bmd_get();
    bool pending = false;
    for (int i = 0; b && i < b->n && !pending; i++) {
        const char *j = json_string_value(json_object_get(b->bcks[i].props, "renaming_job"));
        pending = j && !strcmp(j, id);
    }
    sl_bmd_put(b);
    return pending;
}

/* nl.Status aggregated over targets for one job id; NULL if unknown */
json_t *sl_cluster_job_status(json_t *per, const char *id)
{
    bool found = false, running = false, aborted = false, failed = false;
    int64_t end = 0;
    char kind[32] = "", err[1024] = "";
    bool err_generic = false;
    struct sl_snap_it it;
    for (sl_snaps_first(&it, per, id); it.sn; sl_snaps_next(&it)) {
        json_t *snap = it.sn;
        found = true;
        snprintf(kind, sizeof(kind), "%s", sl_json_str(snap, "kind", ""));
        int64_t e = sl_json_int(snap, "end_ns", 0);
        if (!e)
            running = true;
        else if (e > end)
            end = e;
        if (sl_json_bool(snap, "aborted", false))
            aborted = true;
        else if (e && sl_json_str(snap, "err", "")[0])
            failed = true;
        /* the root cause wins over the "aborted" of targets that were
         * stopped because of it */
        const char *er = sl_json_str(snap, "err", "");
        bool generic = !strcmp(er, "aborted");
        if (er[0] && (!err[0] || (err_generic && !generic))) {
            snprintf(err, sizeof(err), "t[%s]: %s", it.tid, er);
            err_generic = generic;
        }
    }
    if (!found)
        return NULL;
    if (!running && !strcmp(kind, "move-bck") && rename_pending(id))
        running = true;     /* copied everywhere, but not committed yet */
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string(kind));
    json_object_set_new(o, "uuid", json_string(id));
    json_object_set_new(o, "err", json_string(err));
    json_object_set_new(o, "end_time", json_integer(running ? 0 : end));
    /* a job that failed on one target and was aborted on the others
     * because of it has failed; "aborted" is for a job someone stopped */
    json_object_set_new(o, "aborted", json_boolean(aborted && !failed));
    json_object_set_new(o, "is_idle", json_boolean(!running));
    return o;
}

bool sl_cluster_job_known(const char *id, struct sl_err *err)
{
    json_t *per = sl_cluster_job_snaps(id, NULL, false, err);
    json_t *st = sl_cluster_job_status(per, id);
    bool known = st != NULL;
    json_decref(st);
    json_decref(per);
    return known;
}

/* ---- listing across targets ---- */

int sl_cluster_list_page(const struct sl_bck *b, const struct sl_lsomsg *m, struct sl_lspage *out,
                         struct sl_err *err)
{
    if (G.role == SL_ROLE_STANDALONE)
        return sl_lso_local_page(b, m, G.id, out, err);
    char *qb = sl_url_encode_path(b->name, strlen(b->name));
    struct sl_tfan t;
    sl_tfan_init(&t, 0, "GET", "/v1/internal/lso/%s?provider=%s", qb, b->provider);
    free(qb);
    struct sl_lspage *pages = NULL;
    char *bs = NULL;
    int rc = 0;
    if (!t.n) {
        rc = sl_errf(err, SL_EUNAVAIL, "list-objects %s://%s: the cluster has no targets yet",
                     sl_provider_scheme(b->provider), b->name);
        goto out;
    }
    if ((rc = sl_cluster_listing_check(b, err)) < 0) /* (a bucket that lost objects: lost.c) */
        goto out;
    for (int i = 0; i < t.n; i++) {
        if (t.who[i]->flags & SL_SNF_OFFLINE) {
            rc = sl_errf(err, SL_EUNAVAIL,
                         "list-objects %s://%s: target t[%s] (%s) is offline; the listing would be incomplete, so "
                         "it is refused; retry when the target is back or after it is decommissioned",
                         sl_provider_scheme(b->provider), b->name, t.who[i]->id, t.who[i]->url);
            goto out;
        }
    }
    json_t *body = json_pack("{s:s,s:s,s:o}", "action", "list", "name", "", "value", sl_lsomsg_json(m));
    size_t blen;
    bs = sl_json_dump(body, 0, &blen);
    json_decref(body);
    for (int i = 0; i < t.n; i++) {
        t.f[i].body = bs;
        t.f[i].blen = blen;
        t.f[i].accept = "application/msgpack";
    }
    sl_tfan_run(&t, sl_conf->cplane_timeout_ns / 1000000 * 15);
    pages = sl_xcalloc((size_t)t.n, sizeof(*pages));
    for (int i = 0; i < t.n && rc == 0; i++) {
        const struct sl_fan *f = &t.f[i];
        if (!f->ok || f->resp.status != 200) {
            rc = sl_errf(err, f->ok ? sl_code_from_status((int)f->resp.status) : SL_EUNAVAIL,
                         "list-objects %s://%s: target t[%s] (%s) did not answer: %s; the listing would be "
                         "incomplete",
                         sl_provider_scheme(b->provider), b->name, t.who[i]->id, t.who[i]->url, f->resp.err);
            break;
        }
        if (sl_lspage_from_msgpack(f->resp.body.p, f->resp.body.len, &pages[i], err) < 0)
            rc = -1;
    }
    if (rc == 0)
        sl_lspage_merge(pages, t.n, m->pagesize, out);
out:
    if (pages)
        for (int i = 0; i < t.n; i++)
            sl_lspage_free(&pages[i]);
    free(pages);
    free(bs);
    sl_tfan_free(&t);
    return rc;
}

int sl_cluster_to_coordinator(const char *kind, const char *id, const char *path, json_t *body, struct sl_err *err)
{
    struct sl_smap *sm = sl_smap_get();
    char *un = sl_xasprintf("%s/%s", kind, id);
    const struct sl_snode *t = sl_smap_hrw_target(sm, un, strlen(un));
    free(un);
    int rc = 0;
    if (!t || (t->flags & SL_SNF_OFFLINE)) {
        json_decref(body);
        rc = sl_errf(err, SL_EUNAVAIL, "%s: no target can coordinate the job (%s)", kind,
                     t ? "the chosen one is not responding" : "no targets");
    } else {
        char *url = sl_xasprintf("%s%s", t->ctrl_url, path);
        struct sl_peer_resp pr;
        int prc = sl_peer_json("POST", url, body, 0, &pr);
        if (prc < 0 || pr.status != 200)
            rc = sl_errf(err, prc < 0 ? SL_EUNAVAIL : sl_code_from_status((int)pr.status),
                         "failed to start [%s] on t[%s]: %s", kind, t->id, pr.err);
        sl_peer_resp_free(&pr);
        free(url);
    }
    sl_smap_put(sm);
    return rc;
}

int sl_tfan_start_job(unsigned flags, const char *path, const json_t *body, const char *what, const char *id,
                      struct sl_err *err)
{
    return sl_tfan_start_job_at(NULL, flags, path, body, what, id, err);
}

int sl_tfan_start_job_at(const char *tid, unsigned flags, const char *path, const json_t *body, const char *what,
                         const char *id, struct sl_err *err)
{
    size_t blen;
    char *bs = sl_json_dump(body, 0, &blen);
    struct sl_tfan t;
    sl_tfan_init(&t, flags, "POST", "%s", path);
    if (tid) { /* that one target only */
        int k = 0;
        for (int i = 0; i < t.n; i++) {
            if (strcmp(t.who[i]->id, tid)) {
                free((char *)t.f[i].url);
                continue;
            }
            t.f[k] = t.f[i];
            t.who[k++] = t.who[i];
        }
        t.n = k;
    }
    for (int i = 0; i < t.n; i++) {
        t.f[i].body = bs;
        t.f[i].blen = blen;
    }
    sl_tfan_run(&t, 0);
    int rc = 0;
    if (!t.n && tid)
        rc = sl_errf(err, SL_EUNAVAIL, "%s: target t[%s] is offline or not in the cluster map", what, tid);
    else if (!t.n)
        rc = sl_errf(err, SL_EUNAVAIL, "%s: the cluster has no targets", what);
    for (int i = 0; i < t.n && rc == 0; i++)
        if (!t.f[i].ok || t.f[i].resp.status != 200)
            rc = sl_errf(err, t.f[i].ok ? sl_code_from_status((int)t.f[i].resp.status) : SL_EUNAVAIL,
                         "%s: t[%s]: %s (targets that did start go on; follow job %s)", what, t.who[i]->id,
                         t.f[i].ok ? t.f[i].resp.err : "no answer", id);
    sl_tfan_free(&t);
    free(bs);
    if (rc < 0 && id[0])
        sl_cluster_abort_job(id);
    return rc;
}
