/* SPDX-License-Identifier: MIT
 * dsort_spec.h: dsort's RequestSpec (spec §7) as AIStore takes it, in JSON
 * or YAML, and in the older spelling of AIStore's WebDataset blog post
 * ("bck", "extension", "input_format" as a plain template string,
 * "output_format" in printf form). Parsing checks every field and refuses
 * what it cannot honour with a 400 that names the field and what is valid;
 * nothing is left to fail later for a reason the spec already showed.
 *
 * This is the first piece of dsort (issue 13): the job that runs a parsed
 * spec is not built yet, and no endpoint takes a spec today.
 */
#ifndef SL_DSORT_SPEC_H
#define SL_DSORT_SPEC_H

#include "sl.h"
#include <jansson.h>

enum sl_dsort_alg {
    SL_DSORT_ALPHANUMERIC = 0, /* "" or "alphanumeric": by record key, string order */
    SL_DSORT_SHUFFLE,          /* seeded Fisher-Yates */
    SL_DSORT_CONTENT,          /* key read from the member with algorithm.extension */
    SL_DSORT_NONE,             /* extraction order: re-shard only */
    SL_DSORT_MD5,              /* AIStore's "md5" (effectively name order, spec §7) */
    SL_DSORT_LUA,              /* sort_key(record) in algorithm.script */
};
enum sl_dsort_ckey { SL_DSORT_CKEY_INT = 0, SL_DSORT_CKEY_FLOAT, SL_DSORT_CKEY_STRING };
enum sl_dsort_react { SL_DSORT_IGNORE = 0, SL_DSORT_WARN, SL_DSORT_ABORT };

/* A parsed spec. Every pointer is owned by the struct and released by
 * sl_dsort_spec_free; strings are NUL-terminated. */
struct sl_dsort_spec {
    char in_bck[SL_MAX_BCKNAME + 1], out_bck[SL_MAX_BCKNAME + 1]; /* the output's provider: ais */
    char in_prov[8];            /* "ais", or a remote input's ("aws", "ht") */
    char *in_template;          /* input_format template ("" = the whole bucket); NULL with objnames */
    char **objnames;            /* input_format.objnames, NULL-terminated; NULL with a template */
    size_t nobj;
    char *out_format;           /* output_format; NULL when an EKM names the shards */
    bool out_unbounded;         /* a %d counter: output_shard_size decides the count */
    uint64_t shard_size;        /* output_shard_size in bytes; 0 = not given */
    char *in_ext, *out_ext;     /* ".tar", ".tgz", ... (a loaded format plugin each) */
    char *description;
    int alg;                    /* enum sl_dsort_alg */
    bool decreasing;
    bool seed_set;
    uint64_t seed;              /* shuffle; drawn at parse time when not given (seed_set false) */
    char *content_ext;          /* content: ".cls" */
    int content_key_type;       /* content: enum sl_dsort_ckey */
    char *script;               /* lua: source defining sort_key(record) */
    char *ekm_file;             /* URL or ais://bucket/object, NULL if none */
    char *ekm_sep;              /* text EKM separator (default "\t") */
    char *ekm_lua;              /* Lua source defining shard_for(key, record), NULL if none */
    uint64_t max_mem;           /* bytes, 0 = percent below or the default */
    int max_mem_pct;            /* 1..100, 0 = bytes above or the default */
    int extract_conc, create_conc; /* 0 = default */
    bool dry_run;
    bool overwrite;             /* Shale: allow output into the input bucket over its inputs */
    int duplicated_records, missing_shards, ekm_malformed_line, ekm_missing_key; /* enum sl_dsort_react */
};

/* Parse and check v. On error err holds a 400 (501 for a non-ais bucket)
 * naming the field; s may hold what was parsed so far and must be freed
 * with sl_dsort_spec_free either way. The Lua scripts (algorithm.script,
 * ekm_lua) are compiled in the sandbox and their entry points checked. */
int sl_dsort_spec_parse(const json_t *v, struct sl_dsort_spec *s, struct sl_err *err);
/* max_mem_usage in bytes (a percentage: of this machine's memory); 0: none */
uint64_t sl_dsort_spec_max_mem(const struct sl_dsort_spec *s);
/* The same from text: JSON when it starts with '{' (after blanks), else
 * YAML. */
int sl_dsort_spec_parse_text(const char *buf, size_t n, struct sl_dsort_spec *s, struct sl_err *err);
void sl_dsort_spec_free(struct sl_dsort_spec *s);
/* The normalised spec in AIStore's spelling (new reference); the drawn
 * seed is included so that a run can be repeated. */
json_t *sl_dsort_spec_json(const struct sl_dsort_spec *s);

#endif
