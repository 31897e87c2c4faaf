/* SPDX-License-Identifier: MIT
 * image.c: shale.image, the Lua face of images (media.h; the C side is
 * image.h). An image is a userdata owning its planar pixels, charged to
 * the call's memory cap; __gc frees them, so an error between operations
 * leaks nothing. The metatable is locked and methods check their self.
 *
 * A JPEG is decoded lazily: decode() reads its header, and the first
 * operation decodes it, so that resize()/resize_short() can let TurboJPEG
 * scale the DCT by 1/2, 1/4 or 1/8 when the image is at least twice the
 * size asked for (shrink-on-load; the resampler still filters the rest).
 * The source string stays referenced from the userdata's environment until
 * then.
 *
 * The random operations draw from the call's generator (sl_lua_rand01), the
 * one math.random uses; the ETL seeds it from its seed, the sample's key
 * and the request's etl_args, so the same epoch gives the same crops.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "image.h"
#include "media.h"

#define MT "sl.lua.image"

struct limg {
    struct sl_img im;
    bool pending;              /* JPEG not decoded yet; its bytes: the env table's [1] */
    bool noshrink;             /* decode(..., {shrink = false}) */
    struct sl_img_info info;
    struct sl_img_dopts dopts;
};

/* ---- helpers ---- */

static struct limg *push_new(lua_State *L)
{
    struct limg *u = lua_newuserdata(L, sizeof(*u));
    memset(u, 0, sizeof(*u));
    u->im.S = sl_lua_S(L);
    u->im.L = L;
    luaL_getmetatable(L, MT);
    lua_setmetatable(L, -2);
    return u;
}

static int img_gc(lua_State *L)
{
    struct limg *u = lua_touserdata(L, 1);
    if (u)
        sl_img_free(&u->im);
    return 0;
}

/* Raise for a failed operation (after it has freed what it took). */
static int fail(lua_State *L, const char *fn, int rc, const char *msg)
{
    if (rc == SL_IMG_ETIME)
        return sl_lua_raise_timeout(L);
    if (rc == SL_IMG_ENOMEM)
        sl_lua_S(L)->refused = true;
    return luaL_error(L, "shale.image.%s: %s", fn, msg);
}

/* Raise for input that does not decode. The message ends with "(the
 * N-byte input)", which the ETL's sample mode uses to name the member. */
static int fail_input(lua_State *L, const char *fn, int rc, const char *msg, size_t n)
{
    char m[480];
    snprintf(m, sizeof(m), "%s (the %zu-byte input)", msg, n);
    return fail(L, fn, rc, m);
}

/* Oriented size of a pending JPEG. */
static void oriented(const struct limg *u, int *w, int *h)
{
    bool swap = u->info.orient >= 5;
    *w = swap ? u->info.h : u->info.w;
    *h = swap ? u->info.w : u->info.h;
}

static int width_of(const struct limg *u)
{
    int w, h;
    if (!u->pending)
        return u->im.w;
    oriented(u, &w, &h);
    return w;
}

static int height_of(const struct limg *u)
{
    int w, h;
    if (!u->pending)
        return u->im.h;
    oriented(u, &w, &h);
    return h;
}

/* Decode a pending JPEG (min_w x min_h: the smallest size the next step
 * needs, oriented; 0 for full size). idx: the userdata's stack index. */
static void realise(lua_State *L, int idx, struct limg *u, int min_w, int min_h)
{
    if (!u->pending)
        return;
    lua_getfenv(L, idx);
    lua_rawgeti(L, -1, 1);
    size_t n;
    const unsigned char *p = (const unsigned char *)lua_tolstring(L, -1, &n);
    struct sl_img_dopts o = u->dopts;
    if (u->noshrink) {
        o.min_w = o.min_h = 0;
    } else if (u->info.orient >= 5) {
        o.min_w = min_h;
        o.min_h = min_w;
    } else {
        o.min_w = min_w;
        o.min_h = min_h;
    }
    char msg[400];
    int rc = sl_img_decode(&u->im, p, n, &u->info, &o, msg, sizeof(msg));
    if (rc == SL_IMG_ENOMEM) {
        lua_gc(L, LUA_GCCOLLECT, 0);  /* images dropped earlier in the call give their charge back */
        rc = sl_img_decode(&u->im, p, n, &u->info, &o, msg, sizeof(msg));
    }
    lua_pop(L, 2);
    if (rc) {
        fail_input(L, "decode", rc, msg, n);  /* the decoding is decode()'s, whichever operation ran it */
        return;
    }
    u->pending = false;
    lua_newtable(L);                 /* drop the reference to the source */
    lua_setfenv(L, idx);
}

static struct limg *check(lua_State *L, int idx, const char *fn)
{
    struct limg *u = luaL_testudata(L, idx, MT);
    if (!u)
        luaL_error(L, "shale.image.%s: expected an image (from shale.image.decode) as argument %d, got %s; call it "
                   "as img:%s(...)", fn, idx, luaL_typename(L, idx), fn);
    return u;
}

static struct sl_img *pixels(lua_State *L, int idx, const char *fn, int min_w, int min_h)
{
    struct limg *u = check(L, idx, fn);
    realise(L, idx, u, min_w, min_h);
    return &u->im;
}

static int int_arg(lua_State *L, int idx, const char *fn, const char *what, int lo, int hi)
{
    lua_Number v = luaL_checknumber(L, idx);
    if (!(v >= lo && v <= hi) || v != floor(v))
        luaL_error(L, "shale.image.%s: %s must be a whole number from %d to %d, got %s", fn, what, lo, hi,
                   lua_tostring(L, idx));
    return (int)v;
}

static enum sl_img_kernel kernel_arg(lua_State *L, int idx, const char *fn)
{
    static const char *const names[] = { "nearest", "bilinear", "bicubic", "lanczos", "lanczos3", "area", NULL };
    static const enum sl_img_kernel k[] = { SL_IMG_NEAREST, SL_IMG_BILINEAR, SL_IMG_BICUBIC, SL_IMG_LANCZOS,
                                            SL_IMG_LANCZOS, SL_IMG_AREA };
    if (lua_isnoneornil(L, idx))
        return SL_IMG_BILINEAR;
    const char *s = luaL_checkstring(L, idx);
    for (int i = 0; names[i]; i++)
        if (!strcmp(s, names[i]))
            return k[i];
    luaL_error(L, "shale.image.%s: unknown kernel \"%s\" (nearest, bilinear, bicubic, lanczos3, area)", fn, s);
    return SL_IMG_BILINEAR;
}

static void known_keys(lua_State *L, int idx, const char *fn, const char *const *keys)
{
    sl_lua_opts_known(L, idx, "shale.image.", fn, keys);
}

static bool opt_bool(lua_State *L, int idx, const char *key, bool dflt)
{
    if (lua_isnoneornil(L, idx))
        return dflt;
    lua_getfield(L, idx, key);
    bool v = lua_isnil(L, -1) ? dflt : lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

/* Finish an operation that wrote into the new image on top of the stack. */
static int done(lua_State *L, const char *fn, int rc, const char *msg)
{
    if (rc)
        return fail(L, fn, rc, msg);
    return 1;
}

/* Run op once, and once more after a full collection when it ran out of
 * memory (earlier images of the call may be garbage still charged). */
#define RUN(L, fn, call)                                             \
    do {                                                             \
        char msg[400];                                               \
        int rc_ = (call);                                            \
        if (rc_ == SL_IMG_ENOMEM) {                                  \
            lua_gc(L, LUA_GCCOLLECT, 0);                             \
            rc_ = (call);                                            \
        }                                                            \
        return done(L, fn, rc_, msg);                                \
    } while (0)

/* ---- shale.image.decode / info / new ---- */

static int l_decode(lua_State *L)
{
    static const char *const keys[] = { "grey", "alpha", "lenient", "orient", "shrink", NULL };
    size_t n;
    const unsigned char *p = (const unsigned char *)luaL_checklstring(L, 1, &n);
    known_keys(L, 2, "decode", keys);
    lua_settop(L, 2);
    struct limg *u = push_new(L);                                  /* [s opts img] */
    u->dopts.grey = opt_bool(L, 2, "grey", false);
    u->dopts.alpha = opt_bool(L, 2, "alpha", false);
    u->dopts.lenient = opt_bool(L, 2, "lenient", false);
    u->dopts.orient = opt_bool(L, 2, "orient", true);
    bool shrink = opt_bool(L, 2, "shrink", true);
    char msg[400];
    int rc = sl_img_probe(p, n, &u->info, msg, sizeof(msg));
    if (rc)
        return fail_input(L, "decode", rc, msg, n);
    int top = lua_gettop(L);
    if (u->info.fmt == SL_IMG_JPEG) {
        u->pending = true;
        u->noshrink = !shrink;
        lua_createtable(L, 1, 0);
        lua_pushvalue(L, 1);
        lua_rawseti(L, -2, 1);
        lua_setfenv(L, top);
        /* the size check happens now, not at the first operation */
        int bands = u->dopts.grey ? 1 : 3;
        if ((rc = sl_img_fits(&u->im, u->info.w, u->info.h, bands, bands, msg, sizeof(msg))) != 0)
            return fail_input(L, "decode", rc, msg, n);
        return 1;
    }
    rc = sl_img_decode(&u->im, p, n, &u->info, &u->dopts, msg, sizeof(msg));
    if (rc == SL_IMG_ENOMEM) {
        lua_gc(L, LUA_GCCOLLECT, 0);
        rc = sl_img_decode(&u->im, p, n, &u->info, &u->dopts, msg, sizeof(msg));
    }
    return rc ? fail_input(L, "decode", rc, msg, n) : 1;
}

static int l_info(lua_State *L)
{
    size_t n;
    const unsigned char *p = (const unsigned char *)luaL_checklstring(L, 1, &n);
    struct sl_img_info info;
    char msg[400];
    int rc = sl_img_probe(p, n, &info, msg, sizeof(msg));
    if (rc)
        return fail(L, "info", rc, msg);
    bool swap = info.orient >= 5;
    lua_createtable(L, 0, 5);
    lua_pushstring(L, sl_img_fmt_name(info.fmt));
    lua_setfield(L, -2, "format");
    lua_pushinteger(L, swap ? info.h : info.w);
    lua_setfield(L, -2, "width");
    lua_pushinteger(L, swap ? info.w : info.h);
    lua_setfield(L, -2, "height");
    lua_pushinteger(L, info.bands);
    lua_setfield(L, -2, "bands");
    lua_pushinteger(L, info.orient);
    lua_setfield(L, -2, "orientation");
    return 1;
}

/* fill: a number (every band) or a list of band values */
static void fill_arg(lua_State *L, int idx, const char *fn, int bands, int fill[4])
{
    fill[0] = fill[1] = fill[2] = 0;
    fill[3] = 255;
    if (lua_isnoneornil(L, idx))
        return;
    if (lua_type(L, idx) == LUA_TNUMBER) {
        int v = int_arg(L, idx, fn, "fill", 0, 255);
        fill[0] = fill[1] = fill[2] = v;
        if (bands == 1)
            fill[3] = v;
        return;
    }
    luaL_checktype(L, idx, LUA_TTABLE);
    int n = (int)lua_objlen(L, idx);
    if (n != bands && !(n == 3 && bands == 4))
        luaL_error(L, "shale.image.%s: fill has %d values; the image has %d bands", fn, n, bands);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, idx, i + 1);
        fill[i] = int_arg(L, lua_gettop(L), fn, "each fill value", 0, 255);
        lua_pop(L, 1);
    }
}

static int l_new(lua_State *L)
{
    int w = int_arg(L, 1, "new", "the width", 1, SL_IMG_MAX_SIDE);
    int h = int_arg(L, 2, "new", "the height", 1, SL_IMG_MAX_SIDE);
    int bands = lua_isnoneornil(L, 3) ? 3 : int_arg(L, 3, "new", "bands", 1, 4);
    if (bands == 2)
        return luaL_error(L, "shale.image.new: bands must be 1 (grey), 3 (RGB) or 4 (RGBA)");
    int fill[4];
    fill_arg(L, 4, "new", bands, fill);
    struct limg *u = push_new(L);
    char msg[400];
    int rc = sl_img_alloc(&u->im, w, h, bands, msg, sizeof(msg));
    if (rc == SL_IMG_ENOMEM) {
        lua_gc(L, LUA_GCCOLLECT, 0);
        rc = sl_img_alloc(&u->im, w, h, bands, msg, sizeof(msg));
    }
    if (rc)
        return fail(L, "new", rc, msg);
    for (int k = 0; k < bands; k++)
        memset(u->im.px + (size_t)k * w * h, bands == 1 ? fill[0] : fill[k], (size_t)w * h);
    return 1;
}

/* ---- geometry ---- */

static int l_resize(lua_State *L)
{
    check(L, 1, "resize");
    int w = int_arg(L, 2, "resize", "the width", 1, SL_IMG_MAX_SIDE);
    int h = int_arg(L, 3, "resize", "the height", 1, SL_IMG_MAX_SIDE);
    enum sl_img_kernel k = kernel_arg(L, 4, "resize");
    struct sl_img *s = pixels(L, 1, "resize", w, h);
    struct limg *u = push_new(L);
    RUN(L, "resize", sl_img_resize(&u->im, s, w, h, k, msg, sizeof(msg)));
}

/* torchvision's Resize(n): the short side to n, the long one to
 * int(n * long / short) */
static void short_size(int w, int h, int n, int *ow, int *oh)
{
    if (w <= h) {
        *ow = n;
        *oh = (int)((double)n * h / w);
    } else {
        *oh = n;
        *ow = (int)((double)n * w / h);
    }
    if (*ow < 1)
        *ow = 1;
    if (*oh < 1)
        *oh = 1;
}

static int l_resize_short(lua_State *L)
{
    struct limg *src = check(L, 1, "resize_short");
    int n = int_arg(L, 2, "resize_short", "the size", 1, SL_IMG_MAX_SIDE);
    enum sl_img_kernel k = kernel_arg(L, 3, "resize_short");
    int w, h;
    short_size(width_of(src), height_of(src), n, &w, &h);
    if (w > SL_IMG_MAX_SIDE || h > SL_IMG_MAX_SIDE)
        return luaL_error(L, "shale.image.resize_short: the result would be %d x %d, larger than %d on a side", w, h,
                          SL_IMG_MAX_SIDE);
    /* (the size comes from the full picture, as torchvision's, also when
     * shrink-on-load decodes a smaller one) */
    struct sl_img *s = pixels(L, 1, "resize_short", w, h);
    struct limg *u = push_new(L);
    RUN(L, "resize_short", sl_img_resize(&u->im, s, w, h, k, msg, sizeof(msg)));
}

static int l_scale(lua_State *L)
{
    struct limg *src = check(L, 1, "scale");
    lua_Number f = luaL_checknumber(L, 2);
    enum sl_img_kernel k = kernel_arg(L, 3, "scale");
    double w = floor(width_of(src) * f + 0.5), h = floor(height_of(src) * f + 0.5);
    if (!(f > 0) || w < 1 || h < 1 || w > SL_IMG_MAX_SIDE || h > SL_IMG_MAX_SIDE)
        return luaL_error(L, "shale.image.scale: a factor of %g gives %.0f x %.0f pixels (each side must be 1 to %d)",
                          (double)f, w, h, SL_IMG_MAX_SIDE);
    struct sl_img *s = pixels(L, 1, "scale", (int)w, (int)h);
    struct limg *u = push_new(L);
    RUN(L, "scale", sl_img_resize(&u->im, s, (int)w, (int)h, k, msg, sizeof(msg)));
}

static int l_crop(lua_State *L)
{
    check(L, 1, "crop");
    int x = int_arg(L, 2, "crop", "x", 0, SL_IMG_MAX_SIDE);
    int y = int_arg(L, 3, "crop", "y", 0, SL_IMG_MAX_SIDE);
    int w = int_arg(L, 4, "crop", "the width", 1, SL_IMG_MAX_SIDE);
    int h = int_arg(L, 5, "crop", "the height", 1, SL_IMG_MAX_SIDE);
    struct sl_img *s = pixels(L, 1, "crop", 0, 0);
    struct limg *u = push_new(L);
    RUN(L, "crop", sl_img_crop(&u->im, s, x, y, w, h, msg, sizeof(msg)));
}

/* torchvision's center_crop: pad with zeros when the crop is larger, then
 * top = int(round((H - h) / 2)) (round half to even, as Python's round) */
static int center_crop(lua_State *L, const char *fn, struct sl_img *s, int w, int h)
{
    struct sl_img padded = { 0 };
    char msg[400];
    int rc = 0;
    if (w > s->w || h > s->h) {
        int pl = w > s->w ? (w - s->w) / 2 : 0, pt = h > s->h ? (h - s->h) / 2 : 0;
        int pr = w > s->w ? (w - s->w + 1) / 2 : 0, pb = h > s->h ? (h - s->h + 1) / 2 : 0;
        int fill[4] = { 0, 0, 0, 0 };
        if ((rc = sl_img_pad(&padded, s, pl, pt, pr, pb, fill, msg, sizeof(msg))) != 0)
            return fail(L, fn, rc, msg);
        s = &padded;
    }
    int x = (int)nearbyint((s->w - w) / 2.0), y = (int)nearbyint((s->h - h) / 2.0);
    struct limg *u = push_new(L);
    rc = sl_img_crop(&u->im, s, x, y, w, h, msg, sizeof(msg));
    sl_img_free(&padded);
    return done(L, fn, rc, msg);
}

static int l_center_crop(lua_State *L)
{
    check(L, 1, "center_crop");
    int w = int_arg(L, 2, "center_crop", "the width", 1, SL_IMG_MAX_SIDE);
    int h = lua_isnoneornil(L, 3) ? w : int_arg(L, 3, "center_crop", "the height", 1, SL_IMG_MAX_SIDE);
    struct sl_img *s = pixels(L, 1, "center_crop", 0, 0);
    return center_crop(L, "center_crop", s, w, h);
}

/* pad(all) | pad(lr, tb) | pad(l, t, r, b), then optionally {fill = v | {r, g, b}} */
static int l_pad(lua_State *L)
{
    check(L, 1, "pad");
    int v[4], n = 0;
    while (n < 4 && lua_type(L, n + 2) == LUA_TNUMBER) {
        v[n] = int_arg(L, n + 2, "pad", "the padding", 0, SL_IMG_MAX_SIDE);
        n++;
    }
    if (n == 0 || n == 3)
        return luaL_error(L, "shale.image.pad: give 1 (all sides), 2 (left/right, top/bottom) or 4 (left, top, "
                          "right, bottom) numbers, then optionally {fill = v}");
    int opt = n + 2;
    static const char *const keys[] = { "fill", NULL };
    known_keys(L, opt, "pad", keys);
    struct sl_img *s = pixels(L, 1, "pad", 0, 0);
    int fill[4];
    if (lua_istable(L, opt)) {
        lua_getfield(L, opt, "fill");
        fill_arg(L, lua_gettop(L), "pad", s->bands, fill);
        lua_pop(L, 1);
    } else {
        fill[0] = fill[1] = fill[2] = 0;
        fill[3] = 255;
    }
    int l = v[0], t = n >= 2 ? v[1] : v[0], r = n == 4 ? v[2] : v[0], b = n == 4 ? v[3] : n == 2 ? v[1] : v[0];
    struct limg *u = push_new(L);
    RUN(L, "pad", sl_img_pad(&u->im, s, l, t, r, b, fill, msg, sizeof(msg)));
}

static int l_hflip(lua_State *L)
{
    struct sl_img *s = pixels(L, 1, "hflip", 0, 0);
    struct limg *u = push_new(L);
    RUN(L, "hflip", sl_img_flip(&u->im, s, true, msg, sizeof(msg)));
}

static int l_vflip(lua_State *L)
{
    struct sl_img *s = pixels(L, 1, "vflip", 0, 0);
    struct limg *u = push_new(L);
    RUN(L, "vflip", sl_img_flip(&u->im, s, false, msg, sizeof(msg)));
}

static int l_rot90(lua_State *L)
{
    check(L, 1, "rot90");
    int k = lua_isnoneornil(L, 2) ? 1 : int_arg(L, 2, "rot90", "k (quarter turns, counter-clockwise)", -1000, 1000);
    struct sl_img *s = pixels(L, 1, "rot90", 0, 0);
    struct limg *u = push_new(L);
    RUN(L, "rot90", sl_img_rot90(&u->im, s, k, msg, sizeof(msg)));
}

/* ---- colour ---- */

static int convert(lua_State *L, const char *fn, int bands)
{
    struct sl_img *s = pixels(L, 1, fn, 0, 0);
    struct limg *u = push_new(L);
    RUN(L, fn, sl_img_convert(&u->im, s, bands, msg, sizeof(msg)));
}

static int l_grey(lua_State *L)
{
    return convert(L, "grey", 1);
}

static int l_rgb(lua_State *L)
{
    return convert(L, "rgb", 3);
}

static int l_rgba(lua_State *L)
{
    return convert(L, "rgba", 4);
}

static int enhance(lua_State *L, const char *fn, enum sl_img_enhance what)
{
    check(L, 1, fn);
    double f = luaL_checknumber(L, 2);
    struct sl_img *s = pixels(L, 1, fn, 0, 0);
    struct limg *u = push_new(L);
    RUN(L, fn, sl_img_enhance(&u->im, s, what, f, msg, sizeof(msg)));
}

static int l_brightness(lua_State *L)
{
    return enhance(L, "brightness", SL_IMG_BRIGHTNESS);
}

static int l_contrast(lua_State *L)
{
    return enhance(L, "contrast", SL_IMG_CONTRAST);
}

static int l_saturation(lua_State *L)
{
    return enhance(L, "saturation", SL_IMG_SATURATION);
}

/* ---- seeded augmentation ---- */

static double uniform(lua_State *L, double a, double b)
{
    return a + (b - a) * sl_lua_rand01(L);
}

static int randint(lua_State *L, int n)     /* 0 .. n-1 */
{
    int v = (int)(sl_lua_rand01(L) * n);
    return v >= n ? n - 1 : v;
}

static double prob_arg(lua_State *L, int idx, const char *fn)
{
    double p = lua_isnoneornil(L, idx) ? 0.5 : luaL_checknumber(L, idx);
    if (!(p >= 0 && p <= 1))
        luaL_error(L, "shale.image.%s: the probability must be from 0 to 1", fn);
    return p;
}

static int random_flip(lua_State *L, const char *fn, bool horizontal)
{
    check(L, 1, fn);
    double p = prob_arg(L, 2, fn);
    struct sl_img *s = pixels(L, 1, fn, 0, 0);
    bool flip = sl_lua_rand01(L) < p;
    struct limg *u = push_new(L);
    if (flip)
        RUN(L, fn, sl_img_flip(&u->im, s, horizontal, msg, sizeof(msg)));
    RUN(L, fn, sl_img_crop(&u->im, s, 0, 0, s->w, s->h, msg, sizeof(msg)));
}

static int l_random_hflip(lua_State *L)
{
    return random_flip(L, "random_hflip", true);
}

static int l_random_vflip(lua_State *L)
{
    return random_flip(L, "random_vflip", false);
}

static int l_random_crop(lua_State *L)
{
    check(L, 1, "random_crop");
    int w = int_arg(L, 2, "random_crop", "the width", 1, SL_IMG_MAX_SIDE);
    int h = lua_isnoneornil(L, 3) ? w : int_arg(L, 3, "random_crop", "the height", 1, SL_IMG_MAX_SIDE);
    struct sl_img *s = pixels(L, 1, "random_crop", 0, 0);
    if (w > s->w || h > s->h)
        return luaL_error(L, "shale.image.random_crop: a %d x %d crop does not fit the %d x %d image (pad it "
                          "first)", w, h, s->w, s->h);
    int y = randint(L, s->h - h + 1), x = randint(L, s->w - w + 1);
    struct limg *u = push_new(L);
    RUN(L, "random_crop", sl_img_crop(&u->im, s, x, y, w, h, msg, sizeof(msg)));
}

static void pair_opt(lua_State *L, int opt, const char *key, const char *fn, double v[2])
{
    if (!lua_istable(L, opt))
        return;
    lua_getfield(L, opt, key);
    if (!lua_isnil(L, -1)) {
        if (!lua_istable(L, -1) || lua_objlen(L, -1) != 2)
            luaL_error(L, "shale.image.%s: %s must be a pair {low, high}", fn, key);
        for (int i = 0; i < 2; i++) {
            lua_rawgeti(L, -1, i + 1);
            if (lua_type(L, -1) != LUA_TNUMBER)
                luaL_error(L, "shale.image.%s: %s must hold two numbers", fn, key);
            v[i] = lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
        if (!(v[0] > 0 && v[1] >= v[0] && v[1] < 1e6))
            luaL_error(L, "shale.image.%s: %s must be {low, high} with 0 < low <= high", fn, key);
    }
    lua_pop(L, 1);
}

/* torchvision's RandomResizedCrop.get_params, then a resize */
static int l_random_resized_crop(lua_State *L)
{
    static const char *const fn = "random_resized_crop";
    check(L, 1, fn);
    int W = int_arg(L, 2, fn, "the width", 1, SL_IMG_MAX_SIDE);
    int opt = 3, H = W;
    if (lua_type(L, 3) == LUA_TNUMBER) {
        H = int_arg(L, 3, fn, "the height", 1, SL_IMG_MAX_SIDE);
        opt = 4;
    }
    static const char *const keys[] = { "scale", "ratio", "kernel", NULL };
    known_keys(L, opt, fn, keys);
    double scale[2] = { 0.08, 1.0 }, ratio[2] = { 3.0 / 4.0, 4.0 / 3.0 };
    pair_opt(L, opt, "scale", fn, scale);
    pair_opt(L, opt, "ratio", fn, ratio);
    enum sl_img_kernel k = SL_IMG_BILINEAR;
    if (lua_istable(L, opt)) {
        lua_getfield(L, opt, "kernel");
        k = kernel_arg(L, lua_gettop(L), fn);
        lua_pop(L, 1);
    }
    struct sl_img *s = pixels(L, 1, fn, 0, 0);
    double area = (double)s->w * s->h, lr0 = log(ratio[0]), lr1 = log(ratio[1]);
    int cx = -1, cy = 0, cw = 0, ch = 0;
    for (int i = 0; i < 10 && cx < 0; i++) {
        double ta = area * uniform(L, scale[0], scale[1]), ar = exp(uniform(L, lr0, lr1));
        int w = (int)nearbyint(sqrt(ta * ar)), h = (int)nearbyint(sqrt(ta / ar));
        if (w > 0 && w <= s->w && h > 0 && h <= s->h) {
            cy = randint(L, s->h - h + 1);
            cx = randint(L, s->w - w + 1);
            cw = w;
            ch = h;
        }
    }
    if (cx < 0) {       /* fallback: the central crop of the nearest allowed ratio */
        double in = (double)s->w / s->h;
        if (in < ratio[0]) {
            cw = s->w;
            ch = (int)nearbyint(cw / ratio[0]);
        } else if (in > ratio[1]) {
            ch = s->h;
            cw = (int)nearbyint(ch * ratio[1]);
        } else {
            cw = s->w;
            ch = s->h;
        }
        cw = SL_MAX(1, SL_MIN(cw, s->w));
        ch = SL_MAX(1, SL_MIN(ch, s->h));
        cy = (s->h - ch) / 2;
        cx = (s->w - cw) / 2;
    }
    struct sl_img crop = { 0 };
    char msg[400];
    int rc = sl_img_crop(&crop, s, cx, cy, cw, ch, msg, sizeof(msg));
    if (rc)
        return fail(L, fn, rc, msg);
    struct limg *u = push_new(L);
    rc = sl_img_resize(&u->im, &crop, W, H, k, msg, sizeof(msg));
    sl_img_free(&crop);
    return done(L, fn, rc, msg);
}

/* torchvision's ColorJitter (brightness, contrast, saturation), in a
 * random order with factors uniform in [max(0, 1 - v), 1 + v] */
static int l_color_jitter(lua_State *L)
{
    static const char *const fn = "color_jitter";
    check(L, 1, fn);
    if (lua_istable(L, 2)) {
        lua_getfield(L, 2, "hue");
        bool hue = !lua_isnil(L, -1);
        lua_pop(L, 1);
        if (hue)
            return luaL_error(L, "shale.image.color_jitter: hue is not supported (brightness, contrast, "
                              "saturation are)");
    }
    static const char *const keys[] = { "brightness", "contrast", "saturation", NULL };
    known_keys(L, 2, fn, keys);
    luaL_checktype(L, 2, LUA_TTABLE);
    double v[3] = { 0, 0, 0 };
    for (int i = 0; i < 3; i++) {
        lua_getfield(L, 2, keys[i]);
        if (!lua_isnil(L, -1)) {
            v[i] = luaL_checknumber(L, -1);
            if (!(v[i] >= 0 && v[i] < 1e6))
                return luaL_error(L, "shale.image.color_jitter: %s must be a number >= 0", keys[i]);
        }
        lua_pop(L, 1);
    }
    struct sl_img *s = pixels(L, 1, fn, 0, 0);
    int order[3] = { 0, 1, 2 };
    for (int i = 2; i > 0; i--) {
        int j = randint(L, i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    double f[3];
    for (int i = 0; i < 3; i++)
        f[i] = v[i] > 0 ? uniform(L, SL_MAX(0.0, 1 - v[i]), 1 + v[i]) : 1;
    struct sl_img cur = { 0 };
    char msg[400];
    int rc = sl_img_crop(&cur, s, 0, 0, s->w, s->h, msg, sizeof(msg));
    for (int i = 0; i < 3 && !rc; i++) {
        int w = order[i];
        if (v[w] <= 0)
            continue;
        struct sl_img next = { 0 };
        rc = sl_img_enhance(&next, &cur, (enum sl_img_enhance)w, f[w], msg, sizeof(msg));
        sl_img_free(&cur);
        cur = next;
    }
    if (rc) {
        sl_img_free(&cur);
        return fail(L, fn, rc, msg);
    }
    struct limg *u = push_new(L);
    u->im.w = cur.w;
    u->im.h = cur.h;
    u->im.bands = cur.bands;
    u->im.px = cur.px;
    u->im.charged = cur.charged;
    return 1;
}

/* ---- outputs ---- */

/* The output bytes as a string; a holder userdata owns the buffer while
 * lua_pushlstring (which may raise on memory) copies it. */
static int push_out(lua_State *L, unsigned char *o, size_t len, size_t cap)
{
    struct limg *h = push_new(L);
    h->im.px = o;
    h->im.charged = cap;
    lua_pushlstring(L, (const char *)o, len);
    sl_img_free(&h->im);
    return 1;
}

static int l_encode(lua_State *L)
{
    static const char *const fn = "encode";
    check(L, 1, fn);
    const char *f = luaL_checkstring(L, 2);
    enum sl_img_fmt fmt = !strcmp(f, "jpeg") || !strcmp(f, "jpg") ? SL_IMG_JPEG : !strcmp(f, "png") ? SL_IMG_PNG
                        : !strcmp(f, "webp") ? SL_IMG_WEBP : SL_IMG_UNKNOWN;
    if (fmt == SL_IMG_UNKNOWN)
        return luaL_error(L, "shale.image.encode: unknown format \"%s\" (jpeg, png, webp)", f);
    static const char *const jkeys[] = { "quality", NULL }, *const pkeys[] = { "fast", NULL },
                             *const wkeys[] = { "quality", "lossless", NULL };
    known_keys(L, 3, fn, fmt == SL_IMG_JPEG ? jkeys : fmt == SL_IMG_PNG ? pkeys : wkeys);
    int q = fmt == SL_IMG_JPEG ? 90 : fmt == SL_IMG_WEBP ? 80 : 6;
    if (lua_istable(L, 3)) {
        lua_getfield(L, 3, "quality");
        if (!lua_isnil(L, -1))
            q = int_arg(L, lua_gettop(L), fn, "quality", fmt == SL_IMG_JPEG ? 1 : 0, 100);
        lua_pop(L, 1);
        if (fmt == SL_IMG_PNG && opt_bool(L, 3, "fast", false))
            q = 1;
        if (fmt == SL_IMG_WEBP && opt_bool(L, 3, "lossless", false))
            q = 101;
    }
    struct sl_img *s = pixels(L, 1, fn, 0, 0);
    unsigned char *o;
    size_t len, cap;
    char msg[400];
    int rc = sl_img_encode(s, fmt, q, &o, &len, &cap, msg, sizeof(msg));
    if (rc == SL_IMG_ENOMEM) {
        lua_gc(L, LUA_GCCOLLECT, 0);
        rc = sl_img_encode(s, fmt, q, &o, &len, &cap, msg, sizeof(msg));
    }
    if (rc)
        return fail(L, fn, rc, msg);
    return push_out(L, o, len, cap);
}

static int num_list(lua_State *L, int opt, const char *key, double *v, int bands)
{
    lua_getfield(L, opt, key);
    int n = 0;
    if (lua_type(L, -1) == LUA_TNUMBER) {
        v[0] = lua_tonumber(L, -1);
        n = 1;
    } else if (lua_istable(L, -1)) {
        n = (int)lua_objlen(L, -1);
        if (n != bands && n != 1)
            luaL_error(L, "shale.image.tensor: %s has %d values; the image has %d bands", key, n, bands);
        for (int i = 0; i < n; i++) {
            lua_rawgeti(L, -1, i + 1);
            if (lua_type(L, -1) != LUA_TNUMBER)
                luaL_error(L, "shale.image.tensor: %s must hold numbers", key);
            v[i] = lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
    } else if (!lua_isnil(L, -1)) {
        luaL_error(L, "shale.image.tensor: %s must be a number or a list of numbers, one per band", key);
    }
    lua_pop(L, 1);
    return n;
}

static int l_tensor(lua_State *L)
{
    static const char *const fn = "tensor";
    check(L, 1, fn);
    static const char *const keys[] = { "dtype", "layout", "mean", "std", NULL };
    known_keys(L, 2, fn, keys);
    bool f32 = true;
    enum sl_img_layout layout = SL_IMG_CHW;
    double mean[4] = { 0 }, std[4] = { 1, 1, 1, 1 };
    int nm = 0;
    struct sl_img *s = pixels(L, 1, fn, 0, 0);
    if (lua_istable(L, 2)) {
        lua_getfield(L, 2, "dtype");
        const char *d = lua_isnil(L, -1) ? "float32" : luaL_checkstring(L, -1);
        if (!strcmp(d, "uint8"))
            f32 = false;
        else if (strcmp(d, "float32"))
            return luaL_error(L, "shale.image.tensor: unknown dtype \"%s\" (float32, uint8)", d);
        lua_pop(L, 1);
        lua_getfield(L, 2, "layout");
        const char *l = lua_isnil(L, -1) ? "CHW" : luaL_checkstring(L, -1);
        if (!strcmp(l, "HWC"))
            layout = SL_IMG_HWC;
        else if (!strcmp(l, "HW"))
            layout = SL_IMG_HW;
        else if (strcmp(l, "CHW"))
            return luaL_error(L, "shale.image.tensor: unknown layout \"%s\" (CHW, HWC, HW)", l);
        lua_pop(L, 1);
        nm = num_list(L, 2, "mean", mean, s->bands);
        int ns = num_list(L, 2, "std", std, s->bands);
        if ((nm || ns) && !f32)
            return luaL_error(L, "shale.image.tensor: mean and std apply to float32 tensors, not uint8");
        if (ns && !nm) {
            nm = ns;
            for (int i = 0; i < ns; i++)
                mean[i] = 0;
        } else if (nm && !ns) {
            for (int i = 0; i < nm; i++)
                std[i] = 1;
        } else if (nm != ns) {
            if (nm == 1)
                for (int i = 1; i < ns; i++)
                    mean[i] = mean[0];
            if (ns == 1)
                for (int i = 1; i < nm; i++)
                    std[i] = std[0];
            nm = SL_MAX(nm, ns);
        }
        for (int i = 0; i < nm; i++)
            if (!(std[i] > 0) || !isfinite(mean[i]))
                return luaL_error(L, "shale.image.tensor: every std must be > 0 and every mean finite");
    }
    unsigned char *o;
    size_t len, cap;
    char msg[400];
    int rc = sl_img_tensor(s, f32, layout, mean, std, nm, &o, &len, &cap, msg, sizeof(msg));
    if (rc == SL_IMG_ENOMEM) {
        lua_gc(L, LUA_GCCOLLECT, 0);
        rc = sl_img_tensor(s, f32, layout, mean, std, nm, &o, &len, &cap, msg, sizeof(msg));
    }
    if (rc)
        return fail(L, fn, rc, msg);
    return push_out(L, o, len, cap);
}

static int l_get(lua_State *L)
{
    check(L, 1, "get");
    struct sl_img *s = pixels(L, 1, "get", 0, 0);
    int x = int_arg(L, 2, "get", "x", 0, s->w - 1), y = int_arg(L, 3, "get", "y", 0, s->h - 1);
    for (int k = 0; k < s->bands; k++)
        lua_pushinteger(L, s->px[(size_t)k * s->w * s->h + (size_t)y * s->w + x]);
    return s->bands;
}

/* ---- the metatable ---- */

static const luaL_Reg methods[] = {
    { "resize", l_resize }, { "resize_short", l_resize_short }, { "scale", l_scale }, { "crop", l_crop },
    { "center_crop", l_center_crop }, { "pad", l_pad }, { "hflip", l_hflip }, { "vflip", l_vflip },
    { "rot90", l_rot90 }, { "grey", l_grey }, { "gray", l_grey }, { "rgb", l_rgb }, { "rgba", l_rgba },
    { "brightness", l_brightness }, { "contrast", l_contrast }, { "saturation", l_saturation },
    { "random_hflip", l_random_hflip }, { "random_vflip", l_random_vflip }, { "random_crop", l_random_crop },
    { "random_resized_crop", l_random_resized_crop }, { "color_jitter", l_color_jitter },
    { "encode", l_encode }, { "tensor", l_tensor }, { "get", l_get },
};

/* __index: the fields, then the methods (upvalue 1) */
static int img_index(lua_State *L)
{
    struct limg *u = check(L, 1, "index");
    const char *k = lua_tostring(L, 2);
    if (k && !strcmp(k, "width"))
        lua_pushinteger(L, width_of(u));
    else if (k && !strcmp(k, "height"))
        lua_pushinteger(L, height_of(u));
    else if (k && !strcmp(k, "bands"))
        lua_pushinteger(L, u->pending ? (u->dopts.grey ? 1 : 3) : u->im.bands);
    else if (k && !strcmp(k, "format"))
        lua_pushstring(L, sl_img_fmt_name(u->info.fmt));
    else {
        lua_pushvalue(L, 2);
        lua_rawget(L, lua_upvalueindex(1));
    }
    return 1;
}

static int img_newindex(lua_State *L)
{
    return luaL_error(L, "shale.image: images are read-only (operations return new images)");
}

static int img_tostring(lua_State *L)
{
    struct limg *u = check(L, 1, "tostring");
    lua_pushfstring(L, "image %dx%d x%d", width_of(u), height_of(u),
                    u->pending ? (u->dopts.grey ? 1 : 3) : u->im.bands);
    return 1;
}

void sl_lua_open_image(lua_State *L)
{
    luaL_newmetatable(L, MT);                                   /* [.. mt] */
    lua_pushcfunction(L, img_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushliteral(L, SL_LUA_LOCKED);
    lua_setfield(L, -2, "__metatable");
    lua_pushcfunction(L, img_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushcfunction(L, img_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_createtable(L, 0, (int)SL_ARRAY_SIZE(methods));         /* [.. mt methods] */
    for (size_t i = 0; i < SL_ARRAY_SIZE(methods); i++) {
        lua_pushcfunction(L, methods[i].func);
        lua_setfield(L, -2, methods[i].name);
    }
    sl_lua_freeze_mark(L, -1);
    lua_pushcclosure(L, img_index, 1);                          /* [.. mt index] */
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);

    static const luaL_Reg fns[] = { { "decode", l_decode }, { "info", l_info }, { "new", l_new } };
    lua_createtable(L, 0, 4);                                   /* [.. image] */
    for (size_t i = 0; i < SL_ARRAY_SIZE(fns); i++) {
        lua_pushcfunction(L, fns[i].func);
        lua_setfield(L, -2, fns[i].name);
    }
    sl_lua_proxy(L, -1, "shale.image");                        /* [.. image proxy] */
    lua_remove(L, -2);
}
