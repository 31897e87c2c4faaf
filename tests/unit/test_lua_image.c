/* SPDX-License-Identifier: MIT
 * test_lua_image.c: shale.image (lua/image*.c) in the sandbox: round trips
 * through every encoder and decoder, the geometry against hand-computed
 * pixels (a flip that does nothing, a transposed rotation or swapped
 * channels fail), torchvision's size rules (Resize(n), CenterCrop), the
 * tensor's .npy bytes, seeded augmentation, and refusals: pixel bombs,
 * corrupt and truncated data, unknown options, a locked metatable.
 * Each check evaluates one Lua expression in the sandbox.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox.h"
#include "tap.h"

#include "lua_eval.h"

static void test_codecs(void)
{
    /* PNG is lossless: a gradient survives encode/decode exactly */
    EVAL_TRUE("(function() local im = shale.image.new(64, 32, 3, {10, 20, 30}) "
              "local b = im:encode('png') local d = shale.image.decode(b) "
              "local r, g, bb = d:get(5, 7) return d.width == 64 and d.height == 32 and d.bands == 3 "
              "and r == 10 and g == 20 and bb == 30 and d.format == 'png' end)()");
    EVAL_TRUE("(function() local im = shale.image.new(8, 8, 1, 77) local d = shale.image.decode(im:encode('png'), "
              "{grey = true}) return d.bands == 1 and d:get(3, 3) == 77 end)()");
    /* grey PNG decodes to 3 equal bands by default (torchvision's convert('RGB')) */
    EVAL_TRUE("(function() local d = shale.image.decode(shale.image.new(8, 8, 1, 77):encode('png')) "
              "local r, g, b = d:get(0, 0) return d.bands == 3 and r == 77 and g == 77 and b == 77 end)()");
    /* alpha: dropped unless asked for */
    EVAL_TRUE("(function() local b = shale.image.new(4, 4, 4, {1, 2, 3, 128}):encode('png') "
              "local a = shale.image.decode(b) local k = shale.image.decode(b, {alpha = true}) "
              "local _, _, _, al = k:get(1, 1) return a.bands == 3 and k.bands == 4 and al == 128 end)()");
    /* JPEG is lossy: a flat colour comes back within a few levels */
    EVAL_TRUE("(function() local d = shale.image.decode(shale.image.new(32, 16, 3, {200, 100, 50}):encode('jpeg', "
              "{quality = 95})) local r, g, b = d:get(10, 10) return d.format == 'jpeg' and d.width == 32 and "
              "math.abs(r - 200) <= 3 and math.abs(g - 100) <= 3 and math.abs(b - 50) <= 3 end)()");
    EVAL_TRUE("(function() local d = shale.image.decode(shale.image.new(16, 16, 3, {9, 99, 199}):encode('webp', "
              "{lossless = true})) local r, g, b = d:get(4, 4) return d.format == 'webp' and r == 9 and g == 99 "
              "and b == 199 end)()");
    EVAL_TRUE("(function() local d = shale.image.decode(shale.image.new(16, 16):encode('webp', {quality = 50})) "
              "return d.width == 16 end)()");
    EVAL_EQ("shale.image.info(shale.image.new(33, 17):encode('jpeg')).format", "jpeg");
    EVAL_EQ("shale.image.info(shale.image.new(33, 17):encode('jpeg')).width", "33");
    EVAL_EQ("tostring(shale.image.new(5, 6, 1))", "image 5x6 x1");
}

static void test_geometry(void)
{
    /* build the card by padding single pixels: pad(l, t, r, b) with a fill */
    EVAL_TRUE("(function() local p = shale.image.new(1, 1, 1, 9):pad(1, 0, 0, 0, {fill = 5}) "
              "return p.width == 2 and p.height == 1 and p:get(0, 0) == 5 and p:get(1, 0) == 9 end)()");
    /* hflip moves the bright pixel from the right edge to the left */
    EVAL_TRUE("(function() local p = shale.image.new(1, 1, 1, 9):pad(2, 0, 0, 0, {fill = 0}) local f = p:hflip() "
              "return p:get(2, 0) == 9 and f:get(0, 0) == 9 and f:get(2, 0) == 0 end)()");
    EVAL_TRUE("(function() local p = shale.image.new(1, 1, 1, 9):pad(0, 2, 0, 0) local f = p:vflip() "
              "return p:get(0, 2) == 9 and f:get(0, 0) == 9 end)()");
    /* rot90 is counter-clockwise: top-right goes to top-left; a transpose
     * or a clockwise turn would put it elsewhere */
    EVAL_TRUE("(function() local p = shale.image.new(1, 1, 1, 9):pad(2, 0, 0, 1) "   /* 3 x 2, 9 at (2, 0) */
              "local r = p:rot90() local c = p:rot90(-1) "
              "return r.width == 2 and r.height == 3 and r:get(0, 0) == 9 and c:get(1, 2) == 9 end)()");
    EVAL_TRUE("(function() local p = shale.image.new(1, 1, 1, 9):pad(2, 0, 0, 1) local r = p:rot90(2) "
              "return r.width == 3 and r:get(0, 1) == 9 end)()");
    EVAL_TRUE("(function() local p = shale.image.new(1, 1, 1, 9):pad(1, 1, 3, 2) local c = p:crop(1, 1, 2, 2) "
              "return c.width == 2 and c:get(0, 0) == 9 and c:get(1, 1) == 0 end)()");
    EVAL_ERR("shale.image.new(4, 4):crop(2, 2, 3, 3)", "is not inside the 4 x 4 image");
    /* torchvision sizes: Resize(256) of 500 x 375 is 341 x 256; CenterCrop
     * of 341 rounds the offset half to even (58) */
    EVAL_TRUE("(function() local r = shale.image.new(500, 375):resize_short(256) "
              "return r.width == 341 and r.height == 256 end)()");
    EVAL_TRUE("(function() local r = shale.image.new(375, 500):resize_short(256) "
              "return r.width == 256 and r.height == 341 end)()");
    EVAL_TRUE("(function() local p = shale.image.new(1, 1, 1, 9):pad(58, 0, 282, 0) "  /* 341 wide, 9 at x = 58 */
              "local c = p:center_crop(224, 1) return c.width == 224 and c:get(0, 0) == 9 end)()");
    /* a larger crop pads with zeros */
    EVAL_TRUE("(function() local c = shale.image.new(2, 2, 1, 7):center_crop(4, 4) "
              "return c.width == 4 and c:get(0, 0) == 0 and c:get(1, 1) == 7 end)()");
    /* nearest keeps values exactly; bilinear of a flat image is flat */
    EVAL_TRUE("(function() local p = shale.image.new(1, 1, 1, 200):pad(0, 0, 1, 0, {fill = 3}) "
              "local r = p:resize(4, 1, 'nearest') return r:get(0, 0) == 200 and r:get(1, 0) == 200 and "
              "r:get(2, 0) == 3 and r:get(3, 0) == 3 end)()");
    EVAL_TRUE("(function() local r = shale.image.new(40, 30, 3, {50, 60, 70}):resize(17, 9) local a, b, c = "
              "r:get(8, 4) return r.width == 17 and r.height == 9 and a == 50 and b == 60 and c == 70 end)()");
    EVAL_TRUE("(function() for _, k in ipairs{'nearest', 'bilinear', 'bicubic', 'lanczos3', 'area'} do "
              "local r = shale.image.new(40, 30, 1, 80):resize(20, 15, k) if r:get(5, 5) ~= 80 then return k end "
              "end return true end)()");
    EVAL_ERR("shale.image.new(4, 4):resize(2, 2, 'sinc')", "unknown kernel \"sinc\"");
    EVAL_TRUE("(function() local r = shale.image.new(10, 20):scale(0.5) return r.width == 5 and r.height == 10 "
              "end)()");
}

static void test_colour(void)
{
    EVAL_TRUE("(function() local g = shale.image.new(2, 2, 3, {255, 0, 0}):grey() "
              "return g.bands == 1 and g:get(0, 0) == 76 end)()");   /* PIL: 299/1000 * 255 */
    EVAL_TRUE("(function() local b = shale.image.new(2, 2, 3, {100, 50, 10}):brightness(1.5) local r, g, bb = "
              "b:get(0, 0) return r == 150 and g == 75 and bb == 15 end)()");
    EVAL_TRUE("(function() local c = shale.image.new(2, 2, 3, {100, 50, 10}):contrast(0) local r, g, b = "
              "c:get(0, 0) return r == g and g == b end)()");
    EVAL_TRUE("(function() local c = shale.image.new(2, 2, 3, {100, 50, 10}):saturation(0) local r, g, b = "
              "c:get(0, 0) return r == g and g == b and r == 60 end)()");
    EVAL_TRUE("(function() local c = shale.image.new(2, 2, 3, {100, 50, 10}):saturation(1) local r, g, b = "
              "c:get(0, 0) return r == 100 and g == 50 and b == 10 end)()");
    EVAL_ERR("shale.image.new(2, 2):brightness(-1)", "factor must be");
    EVAL_ERR("shale.image.new(2, 2):color_jitter{hue = 0.1}", "hue is not supported");
}

static void test_tensor(void)
{
    /* header: magic, version 1.0, descr, shape; data after a 64-byte boundary */
    EVAL_TRUE("(function() local t = shale.image.new(5, 4, 3, {255, 0, 51}):tensor() "
              "return t:sub(1, 8) == '\\147NUMPY\\1\\0' and t:find(\"'descr': '<f4'\", 1, true) ~= nil and "
              "t:find(\"'shape': (3, 4, 5)\", 1, true) ~= nil and (#t - 3 * 4 * 5 * 4) % 64 == 0 end)()");
    EVAL_TRUE("(function() local t = shale.image.new(5, 4, 3, {1, 2, 3}):tensor{dtype = 'uint8', layout = 'HWC'} "
              "local h = #t - 60 return t:find(\"'shape': (4, 5, 3)\", 1, true) ~= nil and t:byte(h + 1) == 1 and "
              "t:byte(h + 2) == 2 and t:byte(h + 3) == 3 end)()");
    /* CHW uint8: all of band 0 first */
    EVAL_TRUE("(function() local t = shale.image.new(5, 4, 3, {1, 2, 3}):tensor{dtype = 'uint8'} "
              "local h = #t - 60 return t:byte(h + 20) == 1 and t:byte(h + 21) == 2 end)()");
    EVAL_TRUE("(function() local t = shale.image.new(5, 4, 1, 7):tensor{dtype = 'uint8', layout = 'HW'} "
              "return t:find(\"'shape': (4, 5)\", 1, true) ~= nil and t:byte(#t) == 7 end)()");
    EVAL_ERR("shale.image.new(5, 4):tensor{layout = 'HW'}", "layout HW is for one-band images");
    EVAL_ERR("shale.image.decode('\\255\\216\\255 not really')", "-byte input)");
    EVAL_ERR("shale.image.new(2, 2):tensor{dtype = 'uint8', mean = {0.5, 0.5, 0.5}}", "apply to float32");
    EVAL_ERR("shale.image.new(2, 2):tensor{mean = {0.5, 0.5}}", "mean has 2 values");
    EVAL_ERR("shale.image.new(2, 2):tensor{std = 0}", "std must be > 0");
    EVAL_ERR("shale.image.new(2, 2):tensor{order = 'CHW'}", "unknown option \"order\"");
}

static void test_random(void)
{
    /* the same seed gives the same crop; math.randomseed changes it */
    EVAL_TRUE("(function() local function crop() local im = shale.image.new(1, 1, 1, 255):pad(20, 20, 20, 20) "
              "local r = im:random_resized_crop(8, 8, {scale = {0.1, 0.3}}) return r:tensor{dtype = 'uint8'} end "
              "math.randomseed(7) local a = crop() math.randomseed(7) local b = crop() "
              "local seen = false for s = 1, 20 do math.randomseed(s) if crop() ~= a then seen = true end end "
              "return a == b and seen end)()");
    EVAL_TRUE("(function() local r = shale.image.new(30, 20):random_resized_crop(7, 5) "
              "return r.width == 7 and r.height == 5 end)()");
    EVAL_TRUE("(function() local im = shale.image.new(1, 1, 1, 9):pad(0, 0, 1, 0) local n = 0 "
              "for i = 1, 200 do if im:random_hflip():get(0, 0) == 0 then n = n + 1 end end "
              "return n > 60 and n < 140 end)()");
    EVAL_TRUE("(function() local c = shale.image.new(9, 9):random_crop(4, 3) return c.width == 4 and c.height == 3 "
              "end)()");
    EVAL_TRUE("(function() local c = shale.image.new(9, 9, 3, {100, 50, 10}):color_jitter{brightness = 0.4, "
              "contrast = 0.4, saturation = 0.4} return c.width == 9 end)()");
}

static void test_refusals(void)
{
    EVAL_ERR("shale.image.decode('')", "the data is empty");
    EVAL_ERR("shale.image.decode('GIF8garbage')", "not an image");
    EVAL_ERR("shale.image.decode('hello world')", "not an image in a format shale.image reads");
    /* a truncated JPEG and PNG */
    EVAL_ERR("(function() local b = shale.image.new(64, 64, 3, {1, 2, 3}):encode('jpeg') "
             "return shale.image.decode(b:sub(1, 100)):get(0, 0) end)()", "JPEG");
    EVAL_ERR("(function() local b = (shale.image.new(64, 64, 3, {1, 2, 3}):pad(3, 3, 3, 3, {fill = 200}))"
             ":encode('jpeg') return shale.image.decode(b:sub(1, #b - 200)):get(0, 0) end)()",
             "corrupt or truncated JPEG");
    EVAL_TRUE("(function() local b = (shale.image.new(64, 64, 3, {1, 2, 3}):pad(3, 3, 3, 3, {fill = 200}))"
              ":encode('jpeg') return shale.image.decode(b:sub(1, #b - 200), {lenient = true}).width == 70 end)()");
    /* a warning that is not a truncation (stray bytes before the end marker) decodes, as in PIL */
    EVAL_TRUE("(function() local b = shale.image.new(16, 16, 3, {9, 9, 9}):encode('jpeg') "
              "local r = shale.image.decode(b:sub(1, #b - 2) .. 'xy' .. b:sub(#b - 1)):get(3, 3) "
              "return math.abs(r - 9) <= 2 end)()");
    EVAL_ERR("(function() local b = shale.image.new(64, 64):encode('png') "
             "return shale.image.decode(b:sub(1, #b - 20)) end)()", "PNG");
    /* a PNG header announcing 60000 x 60000 pixels: refused before decoding */
    EVAL_ERR("shale.image.decode('\\137\\80\\78\\71\\13\\10\\26\\10\\0\\0\\0\\13\\73\\72\\68\\82\\0\\0\\234\\96\\0\\0"
             "\\234\\96\\8\\2\\0\\0\\0\\15\\176\\226\\21\\0\\0\\0\\11\\73\\68\\65\\84\\120\\156\\99\\96\\64\\5\\0\\0\\16\\0\\1"
             "\\57\\189\\143\\101\\0\\0\\0\\0\\73\\69\\78\\68\\174\\66\\96\\130')",
             "the header announces 60000 x 60000 pixels");
    EVAL_ERR("shale.image.new(60000, 60000)", "more than the call's memory limit");
    EVAL_ERR("shale.image.decode(shale.image.new(2, 2):encode('png'), {gray = true})", "unknown option \"gray\"");
    EVAL_ERR("shale.image.new(2, 2):encode('bmp')", "unknown format \"bmp\"");
    EVAL_ERR("shale.image.new(2, 2):encode('png', {quality = 5})", "unknown option \"quality\"");
    EVAL_ERR("shale.image.new(2, 2).resize('x', 2, 2)", "expected an image");
    EVAL_ERR("shale.image.new(2, 2).resize({}, 2, 2)", "expected an image");
    EVAL_EQ("getmetatable(shale.image.new(2, 2))", "locked");
    EVAL_ERR("(function() local im = shale.image.new(2, 2) im.width = 3 end)()", "read-only");
    EVAL_ERR("(function() shale.image.decode = nil end)()", "read-only");
}

/* A call of image operations ends at its deadline (checked between
 * operations and rows), and images kept past the memory cap end it with a
 * memory error, not a crash; a later call in the same thread works. */
static void test_limits(void)
{
    struct sl_lua_limits lim;
    sl_lua_limits_default(&lim);
    lim.timeout_ns = 300 * 1000000LL;
    struct sl_err err = { 0 };
    struct sl_lua_val r = sl_lua_nil();
    const char *spin = "local im = shale.image.new(1500, 1500)\n"
                       "while true do im = im:resize(1499, 1501):rot90() end\n";
    int64_t t0 = sl_mono_ns();
    int rc = sl_lua_call("spin", spin, strlen(spin), NULL, NULL, 0, &lim, NULL, NULL, &r, &err);
    double s = (double)(sl_mono_ns() - t0) / 1e9;
    TAP_OK(rc != 0 && err.code == SL_ETIMEOUT, "a loop of resizes ends by its 300 ms deadline (%s)", err.msg);
    TAP_OK(s < 2.0, "... within 2 s (%.2f s)", s);
    sl_lua_limits_default(&lim);
    lim.mem_limit = 32u << 20;
    const char *hoard = "local t = {}\nfor i = 1, 1000 do t[i] = shale.image.new(1000, 1000) end\n";
    memset(&err, 0, sizeof(err));
    rc = sl_lua_call("hoard", hoard, strlen(hoard), NULL, NULL, 0, &lim, NULL, NULL, &r, &err);
    TAP_OK(rc != 0 && err.code == SL_ETOOBIG && strstr(err.msg, "memory limit"), "images past the cap: %s",
           err.msg);
    /* garbage images are collected before a refusal: 200 images of 3 MB one after another fit in 32 MiB */
    const char *churn = "for i = 1, 200 do local im = shale.image.new(1000, 1000) end return 'ok'\n";
    memset(&err, 0, sizeof(err));
    rc = sl_lua_call("churn", churn, strlen(churn), NULL, NULL, 0, &lim, NULL, NULL, &r, &err);
    TAP_OK(rc == 0, "200 short-lived 3 MB images in a 32 MiB call (%s)", rc ? err.msg : "ok");
    sl_lua_val_free(&r);
    EVAL_TRUE("shale.image.new(10, 10):resize(5, 5).width == 5");
}

int main(void)
{
    test_codecs();
    test_geometry();
    test_colour();
    test_tensor();
    test_random();
    test_refusals();
    test_limits();
    return tap_done();
}
