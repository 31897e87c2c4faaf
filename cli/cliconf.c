/* SPDX-License-Identifier: MIT
 * cliconf.c: the CLI's own settings file (ais's `config cli`) and user aliases (ais's `alias`).
 *
 * One JSON file, $XDG_CONFIG_HOME/shale/cli.json (default ~/.config/shale/cli.json; SHALE_CLI_CONFIG names
 * another): {"endpoint": URL, "aliases": {NAME: "COMMAND WORDS"}}. The endpoint is the cluster's when
 * AIS_ENDPOINT is unset; `shale NAME ARGS` runs an alias's command with ARGS after it. Written whole to a
 * temporary file and renamed over the old one, mode 0600.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *cli_conf_path(void)
{
    const char *f = getenv("SHALE_CLI_CONFIG");
    if (f && *f)
        return sl_xstrdup(f);
    const char *x = getenv("XDG_CONFIG_HOME");
    if (x && *x)
        return sl_xasprintf("%s/shale/cli.json", x);
    const char *home = getenv("HOME");
    return home && *home ? sl_xasprintf("%s/.config/shale/cli.json", home) : NULL;
}

/* The settings (an object; {} when there is no file); NULL after saying why it cannot be read. */
json_t *cli_conf_load(void)
{
    char *p = cli_conf_path();
    if (!p)
        return json_object();
    json_error_t je;
    json_t *c = json_load_file(p, 0, &je);
    if (!c) {
        bool missing = access(p, F_OK) < 0 && errno == ENOENT;
        if (!missing)
            fprintf(stderr, "Error: the CLI settings file %s: %s (line %d); fix it or remove it "
                    "(`shale config cli reset`)\n", p, je.text, je.line);
        free(p);
        return missing ? json_object() : NULL;
    }
    if (!json_is_object(c)) {
        fprintf(stderr, "Error: the CLI settings file %s is not a JSON object; fix it or remove it "
                "(`shale config cli reset`)\n", p);
        json_decref(c);
        free(p);
        return NULL;
    }
    free(p);
    return c;
}

static int conf_save(json_t *c)
{
    char *p = cli_conf_path();
    if (!p) {
        fprintf(stderr, "Error: no place for the CLI settings: set HOME, XDG_CONFIG_HOME or SHALE_CLI_CONFIG\n");
        return -1;
    }
    char *tmp = sl_xasprintf("%s.tmp", p);
    char *s = json_dumps(c, JSON_INDENT(2) | JSON_SORT_KEYS);
    int rc = -1;
    if (sl_mkdir_parents(p, 0700) < 0)
        fprintf(stderr, "Error: cannot make the directory of %s: %s\n", p, strerror(errno));
    else if (sl_write_file(tmp, s, strlen(s), true) < 0 || chmod(tmp, 0600) < 0 || rename(tmp, p) < 0)
        fprintf(stderr, "Error: cannot write %s: %s\n", p, strerror(errno));
    else
        rc = 0;
    if (rc < 0)
        unlink(tmp);
    free(s);
    free(tmp);
    free(p);
    return rc;
}

/* the endpoint the settings name, or NULL (the caller's to free) */
char *cli_conf_endpoint(void)
{
    json_t *c = cli_conf_load();
    const char *e = json_string_value(json_object_get(c, "endpoint"));
    char *r = e && *e ? sl_xstrdup(e) : NULL;
    json_decref(c);
    return r;
}

static bool endpoint_ok(const char *v)
{
    return (!strncmp(v, "http://", 7) && v[7]) || (!strncmp(v, "https://", 8) && v[8]);
}

/* group's verb dflt with argv as its flags */
static int run_default(const char *group, const char *dflt, const struct cli_verb *verbs, size_t n, int argc,
                       char **argv)
{
    char **v = sl_xcalloc((size_t)argc + 2, sizeof(char *));
    v[0] = (char *)dflt;
    for (int i = 0; i < argc; i++)
        v[i + 1] = argv[i];
    int rc = cli_run_verb(group, verbs, n, argc + 1, v, false);
    free(v);
    return rc;
}

/* ---- config cli show|set|reset ---- */

static int cli_show(struct opts *o)
{
    json_t *c = cli_conf_load();
    if (!c)
        return 1;
    char *p = cli_conf_path();
    const char *env = getenv("AIS_ENDPOINT");
    if (opt_bool(o, "json")) {
        char *s = json_dumps(c, JSON_INDENT(2) | JSON_SORT_KEYS);
        printf("%s\n", s);
        free(s);
    } else {
        const char *e = json_string_value(json_object_get(c, "endpoint"));
        if (!opt_bool(o, "no-headers"))
            printf("%-10s %s\n", "KEY", "VALUE");
        printf("%-10s %s%s\n", "endpoint", e ? e : "http://localhost:8080 (default)",
               env && *env ? " (AIS_ENDPOINT overrides it now)" : "");
        printf("%-10s %zu (`shale alias ls`)\n", "aliases", json_object_size(json_object_get(c, "aliases")));
        printf("%-10s %s\n", "file", p ? p : "(none: HOME is unset)");
    }
    free(p);
    json_decref(c);
    return 0;
}

static int cli_set(struct opts *o)
{
    if (o->argc < 1)
        return cli_usage("config cli set");
    json_t *c = cli_conf_load();
    if (!c)
        return 1;
    for (int i = 0; i < o->argc; i++) {
        const char *kv = o->argv[i], *eq = strchr(kv, '=');
        if (!eq) {
            fprintf(stderr, "Error: \"%s\" is not KEY=VALUE (e.g. endpoint=http://gw:8080)\n", kv);
            json_decref(c);
            return 1;
        }
        if ((size_t)(eq - kv) != 8 || strncmp(kv, "endpoint", 8)) {
            fprintf(stderr, "Error: unknown CLI setting \"%.*s\" (valid: endpoint; aliases: `shale alias set`)\n",
                    (int)(eq - kv), kv);
            json_decref(c);
            return 1;
        }
        if (!eq[1]) {
            json_object_del(c, "endpoint");
        } else if (!endpoint_ok(eq + 1)) {
            fprintf(stderr, "Error: endpoint \"%s\" is not an http:// or https:// URL\n", eq + 1);
            json_decref(c);
            return 1;
        } else {
            json_object_set_new(c, "endpoint", json_string(eq + 1));
        }
    }
    int rc = conf_save(c);
    json_decref(c);
    if (rc == 0 && getenv("AIS_ENDPOINT") && *getenv("AIS_ENDPOINT"))
        fprintf(stderr, "Note: AIS_ENDPOINT is set and overrides the saved endpoint\n");
    return rc ? 1 : 0;
}

static int cli_reset(struct opts *o)
{
    (void)o;
    char *p = cli_conf_path();
    if (p && unlink(p) < 0 && errno != ENOENT) {
        fprintf(stderr, "Error: cannot remove %s: %s\n", p, strerror(errno));
        free(p);
        return 1;
    }
    printf("CLI settings reset to the defaults (endpoint http://localhost:8080, no aliases)\n");
    free(p);
    return 0;
}

int cmd_config_cli(int argc, char **argv)
{
    static const struct cli_verb verbs[] = { { "show", cli_show, NULL }, { "set", cli_set, NULL },
                                             { "reset", cli_reset, NULL } };
    if (argc == 0 || argv[0][0] == '-') /* `config cli [--json]` is show */
        return run_default("config cli", "show", verbs, SL_ARRAY_SIZE(verbs), argc, argv);
    return cli_run_verb("config cli", verbs, SL_ARRAY_SIZE(verbs), argc, argv, false);
}

/* ---- alias ---- */

static bool alias_name_ok(const char *n)
{
    if (!*n || strlen(n) > 64 || n[0] == '-')
        return false;
    for (const char *p = n; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              *p == '_'))
            return false;
    return true;
}

static int alias_ls(struct opts *o)
{
    json_t *c = cli_conf_load();
    if (!c)
        return 1;
    json_t *a = json_object_get(c, "aliases");
    if (opt_bool(o, "json")) {
        char *s = json_dumps(a ? a : json_object(), JSON_INDENT(2) | JSON_SORT_KEYS);
        printf("%s\n", s);
        free(s);
    } else {
        if (!opt_bool(o, "no-headers"))
            printf("%-16s %s\n", "ALIAS", "COMMAND");
        const char *k;
        json_t *v;
        json_object_foreach(a, k, v) printf("%-16s %s\n", k, json_string_value(v));
    }
    json_decref(c);
    return 0;
}

/* raw words: the command's own flags (`alias set lsi ls ais://b --props all`) are not alias set's */
static int alias_set(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage("alias set");
    const char *name = argv[0];
    if (!alias_name_ok(name)) {
        fprintf(stderr, "Error: alias name \"%s\": use letters, digits, '-' and '_' (64 at most, not starting "
                "with '-')\n", name);
        return 1;
    }
    if (cli_is_command(name)) {
        fprintf(stderr, "Error: \"%s\" is a shale command: an alias cannot hide it; choose another name\n", name);
        return 1;
    }
    struct sl_buf b;
    sl_buf_init(&b);
    for (int i = 1; i < argc; i++) {
        if (strpbrk(argv[i], " \t")) {
            fprintf(stderr, "Error: alias \"%s\": \"%s\" holds a blank; an alias's words are split at blanks\n",
                    name, argv[i]);
            sl_buf_free(&b);
            return 1;
        }
        if (i > 1)
            sl_buf_addc(&b, ' ');
        sl_buf_adds(&b, argv[i]);
    }
    sl_buf_addc(&b, 0);
    char first[64];
    snprintf(first, sizeof(first), "%.*s", (int)strcspn(b.p, " \t"), b.p);
    if (!cli_is_command(first)) {
        fprintf(stderr, "Error: alias \"%s\": \"%s\" is not a shale command (an alias runs one: e.g. `shale alias "
                "set lsi ls ais://imgs`)\n", name, first);
        sl_buf_free(&b);
        return 1;
    }
    json_t *c = cli_conf_load();
    if (!c) {
        sl_buf_free(&b);
        return 1;
    }
    json_t *a = json_object_get(c, "aliases");
    if (!json_is_object(a)) {
        a = json_object();
        json_object_set_new(c, "aliases", a);
    }
    json_object_set_new(a, name, json_string(b.p));
    sl_buf_free(&b);
    int rc = conf_save(c);
    json_decref(c);
    return rc ? 1 : 0;
}

static int alias_rm(struct opts *o)
{
    if (o->argc < 1)
        return cli_usage("alias rm");
    json_t *c = cli_conf_load();
    if (!c)
        return 1;
    json_t *a = json_object_get(c, "aliases");
    for (int i = 0; i < o->argc; i++)
        if (!json_object_get(a, o->argv[i])) {
            fprintf(stderr, "Error: no alias \"%s\" (`shale alias ls` lists them)\n", o->argv[i]);
            json_decref(c);
            return 1;
        }
    for (int i = 0; i < o->argc; i++)
        json_object_del(a, o->argv[i]);
    int rc = conf_save(c);
    json_decref(c);
    return rc ? 1 : 0;
}

/* alias reset: every alias gone (ais's reset goes back to its built-in aliases; shale has none) */
static int alias_reset(struct opts *o)
{
    (void)o;
    json_t *c = cli_conf_load();
    if (!c)
        return 1;
    size_t n = json_object_size(json_object_get(c, "aliases"));
    json_object_del(c, "aliases");
    int rc = n ? conf_save(c) : 0;
    json_decref(c);
    if (!rc)
        printf("Aliases reset: %zu removed\n", n);
    return rc ? 1 : 0;
}

int cmd_alias(int argc, char **argv)
{
    static const struct cli_verb verbs[] = { { "ls", alias_ls, NULL }, { "rm", alias_rm, NULL },
                                             { "reset", alias_reset, NULL } };
    if (argc > 0 && !strcmp(argv[0], "set"))
        return alias_set(argc - 1, argv + 1);
    if (argc == 0 || argv[0][0] == '-') /* `alias [--json]` is ls */
        return run_default("alias", "ls", verbs, SL_ARRAY_SIZE(verbs), argc, argv);
    return cli_run_verb("alias", verbs, SL_ARRAY_SIZE(verbs), argc, argv, false);
}

/* The words of alias name (split at blanks), or NULL when there is none: *n set. */
char **cli_alias_words(const char *name, int *n)
{
    *n = 0;
    json_t *c = cli_conf_load();
    const char *v = json_string_value(json_object_get(json_object_get(c, "aliases"), name));
    if (!v) {
        json_decref(c);
        return NULL;
    }
    char **w = sl_xcalloc(strlen(v) / 2 + 2, sizeof(char *)); /* at most one word per two bytes */
    for (const char *p = v; *p;) {
        p += strspn(p, " \t");
        size_t l = strcspn(p, " \t");
        if (l)
            w[(*n)++] = sl_xstrndup(p, l);
        p += l;
    }
    json_decref(c);
    return w;
}
