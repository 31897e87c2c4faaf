/* SPDX-License-Identifier: MIT
 * prx.c: gateway (proxy) handlers for buckets: create, destroy, HEAD,
 * properties, list buckets, list objects. Bucket metadata changes go
 * through sl_bmd_modify (versioned, persisted, distributed by the cluster
 * module); listing asks every target for a page and merges them.
 */
#include "prx.h"
#include "backend.h"
#include "remais.h"
#include "bsumm.h"
#include "cluster.h"
#include "cksum.h"
#include "ec.h"
#include "jsonx.h"
#include "log.h"
#include "lost.h"
#include "lso.h"
#include "mirror.h"
#include "module.h"
#include "node.h"
#include "stats.h"
#include "s3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *bucket_actions_post = "create-bck, make-n-copies, ec-encode";

/* Bucket name from /v1/buckets/<name>[/...]: returns "" if none. */
static char *bucket_from_path(struct sl_req *r)
{
    const char *p = r->path + strlen("/v1/buckets");
    while (*p == '/')
        p++;
    const char *e = strchr(p, '/');
    return e ? sl_xstrndup(p, (size_t)(e - p)) : sl_xstrdup(p);
}

/* ---- create / destroy ---- */

/* A BMD edit on prov://name (prov normalised: "ais", "aws") */
struct bck_arg {
    const char *prov, *name;
    json_t *props;
    bool reset;
    /* mirror: the fewest mountpaths of a target (-1: not asked, the change
     * leaves mirror alone), which target, and replicas before and after */
    int min_mpaths;
    char min_who[64];
    int old_want, new_want;
    bool old_ec, new_ec;    /* ec.enabled before and after */
};

/* EC on needs D+P+1 targets (P+1 when every object is replicated) */
static int ec_fits(struct bck_arg *a, const struct sl_bck *k, struct sl_err *err)
{
    int d, p;
    int64_t lim;
    a->new_ec = sl_ec_props(k, &d, &p, &lim);
    if (!a->new_ec || (a->old_ec && a->props && !json_object_get(a->props, "ec")))
        return 0;
    int need = lim < 0 ? p + 1 : d + p + 1, have = 0;
    struct sl_smap *s = sl_smap_get();
    for (int i = 0; i < s->nnodes; i++)
        if (s->nodes[i].type == SL_NODE_TARGET && !(s->nodes[i].flags & (SL_SNF_MAINT | SL_SNF_DECOMM)))
            have++;
    sl_smap_put(s);
    if (G.role == SL_ROLE_STANDALONE)
        have = 1;
    if (have >= need)
        return 0;
    return sl_errf(err, SL_EINVAL, "EC configuration (D = %d, P = %d) requires at least %d targets (have %d); "
                   "nothing was changed", d, p, need, have);
}

/* The new props want more replicas than some target has mountpaths. */
static int mirror_fits(struct bck_arg *a, const struct sl_bck *k, struct sl_err *err)
{
    a->new_want = sl_mirror_want(k);
    if (a->min_mpaths < 0 || a->new_want <= a->min_mpaths)
        return 0;
    return sl_errf(err, SL_EINVAL, "not enough mountpaths (%d) to configure %s://%s as %d-way mirror (%s has %d; "
                   "add mountpaths or ask for fewer copies); nothing was changed", a->min_mpaths,
                   sl_provider_scheme(a->prov), a->name, a->new_want, a->min_who, a->min_mpaths);
}

static int edit_create(struct sl_bmd *b, void *arg, struct sl_err *err)
{
    struct bck_arg *ca = arg;
    if (sl_bmd_find(b, ca->prov, ca->name))
        return sl_errf(err, SL_EBCKEXIST, "bucket \"%s://%s\" already exists", sl_provider_scheme(ca->prov),
                       ca->name);
    const struct sl_bck *k = sl_bmd_add(b, ca->prov, ca->name, ca->props, err);
    return k && sl_backend_check_props(k->props, err) == 0 && mirror_fits(ca, k, err) == 0 &&
           ec_fits(ca, k, err) == 0 ? 0 : -1;
}

static int edit_destroy(struct sl_bmd *b, void *arg, struct sl_err *err)
{
    struct bck_arg *da = arg;
    const struct sl_bck *k = sl_bmd_find(b, da->prov, da->name);
    if (!k)
        return sl_errf(err, SL_ENOBCK, "bucket \"%s://%s\" does not exist", sl_provider_scheme(da->prov), da->name);
    const char *to = json_string_value(json_object_get(k->props, "renamed"));
    const char *from = json_string_value(json_object_get(k->props, "renaming_from"));
    if (to || from)
        return sl_errf(err, SL_EBUSY, "ais://%s is being renamed %s ais://%s: destroy it when the rename is done; "
                       "nothing was destroyed", da->name, to ? "to" : "from", to ? to : from);
    sl_bmd_remove(b, da->prov, da->name); /* the targets drop its data (sl_tgt_bmd_changed) */
    return 0;
}

static int edit_props(struct sl_bmd *b, void *arg, struct sl_err *err)
{
    struct bck_arg *pa = arg;
    const struct sl_bck *k = sl_bmd_find(b, pa->prov, pa->name);
    pa->old_want = k ? sl_mirror_want(k) : 1;
    int d, p;
    int64_t lim;
    pa->old_ec = k && sl_ec_props(k, &d, &p, &lim);
    if (sl_bmd_set_props(b, pa->prov, pa->name, pa->props, pa->reset, err) < 0)
        return -1;
    k = sl_bmd_find(b, pa->prov, pa->name);
    return k ? (sl_backend_check_props(k->props, err) < 0 || mirror_fits(pa, k, err) < 0 ||
                ec_fits(pa, k, err) < 0 ? -1 : 0) : 0;
}

/* The request's provider, normalised into *prov: ais, or one with a
 * backend plugin loaded here. */
static int check_provider(struct sl_req *r, const char *name, const char **prov, struct sl_err *err)
{
    const char *q = sl_req_query(r, "provider");
    const char *p = sl_provider_norm(q);
    if (!p)
        return sl_errf(err, SL_EINVAL, "invalid provider \"%s\" (valid: ais, aws/s3, gcp/gs, azure/az, oci/oc)", q);
    if (strcmp(p, "ais") && !sl_backend_loaded(p))
        return sl_errf(err, SL_EUNSUPP,
                       "operation on %s bucket \"%s://%s\" is not supported: no %s backend is configured in this "
                       "cluster",
                       p, sl_provider_scheme(p), name, p);
    const char *ns = sl_req_query(r, "namespace");
    if (ns && *ns && strcmp(ns, "@#") && strcmp(ns, "#"))
        return sl_errf(err, SL_EUNSUPP, "bucket namespace \"%s\" is not supported (only the global namespace)", ns);
    *prov = p;
    return 0;
}

/* BMD changes go to every node (metasync): never on an HTTP thread */
enum { BMD_CREATE, BMD_DESTROY, BMD_PROPS };

struct bmd_job {
    int kind;
    const char *prov;   /* static: sl_provider_norm's */
    char *name;
    json_t *value;
    bool reset, head_remote;
    bool make_n;        /* make-n-copies: the job runs even when the props stay as they were */
    bool ec_encode;     /* ec-encode: likewise */
};

static void bmd_job_free(void *arg)
{
    struct bmd_job *j = arg;
    json_decref(j->value);
    free(j->name);
    free(j);
}

/* create-bck of s3://name: the remote must have the bucket (with the
 * endpoint and credentials the props being set name) */
static int head_remote(const struct bmd_job *j, struct sl_err *err)
{
    struct sl_bck probe;
    memset(&probe, 0, sizeof(probe));
    snprintf(probe.provider, sizeof(probe.provider), "%s", j->prov);
    snprintf(probe.name, sizeof(probe.name), "%s", j->name);
    probe.props = j->value;
    if (sl_backend_head_bucket(&probe, err) == 0)
        return 0;
    char m[sizeof(err->msg)];
    snprintf(m, sizeof(m), "%s", err->msg);
    return sl_errf(err, err->code, "%s; nothing was created (to add the bucket without asking the remote, "
                   "create it with --skip-lookup)", m);
}

/* The fewest mountpaths any target has (a mirror cannot have more
 * replicas), asked of every target that is not offline: 0, or -1 when one
 * does not answer. */
int sl_prx_min_mountpaths(int *min, char *who, size_t wsz, struct sl_err *err)
{
    *min = -1;
    if (G.role == SL_ROLE_STANDALONE) {
        *min = 0;
        for (int i = 0; i < sl_store_nmpaths(); i++)
            *min += sl_store_mpath_usable(sl_store_mpath(i));
        snprintf(who, wsz, "t[%s]", G.id);
        return 0;
    }
    struct sl_tfan t;
    sl_tfan_init(&t, SL_TF_SKIP_OFFLINE, "GET", "/v1/daemon?what=node_status");
    sl_tfan_run(&t, sl_conf->cplane_timeout_ns / 1000000);
    int rc = 0;
    for (int i = 0; i < t.n && rc == 0; i++) {
        json_error_t je;
        json_t *j = t.f[i].ok && t.f[i].resp.status == 200
                        ? sl_json_loadb_u64(t.f[i].resp.body.p, t.f[i].resp.body.len, &je) : NULL;
        json_t *nd = json_object_get(json_object_get(j, "capacity"), "num_disks");
        if (!json_is_integer(nd))
            rc = sl_errf(err, SL_EUNAVAIL, "cannot ask t[%s] how many mountpaths it has (%s): a mirror's copies "
                         "need that many mountpaths on every target; nothing was changed, retry when it answers",
                         t.who[i]->id, t.f[i].ok ? t.f[i].resp.err[0] ? t.f[i].resp.err : "no capacity in its answer"
                         : "no answer");
        else if (*min < 0 || json_integer_value(nd) < *min) {
            *min = (int)json_integer_value(nd);
            snprintf(who, wsz, "t[%s]", t.who[i]->id);
        }
        json_decref(j);
    }
    if (rc == 0 && *min < 0)
        rc = sl_errf(err, SL_EUNAVAIL, "the cluster has no targets to mirror on; nothing was changed");
    sl_tfan_free(&t);
    return rc;
}

/* make-n-copies on every target (standalone: here); id filled */
static int mirror_job_start(const char *prov, const char *name, int copies, char *id, size_t idsz,
                            struct sl_err *err)
{
    sl_job_id(id, idsz, "");
    if (G.role == SL_ROLE_STANDALONE)
        return sl_mirror_start(id, prov, name, copies, err);
    json_t *body = json_pack("{s:s,s:s,s:s,s:i}", "id", id, "provider", prov, "bck", name, "copies", copies);
    int rc = sl_tfan_start_job(SL_TF_SKIP_OFFLINE, "/v1/internal/mirror/start", body, "make-n-copies", id, err);
    json_decref(body);
    return rc;
}

/* ec-encode on every target; id filled */
static int ec_job_start(const char *prov, const char *name, char *id, size_t idsz, struct sl_err *err)
{
    sl_job_id(id, idsz, "");
    if (G.role == SL_ROLE_STANDALONE)
        return sl_errf(err, SL_EINVAL, "erasure coding needs a cluster of targets; this node is standalone");
    json_t *body = json_pack("{s:s,s:s,s:s}", "id", id, "provider", prov, "bck", name);
    int rc = sl_tfan_start_job(SL_TF_SKIP_OFFLINE, "/v1/internal/ec/start", body, "ec-encode", id, err);
    json_decref(body);
    return rc;
}

static void bmd_run(struct sl_req *r, void *arg)
{
    struct bmd_job *j = arg;
    struct sl_err err = { 0 };
    struct bck_arg a = { j->prov, j->name, j->value, j->reset, -1, "", 1, 1, false, false };
    const char *sch = sl_provider_scheme(j->prov);
    int rc;
    if (sl_cluster_fence(&err) < 0) {
        sl_resp_err(r, &err);
        bmd_job_free(j);
        return;
    }
    /* a change that turns on or resizes a mirror must fit every target (so must a new or reset bucket
     * that gets the cluster's mirror.* defaults) */
    bool mi = !j->reset && json_object_get(j->value, "mirror");
    bool dflt = sl_conf->mirror_enabled && (j->kind == BMD_CREATE || j->reset);
    if ((mi || dflt) && j->kind != BMD_DESTROY &&
        sl_prx_min_mountpaths(&a.min_mpaths, a.min_who, sizeof(a.min_who), &err) < 0) {
        sl_resp_err(r, &err);
        bmd_job_free(j);
        return;
    }
    if (j->kind == BMD_CREATE) {
        rc = j->head_remote ? head_remote(j, &err) : 0;
        if (rc == 0)
            rc = sl_bmd_modify(edit_create, &a, &err);
        if (rc == 0)
            sl_logi("created bucket %s://%s", sch, j->name);
    } else if (j->kind == BMD_DESTROY) {
        rc = s3_lock_destroy_check(j->name, j->prov, &err); /* locked versions keep it (s3lock.c) */
        if (rc == 0)
            rc = sl_bmd_modify(edit_destroy, &a, &err);
        if (rc == 0)
            sl_logi("%s bucket %s://%s", strcmp(j->prov, "ais") ? "evicted" : "destroyed", sch, j->name);
    } else {
        rc = sl_bmd_modify(edit_props, &a, &err);
    }
    char id[64] = "";
    if (rc == 0 && j->kind == BMD_PROPS && (a.new_want != a.old_want || j->make_n)) {
        /* mirror changed (or make-n-copies): existing objects get the new number of replicas */
        a.new_want = a.new_want < 1 ? 1 : a.new_want;
        rc = mirror_job_start(j->prov, j->name, a.new_want, id, sizeof(id), &err);
        if (rc < 0)
            sl_err_wrap(&err, "%s://%s now has mirror.copies=%d, but starting make-n-copies failed (run it again: "
                        "make-n-copies %d)", sch, j->name, a.new_want, a.new_want);
        else
            sl_logi("%s://%s: %d replica(s) per object: make-n-copies %s", sch, j->name, a.new_want, id);
    }
    if (rc == 0 && j->kind == BMD_PROPS && a.new_ec && (!a.old_ec || j->ec_encode)) {
        /* EC turned on (or ec-encode): existing objects get their slices */
        rc = ec_job_start(j->prov, j->name, id, sizeof(id), &err);
        if (rc < 0)
            sl_err_wrap(&err, "%s://%s now has erasure coding enabled, but starting ec-encode failed (run it again)",
                        sch, j->name);
        else
            sl_logi("%s://%s: erasure coding on: ec-encode %s", sch, j->name, id);
    }
    if (rc < 0)
        sl_resp_err(r, &err);
    else if (id[0])
        sl_resp_text(r, 200, id);
    else
        sl_resp_empty(r, 200);
    bmd_job_free(j);
}

static void bmd_offload(struct sl_req *r, int kind, const char *prov, const char *name, const json_t *value,
                        bool reset)
{
    struct bmd_job *j = sl_xcalloc(1, sizeof(*j));
    j->kind = kind;
    j->prov = prov;
    j->name = sl_xstrdup(name);
    j->value = value ? json_deep_copy(value) : NULL;
    j->reset = reset;
    /* AIStore's dont_head_remote_bck (CLI --skip-lookup) */
    j->head_remote = kind == BMD_CREATE && strcmp(prov, "ais") && !sl_req_query_bool(r, "dont_head_remote_bck");
    sl_req_offload(r, bmd_run, bmd_job_free, j);
}

/* ---- first access to a remote bucket ---- */

struct first_access {
    const char *prov;
    char *name;
};

static void first_access_free(void *arg)
{
    struct first_access *f = arg;
    free(f->name);
    free(f);
}

static void first_access_run(struct sl_req *r, void *arg)
{
    struct first_access *f = arg;
    struct sl_err err = { 0 };
    if (sl_bck_add_remote(f->prov, f->name, &err) < 0)
        sl_resp_err(r, &err); /* else no answer: the request is routed again, and finds the bucket */
    first_access_free(f);
}

bool sl_prx_first_access(struct sl_req *r)
{
    if (r->rerouted || (G.role != SL_ROLE_PROXY && G.role != SL_ROLE_STANDALONE))
        return false;
    const char *p = sl_provider_norm(sl_req_query(r, "provider"));
    if (!p || !strcmp(p, "ais") || !sl_backend_loaded(p))
        return false;
    bool obj = sl_req_path_is(r, "/v1/objects");
    if (!obj && !(sl_req_path_is(r, "/v1/buckets") && (r->method == SL_M_GET || r->method == SL_M_HEAD)))
        return false; /* create, destroy, props: their handlers say what they say */
    const char *s = r->path + strlen(obj ? "/v1/objects" : "/v1/buckets");
    while (*s == '/')
        s++;
    size_t n = strcspn(s, "/");
    if (!n || n > SL_MAX_BCKNAME)
        return false;
    char name[SL_MAX_BCKNAME + 1];
    memcpy(name, s, n);
    name[n] = 0;
    struct sl_bmd *b = sl_bmd_get();
    bool known = sl_bmd_find(b, p, name) != NULL;
    sl_bmd_put(b);
    struct sl_err err = { 0 };
    if (known || sl_bck_name_valid(name, &err) < 0)
        return false;
    struct first_access *f = sl_xcalloc(1, sizeof(*f));
    f->prov = p;
    f->name = sl_xstrdup(name);
    sl_req_offload_reroute(r, first_access_run, first_access_free, f);
    return true;
}

/* POST {"action": "make-n-copies", "value": N}: mirror.copies=N,
 * mirror.enabled=N>1, and the job that gives every object N replicas */
static void make_n_copies(struct sl_req *r, const char *name, const json_t *v)
{
    struct sl_err err = { 0 };
    const char *prov = "ais";
    long long n = json_is_integer(v) ? (long long)json_integer_value(v) : -1;
    if (json_is_string(v)) { /* "2": a number written as a string */
        char *end;
        n = strtoll(json_string_value(v), &end, 10);
        if (!*json_string_value(v) || *end)
            n = -1;
    }
    if (check_provider(r, name, &prov, &err) < 0 || sl_bck_name_valid(name, &err) < 0) {
        sl_resp_err(r, &err);
    } else if (n < 1 || n > SL_MIRROR_COPIES_MAX) {
        sl_resp_errf(r, SL_EINVAL, "make-n-copies: \"value\" must be the number of replicas of each object, 1-%d "
                     "(1 removes the copies and disables mirroring); nothing was done", SL_MIRROR_COPIES_MAX);
    } else {
        json_t *p = json_pack("{s:{s:I,s:b}}", "mirror", "copies", (json_int_t)n, "enabled", n > 1);
        struct bmd_job *j = sl_xcalloc(1, sizeof(*j));
        j->kind = BMD_PROPS;
        j->prov = prov;
        j->name = sl_xstrdup(name);
        j->value = p;
        j->make_n = true;
        sl_req_offload(r, bmd_run, bmd_job_free, j);
    }
}

/* POST {"action": "ec-encode", "value": {"data_slices": D, "parity_slices": P
 * [, "objsize_limit": N]}}: ec.enabled with those, and the job that
 * encodes every existing object (validated as set-bprops of ec.* is) */
static void ec_encode(struct sl_req *r, const char *name, const json_t *v)
{
    struct sl_err err = { 0 };
    const char *prov = "ais";
    const char *k;
    json_t *x;
    if (check_provider(r, name, &prov, &err) < 0 || sl_bck_name_valid(name, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    if (!json_is_object(v) || !json_is_integer(json_object_get(v, "data_slices")) ||
        !json_is_integer(json_object_get(v, "parity_slices"))) {
        sl_resp_errf(r, SL_EINVAL, "ec-encode: \"value\" must be {\"data_slices\": D, \"parity_slices\": P} "
                     "(1-%d each; optional \"objsize_limit\"); nothing was done", SL_EC_SLICES_MAX);
        return;
    }
    json_t *ec = json_object();
    json_object_foreach((json_t *)v, k, x) {
        if (strcmp(k, "data_slices") && strcmp(k, "parity_slices") && strcmp(k, "objsize_limit")) {
            json_decref(ec);
            sl_resp_errf(r, SL_EINVAL, "ec-encode: unknown field \"%s\" (valid: data_slices, parity_slices, "
                         "objsize_limit); nothing was done", k);
            return;
        }
        json_object_set(ec, k, x);
    }
    json_object_set_new(ec, "enabled", json_true());
    struct bmd_job *j = sl_xcalloc(1, sizeof(*j));
    j->kind = BMD_PROPS;
    j->prov = prov;
    j->name = sl_xstrdup(name);
    j->value = json_pack("{s:o}", "ec", ec);
    j->ec_encode = true;
    sl_req_offload(r, bmd_run, bmd_job_free, j);
}

static void post_bucket_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    struct sl_actmsg m;
    char *name = bucket_from_path(r);
    if (sl_actmsg_parse(r, &m, &err) < 0) {
        sl_resp_err(r, &err);
        free(name);
        return;
    }
    const char *prov = "ais";
    if (!strcmp(m.action, "create-bck")) {
        if (check_provider(r, name, &prov, &err) < 0 || sl_bck_name_valid(name, &err) < 0) {
            sl_resp_err(r, &err);
        } else if (m.value && !json_is_object(m.value)) {
            sl_resp_errf(r, SL_EINVAL, "create-bck: \"value\" must be bucket properties (a JSON object) or null");
        } else {
            bmd_offload(r, BMD_CREATE, prov, name, m.value, false);
        }
    } else if (!strcmp(m.action, "make-n-copies")) {
        make_n_copies(r, name, m.value);
    } else if (!strcmp(m.action, "ec-encode")) {
        ec_encode(r, name, m.value);
    } else if (sl_modules_bucket_post(r, name, &m)) {
        /* handled by a job module (copy, etl, ...) */
    } else if (!m.action[0]) {
        sl_resp_errf(r, SL_EINVAL, "POST /v1/buckets/%s: missing \"action\" (valid: %s%s)", name, bucket_actions_post,
                     sl_modules_post_actions());
    } else {
        sl_resp_errf(r, SL_EINVAL, "invalid action \"%s\" for POST /v1/buckets/%s (valid: %s%s)", m.action, name,
                     bucket_actions_post, sl_modules_post_actions());
    }
    sl_actmsg_free(&m);
    free(name);
}

/* a query flag as Go's strconv.ParseBool reads it (AIStore's clients send
 * "true", "True", "1"...): 1, 0, or -1 (err set) for anything else */
static int query_flag(const struct sl_req *r, const char *key, struct sl_err *err)
{
    const char *v = sl_req_query(r, key);
    bool on = false;
    if (v && sl_parse_bool(v, &on) < 0)
        return sl_errf(err, SL_EINVAL, "query %s=\"%.64s\": expected true or false; nothing was done", key, v);
    return on;
}

static void delete_bucket_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    struct sl_actmsg m;
    char *name = bucket_from_path(r);
    if (sl_actmsg_parse(r, &m, &err) < 0) {
        sl_resp_err(r, &err);
        free(name);
        return;
    }
    const char *prov = "ais";
    bool destroy = !strcmp(m.action, "destroy-bck"), evict = !strcmp(m.action, "evict-remote-bck");
    int keep = 0;
    if (!m.action[0]) {
        /* a bare DELETE never destroys a bucket: AIStore's needs the action too */
        sl_resp_errf(r, SL_EINVAL, "DELETE /v1/buckets/%s: missing \"action\": send {\"action\": \"destroy-bck\"} to "
                     "destroy the bucket and all its objects (valid: destroy-bck, evict-remote-bck%s); nothing was "
                     "done", name, sl_modules_delete_actions());
    } else if (destroy || evict) {
        if (check_provider(r, name, &prov, &err) < 0 || sl_bck_name_valid(name, &err) < 0)
            sl_resp_err(r, &err);
        else if (destroy && strcmp(prov, "ais"))
            sl_resp_errf(r, SL_EINVAL, "%s://%s is a remote bucket: this cluster never destroys it at the remote; "
                         "evict-remote-bck (shale bucket evict %s://%s) drops this cluster's copies and forgets the "
                         "bucket; nothing was done", sl_provider_scheme(prov), name, sl_provider_scheme(prov), name);
        else if (evict && !strcmp(prov, "ais"))
            sl_resp_errf(r, SL_EINVAL, "evict-remote-bck applies to remote buckets (s3://%s), not to ais://%s; "
                         "nothing was done", name, name);
        else if (evict && (keep = query_flag(r, "keep_bck_md", &err)) < 0)
            sl_resp_err(r, &err);
        else if (evict && keep && !sl_modules_bucket_delete(r, name, &m))
            /* keep_bck_md: the bucket and its props stay, an evict-listrange job of the whole bucket drops the
             * copies (lrit.c) */
            sl_resp_errf(r, SL_EINTERNAL, "evict-remote-bck with keep_bck_md=true: the list-range module is not "
                         "loaded; nothing was done");
        else if (!keep)
            bmd_offload(r, BMD_DESTROY, prov, name, NULL, false);
    } else if (!sl_modules_bucket_delete(r, name, &m)) {
        sl_resp_errf(r, SL_EINVAL, "invalid action \"%s\" for DELETE /v1/buckets/%s (valid: destroy-bck, "
                     "evict-remote-bck%s)", m.action, name, sl_modules_delete_actions());
    }
    sl_actmsg_free(&m);
    free(name);
}

static void patch_bucket_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    struct sl_actmsg m;
    char *name = bucket_from_path(r);
    if (sl_actmsg_parse(r, &m, &err) < 0) {
        sl_resp_err(r, &err);
        free(name);
        return;
    }
    bool reset = !strcmp(m.action, "reset-bprops");
    if (!reset && strcmp(m.action, "set-bprops")) {
        sl_resp_errf(r, SL_EINVAL, "invalid action \"%s\" for PATCH /v1/buckets/%s (valid: set-bprops, reset-bprops)",
                     m.action, name);
    } else if (!reset && (!m.value || !json_is_object(m.value))) {
        sl_resp_errf(r, SL_EINVAL, "set-bprops: \"value\" must be a JSON object of properties to set, e.g. "
                                   "{\"checksum\": {\"type\": \"md5\"}}");
    } else {
        const char *prov = "ais";
        if (check_provider(r, name, &prov, &err) < 0)
            sl_resp_err(r, &err);
        else
            bmd_offload(r, BMD_PROPS, prov, name, m.value, reset);
    }
    sl_actmsg_free(&m);
    free(name);
}

/* ---- HEAD, list ---- */

/* HEAD ?bsumm_remote=: AIStore's summary protocol (native-gaps.md §4.1):
 * 202 + Ais-Xaction-Id, then polls with ?uuid= get 202 until 200 +
 * Ais-Bucket-Summ */
static void head_summary(struct sl_req *r, const struct sl_bck *b)
{
    struct sl_err err = { 0 };
    const char *uuid = sl_req_query(r, "uuid");
    if (!uuid || !*uuid) {
        const char *p = r->path + strlen("/v1/buckets/");
        while (*p == '/')
            p++;
        const char *slash = strchr(p, '/');
        char id[32];
        /* bsumm_remote=true: the remote's objects too (AIStore: cached = !bsumm_remote) */
        int all = query_flag(r, "bsumm_remote", &err);
        if (all < 0 ||
            sl_bsumm_start(b->name, b->provider, slash ? slash + 1 : "", !all, id, sizeof(id), &err) < 0) {
            sl_resp_err(r, &err);
            return;
        }
        sl_hdr_add(r, "Ais-Xaction-Id", id);
        sl_resp_empty(r, 202);
        return;
    }
    json_t *res;
    int rc = sl_bsumm_poll(uuid, &res, &err);
    if (rc < 0) {
        sl_resp_err(r, &err);
    } else if (rc == 0) {
        sl_resp_empty(r, 202);
    } else {
        char *s = sl_json_dump(json_array_get(res, 0), 0, NULL);
        sl_hdr_add(r, "Ais-Bucket-Summ", s);
        free(s);
        json_decref(res);
        sl_resp_empty(r, 200);
    }
}

static void head_bucket(struct sl_req *r, const char *name)
{
    struct sl_err err = { 0 };
    struct sl_bck b;
    if (sl_bck_resolve(name, sl_req_query(r, "provider"), sl_req_query(r, "namespace"), &b, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    size_t len;
    char *s = sl_json_dump(b.props, SL_JD_U64STR, &len);
    sl_hdr_add(r, "Ais-Bucket-Props", s);
    free(s);
    sl_hdr_add(r, "Ais-Present", "true");
    const char *bs = sl_req_query(r, "bsumm_remote");
    if (bs && *bs)
        head_summary(r, &b);
    else
        sl_resp_empty(r, 200);
    sl_bck_release(&b);
}

/* GET {"action":"summary-bck","value":{"uuid","prefix",...}} (§4.2) */
static void summary_action(struct sl_req *r, const char *name, const json_t *v)
{
    struct sl_err err = { 0 };
    struct sl_bck b;
    bool one = name[0] != 0; /* GET /v1/buckets: every bucket */
    if (one && sl_bck_resolve(name, sl_req_query(r, "provider"), NULL, &b, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    const char *uuid = sl_json_str(v, "uuid", "");
    if (!uuid[0]) {
        char id[32];
        /* cached (BsummCtrlMsg, default false as Go's zero value): only what the cluster holds of a remote
         * bucket; else its remote is listed too */
        json_t *c = json_object_get(v, "cached");
        if (c && !json_is_boolean(c))
            sl_errf(&err, SL_EINVAL, "summary-bck: \"cached\" must be true or false");
        if (err.msg[0] || sl_bsumm_start(one ? b.name : "", one ? b.provider : "ais", sl_json_str(v, "prefix", ""),
                                          json_is_true(c), id, sizeof(id), &err) < 0)
            sl_resp_err(r, &err);
        else
            sl_resp_bytes(r, 202, "text/plain", id, strlen(id));
    } else {
        json_t *res;
        int rc = sl_bsumm_poll(uuid, &res, &err);
        if (rc < 0)
            sl_resp_err(r, &err);
        else if (rc == 0)
            sl_resp_bytes(r, 202, "application/json", "[]", 2);
        else
            sl_resp_json_new(r, 200, res);
    }
    if (one)
        sl_bck_release(&b);
}

static void list_buckets(struct sl_req *r, const char *filter)
{
    const char *prov = sl_req_query(r, "provider");
    const char *p = sl_provider_norm(prov);
    if (!p) {
        sl_resp_errf(r, SL_EINVAL, "invalid provider \"%s\" (valid: ais, aws/s3, gcp/gs, azure/az, oci/oc)", prov);
        return;
    }
    struct sl_bmd *b = sl_bmd_get();
    json_t *arr = json_array();
    for (int i = 0; i < b->n; i++) {
        const struct sl_bck *k = &b->bcks[i];
        if (prov && *prov && strcmp(k->provider, p))
            continue;
        if (filter && *filter && strcmp(k->name, filter))
            continue;
        json_t *o = json_object(), *ns = json_object();
        json_object_set_new(o, "name", json_string(k->name));
        json_object_set_new(o, "provider", json_string(k->provider));
        json_object_set_new(ns, "uuid", json_string(""));
        json_object_set_new(ns, "name", json_string(""));
        json_object_set_new(o, "namespace", ns);
        json_array_append_new(arr, o);
    }
    sl_bmd_put(b);
    sl_resp_json_new(r, 200, arr);
}

static void send_page(struct sl_req *r, struct sl_lspage *pg)
{
    const char *acc = sl_req_header(r, "Accept");
    if (acc && strstr(acc, "application/msgpack")) {
        struct sl_buf b;
        sl_buf_init(&b);
        sl_lspage_msgpack(pg, &b);
        size_t len = b.len;
        sl_resp_bytes_owned(r, 200, "application/msgpack", sl_buf_steal(&b), len);
    } else {
        sl_resp_json_new(r, 200, sl_lspage_json(pg));
    }
}

/* ---- listing a remote-backed bucket: the remote's names, each flagged
 * cached when the cluster holds it ---- */

struct lsr {
    struct sl_bck b;
    struct sl_lsomsg m;
};

static void lsr_free(void *arg)
{
    struct lsr *a = arg;
    sl_lsomsg_free(&a->m);
    sl_bck_release(&a->b);
    free(a);
}

static void list_remote(struct sl_req *r, void *arg)
{
    struct lsr *a = arg;
    struct sl_err err = { 0 };
    struct sl_lspage pg;
    sl_lspage_init(&pg);
    if (sl_backend_lso_page(&a->b, &a->m, &pg, &err) < 0)
        goto fail;
    if (pg.n) {
        /* which of these the cluster holds: its names from just before the
         * first to the last of the page */
        struct sl_lsomsg lm;
        memset(&lm, 0, sizeof(lm));
        sl_lsomsg_names(&lm, a->m.prefix ? a->m.prefix : "", false, SL_LSO_CACHED, 1000);
        const struct sl_lsent *first = &pg.ents[0], *last = &pg.ents[pg.n - 1];
        free(lm.start_after);
        lm.start_after = sl_xstrndup(first->name, first->nlen);
        size_t sl = first->nlen;
        if ((unsigned char)lm.start_after[sl - 1] > 1)
            lm.start_after[sl - 1]--; /* a name just below the first */
        else
            lm.start_after[sl - 1] = 0;
        for (int round = 0; round < 1000; round++) {
            struct sl_lspage lp;
            sl_lspage_init(&lp);
            if (sl_cluster_list_page(&a->b, &lm, &lp, &err) < 0) {
                sl_lspage_free(&lp);
                sl_lsomsg_free(&lm);
                goto fail;
            }
            bool past = false;
            for (int i = 0; i < lp.n; i++) {
                struct sl_lsent *hit = bsearch(&lp.ents[i], pg.ents, (size_t)pg.n, sizeof(*pg.ents), sl_lsent_cmp);
                if (hit)
                    hit->flags |= SL_ENT_CACHED;
                if (sl_lsent_cmp(&lp.ents[i], last) >= 0)
                    past = true;
            }
            bool more = lp.token && *lp.token && !past;
            free(lm.token);
            lm.token = more ? sl_xstrdup(lp.token) : NULL;
            sl_lspage_free(&lp);
            if (!more)
                break;
        }
        sl_lsomsg_free(&lm);
    }
    char id[24];
    sl_job_id(id, sizeof(id), "");
    pg.uuid = sl_xstrdup(a->m.uuid && a->m.uuid[0] ? a->m.uuid : id);
    send_page(r, &pg);
    sl_lspage_free(&pg);
    lsr_free(a);
    return;
fail:
    sl_resp_err(r, &err);
    sl_lspage_free(&pg);
    lsr_free(a);
}

/* one merged page of an ais:// bucket (or of what the cluster holds of a
 * remote one): at most pagesize entries from each target, merged into at
 * most pagesize */
static void list_cluster(struct sl_req *r, void *arg)
{
    struct lsr *a = arg;
    struct sl_err err = { 0 };
    struct sl_lspage pg;
    sl_lspage_init(&pg);
    if (sl_cluster_list_page(&a->b, &a->m, &pg, &err) < 0) {
        sl_resp_err(r, &err);
    } else {
        if (a->m.uuid[0])
            pg.uuid = sl_xstrdup(a->m.uuid);
        else {
            char id[24];
            sl_job_id(id, sizeof(id), "");
            pg.uuid = sl_xstrdup(id);
        }
        send_page(r, &pg);
    }
    sl_lspage_free(&pg);
    lsr_free(a);
}

static void list_objects(struct sl_req *r, const char *name, const json_t *value)
{
    struct sl_err err = { 0 };
    struct sl_bck b;
    r->op = SL_OP_LIST;
    if (sl_bck_resolve(name, sl_req_query(r, "provider"), sl_req_query(r, "namespace"), &b, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    struct sl_lsomsg m;
    if (sl_lsomsg_parse(value, &m, sl_conf->lso_page_size, &err) < 0) {
        sl_lsomsg_free(&m);
        sl_bck_release(&b);
        sl_resp_err(r, &err);
        return;
    }
    /* As AIStore's code does for ais:// buckets (its docs say otherwise,
     * its clients follow the code): a non-recursive listing shows the
     * virtual directories even with no-dirs. Jobs that list for their own
     * use keep no-dirs. */
    if (m.flags & SL_LSO_NO_RECURSION)
        m.flags &= ~(uint64_t)SL_LSO_NO_DIRS;
    if (m.flags & SL_LSO_NBI) {
        /* from the bucket's inventory (Ais-Inv-Name: which), merged from every target like an ais:// listing */
        const uint64_t bad = SL_LSO_CACHED | SL_LSO_MISSING | SL_LSO_DELETED | SL_LSO_ARCH_DIR | SL_LSO_NO_RECURSION |
                             4096 /* diff */ | 512 /* not cached */ | 1024 /* only remote props */;
        const char *why = !sl_bck_remote(&b) ? "is for remote buckets (an ais:// bucket is listed from its own "
                                               "metadata)"
                          : (m.flags & bad) ? "takes none of the flags cached, not-cached, missing, deleted, "
                                              "arch-dir, no-recursion, diff, only-remote-props"
                          : m.start_after[0] ? "does not take start_after (use prefix and the continuation token)"
                                             : NULL;
        if (why) {
            sl_resp_errf(r, SL_EINVAL, "listing %s://%s from its inventory (flag 32768) %s",
                         sl_provider_scheme(b.provider), b.name, why);
            sl_lsomsg_free(&m);
            sl_bck_release(&b);
            return;
        }
        const char *inv = sl_req_header(r, "Ais-Inv-Name");
        if (inv && *inv) {
            free(m.inv_name);
            m.inv_name = sl_xstrdup(inv);
        }
    } else if (sl_bck_remote(&b) && !(m.flags & SL_LSO_CACHED)) { /* the remote's names: off the HTTP thread */
        if (m.flags & SL_LSO_NO_RECURSION) {
            sl_resp_errf(r, SL_EUNSUPP, "listing %s://%s non-recursively is not supported for a remote-backed "
                         "bucket yet; list recursively, or only what the cluster holds (flag cached)",
                         sl_provider_scheme(b.provider), b.name);
            sl_lsomsg_free(&m);
            sl_bck_release(&b);
            return;
        }
        struct lsr *a = sl_xcalloc(1, sizeof(*a));
        a->b = b;
        a->m = m;
        sl_req_offload(r, list_remote, lsr_free, a);
        return;
    }
    /* a page from every target (a shard's members may take a target a
     * while to read): off the HTTP thread */
    struct lsr *a = sl_xcalloc(1, sizeof(*a));
    a->b = b;
    a->m = m;
    sl_req_offload(r, list_cluster, lsr_free, a);
}

static void get_buckets_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    char *name = bucket_from_path(r);
    const char *ct = sl_req_header(r, "Content-Type");
    bool json_body = r->body.len > 0 && (!ct || strstr(ct, "json"));
    if (!json_body) {
        /* curl / easy URL: no ActMsg */
        if (name[0])
            list_objects(r, name, NULL);
        else
            list_buckets(r, NULL);
        free(name);
        return;
    }
    struct sl_actmsg m;
    if (sl_actmsg_parse(r, &m, &err) < 0) {
        sl_resp_err(r, &err);
        free(name);
        return;
    }
    if (!strcmp(m.action, "summary-bck")) {
        summary_action(r, name, m.value);
    } else if (!strcmp(m.action, "list")) {
        if (!m.value)
            list_buckets(r, name);
        else if (!name[0])
            sl_resp_errf(r, SL_EINVAL, "list-objects needs a bucket: GET /v1/buckets/BUCKET");
        else
            list_objects(r, name, m.value);
    } else if (!sl_modules_bucket_get(r, name, &m)) {
        sl_resp_errf(r, SL_EINVAL, "invalid action \"%s\" for GET /v1/buckets%s%s (valid: list, summary-bck%s)",
                     m.action, name[0] ? "/" : "", name, sl_modules_get_actions());
    }
    sl_actmsg_free(&m);
    free(name);
}

void sl_prx_buckets(struct sl_req *r)
{
    char *name = bucket_from_path(r);
    uint64_t lim = sl_conf->http_max_body_json;
    struct sl_err err = { 0 };
    if (name[0] && sl_bck_name_valid(name, &err) < 0) {
        sl_resp_err(r, &err);
        free(name);
        return;
    }
    bool needs_name = r->method == SL_M_HEAD || r->method == SL_M_POST || r->method == SL_M_DELETE ||
                      r->method == SL_M_PATCH || r->method == SL_M_PUT;
    if (needs_name && !name[0]) {
        sl_resp_errf(r, SL_EINVAL, "%s /v1/buckets needs a bucket name: /v1/buckets/BUCKET", r->method_str);
        free(name);
        return;
    }
    switch (r->method) {
    case SL_M_GET:
        sl_req_buffer_body(r, lim, get_buckets_done);
        break;
    case SL_M_HEAD:
        head_bucket(r, name);
        break;
    case SL_M_POST:
        sl_req_buffer_body(r, lim, post_bucket_done);
        break;
    case SL_M_DELETE:
        sl_req_buffer_body(r, lim, delete_bucket_done);
        break;
    case SL_M_PATCH:
        sl_req_buffer_body(r, lim, patch_bucket_done);
        break;
    case SL_M_PUT:
        if (!sl_modules_bucket_put(r, name))
            sl_resp_errf(r, SL_EINVAL, "PUT /v1/buckets/%s: no supported action", name);
        break;
    default:
        sl_resp_method_not_allowed(r, "GET, HEAD, POST, PUT, DELETE, PATCH");
    }
    free(name);
}

/* GET /v1/cluster?what= on a gateway */
/* ---- job status (GET /v1/cluster?what=status|...) ---- */

static void cluster_get_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    const char *what = sl_req_query(r, "what");
    json_t *q = r->body.len ? sl_req_body_json(r, &err) : json_object();
    if (!q) {
        sl_resp_err(r, &err);
        return;
    }
    if (json_is_null(q)) {
        json_decref(q);
        q = json_object();
    }
    const char *id = sl_json_str(q, "id", sl_req_query(r, "id") ? sl_req_query(r, "id") : "");
    const char *kind = sl_json_str(q, "kind", sl_req_query(r, "kind") ? sl_req_query(r, "kind") : "");
    bool active = sl_json_bool(q, "show_active", false) || sl_json_bool(q, "OnlyRunning", false);
    json_t *per = sl_cluster_job_snaps(NULL, kind, false, &err);
    if (err.msg[0] && !strcmp(what, "status")) {
        json_decref(per);
        json_decref(q);
        sl_resp_err(r, &err);
        return;
    }
    if (!strcmp(what, "qryxstats")) {
        if (kind[0] && !sl_job_kind_known(kind)) {
            sl_resp_errf(r, SL_EINVAL, "unknown job kind \"%s\" (valid: %s)", kind, sl_job_kinds());
            json_decref(per);
            json_decref(q);
            return;
        }
        /* by kind alone: every target answers, [] when it has none (as
         * AIStore's targets do); by id: only the targets that know it */
        bool by_kind = kind[0] && !id[0];
        json_t *out = json_object();
        const char *tid;
        json_t *arr;
        json_object_foreach(per, tid, arr) /* ([] for a target with none, when by kind) */
            if (by_kind)
                json_object_set_new(out, tid, json_array());
        struct sl_snap_it it;
        for (sl_snaps_first(&it, per, id[0] ? id : NULL); it.sn; sl_snaps_next(&it)) {
            if (active && sl_json_int(it.sn, "end_ns", 0))
                continue;
            json_t *sel = json_object_get(out, it.tid);
            if (!sel)
                json_object_set_new(out, it.tid, sel = json_array());
            json_array_append(sel, it.sn);
        }
        if (!json_object_size(out))
            sl_resp_errf(r, SL_ENOENT, "no job matches (id \"%s\", kind \"%s\")", id, kind);
        else
            sl_resp_json(r, 200, out);
        json_decref(out);
    } else if (!strcmp(what, "status")) {
        if (!id[0]) {
            /* kind only: the newest job of that kind */
            int64_t best = 0;
            struct sl_snap_it it;
            for (sl_snaps_first(&it, per, NULL); it.sn; sl_snaps_next(&it))
                if (sl_json_int(it.sn, "start_ns", 0) > best) {
                    best = sl_json_int(it.sn, "start_ns", 0);
                    id = sl_json_str(it.sn, "id", "");
                }
        }
        json_t *st = id[0] ? sl_cluster_job_status(per, id) : NULL;
        if (!st)
            sl_resp_errf(r, SL_ENOENT, "job \"%s\"%s%s not found on any target", id[0] ? id : kind,
                         kind[0] && id[0] ? " of kind " : "", id[0] ? kind : "");
        else
            sl_resp_json_new(r, 200, st);
    } else { /* status_all, running_all */
        json_t *ids = json_object();
        struct sl_snap_it it; /* (kind was filtered by the targets) */
        for (sl_snaps_first(&it, per, id[0] ? id : NULL); it.sn; sl_snaps_next(&it))
            json_object_set_new(ids, sl_json_str(it.sn, "id", ""), json_string(sl_json_str(it.sn, "kind", "")));
        json_t *out = json_array();
        const char *jid;
        json_t *jk;
        json_object_foreach(ids, jid, jk) {
            json_t *st = sl_cluster_job_status(per, jid);
            if (!st)
                continue;
            bool run = sl_json_int(st, "end_time", 0) == 0;
            if (!strcmp(what, "running_all")) {
                if (run) {
                    char s[128];
                    snprintf(s, sizeof(s), "%s[%s]", json_string_value(jk), jid);
                    json_array_append_new(out, json_string(s));
                }
                json_decref(st);
            } else if (!active || run) {
                json_array_append_new(out, st);
            } else {
                json_decref(st);
            }
        }
        json_decref(ids);
        sl_resp_json_new(r, 200, out);
    }
    json_decref(per);
    json_decref(q);
}

/* job status asks every target: off the HTTP thread */
static void cluster_get_run(struct sl_req *r, void *arg)
{
    (void)arg;
    cluster_get_done(r);
}

static void cluster_get_offload(struct sl_req *r)
{
    sl_req_offload(r, cluster_get_run, NULL, NULL);
}

static bool cluster_get_ext(struct sl_req *r, const char *what)
{
    if (strcmp(what, "status") && strcmp(what, "qryxstats") && strcmp(what, "status_all") &&
        strcmp(what, "running_all"))
        return false;
    sl_req_buffer_body(r, sl_conf->http_max_body_json, cluster_get_offload);
    return true;
}

static const char *cluster_get_whats(void)
{
    return ", status, qryxstats, status_all, running_all, remote, lost";
}

void sl_prx_cluster_get(struct sl_req *r)
{
    const char *what = sl_req_query(r, "what");
    if (!what)
        what = "";
    if (!strcmp(what, "smap") || !strcmp(what, "bmd") || !strcmp(what, "snode")) {
        sl_h_daemon_get(r);
    } else if (!strcmp(what, "cluster_config")) {
        json_t *cc = sl_config_cluster_json(sl_conf);
        sl_resp_json_new(r, 200, sl_config_redacted(cc));
        json_decref(cc);
    } else if (!strcmp(what, "lost")) { /* objects lost with targets removed by force (lost.h) */
        sl_resp_json_new(r, 200, sl_lost_report());
    } else if (!strcmp(what, "remote")) { /* attached remote clusters, with their Smaps */
        sl_remais_get(r);
    } else if (!cluster_get_ext(r, what)) {
        sl_resp_errf(r, SL_EINVAL, "invalid 'what=%s' request for GET /v1/cluster (valid: smap, bmd, snode, "
                     "cluster_config%s)", what, cluster_get_whats());
    }
}
