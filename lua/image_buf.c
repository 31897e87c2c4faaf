/* SPDX-License-Identifier: MIT
 * image_buf.c: the bottom of shale.image (image.h): pixel buffers charged to
 * the call's memory cap, a per-thread cache of large ones (so a stream of
 * images does not fault in fresh pages for every one), and the per-thread
 * state the codecs and the resampler keep (image_tls.h), freed when its
 * thread ends.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libswscale/swscale.h>
#include <turbojpeg.h>

#include "image.h"
#include "image_tls.h"

/* ---- per-thread state ---- */

static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void tls_free(void *p)
{
    struct sl_img_tls *t = p;
    if (t->tjd)
        tjDestroy(t->tjd);
    if (t->tjc)
        tjDestroy(t->tjc);
    for (int i = 0; i < SL_IMG_SWS; i++)
        if (t->sws[i].c)
            sws_freeContext(t->sws[i].c);
    for (int i = 0; i < SL_IMG_CACHE; i++)
        free(t->cache[i].p);
    free(t);
}

static void tls_init(void)
{
    pthread_key_create(&tls_key, tls_free);
}

struct sl_img_tls *sl_img_tls(void)
{
    pthread_once(&tls_once, tls_init);
    struct sl_img_tls *t = pthread_getspecific(tls_key);
    if (!t) {
        t = calloc(1, sizeof(*t));
        if (t && pthread_setspecific(tls_key, t) != 0) {
            free(t);
            t = NULL;
        }
    }
    return t;
}

/* ---- buffers ---- */

#define CACHE_MIN (256u << 10)   /* smaller buffers come from malloc's own bins */
#define CACHE_MAX (32u << 20)    /* bytes the cache of one thread may keep */

const char *sl_img_size_str(double n, char *buf, size_t sz)
{
    static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    int i = 0;
    while (n >= 1024 && i < 6) {
        n /= 1024;
        i++;
    }
    snprintf(buf, sz, i ? "%.1f %s" : "%.0f %s", n, u[i]);
    return buf;
}

static void *buf_get(size_t n)
{
    struct sl_img_tls *t = n >= CACHE_MIN ? sl_img_tls() : NULL;
    if (t) {
        int best = -1;
        for (int i = 0; i < SL_IMG_CACHE; i++)
            if (t->cache[i].p && t->cache[i].n >= n && t->cache[i].n <= 2 * n &&
                (best < 0 || t->cache[i].n < t->cache[best].n))
                best = i;
        if (best >= 0) {
            void *p = t->cache[best].p;
            t->cached -= t->cache[best].n;
            t->cache[best].p = NULL;
            return p;
        }
    }
    return malloc(n ? n : 1);
}

static void buf_put(void *p, size_t n)
{
    if (!p)
        return;
    struct sl_img_tls *t = n >= CACHE_MIN && n <= CACHE_MAX / 2 ? sl_img_tls() : NULL;
    if (t) {
        int slot = -1;
        for (int i = 0; i < SL_IMG_CACHE && slot < 0; i++)
            if (!t->cache[i].p)
                slot = i;
        while (slot < 0 || t->cached + n > CACHE_MAX) {    /* drop the oldest */
            int old = 0;
            for (int i = 1; i < SL_IMG_CACHE; i++)
                if (t->cache[i].p && (!t->cache[old].p || t->cache[i].stamp < t->cache[old].stamp))
                    old = i;
            if (!t->cache[old].p)
                break;
            free(t->cache[old].p);
            t->cached -= t->cache[old].n;
            t->cache[old].p = NULL;
            slot = old;
        }
        if (slot >= 0 && t->cached + n <= CACHE_MAX) {
            t->cache[slot].p = p;
            t->cache[slot].n = n;
            t->cache[slot].stamp = ++t->stamp;
            t->cached += n;
            return;
        }
    }
    free(p);
}

void *sl_img_scratch(struct sl_lua_state *S, size_t n)
{
    if (sl_lua_mem_charge(S, n) < 0)
        return NULL;
    void *p = buf_get(n);
    if (!p)
        sl_lua_mem_uncharge(S, n);
    return p;
}

void sl_img_scratch_free(struct sl_lua_state *S, void *p, size_t n)
{
    if (!p)
        return;
    buf_put(p, n);
    sl_lua_mem_uncharge(S, n);
}

int sl_img_alloc(struct sl_img *im, int w, int h, int bands, char *msg, size_t msz)
{
    if (w <= 0 || h <= 0 || w > SL_IMG_MAX_SIDE || h > SL_IMG_MAX_SIDE) {
        snprintf(msg, msz, "an image of %d x %d pixels is not possible (each side 1 to %d)", w, h, SL_IMG_MAX_SIDE);
        return SL_IMG_EINVAL;
    }
    size_t n = (size_t)w * (size_t)h * (size_t)bands;
    im->px = sl_img_scratch(im->S, n);
    if (!im->px) {
        char a[32];
        snprintf(msg, msz, "%d x %d pixels x %d bands need %s, more than the call's memory limit leaves", w, h,
                 bands, sl_img_size_str((double)n, a, sizeof(a)));
        return SL_IMG_ENOMEM;
    }
    im->w = w;
    im->h = h;
    im->bands = bands;
    im->charged = n;
    return SL_IMG_OK;
}

void sl_img_free(struct sl_img *im)
{
    if (im->px)
        sl_img_scratch_free(im->S, im->px, im->charged);
    im->px = NULL;
    im->charged = 0;
}
