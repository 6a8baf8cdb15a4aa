/* Scope-bound cleanup: every early return releases what the scope owned.
 * Pointers handed on are detached with TAKE_PTR()/TAKE_FD(). */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

/* Defines func##p(type *p) that calls func(*p) when *p is set. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                    \
        static inline void func##p(type *p) {                                                      \
                if (*p)                                                                            \
                        func(*p);                                                                  \
        }

#define TAKE_PTR(p)                                                                                \
        ({                                                                                         \
                __typeof__(p) _ptr_ = (p);                                                         \
                (p) = NULL;                                                                        \
                _ptr_;                                                                             \
        })

#define TAKE_FD(fd)                                                                                \
        ({                                                                                         \
                int _fd_ = (fd);                                                                   \
                (fd) = -EBADF;                                                                     \
                _fd_;                                                                              \
        })

static inline void freep(void *p) {
        free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

/* close() that keeps errno, so it can run on error paths. */
static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void)close(fd);
                errno = saved;
        }
        return -EBADF;
}
static inline void closep(int *fd) {
        *fd = safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

static inline FILE *safe_fclose(FILE *f) {
        if (f) {
                int saved = errno;
                (void)fclose(f);
                errno = saved;
        }
        return NULL;
}
static inline void fclosep(FILE **f) {
        *f = safe_fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* free() that returns NULL, for `p = mfree(p);`. */
static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir)
#define _cleanup_closedir_ _cleanup_(closedirp)

/* Closes the fds of a pipe pair. */
static inline void close_pairp(int (*p)[2]) {
        (*p)[0] = safe_close((*p)[0]);
        (*p)[1] = safe_close((*p)[1]);
}
#define _cleanup_close_pair_ _cleanup_(close_pairp)
