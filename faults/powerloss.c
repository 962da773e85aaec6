/*
 * powerloss.c -- build/powerloss: put a crashed database directory into a
 * state a power cut could have left (docs/fault-classes.md, Crash: power loss
 * and kill).
 *
 *   build/powerloss DIR --run-dir RUN --seed S [--variants K]
 *                   [--mode rollback|tear|mixed|keep] [--out-prefix P]
 *                   [--pin NAME@OFFSET:BACK=rollback|tear:HEX ...]
 *
 * Input: RUN/journal and RUN/journal.d/ (journal.h; byte layout in
 * journal_int.h), written by the I/O hooks of the process that crashed.
 * Output: DIR changed in place, or with --variants K the copies
 * DIR.pl0 .. DIR.pl{K-1} (PREFIX0 .. PREFIX{K-1} with --out-prefix
 * PREFIX), each with its own decisions, DIR untouched.  Every decision to
 * undo something is appended to RUN/ledger (phase "powerloss") before it
 * is applied.
 * Exit: 0 done; 2 usage (nothing changed); 3 refused (DIR/LOCK held) or
 * an I/O error.
 *
 * Step 1, forward over the journal: what was durable (flt_jr_durability
 * in journal_read.c, shared with the drop of an injected fsync failure, so both
 * apply one rule).
 *
 *     journal:  w1.B w1.D  S.B  w2.B w2.D  S.D(ok)  C.B C.D  DS.B DS.D(ok)
 *               |<-- w1 done before S began: synced -->|   |<- C done before
 *                              w2 completed after S began: unsynced   DS began: durable
 *
 *   - A write or truncate is durable iff its DONE precedes the BEGIN of a
 *     SYNC of the same inode whose DONE reports success.  Inodes are
 *     followed through renames (a sync of "control" after renaming
 *     "control.tmp" onto it covers the writes made as "control.tmp").
 *   - A create, rename or unlink is durable iff it succeeded and a
 *     DIRSYNC of its parent directory (both parents for a rename) began
 *     after its DONE and succeeded.
 *   - A failed operation (DONE < 0) of the metadata kind changed nothing;
 *     a write or truncate that failed, or any operation without a DONE
 *     (cut by the crash), may or may not have reached the disk.
 *   - A write a DROP record names was rolled back by an injected fsync
 *     failure while the process ran (flt_journal_drop_unsynced).
 *
 * Step 2, backward over the journal (per variant, from its own seed):
 * every operation, newest first, is kept or undone, so each undo sees the
 * directory as it was right after the operation:
 *
 *     write     durable, keep mode: kept.  rollback: kept or rolled back
 *               (p = 1/2).  tear: a random subset of its sectors kept (at
 *               least one kept and one not when it spans two or more).
 *               mixed: keep, roll back or tear (p = 1/3 each).
 *     truncate: durable or keep mode: kept; else undone with p = 1/2.
 *     create, rename, unlink: durable or keep mode: kept; else the
 *               newest K of them are undone, K drawn uniformly from 0 to
 *               their number (PL9).
 *
 * Rules that make the result a state the disk could really hold:
 *   PL1  Rolling back restores the old bytes only outside the ranges that
 *        later kept (or durable) writes of the same inode cover (an
 *        interval set per file), so a kept later write wins over an undone
 *        earlier one; a durable write is never touched, nor anything a
 *        durable or kept truncate decided.
 *   PL2  A write that extended the file is undone by truncating back to
 *        its old size, or to the end of the last byte later kept writes
 *        need; the bytes in between it no longer holds read as zeros.
 *   PL3  A name is followed through renames to the file that now carries
 *        it on disk; writes to an inode later unlinked or replaced (and
 *        kept so) are skipped: that inode is gone.  So is a write or
 *        truncate after which its name names no file on disk: it went
 *        through a descriptor of an inode already unlinked (the door
 *        journals a call that raced with the unlink under the old name,
 *        RocksDB truncating a WAL file its purge had just removed).
 *   PL4  Once a later operation on a name is kept, every earlier metadata
 *        operation on that name is kept too (a rename of "x.tmp" that
 *        reached the disk implies the creation of "x.tmp" did).
 *   PL5  The tear unit is the 512-byte sector at absolute file offsets
 *        (doubled until a write spans at most 1024 units); the ledger note
 *        "unit=U kept=HEX" lists the kept units, hex digit i holding units
 *        4i..4i+3, least significant bit first.  Write lines carry
 *        "write=N", the write's rank (from 0) among the journal's writes,
 *        since one range is often written many times.
 *   PL6  A dropped write is neither kept nor undone: its old bytes were put
 *        back when its fsync failed, and every later record was made on
 *        top of that (it adds nothing to the kept ranges of PL1 either).
 *   PL7  A write's fate (keep, roll back or tear, and the units a tear
 *        keeps) is drawn from a stream of its own, seeded by the variant's
 *        seed and the write's identity: its name, its offset, and how many
 *        writes to that name and offset the journal holds before it.  So a
 *        run with writes fewer (ops a shrinker removed) decides each write
 *        it still does as before.  Metadata coins come from the variant's
 *        stream in the walk's order.
 *   PL8  --pin NAME@OFFSET:BACK=FATE fixes one unsynced write's fate: the
 *        write to journal name NAME at OFFSET with BACK writes to that
 *        name and offset after it (0: the last) is rolled back
 *        (FATE "rollback") or torn keeping the units HEX lists (FATE
 *        "tear:HEX", PL5's notation; all units kept is a keep, none a
 *        rollback), whatever the mode; every write's
 *        ledger line has "back=BACK".  With --mode keep nothing else
 *        changes: a shrinker that removes ops keeps the one tear its
 *        failure needs on the page it needs it on, where PL7's draw for
 *        that page moved with every earlier write of it removed (planted
 *        bug fpi-skips-page-at-redo-lsn: delta debugging removed 3 to 14
 *        ops a trial for 600 s).  A pin that matches no unsynced write
 *        changes nothing.
 *
 *   PL9  Directory operations reach the disk in the order they were made:
 *        ext4 and XFS log every create, rename and unlink in one ordered
 *        journal, so a power loss loses a suffix of them, never an earlier
 *        one under a later one that stayed.  The walk undoes unsynced ones
 *        until it has undone its drawn K or meets one it keeps (durable,
 *        pinned, or one the directory no longer allows undoing); every
 *        earlier one is kept.  Without it, a power loss could remove a
 *        file whose name a later, kept rename already points at
 *        (RocksDB's CURRENT naming a MANIFEST that is gone): a state no
 *        journaling file system leaves.
 *
 * Assumed of the journaled process: writes to overlapping ranges are not
 * in flight at the same time (the engine serializes them per page and
 * per WAL block), so each write's old bytes are its predecessors' result.
 *
 * After an in-place run the journal is reset (truncated, journal.d/
 * emptied) so the restarted process starts a fresh one; after making
 * variants it is left as it is, for more variants.  An in-place run cut
 * short leaves DIR half changed (it says so): make variants when the
 * crashed state must survive the step.  DIR/LOCK is held during an
 * in-place run so no engine opens the directory half way.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "common/rng.h"
#include "common/version.h"
#include "journal_int.h"
#include "ledger.h"

#define EXIT_USAGE 2
#define EXIT_IO    3

enum pl_mode { MODE_ROLLBACK, MODE_TEAR, MODE_MIXED, MODE_KEEP };
static const char *const mode_names[] = {"rollback", "tear", "mixed", "keep"};

/* ---- errors ------------------------------------------------------------------- */

/* The directory being changed in place, once changes began (for the
 * message of a failure half way). */
static const char *g_changing;

/* I/O failure: message and exit 3. */
static void __attribute__((noreturn, format(printf, 1, 2))) die_io(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("powerloss: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (g_changing)
        fprintf(stderr,
                "powerloss: %s is half changed and the journal was kept: start again from a copy "
                "of the crashed directory\n",
                g_changing);
    exit(EXIT_IO);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) die_io("out of memory");
    return p;
}

static void *xcalloc(size_t n, size_t sz) {
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) die_io("out of memory");
    return p;
}

static void *xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (!p) die_io("out of memory");
    return p;
}

static char *xstrndup(const char *s, size_t n) {
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

/* ---- PRNG: xoshiro256** seeded through splitmix64 (common/rng.h) ------------------ */

typedef struct xoshiro {
    uint64_t s[4];
} xoshiro;

static void xo_seed(xoshiro *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = rng_next(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xo_next(xoshiro *r) {
    uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return res;
}

/* Uniform in [0, n) (n small: the modulo bias is below 2^-50). */
static uint64_t xo_below(xoshiro *r, uint64_t n) { return xo_next(r) % n; }

/* The seed of variant V: in-place runs use variant 0's. */
static uint64_t variant_seed(uint64_t seed, unsigned v) {
    uint64_t x = seed ^ (0xD1B54A32D192ED03ull * (v + 1));
    return rng_next(&x);
}

/* ---- the shared analysis (journal_int.h), with exits on failure -------------------- */

/* The interval sets and the undo of a write (PL1, PL2) are journal_read.c's too:
 * flt_jr_iv_*, flt_jr_undo_*. */

typedef jr_strmap strmap;
typedef jr_ivset ivset;
typedef jr_op pl_op;

static int sm_get(strmap *m, const char *k, size_t len) { return flt_jr_sm_get(m, k, len); }

/* Set K to V (-1 works as "absent" for every user here). */
static void sm_set(strmap *m, const char *k, size_t len, int v) {
    if (flt_jr_sm_set(m, k, len, v)) die_io("out of memory");
}

static void sm_free(strmap *m) { flt_jr_sm_free(m); }

static void iv_add(ivset *s, uint64_t a, uint64_t b) {
    if (flt_jr_iv_add(s, a, b)) die_io("out of memory");
}

/* ---- the journal, read -------------------------------------------------------------- */

typedef struct journal_view {
    uint8_t *map;
    size_t size;
    jr_view v; /* ops, torn, records, writes, sessions */
} journal_view;

/* Map RUN/journal and decode its records (flt_jr_load, whole): a torn
 * tail is skipped, and so are torn bytes a restarted process appended a
 * new session after; a journal broken in the middle, where holes could
 * hide operations, gives no power-loss state that can be trusted (exit
 * 3).  Then step 1 (flt_jr_durability). */
static void journal_load(const char *run, journal_view *jv) {
    memset(jv, 0, sizeof *jv);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", run, JR_FILE);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) die_io("cannot open the journal %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) die_io("stat %s: %s", path, strerror(errno));
    jv->size = (size_t)st.st_size;
    if (jv->size) {
        jv->map = mmap(NULL, jv->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (jv->map == MAP_FAILED) die_io("mmap %s: %s", path, strerror(errno));
    }
    close(fd);
    int rc = flt_jr_load(&jv->v, jv->map, jv->size, 1);
    if (rc == -EBADMSG)
        die_io("%s is damaged at byte %zu but holds valid records of the same session after it (byte %zu): "
               "refusing to guess",
               path, jv->v.bad_at, jv->v.bad_next);
    if (rc) die_io("reading %s: %s", path, strerror(-rc));
    rc = flt_jr_durability(&jv->v, NULL);
    if (rc) die_io("analysing %s: %s", path, strerror(-rc));
}


/* ---- step 2: one variant ---------------------------------------------------------------- */

/* A file as step 2 follows it backwards (PL3). */
typedef struct pfile {
    char *disk; /* where it is now, relative to the root */
    int gone;   /* no longer reachable: its changes need no undo */
    ivset kept; /* ranges whose bytes later kept changes decided (PL1) */
} pfile;

typedef struct stats {
    uint64_t dropped; /* writes a failed fsync rolled back (PL6) */
    uint64_t unsynced, rolled_back, torn, kept_unsynced;
    uint64_t meta_unsynced, meta_undone;
} stats;

typedef struct variant {
    int root; /* dirfd of the directory being changed */
    const char *root_path;
    const char *run;
    unsigned index;
    int mode;
    xoshiro rng;         /* metadata coins, in the backward walk's order */
    uint64_t seed;       /* the variant's seed: each write's own stream (PL7) */
    const uint64_t *wid; /* per op of the journal: a write's identity (PL7) */
    flt_ledger *ledger;
    strmap names; /* journal name -> index in files */
    pfile **files;
    size_t nfiles, capfiles;
    strmap pinned;            /* names with a later kept operation (PL4) */
    const uint32_t *wback;    /* per op of the journal: later writes to its name and offset (PL8) */
    const struct wpin *wpins; /* --pin (PL8) */
    size_t nwpins;
    stats st;
    int64_t dir_undo;    /* PL9: directory operations still to undo; -1 before the draw */
    size_t dir_unsynced; /* PL9: the journal's unsynced directory operations */
} variant;

static int pf_new(variant *v, const char *disk, size_t len, int gone) {
    if (v->nfiles == v->capfiles) {
        v->capfiles = v->capfiles ? 2 * v->capfiles : 64;
        v->files = xrealloc(v->files, v->capfiles * sizeof *v->files);
    }
    pfile *f = xcalloc(1, sizeof *f);
    f->disk = xstrndup(disk, len);
    f->gone = gone;
    v->files[v->nfiles] = f;
    return (int)v->nfiles++;
}

/* The file NAME denotes at this point of the backward walk. */
static pfile *pf_lookup(variant *v, jr_str name) {
    int i = sm_get(&v->names, name.p, name.len);
    if (i < 0) {
        i = pf_new(v, name.p, name.len, 0);
        sm_set(&v->names, name.p, name.len, i);
    }
    return v->files[i];
}

static void pf_bind(variant *v, jr_str name, int idx) { sm_set(&v->names, name.p, name.len, idx); }

static int pinned(variant *v, jr_str name) { return sm_get(&v->pinned, name.p, name.len) > 0; }
static void pin(variant *v, jr_str name) { sm_set(&v->pinned, name.p, name.len, 1); }

static char *str0(jr_str s, char *buf, size_t cap) {
    size_t n = s.len < cap - 1 ? s.len : cap - 1;
    memcpy(buf, s.p, n);
    buf[n] = 0;
    return buf;
}

/* Append one decision to the ledger before it is applied. */
static void ledger_note(variant *v, const char *cls, const char *point, jr_str file, int64_t off, int64_t len,
                        const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static void ledger_note(variant *v, const char *cls, const char *point, jr_str file, int64_t off, int64_t len,
                        const char *fmt, ...) {
    char name[PATH_MAX], note[700];
    int n = snprintf(note, sizeof note, "variant=%u ", v->index);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note + n, sizeof note - (size_t)n, fmt, ap);
    va_end(ap);
    flt_event e = flt_event_none(cls, point);
    e.phase = "powerloss";
    e.file = str0(file, name, sizeof name);
    e.offset = off;
    e.len = len;
    e.note = note;
    int rc = flt_ledger_append(v->ledger, &e);
    if (rc) die_io("cannot append to %s/ledger: %s (nothing of this decision was applied)", v->run, strerror(-rc));
}

static int open_rw(variant *v, const char *disk) {
    int fd = openat(v->root, disk, O_RDWR | O_CLOEXEC);
    if (fd < 0) die_io("open %s/%s: %s", v->root_path, disk, strerror(errno));
    return fd;
}

static void pwrite_all(int fd, const void *buf, size_t len, uint64_t off, const char *what) {
    size_t done = 0;
    while (done < len) {
        ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) die_io("pwrite %s at %" PRIu64 ": %s", what, off + done, n < 0 ? strerror(errno) : "no progress");
        done += (size_t)n;
    }
}

static void set_size(int fd, uint64_t size, const char *what) {
    if (ftruncate(fd, (off_t)size) != 0) die_io("truncate %s to %" PRIu64 ": %s", what, size, strerror(errno));
}

/* The shared undo (journal_int.h) failed: nothing more can be trusted. */
static void undo_check(int rc, const char *what) {
    if (rc) die_io("restoring %s: %s", what, strerror(-rc));
}

/* Hex bitmap of units (PL5). */
static void hex_units(const uint8_t *kept, size_t n, char *out, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < cap; i += 4) {
        unsigned d = 0;
        for (size_t k = 0; k < 4 && i + k < n; k++) d |= (unsigned)kept[i + k] << k;
        out[o++] = "0123456789abcdef"[d];
    }
    out[o] = 0;
}

enum { W_KEEP, W_ROLLBACK, W_TEAR };

/* One --pin (PL8). */
typedef struct wpin {
    const char *name;
    size_t name_len;
    uint64_t offset;
    uint32_t back;
    int fate;         /* W_ROLLBACK or W_TEAR */
    const char *kept; /* W_TEAR: PL5's hex of the units kept */
} wpin;

/* PL5's hex back into N units (a digit it lacks: units lost). */
static void units_of_hex(const char *hex, uint8_t *kept, size_t n) {
    memset(kept, 0, n);
    for (size_t i = 0; hex[i] && 4 * i < n; i++) {
        unsigned d = (unsigned)(hex[i] <= '9' ? hex[i] - '0' : hex[i] - 'a' + 10);
        for (size_t k = 0; k < 4 && 4 * i + k < n; k++) kept[4 * i + k] = (uint8_t)((d >> k) & 1);
    }
}

/* The --pin that names journal op AT (a write), or NULL (PL8). */
static const wpin *pin_of(const variant *v, const jr_rec *r, size_t at) {
    for (size_t i = 0; i < v->nwpins; i++) {
        const wpin *p = &v->wpins[i];
#ifdef ENG_BROKEN_POWERLOSS_PIN_IGNORES_BACK
        /* planted bug (tests/harness_mutants.txt): a pin matches every unsynced write to its
         * name and offset, not only the one BACK names. */
        if (p->offset == r->offset && p->name_len == r->path.len && memcmp(p->name, r->path.p, r->path.len) == 0 &&
            v->wback[at] < UINT32_MAX)
#else
        if (p->offset == r->offset && p->back == v->wback[at] && p->name_len == r->path.len &&
            memcmp(p->name, r->path.p, r->path.len) == 0)
#endif
            return p;
    }
    return NULL;
}

/* Parse --pin's NAME@OFFSET:BACK=rollback|tear:HEX into *P: 1, or 0. */
static int parse_pin(const char *s, wpin *p) {
    const char *at = strrchr(s, '@');
    if (!at || at == s) return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long off = strtoull(at + 1, &end, 10);
    if (errno || end == at + 1 || *end != ':') return 0;
    const char *b = end + 1;
    unsigned long back = strtoul(b, &end, 10);
    if (errno || end == b || *end != '=' || back > UINT32_MAX) return 0;
    const char *fate = end + 1;
    p->name = s;
    p->name_len = (size_t)(at - s);
    p->offset = off;
    p->back = (uint32_t)back;
    p->kept = NULL;
    if (!strcmp(fate, "rollback")) {
        p->fate = W_ROLLBACK;
        return 1;
    }
    if (strncmp(fate, "tear:", 5) != 0 || !fate[5] || strlen(fate + 5) > 256) return 0;
    for (const char *h = fate + 5; *h; h++)
        if (!((*h >= '0' && *h <= '9') || (*h >= 'a' && *h <= 'f'))) return 0;
    p->fate = W_TEAR;
    p->kept = fate + 5;
    return 1;
}

/* "NAME@OFFSET" of write R into KEY (CAP bytes): its length. */
static size_t write_key(const jr_rec *r, char *key, size_t cap) {
    int n = snprintf(key, cap, "%.*s@%" PRIu64, (int)r->path.len, r->path.p, r->offset);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

/* How many times KEY was counted in M before; counts it once more. */
static int count_once_more(strmap *m, const char *key, size_t len) {
    int n = sm_get(m, key, len);
    if (n < 0) n = 0;
    sm_set(m, key, len, n + 1);
    return n;
}

/* PL7: the identity of each write of the journal: its name, its offset
 * and how many writes to that name and offset came before it (0 for
 * others).  A write's fate is drawn from the variant's seed and this, not
 * from its place among the journal's writes, so a run with some writes
 * fewer (an op removed by crashtest.py shrink) decides the writes it still
 * does as before: with one stream in journal order, every write removed
 * moved every later draw, and a tear the failure needed landed on another
 * page (planted bug fpi-skips-page-at-redo-lsn: no removal of ops, down
 * to 83 at a time, kept its failure).  *BACKS gets, per op, how many
 * writes to its name and offset come after it (PL8's BACK). */
static uint64_t *write_ids(const journal_view *jv, uint32_t **backs) {
    uint64_t *id = xcalloc(jv->v.nops ? jv->v.nops : 1, sizeof *id);
    uint32_t *back = xcalloc(jv->v.nops ? jv->v.nops : 1, sizeof *back);
    strmap seen, after;
    memset(&seen, 0, sizeof seen);
    memset(&after, 0, sizeof after);
    /* PL8: how many writes to the same name and offset come after each. */
    for (size_t i = jv->v.nops; i-- > 0;) {
        const jr_rec *r = &jv->v.ops[i].r;
        if (r->kind != JR_WRITE_B) continue;
        char key[PATH_MAX + 24];
        size_t len = write_key(r, key, sizeof key);
        back[i] = (uint32_t)count_once_more(&after, key, len);
    }
    sm_free(&after);
    *backs = back;
    for (size_t i = 0; i < jv->v.nops; i++) {
        const jr_rec *r = &jv->v.ops[i].r;
        if (r->kind != JR_WRITE_B) continue;
        char key[PATH_MAX + 24];
        size_t len = write_key(r, key, sizeof key);
        int before = count_once_more(&seen, key, len);
        id[i] = XXH3_64bits_withSeed(r->path.p, r->path.len, r->offset) ^ rng_mix64((uint64_t)before + 1);
    }
    sm_free(&seen);
    return id;
}

/* PL3: F's inode is no longer reachable: gone, or (walking back, the
 * directory as it was right after the operation) no file under its name. */
static int unreachable(variant *v, pfile *f) {
    struct stat st;
    if (!f->gone && fstatat(v->root, f->disk, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT) f->gone = 1;
    return f->gone;
}

static void step_write(variant *v, const pl_op *o, size_t at) {
    const jr_rec *r = &o->r;
    pfile *f = pf_lookup(v, r->path);
    uint64_t end = r->offset + r->len;
    if (unreachable(v, f)) return; /* PL3 */
    if (o->dropped) {
        /* PL6: rolled back already by a failed fsync; what came later was
         * made on top of that. */
        v->st.dropped++;
        return;
    }
    const wpin *pn = o->durable ? NULL : pin_of(v, r, at);
    if (!pn && (o->durable || v->mode == MODE_KEEP)) {
        if (!o->durable) v->st.unsynced++, v->st.kept_unsynced++;
        iv_add(&f->kept, r->offset, end);
        return;
    }
    v->st.unsynced++;
    xoshiro rng; /* PL7: this write's own stream */
    xo_seed(&rng, v->seed ^ v->wid[at]);
    int d;
    switch (v->mode) {
    case MODE_ROLLBACK: d = xo_below(&rng, 2) ? W_ROLLBACK : W_KEEP; break;
    case MODE_TEAR: d = W_TEAR; break;
    default: d = (int)xo_below(&rng, 3); break; /* W_KEEP, W_ROLLBACK, W_TEAR */
    }
    if (pn) d = pn->fate; /* PL8 (its draw above changes no other write's: PL7) */
    /* Units of the write (PL5): absolute sectors, doubled until at most
     * 1024 of them. */
    uint64_t unit = 512, first, last;
    for (;;) {
        first = r->offset / unit;
        last = (end - 1) / unit;
        if (last - first + 1 <= 1024) break;
        unit *= 2;
    }
    size_t nu = (size_t)(last - first + 1);
    if (d == W_TEAR && nu == 1 && !pn) /* one unit cannot tear: it stays or goes */
        d = xo_below(&rng, 2) ? W_ROLLBACK : W_KEEP;
    uint8_t kept[1025];
    memset(kept, 0, nu);
    if (d == W_TEAR && pn) {
        /* As pinned (units its HEX does not list are lost); a tear keeps
         * some and loses some, so all kept is a keep and none a rollback
         * (a write of another length than the pinned one's). */
        units_of_hex(pn->kept, kept, nu);
        size_t nk = 0;
        for (size_t i = 0; i < nu; i++) nk += kept[i];
        if (nk == nu) d = W_KEEP;
        if (nk == 0) d = W_ROLLBACK;
    }
    if (d == W_KEEP) {
        v->st.kept_unsynced++;
        iv_add(&f->kept, r->offset, end);
        return;
    }
    char disk_note[PATH_MAX + 8] = "";
    if (strlen(f->disk) != r->path.len || memcmp(f->disk, r->path.p, r->path.len) != 0)
        snprintf(disk_note, sizeof disk_note, " disk=%s", f->disk);
    const char *pinned_note = pn ? " pinned" : "";
    if (d == W_TEAR && !pn) {
        size_t nk = 0;
        for (size_t i = 0; i < nu; i++) nk += kept[i] = (uint8_t)xo_below(&rng, 2);
        /* A tear keeps some and loses some: all or nothing is keep or
         * rollback, which the other modes cover. */
        if (nu >= 2 && (nk == 0 || nk == nu)) {
            size_t flip = (size_t)xo_below(&rng, nu);
            kept[flip] ^= 1;
        }
    }
    if (d == W_TEAR) {
        char hex[260];
        hex_units(kept, nu, hex, sizeof hex);
        ledger_note(v, "torn_write", "powerloss/tear", r->path, (int64_t)r->offset, (int64_t)r->len,
                    "write=%" PRIu64 " back=%" PRIu32 " unit=%" PRIu64 " kept=%s%s%s", o->write_no, v->wback[at], unit,
                    hex, disk_note, pinned_note);
        v->st.torn++;
    } else {
        ledger_note(v, "power_loss", "powerloss/rollback", r->path, (int64_t)r->offset, (int64_t)r->len,
                    "write=%" PRIu64 " back=%" PRIu32 "%s%s", o->write_no, v->wback[at], disk_note, pinned_note);
        v->st.rolled_back++;
    }

    /* Kept units first, so the undone ones leave them alone (PL1). */
    for (size_t i = 0; i < nu; i++) {
        if (!kept[i]) continue;
        uint64_t a = (first + i) * unit, b = a + unit;
        iv_add(&f->kept, a > r->offset ? a : r->offset, b < end ? b : end);
    }
    char what[PATH_MAX + 64];
    snprintf(what, sizeof what, "%s/%s", v->root_path, f->disk);
    jr_undo u;
    int fd = open_rw(v, f->disk);
    undo_check(flt_jr_undo_begin(&u, fd, r->old, r->offset, r->old_size), what);
    for (size_t i = 0; i < nu; i++) {
#ifdef ENG_BROKEN_POWERLOSS_TEAR_SHIFTED_ONE_UNIT
        /* planted bug (tests/harness_mutants.txt): the undone unit is counted from the write's
         * second unit: a tear loses the unit after the one its ledger line
         * says, and a rollback keeps the write's first unit. */
        if (kept[i]) continue;
        uint64_t a = (first + i + 1) * unit, b = a + unit;
        undo_check(flt_jr_undo_range(&u, &f->kept, a > r->offset ? a : r->offset, b < end ? b : end), what);
#else
        if (kept[i]) continue;
        uint64_t a = (first + i) * unit, b = a + unit;
        undo_check(flt_jr_undo_range(&u, &f->kept, a > r->offset ? a : r->offset, b < end ? b : end), what);
#endif
    }
    undo_check(flt_jr_undo_finish(&u, &f->kept, end), what); /* PL2 */
    close(fd);
}

/* Coin for an unsynced truncate: 1 = undo. */
static int undo_coin(variant *v) { return v->mode != MODE_KEEP && xo_below(&v->rng, 2) == 1; }

/* PL9's decision for an unsynced directory operation the walk may undo:
 * 1 = undo (one of the newest K), 0 = keep, and so every earlier one. */
static int dir_undo_next(variant *v) {
    if (v->mode == MODE_KEEP) return 0;
    if (v->dir_undo < 0) v->dir_undo = (int64_t)xo_below(&v->rng, v->dir_unsynced + 1);
    if (v->dir_undo == 0) return 0;
    v->dir_undo--;
    return 1;
}

/* PL9: a directory operation was kept; no earlier one may be undone. */
static void dir_kept(variant *v) { v->dir_undo = 0; }

static void step_truncate(variant *v, const pl_op *o) {
    const jr_rec *r = &o->r;
    pfile *f = pf_lookup(v, r->path);
    if (unreachable(v, f) || (o->has_done && o->result < 0)) return; /* PL3 */
    uint64_t lo = r->new_size < r->old_size ? r->new_size : r->old_size;
    if (!o->durable) v->st.meta_unsynced++;
    if (o->durable || !undo_coin(v)) {
        iv_add(&f->kept, lo, UINT64_MAX); /* what lies beyond was decided by it and later */
        return;
    }
    ledger_note(v, "power_loss", "powerloss/undo_truncate", r->path, (int64_t)r->new_size,
                (int64_t)(r->old_size > r->new_size ? r->old_size - r->new_size : r->new_size - r->old_size),
                "old_size=%" PRIu64 " new_size=%" PRIu64, r->old_size, r->new_size);
    v->st.meta_undone++;
    char what[PATH_MAX + 64];
    snprintf(what, sizeof what, "%s/%s", v->root_path, f->disk);
    jr_undo u;
    int fd = open_rw(v, f->disk);
    if (r->old_size > r->new_size) {
        undo_check(flt_jr_undo_begin(&u, fd, r->old, r->new_size, r->old_size), what);
        /* Grow back, but not into what a later kept truncate decided. */
        uint64_t fixed = flt_jr_iv_fixed_from(&f->kept), want = r->old_size < fixed ? r->old_size : fixed;
        if (u.size < want) {
            set_size(fd, want, what);
            u.size = want;
        }
        undo_check(flt_jr_undo_range(&u, &f->kept, r->new_size, r->old_size), what);
        undo_check(flt_jr_undo_finish(&u, &f->kept, r->old_size), what); /* nothing beyond old_size */
    } else {
        /* It grew the file: back to the old size, or what later kept
         * changes still need. */
        undo_check(flt_jr_undo_begin(&u, fd, NULL, r->old_size, r->old_size), what);
        undo_check(flt_jr_undo_finish(&u, &f->kept, r->new_size), what);
    }
    close(fd);
}

static int disk_exists(variant *v, const char *disk) {
    struct stat st;
    return fstatat(v->root, disk, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Put a copy of RUN/journal.d/SAVED at DISK (a new name). */
static void restore_saved(variant *v, jr_str saved, const char *disk) {
    char src[PATH_MAX], name[256];
    snprintf(src, sizeof src, "%s/%s/%s", v->run, JR_SAVED_DIR, str0(saved, name, sizeof name));
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) die_io("open %s: %s", src, strerror(errno));
    int out = openat(v->root, disk, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) die_io("create %s/%s: %s", v->root_path, disk, strerror(errno));
    uint8_t buf[1 << 16];
    uint64_t off = 0;
    for (;;) {
        ssize_t n = pread(in, buf, sizeof buf, (off_t)off);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) die_io("read %s: %s", src, strerror(errno));
        if (n == 0) break;
        pwrite_all(out, buf, (size_t)n, off, disk);
        off += (uint64_t)n;
    }
    close(in);
    close(out);
}

static void step_create(variant *v, const pl_op *o) {
    const jr_rec *r = &o->r;
    if (o->has_done && o->result < 0) return; /* nothing was created */
    pfile *f = pf_lookup(v, r->path);
    if (!o->durable) v->st.meta_unsynced++;
#ifdef ENG_BROKEN_POWERLOSS_UNDOES_DURABLE_CREATE
    /* planted bug (tests/harness_mutants.txt): a create is undone by the coin even when
     * its directory was synced after it. */
    if (f->gone || pinned(v, r->path) || !dir_undo_next(v)) {
#else
    if (o->durable || f->gone || pinned(v, r->path) || !dir_undo_next(v)) {
#endif
        dir_kept(v);
        pin(v, r->path);
        pf_bind(v, r->path, pf_new(v, r->path.p, r->path.len, 1)); /* before it: no file */
        return;
    }
    ledger_note(v, "power_loss", "powerloss/undo_create", r->path, -1, -1, "%s", "remove");
    v->st.meta_undone++;
    if (unlinkat(v->root, f->disk, 0) != 0 && errno != ENOENT)
        die_io("unlink %s/%s: %s", v->root_path, f->disk, strerror(errno));
    f->gone = 1;
}

static void step_rename(variant *v, const pl_op *o) {
    const jr_rec *r = &o->r;
    if (o->has_done && o->result < 0) return;
    char from[PATH_MAX];
    str0(r->path, from, sizeof from);
    pfile *fb = pf_lookup(v, r->path2);
    /* Cut by the crash: if the source is still there, it did not happen. */
    if (!o->has_done && disk_exists(v, from)) return;
    if (!o->durable) v->st.meta_unsynced++;
    int keep = o->durable || pinned(v, r->path) || pinned(v, r->path2) || fb->gone || disk_exists(v, from) ||
               !dir_undo_next(v);
    if (keep) {
        dir_kept(v);
        pin(v, r->path);
        pin(v, r->path2);
        int ib = sm_get(&v->names, r->path2.p, r->path2.len);
        pf_bind(v, r->path, ib);                                      /* PL3 */
        pf_bind(v, r->path2, pf_new(v, r->path2.p, r->path2.len, 1)); /* the replaced inode */
        return;
    }
    char to[PATH_MAX], sv[256];
    ledger_note(v, "power_loss", "powerloss/undo_rename", r->path, -1, -1, "to=%s restored_target=%s",
                str0(r->path2, to, sizeof to), r->saved.len ? str0(r->saved, sv, sizeof sv) : "none");
    v->st.meta_undone++;
    if (renameat(v->root, fb->disk, v->root, from) != 0)
        die_io("rename %s/%s back to %s: %s", v->root_path, fb->disk, from, strerror(errno));
    int ib = sm_get(&v->names, r->path2.p, r->path2.len);
    free(fb->disk);
    fb->disk = xstrndup(from, strlen(from));
    pf_bind(v, r->path, ib);
    if (r->saved.len) {
        restore_saved(v, r->saved, to);
        pf_bind(v, r->path2, pf_new(v, r->path2.p, r->path2.len, 0));
    } else {
        pf_bind(v, r->path2, pf_new(v, r->path2.p, r->path2.len, 1));
    }
}

static void step_unlink(variant *v, const pl_op *o) {
    const jr_rec *r = &o->r;
    if ((o->has_done && o->result < 0) || r->saved.len == 0) return; /* nothing was removed */
    char p[PATH_MAX];
    str0(r->path, p, sizeof p);
    if (!o->has_done && disk_exists(v, p)) return; /* cut by the crash before it happened */
    if (!o->durable) v->st.meta_unsynced++;
    if (o->durable || pinned(v, r->path) || disk_exists(v, p) || !dir_undo_next(v)) {
        dir_kept(v);
        pin(v, r->path);
        pf_bind(v, r->path, pf_new(v, r->path.p, r->path.len, 1));
        return;
    }
    ledger_note(v, "power_loss", "powerloss/undo_unlink", r->path, -1, -1, "%s", "restore");
    v->st.meta_undone++;
    restore_saved(v, r->saved, p);
    pf_bind(v, r->path, pf_new(v, r->path.p, r->path.len, 0));
}

static void run_variant(variant *v, const journal_view *jv) {
    v->dir_undo = -1;
    v->dir_unsynced = 0;
    for (size_t i = 0; i < jv->v.nops; i++) {
        int k = jv->v.ops[i].r.kind;
        v->dir_unsynced += (k == JR_CREATE_B || k == JR_RENAME_B || k == JR_UNLINK_B) && !jv->v.ops[i].durable;
    }
    for (size_t i = jv->v.nops; i-- > 0;) {
        const pl_op *o = &jv->v.ops[i];
        switch (o->r.kind) {
        case JR_WRITE_B: step_write(v, o, i); break;
        case JR_TRUNCATE_B: step_truncate(v, o); break;
        case JR_CREATE_B: step_create(v, o); break;
        case JR_RENAME_B: step_rename(v, o); break;
        case JR_UNLINK_B: step_unlink(v, o); break;
        default: break;
        }
    }
}

static void variant_free(variant *v) {
    for (size_t i = 0; i < v->nfiles; i++) {
        free(v->files[i]->disk);
        free(v->files[i]->kept.v);
        free(v->files[i]);
    }
    free(v->files);
    sm_free(&v->names);
    sm_free(&v->pinned);
}

/* ---- copies --------------------------------------------------------------------------------- */

static void copy_tree(const char *src, const char *dst) {
    struct stat st;
    if (stat(src, &st) != 0) die_io("stat %s: %s", src, strerror(errno));
    if (mkdir(dst, st.st_mode & 07777) != 0) die_io("mkdir %s: %s", dst, strerror(errno));
    DIR *d = opendir(src);
    if (!d) die_io("opendir %s: %s", src, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char s[PATH_MAX], t[PATH_MAX];
        snprintf(s, sizeof s, "%s/%s", src, e->d_name);
        snprintf(t, sizeof t, "%s/%s", dst, e->d_name);
        if (lstat(s, &st) != 0) die_io("stat %s: %s", s, strerror(errno));
        if (S_ISDIR(st.st_mode)) {
            copy_tree(s, t);
            continue;
        }
        if (!S_ISREG(st.st_mode)) continue;
        int in = open(s, O_RDONLY | O_CLOEXEC);
        if (in < 0) die_io("open %s: %s", s, strerror(errno));
        int out = open(t, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 0777);
        if (out < 0) die_io("create %s: %s", t, strerror(errno));
        uint64_t left = (uint64_t)st.st_size;
        while (left) {
            ssize_t n = copy_file_range(in, NULL, out, NULL, left < (1u << 30) ? (size_t)left : (1u << 30), 0);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break; /* fall back below */
            left -= (uint64_t)n;
        }
        if (left) {
            off_t off = (off_t)((uint64_t)st.st_size - left);
            uint8_t buf[1 << 16];
            while (left) {
                ssize_t n = pread(in, buf, sizeof buf, off);
                if (n < 0 && errno == EINTR) continue;
                if (n <= 0) die_io("copy %s: %s", s, n < 0 ? strerror(errno) : "file shrank");
                pwrite_all(out, buf, (size_t)n, (uint64_t)off, t);
                off += n;
                left -= (uint64_t)n < left ? (uint64_t)n : left;
            }
        }
        close(in);
        if (close(out) != 0) die_io("close %s: %s", t, strerror(errno));
    }
    closedir(d);
}

/* ---- journal reset ------------------------------------------------------------------------- */

static void journal_reset(const char *run) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", run, JR_FILE);
    if (truncate(p, 0) != 0) die_io("reset %s: %s", p, strerror(errno));
    snprintf(p, sizeof p, "%s/%s", run, JR_SAVED_DIR);
    DIR *d = opendir(p);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char f[PATH_MAX + 300];
        snprintf(f, sizeof f, "%s/%s", p, e->d_name);
        if (unlink(f) != 0) die_io("remove %s: %s", f, strerror(errno));
    }
    closedir(d);
}

/* ---- main ------------------------------------------------------------------------------------ */

static void usage(FILE *to) {
    fputs("usage: powerloss DIR --run-dir RUN --seed S [--variants K]\n"
          "                 [--mode rollback|tear|mixed|keep] [--out-prefix P]\n"
          "Put the crashed database DIR into a state a power cut could have left,\n"
          "from the journal RUN/journal (and RUN/journal.d/) of the crashed run.\n"
          "  --seed S        decisions come from S (decimal or 0x hex)\n"
          "  --mode M        rollback (default): unsynced writes kept or rolled back;\n"
          "                  tear: unsynced writes torn at 512-byte sectors;\n"
          "                  mixed: per write keep, roll back or tear;\n"
          "                  keep: change nothing (a process crash, not a power loss)\n"
          "                  Unsynced creates, renames, unlinks and truncates are\n"
          "                  undone with p=1/2 in every mode but keep.\n"
          "  --variants K    make K copies DIR.pl0..DIR.pl{K-1}, one state each, and\n"
          "                  leave DIR and the journal untouched\n"
          "  --out-prefix P  name the copies P0..P{K-1} (needs --variants)\n"
          "  --pin NAME@OFFSET:BACK=rollback|tear:HEX\n"
          "                  the unsynced write to journal name NAME at OFFSET with\n"
          "                  BACK later writes to it (0: the last) rolled back, or\n"
          "                  torn keeping the 512-byte units HEX lists (the ledger's\n"
          "                  kept=), whatever the mode (repeatable, at most 64)\n"
          "Every undo is appended to RUN/ledger (phase powerloss) before it is\n"
          "applied.  Refuses (exit 3) while a process holds DIR/LOCK.\n"
          "Exit: 0 done, 2 usage, 3 refused or I/O error.\n",
          to);
}

static void __attribute__((noreturn, format(printf, 1, 2))) die_usage(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("powerloss: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    usage(stderr);
    exit(EXIT_USAGE);
}

static int parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s || *s == '-') return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || !end || *end) return 0;
    *out = v;
    return 1;
}

/* --opt VALUE or --opt=VALUE; advances *I past the value. */
static const char *opt_val(int argc, char **argv, int *i, const char *name) {
    size_t nl = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, nl) != 0) return NULL;
    if (a[nl] == '=') return a + nl + 1;
    if (a[nl] != 0) return NULL;
    if (*i + 1 >= argc) die_usage("%s needs a value", name);
    return argv[++*i];
}

/* The command line, parsed and checked (usage errors only; nothing opened). */
typedef struct pl_args {
    const char *dir, *run, *prefix;
    uint64_t seed, variants;
    int have_seed, have_variants, mode;
    wpin pins[64];
    size_t npins;
    size_t dl; /* DIR's length without trailing slashes */
} pl_args;

/* Returns 1 when the command is done (--help, --version), 0 to go on. */
static int parse_args(int argc, char **argv, pl_args *a) {
    const char *v;
    memset(a, 0, sizeof *a);
    a->mode = MODE_ROLLBACK;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(argv[i], "--version")) {
            version_print(stdout, "powerloss");
            return 1;
        } else if ((v = opt_val(argc, argv, &i, "--run-dir"))) {
            a->run = v;
        } else if ((v = opt_val(argc, argv, &i, "--seed"))) {
            if (!parse_u64(v, &a->seed)) die_usage("bad --seed '%s'", v);
            a->have_seed = 1;
        } else if ((v = opt_val(argc, argv, &i, "--variants"))) {
            if (!parse_u64(v, &a->variants) || a->variants < 1 || a->variants > 10000)
                die_usage("bad --variants '%s' (1..10000)", v);
            a->have_variants = 1;
        } else if ((v = opt_val(argc, argv, &i, "--mode"))) {
            a->mode = -1;
            for (int m = 0; m < 4; m++)
                if (!strcmp(v, mode_names[m])) a->mode = m;
            if (a->mode < 0) die_usage("bad --mode '%s'", v);
        } else if ((v = opt_val(argc, argv, &i, "--pin"))) {
            if (a->npins == sizeof a->pins / sizeof a->pins[0]) die_usage("more than %zu --pin", a->npins);
            if (!parse_pin(v, &a->pins[a->npins])) die_usage("bad --pin '%s' (NAME@OFFSET:BACK=rollback|tear:HEX)", v);
            a->npins++;
        } else if ((v = opt_val(argc, argv, &i, "--out-prefix"))) {
            if (!*v) die_usage("empty --out-prefix");
            a->prefix = v;
        } else if (argv[i][0] == '-') {
            die_usage("unknown option '%s'", argv[i]);
        } else if (!a->dir) {
            a->dir = argv[i];
        } else {
            die_usage("more than one directory ('%s', '%s')", a->dir, argv[i]);
        }
    }
    if (!a->dir) die_usage("no database directory given");
    if (!a->run) die_usage("--run-dir is required");
    if (!a->have_seed) die_usage("--seed is required");
    if (a->prefix && !a->have_variants) die_usage("--out-prefix needs --variants");
    return 0;
}

/* Variant K's directory: P{K} with --out-prefix, else DIR.pl{K}. */
static void variant_path(const pl_args *a, uint64_t k, char *out, size_t cap) {
    if (a->prefix)
        snprintf(out, cap, "%s%" PRIu64, a->prefix, k);
    else
        snprintf(out, cap, "%.*s.pl%" PRIu64, (int)a->dl, a->dir, k);
}

/* DIR and RUN are directories and no variant's directory exists yet;
 * sets a->dl. */
static void check_dirs(pl_args *a) {
    struct stat st;
    if (stat(a->dir, &st) != 0) die_usage("%s: %s", a->dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) die_usage("%s is not a directory", a->dir);
    if (stat(a->run, &st) != 0 || !S_ISDIR(st.st_mode)) die_usage("run directory %s is not a directory", a->run);
    a->dl = strlen(a->dir);
    while (a->dl > 1 && a->dir[a->dl - 1] == '/') a->dl--;
    if (a->dl + 32 >= PATH_MAX) die_usage("directory name too long");
    char outp[PATH_MAX];
    for (uint64_t k = 0; k < a->variants; k++) {
        variant_path(a, k, outp, sizeof outp);
        if (lstat(outp, &st) == 0) die_usage("%s exists: remove it first (variants are never overwritten)", outp);
    }
}

/* A live process would go on writing into whatever this step makes;
 * the engine's flock on LOCK dies with its holder.  Returns the
 * descriptor holding DIR/LOCK while DIR changes in place, else -1. */
static int lock_dir(const pl_args *a) {
    char lockpath[PATH_MAX];
    snprintf(lockpath, sizeof lockpath, "%.*s/LOCK", (int)a->dl, a->dir);
    int lockfd = open(lockpath, O_RDONLY | O_CLOEXEC);
    if (lockfd >= 0) {
        if (flock(lockfd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            close(lockfd);
            if (e == EWOULDBLOCK)
                die_io("refusing: %s is held: a process still has the database open (kill it first)", lockpath);
            die_io("flock %s: %s", lockpath, strerror(e));
        }
        /* In place, hold it while the directory changes so no engine
         * opens a half-made state; copies leave DIR alone. */
        if (a->have_variants) {
            close(lockfd);
            lockfd = -1;
        }
    } else if (errno != ENOENT) {
        die_io("open %s: %s", lockpath, strerror(errno));
    }
    return lockfd;
}

/* Variant K: DIR itself, or a copy of it, put into one legal state and
 * its counts printed. */
static void make_variant(const pl_args *a, uint64_t k, const journal_view *jv, const uint64_t *wid,
                         const uint32_t *wback, flt_ledger *ledger) {
    const char *root = a->dir;
    char rootbuf[PATH_MAX];
    if (a->have_variants) {
        variant_path(a, k, rootbuf, sizeof rootbuf);
        copy_tree(a->dir, rootbuf);
        root = rootbuf;
    }
    variant var;
    memset(&var, 0, sizeof var);
    var.root = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (var.root < 0) die_io("open %s: %s", root, strerror(errno));
    var.root_path = root;
    var.run = a->run;
    var.index = (unsigned)k;
    var.mode = a->mode;
    var.ledger = ledger;
    uint64_t vs = variant_seed(a->seed, (unsigned)k);
    xo_seed(&var.rng, vs);
    var.seed = vs;
    var.wid = wid;
    var.wback = wback;
    var.wpins = a->pins;
    var.nwpins = a->npins;
    if (!a->have_variants) g_changing = root;
    run_variant(&var, jv);
    printf("powerloss: %s: mode %s, seed %" PRIu64 " variant %u: %" PRIu64 " writes journaled, %" PRIu64
           " unsynced, %" PRIu64 " rolled back, %" PRIu64 " torn, %" PRIu64 " kept; %" PRIu64
           " unsynced metadata operations, %" PRIu64 " undone; %" PRIu64 " dropped by failed fsyncs\n",
           root, mode_names[a->mode], a->seed, (unsigned)k, jv->v.writes, var.st.unsynced, var.st.rolled_back,
           var.st.torn, var.st.kept_unsynced, var.st.meta_unsynced, var.st.meta_undone, var.st.dropped);
    close(var.root);
    variant_free(&var);
}

int main(int argc, char **argv) {
    pl_args a;
    if (parse_args(argc, argv, &a)) return 0;
    check_dirs(&a);
    int lockfd = lock_dir(&a);

    journal_view jv;
    journal_load(a.run, &jv);
    if (jv.v.torn)
        printf("powerloss: journal: ignoring %zu bytes of torn tail (%" PRIu64 " records, %" PRIu64 " sessions)\n",
               jv.v.torn, jv.v.records, jv.v.sessions);
    uint32_t *wback = NULL;
    uint64_t *wid = write_ids(&jv, &wback);

    flt_ledger *ledger = NULL;
    int rc = flt_ledger_open(a.run, &ledger);
    if (rc) die_io("cannot open %s/ledger: %s", a.run, strerror(-rc));

    uint64_t nvar = a.have_variants ? a.variants : 1;
    for (uint64_t k = 0; k < nvar; k++) make_variant(&a, k, &jv, wid, wback, ledger);
    flt_ledger_close(ledger);
    if (!a.have_variants) journal_reset(a.run);
    if (jv.map) munmap(jv.map, jv.size);
    free(wid);
    free(wback);
    flt_jr_view_free(&jv.v);
    if (lockfd >= 0) close(lockfd);
    return 0;
}
