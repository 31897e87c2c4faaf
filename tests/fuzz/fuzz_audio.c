/* SPDX-License-Identifier: MIT
 * fuzz_audio.c: shale.audio (lua/audio.c) on libsndfile and libsamplerate,
 * through the sandbox as a script uses it. Input: the bytes of a sound
 * file (any format libsndfile guesses), passed as the string argument of
 * a fixed script that decodes it, then mixes, resamples, fits, makes
 * tensors and encodes inside pcall, checking what each step returns.
 *
 * Invariants: the call returns 0 (every error is a clean Lua error, caught
 * and checked: a decode refusal names shale.audio.decode) or fails with
 * the memory cap or the deadline; never a crash, a leak (libsndfile and
 * libsamplerate run in the calling thread, their memory is freed by the
 * call) or a script error, which would mean a step broke its contract.
 */
#include "fuzz_node.h"
#include "sandbox.h"

static const char script[] =
    "local function must(c, what) if not c then error('INVARIANT ' .. what, 0) end end\n"
    "local function clean(e)\n"   /* what a step may fail with */
    "  must(type(e) == 'string', 'non-string error')\n"
    "  if e:find('INVARIANT', 1, true) then error(e, 0) end\n"
    "  must(e:find('shale.audio.', 1, true) or e:find('not enough memory', 1, true), 'unclean error: ' .. e)\n"
    "  return false end\n"
    "local function try(fn, ...) local ok, v = pcall(fn, ...) if ok then return v end return clean(v) end\n"
    "local function npy(t, el, n)\n"
    "  must(t:sub(1, 6) == '\\147NUMPY', 'npy magic')\n"
    "  local h = 10 + t:byte(9) + 256 * t:byte(10)\n"
    "  must(h % 64 == 0 and #t == h + el * n, 'npy length') end\n"
    "function f(data)\n"
    "  local a = try(shale.audio.decode, data)\n"
    "  if not a then return 'refused' end\n"
    "  must(a.channels >= 1 and a.rate >= 1 and a.frames >= 0 and a.duration >= 0, 'fields')\n"
    "  must(tostring(a):find('^audio '), 'tostring')\n"
    "  must(getmetatable(a) == 'locked', 'metatable')\n"
    "  try(function()\n"
    "    local s = a:slice(0, 24000)\n"
    "    must(s.frames == math.min(a.frames, 24000) and s.channels == a.channels, 'slice')\n"
    "    local m = s:mono()\n"
    "    must(m.channels == 1 and m.frames == s.frames and m.rate == s.rate, 'mono')\n"
    "    if m.frames > 0 then must(type(m:sample(m.frames - 1)) == 'number', 'sample') end\n"
    "    local r = try(m.resample, m, 16000, 'linear') or m\n"
    "    if r ~= m then\n"
    "      must(r.rate == 16000 and r.frames == math.floor(m.frames * 16000 / m.rate + 0.5), 'resample frames')\n"
    "    end\n"
    "    try(s.resample, s, 8000, 'fast')\n"
    "    local fit = r:fit(4000, 'center')\n"
    "    must(fit.frames == 4000 and fit:fit(100).frames == 100, 'fit')\n"
    "    npy(fit:tensor{dtype = 'int16'}, 2, 4000)\n"
    "    npy(s:gain(-6):tensor{layout = 'TC'}, 4, s.frames * s.channels)\n"
    "    local w = s:slice(0, 4000):encode('wav', {subtype = 'float'})\n"
    "    local back = shale.audio.decode(w)\n"
    "    must(back.frames == math.min(s.frames, 4000) and back.channels == s.channels, 'wav round trip')\n"
    "    local fl = try(fit.encode, fit, 'flac')\n"
    "    if fl then must(shale.audio.decode(fl).frames == 4000, 'flac round trip') end\n"
    "    try(fit.encode, fit, 'ogg', {quality = 0.1})\n"
    "    a:release()\n"
    "    must(not pcall(a.mono, a), 'released')\n"
    "  end)\n"
    "  return 'ok' end\n";

static struct sl_lua_limits lim;

void fuzz_init(void)
{
    sl_lua_limits_default(&lim);
    lim.timeout_ns = 3LL * 1000000000LL;
    lim.mem_limit = 48u << 20;
}

void fuzz_one(const uint8_t *data, size_t size)
{
    struct sl_lua_val arg = sl_lua_str_ref(data, size), r = { 0 };
    struct sl_err err = { 0 };
    int rc = sl_lua_call("fuzz_audio", script, sizeof(script) - 1, "f", &arg, 1, &lim, NULL, NULL, &r, &err);
    if (rc == 0) {
        FZ_CHECK(r.type == SL_LUA_STR && (!strcmp(r.s.p, "ok") || !strcmp(r.s.p, "refused")));
    } else {
        if (err.code != SL_ETIMEOUT && err.code != SL_ETOOBIG)
            fprintf(stderr, "fuzz_audio: %s\n", err.msg);
        FZ_CHECK(err.code == SL_ETIMEOUT || err.code == SL_ETOOBIG);
        FZ_CHECK(err.msg[0]);
    }
    sl_lua_val_free(&r);
    /* a fresh Lua state for every input: what one input allocates is all
     * freed before the next, so libFuzzer's leak check stays armed */
    sl_lua_thread_cleanup();
}
