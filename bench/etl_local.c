/* SPDX-License-Identifier: MIT
 * etl_local.c: the reference of bench/etl_image_bench.py's inline figure:
 * the same sample-mode transform run in this process on a shard file, with
 * no server, no HTTP and no output shard: read the tar (libarchive), group
 * members into samples by WebDataset's first-dot rule, call
 * transform_sample(s, ctx) in the same sandbox the targets use, count what
 * comes back. One thread, as one inline GET is.
 *
 * usage: etl_local SCRIPT.lua SHARD.tar [ROUNDS]
 * prints: samples N out_bytes B wall_s W cpu_s C
 */
#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sandbox.h"

struct mem {
    char *name, *data;
    size_t len;
};

static double now(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    rewind(f);
    char *p = malloc((size_t)sz + 1);
    *n = p ? fread(p, 1, (size_t)sz, f) : 0;
    fclose(f);
    return p;
}

/* key = up to the first dot of the base name (the directory is kept) */
static size_t key_len(const char *name)
{
    const char *slash = strrchr(name, '/');
    const char *dot = strchr(slash ? slash + 1 : name, '.');
    return dot ? (size_t)(dot - name) : strlen(name);
}

static int run(const char *script, size_t slen, struct mem *m, int nm, size_t *out, struct sl_err *err)
{
    struct sl_lua_val s = sl_lua_table(), ctx = sl_lua_table();
    size_t kl = key_len(m[0].name);
    sl_lua_table_adds(&s, "__key__", sl_lua_str_ref(m[0].name, kl));
    for (int i = 0; i < nm; i++)
        sl_lua_table_add(&s, sl_lua_str_ref(m[i].name + kl + 1, strlen(m[i].name) - kl - 1),
                         sl_lua_str_ref(m[i].data, m[i].len));
    sl_lua_table_adds(&ctx, "name", sl_lua_str_ref("shard.tar", 9));
    struct sl_lua_val a[2] = { s, ctx }, res = sl_lua_nil();
    struct sl_lua_limits lim;
    sl_lua_limits_default(&lim);
    lim.timeout_ns = 30LL * 1000000000LL;
    int rc = sl_lua_call("local", script, slen, "transform_sample", a, 2, &lim, NULL, NULL, &res, err);
    if (rc == 0 && res.type == SL_LUA_TABLE)
        for (size_t i = 0; i < res.t.n; i++)
            if (res.t.kv[i].v.type == SL_LUA_STR)
                *out += res.t.kv[i].v.s.len;
    sl_lua_val_free(&res);
    sl_lua_val_free(&s);
    sl_lua_val_free(&ctx);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: etl_local SCRIPT.lua SHARD.tar [ROUNDS]\n");
        return 2;
    }
    size_t slen, tlen;
    char *script = slurp(argv[1], &slen), *tar = slurp(argv[2], &tlen);
    int rounds = argc > 3 ? atoi(argv[3]) : 1;
    if (!script || !tar) {
        fprintf(stderr, "etl_local: cannot read %s\n", script ? argv[2] : argv[1]);
        return 1;
    }
    size_t samples = 0, out = 0;
    double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
    for (int r = 0; r < rounds; r++) {
        struct archive *a = archive_read_new();
        archive_read_support_format_tar(a);
        if (archive_read_open_memory(a, tar, tlen) != ARCHIVE_OK) {
            fprintf(stderr, "etl_local: %s: %s\n", argv[2], archive_error_string(a));
            return 1;
        }
        struct mem m[64];
        int nm = 0;
        struct archive_entry *e;
        for (;;) {
            int st = archive_read_next_header(a, &e);
            const char *name = st == ARCHIVE_OK ? archive_entry_pathname(e) : NULL;
            if (nm && (!name || key_len(name) != key_len(m[0].name) ||
                       strncmp(name, m[0].name, key_len(name)))) {
                struct sl_err err = { 0 };
                if (run(script, slen, m, nm, &out, &err) != 0) {
                    fprintf(stderr, "etl_local: sample %s: %s\n", m[0].name, err.msg);
                    return 1;
                }
                samples++;
                for (int i = 0; i < nm; i++) {
                    free(m[i].name);
                    free(m[i].data);
                }
                nm = 0;
            }
            if (!name)
                break;
            if (nm == 64)
                return 1;
            size_t n = (size_t)archive_entry_size(e);
            m[nm].name = strdup(name);
            m[nm].data = malloc(n ? n : 1);
            m[nm].len = (size_t)archive_read_data(a, m[nm].data, n);
            nm++;
        }
        archive_read_free(a);
    }
    printf("samples %zu out_bytes %zu wall_s %.4f cpu_s %.4f\n", samples, out, now(CLOCK_MONOTONIC) - w0,
           now(CLOCK_PROCESS_CPUTIME_ID) - c0);
    free(script);
    free(tar);
    return 0;
}
