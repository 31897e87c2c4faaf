/* SPDX-License-Identifier: MIT
 * moss_item.c: get-batch's items (see moss.c): the request (MossReq)
 * parsed and checked, and the items a node holds, opened and read there:
 * whole objects and byte ranges, shard members, tar runs; remote objects
 * not held yet fetched first.
 */
#include "moss_int.h"
#include "auth.h"
#include "backend.h"
#include "cluster.h"
#include "jsonx.h"
#include "node.h"
#include "read.h"
#include "store.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEEP_OPEN 256          /* items a node keeps open between sizing and sending */

/* ------------------------------------------------------------------ */
/* the request                                                        */
/* ------------------------------------------------------------------ */

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

const char *moss_ctype_of(const char *canon)
{
    for (size_t i = 0; i < SL_ARRAY_SIZE(mimes); i++)
        if (!strcmp(mimes[i].canon, canon))
            return mimes[i].ctype;
    return "application/octet-stream";
}

void moss_free(struct moss *m)
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
int moss_parse(const json_t *j, const char *path_bck, const char *path_prov, struct moss *m,
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
int moss_allow(struct sl_req *r, const struct moss *m, struct sl_err *err)
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
const struct sl_bck *moss_bck_of(struct moss *m, const struct item *x, struct sl_err *err)
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
    moss_src_close(s);
}

void moss_src_close(struct src *s)
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
int64_t moss_src_read(struct src *s, char *buf, size_t n, struct sl_err *err)
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
        pthread_mutex_lock(&cs->mu); /* (moss_bck_of grows the request's bucket cache) */
        b = moss_bck_of(cs->m, x, &err);
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
        const struct sl_bck *b = x->code ? NULL : moss_bck_of(m, x, &err);
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
void moss_open_local(struct moss *m, const int *idx, int n, struct src *srcs)
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
        const struct sl_bck *b = moss_bck_of(m, x, &err);
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
            moss_src_close(&srcs[k]); /* reopened when its turn comes */
    }
    opened_close(&op);
    sl_smap_put(sm);
}

/* the k-th of them, opened again if it was closed after sizing */
int moss_src_ready(struct moss *m, struct item *x, struct src *s, struct sl_err *err)
{
    if (s->open || x->code)
        return 0;
    int64_t size = x->size;
    const struct sl_bck *b = moss_bck_of(m, x, err);
    if (!b)
        return -1;
    src_open(b, x, s, NULL);
    if (x->code || x->size != size)
        return sl_errf(err, SL_EIO, "%s/%s changed during the request", x->bck, x->obj);
    return 0;
}

/* m: items (copied), a streamed tar dated 0 */
void moss_of_items(struct moss *m, const struct sl_moss_item *items, int n)
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
