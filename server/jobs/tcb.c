/* SPDX-License-Identifier: MIT
 * tcb.c: copy and transform jobs (see tcb.h, docs/etl.md §offline).
 *
 * The gateway validates the message (source, destination, ETL), creates a
 * missing destination with the source's properties, and starts the job on
 * every target. Each target walks the source objects it owns (a range walk
 * of its own LMDB for buckets and prefixes; for lists and templates, the
 * names whose HRW owner it is), and with num-workers threads reads,
 * transforms and writes every object to the destination name's HRW owner:
 * locally through the crash-safe PUT, remotely as a redirected PUT.
 * Without coer the first failure aborts the job on all targets; with coer
 * failures are counted and listed, and the job finishes.
 */
#include "tcb.h"
#include "tcb_int.h"
#include "read.h"
#include "arch.h"
#include "backend.h"
#include "bg.h"
#include "cluster.h"
#include "etl.h"
#include "jsonx.h"
#include "log.h"
#include "lso.h"
#include "node.h"
#include "peer.h"
#include "plug.h"
#include "putb.h"
#include "store.h"
#include "template.h"
#include "xact.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHUNK SL_TCB_CHUNK
#define QCAP 1024
#define MAX_WORKERS 64
#define MAX_LISTED_ERRORS 100

/* ---- names ---- */

/* "ais/@#/dst/", "ais://dst", "dst" -> bucket name (and provider) */
static int parse_bck(const char *s, char *name, size_t nsz, char *prov, size_t psz, const char **rest,
                     struct sl_err *err)
{
    if (sl_bck_parse(s, SL_BCK_UNAME, prov, psz, name, nsz, rest, err) < 0)
        return -1;
    if (!name[0])
        return sl_errf(err, SL_EINVAL, "invalid bucket \"%s\" (expected ais/@#/NAME/ or ais://NAME)", s);
    return 0;
}

/* object_to "ais/@#/dst/a/b.jpg" -> bucket, object name */
static int parse_uname(const char *s, char *bck, size_t bsz, const char **obj, struct sl_err *err)
{
    char prov[16];
    if (parse_bck(s, bck, bsz, prov, sizeof(prov), obj, err) < 0)
        return -1;
    if (*obj == s + strlen(s) && s[strlen(s) - 1] != '/')
        return sl_errf(err, SL_EINVAL, "object_to \"%s\": expected PROVIDER/@#/BUCKET/OBJECT (e.g. ais/@#/dst/a.jpg)",
                       s);
    return **obj ? 0 : sl_errf(err, SL_EINVAL, "object_to \"%s\": missing the object name", s);
}

/* ---- the destination of one object ---- */

struct tmsg {
    char *prefix, *prepend, *etl, *pipeline, *etl_args, *template_;
    json_t *ext;                /* {"jpg":"png"} or NULL */
    char **objnames;
    size_t nobj;
    bool has_list, dry_run, coer, nonrecurs;
    bool latest;                /* latest-ver: a held copy of a remote source is checked against the remote */
    bool sync;                  /* synchronize: latest, and what the remote no longer has goes from the
                                 * destination (and the source's copies) */
    int workers;
};

static void tmsg_free(struct tmsg *m)
{
    free(m->prefix);
    free(m->prepend);
    free(m->etl);
    free(m->pipeline);
    free(m->etl_args);
    free(m->template_);
    json_decref(m->ext);
    for (size_t i = 0; i < m->nobj; i++)
        free(m->objnames[i]);
    free(m->objnames);
    memset(m, 0, sizeof(*m));
}

static char *dst_name(const struct tmsg *m, const char *name)
{
    struct sl_buf b;
    sl_buf_init(&b);
    sl_buf_adds(&b, m->prepend ? m->prepend : "");
    const char *base = strrchr(name, '/');
    const char *dot = strrchr(base ? base : name, '.');
    if (m->ext && dot && dot[1]) {
        json_t *to = json_object_get(m->ext, dot + 1);
        if (!to) {
            char *k = sl_xasprintf(".%s", dot + 1);
            to = json_object_get(m->ext, k);
            free(k);
        }
        if (json_is_string(to)) {
            const char *t = json_string_value(to);
            sl_buf_add(&b, name, (size_t)(dot - name) + 1);
            sl_buf_adds(&b, t[0] == '.' ? t + 1 : t);
            return sl_buf_steal(&b);
        }
    }
    sl_buf_adds(&b, name);
    return sl_buf_steal(&b);
}

/* A copy's small objects, gathered per destination target and stored there
 * a batch at a time (putb.h: sl_putb_dests): a few syncs and one request
 * per batch instead of an fsync'ed PUT each. */
#define BATCH_OBJ_MAX (128 * 1024)  /* larger objects go one PUT each */
#define BATCH_BYTES (1 << 20)
#define BATCH_OBJS_MAX 128          /* (a flush holds a work file open for each: copier_batches) */

struct tjob;

struct put_io {
    struct sl_put *put;
    int fd;                     /* temp file for a remote owner, or -1 */
    uint64_t n;
    struct sl_err *err;
    int err_no;
};

static int64_t pio_write(void *ctx, const void *buf, size_t n)
{
    struct put_io *p = ctx;
    if (p->put) {
        if (sl_put_write(p->put, buf, n, p->err) < 0)
            return -1;
    } else if (p->fd >= 0) {
        const char *c = buf;
        size_t left = n;
        while (left) {
            ssize_t k = write(p->fd, c, left);
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0) {
                p->err_no = errno;
                return -1;
            }
            c += k;
            left -= (size_t)k;
        }
    }
    p->n += n;
    return (int64_t)n;
}

struct dest {
    bool local;
    char tid[48];               /* remote owner's id */
    char *data_url;             /* and its data URL */
    char *url;                  /* the object's PUT URL there: dest_url, for the objects not batched */
};

static int dest_of(const struct copier *c, const char *dname, size_t dlen, struct dest *d, struct sl_err *err)
{
    memset(d, 0, sizeof(*d));
    if (G.role == SL_ROLE_STANDALONE) {
        d->local = true;
        return 0;
    }
    struct sl_smap *s = sl_smap_get();
    struct sl_buf un;
    sl_buf_init(&un);
    sl_obj_uname(&un, c->dst->provider, c->dst->name, dname, dlen);
    const struct sl_snode *t = sl_smap_hrw_target(s, un.p, un.len);
    sl_buf_free(&un);
    int rc = 0;
    if (!t) {
        rc = sl_errf(err, SL_EUNAVAIL, "the cluster has no active targets");
    } else if (!strcmp(t->id, G.id)) {
        d->local = true;
    } else if (t->flags & SL_SNF_OFFLINE) {
        rc = sl_errf(err, SL_EUNAVAIL, "the destination's owner t[%s] (%s) is not responding", t->id, t->url);
    } else {
        snprintf(d->tid, sizeof(d->tid), "%s", t->id);
        d->data_url = sl_xstrdup(t->data_url);
    }
    sl_smap_put(s);
    return rc;
}

/* The remote owner's PUT URL of the object, made on first use (a batched
 * object never needs it) */
static const char *dest_url(const struct copier *c, struct dest *d, const char *dname, size_t dlen)
{
    if (!d->url) {
        struct sl_buf url;
        sl_buf_init(&url);
        sl_peer_obj_url(&url, d->data_url, c->dst->name, c->dst->provider, dname, dlen);
        sl_peer_add_redirect_marks(&url, G.id);
        d->url = sl_buf_steal(&url);
    }
    return d->url;
}

static int remote_status(struct sl_peer_resp *pr, int prc, const struct dest *d, struct sl_err *err)
{
    if (prc == 0 && pr->status == 200)
        return 0;
    return sl_errf(err, pr->status ? sl_code_from_status((int)pr->status) : SL_EUNAVAIL, "writing to %s: %s", d->url,
                   pr->err[0] ? pr->err : "failed");
}

/* Custom metadata as Ais-Custom-Md headers (copies keep it). */
static struct sl_peer_hdr *custom_hdrs(const struct sl_objmd *md, char ***keep, int *n)
{
    struct sl_peer_hdr *h = sl_xcalloc((size_t)md->ncustom + 2, sizeof(*h)); /* and one more for the caller */
    *keep = sl_xcalloc((size_t)md->ncustom + 1, sizeof(char *));
    *n = 0;
    for (int i = 0; i < md->ncustom; i++) {
        if (!strcmp(md->custom[i].k, "orig_fntl"))
            continue;
        (*keep)[*n] = sl_xasprintf("%s=%s", md->custom[i].k, md->custom[i].v);
        h[*n].k = "Ais-Custom-Md";
        h[*n].v = (*keep)[*n];
        (*n)++;
    }
    return h;
}

static void free_hdrs(struct sl_peer_hdr *h, char **keep, int n)
{
    for (int i = 0; i < n; i++)
        free(keep[i]);
    free(keep);
    free(h);
}

static int put_local_bytes(const struct copier *c, const char *dname, size_t dlen, const char *data, size_t len,
                           struct sl_err *err)
{
    struct sl_put_opts o = { .client_cktype = -1, .expect_size = (int64_t)len };
    struct sl_put *p;
    if (sl_put_begin(c->dst, dname, dlen, &o, &p, err) < 0)
        return -1;
    if ((len && sl_put_write(p, data, len, err) < 0) || sl_put_commit(p, NULL, err) < 0) {
        sl_put_abort(p);
        return -1;
    }
    sl_arch_after_put(c->dst, dname, dlen);
    return 0;
}

/* ---- batches ---- */

static void object_done(struct tjob *t, const char *name, uint64_t in, uint64_t out, const struct sl_err *err);

struct btag {                   /* an object in a batch */
    uint64_t in, out;           /* its bytes read, and to store */
    char src[];                 /* its source name, for the job's counts and errors */
};

static void batch_done(void *ctx, void *tag, int rc, const struct sl_err *err)
{
    struct btag *b = tag;
    if (rc != -2) /* (-2: dropped, the job is being aborted) */
        object_done(ctx, b->src, b->in, b->out, rc < 0 ? err : NULL);
    free(b);
}

/* Into its owner's batch: 1 (counted when the batch is stored), or -1.
 * The object's bytes: out (olen of them: a transform's output), or
 * md->size read from fd. */
static int batch_add(struct copier *c, const char *name, size_t nlen, int fd, const struct sl_objmd *md,
                     const void *out, size_t olen, const char *dname, size_t dlen, const struct dest *d,
                     struct sl_err *err)
{
    struct btag *b = sl_xmalloc(sizeof(*b) + nlen + 1);
    b->in = md->size;
    b->out = out ? olen : md->size;
    memcpy(b->src, name, nlen);
    b->src[nlen] = 0;
    struct sl_objmd bare = { .size = olen }; /* (a transform's output: no metadata) */
    if (sl_putb_dests_add(c->bat, d->local ? NULL : d->tid, d->data_url, dname, dlen, fd, out, out ? &bare : md,
                          b, err) < 0) {
        free(b);
        return -1;
    }
    return 1;
}

/* plain copy, streaming from fd */
static int copy_plain(struct copier *c, int fd, const struct sl_objmd *md, const char *dname, size_t dlen,
                      struct dest *d, struct sl_err *err)
{
    if (c->dry_run) {
        c->out_bytes = md->size;
        return 0;
    }
    if (d->local) {
        struct sl_put_opts o = { .client_cktype = -1, .expect_size = (int64_t)md->size, .custom = md->custom,
                                 .ncustom = md->ncustom, .rename_copy = c->rename,
                                 .move = c->rename };
        struct sl_put *p;
        if (sl_put_begin(c->dst, dname, dlen, &o, &p, err) < 0)
            return -1;
        uint64_t off = 0;
        while (off < md->size) {
            ssize_t k = pread(fd, c->buf, CHUNK, (off_t)off);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0) {
                sl_put_abort(p);
                return sl_errf(err, SL_EIO, "reading the source: %s", k < 0 ? strerror(errno) : "short read");
            }
            if (sl_put_write(p, c->buf, (size_t)k, err) < 0) {
                sl_put_abort(p);
                return -1;
            }
            off += (uint64_t)k;
        }
        if (sl_put_commit(p, NULL, err) < 0)
            return -1;
        sl_arch_after_put(c->dst, dname, dlen);
        c->out_bytes = md->size;
        return 0;
    }
    char **keep;
    int nh;
    struct sl_peer_hdr *h = custom_hdrs(md, &keep, &nh);
    if (c->rename) /* the one write the new name takes during a rename */
        h[nh++] = (struct sl_peer_hdr){ "Ais-Rename-From", c->src->name };
    struct sl_peer_resp pr;
    int prc = sl_peer_put_fd(dest_url(c, d, dname, dlen), h, nh, fd, md->size, sl_conf->send_file_time_ns / 1000000,
                             &pr);
    int rc = remote_status(&pr, prc, d, err);
    sl_peer_resp_free(&pr);
    free_hdrs(h, keep, nh);
    if (rc == 0)
        c->out_bytes = md->size;
    return rc;
}

static int copy_object_etl(struct copier *c, int fd, const struct sl_objmd *md, const char *name, size_t nlen,
                           const char *dname, size_t dlen, struct dest *d, struct sl_err *err)
{
    uint64_t cap = sl_etl_max_input(c->etl, c->netl);
    if (md->size > cap) {
        char ml[32];
        sl_format_size(c->etl[0]->lim.mem_limit, ml, sizeof(ml));
        char cn[400];
        sl_obj_cname(cn, sizeof(cn), c->src, name, nlen);
        sl_errf(err, SL_ETOOBIG, "etl %s: %s is %llu bytes, larger than an object-mode transform with mem_limit %s "
                "accepts (%llu); raise mem_limit", c->etl[0]->name, cn, (unsigned long long)md->size, ml,
                (unsigned long long)cap);
        sl_etl_record_error(c->etl[0], c->job, cn, 413, err->msg);
        return -1;
    }
    char *data, *out;
    size_t olen;
    if (sl_etl_read_all(fd, md->size, &data, err) < 0)
        return -1;
    int rc = sl_etl_run_bytes(c->etl, c->netl, c->src, name, nlen, c->args, c->job, data, md->size, &out, &olen,
                              err);
    free(data);
    if (rc < 0)
        return -1;
    if (c->dry_run) {
        rc = 0;
    } else if (c->bat && olen <= BATCH_OBJ_MAX) {
        rc = batch_add(c, name, nlen, fd, md, out, olen, dname, dlen, d, err);
    } else if (d->local) {
        rc = put_local_bytes(c, dname, dlen, out, olen, err);
    } else {
        struct sl_peer_resp pr;
        int prc = sl_peer_call("PUT", dest_url(c, d, dname, dlen), NULL, 0, out, olen,
                               sl_conf->send_file_time_ns / 1000000, &pr);
        rc = remote_status(&pr, prc, d, err);
        sl_peer_resp_free(&pr);
    }
    free(out);
    if (rc == 0)
        c->out_bytes = olen;
    return rc;
}

static int copy_sample_etl(struct copier *c, int fd, const char *name, size_t nlen, const char *dname, size_t dlen,
                           struct dest *d, struct sl_err *err)
{
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), c->src, name, nlen);
    const struct sl_plug *fmt = sl_arch_format_of(name, nlen, NULL, fd);
    if (!fmt)
        return sl_errf(err, SL_EINVAL, "etl %s: %s is not a shard of a supported format (%s); a sample-mode ETL "
                       "reads WebDataset shards", c->etl[0]->name, cn, sl_arch_supported());
    struct put_io pio = { .fd = -1, .err = err };
    if (!c->dry_run) {
        if (d->local) {
            struct sl_put_opts o = { .client_cktype = -1, .expect_size = -1 };
            if (sl_put_begin(c->dst, dname, dlen, &o, &pio.put, err) < 0)
                return -1;
        } else if ((pio.fd = sl_store_tmpfd(err)) < 0) {
            return -1;
        }
    }
    struct sl_plug_fdio in;
    sl_plug_fdio_init(&in, fd, 0, cn);
    struct sl_io out = { SL_ABI_INIT(struct sl_io), .ctx = &pio, .write = pio_write, .name = cn };
    struct sl_etl_pipe *pp = NULL;
    int rc = sl_etl_pipe_open(c->etl, c->netl, c->src, name, nlen, c->args, c->job, fmt, &in.io, &out, &pp, err);
    while (rc == 0) {
        int st = sl_etl_pipe_step(pp, err);
        if (st == 0)
            break;
        if (st < 0)
            rc = -1;
    }
    sl_etl_pipe_close(pp);
    if (rc == 0 && pio.err_no)
        rc = sl_errf(err, SL_EIO, "writing a temporary file: %s", strerror(pio.err_no));
    if (rc == 0 && pio.put) {
        struct sl_put *p = pio.put;
        pio.put = NULL;
        rc = sl_put_commit(p, NULL, err);
        if (rc == 0)
            sl_arch_after_put(c->dst, dname, dlen);
    } else if (rc == 0 && pio.fd >= 0) {
        struct sl_peer_resp pr;
        int prc = sl_peer_put_fd(dest_url(c, d, dname, dlen), NULL, 0, pio.fd, pio.n,
                                 sl_conf->send_file_time_ns / 1000000, &pr);
        rc = remote_status(&pr, prc, d, err);
        sl_peer_resp_free(&pr);
    }
    if (pio.put)
        sl_put_abort(pio.put);
    if (pio.fd >= 0)
        close(pio.fd);
    if (rc == 0)
        c->out_bytes = pio.n;
    if (rc < 0 && err->code == SL_EINVAL)
        err->code = SL_EINTERNAL; /* the script failed, not the request: 500 as inline */
    return rc < 0 ? -1 : 0;
}

/* Copy/transform one object. 0 ok, 1 in a batch (counted when that is
 * stored), -1 error (err: SL_ENOOBJ when the source is missing). */
int sl_tcb_copy_one(struct copier *c, const char *name, size_t nlen, const char *dname, size_t dlen,
                    struct sl_err *err)
{
    int fd;
    struct sl_objmd md;
    c->in_bytes = c->out_bytes = 0;
    /* (a remote source's: fetched, kept; a plain copy carries an encrypted one as it is, a transform reads
     * its plaintext) */
    if (sl_read_obj_ex(c->src, name, nlen, c->netl ? 0 : SL_READ_RAW, &fd, &md, err) < 0)
        return -1;
    c->in_bytes = md.size;
    struct dest d;
    int rc = dest_of(c, dname, dlen, &d, err);
    if (rc == 0) {
        if (!c->netl && c->bat && md.size <= BATCH_OBJ_MAX)
            rc = batch_add(c, name, nlen, fd, &md, NULL, 0, dname, dlen, &d, err);
        else if (!c->netl)
            rc = copy_plain(c, fd, &md, dname, dlen, &d, err);
        else if (c->etl[0]->mode == SL_ETL_OBJECT)
            rc = copy_object_etl(c, fd, &md, name, nlen, dname, dlen, &d, err);
        else
            rc = copy_sample_etl(c, fd, name, nlen, dname, dlen, &d, err);
    }
    free(d.url);
    free(d.data_url);
    close(fd);
    sl_objmd_free(&md);
    return rc;
}

/* ---- the job on one target ---- */

struct tjob {
    struct sl_job *job;
    struct tmsg m;
    struct sl_bck src, dst;
    struct sl_etl *etl[SL_ETL_MAX_PIPELINE];
    int netl;
    struct sl_lua_val args;
    bool is_list;

    pthread_mutex_t mu;
    pthread_cond_t can_put, can_get;
    char *q[QCAP];
    int qh, qn;
    bool qend;
    json_t *errors;             /* first MAX_LISTED_ERRORS {obj, msg, ecode} */
    bool range;                 /* the names are a template's range (set before the first is queued) */
    uint64_t skipped;           /* names of the range the source does not have: skipped, as AIStore's */
    uint64_t deleted;           /* synchronize: destination objects deleted, gone at the remote */
    char *listed;               /* the prefix whose names were listed (a whole bucket: ""), or NULL */
    char first_err[1024];
    bool self_failed; /* under mu: this target's object error stopped the job */
};

static void tjob_free(struct tjob *t)
{
    for (int i = 0; i < t->qn; i++)
        free(t->q[(t->qh + i) % QCAP]);
    sl_etl_release_list(t->etl, t->netl);
    sl_lua_val_free(&t->args);
    sl_bck_release(&t->src);
    sl_bck_release(&t->dst);
    tmsg_free(&t->m);
    free(t->listed);
    json_decref(t->errors);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->can_put);
    pthread_cond_destroy(&t->can_get);
    sl_job_put(t->job);
    free(t);
}

/* Wait on cv for at most 100 ms: an abort requested from outside (another
 * target, `job stop`) sets a flag without signalling, and is noticed here. */
static void q_wait(pthread_cond_t *cv, pthread_mutex_t *mu)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 100 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cv, mu, &ts);
}

/* false when the job is ending (abort): the name is freed */
static bool q_push(struct tjob *t, char *name)
{
    pthread_mutex_lock(&t->mu);
    while (t->qn == QCAP && !sl_job_aborting(t->job))
        q_wait(&t->can_put, &t->mu);
    if (sl_job_aborting(t->job)) {
        pthread_mutex_unlock(&t->mu);
        free(name);
        return false;
    }
    t->q[(t->qh + t->qn) % QCAP] = name;
    t->qn++;
    pthread_cond_signal(&t->can_get);
    pthread_mutex_unlock(&t->mu);
    return true;
}

/* The next name; NULL at the end or an abort, or (!wait) when none is queued. */
static char *q_pop(struct tjob *t, bool wait)
{
    pthread_mutex_lock(&t->mu);
    while (wait && !t->qn && !t->qend && !sl_job_aborting(t->job))
        q_wait(&t->can_get, &t->mu);
    char *n = NULL;
    if (t->qn && !sl_job_aborting(t->job)) {
        n = t->q[t->qh];
        t->qh = (t->qh + 1) % QCAP;
        t->qn--;
        pthread_cond_signal(&t->can_put);
    }
    pthread_mutex_unlock(&t->mu);
    return n;
}

static void wake_all(struct tjob *t)
{
    pthread_mutex_lock(&t->mu);
    pthread_cond_broadcast(&t->can_get);
    pthread_cond_broadcast(&t->can_put);
    pthread_mutex_unlock(&t->mu);
}


static void fail_object(struct tjob *t, const char *name, const struct sl_err *err)
{
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), &t->src, name, strlen(name));
    int ecode = sl_err_status(err->code);
    pthread_mutex_lock(&t->mu);
    if (json_array_size(t->errors) < MAX_LISTED_ERRORS)
        json_array_append_new(t->errors, json_pack("{s:s,s:s,s:i}", "obj", cn, "msg", err->msg, "ecode", ecode));
    bool first = !t->first_err[0];
    if (first)
        snprintf(t->first_err, sizeof(t->first_err), "%s", err->msg);
    if (first && !t->m.coer && !sl_job_aborting(t->job))
        t->self_failed = true; /* this target's object stops the job: failed here, aborted elsewhere */
    pthread_mutex_unlock(&t->mu);
    sl_job_add(&t->job->err_objs, 1);
    sl_logw("%s %s: %s: %s", t->job->kind, t->job->id, cn, err->msg);
    if (!t->m.coer && first) {
        sl_job_abort(t->job->id, NULL);
        wake_all(t);
        sl_cluster_abort_job(t->job->id);
    }
}

static void object_done(struct tjob *t, const char *name, uint64_t in, uint64_t out, const struct sl_err *err)
{
    if (err) {
        fail_object(t, name, err);
        return;
    }
    sl_job_add(&t->job->loc_objs, 1);
    sl_job_add(&t->job->loc_bytes, in);
    sl_job_add(&t->job->out_objs, 1);
    sl_job_add(&t->job->out_bytes, out);
}

/* A worker's batches, or NULL: not in a dry run, a sample-mode transform
 * (it streams) or into a remote-backed bucket (its PUTs write through). A
 * rename's copy (move-bck) says so, as its single PUTs do. A flush holds a
 * work file open per object and all workers may flush at once: 256 objects
 * over the workers, 8 to BATCH_OBJS_MAX each. */
static struct sl_putb_dests *copier_batches(struct tjob *t, bool rename)
{
    if (t->m.dry_run || (t->netl && t->etl[0]->mode != SL_ETL_OBJECT) || sl_bck_remote(&t->dst))
        return NULL;
    int n = 256 / (t->m.workers > 0 ? t->m.workers : 1);
    return sl_putb_dests_new(&t->dst, SL_PUTB_COPY, rename ? t->src.name : NULL,
                             n < 8 ? 8 : n > BATCH_OBJS_MAX ? BATCH_OBJS_MAX : n, BATCH_BYTES, batch_done, t);
}

/* Delete name of b where it lives: here, or at its owner (a target DELETE;
 * evict: only the copy, the remote is not asked). Not there is fine. */
static int drop_obj(const struct sl_bck *b, const char *name, bool evict, struct sl_err *err)
{
    size_t nlen = strlen(name);
    bool here = G.role == SL_ROLE_STANDALONE;
    char url_base[512] = "";
    if (!here) {
        struct sl_smap *s = sl_smap_get();
        struct sl_buf un;
        sl_buf_init(&un);
        sl_obj_uname(&un, b->provider, b->name, name, nlen);
        const struct sl_snode *o = sl_smap_hrw_target(s, un.p, un.len);
        sl_buf_free(&un);
        if (o && strcmp(o->id, G.id))
            snprintf(url_base, sizeof(url_base), "%s", o->data_url);
        here = o && !url_base[0];
        sl_smap_put(s);
        if (!here && !url_base[0])
            return sl_errf(err, SL_EUNAVAIL, "the cluster has no active targets");
    }
    if (here) {
        sl_backend_wait_fetch(b, name, nlen);
        if (sl_obj_delete(b, name, nlen, err) < 0 && err->code != SL_ENOOBJ)
            return -1;
        err->msg[0] = 0;
        err->code = 0;
        return 0;
    }
    struct sl_buf url;
    sl_buf_init(&url);
    sl_peer_obj_url(&url, url_base, b->name, b->provider, name, nlen);
    sl_peer_add_redirect_marks(&url, G.id);
    static const char ev[] = "{\"action\":\"evict-listrange\"}";
    struct sl_peer_hdr h = { "Content-Type", "application/json" };
    struct sl_peer_resp pr;
    int prc = sl_peer_call("DELETE", url.p, evict ? &h : NULL, evict ? 1 : 0, evict ? ev : NULL,
                           evict ? sizeof(ev) - 1 : 0, 0, &pr);
    int rc = 0;
    if (prc < 0 || (pr.status != 200 && pr.status != 404))
        rc = sl_errf(err, pr.status ? sl_code_from_status((int)pr.status) : SL_EUNAVAIL, "deleting %s: %s", url.p,
                     pr.err[0] ? pr.err : "failed");
    sl_peer_resp_free(&pr);
    sl_buf_free(&url);
    return rc;
}

/* synchronize: name is gone at the remote; its copy in the destination
 * (dn) and the source's cached copy go */
static int sync_drop(struct tjob *t, const char *name, const char *dn, struct sl_err *err)
{
    if (drop_obj(&t->dst, dn, false, err) < 0 || drop_obj(&t->src, name, true, err) < 0)
        return -1;
    sl_job_add(&t->deleted, 1);
    sl_logi("%s %s: %s gone at %s://%s: deleted from ais://%s (synchronize)", t->job->kind, t->job->id, name,
            sl_provider_scheme(t->src.provider), t->src.name, t->dst.name);
    return 0;
}

static void *worker(void *arg)
{
    struct tjob *t = arg;
    bool rename = !strcmp(t->job->kind, "move-bck");
    struct copier c = { .src = &t->src, .dst = &t->dst, .etl = t->etl, .netl = t->netl, .args = &t->args,
                        .dry_run = t->m.dry_run, .rename = rename, .job = t->job->id, .buf = sl_xmalloc(CHUNK),
                        .bat = copier_batches(t, rename) };
    char *name;
    for (;;) {
        if (!(name = q_pop(t, false))) {
            if (c.bat) /* nothing queued: what waits in batches goes now */
                sl_putb_dests_flush(c.bat, !sl_job_aborting(t->job));
            if (!(name = q_pop(t, true)))
                break;
        }
        struct sl_err err = { 0 };
        for (int i = 0; i < t->netl; i++)
            if (!sl_etl_usable(t->etl[i])) {
                sl_errf(&err, SL_EINVAL, "etl %s was %s while the job ran", t->etl[i]->name,
                        t->etl[i]->removed ? "deleted" : "stopped");
                pthread_mutex_lock(&t->mu);
                if (!t->first_err[0])
                    snprintf(t->first_err, sizeof(t->first_err), "%s", err.msg);
                pthread_mutex_unlock(&t->mu);
                sl_job_abort(t->job->id, NULL);
                wake_all(t);
                break;
            }
        if (err.msg[0]) {
            free(name);
            break;
        }
        char *dn = dst_name(&t->m, name);
        int rc = 0;
        if (t->m.latest && sl_backend_refresh(&t->src, name, strlen(name), &err) < 0) /* the remote's version */
            rc = -1;
        if (rc == 0)
            rc = sl_tcb_copy_one(&c, name, strlen(name), dn, strlen(dn), &err);
        if (rc < 0 && err.code == SL_ENOOBJ && t->m.sync) {
            /* gone at the remote: gone from the destination, and the source's copy goes too */
            struct sl_err e2 = { 0 };
            if (!t->m.dry_run && (sync_drop(t, name, dn, &e2) < 0))
                object_done(t, name, 0, 0, &e2);
        } else if (rc < 0 && err.code == SL_ENOOBJ && t->range) {
            /* a range may name more than the source has */
            sl_job_add(&t->skipped, 1);
            sl_logd("%s %s: %s skipped: not in %s://%s", t->job->kind, t->job->id, name,
                    sl_provider_scheme(t->src.provider), t->src.name);
        } else if (rc <= 0) {
            object_done(t, name, c.in_bytes, c.out_bytes, rc < 0 ? &err : NULL);
        }
        free(dn);
        free(name);
    }
    if (c.bat)
        sl_putb_dests_flush(c.bat, !sl_job_aborting(t->job));
    sl_putb_dests_free(c.bat);
    free(c.buf);
    sl_lua_thread_cleanup();
    return NULL;
}

static int local_page(const struct sl_bck *b, const struct sl_lsomsg *m, struct sl_lspage *out, struct sl_err *err)
{
    return sl_lso_local_page(b, m, G.id, out, err);
}

struct feed_arg {
    struct tjob *t;
    struct sl_smap *s;
};

static int feed_ent(void *arg, const struct sl_lsent *e)
{
    struct feed_arg *fa = arg;
    if (!sl_obj_owned_here(fa->s, &fa->t->src, e->name, e->nlen))
        return 0; /* a misplaced copy: its owner handles the object */
    return q_push(fa->t, sl_xstrndup(e->name, e->nlen)) ? 0 : 1;
}

struct rfeed {
    struct feed_arg *fa;
    int stop;
};

static int remote_ent(void *ctx, const char *name, size_t len, const struct sl_backend_obj *o)
{
    (void)o;
    struct rfeed *rf = ctx;
    if (!sl_obj_owned_here(rf->fa->s, &rf->fa->t->src, name, len))
        return 0; /* its owner copies it */
    rf->stop = q_push(rf->fa->t, sl_xstrndup(name, len)) ? 0 : 1;
    return rf->stop;
}

/* A remote source: its names under prefix, page by page from the remote. */
static int feed_remote(struct tjob *t, const char *prefix, struct sl_err *err)
{
    if (t->m.nonrecurs)
        return sl_errf(err, SL_EUNSUPP, "%s://%s is a remote bucket: a non-recursive copy of it is not supported; "
                       "copy recursively, or name the objects (a list or a template)",
                       sl_provider_scheme(t->src.provider), t->src.name);
    struct feed_arg fa = { t, sl_smap_get() };
    struct rfeed rf = { &fa, 0 };
    char tok[1024] = "", next[1024];
    int rc = 0;
    for (int page = 0; page < 1000000 && !sl_job_aborting(t->job); page++) {
        if ((rc = sl_backend_list_page(&t->src, prefix, tok, 1000, remote_ent, &rf, next, sizeof(next), err)) < 0 ||
            rf.stop || !next[0])
            break;
        snprintf(tok, sizeof(tok), "%s", next);
    }
    sl_smap_put(fa.s);
    return rc;
}

/* Walk this target's own objects under prefix (a remote source: the remote's). */
static int feed_prefix(struct tjob *t, const char *prefix, struct sl_err *err)
{
    free(t->listed);
    t->listed = sl_xstrdup(prefix);
    if (sl_bck_remote(&t->src))
        return feed_remote(t, prefix, err);
    struct sl_lsomsg lm;
    sl_lsomsg_names(&lm, prefix, false, t->m.nonrecurs ? SL_LSO_NO_RECURSION | SL_LSO_NO_DIRS : 0, 1000);
    struct feed_arg fa = { t, sl_smap_get() };
    int rc = sl_lso_walk(local_page, &t->src, &lm, t->job, feed_ent, &fa, err);
    sl_smap_put(fa.s);
    sl_lsomsg_free(&lm);
    return rc;
}

static int feed(struct tjob *t, struct sl_err *err)
{
    if (!t->is_list)
        return feed_prefix(t, t->m.prefix ? t->m.prefix : "", err);
    struct sl_smap *s = sl_smap_get();
    int rc = 0;
    if (t->m.has_list) {
        for (size_t i = 0; i < t->m.nobj && !sl_job_aborting(t->job); i++)
            if (sl_obj_owned_here(s, &t->src, t->m.objnames[i], strlen(t->m.objnames[i])) &&
                !q_push(t, sl_xstrdup(t->m.objnames[i])))
                break;
    } else {
        struct sl_tmpl *tp = NULL;
        if (sl_tmpl_parse(t->m.template_ ? t->m.template_ : "", &tp, err) < 0) {
            rc = -1;
        } else if (!sl_tmpl_is_range(tp)) {
            sl_smap_put(s);
            s = NULL;
            rc = feed_prefix(t, sl_tmpl_prefix(tp), err);
        } else if (sl_tmpl_count(tp) == UINT64_MAX) {
            rc = sl_errf(err, SL_EINVAL, "template \"%s\" has no upper bound", t->m.template_);
        } else {
            struct sl_buf b;
            sl_buf_init(&b);
            t->range = true;
            for (uint64_t i = 0; i < sl_tmpl_count(tp) && !sl_job_aborting(t->job); i++) {
                sl_tmpl_at(tp, i, &b);
                if (sl_obj_owned_here(s, &t->src, b.p, b.len) && !q_push(t, sl_xstrndup(b.p, b.len)))
                    break;
            }
            sl_buf_free(&b);
        }
        sl_tmpl_free(tp);
    }
    if (s)
        sl_smap_put(s);
    return rc;
}

struct names {
    char **v;
    size_t n, cap;
    struct sl_smap *s;
    const struct sl_bck *b;
};

static int names_ent(void *arg, const struct sl_lsent *e)
{
    struct names *nm = arg;
    if (!sl_obj_owned_here(nm->s, nm->b, e->name, e->nlen))
        return 0;
    if (nm->n == nm->cap) {
        nm->cap = nm->cap ? nm->cap * 2 : 256;
        nm->v = sl_xrealloc(nm->v, nm->cap * sizeof(char *));
    }
    nm->v[nm->n++] = sl_xstrndup(e->name, e->nlen);
    return 0;
}

/* synchronize of a listed source (a whole bucket, a prefix): the
 * destination's objects under the prefix that this target owns, each
 * asked at the remote (HEAD); gone there, they go (sync_drop). The
 * listing that fed the copy only names what the remote has. */
static int prune(struct tjob *t, struct sl_err *err)
{
    struct names nm = { .s = sl_smap_get(), .b = &t->dst };
    struct sl_lsomsg lm;
    sl_lsomsg_names(&lm, t->listed, false, 0, 1000);
    int rc = sl_lso_walk(local_page, &t->dst, &lm, t->job, names_ent, &nm, err);
    sl_lsomsg_free(&lm);
    sl_smap_put(nm.s);
    for (size_t i = 0; rc == 0 && i < nm.n && !sl_job_aborting(t->job); i++) {
        struct sl_backend_obj o;
        struct sl_err e = { 0 };
        if (sl_backend_head(&t->src, nm.v[i], strlen(nm.v[i]), &o, &e) == 0)
            continue;
        if (e.code != SL_ENOOBJ || (!t->m.dry_run && sync_drop(t, nm.v[i], nm.v[i], &e) < 0))
            fail_object(t, nm.v[i], &e);
    }
    for (size_t i = 0; i < nm.n; i++)
        free(nm.v[i]);
    free(nm.v);
    return rc;
}

static void *tjob_main(void *arg)
{
    struct tjob *t = arg;
    int n = t->m.workers;
    pthread_t th[MAX_WORKERS];
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 8 * SL_MIB);
    int started = 0;
    for (int i = 0; i < n; i++)
        if (pthread_create(&th[started], &a, worker, t) == 0)
            started++;
    pthread_attr_destroy(&a);
    struct sl_err err = { 0 };
    int rc = started ? feed(t, &err) : sl_errf(&err, SL_EINTERNAL, "cannot start worker threads");
    pthread_mutex_lock(&t->mu);
    t->qend = true;
    pthread_cond_broadcast(&t->can_get);
    pthread_mutex_unlock(&t->mu);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (rc == 0 && t->m.sync && t->listed && !t->first_err[0] && !sl_job_aborting(t->job))
        rc = prune(t, &err);
    char msg[1200] = "";
    if (rc < 0)
        snprintf(msg, sizeof(msg), "%s", err.msg);
    else if (t->first_err[0] && (!t->m.coer || sl_job_aborting(t->job)))
        snprintf(msg, sizeof(msg), "%s", t->first_err);
    else if (sl_job_aborting(t->job))
        snprintf(msg, sizeof(msg), "aborted");
    json_t *ext = json_object();
    json_object_set_new(ext, "errors", json_incref(t->errors));
    json_object_set_new(ext, "failed", json_integer((json_int_t)t->job->err_objs));
    json_object_set_new(ext, "skipped_missing", json_integer((json_int_t)t->skipped));
    json_object_set_new(ext, "sync_deleted", json_integer((json_int_t)t->deleted));
    json_object_set_new(ext, "dry_run", json_boolean(t->m.dry_run));
    if (t->netl)
        json_object_set_new(ext, "etl", json_string(t->etl[0]->name));
    sl_job_set_ext(t->job, ext);
    sl_logi("%s %s: %s (%llu objects, %llu bytes in, %llu out, %llu failed, %llu not in the source skipped)",
            t->job->kind, t->job->id, msg[0] ? msg : "done", (unsigned long long)t->job->loc_objs,
            (unsigned long long)t->job->loc_bytes, (unsigned long long)t->job->out_bytes,
            (unsigned long long)t->job->err_objs, (unsigned long long)t->skipped);
    if (t->self_failed)
        sl_job_fail(t->job, msg);
    else
        sl_job_finish(t->job, msg[0] ? msg : NULL);
    tjob_free(t);
    return NULL;
}

static int tmsg_parse(const json_t *v, bool is_list, struct tmsg *m, struct sl_err *err)
{
    memset(m, 0, sizeof(*m));
    if (v && !json_is_object(v))
        return sl_errf(err, SL_EINVAL, "\"value\" must be a JSON object (TCBMsg: prefix, prepend, dry_run, ext, id, "
                       "num-workers, coer, ...)");
    m->prefix = sl_xstrdup(sl_json_str(v, "prefix", ""));
    m->prepend = sl_xstrdup(sl_json_str(v, "prepend", ""));
    m->etl = sl_xstrdup(sl_json_str(v, "id", ""));
    json_t *ea = sl_json_get(v, "etl_args");
    if (json_is_object(ea) || json_is_array(ea)) {
        char *t = json_dumps(ea, JSON_COMPACT);
        m->etl_args = sl_xstrdup(t ? t : "");
        free(t);
    } else if (ea && !json_is_null(ea) && !json_is_string(ea)) {
        return sl_errf(err, SL_EINVAL, "\"etl_args\" must be a string, a JSON object or an array");
    } else {
        m->etl_args = sl_xstrdup(sl_json_str(v, "etl_args", ""));
    }
    m->dry_run = sl_json_bool(v, "dry_run", false);
    m->coer = sl_json_bool(v, "coer", false);
    m->nonrecurs = sl_json_bool(v, "non-recurs", false);
    json_t *pl = sl_json_get(v, "pipeline");
    if (json_is_array(pl)) {
        struct sl_buf b;
        sl_buf_init(&b);
        size_t i;
        json_t *x;
        json_array_foreach(pl, i, x) {
            if (!json_is_string(x)) {
                sl_buf_free(&b);
                return sl_errf(err, SL_EINVAL, "\"pipeline\" must be an array of ETL names");
            }
            sl_buf_printf(&b, "%s%s", b.len ? "," : "", json_string_value(x));
        }
        m->pipeline = b.p ? sl_buf_steal(&b) : sl_xstrdup("");
    }
    json_t *ext = sl_json_get(v, "ext");
    if (ext && !json_is_null(ext)) {
        if (!json_is_object(ext))
            return sl_errf(err, SL_EINVAL, "\"ext\" must map old extensions to new ones, e.g. {\"jpg\": \"png\"}");
        const char *k;
        json_t *x;
        json_object_foreach(ext, k, x) if (!json_is_string(x)) return sl_errf(err, SL_EINVAL, "\"ext\": the new "
                                                                                 "extension for \"%s\" must be a "
                                                                                 "string", k);
        m->ext = json_deep_copy(ext);
    }
    int64_t nw = sl_json_int(v, "num-workers", 0);
    if (nw < -1 || nw > MAX_WORKERS)
        return sl_errf(err, SL_EINVAL, "\"num-workers\" %lld out of range (-1 serial, 0 auto, up to %d)",
                       (long long)nw, MAX_WORKERS);
    if (nw == -1)
        m->workers = 1;
    else if (nw == 0)
        m->workers = sl_bg_threads() > 0 ? sl_bg_threads() * 2 : 4;
    else
        m->workers = (int)nw;
    if (m->workers > MAX_WORKERS)
        m->workers = MAX_WORKERS;
    json_t *lv = sl_json_get(v, "latest-ver"), *sy = sl_json_get(v, "synchronize");
    if ((lv && !json_is_boolean(lv) && !json_is_null(lv)) || (sy && !json_is_boolean(sy) && !json_is_null(sy)))
        return sl_errf(err, SL_EINVAL, "\"latest-ver\" and \"synchronize\" must be true or false");
    m->sync = json_is_true(sy);
    m->latest = json_is_true(lv) || m->sync; /* (AIStore's synchronize implies latest-ver) */
    if (m->sync && m->prepend[0])
        return sl_errf(err, SL_EINVAL, "\"synchronize\" cannot be combined with \"prepend\"");
    if (m->sync && m->ext)
        return sl_errf(err, SL_EINVAL, "\"synchronize\" cannot be combined with \"ext\" (a destination name "
                       "would not tell which source object it is a copy of)");
    if (is_list) {
        if (sl_listrange_parse(v, true, &m->objnames, &m->nobj, &m->template_, err) < 0)
            return -1;
        m->has_list = m->objnames != NULL;
        if (m->template_) {
            struct sl_tmpl *t;
            if (sl_tmpl_parse(m->template_, &t, err) < 0)
                return -1;
            sl_tmpl_free(t);
        }
    }
    return 0;
}

static json_t *tmsg_json(const struct tmsg *m)
{
    json_t *o = json_object();
    json_object_set_new(o, "prefix", json_string(m->prefix));
    json_object_set_new(o, "prepend", json_string(m->prepend));
    json_object_set_new(o, "id", json_string(m->etl));
    json_object_set_new(o, "etl_args", json_string(m->etl_args));
    json_object_set_new(o, "dry_run", json_boolean(m->dry_run));
    json_object_set_new(o, "coer", json_boolean(m->coer));
    json_object_set_new(o, "non-recurs", json_boolean(m->nonrecurs));
    json_object_set_new(o, "latest-ver", json_boolean(m->latest));
    json_object_set_new(o, "synchronize", json_boolean(m->sync));
    json_object_set_new(o, "num-workers", json_integer(m->workers));
    if (m->pipeline && m->pipeline[0]) {
        json_t *a = json_array();
        char *dup = sl_xstrdup(m->pipeline), *save = NULL;
        for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save))
            json_array_append_new(a, json_string(t));
        free(dup);
        json_object_set_new(o, "pipeline", a);
    }
    if (m->ext)
        json_object_set(o, "ext", m->ext);
    if (m->has_list) {
        json_t *a = json_array();
        for (size_t i = 0; i < m->nobj; i++)
            json_array_append_new(a, json_string(m->objnames[i]));
        json_object_set_new(o, "objnames", a);
    } else if (m->template_) {
        json_object_set_new(o, "template", json_string(m->template_));
    }
    return o;
}

static bool kind_is_list(const char *k)
{
    return !strcmp(k, "copy-listrange") || !strcmp(k, "etl-listrange");
}

static bool kind_is_etl(const char *k)
{
    return !strcmp(k, "etl-bck") || !strcmp(k, "etl-listrange");
}

/* Start this target's share. */
static int start_local(const char *id, const char *kind, const char *src, const char *sprov, const char *dst,
                       const json_t *msg, struct sl_err *err)
{
    struct tjob *t = sl_xcalloc(1, sizeof(*t));
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->can_put, NULL);
    pthread_cond_init(&t->can_get, NULL);
    t->errors = json_array();
    t->is_list = kind_is_list(kind);
    if (tmsg_parse(msg, t->is_list, &t->m, err) < 0 || sl_bck_resolve(src, sprov, NULL, &t->src, err) < 0)
        goto fail;
    if (sl_bck_resolve(dst, "ais", NULL, &t->dst, err) < 0) {
        if (!t->m.dry_run)
            goto fail;
        /* a dry run into a bucket that does not exist yet: nothing is written */
        sl_bck_copy(&t->dst, &t->src);
        snprintf(t->dst.name, sizeof(t->dst.name), "%s", dst);
    }
    if (kind_is_etl(kind) &&
        sl_etl_acquire_list(t->m.etl, t->m.pipeline, t->etl, &t->netl, err) < 0)
        goto fail;
    sl_etl_args_val(t->m.etl_args, &t->args);
    t->job = sl_job_start(kind, id, src, dst);
    pthread_t th;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    int prc = pthread_create(&th, &a, tjob_main, t);
    pthread_attr_destroy(&a);
    if (prc != 0) {
        sl_job_finish(t->job, "cannot start a thread");
        sl_errf(err, SL_EINTERNAL, "%s: cannot start a thread", kind);
        goto fail;
    }
    return 0;
fail:
    tjob_free(t); /* also a partly built one: what is not set yet (calloc) releases nothing */
    return -1;
}

/* target: POST /v1/internal/tcb {"id","kind","src","dst","msg"} */
static void internal_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    if (!json_is_object(j)) {
        json_decref(j);
        sl_resp_errf(r, SL_EINVAL, "internal tcb: bad body");
        return;
    }
    if (start_local(sl_json_str(j, "id", ""), sl_json_str(j, "kind", ""), sl_json_str(j, "src", ""),
                    sl_json_str(j, "src_provider", "ais"), sl_json_str(j, "dst", ""), json_object_get(j, "msg"),
                    &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
    json_decref(j);
}

void sl_tcb_internal(struct sl_req *r)
{
    if (r->method != SL_M_POST) {
        sl_resp_method_not_allowed(r, "POST");
        return;
    }
    if (!sl_is_target()) {
        sl_resp_errf(r, SL_EINVAL, "%s is not a storage target", G.name);
        return;
    }
    sl_req_buffer_body(r, sl_conf->http_max_body_json, internal_done);
}

/* ---- gateway ---- */

struct gstart {
    char *src;
    const char *sprov;          /* the source's provider, normalised (static) */
    char *bck_to;
    json_t *root;
};

static int edit_create_dst(struct sl_bmd *b, void *arg, struct sl_err *err)
{
    const char **names = arg;   /* [dst, src, src provider] */
    if (sl_bmd_find(b, "ais", names[0]))
        return 0;   /* created meanwhile */
    const struct sl_bck *s = sl_bmd_find(b, names[2], names[1]);
    json_t *props = NULL;
    if (s && s->props) {
        props = json_object();
        json_t *ck = json_object_get(s->props, "checksum");
        if (ck)
            json_object_set_new(props, "checksum", json_deep_copy(ck));
        json_t *vr = json_object_get(s->props, "versioning");
        if (vr)
            json_object_set_new(props, "versioning", json_deep_copy(vr));
    }
    const struct sl_bck *added = sl_bmd_add(b, "ais", names[0], props, err);
    json_decref(props);
    return added ? 0 : -1;
}

/* start job id (kind action: a copy or transform of src into dst, which
 * exists) on every target; nm: the TCBMsg */
static int start_everywhere(const char *id, const char *action, const char *src, const char *sprov, const char *dst,
                            json_t *nm, struct sl_err *err)
{
    if (G.role == SL_ROLE_STANDALONE)
        return start_local(id, action, src, sprov, dst, nm, err);
    json_t *body = json_pack("{s:s,s:s,s:s,s:s,s:s,s:O}", "id", id, "kind", action, "src", src, "src_provider", sprov,
                             "dst", dst, "msg", nm);
    size_t blen;
    char *bs = sl_json_dump(body, 0, &blen);
    json_decref(body);
    struct sl_smap *s = sl_smap_get();
    struct sl_fan *f = sl_xcalloc((size_t)s->nnodes + 1, sizeof(*f));
    const struct sl_snode **who = sl_xcalloc((size_t)s->nnodes + 1, sizeof(*who));
    int n = 0;
    for (int i = 0; i < s->nnodes && !err->msg[0]; i++) {
        const struct sl_snode *t = &s->nodes[i];
        if (t->type != SL_NODE_TARGET)
            continue;
        if (t->flags & SL_SNF_OFFLINE) {
            sl_errf(err, SL_EUNAVAIL, "%s: target t[%s] (%s) is not responding; the job would miss its objects",
                    action, t->id, t->url);
            break;
        }
        f[n].url = sl_xasprintf("%s/v1/internal/tcb", t->ctrl_url);
        f[n].method = "POST";
        f[n].body = bs;
        f[n].blen = blen;
        who[n++] = t;
    }
    if (!err->msg[0]) {
        if (!n)
            sl_errf(err, SL_EUNAVAIL, "%s: the cluster has no targets", action);
        sl_peer_fanout(f, n, 0);
        for (int i = 0; i < n && !err->msg[0]; i++)
            if (!f[i].ok || f[i].resp.status != 200)
                sl_errf(err, f[i].ok ? sl_code_from_status((int)f[i].resp.status) : SL_EUNAVAIL,
                        "%s: starting on t[%s]: %s", action, who[i]->id, f[i].resp.err);
    }
    sl_peer_fanout_free_urls(f, n);
    free(f);
    free(who);
    free(bs);
    sl_smap_put(s);
    if (err->msg[0]) {
        sl_cluster_abort_job(id);
        return -1;
    }
    return 0;
}

int sl_tcb_start_copy(const char *kind, const char *id, const char *src, const char *dst, struct sl_err *err)
{
    struct tmsg m;
    if (tmsg_parse(NULL, false, &m, err) < 0) {
        tmsg_free(&m);
        return -1;
    }
    json_t *nm = tmsg_json(&m);
    tmsg_free(&m);
    int rc = start_everywhere(id, kind, src, "ais", dst, nm, err);
    json_decref(nm);
    return rc;
}

static void start_run(struct sl_req *r, void *arg)
{
    struct gstart *g = arg;
    struct sl_err err = { 0 };
    const char *action = sl_json_str(g->root, "action", "");
    json_t *v = sl_json_get(g->root, "value");
    if (json_is_null(v))
        v = NULL;
    bool is_list = kind_is_list(action), is_etl = kind_is_etl(action);
    struct tmsg m;
    char dst[SL_MAX_BCKNAME + 1] = "", prov[16];
    struct sl_bck sb;
    bool have_sb = false;
    if (tmsg_parse(v, is_list, &m, &err) < 0)
        goto fail;
    if (sl_bck_resolve_add(g->src, g->sprov, &sb, &err) < 0) /* (a remote source seen first: added) */
        goto fail;
    have_sb = true;
    if ((m.latest || m.sync) && !sl_bck_remote(&sb)) {
        sl_errf(&err, SL_EINVAL, "%s: \"%s\" applies to a source with a remote bucket behind it, and %s://%s has "
                "none (its objects here are the only version); nothing was done", action,
                m.sync ? "synchronize" : "latest-ver", sl_provider_scheme(sb.provider), sb.name);
        goto fail;
    }
    if (is_list) {
        json_t *tb = sl_json_get(v, "tobck");
        if (!json_is_object(tb) || !sl_json_str(tb, "name", "")[0]) {
            sl_errf(&err, SL_EINVAL, "%s: \"tobck\" (the destination bucket {\"name\": ...}) is required", action);
            goto fail;
        }
        snprintf(dst, sizeof(dst), "%s", sl_json_str(tb, "name", ""));
        const char *tp = sl_provider_norm(sl_json_str(tb, "provider", "ais"));
        if (!tp || strcmp(tp, "ais")) {
            sl_errf(&err, SL_EUNSUPP, "%s: destination provider \"%s\" is not supported (ais only)", action,
                    sl_json_str(tb, "provider", ""));
            goto fail;
        }
    } else {
        if (!g->bck_to || !g->bck_to[0]) {
            sl_errf(&err, SL_EINVAL, "%s: the destination is required as the query parameter bck_to (e.g. "
                    "bck_to=ais/@%%23/dst/)", action);
            goto fail;
        }
        const char *rest;
        if (parse_bck(g->bck_to, dst, sizeof(dst), prov, sizeof(prov), &rest, &err) < 0)
            goto fail;
        if (strcmp(prov, "ais")) {
            sl_errf(&err, SL_EUNSUPP, "%s: destination provider \"%s\" is not supported (ais only)", action, prov);
            goto fail;
        }
    }
    if (sl_bck_name_valid(dst, &err) < 0)
        goto fail;
    if (!strcmp(dst, g->src) && !strcmp(g->sprov, "ais") && !m.dry_run) {
        sl_errf(&err, SL_EINVAL, "%s: source and destination are the same bucket ais://%s (use a different "
                "destination, or dry_run to inspect)", action, dst);
        goto fail;
    }
    if (is_etl) {
        if (!m.etl[0]) {
            sl_errf(&err, SL_EINVAL, "%s: \"id\" (the ETL's name) is required", action);
            goto fail;
        }
        json_t *d = sl_cluster_doc("etlmd");
        json_t *etls = d ? json_object_get(d, "etls") : NULL;
        char *all = sl_xasprintf("%s%s%s", m.etl, m.pipeline && *m.pipeline ? "," : "", m.pipeline ? m.pipeline : "");
        char *save = NULL;
        for (char *t = strtok_r(all, ",", &save); t && !err.msg[0]; t = strtok_r(NULL, ",", &save)) {
            json_t *spec = json_object_get(etls, t);
            if (!spec)
                sl_errf(&err, SL_ENOENT, "%s: etl job %s does not exist", G.name, t);
            else if (strcmp(sl_json_str(spec, "stage", "Running"), "Running"))
                sl_errf(&err, SL_ENOENT, "%s: etl job %s is not running (start it with `shale etl start %s`)", G.name,
                        t, t);
        }
        free(all);
        json_decref(d);
        if (err.msg[0])
            goto fail;
    } else if (m.etl[0]) {
        sl_errf(&err, SL_EINVAL, "%s: \"id\" names an ETL, which a copy does not take (use etl-bck / "
                "etl-listrange)", action);
        goto fail;
    }
    if (!m.dry_run) {
        const char *names[3] = { dst, g->src, g->sprov };
        if (sl_bmd_modify(edit_create_dst, names, &err) < 0)
            goto fail;
    }
    char id[48];
    sl_job_id(id, sizeof(id), is_list ? "tco-" : "");
    json_t *nm = tmsg_json(&m);
    if (start_everywhere(id, action, g->src, g->sprov, dst, nm, &err) < 0) {
        json_decref(nm);
        goto fail;
    }
    json_decref(nm);
    sl_logi("%s %s started: %s://%s -> ais://%s%s%s%s", action, id, sl_provider_scheme(g->sprov), g->src, dst,
            is_etl ? " through etl " : "", is_etl ? m.etl : "", m.dry_run ? " (dry run)" : "");
    sl_resp_text(r, 200, id);
    goto out;
fail:
    sl_resp_err(r, &err);
out:
    if (have_sb)
        sl_bck_release(&sb);
    tmsg_free(&m);
    json_decref(g->root);
    free(g->src);
    free(g->bck_to);
    free(g);
}

static void start_cancel(void *arg)
{
    struct gstart *g = arg;
    json_decref(g->root);
    free(g->src);
    free(g->bck_to);
    free(g);
}

bool sl_tcb_post(struct sl_req *r, const char *src, struct sl_actmsg *m)
{
    if (strcmp(m->action, "copy-bck") && strcmp(m->action, "etl-bck") && strcmp(m->action, "copy-listrange") &&
        strcmp(m->action, "etl-listrange"))
        return false;
    const char *sp = sl_provider_norm(sl_req_query(r, "provider"));
    if (!sp) {
        sl_resp_errf(r, SL_EINVAL, "invalid provider \"%s\" (valid: ais, aws/s3, gcp/gs, azure/az, oci/oc)",
                     sl_req_query(r, "provider"));
        return true;
    }
    struct gstart *g = sl_xcalloc(1, sizeof(*g));
    g->src = sl_xstrdup(src);
    g->sprov = sp;
    const char *bt = sl_req_query(r, "bck_to");
    g->bck_to = bt ? sl_xstrdup(bt) : NULL;
    g->root = json_deep_copy(m->root);
    sl_req_offload(r, start_run, start_cancel, g);
    return true;
}

/* ---- PUT ?object_to= ---- */

struct oto {
    struct sl_bck src, dst;
    char *name, *dname;
    struct sl_etl *etl[SL_ETL_MAX_PIPELINE];
    int netl;
    struct sl_lua_val args;
};

static void oto_free(void *arg)
{
    struct oto *o = arg;
    sl_bck_release(&o->src);
    sl_bck_release(&o->dst);
    free(o->name);
    free(o->dname);
    sl_etl_release_list(o->etl, o->netl);
    sl_lua_val_free(&o->args);
    free(o);
}

static void oto_run(struct sl_req *r, void *arg)
{
    struct oto *o = arg;
    struct sl_err err = { 0 };
    struct copier c = { .src = &o->src, .dst = &o->dst, .etl = o->etl, .netl = o->netl, .args = &o->args,
                        .buf = sl_xmalloc(CHUNK) };
    if (sl_tcb_copy_one(&c, o->name, strlen(o->name), o->dname, strlen(o->dname), &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
    free(c.buf);
    oto_free(o);
}

bool sl_tcb_put_object_to(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen)
{
    const char *to = sl_req_query(r, "object_to");
    if (!to || !*to)
        return false;
    struct sl_err err = { 0 };
    char dbck[SL_MAX_BCKNAME + 1];
    const char *dobj = NULL;
    struct oto *o = sl_xcalloc(1, sizeof(*o));
    sl_bck_copy(&o->src, b);
    o->name = sl_xstrndup(name, nlen);
    if (parse_uname(to, dbck, sizeof(dbck), &dobj, &err) < 0 ||
        sl_bck_resolve(dbck, "ais", NULL, &o->dst, &err) < 0)
        goto fail;
    o->dname = sl_xstrdup(dobj);
    if (sl_objname_check(o->dname, strlen(o->dname), &err) < 0 ||
        (!strcmp(o->src.name, o->dst.name) && !strcmp(o->name, o->dname) &&
         sl_errf(&err, SL_EINVAL, "copy of ais://%s/%s onto itself", o->src.name, o->name) < 0))
        goto fail;
    const char *etl = sl_req_query(r, "etl_name");
    if (etl && *etl &&
        sl_etl_acquire_list(etl, sl_req_query(r, "etl_pipeline"), o->etl, &o->netl, &err) < 0)
        goto fail;
    sl_etl_args_val(sl_req_query(r, "etl_args"), &o->args);
    sl_req_offload(r, oto_run, oto_free, o);
    return true;
fail:
    oto_free(o); /* o is zeroed from calloc: what was not set yet releases nothing */
    sl_resp_err(r, &err);
    return true;
}

static bool tcb_internal(struct sl_req *r)
{
    if (strcmp(r->path, "/v1/internal/tcb"))
        return false;
    sl_tcb_internal(r);
    return true;
}

const struct sl_module sl_tcb_module = {
    .name = "tcb",
    .internal = tcb_internal,
    .bucket_post = sl_tcb_post,
    .post_actions = ", copy-bck, etl-bck, copy-listrange, etl-listrange",
    .obj_put = sl_tcb_put_object_to,
};
