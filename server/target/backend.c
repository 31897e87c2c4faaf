/* SPDX-License-Identifier: MIT
 * backend.c: see backend.h.
 */
#include "backend.h"
#include "arch.h"
#include "log.h"
#include "opipe.h"
#include "plug.h"
#include "store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The remote of b as the plugin sees it (pointers into b->props). */
struct remote {
    const struct sl_plug *plug;
    const struct sl_backend_ops *ops;
    struct sl_backend_bck rb;
    char desc[160];               /* "s3://origin" */
};

static const char *pstr(const json_t *o, const char *a, const char *b, const char *c)
{
    const json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    if (c)
        v = json_object_get(v, c);
    const char *s = json_string_value(v);
    return s ? s : "";
}

bool sl_bck_remote(const struct sl_bck *b)
{
    return b && (strcmp(b->provider, "ais") || (b->props && *pstr(b->props, "backend_bck", "name", NULL)));
}

static int remote_of(const struct sl_bck *b, struct remote *rm, struct sl_err *err)
{
    memset(rm, 0, sizeof(*rm));
    /* s3://b is itself the remote; ais://b may have one behind it */
    bool own = strcmp(b->provider, "ais") != 0;
    const char *prov = own ? b->provider : pstr(b->props, "backend_bck", "provider", NULL);
    const char *name = own ? b->name : pstr(b->props, "backend_bck", "name", NULL);
    snprintf(rm->desc, sizeof(rm->desc), "%s://%s", sl_provider_scheme(prov), name);
    rm->plug = sl_plug_backend(sl_arch_reg(), prov);
    if (!rm->plug && own)
        return sl_errf(err, SL_EUNAVAIL, "%s: this node has no backend plugin for provider \"%s\" "
                       "(backend_s3.so in the plugin directory)", rm->desc, prov);
    if (!rm->plug)
        return sl_errf(err, SL_EUNAVAIL, "%s://%s is backed by %s, but this node has no backend plugin for provider "
                       "\"%s\" (backend_s3.so in the plugin directory)", sl_provider_scheme(b->provider), b->name,
                       rm->desc, prov);
    rm->ops = sl_plug_desc(rm->plug)->backend;
    SL_ABI_SET(&rm->rb);
    rm->rb.name = name;
    rm->rb.endpoint = pstr(b->props, "extra", "aws", "endpoint");
    rm->rb.region = pstr(b->props, "extra", "aws", "cloud_region");
    rm->rb.profile = pstr(b->props, "extra", "aws", "profile");
    return 0;
}

/* A plugin's failure as an error of ours. */
static int remote_err(int rc, int status, const char *msg, struct sl_err *err)
{
    if (rc == SL_PLUG_EREMOTE) {
        int code = status == 404 ? SL_ENOOBJ : status == 403 || status == 401 ? SL_EFORBIDDEN
                   : status == 416 ? SL_ERANGE : status == 429 || status >= 500 ? SL_EUNAVAIL : SL_EINVAL;
        return sl_errf(err, code, "remote: %s", msg);
    }
    if (rc == SL_PLUG_EIO)
        return sl_errf(err, SL_EUNAVAIL, "remote: %s; retry when the remote is back", msg);
    return sl_errf(err, rc == SL_PLUG_EINVAL ? SL_EINVAL : SL_EINTERNAL, "remote: %s", msg);
}

bool sl_backend_loaded(const char *provider)
{
    return provider && sl_plug_backend(sl_arch_reg(), provider) != NULL;
}

int sl_backend_head_bucket(const struct sl_bck *b, struct sl_err *err)
{
    struct remote rm;
    if (remote_of(b, &rm, err) < 0)
        return -1;
    char msg[1024] = "";
    int status = 0;
    int rc = rm.ops->head_bucket(sl_plug_state(rm.plug), &rm.rb, &status, msg, sizeof(msg));
    if (rc == SL_PLUG_OK)
        return 0;
    if (rc == SL_PLUG_EREMOTE && status == 404)
        return sl_errf(err, SL_ENOBCK, "remote bucket %s does not exist (remote: %s)", rm.desc, msg);
    return remote_err(rc, status, msg, err);
}

int sl_backend_check_props(const json_t *props, struct sl_err *err)
{
    const char *name = pstr(props, "backend_bck", "name", NULL);
    const char *prov = pstr(props, "backend_bck", "provider", NULL);
    if (!*name)
        return 0;
    if (!sl_plug_backend(sl_arch_reg(), prov))
        return sl_errf(err, SL_EINVAL, "backend_bck: provider \"%s\" has no backend plugin loaded on this node "
                       "(loaded backends: %s); nothing was changed", prov,
                       sl_plug_backend(sl_arch_reg(), "aws") ? "aws" : "none");
    return 0;
}

#define TEE_HIGH (8 * 1024 * 1024) /* bytes a streaming cold GET holds for a slow client */

/* ---- cold GET: one fetch per object at a time ---- */

struct inflight {
    uint64_t bid;
    char *name;
    size_t nlen;
    int waiters;
    bool done;
    struct inflight *next;
};

static pthread_mutex_t fl_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fl_cv = PTHREAD_COND_INITIALIZER;
static struct inflight *fl_head;

/* A streaming cold GET: the fetch runs on a thread of its own, and the
 * request's worker answers (sl_resp_opipe) once the first bytes are in;
 * the fetch thread then writes the body as it stores it. */
enum { TEE_RUNNING, TEE_FIRST, TEE_ANSWERED, TEE_DONE };

struct tee {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state, refs;
    struct sl_opipe *op;            /* set with TEE_ANSWERED */
    struct sl_backend_obj first;    /* what the remote said, for the answer's headers */
    struct sl_bck b;
    char *name;
    size_t nlen;
    struct inflight *f;
    int rc;
    struct sl_err err;
};

static void tee_unref(struct tee *t)
{
    pthread_mutex_lock(&t->mu);
    int left = --t->refs;
    pthread_mutex_unlock(&t->mu);
    if (left)
        return;
    sl_bck_release(&t->b);
    free(t->name);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

struct sinkctx {
    struct sl_put *p;
    struct sl_err *err;
    bool begun, local_failed;   /* local_failed: err says what went wrong here */
    const struct sl_bck *b;
    const char *name;
    size_t nlen;
    struct sl_backend_obj *o;
    struct tee *tee;            /* streaming */
    struct sl_opipe *op;        /* the client's body; NULL once it left (the fetch goes on for the cache) */
    bool asked;                 /* the answer was asked for */
};

/* The first bytes are in: have the request answered, and take its body. */
static void tee_first(struct sinkctx *s)
{
    struct tee *t = s->tee;
    s->asked = true;
    pthread_mutex_lock(&t->mu);
    t->first = *s->o;
    t->state = TEE_FIRST;
    pthread_cond_broadcast(&t->cv);
    while (t->state != TEE_ANSWERED)
        pthread_cond_wait(&t->cv, &t->mu);
    s->op = t->op;
    pthread_mutex_unlock(&t->mu);
}

static int sink(void *ctx, const void *data, size_t n)
{
    struct sinkctx *s = ctx;
    if (!s->begun) {
        struct sl_put_opts po = { .client_cktype = -1, .expect_size = s->o->size };
        if (sl_put_begin(s->b, s->name, s->nlen, &po, &s->p, s->err) < 0) {
            s->local_failed = true;
            return 1;
        }
        s->begun = true;
    }
    if (sl_put_write(s->p, data, n, s->err) < 0) {
        s->local_failed = true;
        return 1;
    }
    if (s->tee && !s->asked)
        tee_first(s);
    if (s->op && sl_opipe_write(s->op, data, n) < 0) { /* the client left: keep filling the cache */
        sl_opipe_close(s->op, true);
        s->op = NULL;
    }
    return 0;
}

void sl_backend_custom(const struct sl_backend_obj *o, struct sl_kv **kv, int *n)
{
    sl_kv_set(kv, n, "source", "aws");
    if (o->etag[0])
        sl_kv_set(kv, n, "ETag", o->etag);
    if (o->version[0])
        sl_kv_set(kv, n, "version", o->version);
    if (o->mtime_ns) {
        char t[32];
        snprintf(t, sizeof(t), "%lld", (long long)o->mtime_ns);
        sl_kv_set(kv, n, "remote_mtime", t);
    }
}

/* Fetch into the store; with tee, stream to its request too (a failure
 * after the first byte cuts that answer off). */
static int fetch(const struct sl_bck *b, const char *name, size_t nlen, struct tee *tee, struct sl_err *err)
{
    struct remote rm;
    if (remote_of(b, &rm, err) < 0)
        return -1;
    struct sl_backend_obj o;
    memset(&o, 0, sizeof(o));
    SL_ABI_SET(&o);
    struct sinkctx s = { .err = err, .b = b, .name = name, .nlen = nlen, .o = &o, .tee = tee };
    char msg[1024] = "";
    int status = 0;
    char *nm = sl_xstrndup(name, nlen);
    int rc = rm.ops->get_object(sl_plug_state(rm.plug), &rm.rb, nm, nlen, 0, -1, sink, &s, &o, &status, msg,
                                sizeof(msg));
    free(nm);
    if (rc != SL_PLUG_OK) {
        sl_put_abort(s.p);
        if (s.op)
            sl_opipe_close(s.op, true);
        if (s.local_failed) /* our side failed (disk, space): that is the error */
            return -1;
        return remote_err(rc, status, msg, err);
    }
    if (!s.begun) { /* an empty object */
        struct sl_put_opts po = { .client_cktype = -1, .expect_size = 0 };
        if (sl_put_begin(b, name, nlen, &po, &s.p, err) < 0)
            return -1;
    }
    if (o.size >= 0 && sl_put_size(s.p) != (uint64_t)o.size) {
        uint64_t got = sl_put_size(s.p);
        sl_put_abort(s.p);
        if (s.op)
            sl_opipe_close(s.op, true);
        return sl_errf(err, SL_EUNAVAIL, "remote: %s/%.*s: the remote sent %llu bytes of %lld; nothing was cached, "
                       "retry", rm.desc, (int)SL_MIN(nlen, 300), name, (unsigned long long)got, (long long)o.size);
    }
    struct sl_kv *kv = NULL;
    int nkv = 0;
    sl_backend_custom(&o, &kv, &nkv);
    for (int i = 0; i < nkv; i++) {
        sl_put_set_custom(s.p, kv[i].k, kv[i].v);
        free(kv[i].k);
        free(kv[i].v);
    }
    free(kv);
    if (s.op) /* every byte is out and checked: the client is done; caching is ours */
        sl_opipe_close(s.op, false);
    int crc = sl_put_commit(s.p, NULL, err);
    if (crc < 0 && s.asked)
        sl_logw("cold GET: %s://%s/%.*s served but not cached: %s", sl_provider_scheme(b->provider), b->name,
                (int)SL_MIN(nlen, 200), name, err->msg);
    return crc;
}

static void inflight_end(struct inflight *f)
{
    pthread_mutex_lock(&fl_mu);
    for (struct inflight **pp = &fl_head; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    f->done = true;
    pthread_cond_broadcast(&fl_cv);
    if (--f->waiters == 0) {
        free(f->name);
        free(f);
    }
    pthread_mutex_unlock(&fl_mu);
}

static void *tee_main(void *arg)
{
    struct tee *t = arg;
    struct sl_err err = { 0 };
    int rc = fetch(&t->b, t->name, t->nlen, t, &err);
    if (t->f)
        inflight_end(t->f);
    pthread_mutex_lock(&t->mu);
    if (rc < 0 && t->state == TEE_ANSWERED) /* the client saw a cut answer; say why here */
        sl_logw("cold GET of %s://%s/%.*s failed after its answer began: %s", sl_provider_scheme(t->b.provider),
                t->b.name, (int)SL_MIN(t->nlen, 200), t->name, err.msg);
    t->rc = rc;
    t->err = err;
    if (t->state == TEE_RUNNING)
        t->state = TEE_DONE;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    tee_unref(t);
    return NULL;
}

/* Run the fetch (this thread registered as its fetcher in f, or NULL) with
 * r answered as the bytes come, when r is not NULL. */
static int run_fetch(const struct sl_bck *b, const char *name, size_t nlen, struct inflight *f, struct sl_req *r,
                     bool *answered, struct sl_err *err)
{
    if (!r) {
        int rc = fetch(b, name, nlen, NULL, err);
        if (f)
            inflight_end(f);
        return rc;
    }
    struct tee *t = sl_xcalloc(1, sizeof(*t));
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    t->refs = 2;
    sl_bck_copy(&t->b, b);
    t->name = sl_xstrndup(name, nlen);
    t->nlen = nlen;
    t->f = f;
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &at, tee_main, t) != 0) { /* no thread: fetch whole, then serve */
        pthread_attr_destroy(&at);
        t->refs = 1;
        t->f = NULL;
        tee_unref(t);
        return run_fetch(b, name, nlen, f, NULL, answered, err);
    }
    pthread_attr_destroy(&at);
    pthread_mutex_lock(&t->mu);
    while (t->state == TEE_RUNNING)
        pthread_cond_wait(&t->cv, &t->mu);
    int rc = 0;
    if (t->state == TEE_FIRST) {
        struct sl_backend_obj o = t->first;
        pthread_mutex_unlock(&t->mu);
        if (o.etag[0])
            sl_hdr_addf(r, "ETag", "\"%s\"", o.etag);
        sl_hdr_add(r, "Ais-Present", "false"); /* fetched by this GET */
        struct sl_opipe *op = sl_resp_opipe(r, 200, "application/octet-stream", TEE_HIGH);
        pthread_mutex_lock(&t->mu);
        t->op = op;
        t->state = TEE_ANSWERED;
        pthread_cond_broadcast(&t->cv);
        *answered = true;
    } else { /* done before a byte came: an empty object, or an error */
        rc = t->rc;
        *err = t->err;
    }
    pthread_mutex_unlock(&t->mu);
    tee_unref(t);
    return rc;
}

/* fl_mu held: wait for the fetch of name in flight, if any; true if there was one. */
static bool wait_locked(const struct sl_bck *b, const char *name, size_t nlen)
{
    struct inflight *f;
    for (f = fl_head; f; f = f->next)
        if (f->bid == b->bid && f->nlen == nlen && !memcmp(f->name, name, nlen))
            break;
    if (!f)
        return false;
    f->waiters++;
    while (!f->done)
        pthread_cond_wait(&fl_cv, &fl_mu);
    if (--f->waiters == 0) {
        free(f->name);
        free(f);
    }
    return true;
}

void sl_backend_wait_fetch(const struct sl_bck *b, const char *name, size_t nlen)
{
    pthread_mutex_lock(&fl_mu);
    wait_locked(b, name, nlen);
    pthread_mutex_unlock(&fl_mu);
}

int sl_backend_fetch(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err)
{
    return sl_backend_fetch_tee(b, name, nlen, NULL, NULL, err);
}

int sl_backend_fetch_tee(const struct sl_bck *b, const char *name, size_t nlen, struct sl_req *r, bool *answered,
                         struct sl_err *err)
{
    bool dummy;
    if (!answered)
        answered = &dummy;
    *answered = false;
    pthread_mutex_lock(&fl_mu);
    if (wait_locked(b, name, nlen)) { /* somebody fetched it just now: look again */
        pthread_mutex_unlock(&fl_mu);
        struct sl_objmd md;
        int rc = sl_obj_stat(b, name, nlen, &md, NULL, err);
        if (rc == 1) {
            sl_objmd_free(&md);
            return 0;
        }
        return rc < 0 ? -1 : run_fetch(b, name, nlen, NULL, r, answered, err); /* its fetch failed: try ourselves */
    }
    struct inflight *f = sl_xcalloc(1, sizeof(*f));
    f->bid = b->bid;
    f->name = sl_xstrndup(name, nlen);
    f->nlen = nlen;
    f->waiters = 1;
    f->next = fl_head;
    fl_head = f;
    pthread_mutex_unlock(&fl_mu);
    return run_fetch(b, name, nlen, f, r, answered, err);
}

int sl_backend_head(const struct sl_bck *b, const char *name, size_t nlen, struct sl_backend_obj *o,
                    struct sl_err *err)
{
    struct remote rm;
    if (remote_of(b, &rm, err) < 0)
        return -1;
    memset(o, 0, sizeof(*o));
    SL_ABI_SET(o);
    char msg[1024] = "";
    int status = 0;
    char *nm = sl_xstrndup(name, nlen);
    int rc = rm.ops->head_object(sl_plug_state(rm.plug), &rm.rb, nm, nlen, o, &status, msg, sizeof(msg));
    free(nm);
    return rc == SL_PLUG_OK ? 0 : remote_err(rc, status, msg, err);
}

int sl_backend_put(const struct sl_bck *b, const char *name, size_t nlen, int fd, int64_t size,
                   struct sl_backend_obj *o, struct sl_err *err)
{
    struct remote rm;
    if (remote_of(b, &rm, err) < 0)
        return -1;
    memset(o, 0, sizeof(*o));
    SL_ABI_SET(o);
    char msg[1024] = "";
    int status = 0;
    char *nm = sl_xstrndup(name, nlen);
    int rc = rm.ops->put_object(sl_plug_state(rm.plug), &rm.rb, nm, nlen, fd, size, o, &status, msg, sizeof(msg));
    free(nm);
    return rc == SL_PLUG_OK ? 0 : remote_err(rc, status, msg, err);
}

int sl_backend_delete(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err)
{
    struct remote rm;
    if (remote_of(b, &rm, err) < 0)
        return -1;
    char msg[1024] = "";
    int status = 0;
    char *nm = sl_xstrndup(name, nlen);
    int rc = rm.ops->delete_object(sl_plug_state(rm.plug), &rm.rb, nm, nlen, &status, msg, sizeof(msg));
    free(nm);
    if (rc == SL_PLUG_EREMOTE && status == 404)
        return 0;
    return rc == SL_PLUG_OK ? 0 : remote_err(rc, status, msg, err);
}

int sl_backend_list_page(const struct sl_bck *b, const char *prefix, const char *token, int max,
                         sl_backend_list_fn cb, void *ctx, char *next, size_t next_len, struct sl_err *err)
{
    struct remote rm;
    if (remote_of(b, &rm, err) < 0)
        return -1;
    char msg[1024] = "";
    int status = 0;
    int rc = rm.ops->list_page(sl_plug_state(rm.plug), &rm.rb, prefix ? prefix : "", token ? token : "", max, cb,
                               ctx, next, next_len, &status, msg, sizeof(msg));
    if (rc == SL_PLUG_EREMOTE && status == 404)
        return sl_errf(err, SL_ENOBCK, "remote: %s", msg);
    return rc == SL_PLUG_OK ? 0 : remote_err(rc, status, msg, err);
}
