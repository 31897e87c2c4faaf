/* SPDX-License-Identifier: MIT
 * budget.c: what a call may spend and what it may not touch. The capped
 * allocator and C-side memory charging, the instruction hook with the
 * wall-clock deadline and the C stack budget, the checkpoint that C
 * functions pass before re-entering Lua, and read-only proxies.
 *
 * The bottom of lua/: it calls nothing in the other lua/ files (see
 * budget.h for what it owns).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"

#define SL_LUA_HOOK_COUNT 1000             /* instructions between deadline checks */
#define SL_LUA_CSTACK_MAX (1u << 20)       /* C stack a call may use below its entry */
#define SL_LUA_CSTACK_GUARD (128u * 1024)  /* never closer than this to the stack end */

/* ---- the call's random generator (xoshiro256**) ---- */

static uint64_t sl_lua_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void sl_lua_rng_seed(uint64_t s[4], uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        s[i] = sl_lua_splitmix64(&seed);
}

uint64_t sl_lua_rng_next(uint64_t s[4])
{
    uint64_t r = s[1] * 5, t = s[1] << 17;
    r = ((r << 7) | (r >> 57)) * 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return r;
}

double sl_lua_rand01(lua_State *L)
{
    struct sl_lua_ctx *c = sl_lua_S(L)->call;
    return c ? (double)(sl_lua_rng_next(c->rng) >> 11) * 0x1.0p-53 : 0.0;
}

/* ---- memory ------------------------------------------------------------ */

/* LuaJIT never runs an emergency GC, so garbage not yet collected counts
 * against the cap too. */
void *sl_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    struct sl_lua_state *S = ud;
    size_t old = ptr ? osize : 0;

    if (nsize == 0) {
        free(ptr);
        S->live -= old;
        return NULL;
    }
    if (nsize > old) {
        size_t used = S->live + S->ext, grow = nsize - old;
        if (used > S->cap || grow > S->cap - used) {
            S->refused = true;
            return NULL;
        }
    }
    void *p = realloc(ptr, nsize);
    if (!p) {
        S->refused = true;
        return NULL;
    }
    S->live = S->live - old + nsize;
    return p;
}

int sl_lua_mem_charge(struct sl_lua_state *S, size_t n)
{
    size_t used = S->live + S->ext;
    if (used > S->cap || n > S->cap - used) {
        S->refused = true;
        return -1;
    }
    S->ext += n;
    return 0;
}

void sl_lua_mem_uncharge(struct sl_lua_state *S, size_t n)
{
    S->ext = n > S->ext ? 0 : S->ext - n;
}

/* ---- deadline ---------------------------------------------------------- */

/* Set once when the process shuts down: every running call ends at its
 * next hook or checkpoint as if its deadline had passed. */
static volatile int sl_lua_cancelled;

void sl_lua_cancel_all(void)
{
    __atomic_store_n(&sl_lua_cancelled, 1, __ATOMIC_RELAXED);
}

static bool sl_lua_before_deadline(const struct sl_lua_ctx *c)
{
    return sl_mono_ns() < c->deadline && !__atomic_load_n(&sl_lua_cancelled, __ATOMIC_RELAXED);
}

static void sl_lua_hook(lua_State *L, lua_Debug *ar);

/* Kill the call: record the timeout (or, with cstack, the exhausted C
 * stack budget) and make every following instruction raise, so that no
 * pcall, coroutine or error handler can keep the script running. */
static void sl_lua_kill(lua_State *L, struct sl_lua_ctx *c, bool cstack, int line)
{
    if (cstack)
        c->cstack_over = true;
    else
        c->timed_out = true;
    c->timeout_line = line > 0 ? line : c->last_line;
    lua_sethook(L, sl_lua_hook, LUA_MASKCOUNT, 1);
}

/* Raise the error of a killed call. Does not return. */
static int sl_lua_raise_killed(lua_State *L, const struct sl_lua_ctx *c)
{
    if (c->cstack_over)
        lua_pushstring(L, sl_lua_cstack_msg);
    else
        lua_pushliteral(L, "timed out");
    return lua_error(L);
}

static bool sl_lua_cstack_low(const struct sl_lua_ctx *c)
{
    return (uintptr_t)__builtin_frame_address(0) < c->cstack_limit;
}

/* Current line of the innermost frame of the call's script (skipping C
 * functions and the sandbox's own Lua helpers), or -1. */
static int sl_lua_script_line(lua_State *L, const struct sl_lua_ctx *c)
{
    lua_Debug ar;
    for (int level = 0; level < 8 && lua_getstack(L, level, &ar); level++)
        if (lua_getinfo(L, "Sl", &ar) && strcmp(ar.source, c->chunkname) == 0)
            return ar.currentline;
    return -1;
}

const char sl_lua_cstack_msg[] = "C stack overflow (coroutines or callbacks nested too deeply)";

/* Count hook: every SL_LUA_HOOK_COUNT instructions (every instruction once
 * the call is killed). LuaJIT hooks are per VM, so coroutines are covered
 * too. Errors raised here bypass script error handlers (see
 * sl_lua_xpcall_guard in sandbox.c). */
static void sl_lua_hook(lua_State *L, lua_Debug *ar)
{
    struct sl_lua_ctx *c = sl_lua_S(L)->call;
    if (!c)
        return;
    if (!c->timed_out && !c->cstack_over) {
        int line = lua_getinfo(L, "l", ar) ? ar->currentline : -1;
        if (line > 0)
            c->last_line = line;
        bool low = sl_lua_cstack_low(c);
        if (!low && sl_lua_before_deadline(c))
            return;
        sl_lua_kill(L, c, low, line);
    }
    sl_lua_raise_killed(L, c);
}

void sl_lua_hook_arm(lua_State *L)
{
    lua_sethook(L, sl_lua_hook, LUA_MASKCOUNT, SL_LUA_HOOK_COUNT);
}

void sl_lua_checkpoint(lua_State *L)
{
    struct sl_lua_ctx *c = sl_lua_S(L)->call;
    if (!c)
        return;
    if (!c->timed_out && !c->cstack_over) {
        bool low = sl_lua_cstack_low(c);
        if (!low && sl_lua_before_deadline(c))
            return;
        sl_lua_kill(L, c, low, sl_lua_script_line(L, c));
    }
    sl_lua_raise_killed(L, c);
}

/* Lowest address of this thread's stack (0 if unknown); looked up once. */
static __thread uintptr_t sl_lua_tl_stack_lo;
static __thread bool sl_lua_tl_stack_known;

uintptr_t sl_lua_cstack_limit(uintptr_t here)
{
    if (!sl_lua_tl_stack_known) {
        pthread_attr_t a;
        void *addr;
        size_t size;
        sl_lua_tl_stack_known = true;
        if (pthread_getattr_np(pthread_self(), &a) == 0) {
            if (pthread_attr_getstack(&a, &addr, &size) == 0)
                sl_lua_tl_stack_lo = (uintptr_t)addr;
            pthread_attr_destroy(&a);
        }
    }
    uintptr_t limit = here > SL_LUA_CSTACK_MAX ? here - SL_LUA_CSTACK_MAX : 0;
    uintptr_t lo = sl_lua_tl_stack_lo;
    if (lo && here > lo) {
        /* small thread stacks: use half of what is left, minus a guard */
        uintptr_t floor_ = here - lo > 2 * SL_LUA_CSTACK_GUARD ? lo + SL_LUA_CSTACK_GUARD : here - (here - lo) / 2;
        if (limit < floor_)
            limit = floor_;
    }
    return limit;
}

bool sl_lua_deadline_passed(lua_State *L)
{
    struct sl_lua_ctx *c = sl_lua_S(L)->call;
    if (!c)
        return false;
    if (c->timed_out)
        return true;
    if (sl_lua_before_deadline(c))
        return false;
    sl_lua_kill(L, c, false, sl_lua_script_line(L, c));
    return true;
}

int sl_lua_raise_timeout(lua_State *L)
{
    lua_pushliteral(L, "timed out");
    return lua_error(L);
}

/* ---- freezing ---------------------------------------------------------- */

int sl_lua_ro_newindex(lua_State *L)
{
    const char *tname = lua_tostring(L, lua_upvalueindex(1));
    if (lua_type(L, 2) == LUA_TSTRING)
        return luaL_error(L, "attempt to modify read-only table '%s' (field '%s')", tname, lua_tostring(L, 2));
    return luaL_error(L, "attempt to modify read-only table '%s'", tname);
}

void sl_lua_freeze_mark(lua_State *L, int idx)
{
    struct sl_lua_state *S = sl_lua_S(L);
    idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
    lua_rawgeti(L, LUA_REGISTRYINDEX, S->ref_frozen); /* [.. set] */
    lua_pushvalue(L, idx);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
    lua_pop(L, 1);
}

void sl_lua_proxy(lua_State *L, int idx, const char *name)
{
    idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
    sl_lua_freeze_mark(L, idx);     /* the real table, should it ever leak */
    lua_newtable(L);                /* [.. proxy] */
    lua_createtable(L, 0, 3);       /* [.. proxy mt] */
    lua_pushvalue(L, idx);
    lua_setfield(L, -2, "__index");
    lua_pushstring(L, name);
    lua_pushcclosure(L, sl_lua_ro_newindex, 1);
    lua_setfield(L, -2, "__newindex");
    lua_pushliteral(L, SL_LUA_LOCKED);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);        /* [.. proxy] */
    sl_lua_freeze_mark(L, -1);
}
