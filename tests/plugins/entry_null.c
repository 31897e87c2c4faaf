/* SPDX-License-Identifier: MIT
 * entry_null.c: sl_plugin_entry declines to load, with a reason; refused. */
#include <stdio.h>

#include "shale_plugin.h"

SL_PLUGIN_EXPORT const struct sl_plugin *sl_plugin_entry(const struct sl_host_api *h, char *err, size_t errlen)
{
    snprintf(err, errlen, "test_entry_null: needs host ABI minor 7, have %u", h->abi_minor);
    return NULL;
}
