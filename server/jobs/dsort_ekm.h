/* SPDX-License-Identifier: MIT
 * dsort_ekm.h: dsort's external key map (spec §7): which output shard
 * family (a name template such as "shard-cats-%d") each record goes to.
 * Either JSON {"template": ["regex", ...], ...} or text lines
 * "<regex><sep><template>"; every record key must match exactly one regex.
 */
#ifndef SL_DSORT_EKM_H
#define SL_DSORT_EKM_H

#include "sl.h"
#include <jansson.h>
#include <regex.h>

struct sl_dsort_ekm_rule {
    char *tmpl;                 /* owned */
    char *pat;                  /* owned, as written */
    regex_t re;
};

/* A parsed map; everything in it is owned by it. */
struct sl_dsort_ekm {
    struct sl_dsort_ekm_rule *v;
    int n;
};

/* Parse text[0..n) from where (a name for messages). JSON when where ends
 * in ".json" or the text starts with '{', else lines split at sep. A text
 * line without sep follows malformed (enum sl_dsort_react: ignore, warn
 * into warnings, or abort with a 400 naming the line). A regex that does
 * not compile is always a 400. */
int sl_dsort_ekm_parse(const char *text, size_t n, const char *where, const char *sep, int malformed,
                       json_t *warnings, struct sl_dsort_ekm *out, struct sl_err *err);
void sl_dsort_ekm_free(struct sl_dsort_ekm *e);

/* The template of the rule key matches (borrowed from e), or NULL when none
 * does; -1 with a 400 when several do. */
int sl_dsort_ekm_match(const struct sl_dsort_ekm *e, const char *key, const char **tmpl, struct sl_err *err);

#endif
