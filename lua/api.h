/* SPDX-License-Identifier: MIT
 * api.h: the shale table scripts see (not for callers; they include
 * sandbox.h). Implemented by api.c, which calls json.c, box.c and budget.c.
 *
 * Owns: the shale.* functions other than shale.json (log, md5, sha256,
 * xxhash, base64, gzip, gunzip, startswith, endswith, split, trim) and the
 * delivery of log lines to the call's sink (struct sl_lua_ctx log_cb).
 * Every C buffer those functions use is held by a box (box.h) and freed
 * before they return or raise; nothing here outlives a call.
 */
#ifndef SL_LUA_API_H
#define SL_LUA_API_H

#include "budget.h"

/** Build the shale table, with shale.base64 and shale.json as frozen
 * proxies, and register the box metatable.
 *
 * The table itself is left unfrozen for the caller to add to and freeze.
 * Builds into the state's registry; call once per state, while it is
 * built. [..] -> [.. shale]. May raise.
 */
void sl_lua_open_shale(lua_State *L);

#endif
