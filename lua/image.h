/* SPDX-License-Identifier: MIT
 * image.h: the C side of shale.image (not for callers; see media.h),
 * shared by image.c (the Lua face), image_codec.c (decoders, encoders),
 * image_ops.c (geometry, colour, tensors) and image_buf.c (buffers). Calls
 * go image.c -> image_codec.c -> image_ops.c -> image_buf.c, never back. None of these functions raises:
 * they return SL_IMG_OK or an error code with a message, and the Lua face
 * raises after it has put every buffer back.
 *
 * Pixels are 8-bit and planar: `bands` planes of w*h bytes, one after the
 * other (grey; R, G, B; R, G, B, A). Planar keeps the resampler on one
 * channel at a time (libswscale's GRAY8 path: no colour-space round trip)
 * and gives CHW tensors without a transpose.
 *
 * Who frees what: the pixels of a struct sl_img belong to it and are
 * charged to the call's memory cap (S); sl_img_free() frees and uncharges.
 * Scratch buffers from sl_img_scratch() are freed by the function that
 * took them, on every path.
 */
#ifndef SL_LUA_IMAGE_H
#define SL_LUA_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "budget.h"

enum { SL_IMG_OK = 0, SL_IMG_EINVAL = -1, SL_IMG_ENOMEM = -2, SL_IMG_ETIME = -3 };

#define SL_IMG_MAX_SIDE 65500   /* the largest JPEG side; a larger one is refused */

enum sl_img_fmt { SL_IMG_UNKNOWN = 0, SL_IMG_JPEG, SL_IMG_PNG, SL_IMG_WEBP, SL_IMG_GIF, SL_IMG_TIFF };
enum sl_img_kernel { SL_IMG_NEAREST = 0, SL_IMG_BILINEAR, SL_IMG_BICUBIC, SL_IMG_LANCZOS, SL_IMG_AREA };

struct sl_img {
    struct sl_lua_state *S; /* charged to */
    lua_State *L;           /* for deadline checks (the running call's) */
    int w, h, bands;        /* bands: 1 grey, 3 RGB, 4 RGBA */
    unsigned char *px;      /* bands planes of w*h bytes */
    size_t charged;
};

/* What a header says, before any pixel is decoded. */
struct sl_img_info {
    enum sl_img_fmt fmt;
    int w, h;          /* as stored (before orientation) */
    int bands;         /* what decoding gives by default: 1 grey, 3, or 4 with alpha */
    int orient;        /* EXIF orientation 1..8 (1: none) */
    bool cmyk;
};

struct sl_img_dopts {
    bool grey;         /* keep/convert to one band */
    bool alpha;        /* keep the alpha band when there is one */
    bool lenient;      /* accept data the decoder only warns about */
    bool orient;       /* apply EXIF orientation (JPEG, TIFF, WebP) */
    int min_w, min_h;  /* JPEG shrink-on-load: a DCT scale 1/2..1/8 that keeps at least these */
};

/* ---- buffers (image_buf.c) ---- */

/** Allocate im->px for w x h x bands (charged); im->px must be NULL. */
int sl_img_alloc(struct sl_img *im, int w, int h, int bands, char *msg, size_t msz);
/** Free and uncharge the pixels. Idempotent. */
void sl_img_free(struct sl_img *im);
/** Charged scratch buffer (a per-thread cache keeps recent large buffers,
 * so a stream of images does not fault in fresh pages each time). */
void *sl_img_scratch(struct sl_lua_state *S, size_t n);
void sl_img_scratch_free(struct sl_lua_state *S, void *p, size_t n);
/** Whether w x h pixels of `bands` bands, plus a decoder's buffer of
 * `extra` bytes a pixel, fit in what the call's memory limit leaves (im->S);
 * refuses before anything is allocated: SL_IMG_EINVAL for an impossible
 * size, SL_IMG_ENOMEM with "the header announces ..." (image_codec.c). */
int sl_img_fits(const struct sl_img *im, int w, int h, int bands, int extra, char *msg, size_t msz);
/** Human form of n bytes ("1.5 GiB") into buf. */
const char *sl_img_size_str(double n, char *buf, size_t sz);

/* ---- codecs (image_codec.c) ---- */

const char *sl_img_fmt_name(enum sl_img_fmt f);
/** Read the header: format, size, bands, orientation. No pixel work. */
int sl_img_probe(const unsigned char *p, size_t n, struct sl_img_info *info, char *msg, size_t msz);
/** Decode into out (empty; out->S and out->L set), orientation applied
 * when o->orient. */
int sl_img_decode(struct sl_img *out, const unsigned char *p, size_t n, const struct sl_img_info *info,
                  const struct sl_img_dopts *o, char *msg, size_t msz);
/** Encode as JPEG (quality 1..100), PNG (level 0..9) or WebP (quality
 * 0..100, or lossless when quality > 100) into a charged buffer *out of
 * *outlen bytes (free with sl_img_scratch_free(S, *out, *cap)). */
int sl_img_encode(const struct sl_img *im, enum sl_img_fmt fmt, int quality, unsigned char **out, size_t *outlen,
                  size_t *cap, char *msg, size_t msz);

/* ---- operations (image_ops.c); dst is empty, src is left alone ---- */

int sl_img_resize(struct sl_img *dst, const struct sl_img *src, int w, int h, enum sl_img_kernel k, char *msg,
                  size_t msz);
/** The rectangle must lie inside src. */
int sl_img_crop(struct sl_img *dst, const struct sl_img *src, int x, int y, int w, int h, char *msg, size_t msz);
/** Border of constant fill (fill[band]). */
int sl_img_pad(struct sl_img *dst, const struct sl_img *src, int l, int t, int r, int b, const int fill[4],
               char *msg, size_t msz);
int sl_img_flip(struct sl_img *dst, const struct sl_img *src, bool horizontal, char *msg, size_t msz);
/** Rotate by k * 90 degrees counter-clockwise (k taken mod 4). */
int sl_img_rot90(struct sl_img *dst, const struct sl_img *src, int k, char *msg, size_t msz);
/** Apply EXIF orientation 1..8 (in place by replacement). */
int sl_img_orient(struct sl_img *im, int orient, char *msg, size_t msz);
/** To `bands` (1 grey by ITU-R 601 luma as PIL's "L", 3 RGB, 4 RGBA). */
int sl_img_convert(struct sl_img *dst, const struct sl_img *src, int bands, char *msg, size_t msz);
/** torchvision's adjust_brightness / adjust_contrast / adjust_saturation
 * (PIL's ImageEnhance): blend with black, with the mean grey, with the
 * grey image, by factor f >= 0. The alpha band is kept. */
enum sl_img_enhance { SL_IMG_BRIGHTNESS, SL_IMG_CONTRAST, SL_IMG_SATURATION };
int sl_img_enhance(struct sl_img *dst, const struct sl_img *src, enum sl_img_enhance what, double f, char *msg,
                   size_t msz);

/** The pixels as a .npy array: float32 (px/255, then (x - mean) / std per
 * band when nmean > 0) or uint8; CHW, HWC or (one band) HW. *out is a charged scratch
 * buffer of *cap bytes, *outlen used. */
enum sl_img_layout { SL_IMG_CHW, SL_IMG_HWC, SL_IMG_HW };
int sl_img_tensor(const struct sl_img *im, bool f32, enum sl_img_layout layout, const double *mean,
                  const double *std, int nmean, unsigned char **out, size_t *outlen, size_t *cap, char *msg,
                  size_t msz);

#endif
