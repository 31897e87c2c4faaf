/* SPDX-License-Identifier: MIT
 * moss.c: get-batch (AIStore's "moss", spec §9): many objects, shard
 * members and byte ranges, from any targets, as one archive in request
 * order.
 *
 *   gateway  GET /v1/ml/moss[/BUCKET] + MossReq: checks the request (400s),
 *            picks a designated target (DT) and answers 307 to it
 *   DT       the same request: opens its own items; asks every other
 *            target that owns items for all of them in one request; once
 *            every item's size or error is known, writes the archive
 *            (streaming: as it goes, with back-pressure; else multipart:
 *            a "metadata" part, then the "archive" part)
 *   holders  POST /v1/internal/moss/pull [[bck,provider,obj,archpath,
 *            start,length],...] -> 8-byte length + JSON [[status,size,
 *            "err"],...], then the bytes of every item that has no error,
 *            back to back in request order
 *
 * Items a holder sends wait in a spool on the DT (memory up to
 * get_batch.mem shared by all requests, then disk), so a batch never has to
 * fit in memory. A change of cluster map during a request ends it with an
 * error: an item is never read from a target that no longer owns it.
 */
#include "moss.h"
#include "arch.h"
#include "auth.h"
#include "backend.h"
#include "cluster.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "opipe.h"
#include "peer.h"
#include "plug.h"
#include "read.h"
#include "spool.h"
#include "store.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (256 * 1024)
#define KEEP_OPEN 256          /* items a node keeps open between sizing and sending */
#define PIPE_HIGH (4 * SL_MIB)

static struct sl_spool_budget recv_budget;

/* ------------------------------------------------------------------ */
/* the request                                                        */
/* ------------------------------------------------------------------ */

struct item {
    char *bck, *prov, *obj, *arch, *opaque;
    char *as;                   /* the entry's name, when the caller chose it (epoch plans) */
    char *rawhdr;               /* raw: the range is a tar fragment whose first header names this member */
    int64_t start, length;
    int owner;                  /* index into moss.peers; -1: this node */
    /* outcome */
    int code;                   /* enum sl_code; 0: ok */
    char *err;
    int64_t size;               /* bytes delivered */
};

struct bcache {
    char *name, *prov;
    struct sl_bck b;
};

struct moss {
    struct item *it;
    int n;
    const struct sl_plug *fmt;
    const char *mime;           /* canonical: .tar .tgz .tar.lz4 .zip */
    bool coer, onob, strm;
    bool fixed_mtime;           /* entries dated 0: the same request gives the same bytes */
    bool raw;                   /* every item is a tar fragment (rawhdr): the answer is their concatenation */
    int coloc;
    struct bcache **bc;
    int nbc;
};

static const struct {
    const char *in, *canon, *ctype;
} mimes[] = {
    { "", ".tar", "application/x-tar" },
    { ".tar", ".tar", "application/x-tar" },
    { "tar", ".tar", "application/x-tar" },
    { ".tgz", ".tgz", "application/gzip" },
    { ".tar.gz", ".tgz", "application/gzip" },
    { "tgz", ".tgz", "application/gzip" },
    { ".tar.lz4", ".tar.lz4", "application/x-lz4" },
    { ".zip", ".zip", "application/zip" },
    { "zip", ".zip", "application/zip" },
};

static const char *ctype_of(const char *canon)
{
    for (size_t i = 0; i < SL_ARRAY_SIZE(mimes); i++)
        if (!strcmp(mimes[i].canon, canon))
            return mimes[i].ctype;
    return "application/octet-stream";
}

static void moss_free(struct moss *m)
{
    for (int i = 0; i < m->n; i++) {
        struct item *x = &m->it[i];
        free(x->bck);
        free(x->prov);
        free(x->obj);
        free(x->arch);
        free(x->opaque);
        free(x->as);
        free(x->rawhdr);
        free(x->err);
    }
    free(m->it);
    for (int i = 0; i < m->nbc; i++) {
        free(m->bc[i]->name);
        free(m->bc[i]->prov);
        sl_bck_release(&m->bc[i]->b);
        free(m->bc[i]);
    }
    free(m->bc);
    memset(m, 0, sizeof(*m));
}

static int max_items(void)
{
    return sl_conf && sl_conf->moss_max_items > 0 ? sl_conf->moss_max_items : 10000;
}

static int get_bool(const json_t *j, const char *k, bool *out, struct sl_err *err)
{
    json_t *v = json_object_get(j, k);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v))
        return sl_errf(err, SL_EINVAL, "get-batch: \"%s\" must be true or false", k);
    *out = json_is_true(v);
    return 0;
}

static int get_int(const json_t *j, const char *k, int64_t *out, int i, struct sl_err *err)
{
    json_t *v = json_object_get(j, k);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v))
        return sl_errf(err, SL_EINVAL, "get-batch: in[%d].%s must be an integer", i, k);
    *out = (int64_t)json_integer_value(v);
    return 0;
}

static char *opt_str(const json_t *j, const char *k)
{
    const char *s = json_string_value(json_object_get(j, k));
    return s && *s ? sl_xstrdup(s) : NULL;
}

/* MossReq -> m. path_bck: the default bucket from the path (may be NULL). */
static int moss_parse(const json_t *j, const char *path_bck, const char *path_prov, struct moss *m,
                      struct sl_err *err)
{
    memset(m, 0, sizeof(*m));
    if (!json_is_object(j))
        return sl_errf(err, SL_EINVAL, "get-batch: the body must be a JSON object {\"in\": [{\"objname\": ...}, "
                       "...], \"mime\": \".tar\"}");
    static const char *const known[] = { "in", "mime", "coer", "onob", "strm", "coloc" };
    const char *k = sl_json_unknown_key_exact(j, known, SL_ARRAY_SIZE(known));
    if (k)
        return sl_errf(err, SL_EINVAL, "get-batch: unknown field \"%s\" (valid: in, mime, coer, onob, strm, coloc)",
                       k);
    const char *mime = sl_json_str(j, "mime", "");
    m->mime = NULL;
    for (size_t i = 0; i < SL_ARRAY_SIZE(mimes); i++)
        if (!strcmp(mimes[i].in, mime))
            m->mime = mimes[i].canon;
    if (!m->mime)
        return sl_errf(err, SL_EINVAL, "get-batch: unknown mime \"%s\" (valid: .tar, .tgz, .tar.gz, .tar.lz4, "
                       ".zip)", mime);
    char probe[16];
    snprintf(probe, sizeof(probe), "x%s", m->mime);
    m->fmt = sl_arch_format_by_name(probe, strlen(probe));
    if (!m->fmt)
        return sl_errf(err, SL_EUNSUPP, "get-batch: no format plugin writes %s on this node (loaded: %s)", m->mime,
                       sl_arch_supported());
    if (get_bool(j, "coer", &m->coer, err) < 0 || get_bool(j, "onob", &m->onob, err) < 0 ||
        get_bool(j, "strm", &m->strm, err) < 0)
        return -1;
    json_t *co = json_object_get(j, "coloc");
    if (co && !json_is_null(co)) {
        if (!json_is_integer(co) || json_integer_value(co) < 0 || json_integer_value(co) > 2)
            return sl_errf(err, SL_EINVAL, "get-batch: coloc must be 0, 1 or 2");
        m->coloc = (int)json_integer_value(co);
    }
    if (m->strm && !strcmp(m->mime, ".zip"))
        return sl_errf(err, SL_EINVAL, "get-batch: a .zip cannot be streamed (its directory comes last): ask "
                       "for .tar, .tgz or .tar.lz4 with strm, or for .zip without strm");
    json_t *in = json_object_get(j, "in");
    if (!json_is_array(in) || !json_array_size(in))
        return sl_errf(err, SL_EINVAL, "get-batch: \"in\" must list at least one item ({\"objname\": ...})");
    if (json_array_size(in) > (size_t)max_items())
        return sl_errf(err, SL_EINVAL, "get-batch: %zu items, more than get_batch.max_items (%d): split the "
                       "request", json_array_size(in), max_items());
    m->n = (int)json_array_size(in);
    m->it = sl_xcalloc((size_t)m->n, sizeof(*m->it));
    for (int i = 0; i < m->n; i++) {
        json_t *e = json_array_get(in, (size_t)i);
        struct item *x = &m->it[i];
        x->owner = -1;
        if (!json_is_object(e) || !json_string_value(json_object_get(e, "objname")) ||
            !*json_string_value(json_object_get(e, "objname")))
            return sl_errf(err, SL_EINVAL, "get-batch: in[%d] needs \"objname\"", i);
        x->obj = opt_str(e, "objname");
        x->bck = opt_str(e, "bucket");
        if (!x->bck && path_bck && *path_bck)
            x->bck = sl_xstrdup(path_bck);
        if (!x->bck)
            return sl_errf(err, SL_EINVAL, "get-batch: in[%d] (%s) names no bucket, and the request has no default "
                           "bucket (GET /v1/ml/moss/BUCKET)", i, x->obj);
        x->prov = opt_str(e, "provider");
        if (!x->prov && path_prov && *path_prov && !json_object_get(e, "bucket"))
            x->prov = sl_xstrdup(path_prov);
        x->arch = opt_str(e, "archpath");
        x->opaque = opt_str(e, "opaque");
        if (get_int(e, "start", &x->start, i, err) < 0 || get_int(e, "length", &x->length, i, err) < 0)
            return -1;
        if (x->start < 0 || x->length < -1)
            return sl_errf(err, SL_ERANGE, "get-batch: in[%d] (%s): start must be >= 0 and length >= -1", i,
                           x->obj);
        if (x->start && !x->length)
            return sl_errf(err, SL_ERANGE, "get-batch: in[%d] (%s): start %lld with length 0; use length -1 for "
                           "\"to the end\"", i, x->obj, (long long)x->start);
    }
    return 0;
}

/* With auth on: GET on every bucket the request reads */
static int moss_allow(struct sl_req *r, const struct moss *m, struct sl_err *err)
{
    for (int i = 0; i < m->n; i++) {
        bool seen = false;
        for (int k = 0; k < i && !seen; k++)
            seen = !strcmp(m->it[k].bck, m->it[i].bck) &&
                   !strcmp(m->it[k].prov ? m->it[k].prov : "", m->it[i].prov ? m->it[i].prov : "");
        if (!seen && sl_req_allow(r, SL_ACCESS_GET, m->it[i].prov, m->it[i].bck, err) < 0)
            return -1;
    }
    return 0;
}

/* The bucket of item x, resolved once per request */
static const struct sl_bck *bck_of(struct moss *m, const struct item *x, struct sl_err *err)
{
    const char *prov = x->prov ? x->prov : "";
    for (int i = 0; i < m->nbc; i++)
        if (!strcmp(m->bc[i]->name, x->bck) && !strcmp(m->bc[i]->prov, prov))
            return &m->bc[i]->b;
    struct sl_bck b;
    if (sl_bck_resolve_add(x->bck, x->prov, &b, err) < 0) /* (a remote bucket seen first: added) */
        return NULL;
    /* each entry stays where it is: open shards point at their bucket */
    m->bc = sl_xrealloc(m->bc, (size_t)(m->nbc + 1) * sizeof(*m->bc));
    m->bc[m->nbc] = sl_xmalloc(sizeof(struct bcache));
    *m->bc[m->nbc] = (struct bcache){ sl_xstrdup(x->bck), sl_xstrdup(prov), b };
    return &m->bc[m->nbc++]->b;
}

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
/* reading one item on the node that holds it                         */
/* ------------------------------------------------------------------ */

/* A descriptor shared by the items of one object (tar runs of one shard):
 * the items of a request are opened and read by one thread at a time */
struct ofd {
    int fd;
    int refs;
};

static void ofd_put(struct ofd *o)
{
    if (o && --o->refs == 0) {
        close(o->fd);
        free(o);
    }
}

#define PRE_MAX 8192            /* a tar run's first bytes, read with its header check */

struct src {
    int fd;                     /* its own, or shared->fd */
    struct ofd *shared;
    uint64_t off, left;
    struct sl_arch_member *am;
    char *pre;                  /* the first bytes, read ahead (tar runs) */
    size_t npre, ppre;
    bool open;
};

/* The tar header at off of fd is a plain one (no extended header before
 * it) of member name: else SL_EUNSUPP, and the caller assembles the batch
 * member by member. */
static int raw_check(const unsigned char *h, size_t n, uint64_t off, const char *name, struct sl_err *err)
{
    if (n < 512)
        return sl_errf(err, SL_EUNSUPP, "tar layout: no header at %llu", (unsigned long long)off);
    unsigned sum = 0, want = 0;
    for (int i = 0; i < 512; i++)
        sum += i >= 148 && i < 156 ? ' ' : h[i];
    for (int i = 148; i < 156 && h[i] >= '0' && h[i] <= '7'; i++)
        want = want * 8 + (unsigned)(h[i] - '0');
    char full[260];
    size_t pl = strnlen((const char *)h + 345, 155), nl = strnlen((const char *)h, 100);
    if (pl)
        snprintf(full, sizeof(full), "%.*s/%.*s", (int)pl, (const char *)h + 345, (int)nl, (const char *)h);
    else
        snprintf(full, sizeof(full), "%.*s", (int)nl, (const char *)h);
    if (sum != want || memcmp(h + 257, "ustar", 5) || (h[156] != '0' && h[156] != 0) || strcmp(full, name))
        return sl_errf(err, SL_EUNSUPP, "tar layout: the header at %llu is not a plain header of %s",
                       (unsigned long long)off, name);
    return 0;
}

/* What one pass over a node's items keeps open, so that items of the same
 * shard (members, or tar runs of an epoch plan) open it once */
#define OPENED_OBJS 8
struct opened {
    struct sl_arch_shard *shard;
    struct {
        const struct sl_bck *b;
        char *obj;
        struct ofd *of;
        int64_t size;
    } o[OPENED_OBJS];
    int no, next;
};

static void opened_close(struct opened *op)
{
    sl_arch_shard_close(op->shard);
    for (int i = 0; i < op->no; i++) {
        free(op->o[i].obj);
        ofd_put(op->o[i].of);
    }
    memset(op, 0, sizeof(*op));
}

/* a shared descriptor of object obj of b (the caller's reference, given
 * back with ofd_put) and its size */
static struct ofd *opened_obj(struct opened *op, const struct sl_bck *b, const char *obj, int64_t *size,
                              struct sl_err *err)
{
    for (int i = 0; i < op->no; i++)
        if (op->o[i].b == b && !strcmp(op->o[i].obj, obj)) {
            op->o[i].of->refs++;
            *size = op->o[i].size;
            return op->o[i].of;
        }
    struct sl_read rd;
    if (sl_read_open(b, obj, strlen(obj), 0, NULL, &rd, err) < 0)
        return NULL;
    int f = rd.fd;
    *size = (int64_t)rd.md.size;
    sl_objmd_free(&rd.md);
    int k = op->no < OPENED_OBJS ? op->no++ : op->next++ % OPENED_OBJS;
    if (op->o[k].obj) {
        free(op->o[k].obj);
        ofd_put(op->o[k].of);
    }
    op->o[k].b = b;
    op->o[k].obj = sl_xstrdup(obj);
    op->o[k].of = sl_xmalloc(sizeof(struct ofd));
    *op->o[k].of = (struct ofd){ f, 2 }; /* the table's and the caller's */
    op->o[k].size = *size;
    return op->o[k].of;
}

/* The shard obj of b, found by the read path (a previous owner's, rebuilt
 * from EC slices, fetched from the remote) */
static int shard_open(const struct sl_bck *b, const char *obj, struct sl_arch_shard **out, struct sl_err *err)
{
    struct sl_read rd;
    if (sl_read_open(b, obj, strlen(obj), 0, NULL, &rd, err) < 0)
        return -1;
    return sl_arch_shard_open_fd(b, obj, strlen(obj), rd.fd, &rd.md, rd.from == SL_READ_HERE, out, err);
}

/* Open item x of bucket b: its size in x->size, or x->code/x->err. op
 * (may be NULL) keeps shards open between items. */
static void src_close(struct src *s);

static void src_open(const struct sl_bck *b, struct item *x, struct src *s, struct opened *op)
{
    struct sl_arch_shard **cur = op ? &op->shard : NULL;
    memset(s, 0, sizeof(*s));
    s->fd = -1;
    struct sl_err err = { 0 };
    int64_t size = -1;
    if (x->rawhdr && x->length < 0) {
        sl_errf(&err, SL_EUNSUPP, "tar layout: the members of %s in %s/%s are not one plain run", x->rawhdr, b->name,
                x->obj);
        goto fail;
    }
    if (x->arch && cur) {
        /* consecutive members of one shard: open it once */
        if (*cur && strcmp(sl_arch_shard_name(*cur), x->obj)) {
            sl_arch_shard_close(*cur);
            *cur = NULL;
        }
        if (!*cur && shard_open(b, x->obj, cur, &err) < 0)
            goto fail;
        if (sl_arch_shard_member(*cur, x->arch, strlen(x->arch), &s->am, &size, &err) < 0)
            goto fail;
        if (size < 0) {
            sl_errf(&err, SL_EUNSUPP, "%s/%s: the format does not tell member %s's size", b->name, x->obj,
                    x->arch);
            goto fail;
        }
    } else if (x->arch) {
        struct sl_arch_shard *sh = NULL;
        int rc = shard_open(b, x->obj, &sh, &err);
        if (rc == 0)
            rc = sl_arch_shard_member(sh, x->arch, strlen(x->arch), &s->am, &size, &err);
        sl_arch_shard_close(sh);
        if (rc < 0)
            goto fail;
        if (size < 0) {
            sl_errf(&err, SL_EUNSUPP, "%s/%s: the format does not tell member %s's size", b->name, x->obj,
                    x->arch);
            goto fail;
        }
    } else if (op) {
        if (!(s->shared = opened_obj(op, b, x->obj, &size, &err)))
            goto fail;
        s->fd = s->shared->fd;
    } else {
        struct sl_read rd;
        if (sl_read_open(b, x->obj, strlen(x->obj), 0, NULL, &rd, &err) < 0)
            goto fail;
        s->fd = rd.fd;
        size = (int64_t)rd.md.size;
        sl_objmd_free(&rd.md);
    }
    uint64_t start = (uint64_t)x->start, len = (uint64_t)size;
    if (x->start || x->length > 0) {
        if (start > (uint64_t)size || (x->length > 0 && start + (uint64_t)x->length > (uint64_t)size)) {
            sl_errf(&err, SL_ERANGE, "%s/%s%s%s: range %lld+%lld is past the end (%lld bytes)", b->name, x->obj,
                    x->arch ? "/" : "", x->arch ? x->arch : "", (long long)x->start, (long long)x->length,
                    (long long)size);
            goto fail;
        }
        len = x->length > 0 ? (uint64_t)x->length : (uint64_t)size - start;
    }
    s->off = start;
    s->left = len;
    x->size = (int64_t)len;
    s->open = true;
    sl_store_touch(b->bid, x->obj, strlen(x->obj)); /* a read, for LRU */
    if (x->rawhdr) {
        /* a tar run: its first bytes now, and its header checked */
        size_t want = (size_t)SL_MIN(len, (uint64_t)PRE_MAX);
        s->pre = sl_xmalloc(want ? want : 1);
        ssize_t r;
        do
            r = pread(s->fd, s->pre, want, (off_t)start);
        while (r < 0 && errno == EINTR);
        s->npre = r > 0 ? (size_t)r : 0;
        if (raw_check((const unsigned char *)s->pre, s->npre, start, x->rawhdr, &err) < 0)
            goto fail;
    }
    if (s->am && start) {
        /* a member read by a scan: skip to the start */
        char buf[65536];
        uint64_t skip = start;
        while (skip) {
            int64_t r = sl_arch_member_read(s->am, buf, (size_t)SL_MIN(skip, sizeof(buf)), &err);
            if (r <= 0) {
                if (r == 0)
                    sl_errf(&err, SL_EIO, "%s/%s: member %s is shorter than it says", b->name, x->obj, x->arch);
                goto fail;
            }
            skip -= (uint64_t)r;
        }
    }
    return;
fail:
    x->code = err.code ? err.code : SL_EIO;
    free(x->err);
    x->err = sl_xstrdup(err.msg);
    x->size = 0;
    src_close(s);
}

static void src_close(struct src *s)
{
    sl_arch_member_close(s->am);
    if (s->shared)
        ofd_put(s->shared);
    else if (s->fd >= 0)
        close(s->fd);
    free(s->pre);
    memset(s, 0, sizeof(*s));
    s->fd = -1;
}

/* the next bytes of an open item: > 0, 0 at its end, -1 */
static int64_t src_read(struct src *s, char *buf, size_t n, struct sl_err *err)
{
    if (!s->left)
        return 0;
    n = (size_t)SL_MIN((uint64_t)n, s->left);
    int64_t r;
    if (s->ppre < s->npre) {
        r = (int64_t)SL_MIN(n, s->npre - s->ppre);
        memcpy(buf, s->pre + s->ppre, (size_t)r);
        s->ppre += (size_t)r;
        s->off += (uint64_t)r;
    } else if (s->am) {
        r = sl_arch_member_read(s->am, buf, n, err);
        if (r == 0)
            return sl_errf(err, SL_EIO, "a member ended early");
    } else {
        do
            r = pread(s->fd, buf, n, (off_t)s->off);
        while (r < 0 && errno == EINTR);
        if (r <= 0)
            return sl_errf(err, SL_EIO, "reading: %s", r < 0 ? strerror(errno) : "the object is shorter than its "
                           "metadata says");
        s->off += (uint64_t)r;
    }
    if (r > 0)
        s->left -= (uint64_t)r;
    return r;
}

/* ---- items of remote buckets not held yet: fetched first ---- */

#define COLD_PAR 8              /* objects fetched from remotes at once for one request */

struct coldset {
    pthread_mutex_t mu;
    struct moss *m;
    const int *idx;             /* items, -1: nothing to fetch */
    int n, next;
};

static void *cold_worker(void *arg)
{
    struct coldset *cs = arg;
    for (;;) {
        pthread_mutex_lock(&cs->mu);
        int k = cs->next < cs->n ? cs->next++ : -1;
        pthread_mutex_unlock(&cs->mu);
        if (k < 0)
            return NULL;
        struct item *x = &cs->m->it[cs->idx[k]];
        struct sl_err err = { 0 };
        const struct sl_bck *b;
        pthread_mutex_lock(&cs->mu); /* (bck_of grows the request's bucket cache) */
        b = bck_of(cs->m, x, &err);
        pthread_mutex_unlock(&cs->mu);
        if (b && sl_backend_fetch(b, x->obj, strlen(x->obj), &err) < 0) { /* (one fetch however many want it) */
            x->code = err.code;
            x->err = sl_xasprintf("%s/%s: %s", x->bck, x->obj, err.msg);
        }
    }
}

/* Items of idx[0..n) in remote buckets, owned here and not held yet (AIStore
 * answers those __404__): fetch them, COLD_PAR at a time. A failure is the
 * item's error (the remote's 404 is a 404). */
static void fetch_cold(struct moss *m, const int *idx, int n, struct sl_smap *sm)
{
    int *want = NULL, nw = 0;
    const char *last = NULL, *lastb = NULL;
    for (int k = 0; k < n; k++) {
        struct item *x = &m->it[idx[k]];
        struct sl_err err = { 0 };
        const struct sl_bck *b = x->code ? NULL : bck_of(m, x, &err);
        if (!b || !sl_bck_remote(b) || !sl_read_here(sm, b, x->obj, strlen(x->obj)))
            continue;
        if (last && !strcmp(last, x->obj) && !strcmp(lastb, x->bck))
            continue; /* members of one shard, one after another */
        last = x->obj;
        lastb = x->bck;
        struct sl_objmd md;
        if (sl_obj_stat(b, x->obj, strlen(x->obj), &md, NULL, &err) == 1) {
            sl_objmd_free(&md);
            continue;
        }
        if (!want)
            want = sl_xmalloc((size_t)n * sizeof(int));
        want[nw++] = idx[k];
    }
    if (!nw)
        return;
    struct coldset cs = { .m = m, .idx = want, .n = nw };
    pthread_mutex_init(&cs.mu, NULL);
    pthread_t th[COLD_PAR];
    int nt = 0;
    while (nt < SL_MIN(COLD_PAR, nw) - 1 && pthread_create(&th[nt], NULL, cold_worker, &cs) == 0)
        nt++;
    cold_worker(&cs);
    for (int i = 0; i < nt; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&cs.mu);
    /* a failed shard fails every item of it */
    for (int k = 0; k < n; k++) {
        struct item *x = &m->it[idx[k]];
        if (x->code)
            continue;
        for (int j = 0; j < nw; j++) {
            const struct item *f = &m->it[want[j]];
            if (f->code && f != x && !strcmp(f->obj, x->obj) && !strcmp(f->bck, x->bck)) {
                x->code = f->code;
                x->err = sl_xstrdup(f->err);
                break;
            }
        }
    }
    free(want);
}

/* Size every item of idx[0..n) held here (opening the first KEEP_OPEN). */
static void open_local(struct moss *m, const int *idx, int n, struct src *srcs)
{
    struct sl_smap *sm = sl_smap_get();
    fetch_cold(m, idx, n, sm);
    struct opened op;
    memset(&op, 0, sizeof(op));
    for (int k = 0; k < n; k++) {
        struct item *x = &m->it[idx[k]];
        struct sl_err err = { 0 };
        if (x->code) { /* its fetch failed */
            srcs[k].fd = -1;
            continue;
        }
        const struct sl_bck *b = bck_of(m, x, &err);
        if (!b) {
            x->code = err.code;
            x->err = sl_xstrdup(err.msg);
            srcs[k].fd = -1;
            continue;
        }
        if (!sl_read_here(sm, b, x->obj, strlen(x->obj))) {
            x->code = SL_EUNAVAIL;
            x->err = sl_xasprintf("%s/%s: t[%s] does not own it under the current cluster map (a target joined or "
                                  "left): retry the batch", b->name, x->obj, G.id);
            srcs[k].fd = -1;
            continue;
        }
        src_open(b, x, &srcs[k], &op);
        if (k >= KEEP_OPEN && srcs[k].open)
            src_close(&srcs[k]); /* reopened when its turn comes */
    }
    opened_close(&op);
    sl_smap_put(sm);
}

/* the k-th of them, opened again if it was closed after sizing */
static int src_ready(struct moss *m, struct item *x, struct src *s, struct sl_err *err)
{
    if (s->open || x->code)
        return 0;
    int64_t size = x->size;
    const struct sl_bck *b = bck_of(m, x, err);
    if (!b)
        return -1;
    src_open(b, x, s, NULL);
    if (x->code || x->size != size)
        return sl_errf(err, SL_EIO, "%s/%s changed during the request", x->bck, x->obj);
    return 0;
}

/* ------------------------------------------------------------------ */
/* holders: POST /v1/internal/moss/pull                               */
/* ------------------------------------------------------------------ */

struct pull {
    struct moss m;
    int *idx;
    struct src *srcs;
    struct sl_opipe *p;
    /* an item list to parse on the pull's thread */
    char *body;
    size_t blen;
    /* sl_moss_pull: the items, worked out on the pull's thread */
    sl_moss_items_fn build;
    void (*free_arg)(void *);
    void *arg;
};

static void moss_of_items(struct moss *m, const struct sl_moss_item *items, int n);

static void pull_free(struct pull *pl)
{
    if (pl->free_arg)
        pl->free_arg(pl->arg);
    free(pl->body);
    for (int k = 0; pl->srcs && k < pl->m.n; k++)
        src_close(&pl->srcs[k]);
    free(pl->srcs);
    free(pl->idx);
    moss_free(&pl->m);
    free(pl);
}

/* a pull's header h (taken): its length (8 bytes, little-endian), then
 * the JSON; false when the designated target went away */
static bool pull_header(struct pull *pl, json_t *h)
{
    size_t hl;
    char *hs = sl_json_dump(h, 0, &hl);
    json_decref(h);
    unsigned char len8[8];
    for (int i = 0; i < 8; i++)
        len8[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    bool ok = sl_opipe_write(pl->p, len8, 8) >= 0 && sl_opipe_write(pl->p, hs, hl) >= 0;
    free(hs);
    return ok;
}

/* the header of a pull that has no items to send: {"error": msg} */
static void pull_fail(struct pull *pl, const char *msg)
{
    bool ok = pull_header(pl, json_pack("{s:s}", "error", msg));
    sl_opipe_close(pl->p, !ok);
    pull_free(pl);
}

static int pull_parse(struct pull *pl, struct sl_err *err);

static void *pull_send(void *arg)
{
    struct pull *pl = arg;
    if (pl->body) {
        struct sl_err err = { 0 };
        if (pull_parse(pl, &err) < 0) {
            pull_fail(pl, err.msg);
            return NULL;
        }
    } else if (pl->build) {
        struct sl_moss_item *items = NULL;
        int n = 0;
        struct sl_err err = { 0 };
        if (pl->build(pl->arg, &items, &n, &err) < 0) {
            free(items);
            pull_fail(pl, err.msg);
            return NULL;
        }
        moss_of_items(&pl->m, items, n);
        free(items);
    }
    pl->idx = sl_xcalloc((size_t)pl->m.n, sizeof(int));
    for (int k = 0; k < pl->m.n; k++)
        pl->idx[k] = k;
    pl->srcs = sl_xcalloc((size_t)pl->m.n, sizeof(*pl->srcs));
    open_local(&pl->m, pl->idx, pl->m.n, pl->srcs);
    json_t *hdr = json_array();
    for (int k = 0; k < pl->m.n; k++) {
        const struct item *x = &pl->m.it[k];
        json_array_append_new(hdr, json_pack("[i,I,s]", x->code, (json_int_t)x->size, x->err ? x->err : ""));
    }
    bool failed = !pull_header(pl, hdr);
    char *buf = sl_xmalloc(CHUNK);
    for (int k = 0; k < pl->m.n && !failed; k++) {
        struct item *x = &pl->m.it[k];
        struct sl_err err = { 0 };
        if (x->code)
            continue;
        if (src_ready(&pl->m, x, &pl->srcs[k], &err) < 0) {
            sl_logw("get-batch: %s", err.msg);
            failed = true;
            break;
        }
        int64_t r;
        while ((r = src_read(&pl->srcs[k], buf, CHUNK, &err)) > 0)
            if (sl_opipe_write(pl->p, buf, (size_t)r) < 0) {
                failed = true;
                break;
            }
        if (r < 0) {
            sl_logw("get-batch: %s/%s: %s", x->bck, x->obj, err.msg);
            failed = true;
        }
        src_close(&pl->srcs[k]);
    }
    free(buf);
    sl_opipe_close(pl->p, failed);
    pull_free(pl);
    return NULL;
}

/* answer r with pl, sent from a thread of its own */
static void pull_start(struct sl_req *r, struct pull *pl)
{
    pl->p = sl_resp_opipe(r, 200, "application/octet-stream", PIPE_HIGH);
    pthread_t t;
    if (pthread_create(&t, NULL, pull_send, pl) != 0) {
        sl_opipe_close(pl->p, true);
        pull_free(pl);
        return;
    }
    pthread_detach(t);
}

/* On the HTTP thread: the request is parsed here (no I/O) and everything
 * else (opening the items, sending them) runs on a thread of its own. Not
 * on the background pool: a designated target waits on that pool for the
 * answers of the other targets, and a pull that needed the pool could wait
 * behind it, on every target at once. */
/* the item list a designated target sent: [[bck, provider, obj, archpath,
 * start, length, rawhdr], ...] (on the pull's thread) */
static int pull_parse(struct pull *pl, struct sl_err *err)
{
    json_error_t je;
    json_t *j = json_loadb(pl->body, pl->blen, 0, &je);
    if (!j)
        return sl_errf(err, SL_EINVAL, "get-batch pull: the item list is not JSON: %s", je.text);
    json_t *in = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(j, "items"), i, e) {
        json_t *o = json_pack("{s:s?,s:s?,s:s?,s:s?,s:I,s:I}", "bucket", json_string_value(json_array_get(e, 0)),
                              "provider", json_string_value(json_array_get(e, 1)), "objname",
                              json_string_value(json_array_get(e, 2)), "archpath",
                              json_string_value(json_array_get(e, 3)), "start",
                              json_integer_value(json_array_get(e, 4)), "length",
                              json_integer_value(json_array_get(e, 5)));
        json_array_append_new(in, o ? o : json_object());
    }
    json_t *req = json_pack("{s:o,s:s}", "in", in, "mime", ".tar");
    int rc = moss_parse(req, NULL, NULL, &pl->m, err);
    json_decref(req);
    for (int k = 0; rc == 0 && k < pl->m.n; k++) {
        const char *h = json_string_value(json_array_get(json_array_get(json_object_get(j, "items"), (size_t)k), 6));
        pl->m.it[k].rawhdr = h ? sl_xstrdup(h) : NULL;
    }
    json_decref(j);
    return rc;
}

/* On the HTTP thread only the body is copied; it is parsed on the pull's
 * thread, and an error goes back in the pull's header. */
static void pull_done(struct sl_req *r)
{
    struct pull *pl = sl_xcalloc(1, sizeof(*pl));
    pl->blen = r->body.len;
    pl->body = sl_xmalloc(pl->blen + 1);
    memcpy(pl->body, r->body.p ? r->body.p : "", pl->blen);
    pull_start(r, pl);
}

void sl_moss_pull(struct sl_req *r, sl_moss_items_fn build, void (*free_arg)(void *), void *arg)
{
    struct pull *pl = sl_xcalloc(1, sizeof(*pl));
    pl->build = build;
    pl->free_arg = free_arg;
    pl->arg = arg;
    pull_start(r, pl);
}

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

/* ------------------------------------------------------------------ */
/* the job                                                            */
/* ------------------------------------------------------------------ */

/* As AIStore's, get-batch is a demand job: one per target serves every
 * request (id gbt-...), idle between them, and a new one starts after
 * GB_IDLE_NS without requests. */
#define GB_IDLE_NS (300LL * 1000000000LL)
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
        src_close(&d->lsrc[k]);
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
        const struct sl_bck *b = bck_of(&d->m, x, err);
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
    open_local(&d->m, d->local, d->nlocal, d->lsrc);
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
        if (src_ready(&d->m, x, s, err) < 0)
            return -1;
        int64_t r;
        while ((r = src_read(s, buf, CHUNK, err)) > 0)
            if (sink_write(k, buf, (size_t)r, err) < 0)
                return -1;
        src_close(s);
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
    a->p = sl_resp_opipe(r, 200, ctype_of(d->m.mime), PIPE_HIGH);
    pthread_t t;
    if (pthread_create(&t, NULL, strm_thread, a) != 0) {
        sl_opipe_close(a->p, true);
        dt_free(d);
        free(a);
        return;
    }
    pthread_detach(t);
}

static void dt_run(struct sl_req *r, void *arg)
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

/* m: items (copied), a streamed tar dated 0 */
static void moss_of_items(struct moss *m, const struct sl_moss_item *items, int n)
{
    m->n = n;
    m->it = sl_xcalloc((size_t)(n ? n : 1), sizeof(*m->it));
    m->raw = n > 0;
    for (int i = 0; i < n; i++) {
        struct item *x = &m->it[i];
        x->bck = sl_xstrdup(items[i].bck);
        x->obj = sl_xstrdup(items[i].obj);
        x->arch = items[i].arch ? sl_xstrdup(items[i].arch) : NULL;
        x->as = items[i].as ? sl_xstrdup(items[i].as) : NULL;
        x->rawhdr = items[i].rawhdr ? sl_xstrdup(items[i].rawhdr) : NULL;
        x->start = (int64_t)items[i].start;
        x->length = items[i].length;
        x->owner = -1;
        m->raw = m->raw && x->rawhdr;
    }
    m->mime = ".tar";
    m->fmt = sl_arch_format_by_name("x.tar", 5);
    m->strm = true;
    m->fixed_mtime = true;
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

/* ------------------------------------------------------------------ */
/* the gateway                                                        */
/* ------------------------------------------------------------------ */

/* the bucket in /v1/ml/moss/BUCKET[/...] (new), or NULL */
static char *path_bucket(const struct sl_req *r, int *nseg)
{
    const char *p = r->path + strlen("/v1/ml/moss");
    char *segs[8];
    int n = 0;
    while (*p == '/' && n < 8) {
        p++;
        const char *e = strchr(p, '/');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l)
            segs[n++] = sl_xstrndup(p, l);
        p += l;
    }
    *nseg = n;
    /* BUCKET, XID/WID/NAT (the gateway's redirect), or BUCKET/XID/WID/NAT */
    char *b = n == 1 || n == 4 ? segs[0] : NULL;
    for (int i = 0; i < n; i++)
        if (segs[i] != b)
            free(segs[i]);
    return b;
}

static void gw_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    int nseg;
    char *bucket = path_bucket(r, &nseg);
    struct moss m;
    memset(&m, 0, sizeof(m));
    json_t *j = sl_req_body_json(r, &err);
    int rc = j ? moss_parse(j, bucket, sl_req_query(r, "provider"), &m, &err) : -1;
    if (rc == 0)
        rc = moss_allow(r, &m, &err);
    json_decref(j);
    if (rc < 0) {
        moss_free(&m);
        free(bucket);
        sl_resp_err(r, &err);
        return;
    }
    struct sl_smap *sm = sl_smap_get();
    char xid[32];
    sl_job_id(xid, sizeof(xid), "gbt-");
    const struct sl_snode *t = sl_smap_hrw_target(sm, xid, strlen(xid));
    if (m.coloc && t) {
        /* target-aware: the target that owns the most items */
        int best = 0;
        for (int k = 0; k < sm->nnodes; k++) {
            const struct sl_snode *c = &sm->nodes[k];
            if (c->type != SL_NODE_TARGET || (c->flags & SL_SNF_OFFLINE))
                continue;
            int cnt = 0;
            for (int i = 0; i < m.n; i++) {
                struct sl_buf un;
                sl_buf_init(&un);
                sl_obj_uname(&un, m.it[i].prov ? m.it[i].prov : "ais", m.it[i].bck, m.it[i].obj,
                             strlen(m.it[i].obj));
                const struct sl_snode *o = sl_smap_hrw_target(sm, un.p, un.len);
                sl_buf_free(&un);
                cnt += o && !strcmp(o->id, c->id);
            }
            if (cnt > best) {
                best = cnt;
                t = c;
            }
        }
    }
    int nat = 0;
    for (int k = 0; k < sm->nnodes; k++)
        nat += sm->nodes[k].type == SL_NODE_TARGET && !(sm->nodes[k].flags & SL_SNF_OFFLINE);
    if (!t) {
        sl_resp_errf(r, SL_EUNAVAIL, "get-batch: the cluster has no active targets");
    } else {
        struct sl_buf url;
        sl_buf_init(&url);
        sl_buf_printf(&url, "%s/v1/ml/moss", t->url);
        if (bucket) {
            char *eb = sl_url_encode_path(bucket, strlen(bucket));
            sl_buf_printf(&url, "/%s", eb);
            free(eb);
        }
        sl_buf_printf(&url, "/%s/%s/%d", xid, "0", nat);
        const char *q = strchr(r->raw_uri, '?');
        if (q && q[1])
            sl_buf_adds(&url, q);
        /* the target takes only the body checked here (its buckets' GET) */
        sl_peer_redirect_url(&url, G.id, r->method_str, &r->body);
        sl_resp_redirect(r, 307, url.p);
        sl_buf_free(&url);
    }
    sl_smap_put(sm);
    moss_free(&m);
    free(bucket);
}

static void dt_done(struct sl_req *r)
{
    int nseg;
    char *bucket = path_bucket(r, &nseg);
    sl_req_offload(r, dt_run, free, bucket);
}

static void moss_route(struct sl_req *r)
{
    if (!sl_req_path_is(r, "/v1/ml/moss")) {
        sl_resp_errf(r, SL_ENOENT, "no such ML endpoint %s (get-batch is GET /v1/ml/moss[/BUCKET] with a JSON "
                     "body)", r->path);
        return;
    }
    if (r->method != SL_M_GET) {
        sl_resp_method_not_allowed(r, "GET");
        return;
    }
    uint64_t lim = sl_conf->http_max_body_json ? sl_conf->http_max_body_json : 16 * SL_MIB;
    sl_req_buffer_body(r, lim, G.role == SL_ROLE_PROXY ? gw_done : dt_done);
}

static bool moss_internal_route(struct sl_req *r)
{
    if (strcmp(r->path, "/v1/internal/moss/pull"))
        return false;
    if (r->method != SL_M_POST) {
        sl_resp_method_not_allowed(r, "POST");
        return true;
    }
    sl_req_buffer_body(r, 64 * SL_MIB, pull_done);
    return true;
}

static const char *const moss_paths[] = { "/v1/ml/moss", NULL };

const struct sl_module sl_moss_module = {
    .name = "get-batch",
    .paths = moss_paths,
    .route = moss_route,
    .internal = moss_internal_route,
};
