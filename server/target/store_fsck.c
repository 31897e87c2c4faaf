/* SPDX-License-Identifier: MIT
 * store_fsck.c: the start-up reconcile of files and metadata
 * (sl_store_fsck): interrupted PUTs and appends, abandoned work files, and,
 * when full, metadata without files, files without metadata, mirror copies
 * and misplaced files.
 */
#include "store_int.h"
#include "cksum.h"
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- startup reconcile ---- */

struct fsck_ctx {
    struct sl_mpath *mp;
    int recovered, dropped;
};

/* An in-place append that did not commit: restore the old bytes. */
static void undo_append(struct fsck_ctx *fc, const char *key, size_t klen, const char *val, size_t vlen)
{
    char *path = sl_xasprintf("%s/%.*s", fc->mp->path, (int)(klen - 2), key + 2);
    char v[64];
    snprintf(v, sizeof(v), "%.*s", (int)SL_MIN(vlen, 63), val);
    long long off = 0, size = 0;
    if (sscanf(v, "%lld %lld", &off, &size) == 2 && off >= 0 && size >= off) {
        int fd = open(path, O_RDWR);
        if (fd >= 0) {
            int ok = ftruncate(fd, (off_t)size) == 0;
            static const char zeros[4096];
            for (long long p = off; ok && p < size;) {
                size_t n = (size_t)SL_MIN(size - p, (long long)sizeof(zeros));
                if (pwrite(fd, zeros, n, (off_t)p) != (ssize_t)n)
                    ok = 0;
                p += (long long)n;
            }
            fsync(fd);
            close(fd);
            fc->recovered++;
            sl_logi("fsck %s: rolled back an interrupted append to %s (back to %lld bytes)", fc->mp->path, path,
                    size);
        }
    }
    free(path);
}

static int pending_cb(void *arg, const char *key, size_t klen, const char *val, size_t vlen)
{
    struct fsck_ctx *fc = arg;
    if (klen > 2 && key[0] == 'A' && key[1] == ':') {
        undo_append(fc, key, klen, val, vlen);
        struct sl_md_op op = { .kind = SL_MD_DEL_PENDING, .key = key, .klen = klen };
        sl_md_commit(fc->mp->md, &op, 1, true, NULL);
        return 0;
    }
    char *work = sl_xasprintf("%s/%.*s", fc->mp->path, (int)klen, key);
    char *fin = sl_xasprintf("%s/%.*s", fc->mp->path, (int)vlen, val);
    struct stat st;
    if (stat(work, &st) == 0) {
        int made = sl_mkdir_parents(fin, 0755);
        if (rename(work, fin) == 0) {
            /* durable before the marker goes */
            if ((made > 0 ? sl_fsync_parents(fin, fc->mp->path) : store_fsync_dir_of(fin)) < 0)
                sl_logw("fsck %s: fsync of the directory of %s: %s", fc->mp->path, fin, strerror(errno));
            fc->recovered++;
            sl_logi("fsck %s: completed interrupted PUT: %s -> %s", fc->mp->path, work, fin);
        } else {
            sl_logw("fsck %s: cannot complete interrupted PUT %s -> %s: %s", fc->mp->path, work, fin,
                    strerror(errno));
        }
    }
    struct sl_md_op op = { .kind = SL_MD_DEL_PENDING, .key = key, .klen = klen };
    sl_md_commit(fc->mp->md, &op, 1, true, NULL);
    free(work);
    free(fin);
    return 0;
}

/* remove every file left in the %wk directories of one provider's buckets */
static int wipe_work_dirs_in(const char *root)
{
    int n = 0;
    DIR *d = opendir(root);
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char *wk = sl_xasprintf("%s/%s/%%wk", root, de->d_name);
        DIR *w = opendir(wk);
        if (w) {
            struct dirent *we;
            while ((we = readdir(w))) {
                if (we->d_name[0] == '.')
                    continue;
                char *f = sl_xasprintf("%s/%s", wk, we->d_name);
                if (unlink(f) == 0)
                    n++;
                free(f);
            }
            closedir(w);
        }
        free(wk);
    }
    closedir(d);
    return n;
}

/* ... of every provider (@ais, @aws, ...) */
static int wipe_work_dirs(struct sl_mpath *mp)
{
    int n = 0;
    DIR *d = opendir(mp->path);
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] != '@')
            continue;
        char *root = sl_xasprintf("%s/%s", mp->path, de->d_name);
        n += wipe_work_dirs_in(root);
        free(root);
    }
    closedir(d);
    return n;
}

struct walk_ctx {
    struct sl_mpath *mp;
    const struct sl_bck *b;
    size_t base_len;
    int adopted, removed, misplaced;
};

static void walk_files(struct walk_ctx *wc, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char *path = sl_xasprintf("%s/%s", dir, de->d_name);
        struct stat st;
        if (lstat(path, &st) < 0) {
            free(path);
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            walk_files(wc, path);
            if (rmdir(path) == 0) /* prune empty directories; fails harmlessly otherwise */
                store_dc_invalidate();
            free(path);
            continue;
        }
        const char *rel = path + wc->base_len;
        size_t rlen = strlen(rel);
        bool hashed = strchr(rel, '/') == NULL && rlen == 66 && rel[0] == '.' && rel[1] == 'x';
        if (!S_ISREG(st.st_mode)) {
            unlink(path);
            wc->removed++;
            free(path);
            continue;
        }
        struct sl_objmd md;
        struct sl_err e;
        int found = 0;
        if (!hashed) {
            struct sl_buf un;
            sl_buf_init(&un);
            sl_obj_uname(&un, wc->b->provider, wc->b->name, rel, rlen);
            struct sl_mpath *own = sl_store_pick(un.p, un.len);
            sl_buf_free(&un);
            found = sl_md_obj_get(wc->mp->md, wc->b->bid, rel, rlen, &md, &e);
            if (own != wc->mp)
                wc->misplaced++; /* (adopted here if need be) resilver moves it */
            if (found == 1) {
                sl_objmd_free(&md);
            } else if (found == 0 && sl_objname_check(rel, rlen, &e) == 0) {
                /* a file without metadata: adopt it */
                int fd = open(path, O_RDONLY);
                if (fd >= 0) {
                    memset(&md, 0, sizeof(md));
                    md.size = (uint64_t)st.st_size;
                    md.cksum_type = wc->b->cksum_type;
                    sl_cksum_fd(md.cksum_type, fd, md.cksum);
                    close(fd);
                    md.version = wc->b->versioning ? 1 : 0;
                    md.atime = md.mtime = (int64_t)st.st_mtime * 1000000000LL;
                    struct sl_md_op op = { .kind = SL_MD_PUT_OBJ, .bid = wc->b->bid, .name = rel, .nlen = rlen,
                                           .md = &md };
                    if (sl_md_commit(wc->mp->md, &op, 1, true, NULL) == 0)
                        wc->adopted++;
                }
            }
        } else {
            /* hashed names can only be matched from metadata: check by scan below */
            found = 1;
        }
        free(path);
    }
    closedir(d);
}

/* A mirrored object's copies: those missing or of the wrong size are
 * dropped from its metadata; a missing main is restored from a copy. True
 * when something was fixed (the record is then settled). */
static bool fsck_copies(struct sl_mpath *mp, const struct sl_bck *b, const char *name, size_t nlen,
                        const struct sl_objmd *md, bool main_there)
{
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), b, name, nlen);
    if (!main_there) {
        struct sl_err e = { 0 };
        if (store_restore_main(b, name, nlen, &e) == 0)
            sl_logw("fsck %s: %s: main replica missing; restored from a mirror copy", mp->path, cn);
        else
            sl_logw("fsck %s: %s: main replica missing and not restored: %s", mp->path, cn, e.msg);
        return true;
    }
    struct sl_objmd nm;
    sl_objmd_copy(&nm, md);
    nm.ncopies = 0;
    struct sl_buf f;
    sl_buf_init(&f);
    for (int i = 0; i < md->ncopies; i++) {
        struct sl_mpath *cm = sl_store_mpath_by_digest(md->copies[i]);
        struct stat st;
        if (cm && cm != mp) {
            sl_obj_copy_fqn(&f, cm, b, name, nlen);
            if (stat(f.p, &st) == 0 && (uint64_t)st.st_size == md->size) {
                nm.copies[nm.ncopies++] = md->copies[i];
                continue;
            }
            sl_obj_copy_drop(cm, b, name, nlen);
        }
        sl_logw("fsck %s: %s: mirror copy on %s is missing or damaged; dropped (make-n-copies re-creates it)",
                mp->path, cn, cm ? cm->path : "a mountpath no longer configured");
    }
    sl_buf_free(&f);
    bool changed = nm.ncopies != md->ncopies;
    if (changed) {
        struct sl_md_op op = { .kind = SL_MD_PUT_OBJ, .bid = b->bid, .name = name, .nlen = nlen, .md = &nm };
        sl_md_commit(mp->md, &op, 1, true, NULL);
    }
    sl_objmd_free(&nm);
    return changed;
}

static void fsck_full(struct sl_mpath *mp, const struct sl_bmd *bmd, int *fixed_md, int *adopted, int *misplaced_n)
{
    for (int i = 0; i < bmd->n; i++) {
        const struct sl_bck *b = &bmd->bcks[i];
        /* 1. metadata without files, sizes that disagree */
        struct sl_md_iter *it;
        struct sl_err e;
        if (sl_md_iter_open(mp->md, b->bid, "", 0, NULL, 0, &it, &e) < 0)
            continue;
        struct sl_buf fqn;
        sl_buf_init(&fqn);
        while (sl_md_iter_next(it) == 1) {
            size_t nlen;
            const char *name = sl_md_iter_name(it, &nlen);
            const struct sl_objmd *md = sl_md_iter_md(it);
            sl_obj_fqn(&fqn, mp, b, name, nlen, md->fname);
            struct stat st;
            if (md->ncopies > 0 && fsck_copies(mp, b, name, nlen, md, stat(fqn.p, &st) == 0)) {
                (*fixed_md)++;
            } else if (stat(fqn.p, &st) < 0) {
                sl_logw("fsck %s: %s://%s/%.*s has metadata but no file; removing the metadata", mp->path,
                        sl_provider_scheme(b->provider), b->name, (int)SL_MIN(nlen, 200), name);
                struct sl_md_op op = { .kind = SL_MD_DEL_OBJ, .bid = b->bid, .name = name, .nlen = nlen };
                sl_md_commit(mp->md, &op, 1, false, NULL);
                (*fixed_md)++;
            } else if ((uint64_t)st.st_size != md->size) {
                struct sl_objmd nm;
                sl_objmd_copy(&nm, md);
                nm.size = (uint64_t)st.st_size;
                int fd = open(fqn.p, O_RDONLY);
                if (fd >= 0) {
                    sl_cksum_fd(nm.cksum_type, fd, nm.cksum);
                    close(fd);
                }
                sl_logw("fsck %s: %s://%s/%.*s: size %llu in metadata, %llu on disk; metadata updated", mp->path,
                        sl_provider_scheme(b->provider), b->name, (int)SL_MIN(nlen, 200), name,
                        (unsigned long long)md->size, (unsigned long long)st.st_size);
                struct sl_md_op op = { .kind = SL_MD_PUT_OBJ, .bid = b->bid, .name = name, .nlen = nlen, .md = &nm };
                sl_md_commit(mp->md, &op, 1, true, NULL);
                sl_objmd_free(&nm);
                (*fixed_md)++;
            }
        }
        sl_buf_free(&fqn);
        sl_md_iter_close(it);
        /* 2. files without metadata */
        char *ob = sl_xasprintf("%s/@%s/%s/%%ob", mp->path, b->provider, b->name);
        struct walk_ctx wc = { .mp = mp, .b = b, .base_len = strlen(ob) + 1 };
        walk_files(&wc, ob);
        free(ob);
        *adopted += wc.adopted;
        *misplaced_n += wc.misplaced;
        if (wc.adopted)
            sl_logi("fsck %s: adopted %d file(s) without metadata in %s://%s", mp->path, wc.adopted,
                    sl_provider_scheme(b->provider), b->name);
    }
}

int sl_store_fsck(const char *mode)
{
    struct sl_bmd *bmd = sl_bmd_get();
    int nmis = 0;
    for (int i = 0; i < store_nmpaths; i++) {
        struct sl_mpath *mp = &store_mpaths[i];
        struct fsck_ctx fc = { .mp = mp };
        sl_md_pending_foreach(mp->md, pending_cb, &fc);
        int wiped = wipe_work_dirs(mp);
        char *clean = sl_xasprintf("%s/.shale/clean", mp->path);
        bool was_clean = access(clean, F_OK) == 0;
        unlink(clean);
        free(clean);
        bool full = !strcmp(mode, "full") || (!strcmp(mode, "auto") && !was_clean);
        int fixed = 0, adopted = 0;
        int64_t t0 = sl_mono_ns();
        if (full)
            fsck_full(mp, bmd, &fixed, &adopted, &nmis);
        sl_logi("fsck %s (%s%s): completed %d interrupted PUT(s), removed %d abandoned work file(s), fixed %d "
                "metadata record(s), adopted %d file(s) in %.1f ms",
                mp->path, full ? "full" : "quick", was_clean ? "" : ", previous run did not stop cleanly",
                fc.recovered, wiped, fixed, adopted, (double)(sl_mono_ns() - t0) / 1e6);
        /* empty the trash of destroyed buckets */
        char *trash = sl_xasprintf("%s/.shale/trash", mp->path);
        sl_rm_rf(trash);
        free(trash);
    }
    sl_bmd_put(bmd);
    store_resilver_check(nmis);
    return 0;
}
