/* SPDX-License-Identifier: MIT
 * moss_dt.c: get-batch on the designated target (see moss.c): the owner of
 * every item, the pulls from the other targets, and the archive assembled
 * in request order (streamed, or multipart); sl_moss_serve.
 */
#include "moss_int.h"
#include "bg.h"
#include "cluster.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "opipe.h"
#include "peer.h"
#include "plug.h"
#include "read.h"
#include "spool.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct sl_spool_budget recv_budget;

/* ------------------------------------------------------------------ */
/* the designated target                                              */
/* ------------------------------------------------------------------ */

struct peer {
    char id[48];
    char url[300];
    int *idx;                   /* the request's items this peer holds */
    int n;
    pthread_t th;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct sl_spool sp;         /* what arrived, in order */
    uint64_t rpos;              /* read so far */
    bool done, failed, abort;
    char err[600];
};

struct dt {
    struct moss m;
    struct peer *peers;
    int np;
    int *local;
    int nlocal;
    struct src *lsrc;           /* by position in local[] */
    int *pos;                   /* item -> position in its owner's list */
    int64_t smap_ver;
    char *pull_uri;             /* sl_moss_serve's: what holders are asked (else the item list) */
    int64_t want_smap;          /* with pull_uri: the cluster map the caller split the items by */
    int64_t deadline_ns;
    char cname[64];
    struct sl_job *job;         /* this target's get-batch job (gb_enter) */
};

/* "<bucket>/<obj>[/<archpath>]", or without the bucket with onob */
static void entry_name(const struct moss *m, const struct item *x, struct sl_buf *out)
{
    sl_buf_reset(out);
    if (x->code)
        sl_buf_adds(out, "__404__/");
    if (x->as) {
        sl_buf_adds(out, x->as);
        return;
    }
    if (!m->onob)
        sl_buf_printf(out, "%s/", x->bck);
    sl_buf_adds(out, x->obj);
    if (x->arch)
        sl_buf_printf(out, "/%s", x->arch[0] == '/' ? x->arch + 1 : x->arch);
}

/* ------------------------------------------------------------------ */
/* the job                                                            */
/* ------------------------------------------------------------------ */

/* As AIStore's, get-batch is a demand job: one per target serves the
 * requests that come together (id gbt-...), idle between them; after
 * GB_IDLE_NS without requests it finishes (the watcher below), and the next
 * request starts a new one. */
#define GB_IDLE_NS (10LL * 1000000000LL)
static pthread_mutex_t gb_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sl_job *gb_job;
static int gb_busy;
static int64_t gb_last_ns;

static struct sl_job *gb_enter(void)
{
    pthread_mutex_lock(&gb_mu);
    if (gb_job && !gb_busy && (gb_job->end_ns || sl_now_ns() - gb_last_ns > GB_IDLE_NS)) {
        if (!gb_job->end_ns)
            sl_job_finish(gb_job, NULL);
        sl_job_put(gb_job);
        gb_job = NULL;
    }
    if (!gb_job) {
        char id[32];
        sl_job_id(id, sizeof(id), "gbt-");
        gb_job = sl_job_start("get-batch", id, "", "");
    }
    gb_busy++;
    gb_job->idle = false;
    struct sl_job *j = gb_job; /* stays while busy: it is only replaced when idle */
    pthread_mutex_unlock(&gb_mu);
    return j;
}

static void gb_leave(struct sl_job *j)
{
    pthread_mutex_lock(&gb_mu);
    if (j == gb_job) {
        gb_last_ns = sl_now_ns();
        if (--gb_busy == 0)
            j->idle = true;
    }
    pthread_mutex_unlock(&gb_mu);
}

/* Finish the job once it has been idle GB_IDLE_NS, so that it shows as
 * finished, not as running forever. */
static void *gb_watch(void *arg)
{
    (void)arg;
    while (!sl_bg_stopping()) {
        sleep(1);
        pthread_mutex_lock(&gb_mu);
        if (gb_job && !gb_busy && !gb_job->end_ns && sl_now_ns() - gb_last_ns > GB_IDLE_NS)
            sl_job_finish(gb_job, NULL);
        pthread_mutex_unlock(&gb_mu);
    }
    return NULL;
}

void moss_watch_start(void)
{
    pthread_t t;
    if (!sl_is_target() && G.role != SL_ROLE_STANDALONE)
        return;
    if (pthread_create(&t, NULL, gb_watch, NULL) == 0)
        pthread_detach(t);
    else
        sl_logw("get-batch: cannot start the idle watcher; idle jobs finish only when the next request comes");
}

static int64_t peer_timeout_ms(void)
{
    return sl_conf->send_file_time_ns / 1000000 * 4;
}

static int peer_sink(void *ctx, const char *data, size_t n)
{
    struct peer *p = ctx;
    struct sl_err err = { 0 };
    pthread_mutex_lock(&p->mu);
    int rc = p->abort ? -1 : sl_spool_add(&p->sp, data, n, &err);
    if (rc < 0 && !p->abort)
        snprintf(p->err, sizeof(p->err), "%.500s", err.msg);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return rc;
}

struct fetch_arg {
    struct dt *d;
    struct peer *p;
};

static void *fetch_thread(void *arg)
{
    struct fetch_arg *fa = arg;
    struct dt *d = fa->d;
    struct peer *p = fa->p;
    free(fa);
    char *bs = NULL, *url;
    size_t blen = 0;
    if (d->pull_uri) {
        /* the holder works out its items itself */
        url = sl_xasprintf("%s%s", p->url, d->pull_uri);
    } else {
        json_t *items = json_array();
        for (int k = 0; k < p->n; k++) {
            const struct item *x = &d->m.it[p->idx[k]];
            json_array_append_new(items, json_pack("[s,s?,s,s?,I,I,s?]", x->bck, x->prov, x->obj, x->arch,
                                                   (json_int_t)x->start, (json_int_t)x->length, x->rawhdr));
        }
        json_t *body = json_pack("{s:o}", "items", items);
        bs = sl_json_dump(body, 0, &blen);
        json_decref(body);
        url = sl_xasprintf("%s/v1/internal/moss/pull", p->url);
    }
    struct sl_peer_resp pr;
    int rc = sl_peer_stream_pooled(d->pull_uri ? "GET" : "POST", url, bs, blen, peer_sink, p, peer_timeout_ms(),
                                   &pr);
    free(url);
    free(bs);
    pthread_mutex_lock(&p->mu);
    p->done = true;
    if (rc < 0 || pr.status != 200) {
        p->failed = true;
        if (!p->err[0])
            snprintf(p->err, sizeof(p->err), "t[%s]: %s", p->id, pr.err[0] ? pr.err : "no answer");
    }
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    sl_peer_resp_free(&pr);
    return NULL;
}

/* wait (p->mu held) until n bytes past rpos have arrived; -1 when they never will */
static int peer_wait(struct dt *d, struct peer *p, uint64_t n)
{
    while (p->sp.len < p->rpos + n) {
        if (p->done || p->abort)
            return -1;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&p->cv, &p->mu, &ts);
        if (sl_now_ns() > d->deadline_ns) {
            snprintf(p->err, sizeof(p->err), "t[%s] did not send its items in time", p->id);
            return -1;
        }
    }
    return 0;
}

/* read up to n of the peer's next bytes (waiting for them) */
static int64_t peer_read(struct dt *d, struct peer *p, char *buf, size_t n)
{
    pthread_mutex_lock(&p->mu);
    int64_t r = -1;
    if (peer_wait(d, p, 1) == 0) {
        n = (size_t)SL_MIN((uint64_t)n, p->sp.len - p->rpos);
        r = sl_spool_pread(&p->sp, buf, n, p->rpos);
        if (r > 0)
            p->rpos += (uint64_t)r;
    }
    pthread_mutex_unlock(&p->mu);
    return r;
}

/* the peer's header: every item's code, size and error */
static int peer_header(struct dt *d, struct peer *p, struct sl_err *err)
{
    unsigned char len8[8];
    uint64_t got = 0;
    while (got < 8) {
        int64_t r = peer_read(d, p, (char *)len8 + got, 8 - got);
        if (r <= 0)
            goto fail;
        got += (uint64_t)r;
    }
    uint64_t hl = 0;
    for (int i = 0; i < 8; i++)
        hl |= (uint64_t)len8[i] << (8 * i);
    if (hl > 64 * SL_MIB)
        return sl_errf(err, SL_EINTERNAL, "get-batch: t[%s] sent a bad header", p->id);
    char *hs = sl_xmalloc(hl + 1);
    for (got = 0; got < hl;) {
        int64_t r = peer_read(d, p, hs + got, hl - got);
        if (r <= 0) {
            free(hs);
            goto fail;
        }
        got += (uint64_t)r;
    }
    json_error_t je;
    json_t *h = json_loadb(hs, hl, 0, &je);
    free(hs);
    if (json_is_object(h)) {
        sl_errf(err, SL_EUNAVAIL, "get-batch: t[%s]: %s", p->id, sl_json_str(h, "error", "failed"));
        json_decref(h);
        return -1;
    }
    if (json_array_size(h) != (size_t)p->n) {
        json_decref(h);
        return sl_errf(err, SL_EINTERNAL, "get-batch: t[%s] answered for a different set of items", p->id);
    }
    for (int k = 0; k < p->n; k++) {
        json_t *e = json_array_get(h, (size_t)k);
        struct item *x = &d->m.it[p->idx[k]];
        x->code = (int)json_integer_value(json_array_get(e, 0));
        x->size = (int64_t)json_integer_value(json_array_get(e, 1));
        if (x->code)
            x->err = sl_xstrdup(json_string_value(json_array_get(e, 2)) ?: "error");
    }
    json_decref(h);
    return 0;
fail:
    pthread_mutex_lock(&p->mu);
    sl_errf(err, SL_EUNAVAIL, "get-batch: items from t[%s]: %s", p->id, p->err[0] ? p->err : "the answer ended early");
    pthread_mutex_unlock(&p->mu);
    return -1;
}

static void dt_free(struct dt *d)
{
    for (int i = 0; i < d->np; i++) {
        struct peer *p = &d->peers[i];
        if (p->started) {
            pthread_mutex_lock(&p->mu);
            p->abort = true;
            pthread_cond_broadcast(&p->cv);
            pthread_mutex_unlock(&p->mu);
            pthread_join(p->th, NULL);
        }
        pthread_mutex_lock(&p->mu);
        sl_spool_free(&p->sp);
        pthread_mutex_unlock(&p->mu);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
        free(p->idx);
    }
    free(d->peers);
    for (int k = 0; d->lsrc && k < d->nlocal; k++)
        moss_src_close(&d->lsrc[k]);
    free(d->lsrc);
    free(d->local);
    free(d->pos);
    free(d->pull_uri);
    moss_free(&d->m);
    if (d->job)
        gb_leave(d->job);
    free(d);
}

/* the owner of every item; start pulling from the other owners */
static int dt_start(struct dt *d, struct sl_err *err)
{
    d->job = gb_enter();
    struct sl_smap *sm = sl_smap_get();
    d->smap_ver = sm->version;
    if (d->pull_uri && sm->version != d->want_smap) {
        sl_smap_put(sm);
        return sl_errf(err, SL_EUNAVAIL, "get-batch: the cluster map changed during the request (a target joined "
                       "or left); retry the batch");
    }
    d->pos = sl_xcalloc((size_t)d->m.n, sizeof(int));
    d->local = sl_xcalloc((size_t)d->m.n, sizeof(int));
    d->peers = sl_xcalloc((size_t)(sm->nnodes ? sm->nnodes : 1), sizeof(*d->peers));
    int rc = 0;
    for (int i = 0; i < d->m.n && rc == 0; i++) {
        struct item *x = &d->m.it[i];
        const struct sl_bck *b = moss_bck_of(&d->m, x, err);
        if (!b) {
            rc = -1;
            break;
        }
        const struct sl_snode *t = NULL;
        if (G.role != SL_ROLE_STANDALONE) {
            t = sl_read_target(sm, b, x->obj, strlen(x->obj)); /* (an EC stand-in for an owner that is down) */
            if (!t) {
                rc = sl_errf(err, SL_EUNAVAIL, "get-batch: the cluster has no active targets");
                break;
            }
            if (t->flags & SL_SNF_OFFLINE) {
                rc = sl_errf(err, SL_EUNAVAIL, "get-batch: %s/%s: its target t[%s] is not responding; retry when "
                             "it is back", b->name, x->obj, t->id);
                break;
            }
        }
        if (!t || !strcmp(t->id, G.id)) {
            x->owner = -1;
            d->pos[i] = d->nlocal;
            d->local[d->nlocal++] = i;
            continue;
        }
        int pi = 0;
        while (pi < d->np && strcmp(d->peers[pi].id, t->id))
            pi++;
        if (pi == d->np) {
            struct peer *p = &d->peers[d->np++];
            snprintf(p->id, sizeof(p->id), "%s", t->id);
            snprintf(p->url, sizeof(p->url), "%s", t->data_url);
            p->idx = sl_xcalloc((size_t)d->m.n, sizeof(int));
            pthread_mutex_init(&p->mu, NULL);
            pthread_cond_init(&p->cv, NULL);
            sl_spool_init(&p->sp, &recv_budget);
        }
        x->owner = pi;
        d->pos[i] = d->peers[pi].n;
        d->peers[pi].idx[d->peers[pi].n++] = i;
    }
    sl_smap_put(sm);
    if (rc < 0)
        return -1;
    __atomic_store_n(&recv_budget.limit, sl_conf->moss_mem, __ATOMIC_RELAXED);
    for (int i = 0; i < d->np; i++) {
        struct fetch_arg *fa = sl_xmalloc(sizeof(*fa));
        *fa = (struct fetch_arg){ d, &d->peers[i] };
        if (pthread_create(&d->peers[i].th, NULL, fetch_thread, fa) != 0) {
            free(fa);
            return sl_errf(err, SL_EINTERNAL, "get-batch: cannot start a thread");
        }
        d->peers[i].started = true;
    }
    d->lsrc = sl_xcalloc((size_t)(d->nlocal ? d->nlocal : 1), sizeof(*d->lsrc));
    moss_open_local(&d->m, d->local, d->nlocal, d->lsrc);
    for (int i = 0; i < d->np; i++)
        if (peer_header(d, &d->peers[i], err) < 0)
            return -1;
    return 0;
}

/* the bytes of item i into w */
/* where an item's bytes go: the archive writer, or (raw) the output */
struct sink {
    struct sl_plug_writer *w;
    const struct sl_io *io;
};

static int sink_write(struct sink *k, const char *buf, size_t n, struct sl_err *err)
{
    if (k->w)
        return sl_plug_writer_write(k->w, buf, n, err);
    if (k->io->write(k->io->ctx, buf, n) != (int64_t)n)
        return sl_errf(err, SL_EIO, "get-batch: the client went away");
    return 0;
}

/* the bytes of item i */
static int copy_item(struct dt *d, int i, struct sink *k, char *buf, struct sl_err *err)
{
    struct item *x = &d->m.it[i];
    uint64_t left = (uint64_t)x->size;
    if (x->owner < 0) {
        struct src *s = &d->lsrc[d->pos[i]];
        if (moss_src_ready(&d->m, x, s, err) < 0)
            return -1;
        int64_t r;
        while ((r = moss_src_read(s, buf, CHUNK, err)) > 0)
            if (sink_write(k, buf, (size_t)r, err) < 0)
                return -1;
        moss_src_close(s);
        if (r < 0)
            sl_err_wrap(err, "get-batch: %s/%s", x->bck, x->obj);
        return r < 0 ? -1 : 0;
    }
    struct peer *p = &d->peers[x->owner];
    while (left) {
        int64_t r = peer_read(d, p, buf, (size_t)SL_MIN(left, (uint64_t)CHUNK));
        if (r <= 0)
            return sl_errf(err, SL_EUNAVAIL, "get-batch: %s/%s from t[%s]: %s", x->bck, x->obj, p->id,
                           p->err[0] ? p->err : "the answer ended early");
        if (sink_write(k, buf, (size_t)r, err) < 0)
            return -1;
        left -= (uint64_t)r;
    }
    return 0;
}

/* the whole archive through io */
static int produce(struct dt *d, const struct sl_io *io, struct sl_err *err)
{
    struct sl_plug_writer *w = NULL;
    if (!d->m.raw && sl_plug_writer_open(d->m.fmt, io, 0, &w, err) < 0)
        return -1;
    struct sink k = { w, io };
    struct sl_buf name;
    sl_buf_init(&name);
    char *buf = sl_xmalloc(CHUNK);
    int64_t now = d->m.fixed_mtime ? 0 : sl_now_ns() / 1000000000;
    int rc = 0;
    for (int i = 0; i < d->m.n && rc == 0; i++) {
        struct item *x = &d->m.it[i];
        if (!d->m.raw) {
            entry_name(&d->m, x, &name);
            rc = sl_plug_writer_add(w, name.p, name.len, x->code ? 0 : x->size, now, 0644, err);
        }
        if (rc == 0 && !x->code)
            rc = copy_item(d, i, &k, buf, err);
        if (rc == 0 && !x->code) {
            sl_job_add(x->owner < 0 ? &d->job->loc_objs : &d->job->in_objs, 1);
            sl_job_add(x->owner < 0 ? &d->job->loc_bytes : &d->job->in_bytes, (uint64_t)x->size);
        } else if (rc == 0) {
            sl_job_add(&d->job->err_objs, 1);
        }
    }
    if (rc == 0 && d->m.raw) {
        /* the end of a tar: two zero blocks */
        memset(buf, 0, 1024);
        rc = sink_write(&k, buf, 1024, err);
    }
    if (rc == 0 && w)
        rc = sl_plug_writer_finish(w, err);
    if (rc == 0)
        sl_job_add(&d->job->out_objs, 1); /* one archive out */
    sl_plug_writer_close(w);
    free(buf);
    sl_buf_free(&name);
    if (rc == 0) {
        struct sl_smap *sm = sl_smap_get();
        bool changed = sm->version != d->smap_ver;
        sl_smap_put(sm);
        if (changed)
            rc = sl_errf(err, SL_EUNAVAIL, "get-batch: the cluster map changed during the request (a target joined "
                         "or left); retry the batch");
    }
    return rc;
}

static int64_t pipe_write(void *ctx, const void *buf, size_t n)
{
    return sl_opipe_write(ctx, buf, n) < 0 ? -1 : (int64_t)n;
}

struct strm_arg {
    struct dt *d;
    struct sl_opipe *p;
};

static void *strm_thread(void *arg)
{
    struct strm_arg *a = arg;
    struct sl_err err = { 0 };
    struct sl_io io = { SL_ABI_INIT(struct sl_io), .ctx = a->p, .write = pipe_write, .name = a->d->cname };
    int rc = produce(a->d, &io, &err);
    if (rc < 0)
        sl_logw("get-batch %s: the response was cut off: %s", a->d->cname, err.msg);
    sl_opipe_close(a->p, rc < 0);
    dt_free(a->d);
    free(a);
    return NULL;
}

/* multipart: "metadata" (MossResp), then "archive" */
struct mpart {
    struct sl_buf head, tail;
    struct sl_spool arch;
    uint64_t pos;
};

static ssize_t mp_read(void *ctx, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct mpart *mp = ctx;
    uint64_t total = mp->head.len + mp->arch.len + mp->tail.len;
    if (mp->pos >= total)
        return 0;
    size_t n;
    if (mp->pos < mp->head.len) {
        n = (size_t)SL_MIN((uint64_t)max, mp->head.len - mp->pos);
        memcpy(buf, mp->head.p + mp->pos, n);
    } else if (mp->pos < mp->head.len + mp->arch.len) {
        int64_t r = sl_spool_pread(&mp->arch, buf, max, mp->pos - mp->head.len);
        if (r <= 0)
            return -1;
        n = (size_t)r;
    } else {
        uint64_t o = mp->pos - mp->head.len - mp->arch.len;
        n = (size_t)SL_MIN((uint64_t)max, mp->tail.len - o);
        memcpy(buf, mp->tail.p + o, n);
    }
    mp->pos += n;
    return (ssize_t)n;
}

static void mp_free(void *ctx)
{
    struct mpart *mp = ctx;
    sl_buf_free(&mp->head);
    sl_buf_free(&mp->tail);
    sl_spool_free(&mp->arch);
    free(mp);
}

static void respond_multipart(struct sl_req *r, struct dt *d)
{
    struct sl_err err = { 0 };
    struct mpart *mp = sl_xcalloc(1, sizeof(*mp));
    sl_buf_init(&mp->head);
    sl_buf_init(&mp->tail);
    sl_spool_init(&mp->arch, &recv_budget);
    struct sl_spool_io sio;
    sl_spool_io_init(&sio, &mp->arch, d->cname, &err);
    if (produce(d, &sio.io, &err) < 0) {
        mp_free(mp);
        sl_resp_err(r, &err);
        return;
    }
    json_t *out = json_array();
    for (int i = 0; i < d->m.n; i++) {
        const struct item *x = &d->m.it[i];
        json_t *o = json_pack("{s:s,s:s,s:s,s:I}", "objname", x->obj, "bucket", x->bck, "provider",
                              x->prov ? x->prov : "ais", "size", (json_int_t)(x->code ? 0 : x->size));
        if (x->arch)
            json_object_set_new(o, "archpath", json_string(x->arch));
        if (x->opaque)
            json_object_set_new(o, "opaque", json_string(x->opaque));
        if (x->code)
            json_object_set_new(o, "err_msg", json_string(x->err ? x->err : "error"));
        json_array_append_new(out, o);
    }
    json_t *resp = json_pack("{s:s,s:o}", "uuid", d->cname, "out", out);
    char *js = sl_json_dump(resp, 0, NULL);
    json_decref(resp);
    char boundary[40];
    sl_rand_id(boundary, 25);
    sl_buf_printf(&mp->head, "--%s\r\nContent-Disposition: form-data; name=\"metadata\"\r\nContent-Type: "
                  "application/json\r\n\r\n%s\r\n--%s\r\nContent-Disposition: form-data; name=\"archive\"; "
                  "filename=\"%s%s\"\r\nContent-Type: application/octet-stream\r\n\r\n",
                  boundary, js, boundary, d->cname, d->m.mime);
    free(js);
    sl_buf_printf(&mp->tail, "\r\n--%s--\r\n", boundary);
    char ct[96];
    snprintf(ct, sizeof(ct), "multipart/mixed; boundary=%s", boundary);
    uint64_t total = mp->head.len + mp->arch.len + mp->tail.len;
    sl_resp_stream(r, 200, ct, total, mp_read, mp, mp_free);
}

/* GET /v1/ml/moss[/BUCKET[/XID/WID/NAT]] on a target (or a standalone node) */
/* find the items, then answer r (an offload fn's): an error, the
 * multipart answer, or the stream (on its own thread). Takes d. */
static void dt_respond(struct sl_req *r, struct dt *d);

static void dt_serve(struct sl_req *r, struct dt *d)
{
    struct sl_err err = { 0 };
    sl_job_id(d->cname, sizeof(d->cname), "gbt-");
    d->deadline_ns = sl_now_ns() + peer_timeout_ms() * 1000000;
    if (dt_start(d, &err) < 0) {
        sl_resp_err(r, &err);
        dt_free(d);
        return;
    }
    dt_respond(r, d);
}

/* the items are open: an error, the multipart answer, or the stream */
static void dt_respond(struct sl_req *r, struct dt *d)
{
    struct sl_err err = { 0 };
    int rc = 0;
    if (!d->m.coer) {
        for (int i = 0; i < d->m.n; i++)
            if (d->m.it[i].code) {
                struct item *x = &d->m.it[i];
                sl_errf(&err, x->code, "get-batch: in[%d] %s/%s%s%s: %s (set \"coer\": true to get an empty "
                        "__404__/ entry instead)", i, x->bck, x->obj, x->arch ? "/" : "", x->arch ? x->arch : "",
                        x->err ? x->err : "error");
                rc = -1;
                break;
            }
    }
    if (rc < 0) {
        sl_resp_err(r, &err);
        dt_free(d);
        return;
    }
    if (!d->m.strm) {
        respond_multipart(r, d);
        dt_free(d);
        return;
    }
    struct strm_arg *a = sl_xmalloc(sizeof(*a));
    a->d = d;
    a->p = sl_resp_opipe(r, 200, moss_ctype_of(d->m.mime), PIPE_HIGH);
    pthread_t t;
    if (pthread_create(&t, NULL, strm_thread, a) != 0) {
        sl_opipe_close(a->p, true);
        dt_free(d);
        free(a);
        return;
    }
    pthread_detach(t);
}

void moss_dt_run(struct sl_req *r, void *arg)
{
    char *bucket = arg;
    struct sl_err err = { 0 };
    struct dt *d = sl_xcalloc(1, sizeof(*d));
    json_t *j = sl_req_body_json(r, &err);
    int rc = j ? moss_parse(j, bucket, sl_req_query(r, "provider"), &d->m, &err) : -1;
    if (rc == 0)
        rc = moss_allow(r, &d->m, &err);
    json_decref(j);
    free(bucket);
    if (rc < 0) {
        sl_resp_err(r, &err);
        dt_free(d);
        return;
    }
    dt_serve(r, d);
}

int sl_moss_serve(struct sl_req *r, const struct sl_moss_item *items, int n, const char *pull_uri, int64_t smap_ver)
{
    struct dt *d = sl_xcalloc(1, sizeof(*d));
    moss_of_items(&d->m, items, n);
    if (!d->m.fmt) {
        sl_resp_errf(r, SL_EUNSUPP, "get-batch: the tar format plugin is not loaded");
        dt_free(d);
        return 0;
    }
    d->pull_uri = pull_uri ? sl_xstrdup(pull_uri) : NULL;
    d->want_smap = smap_ver;
    if (!d->m.raw) {
        dt_serve(r, d);
        return 0;
    }
    /* tar runs: the caller falls back to member by member when a shard's
     * layout is not the plain one (known before the first byte) */
    struct sl_err err = { 0 };
    sl_job_id(d->cname, sizeof(d->cname), "gbt-");
    d->deadline_ns = sl_now_ns() + peer_timeout_ms() * 1000000;
    int rc = dt_start(d, &err);
    bool layout = false;
    for (int i = 0; rc == 0 && i < d->m.n; i++)
        layout = layout || d->m.it[i].code == SL_EUNSUPP;
    if (rc == 0 && !layout) {
        dt_respond(r, d);
        return 0;
    }
    dt_free(d);
    if (rc < 0)
        sl_resp_err(r, &err);
    return rc < 0 ? 0 : 1;
}
