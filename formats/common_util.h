/* SPDX-License-Identifier: MIT
 * common_util.h: the bottom layer of the shard-format plugins (formats/):
 * the types every formats/ unit shares (what a plugin is: struct fmt_kind;
 * its per-plugin state: struct fmt_state) and the small helpers with no
 * dependency on any other formats/ unit: error formatting, the io name for
 * messages, allocation through the host table. Implemented in common_util.c.
 *
 * Layering (calls go downwards only; nothing here calls up):
 *   fmt_<name>.c  ->  common_arch.c  ->  common_tar.c  ->  common_util.c
 *   (fmt_tar.c also calls common_tar.c directly; every unit may call
 *   common_util.c). common_fmt.h includes this header and declares the rest.
 *
 * Nothing here is ABI: each plugin exports only sl_plugin_entry. Prefix: fmt_.
 */
#ifndef SL_FMT_COMMON_UTIL_H
#define SL_FMT_COMMON_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shale_plugin.h"

/* What an archive looks like on the wire: a libarchive filter and format. */
enum fmt_filter { FMT_FILTER_NONE = 0, FMT_FILTER_GZIP, FMT_FILTER_LZ4 };
enum fmt_format { FMT_FORMAT_TAR = 0, FMT_FORMAT_ZIP };

/* Static description of one format plugin (one per fmt_<name>.c; see
 * FMT_PLUGIN_DEFINE in common_fmt.h). Static storage: valid for the life of
 * the loaded plugin; the strings are literals. */
struct fmt_kind {
    const char *name;       /* plugin name, e.g. "tar.lz4" */
    const char *label;      /* for messages: "tar.lz4 shard" */
    enum fmt_filter filter;
    enum fmt_format format;
};

/* Per-plugin state (the void *state of the ABI). Created by fmt_init_kind and
 * freed by fmt_fini (common_arch.c); valid from plugin init to plugin fini.
 * host and kind are borrowed (host-owned resp. static); locale is owned by
 * the state. */
struct fmt_state {
    const struct sl_host_api *host;
    const struct fmt_kind *kind;
    void *locale;           /* locale_t with a UTF-8 LC_CTYPE, or NULL */
};

/* Errors: format the message into the caller-owned err[errlen] (nothing is
 * written when err is NULL or errlen is 0; the message is truncated to fit)
 * and return code, so that `return fmt_errf(...)` reports and fails at once.
 * Callers write "<label> <archive>: <what happened>; <what to do>". */
int fmt_errf(char *err, size_t errlen, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* io->name, or "(unnamed)" when io or its name is NULL or empty. The result
 * is borrowed: valid as long as io (or, for "(unnamed)", forever). */
const char *fmt_ioname(const struct sl_io *io);

/* Zeroed memory from the host allocator (st->host->calloc), NULL when out of
 * memory. The caller owns it and releases it with fmt_free. */
void *fmt_alloc(const struct fmt_state *st, size_t n);

/* Release memory from fmt_alloc or any other st->host allocation; p may be
 * NULL. */
void fmt_free(const struct fmt_state *st, void *p);

#endif
