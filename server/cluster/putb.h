/* SPDX-License-Identifier: MIT
 * putb.h: many small objects of one bucket to one target in one request
 * (rebalance, copy and transform jobs, promote), stored there with a few
 * syncs for the whole batch instead of one fsync'ed PUT each.
 *
 * Wire: POST /v1/internal/putb?bck=NAME&provider=PROVIDER[&mode=copy|new][&rename_from=OLD], a
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
 * With mode=copy (copy-bck, promote that overwrites) each object is stored
 * as a PUT stores it: it replaces what the receiver has (never "kept"),
 * takes a new version and the bucket's checksum, keeps the record's custom
 * metadata; the record's version and atime are not used. Its checksum, when
 * of the bucket's type, is checked against the bytes received. mode=new
 * (promote) is the same except that an object already there is kept, as in
 * a rebalance. A remote-backed bucket takes neither (its PUTs write through).
 * rename_from (with mode=copy): the copy of a bucket rename (move-bck) from
 * bucket OLD, the one write the new name takes while the rename runs; as a
 * PUT's Ais-Rename-From, it counts only if the bucket is being renamed from
 * OLD (else the write is refused as any other, 409).
 */
#ifndef SL_PUTB_H
#define SL_PUTB_H

#include "http.h"
#include "meta.h"
#include "md.h"

#define SL_PUTB_OBJ_MAX (1 << 20)      /* larger objects travel one per PUT */
#define SL_PUTB_BYTES (4 << 20)        /* a batch holds up to this many bytes of objects... */
#define SL_PUTB_OBJS 256               /* ...or this many objects */

enum sl_putb_mode {
    SL_PUTB_MOVE = 0,       /* rebalance: the record's metadata travels; what is there is kept */
    SL_PUTB_COPY,           /* as a PUT, replacing what is there */
    SL_PUTB_NEW,            /* as a PUT, keeping what is there */
};

struct sl_putb {
    struct sl_bck b;        /* a copy: sl_putb_free releases it */
    struct sl_buf body;
    int n;
    enum sl_putb_mode mode; /* set after sl_putb_init */
    char rename_from[SL_MAX_BCKNAME + 1];   /* "" or a rename's old name (see above); after sl_putb_init */
};

void sl_putb_init(struct sl_putb *pb, const struct sl_bck *b);
/* Append one object: md's metadata and md->size bytes read from fd (which
 * stays the caller's). -1 with err when fd gives fewer. */
int sl_putb_add(struct sl_putb *pb, const char *name, size_t nlen, int fd, const struct sl_objmd *md,
                struct sl_err *err);
/* The batch's size in bytes (what the request body will be). */
static inline size_t sl_putb_bytes(const struct sl_putb *pb)
{
    return pb->body.len;
}
/* Send the batch to the target whose data URL is url. errs[i] (n of them,
 * zeroed here) receives each object's failure: code 0 means durable there;
 * kept[i] (optional) whether it was kept rather than stored. Returns how
 * many failed. */
int sl_putb_send(const struct sl_putb *pb, const char *url, const char *reb_id, struct sl_err *errs, bool *kept);
/* Store the batch on this target, as its receiver would (a copy job's
 * objects whose owner is this node). errs as for sl_putb_send. */
int sl_putb_store(const struct sl_putb *pb, struct sl_err *errs, bool *kept);

/* Objects gathered per owner target and stored a batch at a time (copy
 * jobs, promote; not thread-safe: one per worker). Each object carries the
 * caller's tag, handed back to done() once its batch is stored (rc 0
 * stored, 1 kept, -1 failed: err) or dropped (rc -2). A batch goes when it
 * holds max_objs objects or max_bytes. */
struct sl_putb_dests;
typedef void (*sl_putb_done_fn)(void *ctx, void *tag, int rc, const struct sl_err *err);
struct sl_putb_dests *sl_putb_dests_new(const struct sl_bck *b, enum sl_putb_mode mode, const char *rename_from,
                                        int max_objs, size_t max_bytes, sl_putb_done_fn done, void *ctx);
/* To target tid at data_url (tid NULL: this one); md->size bytes from data,
 * or (data NULL) from fd. -1 with err (nothing added, tag not taken). */
int sl_putb_dests_add(struct sl_putb_dests *d, const char *tid, const char *data_url, const char *name, size_t nlen,
                      int fd, const void *data, const struct sl_objmd *md, void *tag, struct sl_err *err);
/* Every batch now (store false: dropped, as when a job is aborted). */
void sl_putb_dests_flush(struct sl_putb_dests *d, bool store);
void sl_putb_dests_free(struct sl_putb_dests *d);      /* drops what is left; NULL ok */
void sl_putb_free(struct sl_putb *pb);

/* The receiver: POST /v1/internal/putb on a target (work off the HTTP thread). */
void sl_putb_internal(struct sl_req *r);

#endif
