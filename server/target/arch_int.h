/* SPDX-License-Identifier: MIT
 * arch_int.h: what the files of the archive code share. Included only by
 * server/target/arch*.c; everyone else has arch.h.
 *
 * The files, each calling only into those listed above it (no call cycle):
 *   arch.c       the plugin registry, format detection, the member index of
 *                plain tars (build, lookup, iteration), listing members
 *   arch_get.c   GET ?archpath / ?archmode / ?archindex, the shard and
 *                member readers (sl_arch_shard_*, sl_arch_member_*)
 *   arch_put.c   PUT ?archpath (append in place, or rebuild)
 *
 * Threads: any thread may call these. Builds of one shard's index run one
 * at a time: arch_index_fd reads the whole shard and may first wait for
 * another thread's build of the same index.
 */
#ifndef SL_ARCH_INT_H
#define SL_ARCH_INT_H

#include "arch.h"
#include "plug.h"

#define IDX_INLINE_NAME 400
#define IDX_KEY_MAX (SL_OBJ_AUX_PREFIX + 1 + IDX_INLINE_NAME + 64)
#define CHUNK (256 * 1024)

/* ---- arch.c ---- */

bool arch_is_plain_tar(const struct sl_plug *f);
bool arch_member_ok(const char *cn, const char *name, size_t len);
/* the reader limits (arch.*), max_total_size included */
void arch_limits(struct sl_fmt_limits *lim);
/* query parameter k of r, NULL when missing or empty */
const char *arch_q_nonempty(const struct sl_req *r, const char *k);

/* The member index of a shard (pfx: sl_obj_aux_prefix of its name) in env */
bool arch_index_current(struct sl_md_env *env, const unsigned char *pfx, int64_t mtime, uint64_t size);
bool arch_index_valid(struct sl_md_env *env, const unsigned char *pfx, const struct sl_objmd *md);
/* (Re)build the index of b/name, open as fd with md (both the caller's) */
int arch_index_fd(const struct sl_plug *fmt, struct sl_md_env *env, const struct sl_bck *b, const char *name,
                  size_t nlen, int fd, const struct sl_objmd *md, struct sl_err *err);
int arch_index_lookup(struct sl_md_env *env, const struct sl_bck *b, const char *name, size_t nlen,
                      const struct sl_objmd *md, const char *member, size_t ml, uint64_t *off, uint64_t *size);

/* A walk over index entries (sl_md_aux_foreach*, arch_idx_foreach_cb):
 * into a JSON array and/or a listing page */
struct idx_iter {
    json_t *arr;               /* archindex JSON */
    struct sl_lspage *page;    /* listing */
    const char *shard;
    size_t slen;
    const char *mprefix;
    size_t mplen;
    uint64_t n;
    /* a page: up to max entries after the key skip[0..skiplen) */
    const unsigned char *skip;
    size_t skiplen;
    uint64_t max;
    bool more;
    unsigned char *last;       /* if set: the key of the last entry taken (IDX_KEY_MAX bytes) */
    size_t lastlen;
};
int arch_idx_foreach_cb(void *arg, const char *key, size_t klen, const char *val, size_t vlen);

#endif
