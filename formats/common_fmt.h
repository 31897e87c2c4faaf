/* SPDX-License-Identifier: MIT
 * common_fmt.h: internals shared by the shard-format plugins (formats/fmt_*.c
 * and formats/common_*.c, linked into every fmt_<name>.so). Nothing here is
 * ABI: each plugin exports only sl_plugin_entry. Prefix: fmt_.
 */
#ifndef SL_FMT_COMMON_H
#define SL_FMT_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "shale_plugin.h"

/* What an archive looks like on the wire: a libarchive filter and format. */
enum fmt_filter { FMT_FILTER_NONE = 0, FMT_FILTER_GZIP, FMT_FILTER_LZ4 };
enum fmt_format { FMT_FORMAT_TAR = 0, FMT_FORMAT_ZIP };

/* Static description of one format plugin (one per fmt_<name>.c). */
struct fmt_kind {
    const char *name;       /* plugin name, e.g. "tar.lz4" */
    const char *label;      /* for messages: "tar.lz4 shard" */
    enum fmt_filter filter;
    enum fmt_format format;
};

/* Per-plugin state (the void *state of the ABI), created by fmt_init. */
struct fmt_state {
    const struct sl_host_api *host;
    const struct fmt_kind *kind;
    void *locale;           /* locale_t with a UTF-8 LC_CTYPE, or NULL */
};

/* Generic plugin init/fini used by every fmt_*.c: `kind` is remembered in the
 * state. Their ops tables point at the functions below. */
int fmt_init_kind(const struct sl_host_api *host, const struct fmt_kind *kind, void **state, char *err,
                  size_t errlen);
void fmt_fini(void *state);

/* For sl_plugin_entry: false (with err written) when the host table lacks
 * something these plugins use. */
bool fmt_host_ok(const struct sl_host_api *host, const char *name, char *err, size_t errlen);

/* Errors: format "<label> <archive>: <message>" into err; return code. */
int fmt_errf(char *err, size_t errlen, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Locale switch around libarchive calls (see common_arch.c for why). */
void *fmt_locale_enter(const struct fmt_state *st);
void fmt_locale_leave(void *saved);

/* libarchive-backed operations (common_arch.c). */
int fmt_reader_open(void *state, const struct sl_io *io, const struct sl_fmt_limits *lim, uint32_t flags,
                    void **rd, char *err, size_t errlen);
int fmt_reader_next(void *rd, struct sl_fmt_entry *e, char *err, size_t errlen);
int64_t fmt_reader_read(void *rd, void *buf, size_t n, char *err, size_t errlen);
int fmt_reader_skip(void *rd, char *err, size_t errlen);
void fmt_reader_close(void *rd);
int fmt_writer_open(void *state, const struct sl_io *io, uint32_t flags, void **wr, char *err, size_t errlen);
int fmt_writer_add(void *wr, const struct sl_fmt_entry *e, char *err, size_t errlen);
int fmt_writer_write(void *wr, const void *buf, size_t n, char *err, size_t errlen);
int fmt_writer_finish(void *wr, char *err, size_t errlen);
void fmt_writer_close(void *wr);

/* Detection helpers (common_arch.c): magic checks, and for compressed
 * streams a trial decode of the head to see whether a tar header follows. */
int fmt_detect_tar(const void *head, size_t n);
int fmt_detect_compressed_tar(const struct fmt_state *st, const void *head, size_t n);
int fmt_detect_zip(const void *head, size_t n);
int fmt_detect(void *state, const void *head, size_t n);

/* Zip pre-check (common_arch.c): read the end-of-central-directory record and
 * refuse archives declaring more members than lim->max_members before
 * libarchive loads the central directory into memory. */
int fmt_zip_precheck(const struct fmt_state *st, const struct sl_io *io, const struct sl_fmt_limits *lim,
                     char *err, size_t errlen);

/* Tar header scanner (common_tar.c), independent of libarchive: exact data
 * offsets, true-append offset. */
bool fmt_tar_header_valid(const unsigned char *blk);
int fmt_tar_index(void *state, const struct sl_io *io, const struct sl_fmt_limits *lim, sl_fmt_index_cb cb,
                  void *cbctx, char *err, size_t errlen);
int fmt_tar_append_offset(void *state, const struct sl_io *io, const struct sl_fmt_limits *lim, int64_t *off,
                          char *err, size_t errlen);

/* Small shared helpers */
const char *fmt_ioname(const struct sl_io *io);   /* io->name or "(unnamed)" */
void *fmt_alloc(const struct fmt_state *st, size_t n);
void fmt_free(const struct fmt_state *st, void *p);

#define FMT_UNUSED __attribute__((unused))

#endif
