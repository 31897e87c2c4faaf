/* SPDX-License-Identifier: MIT
 * remais.h: remote AIStore-compatible clusters attached to this one
 * (AIStore's "remote AIS", spec backends.md §5), kept in the cluster
 * document "remais" {"version", "clusters": {ALIAS: {"url", "uuid"}}}:
 *
 *   PUT /v1/cluster/attach?what=remote   headers Ais-Remote-Ais-Alias, Ais-Remote-Ais-Url
 *   PUT /v1/cluster/detach?what=remote   header Ais-Remote-Ais-Alias
 *   GET /v1/cluster?what=remote          {"a": [{"url","alias","uuid","smap"}], "ver": N}
 *
 * A bucket reaches one as its backend_bck ais://@ALIAS/NAME (the "ais"
 * backend plugin, plugins/backend_ais.c, speaks the native API to it).
 */
#ifndef SL_REMAIS_H
#define SL_REMAIS_H

#include "sl.h"
#include "http.h"

/* PUT .../attach or .../detach (the primary's, body read): true when it
 * was one of them (answered, maybe off the HTTP thread). */
bool sl_remais_put(struct sl_req *r);
/* GET /v1/cluster?what=remote (a gateway's): answered off the HTTP thread. */
void sl_remais_get(struct sl_req *r);
/* The URL of the attached cluster whose alias (or UUID) is key: 0, or -1
 * with an error that says how to attach one. */
int sl_remais_url(const char *key, char *url, size_t n, struct sl_err *err);

#endif
