/* SPDX-License-Identifier: MIT
 * test_lua_strmatch.c: the sandbox's string.find/match/gmatch/gsub
 * (lua/strmatch.c) must agree with stock LuaJIT. Every case is evaluated
 * in a plain LuaJIT state (the oracle) and in the sandbox, and the
 * serialised results compared; errors compare as "ERR". Hand-written
 * cases first, then a seeded random fuzz of small patterns and subjects.
 * Deliberate differences (documented in lua/strmatch.c) are not tested
 * here: "\0" inside patterns and a trailing '%' in gsub replacements.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

#include "sandbox.h"
#include "tap.h"

static lua_State *oracle;

static const char ser_src[] =
    "local function ser(...)\n"
    "  local t = {}\n"
    "  for i = 1, select('#', ...) do\n"
    "    local v = select(i, ...)\n"
    "    t[i] = type(v) == 'string' and ('%q'):format(v) or tostring(v)\n"
    "  end\n"
    "  return select('#', ...) .. ':' .. table.concat(t, ',')\n"
    "end\n"
    "local function gm(s, p)\n"
    "  local t = {}\n"
    "  for a, b in string.gmatch(s, p) do t[#t + 1] = ser(a, b) if #t > 50 then break end end\n"
    "  return table.concat(t, ';')\n"
    "end\n"
    "return ";

static void run_oracle(const char *chunk, char *out, size_t n)
{
    if (luaL_loadbuffer(oracle, chunk, strlen(chunk), "=oracle") != 0 || lua_pcall(oracle, 0, 1, 0) != 0) {
        snprintf(out, n, "ERR");
    } else {
        size_t l;
        const char *s = lua_tolstring(oracle, -1, &l);
        snprintf(out, n, "%.*s", (int)l, s ? s : "(nil)");
    }
    lua_settop(oracle, 0);
}

static void run_sandbox(const char *chunk, char *out, size_t n)
{
    struct sl_lua_val r;
    struct sl_err err;
    if (sl_lua_call("match", chunk, strlen(chunk), NULL, NULL, 0, NULL, NULL, NULL, &r, &err) != 0)
        snprintf(out, n, "ERR");
    else
        snprintf(out, n, "%.*s", (int)r.s.len, r.type == SL_LUA_STR ? r.s.p : "(nil)");
    sl_lua_val_free(&r);
}

/* 0 when both agree; diagnostics on stdout otherwise. */
static int compare(const char *expr, bool quiet)
{
    static char chunk[4096], a[4096], b[4096];
    snprintf(chunk, sizeof(chunk), "%s%s", ser_src, expr);
    run_oracle(chunk, a, sizeof(a));
    run_sandbox(chunk, b, sizeof(b));
    if (strcmp(a, b) == 0)
        return 0;
    if (!quiet)
        printf("#   %s\n#     luajit:  %s\n#     sandbox: %s\n", expr, a, b);
    return 1;
}

#define SAME(expr) TAP_OK(compare(expr, false) == 0, "%s", expr)

static void test_cases(void)
{
    /* find: plain and patterns, init, anchors */
    SAME("ser(string.find('hello world', 'o w'))");
    SAME("ser(string.find('hello world', 'o', 6))");
    SAME("ser(string.find('hello world', 'l', -3))");
    SAME("ser(string.find('hello', 'l', 100))");
    SAME("ser(string.find('hello', '', 100))");
    SAME("ser(string.find('hello', '', 3))");
    SAME("ser(string.find('hello', 'xyz'))");
    SAME("ser(string.find('a.b', '.', 1, true))");
    SAME("ser(string.find('a+b', '+', 1, true))");
    SAME("ser(string.find('hello', '^h'))");
    SAME("ser(string.find('hello', '^e'))");
    SAME("ser(string.find('hello', 'o$'))");
    SAME("ser(string.find('hel$lo', 'l$l'))");
    SAME("ser(string.find('hello', '(l)(l)'))");
    SAME("ser(string.find('hello', '()ll()'))");
    SAME("ser(string.find('', ''))");
    SAME("ser(string.find('', 'a*'))");
    SAME("ser(string.find('abc', '^', 2))");
    /* match: classes, sets, quantifiers */
    SAME("ser(string.match('key = value', '(%w+)%s*=%s*(%w+)'))");
    SAME("ser(string.match('  trim  ', '^%s*(.-)%s*$'))");
    SAME("ser(string.match('2024-01-31', '(%d+)-(%d+)-(%d+)'))");
    SAME("ser(string.match('abc123', '%a+'))");
    SAME("ser(string.match('abc123', '%A+'))");
    SAME("ser(string.match('x = [[nested]]', '%[(%b[])%]'))");
    SAME("ser(string.match('f(a(b)c)d', '%b()'))");
    SAME("ser(string.match('THE (quick) fox', '%f[%a]%a+'))");
    SAME("ser(string.match('THE (quick) fox', '%f[%l]%a+'))");
    SAME("ser(string.match('hello', '[^aeiou]+'))");
    SAME("ser(string.match('a]b', '[]]'))");
    SAME("ser(string.match('a-b', '[a-]+'))");
    SAME("ser(string.match('a-b', '[%-]'))");
    SAME("ser(string.match('x^y', '[%^y]+'))");
    SAME("ser(string.match('0x1F', '0x(%x+)'))");
    SAME("ser(string.match('tab\\there', '%c'))");
    SAME("ser(string.match('a.b,c!', '%p+'))");
    SAME("ser(string.match('Hello World', '%u%l+ (%u)'))");
    SAME("ser(string.match(' \\t\\n', '%s+'))");
    SAME("ser(string.match('a\\0b', '%z'))");
    SAME("ser(string.match('a\\0b', '[%z]'))");
    SAME("ser(string.match('aaa', 'a-b'))");
    SAME("ser(string.match('aaab', 'a-b'))");
    SAME("ser(string.match('aaab', 'a*'))");
    SAME("ser(string.match('aaab', 'a+b'))");
    SAME("ser(string.match('b', 'a?b'))");
    SAME("ser(string.match('abab', '(ab)%1'))");
    SAME("ser(string.match('abcabc', '(a)(b)(c)%1%2%3'))");
    SAME("ser(string.match('hello', '(h)(e)(l)(l)(o)'))");
    SAME("ser(string.match('hello', '((l)(l))'))");
    SAME("ser(string.match('hello', '()(l+)()'))");
    SAME("ser(string.match('x', '.-$'))");
    SAME("ser(string.match('\\200\\255abc', '[\\128-\\255]+'))");
    SAME("ser(string.match('caf\\195\\169', '[%w\\128-\\255]+'))");
    /* gmatch */
    SAME("gm('one two  three', '%a+')");
    SAME("gm('k1=v1, k2=v2', '(%w+)=(%w+)')");
    SAME("gm('abc', '')");
    SAME("gm('abc', 'x*')");
    SAME("gm('a,b,,c', '([^,]*)')");
    SAME("gm('hello', '()l')");
    SAME("gm('^a^b', '^%a')");
    /* gsub */
    SAME("ser(string.gsub('hello world', 'o', '0'))");
    SAME("ser(string.gsub('hello world', 'o', '0', 1))");
    SAME("ser(string.gsub('hello world', '(%w+)', '<%1>'))");
    SAME("ser(string.gsub('hello world', '%w+', '%0 %0'))");
    SAME("ser(string.gsub('hello', '', '-'))");
    SAME("ser(string.gsub('abc', 'x*', '-'))");
    SAME("ser(string.gsub('hello', '^h', 'H'))");
    SAME("ser(string.gsub('hello', 'l+', function(s) return #s end))");
    SAME("ser(string.gsub('hello', 'l', function() return nil end))");
    SAME("ser(string.gsub('hello', 'l', function() return false end))");
    SAME("ser(string.gsub('$name is $age', '%$(%w+)', {name = 'bob', age = 42}))");
    SAME("ser(string.gsub('$x $y', '%$(%w+)', {x = 'X'}))");
    SAME("ser(string.gsub('abc', '%w', '%%'))");
    SAME("ser(string.gsub('abc', '(b)', '[%1%1]'))");
    SAME("ser(string.gsub('abc', 'b', 5))");
    SAME("ser(string.gsub('a.b.c', '%.', '/'))");
    SAME("ser(string.gsub('hello world', '(o)()', '%2'))");
    SAME("ser(string.gsub('abc', '.', {a = 1, b = true}))");
    SAME("ser(string.gsub('abc', '.', 'x', 0))");
    SAME("ser(string.gsub('abc', '.', 'x', -1))");
    /* errors */
    SAME("ser(string.find('a', '[a'))");
    SAME("ser(string.find('a', '%'))");
    SAME("ser(string.find('a', '(a'))");
    SAME("ser(string.find('a', 'a)'))");
    SAME("ser(string.find('a', '%b'))");
    SAME("ser(string.find('a', '%f'))");
    SAME("ser(string.find('a', '%fa'))");
    SAME("ser(string.find('a', '%1'))");
    SAME("ser(string.find('a', '(%1)'))");
    SAME("ser(string.gsub('a', '(a)', '%2'))");
    SAME("ser(string.gsub('a', 'a', {}))");
    SAME("ser(string.gsub('a', 'a', function() return {} end))");
    SAME("ser(string.gsub('a', 'a', true))");
    SAME("ser(string.match('a', string.rep('(', 40)))");
    SAME("ser(string.find(nil, 'a'))");
    /* methods on strings reach the same functions */
    SAME("ser(('x=1'):match('(%w)=(%d)'))");
    SAME("ser(('x=1'):gsub('%d', '2'))");
    SAME("ser(('abc'):find('b', 1, true))");
}

static const char *const pieces[] = {
    "a", "b", "c", ".", "%a", "%d", "%s", "%w", "%W", "%p", "[ab]", "[^a]", "[a-c]", "[%d_]", "(", ")", "()",
    "*", "+", "-", "?", "%b()", "%f[%w]", "%f[%W]", "%1", "%%", "x", "1", "[]]", "%.",
};
static const char subj_chars[] = "aabbc c1_2(x)y.%";

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

/* Quote s as a Lua string literal body (only printable ASCII is used). */
static void lua_quote(char *out, size_t n, const char *s)
{
    size_t j = 0;
    for (; *s && j + 3 < n; s++) {
        if (*s == '\'' || *s == '\\')
            out[j++] = '\\';
        out[j++] = *s;
    }
    out[j] = 0;
}

static void test_fuzz(void)
{
    enum { N = 3000 };
    int bad = 0, errors = 0;
    for (int i = 0; i < N; i++) {
        char pat[128] = "", subj[32] = "", qp[300], qs[80], expr[2400];
        int np = 1 + (int)rnd(5);
        if (rnd(6) == 0)
            strcat(pat, "^");
        for (int k = 0; k < np; k++)
            strcat(pat, pieces[rnd(sizeof(pieces) / sizeof(pieces[0]))]);
        if (rnd(6) == 0)
            strcat(pat, "$");
        int ns = (int)rnd(12);
        for (int k = 0; k < ns; k++)
            subj[k] = subj_chars[rnd(sizeof(subj_chars) - 1)];
        subj[ns] = 0;
        lua_quote(qp, sizeof(qp), pat);
        lua_quote(qs, sizeof(qs), subj);
        snprintf(expr, sizeof(expr),
                 "ser(string.find('%s', '%s')) .. '|' .. ser(string.match('%s', '%s', 2)) .. '|' .. "
                 "ser(string.gsub('%s', '%s', '<%%0>')) .. '|' .. gm('%s', '%s')",
                 qs, qp, qs, qp, qs, qp, qs, qp);
        if (compare(expr, bad >= 5) != 0)
            bad++;
        char chk[3000], out[64];
        snprintf(chk, sizeof(chk), "%s%s", ser_src, expr);
        run_oracle(chk, out, sizeof(out));
        errors += strcmp(out, "ERR") == 0;
    }
    TAP_EQ_INT(bad, 0, "%d random patterns agree with LuaJIT (%d of them are errors in both)", N, errors);
}

int main(void)
{
    oracle = luaL_newstate();
    luaL_openlibs(oracle);
    test_cases();
    test_fuzz();
    lua_close(oracle);
    sl_lua_thread_cleanup();
    return tap_done();
}
