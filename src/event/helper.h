/* Helper processes: the one way the agent runs blocking file work (building
 * a container's root filesystem, a registry pull, the layer flush, log
 * rotation, disk usage walks, image GC) in the `nanolet` executable
 * re-executed in one of its helper modes (self-helper.h says why an exec
 * and not a fork). Both sides of every mode go through this module:
 *
 * 1. A mode (HelperMode) is a name and a table of named, typed arguments,
 *    each bound to a field of the mode's own argument struct. The agent
 *    fills that struct, and helper_spawn() builds the command line from the
 *    table:  <exe> internal-helper <mode> --<name>=<value> ...
 *    A list argument is repeated once per element, in order. The helper
 *    parses the command line back into the same struct by the same table
 *    (helper_main()), so the two sides cannot disagree on positions.
 *    Anything another user must not see in ps (credentials) goes as the
 *    job on stdin instead (HelperSpawnOptions.input).
 * 2. Every helper writes exactly one result: one JSON object on stdout,
 *      {"result": R, "error": "<sentence>", <the mode's own members>}
 *    R is 0 (or positive, the mode's success value) or a negative errno,
 *    and "error" is there only when R is negative. helper_main() writes it
 *    for every outcome, wrong arguments and unknown modes included; a mode
 *    adds its members to the object it is handed. The exit status is 0 when
 *    R >= 0 and the result was written, else 1 (2: no such mode). The
 *    helper's log lines go to stderr, and so does anything else printed
 *    while the mode runs: the result is all a helper writes to stdout.
 * 3. The agent reads the result with helper_result_parse(): a helper that
 *    crashed, was killed or wrote garbage must not be believed, so the
 *    output is bounded, must be one JSON object with an integer "result"
 *    in range, and a result counts only from a helper that exited. Every
 *    other outcome is a failure with a sentence saying what happened.
 *
 * The modes register themselves by layer: each module that owns a mode
 * declares its HelperMode (the interface, linked by the agent) next to its
 * agent-side code and its HelperMain (the implementation) next to the work,
 * so the agent executable links no mode's implementation; main() of
 * `nanolet` dispatches through one table of HelperMains. */
#pragma once

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "child.h"
#include "error.h"
#include "event.h"
#include "macro.h"

typedef enum HelperArgType {
        HELPER_ARG_TYPE_STRING, /* const char *; NULL: not passed */
        HELPER_ARG_TYPE_U64,    /* uint64_t, decimal digits only */
        HELPER_ARG_TYPE_I64,    /* int64_t, decimal, an optional '-' */
        HELPER_ARG_TYPE_STRV,   /* char *const *, NULL-terminated; NULL: empty */
        _HELPER_ARG_TYPE_MAX,
        _HELPER_ARG_TYPE_INVALID = -EINVAL,
} HelperArgType;

typedef struct HelperArg {
        const char *name; /* [a-z0-9-]+ */
        HelperArgType type;
        size_t offset; /* of the field in the mode's argument struct */
        bool required; /* a list: at least one element */
} HelperArg;

/* The field's offset, checked at compile time to have the C type of the
 * argument type: a table entry bound to a field of another type does not
 * build. */
#define HELPER_ARG_OFFSET_(T, field, ctype) _Generic(((T *)0)->field, ctype : offsetof(T, field))
#define HELPER_ARG_STRING(T, field, argname, req)                                                  \
        {                                                                                          \
                .name = argname, .type = HELPER_ARG_TYPE_STRING,                                   \
                .offset = HELPER_ARG_OFFSET_(T, field, const char *), .required = req              \
        }
#define HELPER_ARG_U64(T, field, argname, req)                                                     \
        {                                                                                          \
                .name = argname, .type = HELPER_ARG_TYPE_U64,                                      \
                .offset = HELPER_ARG_OFFSET_(T, field, uint64_t), .required = req                  \
        }
#define HELPER_ARG_I64(T, field, argname, req)                                                     \
        {                                                                                          \
                .name = argname, .type = HELPER_ARG_TYPE_I64,                                      \
                .offset = HELPER_ARG_OFFSET_(T, field, int64_t), .required = req                   \
        }
#define HELPER_ARG_STRV(T, field, argname, req)                                                    \
        {                                                                                          \
                .name = argname, .type = HELPER_ARG_TYPE_STRV,                                     \
                .offset = HELPER_ARG_OFFSET_(T, field, char *const *), .required = req             \
        }

/* A mode's interface: what the agent needs to start it. */
typedef struct HelperMode {
        const char *name;
        const HelperArg *args;
        size_t n_args;
        size_t args_size; /* sizeof the argument struct */
} HelperMode;

/* A mode named mode_name whose argument struct is T, described by the
 * array arg_table. */
#define HELPER_MODE_INIT(mode_name, T, arg_table)                                                  \
        {                                                                                          \
                .name = mode_name, .args = arg_table, .n_args = ELEMENTSOF(arg_table),             \
                .args_size = sizeof(T)                                                             \
        }

/* For the modes' unit tests: 0 when m's name and argument names are
 * [a-z0-9-]+, the argument names unique, each type known and each field
 * inside the struct; else -EINVAL. */
int helper_mode_verify(const HelperMode *m);

/* A mode's implementation, for the helper process. args is the parsed
 * argument struct (its strings point into argv); result is the object the
 * mode adds its members to. Returns the result (>= 0) or a negative errno
 * with err set. */
typedef int (*helper_run_t)(const void *args, json_t *result, Error *err);
typedef struct HelperMain {
        const HelperMode *mode;
        helper_run_t run;
} HelperMain;

/* ---- the command line (pure) ---- */

/* [self_helper_exe(), SELF_HELPER_VERB, mode, "--name=value", ...] from the
 * argument struct args. -EINVAL when a required argument is missing (a
 * NULL string, an empty list). */
int helper_argv_new(const HelperMode *m, const void *args, char ***ret);

/* Parses argv (what follows the mode) into args, a zeroed struct of
 * m->args_size: each element "--name=value" with a name of the table, a
 * string or number argument at most once, numbers in range, every
 * required argument present. Strings point into argv; lists are arrays
 * helper_args_done() frees. -EINVAL with err naming the first problem
 * (args is cleaned up then). */
int helper_args_parse(const HelperMode *m, int argc, char *const *argv, void *args, Error *err);
void helper_args_done(const HelperMode *m, void *args);

/* ---- the helper process ---- */

/* main() of the helper modes: argv starts at the mode, which is looked up
 * in mains[0..n). Parses the arguments, runs the mode, writes the result to
 * stdout. Returns the exit status. */
int helper_main(const HelperMain *const *mains, size_t n, int argc, char *const *argv);

/* ---- the agent's side ---- */

/* The result a helper may write, at most: bigger output is not a result. */
#define HELPER_RESULT_MAX_DEFAULT (64U * 1024U)

typedef struct HelperSpawnOptions {
        const HelperMode *mode;
        const void *args;  /* the mode's argument struct */
        const char *input; /* non-NULL: stdin from a memfd holding input */
        size_t input_size;
        size_t result_max; /* 0: HELPER_RESULT_MAX_DEFAULT */
        size_t stderr_max; /* 0: the helper's stderr is the agent's (its log lines read as the
                              agent's); else captured, at most this much */
        usec_t timeout;    /* 0: none; helper_spawn() only */
} HelperSpawnOptions;

/* Starts the helper as a Child (child.h: own process group, reaped by the
 * loop, killed by child_free()); done runs once it is reaped, and reads the
 * result with helper_child_result(). */
int helper_spawn(Event *e, const HelperSpawnOptions *o, child_done_t done, void *userdata,
                 Child **ret);
/* The outcome of a helper: its result (>= 0) or a negative errno, err set.
 * out[0..n) is what it wrote to stdout (truncated: more was written than
 * kept); code and status are waitid()'s si_code and si_status. A helper
 * killed by a signal fails with -EINTR ("<what> was killed by signal N"), one
 * that exited without a valid result with -EIO ("<what> failed (exit
 * status N: <why the output is no result>)"). Otherwise the result
 * decides: R, with err set to the helper's own sentence when R < 0
 * (strerror when it gave none). *ret (optional) is the result object when
 * there is one, even for R < 0; else NULL. */
int helper_result_parse(const char *what, const char *out, size_t n, bool truncated, int code,
                        int status, json_t **ret, Error *err);
/* helper_result_parse() of a Child started with helper_spawn(); one killed
 * on its timeout says so. */
int helper_child_result(const Child *c, const char *what, json_t **ret, Error *err);
/* ---- typed members of a result object, for the modes' parsers ---- */

/* 0 and the value, or -EBADMSG when the member is missing or not of the
 * type (a number: an integer >= 0). */
int helper_json_u64(const json_t *obj, const char *key, uint64_t *ret);
/* A string of at most max bytes; -EBADMSG otherwise. */
int helper_json_str(const json_t *obj, const char *key, size_t max, const char **ret);
