/* SPDX-License-Identifier: MIT
 * mirror.h: n-way mirroring on one target (spec ha-durability.md §2): full
 * copies of an object on other mountpaths of the target that owns it.
 *
 * The main replica is where it always is (HRW mountpath, store.c); each
 * copy is a file <mpath>/@PROVIDER/BUCKET/%ob/.x<sha256(name)> on another
 * mountpath, and the main's metadata lists the mountpaths holding copies
 * (struct sl_objmd.copies). Copies are made off the request path, by the
 * put-copies job (after a PUT) and the make-n-copies job (a bucket's
 * existing objects); a read whose main replica is missing or damaged is
 * served from a healthy copy, which restores the main.
 *
 * Crash safety: a copy is written to a work file on its mountpath, fsynced
 * (write_policy.data), renamed into place and only then recorded (beside
 * the copy, sl_obj_copy_record, then in the main's metadata), all under the
 * object's write lock after checking the object did not change: no
 * metadata names a copy that is not complete. The record beside the copy
 * lets it become the main replica when the main's mountpath is lost with
 * its metadata (sl_store_promote). Removal goes the other
 * way (metadata first, then the file), except when the object itself goes
 * (store.c: copies are unlinked before the main file).
 */
#ifndef SL_MIRROR_H
#define SL_MIRROR_H

#include "store.h"
#include "xact.h"

/* Replicas a bucket's objects should have (main included): mirror.copies
 * when mirror.enabled, else 1. */
int sl_mirror_want(const struct sl_bck *b);

/* A PUT (or any new version) of b/name was committed: when b is mirrored,
 * queue it for the put-copies job. Never blocks on I/O. */
void sl_mirror_after_put(const struct sl_bck *b, const char *name, size_t nlen);

/* The main replica of b/name is missing or damaged: restore it from a copy
 * whose size and checksum are right, drop the copies that are not, and
 * queue the object for put-copies when it now has fewer copies than the
 * bucket wants. 0 restored (or found healthy), -1 with err (SL_ENOOBJ when
 * no replica is left: the metadata is then removed; SL_ECKSUM when the main
 * is there but neither it nor any copy is intact). Does I/O: never on an
 * HTTP thread. */
int sl_mirror_restore(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err);

/* Give b/name exactly want replicas (main included), as far as mountpaths
 * allow: add copies on the least used mountpaths that have none, or remove
 * the extra ones. Counters go to job (may be NULL). 0 done (nothing to do
 * included), -1 with err. */
int sl_mirror_fix(const struct sl_bck *b, const char *name, size_t nlen, int want, struct sl_job *job,
                  struct sl_err *err);

/* Start job make-n-copies (kind "make-n-copies", id given) here: every
 * object of bucket prov/bname held here gets copies replicas. */
int sl_mirror_start(const char *id, const char *prov, const char *bname, int copies, struct sl_err *err);

/* The store's hooks for mirroring (after-put, quiesce, restore): main.c
 * registers them with sl_store_hook. */
extern const struct sl_store_hooks sl_mirror_hooks;

/* Stop the mirror's job threads and wait (up to timeout_ms) until none is
 * copying: before the store closes. Later work is refused. */
void sl_mirror_quiesce(int64_t timeout_ms);

#endif
