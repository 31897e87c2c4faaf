/* SPDX-License-Identifier: MIT
 * shard_plan.h: the shard planner. From a listing of a source bucket it
 * groups objects into samples by the WebDataset key (the name up to the
 * first dot of the basename), applies the extension and collision policy,
 * routes samples to shard families (EKM), orders them (sorted or shuffled
 * with a seed), packs them into shards of a target size without splitting
 * a sample, names the shards from their templates and picks each shard's
 * owner by HRW. ishard runs it on its coordinator; dsort reuses it.
 *
 * The steps run in this order on one struct sl_plan, each returning -1 with
 * p->err set on failure: sl_plan_list (or fill p->o by hand), samples,
 * policy, ekm, pack, names. A plan owns everything it points to except m
 * (the caller's request) and frees it in sl_plan_free; p->sh[i].owner
 * points into p->cmap, which the plan holds.
 */
#ifndef SL_SHARD_PLAN_H
#define SL_SHARD_PLAN_H

#include "ishard_msg.h"
#include "meta.h"
#include "xact.h"
#include <jansson.h>

#define SL_PLAN_MAX_WARN 100      /* warnings kept in the report */

/* a string -> index hash table */
struct sl_strmap {
    const char **k;
    size_t *kl;
    int *v;
    size_t cap, n;
};
/* The map borrows its keys: k[0..kl) must stay valid and unchanged while
 * the map holds them. A zeroed struct is an empty map. get: the value, or
 * -1 when absent. put: insert or replace. free: the map's own arrays only. */
int sl_strmap_get(const struct sl_strmap *m, const char *k, size_t kl);
void sl_strmap_put(struct sl_strmap *m, const char *k, size_t kl, int v);
void sl_strmap_free(struct sl_strmap *m);

/* a listed object: name, size, and where its extension starts */
struct sl_plan_obj {
    char *name;
    size_t nlen;
    uint64_t size;
    size_t ext_off, ext_len;
};

/* a sample: the objects that share a key */
struct sl_plan_sample {
    char *key;
    size_t klen, dirlen;
    int *m;                     /* object indexes */
    int nm, capm;
    uint64_t bytes;             /* estimated bytes in a tar */
    int family;
    bool drop, rename, incomplete;
};

/* an output shard: a range of plan->order */
struct sl_plan_shard {
    char *name;
    int family;
    int first, count;           /* range of plan->order */
    uint64_t bytes;
    const struct sl_snode *owner;
};

/* a shard family: one output template (one per EKM target) */
struct sl_plan_family {
    char *tmpl;
    uint64_t next;              /* next template index */
    int *seq;                   /* samples in this family, in order */
    int nseq, capseq;
};

struct sl_plan {
    struct sl_ishard_msg *m;
    struct sl_bck src, dst;
    bool have_src, have_dst;
    struct sl_smap *cmap;       /* the cluster map shard owners point into */
    struct sl_job *job;
    struct sl_plan_obj *o;
    int no, capo;
    uint64_t listed_bytes;
    char listed_at[40];
    struct sl_plan_sample *s;
    int ns, caps;
    struct sl_strmap smap;         /* key -> sample */
    int *order;                 /* packed sample order */
    int norder, caporder;
    struct sl_plan_shard *sh;
    int nsh, capsh;
    struct sl_plan_family *fam;
    int nfam;
    /* report */
    json_t *warnings;
    uint64_t nwarn, skipped_noext, multidot, excluded, incomplete, ekm_unmatched, collisions, renamed, dropped;
    struct sl_err err;
};

void sl_plan_warn(struct sl_plan *p, const char *fmt, ...) SL_PRINTF(2, 3);
void sl_plan_free(struct sl_plan *p);
/* 1. the source listing across the cluster (p->src, p->m->prefix) */
int sl_plan_list(struct sl_plan *p);
/* 2. samples by key */
int sl_plan_samples(struct sl_plan *p);
/* 3. extensions, collisions and member names */
int sl_plan_policy(struct sl_plan *p);
/* 4. EKM: sample -> family (runs the Lua EKM in the sandbox) */
int sl_plan_ekm(struct sl_plan *p);
/* 5. order and pack */
void sl_plan_pack(struct sl_plan *p);
/* 6. shard names and owners (needs p->cmap for owners; NULL: none) */
int sl_plan_names(struct sl_plan *p);
/* The dry-run / job report (new reference). */
json_t *sl_plan_report(struct sl_plan *p);
/* The members of shard h appended to out, each as "LEN:OBJECT" then
 * "LEN:MEMBER" (or "=" when the member's name is the object's) then
 * "SIZE;" — one string however many members (ishard's build request
 * carries it; a JSON tree of them cost half a KiB a member). */
void sl_plan_shard_encode(const struct sl_plan *p, const struct sl_plan_shard *h, struct sl_buf *out);
/* One member of such a list, read at *p (before end) and *p moved past it:
 * obj/olen and mem/mlen point into the list (mem == obj with "="). 0, or -1
 * when the list is malformed there. */
struct sl_plan_member {
    const char *obj, *mem;
    size_t olen, mlen;
    uint64_t size;
};
int sl_plan_member_next(const char **p, const char *end, struct sl_plan_member *m);

#endif
