/* SPDX-License-Identifier: MIT
 * test_lua_audio.c: shale.audio (lua/audio.c): decoding WAV bytes built in
 * Lua, fields and sample values, mono, resampling (length, amplitude of a
 * sine), slice/fit/gain, .npy tensors, encode -> decode round trips (WAV,
 * FLAC, Ogg Vorbis), the memory cap (headers announcing more than it, the
 * garbage-collect-and-retry path), the deadline, and the sandbox's rules
 * (locked metatable, read-only table, bad self, released objects). Each
 * check evaluates one Lua expression after a prelude of helpers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox.h"
#include "tap.h"

/* Helpers every expression sees: le(n, k) little-endian bytes; wav(rate,
 * ch, samples [, datalen]) a PCM16 WAV of interleaved int16 samples
 * (datalen: what the header announces); sine(n, hz, rate, amp) int16s;
 * stereo(l, r) interleaved; peak(a, i, j) max |sample| over frames i..j;
 * W a 1 s 440 Hz mono sine at 16 kHz, amplitude 0.5, decoded. */
#define PRELUDE                                                                                                     \
    "local A = shale.audio\n"                                                                                       \
    "local function le(n, k) local t = {} for i = 1, k do t[i] = string.char(n % 256) n = math.floor(n / 256) end\n" \
    "  return table.concat(t) end\n"                                                                                \
    "local function wav(rate, ch, s, dlen)\n"                                                                       \
    "  local t = {} for i = 1, #s do local v = s[i] if v < 0 then v = v + 65536 end t[i] = le(v, 2) end\n"          \
    "  local d = table.concat(t) dlen = dlen or #d\n"                                                               \
    "  return 'RIFF' .. le(36 + dlen, 4) .. 'WAVEfmt ' .. le(16, 4) .. le(1, 2) .. le(ch, 2) .. le(rate, 4)\n"       \
    "    .. le(rate * ch * 2, 4) .. le(ch * 2, 2) .. le(16, 2) .. 'data' .. le(dlen, 4) .. d end\n"                    \
    "local function sine(n, hz, rate, amp) local s = {}\n"                                                          \
    "  for i = 1, n do s[i] = math.floor(amp * 32767 * math.sin(2 * math.pi * hz * (i - 1) / rate) + 0.5) end\n"    \
    "  return s end\n"                                                                                              \
    "local function stereo(l, r) local s = {} for i = 1, #l do s[2 * i - 1] = l[i] s[2 * i] = r[i] end return s end\n" \
    "local function peak(a, i, j, c) local m = 0\n"                                                                 \
    "  for k = i, j do local v = math.abs(a:sample(k, c)) if v > m then m = v end end return m end\n"              \
    "local S = sine(16000, 440, 16000, 0.5)\n"                                                                      \
    "local W = A.decode(wav(16000, 1, S))\n"

#define LUA_EVAL_PRELUDE PRELUDE
#define LUA_EVAL_NAME "audio"
#include "lua_eval.h"

static void test_decode(void)
{
    EVAL_EQ("W.rate .. ' ' .. W.channels .. ' ' .. W.frames .. ' ' .. W.duration", "16000 1 16000 1");
    EVAL_EQ("tostring(W)", "audio 16000 Hz x 1 ch x 16000 frames");
    EVAL_TRUE("W:sample(0) == 0 and W:sample(9) == S[10] / 32768 and W:sample(15999) == S[16000] / 32768");
    EVAL_TRUE("A.decode(wav(8000, 1, {-32768, 32767, 1, -1})):sample(0) == -1");
    EVAL_TRUE("A.decode(wav(8000, 1, {-32768, 32767, 1, -1})):sample(1) == 32767 / 32768");
    EVAL_EQ("A.decode(wav(22050, 1, {})).frames", "0");
    EVAL_EQ("A.decode(wav(44100, 2, {1, 2, 3, 4, 5, 6})).frames", "3");
    EVAL_TRUE("(function() local a = A.decode(wav(44100, 2, {100, 200, 300, -400}))\n"
              "  return a.channels == 2 and a:sample(1, 0) == 300 / 32768 and a:sample(1, 1) == -400 / 32768 end)()");
    EVAL_EQ("string.format('%.3f', A.decode(wav(8000, 2, sine(4000, 100, 8000, 0.1))).duration)", "0.250");
}

static void test_mono(void)
{
    static const char *st = "local l, r = sine(1000, 300, 8000, 0.5), sine(1000, 700, 8000, 0.25)\n"
                            "local a = A.decode(wav(8000, 2, stereo(l, r)))\n";
    char e[1024];
    snprintf(e, sizeof(e),
             "(function() %s local m = a:mono() if m.channels ~= 1 or m.frames ~= 1000 then return 'shape' end\n"
             "  for i = 0, 999 do if math.abs(m:sample(i) - (l[i + 1] + r[i + 1]) / 65536) > 1e-7 then\n"
             "    return 'at ' .. i end end return true end)()",
             st);
    EVAL_TRUE(e);
    snprintf(e, sizeof(e),
             "(function() %s local m, d = a:mono(), A.decode(wav(8000, 2, stereo(l, r)), {mono = true})\n"
             "  if d.channels ~= 1 or d.frames ~= 1000 then return 'shape' end\n"
             "  for i = 0, 999 do if m:sample(i) ~= d:sample(i) then return 'at ' .. i end end return true end)()",
             st);
    EVAL_TRUE(e);
    EVAL_TRUE("W:mono():sample(100) == W:sample(100)");
    EVAL_TRUE("(function() local t = {} for i = 1, 16 * 300 do t[i] = (i % 16) * 1000 end\n"
              "  local a, m = A.decode(wav(8000, 16, t)), A.decode(wav(8000, 16, t), {mono = true})\n"
              "  return a.channels == 16 and a:sample(299, 15) == 0 and m.channels == 1 and m.frames == 300\n"
              "    and m:sample(7) == a:mono():sample(7) and math.abs(m:sample(7) - 7500 / 32768) < 1e-6 end)()");
    EVAL_TRUE("A.mono(W).frames == 16000");   /* the methods are also functions of shale.audio */
}

static void test_resample(void)
{
    EVAL_EQ("W:resample(8000).frames", "8000");
    EVAL_EQ("W:resample(8000).rate", "8000");
    EVAL_EQ("W:resample(22050).frames", "22050");
    EVAL_EQ("W:resample(44100, 'fast').frames", "44100");
    EVAL_EQ("A.decode(wav(16000, 1, sine(1001, 440, 16000, 0.5))):resample(8000, 'linear').frames", "501");
    EVAL_EQ("W:slice(0, 3):resample(48000, 'zoh').frames", "9");
    EVAL_EQ("W:resample(16000).frames", "16000");
    /* 440 Hz keeps its amplitude (0.5) within 5%, away from the filter's edges */
    EVAL_TRUE("(function() for _, q in ipairs({'best', 'medium', 'fast', 'linear'}) do\n"
              "  local p = peak(W:resample(8000, q), 1000, 7000) if math.abs(p - 0.5) > 0.025 then return q .. ' ' .. p end\n"
              "  end return true end)()");
    EVAL_TRUE("(function() local p = peak(W:resample(44100), 3000, 40000) return math.abs(p - 0.5) < 0.025 end)()");
    /* the same sine resampled is the sine at the new rate */
    EVAL_TRUE("(function() local r = W:resample(8000, 'best')\n"
              "  for i = 1000, 7000 do if math.abs(r:sample(i) - 0.5 * math.sin(2 * math.pi * 440 * i / 8000)) > 0.01\n"
              "  then return i end end return true end)()");
    EVAL_TRUE("A.decode(wav(44100, 2, stereo(sine(4410, 440, 44100, .5), sine(4410, 440, 44100, .5)))):resample(16000)"
              ".channels == 2");
    EVAL_ERR("W:resample(0)", "rate must be an integer in 1..384000");
    EVAL_ERR("W:resample(384001)", "rate must be an integer in 1..384000");
    EVAL_ERR("W:resample(8000.5)", "rate must be an integer");
    EVAL_ERR("W:resample(10)", "ratio beyond libsamplerate's 1/256..256");
    EVAL_ERR("W:resample(8000, 'great')", "invalid option 'great'");
    EVAL_ERR("W:resample()", "bad argument #1 to 'resample'");
}

static void test_edit(void)
{
    EVAL_EQ("W:slice(100, 50).frames", "50");
    EVAL_TRUE("W:slice(100, 50):sample(0) == W:sample(100) and W:slice(100, 50):sample(49) == W:sample(149)");
    EVAL_EQ("W:slice(15990, 100).frames", "10");
    EVAL_EQ("W:slice(20000, 100).frames", "0");
    EVAL_ERR("W:slice(-1, 10)", "first must be an integer >= 0");
    EVAL_ERR("W:slice(0, -10)", "count must be an integer >= 0");
    EVAL_EQ("W:fit(20000).frames", "20000");
    EVAL_TRUE("(function() local f = W:fit(20000)\n"
              "  for i = 16000, 19999, 7 do if f:sample(i) ~= 0 then return i end end\n"
              "  return f:sample(15999) == W:sample(15999) and f:sample(1234) == W:sample(1234) end)()");
    EVAL_TRUE("W:fit(100).frames == 100 and W:fit(100):sample(99) == W:sample(99)");
    EVAL_TRUE("(function() local f = W:fit(16010, 'center')\n"
              "  return f:sample(4) == 0 and f:sample(5) == W:sample(0) and f:sample(16004) == W:sample(15999)\n"
              "    and f:sample(16005) == 0 end)()");
    EVAL_TRUE("W:fit(10, 'center'):sample(0) == W:sample(7995)");
    EVAL_EQ("W:fit(0).frames", "0");
    EVAL_ERR("W:fit(-1)", "n must be an integer >= 0");
    EVAL_ERR("W:fit(10, 'left')", "invalid option 'left'");
    EVAL_TRUE("math.abs(W:gain(20):sample(9) - 10 * W:sample(9)) < 1e-6");
    EVAL_TRUE("math.abs(W:gain(-6.0206):sample(9) - W:sample(9) / 2) < 1e-5");
    EVAL_TRUE("W:gain(40):sample(4) > 1");   /* no clipping in float */
    EVAL_ERR("W:gain(1/0)", "gain (dB) must be finite");
    EVAL_ERR("W:gain(1e6)", "gain (dB) must be finite");
    EVAL_ERR("W:sample(16000)", "frame 16000 is out of range (16000 frames)");
    EVAL_ERR("W:sample(0, 1)", "channel 1 is out of range (1 channels)");
}

static void test_tensor(void)
{
    EVAL_TRUE("W:tensor():sub(1, 8) == '\\147NUMPY\\1\\0'");
    EVAL_TRUE("W:tensor():find(\"'descr': '<f4'\", 1, true) ~= nil");
    EVAL_TRUE("W:tensor():find(\"'shape': %(1, 16000,?%)\") ~= nil");
    EVAL_EQ("#W:tensor()", "64128");   /* a 128-byte header, 16000 x 4 bytes */
    EVAL_TRUE("W:tensor{layout = 'TC'}:find(\"'shape': %(16000, 1,?%)\") ~= nil");
    EVAL_TRUE("W:tensor{dtype = 'int16'}:find(\"'descr': '<i2'\", 1, true) ~= nil");
    EVAL_EQ("#W:tensor{dtype = 'int16'}", "32128");
    /* values: header length from the file, then little-endian data */
    EVAL_TRUE("(function() local t = W:tensor{dtype = 'int16'} local h = 10 + t:byte(9) + 256 * t:byte(10)\n"
              "  local function i16(k) local v = t:byte(h + 2 * k + 1) + 256 * t:byte(h + 2 * k + 2)\n"
              "    return v >= 32768 and v - 65536 or v end\n"
              "  for k = 0, 15999, 97 do local v = W:sample(k) * 32767 local want = math.floor(v + 0.5)\n"
              "    if want - v == 0.5 and want % 2 == 1 then want = want - 1 end\n"
              "    if math.abs(i16(k) - want) > 0 then return k end end return h == 128 end)()");
    EVAL_TRUE("(function() local t = A.decode(wav(8000, 2, {16384, -16384, 0, 32767})):tensor{dtype = 'int16'}\n"
              "  return t:find(\"'shape': %(2, 2,?%)\") ~= nil and t:sub(129) == '\\0\\64\\0\\0\\0\\192\\254\\127' end)()");
    EVAL_TRUE("(function() local t = A.decode(wav(8000, 2, {16384, -16384, 0, 32767})):tensor{dtype = 'int16', "
              "layout = 'TC'}\n"
              "  return t:find(\"'shape': %(2, 2,?%)\") ~= nil and t:sub(129) == '\\0\\64\\0\\192\\0\\0\\254\\127' end)()");
    EVAL_TRUE("A.decode(wav(8000, 2, {16384, -16384})):tensor():sub(129) == '\\0\\0\\0\\63\\0\\0\\0\\191'");
    EVAL_TRUE("W:gain(40):tensor{dtype = 'int16'}:sub(129 + 2 * 4, 130 + 2 * 4) == '\\255\\127'");   /* clipped */
    EVAL_TRUE("W:fit(0):tensor():find(\"'shape': %(1, 0,?%)\") ~= nil");
    EVAL_ERR("W:tensor{dtype = 'float64'}", "dtype must be one of 'float32', 'int16' (got float64)");
    EVAL_ERR("W:tensor{layout = 3}", "layout must be one of 'CT', 'TC' (got number)");
    EVAL_ERR("W:tensor('CT')", "bad argument #1 to 'tensor' (table expected, got string)");
}

static void test_encode(void)
{
    EVAL_TRUE("W:encode('wav'):sub(1, 4) == 'RIFF' and W:encode('flac'):sub(1, 4) == 'fLaC' and "
              "W:encode('ogg'):sub(1, 4) == 'OggS'");
    /* PCM16 (WAV, FLAC) round trips are exact for PCM16 input */
    EVAL_TRUE("A.encode(W, 'wav') == wav(16000, 1, S)");
    EVAL_TRUE("(function() local d = A.decode(W:encode('flac'))\n"
              "  if d.frames ~= 16000 or d.rate ~= 16000 or d.channels ~= 1 then return tostring(d) end\n"
              "  for i = 0, 15999 do if math.abs(d:sample(i) - W:sample(i)) > 1 / 32767 then return i end end\n"
              "  return true end)()");
    EVAL_TRUE("(function() local w = A.decode(wav(8000, 2, stereo(sine(800, 100, 8000, 0.9), sine(800, 50, 8000, -0.9))))\n"
              "  local d = A.decode(w:encode('flac')) if d.channels ~= 2 then return 'ch' end\n"
              "  for i = 0, 799 do for c = 0, 1 do if d:sample(i, c) ~= w:sample(i, c) then return i end end end\n"
              "  return true end)()");
    EVAL_TRUE("(function() local g = W:gain(-3) local d = A.decode(g:encode('wav', {subtype = 'float'}))\n"
              "  for i = 0, 15999, 13 do if d:sample(i) ~= g:sample(i) then return i end end return true end)()");
    EVAL_TRUE("(function() local d = A.decode(W:gain(20):encode('wav'))\n"   /* clipped, not wrapped */
              "  return d:sample(4) == 32767 / 32768 and d:sample(20) == -1 end)()");
    EVAL_TRUE("(function() local d = A.decode(W:encode('ogg'))\n"
              "  return d.rate == 16000 and d.channels == 1 and math.abs(d.frames - 16000) <= 2048 end)()");
    EVAL_TRUE("(function() local d = A.decode(W:encode('ogg', {quality = 0.9}))\n"
              "  return math.abs(peak(d, 2000, 14000) - 0.5) < 0.05 end)()");
    EVAL_TRUE("#W:encode('ogg', {quality = 0}) < #W:encode('ogg', {quality = 1})");
    EVAL_EQ("A.decode(W:resample(44100):encode('flac')).frames", "44100");
    EVAL_EQ("A.decode(W:fit(0):encode('wav')).frames", "0");
    EVAL_TRUE("#A.decode(wav(8000, 2, {1, 2})):encode('ogg') > 0");
    EVAL_ERR("W:encode('mp3')", "invalid option 'mp3'");
    EVAL_ERR("W:encode('wav', {subtype = 'pcm8'})", "subtype must be one of 'pcm16', 'float' (got pcm8)");
    EVAL_ERR("W:encode('flac', {subtype = 'float'})", "subtype must be one of 'pcm16'");
    EVAL_ERR("W:encode('ogg', {quality = 2})", "quality must be a number in 0..1");
    EVAL_ERR("A.decode(wav(8000, 9, {1, 2, 3, 4, 5, 6, 7, 8, 9})):encode('flac')",
             "shale.audio.encode: libsndfile cannot write flac with 9 channels at 8000 Hz");
}

static void test_errors(void)
{
    EVAL_ERR("A.decode('')", "shale.audio.decode: empty input (0 bytes)");
    EVAL_ERR("A.decode('garbage')", "shale.audio.decode: not a sound file libsndfile can read (Format not recognised): "
                                    "WAV, FLAC, OGG/Vorbis, AIFF are supported");
    EVAL_ERR("A.decode(string.rep('\\0', 5000))", "shale.audio.decode: not a sound file");
    EVAL_ERR("A.decode(wav(16000, 1, S):sub(1, 30))", "shale.audio.decode:");
    EVAL_ERR("A.decode()", "bad argument #1 to 'decode' (string expected, got no value)");
    EVAL_ERR("A.decode('x', 1)", "bad argument #2 to 'decode' (table expected, got number)");
    /* a header announcing 2^31 frames over 16 bytes of data: a short read or an error, no 8 GiB buffer */
    {
        const char *got = eval("(function() local ok, a = pcall(A.decode, wav(16000, 1, {1, 2, 3, 4, 5, 6, 7, 8}, "
                               "2^32 - 2))\n  return ok and a.frames or a end)()");
        TAP_OK(strcmp(got, "8") == 0 || strstr(got, "shale.audio.decode:"), "WAV announcing 2^31 frames: %s", got);
    }
    /* truncated data: an error naming what is missing; lenient keeps what is there */
    EVAL_ERR("A.decode(wav(16000, 1, S):sub(1, 44 + 2000))", "the header announces more sample data than the input "
             "holds (libsndfile: \"data : 32000 (should be 2000)\"");
    EVAL_EQ("A.decode(wav(16000, 1, S):sub(1, 44 + 2000), {lenient = true}).frames", "1000");
    EVAL_ERR("A.decode(wav(16000, 1, S), {rate = 8000})", "unknown option \"rate\" (options: mono, lenient)");
    EVAL_ERR("A.decode(wav(16000, 1, S)):encode('wav', {quality = 0.5})", "unknown option \"quality\"");
    EVAL_ERR("A.decode(wav(16000, 1, S)):tensor{dtpye = 'int16'}", "unknown option \"dtpye\"");
    /* FLAC announcing 2^36 - 1 frames (STREAMINFO's total samples): refused before any allocation */
    EVAL_ERR("(function() local f = W:encode('flac')\n"
             "  local b = f:byte(22) - f:byte(22) % 16 + 15\n"
             "  return A.decode(f:sub(1, 21) .. string.char(b) .. '\\255\\255\\255\\255' .. f:sub(27)) end)()",
             "shale.audio.decode: the audio announces 68719476735 frames x 1 channels (256.00 GiB of samples), more "
             "than the call's memory limit allows");
    EVAL_ERR("(function() local f = W:encode('flac')\n"
             "  local b = f:byte(22) - f:byte(22) % 16 + 15\n"
             "  return A.decode(f:sub(1, 21) .. string.char(b) .. '\\255\\255\\255\\255' .. f:sub(27), {mono = true}) end)()",
             "x 1 channels (256.00 GiB of samples)");
    /* a FLAC cut short */
    {
        const char *got = eval("(function() local ok, a = pcall(A.decode, W:encode('flac'):sub(1, 3000))\n"
                               "  return ok and a.frames or a end)()");
        TAP_OK(atoi(got) > 0 && atoi(got) < 16000 ? 1 : strstr(got, "shale.audio.decode:") != NULL,
               "truncated FLAC: %s", got);
    }
    /* Ogg Vorbis cut inside its headers (libsndfile would leak libvorbis' setup), or after them */
    EVAL_ERR("A.decode(W:encode('ogg'):sub(1, 200))", "shale.audio.decode: corrupt or truncated Ogg Vorbis headers");
    EVAL_ERR("(function() local o = W:encode('ogg') return A.decode(o:sub(1, 60) .. o:sub(62)) end)()",
             "corrupt or truncated Ogg Vorbis headers");
    /* (libsndfile 1.2 reads nothing from an Ogg without its last page: an error, not an empty audio) */
    EVAL_ERR("(function() local o = W:encode('ogg') return A.decode(o:sub(1, #o - 700)) end)()",
             "shale.audio.decode: corrupt or truncated data: no frame could be read from a stream of unknown length");
    EVAL_TRUE("(function() local o = W:encode('ogg') return A.decode(o .. o).frames >= 16000 end)()");   /* chained */
    /* flipped bytes everywhere: errors or audio, never a crash */
    EVAL_TRUE("(function() local n = 0\n"
              "  for _, f in ipairs({W:encode('wav'), W:encode('flac'), W:encode('ogg')}) do\n"
              "    for k = 1, #f, 37 do local b = f:sub(1, k - 1) .. string.char((f:byte(k) + 77) % 256) .. f:sub(k + 1)\n"
              "      local ok, a = pcall(A.decode, b) if ok then n = n + a.frames\n"
              "      elseif not a:find('shale.audio.decode: ', 1, true) then return a end end end\n"
              "  return true end)()");
}

static void test_sandbox(void)
{
    EVAL_EQ("getmetatable(W)", "locked");
    EVAL_EQ("getmetatable(shale.audio)", "locked");
    EVAL_ERR("(function() shale.audio.decode = nil end)()", "read-only");
    EVAL_ERR("shale.audio.mono('x')", "bad argument #1 to 'mono' (shale.audio expected, got string)");
    EVAL_ERR("W.mono('x')", "bad argument #1 to 'mono' (shale.audio expected, got string)");
    EVAL_ERR("W.tensor({})", "shale.audio expected, got table");
    EVAL_ERR("W.encode(nil)", "shale.audio expected, got nil");
    EVAL_ERR("A.release(1)", "shale.audio expected, got number");
    EVAL_ERR("setmetatable(W, {})", "table expected");
    EVAL_ERR("(function() W.rate = 1 end)()", "attempt to index");
    EVAL_EQ("tostring(W.nothing) .. tostring(W[1])", "nilnil");
    EVAL_ERR("(function() local a = W:slice(0, 10) a:release() return a:mono() end)()",
             "shale.audio.mono: the audio was released");
    EVAL_ERR("(function() local a = W:slice(0, 10) a:release() a:release() return a:sample(0) end)()",
             "shale.audio.sample: the audio was released");
    EVAL_EQ("(function() local a = W:slice(0, 10) a:release() return tostring(a) end)()",
            "audio 16000 Hz x 1 ch x 10 frames (released)");
    EVAL_ERR("(function() local t = W:tensor() W:release() return W:encode('wav') end)()", "was released");
}

static void test_limits(void)
{
    struct sl_lua_limits lim;
    const char *got;

    /* 40 x 4 MB of garbage objects (2.5 x the cap) under a 64 MiB cap: collected when a charge fails (40, not
     * 200: the script's 5 s wall-time limit must hold on a loaded machine) */
    EVAL_EQ("(function() local n = 0 for i = 1, 40 do n = n + W:fit(1000000).frames end return n end)()",
            "40000000");
    /* ...but live ones count */
    EVAL_ERR("(function() local t = {} for i = 1, 20 do t[i] = W:fit(1000000) end end)()", "memory limit");
    EVAL_ERR("W:fit(1e9)", "memory limit");
    EVAL_ERR("W:fit(2^53)", "memory limit");
    EVAL_ERR("W:mono():fit(2^40)", "memory limit");
    /* libsamplerate's own buffers count: 448 KiB a channel for "best" */
    EVAL_ERR("(function() local t = {} for i = 1, 200 * 10 do t[i] = i end\n"
             "  return A.decode(wav(8000, 200, t)):resample(16000, 'best') end)()",
             "shale.audio.resample: not enough memory for libsamplerate's state (memory limit)");
    EVAL_EQ("(function() local t = {} for i = 1, 200 * 10 do t[i] = i end\n"
            "  return A.decode(wav(8000, 200, t)):resample(16000, 'linear').frames end)()", "20");
    EVAL_EQ("(function() local t = {} for i = 1, 20 do t[i] = W:fit(1000000) t[i]:release() end return #t end)()",
            "20");

    /* a small cap: decoding, resampling and encoding fail cleanly */
    sl_lua_limits_default(&lim);
    lim.mem_limit = 3u << 20;
    got = eval_lim("(function() local a = A.decode(wav(16000, 1, S)):fit(400000) return a:resample(48000) end)()",
                   &lim);
    TAP_OK(strstr(got, "ERR: ") && strstr(got, "memory limit") && last_err.code == SL_ETOOBIG, "small cap: %s", got);
    got = eval_lim("(function() local a = A.decode(wav(16000, 1, S)):fit(300000) return #a:encode('wav') end)()",
                   &lim);
    TAP_OK(strstr(got, "ERR: ") && strstr(got, "memory limit") && last_err.code == SL_ETOOBIG, "small cap: %s", got);
    got = eval_lim("(function() local a = A.decode(wav(16000, 1, S)):fit(1000000) return 1 end)()", &lim);
    TAP_OK(strstr(got, "ERR: ") && strstr(got, "memory limit") && last_err.code == SL_ETOOBIG, "small cap: %s", got);
    got = eval_lim("#A.decode(wav(16000, 1, S)):fit(100000):encode('flac')", &lim);
    TAP_OK(atoi(got) > 0, "small cap, within it: %s", got);

    /* the deadline stops a long resampling */
    sl_lua_limits_default(&lim);
    lim.timeout_ns = 200 * 1000000LL;
    got = eval_lim("W:fit(16000 * 120):resample(44100, 'best').frames", &lim);
    TAP_OK(strstr(got, "timed out") && last_err.code == SL_ETIMEOUT, "resample past the deadline: %s", got);
    got = eval_lim("(function() local ok, e = pcall(function() return W:fit(16000 * 120):resample(44100, 'best') end)\n"
                   "  return 'caught ' .. tostring(e) end)()",
                   &lim);
    TAP_OK(strstr(got, "timed out") && last_err.code == SL_ETIMEOUT, "pcall cannot catch the timeout: %s", got);
    /* the state is usable afterwards */
    EVAL_EQ("W:resample(8000).frames", "8000");
}

int main(void)
{
    test_decode();
    test_mono();
    test_resample();
    test_edit();
    test_tensor();
    test_encode();
    test_errors();
    test_sandbox();
    test_limits();
    sl_lua_thread_cleanup();
    return tap_done();
}
