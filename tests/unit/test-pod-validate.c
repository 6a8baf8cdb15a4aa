/* Pod validation: one small manifest per rule, each expected to yield
 * exactly one error at a given path and line; and a manifest with several
 * problems reporting all of them. */
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
#include "string-util.h"
#include "yaml-node.h"

/* Lines 1-3; each case's text starts at line 4. */
#define HEAD "apiVersion: v1\nkind: Pod\nmetadata: {name: v}\n"
/* One valid container, spec at line 4, container at lines 5-7. */
#define SPEC_C "spec:\n  containers:\n  - name: c\n    image: busybox:1\n"

typedef struct Case {
        const char *body; /* appended to HEAD */
        const char *path;
        unsigned line;
        const char *message;
} Case;

/* $(VAR) chains: 64 bytes, then 1 KiB, 16 KiB, 256 KiB. */
#define X16(s) s s s s s s s s s s s s s s s s
#define ENV_CHAIN                                                                                  \
        "    env:\n    - {name: A, value: " X16(                                                   \
                "xxxx") "}\n"                                                                      \
                        "    - {name: B, value: '" X16("$(A)") "'}\n"                              \
                                                               "    - {name: C, value: '" X16(     \
                                                                       "$(B)") "'}\n"

static const Case cases[] = {
        /* metadata */
        { "", "spec.containers", 1, "at least one container is required" },
        { SPEC_C, NULL, 0, NULL }, /* the baseline is valid */
        { SPEC_C "  volumes:\n  - {name: Data, emptyDir: {}}\n", "spec.volumes[0].name", 9,
          "must be a lowercase RFC 1123 label" },
        { SPEC_C "  volumes:\n  - {name: d, emptyDir: {}}\n  - {name: d, hostPath: {path: /x}}\n",
          "spec.volumes[1].name", 10, "duplicate value \"d\"" },
        { SPEC_C "  volumes:\n  - {name: d}\n", "spec.volumes[0]", 9,
          "must specify a volume type" },
        { SPEC_C "  volumes:\n  - {name: d, emptyDir: {}, hostPath: {path: /x}}\n",
          "spec.volumes[0].hostPath", 9, "may not specify more than 1 volume type" },
        { SPEC_C "  volumes:\n  - {name: d, hostPath: {path: rel/x}}\n",
          "spec.volumes[0].hostPath.path", 9, "must be an absolute path" },
        { SPEC_C "  volumes:\n  - {name: d, hostPath: {path: /x, type: Pipe}}\n",
          "spec.volumes[0].hostPath.type", 9, "unsupported value \"Pipe\"" },
        { SPEC_C "  volumes:\n  - {name: d, emptyDir: {sizeLimit: huge}}\n",
          "spec.volumes[0].emptyDir.sizeLimit", 9, "not a valid quantity" },
        { SPEC_C "  volumes:\n  - {name: d, configMap: {name: c, defaultMode: 01777}}\n",
          "spec.volumes[0].configMap.defaultMode", 9, "between 0 and 0777" },
        { SPEC_C "  volumes:\n  - name: d\n    secret:\n      secretName: s\n      items: [{key: "
                 "k, path: ../k}]\n",
          "spec.volumes[0].secret.items[0].path", 12, "must not contain '..'" },
        { SPEC_C "  volumes:\n  - name: d\n    configMap:\n      name: c\n      items: [{key: k, "
                 "path: ..data}]\n",
          "spec.volumes[0].configMap.items[0].path", 12,
          "invalid value \"..data\": must not start with '..'" },
        { SPEC_C "  volumes:\n  - name: d\n    configMap:\n      name: c\n      items: [{key: ..k, "
                 "path: k}]\n",
          "spec.volumes[0].configMap.items[0].key", 12,
          "invalid key \"..k\": must not start with '..'" },
        { SPEC_C "  volumes:\n  - name: d\n    configMap:\n      name: c\n      items: [{key: k, "
                 "path: a/..b}]\n",
          NULL, 0, NULL },
        { SPEC_C "  volumes:\n  - name: d\n    downwardAPI: {items: [{path: ..meta, fieldRef: "
                 "{fieldPath: metadata.name}}]}\n",
          "spec.volumes[0].downwardAPI.items[0].path", 10, "must not start with '..'" },
        { SPEC_C "  volumes:\n  - name: d\n    projected:\n      sources:\n      - secret: {name: "
                 "s, items: [{key: k, path: ..x/y}]}\n",
          "spec.volumes[0].projected.sources[0].secret.items[0].path", 12,
          "must not start with '..'" },
        { SPEC_C "  volumes:\n  - name: d\n    configMap: {}\n", "spec.volumes[0].configMap.name",
          10, "name is required" },
        { SPEC_C "  volumes:\n  - name: d\n    downwardAPI: {items: [{path: p, fieldRef: "
                 "{fieldPath: spec.nodeName}}]}\n",
          "spec.volumes[0].downwardAPI.items[0].fieldRef.fieldPath", 10, "unsupported value" },
        { SPEC_C "  volumes:\n  - name: d\n    downwardAPI: {items: [{path: p, resourceFieldRef: "
                 "{resource: limits.cpu}}]}\n",
          "spec.volumes[0].downwardAPI.items[0].resourceFieldRef.containerName", 10,
          "containerName is required" },
        /* containers */
        { "spec:\n  containers:\n  - name: c\n", "spec.containers[0].image", 6,
          "image is required" },
        { "spec:\n  containers:\n  - {name: C_1, image: b}\n", "spec.containers[0].name", 6,
          "must be a lowercase RFC 1123 label" },
        { "spec:\n  initContainers:\n  - {name: c, image: b}\n  containers:\n  - {name: c, image: "
          "b}\n",
          "spec.containers[0].name", 8, "duplicate value \"c\"" },
        { "spec:\n  containers:\n  - {image: b}\n", "spec.containers[0].name", 6,
          "name is required" },
        /* ports */
        { SPEC_C "    ports:\n    - {name: http, containerPort: 80}\n    - {name: http, "
                 "containerPort: 81}\n",
          "spec.containers[0].ports[1].name", 10, "duplicate value \"http\"" },
        { SPEC_C "    ports: [{name: 80a-b-, containerPort: 80}]\n",
          "spec.containers[0].ports[0].name", 8, "IANA_SVC_NAME" },
        { SPEC_C "    ports: [{name: \"8080\", containerPort: 80}]\n",
          "spec.containers[0].ports[0].name", 8, "IANA_SVC_NAME" },
        { SPEC_C "    ports: [{name: averyveryverylongname, containerPort: 80}]\n",
          "spec.containers[0].ports[0].name", 8, "IANA_SVC_NAME" },
        { SPEC_C "    ports: [{containerPort: 0}]\n", "spec.containers[0].ports[0].containerPort",
          8, "must be between 1 and 65535" },
        { SPEC_C "    ports: [{containerPort: 70000}]\n",
          "spec.containers[0].ports[0].containerPort", 8, "must be between 1 and 65535" },
        { SPEC_C "    ports: [{containerPort: 80, hostPort: -1}]\n",
          "spec.containers[0].ports[0].hostPort", 8, "must be between 0 and 65535" },
        { SPEC_C "    ports: [{containerPort: 80, protocol: ICMP}]\n",
          "spec.containers[0].ports[0].protocol", 8,
          "supported values: \"TCP\", \"UDP\", \"SCTP\"" },
        { SPEC_C "    ports: [{containerPort: 80, hostIP: 1.2.3}]\n",
          "spec.containers[0].ports[0].hostIP", 8, "must be a valid IP address" },
        /* host network: hostPort must equal containerPort */
        { "spec:\n  hostNetwork: true\n  containers:\n  - name: c\n    image: b\n    ports: "
          "[{containerPort: 80, hostPort: 8080}]\n",
          "spec.containers[0].ports[0].hostPort", 9,
          "must match containerPort when hostNetwork is true" },
        { SPEC_C "    ports: [{containerPort: 80, hostPort: 80}]\n  - name: d\n    image: b\n    "
                 "ports: [{containerPort: 81, hostPort: 80}]\n",
          "spec.containers[1].ports[0].hostPort", 11, "duplicate value \"80/TCP\"" },
        /* mounts */
        { SPEC_C "    volumeMounts: [{name: nope, mountPath: /x}]\n",
          "spec.containers[0].volumeMounts[0].name", 8, "volume \"nope\" not found" },
        { SPEC_C
          "    volumeMounts: [{name: d, mountPath: x}]\n  volumes: [{name: d, emptyDir: {}}]\n",
          "spec.containers[0].volumeMounts[0].mountPath", 8, "must be an absolute path" },
        { SPEC_C "    volumeMounts:\n    - {name: d, mountPath: /x}\n    - {name: d, mountPath: "
                 "/x}\n  volumes: [{name: d, emptyDir: {}}]\n",
          "spec.containers[0].volumeMounts[1].mountPath", 10, "must be unique" },
        { SPEC_C "    volumeMounts: [{name: d, mountPath: /x, subPath: a/../../b}]\n  volumes: "
                 "[{name: d, emptyDir: {}}]\n",
          "spec.containers[0].volumeMounts[0].subPath", 8, "must not contain '..'" },
        { SPEC_C "    volumeMounts: [{name: d, mountPath: /x, subPath: /abs}]\n  volumes: [{name: "
                 "d, emptyDir: {}}]\n",
          "spec.containers[0].volumeMounts[0].subPath", 8, "must be a relative path" },
        { SPEC_C "    volumeMounts: [{name: d, mountPath: /x, subPath: a, subPathExpr: $(X)}]\n  "
                 "volumes: [{name: d, emptyDir: {}}]\n",
          "spec.containers[0].volumeMounts[0].subPathExpr", 8, "mutually exclusive" },
        { SPEC_C "    volumeMounts: [{name: d, mountPath: /x, mountPropagation: Bidirectional}]\n  "
                 "volumes: [{name: d, emptyDir: {}}]\n",
          "spec.containers[0].volumeMounts[0].mountPropagation", 8,
          "only to privileged containers" },
        /* probes */
        { SPEC_C "    livenessProbe: {periodSeconds: 5}\n", "spec.containers[0].livenessProbe", 8,
          "must specify a handler type" },
        { SPEC_C "    livenessProbe: {exec: {command: [x]}, tcpSocket: {port: 1}}\n",
          "spec.containers[0].livenessProbe", 8, "may not specify more than 1 handler type" },
        { SPEC_C "    readinessProbe: {tcpSocket: {port: 1}, periodSeconds: -1}\n",
          "spec.containers[0].readinessProbe.periodSeconds", 8, "must be greater than 0" },
        { SPEC_C "    livenessProbe: {tcpSocket: {port: 1}, successThreshold: 2}\n",
          "spec.containers[0].livenessProbe.successThreshold", 8, "must be 1" },
        { SPEC_C "    startupProbe: {tcpSocket: {port: 1}, successThreshold: 3}\n",
          "spec.containers[0].startupProbe.successThreshold", 8, "must be 1" },
        { SPEC_C "    readinessProbe: {httpGet: {port: 0}}\n",
          "spec.containers[0].readinessProbe.httpGet.port", 8, "must be between 1 and 65535" },
        { SPEC_C "    readinessProbe: {httpGet: {port: metrics}}\n",
          "spec.containers[0].readinessProbe.httpGet.port", 8,
          "port \"metrics\" is not a named port of container \"c\"" },
        { SPEC_C "    readinessProbe: {grpc: {port: 70000}}\n",
          "spec.containers[0].readinessProbe.grpc.port", 8, "must be between 1 and 65535" },
        { SPEC_C "    readinessProbe: {tcpSocket: {port: 1}, terminationGracePeriodSeconds: 5}\n",
          "spec.containers[0].readinessProbe.terminationGracePeriodSeconds", 8,
          "must not be set for readinessProbes" },
        { SPEC_C "    livenessProbe: {tcpSocket: {port: 1}, terminationGracePeriodSeconds: 0}\n",
          "spec.containers[0].livenessProbe.terminationGracePeriodSeconds", 8,
          "must be greater than 0" },
        { SPEC_C "    readinessProbe: {tcpSocket: {port: 1}, initialDelaySeconds: -5}\n",
          "spec.containers[0].readinessProbe.initialDelaySeconds", 8,
          "greater than or equal to 0" },
        { "spec:\n  initContainers:\n  - name: i\n    image: b\n    readinessProbe: {tcpSocket: "
          "{port: 1}}\n"
          "  containers: [{name: c, image: b}]\n",
          "spec.initContainers[0].readinessProbe", 8, "may not be set for init containers" },
        { "spec:\n  initContainers:\n  - {name: i, image: b, restartPolicy: OnFailure}\n"
          "  containers: [{name: c, image: b}]\n",
          "spec.initContainers[0].restartPolicy", 6, "only \"Always\" is supported" },
        { SPEC_C "    restartPolicy: Always\n", "spec.containers[0].restartPolicy", 8,
          "may not be set for non-init containers" },
        /* lifecycle */
        { SPEC_C "    lifecycle: {preStop: {}}\n", "spec.containers[0].lifecycle.preStop", 8,
          "must specify a handler type" },
        { SPEC_C "    lifecycle: {preStop: {sleep: {seconds: -1}}}\n",
          "spec.containers[0].lifecycle.preStop.sleep.seconds", 8, "greater than or equal to 0" },
        { SPEC_C "    lifecycle: {postStart: {sleep: {seconds: 1}, exec: {command: [a]}}}\n",
          "spec.containers[0].lifecycle.postStart", 8, "may not specify more than 1 handler type" },
        /* resources */
        { SPEC_C "    resources: {requests: {cpu: 2}, limits: {cpu: 1}}\n",
          "spec.containers[0].resources.requests[cpu]", 8,
          "must be less than or equal to cpu limit" },
        /* a map key as Kubernetes writes it, and the line of that key's value */
        { SPEC_C "    resources:\n      requests:\n        memory: 1Gi\n        cpu: 2\n"
                 "      limits:\n        cpu: 1\n",
          "spec.containers[0].resources.requests[cpu]", 11,
          "must be less than or equal to cpu limit" },
        { SPEC_C "    resources:\n      limits:\n        hugepages-2Mi: 1Mi\n"
                 "        memory: 1Gi\n        cpu: 2000000000\n",
          "spec.containers[0].resources.limits[cpu]", 12, "must be at most 175921860444m" },
        { SPEC_C "    resources: {requests: {memory: 2Gi}, limits: {memory: 1Gi}}\n",
          "spec.containers[0].resources.requests[memory]", 8,
          "must be less than or equal to memory limit" },
        { SPEC_C "    resources: {requests: {memory: -1}}\n",
          "spec.containers[0].resources.requests[memory]", 8, "greater than or equal to 0" },
        { SPEC_C "    resources: {limits: {hugepages-2Mi: 2Mi}}\n", "spec.containers[0].resources",
          8, "hugepages require a cpu or memory" },
        /* env */
        { SPEC_C "    env: [{name: \"A=B\", value: x}]\n", "spec.containers[0].env[0].name", 8,
          "other than '='" },
        { SPEC_C "    env: [{value: x}]\n", "spec.containers[0].env[0].name", 8,
          "name is required" },
        { SPEC_C
          "    env: [{name: A, value: x, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]\n",
          "spec.containers[0].env[0].valueFrom", 8,
          "may not be specified when `value` is not empty" },
        { SPEC_C "    env: [{name: A, valueFrom: {}}]\n", "spec.containers[0].env[0].valueFrom", 8,
          "must specify one of" },
        { SPEC_C "    env: [{name: A, valueFrom: {fieldRef: {fieldPath: metadata.name}, "
                 "secretKeyRef: {name: s, key: k}}}]\n",
          "spec.containers[0].env[0].valueFrom", 8, "may not have more than one field" },
        { SPEC_C "    env: [{name: A, valueFrom: {configMapKeyRef: {name: c, key: \"a b\"}}}]\n",
          "spec.containers[0].env[0].valueFrom.configMapKeyRef.key", 8, "invalid key \"a b\"" },
        { SPEC_C "    env: [{name: A, valueFrom: {resourceFieldRef: {resource: limits.gpu}}}]\n",
          "spec.containers[0].env[0].valueFrom.resourceFieldRef.resource", 8,
          "unsupported value \"limits.gpu\"" },
        { SPEC_C "    envFrom: [{prefix: \"X=\", configMapRef: {name: c}}]\n",
          "spec.containers[0].envFrom[0].prefix", 8, "other than '='" },
        { SPEC_C "    envFrom: [{configMapRef: {name: c}, secretRef: {name: s}}]\n",
          "spec.containers[0].envFrom[0]", 8, "exactly one of configMapRef or secretRef" },
        /* security */
        { SPEC_C "    securityContext: {runAsUser: -1}\n",
          "spec.containers[0].securityContext.runAsUser", 8, "greater than or equal to 0" },
        { SPEC_C "    securityContext: {capabilities: {add: [NET_ADMIN, FLY]}}\n",
          "spec.containers[0].securityContext.capabilities.add[1]", 8,
          "unknown capability \"FLY\"" },
        { SPEC_C "    securityContext: {procMount: Masked}\n",
          "spec.containers[0].securityContext.procMount", 8, "unsupported value \"Masked\"" },
        { SPEC_C "    securityContext: {privileged: true, allowPrivilegeEscalation: false}\n",
          "spec.containers[0].securityContext.allowPrivilegeEscalation", 8, "cannot set" },
        { SPEC_C "    securityContext: {seccompProfile: {type: Localhost}}\n",
          "spec.containers[0].securityContext.seccompProfile.localhostProfile", 8,
          "must be set when seccomp type is Localhost" },
        { SPEC_C "  securityContext:\n    seccompProfile: {type: Localhost, localhostProfile: "
                 "../x.json}\n",
          "spec.securityContext.seccompProfile.localhostProfile", 9, "must not contain '..'" },
        { SPEC_C "  securityContext:\n    seccompProfile: {localhostProfile: x.json}\n",
          "spec.securityContext.seccompProfile.type", 9, "type is required" },
        /* appArmorProfile (kubelet's validateAppArmorProfileField) */
        { SPEC_C "    securityContext: {appArmorProfile: {type: Localhost}}\n",
          "spec.containers[0].securityContext.appArmorProfile.localhostProfile", 8,
          "must be set when AppArmor type is Localhost" },
        { SPEC_C
          "    securityContext: {appArmorProfile: {type: Localhost, localhostProfile: \"\"}}\n",
          "spec.containers[0].securityContext.appArmorProfile.localhostProfile", 8,
          "must be set when AppArmor type is Localhost" },
        { SPEC_C "    securityContext: {appArmorProfile: {type: Localhost, localhostProfile: \" "
                 "p\"}}\n",
          "spec.containers[0].securityContext.appArmorProfile.localhostProfile", 8,
          "must not be padded with whitespace" },
        { SPEC_C "    securityContext: {appArmorProfile: {type: Localhost, localhostProfile: "
                 "\"a\\nb\"}}\n",
          "spec.containers[0].securityContext.appArmorProfile.localhostProfile", 8,
          "must not contain control characters" },
        { SPEC_C "    securityContext: {appArmorProfile: {type: Localhost, localhostProfile: "
                 "my/profile}}\n",
          NULL, 0, NULL },
        { SPEC_C "    securityContext: {appArmorProfile: {type: RuntimeDefault, localhostProfile: "
                 "p}}\n",
          "spec.containers[0].securityContext.appArmorProfile.localhostProfile", 8,
          "can only be set when AppArmor type is Localhost" },
        { SPEC_C "    securityContext: {appArmorProfile: {type: Enforce}}\n",
          "spec.containers[0].securityContext.appArmorProfile.type", 8,
          "unsupported value \"Enforce\"" },
        { SPEC_C "  securityContext:\n    appArmorProfile: {localhostProfile: p}\n",
          "spec.securityContext.appArmorProfile.type", 9,
          "type is required when appArmorProfile is set" },
        { SPEC_C "  securityContext:\n    appArmorProfile: {type: Unconfined}\n", NULL, 0, NULL },
        { SPEC_C "  securityContext:\n    sysctls: [{name: \"net..x\", value: \"1\"}]\n",
          "spec.securityContext.sysctls[0].name", 9, "must be a sysctl name" },
        { SPEC_C "  securityContext:\n    fsGroup: -3\n", "spec.securityContext.fsGroup", 9,
          "greater than or equal to 0" },
        /* pod spec */
        { SPEC_C "  restartPolicy: Sometimes\n", "spec.restartPolicy", 8,
          "unsupported value \"Sometimes\"" },
        { SPEC_C "  terminationGracePeriodSeconds: -1\n", "spec.terminationGracePeriodSeconds", 8,
          "greater than or equal to 0" },
        { SPEC_C "    resources: {limits: {cpu: 1e15}}\n",
          "spec.containers[0].resources.limits[cpu]", 8,
          "must be at most 175921860444m (the largest CPU quota the kernel accepts)" },
        { SPEC_C "    resources: {requests: {cpu: \"9223372036854775807\"}}\n",
          "spec.containers[0].resources.requests[cpu]", 8, "must be at most 175921860444m" },
        { SPEC_C "    resources: {limits: {cpu: 175921860444m}}\n", NULL, 0, NULL },
        { SPEC_C "  activeDeadlineSeconds: 0\n", "spec.activeDeadlineSeconds", 8,
          "must be between 1 and 2147483647, inclusive" },
        { SPEC_C "  activeDeadlineSeconds: 2147483648\n", "spec.activeDeadlineSeconds", 8,
          "invalid value 2147483648: must be between 1 and 2147483647, inclusive" },
        { SPEC_C "  activeDeadlineSeconds: 2147483647\n", NULL, 0, NULL },
        { SPEC_C "  dnsPolicy: None\n", "spec.dnsConfig", 8, "at least one DNS nameserver" },
        { SPEC_C "  dnsConfig: {nameservers: [1.1.1.1, 1.0.0.1, 8.8.8.8, 8.8.4.4]}\n",
          "spec.dnsConfig.nameservers", 8, "must not have more than 3 nameservers" },
        { SPEC_C "  dnsConfig: {nameservers: [dns.local]}\n", "spec.dnsConfig.nameservers[0]", 8,
          "must be a valid IP address" },
        { SPEC_C "  hostAliases: [{ip: 300.1.1.1, hostnames: [a]}]\n", "spec.hostAliases[0].ip", 8,
          "must be a valid IP address" },
        { SPEC_C "  hostname: Web_1\n", "spec.hostname", 8, "RFC 1123 label" },
        { SPEC_C "  subdomain: a.b\n", "spec.subdomain", 8, "RFC 1123 label" },
        { SPEC_C "  shareProcessNamespace: true\n  hostPID: true\n", "spec.shareProcessNamespace",
          8, "may not be true when hostPID is true" },
        { SPEC_C "  hostUsers: false\n  hostNetwork: true\n", "spec.hostNetwork", 9,
          "may not be true when hostUsers is false" },
        { SPEC_C "  hostUsers: false\n  hostPID: true\n", "spec.hostPID", 9,
          "may not be true when hostUsers is false" },
        { SPEC_C "  hostUsers: false\n  hostIPC: true\n", "spec.hostIPC", 9,
          "may not be true when hostUsers is false" },
        { SPEC_C "  hostUsers: true\n  hostNetwork: true\n  hostPID: true\n", NULL, 0, NULL },
        { SPEC_C "  hostUsers: false\n", NULL, 0, NULL },
        { SPEC_C "  os: {name: windows}\n", "spec.os.name", 8, "windows pods are not supported" },
        { SPEC_C "  serviceAccount: robot\n", "spec.serviceAccount", 8, "needs an apiserver" },
        { SPEC_C "  ephemeralContainers: [{name: dbg}]\n", "spec.ephemeralContainers", 8,
          "not supported" },
        { SPEC_C "  serviceAccountName: default\n", NULL, 0, NULL },
        /* $(VAR) expansion bounded as execve() bounds it */
        { SPEC_C ENV_CHAIN, NULL, 0, NULL },
        { SPEC_C ENV_CHAIN "    - {name: D, value: '" X16("$(C)") "'}\n",
          "spec.containers[0].env[3].value", 12,
          "container \"c\": expands to more than 131071 bytes (the kernel's limit for one "
          "environment string)" },
        { SPEC_C ENV_CHAIN "    args: ['" X16("$(C)") "']\n", "spec.containers[0].args[0]", 12,
          "container \"c\": expands to more than 131071 bytes (the kernel's limit for one "
          "argument)" },
        { SPEC_C ENV_CHAIN "    command: [" X16(X16("'$(C)',")) "]\n", "spec.containers[0]", 6,
          "container \"c\": env, command and args expand to at least 4212041 bytes, more than "
          "2097152 (the kernel's limit for them together)" },
        /* values known only at run time count as empty here */
        { SPEC_C "    env:\n    - {name: A, valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n"
                 "    - {name: B, value: '" X16(X16("$(A)")) "'}\n",
          NULL, 0, NULL },
};

static const Case meta_cases[] = {
        { "metadata: {name: \"\"}\n", "metadata.name", 3, "name is required" },
        { "metadata: {name: Web}\n", "metadata.name", 3, "RFC 1123 subdomain" },
        { "metadata: {name: web, namespace: a.b}\n", "metadata.namespace", 3, "RFC 1123 label" },
        { "metadata: {name: web, uid: ../../etc}\n", "metadata.uid", 3, "uses it in paths" },
        { "metadata: {name: web, uid: "
          "0123456789012345678901234567890123456789012345678901234567890123x}\n",
          "metadata.uid", 3, "1 to 64" },
        { "metadata:\n  name: web\n  labels: {\"-bad\": x}\n", "metadata.labels", 5,
          "invalid key \"-bad\"" },
        { "metadata:\n  name: web\n  labels: {app: \"bad value!\"}\n", "metadata.labels", 5,
          "invalid value \"bad value!\" for label \"app\"" },
        { "metadata:\n  name: web\n  annotations: {\"a/b/c\": x}\n", "metadata.annotations", 5,
          "invalid key \"a/b/c\"" },
        { "metadata:\n  name: web\n  annotations:\n    nanolet.io/wait-for: \"db, Bad/x\"\n",
          "metadata.annotations", 6, "invalid nanolet.io/wait-for entry \"Bad/x\"" },
        { "metadata:\n  name: web\n  annotations:\n    nanolet.io/wait-for: \"db,,x\"\n",
          "metadata.annotations", 6, "empty entry" },
        { "metadata:\n  name: web\n  annotations:\n    nanolet.io/wait-for: \"kube-system/etcd, "
          "db\"\n",
          NULL, 0, NULL },
};

static const Case id_cases[] = {
        /* <uid>-<name>-<attempt> is the runtime ID: at most 128 characters */
        { "metadata: {name: web, uid: "
          "uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu}\n"
          "spec:\n  containers:\n  - {name: cccccccccccccccccccccccccccccccccccccccccccccccccccc, "
          "image: b}\n",
          NULL, 0, NULL },
        { "metadata: {name: web, uid: "
          "uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu}\n"
          "spec:\n  containers:\n  - {name: cccccccccccccccccccccccccccccccccccccccccccccccccccc, "
          "image: b}\n"
          "  - {name: ccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc, image: b}\n",
          "spec.containers[1].name", 7,
          "container name and metadata.uid are 127 characters together; at most 116 fit in a "
          "runtime container ID (<uid>-<name>-<restart count>, at most 128 characters)" },
        { "metadata: {name: web, uid: "
          "uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu}\n"
          "spec:\n  initContainers:\n  - {name: "
          "ccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc, image: b}\n"
          "  containers:\n  - {name: c, image: b}\n",
          "spec.initContainers[0].name", 6, "at most 116 fit in a runtime container ID" },
};

static void run_case(const char *yaml, const Case *c) {
        Diagnostics diag;
        YamlNode **docs = NULL;
        size_t n = 0;
        Pod *p = NULL;

        diagnostics_init(&diag);
        int r = yaml_parse_documents(yaml, strlen(yaml), "v.yaml", NULL, &docs, &n, &diag);
        if (r < 0) {
                diagnostics_print(&diag, stderr);
                fail_msg("YAML of case %s does not parse", strna(c->path));
        }
        PodDecodeOptions o = { .file = "v.yaml", .node_name = "n" };
        r = pod_decode(docs[0], &o, &p, &diag);
        if (!c->path) {
                if (r < 0)
                        diagnostics_print(&diag, stderr);
                assert_int_equal(r, 0);
                assert_int_equal(diag.n_errors, 0);
                pod_free(p);
        } else {
                bool ok = r == -EINVAL && !p && diag.n_errors == 1;
                const Diag *d = NULL;
                for (size_t i = 0; i < diag.n; i++)
                        if (diag.items[i].level == DIAG_ERROR)
                                d = &diag.items[i];
                ok = ok && d && d->path && streq(d->path, c->path) && d->line == c->line &&
                     strstr(d->message, c->message) && streq(d->file, "v.yaml");
                if (!ok) {
                        fprintf(stderr, "---- case expecting %s:%u \"%s\"; manifest:\n%s----\n",
                                c->path, c->line, c->message, yaml);
                        diagnostics_print(&diag, stderr);
                        fail();
                }
        }
        yaml_documents_free(docs, n);
        diagnostics_deinit(&diag);
}

static void test_spec_rules(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *yaml = strprintf("%s%s", HEAD, cases[i].body);
                assert_non_null(yaml);
                run_case(yaml, &cases[i]);
        }
}

/* The AppArmor annotation (kubelet's ValidateAppArmorPodAnnotations) and
 * its agreement with the fields; each body is a whole pod from line 3. */
#define AA_META "metadata:\n  name: web\n  annotations:\n"
#define AA_KEY "    container.apparmor.security.beta.kubernetes.io/"
#define AA_SPEC(sc) "spec:\n  containers:\n  - name: c\n    image: b\n" sc
static const Case apparmor_cases[] = {
        { AA_META AA_KEY "c: runtime/default\n" AA_SPEC(""), NULL, 0, NULL },
        { AA_META AA_KEY "c: unconfined\n" AA_SPEC(""), NULL, 0, NULL },
        { AA_META AA_KEY "c: localhost/p\n" AA_SPEC(""), NULL, 0, NULL },
        { AA_META AA_KEY "x: runtime/default\n" AA_SPEC(""),
          "metadata.annotations[container.apparmor.security.beta.kubernetes.io/x]", 6,
          "invalid value \"x\": container not found" },
        { AA_META AA_KEY "c: enforce\n" AA_SPEC(""),
          "metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]", 6,
          "invalid AppArmor profile name: \"enforce\"" },
        { AA_META AA_KEY "c: localhost/\n" AA_SPEC(""),
          "metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]", 6,
          "must be set when AppArmor type is Localhost" },
        /* field and annotation must say the same */
        { AA_META AA_KEY "c: unconfined\n" AA_SPEC(
                  "    securityContext: {appArmorProfile: {type: RuntimeDefault}}\n"),
          "spec.containers[0].securityContext.appArmorProfile.type", 11,
          "apparmor type in annotation and field must match" },
        { AA_META AA_KEY "c: localhost/a\n" AA_SPEC("    securityContext: {appArmorProfile: {type: "
                                                    "Localhost, localhostProfile: b}}\n"),
          "spec.containers[0].securityContext.appArmorProfile.localhostProfile", 11,
          "apparmor profile in annotation and field must match" },
        { AA_META AA_KEY "c: localhost/a\n" AA_SPEC("    securityContext: {appArmorProfile: {type: "
                                                    "Localhost, localhostProfile: a}}\n"),
          NULL, 0, NULL },
        /* the pod's field counts for a container without its own */
        { AA_META AA_KEY "c: runtime/default\n" AA_SPEC(
                  "  securityContext:\n    appArmorProfile: {type: Unconfined}\n"),
          "spec.containers[0].securityContext.appArmorProfile.type", 9,
          "apparmor type in annotation and field must match" },
};

static void test_apparmor_rules(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(apparmor_cases); i++) {
                _cleanup_free_ char *yaml =
                        strprintf("apiVersion: v1\nkind: Pod\n%s", apparmor_cases[i].body);
                assert_non_null(yaml);
                run_case(yaml, &apparmor_cases[i]);
        }
}

static void test_metadata_rules(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(meta_cases); i++) {
                _cleanup_free_ char *yaml =
                        strprintf("apiVersion: v1\nkind: Pod\n%s%s", meta_cases[i].body,
                                  "spec: {containers: [{name: c, image: b}]}\n");
                assert_non_null(yaml);
                run_case(yaml, &meta_cases[i]);
        }
}

static void test_runtime_id_fits(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(id_cases); i++) {
                _cleanup_free_ char *yaml =
                        strprintf("apiVersion: v1\nkind: Pod\n%s", id_cases[i].body);
                assert_non_null(yaml);
                run_case(yaml, &id_cases[i]);
        }
}

static void test_long_name_after_suffix(void **state) {
        /* 250 characters are fine alone, not with "-n" appended... */
        char name[251];
        memset(name, 'a', 250);
        name[250] = 0;
        _cleanup_free_ char *yaml = strprintf(
                "kind: Pod\nmetadata: {name: %s}\nspec: {containers: [{name: c, image: b}]}\n",
                name);
        Diagnostics diag;
        YamlNode **docs = NULL;
        size_t n = 0;
        Pod *p = NULL;
        diagnostics_init(&diag);
        assert_int_equal(yaml_parse_documents(yaml, strlen(yaml), "v.yaml", NULL, &docs, &n, &diag),
                         0);
        PodDecodeOptions o = { .file = "v.yaml", .node_name = "node-with-long-name" };
        assert_int_equal(pod_decode(docs[0], &o, &p, &diag), -EINVAL);
        assert_int_equal(diag.n_errors, 1);
        assert_string_equal(diag.items[0].path, "metadata.name");
        assert_int_equal(diag.items[0].line, 2);
        assert_non_null(strstr(diag.items[0].message, "at most 253 characters"));
        diagnostics_deinit(&diag);
        diagnostics_init(&diag);
        /* ...and the same name without a node name is valid */
        assert_int_equal(pod_decode(docs[0], NULL, &p, &diag), 0);
        assert_int_equal(strlen(pod_get_name(p)), 250);
        pod_free(p);
        yaml_documents_free(docs, n);
        diagnostics_deinit(&diag);
}

static void test_all_problems_reported(void **state) {
        static const char yaml[] = "apiVersion: v1\n"    /* 1 */
                                   "kind: Pod\n"         /* 2 */
                                   "metadata:\n"         /* 3 */
                                   "  name: Not_Valid\n" /* 4 */
                                   "spec:\n"             /* 5 */
                                   "  containers:\n"     /* 6 */
                                   "  - name: app\n"     /* 7 */
                                   "    image: app:1\n"
                                   "    ports:\n"                              /* 9 */
                                   "    - containerPort: 0\n"                  /* 10 */
                                   "    volumeMounts:\n"                       /* 11 */
                                   "    - {name: missing, mountPath: /data}\n" /* 12 */
                                   "  - name: app\n"                           /* 13 */
                                   "  volumes:\n"                              /* 14 */
                                   "  - name: v\n"                             /* 15 */
                                   "    hostPath: {path: relative}\n";         /* 16 */
        static const struct {
                const char *path;
                unsigned line;
                const char *message;
        } expected[] = {
                { "metadata.name", 4, "RFC 1123 subdomain" },
                { "spec.containers[0].ports[0].containerPort", 10, "between 1 and 65535" },
                { "spec.containers[0].volumeMounts[0].name", 12, "volume \"missing\" not found" },
                { "spec.containers[1].name", 13, "duplicate value \"app\"" },
                { "spec.containers[1].image", 13, "image is required" },
                { "spec.volumes[0].hostPath.path", 16, "must be an absolute path" },
        };
        Diagnostics diag;
        YamlNode **docs = NULL;
        size_t n = 0;
        Pod *p = NULL;

        diagnostics_init(&diag);
        assert_int_equal(yaml_parse_documents(yaml, strlen(yaml), "v.yaml", NULL, &docs, &n, &diag),
                         0);
        PodDecodeOptions o = { .file = "v.yaml", .node_name = "n" };
        assert_int_equal(pod_decode(docs[0], &o, &p, &diag), -EINVAL);
        assert_null(p);
        if (diag.n_errors != ELEMENTSOF(expected))
                diagnostics_print(&diag, stderr);
        assert_int_equal(diag.n_errors, ELEMENTSOF(expected));
        for (size_t i = 0; i < ELEMENTSOF(expected); i++) {
                bool found = false;
                for (size_t j = 0; j < diag.n && !found; j++)
                        found = streq(diag.items[j].path, expected[i].path) &&
                                diag.items[j].line == expected[i].line &&
                                strstr(diag.items[j].message, expected[i].message);
                if (!found) {
                        diagnostics_print(&diag, stderr);
                        fail_msg("missing %s:%u %s", expected[i].path, expected[i].line,
                                 expected[i].message);
                }
        }
        /* printed the way an operator reads it */
        _cleanup_free_ char *s = diag_to_string(&diag.items[0]);
        assert_non_null(s);
        assert_non_null(strstr(s, "v.yaml:"));
        yaml_documents_free(docs, n);
        diagnostics_deinit(&diag);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_spec_rules),
                cmocka_unit_test(test_metadata_rules),
                cmocka_unit_test(test_apparmor_rules),
                cmocka_unit_test(test_runtime_id_fits),
                cmocka_unit_test(test_long_name_after_suffix),
                cmocka_unit_test(test_all_problems_reported),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
