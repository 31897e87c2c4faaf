/* SPDX-License-Identifier: MIT
 * backend.c: see backend.h.
 */
#include "backend.h"
#include "arch.h"
#include "conf.h"
#include "log.h"
#include "lso.h"
#include "node.h"
#include "opipe.h"
#include "plug.h"
#include "stats.h"
#include "store.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The remote of b as the plugin sees it (pointers into b->props). */
struct remote {
    const struct sl_plug *plug;
    const struct sl_backend_ops *ops;
    struct sl_backend_bck rb;
    char desc[160];               /* "s3://origin", "ais://@alias/b" */
    char url[512];                /* a remote cluster's (rb.endpoint) */
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

static sl_backend_alias_fn alias_url;

/* providers the operator disabled (PUT /v1/daemon/disable-bend/P/commit) */
static pthread_mutex_t dis_mu = PTHREAD_MUTEX_INITIALIZER;
static char disabled[8][8];
static int ndisabled;

bool sl_backend_disabled(const char *provider)
{
    bool dis = false;
    pthread_mutex_lock(&dis_mu);
    for (int i = 0; i < ndisabled && provider; i++)
        dis |= !strcmp(disabled[i], provider);
    pthread_mutex_unlock(&dis_mu);
    return dis;
}

int sl_backend_set_enabled(const char *provider, bool on, bool commit, struct sl_err *err)
{
    const char *tag = on ? "enable" : "disable";
    if (!sl_plug_backend(sl_arch_reg(), provider))
        return sl_errf(err, SL_EINVAL, "backend \"%s\" is not configured on %s (it has no backend plugin for "
                       "it), nothing to %s", provider, G.name, tag);
    int rc = 0;
    pthread_mutex_lock(&dis_mu);
    int at = -1;
    for (int i = 0; i < ndisabled; i++)
        if (!strcmp(disabled[i], provider))
            at = i;
    if (on && at < 0)
        rc = sl_errf(err, SL_EINVAL, "backend \"%s\" is already enabled, nothing to do", provider);
    else if (!on && at >= 0)
        rc = sl_errf(err, SL_EINVAL, "backend \"%s\" is already disabled, nothing to do", provider);
    else if (commit && on) {
        memmove(disabled[at], disabled[at + 1], (size_t)(ndisabled - at - 1) * sizeof(disabled[0]));
        ndisabled--;
    } else if (commit && ndisabled < (int)SL_ARRAY_SIZE(disabled)) {
        snprintf(disabled[ndisabled++], sizeof(disabled[0]), "%s", provider);
    }
    pthread_mutex_unlock(&dis_mu);
    if (rc == 0 && commit)
        sl_logi("backend \"%s\" %sd (requests to its buckets %s)", provider, tag,
                on ? "go to the remote again" : "fail at once until it is enabled");
    return rc;
}

void sl_backend_set_alias_resolver(sl_backend_alias_fn fn)
{
    alias_url = fn;
}

static int remote_of(const struct sl_bck *b, struct remote *rm, struct sl_err *err)
{
    memset(rm, 0, sizeof(*rm));
    /* s3://b is itself the remote; ais://b may have one behind it */
    bool own = strcmp(b->provider, "ais") != 0;
    const char *prov = own ? b->provider : pstr(b->props, "backend_bck", "provider", NULL);
    const char *name = own ? b->name : pstr(b->props, "backend_bck", "name", NULL);
    const char *ns = own ? "" : pstr(b->props, "backend_bck", "namespace", "uuid");
    if (*ns)
        snprintf(rm->desc, sizeof(rm->desc), "%s://@%s/%s", sl_provider_scheme(prov), ns, name);
    else
        snprintf(rm->desc, sizeof(rm->desc), "%s://%s", sl_provider_scheme(prov), name);
    if (sl_backend_disabled(sl_provider_norm(prov)))
        return sl_errf(err, SL_EUNAVAIL, "%s: backend \"%s\" is disabled on target %s (enable it: `shale advanced "
                       "enable-backend %s`, or PUT /v1/cluster/enable-bend/%s)", rm->desc, sl_provider_norm(prov), G.name,
                       sl_provider_norm(prov), sl_provider_norm(prov));
    rm->plug = sl_plug_backend(sl_arch_reg(), prov);
    const char *so = !strcmp(prov, "ht")    ? "backend_http.so"
                     : !strcmp(prov, "ais") ? "backend_ais.so"
                                            : "backend_s3.so";
    if (!rm->plug && own)
        return sl_errf(err, SL_EUNAVAIL, "%s: this node has no backend plugin for provider \"%s\" "
                       "(%s in the plugin directory)", rm->desc, prov, so);
    if (!rm->plug)
        return sl_errf(err, SL_EUNAVAIL, "%s://%s is backed by %s, but this node has no backend plugin for provider "
                       "\"%s\" (%s in the plugin directory)", sl_provider_scheme(b->provider), b->name,
                       rm->desc, prov, so);
    rm->ops = sl_plug_desc(rm->plug)->backend;
    SL_ABI_SET(&rm->rb);
    rm->rb.name = name;
    rm->rb.endpoint = strcmp(prov, "ht") ? pstr(b->props, "extra", "aws", "endpoint")
                                          : pstr(b->props, "extra", "http", "original_url"); /* the base URL */
    if (!strcmp(prov, "ais")) { /* a remote cluster's: its URL by alias */
        if (!alias_url || alias_url(ns, rm->url, sizeof(rm->url), err) < 0)
            return alias_url ? -1 : sl_errf(err, SL_EINTERNAL, "%s: remote clusters are not known here", rm->desc);
        rm->rb.endpoint = rm->url;
    }
    rm->rb.region = pstr(b->props, "extra", "aws", "cloud_region");
    rm->rb.profile = pstr(b->props, "extra", "aws", "profile");
    rm->rb.addressing = pstr(b->props, "extra", "aws", "addressing");
    rm->rb.multipart_size = json_integer_value(json_object_get(json_object_get(json_object_get(b->props, "extra"),
                                                                               "aws"), "multipart_size"));
    return 0;
}

/* the copy here has the remote's ETag etag (any, when the remote gave none) */
static bool held_etag_is(const struct sl_bck *b, const char *name, size_t nlen, const char *etag)
{
    struct sl_objmd md;
    struct sl_err e2 = { 0 };
    if (sl_obj_stat(b, name, nlen, &md, NULL, &e2) != 1)
        return false;
    const char *et = sl_objmd_get_custom(&md, "ETag");
    bool same = !etag[0] || (et && !strcmp(et, etag));
    sl_objmd_free(&md);
    return same;
}

int sl_backend_refresh(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err)
{
    struct sl_backend_obj o;
    if (sl_backend_head(b, name, nlen, &o, err) < 0) {
        if (err->code == SL_ENOOBJ && json_is_true(json_object_get(json_object_get(b->props, "versioning"),
                                                                   "synchronize"))) {
            struct sl_err e2 = { 0 };
            sl_backend_wait_fetch(b, name, nlen);
            sl_obj_delete(b, name, nlen, &e2); /* gone at the remote: gone here */
        }
        return -1;
    }
    if (held_etag_is(b, name, nlen, o.etag))
        return 0;
    /* changed at the remote, or not held. A fetch that was in flight when
     * we asked may have brought the older version (ours then waits for it
     * and takes its result): once more if so */
    for (int i = 0; i < 2; i++) {
        if (sl_backend_fetch(b, name, nlen, err) < 0)
            return -1;
        if (held_etag_is(b, name, nlen, o.etag))
            break;
    }
    return 0; /* (changed at the remote again meanwhile: the latest fetch stays) */
}

static int page_add(void *ctx, const char *name, size_t len, const struct sl_backend_obj *o)
{
    struct sl_lspage *pg = ctx;
    struct sl_lsent *e = sl_lspage_add(pg);
    e->name = sl_xstrndup(name, len);
    e->nlen = len;
    e->size = o->size > 0 ? (uint64_t)o->size : 0;
    if (o->version[0])
        e->version = sl_xstrdup(o->version);
    return 0;
}

int sl_backend_lso_page(const struct sl_bck *b, const struct sl_lsomsg *m, struct sl_lspage *out, struct sl_err *err)
{
    if (m->flags & SL_LSO_NO_RECURSION)
        return sl_errf(err, SL_EUNSUPP, "%s://%s is a remote bucket: a non-recursive listing of it (virtual "
                       "directories) is not supported; list recursively, or what the cluster holds (flag cached)",
                       sl_provider_scheme(b->provider), b->name);
    char next[4096] = "";
    int max = m->pagesize > 0 && m->pagesize < 1000 ? m->pagesize : 1000;
    if (sl_backend_list_page(b, m->prefix ? m->prefix : "", m->token ? m->token : "", max, page_add, out, next,
                             sizeof(next), err) < 0)
        return -1;
    qsort(out->ents, (size_t)out->n, sizeof(*out->ents), sl_lsent_cmp); /* (S3 lists in byte order already) */
    free(out->token);
    out->token = next[0] ? sl_xstrdup(next) : NULL;
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
    return sl_errf(err, rc == SL_PLUG_EINVAL ? SL_EINVAL : rc == SL_PLUG_EUNSUPP ? SL_EUNSUPP : SL_EINTERNAL,
                   "remote: %s", msg);
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
    const char *ns = pstr(props, "backend_bck", "namespace", "uuid");
    char url[512];
    if (!strcmp(prov, "ais") && alias_url && alias_url(ns, url, sizeof(url), err) < 0) {
        char m[sizeof(err->msg)];
        snprintf(m, sizeof(m), "%s", err->msg);
        return sl_errf(err, SL_EINVAL, "backend_bck ais://@%s/%s: %s; nothing was changed", ns, name, m);
    }
    if (!sl_plug_backend(sl_arch_reg(), prov)) {
        bool s3 = sl_backend_loaded("aws"), ht = sl_backend_loaded("ht");
        return sl_errf(err, SL_EINVAL, "backend_bck: provider \"%s\" has no backend plugin loaded on this node "
                       "(loaded backends: %s%s%s); nothing was changed", prov, s3 ? "aws" : "", s3 && ht ? ", " : "",
                       ht ? "ht" : !s3 ? "none" : "");
    }
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
    struct sl_fetch_opts fo;
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
    bool ranged;                /* the body is written at offsets (pos), checksummed at the end (sl_put_adopt) */
    uint64_t *progress;         /* sl_fetch_opts */
    int64_t pos;
    int64_t summed;             /* ranged: bytes [0, summed) went to sl_put_sum in order (a stream reads them) */
};

/* Write all of data at off of fd; 0, or errno. */
static int pwrite_all(int fd, const void *data, size_t n, int64_t off)
{
    const char *p = data;
    while (n) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : EIO;
        p += w;
        n -= (size_t)w;
        off += w;
    }
    return 0;
}

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
    if (s->ranged) {
        int e = pwrite_all(sl_put_fd(s->p), data, n, s->pos);
        if (e) {
            sl_errf(s->err, e == ENOSPC ? SL_ENOSPC : SL_EIO, "writing the fetched object here: %s", strerror(e));
            s->local_failed = true;
            return 1;
        }
        if (s->tee && s->summed == s->pos) { /* a streamed fetch sums as it goes: no reading back */
            sl_put_sum(s->p, data, n);
            s->summed += (int64_t)n;
        }
        s->pos += (int64_t)n;
    } else if (sl_put_write(s->p, data, n, s->err) < 0) {
        s->local_failed = true;
        return 1;
    }
    if (s->tee && !s->asked)
        tee_first(s);
    if (s->op && sl_opipe_write(s->op, data, n) < 0) { /* the client left: keep filling the cache */
        sl_opipe_close(s->op, true);
        s->op = NULL;
    }
    if (s->progress)
        __atomic_add_fetch(s->progress, (uint64_t)n, __ATOMIC_RELAXED);
    return 0;
}

void sl_backend_custom(const struct sl_bck *b, const struct sl_backend_obj *o, struct sl_kv **kv, int *n)
{
    sl_kv_set(kv, n, "source",
              strcmp(b->provider, "ais") ? b->provider : pstr(b->props, "backend_bck", "provider", NULL));
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

/* ---- the rest of a big object in ranges (AIStore's blob download) ---- */

struct blob {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const struct remote *rm;
    const char *nm;
    size_t nlen;
    int fd;                     /* the PUT's work file */
    int64_t size, chunk;
    int n, next;                /* chunks; the next one to hand out */
    unsigned char *done;
    bool failed;
    struct sl_err err;          /* the first failure */
    char etag[80];              /* every range must come from this version */
    uint64_t *progress;         /* sl_fetch_opts */
};

struct rangesink {
    int fd;
    int64_t off, end;
    int werr;
    bool over;                  /* more bytes came than asked for */
    uint64_t *progress;
};

static int range_sink(void *ctx, const void *data, size_t n)
{
    struct rangesink *rs = ctx;
    if (rs->off + (int64_t)n > rs->end) { /* the remote ignored the range */
        rs->over = true;
        return 1;
    }
    rs->werr = pwrite_all(rs->fd, data, n, rs->off);
    if (rs->werr)
        return 1;
    rs->off += (int64_t)n;
    if (rs->progress)
        __atomic_add_fetch(rs->progress, (uint64_t)n, __ATOMIC_RELAXED);
    return 0;
}

/* Take chunks and fetch them until none is left or one failed. */
static void *blob_worker(void *arg)
{
    struct blob *bl = arg;
    for (;;) {
        pthread_mutex_lock(&bl->mu);
        int i = bl->failed || bl->next >= bl->n ? -1 : bl->next++;
        pthread_mutex_unlock(&bl->mu);
        if (i < 0)
            break;
        int64_t off = (int64_t)i * bl->chunk, len = SL_MIN(bl->chunk, bl->size - off);
        struct sl_backend_obj o;
        memset(&o, 0, sizeof(o));
        SL_ABI_SET(&o);
        struct rangesink rs = { .fd = bl->fd, .off = off, .end = off + len, .progress = bl->progress };
        char msg[1024] = "";
        int status = 0;
        int rc = bl->rm->ops->get_object(sl_plug_state(bl->rm->plug), &bl->rm->rb, bl->nm, bl->nlen, off, len,
                                         range_sink, &rs, &o, &status, msg, sizeof(msg));
        struct sl_err e = { 0 };
        const char *d = bl->rm->desc;
        int nl = (int)SL_MIN(bl->nlen, 300);
        if (rs.werr)
            sl_errf(&e, rs.werr == ENOSPC ? SL_ENOSPC : SL_EIO, "writing the fetched object here: %s",
                    strerror(rs.werr));
        else if (rs.over)
            sl_errf(&e, SL_EUNAVAIL, "remote: %s/%.*s: the remote answered a range request with more bytes than "
                    "asked for; set backend.blob_workers to 1 for this remote", d, nl, bl->nm);
        else if (rc != SL_PLUG_OK)
            remote_err(rc, status, msg, &e);
        else if (rs.off != rs.end)
            sl_errf(&e, SL_EUNAVAIL, "remote: %s/%.*s: bytes %lld-%lld came short (%lld of %lld); nothing was "
                    "cached, retry", d, nl, bl->nm, (long long)off, (long long)(off + len - 1),
                    (long long)(rs.off - off), (long long)len);
        else if (bl->etag[0] && o.etag[0] && strcmp(bl->etag, o.etag))
            sl_errf(&e, SL_EUNAVAIL, "remote: %s/%.*s changed while it was fetched (ETag %s, then %s); nothing "
                    "was cached, retry", d, nl, bl->nm, bl->etag, o.etag);
        pthread_mutex_lock(&bl->mu);
        if (e.code && !bl->failed) {
            bl->failed = true;
            bl->err = e;
        } else if (!e.code) {
            bl->done[i] = 1;
        }
        pthread_cond_broadcast(&bl->cv);
        pthread_mutex_unlock(&bl->mu);
        if (e.code)
            break;
    }
    return NULL;
}

/* Stream chunks 1.. of bl to s's client in order, as they come (the
 * client leaving stops only the streaming). */
static void blob_stream(struct blob *bl, struct sinkctx *s)
{
    char *buf = sl_xmalloc(1024 * 1024);
    for (int i = 1; i < bl->n && s->op; i++) {
        pthread_mutex_lock(&bl->mu);
        while (!bl->done[i] && !bl->failed)
            pthread_cond_wait(&bl->cv, &bl->mu);
        bool failed = bl->failed;
        pthread_mutex_unlock(&bl->mu);
        if (failed)
            break;
        int64_t off = (int64_t)i * bl->chunk, end = SL_MIN(off + bl->chunk, bl->size);
        while (off < end && s->op) {
            ssize_t r = pread(bl->fd, buf, (size_t)SL_MIN((int64_t)1024 * 1024, end - off), (off_t)off);
            if (r > 0 && s->summed == off) {
                sl_put_sum(s->p, buf, (size_t)r);
                s->summed += r;
            }
            if (r <= 0 || sl_opipe_write(s->op, buf, (size_t)r) < 0) { /* (a read error fails the commit too) */
                sl_opipe_close(s->op, true);
                s->op = NULL;
                break;
            }
            off += r;
        }
    }
    free(buf);
}

/* Chunk 0 of an object of o->size bytes is in s's work file: fetch the
 * others, workers at a time, streaming them to s's client in order. */
static int fetch_rest(const struct remote *rm, const char *nm, size_t nlen, struct sinkctx *s,
                      const struct sl_backend_obj *o, int64_t chunk, int workers, struct sl_err *err)
{
    struct blob bl = { .rm = rm, .nm = nm, .nlen = nlen, .fd = sl_put_fd(s->p), .size = o->size, .chunk = chunk,
                       .progress = s->progress };
    pthread_mutex_init(&bl.mu, NULL);
    pthread_cond_init(&bl.cv, NULL);
    bl.n = (int)((o->size + chunk - 1) / chunk);
    bl.next = 1;
    bl.done = sl_xcalloc((size_t)bl.n, 1);
    bl.done[0] = 1;
    snprintf(bl.etag, sizeof(bl.etag), "%s", o->etag);
    /* streaming: every worker a thread of its own, this one streams; else this one works too */
    int want = SL_MIN(workers, bl.n - 1) - (s->op ? 0 : 1);
    pthread_t *th = sl_xcalloc((size_t)SL_MAX(want, 1), sizeof(*th));
    int nt = 0;
    while (nt < want && pthread_create(&th[nt], NULL, blob_worker, &bl) == 0)
        nt++;
    if (s->op && nt > 0)
        blob_stream(&bl, s);
    else /* no thread could start: fetch them here, then stream */
        blob_worker(&bl);
    for (int i = 0; i < nt; i++)
        pthread_join(th[i], NULL);
    if (s->op && nt == 0 && !bl.failed)
        blob_stream(&bl, s);
    free(th);
    free(bl.done);
    pthread_cond_destroy(&bl.cv);
    pthread_mutex_destroy(&bl.mu);
    if (bl.failed) {
        *err = bl.err;
        return -1;
    }
    return 0;
}

/* Fetch into the store; with tee, stream to its request too (a failure
 * after the first byte cuts that answer off). With backend.blob_workers
 * > 1 the first request asks for one chunk (backend.blob_chunk): a small
 * object comes whole, and a bigger one is fetched on in parallel ranges. */
static int fetch(const struct sl_bck *b, const char *name, size_t nlen, struct tee *tee,
                 const struct sl_fetch_opts *fo, struct sl_err *err)
{
    struct remote rm;
    if (remote_of(b, &rm, err) < 0)
        return -1;
    int64_t chunk = fo && fo->chunk > 0 ? fo->chunk : (int64_t)sl_conf->blob_chunk;
    int workers = fo && fo->workers > 0 ? fo->workers : sl_conf->blob_workers;
    struct sl_backend_obj o;
    memset(&o, 0, sizeof(o));
    SL_ABI_SET(&o);
    struct sinkctx s = { .err = err, .b = b, .name = name, .nlen = nlen, .o = &o, .tee = tee, .ranged = workers > 1,
                         .progress = fo ? fo->progress : NULL };
    char msg[1024] = "";
    int status = 0;
    char *nm = sl_xstrndup(name, nlen);
    void *st = sl_plug_state(rm.plug);
    int64_t t0 = sl_mono_ns();
    int rc = rm.ops->get_object(st, &rm.rb, nm, nlen, 0, s.ranged ? chunk : -1, sink, &s, &o, &status, msg,
                                sizeof(msg));
    if (rc == SL_PLUG_EREMOTE && status == 416 && s.ranged && !s.begun) { /* an empty object: no range of it */
        s.ranged = false;
        memset(&o, 0, sizeof(o));
        SL_ABI_SET(&o);
        msg[0] = 0;
        rc = rm.ops->get_object(st, &rm.rb, nm, nlen, 0, -1, sink, &s, &o, &status, msg, sizeof(msg));
    }
    if (rc == SL_PLUG_OK && s.ranged && s.pos == chunk && o.size < 0) /* no total size: the rest in one go */
        rc = rm.ops->get_object(st, &rm.rb, nm, nlen, chunk, -1, sink, &s, &o, &status, msg, sizeof(msg));
    if (rc != SL_PLUG_OK) {
        free(nm);
        sl_put_abort(s.p);
        if (s.op)
            sl_opipe_close(s.op, true);
        if (s.local_failed) /* our side failed (disk, space): that is the error */
            return -1;
        return remote_err(rc, status, msg, err);
    }
    if (!s.begun) { /* an empty object */
        struct sl_put_opts po = { .client_cktype = -1, .expect_size = 0 };
        if (sl_put_begin(b, name, nlen, &po, &s.p, err) < 0) {
            free(nm);
            return -1;
        }
    }
    if (s.ranged && s.pos == chunk && o.size > chunk &&
        fetch_rest(&rm, nm, nlen, &s, &o, chunk, workers, err) < 0) {
        free(nm);
        sl_put_abort(s.p);
        if (s.op)
            sl_opipe_close(s.op, true);
        return -1;
    }
    free(nm);
    uint64_t got = s.ranged ? (uint64_t)(o.size > chunk && s.pos == chunk ? o.size : s.pos) : sl_put_size(s.p);
    if (o.size >= 0 && got != (uint64_t)o.size) {
        sl_put_abort(s.p);
        if (s.op)
            sl_opipe_close(s.op, true);
        return sl_errf(err, SL_EUNAVAIL, "remote: %s/%.*s: the remote sent %llu bytes of %lld; nothing was cached, "
                       "retry", rm.desc, (int)SL_MIN(nlen, 300), name, (unsigned long long)got, (long long)o.size);
    }
    sl_stats_backend(rm.ops->provider, "get", got, sl_mono_ns() - t0); /* (one per object, ranges or not) */
    if (s.op) { /* every byte is out and the count is right: the client is done; caching is ours */
        sl_opipe_close(s.op, false);
        s.op = NULL;
    }
    if (s.ranged && ((uint64_t)s.summed == got ? sl_put_adopt_summed(s.p, got, err) /* streamed: summed */
                     : sl_put_adopt(s.p, got, err)) < 0) { /* else checksums by reading the file back */
        sl_put_abort(s.p);
        return -1;
    }
    sl_backend_custom_put(b, &o, s.p);
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
    int rc = fetch(&t->b, t->name, t->nlen, t, &t->fo, &err);
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
                     const struct sl_fetch_opts *fo, bool *answered, struct sl_err *err)
{
    if (!r) {
        int rc = fetch(b, name, nlen, NULL, fo, err);
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
    if (fo)
        t->fo = *fo;
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &at, tee_main, t) != 0) { /* no thread: fetch whole, then serve */
        pthread_attr_destroy(&at);
        t->refs = 1;
        t->f = NULL;
        tee_unref(t);
        return run_fetch(b, name, nlen, f, NULL, fo, answered, err);
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

int sl_backend_blob_headers(struct sl_req *r, struct sl_fetch_opts *o, struct sl_err *err)
{
    memset(o, 0, sizeof(*o));
    const char *bd = r ? sl_req_header(r, "Ais-Blob-Download") : NULL;
    if (!bd || !*bd)
        return 0;
    bool on;
    if (sl_parse_bool(bd, &on) < 0)
        return sl_errf(err, SL_EINVAL, "Ais-Blob-Download \"%s\": true or false", bd);
    if (!on)
        return 0;
    const char *c = sl_req_header(r, "Ais-Blob-Chunk"), *w = sl_req_header(r, "Ais-Blob-Workers");
    uint64_t cs = 0;
    if (c && *c && (sl_parse_size(c, &cs) < 0 || (cs && (cs < SL_BLOB_CHUNK_MIN || cs > SL_BLOB_CHUNK_MAX))))
        return sl_errf(err, SL_EINVAL, "Ais-Blob-Chunk \"%s\": a size from 64KiB to 2GiB (or 0: backend.blob_chunk)",
                       c);
    char *end = NULL;
    long nw = w && *w ? strtol(w, &end, 10) : 0;
    if (w && *w && (*end || nw < 0 || nw > SL_BLOB_WORKERS_MAX))
        return sl_errf(err, SL_EINVAL, "Ais-Blob-Workers \"%s\": 0 (backend.blob_workers) to %d", w,
                       SL_BLOB_WORKERS_MAX);
    o->chunk = (int64_t)cs;
    o->workers = nw ? (int)nw : (sl_conf->blob_workers > 1 ? sl_conf->blob_workers : 4); /* a blob download is ranged */
    return 0;
}

int sl_backend_fetch(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err)
{
    return sl_backend_fetch_opts(b, name, nlen, NULL, err);
}

static int fetch_one(const struct sl_bck *b, const char *name, size_t nlen, struct sl_req *r,
                     const struct sl_fetch_opts *fo, bool *answered, struct sl_err *err);

int sl_backend_fetch_opts(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_fetch_opts *o,
                          struct sl_err *err)
{
    return fetch_one(b, name, nlen, NULL, o, NULL, err);
}

int sl_backend_fetch_tee(const struct sl_bck *b, const char *name, size_t nlen, struct sl_req *r, bool *answered,
                         struct sl_err *err)
{
    struct sl_fetch_opts o;
    if (sl_backend_blob_headers(r, &o, err) < 0) {
        if (answered)
            *answered = false;
        return -1;
    }
    return fetch_one(b, name, nlen, r, o.workers ? &o : NULL, answered, err);
}

static int fetch_one(const struct sl_bck *b, const char *name, size_t nlen, struct sl_req *r,
                     const struct sl_fetch_opts *fo, bool *answered, struct sl_err *err)
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
        return rc < 0 ? -1 : run_fetch(b, name, nlen, NULL, r, fo, answered, err); /* its fetch failed: try ourselves */
    }
    struct inflight *f = sl_xcalloc(1, sizeof(*f));
    f->bid = b->bid;
    f->name = sl_xstrndup(name, nlen);
    f->nlen = nlen;
    f->waiters = 1;
    f->next = fl_head;
    fl_head = f;
    pthread_mutex_unlock(&fl_mu);
    return run_fetch(b, name, nlen, f, r, fo, answered, err);
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
    if (rc == SL_PLUG_OK)
        sl_stats_backend(rm.ops->provider, "head", 0, 0);
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
    int64_t t0 = sl_mono_ns();
    int rc = rm.ops->put_object(sl_plug_state(rm.plug), &rm.rb, nm, nlen, fd, size, o, &status, msg, sizeof(msg));
    if (rc == SL_PLUG_OK)
        sl_stats_backend(rm.ops->provider, "put", (uint64_t)size, sl_mono_ns() - t0);
    free(nm);
    return rc == SL_PLUG_OK ? 0 : remote_err(rc, status, msg, err);
}

void sl_backend_custom_put(const struct sl_bck *b, const struct sl_backend_obj *o, struct sl_put *p)
{
    struct sl_kv *kv = NULL;
    int n = 0;
    sl_backend_custom(b, o, &kv, &n);
    for (int i = 0; i < n; i++) {
        sl_put_set_custom(p, kv[i].k, kv[i].v);
        free(kv[i].k);
        free(kv[i].v);
    }
    free(kv);
}

int sl_backend_put_through(const struct sl_bck *b, const char *name, size_t nlen, struct sl_put *p,
                           struct sl_err *err)
{
    struct sl_backend_obj o;
    sl_backend_wait_fetch(b, name, nlen); /* a cold GET's fetch must not land after this write */
    if (sl_backend_put(b, name, nlen, sl_put_fd(p), (int64_t)sl_put_size(p), &o, err) < 0)
        return -1;
    sl_backend_custom_put(b, &o, p);
    return 0;
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
    if (rc == SL_PLUG_OK)
        sl_stats_backend(rm.ops->provider, "delete", 0, 0);
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
