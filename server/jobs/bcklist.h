/* SPDX-License-Identifier: MIT
 * bcklist.h: the buckets a cluster-wide job is started for (lru, scrub):
 * {"Buckets": [Bck...]} or {"Bck": Bck} in its start message, kept as
 * "provider/name" strings that travel to the targets as they are.
 */
#ifndef SL_BCKLIST_H
#define SL_BCKLIST_H

#include "meta.h"

#include <jansson.h>

/* The buckets v names, each resolved (a bucket that does not exist: -1
 * with err, 404): *out a new array of "provider/name", or NULL when v names
 * none (every bucket). what names the job in errors ("start lru"). */
int sl_bcklist_parse(const json_t *v, const char *what, json_t **out, struct sl_err *err);
/* Whether b is one of list (NULL: every bucket is); an older primary's
 * bare "NAME" is an ais:// bucket. */
bool sl_bcklist_has(const json_t *list, const struct sl_bck *b);

#endif
