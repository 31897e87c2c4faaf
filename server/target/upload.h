/* SPDX-License-Identifier: MIT
 * upload.h: object writes that span several requests, on the object's
 * target (spec native-gaps.md §1-2):
 *
 *   append      PUT ?append_type=append[&append_handle=H] adds bytes to a
 *               work file; PUT ?append_type=flush&append_handle=H makes
 *               the object as it was at the first append (held open, not
 *               copied, until then), followed by those bytes, the object
 *   multipart   POST mpt-upload -> upload id; PUT ?uploadId=&partNumber=N;
 *               POST mpt-complete [{part-number}...]; DELETE mpt-abort
 *
 * Nothing is visible until flush or complete, which publish through the
 * ordinary crash-safe PUT (store.h). Append sessions are in memory: a
 * restart drops them. A multipart upload outlives a restart: its files
 * are in <mpath>/.shale/mpu/<id>/ and its records in that mountpath's
 * LMDB (a part's committed, its bytes durable per write_policy.data,
 * before the part is acknowledged); sl_mpt_recover takes them back. One
 * left alone for UPLOAD_IDLE_S is dropped (records and files).
 */
#ifndef SL_UPLOAD_H
#define SL_UPLOAD_H

#include "sl.h"
#include "meta.h"
#include "md.h"
#include <jansson.h>

#define UPLOAD_IDLE_S 3600

/* ---- append ---- */
struct sl_append;
/* The session of handle (NULL/"" = a new one for b/name), marked busy
 * until sl_append_release or sl_append_flush. 400 for a malformed handle,
 * 404 for an unknown or expired one, 409 when another request uses it. */
int sl_append_get(const struct sl_bck *b, const char *name, size_t nlen, const char *handle, struct sl_append **out,
                  struct sl_err *err);
int sl_append_write(struct sl_append *a, const void *p, size_t n, struct sl_err *err);
/* The handle to hand back (Ais-Append-Handle): "<target id>|<session>|-|-". */
void sl_append_handle(const struct sl_append *a, char *out, size_t n);
void sl_append_release(struct sl_append *a);
/* Publish the content as the object and end the session (also on error).
 * With cktype > 0 the whole content must have checksum ckval (else 500,
 * nothing changes). */
int sl_append_flush(struct sl_append *a, int cktype, const char *ckval, struct sl_objmd *out, struct sl_err *err);
/* End the session without publishing (a failed append). */
void sl_append_drop(struct sl_append *a);

/* ---- multipart ---- */
/* A new upload for b/name: its id in id[0..n). info (NULL: none) is the
 * caller's, kept with the upload's record (S3's metadata). Waits on an
 * LMDB commit: off the HTTP threads. */
int sl_mpt_create(const struct sl_bck *b, const char *name, size_t nlen, const char *info, char *id, size_t n,
                  struct sl_err *err);
/* Part partno (>= 1) of upload id, of exactly size bytes (> 0), written
 * with sl_mpt_part_write and ended with sl_mpt_part_end (ok = every byte
 * arrived). A part sent again replaces the earlier one. */
struct sl_mpt_part;
int sl_mpt_part_begin(const struct sl_bck *b, const char *name, size_t nlen, const char *id, const char *partno,
                      int64_t size, struct sl_mpt_part **out, struct sl_err *err);
int sl_mpt_part_write(struct sl_mpt_part *p, const void *data, size_t n, struct sl_err *err);
int sl_mpt_part_end(struct sl_mpt_part *p, bool ok, struct sl_err *err);
/* The caller's about the part (S3's ETag and checksum), recorded with it by
 * sl_mpt_part_end: call before. */
void sl_mpt_part_set_info(struct sl_mpt_part *p, const char *info);
/* An append to part partno (the SDK's file writer on a part: PUT
 * ?uploadId=&partNumber=&append_type=append): the body, of size bytes (-1:
 * not known), goes after what the part holds (an absent part starts empty);
 * written and ended as above. 409 while another append to the part runs. */
int sl_mpt_part_append(const struct sl_bck *b, const char *name, size_t nlen, const char *id, const char *partno,
                       int64_t size, struct sl_mpt_part **out, struct sl_err *err);
/* The handle an append to a part hands back: "<target id>|mpt|<id>|<part>". */
void sl_mpt_part_handle(const struct sl_mpt_part *p, char *out, size_t n);
/* append_type=flush on a part: 0 when handle names part partno of upload
 * id and the part holds bytes (its appends are in already); else 400/404. */
int sl_mpt_part_flush(const struct sl_bck *b, const char *name, size_t nlen, const char *id, const char *partno,
                      const char *handle, struct sl_err *err);
/* parts: the mpt-complete value, [{"part-number": N, "etag": ""}, ...] */
int sl_mpt_complete(const struct sl_bck *b, const char *name, size_t nlen, const char *id, const json_t *parts,
                    struct sl_objmd *out, struct sl_err *err);
int sl_mpt_abort(const struct sl_bck *b, const char *name, size_t nlen, const char *id, struct sl_err *err);

/* The uploads in flight, one call of fn each (under the table's lock: fn
 * must not call back in here); what v points to is valid during the call. */
struct sl_mpt_view_part {
    int no;
    uint64_t size;
    int64_t at;                 /* unix ns */
    const char *info;           /* NULL: none */
};
struct sl_mpt_view {
    const struct sl_bck *b;
    const char *name;
    size_t nlen;
    const char *id;
    int64_t created;            /* unix ns */
    const char *info;
    int nparts;
    const struct sl_mpt_view_part *parts;
};
void sl_mpt_foreach(void (*fn)(void *arg, const struct sl_mpt_view *v), void *arg);
/* At start-up, after the store's reconcile (sl_store_fsck) and before
 * serving: the uploads of the last run back from their records (a part
 * whose bytes are not all there is dropped, logged); the files and
 * records of uploads whose bucket went are removed. How many. */
int sl_mpt_recover(void);

#endif
