/* Intrusive doubly linked lists: the item has `prev` and `next` members;
 * head and tail are lvalues. */
#pragma once

#include <stddef.h>

/* Unlinks item from a list whose tail is tail (an lvalue). */
#define LIST_REMOVE_TAIL(head, tail, item)                                                         \
        do {                                                                                       \
                __typeof__(item) _i = (item);                                                      \
                if (_i->prev)                                                                      \
                        _i->prev->next = _i->next;                                                 \
                else                                                                               \
                        (head) = _i->next;                                                         \
                if (_i->next)                                                                      \
                        _i->next->prev = _i->prev;                                                 \
                else                                                                               \
                        (tail) = _i->prev;                                                         \
                _i->prev = _i->next = NULL;                                                        \
        } while (0)

/* Unlinks item from a list that keeps no tail. */
#define LIST_REMOVE(head, item)                                                                    \
        do {                                                                                       \
                __typeof__(item) _no_tail = NULL;                                                  \
                LIST_REMOVE_TAIL(head, _no_tail, item);                                            \
                (void)_no_tail;                                                                    \
        } while (0)

#define LIST_PREPEND(head, item)                                                                   \
        do {                                                                                       \
                __typeof__(item) _i = (item);                                                      \
                _i->prev = NULL;                                                                   \
                _i->next = (head);                                                                 \
                if (_i->next)                                                                      \
                        _i->next->prev = _i;                                                       \
                (head) = _i;                                                                       \
        } while (0)

#define LIST_APPEND(head, tail, item)                                                              \
        do {                                                                                       \
                __typeof__(item) _i = (item);                                                      \
                _i->next = NULL;                                                                   \
                _i->prev = (tail);                                                                 \
                if (_i->prev)                                                                      \
                        _i->prev->next = _i;                                                       \
                else                                                                               \
                        (head) = _i;                                                               \
                (tail) = _i;                                                                       \
        } while (0)
