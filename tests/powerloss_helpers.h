/*
 * powerloss_helpers.h -- what the test_powerloss_*.c suites share (one
 * file, test_powerloss.c, before the suite was split): the fixture (a
 * database dir, a run dir, an open journal), journaled operations done by
 * hand, running build/powerloss, the ledger read back and the data model with
 * its judges (E L S D). All functions are static inline: a suite that uses
 * none of one compiles without a warning.  The suites' description:
 *
 * test_powerloss_*.c -- the crash-simulation journal (faults/journal.c) and
 * the power-loss step (build/powerloss) make only states a power cut
 * could leave, restore exactly what they say they restore, never touch
 * what was synced, and the engine survives every such state.
 *
 * Most tests use no engine at all: they drive the journal with synthetic
 * eng_io_op sequences on real files (the test opens the files, calls
 * flt_journal_before, does the pwrite / fsync / rename itself, calls
 * flt_journal_after), keep a model of every write, run build/powerloss,
 * and judge each resulting directory:
 *   E  exact: every file equals the model replayed with the decisions the
 *      ledger lists (writes without a ledger line kept; "rollback" lines
 *      drop a write; "tear" lines keep the units of their bitmap);
 *   L  legal, without the ledger: every byte is the synced value or the
 *      value of an unsynced write that follows the last synced write of
 *      that byte (or zero / absent where only unsynced writes extended
 *      the file), and the size lies between the synced size and the
 *      largest size written;
 *   S  synced writes and durable metadata never have a ledger line;
 *   D  variants of one crash differ, and each undo decision is visible.
 * The end-to-end test runs the engine in a child with hooks that call the
 * journal, SIGKILLs it during a commit-sync load, makes power-loss states
 * (rollback, tear, mixed) and reopens each: every acknowledged key must be
 * there with its value, the keys must be a prefix, verify must be clean.
 *
 * Tests:
 *   rollback_variants_restore_exact_old_bytes      E L S D, 8 variants x 3 seeds
 *   tear_variants_keep_sector_subsets              E L S D, torn at 512-byte units
 *   mixed_variants_are_legal                       E L S D
 *   later_kept_write_wins_over_earlier_rollback    overlap, extension, holes (PL1, PL2)
 *   unsynced_metadata_undone_durable_kept          create/rename/unlink/truncate, S D,
 *                                                  PL4, journal.d keeps only what may be needed
 *   in_place_applies_and_resets_the_journal        E L, journal reset, second run no-op
 *   keep_mode_changes_nothing
 *   refuses_while_lock_is_held                     exit 3, nothing changed
 *   usage_errors_exit_2_and_change_nothing
 *   torn_journal_tail_is_ignored                   torn record, junk, a new session after
 *                                                  it; damage mid-session refused (exit 3)
 *   skipped_and_outside_operations_are_not_journaled
 *   reset_forgets_the_journal
 *   concurrent_journaling_is_whole_and_ordered     8 threads, each one's synced pages kept
 *   engine_survives_every_power_loss_state         per I/O backend, end to end
 *   dropped_writes_stay_dropped_in_every_variant   failed fsyncs drop unsynced writes
 *                                                  (flt_journal_drop_unsynced) mid-run; each
 *                                                  drop exact on the spot; then E L S D, PL6
 *   drop_spares_in_flight_truncated_and_synced     in-flight write, truncate, rename, other
 *                                                  file, outside path; power loss after
 * Seeds derive from CU_SEED (environment); messages name them.
 *
 * build/powerloss is found as $BUILD/powerloss (BUILD defaults to build),
 * relative to the repository root the suite runs from.
 */
#ifndef TESTS_POWERLOSS_HELPERS_H
#define TESTS_POWERLOSS_HELPERS_H

#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>

#include "crashutil.h"
#include "journal.h"
#include "ledger.h"

extern char **environ;

#define T_OPTS .timeout = 300, .fini = cu_fini

/* ---- fixture: a database dir, a run dir, an open journal ---------------------- */

typedef struct fx {
    char root[64];
    char db[128];
    char run[128];
    char log[160];
    flt_journal *j;
} fx;

static inline void fx_init(fx *f) {
    memset(f, 0, sizeof *f);
    snprintf(f->root, sizeof f->root, "%s", tu_tmpdir());
    snprintf(f->db, sizeof f->db, "%s/db", f->root);
    snprintf(f->run, sizeof f->run, "%s/run", f->root);
    snprintf(f->log, sizeof f->log, "%s/powerloss.out", f->root);
    cr_assert(mkdir(f->db, 0755) == 0);
    cr_assert(mkdir(f->run, 0755) == 0);
    char p[256];
    snprintf(p, sizeof p, "%s/wal", f->db);
    cr_assert(mkdir(p, 0755) == 0);
}

static inline void fx_open_journal(fx *f) {
    int rc = flt_journal_open(f->run, f->db, &f->j);
    cr_assert_eq(rc, 0, "flt_journal_open: %s", strerror(-rc));
}

static inline void fx_close_journal(fx *f) {
    flt_journal_close(f->j);
    f->j = NULL;
}

/* "DB/NAME" in one of a few rotating buffers (several per expression). */
static inline const char *dbp(const fx *f, const char *name) {
    static char buf[8][512];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 512, "%s/%s", f->db, name);
    return b;
}

/* A file made before the journal starts (its content is the "synced"
 * starting point). */
static inline void put_file(const fx *f, const char *name, const void *data, size_t len) {
    int fd = open(dbp(f, name), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert(fd >= 0, "create %s: %s", name, strerror(errno));
    cr_assert_eq(write(fd, data, len), (ssize_t)len);
    cr_assert(fsync(fd) == 0);
    close(fd);
}

/* ---- journaled operations, done by hand as the engine's io.c would ---------- */

static inline void j_write(fx *f, const char *name, uint64_t off, const void *buf, size_t len) {
    const char *p = dbp(f, name);
    int fd = open(p, O_WRONLY);
    cr_assert(fd >= 0, "open %s: %s", p, strerror(errno));
    eng_io_op op = {.kind = ENG_IO_WRITE, .file_id = 0, .path = p, .buf = (void *)buf, .offset = off, .len = len};
    int rc = flt_journal_before(f->j, &op);
    cr_assert_eq(rc, 0, "journal before write %s: %s", p, strerror(-rc));
    op.result = pwrite(fd, buf, len, (off_t)off);
    cr_assert_eq(op.result, (int64_t)len);
    flt_journal_after(f->j, &op);
    close(fd);
}

static inline void j_sync(fx *f, const char *name) {
    const char *p = dbp(f, name);
    int fd = open(p, O_RDONLY);
    cr_assert(fd >= 0, "open %s: %s", p, strerror(errno));
    eng_io_op op = {.kind = ENG_IO_SYNC, .path = p};
    cr_assert_eq(flt_journal_before(f->j, &op), 0);
    op.result = fsync(fd) == 0 ? 0 : -errno;
    flt_journal_after(f->j, &op);
    close(fd);
}

static inline void j_dirsync(fx *f, const char *name) {
    const char *p = strcmp(name, ".") ? dbp(f, name) : f->db;
    int fd = open(p, O_RDONLY | O_DIRECTORY);
    cr_assert(fd >= 0, "open %s: %s", p, strerror(errno));
    eng_io_op op = {.kind = ENG_IO_DIRSYNC, .file_id = -1, .path = p};
    cr_assert_eq(flt_journal_before(f->j, &op), 0);
    op.result = fsync(fd) == 0 ? 0 : -errno;
    flt_journal_after(f->j, &op);
    close(fd);
}

static inline void j_create(fx *f, const char *name) {
    const char *p = dbp(f, name);
    eng_io_op op = {.kind = ENG_IO_CREATE, .path = p};
    cr_assert_eq(flt_journal_before(f->j, &op), 0);
    int fd = open(p, O_RDWR | O_CREAT | O_EXCL, 0644);
    cr_assert(fd >= 0, "create %s: %s", p, strerror(errno));
    op.result = 0;
    flt_journal_after(f->j, &op);
    close(fd);
}

static inline void j_rename(fx *f, const char *from, const char *to) {
    const char *a = dbp(f, from), *b = dbp(f, to);
    eng_io_op op = {.kind = ENG_IO_RENAME, .file_id = -1, .path = a, .path2 = b};
    cr_assert_eq(flt_journal_before(f->j, &op), 0);
    op.result = rename(a, b) == 0 ? 0 : -errno;
    cr_assert_eq(op.result, 0, "rename %s %s", a, b);
    flt_journal_after(f->j, &op);
}

static inline void j_unlink(fx *f, const char *name) {
    const char *p = dbp(f, name);
    eng_io_op op = {.kind = ENG_IO_UNLINK, .file_id = -1, .path = p};
    cr_assert_eq(flt_journal_before(f->j, &op), 0);
    op.result = unlink(p) == 0 ? 0 : -errno;
    flt_journal_after(f->j, &op);
}

static inline void j_truncate(fx *f, const char *name, uint64_t size) {
    const char *p = dbp(f, name);
    int fd = open(p, O_WRONLY);
    cr_assert(fd >= 0);
    eng_io_op op = {.kind = ENG_IO_TRUNCATE, .path = p, .offset = size};
    cr_assert_eq(flt_journal_before(f->j, &op), 0);
    op.result = ftruncate(fd, (off_t)size) == 0 ? 0 : -errno;
    flt_journal_after(f->j, &op);
    close(fd);
}

/* ---- running build/powerloss ------------------------------------------------------ */

static inline const char *pl_path(void) {
    static char p[512];
    const char *b = getenv("BUILD");
    snprintf(p, sizeof p, "%s/powerloss", b && *b ? b : "build");
    return p;
}

/* Run powerloss with the NULL-terminated arguments; output to F->log.
 * Returns the exit code (128 + signal if killed). */
static inline int run_pl(const fx *f, ...) {
    const char *argv[32];
    int n = 0;
    argv[n++] = pl_path();
    va_list ap;
    va_start(ap, f);
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && n < 31) argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, f->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    cr_assert_eq(rc, 0, "spawn %s: %s (run the suite from the repository root, or set BUILD)", argv[0], strerror(rc));
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* The tool's output (for messages). */
static inline const char *pl_out(const fx *f) {
    static char buf[4096];
    int fd = open(f->log, O_RDONLY);
    buf[0] = 0;
    if (fd >= 0) {
        ssize_t n = read(fd, buf, sizeof buf - 1);
        buf[n > 0 ? n : 0] = 0;
        close(fd);
    }
    return buf;
}

static inline void pl_ok(const fx *f, int rc) { cr_assert_eq(rc, 0, "powerloss exited %d:\n%s", rc, pl_out(f)); }

/* ---- the ledger, read back ----------------------------------------------------------- */

typedef struct lrec {
    char point[64];
    char cls[32];
    char file[256];
    int64_t off, len;
    int variant;
    int64_t write_no; /* "write=N": rank among the journal's writes, or -1 */
    uint64_t unit;
    char kept[300];
    char to[256];
} lrec;

#define MAX_LREC 4096
typedef struct lrecs {
    lrec *r;
    size_t n;
} lrecs;

/* The string or number after "KEY": in LINE into OUT; 0 if absent. */
static inline int json_field(const char *line, const char *key, char *out, size_t cap) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p) return 0;
    p += strlen(pat);
    size_t n = 0;
    if (*p == '"') {
        for (p++; *p && *p != '"' && n + 1 < cap; p++) {
            if (*p == '\\' && p[1]) p++;
            out[n++] = *p;
        }
    } else {
        while (*p && *p != ',' && *p != '}' && n + 1 < cap) out[n++] = *p++;
    }
    out[n] = 0;
    return 1;
}

/* The value after "WORD=" in a note, up to a space. */
static inline int note_field(const char *note, const char *word, char *out, size_t cap) {
    char pat[32];
    snprintf(pat, sizeof pat, "%s=", word);
    const char *p = note;
    size_t wl = strlen(pat);
    while ((p = strstr(p, pat)) != NULL) {
        if (p == note || p[-1] == ' ') break;
        p += wl;
    }
    if (!p) return 0;
    p += wl;
    size_t n = 0;
    while (*p && *p != ' ' && n + 1 < cap) out[n++] = *p++;
    out[n] = 0;
    return 1;
}

static inline void lrec_cb(void *ctx, const char *line) {
    lrecs *L = ctx;
    char phase[32], note[800], num[32];
    if (!json_field(line, "phase", phase, sizeof phase) || strcmp(phase, "powerloss")) return;
    cr_assert(L->n < MAX_LREC);
    lrec *r = &L->r[L->n++];
    memset(r, 0, sizeof *r);
    json_field(line, "point", r->point, sizeof r->point);
    json_field(line, "class", r->cls, sizeof r->cls);
    json_field(line, "file", r->file, sizeof r->file);
    r->off = json_field(line, "offset", num, sizeof num) ? strtoll(num, NULL, 10) : -1;
    r->len = json_field(line, "len", num, sizeof num) ? strtoll(num, NULL, 10) : -1;
    note[0] = 0;
    json_field(line, "note", note, sizeof note);
    r->variant = note_field(note, "variant", num, sizeof num) ? atoi(num) : -1;
    r->unit = note_field(note, "unit", num, sizeof num) ? strtoull(num, NULL, 10) : 0;
    r->write_no = note_field(note, "write", num, sizeof num) ? strtoll(num, NULL, 10) : -1;
    note_field(note, "kept", r->kept, sizeof r->kept);
    note_field(note, "to", r->to, sizeof r->to);
}

static inline void ledger_load(const fx *f, lrecs *L) {
    if (!L->r) L->r = calloc(MAX_LREC, sizeof *L->r);
    cr_assert(L->r);
    L->n = 0;
    cr_assert_eq(flt_ledger_read(f->run, lrec_cb, L), 0);
}

/* Start the ledger afresh (between power-loss runs of one test, whose
 * variant numbers would otherwise mix). */
static inline void ledger_clear(const fx *f) {
    char p[256];
    snprintf(p, sizeof p, "%s/ledger", f->run);
    unlink(p);
}

/* Does variant V have a line at POINT for FILE? */
static inline int ledger_has(const lrecs *L, int v, const char *point, const char *file) {
    for (size_t i = 0; i < L->n; i++)
        if (L->r[i].variant == v && !strcmp(L->r[i].point, point) && !strcmp(L->r[i].file, file)) return 1;
    return 0;
}

/* ---- the data model ----------------------------------------------------------------------- */

#define MAXF 4
#define MAXW 512
#define FMAX (256u << 10)

typedef struct mwrite {
    int file;
    uint64_t off;
    size_t len;
    uint8_t *data;
    int synced;
    int dropped; /* rolled back by flt_journal_drop_unsynced (a failed fsync) */
} mwrite;

typedef struct model {
    int nf;
    char name[MAXF][32];
    uint8_t *init[MAXF];
    size_t init_size[MAXF];
    size_t size[MAXF]; /* as the test wrote it (no power loss) */
    mwrite w[MAXW];
    int nw;
} model;

static inline int m_file(model *m, const char *name, size_t size, uint64_t seed) {
    int i = m->nf++;
    snprintf(m->name[i], sizeof m->name[i], "%s", name);
    m->init[i] = calloc(1, FMAX);
    tu_fill(m->init[i], size, seed);
    m->init_size[i] = m->size[i] = size;
    return i;
}

static inline void m_write(fx *f, model *m, int file, uint64_t off, size_t len, uint64_t seed) {
    cr_assert(m->nw < MAXW && off + len <= FMAX);
    mwrite *w = &m->w[m->nw++];
    *w = (mwrite){file, off, len, malloc(len), 0, 0};
    tu_fill(w->data, len, seed);
    j_write(f, m->name[file], off, w->data, len);
    if (off + len > m->size[file]) m->size[file] = off + len;
}

static inline void m_sync(fx *f, model *m, int file) {
    j_sync(f, m->name[file]);
    for (int i = 0; i < m->nw; i++)
        if (m->w[i].file == file && !m->w[i].dropped) m->w[i].synced = 1;
}

static inline void m_free(model *m) {
    for (int i = 0; i < m->nf; i++) free(m->init[i]);
    for (int i = 0; i < m->nw; i++) free(m->w[i].data);
}

enum { D_KEEP, D_ROLLBACK, D_TEAR };
typedef struct decision {
    int d;
    uint64_t unit;
    uint8_t kept[1100];
} decision;

/* Decisions of variant V from the ledger: each line names its write by
 * rank ("write=N"; the model's writes are the journal's, in order), and
 * must agree with the write's file, offset and length.  Lines come newest
 * write first (the backward walk).  S: a line for a synced write fails. */
static inline void decisions_of(const model *m, const lrecs *L, int v, decision *dec) {
    for (int i = 0; i < m->nw; i++) dec[i].d = m->w[i].dropped ? D_ROLLBACK : D_KEEP;
    int64_t last = INT64_MAX;
    for (size_t k = 0; k < L->n; k++) {
        const lrec *r = &L->r[k];
        if (r->variant != v) continue;
        int tear = !strcmp(r->point, "powerloss/tear");
        if (!tear && strcmp(r->point, "powerloss/rollback")) continue;
        int found = (int)r->write_no;
        cr_assert(r->write_no >= 0 && r->write_no < m->nw, "variant %d: ledger line %s %s@%lld+%lld: write=%lld", v,
                  r->point, r->file, (long long)r->off, (long long)r->len, (long long)r->write_no);
        const mwrite *w = &m->w[found];
        cr_assert(!strcmp(m->name[w->file], r->file) && (int64_t)w->off == r->off && (int64_t)w->len == r->len,
                  "variant %d: ledger line %s %s@%lld+%lld names write %d, which is %s@%llu+%zu", v, r->point, r->file,
                  (long long)r->off, (long long)r->len, found, m->name[w->file], (unsigned long long)w->off, w->len);
        cr_assert(r->write_no < last, "variant %d: ledger lines not newest first", v);
        last = r->write_no;
        cr_assert(!m->w[found].synced, "S: variant %d: %s of synced write #%d (%s@%llu+%zu)", v, r->point, found,
                  r->file, (unsigned long long)m->w[found].off, m->w[found].len);
        cr_assert(!m->w[found].dropped, "PL6: variant %d: %s of write #%d, which a failed fsync dropped", v, r->point,
                  found);
        cr_assert_str_eq(r->cls, tear ? "torn_write" : "power_loss");
        decision *d = &dec[found];
        d->d = tear ? D_TEAR : D_ROLLBACK;
        if (tear) {
            cr_assert(r->unit >= 512 && (r->unit & (r->unit - 1)) == 0, "unit %llu", (unsigned long long)r->unit);
            d->unit = r->unit;
            memset(d->kept, 0, sizeof d->kept);
            size_t nd = strlen(r->kept);
            for (size_t c = 0; c < nd; c++) {
                char ch = r->kept[c];
                int x = ch <= '9' ? ch - '0' : ch - 'a' + 10;
                for (int b = 0; b < 4 && 4 * c + (size_t)b < sizeof d->kept; b++)
                    d->kept[4 * c + (size_t)b] = (x >> b) & 1;
            }
        }
    }
}

/* E: the model replayed with DEC, for FILE, into OUT (FMAX bytes); returns
 * the size. */
static inline size_t expect_file(const model *m, const decision *dec, int file, uint8_t *out) {
    memcpy(out, m->init[file], FMAX);
    size_t size = m->init_size[file];
    for (int i = 0; i < m->nw; i++) {
        const mwrite *w = &m->w[i];
        if (w->file != file || dec[i].d == D_ROLLBACK || w->dropped) continue;
        uint64_t end = w->off + w->len;
        if (dec[i].d == D_KEEP) {
            memcpy(out + w->off, w->data, w->len);
            if (end > size) size = end;
            continue;
        }
        uint64_t u = dec[i].unit, first = w->off / u;
        for (uint64_t s = first; s * u < end; s++) {
            if (!dec[i].kept[s - first]) continue;
            uint64_t a = s * u > w->off ? s * u : w->off, b = (s + 1) * u < end ? (s + 1) * u : end;
            memcpy(out + a, w->data + (a - w->off), b - a);
            if (b > size) size = b;
        }
    }
    return size;
}

/* Read FILE of the directory DIR (up to FMAX bytes); returns its size, or
 * -1 if missing. */
static inline ssize_t read_in(const char *dir, const char *name, uint8_t *buf) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_RDONLY);
    if (fd < 0) return -1;
    struct stat st;
    cr_assert(fstat(fd, &st) == 0);
    cr_assert((size_t)st.st_size <= FMAX, "%s grew to %lld", p, (long long)st.st_size);
    memset(buf, 0, FMAX);
    size_t got = cu_read_all(fd, buf, (size_t)st.st_size);
    close(fd);
    cr_assert_eq(got, (size_t)st.st_size);
    return (ssize_t)got;
}

static inline size_t first_diff(const uint8_t *a, const uint8_t *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return i;
    return n;
}

/* The fsync of FILE failed: drop its unsynced writes through the journal
 * (ledger lines into LEDGER).  Every unsynced write of the file must be
 * rolled back, one line each, and the file must be exactly what its
 * synced writes made. */
static inline void m_drop(fx *f, model *m, int file, flt_ledger *ledger) {
    int want = 0;
    for (int i = 0; i < m->nw; i++)
        if (m->w[i].file == file && !m->w[i].synced && !m->w[i].dropped) want++;
    uint64_t n = 99;
    int rc = flt_journal_drop_unsynced(f->j, dbp(f, m->name[file]), ledger, NULL, &n);
    cr_assert_eq(rc, 0, "drop %s: %s", m->name[file], strerror(-rc));
    cr_assert_eq(n, (uint64_t)want, "drop %s: %llu writes rolled back, %d were unsynced", m->name[file],
                 (unsigned long long)n, want);
    for (int i = 0; i < m->nw; i++)
        if (m->w[i].file == file && !m->w[i].synced) m->w[i].dropped = 1;
    static uint8_t want_b[FMAX], got[FMAX];
    decision *dec = calloc((size_t)m->nw + 1, sizeof *dec);
    size_t ws = expect_file(m, dec, file, want_b); /* dropped writes count as rolled back */
    ssize_t gs = read_in(f->db, m->name[file], got);
    cr_assert_eq(gs, (ssize_t)ws, "drop: %s is %zd bytes, its synced writes make %zu", m->name[file], gs, ws);
    size_t d = first_diff(want_b, got, ws);
    cr_assert_eq(d, ws, "drop: %s byte %zu is 0x%02x, synced 0x%02x", m->name[file], d, got[d], want_b[d]);
    free(dec);
}

/* L: FILE of DIR is a legal power-loss state of the model, judged byte by
 * byte without the ledger. */
static inline void assert_legal(const model *m, int file, const char *dir, const char *what) {
    static uint8_t got[FMAX];
    ssize_t gs = read_in(dir, m->name[file], got);
    cr_assert(gs >= 0, "%s: %s missing", what, m->name[file]);
    /* The synced state, and for each byte the index of its last synced write. */
    static uint8_t syn[FMAX];
    static int last_syn[FMAX];
    memcpy(syn, m->init[file], FMAX);
    size_t ssize = m->init_size[file], maxsize = m->init_size[file];
    for (size_t x = 0; x < FMAX; x++) last_syn[x] = -1;
    for (int i = 0; i < m->nw; i++) {
        const mwrite *w = &m->w[i];
        if (w->file != file || w->dropped) continue;
        if (w->off + w->len > maxsize) maxsize = w->off + w->len;
        if (!w->synced) continue;
        memcpy(syn + w->off, w->data, w->len);
        for (size_t x = w->off; x < w->off + w->len; x++) last_syn[x] = i;
        if (w->off + w->len > ssize) ssize = w->off + w->len;
    }
    cr_assert((size_t)gs >= ssize && (size_t)gs <= maxsize, "L: %s: %s is %zd bytes; synced size %zu, largest %zu",
              what, m->name[file], gs, ssize, maxsize);
    for (size_t x = 0; x < (size_t)gs; x++) {
        if (got[x] == syn[x] && (x < ssize || syn[x] == 0)) continue;
        if (x >= ssize && got[x] == 0) continue; /* absent: a hole or a truncated tail */
        int ok = 0;
        for (int i = m->nw - 1; i > last_syn[x] && !ok; i--) {
            const mwrite *w = &m->w[i];
            if (w->file == file && !w->dropped && x >= w->off && x < w->off + w->len && w->data[x - w->off] == got[x])
                ok = 1;
        }
        cr_assert(ok, "L: %s: %s byte %zu = 0x%02x is neither synced (0x%02x) nor from an unsynced write after it",
                  what, m->name[file], x, got[x], syn[x]);
    }
}

/* E + L for every file of the model in variant V at DIR. */
static inline void assert_variant(const model *m, const lrecs *L, int v, const char *dir) {
    decision *dec = calloc((size_t)m->nw + 1, sizeof *dec);
    static uint8_t want[FMAX], got[FMAX];
    decisions_of(m, L, v, dec);
    char what[300];
    snprintf(what, sizeof what, "variant %d (%s)", v, dir);
    for (int fi = 0; fi < m->nf; fi++) {
        size_t ws = expect_file(m, dec, fi, want);
        ssize_t gs = read_in(dir, m->name[fi], got);
        cr_assert_eq(gs, (ssize_t)ws, "E: %s: %s is %zd bytes, the ledger's decisions make %zu", what, m->name[fi], gs,
                     ws);
        size_t d = first_diff(want, got, ws);
        cr_assert_eq(d, ws, "E: %s: %s differs at byte %zu (0x%02x, expected 0x%02x)", what, m->name[fi], d, got[d],
                     want[d]);
        assert_legal(m, fi, dir, what);
    }
    free(dec);
}

/* Counts of variant V's decisions. */
static inline void count_decisions(const model *m, const lrecs *L, int v, int *nroll, int *ntear) {
    decision *dec = calloc((size_t)m->nw + 1, sizeof *dec);
    decisions_of(m, L, v, dec);
    *nroll = *ntear = 0;
    for (int i = 0; i < m->nw; i++) {
        *nroll += dec[i].d == D_ROLLBACK;
        *ntear += dec[i].d == D_TEAR;
    }
    free(dec);
}

/* A random workload on two pre-existing files: page writes and odd ones,
 * overlapping, some extending the file or leaving a hole, syncs between.
 * With DROPS (a ledger), some fsyncs fail instead and drop their file's
 * unsynced writes (flt_journal_drop_unsynced), anywhere in the run. */
static inline void random_workload(fx *f, model *m, uint64_t seed, int nops, flt_ledger *drops) {
    tu_rng rng = {seed};
    m_file(m, "data", 64u << 10, seed ^ 1);
    m_file(m, "wal/0000000000000000", 16u << 10, seed ^ 2);
    for (int i = 0; i < m->nf; i++) put_file(f, m->name[i], m->init[i], m->init_size[i]);
    fx_open_journal(f);
    for (int i = 0; i < nops; i++) {
        int file = (int)tu_below(&rng, 2);
        uint64_t r = tu_below(&rng, 10);
        /* Syncs only in the first two thirds: the rest stays unsynced. */
        if (r < 2 && tu_below(&rng, 3) == 0) {
            if (drops && tu_below(&rng, 2) == 0) {
                m_drop(f, m, file, drops);
                continue;
            }
            if (i < 2 * nops / 3) {
                m_sync(f, m, file);
                continue;
            }
        }
        size_t cur = m->size[file];
        uint64_t off;
        size_t len;
        if (r < 6) { /* a page */
            len = 8192;
            off = tu_below(&rng, cur / 8192 + 2) * 8192;
        } else if (r < 9) { /* odd range, maybe past the end */
            len = (size_t)tu_range(&rng, 1, 12000);
            off = tu_below(&rng, cur + 4000);
        } else { /* a hole */
            len = (size_t)tu_range(&rng, 100, 3000);
            off = cur + tu_range(&rng, 1, 5000);
        }
        if (off + len > FMAX - 1) continue;
        m_write(f, m, file, off, len, seed * 31 + (uint64_t)i);
    }
    fx_close_journal(f);
}

/* ---- a file's contents as a string, its size (UINT64_MAX: absent) --------- */

static inline void read_str(const char *dir, const char *name, char *out, size_t cap) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_RDONLY);
    if (fd < 0) {
        snprintf(out, cap, "<missing>");
        return;
    }
    ssize_t n = read(fd, out, cap - 1);
    out[n > 0 ? n : 0] = 0;
    close(fd);
}

static inline uint64_t size_of(const char *dir, const char *name) {
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0 ? (uint64_t)st.st_size : UINT64_MAX;
}

#endif /* TESTS_POWERLOSS_HELPERS_H */
