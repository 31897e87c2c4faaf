/* SPDX-License-Identifier: MIT
 * dsort_mem.c: see dsort_mem.h.
 */
#include "dsort_mem.h"
#include "store.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h> /* mremap: _GNU_SOURCE */
#include <unistd.h>

#define CHUNK (1024 * 1024)

static size_t page_round(size_t n)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    return (n + ps - 1) / ps * ps;
}

static void account(struct sl_dsort_arena *a, int64_t n)
{
    a->mem = (uint64_t)((int64_t)a->mem + n);
    if (a->mem > a->peak)
        a->peak = a->mem;
}

void sl_dsort_arena_init(struct sl_dsort_arena *a, uint64_t limit)
{
    memset(a, 0, sizeof(*a));
    a->limit = limit;
    a->fd = a->vfd = -1;
}

void sl_dsort_arena_charge(struct sl_dsort_arena *a, int64_t n)
{
    account(a, n);
}

static bool fits(const struct sl_dsort_arena *a, size_t n)
{
    return !a->limit || a->mem + n <= a->limit;
}

/* len more bytes of the file fd (length *flen) mapped shared, or NULL */
static void *map_more(int *fd, uint64_t *flen, size_t len, struct sl_err *err)
{
    if (*fd < 0 && (*fd = sl_store_tmpfd(err)) < 0)
        return NULL;
    if (ftruncate(*fd, (off_t)(*flen + len)) < 0) {
        sl_errf(err, SL_EIO, "dsort: the coordinator's record list past max_mem_usage: growing its file to %llu "
                "bytes: %s (free space on the mountpaths, or raise max_mem_usage)",
                (unsigned long long)(*flen + len), strerror(errno));
        return NULL;
    }
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, (off_t)*flen);
    if (p == MAP_FAILED) {
        sl_errf(err, SL_EIO, "dsort: mapping %zu bytes of the record list's file: %s", len, strerror(errno));
        return NULL;
    }
    *flen += len;
    return p;
}

static char *chunk_new(struct sl_dsort_arena *a, size_t len, struct sl_err *err)
{
    struct sl_dsort_chunk ch = { NULL, len, false };
    if (fits(a, len)) {
        ch.p = sl_xcalloc(1, len);
        account(a, (int64_t)len);
    } else {
        len = ch.len = page_round(len);
        if (!(ch.p = map_more(&a->fd, &a->flen, len, err)))
            return NULL;
        ch.mapped = true;
        a->spilled += len;
    }
    if (a->nc == a->capc) {
        a->capc = a->capc ? a->capc * 2 : 64;
        a->c = sl_xrealloc(a->c, a->capc * sizeof(*a->c));
    }
    a->c[a->nc++] = ch;
    return ch.p;
}

void *sl_dsort_arena_alloc(struct sl_dsort_arena *a, size_t n, struct sl_err *err)
{
    n = (n + 7) & ~(size_t)7;
    if (!n)
        n = 8;
    a->total += n;
    if (n > CHUNK / 4) /* a large one (an index over every record): a chunk of its own */
        return chunk_new(a, n, err);
    if (n > a->left) {
        if (!(a->cur = chunk_new(a, CHUNK, err)))
            return NULL;
        a->left = CHUNK;
    }
    void *p = a->cur;
    a->cur += n;
    a->left -= n;
    return p;
}

char *sl_dsort_arena_strdup(struct sl_dsort_arena *a, const char *s, struct sl_err *err)
{
    size_t l = strlen(s);
    char *p = sl_dsort_arena_alloc(a, l + 1, err);
    if (p)
        memcpy(p, s, l + 1);
    return p;
}

void sl_dsort_arena_free(struct sl_dsort_arena *a)
{
    for (size_t i = 0; i < a->nc; i++) {
        if (a->c[i].mapped)
            munmap(a->c[i].p, a->c[i].len);
        else
            free(a->c[i].p);
    }
    free(a->c);
    if (a->vmapped)
        munmap(a->v, a->vbytes);
    else
        free(a->v);
    if (a->fd >= 0)
        close(a->fd);
    if (a->vfd >= 0)
        close(a->vfd);
    sl_dsort_arena_init(a, a->limit);
}

/* r->v with room for cap records: in memory while the limit allows, then
 * in its own file (grown in place with mremap) */
static int grow_v(struct sl_dsort_recs *r, size_t cap, struct sl_err *err)
{
    struct sl_dsort_arena *a = r->arena;
    size_t nb = cap * sizeof(*r->v), ob = a->vbytes;
    if (!a->vmapped && (!a->limit || a->mem - ob + nb <= a->limit)) {
        r->v = sl_xrealloc(r->v, nb);
        account(a, (int64_t)nb - (int64_t)ob);
    } else {
        uint64_t flen = ob;
        nb = page_round(nb);
        if (!a->vmapped) {
            uint64_t zero = 0;
            void *p = map_more(&a->vfd, &zero, nb, err);
            if (!p)
                return -1;
            memcpy(p, r->v, ob);
            free(r->v);
            account(a, -(int64_t)ob);
            r->v = p;
            a->vmapped = true;
            a->spilled += nb;
        } else {
            if (ftruncate(a->vfd, (off_t)nb) < 0)
                return sl_errf(err, SL_EIO, "dsort: growing the record list's file to %zu bytes: %s (free space "
                               "on the mountpaths, or raise max_mem_usage)", nb, strerror(errno));
            void *p = mremap(r->v, flen, nb, MREMAP_MAYMOVE);
            if (p == MAP_FAILED)
                return sl_errf(err, SL_EIO, "dsort: remapping the record list (%zu bytes): %s", nb, strerror(errno));
            r->v = p;
            a->spilled += nb - ob;
        }
        cap = nb / sizeof(*r->v);
    }
    a->total += nb - ob;
    a->vbytes = nb;
    a->v = r->v;
    r->cap = cap;
    return 0;
}

int sl_dsort_recs_from_json(const json_t *a, size_t nnames, struct sl_dsort_recs *r, struct sl_err *err)
{
    struct sl_dsort_arena *ar = r->arena;
    size_t need = r->n + json_array_size(a);
    if (need > r->cap && grow_v(r, SL_MAX(need, r->cap * 2), err) < 0)
        return -1;
    size_t i;
    json_t *x;
    json_array_foreach(a, i, x) {
        int sh = (int)json_integer_value(json_array_get(x, 0));
        const char *key = json_string_value(json_array_get(x, 2));
        json_t *m = json_array_get(x, 4), *ck = json_array_get(x, 5);
        if (sh < 0 || (size_t)sh >= nnames || !key || !json_is_array(m))
            return sl_errf(err, SL_EINTERNAL, "dsort: a malformed record from extraction");
        struct sl_dsort_rec *d = &r->v[r->n];
        memset(d, 0, sizeof(*d));
        d->shard = sh;
        d->seq = (int)json_integer_value(json_array_get(x, 1));
        d->bytes = (uint64_t)json_integer_value(json_array_get(x, 3));
        d->nm = d->capm = (int)json_array_size(m);
        if (!(d->key = sl_dsort_arena_strdup(ar, key, err)) ||
            !(d->m = sl_dsort_arena_alloc(ar, ((size_t)d->nm + 1) * sizeof(*d->m), err)))
            return -1;
        for (int j = 0; j < d->nm; j++) {
            const char *mn = json_string_value(json_array_get(json_array_get(m, (size_t)j), 0));
            if (!(d->m[j].name = sl_dsort_arena_strdup(ar, mn ? mn : "", err)))
                return -1;
            d->m[j].size = (uint64_t)json_integer_value(json_array_get(json_array_get(m, (size_t)j), 1));
        }
        if (json_is_string(json_array_get(x, 6)) &&
            !(d->family = sl_dsort_arena_strdup(ar, json_string_value(json_array_get(x, 6)), err)))
            return -1;
        if (json_is_string(ck)) {
            if (!(d->ckey_s = sl_dsort_arena_strdup(ar, json_string_value(ck), err)))
                return -1;
            d->has_ckey = true;
        } else if (json_is_number(ck)) {
            d->ckey_n = json_number_value(ck);
            d->has_ckey = true;
        }
        r->n++;
    }
    return 0;
}

static __thread const struct sl_dsort_recs *tl_recs; /* (qsort's comparator's) */

static int key_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    int c = strcmp(tl_recs->v[x].key, tl_recs->v[y].key);
    return c ? c : (x > y) - (x < y);
}

static int later_cmp(const void *a, const void *b)
{
    int x = ((const struct sl_dsort_dup *)a)->later, y = ((const struct sl_dsort_dup *)b)->later;
    return (x > y) - (x < y);
}

int sl_dsort_dups(const struct sl_dsort_recs *r, struct sl_dsort_dup **out, size_t *nout, struct sl_err *err)
{
    *out = NULL;
    *nout = 0;
    int *idx = r->n ? sl_dsort_arena_alloc(r->arena, r->n * sizeof(int), err) : NULL;
    if (r->n && !idx)
        return -1;
    for (size_t i = 0; i < r->n; i++)
        idx[i] = (int)i;
    tl_recs = r;
    qsort(idx, r->n, sizeof(int), key_cmp);
    size_t cap = 0;
    for (size_t q = 1, first = 0; q < r->n; q++) {
        if (strcmp(r->v[idx[q]].key, r->v[idx[first]].key)) {
            first = q;
            continue;
        }
        if (*nout == cap) {
            cap = cap ? cap * 2 : 16;
            *out = sl_xrealloc(*out, cap * sizeof(**out));
        }
        (*out)[(*nout)++] = (struct sl_dsort_dup){ idx[first], idx[q] };
    }
    if (*nout) /* (in the records' order, as they were read) */
        qsort(*out, *nout, sizeof(**out), later_cmp);
    return 0;
}

int sl_dsort_body_open(struct sl_dsort_body *b, bool to_file, struct sl_err *err)
{
    memset(b, 0, sizeof(*b));
    b->fd = -1;
    if (to_file && (b->fd = sl_store_tmpfd(err)) < 0)
        return -1;
    b->f = to_file ? fdopen(b->fd, "w+") : open_memstream(&b->mem, &b->mlen);
    if (!b->f)
        return sl_errf(err, SL_EIO, "dsort: a buffer for the output shard lists: %s", strerror(errno));
    return 0;
}

int sl_dsort_body_done(struct sl_dsort_body *b, const void **p, size_t *len, struct sl_err *err)
{
    if (fflush(b->f) != 0 || ferror(b->f))
        return sl_errf(err, SL_EIO, "dsort: writing the output shard lists: %s (free space on the mountpaths)",
                       strerror(errno));
    if (b->fd < 0) {
        *p = b->mem, *len = b->mlen;
        return 0;
    }
    b->len = (size_t)ftello(b->f);
    b->map = b->len ? mmap(NULL, b->len, PROT_READ, MAP_SHARED, b->fd, 0) : NULL;
    if (b->map == MAP_FAILED) {
        b->map = NULL;
        return sl_errf(err, SL_EIO, "dsort: mapping the output shard lists (%zu bytes): %s", b->len, strerror(errno));
    }
    *p = b->map ? b->map : "", *len = b->len;
    return 0;
}

void sl_dsort_body_free(struct sl_dsort_body *b)
{
    if (b->map)
        munmap(b->map, b->len);
    if (b->f)
        fclose(b->f); /* (closes fd too) */
    else if (b->fd >= 0)
        close(b->fd);
    free(b->mem);
    memset(b, 0, sizeof(*b));
    b->fd = -1;
}

size_t sl_dsort_batch_of(uint64_t limit, int nt, uint64_t ans_bytes, size_t ans_shards)
{
    if (!limit)
        return SIZE_MAX;
    if (!ans_shards || !ans_bytes) /* (the first round: one shard each, to learn its answer's size) */
        return 1;
    uint64_t per = SL_MAX(ans_bytes / ans_shards, 1), k = limit / 16 / (uint64_t)SL_MAX(nt, 1) / per;
    return (size_t)SL_MIN(SL_MAX(k, 1), 65536);
}
