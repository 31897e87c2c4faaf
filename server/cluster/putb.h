/* SPDX-License-Identifier: MIT
 * putb.h: many small objects of one bucket to one target in one request
 * (rebalance, copy-bck), stored there with a few syncs for the whole batch
 * instead of one fsync'ed PUT each.
 *
 * Wire: POST /v1/internal/putb?bck=NAME&provider=PROVIDER[&replace=true], a
 * signed peer call (a rebalance adds Ais-Rebalance: ID). The body is a sequence of
 * records: a 4-byte big-endian length, that many bytes of JSON
 *   {"name","size","cksum_type","cksum_value","version","atime","custom":{k:v}}
 * then size bytes of the object. A body that does not parse is 400 and
 * nothing is stored. Otherwise the answer is 200 with
 *   {"objs":[{"status":200},{"status":200,"kept":true},{"status":500,"message":"..."},...]}
 * one entry per record, in order. Status 200 means durable on the receiver
 * as after a single PUT: stored now, or kept (an object of that name was
 * there already; as for a moved object's single PUT, what the new owner has
 * is at least as new). Sending the same batch again is harmless.
 *
 * With replace=true (a copy job's batch) each object is stored as a PUT
 * stores it: it replaces what the receiver has (never "kept"), takes a new
 * version and the bucket's checksum, keeps the custom metadata; version and
 * atime of the record are not used. Its checksum, when of the bucket's type,
 * is checked against the bytes received.
 */
#ifndef SL_PUTB_H
#define SL_PUTB_H

#include "http.h"
#include "meta.h"
#include "md.h"

#define SL_PUTB_OBJ_MAX (1 << 20)      /* larger objects travel one per PUT */
#define SL_PUTB_BYTES (4 << 20)        /* a batch holds up to this many bytes of objects... */
#define SL_PUTB_OBJS 256               /* ...or this many objects */

struct sl_putb {
    struct sl_bck b;        /* a copy: sl_putb_free releases it */
    struct sl_buf body;
    int n;
    bool replace;           /* a copy's batch (see above); set after sl_putb_init */
};

void sl_putb_init(struct sl_putb *pb, const struct sl_bck *b);
/* Append one object: md's metadata and md->size bytes read from fd (which
 * stays the caller's). -1 with err when fd gives fewer. */
int sl_putb_add(struct sl_putb *pb, const char *name, size_t nlen, int fd, const struct sl_objmd *md,
                struct sl_err *err);
/* The same for len bytes at data, without metadata (a transform's output). */
int sl_putb_add_bytes(struct sl_putb *pb, const char *name, size_t nlen, const void *data, size_t len,
                      struct sl_err *err);
/* The batch's size in bytes (what the request body will be). */
static inline size_t sl_putb_bytes(const struct sl_putb *pb)
{
    return pb->body.len;
}
/* Send the batch to the target whose data URL is url. errs[i] (n of them,
 * zeroed here) receives each object's failure: code 0 means durable there.
 * Returns how many failed. */
int sl_putb_send(const struct sl_putb *pb, const char *url, const char *reb_id, struct sl_err *errs);
/* Store the batch on this target, as its receiver would (a copy job's
 * objects whose owner is this node). errs as for sl_putb_send. */
int sl_putb_store(const struct sl_putb *pb, struct sl_err *errs);
/* Empty it for the next objects (same bucket, same kind). */
void sl_putb_clear(struct sl_putb *pb);
void sl_putb_free(struct sl_putb *pb);

/* The receiver: POST /v1/internal/putb on a target (work off the HTTP thread). */
void sl_putb_internal(struct sl_req *r);

#endif
