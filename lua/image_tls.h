/* SPDX-License-Identifier: MIT
 * image_tls.h: the per-thread state of shale.image (image_buf.c owns and
 * frees it; image_codec.c keeps its TurboJPEG handles and image_ops.c its
 * scaler contexts in it). One Lua call runs on one
 * thread, so nothing here is shared; the thread's end frees it.
 */
#ifndef SL_LUA_IMAGE_TLS_H
#define SL_LUA_IMAGE_TLS_H

#include <stddef.h>
#include <stdint.h>

#define SL_IMG_CACHE 6     /* large buffers kept for reuse */
#define SL_IMG_SWS 4       /* scaler contexts kept (one per geometry) */

struct SwsContext;

struct sl_img_tls {
    void *tjd, *tjc;       /* TurboJPEG decompressor, compressor */
    struct {
        void *p;
        size_t n;
        uint64_t stamp;
    } cache[SL_IMG_CACHE];
    size_t cached;
    uint64_t stamp;
    struct {
        struct SwsContext *c;
        int sw, sh, dw, dh, flags;
        uint64_t stamp;
    } sws[SL_IMG_SWS];
};

/** This thread's state, created on first use; NULL when out of memory. */
struct sl_img_tls *sl_img_tls(void);

#endif
