/* SPDX-License-Identifier: MIT
 * yamlx.h: YAML documents as JSON (libyaml), for request specs that users
 * write in either (dsort's RequestSpec, as AIStore's CLI takes it).
 */
#ifndef SL_YAMLX_H
#define SL_YAMLX_H

#include "sl.h"
#include <jansson.h>

/* Parse one YAML document of n bytes into JSON: mappings become objects
 * (keys must be scalars), sequences arrays, plain scalars null/true/false,
 * integers and floats where they read as such (YAML 1.2 core schema),
 * every other scalar a string. Aliases are expanded, within limits on depth
 * (64) and on the number of nodes produced (100000), so a small document
 * cannot expand into a huge one. Returns a new reference, or NULL with a
 * 400 in err naming the line and what is wrong. */
json_t *sl_yaml_to_json(const char *buf, size_t n, struct sl_err *err);

#endif
