/* SPDX-License-Identifier: MIT
 * help.c: every command of the shale CLI in one table: its usage, a one-line
 * description, its flags (meaning and default) and examples. The table is
 * what `--help` prints, what `shale search` searches, and the flags that
 * cli_opts accepts, so the three cannot drift apart.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct cli_flag {
    const char *spec;       /* "--prefix P", "-f, --file SPEC", "--dry-run[=show_keys]" */
    const char *meaning;
    const char *dflt;
};

/* flags several commands share, appended to an entry's own */
enum {
    CF_JSON = 1,    /* -j, --json */
    CF_NOHDR = 2,   /* -H, --no-headers */
    CF_YES = 4,     /* -y, --yes */
    CF_SEL = 8,     /* --list, --template, --prefix */
    CF_WAIT = 16,   /* --wait, --timeout */
};

struct cli_cmd {
    const char *path;           /* "bucket cp" */
    const char *usage;          /* after "Usage: shale "; one line per form (an alias: its own, or NULL) */
    const char *desc;           /* one sentence (an alias: its own, or NULL) */
    const struct cli_flag *flags;
    unsigned common;            /* CF_* */
    int max_args;               /* positional arguments at most; -1: any number */
    const char *ex[2];          /* examples, after "shale " */
    const char *alias_of;       /* this path is another spelling of alias_of */
};

#define F(...) ((const struct cli_flag[]){ __VA_ARGS__, { NULL, NULL, NULL } })
#define NOF NULL

static const struct cli_flag common_flags[] = {
    { "-j, --json", "print JSON instead of a table", "false" },
    { "-H, --no-headers", "print table rows without the header (and the footer)", "false" },
    { "-y, --yes", "do not ask for confirmation", "false" },
    { "--list 'A,B,C'", "the objects named in this comma-separated list", "none" },
    { "--template 'T'", "the objects a brace template names, e.g. 'shard-{000..099}.tar' (without braces: a "
                        "prefix)", "none" },
    { "--prefix P", "the objects whose names start with P (\"\" = every object)", "none" },
    { "--wait", "wait for the job to end and print what it did", "false" },
    { "--timeout DURATION", "with --wait: give up after this long (e.g. 90s, 10m)", "1h" },
};
static const unsigned common_bits[SL_ARRAY_SIZE(common_flags)] = { CF_JSON, CF_NOHDR, CF_YES, CF_SEL, CF_SEL,
                                                                   CF_SEL, CF_WAIT, CF_WAIT };

static const struct cli_cmd cmds[] = {
    /* ---- buckets ---- */
    { "bucket", "bucket create|ls|rm|evict|props|lru|summary|cp|mv ...",
      "Create, list, copy, rename, summarize and destroy buckets, and show or set their properties.", NOF, 0, -1,
      { "bucket create ais://imgs", "bucket cp ais://imgs ais://imgs-copy --wait" }, NULL },
    { "bucket create", "bucket create ais://BUCKET|s3://BUCKET [...] [FLAGS]",
      "Create ais:// buckets, or add remote s3:// buckets to the cluster (the remote must have them, unless "
      "--skip-lookup).",
      F({ "--props 'k=v ...'|JSON", "properties of the new buckets, as key=value pairs or a JSON object", "none" },
        { "--ignore-error", "a bucket that exists already is not an error", "false" },
        { "--skip-lookup", "s3://: add the bucket without asking the remote whether it exists", "false" }),
      0, -1, { "bucket create ais://imgs", "bucket create s3://data --skip-lookup --props "
                                          "'extra.aws.endpoint=http://127.0.0.1:9000'" }, NULL },
    { "bucket evict", NULL, NULL, NOF, 0, 0, { NULL, NULL }, "evict" },
    { "bucket rm", "bucket rm ais://BUCKET [ais://BUCKET ...] [--ignore-error] [-y]",
      "Destroy buckets and every object in them, after asking on a terminal (elsewhere, as in a script, it "
      "refuses unless -y/--yes is given).",
      F({ "--ignore-error", "a bucket that does not exist is not an error", "false" }), CF_YES, -1,
      { "bucket rm ais://scratch -y", "rmb ais://a ais://b --ignore-error -y" }, NULL },
    { "bucket ls", NULL, NULL, NOF, 0, 0, { NULL, NULL }, "ls" },
    { "bucket props", "bucket props show ais://BUCKET [--json]\n"
                      "bucket props set ais://BUCKET KEY=VALUE [KEY=VALUE ...]\n"
                      "bucket props reset ais://BUCKET",
      "Show a bucket's properties, set some of them (printing each value before and after), or reset them all to "
      "the cluster's defaults (the provider, bid and creation time stay).", NOF, CF_JSON, -1,
      { "bucket props show ais://imgs", "bucket props set ais://imgs checksum.type=md5 access=ro" }, NULL },
    { "bucket lru", "bucket lru ais://BUCKET [--enable|--disable]",
      "Show whether LRU eviction may remove the bucket's objects when the disks fill (its lru.enabled), or turn it "
      "on or off.",
      F({ "--enable", "set lru.enabled=true", "false" }, { "--disable", "set lru.enabled=false", "false" }), 0, 1,
      { "bucket lru ais://imgs", "bucket lru s3://cache --disable" }, NULL },
    { "bucket summary", "bucket summary ais://BUCKET[/PREFIX] [--prefix P] [--json]",
      "Count a bucket's objects and their sizes (a summary-bck job on every target).",
      F({ "--prefix P", "only the objects whose names start with P", "none" }), CF_JSON, 1,
      { "bucket summary ais://imgs", "bucket summary ais://imgs/train/ --json" }, NULL },
    { "bucket cp", "bucket cp ais://SRC[/PREFIX/] ais://DST [FLAGS]\n"
                   "bucket cp ais://SRC ais://DST[/PREPEND] --list 'A,B' | --template 'T' | --prefix P\n"
                   "bucket cp 'ais://SRC/shard-{0..9}.tar' ais://DST[/PREPEND]\n"
                   "bucket cp ais://SRC/OBJECT ais://DST[/NAME|/DIR/]",
      "Copy a bucket, or the objects a prefix, list or template selects, into another bucket (created when "
      "missing); a single object is copied at once, under a new name if given.",
      F({ "--prepend P", "put P in front of each copied object's name (the same as ais://DST/P)", "none" },
        { "--dry-run", "copy nothing: count what would be copied", "false" },
        { "--num-workers N", "copying threads per target (0: the target decides, -1: one)", "0" },
        { "--cont-on-err", "skip objects that fail (or are missing) instead of failing the job", "false" },
        { "--nr, --non-recursive", "with --prefix: do not descend into virtual directories", "false" },
        { "--latest", "a remote source: check each held copy against the remote and fetch a newer version",
          "false" },
        { "--sync", "a remote source: --latest, and delete from DST what the remote no longer has", "false" },
        { "--progress", "with --wait: show its objects, bytes and rate while the job runs (always on a terminal)", "false" }),
      CF_SEL | CF_WAIT, 2,
      { "bucket cp ais://imgs ais://imgs-copy --wait",
        "cp ais://imgs/cat.jpg ais://pets/cats/tom.jpg" }, NULL },
    { "bucket mv", "bucket mv ais://SRC ais://DST [--wait]",
      "Rename a bucket: DST gets SRC's objects and properties and SRC goes; SRC takes no writes meanwhile, reads of "
      "both names keep working.", F({ "--progress", "with --wait: show its objects, bytes and rate while the job runs (always on a terminal)", "false" }),
      CF_WAIT, 2, { "bucket mv ais://imgs ais://images --wait", NULL }, NULL },
    { "cp", "cp ais://SRC[/PREFIX/] ais://DST [FLAGS]\n"
            "cp ais://SRC ais://DST[/PREPEND] --list 'A,B' | --template 'T' | --prefix P\n"
            "cp ais://SRC/OBJECT ais://DST[/NAME|/DIR/]", NULL, NOF, 0, 0, { NULL, NULL }, "bucket cp" },
    { "object cp", "object cp ais://SRC/OBJECT ais://DST[/NAME|/DIR/]\n"
                   "object cp ais://SRC ais://DST[/PREPEND] --list 'A,B' | --template 'T' | --prefix P",
      NULL, NOF, 0, 0, { NULL, NULL }, "bucket cp" },
    { "create", "create ais://BUCKET [ais://BUCKET ...] [FLAGS]", NULL, NOF, 0, 0, { NULL, NULL }, "bucket create" },
    { "rmb", "rmb ais://BUCKET [ais://BUCKET ...] [--ignore-error] [-y]", NULL, NOF, 0, 0, { NULL, NULL }, "bucket rm" },
    { "ls", "ls [ais://BUCKET[/PREFIX]] [FLAGS]",
      "List the buckets, or the objects in one bucket.",
      F({ "--props name,size,...|all", "columns: name, size, checksum, atime, version, cached, location, status, "
                                       "copies, custom; all = the first nine", "name,size" },
        { "--limit N", "list at most N objects (0: all)", "0" },
        { "--page-size N", "objects per page the server returns (0: the server's page size)", "0" },
        { "--paged", "print page by page, each with its own footer", "false" },
        { "--start-after NAME", "list only the names after NAME", "none" },
        { "--prefix P", "only names that start with P (the same as ais://BUCKET/P)", "none" },
        { "--template 'T'", "only the names a brace template names, e.g. 'x-{0..9}'", "none" },
        { "--regex RE", "only the names this extended regular expression matches", "none" },
        { "--name-only", "names only (faster: no sizes)", "false" },
        { "--nr, --non-recursive", "do not descend into virtual directories", "false" },
        { "--archive", "list the members of shards too", "false" },
        { "--bytes", "sizes in bytes instead of KiB/MiB", "false" },
        { "--count-only", "print only the count of names", "false" },
        { "--no-footers", "no 'Listed N names' line", "false" },
        { "--summary", "print the bucket summary instead (see `shale bucket summary`)", "false" },
        { "--cached", "in-cluster objects only (of a bucket with a remote behind it; every object of any other "
                      "ais:// bucket is in the cluster)", "false" },
        { "--all", "include objects not in the cluster (none for ais:// buckets)", "false" },
        { "--inventory", "list a remote bucket from its inventory (see `shale nbi create`), not from the remote",
          "false" },
        { "--inv-name NAME", "with --inventory: the inventory of this name", "the bucket's inventory" }),
      CF_JSON | CF_NOHDR, 1, { "ls ais://imgs --prefix train/ --props all", "ls ais://imgs --template 'x-{0..9}'" },
      NULL },
    /* ---- objects ---- */
    { "object", "object show|get|put|rm|cp ...",
      "Show, download, upload, delete and copy objects.", NOF, 0, -1,
      { "object show ais://imgs/cat.jpg --props all", "object cp ais://imgs/cat.jpg ais://pets" }, NULL },
    { "object mpu", "object mpu create|put-part|complete|abort ais://BUCKET/OBJECT ...",
      "Upload one object in parts (the native multipart upload): create prints an upload id, put-part sends parts "
      "in any order, complete publishes them in order, abort drops them.", NOF, 0, -1,
      { "object mpu create ais://imgs/big.tar", "object mpu complete ais://imgs/big.tar ID 1-3" }, NULL },
    { "object mpu create", "object mpu create ais://BUCKET/OBJECT",
      "Start a multipart upload of the object: prints its upload id (on stdout, alone).", NOF, 0, 1,
      { "object mpu create ais://imgs/big.tar", "id=$(shale object mpu create ais://imgs/big.tar)" }, NULL },
    { "object mpu put-part", "object mpu put-part ais://BUCKET/OBJECT UPLOAD_ID PART_NUMBER FILE",
      "Send one part (1 to 10000) of an upload from a file; a part sent again replaces it.", NOF,
      0, 4, { "object mpu put-part ais://imgs/big.tar ID 1 part1.bin", "object mpu put ais://imgs/big.tar ID 2 p2" },
      NULL },
    { "object mpu put", NULL, NULL, NOF, 0, 0, { NULL, NULL }, "object mpu put-part" },
    { "object mpu complete", "object mpu complete ais://BUCKET/OBJECT UPLOAD_ID PARTS",
      "Publish the upload's parts in order as the object; PARTS lists every part sent (1,2,3 or 1-3).", NOF, 0, 3,
      { "object mpu complete ais://imgs/big.tar ID 1-3", "object mpu complete ais://imgs/big.tar ID 1,2" }, NULL },
    { "object mpu abort", "object mpu abort ais://BUCKET/OBJECT UPLOAD_ID",
      "Abort an upload: its parts are removed and the object is left as it was.", NOF, 0, 2,
      { "object mpu abort ais://imgs/big.tar ID", NULL }, NULL },
    { "object show", "object show ais://BUCKET/OBJECT [--props all] [--json]",
      "Show an object's properties (checksum, size, access time, version).",
      F({ "--props all", "also name, custom metadata, location and copies", "checksum,size,atime,version" }),
      CF_JSON, 1, { "object show ais://imgs/cat.jpg", "object show ais://imgs/cat.jpg --props all --json" }, NULL },
    { "object cat", "object cat ais://BUCKET/OBJECT [--offset N] [--length N] [--archpath P]",
      "Write an object (or a byte range of it, or one member of a shard) to stdout, as `get ais://B/O -`.",
      F({ "--offset N", "read from byte N", "0" },
        { "--length N", "read N bytes", "to the end" },
        { "--archpath P", "one member of a shard, by its name", "none" },
        { "--archregx X", "the members of a shard that match X (with --archmode), as a tar", "none" },
        { "--archmode M", "how --archregx matches: regexp, prefix, suffix, substr or wdskey", "regexp" }),
      0, 1, { "object cat ais://docs/README.md", "object cat ais://data/shard.tar --archpath 0001.cls" }, NULL },
    { "object concat", "object concat FILE [FILE ...] ais://BUCKET/OBJECT",
      "Concatenate local files, in the order given, into one object (appends, then a flush).", NOF, 0, -1,
      { "object concat part1.bin part2.bin ais://data/whole.bin", "object concat a.txt b.txt ais://docs/ab.txt" },
      NULL },
    { "object mv", "object mv ais://BUCKET/OBJECT NEW_NAME|ais://BUCKET/NEW_NAME",
      "Rename an object within its ais:// bucket (rename-obj): the new name is written and readable before the old "
      "one is removed; an object already under the new name is overwritten.", NOF, 0, 2,
      { "object mv ais://imgs/cat.jpg cats/cat-1.jpg", "object mv ais://imgs/a.jpg ais://imgs/b.jpg" }, NULL },
    { "object promote", "object promote PATH ais://BUCKET[/PREFIX] [--target T] [--recursive] [--overwrite-dst] "
                        "[--delete-src] [--not-file-share] [--wait]",
      "Make files already on the targets into objects (promote): PATH is a file or directory inside the targets' "
      "promote.dir, each file becomes PREFIX plus its path below PATH.",
      F({ "--target T", "only this target's PATH (t[ID] or ID): it promotes every file there, sending each to its "
                        "owner", "every target" },
        { "-r, --recursive", "a directory's subdirectories too", "false" },
        { "--overwrite-dst", "replace objects that exist (else they are kept and counted)", "false" },
        { "--delete-src", "delete each file once its object is stored", "false" },
        { "--not-file-share", "each target's PATH is its own, not one directory every target sees", "false" },
        { "--progress", "with --wait: show the job's progress", "false" }),
      CF_WAIT, 2, { "object promote /var/lib/shale/promote/imgs ais://imgs/2024/ --recursive --wait",
                    "object promote /var/lib/shale/promote/a.bin ais://imgs/a.bin --target t[abc]" }, NULL },
    { "object set-custom", "object set-custom ais://BUCKET/OBJECT KEY=VALUE [KEY=VALUE ...] [--replace]",
      "Set custom metadata of an object: the keys are added to (or change) the object's custom metadata; "
      "--replace (ais: --set-new-custom) makes them its only custom metadata.",
      F({ "--replace", "replace all the object's custom metadata with these keys", "false" },
        { "--set-new-custom", "the same as --replace (ais's spelling)", "false" }),
      0, -1, { "object set-custom ais://imgs/cat.jpg label=cat source=web",
               "object set-custom ais://imgs/cat.jpg label=dog --replace" }, NULL },
    { "object blob-download", "object blob-download s3://BUCKET/OBJECT [--chunk-size SIZE] [--num-workers N] "
                              "[--latest] [--wait [--progress]]",
      "Fetch one large object of a remote bucket into the cluster in parallel ranges (a blob-download job).",
      F({ "--chunk-size SIZE", "bytes per range request, e.g. 8MiB", "the cluster's backend.blob_chunk" },
        { "--num-workers N", "range requests at once", "the cluster's backend.blob_workers" },
        { "--latest", "fetch again when the remote holds a newer version than the cluster's copy", "false" },
        { "--progress", "with --wait: show the job's progress", "false" }),
      CF_WAIT, 1, { "object blob-download s3://data/big.bin --chunk-size 16MiB --num-workers 8 --wait",
                    "blob-download s3://data/big.bin --latest" }, NULL },
    { "blob-download", NULL, NULL, NOF, 0, 0, { NULL, NULL }, "object blob-download" },
    { "nbi", "nbi create|rm s3://BUCKET ...",
      "Create or remove a remote bucket's native inventory: a snapshot of its names and sizes that `ls --inventory` "
      "lists fast (`nbi show` shows them).", NOF, 0, -1,
      { "nbi create s3://data --wait", "ls s3://data --inventory" }, NULL },
    { "nbi create", "nbi create s3://BUCKET [--inv-name NAME] [--prefix P] [--force] [--wait]",
      "Snapshot a remote bucket's names and sizes into an inventory (a create-inventory job on every target).",
      F({ "--inv-name NAME", "the inventory's name", "the job's id" },
        { "--prefix P", "only the names under P", "none" },
        { "--force", "make it anew when the bucket has an inventory already", "false" }),
      CF_WAIT, 1, { "nbi create s3://data --wait", "nbi create s3://data --prefix train/ --force --wait" }, NULL },
    { "nbi rm", "nbi rm s3://BUCKET [--inv-name NAME]",
      "Remove a remote bucket's inventory (the bucket and its objects stay).",
      F({ "--inv-name NAME", "only the inventory of this name", "the bucket's inventory" }), 0, 1,
      { "nbi rm s3://data", "nbi rm s3://data --inv-name snap1" }, NULL },
    { "nbi show", "nbi show s3://BUCKET [--inv-name NAME] [--json]",
      "Show a remote bucket's inventories: name, prefix, objects, size, when made.",
      F({ "--inv-name NAME", "only the inventory of this name", "all" }), CF_JSON | CF_NOHDR, 1,
      { "show nbi s3://data", "show nbi s3://data --json" }, NULL },
    { "object get", NULL, NULL, NOF, 0, 0, { NULL, NULL }, "get" },
    { "object put", NULL, NULL, NOF, 0, 0, { NULL, NULL }, "put" },
    { "object rm", NULL, NULL, NOF, 0, 0, { NULL, NULL }, "rmo" },
    { "put", "put FILE|DIR|- ais://BUCKET[/NAME_OR_PREFIX[/]] [FLAGS]",
      "Upload a file, a directory's files, or stdin (-) as objects; a trailing slash puts FILE under that prefix.",
      F({ "-r, --recursive", "include the files in subdirectories of DIR", "false" },
        { "--progress", "draw progress bars (objects and bytes)", "false" },
        { "--dry-run", "print what would be uploaded, upload nothing", "false" },
        { "--num-workers N", "parallel uploads of a directory", "10" }),
      CF_YES, 2, { "put README.md ais://docs/", "put -r ./images ais://imgs/train/ -y" }, NULL },
    { "get", "get ais://BUCKET/OBJECT [OUT_FILE|OUT_DIR|-] [FLAGS]\n"
             "get ais://BUCKET [OUT_DIR] --prefix P | --template 'T' | --list 'A,B'\n"
             "get 'ais://BUCKET/shard-{0..9}.tar' [OUT_DIR]",
      "Download one object (- writes only its bytes to stdout), or many into a directory.",
      F({ "--offset N", "read from byte N", "0" },
        { "--length N", "read N bytes", "to the end" },
        { "--archpath P", "one member of a shard, by its name", "none" },
        { "--archregx X", "the members of a shard that match X (with --archmode), as a tar", "none" },
        { "--archmode M", "how --archregx matches: regexp, prefix, suffix, substr or wdskey", "regexp" },
        { "--etl-name NAME", "transform the object on the way out with this ETL", "none" },
        { "--etl-args ARGS", "arguments for the ETL", "none" },
        { "--etl-pipeline A,B", "further ETLs, applied in order after --etl-name", "none" },
        { "--num-workers N", "parallel downloads of many objects", "10" },
        { "--progress", "draw a progress bar", "false" }),
      CF_SEL | CF_YES, 2,
      { "get ais://imgs/cat.jpg /tmp/", "get ais://data /tmp/train --prefix train/" }, NULL },
    { "rmo", "rmo ais://BUCKET/OBJECT [ais://BUCKET/OBJECT ...]\n"
             "rmo ais://BUCKET --list 'A,B' | --template 'T' | --prefix P [--nr] [--cont-on-err]\n"
             "rmo 'ais://BUCKET/x-{0..9}'",
      "Delete objects: by name, or many at once with one delete-listrange job (waited for).",
      F({ "--nr", "with --prefix: do not descend into virtual directories", "false" },
        { "--cont-on-err", "skip objects that are missing instead of failing", "false" }),
      CF_SEL | CF_YES, -1, { "rmo ais://imgs/cat.jpg", "rmo ais://imgs --template 'tmp-{0..99}'" }, NULL },
    { "prefetch", "prefetch s3://BUCKET[/TEMPLATE] [--list 'A,B' | --template 'T' | --prefix P] [--latest] "
                  "[--blob-threshold SIZE] [--progress]",
      "Fetch objects of a remote bucket (s3://, or ais:// with a backend_bck) into the cluster ahead of reading "
      "them: one prefetch-listrange job on every target, waited for (no selection: every object).",
      F({ "--latest", "also fetch again the objects whose remote version is newer than the cluster's copy", "false" },
        { "--blob-threshold SIZE", "objects of this size or more are fetched in parallel ranges (blob download)",
          "none" },
        { "--blob-chunk-size SIZE", "with --blob-threshold: bytes per range", "the cluster's backend.blob_chunk" },
        { "--blob-num-workers N", "with --blob-threshold: ranges at once per object",
          "the cluster's backend.blob_workers" },
        { "--progress", "show the job's progress while waiting", "false" }), CF_SEL, 1, { "prefetch s3://data --prefix train/", "prefetch 's3://data/shard-{000..099}.tar'" }, NULL },
    { "download", "download URL|'URL-TEMPLATE' ais://BUCKET[/DIR] [--object-list FILE] [--timeout D] [--limit-connections N] [--wait]\n"
                  "download s3://BUCKET[/PREFIX] [s3://BUCKET] [--sync] [--wait]",
      "Download objects from http(s) URLs into a bucket (AIStore's downloader): one URL, a brace range "
      "('https://h/shard-{000..099}.tar') or the names of --object-list under a base URL, one download job on "
      "every target, each fetching the names it owns; or a remote bucket's objects (s3://B, or ais://B with a "
      "backend_bck; under PREFIX) into its cached copy (type backend: those held already are skipped); follow it "
      "with `shale show job download`, stop it with `shale job stop ID`.",
      F({ "--timeout DURATION", "the time allowed for each object's transfer (e.g. 30s, 5m)", "none" },
        { "--description TEXT", "a description of the download, kept in each target's job", "none" },
        { "--limit-connections N", "at most N transfers at a time on each target (1 to 256)", "4" },
        { "--sync", "a bucket's download: make the objects held the remote's current version and drop those the "
                    "remote no longer has", "false" },
        { "--object-list FILE", "a JSON array of object names (or one name a line): each is downloaded from "
                                "URL/NAME", "none" },
        { "--wait", "wait for the download to end, then print what was stored and each failed URL", "false" },
        { "--progress", "like --wait, showing progress as it runs", "false" }),
      0, 2, { "download 'http://h/shard-{000..049}.tar' ais://train/shards --wait",
              "download https://h/data --object-list names.json ais://train" }, NULL },
    { "evict", "evict s3://BUCKET[/TEMPLATE] [--list 'A,B' | --template 'T' | --prefix P] [--keep-md]",
      "Drop the cluster's copies of a remote bucket's objects (the remote keeps them); with no selection, an s3:// "
      "bucket is evicted whole: its copies and its entry in the cluster (the next access adds it again).",
      F({ "--keep-md", "evict a whole bucket's copies but keep the bucket and its properties (a job, waited "
                       "for)", "false" }), CF_SEL, 1, { "evict s3://data --prefix train/", "evict s3://data" }, NULL },
    /* ---- cluster views ---- */
    { "show", "show cluster|job|storage|remote-cluster|object|bucket|config|log|etl|tls|dsort|rebalance|performance|dashboard ...",
      "Show the cluster, its jobs, its storage and the remote clusters attached to it.", NOF, 0, -1,
      { "show cluster", "show job --all" }, NULL },
    { "show cluster", "show cluster [proxy|target|smap|bmd|config|stats] [NODE] [--json]",
      "Show the nodes (memory, CPU, capacity, status) and a cluster summary, or one view of them.", NOF,
      CF_JSON | CF_NOHDR, 2, { "show cluster", "show cluster target t[abc123] --json" }, NULL },
    { "show job", NULL, NULL, NOF, 0, 0, { NULL, NULL }, "job show" },
    { "show storage", NULL, NULL, NOF, 0, 0, { NULL, NULL }, "storage" },
    { "performance", "performance [counters] [NODE] [--json]\n"
                     "performance throughput|latency|disk [TARGET] [--refresh DURATION] [--count N]\n"
                     "performance capacity [TARGET]",
      "Show each node's own counters (GET, PUT, HEAD, DELETE, LIST: counts and bytes; errors), as ais's "
      "`performance counters`; throughput, latency, disk and capacity: each target's rates, latencies, disks and "
      "mountpaths.", NOF, CF_JSON | CF_NOHDR, 2,
      { "performance counters", "performance counters t[abc123] --json" }, NULL },
    { "performance throughput", "performance throughput [TARGET] [--refresh DURATION] [--count N] [--json]",
      "Show each target's GET and PUT rates (requests and bytes per second) between two samples of its counters.",
      F({ "--refresh DURATION", "the time between the two samples (e.g. 1s, 10s)", "5s" },
        { "--count N", "the number of reports, one every DURATION", "1" }),
      CF_JSON | CF_NOHDR, 1, { "performance throughput --refresh 2s", "performance throughput t[abc123] --count 10" },
      NULL },
    { "performance latency", "performance latency [TARGET] [--refresh DURATION] [--count N] [--json]",
      "Show each target's average latency and number of GET, PUT, HEAD, DELETE (and LIST, APPEND, when counted) "
      "requests between two samples of its counters.",
      F({ "--refresh DURATION", "the time between the two samples (e.g. 1s, 10s)", "5s" },
        { "--count N", "the number of reports, one every DURATION", "1" }),
      CF_JSON | CF_NOHDR, 1, { "performance latency --refresh 2s", "performance latency t[abc123] --count 10" },
      NULL },
    { "performance disk", "performance disk [TARGET] [--refresh DURATION] [--count N] [--json]",
      "Show each target's disks under its mountpaths: read and write bytes/s, IOPS, average sizes and "
      "utilization between two samples of /proc/diskstats on the target (a mountpath on tmpfs or overlay has "
      "none, and it says so).",
      F({ "--refresh DURATION", "the time between the two samples (e.g. 1s, 10s)", "5s" },
        { "--count N", "the number of reports, one every DURATION", "1" }),
      CF_JSON | CF_NOHDR, 1, { "performance disk --refresh 2s", "performance disk t[abc123] --json" }, NULL },
    { "performance capacity", "performance capacity [TARGET] [--json]",
      "Show each target's mountpaths: used, available, total bytes and used %, the target's and the cluster's "
      "totals.", NOF, CF_JSON | CF_NOHDR, 1, { "performance capacity", "performance capacity t[abc123] --json" },
      NULL },
    { "performance counters", NULL, NULL, NOF, 0, 0, { NULL, NULL }, "performance" },
    { "show performance", NULL, NULL, NOF, 0, 0, { NULL, NULL }, "performance" },
    { "show nbi", NULL, NULL, NOF, 0, 0, { NULL, NULL }, "nbi show" },
    { "show dashboard", "show dashboard [--refresh DURATION]",
      "One screen of the cluster: its nodes and capacity, each target's throughput over DURATION, the jobs running.",
      F({ "--refresh DURATION", "the time between the two samples of the throughput (e.g. 1s, 10s)", "5s" }),
      CF_NOHDR, 0, { "show dashboard", "show dashboard --refresh 1s" }, NULL },
    { "show object", NULL, NULL, NOF, 0, 0, { NULL, NULL }, "object show" },
    { "show bucket", NULL, NULL, NOF, 0, 0, { NULL, NULL }, "bucket props" },
    { "show log", NULL, NULL, NOF, 0, 0, { NULL, NULL }, "log show" },
    { "show etl", NULL, NULL, NOF, 0, 0, { NULL, NULL }, "etl show" },
    { "show config", NULL, NULL, NOF, 0, 0, { NULL, NULL }, "config" },
    { "show tls", NULL, NULL, NOF, 0, 0, { NULL, NULL }, "tls show" },
    { "show rebalance", "show rebalance [--all] [--json]",
      "Show the current (or, with --all, the last) rebalance's progress on every target: = shale job show rebalance.",
      NOF, 0, 0, { "show rebalance", "show rebalance --all" }, "job show" },
    { "show dsort", "show dsort [ID] [--all] [--json]",
      "Show the running dsort jobs per target (--all: finished ones too), or dsort job ID: = shale job show dsort.",
      NOF, 0, 1, { "show dsort", "show dsort Zx3Xk9 --json" }, "job show" },
    { "storage", "storage [show|mountpath show] [NODE] [--json]\n"
                 "storage disk show [TARGET] [--refresh DURATION] [--json]\n"
                 "storage mountpath attach|detach|enable|disable TARGET MOUNTPATH [--wait]\n"
                 "storage summary ais://BUCKET[/PREFIX]\n"
                 "storage resilver [TARGET] [--wait]\n"
                 "storage cleanup [--wait [--progress]]",
      "Show each target's mountpaths and capacity (used, available, total).", NOF, CF_JSON | CF_NOHDR, 1,
      { "storage", "storage t[abc123] --json" }, NULL },
    { "storage disk show", "storage disk show [TARGET] [--refresh DURATION] [--json]",
      "Show each target's mountpaths and capacity, then its disks' read and write rates, IOPS and utilization "
      "over one interval (as `performance disk`).",
      F({ "--refresh DURATION", "the time between the two samples of the disks' counters (e.g. 1s, 10s)", "1s" }),
      CF_JSON | CF_NOHDR, 1, { "storage disk show", "storage disk show t[abc123] --refresh 5s" }, NULL },
    { "storage disk", "storage disk show [TARGET] [--refresh DURATION] [--json]",
      "The disks under each target's mountpaths: `storage disk show` (alone, `storage disk` runs it too).", NOF, 0, 1,
      { "storage disk show", "storage disk t[abc123]" }, NULL },
    { "storage resilver", "storage resilver [TARGET] [--wait]",
      "Move every object of each target (or of the one named) to its mountpath and restore its mirror copies (job "
      "resilver).", F({ "--progress", "with --wait: show its objects, bytes and rate while the job runs (always on a terminal)", "false" }), CF_WAIT, 1,
      { "storage resilver --wait", "storage resilver t[abc123]" }, NULL },
    { "storage mountpath", "storage mountpath [show] [NODE] [--json]\n"
                           "storage mountpath attach|detach|enable|disable TARGET MOUNTPATH [--wait]",
      "Show each target's mountpaths (as `shale storage`), or change one target's at run time.", NOF,
      CF_JSON | CF_NOHDR, 1, { "storage mountpath show t[abc123]", "storage mountpath disable t[abc123] /data/disk2" },
      NULL },
    { "storage mountpath attach", "storage mountpath attach TARGET MOUNTPATH [--wait [--progress]]",
      "Add a directory (a disk's filesystem mounted there) to TARGET's mountpaths, kept across restarts; a resilver "
      "moves the objects whose mountpath it becomes (prints its job id).", F({ "--progress", "with --wait: show its objects, bytes and rate while the job runs (always on a terminal)", "false" }), CF_WAIT, 2,
      { "storage mountpath attach t[abc123] /data/disk3", "storage mountpath attach abc123 /data/disk3 --wait" },
      NULL },
    { "storage mountpath detach", "storage mountpath detach TARGET MOUNTPATH [--wait [--progress]]",
      "Take a mountpath out of TARGET for good: a resilver moves its objects to the other mountpaths, then it is "
      "forgotten (kept across restarts); reads go on meanwhile.", F({ "--progress", "with --wait: show its objects, bytes and rate while the job runs (always on a terminal)", "false" }), CF_WAIT, 2,
      { "storage mountpath detach t[abc123] /data/disk2 --wait", "storage mountpath detach abc123 /data/disk2" },
      NULL },
    { "storage mountpath enable", "storage mountpath enable TARGET MOUNTPATH [--wait [--progress]]",
      "Put a disabled mountpath of TARGET back into placement; a resilver moves its objects back to it.", F({ "--progress", "with --wait: show its objects, bytes and rate while the job runs (always on a terminal)", "false" }), CF_WAIT,
      2, { "storage mountpath enable t[abc123] /data/disk2", "storage mountpath enable abc123 /data/disk2 --wait" },
      NULL },
    { "storage mountpath disable", "storage mountpath disable TARGET MOUNTPATH [--wait [--progress]]",
      "Take a mountpath of TARGET out of placement (kept across restarts): no new object lands there and a resilver "
      "moves its objects to the others; reads go on meanwhile.", F({ "--progress", "with --wait: show its objects, bytes and rate while the job runs (always on a terminal)", "false" }), CF_WAIT, 2,
      { "storage mountpath disable t[abc123] /data/disk2 --wait", "storage mountpath disable abc123 /data/disk2" },
      NULL },
    { "storage mountpath fshc", "storage mountpath fshc TARGET MOUNTPATH [--json]",
      "Check the health of one mountpath of TARGET now (AIStore's FSHC): its .shale/daemon_id, a probe file "
      "written, fsync'ed and read back, and statvfs; exit 1 when a check fails (nothing is disabled).", NOF,
      CF_JSON, 2, { "storage mountpath fshc t[abc123] /data/disk2", NULL }, NULL },
    { "storage cleanup", "storage cleanup [--wait [--progress] [--timeout D]]",
      "Remove the work files nobody writes any more from every target's mountpaths (job cleanup-store); prints the "
      "job id.", F({ "--progress", "with --wait: show its objects, bytes and rate while the job runs (always on a terminal)", "false" }),
      CF_WAIT, 0, { "storage cleanup --wait", "storage cleanup --wait --progress" }, NULL },
    { "config", "config cluster [KEY | KEY=VALUE ...] | config node NODE [KEY] | config reset [NODE]",
      "Show the cluster's or one node's configuration, or change the cluster's at run time.", NOF, 0, -1,
      { "config cluster lru", "config cluster log.level=4" }, NULL },
    { "config cluster", "config cluster [KEY] [--json]\n"
                        "config cluster KEY=VALUE [KEY=VALUE ...]",
      "Show the cluster configuration (a KEY or a section), or set keys cluster-wide (set-config).", NOF,
      CF_JSON | CF_NOHDR, -1, { "config cluster checksum", "config cluster log.level=4 checksum.type=md5" }, NULL },
    { "config node", "config node NODE [KEY] [--json]",
      "Show one node's own configuration (the cluster's plus its local keys), or a KEY or section of it.", NOF,
      CF_JSON | CF_NOHDR, 2, { "config node t[abc123]", "config node p[xyz789] net" }, NULL },
    { "config reset", "config reset [NODE]",
      "Drop the configuration changes made at run time (set-config, kept across restarts too) and go back to the "
      "config files' values: cluster-wide (the primary's files, given to every node), or NODE's own.", NOF, 0, 1,
      { "config reset", "config reset t[abc123]" }, NULL },
    { "config cli", "config cli [show] [--json]\n"
                    "config cli set endpoint=URL\n"
                    "config cli reset",
      "Show, set or reset the CLI's own settings (~/.config/shale/cli.json, or XDG_CONFIG_HOME/shale, or "
      "SHALE_CLI_CONFIG): the cluster's endpoint when AIS_ENDPOINT is unset, and the aliases.", NOF,
      CF_JSON | CF_NOHDR, -1, { "config cli set endpoint=http://gw:8080", "config cli show --json" }, NULL },
    { "config cli show", "config cli show [--json]", "Show the CLI's settings and the file they are in.", NOF,
      CF_JSON | CF_NOHDR, 0, { "config cli show", "config cli show --json" }, NULL },
    { "config cli set", "config cli set endpoint=URL",
      "Save the cluster endpoint the CLI uses when AIS_ENDPOINT is unset (endpoint= removes it).", NOF, 0, -1,
      { "config cli set endpoint=https://gw.example:8080", "config cli set endpoint=" }, NULL },
    { "config cli reset", "config cli reset",
      "Remove the CLI's settings file: the default endpoint again and no aliases.", NOF, 0, 0,
      { "config cli reset", NULL }, NULL },
    { "alias", "alias [ls] | alias set NAME COMMAND [ARGS...] | alias rm NAME [...] | alias reset",
      "Shortcuts for commands (kept in the CLI's settings file): `shale NAME MORE` runs `shale COMMAND ARGS MORE`.",
      NOF, CF_JSON | CF_NOHDR, -1, { "alias set lsi ls ais://imgs --props all", "alias ls" }, NULL },
    { "alias ls", "alias ls [--json]", "List the aliases and the commands they run.", NOF, CF_JSON | CF_NOHDR, 0,
      { "alias ls", "alias ls --json" }, NULL },
    { "alias set", "alias set NAME COMMAND [ARGS...]",
      "Make NAME run COMMAND with ARGS (NAME may not be a shale command; COMMAND must be one).", NOF, 0, -1,
      { "alias set lsi ls ais://imgs", "alias set gw-jobs job show --all" }, NULL },
    { "alias rm", "alias rm NAME [NAME ...]", "Remove aliases.", NOF, 0, -1, { "alias rm lsi", NULL }, NULL },
    { "alias reset", "alias reset", "Remove every alias (shale has no built-in ones to go back to).", NOF, 0, 0,
      { "alias reset", NULL }, NULL },
    { "search", "search WORD",
      "List the commands and flags whose name or description contains WORD.", NOF, CF_NOHDR, 1,
      { "search copy", "search mountpath" }, NULL },
    { "completion", "completion bash|zsh",
      "Print a shell completion script for bash or zsh, made from this help table (make install puts both in "
      "place).", NOF, 0, 1,
      { "completion bash > /usr/share/bash-completion/completions/shale", "source <(shale completion bash)" }, NULL },
    { "version", "version [--json]",
      "Print the CLI's version and, when the cluster (AIS_ENDPOINT) answers, the cluster's.", NOF, CF_JSON, 0,
      { "version", "version --json" }, NULL },
    /* ---- shards ---- */
    { "archive", "archive put|get|ls|bucket|gen-shards ...",
      "Shards (.tar, .tgz, .tar.gz, .zip, .tar.lz4): add members, read them, list them, build shards from objects.",
      NOF, 0, -1, { "archive ls ais://shards", "archive put a.jpg ais://shards/s-0.tar --append-or-put" }, NULL },
    { "archive put", "archive put FILE|DIR ais://BUCKET/SHARD [FLAGS]",
      "Add files to a shard as members, named by their path under DIR.",
      F({ "--archpath NAME", "the member's name (one file), or the directory to put the members under", "the file's "
                                                                                                          "name" },
        { "--append", "add to an existing shard (more than one file needs this or --append-or-put)", "false" },
        { "--append-or-put", "add to the shard, creating it when missing", "false" },
        { "-r, --recursive", "include the files in subdirectories of DIR", "false" },
        { "--list 'A,B,C'", "only these files of DIR", "all" },
        { "--template 'T'", "only the files of DIR a brace template names (without braces: a prefix)", "all" },
        { "--dry-run", "print what would be added, change nothing", "false" }),
      0, 2, { "archive put cat.jpg ais://shards/s-0.tar --archpath 0001.jpg",
              "archive put ./samples ais://shards/s-1.tar --append-or-put -r" }, NULL },
    { "archive get", "archive get ais://BUCKET/SHARD[/MEMBER] [OUT|-] [FLAGS]",
      "Read one member of a shard, or a tar of the members that match.",
      F({ "--archpath P", "the member to read (the same as ais://BUCKET/SHARD/P)", "none" },
        { "--archregx X", "the members that match X, as a tar", "none" },
        { "--archmode M", "how --archregx matches: regexp, prefix, suffix, substr or wdskey", "regexp" },
        { "--progress", "draw a progress bar", "false" }),
      0, 2, { "archive get ais://shards/s-0.tar/0001.jpg /tmp/",
              "archive get ais://shards/s-0.tar --archregx .jpg --archmode suffix jpgs.tar" }, NULL },
    { "archive ls", "archive ls ais://BUCKET[/SHARD] [--limit N]",
      "List shards and their members (indented by four spaces).",
      F({ "--limit N", "list at most N names (shards and members; 0: all)", "0" }), CF_NOHDR, 1, { "archive ls ais://shards", "archive ls ais://shards/s-0.tar" }, NULL },
    { "archive bucket", "archive bucket ais://SRC[/TEMPLATE] ais://DST/SHARD [FLAGS]",
      "Pack objects of a bucket into one shard (an archive job); a missing DST bucket is created.",
      F({ "--nr, --non-recursive", "with --prefix: do not descend into virtual directories", "false" },
        { "--append-or-put", "add to the shard when it exists", "false" },
        { "--include-src-bck", "name members after the source bucket too (SRC/OBJECT)", "false" },
        { "--cont-on-err", "skip objects that are missing instead of failing", "false" },
        { "--wait", "wait for the job to end", "false" }),
      CF_SEL, 2, { "archive bucket ais://imgs ais://shards/all.tar --wait",
                   "archive bucket ais://imgs ais://shards/s.tar --template 'x-{0..9}.jpg'" }, NULL },
    { "archive gen-shards", "archive gen-shards \"ais://BUCKET/shard-{000..009}.tar\" [FLAGS]",
      "Create random test shards in an existing bucket.",
      F({ "--fcount N", "members per shard and extension", "5" },
        { "--fsize SIZE", "size of each member (e.g. 1KiB)", "1KiB" },
        { "--fext '.jpg,.cls'", "member extensions: one member of each per sample", ".test" },
        { "--cleanup", "destroy the bucket (and everything in it) and create it again first", "false" }),
      0, 1, { "archive gen-shards 'ais://shards/s-{000..009}.tar'",
              "archive gen-shards 'ais://t/s-{0..3}.tgz' --fcount 10 --fext '.jpg,.cls' --cleanup" }, NULL },
    /* ---- ETL ---- */
    { "etl", "etl init|show|view-logs|stop|start|rm|object|bucket ...",
      "Lua transforms run by the targets: define them, inspect them, apply them to objects and buckets.", NOF, 0,
      -1, { "etl init --name up --code upper.lua", "etl bucket up ais://src ais://dst --wait" }, NULL },
    { "etl init", "etl init --name NAME --code FILE.lua [FLAGS]\n"
                  "etl init --spec|-f SPEC.json|SPEC.yaml|- [--name NAME]",
      "Define an ETL from Lua source, or from a spec (the PUT /v1/etl message) in JSON or YAML.",
      F({ "--name NAME", "the ETL's name (with --spec: replaces the spec's)", "none" },
        { "--code FILE.lua", "the Lua source", "none" },
        { "--spec, -f SPEC", "the init message as JSON or YAML (- = stdin)", "none" },
        { "--mode M", "object (whole objects) or sample (WebDataset samples of shards)", "object" },
        { "--obj-timeout DURATION", "how long one object (or sample) may take, up to 1h", "45s" },
        { "--mem-limit SIZE", "memory one call may hold (1MiB to 4GiB)", "64MiB" },
        { "--max-output SIZE", "largest output of one object", "= --mem-limit" },
        { "--seed N", "the random seed of every call (math.random, shale.image's random ops), mixed with the "
                      "sample's key and the request's etl_args", "0" }),
      0, 0, { "etl init --name up --code upper.lua", "etl init -f etl.yaml" }, NULL },
    { "etl show", "etl show [NAME] [--json]\n"
                  "etl show errors NAME [JOB_ID]",
      "List the ETLs, show one ETL's definition and code, or the objects it failed on.", NOF, CF_JSON | CF_NOHDR, 3,
      { "etl show", "etl show errors up" }, NULL },
    { "etl view-logs", "etl view-logs NAME [TARGET_ID]",
      "Print what an ETL's script logged on each target (or one).", NOF, 0, 2, { "etl view-logs up", NULL }, NULL },
    { "etl stop", "etl stop NAME [NAME ...]", "Stop ETLs (they keep their definition).", NOF, 0, -1,
      { "etl stop up", NULL }, NULL },
    { "etl start", "etl start NAME [NAME ...]", "Start stopped ETLs again.", NOF, 0, -1, { "etl start up", NULL },
      NULL },
    { "etl rm", "etl rm NAME [NAME ...]", "Remove ETLs.", NOF, 0, -1, { "etl rm up", NULL }, NULL },
    { "etl object", "etl object NAME ais://BUCKET/OBJECT [OUT_FILE|-] [--args ARGS]",
      "Read one object through an ETL.", F({ "--args ARGS", "arguments for the transform", "none" }), 0, 3,
      { "etl object up ais://docs/a.txt -", NULL }, NULL },
    { "etl bucket", "etl bucket NAME ais://SRC ais://DST [FLAGS]",
      "Transform a bucket, or the objects a prefix, list or template selects, into another bucket.",
      F({ "--ext '{jpg:png}'", "rename extensions of the outputs", "none" },
        { "--prepend P", "put P in front of each output's name", "none" },
        { "--dry-run", "transform but write nothing; count the outputs (waits)", "false" },
        { "--num-workers N", "transforming threads per target (0: the target decides)", "0" },
        { "--cont-on-err", "record failing objects and go on", "false" },
        { "--args ARGS", "arguments for the transform", "none" },
        { "--progress", "with --wait: show its objects, bytes and rate while the job runs (always on a terminal)",
          "false" }),
      CF_SEL | CF_WAIT, 3, { "etl bucket up ais://src ais://dst --wait",
                             "etl bucket up ais://src ais://dst --template 'd/x-{0..9}.txt' --ext '{txt:md}'" },
      NULL },
    /* ---- jobs ---- */
    { "ishard", "ishard --src-bck ais://SRC[/PREFIX] --dst-bck ais://DST [FLAGS]",
      "Pack raw files into WebDataset shards, keeping samples together (the ishard job).",
      F({ "--src-bck ais://SRC[/PREFIX]", "the source bucket (and prefix)", "required" },
        { "--dst-bck ais://DST", "the destination bucket (must be empty unless --overwrite)", "required" },
        { "--shard-size SIZE|N", "target shard size, or a bare number of samples per shard", "1MiB" },
        { "--shard-template T", "output names: %d counter, {0000..9999} or @9999 ranges", "shard-%06d" },
        { "--ext EXT", ".tar, .tgz, .tar.gz, .zip or .tar.lz4", ".tar" },
        { "--sample-key-pattern P", "base_name, full_name, collapse_all_dir or a regular expression", "base_name" },
        { "--sample-exts .jpg,.cls", "extensions every sample should have", "none" },
        { "--missing-extension-action A", "ignore, warn, abort or exclude", "ignore" },
        { "--collapse", "leftovers of a directory join its parent's shards", "false" },
        { "--ekm FILE.json|FILE.lua", "external key map: JSON {\"tmpl\": [regex...]} or a Lua shard_for()", "none" },
        { "--ekm-content cls,json", "members whose bytes the Lua EKM receives", "none" },
        { "--ekm-missing-key A", "a sample no rule matches: ignore, warn or abort", "warn" },
        { "--sort S", "alpha[:inc|dec] or shuffle[:SEED]", "none" },
        { "--ext-collision A", "two members of a sample with one extension: abort, drop or keep-first", "abort" },
        { "--overwrite", "write into a destination that is not empty", "false" },
        { "--dry-run[=show_keys]", "print the layout (and the keys), write nothing", "false" },
        { "--progress", "with --wait: draw a progress bar", "false" }),
      CF_JSON | CF_WAIT, 0, { "ishard --src-bck ais://raw --dst-bck ais://shards --shard-size 512MiB --wait",
                              "ishard -src_bck=ais://raw -dst_bck=ais://s -dry_run=show_keys" }, NULL },
    { "job", "job show|ls|wait|stop|start|rm ...", "Show, wait for, stop and start jobs (rebalance, copies, dsort, ...).",
      NOF, 0, -1, { "job show --all", "job wait tco-Ab12 --timeout 10m" }, NULL },
    { "job show", "job show [ID|KIND] [--all] [--json]",
      "Show jobs per target (running ones, unless --all or a job id is given).",
      F({ "--all", "include jobs that have ended", "false" }), CF_JSON | CF_NOHDR, 1,
      { "job show", "job show copy-bck --all" }, NULL },
    { "job ls", NULL, NULL, NOF, 0, 0, { NULL, NULL }, "job show" },
    { "advanced", "advanced resilver|check-lock|rotate-logs|remove-from-smap|enable-backend|disable-backend|random-node|random-mountpath ...", "Operator commands: start a resilver, see whether an object is locked, rotate logs, remove a node from the cluster map, switch a cloud backend off and on, pick a node or mountpath for scripts.",
      NOF, 0, -1, { "advanced resilver --wait", "advanced check-lock ais://data/a.bin" }, NULL },
    { "advanced resilver", "advanced resilver [TARGET] [--wait] [--progress]",
      "Move every object of each target (or of the one named) to its mountpath and restore its mirror copies (job "
      "resilver); the same as `storage resilver`.",
      F({ "--progress", "with --wait: show its objects, bytes and rate while the job runs (always on a terminal)", "false" }),
      CF_WAIT, 1, { "advanced resilver --wait", "advanced resilver t[abc123]" }, NULL },
    { "advanced rotate-logs", "advanced rotate-logs [NODE]",
      "Rotate the log file of the node named, else of every node: FILE becomes FILE.1 and a new FILE is begun.",
      NOF, 0, 1, { "advanced rotate-logs", "advanced rotate-logs t[abc123]" }, NULL },
    { "advanced remove-from-smap", "advanced remove-from-smap NODE",
      "Remove a node from the cluster map at once (PUT /v1/cluster rm-unsafe): no rebalance, so objects only it "
      "holds are out of reach (advanced usage: potential data loss); the node keeps running outside the cluster "
      "and joins again when it is restarted; the primary cannot remove itself.",
      NOF, 0, 1, { "advanced remove-from-smap t[abc123]", NULL }, NULL },
    { "advanced disable-backend", "advanced disable-backend PROVIDER [NODE]",
      "Disable a cloud backend (aws, gcp, azure, oci) on every target, or on the target named "
      "(PUT /v1/cluster/disable-bend/PROVIDER[/NODE]): requests to that provider's buckets then fail at once (503 "
      "naming the provider) until it is enabled; objects already held are still served.",
      NOF, 0, 2, { "advanced disable-backend aws", "advanced disable-backend aws t[abc123]" }, NULL },
    { "advanced random-node", "advanced random-node [--type proxy|target]",
      "Print the id of one node picked at random from the cluster map (for scripts).",
      F({ "--type proxy|target", "the kind of node", "target" }), 0, 0,
      { "advanced random-node", "advanced random-node --type proxy" }, NULL },
    { "advanced random-mountpath", "advanced random-mountpath TARGET",
      "Print one of TARGET's usable mountpaths, picked at random (for scripts).", NOF, 0, 1,
      { "advanced random-mountpath t[abc123]", NULL }, NULL },
    { "advanced enable-backend", "advanced enable-backend PROVIDER [NODE]",
      "Enable a cloud backend disabled with `advanced disable-backend`, on every target or on the target named.",
      NOF, 0, 2, { "advanced enable-backend aws", "advanced enable-backend aws t[abc123]" }, NULL },
    { "scrub", "scrub [ais://BUCKET ...] [--fix] [--wait] [--progress]",
      "Check every object on every target (job scrub; of the buckets named, else of all): its bytes against its "
      "checksum, its size, its mirror copies, its mountpath (misplaced), an erasure-coded bucket's slices; "
      "detect-only, as `ais storage validate` (nothing is changed unless --fix); with --wait the damaged objects "
      "are printed as OBJECT PROBLEM FIXED (the first 1000 per target).",
      F({ "--fix", "repair what is found: a good mirror copy, EC slices or the remote backend make a damaged "
                   "object again (else it is recorded as damaged), missing copies are made, misplaced objects "
                   "moved", "false" },
        { "--progress", "with --wait: show its objects, bytes and rate while the job runs (always on a terminal)", "false" }),
      CF_WAIT, -1, { "scrub ais://data --wait", "scrub --fix --wait" }, NULL },
    { "advanced check-lock", "advanced check-lock ais://BUCKET/OBJECT",
      "Say whether the object is locked now (being written, read or moved): exit 0 when it is not, 1 when it is.",
      NOF, 0, 1, { "advanced check-lock ais://data/a.bin", NULL }, NULL },
    { "job wait", "job wait ID|KIND [--timeout DURATION] [--progress]",
      "Wait until a job ends; the exit status says whether it succeeded.",
      F({ "--timeout DURATION", "give up after this long", "1h" },
        { "--progress", "show its objects, bytes and rate while the job runs (always on a terminal)", "false" }), 0, 1,
      { "job wait tco-Ab12", "wait rebalance --timeout 10m" }, NULL },
    { "job stop", "job stop ID|KIND", "Stop a running job.", NOF, 0, 1, { "job stop tco-Ab12", "stop rebalance" },
      NULL },
    { "job start", "job start rebalance [--wait]\n"
                   "job start lru [ais://BUCKET ...] [--force] [--wait]\n"
                   "job start lifecycle [ais://BUCKET ...] [--wait]\n"
                   "job start resilver [TARGET] [--wait]\n"
                   "job start mirror ais://BUCKET --copies N [--wait]\n"
                   "job start dsort [ais://SRC] [ais://DST] -f SPEC.json|SPEC.yaml|- [FLAGS]",
      "Start a rebalance, an LRU eviction (of the buckets named, else of all), the buckets' S3 lifecycle rules "
      "applied now (job lifecycle: expired objects deleted, old multipart uploads aborted), a resilver (of every target, else "
      "of the one named), N-way mirroring of a bucket (make-n-copies: N replicas of each object on distinct "
      "mountpaths) or a dsort job from its spec (JSON or YAML; SRC and DST replace its buckets).",
      F({ "-f, --file SPEC", "the dsort spec, JSON or YAML (- = stdin)", "none" },
        { "--force", "lru: evict from buckets with lru.enabled false too", "false" },
        { "--copies N", "mirror: replicas of each object, the main one included (1 removes the copies)", "none" },
        { "--progress", "with --wait: show its objects, bytes and rate while the job runs (always on a terminal)", "false" },
        { "-v, --verbose", "print the spec as sent (on stderr) first", "false" }),
      CF_WAIT, -1, { "job start rebalance --wait", "job start lru ais://cache --wait" }, NULL },
    { "job rm", "job rm [dsort] srt-ID", "Forget a finished dsort job.", NOF, 0, 2, { "job rm dsort srt-Ab12", NULL },
      NULL },
    { "start", "start rebalance [--wait]\n"
               "start mirror ais://BUCKET --copies N [--wait]\n"
               "start dsort [ais://SRC] [ais://DST] -f SPEC.json|SPEC.yaml|- [FLAGS]", NULL, NOF, 0, 0,
      { NULL, NULL }, "job start" },
    { "dsort", "dsort [ais://SRC] [ais://DST] -f SPEC.json|SPEC.yaml|- [FLAGS]",
      "Start a dsort job (shuffle or re-shard shards) from its spec in JSON or YAML; SRC and DST replace its buckets.",
      F({ "-f, --file SPEC", "the dsort spec, JSON or YAML (- = stdin)", "none" },
        { "--progress", "with --wait: show its objects, bytes and rate while the job runs (always on a terminal)", "false" },
        { "-v, --verbose", "print the spec as sent (on stderr) first", "false" }),
      CF_WAIT, 2, { "dsort ais://shards ais://sorted -f spec.json --wait", "dsort -f spec.yaml" }, NULL },
    { "wait", "wait ID|KIND [--timeout DURATION] [--progress]", NULL, NOF, 0, 0, { NULL, NULL }, "job wait" },
    { "stop", "stop ID|KIND", NULL, NOF, 0, 0, { NULL, NULL }, "job stop" },
    { "ml", "ml get-batch ... | ml plan create|ls|show|rm|batch ...",
      "Machine-learning helpers: many objects, members and ranges as one archive; epoch plans.", NOF, 0,
      -1, { "ml get-batch ais://imgs batch.tar --template 'x-{0..63}.jpg'",
            "ml plan create train ais://shards --prefix train- --batch-size 256" }, NULL },
    { "ml get-batch", "ml get-batch ais://BUCKET[/OBJ] ... OUT.tar|OUT.tgz|OUT.tar.lz4|OUT.zip|- [FLAGS]",
      "Fetch many objects (or shard members) as one archive, in the order given (get-batch).",
      F({ "--spec, -f REQ", "the request (a MossReq) as JSON or YAML (- = stdin)", "none" },
        { "--streaming", "stream the archive as it is built", "false" },
        { "--cont-on-err, --coer", "put a __404__/NAME entry for what is missing instead of failing", "false" },
        { "--omit-src-bck, --onob", "name entries OBJECT instead of BUCKET/OBJECT", "false" },
        { "--nv", "print nothing on success", "false" }),
      CF_SEL | CF_YES, -1, { "ml get-batch ais://imgs batch.tar --list 'a.jpg,b.jpg'",
                             "ml get-batch ais://imgs - --prefix train/ --omit-src-bck > train.tar" }, NULL },
    { "ml plan", "ml plan create|ls|show|rm|batch ...",
      "Epoch plans: the cluster fixes one shuffled order of a set of shards' samples for every epoch, served as "
      "numbered batches (docs/get-batch.md, section 6).", NOF, 0, -1,
      { "ml plan ls", "ml plan batch train b.tar --epoch 0 --index 17" }, NULL },
    { "ml plan create", "ml plan create NAME ais://BUCKET --template 'T' | --prefix P --batch-size N [FLAGS]",
      "Make an epoch plan over plain-tar shards (PUT /v1/ml/plan): the shards a template names or every .tar "
      "under a prefix.",
      F({ "--template 'T'", "the shards, a brace range such as 'shard-{0000..0999}.tar' (field template)", "none" },
        { "--prefix P", "every .tar shard whose name starts with P (field prefix)", "none" },
        { "--batch-size N", "samples per batch, required (field batch_size)", "none" },
        { "--seed N", "the shuffle's seed, a non-negative integer (field seed)", "drawn by the cluster" },
        { "--drop-last", "leave out the last, short batch (field drop_last)", "false" },
        { "--shuffle-block N", "shards per shuffle block (field shuffle_block)", "4" }),
      CF_JSON, 2, { "ml plan create train ais://shards --prefix train- --batch-size 256 --seed 7",
                    "ml plan create val ais://shards --template 'val-{00..09}.tar' --batch-size 64 --drop-last" },
      NULL },
    { "ml plan ls", "ml plan ls [--json] [-H]", "List the epoch plans (GET /v1/ml/plan).", NOF, CF_JSON | CF_NOHDR,
      0, { "ml plan ls", "ml plan ls --json" }, NULL },
    { "ml plan show", "ml plan show NAME [--json]",
      "Show one epoch plan: its bucket, shards, batch size, seed and counts (GET /v1/ml/plan/NAME).", NOF,
      CF_JSON | CF_NOHDR, 1, { "ml plan show train", "ml plan show train --json" }, NULL },
    { "ml plan rm", "ml plan rm NAME [NAME ...] [--ignore-error]", "Remove epoch plans (DELETE /v1/ml/plan/NAME).",
      F({ "--ignore-error", "a plan that does not exist is not an error", "false" }), 0, -1,
      { "ml plan rm train", "ml plan rm a b --ignore-error" }, NULL },
    { "ml plan batch", "ml plan batch NAME OUT.tar|- --epoch E --index I",
      "Fetch batch I of epoch E of a plan as one tar of its samples in order (GET /v1/ml/plan/NAME/batch).",
      F({ "--epoch E", "the epoch, 0 or more (required)", "none" },
        { "--index I", "the batch, 0 to batches-1 (required)", "none" }),
      0, 2, { "ml plan batch train b17.tar --epoch 3 --index 17", "ml plan batch train - --epoch 0 --index 0 | tar t" },
      NULL },
    /* ---- cluster membership and local clusters ---- */
    { "cluster", "cluster maintenance start|stop NODE | cluster decommission NODE | cluster lost [clear] | "
                 "cluster set-primary NODE | "
                 "cluster remote-attach|remote-detach ...",
      "Take nodes out of the cluster for maintenance, or for good; attach remote clusters.", NOF, 0, -1,
      { "cluster maintenance start t[abc123]", "cluster decommission t[abc123] --wait" }, NULL },
    { "cluster maintenance", "cluster maintenance start|stop NODE [FLAGS]",
      "Put a node into maintenance (its objects move away first), or bring it back.",
      F({ "--no-shutdown", "keep the node's process running", "false" },
        { "--skip-rebalance", "do not move the node's objects", "false" },
        { "--wait", "wait for the rebalance", "false" }),
      0, 2, { "cluster maintenance start t[abc123] --wait", "cluster maintenance stop t[abc123]" }, NULL },
    { "cluster decommission", "cluster decommission NODE [FLAGS]",
      "Remove a node from the cluster for good, after its objects have moved away.",
      F({ "--no-shutdown", "keep the node's process running", "false" },
        { "--skip-rebalance", "do not move the node's objects", "false" },
        { "--force", "remove it even when objects exist only there (it is offline, or --skip-rebalance): the loss "
                     "is recorded (cluster lost)", "false" },
        { "--wait", "wait for the rebalance", "false" }),
      0, 1, { "cluster decommission t[abc123] --wait", "cluster decommission t[abc123] --force" }, NULL },
    { "cluster set-primary", "cluster set-primary NODE",
      "Make a gateway the primary: it must answer, and the current primary steps down (a primary that dies is "
      "replaced by election, without this command).", NOF, 0, 1, { "cluster set-primary p[abc123]", NULL }, NULL },
    { "cluster lost", "cluster lost [--json]",
      "Show the objects recorded as lost with targets removed by force (listings of their buckets refuse until "
      "the target's data is re-attached or the loss is acknowledged).", NOF, CF_JSON, 0,
      { "cluster lost", "cluster lost clear t[abc123]" }, NULL },
    { "cluster lost clear", "cluster lost clear [NODE]",
      "Acknowledge the loss recorded with a target (all targets without NODE): listings of its buckets work "
      "again, without those objects.", NOF, 0, 1, { "cluster lost clear t[abc123]", NULL }, NULL },
    { "cluster reset-stats", "cluster reset-stats [NODE] [--errors-only]",
      "Reset the nodes' counters (node status and /metrics) to 0 on every node, or on NODE; Prometheus takes the "
      "drop as a counter reset, so rate() and increase() stay right.",
      F({ "--errors-only", "reset only the error counters", "false" }), 0, 1,
      { "cluster reset-stats", "cluster reset-stats t[abc123] --errors-only" }, NULL },
    { "cluster download-logs", "cluster download-logs [NODE] [--dir DIR]",
      "Save every node's logs (or NODE's) in DIR, one ID.tar.gz per node with all its log files.",
      F({ "--dir DIR", "the directory the archives go to (it must exist)", "." }), 0, 1,
      { "cluster download-logs --dir /tmp/logs", "cluster download-logs t[abc123]" }, NULL },
    { "cluster shutdown", "cluster shutdown [-y]",
      "Shut down the whole cluster: every target, then every gateway, the one asked last (after asking on a "
      "terminal; elsewhere, as in a script, it refuses unless -y/--yes is given).", NOF, CF_YES, 0,
      { "cluster shutdown", "cluster shutdown -y" }, NULL },
    { "cluster reload-backend-creds", "cluster reload-backend-creds",
      "Make the backends use changed credentials (reload-creds): the aws backend reads its credentials file at "
      "every call, so this says so; credentials from the targets' environment change only with a restart.", NOF, 0,
      0, { "cluster reload-backend-creds", NULL }, NULL },
    { "cluster remote-attach", "cluster remote-attach ALIAS=URL",
      "Attach a remote AIStore-compatible cluster (its gateway's URL) under an alias, for buckets backed by "
      "ais://@ALIAS/BUCKET.", NOF, 0, 1,
      { "cluster remote-attach lake=http://10.0.0.5:8080", "show remote-cluster" }, NULL },
    { "cluster remote-detach", "cluster remote-detach ALIAS",
      "Detach a remote cluster (buckets backed by it fail their remote reads and writes until it is attached "
      "again).", NOF, 0, 1, { "cluster remote-detach lake", NULL }, NULL },
    { "show remote-cluster", "show remote-cluster [--json]",
      "Show the attached remote clusters: alias, URL, UUID, and whether they answer now.", NOF, CF_JSON | CF_NOHDR, 0,
      { "show remote-cluster", "show remote-cluster --json" }, NULL },
    { "s3", "s3 key add|ls|rm ... | s3 verify on|off",
      "Manage the S3 front end's access keys and whether it verifies request signatures.", NOF, 0, -1,
      { "s3 key add trainer", "s3 verify on" }, NULL },
    { "s3 key", "s3 key add|ls|rm ...", "Add, list or remove S3 access keys.", NOF, 0, -1,
      { "s3 key ls", NULL }, NULL },
    { "s3 key add", "s3 key add ACCESS_KEY [--secret SECRET] [--user USER]",
      "Add an S3 access key (a new secret is made and shown once unless given).",
      F({ "--secret SECRET", "the secret (8-128 printable characters)", "40 random characters" },
        { "--user USER", "the AuthN user the key belongs to: with auth and verification on, requests signed with it "
                         "have that user's permissions", "none" }), 0, 1,
      { "s3 key add trainer", "s3 key add ci --secret 'c1-secret-value'" }, NULL },
    { "s3 key ls", "s3 key ls", "List S3 access keys (never their secrets) and the verification mode.", NOF,
      CF_JSON | CF_NOHDR, 0, { "s3 key ls", NULL }, NULL },
    { "s3 key rm", "s3 key rm ACCESS_KEY [ACCESS_KEY ...]", "Remove S3 access keys.", NOF, 0, -1,
      { "s3 key rm trainer", NULL }, NULL },
    { "s3 verify", "s3 verify on|off",
      "Turn S3 signature verification on (requests must be signed with a listed key) or off (any credentials).",
      NOF, 0, 1, { "s3 verify on", "s3 verify off" }, NULL },
    { "log", "log show [NODE] [--severity S] | log get NODE [FILE]", "Show or save a node's log (through the "
      "gateway).", NOF, 0, -1,
      { "log show t[abc123]", NULL }, NULL },
    { "log show", "log show [NODE] [--severity info|warning|error]",
      "Print a node's log: the gateway's own without NODE; NODE is p[ID], t[ID] or ID (`shale show cluster`).",
      F({ "--severity S", "info (all lines), warning or error (warnings and errors only)", "info" }), 0, 1,
      { "log show", "log show t[abc123] --severity warning" }, NULL },
    { "log get", "log get NODE [FILE|-] [--all]",
      "Save a node's current log in FILE (default ID.log; - prints it), or with --all every log file of the node "
      "as one .tar.gz (default ID.tar.gz).",
      F({ "--all", "all the node's log files, as a .tar.gz", "false" }), 0, 2,
      { "log get t[abc123]", "log get p[xyz] /tmp/gw.tar.gz --all" }, NULL },
    { "auth", "auth login|logout|whoami|add|update|rm|show ...",
      "Log in to the cluster's AuthN and manage its users and roles (AIStore's `ais auth`); requests carry the "
      "saved token.", NOF, 0, -1, { "auth login admin", "auth add role readers GET,HEAD-OBJECT --bucket ais://imgs" },
      NULL },
    { "auth login", "auth login USER [--password PASS] [--expire DURATION] [--file F]",
      "Log in: the token is saved (0600) where this CLI reads it (AIS_AUTHN_TOKEN_FILE, else "
      "~/.config/shale/auth.token); without --password it is read from standard input.",
      F({ "-p, --password PASS", "the password", "read from standard input" },
        { "--expire DURATION", "the token's lifetime, at most auth.expiration_time", "auth.expiration_time" },
        { "--file F", "save the token here", "AIS_AUTHN_TOKEN_FILE or ~/.config/shale/auth.token" }),
      0, 1, { "auth login admin", "auth login trainer --expire 8h" }, NULL },
    { "auth logout", "auth logout", "Revoke the saved token and delete it.", NOF, 0, 0, { "auth logout", NULL },
      NULL },
    { "auth whoami", "auth whoami [--json]",
      "Show who the saved token (AIS_AUTHN_TOKEN, else the token file) is: user, admin or not, the clusters and "
      "buckets it is good for, and when it expires (exit 1 if expired or missing).", NOF, CF_JSON, 0,
      { "auth whoami", "auth whoami --json" }, NULL },
    { "auth add", "auth add user|role ...", "Add a user or a role.", NOF, 0, -1, { "auth add user bob readers", NULL },
      NULL },
    { "auth add user", "auth add user USER [ROLE ...] [--password PASS]",
      "Add a user with these roles (Admin is built in); the password is read from standard input unless given.",
      F({ "-p, --password PASS", "the password", "read from standard input" }), 0, -1,
      { "auth add user admin Admin", "auth add user bob readers --password 's3cret'" }, NULL },
    { "auth add role", "auth add role ROLE PERMISSION... [--bucket ais://B | --cluster ID] [--desc TEXT]",
      "Add a role granting AIStore's permissions (GET, HEAD-OBJECT, PUT, APPEND, DELETE-OBJECT, MOVE-OBJECT, "
      "PROMOTE, UPDATE-OBJECT, HEAD-BUCKET, LIST-OBJECTS, PATCH, SET-BUCKET-ACL, LIST-BUCKETS, SHOW-CLUSTER, "
      "CREATE-BUCKET, DESTROY-BUCKET, MOVE-BUCKET, ADMIN, or ro, rw, su) on one bucket or cluster-wide.",
      F({ "--bucket ais://B", "the permissions apply to this bucket only", "cluster-wide" },
        { "--cluster ID", "the cluster UUID they apply to", "any cluster" },
        { "--desc TEXT", "a description", "none" }),
      0, -1, { "auth add role readers ro --bucket ais://imgs", "auth add role ops SHOW-CLUSTER LIST-BUCKETS" }, NULL },
    { "auth update", "auth update user|role|cluster ...", "Change a user, a role or a registered cluster.", NOF, 0,
      -1, { "auth update user bob writers", NULL }, NULL },
    { "auth update user", "auth update user USER [ROLE ...] [--password PASS]",
      "Change a user's password (--password) or roles (the roles given replace the old ones).",
      F({ "-p, --password PASS", "the new password", "unchanged" }), 0, -1,
      { "auth update user bob readers writers", "auth update user bob --password 'n3w'" }, NULL },
    { "auth update role", "auth update role ROLE [PERMISSION...] [--bucket ais://B | --cluster ID] [--desc TEXT]",
      "Change a role: the description (--desc), and the permissions on one bucket or cluster-wide (the ones given "
      "replace what the role had there; its other buckets and clusters stay).",
      F({ "--bucket ais://B", "the permissions apply to this bucket only", "cluster-wide" },
        { "--cluster ID", "the cluster UUID they apply to", "any cluster" },
        { "--desc TEXT", "the new description", "unchanged" }),
      0, -1, { "auth update role readers ro --bucket ais://imgs", "auth update role ops --desc 'operators'" }, NULL },
    { "auth update cluster", "auth update cluster ID|ALIAS [NEW_ALIAS] URL [URL ...] [--alias NEW_ALIAS]",
      "Change a registered cluster's URLs (they must answer and trust this AuthN's tokens) and alias.",
      F({ "--alias NEW_ALIAS", "its new alias", "unchanged" }), 0, -1,
      { "auth update cluster main http://10.0.0.6:8080", "auth update cluster main http://gw:8080 --alias prod" },
      NULL },
    { "auth rm", "auth rm user|role|token ...", "Remove users or roles, or revoke a token.", NOF, 0, -1,
      { "auth rm user bob", NULL }, NULL },
    { "auth rm user", "auth rm user USER [USER ...]", "Remove users.", NOF, 0, -1, { "auth rm user bob", NULL },
      NULL },
    { "auth rm role", "auth rm role ROLE [ROLE ...]", "Remove roles no user holds.", NOF, 0, -1,
      { "auth rm role readers", NULL }, NULL },
    { "auth rm token", "auth rm token TOKEN", "Revoke a token (an admin, or the token's own user).", NOF, 0, 1,
      { "auth rm token eyJhbGciOi...", NULL }, NULL },
    { "auth show", "auth show user|role|cluster|config [NAME]", "Show users, roles, clusters or AuthN's configuration.", NOF, 0, -1, { "auth show user", NULL },
      NULL },
    { "auth show user", "auth show user [USER] [--json]", "Show users and their roles.", NOF, CF_JSON | CF_NOHDR, 1,
      { "auth show user", "auth show user bob --json" }, NULL },
    { "auth add cluster", "auth add cluster [ALIAS] URL [URL ...]",
      "Register a cluster with this AuthN (its id is read from the first URL's map), so tokens name it; ALIAS "
      "is a short name for it.", NOF, 0, -1,
      { "auth add cluster main http://10.0.0.5:8080", "auth add cluster https://gw1:8080 https://gw2:8080" }, NULL },
    { "auth show cluster", "auth show cluster [ID|ALIAS] [--json]", "Show the clusters registered with AuthN.", NOF,
      CF_JSON | CF_NOHDR, 1, { "auth show cluster", "auth show cluster main --json" }, NULL },
    { "auth rm cluster", "auth rm cluster ID|ALIAS [...]", "Unregister clusters from AuthN.", NOF, 0, -1,
      { "auth rm cluster main", NULL }, NULL },
    { "auth show role", "auth show role [ROLE] [--json]", "Show roles.", NOF, CF_JSON | CF_NOHDR, 1,
      { "auth show role", "auth show role readers --json" }, NULL },
    { "auth show config", "auth show config [PREFIX] [--json]",
      "Show AuthN's configuration, or the keys starting with PREFIX (auth.expiration_time, log.level and the "
      "rest; the secret is never shown).", NOF, CF_JSON | CF_NOHDR, 1, { "auth show config", "auth show config auth --json" },
      NULL },
    { "auth set", "auth set config KEY=VALUE [...]", "Change AuthN's configuration.", NOF, 0, -1,
      { "auth set config expiration_time=30m", NULL }, NULL },
    { "auth set config", "auth set config KEY=VALUE [KEY=VALUE ...]",
      "Change AuthN's configuration (kept across restarts): auth.expiration_time (the lifetime of the tokens "
      "logins get, 1m to 2160h), auth.secret (tokens are signed with it from now on; older ones stop working), "
      "log.level (0-5).", NOF, 0, -1,
      { "auth set config expiration_time=30m", "auth set config log.level=4" }, NULL },
    { "tls", "tls load-certificate|show [NODE] | tls validate-certificates",
      "Load the TLS certificate files again on every node (certificate rotation without a restart), and show "
      "what each node's certificate says.", NOF, 0, -1, { "tls load-certificate", "tls show" }, NULL },
    { "tls load-certificate", "tls load-certificate [NODE] [--json]",
      "Every node (or NODE) reads net.http.server_crt and server_key again and serves them to new connections; a "
      "missing or invalid file is an error naming it, and the certificate loaded before stays in use.", NOF,
      CF_JSON, 1, { "tls load-certificate", "tls load-certificate t[abc123]" }, NULL },
    { "tls validate-certificates", "tls validate-certificates",
      "Check every node's TLS certificate: valid now and not expiring within 30 days, and whether all were issued by "
      "one CA (exit 1 when a node has no valid certificate or the issuers differ).", NOF, 0, 0,
      { "tls validate-certificates", NULL }, NULL },
    { "tls show", "tls show [NODE] [--json]",
      "Show each node's (or NODE's) TLS certificate: subject, issuer, serial number, validity, SANs, key, files.",
      NOF, CF_JSON, 1, { "tls show", "tls show p[xyz789] --json" }, NULL },
    { "playground", "playground start|stop|status|add-target --dir DIR ...",
      "Run a local node or cluster on loopback, for trying things out and for tests.", NOF, 0, -1,
      { "playground start --dir /tmp/pg --proxies 1 --targets 3", "playground stop --dir /tmp/pg" }, NULL },
    { "playground start", "playground start --dir DIR [FLAGS]",
      "Start a local standalone node, or a cluster of gateways and targets (an existing DIR is restarted).",
      F({ "--dir DIR", "where the nodes keep their data, logs and PIDs", "required" },
        { "--port P", "the first port (the gateway's); the other nodes take the next ones", "8080" },
        { "--proxies N", "gateways (with --targets)", "1 with --targets, else 0" },
        { "--targets N", "targets (0: one standalone node)", "0" },
        { "--mountpaths N", "mountpaths per target", "1" },
        { "--timeout SECONDS", "how long to wait for the nodes to come up", "60" },
        { "--auth", "turn client authentication on: user admin is made, its password written to DIR/admin.password "
                    "and a token to DIR/admin.token (both 0600)", "false" },
        { "--https", "serve HTTPS: a CA and a node certificate are made in DIR/tls (first start only); the CLI "
                     "trusts the CA through AIS_CLIENT_CA", "false" }),
      0, 0, { "playground start --dir /tmp/pg", "playground start --dir /tmp/pg --proxies 1 --targets 3" }, NULL },
    { "playground stop", "playground stop --dir DIR", "Stop the playground's nodes (by their recorded PIDs).",
      F({ "--dir DIR", "the playground's directory", "required" }), 0, 0, { "playground stop --dir /tmp/pg", NULL },
      NULL },
    { "playground status", "playground status --dir DIR", "Show the playground's nodes and whether they run.",
      F({ "--dir DIR", "the playground's directory", "required" }), 0, 0, { "playground status --dir /tmp/pg", NULL },
      NULL },
    { "playground add-target", "playground add-target --dir DIR [--port P]",
      "Start one more target in the playground (it joins, and a rebalance follows).",
      F({ "--dir DIR", "the playground's directory", "required" },
        { "--port P", "the new target's port", "the first free port above the playground's" }), 0, 0,
      { "playground add-target --dir /tmp/pg", NULL }, NULL },
};

static const struct cli_cmd *find(const char *path)
{
    for (size_t i = 0; i < SL_ARRAY_SIZE(cmds); i++)
        if (!strcmp(cmds[i].path, path))
            return &cmds[i];
    return NULL;
}

static const struct cli_cmd *resolve(const struct cli_cmd *c)
{
    for (int i = 0; c && c->alias_of && i < 4; i++)
        c = find(c->alias_of);
    return c;
}

/* The names of a flag spec ("-f, --file SPEC" -> f, file), whether it takes
 * a value, and its canonical name (the first long one). */
static int flag_names(const char *spec, char names[4][40], bool *valued, const char **canon)
{
    int n = 0;
    *valued = false;
    *canon = NULL;
    const char *p = spec;
    while (*p == '-' && n < 4) {
        while (*p == '-')
            p++;
        size_t l = strcspn(p, " ,[");
        snprintf(names[n], sizeof(names[n]), "%.*s", (int)SL_MIN(l, 39), p);
        if (!*canon && l > 1)
            *canon = names[n];
        n++;
        p += l;
        if (*p == ',') {
            p++;
            while (*p == ' ')
                p++;
        } else {
            *valued = *p == ' ';
            break;
        }
    }
    if (!*canon && n)
        *canon = names[0];
    return n;
}

static void each_flag(const struct cli_cmd *c, void (*fn)(const struct cli_flag *f, void *arg), void *arg)
{
    for (const struct cli_flag *f = c->flags; f && f->spec; f++)
        fn(f, arg);
    for (size_t i = 0; i < SL_ARRAY_SIZE(common_flags); i++) {
        if (!(c->common & common_bits[i]))
            continue;
        /* an entry's own spelling of a common flag wins */
        char nm[4][40];
        bool v;
        const char *canon;
        flag_names(common_flags[i].spec, nm, &v, &canon);
        bool own = false;
        for (const struct cli_flag *f = c->flags; f && f->spec && !own; f++) {
            char n2[4][40];
            const char *c2;
            flag_names(f->spec, n2, &v, &c2);
            own = !strcmp(c2, canon);
        }
        if (!own)
            fn(&common_flags[i], arg);
    }
}

struct lists {
    struct sl_buf valued, booleans;
    const struct cli_flag *all[64];
    int n;
};

static void add_lists(const struct cli_flag *f, void *arg)
{
    struct lists *l = arg;
    char nm[4][40];
    bool valued;
    const char *canon;
    int n = flag_names(f->spec, nm, &valued, &canon);
    for (int i = 0; i < n; i++)
        sl_buf_printf(valued ? &l->valued : &l->booleans, "%s%s", (valued ? l->valued : l->booleans).len ? "," : "",
                      nm[i]);
    if (l->n < 64)
        l->all[l->n++] = f;
}

int cli_opts(struct opts *o, const char *path, int argc, char **argv)
{
    cli_cmd_path = path;
    const struct cli_cmd *c = resolve(find(path));
    if (!c) {
        fprintf(stderr, "Error: internal: no flags are defined for `shale %s`\n", path);
        return -1;
    }
    struct lists l = { 0 };
    sl_buf_init(&l.valued);
    sl_buf_init(&l.booleans);
    sl_buf_adds(&l.valued, "");
    sl_buf_adds(&l.booleans, "");
    each_flag(c, add_lists, &l);
    int rc = opts_parse(o, argc, argv, l.valued.p, l.booleans.p);
    /* aliases (-f, --coer) answer to the canonical name */
    for (int i = 0; rc == 0 && i < o->nflags; i++) {
        for (int k = 0; k < l.n; k++) {
            char nm[4][40];
            bool valued;
            const char *canon;
            int n = flag_names(l.all[k]->spec, nm, &valued, &canon);
            for (int j = 0; j < n; j++)
                if (!strcmp(nm[j], o->flags[i].name) && strcmp(canon, o->flags[i].name))
                    opts_rename(o, i, canon);
        }
    }
    sl_buf_free(&l.valued);
    sl_buf_free(&l.booleans);
    if (rc < 0)
        return -1;
    if (c->max_args >= 0 && o->argc > c->max_args) {
        fprintf(stderr, "Error: unexpected argument \"%s\": `shale %s` takes %s%d (`shale %s --help` shows "
                "them)\n", o->argv[c->max_args], path, c->max_args ? "at most " : "", c->max_args, path);
        return -1;
    }
    return 0;
}

int cli_opts_min(struct opts *o, const char *path, int argc, char **argv, int min)
{
    if (cli_opts(o, path, argc, argv) < 0)
        return 1;
    return o->argc < min ? cli_usage(path) : 0;
}

int cli_run_verb(const char *group, const struct cli_verb *verbs, size_t n, int argc, char **argv, bool keep_verb)
{
    if (argc < 1)
        return cli_usage(group);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(argv[0], verbs[i].verb))
            continue;
        char path[64];
        snprintf(path, sizeof(path), "%s %s", group, argv[0]);
        struct opts o;
        if (cli_opts(&o, verbs[i].path ? verbs[i].path : path, argc - 1, argv + 1) < 0)
            return 1;
        if (keep_verb) { /* o.argv has room: it holds argc slots */
            memmove(o.argv + 1, o.argv, (size_t)o.argc * sizeof(char *));
            o.argv[0] = argv[0];
            o.argc++;
        }
        return verbs[i].fn(&o);
    }
    struct sl_buf names;
    sl_buf_init(&names);
    for (size_t i = 0; i < n; i++)
        sl_buf_printf(&names, "%s%s", names.len ? ", " : "", verbs[i].verb);
    fprintf(stderr, "Error: unknown command \"%s %s\" (%s; `shale %s --help`)\n", group, argv[0], names.p, group);
    sl_buf_free(&names);
    return 1;
}

/* text to f in lines of at most width columns; the first line starts at
 * column col, the next ones at indent */
static void wrap(FILE *f, const char *text, size_t col, size_t indent, size_t width)
{
    const char *p = text;
    while (*p) {
        size_t wl = strcspn(p, " ");
        if (col > indent && col + 1 + wl > width) {
            fprintf(f, "\n%*s", (int)indent, "");
            col = indent;
        } else if (col > indent || p != text) {
            if (p != text) {
                fputc(' ', f);
                col++;
            }
        }
        fprintf(f, "%.*s", (int)wl, p);
        col += wl;
        p += wl;
        while (*p == ' ')
            p++;
    }
    fputc('\n', f);
}

static void print_usage_lines(FILE *f, const char *usage)
{
    const char *p = usage;
    for (bool first = true; *p; first = false) {
        size_t l = strcspn(p, "\n");
        fprintf(f, "%s shale %.*s\n", first ? "Usage:" : "      ", (int)l, p);
        p += l + (p[l] == '\n');
    }
}

struct flag_print {
    FILE *f;
    size_t width;
};

static void flag_width(const struct cli_flag *fl, void *arg)
{
    struct flag_print *fp = arg;
    fp->width = SL_MAX(fp->width, strlen(fl->spec));
}

static void print_flag(const struct cli_flag *fl, void *arg)
{
    struct flag_print *fp = arg;
    char *text = sl_xasprintf("%s (default: %s)", fl->meaning, fl->dflt);
    fprintf(fp->f, "  %-*s  ", (int)fp->width, fl->spec);
    wrap(fp->f, text, 4 + fp->width, 4 + fp->width, 110);
    free(text);
}

int cli_help(const char *path, FILE *f)
{
    const struct cli_cmd *a = find(path), *c = resolve(a);
    if (!c)
        return -1;
    print_usage_lines(f, a->usage ? a->usage : c->usage);
    fputc('\n', f);
    wrap(f, a->desc ? a->desc : c->desc, 0, 0, 110);
    /* a group: its commands */
    size_t pl = strlen(c->path);
    bool group = false;
    for (size_t i = 0; i < SL_ARRAY_SIZE(cmds); i++) {
        if (strncmp(cmds[i].path, c->path, pl) || cmds[i].path[pl] != ' ')
            continue;
        const struct cli_cmd *s = resolve(&cmds[i]);
        if (!group)
            fprintf(f, "\nCommands:\n");
        group = true;
        fprintf(f, "  shale %-22s ", cmds[i].path);
        wrap(f, s->desc, 31, 31, 110);
    }
    struct flag_print fp = { f, 0 };
    each_flag(c, flag_width, &fp);
    if (fp.width) {
        fprintf(f, "\nFlags:\n");
        each_flag(c, print_flag, &fp);
    } else if (!group) {
        fprintf(f, "\nFlags: none\n");
    }
    fprintf(f, "\nExamples:\n");
    for (int i = 0; i < 2 && c->ex[i]; i++)
        fprintf(f, "  shale %s\n", c->ex[i]);
    /* the other spellings */
    bool other = false;
    for (size_t i = 0; i < SL_ARRAY_SIZE(cmds); i++) {
        if (resolve(&cmds[i]) != c || &cmds[i] == c)
            continue;
        fprintf(f, "%s shale %s", other ? "," : "\nAlso spelled:", cmds[i].path);
        other = true;
    }
    if (other)
        fputc('\n', f);
    return 0;
}

int cli_usage(const char *path)
{
    const struct cli_cmd *a = find(path), *c = resolve(a);
    if (!c)
        return 1;
    const char *u = a->usage ? a->usage : c->usage;
    size_t l = strcspn(u, "\n");
    fprintf(stderr, "Error: missing or wrong arguments; usage: shale %.*s%s (`shale %s --help` for more)\n", (int)l,
            u, u[l] ? " ..." : "", path);
    return 1;
}

void cli_help_overview(FILE *f, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct cli_cmd *c = resolve(find(names[i]));
        const char *desc = c ? c->desc : "";
        const struct cli_cmd *a = find(names[i]);
        if (a && a->alias_of) {
            char *d = sl_xasprintf("= %s", a->alias_of);
            fprintf(f, "  %-12s", names[i]);
            wrap(f, d, 14, 14, 110);
            free(d);
        } else {
            fprintf(f, "  %-12s", names[i]);
            wrap(f, desc, 14, 14, 110);
        }
    }
}

/* ---- shale search WORD ---- */

struct search {
    const char *word;
    const char *path;
    struct table *t;
    int hits;
};

static void search_flag(const struct cli_flag *fl, void *arg)
{
    struct search *s = arg;
    if (!strcasestr(fl->spec, s->word) && !strcasestr(fl->meaning, s->word))
        return;
    char *cmd = sl_xasprintf("shale %s %s", s->path, fl->spec);
    table_row(s->t, cmd, fl->meaning);
    free(cmd);
    s->hits++;
}

int cmd_search(int argc, char **argv)
{
    struct opts o;
    if (cli_opts(&o, "search", argc, argv) < 0)
        return 1;
    if (o.argc != 1 || !o.argv[0][0])
        return cli_usage("search");
    struct search s = { .word = o.argv[0], .t = table_new(2, "COMMAND", "WHAT IT DOES") };
    for (size_t i = 0; i < SL_ARRAY_SIZE(cmds); i++) {
        const struct cli_cmd *c = resolve(&cmds[i]);
        s.path = cmds[i].path;
        const char *d = cmds[i].desc ? cmds[i].desc : c->desc;
        if (strcasestr(cmds[i].path, s.word) || strcasestr(d, s.word)) {
            char *cmd = sl_xasprintf("shale %s", cmds[i].path);
            char *desc = cmds[i].alias_of && !cmds[i].desc ? sl_xasprintf("= shale %s", cmds[i].alias_of)
                                                           : sl_xstrdup(d);
            table_row(s.t, cmd, desc);
            free(cmd);
            free(desc);
            s.hits++;
        }
        if (!cmds[i].alias_of)
            each_flag(c, search_flag, &s);
    }
    if (s.hits)
        table_print(s.t, stdout, !cli_no_headers);
    else
        fprintf(stderr, "Error: no command or flag mentions \"%s\" (`shale --help` lists the commands)\n", s.word);
    table_free(s.t);
    return s.hits ? 0 : 1;
}

int cli_help_unknown_sub(const char *group, const char *word, char *near, size_t n)
{
    size_t gl = strlen(group);
    bool is_group = false;
    int bd = 3;
    near[0] = 0;
    for (size_t i = 0; i < SL_ARRAY_SIZE(cmds); i++) {
        const char *p = cmds[i].path;
        if (strncmp(p, group, gl) || p[gl] != ' ' || strchr(p + gl + 1, ' '))
            continue;
        is_group = true;
        if (!strcmp(p + gl + 1, word))
            return 0;
        int d = cli_distance(word, p + gl + 1);
        if (d < bd && d <= (int)strlen(p + gl + 1) / 2) {
            bd = d;
            snprintf(near, n, "%s", p);
        }
    }
    return is_group;
}

/* ---- for shell completion (completion.c) ---- */

void cli_help_paths(void (*fn)(void *arg, const char *path), void *arg)
{
    for (size_t i = 0; i < SL_ARRAY_SIZE(cmds); i++)
        fn(arg, cmds[i].path);
}

struct flag_cb {
    void (*fn)(void *arg, const char *flag);
    void *arg;
};

static void flag_cb(const struct cli_flag *f, void *arg)
{
    struct flag_cb *cb = arg;
    char nm[4][40], full[48];
    bool valued;
    const char *canon;
    int n = flag_names(f->spec, nm, &valued, &canon);
    for (int i = 0; i < n; i++) {
        snprintf(full, sizeof(full), "%s%s", strlen(nm[i]) > 1 ? "--" : "-", nm[i]);
        cb->fn(cb->arg, full);
    }
}

int cli_help_flags(const char *path, void (*fn)(void *arg, const char *flag), void *arg)
{
    const struct cli_cmd *c = resolve(find(path));
    if (!c)
        return -1;
    struct flag_cb cb = { fn, arg };
    each_flag(c, flag_cb, &cb);
    return 0;
}
