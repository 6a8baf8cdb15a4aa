/* String helpers the C library lacks. */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

/* Returns the rest of s after prefix, or NULL. */
const char *startswith(const char *s, const char *prefix) _pure_;
bool endswith(const char *s, const char *suffix) _pure_;
/* asprintf() that returns the string, or NULL on ENOMEM. */
char *strprintf(const char *fmt, ...) _printf_(1, 2);
char *strvprintf(const char *fmt, va_list ap) _printf_(1, 0);
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

/* Escaping text that came from outside (registries, manifests, CNI plugins,
 * container output) for a terminal or a line-oriented log, as Go's %q
 * writes a string's body: printable UTF-8 is kept; control characters
 * (C0, DEL, the C1 range U+0080-U+009F), the line and paragraph separators
 * U+2028/U+2029, the byte-order mark and the bidirectional controls
 * (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069, which reorder what
 * a terminal shows) become \n, \r, \t, \a, \b, \f, \v, \xNN (ASCII) or \uNNNN; a
 * byte that does not start a well-formed UTF-8 sequence (overlong, surrogate,
 * truncated, above U+10FFFF) becomes \xNN. The result has no byte below
 * 0x20 and no DEL, so it cannot end a line, move the cursor or set a title. */
typedef enum EscapeFlags {
        ESCAPE_QUOTE = 1 << 0, /* also '"' and '\\' (a body for "..."); else they stay */
} EscapeFlags;

/* Longest escape of one character ("\u202e"), without NUL. */
#define ESCAPE_ONE_MAX 6

/* Escapes the character at s (n > 0 bytes available; NUL is a character
 * here) into out, which gets *ret_out_len bytes (no NUL). Returns the bytes
 * of s consumed, at least 1. */
size_t escape_one(const char *s, size_t n, EscapeFlags flags, char out[static ESCAPE_ONE_MAX],
                  size_t *ret_out_len);
/* Whether escaping s[0..len) would change it. */
bool escape_needed(const char *s, size_t len, EscapeFlags flags) _pure_;
/* The escape of s[0..len), NUL-terminated; NULL on ENOMEM. */
char *str_escape_n(const char *s, size_t len, EscapeFlags flags);
/* The same for a C string (NULL gives ""). */
char *str_escape(const char *s, EscapeFlags flags);
