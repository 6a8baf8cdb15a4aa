/* What the agent does at start with a pod an earlier run left: a pure
 * decision, driven by the pod manager (per pod directory and per sandbox
 * record, before and after the sources are read) and by a worker's first
 * sync (pod-adopt.c).
 *
 * The runtime is the truth: a pod whose containers still exist in runc
 * (their IDs carry the pod UID's hash, container-id.h) or whose sandbox is
 * still recorded is live, whatever its checkpoint (pod.json) says. The
 * checkpoint only lets the agent know the pod before any source is read.
 * Evaluation order:
 *   1. A readable checkpoint: a worker from it adopts what runs; a source
 *      then claims it, or it is terminated once every source was read
 *      (POD_ADOPT_FROM_CHECKPOINT).
 *   2. No readable checkpoint (missing, empty, garbage, a symlink, another
 *      pod's) and nothing live: nothing to adopt; a manifest that wants the
 *      UID starts it afresh (POD_ADOPT_NEW).
 *   3. No readable checkpoint, live, a manifest wants the UID: that
 *      manifest's worker adopts the live containers and rewrites the
 *      checkpoint from the manifest; no new attempt starts beside a live
 *      one (POD_ADOPT_REBUILD).
 *   4. No readable checkpoint, live, no manifest wants it, every source read
 *      and none broken: stopped as a removed pod is (stop signal, grace
 *      period, kill, runc delete, CNI DEL), and only then is its directory
 *      removed (POD_ADOPT_STOP).
 *   5. Otherwise it waits untouched, its sandbox kept (POD_ADOPT_WAIT): a
 *      half-written manifest never takes a running pod down. */
#pragma once

#include <errno.h>
#include <stdbool.h>

typedef enum PodAdoptCheckpoint {
        POD_ADOPT_CHECKPOINT_READABLE,
        POD_ADOPT_CHECKPOINT_MISSING,
        POD_ADOPT_CHECKPOINT_UNREADABLE, /* empty, garbage, a symlink, not a regular file */
        _POD_ADOPT_CHECKPOINT_MAX,
        _POD_ADOPT_CHECKPOINT_INVALID = -EINVAL,
} PodAdoptCheckpoint;

typedef enum PodAdoptVerdict {
        POD_ADOPT_FROM_CHECKPOINT,
        POD_ADOPT_NEW,
        POD_ADOPT_REBUILD,
        POD_ADOPT_STOP,
        POD_ADOPT_WAIT,
        _POD_ADOPT_VERDICT_MAX,
        _POD_ADOPT_VERDICT_INVALID = -EINVAL,
} PodAdoptVerdict;

typedef struct PodAdoptFacts {
        PodAdoptCheckpoint checkpoint;
        bool live;            /* runc has a container of the pod, or its sandbox is recorded */
        bool wanted;          /* a source (or its checkpoint's worker) wants the UID now */
        bool sources_settled; /* every source was read and none reports a broken manifest */
} PodAdoptFacts;

PodAdoptVerdict pod_adopt_decide(const PodAdoptFacts *f);
const char *pod_adopt_verdict_to_string(PodAdoptVerdict v);
PodAdoptCheckpoint pod_adopt_checkpoint_from_errno(int r);
/* Whether the pod uid is live: ids (runtime_list_ids()) has a container of
 * it, or its sandbox record (<run-dir>/sandboxes/<uid>.json; NULL: not
 * looked at) exists. */
bool pod_adopt_live(char *const *ids, const char *uid, const char *sandbox_record);
