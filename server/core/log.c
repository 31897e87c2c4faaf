/* SPDX-License-Identifier: MIT
 * log.c: the node's logger. One mutex around the write; lines are formatted
 * into a stack buffer first so the critical section is a single write(2).
 */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>

int sl_log_level_cur = 3;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = -1;
static bool log_stderr = true;
static bool log_json;
static char *log_file;
static uint64_t log_max_size;
static uint64_t log_written;
static char log_node[64];
static __thread char log_reqid[40];

int sl_log_open(const struct sl_log_conf *c)
{
    pthread_mutex_lock(&log_mu);
    sl_log_level_cur = c->level;
    log_stderr = c->to_stderr || !c->path;
    log_json = c->json;
    log_max_size = c->max_size;
    if (c->node)
        snprintf(log_node, sizeof(log_node), "%s", c->node);
    if (c->path) {
        free(log_file);
        log_file = sl_xstrdup(c->path);
        if (log_fd >= 0)
            close(log_fd);
        log_fd = open(c->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (log_fd < 0) {
            int e = errno;
            pthread_mutex_unlock(&log_mu);
            fprintf(stderr, "shaled: cannot open log file %s: %s\n", c->path, strerror(e));
            return -1;
        }
        struct stat st;
        log_written = fstat(log_fd, &st) == 0 ? (uint64_t)st.st_size : 0;
    }
    pthread_mutex_unlock(&log_mu);
    return 0;
}

void sl_log_close(void)
{
    pthread_mutex_lock(&log_mu);
    if (log_fd >= 0)
        close(log_fd);
    log_fd = -1;
    pthread_mutex_unlock(&log_mu);
}

const char *sl_log_path(void)
{
    return log_file;
}

void sl_log_set_level(int level)
{
    sl_log_level_cur = level;
}

int sl_log_get_level(void)
{
    return sl_log_level_cur;
}

void sl_log_set_node(const char *node)
{
    pthread_mutex_lock(&log_mu);
    snprintf(log_node, sizeof(log_node), "%s", node ? node : "");
    pthread_mutex_unlock(&log_mu);
}

void sl_log_set_reqid(const char *id)
{
    /* (several times per request: no printf) */
    size_t n = id ? strnlen(id, sizeof(log_reqid) - 1) : 0;
    if (n)
        memcpy(log_reqid, id, n);
    log_reqid[n] = 0;
}

static void rotate_locked(void)
{
    if (!log_file || log_fd < 0)
        return;
    char *old = sl_xasprintf("%s.1", log_file);
    rename(log_file, old);
    free(old);
    close(log_fd);
    log_fd = open(log_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    log_written = 0;
}

bool sl_log_rotate(void)
{
    pthread_mutex_lock(&log_mu);
    bool has = log_file && log_fd >= 0;
    rotate_locked();
    pthread_mutex_unlock(&log_mu);
    return has;
}

void sl_log_write(int level, const char *file, int line, const char *fmt, ...)
{
    char msg[4096], out[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    if (!log_json) {
        /* one line per event: control characters (a decoded path may hold
         * any) are written escaped, so no input can forge a log line */
        char esc[sizeof(msg)];
        size_t o = 0;
        bool any = false;
        for (const unsigned char *p = (const unsigned char *)msg; *p && o + 5 < sizeof(esc); p++) {
            if (*p < 0x20 || *p == 0x7f) {
                o += (size_t)snprintf(esc + o, sizeof(esc) - o, *p == '\n' ? "\\n" : "\\x%02x", *p);
                any = true;
            } else {
                esc[o++] = (char)*p;
            }
        }
        esc[o] = 0;
        if (any)
            memcpy(msg, esc, o + 1);
    }

    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    localtime_r(&ts.tv_sec, &tm);
    char sev = level == SL_LOG_ERR ? 'E' : level == SL_LOG_WARN ? 'W' : level <= SL_LOG_INFO ? 'I' : 'D';
    int n;
    if (log_json) {
        json_t *o = json_object();
        char tsb[64];
        strftime(tsb, sizeof(tsb), "%Y-%m-%dT%H:%M:%S", &tm);
        char tsf[128];
        snprintf(tsf, sizeof(tsf), "%s.%06ld", tsb, ts.tv_nsec / 1000);
        json_object_set_new(o, "ts", json_string(tsf));
        json_object_set_new(o, "level", json_string(level == SL_LOG_ERR ? "error" : level == SL_LOG_WARN ? "warning" :
                                                    level <= SL_LOG_INFO ? "info" : "debug"));
        json_object_set_new(o, "node", json_string(log_node));
        if (log_reqid[0])
            json_object_set_new(o, "req_id", json_string(log_reqid));
        char src[128];
        snprintf(src, sizeof(src), "%s:%d", base, line);
        json_object_set_new(o, "src", json_string(src));
        json_object_set_new(o, "msg", json_stringn(msg, strlen(msg)));
        char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        n = snprintf(out, sizeof(out), "%s\n", s ? s : "{}");
        free(s);
        json_decref(o);
    } else if (log_reqid[0]) {
        n = snprintf(out, sizeof(out), "%c %02d:%02d:%02d.%06ld %s:%d [%s] %s\n", sev, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000, base, line, log_reqid, msg);
    } else {
        n = snprintf(out, sizeof(out), "%c %02d:%02d:%02d.%06ld %s:%d %s\n", sev, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000, base, line, msg);
    }
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(out)) {
        n = sizeof(out) - 1;
        out[n - 1] = '\n';
    }
    pthread_mutex_lock(&log_mu);
    if (log_fd >= 0) {
        if (write(log_fd, out, (size_t)n) < 0) {
            /* nothing sensible to do */
        }
        log_written += (uint64_t)n;
        if (log_max_size && log_written > log_max_size)
            rotate_locked();
    }
    if (log_stderr || log_fd < 0) {
        if (write(2, out, (size_t)n) < 0) {
        }
    }
    pthread_mutex_unlock(&log_mu);
}
