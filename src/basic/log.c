/* The logger is the one piece of process-wide state: it is configured once
 * by main() before any other work and only read afterwards. */
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int max_level = LOG_INFO;
static int journal = -1;

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
}

static const char level_letter[] = { 'F', 'A', 'C', 'E', 'W', 'N', 'I', 'D' };

int log_internalv(int level, int error, const char *file, int line, const char *func,
                  const char *format, va_list ap) {
        int saved = errno;
        char msg[4096];
        int r = error < 0 ? -error : error;

        errno = r; /* lets %m in the format refer to the error passed in */
        vsnprintf(msg, sizeof msg, format, ap);

        if (journal > 0)
                fprintf(stderr, "<%d>%s\n", level, msg);
        else {
                /* klog-like prefix so lines read like kubelet's */
                struct timespec ts;
                struct tm tm;
                clock_gettime(CLOCK_REALTIME, &ts);
                localtime_r(&ts.tv_sec, &tm);
                fprintf(stderr, "%c%02d%02d %02d:%02d:%02d.%06ld %s\n", level_letter[level & 7],
                        tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                        ts.tv_nsec / 1000, msg);
        }
        (void)file;
        (void)line;
        (void)func;
        errno = saved;
        return -r;
}

int log_internal(int level, int error, const char *file, int line, const char *func,
                 const char *format, ...) {
        va_list ap;
        va_start(ap, format);
        int r = log_internalv(level, error, file, line, func, format, ap);
        va_end(ap);
        return r;
}
