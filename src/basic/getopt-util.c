/* See getopt-util.h. */
#include "getopt-util.h"

#include <stdio.h>
#include <string.h>

/* The flag of an argv element as written, up to '=': escaped and cut so a
 * hostile command line cannot forge output. */
static void flag_name(const char *arg, char *buf, size_t size) {
        size_t n = 0;
        for (size_t i = 0; arg[i] && arg[i] != '=' && n + 5 < size; i++) {
                unsigned char ch = (unsigned char)arg[i];
                if (i >= 64) {
                        n += (size_t)snprintf(buf + n, size - n, "...");
                        break;
                }
                if (ch >= 0x21 && ch < 0x7f && ch != '\\')
                        buf[n++] = (char)ch;
                else
                        n += (size_t)snprintf(buf + n, size - n, "\\x%02x", ch);
        }
        buf[n] = 0;
}

/* Whether the argv element names a long option of longopts by its whole
 * name (single dash allowed when long_only). */
static const struct option *whole_long_option(const char *arg, const struct option *longopts,
                                              bool long_only) {
        const char *name;
        if (arg[0] != '-')
                return NULL;
        if (arg[1] == '-')
                name = arg + 2;
        else if (long_only)
                name = arg + 1;
        else
                return NULL;
        size_t len = strcspn(name, "=");
        for (const struct option *o = longopts; o && o->name; o++)
                if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
                        return o;
        return NULL;
}

int getopt_whole(int argc, char **argv, const char *optstring, const struct option *longopts,
                 bool long_only, char *err, size_t err_size) {
        char spec[128], flag[300];
        size_t skip = (optstring[0] == '+' || optstring[0] == '-') ? 1 : 0;
        /* optind 0 asks getopt to start over, at element 1 */
        int idx = -1, before = optind > 0 ? optind : 1, opt;

        /* A leading ':' tells a missing argument from an unknown option. */
        (void)snprintf(spec, sizeof spec, "%.*s:%s", (int)skip, optstring, optstring + skip);
        err[0] = 0;
        opterr = 0;
        opt = long_only ? getopt_long_only(argc, argv, spec, longopts, &idx)
                        : getopt_long(argc, argv, spec, longopts, &idx);
        if (opt == -1)
                return -1;

        if (opt != '?' && opt != ':') {
                if (idx < 0)
                        return opt; /* a short option */
                /* The element that named it: the one before a separate
                 * argument getopt took from the next element. */
                const char *arg = optarg && optind >= 2 && optarg == argv[optind - 1] &&
                                                  longopts[idx].has_arg != no_argument
                                          ? argv[optind - 2]
                                          : argv[optind - 1];
                if (whole_long_option(arg, longopts, long_only) == &longopts[idx])
                        return opt;
                flag_name(arg, flag, sizeof flag);
                (void)snprintf(err, err_size, "unknown flag: %s", flag);
                return '?';
        }

        /* getopt moves past an element it is done with; while optind stays,
         * it is still inside a cluster of short options. */
        const char *arg = optind == before && optind < argc ? argv[optind]
                          : optind > 0 && optind - 1 < argc ? argv[optind - 1]
                                                            : "-";
        bool is_long = optopt == 0 || (arg[0] == '-' && arg[1] == '-') ||
                       (long_only && (strchr(arg, '=') || whole_long_option(arg, longopts, true)));
        flag_name(arg, flag, sizeof flag);
        if (is_long)
                (void)snprintf(err, err_size, "%s: %s",
                               !whole_long_option(arg, longopts, long_only) ? "unknown flag"
                               : opt == ':' ? "flag needs an argument"
                                            : "flag does not take a value",
                               flag);
        else if (optopt < 0x21 || optopt >= 0x7f)
                (void)snprintf(err, err_size, "unknown shorthand flag: '\\x%02x' in %s",
                               (unsigned)(unsigned char)optopt, flag);
        else
                (void)snprintf(err, err_size, "%s: '%c' in %s",
                               opt == ':' ? "flag needs an argument" : "unknown shorthand flag",
                               optopt, flag);
        return '?';
}
