/* SPDX-License-Identifier: MIT
 * sandbox.c: the top of lua/. Sandboxed LuaJIT states (libraries opened one
 * by one, frozen base environment, guarded pcall/xpcall/coroutines and raw
 * writers, per-call environments), the per-thread state pool, the chunk
 * cache, error reports, and the sl_lua_call/sl_lua_check entry points.
 * Budgets and freezing are in budget.c, the shale table in api.c and
 * json.c, the string matcher in strmatch.c, values in value.c.
 *
 * Life of a state: created lazily by the first call on a thread
 * (sl_lua_state_new), used by one call at a time, returned to the thread's
 * pool when the call left it clean, closed otherwise. Between calls the
 * memory cap is off (SIZE_MAX) and no hook is set, so housekeeping done
 * outside protected mode cannot raise.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include <luajit.h>
#include <openssl/evp.h>

#include "api.h"
#include "budget.h"
#include "strmatch.h"
#include "value.h"
#include "log.h"

#define SL_LUA_POOL_MAX 2                  /* idle states kept per thread */
#define SL_LUA_CACHE_MAX 64                /* compiled chunks kept per state */
#define SL_LUA_GC_SLACK (4u << 20)         /* full GC after a call above this */
#define SL_LUA_STATE_MAX_LIVE (48u << 20)  /* recycle states holding more */
#define SL_LUA_STATE_MAX_CALLS 100000      /* recycle states after this many calls */
#define SL_LUA_MSGH_HEADROOM (256u * 1024) /* extra bytes for building messages */
#define SL_LUA_CONVERT_SLOTS (2 * SL_LUA_MAX_DEPTH + 8)
#define SL_LUA_MAX_TIMEOUT_NS (86400LL * 1000000000LL) /* larger timeouts are clamped */

/* ---- counters ---------------------------------------------------------- */

static _Atomic uint64_t st_calls, st_errors, st_timeouts, st_mem_errors, st_created, st_discarded, st_hits,
    st_misses;

#define SL_LUA_COUNT(c) atomic_fetch_add_explicit(&(c), 1, memory_order_relaxed)

void sl_lua_stats_get(struct sl_lua_stats *out)
{
    out->calls = atomic_load_explicit(&st_calls, memory_order_relaxed);
    out->errors = atomic_load_explicit(&st_errors, memory_order_relaxed);
    out->timeouts = atomic_load_explicit(&st_timeouts, memory_order_relaxed);
    out->mem_errors = atomic_load_explicit(&st_mem_errors, memory_order_relaxed);
    out->states_created = atomic_load_explicit(&st_created, memory_order_relaxed);
    out->states_discarded = atomic_load_explicit(&st_discarded, memory_order_relaxed);
    out->cache_hits = atomic_load_explicit(&st_hits, memory_order_relaxed);
    out->cache_misses = atomic_load_explicit(&st_misses, memory_order_relaxed);
}

void sl_lua_limits_default(struct sl_lua_limits *l)
{
    l->timeout_ns = SL_LUA_DEFAULT_TIMEOUT_NS;
    l->mem_limit = SL_LUA_DEFAULT_MEM_LIMIT;
    l->max_output = SL_LUA_DEFAULT_MAX_OUTPUT;
    l->max_log = SL_LUA_DEFAULT_MAX_LOG;
    l->seed = SL_LUA_DEFAULT_SEED;
}

/* ---- checkpoint wrappers ----------------------------------------------- */

/* The checkpoint as a Lua-callable function (for the pcall wrapper).
 * [] -> []. May raise. */
static int sl_lua_l_checkpoint(lua_State *L)
{
    sl_lua_checkpoint(L);
    return 0;
}

/* pcall for scripts: a trusted Lua function (so that coroutines can still
 * yield across it) that passes the checkpoint before every protected call.
 * Needed because LuaJIT cannot run the count hook within LUA_MINSTACK slots
 * of the stack limit (it raises "stack overflow" instead), so a script
 * that keeps recursing into pcall at the limit would never see the hook. */
static const char sl_lua_pcall_src[] =
    "local rawpcall, checkpoint = ...\n"
    "return function(f, ...) checkpoint() return rawpcall(f, ...) end\n";

/* ---- deterministic math.random ----------------------------------------- */

/* math.random([m [, n]]): same contract as Lua 5.1, but the sequence depends
 * only on the call's seed. [args] -> [number]. May raise. */
static int sl_lua_math_random(lua_State *L)
{
    struct sl_lua_ctx *c = sl_lua_S(L)->call;
    if (!c)
        return luaL_error(L, "math.random: no call in progress");
    double r = (double)(sl_lua_rng_next(c->rng) >> 11) * 0x1.0p-53;
    switch (lua_gettop(L)) {
    case 0:
        lua_pushnumber(L, r);
        return 1;
    case 1: {
        double u = floor(luaL_checknumber(L, 1));
        luaL_argcheck(L, u >= 1, 1, "interval is empty");
        lua_pushnumber(L, floor(r * u) + 1);
        return 1;
    }
    case 2: {
        double lo = floor(luaL_checknumber(L, 1)), up = floor(luaL_checknumber(L, 2));
        luaL_argcheck(L, lo <= up, 2, "interval is empty");
        lua_pushnumber(L, floor(r * (up - lo + 1)) + lo);
        return 1;
    }
    default:
        return luaL_error(L, "wrong number of arguments to 'random'");
    }
}

/* math.randomseed(x): restart this call's sequence from x. [x] -> []. */
static int sl_lua_math_randomseed(lua_State *L)
{
    struct sl_lua_ctx *c = sl_lua_S(L)->call;
    double d = luaL_checknumber(L, 1);
    uint64_t bits;
    if (!c)
        return luaL_error(L, "math.randomseed: no call in progress");
    memcpy(&bits, &d, sizeof(bits));
    sl_lua_rng_seed(c->rng, bits);
    return 0;
}

/* ---- freezing ---------------------------------------------------------- */

/* __index of the base environment: unknown globals are errors, not nil.
 * [base k] -> raises. */
static int sl_lua_undeclared(lua_State *L)
{
    if (lua_type(L, 2) == LUA_TSTRING)
        return luaL_error(L, "attempt to read undeclared global '%s'", lua_tostring(L, 2));
    return luaL_error(L, "attempt to read undeclared global (a %s key)", luaL_typename(L, 2));
}

/* Wrapper for functions that write tables raw (rawset, table.insert, ...),
 * which would otherwise bypass __newindex on frozen tables. Upvalues:
 * 1 original function, 2 frozen set, 3 bitmask of argument positions that
 * are written, 4 name. [args] -> [results]. May raise. */
static int sl_lua_guarded(lua_State *L)
{
    unsigned mask = (unsigned)lua_tointeger(L, lua_upvalueindex(3));
    int top = lua_gettop(L);
    for (int i = 1; i <= top && i < 32; i++) {
        if (!(mask & (1u << i)) || lua_type(L, i) != LUA_TTABLE)
            continue;
        lua_pushvalue(L, i);
        lua_rawget(L, lua_upvalueindex(2));
        int frozen = lua_toboolean(L, -1);
        lua_pop(L, 1);
        if (frozen)
            return luaL_error(L, "%s: attempt to modify a read-only table", lua_tostring(L, lua_upvalueindex(4)));
    }
    sl_lua_checkpoint(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, top, LUA_MULTRET);
    return lua_gettop(L);
}

/* Replace t[field] (t at idx) with a guarded wrapper. [..] -> [..]. */
static void sl_lua_guard_field(lua_State *L, int idx, const char *field, unsigned mask, const char *label)
{
    struct sl_lua_state *S = sl_lua_S(L);
    lua_getfield(L, idx, field);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return;
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, S->ref_frozen);
    lua_pushinteger(L, (lua_Integer)mask);
    lua_pushstring(L, label);
    lua_pushcclosure(L, sl_lua_guarded, 4);
    lua_setfield(L, idx, field);
}

/* Handler used in place of a script's xpcall handler. When the error is
 * our timeout it returns the message without running script code: LuaJIT
 * runs error handlers with the hook still marked active (the error was
 * raised inside the hook), so a looping handler would never be stopped.
 * Upvalue 1: the script's handler. [msg] -> [msg']. May raise. */
static int sl_lua_xpcall_guard(lua_State *L)
{
    struct sl_lua_ctx *c = sl_lua_S(L)->call;
    if (!c || c->timed_out || c->cstack_over)
        return lua_gettop(L) ? 1 : 0;
    sl_lua_checkpoint(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

/* xpcall(f, handler, ...) with the handler wrapped by sl_lua_xpcall_guard.
 * Upvalue 1: LuaJIT's xpcall. [f h args] -> [ok results]. May raise. */
static int sl_lua_xpcall(lua_State *L)
{
    sl_lua_checkpoint(L);
    luaL_checkany(L, 1);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, 2);
    lua_pushcclosure(L, sl_lua_xpcall_guard, 1);
    lua_replace(L, 2);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* coroutine.resume(co, ...) with the C stack budget checked first: each
 * nested resume recurses in C, and LuaJIT has no limit of its own.
 * Upvalue 1: LuaJIT's resume. [co args] -> [ok results]. May raise. */
static int sl_lua_co_resume(lua_State *L)
{
    sl_lua_checkpoint(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* The function returned by coroutine.wrap. Upvalue 1: LuaJIT's wrapper.
 * [args] -> [results]. May raise. */
static int sl_lua_co_wrapped(lua_State *L)
{
    sl_lua_checkpoint(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* coroutine.wrap(f). Upvalue 1: LuaJIT's wrap. [f] -> [g]. May raise. */
static int sl_lua_co_wrap(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_settop(L, 1);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, 1, 1);
    lua_pushcclosure(L, sl_lua_co_wrapped, 1);
    return 1;
}

/* ---- state creation ---------------------------------------------------- */

static int sl_lua_run(lua_State *L);
static int sl_lua_msgh(lua_State *L);

/* Globals scripts may read, copied from LuaJIT's base library. Everything
 * else (load, loadstring, dofile, loadfile, require, module, getfenv,
 * setfenv, collectgarbage, newproxy, gcinfo, ...) is simply absent. */
static const char *const sl_lua_base_allow[] = {
    "assert", "error", "getmetatable", "ipairs", "next", "pairs", "rawequal", "rawget",
    "select", "setmetatable", "tonumber", "tostring", "type", "unpack", "_VERSION",
};

/* Libraries exposed as read-only proxies. */
static const char *const sl_lua_libs[] = { "string", "table", "math", "bit", "coroutine" };

/* Build everything in a fresh state. Runs under lua_cpcall. [ud] -> []. */
static int sl_lua_state_init(lua_State *L)
{
    struct sl_lua_state *S = sl_lua_S(L);
    static const struct {
        const char *name;
        lua_CFunction open;
    } libs[] = {
        { "", luaopen_base },                  /* also opens coroutine */
        { LUA_TABLIBNAME, luaopen_table },
        { LUA_STRLIBNAME, luaopen_string },
        { LUA_MATHLIBNAME, luaopen_math },
        { LUA_BITLIBNAME, luaopen_bit },
    };
    lua_settop(L, 0);
    for (size_t i = 0; i < SL_ARRAY_SIZE(libs); i++) {
        lua_pushcfunction(L, libs[i].open);
        lua_pushstring(L, libs[i].name);
        lua_call(L, 1, 0);
    }
    /* Count hooks do not run inside compiled traces: interpreter only. */
    luaJIT_setmode(L, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);

    lua_newtable(L);
    S->ref_frozen = luaL_ref(L, LUA_REGISTRYINDEX);

    /* Patch the real library tables (scripts only ever see proxies). */
    lua_getglobal(L, "string");                              /* [string] */
    lua_pushnil(L);
    lua_setfield(L, 1, "dump");
    sl_lua_strmatch_install(L, 1);
    lua_pop(L, 1);
    lua_getglobal(L, "math");                                /* [math] */
    lua_pushcfunction(L, sl_lua_math_random);
    lua_setfield(L, 1, "random");
    lua_pushcfunction(L, sl_lua_math_randomseed);
    lua_setfield(L, 1, "randomseed");
    lua_pop(L, 1);
    lua_getglobal(L, "table");                               /* [table] */
    sl_lua_guard_field(L, 1, "insert", 1u << 1, "table.insert");
    sl_lua_guard_field(L, 1, "remove", 1u << 1, "table.remove");
    sl_lua_guard_field(L, 1, "sort", 1u << 1, "table.sort");
    sl_lua_guard_field(L, 1, "move", (1u << 1) | (1u << 5), "table.move");
    sl_lua_guard_field(L, 1, "setn", 1u << 1, "table.setn");
    lua_pop(L, 1);
    lua_getglobal(L, "coroutine");                           /* [coroutine] */
    lua_getfield(L, 1, "resume");
    lua_pushcclosure(L, sl_lua_co_resume, 1);
    lua_setfield(L, 1, "resume");
    lua_getfield(L, 1, "wrap");
    lua_pushcclosure(L, sl_lua_co_wrap, 1);
    lua_setfield(L, 1, "wrap");
    lua_pop(L, 1);

    /* The base environment: allowlisted globals + proxies. */
    lua_createtable(L, 0, 32);                               /* [base] */
    for (size_t i = 0; i < SL_ARRAY_SIZE(sl_lua_base_allow); i++) {
        lua_getglobal(L, sl_lua_base_allow[i]);
        lua_setfield(L, 1, sl_lua_base_allow[i]);
    }
    lua_getglobal(L, "rawset");
    lua_setfield(L, 1, "rawset");
    sl_lua_guard_field(L, 1, "rawset", 1u << 1, "rawset");
    lua_getglobal(L, "xpcall");
    lua_pushcclosure(L, sl_lua_xpcall, 1);
    lua_setfield(L, 1, "xpcall");
    if (luaL_loadbuffer(L, sl_lua_pcall_src, sizeof(sl_lua_pcall_src) - 1, "=[sandbox]") != 0)
        lua_error(L);
    lua_getglobal(L, "pcall");
    lua_pushcfunction(L, sl_lua_l_checkpoint);
    lua_call(L, 2, 1);                                       /* [base pcall'] */
    lua_setfield(L, 1, "pcall");
    for (size_t i = 0; i < SL_ARRAY_SIZE(sl_lua_libs); i++) {
        lua_getglobal(L, sl_lua_libs[i]);                    /* [base lib] */
        sl_lua_proxy(L, 2, sl_lua_libs[i]);                  /* [base lib proxy] */
        lua_setfield(L, 1, sl_lua_libs[i]);
        lua_pop(L, 1);
    }
    sl_lua_open_shale(L);                                    /* [base shale] */
    lua_getfield(L, 2, "log");
    lua_setfield(L, 1, "print");
    sl_lua_proxy(L, 2, "shale");                             /* [base shale proxy] */
    lua_setfield(L, 1, "shale");
    lua_pop(L, 1);                                           /* [base] */

    lua_createtable(L, 0, 3);                                /* [base mt] */
    lua_pushcfunction(L, sl_lua_undeclared);
    lua_setfield(L, 2, "__index");
    lua_pushliteral(L, "_G");
    lua_pushcclosure(L, sl_lua_ro_newindex, 1);
    lua_setfield(L, 2, "__newindex");
    lua_pushliteral(L, SL_LUA_LOCKED);
    lua_setfield(L, 2, "__metatable");
    lua_setmetatable(L, 1);                                  /* [base] */
    sl_lua_freeze_mark(L, 1);

    /* Metatable of every per-call environment: reads fall back to base. */
    lua_createtable(L, 0, 2);
    lua_pushvalue(L, 1);
    lua_setfield(L, -2, "__index");
    lua_pushliteral(L, SL_LUA_LOCKED);
    lua_setfield(L, -2, "__metatable");
    S->ref_envmt = luaL_ref(L, LUA_REGISTRYINDEX);

    /* The string metatable is shared by every string: lock it. */
    lua_pushliteral(L, "");
    lua_getmetatable(L, -1);                                 /* [base "" mt] */
    lua_pushliteral(L, SL_LUA_LOCKED);
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 2);

    /* C functions that consult the thread's globals see the frozen base
     * too (the original _G, with load & co, stays only in the registry). */
    lua_pushvalue(L, 1);
    lua_replace(L, LUA_GLOBALSINDEX);
    lua_pop(L, 1);

    lua_pushcfunction(L, sl_lua_run);
    S->ref_run = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pushcfunction(L, sl_lua_msgh);
    S->ref_msgh = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_newtable(L);
    S->ref_cache = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

static int sl_lua_panic(lua_State *L)
{
    const char *m = lua_tostring(L, -1);
    sl_loge("lua sandbox: unprotected error (bug): %s", m ? m : "(non-string error)");
    abort();
    return 0;
}

static void sl_lua_state_close(struct sl_lua_state *S)
{
    if (!S)
        return;
    if (S->L) {
        S->cap = SIZE_MAX;
        lua_close(S->L);
    }
    free(S);
}

static struct sl_lua_state *sl_lua_state_new(void)
{
    struct sl_lua_state *S = calloc(1, sizeof(*S));
    if (!S)
        return NULL;
    S->cap = SIZE_MAX;
    S->L = lua_newstate(sl_lua_alloc, S);
    if (!S->L) {
        free(S);
        return NULL;
    }
    lua_atpanic(S->L, sl_lua_panic);
    if (lua_cpcall(S->L, sl_lua_state_init, NULL) != 0) {
        const char *m = lua_tostring(S->L, -1);
        sl_loge("lua sandbox: cannot set up a state: %s", m ? m : "?");
        sl_lua_state_close(S);
        return NULL;
    }
    lua_settop(S->L, 0);
    lua_gc(S->L, LUA_GCCOLLECT, 0);
    /* LuaJIT has no emergency collection when the allocator refuses, so
     * uncollected garbage counts against the cap. Collect somewhat more
     * eagerly than the defaults (200/200): with 1 MB string churn and a
     * working set near half the cap, spurious failures become rarer; the
     * CPU cost was within noise on a table-heavy script (pause 100 with
     * stepmul 1000 cost 4x). Scripts still need headroom. */
    lua_gc(S->L, LUA_GCSETPAUSE, 150);
    lua_gc(S->L, LUA_GCSETSTEPMUL, 400);
    S->base_live = S->live;
    SL_LUA_COUNT(st_created);
    return S;
}

/* ---- per-thread pool --------------------------------------------------- */

struct sl_lua_pool {
    struct sl_lua_state *idle[SL_LUA_POOL_MAX];
    int n;
};

static pthread_key_t sl_lua_pool_key;
static pthread_once_t sl_lua_pool_once = PTHREAD_ONCE_INIT;
static __thread struct sl_lua_pool *sl_lua_tl_pool;

static void sl_lua_pool_destroy(void *p)
{
    struct sl_lua_pool *pool = p;
    if (!pool)
        return;
    for (int i = 0; i < pool->n; i++)
        sl_lua_state_close(pool->idle[i]);
    free(pool);
    sl_lua_tl_pool = NULL;
}

static void sl_lua_pool_key_init(void)
{
    if (pthread_key_create(&sl_lua_pool_key, sl_lua_pool_destroy) != 0)
        abort();
}

static void sl_lua_memo_free(void *unused);

void sl_lua_thread_cleanup(void)
{
    sl_lua_memo_free(NULL);
    pthread_once(&sl_lua_pool_once, sl_lua_pool_key_init);
    struct sl_lua_pool *pool = sl_lua_tl_pool;
    if (!pool)
        return;
    pthread_setspecific(sl_lua_pool_key, NULL);
    sl_lua_pool_destroy(pool);
}

static struct sl_lua_state *sl_lua_pool_get(void)
{
    struct sl_lua_pool *pool = sl_lua_tl_pool;
    if (pool && pool->n > 0)
        return pool->idle[--pool->n];
    return sl_lua_state_new();
}

static void sl_lua_pool_put(struct sl_lua_state *S)
{
    struct sl_lua_pool *pool = sl_lua_tl_pool;
    if (!pool) {
        pthread_once(&sl_lua_pool_once, sl_lua_pool_key_init);
        pool = calloc(1, sizeof(*pool));
        if (!pool || pthread_setspecific(sl_lua_pool_key, pool) != 0) {
            free(pool);
            sl_lua_state_close(S);
            return;
        }
        sl_lua_tl_pool = pool;
    }
    if (pool->n >= SL_LUA_POOL_MAX) {
        sl_lua_state_close(S);
        return;
    }
    pool->idle[pool->n++] = S;
}

/* ---- running ----------------------------------------------------------- */

/* Push the compiled chunk for c, from the cache or freshly compiled (text
 * only). [..] -> [.. chunk]. May raise (syntax error, bytecode, memory). */
static void sl_lua_push_chunk(lua_State *L, struct sl_lua_state *S, struct sl_lua_ctx *c)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, S->ref_cache);           /* [.. cache] */
    lua_pushlstring(L, (const char *)c->key, sizeof(c->key));
    lua_rawget(L, -2);                                          /* [.. cache f?] */
    if (lua_isfunction(L, -1)) {
        SL_LUA_COUNT(st_hits);
        lua_remove(L, -2);
        return;
    }
    lua_pop(L, 1);                                              /* [.. cache] */
    SL_LUA_COUNT(st_misses);
    if (c->len > 0 && c->src[0] == LUA_SIGNATURE[0]) {
        lua_pushliteral(L, "precompiled (bytecode) chunks are not accepted, only Lua source text");
        lua_error(L);
    }
    if (luaL_loadbufferx(L, c->src, c->len, c->chunkname, "t") != 0)
        lua_error(L);                                           /* message on top */
    if (S->ncached >= SL_LUA_CACHE_MAX) {                       /* [.. cache f] */
        lua_newtable(L);
        lua_rawseti(L, LUA_REGISTRYINDEX, S->ref_cache);
        S->ncached = 0;
        lua_rawgeti(L, LUA_REGISTRYINDEX, S->ref_cache);
        lua_replace(L, -3);
    }
    lua_pushlstring(L, (const char *)c->key, sizeof(c->key));
    lua_pushvalue(L, -2);
    lua_rawset(L, -4);
    S->ncached++;
    lua_remove(L, -2);                                          /* [.. f] */
}

/* The protected body of a call, run by lua_pcall with sl_lua_msgh as the
 * message handler. [] -> [result] (nil in the check modes). May raise. */
static int sl_lua_run(lua_State *L)
{
    struct sl_lua_state *S = sl_lua_S(L);
    struct sl_lua_ctx *c = S->call;

    lua_settop(L, 0);
    if (!lua_checkstack(L, SL_LUA_CONVERT_SLOTS + c->nargs + 8))
        return luaL_error(L, "cannot grow the Lua stack for %d arguments", c->nargs);
    c->stage = SL_LUA_STAGE_COMPILE;
    sl_lua_push_chunk(L, S, c);                                 /* [chunk] */
    if (c->mode == SL_LUA_MODE_COMPILE) {
        c->stage = SL_LUA_STAGE_DONE;
        return 0;
    }

    c->stage = SL_LUA_STAGE_CHUNK;
    lua_createtable(L, 0, 8);                                   /* [chunk env] */
    lua_pushvalue(L, 2);
    lua_setfield(L, 2, "_G");
    lua_rawgeti(L, LUA_REGISTRYINDEX, S->ref_envmt);
    lua_setmetatable(L, 2);
    lua_pushvalue(L, 2);
    lua_setfenv(L, 1);
    lua_pushvalue(L, 1);                                        /* [chunk env chunk] */
    if (!c->fn) {
        lua_call(L, 0, 1);                                      /* [chunk env ret] */
        c->stage = SL_LUA_STAGE_DONE;
        return 1;
    }
    lua_call(L, 0, 0);                                          /* [chunk env] */
    lua_pushstring(L, c->fn);
    lua_rawget(L, 2);                                           /* [chunk env f] */
    if (!lua_isfunction(L, 3)) {
        c->nofn_type = lua_typename(L, lua_type(L, 3));
        c->stage = SL_LUA_STAGE_NOFN;
        return 0;
    }
    if (c->mode == SL_LUA_MODE_CHECK_FN) {
        c->stage = SL_LUA_STAGE_DONE;
        return 0;
    }
    c->stage = SL_LUA_STAGE_ARGS;
    for (int i = 0; i < c->nargs; i++)
        sl_lua_push_val(L, &c->args[i], 0);
    c->stage = SL_LUA_STAGE_CALL;
    lua_call(L, c->nargs, 1);                                   /* [chunk env result] */
    c->stage = SL_LUA_STAGE_DONE;
    return 1;
}

struct sl_lua_frame {
    int line, defined;
    char what;
    const char *name;
};

/* Describe stack level `level` if it is a frame of this call's script. */
static bool sl_lua_frame_at(lua_State *L, const struct sl_lua_ctx *c, int level, struct sl_lua_frame *f)
{
    lua_Debug ar;
    if (!lua_getstack(L, level, &ar) || !lua_getinfo(L, "Sln", &ar) || strcmp(ar.source, c->chunkname) != 0)
        return false;
    f->line = ar.currentline;
    f->defined = ar.linedefined;
    f->what = *ar.what;
    f->name = ar.name;
    return true;
}

/* Message handler of the outer pcall: normalises the error value and
 * records a traceback of the script's frames in c->tb (C memory, so it
 * cannot fail). [msg] -> [msg]. */
static int sl_lua_msgh(lua_State *L)
{
    struct sl_lua_state *S = sl_lua_S(L);
    struct sl_lua_ctx *c = S->call;

    if (c && !c->headroom && S->cap != SIZE_MAX) {
        /* the call is failing anyway; let the message be built */
        c->headroom = true;
        S->cap = S->cap > SIZE_MAX - SL_LUA_MSGH_HEADROOM ? SIZE_MAX : S->cap + SL_LUA_MSGH_HEADROOM;
    }
    if (lua_type(L, 1) != LUA_TSTRING && lua_type(L, 1) != LUA_TNUMBER) {
        const char *t = luaL_typename(L, 1);
        lua_settop(L, 0);
        lua_pushfstring(L, "(error object is a %s value)", t);
    }
    if (!c || c->stage == SL_LUA_STAGE_COMPILE)
        return 1;

    /* Frames of this script, innermost first: up to 7, then "...", then
     * the outermost one (the entry point, named after c->fn). LuaJIT's
     * lua_getstack(L, n) walks n frames, so a full walk of a 65000-frame
     * stack overflow would be quadratic: look at the top 64 levels, find
     * the bottom by binary search and look at the last 16 levels there. */
    struct sl_lua_frame fr[8];
    int nfr = 0, top_levels = 0;
    for (int level = 1; level <= 64 && nfr < 7; level++) {
        if (!sl_lua_frame_at(L, c, level, &fr[nfr])) {
            if (!lua_getstack(L, level, &(lua_Debug){ 0 }))
                break;
            continue;
        }
        nfr++;
        top_levels = level;
    }
    int lo = 1, hi = 1;
    lua_Debug probe;
    while (lua_getstack(L, hi, &probe) && hi < (1 << 24))
        lo = hi, hi *= 2;
    while (hi - lo > 1) {                   /* lo exists, hi does not */
        int mid = lo + (hi - lo) / 2;
        if (lua_getstack(L, mid, &probe))
            lo = mid;
        else
            hi = mid;
    }
    bool elided = false;
    for (int level = lo; level > top_levels && level > lo - 16; level--) {
        struct sl_lua_frame f;
        if (sl_lua_frame_at(L, c, level, &f)) {
            elided = nfr == 7 || level > 64;   /* frames may have been skipped */
            fr[nfr++] = f;
            break;
        }
    }
    if (nfr > 0 && !fr[nfr - 1].name && fr[nfr - 1].what != 'm' && c->stage == SL_LUA_STAGE_CALL)
        fr[nfr - 1].name = c->fn;
    c->err_line = nfr > 0 ? fr[0].line : 0;
    size_t used = 0;
    c->tb[0] = 0;
    for (int i = 0; i < nfr; i++) {
        char line[160];
        int n = 0;
        if (i == nfr - 1 && i > 0 && elided) {
            n = snprintf(line, sizeof(line), "\n  ...");
            if (n > 0 && used + (size_t)n + 1 <= sizeof(c->tb)) {
                memcpy(c->tb + used, line, (size_t)n + 1);
                used += (size_t)n;
            }
        }
        if (fr[i].what == 'm')
            n = snprintf(line, sizeof(line), "\n  line %d: in main chunk", fr[i].line);
        else if (fr[i].name)
            n = snprintf(line, sizeof(line), "\n  line %d: in function '%.60s'", fr[i].line, fr[i].name);
        else
            n = snprintf(line, sizeof(line), "\n  line %d: in function <line %d>", fr[i].line, fr[i].defined);
        if (n < 0 || used + (size_t)n + 1 > sizeof(c->tb))
            break;
        memcpy(c->tb + used, line, (size_t)n + 1);
        used += (size_t)n;
    }
    return 1;
}

/* "relabel:7: boom" -> "line 7: boom" when msg carries our chunk's position. */
static bool sl_lua_fmt_msg(char *out, size_t n, const struct sl_lua_ctx *c, const char *msg)
{
    const char *id = c->chunkname + 1;
    size_t idl = strlen(id);
    if (strncmp(msg, id, idl) == 0 && msg[idl] == ':') {
        const char *p = msg + idl + 1, *q = p;
        while (*q >= '0' && *q <= '9')
            q++;
        if (q > p && *q == ':') {
            snprintf(out, n, "line %.*s: %s", (int)(q - p), p, q + 1 + strspn(q + 1, " "));
            return true;
        }
    }
    /* no position in the message (stack overflow, error(x, 0), errors
     * raised by C functions): use the innermost frame of the script */
    if (c->err_line > 0)
        snprintf(out, n, "line %d: %s", c->err_line, msg);
    else
        snprintf(out, n, "%s", msg);
    return false;
}

/* Fill err after a failed lua_pcall; the error value is on top. */
static int sl_lua_report(struct sl_lua_state *S, struct sl_lua_ctx *c, struct sl_err *err)
{
    lua_State *L = S->L;
    const char *raw = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "(non-string error)";
    const char *tbh = c->tb[0] ? "\nstack traceback:" : "";
    char msg[640], lim[32];

    if (c->timed_out) {
        sl_format_duration(c->lim.timeout_ns, lim, sizeof(lim));
        SL_LUA_COUNT(st_timeouts);
        if (c->timeout_line > 0)
            return sl_errf(err, SL_ETIMEOUT, "script \"%s\": line %d: timed out (wall-time limit %s exceeded)%s%s",
                           c->name, c->timeout_line, lim, tbh, c->tb);
        return sl_errf(err, SL_ETIMEOUT, "script \"%s\": timed out (wall-time limit %s exceeded)%s%s", c->name, lim,
                       tbh, c->tb);
    }
    if (c->cstack_over) {
        if (c->timeout_line > 0)
            return sl_errf(err, SL_EINVAL, "script \"%s\": line %d: %s%s%s", c->name, c->timeout_line,
                           sl_lua_cstack_msg, tbh, c->tb);
        return sl_errf(err, SL_EINVAL, "script \"%s\": %s%s%s", c->name, sl_lua_cstack_msg, tbh, c->tb);
    }
    if (S->refused) {
        sl_format_size(c->lim.mem_limit, lim, sizeof(lim));
        SL_LUA_COUNT(st_mem_errors);
        sl_lua_fmt_msg(msg, sizeof(msg), c, raw);
        if (strcmp(raw, "not enough memory") == 0) {
            if (c->last_line > 0)
                return sl_errf(err, SL_ETOOBIG, "script \"%s\": memory limit of %s exceeded (near line %d)",
                               c->name, lim, c->last_line);
            return sl_errf(err, SL_ETOOBIG, "script \"%s\": memory limit of %s exceeded", c->name, lim);
        }
        return sl_errf(err, SL_ETOOBIG, "script \"%s\": memory limit of %s exceeded: %s%s%s", c->name, lim, msg,
                       tbh, c->tb);
    }
    sl_lua_fmt_msg(msg, sizeof(msg), c, raw);
    if (c->stage == SL_LUA_STAGE_COMPILE)
        return sl_errf(err, SL_EINVAL, "script \"%s\": %s", c->name, msg);
    return sl_errf(err, SL_EINVAL, "script \"%s\": %s%s%s", c->name, msg, tbh, c->tb);
}

/* SHA-256(name NUL src) into c->key. 0 or -1. */
/* The last few keys this thread computed, with the exact name and source
 * they were computed from: a transform called for every object of a job
 * hashes its source once per thread, not once per call. A hit needs equal
 * bytes (memcmp), so it never trusts pointers. */
#define SL_LUA_KEY_MEMO 4
#define SL_LUA_KEY_MEMO_MAX (64u * 1024)   /* only sources up to this size */
struct sl_lua_key_memo {
    char *name;
    char *src;
    size_t len;
    unsigned char key[32];
};
static __thread struct sl_lua_key_memo sl_lua_memo[SL_LUA_KEY_MEMO];
static __thread unsigned sl_lua_memo_next;
static __thread bool sl_lua_memo_armed;

static void sl_lua_memo_free(void *unused)
{
    (void)unused;
    sl_lua_memo_armed = false;
    for (int i = 0; i < SL_LUA_KEY_MEMO; i++) {
        free(sl_lua_memo[i].name);
        free(sl_lua_memo[i].src);
        memset(&sl_lua_memo[i], 0, sizeof(sl_lua_memo[i]));
    }
}

/* the memo is freed when the thread exits (a key with a destructor) */
static pthread_key_t sl_lua_memo_key;
static pthread_once_t sl_lua_memo_once = PTHREAD_ONCE_INIT;

static void sl_lua_memo_key_init(void)
{
    if (pthread_key_create(&sl_lua_memo_key, sl_lua_memo_free) != 0)
        abort();
}

static void sl_lua_memo_arm(void)
{
    if (sl_lua_memo_armed)
        return;
    pthread_once(&sl_lua_memo_once, sl_lua_memo_key_init);
    pthread_setspecific(sl_lua_memo_key, &sl_lua_memo_armed);
    sl_lua_memo_armed = true;
}

static int sl_lua_chunk_key_hash(struct sl_lua_ctx *c);

static int sl_lua_chunk_key(struct sl_lua_ctx *c)
{
    if (c->len > SL_LUA_KEY_MEMO_MAX)
        return sl_lua_chunk_key_hash(c);
    for (int i = 0; i < SL_LUA_KEY_MEMO; i++) {
        struct sl_lua_key_memo *m = &sl_lua_memo[i];
        if (m->src && m->len == c->len && !strcmp(m->name, c->name) && !memcmp(m->src, c->src, c->len)) {
            memcpy(c->key, m->key, sizeof(c->key));
            return 0;
        }
    }
    if (sl_lua_chunk_key_hash(c) != 0)
        return -1;
    char *n = strdup(c->name), *src = malloc(c->len + 1);
    if (!n || !src) {
        free(n);
        free(src);
        return 0; /* no memo, the key is still right */
    }
    memcpy(src, c->src, c->len);
    struct sl_lua_key_memo *m = &sl_lua_memo[sl_lua_memo_next++ % SL_LUA_KEY_MEMO];
    free(m->name);
    free(m->src);
    m->name = n;
    m->src = src;
    m->len = c->len;
    memcpy(m->key, c->key, sizeof(m->key));
    sl_lua_memo_arm();
    return 0;
}

static int sl_lua_chunk_key_hash(struct sl_lua_ctx *c)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned int n = 0;
    int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
             EVP_DigestUpdate(md, c->name, strlen(c->name) + 1) == 1 &&
             EVP_DigestUpdate(md, c->src, c->len) == 1 && EVP_DigestFinal_ex(md, c->key, &n) == 1 && n == 32;
    EVP_MD_CTX_free(md);
    return ok ? 0 : -1;
}

static void sl_lua_resolve_limits(struct sl_lua_limits *out, const struct sl_lua_limits *in)
{
    sl_lua_limits_default(out);
    if (!in)
        return;
    if (in->timeout_ns > 0)
        out->timeout_ns = in->timeout_ns < SL_LUA_MAX_TIMEOUT_NS ? in->timeout_ns : SL_LUA_MAX_TIMEOUT_NS;
    if (in->mem_limit)
        out->mem_limit = in->mem_limit;
    if (in->max_output)
        out->max_output = in->max_output;
    if (in->max_log)
        out->max_log = in->max_log;
    if (in->seed)
        out->seed = in->seed;
}

static int sl_lua_exec(enum sl_lua_mode mode, const char *name, const char *src, size_t len, const char *fn,
                       const struct sl_lua_val *args, int nargs, const struct sl_lua_limits *lim,
                       sl_lua_log_fn log_cb, void *log_ctx, struct sl_lua_val *result, struct sl_err *err)
{
    struct sl_lua_ctx c;
    int rc = 0;

    memset(&c, 0, sizeof(c));
    if (result)
        *result = sl_lua_nil();
    if (err) {
        err->code = SL_OK;
        err->msg[0] = 0;
    }
    SL_LUA_COUNT(st_calls);
    c.mode = mode;
    c.name = name && *name ? name : "script";
    c.src = src ? src : "";
    c.len = src ? len : 0;
    c.fn = fn;
    c.args = args;
    c.nargs = nargs;
    c.log_cb = log_cb;
    c.log_ctx = log_ctx;
    sl_lua_resolve_limits(&c.lim, lim);

    if (!src && len > 0)
        rc = sl_errf(err, SL_EINVAL, "script \"%s\": no source text", c.name);
    else if (mode != SL_LUA_MODE_COMPILE && fn && !*fn)
        rc = sl_errf(err, SL_EINVAL, "script \"%s\": empty function name", c.name);
    else if (mode == SL_LUA_MODE_CHECK_FN && !fn)
        rc = sl_errf(err, SL_EINVAL, "script \"%s\": no function name to check", c.name);
    else if (nargs < 0 || nargs > 64 || (nargs > 0 && !args))
        rc = sl_errf(err, SL_EINVAL, "script \"%s\": bad argument count %d (0..64)", c.name, nargs);
    else if (sl_lua_chunk_key(&c) != 0)
        rc = sl_errf(err, SL_EINTERNAL, "script \"%s\": cannot hash the source (OpenSSL)", c.name);
    if (rc) {
        SL_LUA_COUNT(st_errors);
        return rc;
    }
    /* Messages print the name; LuaJIT keeps at most ~60 bytes of it. */
    size_t nl = strlen(c.name);
    c.chunkname[0] = '=';
    if (nl <= 48) {
        memcpy(c.chunkname + 1, c.name, nl + 1);
    } else {
        memcpy(c.chunkname + 1, c.name, 44);
        memcpy(c.chunkname + 45, "...", 4);
    }

    struct sl_lua_state *S = sl_lua_pool_get();
    if (!S) {
        SL_LUA_COUNT(st_errors);
        return sl_errf(err, SL_EINTERNAL, "script \"%s\": cannot create a Lua state (out of memory)", c.name);
    }
    lua_State *L = S->L;
    sl_lua_rng_seed(c.rng, c.lim.seed);
    S->call = &c;
    S->refused = false;
    size_t used = S->live + S->ext;
    S->cap = c.lim.mem_limit > SIZE_MAX - used ? SIZE_MAX : used + c.lim.mem_limit;
    c.deadline = sl_mono_ns() + c.lim.timeout_ns;   /* timeout_ns clamped to a day */
    c.cstack_limit = sl_lua_cstack_limit((uintptr_t)__builtin_frame_address(0));

    lua_settop(L, 0);
    lua_rawgeti(L, LUA_REGISTRYINDEX, S->ref_msgh);             /* [msgh] */
    lua_rawgeti(L, LUA_REGISTRYINDEX, S->ref_run);              /* [msgh run] */
    sl_lua_hook_arm(L);
    int st = lua_pcall(L, 0, 1, 1);                             /* [msgh result|err] */
    lua_sethook(L, NULL, 0, 0);
    S->cap = SIZE_MAX;

    if (st != 0 || c.timed_out || c.cstack_over) {
        rc = sl_lua_report(S, &c, err);
    } else if (c.stage == SL_LUA_STAGE_NOFN) {
        rc = sl_errf(err, SL_ENOENT, "script \"%s\": function '%s' is not defined (global '%s' is %s)", c.name,
                     c.fn, c.fn, c.nofn_type);
    } else if (mode == SL_LUA_MODE_CALL && result) {
        /* conversion does not raise and does not allocate through Lua */
        size_t budget = c.lim.max_output;
        int code = 0;
        char msg[512];
        if (sl_lua_to_val(L, -1, result, &budget, &code, msg, sizeof(msg)) != 0)
            rc = sl_errf(err, code, "script \"%s\": %s%s returned %s", c.name, c.fn ? c.fn : "chunk",
                         c.fn ? "()" : "", msg);
    }
    lua_settop(L, 0);
    S->call = NULL;
    S->ncalls++;

    /* A state that saw a timeout, a memory-cap hit or a runtime error is
     * not trusted again; clean compile errors and result errors are fine. */
    bool dirty = c.timed_out || c.cstack_over || S->refused || (st != 0 && c.stage != SL_LUA_STAGE_COMPILE);
    if (!dirty && (S->ext || S->live - S->base_live > SL_LUA_GC_SLACK)) {
        lua_gc(L, LUA_GCCOLLECT, 0);
        if (S->ext)
            dirty = true;                   /* a C buffer outlived its call */
    }
    if (dirty) {
        SL_LUA_COUNT(st_discarded);
        sl_lua_state_close(S);
    } else if (S->live > SL_LUA_STATE_MAX_LIVE || S->ncalls >= SL_LUA_STATE_MAX_CALLS) {
        sl_lua_state_close(S);
    } else {
        sl_lua_pool_put(S);
    }
    if (rc)
        SL_LUA_COUNT(st_errors);
    return rc;
}

int sl_lua_check(const char *name, const char *src, size_t len, struct sl_err *err)
{
    return sl_lua_exec(SL_LUA_MODE_COMPILE, name, src, len, NULL, NULL, 0, NULL, NULL, NULL, NULL, err);
}

int sl_lua_check_fn(const char *name, const char *src, size_t len, const char *fn_name,
                    const struct sl_lua_limits *lim, struct sl_err *err)
{
    return sl_lua_exec(SL_LUA_MODE_CHECK_FN, name, src, len, fn_name, NULL, 0, lim, NULL, NULL, NULL, err);
}

int sl_lua_call(const char *name, const char *src, size_t len, const char *fn_name,
                const struct sl_lua_val *args, int nargs, const struct sl_lua_limits *lim,
                sl_lua_log_fn log_cb, void *log_ctx, struct sl_lua_val *result, struct sl_err *err)
{
    return sl_lua_exec(SL_LUA_MODE_CALL, name, src, len, fn_name, args, nargs, lim, log_cb, log_ctx, result,
                       err);
}
