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
 * bufsz bytes. job (may be NULL) gets loc-/in- counters. smap is the
 * caller's reference, used for the HRW owner during the call. Returns 0, or
 * -1 with err; err->code is SL_ENOOBJ when the object does not exist and
 * nothing was written to w (the caller may skip it). */
int sl_shard_add_object(struct sl_plug_writer *w, const struct sl_bck *src, const char *obj, size_t olen,
                        const char *entry, size_t elen, const struct sl_smap *smap, char *buf, size_t bufsz,
                        struct sl_job *job, struct sl_err *err);

/* Fetch several small objects that live on other targets at once (libcurl
 * multi, one round trip of latency for the batch). For each entry whose HRW
 * owner is another target, remote is set and body (status 200) or status /
 * err are filled; entries owned here are left with remote = false. obj is
 * the caller's; body must start empty (sl_buf_init) and is the caller's to
 * sl_buf_free. */
struct sl_shard_fetch {
    const char *obj;
    size_t olen;
    bool remote;
    long status;
    struct sl_buf body;
    char err[256];
};
void sl_shard_prefetch(const struct sl_bck *src, struct sl_shard_fetch *f, int n, const struct sl_smap *smap);
/* A job that failed or was aborted removes the shards this target wrote
 * for it: names[0..n) of dst, logged as "<kind> <job_id>: removed ...". */
void sl_shard_remove_written(const char *kind, const char *job_id, const struct sl_bck *dst, char *const *names,
                             int n);
/* Add data[0..len) as member `entry`. */
int sl_shard_add_bytes(struct sl_plug_writer *w, const char *entry, size_t elen, const void *data, size_t len,
                       struct sl_job *job, struct sl_err *err);

#endif
