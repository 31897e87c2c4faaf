/* SPDX-License-Identifier: MIT
 * ishard_msg.h: the ishard request (AIStore's IshardMsg) as Shale takes it:
 * parsing with every field checked, and the normalised JSON form that the
 * gateway sends to the coordinator. Used by the planner (shard_plan.h) and
 * the job (ishard.c); dsort's spec will share its key and EKM rules.
 */
#ifndef SL_ISHARD_MSG_H
#define SL_ISHARD_MSG_H

#include "sl.h"
#include "plug.h"
#include <jansson.h>
#include <regex.h>

enum { MA_IGNORE, MA_WARN, MA_ABORT, MA_EXCLUDE };  /* missing_extension_action / EKM misses */
enum { SORT_NONE, SORT_INC, SORT_DEC, SORT_SHUFFLE };
enum { COL_ABORT, COL_DROP, COL_KEEP_FIRST };      /* member name collisions */

/* One JSON EKM entry: shard template <- name patterns (compiled). */
struct sl_ekm_rule {
    char *tmpl;
    regex_t *re;
    char **pat;
    int nre;
};

/* The parsed request. Every pointer is owned by the struct and freed by
 * sl_ishard_msg_free. */
struct sl_ishard_msg {
    char *src, *prefix, *dst;
    char src_prov[8];           /* "ais", or a remote source's ("aws", "ht") */
    uint64_t shard_size;        /* bytes, or samples when by_count */
    bool by_count;
    char *tmpl;
    char *ext;                  /* ".tar" */
    char *pattern;              /* as given */
    char **exts;                /* sample_exts, lower-case, no dot */
    int nexts;
    int miss;
    bool collapse;
    json_t *ekm;                /* JSON EKM (object) or NULL */
    char *ekm_lua;              /* Lua EKM source or NULL */
    char **ekm_content;         /* extensions whose bytes the Lua EKM gets */
    int nec;
    int ekm_missing;            /* MA_IGNORE / MA_WARN / MA_ABORT */
    int sort;
    uint64_t seed;
    bool seed_set;
    int dry_run;                /* 0, 1, 2 = show_keys */
    bool overwrite;
    bool dst_not_empty;         /* set by the gateway for a dry run (warned) */
    int collision;
};

/* Parse and check v (the request body, only read); on error err says which
 * field and what is valid. m is the caller's to sl_ishard_msg_free after
 * the call, also after an error (m may then hold the fields parsed so far). */
int sl_ishard_msg_parse(const json_t *v, struct sl_ishard_msg *m, struct sl_err *err);
void sl_ishard_msg_free(struct sl_ishard_msg *m);
/* The normalised request (new reference). */
json_t *sl_ishard_msg_json(const struct sl_ishard_msg *m);
/* Compile a JSON EKM {template: [pattern, ...]} into *out (n rules; free
 * with sl_ekm_free; on error nothing to free). */
int sl_ekm_compile(const json_t *ekm, struct sl_ekm_rule **out, int *n, struct sl_err *err);
void sl_ekm_free(struct sl_ekm_rule *r, int n);
/* The sample-key plugin for a sample_key_pattern ("base_name", ...,
 * or a regex); *config receives the regex for key_regex (borrowed from
 * pattern). NULL if none is loaded. The plugin lives as long as the node. */
const struct sl_plug *sl_plan_key_rule(const char *pattern, const char **config);

#endif
