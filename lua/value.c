/* SPDX-License-Identifier: MIT
 * value.c: the C-side value model (struct sl_lua_val) and its conversion to
 * and from Lua values.
 *
 * C -> Lua (arguments) runs in protected mode and may raise. Lua -> C
 * (results) runs after the protected call returned: it must not raise, so it
 * only uses stack operations that never allocate through Lua (type tests,
 * lua_next, raw reads of strings that already are strings) and mallocs the
 * C copies itself.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "value.h"

#define SL_LUA_ENTRY_COST 16 /* bytes of max_output charged per table entry */

/* ---- constructors ------------------------------------------------------ */

struct sl_lua_val sl_lua_nil(void)
{
    struct sl_lua_val v;
    memset(&v, 0, sizeof(v));
    return v;
}

struct sl_lua_val sl_lua_bool(bool b)
{
    struct sl_lua_val v = sl_lua_nil();
    v.type = SL_LUA_BOOL;
    v.b = b;
    return v;
}

struct sl_lua_val sl_lua_num(double n)
{
    struct sl_lua_val v = sl_lua_nil();
    v.type = SL_LUA_NUM;
    v.n = n;
    return v;
}

struct sl_lua_val sl_lua_str_ref(const void *p, size_t len)
{
    struct sl_lua_val v = sl_lua_nil();
    v.type = SL_LUA_STR;
    v.borrowed = true;
    v.s.p = p ? p : "";
    v.s.len = p ? len : 0;
    return v;
}

struct sl_lua_val sl_lua_cstr_ref(const char *s)
{
    return sl_lua_str_ref(s, s ? strlen(s) : 0);
}

struct sl_lua_val sl_lua_table(void)
{
    struct sl_lua_val v = sl_lua_nil();
    v.type = SL_LUA_TABLE;
    return v;
}

int sl_lua_str_dup(struct sl_lua_val *out, const void *p, size_t len)
{
    *out = sl_lua_nil();
    if (len == SIZE_MAX)
        return -1;
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    if (len)
        memcpy(copy, p, len);
    copy[len] = 0;
    out->type = SL_LUA_STR;
    out->s.p = copy;
    out->s.len = len;
    return 0;
}

void sl_lua_val_free(struct sl_lua_val *v)
{
    if (!v)
        return;
    if (v->type == SL_LUA_STR && !v->borrowed) {
        free((void *)v->s.p);
    } else if (v->type == SL_LUA_TABLE) {
        for (size_t i = 0; i < v->t.n; i++) {
            sl_lua_val_free(&v->t.kv[i].k);
            sl_lua_val_free(&v->t.kv[i].v);
        }
        free(v->t.kv);
    }
    *v = sl_lua_nil();
}

static bool sl_lua_is_int(double n)
{
    return isfinite(n) && n == floor(n) && fabs(n) < 9223372036854775808.0;
}

static bool sl_lua_valid_key(const struct sl_lua_val *k)
{
    return k->type == SL_LUA_STR || (k->type == SL_LUA_NUM && sl_lua_is_int(k->n));
}

int sl_lua_table_add(struct sl_lua_val *t, struct sl_lua_val k, struct sl_lua_val v)
{
    if (!t || t->type != SL_LUA_TABLE || !sl_lua_valid_key(&k))
        goto fail;
    if (t->t.n == t->t.cap) {
        size_t ncap = t->t.cap ? t->t.cap * 2 : 8;
        if (ncap > SIZE_MAX / sizeof(struct sl_lua_kv))
            goto fail;
        struct sl_lua_kv *kv = realloc(t->t.kv, ncap * sizeof(*kv));
        if (!kv)
            goto fail;
        t->t.kv = kv;
        t->t.cap = ncap;
    }
    t->t.kv[t->t.n].k = k;
    t->t.kv[t->t.n].v = v;
    t->t.n++;
    return 0;
fail:
    sl_lua_val_free(&k);
    sl_lua_val_free(&v);
    return -1;
}

int sl_lua_table_adds(struct sl_lua_val *t, const char *key, struct sl_lua_val v)
{
    struct sl_lua_val k;
    if (!key || sl_lua_str_dup(&k, key, strlen(key)) != 0) {
        sl_lua_val_free(&v);
        return -1;
    }
    return sl_lua_table_add(t, k, v);
}

int sl_lua_table_addi(struct sl_lua_val *t, int64_t key, struct sl_lua_val v)
{
    return sl_lua_table_add(t, sl_lua_num((double)key), v);
}

const struct sl_lua_val *sl_lua_table_getl(const struct sl_lua_val *t, const void *key, size_t len)
{
    if (!t || t->type != SL_LUA_TABLE || !key)
        return NULL;
    for (size_t i = t->t.n; i-- > 0;) {
        const struct sl_lua_val *k = &t->t.kv[i].k;
        if (k->type == SL_LUA_STR && k->s.len == len && memcmp(k->s.p, key, len) == 0)
            return &t->t.kv[i].v;
    }
    return NULL;
}

const struct sl_lua_val *sl_lua_table_get(const struct sl_lua_val *t, const char *key)
{
    return key ? sl_lua_table_getl(t, key, strlen(key)) : NULL;
}

const struct sl_lua_val *sl_lua_table_geti(const struct sl_lua_val *t, int64_t key)
{
    if (!t || t->type != SL_LUA_TABLE)
        return NULL;
    for (size_t i = t->t.n; i-- > 0;) {
        const struct sl_lua_val *k = &t->t.kv[i].k;
        if (k->type == SL_LUA_NUM && k->n == (double)key)
            return &t->t.kv[i].v;
    }
    return NULL;
}

const char *sl_lua_type_name(enum sl_lua_type t)
{
    switch (t) {
    case SL_LUA_NIL:
        return "nil";
    case SL_LUA_BOOL:
        return "boolean";
    case SL_LUA_NUM:
        return "number";
    case SL_LUA_STR:
        return "string";
    case SL_LUA_TABLE:
        return "table";
    }
    return "?";
}

char *sl_lua_val_describe(const struct sl_lua_val *v, char *buf, size_t n)
{
    if (!buf || n == 0)
        return buf;
    if (!v) {
        snprintf(buf, n, "nil");
        return buf;
    }
    switch (v->type) {
    case SL_LUA_NIL:
        snprintf(buf, n, "nil");
        break;
    case SL_LUA_BOOL:
        snprintf(buf, n, "boolean %s", v->b ? "true" : "false");
        break;
    case SL_LUA_NUM:
        snprintf(buf, n, "number %.14g", v->n);
        break;
    case SL_LUA_STR:
        snprintf(buf, n, "string (%zu bytes)", v->s.len);
        break;
    case SL_LUA_TABLE:
        snprintf(buf, n, "table (%zu %s)", v->t.n, v->t.n == 1 ? "entry" : "entries");
        break;
    default:
        snprintf(buf, n, "?");
    }
    return buf;
}

/* ---- C -> Lua ---------------------------------------------------------- */

void sl_lua_push_val(lua_State *L, const struct sl_lua_val *v, int depth)
{
    switch (v->type) {
    case SL_LUA_NIL:
        lua_pushnil(L);
        return;
    case SL_LUA_BOOL:
        lua_pushboolean(L, v->b);
        return;
    case SL_LUA_NUM:
        lua_pushnumber(L, v->n);
        return;
    case SL_LUA_STR:
        lua_pushlstring(L, v->s.p ? v->s.p : "", v->s.p ? v->s.len : 0);
        return;
    case SL_LUA_TABLE:
        break;
    default:
        luaL_error(L, "argument of unknown type %d", (int)v->type);
        return;
    }
    if (depth >= SL_LUA_MAX_DEPTH)
        luaL_error(L, "argument tables nested deeper than %d levels", SL_LUA_MAX_DEPTH);
    if (!lua_checkstack(L, 4))
        luaL_error(L, "cannot grow the Lua stack for arguments");
    size_t narr = 0;
    for (size_t i = 0; i < v->t.n; i++)
        if (v->t.kv[i].k.type == SL_LUA_NUM && v->t.kv[i].k.n == (double)(narr + 1))
            narr++;
    lua_createtable(L, narr > 1u << 26 ? 0 : (int)narr,
                    v->t.n - narr > 1u << 26 ? 0 : (int)(v->t.n - narr));   /* [.. t] */
    for (size_t i = 0; i < v->t.n; i++) {
        const struct sl_lua_kv *kv = &v->t.kv[i];
        if (!sl_lua_valid_key(&kv->k))
            luaL_error(L, "argument table key of type %s is not a string or an integer",
                       sl_lua_type_name(kv->k.type));
        sl_lua_push_val(L, &kv->k, depth + 1);                  /* [.. t k] */
        sl_lua_push_val(L, &kv->v, depth + 1);                  /* [.. t k v] */
        lua_rawset(L, -3);                                      /* [.. t] */
    }
}

/* ---- Lua -> C ---------------------------------------------------------- */

void sl_lua_prepend(char *buf, size_t cap, const char *seg)
{
    size_t sl = strlen(seg), bl = strlen(buf);
    if (cap == 0)
        return;
    if (sl > cap - 1)
        sl = cap - 1;
    if (bl > cap - 1 - sl)
        bl = cap - 1 - sl;
    memmove(buf + sl, buf, bl);
    memcpy(buf, seg, sl);
    buf[sl + bl] = 0;
}

struct sl_lua_conv {
    size_t *budget;
    int code;
    char *msg;
    size_t msglen;
    char path[160];   /* where the failing value sits, built while unwinding */
};

static int sl_lua_conv_fail(struct sl_lua_conv *cv, int code, const char *fmt, const char *arg)
{
    cv->code = code;
    snprintf(cv->msg, cv->msglen, fmt, arg);
    return -1;
}

/* Prepend "[key]" to cv->path for the key at idx (a string or number). */
static void sl_lua_conv_path(lua_State *L, int idx, struct sl_lua_conv *cv)
{
    char seg[80];
    if (lua_type(L, idx) == LUA_TNUMBER) {
        snprintf(seg, sizeof(seg), "[%.14g]", lua_tonumber(L, idx));
    } else if (lua_type(L, idx) == LUA_TSTRING) {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        snprintf(seg, sizeof(seg), "[\"%.*s%s\"]", (int)(n > 40 ? 40 : n), s, n > 40 ? "..." : "");
    } else {
        snprintf(seg, sizeof(seg), "[?]");
    }
    sl_lua_prepend(cv->path, sizeof(cv->path), seg);
}

static int sl_lua_kv_cmp(const void *a, const void *b)
{
    const struct sl_lua_val *x = &((const struct sl_lua_kv *)a)->k, *y = &((const struct sl_lua_kv *)b)->k;
    if (x->type != y->type)
        return x->type == SL_LUA_NUM ? -1 : 1;
    if (x->type == SL_LUA_NUM)
        return x->n < y->n ? -1 : x->n > y->n;
    size_t n = x->s.len < y->s.len ? x->s.len : y->s.len;
    int c = memcmp(x->s.p, y->s.p, n);
    if (c)
        return c;
    return x->s.len < y->s.len ? -1 : x->s.len > y->s.len;
}

static int sl_lua_to_val_r(lua_State *L, int idx, struct sl_lua_val *out, int depth, struct sl_lua_conv *cv)
{
    *out = sl_lua_nil();
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        return 0;
    case LUA_TBOOLEAN:
        *out = sl_lua_bool(lua_toboolean(L, idx));
        return 0;
    case LUA_TNUMBER:
        *out = sl_lua_num(lua_tonumber(L, idx));
        return 0;
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        if (n > *cv->budget) {
            char sz[32];
            snprintf(sz, sizeof(sz), "%zu", n);
            return sl_lua_conv_fail(cv, SL_ETOOBIG, "a string of %s bytes, more than the output limit", sz);
        }
        *cv->budget -= n;
        if (sl_lua_str_dup(out, s, n) != 0)
            return sl_lua_conv_fail(cv, SL_ETOOBIG, "a string too large to copy (%s)", "out of memory");
        return 0;
    }
    case LUA_TTABLE:
        break;
    default:
        return sl_lua_conv_fail(cv, SL_EINVAL, "a %s value, which cannot leave the sandbox",
                                lua_typename(L, lua_type(L, idx)));
    }
    if (depth >= SL_LUA_MAX_DEPTH) {
        char d[16];
        snprintf(d, sizeof(d), "%d", SL_LUA_MAX_DEPTH);
        return sl_lua_conv_fail(cv, SL_EINVAL, "tables nested deeper than %s levels (a cycle?)", d);
    }
    idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
    *out = sl_lua_table();
    lua_pushnil(L);                                             /* [.. nil] */
    while (lua_next(L, idx)) {                                  /* [.. k v] */
        struct sl_lua_val k = sl_lua_nil(), v = sl_lua_nil();
        int kt = lua_type(L, -2);
        if (*cv->budget < SL_LUA_ENTRY_COST) {
            lua_pop(L, 2);
            return sl_lua_conv_fail(cv, SL_ETOOBIG, "%s", "a table with more entries than the output limit allows");
        }
        *cv->budget -= SL_LUA_ENTRY_COST;
        if (kt == LUA_TNUMBER) {
            double n = lua_tonumber(L, -2);
            if (!sl_lua_is_int(n)) {
                lua_pop(L, 2);
                return sl_lua_conv_fail(cv, SL_EINVAL, "a table with a non-integer number key%s", "");
            }
            k = sl_lua_num(n);
        } else if (kt == LUA_TSTRING) {
            size_t n;
            const char *s = lua_tolstring(L, -2, &n);
            if (n > *cv->budget) {
                lua_pop(L, 2);
                return sl_lua_conv_fail(cv, SL_ETOOBIG, "%s", "a table key longer than the output limit");
            }
            *cv->budget -= n;
            if (sl_lua_str_dup(&k, s, n) != 0) {
                lua_pop(L, 2);
                return sl_lua_conv_fail(cv, SL_ETOOBIG, "%s", "a table key too large to copy (out of memory)");
            }
        } else {
            lua_pop(L, 2);
            return sl_lua_conv_fail(cv, SL_EINVAL, "a table with a %s key (only string and integer keys)",
                                    lua_typename(L, kt));
        }
        if (sl_lua_to_val_r(L, -1, &v, depth + 1, cv) != 0) {
            sl_lua_conv_path(L, -2, cv);
            sl_lua_val_free(&k);
            sl_lua_val_free(&v);
            lua_pop(L, 2);
            return -1;
        }
        if (sl_lua_table_add(out, k, v) != 0) {
            lua_pop(L, 2);
            return sl_lua_conv_fail(cv, SL_ETOOBIG, "%s", "a table too large to copy (out of memory)");
        }
        lua_pop(L, 1);                                          /* [.. k] */
    }
    if (out->t.n > 1)
        qsort(out->t.kv, out->t.n, sizeof(*out->t.kv), sl_lua_kv_cmp);
    return 0;
}

int sl_lua_to_val(lua_State *L, int idx, struct sl_lua_val *out, size_t *budget, int *code, char *msg,
                  size_t msglen)
{
    struct sl_lua_conv cv = { .budget = budget, .msg = msg, .msglen = msglen };
    int top = lua_gettop(L);
    idx = idx < 0 ? top + idx + 1 : idx;
    msg[0] = 0;
    if (sl_lua_to_val_r(L, idx, out, 0, &cv) == 0)
        return 0;
    sl_lua_val_free(out);
    lua_settop(L, top);
    if (cv.path[0]) {
        char tmp[512];
        snprintf(tmp, sizeof(tmp), "%s at result%s", msg, cv.path);
        snprintf(msg, msglen, "%s", tmp);
    }
    *code = cv.code;
    return -1;
}
