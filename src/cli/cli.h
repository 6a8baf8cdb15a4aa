/* Subcommands of the nanolet executable, one file each. Each returns the
 * process exit code: 0 ok, 1 error, 2 usage. */
#pragma once

enum {
        EXIT_OK = 0,
        EXIT_ERROR = 1,
        EXIT_USAGE = 2,
};

/* `nanolet serve`: execs the agent executable (nanolet-agent, see
 * self-helper.h) in this process when it is installed or built next to this
 * binary, else runs the agent in-process with cli_serve_agent(). */
int cli_serve(int argc, char **argv);
/* The agent itself: nanolet-agent's main, or the in-process fallback. */
int cli_serve_agent(int argc, char **argv);
int cli_validate(int argc, char **argv);
int cli_version(int argc, char **argv);
int cli_image(int argc, char **argv);
int cli_pods(int argc, char **argv);
int cli_ps(int argc, char **argv);
int cli_inspect(int argc, char **argv);
int cli_events(int argc, char **argv);
int cli_logs(int argc, char **argv);
int cli_exec(int argc, char **argv);
int cli_node(int argc, char **argv);
