/* SPDX-License-Identifier: MIT
 * backend.c: see backend.h.
 */
#include "backend.h"
#include "arch.h"
#include "log.h"
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
    return b && b->props && *pstr(b->props, "backend_bck", "name", NULL);
}

static int remote_of(const struct sl_bck *b, struct remote *rm, struct sl_err *err)
{
    memset(rm, 0, sizeof(*rm));
    const char *prov = pstr(b->props, "backend_bck", "provider", NULL);
    const char *name = pstr(b->props, "backend_bck", "name", NULL);
    snprintf(rm->desc, sizeof(rm->desc), "%s://%s", sl_provider_scheme(prov), name);
    rm->plug = sl_plug_backend(sl_arch_reg(), prov);
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

struct sinkctx {
    struct sl_put *p;
    struct sl_err *err;
    bool begun, local_failed;   /* local_failed: err says what went wrong here */
    const struct sl_bck *b;
    const char *name;
    size_t nlen;
    struct sl_backend_obj *o;
};

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

static int fetch(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err)
{
    struct remote rm;
    if (remote_of(b, &rm, err) < 0)
        return -1;
    struct sl_backend_obj o;
    memset(&o, 0, sizeof(o));
    SL_ABI_SET(&o);
    struct sinkctx s = { .err = err, .b = b, .name = name, .nlen = nlen, .o = &o };
    char msg[1024] = "";
    int status = 0;
    char *nm = sl_xstrndup(name, nlen);
    int rc = rm.ops->get_object(sl_plug_state(rm.plug), &rm.rb, nm, nlen, 0, -1, sink, &s, &o, &status, msg,
                                sizeof(msg));
    free(nm);
    if (rc != SL_PLUG_OK) {
        sl_put_abort(s.p);
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
        sl_put_abort(s.p);
        return sl_errf(err, SL_EUNAVAIL, "remote: %s/%.*s: the remote sent %llu bytes of %lld; nothing was cached, "
                       "retry", rm.desc, (int)SL_MIN(nlen, 300), name, (unsigned long long)sl_put_size(s.p),
                       (long long)o.size);
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
    return sl_put_commit(s.p, NULL, err);
}

int sl_backend_fetch(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err)
{
    pthread_mutex_lock(&fl_mu);
    struct inflight *f;
    for (f = fl_head; f; f = f->next)
        if (f->bid == b->bid && f->nlen == nlen && !memcmp(f->name, name, nlen))
            break;
    if (f) { /* somebody fetches it now: wait, then look again */
        f->waiters++;
        while (!f->done)
            pthread_cond_wait(&fl_cv, &fl_mu);
        if (--f->waiters == 0) {
            free(f->name);
            free(f);
        }
        pthread_mutex_unlock(&fl_mu);
        struct sl_objmd md;
        int rc = sl_obj_stat(b, name, nlen, &md, NULL, err);
        if (rc == 1) {
            sl_objmd_free(&md);
            return 0;
        }
        return rc < 0 ? -1 : fetch(b, name, nlen, err); /* its fetch failed: try ourselves */
    }
    f = sl_xcalloc(1, sizeof(*f));
    f->bid = b->bid;
    f->name = sl_xstrndup(name, nlen);
    f->nlen = nlen;
    f->waiters = 1;
    f->next = fl_head;
    fl_head = f;
    pthread_mutex_unlock(&fl_mu);
    int rc = fetch(b, name, nlen, err);
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
    return rc;
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
