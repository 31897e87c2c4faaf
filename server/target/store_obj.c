/* SPDX-License-Identifier: MIT
 * store_obj.c: what happens to stored objects besides PUT: reads
 * (sl_obj_stat, sl_obj_open_ex and the repair of a mirrored object's main
 * replica), deletes, custom metadata, in-place edits, and the removal of a
 * bucket.
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
#include <unistd.h>

/* ---- reads ---- */

int sl_obj_stat(const struct sl_bck *b, const char *name, size_t nlen, struct sl_objmd *md, struct sl_mpath **mpo,
                struct sl_err *err)
{
    struct sl_mpath *mp = sl_store_locate(b, name, nlen);
    char cn[400];
    if (!mp)
        return sl_errf(err, SL_EUNAVAIL, "this node has no mountpaths");
    int rc = store_md_get_any(b, name, nlen, &mp, md, err);
    if (rc == 0)
        rc = store_orphan_copy(b, name, nlen, &mp, md); /* (what its copy's record says, until it is promoted) */
    if (rc == 0) {
        sl_obj_cname(cn, sizeof(cn), b, name, nlen);
        sl_errf(err, SL_ENOOBJ, "t[%s]: %s does not exist", store_node, cn);
    }
    if (mpo)
        *mpo = mp;
    return rc;
}

int sl_obj_open(const struct sl_bck *b, const char *name, size_t nlen, int *fd, struct sl_objmd *md,
                struct sl_mpath **mpo, struct sl_err *err)
{
    return sl_obj_open_ex(b, name, nlen, 0, fd, md, mpo, err);
}

/* Whether the open main replica of a mirrored object is damaged: the wrong
 * size, or (validate) the wrong checksum. */
static bool main_damaged(int fd, const struct sl_objmd *md, bool validate)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || (uint64_t)st.st_size != md->size)
        return true;
    if (!validate || md->cksum_type == SL_CK_NONE || !md->cksum[0])
        return false;
    char ck[SL_CKSUM_HEX_MAX];
    return sl_cksum_fd(md->cksum_type, fd, ck) < 0 || strcmp(ck, md->cksum) != 0;
}

int sl_obj_open_ex(const struct sl_bck *b, const char *name, size_t nlen, unsigned flags, int *fd,
                   struct sl_objmd *md, struct sl_mpath **mpo, struct sl_err *err)
{
    struct sl_mpath *hrw = sl_store_locate(b, name, nlen), *mp;
    char cn[400];
    if (!hrw)
        return sl_errf(err, SL_EUNAVAIL, "this node has no mountpaths");
    pthread_rwlock_t *lk = store_name_lock(b, name, nlen);
    for (int attempt = 0;; attempt++) {
        pthread_rwlock_rdlock(lk);
        mp = hrw;
        int rc = store_md_get_any(b, name, nlen, &mp, md, err);
        if (rc == 0 && attempt == 0 && store_orphan_copy(b, name, nlen, &mp, md)) {
            /* only a mirror copy is left of it: promoted to main replica (off the caller's thread), then opened */
            pthread_rwlock_unlock(lk);
            sl_objmd_free(md);
            if (flags & SL_OPEN_DEFER)
                return 1;
            if (sl_store_promote(b, name, nlen, NULL, err) < 0)
                return -1;
            continue;
        }
        if (rc <= 0) {
            pthread_rwlock_unlock(lk);
            if (rc == 0) {
                sl_obj_cname(cn, sizeof(cn), b, name, nlen);
                sl_errf(err, SL_ENOOBJ, "t[%s]: %s does not exist", store_node, cn);
            }
            return -1;
        }
        struct sl_buf fqn;
        sl_buf_init(&fqn);
        *fd = store_obj_open_rd(mp, b, name, nlen, md->fname, &fqn);
        int e = errno;
        pthread_rwlock_unlock(lk);
        bool mirrored = md->ncopies > 0 && attempt == 0 && mp == hrw; /* (a misplaced one waits for resilver) */
        if (*fd >= 0 && (!mirrored || !main_damaged(*fd, md, flags & SL_OPEN_VALIDATE))) {
            sl_buf_free(&fqn);
            if (mpo)
                *mpo = mp;
            return 0;
        }
        if (mirrored && (*fd >= 0 || e == ENOENT)) {
            /* the main replica is missing or damaged: a copy serves, and restores it */
            if (*fd >= 0)
                close(*fd);
            *fd = -1;
            sl_buf_free(&fqn);
            sl_objmd_free(md);
            if (flags & SL_OPEN_DEFER)
                return 1;
            if (store_restore_main(b, name, nlen, err) < 0)
                return -1;
            continue; /* open the restored main (once) */
        }
        if (*fd >= 0) { /* (restored, and damaged again: let the caller's checks say so) */
            sl_buf_free(&fqn);
            if (mpo)
                *mpo = mp;
            return 0;
        }
        sl_obj_cname(cn, sizeof(cn), b, name, nlen);
        if (e == ENOENT) {
            /* metadata without a file (a DELETE interrupted by a crash): heal */
            sl_logw("%s: metadata present but file %s is missing; removing the stale metadata", cn, fqn.p);
            struct sl_md_op op = { .kind = SL_MD_DEL_OBJ, .bid = b->bid, .name = name, .nlen = nlen };
            sl_md_commit(mp->md, &op, 1, false, NULL);
            sl_errf(err, SL_ENOOBJ, "t[%s]: %s does not exist", store_node, cn);
        } else {
            sl_errf(err, SL_EIO, "t[%s]: %s: cannot open %s: %s", store_node, cn, fqn.p, strerror(e));
        }
        sl_buf_free(&fqn);
        sl_objmd_free(md);
        return -1;
    }
}

/* ---- deletes ---- */

static int obj_delete(const struct sl_bck *b, const char *name, size_t nlen, const int64_t *want_mtime,
                      struct sl_err *err);

int sl_obj_delete(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err)
{
    return obj_delete(b, name, nlen, NULL, err);
}

int sl_obj_delete_if(const struct sl_bck *b, const char *name, size_t nlen, int64_t mtime, struct sl_err *err)
{
    return obj_delete(b, name, nlen, &mtime, err);
}

/* One object's part of a delete, under its name lock: its copies and file
 * go, and ops (2, ak their key room) receive the metadata changes to commit
 * on *mp (the HRW mountpath, or the one a misplaced object is on). 0, 1
 * kept (written again since want_mtime), 2 deleted already (only its
 * copies' records were left: dropped), -1 err. */
int store_delete_files(struct sl_mpath **mp, const struct sl_bck *b, const char *name, size_t nlen,
                       const int64_t *want_mtime, struct sl_md_op ops[2], unsigned char ak[SL_OBJ_AUX_PREFIX],
                       struct sl_err *err)
{
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), b, name, nlen);
    struct sl_objmd md;
    int rc = store_md_get_any(b, name, nlen, mp, &md, err);
    if (rc == 0 && !want_mtime && (rc = store_drop_copy_records(b, name, nlen, NULL, NULL, true, err)) != 0)
        return rc < 0 ? -1 : 2; /* only mirror copies were left of it (its main's mountpath lost): gone now */
    if (rc <= 0)
        return rc == 0 ? sl_errf(err, SL_ENOOBJ, "%s doesn't exist", cn) : -1;
    struct sl_buf fqn;
    sl_buf_init(&fqn);
    rc = 0;
    if (want_mtime && md.mtime != *want_mtime) {
        rc = 1; /* written again since: kept */
        goto out;
    }
    sl_obj_fqn(&fqn, *mp, b, name, nlen, md.fname);
    /* mirror copies first, then the file, then metadata: a crash in between
     * leaves metadata without a file (or without some copies), which reads
     * heal; never a resurrected object (a GET restores a missing main from
     * a copy, so the copies must be gone before the main is). Every copy
     * record goes, durably, not only those md lists (a crash between a
     * copy's record and its listing leaves one a resilver would promote);
     * a listed copy always has a record (written before it is listed). */
    if (store_drop_copy_records(b, name, nlen, NULL, NULL, true, err) < 0) {
        rc = -1;
        goto out;
    }
    if (unlink(fqn.p) < 0 && errno != ENOENT) {
        rc = sl_errf(err, SL_EIO, "DELETE %s: %s", cn, strerror(errno));
        goto out;
    }
    sl_fault("delete-after-unlink");
    sl_obj_aux_prefix(b->bid, name, nlen, ak);
    ops[0] = (struct sl_md_op){ .kind = SL_MD_DEL_OBJ, .bid = b->bid, .name = name, .nlen = nlen };
    ops[1] = (struct sl_md_op){ .kind = SL_MD_DEL_AUX_PREFIX, .key = (const char *)ak, .klen = SL_OBJ_AUX_PREFIX };
out:
    sl_buf_free(&fqn);
    sl_objmd_free(&md);
    return rc;
}

/* A change to an existing object begins: its mountpath, a write counted in
 * the bucket's gate, and its name lock held until write_unlock. NULL with
 * err when it cannot. */
static pthread_rwlock_t *write_lock(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath **mp,
                                    struct sl_err *err)
{
    *mp = sl_store_locate(b, name, nlen);
    if (!*mp) {
        sl_errf(err, SL_EUNAVAIL, "this node has no mountpaths");
        return NULL;
    }
    if (store_write_enter(b, false, err) < 0)
        return NULL;
    pthread_rwlock_t *lk = store_name_lock(b, name, nlen);
    pthread_rwlock_wrlock(lk);
    return lk;
}

static void write_unlock(const struct sl_bck *b, pthread_rwlock_t *lk)
{
    pthread_rwlock_unlock(lk);
    store_write_leave(b->bid);
}

static int obj_delete(const struct sl_bck *b, const char *name, size_t nlen, const int64_t *want_mtime,
                      struct sl_err *err)
{
    struct sl_mpath *mp;
    pthread_rwlock_t *lk = write_lock(b, name, nlen, &mp, err);
    if (!lk)
        return -1;
    struct sl_md_op ops[2];
    unsigned char ak[SL_OBJ_AUX_PREFIX];
    int rc = store_delete_files(&mp, b, name, nlen, want_mtime, ops, ak, err);
    if (rc == 0)
        rc = sl_md_commit(mp->md, ops, 2, true, err);
    if (rc == 0)
        store_drop_misplaced(b, name, nlen, mp, NULL);
    write_unlock(b, lk);
    return rc == 2 ? 0 : rc;
}

/* Of a batch delete: up to DEL_GROUP objects under their locks, one
 * transaction per mountpath. Small groups: every name lock is held until
 * the commit, and a few senders delete at once. */
#define DEL_GROUP 32
static void delete_group(const struct sl_bck *b, char *const *names, const size_t *nlens, const int64_t *mtimes,
                         int n, int *rc, struct sl_err *errs)
{
    pthread_rwlock_t *lks[DEL_GROUP];
    struct sl_mpath *mps[DEL_GROUP];
    struct sl_md_op ops[2 * DEL_GROUP], mops[2 * DEL_GROUP];
    unsigned char ak[DEL_GROUP][SL_OBJ_AUX_PREFIX];
    for (int i = 0; i < n; i++)
        lks[i] = store_name_lock(b, names[i], nlens[i]);
    int nl = store_lock_all(lks, n);
    bool commit[DEL_GROUP];
    for (int i = 0; i < n; i++) {
        mps[i] = sl_store_locate(b, names[i], nlens[i]);
        rc[i] = store_delete_files(&mps[i], b, names[i], nlens[i], mtimes ? &mtimes[i] : NULL, &ops[2 * i], ak[i],
                             &errs[i]);
        commit[i] = rc[i] == 0;
        if (rc[i] == 2)
            rc[i] = 0;
    }
    for (int m = 0; m < store_nmpaths; m++) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (commit[i] && mps[i] == &store_mpaths[m]) {
                mops[k++] = ops[2 * i];
                mops[k++] = ops[2 * i + 1];
            }
        struct sl_err e = { 0 };
        if (!k || sl_md_commit(store_mpaths[m].md, mops, k, true, &e) == 0)
            continue;
        for (int i = 0; i < n; i++)
            if (commit[i] && mps[i] == &store_mpaths[m]) {
                rc[i] = -1;
                commit[i] = false;
                errs[i] = e;
            }
    }
    for (int i = 0; i < n; i++)
        if (commit[i])
            store_drop_misplaced(b, names[i], nlens[i], mps[i], NULL);
    store_unlock_all(lks, nl);
}

void sl_obj_delete_batch(const struct sl_bck *b, char *const *names, const size_t *nlens, const int64_t *mtimes,
                         int n, int *rc, struct sl_err *errs)
{
    struct sl_err e = { 0 };
    if (!store_nmpaths)
        sl_errf(&e, SL_EUNAVAIL, "this node has no mountpaths");
    if (!store_nmpaths || store_write_enter(b, false, &e) < 0) {
        for (int i = 0; i < n; i++) {
            rc[i] = -1;
            errs[i] = e;
        }
        return;
    }
    for (int i = 0; i < n; i += DEL_GROUP)
        delete_group(b, names + i, nlens + i, mtimes ? mtimes + i : NULL, SL_MIN(n - i, DEL_GROUP), rc + i,
                     errs + i);
    store_write_leave(b->bid);
}

/* ---- custom metadata ---- */

/* Set kv on the object's custom metadata under its write lock, first
 * dropping the keys that start with drop (NULL: none; "": all but the
 * store's own, md.h sl_custom_key_own). */
static int set_custom(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_kv *kv, int n,
                      const char *drop, struct sl_err *err)
{
    struct sl_mpath *mp;
    char cn[400];
    pthread_rwlock_t *lk = write_lock(b, name, nlen, &mp, err);
    if (!lk)
        return -1;
    struct sl_objmd md;
    int rc = store_md_get_any(b, name, nlen, &mp, &md, err);
    if (rc <= 0) {
        write_unlock(b, lk);
        if (rc == 0) {
            sl_obj_cname(cn, sizeof(cn), b, name, nlen);
            sl_errf(err, SL_ENOOBJ, "t[%s]: %s does not exist", store_node, cn);
        }
        return -1;
    }
    if (drop) {
        size_t dl = strlen(drop);
        int k = 0;
        for (int i = 0; i < md.ncustom; i++) {
            if (!strncmp(md.custom[i].k, drop, dl) && (dl || !sl_custom_key_own(md.custom[i].k))) {
                free(md.custom[i].k);
                free(md.custom[i].v);
            } else {
                md.custom[k++] = md.custom[i];
            }
        }
        md.ncustom = k;
    }
    for (int i = 0; i < n; i++)
        sl_objmd_set_custom(&md, kv[i].k, kv[i].v);
    /* merged with what the object has: still within the limits */
    rc = sl_custom_md_check(md.custom, md.ncustom, "PATCH object (merged with the object's custom metadata)", err);
    struct sl_md_op op = { .kind = SL_MD_PUT_OBJ, .bid = b->bid, .name = name, .nlen = nlen, .md = &md };
    if (rc == 0)
        rc = sl_md_commit(mp->md, &op, 1, true, err);
    if (rc == 0)
        store_copies_rerecord(b, name, nlen, &md);
    write_unlock(b, lk);
    sl_objmd_free(&md);
    return rc;
}

int sl_obj_set_custom(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_kv *kv, int n,
                      bool replace, struct sl_err *err)
{
    return set_custom(b, name, nlen, kv, n, replace ? "" : NULL, err);
}

int sl_obj_set_custom_ns(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_kv *kv, int n,
                         const char *prefix, struct sl_err *err)
{
    return set_custom(b, name, nlen, kv, n, prefix, err);
}

int sl_obj_mark_damaged(const struct sl_bck *b, const char *name, size_t nlen, int64_t mtime, const char *why,
                        struct sl_err *err)
{
    struct sl_mpath *mp;
    pthread_rwlock_t *lk = write_lock(b, name, nlen, &mp, err);
    if (!lk)
        return -1;
    struct sl_objmd md;
    int rc = store_md_get_any(b, name, nlen, &mp, &md, err);
    if (rc <= 0) {
        write_unlock(b, lk);
        return rc < 0 ? -1 : 1;
    }
    rc = 1;
    if (md.mtime == mtime && !sl_objmd_get_custom(&md, SL_DAMAGED_KEY)) {
        char v[SL_CUSTOM_MD_MAX_VALUE + 1], ts[40];
        sl_format_gotime(sl_now_ns(), "2006-01-02T15:04:05Z07:00", ts, sizeof(ts));
        snprintf(v, sizeof(v), "%s (found %s)", why, ts);
        for (char *p = v; *p; p++) /* (no control characters in custom metadata) */
            if ((unsigned char)*p < 0x20)
                *p = ' ';
        sl_objmd_set_custom(&md, SL_DAMAGED_KEY, v);
        struct sl_md_op op = { .kind = SL_MD_PUT_OBJ, .bid = b->bid, .name = name, .nlen = nlen, .md = &md };
        rc = sl_md_commit(mp->md, &op, 1, true, err);
        if (rc == 0)
            store_copies_rerecord(b, name, nlen, &md);
    }
    write_unlock(b, lk);
    sl_objmd_free(&md);
    return rc;
}

/* ---- in-place edits ---- */

int sl_obj_edit_begin(const struct sl_bck *b, const char *name, size_t nlen, struct sl_obj_edit *e,
                      struct sl_err *err)
{
    memset(e, 0, sizeof(*e));
    e->fd = -1;
    e->mp = sl_store_locate(b, name, nlen);
    if (!e->mp)
        return sl_errf(err, SL_EUNAVAIL, "this node has no mountpaths");
    if (store_write_enter(b, false, err) < 0)
        return -1;
    pthread_rwlock_t *lk = store_name_lock(b, name, nlen);
    pthread_rwlock_wrlock(lk);
    int rc = store_md_get_any(b, name, nlen, &e->mp, &e->md, err);
    if (rc <= 0) {
        pthread_rwlock_unlock(lk);
        store_write_leave(b->bid);
        if (rc == 0) {
            char cn[400];
            sl_obj_cname(cn, sizeof(cn), b, name, nlen);
            sl_errf(err, SL_ENOOBJ, "t[%s]: %s does not exist", store_node, cn);
        }
        return -1;
    }
    struct sl_buf fqn;
    sl_buf_init(&fqn);
    sl_obj_fqn(&fqn, e->mp, b, name, nlen, e->md.fname);
    e->fd = open(fqn.p, O_RDWR | O_CLOEXEC);
    if (e->fd < 0) {
        sl_errf(err, SL_EIO, "cannot open %s for writing: %s", fqn.p, strerror(errno));
        pthread_rwlock_unlock(lk);
        store_write_leave(b->bid);
        sl_objmd_free(&e->md);
        sl_buf_free(&fqn);
        return -1;
    }
    e->lk = lk;
    e->fqn = sl_buf_steal(&fqn);
    sl_bck_copy(&e->b, b);
    e->name = sl_xstrndup(name, nlen);
    e->nlen = nlen;
    return 0;
}

int sl_obj_edit_mark(struct sl_obj_edit *e, int64_t off, int64_t orig_size, struct sl_err *err)
{
    char val[64];
    snprintf(val, sizeof(val), "%lld %lld", (long long)off, (long long)orig_size);
    e->mark = sl_xasprintf("A:%s", e->fqn + strlen(e->mp->path) + 1);
    struct sl_md_op op = { .kind = SL_MD_PUT_PENDING, .key = e->mark, .klen = strlen(e->mark), .val = val,
                           .vlen = strlen(val) };
    return sl_md_commit(e->mp->md, &op, 1, true, err);
}

static void edit_release(struct sl_obj_edit *e)
{
    if (e->mark) {
        struct sl_md_op op = { .kind = SL_MD_DEL_PENDING, .key = e->mark, .klen = strlen(e->mark) };
        sl_md_commit(e->mp->md, &op, 1, true, NULL);
    }
    if (e->fd >= 0)
        close(e->fd);
    if (e->lk) {
        pthread_rwlock_unlock((pthread_rwlock_t *)e->lk);
        store_write_leave(e->b.bid);
    }
    sl_objmd_free(&e->md);
    sl_bck_release(&e->b);
    free(e->name);
    free(e->fqn);
    free(e->mark);
    memset(e, 0, sizeof(*e));
    e->fd = -1;
}

int sl_obj_edit_commit(struct sl_obj_edit *e, struct sl_err *err)
{
    struct stat st;
    if ((store_wp_data == SL_WP_IMMEDIATE && fsync(e->fd) < 0) || fstat(e->fd, &st) < 0) {
        sl_errf(err, SL_EIO, "%s: %s", e->fqn, strerror(errno));
        edit_release(e);
        return -1;
    }
    struct sl_objmd md = e->md;
    md.custom = NULL;
    md.ncustom = 0;
    for (int i = 0; i < e->md.ncustom; i++)
        sl_objmd_set_custom(&md, e->md.custom[i].k, e->md.custom[i].v);
    md.size = (uint64_t)st.st_size;
    if (md.cksum_type != SL_CK_NONE && sl_cksum_fd(md.cksum_type, e->fd, md.cksum) < 0) {
        sl_objmd_free(&md);
        sl_errf(err, SL_EIO, "%s: cannot checksum after the append: %s", e->fqn, strerror(errno));
        edit_release(e);
        return -1;
    }
    if (e->b.versioning)
        md.version++;
    md.mtime = md.atime = sl_now_ns();
    md.ncopies = 0; /* the copies hold the old bytes: dropped below, made again by put-copies */
    struct sl_md_op ops[2] = {
        { .kind = SL_MD_PUT_OBJ, .bid = e->b.bid, .name = e->name, .nlen = e->nlen, .md = &md },
        { .kind = SL_MD_DEL_PENDING, .key = e->mark, .klen = e->mark ? strlen(e->mark) : 0 },
    };
    int rc = sl_md_commit(e->mp->md, ops, e->mark ? 2 : 1, true, err);
    if (rc == 0)
        store_unlink_copies(&e->b, e->name, e->nlen, &e->md);
    sl_objmd_free(&md);
    free(e->mark);
    e->mark = NULL; /* cleared in the same transaction */
    struct sl_bck b;
    sl_bck_copy(&b, &e->b);
    char *name = e->name;
    size_t nlen = e->nlen;
    e->name = NULL;
    edit_release(e);
    if (rc == 0) {
        store_after_put(&b, name, nlen, SL_STORE_NEW);
    }
    sl_bck_release(&b);
    free(name);
    return rc;
}

void sl_obj_edit_abort(struct sl_obj_edit *e)
{
    edit_release(e);
}

/* ---- bucket removal ---- */

static void *rm_bg(void *arg)
{
    char *path = arg;
    if (sl_rm_rf(path) < 0)
        sl_logw("could not remove %s completely: %s", path, strerror(errno));
    free(path);
    return NULL;
}

int sl_store_destroy_bucket(const struct sl_bck *b, struct sl_err *err)
{
    int rc = 0;
    store_dc_invalidate(); /* (the threads' open directories of it go) */
    for (int i = 0; i < store_nmpaths; i++) {
        struct sl_mpath *mp = &store_mpaths[i];
        unsigned char ck[COPY_KEY];
        store_copy_key(b->bid, "", 0, ck);
        struct sl_md_op ops[2] = {
            { .kind = SL_MD_DEL_BUCKET, .bid = b->bid },
            { .kind = SL_MD_DEL_AUX_PREFIX, .key = (const char *)ck, .klen = COPY_KEY_BCK }, /* copies' records */
        };
        if (sl_md_commit(mp->md, ops, 2, true, err) < 0)
            rc = -1;
        if (i == 0 && sl_inv_drop(mp->md, b->bid, err) < 0) /* (its inventory, if any: inv.h) */
            rc = -1;
        char *dir = sl_xasprintf("%s/@%s/%s", mp->path, b->provider, b->name);
        char rid[16];
        sl_rand_id(rid, 8);
        char *trash = sl_xasprintf("%s/.shale/trash/%s.%s", mp->path, b->name, rid);
        sl_mkdir_parents(trash, 0755);
        if (rename(dir, trash) == 0) {
            pthread_t t;
            if (pthread_create(&t, NULL, rm_bg, trash) == 0)
                pthread_detach(t);
            else
                free(trash);
        } else {
            free(trash);
        }
        free(dir);
    }
    return rc;
}
