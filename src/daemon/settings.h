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

enum {
        /* In the file, 0 means "use the default": kubelet's defaulting turns
         * a zero duration or count into the default, and kubeadm writes
         * "0s" for every duration it leaves to kubelet. */
        SETTING_FILE_ZERO_IS_DEFAULT = 1 << 0,
        /* A duration that may be 0 (off / no minimum). */
        SETTING_ZERO_ALLOWED = 1 << 1,
        /* The setting may hold several values: a flag given twice adds. */
        SETTING_REPEATABLE = 1 << 2,
};

typedef struct Setting Setting;
/* Parses one flag value (or file scalar) of a SETTING_CUSTOM setting, or
 * checks one element of a SETTING_STRING/SETTING_STRV one; on -EINVAL
 * *ret_error says why in a sentence fragment. */
typedef int (*SettingParser)(NanoletConfig *c, const Setting *s, const char *value,
                             char **ret_error);

struct Setting {
        const char *flag; /* without "--"; NULL: file only */
        const char *key;  /* KubeletConfiguration key; NULL: flag only */
        SettingType type;
        SettingDisposition disposition;
        unsigned flags;
        size_t offset;             /* into NanoletConfig (honoured only) */
        int64_t min, max;          /* SETTING_INT bounds; SETTING_DURATION minimum in usec */
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
