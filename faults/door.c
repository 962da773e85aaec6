/*
 * door.c -- the fault door at the POSIX boundary (door.h): libc's file
 * calls, defined in the executable, turned into eng_io_ops for the fault
 * library's hooks when they touch the database directory.
 *
 * A call, armed:
 *
 *   open/openat(path)   path under the directory? --no--> libc (and the
 *        |                                              table forgets fd)
 *        +-- CREATE or TRUNCATE op around libc's open, then the table
 *            gets fd -> (file, device, inode)
 *   read/write/fsync... (fd)  fd in the table and still that inode?
 *        |                    --no--> libc
 *        +-- before(op) --rc<0--> -1, errno = -rc (nothing issued, no after)
 *              |  skip --> reported done, nothing issued
 *              v
 *            libc's call on op.buf/op.offset/op.len --> after(op) --> result
 *
 * Disarmed, every call is one relaxed load of `armed` and a jump to libc.
 *
 * Invariants:
 *   DR1  a translated call runs with the thread's `inside` count raised, so
 *        the hooks' own file calls (the journal reading old bytes, a drop
 *        rolling writes back) go straight to libc and are never translated;
 *   DR2  the file records (door_file) a descriptor slot points at live
 *        until flt_door_disarm, which frees them only once no thread is
 *        inside the door (`users`): every reader and writer of a slot's
 *        pointer is counted in `users` first (the relaxed "is the slot
 *        empty" test derefs nothing);
 *   DR3  a slot is trusted only while statx(fd) still shows its device and
 *        inode, so a descriptor closed behind the door's back (glibc's
 *        internal close in fclose) and reused is never taken for the file
 *        it was;
 *   DR4  unpositioned reads and writes of one file run under that file's
 *        lock, from the lseek that learns their offset to after(): the
 *        journal reads the old bytes of the range the write really covers;
 *   DR5  after a rename or unlink the table holds no descriptor under a name
 *        that no longer names its inode (the source's descriptors move to
 *        the target's name; the replaced target's, the unlinked file's
 *        and those of files inside a renamed directory are forgotten and
 *        pass through from then on).
 *
 * The 64-bit names (open64, pread64 ...) are the same calls on LP64 Linux:
 * every entry point reaches libc through its 64-bit function.
 */
#undef _FORTIFY_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "door.h"
#include "fileid.h"
#include "paths.h"

/* The _FORTIFY_SOURCE entry points a library built with it calls instead
 * of open and read (glibc exports them; its headers declare them only
 * when fortifying). */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);
void __chk_fail(void) __attribute__((noreturn));

/* ---- libc's functions ---------------------------------------------------------------------------- */

static struct {
    int (*openat64)(int, const char *, int, ...);
    int (*close)(int);
    int (*dup)(int);
    int (*dup2)(int, int);
    int (*dup3)(int, int, int);
    ssize_t (*read)(int, void *, size_t);
    ssize_t (*write)(int, const void *, size_t);
    ssize_t (*pread64)(int, void *, size_t, off64_t);
    ssize_t (*pwrite64)(int, const void *, size_t, off64_t);
    ssize_t (*readv)(int, const struct iovec *, int);
    ssize_t (*writev)(int, const struct iovec *, int);
    ssize_t (*preadv64)(int, const struct iovec *, int, off64_t);
    ssize_t (*pwritev64)(int, const struct iovec *, int, off64_t);
    int (*fsync)(int);
    int (*fdatasync)(int);
    int (*ftruncate64)(int, off64_t);
    int (*truncate64)(const char *, off64_t);
    int (*fallocate64)(int, int, off64_t, off64_t);
    int (*posix_fallocate64)(int, off64_t, off64_t);
    int (*renameat2)(int, const char *, int, const char *, unsigned);
    int (*unlinkat)(int, const char *, int);
    int (*linkat)(int, const char *, int, const char *, int);
} real;

/* clang-format off */
#define REAL_FNS(X)                                                                                         \
    X(openat64) X(close) X(dup) X(dup2) X(dup3) X(read) X(write) X(pread64) X(pwrite64) X(readv) X(writev)  \
    X(preadv64) X(pwritev64) X(fsync) X(fdatasync) X(ftruncate64) X(truncate64) X(fallocate64)             \
    X(posix_fallocate64) X(renameat2) X(unlinkat) X(linkat)
/* clang-format on */

/* Resolve every libc function (the constructor, before main; or the first
 * call that finds one missing, from another constructor).  Each pointer
 * is written with the one value dlsym gives, so two threads resolving at
 * once agree; no lock, so a dlsym that itself opens a file cannot
 * deadlock on it. */
static void resolve(void) {
#define R(name)                                                      \
    {                                                                \
        void *p = dlsym(RTLD_NEXT, #name);                           \
        if (!p) {                                                    \
            fputs("faults/door.c: libc has no " #name "\n", stderr); \
            abort();                                                 \
        }                                                            \
        memcpy(&real.name, &p, sizeof p);                            \
    }
    REAL_FNS(R)
#undef R
}

__attribute__((constructor(101))) static void door_ctor(void) { resolve(); }

#define REAL(f) (__builtin_expect(real.f != NULL, 1) ? real.f : (resolve(), real.f))

/* ---- state ---------------------------------------------------------------------------------------- */

static atomic_int armed;      /* the one load a disarmed call pays */
static atomic_long users;     /* threads inside a translated call (DR2) */
static _Atomic uint64_t nops; /* flt_door_ops */
static __thread int inside;   /* DR1; flt_door_bypass */
static pthread_mutex_t arm_mu = PTHREAD_MUTEX_INITIALIZER;

/* Set by flt_door_arm before `armed`, read only by threads counted in
 * `users` after they saw `armed` (seq_cst both ways). */
static const eng_io_hooks *g_hooks;
static char *g_db;      /* the directory as armed (absolute), no trailing slash */
static char *g_db_real; /* its realpath */

static inline int door_on(void) { return atomic_load_explicit(&armed, memory_order_relaxed) && !inside; }

/* Count the caller in (DR2): 1 if the door is still armed, else 0 and not
 * counted. */
static int door_enter(void) {
    atomic_fetch_add(&users, 1);
    if (!atomic_load(&armed)) {
        atomic_fetch_sub(&users, 1);
        return 0;
    }
    inside++;
    return 1;
}

static void door_leave(void) {
    inside--;
    atomic_fetch_sub(&users, 1);
}

/* ---- file records: one per path relative to the directory ----------------------------------------- */

typedef struct door_file {
    struct door_file *next; /* hash chain */
    int id;                 /* file_id: 1 up, in the order names were met */
    char *abs;              /* g_db + "/" + rel (g_db for ".") */
    char rel[];
} door_file;

#define NBUCKETS 1024
static door_file *buckets[NBUCKETS];
static pthread_mutex_t files_mu = PTHREAD_MUTEX_INITIALIZER;
static int next_id;

static unsigned hash_str(const char *s) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h % NBUCKETS;
}

/* The record of REL, made on first use; NULL when out of memory. */
static door_file *file_of(const char *rel) {
    unsigned b = hash_str(rel);
    pthread_mutex_lock(&files_mu);
    door_file *f = buckets[b];
    while (f && strcmp(f->rel, rel) != 0) f = f->next;
    if (!f) {
        size_t rl = strlen(rel), dl = strlen(g_db);
        f = malloc(sizeof *f + rl + 1);
        char *abs = f ? malloc(dl + 1 + rl + 1) : NULL;
        if (!abs) {
            free(f);
            f = NULL;
        } else {
            memcpy(f->rel, rel, rl + 1);
            if (!strcmp(rel, "."))
                memcpy(abs, g_db, dl + 1);
            else
                snprintf(abs, dl + 1 + rl + 1, "%s/%s", g_db, rel);
            f->abs = abs;
            f->id = ++next_id;
            f->next = buckets[b];
            buckets[b] = f;
        }
    }
    pthread_mutex_unlock(&files_mu);
    return f;
}

static void files_free(void) {
    for (int b = 0; b < NBUCKETS; b++) {
        for (door_file *f = buckets[b], *n; f; f = n) {
            n = f->next;
            free(f->abs);
            free(f);
        }
        buckets[b] = NULL;
    }
    next_id = 0;
}

/* ---- the descriptor table --------------------------------------------------------------------------- */

typedef struct door_slot {
    _Atomic(door_file *) file; /* NULL: not a database file */
    uint64_t dev, ino;         /* DR3, under the slot's lock */
    int is_dir;
} door_slot;

/* What a translated call needs of its descriptor (a copy: the slot may
 * change meanwhile). */
typedef struct door_fd {
    door_file *file;
    int is_dir;
} door_fd;

#define CHUNK_BITS 10
#define CHUNK      (1 << CHUNK_BITS)
#define NCHUNKS    1024 /* descriptors below 2^20 */
static _Atomic(door_slot *) chunks[NCHUNKS];
static atomic_int fd_hwm; /* highest descriptor ever given a slot, + 1 */

#define NLOCKS 64
static pthread_mutex_t slot_mu[NLOCKS] = {[0 ... NLOCKS - 1] = PTHREAD_MUTEX_INITIALIZER};
static pthread_mutex_t pos_mu[NLOCKS] = {[0 ... NLOCKS - 1] = PTHREAD_MUTEX_INITIALIZER}; /* DR4, by file */

static door_slot *slot_at(int fd, int make) {
    if (fd < 0 || fd >= NCHUNKS * CHUNK) return NULL;
    _Atomic(door_slot *) *c = &chunks[fd >> CHUNK_BITS];
    door_slot *s = atomic_load_explicit(c, memory_order_acquire);
    if (!s && make) {
        door_slot *n = calloc(CHUNK, sizeof *n);
        if (!n) return NULL;
        if (atomic_compare_exchange_strong(c, &s, n))
            s = n;
        else
            free(n); /* another thread's chunk won: S holds it */
    }
    return s ? &s[fd & (CHUNK - 1)] : NULL;
}

/* Point FD at DF (NULL: forget it), open on inode INO of device DEV.
 * Caller counted in. */
static void slot_put(int fd, door_file *df, uint64_t dev, uint64_t ino, int is_dir) {
    door_slot *s = slot_at(fd, df != NULL);
    if (!s) return;
    pthread_mutex_t *mu = &slot_mu[fd % NLOCKS];
    pthread_mutex_lock(mu);
    if (df) s->dev = dev, s->ino = ino, s->is_dir = is_dir;
    atomic_store_explicit(&s->file, df, memory_order_relaxed);
    pthread_mutex_unlock(mu);
    int hwm = atomic_load(&fd_hwm);
    while (df && fd + 1 > hwm && !atomic_compare_exchange_weak(&fd_hwm, &hwm, fd + 1)) {}
}

/* Track FD as DF when it is a regular file or a directory; else forget
 * it.  Caller counted in. */
static void slot_track(int fd, door_file *df) {
    uint64_t dev, ino;
    unsigned type;
    if (df && flt_fd_ident(fd, &dev, &ino, &type) == 0 && (type == S_IFREG || type == S_IFDIR))
        slot_put(fd, df, dev, ino, type == S_IFDIR);
    else
        slot_put(fd, NULL, 0, 0, 0);
}

/* FD's slot copied into *OUT; 1 if it names a database file still open on
 * the inode it was opened on (DR3).  Caller counted in. */
static int slot_get(int fd, door_fd *out) {
    door_slot *s = slot_at(fd, 0);
    if (!s) return 0;
    pthread_mutex_t *mu = &slot_mu[fd % NLOCKS];
    pthread_mutex_lock(mu);
    door_file *df = atomic_load_explicit(&s->file, memory_order_relaxed);
    uint64_t dev = s->dev, ino = s->ino;
    out->file = df;
    out->is_dir = s->is_dir;
    pthread_mutex_unlock(mu);
    if (!df) return 0;
    uint64_t now_dev, now_ino;
    unsigned type;
    if (flt_fd_ident(fd, &now_dev, &now_ino, &type) == 0 && now_dev == dev && now_ino == ino) return 1;
    pthread_mutex_lock(mu); /* stale: forget it, unless it was changed meanwhile */
    if (atomic_load_explicit(&s->file, memory_order_relaxed) == df && s->dev == dev && s->ino == ino)
        atomic_store_explicit(&s->file, NULL, memory_order_relaxed);
    pthread_mutex_unlock(mu);
    return 0;
}

/* Every descriptor of FROM now names TO (NULL: forgotten), and those of
 * files below FROM (a directory) are forgotten.  DR5. */
static void slots_move(door_file *from, door_file *to) {
    int hwm = atomic_load(&fd_hwm);
    size_t fl = strlen(from->rel);
    for (int fd = 0; fd < hwm; fd++) {
        door_slot *s = slot_at(fd, 0);
        if (!s) {
            fd |= CHUNK - 1; /* no chunk: skip to the next */
            continue;
        }
        door_file *f = atomic_load_explicit(&s->file, memory_order_relaxed);
        /* A renamed directory's files: their names moved too, forgotten. */
        int below = f && f != from && !strncmp(f->rel, from->rel, fl) && f->rel[fl] == '/';
        if (f != from && !below) continue;
        pthread_mutex_t *mu = &slot_mu[fd % NLOCKS];
        pthread_mutex_lock(mu);
        if (atomic_load_explicit(&s->file, memory_order_relaxed) == f)
            atomic_store_explicit(&s->file, below ? NULL : to, memory_order_relaxed);
        pthread_mutex_unlock(mu);
    }
}

static void slots_clear(void) {
    int hwm = atomic_load(&fd_hwm);
    for (int c = 0; c < NCHUNKS && c * CHUNK < hwm; c++) {
        door_slot *s = atomic_load(&chunks[c]);
        if (!s) continue;
        for (int i = 0; i < CHUNK; i++) {
            pthread_mutex_t *mu = &slot_mu[(c * CHUNK + i) % NLOCKS];
            pthread_mutex_lock(mu);
            atomic_store_explicit(&s[i].file, NULL, memory_order_relaxed);
            pthread_mutex_unlock(mu);
        }
    }
}

/* The database file FD is open on: 1 with the caller counted in (call
 * door_leave), or 0 (not counted). */
static int fd_enter(int fd, door_fd *d) {
    door_slot *s = slot_at(fd, 0);
    if (!s || !atomic_load_explicit(&s->file, memory_order_relaxed)) return 0;
    if (!door_enter()) return 0;
    if (slot_get(fd, d)) return 1;
    door_leave();
    return 0;
}

/* ---- paths ------------------------------------------------------------------------------------------- */


/* The path of directory descriptor DIRFD into OUT: a tracked directory's
 * record, else /proc/self/fd.  1 if known. */
static int dirfd_path(int dirfd, char *out, size_t cap) {
    door_fd d;
    if (slot_get(dirfd, &d) && d.is_dir) {
        if (strlen(d.file->abs) >= cap) return 0;
        strcpy(out, d.file->abs);
        return 1;
    }
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
    ssize_t n = readlink(link, out, cap - 1);
    if (n <= 0 || out[0] != '/') return 0;
    out[n] = 0;
    return 1;
}

/* PATH (relative to DIRFD when not absolute) under the database
 * directory: its path relative to it into REL ("." for the directory) and
 * 1; 0 when it is elsewhere or cannot be resolved.  By text first (the
 * directory's spelling or its realpath), else by the realpath of the
 * parent (the file itself may not exist yet).  Caller counted in. */
static int path_rel(int dirfd, const char *path, char *rel, size_t cap) {
    char full[PATH_MAX];
    if (!path || !*path) return 0;
    if (path[0] == '/') {
        if (strlen(path) >= sizeof full) return 0;
        strcpy(full, path);
    } else {
        char base[PATH_MAX];
        if (dirfd == AT_FDCWD ? !getcwd(base, sizeof base) : !dirfd_path(dirfd, base, sizeof base)) return 0;
        if (snprintf(full, sizeof full, "%s/%s", base, path) >= (int)sizeof full) return 0;
    }
    const char *rest = flt_path_under(full, g_db);
    if (!rest) rest = flt_path_under(full, g_db_real);
    if (rest && flt_path_norm_rel(rest, rel, cap) == 0) return 1;
    char res[PATH_MAX];
    char *slash = strrchr(full, '/');
    const char *name = slash + 1;
    if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
        if (!realpath(full, res)) return 0;
    } else {
        *slash = 0;
        if (!realpath(full[0] ? full : "/", res)) return 0;
        size_t rl = strlen(res);
        if (rl + 1 + strlen(name) + 1 > sizeof res) return 0;
        if (rl > 1) res[rl++] = '/';
        strcpy(res + rl, name);
    }
    rest = flt_path_under(res, g_db_real);
    return rest && flt_path_norm_rel(rest, rel, cap) == 0;
}

/* The record of PATH (relative to DIRFD) if it is under the directory,
 * else NULL.  Caller counted in. */
static door_file *path_file(int dirfd, const char *path) {
    char rel[PATH_MAX];
    return path_rel(dirfd, path, rel, sizeof rel) ? file_of(rel) : NULL;
}

/* ---- the hooks --------------------------------------------------------------------------------------- */

static int hook_before(eng_io_op *op) {
    atomic_fetch_add_explicit(&nops, 1, memory_order_relaxed);
    if (!g_hooks->before) return 0;
    int rc = g_hooks->before(g_hooks->ctx, op);
    return rc > 0 ? -rc : rc; /* a positive errno is taken as one, as engine/io.c does */
}

static void hook_after(eng_io_op *op) {
    if (g_hooks->after) g_hooks->after(g_hooks->ctx, op);
}

/* A call's end: -1 with errno = -RC when RC < 0, else RET with the errno
 * the caller had (the hooks' own calls may have changed it). */
static long finish(long rc, long ret, int saved_errno) {
    if (rc < 0) {
        errno = (int)-rc;
        return -1;
    }
    errno = saved_errno;
    return ret;
}

/* ---- open ---------------------------------------------------------------------------------------------- */

static int door_openat(int dirfd, const char *path, int flags, mode_t mode) {
    if (!door_on() || !door_enter()) return REAL(openat64)(dirfd, path, flags, mode);
    int saved = errno;
    door_file *df = (flags & O_TMPFILE) == O_TMPFILE ? NULL : path_file(dirfd, path);
    int fd;
    if (!df) {
        fd = REAL(openat64)(dirfd, path, flags, mode);
        if (fd >= 0) {
            slot_put(fd, NULL, 0, 0, 0); /* whatever a descriptor of that number left */
            errno = saved;               /* path_file's realpath may have set it */
        }
        door_leave();
        return fd;
    }
    struct stat st;
    int exists = stat(df->abs, &st) == 0, kind = -1;
    if ((flags & O_CREAT) && !exists)
        kind = ENG_IO_CREATE;
    else if ((flags & O_TRUNC) && exists && S_ISREG(st.st_mode) && st.st_size > 0 && (flags & O_ACCMODE) != O_RDONLY)
        kind = ENG_IO_TRUNCATE; /* to 0: the journal keeps the old bytes */
    long rc = 0;
    if (kind < 0) {
        fd = REAL(openat64)(dirfd, path, flags, mode);
        rc = fd < 0 ? -errno : 0;
    } else {
        eng_io_op op = {.kind = kind, .file_id = df->id, .path = df->abs};
        rc = hook_before(&op);
        fd = -1;
        if (rc == 0) {
            /* A skipped create leaves the file missing (the open then
             * fails as engine/io.c's does); a skipped truncate, its bytes. */
            int fl = op.skip ? flags & ~(kind == ENG_IO_CREATE ? O_CREAT : O_TRUNC) : flags;
            fd = REAL(openat64)(dirfd, path, fl, mode);
            int e = errno;
            op.offset = 0;
            op.result = fd >= 0 || op.skip ? 0 : -e;
            hook_after(&op);
            rc = op.result < 0 ? op.result : fd < 0 ? -e : 0;
            if (rc < 0 && fd >= 0) {
                REAL(close)(fd); /* after() failed it */
                fd = -1;
            }
        }
    }
    if (fd >= 0) slot_track(fd, df);
    door_leave();
    return (int)finish(rc, fd, saved);
}

/* The mode argument, present when FLAGS make a file (glibc's rule). */
#define MODE_ARG(flags, mode)                                        \
    do {                                                             \
        if (((flags)&O_CREAT) || ((flags)&O_TMPFILE) == O_TMPFILE) { \
            va_list ap;                                              \
            va_start(ap, flags);                                     \
            mode = va_arg(ap, mode_t);                               \
            va_end(ap);                                              \
        }                                                            \
    } while (0)

int open(const char *path, int flags, ...) {
    mode_t mode = 0;
    MODE_ARG(flags, mode);
    return door_openat(AT_FDCWD, path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...) {
    mode_t mode = 0;
    MODE_ARG(flags, mode);
    return door_openat(dirfd, path, flags, mode);
}

int creat(const char *path, mode_t mode) { return door_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode); }

/* The 64-bit names are the same functions (LP64: off64_t is off_t). */
#define ALIAS(name) __attribute__((alias(#name)))
int open64(const char *path, int flags, ...) ALIAS(open);
int openat64(int dirfd, const char *path, int flags, ...) ALIAS(openat);
int creat64(const char *path, mode_t mode) ALIAS(creat);

/* Fortified opens: glibc's own would abort on a create without a mode. */
static int open_chk(int dirfd, const char *path, int flags) {
    if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) __chk_fail();
    return door_openat(dirfd, path, flags, 0);
}
int __open_2(const char *path, int flags) { return open_chk(AT_FDCWD, path, flags); }
int __openat_2(int dirfd, const char *path, int flags) { return open_chk(dirfd, path, flags); }
int __open64_2(const char *path, int flags) ALIAS(__open_2);
int __openat64_2(int dirfd, const char *path, int flags) ALIAS(__openat_2);

/* ---- close and dup: the table follows the descriptors ------------------------------------------------- */

int close(int fd) {
    /* Forgotten before the close: once closed, the number may be some
     * other thread's new descriptor. */
    if (door_on() && door_enter()) {
        slot_put(fd, NULL, 0, 0, 0);
        door_leave();
    }
    return REAL(close)(fd);
}

/* NFD is now a copy of OLD: a database file's descriptor too, or not. */
static void dup_track(int old, int nfd) {
    door_fd d;
    slot_track(nfd, slot_get(old, &d) ? d.file : NULL);
}

int dup(int old) {
    int fd = REAL(dup)(old);
    if (fd >= 0 && door_on() && door_enter()) {
        dup_track(old, fd);
        door_leave();
    }
    return fd;
}

int dup2(int old, int nfd) {
    int fd = REAL(dup2)(old, nfd);
    if (fd >= 0 && old != nfd && door_on() && door_enter()) {
        dup_track(old, fd);
        door_leave();
    }
    return fd;
}

int dup3(int old, int nfd, int flags) {
    int fd = REAL(dup3)(old, nfd, flags);
    if (fd >= 0 && door_on() && door_enter()) {
        dup_track(old, fd);
        door_leave();
    }
    return fd;
}

/* ---- reads and writes -------------------------------------------------------------------------------- */

/* Where an unpositioned call on FD starts (*AT), and whether FD appends;
 * DR4's lock is taken by the caller.  0, or -errno (ESPIPE: the caller
 * passes the call through). */
static int fd_position(int fd, uint64_t *at, int *append, int *flags) {
    *flags = fcntl(fd, F_GETFL);
    *append = *flags >= 0 && (*flags & O_APPEND);
    if (*append) return flt_size_at(fd, "", AT_EMPTY_PATH, at) ? -errno : 0;
    off_t cur = lseek(fd, 0, SEEK_CUR);
    if (cur < 0) return -errno;
    *at = (uint64_t)cur;
    return 0;
}

static pthread_mutex_t *file_lock(const door_file *df) { return &pos_mu[(unsigned)df->id % NLOCKS]; }

/* A WRITE of N bytes from BUF to D's file at OFF (POSITIONED), else at the
 * descriptor's offset, advanced as write(2) advances it.  Caller counted
 * in. */
static ssize_t door_write(int fd, const door_fd *d, const void *buf, size_t n, uint64_t off, int positioned) {
    int saved = errno, append = 0, fl = -1;
    uint64_t at = off;
    pthread_mutex_t *mu = positioned ? NULL : file_lock(d->file);
    if (mu) pthread_mutex_lock(mu);
    if (!positioned) {
        if (fd_position(fd, &at, &append, &fl) < 0) {
            ssize_t r = REAL(write)(fd, buf, n);
            pthread_mutex_unlock(mu);
            return r;
        }
    } else {
        /* pwrite on an O_APPEND descriptor appends (Linux), whatever OFF. */
        fl = fcntl(fd, F_GETFL);
        if (fl >= 0 && (fl & O_APPEND) && !flt_size_at(fd, "", AT_EMPTY_PATH, &at)) append = 1;
    }
    eng_io_op op = {.kind = ENG_IO_WRITE,
                    .file_id = d->file->id,
                    .path = d->file->abs,
                    .buf = (void *)buf,
                    .offset = at,
                    .len = n,
                    .short_count = 1};
    long rc = hook_before(&op);
    if (rc < 0) {
        if (mu) pthread_mutex_unlock(mu);
        return finish(rc, 0, saved);
    }
    /* A hook may only shorten a transfer into the caller's own buffer. */
    if (op.buf == buf && op.len > n) op.len = n;
    ssize_t r = 0;
    int used_write = 0, e = 0;
    if (op.skip) {
        op.result = (int64_t)n;
    } else if (op.len > 0) {
        if (op.offset == at && !positioned) {
            r = REAL(write)(fd, op.buf, op.len), used_write = 1; /* the kernel moves the offset, or appends */
        } else if (op.offset == at) {
            r = REAL(pwrite64)(fd, op.buf, op.len, (off64_t)off);
        } else if (append) {
            /* Misdirected on an appending descriptor: only without
             * O_APPEND does pwrite go where the hook said. */
            fcntl(fd, F_SETFL, fl & ~O_APPEND);
            r = REAL(pwrite64)(fd, op.buf, op.len, (off64_t)op.offset);
            e = errno;
            fcntl(fd, F_SETFL, fl);
            errno = e;
        } else {
            r = REAL(pwrite64)(fd, op.buf, op.len, (off64_t)op.offset);
        }
        e = errno;
        op.issued = op.len;
        op.result = r < 0 ? -(int64_t)e : (int64_t)r;
    }
    hook_after(&op);
    ssize_t ret;
    if (op.result < 0)
        ret = -1;
    else if (op.skip || ((uint64_t)op.result == op.len && op.short_count != 2))
        ret = (ssize_t)n; /* a torn or lost write is reported complete (engine/io.c IO3) */
    else
        ret = (ssize_t)op.result; /* the kernel's own short write, or a hook's (short_count 2) */
    if (!positioned && !append && ret >= 0) {
        uint64_t kernel = at + (used_write && r > 0 ? (uint64_t)r : 0);
        if (kernel != at + (uint64_t)ret) lseek(fd, (off_t)(at + (uint64_t)ret), SEEK_SET);
    }
    if (mu) pthread_mutex_unlock(mu);
    return finish(op.result < 0 ? op.result : 0, ret, saved);
}

/* A READ of N bytes into BUF, as door_write places it. */
static ssize_t door_read(int fd, const door_fd *d, void *buf, size_t n, uint64_t off, int positioned) {
    int saved = errno;
    uint64_t at = off;
    pthread_mutex_t *mu = positioned ? NULL : file_lock(d->file);
    if (mu) pthread_mutex_lock(mu);
    if (!positioned) { /* reads use the offset, also on an appending descriptor */
        off_t cur = lseek(fd, 0, SEEK_CUR);
        if (cur < 0) {
            ssize_t r = REAL(read)(fd, buf, n);
            pthread_mutex_unlock(mu);
            return r;
        }
        at = (uint64_t)cur;
    }
    eng_io_op op = {.kind = ENG_IO_READ,
                    .file_id = d->file->id,
                    .path = d->file->abs,
                    .buf = buf,
                    .offset = at,
                    .len = n,
                    .short_count = 1}; /* a cut len comes back as the count read */
    long rc = hook_before(&op);
    if (rc < 0) {
        if (mu) pthread_mutex_unlock(mu);
        return finish(rc, 0, saved);
    }
    if (op.buf == buf && op.len > n) op.len = n;
    ssize_t r = 0;
    int used_read = 0;
    if (op.skip) {
        op.result = (int64_t)n;
    } else if (op.len > 0) {
        if (op.offset == at && !positioned)
            r = REAL(read)(fd, op.buf, op.len), used_read = 1;
        else
            r = REAL(pread64)(fd, op.buf, op.len, (off64_t)op.offset);
        op.issued = op.len;
        op.result = r < 0 ? -(int64_t)errno : (int64_t)r;
    }
    hook_after(&op);
    ssize_t ret = op.result < 0 ? -1 : (ssize_t)op.result;
    if (ret > 0 && op.buf != buf) memcpy(buf, op.buf, (size_t)ret < n ? (size_t)ret : n);
    if (ret > (ssize_t)n) ret = (ssize_t)n;
    if (!positioned && ret >= 0) {
        uint64_t kernel = at + (used_read && r > 0 ? (uint64_t)r : 0);
        if (kernel != at + (uint64_t)ret) lseek(fd, (off_t)(at + (uint64_t)ret), SEEK_SET);
    }
    if (mu) pthread_mutex_unlock(mu);
    return finish(op.result < 0 ? op.result : 0, ret, saved);
}

ssize_t read(int fd, void *buf, size_t n) {
    door_fd d;
    if (!door_on() || !fd_enter(fd, &d)) return REAL(read)(fd, buf, n);
    ssize_t r = d.is_dir ? REAL(read)(fd, buf, n) : door_read(fd, &d, buf, n, 0, 0);
    door_leave();
    return r;
}

ssize_t write(int fd, const void *buf, size_t n) {
    door_fd d;
    if (!door_on() || !fd_enter(fd, &d)) return REAL(write)(fd, buf, n);
    ssize_t r = d.is_dir ? REAL(write)(fd, buf, n) : door_write(fd, &d, buf, n, 0, 0);
    door_leave();
    return r;
}

ssize_t pread(int fd, void *buf, size_t n, off_t off) {
    door_fd d;
    if (!door_on() || off < 0 || !fd_enter(fd, &d)) return REAL(pread64)(fd, buf, n, off);
    ssize_t r = d.is_dir ? REAL(pread64)(fd, buf, n, off) : door_read(fd, &d, buf, n, (uint64_t)off, 1);
    door_leave();
    return r;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    door_fd d;
    if (!door_on() || off < 0 || !fd_enter(fd, &d)) return REAL(pwrite64)(fd, buf, n, off);
    ssize_t r = d.is_dir ? REAL(pwrite64)(fd, buf, n, off) : door_write(fd, &d, buf, n, (uint64_t)off, 1);
    door_leave();
    return r;
}

ssize_t pread64(int fd, void *buf, size_t n, off64_t off) ALIAS(pread);
ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off) ALIAS(pwrite);

ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen) {
    if (n > buflen) __chk_fail();
    return read(fd, buf, n);
}
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen) {
    if (n > buflen) __chk_fail();
    return pread(fd, buf, n, off);
}
ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen) ALIAS(__pread_chk);

/* ---- vectored: one op over the gathered bytes ------------------------------------------------------------ */

/* The bytes IOV[0..CNT) hold: 1 if CNT and the sum are valid (else libc
 * answers EINVAL itself). */
static int iov_total(const struct iovec *iov, int cnt, size_t *total) {
    if (cnt < 0 || cnt > IOV_MAX) return 0;
    size_t t = 0;
    for (int i = 0; i < cnt; i++) {
        if (iov[i].iov_len > (size_t)SSIZE_MAX - t) return 0;
        t += iov[i].iov_len;
    }
    *total = t;
    return 1;
}

/* Vectored I/O on FD (positioned at OFF when OFF >= 0): gathered into one
 * buffer, one op, scattered back for reads.  *HANDLED 0: pass it to libc. */
static ssize_t door_vec(int fd, const struct iovec *iov, int cnt, off64_t off, int is_write, int *handled) {
    door_fd d;
    size_t total;
    *handled = 0;
    if (!iov_total(iov, cnt, &total) || !fd_enter(fd, &d)) return 0;
    if (d.is_dir) {
        door_leave();
        return 0;
    }
    *handled = 1;
    /* Page-aligned: the caller's descriptor may be O_DIRECT. */
    void *gp = NULL;
    uint8_t *g = posix_memalign(&gp, 4096, total ? total : 1) == 0 ? gp : NULL;
    ssize_t r;
    if (!g) {
        errno = ENOMEM;
        r = -1;
    } else if (is_write) {
        size_t p = 0;
        for (int i = 0; i < cnt; i++) memcpy(g + p, iov[i].iov_base, iov[i].iov_len), p += iov[i].iov_len;
        r = door_write(fd, &d, g, total, off < 0 ? 0 : (uint64_t)off, off >= 0);
    } else {
        r = door_read(fd, &d, g, total, off < 0 ? 0 : (uint64_t)off, off >= 0);
        for (size_t p = 0, i = 0; r > 0 && p < (size_t)r; i++) {
            size_t k = iov[i].iov_len < (size_t)r - p ? iov[i].iov_len : (size_t)r - p;
            memcpy(iov[i].iov_base, g + p, k);
            p += k;
        }
    }
    int e = errno;
    free(g);
    errno = e;
    door_leave();
    return r;
}

ssize_t readv(int fd, const struct iovec *iov, int cnt) {
    int h = 0;
    ssize_t r = door_on() ? door_vec(fd, iov, cnt, -1, 0, &h) : 0;
    return h ? r : REAL(readv)(fd, iov, cnt);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt) {
    int h = 0;
    ssize_t r = door_on() ? door_vec(fd, iov, cnt, -1, 1, &h) : 0;
    return h ? r : REAL(writev)(fd, iov, cnt);
}

ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off) {
    int h = 0;
    ssize_t r = door_on() && off >= 0 ? door_vec(fd, iov, cnt, off, 0, &h) : 0;
    return h ? r : REAL(preadv64)(fd, iov, cnt, off);
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
    int h = 0;
    ssize_t r = door_on() && off >= 0 ? door_vec(fd, iov, cnt, off, 1, &h) : 0;
    return h ? r : REAL(pwritev64)(fd, iov, cnt, off);
}

ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off64_t off) ALIAS(preadv);
ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off) ALIAS(pwritev);

/* ---- syncs ---------------------------------------------------------------------------------------------- */

static int door_sync(int fd, int data) {
    door_fd d;
    if (!door_on() || !fd_enter(fd, &d)) return data ? REAL(fdatasync)(fd) : REAL(fsync)(fd);
    int saved = errno;
    eng_io_op op = {
        .kind = d.is_dir ? ENG_IO_DIRSYNC : ENG_IO_SYNC, .file_id = d.is_dir ? -1 : d.file->id, .path = d.file->abs};
    long rc = hook_before(&op);
    if (rc == 0) {
        int r = op.skip ? 0 : data ? REAL(fdatasync)(fd) : REAL(fsync)(fd);
        op.result = r == 0 ? 0 : -(int64_t)errno;
        hook_after(&op);
        rc = op.result < 0 ? op.result : 0;
    }
    door_leave();
    return (int)finish(rc, 0, saved);
}

int fsync(int fd) { return door_sync(fd, 0); }
int fdatasync(int fd) { return door_sync(fd, 1); }

/* ---- truncate and fallocate ---------------------------------------------------------------------------------- */

/* A TRUNCATE of DF to SIZE around DO_IT (0 or -errno).  Caller counted in. */
static long truncate_op(door_file *df, uint64_t size, int (*do_it)(void *), void *arg) {
    eng_io_op op = {.kind = ENG_IO_TRUNCATE, .file_id = df->id, .path = df->abs, .offset = size};
    long rc = hook_before(&op);
    if (rc < 0) return rc;
    op.offset = size; /* only a read's or write's range is a hook's to change */
    op.result = op.skip ? 0 : do_it(arg);
    hook_after(&op);
    return op.result < 0 ? op.result : 0;
}

typedef struct trunc_arg {
    int fd;
    const char *path;
    off64_t len;
    int mode;
    off64_t off;
} trunc_arg;

#define TA(p) ((trunc_arg *)(p))
static int do_ftruncate(void *p) { return REAL(ftruncate64)(TA(p)->fd, TA(p)->len) == 0 ? 0 : -errno; }
static int do_truncate(void *p) { return REAL(truncate64)(TA(p)->path, TA(p)->len) == 0 ? 0 : -errno; }
static int do_fallocate(void *p) {
    return REAL(fallocate64)(TA(p)->fd, TA(p)->mode, TA(p)->off, TA(p)->len) == 0 ? 0 : -errno;
}
/* posix_fallocate returns the errno itself. */
static int do_posix_fallocate(void *p) { return -REAL(posix_fallocate64)(TA(p)->fd, TA(p)->off, TA(p)->len); }

int ftruncate(int fd, off_t len) {
    door_fd d;
    if (!door_on() || len < 0 || !fd_enter(fd, &d)) return REAL(ftruncate64)(fd, len);
    int saved = errno;
    trunc_arg a = {.fd = fd, .len = len};
    long rc = d.is_dir ? (REAL(ftruncate64)(fd, len) == 0 ? 0 : -errno)
                       : truncate_op(d.file, (uint64_t)len, do_ftruncate, &a);
    door_leave();
    return (int)finish(rc, 0, saved);
}

int truncate(const char *path, off_t len) {
    if (!door_on() || len < 0 || !door_enter()) return REAL(truncate64)(path, len);
    int saved = errno;
    door_file *df = path_file(AT_FDCWD, path);
    trunc_arg a = {.path = path, .len = len};
    long rc = df ? truncate_op(df, (uint64_t)len, do_truncate, &a) : do_truncate(&a);
    door_leave();
    return (int)finish(rc, 0, saved);
}

int ftruncate64(int fd, off64_t len) ALIAS(ftruncate);
int truncate64(const char *path, off64_t len) ALIAS(truncate);

/* Ranges fallocate zeroes as a WRITE op (the journal keeps their old
 * bytes); a longer one passes through unjournaled. */
#define ZERO_MAX (64u << 20)

/* fallocate's PUNCH_HOLE or ZERO_RANGE of [OFF, OFF + LEN) on D's file: a
 * WRITE of zeros over the bytes it changes.  *HANDLED 0: pass it on. */
static long zero_range(int fd, const door_fd *d, int mode, off64_t off, off64_t len, int *handled) {
    uint64_t size;
    *handled = 0;
    if (flt_size_at(fd, "", AT_EMPTY_PATH, &size)) return 0;
    uint64_t lo = (uint64_t)off, hi = (uint64_t)off + (uint64_t)len;
    if (mode & FALLOC_FL_KEEP_SIZE) hi = hi < size ? hi : size;
    if (hi <= lo || hi - lo > ZERO_MAX) return 0;
    size_t n = (size_t)(hi - lo);
    void *zp = NULL;
    uint8_t *z = posix_memalign(&zp, 4096, n) == 0 ? zp : NULL; /* aligned, as door_vec's */
    if (!z) return 0;
    memset(z, 0, n);
    *handled = 1;
    eng_io_op op = {
        .kind = ENG_IO_WRITE, .file_id = d->file->id, .path = d->file->abs, .buf = z, .offset = lo, .len = n};
    long rc = hook_before(&op);
    if (rc == 0) {
        if (op.buf == z && op.len > n) op.len = n;
        if (op.skip) {
            op.result = (int64_t)n;
        } else if (op.buf == z && op.offset == lo && op.len == n) {
            trunc_arg a = {.fd = fd, .mode = mode, .off = off, .len = len};
            int r = do_fallocate(&a);
            op.issued = n;
            op.result = r < 0 ? r : (int64_t)n;
        } else if (op.len > 0) { /* changed by a hook: written as it says */
            ssize_t r = REAL(pwrite64)(fd, op.buf, op.len, (off64_t)op.offset);
            op.issued = op.len;
            op.result = r < 0 ? -(int64_t)errno : (int64_t)r;
        }
        hook_after(&op);
        rc = op.result < 0 ? op.result : 0;
    }
    free(z);
    return rc;
}

/* fallocate (POSIX: posix_fallocate, mode 0) on FD: a TRUNCATE when mode 0
 * grows the file, zero_range for a hole or zeroed range; anything else
 * changes no byte a reader sees, or nothing the journal could undo (door.h),
 * and passes through.  Returns 0 or -errno. */
static long door_fallocate(int fd, int mode, off64_t off, off64_t len, int posix) {
    trunc_arg a = {.fd = fd, .mode = mode, .off = off, .len = len};
    int (*do_it)(void *) = posix ? do_posix_fallocate : do_fallocate;
    door_fd d;
    if (!door_on() || off < 0 || len <= 0 || !fd_enter(fd, &d)) return do_it(&a);
    long rc;
    int handled = 0;
    if (d.is_dir) {
        rc = do_it(&a);
    } else if (mode == 0) {
        uint64_t end = (uint64_t)off + (uint64_t)len;
        uint64_t size;
        if (!flt_size_at(fd, "", AT_EMPTY_PATH, &size) && end > size)
            rc = truncate_op(d.file, end, do_it, &a);
        else
            rc = do_it(&a);
    } else if ((mode & ~FALLOC_FL_KEEP_SIZE) == FALLOC_FL_PUNCH_HOLE ||
               (mode & ~FALLOC_FL_KEEP_SIZE) == FALLOC_FL_ZERO_RANGE) {
        rc = zero_range(fd, &d, mode, off, len, &handled);
        if (!handled) rc = do_it(&a);
    } else {
        rc = do_it(&a);
    }
    door_leave();
    return rc;
}

int fallocate(int fd, int mode, off_t off, off_t len) {
    int saved = errno;
    return (int)finish(door_fallocate(fd, mode, off, len, 0), 0, saved);
}
int posix_fallocate(int fd, off_t off, off_t len) { return (int)-door_fallocate(fd, 0, off, len, 1); }
int fallocate64(int fd, int mode, off64_t off, off64_t len) ALIAS(fallocate);
int posix_fallocate64(int fd, off64_t off, off64_t len) ALIAS(posix_fallocate);

/* ---- names: rename, unlink, link ------------------------------------------------------------------------------ */

static int door_renameat2(int da, const char *a, int db, const char *b, unsigned flags) {
    if (!door_on() || !door_enter()) return REAL(renameat2)(da, a, db, b, flags);
    int saved = errno;
    door_file *fa = path_file(da, a), *fb = path_file(db, b);
    long rc;
    int moved = 0;
    if (!fa || !fb || (flags & RENAME_EXCHANGE)) {
        /* Not the journal's to undo (door.h); the table still follows. */
        rc = REAL(renameat2)(da, a, db, b, flags) == 0 ? 0 : -errno;
        moved = rc == 0;
    } else {
        eng_io_op op = {.kind = ENG_IO_RENAME, .file_id = fa->id, .path = fa->abs, .path2 = fb->abs};
        rc = hook_before(&op);
        if (rc == 0) {
            op.result = op.skip ? 0 : REAL(renameat2)(da, a, db, b, flags) == 0 ? 0 : -(int64_t)errno;
            moved = !op.skip && op.result == 0;
            hook_after(&op);
            rc = op.result < 0 ? op.result : 0;
        }
    }
    if (moved && fa != fb) { /* DR5 (RENAME_EXCHANGE: both names now name other inodes) */
        if (fb) slots_move(fb, NULL);
        if (fa) slots_move(fa, (flags & RENAME_EXCHANGE) ? NULL : fb);
    }
    door_leave();
    return (int)finish(rc, 0, saved);
}

int rename(const char *a, const char *b) { return door_renameat2(AT_FDCWD, a, AT_FDCWD, b, 0); }
int renameat(int da, const char *a, int db, const char *b) { return door_renameat2(da, a, db, b, 0); }
int renameat2(int da, const char *a, int db, const char *b, unsigned flags) {
    return door_renameat2(da, a, db, b, flags);
}

static int door_unlinkat(int dirfd, const char *path, int flags) {
    if (!door_on() || (flags & AT_REMOVEDIR) || !door_enter()) return REAL(unlinkat)(dirfd, path, flags);
    int saved = errno;
    door_file *df = path_file(dirfd, path);
    long rc;
    if (!df) {
        rc = REAL(unlinkat)(dirfd, path, flags) == 0 ? 0 : -errno;
    } else {
        eng_io_op op = {.kind = ENG_IO_UNLINK, .file_id = df->id, .path = df->abs};
        rc = hook_before(&op);
        if (rc == 0) {
            op.result = op.skip ? 0 : REAL(unlinkat)(dirfd, path, flags) == 0 ? 0 : -(int64_t)errno;
            hook_after(&op);
            rc = op.result < 0 ? op.result : 0;
            if (rc == 0 && !op.skip) slots_move(df, NULL); /* DR5 */
        }
    }
    door_leave();
    return (int)finish(rc, 0, saved);
}

int unlink(const char *path) { return door_unlinkat(AT_FDCWD, path, 0); }
int unlinkat(int dirfd, const char *path, int flags) { return door_unlinkat(dirfd, path, flags); }

/* A hard link made under the directory is a new name there: a CREATE, which
 * the power-loss step undoes by removing the name. */
static int door_linkat(int da, const char *a, int db, const char *b, int flags) {
    if (!door_on() || !door_enter()) return REAL(linkat)(da, a, db, b, flags);
    int saved = errno;
    door_file *fb = path_file(db, b);
    long rc;
    if (!fb) {
        rc = REAL(linkat)(da, a, db, b, flags) == 0 ? 0 : -errno;
    } else {
        eng_io_op op = {.kind = ENG_IO_CREATE, .file_id = fb->id, .path = fb->abs};
        rc = hook_before(&op);
        if (rc == 0) {
            op.result = op.skip ? 0 : REAL(linkat)(da, a, db, b, flags) == 0 ? 0 : -(int64_t)errno;
            hook_after(&op);
            rc = op.result < 0 ? op.result : 0;
        }
    }
    door_leave();
    return (int)finish(rc, 0, saved);
}

int link(const char *a, const char *b) { return door_linkat(AT_FDCWD, a, AT_FDCWD, b, 0); }
int linkat(int da, const char *a, int db, const char *b, int flags) { return door_linkat(da, a, db, b, flags); }

/* ---- arming ----------------------------------------------------------------------------------------------------- */

int flt_door_arm(const eng_io_hooks *hooks, const char *db_dir) {
    if (!hooks || !db_dir || !*db_dir) return -EINVAL;
    resolve();
    inside++; /* realpath and stat below are ours */
    pthread_mutex_lock(&arm_mu);
    int rc = 0;
    char res[PATH_MAX];
    struct stat st;
    if (atomic_load(&armed))
        rc = -EBUSY;
    else if (!realpath(db_dir, res) || stat(res, &st) != 0)
        rc = -errno;
    else if (!S_ISDIR(st.st_mode))
        rc = -ENOTDIR;
    if (!rc) {
        size_t dl = strlen(db_dir);
        while (dl > 1 && db_dir[dl - 1] == '/') dl--; /* "db/" and "db" name one directory */
        g_db_real = strdup(res);
        g_db = db_dir[0] == '/' ? strndup(db_dir, dl) : strdup(res);
        if (!g_db || !g_db_real) {
            free(g_db);
            free(g_db_real);
            g_db = g_db_real = NULL;
            rc = -ENOMEM;
        }
    }
    if (!rc) {
        g_hooks = hooks;
        atomic_store(&armed, 1);
    }
    pthread_mutex_unlock(&arm_mu);
    inside--;
    return rc;
}

void flt_door_disarm(void) {
    pthread_mutex_lock(&arm_mu);
    if (atomic_load(&armed)) {
        atomic_store(&armed, 0);
        while (atomic_load(&users) > 0) sched_yield(); /* DR2 */
        slots_clear();
        files_free();
        free(g_db);
        free(g_db_real);
        g_db = g_db_real = NULL;
        g_hooks = NULL;
    }
    pthread_mutex_unlock(&arm_mu);
}

void flt_door_bypass(int on) {
    if (on)
        inside++;
    else if (inside > 0)
        inside--;
}

uint64_t flt_door_ops(void) { return atomic_load_explicit(&nops, memory_order_relaxed); }
