/* SPDX-License-Identifier: MIT
 * json.c: shale.json.encode / decode / null / array on jansson.
 *
 * jansson allocates its trees with malloc, outside the Lua allocator. To
 * keep the call's memory cap meaningful, every tree is owned by a box
 * (freed even if a Lua error unwinds) and charged to the call:
 *   encode  an estimate per node as the tree is built, then the exact size
 *           of the text;
 *   decode  an upper bound computed by a linear pre-scan of the document
 *           (structural characters times the measured per-node cost of
 *           jansson 2.14, about 2x what it really uses) before parsing.
 *
 * Encoding rules: nil and shale.json.null -> null; booleans; numbers
 * (integral and |x| <= 2^53 -> integer, else real; NaN/inf refused);
 * strings must be UTF-8; tables marked with shale.json.array() (and arrays
 * produced by decode) -> arrays; other tables whose keys are exactly
 * 1..n (n >= 1) -> arrays; all other tables -> objects (string keys, number
 * keys written as decimal strings; empty table -> {}). Object keys are
 * sorted, output is compact unless an indent (1..8) is given.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "box.h"
#include "json.h"
#include "value.h"

#define SL_LUA_JSON_MAX_DEPTH 128   /* nesting accepted by shale.json */
#define SL_LUA_JSON_ARRAY "json.array"   /* getmetatable() of decoded arrays */

/* estimated jansson bytes per node (encode) */
#define SL_LUA_JCOST_SCALAR 48
#define SL_LUA_JCOST_CONTAINER 128
#define SL_LUA_JCOST_ENTRY 96

struct sl_lua_jenc {
    lua_State *L;
    struct sl_lua_box *box;
    int arrmt;         /* stack index of the json.array metatable */
    unsigned nodes;
    bool timeout;
    char err[200];
    char path[160];
};

static void sl_lua_jpath(struct sl_lua_jenc *e, const char *seg)
{
    sl_lua_prepend(e->path, sizeof(e->path), seg);
}

static json_t *sl_lua_jfail(struct sl_lua_jenc *e, const char *msg)
{
    if (!e->err[0])
        snprintf(e->err, sizeof(e->err), "%s", msg);
    return NULL;
}

/* Convert the Lua value at idx into a new jansson value. Never raises
 * (stack space was reserved by the caller); NULL with e->err on failure. */
static json_t *sl_lua_jenc_value(struct sl_lua_jenc *e, int idx, int depth)
{
    lua_State *L = e->L;
    if ((++e->nodes & 0xfff) == 0 && sl_lua_deadline_passed(L)) {
        e->timeout = true;
        return sl_lua_jfail(e, "timed out");
    }
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        return json_null();
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) == NULL)
            return json_null();
        return sl_lua_jfail(e, "cannot encode a userdata value");
    case LUA_TBOOLEAN:
        return json_boolean(lua_toboolean(L, idx));
    case LUA_TNUMBER: {
        double d = lua_tonumber(L, idx);
        if (!isfinite(d))
            return sl_lua_jfail(e, "cannot encode NaN or infinity");
        if (sl_lua_box_charge(e->box, SL_LUA_JCOST_SCALAR) != 0)
            return sl_lua_jfail(e, "not enough memory (memory limit)");
        if (d == floor(d) && fabs(d) <= 9007199254740992.0)
            return json_integer((json_int_t)d);
        return json_real(d);
    }
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        if (sl_lua_box_charge(e->box, SL_LUA_JCOST_SCALAR + n) != 0)
            return sl_lua_jfail(e, "not enough memory (memory limit)");
        json_t *j = json_stringn(s, n);
        return j ? j : sl_lua_jfail(e, "string is not valid UTF-8");
    }
    case LUA_TTABLE:
        break;
    default: {
        char m[64];
        snprintf(m, sizeof(m), "cannot encode a %s value", lua_typename(L, lua_type(L, idx)));
        return sl_lua_jfail(e, m);
    }
    }
    if (depth >= SL_LUA_JSON_MAX_DEPTH)
        return sl_lua_jfail(e, "tables nested too deeply (a cycle?)");
    if (sl_lua_box_charge(e->box, SL_LUA_JCOST_CONTAINER) != 0)
        return sl_lua_jfail(e, "not enough memory (memory limit)");
    idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;

    /* classify: count keys, check whether they are exactly 1..n */
    bool marked = false;
    if (lua_getmetatable(L, idx)) {
        marked = lua_rawequal(L, -1, e->arrmt);
        lua_pop(L, 1);
    }
    size_t count = 0;
    bool seq = true;
    double maxk = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        count++;
        if (lua_type(L, -2) == LUA_TNUMBER) {
            double k = lua_tonumber(L, -2);
            if (k < 1 || k != floor(k))
                seq = false;
            else if (k > maxk)
                maxk = k;
        } else {
            seq = false;
        }
        lua_pop(L, 1);
    }
    seq = seq && maxk == (double)count;

    if (marked && !seq)
        return sl_lua_jfail(e, "a table marked as array has keys other than 1..n");
    if (seq && (count > 0 || marked)) {
        json_t *arr = json_array();
        if (!arr)
            return sl_lua_jfail(e, "out of memory");
        for (size_t i = 1; i <= count; i++) {
            lua_rawgeti(L, idx, (int)i);
            json_t *v = sl_lua_box_charge(e->box, SL_LUA_JCOST_ENTRY) == 0
                            ? sl_lua_jenc_value(e, -1, depth + 1)
                            : sl_lua_jfail(e, "not enough memory (memory limit)");
            lua_pop(L, 1);
            if (!v || json_array_append_new(arr, v) != 0) {
                char seg[32];
                snprintf(seg, sizeof(seg), "[%zu]", i);
                sl_lua_jpath(e, seg);
                json_decref(arr);
                return sl_lua_jfail(e, "out of memory");
            }
        }
        return arr;
    }

    json_t *obj = json_object();
    if (!obj)
        return sl_lua_jfail(e, "out of memory");
    lua_pushnil(L);
    while (lua_next(L, idx)) {                                  /* [.. k v] */
        char kbuf[64], seg[80];
        const char *k;
        size_t kl;
        if (lua_type(L, -2) == LUA_TSTRING) {
            k = lua_tolstring(L, -2, &kl);
        } else if (lua_type(L, -2) == LUA_TNUMBER) {
            double d = lua_tonumber(L, -2);
            if (d == floor(d) && fabs(d) < 1e15)
                kl = (size_t)snprintf(kbuf, sizeof(kbuf), "%.0f", d);
            else
                kl = (size_t)snprintf(kbuf, sizeof(kbuf), "%.17g", d);
            k = kbuf;
        } else {
            lua_pop(L, 2);
            json_decref(obj);
            return sl_lua_jfail(e, "object keys must be strings or numbers");
        }
        snprintf(seg, sizeof(seg), ".%.*s%s", (int)(kl > 40 ? 40 : kl), k, kl > 40 ? "..." : "");
        json_t *v = sl_lua_box_charge(e->box, SL_LUA_JCOST_ENTRY + kl) == 0
                        ? sl_lua_jenc_value(e, -1, depth + 1)
                        : sl_lua_jfail(e, "not enough memory (memory limit)");
        if (!v) {
            sl_lua_jpath(e, seg);
            lua_pop(L, 2);
            json_decref(obj);
            return NULL;
        }
        if (json_object_setn_new(obj, k, kl, v) != 0) {
            sl_lua_jpath(e, seg);
            lua_pop(L, 2);
            json_decref(obj);
            return sl_lua_jfail(e, "object key is not valid UTF-8");
        }
        lua_pop(L, 1);                                          /* [.. k] */
    }
    return obj;
}

/* shale.json.encode(v [, indent]) -> string. May raise. */
static int sl_lua_jencode(lua_State *L)
{
    struct sl_lua_state *S = sl_lua_S(L);
    luaL_checkany(L, 1);
    lua_Integer indent = luaL_optinteger(L, 2, 0);
    luaL_argcheck(L, indent >= 0 && indent <= 8, 2, "indent must be 0..8");
    if (!lua_checkstack(L, 2 * SL_LUA_JSON_MAX_DEPTH + 16))
        return luaL_error(L, "shale.json.encode: cannot grow the Lua stack");
    lua_settop(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, S->ref_jsonarr);         /* [v arrmt] */
    struct sl_lua_jenc e = { .L = L, .arrmt = 2 };
    e.box = sl_lua_box_new(L);                                  /* [v arrmt box] */
    e.box->json = sl_lua_jenc_value(&e, 1, 0);
    if (!e.box->json) {
        sl_lua_box_release(e.box);
        if (e.timeout)
            return sl_lua_raise_timeout(L);
        return luaL_error(L, "shale.json.encode: %s%s%s", e.err, e.path[0] ? " at $" : "", e.path);
    }
    size_t flags = JSON_ENCODE_ANY | JSON_SORT_KEYS | JSON_REAL_PRECISION(17) |
                   (indent ? JSON_INDENT(indent) : JSON_COMPACT);
    size_t need = json_dumpb(e.box->json, NULL, 0, flags);
    if (need == 0) {
        sl_lua_box_release(e.box);
        return luaL_error(L, "shale.json.encode: jansson could not serialise the value");
    }
    if (sl_lua_box_reserve(e.box, need) != 0) {
        sl_lua_box_release(e.box);
        return luaL_error(L, "shale.json.encode: not enough memory for %zu bytes of output (memory limit)", need);
    }
    e.box->len = json_dumpb(e.box->json, e.box->buf, need, flags);
    json_decref(e.box->json);
    e.box->json = NULL;
    lua_pushlstring(L, e.box->buf, e.box->len);                 /* [v arrmt box s] */
    sl_lua_box_release(e.box);
    return 1;
}

/* Upper bound of jansson's memory for parsing s (see file comment). */
static size_t sl_lua_jdecode_estimate(const char *s, size_t n)
{
    size_t obj = 0, arr = 0, sep = 0;
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '{':
            obj++;
            break;
        case '[':
            arr++;
            break;
        case ',':
        case ':':
            sep++;
            break;
        }
    }
    return 4096 + 2 * n + 224 * obj + 128 * arr + 64 * sep;
}

/* Push the Lua value for j. [..] -> [.. v]. May raise. */
static void sl_lua_jdec_value(lua_State *L, json_t *j, int depth, unsigned *nodes)
{
    struct sl_lua_state *S = sl_lua_S(L);
    if ((++*nodes & 0xfff) == 0 && sl_lua_deadline_passed(L))
        sl_lua_raise_timeout(L);
    if (depth >= SL_LUA_JSON_MAX_DEPTH)
        luaL_error(L, "shale.json.decode: document nested deeper than %d levels", SL_LUA_JSON_MAX_DEPTH);
    luaL_checkstack(L, 4, "shale.json.decode: nesting");
    switch (json_typeof(j)) {
    case JSON_NULL:
        lua_pushlightuserdata(L, NULL);
        return;
    case JSON_TRUE:
        lua_pushboolean(L, 1);
        return;
    case JSON_FALSE:
        lua_pushboolean(L, 0);
        return;
    case JSON_INTEGER:
        lua_pushnumber(L, (lua_Number)json_integer_value(j));
        return;
    case JSON_REAL:
        lua_pushnumber(L, json_real_value(j));
        return;
    case JSON_STRING:
        lua_pushlstring(L, json_string_value(j), json_string_length(j));
        return;
    case JSON_ARRAY: {
        size_t n = json_array_size(j);
        lua_createtable(L, n > (1u << 26) ? 0 : (int)n, 0);
        for (size_t i = 0; i < n; i++) {
            sl_lua_jdec_value(L, json_array_get(j, i), depth + 1, nodes);
            lua_rawseti(L, -2, (int)(i + 1));
        }
        lua_rawgeti(L, LUA_REGISTRYINDEX, S->ref_jsonarr);
        lua_setmetatable(L, -2);
        return;
    }
    case JSON_OBJECT: {
        lua_createtable(L, 0, json_object_size(j) > (1u << 26) ? 0 : (int)json_object_size(j));
        for (void *it = json_object_iter(j); it; it = json_object_iter_next(j, it)) {
            lua_pushlstring(L, json_object_iter_key(it), json_object_iter_key_len(it));
            sl_lua_jdec_value(L, json_object_iter_value(it), depth + 1, nodes);
            lua_rawset(L, -3);
        }
        return;
    }
    }
    lua_pushnil(L);
}

/* shale.json.decode(s) -> value. May raise. */
static int sl_lua_jdecode(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    lua_settop(L, 1);
    struct sl_lua_box *b = sl_lua_box_new(L);                  /* [s box] */
    size_t est = sl_lua_jdecode_estimate(s, n);
    if (sl_lua_box_charge(b, est) != 0) {
        char sz[32];
        sl_format_size(est, sz, sizeof(sz));
        sl_lua_box_release(b);
        return luaL_error(L, "shale.json.decode: parsing %zu bytes of JSON needs up to %s (memory limit)", n, sz);
    }
    json_error_t je;
    b->json = json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!b->json) {
        char msg[200];
        snprintf(msg, sizeof(msg), "%s (line %d, column %d)", je.text, je.line, je.column);
        sl_lua_box_release(b);
        return luaL_error(L, "shale.json.decode: %s", msg);
    }
    unsigned nodes = 0;
    sl_lua_jdec_value(L, b->json, 0, &nodes);                   /* [s box v] */
    sl_lua_box_release(b);
    return 1;
}

/* shale.json.array(t) -> t, marked to encode as an array even when empty.
 * Refuses tables that already have another metatable (the C API would
 * otherwise bypass a locked __metatable). */
static int sl_lua_jarray(lua_State *L)
{
    struct sl_lua_state *S = sl_lua_S(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, S->ref_jsonarr);         /* [t arrmt] */
    if (lua_getmetatable(L, 1)) {                               /* [t arrmt mt] */
        if (!lua_rawequal(L, 2, 3))
            return luaL_argerror(L, 1, "table already has a metatable");
        lua_settop(L, 1);
        return 1;
    }
    lua_setmetatable(L, 1);
    return 1;
}

void sl_lua_open_json(lua_State *L)
{
    struct sl_lua_state *S = sl_lua_S(L);
    lua_createtable(L, 0, 1);                                   /* [.. arrmt] */
    lua_pushliteral(L, SL_LUA_JSON_ARRAY);
    lua_setfield(L, -2, "__metatable");
    sl_lua_freeze_mark(L, -1);
    S->ref_jsonarr = luaL_ref(L, LUA_REGISTRYINDEX);            /* [..] */

    lua_createtable(L, 0, 4);                                   /* [.. json] */
    lua_pushcfunction(L, sl_lua_jencode);
    lua_setfield(L, -2, "encode");
    lua_pushcfunction(L, sl_lua_jdecode);
    lua_setfield(L, -2, "decode");
    lua_pushcfunction(L, sl_lua_jarray);
    lua_setfield(L, -2, "array");
    lua_pushlightuserdata(L, NULL);
    lua_setfield(L, -2, "null");
    sl_lua_proxy(L, -1, "shale.json");                         /* [.. json proxy] */
    lua_remove(L, -2);                                          /* [.. proxy] */
}
