/* imagePullSecrets (docs/images.md): the pod's local Secrets of type
 * kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg, merged into one
 * docker config.json document for the pull, tried before the agent's own
 * credential file. */
#include <jansson.h>

#include "json-util.h"
#include "log.h"
#include "pod-worker-internal.h"
#include "registry-auth.h"
#include "string-util.h"
#include "strv.h"

/* As kubelet: a Secret that is missing or of another type is reported and
 * skipped (the pull may still work anonymously or with the agent's file);
 * of two Secrets naming the same registry the first listed wins. */
int worker_pull_auths(PodWorker *w, char **ret_json, Error *err) {
        const Pod *pod = w->state.pod;
        _cleanup_json_ json_t *auths = NULL;

        *ret_json = NULL;
        STRV_FOREACH(name, pod->spec.image_pull_secrets) {
                const Secret *s = pod_lookup_secret(&w->ctx->lookup, w->object->namespace, *name);
                const char *key = NULL, *type = NULL;
                if (s && s->type == SECRET_TYPE_DOCKER_CONFIG_JSON)
                        key = ".dockerconfigjson", type = "kubernetes.io/dockerconfigjson";
                else if (s && s->type == SECRET_TYPE_DOCKERCFG)
                        key = ".dockercfg", type = "kubernetes.io/dockercfg";
                const KeyValue *kv = key ? string_map_get(&s->data, key) : NULL;
                if (!kv) {
                        worker_log(w, LOG_WARNING, NULL,
                                   "Pod \"%s\": imagePullSecrets \"%s\": %s, pulling without it.",
                                   w->full_name, *name,
                                   !s     ? "no such Secret in the pod's namespace"
                                   : !key ? "not of type kubernetes.io/dockerconfigjson or "
                                            "kubernetes.io/dockercfg"
                                          : "it has no credentials key");
                        continue;
                }
                _cleanup_free_ char *config = NULL;
                Error serr = {};
                if (registry_secret_to_config(type, kv->value, kv->value_len, &config, &serr) < 0)
                        return error_set(err, -EINVAL, "imagePullSecrets \"%s\": %s", *name,
                                         serr.message);
                _cleanup_json_ json_t *doc = json_loads(config, 0, NULL);
                json_t *entries = doc ? json_object_get(doc, "auths") : NULL;
                if (!json_is_object(entries))
                        continue;
                if (!auths && !(auths = json_object()))
                        return -ENOMEM;
                const char *host;
                json_t *entry;
                json_object_foreach(entries, host, entry) if (!json_object_get(auths, host) &&
                                                              json_object_set(auths, host, entry) <
                                                                      0) return -ENOMEM;
        }
        if (!auths)
                return 0;
        _cleanup_json_ json_t *doc = json_pack("{s:O}", "auths", auths);
        if (!doc || !(*ret_json = json_dumps(doc, JSON_COMPACT)))
                return -ENOMEM;
        return 0;
}
