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
    const char *help;
} cmds[] = {
    { "bucket", cmd_bucket, "bucket create|ls|rm|props      manage buckets" },
    { "ls", cmd_ls, "ls [ais://B[/PREFIX]]            list buckets, or objects in a bucket" },
    { "create", cmd_create, "create ais://B                   = bucket create" },
    { "rmb", cmd_rmb, "rmb ais://B                      = bucket rm" },
    { "put", cmd_put, "put FILE|DIR|- ais://B[/NAME]    upload (-r for directories, --progress)" },
    { "get", cmd_get, "get ais://B/O [FILE|DIR|-]       download" },
    { "object", cmd_object, "object show|get|put|rm           object verbs" },
    { "rmo", cmd_rmo, "rmo ais://B/O ...                delete objects" },
    { "show", cmd_show, "show cluster                     cluster map, nodes, capacity" },
    { "archive", cmd_archive, "archive put|get|ls|bucket|gen-shards   shards (tar, tgz, zip, tar.lz4)" },
    { "etl", cmd_etl, "etl init|show|view-logs|stop|start|rm|object|bucket   Lua transforms on the targets" },
    { "ishard", cmd_ishard, "ishard --src-bck ais://SRC --dst-bck ais://DST [...]   raw files -> WebDataset shards" },
    { "job", cmd_job, "job show|wait|stop|start [ID|KIND]   jobs (rebalance, archive, etl, ishard, dsort)" },
    { "start", cmd_start, "start dsort [SRC] [DST] -f SPEC   = job start (shuffle/re-shard shards: dsort)" },
    { "wait", cmd_wait, "wait ID|KIND                     = job wait" },
    { "stop", cmd_stop, "stop ID|KIND                     = job stop" },
    { "dsort", cmd_dsort, "dsort [SRC] [DST] -f SPEC         = job start dsort" },
    { "ml", cmd_ml, "ml get-batch ais://B OUT.tar --list|--template|--spec   many objects as one archive" },
    { "cluster", cmd_cluster, "cluster maintenance start|stop NODE | decommission NODE   membership" },
    { "playground", cmd_playground, "playground start|stop|status|add-target --dir DIR   local node or cluster" },
};

/* `shale CMD [SUB] --help`: one entry per command and subcommand */
static const struct {
    const char *cmd;
    const char *text;
} helps[] = {
    { "bucket", "Usage: shale bucket create|ls|rm|props ...\n"
                "  create ais://B [ais://B ...] [--props 'k=v ...' | JSON] [--ignore-error]\n"
                "  ls [ais://B[/PREFIX]] [FLAGS]          (see: shale ls --help)\n"
                "  rm ais://B [ais://B ...]\n"
                "  props show ais://B [--json] | props set ais://B key=value ...\n" },
    { "bucket create", "Usage: shale bucket create ais://BUCKET [ais://BUCKET ...] [--props 'k=v ...' | JSON] "
                       "[--ignore-error]\n" },
    { "bucket rm", "Usage: shale bucket rm ais://BUCKET [ais://BUCKET ...] [--ignore-error]\n" },
    { "bucket props", "Usage: shale bucket props show ais://BUCKET [--json]\n"
                      "       shale bucket props set ais://BUCKET key=value ...   (e.g. checksum.type=md5)\n" },
    { "ls", "Usage: shale ls [ais://BUCKET[/PREFIX]] [FLAGS]\n"
            "  no bucket: list buckets; with one: list its objects\n"
            "  --props name,size,... | all   columns (all: NAME SIZE CHECKSUM ATIME VERSION CACHED TARGET URL "
            "STATUS COPIES)\n"
            "  --prefix P  --start-after NAME  --limit N  --page-size N  --paged\n"
            "  --name-only  --nr (non-recursive)  --archive (list shard members)  --bytes  -H  --json\n"
            "  --template 'x-{0..9}'  --regex RE  --count-only  --no-footers\n" },
    { "create", "Usage: shale create ais://BUCKET [ais://BUCKET ...] [--props 'k=v ...' | JSON] [--ignore-error]\n" },
    { "rmb", "Usage: shale rmb ais://BUCKET [ais://BUCKET ...] [--ignore-error]\n" },
    { "put", "Usage: shale put FILE|DIR|- ais://BUCKET[/NAME_OR_PREFIX[/]] [FLAGS]\n"
             "  a trailing slash puts FILE under that prefix; '-' reads stdin\n"
             "  -r (directories)  --progress  --dry-run  --num-workers N  -y\n" },
    { "get", "Usage: shale get ais://BUCKET/OBJECT [OUT_FILE|OUT_DIR|-] [FLAGS]\n"
             "  '-' writes only the object bytes to stdout\n"
             "  --offset N --length N  --archpath P | --archregx X --archmode regexp|prefix|suffix|substr|wdskey  "
             "--progress  -y\n" },
    { "object", "Usage: shale object show|get|put|rm ...\n"
                "  show ais://B/O [--props all] [--json]\n"
                "  get, put, rm: as shale get, shale put, shale rmo\n" },
    { "object show", "Usage: shale object show ais://BUCKET/OBJECT [--props all] [--json]\n" },
    { "rmo", "Usage: shale rmo ais://BUCKET/OBJECT [...] [-y]\n" },
    { "show", "Usage: shale show cluster [proxy|target|smap|bmd|config|stats] [NODE] [--json]\n" },
    { "show cluster", "Usage: shale show cluster [proxy|target|smap|bmd|config|stats] [NODE] [--json]\n"
                      "  NODE: p[ID], t[ID] or ID\n" },
    { "etl", "Usage: shale etl init|show|view-logs|stop|start|rm|object|bucket ...   (shale etl VERB --help)\n"
             "  Lua transforms run by the targets; see docs/etl.md\n" },
    { "etl init", "Usage: shale etl init --name NAME --code FILE.lua [--mode object|sample] [--obj-timeout 45s] "
                  "[--mem-limit 64MiB] [--max-output 64MiB]\n"
                  "       shale etl init --spec FILE.json   (the PUT /v1/etl message)\n" },
    { "etl show", "Usage: shale etl show [NAME] [--json]\n"
                  "       shale etl show errors NAME [JOB_ID]\n" },
    { "etl view-logs", "Usage: shale etl view-logs NAME [TARGET_ID]\n" },
    { "etl stop", "Usage: shale etl stop NAME...\n" },
    { "etl start", "Usage: shale etl start NAME...   (a stopped ETL)\n" },
    { "etl rm", "Usage: shale etl rm NAME...\n" },
    { "etl object", "Usage: shale etl object NAME ais://BUCKET/OBJECT [OUT_FILE|-] [--args ARGS]\n" },
    { "etl bucket", "Usage: shale etl bucket NAME ais://SRC ais://DST [--prefix P | --template T | --list a,b] "
                    "[--ext '{jpg:png}'] [--prepend P] [--dry-run] [--num-workers N] [--cont-on-err] "
                    "[--args ARGS] [--wait] [--timeout 1h]\n" },
    /* archive prints its own help (cli/archive.c) */
    { "job", "Usage: shale job show|wait|stop|start|rm ...\n"
             "  show [ID|KIND] [--all] [--json]\n"
             "  wait ID|KIND [--timeout 10m] [--progress]\n"
             "  stop ID|KIND\n"
             "  start rebalance [--wait]\n"
             "  start dsort [ais://SRC] [ais://DST] -f SPEC.json|SPEC.yaml|- [--wait] [--progress] [-v]\n" },
    { "job show", "Usage: shale job show [ID|KIND] [--all] [--json]\n" },
    { "job wait", "Usage: shale job wait ID|KIND [--timeout 10m] [--progress]\n" },
    { "job stop", "Usage: shale job stop ID|KIND\n" },
    { "job rm", "Usage: shale job rm [dsort] srt-ID   (a finished dsort job)\n" },
    { "job start", "Usage: shale job start rebalance [--wait]\n"
                   "       shale job start dsort [ais://SRC] [ais://DST] -f SPEC.json|SPEC.yaml|- [--wait] "
                   "[--timeout 1h] [--progress] [-v]\n" },
    { "start", "Usage: shale start dsort [ais://SRC] [ais://DST] -f SPEC.json|SPEC.yaml|- [--wait] [-v]\n"
               "       shale start rebalance [--wait]\n" },
    { "dsort", "Usage: shale dsort [ais://SRC] [ais://DST] -f SPEC.json|SPEC.yaml|- [--wait] [--timeout 1h] "
               "[--progress] [-v]\n"
               "  the spec as AIStore takes it (docs/dsort.md); SRC and DST replace input_bck and output_bck\n" },
    { "cluster", "Usage: shale cluster maintenance start|stop NODE_ID [--no-shutdown] [--skip-rebalance] [--wait]\n"
                 "       shale cluster decommission NODE_ID [--no-shutdown] [--skip-rebalance] [--wait]\n" },
    { "cluster maintenance", "Usage: shale cluster maintenance start|stop NODE_ID [--no-shutdown] "
                             "[--skip-rebalance] [--wait]\n" },
    { "cluster decommission", "Usage: shale cluster decommission NODE_ID [--no-shutdown] [--skip-rebalance] "
                              "[--wait]\n" },
    { "playground", "Usage: shale playground start|stop|status|add-target --dir DIR ...\n"
                    "  start --dir DIR [--port 8080] [--proxies P --targets T] [--mountpaths M] [--timeout 60]\n"
                    "  stop --dir DIR | status --dir DIR | add-target --dir DIR\n" },
    { "playground start", "Usage: shale playground start --dir DIR [--port 8080] [--proxies P --targets T] "
                          "[--mountpaths M] [--timeout 60]\n"
                          "  without --proxies/--targets: one standalone node; an existing DIR is restarted\n" },
    { "playground stop", "Usage: shale playground stop --dir DIR\n" },
    { "playground status", "Usage: shale playground status --dir DIR\n" },
    { "playground add-target", "Usage: shale playground add-target --dir DIR\n" },
};

/* --help or -h anywhere before "--": the usage of the deepest command named
 * (the command's own when the subcommand is unknown) */
static bool help_asked(int argc, char **argv)
{
    for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return true;
    return false;
}

static int print_help(int argc, char **argv)
{
    const char *best = NULL;
    char key[128];
    snprintf(key, sizeof(key), "%s", argv[1]);
    for (size_t i = 0; i < SL_ARRAY_SIZE(helps); i++)
        if (!strcmp(helps[i].cmd, key))
            best = helps[i].text;
    static const char *const alias[][2] = {
        { "bucket ls", "ls" }, { "object get", "get" }, { "object put", "put" }, { "object rm", "rmo" },
    };
    if (argc > 2 && argv[2][0] != '-') {
        snprintf(key, sizeof(key), "%s %s", argv[1], argv[2]);
        for (size_t i = 0; i < SL_ARRAY_SIZE(alias); i++)
            if (!strcmp(alias[i][0], key))
                snprintf(key, sizeof(key), "%s", alias[i][1]);
        for (size_t i = 0; i < SL_ARRAY_SIZE(helps); i++)
            if (!strcmp(helps[i].cmd, key))
                best = helps[i].text;
    }
    if (!best)
        return -1;
    fputs(best, stdout);
    return 0;
}

/* edit distance of a and b (short words) */
static int distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 40 || lb > 40)
        return 99;
    int d[41][41];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            c = SL_MIN(c, d[i - 1][j] + 1);
            d[i][j] = SL_MIN(c, d[i][j - 1] + 1);
        }
    return d[la][lb];
}

/* the command closest to a mistyped one, when it is close enough */
static const char *closest(const char *word)
{
    static const struct {
        const char *typed, *means;
    } aliases[] = { { "storage", "show cluster" }, { "config", "show cluster config" }, { "ps", "job show" },
                    { "jobs", "job show" }, { "etl-init", "etl init" } };
    for (size_t i = 0; i < SL_ARRAY_SIZE(aliases); i++)
        if (!strcmp(word, aliases[i].typed))
            return aliases[i].means;
    const char *best = NULL;
    int bd = 3;
    for (size_t i = 0; i < SL_ARRAY_SIZE(cmds); i++) {
        int dd = distance(word, cmds[i].name);
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
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        fprintf(f, "  %s\n", cmds[i].help);
    fprintf(f, "\nEndpoint: AIS_ENDPOINT (default http://localhost:8080). Common flags: --json, -H (no headers), -y.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 1 : 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("shale %s (%s)\n", SL_VERSION, SL_GITREV);
        return 0;
    }
    if (help_asked(argc, argv) && print_help(argc, argv) == 0)
        return 0;
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
