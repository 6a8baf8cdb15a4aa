/* The highest generation of a signed manifest URL accepted so far
 * (docs/fleet.md), kept across restarts and reboots in one state file
 * under --root-dir, so that a replayed older document is refused even by
 * an agent that just started.
 *
 * The file holds the record of one URL (the configured one): another URL
 * starts without a record. It is JSON, written atomically, mode 0600:
 *   {"version":1,"url":"...","generation":"12","sha256":"<hex>"}
 * The agent owns it: it writes it when it accepts a higher generation and
 * never removes it (removing it is how an operator resets a box). */
#pragma once

#include "error.h"
#include "manifest-signature.h"

#define MANIFEST_GENERATION_FILE "manifest-url-generation.json"

/* Reads path's record for url. 0 with rec->have false when the file does
 * not exist or is about another URL. A file that is there but cannot be
 * used (a symlink, not a regular file, empty, larger than 4 KiB, not the
 * JSON above, another version) is a negative errno with err saying why:
 * the caller decides what it trusts then. */
int manifest_generation_load(const char *path, const char *url, ManifestGenerationRecord *ret,
                             Error *err);
/* Replaces path with rec for url. 0 or -errno with err. */
int manifest_generation_store(const char *path, const char *url,
                              const ManifestGenerationRecord *rec, Error *err);
