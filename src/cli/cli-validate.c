/* nanolet validate PATH...: the check an operator runs before dropping a
 * file into the manifests directory. It reads files exactly as the agent
 * does (same parser, limits, ignore rules, trust check and duplicate
 * resolution), so "valid" here means the agent will accept it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "daemon-config.h"
#include "fileio.h"
#include "getopt-util.h"
#include "kubelet-compat.h"
#include "log.h"
#include "manifest.h"
#include "quantity.h"
#include "source.h"
#include "string-util.h"
#include "strv.h"

typedef struct ValidateContext {
        const char *node_name;
        size_t max_size;
        bool quiet;
        bool check_trust;
        /* --strict-kubelet: what kubelet would do otherwise is a failure */
        bool strict_kubelet;
        KubeletSourceKind kubelet_source;
        PodConfig *config;
        unsigned n_files, n_bad_files, n_objects, n_differences;
        bool duplicate_found;
} ValidateContext;

static void on_config_event(const SourceEvent *ev, void *userdata) {
        ValidateContext *c = userdata;

        /* Only duplicates across files reach this: per-file problems were
         * reported when each file was parsed. */
        if (ev->type != SOURCE_EVENT_ERROR || !ev->errors || ev->errors->n_errors == 0)
                return;
        diagnostics_print(ev->errors, stderr);
        c->duplicate_found = true;
}

static int validate_buffer(ValidateContext *c, const char *path, const char *buf, size_t size) {
        _cleanup_diagnostics_ Diagnostics d;
        ManifestObject **objs = NULL;
        size_t n = 0;
        int r;

        diagnostics_init(&d);
        _cleanup_free_ char *source_id = strprintf("file:%s", path);
        _cleanup_free_ char *shown = str_escape(path, 0); /* a file name is anyone's */
        if (!source_id || !shown)
                return log_oom();
        ManifestParseOptions o = {
                .filename = path,
                .node_name = c->node_name,
                .source_id = source_id,
                .config_source = "file",
        };
        r = manifest_parse_buffer(buf, size, &o, &objs, &n, &d);
        if (r >= 0 && n == 0) {
                diagnostics_add(&d, DIAG_ERROR, path, 0, 0, NULL,
                                "no manifest document in the file");
                r = -EINVAL;
        }
        if (r < 0 && d.n_errors == 0)
                diagnostics_add(&d, DIAG_ERROR, path, 0, 0, NULL, "cannot parse: %s", strerror(-r));
        if (r >= 0 && c->strict_kubelet) {
                /* every warning is something kubelet does not do the same way
                 * (an ignored or unknown field), so all of them count */
                size_t before = d.n_warnings;
                int k = kubelet_compat_check(buf, size, path, c->kubelet_source, &d);
                if (k == -ENOMEM)
                        return log_oom();
                c->n_differences += before + (k > 0 ? (unsigned)k : 0);
        }
        diagnostics_print(&d, stderr);
        c->n_files++;
        if (r < 0) {
                c->n_bad_files++;
                if (!c->quiet)
                        printf("%s: INVALID (%zu error%s)\n", shown, d.n_errors,
                               d.n_errors == 1 ? "" : "s");
                return 0;
        }
        for (size_t i = 0; i < n; i++) {
                if (!c->quiet)
                        printf("%s: OK: %s %s/%s (uid %s)\n", shown,
                               manifest_kind_to_string(objs[i]->kind), objs[i]->namespace,
                               objs[i]->name, objs[i]->uid);
                c->n_objects++;
        }
        r = pod_config_set_origin(c->config, "file", path, objs, n);
        manifest_objects_free(objs, n);
        return r;
}

static int validate_file(ValidateContext *c, int dir_fd, const char *name, const char *path) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *shown = str_escape(path, 0);
        size_t size;
        int r;

        if (!shown)
                return log_oom();
        if (streq(path, "-"))
                fd = dup(STDIN_FILENO);
        else
                fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                fprintf(stderr, "%s: cannot open: %m\n", shown);
                c->n_files++;
                c->n_bad_files++;
                return 0;
        }
        if (c->check_trust && !streq(path, "-")) {
                _cleanup_free_ char *reason = NULL, *reason_shown = NULL;
                if (manifest_path_check_trust(fd, path, &reason) < 0) {
                        reason_shown = reason ? str_escape(reason, 0) : NULL;
                        fprintf(stderr,
                                "%s: warning: %s (the agent refuses it unless "
                                "--allow-insecure-manifests)\n",
                                shown, reason_shown ? reason_shown : "not trusted");
                }
        }
        r = read_full_fd(fd, c->max_size, &buf, &size);
        if (r < 0) {
                if (r == -EFBIG)
                        fprintf(stderr, "%s: file is larger than the limit of %zu bytes\n", shown,
                                c->max_size);
                else
                        fprintf(stderr, "%s: cannot read: %s\n", shown, strerror(-r));
                c->n_files++;
                c->n_bad_files++;
                return 0;
        }
        return validate_buffer(c, path, buf, size);
}

static int validate_directory(ValidateContext *c, const char *path) {
        _cleanup_closedir_ DIR *dir = opendir(path);
        _cleanup_strv_free_ char **names = NULL;
        int r;

        if (!dir) {
                fprintf(stderr, "%s: cannot open directory: %m\n", path);
                c->n_bad_files++;
                return 0;
        }
        for (struct dirent *de; (de = readdir(dir));) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                r = strv_extend(&names, de->d_name);
                if (r < 0)
                        return log_oom();
        }
        /* Sorted, as the agent resolves duplicates in sorted path order. */
        strv_sort(names);
        STRV_FOREACH(name, names) {
                _cleanup_free_ char *full = strprintf("%s/%s", path, *name);
                if (!full)
                        return log_oom();
                struct stat st;
                if (fstatat(dirfd(dir), *name, &st, 0) < 0 || !S_ISREG(st.st_mode))
                        continue;
                int k = manifest_filename_classify(*name);
                if (k == 0 && !c->quiet) {
                        _cleanup_free_ char *shown = str_escape(full, 0);
                        printf("%s: ignored (backup, editor or package-manager file)\n",
                               shown ? shown : "?");
                }
                if (k <= 0)
                        continue;
                r = validate_file(c, dirfd(dir), *name, full);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void help(void) {
        printf("Usage: nanolet validate [OPTIONS] PATH...\n\n"
               "Check manifest files (or every manifest in a directory; '-' reads stdin)\n"
               "exactly as the agent would read them. Problems are printed as\n"
               "file:line: field: message. Exit status 1 if any file is invalid.\n\n"
               "  --hostname-override NAME   node name used for pod names and UIDs\n"
               "  --max-manifest-size BYTES  largest file accepted [10Mi]\n"
               "  --strict-kubelet[=file|url]  also report, and fail on, everything kubelet\n"
               "                             would treat differently (read from its manifest\n"
               "                             directory, or from staticPodURL)\n"
               "  -q, --quiet                print problems only\n");
}

int cli_validate(int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "quiet", no_argument, NULL, 'q' },
                { "hostname-override", required_argument, NULL, 'H' },
                { "max-manifest-size", required_argument, NULL, 'M' },
                { "strict-kubelet", optional_argument, NULL, 'K' },
                {},
        };
        _cleanup_(nanolet_config_deinit) NanoletConfig config;
        _cleanup_(pod_config_freep) PodConfig *pods = NULL;
        ValidateContext c = { .max_size = 10 * 1024 * 1024, .check_trust = true };
        char err[512];
        int r, opt;

        r = nanolet_config_init(&config);
        if (r < 0)
                return log_oom(), EXIT_ERROR;
        optind = 0;
        while ((opt = getopt_whole(argc, argv, "hq", options, false, err, sizeof err)) >= 0)
                switch (opt) {
                case 'h':
                        help();
                        return EXIT_OK;
                case 'q':
                        c.quiet = true;
                        break;
                case 'H':
                        free(config.hostname_override);
                        config.hostname_override = strdup(optarg);
                        if (!config.hostname_override)
                                return log_oom(), EXIT_ERROR;
                        break;
                case 'M': {
                        Quantity q;
                        if (quantity_parse(optarg, &q) < 0 || q.value <= 0) {
                                fprintf(stderr,
                                        "nanolet validate: invalid --max-manifest-size \"%s\"\n",
                                        optarg);
                                return EXIT_USAGE;
                        }
                        c.max_size = (size_t)q.value;
                        break;
                }
                case 'K':
                        c.strict_kubelet = true;
                        if (!optarg || streq(optarg, "file"))
                                c.kubelet_source = KUBELET_SOURCE_FILE;
                        else if (streq(optarg, "url"))
                                c.kubelet_source = KUBELET_SOURCE_URL;
                        else {
                                _cleanup_free_ char *shown = str_escape(optarg, 0);
                                fprintf(stderr,
                                        "nanolet validate: --strict-kubelet takes \"file\" or "
                                        "\"url\", not \"%s\"\n",
                                        shown ? shown : "?");
                                return EXIT_USAGE;
                        }
                        break;
                default:
                        fprintf(stderr, "nanolet validate: %s\n", err);
                        return EXIT_USAGE;
                }
        if (optind >= argc) {
                fprintf(stderr, "nanolet validate: no PATH given\n");
                return EXIT_USAGE;
        }
        if (nanolet_config_finish(&config) < 0)
                return EXIT_ERROR;
        c.node_name = config.node_name;
        r = pod_config_new(&pods, on_config_event, &c);
        if (r < 0)
                return log_oom(), EXIT_ERROR;
        c.config = pods;

        for (int i = optind; i < argc; i++) {
                struct stat st;
                if (!streq(argv[i], "-") && stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
                        r = validate_directory(&c, argv[i]);
                else
                        r = validate_file(&c, AT_FDCWD, argv[i], argv[i]);
                if (r < 0)
                        return EXIT_ERROR;
        }
        r = pod_config_commit(pods);
        if (r < 0)
                return EXIT_ERROR;

        if (c.strict_kubelet && c.n_differences > 0) {
                if (!c.quiet)
                        printf("%u difference%s from kubelet\n", c.n_differences,
                               c.n_differences == 1 ? "" : "s");
                if (c.n_bad_files == 0 && !c.duplicate_found)
                        return EXIT_ERROR;
        }
        if (c.n_bad_files > 0 || c.duplicate_found) {
                if (!c.quiet)
                        printf("%u of %u file(s) invalid%s\n", c.n_bad_files, c.n_files,
                               c.duplicate_found ? "; duplicate pods found" : "");
                return EXIT_ERROR;
        }
        if (!c.quiet)
                printf("%u file(s), %u object(s): all valid\n", c.n_files, c.n_objects);
        return EXIT_OK;
}
