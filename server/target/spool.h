/* SPDX-License-Identifier: MIT
 * spool.h: bytes a job holds for a while (records pulled for an output
 * shard, members waiting to be put in order), in memory while a shared
 * budget allows and in an unlinked file on a mountpath past it. A job that
 * handles several times its memory limit still completes: what does not
 * fit goes to disk, and the budget counts what is in memory, not what is
 * on disk.
 *
 * One spool belongs to one thread; a budget is shared (atomics).
 */
#ifndef SL_SPOOL_H
#define SL_SPOOL_H

#include "sl.h"
#include "plug.h"

struct sl_spool_budget {
    uint64_t limit;                 /* bytes in memory across its spools; 0: none */
    uint64_t used;                  /* atomic */
    uint64_t peak;                  /* atomic: the most used at once */
    uint64_t spilled_cnt;           /* atomic: spools that went to disk */
    uint64_t spilled_bytes;         /* atomic: bytes written to disk */
};

struct sl_spool {
    struct sl_spool_budget *bud;
    struct sl_buf mem;              /* while fd < 0 */
    uint64_t charged;               /* bytes of mem counted in bud->used */
    int fd;                         /* -1: in memory */
    uint64_t len;
};

void sl_spool_init(struct sl_spool *s, struct sl_spool_budget *bud);
/* Append n bytes: to memory if the budget takes them, else (moving what is
 * in memory along) to an unlinked file on a mountpath. */
int sl_spool_add(struct sl_spool *s, const void *p, size_t n, struct sl_err *err);
/* Read up to n bytes at off: bytes read, 0 at the end, -1 (errno) */
int64_t sl_spool_pread(const struct sl_spool *s, void *buf, size_t n, uint64_t off);
bool sl_spool_on_disk(const struct sl_spool *s);
/* Release memory, close the file and give back the budget. Idempotent. */
void sl_spool_free(struct sl_spool *s);

/* An sl_io over a spool: reads from the start (seekable), writes append.
 * err receives a failed write's error. The spool and name are borrowed. */
struct sl_spool_io {
    struct sl_io io;
    struct sl_spool *s;
    int64_t pos;
    struct sl_err *err;
};
void sl_spool_io_init(struct sl_spool_io *x, struct sl_spool *s, const char *name, struct sl_err *err);

#endif
