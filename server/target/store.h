/* SPDX-License-Identifier: MIT
 * store.h: a target's object storage: mountpaths, placement inside the
 * target (spec §13.3), AIStore's on-disk layout, crash-safe PUT, GET/HEAD,
 * DELETE, custom metadata, and the startup reconcile of files and metadata.
 *
 * On-disk: <mpath>/@ais/<bucket>/%ob/<name>   objects (@aws/ for s3:// buckets)
 *          <mpath>/@ais/<bucket>/%wk/<tmp>    work files of PUTs in flight
 *          <mpath>/.shale/md/                 LMDB object metadata
 *          <mpath>/.shale/mpu/<id>/           a multipart upload in flight (upload.c: it outlives a
 *                                             restart; fsck leaves it to sl_mpt_recover)
 *
 * PUT protocol (a crash at any point leaves the old or the new object):
 *   1. stream into a work file while checksumming; fsync per write_policy.data
 *   2. under the object's name lock, commit in one LMDB transaction the new
 *      metadata and a "pending" marker (work file -> final path)
 *   3. rename the work file onto the final path; drop the marker (lazily)
 * On start, every marker whose work file still exists is renamed into place
 * (the metadata already describes it) and every other work file is removed.
 */
#ifndef SL_STORE_H
#define SL_STORE_H

#include "sl.h"
#include "md.h"
#include "meta.h"
#include "conf.h"

#include <pthread.h>

struct sl_mpath {
    char *path;
    uint64_t digest;
    struct sl_md_env *md;
    int idx;
    bool fresh;                  /* it had no .shale/daemon_id at start: new, or its contents vanished */
    bool emptied;                /* a mountpath of the last run found without its contents (a replaced disk) */
    bool vanished;               /* its .shale/daemon_id went away while this target runs */
    /* set at run time by sl_store_mpath_admin (atomic loads): */
    bool disabled;               /* out of HRW placement (disabled, or being detached): its objects are moved off */
    bool detaching;              /* detach: forgotten once a resilver moved everything off it */
    bool detached;               /* forgotten: in no placement, walk or listing (the slot stays: pointers live on) */
};

/* At most this many mountpaths (slots: a detached one keeps its slot until the target restarts) */
#define SL_MAX_MPATHS 64

/* The mountpaths and their LMDB environments: every struct sl_mpath and
 * md env handed out below is owned by the store and valid until
 * sl_store_close. */
int sl_store_init(const struct sl_config *c, const char *node_id, struct sl_err *err);
/* Reconcile files and metadata (after BMD is known). mode: "quick"/"full"/"auto" */
int sl_store_fsck(const char *mode);
void sl_store_close(bool clean);
/* Slots [0, n): attached ones are added at the end at run time. A slot may
 * be disabled (still read and walked: its objects are there until moved)
 * or detached (skip it: sl_store_mpath_gone). */
int sl_store_nmpaths(void);
struct sl_mpath *sl_store_mpath(int i);      /* NULL when out of range */
/* In HRW placement (new objects and mirror copies go there) */
bool sl_store_mpath_usable(const struct sl_mpath *mp);
/* Detached: nothing of this target is there any more */
bool sl_store_mpath_gone(const struct sl_mpath *mp);

/* ---- mountpath admin (AIStore's attach-mp, enable-mp, disable-mp, detach-mp) ----
 * action "attach", "enable", "disable" or "detach" of path, persisted in the
 * node metadata (doc "mpath_admin": a restart keeps it). 1 changed (a
 * resilver is due: sl_store_resilver_mark, sl_store_mpath_drain, then start
 * it), 0 nothing to do
 * (already so), -1 with err (4xx: nothing changed). Does I/O (an attach
 * opens the LMDB environment): off the HTTP threads. */
int sl_store_mpath_admin(const char *action, const char *path, struct sl_err *err);
/* Wait (up to timeout_ns) for the writes that chose their mountpath before
 * the last change to end: 0, or -1 when some were still going. */
int sl_store_mpath_drain(int64_t timeout_ns);
/* mp (detaching) holds nothing any more: forget it (persisted). */
void sl_store_mpath_forget(struct sl_mpath *mp);
/* A PUT's placement: enter before sl_store_pick, leave when its commit or
 * abort is done (the token that enter returned). */
unsigned sl_store_place_enter(void);
void sl_store_place_leave(unsigned token);
/* An anonymous temporary file (O_TMPFILE, else mkstemp + unlink) under
 * <mpath>/.shale/tmp, taking the mountpaths in turn: gone when closed. */
int sl_store_tmpfd(struct sl_err *err);
/* HRW mountpath for an object uname */
struct sl_mpath *sl_store_pick(const char *uname, size_t ulen);
/* The HRW mountpath of b/name (NULL without mountpaths). */
struct sl_mpath *sl_store_locate(const struct sl_bck *b, const char *name, size_t nlen);
/* capacity across mountpaths (distinct filesystems counted once) */
void sl_store_capacity(uint64_t *used, uint64_t *total);

/* Validate an object name: non-empty, <= 1 KiB, valid UTF-8, no NUL, no "."
 * or ".." segments. */
int sl_objname_check(const char *name, size_t nlen, struct sl_err *err);

/* "ais://bucket/name" for messages (name truncated if huge) */
void sl_obj_cname(char *out, size_t sz, const struct sl_bck *b, const char *name, size_t nlen);

struct sl_put_opts {
    int client_cktype;            /* -1: none given */
    const char *client_ckval;
    const struct sl_kv *custom;   /* to set on the new object */
    int ncustom;
    int64_t expect_size;          /* -1 unknown */
    const struct sl_objmd *preserve;   /* keep version/atime/custom (rebalance, copy) */
    bool keep_custom;             /* merge custom metadata of the object being replaced */
    bool rename_copy;             /* the copy of a bucket rename (move-bck) into its new name, which takes no
                                   * other writes until the rename ends */
    bool move;                    /* it carries an object that exists already, unchanged (rebalance, EC
                                   * rebuild, a rename's copy): stored as it is. Any other write of a bucket
                                   * with S3 versioning is a new version, the object it replaces archived
                                   * ("S3 versions" below): the bucket's mode, taken here */
    int64_t if_mtime;             /* a delete marker's: 0 made in any case, -1 only over a current object
                                   * (else SL_ENOOBJ), > 0 only while the current object has this mtime
                                   * (unix ns; else SL_EEXIST); nothing changed when refused */
    /* a multipart upload's work file, which outlives a restart: work_rel
     * (relative to work_mp's path, parents made) is opened, and created
     * when missing, instead of a new file under %wk (upload.c) */
    const char *work_rel;
    struct sl_mpath *work_mp;
};

/* *out is new; sl_put_commit or sl_put_abort frees it (commit in every
 * case). b, name and everything in o are copied. On error *out is untouched
 * and nothing is left to free. */
struct sl_put;
int sl_put_begin(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_put_opts *o,
                 struct sl_put **out, struct sl_err *err);
int sl_put_write(struct sl_put *p, const void *data, size_t n, struct sl_err *err);
/* Validate, make durable, publish, and free p (also on failure). out
 * (optional) receives the new metadata on success (sl_objmd_free). */
int sl_put_commit(struct sl_put *p, struct sl_objmd *out, struct sl_err *err);
void sl_put_abort(struct sl_put *p);          /* removes the work file, frees p; NULL ok */
/* sl_put_commit of n PUTs at once, for many small objects (a rebalance's
 * batch): far fewer syncs than n commits (one syncfs per filesystem for the
 * data and one for the renames, one LMDB transaction per mountpath), the
 * same durability for each object that succeeds. With keep_existing an
 * object already stored under the name (checked under its name lock) is
 * kept and the new one dropped. rc[i]: 0 stored, 1 kept, -1 failed
 * (errs[i] says why). Frees every ps[i]. */
void sl_put_commit_batch(struct sl_put **ps, int n, bool keep_existing, int *rc, struct sl_err *errs);
uint64_t sl_put_size(const struct sl_put *p);
/* The mountpath the work file is on */
struct sl_mpath *sl_put_mpath(const struct sl_put *p);
/* Set (or replace) a custom key of the object before commit: what is
 * known only once the body is in (an S3 PUT's MD5 ETag). */
void sl_put_set_custom(struct sl_put *p, const char *k, const char *v);
/* The object is the n parts (the largest max bytes) of a multipart upload:
 * recorded with it (sl_objmd nchunks, chunk_max). */
void sl_put_set_chunks(struct sl_put *p, uint32_t n, uint64_t max);
/* The S3 versioning mode of the write (SL_S3VER_*; sl_put_begin takes the
 * bucket's), set before commit (a multipart upload's, by the bucket then) */
void sl_put_set_s3ver(struct sl_put *p, int mode);
/* Work file of an in-flight PUT (for writers that need to seek or read
 * back: it is open read-write). The fd belongs to p (do not close it)
 * until commit or abort. */
int sl_put_fd(struct sl_put *p);   /* flushes what is buffered first */
/* The work file was written through sl_put_fd (pwrite at offsets, as
 * multipart parts are) and holds size bytes from 0: cut it there and
 * compute its checksums by reading it, instead of sl_put_write. */
int sl_put_adopt(struct sl_put *p, uint64_t size, struct sl_err *err);
/* The same without reading the file back: the caller fed every byte of
 * [0, size), in order, to sl_put_sum (which sl_put_write does not need). */
void sl_put_sum(struct sl_put *p, const void *data, size_t n);
int sl_put_adopt_summed(struct sl_put *p, uint64_t size, struct sl_err *err);

/* Open an object for reading. On success *fd is the caller's to close and
 * md the caller's to sl_objmd_free; *mp (optional) is the object's
 * mountpath. On error there is nothing to close or free. */
int sl_obj_open(const struct sl_bck *b, const char *name, size_t nlen, int *fd, struct sl_objmd *md,
                struct sl_mpath **mp, struct sl_err *err);
/* sl_obj_open with flags. An object of a mirrored bucket whose main replica
 * is missing, has the wrong size, or (SL_OPEN_VALIDATE) fails its checksum
 * is restored from a healthy copy (the restore hook) and then opened;
 * with SL_OPEN_DEFER nothing is repaired and 1 is returned instead (nothing
 * to close or free): the caller repairs off its thread. Objects without
 * copies are opened as sl_obj_open does (0 / -1). */
#define SL_OPEN_VALIDATE 1
#define SL_OPEN_DEFER 2
int sl_obj_open_ex(const struct sl_bck *b, const char *name, size_t nlen, unsigned flags, int *fd,
                   struct sl_objmd *md, struct sl_mpath **mp, struct sl_err *err);
/* Metadata only; 1 found (md the caller's to sl_objmd_free), 0 not found
 * (err set), -1 error */
int sl_obj_stat(const struct sl_bck *b, const char *name, size_t nlen, struct sl_objmd *md, struct sl_mpath **mp,
                struct sl_err *err);
int sl_obj_delete(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err);
/* sl_obj_delete of n objects of b at once, with one LMDB transaction per
 * mountpath instead of one each (a rebalance letting go of a batch); with
 * mtimes, each only if last written at mtimes[i] (as sl_obj_delete_if):
 * rc[i] 0 deleted, 1 kept (written again since), -1 failed (errs[i];
 * SL_ENOOBJ: it was not there). */
void sl_obj_delete_batch(const struct sl_bck *b, char *const *names, const size_t *nlens, const int64_t *mtimes,
                         int n, int *rc, struct sl_err *errs);
/* The same, only if the object was last written at mtime: 0 deleted, 1
 * kept (written again since), -1 err. */
int sl_obj_delete_if(const struct sl_bck *b, const char *name, size_t nlen, int64_t mtime, struct sl_err *err);
/* Merge (or replace) custom metadata. */
/* The custom metadata key under which a damaged object (one nothing here
 * can make again) is recorded: its value says what was found and when. */
#define SL_DAMAGED_KEY "shale-damaged"
/* Record b/name as damaged (why) if it is still the version last written at
 * mtime and not recorded yet: 0 recorded, 1 not (changed, or recorded
 * already), -1 with err. The mtime and version stay. */
int sl_obj_mark_damaged(const struct sl_bck *b, const char *name, size_t nlen, int64_t mtime, const char *why,
                        struct sl_err *err);
int sl_obj_set_custom(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_kv *kv, int n,
                      bool replace, struct sl_err *err);
/* Replace the custom keys that start with prefix (one namespace, such as
 * S3's tags "s3.tag.") by kv[0..n), the others kept, in one step under the
 * object's write lock. */
int sl_obj_set_custom_ns(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_kv *kv, int n,
                         const char *prefix, struct sl_err *err);

/* In-place edit of an existing object (true append to a tar shard), under
 * the object's write lock from begin to commit/abort. A crash in between is
 * undone at start-up from the marker set by sl_obj_edit_mark: the file is
 * truncated to its old size and the overwritten range [off, old size) is
 * zeroed again (an end-of-archive marker), so the old object remains.
 * A successful begin fills e with the lock, an O_RDWR fd and copies of b and
 * name; commit (whatever it returns) or abort releases all of it and leaves
 * e empty. A failed begin leaves nothing to release. */
struct sl_obj_edit {
    struct sl_bck b;
    char *name;
    size_t nlen;
    struct sl_mpath *mp;
    void *lk;
    struct sl_objmd md;
    char *fqn;
    char *mark;          /* pending-marker key, set by sl_obj_edit_mark */
    int fd;              /* O_RDWR */
};
int sl_obj_edit_begin(const struct sl_bck *b, const char *name, size_t nlen, struct sl_obj_edit *e,
                      struct sl_err *err);
int sl_obj_edit_mark(struct sl_obj_edit *e, int64_t off, int64_t orig_size, struct sl_err *err);
/* fsync per policy, recompute the checksum over the whole file, bump the
 * version, commit the metadata, drop the marker, unlock. */
int sl_obj_edit_commit(struct sl_obj_edit *e, struct sl_err *err);
void sl_obj_edit_abort(struct sl_obj_edit *e);

/* Aux-key prefix of an object's side data (shard index): "ix" + bid + 16
 * bytes of sha256(name); SL_OBJ_AUX_PREFIX bytes. */
#define SL_OBJ_AUX_PREFIX 26
void sl_obj_aux_prefix(uint64_t bid, const char *name, size_t nlen, unsigned char out[SL_OBJ_AUX_PREFIX]);
/* Aux-key prefix of bucket bid's inventory (inv.h): "nb" + bid for its
 * names (tag 'b'), "nM" + bid for its metadata (tag 'M'); dropped with the
 * bucket. */
#define SL_INV_KEY_BCK 10
void sl_inv_key_bck(char out[SL_INV_KEY_BCK], char tag, uint64_t bid);
/* Drop bucket bid's inventory records from env (waited). */
int sl_inv_drop(struct sl_md_env *env, uint64_t bid, struct sl_err *err);
/* The LMDB environment holding an object's metadata (its mountpath's;
 * NULL without mountpaths). */
struct sl_md_env *sl_obj_md_env(const struct sl_bck *b, const char *name, size_t nlen);

/* Remove a bucket's data and metadata from every mountpath. */
int sl_store_destroy_bucket(const struct sl_bck *b, struct sl_err *err);
/* Seal (or unseal) bucket bid: every write to it is refused (409) before
 * it starts. Drain seals it and waits until the writes already started are
 * done (0), or timeout_ns passes (-1). For renames. */
/* A GET read the object now / when it was last read (0: not since start,
 * or never); approximate, see store.c. For LRU. */
void sl_store_touch(uint64_t bid, const char *name, size_t nlen);
int64_t sl_store_last_read(uint64_t bid, const char *name, size_t nlen);
/* Bytes used and in total on the filesystem of mountpath i; -1 if unknown. */
int sl_store_mpath_usage(int i, uint64_t *used, uint64_t *total);
/* Whether each mountpath still has its .shale/daemon_id (a stat each):
 * one that lost it while the target runs (its disk went, or another was
 * mounted over it) is flagged vanished, logged and counted once. The number
 * flagged so. Off the HTTP threads. */
int sl_store_mpath_check(void);
/* "ok", "emptied" (found without its contents at start: resilvered),
 * "vanished" (see above), "disabled", "detaching" or "detached". */
const char *sl_store_mpath_state(const struct sl_mpath *mp);
void sl_store_seal(uint64_t bid, bool on);
int sl_store_drain(uint64_t bid, int64_t timeout_ns, struct sl_err *err);

/* ---- what the layers above hang on the store ----
 * The store knows neither mirroring, nor erasure coding, nor resilvering:
 * each registers its hooks here (mirror.c, resilver.c, cluster/ec.c; main.c
 * registers them after sl_store_init, before the start-up reconcile), and
 * the store calls every registered hook that has the member. */
enum { SL_STORE_NEW = 0,        /* a new version was committed here (PUT, append, edit) */
       SL_STORE_RESTORED = 1 }; /* the main replica was rebuilt from a copy (its version unchanged) */
struct sl_store_hooks {
    const char *name;
    /* after b/name was committed (why: SL_STORE_*): queue work; never
     * blocks on I/O; runs on the committing thread */
    void (*after_put)(const struct sl_bck *b, const char *name, size_t nlen, int why);
    /* stop the background work that reads or writes objects and wait (up
     * to timeout_ms): sl_store_close calls them in registration order */
    void (*quiesce)(int64_t timeout_ms);
    /* the main replica of b/name is missing or damaged: restore it; 0
     * restored, -1 with err. The first registered hook that has one serves
     * (sl_obj_open_ex, the start-up reconcile). Does I/O. */
    int (*restore)(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err);
};
/* h is static storage; at most 8; not after the node serves. */
void sl_store_hook(const struct sl_store_hooks *h);

/* Copy md->size bytes of src into a new work file on mp, checksumming as
 * it goes: 0 and *work (the caller's: rename or unlink it, then free), or
 * -1 (SL_ECKSUM: src does not match md; nothing left behind). Gives up
 * with SL_EUNAVAIL when *stop becomes true (stop may be NULL). */
int sl_store_copy_work(int src, const struct sl_objmd *md, const struct sl_mpath *mp, const struct sl_bck *b,
                       const volatile bool *stop, char **work, struct sl_err *err);

/* ---- for the mirror (mirror.c) ---- */
/* The lock of an object's name (read: a consistent file and metadata;
 * write: changing either). Static storage. */
pthread_rwlock_t *sl_obj_lock(const struct sl_bck *b, const char *name, size_t nlen);
/* The mountpath whose digest is d (struct sl_mpath.digest), or NULL. */
struct sl_mpath *sl_store_mpath_by_digest(uint64_t d);
/* Where a mirror copy of an object lives on mountpath mp:
 * <mp>/@PROVIDER/BUCKET/%ob/.x<sha256(name)> (hashed, so that it can never
 * meet another object's file or directory on that mountpath). */
void sl_obj_copy_fqn(struct sl_buf *out, const struct sl_mpath *mp, const struct sl_bck *b, const char *name,
                     size_t nlen);
/* A work file path on mp for bucket b ("<mp>/@P/B/%wk/<random>", directory
 * created): the caller's to free. */
char *sl_store_work_path(const struct sl_mpath *mp, const struct sl_bck *b);
/* write_policy.data is immediate */
bool sl_store_sync_data(void);
/* a PUT's commit waits on an fsync (write_policy.data or .md "immediate"):
 * it belongs on the disk pool, not on an HTTP thread */
bool sl_store_put_syncs(void);

/* The same object still (no PUT, append or delete in between): same
 * mtime, size, checksum and file name. */
bool sl_objmd_same(const struct sl_objmd *a, const struct sl_objmd *b);

/* Visit the objects of b recorded on mp in name order, in batches (no read
 * transaction is held while fn runs, so fn may change them): fn for each
 * one pick (NULL: all) accepts by its metadata; fn returns true to stop.
 * 0, or -1 with err when the metadata cannot be read. */
typedef bool (*sl_store_pick_fn)(void *arg, const struct sl_objmd *md);
typedef bool (*sl_store_visit_fn)(void *arg, const char *name, size_t nlen);
int sl_store_walk(struct sl_mpath *mp, const struct sl_bck *b, sl_store_pick_fn pick, sl_store_visit_fn fn,
                  void *arg, struct sl_err *err);

/* ---- resilver ----
 * Until a resilver completes after the mountpaths changed, objects may sit
 * on a mountpath that is not their HRW one: reads that miss there look on
 * the others (only on a miss). */
/* The mountpaths differ from those of the last completed resilver, or fsck
 * found misplaced files (recorded in the node metadata: it survives a
 * restart until sl_store_resilvered). */
bool sl_store_resilver_pending(void);
/* The mountpaths changed at run time (sl_store_mpath_admin returned 1): a
 * resilver is pending (recorded), and until it completes a write drops
 * what an older version left on another mountpath. */
void sl_store_resilver_mark(void);
void sl_store_resilvered(void);
/* Mountpaths of earlier runs that are no longer configured, until a
 * resilver completes: a new array of paths. */
json_t *sl_store_resilver_removed(void);
/* Open the metadata of such a mountpath (whose directory is still there)
 * to move its objects off it with sl_store_move: NULL with err when it
 * cannot be read. Close with sl_store_detached_close. */
struct sl_mpath *sl_store_detached_open(const char *path, struct sl_err *err);
void sl_store_detached_close(struct sl_mpath *mp);
/* Move b/name, recorded on src, to its HRW mountpath: copied (from the main
 * or, when that is missing or damaged, a mirror copy) to a work file there
 * and fsynced, then its metadata committed there, then removed from src,
 * under the object's write lock and only if it did not change meanwhile.
 * A record on src that is older than one on the HRW mountpath is dropped.
 * 1 moved (*bytes its size), 0 nothing to move, -1 with err. */
int sl_store_move(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath *src, uint64_t *bytes,
                  struct sl_err *err);

/* ---- the record beside a mirror copy ----
 * A copy's mountpath keeps the object's metadata too (its aux DB), so that
 * the copy can become the main replica when the main's mountpath is lost
 * with its metadata. */
/* Record md beside the copy of b/name on cm (once the copy file is in
 * place; wait: durable per write_policy.md before returning). 0 or -1. */
int sl_obj_copy_record(struct sl_mpath *cm, const struct sl_bck *b, const char *name, size_t nlen,
                       const struct sl_objmd *md, bool wait, struct sl_err *err);
/* Remove the copy of b/name on cm: its record, then its file. */
void sl_obj_copy_drop(struct sl_mpath *cm, const struct sl_bck *b, const char *name, size_t nlen);
/* b/name has no metadata on any mountpath but copies with records: the
 * newest intact copy is copied to a work file on its HRW mountpath and
 * fsynced, then, under the object's write lock and only if nothing
 * changed meanwhile, published there as a PUT is (metadata and a pending
 * marker, rename, directory fsync) with the other intact copies of that
 * version as its copies; the rest of the copies (and records whose file is
 * gone) are removed, and the object is queued for put-copies. 1 promoted
 * (*bytes its size; bytes may be NULL), 0 nothing to do, -1 with err. */
int sl_store_promote(const struct sl_bck *b, const char *name, size_t nlen, uint64_t *bytes, struct sl_err *err);
/* Visit the names of b's objects that have a copy record on mp, in
 * batches (no read transaction held while fn runs); fn returns true to
 * stop. 0, or -1 with err. */
int sl_store_walk_copies(struct sl_mpath *mp, const struct sl_bck *b, sl_store_visit_fn fn, void *arg,
                         struct sl_err *err);

/* ---- S3 versions (store_ver.c; names in meta.h) ----
 * A PUT into a bucket with S3 versioning (any but a move, opts move)
 * archives the object it replaces, in its own commit, as KEY\x01SUFFIX:
 * always when SL_S3VER_ON, when it has a version id when SL_S3VER_SUSPENDED
 * (then an older null version of KEY goes too: the new write is the null
 * one); sl_put_commit_batch commits such a PUT on its own when it may
 * replace. A PUT of KEY\x01SUFFIX is a delete marker: the current object
 * at KEY is archived so and removed. An object's id is its custom "s3.vid"
 * (none: "null"; a write's own, never the caller's custom); a delete
 * marker has custom "s3.dm". */
void sl_ver_new_id(char out[21]);           /* ~time, newest first in name order */
const char *sl_ver_id_of(const struct sl_objmd *md);   /* "s3.vid", else "null" */
bool sl_ver_is_marker(const struct sl_objmd *md);
/* KEY \x01 suffix[0..20) */
void sl_ver_name(struct sl_buf *out, const char *key, size_t klen, const char *suffix);
/* The object holding version vid of key: the current one (name = key) or an
 * archived one. 1 (name and md: the caller's), 0 none (err SL_ENOOBJ), -1
 * (SL_EINVAL: not a version id). */
int sl_ver_find(const struct sl_bck *b, const char *key, size_t klen, const char *vid, struct sl_buf *name,
                struct sl_objmd *md, struct sl_err *err);
/* The newest archived version of key (a GET that found no current one
 * looks whether it is a delete marker): 1 (name, md), 0, -1. */
int sl_ver_latest(const struct sl_bck *b, const char *key, size_t klen, struct sl_buf *name, struct sl_objmd *md,
                  struct sl_err *err);
/* Remove version vid of key for good; when that leaves no current object,
 * the newest older version that is not a delete marker becomes the current
 * one (in the same commit). 1 removed (out filled), 0 no such version, -1.
 * out->name (sl_buf_free it in every case) is the removed object's. */
struct sl_ver_gone {
    struct sl_buf name;
    bool marker, promoted;
    char vid[24];
};
int sl_ver_delete(const struct sl_bck *b, const char *key, size_t klen, const char *vid, struct sl_ver_gone *out,
                  struct sl_err *err);
/* S3's DeleteObject without a version id, for every API and job that
 * deletes the current object: with S3 versioning a delete marker on top
 * (SL_S3VER_ON a new id, SUSPENDED the null version, an older null one
 * going), the current object kept as an older version; without, the object
 * goes. if_mtime: 0 a marker even over no object (S3's DeleteObject), -1
 * only over a current object (the native API's: else SL_ENOOBJ, as
 * without versioning), > 0 only while the current object has that mtime
 * (unix ns, a lifecycle's). 0 done (*marker; vid "" or the marker's), 1
 * kept (written since if_mtime), -1 err (SL_ENOOBJ: no such object). The
 * caller drops the object's EC slices (sl_ec_after_delete) on 0. */
int sl_obj_delete_cur(const struct sl_bck *b, const char *key, size_t klen, int64_t if_mtime, bool *marker,
                      char vid[24], struct sl_err *err);

/* Full path of an object file (for diagnostics/tests) */
void sl_obj_fqn(struct sl_buf *out, const struct sl_mpath *mp, const struct sl_bck *b, const char *name, size_t nlen,
                const char *fname);

#endif
