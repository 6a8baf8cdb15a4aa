/* Scope-bound release of jansson values. Header-only, so src/basic itself
 * does not link jansson: only modules that already depend on it include this. */
#pragma once

#include <jansson.h>

#include "cleanup.h"

/* jansson (>= 2.9) provides json_decrefp(), the cleanup function behind its
 * json_auto_t; this is the one spelling nanolet uses for it. */
#define _cleanup_json_ _cleanup_(json_decrefp)
