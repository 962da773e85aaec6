/*
 * test_powerloss.c -- the crash-simulation journal (faults/journal.c) and
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
 *   later_kept_write_wins_over_earlier_rollback    overlap, extension, holes (P1, P2)
 *   unsynced_metadata_undone_durable_kept          create/rename/unlink/truncate, S D,
 *                                                  P4, journal.d keeps only what may be needed
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
 *                                                  drop exact on the spot; then E L S D, P6
 *   drop_spares_in_flight_truncated_and_synced     in-flight write, truncate, rename, other
 *                                                  file, outside path; power loss after
 * Seeds derive from CU_SEED (environment); messages name them.
 *
 * build/powerloss is found as $BUILD/powerloss (BUILD defaults to build),
 * relative to the repository root the suite runs from.
 */
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

static void fx_init(fx *f) {
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

static void fx_open_journal(fx *f) {
    int rc = flt_journal_open(f->run, f->db, &f->j);
    cr_assert_eq(rc, 0, "flt_journal_open: %s", strerror(-rc));
}

static void fx_close_journal(fx *f) {
    flt_journal_close(f->j);
    f->j = NULL;
}

/* "DB/NAME" in one of a few rotating buffers (several per expression). */
static const char *dbp(const fx *f, const char *name) {
    static char buf[8][512];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 512, "%s/%s", f->db, name);
    return b;
}

/* A file made before the journal starts (its content is the "synced"
 * starting point). */
static void put_file(const fx *f, const char *name, const void *data, size_t len) {
    int fd = open(dbp(f, name), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert(fd >= 0, "create %s: %s", name, strerror(errno));
    cr_assert_eq(write(fd, data, len), (ssize_t)len);
    cr_assert(fsync(fd) == 0);
    close(fd);
}

/* ---- journaled operations, done by hand as the engine's io.c would ---------- */

static void j_write(fx *f, const char *name, uint64_t off, const void *buf, size_t len) {
    const char *p = dbp(f, name);
    int fd = open(p, O_WRONLY);
    cr_assert(fd >= 0, "open %s: %s", p, strerror(errno));
    eng_io_op op = { .kind = ENG_IO_WRITE, .file_id = 0, .path = p, .buf = (void *)buf, .offset = off, .len = len };
    int rc = flt_journal_before(f->j, &op);
    cr_assert_eq(rc, 0, "journal before write %s: %s", p, strerror(-rc));
    op.result = pwrite(fd, buf, len, (off_t)off);
    cr_assert_eq(op.result, (int64_t)len);
    flt_journal_after(f->j, &op);
    close(fd);
}

static void j_sync(fx *f, const char *name) {
    const char *p = dbp(f, name);
    int fd = open(p, O_RDONLY);
    cr_assert(fd >= 0, "open %s: %s", p, strerror(errno));
    eng_io_op op = { .kind = ENG_IO_SYNC, .path = p };
    cr_assert_eq(flt_journal_before(f->j, &op), 0);
    op.result = fsync(fd) == 0 ? 0 : -errno;
    flt_journal_after(f->j, &op);
    close(fd);
}

static void j_dirsync(fx *f, const char *name) {
    const char *p = strcmp(name, ".") ? dbp(f, name) : f->db;
    int fd = open(p, O_RDONLY | O_DIRECTORY);
    cr_assert(fd >= 0, "open %s: %s", p, strerror(errno));
    eng_io_op op = { .kind = ENG_IO_DIRSYNC, .file_id = -1, .path = p };
    cr_assert_eq(flt_journal_before(f->j, &op), 0);
    op.result = fsync(fd) == 0 ? 0 : -errno;
    flt_journal_after(f->j, &op);
    close(fd);
}

static void j_create(fx *f, const char *name) {
    const char *p = dbp(f, name);
    eng_io_op op = { .kind = ENG_IO_CREATE, .path = p };
    cr_assert_eq(flt_journal_before(f->j, &op), 0);
    int fd = open(p, O_RDWR | O_CREAT | O_EXCL, 0644);
    cr_assert(fd >= 0, "create %s: %s", p, strerror(errno));
    op.result = 0;
    flt_journal_after(f->j, &op);
    close(fd);
}

static void j_rename(fx *f, const char *from, const char *to) {
    const char *a = dbp(f, from), *b = dbp(f, to);
    eng_io_op op = { .kind = ENG_IO_RENAME, .file_id = -1, .path = a, .path2 = b };
    cr_assert_eq(flt_journal_before(f->j, &op), 0);
    op.result = rename(a, b) == 0 ? 0 : -errno;
    cr_assert_eq(op.result, 0, "rename %s %s", a, b);
    flt_journal_after(f->j, &op);
}

static void j_unlink(fx *f, const char *name) {
    const char *p = dbp(f, name);
    eng_io_op op = { .kind = ENG_IO_UNLINK, .file_id = -1, .path = p };
    cr_assert_eq(flt_journal_before(f->j, &op), 0);
    op.result = unlink(p) == 0 ? 0 : -errno;
    flt_journal_after(f->j, &op);
}

static void j_truncate(fx *f, const char *name, uint64_t size) {
    const char *p = dbp(f, name);
    int fd = open(p, O_WRONLY);
    cr_assert(fd >= 0);
    eng_io_op op = { .kind = ENG_IO_TRUNCATE, .path = p, .offset = size };
    cr_assert_eq(flt_journal_before(f->j, &op), 0);
    op.result = ftruncate(fd, (off_t)size) == 0 ? 0 : -errno;
    flt_journal_after(f->j, &op);
    close(fd);
}

/* ---- running build/powerloss ------------------------------------------------------ */

static const char *pl_path(void) {
    static char p[512];
    const char *b = getenv("BUILD");
    snprintf(p, sizeof p, "%s/powerloss", b && *b ? b : "build");
    return p;
}

/* Run powerloss with the NULL-terminated arguments; output to F->log.
 * Returns the exit code (128 + signal if killed). */
static int run_pl(const fx *f, ...) {
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
    cr_assert_eq(rc, 0, "spawn %s: %s (run the suite from the repository root, or set BUILD)", argv[0],
                 strerror(rc));
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* The tool's output (for messages). */
static const char *pl_out(const fx *f) {
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

static void pl_ok(const fx *f, int rc) {
    cr_assert_eq(rc, 0, "powerloss exited %d:\n%s", rc, pl_out(f));
}

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
static int json_field(const char *line, const char *key, char *out, size_t cap) {
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
static int note_field(const char *note, const char *word, char *out, size_t cap) {
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

static void lrec_cb(void *ctx, const char *line) {
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

static void ledger_load(const fx *f, lrecs *L) {
    if (!L->r) L->r = calloc(MAX_LREC, sizeof *L->r);
    cr_assert(L->r);
    L->n = 0;
    cr_assert_eq(flt_ledger_read(f->run, lrec_cb, L), 0);
}

/* Start the ledger afresh (between power-loss runs of one test, whose
 * variant numbers would otherwise mix). */
static void ledger_clear(const fx *f) {
    char p[256];
    snprintf(p, sizeof p, "%s/ledger", f->run);
    unlink(p);
}

/* Does variant V have a line at POINT for FILE? */
static int ledger_has(const lrecs *L, int v, const char *point, const char *file) {
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
    size_t size[MAXF];    /* as the test wrote it (no power loss) */
    mwrite w[MAXW];
    int nw;
} model;

static int m_file(model *m, const char *name, size_t size, uint64_t seed) {
    int i = m->nf++;
    snprintf(m->name[i], sizeof m->name[i], "%s", name);
    m->init[i] = calloc(1, FMAX);
    tu_fill(m->init[i], size, seed);
    m->init_size[i] = m->size[i] = size;
    return i;
}

static void m_write(fx *f, model *m, int file, uint64_t off, size_t len, uint64_t seed) {
    cr_assert(m->nw < MAXW && off + len <= FMAX);
    mwrite *w = &m->w[m->nw++];
    *w = (mwrite){ file, off, len, malloc(len), 0, 0 };
    tu_fill(w->data, len, seed);
    j_write(f, m->name[file], off, w->data, len);
    if (off + len > m->size[file]) m->size[file] = off + len;
}

static void m_sync(fx *f, model *m, int file) {
    j_sync(f, m->name[file]);
    for (int i = 0; i < m->nw; i++)
        if (m->w[i].file == file && !m->w[i].dropped) m->w[i].synced = 1;
}

static void m_free(model *m) {
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
static void decisions_of(const model *m, const lrecs *L, int v, decision *dec) {
    for (int i = 0; i < m->nw; i++) dec[i].d = m->w[i].dropped ? D_ROLLBACK : D_KEEP;
    int64_t last = INT64_MAX;
    for (size_t k = 0; k < L->n; k++) {
        const lrec *r = &L->r[k];
        if (r->variant != v) continue;
        int tear = !strcmp(r->point, "powerloss/tear");
        if (!tear && strcmp(r->point, "powerloss/rollback")) continue;
        int found = (int)r->write_no;
        cr_assert(r->write_no >= 0 && r->write_no < m->nw, "variant %d: ledger line %s %s@%lld+%lld: write=%lld",
                  v, r->point, r->file, (long long)r->off, (long long)r->len, (long long)r->write_no);
        const mwrite *w = &m->w[found];
        cr_assert(!strcmp(m->name[w->file], r->file) && (int64_t)w->off == r->off && (int64_t)w->len == r->len,
                  "variant %d: ledger line %s %s@%lld+%lld names write %d, which is %s@%llu+%zu", v, r->point,
                  r->file, (long long)r->off, (long long)r->len, found, m->name[w->file],
                  (unsigned long long)w->off, w->len);
        cr_assert(r->write_no < last, "variant %d: ledger lines not newest first", v);
        last = r->write_no;
        cr_assert(!m->w[found].synced, "S: variant %d: %s of synced write #%d (%s@%llu+%zu)", v, r->point, found,
                  r->file, (unsigned long long)m->w[found].off, m->w[found].len);
        cr_assert(!m->w[found].dropped, "P6: variant %d: %s of write #%d, which a failed fsync dropped", v, r->point,
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
                for (int b = 0; b < 4 && 4 * c + (size_t)b < sizeof d->kept; b++) d->kept[4 * c + (size_t)b] = (x >> b) & 1;
            }
        }
    }
}

/* E: the model replayed with DEC, for FILE, into OUT (FMAX bytes); returns
 * the size. */
static size_t expect_file(const model *m, const decision *dec, int file, uint8_t *out) {
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
static ssize_t read_in(const char *dir, const char *name, uint8_t *buf) {
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

static size_t first_diff(const uint8_t *a, const uint8_t *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return i;
    return n;
}

/* The fsync of FILE failed: drop its unsynced writes through the journal
 * (ledger lines into LEDGER).  Every unsynced write of the file must be
 * rolled back, one line each, and the file must be exactly what its
 * synced writes made. */
static void m_drop(fx *f, model *m, int file, flt_ledger *ledger) {
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
static void assert_legal(const model *m, int file, const char *dir, const char *what) {
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
static void assert_variant(const model *m, const lrecs *L, int v, const char *dir) {
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
static void count_decisions(const model *m, const lrecs *L, int v, int *nroll, int *ntear) {
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
static void random_workload(fx *f, model *m, uint64_t seed, int nops, flt_ledger *drops) {
    tu_rng rng = { seed };
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

/* ---- 1. variants: exact, legal, synced never touched, different --------------- */

static void variants_round(const char *mode, uint64_t seed, int with_drops) {
    fx f;
    fx_init(&f);
    model *m = calloc(1, sizeof *m);
    flt_ledger *dl = NULL;
    if (with_drops) cr_assert_eq(flt_ledger_open(f.run, &dl), 0);
    random_workload(&f, m, seed, 160, dl);
    flt_ledger_close(dl);
    int unsynced = 0, dropped = 0;
    for (int i = 0; i < m->nw; i++) unsynced += !m->w[i].synced && !m->w[i].dropped, dropped += m->w[i].dropped;
    cr_assert(unsynced >= 4, "workload left only %d unsynced writes", unsynced);
    if (with_drops) cr_assert(dropped >= 4, "seed %llu: only %d writes dropped", (unsigned long long)seed, dropped);

    /* The crashed directory as the test left it. */
    static uint8_t before[MAXF][FMAX];
    ssize_t bsize[MAXF];
    for (int i = 0; i < m->nf; i++) bsize[i] = read_in(f.db, m->name[i], before[i]);

    char seedbuf[32], prefix[200];
    snprintf(seedbuf, sizeof seedbuf, "%llu", (unsigned long long)seed);
    snprintf(prefix, sizeof prefix, "%s/v", f.root);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", seedbuf, "--variants", "8", "--mode", mode,
                     "--out-prefix", prefix, NULL));
    lrecs L = { 0 };
    ledger_load(&f, &L);
    int any_roll = 0, any_tear = 0;
    static uint8_t a[FMAX], b[FMAX];
    int differ = 0;
    for (int v = 0; v < 8; v++) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s%d", prefix, v);
        assert_variant(m, &L, v, dir);
        int nr, nt;
        count_decisions(m, &L, v, &nr, &nt);
        any_roll += nr;
        any_tear += nt;
        if (v > 0) {
            char prev[256];
            snprintf(prev, sizeof prev, "%s%d", prefix, v - 1);
            for (int fi = 0; fi < m->nf && !differ; fi++) {
                ssize_t s1 = read_in(prev, m->name[fi], a), s2 = read_in(dir, m->name[fi], b);
                differ = s1 != s2 || memcmp(a, b, (size_t)s1) != 0;
            }
        }
    }
    cr_assert(differ, "D: all 8 variants of mode %s are identical", mode);
    if (!strcmp(mode, "rollback")) cr_assert(any_roll > 0 && any_tear == 0, "rollback mode: %d rollbacks, %d tears", any_roll, any_tear);
    if (!strcmp(mode, "tear")) cr_assert(any_tear > 0, "tear mode made no tear");
    if (!strcmp(mode, "mixed")) cr_assert(any_roll > 0 && any_tear > 0, "mixed: %d rollbacks, %d tears", any_roll, any_tear);

    /* DIR itself and the journal stay as they were. */
    for (int i = 0; i < m->nf; i++) {
        ssize_t s = read_in(f.db, m->name[i], a);
        cr_assert(s == bsize[i] && memcmp(a, before[i], (size_t)s) == 0, "variants changed %s in DIR", m->name[i]);
    }
    char jp[256];
    snprintf(jp, sizeof jp, "%s/journal", f.run);
    struct stat st;
    cr_assert(stat(jp, &st) == 0 && st.st_size > 0, "the journal was reset by a variants run");
    /* Variants are never overwritten: a second run refuses (usage). */
    cr_assert_eq(run_pl(&f, f.db, "--run-dir", f.run, "--seed", seedbuf, "--variants", "2", "--out-prefix", prefix,
                        NULL), 2);
    free(L.r);
    m_free(m);
    free(m);
}

Test(powerloss, rollback_variants_restore_exact_old_bytes, T_OPTS) {
    for (int r = 0; r < 3; r++) variants_round("rollback", cu_seed(0x10 + (uint64_t)r), 0);
}

Test(powerloss, tear_variants_keep_sector_subsets, T_OPTS) {
    for (int r = 0; r < 3; r++) variants_round("tear", cu_seed(0x20 + (uint64_t)r), 0);
}

Test(powerloss, mixed_variants_are_legal, T_OPTS) {
    for (int r = 0; r < 3; r++) variants_round("mixed", cu_seed(0x30 + (uint64_t)r), 0);
}

/* Failed fsyncs drop their file's unsynced writes while the process runs
 * (each drop checked on the spot by m_drop); then power-loss states of
 * that journal, in every mode, are exact and legal with the dropped writes
 * counted as never made: no ledger line undoes or tears one (P6), and
 * none comes back. */
Test(powerloss, dropped_writes_stay_dropped_in_every_variant, T_OPTS) {
    static const char *const modes[] = { "rollback", "tear", "mixed" };
    for (int r = 0; r < 3; r++) variants_round(modes[r], cu_seed(0xa0 + (uint64_t)r), 1);
}

/* Lines of the ledger, raw (drop lines have phase "run": lrec_cb skips them). */
typedef struct rawlines {
    char l[8][1024];
    int n;
} rawlines;

static void raw_cb(void *ctx, const char *line) {
    rawlines *r = ctx;
    if (r->n < 8) snprintf(r->l[r->n], sizeof r->l[0], "%s", line);
    r->n++;
}

/* Size of DIR/NAME, or -1 if it does not exist. */
static int64_t size_or_absent(const char *dir, const char *name) {
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* The edges of a drop: a write in flight (journaled, not done) is left
 * alone with its range; a later truncate decides the bytes beyond it; a
 * file reached through a rename drops the writes made under its old name;
 * a synced write and another file are untouched; a second drop finds
 * nothing.  Then a power-loss step neither keeps nor undoes a dropped
 * write.  Documented edges (journal.h): the in-flight write's old bytes
 * and the truncate's tail were journaled before the drop, so undoing them
 * later shows what they saw then (dropped data included: Linux may have
 * written those pages before the error, so such a state is possible). */
Test(powerloss, drop_spares_in_flight_truncated_and_synced, T_OPTS) {
    fx f;
    fx_init(&f);
    static uint8_t init[32768], other[8192], a[8192], b[8192], c[8192], d[8192], got[FMAX];
    tu_fill(init, sizeof init, 1);
    tu_fill(other, sizeof other, 2);
    tu_fill(a, sizeof a, 3);
    tu_fill(b, sizeof b, 4);
    tu_fill(c, sizeof c, 5);
    tu_fill(d, sizeof d, 6);
    put_file(&f, "data", init, sizeof init);
    put_file(&f, "wal/0000000000000000", other, sizeof other);
    fx_open_journal(&f);
    flt_ledger *lg = NULL;
    cr_assert_eq(flt_ledger_open(f.run, &lg), 0);

    j_write(&f, "data", 0, a, 4096);          /* synced below */
    j_sync(&f, "data");
    j_write(&f, "data", 4096, b, 8192);       /* unsynced: dropped */
    j_write(&f, "wal/0000000000000000", 0, d, 4096); /* another file: untouched */
    /* In flight over part of it: journaled and written, its after() not
     * yet come. */
    const char *dp = dbp(&f, "data");
    int fd = open(dp, O_WRONLY);
    cr_assert(fd >= 0);
    eng_io_op fl = { .kind = ENG_IO_WRITE, .path = dp, .buf = c, .offset = 8192, .len = 4096 };
    cr_assert_eq(flt_journal_before(f.j, &fl), 0);
    fl.result = pwrite(fd, c, 4096, 8192);
    cr_assert_eq(fl.result, 4096);
    j_write(&f, "data", 32768, d, 8192);      /* extends the file */
    j_write(&f, "data", 24576, a, 4096);      /* unsynced, partly cut by the truncate below */
    j_truncate(&f, "data", 26624);            /* [26624, ...) decided by the truncate */

    uint64_t n = 0;
    cr_assert_eq(flt_journal_drop_unsynced(f.j, dp, lg, NULL, &n), 0);
    cr_assert_eq(n, 3, "%llu writes dropped, want 3 (the in-flight one is not)", (unsigned long long)n);
    static uint8_t want[32768];
    memcpy(want, init, sizeof want);
    memcpy(want, a, 4096);                    /* synced */
    memcpy(want + 8192, c, 4096);             /* in flight: left alone */
    ssize_t gs = read_in(f.db, "data", got);
    cr_assert_eq(gs, 26624, "size %zd: the truncate decides it", gs);
    size_t x = first_diff(want, got, 26624);
    cr_assert_eq(x, 26624, "data byte %zu: 0x%02x, want 0x%02x", x, got[x], want[x]);
    gs = read_in(f.db, "wal/0000000000000000", got);
    cr_assert(gs == 8192 && !memcmp(got, d, 4096) && !memcmp(got + 4096, other + 4096, 4096), "the other file changed");
    /* The ledger: three lines, newest first, each with its write's place. */
    static rawlines rl;
    rl.n = 0;
    cr_assert_eq(flt_ledger_read(f.run, raw_cb, &rl), 0);
    cr_assert_eq(rl.n, 3);
    static const int64_t offs[3] = { 24576, 32768, 4096 }, lens[3] = { 4096, 8192, 8192 };
    for (int i = 0; i < 3; i++) {
        char v[64], num[32];
        const char *line = rl.l[i];
        cr_assert(json_field(line, "class", v, sizeof v) && !strcmp(v, "sync_error"), "%s", line);
        cr_assert(json_field(line, "point", v, sizeof v) && !strcmp(v, "sync/drop_dirty"), "%s", line);
        cr_assert(json_field(line, "file", v, sizeof v) && !strcmp(v, "data"), "%s", line);
        cr_assert(json_field(line, "offset", num, sizeof num) && strtoll(num, NULL, 10) == offs[i], "%s", line);
        cr_assert(json_field(line, "len", num, sizeof num) && strtoll(num, NULL, 10) == lens[i], "%s", line);
    }
    /* Nothing left to drop; the in-flight write completes. */
    cr_assert_eq(flt_journal_drop_unsynced(f.j, dp, lg, NULL, &n), 0);
    cr_assert_eq(n, 0);
    flt_journal_after(f.j, &fl);
    close(fd);
    /* Outside the database directory: never journaled, nothing to drop. */
    cr_assert_eq(flt_journal_drop_unsynced(f.j, "/tmp/not-the-db/data", lg, NULL, &n), 0);
    cr_assert_eq(n, 0);

    /* Through a rename: the writes made as control.tmp are control's. */
    static uint8_t ctl[512];
    tu_fill(ctl, sizeof ctl, 7);
    j_create(&f, "control.tmp");
    j_write(&f, "control.tmp", 0, ctl, sizeof ctl);
    j_rename(&f, "control.tmp", "control");
    cr_assert_eq(flt_journal_drop_unsynced(f.j, dbp(&f, "control"), lg, NULL, &n), 0);
    cr_assert_eq(n, 1);
    cr_assert_eq(size_or_absent(f.db, "control"), 0, "its only write was dropped: the new file is empty again");
    rl.n = 0;
    cr_assert_eq(flt_ledger_read(f.run, raw_cb, &rl), 0);
    cr_assert_eq(rl.n, 4);
    char note[256];
    cr_assert(json_field(rl.l[3], "note", note, sizeof note) && strstr(note, "written as control.tmp"), "%s", rl.l[3]);
    fx_close_journal(&f);
    flt_ledger_close(lg);

    /* A power loss now. */
    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s/v", f.root);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "7", "--variants", "8", "--mode", "rollback",
                     "--out-prefix", prefix, NULL));
    lrecs L = { 0 };
    ledger_load(&f, &L);
    int saw_c = 0, saw_undone = 0;
    for (int v = 0; v < 8; v++) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s%d", prefix, v);
        for (size_t k = 0; k < L.n; k++) {
            if (L.r[k].variant != v || strcmp(L.r[k].file, "data")) continue;
            cr_assert(!strcmp(L.r[k].point, "powerloss/undo_truncate") ||
                          (!strcmp(L.r[k].point, "powerloss/rollback") && L.r[k].off == 8192),
                      "variant %d: %s@%lld+%lld: only the truncate and the once in-flight write are unsynced", v,
                      L.r[k].point, (long long)L.r[k].off, (long long)L.r[k].len);
        }
        gs = read_in(dir, "data", got);
        cr_assert(gs == 26624 || gs == 40960, "variant %d: data is %zd bytes", v, gs);
        cr_assert(!memcmp(got, a, 4096), "variant %d: the synced write is gone", v);
        cr_assert(!memcmp(got + 4096, init + 4096, 4096), "variant %d: a dropped write came back", v);
        if (!memcmp(got + 8192, c, 4096)) saw_c++;
        else if (!memcmp(got + 8192, b + 4096, 4096)) saw_undone++; /* its old bytes, journaled before the drop */
        else cr_assert_fail("variant %d: bytes at 8192 are neither the write's nor its old ones", v);
        cr_assert(!memcmp(got + 12288, init + 12288, 26624 - 12288), "variant %d: a dropped write came back", v);
        int64_t cs = size_or_absent(dir, "control"), ts = size_or_absent(dir, "control.tmp");
        cr_assert(cs <= 0 && ts <= 0, "variant %d: control %lld, control.tmp %lld bytes: a dropped write came back", v,
                  (long long)cs, (long long)ts);
    }
    cr_assert(saw_c && saw_undone, "the once in-flight write was kept %d and rolled back %d times in 8 variants",
              saw_c, saw_undone);
    free(L.r);
}

/* ---- 2. overlapping writes: a later kept write wins over an earlier undone one ----- */

Test(powerloss, later_kept_write_wins_over_earlier_rollback, T_OPTS) {
    fx f;
    fx_init(&f);
    model *m = calloc(1, sizeof *m);
    int d = m_file(m, "data", 32768, 7);
    put_file(&f, "data", m->init[d], m->init_size[d]);
    fx_open_journal(&f);
    m_write(&f, m, d, 0, 8192, 101);      /* A: [0, 8K) */
    m_write(&f, m, d, 4096, 8192, 102);   /* B: [4K, 12K) over half of A */
    m_write(&f, m, d, 30000, 8192, 103);  /* C: extends the file past 32K */
    m_write(&f, m, d, 36000, 1000, 104);  /* D: inside C's extension */
    fx_close_journal(&f);

    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s/v", f.root);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "12345", "--variants", "24", "--mode", "rollback",
                     "--out-prefix", prefix, NULL));
    lrecs L = { 0 };
    ledger_load(&f, &L);
    int seen_a_only = 0, seen_c_undone_d_kept = 0, seen_all_undone = 0;
    static uint8_t got[FMAX];
    for (int v = 0; v < 24; v++) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s%d", prefix, v);
        assert_variant(m, &L, v, dir);
        decision dec[4];
        decisions_of(m, &L, v, dec);
        ssize_t gs = read_in(dir, "data", got);
        if (dec[0].d == D_ROLLBACK && dec[1].d == D_KEEP) {
            /* The overlap holds B, A's own half holds the old bytes. */
            cr_assert(memcmp(got, m->init[d], 4096) == 0, "variant %d: A's old bytes not restored", v);
            cr_assert(memcmp(got + 4096, m->w[1].data, 8192) == 0, "variant %d: B's kept bytes lost", v);
            seen_a_only++;
        }
        if (dec[2].d == D_ROLLBACK && dec[3].d == D_KEEP) {
            /* C undone but D kept: the file still reaches D's end, C's other bytes read as zeros. */
            cr_assert_eq(gs, 37000, "variant %d: size %zd", v, gs);
            for (size_t x = 32768; x < 36000; x++) cr_assert_eq(got[x], 0, "variant %d: byte %zu", v, x);
            cr_assert(memcmp(got + 30000, m->init[d] + 30000, 2768) == 0);
            seen_c_undone_d_kept++;
        }
        if (dec[2].d == D_ROLLBACK && dec[3].d == D_ROLLBACK) {
            cr_assert_eq(gs, 32768, "variant %d: C and D undone but size %zd", v, gs);
            seen_all_undone++;
        }
    }
    cr_assert(seen_a_only && seen_c_undone_d_kept && seen_all_undone,
              "seed 12345 did not produce every case (%d %d %d): pick another", seen_a_only, seen_c_undone_d_kept,
              seen_all_undone);
    free(L.r);
    m_free(m);
    free(m);
}

/* ---- 3. metadata: unsynced creates, renames, unlinks, truncates undone; durable ones not ---- */

static void read_str(const char *dir, const char *name, char *out, size_t cap) {
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

static uint64_t size_of(const char *dir, const char *name) {
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0 ? (uint64_t)st.st_size : UINT64_MAX;
}

Test(powerloss, unsynced_metadata_undone_durable_kept, T_OPTS) {
    fx f;
    fx_init(&f);
    put_file(&f, "ctl", "OLDCTL", 6);
    put_file(&f, "old1", "OLD1", 4);
    put_file(&f, "old2", "OLD2", 4);
    static uint8_t tr[10000], tr2[5000];
    tu_fill(tr, sizeof tr, 5);
    tu_fill(tr2, sizeof tr2, 6);
    put_file(&f, "tr", tr, sizeof tr);
    put_file(&f, "tr2", tr2, sizeof tr2);
    fx_open_journal(&f);
    /* Durable: the unlink of old2 (dirsync of the top directory after it);
     * in wal/, a create and a rename, each followed by a dirsync of wal/. */
    j_unlink(&f, "old2");
    j_dirsync(&f, ".");
    j_create(&f, "wal/a");
    j_write(&f, "wal/a", 0, "SEGA", 4);
    j_sync(&f, "wal/a");
    j_dirsync(&f, "wal");
    j_rename(&f, "wal/a", "wal/b");
    j_dirsync(&f, "wal");
    j_truncate(&f, "tr2", 100);
    j_sync(&f, "tr2");
    /* Unsynced (no dirsync of the top directory after them). */
    j_create(&f, "new1");
    j_write(&f, "new1", 0, "N1", 2);
    j_sync(&f, "new1"); /* the data is synced, the name is not */
    j_create(&f, "tmp");
    j_write(&f, "tmp", 0, "NEWCTL", 6);
    j_sync(&f, "tmp");
    j_rename(&f, "tmp", "ctl");
    j_unlink(&f, "old1");
    j_truncate(&f, "tr", 3000);
    j_unlink(&f, "never-existed"); /* fails: nothing to undo */
    fx_close_journal(&f);

    /* J4: journal.d/ keeps only what a non-durable operation may need:
     * the replaced "ctl" and the unlinked "old1", not the durably
     * unlinked "old2". */
    char jd[256];
    snprintf(jd, sizeof jd, "%s/journal.d", f.run);
    DIR *dh = opendir(jd);
    cr_assert(dh != NULL);
    int nsaved = 0;
    for (struct dirent *e; (e = readdir(dh)) != NULL;) nsaved += e->d_name[0] != '.';
    closedir(dh);
    cr_assert_eq(nsaved, 2, "journal.d holds %d files, want 2 (ctl's old target, old1)", nsaved);

    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s/v", f.root);
    const int K = 16;
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "777", "--variants", "16", "--mode", "rollback",
                     "--out-prefix", prefix, NULL));
    lrecs L = { 0 };
    ledger_load(&f, &L);
    int undone[5] = { 0 }, kept[5] = { 0 };
    for (int v = 0; v < K; v++) {
        char dir[256], s[64];
        snprintf(dir, sizeof dir, "%s%d", prefix, v);
        /* S: durable operations are never undone. */
        for (size_t i = 0; i < L.n; i++) {
            if (L.r[i].variant != v) continue;
            cr_assert(strcmp(L.r[i].file, "old2") && strcmp(L.r[i].file, "wal/a") && strcmp(L.r[i].file, "wal/b") &&
                          strcmp(L.r[i].file, "tr2") && strcmp(L.r[i].file, "never-existed"),
                      "variant %d: durable or failed operation on %s undone (%s)", v, L.r[i].file, L.r[i].point);
            cr_assert(strncmp(L.r[i].point, "powerloss/undo_", 15) == 0, "variant %d: %s on %s (synced data)", v,
                      L.r[i].point, L.r[i].file);
        }
        read_str(dir, "old2", s, sizeof s);
        cr_assert_str_eq(s, "<missing>", "variant %d: old2", v);
        read_str(dir, "wal/b", s, sizeof s);
        cr_assert_str_eq(s, "SEGA", "variant %d: wal/b", v);
        read_str(dir, "wal/a", s, sizeof s);
        cr_assert_str_eq(s, "<missing>", "variant %d: wal/a", v);
        cr_assert_eq(size_of(dir, "tr2"), 100, "variant %d: tr2", v);

        /* new1 */
        int u = ledger_has(&L, v, "powerloss/undo_create", "new1");
        read_str(dir, "new1", s, sizeof s);
        cr_assert_str_eq(s, u ? "<missing>" : "N1", "variant %d: new1 (create %s)", v, u ? "undone" : "kept");
        undone[0] += u, kept[0] += !u;
        /* tmp -> ctl, and the create of tmp (kept whenever the rename is: P4) */
        int ur = ledger_has(&L, v, "powerloss/undo_rename", "tmp");
        int uc = ledger_has(&L, v, "powerloss/undo_create", "tmp");
        cr_assert(ur || !uc, "variant %d: the create of tmp undone but its rename kept", v);
        read_str(dir, "ctl", s, sizeof s);
        cr_assert_str_eq(s, ur ? "OLDCTL" : "NEWCTL", "variant %d: ctl (rename %s)", v, ur ? "undone" : "kept");
        read_str(dir, "tmp", s, sizeof s);
        cr_assert_str_eq(s, ur && !uc ? "NEWCTL" : "<missing>", "variant %d: tmp", v);
        undone[1] += ur, kept[1] += !ur;
        undone[2] += uc;
        /* old1 */
        u = ledger_has(&L, v, "powerloss/undo_unlink", "old1");
        read_str(dir, "old1", s, sizeof s);
        cr_assert_str_eq(s, u ? "OLD1" : "<missing>", "variant %d: old1", v);
        undone[3] += u, kept[3] += !u;
        /* tr */
        u = ledger_has(&L, v, "powerloss/undo_truncate", "tr");
        static uint8_t got[FMAX];
        ssize_t gs = read_in(dir, "tr", got);
        cr_assert_eq(gs, u ? 10000 : 3000, "variant %d: tr is %zd bytes", v, gs);
        cr_assert(memcmp(got, tr, (size_t)gs) == 0, "variant %d: tr content", v);
        undone[4] += u, kept[4] += !u;
    }
    for (int i = 0; i < 5; i++)
        if (i != 2) cr_assert(undone[i] && kept[i], "D: operation %d: undone in %d, kept in %d of %d variants", i,
                              undone[i], kept[i], K);
    cr_assert(undone[2], "the create of tmp was never undone");
    free(L.r);
}

/* ---- 4. in place: the directory changes, the journal is reset ------------------------ */

Test(powerloss, in_place_applies_and_resets_the_journal, T_OPTS) {
    fx f;
    fx_init(&f);
    model *m = calloc(1, sizeof *m);
    random_workload(&f, m, cu_seed(0x40), 120, NULL);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "99", "--mode", "mixed", NULL));
    lrecs L = { 0 };
    ledger_load(&f, &L);
    cr_assert(L.n > 0, "nothing was undone in place:\n%s", pl_out(&f));
    assert_variant(m, &L, 0, f.db);
    char p[256];
    snprintf(p, sizeof p, "%s/journal", f.run);
    cr_assert_eq(size_of(f.run, "journal"), 0, "the journal was not reset");
    /* A second run finds nothing to do. */
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "100", NULL));
    size_t n1 = L.n;
    ledger_load(&f, &L);
    cr_assert_eq(L.n, n1, "a run over an empty journal undid something");
    assert_variant(m, &L, 0, f.db);
    free(L.r);
    m_free(m);
    free(m);
}

Test(powerloss, keep_mode_changes_nothing, T_OPTS) {
    fx f;
    fx_init(&f);
    model *m = calloc(1, sizeof *m);
    random_workload(&f, m, cu_seed(0x50), 80, NULL);
    static uint8_t before[MAXF][FMAX], now[FMAX];
    ssize_t bs[MAXF];
    for (int i = 0; i < m->nf; i++) bs[i] = read_in(f.db, m->name[i], before[i]);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "5", "--mode", "keep", NULL));
    for (int i = 0; i < m->nf; i++) {
        ssize_t s = read_in(f.db, m->name[i], now);
        cr_assert(s == bs[i] && memcmp(now, before[i], (size_t)s) == 0, "keep mode changed %s", m->name[i]);
    }
    lrecs L = { 0 };
    ledger_load(&f, &L);
    cr_assert_eq(L.n, 0, "keep mode wrote %zu ledger lines", L.n);
    free(L.r);
    m_free(m);
    free(m);
}

/* ---- 5. refusals and usage ------------------------------------------------------------- */

Test(powerloss, refuses_while_lock_is_held, T_OPTS) {
    fx f;
    fx_init(&f);
    model *m = calloc(1, sizeof *m);
    random_workload(&f, m, cu_seed(0x60), 60, NULL);
    char lp[256];
    snprintf(lp, sizeof lp, "%s/LOCK", f.db);
    int lfd = open(lp, O_RDWR | O_CREAT, 0644);
    cr_assert(lfd >= 0);
    cr_assert(flock(lfd, LOCK_EX | LOCK_NB) == 0);
    static uint8_t before[MAXF][FMAX], now[FMAX];
    ssize_t bs[MAXF];
    for (int i = 0; i < m->nf; i++) bs[i] = read_in(f.db, m->name[i], before[i]);
    int rc = run_pl(&f, f.db, "--run-dir", f.run, "--seed", "1", NULL);
    cr_assert_eq(rc, 3, "powerloss with LOCK held exited %d:\n%s", rc, pl_out(&f));
    cr_assert(strstr(pl_out(&f), "LOCK") != NULL, "the refusal does not name the lock:\n%s", pl_out(&f));
    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s/v", f.root);
    rc = run_pl(&f, f.db, "--run-dir", f.run, "--seed", "1", "--variants", "2", "--out-prefix", prefix, NULL);
    cr_assert_eq(rc, 3, "variants with LOCK held exited %d", rc);
    for (int i = 0; i < m->nf; i++) {
        ssize_t s = read_in(f.db, m->name[i], now);
        cr_assert(s == bs[i] && memcmp(now, before[i], (size_t)s) == 0, "a refused run changed %s", m->name[i]);
    }
    cr_assert(size_of(f.run, "journal") > 0, "a refused run reset the journal");
    lrecs L = { 0 };
    ledger_load(&f, &L);
    cr_assert_eq(L.n, 0);
    /* Released: it runs. */
    close(lfd);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "1", NULL));
    ledger_load(&f, &L);
    assert_variant(m, &L, 0, f.db);
    free(L.r);
    m_free(m);
    free(m);
}

Test(powerloss, usage_errors_exit_2_and_change_nothing, T_OPTS) {
    fx f;
    fx_init(&f);
    model *m = calloc(1, sizeof *m);
    random_workload(&f, m, cu_seed(0x70), 40, NULL);
    uint64_t js = size_of(f.run, "journal");
    cr_assert_eq(run_pl(&f, NULL), 2);
    cr_assert_eq(run_pl(&f, f.db, "--seed", "1", NULL), 2);                          /* no --run-dir */
    cr_assert_eq(run_pl(&f, f.db, "--run-dir", f.run, NULL), 2);                     /* no --seed */
    cr_assert_eq(run_pl(&f, f.db, "--run-dir", f.run, "--seed", "x1", NULL), 2);
    cr_assert_eq(run_pl(&f, f.db, "--run-dir", f.run, "--seed", "1", "--mode", "melt", NULL), 2);
    cr_assert_eq(run_pl(&f, f.db, "--run-dir", f.run, "--seed", "1", "--variants", "0", NULL), 2);
    cr_assert_eq(run_pl(&f, f.db, "--run-dir", f.run, "--seed", "1", "--out-prefix", "/tmp/x", NULL), 2);
    cr_assert_eq(run_pl(&f, f.db, "--run-dir", f.run, "--seed", "1", "--bogus", NULL), 2);
    cr_assert_eq(run_pl(&f, f.db, f.db, "--run-dir", f.run, "--seed", "1", NULL), 2);
    cr_assert_eq(run_pl(&f, "/nonexistent/db", "--run-dir", f.run, "--seed", "1", NULL), 2);
    cr_assert(strstr(pl_out(&f), "usage:") != NULL);
    cr_assert_eq(size_of(f.run, "journal"), js, "a usage error touched the journal");
    cr_assert_eq(size_of(f.run, "ledger"), UINT64_MAX, "a usage error created the ledger");
    m_free(m);
    free(m);
}

/* ---- 6. a torn journal tail is ignored; damage in the middle is refused ---------------- */

Test(powerloss, torn_journal_tail_is_ignored, T_OPTS) {
    fx f;
    fx_init(&f);
    model *m = calloc(1, sizeof *m);
    random_workload(&f, m, cu_seed(0x80), 100, NULL);
    /* The process died while appending the BEGIN of one more write: the
     * write never happened, and its record is cut in the middle. */
    fx_open_journal(&f);
    uint64_t js = size_of(f.run, "journal");
    static uint8_t junk[8192];
    tu_fill(junk, sizeof junk, 9);
    eng_io_op op = { .kind = ENG_IO_WRITE, .path = dbp(&f, "data"), .buf = junk, .offset = 0, .len = sizeof junk };
    cr_assert_eq(flt_journal_before(f.j, &op), 0);
    fx_close_journal(&f);
    uint64_t js2 = size_of(f.run, "journal");
    cr_assert(js2 > js + 8192);
    char jp[256];
    snprintf(jp, sizeof jp, "%s/journal", f.run);
    cr_assert(truncate(jp, (off_t)(js2 - 3000)) == 0);

    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s/v", f.root);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "3", "--variants", "4", "--mode", "mixed",
                     "--out-prefix", prefix, NULL));
    cr_assert(strstr(pl_out(&f), "torn tail") != NULL, "no word of the torn tail:\n%s", pl_out(&f));
    lrecs L = { 0 };
    ledger_load(&f, &L);
    for (int v = 0; v < 4; v++) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s%d", prefix, v);
        assert_variant(m, &L, v, dir);
    }

    /* Garbage after the last record is a torn tail as well. */
    int fd = open(jp, O_WRONLY | O_APPEND);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, junk, 100), 100);
    close(fd);
    snprintf(prefix, sizeof prefix, "%s/w", f.root);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "3", "--variants", "1", "--mode", "mixed",
                     "--out-prefix", prefix, NULL));

    /* A restarted process appends a new session after the torn bytes:
     * the journal resumes there, and its writes are undone too. */
    fx_open_journal(&f);
    m_write(&f, m, 0, 100, 50, 77);
    fx_close_journal(&f);
    ledger_clear(&f);
    snprintf(prefix, sizeof prefix, "%s/s", f.root);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "5", "--variants", "4", "--mode", "rollback",
                     "--out-prefix", prefix, NULL));
    cr_assert(strstr(pl_out(&f), "torn tail") != NULL && strstr(pl_out(&f), "3 sessions") != NULL, "%s",
              pl_out(&f));
    ledger_load(&f, &L);
    int last_undone = 0;
    for (int v = 0; v < 4; v++) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s%d", prefix, v);
        assert_variant(m, &L, v, dir);
        decision *dec = calloc((size_t)m->nw, sizeof *dec);
        decisions_of(m, &L, v, dec);
        last_undone += dec[m->nw - 1].d == D_ROLLBACK;
        free(dec);
    }
    cr_assert(last_undone > 0, "the new session's write was never rolled back");

    /* Damage in the middle with valid records after it: refused. */
    uint8_t b;
    fd = open(jp, O_RDWR);
    cr_assert(pread(fd, &b, 1, 200) == 1);
    b ^= 0x40;
    cr_assert(pwrite(fd, &b, 1, 200) == 1);
    close(fd);
    snprintf(prefix, sizeof prefix, "%s/x", f.root);
    int rc = run_pl(&f, f.db, "--run-dir", f.run, "--seed", "3", "--variants", "1", "--out-prefix", prefix, NULL);
    cr_assert_eq(rc, 3, "a journal damaged in the middle was accepted (%d):\n%s", rc, pl_out(&f));
    free(L.r);
    m_free(m);
    free(m);
}

/* ---- 7. the journal itself ------------------------------------------------------------------- */

/* Skipped operations (lost writes) leave nothing; paths outside the
 * database directory are not journaled; DONEs need their BEGINs. */
Test(powerloss, skipped_and_outside_operations_are_not_journaled, T_OPTS) {
    fx f;
    fx_init(&f);
    put_file(&f, "data", "0123456789", 10);
    fx_open_journal(&f);
    uint64_t js = size_of(f.run, "journal");
    eng_io_op op = { .kind = ENG_IO_WRITE, .path = dbp(&f, "data"), .buf = "xx", .offset = 0, .len = 2, .skip = 1 };
    cr_assert_eq(flt_journal_before(f.j, &op), 0);
    flt_journal_after(f.j, &op);
    eng_io_op rd = { .kind = ENG_IO_READ, .path = dbp(&f, "data"), .buf = "xx", .offset = 0, .len = 2 };
    cr_assert_eq(flt_journal_before(f.j, &rd), 0);
    flt_journal_after(f.j, &rd);
    char outside[256];
    snprintf(outside, sizeof outside, "%s/outside", f.root);
    int fd = open(outside, O_RDWR | O_CREAT, 0644);
    close(fd);
    eng_io_op ow = { .kind = ENG_IO_WRITE, .path = outside, .buf = "yy", .offset = 0, .len = 2 };
    cr_assert_eq(flt_journal_before(f.j, &ow), 0);
    flt_journal_after(f.j, &ow);
    cr_assert_eq(size_of(f.run, "journal"), js, "skipped, read or outside operations were journaled");
    /* A path spelled differently (trailing slash, "./") is still inside. */
    char odd[300];
    snprintf(odd, sizeof odd, "%s/./data", f.db);
    eng_io_op w2 = { .kind = ENG_IO_WRITE, .path = odd, .buf = "zz", .offset = 4, .len = 2 };
    cr_assert_eq(flt_journal_before(f.j, &w2), 0);
    fd = open(odd, O_WRONLY);
    cr_assert(fd >= 0);
    cr_assert_eq(pwrite(fd, "zz", 2, 4), 2);
    close(fd);
    w2.result = 2;
    flt_journal_after(f.j, &w2);
    cr_assert(size_of(f.run, "journal") > js);
    fx_close_journal(&f);
    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s/v", f.root);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "2", "--variants", "8", "--out-prefix", prefix, NULL));
    lrecs L = { 0 };
    ledger_load(&f, &L);
    int undone = 0;
    for (int v = 0; v < 8; v++) {
        char dir[256], got[64];
        snprintf(dir, sizeof dir, "%s%d", prefix, v);
        int u = ledger_has(&L, v, "powerloss/rollback", "data");
        read_str(dir, "data", got, sizeof got);
        cr_assert_str_eq(got, u ? "0123456789" : "0123zz6789", "variant %d", v);
        undone += u;
    }
    cr_assert(undone > 0 && undone < 8, "the one unsynced write was undone in %d of 8 variants", undone);
    for (size_t i = 0; i < L.n; i++)
        cr_assert(!strcmp(L.r[i].file, "data") && L.r[i].off == 4 && L.r[i].len == 2, "unexpected ledger line on %s",
                  L.r[i].file);
    free(L.r);
}

/* Reset forgets everything: a power-loss run after it changes nothing. */
Test(powerloss, reset_forgets_the_journal, T_OPTS) {
    fx f;
    fx_init(&f);
    put_file(&f, "data", "0123456789", 10);
    put_file(&f, "gone", "G", 1);
    fx_open_journal(&f);
    j_write(&f, "data", 0, "ab", 2);
    j_unlink(&f, "gone");
    cr_assert_eq(flt_journal_reset(f.j), 0);
    j_write(&f, "data", 2, "cd", 2);
    j_sync(&f, "data");
    fx_close_journal(&f);
    char jd[256];
    snprintf(jd, sizeof jd, "%s/journal.d", f.run);
    DIR *dh = opendir(jd);
    cr_assert(dh != NULL);
    for (struct dirent *e; (e = readdir(dh)) != NULL;)
        cr_assert(e->d_name[0] == '.', "journal.d still holds %s after reset", e->d_name);
    closedir(dh);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "1", "--mode", "mixed", NULL));
    char got[64];
    read_str(f.db, "data", got, sizeof got);
    cr_assert_str_eq(got, "abcd456789");
    read_str(f.db, "gone", got, sizeof got);
    cr_assert_str_eq(got, "<missing>");
    cr_assert(strstr(pl_out(&f), " 1 writes journaled, 0 unsynced") != NULL, "%s", pl_out(&f));
}

/* Threads journal at once: every record arrives whole, DONEs find their
 * BEGINs, and what a thread synced itself is never rolled back. */
#define CT_THREADS 8
#define CT_PAGES 24
#define CT_PG 1024
typedef struct ct_arg {
    fx *f;
    int t;
} ct_arg;

static uint8_t ct_page(int t, int p) { return (uint8_t)(1 + t * CT_PAGES + p); }

static void *ct_main(void *a_) {
    ct_arg *a = a_;
    const char *path = dbp(a->f, "data");
    int fd = open(path, O_RDWR);
    uint8_t buf[CT_PG];
    for (int p = 0; p < CT_PAGES; p++) {
        memset(buf, ct_page(a->t, p), sizeof buf);
        eng_io_op op = { .kind = ENG_IO_WRITE, .path = path, .buf = buf, .len = sizeof buf,
                         .offset = (uint64_t)(a->t * CT_PAGES + p) * sizeof buf };
        if (fd < 0 || flt_journal_before(a->f->j, &op) != 0) return (void *)1;
        op.result = pwrite(fd, buf, sizeof buf, (off_t)op.offset);
        flt_journal_after(a->f->j, &op);
        if (p == CT_PAGES / 2 - 1) {
            eng_io_op so = { .kind = ENG_IO_SYNC, .path = path };
            if (flt_journal_before(a->f->j, &so) != 0) return (void *)1;
            so.result = fsync(fd) == 0 ? 0 : -errno;
            flt_journal_after(a->f->j, &so);
        }
    }
    close(fd);
    return NULL;
}

Test(powerloss, concurrent_journaling_is_whole_and_ordered, T_OPTS) {
    fx f;
    fx_init(&f);
    static uint8_t zero[CT_THREADS * CT_PAGES * CT_PG];
    put_file(&f, "data", zero, sizeof zero);
    fx_open_journal(&f);
    pthread_t th[CT_THREADS];
    ct_arg args[CT_THREADS];
    for (int t = 0; t < CT_THREADS; t++) {
        args[t] = (ct_arg){ &f, t };
        cr_assert_eq(pthread_create(&th[t], NULL, ct_main, &args[t]), 0);
    }
    for (int t = 0; t < CT_THREADS; t++) {
        void *rv;
        pthread_join(th[t], &rv);
        cr_assert(rv == NULL, "thread %d failed", t);
    }
    fx_close_journal(&f);
    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s/v", f.root);
    pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", "8", "--variants", "3", "--mode", "rollback",
                     "--out-prefix", prefix, NULL));
    char want[64];
    snprintf(want, sizeof want, " %d writes journaled", CT_THREADS * CT_PAGES);
    cr_assert(strstr(pl_out(&f), want) != NULL, "%s", pl_out(&f));
    cr_assert(strstr(pl_out(&f), "torn tail") == NULL, "%s", pl_out(&f));
    lrecs L = { 0 };
    ledger_load(&f, &L);
    static uint8_t got[FMAX];
    int rolled = 0;
    for (int v = 0; v < 3; v++) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s%d", prefix, v);
        cr_assert_eq(read_in(dir, "data", got), (ssize_t)sizeof zero);
        int old = 0, lines = 0;
        for (int t = 0; t < CT_THREADS; t++)
            for (int p = 0; p < CT_PAGES; p++) {
                const uint8_t *pg = got + (size_t)(t * CT_PAGES + p) * CT_PG;
                uint8_t c = pg[0];
                cr_assert(c == 0 || c == ct_page(t, p), "variant %d: thread %d page %d holds 0x%02x", v, t, p, c);
                for (int x = 1; x < CT_PG; x++) cr_assert_eq(pg[x], c, "variant %d: page mixes bytes", v);
                cr_assert(c != 0 || p >= CT_PAGES / 2, "variant %d: thread %d's synced page %d rolled back", v, t, p);
                old += c == 0;
            }
        for (size_t i = 0; i < L.n; i++) lines += L.r[i].variant == v;
        cr_assert_eq(old, lines, "variant %d: %d pages old, %d ledger lines", v, old, lines);
        rolled += old;
    }
    cr_assert(rolled > 0);
    free(L.r);
}

/* ---- 8. end to end: the engine survives every power-loss state ------------------------------ */

static int jh_before(void *ctx, eng_io_op *op) { return flt_journal_before(ctx, op); }
static void jh_after(void *ctx, eng_io_op *op) { flt_journal_after(ctx, op); }

static eng_options e2e_opts(int backend) {
    eng_options o;
    eng_options_init(&o);
    o.io_backend = backend;
    o.sync_mode = ENG_SYNC_COMMIT;
    o.wal_segment_size = 64u << 10;     /* segments created, recycled, removed */
    o.checkpoint_wal_bytes = 256u << 10; /* checkpoints: control renamed, data synced */
    o.cache_size = 128u << 10;           /* evictions: unsynced data-page writes */
    return o;
}

/* Keys are written in a scattered order (step s writes key perm(s)), so
 * dirty leaves all over the tree are evicted between checkpoints: those
 * page writes are what power loss rolls back.  perm is a bijection of
 * [0, 2^20). */
#define E2E_SPACE (1u << 20)
#define E2E_MUL 0x9E3779B1u /* odd */
static uint64_t e2e_perm(uint64_t s) { return (s * E2E_MUL + 12345u) & (E2E_SPACE - 1); }

static void e2e_child(const char *dir, const char *run, int backend, int fd) {
    flt_journal *j = NULL;
    if (flt_journal_open(run, dir, &j) != 0) _exit(CU_EXIT_FAIL);
    eng_io_hooks h = { .ctx = j, .before = jh_before, .after = jh_after };
    eng_options o = e2e_opts(backend);
    o.io_hooks = &h;
    eng_db *db = NULL;
    if (eng_open(dir, &o, &db) != ENG_OK) _exit(CU_EXIT_FAIL);
    for (uint64_t s = 0;; s++) {
        char k[CU_KLEN + 1];
        uint8_t v[CU_VMAX];
        uint64_t i = e2e_perm(s);
        size_t kl = cu_key(k, i), vl = cu_val(v, i, 0, 0, 0);
        if (eng_put(db, k, kl, v, vl, NULL) != ENG_OK) _exit(CU_EXIT_FAIL);
        if (cu_write_all(fd, &s, sizeof s) != 0) _exit(CU_EXIT_FAIL);
    }
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Reopen DIR without hooks: the keys present are exactly those of steps
 * 0..m-1 (a prefix of the commits) with their values, every acknowledged
 * step among them (at most the put in flight beyond), verify clean. */
static void e2e_check(const char *dir, int backend, uint64_t acked, const char *what) {
    eng_options o = e2e_opts(backend);
    tu_reports rep;
    tu_reports_init(&rep);
    o.on_corruption = tu_collect;
    o.on_corruption_ctx = &rep;
    eng_db *db = NULL;
    int rc = eng_open(dir, &o, &db);
    char buf[2048];
    cr_assert_eq(rc, ENG_OK, "%s: reopen after power loss: %s\n%s", what, eng_strerror(rc),
                 tu_reports_str(&rep, buf, sizeof buf));
    size_t cap = acked + 16, m = 0;
    uint64_t *steps = malloc(cap * sizeof *steps);
    cr_assert(steps);
    uint64_t inv = 1; /* E2E_MUL^-1 mod 2^64 by Newton's iteration, then masked */
    for (int k = 0; k < 6; k++) inv *= 2 - (uint64_t)E2E_MUL * inv;
    eng_iter *it = NULL;
    eng_iter_options io = { 0 };
    cr_assert_eq(eng_iter_open(db, &io, &it), ENG_OK);
    uint8_t want[CU_VMAX];
    for (rc = eng_iter_first(it); rc == ENG_OK; rc = eng_iter_next(it)) {
        size_t kl, vl;
        const void *k = eng_iter_key(it, &kl), *v = eng_iter_value(it, &vl);
        int64_t idx = cu_key_index(k, kl);
        cr_assert(idx >= 0 && idx < (int64_t)E2E_SPACE, "%s: a key that was never written", what);
        size_t wl = cu_val(want, (uint64_t)idx, 0, 0, 0);
        cr_assert(tu_bytes_eq(v, vl, want, wl), "%s: key %lld has a wrong value", what, (long long)idx);
        cr_assert(m < cap, "%s: more than %zu keys present, %llu acknowledged", what, m,
                  (unsigned long long)acked);
        steps[m++] = (((uint64_t)idx - 12345u) * inv) & (E2E_SPACE - 1);
    }
    cr_assert_eq(rc, ENG_NOTFOUND, "%s: scan ended with %s", what, eng_strerror(rc));
    eng_iter_close(it);
    qsort(steps, m, sizeof *steps, cmp_u64);
    for (size_t i = 0; i < m; i++)
        cr_assert_eq(steps[i], i, "%s: not a prefix of the commits: step %zu missing (%zu keys present)", what, i,
                     m);
    cr_assert(m >= acked && m <= acked + 1, "%s: %zu keys present, %llu acknowledged", what, m,
              (unsigned long long)acked);
    free(steps);
    cu_verify_clean(db, what);
    rc = eng_close(db);
    cr_assert_eq(rc, ENG_OK, "%s: close: %s", what, eng_strerror(rc));
}

static void e2e_run(int backend) {
    size_t undone = 0;
    int round;
    /* Two crashes, and more (up to six) while none left anything to undo:
     * a kill right after a checkpoint's data sync leaves nothing unsynced. */
    for (round = 0; round < 2 || (undone == 0 && round < 6); round++) {
        fx f;
        fx_init(&f);
        tu_rm_rf(f.db); /* the child creates the database */
        uint64_t seed = cu_seed(0x900 + (uint64_t)backend * 8 + (uint64_t)round);
        tu_rng rng = { seed };
        uint64_t target = tu_range(&rng, 1500, 5000);
        int fds[2];
        cu_pipe(fds);
        pid_t pid = cu_fork();
        if (pid == 0) {
            close(fds[0]);
            e2e_child(f.db, f.run, backend, fds[1]);
        }
        close(fds[1]);
        uint64_t acked = 0, idx;
        while (acked < target && cu_read_all(fds[0], &idx, sizeof idx) == sizeof idx) {
            cr_assert_eq(idx, acked);
            acked++;
        }
        kill(pid, SIGKILL);
        while (cu_read_all(fds[0], &idx, sizeof idx) == sizeof idx) acked++; /* acks already sent */
        close(fds[0]);
        int st = cu_wait(pid);
        char sb[64];
        cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "round %d: the child ended with %s after %llu acks",
                  round, cu_status_str(st, sb, sizeof sb), (unsigned long long)acked);

        static const char *const modes[] = { "rollback", "tear", "mixed" };
        char seedbuf[32];
        snprintf(seedbuf, sizeof seedbuf, "%llu", (unsigned long long)seed);
        for (int mi = 0; mi < 3; mi++) {
            char prefix[200];
            snprintf(prefix, sizeof prefix, "%s/%s-", f.root, modes[mi]);
            pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", seedbuf, "--variants", "3", "--mode",
                             modes[mi], "--out-prefix", prefix, NULL));
            for (int v = 0; v < 3; v++) {
                char dir[256], what[400];
                snprintf(dir, sizeof dir, "%s%d", prefix, v);
                snprintf(what, sizeof what, "%s round %d seed %s mode %s variant %d (%llu acked)",
                         tu_backend_name(backend), round, seedbuf, modes[mi], v, (unsigned long long)acked);
                e2e_check(dir, backend, acked, what);
                tu_rm_rf(dir);
            }
        }
        lrecs L = { 0 };
        ledger_load(&f, &L);
        undone += L.n;
        free(L.r);

        /* In place, then the journal is reset. */
        pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", seedbuf, "--mode", "mixed", NULL));
        cr_assert_eq(size_of(f.run, "journal"), 0);
        char what[200];
        snprintf(what, sizeof what, "%s round %d seed %s in place", tu_backend_name(backend), round, seedbuf);
        e2e_check(f.db, backend, acked, what);
        tu_cleanup();
    }
    /* Not vacuous: some state lost something (the kill lands at random,
     * but scattered keys leave evicted pages unsynced nearly always). */
    cr_assert(undone > 0, "no power-loss decision undid anything in %d crashes of 10 states each", round);
    cr_log_info("%s: %zu undo decisions over %d crashes", tu_backend_name(backend), undone, round);
}

TU_BACKEND_TEST(powerloss, engine_survives_every_power_loss_state, T_OPTS) { e2e_run(*backend); }
