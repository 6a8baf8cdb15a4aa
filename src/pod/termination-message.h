/* A container's termination message from the end of its log, as kubelet
 * makes it for terminationMessagePolicy FallbackToLogsOnError
 * (readLastStringFromContainerLogs): the text of the last
 * TERMINATION_LOG_LINES records of the CRI log, stdout and stderr as they
 * interleave, a full record's text with its newline and a partial one's
 * without, of which the last TERMINATION_LOG_BYTES bytes are kept (a
 * circular buffer: the end of the log, not its start). Pure: the caller
 * reads the file's tail. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "pod.h"

#define TERMINATION_LOG_LINES 80   /* MaxContainerTerminationMessageLogLines */
#define TERMINATION_LOG_BYTES 2048 /* MaxContainerTerminationMessageLogLength */
/* How much of the log's end the caller reads: the last 80 records'
 * headers and the 2 KiB kept fit many times over. */
#define TERMINATION_LOG_READ (16U * 1024U)

/* Whether the log replaces the message: the policy asks for it, the
 * container failed and the message file gave nothing (missing or empty;
 * a file that could not be read gives its error instead). */
bool termination_message_from_log_wanted(TerminationMessagePolicy policy, int exit_code,
                                         const char *file_message);

/* The message from data, the last size bytes of the log file (truncated:
 * earlier bytes were left out, so the first line may be cut: its bytes
 * are taken as text). Records that do not parse are skipped. Bytes that
 * are not UTF-8 become U+FFFD. *ret is NULL when the log gave no text.
 * 0 or -ENOMEM. */
int termination_message_from_log(const char *data, size_t size, bool truncated, char **ret);
