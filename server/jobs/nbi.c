/* SPDX-License-Identifier: MIT
 * nbi.c: native bucket inventory (AIStore's NBI, `ais nbi create|show`,
 * `ais ls --inventory`), of remote buckets:
 *
 *   POST   /v1/buckets/B?provider=P {"action": "create-inventory", "value": CreateNBIMsg}  -> job id (inv-...)
 *   GET    /v1/buckets/B?provider=P {"action": "show-inventory", "name": INV?}           -> {INV: NBIInfo}
 *   DELETE /v1/buckets/B?provider=P {"action": "destroy-inventory", "name": INV?}        -> 200
 *   GET    /v1/buckets/B?provider=P {"action": "list", "value": {"flags": "32768", ...}} (Ais-Inv-Name: INV)
 *
 * Job create-inventory runs on every target: each lists the remote (under
 * the message's prefix) and keeps the names it owns, with their sizes, in
 * its share of the inventory (target/inv.c); a listing with flag 32768 then
 * merges the shares as an ais:// listing is merged, and never asks the
 * remote (cached says whether the cluster holds each object now). One
 * inventory a bucket: a second is refused (409) unless "force".
 */
#include "nbi.h"
#include "backend.h"
#include "cluster.h"
#include "inv.h"
#include "jsonx.h"
#include "log.h"
#include "module.h"
#include "node.h"
#include "xact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBI_NAME_MAX 64

struct nbi_req {
    char id[40];
    struct sl_bck b;
    char name[NBI_NAME_MAX + 1];
    char *prefix;
    bool force;                 /* (the gateway's) make it anew over one that exists */
    char bname[SL_MAX_BCKNAME + 1], prov[16]; /* (the gateway's, resolved off the HTTP thread) */
};

static void req_free(void *arg)
{
    struct nbi_req *q = arg;
    sl_bck_release(&q->b);
    free(q->prefix);
    free(q);
}

/* ---- a target's share ---- */

struct walk {
    struct sl_job *job;
    struct sl_inv_w *w;
    struct sl_smap *sm;
    const struct sl_bck *b;
    struct sl_err *err;
};

static int remote_ent(void *ctx, const char *name, size_t len, const struct sl_backend_obj *o)
{
    struct walk *w = ctx;
    if (!sl_obj_owned_here(w->sm, w->b, name, len))
        return 0;
    if (sl_inv_add(w->w, name, len, o && o->size > 0 ? (uint64_t)o->size : 0, w->err) < 0)
        return 1;
    sl_job_add(&w->job->loc_objs, 1);
    return 0;
}

static void *nbi_thread(void *arg)
{
    struct nbi_req *q = arg;
    struct sl_job *job = sl_job_start("create-inventory", q->id, q->b.name, "");
    struct sl_err err = { 0 };
    int64_t started = sl_now_ns();
    struct sl_smap *sm = sl_smap_get();
    struct walk w = { job, sl_inv_begin(&q->b, &err), sm, &q->b, &err };
    int rc = w.w ? 0 : -1;
    char tok[4096] = "", next[4096];
    for (int pg = 0; rc == 0 && pg < 10000000 && !sl_job_aborting(job); pg++) {
        if (sl_backend_list_page(&q->b, q->prefix, tok, 1000, remote_ent, &w, next, sizeof(next), &err) < 0) {
            rc = -1;
            break;
        }
        if (!next[0])
            break;
        snprintf(tok, sizeof(tok), "%s", next);
    }
    if (w.w) {
        bool ok = rc == 0 && !sl_job_aborting(job);
        json_t *meta = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:i}", "name", q->name, "prefix", q->prefix, "started",
                                 (json_int_t)started, "finished", (json_int_t)sl_now_ns(), "ntotal",
                                 (json_int_t)job->loc_objs, "smap_ver", (json_int_t)sm->version, "nat",
                                 sl_smap_count(sm, SL_NODE_TARGET, true));
        if (sl_inv_end(w.w, ok, meta, rc == 0 ? &err : &(struct sl_err){ 0 }) < 0)
            rc = -1;
    }
    sl_smap_put(sm);
    if (rc < 0)
        sl_logw("create-inventory %s: %s://%s: %s", job->id, sl_provider_scheme(q->b.provider), q->b.name, err.msg);
    else
        sl_logi("create-inventory %s: %s://%s: %llu name(s) here", job->id, sl_provider_scheme(q->b.provider),
                q->b.name, (unsigned long long)job->loc_objs);
    sl_job_finish(job, rc < 0 ? err.msg : sl_job_aborting(job) ? "aborted" : NULL);
    sl_job_put(job);
    req_free(q);
    return NULL;
}

/* the bucket of an internal request (?bck=&provider=) */
static int internal_bck(struct sl_req *r, struct sl_bck *b, struct sl_err *err)
{
    const char *bn = sl_req_query(r, "bck");
    return sl_bck_resolve(bn ? bn : "", sl_req_query(r, "provider"), NULL, b, err);
}

/* POST /v1/internal/nbi/start?bck=&provider= {"id", "name", "prefix", "force"}: on a DISK pool thread
 * (the inventory's metadata is read first) */
static void internal_start(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    struct nbi_req *q = sl_xcalloc(1, sizeof(*q));
    if (!json_is_object(j) || internal_bck(r, &q->b, &err) < 0) {
        if (!err.msg[0])
            sl_errf(&err, SL_EINVAL, "create-inventory start: bad body");
        free(q);
        json_decref(j);
        sl_resp_err(r, &err);
        return;
    }
    snprintf(q->id, sizeof(q->id), "%s", sl_json_str(j, "id", ""));
    snprintf(q->name, sizeof(q->name), "%s", sl_json_str(j, "name", ""));
    q->prefix = sl_xstrdup(sl_json_str(j, "prefix", ""));
    bool force = json_is_true(json_object_get(j, "force"));
    json_decref(j);
    json_t *had = sl_inv_meta(&q->b);
    if (had && !force) {
        sl_resp_errf(r, SL_EEXIST, "%s://%s has an inventory (\"%s\") on t[%s]: one a bucket; set \"force\" to make "
                     "it anew", sl_provider_scheme(q->b.provider), q->b.name, sl_json_str(had, "name", ""), G.id);
        json_decref(had);
        req_free(q);
        return;
    }
    json_decref(had);
    sl_run_detached(nbi_thread, q);
    sl_resp_empty(r, 200);
}

static void internal_start_body(struct sl_req *r)
{
    sl_req_offload_disk(r, internal_start, NULL, NULL);
}

static void internal_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    struct sl_bck b;
    if (internal_bck(r, &b, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    if (r->method == SL_M_GET) { /* show: this target's metadata, or {} */
        json_t *m = sl_inv_meta(&b);
        sl_resp_json_new(r, 200, m ? m : json_object());
    } else if (sl_inv_destroy(&b, &err) < 0) {
        sl_resp_err(r, &err);
    } else {
        sl_resp_empty(r, 200);
    }
    sl_bck_release(&b);
}

static void internal_body(struct sl_req *r)
{
    sl_req_offload_disk(r, internal_run, NULL, NULL);
}

static bool nbi_internal(struct sl_req *r)
{
    if (!strcmp(r->path, "/v1/internal/nbi/start")) {
        if (r->method != SL_M_POST)
            sl_resp_method_not_allowed(r, "POST");
        else
            sl_req_buffer_body(r, 64 * 1024, internal_start_body);
        return true;
    }
    if (strcmp(r->path, "/v1/internal/nbi"))
        return false;
    if (r->method != SL_M_GET && r->method != SL_M_DELETE)
        sl_resp_method_not_allowed(r, "GET, DELETE");
    else
        sl_req_buffer_body(r, 64 * 1024, internal_body);
    return true;
}

/* ---- the gateway ---- */

/* every target's metadata (show): {tid: meta|{}}, or NULL with err */
static json_t *collect(const struct sl_bck *b, struct sl_err *err)
{
    char *eb = sl_url_encode_query(b->name);
    struct sl_tfan t;
    sl_tfan_init(&t, 0, "GET", "/v1/internal/nbi?bck=%s&provider=%s", eb, b->provider);
    free(eb);
    sl_tfan_run(&t, sl_conf->cplane_timeout_ns / 1000000 * 5);
    json_t *all = json_object();
    for (int i = 0; i < t.n; i++) {
        if (!t.f[i].ok || t.f[i].resp.status != 200) {
            sl_errf(err, t.f[i].ok ? sl_code_from_status((int)t.f[i].resp.status) : SL_EUNAVAIL,
                    "inventory of %s://%s: t[%s]: %s", sl_provider_scheme(b->provider), b->name, t.who[i]->id,
                    t.f[i].ok ? t.f[i].resp.err : "no answer");
            json_decref(all);
            all = NULL;
            break;
        }
        json_t *j = json_loadb(t.f[i].resp.body.p, t.f[i].resp.body.len, 0, NULL);
        json_object_set_new(all, t.who[i]->id, j ? j : json_object());
    }
    sl_tfan_free(&t);
    return all;
}

/* AIStore's NBIInfoMap, the shares merged: {name: {name, obj_name, prefix, size, ntotal, chunks, started,
 * finished, smap_ver, nat}} (only "name" when given) */
static json_t *merged(const struct sl_bck *b, json_t *all, const char *only)
{
    json_t *out = json_object();
    const char *tid;
    json_t *m;
    json_object_foreach(all, tid, m) {
        const char *nm = sl_json_str(m, "name", NULL);
        if (!nm || (only && *only && strcmp(only, nm)))
            continue;
        json_t *e = json_object_get(out, nm);
        if (!e) {
            e = json_pack("{s:s,s:s%,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "name", nm, "obj_name",
                          "", (size_t)0, "prefix", sl_json_str(m, "prefix", ""), "size", (json_int_t)0, "ntotal",
                          (json_int_t)0, "chunks", (json_int_t)0, "started", (json_int_t)0, "finished", (json_int_t)0,
                          "smap_ver", (json_int_t)sl_json_int(m, "smap_ver", 0), "nat",
                          (json_int_t)sl_json_int(m, "nat", 0));
            char *on = sl_xasprintf("%s/@#/%s/%s", b->provider, b->name, nm);
            json_object_set_new(e, "obj_name", json_string(on));
            free(on);
            json_object_set_new(out, nm, e);
        }
        int64_t st = sl_json_int(m, "started", 0), fi = sl_json_int(m, "finished", 0);
        int64_t est = sl_json_int(e, "started", 0), efi = sl_json_int(e, "finished", 0);
        json_object_set_new(e, "ntotal", json_integer(sl_json_int(e, "ntotal", 0) + sl_json_int(m, "ntotal", 0)));
        if (st && (!est || st < est))
            json_object_set_new(e, "started", json_integer(st));
        if (fi > efi)
            json_object_set_new(e, "finished", json_integer(fi));
    }
    return out;
}

static bool remote_only(struct sl_req *r, const struct sl_bck *b, const char *act)
{
    if (sl_bck_remote(b))
        return true;
    sl_resp_errf(r, SL_EINVAL, "%s: %s://%s is not a remote bucket: an inventory is a snapshot of a remote bucket's "
                 "names (an ais:// bucket is listed from its own metadata)", act, sl_provider_scheme(b->provider),
                 b->name);
    return false;
}

static void create_run(struct sl_req *r, void *arg)
{
    struct nbi_req *q = arg;
    struct sl_err err = { 0 };
    /* a remote bucket the cluster has not seen yet is added first, as AIStore's first access does */
    if (sl_bck_resolve_add(q->bname, q->prov, &q->b, &err) < 0) {
        sl_resp_err(r, &err);
        req_free(q);
        return;
    }
    if (!remote_only(r, &q->b, "create-inventory")) {
        req_free(q);
        return;
    }
    json_t *all = collect(&q->b, &err);
    json_t *had = all ? merged(&q->b, all, NULL) : NULL;
    if (!all) {
        sl_resp_err(r, &err);
    } else if (json_object_size(had) && !q->force) {
        const char *k = json_object_iter_key(json_object_iter(had));
        sl_resp_errf(r, SL_EEXIST, "%s://%s has an inventory already (\"%s\"): one a bucket; set \"force\" to make it "
                     "anew, or destroy-inventory first", sl_provider_scheme(q->b.provider), q->b.name, k);
    } else {
        char *eb = sl_url_encode_query(q->b.name);
        char *path = sl_xasprintf("/v1/internal/nbi/start?bck=%s&provider=%s", eb, q->b.provider);
        json_t *body = json_pack("{s:s,s:s,s:s,s:b}", "id", q->id, "name", q->name, "prefix", q->prefix, "force",
                                 1);
        if (sl_tfan_start_job(SL_TF_SKIP_OFFLINE, path, body, "create-inventory", q->id, &err) < 0)
            sl_resp_err(r, &err);
        else
            sl_resp_text(r, 200, q->id);
        json_decref(body);
        free(path);
        free(eb);
    }
    json_decref(had);
    json_decref(all);
    req_free(q);
}

/* CreateNBIMsg: {name, force, prefix, props, flags, names_per_chunk, pages_per_chunk, max_entries_per_chunk}
 * and LsoMsg's other fields (uuid, pagesize, time_format: ignored, as AIStore does) */
static int create_parse(const json_t *v, struct nbi_req *q, struct sl_err *err)
{
    if (v && !json_is_object(v))
        return sl_errf(err, SL_EINVAL, "create-inventory: \"value\" must be an object (CreateNBIMsg)");
    const char *nm = sl_json_str(v, "name", "");
    if (strlen(nm) > NBI_NAME_MAX || strspn(nm, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
                                         strlen(nm))
        return sl_errf(err, SL_EINVAL, "create-inventory: name \"%.80s\": up to %d of letters, digits, '-', '_', '.'",
                       nm, NBI_NAME_MAX);
    if (*sl_json_str(v, "continuation_token", ""))
        return sl_errf(err, SL_EINVAL, "invalid 'create-inventory': continuation_token must be empty");
    if (*sl_json_str(v, "start_after", ""))
        return sl_errf(err, SL_EINVAL, "invalid 'create-inventory': start_after is not supported");
    struct sl_lsomsg m;
    int rc = sl_lsomsg_parse(v, &m, 1000, err);
    const uint64_t bad = SL_LSO_CACHED | SL_LSO_MISSING | SL_LSO_DELETED | SL_LSO_ARCH_DIR | 64 /* bck-present */ |
                         128 | 256 | 512 | 1024 | SL_LSO_NO_RECURSION | 4096 | 16384 | SL_LSO_NBI;
    if (rc == 0 && (m.flags & bad))
        rc = sl_errf(err, SL_EINVAL, "invalid 'create-inventory': flags %llu: an inventory is the remote's whole "
                     "(flat) namespace under the prefix", (unsigned long long)(m.flags & bad));
    if (rc == 0 && (m.props & ~(unsigned)(SL_LP_NAME | SL_LP_SIZE | SL_LP_CACHED)))
        rc = sl_errf(err, SL_EINVAL, "create-inventory: props \"%s\": an inventory keeps name and size (and a "
                     "listing from it says cached)", m.props_str);
    static const char *const ints[] = { "names_per_chunk", "pages_per_chunk", "max_entries_per_chunk" };
    for (size_t i = 0; rc == 0 && i < SL_ARRAY_SIZE(ints); i++) {
        json_t *x = json_object_get(v, ints[i]);
        if (x && !json_is_null(x) && (!json_is_integer(x) || json_integer_value(x) != 0))
            rc = sl_errf(err, SL_EINVAL, "create-inventory: \"%s\" has no effect here (an inventory is LMDB "
                         "records on each target, not chunked objects): leave it 0", ints[i]);
    }
    if (rc == 0) {
        snprintf(q->name, sizeof(q->name), "%s", nm);
        q->prefix = sl_xstrdup(m.prefix);
        q->force = json_is_true(json_object_get(v, "force"));
    }
    sl_lsomsg_free(&m);
    return rc;
}

static bool nbi_bucket_post(struct sl_req *r, const char *bucket, struct sl_actmsg *m)
{
    if (strcmp(m->action, "create-inventory"))
        return false;
    struct sl_err err = { 0 };
    struct nbi_req *q = sl_xcalloc(1, sizeof(*q));
    const char *prov = sl_req_query(r, "provider");
    snprintf(q->bname, sizeof(q->bname), "%s", bucket);
    snprintf(q->prov, sizeof(q->prov), "%s", prov && *prov ? prov : "ais");
    if (create_parse(m->value, q, &err) < 0) {
        req_free(q);
        sl_resp_err(r, &err);
        return true;
    }
    char rid[16];
    sl_rand_id(rid, 10);
    snprintf(q->id, sizeof(q->id), "inv-%s", rid);
    if (!q->name[0])
        snprintf(q->name, sizeof(q->name), "%s", q->id);
    sl_req_offload(r, create_run, req_free, q);
    return true;
}

struct show_req {
    struct sl_bck b;
    char *only;
    bool destroy;
};

static void show_free(void *arg)
{
    struct show_req *s = arg;
    sl_bck_release(&s->b);
    free(s->only);
    free(s);
}

static void show_run(struct sl_req *r, void *arg)
{
    struct show_req *s = arg;
    struct sl_err err = { 0 };
    json_t *all = collect(&s->b, &err);
    json_t *info = all ? merged(&s->b, all, s->only) : NULL;
    if (!all) {
        sl_resp_err(r, &err);
    } else if (!s->destroy) {
        sl_resp_json_new(r, 200, json_incref(info));
    } else if (!json_object_size(info)) {
        sl_resp_errf(r, SL_ENOENT, "%s://%s has no inventory%s%s%s", sl_provider_scheme(s->b.provider), s->b.name,
                     s->only[0] ? " named \"" : "", s->only, s->only[0] ? "\"" : "");
    } else {
        char *eb = sl_url_encode_query(s->b.name);
        struct sl_tfan t;
        sl_tfan_init(&t, 0, "DELETE", "/v1/internal/nbi?bck=%s&provider=%s", eb, s->b.provider);
        free(eb);
        sl_tfan_run(&t, sl_conf->cplane_timeout_ns / 1000000 * 5);
        for (int i = 0; i < t.n && !err.msg[0]; i++)
            if (!t.f[i].ok || t.f[i].resp.status != 200)
                sl_errf(&err, t.f[i].ok ? sl_code_from_status((int)t.f[i].resp.status) : SL_EUNAVAIL,
                        "destroy-inventory of %s://%s: t[%s]: %s", sl_provider_scheme(s->b.provider), s->b.name,
                        t.who[i]->id, t.f[i].ok ? t.f[i].resp.err : "no answer");
        sl_tfan_free(&t);
        if (err.msg[0])
            sl_resp_err(r, &err);
        else
            sl_resp_empty(r, 200);
    }
    json_decref(info);
    json_decref(all);
    show_free(s);
}

static bool show_or_destroy(struct sl_req *r, const char *bucket, struct sl_actmsg *m, bool destroy)
{
    struct sl_err err = { 0 };
    struct show_req *s = sl_xcalloc(1, sizeof(*s));
    if (sl_bck_resolve(bucket, sl_req_query(r, "provider"), sl_req_query(r, "namespace"), &s->b, &err) < 0) {
        free(s);
        sl_resp_err(r, &err);
        return true;
    }
    if (!remote_only(r, &s->b, m->action)) {
        sl_bck_release(&s->b);
        free(s);
        return true;
    }
    s->only = sl_xstrdup(m->name);
    s->destroy = destroy;
    sl_req_offload(r, show_run, show_free, s);
    return true;
}

static bool nbi_bucket_get(struct sl_req *r, const char *bucket, struct sl_actmsg *m)
{
    if (strcmp(m->action, "show-inventory"))
        return false;
    if (!bucket[0]) {
        sl_resp_errf(r, SL_EINVAL, "show-inventory: name the bucket (GET /v1/buckets/BUCKET?provider=...)");
        return true;
    }
    return show_or_destroy(r, bucket, m, false);
}

static bool nbi_bucket_delete(struct sl_req *r, const char *bucket, struct sl_actmsg *m)
{
    if (strcmp(m->action, "destroy-inventory"))
        return false;
    return show_or_destroy(r, bucket, m, true);
}

const struct sl_module sl_nbi_module = {
    .name = "nbi",
    .internal = nbi_internal,
    .bucket_post = nbi_bucket_post,
    .post_actions = ", create-inventory",
    .bucket_get = nbi_bucket_get,
    .get_actions = ", show-inventory",
    .bucket_delete = nbi_bucket_delete,
    .delete_actions = ", destroy-inventory",
};
