/* Helper modes: the agent runs blocking file work (building a container's
 * root filesystem, compressing rotated logs) in this binary re-executed as
 * `<self_helper_exe()> SELF_HELPER_VERB <mode> ...`, never in a bare fork:
 * the agent may have threads (libcurl's resolver), and a forked copy of a
 * threaded process may only call async-signal-safe functions until it
 * execs. /proc/self/exe is the running binary even when an upgrade has
 * replaced the file on disk. main() dispatches SELF_HELPER_VERB before any
 * option parsing, and it is not in --help. How a mode's arguments and its
 * result travel is src/event/helper.h's; this file only names the
 * executable and the environment. */
#pragma once

#define SELF_HELPER_VERB "internal-helper"

/* The agent runs as nanolet-agent (libexec), a smaller executable without
 * the image unpacker and registry client, so its helper modes live in the
 * `nanolet` executable that started it: `nanolet serve` keeps that file
 * open across the exec and names it in this variable as
 * /proc/<agent pid>/fd/<n>, which stays the started binary even when an
 * upgrade has replaced the file on disk (and stays reachable from a forked
 * child that closed its own descriptors). */
#define SELF_HELPER_EXE_ENV "NANOLET_HELPER_EXE"

/* The executable to run helper modes with: SELF_HELPER_EXE_ENV's value when
 * it is a /proc path, else /proc/self/exe (an agent run in-process by
 * `nanolet serve`, or a CLI command: this binary has every mode). */
const char *self_helper_exe(void);

/* The helper's environment: child_env_new()'s plus what the logger was
 * configured from (NANOLET_LOG_LEVEL as the current level, JOURNAL_STREAM),
 * so the helper's log lines read as the agent's own. Free with strv_free(). */
int self_helper_env(char ***ret);
