/* SPDX-License-Identifier: MIT
 * log.h: glog-style lines ("I 19:28:24.774518 file.c:42 message") or JSON
 * lines, to a file under log_dir and/or stderr. Levels follow AIStore's
 * log.level verbosity: errors, warnings and info always; debug at >= 4.
 */
#ifndef SL_LOG_H
#define SL_LOG_H

#include "sl.h"

enum { SL_LOG_ERR = 0, SL_LOG_WARN = 1, SL_LOG_INFO = 2, SL_LOG_DEBUG = 4, SL_LOG_TRACE = 5 };

struct sl_log_conf {
    int level;              /* 0..5, default 3 */
    bool to_stderr;
    bool json;
    const char *path;       /* NULL: stderr only */
    uint64_t max_size;      /* rotate when the file exceeds this (0 = never) */
    const char *node;       /* "t[abc]" for JSON lines */
};

/* c and its strings are copied: the caller keeps them. */
int sl_log_open(const struct sl_log_conf *c);
void sl_log_close(void);
void sl_log_set_level(int level);
int sl_log_get_level(void);
void sl_log_set_node(const char *node);    /* copied */
/* per-thread request id included in lines (copied; NULL to clear) */
void sl_log_set_reqid(const char *id);
void sl_log_write(int level, const char *file, int line, const char *fmt, ...) SL_PRINTF(4, 5);
/* The log file's path, or NULL (stderr only). Owned by the logger: valid
 * until the next sl_log_open, which replaces it. */
const char *sl_log_path(void);
/* Rotate the log file now (FILE -> FILE.1, a new FILE): false when the node
 * logs to stderr (nothing to rotate). */
bool sl_log_rotate(void);

extern int sl_log_level_cur;

#define sl_log(lvl, ...) do { if ((lvl) <= SL_LOG_INFO || (lvl) <= sl_log_level_cur) \
    sl_log_write((lvl), __FILE__, __LINE__, __VA_ARGS__); } while (0)
#define sl_loge(...) sl_log(SL_LOG_ERR, __VA_ARGS__)
#define sl_logw(...) sl_log(SL_LOG_WARN, __VA_ARGS__)
#define sl_logi(...) sl_log(SL_LOG_INFO, __VA_ARGS__)
#define sl_logd(...) sl_log(SL_LOG_DEBUG, __VA_ARGS__)

#endif
