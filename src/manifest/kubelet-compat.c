/* The rules come from three places kubelet's behaviour is decided: its
 * manifest readers (one Pod per file; a Pod or a PodList from a URL; only
 * the first YAML document), the apiserver's admission of the mirror pod a
 * kubelet in a cluster posts for every static pod (NodeRestriction refuses
 * references to other API objects, priority admission refuses a priority
 * that its class does not give), and what a kubelet without an apiserver
 * cannot read at all (ConfigMaps, Secrets, tokens). nanolet reads all of
 * these from its own manifests, so each is a place where a pod that runs
 * here would not run, or would run otherwise, under kubelet. */
#include "kubelet-compat.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "string-util.h"
#include "yaml-node.h"

#define PRIORITY_SYSTEM_NODE_CRITICAL 2000001000
#define PRIORITY_SYSTEM_CLUSTER_CRITICAL 2000000000

typedef struct Compat {
        Diagnostics *diag;
        const char *file;
        int n;
        bool oom;
} Compat;

static const char WHY_CONFIGMAP[] =
        "a static pod may not use a ConfigMap: standalone kubelet has no apiserver to read it "
        "from, and in a cluster the apiserver refuses the static pod's mirror pod "
        "(NodeRestriction), so the node may not read it either; the container does not start";
static const char WHY_SECRET[] =
        "a static pod may not use a Secret: standalone kubelet has no apiserver to read it "
        "from, and in a cluster the apiserver refuses the static pod's mirror pod "
        "(NodeRestriction), so the node may not read it either; the container does not start";

_printf_(4, 5) static void differ(Compat *c, const YamlNode *at, const char *path, const char *fmt,
                                  ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        va_start(ap, fmt);
        int k = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (k < 0) {
                msg = NULL;
                c->oom = true;
        }
        /* diagnostics_add() records an allocation failure as an error itself */
        diagnostics_add(c->diag, DIAG_WARNING, c->file, at ? at->line : 0, at ? at->column : 0,
                        path, "kubelet: %s", msg ? msg : "(out of memory)");
        c->n++;
}

static int diag_compare_place(const void *a, const void *b) {
        const Diag *x = a, *y = b;
        if (x->line != y->line)
                return x->line < y->line ? -1 : 1;
        return x->column < y->column ? -1 : x->column > y->column;
}

static const char *scalar(const YamlNode *n) {
        return n && n->type == YAML_NODE_STRING ? n->str : NULL;
}

static bool nonempty_string(const YamlNode *n) {
        return !isempty(scalar(n));
}

static bool nonempty_seq(const YamlNode *n) {
        return n && n->type == YAML_NODE_SEQ && n->n > 0;
}

/* "prefix" + "." + rest, or rest alone; NULL on ENOMEM (noted in c). */
_printf_(3, 4) static char *path_join(Compat *c, const char *prefix, const char *fmt, ...) {
        _cleanup_free_ char *rest = NULL;
        va_list ap;

        va_start(ap, fmt);
        int k = vasprintf(&rest, fmt, ap);
        va_end(ap);
        if (k < 0) {
                c->oom = true;
                return NULL;
        }
        char *p = isempty(prefix) ? strdup(rest) : strprintf("%s.%s", prefix, rest);
        if (!p)
                c->oom = true;
        return p;
}

static void check_annotations(Compat *c, const YamlNode *meta, const char *prefix) {
        const YamlNode *ann = yaml_map_get(meta, "annotations");
        if (!ann || ann->type != YAML_NODE_MAP)
                return;
        /* the only pod annotation of nanolet's that changes what runs */
        for (size_t i = 0; i < ann->n; i++) {
                const char *key = ann->pairs[i].key->str;
                if (!streq(key, "nanolet.io/wait-for"))
                        continue;
                _cleanup_free_ char *p = path_join(c, prefix, "metadata.annotations[%s]", key);
                differ(c, ann->pairs[i].key, p,
                       "ignores nanolet's start-order annotation: the pod starts without "
                       "waiting for the pods it names");
        }
}

/* A field whose presence alone makes the difference, and why. */
typedef struct Rule {
        const char *field;
        const char *why;
} Rule;

static const Rule env_source_rules[] = {
        { "configMapKeyRef", WHY_CONFIGMAP },
        { "secretKeyRef", WHY_SECRET },
};

static const Rule env_from_rules[] = {
        { "configMapRef", WHY_CONFIGMAP },
        { "secretRef", WHY_SECRET },
};

static const Rule projection_rules[] = {
        { "configMap", WHY_CONFIGMAP },
        { "secret", WHY_SECRET },
        { "serviceAccountToken",
          "a static pod gets no service account token: standalone kubelet has no apiserver to "
          "issue one, and in a cluster the token must be bound to a mirror pod the apiserver "
          "refuses for a pod that names a service account; the volume cannot be set up" },
        { "clusterTrustBundle",
          "a static pod may not use a ClusterTrustBundle: the apiserver refuses its mirror pod "
          "(NodeRestriction), and standalone kubelet has no apiserver to read it from" },
};

static const Rule volume_rules[] = {
        { "configMap", WHY_CONFIGMAP },
        { "secret", WHY_SECRET },
        { "persistentVolumeClaim",
          "a static pod may not use a PersistentVolumeClaim: the apiserver refuses its mirror "
          "pod (NodeRestriction), and standalone kubelet has no claims to bind" },
        { "ephemeral",
          "an ephemeral volume is a PersistentVolumeClaim the apiserver creates for the pod: a "
          "static pod gets none" },
        { "image",
          "mounts image volumes only where its ImageVolume feature gate is on and the container "
          "runtime supports them; elsewhere the pod does not start" },
};

static void check_rules(Compat *c, const YamlNode *n, const char *path, const Rule *rules,
                        size_t n_rules) {
        for (size_t i = 0; i < n_rules; i++) {
                const YamlNode *x = yaml_map_get(n, rules[i].field);
                if (!x)
                        continue;
                _cleanup_free_ char *p = path_join(c, path, "%s", rules[i].field);
                differ(c, x, p, "%s", rules[i].why);
        }
}

/* rules for each item of the list n[field] */
static void check_list(Compat *c, const YamlNode *n, const char *path, const char *field,
                       const char *item_field, const Rule *rules, size_t n_rules) {
        const YamlNode *seq = yaml_map_get(n, field);
        if (!seq || seq->type != YAML_NODE_SEQ)
                return;
        for (size_t i = 0; i < seq->n; i++) {
                const YamlNode *item = seq->items[i];
                _cleanup_free_ char *p =
                        item_field ? path_join(c, path, "%s[%zu].%s", field, i, item_field)
                                   : path_join(c, path, "%s[%zu]", field, i);
                if (item_field)
                        item = yaml_map_get(item, item_field);
                check_rules(c, item, p, rules, n_rules);
        }
}

static void check_containers(Compat *c, const YamlNode *spec, const char *prefix) {
        static const char *const lists[] = { "initContainers", "containers",
                                             "ephemeralContainers" };
        for (size_t l = 0; l < ELEMENTSOF(lists); l++) {
                const YamlNode *seq = yaml_map_get(spec, lists[l]);
                if (!seq || seq->type != YAML_NODE_SEQ)
                        continue;
                for (size_t i = 0; i < seq->n; i++) {
                        _cleanup_free_ char *cpath =
                                path_join(c, prefix, "spec.%s[%zu]", lists[l], i);
                        check_list(c, seq->items[i], cpath, "env", "valueFrom", env_source_rules,
                                   ELEMENTSOF(env_source_rules));
                        check_list(c, seq->items[i], cpath, "envFrom", NULL, env_from_rules,
                                   ELEMENTSOF(env_from_rules));
                }
        }
}

static void check_volumes(Compat *c, const YamlNode *spec, const char *prefix) {
        const YamlNode *vols = yaml_map_get(spec, "volumes");
        if (!vols || vols->type != YAML_NODE_SEQ)
                return;
        for (size_t i = 0; i < vols->n; i++) {
                const YamlNode *v = vols->items[i], *x;
                _cleanup_free_ char *vpath = path_join(c, prefix, "spec.volumes[%zu]", i);
                check_rules(c, v, vpath, volume_rules, ELEMENTSOF(volume_rules));
                if ((x = yaml_map_get(v, "csi")) && (x = yaml_map_get(x, "nodePublishSecretRef"))) {
                        _cleanup_free_ char *p = path_join(c, vpath, "csi.nodePublishSecretRef");
                        differ(c, x, p, "%s", WHY_SECRET);
                }
                if ((x = yaml_map_get(v, "projected"))) {
                        _cleanup_free_ char *p = path_join(c, vpath, "projected");
                        check_list(c, x, p, "sources", NULL, projection_rules,
                                   ELEMENTSOF(projection_rules));
                }
        }
}

static void check_priority(Compat *c, const YamlNode *spec, const char *prefix) {
        const YamlNode *cls = yaml_map_get(spec, "priorityClassName");
        const YamlNode *prio = yaml_map_get(spec, "priority");
        const char *name = scalar(cls);
        _cleanup_free_ char *cpath = path_join(c, prefix, "spec.priorityClassName");
        _cleanup_free_ char *ppath = path_join(c, prefix, "spec.priority");
        int64_t want;

        if (isempty(name))
                want = 0;
        else if (streq(name, "system-node-critical"))
                want = PRIORITY_SYSTEM_NODE_CRITICAL;
        else if (streq(name, "system-cluster-critical"))
                want = PRIORITY_SYSTEM_CLUSTER_CRITICAL;
        else {
                differ(c, cls, cpath,
                       "in a cluster a PriorityClass \"%s\" must exist, or the apiserver refuses "
                       "the mirror pod; standalone kubelet uses spec.priority alone",
                       name);
                return;
        }
        if (prio && prio->type == YAML_NODE_INT && prio->i != want)
                differ(c, prio, ppath,
                       "in a cluster the apiserver's priority admission refuses a priority of "
                       "%lld where the priority class gives %lld (set priorityClassName "
                       "instead)",
                       (long long)prio->i, (long long)want);
}

static void check_pod(Compat *c, const YamlNode *pod, const char *prefix) {
        const YamlNode *spec = yaml_map_get(pod, "spec");
        const YamlNode *x;

        check_annotations(c, yaml_map_get(pod, "metadata"), prefix);
        if (!spec || spec->type != YAML_NODE_MAP)
                return;
        static const char *const sa_fields[] = { "serviceAccountName", "serviceAccount" };
        for (size_t i = 0; i < ELEMENTSOF(sa_fields); i++)
                if (nonempty_string(x = yaml_map_get(spec, sa_fields[i]))) {
                        _cleanup_free_ char *p = path_join(c, prefix, "spec.%s", sa_fields[i]);
                        differ(c, x, p,
                               "a static pod may not name a service account: in a cluster the "
                               "apiserver refuses its mirror pod (NodeRestriction), and "
                               "standalone kubelet has no service accounts");
                }
        if (nonempty_seq(x = yaml_map_get(spec, "imagePullSecrets"))) {
                _cleanup_free_ char *p = path_join(c, prefix, "spec.imagePullSecrets");
                differ(c, x, p,
                       "reads pull secrets from the apiserver, which refuses a static pod that "
                       "references Secrets: give the node its registry credentials instead (a "
                       "credential file or provider)");
        }
        check_priority(c, spec, prefix);
        check_volumes(c, spec, prefix);
        check_containers(c, spec, prefix);
}

static void check_document(Compat *c, const YamlNode *doc, KubeletSourceKind source) {
        const char *kind = scalar(yaml_map_get(doc, "kind"));

        if (!kind)
                return; /* the parser reports it */
        if (streq(kind, "Pod")) {
                check_pod(c, doc, NULL);
                return;
        }
        if (streq(kind, "ConfigMap") || streq(kind, "Secret")) {
                differ(c, doc, NULL,
                       "does not read %s documents from its manifests; in a cluster they are "
                       "API objects, and static pods may not reference them there either",
                       kind);
                return;
        }
        if (!streq(kind, "List") && !streq(kind, "PodList"))
                return;
        if (source == KUBELET_SOURCE_FILE)
                differ(c, doc, NULL,
                       "reads one Pod per file from its manifest directory: a %s there is an "
                       "error (only staticPodURL may serve a PodList)",
                       kind);
        else if (streq(kind, "List"))
                differ(c, doc, NULL,
                       "reads a Pod or a PodList from staticPodURL: a List is an error (write "
                       "\"kind: PodList\")");

        const YamlNode *items = yaml_map_get(doc, "items");
        if (!items || items->type != YAML_NODE_SEQ)
                return;
        for (size_t i = 0; i < items->n; i++) {
                const char *ik = scalar(yaml_map_get(items->items[i], "kind"));
                _cleanup_free_ char *prefix = path_join(c, NULL, "items[%zu]", i);
                if (ik && (streq(ik, "ConfigMap") || streq(ik, "Secret")))
                        differ(c, items->items[i], prefix,
                               "reads only Pods from a PodList; a %s is an API object in a "
                               "cluster",
                               ik);
                else
                        check_pod(c, items->items[i], prefix);
        }
}

int kubelet_compat_check(const char *buf, size_t size, const char *filename,
                         KubeletSourceKind source, Diagnostics *d) {
        _cleanup_diagnostics_ Diagnostics parse_diag;
        YamlNode **docs = NULL;
        size_t n_docs = 0;
        YamlLimits limits;
        _cleanup_diagnostics_ Diagnostics found;
        Compat c = { .diag = &found, .file = filename };

        diagnostics_init(&parse_diag);
        diagnostics_init(&found);
        yaml_limits_default(&limits);
        int r = yaml_parse_documents(buf ? buf : "", size, filename, &limits, &docs, &n_docs,
                                     &parse_diag);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_docs; i++) {
                if (i == 1)
                        differ(&c, docs[i], NULL,
                               "reads only the first YAML document of a %s; from here on, %zu "
                               "document%s not read",
                               source == KUBELET_SOURCE_FILE ? "file" : "URL's body", n_docs - 1,
                               n_docs - 1 == 1 ? " is" : "s are");
                check_document(&c, docs[i], source);
        }
        yaml_documents_free(docs, n_docs);
        /* in the file's order, as a reader goes through it */
        if (found.n > 0) /* no array at all when nothing was found */
                qsort(found.items, found.n, sizeof(Diag), diag_compare_place);
        diagnostics_merge(d, &found);
        return c.oom ? -ENOMEM : c.n;
}
