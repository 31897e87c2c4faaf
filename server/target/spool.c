/* SPDX-License-Identifier: MIT
 * spool.c: memory-or-disk byte buffers under a shared budget (spool.h).
 */
#include "spool.h"
#include "store.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

void sl_spool_init(struct sl_spool *s, struct sl_spool_budget *bud)
{
    memset(s, 0, sizeof(*s));
    s->bud = bud;
    s->fd = -1;
    sl_buf_init(&s->mem);
}

/* charge n bytes to the budget, if it takes them */
static bool charge(struct sl_spool_budget *b, uint64_t n)
{
    if (!b)
        return true;
    uint64_t now = __atomic_add_fetch(&b->used, n, __ATOMIC_RELAXED);
    if (b->limit && now > b->limit) {
        __atomic_sub_fetch(&b->used, n, __ATOMIC_RELAXED);
        return false;
    }
    uint64_t pk = __atomic_load_n(&b->peak, __ATOMIC_RELAXED);
    while (now > pk && !__atomic_compare_exchange_n(&b->peak, &pk, now, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    return true;
}

static void uncharge(struct sl_spool *s)
{
    if (s->bud && s->charged)
        __atomic_sub_fetch(&s->bud->used, s->charged, __ATOMIC_RELAXED);
    s->charged = 0;
}

static int write_all(int fd, const void *p, size_t n, uint64_t off)
{
    const char *c = p;
    while (n) {
        ssize_t w = pwrite(fd, c, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

/* move what is in memory to a file; later adds go there */
static int to_disk(struct sl_spool *s, struct sl_err *err)
{
    s->fd = sl_store_tmpfd(err);
    if (s->fd < 0)
        return -1;
    if (s->len && write_all(s->fd, s->mem.p, s->len, 0) < 0)
        return sl_errf(err, SL_EIO, "spilling %llu bytes to disk: %s", (unsigned long long)s->len,
                       strerror(errno));
    sl_buf_free(&s->mem);
    sl_buf_init(&s->mem);
    uncharge(s);
    if (s->bud) {
        __atomic_add_fetch(&s->bud->spilled_cnt, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&s->bud->spilled_bytes, s->len, __ATOMIC_RELAXED);
    }
    return 0;
}

int sl_spool_add(struct sl_spool *s, const void *p, size_t n, struct sl_err *err)
{
    if (!n)
        return 0;
    if (s->fd < 0) {
        /* the buffer grows by doubling (sl_buf_reserve's rule): charge
         * what it will hold */
        size_t need = s->mem.len + n + 1, cap = s->mem.cap;
        if (need > cap) {
            size_t nc = cap ? cap : 256;
            while (nc < need)
                nc *= 2;
            if (!charge(s->bud, nc - cap)) {
                if (to_disk(s, err) < 0)
                    return -1;
                return sl_spool_add(s, p, n, err);
            }
            s->charged += nc - cap;
        }
        sl_buf_add(&s->mem, p, n);
        s->len += n;
        return 0;
    }
    if (write_all(s->fd, p, n, s->len) < 0)
        return sl_errf(err, SL_EIO, "writing %zu bytes to a spill file: %s", n, strerror(errno));
    s->len += n;
    if (s->bud)
        __atomic_add_fetch(&s->bud->spilled_bytes, n, __ATOMIC_RELAXED);
    return 0;
}

int64_t sl_spool_pread(const struct sl_spool *s, void *buf, size_t n, uint64_t off)
{
    if (off >= s->len)
        return 0;
    if (n > s->len - off)
        n = (size_t)(s->len - off);
    if (s->fd < 0) {
        memcpy(buf, s->mem.p + off, n);
        return (int64_t)n;
    }
    for (;;) {
        ssize_t r = pread(s->fd, buf, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        return r;
    }
}

bool sl_spool_on_disk(const struct sl_spool *s)
{
    return s->fd >= 0;
}

void sl_spool_free(struct sl_spool *s)
{
    sl_buf_free(&s->mem);
    sl_buf_init(&s->mem);
    uncharge(s);
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    s->len = 0;
}

static int64_t io_read(void *ctx, void *buf, size_t n)
{
    struct sl_spool_io *x = ctx;
    int64_t r = sl_spool_pread(x->s, buf, n, (uint64_t)x->pos);
    if (r > 0)
        x->pos += r;
    return r;
}

static int64_t io_seek(void *ctx, int64_t off, int whence)
{
    struct sl_spool_io *x = ctx;
    int64_t base = whence == SL_SEEK_SET ? 0 : whence == SL_SEEK_CUR ? x->pos : (int64_t)x->s->len;
    if (base + off < 0)
        return -1;
    x->pos = base + off;
    return x->pos;
}

static int64_t io_write(void *ctx, const void *buf, size_t n)
{
    struct sl_spool_io *x = ctx;
    struct sl_err tmp = { 0 };
    return sl_spool_add(x->s, buf, n, x->err ? x->err : &tmp) < 0 ? -1 : (int64_t)n;
}

void sl_spool_io_init(struct sl_spool_io *x, struct sl_spool *s, const char *name, struct sl_err *err)
{
    memset(x, 0, sizeof(*x));
    x->io = (struct sl_io){ SL_ABI_INIT(struct sl_io), .ctx = x, .read = io_read, .seek = io_seek, .write = io_write,
                            .name = name };
    x->s = s;
    x->err = err;
}
