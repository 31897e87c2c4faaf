/* SPDX-License-Identifier: MIT
 * md.h: Shale's metadata store on LMDB. Nothing outside metadata/ includes
 * lmdb.h. Two kinds of environment:
 *
 *  - an object environment per mountpath: object metadata keyed so that a
 *    bucket + name prefix is one ordered key range (listing = cursor walk),
 *    plus "pending" markers that make PUT crash-safe (server/target/
 *    store_put.c) and aux records (shard member indexes, mirror-copy
 *    records); the record format is objmd.c's;
 *  - a node environment under the node's confdir: small named documents
 *    (Smap, BMD, config, RMD and the modules' documents, node id, job
 *    history).
 *
 * LMDB has one writer per environment, so writes go through a group-commit
 * thread per object environment: many PUTs share one transaction and one
 * fsync. Readers never block.
 *
 * Threads: every function may be called from any thread, and an
 * environment from many at once, except that one struct sl_md_iter is
 * one thread's (it holds a read transaction between calls, as LMDB's
 * cursors do) and sl_md_close is called once nothing else uses the
 * environment.
 *
 * Key layout (objects DB): 8-byte big-endian bucket id, then the object name
 * truncated to SL_MD_KEYNAME bytes. Names longer than that share a key with
 * every other name that has the same first SL_MD_KEYNAME bytes; the value is
 * then a group of records, each carrying the rest of its name. Key order plus
 * in-group sorting gives exact byte-lexicographic name order.
 *
 * Schema record (see SL_MD_SCHEMA_VERSION): the version as ASCII decimal
 * digits, no NUL, e.g. "1". Object environment: named DB "meta", key
 * "schema". Node environment: main DB, the 7-byte key "\0schema" (a leading
 * NUL byte: no document key can name it, and sl_md_node_foreach skips it).
 */
#ifndef SL_MD_H
#define SL_MD_H

#include "sl.h"

#define SL_MD_KEYNAME 440

/* The on-disk format (schema) version of the environments this build
 * writes, object and node environments alike. Every environment records the
 * version it is in (see the schema record above); sl_md_open and
 * sl_md_node_open settle it before returning:
 *
 *  - a new (empty) environment: the current version is recorded;
 *  - no version recorded (written before versioning; counts as 0) or an older
 *    one: migrated in place, in one transaction, by md.c's migration tables
 *    (one step per version), the current version recorded and one line
 *    logged. 0 -> 1 changes no data: schema 1 is the pre-versioning layout;
 *  - the current version: opened as is;
 *  - a newer version, or a value that is not a version: refused, the
 *    environment left untouched, and an error naming its path and what to do.
 *
 * Bump it, adding one step to each migration table in md.c, whenever a change
 * to md.c would make an older build misread what this build writes. */
#define SL_MD_SCHEMA_VERSION 1

struct sl_kv {
    char *k, *v;
};

#define SL_OBJ_MAX_COPIES 31         /* mirror copies besides the main replica (mirror.copies <= 32) */

struct sl_objmd {
    uint64_t size;
    int cksum_type;                 /* enum sl_cksum_type */
    char cksum[129];                /* hex; "" when none */
    uint64_t version;
    int64_t atime;                  /* unix ns */
    int64_t mtime;                  /* unix ns */
    char fname[72];                 /* on-disk name under %ob when hashed; "" = the object name */
    uint32_t flags;                 /* SL_OBJ_F_* */
    int ncustom;
    struct sl_kv *custom;           /* owned */
    /* n-way mirror: the mountpaths (XXH64 digest of the path, struct
     * sl_mpath.digest) holding a full copy besides the main replica. Stored
     * as an 11th record element only when ncopies > 0, so records without
     * copies keep the old 10-element form and older builds read both. */
    int ncopies;
    uint64_t copies[SL_OBJ_MAX_COPIES];
    /* a multipart upload's layout (HEAD props=chunked, list flag 8192): its
     * parts' count and the largest; 0 for an object written whole. Stored as
     * a 12th element (the 11th, copies, then written even when empty) only
     * when nchunks > 0. */
    uint32_t nchunks;
    uint64_t chunk_max;
};

#define SL_OBJ_F_ARCHIDX 1          /* shard has a member index (issue: formats) */

void sl_objmd_free(struct sl_objmd *m);
void sl_objmd_copy(struct sl_objmd *dst, const struct sl_objmd *src);
/* Set or replace key k in the array kv[0..*n) (copies; grows it). */
void sl_kv_set(struct sl_kv **kv, int *n, const char *k, const char *v);
/* Set or replace a custom key (copies). */
void sl_objmd_set_custom(struct sl_objmd *m, const char *k, const char *v);
/* Borrowed from m (valid until m is changed or freed); NULL when absent. */
const char *sl_objmd_get_custom(const struct sl_objmd *m, const char *k);

/* Limits on an object's custom metadata (docs/api.md): it goes back to
 * clients as response headers (Ais-Custom-Md: k=v, one per entry), so it must
 * fit in one with room to spare. */
#define SL_CUSTOM_MD_MAX       8192 /* bytes of all keys and values together (S3 tags and metadata fit) */
#define SL_CUSTOM_MD_MAX_VALUE 2048 /* bytes of one value */
#define SL_CUSTOM_MD_MAX_KEY   128  /* bytes of one key */
#define SL_CUSTOM_MD_MAX_N     64   /* entries */
/* Check custom metadata kv[0..n) against the limits, and that keys are
 * non-empty without '=' and that no key or value holds a control character
 * (they become header lines). what names it in the message ("Ais-Custom-Md",
 * "PATCH object"). 0 ok; -1 with err (SL_EINVAL) naming the limit. */
int sl_custom_md_check(const struct sl_kv *kv, int n, const char *what, struct sl_err *err);
/* A custom key the store owns: encryption at rest (s3.sse*: the wrapped
 * key), S3 version identity (s3.vid, s3.dm) and object lock (s3.lock.*).
 * A client may not set one, and replacing an object's custom metadata
 * keeps them: a forged or dropped one loses the data or lifts a lock. */
bool sl_custom_key_own(const char *k);

/* One object's record as bytes, the whole name in it (the form of the
 * objects DB's records): metadata kept beside a mirror copy. sl_objmd_pack
 * appends to out (the caller's). sl_objmd_unpack: 0 with *name (NUL-
 * terminated, the caller's to free) and m (sl_objmd_free), -1 when buf is
 * not such a record (nothing to free). */
void sl_objmd_pack(const struct sl_objmd *m, const char *name, size_t nlen, struct sl_buf *out);
int sl_objmd_unpack(const void *buf, size_t len, char **name, size_t *nlen, struct sl_objmd *m);

struct sl_md_env;   /* opaque */

enum sl_md_sync { SL_MD_SYNC = 0, SL_MD_ASYNC = 1, SL_MD_NOSYNC = 2 };

/* Open the object environment in dir, creating dir and the environment when
 * missing, and settle its schema version (SL_MD_SCHEMA_VERSION).
 *
 * dir is copied: the caller keeps its string. sync is an enum sl_md_sync and
 * says when sl_md_commit's changes are durable.
 *
 * Returns 0 and sets *out to a handle that the caller owns and releases with
 * sl_md_close. Returns -1 with err filled and *out untouched when dir cannot
 * be created, LMDB fails (SL_ENOSPC when the disk or map is full, else
 * SL_EIO), the environment records a newer schema (SL_EUNSUPP) or an
 * unreadable one (SL_EIO). The message names dir; for a refused schema it
 * also says what to do, and the environment is left as it was. */
int sl_md_open(const char *dir, int sync, struct sl_md_env **out, struct sl_err *err);
/* Apply every commit already submitted (fire-and-forget ones included),
 * flush to disk, stop the commit threads and free env. Every iterator on env
 * must be closed and no other call on env may be running or start. Pointers
 * from sl_md_dir(env) become invalid. NULL is a no-op. */
void sl_md_close(struct sl_md_env *env);
/* The directory env was opened on. The string belongs to env: do not modify
 * or free it; it stays valid until sl_md_close(env). */
const char *sl_md_dir(struct sl_md_env *env);

/* Object lookup. Returns 1 found (out filled; free with sl_objmd_free),
 * 0 not found, -1 error. */
int sl_md_obj_get(struct sl_md_env *env, uint64_t bid, const char *name, size_t nlen, struct sl_objmd *out,
                  struct sl_err *err);

/* Write operations, applied atomically in one transaction. */
enum sl_md_opkind {
    SL_MD_PUT_OBJ,      /* bid, name, md */
    SL_MD_DEL_OBJ,      /* bid, name */
    SL_MD_PUT_PENDING,  /* key = work file name, val = final relative path */
    SL_MD_DEL_PENDING,  /* key */
    SL_MD_DEL_BUCKET,   /* bid: every object of the bucket (may span several transactions) */
    SL_MD_PUT_AUX,      /* key, val in the aux DB (per-object side data: shard indexes) */
    SL_MD_DEL_AUX,      /* key */
    SL_MD_DEL_AUX_PREFIX, /* every aux key starting with key[0..klen) */
};

struct sl_md_op {
    int kind;
    uint64_t bid;
    const char *name;
    size_t nlen;
    const struct sl_objmd *md;
    const char *key;     /* pending/aux */
    size_t klen;
    const void *val;
    size_t vlen;
};

/* Submit ops; with wait, block until committed (durable per sync policy).
 * Without wait, fire and forget (ops are copied). */
int sl_md_commit(struct sl_md_env *env, const struct sl_md_op *ops, int nops, bool wait, struct sl_err *err);
/* How many committed transactions, in every env of this process, changed
 * objects' records (a put, a delete, a bucket's objects dropped): counted
 * once the commit is visible to readers. Taken before a count of the
 * objects, an equal value later says the count still holds. */
uint64_t sl_md_obj_changes(void);
/* Fire and forget without waking the committer: the ops go in with the next
 * commit, or on their own within 50 ms. For what may be lost in a crash (a
 * pending marker's removal: the restart's fsck drops a marker whose work is
 * done), at the price of no transaction and no wake-up of its own. */
void sl_md_commit_lazy(struct sl_md_env *env, const struct sl_md_op *ops, int nops);

/* Pending markers (crash recovery). cb returns 0 to continue. key/val are
 * valid during the call only. */
int sl_md_pending_foreach(struct sl_md_env *env,
                          int (*cb)(void *arg, const char *key, size_t klen, const char *val, size_t vlen),
                          void *arg);

/* Aux side data (e.g. shard member index) by key, appended to out (the
 * caller's). 1 found, 0 not, -1 error. */
int sl_md_aux_get(struct sl_md_env *env, const char *key, size_t klen, struct sl_buf *out);
/* Every aux key with the prefix, in key order; cb returns non-zero to stop.
 * key/val are valid during the call only. */
int sl_md_aux_foreach(struct sl_md_env *env, const char *prefix, size_t plen,
                      int (*cb)(void *arg, const char *key, size_t klen, const char *val, size_t vlen), void *arg);
/* The same from the first key >= from[0..flen) (which should start with the
 * prefix; flen 0 = from the prefix): one page of a long run of keys without
 * walking the keys before it. 0, or -1 when the DB cannot be read. */
int sl_md_aux_foreach_from(struct sl_md_env *env, const char *prefix, size_t plen, const char *from, size_t flen,
                           int (*cb)(void *arg, const char *key, size_t klen, const char *val, size_t vlen),
                           void *arg);

/* Ordered iteration over one bucket. */
struct sl_md_iter;
/* Position at the first name with the given prefix that is > after
 * (after may be NULL). *out is new: sl_md_iter_close it (it holds a read
 * transaction until then). */
int sl_md_iter_open(struct sl_md_env *env, uint64_t bid, const char *prefix, size_t plen, const char *after,
                    size_t alen, struct sl_md_iter **out, struct sl_err *err);
/* 1: entry available via sl_md_iter_name/md, 0: end, -1: error. What those
 * two return points into it: valid until the next next, seek or close. */
int sl_md_iter_next(struct sl_md_iter *it);
const char *sl_md_iter_name(struct sl_md_iter *it, size_t *len);
const struct sl_objmd *sl_md_iter_md(struct sl_md_iter *it);
/* Skip forward so the next entry is the first name >= name. */
int sl_md_iter_seek(struct sl_md_iter *it, const char *name, size_t nlen);
void sl_md_iter_close(struct sl_md_iter *it);

/* Count and total size of a bucket's objects in this environment. */
int sl_md_bucket_stats(struct sl_md_env *env, uint64_t bid, uint64_t *count, uint64_t *bytes);

/* ---- node environment: named documents ---- */
struct sl_md_node;
/* Open the node environment in dir, creating dir and the environment when
 * missing, and settle its schema version (SL_MD_SCHEMA_VERSION).
 *
 * dir is copied: the caller keeps its string. Returns 0 and sets *out to a
 * handle that the caller owns and releases with sl_md_node_close. Returns -1
 * with err filled and *out untouched on the same failures as sl_md_open
 * (same codes; the message names dir and, for a refused schema, what to do;
 * a refused environment is left as it was). */
int sl_md_node_open(const char *dir, struct sl_md_node **out, struct sl_err *err);
/* Close n and free it. No other call on n may be running or start. NULL is a
 * no-op. */
void sl_md_node_close(struct sl_md_node *n);
/* 1 found, 0 not found, -1 error */
int sl_md_node_get(struct sl_md_node *n, const char *key, struct sl_buf *out);
int sl_md_node_put(struct sl_md_node *n, const char *key, const void *val, size_t len);
int sl_md_node_del(struct sl_md_node *n, const char *key);
/* Call cb for each document whose key starts with prefix ("" = all), in
 * byte order of keys, all from one read snapshot; cb returns non-zero to
 * stop. The schema record is not a document and is never passed.
 *
 * key is a NUL-terminated copy that is freed when cb returns. val points to
 * vlen bytes (not NUL-terminated) owned by the database: cb may not modify or
 * free them, and they are valid only until cb returns; copy what you keep.
 * Returns 0 (also when cb stopped early), -1 when reading failed (cb may
 * have been called for the keys before the failure). */
int sl_md_node_foreach(struct sl_md_node *n, const char *prefix,
                       int (*cb)(void *arg, const char *key, const char *val, size_t vlen), void *arg);

#endif
