/* SPDX-License-Identifier: MIT
 * dsort.h: distributed shuffle and re-shard of WebDataset shards (spec §7):
 * POST/GET/DELETE /v1/sort and the targets' internal endpoints. The spec is
 * dsort_spec.h, the records and their order dsort_rec.h.
 */
#ifndef SL_DSORT_H
#define SL_DSORT_H

#include "http.h"
#include "module.h"
#include <jansson.h>

/* The dsort module: /v1/sort, /v1/internal/dsort/... (dsort_api.c) */
extern const struct sl_module sl_dsort_module;

/* dsort.c, the targets' side: */
/* Start coordinating job id for spec (a normalised RequestSpec, borrowed):
 * 0 once the coordinator thread runs, -1 with a 400 when the spec does not
 * parse. */
int sl_dsort_coord_start(const char *id, json_t *spec, struct sl_err *err);
/* The same from a start body {"id", "spec"} (sl_cluster_job_begin's local start) */
int sl_dsort_start_body(const char *id, const json_t *body, struct sl_err *err);
/* Abort job id on every target and remove every output shard it created,
 * also where it had finished. Off the HTTP threads only. */
void sl_dsort_abort_everywhere(const char *id);
/* /v1/internal/dsort/{start,extract,pull,build,cleanup,job}: true if handled */
bool sl_dsort_internal(struct sl_req *r);

#endif
