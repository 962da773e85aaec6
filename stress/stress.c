/*
 * stress.c -- the db_stress-like driver (docs/architecture.md, One stress
 * process): N threads run a weighted mix of gets, puts, deletes, batches and
 * range scans over the key space [0, max_key) while the fault library
 * injects; every answer is checked against the expected state
 * (oracle/expected.h) and, at the end, every injected fault gets a verdict
 * (oracle/verdict.h).
 *
 * The engine is reached only through the adapter (adapter.h).  This file
 * is main and its steps; the other jobs have files of their own
 * (stress_int.h lists them).
 *
 * Life of a run:
 *
 *   parse options --(bad)--> exit 2, nothing written
 *        |
 *   open expected state, fault library (when asked), engine (recovery)
 *        |
 *   post-open check: R = recovered seq; R < durable -> lost;
 *        orc_rewind(R); every key exactly as expected (pending: either,
 *        then resolved); orc_checkpoint_trace(R)
 *        |
 *   workers ----(write fails, handle poisoned)----> reopen: close, open,
 *        |                                           post-open check
 *   settlement: faults paused, get every key, verify every page and log
 *        record, scan every key, close, verify the closed files block by block,
 *        verdict (ledger + reports + observations), report
 *
 * Invariants the driver keeps:
 *   S1  a key's expected entry changes only under its stripe lock, and a
 *       write holds the stripes of all its keys (in stripe order) from
 *       mark_pending to settle, so the expected state stays exact
 *   S2  a key left pending by a failed write is never written again
 *       before a reopen resolves it (a second pending value would hide
 *       the first, which the engine may still show)
 *   S3  workers hold the handle lock shared for each operation; reopen
 *       takes it exclusively, so it never runs under a live call
 *   S4  fault-library op numbers are (process epoch << 32 | call number):
 *       unique across the processes sharing one ledger, so an error
 *       injected in a call is matched to that call's result only
 *
 * Files in the run directory (besides the fault library's ledger and
 * journal): reports (corruption reports, one JSON line each),
 * observations (errors returned and failures seen), stress_state (epoch,
 * ledger lines already judged, whether the last run ended cleanly).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/version.h"
#include "faults/door.h"
#include "oracle/report_line.h"
#include "promises.h"
#include "stress_int.h"

/* The driver, for the two callers that cannot be handed it: on_fatal runs
 * in async-signal context (a handler takes the signal number alone) and
 * flt_options.before_kill is called with the kill point alone.  Set by
 * prepare_run_dir before it installs the handler, and so before
 * open_faults gives the fault library the callback; every other function
 * takes the driver as an argument. */
static st_driver *handler_driver;

/* ---- crash of the engine: a signal ---- */

static void on_fatal(int sig) {
    const st_driver *d = handler_driver;
    if (write(2, d->crash_msg, d->crash_len) < 0) {}
    static const char line[] = ORC_OBS_CRASH_LINE;
    if (d->obs_fd >= 0 && write(d->obs_fd, line, sizeof line - 1) < 0) {}
    signal(sig, SIG_DFL);
    raise(sig);
}

/* ---- setup helpers ---- */

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

void st_rm_rf(const char *p) { nftw(p, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* Makes DIR itself, never a parent: a mistyped path must not grow a tree
 * beside the intended one (check_targets refused a missing parent before
 * anything was written).  0 when DIR exists afterwards, else -1 (errno). */
static int mkdir_one(const char *dir) { return mkdir(dir, 0755) && errno != EEXIST ? -1 : 0; }

/* REPRO (CAP bytes): the command line ARGV, shell-quoted. */
static void build_repro(char *repro, size_t cap, int argc, char **argv) {
    size_t n = 0;
    for (int i = 0; i < argc && n + 4 < cap; i++) {
        const char *a = argv[i];
        int plain = *a != 0;
        for (const char *c = a; *c; c++)
            if (!(isalnum((unsigned char)*c) || strchr("-_=./,:+@%", *c))) plain = 0;
        if (i) repro[n++] = ' ';
        if (plain)
            n += (size_t)snprintf(repro + n, cap - n, "%s", a);
        else {
            repro[n++] = '\'';
            for (const char *c = a; *c && n + 6 < cap; c++) {
                if (*c == '\'')
                    n += (size_t)snprintf(repro + n, cap - n, "'\\''");
                else
                    repro[n++] = *c;
            }
            repro[n++] = '\'';
        }
        if (n >= cap) n = cap - 1;
    }
    repro[n < cap ? n : cap - 1] = 0;
}

/* Value-size parameters live with the expected state: values written by
 * an earlier run must be checked with the sizes they were written with.
 * *SZ: O's sizes, or those EXP_DIR's "values" file keeps (written from O's
 * when there is none). */
static void value_params(st_value_sizes *sz, const st_options *o, const char *exp_dir) {
    sz->vmin = o->value_size_min, sz->vmax = o->value_size_max;
    sz->large_one_in = o->large_value_one_in, sz->large_max = o->large_value_size;
    if (sz->large_max < sz->vmax + 1) sz->large_max = sz->vmax + 1;
    if (sz->large_max < 4096) sz->large_max = 4096;
    char p[4200];
    st_path_in(p, sizeof p, exp_dir, "values");
    FILE *f = fopen(p, "r");
    if (f) {
        unsigned long long a, b, c, d;
        if (fscanf(f, "%llu %llu %llu %llu", &a, &b, &c, &d) == 4 &&
            (a != sz->vmin || b != sz->vmax || c != sz->large_one_in || d != sz->large_max)) {
            fprintf(stderr,
                    "stress: note: keeping the value sizes of the expected state (%llu..%llu, large 1 in %llu up to "
                    "%llu)\n",
                    a, b, c, d);
            sz->vmin = a, sz->vmax = b, sz->large_one_in = c, sz->large_max = d;
        }
        fclose(f);
        return;
    }
    f = fopen(p, "w");
    if (f) {
        fprintf(f, "%llu %llu %llu %llu\n", (unsigned long long)sz->vmin, (unsigned long long)sz->vmax,
                (unsigned long long)sz->large_one_in, (unsigned long long)sz->large_max);
        fclose(f);
    }
}

typedef struct carried_scan {
    size_t i, from, to;
    vd_config *vc;
    int powerloss; /* a line of the power-loss step is among them */
} carried_scan;

static void scan_carried(void *ctx, const char *line) {
    carried_scan *cs = ctx;
    size_t i = cs->i++;
    vd_injection j;
    if (i < cs->from || i >= cs->to || vd_parse_ledger_line(line, &j)) return;
    if (j.cls >= 0 && j.cls < VD_CLASS_COUNT) cs->vc->class_on[j.cls] = 1;
    cs->powerloss |= vd_from_powerloss_step(&j);
}

/* ---- main ---- */

/* ---- the steps of a run (main) ----
 *
 * Each step that may end the run returns GO_ON to go on, else the exit
 * code (EXIT_*). */
enum { GO_ON = -1 };

/* A directory the run writes in (OPT names its option): an existing
 * directory stress may write, or one it can make in an existing, writable
 * parent.  A missing parent is refused, never made: a mistyped path would
 * otherwise start a new database and expected state beside the intended
 * ones, and the run would pass against the wrong files.  Returns GO_ON,
 * or EXIT_USAGE with one line naming the path (and errno's text). */
static int check_dir_target(const char *opt, const char *dir) {
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode)) {
            fprintf(stderr, "stress: %s %s: %s\n", opt, dir, strerror(ENOTDIR));
            return EXIT_USAGE;
        }
        if (access(dir, W_OK | X_OK) != 0) {
            fprintf(stderr, "stress: %s %s: %s\n", opt, dir, strerror(errno));
            return EXIT_USAGE;
        }
        return GO_ON;
    }
    if (errno != ENOENT) {
        fprintf(stderr, "stress: %s %s: %s\n", opt, dir, strerror(errno));
        return EXIT_USAGE;
    }
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", dir);
    size_t len = strlen(parent);
    while (len > 1 && parent[len - 1] == '/') parent[--len] = 0;
    char *slash = strrchr(parent, '/');
    if (!slash)
        snprintf(parent, sizeof parent, ".");
    else if (slash == parent)
        parent[1] = 0;
    else
        *slash = 0;
    if (stat(parent, &sb) != 0) {
        if (errno == ENOENT)
            fprintf(stderr, "stress: %s %s: its parent %s does not exist (only the directory itself is made)\n", opt,
                    dir, parent);
        else
            fprintf(stderr, "stress: %s %s: its parent %s: %s\n", opt, dir, parent, strerror(errno));
        return EXIT_USAGE;
    }
    if (!S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "stress: %s %s: its parent %s: %s\n", opt, dir, parent, strerror(ENOTDIR));
        return EXIT_USAGE;
    }
    if (access(parent, W_OK | X_OK) != 0) {
        fprintf(stderr, "stress: %s %s: cannot create it in %s: %s\n", opt, dir, parent, strerror(errno));
        return EXIT_USAGE;
    }
    return GO_ON;
}

/* Usage checks of what the options name, before anything is written (a
 * run refused here leaves no state a later run could take for a kill):
 * every --kill_points name is a kill point of the catalogue (the bad one
 * named); --db, the expected-values directory and the run directory each
 * pass check_dir_target.  Returns GO_ON or EXIT_USAGE. */
static int check_targets(const st_driver *d) {
    if (d->o.kill_points) {
        if (!d->o.kill_random_test) {
            fprintf(stderr, "stress: --kill_points needs --kill_random_test (no point would be armed)\n");
            return EXIT_USAGE;
        }
        int names = 0;
        for (const char *s = d->o.kill_points; *s;) {
            while (*s == ' ' || *s == ',') s++;
            if (!*s) break;
            size_t n = strcspn(s, ",");
            while (n && s[n - 1] == ' ') n--;
            int known = 0;
            for (size_t i = 0; i < st_point_count(d) && !known; i++) {
                const char *nm = st_point_name(d, i);
                known = strncmp(nm, "kill/", 5) == 0 && strlen(nm) == n && memcmp(nm, s, n) == 0;
            }
            if (!known) {
                fprintf(stderr,
                        "stress: --kill_points: '%.*s' is not a kill point of the catalogue "
                        "(--list_fault_points lists them; kill points start with kill/)\n",
                        (int)n, s);
                return EXIT_USAGE;
            }
            names++;
            s += strcspn(s, ",");
        }
        if (!names) {
            fprintf(stderr, "stress: --kill_points: no kill point named\n");
            return EXIT_USAGE;
        }
    }
    if (d->o.delay_sites) {
        const char *bad = d->o.delay_one_in ? flt_delay_sites_invalid(d->o.delay_sites) : NULL;
        if (!d->o.delay_one_in) {
            fprintf(stderr, "stress: --delay_sites needs --delay_one_in (no site would pause)\n");
            return EXIT_USAGE;
        }
        if (bad) {
            fprintf(stderr,
                    "stress: --delay_sites: '%.*s' is not a delay site (the engine's delay/ points of "
                    "--list_fault_points, or hook/{read,write,sync}/{before,after})\n",
                    (int)strcspn(bad, ","), bad);
            return EXIT_USAGE;
        }
    }
    const char *bad = d->o.fault_files ? flt_fault_files_invalid(d->o.fault_files) : NULL;
    if (bad) {
        fprintf(stderr, "stress: --fault_files: '%.*s' is not a file kind (data, wal, control, dir)\n",
                (int)strcspn(bad, ","), bad);
        return EXIT_USAGE;
    }
    int rc = check_dir_target("--db", d->o.db);
    if (rc == GO_ON) rc = check_dir_target("--expected_values_dir", d->exp_dir);
    if (rc == GO_ON && strcmp(d->run_dir, d->exp_dir) != 0) rc = check_dir_target("--run_dir", d->run_dir);
    return rc;
}

void st_open_options_from(const st_options *o, st_driver *d, st_open_options *eo) {
    *eo = (st_open_options){
        .page_size = (uint32_t)o->page_size,
        .cache_size = o->cache_size,
        .data_checksums = o->data_checksums,
        .full_page_writes = o->full_page_writes,
        .wal_log_hints = o->wal_log_hints,
        .hint_fpi = o->hint_fpi,
        .vacuum_freeze_min_age = o->vacuum_freeze_min_age,
        .wal_compression = o->wal_compression,
        .block_protection_bytes_per_key = (int)o->block_protection_bytes_per_key,
        .kv_lazy_leaves = o->kv_lazy_leaves,
        .io_backend = o->io_backend,
        .sync_mode = o->sync_mode,
        .wal_segment_size = o->wal_segment_size,
        .first_xid = o->first_xid,
        .checkpoint_wal_bytes = o->checkpoint_wal_bytes,
        .sqlite_journal_mode = o->sqlite_journal_mode,
        .sqlite_synchronous = o->sqlite_synchronous,
        .rocksdb_wal_recovery_mode = (int)o->rocksdb_wal_recovery_mode,
        .on_corruption = st_on_corruption,
        .on_corruption_ctx = d,
    };
}

/* From the comma list HOOKS of the options that need the fault library's
 * hooks, those the door serves an engine without hooks of its own: the
 * power-loss journal (--sync_fault_injection) needs only the file calls'
 * writes, fsyncs and metadata operations.  The fault classes wait: their
 * judgement of another engine's pages and the libfiu points it lacks are
 * not there yet. */
/* The kill points an engine offers: ours has its own catalogue
 * (engine/faultpoints.h); another engine, reached through the door, the
 * door's (faults.h) on the kinds of file it has (kill/door/OP/KIND with
 * KIND among its file_kinds, and those on any file). */
static int door_point_applies(const st_driver *d, size_t k) {
    const char *kind = flt_door_kill_point_kind(k);
    return !kind || !strcmp(kind, "dir") || (d->E->file_kinds && st_opt_listed(d->E->file_kinds, kind));
}
static size_t door_index(const st_driver *d, size_t i) { /* the catalogue's I-th applying point */
    for (size_t k = 0; k < flt_door_kill_point_count(); k++)
        if (door_point_applies(d, k) && i-- == 0) return k;
    return (size_t)-1;
}
size_t st_point_count(const st_driver *d) {
    if (d->E == &st_engine_ours) return d->E->fault_point_count();
    size_t n = 0;
    for (size_t k = 0; k < flt_door_kill_point_count(); k++) n += door_point_applies(d, k);
    return n;
}
const char *st_point_name(const st_driver *d, size_t i) {
    return d->E == &st_engine_ours ? d->E->fault_point_name(i) : flt_door_kill_point_name(door_index(d, i));
}
const char *st_point_what(const st_driver *d, size_t i) {
    return d->E == &st_engine_ours ? d->E->fault_point_what(i) : flt_door_kill_point_what(door_index(d, i));
}

/* 1 if the door serves hook option NAME (N bytes) to engine E: the
 * power-loss journal and the kill points, and each fault class its
 * promise table lets the door serve it (promises.h, PR2). */
static int door_serves(const st_engine *E, const char *name, size_t n) {
    static const char *const crash[] = {"sync_fault_injection", "kill_random_test", "kill_points", NULL};
    for (size_t i = 0; crash[i]; i++)
        if (strlen(crash[i]) == n && !strncmp(crash[i], name, n)) return 1;
    for (int c = 0; c < VD_CLASS_COUNT; c++) {
        const char *opt = flt_class_option(c);
        if (opt && strlen(opt) == n && !strncmp(opt, name, n))
            return st_promise_door_serves(st_promises_of(E), vd_class_name(c));
    }
    return 0;
}

static void drop_door_served(const st_engine *E, char *hooks) {
    char out[2048] = "";
    size_t len = 0;
    for (const char *c = hooks; *c; c += strcspn(c, ","), c += *c == ',') {
        size_t n = strcspn(c, ",");
        if (!door_serves(E, c, n) && len + n + 2 < sizeof out)
            len += (size_t)snprintf(out + len, sizeof out - len, "%s%.*s", len ? "," : "", (int)n, c);
    }
    memcpy(hooks, out, len + 1);
}

static int known_class(const char *name) { return vd_class_from_name(name) >= 0; }

/* --promises, --promises_table: the engine's promise table, checked
 * (PR1-PR3: a table that breaks them is this build's bug). */
static int print_promises(const st_driver *d) {
    const st_promises *t = st_promises_of(d->E);
    char why[256];
    if (st_promises_check(t, known_class, why, sizeof why)) {
        fprintf(stderr, "stress: the promise table is broken: %s\n", why);
        return EXIT_INFRA;
    }
    const char *version = d->E->library_version ? d->E->library_version() : NULL;
    if (d->o.promises) st_promises_json(t, version, st_option_default, stdout);
    if (d->o.promises_table) st_promises_markdown(t, version, stdout);
    return EXIT_PASS;
}

/* Options, the adapter's check of them, the directories' names, the
 * judge's configuration.  Nothing is written. */
static int parse(st_driver *d, int argc, char **argv) {
    if (st_parse_options(argc, argv, &d->o)) return EXIT_USAGE;
    d->E = d->o.engine == 1 ? &st_engine_rocksdb : d->o.engine == 2 ? &st_engine_sqlite : &st_engine_ours;
    if (d->o.help) {
        st_print_help(stdout);
        return EXIT_PASS;
    }
    if (d->o.version) {
        version_print(stdout, "stress");
        const st_engine *others[] = {&st_engine_rocksdb, &st_engine_sqlite};
        for (size_t i = 0; i < sizeof others / sizeof *others; i++)
            printf("engine %s %s\n", others[i]->name, others[i]->library_version());
        return EXIT_PASS;
    }
    if (d->o.list_fault_points) {
        for (size_t i = 0; i < st_point_count(d); i++) printf("%-44s %s\n", st_point_name(d, i), st_point_what(d, i));
        return EXIT_PASS;
    }
    if (d->o.promises || d->o.promises_table) return print_promises(d);
    if (d->E->planted_bug && d->E->planted_bug())
        fprintf(stderr, "stress: this engine carries the planted bug '%s' (tests/mutants.txt): not the real engine\n",
                d->E->planted_bug());
    st_open_options_from(&d->o, d, &d->eo);
    if (d->o.wal_sweep && !d->E->check_log) {
        fprintf(stderr, "stress: --wal_sweep: --engine %s has no read-only recovery to judge the sweep by\n",
                d->E->name);
        return EXIT_USAGE;
    }
    if (d->o.faults_via == 1 && d->E == &st_engine_ours && d->o.io_backend != 1) {
        /* io_uring's reads and writes never pass through libc's file
         * calls, so the door would see the opens and fsyncs alone. */
        fprintf(stderr,
                "stress: --faults_via posix: our engine's io_uring backend bypasses libc's file calls, which the door "
                "translates: add --io_backend psync\n");
        return EXIT_USAGE;
    }
    /* What the adapter refuses, it refuses by name: the lists live only
     * while it checks (no open reads them). */
    char hooks[2048], changed[4096];
    st_options_changed(&d->o, 1, hooks, sizeof hooks);
    if (d->o.faults_via == 1 && d->E != &st_engine_ours) drop_door_served(d->E, hooks);
    st_options_changed(&d->o, 0, changed, sizeof changed);
    for (const char *c = changed; *c; c += strcspn(c, ","), c += *c == ',') {
        size_t n = strcspn(c, ",");
        int sq = n > 7 && !strncmp(c, "sqlite_", 7), rk = n > 8 && !strncmp(c, "rocksdb_", 8);
        if ((sq && d->E != &st_engine_sqlite) || (rk && d->E != &st_engine_rocksdb)) {
            static const char *const names[] = {"ours", "rocksdb", "sqlite"};
            fprintf(stderr, "stress: --%.*s is an option of --engine %s, not of --engine %s\n", (int)n, c,
                    sq ? "sqlite" : "rocksdb", names[d->o.engine]);
            return EXIT_USAGE;
        }
    }
    d->eo.hook_options = hooks[0] ? hooks : NULL;
    d->eo.changed_options = changed[0] ? changed : NULL;
    char why[512];
    int crc = d->E->check_options(&d->eo, why, sizeof why);
    d->eo.hook_options = d->eo.changed_options = NULL;
    if (crc != ST_OK) {
        fprintf(stderr, "stress: %s\n", why);
        return EXIT_USAGE;
    }
    if (d->o.expected_values_dir)
        snprintf(d->exp_dir, sizeof d->exp_dir, "%s", d->o.expected_values_dir);
    else {
        /* Beside the database, also for "--db DIR/": "DIR/.expected"
         * would lie inside a directory not yet made. */
        int n = (int)strlen(d->o.db);
        while (n > 1 && d->o.db[n - 1] == '/') n--;
        snprintf(d->exp_dir, sizeof d->exp_dir, "%.*s.expected", n, d->o.db);
    }
    snprintf(d->run_dir, sizeof d->run_dir, "%s", d->o.run_dir ? d->o.run_dir : d->exp_dir);
    d->o.expected_values_dir = d->exp_dir; /* as resolved, for the report */
    d->o.run_dir = d->run_dir;
    int trc = check_targets(d);
    if (trc != GO_ON) return trc;
    build_repro(d->repro, sizeof d->repro, argc, argv);
    d->t0 = st_now();
    d->crash_check = -1;
    d->reports_fd = d->obs_fd = -1;
    pthread_mutex_init(&d->mu, NULL);
    pthread_rwlock_init(&d->handle, NULL);

    vd_config vc = d->vc = (vd_config){.data_checksums = d->o.data_checksums,
                                       .full_page_writes = d->o.full_page_writes,
                                       .protection_bytes = (int)d->o.block_protection_bytes_per_key,
                                       .page_size = (uint32_t)d->o.page_size,
                                       .wal_segment_size = d->o.wal_segment_size,
                                       .promise_of = st_promise_of,
                                       .promise_ctx = d};
    for (int i = 0; i < VD_CLASS_COUNT; i++) vc.class_on[i] = d->o.one_in[i] != 0;
    vc.class_on[VD_POWER_LOSS] = d->o.sync_fault_injection;
    vc.class_on[VD_KILL] = d->o.kill_random_test != 0;
    d->vc = vc;
    d->measuring = vd_measuring(&vc, NULL, 0);

    return GO_ON;
}

/* Put back the run state as this process found it (D->prev_state): a
 * usage error found after prepare_run_dir marked the run unclean, so the
 * next run does not take a refused command line for a crash. */
static void undo_run_state(const st_driver *d) {
    char p[4200];
    if (d->prev_state.had) {
        st_write_state(d->run_dir, d->prev_state.epoch, d->prev_state.settled, d->prev_state.clean);
    } else {
        st_path_in(p, sizeof p, d->run_dir, "stress_state");
        unlink(p);
    }
}

/* The engine whose database DIR holds, by the file each one makes first
 * (ours: control; SQLite: the adapter's db.sqlite; RocksDB: CURRENT), or
 * NULL (none of them, or no directory). */
static const char *engine_in_dir(const char *dir) {
    static const struct {
        const char *engine, *file;
    } marks[] = {{"ours", "control"}, {"sqlite", "db.sqlite"}, {"rocksdb", "CURRENT"}};
    char path[4200];
    struct stat sb;
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, marks[i].file);
        if (stat(path, &sb) == 0) return marks[i].engine;
    }
    return NULL;
}

/* Refuse a directory the engine refuses; then create or clean the
 * directories, read the run state, open the files of the run directory
 * and the expected state, install the crash handler. */
static int prepare_run_dir(st_driver *d) {
    /* Another engine's database is no database of this one: opening it
     * would create this engine's files beside the other's. */
    static const char *const names[] = {"ours", "rocksdb", "sqlite"};
    const char *found = d->o.destroy_db_initially ? NULL : engine_in_dir(d->o.db);
    if (found && strcmp(found, names[d->o.engine])) {
        fprintf(stderr,
                "stress: %s holds another engine's database (--engine %s), not one of --engine %s: nothing was "
                "changed (give --engine %s, or --destroy_db_initially to start a new database there)\n",
                d->o.db, found, names[d->o.engine], found);
        return EXIT_INFRA; /* as a directory the engine itself refuses */
    }
    /* A directory the engine refuses (files of a database with one of
     * them lost: control, data, a WAL segment) is left exactly as it is:
     * nothing of it is created over, and nothing is written beside it.
     * Only --destroy_db_initially starts a new database there. */
    if (!d->o.destroy_db_initially && d->E->probe_dir) {
        char why[320];
        if (d->E->probe_dir(d->o.db, why, sizeof why) == ST_CORRUPTION) {
            fprintf(stderr,
                    "stress: %s: the engine refuses this directory: %s\n"
                    "stress: nothing was changed; --destroy_db_initially removes it and creates a new database\n",
                    d->o.db, why);
            return EXIT_INFRA;
        }
    }

    /* ---- from here on, things are written ---- */
    if (d->o.destroy_db_initially) {
        st_rm_rf(d->o.db);
        const char *exp_files[] = {"expected", "trace", "values"};
        const char *run_files[] = {"ledger",      "journal", "journal.d", ORC_REPORTS_FILE, ORC_OBSERVATIONS_FILE,
                                   "stress_state"};
        char p[4200];
        for (size_t i = 0; i < 3; i++) st_path_in(p, sizeof p, d->exp_dir, exp_files[i]), st_rm_rf(p);
        for (size_t i = 0; i < 6; i++) st_path_in(p, sizeof p, d->run_dir, run_files[i]), st_rm_rf(p);
    }
    if (mkdir_one(d->exp_dir) || mkdir_one(d->run_dir)) {
        fprintf(stderr, "stress: cannot create %s or %s: %s\n", d->exp_dir, d->run_dir, strerror(errno));
        return EXIT_INFRA;
    }
    char p[4200];
    st_path_in(p, sizeof p, d->exp_dir, "expected");
    int have_expected = access(p, F_OK) == 0;
    st_path_in(p, sizeof p, d->o.db, "control");
    /* Another engine's database is what its probe calls one. */
    char pwhy[8];
    int has_db = d->E == &st_engine_ours ? access(p, F_OK) == 0
                                         : d->E->probe_dir && d->E->probe_dir(d->o.db, pwhy, sizeof pwhy) == ST_OK;
    if (!have_expected && has_db) {
        fprintf(stderr, "stress: %s holds a database but %s has no expected state: use --destroy_db_initially\n",
                d->o.db, d->exp_dir);
        return EXIT_INFRA;
    }
    uint64_t prev_epoch = 0;
    int clean = 1;
    size_t settled = 0;
    d->prev_state.had = st_read_state(d->run_dir, &prev_epoch, &settled, &clean) == 0;
    if (d->prev_state.had) d->crashed_before = !clean;
    d->prev_state.epoch = prev_epoch;
    d->prev_state.settled = settled;
    d->prev_state.clean = clean;
    d->epoch = prev_epoch + 1;
    d->ledger_settled = settled;
    d->ledger_start = st_ledger_lines(d->run_dir);
    if (d->ledger_start < settled) d->ledger_settled = 0; /* the ledger was replaced */
    /* Faults an earlier process injected are judged here: their classes
     * count as on (a cache flip written back by a crashed measuring run
     * makes this run measure too). */
    /* So are the classes of a replayed trace's pins (kill:POINT:N,
     * flip:BLOCK:BIT, cflip:BLOCK:BIT), which inject with no rate drawn:
     * a cache flip makes a run without per-KV codes measure, pinned or not. */
    d->vc.class_on[VD_KILL] |= st_replay_pins_kill(&d->trace);
    d->vc.class_on[VD_BITFLIP_PAGE] |= st_replay_pins_flip(&d->trace, PIN_PAGE);
    d->vc.class_on[VD_BITFLIP_CACHE] |= st_replay_pins_flip(&d->trace, PIN_CACHE);
    carried_scan cs = {0, d->ledger_settled, d->ledger_start, &d->vc, 0};
    flt_ledger_read(d->run_dir, scan_carried, &cs);
    /* A power loss after the last process wrote "clean" (killed between
     * its last state write and its exit, or a power-loss step run on a
     * cleanly closed database) is a crash all the same: its rollbacks are
     * judged by the post-crash check, not left without an open to judge. */
    if (cs.powerloss) d->crashed_before = 1;
    d->measuring = vd_measuring(&d->vc, NULL, 0);
    if (st_write_state(d->run_dir, d->epoch, d->ledger_settled, 0)) {
        fprintf(stderr, "stress: cannot write the run state in %s: %s\n", d->run_dir, strerror(errno));
        return EXIT_INFRA;
    }
    /* Every process's count starts at 0, not at an earlier process's: a
     * checking run, or one killed in its open, did no workload ops. */
    st_write_progress(d->run_dir, 0);
    st_path_in(p, sizeof p, d->run_dir, ORC_REPORTS_FILE);
    d->reports_fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    st_path_in(p, sizeof p, d->run_dir, ORC_OBSERVATIONS_FILE);
    d->obs_fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

    int rc = orc_open(d->exp_dir, d->o.max_key, d->o.seed, d->o.destroy_db_initially, &d->exp);
    if (rc) {
        fprintf(stderr, "stress: cannot open the expected state in %s: %s%s\n", d->exp_dir, strerror(-rc),
                rc == -EINVAL ? " (written for another --max_key?)" : "");
        if (rc == -EINVAL) undo_run_state(d);
        return rc == -EINVAL ? EXIT_USAGE : EXIT_INFRA;
    }
    d->nstripes = orc_nstripes(d->exp);
    d->stripe_ver = calloc(d->nstripes, sizeof *d->stripe_ver);
    d->stripe_seq = calloc(d->nstripes, sizeof *d->stripe_seq);
    value_params(&d->values, &d->o, d->exp_dir);

    d->crash_len = (size_t)snprintf(d->crash_msg, sizeof d->crash_msg,
                                    "\nstress: FAILURE crash: fatal signal in the process\n    repro: %s\n", d->repro);
    if (d->crash_len >= sizeof d->crash_msg) d->crash_len = sizeof d->crash_msg - 1;
    handler_driver = d;
    signal(SIGSEGV, on_fatal);
    signal(SIGBUS, on_fatal);
    signal(SIGFPE, on_fatal);
    signal(SIGILL, on_fatal);
    signal(SIGABRT, on_fatal);

    return GO_ON;
}

/* flt_options.before_kill: a process a kill point ends writes no report,
 * so its op count goes to RUN_DIR/progress here (the watchdog's copy is
 * up to 20 ms old: a kill early in a run would read too few).  The driver
 * is handler_driver's: the callback is given nothing else. */
static void note_ops_before_kill(const char *point, uint64_t nth) {
    st_driver *d = handler_driver;
    if (atomic_load(&d->working)) st_write_progress(d->run_dir, st_total_done(d));
    st_trace_killed(&d->trace, point, nth);
}

/* The fault library, when a fault option asks for it. */
/* The log sweep (sweep.c) before the fault library arms anything: its
 * trials' recoveries must meet their own flip alone. */
static int sweep_log(st_driver *d) {
    st_wal_sweep(d);
    return GO_ON;
}

static int open_faults(st_driver *d) {
    int rc;
    /* A trace's pins inject with no rate drawn (their classes are on:
     * prepare_run_dir). */
    if (st_faults_requested(&d->o) || st_replay_pins_kill(&d->trace) || st_replay_pins_flip(&d->trace, PIN_PAGE) ||
        st_replay_pins_flip(&d->trace, PIN_CACHE)) {
        /* Only a trace's pins get here, or what the door serves
         * (drop_door_served): check_options refused the rest. */
        int flips = st_replay_pins_flip(&d->trace, PIN_PAGE) || st_replay_pins_flip(&d->trace, PIN_CACHE);
        if (d->E != &st_engine_ours && (flips || d->o.faults_via == 0)) {
            fprintf(stderr,
                    "stress: --engine %s: the trace's flips need the fault library's hooks, which this engine "
                    "does not have (its kill pins go through the door)\n",
                    d->E->name);
            undo_run_state(d);
            return EXIT_USAGE;
        }
        flt_options fo;
        flt_options_init(&fo);
        fo.seed = d->o.seed;
        fo.run_dir = d->run_dir;
        fo.db_dir = d->o.db;
        for (int i = 0; i < FLT_CLASS_COUNT && i < VD_CLASS_COUNT; i++) fo.one_in[i] = d->o.one_in[i];
        fo.sync_fault_injection = d->o.sync_fault_injection;
        fo.cache_patterns = d->o.bitflip_cache_patterns;
        fo.kill_random_test = d->o.kill_random_test;
        fo.kill_points = d->o.kill_points;
        fo.delay_one_in = d->o.delay_one_in;
        fo.delay_max_us = d->o.delay_max_us;
        fo.delay_sites = d->o.delay_sites;
        fo.fault_files = d->o.fault_files;
        fo.kill_pins = st_replay_pins_kill(&d->trace);
        fo.before_kill = note_ops_before_kill;
        fo.via_door = d->o.faults_via == 1;
        fo.file_kind = d->E->file_kind;
        rc = flt_open(&fo, &d->flt);
        if (rc) {
            fprintf(stderr, "stress: cannot set up the fault library: %s\n", d->E->native_strerror(rc));
            if (d->E->native_status(rc) != ST_INVALID) return EXIT_INFRA;
            undo_run_state(d);
            return EXIT_USAGE;
        }
        flt_thread_start(d->flt, 0);
        if (d->o.faults_via == 0) {
            d->eo.io_hooks = flt_hooks(d->flt);
        } else {
            /* The door: the engine gets no hooks; its file calls on the
             * database directory reach them instead.  It stays armed over
             * every open and close of the handle (reopens included: a
             * closed descriptor leaves its table) until settle's close.
             * The directory must exist to be armed on (mkdir is not
             * among the calls it translates). */
            int dr = mkdir_one(d->o.db) ? -errno : flt_door_arm(flt_hooks(d->flt), d->o.db);
            if (dr) {
                fprintf(stderr, "stress: --faults_via posix: cannot arm the door on %s: %s\n", d->o.db, strerror(-dr));
                return EXIT_INFRA;
            }
        }
    }

    return GO_ON;
}

/* Open the database (recovery) and run the post-open check (after a
 * crash: the post-crash check).  *FAILED: it found a failure. */
/* --damage_at_kill: a SIGUSR2 from outside (crashtest's planned kill sends
 * it before its SIGKILL) is taken by one thread of its own, which makes
 * the damage a kill point makes at the crash (flt_crash_now) and ends the
 * process by SIGKILL, while the workers run on as they would up to an
 * outside SIGKILL.  The signal is blocked before the engine or any worker
 * starts, so every other thread inherits the mask and none is
 * interrupted by it. */
static void *damage_main(void *arg) {
    st_driver *d = arg;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR2);
    int sig = 0;
    while (sigwait(&s, &sig) != 0) {}
    if (d->flt) flt_crash_now(d->flt);
    raise(SIGKILL);
    return NULL;
}

static int arm_damage_at_kill(st_driver *d) {
    if (!d->o.damage_at_kill) return GO_ON;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR2);
    pthread_t th;
    if (pthread_sigmask(SIG_BLOCK, &s, NULL) || pthread_create(&th, NULL, damage_main, d)) {
        fprintf(stderr, "stress: --damage_at_kill: cannot start its thread\n");
        return EXIT_INFRA;
    }
    pthread_detach(th);
    return GO_ON;
}

static int open_and_check(st_driver *d, int *failed) {
    /* The main thread is fault-library thread 0 too: its calls are
     * numbered from the top of the range so they never meet worker 0's. */
    worker main_w = {.d = d, .id = 0, .calls = 0xf0000000u};
    atomic_store(&d->recovering, 1);
    int st = st_open_db(&main_w);
    if (st == ST_CORRUPTION) {
        fprintf(stderr, "stress: the database does not open: corruption reported (judged below)\n");
        atomic_store(&d->unrecoverable, 1);
        d->crash_check = VD_CHECK_NO_OPEN;
    } else if (st != ST_OK) {
        fprintf(stderr, "stress: cannot open %s: %s\n", d->o.db, st_status_name(st));
        return EXIT_INFRA;
    } else {
        st_recovery rec;
        d->E->recovery(d->db, &rec);
        int after_crash = d->crashed_before;
        int bad = st_post_open_check(&main_w, after_crash, after_crash ? "post-crash check" : "check at start");
        if (bad == 1) *failed = 1;
        if (bad == 3) *failed = 2; /* no further, no failure: the verdict decides (V10) */
        if (after_crash) d->crash_check = bad ? VD_CHECK_LOST : VD_CHECK_PASSED;
    }
    atomic_store(&d->recovering, 0);

    return GO_ON;
}

/* The workers, and the watchdog (*WD) that outlives them until settle. */
static int run_workers(st_driver *d, int failed, pthread_t *wd) {
    d->w = calloc(d->o.threads, sizeof *d->w);
    size_t maxv = (d->values.large_one_in ? d->values.large_max : d->values.vmax);
    if (maxv < 12) maxv = 12;
    for (uint64_t i = 0; i < d->o.threads; i++) {
        worker *w = &d->w[i];
        w->d = d;
        w->id = (int)i;
        w->ck_epoch = UINT64_MAX;
        w->rng = rng_mix64(d->o.seed ^ rng_mix64(i + 1) ^ 0x5354524553530000ull);
        w->hash = XXH3_createState();
        XXH3_64bits_reset(w->hash);
        w->vbuf = malloc(MAX_BATCH * maxv);
        if (!w->hash || !w->vbuf) return EXIT_INFRA;
    }
    pthread_create(wd, NULL, st_watchdog_main, d);
    if (!d->o.verification_only && d->db && !failed) {
        atomic_store(&d->working, 1);
        double t = st_now();
        for (uint64_t i = 0; i < d->o.threads; i++) pthread_create(&d->w[i].th, NULL, st_worker_main, &d->w[i]);
        for (uint64_t i = 0; i < d->o.threads; i++) pthread_join(d->w[i].th, NULL);
        d->work_s = st_now() - t;
        st_write_progress(d->run_dir, st_total_done(d));
    }

    return GO_ON;
}

/* --crash_at_end: the process ends here. */
static void crash_if_asked(const st_driver *d) {
    if (d->o.crash_at_end) {
        /* A crash of our own, at a known point: every acknowledged write
         * is settled and noted, none in flight.  The next run's
         * post-crash check judges recovery. */
        fprintf(stderr, "stress: --crash_at_end: killing this process after %llu ops\n",
                (unsigned long long)st_total_done(d));
        fflush(NULL);
        kill(getpid(), SIGKILL);
    }
}

/* Page flips made in the closed files before their verify (with
 * bitflip_page on; flt_flip_at_rest): a few, each in a region drawn by
 * the format, so that every check of a page at rest is met every run. */
#define REST_FLIPS 16

/* Faults paused: get every key, verify every page and log record, scan
 * every key, close, flip a few pages at rest, verify the closed files
 * from disk, note the damage still there.
 * Returns 1 if the database closed cleanly. */
static int settle(st_driver *d, int *failed) {
    if (d->flt) flt_pause(d->flt, 1);
    int closed_ok = 0;
    if (d->db && !*failed) {
        worker *w0 = &d->w[0];
        uint64_t before = atomic_load(&d->failures);
        int vst = st_read_everything(w0, "settlement");
        if (vst != ST_OK && vst != ST_CORRUPTION) fprintf(stderr, "stress: final verify: %s\n", st_status_name(vst));
        st_check_doubts(w0, 0);
        if (atomic_load(&d->failures) != before) *failed = 1;
        orc_note_durable(d->exp, d->E->durable_seq(d->db));
    }
    if (d->db) {
        st_release_snapshots(d);
        int st = d->E->close(d->db);
        d->db = NULL;
        flt_door_disarm(); /* the closed files are read below as they are, by no engine */
        closed_ok = st == ST_OK;
        if (closed_ok) {
            /* Every block from disk (a page cached clean all run long
             * hid whatever happened to it on disk). */
            uint64_t problems = 0;
            st_open_options vo = d->eo;
            if (d->flt && !st_promises_of(d->E)->door) flt_flip_at_rest(d->flt, REST_FLIPS);
            int vd = d->E->verify_dir(d->o.db, &vo, &problems);
            /* A clean close made everything durable.  Every block was just
             * read from disk: damage the fault library shows still there
             * must have been reported (oracle V4b). */
            d->final_verified = vd == ST_OK || vd == ST_CORRUPTION;
            if (d->flt && d->final_verified) {
                size_t n = flt_damage_present(d->flt, NULL, 0);
                d->damage = n ? calloc(n, sizeof *d->damage) : NULL;
                if (d->damage) d->ndamage = flt_damage_present(d->flt, d->damage, n);
                if (d->ndamage > n) d->ndamage = n;
            }
        }
    }
    flt_door_disarm(); /* no handle (the open failed): V4c's reader is no engine either */
    return closed_ok;
}

/* ---- V4c: the damage of a database that did not open ---- */

/* A report of the engine's page reader: V4c's, asked about one block. */
static void add_reader_report(void *ctx, const st_corruption *r) {
    vd_report v = {.block = r->block, .offset = r->offset, .entry = r->entry, .reader = 1};
    snprintf(v.layer, sizeof v.layer, "%s", r->layer ? r->layer : "");
    snprintf(v.file, sizeof v.file, "%s", r->file ? r->file : "");
    snprintf(v.detail, sizeof v.detail, "%s", r->detail ? r->detail : "");
    vd_add_report(ctx, &v);
}

/* Damage an injection left in the bytes of a data page on disk, which the
 * page checks exist to refuse: not a flip in a read buffer (D5: never on
 * disk) nor a cache flip (D7: a page with a valid checksum, the per-KV
 * codes' to find), nor a lost write (an old page, valid by design). */
static int page_damage_on_disk(const vd_injection *j) {
    int cls = j->cls;
    if (strcmp(j->file, "data") || (j->block < 0 && j->offset < 0)) return 0;
    if (cls == VD_BITFLIP_INFLIGHT) return strcmp(j->point, "hook/read") != 0;
    return cls == VD_BITFLIP_PAGE || cls == VD_ZERO_PAGE || cls == VD_TORN_WRITE || cls == VD_MISDIRECTED_WRITE;
}

/* 1 if own-process ledger line SEQ is among the fault library's present
 * damage (OWN, N: flt_damage_present's list). */
static int seq_in(const uint64_t *own, size_t n, int64_t seq) {
    for (size_t i = 0; i < n; i++)
        if ((int64_t)own[i] == seq) return 1;
    return 0;
}

/* V4c (docs/oracle.md): a database that did not open gets no final verify
 * of its closed files, so V4b never learned whether the page checks would
 * have passed the damage still in them: a zero page beside the flip that
 * failed the open made the run unrecoverable by design, and the zero-page
 * rule was never asked.  Here each data block whose injected damage is
 * provably still there (this process's: the fault library's D1-D4; any
 * process's page flip or zeroed block: its ledger post hash, and no later
 * fault's pre undoing it) is read from disk by the engine's own page
 * reader (adapter check_block: the checks an open's read makes, the
 * zero-page rule against the control file's high-water mark).  Its reports
 * go to the judge as reader reports; the injection is marked present, so
 * a block the reader passes is swallowed.  A zero page at or past the
 * high-water mark is legal as never written and is not judged, nor is a
 * block the reader cannot judge (no valid control file, past the file's
 * end).  Returns how many injections were judged (then settle again). */
static size_t judge_unopened_damage(const st_driver *d, vd_ctx *v) {
    if (!d->E->check_block || d->db || d->final_verified || !atomic_load(&d->unrecoverable)) return 0;
    if (!d->reopen_failed && d->crash_check != VD_CHECK_NO_OPEN) return 0;
    uint32_t ps = d->eo.page_size;
    uint64_t *own = NULL;
    size_t nown = 0;
    if (d->flt) {
        size_t n = flt_damage_present(d->flt, NULL, 0);
        own = n ? calloc(n, sizeof *own) : NULL;
        if (own) nown = flt_damage_present(d->flt, own, n);
        if (nown > n) nown = n;
    }
    char p[4200];
    st_path_in(p, sizeof p, d->o.db, "data");
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    uint8_t *buf = ps ? malloc(ps) : NULL;
    size_t judged = 0;
    for (size_t k = 0; fd >= 0 && buf && k < vd_injection_count(v); k++) {
        const vd_injection *j = vd_injection_at(v, k);
        if (!page_damage_on_disk(j)) continue;
        /* where the damage is: a misdirected write names where it landed
         * by offset, every other line its block's offset too */
        int64_t blk = j->offset >= 0 ? j->offset / (int64_t)ps : j->block;
        int there = 0;
        if (j->page_post) {
            there = pread(fd, buf, ps, (off_t)((uint64_t)blk * ps)) == (ssize_t)ps &&
                    XXH64(buf, ps, 0) == j->page_post && !st_flip_undone(v, k);
        } else if (!j->carried) {
            there = seq_in(own, nown, j->seq);
        }
        if (!there) continue;
        uint64_t hwm = 0;
        int st = d->E->check_block(d->o.db, (uint64_t)blk, add_reader_report, v, &hwm);
        if (st != ST_OK && st != ST_CORRUPTION) continue;
        if (j->cls == VD_ZERO_PAGE && (uint64_t)blk >= hwm) continue; /* P5: legal as never written */
        vd_mark_present(v, k);
        judged++;
    }
    free(buf);
    free(own);
    if (fd >= 0) close(fd);
    if (judged)
        fprintf(stderr,
                "stress: the database did not open: %zu injection(s) whose damage is still on disk judged with the "
                "engine's page reader (V4c)\n",
                judged);
    return judged;
}

/* The promise injection J broke (V10: the engine's table row for its
 * class and file kind), as a line of its failure's message, in BUF. */
static void promise_row(const st_driver *d, const vd_injection *j, char *buf, size_t cap) {
    const st_promise *r = st_promise_judging(d, j->cls, j->file);
    char line[360];
    if (!r) return;
    st_promise_line(r, line, sizeof line);
    snprintf(buf, cap, "    broken %s\n", line);
}

/* Another engine's failed values and opens, per class, with the row of
 * its promise table they break (the class's row for the run's options;
 * a swallowed error names its own file's row above). */
static void broken_promises(const st_driver *d, const vd_ctx *v, const vd_result *res) {
    if (!st_promises_of(d->E)->door) return; /* ours: its rows are the rules of docs/oracle.md */
    for (int c = 0; c < VD_CLASS_COUNT; c++) {
        const vd_counts *k = &res->cls[c];
        if (!(k->wrong_value + k->lost + k->resurrected + k->unrecoverable)) continue;
        /* The rows the class's injections were judged by that promise
         * something, each once; a class injected nowhere (an outside
         * kill): its row for any file. */
        const st_promise *rows[8];
        size_t n = 0;
        for (size_t i = 0; i < vd_injection_count(v) && n < 8; i++) {
            const vd_injection *j = vd_injection_at(v, i);
            const st_promise *r = j->cls == c ? st_promise_judging(d, c, j->file) : NULL;
            size_t s = 0;
            while (s < n && rows[s] != r) s++;
            if (r && s == n && r->promise != ST_PROMISE_NONE) rows[n++] = r;
        }
        if (!n && (rows[0] = st_promise_judging(d, c, "")) != NULL) n = 1;
        for (size_t s = 0; s < n; s++) {
            char line[360];
            st_promise_line(rows[s], line, sizeof line);
            fprintf(stderr,
                    "stress: the failures of %s (wrong, lost or resurrected values, or an open that did not come "
                    "back) break %s\n",
                    vd_class_name(c), line);
        }
    }
}

/* Judge, print what failed, write the report and the summary line.
 * Returns 1 if the run passed. */
static int verdict(st_driver *d, int failed) {
    vd_result res;
    uint64_t trace_hash;
    vd_ctx *v = st_judge(d, &res, &trace_hash);
    /* injections the engine's page reader judged on the closed files of a
     * database that did not open (for the messages) */
    size_t unopened_judged = judge_unopened_damage(d, v);
    if (unopened_judged) vd_settle(v, &res);
    st_sweep_judged(d, &res);

    /* Reports that matched no injection: each is a failure to explain. */
    for (size_t i = 0; i < vd_false_alarm_count(v) && i < MAX_DETAILED; i++) {
        const vd_report *r = vd_false_alarm_at(v, i);
        fprintf(stderr,
                "stress: FAILURE false_alarm: corruption reported with no injection there: layer=%s file=%s block=%lld "
                "offset=%lld: %s\n    repro: %s\n",
                r->layer, r->file, (long long)r->block, (long long)r->offset, r->detail, d->repro);
    }
    for (size_t i = 0; i < vd_injection_count(v); i++) {
        const vd_injection *j = vd_injection_at(v, i);
        char row[400] = "";
        if (j->outcome == VD_SWALLOWED && i < 1000) promise_row(d, j, row, sizeof row);
        if (j->outcome == VD_SWALLOWED && j->present && i < 1000)
            fprintf(
                stderr,
                "stress: FAILURE swallowed: %s injected at %s (file %s block %lld offset %lld len %lld) is still on "
                "disk (nothing overwrote it) but no check reported it, not even %s\n"
                "%s    repro: %s\n",
                j->cls_name, j->point, j->file, (long long)j->block, (long long)j->offset, (long long)j->len,
                unopened_judged ? "the engine's page reader on the closed files of the database that did not open "
                                  "(V4c)"
                                : "the final verify of every block",
                row, d->repro);
        else if (j->outcome == VD_SWALLOWED && i < 1000)
            fprintf(stderr,
                    "stress: FAILURE swallowed: %s injected at %s (file %s, thread %d, op %lld:%lld) but the call "
                    "returned ok\n%s    repro: %s\n",
                    j->cls_name, j->point, j->file[0] ? j->file : "-", j->thread, (long long)(j->op >> 32),
                    (long long)(j->op & 0xffffffff), row, d->repro);
    }
    broken_promises(d, v, &res);
    if (res.unrecoverable && res.by_design[0])
        fprintf(stderr, "stress: unrecoverable_by_design: the database did not come back, explained by %s\n",
                res.by_design);
    else if (res.unrecoverable && res.unrecoverable_why[0])
        fprintf(stderr, "stress: FAILURE unrecoverable: %s\n    repro: %s\n", res.unrecoverable_why, d->repro);
    st_write_report(d, &res, v, trace_hash, 0);
    int pass = res.pass && failed != 1 && !atomic_load(&d->infra);
    uint64_t ops = 0;
    for (int i = 0; i < OP_TYPES; i++) ops += atomic_load(&d->ops[i]);
    uint64_t inj = res.total.injected;
    printf("stress: %s mode=%s ops=%llu verified=%llu injected=%llu detected=%llu repaired=%llu masked=%llu "
           "undetectable=%llu failures=%llu trace_hash=%016llx elapsed=%.2fs\n",
           pass ? "pass" : "FAIL", res.measuring ? "measuring" : "judging", (unsigned long long)ops,
           (unsigned long long)atomic_load(&d->verified), (unsigned long long)inj,
           (unsigned long long)res.total.detected, (unsigned long long)res.total.repaired,
           (unsigned long long)res.total.masked, (unsigned long long)res.total.undetectable,
           (unsigned long long)vd_failures(&res.total), (unsigned long long)trace_hash, st_now() - d->t0);
    if (!pass) printf("stress: repro: %s\n", d->repro);
    vd_free(v);
    return pass;
}

/* Note this run's faults as judged (when the run ended cleanly) and
 * release everything. */
static void finish(st_driver *d, int closed_ok) {
    /* This run's faults are judged: the next run starts after them. */
    size_t total = st_ledger_lines(d->run_dir);
    if (closed_ok || d->unrecoverable) {
        st_write_state(d->run_dir, d->epoch, total, 1);
        if (d->reports_fd >= 0 && ftruncate(d->reports_fd, 0)) {}
        if (d->obs_fd >= 0 && ftruncate(d->obs_fd, 0)) {}
    }
    if (d->flt) flt_close(d->flt);
    st_trace_close(&d->trace);
    orc_close(d->exp);
    for (uint64_t i = 0; i < d->o.threads; i++) {
        XXH3_freeState(d->w[i].hash);
        free(d->w[i].vbuf);
        st_buf_free(&d->w[i].rbuf);
    }
    free(d->w);
    free(d->reports);
    free(d->obs);
    free(d->doubt);
    free(d->regions.name);
    free((void *)d->stripe_ver);
    free((void *)d->stripe_seq);
    if (d->reports_fd >= 0) close(d->reports_fd);
    if (d->obs_fd >= 0) close(d->obs_fd);
}

int main(int argc, char **argv) {
    /* The run's state, handed to each step.  Static storage, not main's
     * frame: the crash handler may still read it (handler_driver) while
     * exit() runs after main has returned. */
    static st_driver driver;
    st_driver *d = &driver;
    setvbuf(stdout, NULL, _IOLBF, 0);
    int rc, failed = 0;
    pthread_t wd;
    if ((rc = parse(d, argc, argv)) != GO_ON || (rc = st_trace_open(&d->trace, &d->o)) != GO_ON ||
        (rc = prepare_run_dir(d)) != GO_ON || (rc = sweep_log(d)) != GO_ON || (rc = open_faults(d)) != GO_ON ||
        (rc = arm_damage_at_kill(d)) != GO_ON || (rc = open_and_check(d, &failed)) != GO_ON ||
        (rc = run_workers(d, failed, &wd)) != GO_ON)
        return rc;
    crash_if_asked(d);
    int closed_ok = settle(d, &failed);
    atomic_store(&d->watch_stop, 1);
    pthread_join(wd, NULL);

    int pass = verdict(d, failed);
    finish(d, closed_ok);
    if (atomic_load(&d->infra)) return EXIT_INFRA;
    return pass ? EXIT_PASS : EXIT_FAIL;
}
