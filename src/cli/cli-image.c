/* nanolet image pull|load|ls|inspect|tag|rm|prune: the image store from the
 * command line (docs/images.md). Works without the agent; the store's locks
 * make it safe to run while the agent starts pods. */
#include <assert.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"
#include "cli.h"
#include "image-pull.h"
#include "image.h"
#include "log.h"
#include "settings.h"
#include "string-util.h"
#include "strv.h"

typedef struct ImageArgs {
        const char *root_dir;
        bool no_trunc;
        bool quiet;
        bool copy;
        const char *credential_file;
        const char *registries_conf;
        const char *certs_dir;
        char **insecure;
        char **args; /* positional, first is the subcommand */
} ImageArgs;

/* A setting's default, from the table `nanolet serve` reads: the image
 * commands and the agent share the names and the defaults. */
static const char *setting_default(const char *flag) {
        const Setting *s = settings_find_flag(flag);
        assert(s && s->value);
        return s->value;
}

static void help(FILE *f) {
        fprintf(f,
                "Usage: nanolet image COMMAND [OPTIONS] [ARGS]\n\n"
                "Commands:\n"
                "  pull REF           pull an image from its registry (registries.conf "
                "mirrors,\n"
                "                     certs.d CAs, docker config.json credentials)\n"
                "  load FILE|-        load an OCI or docker-save archive (.tar, .tar.gz, "
                ".tar.zst)\n"
                "  ls                 list images (REPOSITORY TAG DIGEST SIZE)\n"
                "  inspect REF        print an image's manifest, config and layers as JSON\n"
                "  tag SRC DST        add the name DST to the image SRC\n"
                "  rm REF...          remove names; an image left without names is deleted\n"
                "  prune              delete images no pod uses, and their blobs and layers\n"
                "  mount REF TARGET UPPER WORK  mount a container rootfs (debugging; --copy "
                "forces\n"
                "                     the copy fallback)\n"
                "  umount TARGET      unmount it\n\n"
                "Options (the names and defaults of nanolet serve):\n"
                "  --root-dir DIR     state directory (default %s)\n"
                "  --no-trunc         ls: show full digests\n"
                "  -q, --quiet        ls: only digests; pull/load/rm/prune: no output\n"
                "  --image-credential-file FILE  pull: docker config.json (default\n"
                "                     %s; podman's --authfile\n"
                "                     is the same)\n"
                "  --registries-conf FILE     pull: default %s\n"
                "  --registry-certs-dir DIR   pull: default %s\n"
                "  --insecure-registry HOST[:PORT]  pull: plain HTTP or unverified TLS "
                "allowed\n"
                "  -h, --help         show this help\n",
                setting_default("root-dir"), setting_default("image-credential-file"),
                setting_default("registries-conf"), setting_default("registry-certs-dir"));
}

/* The flags that take a value, by the settings table's names. podman's
 * --authfile names the credential file too, and so does --credential-file,
 * the name nanolet(8) gave it before the table's name was used here: kept
 * so that scripts written from that page go on working. */
static const char *const value_flags[] = {
        "root-dir",          "run-dir",         "pod-logs-dir",    "image-credential-file",
        "authfile",          "credential-file", "registries-conf", "registry-certs-dir",
        "insecure-registry",
};

static int set_value(ImageArgs *a, const char *flag, const char *value) {
        if (streq(flag, "root-dir"))
                a->root_dir = value;
        else if (streq(flag, "image-credential-file") || streq(flag, "authfile") ||
                 streq(flag, "credential-file"))
                a->credential_file = value;
        else if (streq(flag, "registries-conf"))
                a->registries_conf = value;
        else if (streq(flag, "registry-certs-dir"))
                a->certs_dir = value;
        else if (streq(flag, "insecure-registry"))
                return strv_extend(&a->insecure, value);
        /* --run-dir and --pod-logs-dir: accepted by every subcommand
         * (nanolet(8)); unused here */
        return 0;
}

/* The value flag "--NAME" or "--NAME=VALUE" names, and in *ret_value the
 * inline value (NULL: none). */
static const char *find_value_flag(const char *arg, const char **ret_value) {
        const char *name = startswith(arg, "--");
        if (!name)
                return NULL;
        size_t len = strcspn(name, "=");
        *ret_value = name[len] == '=' ? name + len + 1 : NULL;
        for (size_t i = 0; i < ELEMENTSOF(value_flags); i++)
                if (strlen(value_flags[i]) == len && strncmp(value_flags[i], name, len) == 0)
                        return value_flags[i];
        return NULL;
}

/* Whole names only, as everywhere (getopt-util.h), in pflag's words. */
static int parse_args(int argc, char **argv, ImageArgs *a) {
        bool dashdash = false;
        for (int i = 1; i < argc; i++) {
                const char *s = argv[i], *flag;
                if (dashdash || s[0] != '-' || streq(s, "-")) {
                        if (strv_extend(&a->args, s) < 0)
                                return log_oom();
                        continue;
                }
                const char *value;
                if (streq(s, "--")) {
                        dashdash = true;
                } else if (streq(s, "-h") || streq(s, "--help")) {
                        help(stdout);
                        return 0;
                } else if (streq(s, "--no-trunc")) {
                        a->no_trunc = true;
                } else if (streq(s, "--copy")) {
                        a->copy = true;
                } else if (streq(s, "-q") || streq(s, "--quiet")) {
                        a->quiet = true;
                } else if ((flag = find_value_flag(s, &value))) {
                        if (!value && i + 1 >= argc) {
                                fprintf(stderr, "nanolet image: flag needs an argument: %s\n", s);
                                return -EINVAL;
                        }
                        if (set_value(a, flag, value ? value : argv[++i]) < 0)
                                return log_oom();
                } else {
                        _cleanup_free_ char *name = str_escape_n(s, strcspn(s, "="), 0);
                        fprintf(stderr, "nanolet image: %s: %s\n",
                                s[1] == '-' ? "unknown flag" : "unknown shorthand flag",
                                strna(name));
                        return -EINVAL;
                }
        }
        return 1;
}

static void format_size(uint64_t size, char buf[static 32]) {
        static const char *const units[] = { "B", "kB", "MB", "GB", "TB" };
        double v = (double)size;
        size_t u = 0;
        while (v >= 1000 && u + 1 < ELEMENTSOF(units)) {
                v /= 1000;
                u++;
        }
        if (u == 0)
                snprintf(buf, 32, "%lluB", (unsigned long long)size);
        else
                snprintf(buf, 32, "%.3g%s", v, units[u]);
}

static int cmd_load(ImageStore *s, ImageArgs *a) {
        Error err = {};
        _cleanup_strv_free_ char **names = NULL;
        if (strv_length(a->args) != 2) {
                fprintf(stderr, "nanolet image load: expected one FILE (or - for stdin)\n");
                return EXIT_USAGE;
        }
        int r = image_store_load(s, a->args[1], &names, &err);
        if (r < 0) {
                log_error_errno(r, "%s", err.message[0] ? err.message : strerror(-r));
                return EXIT_ERROR;
        }
        STRV_FOREACH(n, names)
                if (!a->quiet) {
                        /* names from the archive */
                        _cleanup_free_ char *shown = str_escape(*n, 0);
                        printf("Loaded image: %s\n", shown ? shown : "?");
                }
        return EXIT_OK;
}

/* Progress: a bar per blob redrawn in place on a terminal, plain lines
 * (start, done) otherwise. */
typedef struct PullLine {
        char digest[72];
        const char *what;
        uint64_t done, total;
        const char *state;
} PullLine;

typedef struct PullView {
        bool tty;
        PullLine lines[IMAGE_MAX_LAYERS + 1];
        size_t n, drawn;
} PullView;

static void draw(PullView *v) {
        if (v->drawn > 0)
                printf("\033[%zuA", v->drawn);
        for (size_t i = 0; i < v->n; i++) {
                PullLine *l = &v->lines[i];
                char done[32], total[32], bar[31];
                format_size(l->done, done);
                format_size(l->total, total);
                size_t fill = l->total ? (size_t)(30.0 * (double)l->done / (double)l->total) : 0;
                for (size_t k = 0; k < 30; k++)
                        bar[k] = k < fill ? '=' : k == fill ? '>' : ' ';
                bar[30] = 0;
                printf("\r\033[K%-6s %.19s: %-16s [%s] %s/%s\n", l->what, l->digest + 7, l->state,
                       bar, done, total);
        }
        v->drawn = v->n;
        fflush(stdout);
}

static void pull_progress(const ImagePullProgress *p, void *userdata) {
        PullView *v = userdata;
        if (p->event == IMAGE_PULL_RESOLVED) {
                printf("Resolved %s from %s\n", p->digest, strna(p->endpoint));
                fflush(stdout);
                return;
        }
        if (p->event == IMAGE_PULL_COMMITTING) {
                printf("Unpacking and storing %s\n", p->digest);
                fflush(stdout);
                return;
        }
        PullLine *l = NULL;
        for (size_t i = 0; i < v->n && !l; i++)
                if (streq(v->lines[i].digest, p->digest))
                        l = &v->lines[i];
        if (!l) {
                if (v->n >= ELEMENTSOF(v->lines))
                        return;
                l = &v->lines[v->n++];
                snprintf(l->digest, sizeof(l->digest), "%s", p->digest);
                l->what = p->what;
        }
        l->done = p->done;
        l->total = p->total;
        switch (p->event) {
        case IMAGE_PULL_BLOB_EXISTS:
                l->state = "already present";
                if (!v->tty)
                        printf("%s %s: already present\n", p->what, p->digest);
                break;
        case IMAGE_PULL_BLOB_START:
                l->state = p->done ? "resuming" : "downloading";
                if (!v->tty)
                        printf("%s %s: %s (%llu bytes%s)\n", p->what, p->digest, l->state,
                               (unsigned long long)p->total, p->done ? ", resuming" : "");
                break;
        case IMAGE_PULL_BLOB_PROGRESS:
                l->state = "downloading";
                break;
        case IMAGE_PULL_BLOB_DONE:
                l->state = "verified";
                if (!v->tty)
                        printf("%s %s: verified\n", p->what, p->digest);
                break;
        case IMAGE_PULL_RESOLVED:
        case IMAGE_PULL_COMMITTING:
                break;
        }
        if (v->tty)
                draw(v);
        else
                fflush(stdout);
}

static int cmd_pull(ImageStore *s, ImageArgs *a) {
        Error err = {};
        _cleanup_free_ char *digest = NULL;
        _cleanup_free_ PullView *view = calloc(1, sizeof(PullView));
        if (strv_length(a->args) != 2) {
                fprintf(stderr, "nanolet image pull: expected one REF\n");
                return EXIT_USAGE;
        }
        if (!view)
                return log_oom();
        view->tty = isatty(STDOUT_FILENO);
        ImagePullOptions o = {
                .registries_conf = a->registries_conf ? a->registries_conf
                                                      : setting_default("registries-conf"),
                .certs_dir = a->certs_dir ? a->certs_dir : setting_default("registry-certs-dir"),
                .credential_file = a->credential_file ? a->credential_file
                                                      : setting_default("image-credential-file"),
                .insecure_registries = a->insecure,
                .progress = a->quiet ? NULL : pull_progress,
                .userdata = view,
        };
        int r = image_pull_run(s, a->args[1], &o, &digest, &err);
        if (r < 0) {
                log_error_errno(r, "pulling %s: %s", a->args[1],
                                err.message[0] ? err.message : strerror(-r));
                return EXIT_ERROR;
        }
        if (!a->quiet)
                printf("%s %s (%s)\n", r == 1 ? "Image is up to date:" : "Pulled", a->args[1],
                       digest);
        return EXIT_OK;
}

static int cmd_ls(ImageStore *s, ImageArgs *a) {
        Error err = {};
        Image **l = NULL;
        size_t n = 0;
        if (strv_length(a->args) != 1) {
                fprintf(stderr, "nanolet image ls: takes no arguments\n");
                return EXIT_USAGE;
        }
        int r = image_store_list(s, &l, &n, &err);
        if (r < 0) {
                log_error_errno(r, "%s", err.message[0] ? err.message : strerror(-r));
                return EXIT_ERROR;
        }
        if (!a->quiet)
                printf("%-50s %-20s %-*s %s\n", "REPOSITORY", "TAG", a->no_trunc ? 71 : 13,
                       "DIGEST", "SIZE");
        for (size_t i = 0; i < n; i++) {
                char size[32], digest[80];
                format_size(l[i]->size, size);
                snprintf(digest, sizeof(digest), "%s",
                         a->no_trunc ? l[i]->digest : l[i]->digest + 7);
                if (!a->no_trunc)
                        digest[13] = 0;
                if (a->quiet) {
                        printf("%s\n", digest);
                        continue;
                }
                if (!l[i]->names[0])
                        printf("%-50s %-20s %-*s %s\n", "<none>", "<none>", a->no_trunc ? 71 : 13,
                               digest, size);
                STRV_FOREACH(nm, l[i]->names) {
                        ImageRef ref = {};
                        if (image_ref_parse(*nm, &ref, NULL) < 0)
                                continue;
                        _cleanup_free_ char *repo = image_ref_repository(&ref);
                        printf("%-50s %-20s %-*s %s\n", strna(repo), ref.tag ? ref.tag : "<none>",
                               a->no_trunc ? 71 : 13, digest, size);
                        image_ref_done(&ref);
                }
        }
        image_list_free(l, n);
        return EXIT_OK;
}

static json_t *strv_json(char **l) {
        json_t *a = json_array();
        STRV_FOREACH(s, l)
                json_array_append_new(a, json_string(*s));
        return a;
}

static int cmd_inspect(ImageStore *s, ImageArgs *a) {
        int ret = EXIT_OK;
        if (strv_length(a->args) < 2) {
                fprintf(stderr, "nanolet image inspect: expected REF...\n");
                return EXIT_USAGE;
        }
        json_t *out = json_array();
        for (size_t i = 1; a->args[i]; i++) {
                Error err = {};
                _cleanup_(image_freep) Image *im = NULL;
                int r = image_store_get(s, a->args[i], &im, &err);
                if (r < 0) {
                        log_error_errno(r, "%s", err.message[0] ? err.message : strerror(-r));
                        ret = EXIT_ERROR;
                        continue;
                }
                const ImageConfig *c = &im->config;
                json_t *labels = json_object();
                for (size_t k = 0; c->labels && c->labels[k] && c->labels[k + 1]; k += 2)
                        json_object_set_new(labels, c->labels[k], json_string(c->labels[k + 1]));
                json_t *layers = json_array(), *digests = json_array();
                for (size_t k = 0; k < im->manifest.n_layers; k++)
                        json_array_append_new(
                                layers, json_pack("{s:s, s:s?, s:I, s:s, s:s}", "digest",
                                                  im->manifest.layers[k].digest, "mediaType",
                                                  im->manifest.layers[k].media_type, "size",
                                                  (json_int_t)im->manifest.layers[k].size, "diffID",
                                                  c->diff_ids[k], "chainID", im->chain_ids[k]));
                STRV_FOREACH(nm, im->names) {
                        ImageRef ref = {};
                        if (image_ref_parse(*nm, &ref, NULL) < 0)
                                continue;
                        _cleanup_free_ char *repo = image_ref_repository(&ref);
                        _cleanup_free_ char *rd = strprintf("%s@%s", strna(repo), im->digest);
                        if (rd)
                                json_array_append_new(digests, json_string(rd));
                        image_ref_done(&ref);
                }
                json_t *cfg = json_pack(
                        "{s:o, s:o, s:o, s:s?, s:s?, s:o, s:s?, s:o, s:o}", "Entrypoint",
                        c->entrypoint ? strv_json(c->entrypoint) : json_null(), "Cmd",
                        c->cmd ? strv_json(c->cmd) : json_null(), "Env",
                        c->env ? strv_json(c->env) : json_null(), "WorkingDir", c->working_dir,
                        "User", c->user, "ExposedPorts", strv_json(c->exposed_ports), "StopSignal",
                        c->stop_signal, "Volumes", strv_json(c->volumes), "Labels", labels);
                json_t *o = json_pack("{s:s, s:s, s:o, s:o, s:I, s:s?, s:s?, s:s?, s:o, s:o}", "id",
                                      im->config_digest, "digest", im->digest, "repoTags",
                                      strv_json(im->names), "repoDigests", digests, "size",
                                      (json_int_t)im->size, "os", c->os, "architecture",
                                      c->architecture, "created", c->created, "config", cfg,
                                      "layers", layers);
                if (!o) {
                        log_oom();
                        json_decref(out);
                        return EXIT_ERROR;
                }
                json_array_append_new(out, o);
        }
        if (json_array_size(out) > 0) {
                json_t *show = json_array_size(out) == 1 && strv_length(a->args) == 2
                                       ? json_array_get(out, 0)
                                       : out;
                char *text = json_dumps(show, JSON_INDENT(2));
                if (text)
                        printf("%s\n", text);
                free(text);
        }
        json_decref(out);
        return ret;
}

static int cmd_tag(ImageStore *s, ImageArgs *a) {
        Error err = {};
        if (strv_length(a->args) != 3) {
                fprintf(stderr, "nanolet image tag: expected SRC DST\n");
                return EXIT_USAGE;
        }
        int r = image_store_tag(s, a->args[1], a->args[2], &err);
        if (r < 0) {
                log_error_errno(r, "%s", err.message[0] ? err.message : strerror(-r));
                return EXIT_ERROR;
        }
        return EXIT_OK;
}

/* What the pods the agent checkpointed under --root-dir use: rm refuses,
 * and prune keeps, those images. */
static int pods_image_users(const ImageArgs *a, ImageUsers *ret) {
        _cleanup_free_ char *pods_dir = strprintf("%s/pods", a->root_dir);
        if (!pods_dir)
                return log_oom();
        int r = pod_checkpoints_image_users(pods_dir, ret);
        if (r < 0)
                return log_error_errno(r, "Cannot read the pod checkpoints in \"%s\": %m",
                                       pods_dir);
        return 0;
}

static int cmd_rm(ImageStore *s, ImageArgs *a) {
        _cleanup_(image_users_done) ImageUsers users = {};
        int ret = EXIT_OK;
        if (strv_length(a->args) < 2) {
                fprintf(stderr, "nanolet image rm: expected REF...\n");
                return EXIT_USAGE;
        }
        if (pods_image_users(a, &users) < 0)
                return EXIT_ERROR;
        for (size_t i = 1; a->args[i]; i++) {
                Error err = {};
                int r = image_store_remove(s, a->args[i], &users, &err);
                if (r < 0) {
                        log_error_errno(r, "%s", err.message[0] ? err.message : strerror(-r));
                        ret = EXIT_ERROR;
                } else if (!a->quiet)
                        printf("%s: %s\n", r > 0 ? "Deleted" : "Untagged", a->args[i]);
        }
        return ret;
}

static int cmd_prune(ImageStore *s, ImageArgs *a) {
        _cleanup_(image_users_done) ImageUsers users = {};
        Error err = {};
        _cleanup_strv_free_ char **removed = NULL;
        uint64_t reclaimed = 0;
        char size[32];
        if (strv_length(a->args) != 1) {
                fprintf(stderr, "nanolet image prune: takes no arguments\n");
                return EXIT_USAGE;
        }
        if (pods_image_users(a, &users) < 0)
                return EXIT_ERROR;
        int r = image_store_prune(s, &users, &removed, &reclaimed, &err);
        if (r < 0) {
                log_error_errno(r, "%s", err.message[0] ? err.message : strerror(-r));
                return EXIT_ERROR;
        }
        format_size(reclaimed, size);
        if (!a->quiet) {
                STRV_FOREACH(n, removed)
                        printf("Deleted: %s\n", *n);
                printf("Total reclaimed space: %s\n", size);
        }
        return EXIT_OK;
}

static int cmd_mount(ImageStore *s, ImageArgs *a) {
        Error err = {};
        ImageRootfsMode mode;
        if (strv_length(a->args) != 5) {
                fprintf(stderr, "nanolet image mount: expected REF TARGET UPPER WORK\n");
                return EXIT_USAGE;
        }
        int r = image_rootfs_mount(s, a->args[1], a->args[2], a->args[3], a->args[4],
                                   a->copy ? IMAGE_ROOTFS_FORCE_COPY : 0, &mode, &err);
        if (r < 0) {
                log_error_errno(r, "%s", err.message[0] ? err.message : strerror(-r));
                return EXIT_ERROR;
        }
        if (!a->quiet)
                printf("Mounted %s on %s (%s)\n", a->args[1], a->args[2],
                       image_rootfs_mode_to_string(mode));
        return EXIT_OK;
}

static int cmd_umount(ImageStore *s, ImageArgs *a) {
        Error err = {};
        if (strv_length(a->args) != 2) {
                fprintf(stderr, "nanolet image umount: expected TARGET\n");
                return EXIT_USAGE;
        }
        int r = image_rootfs_umount(a->args[1], &err);
        if (r < 0) {
                log_error_errno(r, "%s", err.message[0] ? err.message : strerror(-r));
                return EXIT_ERROR;
        }
        return EXIT_OK;
}

int cli_image(int argc, char **argv) {
        ImageArgs a = { .root_dir = setting_default("root-dir") };
        _cleanup_(image_store_freep) ImageStore *s = NULL;
        Error err = {};
        static const struct {
                const char *name;
                int (*run)(ImageStore *s, ImageArgs *a);
        } cmds[] = {
                { "pull", cmd_pull },     { "load", cmd_load },       { "ls", cmd_ls },
                { "list", cmd_ls },       { "inspect", cmd_inspect }, { "tag", cmd_tag },
                { "rm", cmd_rm },         { "prune", cmd_prune },     { "mount", cmd_mount },
                { "umount", cmd_umount },
        };

        int r = parse_args(argc, argv, &a);
        if (r <= 0) {
                strv_free(a.args);
                strv_free(a.insecure);
                return r == 0 ? EXIT_OK : EXIT_USAGE;
        }
        if (!a.args || !a.args[0]) {
                help(stderr);
                strv_free(a.args);
                strv_free(a.insecure);
                return EXIT_USAGE;
        }
        int ret = -1;
        for (size_t i = 0; i < ELEMENTSOF(cmds); i++) {
                if (!streq(a.args[0], cmds[i].name))
                        continue;
                r = image_store_open(a.root_dir, NULL, &s, &err);
                if (r < 0) {
                        log_error_errno(r, "%s", err.message[0] ? err.message : strerror(-r));
                        ret = EXIT_ERROR;
                } else
                        ret = cmds[i].run(s, &a);
                break;
        }
        if (ret < 0) {
                fprintf(stderr, "nanolet image: unknown command \"%s\"\n\n", a.args[0]);
                help(stderr);
                ret = EXIT_USAGE;
        }
        strv_free(a.args);
        strv_free(a.insecure);
        return ret;
}
