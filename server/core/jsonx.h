/* SPDX-License-Identifier: MIT
 * jsonx.h: jansson helpers: uint64 numbers (jansson integers are int64),
 * serialization in AIStore's style (compact + "\n"), case-insensitive field
 * lookup (Go's decoder matches field names case-insensitively), typed getters.
 */
#ifndef SL_JSONX_H
#define SL_JSONX_H

#include "sl.h"
#include <jansson.h>

/* A uint64 that serializes as a bare JSON number (or, with SL_JD_U64STR,
 * as a decimal string so jansson peers can parse it back). New reference. */
json_t *sl_json_u64(uint64_t v);

#define SL_JD_PRETTY 1
#define SL_JD_U64STR 2
/* Returns new (free()); NULL on failure. */
char *sl_json_dump(const json_t *j, int flags, size_t *len);

/* Case-insensitive object lookup. The value (and a string from
 * sl_json_str) is borrowed from o: valid while o holds it (until o is
 * decref'd or the key replaced); json_incref / copy to keep it. */
json_t *sl_json_get(const json_t *o, const char *key);
const char *sl_json_str(const json_t *o, const char *key, const char *dflt);
int64_t sl_json_int(const json_t *o, const char *key, int64_t dflt);   /* accepts "123" too */
bool sl_json_bool(const json_t *o, const char *key, bool dflt);
/* The first key of object o that is none of known[0..n) (case-insensitive,
 * as the getters above), or NULL when every key is known. The key is
 * borrowed from o, as for sl_json_get. */
const char *sl_json_unknown_key(const json_t *o, const char *const *known, size_t n);
/* The same, but the key must match exactly (for fields read with
 * json_object_get, which is case-sensitive). */
const char *sl_json_unknown_key_exact(const json_t *o, const char *const *known, size_t n);

/* Parse JSON in which integers beyond int64 (Go uint64s such as a Smap's
 * id_digest) become decimal strings instead of failing. New reference, or
 * NULL with je filled. */
json_t *sl_json_loadb_u64(const char *p, size_t n, json_error_t *je);

/* Parse with a clear error ("invalid JSON in request body: ... (line L,
 * column C)"). New reference, or NULL with err (400). */
json_t *sl_json_parse(const char *p, size_t n, const char *what, struct sl_err *err);

#endif
