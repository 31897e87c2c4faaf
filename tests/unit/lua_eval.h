/* SPDX-License-Identifier: MIT
 * lua_eval.h: the sandbox unit tests' way of checking one Lua expression
 * (test_lua_api.c, test_lua_image.c, test_lua_audio.c). Define
 * LUA_EVAL_PRELUDE (Lua run before every expression) and LUA_EVAL_NAME
 * (the script name in messages) before including it, or take the defaults.
 */
#ifndef LUA_EVAL_H
#define LUA_EVAL_H

#include <stdio.h>
#include <string.h>

#include "sandbox.h"
#include "tap.h"

#ifndef LUA_EVAL_PRELUDE
#define LUA_EVAL_PRELUDE ""
#endif
#ifndef LUA_EVAL_NAME
#define LUA_EVAL_NAME "api"
#endif

static struct sl_err last_err;

/* Evaluate `return <expr>` after the prelude under lim (NULL: defaults);
 * the result as text (tostring of non-strings, "ERR: <first line of
 * message>" on failure). */
static inline const char *eval_lim(const char *expr, const struct sl_lua_limits *lim)
{
    static char out[8192];
    static char src[16384];
    struct sl_lua_val r;
    snprintf(src, sizeof(src), "%slocal r = (%s)\nif type(r) ~= 'string' then r = tostring(r) end\nreturn r",
             LUA_EVAL_PRELUDE, expr);
    if (sl_lua_call(LUA_EVAL_NAME, src, strlen(src), NULL, NULL, 0, lim, NULL, NULL, &r, &last_err) != 0) {
        snprintf(out, sizeof(out), "ERR: %.*s", (int)strcspn(last_err.msg, "\n"), last_err.msg);
        return out;
    }
    snprintf(out, sizeof(out), "%.*s", (int)r.s.len, r.s.p);
    sl_lua_val_free(&r);
    return out;
}

static inline const char *eval(const char *expr)
{
    return eval_lim(expr, NULL);
}

/* The expression on one line, for the TAP description. */
static inline const char *flat(const char *expr)
{
    static char buf[4][300];
    static int k;
    char *b = buf[k++ & 3];
    snprintf(b, sizeof(buf[0]), "%s", expr);
    for (char *p = b; *p; p++)
        if (*p == '\n')
            *p = ' ';
    return b;
}

#define EVAL_EQ(expr, want) TAP_EQ_STR(eval(expr), want, "%s", flat(expr))
#define EVAL_TRUE(expr) TAP_EQ_STR(eval(expr), "true", "%s", flat(expr))
#define EVAL_ERR(expr, sub)                                                                                         \
    do {                                                                                                            \
        const char *got_ = eval(expr);                                                                              \
        TAP_OK(strncmp(got_, "ERR: ", 5) == 0 && strstr(got_, sub) != NULL, "%s fails with '%s'", flat(expr), sub); \
        if (!strstr(got_, sub))                                                                                     \
            printf("#   got: %s\n", got_);                                                                          \
    } while (0)

#endif
