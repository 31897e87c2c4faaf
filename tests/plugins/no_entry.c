/* SPDX-License-Identifier: MIT
 * no_entry.c: a shared object without the sl_plugin_entry symbol; refused. */
#include "shale_plugin.h"

int not_a_plugin(void);
SL_PLUGIN_EXPORT int not_a_plugin(void)
{
    return 42;
}
