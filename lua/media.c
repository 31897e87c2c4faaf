/* SPDX-License-Identifier: MIT
 * media.c: what shale.image and shale.audio share (media.h): the header of
 * NumPy's .npy format 1.0 (numpy/lib/format.py: magic, version, a
 * little-endian header length, then a Python dict literal padded with
 * spaces and ended by a newline so that the data starts on a 64-byte
 * boundary) and the check of an options table's keys.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "media.h"

size_t sl_npy_elsize(enum sl_npy_dtype dt)
{
    return dt == SL_NPY_F32 ? 4 : dt == SL_NPY_I16 ? 2 : 1;
}

size_t sl_npy_header(char *out, enum sl_npy_dtype dt, const size_t *shape, int ndim)
{
    static const char *const descr[] = { "|u1", "<f4", "<i2" };
    char dict[160];
    int n = snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': (", descr[dt]);
    for (int i = 0; i < ndim; i++)
        n += snprintf(dict + n, sizeof(dict) - (size_t)n, "%zu%s", shape[i],
                      i + 1 < ndim ? ", " : ndim == 1 ? "," : "");   /* numpy's own text: (5,) and (3, 4) */
    n += snprintf(dict + n, sizeof(dict) - (size_t)n, "), }");
    size_t total = 10 + (size_t)n + 1;
    total = (total + 63) / 64 * 64;
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    size_t hl = total - 10;
    out[8] = (char)(hl & 0xff);
    out[9] = (char)(hl >> 8);
    memcpy(out + 10, dict, (size_t)n);
    memset(out + 10 + n, ' ', total - 10 - (size_t)n - 1);
    out[total - 1] = '\n';
    return total;
}

void sl_lua_opts_known(lua_State *L, int idx, const char *prefix, const char *fn, const char *const *keys)
{
    if (lua_isnoneornil(L, idx))
        return;
    luaL_checktype(L, idx, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        bool ok = false;
        if (lua_type(L, -2) == LUA_TSTRING)
            for (int i = 0; keys[i] && !ok; i++)
                ok = !strcmp(lua_tostring(L, -2), keys[i]);
        if (!ok) {
            char list[200] = "";
            for (int i = 0; keys[i]; i++)
                snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "", keys[i]);
            lua_pop(L, 1);
            if (lua_type(L, -1) == LUA_TSTRING)
                luaL_error(L, "%s%s: unknown option \"%s\" (options: %s)", prefix, fn, lua_tostring(L, -1), list);
            luaL_error(L, "%s%s: option keys are names, got a %s key (options: %s)", prefix, fn, luaL_typename(L, -1),
                       list);
        }
        lua_pop(L, 1);
    }
}
