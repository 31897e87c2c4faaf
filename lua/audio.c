/* SPDX-License-Identifier: MIT
 * audio.c: shale.audio, the sample helpers of the sandbox: decoding from a
 * Lua string through libsndfile's virtual I/O (never a file name), mixing
 * to mono, resampling on libsamplerate, slicing, padding, gain, .npy
 * tensors (media.c) and encoding back to WAV, FLAC or Ogg Vorbis. See
 * media.h.
 *
 * Who owns what: an audio object (userdata "shale.audio") owns its sample
 * buffer (float32, interleaved frames), charged to the call's memory cap
 * before it is allocated; its __gc and a:release() free and uncharge it.
 * A function that opens a libsndfile or libsamplerate handle, or needs
 * scratch memory, keeps them in a job (userdata "shale.audio.job", never
 * seen by scripts) whose __gc closes them, and releases it on every path
 * out, so a Lua error (longjmp) cannot leak them. Nothing raises while
 * libsndfile or libsamplerate is on the C stack: their callbacks (the
 * memory file below) never call Lua.
 *
 * Long loops check the call's deadline every AU_BLOCK frames. No state
 * outside the Lua state but constant tables; one thread per call.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <samplerate.h>
#include <sndfile.h>

#include "media.h"

#define AU_MT "shale.audio"
#define AU_JOB_MT "shale.audio.job"
#define AU_BLOCK 65536           /* frames between deadline checks */
#define AU_MAX_RATE 384000
#define AU_MAX_CH 1024           /* libsndfile's SF_MAX_CHANNELS */
#define AU_OUT_SLACK (256u * 1024) /* encoder output reserved ahead of libsndfile */
#define AU_MAX_COUNT 9007199254740992.0 /* 2^53: frame counts as Lua numbers */

struct au {
    struct sl_lua_state *S;
    float *buf;      /* capf * channels floats (at least 16 bytes); NULL once released */
    size_t frames;   /* valid frames */
    size_t capf;     /* frames allocated */
    size_t charged;  /* bytes charged for buf */
    int channels, rate;
    bool released;
};

/* A job: the handles and scratch memory of one function, and the memory
 * file libsndfile reads (a Lua string kept on the stack) or writes (out,
 * growing, charged). */
struct au_job {
    struct sl_lua_state *S;
    SNDFILE *sf;
    SRC_STATE *src;
    const char *in;
    char *out;
    size_t outcap;
    sf_count_t len, pos;
    bool oom;        /* a write callback hit the memory cap */
    void *tmp;
    size_t tmpcap;
    size_t charged;  /* out + tmp */
};

/* Frames per libsndfile call: AU_BLOCK, or fewer so a step holds at most
 * 1 MiB of floats (scratch for mixing and encoding is that big). */
static size_t au_step(size_t ch)
{
    size_t k = ((size_t)1 << 18) / ch;
    return k > AU_BLOCK ? AU_BLOCK : k;
}

/* ---- memory ---------------------------------------------------------------- */

/* Charge n bytes; when the cap is hit, collect garbage once (dead audio
 * objects give their charge back) and retry. 0 or -1. Never raises: our
 * own finalizers and the sandbox's do not. */
static int au_charge(lua_State *L, size_t n)
{
    struct sl_lua_state *S = sl_lua_S(L);
    bool was = S->refused;
    if (sl_lua_mem_charge(S, n) == 0)
        return 0;
    lua_gc(L, LUA_GCCOLLECT, 0);
    if (sl_lua_mem_charge(S, n) != 0)
        return -1;
    S->refused = was; /* the retry succeeded: nothing was refused in the end */
    return 0;
}

/* Resize a's buffer to capf frames, charging growth first and uncharging
 * what shrinks. 0, or -1 with a unchanged. */
static int au_resize(lua_State *L, struct au *a, size_t capf)
{
    size_t fb = (size_t)a->channels * sizeof(float);
    if (capf > SIZE_MAX / 2 / fb)
        return sl_lua_mem_charge(a->S, SIZE_MAX); /* (-1, the call marked as over its cap) */
    size_t want = capf * fb < 16 ? 16 : capf * fb;
    size_t more = want > a->charged ? want - a->charged : 0;
    if (more && au_charge(L, more) != 0)
        return -1;
    float *p = realloc(a->buf, want);
    if (!p) {
        sl_lua_mem_uncharge(a->S, more);
        return -1;
    }
    if (want < a->charged)
        sl_lua_mem_uncharge(a->S, a->charged - want);
    a->buf = p;
    a->charged = want;
    a->capf = capf;
    return 0;
}

static void au_free(struct au *a)
{
    if (!a)
        return;
    free(a->buf);
    a->buf = NULL;
    if (a->S)
        sl_lua_mem_uncharge(a->S, a->charged);
    a->charged = 0;
    a->capf = 0;
    a->released = true;
}

static void au_job_release(struct au_job *j)
{
    if (!j)
        return;
    if (j->sf) /* (a writer flushes into out here: free out after) */
        sf_close(j->sf);
    j->sf = NULL;
    if (j->src)
        src_delete(j->src);
    j->src = NULL;
    free(j->out);
    free(j->tmp);
    j->out = NULL;
    j->tmp = NULL;
    j->outcap = j->tmpcap = 0;
    if (j->S)
        sl_lua_mem_uncharge(j->S, j->charged);
    j->charged = 0;
}

/* Grow j->out to hold `need` bytes (doubling, else exactly). L NULL (in a
 * libsndfile callback): no garbage collection. 0 or -1. */
static int au_out_reserve(lua_State *L, struct au_job *j, size_t need)
{
    if (need <= j->outcap)
        return 0;
    size_t ncap = j->outcap ? j->outcap : 65536;
    while (ncap < need && ncap <= SIZE_MAX / 4)
        ncap *= 2;
    if (ncap < need)
        return -1;
    for (int pass = 0; pass < 2; pass++, ncap = need) {
        size_t more = ncap - j->outcap;
        if ((L ? au_charge(L, more) : sl_lua_mem_charge(j->S, more)) != 0)
            continue;
        char *p = realloc(j->out, ncap);
        if (!p) {
            sl_lua_mem_uncharge(j->S, more);
            return -1;
        }
        j->out = p;
        j->outcap = ncap;
        j->charged += more;
        return 0;
    }
    return -1;
}

/* Scratch of at least n bytes in j->tmp. 0 or -1. */
static int au_job_tmp(lua_State *L, struct au_job *j, size_t n)
{
    if (n <= j->tmpcap)
        return 0;
    if (au_charge(L, n) != 0)
        return -1;
    void *p = malloc(n);
    if (!p) {
        sl_lua_mem_uncharge(j->S, n);
        return -1;
    }
    free(j->tmp);
    sl_lua_mem_uncharge(j->S, j->tmpcap);
    j->charged += n - j->tmpcap;
    j->tmp = p;
    j->tmpcap = n;
    return 0;
}

/* ---- the memory file (libsndfile's virtual I/O; never raises) -------------- */

static sf_count_t au_vio_len(void *ud)
{
    return ((struct au_job *)ud)->len;
}

static sf_count_t au_vio_seek(sf_count_t off, int whence, void *ud)
{
    struct au_job *j = ud;
    sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? j->pos : j->len;
    if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END)
        return -1;
    if ((off > 0 && off > INT64_MAX / 2 - base) || (off < 0 && off < -base))
        return -1;
    j->pos = base + off;
    return j->pos;
}

static sf_count_t au_vio_read(void *p, sf_count_t n, void *ud)
{
    struct au_job *j = ud;
    const char *src = j->in ? j->in : j->out;
    if (n <= 0 || j->pos >= j->len)
        return 0;
    sf_count_t k = j->len - j->pos < n ? j->len - j->pos : n;
    memcpy(p, src + j->pos, (size_t)k);
    j->pos += k;
    return k;
}

static sf_count_t au_vio_write(const void *p, sf_count_t n, void *ud)
{
    struct au_job *j = ud;
    if (j->in || n <= 0)
        return 0;
    if (n > INT64_MAX / 2 - j->pos || au_out_reserve(NULL, j, (size_t)(j->pos + n)) != 0) {
        j->oom = true;
        return 0;
    }
    if (j->pos > j->len) /* written after a seek past the end: zeros between */
        memset(j->out + j->len, 0, (size_t)(j->pos - j->len));
    memcpy(j->out + j->pos, p, (size_t)n);
    j->pos += n;
    if (j->pos > j->len)
        j->len = j->pos;
    return n;
}

static sf_count_t au_vio_tell(void *ud)
{
    return ((struct au_job *)ud)->pos;
}

static const SF_VIRTUAL_IO au_vio = { au_vio_len, au_vio_seek, au_vio_read, au_vio_write, au_vio_tell };

/* ---- objects ----------------------------------------------------------------- */

static struct au_job *au_job_new(lua_State *L)
{
    struct au_job *j = lua_newuserdata(L, sizeof(*j));          /* [.. job] */
    memset(j, 0, sizeof(*j));
    j->S = sl_lua_S(L);
    luaL_getmetatable(L, AU_JOB_MT);
    lua_setmetatable(L, -2);
    return j;
}

/* Push a new audio object without samples. [..] -> [.. a]. May raise. */
static struct au *au_new(lua_State *L, int rate, int channels)
{
    struct au *a = lua_newuserdata(L, sizeof(*a));              /* [.. a] */
    memset(a, 0, sizeof(*a));
    a->S = sl_lua_S(L);
    a->rate = rate;
    a->channels = channels;
    luaL_getmetatable(L, AU_MT);
    lua_setmetatable(L, -2);
    return a;
}

/* Release j and a (either may be NULL), then raise "<message>". */
static int au_fail(lua_State *L, struct au_job *j, struct au *a, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int au_fail(lua_State *L, struct au_job *j, struct au *a, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    au_job_release(j);
    au_free(a);
    return luaL_error(L, "%s", msg);
}

/* Push a new object of `frames` frames (contents undefined). May raise. */
static struct au *au_make(lua_State *L, const char *fn, int rate, int channels, size_t frames)
{
    struct au *b = au_new(L, rate, channels);
    if (au_resize(L, b, frames) != 0)
        au_fail(L, NULL, b, "%s: not enough memory for %zu frames x %d channels (memory limit)", fn, frames,
                channels);
    b->frames = frames;
    return b;
}

/* When the deadline has passed: release j and b, raise the timeout. */
static void au_tick(lua_State *L, struct au_job *j, struct au *b)
{
    if (sl_lua_deadline_passed(L)) {
        au_job_release(j);
        au_free(b);
        sl_lua_raise_timeout(L);
    }
}

/* The audio object at 1, alive. May raise. */
static struct au *au_self(lua_State *L, const char *fn)
{
    struct au *a = luaL_checkudata(L, 1, AU_MT);
    if (a->released)
        luaL_error(L, "%s: the audio was released (a:release())", fn);
    return a;
}

/* An integral number at idx in [0, 2^53]. May raise. */
static size_t au_count(lua_State *L, int idx, const char *what)
{
    lua_Number d = luaL_checknumber(L, idx);
    if (!(d >= 0 && d <= AU_MAX_COUNT && d == floor(d))) {
        char m[80];
        snprintf(m, sizeof(m), "%s must be an integer >= 0", what);
        luaL_argerror(L, idx, m);
    }
    return (size_t)d;
}

/* opts[key] (raw: no metamethod runs) pushed; its type returned. */
static int au_opt(lua_State *L, int idx, const char *key)
{
    lua_pushstring(L, key);
    lua_rawget(L, idx);
    return lua_type(L, -1);
}

/* An optional string option among choices (NULL-terminated); index of the
 * choice, def when absent. May raise. */
static int au_optchoice(lua_State *L, int idx, const char *fn, const char *key, const char *const *choices, int def)
{
    if (lua_isnoneornil(L, idx))
        return def;
    int t = au_opt(L, idx, key);
    int r = def;
    if (t != LUA_TNIL) {
        const char *s = t == LUA_TSTRING ? lua_tostring(L, -1) : "";
        for (r = 0; choices[r] && strcmp(choices[r], s) != 0; r++)
            ;
        if (!choices[r]) {
            char list[120] = "";
            for (int i = 0; choices[i]; i++)
                snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s'%s'", i ? ", " : "", choices[i]);
            luaL_error(L, "%s: %s must be one of %s (got %s)", fn, key, list,
                       t == LUA_TSTRING ? lua_tostring(L, -1) : lua_typename(L, t));
        }
    }
    lua_pop(L, 1);
    return r;
}

/* libsndfile's message without its final full stop, into out. */
static const char *au_sferr(const char *s, char *out, size_t n)
{
    snprintf(out, n, "%s", s ? s : "unknown error");
    size_t k = strlen(out);
    while (k > 0 && (out[k - 1] == '.' || out[k - 1] == '\n' || out[k - 1] == ' '))
        out[--k] = 0;
    return out;
}

/* ---- decode -------------------------------------------------------------- */

static uint32_t au_le32(const unsigned char *p)
{
    return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* libsndfile 1.2 leaks libvorbis' setup (6 KiB and up) when an Ogg Vorbis
 * stream ends, or loses a page, before its three header packets are whole
 * (ogg_vorbis_open returns without vorbis_info_clear). Such streams are
 * refused before libsndfile sees them. Pages are found as libogg finds them
 * (capture pattern, CRC; other streams and versions skipped); the first
 * stream's packets are counted as libogg assembles them. False: Ogg
 * Vorbis with broken headers; true otherwise (other formats included). */
static bool au_vorbis_headers_whole(const unsigned char *p, size_t n)
{
    uint32_t tab[256], serial = 0, seq = 0;
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t r = i << 24;
        for (int b = 0; b < 8; b++)
            r = r & 0x80000000u ? (r << 1) ^ 0x04c11db7u : r << 1;
        tab[i] = r;
    }
    bool first = true, open = false;
    int done = 0;
    if (n < 4 || memcmp(p, "OggS", 4) != 0)
        return true;
    for (size_t i = 0; i + 27 <= n;) {
        const unsigned char *g = p + i;
        size_t hl = 27 + (size_t)g[26], bl = 0;
        if (memcmp(g, "OggS", 4) != 0 || i + hl > n) {
            i++;
            continue;
        }
        for (size_t k = 27; k < hl; k++)
            bl += g[k];
        if (i + hl + bl > n)
            break; /* (libogg waits for the rest, which never comes) */
        uint32_t crc = 0;
        for (size_t k = 0; k < hl + bl; k++)
            crc = (crc << 8) ^ tab[((crc >> 24) & 0xff) ^ (k >= 22 && k < 26 ? 0 : g[k])];
        if (crc != au_le32(g + 22)) {
            i++;
            continue;
        }
        i += hl + bl;
        if (first) {
            if (bl < 7 || memcmp(g + hl, "\x01vorbis", 7) != 0)
                return true;
            first = false;
            serial = au_le32(g + 14);
        } else if (au_le32(g + 14) != serial || g[4] != 0) {
            continue;
        } else if (au_le32(g + 18) != seq) {
            return false; /* a hole before the headers are whole */
        }
        seq = au_le32(g + 18) + 1;
        size_t k = 27;
        if ((g[5] & 1) && !open) /* continues a packet never started: skipped */
            while (k < hl && g[k++] == 255)
                ;
        for (; k < hl; k++) {
            open = g[k] == 255;
            if (!open && ++done >= 3)
                return true;
        }
    }
    return first;
}


/* shale.audio.decode(bytes [, {mono = true}]) -> audio. */
static int au_l_decode(lua_State *L)
{
    static const char fn[] = "shale.audio.decode";
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    static const char *const keys[] = { "mono", "lenient", NULL };
    bool mono = false, lenient = false;
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        sl_lua_opts_known(L, 2, "", fn, keys);
        au_opt(L, 2, "mono");
        mono = lua_toboolean(L, -1);
        au_opt(L, 2, "lenient");
        lenient = lua_toboolean(L, -1);
    }
    lua_settop(L, 2);
    if (n == 0)
        return luaL_error(L, "%s: empty input (0 bytes), not a sound file" " (the %d-byte input)", fn, (int)SL_MIN(n, (size_t)INT32_MAX));
    if (n > INT64_MAX / 4)
        return luaL_error(L, "%s: input too large" " (the %d-byte input)", fn, (int)SL_MIN(n, (size_t)INT32_MAX));

    if (!au_vorbis_headers_whole((const unsigned char *)s, n))
        return luaL_error(L, "%s: corrupt or truncated Ogg Vorbis headers" " (the %d-byte input)", fn, (int)SL_MIN(n, (size_t)INT32_MAX));

    struct au_job *j = au_job_new(L);                           /* [s o job] */
    j->in = s;
    j->len = (sf_count_t)n;
    SF_VIRTUAL_IO vio = au_vio;
    SF_INFO info;
    memset(&info, 0, sizeof(info));
    j->sf = sf_open_virtual(&vio, SFM_READ, &info, j);
    char why[160];
    if (!j->sf)
        return au_fail(L, j, NULL,
                       "%s: not a sound file libsndfile can read (%s): WAV, FLAC, OGG/Vorbis, AIFF are supported" " (the %zu-byte input)", fn,
                       au_sferr(sf_error_number(sf_error(NULL)), why, sizeof(why)), n);
    /* a WAV or AIFF cut short: libsndfile clamps the frame count to the
     * bytes there are and notes it in its log ("data : 32000 (should be
     * 2000)"); say so instead of returning the part */
    char log[2048], *bad = NULL;
    log[0] = 0;
    sf_command(j->sf, SFC_GET_LOG_INFO, log, sizeof(log));
    for (char *ln = log; ln && *ln && !bad; ln = strchr(ln, '\n') ? strchr(ln, '\n') + 1 : NULL)
        if ((!strncmp(ln, "data", 4) || !strncmp(ln, "SSND", 4)) && strstr(ln, "(should be ") &&
            (!strchr(ln, '\n') || strstr(ln, "(should be ") < strchr(ln, '\n')))
            bad = ln;
    if (bad && !lenient) {
        bad[strcspn(bad, "\n")] = 0;
        return au_fail(L, j, NULL, "%s: corrupt or truncated data: the header announces more sample data than the "
                       "input holds (libsndfile: \"%.80s\"; decode(b, {lenient = true}) keeps what is there)"
                       " (the %zu-byte input)", fn, bad, n);
    }
    int ch = info.channels;
    if (ch < 1 || ch > AU_MAX_CH || info.samplerate < 1)
        return au_fail(L, j, NULL, "%s: unsupported stream (%d channels at %d Hz)" " (the %zu-byte input)", fn, ch, info.samplerate, n);
    int och = mono ? 1 : ch;
    bool known = info.frames > 0 && info.frames < SF_COUNT_MAX;
    double bytes = known ? (double)info.frames * och * sizeof(float) : 0;
    size_t need = bytes >= (double)SIZE_MAX ? SIZE_MAX : (size_t)bytes;
    if (au_charge(L, need) == 0) { /* (a check against the cap: nothing stays charged) */
        sl_lua_mem_uncharge(j->S, need);
    } else {
        char sz[32];
        sl_format_size_sp(need, sz, sizeof(sz));
        return au_fail(L, j, NULL,
                       "%s: the audio announces %lld frames x %d channels%s (%s of samples), more than the call's "
                       "memory limit allows" " (the %zu-byte input)",
                       fn, (long long)info.frames, ch, och != ch ? " mixed to mono" : "", sz, n);
    }
    size_t total = known && (uint64_t)info.frames < SIZE_MAX ? (size_t)info.frames : SIZE_MAX;
    size_t step = au_step((size_t)ch);
    if (och != ch && au_job_tmp(L, j, step * (size_t)ch * sizeof(float)) != 0)
        return au_fail(L, j, NULL, "%s: not enough memory to mix to mono (memory limit)" " (the %zu-byte input)", fn, n);

    struct au *a = au_new(L, info.samplerate, och);             /* [s o job a] */
    while (a->frames < total) {
        if (a->frames == a->capf) {
            /* grow by doubling (else by an eighth), never past what the header announces */
            size_t want = a->capf < AU_BLOCK ? AU_BLOCK : a->capf, less = want / 8 < AU_BLOCK ? AU_BLOCK : want / 8;
            size_t ncap = want > total - a->capf ? total : a->capf + want;
            size_t small = less > total - a->capf ? total : a->capf + less;
            if (au_resize(L, a, ncap) != 0 && (small == ncap || au_resize(L, a, small) != 0))
                return au_fail(L, j, a, "%s: not enough memory for the samples after %zu frames (memory limit)" " (the %zu-byte input)",
                               fn, a->frames, n);
        }
        size_t room = a->capf - a->frames < step ? a->capf - a->frames : step;
        float *dst = a->buf + a->frames * (size_t)och;
        sf_count_t got = sf_readf_float(j->sf, och == ch ? dst : j->tmp, (sf_count_t)room);
        if (got <= 0)
            break;
        if ((size_t)got > room)
            got = (sf_count_t)room;
        if (och != ch) {
            const float *m = j->tmp;
            for (sf_count_t f = 0; f < got; f++, m += ch) {
                double sum = 0;
                for (int c = 0; c < ch; c++)
                    sum += m[c];
                dst[f] = (float)(sum / ch);
            }
        }
        a->frames += (size_t)got;
        au_tick(L, j, a);
    }
    if (sf_error(j->sf) != SF_ERR_NO_ERROR)
        return au_fail(L, j, a, "%s: corrupt or truncated data after %zu frames: %s" " (the %zu-byte input)", fn, a->frames,
                       au_sferr(sf_strerror(j->sf), why, sizeof(why)), n);
    /* fewer frames than the header announces: the data is cut short (or
     * corrupt where the decoder gave up), which libsndfile does not call
     * an error; a partial sound padded later would pass unnoticed */
    if (known && a->frames < (size_t)info.frames && !lenient)
        return au_fail(L, j, a, "%s: corrupt or truncated data: %zu of the %lld frames the header announces could "
                       "be read (decode(b, {lenient = true}) keeps what is there)" " (the %zu-byte input)", fn,
                       a->frames, (long long)info.frames, n);
    if (a->frames == 0 && info.frames == SF_COUNT_MAX) /* (libsndfile 1.2 on an Ogg without its last page) */
        return au_fail(L, j, a, "%s: corrupt or truncated data: no frame could be read from a stream of unknown "
                       "length" " (the %zu-byte input)", fn, n);
    au_job_release(j);
    if (a->capf > a->frames)
        au_resize(L, a, a->frames); /* give the slack back (shrinking never charges) */
    return 1;
}

/* ---- methods ------------------------------------------------------------ */

/* a:mono() -> audio, the channels averaged. */
static int au_l_mono(lua_State *L)
{
    static const char fn[] = "shale.audio.mono";
    struct au *a = au_self(L, fn);
    lua_settop(L, 1);
    struct au *b = au_make(L, fn, a->rate, 1, a->frames);
    size_t ch = (size_t)a->channels;
    for (size_t f = 0; f < a->frames; f++) {
        const float *m = a->buf + f * ch;
        double sum = 0;
        for (size_t c = 0; c < ch; c++)
            sum += m[c];
        b->buf[f] = (float)(sum / (double)ch);
        if ((f & (AU_BLOCK - 1)) == AU_BLOCK - 1)
            au_tick(L, NULL, b);
    }
    return 1;
}

/* a:resample(rate [, quality]) -> audio at rate Hz. */
static int au_l_resample(lua_State *L)
{
    static const char fn[] = "shale.audio.resample";
    static const char *const qnames[] = { "best", "medium", "fast", "linear", "zoh", NULL };
    static const int qconv[] = { SRC_SINC_BEST_QUALITY, SRC_SINC_MEDIUM_QUALITY, SRC_SINC_FASTEST, SRC_LINEAR,
                                 SRC_ZERO_ORDER_HOLD };
    /* what src_new allocates per channel (the sinc converters' sample
     * buffer, libsamplerate 0.2 src_sinc.c b_len), charged with the job */
    static const size_t qcost[] = { 448u << 10, 144u << 10, 64u << 10, 64, 64 };
    struct au *a = au_self(L, fn);
    lua_Number r = luaL_checknumber(L, 2);
    luaL_argcheck(L, r >= 1 && r <= AU_MAX_RATE && r == floor(r), 2, "rate must be an integer in 1..384000 (Hz)");
    int q = luaL_checkoption(L, 3, "medium", qnames);
    int rate = (int)r;
    double ratio = (double)rate / a->rate;
    if (ratio > 256 || ratio < 1.0 / 256)
        return luaL_error(L, "%s: %d Hz to %d Hz is a ratio beyond libsamplerate's 1/256..256", fn, a->rate, rate);
    double want = floor((double)a->frames * ratio + 0.5);
    if (want > AU_MAX_COUNT)
        return au_fail(L, NULL, NULL, "%s: %.0f frames is too many", fn, want);
    size_t outf = (size_t)want, ch = (size_t)a->channels;
    lua_settop(L, 3);
    if (rate == a->rate) {
        struct au *b = au_make(L, fn, rate, a->channels, a->frames);
        memcpy(b->buf, a->buf, a->frames * ch * sizeof(float));
        return 1;
    }
    struct au_job *j = au_job_new(L);                           /* [a r q job] */
    struct au *b = au_make(L, fn, rate, a->channels, outf);     /* [a r q job b] */
    size_t in = 0, out = 0;
    if (outf > 0) {
        int err = 0;
        size_t cost = qcost[q] * ch + 16384;
        if (au_charge(L, cost) != 0)
            return au_fail(L, j, b, "%s: not enough memory for libsamplerate's state (memory limit)", fn);
        j->charged += cost;
        j->src = src_new(qconv[q], a->channels, &err);
        if (!j->src)
            return au_fail(L, j, b, "%s: cannot start libsamplerate (%s)", fn, src_strerror(err));
    }
    while (out < outf) {
        SRC_DATA d;
        memset(&d, 0, sizeof(d));
        size_t k = a->frames - in < AU_BLOCK ? a->frames - in : AU_BLOCK;
        size_t room = outf - out < 4 * AU_BLOCK ? outf - out : 4 * AU_BLOCK;
        d.data_in = a->buf + in * ch;
        d.input_frames = (long)k;
        d.end_of_input = in + k == a->frames;
        d.data_out = b->buf + out * ch;
        d.output_frames = (long)room;
        d.src_ratio = ratio;
        int e = src_process(j->src, &d);
        if (e)
            return au_fail(L, j, b, "%s: libsamplerate failed: %s", fn, src_strerror(e));
        in += (size_t)d.input_frames_used;
        out += (size_t)d.output_frames_gen;
        if (d.input_frames_used == 0 && d.output_frames_gen == 0)
            break; /* the filter is drained */
        au_tick(L, j, b);
    }
    if (out < outf) /* the filter gave a few frames less: pad with silence */
        memset(b->buf + out * ch, 0, (outf - out) * ch * sizeof(float));
    au_job_release(j);
    return 1;
}

/* a:slice(first, count) -> frames [first, first + count), clipped. */
static int au_l_slice(lua_State *L)
{
    static const char fn[] = "shale.audio.slice";
    struct au *a = au_self(L, fn);
    size_t first = au_count(L, 2, "first");
    size_t count = au_count(L, 3, "count");
    lua_settop(L, 3);
    if (first > a->frames)
        first = a->frames;
    if (count > a->frames - first)
        count = a->frames - first;
    struct au *b = au_make(L, fn, a->rate, a->channels, count);
    size_t ch = (size_t)a->channels;
    memcpy(b->buf, a->buf + first * ch, count * ch * sizeof(float));
    return 1;
}

/* a:fit(n [, "end" | "center"]) -> exactly n frames, trimmed or padded with
 * zeros at the end (or on both sides). */
static int au_l_fit(lua_State *L)
{
    static const char fn[] = "shale.audio.fit";
    static const char *const modes[] = { "end", "center", NULL };
    struct au *a = au_self(L, fn);
    size_t n = au_count(L, 2, "n");
    int center = luaL_checkoption(L, 3, "end", modes);
    lua_settop(L, 3);
    struct au *b = au_make(L, fn, a->rate, a->channels, n);
    size_t ch = (size_t)a->channels, src = 0, dst = 0, keep = n < a->frames ? n : a->frames;
    if (center && n < a->frames)
        src = (a->frames - n) / 2;
    else if (center)
        dst = (n - a->frames) / 2;
    memset(b->buf, 0, n * ch * sizeof(float));
    memcpy(b->buf + dst * ch, a->buf + src * ch, keep * ch * sizeof(float));
    return 1;
}

/* a:gain(db) -> samples scaled by 10^(db/20), not clipped. */
static int au_l_gain(lua_State *L)
{
    static const char fn[] = "shale.audio.gain";
    struct au *a = au_self(L, fn);
    lua_Number db = luaL_checknumber(L, 2);
    float k = (float)pow(10.0, db / 20.0);
    luaL_argcheck(L, isfinite(db) && isfinite(k), 2, "gain (dB) must be finite");
    lua_settop(L, 2);
    size_t n = a->frames * (size_t)a->channels;
    struct au *b = au_make(L, fn, a->rate, a->channels, a->frames);
    for (size_t i = 0; i < n; i++) {
        b->buf[i] = a->buf[i] * k;
        if ((i & (AU_BLOCK - 1)) == AU_BLOCK - 1)
            au_tick(L, NULL, b);
    }
    return 1;
}

/* Clipped int16 of x * scale, rounded half to even (NaN: 0). */
static int16_t au_i16(float x, double scale)
{
    double v = x * scale;
    if (isnan(v))
        return 0;
    if (v <= -32768.0)
        return -32768;
    if (v >= 32767.0)
        return 32767;
    return (int16_t)lrint(v);
}

/* a:tensor{dtype = "float32" | "int16", layout = "CT" | "TC"} -> .npy bytes
 * of shape (channels, frames) ("CT", the default) or (frames, channels). */
static int au_l_tensor(lua_State *L)
{
    static const char fn[] = "shale.audio.tensor";
    static const char *const dtypes[] = { "float32", "int16", NULL };
    static const char *const layouts[] = { "CT", "TC", NULL };
    static const char *const keys[] = { "dtype", "layout", NULL };
    struct au *a = au_self(L, fn);
    sl_lua_opts_known(L, 2, "", fn, keys);
    int i16 = au_optchoice(L, 2, fn, "dtype", dtypes, 0);
    int tc = au_optchoice(L, 2, fn, "layout", layouts, 0);
    lua_settop(L, 2);
    enum sl_npy_dtype dt = i16 ? SL_NPY_I16 : SL_NPY_F32;
    size_t ch = (size_t)a->channels, frames = a->frames, el = sl_npy_elsize(dt);
    size_t shape[2] = { tc ? frames : ch, tc ? ch : frames };
    char hdr[SL_NPY_HDR_MAX];
    size_t hl = sl_npy_header(hdr, dt, shape, 2);
    size_t total = hl + frames * ch * el; /* (no overflow: frames * ch * 4 bytes exist) */
    struct au_job *j = au_job_new(L);                           /* [a o job] */
    if (au_out_reserve(L, j, total) != 0)
        return au_fail(L, j, NULL, "%s: not enough memory for the tensor (memory limit)", fn);
    memcpy(j->out, hdr, hl);
    unsigned char *p = (unsigned char *)j->out + hl;
    for (size_t c0 = 0; c0 < (tc ? 1 : ch); c0++) {
        for (size_t f0 = 0; f0 < frames; f0 += AU_BLOCK) {
            size_t f1 = frames - f0 < AU_BLOCK ? frames : f0 + AU_BLOCK;
            /* CT: channel c0's frames in a row; TC: every channel of each frame */
            for (size_t f = f0; f < f1; f++) {
                for (size_t c = tc ? 0 : c0; c < (tc ? ch : c0 + 1); c++, p += el) {
                    float x = a->buf[f * ch + c];
                    uint32_t v = (uint16_t)au_i16(x, 32767.0);
                    if (!i16)
                        memcpy(&v, &x, 4);
                    for (size_t e = 0; e < el; e++) /* little endian */
                        p[e] = (unsigned char)(v >> 8 * e);
                }
            }
            au_tick(L, j, NULL);
        }
    }
    lua_pushlstring(L, j->out, total);
    au_job_release(j);
    return 1;
}

/* a:encode(fmt [, opts]) -> bytes: "wav" (opts.subtype "pcm16", the
 * default, or "float"), "flac" (pcm16) or "ogg" (Vorbis, opts.quality 0..1). */
static int au_l_encode(lua_State *L)
{
    static const char fn[] = "shale.audio.encode";
    static const char *const fmts[] = { "wav", "flac", "ogg", NULL };
    static const char *const wavsub[] = { "pcm16", "float", NULL };
    static const char *const flacsub[] = { "pcm16", NULL };
    static const char *const oggsub[] = { "vorbis", NULL };
    struct au *a = au_self(L, fn);
    int f = luaL_checkoption(L, 2, NULL, fmts);
    double quality = -1;
    static const char *const pkeys[] = { "subtype", NULL }, *const okeys[] = { "subtype", "quality", NULL };
    sl_lua_opts_known(L, 3, "", fn, f == 2 ? okeys : pkeys);     /* quality is Vorbis's only */
    if (!lua_isnoneornil(L, 3)) {
        luaL_checktype(L, 3, LUA_TTABLE);
        int t = au_opt(L, 3, "quality");
        if (t != LUA_TNIL) {
            quality = lua_tonumber(L, -1);
            if (t != LUA_TNUMBER || !(quality >= 0 && quality <= 1))
                return luaL_error(L, "%s: quality must be a number in 0..1", fn);
        }
        lua_pop(L, 1);
    }
    int sub = au_optchoice(L, 3, fn, "subtype", f == 0 ? wavsub : f == 1 ? flacsub : oggsub, 0);
    bool pcm16 = f != 2 && sub == 0;
    int format = f == 0 ? SF_FORMAT_WAV | (pcm16 ? SF_FORMAT_PCM_16 : SF_FORMAT_FLOAT)
               : f == 1 ? SF_FORMAT_FLAC | SF_FORMAT_PCM_16
                        : SF_FORMAT_OGG | SF_FORMAT_VORBIS;
    lua_settop(L, 3);
    size_t ch = (size_t)a->channels;
    struct au_job *j = au_job_new(L);                           /* [a f o job] */
    SF_INFO info;
    memset(&info, 0, sizeof(info));
    info.samplerate = a->rate;
    info.channels = a->channels;
    info.format = format;
    SF_VIRTUAL_IO vio = au_vio;
    char why[160];
    if (!sf_format_check(&info))
        return au_fail(L, j, NULL, "%s: libsndfile cannot write %s with %d channels at %d Hz", fn, fmts[f],
                       a->channels, a->rate);
    size_t step = au_step(ch);
    if (pcm16 && au_job_tmp(L, j, step * ch * sizeof(int16_t)) != 0)
        return au_fail(L, j, NULL, "%s: not enough memory (memory limit)", fn);
    if (au_out_reserve(L, j, AU_OUT_SLACK) != 0)
        return au_fail(L, j, NULL, "%s: not enough memory for the output (memory limit)", fn);
    j->sf = sf_open_virtual(&vio, SFM_WRITE, &info, j);
    if (!j->sf)
        return au_fail(L, j, NULL, "%s: libsndfile cannot write %s with %d channels at %d Hz (%s)", fn, fmts[f],
                       a->channels, a->rate, au_sferr(sf_error_number(sf_error(NULL)), why, sizeof(why)));
    sf_command(j->sf, SFC_SET_CLIPPING, NULL, SF_TRUE);
    if (f == 2 && quality >= 0) {
        double level = 1.0 - quality; /* (libsndfile's compression level, 0..1) */
        sf_command(j->sf, SFC_SET_COMPRESSION_LEVEL, &level, sizeof(level));
    }
    for (size_t off = 0; off < a->frames;) {
        size_t k = a->frames - off < step ? a->frames - off : step;
        /* room ahead, charged here (where garbage can be collected), so the
         * write callbacks seldom need to grow the buffer themselves */
        if (au_out_reserve(L, j, (size_t)j->len + k * ch * sizeof(float) + AU_OUT_SLACK) != 0)
            return au_fail(L, j, NULL, "%s: not enough memory for the output (memory limit)", fn);
        const float *x = a->buf + off * ch;
        sf_count_t w;
        if (pcm16) {
            int16_t *s = j->tmp;
            for (size_t i = 0; i < k * ch; i++) /* x 32768: what libsndfile's decoder divides by */
                s[i] = au_i16(x[i], 32768.0);
            w = sf_writef_short(j->sf, s, (sf_count_t)k);
        } else {
            w = sf_writef_float(j->sf, x, (sf_count_t)k);
        }
        if (w != (sf_count_t)k) {
            if (j->oom)
                return au_fail(L, j, NULL, "%s: not enough memory for the output (memory limit)", fn);
            return au_fail(L, j, NULL, "%s: libsndfile failed writing %s: %s", fn, fmts[f],
                           au_sferr(sf_strerror(j->sf), why, sizeof(why)));
        }
        off += k;
        au_tick(L, j, NULL);
    }
    if (au_out_reserve(L, j, (size_t)j->len + AU_OUT_SLACK) != 0)
        return au_fail(L, j, NULL, "%s: not enough memory for the output (memory limit)", fn);
    int rc = sf_close(j->sf);
    j->sf = NULL;
    if (j->oom)
        return au_fail(L, j, NULL, "%s: not enough memory for the output (memory limit)", fn);
    if (rc != 0)
        return au_fail(L, j, NULL, "%s: libsndfile failed finishing %s: %s", fn, fmts[f],
                       au_sferr(sf_error_number(rc), why, sizeof(why)));
    lua_pushlstring(L, j->out, (size_t)j->len);
    au_job_release(j);
    return 1;
}

/* a:sample(i [, ch]) -> the value of frame i, channel ch (0-based). */
static int au_l_sample(lua_State *L)
{
    static const char fn[] = "shale.audio.sample";
    struct au *a = au_self(L, fn);
    size_t i = au_count(L, 2, "frame");
    size_t c = lua_isnoneornil(L, 3) ? 0 : au_count(L, 3, "channel");
    if (i >= a->frames)
        return au_fail(L, NULL, NULL, "%s: frame %zu is out of range (%zu frames)", fn, i, a->frames);
    if (c >= (size_t)a->channels)
        return au_fail(L, NULL, NULL, "%s: channel %zu is out of range (%d channels)", fn, c, a->channels);
    lua_pushnumber(L, a->buf[i * (size_t)a->channels + c]);
    return 1;
}

/* a:release(): free the samples now (later calls on a raise). */
static int au_l_release(lua_State *L)
{
    au_free(luaL_checkudata(L, 1, AU_MT));
    return 0;
}

/* ---- metamethods ------------------------------------------------------------ */

static int au_gc(lua_State *L)
{
    au_free(lua_touserdata(L, 1));
    return 0;
}

static int au_job_gc(lua_State *L)
{
    au_job_release(lua_touserdata(L, 1));
    return 0;
}

static int au_tostring(lua_State *L)
{
    struct au *a = luaL_checkudata(L, 1, AU_MT);
    char s[128];
    snprintf(s, sizeof(s), "audio %d Hz x %d ch x %zu frames%s", a->rate, a->channels, a->frames,
             a->released ? " (released)" : "");
    lua_pushstring(L, s);
    return 1;
}

/* __index: the fields, else the methods (upvalue 1). [a k] -> [v]. */
static int au_index(lua_State *L)
{
    struct au *a = luaL_checkudata(L, 1, AU_MT);
    const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "";
    if (strcmp(k, "rate") == 0)
        lua_pushinteger(L, a->rate);
    else if (strcmp(k, "channels") == 0)
        lua_pushinteger(L, a->channels);
    else if (strcmp(k, "frames") == 0)
        lua_pushnumber(L, (lua_Number)a->frames);
    else if (strcmp(k, "duration") == 0)
        lua_pushnumber(L, (double)a->frames / a->rate);
    else {
        lua_pushvalue(L, 2);
        lua_rawget(L, lua_upvalueindex(1));
    }
    return 1;
}

/* ---- the table ------------------------------------------------------------- */

void sl_lua_open_audio(lua_State *L)
{
    static const luaL_Reg methods[] = {
        { "mono", au_l_mono },     { "resample", au_l_resample }, { "slice", au_l_slice },
        { "fit", au_l_fit },       { "gain", au_l_gain },         { "tensor", au_l_tensor },
        { "encode", au_l_encode }, { "sample", au_l_sample },     { "release", au_l_release },
    };
    int top = lua_gettop(L);

    luaL_newmetatable(L, AU_JOB_MT);                            /* [.. jobmt] */
    lua_pushcfunction(L, au_job_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushliteral(L, SL_LUA_LOCKED);
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 1);

    lua_createtable(L, 0, (int)SL_ARRAY_SIZE(methods) + 1);     /* [.. audio] */
    lua_createtable(L, 0, (int)SL_ARRAY_SIZE(methods));         /* [.. audio methods] */
    for (size_t i = 0; i < SL_ARRAY_SIZE(methods); i++) {
        lua_pushcfunction(L, methods[i].func);
        lua_pushvalue(L, -1);
        lua_setfield(L, top + 2, methods[i].name);
        lua_setfield(L, top + 1, methods[i].name); /* also shale.audio.mono(a), ... */
    }
    lua_pushcfunction(L, au_l_decode);
    lua_setfield(L, top + 1, "decode");

    luaL_newmetatable(L, AU_MT);                                /* [.. audio methods mt] */
    lua_pushvalue(L, top + 2);
    lua_pushcclosure(L, au_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, au_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, au_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushliteral(L, SL_LUA_LOCKED);
    lua_setfield(L, -2, "__metatable");
    lua_settop(L, top + 1);                                     /* [.. audio] */

    sl_lua_proxy(L, top + 1, "shale.audio");                    /* [.. audio proxy] */
    lua_remove(L, top + 1);
}
