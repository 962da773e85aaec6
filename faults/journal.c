/*
 * journal.c -- the crash-simulation journal of journal.h: what the
 * engine's I/O hooks record so that build/powerloss can put a crashed
 * database directory into a state a power cut could have left.
 *
 * Record layout: journal_int.h (drawn there, shared with the reader).
 *
 * What each hooked operation leaves (before() / after()):
 *
 *   WRITE     WRITE_B{path, offset, len, old size, old bytes} / DONE
 *   SYNC      SYNC_B{path}                                    / DONE
 *   CREATE    CREATE_B{path}                                  / DONE
 *   RENAME    [target hard-linked to journal.d/S-ID] RENAME_B{from, to, saved} / DONE
 *   UNLINK    [file hard-linked to journal.d/S-ID]   UNLINK_B{path, saved}     / DONE
 *   TRUNCATE  TRUNCATE_B{path, old size, new size, tail}      / DONE
 *   DIRSYNC   DIRSYNC_B{dir}                                  / DONE
 *   READ      nothing
 *
 * and flt_journal_drop_unsynced (an injected fsync failure) one
 * DROP{offset, len, path} per write it rolls back, carrying the write's
 * BEGIN id, appended right before the old bytes go back.
 *
 * An operation a fault hook skipped (op->skip: a lost write, a sync that
 * does nothing) is not journaled at all: it never reached the disk, so
 * there is nothing to undo, and a skipped sync must not count as one.
 * Operations on paths outside the database directory (an archive
 * directory elsewhere) are not journaled: the power-loss step only works
 * on the database directory.
 *
 * Ordering: the journal's order is the order of the appends.  A BEGIN is
 * appended before the operation is issued and its DONE after it
 * completed, so "DONE of a write precedes BEGIN of a sync" in the file
 * means the write had completed before the sync was issued (the io_uring
 * rule: a sync covers only writes already completed).  Appends need no
 * lock: one write(2) on an O_APPEND descriptor is atomic with respect to
 * other appenders, and ids come from an atomic counter.
 *
 * Invariants:
 *   J1  A DONE is appended only for an operation whose BEGIN was appended
 *       (the in-flight table maps the op to its BEGIN id).
 *   J2  Old bytes are read before the write is issued, from the inode the
 *       path names at that moment: a cached read descriptor is dropped by
 *       every create, rename and unlink that may change what a path names
 *       (before and after the operation), and a descriptor opened while
 *       one of those ran is not cached (the generation check).
 *   J3  Once an append fails or is cut short, every later before() fails
 *       with -EIO: a journal with a hole would make the power-loss step
 *       undo the wrong things, so the engine must stop writing instead.
 *   J4  A file saved in journal.d/ is removed as soon as the operation
 *       that saved it failed, or became durable by the power-loss step's
 *       own rule (a dirsync of each parent directory began after its DONE
 *       and succeeded): only undoing a non-durable operation reads it, and
 *       without this every WAL segment a checkpoint removes would stay on
 *       disk for the whole run.
 *   J5  A drop reads this session's records and rolls writes back under
 *       drop_lk held for writing, while every before() holds it for
 *       reading: a write it does not see journaled is issued after it and
 *       reads its old bytes from the dropped state; one it sees journaled
 *       but not done is left alone with its range.
 *
 * The reader (journal_read.c: decoding and the analysis of journal_int.h)
 * is step 1 of the power-loss step, shared with powerloss.c so that a drop
 * and a later power loss apply one rule of what is durable, and one way of
 * undoing a write (PL1, PL2 of powerloss.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "journal.h"
#include "journal_int.h"
#include "paths.h"

/* Read descriptors kept open for old-byte reads: the data file and the
 * few WAL segments being written fit; more would only cost descriptors. */
#define FC_SLOTS 16

typedef struct fc_entry {
    char *rel; /* NULL = free */
    int fd;
} fc_entry;

/* A file kept in journal.d/ until the rename or unlink that needed it is
 * durable (J4). */
typedef struct saved_ent {
    uint64_t id;       /* BEGIN id of the operation */
    char name[64];     /* in journal.d/ */
    char *dir[2];      /* parent directories it touched (dir[1] NULL: one) */
    int covered[2];    /* a later dirsync of dir[k] made it durable there */
    uint64_t done_seq; /* 0 until its DONE was appended */
} saved_ent;

/* A dirsync in flight: what it will cover if it succeeds. */
typedef struct dsync_ent {
    uint64_t id;
    char *dir;
    uint64_t snap; /* done_seq of the last DONE appended before its BEGIN */
} dsync_ent;

struct flt_journal {
    int fd; /* RUN_DIR/journal, O_APPEND */
    char *run_dir;
    char *saved_dir; /* RUN_DIR/journal.d */
    char *db;        /* db_dir as given, without trailing slashes */
    char *db_real;   /* realpath(db_dir) or NULL */
    uint64_t session;
    uint64_t session_pos; /* where this session's SESSION record starts */
    _Atomic uint64_t next_id;
    atomic_int broken; /* J3 */

    pthread_mutex_t fl_mu;
    jr_u64map fl; /* in flight: op pointer -> id of its BEGIN */

    pthread_mutex_t sv_mu; /* saved, dsync, done_seq (J4) */
    saved_ent *saved;
    size_t nsaved, capsaved;
    dsync_ent *dsync;
    size_t ndsync, capdsync;
    uint64_t done_seq;

    /* Every before() holds it for reading, a drop (and reset) for
     * writing: no operation is journaled while a drop reads the journal and
     * rolls writes back (J5). */
    pthread_rwlock_t drop_lk;

    pthread_rwlock_t fc_lock;
    fc_entry fc[FC_SLOTS];
    unsigned fc_next;        /* round-robin victim */
    _Atomic uint64_t fc_gen; /* bumped by every invalidation (J2) */
};

/* ---- little-endian encoding ------------------------------------------------ */

static void put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* A record being built: header space first, then the payload. */
typedef struct recbuf {
    uint8_t *p;
    size_t len, cap;
    uint8_t small[512]; /* most records (all but writes and truncates) */
} recbuf;

static int rb_init(recbuf *b, size_t payload_cap) {
    b->cap = JR_HDR + payload_cap;
    b->len = JR_HDR;
    if (b->cap <= sizeof b->small) {
        b->p = b->small;
        b->cap = sizeof b->small;
        return 0;
    }
    b->p = malloc(b->cap);
    return b->p ? 0 : -ENOMEM;
}

static void rb_free(recbuf *b) {
    if (b->p != b->small) free(b->p);
}

static void rb_u64(recbuf *b, uint64_t v) {
    put64(b->p + b->len, v);
    b->len += 8;
}

static void rb_str(recbuf *b, const char *s) {
    size_t n = strlen(s);
    put16(b->p + b->len, (uint16_t)n);
    memcpy(b->p + b->len + 2, s, n);
    b->len += 2 + n;
}

/* Bytes a str field of S takes. */
static size_t str_sz(const char *s) { return 2 + strlen(s); }


/* Fill the header, checksum, and append the record with one write(2). */
static int rb_append(flt_journal *j, recbuf *b, int kind, uint64_t id) {
    uint8_t *h = b->p;
    put32(h, JR_MAGIC);
    h[4] = (uint8_t)kind;
    h[5] = JR_VERSION;
    put16(h + 6, 0);
    put32(h + 8, (uint32_t)(b->len - JR_HDR));
    put32(h + 12, 0);
    put64(h + 16, id);
    put64(h + JR_SUM_OFF, flt_jr_sum(h, h + JR_HDR, b->len - JR_HDR));
    ssize_t w;
    do w = write(j->fd, b->p, b->len);
    while (w < 0 && errno == EINTR);
    if (w == (ssize_t)b->len) return 0;
    atomic_store(&j->broken, 1); /* J3 */
    return w < 0 ? -errno : -EIO;
}

/* ---- paths ------------------------------------------------------------------- */


/* PATH relative to the database directory, into OUT.  Returns 1 if PATH
 * is inside it, 0 if not (or too long).  The engine builds every path as
 * "DIR/name" from the directory it was given, so the textual match is the
 * common case; realpath is the fallback for a differently spelled DIR. */
static int rel_of(const flt_journal *j, const char *path, char *out, size_t cap) {
    const char *rest = flt_path_under(path, j->db);
    if (!rest && j->db_real) rest = flt_path_under(path, j->db_real);
    if (rest) return flt_path_norm_rel(rest, out, cap) == 0;
    if (!j->db_real) return 0;
    /* Resolve the parent (the file itself may not exist yet). */
    char tmp[PATH_MAX], res[PATH_MAX];
    if (strlen(path) >= sizeof tmp) return 0;
    strcpy(tmp, path);
    char *slash = strrchr(tmp, '/');
    const char *base;
    if (slash) {
        *slash = 0;
        base = slash + 1;
        if (!realpath(tmp[0] ? tmp : "/", res)) return 0;
    } else {
        base = tmp;
        if (!realpath(".", res)) return 0;
    }
    size_t rl = strlen(res);
    if (rl + 1 + strlen(base) + 1 > sizeof res) return 0;
    res[rl] = '/';
    strcpy(res + rl + 1, base);
    rest = flt_path_under(res, j->db_real);
    return rest && flt_path_norm_rel(rest, out, cap) == 0;
}

/* ---- read-descriptor cache (J2) --------------------------------------------------- */

static int fc_find(flt_journal *j, const char *rel) {
    for (int i = 0; i < FC_SLOTS; i++)
        if (j->fc[i].rel && strcmp(j->fc[i].rel, rel) == 0) return j->fc[i].fd;
    return -1;
}

static void fc_drop_slot(fc_entry *e) {
    if (!e->rel) return;
    close(e->fd);
    free(e->rel);
    e->rel = NULL;
    e->fd = -1;
}

/* Forget REL (NULL: everything). */
static void fc_invalidate(flt_journal *j, const char *rel) {
    pthread_rwlock_wrlock(&j->fc_lock);
    atomic_fetch_add(&j->fc_gen, 1);
    for (int i = 0; i < FC_SLOTS; i++)
        if (j->fc[i].rel && (!rel || strcmp(j->fc[i].rel, rel) == 0)) fc_drop_slot(&j->fc[i]);
    pthread_rwlock_unlock(&j->fc_lock);
}

/* Keep FD for REL if nothing was invalidated since GEN; else close it. */
static void fc_insert(flt_journal *j, const char *rel, int fd, uint64_t gen) {
    pthread_rwlock_wrlock(&j->fc_lock);
    char *copy = NULL;
    if (atomic_load(&j->fc_gen) == gen && fc_find(j, rel) < 0 && (copy = strdup(rel)) != NULL) {
        fc_entry *e = &j->fc[j->fc_next++ % FC_SLOTS];
        fc_drop_slot(e);
        e->rel = copy;
        e->fd = fd;
        fd = -1;
    }
    pthread_rwlock_unlock(&j->fc_lock);
    if (fd >= 0) close(fd);
}

/* pread until LEN bytes, EOF or an error: bytes read or -errno. */
static ssize_t pread_full(int fd, void *buf, size_t len, uint64_t off) {
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -errno;
        if (n == 0) break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

/* Old bytes of [OFF, OFF+LEN) of the file at PATH (REL) into BUF; *OLD_SIZE
 * gets the file size clamped to OFF+LEN.  Returns bytes read or -errno. */
static ssize_t read_old(flt_journal *j, const char *path, const char *rel, void *buf, size_t len, uint64_t off,
                        uint64_t *old_size) {
    ssize_t n;
    struct stat st;
    pthread_rwlock_rdlock(&j->fc_lock);
    int fd = fc_find(j, rel);
    if (fd >= 0) {
        n = pread_full(fd, buf, len, off);
        if (n == 0 && fstat(fd, &st) != 0) n = -errno;
        pthread_rwlock_unlock(&j->fc_lock);
    } else {
        pthread_rwlock_unlock(&j->fc_lock);
        uint64_t gen = atomic_load(&j->fc_gen);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return -errno;
        n = pread_full(fd, buf, len, off);
        if (n == 0 && fstat(fd, &st) != 0) n = -errno;
        fc_insert(j, rel, fd, gen);
    }
    if (n < 0) return n;
    /* pread stops exactly at EOF, so a short read gives the size; only a
     * write wholly beyond EOF needs the size itself (it leaves a hole). */
    if ((size_t)n == len)
        *old_size = off + len;
    else if (n > 0)
        *old_size = off + (uint64_t)n;
    else
        *old_size = (uint64_t)st.st_size < off ? (uint64_t)st.st_size : off;
    return n;
}

/* ---- saved files ------------------------------------------------------------------- */

/* faults.h.  Also for runs whose journal.d is on another file system
 * than the database, where a hard link is impossible. */
int flt_copy_file(const char *src, const char *dst) {
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) return -errno;
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (out < 0) {
        int e = errno;
        close(in);
        return -e;
    }
    char buf[65536];
    int rc = 0;
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            rc = -errno;
            break;
        }
        if (n == 0) break;
        for (ssize_t w = 0; w < n;) {
            ssize_t k = write(out, buf + w, (size_t)(n - w));
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) {
                rc = k < 0 ? -errno : -EIO;
                break;
            }
            w += k;
        }
        if (rc) break;
    }
    close(in);
    if (close(out) != 0 && !rc) rc = -errno;
    if (rc) unlink(dst);
    return rc;
}

/* Keep the file at PATH as journal.d/NAME (NAME filled in).  Returns 1 if
 * saved, 0 if PATH does not exist (NAME = ""), or -errno. */
static int save_file(flt_journal *j, const char *path, uint64_t id, char *name, size_t cap) {
    snprintf(name, cap, "%016llx-%llu", (unsigned long long)j->session, (unsigned long long)id);
    char dst[PATH_MAX];
    if (snprintf(dst, sizeof dst, "%s/%s", j->saved_dir, name) >= (int)sizeof dst) return -ENAMETOOLONG;
    if (link(path, dst) == 0) return 1;
    int e = errno;
    if (e == ENOENT) {
        name[0] = 0;
        return 0;
    }
    if (e == EXDEV || e == EPERM || e == EMLINK || e == ENOTSUP) {
        int rc = flt_copy_file(path, dst);
        if (rc == -ENOENT) {
            name[0] = 0;
            return 0;
        }
        return rc < 0 ? rc : 1;
    }
    return -e;
}

/* ---- saved files that are no longer needed (J4) ----------------------------------------- */

/* The directory holding REL ("." for top level), malloc'd. */
static char *parent_of(const char *rel) {
    const char *slash = strrchr(rel, '/');
    return slash ? strndup(rel, (size_t)(slash - rel)) : strdup(".");
}

static void sv_drop(flt_journal *j, size_t i, int remove_file) {
    saved_ent *e = &j->saved[i];
    if (remove_file) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", j->saved_dir, e->name);
        unlink(p);
    }
    free(e->dir[0]);
    free(e->dir[1]);
    j->saved[i] = j->saved[--j->nsaved];
}

/* Forget every entry (REMOVE_FILES: and their files).  sv_mu held or the
 * journal private. */
static void sv_clear(flt_journal *j, int remove_files) {
    while (j->nsaved) sv_drop(j, j->nsaved - 1, remove_files);
    for (size_t i = 0; i < j->ndsync; i++) free(j->dsync[i].dir);
    j->ndsync = 0;
}

/* Remember the file saved for operation ID on REL (and REL2). */
static void sv_add(flt_journal *j, uint64_t id, const char *name, const char *rel, const char *rel2) {
    pthread_mutex_lock(&j->sv_mu);
    if (j->nsaved == j->capsaved) {
        size_t ncap = j->capsaved ? 2 * j->capsaved : 16;
        saved_ent *n = realloc(j->saved, ncap * sizeof *n);
        if (!n) goto out; /* the file then stays until reset: harmless */
        j->saved = n;
        j->capsaved = ncap;
    }
    saved_ent *e = &j->saved[j->nsaved];
    memset(e, 0, sizeof *e);
    e->id = id;
    snprintf(e->name, sizeof e->name, "%s", name);
    e->dir[0] = parent_of(rel);
    if (rel2) {
        e->dir[1] = parent_of(rel2);
        if (e->dir[1] && e->dir[0] && !strcmp(e->dir[0], e->dir[1])) {
            free(e->dir[1]);
            e->dir[1] = NULL;
        }
    }
    if (!e->dir[0]) {
        free(e->dir[1]);
        goto out;
    }
    j->nsaved++;
out:
    pthread_mutex_unlock(&j->sv_mu);
}

/* The DONE of rename / unlink ID was appended with RESULT. */
static void sv_done(flt_journal *j, uint64_t id, int64_t result) {
    pthread_mutex_lock(&j->sv_mu);
    uint64_t seq = ++j->done_seq;
    for (size_t i = 0; i < j->nsaved; i++) {
        if (j->saved[i].id != id) continue;
        if (result < 0)
            sv_drop(j, i, 1); /* nothing was destroyed */
        else
            j->saved[i].done_seq = seq;
        break;
    }
    pthread_mutex_unlock(&j->sv_mu);
}

/* A dirsync of REL gets id ID: note what it can cover (before its BEGIN
 * is appended). */
static void sv_dirsync_begin(flt_journal *j, uint64_t id, const char *rel) {
    char *dir = strdup(rel);
    if (!dir) return;
    pthread_mutex_lock(&j->sv_mu);
    if (j->ndsync == j->capdsync) {
        size_t ncap = j->capdsync ? 2 * j->capdsync : 8;
        dsync_ent *n = realloc(j->dsync, ncap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&j->sv_mu);
            free(dir);
            return;
        }
        j->dsync = n;
        j->capdsync = ncap;
    }
    j->dsync[j->ndsync++] = (dsync_ent){id, dir, j->done_seq};
    pthread_mutex_unlock(&j->sv_mu);
}

/* The dirsync ID finished with RESULT: files of operations it made
 * durable go. */
static void sv_dirsync_done(flt_journal *j, uint64_t id, int64_t result) {
    pthread_mutex_lock(&j->sv_mu);
    for (size_t d = 0; d < j->ndsync; d++) {
        if (j->dsync[d].id != id) continue;
        dsync_ent ds = j->dsync[d];
        j->dsync[d] = j->dsync[--j->ndsync];
        if (result >= 0) {
            for (size_t i = 0; i < j->nsaved;) {
                saved_ent *e = &j->saved[i];
                if (e->done_seq && e->done_seq <= ds.snap)
                    for (int k = 0; k < 2; k++)
                        if (e->dir[k] && !strcmp(e->dir[k], ds.dir)) e->covered[k] = 1;
                if (e->covered[0] && (!e->dir[1] || e->covered[1]))
                    sv_drop(j, i, 1);
                else
                    i++;
            }
        }
        free(ds.dir);
        break;
    }
    pthread_mutex_unlock(&j->sv_mu);
}

/* ---- the API ------------------------------------------------------------------------- */

static int append_session(flt_journal *j) {
    recbuf b;
    int rc = rb_init(&b, 24 + str_sz(j->db));
    if (rc) return rc;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    rb_u64(&b, j->session);
    rb_u64(&b, (uint64_t)getpid());
    rb_u64(&b, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
    rb_str(&b, j->db);
    rc = rb_append(j, &b, JR_SESSION, atomic_fetch_add(&j->next_id, 1));
    if (!rc) {
        /* O_APPEND left the offset at the end of what we appended. */
        off_t end = lseek(j->fd, 0, SEEK_CUR);
        if (end < (off_t)b.len)
            rc = -EIO;
        else
            j->session_pos = (uint64_t)end - b.len;
    }
    rb_free(&b);
    return rc;
}

int flt_journal_open(const char *run_dir, const char *db_dir, flt_journal **out) {
    *out = NULL;
    if (!run_dir || !db_dir || !*db_dir || strlen(db_dir) > 32000) return -EINVAL;
    flt_journal *j = calloc(1, sizeof *j);
    if (!j) return -ENOMEM;
    j->fd = -1;
    pthread_mutex_init(&j->fl_mu, NULL);
    pthread_mutex_init(&j->sv_mu, NULL);
    pthread_rwlock_init(&j->fc_lock, NULL);
    /* A drop must not wait for ever behind a stream of before()s. */
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&j->drop_lk, &ra);
    pthread_rwlockattr_destroy(&ra);
    for (int i = 0; i < FC_SLOTS; i++) j->fc[i].fd = -1;
    atomic_init(&j->next_id, 1);
    atomic_init(&j->broken, 0);
    atomic_init(&j->fc_gen, 0);

    int rc = 0;
    size_t dl = strlen(db_dir);
    while (dl > 1 && db_dir[dl - 1] == '/') dl--; /* "db/" and "db" name one directory */
    j->db = strndup(db_dir, dl);
    j->run_dir = strdup(run_dir);
    char path[PATH_MAX];
    if (!j->db || !j->run_dir) rc = -ENOMEM;
    if (!rc) {
        char res[PATH_MAX];
        if (realpath(j->db, res)) j->db_real = strdup(res);
        snprintf(path, sizeof path, "%s/%s", run_dir, JR_SAVED_DIR);
        j->saved_dir = strdup(path);
        if (!j->saved_dir) rc = -ENOMEM;
    }
    if (!rc && mkdir(j->saved_dir, 0755) != 0 && errno != EEXIST) rc = -errno;
    if (!rc) {
        snprintf(path, sizeof path, "%s/%s", run_dir, JR_FILE);
        j->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (j->fd < 0) rc = -errno;
    }
    if (!rc) {
        /* Names in journal.d/ must not collide with those of an earlier
         * session whose journal was not reset. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        j->session = XXH3_64bits_withSeed(&ts, sizeof ts, (uint64_t)getpid());
        rc = append_session(j);
    }
    if (rc) {
        flt_journal_close(j);
        return rc;
    }
    *out = j;
    return 0;
}

void flt_journal_close(flt_journal *j) {
    if (!j) return;
    if (j->fd >= 0) close(j->fd);
    for (int i = 0; i < FC_SLOTS; i++) fc_drop_slot(&j->fc[i]);
    flt_jr_um_free(&j->fl);
    sv_clear(j, 0);
    free(j->saved);
    free(j->dsync);
    pthread_mutex_destroy(&j->fl_mu);
    pthread_mutex_destroy(&j->sv_mu);
    pthread_rwlock_destroy(&j->fc_lock);
    pthread_rwlock_destroy(&j->drop_lk);
    free(j->db);
    free(j->db_real);
    free(j->run_dir);
    free(j->saved_dir);
    free(j);
}

/* Remember that OP's BEGIN has id ID, for its DONE (J1). */
static int track(flt_journal *j, const eng_io_op *op, uint64_t id) {
    pthread_mutex_lock(&j->fl_mu);
    int rc = flt_jr_um_put(&j->fl, (uint64_t)(uintptr_t)op, id);
    pthread_mutex_unlock(&j->fl_mu);
    return rc;
}

static int before_write(flt_journal *j, const eng_io_op *op, const char *rel) {
    recbuf b;
    size_t fixed = 24 + str_sz(rel);
    int rc = rb_init(&b, fixed + op->len);
    if (rc) return rc;
    uint64_t old_size = 0;
    /* Old bytes go straight into the record, after the fixed fields. */
    ssize_t n = read_old(j, op->path, rel, b.p + JR_HDR + fixed, op->len, op->offset, &old_size);
    if (n < 0) {
        rb_free(&b);
        return (int)n;
    }
    rb_u64(&b, op->offset);
    rb_u64(&b, op->len);
    rb_u64(&b, old_size);
    rb_str(&b, rel);
    b.len += (size_t)n;
    uint64_t id = atomic_fetch_add(&j->next_id, 1);
    rc = track(j, op, id);
    if (!rc) rc = rb_append(j, &b, JR_WRITE_B, id);
    rb_free(&b);
    return rc;
}

static int before_truncate(flt_journal *j, const eng_io_op *op, const char *rel) {
    struct stat st;
    if (stat(op->path, &st) != 0) return -errno;
    uint64_t old = (uint64_t)st.st_size, nsz = op->offset;
    size_t tail = old > nsz ? (size_t)(old - nsz) : 0;
    recbuf b;
    size_t fixed = 16 + str_sz(rel);
    int rc = rb_init(&b, fixed + tail);
    if (rc) return rc;
    if (tail) {
        int fd = open(op->path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -errno : pread_full(fd, b.p + JR_HDR + fixed, tail, nsz);
        if (fd >= 0) close(fd);
        if (n >= 0 && (size_t)n != tail) n = -EIO; /* shrunk meanwhile */
        if (n < 0) {
            rb_free(&b);
            return (int)n;
        }
    }
    rb_u64(&b, old);
    rb_u64(&b, nsz);
    rb_str(&b, rel);
    b.len += tail;
    uint64_t id = atomic_fetch_add(&j->next_id, 1);
    rc = track(j, op, id);
    if (!rc) rc = rb_append(j, &b, JR_TRUNCATE_B, id);
    rb_free(&b);
    return rc;
}

/* SYNC, CREATE, DIRSYNC: one path. */
static int before_simple(flt_journal *j, const eng_io_op *op, int kind, const char *rel) {
    recbuf b;
    int rc = rb_init(&b, str_sz(rel));
    if (rc) return rc;
    rb_str(&b, rel);
    uint64_t id = atomic_fetch_add(&j->next_id, 1);
    rc = track(j, op, id);
    if (!rc && kind == JR_DIRSYNC_B) sv_dirsync_begin(j, id, rel);
    if (!rc) rc = rb_append(j, &b, kind, id);
    rb_free(&b);
    return rc;
}

/* RENAME (REL2 = target) and UNLINK: save what the operation destroys. */
static int before_destroy(flt_journal *j, const eng_io_op *op, int kind, const char *rel, const char *rel2) {
    uint64_t id = atomic_fetch_add(&j->next_id, 1);
    char saved[64];
    int rc = save_file(j, kind == JR_RENAME_B ? op->path2 : op->path, id, saved, sizeof saved);
    if (rc < 0) return rc;
    if (rc == 1) sv_add(j, id, saved, rel, rel2);
    recbuf b;
    rc = rb_init(&b, str_sz(rel) + (rel2 ? str_sz(rel2) : 0) + str_sz(saved));
    if (rc) return rc;
    rb_str(&b, rel);
    if (rel2) rb_str(&b, rel2);
    rb_str(&b, saved);
    rc = track(j, op, id);
    if (!rc) rc = rb_append(j, &b, kind, id);
    rb_free(&b);
    return rc;
}

/* OP is not journaled: drop a stale entry an earlier operation at the
 * same address may have left (its after() never came because a later
 * hook failed it), so this op's after() appends no DONE (J1). */
static int untrack(flt_journal *j, const eng_io_op *op) {
    uint64_t id;
    pthread_mutex_lock(&j->fl_mu);
    flt_jr_um_take(&j->fl, (uint64_t)(uintptr_t)op, &id);
    pthread_mutex_unlock(&j->fl_mu);
    return 0;
}

static int before_locked(flt_journal *j, const eng_io_op *op) {
    if (op->skip) return untrack(j, op);
    if (atomic_load(&j->broken)) return -EIO; /* J3 */
    char rel[PATH_MAX], rel2[PATH_MAX];
    if (!op->path || !rel_of(j, op->path, rel, sizeof rel)) return untrack(j, op);
    if (strlen(rel) > UINT16_MAX) return untrack(j, op);
    switch (op->kind) {
    case ENG_IO_WRITE:
        if (op->len == 0) return untrack(j, op);
        return before_write(j, op, rel);
    case ENG_IO_SYNC: return before_simple(j, op, JR_SYNC_B, rel);
    case ENG_IO_DIRSYNC: return before_simple(j, op, JR_DIRSYNC_B, rel); /* notes itself for J4 */
    case ENG_IO_CREATE: {
        fc_invalidate(j, rel);
        /* io_open falls back to a plain open when the file exists: that is
         * no creation, and undoing it would remove a file that was there. */
        struct stat st;
        if (stat(op->path, &st) == 0) return untrack(j, op);
        return before_simple(j, op, JR_CREATE_B, rel);
    }
    case ENG_IO_TRUNCATE: return before_truncate(j, op, rel);
    case ENG_IO_UNLINK: fc_invalidate(j, rel); return before_destroy(j, op, JR_UNLINK_B, rel, NULL);
    case ENG_IO_RENAME:
        if (!op->path2 || !rel_of(j, op->path2, rel2, sizeof rel2) || strlen(rel2) > UINT16_MAX)
            return untrack(j, op); /* out of the directory: not ours to undo */
        fc_invalidate(j, rel);
        fc_invalidate(j, rel2);
        return before_destroy(j, op, JR_RENAME_B, rel, rel2);
    default: return untrack(j, op);
    }
}

int flt_journal_before(flt_journal *j, const eng_io_op *op) {
    if (!j || op->kind == ENG_IO_READ) return 0;
    pthread_rwlock_rdlock(&j->drop_lk); /* J5 */
    int rc = before_locked(j, op);
    pthread_rwlock_unlock(&j->drop_lk);
    return rc;
}

void flt_journal_after(flt_journal *j, const eng_io_op *op) {
    if (!j || op->kind == ENG_IO_READ) return;
    uint64_t id;
    pthread_mutex_lock(&j->fl_mu);
    int had = flt_jr_um_take(&j->fl, (uint64_t)(uintptr_t)op, &id);
    pthread_mutex_unlock(&j->fl_mu);
    if (op->kind == ENG_IO_CREATE || op->kind == ENG_IO_RENAME || op->kind == ENG_IO_UNLINK) {
        /* J2: a descriptor opened while the operation ran may name the old
         * inode. */
        fc_invalidate(j, NULL);
    }
    if (!had) return; /* J1: not journaled (skipped, outside, or READ) */
    recbuf b;
    rb_init(&b, 8); /* fits the inline buffer: cannot fail */
    rb_u64(&b, (uint64_t)op->result);
    int rc = rb_append(j, &b, JR_DONE, id); /* a failure marks the journal broken (J3) */
    rb_free(&b);
    if (rc) return;
    if (op->kind == ENG_IO_RENAME || op->kind == ENG_IO_UNLINK)
        sv_done(j, id, op->result);
    else if (op->kind == ENG_IO_DIRSYNC)
        sv_dirsync_done(j, id, op->result);
}

static int reset_locked(flt_journal *j);

int flt_journal_reset(flt_journal *j) {
    if (!j) return -EINVAL;
    pthread_rwlock_wrlock(&j->drop_lk); /* no drop maps the journal meanwhile */
    int rc = reset_locked(j);
    pthread_rwlock_unlock(&j->drop_lk);
    return rc;
}

static int reset_locked(flt_journal *j) {
    if (ftruncate(j->fd, 0) != 0) return -errno;
    pthread_mutex_lock(&j->sv_mu);
    sv_clear(j, 0); /* the files go below, with any of earlier sessions */
    pthread_mutex_unlock(&j->sv_mu);
    DIR *d = opendir(j->saved_dir);
    if (d) {
        struct dirent *e;
        char p[PATH_MAX];
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') continue;
            snprintf(p, sizeof p, "%s/%s", j->saved_dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    atomic_store(&j->broken, 0);
    return append_session(j);
}

/* ---- dropping the unsynced writes of a file whose fsync failed ------------------------ */

/* Append DROP{offset, len, path} for the write O (J3 on failure). */
static int append_drop(flt_journal *j, const jr_op *o) {
    recbuf b;
    int rc = rb_init(&b, 16 + 2 + (size_t)o->r.path.len);
    if (rc) return rc;
    rb_u64(&b, o->r.offset);
    rb_u64(&b, o->r.len);
    put16(b.p + b.len, o->r.path.len);
    memcpy(b.p + b.len + 2, o->r.path.p, o->r.path.len);
    b.len += 2 + (size_t)o->r.path.len;
    rc = rb_append(j, &b, JR_DROP, o->r.id);
    rb_free(&b);
    return rc;
}

/* Undo, newest first, the writes of inode TOK in V that completed but are
 * not durable (drop_lk held for writing, the file open as FD). */
static int drop_writes(flt_journal *j, const jr_view *v, int tok, int fd, const char *rel, flt_ledger *ledger,
                       const flt_event *tmpl, uint64_t *ndropped) {
    jr_ivset kept;
    memset(&kept, 0, sizeof kept);
    int rc = 0;
    for (size_t i = v->nops; i-- > 0 && !rc;) {
        const jr_op *o = &v->ops[i];
        if (o->tok != tok) continue;
        const jr_rec *r = &o->r;
        if (r->kind == JR_TRUNCATE_B) {
            /* Done or in flight, it decided the size and all beyond. */
            if (!(o->has_done && o->result < 0))
                rc = flt_jr_iv_add(&kept, r->new_size < r->old_size ? r->new_size : r->old_size, UINT64_MAX);
            continue;
        }
        if (r->kind != JR_WRITE_B || o->dropped) continue;
        uint64_t end = r->offset + r->len;
        if (!o->has_done || o->durable) {
            /* In flight (its I/O may be running now): left alone, and so
             * is its range.  Durable: never touched. */
            rc = flt_jr_iv_add(&kept, r->offset, end);
            continue;
        }
        /* The ledger first, then the journal, then the disk (FL1; a crash in
         * between leaves a state a power cut may leave too: the write
         * unsynced and still there). */
        char note[PATH_MAX + 80];
        int nl = snprintf(note, sizeof note, "unsynced write rolled back after the failed fsync");
        if (r->path.len != strlen(rel) || memcmp(r->path.p, rel, r->path.len) != 0)
            snprintf(note + nl, sizeof note - (size_t)nl, ", written as %.*s", (int)r->path.len, r->path.p);
        flt_event e = tmpl ? *tmpl : flt_event_none("sync_error", "sync/drop_dirty");
        e.file = rel;
        e.offset = (int64_t)r->offset;
        e.len = (int64_t)r->len;
        e.note = note;
        if (ledger && (rc = flt_ledger_append(ledger, &e)) != 0) break;
        if (ndropped) ++*ndropped;
        if ((rc = append_drop(j, o)) != 0) break;
        jr_undo u;
        rc = flt_jr_undo_begin(&u, fd, r->old, r->offset, r->old_size);
        if (!rc) rc = flt_jr_undo_range(&u, &kept, r->offset, end);
        int rc2 = flt_jr_undo_finish(&u, &kept, end);
        if (!rc) rc = rc2;
    }
    flt_jr_iv_free(&kept);
    return rc;
}

int flt_journal_drop_unsynced(flt_journal *j, const char *path, flt_ledger *ledger, const flt_event *tmpl,
                              uint64_t *ndropped) {
    if (ndropped) *ndropped = 0;
    if (!j || !path) return -EINVAL;
    char rel[PATH_MAX];
    if (!rel_of(j, path, rel, sizeof rel) || strlen(rel) > UINT16_MAX) return 0; /* never journaled */
    pthread_rwlock_wrlock(&j->drop_lk);
    int rc = 0, fd = -1, jfd = -1;
    uint8_t *map = NULL;
    size_t maplen = 0;
    jr_view v;
    memset(&v, 0, sizeof v);
    jr_strmap names;
    memset(&names, 0, sizeof names);
    if (atomic_load(&j->broken)) {
        rc = -EIO; /* J3: a journal with a hole cannot say what is unsynced */
        goto out;
    }
    /* This session's records as they stand: with drop_lk held no BEGIN is
     * appended meanwhile, so every write not seen here is issued after the
     * drop and reads its old bytes from the dropped state.  DONEs may still
     * come (an op not done here counts as in flight). */
    char jp[PATH_MAX];
    snprintf(jp, sizeof jp, "%s/%s", j->run_dir, JR_FILE);
    jfd = open(jp, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (jfd < 0 || fstat(jfd, &st) != 0) {
        rc = -errno;
        goto out;
    }
    uint64_t size = (uint64_t)st.st_size;
    if (size <= j->session_pos) {
        rc = -EIO; /* our own SESSION record is gone: truncated under us */
        goto out;
    }
    uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), start = j->session_pos / pg * pg;
    maplen = (size_t)(size - start);
    map = mmap(NULL, maplen, PROT_READ, MAP_SHARED, jfd, (off_t)start);
    if (map == MAP_FAILED) {
        map = NULL;
        rc = -errno;
        goto out;
    }
    const uint8_t *sess = map + (j->session_pos - start);
    rc = flt_jr_load(&v, sess, (size_t)(size - j->session_pos), 0);
    if (!rc && (v.nops == 0 || v.ops[0].r.kind != JR_SESSION || v.ops[0].r.session != j->session)) rc = -EIO;
    if (!rc) rc = flt_jr_durability(&v, &names);
    if (rc) goto out;
    int tok = flt_jr_sm_get(&names, rel, strlen(rel));
    if (tok < 0) goto out; /* nothing journaled of that file in this session */
    int any = 0;
    for (size_t i = 0; i < v.nops && !any; i++)
        any = v.ops[i].tok == tok && v.ops[i].r.kind == JR_WRITE_B && v.ops[i].has_done && !v.ops[i].durable &&
              !v.ops[i].dropped;
    if (!any) goto out;
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        rc = -errno;
        goto out;
    }
    rc = drop_writes(j, &v, tok, fd, rel, ledger, tmpl, ndropped);
out:
    if (fd >= 0) close(fd);
    flt_jr_sm_free(&names);
    flt_jr_view_free(&v);
    if (map) munmap(map, maplen);
    if (jfd >= 0) close(jfd);
    pthread_rwlock_unlock(&j->drop_lk);
    return rc;
}
