/* SPDX-License-Identifier: MIT
 * bsumm.h: bucket summaries, AIStore's summary-bck (native-gaps.md §4):
 * object count, sizes and disk use of a bucket under a prefix, counted by
 * every target from its metadata and added up in the background.
 */
#ifndef SL_BSUMM_H
#define SL_BSUMM_H

#include "http.h"
#include <jansson.h>

/* Start a summary of bck (provider prov: "ais", "aws", ...) under prefix
 * (bck "": of every ais:// bucket): its id in id[0..n). A remote-backed
 * bucket's summary counts what the cluster holds and, unless cached, lists
 * the remote too (obj_count_remote, size_all_remote_objs: AIStore's
 * summary with cached=false / bsumm_remote=true). */
int sl_bsumm_start(const char *bck, const char *prov, const char *prefix, bool cached, char *id, size_t n,
                   struct sl_err *err);
/* 0 still running, 1 done (*result: a new array of BsummResult, one per
 * bucket, by name), -1 failed or unknown (err) */
int sl_bsumm_poll(const char *id, json_t **result, struct sl_err *err);
/* Targets: GET /v1/internal/bsumm?bck=&provider=&prefix=[&ec=1] -> {"n","bytes","min",
 * "max"} (bck empty: {NAME: {...}} for every ais:// bucket). With ec=1 (the
 * primary's inventories, lost.h) an erasure-coded bucket's counts also have
 * "unprotected_n"/"unprotected_bytes": its objects here that are not
 * (yet) encoded (sl_ec_unprotected). Gateways never ask for them, so public
 * summaries do not carry them. */
void sl_bsumm_internal(struct sl_req *r);

#endif
