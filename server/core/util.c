/* SPDX-License-Identifier: MIT
 * util.c: buffers, strings, time, sizes and file helpers shared by the node
 * and the CLI.
 */
#include "sl.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

/* ---- allocation ---- */

static void oom(size_t n)
{
    fprintf(stderr, "shale: out of memory allocating %zu bytes\n", n);
    abort();
}

void *sl_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *sl_xcalloc(size_t n, size_t m)
{
    void *p = calloc(n ? n : 1, m ? m : 1);
    if (!p)
        oom(n * m);
    return p;
}

void *sl_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *sl_xstrdup(const char *s)
{
    return sl_xstrndup(s, strlen(s));
}

char *sl_xstrndup(const char *s, size_t n)
{
    char *p = sl_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *sl_xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        oom(strlen(fmt));
    va_end(ap);
    return s;
}

/* ---- errors ---- */

int sl_errf(struct sl_err *e, int code, const char *fmt, ...)
{
    if (!e)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    e->code = code;
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    return -1;
}

void sl_err_wrap(struct sl_err *e, const char *fmt, ...)
{
    char pre[512], old[sizeof(e->msg)];
    va_list ap;
    if (!e)
        return;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof(pre), fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof(old));
    size_t pl = strlen(pre);
    if (pl > sizeof(e->msg) - 3)
        pl = sizeof(e->msg) - 3;
    memcpy(e->msg, pre, pl);
    memcpy(e->msg + pl, ": ", 2);
    size_t ol = strnlen(old, sizeof(old) - 1);
    if (ol > sizeof(e->msg) - pl - 3)
        ol = sizeof(e->msg) - pl - 3;
    memcpy(e->msg + pl + 2, old, ol);
    e->msg[pl + 2 + ol] = 0;
}

/* ---- buffers ---- */

void sl_buf_init(struct sl_buf *b)
{
    b->p = NULL;
    b->len = b->cap = 0;
}

void sl_buf_free(struct sl_buf *b)
{
    free(b->p);
    sl_buf_init(b);
}

void sl_buf_reset(struct sl_buf *b)
{
    b->len = 0;
    if (b->p)
        b->p[0] = 0;
}

int sl_buf_reserve(struct sl_buf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return 0;
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->len + extra + 1)
        nc *= 2;
    char *p = realloc(b->p, nc);
    if (!p)
        return -1;
    b->p = p;
    b->cap = nc;
    b->p[b->len] = 0; /* always a valid C string once allocated */
    return 0;
}

int sl_buf_add(struct sl_buf *b, const void *p, size_t n)
{
    if (sl_buf_reserve(b, n) < 0)
        return -1;
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = 0;
    return 0;
}

int sl_buf_adds(struct sl_buf *b, const char *s)
{
    return sl_buf_add(b, s, strlen(s));
}

int sl_buf_addc(struct sl_buf *b, char c)
{
    return sl_buf_add(b, &c, 1);
}

int sl_buf_printf(struct sl_buf *b, const char *fmt, ...)
{
    /* format into the room there is; only when it does not fit, grow and
     * format again (formatting twice every time was a measurable part of
     * building a redirect URL) */
    if (sl_buf_reserve(b, 64) < 0)
        return -1;
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    size_t room = b->cap - b->len;
    int n = vsnprintf(b->p + b->len, room, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n >= room) {
        if (sl_buf_reserve(b, (size_t)n) < 0) {
            b->p[b->len] = 0;
            va_end(ap2);
            return -1;
        }
        vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap2);
    }
    va_end(ap2);
    if (n < 0) {
        b->p[b->len] = 0;
        return -1;
    }
    b->len += (size_t)n;
    return 0;
}

const char *sl_fmt_u64(char buf[24], uint64_t v)
{
    int i = 23;
    buf[i] = 0;
    do {
        buf[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return buf + i;
}

int sl_buf_addu(struct sl_buf *b, uint64_t v)
{
    char t[24];
    return sl_buf_adds(b, sl_fmt_u64(t, v));
}

char *sl_buf_steal(struct sl_buf *b)
{
    char *p = b->p ? b->p : sl_xstrdup("");
    sl_buf_init(b);
    return p;
}

/* ---- time ---- */

int64_t sl_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t sl_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void sl_sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

int sl_parse_duration(const char *s, int64_t *ns)
{
    static const struct { const char *u; int64_t mul; } units[] = {
        { "ns", 1 }, { "us", 1000 }, { "µs", 1000 }, { "ms", 1000000 },
        { "s", 1000000000LL }, { "m", 60000000000LL }, { "h", 3600000000000LL },
    };
    int64_t total = 0;
    const char *p = s;
    if (!s || !*s)
        return -1;
    if (strcmp(s, "0") == 0) {
        *ns = 0;
        return 0;
    }
    /* a bare integer is taken as seconds (config convenience) */
    {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (*end == 0 && end != s) {
            *ns = (int64_t)v * 1000000000LL;
            return v < 0 ? -1 : 0;
        }
    }
    while (*p) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || v < 0)
            return -1;
        p = end;
        size_t best = 0;
        int64_t mul = 0;
        for (size_t i = 0; i < SL_ARRAY_SIZE(units); i++) {
            size_t ul = strlen(units[i].u);
            if (strncmp(p, units[i].u, ul) == 0 && ul > best) {
                /* "m" must not swallow "ms" */
                best = ul;
                mul = units[i].mul;
            }
        }
        if (!best)
            return -1;
        p += best;
        total += (int64_t)(v * (double)mul);
    }
    *ns = total;
    return 0;
}

void sl_format_duration(int64_t ns, char *out, size_t n)
{
    /* Go's time.Duration.String() for the common cases */
    if (ns == 0) {
        snprintf(out, n, "0s");
        return;
    }
    if (ns < 1000000000LL) {
        if (ns % 1000000 == 0)
            snprintf(out, n, "%lldms", (long long)(ns / 1000000));
        else if (ns % 1000 == 0)
            snprintf(out, n, "%lldµs", (long long)(ns / 1000));
        else
            snprintf(out, n, "%lldns", (long long)ns);
        return;
    }
    long long h = ns / 3600000000000LL;
    long long m = (ns / 60000000000LL) % 60;
    long long s = (ns / 1000000000LL) % 60;
    long long frac = ns % 1000000000LL;
    char sec[48];
    if (frac) {
        snprintf(sec, sizeof(sec), "%lld.%09lld", s, frac);
        char *e = sec + strlen(sec) - 1;
        while (*e == '0')
            *e-- = 0;
    } else {
        snprintf(sec, sizeof(sec), "%lld", s);
    }
    if (h)
        snprintf(out, n, "%lldh%lldm%ss", h, m, sec);
    else if (m)
        snprintf(out, n, "%lldm%ss", m, sec);
    else
        snprintf(out, n, "%ss", sec);
}

void sl_format_gotime(int64_t ns, const char *layout, char *out, size_t n)
{
    static const char *mon[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
    static const char *monl[] = { "January", "February", "March", "April", "May", "June", "July",
                                  "August", "September", "October", "November", "December" };
    static const char *wd[] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
    static const char *wdl[] = { "Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday" };
    time_t t = (time_t)(ns / 1000000000LL);
    long nsec = (long)(ns % 1000000000LL);
    struct tm tm;
    gmtime_r(&t, &tm);
    struct sl_buf b;
    sl_buf_init(&b);
    if (!layout || !*layout)
        layout = "02 Jan 06 15:04 MST";
    const char *p = layout;
    while (*p) {
#define TOK(s) (strncmp(p, s, strlen(s)) == 0 ? (p += strlen(s), 1) : 0)
        if (TOK("2006")) sl_buf_printf(&b, "%04d", tm.tm_year + 1900);
        else if (TOK("January")) sl_buf_adds(&b, monl[tm.tm_mon]);
        else if (TOK("Jan")) sl_buf_adds(&b, mon[tm.tm_mon]);
        else if (TOK("Monday")) sl_buf_adds(&b, wdl[tm.tm_wday]);
        else if (TOK("Mon")) sl_buf_adds(&b, wd[tm.tm_wday]);
        else if (TOK("MST")) sl_buf_adds(&b, "UTC");
        else if (TOK("Z07:00")) sl_buf_adds(&b, "Z");
        else if (TOK("-07:00")) sl_buf_adds(&b, "+00:00");
        else if (TOK("-0700")) sl_buf_adds(&b, "+0000");
        else if (TOK("01")) sl_buf_printf(&b, "%02d", tm.tm_mon + 1);
        else if (TOK("02")) sl_buf_printf(&b, "%02d", tm.tm_mday);
        else if (TOK("06")) sl_buf_printf(&b, "%02d", tm.tm_year % 100);
        else if (TOK("15")) sl_buf_printf(&b, "%02d", tm.tm_hour);
        else if (TOK("03")) sl_buf_printf(&b, "%02d", tm.tm_hour % 12 ? tm.tm_hour % 12 : 12);
        else if (TOK("04")) sl_buf_printf(&b, "%02d", tm.tm_min);
        else if (TOK("05")) sl_buf_printf(&b, "%02d", tm.tm_sec);
        else if (TOK("PM")) sl_buf_adds(&b, tm.tm_hour >= 12 ? "PM" : "AM");
        else if (*p == '.' && (p[1] == '0' || p[1] == '9')) {
            int digits = 0;
            char d = p[1];
            p++;
            while (*p == d) {
                digits++;
                p++;
            }
            char fr[16];
            snprintf(fr, sizeof(fr), "%09ld", nsec);
            fr[digits > 9 ? 9 : digits] = 0;
            if (d == '9') {
                size_t l = strlen(fr);
                while (l && fr[l - 1] == '0')
                    fr[--l] = 0;
                if (l)
                    sl_buf_printf(&b, ".%s", fr);
            } else {
                sl_buf_printf(&b, ".%s", fr);
            }
        } else {
            sl_buf_addc(&b, *p++);
        }
#undef TOK
    }
    snprintf(out, n, "%s", b.p ? b.p : "");
    sl_buf_free(&b);
}

/* ---- sizes ---- */

int sl_parse_size(const char *s, uint64_t *out)
{
    static const struct { const char *u; uint64_t mul; } units[] = {
        { "KiB", 1ULL << 10 }, { "MiB", 1ULL << 20 }, { "GiB", 1ULL << 30 }, { "TiB", 1ULL << 40 },
        { "KB", 1000ULL }, { "MB", 1000000ULL }, { "GB", 1000000000ULL }, { "TB", 1000000000000ULL },
        { "K", 1ULL << 10 }, { "M", 1ULL << 20 }, { "G", 1ULL << 30 }, { "T", 1ULL << 40 },
        { "k", 1ULL << 10 }, { "B", 1 }, { "b", 1 }, { "", 1 },
    };
    char *end;
    if (!s || !*s)
        return -1;
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '-')
        return -1;
    double v = strtod(s, &end);
    if (end == s)
        return -1;
    while (isspace((unsigned char)*end))
        end++;
    for (size_t i = 0; i < SL_ARRAY_SIZE(units); i++) {
        if (strcasecmp(end, units[i].u) == 0 &&
            (strcmp(units[i].u, "") != 0 || *end == 0)) {
            /* case-insensitive, except that "kb"/"KB" both mean SI */
            double d = v * (double)units[i].mul + 0.5;
            if (!(d >= 0 && d < 18446744073709551616.0)) /* (NaN, or past 2^64: not a size) */
                return -1;
            *out = (uint64_t)d;
            return 0;
        }
    }
    return -1;
}

static void fmt_size(uint64_t n, char *out, size_t sz, const char *sp)
{
    static const char *u[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    if (n < 1024) {
        snprintf(out, sz, "%llu%sB", (unsigned long long)n, sp);
        return;
    }
    double v = (double)n;
    int i = -1;
    while (v >= 1024 && i < 5) {
        v /= 1024;
        i++;
    }
    snprintf(out, sz, "%.2f%s%s", v, sp, u[i]);
}

void sl_format_size(uint64_t n, char *out, size_t sz)
{
    fmt_size(n, out, sz, "");
}

void sl_format_size_sp(uint64_t n, char *out, size_t sz)
{
    fmt_size(n, out, sz, " ");
}

void sl_format_count(uint64_t n, char *out, size_t sz)
{
    char tmp[32];
    snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)n);
    size_t l = strlen(tmp), o = 0;
    for (size_t i = 0; i < l && o + 2 < sz; i++) {
        if (i && (l - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = tmp[i];
    }
    out[o] = 0;
}

/* ---- strings ---- */

bool sl_has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

bool sl_has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && memcmp(s + a - b, suf, b) == 0;
}

void sl_hex(const unsigned char *in, size_t n, char *out)
{
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hx[in[i] >> 4];
        out[2 * i + 1] = hx[in[i] & 15];
    }
    out[2 * n] = 0;
}

void sl_base36(uint64_t v, char *out, size_t n)
{
    char tmp[16];
    int i = 0;
    do {
        tmp[i++] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
        v /= 36;
    } while (v && i < 15);
    size_t o = 0;
    while (i > 0 && o + 1 < n)
        out[o++] = tmp[--i];
    out[o] = 0;
}

void sl_rand_id(char *out, size_t n)
{
    static const char al[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    unsigned char r[64];
    if (n > sizeof(r))
        n = sizeof(r);
    if (getrandom(r, n, 0) != (ssize_t)n) {
        for (size_t i = 0; i < n; i++)
            r[i] = (unsigned char)(rand() ^ (int)sl_mono_ns());
    }
    for (size_t i = 0; i < n; i++)
        out[i] = al[r[i] % (sizeof(al) - 1)];
    out[n] = 0;
    /* ids start with a letter */
    if (out[0] >= '0' && out[0] <= '9')
        out[0] = (char)('a' + (out[0] - '0'));
}

void sl_job_id(char *out, size_t n, const char *prefix)
{
    char id[16];
    sl_rand_id(id, 10);
    snprintf(out, n, "%s%s", prefix ? prefix : "", id);
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int sl_unhex(const char *s, size_t n, unsigned char *out)
{
    for (size_t i = 0; i < n; i++) {
        int hi = hexval((unsigned char)s[2 * i]), lo = hi < 0 ? -1 : hexval((unsigned char)s[2 * i + 1]);
        if (lo < 0)
            return -1;
        out[i] = (unsigned char)(hi * 16 + lo);
    }
    return 0;
}

size_t sl_url_decode(const char *in, size_t n, char *out, bool plus_space)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (in[i] == '%' && i + 2 < n && hexval((unsigned char)in[i + 1]) >= 0 &&
            hexval((unsigned char)in[i + 2]) >= 0) {
            out[o++] = (char)(hexval((unsigned char)in[i + 1]) * 16 + hexval((unsigned char)in[i + 2]));
            i += 2;
        } else if (in[i] == '+' && plus_space) {
            out[o++] = ' ';
        } else {
            out[o++] = in[i];
        }
    }
    out[o] = 0;
    return o;
}

static char *url_encode(const char *s, size_t n, const char *keep)
{
    struct sl_buf b;
    sl_buf_init(&b);
    sl_buf_reserve(&b, n + 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isalnum(c) || strchr("-._~", c) || (c && strchr(keep, c)))
            sl_buf_addc(&b, (char)c);
        else
            sl_buf_printf(&b, "%%%02X", c);
    }
    return sl_buf_steal(&b);
}

char *sl_url_encode_path(const char *s, size_t n)
{
    return url_encode(s, n, "/");
}

char *sl_url_encode_query(const char *s)
{
    return url_encode(s, strlen(s), "");
}

/* The length of the valid UTF-8 sequence p[0..n) starts with; 0 when it
 * starts with none (a stray byte, a cut, overlong, a surrogate). */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    unsigned char c = p[0];
    size_t k;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    else if ((c & 0xE0) == 0xC0) {
        k = 1;
        cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        k = 2;
        cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        k = 3;
        cp = c & 0x07;
    } else {
        return 0;
    }
    for (size_t j = 1; j <= k; j++) {
        if (j >= n || (p[j] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[j] & 0x3F);
    }
    if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return k + 1;
}

bool sl_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = utf8_seq(p + i, n - i)))
            return false;
    return true;
}

int sl_utf8_cut(const char *s, size_t n, size_t max)
{
    if (n <= max)
        return (int)n;
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--;
    return (int)max;
}

void sl_utf8_scrub(char *s)
{
    unsigned char *p = (unsigned char *)s;
    size_t n = strlen(s);
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = utf8_seq(p + i, n - i))) {
            p[i] = '?';
            k = 1;
        }
}

/* ---- files ---- */

int sl_mkdir_p(const char *path, mode_t mode)
{
    char tmp[4096];
    size_t len = strlen(path);
    if (len >= sizeof(tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(tmp, path, len + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, mode) < 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    if (mkdir(tmp, mode) < 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (stat(tmp, &st) < 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

int sl_mkdir_parents(const char *file_path, mode_t mode)
{
    char tmp[4096];
    const char *slash = strrchr(file_path, '/');
    if (!slash || slash == file_path)
        return 0;
    size_t n = (size_t)(slash - file_path);
    if (n >= sizeof(tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(tmp, file_path, n);
    tmp[n] = 0;
    /* fast path: parent exists */
    struct stat st;
    if (stat(tmp, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 0;
        errno = ENOTDIR;
        return -1;
    }
    return sl_mkdir_p(tmp, mode) < 0 ? -1 : 1;
}

int sl_fsync_parents(const char *path, const char *top)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", path);
    size_t tl = strlen(top);
    for (;;) {
        char *slash = strrchr(tmp, '/');
        if (!slash || slash == tmp)
            return 0;
        *slash = 0;
        if (sl_fsync_dir(tmp) < 0)
            return -1;
        if (strlen(tmp) <= tl)
            return 0;
    }
}

int sl_rm_rf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode))
        return unlink(path);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char *sub = sl_xasprintf("%s/%s", path, de->d_name);
        if (sl_rm_rf(sub) < 0)
            rc = -1;
        free(sub);
    }
    closedir(d);
    if (rmdir(path) < 0)
        rc = -1;
    return rc;
}

int sl_fsync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int sl_write_file(const char *path, const void *p, size_t n, bool do_fsync)
{
    char *tmp = sl_xasprintf("%s.tmp.%d", path, (int)getpid());
    int e;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        free(tmp);
        return -1;
    }
    const char *c = p;
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, c + off, n - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            goto fail;
        }
        off += (size_t)w;
    }
    if (do_fsync)
        fsync(fd);
    close(fd);
    fd = -1;
    if (rename(tmp, path) < 0)
        goto fail;
    free(tmp);
    return 0;
fail:
    e = errno; /* of the failed call; the file is ours to remove */
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    free(tmp);
    errno = e;
    return -1;
}

int sl_read_file(const char *path, struct sl_buf *out, size_t max)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    char tmp[65536];
    for (;;) {
        ssize_t r = read(fd, tmp, sizeof(tmp));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            close(fd);
            return -1;
        }
        if (r == 0)
            break;
        if (out->len + (size_t)r > max) {
            close(fd);
            errno = EFBIG;
            return -1;
        }
        sl_buf_add(out, tmp, (size_t)r);
    }
    close(fd);
    if (!out->p)
        sl_buf_add(out, "", 0);
    return 0;
}

uint64_t sl_xxh64(const void *p, size_t n, uint64_t seed)
{
    return XXH64(p, n, seed);
}

static char *fault_points;

void sl_fault_init(void)
{
    const char *f = getenv("SHALE_FAULT");
    fault_points = f && *f ? sl_xasprintf(",%s,", f) : NULL;
}

void sl_fault(const char *point)
{
    if (!fault_points)
        return;
    char needle[128];
    snprintf(needle, sizeof(needle), ",%s,", point);
    if (strstr(fault_points, needle)) {
        fprintf(stderr, "shaled: SHALE_FAULT=%s reached: exiting as if killed\n", point);
        _exit(137);
    }
    snprintf(needle, sizeof(needle), ",%s@", point); /* POINT@MS: a pause there, for a race a test makes sure of */
    const char *at = strstr(fault_points, needle);
    if (at) {
        long ms = strtol(at + strlen(needle), NULL, 10);
        if (ms > 0 && ms <= 60000)
            usleep((useconds_t)ms * 1000);
    }
}

int sl_parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = { "1", "t", "T", "true", "True", "TRUE" };
    static const char *const no[] = { "0", "f", "F", "false", "False", "FALSE", "" };
    for (size_t i = 0; i < SL_ARRAY_SIZE(yes); i++)
        if (!strcmp(s, yes[i]))
            return *out = true, 0;
    for (size_t i = 0; i < SL_ARRAY_SIZE(no); i++)
        if (!strcmp(s, no[i]))
            return *out = false, 0;
    return -1;
}

int sl_pick_name(const char *who, const char *what, const char *v, const char *const *names, int n, int *out,
                 struct sl_err *err)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v, names[i])) {
            *out = i;
            return 0;
        }
    struct sl_buf b;
    sl_buf_init(&b);
    for (int i = 0; i < n; i++)
        sl_buf_printf(&b, "%s%s", i ? ", " : "", names[i]);
    sl_errf(err, SL_EINVAL, "%s: invalid %s \"%s\" (valid: %s)", who, what, v, b.p);
    sl_buf_free(&b);
    return -1;
}

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void sl_shuffle(int *v, size_t n, uint64_t seed)
{
    uint64_t st = seed;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(splitmix(&st) % i);
        int t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

void sl_run_detached(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    if (pthread_create(&t, NULL, fn, arg) == 0)
        pthread_detach(t);
    else
        fn(arg);
}
