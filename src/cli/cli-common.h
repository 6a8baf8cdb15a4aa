/* What the client subcommands (pods, ps, inspect, logs, exec) share: the
 * common directory flags, loading the agent's status files
 * (docs/internals/state-files.md), resolving a POD argument, kubectl's STATUS and AGE
 * columns, tables, JSON→YAML, and running the runtime binary. Functions
 * return 0/-errno; only the cli_* entry points turn that into exit codes. */
#pragma once

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cleanup.h"
#include "json-util.h"
#include "cri-log.h"

#define CLI_DEFAULT_ROOT_DIR "/var/lib/nanolet"
#define CLI_DEFAULT_RUN_DIR "/run/nanolet"
#define CLI_DEFAULT_POD_LOGS_DIR "/var/log/pods"
#define CLI_DEFAULT_RUNTIME "runc"

/* Status files larger than this are refused (a pod's status is a few KiB). */
#define CLI_STATUS_FILE_MAX (16U * 1024U * 1024U)

typedef struct CliCommon {
        const char *prog; /* "nanolet pods", for messages */
        const char *root_dir;
        const char *run_dir;
        const char *pod_logs_dir;
        const char *runtime;
        bool runtime_set; /* --runtime given explicitly */
} CliCommon;

enum {
        CLI_ARG_ROOT_DIR = 0x1000,
        CLI_ARG_RUN_DIR,
        CLI_ARG_POD_LOGS_DIR,
        CLI_ARG_RUNTIME,
        _CLI_ARG_COMMON_MAX,
};

/* clang-format off */
#define CLI_COMMON_OPTIONS                                                     \
        { "root-dir", required_argument, NULL, CLI_ARG_ROOT_DIR },             \
        { "run-dir", required_argument, NULL, CLI_ARG_RUN_DIR },               \
        { "pod-logs-dir", required_argument, NULL, CLI_ARG_POD_LOGS_DIR },     \
        { "runtime", required_argument, NULL, CLI_ARG_RUNTIME }
/* clang-format on */

#define CLI_COMMON_HELP                                                                            \
        "  --root-dir DIR      state directory (default " CLI_DEFAULT_ROOT_DIR ")\n"               \
        "  --run-dir DIR       runtime state and status files (default " CLI_DEFAULT_RUN_DIR ")\n" \
        "  --pod-logs-dir DIR  container logs (default " CLI_DEFAULT_POD_LOGS_DIR ")\n"            \
        "  --runtime NAME      OCI runtime binary, runc or crun (default: from the\n"              \
        "                      container ID, else " CLI_DEFAULT_RUNTIME ")\n"                      \
        "  -h, --help          show this help\n"

void cli_common_init(CliCommon *c, const char *prog);
/* Returns true when opt was one of CLI_COMMON_OPTIONS (and stores arg). */
bool cli_common_option(CliCommon *c, int opt, const char *arg);

/* ---- small JSON accessors (NULL-tolerant) ---- */
/* Follows object keys, NULL-terminated: cli_json_path(pod, "status", "phase", NULL). */
json_t *cli_json_path(const json_t *j, ...) __attribute__((sentinel));
const char *cli_json_str(const json_t *j, const char *key);
bool cli_json_flag(const json_t *j, const char *key);
/* A metav1.Time field as nanoseconds since the epoch; 0 when absent or bad. */
int64_t cli_json_time(const json_t *j, const char *key);

/* ---- status files ---- */
typedef struct CliPod {
        json_t *json;          /* the v1 Pod */
        char *file;            /* status file it was read from */
        const char *namespace; /* borrowed from json */
        const char *name;
        const char *uid;
        const char *node; /* spec.nodeName, may be NULL */
} CliPod;

typedef struct CliPodList {
        CliPod *pods;
        size_t n;
} CliPodList;

void cli_pod_list_done(CliPodList *l);
/* Checks that j looks like a v1 Pod; fills a CliPod borrowing from it.
 * Returns 0 or -EINVAL with a reason. */
int cli_pod_from_json(json_t *j, CliPod *ret, const char **ret_reason);
/* Reads <run-dir>/status/ *.json sorted by namespace/name. A malformed or
 * half-written file is skipped with a warning on stderr naming it; a missing
 * directory is an empty list. */
int cli_pods_load(const CliCommon *c, CliPodList *ret);
/* The same, printing the failure for the subcommands. */
int cli_pods_load_or_report(const CliCommon *c, CliPodList *ret);
/* Reads <run-dir>/status/sources.json: a JSON array of error objects
 * ({"source","origin","since","messages","items"}, docs/internals/state-files.md); an
 * empty array when there is none. */
int cli_source_errors_load(const CliCommon *c, json_t **ret);

/* ---- events ---- */
/* The v1 Events of pod uid from <run-dir>/status/events/<uid>.json
 * (docs/internals/state-files.md), oldest first; an empty array when it has none. */
int cli_events_load(const CliCommon *c, const char *uid, json_t **ret);
/* kubectl's age of an event: "2m", or "10s (x3 over 2m)" when it repeated. */
char *cli_event_format_age(char *buf, size_t size, const json_t *ev, int64_t now);
/* kubectl describe's Events section (Type, Reason, Age, From, Message), or
 * "Events:  <none>". 0 or -ENOMEM. */
int cli_events_print_describe(const json_t *items, int64_t now, FILE *f);

/* Resolves "name" or "namespace/name", with or without the node suffix
 * ("etcd" matches "etcd-node1"), or a pod UID. -ENOENT when nothing matches,
 * -ENOTUNIQ when several do; *ret_message then says why (candidates listed). */
int cli_pod_resolve(const CliPodList *l, const char *query, const CliPod **ret_pod,
                    char **ret_message);
/* Resolves and prints the error in one go, for the subcommands. */
int cli_pod_find(const CliCommon *c, const CliPodList *l, const char *query,
                 const CliPod **ret_pod);

/* ---- kubectl's printer ---- */
typedef struct PodSummary {
        char *status;          /* STATUS column: "Running", "Init:0/2", ... */
        unsigned ready, total; /* READY column */
        unsigned restarts;
        int64_t last_restart; /* ns since epoch, 0 = none */
} PodSummary;

/* Computes the columns as kubectl's printPod does. */
int cli_pod_summarize(const json_t *pod, PodSummary *ret);
void cli_pod_summary_done(PodSummary *s);
/* RESTARTS column: "3" or "3 (5m ago)". buf of 64 bytes. */
char *cli_pod_format_restarts(char *buf, size_t size, const PodSummary *s, int64_t now);

/* kubectl's duration.HumanDuration ("45s", "3m2s", "5h", "2d"); buf of 32. */
char *cli_format_age(char *buf, size_t size, int64_t nsec);
/* Age of a timestamp (ns since epoch), "<unknown>" when 0. */
char *cli_format_age_since(char *buf, size_t size, int64_t then, int64_t now);
/* docker's units.HumanDuration as crictl prints it ("5 minutes"). */
char *cli_format_human_duration(char *buf, size_t size, int64_t nsec);
int64_t cli_now_nsec(void);
/* go_duration_parse() without a sign: "10m", "1h30m", "2.5s", "300ms". */
int cli_parse_go_duration(const char *s, int64_t *ret_nsec);

/* ---- containers ---- */
/* Finds a container by name in spec.containers or spec.initContainers;
 * ret_status gets the matching entry of status.(init)containerStatuses or
 * NULL. -ENOENT when there is no such container. */
int cli_pod_find_container(const json_t *pod, const char *name, json_t **ret_spec,
                           json_t **ret_status, bool *ret_is_init);
/* The container to use when -c is not given (kubectl's rule: the
 * kubectl.kubernetes.io/default-container annotation, else the only
 * container). -ENOTUNIQ with a message listing the names otherwise. */
int cli_pod_default_container(const json_t *pod, const char **ret_name, char **ret_message);
/* POD [-c CONTAINER] as logs and exec take them: resolves the pod, picks the
 * default container when *container is NULL, and finds its status entry.
 * Prints what went wrong and returns < 0 on failure. */
/* pod_arg may also be a container ID prefix (no -c then): when no pod is
 * called so, cli_container_id_resolve() is asked. */
int cli_container_find(const CliCommon *c, const CliPodList *l, const char *pod_arg,
                       const char **container, const CliPod **ret_pod, json_t **ret_status);
/* A container by a prefix of its ID (crictl's habit: any unique prefix,
 * the 13 characters `nanolet ps` shows are one), current or previous
 * attempt, with or without the "runc://" scheme. 0 with the pod, the
 * container's name and its status; -ENOENT when no ID starts so; -ENOTUNIQ
 * when several do, *ret_message then lists them (the caller prints it). */
int cli_container_id_resolve(const CliPodList *l, const char *prefix, const CliPod **ret_pod,
                             const char **ret_name, json_t **ret_status, char **ret_message);
/* "runc://abc" → "abc" (and the scheme, "runc", into ret_scheme if given). */
const char *cli_container_id_strip(const char *id, char **ret_scheme);

/* The runtime binary for a container: --runtime when given, else the
 * containerID's scheme when it is runc or crun, else runc. */
const char *cli_runtime_for(const CliCommon *c, const char *container_id);
/* The runtime's state root, <run-dir>/runc (docs/internals/state-files.md). */
char *cli_runtime_root(const CliCommon *c);

/* ---- output ---- */
typedef struct CliTable {
        size_t n_columns;
        char **cells; /* row-major, header first */
        size_t n_cells;
} CliTable;

int cli_table_init(CliTable *t, const char *const *header, size_t n_columns);
void cli_table_done(CliTable *t);
/* Appends one row of n_columns strings (copied; NULL prints as ""). */
int cli_table_add_row(CliTable *t, const char *const *row);
/* Columns separated by three spaces as kubectl's tabwriter does. */
void cli_table_print(const CliTable *t, FILE *f);
/* The same with indent before each row (kubectl describe's sections). */
void cli_table_print_indented(const CliTable *t, const char *indent, FILE *f);

/* Writes j as a YAML document (keys sorted, as kubectl -o yaml) with libyaml's
 * emitter; strings that would read back as another type are quoted. */
int cli_json_dump_yaml(const json_t *j, FILE *f);

/* Runs argv with spawn() (PATH lookup, the CLI's own environment, stdin
 * from /dev/null) and collects its stdout and stderr (each at most 16 MiB).
 * *ret_status is the wait status; a program that cannot be executed reads
 * as exit status 127 with "cannot execute ..." on stderr, as from a shell. */
int cli_run_capture(char *const *argv, char **ret_out, char **ret_err, int *ret_status);
