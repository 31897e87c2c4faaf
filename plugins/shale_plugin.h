/* SPDX-License-Identifier: MIT
 * shale_plugin.h: the one header a Shale plugin includes. It defines the
 * versioned plugin ABI: the descriptor a plugin exports, the host API table
 * the server hands in, and the operation tables of each plugin kind (shard
 * formats, sample-key rules), and header-only helpers for writing plugins
 * (static inline functions and macros compiled into the plugin; they add no
 * symbol and no ABI). Installed as PREFIX/include/shale/plugin.h (plugins
 * write #include <shale/plugin.h>), and as shale/shale_plugin.h for plugins
 * written against the old name.
 *
 * ABI rules (see docs/plugins.md for the long version):
 *  - SL_PLUGIN_ABI_MAJOR changes only when an existing member changes meaning,
 *    type or position. The loader refuses a plugin whose major differs.
 *  - SL_PLUGIN_ABI_MINOR grows when members are added. Every struct below is
 *    append-only: a new member takes a reserved slot or goes at the end, with
 *    a comment naming the minor version that added it. The host reads a member
 *    added in minor N only when the struct's abi_minor >= N and its
 *    struct_size covers the member.
 *  - Every struct begins with SL_ABI_HEAD (abi_major, abi_minor, struct_size,
 *    one reserved word). Fill it with SL_ABI_INIT(type) or SL_ABI_SET(ptr).
 *  - A plugin exports exactly one symbol, SL_PLUGIN_ENTRY_NAME, declared with
 *    SL_PLUGIN_EXPORT; build with -fvisibility=hidden so nothing else leaks.
 *
 * Ownership terms used in the comments:
 *   borrowed      the callee must not keep the pointer after the call returns
 *   valid until X the pointer stays usable until event X, then is dangling
 *   caller-owned  the caller allocated it and frees it
 *   plugin-owned  the plugin allocated it and frees it in the matching
 *                 close/fini call
 * A plugin allocates through host->alloc/realloc/free only, and never frees
 * memory it did not allocate itself.
 *
 * Threads: plugin-level init/fini run once, single-threaded, at server start
 * and exit. Every other operation may run on any thread; distinct handles
 * (readers, writers, key instances) may be used concurrently, one handle by
 * one thread at a time. sl_key_ops.key is the exception: one key instance is
 * called concurrently from many threads and must not mutate shared state.
 */
#ifndef SHALE_PLUGIN_H
#define SHALE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SL_PLUGIN_ABI_MAJOR 1
#define SL_PLUGIN_ABI_MINOR 1 /* 1.1: backend plugins (struct sl_backend_ops) */

/* ------------------------------------------------------------------------ */
/* Common header of every ABI struct                                        */
/* ------------------------------------------------------------------------ */

#define SL_ABI_HEAD                                                                                                \
    uint32_t abi_major;   /* SL_PLUGIN_ABI_MAJOR the struct was built with */                                      \
    uint32_t abi_minor;   /* SL_PLUGIN_ABI_MINOR the struct was built with */                                      \
    uint32_t struct_size; /* sizeof the struct as the builder knew it */                                           \
    uint32_t abi_reserved /* 0 */

/* Designated initialiser for a static struct:
 *   static const struct sl_format_ops ops = { SL_ABI_INIT(struct sl_format_ops), ... }; */
#define SL_ABI_INIT(type)                                                                                          \
    .abi_major = SL_PLUGIN_ABI_MAJOR, .abi_minor = SL_PLUGIN_ABI_MINOR, .struct_size = sizeof(type)

/* Runtime initialiser for a struct the caller allocated (in/out parameters). */
#define SL_ABI_SET(p)                                                                                              \
    do {                                                                                                           \
        (p)->abi_major = SL_PLUGIN_ABI_MAJOR;                                                                      \
        (p)->abi_minor = SL_PLUGIN_ABI_MINOR;                                                                      \
        (p)->struct_size = (uint32_t)sizeof(*(p));                                                                 \
        (p)->abi_reserved = 0;                                                                                     \
    } while (0)

/* True when struct *p (whatever its builder's version) contains member m. */
#define SL_ABI_HAS(p, type, m) ((p)->struct_size >= offsetof(type, m) + sizeof(((type *)0)->m))

#if defined(__GNUC__)
#define SL_PLUGIN_EXPORT __attribute__((visibility("default")))
#define SL_PLUGIN_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SL_PLUGIN_EXPORT
#define SL_PLUGIN_PRINTF(f, a)
#endif

/* ------------------------------------------------------------------------ */
/* Result codes crossing the ABI                                            */
/* ------------------------------------------------------------------------ */
/* Every fallible operation returns one of these (or a byte count >= 0 for
 * read-like calls) and, on failure, writes a NUL-terminated message into the
 * caller-owned buffer err[errlen] (errlen may be 0: then nothing is written).
 * The message says what happened, in which archive and member, and what to
 * do; the host adds nothing but the HTTP mapping. */
#define SL_PLUG_OK 0
#define SL_PLUG_EOF 1       /* reader_next: no more members (not an error) */
#define SL_PLUG_STOPPED 2   /* index: the callback returned non-zero */
#define SL_PLUG_EINVAL -1   /* bad argument: member name, size, flags, config */
#define SL_PLUG_EFORMAT -2  /* input is not this format, is corrupt or truncated */
#define SL_PLUG_ELIMIT -3   /* a struct sl_fmt_limits limit was hit */
#define SL_PLUG_EIO -4      /* an sl_io callback failed */
#define SL_PLUG_ENOMEM -5   /* host->alloc returned NULL */
#define SL_PLUG_EUNSUPP -6  /* operation not supported by this plugin */
#define SL_PLUG_ESTATE -7   /* call out of order (e.g. write before add, use after failure) */
#define SL_PLUG_ERANGE -8   /* caller's output buffer too small (sl_key_out) */
#define SL_PLUG_EINTERNAL -9 /* bug or unexpected library error */
#define SL_PLUG_EREMOTE -10 /* (1.1) backends: the remote store answered with an error status */

/* Log levels for sl_host_api.log (same numbers as the server's log levels). */
#define SL_PLUG_LOG_ERR 0
#define SL_PLUG_LOG_WARN 1
#define SL_PLUG_LOG_INFO 2
#define SL_PLUG_LOG_DEBUG 4

/* ------------------------------------------------------------------------ */
/* Host API: the table the server hands to every plugin                     */
/* ------------------------------------------------------------------------ */
/* The table is host-owned and valid until the plugin's fini returns; keep the
 * pointer (from sl_plugin_entry or init) rather than copying the table. */
struct sl_host_api {
    SL_ABI_HEAD;
    const char *host_version;             /* "0.1.0"; borrowed, static */
    /* malloc/calloc/realloc/free semantics; NULL on failure (never aborts). */
    void *(*alloc)(size_t n);
    void *(*calloc)(size_t n, size_t m);
    void *(*realloc)(void *p, size_t n);
    void (*free)(void *p);
    /* One log line at level SL_PLUG_LOG_*; the host prefixes "plugin: ".
     * Name your plugin and the archive in the text. */
    void (*log)(int level, const char *fmt, ...) SL_PLUGIN_PRINTF(2, 3);
    /* Non-zero when a line at this level would be written: check it before
     * building expensive debug output. */
    int (*log_enabled)(int level);
    /* Per-thread scratch buffer of at least n bytes (n <= 16 MiB), or NULL.
     * Host-owned; valid until the next scratch() call on the same thread or
     * until the current plugin call returns, whichever comes first. Never
     * free it and never keep it in a handle. */
    void *(*scratch)(size_t n);
    void *reserved[8];
};

/* ------------------------------------------------------------------------ */
/* Plugin descriptor and the entry symbol                                   */
/* ------------------------------------------------------------------------ */

enum sl_plugin_kind {
    SL_PLUGIN_FORMAT = 1,     /* shard format: struct sl_format_ops */
    SL_PLUGIN_SAMPLE_KEY = 2, /* sample-key rule: struct sl_key_ops */
    SL_PLUGIN_BACKEND = 3,    /* remote storage backend: struct sl_backend_ops (ABI 1.1) */
};

struct sl_format_ops;
struct sl_key_ops;
struct sl_backend_ops;

struct sl_plugin {
    SL_ABI_HEAD;
    uint32_t kind;             /* enum sl_plugin_kind */
    uint32_t flags;            /* reserved, 0 */
    /* Unique across all plugins: 1..31 bytes of [a-z0-9._-], starting with a
     * letter or digit ("tar", "tar.lz4", "base_name"). A second plugin with a
     * name already loaded is refused. */
    const char *name;
    const char *version;       /* free text, e.g. "1.0.0" */
    const char *description;   /* one line, may be NULL */
    /* Optional (NULL = nothing to do). Runs once at load, after every check
     * passed. *state is plugin-owned and handed back to every operation of
     * this plugin; set it even if NULL. On failure return SL_PLUG_E*, write
     * err, free whatever was allocated: fini is not called then. */
    int (*init)(const struct sl_host_api *host, void **state, char *err, size_t errlen);
    /* Optional. Runs once at server exit, after every handle was closed. */
    void (*fini)(void *state);
    const struct sl_format_ops *format; /* kind == SL_PLUGIN_FORMAT, else NULL */
    const struct sl_key_ops *key;       /* kind == SL_PLUGIN_SAMPLE_KEY, else NULL */
    const struct sl_backend_ops *backend; /* kind == SL_PLUGIN_BACKEND (ABI 1.1), else NULL */
    void *reserved[8];
};

/* Size of struct sl_plugin in ABI 1.0: the host requires struct_size >= this. */
#define SL_PLUGIN_SIZE_1_0 offsetof(struct sl_plugin, reserved)

/* The one exported symbol. Called once by the loader right after dlopen:
 * return a pointer to a static, const descriptor (valid until dlclose), or
 * NULL after writing a reason into err[errlen]. host is valid for the life of
 * the plugin; a plugin that needs a newer host may check host->abi_minor here
 * and refuse. Do no work here beyond that: heavy setup belongs in init. */
#define SL_PLUGIN_ENTRY_NAME "sl_plugin_entry"
typedef const struct sl_plugin *(*sl_plugin_entry_fn)(const struct sl_host_api *host, char *err, size_t errlen);
SL_PLUGIN_EXPORT const struct sl_plugin *sl_plugin_entry(const struct sl_host_api *host, char *err, size_t errlen);

/* ------------------------------------------------------------------------ */
/* Shard formats                                                            */
/* ------------------------------------------------------------------------ */

#define SL_SEEK_SET 0
#define SL_SEEK_CUR 1
#define SL_SEEK_END 2

/* Byte stream supplied by the caller. Caller-owned; must stay valid until the
 * reader/writer using it is closed. Positions are absolute byte offsets of the
 * underlying object: a reader that reports data_offset reports it in these. */
struct sl_io {
    SL_ABI_HEAD;
    void *ctx;
    /* Read up to n bytes into buf: > 0 bytes read, 0 at end of stream, -1 on
     * error. Required for readers, index and append_offset. */
    int64_t (*read)(void *ctx, void *buf, size_t n);
    /* Optional (NULL = not seekable). lseek semantics with SL_SEEK_*: return
     * the new absolute position, or -1. Seeking past the end is allowed. */
    int64_t (*seek)(void *ctx, int64_t off, int whence);
    /* Write all n bytes: return n, or -1 on error. Required for writers. */
    int64_t (*write)(void *ctx, const void *buf, size_t n);
    /* Name of the object for messages ("ais://bck/shard-0001.tar"); borrowed,
     * may be NULL. */
    const char *name;
    void *reserved[4];
};

/* Limits a reader enforces; 0 means "no limit" for every field. The defence
 * against zip bombs and hostile archives: a reader never buffers a member,
 * so memory stays constant, and these bound the work done. */
struct sl_fmt_limits {
    SL_ABI_HEAD;
    uint64_t max_members;      /* headers seen, of any type (dirs count too) */
    uint64_t max_member_size;  /* declared size of one member, and bytes actually read from it */
    uint64_t max_total_size;   /* uncompressed bytes traversed: data read or skipped, headers included */
    uint32_t max_ratio;        /* uncompressed / compressed bytes, checked once past 1 MiB uncompressed */
    uint32_t reserved32;
    uint64_t reserved[4];
};

/* Member types (struct sl_fmt_entry.type). */
#define SL_FMT_T_REG 1
#define SL_FMT_T_DIR 2
#define SL_FMT_T_SYMLINK 3
#define SL_FMT_T_HARDLINK 4
#define SL_FMT_T_OTHER 5 /* devices, fifos, unknown */

/* Entry flags (struct sl_fmt_entry.flags). */
#define SL_FMT_E_REGULAR 0x1  /* a regular file with data: the only kind callers use */
#define SL_FMT_E_SPARSE 0x2   /* GNU sparse member: data not contiguous (data_offset -1) */
#define SL_FMT_E_SIZE_UNKNOWN 0x4 /* size not known before reading (streamed zip): size is -1 */

/* One archive member. Readers fill it (caller-owned struct, set SL_ABI_SET
 * first; the plugin writes only the members struct_size covers). Writers read
 * name/name_len/size/mtime/mode from it. */
struct sl_fmt_entry {
    SL_ABI_HEAD;
    /* Reader: member name exactly as stored (no normalisation, may start
     * with "./"), NUL-terminated; plugin-owned, valid until the next
     * reader_next or reader_close. Writer: borrowed for the call. Validate
     * with sl_plugin_member_name_check() before trusting it; never use it as
     * a filesystem path. */
    const char *name;
    size_t name_len;
    int64_t size;        /* data bytes; -1 when unknown (see SL_FMT_E_SIZE_UNKNOWN) */
    int64_t mtime;       /* unix seconds */
    uint32_t mode;       /* permission bits (07777); writer default 0644 when 0 */
    uint32_t type;       /* SL_FMT_T_* */
    uint32_t flags;      /* SL_FMT_E_* */
    uint32_t reserved32;
    /* Reader of plain (uncompressed) tar: absolute offset, in the sl_io's
     * positions, of the first data byte, so that pread(fd, data_offset, size)
     * returns the member's bytes. -1 when the format is compressed, the member
     * is sparse, or the position is unknown. */
    int64_t data_offset;
    uint64_t ordinal;    /* reader: 0-based position among all headers of the archive */
    void *reserved[4];
};

/* Format capabilities (struct sl_format_ops.caps). */
#define SL_FMT_CAP_READ 0x1     /* reader_* (required) */
#define SL_FMT_CAP_WRITE 0x2    /* writer_* set */
#define SL_FMT_CAP_APPEND 0x4   /* append_offset: true append in place */
#define SL_FMT_CAP_INDEX 0x8    /* index: member offsets by scanning headers */
#define SL_FMT_CAP_OFFSETS 0x10 /* reader reports data_offset */

/* reader_open flags */
#define SL_FMT_R_ALL 0x1        /* report non-regular members too (default: skip them) */
/* writer_open flags */
#define SL_FMT_W_APPEND 0x1     /* the io's write position is an append_offset: write
                                 * only new members and the end marker (tar) */
#define SL_FMT_W_STORE 0x2      /* store members uncompressed where the format compresses
                                 * per member (zip); ignored elsewhere */

/* Index callback: one call per regular, contiguous member, in archive order.
 * e is borrowed (valid during the call). Return 0 to continue, non-zero to
 * stop: index then returns SL_PLUG_STOPPED. */
typedef int (*sl_fmt_index_cb)(void *cbctx, const struct sl_fmt_entry *e);

struct sl_format_ops {
    SL_ABI_HEAD;
    /* Extensions this format owns, lower-case with the leading dot, most
     * specific first: {".tgz", ".tar.gz", NULL}. Static, NULL-terminated. */
    const char *const *extensions;
    const char *mime;   /* Content-Type of a whole shard, e.g. "application/x-tar" */
    uint32_t caps;      /* SL_FMT_CAP_* */
    uint32_t reserved32;

    /* Confidence 0..100 that the object starting with head[0..n) is in this
     * format (n may be small; 0 = no). No I/O, no side effects, cheap (a
     * plugin may trial-decode the head). Used only when the object's name
     * has no known extension and no archmime was given. */
    int (*detect)(void *state, const void *head, size_t n);

    /* --- reader (required) ---
     * open: start reading an archive from io (position 0 = archive start).
     *   lim may be NULL (no limits); it is copied. On success *rd is a
     *   plugin-owned handle released by reader_close.
     * next: fill *e with the next member (regular only unless SL_FMT_R_ALL).
     *   Returns SL_PLUG_OK, SL_PLUG_EOF at the end, or an error. Unread data
     *   of the previous member is skipped.
     * read: copy up to n bytes of the current member's data into buf
     *   (caller-owned): returns bytes (> 0), 0 at the member's end, or a
     *   negative SL_PLUG_E* code.
     * skip: discard the rest of the current member (cheap when seekable).
     * close: free everything; safe on a failed handle; rd may be NULL.
     * After any error the handle only accepts reader_close. */
    int (*reader_open)(void *state, const struct sl_io *io, const struct sl_fmt_limits *lim, uint32_t flags,
                       void **rd, char *err, size_t errlen);
    int (*reader_next)(void *rd, struct sl_fmt_entry *e, char *err, size_t errlen);
    int64_t (*reader_read)(void *rd, void *buf, size_t n, char *err, size_t errlen);
    int (*reader_skip)(void *rd, char *err, size_t errlen);
    void (*reader_close)(void *rd);

    /* --- writer (required when caps has SL_FMT_CAP_WRITE) ---
     * open: start a new archive streamed to io->write (a compressor may
     *   write its stream header right away; plain tar and zip write nothing
     *   until the first add).
     * add: start a regular member: name (validated with
     *   sl_plugin_member_name_check, refused with SL_PLUG_EINVAL), size (>= 0,
     *   required up front), mtime, mode. The previous member must be complete.
     * write: member data, any chunk sizes, exactly `size` bytes in total.
     * finish: complete the archive (trailer, central directory, compressor
     *   flush). The handle then only accepts writer_close.
     * close: free everything. Without a successful finish the output is
     *   abandoned: nothing more is written to io. */
    int (*writer_open)(void *state, const struct sl_io *io, uint32_t flags, void **wr, char *err, size_t errlen);
    int (*writer_add)(void *wr, const struct sl_fmt_entry *e, char *err, size_t errlen);
    int (*writer_write)(void *wr, const void *buf, size_t n, char *err, size_t errlen);
    int (*writer_finish)(void *wr, char *err, size_t errlen);
    void (*writer_close)(void *wr);

    /* --- true append (optional; NULL or SL_PLUG_EUNSUPP = not possible) ---
     * Scan the existing archive in io (read, and seek if available) and set
     * *off to the offset where new members must start: for tar, the first
     * block of the end-of-archive marker (two zero blocks), i.e. right after
     * the last member's padded data; the archive size when the marker is
     * missing. A corrupt or truncated archive fails with SL_PLUG_EFORMAT. The
     * host then writes a writer opened with SL_FMT_W_APPEND from *off. */
    int (*append_offset)(void *state, const struct sl_io *io, const struct sl_fmt_limits *lim, int64_t *off,
                         char *err, size_t errlen);

    /* --- member index (optional; NULL or SL_PLUG_EUNSUPP) ---
     * Scan headers only (data is skipped with seek when available) and call
     * cb for every regular, contiguous member with name, size, mtime, mode and
     * the exact data_offset. Non-regular and sparse members are not reported. */
    int (*index)(void *state, const struct sl_io *io, const struct sl_fmt_limits *lim, sl_fmt_index_cb cb,
                 void *cbctx, char *err, size_t errlen);
    void *reserved[8];
};

#define SL_FORMAT_OPS_SIZE_1_0 offsetof(struct sl_format_ops, reserved)

/* ------------------------------------------------------------------------ */
/* Sample-key rules                                                         */
/* ------------------------------------------------------------------------ */
/* A sample-key rule maps an object name (full path inside the bucket, e.g.
 * "train/n01/x.seg.jpg") to the sample key and the extension. The extension
 * always starts after the FIRST dot of the basename (the WebDataset rule,
 * sl_plugin_wds_split below) and is reported as a slice of the input name,
 * not lower-cased; the key depends on the rule. */

#define SL_KEY_F_NOEXT 0x1   /* no dot in the basename, or nothing after it: ext is empty */
#define SL_KEY_F_NOSTEM 0x2  /* the basename starts with '.', WebDataset drops such members */
#define SL_KEY_F_NOMATCH 0x4 /* regex rule: the pattern did not match; key = name without extension */

struct sl_key_out {
    SL_ABI_HEAD;
    char *key;       /* caller-owned buffer of key_cap bytes; receives the key, NUL-terminated */
    size_t key_cap;  /* name_len + 1 is always enough for the built-in rules */
    size_t key_len;  /* out: key length without NUL; when > key_cap - 1 the call
                      * returns SL_PLUG_ERANGE and key is untouched */
    size_t ext_off;  /* out: extension = name[ext_off .. ext_off + ext_len) */
    size_t ext_len;
    uint32_t flags;  /* out: SL_KEY_F_* */
    uint32_t reserved32;
};

struct sl_key_ops {
    SL_ABI_HEAD;
    /* Create one rule instance from a config string (borrowed, may be NULL:
     * the regex rule takes its POSIX extended pattern here; the others ignore
     * it). *inst is plugin-owned until fini. */
    int (*init)(void *state, const char *config, void **inst, char *err, size_t errlen);
    void (*fini)(void *inst);
    /* name[0..name_len) is borrowed (no NUL needed; an embedded NUL is
     * SL_PLUG_EINVAL). Thread-safe on one instance. */
    int (*key)(void *inst, const char *name, size_t name_len, struct sl_key_out *out, char *err, size_t errlen);
    void *reserved[8];
};

#define SL_KEY_OPS_SIZE_1_0 offsetof(struct sl_key_ops, reserved)

/* ------------------------------------------------------------------------ */
/* Remote storage backends (ABI 1.1)                                        */
/* ------------------------------------------------------------------------ */
/* A backend plugin reaches one kind of remote store (provider "aws": S3 and
 * S3-compatible servers). A Shale bucket whose backend_bck names a bucket of
 * that provider caches it: a GET of an object not held here fetches it from
 * the remote and keeps it, a PUT goes to the remote first, a DELETE removes
 * both. The host calls these from its worker threads (never an HTTP thread),
 * concurrently; each call blocks until done and must end on its own (the
 * plugin bounds its network waits).
 *
 * Every operation returns SL_PLUG_OK; SL_PLUG_EREMOTE when the remote
 * answered with an error (*status: its HTTP status, e.g. 404, 403); or
 * SL_PLUG_EIO when it could not be reached or the transfer broke (*status 0).
 * err names the remote bucket and object, the status and the remote's own
 * error code, and for 401/403 which credentials were used. */

/* The remote bucket of one call; borrowed. */
struct sl_backend_bck {
    SL_ABI_HEAD;
    const char *name;             /* the bucket at the remote */
    const char *endpoint;         /* "" = the plugin's default (environment) */
    const char *region;           /* "" = the plugin's default */
    const char *profile;          /* credentials profile; "" = the plugin's default */
    /* (1.1, later) a PUT bigger than this goes up in parts of at least this
     * size (S3 multipart upload); 0 = the plugin's default, -1 = never.
     * Check with SL_ABI_HAS(b, struct sl_backend_bck, multipart_size). */
    int64_t multipart_size;
    /* (1.1, later) "path" (ENDPOINT/BUCKET/KEY), "virtual" (BUCKET.HOST/KEY)
     * or "" (the plugin's choice). SL_ABI_HAS(b, ..., addressing). */
    const char *addressing;
};

/* What the remote says of an object; caller-owned, filled by the plugin. */
struct sl_backend_obj {
    SL_ABI_HEAD;
    int64_t size;                 /* -1 unknown */
    int64_t mtime_ns;             /* Unix time in ns; 0 unknown */
    char etag[80];                /* without quotes; "" unknown */
    char version[80];             /* "" none */
};

/* get_object hands the body over in pieces: 0 to go on, non-zero to stop
 * (the call then fails with SL_PLUG_EIO and the host's message). */
typedef int (*sl_backend_sink_fn)(void *ctx, const void *data, size_t n);
/* list_page: one entry (name[0..len) borrowed); non-zero stops the page. */
typedef int (*sl_backend_list_fn)(void *ctx, const char *name, size_t len, const struct sl_backend_obj *o);

struct sl_backend_ops {
    SL_ABI_HEAD;
    const char *provider;          /* "aws": buckets whose backend_bck.provider is this use the plugin */
    int (*head_bucket)(void *state, const struct sl_backend_bck *b, int *status, char *err, size_t errlen);
    int (*head_object)(void *state, const struct sl_backend_bck *b, const char *name, size_t len,
                       struct sl_backend_obj *o, int *status, char *err, size_t errlen);
    /* Bytes [off, off + n) of the object (n = -1: to its end) to sink, in
     * order; o is filled before the first byte. */
    int (*get_object)(void *state, const struct sl_backend_bck *b, const char *name, size_t len, int64_t off,
                      int64_t n, sl_backend_sink_fn sink, void *ctx, struct sl_backend_obj *o, int *status,
                      char *err, size_t errlen);
    /* The object's new content is bytes [0, size) of fd (borrowed; read it
     * with pread, as often as retries need). o receives what the remote
     * answered (its ETag, version). */
    int (*put_object)(void *state, const struct sl_backend_bck *b, const char *name, size_t len, int fd,
                      int64_t size, struct sl_backend_obj *o, int *status, char *err, size_t errlen);
    /* A missing object is SL_PLUG_EREMOTE with *status 404 where the remote says so. */
    int (*delete_object)(void *state, const struct sl_backend_bck *b, const char *name, size_t len, int *status,
                         char *err, size_t errlen);
    /* One page of the names that start with prefix, in the remote's order:
     * token "" for the first page; next_token[next_len] receives the token
     * of the next one, "" after the last. */
    int (*list_page)(void *state, const struct sl_backend_bck *b, const char *prefix, const char *token, int max,
                     sl_backend_list_fn cb, void *ctx, char *next_token, size_t next_len, int *status, char *err,
                     size_t errlen);
    void *reserved[8];
};

#define SL_BACKEND_OPS_SIZE_1_1 offsetof(struct sl_backend_ops, reserved)

/* ------------------------------------------------------------------------ */
/* Helpers compiled into the caller (host and plugins agree on them)        */
/* ------------------------------------------------------------------------ */

/* Check an archive member name: returns NULL when acceptable, else a static
 * string saying why not. Rejected: empty, longer than 4096 bytes, an
 * embedded NUL, absolute ("/x"), a ".." path segment, a trailing '/'.
 * Names are never used as filesystem paths; this keeps archives portable
 * and stops path tricks from reaching clients that extract them. */
static inline const char *sl_plugin_member_name_check(const char *name, size_t len)
{
    size_t i, seg = 0;

    if (name == NULL || len == 0)
        return "empty name";
    if (len > 4096)
        return "name longer than 4096 bytes";
    if (name[0] == '/')
        return "absolute path (starts with '/')";
    if (name[len - 1] == '/')
        return "ends with '/' (a directory, not a file)";
    for (i = 0; i <= len; i++) {
        if (i < len && name[i] == '\0')
            return "contains a NUL byte";
        if (i == len || name[i] == '/') {
            if (i - seg == 2 && name[seg] == '.' && name[seg + 1] == '.')
                return "contains a '..' path segment";
            seg = i + 1;
        }
    }
    return NULL;
}

/* The WebDataset split of a name: dir = name[0 .. dir_len) including the last
 * '/'; basename = the rest; stem = basename up to its first dot; ext = after
 * that dot (may itself contain dots). With no dot, stem = basename and
 * ext_len = 0, ext_off = len. */
struct sl_wds_split {
    size_t dir_len;
    size_t stem_len;  /* stem = name[dir_len .. dir_len + stem_len) */
    size_t ext_off;
    size_t ext_len;
    int has_dot;
};

static inline void sl_plugin_wds_split(const char *name, size_t len, struct sl_wds_split *s)
{
    size_t i, base = 0;

    for (i = 0; i < len; i++)
        if (name[i] == '/')
            base = i + 1;
    s->dir_len = base;
    s->has_dot = 0;
    s->stem_len = len - base;
    s->ext_off = len;
    s->ext_len = 0;
    for (i = base; i < len; i++) {
        if (name[i] == '.') {
            s->has_dot = 1;
            s->stem_len = i - base;
            s->ext_off = i + 1;
            s->ext_len = len - i - 1;
            break;
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Writing a sample-key rule (header-only helpers, no ABI)                  */
/* ------------------------------------------------------------------------ */
/* Every built-in rule starts the same way (argument checks, the WebDataset
 * split, the extension fields of sl_key_out) and ends the same way (store
 * the key or report SL_PLUG_ERANGE); the helpers below do both. A stateless
 * rule whose key depends only on the name is then one map function and one
 * SL_PLUGIN_KEY_RULE line (see plugins/key_base_name.c); a rule with state
 * (plugins/key_regex.c) writes its own ops and uses the helpers in key(). */

/* Write "<rule>: <msg>" into the caller-owned err[errlen] (nothing when err
 * is NULL or errlen is 0; truncated to fit, always NUL-terminated) and return
 * code. rule and msg are borrowed, NUL-terminated. */
static inline int sl_plugin_key_error(char *err, size_t errlen, int code, const char *rule, const char *msg)
{
    const char *part[3];
    size_t n = 0, i;

    if (err == NULL || errlen == 0)
        return code;
    part[0] = rule;
    part[1] = ": ";
    part[2] = msg;
    for (i = 0; i < 3; i++) {
        const char *p = part[i];
        while (p != NULL && *p != '\0' && n + 1 < errlen)
            err[n++] = *p++;
    }
    err[n] = '\0';
    return code;
}

/* The start of sl_key_ops.key for the rule named rule: refuses with
 * SL_PLUG_EINVAL (message "<rule>: ..." in err) a NULL name or out, an out
 * not set up with SL_ABI_SET or without a key buffer, and a name with an
 * embedded NUL. Otherwise splits name[0..len) into *s (caller-owned, see
 * sl_plugin_wds_split), sets out->ext_off, out->ext_len and out->flags
 * (SL_KEY_F_NOEXT, SL_KEY_F_NOSTEM; a rule may add more) and returns
 * SL_PLUG_OK; the key itself is left to the rule. */
static inline int sl_plugin_key_prepare(const char *rule, const char *name, size_t len, struct sl_key_out *out,
                                        struct sl_wds_split *s, char *err, size_t errlen)
{
    size_t i;

    if (name == NULL || out == NULL || !SL_ABI_HAS(out, struct sl_key_out, flags) || out->key == NULL)
        return sl_plugin_key_error(err, errlen, SL_PLUG_EINVAL, rule,
                                   "bad arguments (sl_key_out not initialised with SL_ABI_SET?)");
    for (i = 0; i < len; i++)
        if (name[i] == '\0')
            return sl_plugin_key_error(err, errlen, SL_PLUG_EINVAL, rule, "the object name contains a NUL byte");
    sl_plugin_wds_split(name, len, s);
    out->ext_off = s->ext_off;
    out->ext_len = s->ext_len;
    out->flags = (s->ext_len == 0 ? SL_KEY_F_NOEXT : 0) | (s->has_dot && s->stem_len == 0 ? SL_KEY_F_NOSTEM : 0);
    return SL_PLUG_OK;
}

/* The end of sl_key_ops.key: the key is key[0..n) (borrowed; typically a
 * slice of the name). Sets out->key_len = n; when out->key_cap holds n + 1
 * bytes, copies the key and a NUL into out->key and returns SL_PLUG_OK, else
 * returns SL_PLUG_ERANGE and leaves out->key untouched. */
static inline int sl_plugin_key_set(struct sl_key_out *out, const char *key, size_t n)
{
    size_t i;

    out->key_len = n;
    if (n + 1 > out->key_cap)
        return SL_PLUG_ERANGE;
    for (i = 0; i < n; i++)
        out->key[i] = key[i];
    out->key[n] = '\0';
    return SL_PLUG_OK;
}

/* The rule-specific part of a stateless rule defined with
 * SL_PLUGIN_KEY_RULE. Called after sl_plugin_key_prepare succeeded: name
 * [0..len) is borrowed and NUL-free, *s is its split (borrowed for the call),
 * out's extension fields and flags are set. Store the key with
 * sl_plugin_key_set (or by hand with the same contract: set out->key_len,
 * return SL_PLUG_ERANGE when key_len + 1 > key_cap, else write the key and a
 * NUL) and return its result. Runs concurrently on many threads: no shared
 * mutable state. */
typedef int (*sl_key_map_fn)(const char *name, size_t len, const struct sl_wds_split *s, struct sl_key_out *out);

/* Defines a complete stateless sample-key plugin at file scope: the
 * sl_key_ops (init ignores its config and returns one static instance, fini
 * does nothing, key runs sl_plugin_key_prepare and then MAP), the sl_plugin
 * descriptor (SL_PLUGIN_SAMPLE_KEY, no plugin-level init/fini) and the
 * exported sl_plugin_entry, which accepts any host. NAME (the rule name, also
 * the prefix of its error messages), VERSION and DESCRIPTION are string
 * literals; MAP is an sl_key_map_fn. Everything defined is static except
 * sl_plugin_entry; the descriptor stays valid until the plugin is unloaded.
 * Use once per plugin, followed by a semicolon:
 *   static int map(const char *name, size_t len, const struct sl_wds_split *s, struct sl_key_out *out)
 *   {
 *       return sl_plugin_key_set(out, name + s->dir_len, s->stem_len);
 *   }
 *   SL_PLUGIN_KEY_RULE("base_name", "1.0.0", "sample key = basename up to its first dot", map); */
#define SL_PLUGIN_KEY_RULE(NAME, VERSION, DESCRIPTION, MAP)                                                        \
    static char sl_key_rule_instance_; /* stateless rule: every instance is this address */                        \
    static int sl_key_rule_init_(void *state, const char *config, void **inst, char *err, size_t errlen)           \
    {                                                                                                              \
        (void)state;                                                                                               \
        (void)config;                                                                                              \
        (void)err;                                                                                                 \
        (void)errlen;                                                                                              \
        *inst = &sl_key_rule_instance_;                                                                            \
        return SL_PLUG_OK;                                                                                         \
    }                                                                                                              \
    static void sl_key_rule_fini_(void *inst)                                                                      \
    {                                                                                                              \
        (void)inst;                                                                                                \
    }                                                                                                              \
    static int sl_key_rule_key_(void *inst, const char *name, size_t len, struct sl_key_out *out, char *err,       \
                                size_t errlen)                                                                     \
    {                                                                                                              \
        struct sl_wds_split sl_split_;                                                                             \
        int sl_rc_;                                                                                                \
                                                                                                                   \
        (void)inst;                                                                                                \
        sl_rc_ = sl_plugin_key_prepare(NAME, name, len, out, &sl_split_, err, errlen);                             \
        if (sl_rc_ != SL_PLUG_OK)                                                                                  \
            return sl_rc_;                                                                                         \
        return (MAP)(name, len, &sl_split_, out);                                                                  \
    }                                                                                                              \
    static const struct sl_key_ops sl_key_rule_ops_ = {                                                            \
        SL_ABI_INIT(struct sl_key_ops),                                                                            \
        .init = sl_key_rule_init_,                                                                                 \
        .fini = sl_key_rule_fini_,                                                                                 \
        .key = sl_key_rule_key_,                                                                                   \
    };                                                                                                             \
    static const struct sl_plugin sl_key_rule_plugin_ = {                                                          \
        SL_ABI_INIT(struct sl_plugin),                                                                             \
        .kind = SL_PLUGIN_SAMPLE_KEY,                                                                              \
        .name = NAME,                                                                                              \
        .version = VERSION,                                                                                        \
        .description = DESCRIPTION,                                                                                \
        .key = &sl_key_rule_ops_,                                                                                  \
    };                                                                                                             \
    SL_PLUGIN_EXPORT const struct sl_plugin *sl_plugin_entry(const struct sl_host_api *host, char *err,            \
                                                             size_t errlen)                                        \
    {                                                                                                              \
        (void)host;                                                                                                \
        (void)err;                                                                                                 \
        (void)errlen;                                                                                              \
        return &sl_key_rule_plugin_;                                                                               \
    }                                                                                                              \
    struct sl_plugin_key_rule_ends_with_a_semicolon

#ifdef __cplusplus
}
#endif

#endif /* SHALE_PLUGIN_H */
