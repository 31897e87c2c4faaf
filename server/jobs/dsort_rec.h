/* SPDX-License-Identifier: MIT
 * dsort_rec.h: dsort's records and their order. A record is every member of
 * one input shard that shares a WebDataset key (the name up to the first
 * dot of its basename); it is never split, and its members keep their
 * order in the shard. These functions read records out of a shard through
 * a format plugin, order them as the spec says (alphanumeric, shuffle with
 * a seed, content, none, md5), and pack them into output shards named from
 * the output template.
 *
 * Second piece of dsort (issue 13). The job that runs them across the
 * cluster is not built yet.
 */
#ifndef SL_DSORT_REC_H
#define SL_DSORT_REC_H

#include "dsort_spec.h"
#include "plug.h"

struct sl_dsort_member {
    char *name;                 /* as stored in the shard */
    uint64_t size;
};

struct sl_dsort_rec {
    char *key;                  /* the WebDataset key */
    int shard;                  /* the caller's index of the input shard */
    int seq;                    /* position among the shard's records */
    uint64_t bytes;             /* sum of member sizes */
    struct sl_dsort_member *m;  /* in shard order */
    int nm, capm;
    bool has_ckey;              /* content: the key member was found */
    char *ckey_s;               /* content key (string) */
    double ckey_n;              /* content key (int, float) */
    char *family;               /* EKM: the output name template, NULL = none (owned) */
    bool drop;                  /* EKM: no shard for it (ekm_missing_key ignore/warn) */
};

/* A growing set of records; everything in it is owned by it, or, with an
 * arena (the coordinator's, dsort_mem.h), by the arena. */
struct sl_dsort_arena;
struct sl_dsort_recs {
    struct sl_dsort_rec *v;
    size_t n, cap;
    struct sl_dsort_arena *arena;
};

void sl_dsort_recs_free(struct sl_dsort_recs *r);

/* Read the shard behind io (format fmt) and append its records to out,
 * tagged with shard. With the content algorithm, the member whose extension
 * is s->content_ext is read (at most 64 KiB) and parsed as the record's
 * sort key. A record that lacks that member, or whose member does not parse,
 * fails the read with a 400 naming shard and record. shard_name is only for
 * messages. */
int sl_dsort_read_shard(const struct sl_plug *fmt, const struct sl_io *io, const char *shard_name, int shard,
                        const struct sl_dsort_spec *s, struct sl_dsort_recs *out, struct sl_err *err);

/* The output order of r's records, as indexes into r->v (new array of r->n
 * ints, the caller's to free), and 0; -1 on error. The input order is the
 * records sorted by (shard, seq), so the same spec on the same input gives
 * the same order on any number of targets. */
int sl_dsort_order(const struct sl_dsort_recs *r, const struct sl_dsort_spec *s, int **order, struct sl_err *err);

/* One output shard: the records rec[0..count) (indexes into the records),
 * in output order. */
struct sl_dsort_out {
    char *name;                 /* from the output template, with the output extension */
    int *rec;                   /* owned */
    size_t count;
    uint64_t bytes;
};

/* Pack the ordered records into output shards: a shard is closed once it
 * holds s->shard_size bytes or more (its last record may overflow it); with
 * no shard size, the records are spread evenly over the template's names.
 * With an EKM (records with a family), each family is packed on its own and
 * named from its own template; dropped records go nowhere.
 * *out is a new array of *nout shards (sl_dsort_outs_free). A template
 * with fewer names than needed fails with a 400 that says how many. */
int sl_dsort_pack(const struct sl_dsort_recs *r, const int *order, const struct sl_dsort_spec *s,
                  struct sl_dsort_out **out, size_t *nout, struct sl_err *err);
void sl_dsort_outs_free(struct sl_dsort_out *o, size_t n);

#endif
