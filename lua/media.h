/* SPDX-License-Identifier: MIT
 * media.h: shale.image and shale.audio, the pixel and sample helpers of
 * the sandbox (not for callers; they include sandbox.h). Implemented by
 * image.c (the Lua face of images), image_codec.c (decoders and encoders,
 * on TurboJPEG, libpng, libwebp, giflib, libtiff and libexif), image_ops.c
 * (geometry and colour, resampling on libswscale), image_buf.c (charged
 * buffers, per-thread state), audio.c (libsndfile, libsamplerate) and
 * media.c (the .npy writer and the option check both use). They call budget.c
 * and box.c only.
 *
 * Every byte of pixels or samples is charged to the call's memory cap
 * before it is allocated (a header announcing more than the cap is refused
 * before any decoding), C libraries read from memory only (no loader that
 * opens a file or a URL is reachable), nothing starts a thread, and long
 * loops check the call's deadline between rows.
 */
#ifndef SL_LUA_MEDIA_H
#define SL_LUA_MEDIA_H

#include <stddef.h>
#include <stdint.h>

#include "budget.h"

/** Push the shale.image table (read-only proxy). [..] -> [.. image]. May raise. */
void sl_lua_open_image(lua_State *L);
/** Push the shale.audio table (read-only proxy). [..] -> [.. audio]. May raise. */
void sl_lua_open_audio(lua_State *L);

/** Refuse the keys of the options table at idx (none or nil: nothing to
 * check) that are not in keys (NULL-ended): "<prefix><fn>: unknown option
 * "x" (options: ...)". A misspelt option that did nothing would be a
 * silent defect. [..] -> [..]. May raise. */
void sl_lua_opts_known(lua_State *L, int idx, const char *prefix, const char *fn, const char *const *keys);

/* ---- .npy ---------------------------------------------------------------- */

enum sl_npy_dtype { SL_NPY_U8, SL_NPY_F32, SL_NPY_I16 };

/** Write the .npy (format 1.0) header of a C-order array of `ndim` (1..4)
 * dimensions into out (at least SL_NPY_HDR_MAX bytes); the data, little
 * endian, follows it. @return the header length, a multiple of 64. */
#define SL_NPY_HDR_MAX 192
size_t sl_npy_header(char *out, enum sl_npy_dtype dt, const size_t *shape, int ndim);
/** Bytes per element of dt. */
size_t sl_npy_elsize(enum sl_npy_dtype dt);

#endif
