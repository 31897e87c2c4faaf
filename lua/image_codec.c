/* SPDX-License-Identifier: MIT
 * image_codec.c: shale.image's buffers, decoders and encoders (image.h).
 *
 * Every decoder reads from memory only: TurboJPEG (libjpeg-turbo) for JPEG,
 * libpng's simplified API for PNG, libwebp for WebP, giflib through a
 * memory reader for GIF (the first frame), libtiff through client
 * procedures for TIFF (no file, no memory map), libexif for the JPEG
 * orientation. The size a header announces is charged to the call's cap
 * before any pixel is decoded, so a pixel bomb costs a header parse.
 *
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gif_lib.h>
#include <libexif/exif-data.h>
#include <png.h>
#include <tiffio.h>
#include <turbojpeg.h>
#include <webp/decode.h>
#include <webp/encode.h>

#include "image.h"
#include "image_tls.h"

/* Refuse a decode whose pixels (plus the decoder's own buffer of `extra`
 * bytes per pixel) cannot fit: before anything is allocated. */
int sl_img_fits(const struct sl_img *im, int w, int h, int bands, int extra, char *msg, size_t msz)
{
    struct sl_lua_state *S = im->S;
    double need = (double)w * h * (bands + extra);
    double room = S->cap == SIZE_MAX ? 1e30 : (double)S->cap - (double)(S->live + S->ext);
    if (w <= 0 || h <= 0 || w > SL_IMG_MAX_SIDE || h > SL_IMG_MAX_SIDE) {
        snprintf(msg, msz, "the header announces %d x %d pixels (each side must be 1 to %d)", w, h,
                 SL_IMG_MAX_SIDE);
        return SL_IMG_EINVAL;
    }
    if (need > room) {
        char a[32], b[32];
        snprintf(msg, msz, "the header announces %d x %d pixels, which need %s to decode; the call's memory "
                 "limit leaves %s (raise the ETL's mem_limit for images this large)", w, h,
                 sl_img_size_str(need, a, sizeof(a)), sl_img_size_str(room > 0 ? room : 0, b, sizeof(b)));
        return SL_IMG_ENOMEM;
    }
    return SL_IMG_OK;
}

/* ---- TurboJPEG handles ---- */

/* This thread's decompressor, made on first use; NULL with the message
 * said (out of memory). */
static tjhandle tj_decompressor(char *msg, size_t msz)
{
    struct sl_img_tls *t = sl_img_tls();
    if (t && !t->tjd)
        t->tjd = tjInitDecompress();
    if (!t || !t->tjd) {
        snprintf(msg, msz, "cannot start the JPEG decoder (out of memory)");
        return NULL;
    }
    return t->tjd;
}

/* After a failed call: a fresh handle next time (the failure can leave
 * this one unusable). */
static void tj_drop(void **h)
{
    tjDestroy(*h);
    *h = NULL;
}

/* ---- format detection and headers ---- */

const char *sl_img_fmt_name(enum sl_img_fmt f)
{
    static const char *const n[] = { "unknown", "jpeg", "png", "webp", "gif", "tiff" };
    return n[f];
}

static enum sl_img_fmt sniff(const unsigned char *p, size_t n)
{
    if (n >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff)
        return SL_IMG_JPEG;
    if (n >= 8 && !memcmp(p, "\x89PNG\r\n\x1a\n", 8))
        return SL_IMG_PNG;
    if (n >= 12 && !memcmp(p, "RIFF", 4) && !memcmp(p + 8, "WEBP", 4))
        return SL_IMG_WEBP;
    if (n >= 6 && (!memcmp(p, "GIF87a", 6) || !memcmp(p, "GIF89a", 6)))
        return SL_IMG_GIF;
    if (n >= 4 && (!memcmp(p, "II*\0", 4) || !memcmp(p, "MM\0*", 4)))
        return SL_IMG_TIFF;
    return SL_IMG_UNKNOWN;
}

static int jpeg_orientation(const unsigned char *p, size_t n)
{
    /* libexif finds the APP1 segment itself; only look when there is one
     * before the image data (a cheap marker walk keeps plain JPEGs fast) */
    size_t i = 2;
    bool app1 = false;
    while (i + 4 <= n && p[i] == 0xff) {
        unsigned m = p[i + 1];
        if (m == 0xda || m == 0xd9)
            break;
        if (m == 0xe1) {
            app1 = true;
            break;
        }
        i += 2 + ((size_t)p[i + 2] << 8 | p[i + 3]);
    }
    if (!app1 || n > UINT32_MAX)
        return 1;
    ExifData *ed = exif_data_new_from_data(p, (unsigned)n);
    if (!ed)
        return 1;
    int o = 1;
    ExifEntry *e = exif_data_get_entry(ed, EXIF_TAG_ORIENTATION);
    if (e && e->format == EXIF_FORMAT_SHORT && e->components >= 1 && e->size >= 2)
        o = exif_get_short(e->data, exif_data_get_byte_order(ed));
    exif_data_unref(ed);
    return o >= 1 && o <= 8 ? o : 1;
}

/* TIFF from memory: the client procedures */
struct tmem {
    const unsigned char *p;
    size_t n, off;
    char err[200];
};

static tmsize_t t_read(thandle_t h, void *buf, tmsize_t sz)
{
    struct tmem *m = (struct tmem *)h;
    size_t k = sz < 0 ? 0 : (size_t)sz;
    if (m->off >= m->n)
        return 0;
    if (k > m->n - m->off)
        k = m->n - m->off;
    memcpy(buf, m->p + m->off, k);
    m->off += k;
    return (tmsize_t)k;
}

static tmsize_t t_write(thandle_t h, void *buf, tmsize_t sz)
{
    return -1;
}

static toff_t t_seek(thandle_t h, toff_t off, int whence)
{
    struct tmem *m = (struct tmem *)h;
    uint64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->off : m->n;
    uint64_t to = base + off;
    if (to > (uint64_t)1 << 62)
        return (toff_t)-1;
    m->off = (size_t)to;
    return to;
}

static int t_close(thandle_t h)
{
    return 0;
}

static toff_t t_size(thandle_t h)
{
    return ((struct tmem *)h)->n;
}

static int t_map(thandle_t h, void **base, toff_t *size)
{
    return 0;
}

static void t_unmap(thandle_t h, void *base, toff_t size)
{
}

static int t_error(TIFF *tif, void *ud, const char *module, const char *fmt, va_list ap)
{
    struct tmem *m = ud;
    if (!m->err[0])
        vsnprintf(m->err, sizeof(m->err), fmt, ap);
    return 1;
}

static int t_warn(TIFF *tif, void *ud, const char *module, const char *fmt, va_list ap)
{
    return 1;
}

static TIFF *tiff_open(struct tmem *m, size_t max_alloc)
{
    TIFFOpenOptions *o = TIFFOpenOptionsAlloc();
    if (!o)
        return NULL;
    TIFFOpenOptionsSetErrorHandlerExtR(o, t_error, m);
    TIFFOpenOptionsSetWarningHandlerExtR(o, t_warn, m);
    if (max_alloc)
        TIFFOpenOptionsSetMaxSingleMemAlloc(o, (tmsize_t)SL_MIN(max_alloc, (size_t)INT64_MAX));
    TIFF *t = TIFFClientOpenExt("memory", "rm", (thandle_t)m, t_read, t_write, t_seek, t_close, t_size, t_map,
                                t_unmap, o);
    TIFFOpenOptionsFree(o);
    return t;
}

static int probe(const unsigned char *p, size_t n, struct sl_img_info *info, char *msg, size_t msz);

/* libpng's simplified reader on the bytes: 0, or -1 with the message said
 * (nothing to free then). */
static int png_open(png_image *pi, const unsigned char *p, size_t n, char *msg, size_t msz)
{
    memset(pi, 0, sizeof(*pi));
    pi->version = PNG_IMAGE_VERSION;
    if (png_image_begin_read_from_memory(pi, p, n))
        return 0;
    snprintf(msg, msz, "not a valid PNG: %s", pi->message);
    png_image_free(pi);
    return -1;
}

int sl_img_probe(const unsigned char *p, size_t n, struct sl_img_info *info, char *msg, size_t msz)
{
    int rc = probe(p, n, info, msg, msz);
    if (!rc && (info->w < 1 || info->h < 1 || info->w > SL_IMG_MAX_SIDE || info->h > SL_IMG_MAX_SIDE)) {
        static const char *const up[] = { "image", "JPEG", "PNG", "WebP", "GIF", "TIFF" };
        snprintf(msg, msz, "corrupt or unsupported %s: the header announces %d x %d pixels (each side must be 1 "
                 "to %d)", up[info->fmt], info->w, info->h, SL_IMG_MAX_SIDE);
        rc = SL_IMG_EINVAL;
    }
    return rc;
}

static int probe(const unsigned char *p, size_t n, struct sl_img_info *info, char *msg, size_t msz)
{
    memset(info, 0, sizeof(*info));
    info->orient = 1;
    info->bands = 3;
    info->fmt = sniff(p, n);
    switch (info->fmt) {
    case SL_IMG_JPEG: {
        tjhandle tj = tj_decompressor(msg, msz);
        if (!tj)
            return SL_IMG_ENOMEM;
        int w = 0, h = 0, ss = 0, cs = 0;
        if (n > (size_t)UINT32_MAX / 2 || tjDecompressHeader3(tj, p, (unsigned long)n, &w, &h, &ss, &cs) != 0) {
            snprintf(msg, msz, "not a valid JPEG: %s", tjGetErrorStr2(tj));
            tj_drop(&sl_img_tls()->tjd);
            return SL_IMG_EINVAL;
        }
        info->w = w;
        info->h = h;
        info->bands = cs == TJCS_GRAY ? 1 : 3;
        info->cmyk = cs == TJCS_CMYK || cs == TJCS_YCCK;
        info->orient = jpeg_orientation(p, n);
        return SL_IMG_OK;
    }
    case SL_IMG_PNG: {
        png_image im;
        if (png_open(&im, p, n, msg, msz))
            return SL_IMG_EINVAL;
        info->w = (int)SL_MIN(im.width, (png_uint_32)INT32_MAX);
        info->h = (int)SL_MIN(im.height, (png_uint_32)INT32_MAX);
        info->bands = (im.format & PNG_FORMAT_FLAG_ALPHA) ? 4 : (im.format & PNG_FORMAT_FLAG_COLOR) ? 3 : 1;
        png_image_free(&im);
        return SL_IMG_OK;
    }
    case SL_IMG_WEBP: {
        WebPBitstreamFeatures f;
        if (WebPGetFeatures(p, n, &f) != VP8_STATUS_OK) {
            snprintf(msg, msz, "not a valid WebP (its header cannot be read)");
            return SL_IMG_EINVAL;
        }
        if (f.has_animation) {
            snprintf(msg, msz, "animated WebP is not supported (save its first frame as a still WebP)");
            return SL_IMG_EINVAL;
        }
        info->w = f.width;
        info->h = f.height;
        info->bands = f.has_alpha ? 4 : 3;
        return SL_IMG_OK;
    }
    case SL_IMG_GIF:
        if (n < 13) {
            snprintf(msg, msz, "not a valid GIF: %zu bytes, shorter than its header", n);
            return SL_IMG_EINVAL;
        }
        info->w = p[6] | p[7] << 8;
        info->h = p[8] | p[9] << 8;
        info->bands = 3;
        return SL_IMG_OK;
    case SL_IMG_TIFF: {
        struct tmem m = { p, n, 0, "" };
        TIFF *t = tiff_open(&m, 1u << 20);
        if (!t) {
            snprintf(msg, msz, "not a valid TIFF: %s", m.err[0] ? m.err : "its header cannot be read");
            return SL_IMG_EINVAL;
        }
        uint32_t w = 0, h = 0;
        uint16_t spp = 1, photo = 0, extra = 0, *ex = NULL;
        TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w);
        TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h);
        TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
        TIFFGetField(t, TIFFTAG_PHOTOMETRIC, &photo);
        TIFFGetFieldDefaulted(t, TIFFTAG_EXTRASAMPLES, &extra, &ex);
        TIFFClose(t);
        info->w = (int)SL_MIN(w, (uint32_t)INT32_MAX);
        info->h = (int)SL_MIN(h, (uint32_t)INT32_MAX);
        info->bands = extra ? 4 : (photo == PHOTOMETRIC_MINISBLACK || photo == PHOTOMETRIC_MINISWHITE) ? 1 : 3;
        info->cmyk = photo == PHOTOMETRIC_SEPARATED;
        return SL_IMG_OK;
    }
    default: {
        char hex[40] = "";
        for (size_t i = 0; i < SL_MIN(n, (size_t)8); i++)
            snprintf(hex + 3 * i, sizeof(hex) - 3 * i, "%02x ", p[i]);
        if (!n)
            snprintf(msg, msz, "the data is empty (0 bytes): not an image");
        else
            snprintf(msg, msz, "not an image in a format shale.image reads (first bytes %s): JPEG, PNG, WebP, "
                     "GIF and TIFF are supported", hex);
        return SL_IMG_EINVAL;
    }
    }
}

/* ---- decoders into planar 8-bit ---- */

/* RGB to three planes: the hot loop after every colour decode. Built for
 * SSSE3 and AVX2 as well, picked at load time, where the compiler turns
 * the stride-3 loads into shuffles (8x the scalar loop). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((optimize("O3"), target_clones("default", "ssse3", "avx2")))
#endif
static void deint3(const unsigned char *restrict s, unsigned char *restrict r, unsigned char *restrict g,
                   unsigned char *restrict b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        r[i] = s[3 * i];
        g[i] = s[3 * i + 1];
        b[i] = s[3 * i + 2];
    }
}

/* Interleaved (ps bytes per pixel: 1 grey, 3 RGB, 4 RGBA or CMYK) to the
 * image's planes, converting to its band count. */
static int planarise(struct sl_img *im, const unsigned char *src, int ps, bool cmyk)
{
    size_t np = (size_t)im->w * im->h;
    unsigned char *r = im->px, *g = r + np, *b = g + np, *a = b + np;
    int B = im->bands;
    if (ps == 3 && B == 3) {
        for (int y = 0; y < im->h; y += 256) {
            if (y && im->L && sl_lua_deadline_passed(im->L))
                return SL_IMG_ETIME;
            size_t o = (size_t)y * im->w, n = (size_t)SL_MIN(256, im->h - y) * im->w;
            deint3(src + 3 * o, r + o, g + o, b + o, n);
        }
        return SL_IMG_OK;
    }
    for (int y = 0; y < im->h; y++) {
        if ((y & 255) == 255 && im->L && sl_lua_deadline_passed(im->L))
            return SL_IMG_ETIME;
        const unsigned char *s = src + (size_t)y * im->w * ps;
        size_t o = (size_t)y * im->w;
        if (ps == 3 && B == 3) {
            for (int x = 0; x < im->w; x++, s += 3) {
                r[o + x] = s[0];
                g[o + x] = s[1];
                b[o + x] = s[2];
            }
        } else if (ps == 1) {
            for (int k = 0; k < SL_MIN(B, 3); k++)
                memcpy(im->px + k * np + o, s, (size_t)im->w);
            if (B == 4)
                memset(a + o, 255, (size_t)im->w);
        } else if (cmyk) {      /* Adobe CMYK (stored inverted): R = C * K / 255 */
            for (int x = 0; x < im->w; x++, s += 4) {
                unsigned R = (s[0] * s[3] + 127) / 255, G = (s[1] * s[3] + 127) / 255, Bl = (s[2] * s[3] + 127) / 255;
                if (B == 1) {
                    r[o + x] = (unsigned char)((R * 19595 + G * 38470 + Bl * 7471 + 0x8000) >> 16);
                } else {
                    r[o + x] = (unsigned char)R;
                    g[o + x] = (unsigned char)G;
                    b[o + x] = (unsigned char)Bl;
                    if (B == 4)
                        a[o + x] = 255;
                }
            }
        } else {                /* 3 or 4 bytes to 1, 3 or 4 bands */
            for (int x = 0; x < im->w; x++, s += ps) {
                if (B == 1) {
                    r[o + x] = (unsigned char)((s[0] * 19595 + s[1] * 38470 + s[2] * 7471 + 0x8000) >> 16);
                    continue;
                }
                r[o + x] = s[0];
                g[o + x] = s[1];
                b[o + x] = s[2];
                if (B == 4)
                    a[o + x] = ps == 4 ? s[3] : 255;
            }
        }
    }
    return SL_IMG_OK;
}

/* The last step of every decoder: the image's planes from the decoder's
 * interleaved buffer, which is then given back (it was sz bytes). */
static int finish(struct sl_img *im, int w, int h, int bands, unsigned char *buf, size_t sz, int ps, bool cmyk,
                  char *msg, size_t msz)
{
    int rc = sl_img_alloc(im, w, h, bands, msg, msz);
    if (!rc)
        rc = planarise(im, buf, ps, cmyk);
    sl_img_scratch_free(im->S, buf, sz);
    return rc;
}

/* The decoder's interleaved buffer, or NULL with the message said. */
static unsigned char *scratch(struct sl_img *im, size_t sz, int w, int h, char *msg, size_t msz)
{
    unsigned char *buf = sl_img_scratch(im->S, sz);
    if (!buf)
        snprintf(msg, msz, "not enough memory to decode %d x %d pixels (memory limit)", w, h);
    return buf;
}

static int out_bands(const struct sl_img_dopts *o, int native)
{
    if (o->grey)
        return 1;
    return native == 4 && o->alpha ? 4 : 3;
}

static int decode_jpeg(struct sl_img *im, const unsigned char *p, size_t n, const struct sl_img_info *info,
                       const struct sl_img_dopts *o, char *msg, size_t msz)
{
    tjhandle tj = tj_decompressor(msg, msz);
    if (!tj)
        return SL_IMG_ENOMEM;
    int w = info->w, h = info->h;
    /* shrink on load: the DCT scales SIMD makes fast (1/2, 1/4, 1/8),
     * keeping twice the requested size so the resampler still filters */
    if (o->min_w > 0 && o->min_h > 0) {
        for (int d = 8; d >= 2; d /= 2) {
            tjscalingfactor f = { 1, d };
            if (TJSCALED(info->w, f) >= 2 * o->min_w && TJSCALED(info->h, f) >= 2 * o->min_h) {
                w = TJSCALED(info->w, f);
                h = TJSCALED(info->h, f);
                break;
            }
        }
    }
    int bands = out_bands(o, 3);
    int pf = info->cmyk ? TJPF_CMYK : (info->bands == 1 || bands == 1) ? TJPF_GRAY : TJPF_RGB;
    int ps = tjPixelSize[pf];
    int rc = sl_img_fits(im, w, h, bands, ps, msg, msz);
    if (rc)
        return rc;
    size_t sz = (size_t)w * h * ps;
    unsigned char *buf = scratch(im, sz, w, h, msg, msz);
    if (!buf)
        return SL_IMG_ENOMEM;
    /* libjpeg's warnings: data cut short ("Premature end of JPEG file") fails
     * unless lenient, as PIL's "image file is truncated" does; the others
     * (extraneous bytes before a marker, and the like) decode, as in PIL */
    bool bad = tjDecompress2(tj, p, (unsigned long)n, buf, w, 0, h, pf, 0) != 0;
    if (bad && tjGetErrorCode(tj) == TJERR_WARNING)
        bad = !o->lenient && strstr(tjGetErrorStr2(tj), "Premature end") != NULL;
    if (bad) {
        snprintf(msg, msz, "corrupt or truncated JPEG: %s", tjGetErrorStr2(tj));
        tj_drop(&sl_img_tls()->tjd);
        sl_img_scratch_free(im->S, buf, sz);
        return SL_IMG_EINVAL;
    }
    return finish(im, w, h, bands, buf, sz, ps, info->cmyk, msg, msz);
}

static int decode_png(struct sl_img *im, const unsigned char *p, size_t n, const struct sl_img_info *info,
                      const struct sl_img_dopts *o, char *msg, size_t msz)
{
    int bands = out_bands(o, info->bands);
    int ps = bands == 1 ? 1 : info->bands == 4 ? 4 : 3;
    int rc = sl_img_fits(im, info->w, info->h, bands, ps, msg, msz);
    if (rc)
        return rc;
    png_image pi;
    if (png_open(&pi, p, n, msg, msz))
        return SL_IMG_EINVAL;
    /* A 16-bit file read into 8 bits would be taken as linear light and
     * gamma-encoded; read its samples as they are (16-bit "linear", which
     * libpng leaves alone) and keep the high part, as PIL and OpenCV do. */
    bool wide = (pi.format & PNG_FORMAT_FLAG_LINEAR) != 0;
    pi.format = (ps == 1 ? PNG_FORMAT_GRAY : ps == 4 ? PNG_FORMAT_RGBA : PNG_FORMAT_RGB) |
                (wide ? PNG_FORMAT_FLAG_LINEAR : 0);
    size_t sz = PNG_IMAGE_SIZE(pi);
    unsigned char *buf = sl_img_scratch(im->S, sz);
    if (!buf) {
        png_image_free(&pi);
        snprintf(msg, msz, "not enough memory to decode %d x %d pixels (memory limit)", info->w, info->h);
        return SL_IMG_ENOMEM;
    }
    /* grey output of a colour image with alpha: composite on black, as
     * the alpha is dropped anyway */
    png_color bg = { 0, 0, 0 };
    if (!png_image_finish_read(&pi, &bg, buf, 0, NULL)) {
        snprintf(msg, msz, "corrupt or truncated PNG: %s", pi.message);
        png_image_free(&pi);
        sl_img_scratch_free(im->S, buf, sz);
        return SL_IMG_EINVAL;
    }
    png_image_free(&pi);
    if (wide) {     /* to 8 bits in place (linear RGBA comes premultiplied: undo it) */
        const uint16_t *w16 = (const uint16_t *)buf;
        for (size_t i = 0, np = (size_t)info->w * info->h; i < np; i++) {
            unsigned a = ps == 4 ? w16[i * 4 + 3] : 65535;
            for (int k = 0; k < ps; k++) {
                unsigned v = w16[i * ps + k];
                if (ps == 4 && k < 3)
                    v = a ? (unsigned)SL_MIN((uint64_t)v * 65535 / a, 65535) : 0;
                buf[i * ps + k] = (unsigned char)((v + 128) / 257);
            }
        }
    }
    return finish(im, info->w, info->h, bands, buf, sz, ps, false, msg, msz);
}

static int decode_webp(struct sl_img *im, const unsigned char *p, size_t n, const struct sl_img_info *info,
                       const struct sl_img_dopts *o, char *msg, size_t msz)
{
    int bands = out_bands(o, info->bands);
    int ps = info->bands == 4 ? 4 : 3;
    int rc = sl_img_fits(im, info->w, info->h, bands, ps, msg, msz);
    if (rc)
        return rc;
    size_t stride = (size_t)info->w * ps, sz = stride * info->h;
    unsigned char *buf = scratch(im, sz, info->w, info->h, msg, msz);
    if (!buf)
        return SL_IMG_ENOMEM;
    uint8_t *ok = ps == 4 ? WebPDecodeRGBAInto(p, n, buf, sz, (int)stride) : WebPDecodeRGBInto(p, n, buf, sz, (int)stride);
    if (!ok) {
        snprintf(msg, msz, "corrupt or truncated WebP (libwebp could not decode it)");
        sl_img_scratch_free(im->S, buf, sz);
        return SL_IMG_EINVAL;
    }
    return finish(im, info->w, info->h, bands, buf, sz, ps, false, msg, msz);
}

struct gmem {
    const unsigned char *p;
    size_t n, off;
};

static int g_read(GifFileType *g, GifByteType *buf, int len)
{
    struct gmem *m = g->UserData;
    size_t k = len < 0 ? 0 : (size_t)len;
    if (k > m->n - m->off)
        k = m->n - m->off;
    memcpy(buf, m->p + m->off, k);
    m->off += k;
    return (int)k;
}

static int decode_gif(struct sl_img *im, const unsigned char *p, size_t n, const struct sl_img_info *info,
                      const struct sl_img_dopts *o, char *msg, size_t msz)
{
    int bands = out_bands(o, 4);  /* a transparent index gives alpha */
    int rc = sl_img_fits(im, info->w, info->h, bands, 4, msg, msz);
    if (rc)
        return rc;
    struct gmem m = { p, n, 0 };
    int gerr = 0;
    GifFileType *g = DGifOpen(&m, g_read, &gerr);
    if (!g) {
        snprintf(msg, msz, "not a valid GIF: %s", GifErrorString(gerr));
        return SL_IMG_EINVAL;
    }
    int W = g->SWidth, H = g->SHeight, transp = -1;
    unsigned char *rgba = NULL, *line = NULL;
    size_t sz = 0, lsz = 0;
    rc = SL_IMG_EINVAL;
    snprintf(msg, msz, "not a valid GIF: it holds no image");
    for (int guard = 0; guard < 100000; guard++) {
        GifRecordType rt;
        if (DGifGetRecordType(g, &rt) == GIF_ERROR) {
            snprintf(msg, msz, "corrupt or truncated GIF: %s", GifErrorString(g->Error));
            break;
        }
        if (rt == EXTENSION_RECORD_TYPE) {
            int code;
            GifByteType *ext;
            if (DGifGetExtension(g, &code, &ext) == GIF_ERROR) {
                snprintf(msg, msz, "corrupt or truncated GIF: %s", GifErrorString(g->Error));
                break;
            }
            if (code == GRAPHICS_EXT_FUNC_CODE && ext && ext[0] >= 4 && (ext[1] & 1))
                transp = ext[4];
            while (ext && DGifGetExtensionNext(g, &ext) != GIF_ERROR && ext)
                ;
            continue;
        }
        if (rt != IMAGE_DESC_RECORD_TYPE)
            break;          /* TERMINATE_RECORD_TYPE: no image */
        if (DGifGetImageDesc(g) == GIF_ERROR) {
            snprintf(msg, msz, "corrupt or truncated GIF: %s", GifErrorString(g->Error));
            break;
        }
        GifImageDesc *d = &g->Image;
        ColorMapObject *cm = d->ColorMap ? d->ColorMap : g->SColorMap;
        if (W <= 0 || H <= 0) {
            W = d->Width;
            H = d->Height;
        }
        if (!cm || d->Width <= 0 || d->Height <= 0 || (rc = sl_img_fits(im, W, H, bands, 4, msg, msz)) != 0) {
            if (!cm || d->Width <= 0 || d->Height <= 0)
                snprintf(msg, msz, "corrupt GIF: its first frame has no colour map or no size");
            rc = rc ? rc : SL_IMG_EINVAL;
            break;
        }
        rc = SL_IMG_ENOMEM;
        snprintf(msg, msz, "not enough memory to decode %d x %d pixels (memory limit)", W, H);
        sz = (size_t)W * H * 4;
        lsz = (size_t)d->Width;
        if (!(rgba = sl_img_scratch(im->S, sz)) || !(line = sl_img_scratch(im->S, lsz)))
            break;
        memset(rgba, 0, sz);
        static const int ioff[] = { 0, 4, 2, 1 }, istep[] = { 8, 8, 4, 2 };
        int passes = d->Interlace ? 4 : 1;
        rc = SL_IMG_OK;
        for (int pass = 0; pass < passes && !rc; pass++) {
            for (int y = d->Interlace ? ioff[pass] : 0; y < d->Height; y += d->Interlace ? istep[pass] : 1) {
                if (DGifGetLine(g, line, d->Width) == GIF_ERROR) {
                    snprintf(msg, msz, "corrupt or truncated GIF: %s", GifErrorString(g->Error));
                    rc = SL_IMG_EINVAL;
                    break;
                }
                int Y = d->Top + y;
                if (Y < 0 || Y >= H)
                    continue;
                for (int x = 0; x < d->Width; x++) {
                    int X = d->Left + x, c = line[x];
                    if (X < 0 || X >= W || c == transp || c >= cm->ColorCount)
                        continue;
                    unsigned char *q = rgba + ((size_t)Y * W + X) * 4;
                    q[0] = cm->Colors[c].Red;
                    q[1] = cm->Colors[c].Green;
                    q[2] = cm->Colors[c].Blue;
                    q[3] = 255;
                }
            }
        }
        break;
    }
    DGifCloseFile(g, &gerr);
    if (!rc) {
        rc = sl_img_alloc(im, W, H, bands, msg, msz);
        if (!rc)
            rc = planarise(im, rgba, 4, false);
    }
    sl_img_scratch_free(im->S, line, lsz);
    sl_img_scratch_free(im->S, rgba, sz);
    return rc;
}

static int decode_tiff(struct sl_img *im, const unsigned char *p, size_t n, const struct sl_img_info *info,
                       const struct sl_img_dopts *o, char *msg, size_t msz)
{
    int bands = out_bands(o, info->bands);
    int rc = sl_img_fits(im, info->w, info->h, bands, 4, msg, msz);
    if (rc)
        return rc;
    struct sl_lua_state *S = im->S;
    size_t room = S->cap == SIZE_MAX ? 0 : S->cap - SL_MIN(S->cap, S->live + S->ext);
    struct tmem m = { p, n, 0, "" };
    TIFF *t = tiff_open(&m, room ? room : (size_t)256 << 20);
    if (!t) {
        snprintf(msg, msz, "not a valid TIFF: %s", m.err[0] ? m.err : "its header cannot be read");
        return SL_IMG_EINVAL;
    }
    size_t sz = (size_t)info->w * info->h * 4;
    uint32_t *ras = sl_img_scratch(S, sz);
    if (!ras) {
        TIFFClose(t);
        snprintf(msg, msz, "not enough memory to decode %d x %d pixels (memory limit)", info->w, info->h);
        return SL_IMG_ENOMEM;
    }
    if (!TIFFReadRGBAImageOriented(t, (uint32_t)info->w, (uint32_t)info->h, ras, ORIENTATION_TOPLEFT, 0)) {
        snprintf(msg, msz, "corrupt, truncated or unsupported TIFF: %s", m.err[0] ? m.err : "libtiff could not "
                 "read its pixels");
        TIFFClose(t);
        sl_img_scratch_free(S, ras, sz);
        return SL_IMG_EINVAL;
    }
    TIFFClose(t);
    /* ABGR words to RGBA bytes, in place */
    unsigned char *b = (unsigned char *)ras;
    for (size_t i = 0, np = (size_t)info->w * info->h; i < np; i++) {
        uint32_t v = ras[i];
        b[4 * i] = (unsigned char)TIFFGetR(v);
        b[4 * i + 1] = (unsigned char)TIFFGetG(v);
        b[4 * i + 2] = (unsigned char)TIFFGetB(v);
        b[4 * i + 3] = (unsigned char)TIFFGetA(v);
    }
    return finish(im, info->w, info->h, bands, b, sz, 4, false, msg, msz);
}

int sl_img_decode(struct sl_img *out, const unsigned char *p, size_t n, const struct sl_img_info *info,
                  const struct sl_img_dopts *o, char *msg, size_t msz)
{
    int rc;
    switch (info->fmt) {
    case SL_IMG_JPEG: rc = decode_jpeg(out, p, n, info, o, msg, msz); break;
    case SL_IMG_PNG:  rc = decode_png(out, p, n, info, o, msg, msz); break;
    case SL_IMG_WEBP: rc = decode_webp(out, p, n, info, o, msg, msz); break;
    case SL_IMG_GIF:  rc = decode_gif(out, p, n, info, o, msg, msz); break;
    case SL_IMG_TIFF: rc = decode_tiff(out, p, n, info, o, msg, msz); break;
    default:
        snprintf(msg, msz, "not an image shale.image reads");
        return SL_IMG_EINVAL;
    }
    if (rc) {
        sl_img_free(out);
        return rc;
    }
    if (o->orient && info->orient > 1 && (rc = sl_img_orient(out, info->orient, msg, msz)) != 0)
        sl_img_free(out);
    return rc;
}

/* ---- encoders ---- */

/* The image interleaved into a scratch buffer (bands 1, 3 or 4 bytes per
 * pixel; drop_alpha gives 3 from 4). */
static unsigned char *interleave(const struct sl_img *im, bool drop_alpha, int *ps, size_t *sz)
{
    int B = im->bands == 4 && drop_alpha ? 3 : im->bands;
    size_t np = (size_t)im->w * im->h;
    *ps = B;
    *sz = np * B;
    unsigned char *d = sl_img_scratch(im->S, *sz);
    if (!d)
        return NULL;
    if (B == 1) {
        memcpy(d, im->px, np);
        return d;
    }
    for (size_t i = 0; i < np; i++)
        for (int k = 0; k < B; k++)
            d[i * B + k] = im->px[k * np + i];
    return d;
}

int sl_img_encode(const struct sl_img *im, enum sl_img_fmt fmt, int quality, unsigned char **out, size_t *outlen,
                  size_t *cap, char *msg, size_t msz)
{
    struct sl_lua_state *S = im->S;
    int ps;
    size_t isz;
    *out = NULL;
    *outlen = *cap = 0;
    unsigned char *il = interleave(im, fmt == SL_IMG_JPEG, &ps, &isz);
    if (!il) {
        snprintf(msg, msz, "not enough memory to encode %d x %d pixels (memory limit)", im->w, im->h);
        return SL_IMG_ENOMEM;
    }
    int rc = SL_IMG_OK;
    if (fmt == SL_IMG_JPEG) {
        struct sl_img_tls *t = sl_img_tls();
        if (t && !t->tjc)
            t->tjc = tjInitCompress();
        int ss = ps == 1 ? TJSAMP_GRAY : TJSAMP_420;
        unsigned long bound = tjBufSize(im->w, im->h, ss);
        unsigned char *o = t && t->tjc && bound != (unsigned long)-1 ? sl_img_scratch(S, bound) : NULL;
        unsigned long len = bound;
        if (!o) {
            snprintf(msg, msz, "not enough memory to encode %d x %d pixels as JPEG (memory limit)", im->w, im->h);
            rc = SL_IMG_ENOMEM;
        } else if (tjCompress2(t->tjc, il, im->w, 0, im->h, ps == 1 ? TJPF_GRAY : TJPF_RGB, &o, &len, ss, quality,
                               TJFLAG_NOREALLOC) != 0) {
            snprintf(msg, msz, "JPEG encoding failed: %s", tjGetErrorStr2(t->tjc));
            tj_drop(&t->tjc);
            sl_img_scratch_free(S, o, bound);
            rc = SL_IMG_EINVAL;
        } else {
            *out = o;
            *outlen = len;
            *cap = bound;
        }
    } else if (fmt == SL_IMG_PNG) {
        png_image pi;
        memset(&pi, 0, sizeof(pi));
        pi.version = PNG_IMAGE_VERSION;
        pi.width = (png_uint_32)im->w;
        pi.height = (png_uint_32)im->h;
        pi.format = ps == 1 ? PNG_FORMAT_GRAY : ps == 4 ? PNG_FORMAT_RGBA : PNG_FORMAT_RGB;
        if (quality < 5)
            pi.flags |= PNG_IMAGE_FLAG_FAST;
        size_t bound = PNG_IMAGE_PNG_SIZE_MAX(pi);
        unsigned char *o = sl_img_scratch(S, bound);
        png_alloc_size_t len = bound;
        if (!o) {
            snprintf(msg, msz, "not enough memory to encode %d x %d pixels as PNG (memory limit)", im->w, im->h);
            rc = SL_IMG_ENOMEM;
        } else if (!png_image_write_to_memory(&pi, o, &len, 0, il, 0, NULL)) {
            snprintf(msg, msz, "PNG encoding failed: %s", pi.message);
            sl_img_scratch_free(S, o, bound);
            rc = SL_IMG_EINVAL;
        } else {
            *out = o;
            *outlen = len;
            *cap = bound;
        }
        png_image_free(&pi);
    } else {    /* WebP: grey goes as RGB */
        unsigned char *rgb = il;
        size_t rsz = isz;
        if (ps == 1) {
            rsz = isz * 3;
            rgb = sl_img_scratch(S, rsz);
            if (rgb)
                for (size_t i = 0; i < isz; i++)
                    rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = il[i];
        }
        uint8_t *wo = NULL;
        size_t len = 0;
        if (!rgb) {
            snprintf(msg, msz, "not enough memory to encode %d x %d pixels as WebP (memory limit)", im->w, im->h);
            rc = SL_IMG_ENOMEM;
        } else {
            int bps = ps == 4 ? 4 : 3;
            if (quality > 100)
                len = bps == 4 ? WebPEncodeLosslessRGBA(rgb, im->w, im->h, im->w * 4, &wo)
                               : WebPEncodeLosslessRGB(rgb, im->w, im->h, im->w * 3, &wo);
            else
                len = bps == 4 ? WebPEncodeRGBA(rgb, im->w, im->h, im->w * 4, (float)quality, &wo)
                               : WebPEncodeRGB(rgb, im->w, im->h, im->w * 3, (float)quality, &wo);
            unsigned char *o = len ? sl_img_scratch(S, len) : NULL;
            if (!len) {
                snprintf(msg, msz, "WebP encoding failed (libwebp refused %d x %d pixels)", im->w, im->h);
                rc = SL_IMG_EINVAL;
            } else if (!o) {
                snprintf(msg, msz, "not enough memory for the WebP output (memory limit)");
                rc = SL_IMG_ENOMEM;
            } else {
                memcpy(o, wo, len);
                *out = o;
                *outlen = *cap = len;
            }
            WebPFree(wo);
        }
        if (rgb && rgb != il)
            sl_img_scratch_free(S, rgb, rsz);
    }
    sl_img_scratch_free(S, il, isz);
    return rc;
}
