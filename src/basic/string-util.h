/* String helpers the C library lacks. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

/* Returns the rest of s after prefix, or NULL. */
const char *startswith(const char *s, const char *prefix) _pure_;
bool endswith(const char *s, const char *suffix) _pure_;
/* asprintf() that returns the string, or NULL on ENOMEM. */
char *strprintf(const char *fmt, ...) _printf_(1, 2);
/* Duplicates at most n bytes; NULL on ENOMEM. */
char *strndup_safe(const char *s, size_t n);
/* Bounded append into a growable buffer; returns 0 or -ENOMEM. */
int strbuf_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n);
/* Parses a plain decimal unsigned number (digits only, no sign, no
 * spaces): 0, -EINVAL or -ERANGE. */
int safe_atou(const char *s, unsigned *ret);

/* Longest container ID accepted (runc itself takes more; 128 keeps conmon's
 * paths, the exit files and the CNI cache file names short). */
#define CONTAINER_ID_MAX 128
/* A container ID as the runtime and the CNI plugins get it, also used as a
 * single path component (bundle, exit file, CNI cache file): 1 to
 * CONTAINER_ID_MAX of [A-Za-z0-9_.-] (ASCII, whatever the locale), and
 * neither "." nor "..". */
bool container_id_valid(const char *id) _pure_;

/* The length of the well-formed UTF-8 sequence at s (at most n bytes; the
 * rules of Unicode table 3-7, which jansson and Go apply too: no overlong
 * form, no surrogate, nothing above U+10FFFF), or 0 when none starts there. */
size_t utf8_sequence_length(const char *s, size_t n) _pure_;
/* A NUL-terminated copy of s[0..len) that any JSON encoder accepts: every
 * byte that does not start a well-formed sequence, and every NUL byte, is
 * replaced by U+FFFD, one per byte, as Go's encoding/json does (so kubelet
 * shows the same). For strings from containers (termination messages,
 * runtime errors quoting them). NULL on ENOMEM. */
char *utf8_make_valid(const char *s, size_t len);
