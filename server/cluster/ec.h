/* SPDX-License-Identifier: MIT
 * ec.h: erasure coding across targets (spec ha-durability.md §3), with
 * Intel ISA-L's Reed-Solomon (Cauchy matrix).
 *
 * Placement: HRW target list of the object's uname, D+P+1 long: the first
 * is the main target (the normal owner, which keeps the full object), the
 * next D+P get slice 1..D+P (data, then parity) of a sliced object, or the
 * next P a full replica of a small one (size < ec.objsize_limit, or empty).
 *
 * On-disk, out of the object namespace (listings never see it), on the
 * object's HRW mountpath of each target:
 *     <mpath>/@PROVIDER/BUCKET/%ec/<sha256(name)>   slice or replica bytes
 *     <mpath>/@PROVIDER/BUCKET/%mt/<sha256(name)>   its metafile (JSON)
 * The main target keeps a metafile too (slice_id 0, "main": true, no data):
 * it is written once every slice was sent, and HEAD reports it.
 *
 * Encoding runs in the ec-put job (one worker thread per target), after the
 * PUT was acknowledged; a GET of an object the target does not hold
 * rebuilds it (sl_ec_restore) on a peer-pool thread.
 */
#ifndef SL_EC_H
#define SL_EC_H

#include "http.h"
#include "store.h"

/* EC props of b: false when EC is off */
bool sl_ec_props(const struct sl_bck *b, int *d, int *p, int64_t *limit);

/* A new version of b/name was committed on this target: when b is erasure
 * coded, queue it for the ec-put job. Never blocks. */
void sl_ec_after_put(const struct sl_bck *b, const char *name, size_t nlen);
/* b/name was deleted by a client: its slices/replicas on every target go
 * (queued, asynchronous). */
void sl_ec_after_delete(const struct sl_bck *b, const char *name, size_t nlen);

/* A rebuilt object that was not stored (for one read): an unlinked
 * temporary file (the caller closes it) and its metadata. */
struct sl_ec_tmp {
    int fd;                 /* -1: the object was stored as a normal object */
    struct sl_objmd md;
};

/* Rebuild b/name here from the slices or replicas other targets hold, and
 * store it as a normal object — only when this target is the object's main
 * one by the current map, or tmp is NULL: else (a stand-in for a main
 * target that is down) it goes to tmp and nothing is stored, so that no
 * stray copy outlives the read. 0 done; -1 with err: SL_ENOOBJ when no
 * target knows the object, SL_EIO when it was erasure coded but too few
 * slices are left. Waits on peers: pool threads only. */
int sl_ec_restore(const struct sl_bck *b, const char *name, size_t nlen, struct sl_ec_tmp *tmp, struct sl_err *err);

/* b/name is held here but not protected by erasure coding: no main
 * metafile here, or one of an older generation than the object's mtime
 * (its ec-put is queued, or failed, or it is too big to encode). A
 * metadata lookup and a metafile read, never the object's data. */
bool sl_ec_unprotected(const struct sl_bck *b, const char *name, size_t nlen);

/* HEAD: Ais-Ec-* headers from the local metafile, if any (a small read). */
void sl_ec_head_headers(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen);

/* Job scrub's part in an erasure-coded bucket: every slice and replica
 * held here is checked against its own checksum (slice_cksum); a damaged
 * one is logged and counted (job err-objs, err_cksum_n), told to report
 * (object's cname, what is wrong, whether it was fixed; may be NULL) and,
 * with fix, its object's main target asked to encode it again (in-objs
 * when it did). Slices checked count in out-objs. The number damaged. */
struct sl_job;
typedef void (*sl_ec_scrub_report_fn)(void *arg, const char *cname, const char *problem, bool fixed);
int sl_ec_scrub_slices(const struct sl_bck *b, struct sl_job *job, bool fix, sl_ec_scrub_report_fn report,
                       void *arg);

/* Start job kind (ec-encode) id here over bucket prov/bname: every object
 * whose main replica is here is (re-)encoded when its slices are not where
 * the current map puts them; every slice held here whose object's main
 * target lacks the object asks that target to rebuild it. */
int sl_ec_start(const char *id, const char *prov, const char *bname, struct sl_err *err);
/* The targets of the cluster changed and the rebalance is done: the same
 * over every erasure-coded bucket ("back to full redundancy"). */
void sl_ec_membership_changed(void);

/* Stop the worker and wait (up to timeout_ms): before the store closes. */
void sl_ec_quiesce(int64_t timeout_ms);
/* The store's hooks for erasure coding (after-put: a new version is
 * queued for ec-put; quiesce): main.c registers them with sl_store_hook. */
extern const struct sl_store_hooks sl_ec_hooks;

/* The node-to-node endpoints under /v1/internal/ec/ (cluster/ec.c): true
 * when the request was one of them (answered or taken over). */
bool sl_ec_internal(struct sl_req *r);

#endif
