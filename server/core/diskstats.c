/* SPDX-License-Identifier: MIT
 * diskstats.c: see diskstats.h.
 */
#include "diskstats.h"
#include "jsonx.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#define MAXD 64                 /* disks under one target's mountpaths, at most */

/* a filesystem's name from statfs's f_type, for the ones without a device */
static const char *fs_name(const char *path)
{
    static const struct {
        unsigned long magic;
        const char *name;
    } fs[] = {
        { 0x01021994, "tmpfs" }, { 0x794c7630, "overlay" }, { 0x9123683e, "btrfs" }, { 0x6969, "nfs" },
        { 0xff534d42, "cifs" }, { 0x65735546, "fuse" }, { 0x2fc12fc1, "zfs" }, { 0x58465342, "xfs" },
        { 0xef53, "ext4" }, { 0x858458f6, "ramfs" }, { 0x73717368, "squashfs" }, { 0x00c36400, "ceph" },
        { 0x9fa0, "proc" }, { 0x62656572, "sysfs" },
    };
    struct statfs sf;
    if (statfs(path, &sf) < 0)
        return NULL;
    for (size_t i = 0; i < SL_ARRAY_SIZE(fs); i++)
        if ((unsigned long)sf.f_type == fs[i].magic)
            return fs[i].name;
    return NULL;
}

int sl_disk_of_path(const char *path, char *name, size_t n, char *why, size_t wn)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        snprintf(why, wn, "cannot stat %s: %s", path, strerror(errno));
        return -1;
    }
    unsigned ma = major(st.st_dev), mi = minor(st.st_dev);
    char link[64], real[PATH_MAX];
    snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", ma, mi);
    if (ma == 0 || !realpath(link, real)) {
        const char *fs = fs_name(path);
        snprintf(why, wn, "%s%sno block device (st_dev %u:%u)", fs ? fs : "", fs ? ": " : "", ma, mi);
        return 0;
    }
    /* a partition (/sys/.../block/sda/sda1 has a "partition" file): its disk is the parent */
    char part[PATH_MAX + 16];
    snprintf(part, sizeof(part), "%s/partition", real);
    char *slash = strrchr(real, '/');
    if (access(part, F_OK) == 0 && slash && slash != real) {
        *slash = 0;
        slash = strrchr(real, '/');
    }
    snprintf(name, n, "%s", slash ? slash + 1 : real);
    return 1;
}

int sl_disk_read(struct sl_disk_io *d, int n)
{
    FILE *f = fopen("/proc/diskstats", "re");
    if (!f)
        return -1;
    for (int i = 0; i < n; i++)
        d[i].found = false;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        unsigned ma, mi;
        char nm[64];
        unsigned long long v[11] = { 0 };
        if (sscanf(line, "%u %u %63s %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &ma, &mi, nm, &v[0],
                   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10]) < 13)
            continue;
        for (int i = 0; i < n; i++) {
            if (strcmp(d[i].name, nm))
                continue;
            /* reads, merged, sectors (of 512 bytes, whatever the device's), ms; the same for writes;
             * in flight; ms with I/O in flight */
            d[i].rd_n = v[0];
            d[i].rd_bytes = v[2] * 512;
            d[i].rd_ms = v[3];
            d[i].wr_n = v[4];
            d[i].wr_bytes = v[6] * 512;
            d[i].wr_ms = v[7];
            d[i].io_ms = v[9];
            d[i].found = true;
        }
    }
    fclose(f);
    return 0;
}

/* the distinct disks under paths into d (with, per path, its disk's index or -1 in which[]) */
static int disks_of(const char *const *paths, int n, struct sl_disk_io *d, int *which, json_t *none)
{
    int nd = 0;
    for (int i = 0; i < n; i++) {
        char name[32], why[160];
        which[i] = -1;
        if (sl_disk_of_path(paths[i], name, sizeof(name), why, sizeof(why)) != 1) {
            if (none)
                json_object_set_new(none, paths[i], json_string(why));
            continue;
        }
        int j;
        for (j = 0; j < nd && strcmp(d[j].name, name); j++)
            ;
        if (j == nd && nd < MAXD) {
            memset(&d[nd], 0, sizeof(d[nd]));
            snprintf(d[nd++].name, sizeof(d[0].name), "%s", name);
        }
        which[i] = j < nd ? j : -1;
    }
    return nd;
}

void sl_disk_json(const char *const *paths, int n, json_t **disk, json_t **none)
{
    struct sl_disk_io d[MAXD];
    int *which = calloc((size_t)(n > 0 ? n : 1), sizeof(int));
    *disk = json_object();
    *none = json_object();
    int nd = disks_of(paths, n, d, which, *none);
    if (nd && sl_disk_read(d, nd) < 0)
        nd = 0;
    for (int j = 0; j < nd; j++) {
        json_t *mps = json_array();
        for (int i = 0; i < n; i++)
            if (which[i] == j)
                json_array_append_new(mps, json_string(paths[i]));
        if (!d[j].found) {
            for (int i = 0; i < n; i++)
                if (which[i] == j)
                    json_object_set_new(*none, paths[i], json_sprintf("%s: not in /proc/diskstats", d[j].name));
            json_decref(mps);
            continue;
        }
        json_t *o = json_object();
        json_object_set_new(o, "read.n", sl_json_u64(d[j].rd_n));
        json_object_set_new(o, "read.bytes", sl_json_u64(d[j].rd_bytes));
        json_object_set_new(o, "read.ms", sl_json_u64(d[j].rd_ms));
        json_object_set_new(o, "write.n", sl_json_u64(d[j].wr_n));
        json_object_set_new(o, "write.bytes", sl_json_u64(d[j].wr_bytes));
        json_object_set_new(o, "write.ms", sl_json_u64(d[j].wr_ms));
        json_object_set_new(o, "io.ms", sl_json_u64(d[j].io_ms));
        json_object_set_new(o, "mountpaths", mps);
        json_object_set_new(*disk, d[j].name, o);
    }
    free(which);
}

/* ais_target_disk_util: busy time over wall time since the previous sample
 * of that disk at least 1 s before (the first sample: no gauge yet) */
static struct {
    char name[32];
    uint64_t io_ms;
    int64_t mono;
    int util;
} prev[MAXD];
static int nprev;
static pthread_mutex_t prev_mu = PTHREAD_MUTEX_INITIALIZER;

static int disk_util(const struct sl_disk_io *d)
{
    pthread_mutex_lock(&prev_mu);
    int i;
    for (i = 0; i < nprev && strcmp(prev[i].name, d->name); i++)
        ;
    int64_t now = sl_mono_ns();
    if (i == nprev) {
        if (nprev == MAXD) {
            pthread_mutex_unlock(&prev_mu);
            return -1;
        }
        memcpy(prev[nprev].name, d->name, sizeof(prev[0].name)); /* (both 32 bytes, NUL-terminated) */
        prev[nprev].io_ms = d->io_ms;
        prev[nprev].mono = now;
        prev[nprev++].util = -1;
    } else if (now - prev[i].mono >= 1000000000LL) {
        uint64_t busy = d->io_ms >= prev[i].io_ms ? d->io_ms - prev[i].io_ms : 0;
        double wall_ms = (double)(now - prev[i].mono) / 1e6;
        int u = (int)(100.0 * (double)busy / wall_ms + 0.5);
        prev[i].util = u > 100 ? 100 : u;
        prev[i].io_ms = d->io_ms;
        prev[i].mono = now;
    }
    int u = prev[i].util;
    pthread_mutex_unlock(&prev_mu);
    return u;
}

void sl_disk_render(struct sl_buf *b, const char *prefix, const char *node_id, const char *const *paths, int n)
{
    struct sl_disk_io d[MAXD];
    int *which = calloc((size_t)(n > 0 ? n : 1), sizeof(int));
    int nd = disks_of(paths, n, d, which, NULL);
    free(which);
    if (!nd || sl_disk_read(d, nd) < 0)
        return;
    static const struct {
        const char *name, *help;
        size_t off;
    } fam[] = {
        { "disk_read_bytes", "bytes read from the disk (/proc/diskstats)", offsetof(struct sl_disk_io, rd_bytes) },
        { "disk_write_bytes", "bytes written to the disk", offsetof(struct sl_disk_io, wr_bytes) },
        { "disk_read_count", "reads completed by the disk", offsetof(struct sl_disk_io, rd_n) },
        { "disk_write_count", "writes completed by the disk", offsetof(struct sl_disk_io, wr_n) },
        { "disk_io_ms_total", "milliseconds the disk had I/O in flight", offsetof(struct sl_disk_io, io_ms) },
    };
    for (size_t f = 0; f < SL_ARRAY_SIZE(fam); f++) {
        sl_buf_printf(b, "# HELP %s_%s %s, by disk\n# TYPE %s_%s counter\n", prefix, fam[f].name, fam[f].help,
                      prefix, fam[f].name);
        for (int j = 0; j < nd; j++)
            if (d[j].found)
                sl_buf_printf(b, "%s_%s{disk=\"%s\",node_id=\"%s\"} %llu\n", prefix, fam[f].name, d[j].name, node_id,
                              (unsigned long long)*(const uint64_t *)((const char *)&d[j] + fam[f].off));
    }
    sl_buf_printf(b, "# HELP %s_disk_util disk utilization since the previous scrape, percent\n"
                     "# TYPE %s_disk_util gauge\n", prefix, prefix);
    for (int j = 0; j < nd; j++) {
        int u = d[j].found ? disk_util(&d[j]) : -1;
        if (u >= 0)
            sl_buf_printf(b, "%s_disk_util{disk=\"%s\",node_id=\"%s\"} %d\n", prefix, d[j].name, node_id, u);
    }
}
