/* SPDX-License-Identifier: MIT
 * api.c: the shale table scripts see (log, hashes, base64, gzip, string
 * helpers; shale.json lives in json.c, shale.image and shale.audio in
 * image.c and audio.c) and the log sink under shale.log.
 * C buffers live in boxes (box.c), so a Lua error cannot leak them.
 *
 * Every function here checks all its arguments before it acquires anything,
 * because luaL_error/luaL_check* longjmp. C buffers are charged against the
 * call's memory limit, so gzip/base64/gunzip bombs fail with a memory error
 * instead of growing the server.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <xxhash.h>

#include "api.h"
#include "b64.h"
#include "box.h"
#include "json.h"
#include "media.h"

#define SL_LUA_ZCHUNK (1u << 20)    /* zlib input/output step (deadline checks) */

/* ---- log --------------------------------------------------------------- */

/* Deliver one log line to the call's sink (applies max_log). Never raises. */
static void sl_lua_log_emit(lua_State *L, const char *msg, size_t len)
{
    struct sl_lua_ctx *c = sl_lua_S(L)->call;
    if (!c || !c->log_cb || c->log_truncated)
        return;
    if (len > c->lim.max_log - c->log_used) {
        char note[96];
        int n = snprintf(note, sizeof(note), "(log truncated: more than %zu bytes in this call)", c->lim.max_log);
        c->log_truncated = true;
        c->log_cb(c->log_ctx, note, (size_t)n);
        return;
    }
    c->log_used += len;
    c->log_cb(c->log_ctx, msg, len);
}

/* shale.log(...) / print(...): tostring() each argument, join with TAB,
 * hand the line to the caller's sink. Upvalue 1: tostring.
 * [args] -> []. May raise (a __tostring metamethod may). */
static int sl_lua_l_log(lua_State *L)
{
    struct sl_lua_ctx *c = sl_lua_S(L)->call;
    int n = lua_gettop(L);
    if (!c || !c->log_cb || c->log_truncated)
        return 0;
    sl_lua_checkpoint(L);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 1; i <= n; i++) {
        if (i > 1)
            luaL_addchar(&b, '\t');
        lua_pushvalue(L, lua_upvalueindex(1));
        lua_pushvalue(L, i);
        lua_call(L, 1, 1);
        if (!lua_isstring(L, -1))
            return luaL_error(L, "shale.log: 'tostring' must return a string");
        luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    sl_lua_log_emit(L, s, len);
    return 0;
}

/* ---- boxes ------------------------------------------------------------- */

/* Release the box, then raise "<fn>: <what>" (a memory error when the
 * call's cap was hit, which sandbox.c reports as SL_ETOOBIG). */
static int sl_lua_box_fail(lua_State *L, struct sl_lua_box *b, const char *fn, const char *what)
{
    char msg[256];
    snprintf(msg, sizeof(msg), "%s: %s", fn, what);
    sl_lua_box_release(b);
    return luaL_error(L, "%s", msg);
}

/* ---- hashes ------------------------------------------------------------ */

/* [s] -> [hex]. May raise. */
static int sl_lua_digest(lua_State *L, const EVP_MD *md, const char *fn)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int olen = 0;
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    if (!md || EVP_Digest(s, n, out, &olen, md, NULL) != 1)
        return luaL_error(L, "%s: digest not available (OpenSSL)", fn);
    sl_hex(out, olen, hex);
    lua_pushlstring(L, hex, 2 * (size_t)olen);
    return 1;
}

static int sl_lua_l_md5(lua_State *L)
{
    return sl_lua_digest(L, EVP_md5(), "shale.md5");
}

static int sl_lua_l_sha256(lua_State *L)
{
    return sl_lua_digest(L, EVP_sha256(), "shale.sha256");
}

/* shale.xxhash(s [, seed]): XXH64, 16 lower-case hex digits. */
static int sl_lua_l_xxhash(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    double d = luaL_optnumber(L, 2, 0);
    luaL_argcheck(L, d >= 0 && d <= 9007199254740992.0 && d == (double)(uint64_t)d, 2,
                  "seed must be an integer in 0..2^53");
    char hex[17];
    snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)XXH64(s, n, (XXH64_hash_t)d));
    lua_pushlstring(L, hex, 16);
    return 1;
}

/* ---- base64 ------------------------------------------------------------ */

/* shale.base64.encode(s): standard alphabet, padded, no line breaks. */
static int sl_lua_l_b64enc(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    luaL_argcheck(L, n <= (size_t)INT_MAX / 4 * 3 - 3, 1, "input too large");
    size_t out = sl_b64_encoded_len(n, 0);
    struct sl_lua_box *b = sl_lua_box_new(L);
    if (sl_lua_box_reserve_exact(b, out + 1) != 0)
        return sl_lua_box_fail(L, b, "shale.base64.encode", "not enough memory for the output (memory limit)");
    sl_b64_encode(s, n, 0, b->buf);
    lua_pushlstring(L, b->buf, out);
    sl_lua_box_release(b);
    return 1;
}

/* shale.base64.decode(s): standard alphabet; padding optional; ASCII
 * whitespace ignored; anything else is an error. */
static int sl_lua_l_b64dec(lua_State *L)
{
    static const char *fn = "shale.base64.decode";
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    luaL_argcheck(L, n <= (size_t)INT_MAX - 8, 1, "input too large");
    struct sl_lua_box *b = sl_lua_box_new(L);
    if (sl_lua_box_reserve_exact(b, sl_b64_decoded_max(n) + 1) != 0)
        return sl_lua_box_fail(L, b, fn, "not enough memory for the output (memory limit)");
    char why[128];
    ssize_t w = sl_b64_decode(s, n, SL_B64_NOPAD | SL_B64_SPACE, b->buf, why, sizeof(why));
    if (w < 0)
        return sl_lua_box_fail(L, b, fn, why);
    lua_pushlstring(L, b->buf, (size_t)w);
    sl_lua_box_release(b);
    return 1;
}

/* ---- gzip -------------------------------------------------------------- */

/* shale.gzip(s [, level]): gzip format (RFC 1952), mtime 0, level 0..9
 * (default 6). */
static int sl_lua_l_gzip(lua_State *L)
{
    static const char *fn = "shale.gzip";
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    lua_Integer level = luaL_optinteger(L, 2, 6);
    luaL_argcheck(L, level >= 0 && level <= 9, 2, "level must be 0..9");
    struct sl_lua_box *b = sl_lua_box_new(L);
    b->z.zalloc = sl_lua_zalloc;
    b->z.zfree = sl_lua_zfree;
    b->z.opaque = b->S;
    if (deflateInit2(&b->z, (int)level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return sl_lua_box_fail(L, b, fn, "cannot initialise zlib (memory limit)");
    b->zkind = 1;
    uLong bound = deflateBound(&b->z, (uLong)n);
    if (sl_lua_box_reserve_exact(b, (size_t)bound) != 0)
        return sl_lua_box_fail(L, b, fn, "not enough memory for the output (memory limit)");
    size_t off = 0;
    int zr;
    do {
        size_t step = n - off > SL_LUA_ZCHUNK ? SL_LUA_ZCHUNK : n - off;
        b->z.next_in = (Bytef *)(s + off);
        b->z.avail_in = (uInt)step;
        off += step;
        int flush = off == n ? Z_FINISH : Z_NO_FLUSH;
        do {
            if (b->len == b->cap && sl_lua_box_reserve(b, 65536) != 0)
                return sl_lua_box_fail(L, b, fn, "not enough memory for the output (memory limit)");
            b->z.next_out = (Bytef *)b->buf + b->len;
            b->z.avail_out = (uInt)(b->cap - b->len > UINT_MAX ? UINT_MAX : b->cap - b->len);
            uInt before = b->z.avail_out;
            zr = deflate(&b->z, flush);
            b->len += before - b->z.avail_out;
            if (zr == Z_STREAM_ERROR)
                return sl_lua_box_fail(L, b, fn, "compression failed (zlib stream error)");
        } while (b->z.avail_in > 0 || (flush == Z_FINISH && zr != Z_STREAM_END));
        if (sl_lua_deadline_passed(L)) {
            sl_lua_box_release(b);
            return sl_lua_raise_timeout(L);
        }
    } while (off < n);
    lua_pushlstring(L, b->buf, b->len);
    sl_lua_box_release(b);
    return 1;
}

/* shale.gunzip(s [, max_bytes]): decompress gzip data (several members are
 * concatenated, like gunzip does). The output may not exceed max_bytes
 * (when given) nor what is left of the call's memory limit. */
static int sl_lua_l_gunzip(lua_State *L)
{
    static const char *fn = "shale.gunzip";
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    double dmax = luaL_optnumber(L, 2, 0);
    luaL_argcheck(L, dmax >= 0, 2, "max_bytes must be >= 0");
    size_t limit = dmax > 0 && dmax < 1e18 ? (size_t)dmax : SIZE_MAX - 2;
    if (n < 18 || (unsigned char)s[0] != 0x1f || (unsigned char)s[1] != 0x8b)
        return luaL_error(L, "%s: not gzip data (%s)", fn, n < 18 ? "too short" : "bad magic");
    struct sl_lua_box *b = sl_lua_box_new(L);
    b->z.zalloc = sl_lua_zalloc;
    b->z.zfree = sl_lua_zfree;
    b->z.opaque = b->S;
    if (inflateInit2(&b->z, 15 + 16) != Z_OK)
        return sl_lua_box_fail(L, b, fn, "cannot initialise zlib (memory limit)");
    b->zkind = 2;
    b->z.next_in = (Bytef *)s;
    b->z.avail_in = (uInt)(n > UINT_MAX ? UINT_MAX : n);
    size_t fed = b->z.avail_in;
    for (;;) {
        if (b->len == b->cap) {
            /* grow, but never past limit + 1: one byte over proves "too big" */
            size_t want = b->cap ? b->cap : (n < 16384 ? 65536 : 4 * n);
            if (want > limit + 1 - b->len)
                want = limit + 1 - b->len;
            if (want == 0 || sl_lua_box_reserve(b, want) != 0) {
                char what[160];
                char sz[32];
                sl_format_size(b->len, sz, sizeof(sz));
                if (b->len > limit || want == 0)
                    snprintf(what, sizeof(what), "decompressed data exceeds max_bytes (%zu)", limit);
                else
                    snprintf(what, sizeof(what), "decompressed data exceeds the memory limit (after %s)", sz);
                return sl_lua_box_fail(L, b, fn, what);
            }
        }
        b->z.next_out = (Bytef *)b->buf + b->len;
        size_t room = b->cap - b->len;
        if (room > limit + 1 - b->len)
            room = limit + 1 - b->len;
        b->z.avail_out = (uInt)(room > SL_LUA_ZCHUNK ? SL_LUA_ZCHUNK : room);
        uInt before = b->z.avail_out;
        int zr = inflate(&b->z, Z_NO_FLUSH);
        b->len += before - b->z.avail_out;
        if (b->len > limit) {
            char what[96];
            snprintf(what, sizeof(what), "decompressed data exceeds max_bytes (%zu)", limit);
            return sl_lua_box_fail(L, b, fn, what);
        }
        if (b->z.avail_in == 0 && fed < n) {   /* inputs over 4 GiB */
            size_t more = n - fed > UINT_MAX ? UINT_MAX : n - fed;
            b->z.next_in = (Bytef *)(s + fed);
            b->z.avail_in = (uInt)more;
            fed += more;
        }
        if (zr == Z_STREAM_END) {
            size_t rest = b->z.avail_in + (n - fed);
            if (rest == 0)
                break;
            const unsigned char *nx = b->z.next_in;
            if (rest < 2 || nx[0] != 0x1f || nx[1] != 0x8b)
                return sl_lua_box_fail(L, b, fn, "trailing garbage after gzip data");
            if (inflateReset(&b->z) != Z_OK)
                return sl_lua_box_fail(L, b, fn, "zlib reset failed");
            continue;
        }
        if (zr == Z_MEM_ERROR)
            return sl_lua_box_fail(L, b, fn, "not enough memory for zlib (memory limit)");
        if (zr == Z_DATA_ERROR || zr == Z_NEED_DICT || zr == Z_STREAM_ERROR) {
            char what[160];
            snprintf(what, sizeof(what), "corrupt gzip data (%s)", b->z.msg ? b->z.msg : "zlib error");
            return sl_lua_box_fail(L, b, fn, what);
        }
        if (zr == Z_BUF_ERROR && b->z.avail_in == 0 && b->len < b->cap)
            return sl_lua_box_fail(L, b, fn, "truncated gzip data");
        if (sl_lua_deadline_passed(L)) {
            sl_lua_box_release(b);
            return sl_lua_raise_timeout(L);
        }
    }
    lua_pushlstring(L, b->len ? b->buf : "", b->len);
    sl_lua_box_release(b);
    return 1;
}

/* ---- strings ----------------------------------------------------------- */

static int sl_lua_l_startswith(lua_State *L)
{
    size_t n, m;
    const char *s = luaL_checklstring(L, 1, &n);
    const char *p = luaL_checklstring(L, 2, &m);
    lua_pushboolean(L, m <= n && memcmp(s, p, m) == 0);
    return 1;
}

static int sl_lua_l_endswith(lua_State *L)
{
    size_t n, m;
    const char *s = luaL_checklstring(L, 1, &n);
    const char *p = luaL_checklstring(L, 2, &m);
    lua_pushboolean(L, m <= n && memcmp(s + n - m, p, m) == 0);
    return 1;
}

/* shale.split(s, sep): plain (not a pattern) separator, non-empty; keeps
 * empty fields: split("a,,b", ",") == {"a", "", "b"}, split("", ",") == {""}.
 * [s sep] -> [array]. May raise. */
static int sl_lua_l_split(lua_State *L)
{
    size_t n, m;
    const char *s = luaL_checklstring(L, 1, &n);
    const char *sep = luaL_checklstring(L, 2, &m);
    luaL_argcheck(L, m > 0, 2, "separator must not be empty");
    const char *p = s, *end = s + n, *q;
    int i = 0;
    lua_newtable(L);
    while ((q = memmem(p, (size_t)(end - p), sep, m)) != NULL) {
        lua_pushlstring(L, p, (size_t)(q - p));
        lua_rawseti(L, -2, ++i);
        p = q + m;
        if ((i & 0xffff) == 0 && sl_lua_deadline_passed(L))
            return sl_lua_raise_timeout(L);
    }
    lua_pushlstring(L, p, (size_t)(end - p));
    lua_rawseti(L, -2, ++i);
    return 1;
}

static bool sl_lua_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* shale.trim(s): without leading/trailing ASCII whitespace. */
static int sl_lua_l_trim(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    size_t a = 0, z = n;
    while (a < z && sl_lua_space((unsigned char)s[a]))
        a++;
    while (z > a && sl_lua_space((unsigned char)s[z - 1]))
        z--;
    lua_pushlstring(L, s + a, z - a);
    return 1;
}

/* ---- the table ---------------------------------------------------------- */

void sl_lua_open_shale(lua_State *L)
{
    static const luaL_Reg fns[] = {
        { "md5", sl_lua_l_md5 },
        { "sha256", sl_lua_l_sha256 },
        { "xxhash", sl_lua_l_xxhash },
        { "gzip", sl_lua_l_gzip },
        { "gunzip", sl_lua_l_gunzip },
        { "startswith", sl_lua_l_startswith },
        { "endswith", sl_lua_l_endswith },
        { "split", sl_lua_l_split },
        { "trim", sl_lua_l_trim },
    };
    int top = lua_gettop(L);

    sl_lua_box_open(L);

    lua_createtable(L, 0, 16);                                  /* [.. shale] */
    for (size_t i = 0; i < SL_ARRAY_SIZE(fns); i++) {
        lua_pushcfunction(L, fns[i].func);
        lua_setfield(L, top + 1, fns[i].name);
    }
    lua_getglobal(L, "tostring");
    lua_pushcclosure(L, sl_lua_l_log, 1);
    lua_setfield(L, top + 1, "log");

    lua_createtable(L, 0, 2);                                   /* [.. shale b64] */
    lua_pushcfunction(L, sl_lua_l_b64enc);
    lua_setfield(L, -2, "encode");
    lua_pushcfunction(L, sl_lua_l_b64dec);
    lua_setfield(L, -2, "decode");
    sl_lua_proxy(L, -1, "shale.base64");                       /* [.. shale b64 proxy] */
    lua_setfield(L, top + 1, "base64");
    lua_pop(L, 1);                                              /* [.. shale] */

    sl_lua_open_json(L);                                        /* [.. shale json] */
    lua_setfield(L, top + 1, "json");
    sl_lua_open_image(L);                                       /* [.. shale image] */
    lua_setfield(L, top + 1, "image");
    sl_lua_open_audio(L);                                       /* [.. shale audio] */
    lua_setfield(L, top + 1, "audio");
}
