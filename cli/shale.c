/* SPDX-License-Identifier: MIT
 * shale.c: the shale CLI entry point and command table.
 */
#include "cli.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

/* ais's short spellings of the job verbs: `wait ID`, `stop ID|KIND` */
static int job_verb(const char *verb, int argc, char **argv)
{
    char **v = sl_xcalloc((size_t)argc + 2, sizeof(char *));
    v[0] = (char *)verb;
    for (int i = 0; i < argc; i++)
        v[i + 1] = argv[i];
    int rc = cmd_job(argc + 1, v);
    free(v);
    return rc;
}

static int cmd_wait(int argc, char **argv)
{
    return job_verb("wait", argc, argv);
}

static int cmd_stop(int argc, char **argv)
{
    return job_verb("stop", argc, argv);
}

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
} cmds[] = {
    { "bucket", cmd_bucket }, { "ls", cmd_ls }, { "create", cmd_create }, { "rmb", cmd_rmb }, { "cp", cmd_cp },
    { "put", cmd_put }, { "get", cmd_get }, { "object", cmd_object }, { "rmo", cmd_rmo },
    { "blob-download", cmd_blob_download },
    { "nbi", cmd_nbi },
    { "prefetch", cmd_prefetch }, { "evict", cmd_evict }, { "download", cmd_download }, { "show", cmd_show }, { "performance", cmd_performance },
    { "storage", cmd_storage }, { "config", cmd_config }, { "archive", cmd_archive }, { "etl", cmd_etl },
    { "ishard", cmd_ishard }, { "job", cmd_job }, { "advanced", cmd_advanced }, { "scrub", cmd_scrub }, { "start", cmd_start }, { "wait", cmd_wait },
    { "stop", cmd_stop }, { "dsort", cmd_dsort }, { "ml", cmd_ml }, { "cluster", cmd_cluster },
    { "playground", cmd_playground }, { "search", cmd_search }, { "s3", cmd_s3 }, { "auth", cmd_auth }, { "tls", cmd_tls }, { "log", cmd_log }, { "alias", cmd_alias },
    { "completion", cmd_completion }, { "version", cmd_version },
};

bool cli_is_command(const char *name)
{
    for (size_t i = 0; i < SL_ARRAY_SIZE(cmds); i++)
        if (!strcmp(name, cmds[i].name))
            return true;
    return !strcmp(name, "help") || !strcmp(name, "version");
}

/* --help or -h anywhere before "--" */
static bool help_asked(int argc, char **argv)
{
    for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h") || !strcmp(argv[i], "-help"))
            return true;
    return false;
}

/* the help of the deepest command named: "s3 key add", else "s3 key", else "s3" */
static int print_help(int argc, char **argv, int first)
{
    char key[192];
    if (argc > first + 2 && argv[first + 1][0] != '-' && argv[first + 2][0] != '-') {
        snprintf(key, sizeof(key), "%s %s %s", argv[first], argv[first + 1], argv[first + 2]);
        if (cli_help(key, stdout) == 0)
            return 0;
    }
    if (argc > first + 1 && argv[first + 1][0] != '-') {
        snprintf(key, sizeof(key), "%s %s", argv[first], argv[first + 1]);
        if (cli_help(key, stdout) == 0)
            return 0;
    }
    return cli_help(argv[first], stdout);
}

/* the command closest to a mistyped one, when it is close enough */
static const char *closest(const char *word)
{
    static const struct {
        const char *typed, *means;
    } aliases[] = { { "ps", "job show" }, { "jobs", "job show" }, { "etl-init", "etl init" } };
    for (size_t i = 0; i < SL_ARRAY_SIZE(aliases); i++)
        if (!strcmp(word, aliases[i].typed))
            return aliases[i].means;
    const char *best = NULL;
    int bd = 3;
    for (size_t i = 0; i < SL_ARRAY_SIZE(cmds); i++) {
        int dd = cli_distance(word, cmds[i].name);
        if (dd < bd && dd <= (int)strlen(cmds[i].name) / 2) {
            bd = dd;
            best = cmds[i].name;
        }
    }
    return best;
}

static void usage(FILE *f)
{
    fprintf(f, "shale %s: command-line client for Shale (AIStore-compatible)\n\nUsage: shale COMMAND [ARGS]\n\n",
            SL_VERSION);
    const char *names[SL_ARRAY_SIZE(cmds)];
    for (size_t i = 0; i < SL_ARRAY_SIZE(cmds); i++)
        names[i] = cmds[i].name;
    cli_help_overview(f, names, SL_ARRAY_SIZE(cmds));
    fprintf(f, "\n`shale COMMAND --help` shows a command's flags and examples; `shale search WORD` finds commands.\n"
               "Endpoint: AIS_ENDPOINT (default http://localhost:8080).\n");
}

/* `shale bucket frob --help`, `shale help bucket frob`, `shale ml plan frob --help`: an error naming the
 * closest command, not the group's help (1: said so) */
static int help_unknown(int argc, char **argv, int first)
{
    char near[96], group[128];
    const char *g = argv[first];
    for (int lvl = 0; lvl < 2; lvl++) {
        int w = first + 1 + lvl;
        if (argc <= w || argv[w][0] == '-' || argv[w - 1][0] == '-')
            return 0;
        if (lvl == 1) {
            if (snprintf(group, sizeof(group), "%s %s", argv[first], argv[first + 1]) >= (int)sizeof(group))
                return 0;
            g = group;
        }
        if (cli_help_unknown_sub(g, argv[w], near, sizeof(near))) {
            fprintf(stderr, "Error: unknown command \"%s %s\"%s%s%s (`shale %s --help` lists them)\n", g, argv[w],
                    near[0] ? ": did you mean \"" : "", near, near[0] ? "\"?" : "", g);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    /* `shale NAME ARGS`, NAME a user alias (`shale alias set`): its command's words, then ARGS */
    static char **volatile expanded; /* (static and volatile: the words live until exit, reachable) */
    if (argc >= 2 && argv[1][0] != '-' && !cli_is_command(argv[1])) {
        int n;
        char **w = cli_alias_words(argv[1], &n);
        if (w && n > 0) {
            expanded = sl_xcalloc((size_t)(argc + n), sizeof(char *));
            expanded[0] = argv[0];
            for (int i = 0; i < n; i++)
                expanded[i + 1] = w[i];
            for (int i = 2; i < argc; i++)
                expanded[n + i - 1] = argv[i];
            argc += n - 1;
            argv = expanded; /* (the words live until exit) */
        }
        free(w);
    }
    if (argc > 2 && !strcmp(argv[1], "help")) {
        if (help_unknown(argc, argv, 2))
            return 1;
        if (print_help(argc, argv, 2) == 0)
            return 0;
        fprintf(stderr, "Error: no command \"%s\" (`shale --help` lists them)\n", argv[2]);
        return 1;
    }
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 1 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("shale %s (%s)\n", SL_VERSION, SL_GITREV);
        return 0;
    }
    if (help_asked(argc, argv)) {
        if (help_unknown(argc, argv, 1))
            return 1;
        if (print_help(argc, argv, 1) == 0)
            return 0;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = -1;
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        if (!strcmp(argv[1], cmds[i].name)) {
            rc = cmds[i].fn(argc - 2, argv + 2);
            break;
        }
    }
    if (rc == -1) {
        const char *near = closest(argv[1]);
        if (near)
            fprintf(stderr, "Error: unknown command \"%s\": did you mean \"%s\"? (`shale --help` lists them)\n",
                    argv[1], near);
        else
            fprintf(stderr, "Error: unknown command \"%s\" (`shale --help` lists them)\n", argv[1]);
        rc = 1;
    }
    curl_global_cleanup();
    cli_cleanup();
    return rc;
}
