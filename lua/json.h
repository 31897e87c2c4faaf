/* SPDX-License-Identifier: MIT
 * json.h: shale.json (not for callers; they include sandbox.h).
 * Implemented by json.c, which calls box.c, value.c and budget.c.
 *
 * Owns: shale.json.encode / decode / array / null and the json.array
 * metatable (a registry reference kept in S->ref_jsonarr for the life of
 * the state). The jansson trees the functions build are held by boxes
 * (box.h) and freed before the functions return or raise.
 */
#ifndef SL_LUA_JSON_H
#define SL_LUA_JSON_H

#include "budget.h"

/** Build the shale.json table as a frozen proxy and create the json.array
 * metatable (sets S->ref_jsonarr). Call once per state, while it is built,
 * after the frozen set exists. [..] -> [.. json]. May raise.
 */
void sl_lua_open_json(lua_State *L);

#endif
