/* SPDX-License-Identifier: MIT
 * common_fmt.h: internals shared by the shard-format plugins (formats/fmt_*.c
 * and formats/common_*.c, linked into every fmt_<name>.so). Nothing here is
 * ABI: each plugin exports only sl_plugin_entry. Prefix: fmt_.
 *
 * The types (struct fmt_kind, struct fmt_state) and the bottom-layer helpers
 * (fmt_errf, fmt_ioname, fmt_alloc, fmt_free) live in common_util.h, which
 * this header includes; the layering of the units is described there. This
 * header declares what common_arch.c and common_tar.c implement, and the
 * macros that turn a fmt_<name>.c into a plugin (FMT_PLUGIN_DEFINE).
 */
#ifndef SL_FMT_COMMON_H
#define SL_FMT_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common_util.h"
#include "shale_plugin.h"

/* Plugin init/fini used by every fmt_*.c (common_arch.c), through
 * FMT_PLUGIN_DEFINE below. fmt_init_kind allocates the struct fmt_state
 * (plugin-owned, freed by fmt_fini) and remembers `kind` (static, borrowed);
 * fmt_fini accepts NULL. */
int fmt_init_kind(const struct sl_host_api *host, const struct fmt_kind *kind, void **state, char *err,
                  size_t errlen);
void fmt_fini(void *state);

/* For sl_plugin_entry: false (with err written) when the host table lacks
 * something these plugins use. */
bool fmt_host_ok(const struct sl_host_api *host, const char *name, char *err, size_t errlen);

/* Locale switch around libarchive calls (see common_arch.c for why):
 * fmt_locale_enter returns the thread's previous locale (NULL when nothing was
 * switched), to be handed to fmt_locale_leave on the same thread before the
 * plugin call returns. */
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
 * offsets, true-append offset. fmt_tar_header_valid checks one 512-byte
 * header block (blk must hold 512 bytes): not all zero, checksum matches. */
bool fmt_tar_header_valid(const unsigned char *blk);
int fmt_tar_index(void *state, const struct sl_io *io, const struct sl_fmt_limits *lim, sl_fmt_index_cb cb,
                  void *cbctx, char *err, size_t errlen);
int fmt_tar_append_offset(void *state, const struct sl_io *io, const struct sl_fmt_limits *lim, int64_t *off,
                          char *err, size_t errlen);

#define FMT_UNUSED __attribute__((unused))

/* ------------------------------------------------------------------------ */
/* Defining a format plugin (one fmt_<name>.c each)                         */
/* ------------------------------------------------------------------------ */

/* The struct sl_format_ops members every plugin here fills the same way:
 * detection and the libarchive-backed reader and writer of common_arch.c.
 * Use inside the initialiser of the plugin's static const struct
 * sl_format_ops, next to its own extensions, mime, caps (and, for plain tar,
 * append_offset and index). */
#define FMT_OPS_ARCHIVE                                                                                            \
    .detect = fmt_detect, .reader_open = fmt_reader_open, .reader_next = fmt_reader_next,                          \
    .reader_read = fmt_reader_read, .reader_skip = fmt_reader_skip, .reader_close = fmt_reader_close,              \
    .writer_open = fmt_writer_open, .writer_add = fmt_writer_add, .writer_write = fmt_writer_write,                \
    .writer_finish = fmt_writer_finish, .writer_close = fmt_writer_close

/* Turns a fmt_<name>.c into a plugin. Defines, at file scope:
 *  - the plugin's struct fmt_kind: name NAME, label NAME " shard", FILTER
 *    (enum fmt_filter) and FORMAT (enum fmt_format);
 *  - the struct sl_plugin descriptor: kind SL_PLUGIN_FORMAT, NAME, VERSION,
 *    DESCRIPTION, init = fmt_init_kind with that kind, fini = fmt_fini,
 *    format = &OPS;
 *  - the exported sl_plugin_entry, which refuses (NULL, err written) a host
 *    table fmt_host_ok rejects and otherwise returns the descriptor.
 * NAME, VERSION and DESCRIPTION are string literals; OPS is the file's static
 * const struct sl_format_ops, defined before the macro. Everything defined is
 * static and const except sl_plugin_entry; the descriptor stays valid until
 * the plugin is unloaded. Use once per plugin, followed by a semicolon. */
#define FMT_PLUGIN_DEFINE(NAME, FILTER, FORMAT, OPS, VERSION, DESCRIPTION)                                         \
    static const struct fmt_kind fmt_plugin_kind = {                                                               \
        .name = NAME,                                                                                              \
        .label = NAME " shard",                                                                                    \
        .filter = FILTER,                                                                                          \
        .format = FORMAT,                                                                                          \
    };                                                                                                             \
    static int fmt_plugin_init(const struct sl_host_api *host, void **state, char *err, size_t errlen)             \
    {                                                                                                              \
        return fmt_init_kind(host, &fmt_plugin_kind, state, err, errlen);                                          \
    }                                                                                                              \
    static const struct sl_plugin fmt_plugin = {                                                                   \
        SL_ABI_INIT(struct sl_plugin),                                                                             \
        .kind = SL_PLUGIN_FORMAT,                                                                                  \
        .name = NAME,                                                                                              \
        .version = VERSION,                                                                                        \
        .description = DESCRIPTION,                                                                                \
        .init = fmt_plugin_init,                                                                                   \
        .fini = fmt_fini,                                                                                          \
        .format = &(OPS),                                                                                          \
    };                                                                                                             \
    SL_PLUGIN_EXPORT const struct sl_plugin *sl_plugin_entry(const struct sl_host_api *host, char *err,            \
                                                             size_t errlen)                                        \
    {                                                                                                              \
        if (!fmt_host_ok(host, NAME, err, errlen))                                                                 \
            return NULL;                                                                                           \
        return &fmt_plugin;                                                                                        \
    }                                                                                                              \
    struct fmt_plugin_define_ends_with_a_semicolon

#endif
