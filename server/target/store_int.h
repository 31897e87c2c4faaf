/* SPDX-License-Identifier: MIT
 * store_int.h: what the files of the object store share. Included only by
 * server/target/store*.c; everyone else has store.h, the store's contract.
 *
 * The files, each calling only into those listed above it (no call cycle):
 *   store.c        mountpaths (init, placement, close), objects' names and
 *                  files, name locks, the write gate, the directory cache,
 *                  hooks, side-data keys, last reads, temporary files
 *   store_move.c   the copy of an object to a work file, mirror-copy
 *                  records, misplaced objects and the resilver record,
 *                  sl_store_move and the walks, promotion of a copy
 *   store_put.c    PUT, its commit, the batch commit
 *   store_obj.c    reads, deletes, custom metadata, edits, bucket removal
 *   store_fsck.c   the start-up reconcile
 *
 * Threads:
 *   - store_mpaths, store_nmpaths, store_node and store_wp_data are
 *     written by sl_store_init and sl_store_close only (start-up and
 *     shutdown, while no other thread uses the store) and read by any
 *     thread without a lock; except that sl_store_mpath_admin (under its
 *     mutex) fills the slot store_mpaths[store_nmpaths] (SL_MAX_MPATHS
 *     slots, allocated once: never moved) and then publishes it by
 *     incrementing store_nmpaths (release), and flips a slot's disabled,
 *     detaching and detached flags (atomic). A slot is never freed before
 *     sl_store_close: a detached one keeps its path and LMDB environment.
 *   - An object's name lock (store_name_lock) covers its file and its
 *     metadata together: read-locked for a consistent read, write-locked to
 *     change either. "Under the object's write lock" means the caller holds
 *     it. Several are taken at once only through store_lock_all (in address
 *     order); nothing below takes one while holding another.
 *   - Any thread may call the rest. store_obj_open_rd uses the calling
 *     thread's own directory cache; store_dc_invalidate tells every thread
 *     to let its cache go. store_after_put runs the hooks on the calling
 *     thread; store_restore_main (a hook) and sl_store_promote do I/O and
 *     take the object's write lock, so the caller holds no name lock.
 */
#ifndef SL_STORE_INT_H
#define SL_STORE_INT_H

#include "store.h"

/* ---- store.c ---- */

extern struct sl_mpath *store_mpaths; /* [store_nmpaths], in fspaths order */
extern int store_nmpaths;
extern char store_node[48];           /* this node's id, for messages */
extern int store_wp_data;             /* write_policy.data (SL_WP_*) */

/* The write gate: 0 and a write of b counted (store_write_leave ends it),
 * or -1 with err (SL_EBUSY: sealed or being renamed). */
int store_write_enter(const struct sl_bck *b, bool rename_copy, struct sl_err *err);
void store_write_leave(uint64_t bid);

pthread_rwlock_t *store_name_lock(const struct sl_bck *b, const char *name, size_t nlen);
int store_lock_all(pthread_rwlock_t **lks, int k);
void store_unlock_all(pthread_rwlock_t **lks, int u);

char *store_clean_path(const char *p);
/* ".x" + hex sha256(name): the file name of a hashed name, of a mirror copy */
void store_hashed_fname(const char *name, size_t nlen, char out[72]);
/* "MPATH/@PROVIDER/BUCKET/" + ct */
void store_bdir(struct sl_buf *out, const struct sl_mpath *mp, const struct sl_bck *b, const char *ct);
int store_place_fname(struct sl_mpath *mp, const struct sl_bck *b, const char *name, size_t nlen, char fname[72],
                      struct sl_buf *fqn, bool *new_dirs);
int store_fsync_dir_of(const char *path);
int store_obj_open_rd(const struct sl_mpath *mp, const struct sl_bck *b, const char *name, size_t nlen,
                      const char *fname, struct sl_buf *fqn);
void store_dc_invalidate(void);

void store_after_put(const struct sl_bck *b, const char *name, size_t nlen, int why);
int store_restore_main(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err);

/* ---- store_move.c ---- */

/* The key of the record beside a mirror copy: "mc" + bid + sha256(name) */
#define COPY_KEY 42
#define COPY_KEY_BCK 10 /* "mc" + bid: the prefix of a bucket's records */
void store_copy_key(uint64_t bid, const char *name, size_t nlen, unsigned char out[COPY_KEY]);
void store_copies_rerecord(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_objmd *md);
void store_unlink_copies(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_objmd *md);

/* sl_md_obj_get on *mp, then (a miss) on the other mountpaths */
int store_md_get_any(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath **mp,
                     struct sl_objmd *md, struct sl_err *err);
/* Under the object's write lock: */
void store_drop_misplaced(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_mpath *lmp,
                          const struct sl_objmd *live);
int store_drop_copy_records(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_mpath *lmp,
                            const struct sl_objmd *live, bool wait, struct sl_err *err);
int store_orphan_copy(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath **mp,
                      struct sl_objmd *md);
/* ---- store_obj.c ---- */
/* One object's part of a delete, under its name lock (copies and file gone,
 * ops[2] to commit on *mp): 0, 1 kept, 2 deleted already, -1 err. */
int store_delete_files(struct sl_mpath **mp, const struct sl_bck *b, const char *name, size_t nlen,
                       const int64_t *want_mtime, struct sl_md_op ops[2], unsigned char ak[SL_OBJ_AUX_PREFIX],
                       struct sl_err *err);

/* ---- store_ver.c: a PUT's part in S3 versioning (under the key's write lock) ---- */
struct store_ver {
    int mode;                       /* SL_S3VER_* of the write */
    const char *key;                /* the object's key (the PUT's name, or a delete marker's key) */
    size_t klen;
    bool marker;                    /* the PUT is a delete marker: the current object goes */
    int had;                        /* (marker) the current object: cur */
    struct sl_objmd cur;
    struct sl_buf kfqn;             /* the current object's file */
    bool linked;                    /* archived: aname, its file afqn (a hard link, awork until committed), amd */
    struct sl_buf aname, afqn;
    char *awork;
    struct sl_objmd amd;
    char *nname;                    /* an older null version dropped (suspended) */
    size_t nnlen;
    unsigned char nak[SL_OBJ_AUX_PREFIX], kak[SL_OBJ_AUX_PREFIX];
    struct sl_md_op ops[7];         /* to commit with the PUT's */
    int nops;
};
/* Before the PUT's commit: old (had == 1) is what is at name on mp. A
 * delete marker with if_mtime (opts) is refused without a current object
 * (SL_ENOOBJ) and, when > 0, unless it has that mtime (SL_EEXIST). */
int store_ver_prepare(struct store_ver *v, struct sl_mpath *mp, const struct sl_bck *b, const char *name,
                      size_t nlen, int mode, int had, const struct sl_objmd *old, int64_t if_mtime,
                      struct sl_err *err);
/* The PUT failed (committed: after its commit) */
void store_ver_undo(struct store_ver *v, struct sl_mpath *mp, const struct sl_bck *b, bool committed);
/* Committed and renamed, still under the lock / after the unlock */
void store_ver_done(struct store_ver *v, struct sl_mpath *mp);
void store_ver_published(struct store_ver *v, const struct sl_bck *b);
void store_ver_free(struct store_ver *v);
/* md without a version id: the null version */
void store_ver_null_md(struct sl_objmd *md);

/* After the start-up reconcile (nmis: the misplaced files it found): is a
 * resilver pending? */
void store_resilver_check(int nmis);

#endif
