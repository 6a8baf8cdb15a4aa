/* Logging to stderr with syslog levels, in klog's text format
 * ("I1126 10:04:45.948430   12345 pod-worker.c:123] msg": severity I, W or
 * E, date, time, pid, source file and line), which kubelet's log parsers
 * and shippers read, or in kubelet's JSON format (--logging-format=json:
 * {"ts":<seconds>,"caller":"file:line","msg":…,"v":N}, "err" on errors).
 * Under systemd (JOURNAL_STREAM set) text lines carry "<N>" prefixes
 * instead of the header, so journald keeps the level and adds its own
 * time. log_*_errno() returns -abs(error) so callers can
 * "return log_error_errno(r, ...)".
 *
 * Structured lines (log_kv_*(), klog's InfoS/ErrorS): the message followed
 * by key/value pairs, text `msg pod="ns/name" podUID="…"` (klog quotes the
 * message; nanolet keeps its messages as they were, greppable), JSON the pairs
 * as fields ("pod" as klog.KObj renders it: {"name":…,"namespace":…}).
 * Verbosity (-v N, kubelet's levels): 0 prints info, warnings and errors —
 * pod lifecycle (start, kill, exit, restart, probe failures, eviction,
 * volume updates) is at 0; debug lines (source event details, state-file
 * writes, runtime calls) need -v 4 or more and carry "v":4 in JSON. */
#pragma once

#include <stdarg.h>
#include <syslog.h>

#include "macro.h"

/* Highest level that is printed: LOG_INFO by default; -v N raises it to
 * LOG_DEBUG. The logger is process configuration, set once by main(). */
void log_set_max_level(int level);
int log_get_max_level(void);
void log_set_target_journal(int on);

typedef enum LogFormat {
        LOG_FORMAT_TEXT, /* klog's header */
        LOG_FORMAT_JSON, /* kubelet's --logging-format=json */
} LogFormat;
void log_set_format(LogFormat format);
LogFormat log_get_format(void);
/* "text" or "json"; -EINVAL for anything else. */
int log_format_from_string(const char *s, LogFormat *ret);
/* Open the logger from the environment (JOURNAL_STREAM, NANOLET_LOG_LEVEL,
 * NANOLET_LOG_FORMAT: the agent's helpers write on its stderr, in its
 * format). */
void log_setup(void);

int log_internal(int level, int error, const char *file, int line, const char *func,
                 const char *format, ...) _printf_(6, 7);
int log_internalv(int level, int error, const char *file, int line, const char *func,
                  const char *format, va_list ap) _printf_(6, 0);

/* Key/value pairs for log_kv_*(): key, value, …; a NULL value drops its
 * pair (an optional containerName), a NULL key ends the list. Values are
 * strings, quoted as Go's %q in text. */
#define LOG_KV(...) ((const char *const[]){ __VA_ARGS__, NULL, NULL })

int log_kv_internal(int level, int error, const char *file, int line, const char *const *kv,
                    const char *format, ...) _printf_(6, 7);

#define log_kv_full_errno(level, error, kv, ...)                                                   \
        ({                                                                                         \
                int _l = (level), _e = (error);                                                    \
                (log_get_max_level() >= _l)                                                        \
                        ? log_kv_internal(_l, _e, __FILE__, __LINE__, (kv), __VA_ARGS__)           \
                        : -(_e < 0 ? -_e : _e);                                                    \
        })
#define log_kv_full(level, kv, ...) (void)log_kv_full_errno((level), 0, (kv), __VA_ARGS__)
#define log_kv_debug(kv, ...) log_kv_full(LOG_DEBUG, (kv), __VA_ARGS__)
#define log_kv_info(kv, ...) log_kv_full(LOG_INFO, (kv), __VA_ARGS__)
#define log_kv_warning(kv, ...) log_kv_full(LOG_WARNING, (kv), __VA_ARGS__)
#define log_kv_error(kv, ...) log_kv_full(LOG_ERR, (kv), __VA_ARGS__)

#define log_full_errno(level, error, ...)                                                          \
        ({                                                                                         \
                int _l = (level), _e = (error);                                                    \
                (log_get_max_level() >= _l)                                                        \
                        ? log_internal(_l, _e, __FILE__, __LINE__, __func__, __VA_ARGS__)          \
                        : -(_e < 0 ? -_e : _e);                                                    \
        })
#define log_full(level, ...) (void)log_full_errno((level), 0, __VA_ARGS__)

#define log_debug(...) log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_full(LOG_ERR, __VA_ARGS__)

#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, (e), __VA_ARGS__)
#define log_info_errno(e, ...) log_full_errno(LOG_INFO, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, (e), __VA_ARGS__)

/* For out-of-memory, the one error every path shares. */
#define log_oom() log_error_errno(-ENOMEM, "Out of memory.")
