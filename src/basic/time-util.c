#include "time-util.h"

#include <stdio.h>

usec_t now_usec(clockid_t clock) {
        struct timespec ts;
        clock_gettime(clock, &ts);
        return (usec_t)ts.tv_sec * USEC_PER_SEC + (usec_t)ts.tv_nsec / 1000;
}

char *format_rfc3339(char *buf, size_t size, usec_t realtime) {
        time_t t = (time_t)(realtime / USEC_PER_SEC);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
        return buf;
}
