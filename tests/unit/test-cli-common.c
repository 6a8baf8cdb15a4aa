/* src/cli/cli-common: kubectl's STATUS/READY/RESTARTS/AGE columns, POD name
 * resolution, status-file loading, durations, YAML output. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "cli-common.h"
#include "fileio.h"
#include "string-util.h"

#define SEC 1000000000LL

static void test_age(void **state) {
        static const struct {
                int64_t sec;
                const char *want;
        } cases[] = {
                { -5, "<invalid>" },
                { -1, "0s" },
                { 0, "0s" },
                { 45, "45s" },
                { 119, "119s" },
                { 120, "2m" },
                { 182, "3m2s" },
                { 599, "9m59s" },
                { 600, "10m" },
                { 10799, "179m" },
                { 3 * 3600, "3h" },
                { 3 * 3600 + 60 * 5, "3h5m" },
                { 5 * 3600, "5h" },
                { 8 * 3600, "8h" },
                { 47 * 3600, "47h" },
                { 2 * 86400, "2d" },
                { 2 * 86400 + 3600 * 5, "2d5h" },
                { 8 * 86400, "8d" },
                { 400 * 86400, "400d" },
                { 730 * 86400, "2y" },
                { 731 * 86400, "2y1d" },
                { 3000 * 86400, "8y" },
        };
        char buf[32];
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                assert_string_equal(cli_format_age(buf, sizeof(buf), cases[i].sec * SEC),
                                    cases[i].want);
        assert_string_equal(cli_format_age_since(buf, sizeof(buf), 0, 100 * SEC), "<unknown>");
        assert_string_equal(cli_format_age_since(buf, sizeof(buf), 10 * SEC, 55 * SEC), "45s");

        assert_string_equal(cli_format_human_duration(buf, sizeof(buf), 0), "Less than a second");
        assert_string_equal(cli_format_human_duration(buf, sizeof(buf), 1 * SEC), "1 second");
        assert_string_equal(cli_format_human_duration(buf, sizeof(buf), 30 * SEC), "30 seconds");
        assert_string_equal(cli_format_human_duration(buf, sizeof(buf), 90 * SEC),
                            "About a minute");
        assert_string_equal(cli_format_human_duration(buf, sizeof(buf), 300 * SEC), "5 minutes");
        assert_string_equal(cli_format_human_duration(buf, sizeof(buf), 3600 * SEC),
                            "About an hour");
        assert_string_equal(cli_format_human_duration(buf, sizeof(buf), 5 * 3600 * SEC), "5 hours");
        assert_string_equal(cli_format_human_duration(buf, sizeof(buf), 3 * 86400 * SEC), "3 days");
}

static void test_go_duration(void **state) {
        int64_t d;
        assert_int_equal(cli_parse_go_duration("10m", &d), 0);
        assert_int_equal(d, 600 * SEC);
        assert_int_equal(cli_parse_go_duration("1h30m", &d), 0);
        assert_int_equal(d, 5400 * SEC);
        assert_int_equal(cli_parse_go_duration("2.5s", &d), 0);
        assert_int_equal(d, 2500000000LL);
        assert_int_equal(cli_parse_go_duration("300ms", &d), 0);
        assert_int_equal(d, 300000000LL);
        assert_int_equal(cli_parse_go_duration("0", &d), 0);
        assert_int_equal(d, 0);
        assert_int_equal(cli_parse_go_duration("10", &d), -EINVAL);
        assert_int_equal(cli_parse_go_duration("", &d), -EINVAL);
        assert_int_equal(cli_parse_go_duration("-5m", &d), -EINVAL);
        assert_int_equal(cli_parse_go_duration("5x", &d), -EINVAL);
}

/* ---- STATUS column ---- */

typedef struct StatusCase {
        const char *desc;
        const char *json;
        const char *status;
        unsigned ready, total, restarts;
} StatusCase;

#define RUNNING_READY(n)                                                                           \
        "{\"name\":\"" n "\",\"ready\":true,\"restartCount\":0,\"state\":{\"running\":{"           \
        "\"startedAt\":\"2024-05-01T10:00:00Z\"}}}"

static const StatusCase status_cases[] = {
        { "running",
          "{\"spec\":{\"containers\":[{\"name\":\"a\"}]},\"status\":{\"phase\":\"Running\","
          "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
          "\"containerStatuses\":[" RUNNING_READY("a") "]}}",
          "Running", 1, 1, 0 },
        { "pending without statuses",
          "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]},"
          "\"status\":{\"phase\":\"Pending\"}}",
          "Pending", 0, 2, 0 },
        { "no status at all", "{\"spec\":{\"containers\":[{\"name\":\"a\"}]}}", "Pending", 0, 1,
          0 },
        { "container creating",
          "{\"spec\":{\"containers\":[{\"name\":\"a\"}]},\"status\":{\"phase\":\"Pending\","
          "\"containerStatuses\":[{\"name\":\"a\",\"ready\":false,\"restartCount\":0,"
          "\"state\":{\"waiting\":{\"reason\":\"ContainerCreating\"}}}]}}",
          "ContainerCreating", 0, 1, 0 },
        { "crash loop",
          "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]},\"status\":{\"phase\":"
          "\"Running\","
          "\"containerStatuses\":[{\"name\":\"a\",\"ready\":false,\"restartCount\":5,"
          "\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\",\"message\":\"back-off "
          "2m40s\"}},"
          "\"lastState\":{\"terminated\":{\"exitCode\":1,\"reason\":\"Error\","
          "\"finishedAt\":\"2024-05-01T10:00:00Z\"}}}," RUNNING_READY("b") "]}}",
          "CrashLoopBackOff", 1, 2, 5 },
        { "completed",
          "{\"spec\":{\"containers\":[{\"name\":\"a\"}]},\"status\":{\"phase\":\"Succeeded\","
          "\"containerStatuses\":[{\"name\":\"a\",\"ready\":false,\"restartCount\":0,"
          "\"state\":{\"terminated\":{\"exitCode\":0,\"reason\":\"Completed\"}}}]}}",
          "Completed", 0, 1, 0 },
        { "error",
          "{\"spec\":{\"containers\":[{\"name\":\"a\"}]},\"status\":{\"phase\":\"Failed\","
          "\"containerStatuses\":[{\"name\":\"a\",\"ready\":false,\"restartCount\":0,"
          "\"state\":{\"terminated\":{\"exitCode\":2,\"reason\":\"Error\"}}}]}}",
          "Error", 0, 1, 0 },
        { "exit code without reason",
          "{\"spec\":{\"containers\":[{\"name\":\"a\"}]},\"status\":{\"phase\":\"Failed\","
          "\"containerStatuses\":[{\"name\":\"a\",\"restartCount\":0,"
          "\"state\":{\"terminated\":{\"exitCode\":137}}}]}}",
          "ExitCode:137", 0, 1, 0 },
        { "signal without reason",
          "{\"spec\":{\"containers\":[{\"name\":\"a\"}]},\"status\":{\"phase\":\"Failed\","
          "\"containerStatuses\":[{\"name\":\"a\",\"restartCount\":0,"
          "\"state\":{\"terminated\":{\"exitCode\":0,\"signal\":9}}}]}}",
          "Signal:9", 0, 1, 0 },
        { "completed but one still running",
          "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]},\"status\":{\"phase\":"
          "\"Running\","
          "\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}],"
          "\"containerStatuses\":[{\"name\":\"a\",\"restartCount\":0,"
          "\"state\":{\"terminated\":{\"exitCode\":0,\"reason\":\"Completed\"}}}," RUNNING_READY(
                  "b") "]}}",
          "NotReady", 1, 2, 0 },
        { "init 1/2",
          "{\"spec\":{\"initContainers\":[{\"name\":\"i1\"},{\"name\":\"i2\"}],\"containers\":[{"
          "\"name\":\"a\"}]},"
          "\"status\":{\"phase\":\"Pending\",\"initContainerStatuses\":["
          "{\"name\":\"i1\",\"restartCount\":0,\"state\":{\"terminated\":{\"exitCode\":0,"
          "\"reason\":\"Completed\"}}},"
          "{\"name\":\"i2\",\"restartCount\":0,\"state\":{\"running\":{}}}],"
          "\"containerStatuses\":[{\"name\":\"a\",\"restartCount\":0,"
          "\"state\":{\"waiting\":{\"reason\":\"PodInitializing\"}}}]}}",
          "Init:1/2", 0, 1, 0 },
        { "init 0/2 waiting PodInitializing",
          "{\"spec\":{\"initContainers\":[{\"name\":\"i1\"},{\"name\":\"i2\"}],\"containers\":[{"
          "\"name\":\"a\"}]},"
          "\"status\":{\"phase\":\"Pending\",\"initContainerStatuses\":["
          "{\"name\":\"i1\",\"restartCount\":0,\"state\":{\"waiting\":{\"reason\":"
          "\"PodInitializing\"}}},"
          "{\"name\":\"i2\",\"restartCount\":0,\"state\":{\"waiting\":{\"reason\":"
          "\"PodInitializing\"}}}]}}",
          "Init:0/2", 0, 1, 0 },
        { "init crash loop",
          "{\"spec\":{\"initContainers\":[{\"name\":\"i1\"}],\"containers\":[{\"name\":\"a\"}]},"
          "\"status\":{\"phase\":\"Pending\",\"initContainerStatuses\":["
          "{\"name\":\"i1\",\"restartCount\":3,\"state\":{\"waiting\":{\"reason\":"
          "\"CrashLoopBackOff\"}},"
          "\"lastState\":{\"terminated\":{\"exitCode\":1,\"reason\":\"Error\",\"finishedAt\":"
          "\"2024-05-01T10:00:00Z\"}}}]}}",
          "Init:CrashLoopBackOff", 0, 1, 3 },
        { "init error",
          "{\"spec\":{\"initContainers\":[{\"name\":\"i1\"}],\"containers\":[{\"name\":\"a\"}]},"
          "\"status\":{\"phase\":\"Failed\",\"initContainerStatuses\":["
          "{\"name\":\"i1\",\"restartCount\":0,\"state\":{\"terminated\":{\"exitCode\":1,"
          "\"reason\":\"Error\"}}}]}}",
          "Init:Error", 0, 1, 0 },
        { "init exit code",
          "{\"spec\":{\"initContainers\":[{\"name\":\"i1\"}],\"containers\":[{\"name\":\"a\"}]},"
          "\"status\":{\"phase\":\"Failed\",\"initContainerStatuses\":["
          "{\"name\":\"i1\",\"restartCount\":0,\"state\":{\"terminated\":{\"exitCode\":3}}}]}}",
          "Init:ExitCode:3", 0, 1, 0 },
        { "pod initializing after init",
          "{\"spec\":{\"initContainers\":[{\"name\":\"i1\"}],\"containers\":[{\"name\":\"a\"}]},"
          "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"Initialized\",\"status\":"
          "\"True\"}],"
          "\"initContainerStatuses\":["
          "{\"name\":\"i1\",\"restartCount\":0,\"state\":{\"terminated\":{\"exitCode\":0,"
          "\"reason\":\"Completed\"}}}],"
          "\"containerStatuses\":[{\"name\":\"a\",\"restartCount\":0,"
          "\"state\":{\"waiting\":{\"reason\":\"PodInitializing\"}}}]}}",
          "PodInitializing", 0, 1, 0 },
        { "sidecar counts",
          "{\"spec\":{\"initContainers\":[{\"name\":\"side\",\"restartPolicy\":\"Always\"}],"
          "\"containers\":[{\"name\":\"a\"}]},"
          "\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Initialized\",\"status\":"
          "\"True\"}],"
          "\"initContainerStatuses\":[{\"name\":\"side\",\"ready\":true,\"started\":true,"
          "\"restartCount\":2,"
          "\"state\":{\"running\":{}}}],"
          "\"containerStatuses\":[" RUNNING_READY("a") "]}}",
          "Running", 2, 2, 2 },
        { "terminating",
          "{\"metadata\":{\"deletionTimestamp\":\"2024-05-01T10:00:00Z\"},"
          "\"spec\":{\"containers\":[{\"name\":\"a\"}]},\"status\":{\"phase\":\"Running\","
          "\"containerStatuses\":[" RUNNING_READY("a") "]}}",
          "Terminating", 1, 1, 0 },
        { "terminal phase is not terminating",
          "{\"metadata\":{\"deletionTimestamp\":\"2024-05-01T10:00:00Z\"},"
          "\"spec\":{\"containers\":[{\"name\":\"a\"}]},\"status\":{\"phase\":\"Succeeded\","
          "\"containerStatuses\":[{\"name\":\"a\",\"restartCount\":0,"
          "\"state\":{\"terminated\":{\"exitCode\":0,\"reason\":\"Completed\"}}}]}}",
          "Completed", 0, 1, 0 },
        { "pod reason wins over phase",
          "{\"spec\":{\"containers\":[{\"name\":\"a\"}]},\"status\":{\"phase\":\"Failed\","
          "\"reason\":\"DeadlineExceeded\"}}",
          "DeadlineExceeded", 0, 1, 0 },
};

static void test_status(void **state) {
        for (size_t i = 0; i < sizeof(status_cases) / sizeof(status_cases[0]); i++) {
                const StatusCase *c = &status_cases[i];
                json_error_t err;
                _cleanup_json_ json_t *j = json_loads(c->json, 0, &err);
                PodSummary s;
                if (!j)
                        fail_msg("%s: bad JSON: %s", c->desc, err.text);
                assert_int_equal(cli_pod_summarize(j, &s), 0);
                if (!streq(s.status, c->status) || s.ready != c->ready || s.total != c->total ||
                    s.restarts != c->restarts)
                        fail_msg("%s: got %s %u/%u restarts %u, want %s %u/%u restarts %u", c->desc,
                                 s.status, s.ready, s.total, s.restarts, c->status, c->ready,
                                 c->total, c->restarts);
                cli_pod_summary_done(&s);
        }
}

static void test_restarts_column(void **state) {
        char buf[64];
        PodSummary s = { .restarts = 0 };
        assert_string_equal(cli_pod_format_restarts(buf, sizeof(buf), &s, 100 * SEC), "0");
        s = (PodSummary){ .restarts = 4, .last_restart = 100 * SEC };
        assert_string_equal(cli_pod_format_restarts(buf, sizeof(buf), &s, 400 * SEC), "4 (5m ago)");
        s = (PodSummary){ .restarts = 4 };
        assert_string_equal(cli_pod_format_restarts(buf, sizeof(buf), &s, 400 * SEC), "4");
}

/* ---- POD resolution ---- */

static void add_pod(CliPodList *l, const char *ns, const char *name, const char *uid,
                    const char *node) {
        json_t *j = json_pack("{s:s, s:{s:s, s:s, s:s}, s:{s:s?}}", "kind", "Pod", "metadata",
                              "namespace", ns, "name", name, "uid", uid, "spec", "nodeName", node);
        const char *reason;
        assert_non_null(j);
        l->pods = reallocarray(l->pods, l->n + 1, sizeof(CliPod));
        assert_non_null(l->pods);
        assert_int_equal(cli_pod_from_json(j, &l->pods[l->n], &reason), 0);
        l->pods[l->n].file = strdup("x");
        l->n++;
}

static void expect_resolve(const CliPodList *l, const char *q, int want_r, const char *want_name,
                           const char *msg_part) {
        const CliPod *p = NULL;
        _cleanup_free_ char *msg = NULL;
        int r = cli_pod_resolve(l, q, &p, &msg);
        if (r != want_r)
                fail_msg("%s: got %d (%s), want %d", q, r, strna(msg), want_r);
        if (want_name)
                assert_string_equal(p->name, want_name);
        if (msg_part) {
                assert_non_null(msg);
                if (!strstr(msg, msg_part))
                        fail_msg("%s: message \"%s\" lacks \"%s\"", q, msg, msg_part);
        }
}

static void test_resolve(void **state) {
        _cleanup_(cli_pod_list_done) CliPodList l = {};
        add_pod(&l, "kube-system", "etcd-node1", "u1", "node1");
        add_pod(&l, "kube-system", "kube-apiserver-node1", "u2", "node1");
        add_pod(&l, "default", "web-node1", "u3", "node1");
        add_pod(&l, "other", "web-node1", "u4", "node1");
        add_pod(&l, "default", "etcd-backup-node1", "u5", "node1");
        add_pod(&l, "default", "plain", "u6", NULL);
        add_pod(&l, "default", "plain-thing", "u7", NULL);
        add_pod(&l, "default", "solo-somenode", "u8", NULL);

        expect_resolve(&l, "etcd", 0, "etcd-node1", NULL);
        expect_resolve(&l, "etcd-node1", 0, "etcd-node1", NULL);
        expect_resolve(&l, "kube-system/etcd", 0, "etcd-node1", NULL);
        expect_resolve(&l, "kube-system/etcd-node1", 0, "etcd-node1", NULL);
        expect_resolve(&l, "default/etcd", -ENOENT, NULL, "not found");
        expect_resolve(&l, "kube-apiserver", 0, "kube-apiserver-node1", NULL);
        expect_resolve(&l, "web", -ENOTUNIQ, NULL, "default/web-node1, other/web-node1");
        expect_resolve(&l, "web-node1", -ENOTUNIQ, NULL, "other/web-node1");
        expect_resolve(&l, "other/web", 0, "web-node1", NULL);
        expect_resolve(&l, "etcd-backup", 0, "etcd-backup-node1", NULL);
        /* an exact name wins over a suffixed one */
        expect_resolve(&l, "plain", 0, "plain", NULL);
        /* without a node name, any suffix counts */
        expect_resolve(&l, "solo", 0, "solo-somenode", NULL);
        expect_resolve(&l, "nope", -ENOENT, NULL, "pod \"nope\" not found");
        expect_resolve(&l, "/x", -EINVAL, NULL, "invalid");
        expect_resolve(&l, "x/", -EINVAL, NULL, "invalid");

        /* a pod UID resolves too */
        const CliPod *p;
        _cleanup_free_ char *msg = NULL;
        assert_int_equal(cli_pod_resolve(&l, "u2", &p, &msg), 0);
        assert_string_equal(p->name, "kube-apiserver-node1");
}

static void test_default_container(void **state) {
        const char *name;
        char *msg;
        _cleanup_json_ json_t *one =
                json_loads("{\"spec\":{\"containers\":[{\"name\":\"a\"}]}}", 0, NULL);
        _cleanup_json_ json_t *two = json_loads(
                "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"initContainers\":[{\"name\":\"i\"}],"
                "\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]}}",
                0, NULL);
        _cleanup_json_ json_t *ann =
                json_loads("{\"metadata\":{\"annotations\":{\"kubectl.kubernetes.io/"
                           "default-container\":\"b\"}},"
                           "\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]}}",
                           0, NULL);

        assert_int_equal(cli_pod_default_container(one, &name, &msg), 0);
        assert_string_equal(name, "a");
        assert_int_equal(cli_pod_default_container(ann, &name, &msg), 0);
        assert_string_equal(name, "b");
        assert_int_equal(cli_pod_default_container(two, &name, &msg), -ENOTUNIQ);
        assert_non_null(strstr(msg, "choose one of: [a b] or one of the init containers: [i]"));
        free(msg);

        json_t *spec, *status;
        bool is_init;
        assert_int_equal(cli_pod_find_container(two, "i", &spec, &status, &is_init), 0);
        assert_true(is_init);
        assert_null(status);
        assert_int_equal(cli_pod_find_container(two, "zz", NULL, NULL, NULL), -ENOENT);

        char *scheme;
        assert_string_equal(cli_container_id_strip("runc://abc-1", &scheme), "abc-1");
        assert_string_equal(scheme, "runc");
        free(scheme);
        assert_string_equal(cli_container_id_strip("plain", NULL), "plain");

        CliCommon c;
        cli_common_init(&c, "test");
        assert_string_equal(cli_runtime_for(&c, "crun://x"), "crun");
        assert_string_equal(cli_runtime_for(&c, "evil://x"), "runc");
        assert_string_equal(cli_runtime_for(&c, "x"), "runc");
        assert_true(cli_common_option(&c, CLI_ARG_RUNTIME, "/opt/runc"));
        assert_string_equal(cli_runtime_for(&c, "crun://x"), "/opt/runc");
        assert_false(cli_common_option(&c, 'x', NULL));
}

/* ---- status files ---- */

static void write_file(const char *dir, const char *name, const char *content) {
        _cleanup_free_ char *p = strprintf("%s/%s", dir, name);
        assert_int_equal(write_file_atomic(p, content, strlen(content), 0644), 0);
}

static void test_load(void **state) {
        char tmp[] = "/tmp/test-cli-common.XXXXXX";
        assert_non_null(mkdtemp(tmp));
        _cleanup_free_ char *status = strprintf("%s/status", tmp);
        CliCommon c;
        cli_common_init(&c, "test");
        c.run_dir = tmp;

        /* no directory: empty */
        CliPodList l = {};
        assert_int_equal(cli_pods_load(&c, &l), 0);
        assert_int_equal(l.n, 0);
        _cleanup_json_ json_t *errs = NULL;
        assert_int_equal(cli_source_errors_load(&c, &errs), 0);
        assert_int_equal(json_array_size(errs), 0);

        assert_int_equal(mkdir(status, 0755), 0);
        write_file(status, "u2.json",
                   "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"b\","
                   "\"namespace\":\"kube-system\",\"uid\":\"u2\"},\"spec\":{}}");
        write_file(status, "u1.json",
                   "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"z\","
                   "\"namespace\":\"default\",\"uid\":\"u1\"},\"spec\":{}}");
        write_file(status, "half.json", "{\"apiVersion\":\"v1\",\"kind\":\"Po");
        write_file(
                status, "svc.json",
                "{\"kind\":\"Service\",\"metadata\":{\"name\":\"s\",\"uid\":\"x\"},\"spec\":{}}");
        write_file(status, ".u3.json.tmp", "garbage");
        write_file(status, "notes.txt", "garbage");
        write_file(status, "sources.json",
                   "{\"errors\":[{\"source\":\"file\",\"origin\":\"/m/x.yaml\","
                   "\"messages\":[\"x.yaml:3: spec: bad\"]}]}");

        assert_int_equal(cli_pods_load(&c, &l), 0);
        assert_int_equal(l.n, 2);
        assert_string_equal(l.pods[0].name, "z"); /* default < kube-system */
        assert_string_equal(l.pods[1].name, "b");
        assert_true(endswith(l.pods[1].file, "/status/u2.json"));
        cli_pod_list_done(&l);

        json_decref(errs);
        assert_int_equal(cli_source_errors_load(&c, &errs), 0);
        assert_int_equal(json_array_size(errs), 1);

        _cleanup_free_ char *cmd = strprintf("rm -rf '%s'", tmp);
        assert_int_equal(system(cmd), 0);
}

/* ---- output ---- */

static char *capture(int (*fn)(const json_t *, FILE *), const json_t *j) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        assert_non_null(f);
        assert_int_equal(fn(j, f), 0);
        fclose(f);
        return buf;
}

static void test_yaml(void **state) {
        _cleanup_json_ json_t *j = json_loads(
                "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[{\"b\":\"true\",\"a\":1,"
                "\"c\":\"2024-05-01T10:00:00Z\",\"d\":\"\",\"e\":[],\"f\":{},\"g\":null,\"h\":"
                "false,"
                "\"i\":\"- dash\",\"j\":\"multi\\nline\",\"k\":1.5,\"l\":\"123\",\"m\":\"plain "
                "text\"}]}",
                0, NULL);
        assert_non_null(j);
        _cleanup_free_ char *y = capture(cli_json_dump_yaml, j);
        assert_string_equal(y, "apiVersion: v1\n"
                               "items:\n"
                               "- a: 1\n"
                               "  b: \"true\"\n"
                               "  c: \"2024-05-01T10:00:00Z\"\n"
                               "  d: \"\"\n"
                               "  e: []\n"
                               "  f: {}\n"
                               "  g: null\n"
                               "  h: false\n"
                               "  i: '- dash'\n"
                               "  j: |-\n"
                               "    multi\n"
                               "    line\n"
                               "  k: 1.5\n"
                               "  l: \"123\"\n"
                               "  m: plain text\n"
                               "kind: PodList\n");
}

static void test_table(void **state) {
        static const char *const header[] = { "A", "LONGER", "C" };
        static const char *const row[] = { "xxxx", "y", NULL };
        _cleanup_(cli_table_done) CliTable t = {};
        char *buf = NULL;
        size_t size = 0;

        assert_int_equal(cli_table_init(&t, header, 3), 0);
        assert_int_equal(cli_table_add_row(&t, row), 0);
        FILE *f = open_memstream(&buf, &size);
        cli_table_print(&t, f);
        fclose(f);
        assert_string_equal(buf, "A      LONGER   C\nxxxx   y        \n");
        free(buf);
}

/* Cells from outside (an event message holding a registry's error body)
 * print escaped: one line per row, nothing a terminal acts on. The widths
 * are those of the escaped text. */
static void test_table_escapes(void **state) {
        static const char *const header[] = { "REASON", "MESSAGE" };
        static const char *const row[] = { "Failed\x1b]0;pwned\x07",
                                           "denied\x1b[2J\nW1128 00:00:00 all pods evicted\r" };
        _cleanup_(cli_table_done) CliTable t = {};
        char *buf = NULL;
        size_t size = 0;

        assert_int_equal(cli_table_init(&t, header, 2), 0);
        assert_int_equal(cli_table_add_row(&t, row), 0);
        FILE *f = open_memstream(&buf, &size);
        cli_table_print(&t, f);
        fclose(f);
        assert_string_equal(buf, "REASON                 MESSAGE\n"
                                 "Failed\\x1b]0;pwned\\a   "
                                 "denied\\x1b[2J\\nW1128 00:00:00 all pods evicted\\r\n");
        free(buf);

        _cleanup_json_ json_t *events =
                json_pack("[{s:s,s:s,s:s,s:{s:s}}]", "type", "Warning", "reason", "Failed",
                          "message", "pull failed:\x1b[2J\nW1128 00:00:00 all pods evicted",
                          "source", "component", "kubelet");
        assert_non_null(events);
        f = open_memstream(&buf, &size);
        assert_int_equal(cli_events_print_describe(events, 0, f), 0);
        fclose(f);
        assert_null(strchr(buf, '\x1b'));
        assert_non_null(strstr(buf, "pull failed:\\x1b[2J\\nW1128 00:00:00 all pods evicted\n"));
        free(buf);
}

static void test_run_capture(void **state) {
        _cleanup_free_ char *out = NULL, *err = NULL;
        int status;
        char *argv[] = { "sh", "-c", "echo out; echo err >&2; exit 3", NULL };
        assert_int_equal(cli_run_capture(argv, &out, &err, &status), 0);
        assert_string_equal(out, "out\n");
        assert_string_equal(err, "err\n");
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 3);

        free(out);
        free(err);
        out = err = NULL;
        char *missing[] = { "/nonexistent/binary", NULL };
        assert_int_equal(cli_run_capture(missing, &out, &err, &status), 0);
        assert_int_equal(WEXITSTATUS(status), 127);
        assert_non_null(strstr(err, "cannot execute"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_age),         cmocka_unit_test(test_go_duration),
                cmocka_unit_test(test_status),      cmocka_unit_test(test_restarts_column),
                cmocka_unit_test(test_resolve),     cmocka_unit_test(test_default_container),
                cmocka_unit_test(test_load),        cmocka_unit_test(test_yaml),
                cmocka_unit_test(test_table),       cmocka_unit_test(test_table_escapes),
                cmocka_unit_test(test_run_capture),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
