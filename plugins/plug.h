/* SPDX-License-Identifier: MIT
 * plug.h: the server side of the plugin system: loading plugins from the
 * configured directory (plug_load.c), looking them up, and thin wrappers
 * that drive format readers/writers and sample-key rules with struct sl_err
 * errors (plug_io.c). Prefix: sl_plug_.
 *
 * Lifetime: load once at start (single-threaded) with sl_plug_reg_load; the
 * registry is read-only afterwards, so lookups need no lock and may run on
 * any thread. Plugins are never unloaded while the server runs:
 * sl_plug_reg_free exists for tests and clean exit, and refuses (logs, leaks)
 * when readers, writers or key instances are still open.
 */
#ifndef SL_PLUG_H
#define SL_PLUG_H

#include <jansson.h>

#include "shale_plugin.h"
#include "sl.h"

struct sl_plug;     /* one loaded plugin; owned by its registry */
struct sl_plug_reg; /* the plugins loaded from one directory */

/* ------------------------------------------------------------------------ */
/* Loading and lookup (plug_load.c)                                         */
/* ------------------------------------------------------------------------ */

/* Load every "*.so" in dir (sorted by file name, so "first wins" is stable).
 * Per file: realpath must stay inside dir (symlinks may point within it);
 * the file must be regular, not group/world-writable, owned by this user or
 * root; dlopen(RTLD_NOW|RTLD_LOCAL); dlsym(sl_plugin_entry); ABI major equal,
 * minor and struct sizes at least what this server reads; kind supported;
 * required operations non-NULL; name valid and unique; extensions unclaimed;
 * then init. A refused file is logged (sl_logw, one line with the reason),
 * remembered for sl_plug_reg_json, and dlclose'd; a loaded one is logged
 * with sl_logi. Returns 0 and a new registry (free with sl_plug_reg_free)
 * even when files were refused; -1 only when dir cannot be read. dir NULL or
 * "" gives an empty registry. */
int sl_plug_reg_load(const char *dir, struct sl_plug_reg **out, struct sl_err *err);
/* Call fini and dlclose for every plugin. Exit and tests only: refuses (logs,
 * returns -1, frees nothing) while any handle is still open. reg may be NULL. */
int sl_plug_reg_free(struct sl_plug_reg *reg);

size_t sl_plug_count(const struct sl_plug_reg *reg);
const struct sl_plug *sl_plug_at(const struct sl_plug_reg *reg, size_t i); /* load order; NULL past the end */
size_t sl_plug_refused_count(const struct sl_plug_reg *reg);

/* Every lookup below returns a plugin owned by reg (valid until
 * sl_plug_reg_free), or NULL when absent. kind 0 = any kind. */
const struct sl_plug *sl_plug_find(const struct sl_plug_reg *reg, int kind, const char *name);
/* Format owning the longest extension that ends objname, compared without
 * case (".tar.lz4" beats ".tar", ".tar.gz" beats ".gz"). */
/* The backend plugin of provider ("aws"), or NULL. */
const struct sl_plug *sl_plug_backend(const struct sl_plug_reg *reg, const char *provider);
const struct sl_plug *sl_plug_format_by_ext(const struct sl_plug_reg *reg, const char *objname);
/* Format whose detect() is most confident (> 0) about head[0..n). */
const struct sl_plug *sl_plug_format_by_magic(const struct sl_plug_reg *reg, const void *head, size_t n);
/* archmime as AIStore normalises it: equal to a plugin name or mime type
 * (no case), else the longest extension (without its dot) contained in it:
 * "tar.gz", ".tgz", "application/x-tar", "tar.lz4", "zip". */
const struct sl_plug *sl_plug_format_by_mime(const struct sl_plug_reg *reg, const char *archmime);
/* The whole rule of spec §4.3: archmime if given (non-empty), else the
 * object's extension, else magic bytes (head may be NULL). */
const struct sl_plug *sl_plug_format_for(const struct sl_plug_reg *reg, const char *objname, const char *archmime,
                                         const void *head, size_t n);

/* Listing for GET /v1/daemon?what=plugins: returns new (json_decref), an
 * array of {"name","kind","version","file","description","extensions",
 * "mime","caps","status":"loaded"} followed by {"file","status":"refused",
 * "reason"} for refused files. */
json_t *sl_plug_reg_json(const struct sl_plug_reg *reg);

/* Accessors. Strings are borrowed, valid until sl_plug_reg_free. */
const char *sl_plug_name(const struct sl_plug *p);
const char *sl_plug_version(const struct sl_plug *p);
const char *sl_plug_file(const struct sl_plug *p);       /* realpath of the .so */
int sl_plug_kind(const struct sl_plug *p);               /* SL_PLUGIN_FORMAT, ... */
const char *sl_plug_kind_name(int kind);                 /* "format", "sample_key", ... (static) */
const char *sl_plug_mime(const struct sl_plug *p);       /* formats; NULL otherwise */
const char *const *sl_plug_exts(const struct sl_plug *p);/* formats; NULL-terminated */
uint32_t sl_plug_caps(const struct sl_plug *p);          /* SL_FMT_CAP_*; 0 for non-formats */
const struct sl_host_api *sl_plug_host_api(void);        /* the table handed to plugins (static) */
/* Raw access for callers that drive plugin operations themselves (prefer the
 * wrappers below): the descriptor and the state from its init. Hold a
 * reference (sl_plug_ref +1 / -1) for as long as a plugin handle is open so
 * that sl_plug_reg_free can refuse to unload. */
const struct sl_plugin *sl_plug_desc(const struct sl_plug *p);
void *sl_plug_state(const struct sl_plug *p);
void sl_plug_ref(const struct sl_plug *p, int delta);

/* ------------------------------------------------------------------------ */
/* I/O adapters (plug_io.c)                                                 */
/* ------------------------------------------------------------------------ */

/* An sl_io over a file descriptor using pread/pwrite at a private position
 * (the fd's own offset is never used, so many readers may share one fd).
 * Init with the position to start from (0 for a shard, the append offset
 * for an append). Pass &f->io to the plugin. err_no keeps the last errno.
 * fd and name are borrowed: the io never closes fd, and name (used in
 * messages) must outlive f. */
struct sl_plug_fdio {
    struct sl_io io;
    int fd;
    int64_t pos;
    int err_no;
};
void sl_plug_fdio_init(struct sl_plug_fdio *f, int fd, int64_t pos, const char *name);

/* An sl_io over memory: reads from rbuf[0..rlen) (borrowed), writes append
 * to *wbuf (caller-owned sl_buf, may be NULL for read-only). Seekable. name
 * is borrowed, as for the fd io. */
struct sl_plug_memio {
    struct sl_io io;
    const unsigned char *rbuf;
    size_t rlen;
    int64_t pos;
    struct sl_buf *wbuf;
};
void sl_plug_memio_init(struct sl_plug_memio *m, const void *rbuf, size_t rlen, struct sl_buf *wbuf,
                        const char *name);

/* Default reader limits: 1M members, 16 GiB per member, 256 GiB in total,
 * no ratio limit. Tighten per request (e.g. max_ratio 1000 for uploads). */
void sl_plug_limits_default(struct sl_fmt_limits *lim);

/* Server error code for a plugin result: EINVAL->SL_EINVAL,
 * EFORMAT->SL_EIO (a stored shard is damaged; re-map to SL_EINVAL when the
 * bytes came from the client's request), ELIMIT->SL_ETOOBIG,
 * EUNSUPP->SL_EUNSUPP, EIO->SL_EIO, anything else->SL_EINTERNAL. */
int sl_plug_code(int plug_rc);

/* Member-name check for the host (sl_plugin_member_name_check plus the
 * server's object-name length cap): 0, or -1 with SL_EINVAL in err. */
int sl_plug_member_name_check(const char *name, size_t len, struct sl_err *err);

/* ------------------------------------------------------------------------ */
/* Format readers and writers (plug_io.c)                                   */
/* ------------------------------------------------------------------------ */
/* All return 0 on success, -1 with err set: the plugin's message (it names
 * the archive, the member and a remedy) with a code from sl_plug_code().
 * The io and its ctx are borrowed and must outlive the handle. */
struct sl_plug_reader;
struct sl_plug_writer;

/* Returns new (sl_plug_reader_close). lim NULL = sl_plug_limits_default. */
int sl_plug_reader_open(const struct sl_plug *fmt, const struct sl_io *io, const struct sl_fmt_limits *lim,
                        uint32_t flags, struct sl_plug_reader **out, struct sl_err *err);
/* 0 with *e filled (e->name valid until the next call), 1 at the end, -1. */
int sl_plug_reader_next(struct sl_plug_reader *r, struct sl_fmt_entry *e, struct sl_err *err);
/* Bytes (> 0), 0 at the member's end, -1. */
int64_t sl_plug_reader_read(struct sl_plug_reader *r, void *buf, size_t n, struct sl_err *err);
int sl_plug_reader_skip(struct sl_plug_reader *r, struct sl_err *err);
void sl_plug_reader_close(struct sl_plug_reader *r); /* NULL ok */
/* Advance to the first regular member named `name` (exact bytes; a stored
 * "./name" also matches). 0 found (e filled, data next), 1 not found
 * (SL_ENOENT in err: "<archive>: no member \"name\""), -1 error. */
int sl_plug_reader_find(struct sl_plug_reader *r, const char *name, struct sl_fmt_entry *e, struct sl_err *err);

int sl_plug_writer_open(const struct sl_plug *fmt, const struct sl_io *io, uint32_t flags,
                        struct sl_plug_writer **out, struct sl_err *err);
/* Start a regular member: name[0..len), size known up front, mtime (unix
 * seconds), mode (0 = 0644). */
int sl_plug_writer_add(struct sl_plug_writer *w, const char *name, size_t len, int64_t size, int64_t mtime,
                       uint32_t mode, struct sl_err *err);
int sl_plug_writer_write(struct sl_plug_writer *w, const void *buf, size_t n, struct sl_err *err);
int sl_plug_writer_finish(struct sl_plug_writer *w, struct sl_err *err);
void sl_plug_writer_close(struct sl_plug_writer *w); /* abandons the output unless finished */

/* Member index of a plain tar (formats with SL_FMT_CAP_INDEX): cb gets every
 * regular member with its exact data_offset. 0 (also when cb stopped the
 * scan), -1 (SL_EUNSUPP when the format has no index). */
int sl_plug_index(const struct sl_plug *fmt, const struct sl_io *io, const struct sl_fmt_limits *lim,
                  sl_fmt_index_cb cb, void *cbctx, struct sl_err *err);

/* True append to a plain tar held in fd (opened O_RDWR), in place:
 *   struct sl_plug_append ap;
 *   sl_plug_append_begin(tar, fd, name, &ap, &err);   // finds the end marker
 *   sl_plug_writer_add(ap.w, ...); sl_plug_writer_write(ap.w, ...); ...
 *   sl_plug_append_commit(&ap, &err);   // finish, ftruncate to the new end
 *                                       // (no fsync: the caller does it per its durability policy)
 *   or sl_plug_append_abort(&ap);       // restore the old members and size (bytes after
 *                                       // the old end marker come back as zeros)
 * begin returns -1 with SL_EUNSUPP when the format cannot append (the host
 * then re-creates the shard); a failed begin has written nothing. A failed
 * commit has already aborted. The caller serialises appends to one object
 * and holds the fd open from begin to commit/abort. fd and name stay the
 * caller's (ap keeps name for messages: it must outlive ap); commit and
 * abort close ap->w, never fd. */
struct sl_plug_append {
    struct sl_plug_fdio fio;      /* positioned at the append offset */
    struct sl_plug_writer *w;     /* the writer to add members to */
    int fd;
    int64_t offset;               /* where the end-of-archive marker was */
    int64_t orig_size;            /* file size before the append */
    int64_t new_size;             /* after commit */
};
/* Only the scan: where new members would start in the tar in io. */
int sl_plug_append_offset(const struct sl_plug *fmt, const struct sl_io *io, int64_t *off, struct sl_err *err);
int sl_plug_append_begin(const struct sl_plug *fmt, int fd, const char *name, struct sl_plug_append *ap,
                         struct sl_err *err);
int sl_plug_append_commit(struct sl_plug_append *ap, struct sl_err *err);
void sl_plug_append_abort(struct sl_plug_append *ap);

/* ------------------------------------------------------------------------ */
/* Sample-key rules (plug_io.c)                                             */
/* ------------------------------------------------------------------------ */

struct sl_plug_key; /* one rule instance (e.g. a compiled regex) */

/* Returns new (sl_plug_key_free). config: the regex pattern for "regex",
 * ignored by the others; may be NULL. */
int sl_plug_key_new(const struct sl_plug *rule, const char *config, struct sl_plug_key **out, struct sl_err *err);
void sl_plug_key_free(struct sl_plug_key *k); /* NULL ok */
/* Sample key of an object name: key is written into key_buf (caller-owned,
 * NUL-terminated); the extension is name[*ext_off .. *ext_off + *ext_len);
 * *flags gets SL_KEY_F_* (NOEXT: the caller decides to skip or warn).
 * Thread-safe on one instance. 0 or -1. */
int sl_plug_key_apply(const struct sl_plug_key *k, const char *name, size_t len, char *key_buf, size_t key_cap,
                      size_t *key_len, size_t *ext_off, size_t *ext_len, uint32_t *flags, struct sl_err *err);

#endif
