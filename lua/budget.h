/* SPDX-License-Identifier: MIT
 * budget.h: the bottom of the sandbox (not for callers; they include
 * sandbox.h). Implemented by budget.c, which calls no other lua/ file.
 *
 * Owns:
 *   - the per-state and per-call structs every lua/ file reads, and
 *     sl_lua_S() to find them from a lua_State;
 *   - the memory budget: the capped lua_Alloc and the charging of C-side
 *     buffers against the same cap;
 *   - the time budget: the instruction hook, the wall-clock deadline, the
 *     C stack budget, the checkpoint and the timeout error;
 *   - freezing: read-only proxies and the frozen set that the sandbox's
 *     raw writers refuse.
 *
 * Who frees what: budget.c frees nothing it did not allocate itself (the
 * allocator frees the blocks Lua gives back). struct sl_lua_state is
 * created and closed by sandbox.c; struct sl_lua_ctx lives on the stack of
 * the sandbox.c function running the call.
 *
 * Conventions: a function marked "may raise" can longjmp through
 * lua_error()/luaL_error(); it must be called in protected mode and must not
 * hold C resources that are not owned by a userdata with __gc (see
 * struct sl_lua_box in box.h). Stack effects are written [before] -> [after].
 */
#ifndef SL_LUA_BUDGET_H
#define SL_LUA_BUDGET_H

#include <stdint.h>

#include <lua.h>
#include <lauxlib.h>

#include "sandbox.h"

#define SL_LUA_LOCKED "locked" /* what getmetatable() returns for frozen things */

/* ---- the structs --------------------------------------------------------- */

/* What a call is doing; decides how a failure is reported and whether the
 * state may be reused. Written by sandbox.c only. */
enum sl_lua_stage {
    SL_LUA_STAGE_COMPILE = 0, /* looking up / compiling the chunk */
    SL_LUA_STAGE_CHUNK,       /* running the chunk's top level */
    SL_LUA_STAGE_ARGS,        /* pushing the arguments */
    SL_LUA_STAGE_CALL,        /* running fn_name */
    SL_LUA_STAGE_NOFN,        /* fn_name is not a function (no Lua error) */
    SL_LUA_STAGE_DONE,
};

enum sl_lua_mode { SL_LUA_MODE_COMPILE, SL_LUA_MODE_CHECK_FN, SL_LUA_MODE_CALL };

/** One call's context.
 *
 * Lives on the stack of the sandbox.c function that runs the call; the
 * state points at it (S->call) while the call runs and is reset to NULL
 * before that function returns, so a pointer to it is valid only during
 * the call. It owns nothing: name, src, fn and args are borrowed from the
 * caller of sl_lua_call() for the same time.
 *
 * Written by sandbox.c (setup, stage, traceback), by budget.c (timed_out,
 * cstack_over, timeout_line, last_line) and by api.c (the log_used and
 * log_truncated counters); read by all three.
 */
struct sl_lua_ctx {
    enum sl_lua_mode mode;
    enum sl_lua_stage stage;
    const char *name;         /* script name for messages (never NULL) */
    const char *src;
    size_t len;
    const char *fn;           /* NULL: return the chunk's own result */
    const struct sl_lua_val *args;
    int nargs;
    unsigned char key[32];    /* SHA-256(name NUL src): chunk cache key */
    char chunkname[64];       /* "=" + (possibly shortened) name */
    const char *nofn_type;    /* type of fn_name when it is not a function */
    struct sl_lua_limits lim; /* resolved (no zero fields) */
    int64_t deadline;         /* sl_mono_ns() value */
    bool timed_out;           /* deadline passed: every hook raises now */
    bool cstack_over;         /* C stack budget exhausted: same treatment */
    int timeout_line;         /* script line where the timeout was noticed */
    uintptr_t cstack_limit;   /* lowest C stack address calls may reach */
    int last_line;            /* line seen by the latest hook (approximate) */
    int err_line;             /* innermost script line when the error was raised */
    bool headroom;            /* the message handler already raised cap */
    char tb[480];             /* traceback built by the message handler */
    sl_lua_log_fn log_cb;
    void *log_ctx;
    size_t log_used;
    bool log_truncated;
    uint64_t rng[4];          /* xoshiro256** state for math.random */
};

/** One pooled Lua state.
 *
 * Allocated, pooled and closed by sandbox.c; closing it closes L, which runs
 * every __gc (so boxes release what they still hold). Its address is the
 * allocator's ud, so any C function can find it with sl_lua_S(L).
 * The ref_* fields are registry references made while the state is built
 * and valid until it is closed.
 */
struct sl_lua_state {
    lua_State *L;
    size_t live;       /* bytes held through the Lua allocator */
    size_t ext;        /* bytes charged for C-side buffers (sl_lua_mem_charge) */
    size_t cap;        /* live + ext may not exceed this; SIZE_MAX between calls */
    size_t base_live;  /* live right after creation */
    bool refused;      /* an allocation or charge hit cap during this call */
    int ref_run, ref_msgh, ref_cache, ref_envmt, ref_frozen, ref_jsonarr;
    unsigned ncached;  /* entries in the chunk cache */
    uint64_t ncalls;
    struct sl_lua_ctx *call; /* NULL when idle */
};

/** The state L belongs to (coroutines included). The pointer stays valid
 * until the state is closed. Never raises. */
static inline struct sl_lua_state *sl_lua_S(lua_State *L)
{
    void *ud = NULL;
    lua_getallocf(L, &ud);
    return (struct sl_lua_state *)ud;
}

/* ---- memory ---------------------------------------------------------------- */

/** The lua_Alloc of every sandbox state (ud = its struct sl_lua_state).
 *
 * Counts live bytes in S->live and refuses growth past S->cap (sets
 * S->refused); LuaJIT turns the NULL into LUA_ERRMEM. Blocks are malloc'ed
 * and freed by this function only.
 */
void *sl_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize);

/** Charge n bytes of C-side memory against the call's cap.
 *
 * The caller owns the memory and must uncharge exactly what it charged
 * when it frees it (a box does this for its owner).
 * @return 0, or -1 (and S->refused = true) when it would exceed the cap.
 * Never raises.
 */
int sl_lua_mem_charge(struct sl_lua_state *S, size_t n);
/** Give back n bytes charged with sl_lua_mem_charge(). Never raises. */
void sl_lua_mem_uncharge(struct sl_lua_state *S, size_t n);

/* ---- time and C stack ------------------------------------------------------ */

/** Message of the error that ends a call whose C stack budget ran out.
 * Static storage, valid for the life of the process. */
extern const char sl_lua_cstack_msg[];

/** Lowest C stack address a call started at frame address `here` may
 * reach: 1 MiB below here, or half of what is left on small thread stacks
 * (keeping a guard from the end). The caller passes its own
 * (uintptr_t)__builtin_frame_address(0). Never raises.
 */
uintptr_t sl_lua_cstack_limit(uintptr_t here);

/** Set the instruction hook that enforces S->call's deadline and C stack
 * limit every few thousand instructions (every instruction once the call
 * is killed). Remove it with lua_sethook(L, NULL, 0, 0). Never raises.
 */
void sl_lua_hook_arm(lua_State *L);

/** True when the call's deadline has passed (marks the call timed out and
 * arms the every-instruction hook). Never raises; lets C loops clean up
 * before calling sl_lua_raise_timeout().
 */
bool sl_lua_deadline_passed(lua_State *L);
/** Raise the timeout error. [..] -> does not return. May raise (always). */
int sl_lua_raise_timeout(lua_State *L);
/** Checkpoint before anything that can catch errors or re-enter Lua from C
 * (pcall, xpcall, coroutine.resume/wrap, callbacks of C functions).
 *
 * Raises when the call is already killed, when the deadline has passed, or
 * when the C stack used since the call started exceeds its budget (nested
 * coroutines or callbacks); the last two kill the call, so no handler or
 * pcall can continue it. [..] -> [..]. May raise.
 */
void sl_lua_checkpoint(lua_State *L);

/* ---- the call's random generator --------------------------------------- */

/** Seed a xoshiro256** state from one 64-bit value (splitmix64). */
void sl_lua_rng_seed(uint64_t s[4], uint64_t seed);
/** Next 64 random bits of the state. Never raises. */
uint64_t sl_lua_rng_next(uint64_t s[4]);
/** A uniform double in [0, 1) from the running call's generator (the one
 * math.random draws from, seeded by sl_lua_limits.seed); 0 outside a call.
 * Never raises. */
double sl_lua_rand01(lua_State *L);

/* ---- freezing -------------------------------------------------------------- */

/** Make the table at idx read-only: push a proxy whose __index is the
 * table, whose __newindex raises "attempt to modify read-only table
 * '<name>'" and whose metatable is locked.
 *
 * Registers the table and the proxy in the frozen set (S->ref_frozen,
 * created by sandbox.c) that rawset/table.insert/... refuse. name is
 * copied into Lua. [..] -> [.. proxy]. May raise.
 */
void sl_lua_proxy(lua_State *L, int idx, const char *name);
/** Add the table at idx to the frozen set. [..] -> [..]. May raise. */
void sl_lua_freeze_mark(lua_State *L, int idx);
/** __newindex of read-only tables. Upvalue 1: the table's name (a
 * string). [t k v] -> raises, always.
 */
int sl_lua_ro_newindex(lua_State *L);

#endif
