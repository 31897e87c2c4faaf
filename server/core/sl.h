/* SPDX-License-Identifier: MIT
 * sl.h: what every Shale source file shares: error codes and the error
 * carrier, growable buffers, small string and time helpers.
 * Naming: sl_<area>_<verb>; 0 = success, -1 = failure with detail in a
 * struct sl_err where the function takes one.
 *
 * Ownership: a char * returned "new" is the caller's to free(); a
 * const char * returned is borrowed and its function says for how long.
 */
#ifndef SL_H
#define SL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdarg.h>
#include <sys/types.h>

#ifndef SL_VERSION
#define SL_VERSION "0.1.0"
#endif
#ifndef SL_GITREV
#define SL_GITREV "unknown"
#endif

#define SL_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define SL_MIN(a, b) ((a) < (b) ? (a) : (b))
#define SL_MAX(a, b) ((a) > (b) ? (a) : (b))
#define SL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define SL_UNUSED __attribute__((unused))

#define SL_KIB 1024ULL
#define SL_MIB (1024ULL * 1024)
#define SL_GIB (1024ULL * 1024 * 1024)

#define SL_MAX_OBJNAME 1024   /* bytes; longer names are refused */
#define SL_MAX_BCKNAME 64

/* Error codes. Each maps to exactly one HTTP status and an AIStore-style
 * type code in the table in err.c (the only place that knows HTTP). */
enum sl_code {
    SL_OK = 0,
    SL_EINVAL,        /* 400 bad request */
    SL_ENOBCK,        /* 404 bucket does not exist */
    SL_ENOOBJ,        /* 404 object does not exist */
    SL_ENOENT,        /* 404 other not-found (job, etl, member) */
    SL_EMETHOD,       /* 405 */
    SL_EBCKEXIST,     /* 409 bucket already exists */
    SL_EEXIST,        /* 409 other conflict */
    SL_EBUSY,         /* 409 busy / conflicting job */
    SL_ETOOBIG,       /* 413 */
    SL_ERANGE,        /* 416 */
    SL_EFORBIDDEN,    /* 403 */
    SL_EIO,           /* 500 I/O error */
    SL_ECKSUM,        /* 500 bad data checksum */
    SL_EINTERNAL,     /* 500 */
    SL_EUNSUPP,       /* 501 */
    SL_EUNAVAIL,      /* 503 not ready / target down */
    SL_ETIMEOUT,      /* 504 */
    SL_ENOSPC,        /* 507 out of space */
    SL_EHDRTOOBIG,    /* 431 */
    SL_EUNAUTH,       /* 401 no or bad credentials */
    SL_ETOOMANY,      /* 429 rate-limited */
    SL_EBADDATA,      /* 422 stored data the request needs cannot be read (a corrupt shard) */
    SL_ECODE_MAX
};

struct sl_err {
    int code;          /* enum sl_code */
    char msg[1024];
};

/* Record an error; always returns -1 so callers can `return sl_errf(...)`. */
int sl_errf(struct sl_err *e, int code, const char *fmt, ...) SL_PRINTF(3, 4);
/* Prefix the existing message with more context: "<ctx>: <old msg>". */
void sl_err_wrap(struct sl_err *e, const char *fmt, ...) SL_PRINTF(2, 3);
int sl_err_status(int code);            /* HTTP status for a code */
const char *sl_err_tcode(int code);     /* "ErrObjNotFound", ... (static) or NULL */
int sl_code_from_status(int status);    /* best code for an HTTP status */

/* Growable byte buffer. Always NUL-terminated (p[len] == 0) when p != NULL.
 * The buffer owns p: sl_buf_free releases it. A pointer into p is valid
 * until the next call that grows b (it may realloc), sl_buf_free or
 * sl_buf_steal. */
struct sl_buf {
    char *p;
    size_t len, cap;
};
void sl_buf_init(struct sl_buf *b);
void sl_buf_free(struct sl_buf *b);
void sl_buf_reset(struct sl_buf *b);
int sl_buf_reserve(struct sl_buf *b, size_t extra);
int sl_buf_add(struct sl_buf *b, const void *p, size_t n);
int sl_buf_adds(struct sl_buf *b, const char *s);
int sl_buf_addc(struct sl_buf *b, char c);
int sl_buf_addu(struct sl_buf *b, uint64_t v); /* decimal */
const char *sl_fmt_u64(char buf[24], uint64_t v); /* decimal, in buf; returns where it starts */
int sl_buf_printf(struct sl_buf *b, const char *fmt, ...) SL_PRINTF(2, 3);
/* Returns b's bytes as new ("" when b is empty; caller frees) and leaves b
 * empty and reusable. */
char *sl_buf_steal(struct sl_buf *b);

/* Allocation that aborts on OOM for small, bounded bookkeeping. Each result
 * is new (never NULL); the caller free()s it. */
/* Seeded Fisher-Yates over v[0..n) with splitmix64: the one shuffle of
 * ishard's --sort and dsort's "shuffle", so the same seed over the same
 * records gives the same order in both. */
void sl_shuffle(int *v, size_t n, uint64_t seed);
/* Run fn(arg) on a detached thread of its own, or on this one when no
 * thread can be started (the work is done either way). */
void sl_run_detached(void *(*fn)(void *), void *arg);
void *sl_xmalloc(size_t n);
void *sl_xcalloc(size_t n, size_t m);
void *sl_xrealloc(void *p, size_t n);
char *sl_xstrdup(const char *s);
char *sl_xstrndup(const char *s, size_t n);
char *sl_xasprintf(const char *fmt, ...) SL_PRINTF(1, 2);

/* Time */
int64_t sl_now_ns(void);           /* CLOCK_REALTIME, unix ns */
int64_t sl_mono_ns(void);          /* CLOCK_MONOTONIC */
void sl_sleep_ms(int ms);
/* Go time.Duration string ("45s", "1m30s", "500ms") <-> ns. */
int sl_parse_duration(const char *s, int64_t *ns);
void sl_format_duration(int64_t ns, char *out, size_t n);
/* Format unix-ns t with a Go layout ("02 Jan 06 15:04 MST", RFC3339, ...) in UTC. */
void sl_format_gotime(int64_t ns, const char *layout, char *out, size_t n);

/* Sizes: "10MiB", "1.5GB", "4096" -> bytes (IEC and SI suffixes). */
int sl_parse_size(const char *s, uint64_t *out);
/* A boolean as Go's strconv.ParseBool reads it (AIStore's clients send
 * "true", "True", "1", ...; "" is false here): 0 with *out, -1 for anything
 * else. */
int sl_parse_bool(const char *s, bool *out);
/* IEC, two decimals, no space: "16.00KiB"; under 1 KiB "561B". */
void sl_format_size(uint64_t n, char *out, size_t sz);
/* Same with a space: "63.00 MiB" (progress bars). */
void sl_format_size_sp(uint64_t n, char *out, size_t sz);
/* "12,345" */
void sl_format_count(uint64_t n, char *out, size_t sz);

/* Strings */
/* The index of v in names[0..n) into *out and 0; else -1 with a 400
 * "<who>: invalid <what> "<v>" (valid: a, b, c)". */
int sl_pick_name(const char *who, const char *what, const char *v, const char *const *names, int n, int *out,
                 struct sl_err *err);
bool sl_has_prefix(const char *s, const char *p);
bool sl_has_suffix(const char *s, const char *suf);
void sl_hex(const unsigned char *in, size_t n, char *out);   /* out: 2n+1 */
int sl_unhex(const char *s, size_t n, unsigned char *out);   /* 2n hex digits -> n bytes; -1 on a non-hex one */
void sl_base36(uint64_t v, char *out, size_t n);
/* crypto-random id of n alphanumeric characters */
void sl_rand_id(char *out, size_t n);
/* random short job id: alnum/_-, 9+ chars (AIStore shortid-like) */
void sl_job_id(char *out, size_t n, const char *prefix);
/* percent-decode; plus_space: '+' -> ' ' (query). Returns decoded length.
 * out must hold n+1 bytes; result is NUL-terminated (may contain NULs). */
size_t sl_url_decode(const char *in, size_t n, char *out, bool plus_space);
/* percent-encode for a URL path (keeps '/' and unreserved). Both return
 * new (free()). */
char *sl_url_encode_path(const char *s, size_t n);
char *sl_url_encode_query(const char *s);
bool sl_utf8_valid(const char *s, size_t n);
/* How many of s's n bytes to print within max bytes without cutting a
 * character in two (for "%.*s"). */
int sl_utf8_cut(const char *s, size_t n, size_t max);
/* Replace each byte of s not part of a valid UTF-8 character with '?' (a
 * message cut at a fixed size, before it goes into JSON). */
void sl_utf8_scrub(char *s);

/* Files */
int sl_mkdir_p(const char *path, mode_t mode);          /* 0 / -1 errno */
/* The directory file_path is in: 0 it existed, 1 created (with its
 * parents), -1 errno. */
int sl_mkdir_parents(const char *file_path, mode_t mode);
/* fsync every directory above path up to and including top (their entries
 * survive a power cut). 0 / -1 errno. */
int sl_fsync_parents(const char *path, const char *top);
int sl_rm_rf(const char *path);
int sl_write_file(const char *path, const void *p, size_t n, bool do_fsync);
/* Append the file to out (the caller's; sl_buf_free). More than max bytes:
 * -1 with errno EFBIG. After a failure out may hold part of the file. */
int sl_read_file(const char *path, struct sl_buf *out, size_t max);
int sl_fsync_dir(const char *path);

/* Fault injection for crash tests: SHALE_FAULT=<point>[,<point>...] in the
 * environment makes the process _exit(137) (as if SIGKILLed) when it reaches
 * that point. Points: put-after-write, put-after-commit, delete-after-unlink,
 * append-before-commit (docs/testing.md lists them all). <point>@<ms> pauses
 * the thread that reaches it for ms milliseconds instead (at most 60 s). */
void sl_fault_init(void);
void sl_fault(const char *point);

/* xxhash helpers (XXH64) */
uint64_t sl_xxh64(const void *p, size_t n, uint64_t seed);
#define SL_MLCG32 1103515245ULL

#endif
