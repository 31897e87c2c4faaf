/* SPDX-License-Identifier: MIT
 * audio.c: shale.audio (placeholder until the libsndfile version lands). */
#include "media.h"

void sl_lua_open_audio(lua_State *L)
{
    lua_createtable(L, 0, 0);
    sl_lua_proxy(L, -1, "shale.audio");
    lua_remove(L, -2);
}
