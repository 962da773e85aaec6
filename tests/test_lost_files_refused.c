/*
 * test_lost_files_refused.c -- a directory that holds part of a database
 * is refused, never re-created over, and creating a database is atomic
 * under crashes (rules F1-F5 at the top of engine/engine.c).
 *
 * Claims, numbered for the tests below:
 *   R  refused: a database with its control file, its data file or a WAL
 *      segment lost fails every open (writable with create_if_missing,
 *      read-only, without create) with ENG_CORRUPTION and a report naming
 *      the missing file (layer control, or wal_record for a segment);
 *      eng_probe_dir and eng_verify_dir say the same.
 *   U  unchanged: after those opens every file of the directory has the
 *      size and bytes it had before, no file came or went (LOCK included:
 *      a directory without one does not get one from a refused open).
 *   C  created only where nothing of a database is (an empty directory,
 *      one with only LOCK, one with only files that are not the engine's),
 *      or over the debris of an interrupted creation (CREATING present).
 *   A  atomic creation: a crash before any one I/O operation of a creation
 *      (the process killed there), with or without a power-loss step after
 *      it (unsynced writes rolled back, torn, mixed), leaves a directory
 *      that is either no database (probe ENG_NOTFOUND, and a writable open
 *      creates one) or a whole one (opens, empty, verifies clean); never
 *      one that is refused, nor a half database that opens.
 *
 * Tests:
 *   control_removed_is_refused_and_nothing_changes          R U
 *   control_removed_refused_without_creating_lock           R U
 *   only_wal_segments_or_control_tmp_are_refused            R U
 *   data_removed_is_refused_and_nothing_changes             R U
 *   redo_segment_removed_is_refused_and_nothing_changes     R U (F4)
 *   middle_segment_removed_is_refused_and_nothing_changes   R U (W3, after a crash)
 *   database_created_only_where_none_of_its_files_are       C
 *   creation_debris_with_marker_is_cleared_and_recreated    C, read-only leaves it
 *   stale_marker_beside_control_is_removed                  F5
 *   crash_before_every_creation_step_leaves_none_or_whole   A (psync; every I/O
 *                                                           operation; 3 power-loss
 *                                                           modes x 2 variants each)
 *
 * build/powerloss is found as $BUILD/powerloss (BUILD defaults to build),
 * relative to the repository root the suite runs from.
 */
#include <spawn.h>
#include <xxhash.h>

#include "crashutil.h"
#include "journal.h"

extern char **environ;

#define T_OPTS .timeout = 300, .fini = cu_fini

/* ---- a directory's listing, sizes and hashes ----------------------------------- */

#define SNAP_MAX 64
typedef struct snap {
    int n;
    char name[SNAP_MAX][320]; /* relative path; directories end in '/' */
    uint64_t size[SNAP_MAX], hash[SNAP_MAX];
} snap;

static void snap_add(snap *s, const char *root, const char *rel) {
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", root, *rel ? "/" : "", rel);
    DIR *d = opendir(path);
    cr_assert(d != NULL, "opendir %s: %s", path, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char r[300], p[4400];
        snprintf(r, sizeof r, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
        snprintf(p, sizeof p, "%s/%s", root, r);
        struct stat st;
        cr_assert(lstat(p, &st) == 0, "lstat %s", p);
        cr_assert(s->n < SNAP_MAX, "too many files under %s", root);
        int i = s->n++;
        if (S_ISDIR(st.st_mode)) {
            snprintf(s->name[i], sizeof s->name[i], "%s/", r);
            s->size[i] = s->hash[i] = 0;
            snap_add(s, root, r);
        } else {
            snprintf(s->name[i], sizeof s->name[i], "%s", r);
            size_t len;
            uint8_t *b = cu_read_file(p, &len);
            s->size[i] = len;
            s->hash[i] = XXH3_64bits(b, len);
            free(b);
        }
    }
    closedir(d);
}

static int snap_cmp(const void *a, const void *b) { return strcmp(a, b); }

/* Every entry under DIR with its size and XXH3, sorted by name. */
static void snap_take(const char *dir, snap *s) {
    memset(s, 0, sizeof *s);
    snap_add(s, dir, "");
    /* sort the three arrays together by name (small n: insertion) */
    for (int i = 1; i < s->n; i++)
        for (int j = i; j > 0 && snap_cmp(s->name[j - 1], s->name[j]) > 0; j--) {
            char t[320];
            memcpy(t, s->name[j], sizeof t);
            memcpy(s->name[j], s->name[j - 1], sizeof t);
            memcpy(s->name[j - 1], t, sizeof t);
            uint64_t x = s->size[j];
            s->size[j] = s->size[j - 1];
            s->size[j - 1] = x;
            x = s->hash[j];
            s->hash[j] = s->hash[j - 1];
            s->hash[j - 1] = x;
        }
}

static const char *snap_str(const snap *s, char *buf, size_t cap) {
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < s->n && at + 1 < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "  %s %llu %016llx\n", s->name[i], (unsigned long long)s->size[i],
                               (unsigned long long)s->hash[i]);
    return buf;
}

/* U: DIR is exactly as BEFORE. */
static void snap_same(const char *dir, const snap *before, const char *what) {
    snap now;
    snap_take(dir, &now);
    char a[4096], b[4096];
    int same = now.n == before->n;
    for (int i = 0; same && i < now.n; i++)
        same =
            !strcmp(now.name[i], before->name[i]) && now.size[i] == before->size[i] && now.hash[i] == before->hash[i];
    cr_assert(same, "%s: the directory changed.\nbefore:\n%safter:\n%s", what, snap_str(before, a, sizeof a),
              snap_str(&now, b, sizeof b));
}

static int snap_has(const snap *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->name[i], name)) return 1;
    return 0;
}

/* ---- databases to take files from ------------------------------------------------- */

static eng_options small_opts(tu_reports *rep) {
    eng_options o;
    eng_options_init(&o);
    o.io_backend = ENG_IO_PSYNC;
    o.page_size = 4096;
    o.wal_segment_size = 64u << 10;
    o.checkpoint_wal_bytes = 0; /* only eng_checkpoint: the log keeps every segment */
    o.sync_mode = ENG_SYNC_COMMIT;
    if (rep) {
        o.on_corruption = tu_collect;
        o.on_corruption_ctx = rep;
    }
    return o;
}

static void put_keys(eng_db *db, uint64_t from, uint64_t n) {
    for (uint64_t i = from; i < from + n; i++) {
        char k[CU_KLEN + 1];
        uint8_t v[CU_VMAX];
        size_t kl = cu_key(k, i), vl = cu_val(v, i, 0, 0, 0);
        int rc = eng_put(db, k, kl, v, vl, NULL);
        cr_assert_eq(rc, ENG_OK, "put %llu: %s", (unsigned long long)i, eng_strerror(rc));
    }
}

static size_t val0(void *ctx, uint64_t i, uint8_t buf[CU_VMAX]) {
    (void)ctx;
    return cu_val(buf, i, 0, 0, 0);
}

/* A closed database of N keys in DIR. */
static void make_db(const char *dir, uint64_t n) {
    eng_options o = small_opts(NULL);
    eng_db *db = tu_open(dir, &o);
    put_keys(db, 0, n);
    tu_close(db);
}

/* A database of N keys in DIR left as a crash leaves it: the writer ends
 * without closing (no checkpoint since creation), so the log holds every
 * segment since the start and the redo point is the first record. */
static void make_crashed_db(const char *dir, uint64_t n) {
    pid_t pid = cu_fork();
    if (pid == 0) {
        eng_options o = small_opts(NULL);
        eng_db *db = NULL;
        if (eng_open(dir, &o, &db) != ENG_OK) _exit(CU_EXIT_FAIL);
        for (uint64_t i = 0; i < n; i++) {
            char k[CU_KLEN + 1];
            uint8_t v[CU_VMAX];
            size_t kl = cu_key(k, i), vl = cu_val(v, i, 0, 0, 0);
            if (eng_put(db, k, kl, v, vl, NULL) != ENG_OK) _exit(CU_EXIT_FAIL);
        }
        _exit(CU_EXIT_DONE); /* no close: as if killed */
    }
    int st = cu_wait(pid);
    char sb[64];
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_DONE, "writer child: %s", cu_status_str(st, sb, sizeof sb));
}

static void rm_file(const char *dir, const char *name) {
    char p[4096];
    cr_assert(unlink(tu_path(p, sizeof p, dir, name)) == 0, "unlink %s: %s", p, strerror(errno));
}

/* ---- R and U: every kind of open refuses DIR and changes nothing ---------------------- */

static int report_matches(const eng_corruption *r, int layer, const char *file, const char *words) {
    return r->layer == layer && !strcmp(r->file, file) && strstr(r->detail, words) != NULL;
}

/* Every open of DIR fails with ENG_CORRUPTION and a report of LAYER on
 * FILE whose detail holds WORDS; verify_dir says so too, and with
 * PROBE_SEES eng_probe_dir (which reads no log: a segment lost after the
 * checkpoint record is found by the open's walk, W3); DIR is unchanged
 * after each. */
static void assert_refused(const char *dir, int layer, const char *file, const char *words, const char *what,
                           int probe_sees) {
    snap before;
    snap_take(dir, &before);
    static const struct {
        int create, read_only;
        const char *name;
    } modes[] = {
        {1, 0, "writable, create_if_missing"},
        {0, 0, "writable, no create"},
        {0, 1, "read-only"},
    };
    char buf[2048], w[256];
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        tu_reports rep;
        tu_reports_init(&rep);
        eng_options o = small_opts(&rep);
        o.create_if_missing = modes[m].create;
        o.read_only = modes[m].read_only;
        eng_db *db = NULL;
        int rc = eng_open(dir, &o, &db);
        snprintf(w, sizeof w, "%s: open %s", what, modes[m].name);
        cr_assert_eq(rc, ENG_CORRUPTION, "%s: %s (wanted corruption)", w, eng_strerror(rc));
        cr_assert(db == NULL);
        int found = 0;
        for (size_t i = 0; i < rep.n && !found; i++) found = report_matches(&rep.r[i], layer, file, words);
        cr_assert(found, "%s: no report of layer %s on %s saying \"%s\":\n%s", w, eng_layer_name(layer), file, words,
                  tu_reports_str(&rep, buf, sizeof buf));
        snap_same(dir, &before, w);
    }
    tu_reports rep;
    tu_reports_init(&rep);
    int rc = eng_probe_dir(dir, tu_collect, &rep);
    cr_assert_eq(rc, probe_sees ? ENG_CORRUPTION : ENG_OK, "%s: eng_probe_dir: %s", what, eng_strerror(rc));
    if (probe_sees)
        cr_assert(rep.n == 1 && report_matches(&rep.r[0], layer, file, words), "%s: eng_probe_dir reports:\n%s", what,
                  tu_reports_str(&rep, buf, sizeof buf));
    snap_same(dir, &before, "eng_probe_dir");

    tu_reports_reset(&rep);
    eng_options o = small_opts(NULL);
    uint64_t problems = 0;
    rc = eng_verify_dir(dir, &o, tu_collect, &rep, &problems);
    cr_assert_eq(rc, ENG_CORRUPTION, "%s: eng_verify_dir: %s", what, eng_strerror(rc));
    int found = 0;
    for (size_t i = 0; i < rep.n; i++) found += report_matches(&rep.r[i], layer, file, words);
    cr_assert(found == 1 && problems >= 1,
              "%s: eng_verify_dir (%llu problems) should report the missing file once:\n%s", what,
              (unsigned long long)problems, tu_reports_str(&rep, buf, sizeof buf));
    snap_same(dir, &before, "eng_verify_dir");
}

Test(lost_files, control_removed_is_refused_and_nothing_changes, T_OPTS) {
    const char *db = tu_tmpdir_db();
    make_db(db, 3000);
    rm_file(db, "control");
    assert_refused(db, ENG_LAYER_CONTROL, "control", "control file is missing; present: data (", "control removed", 1);
}

Test(lost_files, control_removed_refused_without_creating_lock, T_OPTS) {
    const char *db = tu_tmpdir_db();
    make_db(db, 500);
    rm_file(db, "control");
    rm_file(db, "LOCK"); /* a copy of the files without the lock file */
    assert_refused(db, ENG_LAYER_CONTROL, "control", "WAL segment", "control and LOCK removed", 1);
    snap s;
    snap_take(db, &s);
    cr_assert(!snap_has(&s, "LOCK"), "a refused open created LOCK");
}

Test(lost_files, only_wal_segments_or_control_tmp_are_refused, T_OPTS) {
    const char *db = tu_tmpdir_db();
    make_db(db, 500);
    rm_file(db, "control");
    rm_file(db, "data");
    assert_refused(db, ENG_LAYER_CONTROL, "control", "present: 3 WAL segments (wal/", "only the log left", 1);
    /* A control.tmp alone: control's replacement was under way, so control
     * existed: it is lost, not a creation's debris (F2 keeps CREATING
     * until control is in place). */
    cu_seglist l;
    cu_list_segments(db, "wal", &l);
    char p[4096];
    for (int i = 0; i < l.n; i++) cr_assert(unlink(cu_seg_path(p, sizeof p, db, l.start[i])) == 0);
    snprintf(p, sizeof p, "%s/control.tmp", db);
    int fd = open(p, O_WRONLY | O_CREAT, 0644);
    cr_assert(fd >= 0);
    close(fd);
    assert_refused(db, ENG_LAYER_CONTROL, "control", "present: control.tmp", "only control.tmp left", 1);
}

Test(lost_files, data_removed_is_refused_and_nothing_changes, T_OPTS) {
    const char *db = tu_tmpdir_db();
    make_db(db, 3000);
    rm_file(db, "data");
    assert_refused(db, ENG_LAYER_CONTROL, "data", "data file is missing", "data removed", 1);
}

Test(lost_files, redo_segment_removed_is_refused_and_nothing_changes, T_OPTS) {
    const char *db = tu_tmpdir_db();
    make_crashed_db(db, 2000);
    cu_seglist l;
    cu_list_segments(db, "wal", &l);
    cr_assert(l.n >= 4 && l.start[0] == 0, "the load made %d segments", l.n);
    rm_file(db, "wal/0000000000000000"); /* holds the redo point and the checkpoint record */
    assert_refused(db, ENG_LAYER_WAL, "wal/0000000000000000", "WAL segment wal/0000000000000000 is missing",
                   "the redo point's segment removed", 1);
}

Test(lost_files, middle_segment_removed_is_refused_and_nothing_changes, T_OPTS) {
    const char *db = tu_tmpdir_db();
    make_crashed_db(db, 2000);
    cu_seglist l;
    cu_list_segments(db, "wal", &l);
    cr_assert(l.n >= 4, "the load made %d segments", l.n);
    char name[64], file[64];
    snprintf(name, sizeof name, "wal/%016llx", (unsigned long long)l.start[l.n / 2]);
    snprintf(file, sizeof file, "%s", name);
    rm_file(db, name);
    char words[128];
    snprintf(words, sizeof words, "WAL segment %s is missing", name);
    assert_refused(db, ENG_LAYER_WAL, file, words, "a middle segment removed", 0);
}

/* ---- C: where a database is created ------------------------------------------------------ */

/* A writable create_if_missing open of DIR creates an empty database. */
static void assert_creates(const char *dir, const char *what) {
    tu_reports rep;
    tu_reports_init(&rep);
    eng_options o = small_opts(&rep);
    eng_db *db = NULL;
    int rc = eng_open(dir, &o, &db);
    char buf[2048];
    cr_assert_eq(rc, ENG_OK, "%s: create: %s\n%s", what, eng_strerror(rc), tu_reports_str(&rep, buf, sizeof buf));
    cr_assert_eq(cu_check_prefix(db, val0, NULL, what), 0, "%s: a new database holds keys", what);
    put_keys(db, 0, 50);
    tu_close(db);
    db = tu_open(dir, &o);
    cr_assert_eq(cu_check_prefix(db, val0, NULL, what), 50, "%s: reopened", what);
    cu_verify_clean(db, what);
    tu_close(db);
    snap s;
    snap_take(dir, &s);
    cr_assert(!snap_has(&s, "CREATING"), "%s: the creation marker is still there", what);
}

Test(lost_files, database_created_only_where_none_of_its_files_are, T_OPTS) {
    const char *root = tu_tmpdir();
    char d[256], p[512];
    /* missing directory, empty directory, only LOCK, only an empty wal/,
     * files that are not the engine's */
    snprintf(d, sizeof d, "%s/missing", root);
    assert_creates(d, "missing directory");
    snprintf(d, sizeof d, "%s/empty", root);
    cr_assert(mkdir(d, 0755) == 0);
    snap s;
    snap_take(d, &s);
    eng_options o = small_opts(NULL);
    o.read_only = 1;
    eng_db *db = NULL;
    cr_assert_eq(eng_open(d, &o, &db), ENG_NOTFOUND, "read-only open of an empty directory");
    cr_assert_eq(eng_probe_dir(d, NULL, NULL), ENG_NOTFOUND);
    snap_same(d, &s, "read-only open of an empty directory");
    assert_creates(d, "empty directory");
    cr_assert_eq(eng_probe_dir(d, NULL, NULL), ENG_OK);

    snprintf(d, sizeof d, "%s/lock-only", root);
    cr_assert(mkdir(d, 0755) == 0);
    snprintf(p, sizeof p, "%s/LOCK", d);
    close(open(p, O_WRONLY | O_CREAT, 0644));
    snprintf(p, sizeof p, "%s/wal", d);
    cr_assert(mkdir(p, 0755) == 0);
    assert_creates(d, "only LOCK and an empty wal/");

    snprintf(d, sizeof d, "%s/others", root);
    cr_assert(mkdir(d, 0755) == 0);
    snprintf(p, sizeof p, "%s/notes.txt", d);
    close(open(p, O_WRONLY | O_CREAT, 0644));
    snprintf(p, sizeof p, "%s/wal", d);
    cr_assert(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/wal/README", d);
    close(open(p, O_WRONLY | O_CREAT, 0644));
    assert_creates(d, "files that are not the engine's");
    snprintf(p, sizeof p, "%s/notes.txt", d);
    cr_assert(cu_exists(p), "creation removed a file that is not the engine's");
}

Test(lost_files, creation_debris_with_marker_is_cleared_and_recreated, T_OPTS) {
    const char *db = tu_tmpdir_db();
    make_db(db, 800);
    rm_file(db, "control");
    char p[4096];
    snprintf(p, sizeof p, "%s/CREATING", db);
    close(open(p, O_WRONLY | O_CREAT, 0644));
    snprintf(p, sizeof p, "%s/control.tmp", db);
    close(open(p, O_WRONLY | O_CREAT, 0644));
    /* Opens that may not create leave debris alone and find no database. */
    snap before;
    snap_take(db, &before);
    eng_options o = small_opts(NULL);
    o.read_only = 1;
    eng_db *h = NULL;
    cr_assert_eq(eng_open(db, &o, &h), ENG_NOTFOUND, "read-only open of creation debris");
    o.read_only = 0;
    o.create_if_missing = 0;
    cr_assert_eq(eng_open(db, &o, &h), ENG_NOTFOUND, "no-create open of creation debris");
    cr_assert_eq(eng_probe_dir(db, NULL, NULL), ENG_NOTFOUND, "probe of creation debris");
    snap_same(db, &before, "opens that may not create");
    /* A creating open clears it: the new database holds none of the old keys. */
    assert_creates(db, "creation debris");
    snap s;
    snap_take(db, &s);
    cr_assert(!snap_has(&s, "control.tmp"));
}

/* A control file that is there but fails its checksum is no lost file:
 * the probe calls the directory a database (the crash test hands it to
 * the open, whose report the oracle judges), and the open refuses it with
 * a control report, changing nothing. */
Test(lost_files, damaged_control_is_a_database_the_open_refuses, T_OPTS) {
    const char *db = tu_tmpdir_db();
    make_db(db, 300);
    char p[4096];
    snprintf(p, sizeof p, "%s/control", db);
    int fd = open(p, O_RDWR);
    uint8_t b;
    cr_assert(fd >= 0 && pread(fd, &b, 1, 100) == 1);
    b ^= 0x10;
    cr_assert(pwrite(fd, &b, 1, 100) == 1);
    close(fd);
    snap before;
    snap_take(db, &before);
    tu_reports rep;
    tu_reports_init(&rep);
    cr_assert_eq(eng_probe_dir(db, tu_collect, &rep), ENG_OK);
    cr_assert_eq(rep.n, 0, "the probe reported what the open reports");
    tu_reports_init(&rep);
    eng_options o = small_opts(&rep);
    eng_db *h = NULL;
    cr_assert_eq(eng_open(db, &o, &h), ENG_CORRUPTION);
    cr_assert(rep.n >= 1 && rep.r[0].layer == ENG_LAYER_CONTROL, "no control report");
    snap_same(db, &before, "the refused open");
}

Test(lost_files, stale_marker_beside_control_is_removed, T_OPTS) {
    const char *db = tu_tmpdir_db();
    make_db(db, 300);
    char p[4096];
    snprintf(p, sizeof p, "%s/CREATING", db);
    close(open(p, O_WRONLY | O_CREAT, 0644));
    cr_assert_eq(eng_probe_dir(db, NULL, NULL), ENG_OK);
    eng_options o = small_opts(NULL);
    o.read_only = 1;
    eng_db *h = tu_open(db, &o);
    cr_assert_eq(cu_check_prefix(h, val0, NULL, "read-only"), 300);
    tu_close(h);
    cr_assert(cu_exists(p), "a read-only open removed the marker");
    o.read_only = 0;
    h = tu_open(db, &o);
    cr_assert_eq(cu_check_prefix(h, val0, NULL, "writable"), 300);
    tu_close(h);
    cr_assert(!cu_exists(p), "a writable open left the stale marker");
}

/* ---- A: a crash at every step of a creation ------------------------------------------------ */

typedef struct crash_at {
    flt_journal *j;
    int at; /* kill before the operation with this number */
    int n;  /* operations seen */
} crash_at;

static int ca_before(void *ctx, eng_io_op *op) {
    crash_at *c = ctx;
    if (c->n++ == c->at) kill(getpid(), SIGKILL);
    return flt_journal_before(c->j, op);
}
static void ca_after(void *ctx, eng_io_op *op) { flt_journal_after(((crash_at *)ctx)->j, op); }

static const char *pl_path(void) {
    static char p[512];
    const char *b = getenv("BUILD");
    snprintf(p, sizeof p, "%s/powerloss", b && *b ? b : "build");
    return p;
}

static int run_powerloss(const char *log, const char *const *args) {
    const char *argv[32];
    int n = 0;
    argv[n++] = pl_path();
    while (*args && n < 31) argv[n++] = *args++;
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    cr_assert_eq(rc, 0, "spawn %s: %s (run the suite from the repository root, or set BUILD)", argv[0], strerror(rc));
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* A: DIR after a crash of a creation is no database or a whole, empty one. */
static void assert_none_or_whole(const char *dir, const char *what) {
    tu_reports rep;
    tu_reports_init(&rep);
    char buf[2048];
    int probe = eng_probe_dir(dir, tu_collect, &rep);
    cr_assert(probe == ENG_OK || probe == ENG_NOTFOUND, "%s: eng_probe_dir: %s\n%s", what, eng_strerror(probe),
              tu_reports_str(&rep, buf, sizeof buf));
    eng_options o = small_opts(&rep);
    o.read_only = 1;
    eng_db *db = NULL;
    int rc = eng_open(dir, &o, &db);
    if (probe == ENG_NOTFOUND) {
        cr_assert_eq(rc, ENG_NOTFOUND, "%s: no database by the probe, read-only open: %s\n%s", what, eng_strerror(rc),
                     tu_reports_str(&rep, buf, sizeof buf));
    } else {
        cr_assert_eq(rc, ENG_OK, "%s: a database by the probe, read-only open: %s\n%s", what, eng_strerror(rc),
                     tu_reports_str(&rep, buf, sizeof buf));
        cr_assert_eq(cu_check_prefix(db, val0, NULL, what), 0, "%s: keys in a database nobody wrote to", what);
        cu_verify_clean(db, what);
        tu_close(db);
    }
    assert_creates(dir, what);
}

Test(lost_files, crash_before_every_creation_step_leaves_none_or_whole, T_OPTS) {
    const char *root = tu_tmpdir();
    char db[256], run[256], log[256];
    snprintf(db, sizeof db, "%s/db", root);
    snprintf(run, sizeof run, "%s/run", root);
    snprintf(log, sizeof log, "%s/powerloss.out", root);
    static const char *const modes[] = {"rollback", "tear", "mixed"};
    int at, states = 0;
    for (at = 0;; at++) {
        tu_rm_rf(db);
        tu_rm_rf(run);
        cr_assert(mkdir(db, 0755) == 0 && mkdir(run, 0755) == 0);
        pid_t pid = cu_fork();
        if (pid == 0) {
            crash_at c = {.at = at};
            if (flt_journal_open(run, db, &c.j) != 0) _exit(CU_EXIT_FAIL);
            eng_io_hooks h = {.ctx = &c, .before = ca_before, .after = ca_after};
            eng_options o = small_opts(NULL);
            o.io_hooks = &h;
            eng_db *d = NULL;
            if (eng_open(db, &o, &d) != ENG_OK) _exit(CU_EXIT_FAIL);
            _exit(CU_EXIT_DONE); /* created whole: the end of the walk */
        }
        int st = cu_wait(pid);
        char sb[64];
        if (WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_DONE) break;
        cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "crash before operation %d: the child ended with %s", at,
                  cu_status_str(st, sb, sizeof sb));
        char seed[32];
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)cu_seed(0x1c0 + (uint64_t)at));
        for (int mi = 0; mi < 3; mi++) {
            char prefix[300];
            snprintf(prefix, sizeof prefix, "%s/%s-", root, modes[mi]);
            const char *args[] = {db,  "--run-dir", run,       "--seed",       seed,   "--variants",
                                  "2", "--mode",    modes[mi], "--out-prefix", prefix, NULL};
            int rc = run_powerloss(log, args);
            cr_assert_eq(rc, 0, "powerloss %s after a crash before operation %d exited %d (see %s)", modes[mi], at, rc,
                         log);
            for (int v = 0; v < 2; v++) {
                char dir[320], what[400];
                snprintf(dir, sizeof dir, "%s%d", prefix, v);
                snprintf(what, sizeof what, "crash before operation %d, power loss %s variant %d (seed %s)", at,
                         modes[mi], v, seed);
                assert_none_or_whole(dir, what);
                tu_rm_rf(dir);
                states++;
            }
        }
        char what[200];
        snprintf(what, sizeof what, "crash before operation %d, no power loss", at);
        assert_none_or_whole(db, what);
        states++;
    }
    /* Not vacuous: a creation is a couple of dozen operations. */
    cr_assert(at >= 15, "creation took only %d operations", at);
    cr_log_info("creation: %d operations, %d crash states judged", at, states);
}
