/* SPDX-License-Identifier: MIT
 * store_put.c: PUT (sl_put_*): the work file, the commit of store.h's PUT
 * protocol, and the commit of many small PUTs at once (sl_put_commit_batch).
 */
#include "store_int.h"
#include "cksum.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

struct sl_put {
    struct sl_bck bck;
    char *name;
    size_t nlen;
    struct sl_mpath *mp;
    char *work_rel;          /* "@ais/b/%wk/xxxx" (@PROVIDER) */
    char *work_abs;
    int fd;
    uint64_t size;
    struct sl_cksum ck, cck;  /* bucket type; client type (if different) */
    bool have_cck;
    int client_type;
    char *client_val;
    struct sl_kv *custom;
    int ncustom;
    struct sl_objmd preserve;
    bool have_preserve, keep_custom;
    uint32_t nchunks;        /* sl_put_set_chunks */
    uint64_t chunk_max;
    char *wbuf;              /* small writes gather here (PUT_WBUF bytes) */
    size_t wlen;
    bool gated;              /* counted in the bucket's writes in flight */
    unsigned place;          /* sl_store_place_enter's token (with gated) */
    int s3ver;               /* SL_S3VER_* of the write: the bucket's, OFF for a move (store_ver.c) */
    int64_t if_mtime;        /* a delete marker's condition (opts if_mtime) */
    bool new_dirs;           /* choose_fname created the object's directory */
};

/* Request bodies arrive in pieces no larger than the HTTP connection's
 * buffer (~32 KiB): gather them, so a 10 MiB PUT is 40 writes, not 320. */
#define PUT_WBUF (256 * 1024)

/* Gather buffers kept for the next PUTs. malloc hands a freed 256 KiB block
 * back to the kernel (munmap or trim), and the next PUT faulted it in again
 * page by page: 2-3 % of a 128 KiB PUT's CPU. At most WBUF_SPARES *
 * PUT_WBUF (2 MiB) stay kept. */
#define WBUF_SPARES 8
static pthread_mutex_t wbuf_mu = PTHREAD_MUTEX_INITIALIZER;
static char *wbuf_spare[WBUF_SPARES];
static int nwbuf_spare;

static char *wbuf_get(void)
{
    char *b = NULL;
    pthread_mutex_lock(&wbuf_mu);
    if (nwbuf_spare)
        b = wbuf_spare[--nwbuf_spare];
    pthread_mutex_unlock(&wbuf_mu);
    return b ? b : sl_xmalloc(PUT_WBUF);
}

static void wbuf_put(char *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&wbuf_mu);
    if (nwbuf_spare < WBUF_SPARES) {
        wbuf_spare[nwbuf_spare++] = b;
        b = NULL;
    }
    pthread_mutex_unlock(&wbuf_mu);
    free(b);
}

/* ---- PUT ---- */

static int space_check(struct sl_mpath *mp, int64_t need, struct sl_err *err)
{
    struct statvfs sv;
    if (statvfs(mp->path, &sv) < 0)
        return 0;
    uint64_t total = (uint64_t)sv.f_blocks * sv.f_frsize;
    uint64_t avail = (uint64_t)sv.f_bavail * sv.f_frsize;
    if (need > 0 && (uint64_t)need > avail)
        return sl_errf(err, SL_ENOSPC, "out of space on mountpath %s: %llu bytes needed, %llu available", mp->path,
                       (unsigned long long)need, (unsigned long long)avail);
    /* read at each PUT: set-config changes it at run time */
    int oos_pct = sl_conf ? sl_conf->space_oos_pct : 95;
    if (total && (total - avail) * 100 / total >= (uint64_t)oos_pct && oos_pct < 100)
        return sl_errf(err, SL_ENOSPC,
                       "out of space on mountpath %s: %llu%% used, at or above space.out_of_space=%d%%; free space "
                       "or add mountpaths",
                       mp->path, (unsigned long long)((total - avail) * 100 / total), oos_pct);
    return 0;
}

int sl_put_begin(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_put_opts *o,
                 struct sl_put **out, struct sl_err *err)
{
    if (sl_objname_check(name, nlen, err) < 0)
        return -1;
    if (!store_nmpaths)
        return sl_errf(err, SL_EUNAVAIL, "this node has no mountpaths (it is not a storage target)");
    struct sl_buf un;
    sl_buf_init(&un);
    sl_obj_uname(&un, b->provider, b->name, name, nlen);
    unsigned place = sl_store_place_enter(); /* (a mountpath change waits for the PUTs placed before it) */
    struct sl_mpath *mp = o && o->work_mp ? o->work_mp : sl_store_pick(un.p, un.len);
    sl_buf_free(&un);
    if (space_check(mp, o ? o->expect_size : -1, err) < 0 || store_write_enter(b, o && o->rename_copy, err) < 0) {
        sl_store_place_leave(place);
        return -1;
    }

    struct sl_put *p = sl_xcalloc(1, sizeof(*p));
    p->gated = true;
    p->place = place;
    sl_bck_copy(&p->bck, b);
    p->name = sl_xstrndup(name, nlen);
    p->nlen = nlen;
    p->mp = mp;
    p->fd = -1;
    p->client_type = -1;
    char rid[24];
    sl_rand_id(rid, 16);
    if (o && o->work_rel) { /* a multipart upload's, kept across restarts */
        p->work_rel = sl_xstrdup(o->work_rel);
        p->work_abs = sl_xasprintf("%s/%s", mp->path, p->work_rel);
        sl_mkdir_parents(p->work_abs, 0755);
        p->fd = open(p->work_abs, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    } else {
        p->work_rel = sl_xasprintf("@%s/%s/%%wk/%s", b->provider, b->name, rid);
        p->work_abs = sl_xasprintf("%s/%s", mp->path, p->work_rel);
        p->fd = open(p->work_abs, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    }
    if (p->fd < 0 && errno == ENOENT && !(o && o->work_rel)) {
        struct sl_buf d;
        sl_buf_init(&d);
        store_bdir(&d, mp, b, "%wk");
        sl_mkdir_p(d.p, 0755);
        sl_buf_free(&d);
        p->fd = open(p->work_abs, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    }
    if (p->fd < 0) {
        int e = errno;
        sl_put_abort(p);
        return sl_errf(err, e == ENOSPC ? SL_ENOSPC : SL_EIO, "cannot create work file on mountpath %s: %s",
                       mp->path, strerror(e));
    }
    sl_cksum_init(&p->ck, b->cksum_type);
    if (o) {
        if (o->client_cktype > SL_CK_NONE && o->client_ckval && o->client_ckval[0]) {
            p->client_type = o->client_cktype;
            p->client_val = sl_xstrdup(o->client_ckval);
            if (o->client_cktype != b->cksum_type) {
                sl_cksum_init(&p->cck, o->client_cktype);
                p->have_cck = true;
            }
        }
        if (o->ncustom) {
            p->custom = sl_xcalloc((size_t)o->ncustom, sizeof(struct sl_kv));
            for (int i = 0; i < o->ncustom; i++) {
                p->custom[i].k = sl_xstrdup(o->custom[i].k);
                p->custom[i].v = sl_xstrdup(o->custom[i].v);
            }
            p->ncustom = o->ncustom;
        }
        if (o->preserve) {
            sl_objmd_copy(&p->preserve, o->preserve);
            p->have_preserve = true;
        }
        p->keep_custom = o->keep_custom;
        p->if_mtime = o->if_mtime;
    }
    /* a write of a versioned bucket is a new version, unless it moves one (store.h "S3 versions") */
    p->s3ver = o && o->move ? SL_S3VER_OFF : b->s3ver;
    if (!(o && o->move))
        for (int i = 0; i < p->ncustom; i++)
            if (!strcmp(p->custom[i].k, "s3.vid")) { /* (a copy's source's id is not this write's) */
                free(p->custom[i].k);
                free(p->custom[i].v);
                p->custom[i--] = p->custom[--p->ncustom];
            }
    *out = p;
    return 0;
}

static int put_flush(struct sl_put *p, struct sl_err *err);

int sl_put_fd(struct sl_put *p)
{
    struct sl_err err = { 0 };
    if (put_flush(p, &err) < 0)
        sl_logw("%s", err.msg); /* the same error comes back at commit */
    return p->fd;
}

void sl_put_set_custom(struct sl_put *p, const char *k, const char *v)
{
    sl_kv_set(&p->custom, &p->ncustom, k, v);
}

void sl_put_set_s3ver(struct sl_put *p, int mode)
{
    p->s3ver = mode;
}

void sl_put_set_chunks(struct sl_put *p, uint32_t n, uint64_t max)
{
    p->nchunks = n;
    p->chunk_max = max;
}

struct sl_mpath *sl_put_mpath(const struct sl_put *p)
{
    return p->mp;
}

uint64_t sl_put_size(const struct sl_put *p)
{
    return p->size;
}

static int write_all(struct sl_put *p, const char *c, size_t n, struct sl_err *err)
{
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(p->fd, c + off, n - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            return sl_errf(err, e == ENOSPC || e == EDQUOT ? SL_ENOSPC : SL_EIO, "writing %s on mountpath %s: %s",
                           p->name, p->mp->path, strerror(e));
        }
        off += (size_t)w;
    }
    return 0;
}

static int put_flush(struct sl_put *p, struct sl_err *err)
{
    if (!p->wlen)
        return 0;
    int rc = write_all(p, p->wbuf, p->wlen, err);
    p->wlen = 0;
    return rc;
}

int sl_put_write(struct sl_put *p, const void *data, size_t n, struct sl_err *err)
{
    sl_cksum_update(&p->ck, data, n);
    if (p->have_cck)
        sl_cksum_update(&p->cck, data, n);
    p->size += n;
    if (p->wlen + n > PUT_WBUF && put_flush(p, err) < 0)
        return -1;
    if (n >= PUT_WBUF)
        return write_all(p, data, n, err);
    if (!p->wbuf)
        p->wbuf = wbuf_get();
    memcpy(p->wbuf + p->wlen, data, n);
    p->wlen += n;
    return 0;
}

void sl_put_sum(struct sl_put *p, const void *data, size_t n)
{
    sl_cksum_update(&p->ck, data, n);
    if (p->have_cck)
        sl_cksum_update(&p->cck, data, n);
}

int sl_put_adopt_summed(struct sl_put *p, uint64_t size, struct sl_err *err)
{
    if (put_flush(p, err) < 0)
        return -1;
    if (ftruncate(p->fd, (off_t)size) < 0)
        return sl_errf(err, SL_EIO, "%s: %s", p->work_abs, strerror(errno));
    p->size = size;
    return 0;
}

int sl_put_adopt(struct sl_put *p, uint64_t size, struct sl_err *err)
{
    if (put_flush(p, err) < 0)
        return -1;
    if (ftruncate(p->fd, (off_t)size) < 0)
        return sl_errf(err, SL_EIO, "%s: %s", p->work_abs, strerror(errno));
    /* the file is the truth: whatever was summed before does not count */
    sl_cksum_free(&p->ck);
    sl_cksum_init(&p->ck, p->bck.cksum_type);
    if (p->have_cck) {
        sl_cksum_free(&p->cck);
        sl_cksum_init(&p->cck, p->client_type);
    }
    char *buf = sl_xmalloc(1024 * 1024);
    uint64_t off = 0;
    while (off < size) {
        ssize_t r = pread(p->fd, buf, (size_t)SL_MIN((uint64_t)1024 * 1024, size - off), (off_t)off);
        if (r <= 0) {
            free(buf);
            return sl_errf(err, SL_EIO, "reading back %s: %s", p->work_abs, r < 0 ? strerror(errno) : "short file");
        }
        sl_cksum_update(&p->ck, buf, (size_t)r);
        if (p->have_cck)
            sl_cksum_update(&p->cck, buf, (size_t)r);
        off += (uint64_t)r;
    }
    free(buf);
    p->size = size;
    return 0;
}

void sl_put_abort(struct sl_put *p)
{
    if (!p)
        return;
    if (p->gated) {
        store_write_leave(p->bck.bid);
        sl_store_place_leave(p->place);
    }
    if (p->fd >= 0)
        close(p->fd);
    if (p->work_abs)
        unlink(p->work_abs);
    sl_cksum_free(&p->ck);
    sl_cksum_free(&p->cck);
    sl_bck_release(&p->bck);
    for (int i = 0; i < p->ncustom; i++) {
        free(p->custom[i].k);
        free(p->custom[i].v);
    }
    free(p->custom);
    if (p->have_preserve)
        sl_objmd_free(&p->preserve);
    free(p->client_val);
    free(p->name);
    free(p->work_rel);
    free(p->work_abs);
    wbuf_put(p->wbuf);
    free(p);
}

static int choose_fname(struct sl_put *p, char fname[72], struct sl_buf *fqn)
{
    return store_place_fname(p->mp, &p->bck, p->name, p->nlen, fname, fqn, &p->new_dirs);
}

/* The checks of a body that is all in: the client's checksum and the one
 * that travelled with a moved object; then its last bytes to the work file.
 * cks receives the checksum of the bucket's type. */
static int put_check(struct sl_put *p, const char *cn, char cks[SL_CKSUM_HEX_MAX], struct sl_err *err)
{
    char ccks[SL_CKSUM_HEX_MAX];
    sl_cksum_final(&p->ck, cks);
    if (p->client_type >= 0) {
        const char *got = cks;
        if (p->have_cck) {
            sl_cksum_final(&p->cck, ccks);
            p->have_cck = false;
            got = ccks;
        }
        if (strcasecmp(got, p->client_val) != 0)
            return sl_errf(err, SL_ECKSUM, "BAD DATA CHECKSUM: %s: %s(%s) != %s(%s) computed over %llu bytes received",
                           cn, sl_cksum_name(p->client_type), p->client_val, sl_cksum_name(p->client_type), got,
                           (unsigned long long)p->size);
    }
    if (p->have_preserve && p->preserve.cksum[0] && p->preserve.cksum_type == p->bck.cksum_type &&
        strcmp(p->preserve.cksum, cks) != 0)
        return sl_errf(err, SL_ECKSUM, "BAD DATA CHECKSUM: %s: expected %s, received data hashes to %s", cn,
                       p->preserve.cksum, cks);
    int rc = put_flush(p, err);
    wbuf_put(p->wbuf); /* the body is all written: the next PUT may have it */
    p->wbuf = NULL;
    return rc;
}

/* The metadata p publishes; had == 1: old is the object it replaces. */
static void put_new_md(struct sl_put *p, int had, const struct sl_objmd *old, const char *cks, const char *fname,
                       struct sl_objmd *md)
{
    int64_t now = sl_now_ns();
    md->size = p->size;
    md->cksum_type = p->bck.cksum_type;
    snprintf(md->cksum, sizeof(md->cksum), "%s", cks);
    md->atime = md->mtime = now;
    snprintf(md->fname, sizeof(md->fname), "%s", fname);
    if (p->have_preserve) {
        md->version = p->preserve.version;
        md->atime = p->preserve.atime ? p->preserve.atime : now;
        md->mtime = p->preserve.mtime ? p->preserve.mtime : now;
        for (int i = 0; i < p->preserve.ncustom; i++)
            sl_objmd_set_custom(md, p->preserve.custom[i].k, p->preserve.custom[i].v);
        md->nchunks = p->preserve.nchunks;
        md->chunk_max = p->preserve.chunk_max;
    } else {
        md->version = p->bck.versioning ? (had == 1 ? old->version + 1 : 1) : 0;
        if (had == 1 && p->keep_custom)
            for (int i = 0; i < old->ncustom; i++)
                sl_objmd_set_custom(md, old->custom[i].k, old->custom[i].v);
    }
    if (p->s3ver)
        store_ver_null_md(md); /* a version id is only the one this write gives */
    for (int i = 0; i < p->ncustom; i++)
        sl_objmd_set_custom(md, p->custom[i].k, p->custom[i].v);
    if (p->nchunks) {
        md->nchunks = p->nchunks;
        md->chunk_max = p->chunk_max;
    }
}

/* Move the work file onto fqn once ops (the metadata, the pending marker)
 * are committed. Losing a race with a directory of the same name sends it
 * to its hashed name; any other failure undoes the metadata (the old
 * object stays). Under the name lock. */
static int put_rename(struct sl_put *p, struct sl_buf *fqn, char fname[72], struct sl_objmd *md,
                      const struct sl_md_op ops[2], int had, const struct sl_objmd *old, const char *cn,
                      struct sl_err *err)
{
    if (rename(p->work_abs, fqn->p) == 0)
        return 0;
    int e = errno;
    if (!fname[0] && (e == EISDIR || e == ENOTDIR || e == ENOTEMPTY)) {
        store_hashed_fname(p->name, p->nlen, fname);
        sl_obj_fqn(fqn, p->mp, &p->bck, p->name, p->nlen, fname);
        snprintf(md->fname, sizeof(md->fname), "%s", fname);
        if (rename(p->work_abs, fqn->p) == 0 && sl_md_commit(p->mp->md, ops, 1, true, err) == 0)
            return 0;
    }
    struct sl_md_op undo[2];
    int nu = 0;
    if (had == 1)
        undo[nu++] = (struct sl_md_op){ .kind = SL_MD_PUT_OBJ, .bid = p->bck.bid, .name = p->name,
                                        .nlen = p->nlen, .md = old };
    else
        undo[nu++] = (struct sl_md_op){ .kind = SL_MD_DEL_OBJ, .bid = p->bck.bid, .name = p->name,
                                        .nlen = p->nlen };
    undo[nu++] = ops[1];
    undo[nu - 1].kind = SL_MD_DEL_PENDING;
    sl_md_commit(p->mp->md, undo, nu, true, NULL);
    return sl_errf(err, SL_EIO, "PUT %s: cannot move work file into place on %s: %s", cn, p->mp->path, strerror(e));
}

/* The rename done, under the lock: the old object's mirror copies go (the
 * new metadata names none of them; under the lock so that a copy of the new
 * object made meanwhile is never the one unlinked), or, while a resilver is
 * pending, what other mountpaths hold of an older version. */
static void put_replaced(struct sl_put *p, int had, const struct sl_objmd *old, const struct sl_objmd *md)
{
    if (had == 1)
        store_unlink_copies(&p->bck, p->name, p->nlen, old);
    else
        store_drop_misplaced(&p->bck, p->name, p->nlen, p->mp, md);
}

/* The rename is durable (its pending marker dropped or being dropped): the
 * replaced object's file under another name goes, the mirror and EC hooks
 * run, and p is freed. */
static void put_published(struct sl_put *p, int had, const struct sl_objmd *old, const char *fname)
{
    if (had == 1 && strcmp(old->fname, fname) != 0) {
        struct sl_buf ofq;
        sl_buf_init(&ofq);
        sl_obj_fqn(&ofq, p->mp, &p->bck, p->name, p->nlen, old->fname);
        unlink(ofq.p);
        sl_buf_free(&ofq);
    }
    store_after_put(&p->bck, p->name, p->nlen, SL_STORE_NEW);
    free(p->work_abs);
    p->work_abs = NULL; /* nothing to unlink */
    sl_put_abort(p);
}

static int put_io_err(struct sl_err *err, int e, const char *what, const char *cn, const char *mpath)
{
    return sl_errf(err, e == ENOSPC ? SL_ENOSPC : SL_EIO, "%s %s on %s failed: %s", what, cn, mpath, strerror(e));
}

int sl_put_commit(struct sl_put *p, struct sl_objmd *out, struct sl_err *err)
{
    char cks[SL_CKSUM_HEX_MAX];
    char cn[400];
    /* released at fail: whatever of these is set by then, and p */
    struct sl_buf fqn;
    struct sl_objmd old, md;
    int had = 0;
    char *final_rel = NULL;
    struct store_ver sv;
    memset(&sv, 0, sizeof(sv));
    sl_buf_init(&fqn);
    memset(&md, 0, sizeof(md));
    sl_obj_cname(cn, sizeof(cn), &p->bck, p->name, p->nlen);
    if (put_check(p, cn, cks, err) < 0)
        goto fail;
    if (p->s3ver == SL_S3VER_ON && sl_objname_vkey(p->name, p->nlen) == p->nlen) {
        char vid[21]; /* the new version's id (a delete marker's is its name's) */
        sl_ver_new_id(vid);
        sl_put_set_custom(p, "s3.vid", vid);
    }
    if (store_wp_data == SL_WP_IMMEDIATE && fsync(p->fd) < 0) {
        put_io_err(err, errno, "fsync of", cn, p->mp->path);
        goto fail;
    }
    close(p->fd);
    p->fd = -1;
    sl_fault("put-after-write");

    char fname[72];
    if (choose_fname(p, fname, &fqn) < 0) {
        put_io_err(err, errno, "creating the directories of", cn, p->mp->path);
        goto fail;
    }

    pthread_rwlock_t *lk = store_name_lock(&p->bck, p->name, p->nlen);
    pthread_rwlock_wrlock(lk);
    struct sl_err e2;
    had = sl_md_obj_get(p->mp->md, p->bck.bid, p->name, p->nlen, &old, &e2);
    put_new_md(p, had, &old, cks, fname, &md);
    /* S3 versioning: the object replaced is archived in the same commit (store_ver.c) */
    if (p->s3ver && store_ver_prepare(&sv, p->mp, &p->bck, p->name, p->nlen, p->s3ver, had, &old, p->if_mtime,
                                    err) < 0) {
        store_ver_undo(&sv, p->mp, &p->bck, false);
        pthread_rwlock_unlock(lk);
        sl_err_wrap(err, "PUT %s", cn);
        goto fail;
    }

    final_rel = sl_xstrdup(fqn.p + strlen(p->mp->path) + 1);
    struct sl_md_op ops[2 + SL_ARRAY_SIZE(sv.ops)] = {
        { .kind = SL_MD_PUT_OBJ, .bid = p->bck.bid, .name = p->name, .nlen = p->nlen, .md = &md },
        { .kind = SL_MD_PUT_PENDING, .key = p->work_rel, .klen = strlen(p->work_rel), .val = final_rel,
          .vlen = strlen(final_rel) },
    };
    for (int i = 0; i < sv.nops; i++)
        ops[2 + i] = sv.ops[i];
    if (sl_md_commit(p->mp->md, ops, 2 + sv.nops, true, err) < 0) {
        if (p->s3ver)
            store_ver_undo(&sv, p->mp, &p->bck, false);
        pthread_rwlock_unlock(lk);
        sl_err_wrap(err, "PUT %s", cn);
        goto fail;
    }
    sl_fault("put-after-commit");
    if (put_rename(p, &fqn, fname, &md, ops, had, &old, cn, err) < 0) {
        if (p->s3ver)
            store_ver_undo(&sv, p->mp, &p->bck, true);
        pthread_rwlock_unlock(lk);
        goto fail;
    }
    put_replaced(p, had, &old, &md);
    if (p->s3ver)
        store_ver_done(&sv, p->mp);
    pthread_rwlock_unlock(lk);
    /* the rename (and any directory made for it) must survive a power cut
     * before the PUT is acknowledged; the pending marker stays until then */
    if (store_wp_data == SL_WP_IMMEDIATE &&
        (p->new_dirs ? sl_fsync_parents(fqn.p, p->mp->path) : store_fsync_dir_of(fqn.p)) < 0) {
        put_io_err(err, errno, "fsync of the directory of", cn, p->mp->path);
        free(p->work_abs);
        p->work_abs = NULL; /* in place already: the fsck of a restart keeps it */
        goto fail;
    }
    {
        struct sl_md_op clr = { .kind = SL_MD_DEL_PENDING, .key = p->work_rel, .klen = strlen(p->work_rel) };
        sl_md_commit_lazy(p->mp->md, &clr, 1); /* (fsck drops it if a crash loses this) */
    }
    if (p->s3ver)
        store_ver_published(&sv, &p->bck);
    put_published(p, had, &old, fname);
    store_ver_free(&sv);
    if (had == 1)
        sl_objmd_free(&old);
    free(final_rel);
    sl_buf_free(&fqn);
    if (out)
        *out = md;
    else
        sl_objmd_free(&md);
    return 0;
fail:
    if (had == 1)
        sl_objmd_free(&old);
    sl_objmd_free(&md);
    store_ver_free(&sv);
    free(final_rel);
    sl_buf_free(&fqn);
    sl_put_abort(p);
    return -1;
}

/* ---- PUT of many small objects at once (sl_put_commit_batch) ----
 * The same protocol as sl_put_commit, each step taken for the whole batch:
 * one syncfs per filesystem instead of an fsync per work file (then a
 * wait on each, to see its earlier writeback errors), one LMDB transaction
 * per mountpath and group of PUT_GROUP objects for their metadata and
 * pending markers, the renames, one syncfs again instead of an fsync per
 * directory, the markers dropped lazily (as a PUT's). A crash in between
 * leaves each object old or new, as for one PUT. */
struct bput {
    struct sl_put *p;        /* NULL once done with (rc set) */
    char cn[400];
    char cks[SL_CKSUM_HEX_MAX];
    char fname[72];
    struct sl_buf fqn;
    char *final_rel;
    int had;
    struct sl_objmd old, md;
    struct sl_md_op ops[2];
};

static void bput_fail(struct bput *x, int *rc)
{
    *rc = -1;
    sl_put_abort(x->p);
    x->p = NULL;
}

/* Make what the batch wrote so far durable: syncfs once per filesystem that
 * holds one of its mountpaths. An object whose filesystem failed fails; one
 * in place already is published all the same (its mirror and EC hooks run:
 * its metadata is committed), only answered failed. */
static void bput_sync(struct bput *v, int n, int *rc, struct sl_err *errs, const char *what)
{
    if (store_wp_data != SL_WP_IMMEDIATE)
        return;
    int nmp = store_nmpaths; /* (one attached meanwhile takes no part: SL_MAX_MPATHS slots at most) */
    int *res = sl_xcalloc(SL_MAX_MPATHS, sizeof(int));   /* per mountpath: 0, errno, or -1 not used */
    dev_t *dev = sl_xcalloc(SL_MAX_MPATHS, sizeof(dev_t));
    for (int m = 0; m < SL_MAX_MPATHS; m++)
        res[m] = -1;
    for (int i = 0; i < n; i++)
        if (v[i].p)
            res[v[i].p->mp->idx] = 0;
    for (int m = 0; m < nmp || (m < SL_MAX_MPATHS && res[m] >= 0); m++) {
        if (res[m] < 0)
            continue;
        struct stat st;
        int fd = open(store_mpaths[m].path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0) {
            res[m] = errno;
        } else {
            dev[m] = st.st_dev;
            int same = -1;
            for (int k = 0; k < m && same < 0; k++)
                if (res[k] >= 0 && dev[k] == st.st_dev)
                    same = k;
            res[m] = same >= 0 ? res[same] : syncfs(fd) < 0 ? errno : 0;
        }
        if (fd >= 0)
            close(fd);
    }
    for (int i = 0; i < n; i++) {
        if (!v[i].p || !res[v[i].p->mp->idx])
            continue;
        put_io_err(&errs[i], res[v[i].p->mp->idx], what, v[i].cn, v[i].p->mp->path);
        if (v[i].final_rel) { /* in place already: the fsck of a restart keeps it */
            put_published(v[i].p, v[i].had, &v[i].old, v[i].fname);
            v[i].p = NULL;
            rc[i] = -1;
        } else {
            bput_fail(&v[i], &rc[i]);
        }
    }
    free(res);
    free(dev);
}

/* Under the locks: the metadata of every object (an object already here is
 * kept with keep_existing), then one transaction per mountpath. */
static void bput_commit_md(struct bput *v, int n, bool keep_existing, int *rc, struct sl_err *errs)
{
    struct sl_md_op *ops = sl_xcalloc((size_t)n * 2, sizeof(*ops));
    for (int i = 0; i < n; i++) {
        struct bput *x = &v[i];
        if (!x->p)
            continue;
        struct sl_err e2;
        struct sl_mpath *at = x->p->mp;
        x->had = store_md_get_any(&x->p->bck, x->p->name, x->p->nlen, &at, &x->old, &e2);
        if (x->had == 1 && keep_existing) { /* (also one on another mountpath, until resilver moves it) */
            bput_fail(x, &rc[i]);
            rc[i] = 1;
            continue;
        }
        if (x->had == 1 && at != x->p->mp) { /* an older version elsewhere: put_replaced drops it */
            sl_objmd_free(&x->old);
            x->had = 0;
        }
        put_new_md(x->p, x->had, &x->old, x->cks, x->fname, &x->md);
        x->final_rel = sl_xstrdup(x->fqn.p + strlen(x->p->mp->path) + 1);
        x->ops[0] = (struct sl_md_op){ .kind = SL_MD_PUT_OBJ, .bid = x->p->bck.bid, .name = x->p->name,
                                       .nlen = x->p->nlen, .md = &x->md };
        x->ops[1] = (struct sl_md_op){ .kind = SL_MD_PUT_PENDING, .key = x->p->work_rel,
                                       .klen = strlen(x->p->work_rel), .val = x->final_rel,
                                       .vlen = strlen(x->final_rel) };
    }
    for (int m = 0; m < store_nmpaths; m++) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (v[i].p && v[i].p->mp->idx == m) {
                ops[k++] = v[i].ops[0];
                ops[k++] = v[i].ops[1];
            }
        struct sl_err e = { 0 };
        if (!k || sl_md_commit(store_mpaths[m].md, ops, k, true, &e) == 0)
            continue;
        for (int i = 0; i < n; i++)
            if (v[i].p && v[i].p->mp->idx == m) {
                errs[i] = e;
                sl_err_wrap(&errs[i], "PUT %s", v[i].cn);
                bput_fail(&v[i], &rc[i]);
            }
    }
    free(ops);
}

/* The renames are durable: the markers go, lazily as a single PUT's (a
 * crash that loses their removal leaves markers whose work is done, which
 * the restart's fsck drops). */
static void bput_clear_markers(struct bput *v, int n)
{
    struct sl_md_op *ops = sl_xcalloc((size_t)n, sizeof(*ops));
    for (int m = 0; m < store_nmpaths; m++) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (v[i].p && v[i].p->mp->idx == m)
                ops[k++] = (struct sl_md_op){ .kind = SL_MD_DEL_PENDING, .key = v[i].p->work_rel,
                                              .klen = strlen(v[i].p->work_rel) };
        if (k)
            sl_md_commit_lazy(store_mpaths[m].md, ops, k);
    }
    free(ops);
}

/* Of a batch: up to PUT_GROUP objects under their name locks, their
 * metadata committed (one transaction per mountpath) and their files
 * renamed. Small groups, as delete_group: a GET or HEAD waits on its HTTP
 * thread for the stripe it shares with one of them, one group's commit at
 * most, never the whole batch's. */
#define PUT_GROUP 32
static void bput_group(struct bput *v, int n, bool keep_existing, int *rc, struct sl_err *errs)
{
    pthread_rwlock_t *lks[PUT_GROUP];
    int nl = 0;
    for (int i = 0; i < n; i++)
        if (v[i].p)
            lks[nl++] = store_name_lock(&v[i].p->bck, v[i].p->name, v[i].p->nlen);
    nl = store_lock_all(lks, nl);
    bput_commit_md(v, n, keep_existing, rc, errs);
    sl_fault("putb-after-commit");
    for (int i = 0; i < n; i++) {
        struct bput *x = &v[i];
        if (!x->p)
            continue;
        if (put_rename(x->p, &x->fqn, x->fname, &x->md, x->ops, x->had, &x->old, x->cn, &errs[i]) < 0)
            bput_fail(x, &rc[i]);
        else
            put_replaced(x->p, x->had, &x->old, &x->md);
    }
    store_unlock_all(lks, nl);
}

void sl_put_commit_batch(struct sl_put **ps, int n, bool keep_existing, int *rc, struct sl_err *errs)
{
    struct bput *v = sl_xcalloc((size_t)n, sizeof(*v));
    for (int i = 0; i < n; i++) {
        struct bput *x = &v[i];
        x->p = ps[i];
        rc[i] = 0;
        sl_buf_init(&x->fqn);
        sl_obj_cname(x->cn, sizeof(x->cn), &x->p->bck, x->p->name, x->p->nlen);
        if (x->p->s3ver && !keep_existing) {
            /* a new version that may replace one: its archive is in its own commit (store_ver.c) */
            rc[i] = sl_put_commit(x->p, NULL, &errs[i]) < 0 ? -1 : 0;
            x->p = NULL;
            continue;
        }
        if (x->p->s3ver == SL_S3VER_ON && sl_objname_vkey(x->p->name, x->p->nlen) == x->p->nlen) {
            char vid[21]; /* (nothing is replaced here: what is there is kept) */
            sl_ver_new_id(vid);
            sl_put_set_custom(x->p, "s3.vid", vid);
        }
        if (put_check(x->p, x->cn, x->cks, &errs[i]) < 0)
            bput_fail(x, &rc[i]);
    }
    bput_sync(v, n, rc, errs, "syncfs (data) for");
    for (int i = 0; i < n; i++) {
        struct bput *x = &v[i];
        if (!x->p)
            continue;
        /* syncfs reports only the writeback errors since its directory's
         * open: one of an earlier writeback of this file shows here. Not
         * fsync: on ext4 each would flush the device's cache again; this
         * waits on its (clean) pages and reports the file's error */
        if (store_wp_data == SL_WP_IMMEDIATE &&
            sync_file_range(x->p->fd, 0, 0,
                            SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) < 0) {
            put_io_err(&errs[i], errno, "writeback of", x->cn, x->p->mp->path);
            bput_fail(x, &rc[i]);
            continue;
        }
        close(x->p->fd);
        x->p->fd = -1;
        if (choose_fname(x->p, x->fname, &x->fqn) < 0) {
            put_io_err(&errs[i], errno, "creating the directories of", x->cn, x->p->mp->path);
            bput_fail(x, &rc[i]);
        }
    }
    sl_fault("putb-after-write");
    for (int i = 0; i < n; i += PUT_GROUP)
        bput_group(v + i, SL_MIN(n - i, PUT_GROUP), keep_existing, rc + i, errs + i);
    bput_sync(v, n, rc, errs, "syncfs (renames) for");
    bput_clear_markers(v, n);
    for (int i = 0; i < n; i++) {
        struct bput *x = &v[i];
        if (x->p)
            put_published(x->p, x->had, &x->old, x->fname);
        if (x->had == 1)
            sl_objmd_free(&x->old);
        sl_objmd_free(&x->md);
        free(x->final_rel);
        sl_buf_free(&x->fqn);
    }
    free(v);
}
