/* SPDX-License-Identifier: MIT
 * box.c: boxes, userdata owning C buffers (scratch bytes, a jansson tree,
 * a zlib stream) so a Lua error cannot leak them, and the zlib allocator
 * hooks that charge the call's memory cap. See box.h.
 */
#include <stdlib.h>
#include <string.h>

#include "box.h"

#define SL_LUA_BOX_MT "sl.lua.box"
#define SL_LUA_ZHDR 16

void sl_lua_box_release(struct sl_lua_box *b)
{
    if (!b)
        return;
    if (b->zkind == 1)
        deflateEnd(&b->z);
    else if (b->zkind == 2)
        inflateEnd(&b->z);
    b->zkind = 0;
    if (b->json) {
        json_decref(b->json);
        b->json = NULL;
    }
    free(b->buf);
    b->buf = NULL;
    b->len = b->cap = 0;
    if (b->S)
        sl_lua_mem_uncharge(b->S, b->charged);
    b->charged = 0;
}

/* __gc of boxes. [box] -> []. */
static int sl_lua_box_gc(lua_State *L)
{
    sl_lua_box_release(lua_touserdata(L, 1));
    return 0;
}

void sl_lua_box_open(lua_State *L)
{
    luaL_newmetatable(L, SL_LUA_BOX_MT);                       /* [.. boxmt] */
    lua_pushcfunction(L, sl_lua_box_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushliteral(L, SL_LUA_LOCKED);
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 1);
}

struct sl_lua_box *sl_lua_box_new(lua_State *L)
{
    struct sl_lua_box *b = lua_newuserdata(L, sizeof(*b));     /* [.. box] */
    memset(b, 0, sizeof(*b));
    b->S = sl_lua_S(L);
    luaL_getmetatable(L, SL_LUA_BOX_MT);
    lua_setmetatable(L, -2);
    return b;
}

int sl_lua_box_charge(struct sl_lua_box *b, size_t n)
{
    if (sl_lua_mem_charge(b->S, n) != 0)
        return -1;
    b->charged += n;
    return 0;
}

/* Grow b->buf to ncap bytes (ncap > b->cap), charging the difference.
 * 0, or -1 with the box unchanged. */
static int sl_lua_box_grow(struct sl_lua_box *b, size_t ncap)
{
    size_t more = ncap - b->cap;
    if (sl_lua_box_charge(b, more) != 0)
        return -1;
    char *p = realloc(b->buf, ncap);
    if (!p)
        goto fail;
    b->buf = p;
    b->cap = ncap;
    return 0;
fail:
    sl_lua_mem_uncharge(b->S, more);
    b->charged -= more;
    return -1;
}

int sl_lua_box_reserve(struct sl_lua_box *b, size_t need)
{
    if (b->buf && need < b->cap - b->len)
        return 0;
    if (need > SIZE_MAX / 2 - b->len)
        return -1;
    size_t ncap = b->cap ? b->cap : 4096;
    while (ncap < b->len + need + 1)
        ncap *= 2;
    return sl_lua_box_grow(b, ncap);
}

int sl_lua_box_reserve_exact(struct sl_lua_box *b, size_t need)
{
    if (b->buf && need < b->cap - b->len)
        return 0;
    if (need > SIZE_MAX - 1 - b->len)
        return -1;
    return sl_lua_box_grow(b, b->len + need + 1);
}

/* Each block starts with a header holding its size, so zfree can uncharge
 * exactly what zalloc charged. */
void *sl_lua_zalloc(void *opaque, unsigned items, unsigned size)
{
    struct sl_lua_state *S = opaque;
    size_t n = (size_t)items * size + SL_LUA_ZHDR;
    if (sl_lua_mem_charge(S, n) != 0)
        return Z_NULL;
    size_t *p = malloc(n);
    if (!p)
        goto fail;
    p[0] = n;
    return (char *)p + SL_LUA_ZHDR;
fail:
    sl_lua_mem_uncharge(S, n);
    return Z_NULL;
}

void sl_lua_zfree(void *opaque, void *q)
{
    if (!q)
        return;
    size_t *p = (size_t *)((char *)q - SL_LUA_ZHDR);
    sl_lua_mem_uncharge(opaque, p[0]);
    free(p);
}
