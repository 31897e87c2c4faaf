/* SPDX-License-Identifier: MIT
 * archive.c: shale archive put|get|ls|bucket|gen-shards (spec cli.md §2.2),
 * with --help for each.
 */
#include "cli.h"
#include "jsonx.h"
#include "meta.h"
#include "template.h"

#include <archive.h>
#include <archive_entry.h>
#include <curl/curl.h>
#include <dirent.h>
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *shard_exts[] = { ".tar.lz4", ".tar.gz", ".tgz", ".tar", ".zip", ".tar.zst", NULL };

/* Split "shard.tar/member" at the first path component ending in a shard extension. */
static bool split_shard(const char *obj, char **shard, char **member)
{
    size_t n = strlen(obj);
    for (size_t i = 1; i <= n; i++) {
        if (i < n && obj[i] != '/')
            continue;
        for (const char **e = shard_exts; *e; e++) {
            size_t el = strlen(*e);
            if (i >= el && !strncasecmp(obj + i - el, *e, el)) {
                *shard = sl_xstrndup(obj, i);
                *member = sl_xstrdup(i < n ? obj + i + 1 : "");
                return true;
            }
        }
    }
    return false;
}

static size_t buf_sink(char *p, size_t sz, size_t n, void *ud)
{
    sl_buf_add(ud, p, sz * n);
    return sz * n;
}

/* The server's message in the words of the command line: it names the
 * request (PUT ...?archpath, the Ais-Pine header); the user typed flags. */
static void flag_words(const char *m, int pine, char *out, size_t n)
{
    const char *p = strstr(m, "?archpath: ");
    if (p)
        m = p + strlen("?archpath: ");
    else if (sl_has_prefix(m, "PUT archpath: "))
        m += strlen("PUT archpath: ");
    static const char *const words[][2] = {
        { "use Ais-Pine: 2 to append or create", "use --append-or-put to create it" },
        { "Ais-Pine", NULL },
        { "archpath", "--archpath" },
    };
    size_t o = 0;
    while (*m && o + 1 < n) {
        size_t k;
        for (k = 0; k < SL_ARRAY_SIZE(words); k++)
            if (sl_has_prefix(m, words[k][0]))
                break;
        if (k == SL_ARRAY_SIZE(words)) {
            out[o++] = *m++;
            continue;
        }
        const char *to = words[k][1] ? words[k][1] : pine == 1 ? "--append" : pine == 2 ? "--append-or-put"
                                                                                    : "(put, no --append flag)";
        o += (size_t)snprintf(out + o, n - o, "%s", to);
        o = SL_MIN(o, n - 1);
        m += strlen(words[k][0]);
    }
    out[o] = 0;
}

/* PUT one member into a shard: pine 0 create/overwrite, 1 append, 2 append or create; named_by: the flag
 * that named the member ("--archpath"), or NULL */
static int put_member(const struct uri *u, const char *shard, const char *path, const char *member, int pine,
                      const char *named_by)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) < 0) {
        fprintf(stderr, "Error: %s: %s\n", path, strerror(errno));
        if (f)
            fclose(f);
        return 1;
    }
    struct sl_buf body;
    sl_buf_init(&body);
    char *tmp = sl_xmalloc(65536);
    size_t n;
    while ((n = fread(tmp, 1, 65536, f)) > 0)
        sl_buf_add(&body, tmp, n);
    free(tmp);
    fclose(f);
    char *p = uri_obj_path(u, shard);
    char *am = sl_url_encode_query(member);
    char *pq = sl_xasprintf("%s%s&archpath=%s", p, uri_query(u), am);
    free(p);
    free(am);
    CURL *c = curl_easy_init();
    char *url = sl_xasprintf("%s%s", cli_endpoint(), pq);
    char pineh[32];
    snprintf(pineh, sizeof(pineh), "Ais-Pine: %d", pine);
    struct curl_slist *h = curl_slist_append(NULL, pineh);
    h = curl_slist_append(h, "Content-Type: application/octet-stream");
    h = cli_auth_hdr(h);
    struct sl_buf resp;
    sl_buf_init(&resp);
    cli_curl_opts(c, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.p ? body.p : "");
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body.len);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTREDIR, (long)CURL_REDIR_POST_ALL);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, buf_sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    int ret = 0;
    if (rc != CURLE_OK || status != 200) {
        json_error_t je;
        json_t *j = resp.len ? json_loadb(resp.p, resp.len, 0, &je) : NULL;
        const char *m = j ? json_string_value(json_object_get(j, "message")) : NULL;
        char words[1200];
        flag_words(rc != CURLE_OK ? curl_easy_strerror(rc) : m ? m : "failed", pine, words, sizeof(words));
        fprintf(stderr, "Error: archive put %s => ais://%s/%s (member \"%s\"%s%s): %s\n", path, u->bucket, shard,
                member, named_by ? " from " : "", named_by ? named_by : "", words);
        json_decref(j);
        ret = 1;
    } else {
        printf("%s \"%s\" => ais://%s/%s/%s\n", pine ? "APPEND" : "PUT", path, u->bucket, shard, member);
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    free(url);
    free(pq);
    sl_buf_free(&body);
    sl_buf_free(&resp);
    return ret;
}

static int walk_files(const char *dir, const char *rel, bool rec, char ***paths, char ***rels, size_t *n)
{
    char *d = rel[0] ? sl_xasprintf("%s/%s", dir, rel) : sl_xstrdup(dir);
    struct stat st;
    if (stat(d, &st) < 0) {
        fprintf(stderr, "Error: %s: %s\n", d, strerror(errno));
        free(d);
        return -1;
    }
    if (S_ISREG(st.st_mode)) {
        *paths = sl_xrealloc(*paths, (*n + 1) * sizeof(char *));
        *rels = sl_xrealloc(*rels, (*n + 1) * sizeof(char *));
        (*paths)[*n] = d;
        const char *b = strrchr(dir, '/');
        (*rels)[*n] = sl_xstrdup(rel[0] ? rel : (b ? b + 1 : dir));
        (*n)++;
        return 0;
    }
    struct sl_buf cmd;
    sl_buf_init(&cmd);
    /* sorted directory listing */
    char **names = NULL;
    size_t nn = 0;
    DIR *dh = opendir(d);
    struct dirent *de;
    while (dh && (de = readdir(dh))) {
        if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
            continue;
        names = sl_xrealloc(names, (nn + 1) * sizeof(char *));
        names[nn++] = sl_xstrdup(de->d_name);
    }
    if (dh)
        closedir(dh);
    for (size_t i = 0; i < nn; i++)
        for (size_t j = i + 1; j < nn; j++)
            if (strcmp(names[j], names[i]) < 0) {
                char *t = names[i];
                names[i] = names[j];
                names[j] = t;
            }
    for (size_t i = 0; i < nn; i++) {
        char *r = rel[0] ? sl_xasprintf("%s/%s", rel, names[i]) : sl_xstrdup(names[i]);
        char *full = sl_xasprintf("%s/%s", dir, r);
        struct stat s2;
        if (stat(full, &s2) == 0 && (S_ISREG(s2.st_mode) || (rec && S_ISDIR(s2.st_mode))))
            walk_files(dir, r, rec, paths, rels, n);
        free(full);
        free(r);
        free(names[i]);
    }
    free(names);
    free(d);
    sl_buf_free(&cmd);
    return 0;
}

static int cmp_rel(const void *a, const void *b, void *rels)
{
    return strcmp(((char **)rels)[*(const size_t *)a], ((char **)rels)[*(const size_t *)b]);
}

/* --list / --template: which of the walked files (by their relative names)
 * are put, in the order the list or the template gives; a name that is not
 * there is an error. A template without ranges is a name prefix. Returns the
 * number selected into sel (indices into rels), or -1. */
static ssize_t select_files(const struct opts *o, char **rels, size_t n, size_t **sel)
{
    const char *list = opt_str(o, "list"), *tmpl = opt_str(o, "template");
    size_t *idx = sl_xcalloc(n ? n : 1, sizeof(size_t)), ns = 0;
    *sel = sl_xcalloc(n ? n : 1, sizeof(size_t));
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    if (!list && !tmpl) {
        memcpy(*sel, idx, n * sizeof(size_t));
        free(idx);
        return (ssize_t)n;
    }
    if (list && tmpl) {
        fprintf(stderr, "Error: --list and --template cannot be combined\n");
        free(idx);
        return -1;
    }
    qsort_r(idx, n, sizeof(size_t), cmp_rel, rels);
    bool *taken = sl_xcalloc(n ? n : 1, sizeof(bool));
    ssize_t rc = 0;
    struct sl_buf name;
    sl_buf_init(&name);
    struct sl_tmpl *t = NULL;
    struct sl_err err = { 0 };
    char *cp = list ? sl_xstrdup(list) : NULL, *save = NULL, *tk = NULL;
    if (tmpl && sl_tmpl_parse(tmpl, &t, &err) < 0) {
        fprintf(stderr, "Error: --template \"%s\": %s\n", tmpl, err.msg);
        rc = -1;
    } else if (t && !sl_tmpl_is_range(t)) {
        const char *pfx = sl_tmpl_prefix(t);
        for (size_t i = 0; i < n; i++)
            if (sl_has_prefix(rels[i], pfx))
                (*sel)[ns++] = i;
    } else if (t && sl_tmpl_count(t) == UINT64_MAX) {
        fprintf(stderr, "Error: --template \"%s\": need a bounded range such as x-{0..9}.jpg\n", tmpl);
        rc = -1;
    } else {
        uint64_t cnt = t ? sl_tmpl_count(t) : 0;
        for (uint64_t k = 0;; k++) {
            const char *want;
            if (t) {
                if (k >= cnt || sl_tmpl_at(t, k, &name) < 0)
                    break;
                want = name.p;
            } else {
                tk = strtok_r(k ? NULL : cp, ",", &save);
                if (!tk)
                    break;
                want = tk;
            }
            size_t lo = 0, hi = n;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (strcmp(rels[idx[mid]], want) < 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo == n || strcmp(rels[idx[lo]], want)) {
                fprintf(stderr, "Error: \"%s\" (from --%s) is not a file in %s%s\n", want, t ? "template" : "list",
                        o->argv[0], strchr(want, '/') && !opt_bool(o, "recursive") ? " (add -r for subdirectories)"
                                                                                   : "");
                rc = -1;
                break;
            }
            if (!taken[idx[lo]]) {
                taken[idx[lo]] = true;
                (*sel)[ns++] = idx[lo];
            }
        }
    }
    if (rc == 0 && ns == 0) {
        fprintf(stderr, "Error: --%s selects no file in %s\n", list ? "list" : "template", o->argv[0]);
        rc = -1;
    }
    sl_tmpl_free(t);
    sl_buf_free(&name);
    free(cp);
    free(taken);
    free(idx);
    return rc < 0 ? -1 : (ssize_t)ns;
}

static int arch_put(struct opts *o)
{
    if (o->argc != 2) {
        return cli_usage("archive put");
    }
    struct uri u;
    if (uri_parse(o->argv[1], &u, true) < 0)
        return 1;
    char *shard, *member;
    if (!split_shard(u.obj, &shard, &member)) {
        fprintf(stderr, "Error: \"%s\" does not name a shard (.tar, .tgz, .tar.gz, .zip, .tar.lz4)\n", o->argv[1]);
        uri_free(&u);
        return 1;
    }
    if (opt_bool(o, "append") && opt_bool(o, "append-or-put")) {
        fprintf(stderr, "Error: --append and --append-or-put cannot be combined (--append-or-put also creates the "
                "shard)\n");
        uri_free(&u);
        free(shard);
        free(member);
        return 1;
    }
    int pine = opt_bool(o, "append") ? 1 : opt_bool(o, "append-or-put") ? 2 : 0;
    bool dry = opt_bool(o, "dry-run");
    char **paths = NULL, **rels = NULL;
    size_t n = 0, *sel = NULL;
    ssize_t ns = 0;
    int rc = 0;
    if (walk_files(o->argv[0], "", opt_bool(o, "recursive"), &paths, &rels, &n) < 0 || !n) {
        if (!n)
            fprintf(stderr, "Error: no files in %s\n", o->argv[0]);
        rc = 1;
    } else if ((ns = select_files(o, rels, n, &sel)) < 0) {
        rc = 1;
    } else if (ns > 1 && !pine) {
        fprintf(stderr, "Warning: multi-file 'archive put' operation requires either '--append' or "
                        "'--append-or-put' option\n");
        rc = 1;
    } else {
        const char *ap = opt_str(o, "archpath");
        uint64_t total = 0;
        if (dry)
            printf("[DRY RUN] No modifications on the cluster\n");
        for (ssize_t k = 0; k < ns && !rc; k++) {
            size_t i = sel[k];
            const char *m = ns == 1 && ap && *ap ? ap : ns == 1 && member[0] ? member : rels[i];
            char *mm = ns > 1 && ap && *ap ? sl_xasprintf("%s%s%s", ap, sl_has_suffix(ap, "/") ? "" : "/", rels[i])
                                           : sl_xstrdup(m);
            if (dry) {
                struct stat st;
                if (stat(paths[i], &st) == 0)
                    total += (uint64_t)st.st_size;
                printf("%s \"%s\" => %s://%s/%s/%s\n", pine ? "APPEND" : "PUT", paths[i],
                       sl_provider_scheme(u.provider), u.bucket, shard, mm);
            } else {
                rc = put_member(&u, shard, paths[i], mm, pine, ap && *ap ? "--archpath" : NULL);
            }
            free(mm);
        }
        if (dry) {
            char sz[32];
            sl_format_size(total, sz, sizeof(sz));
            printf("%zd file%s (%s) would have been archived into %s://%s/%s\n", ns, ns == 1 ? "" : "s", sz,
                   sl_provider_scheme(u.provider), u.bucket, shard);
        }
    }
    free(sel);
    for (size_t i = 0; i < n; i++) {
        free(paths[i]);
        free(rels[i]);
    }
    free(paths);
    free(rels);
    free(shard);
    free(member);
    uri_free(&u);
    return rc;
}

static int arch_get(struct opts *o)
{
    /* ais://b/shard.tar/member -> get with --archpath */
    if (o->argc < 1)
        return cli_usage("archive get");
    struct uri u;
    if (uri_parse(o->argv[0], &u, true) < 0)
        return 1;
    char *shard, *member;
    if (!split_shard(u.obj, &shard, &member)) {
        fprintf(stderr, "Error: \"%s\" does not name a shard\n", o->argv[0]);
        uri_free(&u);
        return 1;
    }
    char **nargv = sl_xcalloc(12, sizeof(char *));
    int na = 0;
    char *src = sl_xasprintf("%s://%s/%s", u.provider, u.bucket, shard);
    nargv[na++] = src;
    if (o->argc > 1)
        nargv[na++] = o->argv[1];
    char *apflag = NULL;
    if (member[0] && !opt_str(o, "archpath")) {
        apflag = sl_xasprintf("--archpath=%s", member);
        nargv[na++] = apflag;
    }
    static const char *pass[] = { "archpath", "archregx", "archmode" };
    char *flags[3] = { 0 };
    for (int i = 0; i < 3; i++) {
        const char *v = opt_str(o, pass[i]);
        if (v) {
            flags[i] = sl_xasprintf("--%s=%s", pass[i], v);
            nargv[na++] = flags[i];
        }
    }
    if (opt_str(o, "archmode") && o->argc < 2) {
        /* a selection is a tar stream: default output name */
        char *def = sl_xasprintf("%s-selection.tar", strrchr(shard, '/') ? strrchr(shard, '/') + 1 : shard);
        nargv[na++] = def;
    }
    if (opt_bool(o, "progress"))
        nargv[na++] = "--progress";
    int rc = cmd_get(na, nargv);
    free(src);
    free(apflag);
    for (int i = 0; i < 3; i++)
        free(flags[i]);
    free(nargv);
    free(shard);
    free(member);
    uri_free(&u);
    return rc;
}

struct ls_arg {
    struct table *t;
    size_t shards, members;
    long long limit;            /* names (shards and members) to list at most; 0: all */
};

static int ls_entry(void *arg, const json_t *e)
{
    struct ls_arg *a = arg;
    long long fl = json_integer_value(json_object_get(e, "flags"));
    bool in_arch = fl & 128, is_arch = fl & 512;
    if (!in_arch && !is_arch)
        return 0; /* plain objects are not shards */
    if (a->limit && (long long)(a->shards + a->members) >= a->limit)
        return 2; /* --limit reached: stop listing */
    char sz[32], nm[2200];
    sl_format_size(strtoull(sl_json_str(e, "size", "0"), NULL, 10), sz, sizeof(sz));
    snprintf(nm, sizeof(nm), "%s%s", in_arch ? "    " : "", json_string_value(json_object_get(e, "name")));
    table_row(a->t, nm, sz);
    if (in_arch)
        a->members++;
    else
        a->shards++;
    return 0;
}

static int arch_ls(struct opts *o)
{
    if (o->argc != 1) {
        return cli_usage("archive ls");
    }
    struct uri u;
    if (uri_parse(o->argv[0], &u, true) < 0)
        return 1;
    long long limit = opt_int(o, "limit", 0);
    if (limit < 0) {
        fprintf(stderr, "Error: --limit %s: expected a number of names, 0 or more (0: all)\n", opt_str(o, "limit"));
        uri_free(&u);
        return 1;
    }
    struct ls_arg la = { table_new(2, "NAME", "SIZE"), 0, 0, limit };
    json_t *msg = json_pack("{s:s,s:s,s:s}", "props", "name,size", "prefix", u.obj, "flags", "8");
    char *pq = sl_xasprintf("/v1/buckets/%s%s", u.bucket, uri_query(&u));
    int rc = cli_list_each(pq, msg, ls_entry, &la);
    if (rc == 2)
        rc = 0; /* stopped at --limit */
    free(pq);
    json_decref(msg);
    if (rc == 0) {
        table_print(la.t, stdout, !cli_no_headers);
        if (!cli_no_headers)
            printf("Listed %zu shard%s, %zu member%s\n", la.shards, la.shards == 1 ? "" : "s", la.members,
                   la.members == 1 ? "" : "s");
    }
    table_free(la.t);
    uri_free(&u);
    return rc;
}

static int arch_bucket(struct opts *o)
{
    if (o->argc != 2) {
        return cli_usage("archive bucket");
    }
    struct uri s, d;
    if (uri_parse(o->argv[0], &s, true) < 0 || uri_parse(o->argv[1], &d, true) < 0)
        return 1;
    if (!d.obj[0]) {
        fprintf(stderr, "Error: \"%s\": name the shard to create, e.g. ais://dst/shard-0001.tar\n", o->argv[1]);
        return 1;
    }
    json_t *v = json_object();
    json_object_set_new(v, "archname", json_string(d.obj));
    json_object_set_new(v, "tobck", json_pack("{s:s,s:s}", "name", d.bucket, "provider", d.provider));
    const char *list = opt_str(o, "list"), *tmpl = opt_str(o, "template"), *pfx = opt_str(o, "prefix");
    if (list) {
        json_object_set_new(v, "objnames", cli_names(list));
    } else {
        json_object_set_new(v, "template", json_string(tmpl ? tmpl : pfx ? pfx : s.obj));
    }
    json_object_set_new(v, "isbn", json_boolean(opt_bool(o, "include-src-bck")));
    json_object_set_new(v, "aate", json_boolean(opt_bool(o, "append-or-put")));
    json_object_set_new(v, "coer", json_boolean(opt_bool(o, "cont-on-err")));
    json_object_set_new(v, "non-recurs", json_boolean(opt_bool(o, "nr")));
    char *pq = sl_xasprintf("/v1/buckets/%s%s", s.bucket, uri_query(&s));
    char *id = cli_act_id("PUT", pq, "archive", v, NULL);
    free(pq);
    int rc = !id;
    if (id) {
        printf("Archiving %s://%s/%s => %s://%s/%s: job %s\n", s.provider, s.bucket, s.obj, d.provider, d.bucket,
               d.obj, id);
        if (opt_bool(o, "wait"))
            rc = cli_job_wait(id, 3600LL * 1000000000LL, false);
        free(id);
    }
    uri_free(&s);
    uri_free(&d);
    return rc;
}

/* ---- gen-shards: random shards built locally with libarchive ---- */

static la_ssize_t mem_write(struct archive *a, void *ud, const void *buf, size_t n)
{
    (void)a;
    sl_buf_add(ud, buf, n);
    return (la_ssize_t)n;
}

static int build_shard(const char *name, int fcount, uint64_t fsize, char **exts, int next, uint64_t seq,
                       struct sl_buf *out)
{
    struct archive *a = archive_write_new();
    int rc = 0;
    if (sl_has_suffix(name, ".zip")) {
        archive_write_set_format_zip(a);
    } else {
        archive_write_set_format_pax_restricted(a);
        if (sl_has_suffix(name, ".tgz") || sl_has_suffix(name, ".tar.gz"))
            archive_write_add_filter_gzip(a);
        else if (sl_has_suffix(name, ".tar.lz4"))
            archive_write_add_filter_lz4(a);
        else if (!sl_has_suffix(name, ".tar")) {
            fprintf(stderr, "Error: %s: unsupported extension (.tar, .tgz, .tar.gz, .zip, .tar.lz4)\n", name);
            archive_write_free(a);
            return -1;
        }
    }
    archive_write_set_bytes_in_last_block(a, 1);
    if (archive_write_open(a, out, NULL, mem_write, NULL) != ARCHIVE_OK) {
        fprintf(stderr, "Error: %s\n", archive_error_string(a));
        archive_write_free(a);
        return -1;
    }
    char *data = sl_xmalloc(fsize ? fsize : 1);
    for (int i = 0; i < fcount && rc == 0; i++) {
        for (int e = 0; e < next && rc == 0; e++) {
            char mn[256];
            snprintf(mn, sizeof(mn), "%llu-%04d%s", (unsigned long long)seq, i, exts[e]);
            if (getrandom(data, fsize, 0) < 0)
                memset(data, i, fsize);
            struct archive_entry *en = archive_entry_new();
            archive_entry_set_pathname(en, mn);
            archive_entry_set_size(en, (la_int64_t)fsize);
            archive_entry_set_filetype(en, AE_IFREG);
            archive_entry_set_perm(en, 0644);
            archive_entry_set_mtime(en, time(NULL), 0);
            if (archive_write_header(a, en) != ARCHIVE_OK || archive_write_data(a, data, fsize) < 0)
                rc = -1;
            archive_entry_free(en);
        }
    }
    free(data);
    if (archive_write_close(a) != ARCHIVE_OK)
        rc = -1;
    if (rc)
        fprintf(stderr, "Error: building %s: %s\n", name, archive_error_string(a));
    archive_write_free(a);
    return rc;
}

/* gen-shards writes into an existing bucket, checked before anything is
 * built or drawn; with --cleanup the bucket is destroyed (if there) and
 * created again, as `ais archive gen-shards --cleanup` does. */
static int prepare_bucket(const struct uri *u, bool cleanup)
{
    struct cli_resp r;
    char *pq = sl_xasprintf("/v1/buckets/%s%s", u->bucket, uri_query(u));
    const char *scheme = sl_provider_scheme(u->provider);
    int rc = 0;
    cli_req("HEAD", pq, NULL, NULL, 0, &r);
    long st = r.status;
    if (st != 200 && st != 404) {
        rc = cli_fail(&r, NULL);
    } else if (!cleanup && st == 404) {
        fprintf(stderr, "Error: bucket \"%s://%s\" does not exist (create it, or pass --cleanup to have "
                        "gen-shards create it)\n", scheme, u->bucket);
        rc = 1;
    }
    cli_resp_free(&r);
    if (!rc && cleanup && st == 200) {
        cli_act("DELETE", pq, "destroy-bck", "", NULL, &r);
        if (r.status != 200)
            rc = cli_fail(&r, "--cleanup: destroying the bucket");
        else
            printf("\"%s://%s\" destroyed\n", scheme, u->bucket);
        cli_resp_free(&r);
    }
    if (!rc && cleanup) {
        cli_act("POST", pq, "create-bck", "", NULL, &r);
        if (r.status != 200)
            rc = cli_fail(&r, "--cleanup: creating the bucket");
        else
            printf("\"%s://%s\" bucket created\n", scheme, u->bucket);
        cli_resp_free(&r);
    }
    free(pq);
    return rc ? -1 : 0;
}

static int gen_shards(struct opts *o)
{
    if (o->argc != 1) {
        return cli_usage("archive gen-shards");
    }
    struct uri u;
    if (uri_parse(o->argv[0], &u, true) < 0)
        return 1;
    struct sl_tmpl *t;
    struct sl_err err;
    if (sl_tmpl_parse(u.obj, &t, &err) < 0 || !sl_tmpl_is_range(t) || sl_tmpl_count(t) == UINT64_MAX) {
        fprintf(stderr, "Error: \"%s\": need a bounded template such as shard-{000..009}.tar%s%s\n", u.obj,
                err.msg[0] ? ": " : "", err.msg[0] ? err.msg : "");
        uri_free(&u);
        return 1;
    }
    int fcount = (int)opt_int(o, "fcount", 5);
    uint64_t fsize = 1024;
    const char *fs = opt_str(o, "fsize");
    if (fs && sl_parse_size(fs, &fsize) < 0) {
        fprintf(stderr, "Error: --fsize: invalid size \"%s\"\n", fs);
        return 1;
    }
    if (prepare_bucket(&u, opt_bool(o, "cleanup")) < 0) {
        sl_tmpl_free(t);
        uri_free(&u);
        return 1;
    }
    char *fext = sl_xstrdup(opt_str(o, "fext") ? opt_str(o, "fext") : ".test");
    char *exts[16];
    int next = 0;
    char *save = NULL;
    for (char *tk = strtok_r(fext, ",", &save); tk && next < 16; tk = strtok_r(NULL, ",", &save))
        exts[next++] = tk;
    uint64_t n = sl_tmpl_count(t);
    struct progress *pg = progress_new("Shards created:", n, false);
    struct sl_buf name, data;
    sl_buf_init(&name);
    sl_buf_init(&data);
    int rc = 0;
    for (uint64_t i = 0; i < n && !rc; i++) {
        sl_tmpl_at(t, i, &name);
        sl_buf_reset(&data);
        if (build_shard(name.p, fcount, fsize, exts, next, i, &data) < 0) {
            rc = 1;
            break;
        }
        char *p = uri_obj_path(&u, name.p);
        char *pq = sl_xasprintf("%s%s", p, uri_query(&u));
        struct cli_resp r;
        cli_req("PUT", pq, "application/octet-stream", data.p, data.len, &r);
        if (r.status != 200)
            rc = cli_fail(&r, name.p);
        cli_resp_free(&r);
        free(p);
        free(pq);
        progress_add(pg, 1);
        progress_draw(pg, false);
    }
    progress_draw(pg, true);
    if (!rc)
        printf("Created %llu shard%s in ais://%s\n", (unsigned long long)n, n == 1 ? "" : "s", u.bucket);
    progress_free(pg);
    sl_buf_free(&name);
    sl_buf_free(&data);
    sl_tmpl_free(t);
    free(fext);
    uri_free(&u);
    return rc;
}

int cmd_archive(int argc, char **argv)
{
    static const struct cli_verb verbs[] = { { "put", arch_put, NULL }, { "get", arch_get, NULL },
                                             { "ls", arch_ls, NULL }, { "bucket", arch_bucket, NULL },
                                             { "gen-shards", gen_shards, NULL } };
    return cli_run_verb("archive", verbs, SL_ARRAY_SIZE(verbs), argc, argv, false);
}
