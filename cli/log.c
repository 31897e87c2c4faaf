/* SPDX-License-Identifier: MIT
 * log.c: `shale log show [NODE] [--severity S]` (AIStore's `ais log show`):
 * a node's log, read through the gateway (GET /v1/reverse/daemon?what=log,
 * header Ais-Node-Id), so it works when targets take no direct requests.
 */
#include "cli.h"
#include "jsonx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NODE as p[ID], t[ID] or ID -> ID */
static char *node_id(const char *s)
{
    if ((s[0] == 'p' || s[0] == 't') && s[1] == '[') {
        size_t n = strcspn(s + 2, "]");
        return sl_xasprintf("%.*s", (int)n, s + 2);
    }
    return sl_xstrdup(s);
}

static int log_show(struct opts *o)
{
    const char *sev = opt_str(o, "severity");
    char *q = sl_xasprintf("/v1/reverse/daemon?what=log%s%s", sev ? "&severity=" : "", sev ? sev : "");
    struct cli_resp r;
    char *id = o->argc ? node_id(o->argv[0]) : NULL;
    char *h = id ? sl_xasprintf("Ais-Node-Id: %s", id) : NULL;
    if (!id) { /* the gateway's own */
        free(q);
        q = sl_xasprintf("/v1/daemon?what=log%s%s", sev ? "&severity=" : "", sev ? sev : "");
    }
    const char *hd[] = { h, NULL };
    cli_req_h("GET", q, h ? hd : NULL, NULL, 0, &r);
    int rc = 0;
    if (r.status != 200)
        rc = cli_fail(&r, NULL);
    else
        fwrite(r.body.p ? r.body.p : "", 1, r.body.len, stdout);
    cli_resp_free(&r);
    free(q);
    free(id);
    free(h);
    return rc;
}

int cmd_log(int argc, char **argv)
{
    static const struct cli_verb v[] = { { "show", log_show, NULL }, { "get", cli_log_get, NULL } };
    return cli_run_verb("log", v, SL_ARRAY_SIZE(v), argc, argv, false);
}
