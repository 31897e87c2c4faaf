/* SPDX-License-Identifier: MIT
 * strmatch.c: string.find / match / gmatch / gsub for sandbox states.
 *
 * Why not LuaJIT's own: Lua patterns backtrack, and the matcher runs in C
 * where the instruction hook never fires. string.find(("a"):rep(3000),
 * ".-.-.-b") runs for minutes and no timeout could stop it. This matcher
 * implements the same Lua 5.1 pattern language (character classes %a %c %d
 * %g %l %p %s %u %w %x %z and their complements, sets [...], the
 * quantifiers * + - ?, anchors ^ $, captures () and position captures (),
 * back-references %1-%9, %b and %f) but counts its steps and checks the
 * call's deadline every few thousand of them, raising the sandbox timeout.
 * Plain find (4th argument true, or no special characters) uses memmem,
 * which is linear, instead of a quadratic scan.
 *
 * Differences from stock 5.1, all toward strictness: patterns may contain
 * "\0" (matched literally instead of ending the pattern); a '%' at the end
 * of a gsub replacement string is an error; character classes are ASCII.
 */
#include <string.h>

#include "strmatch.h"

#define SL_MS_MAXCAPS 32        /* LUA_MAXCAPTURES */
#define SL_MS_MAXDEPTH 200      /* recursion of the matcher ("pattern too complex") */
#define SL_MS_CHECK_MASK 0x3fff /* deadline check every 16384 steps */
#define SL_MS_UNFINISHED (-1)
#define SL_MS_POSITION (-2)

struct sl_ms {
    lua_State *L;
    const char *src, *end;   /* subject */
    const char *pend;        /* end of the pattern */
    int level;               /* captures opened so far */
    int depth;
    unsigned steps;
    struct {
        const char *init;
        ptrdiff_t len;
    } cap[SL_MS_MAXCAPS];
};

static inline void sl_ms_tick(struct sl_ms *ms)
{
    if ((++ms->steps & SL_MS_CHECK_MASK) == 0 && sl_lua_deadline_passed(ms->L))
        sl_lua_raise_timeout(ms->L);
}

/* ---- character classes (ASCII, locale independent) --------------------- */

static int sl_ms_class(int c, int cl)
{
    int r, lower = cl | 0x20;
    switch (lower) {
    case 'a':
        r = (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
        break;
    case 'c':
        r = c < 32 || c == 127;
        break;
    case 'd':
        r = c >= '0' && c <= '9';
        break;
    case 'g':
        r = c > 32 && c < 127;
        break;
    case 'l':
        r = c >= 'a' && c <= 'z';
        break;
    case 'p':
        r = c > 32 && c < 127 && !((c | 0x20) >= 'a' && (c | 0x20) <= 'z') && !(c >= '0' && c <= '9');
        break;
    case 's':
        r = c == ' ' || (c >= '\t' && c <= '\r');
        break;
    case 'u':
        r = c >= 'A' && c <= 'Z';
        break;
    case 'w':
        r = ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || (c >= '0' && c <= '9');
        break;
    case 'x':
        r = (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
        break;
    case 'z':
        r = c == 0;
        break;
    default:
        return cl == c;      /* %. %% %[ ... : the character itself */
    }
    if (!(cl >= 'a' && cl <= 'z'))
        r = !r;              /* %A, %D, ...: complement */
    return r;
}

/* Does c belong to the set p[0]=='[' .. ec[0]==']'? */
static int sl_ms_set(int c, const char *p, const char *ec)
{
    int yes = 1;
    p++;
    if (*p == '^') {
        yes = 0;
        p++;
    }
    for (; p < ec; p++) {
        if (*p == '%' && p + 1 < ec) {
            p++;
            if (sl_ms_class(c, (unsigned char)*p))
                return yes;
        } else if (p + 2 < ec && p[1] == '-') {
            if ((unsigned char)p[0] <= c && c <= (unsigned char)p[2])
                return yes;
            p += 2;
        } else if ((unsigned char)*p == c) {
            return yes;
        }
    }
    return !yes;
}

/* End of the single-character item starting at p. May raise. */
static const char *sl_ms_item_end(struct sl_ms *ms, const char *p)
{
    char c = *p++;
    if (c == '%') {
        if (p >= ms->pend)
            luaL_error(ms->L, "malformed pattern (ends with '%%')");
        return p + 1;
    }
    if (c == '[') {
        if (p < ms->pend && *p == '^')
            p++;
        do {   /* the first character of a set is never its end: "[]]" */
            if (p >= ms->pend)
                luaL_error(ms->L, "malformed pattern (missing ']')");
            c = *p++;
            if (c == '%' && p < ms->pend)
                p++;
        } while (p >= ms->pend || *p != ']');
        return p + 1;
    }
    return p;
}

/* Does the subject character at s match the item p..ep? */
static int sl_ms_single(struct sl_ms *ms, const char *s, const char *p, const char *ep)
{
    if (s >= ms->end)
        return 0;
    int c = (unsigned char)*s;
    switch (*p) {
    case '.':
        return 1;
    case '%':
        return sl_ms_class(c, (unsigned char)p[1]);
    case '[':
        return sl_ms_set(c, p, ep - 1);
    default:
        return (unsigned char)*p == c;
    }
}

static const char *sl_ms_match(struct sl_ms *ms, const char *s, const char *p);

static const char *sl_ms_balance(struct sl_ms *ms, const char *s, const char *p)
{
    if (p + 1 >= ms->pend)
        luaL_error(ms->L, "malformed pattern (missing arguments to '%%b')");
    if (s >= ms->end || *s != p[0])
        return NULL;
    char open = p[0], close = p[1];
    int depth = 1;
    while (++s < ms->end) {
        sl_ms_tick(ms);
        if (*s == close) {
            if (--depth == 0)
                return s + 1;
        } else if (*s == open) {
            depth++;
        }
    }
    return NULL;
}

static const char *sl_ms_max_expand(struct sl_ms *ms, const char *s, const char *p, const char *ep)
{
    ptrdiff_t i = 0;
    while (sl_ms_single(ms, s + i, p, ep)) {
        i++;
        sl_ms_tick(ms);
    }
    for (; i >= 0; i--) {   /* longest first, then give back one at a time */
        const char *r = sl_ms_match(ms, s + i, ep + 1);
        if (r)
            return r;
    }
    return NULL;
}

static const char *sl_ms_min_expand(struct sl_ms *ms, const char *s, const char *p, const char *ep)
{
    for (;;) {
        const char *r = sl_ms_match(ms, s, ep + 1);
        if (r)
            return r;
        if (!sl_ms_single(ms, s, p, ep))
            return NULL;
        s++;
    }
}

static const char *sl_ms_open(struct sl_ms *ms, const char *s, const char *p, ptrdiff_t what)
{
    if (ms->level >= SL_MS_MAXCAPS)
        luaL_error(ms->L, "too many captures");
    ms->cap[ms->level].init = s;
    ms->cap[ms->level].len = what;
    ms->level++;
    const char *r = sl_ms_match(ms, s, p);
    if (!r)
        ms->level--;
    return r;
}

static const char *sl_ms_close(struct sl_ms *ms, const char *s, const char *p)
{
    int l = ms->level - 1;
    while (l >= 0 && ms->cap[l].len != SL_MS_UNFINISHED)
        l--;
    if (l < 0)
        luaL_error(ms->L, "invalid pattern capture");
    ms->cap[l].len = s - ms->cap[l].init;
    const char *r = sl_ms_match(ms, s, p);
    if (!r)
        ms->cap[l].len = SL_MS_UNFINISHED;
    return r;
}

static const char *sl_ms_backref(struct sl_ms *ms, const char *s, int digit)
{
    int l = digit - '1';
    if (l < 0 || l >= ms->level || ms->cap[l].len == SL_MS_UNFINISHED)
        luaL_error(ms->L, "invalid capture index %%%c", digit);
    if (ms->cap[l].len < 0)
        return NULL;   /* a position capture matches nothing */
    size_t len = (size_t)ms->cap[l].len;
    if ((size_t)(ms->end - s) >= len && memcmp(ms->cap[l].init, s, len) == 0)
        return s + len;
    return NULL;
}

/* Match pattern p (to ms->pend) at subject position s: end of the match or
 * NULL. May raise (malformed pattern, too complex, timeout). */
static const char *sl_ms_match(struct sl_ms *ms, const char *s, const char *p)
{
    const char *r = NULL;
    if (++ms->depth > SL_MS_MAXDEPTH)
        luaL_error(ms->L, "pattern too complex");
    sl_ms_tick(ms);
    for (;;) {
        if (p == ms->pend) {
            r = s;
            goto out;
        }
        if (*p == '(') {
            if (p + 1 < ms->pend && p[1] == ')')
                r = sl_ms_open(ms, s, p + 2, SL_MS_POSITION);
            else
                r = sl_ms_open(ms, s, p + 1, SL_MS_UNFINISHED);
            goto out;
        }
        if (*p == ')') {
            r = sl_ms_close(ms, s, p + 1);
            goto out;
        }
        if (*p == '$' && p + 1 == ms->pend) {
            r = s == ms->end ? s : NULL;
            goto out;
        }
        if (*p == '%' && p + 1 < ms->pend) {
            if (p[1] == 'b') {
                s = sl_ms_balance(ms, s, p + 2);
                if (!s)
                    goto out;
                p += 4;
                continue;
            }
            if (p[1] == 'f') {
                p += 2;
                if (p >= ms->pend || *p != '[')
                    luaL_error(ms->L, "missing '[' after '%%f' in pattern");
                const char *ep = sl_ms_item_end(ms, p);
                int prev = s == ms->src ? 0 : (unsigned char)s[-1];
                int cur = s < ms->end ? (unsigned char)*s : 0;
                if (sl_ms_set(prev, p, ep - 1) || !sl_ms_set(cur, p, ep - 1))
                    goto out;
                p = ep;
                continue;
            }
            if (p[1] >= '0' && p[1] <= '9') {
                s = sl_ms_backref(ms, s, p[1]);
                if (!s)
                    goto out;
                p += 2;
                continue;
            }
        }
        /* a single-character item, maybe with a quantifier */
        const char *ep = sl_ms_item_end(ms, p);
        int m = sl_ms_single(ms, s, p, ep);
        char q = ep < ms->pend ? *ep : 0;
        if (q == '?') {
            if (m && (r = sl_ms_match(ms, s + 1, ep + 1)) != NULL)
                goto out;
            p = ep + 1;
            continue;
        }
        if (q == '+') {
            r = m ? sl_ms_max_expand(ms, s + 1, p, ep) : NULL;
            goto out;
        }
        if (q == '*') {
            r = sl_ms_max_expand(ms, s, p, ep);
            goto out;
        }
        if (q == '-') {
            r = sl_ms_min_expand(ms, s, p, ep);
            goto out;
        }
        if (!m)
            goto out;
        s++;
        p = ep;
    }
out:
    ms->depth--;
    return r;
}

/* ---- captures ------------------------------------------------------------ */

/* Push capture i (the whole match s..e when there are no captures).
 * [..] -> [.. cap]. May raise. */
static void sl_ms_push_one(struct sl_ms *ms, int i, const char *s, const char *e)
{
    if (i >= ms->level) {
        if (i != 0)
            luaL_error(ms->L, "invalid capture index %%%d", i + 1);
        lua_pushlstring(ms->L, s, (size_t)(e - s));
        return;
    }
    ptrdiff_t l = ms->cap[i].len;
    if (l == SL_MS_UNFINISHED)
        luaL_error(ms->L, "unfinished capture");
    if (l == SL_MS_POSITION)
        lua_pushinteger(ms->L, ms->cap[i].init - ms->src + 1);
    else
        lua_pushlstring(ms->L, ms->cap[i].init, (size_t)l);
}

/* [..] -> [.. captures]; returns how many. s == NULL: captures only. */
static int sl_ms_push_all(struct sl_ms *ms, const char *s, const char *e)
{
    int n = (ms->level == 0 && s) ? 1 : ms->level;
    luaL_checkstack(ms->L, n, "too many captures");
    for (int i = 0; i < n; i++)
        sl_ms_push_one(ms, i, s, e);
    return n;
}

static void sl_ms_init(struct sl_ms *ms, lua_State *L, const char *s, size_t ls, const char *p, size_t lp)
{
    ms->L = L;
    ms->src = s;
    ms->end = s + ls;
    ms->pend = p + lp;
    ms->level = 0;
    ms->depth = 0;
    ms->steps = 0;
}

static bool sl_ms_plain(const char *p, size_t lp)
{
    for (size_t i = 0; i < lp; i++)
        if (p[i] && strchr("^$*+?.([%-", p[i]))
            return false;
    return true;
}

/* ---- the library functions ----------------------------------------------- */

/* string.find(s, p [, init [, plain]]) / string.match(s, p [, init]). */
static int sl_ms_find_aux(lua_State *L, bool find)
{
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    lua_Integer init = luaL_optinteger(L, 3, 1);
    if (init < 0)
        init += (lua_Integer)ls + 1;
    if (init < 1)
        init = 1;
    if (init > (lua_Integer)ls + 1)
        init = (lua_Integer)ls + 1;
    size_t start = (size_t)init - 1;

    if (find && (lua_toboolean(L, 4) || sl_ms_plain(p, lp))) {
        const char *r = lp == 0 ? s + start : memmem(s + start, ls - start, p, lp);
        if (r) {
            lua_pushinteger(L, r - s + 1);
            lua_pushinteger(L, r - s + (lua_Integer)lp);
            return 2;
        }
        lua_pushnil(L);
        return 1;
    }
    struct sl_ms ms;
    bool anchor = lp > 0 && *p == '^';
    if (anchor) {
        p++;
        lp--;
    }
    sl_ms_init(&ms, L, s, ls, p, lp);
    const char *s1 = s + start;
    do {
        ms.level = 0;
        ms.depth = 0;
        const char *e = sl_ms_match(&ms, s1, p);
        if (e) {
            if (find) {
                lua_pushinteger(L, s1 - s + 1);
                lua_pushinteger(L, e - s);
                return sl_ms_push_all(&ms, NULL, NULL) + 2;
            }
            return sl_ms_push_all(&ms, s1, e);
        }
    } while (s1++ < ms.end && !anchor);
    lua_pushnil(L);
    return 1;
}

static int sl_ms_find(lua_State *L)
{
    return sl_ms_find_aux(L, true);
}

static int sl_ms_match_fn(lua_State *L)
{
    return sl_ms_find_aux(L, false);
}

/* Iterator of gmatch. Upvalues: subject, pattern, next offset. */
static int sl_ms_gmatch_next(lua_State *L)
{
    size_t ls, lp;
    const char *s = lua_tolstring(L, lua_upvalueindex(1), &ls);
    const char *p = lua_tolstring(L, lua_upvalueindex(2), &lp);
    lua_Integer pos = lua_tointeger(L, lua_upvalueindex(3));
    struct sl_ms ms;
    sl_ms_init(&ms, L, s, ls, p, lp);
    for (const char *src = s + pos; src <= ms.end; src++) {
        ms.level = 0;
        ms.depth = 0;
        const char *e = sl_ms_match(&ms, src, p);
        if (e) {
            lua_Integer next = e - s;
            if (e == src)
                next++;   /* empty match: move on */
            lua_pushinteger(L, next);
            lua_replace(L, lua_upvalueindex(3));
            return sl_ms_push_all(&ms, src, e);
        }
    }
    lua_pushinteger(L, (lua_Integer)ls + 1);
    lua_replace(L, lua_upvalueindex(3));
    return 0;
}

/* string.gmatch(s, p). [s p] -> [iterator]. */
static int sl_ms_gmatch(lua_State *L)
{
    luaL_checkstring(L, 1);
    luaL_checkstring(L, 2);
    lua_settop(L, 2);
    lua_pushinteger(L, 0);
    lua_pushcclosure(L, sl_ms_gmatch_next, 3);
    return 1;
}

/* Append the replacement for match s..e to b (repl at stack index 3). */
static void sl_ms_add_value(struct sl_ms *ms, luaL_Buffer *b, const char *s, const char *e, int tr)
{
    lua_State *L = ms->L;
    if (tr == LUA_TSTRING || tr == LUA_TNUMBER) {
        size_t l;
        const char *r = lua_tolstring(L, 3, &l);
        for (size_t i = 0; i < l; i++) {
            if (r[i] != '%') {
                luaL_addchar(b, r[i]);
                continue;
            }
            if (++i >= l)
                luaL_error(L, "invalid use of '%%' in replacement string");
            if (r[i] == '0') {
                luaL_addlstring(b, s, (size_t)(e - s));
            } else if (r[i] >= '1' && r[i] <= '9') {
                sl_ms_push_one(ms, r[i] - '1', s, e);
                luaL_addvalue(b);
            } else {
                luaL_addchar(b, r[i]);
            }
        }
        return;
    }
    sl_lua_checkpoint(L);
    if (tr == LUA_TFUNCTION) {
        lua_pushvalue(L, 3);
        int n = sl_ms_push_all(ms, s, e);
        lua_call(L, n, 1);
    } else {
        sl_ms_push_one(ms, 0, s, e);
        lua_gettable(L, 3);
    }
    if (!lua_toboolean(L, -1)) {        /* nil or false: keep the original */
        lua_pop(L, 1);
        lua_pushlstring(L, s, (size_t)(e - s));
    } else if (!lua_isstring(L, -1)) {
        luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
    }
    luaL_addvalue(b);
}

/* string.gsub(s, p, repl [, n]) -> string, count. */
static int sl_ms_gsub(lua_State *L)
{
    size_t ls, lp;
    const char *src = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    int tr = lua_type(L, 3);
    lua_Integer max_n = luaL_optinteger(L, 4, (lua_Integer)ls + 1);
    luaL_argcheck(L, tr == LUA_TNUMBER || tr == LUA_TSTRING || tr == LUA_TFUNCTION || tr == LUA_TTABLE, 3,
                  "string/function/table expected");
    lua_settop(L, 3);
    bool anchor = lp > 0 && *p == '^';
    if (anchor) {
        p++;
        lp--;
    }
    struct sl_ms ms;
    sl_ms_init(&ms, L, src, ls, p, lp);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    lua_Integer n = 0;
    while (n < max_n) {
        ms.level = 0;
        ms.depth = 0;
        const char *e = sl_ms_match(&ms, src, p);
        if (e) {
            n++;
            sl_ms_add_value(&ms, &b, src, e, tr);
        }
        if (e && e > src)
            src = e;
        else if (src < ms.end)
            luaL_addchar(&b, *src++);
        else
            break;
        if (anchor)
            break;
        sl_ms_tick(&ms);
    }
    luaL_addlstring(&b, src, (size_t)(ms.end - src));
    luaL_pushresult(&b);
    lua_pushinteger(L, n);
    return 2;
}

void sl_lua_strmatch_install(lua_State *L, int idx)
{
    idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
    lua_pushcfunction(L, sl_ms_find);
    lua_setfield(L, idx, "find");
    lua_pushcfunction(L, sl_ms_match_fn);
    lua_setfield(L, idx, "match");
    lua_pushcfunction(L, sl_ms_gmatch);
    lua_setfield(L, idx, "gmatch");
    lua_pushcfunction(L, sl_ms_gsub);
    lua_setfield(L, idx, "gsub");
}
