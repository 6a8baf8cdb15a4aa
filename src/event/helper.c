/* See helper.h. */
#include "helper.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "fileio.h"
#include "json-util.h"
#include "log.h"
#include "self-helper.h"
#include "spawn.h"
#include "string-util.h"
#include "strv.h"

/* errno values are below 4096 (the kernel's MAX_ERRNO). */
#define ERRNO_MAX 4095

static void *field(void *args, const HelperArg *a) {
        return (char *)args + a->offset;
}

static const void *field_const(const void *args, const HelperArg *a) {
        return (const char *)args + a->offset;
}

/* ---- the command line ---- */

static bool name_valid(const char *s) {
        if (!s || !*s)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
                        return false;
        return true;
}

static size_t type_size(HelperArgType t) {
        switch (t) {
        case HELPER_ARG_TYPE_STRING:
                return sizeof(const char *);
        case HELPER_ARG_TYPE_U64:
                return sizeof(uint64_t);
        case HELPER_ARG_TYPE_I64:
                return sizeof(int64_t);
        case HELPER_ARG_TYPE_STRV:
                return sizeof(char *const *);
        case _HELPER_ARG_TYPE_MAX:
        case _HELPER_ARG_TYPE_INVALID:
                break;
        }
        return 0;
}

int helper_mode_verify(const HelperMode *m) {
        if (!m || !name_valid(m->name) || (m->n_args > 0 && !m->args))
                return -EINVAL;
        for (size_t i = 0; i < m->n_args; i++) {
                const HelperArg *a = &m->args[i];
                size_t size = type_size(a->type);
                if (!name_valid(a->name) || size == 0 || a->offset + size > m->args_size)
                        return -EINVAL;
                for (size_t k = 0; k < i; k++)
                        if (streq(m->args[k].name, a->name))
                                return -EINVAL;
        }
        return 0;
}

static int argv_push(char ***argv, const char *name, const char *value) {
        char *s = strprintf("--%s=%s", name, value);
        if (!s || strv_consume(argv, s) < 0) {
                free(s);
                return -ENOMEM;
        }
        return 0;
}

static int argv_push_arg(char ***argv, const HelperArg *a, const void *args) {
        const void *p = field_const(args, a);
        char num[24];

        switch (a->type) {
        case HELPER_ARG_TYPE_STRING: {
                const char *v = *(const char *const *)p;
                if (!v)
                        return a->required ? -EINVAL : 0;
                return argv_push(argv, a->name, v);
        }
        case HELPER_ARG_TYPE_U64:
                (void)snprintf(num, sizeof num, "%" PRIu64, *(const uint64_t *)p);
                return argv_push(argv, a->name, num);
        case HELPER_ARG_TYPE_I64:
                (void)snprintf(num, sizeof num, "%" PRId64, *(const int64_t *)p);
                return argv_push(argv, a->name, num);
        case HELPER_ARG_TYPE_STRV: {
                char *const *v = *(char *const *const *)p;
                if (!v || !v[0])
                        return a->required ? -EINVAL : 0;
                STRV_FOREACH(s, v) {
                        int r = argv_push(argv, a->name, *s);
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        case _HELPER_ARG_TYPE_MAX:
        case _HELPER_ARG_TYPE_INVALID:
                break;
        }
        return -EINVAL;
}

int helper_argv_new(const HelperMode *m, const void *args, char ***ret) {
        _cleanup_strv_free_ char **argv = NULL;

        if (!m || !args || !ret)
                return -EINVAL;
        if (strv_extend(&argv, self_helper_exe()) < 0 || strv_extend(&argv, SELF_HELPER_VERB) < 0 ||
            strv_extend(&argv, m->name) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_args; i++) {
                int r = argv_push_arg(&argv, &m->args[i], args);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(argv);
        return 0;
}

static const HelperArg *arg_find(const HelperMode *m, const char *name, size_t len) {
        for (size_t i = 0; i < m->n_args; i++)
                if (strlen(m->args[i].name) == len && strncmp(m->args[i].name, name, len) == 0)
                        return &m->args[i];
        return NULL;
}

/* Decimal digits only: no sign, no space, no empty string, no overflow. */
static int parse_u64(const char *s, uint64_t *ret) {
        uint64_t v = 0;
        if (!*s)
                return -EINVAL;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return -EINVAL;
                unsigned d = (unsigned)(*s - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *ret = v;
        return 0;
}

static int parse_i64(const char *s, int64_t *ret) {
        bool neg = *s == '-';
        uint64_t v;
        int r = parse_u64(s + neg, &v);
        if (r < 0)
                return r;
        if (v > (uint64_t)INT64_MAX + neg)
                return -ERANGE;
        *ret = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
        return 0;
}

static int strv_append_borrowed(char ***l, char *s) {
        size_t n = strv_length(*l);
        char **t = realloc(*l, (n + 2) * sizeof(char *));
        if (!t)
                return -ENOMEM;
        t[n] = s;
        t[n + 1] = NULL;
        *l = t;
        return 0;
}

static int arg_set(const HelperArg *a, void *args, char *value, bool seen, Error *err) {
        void *p = field(args, a);
        int r;

        if (seen && a->type != HELPER_ARG_TYPE_STRV)
                return error_set(err, -EINVAL, "argument --%s given twice", a->name);
        switch (a->type) {
        case HELPER_ARG_TYPE_STRING:
                *(const char **)p = value;
                return 0;
        case HELPER_ARG_TYPE_U64:
                r = parse_u64(value, (uint64_t *)p);
                break;
        case HELPER_ARG_TYPE_I64:
                r = parse_i64(value, (int64_t *)p);
                break;
        case HELPER_ARG_TYPE_STRV:
                if (strv_append_borrowed((char ***)p, value) < 0)
                        return error_set(err, -ENOMEM, "out of memory");
                return 0;
        case _HELPER_ARG_TYPE_MAX:
        case _HELPER_ARG_TYPE_INVALID:
        default:
                return error_set(err, -EINVAL, "argument --%s has no type", a->name);
        }
        if (r < 0)
                return error_set(err, -EINVAL, "argument --%s: \"%.64s\" is not a%s number",
                                 a->name, value,
                                 a->type == HELPER_ARG_TYPE_U64 ? "n unsigned 64-bit" : " 64-bit");
        return 0;
}

static int args_parse(const HelperMode *m, int argc, char *const *argv, void *args, bool *seen,
                      Error *err) {
        for (int i = 0; i < argc; i++) {
                const char *name = startswith(argv[i], "--");
                const char *eq = name ? strchr(name, '=') : NULL;
                if (!eq)
                        return error_set(err, -EINVAL, "argument \"%.64s\" is not --NAME=VALUE",
                                         argv[i]);
                const HelperArg *a = arg_find(m, name, (size_t)(eq - name));
                if (!a)
                        return error_set(err, -EINVAL, "unknown argument \"--%.*s\"",
                                         (int)MIN((size_t)(eq - name), (size_t)64), name);
                size_t k = (size_t)(a - m->args);
                int r = arg_set(a, args, (char *)eq + 1, seen[k], err);
                if (r < 0)
                        return r;
                seen[k] = true;
        }
        for (size_t k = 0; k < m->n_args; k++)
                if (m->args[k].required && !seen[k])
                        return error_set(err, -EINVAL, "argument --%s is missing", m->args[k].name);
        return 0;
}

int helper_args_parse(const HelperMode *m, int argc, char *const *argv, void *args, Error *err) {
        if (!m || argc < 0 || (argc > 0 && !argv) || !args)
                return error_set(err, -EINVAL, "invalid helper arguments");
        _cleanup_free_ bool *seen = calloc(m->n_args + 1, sizeof(bool));
        if (!seen)
                return error_set(err, -ENOMEM, "out of memory");
        int r = args_parse(m, argc, argv, args, seen, err);
        if (r < 0)
                helper_args_done(m, args);
        return r;
}

void helper_args_done(const HelperMode *m, void *args) {
        if (!m || !args)
                return;
        for (size_t i = 0; i < m->n_args; i++)
                if (m->args[i].type == HELPER_ARG_TYPE_STRV) {
                        char ***p = field(args, &m->args[i]);
                        free(*p); /* the strings are argv's */
                        *p = NULL;
                }
}

/* ---- the helper process ---- */

static int result_write(int fd, json_t *result, int r, const Error *err) {
        json_t *v = json_integer(r);
        if (!v || json_object_set_new(result, "result", v) < 0)
                return -ENOMEM;
        if (r < 0) {
                const char *msg = err && err->message[0] ? err->message : strerror(-r);
                /* A message may quote a registry or a file name: whatever
                 * its bytes, the result stays valid JSON. */
                _cleanup_free_ char *valid = utf8_make_valid(msg, strlen(msg));
                if (!valid || json_object_set_new(result, "error", json_string(valid)) < 0)
                        return -ENOMEM;
        } else
                (void)json_object_del(result, "error");
        _cleanup_free_ char *out = json_dumps(result, JSON_COMPACT);
        if (!out)
                return -ENOMEM;
        int k = write_all(fd, out, strlen(out));
        return k < 0 ? k : write_all(fd, "\n", 1);
}

/* The result channel is the stdout the helper was started with; stdout
 * itself becomes stderr while the mode runs. So whatever a mode or a
 * library prints cannot corrupt the result; and the channel, close-on-
 * exec, reaches EOF when the helper exits, not when a process it started
 * does. */
static int result_channel(void) {
        int fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return STDOUT_FILENO;
        if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
                (void)close(fd);
                return STDOUT_FILENO;
        }
        return fd;
}

int helper_main(const HelperMain *const *mains, size_t n, int argc, char *const *argv) {
        _cleanup_json_ json_t *result = json_object();
        const HelperMain *hm = NULL;
        const char *name = argc > 0 ? argv[0] : "";
        Error err = {};
        int r;

        /* "result" and "error" first, whatever the mode adds: a reader
         * sees the outcome at the start of the line. */
        if (!result || json_object_set_new(result, "result", json_integer(0)) < 0 ||
            json_object_set_new(result, "error", json_null()) < 0)
                return log_oom(), EXIT_FAILURE;
        int out = result_channel();
        for (size_t i = 0; i < n && argc > 0; i++)
                if (streq(mains[i]->mode->name, name))
                        hm = mains[i];
        if (!hm) {
                r = error_set(&err, -EINVAL, "unknown helper mode \"%.64s\"", name);
                log_error("%s", err.message);
        } else {
                const HelperMode *m = hm->mode;
                _cleanup_free_ void *args = calloc(1, m->args_size ?: 1);
                r = args ? helper_args_parse(m, argc - 1, argv + 1, args, &err)
                         : error_set(&err, -ENOMEM, "out of memory");
                if (r < 0)
                        log_error("Internal helper mode \"%s\": %s", m->name, err.message);
                else {
                        r = hm->run(args, result, &err);
                        helper_args_done(m, args);
                }
        }
        (void)fflush(stdout);
        int w = result_write(out, result, r, &err);
        if (out != STDOUT_FILENO) {
                (void)dup2(out, STDOUT_FILENO);
                (void)close(out);
        }
        if (w < 0)
                log_error_errno(w, "Internal helper mode \"%.64s\": cannot write the result: %m",
                                name);
        if (!hm)
                return 2;
        return w < 0 || r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ---- the agent's side ---- */

static size_t result_max(const HelperSpawnOptions *o) {
        return o->result_max > 0 ? o->result_max : HELPER_RESULT_MAX_DEFAULT;
}

/* The command line and environment every helper gets. */
static int command_new(const HelperSpawnOptions *o, char ***ret_argv, char ***ret_env) {
        if (!o || !o->mode || !o->args)
                return -EINVAL;
        int r = helper_argv_new(o->mode, o->args, ret_argv);
        if (r < 0)
                return r;
        r = self_helper_env(ret_env);
        if (r < 0)
                *ret_argv = strv_free(*ret_argv);
        return r;
}

int helper_spawn(Event *e, const HelperSpawnOptions *o, child_done_t done, void *userdata,
                 Child **ret) {
        _cleanup_strv_free_ char **argv = NULL, **env = NULL;
        int r = command_new(o, &argv, &env);
        if (r < 0)
                return r;
        ChildOptions co = {
                .argv = argv,
                .envp = env,
                .input = o->input,
                .input_size = o->input_size,
                .capture = o->stderr_max > 0 ? CHILD_CAPTURE_SEPARATE : CHILD_CAPTURE_STDOUT,
                /* One byte more than a result may have: a result that big
                 * shows as truncated, not as a shorter valid one. */
                .stdout_max = result_max(o) + 1,
                .stderr_max = o->stderr_max,
                .timeout = o->timeout,
        };
        return child_spawn(e, &co, done, userdata, ret);
}

/* The outcome a well-formed result states: its "result" (with "error"),
 * or -EIO with why there is none. */
static int result_of(json_t *j, Error *err, Error *why) {
        if (!json_is_object(j))
                return error_set(why, -EIO, "its output is not a JSON object");
        json_t *res = json_object_get(j, "result");
        if (!json_is_integer(res))
                return error_set(why, -EIO, "its output has no integer \"result\"");
        json_int_t r = json_integer_value(res);
        if (r < -ERRNO_MAX || r > INT_MAX)
                return error_set(why, -EIO,
                                 "its \"result\" %" JSON_INTEGER_FORMAT " is out of range", r);
        if (r < 0) {
                const char *msg = json_string_value(json_object_get(j, "error"));
                (void)error_set(err, (int)r, "%s", !isempty(msg) ? msg : strerror((int)-r));
        }
        return (int)r;
}

int helper_result_parse(const char *what, const char *out, size_t n, bool truncated, int code,
                        int status, json_t **ret, Error *err) {
        _cleanup_json_ json_t *j = NULL;
        Error why = {};

        if (ret)
                *ret = NULL;
        if (code == CLD_KILLED || code == CLD_DUMPED)
                return error_set(err, -EINTR, "%s was killed by signal %d", what, status);
        if (code != CLD_EXITED)
                return error_set(err, -EIO, "%s failed (not reaped by the agent)", what);
        if (truncated)
                (void)error_set(&why, -EIO, "its output is too long for a result");
        else if (!out || n == 0)
                (void)error_set(&why, -EIO, "it wrote no result");
        else if (memchr(out, 0, n))
                (void)error_set(&why, -EIO, "its output holds a NUL byte");
        else {
                json_error_t jerr;
                j = json_loadb(out, n, JSON_REJECT_DUPLICATES, &jerr);
                if (!j)
                        (void)error_set(&why, -EIO, "its output is not JSON: %s", jerr.text);
                else {
                        int r = result_of(j, err, &why);
                        if (!why.error) {
                                if (ret)
                                        *ret = TAKE_PTR(j);
                                return r;
                        }
                }
        }
        return error_set(err, -EIO, "%s failed (exit status %d: %s)", what, status, why.message);
}

int helper_child_result(const Child *c, const char *what, json_t **ret, Error *err) {
        int code, status;
        size_t n;
        const char *out = child_stdout(c, &n);

        child_get_status(c, &code, &status);
        if (child_timed_out(c) && (code == CLD_KILLED || code == CLD_DUMPED)) {
                if (ret)
                        *ret = NULL;
                return error_set(err, -EINTR, "%s was killed by signal %d (timed out)", what,
                                 status);
        }
        return helper_result_parse(what, out, n, child_stdout_truncated(c), code, status, ret, err);
}

/* ---- typed members ---- */

int helper_json_u64(const json_t *obj, const char *key, uint64_t *ret) {
        json_t *v = json_object_get(obj, key);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
                return -EBADMSG;
        *ret = (uint64_t)json_integer_value(v);
        return 0;
}

int helper_json_str(const json_t *obj, const char *key, size_t max, const char **ret) {
        json_t *v = json_object_get(obj, key);
        if (!json_is_string(v) || json_string_length(v) > max)
                return -EBADMSG;
        *ret = json_string_value(v);
        return 0;
}
