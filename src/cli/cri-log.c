/* CRI log records and partial-line joining; see cri-log.h. */
#include "cri-log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "string-util.h"

static const char *const cri_stream_table[_CRI_STREAM_MAX] = {
        [CRI_STREAM_STDOUT] = "stdout",
        [CRI_STREAM_STDERR] = "stderr",
};

const char *cri_stream_to_string(CriStream s) {
        if (s < 0 || s >= _CRI_STREAM_MAX)
                return NULL;
        return cri_stream_table[s];
}

CriStream cri_stream_from_string(const char *s, size_t len) {
        for (int i = 0; i < _CRI_STREAM_MAX; i++)
                if (strlen(cri_stream_table[i]) == len && memcmp(s, cri_stream_table[i], len) == 0)
                        return (CriStream)i;
        return _CRI_STREAM_INVALID;
}

static int parse_digits(const char *s, size_t n, int *ret) {
        int v = 0;
        for (size_t i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -EINVAL;
                v = v * 10 + (s[i] - '0');
        }
        *ret = v;
        return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil), so no dependency on the process time zone. */
static int64_t days_from_civil(int64_t y, int m, int d) {
        y -= m <= 2;
        int64_t era = (y >= 0 ? y : y - 399) / 400;
        int64_t yoe = y - era * 400;
        int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
        int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + doe - 719468;
}

int timestamp_parse_rfc3339(const char *s, size_t len, int64_t *ret_nsec) {
        int year, mon, day, hour, min, sec;
        int64_t frac = 0;
        size_t i;

        /* YYYY-MM-DDTHH:MM:SS */
        if (len < 20 || s[4] != '-' || s[7] != '-' ||
            (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || s[13] != ':' || s[16] != ':')
                return -EINVAL;
        if (parse_digits(s, 4, &year) < 0 || parse_digits(s + 5, 2, &mon) < 0 ||
            parse_digits(s + 8, 2, &day) < 0 || parse_digits(s + 11, 2, &hour) < 0 ||
            parse_digits(s + 14, 2, &min) < 0 || parse_digits(s + 17, 2, &sec) < 0)
                return -EINVAL;
        if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60)
                return -EINVAL;
        i = 19;
        if (i < len && s[i] == '.') {
                size_t digits = 0;
                for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++, digits++)
                        if (digits < 9)
                                frac = frac * 10 + (s[i] - '0');
                if (digits == 0)
                        return -EINVAL;
                for (; digits < 9; digits++)
                        frac *= 10;
        }
        int64_t offset = 0;
        if (i < len && (s[i] == 'Z' || s[i] == 'z')) {
                i++;
        } else if (i + 6 == len && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
                int oh, om;
                if (parse_digits(s + i + 1, 2, &oh) < 0 || parse_digits(s + i + 4, 2, &om) < 0 ||
                    oh > 23 || om > 59)
                        return -EINVAL;
                offset = (int64_t)(oh * 3600 + om * 60) * (s[i] == '+' ? 1 : -1);
                i += 6;
        } else
                return -EINVAL;
        if (i != len)
                return -EINVAL;

        int64_t secs =
                days_from_civil(year, mon, day) * 86400 + hour * 3600 + min * 60 + sec - offset;
        *ret_nsec = secs * 1000000000LL + frac;
        return 0;
}

/* Returns the next space-separated field of [*p, end) and advances past one
 * space. */
static bool next_field(const char **p, const char *end, const char **ret, size_t *ret_len) {
        const char *s = *p, *sp = memchr(s, ' ', (size_t)(end - s));
        if (!sp) {
                *ret = s;
                *ret_len = (size_t)(end - s);
                *p = end;
                return false;
        }
        *ret = s;
        *ret_len = (size_t)(sp - s);
        *p = sp + 1;
        return true;
}

int cri_log_record_parse(const char *line, size_t len, CriLogRecord *ret) {
        const char *p = line, *end = line + len, *f;
        size_t flen;
        CriLogRecord rec = {};

        if (len > 0 && line[len - 1] == '\r')
                end--;
        if (!next_field(&p, end, &f, &flen) || flen >= CRI_TIME_MAX)
                return -EINVAL;
        if (timestamp_parse_rfc3339(f, flen, &rec.timestamp) < 0)
                return -EINVAL;
        rec.time_str = f;
        rec.time_len = flen;

        bool more = next_field(&p, end, &f, &flen);
        rec.stream = cri_stream_from_string(f, flen);
        if (rec.stream < 0)
                return -EINVAL;

        /* The tag field must be there; the text may be empty and its
         * separating space may then be missing. */
        if (!more)
                return -EINVAL;
        more = next_field(&p, end, &f, &flen);
        if (flen == 0)
                return -EINVAL;
        /* Tags are ':'-separated; the first says partial or full, the others
         * are reserved and ignored (as kubelet does). */
        const char *colon = memchr(f, ':', flen);
        size_t first = colon ? (size_t)(colon - f) : flen;
        rec.partial = first == 1 && f[0] == 'P';

        rec.text = more ? p : end;
        rec.text_len = (size_t)(end - rec.text);
        *ret = rec;
        return 0;
}

void cri_log_reader_init(CriLogReader *r, CriLogLineFn fn, void *userdata) {
        *r = (CriLogReader){ .fn = fn, .userdata = userdata };
}

void cri_log_reader_deinit(CriLogReader *r) {
        if (!r)
                return;
        free(r->pending);
        for (int i = 0; i < _CRI_STREAM_MAX; i++)
                free(r->partial[i].buf);
        *r = (CriLogReader){};
}

static void copy_time(char dst[static CRI_TIME_MAX], const char *s, size_t len) {
        len = MIN(len, (size_t)CRI_TIME_MAX - 1);
        memcpy(dst, s, len);
        dst[len] = 0;
}

static int emit_partial(CriLogReader *r, CriStream s) {
        CriLogPartial *p = &r->partial[s];
        if (!p->active)
                return 0;
        CriLogLine line = {
                .timestamp = p->timestamp,
                .time_str = p->time_str,
                .stream = s,
                .text = p->buf ? p->buf : "",
                .text_len = p->len,
        };
        p->active = false;
        p->len = 0;
        return r->fn(&line, r->userdata);
}

static int handle_line(CriLogReader *r, const char *data, size_t len) {
        CriLogRecord rec;
        int k;

        if (len == 0)
                return 0;
        if (cri_log_record_parse(data, len, &rec) < 0) {
                r->n_bad++;
                return 0;
        }

        CriLogPartial *p = &r->partial[rec.stream];
        if (rec.partial || p->active) {
                if (!p->active) {
                        p->active = true;
                        p->timestamp = rec.timestamp;
                        copy_time(p->time_str, rec.time_str, rec.time_len);
                }
                if (p->len + rec.text_len > CRI_LOG_LINE_MAX) {
                        /* A runaway partial sequence: emit what we have. */
                        k = emit_partial(r, rec.stream);
                        if (k < 0)
                                return k;
                        p->active = true;
                        p->timestamp = rec.timestamp;
                        copy_time(p->time_str, rec.time_str, rec.time_len);
                }
                k = strbuf_append(&p->buf, &p->len, &p->cap, rec.text, rec.text_len);
                if (k < 0)
                        return k;
                if (rec.partial)
                        return 0;
                return emit_partial(r, rec.stream);
        }

        char ts[CRI_TIME_MAX];
        copy_time(ts, rec.time_str, rec.time_len);
        CriLogLine line = {
                .timestamp = rec.timestamp,
                .time_str = ts,
                .stream = rec.stream,
                .text = rec.text,
                .text_len = rec.text_len,
        };
        return r->fn(&line, r->userdata);
}

int cri_log_reader_feed(CriLogReader *r, const char *data, size_t size) {
        const char *p = data, *end = data + size;
        int k;

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

                if (!nl || r->pending_len > 0) {
                        /* Collect into pending until the newline arrives. */
                        size_t room = CRI_LOG_LINE_MAX - r->pending_len;
                        size_t take = MIN(n, room);
                        k = strbuf_append(&r->pending, &r->pending_len, &r->pending_cap, p, take);
                        if (k < 0)
                                return k;
                        p += take;
                        if (nl && p == nl) {
                                p++;
                        } else if (r->pending_len < CRI_LOG_LINE_MAX) {
                                continue; /* all consumed, no newline yet */
                        }
                        /* A whole line (or an over-long one, cut) is in pending. */
                        k = handle_line(r, r->pending, r->pending_len);
                        r->pending_len = 0;
                        if (k < 0)
                                return k;
                        continue;
                }
                k = handle_line(r, p, n);
                p = nl + 1;
                if (k < 0)
                        return k;
        }
        return 0;
}

int cri_log_reader_flush(CriLogReader *r) {
        int k;

        if (r->pending_len > 0) {
                k = handle_line(r, r->pending, r->pending_len);
                r->pending_len = 0;
                if (k < 0)
                        return k;
        }
        for (int i = 0; i < _CRI_STREAM_MAX; i++) {
                k = emit_partial(r, (CriStream)i);
                if (k < 0)
                        return k;
        }
        return 0;
}
