/* SPDX-License-Identifier: MIT
 * value.h: struct sl_lua_val (sandbox.h) to and from Lua values (not for
 * callers; they include sandbox.h). Implemented by value.c, which calls no
 * other lua/ file.
 *
 * Who frees what: values pushed into Lua are copied (Lua owns the copies;
 * the struct sl_lua_val stays the caller's). Values converted out of Lua
 * are new: malloc'ed C copies the caller frees with sl_lua_val_free().
 */
#ifndef SL_LUA_VALUE_H
#define SL_LUA_VALUE_H

#include <lua.h>

#include "sandbox.h"

#define SL_LUA_MAX_DEPTH 32         /* nesting of tables crossing the boundary */

/** Push v onto the stack (strings and tables are copied into Lua; v is
 * only read). depth: 0 at the top level. [..] -> [.. v]. May raise.
 */
void sl_lua_push_val(lua_State *L, const struct sl_lua_val *v, int depth);

/** Convert the value at idx into *out.
 *
 * On success *out is new: the caller frees it with sl_lua_val_free(). On
 * failure what was built is already freed and *out is nil. Never raises and does not allocate through Lua;
 * needs 2*SL_LUA_MAX_DEPTH+4 free stack slots. *budget is decremented by
 * string bytes + 16 per table entry.
 * @return 0, or -1 with *code (SL_EINVAL or SL_ETOOBIG) and msg filled.
 */
int sl_lua_to_val(lua_State *L, int idx, struct sl_lua_val *out, size_t *budget, int *code, char *msg,
                  size_t msglen);

/** Insert seg at the front of the NUL-terminated buf (capacity cap),
 * truncating the tail. Used to build "where" paths while unwinding.
 * Never raises.
 */
void sl_lua_prepend(char *buf, size_t cap, const char *seg);

#endif
