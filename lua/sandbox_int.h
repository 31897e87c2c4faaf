/* SPDX-License-Identifier: MIT
 * sandbox_int.h: what the sandbox's .c files share (not for callers; they
 * include sandbox.h). The per-state struct, memory charging for C-side
 * buffers, the deadline check used by long-running C helpers, and the
 * entry points that build the shale.* table and patch the string library.
 *
 * Conventions: a function marked "may raise" can longjmp through
 * lua_error()/luaL_error(); it must be called in protected mode and must not
 * hold C resources that are not owned by a userdata with __gc (see
 * struct sl_lua_box). Stack effects are written [before] -> [after].
 */
#ifndef SL_LUA_SANDBOX_INT_H
#define SL_LUA_SANDBOX_INT_H

#include <lua.h>
#include <lauxlib.h>
#include <zlib.h>
#include <jansson.h>

#include "sandbox.h"

#define SL_LUA_HOOK_COUNT 1000      /* instructions between deadline checks */
#define SL_LUA_MAX_DEPTH 32         /* nesting of tables crossing the boundary */
#define SL_LUA_JSON_MAX_DEPTH 128   /* nesting accepted by shale.json */
#define SL_LUA_LOCKED "locked"      /* what getmetatable() returns for frozen things */

/* What a call is doing; decides how a failure is reported and whether the
 * state may be reused. */
enum sl_lua_stage {
    SL_LUA_STAGE_COMPILE = 0, /* looking up / compiling the chunk */
    SL_LUA_STAGE_CHUNK,       /* running the chunk's top level */
    SL_LUA_STAGE_ARGS,        /* pushing the arguments */
    SL_LUA_STAGE_CALL,        /* running fn_name */
    SL_LUA_STAGE_NOFN,        /* fn_name is not a function (no Lua error) */
    SL_LUA_STAGE_DONE,
};

enum sl_lua_mode { SL_LUA_MODE_COMPILE, SL_LUA_MODE_CHECK_FN, SL_LUA_MODE_CALL };

/* One call's context. Lives on the stack of sl_lua_call(); the state points
 * at it while the call runs. */
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

/* One pooled Lua state. Its address is the allocator's ud, so any C
 * function can find it with sl_lua_S(L). */
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

static inline struct sl_lua_state *sl_lua_S(lua_State *L)
{
    void *ud = NULL;
    lua_getallocf(L, &ud);
    return (struct sl_lua_state *)ud;
}

/* Charge n bytes of C-side memory against the call's cap. 0, or -1 (and
 * S->refused = true) when it would exceed the cap. Never raises. */
int sl_lua_mem_charge(struct sl_lua_state *S, size_t n);
void sl_lua_mem_uncharge(struct sl_lua_state *S, size_t n);

/* True when the call's deadline has passed (marks the call timed out and
 * arms the every-instruction hook). Never raises; lets C loops clean up
 * before calling sl_lua_raise_timeout(). */
bool sl_lua_deadline_passed(lua_State *L);
/* Raise the timeout error. [..] -> does not return. May raise (always). */
int sl_lua_raise_timeout(lua_State *L);
/* Checkpoint before anything that can catch errors or re-enter Lua from C
 * (pcall, xpcall, coroutine.resume/wrap, callbacks of C functions). Raises
 * when the call is already killed, when the deadline has passed, or when
 * the C stack used since the call started exceeds its budget (nested
 * coroutines or callbacks); the last two kill the call, so no handler or
 * pcall can continue it. [..] -> [..]. May raise. */
void sl_lua_checkpoint(lua_State *L);

/* Make the table at idx read-only: push a proxy whose __index is the table,
 * whose __newindex raises "attempt to modify read-only table '<name>'" and
 * whose metatable is locked. Registers the proxy in the frozen set that
 * rawset/table.insert/... refuse. [..] -> [.. proxy]. May raise. */
void sl_lua_proxy(lua_State *L, int idx, const char *name);
/* Add the table at idx to the frozen set. [..] -> [..]. May raise. */
void sl_lua_freeze_mark(lua_State *L, int idx);

/* Deliver one log line to the call's sink (applies max_log). Never raises. */
void sl_lua_log_emit(lua_State *L, const char *msg, size_t len);

/* Build the shale table (unfrozen; sub-tables already frozen).
 * [..] -> [.. shale]. May raise. (api.c) */
void sl_lua_open_shale(lua_State *L);
/* Build the shale.json table (frozen proxy). [..] -> [.. json]. May raise.
 * (json.c) */
void sl_lua_open_json(lua_State *L);
/* Replace find/match/gmatch/gsub in the string table at idx with versions
 * that honour the call's deadline. [..] -> [..]. May raise. (strmatch.c) */
void sl_lua_strmatch_install(lua_State *L, int idx);

/* C-side resources owned by a Lua userdata, so that a Lua error (longjmp)
 * cannot leak them: the __gc metamethod releases whatever is still held.
 * All memory here is charged to the call with sl_lua_mem_charge. */
struct sl_lua_box {
    struct sl_lua_state *S;
    char *buf;          /* malloc'ed scratch buffer */
    size_t len, cap;
    size_t charged;     /* bytes charged for buf and extra (excl. zlib) */
    json_t *json;       /* jansson tree being built or read */
    z_stream z;
    int zkind;          /* 0 none, 1 deflate, 2 inflate (z needs End) */
};
/* Push a new empty box. [..] -> [.. box]. May raise. */
struct sl_lua_box *sl_lua_box_new(lua_State *L);
/* Make room for `need` more bytes in b->buf. 0, or -1 (cap or malloc). */
int sl_lua_box_reserve(struct sl_lua_box *b, size_t need);
/* Charge extra bytes held elsewhere by the box (e.g. a jansson tree). */
int sl_lua_box_charge(struct sl_lua_box *b, size_t n);
/* Free everything the box holds and uncharge it. Idempotent. */
void sl_lua_box_release(struct sl_lua_box *b);
/* zlib allocator hooks charging the call (opaque = struct sl_lua_state *). */
void *sl_lua_zalloc(void *opaque, unsigned items, unsigned size);
void sl_lua_zfree(void *opaque, void *p);

/* Values (value.c). Push v onto the stack. [..] -> [.. v]. May raise. */
void sl_lua_push_val(lua_State *L, const struct sl_lua_val *v, int depth);
/* Convert the value at idx into *out (returns new). Never raises and does
 * not allocate through Lua; needs 2*SL_LUA_MAX_DEPTH+4 free stack slots.
 * *budget is decremented by string bytes + 16 per table entry.
 * 0, or -1 with code (SL_EINVAL or SL_ETOOBIG) and msg filled. */
int sl_lua_to_val(lua_State *L, int idx, struct sl_lua_val *out, size_t *budget, int *code, char *msg,
                  size_t msglen);

/* Insert seg at the front of the NUL-terminated buf (capacity cap),
 * truncating the tail. Used to build "where" paths while unwinding. */
void sl_lua_prepend(char *buf, size_t cap, const char *seg);

#endif
