/* A FIFO of asynchronous operations, at most max_parallel of which run at a
 * time: the queue shared by the OCI runtime (src/runtime) and the CNI runner
 * (src/network). The owner embeds an OpQueueItem in its op and gives the
 * queue three hooks.
 *
 * Contract:
 * - op_queue_add() never starts the op: a defer source (the kick) starts
 *   ops from the loop, so no callback runs inside the call that queued it.
 * - One kick fills every free slot. start() may complete the op at once
 *   (op_queue_complete() from inside start()); it may even free the queue
 *   from the owner's callback: the kick notices and stops touching it.
 * - A running op holds its slot until the owner calls op_queue_complete(),
 *   which releases the slot and frees the op through free(). The owner calls
 *   its own callback only after that returns ("free the op, then call
 *   back"): the callback may queue new work and the slot count stays exact.
 * - op_queue_add_urgent() queues ahead of every op queued with
 *   op_queue_add() (after the urgent ones already waiting, in their order):
 *   for the step that finishes work already begun, which must wait for a
 *   free slot, never behind the other owners' new work.
 * - op_queue_cancel() of a queued op removes and frees it (it never starts).
 *   Of a running op: it is marked cancelled and stop() (if any) tells the
 *   owner to stop; the slot is freed only when the op completes. The owner
 *   skips its callback for a cancelled op (op_queue_item_cancelled()). */
#pragma once

#include <stdbool.h>

#include "event.h"

typedef struct OpQueue OpQueue;
typedef struct OpQueueItem OpQueueItem;

struct OpQueueItem {
        OpQueue *queue;
        OpQueueItem *prev, *next; /* in the queue's waiting or running list */
        bool running;
        bool cancelled;
        bool urgent; /* queued with op_queue_add_urgent() */
};

typedef struct OpQueueOps {
        /* Starts a dequeued op (its slot is taken). Completes it later, or
         * at once, with op_queue_complete(). */
        void (*start)(OpQueueItem *item);
        /* A running op was cancelled: stop early if it can. May be NULL
         * (running ops then finish, silently). Must not complete the op. */
        void (*stop)(OpQueueItem *item);
        /* Frees the owner's op (never started, or completed). */
        void (*free)(OpQueueItem *item);
} OpQueueOps;

/* max_parallel == 0 is taken as 1. */
int op_queue_new(Event *e, unsigned max_parallel, const OpQueueOps *ops, const char *description,
                 OpQueue **ret);
/* Frees waiting ops through free(). Running ops are the owner's: it must
 * have completed or taken them out (op_queue_detach_running()) first. */
OpQueue *op_queue_free(OpQueue *q);

void op_queue_add(OpQueue *q, OpQueueItem *item);
void op_queue_add_urgent(OpQueue *q, OpQueueItem *item);
/* Releases the slot of a running op, frees it through free(). */
void op_queue_complete(OpQueueItem *item);
void op_queue_cancel(OpQueueItem *item);
/* Unlinks and returns one running op (NULL when none): for an owner
 * going away, which frees its running ops itself. */
OpQueueItem *op_queue_detach_running(OpQueue *q);

bool op_queue_item_cancelled(const OpQueueItem *item);
unsigned op_queue_n_running(const OpQueue *q);
unsigned op_queue_n_waiting(const OpQueue *q);
