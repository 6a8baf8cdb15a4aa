/* Pod/ConfigMap/Secret decoding: every honoured field lands in the model,
 * defaults are Kubernetes', and unknown, ignored and apiserver-only fields
 * are reported where they are. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pod.h"
#include "macro.h"
#include "string-util.h"
#include "strv.h"
#include "yaml-node.h"

typedef struct Parsed {
        YamlNode **docs;
        size_t n;
        Diagnostics diag;
} Parsed;

static void parse(Parsed *p, const char *yaml) {
        diagnostics_init(&p->diag);
        int r = yaml_parse_documents(yaml, strlen(yaml), "test.yaml", NULL, &p->docs, &p->n,
                                     &p->diag);
        if (r < 0)
                diagnostics_print(&p->diag, stderr);
        assert_int_equal(r, 0);
        assert_int_equal(p->n, 1);
}

static void parsed_done(Parsed *p) {
        yaml_documents_free(p->docs, p->n);
        diagnostics_deinit(&p->diag);
}

static int decode_pod(Parsed *p, const char *yaml, Pod **ret) {
        parse(p, yaml);
        PodDecodeOptions o = { .file = "test.yaml", .node_name = "node1" };
        return pod_decode(p->docs[0], &o, ret, &p->diag);
}

/* The diagnostic at path (NULL if none). */
static const Diag *find_diag(const Diagnostics *d, const char *path) {
        for (size_t i = 0; i < d->n; i++)
                if (d->items[i].path && strcmp(d->items[i].path, path) == 0)
                        return &d->items[i];
        return NULL;
}

static void assert_diag(const Diagnostics *d, DiagLevel level, const char *path, unsigned line,
                        const char *msg) {
        const Diag *x = find_diag(d, path);
        if (!x) {
                diagnostics_print(d, stderr);
                fail_msg("no diagnostic at %s", path);
        }
        assert_int_equal(x->level, level);
        assert_int_equal(x->line, line);
        if (!strstr(x->message, msg))
                fail_msg("%s: message \"%s\" lacks \"%s\"", path, x->message, msg);
        assert_string_equal(x->file, "test.yaml");
}

static const char full_pod[] =
        "apiVersion: v1\n"                                                     /* 1 */
        "kind: Pod\n"                                                          /* 2 */
        "metadata:\n"                                                          /* 3 */
        "  name: web\n"                                                        /* 4 */
        "  namespace: edge\n"                                                  /* 5 */
        "  uid: 0a1b-2c\n"                                                     /* 6 */
        "  creationTimestamp: null\n"                                          /* 7 */
        "  labels: {app: web, tier: front}\n"                                  /* 8 */
        "  annotations:\n"                                                     /* 9 */
        "    nanolet.io/wait-for: kube-system/etcd,db\n"                       /* 10 */
        "spec:\n"                                                              /* 11 */
        "  restartPolicy: OnFailure\n"                                         /* 12 */
        "  terminationGracePeriodSeconds: 45\n"                                /* 13 */
        "  activeDeadlineSeconds: 3600\n"                                      /* 14 */
        "  hostNetwork: false\n"                                               /* 15 */
        "  hostPID: false\n"                                                   /* 16 */
        "  hostIPC: true\n"                                                    /* 17 */
        "  shareProcessNamespace: true\n"                                      /* 18 */
        "  hostname: web1\n"                                                   /* 19 */
        "  subdomain: svc\n"                                                   /* 20 */
        "  hostAliases:\n"                                                     /* 21 */
        "  - ip: 10.0.0.5\n"                                                   /* 22 */
        "    hostnames: [db.local, db]\n"                                      /* 23 */
        "  dnsPolicy: None\n"                                                  /* 24 */
        "  dnsConfig:\n"                                                       /* 25 */
        "    nameservers: [1.1.1.1, \"2001:db8::1\"]\n"                        /* 26 */
        "    searches: [example.com]\n"                                        /* 27 */
        "    options: [{name: ndots, value: \"2\"}, {name: edns0}]\n"          /* 28 */
        "  nodeName: other\n"                                                  /* 29 */
        "  priorityClassName: system-node-critical\n"                          /* 30 */
        "  tolerations: [{operator: Exists}]\n"                                /* 31 */
        "  imagePullSecrets: [{name: regcred}]\n"                              /* 32 */
        "  os: {name: linux}\n"                                                /* 33 */
        "  enableServiceLinks: false\n"                                        /* 34 */
        "  serviceAccountName: default\n"                                      /* 35 */
        "  securityContext:\n"                                                 /* 36 */
        "    runAsUser: 1000\n"                                                /* 37 */
        "    runAsGroup: 2000\n"                                               /* 38 */
        "    runAsNonRoot: true\n"                                             /* 39 */
        "    supplementalGroups: [3000, 3001]\n"                               /* 40 */
        "    fsGroup: 4000\n"                                                  /* 41 */
        "    sysctls: [{name: net.ipv4.ip_forward, value: \"1\"}]\n"           /* 42 */
        "    seccompProfile: {type: Localhost, localhostProfile: prof.json}\n" /* 43 */
        "  volumes:\n"                                                         /* 44 */
        "  - name: data\n"                                                     /* 45 */
        "    hostPath: {path: /srv/data, type: DirectoryOrCreate}\n"           /* 46 */
        "  - name: scratch\n"                                                  /* 47 */
        "    emptyDir: {medium: Memory, sizeLimit: 64Mi}\n"                    /* 48 */
        "  - name: cfg\n"                                                      /* 49 */
        "    configMap:\n"                                                     /* 50 */
        "      name: web-config\n"                                             /* 51 */
        "      defaultMode: 0440\n"                                            /* 52 */
        "      optional: true\n"                                               /* 53 */
        "      items: [{key: a.conf, path: conf/a.conf, mode: 0400}]\n"        /* 54 */
        "  - name: creds\n"                                                    /* 55 */
        "    secret: {secretName: web-secret}\n"                               /* 56 */
        "  - name: info\n"                                                     /* 57 */
        "    downwardAPI:\n"                                                   /* 58 */
        "      items:\n"                                                       /* 59 */
        "      - {path: labels, fieldRef: {fieldPath: metadata.labels}}\n"     /* 60 */
        "      - path: cpu\n"                                                  /* 61 */
        "        resourceFieldRef: {containerName: app, resource: limits.cpu, "
        "divisor: 1m}\n"                                                   /* 62 */
        "  - name: all\n"                                                  /* 63 */
        "    projected:\n"                                                 /* 64 */
        "      defaultMode: 0600\n"                                        /* 65 */
        "      sources:\n"                                                 /* 66 */
        "      - configMap: {name: web-config}\n"                          /* 67 */
        "      - secret: {name: web-secret, items: [{key: k, path: k}]}\n" /* 68 */
        "      - downwardAPI: {items: [{path: name, fieldRef: {fieldPath: "
        "metadata.name}}]}\n"                                        /* 69 */
        "  - name: tools\n"                                          /* 70 */
        "    image: {reference: \"tools:1.0\", pullPolicy: Never}\n" /* 71 */
        "  initContainers:\n"                                        /* 72 */
        "  - name: setup\n"                                          /* 73 */
        "    image: busybox\n"                                       /* 74 */
        "    command: [sh, -c, \"true\"]\n"                          /* 75 */
        "  - name: proxy\n"                                          /* 76 */
        "    image: proxy@sha256:0123\n"                             /* 77 */
        "    restartPolicy: Always\n"                                /* 78 */
        "    startupProbe: {tcpSocket: {port: 15000}}\n"             /* 79 */
        "  containers:\n"                                            /* 80 */
        "  - name: app\n"                                            /* 81 */
        "    image: registry.local:5000/app:1.2\n"                   /* 82 */
        "    imagePullPolicy: Never\n"                               /* 83 */
        "    command: [/bin/app]\n"                                  /* 84 */
        "    args: [--port, $(PORT)]\n"                              /* 85 */
        "    workingDir: /work\n"                                    /* 86 */
        "    stdin: true\n"                                          /* 87 */
        "    stdinOnce: true\n"                                      /* 88 */
        "    tty: true\n"                                            /* 89 */
        "    terminationMessagePath: /tmp/msg\n"                     /* 90 */
        "    terminationMessagePolicy: FallbackToLogsOnError\n"      /* 91 */
        "    ports:\n"                                               /* 92 */
        "    - {name: http, containerPort: 8080, hostPort: 80, protocol: TCP, hostIP: "
        "127.0.0.1}\n"                                                           /* 93 */
        "    - {containerPort: 5353, protocol: UDP}\n"                           /* 94 */
        "    env:\n"                                                             /* 95 */
        "    - {name: PORT, value: \"8080\"}\n"                                  /* 96 */
        "    - name: POD\n"                                                      /* 97 */
        "      valueFrom: {fieldRef: {fieldPath: \"metadata.labels['app']\"}}\n" /* 98
                                                                                  */
        "    - name: MEM\n"                                                      /* 99 */
        "      valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: "
        "1Mi}}\n"          /* 100 */
        "    - name: CM\n" /* 101 */
        "      valueFrom: {configMapKeyRef: {name: web-config, key: a.conf, optional: "
        "true}}\n"                                                       /* 102 */
        "    - name: SEC\n"                                              /* 103 */
        "      valueFrom: {secretKeyRef: {name: web-secret, key: pw}}\n" /* 104 */
        "    envFrom:\n"                                                 /* 105 */
        "    - {prefix: CFG_, configMapRef: {name: web-config}}\n"       /* 106 */
        "    - secretRef: {name: web-secret, optional: true}\n"          /* 107 */
        "    resources:\n"                                               /* 108 */
        "      requests: {cpu: 250m, memory: 64Mi, ephemeral-storage: 1Gi, "
        "hugepages-2Mi: 4Mi}\n"                                       /* 109 */
        "      limits: {cpu: 1, memory: 128Mi, hugepages-2Mi: 4Mi}\n" /* 110 */
        "    volumeMounts:\n"                                         /* 111 */
        "    - {name: data, mountPath: /data, readOnly: true, subPath: sub, "
        "mountPropagation: HostToContainer}\n"                              /* 112 */
        "    - {name: scratch, mountPath: /scratch, subPathExpr: $(POD)}\n" /* 113 */
        "    livenessProbe:\n"                                              /* 114 */
        "      httpGet:\n"                                                  /* 115 */
        "        path: /healthz\n"                                          /* 116 */
        "        port: http\n"                                              /* 117 */
        "        host: 127.0.0.1\n"                                         /* 118 */
        "        scheme: HTTPS\n"                                           /* 119 */
        "        httpHeaders: [{name: X-Probe, value: \"1\"}]\n"            /* 120 */
        "      initialDelaySeconds: 5\n"                                    /* 121 */
        "      timeoutSeconds: 2\n"                                         /* 122 */
        "      periodSeconds: 7\n"                                          /* 123 */
        "      successThreshold: 1\n"                                       /* 124 */
        "      failureThreshold: 4\n"                                       /* 125 */
        "      terminationGracePeriodSeconds: 9\n"                          /* 126 */
        "    readinessProbe: {grpc: {port: 9090, service: health}}\n"       /* 127 */
        "    startupProbe: {exec: {command: [cat, /ready]}}\n"              /* 128 */
        "    lifecycle:\n"                                                  /* 129 */
        "      postStart: {exec: {command: [touch, /started]}}\n"           /* 130 */
        "      preStop: {sleep: {seconds: 3}}\n"                            /* 131 */
        "    securityContext:\n"                                            /* 132 */
        "      capabilities: {add: [NET_ADMIN], drop: [ALL]}\n"             /* 133 */
        "      privileged: false\n"                                         /* 134 */
        "      runAsUser: 0\n"                                              /* 135 */
        "      runAsGroup: 10\n"                                            /* 136 */
        "      runAsNonRoot: false\n"                                       /* 137 */
        "      readOnlyRootFilesystem: true\n"                              /* 138 */
        "      allowPrivilegeEscalation: false\n"                           /* 139 */
        "      procMount: Default\n"                                        /* 140 */
        "      seccompProfile: {type: RuntimeDefault}\n"                    /* 141 */
        "status: {phase: Running}\n";                                       /* 142 */

static void test_full_pod(void **state) {
        Parsed ps;
        _cleanup_pod_free_ Pod *p = NULL;
        int r = decode_pod(&ps, full_pod, &p);
        if (r < 0 || ps.diag.n > 0)
                diagnostics_print(&ps.diag, stderr);
        assert_int_equal(r, 0);
        assert_int_equal(ps.diag.n, 0); /* status, creationTimestamp, tolerations: silent */

        /* metadata */
        assert_string_equal(pod_get_name(p), "web-node1");
        assert_string_equal(pod_get_namespace(p), "edge");
        assert_string_equal(pod_get_uid(p), "0a1b-2c");
        assert_int_equal(p->metadata.labels.n, 2);
        assert_string_equal(p->metadata.labels.items[0].key, "app");
        assert_string_equal(p->metadata.labels.items[0].value, "web");
        assert_string_equal(p->metadata.labels.items[1].key, "tier");
        assert_string_equal(string_map_get(&p->metadata.annotations, "nanolet.io/wait-for")->value,
                            "kube-system/etcd,db");

        /* spec scalars */
        const PodSpec *s = &p->spec;
        assert_int_equal(s->restart_policy, RESTART_POLICY_ON_FAILURE);
        assert_true(s->termination_grace_period_seconds.set);
        assert_int_equal(s->termination_grace_period_seconds.value, 45);
        assert_true(s->active_deadline_seconds.set);
        assert_int_equal(s->active_deadline_seconds.value, 3600);
        assert_false(s->host_network);
        assert_false(s->host_pid);
        assert_true(s->host_ipc);
        assert_true(s->share_process_namespace);
        assert_string_equal(s->hostname, "web1");
        assert_string_equal(s->subdomain, "svc");
        assert_int_equal(s->n_host_aliases, 1);
        assert_string_equal(s->host_aliases[0].ip, "10.0.0.5");
        assert_int_equal(strv_length(s->host_aliases[0].hostnames), 2);
        assert_string_equal(s->host_aliases[0].hostnames[1], "db");
        assert_int_equal(s->dns_policy, DNS_POLICY_NONE);
        assert_non_null(s->dns_config);
        assert_string_equal(s->dns_config->nameservers[1], "2001:db8::1");
        assert_string_equal(s->dns_config->searches[0], "example.com");
        assert_int_equal(s->dns_config->n_options, 2);
        assert_string_equal(s->dns_config->options[0].name, "ndots");
        assert_string_equal(s->dns_config->options[0].value, "2");
        assert_null(s->dns_config->options[1].value);
        assert_string_equal(s->node_name, "other");
        assert_string_equal(s->priority_class_name, "system-node-critical");
        assert_true(s->priority.set);
        assert_int_equal(s->priority.value, 2000001000);
        assert_int_equal(strv_length(s->image_pull_secrets), 1);
        assert_string_equal(s->image_pull_secrets[0], "regcred");
        assert_int_equal(s->os.name, OS_NAME_LINUX);
        assert_true(s->enable_service_links.set);
        assert_false(s->enable_service_links.value);
        assert_string_equal(s->service_account_name, "default");

        /* pod security context */
        const PodSecurityContext *psc = s->security_context;
        assert_non_null(psc);
        assert_int_equal(psc->run_as_user.value, 1000);
        assert_int_equal(psc->run_as_group.value, 2000);
        assert_true(psc->run_as_non_root.set && psc->run_as_non_root.value);
        assert_int_equal(psc->n_supplemental_groups, 2);
        assert_int_equal(psc->supplemental_groups[1], 3001);
        assert_int_equal(psc->fs_group.value, 4000);
        assert_int_equal(psc->n_sysctls, 1);
        assert_string_equal(psc->sysctls[0].name, "net.ipv4.ip_forward");
        assert_string_equal(psc->sysctls[0].value, "1");
        assert_int_equal(psc->seccomp_profile->type, SECCOMP_PROFILE_LOCALHOST);
        assert_string_equal(psc->seccomp_profile->localhost_profile, "prof.json");

        /* volumes */
        assert_int_equal(s->n_volumes, 7);
        const Volume *v = s->volumes;
        assert_string_equal(v[0].name, "data");
        assert_int_equal(v[0].type, VOLUME_HOST_PATH);
        assert_string_equal(v[0].host_path.path, "/srv/data");
        assert_int_equal(v[0].host_path.type, HOST_PATH_DIRECTORY_OR_CREATE);
        assert_int_equal(v[1].type, VOLUME_EMPTY_DIR);
        assert_int_equal(v[1].empty_dir.medium, STORAGE_MEDIUM_MEMORY);
        assert_true(v[1].empty_dir.size_limit.set);
        assert_int_equal(v[1].empty_dir.size_limit.value.value, 64 * 1024 * 1024);
        assert_int_equal(v[2].type, VOLUME_CONFIG_MAP);
        assert_string_equal(v[2].config_map.name, "web-config");
        assert_int_equal(v[2].config_map.default_mode.value, 0440);
        assert_true(v[2].config_map.optional);
        assert_int_equal(v[2].config_map.n_items, 1);
        assert_string_equal(v[2].config_map.items[0].key, "a.conf");
        assert_string_equal(v[2].config_map.items[0].path, "conf/a.conf");
        assert_int_equal(v[2].config_map.items[0].mode.value, 0400);
        assert_int_equal(v[3].type, VOLUME_SECRET);
        assert_string_equal(v[3].secret.name, "web-secret");
        assert_int_equal(v[3].secret.default_mode.value, 0644);
        assert_int_equal(v[4].type, VOLUME_DOWNWARD_API);
        assert_int_equal(v[4].downward_api.n_items, 2);
        assert_string_equal(v[4].downward_api.items[0].field_ref->field_path, "metadata.labels");
        assert_string_equal(v[4].downward_api.items[0].field_ref->api_version, "v1");
        assert_string_equal(v[4].downward_api.items[1].resource_field_ref->container_name, "app");
        assert_int_equal(v[4].downward_api.items[1].resource_field_ref->divisor.value.milli, 1);
        assert_int_equal(v[5].type, VOLUME_PROJECTED);
        assert_int_equal(v[5].projected.default_mode.value, 0600);
        assert_int_equal(v[5].projected.n_sources, 3);
        assert_string_equal(v[5].projected.sources[0].config_map->name, "web-config");
        assert_string_equal(v[5].projected.sources[1].secret->items[0].key, "k");
        assert_string_equal(v[5].projected.sources[2].downward_api->items[0].path, "name");
        assert_int_equal(v[6].type, VOLUME_IMAGE);
        assert_string_equal(v[6].image.reference, "tools:1.0");
        assert_int_equal(v[6].image.pull_policy, PULL_POLICY_NEVER);

        /* init containers */
        assert_int_equal(s->n_init_containers, 2);
        assert_string_equal(s->init_containers[0].name, "setup");
        assert_false(container_is_sidecar(&s->init_containers[0]));
        assert_int_equal(strv_length(s->init_containers[0].command), 3);
        assert_int_equal(s->init_containers[0].image_pull_policy, PULL_POLICY_ALWAYS); /* no tag */
        assert_true(container_is_sidecar(&s->init_containers[1]));
        assert_int_equal(s->init_containers[1].image_pull_policy, PULL_POLICY_IF_NOT_PRESENT);
        assert_int_equal(s->init_containers[1].startup_probe->handler.tcp_socket->port.num, 15000);

        /* the app container */
        assert_int_equal(s->n_containers, 1);
        const Container *c = &s->containers[0];
        assert_ptr_equal(pod_find_container(p, "app"), c);
        assert_string_equal(c->image, "registry.local:5000/app:1.2");
        assert_int_equal(c->image_pull_policy, PULL_POLICY_NEVER);
        assert_string_equal(c->command[0], "/bin/app");
        assert_string_equal(c->args[1], "$(PORT)");
        assert_string_equal(c->working_dir, "/work");
        assert_true(c->stdin_open);
        assert_true(c->stdin_once);
        assert_true(c->tty);
        assert_string_equal(c->termination_message_path, "/tmp/msg");
        assert_int_equal(c->termination_message_policy,
                         TERMINATION_MESSAGE_FALLBACK_TO_LOGS_ON_ERROR);
        assert_int_equal(c->n_ports, 2);
        assert_string_equal(c->ports[0].name, "http");
        assert_int_equal(c->ports[0].container_port, 8080);
        assert_int_equal(c->ports[0].host_port, 80);
        assert_int_equal(c->ports[0].protocol, PROTOCOL_TCP);
        assert_string_equal(c->ports[0].host_ip, "127.0.0.1");
        assert_int_equal(c->ports[1].protocol, PROTOCOL_UDP);
        assert_int_equal(c->ports[1].host_port, 0);
        assert_int_equal(container_find_port(c, "http"), 8080);

        assert_int_equal(c->n_env, 5);
        assert_string_equal(c->env[0].value, "8080");
        assert_null(c->env[0].value_from);
        assert_string_equal(c->env[1].value_from->field_ref->field_path, "metadata.labels['app']");
        assert_string_equal(c->env[2].value_from->resource_field_ref->resource, "limits.memory");
        assert_int_equal(c->env[2].value_from->resource_field_ref->divisor.value.value, 1048576);
        assert_string_equal(c->env[3].value_from->config_map_key_ref->key, "a.conf");
        assert_true(c->env[3].value_from->config_map_key_ref->optional);
        assert_string_equal(c->env[4].value_from->secret_key_ref->name, "web-secret");
        assert_int_equal(c->n_env_from, 2);
        assert_string_equal(c->env_from[0].prefix, "CFG_");
        assert_string_equal(c->env_from[0].config_map_ref->name, "web-config");
        assert_true(c->env_from[1].secret_ref->optional);

        assert_true(c->resources.requests.cpu.set);
        assert_int_equal(c->resources.requests.cpu.value.milli, 250);
        assert_int_equal(c->resources.requests.memory.value.value, 64 * 1024 * 1024);
        assert_int_equal(c->resources.requests.ephemeral_storage.value.value, 1024 * 1024 * 1024);
        assert_int_equal(c->resources.requests.n_hugepages, 1);
        assert_string_equal(c->resources.requests.hugepages[0].page_size, "2Mi");
        assert_int_equal(c->resources.requests.hugepages[0].value.value, 4 * 1024 * 1024);
        assert_int_equal(c->resources.limits.cpu.value.milli, 1000);
        assert_false(c->resources.limits.ephemeral_storage.set);

        assert_int_equal(c->n_volume_mounts, 2);
        assert_true(c->volume_mounts[0].read_only);
        assert_string_equal(c->volume_mounts[0].sub_path, "sub");
        assert_int_equal(c->volume_mounts[0].mount_propagation,
                         MOUNT_PROPAGATION_HOST_TO_CONTAINER);
        assert_string_equal(c->volume_mounts[1].sub_path_expr, "$(POD)");
        assert_int_equal(c->volume_mounts[1].mount_propagation, MOUNT_PROPAGATION_NONE);

        const Probe *lp = c->liveness_probe;
        assert_non_null(lp->handler.http_get);
        assert_string_equal(lp->handler.http_get->path, "/healthz");
        assert_string_equal(lp->handler.http_get->port.str, "http");
        assert_string_equal(lp->handler.http_get->host, "127.0.0.1");
        assert_int_equal(lp->handler.http_get->scheme, URI_SCHEME_HTTPS);
        assert_int_equal(lp->handler.http_get->n_http_headers, 1);
        assert_string_equal(lp->handler.http_get->http_headers[0].name, "X-Probe");
        assert_int_equal(lp->initial_delay_seconds, 5);
        assert_int_equal(lp->timeout_seconds, 2);
        assert_int_equal(lp->period_seconds, 7);
        assert_int_equal(lp->success_threshold, 1);
        assert_int_equal(lp->failure_threshold, 4);
        assert_int_equal(lp->termination_grace_period_seconds.value, 9);
        assert_int_equal(c->readiness_probe->handler.grpc->port, 9090);
        assert_string_equal(c->readiness_probe->handler.grpc->service, "health");
        assert_string_equal(c->startup_probe->handler.exec->command[1], "/ready");
        assert_string_equal(c->lifecycle->post_start->exec->command[0], "touch");
        assert_int_equal(c->lifecycle->pre_stop->sleep->seconds, 3);

        const SecurityContext *sc = c->security_context;
        assert_string_equal(sc->capabilities->add[0], "NET_ADMIN");
        assert_string_equal(sc->capabilities->drop[0], "ALL");
        assert_true(sc->privileged.set && !sc->privileged.value);
        assert_true(sc->run_as_user.set);
        assert_int_equal(sc->run_as_user.value, 0);
        assert_int_equal(sc->run_as_group.value, 10);
        assert_true(sc->run_as_non_root.set && !sc->run_as_non_root.value);
        assert_true(sc->read_only_root_filesystem.value);
        assert_true(sc->allow_privilege_escalation.set && !sc->allow_privilege_escalation.value);
        assert_int_equal(sc->proc_mount, PROC_MOUNT_DEFAULT);
        assert_int_equal(sc->seccomp_profile->type, SECCOMP_PROFILE_RUNTIME_DEFAULT);

        parsed_done(&ps);
}

static void test_defaults(void **state) {
        Parsed ps;
        _cleanup_pod_free_ Pod *p = NULL;
        int r = decode_pod(
                &ps,
                "apiVersion: v1\nkind: Pod\nmetadata: {name: d}\n"
                "spec:\n"
                "  hostNetwork: true\n"
                "  volumes:\n"
                "  - {name: h, hostPath: {path: /x}}\n"
                "  - {name: e, emptyDir: {}}\n"
                "  - {name: c, configMap: {name: c}}\n"
                "  - {name: w, downwardAPI: {items: [{path: nm, fieldRef: {fieldPath: "
                "metadata.name}}]}}\n"
                "  - {name: p, projected: {sources: []}}\n"
                "  - {name: i, image: {reference: 'img:latest'}}\n"
                "  containers:\n"
                "  - name: a\n"
                "    image: nginx:latest\n"
                "    ports: [{containerPort: 8080}]\n"
                "    env: [{name: X, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}]\n"
                "    readinessProbe: {httpGet: {port: 8080}}\n"
                "    lifecycle: {preStop: {httpGet: {port: 80}}}\n"
                "  - {name: b, image: 'nginx:1.25'}\n"
                "  - {name: c, image: 'nginx@sha256:abc'}\n"
                "  - {name: d, image: 'localhost:5000/nginx'}\n",
                &p);
        if (r < 0)
                diagnostics_print(&ps.diag, stderr);
        assert_int_equal(r, 0);
        const PodSpec *s = &p->spec;
        assert_string_equal(p->metadata.namespace, "default");
        assert_string_equal(p->metadata.name, "d-node1");
        assert_null(p->metadata.uid);
        assert_int_equal(s->restart_policy, RESTART_POLICY_ALWAYS);
        assert_int_equal(s->termination_grace_period_seconds.value, 30);
        assert_int_equal(s->dns_policy, DNS_POLICY_CLUSTER_FIRST);
        assert_true(s->enable_service_links.set && s->enable_service_links.value);
        assert_false(s->priority.set);
        assert_int_equal(s->os.name, _OS_NAME_INVALID);
        assert_null(s->security_context);

        assert_int_equal(s->volumes[0].host_path.type, HOST_PATH_UNSET);
        assert_int_equal(s->volumes[1].empty_dir.medium, STORAGE_MEDIUM_DEFAULT);
        assert_false(s->volumes[1].empty_dir.size_limit.set);
        assert_int_equal(s->volumes[2].config_map.default_mode.value, 0644);
        assert_int_equal(s->volumes[3].downward_api.default_mode.value, 0644);
        assert_string_equal(s->volumes[3].downward_api.items[0].field_ref->api_version, "v1");
        assert_int_equal(s->volumes[4].projected.default_mode.value, 0644);
        assert_int_equal(s->volumes[5].image.pull_policy, PULL_POLICY_ALWAYS);

        const Container *a = &s->containers[0];
        assert_int_equal(a->image_pull_policy, PULL_POLICY_ALWAYS);
        assert_string_equal(a->termination_message_path, "/dev/termination-log");
        assert_int_equal(a->termination_message_policy, TERMINATION_MESSAGE_FILE);
        assert_int_equal(a->ports[0].protocol, PROTOCOL_TCP);
        assert_int_equal(a->ports[0].host_port, 8080); /* hostNetwork */
        assert_int_equal(a->env[0].value_from->resource_field_ref->divisor.value.value, 1);
        assert_int_equal(a->restart_policy, _RESTART_POLICY_INVALID);
        assert_null(a->security_context);
        const Probe *rp = a->readiness_probe;
        assert_int_equal(rp->timeout_seconds, 1);
        assert_int_equal(rp->period_seconds, 10);
        assert_int_equal(rp->success_threshold, 1);
        assert_int_equal(rp->failure_threshold, 3);
        assert_int_equal(rp->initial_delay_seconds, 0);
        assert_string_equal(rp->handler.http_get->path, "/");
        assert_int_equal(rp->handler.http_get->scheme, URI_SCHEME_HTTP);
        assert_string_equal(a->lifecycle->pre_stop->http_get->path, "/");
        assert_int_equal(s->containers[1].image_pull_policy, PULL_POLICY_IF_NOT_PRESENT);
        assert_int_equal(s->containers[2].image_pull_policy, PULL_POLICY_IF_NOT_PRESENT);
        assert_int_equal(s->containers[3].image_pull_policy, PULL_POLICY_ALWAYS);
        parsed_done(&ps);
}

static void test_pull_policy_for_image_via_enum_strings(void **state) {
        assert_string_equal(restart_policy_to_string(RESTART_POLICY_ON_FAILURE), "OnFailure");
        assert_int_equal(restart_policy_from_string("Never"), RESTART_POLICY_NEVER);
        assert_int_equal(restart_policy_from_string("never"), -EINVAL);
        assert_null(restart_policy_to_string(_RESTART_POLICY_MAX));
        assert_null(restart_policy_to_string(_RESTART_POLICY_INVALID));
        assert_int_equal(host_path_type_from_string(""), HOST_PATH_UNSET);
        assert_string_equal(host_path_type_to_string(HOST_PATH_CHAR_DEVICE), "CharDevice");
        assert_string_equal(dns_policy_to_string(DNS_POLICY_CLUSTER_FIRST_WITH_HOST_NET),
                            "ClusterFirstWithHostNet");
        assert_int_equal(seccomp_profile_type_from_string("Localhost"), SECCOMP_PROFILE_LOCALHOST);
        assert_int_equal(secret_type_from_string("kubernetes.io/tls"), SECRET_TYPE_TLS);
        assert_string_equal(volume_type_to_string(VOLUME_DOWNWARD_API), "downwardAPI");
        assert_int_equal(protocol_from_string("SCTP"), PROTOCOL_SCTP);
        assert_int_equal(pull_policy_from_string("IfNotPresent"), PULL_POLICY_IF_NOT_PRESENT);
}

static void test_type_errors(void **state) {
        Parsed ps;
        Pod *p = NULL;
        int r = decode_pod(&ps,
                           "apiVersion: v1\nkind: Pod\nmetadata: {name: t}\n"
                           "spec:\n"                                                   /* 4 */
                           "  hostNetwork: yes please\n"                               /* 5 */
                           "  containers:\n"                                           /* 6 */
                           "  - name: a\n"                                             /* 7 */
                           "    image: 42\n"                                           /* 8 */
                           "    ports:\n"                                              /* 9 */
                           "    - containerPort: 80\n"                                 /* 10 */
                           "    - containerPort: eighty\n"                             /* 11 */
                           "    - {containerPort: 99999999999}\n"                      /* 12 */
                           "    command: sh\n"                                         /* 13 */
                           "    args: [a, [b]]\n"                                      /* 14 */
                           "    imagePullPolicy: Sometimes\n"                          /* 15 */
                           "    resources: {limits: {cpu: lots, nvidia.com/gpu: 1}}\n" /* 16 */
                           "    readinessProbe: {tcpSocket: {port: true}}\n"           /* 17 */
                           "  restartPolicy: 3\n",                                     /* 18 */
                           &p);
        assert_int_equal(r, -EINVAL);
        assert_null(p);
        assert_diag(&ps.diag, DIAG_ERROR, "spec.hostNetwork", 5, "must be a boolean");
        assert_diag(&ps.diag, DIAG_ERROR, "spec.containers[0].image", 8, "must be a string");
        assert_diag(&ps.diag, DIAG_ERROR, "spec.containers[0].ports[1].containerPort", 11,
                    "must be an integer");
        assert_diag(&ps.diag, DIAG_ERROR, "spec.containers[0].ports[2].containerPort", 12,
                    "must be a 32-bit integer");
        assert_diag(&ps.diag, DIAG_ERROR, "spec.containers[0].command", 13,
                    "must be a list of strings");
        assert_diag(&ps.diag, DIAG_ERROR, "spec.containers[0].args[1]", 14, "must be a string");
        assert_diag(&ps.diag, DIAG_ERROR, "spec.containers[0].imagePullPolicy", 15,
                    "unsupported value \"Sometimes\": supported values: \"Always\", "
                    "\"IfNotPresent\", \"Never\"");
        assert_diag(&ps.diag, DIAG_ERROR, "spec.containers[0].resources.limits[cpu]", 16,
                    "not a valid quantity");
        assert_diag(&ps.diag, DIAG_ERROR, "spec.containers[0].resources.limits[nvidia.com/gpu]", 16,
                    "is not supported by nanolet");
        assert_diag(&ps.diag, DIAG_ERROR, "spec.containers[0].readinessProbe.tcpSocket.port", 17,
                    "must be an integer or a string");
        assert_diag(&ps.diag, DIAG_ERROR, "spec.restartPolicy", 18, "must be a string");
        /* the bad ports are not reported a second time by validation */
        assert_int_equal(ps.diag.n_errors, 11);
        parsed_done(&ps);
}

static void test_unknown_and_ignored(void **state) {
        Parsed ps;
        _cleanup_pod_free_ Pod *p = NULL;
        int r = decode_pod(&ps,
                           "apiVersion: v1\nkind: Pod\n"
                           "metadata: {name: u, colour: red}\n"          /* 3 */
                           "spec:\n"                                     /* 4 */
                           "  schedulerName: mine\n"                     /* 5 */
                           "  affinity: {}\n"                            /* 6 */
                           "  automountServiceAccountToken: true\n"      /* 7 */
                           "  runtimeClassName: kata\n"                  /* 8 */
                           "  nodeSelector: {disk: ssd}\n"               /* 9 */
                           "  containers:\n"                             /* 10 */
                           "  - name: a\n"                               /* 11 */
                           "    image: busybox:1\n"                      /* 12 */
                           "    imagePullPolcy: Always\n"                /* 13 */
                           "    resizePolicy: []\n"                      /* 14 */
                           "    securityContext: {seLinuxOptions: {}}\n" /* 15 */
                           "  volumes:\n"                                /* 16 */
                           "  - {name: v, emptyDir: {}, flavour: x}\n"   /* 17 */
                           "status: {phase: Pending}\n",
                           &p);
        if (r < 0)
                diagnostics_print(&ps.diag, stderr);
        assert_int_equal(r, 0);
        assert_int_equal(ps.diag.n_errors, 0);
        assert_diag(&ps.diag, DIAG_WARNING, "metadata.colour", 3,
                    "unknown field \"metadata.colour\"");
        assert_diag(&ps.diag, DIAG_WARNING, "spec.containers[0].imagePullPolcy", 13,
                    "unknown field \"spec.containers[0].imagePullPolcy\"");
        assert_diag(&ps.diag, DIAG_WARNING, "spec.volumes[0].flavour", 17,
                    "unknown field \"spec.volumes[0].flavour\"");
        assert_diag(&ps.diag, DIAG_WARNING, "spec.schedulerName", 5, "is ignored by nanolet");
        assert_diag(&ps.diag, DIAG_WARNING, "spec.affinity", 6, "is ignored by nanolet");
        assert_diag(&ps.diag, DIAG_WARNING, "spec.automountServiceAccountToken", 7,
                    "is ignored by nanolet");
        assert_diag(&ps.diag, DIAG_WARNING, "spec.runtimeClassName", 8, "is ignored by nanolet");
        assert_diag(&ps.diag, DIAG_WARNING, "spec.nodeSelector", 9, "is ignored by nanolet");
        assert_diag(&ps.diag, DIAG_WARNING, "spec.containers[0].resizePolicy", 14,
                    "is ignored by nanolet");
        assert_diag(&ps.diag, DIAG_WARNING, "spec.containers[0].securityContext.seLinuxOptions", 15,
                    "is ignored by nanolet");
        assert_int_equal(ps.diag.n_warnings, 10);
        assert_null(find_diag(&ps.diag, "status"));
        assert_string_equal(p->spec.node_selector.items[0].value, "ssd");
        parsed_done(&ps);
}

/* The Priority admission plugin's rule: a system priority only from its
 * class; a hand-set value that differs from the class's, or above what a
 * user-defined class may hold without a system class, is refused with the
 * file, line and field. */
static int decode_priority(const char *spec_lines, Parsed *ps) {
        Pod *p = NULL;
        _cleanup_free_ char *yaml = strprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: pri}\n"
                                              "spec:\n"
                                              "  containers: [{name: a, image: busybox:1}]\n"
                                              "%s",
                                              spec_lines);
        assert_non_null(yaml);
        int r = decode_pod(ps, yaml, &p);
        pod_free(p);
        return r;
}

static void test_priority(void **state) {
        static const char *const good[] = {
                "  priorityClassName: system-node-critical\n",
                "  priorityClassName: system-node-critical\n  priority: 2000001000\n",
                "  priorityClassName: system-cluster-critical\n  priority: 2000000000\n",
                "  priority: 1000000000\n",
                "  priority: -5\n",
                "  priorityClassName: high\n  priority: 1000\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                Parsed ps;
                int r = decode_priority(good[i], &ps);
                if (r < 0 || ps.diag.n_errors)
                        diagnostics_print(&ps.diag, stderr);
                assert_int_equal(r, 0);
                assert_int_equal(ps.diag.n_errors, 0);
                parsed_done(&ps);
        }
        static const struct {
                const char *lines, *path, *msg;
        } bad[] = {
                { "  priority: 2000001000\n", "spec.priority",
                  "invalid value 2000001000: a priority above 1000000000 comes only from "
                  "priorityClassName system-node-critical" },
                { "  priority: 2000000000\n", "spec.priority", "invalid value 2000000000" },
                { "  priority: 1000000001\n", "spec.priority", "invalid value 1000000001" },
                { "  priorityClassName: high\n  priority: 2000001000\n", "spec.priority",
                  "comes only from priorityClassName" },
                { "  priorityClassName: system-node-critical\n  priority: 5\n", "spec.priority",
                  "the integer value of priority (5) must not be provided in pod spec; "
                  "priorityClassName \"system-node-critical\" gives 2000001000" },
                { "  priorityClassName: system-cluster-critical\n  priority: 2000001000\n",
                  "spec.priority", "gives 2000000000" },
                { "  priorityClassName: system-critical\n", "spec.priorityClassName",
                  "no PriorityClass with name \"system-critical\"" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                Parsed ps;
                assert_true(decode_priority(bad[i].lines, &ps) < 0);
                /* the field's own line: line 6 or 7 of the document */
                const Diag *x = find_diag(&ps.diag, bad[i].path);
                if (!x)
                        diagnostics_print(&ps.diag, stderr);
                assert_non_null(x);
                assert_int_equal(x->level, DIAG_ERROR);
                assert_true(x->line == 6 || x->line == 7);
                if (!strstr(x->message, bad[i].msg))
                        fail_msg("%s: \"%s\" lacks \"%s\"", bad[i].lines, x->message, bad[i].msg);
                assert_string_equal(x->file, "test.yaml");
                parsed_done(&ps);
        }
}

static void test_apiserver_references(void **state) {
        Parsed ps;
        Pod *p = NULL;
        int r = decode_pod(&ps,
                           "apiVersion: v1\nkind: Pod\nmetadata: {name: api}\n"
                           "spec:\n"                                                   /* 4 */
                           "  serviceAccountName: builder\n"                           /* 5 */
                           "  containers:\n"                                           /* 6 */
                           "  - name: a\n"                                             /* 7 */
                           "    image: busybox:1\n"                                    /* 8 */
                           "    env:\n"                                                /* 9 */
                           "    - name: NODE\n"                                        /* 10 */
                           "      valueFrom: {fieldRef: {fieldPath: spec.nodeName}}\n" /* 11 */
                           "    - name: SA\n"                                          /* 12 */
                           "      valueFrom: {fieldRef: {fieldPath: status.phase}}\n"  /* 13 */
                           "  volumes:\n"                                              /* 14 */
                           "  - name: claim\n"                                         /* 15 */
                           "    persistentVolumeClaim: {claimName: c}\n"               /* 16 */
                           "  - name: share\n"                                         /* 17 */
                           "    nfs: {server: s, path: /}\n"                           /* 18 */
                           "  - name: inline\n"                                        /* 19 */
                           "    csi: {driver: x}\n"                                    /* 20 */
                           "  - name: tok\n"                                           /* 21 */
                           "    projected:\n"                                          /* 22 */
                           "      sources:\n"                                          /* 23 */
                           "      - serviceAccountToken: {path: token}\n"              /* 24 */
                           "      - clusterTrustBundle: {path: ca}\n",                 /* 25 */
                           &p);
        assert_int_equal(r, -EINVAL);
        assert_diag(&ps.diag, DIAG_ERROR, "spec.serviceAccountName", 5, "needs an apiserver");
        assert_null(find_diag(&ps.diag, "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath"));
        assert_diag(&ps.diag, DIAG_ERROR, "spec.containers[0].env[1].valueFrom.fieldRef.fieldPath",
                    13, "unsupported value \"status.phase\"");
        assert_diag(&ps.diag, DIAG_ERROR, "spec.volumes[0].persistentVolumeClaim", 16,
                    "volume type \"persistentVolumeClaim\" needs an apiserver: use hostPath");
        assert_diag(&ps.diag, DIAG_ERROR, "spec.volumes[1].nfs", 18,
                    "volume type \"nfs\" is not supported by nanolet: use hostPath");
        assert_diag(&ps.diag, DIAG_ERROR, "spec.volumes[2].csi", 20, "needs an apiserver");
        assert_diag(&ps.diag, DIAG_ERROR,
                    "spec.volumes[3].projected.sources[0].serviceAccountToken", 24,
                    "need an apiserver");
        assert_diag(&ps.diag, DIAG_ERROR, "spec.volumes[3].projected.sources[1].clusterTrustBundle",
                    25, "need an apiserver");
        /* no follow-up "must specify a volume type" noise */
        assert_null(find_diag(&ps.diag, "spec.volumes[0]"));
        assert_null(find_diag(&ps.diag, "spec.volumes[3].projected.sources[0]"));
        assert_int_equal(ps.diag.n_errors, 7);
        parsed_done(&ps);
}

static int decode_doc(Parsed *ps, const char *yaml, bool secret, void **ret) {
        parse(ps, yaml);
        PodDecodeOptions o = { .file = "test.yaml", .node_name = "node1" };
        return secret ? secret_decode(ps->docs[0], &o, (Secret **)ret, &ps->diag)
                      : configmap_decode(ps->docs[0], &o, (ConfigMap **)ret, &ps->diag);
}

static void test_configmap(void **state) {
        Parsed ps;
        ConfigMap *c = NULL;
        int r = decode_doc(&ps,
                           "apiVersion: v1\nkind: ConfigMap\n"
                           "metadata: {name: web-config}\n"
                           "immutable: true\n"
                           "data: {a.conf: \"x=1\\n\", empty: \"\"}\n"
                           "binaryData: {blob: AAEC/w==, txt: aGVsbG8=}\n",
                           false, (void **)&c);
        if (r < 0)
                diagnostics_print(&ps.diag, stderr);
        assert_int_equal(r, 0);
        assert_string_equal(configmap_get_name(c), "web-config"); /* no node suffix */
        assert_string_equal(configmap_get_namespace(c), "default");
        assert_true(c->immutable);
        assert_int_equal(c->data.n, 2);
        assert_string_equal(string_map_get(&c->data, "a.conf")->value, "x=1\n");
        assert_int_equal(c->binary_data.n, 2);
        const KeyValue *b = string_map_get(&c->binary_data, "blob");
        assert_int_equal(b->value_len, 4);
        assert_memory_equal(b->value, "\x00\x01\x02\xff", 4);
        assert_string_equal(string_map_get(&c->binary_data, "txt")->value, "hello");
        assert_int_equal(string_map_get(&c->binary_data, "txt")->value_len, 5);
        configmap_free(c);
        parsed_done(&ps);

        c = NULL;
        r = decode_doc(&ps,
                       "apiVersion: v1\nkind: ConfigMap\n"
                       "metadata: {name: Bad_Name, namespace: x}\n"   /* 3 */
                       "data: {k: v, \"bad key\": v, num: 1}\n"       /* 4 */
                       "binaryData: {k: AA==, z: \"not base64!\"}\n", /* 5 */
                       false, (void **)&c);
        assert_int_equal(r, -EINVAL);
        assert_null(c);
        assert_diag(&ps.diag, DIAG_ERROR, "metadata.name", 3, "RFC 1123 subdomain");
        assert_diag(&ps.diag, DIAG_ERROR, "data[bad key]", 4, "invalid key \"bad key\"");
        assert_diag(&ps.diag, DIAG_ERROR, "data[num]", 4, "must be a string");
        assert_diag(&ps.diag, DIAG_ERROR, "binaryData[z]", 5, "illegal base64 data");
        assert_diag(&ps.diag, DIAG_ERROR, "binaryData[k]", 5, "duplicate of key present in data");
        assert_int_equal(ps.diag.n_errors, 5);
        parsed_done(&ps);
}

/* Map keys in field paths as Kubernetes' field.Path writes them: in
 * brackets, whatever dots or slashes they hold. */
static void test_map_key_paths(void **state) {
        Parsed ps;
        Pod *p = NULL;
        int r = decode_pod(&ps,
                           "apiVersion: v1\nkind: Pod\n"
                           "metadata:\n"
                           "  name: m\n"
                           "  annotations:\n"
                           "    foo.bar/baz: {a: 1}\n"                 /* 6 */
                           "  labels: {app.kubernetes.io/name: [x]}\n" /* 7 */
                           "spec:\n"
                           "  nodeSelector: {kubernetes.io/os: 5.5}\n" /* 9 */
                           "  containers:\n"
                           "  - name: c\n"
                           "    image: busybox\n"
                           "    resources: {limits: {example.com/foo: 1}}\n", /* 13 */
                           &p);
        assert_int_equal(r, -EINVAL);
        assert_diag(&ps.diag, DIAG_ERROR, "metadata.annotations[foo.bar/baz]", 6,
                    "must be a string");
        assert_diag(&ps.diag, DIAG_ERROR, "metadata.labels[app.kubernetes.io/name]", 7,
                    "must be a string");
        assert_diag(&ps.diag, DIAG_ERROR, "spec.nodeSelector[kubernetes.io/os]", 9,
                    "must be a string");
        assert_diag(&ps.diag, DIAG_ERROR, "spec.containers[0].resources.limits[example.com/foo]",
                    13, "is not supported");
        parsed_done(&ps);
}

/* YAML 1.1 scalars, as Kubernetes reads manifests: yes/no/on/off/y/n are
 * booleans, which a boolean field takes and a string field refuses (as
 * kubelet's decoding does), saying how to write the string. */
static void test_yaml11_booleans(void **state) {
        Parsed ps;
        Pod *p = NULL;
        int r = decode_pod(&ps,
                           "apiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec:\n"
                           "  hostNetwork: yes\n"
                           "  containers:\n"
                           "  - {name: c, image: busybox, stdin: on, tty: n}\n",
                           &p);
        assert_int_equal(r, 0);
        assert_true(p->spec.host_network);
        assert_true(p->spec.containers[0].stdin_open);
        assert_false(p->spec.containers[0].tty);
        pod_free(p);
        parsed_done(&ps);

        r = decode_pod(&ps,
                       "apiVersion: v1\nkind: Pod\nmetadata: {name: b, labels: {a: off}}\n"
                       "spec:\n"
                       "  containers:\n"
                       "  - name: c\n"
                       "    image: busybox\n"
                       "    command: [echo, yes]\n" /* 8 */
                       "    env: [{name: A, value: 8080}, {name: B, value: ~}]\n",
                       &p);
        assert_int_equal(r, -EINVAL);
        assert_diag(&ps.diag, DIAG_ERROR, "metadata.labels[a]", 3,
                    "must be a string: off is a boolean in YAML, quote it (\"off\")");
        assert_diag(&ps.diag, DIAG_ERROR, "spec.containers[0].command[1]", 8,
                    "must be a string: yes is a boolean in YAML, quote it (\"yes\")");
        assert_diag(&ps.diag, DIAG_ERROR, "spec.containers[0].env[0].value", 9,
                    "must be a string: 8080 is a number in YAML, quote it (\"8080\")");
        parsed_done(&ps);
}

/* Kubernetes' IsConfigMapKey: keys become file names next to the "..data"
 * symlink of the volume, so "." and ".." and anything starting with ".."
 * are refused, for Secrets too. */
static void test_config_keys_chdir(void **state) {
        Parsed ps;
        ConfigMap *c = NULL;
        Secret *s = NULL;
        int r = decode_doc(&ps,
                           "apiVersion: v1\nkind: ConfigMap\n"
                           "metadata: {name: cm, namespace: x}\n"
                           "data:\n"
                           "  .hidden: ok\n" /* 5 */
                           "  a..b: ok\n"    /* 6 */
                           "  ..data: v\n"   /* 7 */
                           "  ..: v\n"       /* 8 */
                           "  .: v\n",       /* 9 */
                           false, (void **)&c);
        assert_int_equal(r, -EINVAL);
        assert_null(c);
        assert_diag(&ps.diag, DIAG_ERROR, "data[..data]", 7,
                    "invalid key \"..data\": must not start with '..'");
        assert_diag(&ps.diag, DIAG_ERROR, "data[..]", 8, "invalid key \"..\": must not be '..'");
        assert_diag(&ps.diag, DIAG_ERROR, "data[.]", 9, "invalid key \".\": must not be '.'");
        assert_int_equal(ps.diag.n_errors, 3);
        parsed_done(&ps);

        r = decode_doc(&ps,
                       "apiVersion: v1\nkind: Secret\n"
                       "metadata: {name: s, namespace: x}\n"
                       "stringData: {..2024_01_01: v}\n",
                       true, (void **)&s);
        assert_int_equal(r, -EINVAL);
        assert_null(s);
        assert_int_equal(ps.diag.n_errors, 1);
        assert_non_null(strstr(ps.diag.items[0].message,
                               "invalid key \"..2024_01_01\": must not start with '..'"));
        parsed_done(&ps);
}

static void test_secret(void **state) {
        Parsed ps;
        Secret *s = NULL;
        int r = decode_doc(&ps,
                           "apiVersion: v1\nkind: Secret\n"
                           "metadata: {name: web-secret, namespace: edge}\n"
                           "type: kubernetes.io/basic-auth\n"
                           "data:\n"
                           "  username: YWRtaW4=\n"
                           "  password: |\n"
                           "    c2Vj\n"
                           "    cmV0\n"
                           "stringData: {password: plain, extra: e}\n",
                           true, (void **)&s);
        if (r < 0)
                diagnostics_print(&ps.diag, stderr);
        assert_int_equal(r, 0);
        assert_string_equal(secret_get_name(s), "web-secret");
        assert_string_equal(secret_get_namespace(s), "edge");
        assert_int_equal(s->type, SECRET_TYPE_BASIC_AUTH);
        assert_string_equal(s->type_string, "kubernetes.io/basic-auth");
        assert_int_equal(s->data.n, 3);
        assert_string_equal(string_map_get(&s->data, "username")->value, "admin");
        assert_string_equal(string_map_get(&s->data, "password")->value,
                            "plain"); /* stringData wins */
        assert_string_equal(string_map_get(&s->data, "extra")->value, "e");
        secret_free(s);
        parsed_done(&ps);

        /* a line-wrapped value decodes like Go's StdEncoding does */
        s = NULL;
        r = decode_doc(&ps,
                       "kind: Secret\nmetadata: {name: s}\n"
                       "data:\n  k: |\n    c2Vj\n    cmV0\n",
                       true, (void **)&s);
        assert_int_equal(r, 0);
        assert_string_equal(s->type_string, "Opaque");
        assert_int_equal(s->type, SECRET_TYPE_OPAQUE);
        assert_string_equal(string_map_get(&s->data, "k")->value, "secret");
        secret_free(s);
        parsed_done(&ps);

        s = NULL;
        r = decode_doc(&ps,
                       "kind: Secret\nmetadata: {name: reg}\n"
                       "type: kubernetes.io/dockerconfigjson\n"    /* 3 */
                       "data: {a: YQ, b: \"YQ=\", c: \"Y===\"}\n", /* 4 */
                       true, (void **)&s);
        assert_int_equal(r, -EINVAL);
        assert_diag(&ps.diag, DIAG_ERROR, "data[a]", 4, "illegal base64 data");
        assert_diag(&ps.diag, DIAG_ERROR, "data[b]", 4, "illegal base64 data");
        assert_diag(&ps.diag, DIAG_ERROR, "data[c]", 4, "illegal base64 data");
        assert_diag(&ps.diag, DIAG_ERROR, "data", 3, "needs the key \".dockerconfigjson\"");
        parsed_done(&ps);
}

static void test_setters(void **state) {
        Parsed ps;
        _cleanup_pod_free_ Pod *p = NULL;
        parse(&ps, "kind: Pod\nmetadata: {name: s}\nspec: {containers: [{name: a, image: b}]}\n");
        assert_int_equal(pod_decode(ps.docs[0], NULL, &p, &ps.diag), 0);
        assert_string_equal(pod_get_name(p), "s"); /* no node name: no suffix */
        assert_int_equal(pod_set_uid(p, "abc"), 0);
        assert_string_equal(pod_get_uid(p), "abc");
        assert_int_equal(pod_set_annotation(p, "k", "v1"), 0);
        assert_int_equal(pod_set_annotation(p, "k", "v2"), 0);
        assert_int_equal(p->metadata.annotations.n, 1);
        assert_string_equal(p->metadata.annotations.items[0].value, "v2");
        assert_null(pod_find_volume(p, "x"));
        assert_null(pod_free(NULL));
        assert_null(configmap_free(NULL));
        assert_null(secret_free(NULL));
        parsed_done(&ps);
}

static void test_kubeadm_manifest(void **state) {
        /* what kubeadm writes for kube-scheduler, unchanged */
        Parsed ps;
        _cleanup_pod_free_ Pod *p = NULL;
        int r = decode_pod(&ps,
                           "apiVersion: v1\n"
                           "kind: Pod\n"
                           "metadata:\n"
                           "  creationTimestamp: null\n"
                           "  labels:\n"
                           "    component: kube-scheduler\n"
                           "    tier: control-plane\n"
                           "  name: kube-scheduler\n"
                           "  namespace: kube-system\n"
                           "spec:\n"
                           "  containers:\n"
                           "  - command:\n"
                           "    - kube-scheduler\n"
                           "    - --kubeconfig=/etc/kubernetes/scheduler.conf\n"
                           "    image: registry.k8s.io/kube-scheduler:v1.30.0\n"
                           "    imagePullPolicy: IfNotPresent\n"
                           "    livenessProbe:\n"
                           "      failureThreshold: 8\n"
                           "      httpGet:\n"
                           "        host: 127.0.0.1\n"
                           "        path: /healthz\n"
                           "        port: 10259\n"
                           "        scheme: HTTPS\n"
                           "      initialDelaySeconds: 10\n"
                           "      periodSeconds: 10\n"
                           "      timeoutSeconds: 15\n"
                           "    name: kube-scheduler\n"
                           "    resources:\n"
                           "      requests:\n"
                           "        cpu: 100m\n"
                           "    volumeMounts:\n"
                           "    - mountPath: /etc/kubernetes/scheduler.conf\n"
                           "      name: kubeconfig\n"
                           "      readOnly: true\n"
                           "  hostNetwork: true\n"
                           "  priority: 2000001000\n"
                           "  priorityClassName: system-node-critical\n"
                           "  securityContext:\n"
                           "    seccompProfile:\n"
                           "      type: RuntimeDefault\n"
                           "  volumes:\n"
                           "  - hostPath:\n"
                           "      path: /etc/kubernetes/scheduler.conf\n"
                           "      type: FileOrCreate\n"
                           "    name: kubeconfig\n"
                           "status: {}\n",
                           &p);
        if (r < 0 || ps.diag.n)
                diagnostics_print(&ps.diag, stderr);
        assert_int_equal(r, 0);
        assert_int_equal(ps.diag.n, 0);
        assert_string_equal(pod_get_name(p), "kube-scheduler-node1");
        assert_int_equal(p->spec.containers[0].liveness_probe->handler.http_get->port.num, 10259);
        assert_int_equal(p->spec.volumes[0].host_path.type, HOST_PATH_FILE_OR_CREATE);
        parsed_done(&ps);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_full_pod),
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_pull_policy_for_image_via_enum_strings),
                cmocka_unit_test(test_type_errors),
                cmocka_unit_test(test_unknown_and_ignored),
                cmocka_unit_test(test_apiserver_references),
                cmocka_unit_test(test_priority),
                cmocka_unit_test(test_configmap),
                cmocka_unit_test(test_config_keys_chdir),
                cmocka_unit_test(test_map_key_paths),
                cmocka_unit_test(test_yaml11_booleans),
                cmocka_unit_test(test_secret),
                cmocka_unit_test(test_setters),
                cmocka_unit_test(test_kubeadm_manifest),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
