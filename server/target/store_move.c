/* SPDX-License-Identifier: MIT
 * store_move.c: objects that are not (only) where HRW places them. Misplaced
 * objects after the mountpaths change, and the resilver record; moving an
 * object to its mountpath (sl_store_move) and walking a mountpath's
 * objects; the records beside mirror copies, and the promotion of a copy
 * whose main replica was lost; the copy of an object's bytes to a work file
 * that these (and the mirror) use.
 */
#include "store_int.h"
#include "cksum.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- copying an object's bytes to a work file (mirror copies, promotion, moves) ---- */

#define STORE_COPY_BUF (1024 * 1024)

int sl_store_copy_work(int src, const struct sl_objmd *md, const struct sl_mpath *mp, const struct sl_bck *b,
                       const volatile bool *stop, char **work, struct sl_err *err)
{
    char *path = sl_store_work_path(mp, b);
    int out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (out < 0) {
        int e = errno;
        sl_errf(err, e == ENOSPC ? SL_ENOSPC : SL_EIO, "cannot create a work file on mountpath %s: %s", mp->path,
                strerror(e));
        free(path);
        return -1;
    }
    struct sl_cksum ck;
    bool check = md->cksum_type != SL_CK_NONE && md->cksum[0];
    if (check)
        sl_cksum_init(&ck, md->cksum_type);
    char *buf = sl_xmalloc(STORE_COPY_BUF);
    uint64_t off = 0;
    int rc = 0;
    while (off < md->size && rc == 0) {
        if (stop && *stop) {
            rc = sl_errf(err, SL_EUNAVAIL, "t[%s] is shutting down", G.id);
            break;
        }
        ssize_t r = pread(src, buf, (size_t)SL_MIN((uint64_t)STORE_COPY_BUF, md->size - off), (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = sl_errf(err, SL_EIO, "reading the object: %s", r < 0 ? strerror(errno) : "shorter than its metadata");
            break;
        }
        if (check)
            sl_cksum_update(&ck, buf, (size_t)r);
        for (ssize_t w = 0; w < r;) {
            ssize_t n = write(out, buf + w, (size_t)(r - w));
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                int e = errno;
                rc = sl_errf(err, e == ENOSPC || e == EDQUOT ? SL_ENOSPC : SL_EIO, "writing a copy on %s: %s",
                             mp->path, strerror(e));
                break;
            }
            w += n;
        }
        off += (uint64_t)r;
    }
    free(buf);
    if (check) {
        char got[SL_CKSUM_HEX_MAX];
        sl_cksum_final(&ck, got);
        if (rc == 0 && strcmp(got, md->cksum) != 0)
            rc = sl_errf(err, SL_ECKSUM, "BAD DATA CHECKSUM: stored %s(%s), data hashes to %s",
                         sl_cksum_name(md->cksum_type), md->cksum, got);
    }
    if (rc == 0 && sl_store_sync_data() && fsync(out) < 0)
        rc = sl_errf(err, SL_EIO, "fsync of a copy on %s: %s", mp->path, strerror(errno));
    close(out);
    if (rc == 0)
        sl_fault("mirror-before-rename");
    if (rc < 0) {
        unlink(path);
        free(path);
        return -1;
    }
    *work = path;
    return 0;
}

/* ---- the record beside a mirror copy ----
 * A copy's mountpath keeps the object's metadata too, in its aux DB under
 * "mc" + bid + sha256(name), so that the copy can become the main replica
 * when the main's mountpath is lost with its metadata (sl_store_promote).
 * Written once the copy file is in place, removed before the file goes:
 * a record never names a copy that is not complete. */
#define COPY_KEY 42
#define COPY_KEY_BCK 10 /* "mc" + bid: the prefix of a bucket's records */

void store_copy_key(uint64_t bid, const char *name, size_t nlen, unsigned char out[COPY_KEY])
{
    out[0] = 'm';
    out[1] = 'c';
    for (int i = 0; i < 8; i++)
        out[2 + i] = (unsigned char)(bid >> (56 - 8 * i));
    sl_sha256(name, nlen, out + COPY_KEY_BCK);
}

int sl_obj_copy_record(struct sl_mpath *cm, const struct sl_bck *b, const char *name, size_t nlen,
                       const struct sl_objmd *md, bool wait, struct sl_err *err)
{
    unsigned char k[COPY_KEY];
    store_copy_key(b->bid, name, nlen, k);
    struct sl_buf v;
    sl_buf_init(&v);
    sl_objmd_pack(md, name, nlen, &v);
    struct sl_md_op op = { .kind = SL_MD_PUT_AUX, .key = (const char *)k, .klen = sizeof(k), .val = v.p,
                           .vlen = v.len };
    int rc = sl_md_commit(cm->md, &op, 1, wait, err);
    sl_buf_free(&v);
    return rc;
}

/* The record beside the copy of b/name on mp: 1 (md the caller's), 0 none. */
static int copy_record_get(struct sl_mpath *mp, const struct sl_bck *b, const char *name, size_t nlen,
                           struct sl_objmd *md)
{
    unsigned char k[COPY_KEY];
    store_copy_key(b->bid, name, nlen, k);
    struct sl_buf v;
    sl_buf_init(&v);
    char *rn = NULL;
    size_t rl = 0;
    int rc = sl_md_aux_get(mp->md, (const char *)k, sizeof(k), &v) == 1 &&
             sl_objmd_unpack(v.p, v.len, &rn, &rl, md) == 0;
    if (rc && (rl != nlen || memcmp(rn, name, nlen) != 0)) { /* (another name with the same hash) */
        sl_objmd_free(md);
        rc = 0;
    }
    free(rn);
    sl_buf_free(&v);
    return rc;
}

/* Remove the record of b/name's copy on cm (wait: durable on return). */
static int copy_record_del(struct sl_mpath *cm, const struct sl_bck *b, const char *name, size_t nlen, bool wait,
                           struct sl_err *err)
{
    unsigned char k[COPY_KEY];
    store_copy_key(b->bid, name, nlen, k);
    struct sl_md_op op = { .kind = SL_MD_DEL_AUX, .key = (const char *)k, .klen = sizeof(k) };
    return sl_md_commit(cm->md, &op, 1, wait, err);
}

/* Remove a copy's file (its record gone first: a record never names a missing file for long). */
static void copy_file_unlink(const char *path)
{
    if (unlink(path) < 0 && errno != ENOENT)
        sl_logw("cannot remove mirror copy %s: %s", path, strerror(errno));
}

void sl_obj_copy_drop(struct sl_mpath *cm, const struct sl_bck *b, const char *name, size_t nlen)
{
    copy_record_del(cm, b, name, nlen, false, NULL); /* (a record left by a crash names no file: never promoted) */
    struct sl_buf f;
    sl_buf_init(&f);
    sl_obj_copy_fqn(&f, cm, b, name, nlen);
    copy_file_unlink(f.p);
    sl_buf_free(&f);
}

/* The copies' records say what md says now (its custom metadata changed). */
void store_copies_rerecord(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_objmd *md)
{
    for (int i = 0; i < md->ncopies; i++) {
        struct sl_mpath *cm = sl_store_mpath_by_digest(md->copies[i]);
        if (cm) /* (waited: after a crash a promotion never brings back what the change replaced) */
            sl_obj_copy_record(cm, b, name, nlen, md, true, NULL);
    }
}

/* Remove md's mirror copies, records and files (the metadata is the caller's). */
void store_unlink_copies(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_objmd *md)
{
    for (int i = 0; i < md->ncopies; i++) {
        struct sl_mpath *mp = sl_store_mpath_by_digest(md->copies[i]);
        if (mp)
            sl_obj_copy_drop(mp, b, name, nlen);
    }
}

/* ---- misplaced objects ----
 * After the mountpaths change (fspaths edited, restart), an object's file
 * and metadata stay on the mountpath HRW chose before until the resilver
 * job moves them (sl_store_move). Meanwhile reads that miss on the HRW
 * mountpath look on the others, and while a resilver is pending a write
 * removes what an older version left on another mountpath, so that it can
 * never come back. */

static volatile bool misplaced; /* a resilver is pending (the record in the node metadata) */

/* The mountpath other than hrw whose metadata has b/name (md filled: the
 * caller's), or NULL. */
static struct sl_mpath *find_misplaced(const struct sl_bck *b, const char *name, size_t nlen,
                                       const struct sl_mpath *hrw, struct sl_objmd *md)
{
    for (int i = 0; i < store_nmpaths; i++) {
        struct sl_err e;
        if (&store_mpaths[i] != hrw && sl_md_obj_get(store_mpaths[i].md, b->bid, name, nlen, md, &e) == 1)
            return &store_mpaths[i];
    }
    return NULL;
}

/* sl_md_obj_get on *mp (the HRW mountpath), then, on a miss, on the other
 * mountpaths: *mp becomes the one that has it. */
int store_md_get_any(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath **mp,
                     struct sl_objmd *md, struct sl_err *err)
{
    int rc = sl_md_obj_get((*mp)->md, b->bid, name, nlen, md, err);
    struct sl_mpath *o;
    if (rc == 0 && store_nmpaths > 1 && (o = find_misplaced(b, name, nlen, *mp, md)) != NULL) {
        *mp = o;
        rc = 1;
    }
    return rc;
}

bool sl_objmd_same(const struct sl_objmd *a, const struct sl_objmd *b)
{
    return a->mtime == b->mtime && a->size == b->size && !strcmp(a->cksum, b->cksum) && !strcmp(a->fname, b->fname);
}

/* Whether path is one of the files of live (its main on lmp, its copies). */
static bool live_file(const char *path, const struct sl_bck *b, const char *name, size_t nlen,
                      const struct sl_mpath *lmp, const struct sl_objmd *live)
{
    if (!live)
        return false;
    struct sl_buf f;
    sl_buf_init(&f);
    sl_obj_fqn(&f, lmp, b, name, nlen, live->fname);
    bool same = !strcmp(f.p, path);
    for (int i = 0; i < live->ncopies && !same; i++) {
        struct sl_mpath *cm = sl_store_mpath_by_digest(live->copies[i]);
        if (cm) {
            sl_obj_copy_fqn(&f, cm, b, name, nlen);
            same = !strcmp(f.p, path);
        }
    }
    sl_buf_free(&f);
    return same;
}

/* Remove the record of b/name on smp (md: what it says) and its files,
 * except those that belong to live (the record on lmp, NULL: none). The
 * caller holds the object's write lock. */
static void drop_stale(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath *smp,
                       const struct sl_objmd *md, const struct sl_mpath *lmp, const struct sl_objmd *live)
{
    struct sl_buf f;
    sl_buf_init(&f);
    sl_obj_fqn(&f, smp, b, name, nlen, md->fname);
    if (!live_file(f.p, b, name, nlen, lmp, live))
        unlink(f.p);
    for (int i = 0; i < md->ncopies; i++) {
        struct sl_mpath *cm = sl_store_mpath_by_digest(md->copies[i]);
        if (!cm)
            continue;
        sl_obj_copy_fqn(&f, cm, b, name, nlen);
        if (!live_file(f.p, b, name, nlen, lmp, live))
            sl_obj_copy_drop(cm, b, name, nlen);
    }
    sl_buf_free(&f);
    unsigned char ak[SL_OBJ_AUX_PREFIX];
    sl_obj_aux_prefix(b->bid, name, nlen, ak);
    struct sl_md_op ops[2] = {
        { .kind = SL_MD_DEL_OBJ, .bid = b->bid, .name = name, .nlen = nlen },
        { .kind = SL_MD_DEL_AUX_PREFIX, .key = (const char *)ak, .klen = sizeof(ak) },
    };
    struct sl_err e = { 0 };
    if (sl_md_commit(smp->md, ops, 2, true, &e) < 0)
        sl_logw("%s: cannot remove an older record of %s/%.*s: %s", smp->path, b->name, (int)SL_MIN(nlen, 200), name,
                e.msg);
}

/* While a resilver is pending: b/name was just written to (or deleted
 * from) lmp, whose record is live (NULL: none): what other mountpaths
 * still hold of an older version goes. Under the object's write lock. */
void store_drop_misplaced(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_mpath *lmp,
                          const struct sl_objmd *live)
{
    if (!misplaced || store_nmpaths < 2)
        return;
    for (int i = 0; i < store_nmpaths; i++) {
        struct sl_objmd md;
        struct sl_err e;
        if (&store_mpaths[i] == lmp || sl_md_obj_get(store_mpaths[i].md, b->bid, name, nlen, &md, &e) != 1)
            continue;
        drop_stale(b, name, nlen, &store_mpaths[i], &md, lmp, live);
        sl_objmd_free(&md);
    }
    store_drop_copy_records(b, name, nlen, lmp, live, false, NULL); /* (of a version whose main was lost, unpromoted) */
}

/* ---- resilver: the mountpaths of the last run, moving objects ----
 * The node metadata keeps the set of mountpaths the objects were placed on
 * ("mountpaths": {"paths": [...], "pending": bool}). A start with another
 * set, or a full fsck that finds misplaced files, marks a resilver pending
 * until one completes (sl_store_resilvered): a run cut short by a crash or
 * an abort is run again at the next start. */

#define MPATHS_DOC "mountpaths"

/* the mountpaths in placement (disabled ones take no object) */
static json_t *mpath_set(void)
{
    json_t *a = json_array();
    for (int i = 0; i < store_nmpaths; i++)
        if (sl_store_mpath_usable(&store_mpaths[i]))
            json_array_append_new(a, json_string(store_mpaths[i].path));
    size_t n = json_array_size(a);
    for (size_t i = 1; i < n; i++) /* sorted: the order of fspaths does not matter */
        for (size_t j = i; j > 0 && strcmp(json_string_value(json_array_get(a, j - 1)),
                                           json_string_value(json_array_get(a, j))) > 0; j--) {
            json_t *x = json_incref(json_array_get(a, j));
            json_array_set(a, j, json_array_get(a, j - 1));
            json_array_set_new(a, j - 1, x);
        }
    return a;
}

/* removed: mountpaths of earlier runs that are no longer configured (their
 * objects are moved off them while their directories can be read) */
static void resilver_record(bool pending, json_t *removed)
{
    json_t *d = json_pack("{s:o,s:b,s:o}", "paths", mpath_set(), "pending", pending, "removed",
                          removed ? removed : json_array());
    if (sl_node_save_doc(MPATHS_DOC, d) < 0)
        sl_logw("cannot record the mountpaths in the node metadata: a resilver may run again at the next start");
    json_decref(d);
}

/* what was removed before (and is not back), and what of was is gone now */
static json_t *removed_paths(const json_t *rec, const json_t *was)
{
    json_t *out = json_array(), *v;
    size_t i;
    const json_t *lists[2] = { json_object_get(rec, "removed"), was };
    for (int l = 0; l < 2; l++)
        json_array_foreach(lists[l], i, v) {
            const char *p = json_string_value(v);
            bool here = false;
            for (int m = 0; m < store_nmpaths && p; m++)
                here |= !strcmp(store_mpaths[m].path, p);
            size_t j;
            json_t *o;
            json_array_foreach(out, j, o)
                here |= json_equal(o, v);
            if (p && !here)
                json_array_append(out, v);
        }
    return out;
}

void store_resilver_check(int nmis)
{
    json_t *now = mpath_set(), *rec = sl_node_load_doc(MPATHS_DOC);
    json_t *was = json_object_get(rec, "paths");
    bool changed = was && !json_equal(was, now);
    /* a mountpath of the last run without its contents: its disk was replaced (or is not mounted), and
     * what it held is to be found in the mirror copies and slices elsewhere */
    int emptied = 0;
    for (int i = 0; i < store_nmpaths; i++) {
        struct sl_mpath *mp = &store_mpaths[i];
        size_t j;
        json_t *v;
        bool known = false;
        json_array_foreach(was, j, v)
            known |= !strcmp(json_string_value(v) ?: "", mp->path);
        if (!mp->fresh || !known)
            continue;
        mp->emptied = true;
        emptied++;
        sl_stats_add("mpath_emptied_n", 1);
        sl_logw("t[%s]: mountpath %s was one of this target's and has none of its contents now (no "
                ".shale/daemon_id: a replaced disk, or a filesystem not mounted there): resilver restores what it held "
                "from the mirror copies on the other mountpaths; erasure-coded objects are rebuilt from their slices "
                "when read. If the disk is only not mounted, stop the target, mount it and start it again",
                store_node, mp->path);
    }
    bool pending = json_is_true(json_object_get(rec, "pending")) || changed || nmis > 0 || emptied > 0;
    if (changed) {
        char *w = sl_json_dump(was, 0, NULL), *n = sl_json_dump(now, 0, NULL);
        sl_logi("t[%s]: the mountpaths changed since the last run (were %s, now %s): resilver moves the objects to "
                "their mountpaths", store_node, w, n);
        free(w);
        free(n);
    } else if (nmis) {
        sl_logi("t[%s]: fsck found %d object file(s) on a mountpath other than their own: resilver moves them",
                store_node, nmis);
    } else if (pending) {
        sl_logi("t[%s]: the last resilver did not complete: it runs again", store_node);
    }
    if (!rec || changed || nmis || emptied)
        resilver_record(pending, removed_paths(rec, was));
    misplaced = pending;
    json_decref(now);
    json_decref(rec);
}

void sl_store_resilver_mark(void)
{
    misplaced = true;
    resilver_record(true, sl_store_resilver_removed());
}

bool sl_store_resilver_pending(void)
{
    return misplaced;
}

void sl_store_resilvered(void)
{
    resilver_record(false, NULL);
    misplaced = false;
}

json_t *sl_store_resilver_removed(void)
{
    json_t *rec = sl_node_load_doc(MPATHS_DOC);
    json_t *r = json_incref(json_object_get(rec, "removed"));
    json_decref(rec);
    return r ? r : json_array();
}

struct sl_mpath *sl_store_detached_open(const char *path, struct sl_err *err)
{
    char *mdd = sl_xasprintf("%s/.shale/md", path);
    struct sl_mpath *mp = sl_xcalloc(1, sizeof(*mp));
    mp->path = store_clean_path(path);
    mp->digest = sl_xxh64(mp->path, strlen(mp->path), SL_MLCG32);
    mp->idx = -1;
    int rc = access(mdd, R_OK | W_OK) < 0 ? sl_errf(err, SL_ENOENT, "%s: %s", mdd, strerror(errno))
                                          : sl_md_open(mdd, SL_MD_SYNC, &mp->md, err);
    free(mdd);
    if (rc < 0) {
        free(mp->path);
        free(mp);
        return NULL;
    }
    return mp;
}

void sl_store_detached_close(struct sl_mpath *mp)
{
    if (!mp)
        return;
    sl_md_close(mp->md);
    free(mp->path);
    free(mp);
}

/* A file that may hold an object's bytes (md says which). */
struct replica {
    char *path;
    const struct sl_objmd *md;
};

/* Copy into a work file on dst from the first of reps[0..n) that is
 * intact: its index and *work, or -1 with err (SL_ENOOBJ: none of them has
 * a file left). */
static int work_from_first(const struct replica *reps, int n, struct sl_mpath *dst, const struct sl_bck *b,
                           char **work, struct sl_err *err)
{
    int nfiles = 0;
    for (int i = 0; i < n; i++) {
        int fd = open(reps[i].path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            if (errno != ENOENT) {
                sl_errf(err, SL_EIO, "cannot open %s: %s", reps[i].path, strerror(errno));
                nfiles++;
            }
            continue;
        }
        nfiles++;
        struct sl_err e = { 0 };
        int rc = sl_store_copy_work(fd, reps[i].md, dst, b, NULL, work, &e);
        close(fd);
        if (rc == 0)
            return i;
        *err = e;
        sl_err_wrap(err, "copying %s to %s", reps[i].path, dst->path);
        if (e.code != SL_ECKSUM && e.code != SL_EIO)
            return -1; /* out of space, shutting down: no other replica helps */
    }
    if (!nfiles)
        sl_errf(err, SL_ENOOBJ, "no replica has a file left");
    return -1;
}

static void replicas_free(struct replica *reps, int n)
{
    for (int i = 0; i < n; i++)
        free(reps[i].path);
    free(reps);
}

/* Copy md's bytes into a work file on dst from the first replica that is
 * intact (the main on src, else a mirror copy): 0 and *work, 1 when no
 * replica has a file left, -1 err. */
static int move_copy(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath *src,
                     const struct sl_objmd *md, struct sl_mpath *dst, char **work, struct sl_err *err)
{
    struct replica *reps = sl_xcalloc((size_t)md->ncopies + 1, sizeof(*reps));
    int n = 0;
    struct sl_buf f;
    sl_buf_init(&f);
    for (int i = -1; i < md->ncopies; i++) {
        struct sl_mpath *cm = i < 0 ? src : sl_store_mpath_by_digest(md->copies[i]);
        if (!cm)
            continue;
        if (i < 0)
            sl_obj_fqn(&f, cm, b, name, nlen, md->fname);
        else
            sl_obj_copy_fqn(&f, cm, b, name, nlen);
        reps[n].path = sl_xstrdup(f.p);
        reps[n++].md = md;
    }
    sl_buf_free(&f);
    struct sl_err e = { 0 };
    int rc = work_from_first(reps, n, dst, b, work, &e) >= 0 ? 0 : e.code == SL_ENOOBJ ? 1 : -1;
    if (rc < 0)
        *err = e;
    replicas_free(reps, n);
    return rc;
}

/* Publish the work file (on dst) as the main replica of b/name on dst,
 * described by nm, as a PUT does: metadata and a pending marker first, then
 * the rename, the directory fsynced (write_policy.data), the marker
 * dropped. There was no record of b/name on dst. 0, or -1 with err: the
 * metadata undone, or, when the directory fsync failed, the main in place
 * but maybe not durable (the caller keeps the replica it came from; the
 * marker stays, as a failed PUT's does). Under the object's write lock. */
static int install_main(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath *dst,
                        const struct sl_objmd *nm, const char *work, const char *fqn, bool new_dirs,
                        const char *fault, struct sl_err *err)
{
    const char *wrel = work + strlen(dst->path) + 1, *frel = fqn + strlen(dst->path) + 1;
    struct sl_md_op ops[2] = {
        { .kind = SL_MD_PUT_OBJ, .bid = b->bid, .name = name, .nlen = nlen, .md = nm },
        { .kind = SL_MD_PUT_PENDING, .key = wrel, .klen = strlen(wrel), .val = frel, .vlen = strlen(frel) },
    };
    if (sl_md_commit(dst->md, ops, 2, true, err) < 0)
        return -1;
    if (rename(work, fqn) < 0) {
        sl_errf(err, SL_EIO, "cannot move %s into place on %s: %s", fqn, dst->path, strerror(errno));
        ops[0].kind = SL_MD_DEL_OBJ;
        ops[1].kind = SL_MD_DEL_PENDING;
        sl_md_commit(dst->md, ops, 2, true, NULL);
        return -1;
    }
    sl_fault(fault);
    if (store_wp_data == SL_WP_IMMEDIATE && (new_dirs ? sl_fsync_parents(fqn, dst->path) : store_fsync_dir_of(fqn)) < 0)
        return sl_errf(err, SL_EIO, "fsync of the directory of %s on %s: %s; the replica it came from is kept", fqn,
                       dst->path, strerror(errno));
    ops[1].kind = SL_MD_DEL_PENDING;
    sl_md_commit(dst->md, &ops[1], 1, false, NULL);
    return 0;
}

/* Publish the copy (work, on dst) as b/name on its HRW mountpath dst and
 * remove the object from src, under its write lock, if it is still the
 * object md describes: 1 moved, 0 not (changed or gone meanwhile), -1 err.
 * As a PUT: metadata and a pending marker first, then the rename, so that
 * a crash leaves the object on src, or complete on dst (and the record on
 * src an older duplicate, which the next run removes). */
static int move_publish(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath *src,
                        const struct sl_objmd *md, struct sl_mpath *dst, const char *work, struct sl_err *err)
{
    char fname[72];
    bool new_dirs = false;
    struct sl_buf fqn;
    sl_buf_init(&fqn);
    if (store_place_fname(dst, b, name, nlen, fname, &fqn, &new_dirs) < 0) {
        sl_errf(err, SL_EIO, "cannot create directories for %s on %s: %s", name, dst->path, strerror(errno));
        sl_buf_free(&fqn);
        return -1;
    }
    pthread_rwlock_t *lk = store_name_lock(b, name, nlen);
    pthread_rwlock_wrlock(lk);
    struct sl_objmd cur, live;
    struct sl_err e2;
    int cr = sl_md_obj_get(src->md, b->bid, name, nlen, &cur, err);
    int lr = sl_md_obj_get(dst->md, b->bid, name, nlen, &live, &e2);
    int rc = 0;
    if (lr == 1) {
        if (cr == 1) /* written to its mountpath meanwhile: what src has is older */
            drop_stale(b, name, nlen, src, &cur, dst, &live);
    } else if (work && cr == 1 && sl_objmd_same(&cur, md)) {
        struct sl_objmd nm;
        sl_objmd_copy(&nm, &cur);
        snprintf(nm.fname, sizeof(nm.fname), "%s", fname);
        nm.ncopies = 0;
        for (int i = 0; i < cur.ncopies; i++)
            if (cur.copies[i] != dst->digest) /* (the main is there now) */
                nm.copies[nm.ncopies++] = cur.copies[i];
        if (install_main(b, name, nlen, dst, &nm, work, fqn.p, new_dirs, "resilver-after-rename", err) < 0) {
            rc = -1; /* (the object stays on src) */
        } else {
            drop_stale(b, name, nlen, src, &cur, dst, &nm);
            rc = 1;
        }
        sl_objmd_free(&nm);
    }
    pthread_rwlock_unlock(lk);
    if (cr == 1)
        sl_objmd_free(&cur);
    if (lr == 1)
        sl_objmd_free(&live);
    sl_buf_free(&fqn);
    return rc;
}

int sl_store_move(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath *src, uint64_t *bytes,
                  struct sl_err *err)
{
    struct sl_mpath *dst = sl_store_locate(b, name, nlen);
    if (!dst || dst == src)
        return 0;
    struct sl_objmd md;
    pthread_rwlock_t *lk = store_name_lock(b, name, nlen);
    pthread_rwlock_rdlock(lk);
    int rc = sl_md_obj_get(src->md, b->bid, name, nlen, &md, err);
    pthread_rwlock_unlock(lk);
    if (rc <= 0)
        return rc; /* gone meanwhile */
    char *work = NULL;
    struct sl_objmd live;
    if (sl_md_obj_get(dst->md, b->bid, name, nlen, &live, err) == 1) {
        sl_objmd_free(&live); /* an older duplicate: nothing to copy, the publish step drops it */
        rc = 0;
    } else
        rc = move_copy(b, name, nlen, src, &md, dst, &work, err);
    if (rc == 1) {
        /* no file left of it (a DELETE cut short by a crash): the record goes, as a read would drop it */
        sl_logw("resilver: %s/%.*s has metadata on %s but no file; removing the stale metadata", b->name,
                (int)SL_MIN(nlen, 200), name, src->path);
        pthread_rwlock_wrlock(lk);
        struct sl_objmd cur;
        if (sl_md_obj_get(src->md, b->bid, name, nlen, &cur, err) == 1) {
            if (sl_objmd_same(&cur, &md))
                drop_stale(b, name, nlen, src, &cur, NULL, NULL);
            sl_objmd_free(&cur);
        }
        pthread_rwlock_unlock(lk);
        rc = 0;
    } else if (rc == 0 && store_write_enter(b, false, err) < 0) {
        rc = -1;
    } else if (rc == 0) {
        rc = move_publish(b, name, nlen, src, &md, dst, work, err);
        store_write_leave(b->bid);
        if (rc == 1 && bytes)
            *bytes = md.size;
    }
    if (work) {
        unlink(work); /* (gone when published) */
        free(work);
    }
    sl_objmd_free(&md);
    return rc;
}

#define WALK_BATCH 1024

int sl_store_walk(struct sl_mpath *mp, const struct sl_bck *b, sl_store_pick_fn pick, sl_store_visit_fn fn,
                  void *arg, struct sl_err *err)
{
    char **names = sl_xcalloc(WALK_BATCH, sizeof(char *));
    size_t *lens = sl_xcalloc(WALK_BATCH, sizeof(size_t));
    char *after = NULL;
    size_t alen = 0;
    int rc = 0;
    for (bool stop = false; !stop;) {
        struct sl_md_iter *it;
        if (sl_md_iter_open(mp->md, b->bid, "", 0, after, alen, &it, err) < 0) {
            rc = -1;
            break;
        }
        int n = 0;
        while (n < WALK_BATCH && sl_md_iter_next(it) == 1) {
            size_t nl;
            const char *nm = sl_md_iter_name(it, &nl);
            if (pick && !pick(arg, sl_md_iter_md(it)))
                continue;
            names[n] = sl_xstrndup(nm, nl);
            lens[n++] = nl;
        }
        sl_md_iter_close(it);
        for (int i = 0; i < n; i++) {
            if (!stop && fn(arg, names[i], lens[i]))
                stop = true;
            if (i == n - 1) {
                free(after);
                after = names[i];
                alen = lens[i];
            } else {
                free(names[i]);
            }
        }
        if (n < WALK_BATCH)
            break;
    }
    free(after);
    free(names);
    free(lens);
    return rc;
}

/* ---- promoting a mirror copy ----
 * The mountpath of an object's main replica was lost with its metadata (a
 * dead disk removed from fspaths): what is left is the copies and the
 * records beside them. The newest intact copy becomes the main replica on
 * the object's HRW mountpath, the way a resilver moves an object. */

struct crec {
    struct sl_mpath *mp;
    struct sl_objmd md;
};

/* The same version of an object (the file name is the main's business). */
static bool same_version(const struct sl_objmd *a, const struct sl_objmd *b)
{
    return a->mtime == b->mtime && a->size == b->size && !strcmp(a->cksum, b->cksum);
}

/* Metadata of b/name on some mountpath (or unreadable: never promote then). */
static bool main_known(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath *hrw)
{
    struct sl_objmd md;
    struct sl_err e;
    int rc = store_md_get_any(b, name, nlen, &hrw, &md, &e);
    if (rc == 1)
        sl_objmd_free(&md);
    return rc != 0;
}

/* The records of b/name's copies on every mountpath, newest first: n of
 * recs[0..nmpaths), each md the caller's. */
static int crecs_get(const struct sl_bck *b, const char *name, size_t nlen, struct crec *recs)
{
    int n = 0;
    for (int i = 0; i < store_nmpaths; i++) {
        if (copy_record_get(&store_mpaths[i], b, name, nlen, &recs[n].md) != 1)
            continue;
        recs[n].mp = &store_mpaths[i];
        for (int j = n++; j > 0 && recs[j].md.mtime > recs[j - 1].md.mtime; j--) {
            struct crec t = recs[j];
            recs[j] = recs[j - 1];
            recs[j - 1] = t;
        }
    }
    return n;
}

/* Remove the copies of b/name (records, then files) that live, the record
 * on lmp, does not list (NULL: all; wait: each record's removal durable
 * before its file goes): how many there were, -1 err. A hashed name's main
 * file has the path of its copy on lmp: of that one only the record goes.
 * Under the object's write lock. */
int store_drop_copy_records(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_mpath *lmp,
                            const struct sl_objmd *live, bool wait, struct sl_err *err)
{
    int n = 0;
    struct sl_buf f;
    sl_buf_init(&f);
    for (int i = 0; i < store_nmpaths; i++) {
        struct sl_objmd md;
        bool listed = false;
        for (int j = 0; live && j < live->ncopies; j++)
            listed |= live->copies[j] == store_mpaths[i].digest;
        if (listed || copy_record_get(&store_mpaths[i], b, name, nlen, &md) != 1)
            continue;
        sl_objmd_free(&md);
        if (copy_record_del(&store_mpaths[i], b, name, nlen, wait, err) < 0) {
            n = -1;
            break;
        }
        sl_obj_copy_fqn(&f, &store_mpaths[i], b, name, nlen);
        if (!live_file(f.p, b, name, nlen, lmp, live))
            copy_file_unlink(f.p);
        n++;
    }
    sl_buf_free(&f);
    return n;
}

/* While a resilver is pending, a read that finds no metadata of b/name
 * anywhere looks for a copy's record: 1 (md and *mp, the record and its
 * mountpath) or 0. */
int store_orphan_copy(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath **mp,
                      struct sl_objmd *md)
{
    for (int i = 0; misplaced && i < store_nmpaths; i++)
        if (copy_record_get(&store_mpaths[i], b, name, nlen, md) == 1) {
            *mp = &store_mpaths[i];
            int k = 0; /* (this copy stands for the main: the others are its copies) */
            for (int j = 0; j < md->ncopies; j++)
                if (md->copies[j] != store_mpaths[i].digest)
                    md->copies[k++] = md->copies[j];
            md->ncopies = k;
            return 1;
        }
    return 0;
}

/* Under the object's write lock, if b/name still has no metadata and the
 * record of recs[src] is unchanged: publish work as its main replica on
 * dst (install_main), listing as copies the others of the same version;
 * the rest of the copies go (and all of them when src < 0: records
 * without files). 1 promoted, 0 not (settled meanwhile), -1 err. */
static int promote_publish(const struct sl_bck *b, const char *name, size_t nlen, const struct crec *recs, int n,
                           int src, struct sl_mpath *dst, const char *work, uint64_t *ncopies, struct sl_err *err)
{
    char fname[72];
    bool new_dirs = false;
    struct sl_buf fqn;
    sl_buf_init(&fqn);
    if (src >= 0 && store_place_fname(dst, b, name, nlen, fname, &fqn, &new_dirs) < 0) {
        sl_errf(err, SL_EIO, "cannot create directories for %s on %s: %s", name, dst->path, strerror(errno));
        sl_buf_free(&fqn);
        return -1;
    }
    pthread_rwlock_t *lk = store_name_lock(b, name, nlen);
    pthread_rwlock_wrlock(lk);
    struct sl_objmd cur;
    int rc = 0;
    if (main_known(b, name, nlen, dst)) {
        rc = 0; /* written, or promoted by a read, meanwhile */
    } else if (src < 0) {
        store_drop_copy_records(b, name, nlen, NULL, NULL, false, NULL);
    } else if (copy_record_get(recs[src].mp, b, name, nlen, &cur) == 1) {
        struct sl_objmd nm = cur;
        snprintf(nm.fname, sizeof(nm.fname), "%s", fname);
        nm.ncopies = 0;
        struct sl_buf f;
        sl_buf_init(&f);
        for (int i = 0; i < n; i++) {
            struct stat st;
            sl_obj_copy_fqn(&f, recs[i].mp, b, name, nlen);
            if (recs[i].mp != dst && same_version(&recs[i].md, &cur) && stat(f.p, &st) == 0 &&
                (uint64_t)st.st_size == cur.size && nm.ncopies < SL_OBJ_MAX_COPIES)
                nm.copies[nm.ncopies++] = recs[i].mp->digest;
        }
        sl_buf_free(&f);
        if (!same_version(&cur, &recs[src].md)) {
            rc = 0; /* (changed meanwhile: the next run sees the new one) */
        } else if (install_main(b, name, nlen, dst, &nm, work, fqn.p, new_dirs, "promote-after-rename", err) < 0) {
            rc = -1;
        } else {
            /* (the one on dst, if any, and older versions) */
            store_drop_copy_records(b, name, nlen, dst, &nm, false, NULL);
            store_copies_rerecord(b, name, nlen, &nm);
            *ncopies = (uint64_t)nm.ncopies;
            rc = 1;
        }
        sl_objmd_free(&cur);
    }
    pthread_rwlock_unlock(lk);
    sl_buf_free(&fqn);
    return rc;
}

int sl_store_promote(const struct sl_bck *b, const char *name, size_t nlen, uint64_t *bytes, struct sl_err *err)
{
    struct sl_mpath *dst = sl_store_locate(b, name, nlen);
    if (!dst)
        return 0;
    struct crec *recs = sl_xcalloc(SL_MAX_MPATHS, sizeof(*recs)); /* (a mountpath may be attached meanwhile) */
    pthread_rwlock_t *lk = store_name_lock(b, name, nlen);
    pthread_rwlock_rdlock(lk);
    int n = main_known(b, name, nlen, dst) ? 0 : crecs_get(b, name, nlen, recs);
    pthread_rwlock_unlock(lk);
    struct replica *reps = sl_xcalloc((size_t)n + 1, sizeof(*reps));
    struct sl_buf f;
    sl_buf_init(&f);
    for (int i = 0; i < n; i++) {
        sl_obj_copy_fqn(&f, recs[i].mp, b, name, nlen);
        reps[i].path = sl_xstrdup(f.p);
        reps[i].md = &recs[i].md;
    }
    sl_buf_free(&f);
    char *work = NULL;
    struct sl_err e = { 0 };
    int src = n ? work_from_first(reps, n, dst, b, &work, &e) : -1, rc = 0;
    uint64_t nc = 0;
    if (src < 0 && n && e.code != SL_ENOOBJ) {
        *err = e;
        rc = -1;
    } else if (n && store_write_enter(b, false, err) < 0) {
        rc = -1;
    } else if (n) {
        /* src < 0: records whose files are gone (a DELETE cut short): they go */
        rc = promote_publish(b, name, nlen, recs, n, src, dst, work, &nc, err);
        store_write_leave(b->bid);
    }
    if (rc == 1) {
        char cn[400];
        sl_obj_cname(cn, sizeof(cn), b, name, nlen);
        sl_logw("%s: no metadata of it is left (its main replica's mountpath is gone): the mirror copy on %s is "
                "its main replica on %s now, with %llu other cop%s", cn, recs[src].mp->path, dst->path,
                (unsigned long long)nc, nc == 1 ? "y" : "ies");
        sl_stats_add("mirror_promote_n", 1);
        if (bytes)
            *bytes = recs[src].md.size;
    }
    if (work) {
        unlink(work); /* (gone when published) */
        free(work);
    }
    replicas_free(reps, n);
    for (int i = 0; i < n; i++)
        sl_objmd_free(&recs[i].md);
    free(recs);
    if (rc == 1) /* the mirror makes up the copies it had (when fewer than the bucket wants) */
        store_after_put(b, name, nlen, SL_STORE_RESTORED);
    return rc;
}

struct cwalk {
    char **names;
    size_t *lens;
    int n;
    unsigned char last[COPY_KEY + 1];
};

static int cwalk_cb(void *arg, const char *key, size_t klen, const char *val, size_t vlen)
{
    struct cwalk *w = arg;
    if (w->n >= WALK_BATCH)
        return 1;
    if (klen == COPY_KEY)
        memcpy(w->last, key, COPY_KEY);
    struct sl_objmd md;
    if (sl_objmd_unpack(val, vlen, &w->names[w->n], &w->lens[w->n], &md) == 0) {
        sl_objmd_free(&md);
        w->n++;
    }
    return 0;
}

int sl_store_walk_copies(struct sl_mpath *mp, const struct sl_bck *b, sl_store_visit_fn fn, void *arg,
                         struct sl_err *err)
{
    struct cwalk w = { .names = sl_xcalloc(WALK_BATCH, sizeof(char *)),
                       .lens = sl_xcalloc(WALK_BATCH, sizeof(size_t)) };
    unsigned char pfx[COPY_KEY];
    store_copy_key(b->bid, "", 0, pfx);
    size_t flen = 0;
    int rc = 0;
    for (bool stop = false; !stop;) {
        w.n = 0;
        if (sl_md_aux_foreach_from(mp->md, (const char *)pfx, COPY_KEY_BCK, (const char *)w.last, flen, cwalk_cb,
                                   &w) < 0) {
            rc = sl_errf(err, SL_EIO, "cannot read the mirror copies' records on %s", mp->path);
            break;
        }
        for (int i = 0; i < w.n; i++) {
            if (!stop && fn(arg, w.names[i], w.lens[i]))
                stop = true;
            free(w.names[i]);
        }
        if (w.n < WALK_BATCH)
            break;
        w.last[COPY_KEY] = 0; /* the next key after the last one seen */
        flen = COPY_KEY + 1;
    }
    free(w.names);
    free(w.lens);
    return rc;
}
