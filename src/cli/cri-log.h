/* The CRI container log format, as conmon writes it and kubelet reads it:
 * one record per physical line,
 *
 *     <RFC3339Nano timestamp> <stdout|stderr> <tags> <text>\n
 *
 * where the first tag is "P" (partial: the text continues in the next record
 * of the same stream) or "F" (full). This module parses records, joins
 * partial ones into logical lines (per stream, as stdout and stderr
 * interleave) and tolerates damaged records. It does no I/O: callers feed it
 * bytes from whatever file they read (plain, rotated, followed). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum CriStream {
        CRI_STREAM_STDOUT,
        CRI_STREAM_STDERR,
        _CRI_STREAM_MAX,
        _CRI_STREAM_INVALID = -22,
} CriStream;

const char *cri_stream_to_string(CriStream s);
CriStream cri_stream_from_string(const char *s, size_t len);

/* A record's timestamp as written, bounded (RFC3339Nano is at most 35 bytes). */
#define CRI_TIME_MAX 48

/* One physical record. Pointers point into the parsed buffer. */
typedef struct CriLogRecord {
        int64_t timestamp; /* nanoseconds since the epoch */
        const char *time_str;
        size_t time_len;
        CriStream stream;
        bool partial;
        const char *text;
        size_t text_len; /* without the newline */
} CriLogRecord;

/* Parses "2024-05-01T10:00:00.123456789Z" or "...+02:00" (fraction optional)
 * into nanoseconds since the epoch. Returns 0 or -EINVAL. */
int timestamp_parse_rfc3339(const char *s, size_t len, int64_t *ret_nsec);

/* Parses one physical line (without its newline). Returns 0 or -EINVAL. */
int cri_log_record_parse(const char *line, size_t len, CriLogRecord *ret);

/* A logical line: partial records joined. Valid during the callback only. */
typedef struct CriLogLine {
        int64_t timestamp;    /* of its first record */
        const char *time_str; /* NUL-terminated */
        CriStream stream;
        const char *text;
        size_t text_len;
} CriLogLine;

/* Returns 0 to go on, negative to stop feeding (the error is passed back). */
typedef int (*CriLogLineFn)(const CriLogLine *line, void *userdata);

typedef struct CriLogPartial {
        char *buf;
        size_t len, cap;
        bool active;
        int64_t timestamp;
        char time_str[CRI_TIME_MAX];
} CriLogPartial;

typedef struct CriLogReader {
        CriLogLineFn fn;
        void *userdata;
        /* bytes of a physical line whose newline has not been read yet */
        char *pending;
        size_t pending_len, pending_cap;
        CriLogPartial partial[_CRI_STREAM_MAX];
        unsigned n_bad; /* records that did not parse (skipped) */
} CriLogReader;

/* A physical line longer than this is cut and parsed as it is, so a file
 * without newlines cannot make the reader grow without bound. */
#define CRI_LOG_LINE_MAX (4U * 1024U * 1024U)

void cri_log_reader_init(CriLogReader *r, CriLogLineFn fn, void *userdata);
void cri_log_reader_deinit(CriLogReader *r);
/* Feeds raw file bytes; complete logical lines go to fn. */
int cri_log_reader_feed(CriLogReader *r, const char *data, size_t size);
/* At the end of a file (or of everything): parses a trailing line that has no
 * newline and emits joined partial lines that never got their "F" record. */
int cri_log_reader_flush(CriLogReader *r);
