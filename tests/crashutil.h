/*
 * crashutil.h -- static-inline helpers for the crash and recovery suites
 * (test_recovery_*).  Builds on testutil.h; not part of the engine.
 *
 *   - crash children: cu_fork() forks a child that dies with its parent
 *     (PR_SET_PDEATHSIG) and after CU_CHILD_ALARM seconds at the latest
 *     (alarm), and registers it so cu_fini() (the tests' .fini, which runs
 *     after a failed assertion too) kills and reaps whatever is left.  A
 *     child never returns into Criterion: it ends with _exit(), never calls
 *     cr_assert, and reports to the parent through a pipe with write(2)
 *     (cu_fork_piped forks it with the pipe).
 *   - keys "k%015llu" (16 bytes, numeric order is key order) and values
 *     that are a pure function of (index, generation), so a scan can prove
 *     that the store holds exactly the keys 0..m-1 with the right values.
 *   - WAL segment files: list, read, write, flip, truncate.
 */
#ifndef TESTS_CRASHUTIL_H
#define TESTS_CRASHUTIL_H

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include "testutil.h"

#include "common/keys.h"
#include "format.h"

#include "page.h"

/* ---- crash children ------------------------------------------------------ */

#define CU_CHILD_ALARM  240 /* seconds: a stuck child dies of SIGALRM */
#define CU_MAX_CHILDREN 8

static pid_t cu_children_[CU_MAX_CHILDREN];

/* Exit codes of a child (anything else is a bug in the child's own steps). */
enum {
    CU_EXIT_DONE = 0,    /* ran to its end */
    CU_EXIT_HOOK = 42,   /* an I/O hook ended it on purpose (a crash) */
    CU_EXIT_ORPHAN = 90, /* its parent was already gone */
    CU_EXIT_FAIL = 91,   /* a step failed: see the child's report */
};

static inline void cu_forget_(pid_t pid) {
    for (int i = 0; i < CU_MAX_CHILDREN; i++)
        if (cu_children_[i] == pid) cu_children_[i] = 0;
}

/* Fork a crash child.  Returns its pid in the parent, 0 in the child. */
static inline pid_t cu_fork(void) {
    pid_t parent = getpid();
    fflush(NULL); /* no buffered output is written twice */
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(CU_EXIT_ORPHAN);
        alarm(CU_CHILD_ALARM);
        return 0;
    }
    int slot = -1;
    for (int i = 0; i < CU_MAX_CHILDREN && slot < 0; i++)
        if (cu_children_[i] == 0) slot = i;
    if (slot < 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        cr_assert_fail("too many live crash children");
    }
    cu_children_[slot] = pid;
    return pid;
}

/* Wait for PID; returns its wait status. */
static inline int cu_wait(pid_t pid) {
    int st = 0;
    pid_t r;
    while ((r = waitpid(pid, &st, 0)) < 0 && errno == EINTR) {}
    cu_forget_(pid);
    cr_assert_eq(r, pid, "waitpid(%d): %s", (int)pid, strerror(errno));
    return st;
}

/* Human-readable wait status. */
static inline const char *cu_status_str(int st, char *buf, size_t cap) {
    if (WIFEXITED(st))
        snprintf(buf, cap, "exit %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(buf, cap, "signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else
        snprintf(buf, cap, "status 0x%x", st);
    return buf;
}

/* Criterion .fini: kill and reap leftover children, remove temp dirs. */
static inline void cu_fini(void) {
    for (int i = 0; i < CU_MAX_CHILDREN; i++) {
        if (cu_children_[i] > 0) {
            kill(cu_children_[i], SIGKILL);
            waitpid(cu_children_[i], NULL, 0);
            cu_children_[i] = 0;
        }
    }
    tu_cleanup();
}

/* write(2) all of BUF (async-signal-safe; for children). 0 or -1. */
static inline int cu_write_all(int fd, const void *buf, size_t len) {
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* read(2) exactly LEN bytes unless EOF comes first; returns bytes read. */
static inline size_t cu_read_all(int fd, void *buf, size_t len) {
    char *p = buf;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, p + got, len - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    return got;
}

static inline void cu_pipe(int fds[2]) { cr_assert(pipe(fds) == 0, "pipe: %s", strerror(errno)); }

/* Fork a crash child (cu_fork) with a pipe from it to the parent.  In the
 * child: returns 0, *FD is the write end.  In the parent: returns the
 * child's pid, *FD is the read end (the caller closes it).  The other end
 * is closed in each. */
static inline pid_t cu_fork_piped(int *fd) {
    int fds[2];
    cu_pipe(fds);
    pid_t pid = cu_fork();
    close(fds[pid == 0 ? 0 : 1]);
    *fd = fds[pid == 0 ? 1 : 0];
    return pid;
}

static inline uint64_t cu_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Base seed of the suite: CU_SEED from the environment, else fixed (the
 * kill points that depend on timing vary anyway; every message names the
 * seed of its round). */
static inline uint64_t cu_seed(uint64_t salt) {
    const char *s = getenv("CU_SEED");
    uint64_t base = s ? strtoull(s, NULL, 0) : 0x5eed2024ull;
    return rng_mix64(base ^ rng_mix64(salt));
}

/* ---- keys and values ------------------------------------------------------- */

#define CU_KLEN KEY_LEN /* common/keys.h's keys */
#define CU_VMAX 512

/* Key number I: "k%015llu" (16 bytes and a NUL; I mod 10^15). */
static inline size_t cu_key(char buf[CU_KLEN + 1], uint64_t i) {
    key_format(i, buf);
    return CU_KLEN;
}

/* Parse a key made by cu_key; -1 if it is not one. */
static inline int64_t cu_key_index(const void *k, size_t kl) {
    uint64_t v;
    return key_parse(k, kl, &v) ? -1 : (int64_t)v;
}

/* Value of key I at generation GEN: 12-byte header (u32 index, u32 gen,
 * u32 tag) then a body that is a pure function of the three.  COMPRESSIBLE
 * makes the body repetitive text (zstd shrinks pages of such values).  The
 * length depends on I only (an update keeps the length).  Returns it. */
static inline size_t cu_val(uint8_t buf[CU_VMAX], uint64_t i, uint32_t gen, uint32_t tag, int compressible) {
    size_t len = 40 + (size_t)(rng_mix64(i) % 90);
    uint32_t h[3] = {(uint32_t)i, gen, tag};
    memcpy(buf, h, sizeof h);
    if (compressible) {
        char pat[48];
        int pl = snprintf(pat, sizeof pat, "value-of-%llu-gen-%u;", (unsigned long long)i, gen);
        for (size_t j = 12; j < len; j++) buf[j] = (uint8_t)pat[(j - 12) % (size_t)pl];
    } else {
        tu_fill(buf + 12, len - 12, rng_mix64(i * 1000003u + gen * 7919u + tag));
    }
    return len;
}

/* What a scan expects as the value of key I. */
typedef size_t (*cu_valfn)(void *ctx, uint64_t i, uint8_t buf[CU_VMAX]);

/* Scan the whole store: its keys must be exactly key 0, 1, ..., m-1, in
 * order, each with the value VAL gives; a get of key m must be NOTFOUND.
 * Returns m.  WHAT names the round in messages. */
static inline uint64_t cu_check_prefix(eng_db *db, cu_valfn val, void *ctx, const char *what) {
    eng_iter *it = NULL;
    eng_iter_options io = {0};
    int rc = eng_iter_open(db, &io, &it);
    cr_assert_eq(rc, ENG_OK, "%s: eng_iter_open: %s", what, eng_strerror(rc));
    uint64_t m = 0;
    uint8_t want[CU_VMAX];
    for (rc = eng_iter_first(it); rc == ENG_OK; rc = eng_iter_next(it), m++) {
        size_t kl, vl;
        const void *k = eng_iter_key(it, &kl), *v = eng_iter_value(it, &vl);
        int64_t idx = cu_key_index(k, kl);
        cr_assert(idx >= 0, "%s: scan position %llu holds a key that was never written (len %zu)", what,
                  (unsigned long long)m, kl);
        cr_assert_eq((uint64_t)idx, m, "%s: not a prefix: scan position %llu holds key %lld (key %llu is missing)",
                     what, (unsigned long long)m, (long long)idx, (unsigned long long)m);
        size_t wl = val(ctx, m, want);
        uint32_t h[3] = {0, 0, 0};
        if (vl >= sizeof h) memcpy(h, v, sizeof h);
        cr_assert(tu_bytes_eq(v, vl, want, wl),
                  "%s: key %llu has a wrong value (len %zu, want %zu; header index %u gen %u tag %u)", what,
                  (unsigned long long)m, vl, wl, h[0], h[1], h[2]);
    }
    cr_assert_eq(rc, ENG_NOTFOUND, "%s: scan ended with %s after %llu keys", what, eng_strerror(rc),
                 (unsigned long long)m);
    eng_iter_close(it);
    char kb[CU_KLEN + 1];
    eng_buf b = {0};
    rc = eng_get(db, kb, cu_key(kb, m), &b);
    cr_assert_eq(rc, ENG_NOTFOUND, "%s: get of key %llu (one past the scan) returned %s", what, (unsigned long long)m,
                 eng_strerror(rc));
    eng_buf_free(&b);
    return m;
}

/* eng_verify must find nothing. */
static inline void cu_verify_clean(eng_db *db, const char *what) {
    tu_reports rep;
    tu_reports_init(&rep);
    uint64_t problems = 99;
    int rc = eng_verify(db, tu_collect, &rep, &problems);
    char buf[2048];
    cr_assert(rc == ENG_OK && problems == 0, "%s: eng_verify: %s, %llu problems:\n%s", what, eng_strerror(rc),
              (unsigned long long)problems, tu_reports_str(&rep, buf, sizeof buf));
}

/* ---- files ------------------------------------------------------------------- */

/* Whole file into a malloc'd buffer; *len gets its size. */
static inline uint8_t *cu_read_file(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY);
    cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
    struct stat st;
    cr_assert(fstat(fd, &st) == 0);
    uint8_t *b = malloc((size_t)st.st_size + 1);
    cr_assert(b != NULL);
    size_t got = cu_read_all(fd, b, (size_t)st.st_size);
    cr_assert_eq(got, (size_t)st.st_size, "read %s", path);
    close(fd);
    *len = got;
    return b;
}

static inline void cu_pwrite_file(const char *path, const void *buf, size_t len, uint64_t off) {
    int fd = open(path, O_WRONLY);
    cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
    cr_assert_eq(pwrite(fd, buf, len, (off_t)off), (ssize_t)len, "pwrite %s at %llu", path, (unsigned long long)off);
    close(fd);
}

static inline uint8_t cu_pread_byte(const char *path, uint64_t off) {
    int fd = open(path, O_RDONLY);
    cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
    uint8_t c = 0;
    cr_assert_eq(pread(fd, &c, 1, (off_t)off), 1, "pread %s at %llu", path, (unsigned long long)off);
    close(fd);
    return c;
}

/* XOR the byte at OFF of PATH with MASK. */
static inline void cu_flip_byte(const char *path, uint64_t off, uint8_t mask) {
    uint8_t c = cu_pread_byte(path, off) ^ mask;
    cu_pwrite_file(path, &c, 1, off);
}

static inline int cu_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---- WAL segments -------------------------------------------------------------- */

#define CU_MAX_SEGS 256

typedef struct cu_seglist {
    int n;
    uint64_t start[CU_MAX_SEGS]; /* sorted */
    uint64_t size[CU_MAX_SEGS];
} cu_seglist;

/* The segment files of DIR/SUB (SUB "wal" or an absolute archive dir when
 * DIR is NULL), sorted by start LSN. */
static inline void cu_list_segments(const char *dir, const char *sub, cu_seglist *out) {
    char d[4096];
    if (dir)
        snprintf(d, sizeof d, "%s/%s", dir, sub);
    else
        snprintf(d, sizeof d, "%s", sub);
    out->n = 0;
    DIR *dh = opendir(d);
    cr_assert(dh != NULL, "opendir %s: %s", d, strerror(errno));
    struct dirent *e;
    while ((e = readdir(dh)) != NULL) {
        if (strlen(e->d_name) != 16) continue;
        char *end = NULL;
        uint64_t s = strtoull(e->d_name, &end, 16);
        if (!end || *end) continue;
        char p[4096 + 512];
        snprintf(p, sizeof p, "%s/%s", d, e->d_name);
        struct stat st;
        if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        cr_assert(out->n < CU_MAX_SEGS, "too many segments in %s", d);
        int i = out->n++;
        while (i > 0 && out->start[i - 1] > s) {
            out->start[i] = out->start[i - 1];
            out->size[i] = out->size[i - 1];
            i--;
        }
        out->start[i] = s;
        out->size[i] = (uint64_t)st.st_size;
    }
    closedir(dh);
}

static inline int cu_seglist_has(const cu_seglist *l, uint64_t start) {
    for (int i = 0; i < l->n; i++)
        if (l->start[i] == start) return 1;
    return 0;
}

/* Path of the segment starting at START in DIR/wal. */
static inline const char *cu_seg_path(char *buf, size_t cap, const char *dir, uint64_t start) {
    snprintf(buf, cap, "%s/wal/%016llx", dir, (unsigned long long)start);
    return buf;
}


/* ---- reading the log the way format.h draws it ------------------------------------
 * Only for locating bytes to damage: LSN = position in the stream of
 * segments, every WAL_BLOCK-byte block opens with a WAL_BLOCK_HDR-byte
 * header (WB_*_OFF), every WAL_SECTOR-byte sector ends with a
 * WAL_SECTOR_TRAILER-byte trailer (a CRC32C of its other bytes), records
 * start 8-byte aligned and skip block headers and trailers (WAL_REC_HDR
 * bytes of header, XL_*_OFF).  Every size and offset is format.h's. */

/* Short names the recovery suites use: a block, and a record's header. */
#define CU_WBLK WAL_BLOCK
#define CU_WHDR WAL_REC_HDR

typedef struct cu_wal {
    uint64_t seg;
    cu_seglist l;
    uint8_t *data[CU_MAX_SEGS];
} cu_wal;

static inline void cu_wal_load(const char *dir, uint64_t seg, cu_wal *w) {
    memset(w, 0, sizeof *w);
    w->seg = seg;
    cu_list_segments(dir, "wal", &w->l);
    for (int i = 0; i < w->l.n; i++) {
        char p[4200];
        size_t len;
        w->data[i] = cu_read_file(cu_seg_path(p, sizeof p, dir, w->l.start[i]), &len);
        w->l.size[i] = len;
    }
}

static inline void cu_wal_free(cu_wal *w) {
    for (int i = 0; i < w->l.n; i++) free(w->data[i]);
    memset(w, 0, sizeof *w);
}

/* Skip a trailer or a block header at POS: the next record byte's place. */
static inline uint64_t cu_wal_skip(uint64_t pos) {
    if (pos % WAL_SECTOR >= WAL_SECTOR_DATA) pos += WAL_SECTOR - pos % WAL_SECTOR;
    if (pos % WAL_BLOCK == 0) pos += WAL_BLOCK_HDR;
    return pos;
}

/* Raw byte at LSN; -1 if no segment file holds it. */
static inline int cu_wal_byte(const cu_wal *w, uint64_t lsn) {
    uint64_t s = lsn & ~(w->seg - 1);
    for (int i = 0; i < w->l.n; i++)
        if (w->l.start[i] == s) return lsn - s < w->l.size[i] ? w->data[i][lsn - s] : -1;
    return -1;
}

/* N raw bytes at LSN; 0 if some are missing. */
static inline int cu_wal_raw(const cu_wal *w, uint64_t lsn, void *buf, size_t n) {
    uint8_t *b = buf;
    for (size_t i = 0; i < n; i++) {
        int c = cu_wal_byte(w, lsn + i);
        if (c < 0) return 0;
        b[i] = (uint8_t)c;
    }
    return 1;
}

/* Move N record bytes forward from POS, skipping block headers and
 * trailers. */
static inline uint64_t cu_wal_advance(uint64_t pos, uint64_t n) {
    while (n) {
        pos = cu_wal_skip(pos);
        uint64_t avail = WAL_SECTOR_DATA - pos % WAL_SECTOR, take = n < avail ? n : avail;
        pos += take;
        n -= take;
    }
    return pos;
}

/* Where the record after one ending at END starts. */
static inline uint64_t cu_wal_next_start(uint64_t end) {
    uint64_t p = (end + 7) & ~7ull;
    if (p % WAL_BLOCK == 0) p += WAL_BLOCK_HDR;
    return p;
}

/* Record bytes (headers skipped) at POS into BUF; 0 if missing. */
static inline int cu_wal_read(const cu_wal *w, uint64_t pos, void *buf, size_t n) {
    uint8_t *b = buf;
    while (n) {
        pos = cu_wal_skip(pos);
        uint64_t avail = WAL_SECTOR_DATA - pos % WAL_SECTOR, take = n < avail ? n : avail;
        if (!cu_wal_raw(w, pos, b, take)) return 0;
        pos += take;
        b += take;
        n -= take;
    }
    return 1;
}

/* Header of the record at POS: 1 if it looks like one that sits there
 * (xl_lsn == POS, sane length). */
static inline int cu_wal_rec_at(const cu_wal *w, uint64_t pos, uint32_t *len, int *type) {
    uint8_t h[WAL_REC_HDR];
    *len = 0;
    *type = 0;
    if (!cu_wal_read(w, pos, h, sizeof h)) return 0;
    *len = rd32(h + XL_LEN_OFF);
    *type = h[XL_TYPE_OFF];
    return rd64(h + XL_LSN_OFF) == pos && *len >= WAL_REC_HDR && *len < (64u << 20);
}

/* The first record that starts in the block at BLOCK_LSN: 1 and *POS, or 0
 * (the block is all continuation, missing, or not as drawn). */
static inline int cu_wal_first_in_block(const cu_wal *w, uint64_t block_lsn, uint64_t *pos) {
    uint8_t h[WAL_BLOCK_HDR];
    if (!cu_wal_raw(w, block_lsn, h, sizeof h)) return 0;
    if (rd64(h + WB_LSN_OFF) != block_lsn || rd16(h + WB_MAGIC_OFF) != WB_MAGIC) return 0;
    uint64_t cont = rd16(h + WB_CONT_OFF);
    if (cont >= WAL_BLOCK_PAYLOAD) return 0;
    uint64_t p = cu_wal_next_start(cont ? cu_wal_advance(block_lsn + WAL_BLOCK_HDR, cont) : block_lsn + WAL_BLOCK_HDR);
    if (p / WAL_BLOCK != block_lsn / WAL_BLOCK) return 0;
    uint32_t len;
    int type;
    if (!cu_wal_rec_at(w, p, &len, &type)) return 0;
    *pos = p;
    return 1;
}

#endif /* TESTS_CRASHUTIL_H */
