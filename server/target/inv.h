/* SPDX-License-Identifier: MIT
 * inv.h: a target's share of a native bucket inventory (AIStore's NBI):
 * the names of a remote bucket this target owns, as the remote listed
 * them when the inventory was made, with their sizes, kept in the aux DB
 * of the target's first mountpath ("nb" + bid + name -> size; "nM" + bid
 * -> the inventory's metadata, JSON). One inventory a bucket. Listing from
 * it (LsoMsg flag 32768) never asks the remote. The job that makes one is
 * jobs/nbi.c's.
 *
 * Threads: any (LMDB transactions of their own).
 */
#ifndef SL_INV_H
#define SL_INV_H

#include "lspage.h"
#include "meta.h"
#include "sl.h"

#include <jansson.h>

/* A batch of names being written (sl_inv_add commits every few hundred). */
struct sl_inv_w;
/* Start writing b's inventory: what it had before is dropped. */
struct sl_inv_w *sl_inv_begin(const struct sl_bck *b, struct sl_err *err);
int sl_inv_add(struct sl_inv_w *w, const char *name, size_t nlen, uint64_t size, struct sl_err *err);
/* Commit what is left and the metadata meta (taken: {"name", "prefix",
 * "started", "finished", "ntotal", "smap_ver", "nat"}); ok false drops
 * what was written. Frees w. */
int sl_inv_end(struct sl_inv_w *w, bool ok, json_t *meta, struct sl_err *err);
/* b's inventory metadata here (a new reference), or NULL: none. */
json_t *sl_inv_meta(const struct sl_bck *b);
/* Drop b's inventory here (none: 0). */
int sl_inv_destroy(const struct sl_bck *b, struct sl_err *err);
/* A page of b's inventory for m (prefix, continuation token, pagesize,
 * m->inv_name if set): 404 when there is none here (or not of that name). */
int sl_inv_page(const struct sl_bck *b, const struct sl_lsomsg *m, struct sl_lspage *out, struct sl_err *err);

#endif
