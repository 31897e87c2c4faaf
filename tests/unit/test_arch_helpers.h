/* SPDX-License-Identifier: MIT
 * test_arch_helpers.h: for unit tests that need the shard-format and
 * sample-key plugins of the build (the planner, dsort): load them from
 * $SHALE_BUILD/lib/shale (tests/run.sh sets it; ./build otherwise), or bail
 * out of the TAP run saying why. Pair with sl_arch_fini() at the end.
 */
#ifndef SL_TEST_ARCH_HELPERS_H
#define SL_TEST_ARCH_HELPERS_H

#include "arch.h"

#include <stdio.h>
#include <stdlib.h>

static inline void tp_arch_load(void)
{
    const char *b = getenv("SHALE_BUILD");
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s/lib/shale", b && *b ? b : "build");
    struct sl_err err = { 0 };
    if (sl_arch_init(dir, &err) < 0) {
        printf("Bail out! plugins from %s: %s\n", dir, err.msg);
        exit(1);
    }
}

#endif
