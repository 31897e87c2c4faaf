/* SPDX-License-Identifier: MIT
 * perf.c: `shale performance latency|disk|capacity [TARGET]`, as ais's:
 * each target's average request latency and its disks' rates between two
 * samples of its node_status (--refresh apart, --count reports), and its
 * mountpaths' capacity; and the disk rates `storage disk show` adds.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    if (json_is_integer(v))
        return (uint64_t)json_integer_value(v);
    if (json_is_real(v))
        return (uint64_t)json_real_value(v);
    if (json_is_string(v))
        return strtoull(json_string_value(v), NULL, 10);
    return 0;
}

static uint64_t delta(json_t *a, json_t *b, const char *k)
{
    uint64_t x = num(a, k), y = num(b, k);
    return y > x ? y - x : 0;
}

static void sleep_ns(int64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL) };
    while (nanosleep(&ts, &ts) < 0)
        ;
}

/* --refresh DURATION (default dflt) and --count N (default 1); -1 after the error */
static int refresh_count(const struct opts *o, int64_t dflt, int64_t *every, long *count)
{
    *every = dflt;
    const char *rs = opt_str(o, "refresh");
    if (rs && (sl_parse_duration(rs, every) < 0 || *every <= 0)) {
        fprintf(stderr, "Error: --refresh: invalid duration \"%s\" (e.g. 1s, 10s, 1m)\n", rs);
        return -1;
    }
    *count = 1;
    const char *cs = opt_str(o, "count");
    if (cs) {
        char *end = NULL;
        *count = strtol(cs, &end, 10);
        if (!*cs || *end || *count < 1) {
            fprintf(stderr, "Error: --count: \"%s\" is not a positive number of reports\n", cs);
            return -1;
        }
    }
    return 0;
}

/* {id: node_status or null} of targets {id: snode} */
static json_t *sample(json_t *targets)
{
    json_t *out = json_object();
    const char *id;
    json_t *sn;
    json_object_foreach(targets, id, sn) {
        json_t *st = cli_node_status(id, sn);
        json_object_set_new(out, id, st ? st : json_null());
    }
    return out;
}

/* ---- latency ---- */

static const struct {
    const char *key, *col;      /* the tracker's name ("del" for get.n ...), the column's */
    bool always;                /* a column even when nothing was counted */
} lat_ops[] = {
    { "get", "GET", true }, { "put", "PUT", true }, { "head", "HEAD", true }, { "del", "DELETE", true },
    { "lst", "LIST", false }, { "append", "APPEND", false }, { "arch_get", "GET-ARCH", false },
    { "etl_get", "GET-ETL", false },
};
#define NLAT SL_ARRAY_SIZE(lat_ops)

static uint64_t trk(json_t *st, const char *op, const char *what)
{
    char k[64];
    snprintf(k, sizeof(k), "%s.%s", op, what);
    return num(json_object_get(json_object_get(st, "tracker"), k), "v");
}

static void fmt_ms(double ms, char *out, size_t n)
{
    if (ms < 1)
        snprintf(out, n, "%.3fms", ms);
    else if (ms < 1000)
        snprintf(out, n, "%.2fms", ms);
    else
        snprintf(out, n, "%.2fs", ms / 1000);
}

static void latency_report(json_t *prev, json_t *cur)
{
    /* the columns: the ops shown always, and the others counted on some target */
    bool show[NLAT];
    for (size_t k = 0; k < NLAT; k++) {
        show[k] = lat_ops[k].always;
        const char *id;
        json_t *st;
        json_object_foreach(cur, id, st) {
            if (json_is_object(st) && trk(st, lat_ops[k].key, "n") > trk(json_object_get(prev, id), lat_ops[k].key,
                                                                          "n"))
                show[k] = true;
        }
    }
    const char *hdr[1 + 2 * NLAT];
    char names[2 * NLAT][32];
    int nc = 0;
    hdr[nc++] = "TARGET";
    for (size_t k = 0; k < NLAT; k++) {
        if (!show[k])
            continue;
        snprintf(names[nc - 1], sizeof(names[0]), "%s(n)", lat_ops[k].col);
        hdr[nc] = names[nc - 1];
        nc++;
        snprintf(names[nc - 1], sizeof(names[0]), "%s(t)", lat_ops[k].col);
        hdr[nc] = names[nc - 1];
        nc++;
    }
    struct table *t = table_new_arr(nc, hdr);
    json_t *all = json_object();
    const char *id;
    json_t *st;
    json_object_foreach(cur, id, st) {
        char name[160], cells[2 * NLAT][32];
        const char *row[1 + 2 * NLAT];
        snprintf(name, sizeof(name), "t[%s]", id);
        row[0] = name;
        json_t *pt = json_object_get(prev, id);
        if (!json_is_object(st) || !json_is_object(pt)) {
            for (int c = 1; c < nc; c++)
                row[c] = "-";
            table_row_arr(t, row);
            json_object_set_new(all, name, json_null());
            continue;
        }
        json_t *j = json_object();
        int c = 1;
        for (size_t k = 0; k < NLAT; k++) {
            const char *op = lat_ops[k].key;
            uint64_t n = trk(st, op, "n") - SL_MIN(trk(st, op, "n"), trk(pt, op, "n"));
            uint64_t ns = trk(st, op, "ns.total") - SL_MIN(trk(st, op, "ns.total"), trk(pt, op, "ns.total"));
            char ek[64];
            snprintf(ek, sizeof(ek), "err.%s.n", op);
            uint64_t errs = delta(json_object_get(json_object_get(pt, "tracker"), ek),
                                  json_object_get(json_object_get(st, "tracker"), ek), "v");
            double avg = n ? (double)ns / (double)n / 1e6 : 0;
            json_object_set_new(j, op, n ? json_pack("{s:I,s:f,s:I}", "n", (json_int_t)n, "avg_ms", avg, "errors",
                                                     (json_int_t)errs)
                                         : json_pack("{s:I,s:n,s:I}", "n", (json_int_t)0, "avg_ms", "errors",
                                                     (json_int_t)errs));
            if (!show[k])
                continue;
            snprintf(cells[c - 1], sizeof(cells[0]), "%llu", (unsigned long long)n);
            row[c] = cells[c - 1];
            c++;
            if (n)
                fmt_ms(avg, cells[c - 1], sizeof(cells[0]));
            else
                snprintf(cells[c - 1], sizeof(cells[0]), "-");
            row[c] = cells[c - 1];
            c++;
        }
        table_row_arr(t, row);
        json_object_set_new(all, name, j);
    }
    if (cli_json)
        cli_print_json(all);
    else
        table_print(t, stdout, !cli_no_headers);
    table_free(t);
    json_decref(all);
}

/* ---- disk ---- */

struct table *cli_disk_table(void)
{
    return table_new(9, "TARGET", "DISK", "READ", "READ(iops)", "READ(avg size)", "WRITE", "WRITE(iops)",
                     "WRITE(avg size)", "UTIL(%)");
}

json_t *cli_disk_rates(json_t *targets, int64_t every, struct table *t, struct sl_buf *notes)
{
    json_t *a = sample(targets);
    sleep_ns(every);
    json_t *b = sample(targets);
    json_t *all = json_object();
    const char *id;
    json_t *st;
    json_object_foreach(b, id, st) {
        char name[160];
        snprintf(name, sizeof(name), "t[%s]", id);
        json_t *pt = json_object_get(a, id);
        if (!json_is_object(st) || !json_is_object(pt)) {
            if (t)
                table_row(t, name, "-", "-", "-", "-", "-", "-", "-", "offline");
            json_object_set_new(all, name, json_null());
            continue;
        }
        /* the target's own clock between its two samples (an old target that reports none: ours) */
        uint64_t dns = delta(pt, st, "disk_mono_ns");
        double secs = dns ? (double)dns / 1e9 : (double)every / 1e9;
        json_t *disks = json_object(), *none = json_object_get(st, "disk_none");
        const char *dn;
        json_t *d;
        bool first = true;
        json_object_foreach(json_object_get(st, "disk"), dn, d) {
            json_t *pd = json_object_get(json_object_get(pt, "disk"), dn);
            if (!pd)
                continue; /* (it appeared between the samples) */
            uint64_t rb = delta(pd, d, "read.bytes"), rn = delta(pd, d, "read.n"), wb = delta(pd, d, "write.bytes"),
                     wn = delta(pd, d, "write.n"), io = delta(pd, d, "io.ms");
            double util = 100.0 * (double)io / (secs * 1000.0);
            if (util > 100)
                util = 100;
            json_object_set_new(disks, dn, json_pack("{s:f,s:f,s:I,s:f,s:f,s:I,s:f,s:O}", "read_bytes_per_s",
                                                     (double)rb / secs, "read_iops", (double)rn / secs,
                                                     "read_avg_size", (json_int_t)(rn ? rb / rn : 0),
                                                     "write_bytes_per_s", (double)wb / secs, "write_iops",
                                                     (double)wn / secs, "write_avg_size",
                                                     (json_int_t)(wn ? wb / wn : 0), "util_pct", util, "mountpaths",
                                                     json_object_get(d, "mountpaths")));
            if (!t)
                continue;
            char c[7][32];
            sl_format_size((uint64_t)((double)rb / secs), c[0], sizeof(c[0]));
            strcat(c[0], "/s");
            snprintf(c[1], sizeof(c[1]), "%.1f", (double)rn / secs);
            sl_format_size(rn ? rb / rn : 0, c[2], sizeof(c[2]));
            sl_format_size((uint64_t)((double)wb / secs), c[3], sizeof(c[3]));
            strcat(c[3], "/s");
            snprintf(c[4], sizeof(c[4]), "%.1f", (double)wn / secs);
            sl_format_size(wn ? wb / wn : 0, c[5], sizeof(c[5]));
            snprintf(c[6], sizeof(c[6]), "%.0f", util);
            table_row(t, first ? name : "", dn, c[0], c[1], c[2], c[3], c[4], c[5], c[6]);
            first = false;
        }
        const char *mp;
        json_t *why;
        json_object_foreach(none, mp, why) {
            if (t && first) {
                table_row(t, name, "(none)", "-", "-", "-", "-", "-", "-", "-");
                first = false;
            }
            if (notes)
                sl_buf_printf(notes, "%s %s: %s: no disk statistics\n", name, mp, json_string_value(why));
        }
        if (t && first)
            table_row(t, name, "(none)", "-", "-", "-", "-", "-", "-", "-"); /* (no mountpaths) */
        if (notes && !json_object_get(st, "disk"))
            sl_buf_printf(notes, "%s: reports no disk statistics (a shaled older than `performance disk`: "
                          "upgrade it)\n", name);
        json_object_set_new(all, name, json_pack("{s:o,s:O}", "disks", disks, "no_disk", none ? none : json_object()));
    }
    json_decref(a);
    json_decref(b);
    return all;
}

static int perf_disk(const struct opts *o, json_t *targets)
{
    int64_t every;
    long count;
    if (refresh_count(o, 5LL * 1000000000LL, &every, &count) < 0)
        return 1;
    for (long n = 0; n < count; n++) {
        struct table *t = cli_disk_table();
        struct sl_buf notes;
        sl_buf_init(&notes);
        json_t *all = cli_disk_rates(targets, every, t, &notes);
        if (cli_json) {
            cli_print_json(all);
        } else {
            if (n)
                printf("\n");
            table_print(t, stdout, !cli_no_headers);
            if (notes.len)
                printf("%s", notes.p);
        }
        fflush(stdout);
        sl_buf_free(&notes);
        table_free(t);
        json_decref(all);
    }
    return 0;
}

static int perf_latency(const struct opts *o, json_t *targets)
{
    int64_t every;
    long count;
    if (refresh_count(o, 5LL * 1000000000LL, &every, &count) < 0)
        return 1;
    json_t *prev = sample(targets);
    for (long n = 0; n < count; n++) {
        sleep_ns(every);
        json_t *cur = sample(targets);
        if (n && !cli_json)
            printf("\n");
        latency_report(prev, cur);
        fflush(stdout);
        json_decref(prev);
        prev = cur;
    }
    json_decref(prev);
    return 0;
}

/* ---- capacity ---- */

static void cap_cells(uint64_t used, uint64_t avail, uint64_t total, char c[4][32])
{
    sl_format_size(used, c[0], 32);
    sl_format_size(avail, c[1], 32);
    sl_format_size(total, c[2], 32);
    snprintf(c[3], 32, "%.2f", total ? 100.0 * (double)used / (double)total : 0.0);
}

static json_t *cap_json(uint64_t used, uint64_t avail, uint64_t total)
{
    return json_pack("{s:I,s:I,s:I,s:f}", "used", (json_int_t)used, "avail", (json_int_t)avail, "total",
                     (json_int_t)total, "used_pct", total ? 100.0 * (double)used / (double)total : 0.0);
}

static int perf_capacity(const struct opts *o, json_t *targets)
{
    (void)o;
    json_t *st_all = sample(targets), *all = json_object(), *tj = json_object();
    struct table *t = table_new(6, "TARGET", "MOUNTPATH", "USED", "AVAIL", "TOTAL", "USED(%)");
    uint64_t cu = 0, ct = 0;
    int nt = 0, nmp = 0;
    const char *id;
    json_t *st;
    json_object_foreach(st_all, id, st) {
        char name[160], c[4][32];
        snprintf(name, sizeof(name), "t[%s]", id);
        json_t *cap = json_object_get(st, "capacity");
        if (!cap) {
            table_row(t, name, "-", "-", "-", "-", "offline");
            json_object_set_new(tj, name, json_null());
            continue;
        }
        nt++;
        json_t *mj = json_object(), *usage = json_object_get(cap, "mountpath_usage");
        size_t i;
        json_t *mp;
        json_array_foreach(json_object_get(cap, "mountpaths"), i, mp) {
            const char *path = json_string_value(mp);
            json_t *u = json_object_get(usage, path);
            nmp++;
            if (!u) { /* (statvfs failed, or a target that reports no per-mountpath usage) */
                table_row(t, i ? "" : name, path, "-", "-", "-", "-");
                json_object_set_new(mj, path, json_null());
                continue;
            }
            cap_cells(num(u, "used"), num(u, "avail"), num(u, "total"), c);
            table_row(t, i ? "" : name, path, c[0], c[1], c[2], c[3]);
            json_object_set_new(mj, path, cap_json(num(u, "used"), num(u, "avail"), num(u, "total")));
        }
        /* the target's own total counts a filesystem several mountpaths share once */
        uint64_t used = num(cap, "used"), total = num(cap, "total");
        cu += used;
        ct += total;
        json_t *tot = cap_json(used, total > used ? total - used : 0, total);
        json_object_set_new(tot, "mountpaths", mj);
        json_object_set_new(tj, name, tot);
    }
    json_object_set_new(all, "targets", tj);
    json_t *cl = cap_json(cu, ct > cu ? ct - cu : 0, ct);
    json_object_set_new(cl, "num_targets", json_integer(nt));
    json_object_set_new(cl, "num_mountpaths", json_integer(nmp));
    json_object_set_new(all, "cluster", cl);
    if (cli_json) {
        cli_print_json(all);
    } else {
        table_print(t, stdout, !cli_no_headers);
        if (!cli_no_headers) {
            char c[4][32];
            cap_cells(cu, ct > cu ? ct - cu : 0, ct, c);
            printf("Cluster: %d target%s, %d mountpath%s: used %s, avail %s, total %s, used %s%%\n", nt,
                   nt == 1 ? "" : "s", nmp, nmp == 1 ? "" : "s", c[0], c[1], c[2], c[3]);
        }
    }
    table_free(t);
    json_decref(all);
    json_decref(st_all);
    return 0;
}

int cli_perf(const char *view, int argc, char **argv)
{
    char path[64], usage[96];
    snprintf(path, sizeof(path), "performance %s", view);
    snprintf(usage, sizeof(usage), "performance %s [TARGET]", view);
    struct opts o;
    if (cli_opts(&o, path, argc, argv) < 0)
        return 1;
    json_t *targets = cli_sel_targets(o.argc ? o.argv[0] : NULL, usage);
    if (!targets)
        return 1;
    int rc;
    if (!json_object_size(targets)) {
        printf("No targets in the cluster map\n");
        rc = 0;
    } else if (!strcmp(view, "latency")) {
        rc = perf_latency(&o, targets);
    } else if (!strcmp(view, "disk")) {
        rc = perf_disk(&o, targets);
    } else {
        rc = perf_capacity(&o, targets);
    }
    json_decref(targets);
    return rc;
}
