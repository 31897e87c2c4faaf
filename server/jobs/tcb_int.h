/* SPDX-License-Identifier: MIT
 * tcb_int.h: tcb.c's object copier, shared with rename-obj (mvo.c).
 */
#ifndef SL_TCB_INT_H
#define SL_TCB_INT_H

#include "meta.h"

struct sl_etl;
struct sl_lua_val;
struct sl_putb_dests;

struct copier {
    const struct sl_bck *src, *dst;
    struct sl_etl **etl;
    int netl;
    const struct sl_lua_val *args;
    bool dry_run;
    bool rename;                /* move-bck: the copy into the new name */
    const char *job;
    char *buf;                  /* CHUNK bytes */
    uint64_t in_bytes, out_bytes;
    struct sl_putb_dests *bat;  /* NULL: no batches (copier_batches) */
};

/* tcb.c's chunk: the size of copier.buf */
#define SL_TCB_CHUNK (256 * 1024)

/* Object name of c->src copied to dname of c->dst, written on dname's HRW owner: 0, or -1 with err */
int sl_tcb_copy_one(struct copier *c, const char *name, size_t nlen, const char *dname, size_t dlen,
                    struct sl_err *err);

#endif
