/* SPDX-License-Identifier: MIT
 * dsort_mem.h: the memory of a dsort coordinator's record list: every
 * record (key, members, sizes, content key, family), the input shard names,
 * and the indexes sorted over them. Up to a limit (the spec's
 * max_mem_usage) it is in memory; past it, the next chunks are mapped from
 * an unlinked file on a mountpath (sl_store_tmpfd), shared: the kernel keeps
 * what memory allows in its page cache and writes back the rest, so records
 * past the limit need no anonymous memory of the process (which, without
 * swap, nothing can reclaim). A coordinator of 10^6 records thus holds the
 * limit, not the records, in memory of its own (docs/dsort.md §3).
 *
 * Every pointer an arena gives stays valid until sl_dsort_arena_free; there
 * is no free of one allocation. One arena belongs to one thread.
 */
#ifndef SL_DSORT_MEM_H
#define SL_DSORT_MEM_H

#include "sl.h"
#include "dsort_rec.h"

#include <jansson.h>
#include <stdio.h>

struct sl_dsort_chunk {
    char *p;
    size_t len;
    bool mapped;                /* from the file, else malloc'd */
};

struct sl_dsort_arena {
    uint64_t limit;             /* bytes in memory; 0: no limit, all in memory */
    uint64_t mem;               /* in memory now: chunks, the record array, what is charged */
    uint64_t peak;              /* the most mem at once */
    uint64_t total;             /* every byte given out, in memory or mapped */
    uint64_t spilled;           /* bytes in file-backed chunks (and the record array, once there) */
    int fd;                     /* the chunks' file, -1 until needed */
    uint64_t flen;
    struct sl_dsort_chunk *c;
    size_t nc, capc;
    char *cur;                  /* the current chunk's free space */
    size_t left;
    /* the record array (contiguous, grown in place): in memory, then
     * in its own file, grown with mremap */
    void *v;
    int vfd;
    size_t vbytes;
    bool vmapped;
};

void sl_dsort_arena_init(struct sl_dsort_arena *a, uint64_t limit);
void sl_dsort_arena_free(struct sl_dsort_arena *a);
/* n bytes, 8-aligned, zeroed; NULL with err when the file cannot grow */
void *sl_dsort_arena_alloc(struct sl_dsort_arena *a, size_t n, struct sl_err *err);
char *sl_dsort_arena_strdup(struct sl_dsort_arena *a, const char *s, struct sl_err *err);
/* memory the caller holds for a while (an answer being read): counted in
 * mem and peak; negative to give it back */
void sl_dsort_arena_charge(struct sl_dsort_arena *a, int64_t n);

/* Records from one extraction answer (an array of [shard, seq, key, bytes,
 * [[member, size]...], content key, family]) appended to r, every byte of
 * them (and r->v) from r->arena. nnames: the input names, to check the
 * shard index. */
int sl_dsort_recs_from_json(const json_t *a, size_t nnames, struct sl_dsort_recs *r, struct sl_err *err);

/* Shards per extraction request: with a limit, what keeps one round's
 * answers (every holder's) near a sixteenth of it, from the bytes per shard
 * of the last round (ans_bytes over ans_shards; none yet: 1); without
 * a limit, SIZE_MAX (all of a holder's shards at once). */
size_t sl_dsort_batch_of(uint64_t limit, int nt, uint64_t ans_bytes, size_t ans_shards);

/* The records whose key repeats: pairs (first, later) of indexes into r,
 * one per later record; *out is the caller's to free. Sorts an index of r
 * (from r->arena): O(n log n), 4 bytes a record. */
struct sl_dsort_dup {
    int first, later;
};
int sl_dsort_dups(const struct sl_dsort_recs *r, struct sl_dsort_dup **out, size_t *nout, struct sl_err *err);

/* A body for a peer, written as a stream: in memory, or (to_file) in an
 * unlinked file on a mountpath that is then mapped, so a body as large as
 * the records (the output shard lists) needs no anonymous memory. */
struct sl_dsort_body {
    FILE *f;
    char *mem;
    size_t mlen;
    int fd;
    void *map;
    size_t len;
};
int sl_dsort_body_open(struct sl_dsort_body *b, bool to_file, struct sl_err *err);
/* flush; *p, *len: the body, valid until sl_dsort_body_free */
int sl_dsort_body_done(struct sl_dsort_body *b, const void **p, size_t *len, struct sl_err *err);
void sl_dsort_body_free(struct sl_dsort_body *b);

#endif
