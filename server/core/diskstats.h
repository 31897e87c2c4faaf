/* SPDX-License-Identifier: MIT
 * diskstats.h: the block devices under a target's mountpaths and their
 * cumulative I/O counters, from stat()'s st_dev, /sys/dev/block/MAJ:MIN and
 * /proc/diskstats, read only when asked (node_status, /metrics), never per
 * request. A mountpath on a partition reports its whole disk (as AIStore
 * does); one on a filesystem without a block device (tmpfs, overlay, NFS,
 * btrfs's anonymous st_dev) reports none, and says which filesystem it is.
 */
#ifndef SL_DISKSTATS_H
#define SL_DISKSTATS_H

#include "sl.h"

#include <jansson.h>

struct sl_disk_io {
    char name[32];              /* as /proc/diskstats names it: "sda", "nvme0n1", "dm-0", "loop3" */
    uint64_t rd_n, rd_bytes, rd_ms, wr_n, wr_bytes, wr_ms, io_ms;
    bool found;                 /* its line was in /proc/diskstats */
};

/* The disk path's filesystem is on: 1 with its name; 0 when it has none,
 * with why ("tmpfs", "overlay", "no /sys/dev/block/0:45"); -1 when path
 * cannot be stat()ed (why says so). */
int sl_disk_of_path(const char *path, char *name, size_t n, char *why, size_t wn);
/* Fill d[0..n) (names set) with one read of /proc/diskstats; -1 when it
 * cannot be read. */
int sl_disk_read(struct sl_disk_io *d, int n);
/* node_status' view of these mountpaths: *disk = {"sda": {"read.n",
 * "read.bytes", "read.ms", "write.n", "write.bytes", "write.ms", "io.ms"
 * (all "u64" strings, cumulative), "mountpaths": [...]}}, *none =
 * {"/mp": "tmpfs: no block device"} for those without one; both new. */
void sl_disk_json(const char *const *paths, int n, json_t **disk, json_t **none);
/* The same as Prometheus counters (ais_target_disk_read_bytes{disk=...}, ...)
 * and the utilisation since the previous call at least 1 s before
 * (ais_target_disk_util, gauge, %). */
void sl_disk_render(struct sl_buf *b, const char *prefix, const char *node_id, const char *const *paths, int n);

#endif
