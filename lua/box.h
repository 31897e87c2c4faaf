/* SPDX-License-Identifier: MIT
 * box.h: C-side resources owned by a Lua userdata, so that a Lua error
 * (longjmp) cannot leak them (not for callers; they include sandbox.h).
 * Implemented by box.c, which calls only budget.c.
 *
 * Owns: the box metatable (its __gc) and the zlib allocator hooks. A box
 * owns its scratch buffer, its jansson tree and its zlib stream; all the
 * memory they hold is charged to the call's memory cap (budget.h).
 *
 * Who frees what: the C function that made a box calls sl_lua_box_release()
 * on every path it leaves by (return or raise), so the memory is back before
 * the call ends; should a path forget, the __gc metamethod releases it when
 * Lua collects the userdata. The userdata itself belongs to Lua.
 */
#ifndef SL_LUA_BOX_H
#define SL_LUA_BOX_H

#include <zlib.h>
#include <jansson.h>

#include "budget.h"

struct sl_lua_box {
    struct sl_lua_state *S;
    char *buf;          /* malloc'ed scratch buffer, NUL room included in cap */
    size_t len, cap;
    size_t charged;     /* bytes charged for buf and extra (excl. zlib) */
    json_t *json;       /* jansson tree being built or read (owned) */
    z_stream z;
    int zkind;          /* 0 none, 1 deflate, 2 inflate (z needs End) */
};

/** Register the box metatable in the state's registry. Must run once while
 * the state is built, before the first sl_lua_box_new(). [..] -> [..].
 * May raise.
 */
void sl_lua_box_open(lua_State *L);

/** Push a new empty box.
 *
 * The returned pointer is the userdata's memory: valid while the box is
 * on the Lua stack (or otherwise reachable); keep it there until
 * sl_lua_box_release(). [..] -> [.. box]. May raise.
 */
struct sl_lua_box *sl_lua_box_new(lua_State *L);

/** Make room for `need` more bytes (plus a NUL) in b->buf, growing by
 * doubling. b->buf may move; earlier pointers into it are stale.
 * @return 0, or -1 (memory cap or malloc; the box is unchanged).
 * Never raises.
 */
int sl_lua_box_reserve(struct sl_lua_box *b, size_t need);
/** Same, growing to exactly len + need + 1 bytes: for outputs of known
 * size. @return 0 or -1 as above. Never raises. */
int sl_lua_box_reserve_exact(struct sl_lua_box *b, size_t need);

/** Charge n bytes held elsewhere by the box (e.g. its jansson tree); they
 * are uncharged with the rest by sl_lua_box_release().
 * @return 0, or -1 when the memory cap is hit. Never raises.
 */
int sl_lua_box_charge(struct sl_lua_box *b, size_t n);

/** Free everything the box holds (buffer, jansson tree, zlib stream) and
 * uncharge it. The box stays usable (empty). Idempotent; NULL is a no-op.
 * Never raises.
 */
void sl_lua_box_release(struct sl_lua_box *b);

/** zlib allocator hooks charging the call: set z.zalloc/z.zfree to these
 * and z.opaque to the struct sl_lua_state. Z_NULL when the cap is hit.
 */
void *sl_lua_zalloc(void *opaque, unsigned items, unsigned size);
void sl_lua_zfree(void *opaque, void *p);

#endif
