/* SPDX-License-Identifier: MIT
 * image_ops.c: shale.image's geometry, colour and tensor operations
 * (image.h). Filtered resampling is libswscale's, one plane at a time
 * (GRAY8 to GRAY8: no colour-space conversion, so the result matches PIL's
 * antialiased filters); nearest neighbour, crops, flips and rotations are
 * index arithmetic written here, as PIL defines them, so that class maps
 * come out identical to torchvision's.
 *
 * Long loops check the call's deadline every 64 rows.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavutil/log.h>
#include <libswscale/swscale.h>

#include "image.h"
#include "image_tls.h"
#include "media.h"

#define TICK(im, y) ((((y) & 63) == 63) && (im)->L && sl_lua_deadline_passed((im)->L))

static size_t plane(const struct sl_img *im)
{
    return (size_t)im->w * im->h;
}

static int like(struct sl_img *dst, const struct sl_img *src, int w, int h, int bands, char *msg, size_t msz)
{
    dst->S = src->S;
    dst->L = src->L;
    return sl_img_alloc(dst, w, h, bands, msg, msz);
}

static int timed_out(struct sl_img *dst, char *msg, size_t msz)
{
    sl_img_free(dst);
    snprintf(msg, msz, "the call's time limit passed");
    return SL_IMG_ETIME;
}

/* ---- resampling ---- */

static pthread_once_t quiet_once = PTHREAD_ONCE_INIT;

static void quiet(void)
{
    av_log_set_level(AV_LOG_QUIET);  /* libswscale's notes go to stderr otherwise */
}

static struct SwsContext *scaler(int sw, int sh, int dw, int dh, enum sl_img_kernel k)
{
    static const int flags[] = { SWS_POINT, SWS_BILINEAR, SWS_BICUBIC, SWS_LANCZOS, SWS_AREA };
    struct sl_img_tls *t = sl_img_tls();
    if (!t)
        return NULL;
    pthread_once(&quiet_once, quiet);
    int f = flags[k], old = 0;
    for (int i = 0; i < SL_IMG_SWS; i++) {
        if (t->sws[i].c && t->sws[i].sw == sw && t->sws[i].sh == sh && t->sws[i].dw == dw && t->sws[i].dh == dh &&
            t->sws[i].flags == f) {
            t->sws[i].stamp = ++t->stamp;
            return t->sws[i].c;
        }
        if (!t->sws[i].c || (t->sws[old].c && t->sws[i].stamp < t->sws[old].stamp))
            old = i;
    }
    /* PIL's bicubic is Keys' with a = -0.5 (B = 0, C = 0.5); lanczos3 */
    double param[2] = { SWS_PARAM_DEFAULT, SWS_PARAM_DEFAULT };
    if (k == SL_IMG_BICUBIC) {
        param[0] = 0;
        param[1] = 0.5;
    } else if (k == SL_IMG_LANCZOS) {
        param[0] = 3;
    }
    struct SwsContext *c = sws_getContext(sw, sh, AV_PIX_FMT_GRAY8, dw, dh, AV_PIX_FMT_GRAY8, f | SWS_ACCURATE_RND,
                                          NULL, NULL, param);
    if (!c)
        return NULL;
    if (t->sws[old].c)
        sws_freeContext(t->sws[old].c);
    t->sws[old].c = c;
    t->sws[old].sw = sw;
    t->sws[old].sh = sh;
    t->sws[old].dw = dw;
    t->sws[old].dh = dh;
    t->sws[old].flags = f;
    t->sws[old].stamp = ++t->stamp;
    return c;
}

/* PIL's NEAREST: source index floor(scale * (x + 0.5)), accumulated as its
 * affine transform does */
static int resize_nearest(struct sl_img *dst, const struct sl_img *src, char *msg, size_t msz)
{
    int *xs = sl_img_scratch(src->S, sizeof(int) * (size_t)dst->w);
    if (!xs) {
        snprintf(msg, msz, "not enough memory to resize (memory limit)");
        return SL_IMG_ENOMEM;
    }
    double ax = (double)src->w / dst->w, ay = (double)src->h / dst->h, xo = ax * 0.5;
    for (int x = 0; x < dst->w; x++, xo += ax)
        xs[x] = SL_MIN((int)xo, src->w - 1);
    size_t sp = plane(src), dp = plane(dst);
    double yo = ay * 0.5;
    for (int y = 0; y < dst->h; y++, yo += ay) {
        if (TICK(src, y)) {
            sl_img_scratch_free(src->S, xs, sizeof(int) * (size_t)dst->w);
            return timed_out(dst, msg, msz);
        }
        int sy = SL_MIN((int)yo, src->h - 1);
        for (int b = 0; b < src->bands; b++) {
            const unsigned char *s = src->px + b * sp + (size_t)sy * src->w;
            unsigned char *d = dst->px + b * dp + (size_t)y * dst->w;
            for (int x = 0; x < dst->w; x++)
                d[x] = s[xs[x]];
        }
    }
    sl_img_scratch_free(src->S, xs, sizeof(int) * (size_t)dst->w);
    return SL_IMG_OK;
}

int sl_img_resize(struct sl_img *dst, const struct sl_img *src, int w, int h, enum sl_img_kernel k, char *msg,
                  size_t msz)
{
    int rc = like(dst, src, w, h, src->bands, msg, msz);
    if (rc)
        return rc;
    if (w == src->w && h == src->h) {
        memcpy(dst->px, src->px, plane(src) * src->bands);
        return SL_IMG_OK;
    }
    if (k == SL_IMG_NEAREST)
        return resize_nearest(dst, src, msg, msz);
    struct SwsContext *c = scaler(src->w, src->h, w, h, k);
    if (!c) {
        sl_img_free(dst);
        snprintf(msg, msz, "libswscale cannot resize %d x %d to %d x %d", src->w, src->h, w, h);
        return SL_IMG_EINVAL;
    }
    for (int b = 0; b < src->bands; b++) {
        if (src->L && sl_lua_deadline_passed(src->L))
            return timed_out(dst, msg, msz);
        const uint8_t *s[4] = { src->px + b * plane(src) };
        uint8_t *d[4] = { dst->px + b * plane(dst) };
        int ss[4] = { src->w }, ds[4] = { w };
        if (sws_scale(c, s, ss, 0, src->h, d, ds) != h) {
            sl_img_free(dst);
            snprintf(msg, msz, "libswscale failed to resize %d x %d to %d x %d", src->w, src->h, w, h);
            return SL_IMG_EINVAL;
        }
    }
    return SL_IMG_OK;
}

/* ---- geometry ---- */

int sl_img_crop(struct sl_img *dst, const struct sl_img *src, int x, int y, int w, int h, char *msg, size_t msz)
{
    if (x < 0 || y < 0 || w <= 0 || h <= 0 || x > src->w - w || y > src->h - h) {
        snprintf(msg, msz, "the rectangle %d x %d at (%d, %d) is not inside the %d x %d image", w, h, x, y, src->w,
                 src->h);
        return SL_IMG_EINVAL;
    }
    int rc = like(dst, src, w, h, src->bands, msg, msz);
    if (rc)
        return rc;
    for (int b = 0; b < src->bands; b++)
        for (int r = 0; r < h; r++)
            memcpy(dst->px + b * plane(dst) + (size_t)r * w, src->px + b * plane(src) + (size_t)(y + r) * src->w + x,
                   (size_t)w);
    return SL_IMG_OK;
}

int sl_img_pad(struct sl_img *dst, const struct sl_img *src, int l, int t, int r, int b, const int fill[4],
               char *msg, size_t msz)
{
    if (l < 0 || t < 0 || r < 0 || b < 0 || l > SL_IMG_MAX_SIDE || t > SL_IMG_MAX_SIDE || r > SL_IMG_MAX_SIDE ||
        b > SL_IMG_MAX_SIDE) {
        snprintf(msg, msz, "padding must be 0 to %d pixels on each side", SL_IMG_MAX_SIDE);
        return SL_IMG_EINVAL;
    }
    int rc = like(dst, src, src->w + l + r, src->h + t + b, src->bands, msg, msz);
    if (rc)
        return rc;
    for (int k = 0; k < src->bands; k++) {
        unsigned char *d = dst->px + k * plane(dst);
        memset(d, fill[k], plane(dst));
        for (int y = 0; y < src->h; y++)
            memcpy(d + (size_t)(y + t) * dst->w + l, src->px + k * plane(src) + (size_t)y * src->w, (size_t)src->w);
    }
    return SL_IMG_OK;
}

/* kind: 1 hflip, 2 vflip, 3 rot180, 4 transpose, 5 transverse, 6 rot90
 * counter-clockwise, 7 rot90 clockwise */
static int xform(struct sl_img *dst, const struct sl_img *src, int kind, char *msg, size_t msz)
{
    bool swap = kind >= 4;
    int W = src->w, H = src->h;
    int rc = like(dst, src, swap ? H : W, swap ? W : H, src->bands, msg, msz);
    if (rc)
        return rc;
    for (int k = 0; k < src->bands; k++) {
        const unsigned char *s = src->px + k * plane(src);
        unsigned char *d = dst->px + k * plane(dst);
        for (int y = 0; y < dst->h; y++) {
            if (TICK(src, y))
                return timed_out(dst, msg, msz);
            unsigned char *row = d + (size_t)y * dst->w;
            switch (kind) {
            case 1:
                for (int x = 0; x < W; x++)
                    row[x] = s[(size_t)y * W + (W - 1 - x)];
                break;
            case 2:
                memcpy(row, s + (size_t)(H - 1 - y) * W, (size_t)W);
                break;
            case 3:
                for (int x = 0; x < W; x++)
                    row[x] = s[(size_t)(H - 1 - y) * W + (W - 1 - x)];
                break;
            case 4:
                for (int x = 0; x < dst->w; x++)
                    row[x] = s[(size_t)x * W + y];
                break;
            case 5:
                for (int x = 0; x < dst->w; x++)
                    row[x] = s[(size_t)(H - 1 - x) * W + (W - 1 - y)];
                break;
            case 6:
                for (int x = 0; x < dst->w; x++)
                    row[x] = s[(size_t)x * W + (W - 1 - y)];
                break;
            default:
                for (int x = 0; x < dst->w; x++)
                    row[x] = s[(size_t)(H - 1 - x) * W + y];
                break;
            }
        }
    }
    return SL_IMG_OK;
}

int sl_img_flip(struct sl_img *dst, const struct sl_img *src, bool horizontal, char *msg, size_t msz)
{
    return xform(dst, src, horizontal ? 1 : 2, msg, msz);
}

int sl_img_rot90(struct sl_img *dst, const struct sl_img *src, int k, char *msg, size_t msz)
{
    k = ((k % 4) + 4) % 4;
    if (k == 0)
        return sl_img_crop(dst, src, 0, 0, src->w, src->h, msg, msz);
    return xform(dst, src, k == 1 ? 6 : k == 2 ? 3 : 7, msg, msz);
}

int sl_img_orient(struct sl_img *im, int orient, char *msg, size_t msz)
{
    /* EXIF 2 mirror, 3 rotate 180, 4 flip, 5 transpose, 6 rotate 90 clockwise,
     * 7 transverse, 8 rotate 90 counter-clockwise (PIL's exif_transpose) */
    static const int kind[9] = { 0, 0, 1, 3, 2, 4, 7, 5, 6 };
    if (orient < 2 || orient > 8)
        return SL_IMG_OK;
    struct sl_img out = { 0 };
    int rc = xform(&out, im, kind[orient], msg, msz);
    if (rc)
        return rc;
    sl_img_free(im);
    *im = out;
    return SL_IMG_OK;
}

/* ---- colour ---- */

static unsigned char luma(unsigned r, unsigned g, unsigned b)
{
    return (unsigned char)((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16);   /* PIL's "L" */
}

int sl_img_convert(struct sl_img *dst, const struct sl_img *src, int bands, char *msg, size_t msz)
{
    int rc = like(dst, src, src->w, src->h, bands, msg, msz);
    if (rc)
        return rc;
    size_t np = plane(src);
    const unsigned char *s = src->px;
    unsigned char *d = dst->px;
    if (bands == 1 && src->bands >= 3) {
        for (size_t i = 0; i < np; i++)
            d[i] = luma(s[i], s[np + i], s[2 * np + i]);
    } else {
        for (int k = 0; k < SL_MIN(bands, 3); k++)
            memcpy(d + k * np, s + (src->bands == 1 ? 0 : k) * np, np);
    }
    if (bands == 4 && src->bands == 4)
        memcpy(d + 3 * np, s + 3 * np, np);
    else if (bands == 4)
        memset(d + 3 * np, 255, np);
    return SL_IMG_OK;
}

static unsigned char blend(double a, double b, double f)
{
    double v = a + f * (b - a);     /* PIL's ImagingBlend: truncate, then clip */
    int i = (int)v;
    return (unsigned char)(i < 0 ? 0 : i > 255 ? 255 : i);
}

int sl_img_enhance(struct sl_img *dst, const struct sl_img *src, enum sl_img_enhance what, double f, char *msg,
                   size_t msz)
{
    if (!(f >= 0) || f > 1e6) {
        snprintf(msg, msz, "the factor must be a number from 0 to 1e6 (1 leaves the image as it is)");
        return SL_IMG_EINVAL;
    }
    int rc = like(dst, src, src->w, src->h, src->bands, msg, msz);
    if (rc)
        return rc;
    size_t np = plane(src);
    int cb = SL_MIN(src->bands, 3);
    const unsigned char *s = src->px;
    unsigned char *d = dst->px;
    if (src->bands == 4)
        memcpy(d + 3 * np, s + 3 * np, np);
    if (what == SL_IMG_BRIGHTNESS) {
        for (size_t i = 0; i < np * cb; i++)
            d[i] = blend(0, s[i], f);
    } else if (what == SL_IMG_CONTRAST) {
        double sum = 0;
        for (size_t i = 0; i < np; i++)
            sum += cb == 1 ? s[i] : luma(s[i], s[np + i], s[2 * np + i]);
        double mean = (double)(int)(sum / (double)np + 0.5);
        for (size_t i = 0; i < np * cb; i++)
            d[i] = blend(mean, s[i], f);
    } else if (cb == 1) {
        memcpy(d, s, np);       /* saturation of a grey image: itself */
    } else {
        for (size_t i = 0; i < np; i++) {
            unsigned char l = luma(s[i], s[np + i], s[2 * np + i]);
            for (int k = 0; k < 3; k++)
                d[k * np + i] = blend(l, s[k * np + i], f);
        }
    }
    return SL_IMG_OK;
}

/* ---- tensors ---- */

/* d[i] = s[i] * a + c: the normalisation of one band, vectorised like
 * deint3 in image_codec.c */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((optimize("O3"), target_clones("default", "avx2")))
#endif
static void scale_band(const unsigned char *restrict s, float *restrict d, size_t n, float a, float c)
{
    for (size_t i = 0; i < n; i++)
        d[i] = (float)s[i] * a + c;
}

int sl_img_tensor(const struct sl_img *im, bool f32, enum sl_img_layout layout, const double *mean,
                  const double *std, int nmean, unsigned char **out, size_t *outlen, size_t *cap, char *msg,
                  size_t msz)
{
    size_t np = plane(im), B = (size_t)im->bands;
    size_t shape[3] = { B, (size_t)im->h, (size_t)im->w };
    int ndim = 3;
    bool chw = layout != SL_IMG_HWC;
    if (layout == SL_IMG_HWC) {
        shape[0] = (size_t)im->h;
        shape[1] = (size_t)im->w;
        shape[2] = B;
    } else if (layout == SL_IMG_HW) {
        if (B != 1) {
            snprintf(msg, msz, "layout HW is for one-band images; this one has %zu bands (use CHW or HWC)", B);
            return SL_IMG_EINVAL;
        }
        shape[0] = (size_t)im->h;
        shape[1] = (size_t)im->w;
        ndim = 2;
    }
    char hdr[SL_NPY_HDR_MAX];
    size_t hl = sl_npy_header(hdr, f32 ? SL_NPY_F32 : SL_NPY_U8, shape, ndim);
    size_t n = hl + np * B * (f32 ? 4 : 1);
    unsigned char *o = sl_img_scratch(im->S, n);
    if (!o) {
        char a[32];
        snprintf(msg, msz, "the tensor needs %s, more than the call's memory limit leaves",
                 sl_img_size_str((double)n, a, sizeof(a)));
        return SL_IMG_ENOMEM;
    }
    memcpy(o, hdr, hl);
    unsigned char *p = o + hl;
    if (!f32) {
        if (chw || B == 1)
            memcpy(p, im->px, np * B);
        else
            for (size_t i = 0; i < np; i++)
                for (size_t k = 0; k < B; k++)
                    p[i * B + k] = im->px[k * np + i];
    } else {
        float a[4], c[4];
        for (size_t k = 0; k < B; k++) {
            double m = nmean ? mean[nmean == 1 ? 0 : k] : 0, s = nmean ? std[nmean == 1 ? 0 : k] : 1;
            a[k] = (float)(1.0 / (255.0 * s));
            c[k] = (float)(-m / s);
        }
        float *f = (float *)p;  /* hl is a multiple of 64: aligned */
        if (chw) {
            for (size_t k = 0; k < B; k++)
                scale_band(im->px + k * np, f + k * np, np, a[k], c[k]);
        } else {
            for (size_t i = 0; i < np; i++)
                for (size_t k = 0; k < B; k++)
                    f[i * B + k] = im->px[k * np + i] * a[k] + c[k];
        }
    }
    *out = o;
    *outlen = *cap = n;
    return SL_IMG_OK;
}
