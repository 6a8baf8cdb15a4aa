/* The logger is the one piece of process-wide state: it is configured once
 * by main() before any other work and only read afterwards. */
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "string-util.h"

static int max_level = LOG_INFO;
static int journal = -1;
static LogFormat log_format = LOG_FORMAT_TEXT;

void log_set_max_level(int level) {
        max_level = level < LOG_EMERG ? LOG_EMERG : level > LOG_DEBUG ? LOG_DEBUG : level;
}

int log_get_max_level(void) {
        return max_level;
}

void log_set_target_journal(int on) {
        journal = !!on;
}

void log_setup(void) {
        const char *e = getenv("NANOLET_LOG_LEVEL");
        if (e && *e) {
                char *end;
                long l = strtol(e, &end, 10);
                if (*end == 0)
                        log_set_max_level((int)l);
        }
        if (journal < 0)
                journal = getenv("JOURNAL_STREAM") != NULL;
        (void)log_format_from_string(getenv("NANOLET_LOG_FORMAT"), &log_format);
}

void log_set_format(LogFormat format) {
        log_format = format;
}

LogFormat log_get_format(void) {
        return log_format;
}

int log_format_from_string(const char *s, LogFormat *ret) {
        if (s && strcmp(s, "text") == 0)
                *ret = LOG_FORMAT_TEXT;
        else if (s && strcmp(s, "json") == 0)
                *ret = LOG_FORMAT_JSON;
        else
                return -EINVAL;
        return 0;
}

/* klog knows Info, Warning, Error and Fatal (which exits: never used). */
static char klog_severity(int level) {
        return level <= LOG_ERR ? 'E' : level == LOG_WARNING ? 'W' : 'I';
}

static const char *basename_of(const char *file) {
        const char *slash = file ? strrchr(file, '/') : NULL;
        return slash ? slash + 1 : file ? file : "?";
}

/* A JSON string body (no quotes) of s, as Go's encoder writes it: a byte
 * that does not start well-formed UTF-8 becomes U+FFFD, so the line stays
 * valid JSON whatever a registry or a container sent. */
static void fput_json_string_n(const char *s, size_t n, FILE *f) {
        for (size_t i = 0; i < n;) {
                unsigned char c = (unsigned char)s[i];
                if (c == '"' || c == '\\')
                        fprintf(f, "\\%c", c);
                else if (c == '\n')
                        fputs("\\n", f);
                else if (c == '\r')
                        fputs("\\r", f);
                else if (c == '\t')
                        fputs("\\t", f);
                else if (c < 0x20 || c == 0x7f)
                        fprintf(f, "\\u%04x", c);
                else if (c >= 0x80) {
                        size_t k = utf8_sequence_length(s + i, n - i);
                        if (k == 0)
                                fputs("\\ufffd", f);
                        else if (k == 3 && memcmp(s + i, "\xe2\x80\xa8", 3) == 0)
                                fputs("\\u2028", f);
                        else if (k == 3 && memcmp(s + i, "\xe2\x80\xa9", 3) == 0)
                                fputs("\\u2029", f);
                        else
                                fwrite(s + i, 1, k, f);
                        i += k ? k : 1;
                        continue;
                } else
                        fputc(c, f);
                i++;
        }
}

static void fput_json_string(const char *s, FILE *f) {
        fput_json_string_n(s, strlen(s), f);
}

/* Text that came from outside, escaped (string-util.h): no control
 * character reaches the line, so no value can end it early and start a
 * forged one, or drive the terminal that shows it. */
static void fput_escaped(const char *s, EscapeFlags flags, FILE *f) {
        size_t n = strlen(s);
        for (size_t i = 0; i < n;) {
                /* printable ASCII in runs, the rest one character at a time */
                size_t run = 0;
                while (i + run < n && s[i + run] >= 0x20 && s[i + run] < 0x7F &&
                       !(flags & ESCAPE_QUOTE && (s[i + run] == '"' || s[i + run] == '\\')))
                        run++;
                if (run > 0) {
                        fwrite(s + i, 1, run, f);
                        i += run;
                        continue;
                }
                char buf[ESCAPE_ONE_MAX];
                size_t k;
                i += escape_one(s + i, n - i, flags, buf, &k);
                fwrite(buf, 1, k, f);
        }
}

/* Go's %q for a text-format value (klog quotes string values). */
static void fput_go_quoted(const char *s, FILE *f) {
        fputc('"', f);
        fput_escaped(s, ESCAPE_QUOTE, f);
        fputc('"', f);
}

static void fput_kv_text(const char *const *kv, FILE *f) {
        for (const char *const *p = kv; p && p[0]; p += 2) {
                if (!p[1])
                        continue;
                fprintf(f, " %s=", p[0]);
                fput_go_quoted(p[1], f);
        }
}

/* klog.KObj's JSON form for "pod" ("ns/name" -> {"name","namespace"}). */
static void fput_kv_json(const char *const *kv, FILE *f) {
        for (const char *const *p = kv; p && p[0]; p += 2) {
                if (!p[1])
                        continue;
                fputs(",\"", f);
                fput_json_string(p[0], f);
                fputs("\":", f);
                const char *slash = strchr(p[1], '/');
                if (strcmp(p[0], "pod") == 0 && slash) {
                        fputs("{\"name\":\"", f);
                        fput_json_string(slash + 1, f);
                        fputs("\",\"namespace\":\"", f);
                        fput_json_string_n(p[1], (size_t)(slash - p[1]), f);
                        fputs("\"}", f);
                } else {
                        fputc('"', f);
                        fput_json_string(p[1], f);
                        fputc('"', f);
                }
        }
}

_printf_(6, 0) static int log_write(int level, int error, const char *file, int line,
                                    const char *const *kv, const char *format, va_list ap) {
        int saved = errno;
        char msg[4096];
        int r = error < 0 ? -error : error;
        struct timespec ts;

        errno = r; /* lets %m in the format refer to the error passed in */
        vsnprintf(msg, sizeof msg, format, ap);
        clock_gettime(CLOCK_REALTIME, &ts);

        /* One line, one write(2): the line is formatted into a memory
         * stream first. stderr is unbuffered, so formatting into it
         * directly cost one write(2) per fputc() (about 100 syscalls for a
         * line with quoted pod= and podUID= pairs, several per pod start).
         * A line longer than the buffer is cut; without memory for the
         * stream it goes to stderr as before. */
        char buf[8192];
        FILE *out = fmemopen(buf, sizeof buf, "w");
        if (!out)
                out = stderr;
        flockfile(out);
        if (log_format == LOG_FORMAT_JSON) {
                fprintf(out, "{\"ts\":%lld.%06ld,\"caller\":\"%s:%d\",\"msg\":\"",
                        (long long)ts.tv_sec, ts.tv_nsec / 1000, basename_of(file), line);
                fput_json_string(msg, out);
                fputc('"', out);
                if (level <= LOG_ERR) {
                        fputs(",\"err\":\"", out);
                        fput_json_string(r ? strerror(r) : msg, out);
                        fputc('"', out);
                } else
                        fprintf(out, ",\"v\":%d", level >= LOG_DEBUG ? 4 : 0);
                fput_kv_json(kv, out);
                fputs("}\n", out);
        } else {
                /* journald turns "<N>" into the entry's priority and keeps
                 * the rest: the klog header stays in the message, as
                 * kubelet's does, for the parsers and greps that expect it
                 * in `journalctl -o cat`. */
                if (journal > 0)
                        fprintf(out, "<%d>", level);
                struct tm tm;
                localtime_r(&ts.tv_sec, &tm);
                fprintf(out, "%c%02d%02d %02d:%02d:%02d.%06ld %7d %s:%d] ", klog_severity(level),
                        tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                        ts.tv_nsec / 1000, (int)getpid(), basename_of(file), line);
                /* klog's InfoS quotes the message; ours stay as they were
                 * (operators and tests grep them), the pairs follow. The
                 * message carries values from outside (a registry's error
                 * body, a file name, a termination message): every control
                 * character in it is escaped, so the newline below is the
                 * only one in the line, whoever wrote the text. */
                fput_escaped(msg, 0, out);
                if (kv) {
                        if (r && level <= LOG_ERR) {
                                fputs(" err=", out);
                                fput_go_quoted(strerror(r), out);
                        }
                        fput_kv_text(kv, out);
                }
                fputc('\n', out);
        }
        funlockfile(out);
        if (out != stderr) {
                (void)fflush(out);
                long n = ftell(out);
                fclose(out);
                size_t len = n > 0 ? (size_t)n : 0;
                if (len >= sizeof buf - 1) { /* cut: still one line */
                        len = sizeof buf - 1;
                        buf[len - 1] = '\n';
                }
                for (size_t off = 0; off < len;) {
                        ssize_t w = write(STDERR_FILENO, buf + off, len - off);
                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w <= 0)
                                break;
                        off += (size_t)w;
                }
        }
        errno = saved;
        return -r;
}

int log_internalv(int level, int error, const char *file, int line, const char *func,
                  const char *format, va_list ap) {
        (void)func;
        return log_write(level, error, file, line, NULL, format, ap);
}

int log_kv_internal(int level, int error, const char *file, int line, const char *const *kv,
                    const char *format, ...) {
        va_list ap;
        va_start(ap, format);
        int r = log_write(level, error, file, line, kv, format, ap);
        va_end(ap);
        return r;
}

int log_internal(int level, int error, const char *file, int line, const char *func,
                 const char *format, ...) {
        va_list ap;
        va_start(ap, format);
        int r = log_internalv(level, error, file, line, func, format, ap);
        va_end(ap);
        return r;
}
