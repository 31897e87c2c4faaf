/* SPDX-License-Identifier: MIT
 * store_ver.c: S3 versions of an object in the store (store.h, "S3
 * versions"). An older version or a delete marker of KEY is an object of
 * its own, KEY "\x01" SUFFIX (meta.h), placed and locked by KEY: on KEY's
 * target and mountpath, in KEY's directory, under KEY's name lock. So the
 * layers that move and protect objects (rebalance, resilver, mirror, EC)
 * take the versions with them as they take any object.
 *
 * A write of KEY in a versioned bucket archives the current object in the
 * PUT's own LMDB transaction (store_put.c): before the commit, a hard link
 * of the current file is made as a work file; the commit records the new
 * object, the archive, and the pending markers of both work files together;
 * then the new file is renamed onto KEY's path and the link onto the
 * archive's. A crash before the commit leaves the old object current (the
 * restart removes the work files), after it the restart finishes both
 * renames from their markers: never a write without its archive.
 */
#include "store_int.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define VID_KEY "s3.vid"
#define DM_KEY "s3.dm"

/* A version id: 20 hex digits (sl_ver_new_id) */
static bool vid_ok(const char *v)
{
    if (!v || strlen(v) != 20)
        return false;
    for (int i = 0; i < 20; i++)
        if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f')))
            return false;
    return true;
}

void sl_ver_new_id(char out[21])
{
    unsigned char r[2];
    if (getrandom(r, 2, 0) != 2) {
        r[0] = (unsigned char)sl_mono_ns();
        r[1] = (unsigned char)(sl_mono_ns() >> 8);
    }
    snprintf(out, 21, "%016llx%02x%02x", (unsigned long long)~(uint64_t)sl_now_ns(), r[0], r[1]);
}

const char *sl_ver_id_of(const struct sl_objmd *md)
{
    const char *v = sl_objmd_get_custom(md, VID_KEY);
    return vid_ok(v) ? v : "null";
}

bool sl_ver_is_marker(const struct sl_objmd *md)
{
    return sl_objmd_get_custom(md, DM_KEY) != NULL;
}

void sl_ver_name(struct sl_buf *out, const char *key, size_t klen, const char *suffix)
{
    sl_buf_reset(out);
    sl_buf_add(out, key, klen);
    sl_buf_addc(out, SL_VER_SEP);
    sl_buf_add(out, suffix, 20);
    sl_buf_addc(out, 0);
    out->len--;
}

/* The suffix a current object is archived under: its id, or for the null
 * version its time and "null" */
static void archive_suffix(const struct sl_objmd *md, char out[21])
{
    const char *v = sl_objmd_get_custom(md, VID_KEY);
    if (vid_ok(v))
        snprintf(out, 21, "%s", v);
    else
        snprintf(out, 21, "%016llxnull", (unsigned long long)~(uint64_t)md->mtime);
}

static void drop_custom(struct sl_objmd *md, const char *k)
{
    for (int i = 0; i < md->ncustom; i++)
        if (!strcmp(md->custom[i].k, k)) {
            free(md->custom[i].k);
            free(md->custom[i].v);
            md->custom[i] = md->custom[--md->ncustom];
            return;
        }
}

void store_ver_null_md(struct sl_objmd *md)
{
    drop_custom(md, VID_KEY);
}

/* The archived versions of key on mp, newest first (name order): fn for
 * each (name, md); fn returns true to stop. 0, or -1 with err. */
typedef bool (*ver_fn)(void *arg, const char *name, size_t nlen, const struct sl_objmd *md);
static int ver_walk(struct sl_mpath *mp, const struct sl_bck *b, const char *key, size_t klen, ver_fn fn, void *arg,
                    struct sl_err *err)
{
    struct sl_buf pfx;
    sl_buf_init(&pfx);
    sl_buf_add(&pfx, key, klen);
    sl_buf_addc(&pfx, SL_VER_SEP);
    struct sl_md_iter *it;
    int rc = sl_md_iter_open(mp->md, b->bid, pfx.p, pfx.len, NULL, 0, &it, err);
    sl_buf_free(&pfx);
    if (rc < 0)
        return -1;
    int h;
    while ((h = sl_md_iter_next(it)) == 1) {
        size_t l;
        const char *n = sl_md_iter_name(it, &l);
        if (sl_objname_vkey(n, l) != klen)
            continue; /* "key\x01..." of another shape: not one of its versions */
        if (fn(arg, n, l, sl_md_iter_md(it)))
            break;
    }
    sl_md_iter_close(it);
    if (h < 0)
        return sl_errf(err, SL_EIO, "reading the versions of an object of %s: metadata read failed", b->name);
    return 0;
}

/* the first (newest) archived version, but skip */
struct first_ctx {
    const char *skip;
    size_t slen;
    struct sl_buf name;
    struct sl_objmd md;
    bool found;
    bool null_only;           /* the null one instead */
};

static bool first_fn(void *arg, const char *name, size_t nlen, const struct sl_objmd *md)
{
    struct first_ctx *c = arg;
    if (c->skip && c->slen == nlen && !memcmp(c->skip, name, nlen))
        return false;
    if (c->null_only && memcmp(name + nlen - 4, "null", 4))
        return false;
    sl_buf_reset(&c->name);
    sl_buf_add(&c->name, name, nlen);
    sl_buf_addc(&c->name, 0);
    c->name.len--;
    sl_objmd_copy(&c->md, md);
    c->found = true;
    return true;
}

static int ver_first(struct sl_mpath *mp, const struct sl_bck *b, const char *key, size_t klen, bool null_only,
                     const char *skip, size_t slen, struct first_ctx *c, struct sl_err *err)
{
    memset(c, 0, sizeof(*c));
    sl_buf_init(&c->name);
    c->skip = skip;
    c->slen = slen;
    c->null_only = null_only;
    return ver_walk(mp, b, key, klen, first_fn, c, err);
}

static void first_free(struct first_ctx *c)
{
    sl_buf_free(&c->name);
    if (c->found)
        sl_objmd_free(&c->md);
}

/* ---- the archive step of a PUT (store_put.c) ---- */

int store_ver_prepare(struct store_ver *v, struct sl_mpath *mp, const struct sl_bck *b, const char *name,
                      size_t nlen, int mode, int had, const struct sl_objmd *old, int64_t if_mtime,
                      struct sl_err *err)
{
    memset(v, 0, sizeof(*v));
    sl_buf_init(&v->afqn);
    sl_buf_init(&v->aname);
    sl_buf_init(&v->kfqn);
    v->mode = mode;
    v->key = name;
    v->klen = sl_objname_vkey(name, nlen);
    v->marker = v->klen != nlen;
    const struct sl_objmd *cur = old;
    int hc = had;
    if (v->marker) {
        hc = sl_md_obj_get(mp->md, b->bid, v->key, v->klen, &v->cur, err);
        if (hc < 0)
            return -1;
        v->had = hc;
        cur = &v->cur;
        if (if_mtime && hc != 1)
            return sl_errf(err, SL_ENOOBJ, "%.*s does not exist", (int)SL_MIN(v->klen, 200), v->key);
        if (if_mtime > 0 && cur->mtime != if_mtime)
            return sl_errf(err, SL_EEXIST, "%.*s was written again since: kept", (int)SL_MIN(v->klen, 200), v->key);
    }
    if (hc == 1)
        sl_obj_fqn(&v->kfqn, mp, b, v->key, v->klen, cur->fname);
    if (hc == 1 && (mode == SL_S3VER_ON || vid_ok(sl_objmd_get_custom(cur, VID_KEY)))) {
        char suffix[21], fname[72];
        bool nd = false;
        archive_suffix(cur, suffix);
        sl_ver_name(&v->aname, v->key, v->klen, suffix);
        if (store_place_fname(mp, b, v->aname.p, v->aname.len, fname, &v->afqn, &nd) < 0)
            return sl_errf(err, SL_EIO, "archiving the current version of %s: cannot make its directory on %s: %s",
                           v->key, mp->path, strerror(errno));
        /* a hard link of the current file as a work file, renamed into place once committed (with a pending
         * marker, as a PUT's work file: a crash before the commit leaves a work file the restart removes) */
        v->awork = sl_store_work_path(mp, b);
        if (link(v->kfqn.p, v->awork) < 0) {
            int e = errno;
            return sl_errf(err, e == ENOSPC ? SL_ENOSPC : SL_EIO, "archiving the current version of %s on %s: %s",
                           v->key, mp->path, strerror(e));
        }
        v->linked = true;
        sl_fault("ver-after-link");
        const char *wrel = v->awork + strlen(mp->path) + 1, *arel = v->afqn.p + strlen(mp->path) + 1;
        v->ops[v->nops++] = (struct sl_md_op){ .kind = SL_MD_PUT_PENDING, .key = wrel, .klen = strlen(wrel),
                                               .val = arel, .vlen = strlen(arel) };
        sl_objmd_copy(&v->amd, cur);
        v->amd.ncopies = 0; /* its own copies come (mirror hook) under its own name */
        snprintf(v->amd.fname, sizeof(v->amd.fname), "%s", fname);
        v->ops[v->nops++] = (struct sl_md_op){ .kind = SL_MD_PUT_OBJ, .bid = b->bid, .name = v->aname.p,
                                               .nlen = v->aname.len, .md = &v->amd };
    }
    if (v->marker && hc == 1) {
        /* the current object goes: its mirror copies first (they are spare replicas: a crash here leaves it
         * whole), its record in the commit, its file after it */
        if (store_drop_copy_records(b, v->key, v->klen, NULL, NULL, true, err) < 0)
            return -1;
        sl_obj_aux_prefix(b->bid, v->key, v->klen, v->kak);
        v->ops[v->nops++] = (struct sl_md_op){ .kind = SL_MD_DEL_OBJ, .bid = b->bid, .name = v->key, .nlen = v->klen };
        v->ops[v->nops++] = (struct sl_md_op){ .kind = SL_MD_DEL_AUX_PREFIX, .key = (const char *)v->kak,
                                               .klen = SL_OBJ_AUX_PREFIX };
    }
    if (mode == SL_S3VER_SUSPENDED) {
        /* the new write is the null version: an older null one goes */
        struct first_ctx c;
        if (ver_first(mp, b, v->key, v->klen, true, v->aname.p, v->aname.len, &c, err) < 0) {
            first_free(&c);
            return -1;
        }
        if (c.found && !(v->marker && c.name.len == nlen && !memcmp(c.name.p, name, nlen))) {
            struct sl_mpath *at = mp;
            v->nname = sl_buf_steal(&c.name);
            v->nnlen = strlen(v->nname);
            struct sl_err e2 = { 0 };
            int r = store_delete_files(&at, b, v->nname, v->nnlen, NULL, v->ops + v->nops, v->nak, &e2);
            if (r == 0 && at == mp)
                v->nops += 2;
            else if (r < 0)
                sl_logw("dropping the older null version of %s: %s", v->key, e2.msg);
        }
        first_free(&c);
    }
    return 0;
}

void store_ver_undo(struct store_ver *v, struct sl_mpath *mp, const struct sl_bck *b, bool committed)
{
    if (committed) {
        struct sl_md_op undo[2];
        int nu = 0;
        if (v->linked)
            undo[nu++] = (struct sl_md_op){ .kind = SL_MD_DEL_OBJ, .bid = b->bid, .name = v->aname.p,
                                            .nlen = v->aname.len };
        if (v->marker && v->had == 1)
            undo[nu++] = (struct sl_md_op){ .kind = SL_MD_PUT_OBJ, .bid = b->bid, .name = v->key, .nlen = v->klen,
                                            .md = &v->cur };
        if (nu)
            sl_md_commit(mp->md, undo, nu, true, NULL);
    }
    if (v->linked)
        unlink(v->awork);
    v->linked = false;
}

void store_ver_done(struct store_ver *v, struct sl_mpath *mp)
{
    if (v->linked) {
        if (rename(v->awork, v->afqn.p) < 0) /* (the restart's fsck renames it, from the pending marker) */
            sl_logw("archiving %s on %s: %s", v->key, mp->path, strerror(errno));
        const char *wrel = v->awork + strlen(mp->path) + 1;
        struct sl_md_op clr = { .kind = SL_MD_DEL_PENDING, .key = wrel, .klen = strlen(wrel) };
        sl_md_commit_lazy(mp->md, &clr, 1);
    }
    if (v->marker && v->had == 1)
        unlink(v->kfqn.p); /* (its data lives on under the archive's name when archived) */
}

void store_ver_published(struct store_ver *v, const struct sl_bck *b)
{
    if (v->linked)
        store_after_put(b, v->aname.p, v->aname.len, SL_STORE_NEW);
}

void store_ver_free(struct store_ver *v)
{
    sl_buf_free(&v->afqn);
    sl_buf_free(&v->aname);
    sl_buf_free(&v->kfqn);
    if (v->had == 1)
        sl_objmd_free(&v->cur);
    sl_objmd_free(&v->amd);
    free(v->nname);
    free(v->awork);
    memset(v, 0, sizeof(*v));
}

/* ---- reads and deletes by version id ---- */

int sl_ver_find(const struct sl_bck *b, const char *key, size_t klen, const char *vid, struct sl_buf *name,
                struct sl_objmd *md, struct sl_err *err)
{
    struct sl_mpath *mp = sl_store_locate(b, key, klen);
    if (!mp)
        return sl_errf(err, SL_EUNAVAIL, "this node has no mountpaths");
    bool isnull = !strcmp(vid, "null");
    if (!isnull && !vid_ok(vid))
        return sl_errf(err, SL_EINVAL, "Invalid version id specified: \"%.64s\"", vid);
    pthread_rwlock_t *lk = store_name_lock(b, key, klen);
    pthread_rwlock_rdlock(lk);
    int rc = sl_md_obj_get(mp->md, b->bid, key, klen, md, err);
    if (rc == 1 && !strcmp(sl_ver_id_of(md), vid)) {
        sl_buf_reset(name);
        sl_buf_add(name, key, klen);
        sl_buf_addc(name, 0);
        name->len--;
        goto out;
    }
    if (rc == 1)
        sl_objmd_free(md);
    if (rc < 0)
        goto out;
    if (isnull) {
        struct first_ctx c;
        rc = ver_first(mp, b, key, klen, true, NULL, 0, &c, err);
        if (rc == 0 && c.found) {
            sl_buf_reset(name);
            sl_buf_add(name, c.name.p, c.name.len + 1);
            name->len--;
            sl_objmd_copy(md, &c.md);
            rc = 1;
        }
        first_free(&c);
    } else {
        sl_ver_name(name, key, klen, vid);
        rc = sl_md_obj_get(mp->md, b->bid, name->p, name->len, md, err);
    }
out:
    pthread_rwlock_unlock(lk);
    if (rc == 0)
        sl_errf(err, SL_ENOOBJ, "The specified version does not exist (%.64s)", vid);
    return rc;
}

int sl_ver_latest(const struct sl_bck *b, const char *key, size_t klen, struct sl_buf *name, struct sl_objmd *md,
                  struct sl_err *err)
{
    struct sl_mpath *mp = sl_store_locate(b, key, klen);
    if (!mp)
        return 0;
    struct first_ctx c;
    int rc = ver_first(mp, b, key, klen, false, NULL, 0, &c, err);
    if (rc == 0 && c.found) {
        sl_buf_reset(name);
        sl_buf_add(name, c.name.p, c.name.len + 1);
        name->len--;
        sl_objmd_copy(md, &c.md);
        rc = 1;
    }
    first_free(&c);
    return rc;
}

int sl_ver_delete(const struct sl_bck *b, const char *key, size_t klen, const char *vid, struct sl_ver_gone *out,
                  struct sl_err *err)
{
    memset(out, 0, sizeof(*out));
    sl_buf_init(&out->name);
    bool isnull = !strcmp(vid, "null");
    if (!isnull && !vid_ok(vid))
        return sl_errf(err, SL_EINVAL, "Invalid version id specified: \"%.64s\"", vid);
    struct sl_mpath *mp = sl_store_locate(b, key, klen);
    if (!mp)
        return sl_errf(err, SL_EUNAVAIL, "this node has no mountpaths");
    if (store_write_enter(b, false, err) < 0)
        return -1;
    pthread_rwlock_t *lk = store_name_lock(b, key, klen);
    pthread_rwlock_wrlock(lk);
    struct sl_objmd cur, tmd, nmd;
    struct first_ctx c;
    struct sl_buf kfqn, pfqn;
    sl_buf_init(&kfqn);
    sl_buf_init(&pfqn);
    memset(&c, 0, sizeof(c));
    sl_buf_init(&c.name);
    memset(&nmd, 0, sizeof(nmd));
    struct sl_md_op ops[6];
    char *pwork = NULL;
    unsigned char ak[SL_OBJ_AUX_PREFIX], pak[SL_OBJ_AUX_PREFIX];
    int nops = 0, rc, tgot = 0;
    bool promote = false;
    int had = sl_md_obj_get(mp->md, b->bid, key, klen, &cur, err);
    if (had < 0) {
        rc = -1;
        goto out;
    }
    bool is_cur = had == 1 && !strcmp(sl_ver_id_of(&cur), vid);
    if (is_cur) {
        sl_buf_add(&out->name, key, klen);
    } else if (isnull) {
        first_free(&c);
        if (ver_first(mp, b, key, klen, true, NULL, 0, &c, err) < 0) {
            rc = -1;
            goto out;
        }
        if (c.found)
            sl_buf_add(&out->name, c.name.p, c.name.len);
    } else {
        sl_ver_name(&out->name, key, klen, vid);
    }
    sl_buf_addc(&out->name, 0);
    out->name.len--;
    tgot = out->name.len ? sl_md_obj_get(mp->md, b->bid, out->name.p, out->name.len, &tmd, err) : 0;
    if (tgot <= 0) {
        rc = tgot; /* 0: no such version: nothing to do */
        goto out;
    }
    out->marker = sl_ver_is_marker(&tmd);
    snprintf(out->vid, sizeof(out->vid), "%s", vid);
    struct sl_mpath *at = mp;
    rc = store_delete_files(&at, b, out->name.p, out->name.len, NULL, ops, ak, err);
    if (rc == 2) {
        rc = 0;
        goto out;
    }
    if (rc != 0 || at != mp) {
        rc = rc < 0 ? -1 : 0;
        goto out;
    }
    nops = 2;
    if (is_cur || had == 0) {
        /* no current object after this: the newest older version becomes it, unless a delete marker */
        first_free(&c);
        if (ver_first(mp, b, key, klen, false, out->name.p, out->name.len, &c, err) < 0) {
            rc = -1;
            goto out;
        }
        if (c.found && !sl_ver_is_marker(&c.md)) {
            char fname[72];
            bool nd = false;
            if (store_place_fname(mp, b, key, klen, fname, &kfqn, &nd) < 0) {
                sl_logw("%s: the previous version of %s stays an older version: cannot make its directory: %s",
                        mp->path, key, strerror(errno));
                goto commit;
            }
            sl_obj_fqn(&pfqn, mp, b, c.name.p, c.name.len, c.md.fname);
            pwork = sl_store_work_path(mp, b); /* renamed onto the key once committed (a pending marker) */
            if (link(pfqn.p, pwork) < 0) {
                sl_logw("%s: the previous version of %s stays an older version: %s", mp->path, key, strerror(errno));
                goto commit;
            }
            store_drop_copy_records(b, c.name.p, c.name.len, NULL, NULL, true, NULL);
            sl_objmd_copy(&nmd, &c.md);
            nmd.ncopies = 0;
            snprintf(nmd.fname, sizeof(nmd.fname), "%s", fname);
            const char *sfx = c.name.p + c.name.len - 20;
            if (memcmp(sfx + 16, "null", 4)) {
                char id[21];
                snprintf(id, sizeof(id), "%.20s", sfx);
                sl_objmd_set_custom(&nmd, VID_KEY, id);
            } else {
                drop_custom(&nmd, VID_KEY);
            }
            sl_obj_aux_prefix(b->bid, c.name.p, c.name.len, pak);
            ops[nops++] = (struct sl_md_op){ .kind = SL_MD_PUT_OBJ, .bid = b->bid, .name = key, .nlen = klen,
                                             .md = &nmd };
            ops[nops++] = (struct sl_md_op){ .kind = SL_MD_DEL_OBJ, .bid = b->bid, .name = c.name.p,
                                             .nlen = c.name.len };
            ops[nops++] = (struct sl_md_op){ .kind = SL_MD_DEL_AUX_PREFIX, .key = (const char *)pak,
                                             .klen = SL_OBJ_AUX_PREFIX };
            const char *wrel = pwork + strlen(mp->path) + 1, *krel = kfqn.p + strlen(mp->path) + 1;
            ops[nops++] = (struct sl_md_op){ .kind = SL_MD_PUT_PENDING, .key = wrel, .klen = strlen(wrel),
                                             .val = krel, .vlen = strlen(krel) };
            promote = true;
        }
    }
commit:
    rc = sl_md_commit(mp->md, ops, nops, true, err);
    if (rc == 0 && promote) {
        if (rename(pwork, kfqn.p) < 0) /* (else the restart's fsck renames it) */
            sl_logw("%s: making the previous version of %s current: %s", mp->path, key, strerror(errno));
        const char *wrel = pwork + strlen(mp->path) + 1;
        struct sl_md_op clr = { .kind = SL_MD_DEL_PENDING, .key = wrel, .klen = strlen(wrel) };
        sl_md_commit_lazy(mp->md, &clr, 1);
        unlink(pfqn.p);
        out->promoted = true;
    } else if (pwork) {
        unlink(pwork);
    }
    if (rc == 0)
        rc = 1;
out:
    if (tgot == 1)
        sl_objmd_free(&tmd);
    if (had == 1)
        sl_objmd_free(&cur);
    first_free(&c);
    if (promote)
        sl_objmd_free(&nmd);
    sl_buf_free(&kfqn);
    sl_buf_free(&pfqn);
    free(pwork);
    pthread_rwlock_unlock(lk);
    store_write_leave(b->bid);
    if (rc == 1 && out->promoted)
        store_after_put(b, key, klen, SL_STORE_NEW);
    return rc;
}
