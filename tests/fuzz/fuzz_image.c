/* SPDX-License-Identifier: MIT
 * fuzz_image.c: shale.image's decoders (lua/image_codec.c) and the
 * operations after them, through the sandbox as a script calls them:
 * the input is an image file (JPEG, PNG, WebP, GIF or TIFF, or anything
 * else); the script decodes it (grey, alpha or lenient by the input's last
 * byte) and runs a resize, a crop, a rotation, a colour change, an encode
 * and a tensor, each under pcall. The call must end cleanly (a script
 * error would fail the check), or by its 16 MiB memory limit or its time
 * limit; the sanitizers catch the rest.
 */
#include "fuzz_node.h"
#include "sandbox.h"

static const char script[] =
    "function fuzz(data)\n"
    "local k = #data > 0 and data:byte(#data) or 0\n"
    "local opts = {grey = k % 2 == 1, alpha = k % 4 >= 2, lenient = k % 8 >= 4, shrink = k % 16 < 8}\n"
    "local ok, info = pcall(shale.image.info, data)\n"
    "local ok2, img = pcall(shale.image.decode, data, opts)\n"
    "if not ok2 then return 'refused' end\n"
    "local w, h = img.width, img.height\n"
    "pcall(function() return img:resize_short(17):center_crop(11, 9):tensor{} end)\n"
    "pcall(function() return img:resize(math.max(1, math.floor(w / 2)), 3, 'nearest'):rot90(k):hflip():get(0, 0) end)\n"
    "pcall(function() return img:random_resized_crop(8, 8):color_jitter{brightness = 0.5, contrast = 0.5, "
    "saturation = 0.5}:encode('png') end)\n"
    "pcall(function() return img:pad(1, 2, 3, 4):grey():encode('jpeg', {quality = 50}) end)\n"
    "return 'ok'\n"
    "end\n";

void fuzz_one(const uint8_t *data, size_t size)
{
    struct sl_lua_val arg = sl_lua_str_ref((const char *)data, size), res = sl_lua_nil();
    struct sl_lua_limits lim;
    sl_lua_limits_default(&lim);
    lim.mem_limit = 16u << 20;
    lim.timeout_ns = 2LL * 1000000000LL;
    struct sl_err err = { 0 };
    int rc = sl_lua_call("fuzz_image", script, sizeof(script) - 1, "fuzz", &arg, 1, &lim, NULL, NULL, &res, &err);
    /* everything is under pcall: only the call's own limits may end it */
    if (rc != 0 && err.code != SL_ETIMEOUT && err.code != SL_ETOOBIG)
        fprintf(stderr, "fuzz_image: %s\n", err.msg);
    FZ_CHECK(rc == 0 ? res.type == SL_LUA_STR : (err.code == SL_ETIMEOUT || err.code == SL_ETOOBIG));
    sl_lua_val_free(&res);
}
