/* The one settings table: every flag of `nanolet serve` and every
 * KubeletConfiguration key, with its type, default, bounds, help text and
 * what nanolet does with it. The flag parser, the KubeletConfiguration
 * loader, the defaults of nanolet_config_init(), `nanolet serve --help` and
 * the FIELDS section of nanolet-config(5) all read this table, so they cannot
 * disagree.
 *
 * Dispositions:
 * - honoured: parsed, range-checked and used;
 * - ignored: kubelet's own setting that has no meaning without an apiserver
 *   or a feature nanolet does not have; accepted (so kubeadm's files and
 *   kubelet's command line work unchanged) with exactly one warning naming
 *   the reason;
 * - rejected: a kubelet setting whose promise nanolet cannot keep; a value
 *   other than kubelet's default stops the agent.
 * Anything not in the table: an unknown flag is a usage error, an unknown
 * file key a warning (kubelet's strict decoding warns too). */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "daemon-config.h"
#include "diag.h"

typedef enum SettingType {
        SETTING_STRING,
        SETTING_DURATION,   /* usec_t; Go duration, a bare number is seconds */
        SETTING_INT,        /* int64_t in [min, max] */
        SETTING_BOOL,       /* bool; a bare flag means true, as pflag */
        SETTING_QUANTITY,   /* int64_t bytes, > 0 ("10Mi") */
        SETTING_STRV,       /* char **; flag: comma-separated, repeatable */
        SETTING_HEADERS,    /* map[string][]string -> "Key: Value" list */
        SETTING_EVICTION,   /* map[string]string -> "signal<value" list */
        SETTING_SIGNAL_MAP, /* map[string]string -> "signal=value" list */
        SETTING_RESERVED,   /* {cpu, memory, ...} -> two int64_t (milli-CPU, bytes) */
        SETTING_OBJECT,     /* a structure (authentication, logging ...); only ignored */
        SETTING_CUSTOM,     /* parsed by the setting's own function */
        _SETTING_TYPE_MAX,
        _SETTING_TYPE_INVALID = -EINVAL,
} SettingType;

typedef enum SettingDisposition {
        SETTING_HONOURED,
        SETTING_IGNORED,
        SETTING_REJECTED,
        _SETTING_DISPOSITION_MAX,
        _SETTING_DISPOSITION_INVALID = -EINVAL,
} SettingDisposition;

/* What a string value may hold. Every kind, SETTING_CHECK_TEXT included,
 * refuses control characters (C0, DEL, C1: a CR or LF would start a new
 * line in resolv.conf, a header or a log line), malformed UTF-8 and more
 * than SETTING_VALUE_MAX bytes; the kinds add the syntax of where the
 * value ends up. Flags and file values go through the same check, for
 * each element of a list or map. */
typedef enum SettingCheck {
        SETTING_CHECK_TEXT,        /* only the rules above */
        SETTING_CHECK_WORD,        /* printable ASCII, no space (image references, signals) */
        SETTING_CHECK_PATH,        /* an absolute path without "." or ".." components */
        SETTING_CHECK_PATH_LIST,   /* absolute paths separated by ':' */
        SETTING_CHECK_DNS_DOMAIN,  /* an RFC 1123 subdomain, lowercase, at most 253 bytes */
        SETTING_CHECK_NODE_NAME,   /* an RFC 1123 subdomain of at most 63 bytes, any case */
        SETTING_CHECK_IP,          /* an IPv4 or IPv6 address */
        SETTING_CHECK_CIDR,        /* ADDRESS/PREFIX */
        SETTING_CHECK_URL,         /* http:// or https:// and printable ASCII */
        SETTING_CHECK_HTTP_HEADER, /* "Name: value", an RFC 9110 token and printable ASCII */
        SETTING_CHECK_HOST_PORT,   /* HOST[:PORT] */
        SETTING_CHECK_SYSCTL,      /* a sysctl name, or a prefix ending in '*' */
        _SETTING_CHECK_MAX,
        _SETTING_CHECK_INVALID = -EINVAL,
} SettingCheck;

/* Longest string value accepted (PATH_MAX). */
#define SETTING_VALUE_MAX 4096
/* Most elements in a list or map setting, file or flags: far beyond any
 * real configuration, and a bound on the work a hostile one costs. */
#define SETTING_ENTRIES_MAX 1024
/* Longest duration accepted where a setting names none: one year. Larger
 * values are typos, and usec_t arithmetic on them (now + period) would
 * come close to overflowing. */
#define SETTING_DURATION_MAX (365 * 24 * 3600 * USEC_PER_SEC)

enum {
        /* In the file, 0 means "use the default": kubelet's defaulting turns
         * a zero duration or count into the default, and kubeadm writes
         * "0s" for every duration it leaves to kubelet. */
        SETTING_FILE_ZERO_IS_DEFAULT = 1 << 0,
        /* A duration that may be 0 (off / no minimum). */
        SETTING_ZERO_ALLOWED = 1 << 1,
        /* The setting may hold several values: a flag given twice adds. */
        SETTING_REPEATABLE = 1 << 2,
        /* A string that may be empty (off, or kubelet's "not set"). */
        SETTING_EMPTY_ALLOWED = 1 << 3,
};

typedef struct Setting Setting;
/* Parses one flag value (or file scalar) of a SETTING_CUSTOM setting, or
 * checks one element of a SETTING_STRING/SETTING_STRV one; on -EINVAL
 * err's message says why in a sentence fragment (the caller names the
 * flag or file:line:field). */
typedef int (*SettingParser)(NanoletConfig *c, const Setting *s, const char *value, Error *err);

struct Setting {
        const char *flag; /* without "--"; NULL: file only */
        const char *key;  /* KubeletConfiguration key; NULL: flag only */
        SettingType type;
        SettingDisposition disposition;
        unsigned flags;
        size_t offset;             /* into NanoletConfig (honoured only) */
        int64_t min, max;          /* SETTING_INT bounds; SETTING_DURATION bounds in usec
                                    * (max 0: SETTING_DURATION_MAX) */
        SettingCheck check;        /* strings, lists and maps: what each element may hold */
        const char *value;         /* default, parsed as a flag value by nanolet_config_init()
                                    * (NULL: none, or set by code); for a rejected setting,
                                    * kubelet's default, the only value accepted */
        const char *shown_default; /* how --help and the man page show the default when
                                    * it is not `value` (e.g. "the lowercase hostname") */
        const char *metavar;       /* flag argument in --help */
        const char *help;          /* honoured: what it does; otherwise: why */
        SettingParser parse;       /* SETTING_CUSTOM: parser; others: optional check */
};

/* The table, in --help order. */
extern const Setting settings_table[];
extern const size_t settings_table_size;

const Setting *settings_find_flag(const char *name);
const Setting *settings_find_key(const char *key);

const char *setting_type_to_string(SettingType t);
const char *setting_disposition_to_string(SettingDisposition d);
/* What a check kind allows, as a phrase for --help and the man page. */
const char *setting_check_to_string(SettingCheck k);

/* Checks one string element of s (a scalar, or one list or map element)
 * against s->check; -EINVAL with err saying what is wrong, without
 * quoting the hostile bytes. */
int setting_check_value(const Setting *s, const char *value, Error *err);

/* value quoted for a log line or diagnostic: control characters and
 * non-ASCII bytes escaped, at most 64 bytes shown. NULL on ENOMEM. */
char *setting_value_quote(const char *value);

/* Applies one flag value (value NULL: a bare flag). Errors are logged with
 * the flag named; returns 0, -EINVAL or -ENOMEM. replace: the first time
 * this flag is seen, so a list replaces what the file or the default had. */
int setting_apply_flag(NanoletConfig *c, const Setting *s, const char *value, bool replace);

/* The KubeletConfiguration document's fields, each through the table:
 * problems go to diag with file:line (errors for wrong types or values,
 * a warning for each ignored or unknown field; null means unset). */
int settings_apply_document(NanoletConfig *c, const void *yaml_map, const char *filename,
                            Diagnostics *diag);

/* Fills in every default of the table. */
int settings_apply_defaults(NanoletConfig *c);

/* `nanolet serve --help`. */
void settings_print_help(FILE *f);

/* The FIELDS and FLAGS sections of nanolet-config(5) in scdoc. */
void settings_print_man(FILE *f);
