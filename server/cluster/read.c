/* SPDX-License-Identifier: MIT
 * read.c: the one read path (read.h): this target's copy, the previous
 * owner, EC slices, the remote — for every front end alike.
 */
#include "read.h"
#include "backend.h"
#include "cksum.h"
#include "ec.h"
#include "log.h"
#include "node.h"
#include "reb.h"
#include "stats.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void sl_read_done(struct sl_read *rd)
{
    if (rd->fd >= 0)
        close(rd->fd);
    rd->fd = -1;
    sl_objmd_free(&rd->md);
    if (rd->dec) {
        sl_sse_free(rd->dec);
        free(rd->dec);
        rd->dec = NULL;
    }
}

/* The reader wants the stored bytes as they are */
static bool raw(unsigned flags)
{
    return flags & (SL_READ_RAW | SL_READ_LOCAL);
}

/* The metadata of what an encrypted object's reader gets: the plaintext's */
static void plain_md(struct sl_objmd *md)
{
    int n = 0;
    for (int i = 0; i < md->ncustom; i++) {
        if (sl_sse_key_is_own(md->custom[i].k)) {
            free(md->custom[i].k);
            free(md->custom[i].v);
        } else {
            md->custom[n++] = md->custom[i];
        }
    }
    md->ncustom = n;
    md->cksum_type = SL_CK_NONE; /* (the store's checksum is the ciphertext's) */
    md->cksum[0] = 0;
}

static int pfx_err(struct sl_err *err, const char *cn, const char *what)
{
    char m[sizeof(err->msg)];
    snprintf(m, sizeof(m), "%s", err->msg);
    return sl_errf(err, err->code, "%s: %s%s", cn, what, m);
}

/* An encrypted object open in rd, for a reader that is not raw: decrypted
 * (read.h). 0, or -1 with err and rd released. */
static int plain(const struct sl_bck *b, const char *name, size_t nlen, unsigned flags, struct sl_read *rd,
                 struct sl_err *err)
{
    if (raw(flags) || rd->answered || !(rd->sse = sl_sse_mode(&rd->md)))
        return 0;
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), b, name, nlen);
    if (flags & SL_READ_HEAD) {
        plain_md(&rd->md);
        return 0;
    }
    if (rd->sse == SL_SSE_C) {
        sl_read_done(rd);
        return sl_errf(err, SL_EINVAL, "InvalidRequest: %s: The object was stored using a form of Server Side "
                       "Encryption (SSE-C, a customer-provided key). The correct parameters must be provided to "
                       "retrieve the object: read it through S3 (/s3/BUCKET/KEY) with its "
                       "x-amz-server-side-encryption-customer-algorithm and x-amz-server-side-encryption-customer-key "
                       "headers (the native API has no way to pass the key)", cn);
    }
    struct sl_sse *d = sl_xcalloc(1, sizeof(*d));
    if (sl_sse_open_s3(&rd->md, d, err) < 0) {
        free(d);
        sl_read_done(rd);
        return pfx_err(err, cn, "cannot decrypt (SSE-S3): ");
    }
    if (flags & SL_READ_STREAM) {
        rd->dec = d;
    } else {
        int pfd = sl_sse_plain_fd(d, rd->fd, rd->md.size, err);
        sl_sse_free(d);
        free(d);
        if (pfd < 0) {
            sl_read_done(rd);
            return pfx_err(err, cn, "");
        }
        close(rd->fd);
        rd->fd = pfd;
    }
    plain_md(&rd->md);
    return 0;
}

unsigned sl_read_flags(struct sl_req *r, const struct sl_bck *b)
{
    unsigned f = 0;
    if (sl_req_header(r, "Ais-No-Gfn"))
        f |= SL_READ_LOCAL;
    if (r->method == SL_M_HEAD)
        return f | SL_READ_HEAD;
    if ((b->rflags & SL_BCK_VALIDATE_GET) || sl_req_query_bool(r, "validate-checksum"))
        f |= SL_READ_VALIDATE;
    if (((b->rflags & SL_BCK_LATEST_GET) || sl_req_query_bool(r, "latest-ver") || sl_req_query_bool(r, "latest")) &&
        sl_bck_remote(b))
        f |= SL_READ_LATEST;
    return f;
}

const struct sl_snode *sl_read_target(const struct sl_smap *s, const struct sl_bck *b, const char *name,
                                      size_t nlen)
{
    struct sl_buf un;
    sl_buf_init(&un);
    sl_obj_uname(&un, b->provider, b->name, name, nlen);
    const struct sl_snode *t = sl_smap_hrw_target(s, un.p, un.len);
    int d, p;
    int64_t l;
    if (t && (t->flags & SL_SNF_OFFLINE) && sl_ec_props(b, &d, &p, &l)) {
        const struct sl_snode *list[65];
        int n = sl_smap_hrw_list(s, un.p, un.len, list, SL_MIN(d + p + 1, 65));
        for (int i = 1; i < n; i++)
            if (!(list[i]->flags & SL_SNF_OFFLINE)) {
                t = list[i];
                break;
            }
    }
    sl_buf_free(&un);
    return t;
}

bool sl_read_here(const struct sl_smap *s, const struct sl_bck *b, const char *name, size_t nlen)
{
    if (G.role == SL_ROLE_STANDALONE)
        return true;
    const struct sl_snode *t = sl_read_target(s, b, name, nlen);
    return t && !strcmp(t->id, G.id);
}

/* Somewhere other than this target's copies may hold b/name */
static bool elsewhere(const struct sl_bck *b, unsigned flags)
{
    int d, p;
    int64_t l;
    if (G.role != SL_ROLE_TARGET && !sl_bck_remote(b))
        return false;
    return !(flags & SL_READ_LOCAL) && (sl_reb_gfn_window() || sl_ec_props(b, &d, &p, &l) || sl_bck_remote(b));
}

static void rd_init(struct sl_read *rd)
{
    memset(rd, 0, sizeof(*rd));
    rd->fd = -1;
}

int sl_read_try(const struct sl_bck *b, const char *name, size_t nlen, unsigned flags, struct sl_read *rd,
                struct sl_err *err)
{
    rd_init(rd);
    if (flags & SL_READ_HEAD) {
        int rc = sl_obj_stat(b, name, nlen, &rd->md, &rd->mp, err);
        if (rc == 1)
            return plain(b, name, nlen, flags, rd, err);
        if (rc == 0 && err->code == SL_ENOOBJ && elsewhere(b, flags)) {
            memset(err, 0, sizeof(*err));
            return 2;
        }
        return -1;
    }
    if (flags & (SL_READ_VALIDATE | SL_READ_LATEST))
        return (flags & SL_READ_LATEST) ? 2 : 1; /* reads the data, or asks the remote */
    int rc = sl_obj_open_ex(b, name, nlen, SL_OPEN_DEFER, &rd->fd, &rd->md, &rd->mp, err);
    if (rc == 0 && rd->md.ncustom && sl_objmd_get_custom(&rd->md, SL_DAMAGED_KEY)) {
        sl_read_done(rd); /* (recorded as damaged: made again, or refused, on the pool) */
        return 1;
    }
    if (rc == 0 && !raw(flags) && sl_sse_mode(&rd->md)) {
        if (!(flags & SL_READ_STREAM)) {
            sl_read_done(rd); /* (decrypted whole: on the pool) */
            return 1;
        }
        return plain(b, name, nlen, flags, rd, err);
    }
    if (rc >= 0)
        return rc; /* 1: a mirrored object's main replica is damaged: repaired off this thread */
    if (err->code == SL_ENOOBJ && elsewhere(b, flags)) {
        memset(err, 0, sizeof(*err));
        return 2;
    }
    return -1;
}

/* The copy open in rd is damaged (why: the check that failed): logged,
 * counted, rd released, err says so (SL_ECKSUM); its mtime into *dmtime,
 * for a repair that must not drop a newer version. */
static int damaged(const struct sl_bck *b, const char *name, size_t nlen, struct sl_read *rd, int64_t *dmtime,
                   struct sl_err *err, const char *fmt, ...) SL_PRINTF(7, 8);
static int damaged(const struct sl_bck *b, const char *name, size_t nlen, struct sl_read *rd, int64_t *dmtime,
                   struct sl_err *err, const char *fmt, ...)
{
    char why[400], cn[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    sl_obj_cname(cn, sizeof(cn), b, name, nlen);
    sl_logw("%s: %s: the copy here is damaged", cn, why);
    sl_stats_add("err_cksum_n", 1);
    sl_errf(err, SL_ECKSUM, "%s on t[%s]: %s; the object is damaged", cn, G.id, why);
    if (dmtime)
        *dmtime = rd->md.mtime;
    sl_read_done(rd);
    sl_fault("read-damaged"); /* (test_ec: readers side by side, each found it damaged) */
    return -1;
}

/* Check the open object: its file the size its metadata says (always), its
 * bytes against its checksum (validate). 0, or -1 damaged. */
static int check(const struct sl_bck *b, const char *name, size_t nlen, struct sl_read *rd, bool validate,
                 int64_t *dmtime, struct sl_err *err)
{
    const char *rec = sl_objmd_get_custom(&rd->md, SL_DAMAGED_KEY);
    if (rec) {
        char why[SL_CUSTOM_MD_MAX_VALUE + 1];
        snprintf(why, sizeof(why), "%s", rec);
        return damaged(b, name, nlen, rd, dmtime, err, "recorded as damaged: %s; PUT it again, or delete it", why);
    }
    struct stat st;
    if (fstat(rd->fd, &st) == 0 && (uint64_t)st.st_size != rd->md.size)
        return damaged(b, name, nlen, rd, dmtime, err, "size mismatch between data and metadata (the file has %llu "
                       "bytes, the metadata %llu)", (unsigned long long)st.st_size, (unsigned long long)rd->md.size);
    rd->checked = true;
    if (!validate || rd->md.cksum_type == SL_CK_NONE || !rd->md.cksum[0])
        return 0;
    char ck[SL_CKSUM_HEX_MAX] = "";
    if (sl_cksum_fd(rd->md.cksum_type, rd->fd, ck) == 0 && !strcmp(ck, rd->md.cksum))
        return 0;
    return damaged(b, name, nlen, rd, dmtime, err, "BAD DATA CHECKSUM: stored %s(%s), data hashes to %s",
                   sl_cksum_name(rd->md.cksum_type), rd->md.cksum, ck);
}

/* this target's copy (mirror repair included), checked: 0, or -1 with err
 * (SL_ECKSUM: damaged, its mtime in *dmtime) */
static int open_here(const struct sl_bck *b, const char *name, size_t nlen, unsigned flags, struct sl_read *rd,
                     int64_t *dmtime, struct sl_err *err)
{
    if (flags & SL_READ_HEAD)
        return sl_obj_stat(b, name, nlen, &rd->md, &rd->mp, err) == 1 ? 0 : -1;
    unsigned of = (flags & SL_READ_VALIDATE) ? SL_OPEN_VALIDATE : 0;
    if (sl_obj_open_ex(b, name, nlen, of, &rd->fd, &rd->md, &rd->mp, err) < 0)
        return -1;
    /* a mirrored one was checked (and repaired) by the store; the others here */
    return check(b, name, nlen, rd, (flags & SL_READ_VALIDATE) && rd->md.ncopies == 0, dmtime, err);
}

/* An erasure-coded object not here: rebuilt (kept when this is its main
 * target, else into rd as REBUILT). 1 rebuilt into rd, 0 stored here (open
 * it), -1 with err. */
static int rebuild(const struct sl_bck *b, const char *name, size_t nlen, unsigned flags, struct sl_read *rd,
                   struct sl_err *err)
{
    struct sl_ec_tmp tmp = { .fd = -1 };
    if (sl_ec_restore(b, name, nlen, &tmp, err) < 0)
        return -1;
    if (tmp.fd < 0)
        return 0;
    rd->md = tmp.md;
    rd->from = SL_READ_REBUILT;
    rd->checked = true;
    if (flags & SL_READ_HEAD)
        close(tmp.fd);
    else
        rd->fd = tmp.fd;
    return 1;
}

/* HEAD of an object only the remote has */
static int head_remote(const struct sl_bck *b, const char *name, size_t nlen, struct sl_read *rd, struct sl_err *err)
{
    sl_backend_wait_fetch(b, name, nlen);
    if (sl_obj_stat(b, name, nlen, &rd->md, &rd->mp, err) == 1) /* a fetch just brought it */
        return 0;
    memset(err, 0, sizeof(*err));
    struct sl_backend_obj o;
    if (sl_backend_head(b, name, nlen, &o, err) < 0)
        return -1;
    rd->from = SL_READ_REMOTE;
    rd->md.size = o.size > 0 ? (uint64_t)o.size : 0;
    rd->md.mtime = o.mtime_ns;
    if (o.etag[0])
        sl_objmd_set_custom(&rd->md, "ETag", o.etag);
    snprintf(rd->remote_version, sizeof(rd->remote_version), "%s", o.version);
    return 0;
}

/* The copy here is damaged (err says how) and the cluster may hold a good
 * one: drop this one, unless it changed since (a newer version was
 * written, or a reader beside this one made it again), so that the rebuild
 * or the fetch makes it again. 0 dropped (or another reader dropped it
 * first), 1 changed since (open it again), -1 nothing to make it from or
 * the drop failed. */
static int drop_damaged(const struct sl_bck *b, const char *name, size_t nlen, unsigned flags, int64_t mtime,
                        bool remote, bool ec)
{
    if ((flags & (SL_READ_LOCAL | SL_READ_HEAD)) || (!remote && !ec))
        return -1;
    struct sl_err e2 = { 0 };
    int rc = sl_obj_delete_if(b, name, nlen, mtime, &e2);
    if (rc == 1)
        return 1;
    if (rc < 0)
        return e2.code == SL_ENOOBJ ? 0 : -1;
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), b, name, nlen);
    sl_logi("%s: the damaged copy here is dropped, to be made again from %s", cn,
            ec ? "its erasure-coded slices" : "the remote");
    return 0;
}

static int read_open(const struct sl_bck *b, const char *name, size_t nlen, unsigned flags, struct sl_req *tee,
                     struct sl_read *rd, struct sl_err *err)
{
    rd_init(rd);
    bool remote = sl_bck_remote(b);
    int d, p;
    int64_t l, dmtime = 0;
    bool ec = G.role == SL_ROLE_TARGET && sl_ec_props(b, &d, &p, &l);
    if (remote && (flags & SL_READ_LATEST) && !(flags & SL_READ_HEAD)) {
        /* the remote's current version first (fetched again when it changed; gone there: 404) */
        if (sl_backend_refresh(b, name, nlen, err) < 0)
            return -1;
    }
    if (open_here(b, name, nlen, flags, rd, &dmtime, err) == 0)
        return 0;
    if (err->code == SL_ECKSUM) {
        int dr = drop_damaged(b, name, nlen, flags, dmtime, remote, ec);
        if (dr == 1) { /* made again (or written) since it was opened here */
            memset(err, 0, sizeof(*err));
            if (open_here(b, name, nlen, flags, rd, &dmtime, err) == 0)
                return 0;
            if (err->code == SL_ECKSUM)
                dr = drop_damaged(b, name, nlen, flags, dmtime, remote, ec);
        }
        if (dr == 0) {
            memset(err, 0, sizeof(*err));
            sl_errf(err, SL_ENOOBJ, "dropped as damaged");
            rd->repaired = true; /* (once made again below) */
        } else if (dr < 0 && !(flags & SL_READ_HEAD) && !strstr(err->msg, "recorded as damaged")) {
            /* nothing here makes it again: recorded, so that no later read serves it, checked or not */
            struct sl_err e2 = { 0 };
            const char *why = strstr(err->msg, ": ");
            if (sl_obj_mark_damaged(b, name, nlen, dmtime, why ? why + 2 : err->msg, &e2) < 0)
                sl_logw("recording the damage: %s", e2.msg);
        }
    }
    if (err->code != SL_ENOOBJ || (flags & SL_READ_LOCAL) || (G.role != SL_ROLE_TARGET && !remote))
        return -1;
    /* the previous owner, during a membership change */
    if (G.role == SL_ROLE_TARGET && sl_reb_gfn_window()) {
        struct sl_err ge = { 0 };
        sl_fault("read-before-gfn"); /* (test_cluster: the rebalance moves it meanwhile) */
        if (sl_reb_gfn(b, name, nlen, &ge) == 0) {
            memset(err, 0, sizeof(*err));
            if (open_here(b, name, nlen, flags, rd, NULL, err) == 0)
                return 0;
        } else if (ge.code != SL_ENOOBJ) {
            *err = ge;
            return -1;
        } else {
            /* a rebalance that sent it here and dropped it there between
             * this target's look and its neighbours' answers: here now */
            memset(err, 0, sizeof(*err));
            if (open_here(b, name, nlen, flags, rd, NULL, err) == 0) {
                char cn[400];
                sl_obj_cname(cn, sizeof(cn), b, name, nlen);
                sl_logi("%s: came by the rebalance while the neighbours were asked for it", cn);
                return 0;
            }
            if (err->code != SL_ENOOBJ)
                return -1;
            *err = ge;
        }
    }
    if (ec) {
        /* (a reader beside this one that found the damaged copy before it
         * was made again may drop what was rebuilt: rebuilt once more) */
        for (int i = 0;; i++) {
            memset(err, 0, sizeof(*err));
            int rc = rebuild(b, name, nlen, flags, rd, err);
            if (rc != 0)
                return rc > 0 ? 0 : -1;
            if (open_here(b, name, nlen, flags, rd, NULL, err) == 0)
                return 0;
            if (i == 2 || err->code != SL_ENOOBJ)
                return -1;
        }
    }
    if (remote) {
        memset(err, 0, sizeof(*err));
        if (flags & SL_READ_HEAD)
            return head_remote(b, name, nlen, rd, err);
        if (sl_backend_fetch_tee(b, name, nlen, tee, &rd->answered, err) < 0)
            return -1;
        if (rd->answered)
            return 0;
        return open_here(b, name, nlen, flags, rd, NULL, err);
    }
    return -1;
}

int sl_read_open(const struct sl_bck *b, const char *name, size_t nlen, unsigned flags, struct sl_req *tee,
                 struct sl_read *rd, struct sl_err *err)
{
    if (read_open(b, name, nlen, flags, tee, rd, err) < 0)
        return -1;
    return plain(b, name, nlen, flags, rd, err);
}

int sl_read_obj_ex(const struct sl_bck *b, const char *name, size_t nlen, unsigned flags, int *fd,
                   struct sl_objmd *md, struct sl_err *err)
{
    struct sl_read rd;
    if (sl_read_open(b, name, nlen, flags & ~(SL_READ_STREAM | SL_READ_HEAD), NULL, &rd, err) < 0)
        return -1;
    *fd = rd.fd;
    *md = rd.md;
    return 0;
}

int sl_read_obj(const struct sl_bck *b, const char *name, size_t nlen, int *fd, struct sl_objmd *md,
                struct sl_err *err)
{
    struct sl_read rd;
    if (sl_read_open(b, name, nlen, 0, NULL, &rd, err) < 0)
        return -1;
    *fd = rd.fd;
    *md = rd.md;
    return 0;
}

/* ---- for the front ends ---- */

struct rjob {
    struct sl_bobj o;
    unsigned flags;
    const struct sl_read_ops *ops;
};

static void rjob_free(void *arg)
{
    struct rjob *j = arg;
    sl_bck_release(&j->o.b);
    free(j->o.name);
    free(j);
}

static void rjob_run(struct sl_req *r, void *arg)
{
    struct rjob *j = arg;
    struct sl_read rd;
    struct sl_err err = { 0 };
    bool tee = j->ops->tee && !(j->flags & SL_READ_HEAD) && !sl_req_header(r, "Range");
    if (sl_read_open(&j->o.b, j->o.name, j->o.nlen, j->flags, tee ? r : NULL, &rd, &err) < 0)
        j->ops->fail(r, &j->o.b, j->o.name, j->o.nlen, &err);
    else if (!rd.answered)
        j->ops->serve(r, &j->o.b, j->o.name, j->o.nlen, &rd);
    rjob_free(j);
}

static void offload(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, unsigned flags,
                    const struct sl_read_ops *ops, bool peers)
{
    struct rjob *j = sl_xcalloc(1, sizeof(*j));
    sl_bck_copy(&j->o.b, b);
    j->o.name = sl_xstrndup(name, nlen);
    j->o.nlen = nlen;
    j->flags = flags;
    j->ops = ops;
    if (peers)
        sl_req_offload_peer(r, rjob_run, rjob_free, j); /* may wait on peers or the remote */
    else
        sl_req_offload(r, rjob_run, rjob_free, j);
}

void sl_read_req(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, unsigned flags,
                 const struct sl_read_ops *ops)
{
    struct sl_read rd;
    struct sl_err err = { 0 };
    int rc = sl_read_try(b, name, nlen, flags, &rd, &err);
    if (rc == 0 && !ops->checks_size && !(flags & SL_READ_HEAD)) {
        /* a reader that takes the file as it is (archive members, transforms): its size checked here */
        struct stat st;
        if (fstat(rd.fd, &st) == 0 && (uint64_t)st.st_size != rd.md.size) {
            sl_read_done(&rd);
            rc = 2; /* (on the pool: checked, repaired or refused) */
        } else {
            rd.checked = true;
        }
    }
    if (rc == 0) {
        ops->serve(r, b, name, nlen, &rd);
        return;
    }
    if (rc < 0) {
        ops->fail(r, b, name, nlen, &err);
        return;
    }
    offload(r, b, name, nlen, flags, ops, rc == 2);
}

void sl_read_again(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, unsigned flags,
                   const struct sl_read_ops *ops)
{
    offload(r, b, name, nlen, flags, ops, true);
}
