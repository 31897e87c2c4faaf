/* SPDX-License-Identifier: MIT
 * shale.c: the shale CLI entry point and command table.
 */
#include "cli.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

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
    { "job", cmd_job, "job show|wait|stop|start [ID|KIND]   jobs (rebalance, archive, etl, ishard)" },
    { "cluster", cmd_cluster, "cluster maintenance start|stop NODE | decommission NODE   membership" },
    { "playground", cmd_playground, "playground start|stop|status|add-target --dir DIR   local node or cluster" },
};

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
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = -1;
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        if (!strcmp(argv[1], cmds[i].name)) {
            rc = cmds[i].fn(argc - 2, argv + 2);
            break;
        }
    }
    if (rc == -1) {
        fprintf(stderr, "Error: unknown command \"%s\"\n\n", argv[1]);
        usage(stderr);
        rc = 1;
    }
    curl_global_cleanup();
    cli_cleanup();
    return rc;
}
