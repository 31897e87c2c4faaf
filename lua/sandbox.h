/* SPDX-License-Identifier: MIT
 * sandbox.h: run one function of one untrusted Lua script under limits.
 *
 * The sandbox is a self-contained facility: "compile this source text, run
 * function F with these arguments, give me back the first result", with a
 * wall-time budget, a memory cap and an output cap, in a LuaJIT state that
 * cannot reach io/os/package/debug/jit/ffi, cannot load bytecode and cannot
 * see other scripts' globals. It knows nothing about ETL, dsort or ishard:
 * callers build the arguments (bytes, a ctx table, a WebDataset sample) and
 * interpret the result.
 *
 * Thread-safety: every function here may be called from any number of
 * threads at once. Lua states are pooled per calling thread (no locks on the
 * call path); compiled chunks are cached per state by SHA-256 of
 * (name, source). A thread's states are closed when the thread exits, or
 * earlier with sl_lua_thread_cleanup(). A call needs about 1.5 MiB of free
 * C stack on the calling thread (its C stack budget shrinks on smaller
 * stacks).
 *
 * Error codes (struct sl_err.code, from server/core/sl.h):
 *   SL_EINVAL     the script is at fault: syntax error, bytecode refused,
 *                 runtime error (error(), bad index, Lua stack overflow,
 *                 C stack overflow from nested coroutines/callbacks, ...),
 *                 a result that cannot cross the boundary (function, cycle)
 *   SL_ENOENT     the script compiled and ran but fn_name is not a function
 *   SL_ETIMEOUT   the wall-time budget (limits.timeout_ns) ran out
 *   SL_ETOOBIG    the memory cap (limits.mem_limit) was hit, or the result
 *                 is larger than limits.max_output
 *   SL_EINTERNAL  the host could not create a Lua state (out of memory)
 * err->msg always names the script and, when known, the line:
 *   script "relabel": line 7: attempt to index a nil value
 * followed, for runtime errors, by a short Lua stack traceback
 * ("\nstack traceback:\n  line 7: in function 'helper'\n  ...").
 * See docs/lua-sandbox.md for what scripts can and cannot do.
 */
#ifndef SL_LUA_SANDBOX_H
#define SL_LUA_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sl.h"

/* ---- limits ----------------------------------------------------------- */

#define SL_LUA_DEFAULT_TIMEOUT_NS (5LL * 1000000000LL) /* 5 s */
#define SL_LUA_DEFAULT_MEM_LIMIT (64u * 1024 * 1024)   /* 64 MiB */
#define SL_LUA_DEFAULT_MAX_OUTPUT (64u * 1024 * 1024)  /* 64 MiB */
#define SL_LUA_DEFAULT_MAX_LOG (64u * 1024)            /* 64 KiB */
#define SL_LUA_DEFAULT_SEED 0x5348414c45ULL            /* "SHALE" */

/* Per-call limits. Zero (or negative timeout) in any field means "default".
 * mem_limit counts every byte the call makes the state hold: the arguments
 * once copied into Lua, the compiled chunk on a cache miss, the script's
 * data, garbage not yet collected, and C-side buffers of the shale.*
 * helpers (gzip, JSON). A transform of an N-byte object therefore needs
 * roughly 3*N plus its working set. */
struct sl_lua_limits {
    int64_t timeout_ns; /* wall-time budget for the whole call (compile + run) */
    size_t mem_limit;   /* bytes the call may allocate (live, not cumulative) */
    size_t max_output;  /* result size cap: string bytes + 16 per table entry */
    size_t max_log;     /* shale.log/print bytes per call; the rest is dropped */
    uint64_t seed;      /* math.random seed at the start of the call */
};

/* Fill *l with the defaults above. */
void sl_lua_limits_default(struct sl_lua_limits *l);

/* ---- values crossing the boundary ------------------------------------- */

enum sl_lua_type {
    SL_LUA_NIL = 0,
    SL_LUA_BOOL,
    SL_LUA_NUM,   /* Lua number (double); integers are exact up to 2^53 */
    SL_LUA_STR,   /* bytes with a length; may contain NULs */
    SL_LUA_TABLE, /* ordered list of key/value pairs */
};

struct sl_lua_kv;

/* A Lua value as C sees it. A zero-initialised struct is nil.
 *
 * Ownership: a value owns everything it points to, except a string made
 * with sl_lua_str_ref() (borrowed = true), whose bytes stay the caller's and
 * must outlive every use of the value. sl_lua_val_free() releases what the
 * value owns, recursively. Strings the sandbox returns are always owned and
 * NUL-terminated (s.p[s.len] == 0) for convenience.
 *
 * Tables: kv[0..n) in order. Keys are strings or integral numbers (other
 * key types are refused). Tables returned by a script are ordered
 * deterministically: integer keys ascending first, then string keys in
 * bytewise order. Tables passed in may contain duplicate keys; in Lua the
 * last one wins. */
struct sl_lua_val {
    enum sl_lua_type type;
    bool borrowed; /* SL_LUA_STR only: s.p is not owned */
    union {
        bool b;
        double n;
        struct {
            const char *p;
            size_t len;
        } s;
        struct {
            struct sl_lua_kv *kv;
            size_t n, cap;
        } t;
    };
};

struct sl_lua_kv {
    struct sl_lua_val k, v;
};

/* Constructors. None of these can fail. */
struct sl_lua_val sl_lua_nil(void);
struct sl_lua_val sl_lua_bool(bool b);
struct sl_lua_val sl_lua_num(double n);
/* Borrowed bytes: p must stay valid while the value is in use. */
struct sl_lua_val sl_lua_str_ref(const void *p, size_t len);
/* Borrowed NUL-terminated string (s may be NULL: empty string). */
struct sl_lua_val sl_lua_cstr_ref(const char *s);
/* Empty table (no allocation until the first add). */
struct sl_lua_val sl_lua_table(void);

/* Owned copy of p[0..len) into *out. 0, or -1 (malloc failed; *out = nil). */
int sl_lua_str_dup(struct sl_lua_val *out, const void *p, size_t len);

/* Append a pair to table t. Takes ownership of k and v in every case (they
 * are freed on failure). k must be a string or an integral number.
 * 0, or -1 when t is not a table, k is not a valid key or malloc failed. */
int sl_lua_table_add(struct sl_lua_val *t, struct sl_lua_val k, struct sl_lua_val v);
/* Same with a copied string key / an integer key. */
int sl_lua_table_adds(struct sl_lua_val *t, const char *key, struct sl_lua_val v);
int sl_lua_table_addi(struct sl_lua_val *t, int64_t key, struct sl_lua_val v);

/* Lookups (linear; last match wins, as in Lua). Borrowed pointer into t,
 * valid until t is modified or freed; NULL when absent or t is not a table. */
const struct sl_lua_val *sl_lua_table_get(const struct sl_lua_val *t, const char *key);
const struct sl_lua_val *sl_lua_table_getl(const struct sl_lua_val *t, const void *key, size_t len);
const struct sl_lua_val *sl_lua_table_geti(const struct sl_lua_val *t, int64_t key);

/* Release what v owns and reset it to nil. NULL and nil are no-ops. */
void sl_lua_val_free(struct sl_lua_val *v);

/* "nil", "boolean", "number", "string", "table". */
const char *sl_lua_type_name(enum sl_lua_type t);
/* Human description for error messages: "nil", "boolean true",
 * "number 3.5", "string (12 bytes)", "table (3 entries)". Always
 * NUL-terminates buf (n > 0). Returns buf. */
char *sl_lua_val_describe(const struct sl_lua_val *v, char *buf, size_t n);

/* ---- log sink ---------------------------------------------------------- */

/* Receives one line per shale.log()/print() call, arguments joined by TAB
 * (no trailing newline; line is NUL-terminated, line[len] == 0, but may
 * also contain NULs). Called synchronously on the thread running the call;
 * it must not call back into the same Lua call and must not longjmp. */
typedef void (*sl_lua_log_fn)(void *ctx, const char *line, size_t len);

/* ---- running scripts --------------------------------------------------- */

/* Compile src (Lua 5.1 source text) without running it. Used at ETL init to
 * reject syntax errors: err->msg is e.g.
 *   script "x": line 3: '=' expected near 'end'
 * Bytecode ("\27LJ", "\27Lua") is refused. name labels messages (NULL:
 * "script"). 0, or -1 with SL_EINVAL (script) / SL_ETOOBIG / SL_EINTERNAL. */
int sl_lua_check(const char *name, const char *src, size_t len, struct sl_err *err);

/* Compile and run the chunk's top level in a sandbox under lim (NULL:
 * defaults), then verify that global fn_name is a function. Distinguishes
 * "no such entry point" (SL_ENOENT) from broken scripts (the codes above),
 * so a caller can probe for transform vs transform_sample. */
int sl_lua_check_fn(const char *name, const char *src, size_t len, const char *fn_name,
                    const struct sl_lua_limits *lim, struct sl_err *err);

/* Run one call:
 *   1. take a Lua state from this thread's pool (or create one);
 *   2. find the compiled chunk in the state's cache or compile it;
 *   3. give the chunk a fresh global environment (reads fall back to the
 *      read-only base; writes stay in this call) and run its top level;
 *   4. call global fn_name(args[0], ..., args[nargs-1]) and convert its
 *      first return value into *result (nil when it returns nothing).
 * fn_name NULL: skip step 4; *result is the chunk's first return value.
 *
 * args: borrowed, only read during the call (borrowed strings are copied
 * into Lua). lim: NULL for defaults. log_cb: NULL drops script log output.
 * result: on success returns new (caller frees with sl_lua_val_free); on
 * failure left nil. The state is discarded (not reused) after a timeout, a
 * memory-cap hit or a runtime error.
 *
 * Returns 0, or -1 with err->code as in the table at the top of this file. */
int sl_lua_call(const char *name, const char *src, size_t len, const char *fn_name,
                const struct sl_lua_val *args, int nargs, const struct sl_lua_limits *lim,
                sl_lua_log_fn log_cb, void *log_ctx, struct sl_lua_val *result, struct sl_err *err);

/* End every running and future call at its next check, as if its deadline
 * had passed (SL_ETIMEOUT). For process shutdown; cannot be undone. */
void sl_lua_cancel_all(void);

/* Close this thread's pooled states now (they are also closed automatically
 * when the thread exits). Safe to call at any time outside a call. */
void sl_lua_thread_cleanup(void);

/* Process-wide counters (monotonic, relaxed atomics). */
struct sl_lua_stats {
    uint64_t calls;           /* sl_lua_call + sl_lua_check + sl_lua_check_fn */
    uint64_t errors;          /* of which failed (any code) */
    uint64_t timeouts;        /* failed with SL_ETIMEOUT */
    uint64_t mem_errors;      /* failed with SL_ETOOBIG because of mem_limit */
    uint64_t states_created;  /* Lua states created */
    uint64_t states_discarded; /* closed because a call left them suspect */
    uint64_t cache_hits;      /* compiled chunk found in the state's cache */
    uint64_t cache_misses;    /* chunk compiled */
};
void sl_lua_stats_get(struct sl_lua_stats *out);

#endif
