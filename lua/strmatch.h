/* SPDX-License-Identifier: MIT
 * strmatch.h: string.find / match / gmatch / gsub that honour the call's
 * deadline (not for callers; they include sandbox.h). Implemented by
 * strmatch.c, which calls only budget.c.
 *
 * Owns nothing that outlives a call: the matcher's state lives on the C
 * stack of each string function; captures and results are Lua values.
 */
#ifndef SL_LUA_STRMATCH_H
#define SL_LUA_STRMATCH_H

#include "budget.h"

/** Replace find/match/gmatch/gsub in the string table at idx with versions
 * that count their steps and check the call's deadline (raising the
 * sandbox timeout). [..] -> [..]. May raise.
 */
void sl_lua_strmatch_install(lua_State *L, int idx);

#endif
