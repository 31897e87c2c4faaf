/* SPDX-License-Identifier: MIT
 * shard.h: writing objects into a shard as members, wherever in the cluster
 * the objects live (local ones from disk, others streamed from their HRW
 * owner). Used by the archive job and ishard.
 */
#ifndef SL_SHARD_H
#define SL_SHARD_H

#include "meta.h"
#include "xact.h"

struct sl_plug_writer;

/* Add the object src/obj as member `entry` to w. buf is scratch space of
 * bufsz bytes. job (may be NULL) gets loc-/in- counters. Returns 0, or -1
 * with err; err->code is SL_ENOOBJ when the object does not exist and
 * nothing was written to w (the caller may skip it). */
int sl_shard_add_object(struct sl_plug_writer *w, const struct sl_bck *src, const char *obj, size_t olen,
                        const char *entry, size_t elen, const struct sl_smap *smap, char *buf, size_t bufsz,
                        struct sl_job *job, struct sl_err *err);

#endif
