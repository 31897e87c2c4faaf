/* SPDX-License-Identifier: MIT
 * plug_load.c: loading plugins from the configured directory (file checks,
 * dlopen, ABI and descriptor validation, init), the host API table handed to
 * plugins, the registry with lookups by name, extension, magic and archmime,
 * and the JSON listing.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "plug.h"

struct sl_plug {
    void *dl;                     /* dlopen handle */
    const struct sl_plugin *desc; /* static in the plugin, valid until dlclose */
    void *state;                  /* from desc->init */
    char *file;                   /* realpath of the .so */
    long users;                   /* open handles (atomic) */
};

struct plug_refused {
    char *file;
    char *reason;
};

struct sl_plug_reg {
    char *dir;
    struct sl_plug **v;
    size_t n;
    struct plug_refused *refused;
    size_t nrefused;
};

/* ------------------------------------------------------------------------ */
/* Host API                                                                 */
/* ------------------------------------------------------------------------ */

#define SCRATCH_MAX (16 * 1024 * 1024)

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

struct scratch {
    size_t cap;
    unsigned char buf[];
};

static void scratch_free(void *p)
{
    free(p);
}

static void scratch_init(void)
{
    (void)pthread_key_create(&scratch_key, scratch_free);
}

static void *h_scratch(size_t n)
{
    struct scratch *s;

    if (n > SCRATCH_MAX)
        return NULL;
    pthread_once(&scratch_once, scratch_init);
    s = pthread_getspecific(scratch_key);
    if (s == NULL || s->cap < n) {
        size_t cap = n < 65536 ? 65536 : n;
        struct scratch *ns = malloc(sizeof(*ns) + cap);
        if (ns == NULL)
            return NULL;
        free(s);
        ns->cap = cap;
        s = ns;
        pthread_setspecific(scratch_key, s);
    }
    return s->buf;
}

static void *h_alloc(size_t n)
{
    return malloc(n ? n : 1);
}

static void *h_calloc(size_t n, size_t m)
{
    return calloc(n ? n : 1, m ? m : 1);
}

static void *h_realloc(void *p, size_t n)
{
    return realloc(p, n ? n : 1);
}

static void h_free(void *p)
{
    free(p);
}

static int h_log_enabled(int level)
{
    return level <= SL_LOG_INFO || level <= sl_log_level_cur;
}

static void h_log(int level, const char *fmt, ...) SL_PRINTF(2, 3);
static void h_log(int level, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    if (!h_log_enabled(level))
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    sl_log_write(level < 0 ? SL_LOG_ERR : level, "plugin", 0, "plugin: %s", msg);
}

static const struct sl_host_api host_api = {
    SL_ABI_INIT(struct sl_host_api),
    .host_version = SL_VERSION,
    .alloc = h_alloc,
    .calloc = h_calloc,
    .realloc = h_realloc,
    .free = h_free,
    .log = h_log,
    .log_enabled = h_log_enabled,
    .scratch = h_scratch,
};

const struct sl_host_api *sl_plug_host_api(void)
{
    return &host_api;
}

/* ------------------------------------------------------------------------ */
/* Descriptor validation                                                    */
/* ------------------------------------------------------------------------ */

/* Minor version of each struct this host reads (members up to that minor). */
#define HOST_NEEDS_MINOR 0

static bool minor_ok(uint32_t have, uint32_t need)
{
    return have >= need;
}

static bool name_ok(const char *s)
{
    size_t i;

    if (s == NULL || s[0] == '\0' || strlen(s) > 31)
        return false;
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
        return false;
    for (i = 0; s[i]; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

static bool ext_ok(const char *s)
{
    size_t i, n = s ? strlen(s) : 0;

    if (n < 2 || n > 31 || s[0] != '.')
        return false;
    for (i = 1; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' || c == '+'))
            return false;
    }
    return true;
}

#define ABI_FMT "built for plugin ABI %u.%u, this server speaks %d.%d"

/* Check one ABI struct header: exact major, minor and size at least what
 * this host reads. */
static bool abi_hdr_ok(const char *what, uint32_t major, uint32_t minor, uint32_t size, size_t need, char *why,
                       size_t n)
{
    if (major != SL_PLUGIN_ABI_MAJOR) {
        snprintf(why, n, "%s " ABI_FMT "; rebuild the plugin against this server's shale_plugin.h", what, major,
                 minor, SL_PLUGIN_ABI_MAJOR, SL_PLUGIN_ABI_MINOR);
        return false;
    }
    if (!minor_ok(minor, HOST_NEEDS_MINOR) || size < need) {
        snprintf(why, n, "%s is ABI %u.%u and %u bytes, this server needs at least %d.%d and %zu bytes; rebuild "
                 "the plugin", what, major, minor, size, SL_PLUGIN_ABI_MAJOR, HOST_NEEDS_MINOR, need);
        return false;
    }
    return true;
}

static bool check_format(const struct sl_format_ops *f, char *why, size_t n)
{
    size_t i;

    if (f == NULL) {
        snprintf(why, n, "format plugin without a format operations table (sl_plugin.format is NULL)");
        return false;
    }
    if (!abi_hdr_ok("format operations table", f->abi_major, f->abi_minor, f->struct_size, SL_FORMAT_OPS_SIZE_1_0,
                    why, n))
        return false;
    if (f->extensions == NULL || f->extensions[0] == NULL) {
        snprintf(why, n, "format declares no file extensions");
        return false;
    }
    for (i = 0; f->extensions[i] != NULL; i++) {
        if (i >= 16 || !ext_ok(f->extensions[i])) {
            snprintf(why, n, "bad extension \"%.40s\": use up to 16 lower-case extensions with a leading dot, "
                     "like \".tar.zst\"", i >= 16 ? "(too many)" : f->extensions[i]);
            return false;
        }
    }
    if (f->mime == NULL || f->mime[0] == '\0') {
        snprintf(why, n, "format declares no mime type");
        return false;
    }
    if (!(f->caps & SL_FMT_CAP_READ) || !f->detect || !f->reader_open || !f->reader_next || !f->reader_read ||
        !f->reader_skip || !f->reader_close) {
        snprintf(why, n, "missing required reader operation (detect, reader_open, reader_next, reader_read, "
                 "reader_skip, reader_close and SL_FMT_CAP_READ are required)");
        return false;
    }
    if ((f->caps & SL_FMT_CAP_WRITE) && (!f->writer_open || !f->writer_add || !f->writer_write ||
                                         !f->writer_finish || !f->writer_close)) {
        snprintf(why, n, "declares SL_FMT_CAP_WRITE but a writer operation is NULL");
        return false;
    }
    if ((f->caps & SL_FMT_CAP_APPEND) && (!f->append_offset || !(f->caps & SL_FMT_CAP_WRITE))) {
        snprintf(why, n, "declares SL_FMT_CAP_APPEND without append_offset and a writer");
        return false;
    }
    if ((f->caps & SL_FMT_CAP_INDEX) && !f->index) {
        snprintf(why, n, "declares SL_FMT_CAP_INDEX but index is NULL");
        return false;
    }
    return true;
}

static bool check_key(const struct sl_key_ops *k, char *why, size_t n)
{
    if (k == NULL) {
        snprintf(why, n, "sample-key plugin without a key operations table (sl_plugin.key is NULL)");
        return false;
    }
    if (!abi_hdr_ok("key operations table", k->abi_major, k->abi_minor, k->struct_size, SL_KEY_OPS_SIZE_1_0, why, n))
        return false;
    if (!k->init || !k->fini || !k->key) {
        snprintf(why, n, "missing required key operation (init, fini and key are required)");
        return false;
    }
    return true;
}

static bool check_backend(const struct sl_plugin *d, char *why, size_t n)
{
    const struct sl_backend_ops *b = d->abi_minor >= 1 ? d->backend : NULL;
    if (b == NULL) {
        snprintf(why, n, "backend plugin without a backend operations table (sl_plugin.backend is NULL, or the "
                 "descriptor is older than ABI 1.1)");
        return false;
    }
    if (!abi_hdr_ok("backend operations table", b->abi_major, b->abi_minor, b->struct_size, SL_BACKEND_OPS_SIZE_1_1,
                    why, n))
        return false;
    if (b->abi_minor < 1) {
        snprintf(why, n, "backend operations table is ABI %u.%u; backends need 1.1", b->abi_major, b->abi_minor);
        return false;
    }
    if (!b->provider || (strcmp(b->provider, "aws") && strcmp(b->provider, "gcp") && strcmp(b->provider, "azure") &&
                         strcmp(b->provider, "oci") && strcmp(b->provider, "ht") && strcmp(b->provider, "ais"))) {
        snprintf(why, n, "backend provider \"%.20s\" is not one of aws, gcp, azure, oci, ht, ais (remote clusters)",
                 b->provider ? b->provider : "(null)");
        return false;
    }
    if (!b->head_bucket || !b->head_object || !b->get_object || !b->put_object || !b->delete_object ||
        !b->list_page) {
        snprintf(why, n, "missing backend operation (head_bucket, head_object, get_object, put_object, "
                 "delete_object and list_page are required; answer SL_PLUG_EUNSUPP from the ones the remote lacks)");
        return false;
    }
    return true;
}

static bool check_desc(const struct sl_plugin *d, char *why, size_t n)
{
    if (!abi_hdr_ok("descriptor", d->abi_major, d->abi_minor, d->struct_size, SL_PLUGIN_SIZE_1_0, why, n))
        return false;
    if (!name_ok(d->name)) {
        snprintf(why, n, "bad plugin name \"%.40s\": use 1-31 characters of [a-z0-9._-] starting with a letter or "
                 "digit", d->name ? d->name : "(null)");
        return false;
    }
    if (d->version == NULL) {
        snprintf(why, n, "plugin \"%s\" has no version string", d->name);
        return false;
    }
    switch (d->kind) {
    case SL_PLUGIN_FORMAT:
        return check_format(d->format, why, n);
    case SL_PLUGIN_SAMPLE_KEY:
        return check_key(d->key, why, n);
    case SL_PLUGIN_BACKEND:
        return check_backend(d, why, n);
    default:
        snprintf(why, n, "unknown plugin kind %u", d->kind);
        return false;
    }
}

/* ------------------------------------------------------------------------ */
/* Registry                                                                 */
/* ------------------------------------------------------------------------ */

static void reg_refuse(struct sl_plug_reg *reg, const char *file, const char *why)
{
    struct plug_refused *r;

    sl_logw("plugin %s: refused: %s", file, why);
    if (reg->nrefused % 8 == 0)
        reg->refused = sl_xrealloc(reg->refused, (reg->nrefused + 8) * sizeof(*reg->refused));
    r = &reg->refused[reg->nrefused++];
    r->file = sl_xstrdup(file);
    r->reason = sl_xstrdup(why);
}

static const struct sl_plug *find_ext_owner(const struct sl_plug_reg *reg, const char *ext)
{
    size_t i, j;

    for (i = 0; i < reg->n; i++) {
        const struct sl_plug *p = reg->v[i];
        if (p->desc->kind != SL_PLUGIN_FORMAT)
            continue;
        for (j = 0; p->desc->format->extensions[j] != NULL; j++)
            if (strcasecmp(p->desc->format->extensions[j], ext) == 0)
                return p;
    }
    return NULL;
}

static void load_one(struct sl_plug_reg *reg, const char *dir_real, const char *fname)
{
    char *path = sl_xasprintf("%s/%s", reg->dir, fname);
    char real[PATH_MAX], whybuf[768], perr[1024], *why = NULL;
    const struct sl_plugin *d;
    const struct sl_plug *other;
    sl_plugin_entry_fn entry;
    struct sl_plug *p = NULL;
    void *dl = NULL, *state = NULL;
    struct stat st;
    size_t dl_len = strlen(dir_real), i;
    int rc;

    whybuf[0] = perr[0] = '\0';
    if (realpath(path, real) == NULL) {
        why = sl_xasprintf("realpath failed: %s (a dangling symlink?)", strerror(errno));
        goto refuse;
    }
    if (strncmp(real, dir_real, dl_len) != 0 || real[dl_len] != '/') {
        why = sl_xasprintf("resolves to %s, outside the plugin directory %s; copy the file into the "
                           "directory instead of linking to it", real, dir_real);
        goto refuse;
    }
    if (stat(real, &st) != 0) {
        why = sl_xasprintf("stat %s: %s", real, strerror(errno));
        goto refuse;
    }
    if (!S_ISREG(st.st_mode)) {
        why = sl_xasprintf("not a regular file");
        goto refuse;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        why = sl_xasprintf("%s is writable by %s (mode %04o); run chmod go-w on it", real,
                           (st.st_mode & S_IWOTH) ? "everyone" : "its group", (unsigned)(st.st_mode & 07777));
        goto refuse;
    }
    if (st.st_uid != geteuid() && st.st_uid != 0) {
        why = sl_xasprintf("%s is owned by uid %u, neither this server's user (%u) nor root; chown it",
                           real, (unsigned)st.st_uid, (unsigned)geteuid());
        goto refuse;
    }
    dlerror();
    dl = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL) {
        const char *e = dlerror();
        why = sl_xasprintf("dlopen failed: %s", e ? e : "unknown error");
        goto refuse;
    }
    *(void **)&entry = dlsym(dl, SL_PLUGIN_ENTRY_NAME);
    if (entry == NULL) {
        why = sl_xasprintf("no %s symbol: not a Shale plugin, or built without SL_PLUGIN_EXPORT",
                           SL_PLUGIN_ENTRY_NAME);
        goto refuse;
    }
    d = entry(&host_api, perr, sizeof(perr));
    if (d == NULL) {
        why = sl_xasprintf("%s returned no descriptor: %s", SL_PLUGIN_ENTRY_NAME,
                           perr[0] ? perr : "(no reason given)");
        goto refuse;
    }
    if (!check_desc(d, whybuf, sizeof(whybuf))) {
        why = sl_xstrdup(whybuf);
        goto refuse;
    }
    other = sl_plug_find(reg, 0, d->name);
    if (other != NULL) {
        why = sl_xasprintf("a plugin named \"%s\" is already loaded from %s; remove one of the two files",
                           d->name, other->file);
        goto refuse;
    }
    if (d->kind == SL_PLUGIN_BACKEND && (other = sl_plug_backend(reg, d->backend->provider)) != NULL) {
        why = sl_xasprintf("provider \"%s\" already has a backend: \"%s\" (%s)", d->backend->provider,
                           other->desc->name, other->file);
        goto refuse;
    }
    if (d->kind == SL_PLUGIN_FORMAT) {
        for (i = 0; d->format->extensions[i] != NULL; i++) {
            other = find_ext_owner(reg, d->format->extensions[i]);
            if (other != NULL) {
                why = sl_xasprintf("extension \"%s\" already belongs to format \"%s\" (%s)",
                                   d->format->extensions[i], other->desc->name, other->file);
                goto refuse;
            }
        }
    }
    if (d->init != NULL) {
        rc = d->init(&host_api, &state, perr, sizeof(perr));
        if (rc != SL_PLUG_OK) {
            why = sl_xasprintf("init failed (%d): %s", rc, perr[0] ? perr : "(no reason given)");
            goto refuse;
        }
    }
    p = sl_xcalloc(1, sizeof(*p));
    p->dl = dl;
    p->desc = d;
    p->state = state;
    p->file = sl_xstrdup(real);
    if (reg->n % 16 == 0)
        reg->v = sl_xrealloc(reg->v, (reg->n + 16) * sizeof(*reg->v));
    reg->v[reg->n++] = p;
    {
        char exts[256] = "";
        size_t used = 0;
        if (d->kind == SL_PLUGIN_FORMAT)
            for (i = 0; d->format->extensions[i] != NULL && used < sizeof(exts); i++)
                used += (size_t)snprintf(exts + used, sizeof(exts) - used, "%s%s", i ? " " : ", extensions ",
                                         d->format->extensions[i]);
        sl_logi("plugin %s: loaded %s \"%s\" %s%s", real, sl_plug_kind_name((int)d->kind), d->name, d->version, exts);
    }
    free(path);
    return;
refuse:
    reg_refuse(reg, path, why);
    free(why);
    if (dl != NULL)
        dlclose(dl);
    free(path);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sl_plug_reg_load(const char *dir, struct sl_plug_reg **out, struct sl_err *err)
{
    struct sl_plug_reg *reg;
    char dir_real[PATH_MAX];
    char **names = NULL;
    size_t nnames = 0, i;
    struct dirent *de;
    struct stat st;
    DIR *dh;

    *out = NULL;
    reg = sl_xcalloc(1, sizeof(*reg));
    if (dir == NULL || dir[0] == '\0') {
        *out = reg;
        return 0;
    }
    reg->dir = sl_xstrdup(dir);
    if (realpath(dir, dir_real) == NULL || (dh = opendir(dir_real)) == NULL) {
        int e = errno;
        sl_errf(err, SL_EINVAL, "plugin directory %s: %s; fix plugins.dir in the config", dir, strerror(e));
        free(reg->dir);
        free(reg);
        return -1;
    }
    if (stat(dir_real, &st) == 0 && (st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))
        sl_logw("plugin directory %s is world-writable: anyone can replace plugins there; run chmod o-w on it",
                dir_real);
    while ((de = readdir(dh)) != NULL) {
        size_t len = strlen(de->d_name);
        if (de->d_name[0] == '.' || len < 4 || strcmp(de->d_name + len - 3, ".so") != 0)
            continue;
        if (nnames % 32 == 0)
            names = sl_xrealloc(names, (nnames + 32) * sizeof(*names));
        names[nnames++] = sl_xstrdup(de->d_name);
    }
    closedir(dh);
    if (nnames > 0)
        qsort(names, nnames, sizeof(*names), cmp_str);
    for (i = 0; i < nnames; i++) {
        load_one(reg, dir_real, names[i]);
        free(names[i]);
    }
    free(names);
    sl_logi("plugins: %zu loaded, %zu refused from %s", reg->n, reg->nrefused, dir_real);
    *out = reg;
    return 0;
}

int sl_plug_reg_free(struct sl_plug_reg *reg)
{
    size_t i;

    if (reg == NULL)
        return 0;
    for (i = 0; i < reg->n; i++) {
        long users = __atomic_load_n(&reg->v[i]->users, __ATOMIC_ACQUIRE);
        if (users != 0) {
            sl_logw("plugins: not unloading: plugin \"%s\" still has %ld open handle(s)", reg->v[i]->desc->name,
                    users);
            return -1;
        }
    }
    for (i = reg->n; i-- > 0;) {
        struct sl_plug *p = reg->v[i];
        if (p->desc->fini != NULL)
            p->desc->fini(p->state);
        dlclose(p->dl);
        free(p->file);
        free(p);
    }
    for (i = 0; i < reg->nrefused; i++) {
        free(reg->refused[i].file);
        free(reg->refused[i].reason);
    }
    free(reg->refused);
    free(reg->v);
    free(reg->dir);
    free(reg);
    return 0;
}

size_t sl_plug_count(const struct sl_plug_reg *reg)
{
    return reg ? reg->n : 0;
}

const struct sl_plug *sl_plug_at(const struct sl_plug_reg *reg, size_t i)
{
    return reg && i < reg->n ? reg->v[i] : NULL;
}

size_t sl_plug_refused_count(const struct sl_plug_reg *reg)
{
    return reg ? reg->nrefused : 0;
}

const struct sl_plug *sl_plug_find(const struct sl_plug_reg *reg, int kind, const char *name)
{
    size_t i;

    if (reg == NULL || name == NULL)
        return NULL;
    for (i = 0; i < reg->n; i++)
        if ((kind == 0 || (int)reg->v[i]->desc->kind == kind) && strcmp(reg->v[i]->desc->name, name) == 0)
            return reg->v[i];
    return NULL;
}

const struct sl_plug *sl_plug_backend(const struct sl_plug_reg *reg, const char *provider)
{
    for (size_t i = 0; reg && i < reg->n; i++)
        if (reg->v[i]->desc->kind == SL_PLUGIN_BACKEND && !strcmp(reg->v[i]->desc->backend->provider, provider))
            return reg->v[i];
    return NULL;
}

const struct sl_plug *sl_plug_format_by_ext(const struct sl_plug_reg *reg, const char *objname)
{
    const struct sl_plug *best = NULL;
    size_t best_len = 0, n, i, j;

    if (reg == NULL || objname == NULL)
        return NULL;
    n = strlen(objname);
    for (i = 0; i < reg->n; i++) {
        const struct sl_plug *p = reg->v[i];
        if (p->desc->kind != SL_PLUGIN_FORMAT)
            continue;
        for (j = 0; p->desc->format->extensions[j] != NULL; j++) {
            const char *e = p->desc->format->extensions[j];
            size_t el = strlen(e);
            if (el < n && el > best_len && strcasecmp(objname + n - el, e) == 0) {
                best = p;
                best_len = el;
            }
        }
    }
    return best;
}

const struct sl_plug *sl_plug_format_by_magic(const struct sl_plug_reg *reg, const void *head, size_t n)
{
    const struct sl_plug *best = NULL;
    int best_conf = 0;
    size_t i;

    if (reg == NULL || head == NULL || n == 0)
        return NULL;
    for (i = 0; i < reg->n; i++) {
        const struct sl_plug *p = reg->v[i];
        int conf;
        if (p->desc->kind != SL_PLUGIN_FORMAT)
            continue;
        conf = p->desc->format->detect(p->state, head, n);
        if (conf > 100)
            conf = 100;
        if (conf > best_conf) {
            best = p;
            best_conf = conf;
        }
    }
    return best;
}

const struct sl_plug *sl_plug_format_by_mime(const struct sl_plug_reg *reg, const char *archmime)
{
    const struct sl_plug *best = NULL;
    size_t best_len = 0, i, j;

    if (reg == NULL || archmime == NULL || archmime[0] == '\0')
        return NULL;
    for (i = 0; i < reg->n; i++) {
        const struct sl_plug *p = reg->v[i];
        if (p->desc->kind == SL_PLUGIN_FORMAT &&
            (strcasecmp(p->desc->name, archmime) == 0 || strcasecmp(p->desc->format->mime, archmime) == 0))
            return p;
    }
    for (i = 0; i < reg->n; i++) {
        const struct sl_plug *p = reg->v[i];
        if (p->desc->kind != SL_PLUGIN_FORMAT)
            continue;
        for (j = 0; p->desc->format->extensions[j] != NULL; j++) {
            const char *e = p->desc->format->extensions[j] + 1; /* without the dot */
            size_t el = strlen(e);
            if (el > best_len && strcasestr(archmime, e) != NULL) {
                best = p;
                best_len = el;
            }
        }
    }
    return best;
}

const struct sl_plug *sl_plug_format_for(const struct sl_plug_reg *reg, const char *objname, const char *archmime,
                                         const void *head, size_t n)
{
    const struct sl_plug *p;

    if (archmime != NULL && archmime[0] != '\0')
        return sl_plug_format_by_mime(reg, archmime);
    p = sl_plug_format_by_ext(reg, objname);
    if (p == NULL && head != NULL)
        p = sl_plug_format_by_magic(reg, head, n);
    return p;
}

/* ------------------------------------------------------------------------ */
/* Accessors and listing                                                    */
/* ------------------------------------------------------------------------ */

const struct sl_plugin *sl_plug_desc(const struct sl_plug *p)
{
    return p->desc;
}

void *sl_plug_state(const struct sl_plug *p)
{
    return p->state;
}

void sl_plug_ref(const struct sl_plug *p, int delta)
{
    __atomic_add_fetch(&((struct sl_plug *)p)->users, delta, __ATOMIC_ACQ_REL);
}

const char *sl_plug_name(const struct sl_plug *p)
{
    return p->desc->name;
}

const char *sl_plug_version(const struct sl_plug *p)
{
    return p->desc->version;
}

const char *sl_plug_file(const struct sl_plug *p)
{
    return p->file;
}

int sl_plug_kind(const struct sl_plug *p)
{
    return (int)p->desc->kind;
}

const char *sl_plug_kind_name(int kind)
{
    switch (kind) {
    case SL_PLUGIN_FORMAT: return "format";
    case SL_PLUGIN_SAMPLE_KEY: return "sample_key";
    case SL_PLUGIN_BACKEND: return "backend";
    default: return "unknown";
    }
}

const char *sl_plug_mime(const struct sl_plug *p)
{
    return p->desc->kind == SL_PLUGIN_FORMAT ? p->desc->format->mime : NULL;
}

const char *const *sl_plug_exts(const struct sl_plug *p)
{
    return p->desc->kind == SL_PLUGIN_FORMAT ? p->desc->format->extensions : NULL;
}

uint32_t sl_plug_caps(const struct sl_plug *p)
{
    return p->desc->kind == SL_PLUGIN_FORMAT ? p->desc->format->caps : 0;
}

json_t *sl_plug_reg_json(const struct sl_plug_reg *reg)
{
    static const struct {
        uint32_t bit;
        const char *name;
    } capnames[] = {
        { SL_FMT_CAP_READ, "read" },     { SL_FMT_CAP_WRITE, "write" },     { SL_FMT_CAP_APPEND, "append" },
        { SL_FMT_CAP_INDEX, "index" },   { SL_FMT_CAP_OFFSETS, "offsets" },
    };
    json_t *arr = json_array();
    size_t i, j;

    for (i = 0; reg != NULL && i < reg->n; i++) {
        const struct sl_plug *p = reg->v[i];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(p->desc->name));
        json_object_set_new(o, "kind", json_string(sl_plug_kind_name((int)p->desc->kind)));
        json_object_set_new(o, "version", json_string(p->desc->version));
        json_object_set_new(o, "file", json_string(p->file));
        json_object_set_new(o, "description", p->desc->description ? json_string(p->desc->description) : json_null());
        if (p->desc->kind == SL_PLUGIN_FORMAT) {
            json_t *ex = json_array(), *caps = json_array();
            for (j = 0; p->desc->format->extensions[j] != NULL; j++)
                json_array_append_new(ex, json_string(p->desc->format->extensions[j]));
            for (j = 0; j < SL_ARRAY_SIZE(capnames); j++)
                if (p->desc->format->caps & capnames[j].bit)
                    json_array_append_new(caps, json_string(capnames[j].name));
            json_object_set_new(o, "extensions", ex);
            json_object_set_new(o, "mime", json_string(p->desc->format->mime));
            json_object_set_new(o, "caps", caps);
        } else {
            json_object_set_new(o, "extensions", json_array());
        }
        json_object_set_new(o, "status", json_string("loaded"));
        json_array_append_new(arr, o);
    }
    for (i = 0; reg != NULL && i < reg->nrefused; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "file", json_string(reg->refused[i].file));
        json_object_set_new(o, "status", json_string("refused"));
        json_object_set_new(o, "reason", json_string(reg->refused[i].reason));
        json_array_append_new(arr, o);
    }
    return arr;
}
