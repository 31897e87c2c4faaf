/* SPDX-License-Identifier: MIT
 * advanced.c: shale advanced resilver|check-lock (ais's `advanced`
 * commands for operators).
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* advanced resilver [TARGET] [--wait]: the same job as `job start resilver` */
static int adv_resilver(struct opts *o)
{
    return cli_resilver_start(o, o->argc ? o->argv[0] : NULL);
}

/* advanced check-lock ais://B/O: whether the object's name lock is held now */
static int adv_check_lock(struct opts *o)
{
    if (o->argc < 1)
        return cli_usage("advanced check-lock");
    struct uri u;
    if (uri_parse(o->argv[0], &u, true) < 0)
        return 1;
    if (!u.obj || !u.obj[0]) {
        fprintf(stderr, "Error: \"%s\": name an object (ais://BUCKET/OBJECT), not a bucket\n", o->argv[0]);
        uri_free(&u);
        return 1;
    }
    char *p = uri_obj_path(&u, u.obj);
    char pq[8192];
    snprintf(pq, sizeof(pq), "%s%s", p, uri_query(&u));
    free(p);
    struct cli_resp r;
    cli_act("POST", pq, "check-lock", NULL, NULL, &r);
    int rc = 0;
    if (r.status == 200)
        printf("%s://%s/%s is not locked\n", u.provider, u.bucket, u.obj);
    else
        rc = cli_fail(&r, "check-lock");
    cli_resp_free(&r);
    uri_free(&u);
    return rc;
}

int cmd_advanced(int argc, char **argv)
{
    static const struct cli_verb verbs[] = { { "resilver", adv_resilver, NULL },
                                             { "check-lock", adv_check_lock, NULL } };
    return cli_run_verb("advanced", verbs, SL_ARRAY_SIZE(verbs), argc, argv, false);
}
