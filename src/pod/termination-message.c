/* See termination-message.h. */
#include "termination-message.h"

#include <errno.h>
#include <string.h>

#include "string-util.h"

bool termination_message_from_log_wanted(TerminationMessagePolicy policy, int exit_code,
                                         const char *file_message) {
        return policy == TERMINATION_MESSAGE_FALLBACK_TO_LOGS_ON_ERROR && exit_code != 0 &&
               isempty(file_message);
}

/* The text of one CRI record "<time> <stream> <tags> <text>" (line without
 * its newline), and whether it is partial; false if it does not parse. */
static bool record_text(const char *line, size_t len, const char **ret_text, size_t *ret_len,
                        bool *ret_partial) {
        const char *p = line, *end = line + len;
        const char *field[3];
        size_t field_len[3];

        for (size_t i = 0; i < 3; i++) {
                const char *sp = memchr(p, ' ', (size_t)(end - p));
                if (!sp || sp == p)
                        return false;
                field[i] = p;
                field_len[i] = (size_t)(sp - p);
                p = sp + 1;
        }
        bool out = field_len[1] == 6 &&
                   (memcmp(field[1], "stdout", 6) == 0 || memcmp(field[1], "stderr", 6) == 0);
        /* the first tag, up to ':' */
        size_t tag = strcspn(field[2], ":");
        tag = tag < field_len[2] ? tag : field_len[2];
        if (!out || tag != 1 || (field[2][0] != 'P' && field[2][0] != 'F'))
                return false;
        *ret_text = p;
        *ret_len = (size_t)(end - p);
        *ret_partial = field[2][0] == 'P';
        return true;
}

/* Prepends n bytes of s to the kept text, which ends at buf + cap and
 * holds *kept bytes; what would go beyond cap is the older text and
 * is left out. */
static void prepend(char *buf, size_t cap, size_t *kept, const char *s, size_t n) {
        size_t room = cap - *kept;
        if (n > room) {
                s += n - room;
                n = room;
        }
        memcpy(buf + cap - *kept - n, s, n);
        *kept += n;
}

int termination_message_from_log(const char *data, size_t size, bool truncated, char **ret) {
        char buf[TERMINATION_LOG_BYTES];
        size_t kept = 0, lines = 0;
        const char *end = data + size;

        /* From the end, record by record: the last line counts even without
         * its newline (a log cut short), the empty rest after the final
         * newline does not. */
        while (end > data && lines < TERMINATION_LOG_LINES && kept < sizeof buf) {
                bool newline = end < data + size;
                const char *line_end = end;
                const char *start = line_end;
                while (start > data && start[-1] != '\n')
                        start--;
                if (newline || line_end > start) {
                        const char *text;
                        size_t len;
                        bool partial;
                        lines++;
                        if (start == data && truncated) {
                                /* cut by the read: no header left to see */
                                text = start;
                                len = (size_t)(line_end - start);
                                partial = false;
                        } else if (!record_text(start, (size_t)(line_end - start), &text, &len,
                                                &partial)) {
                                len = 0;
                                partial = true;
                        }
                        if (newline && !partial)
                                prepend(buf, sizeof buf, &kept, "\n", 1);
                        if (len > 0)
                                prepend(buf, sizeof buf, &kept, text, len);
                }
                end = start > data ? start - 1 : data;
                if (start == data)
                        break;
        }
        if (kept == 0) {
                *ret = NULL;
                return 0;
        }
        *ret = utf8_make_valid(buf + sizeof buf - kept, kept);
        return *ret ? 0 : -ENOMEM;
}
