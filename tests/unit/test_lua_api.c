/* SPDX-License-Identifier: MIT
 * test_lua_api.c: the shale.* table scripts see (lua/api.c, lua/json.c):
 * hashes against published vectors, base64 (RFC 4648 vectors, padding,
 * errors), gzip/gunzip (round trips, interop with the system gzip, corrupt
 * and truncated input), JSON (round trips, arrays vs objects, null, UTF-8,
 * errors with positions) and the string helpers. Each check evaluates one
 * Lua expression in the sandbox.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox.h"
#include "tap.h"

#include "lua_eval.h"

#define ALL256 "(function() local t = {} for i = 0, 255 do t[#t + 1] = string.char(i) end return table.concat(t) end)()"

static void test_hashes(void)
{
    EVAL_EQ("shale.md5('')", "d41d8cd98f00b204e9800998ecf8427e");
    EVAL_EQ("shale.md5('abc')", "900150983cd24fb0d6963f7d28e17f72");
    EVAL_EQ("shale.md5('The quick brown fox jumps over the lazy dog')", "9e107d9d372bb6826bd81d3542a419d6");
    EVAL_EQ("shale.md5('\\0')", "93b885adfe0da089cdf634904fd59f71");
    EVAL_EQ("shale.md5(" ALL256 ")", "e2c865db4162bed963bfaa9ef6ac18f0");
    EVAL_EQ("shale.sha256('')", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EVAL_EQ("shale.sha256('abc')", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EVAL_EQ("shale.sha256(" ALL256 ")", "40aff2e9d2d8922e47afd4648e6967497158785fbd1da870e7110266bf944880");
    EVAL_EQ("shale.xxhash('')", "ef46db3751d8e999");
    EVAL_EQ("shale.xxhash('abc')", "44bc2cf5ad770999");
    EVAL_EQ("shale.xxhash('abc', 42)", "13c1d910702770e6");
    EVAL_EQ("shale.xxhash(" ALL256 ")", "1facbe8406cd904b");
    EVAL_EQ("shale.md5(123)", "202cb962ac59075b964b07152d234b70");   /* numbers coerce, as in Lua */
    EVAL_ERR("shale.md5()", "bad argument #1 to 'md5' (string expected, got no value)");
    EVAL_ERR("shale.sha256({})", "bad argument #1 to 'sha256' (string expected, got table)");
    EVAL_ERR("shale.xxhash('a', -1)", "seed must be an integer");
    EVAL_ERR("shale.xxhash('a', 1.5)", "seed must be an integer");
}

static void test_base64(void)
{
    static const char *vec[][2] = { { "", "" },         { "f", "Zg==" },         { "fo", "Zm8=" },
                                    { "foo", "Zm9v" },  { "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" },
                                    { "foobar", "Zm9vYmFy" } };
    char expr[256];
    for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
        snprintf(expr, sizeof(expr), "shale.base64.encode('%s')", vec[i][0]);
        EVAL_EQ(expr, vec[i][1]);
        snprintf(expr, sizeof(expr), "shale.base64.decode('%s')", vec[i][1]);
        EVAL_EQ(expr, vec[i][0]);
    }
    EVAL_EQ("shale.base64.decode('Zg')", "f");
    EVAL_EQ("shale.base64.decode('Zm8')", "fo");
    EVAL_EQ("shale.base64.decode(' Zm9v\\r\\nYmFy\\n')", "foobar");
    EVAL_EQ("shale.sha256(shale.base64.encode(" ALL256 "))",
            "ab7727e21f4bbba6508dd72804d97435a78eb44a1e277af1c0f65a8522de382e");
    EVAL_TRUE("shale.base64.decode(shale.base64.encode(" ALL256 ")) == " ALL256);
    EVAL_EQ("#shale.base64.decode('AAAA')", "3");
    EVAL_EQ("shale.base64.decode('AA==') == '\\0'", "true");
    EVAL_ERR("shale.base64.decode('Zm9v!')", "shale.base64.decode: invalid character 0x21 at offset 4");
    EVAL_ERR("shale.base64.decode('Z')", "invalid length");
    EVAL_ERR("shale.base64.decode('Zg=')", "bad padding");
    EVAL_ERR("shale.base64.decode('Zg===')", "bad padding");
    EVAL_ERR("shale.base64.decode('Zg==Zg==')", "data after '=' padding");
    EVAL_ERR("shale.base64.decode('Zm9v-_')", "invalid character 0x2d");
    EVAL_ERR("shale.base64.encode()", "bad argument #1");
}

static void test_gzip(void)
{
    EVAL_TRUE("shale.gunzip(shale.gzip('')) == ''");
    EVAL_TRUE("shale.gunzip(shale.gzip('x')) == 'x'");
    EVAL_TRUE("shale.gunzip(shale.gzip(" ALL256 ")) == " ALL256);
    EVAL_TRUE("(function() local s = string.rep(" ALL256 ", 4096) .. 'tail'\n"
              "  return shale.gunzip(shale.gzip(s, 1)) == s and shale.gunzip(shale.gzip(s, 9)) == s end)()");
    EVAL_TRUE("shale.gzip('abc'):sub(1, 3) == '\\31\\139\\8'");
    EVAL_TRUE("#shale.gzip(string.rep('a', 1e6)) < 5000");
    EVAL_TRUE("#shale.gzip(string.rep('a', 1000), 0) > 1000");
    EVAL_TRUE("shale.gunzip(shale.gzip('ab') .. shale.gzip('cd')) == 'abcd'");
    EVAL_EQ("#shale.gunzip(shale.gzip(string.rep('z', 100000)), 100000)", "100000");
    EVAL_ERR("shale.gunzip(shale.gzip(string.rep('z', 100000)), 99999)", "exceeds max_bytes (99999)");
    EVAL_ERR("shale.gunzip('plain text, not gzip at all')", "shale.gunzip: not gzip data (bad magic)");
    EVAL_ERR("shale.gunzip('x')", "not gzip data (too short)");
    EVAL_ERR("shale.gunzip(shale.gzip('hello world'):sub(1, -6))", "truncated gzip data");
    EVAL_ERR("shale.gunzip(shale.gzip('hello world') .. 'junk')", "trailing garbage after gzip data");
    EVAL_ERR("(function() local z = shale.gzip(string.rep('hello world', 100))\n"
             "  return shale.gunzip(z:sub(1, 10) .. '\\255' .. z:sub(12)) end)()",
             "corrupt gzip data (invalid block type)");
    EVAL_ERR("(function() local z = shale.gzip('hello world')\n"
             "  return shale.gunzip(z:sub(1, -9) .. '\\0\\0\\0\\0' .. z:sub(-4)) end)()",
             "corrupt gzip data (incorrect data check)");
    EVAL_ERR("shale.gzip('x', 10)", "level must be 0..9");
    EVAL_ERR("shale.gunzip(shale.gzip('x'), -1)", "max_bytes must be >= 0");

    /* interoperability with the gzip(1) program */
    if (access("/bin/gzip", X_OK) != 0 && access("/usr/bin/gzip", X_OK) != 0) {
        TAP_OK(1, "# SKIP gzip(1) not installed");
        return;
    }
    char tmpl[] = "/tmp/shale-lua-gz-XXXXXX";
    int fd = mkstemp(tmpl);
    TAP_OK(fd >= 0, "temp file");
    if (fd < 0)
        return;
    const char *src = "return shale.gzip(string.rep('Shale gzip interop\\n', 1000))";
    struct sl_lua_val r;
    struct sl_err err;
    TAP_EQ_INT(sl_lua_call("gz", src, strlen(src), NULL, NULL, 0, NULL, NULL, NULL, &r, &err), 0, "gzip in Lua");
    TAP_OK(write(fd, r.s.p, r.s.len) == (ssize_t)r.s.len, "write gzip output");
    close(fd);
    sl_lua_val_free(&r);
    char cmd[256], line[64];
    snprintf(cmd, sizeof(cmd), "gzip -dc %s | wc -c && gzip -dc %s | head -1", tmpl, tmpl);
    FILE *p = popen(cmd, "r");
    char got[128] = "";
    while (p && fgets(line, sizeof(line), p))
        strncat(got, line, sizeof(got) - strlen(got) - 1);
    TAP_OK(p && pclose(p) == 0 && strcmp(got, "19000\nShale gzip interop\n") == 0, "gzip -dc reads shale.gzip output");

    /* and the other way round: gzip(1) output through shale.gunzip */
    snprintf(cmd, sizeof(cmd), "printf 'made by gzip(1)\\n' | gzip -9 -c > %s", tmpl);
    TAP_EQ_INT(system(cmd), 0, "gzip(1) writes a file");
    FILE *f = fopen(tmpl, "rb");
    char gz[256];
    size_t n = f ? fread(gz, 1, sizeof(gz), f) : 0;
    if (f)
        fclose(f);
    struct sl_lua_val arg = sl_lua_str_ref(gz, n);
    const char *un = "function f(z) return shale.gunzip(z) end";
    TAP_EQ_INT(sl_lua_call("gz", un, strlen(un), "f", &arg, 1, NULL, NULL, NULL, &r, &err), 0, "gunzip gzip(1) output");
    TAP_OK(r.type == SL_LUA_STR && strcmp(r.s.p, "made by gzip(1)\n") == 0, "gzip(1) output decoded");
    sl_lua_val_free(&r);
    unlink(tmpl);
}

static void test_json(void)
{
    EVAL_EQ("shale.json.encode({b = 1, a = {1, 2, 3}, c = 'x'})", "{\"a\":[1,2,3],\"b\":1,\"c\":\"x\"}");
    EVAL_EQ("shale.json.encode({})", "{}");
    EVAL_EQ("shale.json.encode(shale.json.array({}))", "[]");
    EVAL_EQ("shale.json.encode({[1] = 'a', [2] = 'b'})", "[\"a\",\"b\"]");
    EVAL_EQ("shale.json.encode({[1] = 'a', [3] = 'c'})", "{\"1\":\"a\",\"3\":\"c\"}");
    EVAL_EQ("shale.json.encode({[1] = 'a', x = 1})", "{\"1\":\"a\",\"x\":1}");
    EVAL_EQ("shale.json.encode({[1.5] = true})", "{\"1.5\":true}");
    EVAL_EQ("shale.json.encode(nil)", "null");
    EVAL_EQ("shale.json.encode(shale.json.null)", "null");
    EVAL_EQ("shale.json.encode({a = shale.json.null})", "{\"a\":null}");
    EVAL_EQ("shale.json.encode(true)", "true");
    EVAL_EQ("shale.json.encode(42)", "42");
    EVAL_EQ("shale.json.encode(-0.5)", "-0.5");
    EVAL_EQ("shale.json.encode(2^53)", "9007199254740992");
    EVAL_EQ("shale.json.encode(1e300)", "1.0000000000000001e300");   /* 17 digits: exact round trip */
    EVAL_TRUE("shale.json.decode(shale.json.encode(0.1)) == 0.1");
    EVAL_EQ("shale.json.encode('a\"b\\\\c\\n\\0')", "\"a\\\"b\\\\c\\n\\u0000\"");
    EVAL_EQ("shale.json.encode('caf\\195\\169')", "\"caf\xc3\xa9\"");
    EVAL_EQ("shale.json.encode({a = {b = {}}}, 2)", "{\n  \"a\": {\n    \"b\": {}\n  }\n}");
    EVAL_ERR("shale.json.encode({a = {b = print}})", "shale.json.encode: cannot encode a function value at $.a.b");
    EVAL_ERR("shale.json.encode({1, 2, {x = 0/0}})", "cannot encode NaN or infinity at $[3].x");
    EVAL_ERR("shale.json.encode('\\255')", "string is not valid UTF-8");
    EVAL_ERR("shale.json.encode({['\\255'] = 1})", "object key is not valid UTF-8");
    EVAL_ERR("(function() local t = {} t.t = t return shale.json.encode(t) end)()", "nested too deeply");
    EVAL_ERR("shale.json.encode({[true] = 1})", "object keys must be strings or numbers");
    EVAL_ERR("shale.json.encode(1, 9)", "indent must be 0..8");
    EVAL_ERR("(function() local t = shale.json.array({}) t.x = 1 return shale.json.encode(t) end)()",
             "marked as array has keys other than 1..n");

    EVAL_EQ("shale.json.decode('{\"a\": [1, 2.5, \"x\"], \"b\": {\"c\": true}}').a[2]", "2.5");
    EVAL_EQ("shale.json.decode('[10, 20, 30]')[3]", "30");
    EVAL_EQ("#shale.json.decode('[10, 20, 30]')", "3");
    EVAL_EQ("shale.json.decode('\"caf\\\\u00e9 \\\\ud83d\\\\ude00\"')", "caf\xc3\xa9 \xf0\x9f\x98\x80");
    EVAL_EQ("#shale.json.decode('\"a\\\\u0000b\"')", "3");
    EVAL_TRUE("shale.json.decode('null') == shale.json.null");
    EVAL_TRUE("shale.json.decode('[null]')[1] == shale.json.null");
    EVAL_EQ("shale.json.decode('12345678901')", "12345678901");
    EVAL_EQ("shale.json.decode('true')", "true");
    EVAL_EQ("getmetatable(shale.json.decode('[]'))", "json.array");
    EVAL_EQ("shale.json.encode(shale.json.decode('{\"tags\": [], \"meta\": {}, \"n\": [1, {\"k\": []}]}'))",
            "{\"meta\":{},\"n\":[1,{\"k\":[]}],\"tags\":[]}");
    EVAL_ERR("shale.json.decode('{\"a\": }')", "shale.json.decode: unexpected token near '}' (line 1, column 7)");
    EVAL_ERR("shale.json.decode('[1, 2')", "(line 1, column 5)");
    EVAL_ERR("shale.json.decode('')", "shale.json.decode:");
    EVAL_ERR("shale.json.decode(string.rep('[', 200) .. string.rep(']', 200))", "nested deeper than 128 levels");
    EVAL_ERR("shale.json.decode('\"\\255\"')", "shale.json.decode:");
    EVAL_ERR("shale.json.array(setmetatable({}, {}))", "table already has a metatable");
    EVAL_ERR("shale.json.decode()", "bad argument #1");

    /* decode -> modify -> encode, as an ETL on a JSON member would */
    EVAL_EQ("(function() local d = shale.json.decode('{\"label\": \"cat\", \"boxes\": [[1, 2, 3, 4]], "
            "\"extra\": null}')\n"
            "  d.label = d.label:upper(); d.boxes[2] = {5, 6, 7, 8}\n"
            "  return shale.json.encode(d) end)()",
            "{\"boxes\":[[1,2,3,4],[5,6,7,8]],\"extra\":null,\"label\":\"CAT\"}");
}

static void test_strings(void)
{
    EVAL_EQ("tostring(shale.startswith('hello', 'he'))", "true");
    EVAL_EQ("tostring(shale.startswith('hello', ''))", "true");
    EVAL_EQ("tostring(shale.startswith('he', 'hello'))", "false");
    EVAL_EQ("tostring(shale.endswith('image.jpg', '.jpg'))", "true");
    EVAL_EQ("tostring(shale.endswith('image.jpg', '.png'))", "false");
    EVAL_EQ("tostring(shale.endswith('a\\0b', '\\0b'))", "true");
    EVAL_EQ("table.concat(shale.split('a,b,,c', ','), '|')", "a|b||c");
    EVAL_EQ("table.concat(shale.split('', ','), '|')", "");
    EVAL_EQ("#shale.split('', ',')", "1");
    EVAL_EQ("table.concat(shale.split('a::b::', '::'), '|')", "a|b|");
    EVAL_EQ("table.concat(shale.split('a.b', '.'), '|')", "a|b");   /* plain, not a pattern */
    EVAL_EQ("#shale.split('x\\0y\\0z', '\\0')", "3");
    EVAL_ERR("shale.split('abc', '')", "separator must not be empty");
    EVAL_EQ("'[' .. shale.trim('  \\t hi there \\r\\n') .. ']'", "[hi there]");
    EVAL_EQ("'[' .. shale.trim('   ') .. ']'", "[]");
    EVAL_EQ("'[' .. shale.trim('x') .. ']'", "[x]");
    EVAL_ERR("shale.trim(nil)", "bad argument #1 to 'trim'");
    EVAL_ERR("shale.startswith('a')", "bad argument #2");
}

static void test_surface(void)
{
    /* exactly the documented surface, nothing else */
    EVAL_EQ("(function() local names = {}\n"
            "  for _, k in ipairs({'log', 'md5', 'sha256', 'xxhash', 'gzip', 'gunzip', 'startswith', 'endswith',\n"
            "                      'split', 'trim'}) do names[#names + 1] = k .. '=' .. type(shale[k]) end\n"
            "  names[#names + 1] = type(shale.json.encode) .. type(shale.json.decode) .. type(shale.json.array)\n"
            "  names[#names + 1] = type(shale.base64.encode) .. type(shale.base64.decode)\n"
            "  return table.concat(names, ' ') end)()",
            "log=function md5=function sha256=function xxhash=function gzip=function gunzip=function "
            "startswith=function endswith=function split=function trim=function functionfunctionfunction "
            "functionfunction");
    EVAL_EQ("type(shale.json.null)", "userdata");
    EVAL_TRUE("print == shale.log");
    EVAL_EQ("next(shale)", "nil");   /* proxies are empty; reads go through __index */
}

int main(void)
{
    test_hashes();
    test_base64();
    test_gzip();
    test_json();
    test_strings();
    test_surface();
    sl_lua_thread_cleanup();
    return tap_done();
}
