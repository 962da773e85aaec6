/*
 * db.c -- the engine-tool commands that open the database through the
 * public API (stat, verify, get, checkpoint, vacuum), and how every
 * command opens it and explains a failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "format.h"
#include "tool.h"

/* ---- corruption reports ---------------------------------------------------- */

/* The last report delivered through on_corruption, kept so that a failed
 * eng_open (which leaves no handle for eng_last_corruption) can still be
 * explained. */
static struct {
    pthread_mutex_t mu;
    uint64_t count;
    eng_corruption last;
} open_reports = {PTHREAD_MUTEX_INITIALIZER, 0, {0}};

static void remember_report(void *ctx, const eng_corruption *r) {
    (void)ctx;
    pthread_mutex_lock(&open_reports.mu);
    open_reports.count++;
    open_reports.last = *r;
    pthread_mutex_unlock(&open_reports.mu);
}

void print_report(FILE *f, const eng_corruption *r) {
    char line[512];
    eng_corruption_format(r, line, sizeof line);
    fprintf(f, "%s\n", line);
}

void print_report_json(FILE *f, const eng_corruption *r) {
    char line[512];
    eng_corruption_format(r, line, sizeof line);
    const char *layer = eng_layer_name(r->layer);
    fprintf(f, "{\"layer\": ");
    json_fput_str(f, layer ? layer : "unknown");
    fprintf(f, ", \"file\": ");
    json_fput_str(f, r->file);
    fprintf(f,
            ", \"block\": %" PRId64 ", \"offset\": %" PRId64 ", \"entry\": %" PRId32 ", \"expected\": \"0x%" PRIx64
            "\", \"found\": \"0x%" PRIx64 "\", \"detail\": ",
            r->block, r->offset, r->entry, r->expected, r->found);
    json_fput_str(f, r->detail);
    fprintf(f, ", \"text\": ");
    json_fput_str(f, line);
    fputc('}', f);
}

void json_lines(FILE *f, const char *buf, size_t len) {
    fputc('[', f);
    int first = 1;
    char line[1024];
    for (size_t i = 0; buf && i < len;) {
        size_t n = 0;
        while (i + n < len && buf[i + n] != '\n') n++;
        if (n) {
            snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line - 1 ? n : sizeof line - 1), buf + i);
            fprintf(f, "%s", first ? "" : ", ");
            json_fput_str(f, line);
            first = 0;
        }
        i += n + 1;
    }
    fputc(']', f);
}

/* Exit code for a failed engine call. */
int status_exit(int st) { return st == ENG_CORRUPTION ? EXIT_PROBLEM : EXIT_ERROR; }

/* The engine's I/O error carries no errno: look for a file of the
 * database the tool cannot open for reading (a permission, a damaged
 * mount) and name it.  Reads only. */
static void describe_ioerr(const char *dir, char *out, size_t cap) {
    static const char *const names[] = {"control", "data", "wal"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            close(fd);
            continue;
        }
        if (errno == ENOENT) continue;
        snprintf(out, cap, "%s (%s: %s)", eng_strerror(ENG_IOERR), path, strerror(errno));
        return;
    }
    snprintf(out, cap, "%s", eng_strerror(ENG_IOERR));
}

/* ST as the cause of a failure: the engine's name, and for a failed open
 * (DB NULL) what the status means there. */
static void describe_status(const char *dir, int st, eng_db *db, char *out, size_t cap) {
    if (st == ENG_IOERR) {
        describe_ioerr(dir, out, cap);
    } else if (!db && st == ENG_NOTFOUND) {
        snprintf(out, cap, "not found (no database in this directory)");
    } else if (!db && st == ENG_NOTSUP) {
        snprintf(out, cap,
                 "not supported (the database's format version is not this engine's %u: the report below says "
                 "which; open it with the engine that wrote it)",
                 CT_VERSION);
    } else if (!db && st == ENG_READONLY) {
        snprintf(out, cap,
                 "read-only (replaying the log needs more cache than a read-only open may fill: "
                 "give a larger --cache-size)");
    } else {
        snprintf(out, cap, "%s", eng_strerror(st));
    }
}

/* Explain a failed call on DB (may be NULL after a failed open) to F. */
void explain_failure(FILE *f, const char *what, const char *dir, int st, eng_db *db) {
    char cause[4400];
    describe_status(dir, st, db, cause, sizeof cause);
    fprintf(stderr, "engine-tool: %s %s: %s\n", what, dir, cause);
    if (st != ENG_CORRUPTION && st != ENG_NOTSUP) return;
    eng_corruption r;
    if (db && eng_last_corruption(db, &r)) {
        print_report(f, &r);
        return;
    }
    pthread_mutex_lock(&open_reports.mu);
    int have = open_reports.count > 0;
    r = open_reports.last;
    pthread_mutex_unlock(&open_reports.mu);
    if (have) print_report(f, &r);
}

void base_options(const tool_args *a, eng_options *o, int mode) {
    eng_options_init(o);
    o->create_if_missing = mode == TOOL_CREATE;
    o->read_only = mode == TOOL_READ;
    if (a->given & OPT_PAGE_SIZE) o->page_size = a->page_size;
    if (a->given & OPT_NO_CHECKSUMS) o->data_checksums = 0;
    if (a->given & OPT_CACHE_SIZE) o->cache_size = (size_t)a->cache_size;
    if (a->given & OPT_IO_BACKEND) o->io_backend = a->io_backend;
    if (a->given & OPT_SYNC) o->sync_mode = a->sync_mode;
    if (a->given & OPT_FULL_PAGE_WRITES) o->full_page_writes = a->full_page_writes;
    if (a->given & OPT_WAL_COMPRESSION) o->wal_compression = a->wal_compression;
    if (a->given & OPT_WAL_SEGMENT_SIZE) o->wal_segment_size = a->wal_segment_size;
    if (a->given & OPT_ARCHIVE_DIR) o->archive_dir = a->archive_dir;
    if (a->given & OPT_CHECKPOINT_WAL_BYTES) o->checkpoint_wal_bytes = a->checkpoint_wal_bytes;
    o->on_corruption = remember_report;
    o->on_corruption_ctx = NULL;
}

/* A database that is not being created must already be a directory: say
 * so plainly instead of whatever the engine makes of a missing path. */
int require_dir(const char *dir) {
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        if (errno == ENOENT)
            fprintf(stderr, "engine-tool: open %s: not found (no such directory)\n", dir);
        else
            fprintf(stderr, "engine-tool: open %s: %s\n", dir, strerror(errno));
        return EXIT_ERROR;
    }
    if (!S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "engine-tool: open %s: not a database directory\n", dir);
        return EXIT_ERROR;
    }
    return 0;
}

/* Open DIR as MODE says.  Returns 0 with *db set, or an exit code after
 * explaining the failure; reports go to REPORT_TO. */
int tool_open(const tool_args *a, int mode, FILE *report_to, eng_db **db) {
    *db = NULL;
    if (mode != TOOL_CREATE) {
        int rc = require_dir(a->dir);
        if (rc) return rc;
    }
    eng_options o;
    base_options(a, &o, mode);
    int st = eng_open(a->dir, &o, db);
    if (st != ENG_OK) {
        *db = NULL;
        explain_failure(report_to, "open", a->dir, st, NULL);
        return status_exit(st);
    }
    return 0;
}

/* ---- verify ------------------------------------------------------------------ */

typedef struct verify_ctx {
    pthread_mutex_t mu;
    uint64_t seen;
    uint64_t bad_checksums; /* reports of layer page_checksum */
    int json;
    FILE *reports; /* --json: the reports, as a JSON array's items */
} verify_ctx;

static void verify_report(void *ctx, const eng_corruption *r) {
    verify_ctx *v = ctx;
    char line[512];
    eng_corruption_format(r, line, sizeof line);
    pthread_mutex_lock(&v->mu);
    if (r->layer == ENG_LAYER_PAGE_CHECKSUM) v->bad_checksums++;
    if (v->json) {
        fprintf(v->reports, "%s\n    ", v->seen ? "," : "");
        print_report_json(v->reports, r);
    } else {
        printf("%s\n", line);
    }
    v->seen++;
    pthread_mutex_unlock(&v->mu);
}

/* The pages verify could not check, and what it skipped because of them:
 * "unchecked: blocks=5,9 skipped=leaf-links,unreachable-blocks" (none: no
 * line).  Their own damage is among the corruption lines above. */
static void print_unchecked(const eng_verify_info *info) {
    if (!info->unchecked && !info->tree_skipped) return;
    printf("unchecked: blocks=");
    uint64_t shown = info->unchecked < ENG_VERIFY_UNCHECKED_LIST ? info->unchecked : ENG_VERIFY_UNCHECKED_LIST;
    for (uint64_t i = 0; i < shown; i++) printf("%s%" PRIu64, i ? "," : "", info->unchecked_blocks[i]);
    if (!shown) printf("none");
    if (info->unchecked > shown) printf(",... (%" PRIu64 " in all)", info->unchecked);
    printf(" skipped=%s%s\n", info->tree_skipped ? "tree" : "leaf-links-across-them",
           info->leaks_skipped ? ",unreachable-blocks" : "");
}

/* pg_checksums' closing summary, with the log walk and what was left
 * unchecked. */
static void print_verify_summary(const eng_verify_info *info, const verify_ctx *v, uint64_t problems) {
    printf("Verify summary:\n");
    printf("  Blocks scanned:      %" PRIu64 "\n", info->blocks_scanned);
    printf("  Bad checksums:       %" PRIu64 "\n", v->bad_checksums);
    printf("  Other problems:      %" PRIu64 "\n",
           problems - (v->bad_checksums < problems ? v->bad_checksums : problems));
    printf("  WAL records checked: %" PRIu64 "\n", info->wal_records);
    printf("  Pages not checked:   %" PRIu64 "%s\n", info->unchecked,
           info->tree_skipped ? " (tree walk skipped: only each block's own bytes were checked)" : "");
}

static void print_verify_json(const eng_verify_info *info, verify_ctx *v, uint64_t problems, int st, const char *buf,
                              size_t len) {
    uint64_t shown = info->unchecked < ENG_VERIFY_UNCHECKED_LIST ? info->unchecked : ENG_VERIFY_UNCHECKED_LIST;
    printf("{\n  \"checked\": true,\n  \"complete\": %s,\n", st == ENG_OK || st == ENG_CORRUPTION ? "true" : "false");
    if (st != ENG_OK && st != ENG_CORRUPTION) {
        printf("  \"error\": ");
        json_fput_str(stdout, eng_strerror(st));
        printf(",\n");
    }
    printf("  \"problems\": %" PRIu64 ",\n  \"blocks_scanned\": %" PRIu64 ",\n  \"bad_checksums\": %" PRIu64
           ",\n  \"other_problems\": %" PRIu64 ",\n  \"wal_records_checked\": %" PRIu64 ",\n",
           problems, info->blocks_scanned, v->bad_checksums,
           problems - (v->bad_checksums < problems ? v->bad_checksums : problems), info->wal_records);
    printf("  \"unchecked\": %" PRIu64 ",\n  \"unchecked_blocks\": [", info->unchecked);
    for (uint64_t i = 0; i < shown; i++) printf("%s%" PRIu64, i ? ", " : "", info->unchecked_blocks[i]);
    printf("],\n  \"tree_skipped\": %s,\n  \"leaks_skipped\": %s,\n", info->tree_skipped ? "true" : "false",
           info->leaks_skipped ? "true" : "false");
    printf("  \"reports\": [%.*s%s]\n}\n", (int)len, buf ? buf : "", len ? "\n  " : "");
}

int cmd_verify(const tool_args *a) {
    int rc = require_dir(a->dir);
    if (rc) return rc;
    eng_options o;
    base_options(a, &o, TOOL_READ);
    o.on_corruption = NULL; /* FN gets every report; once is enough */
    verify_ctx v = {PTHREAD_MUTEX_INITIALIZER, 0, 0, (a->given & OPT_JSON) != 0, NULL};
    char *buf = NULL;
    size_t len = 0;
    if (v.json && (v.reports = open_memstream(&buf, &len)) == NULL) {
        fprintf(stderr, "engine-tool: verify: out of memory\n");
        return EXIT_ERROR;
    }
    eng_verify_info info;
    /* Pages, then every log record from the redo point (the engine's
     * verify walks the log as recovery and waldump read it). */
    int st = eng_verify_dir_ex(a->dir, &o, verify_report, &v, &info);
    uint64_t problems = info.problems;
    if (problems < v.seen) problems = v.seen;
    /* Stopped before checking anything (the database could not be opened:
     * busy, not a database, unreadable): a summary of zeros would read as
     * a clean database, so there is none, only the cause. */
    int checked = st == ENG_OK || st == ENG_CORRUPTION || problems || info.blocks_scanned || info.wal_records;
    if (!checked) {
        char cause[4400];
        describe_status(a->dir, st, NULL, cause, sizeof cause);
        fprintf(stderr, "engine-tool: verify %s: %s; nothing was checked\n", a->dir, cause);
        if (v.json) {
            fclose(v.reports);
            free(buf);
            printf("{\n  \"checked\": false,\n  \"complete\": false,\n  \"error\": ");
            json_fput_str(stdout, cause);
            printf("\n}\n");
        }
        return status_exit(st);
    }
    if (v.json) {
        fclose(v.reports);
        print_verify_json(&info, &v, problems, st, buf, len);
        free(buf);
    } else {
        print_unchecked(&info);
        print_verify_summary(&info, &v, problems);
    }
    if (st != ENG_OK && st != ENG_CORRUPTION) {
        fprintf(stderr, "engine-tool: verify %s: %s\n", a->dir, eng_strerror(st));
        if (problems && !v.json) printf("verify: %" PRIu64 " problems (incomplete)\n", problems);
        return EXIT_ERROR;
    }
    if (!v.json) printf("verify: %" PRIu64 " problems\n", problems);
    return (st == ENG_CORRUPTION || problems) ? EXIT_PROBLEM : EXIT_OK;
}

/* ---- stat ---------------------------------------------------------------------- */

static const char *sync_mode_name(int mode) {
    switch (mode) {
    case ENG_SYNC_COMMIT: return "commit";
    case ENG_SYNC_GROUP: return "group";
    case ENG_SYNC_OFF: return "off";
    default: return "unknown";
    }
}

int cmd_stat(const tool_args *a) {
    eng_db *db;
    /* 0 or 2, as docs/engine-tool.md promises: a database stat cannot open (a
     * damaged control file included) is an invalid database here, not a
     * verdict; verify is the command that judges damage. */
    int rc = tool_open(a, TOOL_READ, stderr, &db);
    if (rc) return EXIT_ERROR;
    eng_stats s;
    memset(&s, 0, sizeof s);
    int st = eng_get_stats(db, &s);
    if (st != ENG_OK) {
        explain_failure(stderr, "stat", a->dir, st, db);
        eng_close(db);
        return EXIT_ERROR;
    }
    eng_recovery_info ri;
    memset(&ri, 0, sizeof ri);
    eng_get_recovery_info(db, &ri);
    printf("{\n");
    printf("  \"options\": {\n");
    printf("    \"page_size\": %" PRIu32 ",\n", s.page_size);
    printf("    \"data_checksums\": %s,\n", s.data_checksums ? "true" : "false");
    printf("    \"io_backend\": \"%s\",\n", s.io_backend == ENG_IO_PSYNC ? "psync" : "uring");
    printf("    \"cache_size\": %" PRIu64 ",\n", s.cache_size);
    printf("    \"cache_pages\": %" PRIu64 ",\n", s.cache_pages);
    printf("    \"sync_mode\": \"%s\",\n", sync_mode_name(s.sync_mode));
    printf("    \"full_page_writes\": %s,\n", s.full_page_writes ? "true" : "false");
    printf("    \"wal_compression\": \"%s\",\n", s.wal_compression == ENG_WAL_COMPRESSION_ZSTD ? "zstd" : "none");
    printf("    \"wal_segment_size\": %" PRIu64 "\n", s.wal_segment_size);
    printf("  },\n");
    printf("  \"sizes\": {\n");
    printf("    \"data_file_bytes\": %" PRIu64 ",\n", s.data_file_bytes);
    printf("    \"nblocks\": %" PRIu64 ",\n", s.nblocks);
    printf("    \"high_water_mark\": %" PRIu64 "\n", s.high_water_mark);
    printf("  },\n");
    printf("  \"counters\": {\n");
    printf("    \"page_reads\": %" PRIu64 ",\n", s.page_reads);
    printf("    \"page_writes\": %" PRIu64 ",\n", s.page_writes);
    printf("    \"cache_hits\": %" PRIu64 ",\n", s.cache_hits);
    printf("    \"cache_misses\": %" PRIu64 ",\n", s.cache_misses);
    printf("    \"evictions\": %" PRIu64 ",\n", s.evictions);
    printf("    \"syncs\": %" PRIu64 ",\n", s.syncs);
    printf("    \"puts\": %" PRIu64 ",\n", s.puts);
    printf("    \"deletes\": %" PRIu64 ",\n", s.deletes);
    printf("    \"gets\": %" PRIu64 ",\n", s.gets);
    printf("    \"batches\": %" PRIu64 ",\n", s.batches);
    printf("    \"overflow_pages_written\": %" PRIu64 ",\n", s.overflow_pages_written);
    printf("    \"txn_commits\": %" PRIu64 ",\n", s.txn_commits);
    printf("    \"txn_aborts\": %" PRIu64 ",\n", s.txn_aborts);
    printf("    \"hints_set\": %" PRIu64 ",\n", s.hints_set);
    printf("    \"hint_pages_written\": %" PRIu64 ",\n", s.hint_pages_written);
    printf("    \"hint_wal_records\": %" PRIu64 ",\n", s.hint_wal_records);
    printf("    \"versions_pruned\": %" PRIu64 ",\n", s.versions_pruned);
    printf("    \"corruption\": {");
    for (int l = 0; l < ENG_LAYER_COUNT; l++) {
        const char *name = eng_layer_name(l);
        printf("%s\n      \"%s\": %" PRIu64, l ? "," : "", name ? name : "unknown", s.corruption[l]);
    }
    printf("\n    }\n");
    printf("  },\n");
    printf("  \"wal\": {\n");
    printf("    \"bytes\": %" PRIu64 ",\n", s.wal_bytes);
    printf("    \"written_bytes\": %" PRIu64 ",\n", s.wal_written_bytes);
    printf("    \"records\": %" PRIu64 ",\n", s.wal_records);
    printf("    \"syncs\": %" PRIu64 ",\n", s.wal_syncs);
    printf("    \"insert_lsn\": %" PRIu64 ",\n", s.wal_insert_lsn);
    printf("    \"durable_lsn\": %" PRIu64 ",\n", s.wal_durable_lsn);
    printf("    \"last_seq\": %" PRIu64 ",\n", s.last_seq);
    printf("    \"durable_seq\": %" PRIu64 ",\n", s.durable_seq);
    printf("    \"checkpoints\": %" PRIu64 ",\n", s.checkpoints);
    printf("    \"segments_removed\": %" PRIu64 ",\n", s.segments_removed);
    printf("    \"segments_recycled\": %" PRIu64 "\n", s.segments_recycled);
    printf("  },\n");
    printf("  \"images\": {\n");
    printf("    \"count\": %" PRIu64 ",\n", s.images);
    printf("    \"bytes\": %" PRIu64 ",\n", s.image_bytes);
    printf("    \"raw_bytes\": %" PRIu64 "\n", s.image_raw_bytes);
    printf("  },\n");
    printf("  \"archive\": {\n");
    printf("    \"bytes\": %" PRIu64 ",\n", s.archive_bytes);
    printf("    \"segments\": %" PRIu64 "\n", s.segments_archived);
    printf("  },\n");
    printf("  \"recovery\": {\n");
    printf("    \"redo_lsn\": %" PRIu64 ",\n", ri.redo_lsn);
    printf("    \"end_lsn\": %" PRIu64 ",\n", ri.end_lsn);
    printf("    \"recovered_lsn\": %" PRIu64 ",\n", ri.recovered_lsn);
    printf("    \"recovered_seq\": %" PRIu64 ",\n", ri.recovered_seq);
    printf("    \"records\": %" PRIu64 ",\n", ri.records);
    printf("    \"actions_applied\": %" PRIu64 ",\n", ri.actions_applied);
    printf("    \"actions_skipped\": %" PRIu64 ",\n", ri.actions_skipped);
    printf("    \"images_restored\": %" PRIu64 ",\n", ri.images_restored);
    printf("    \"batch_ops_completed\": %" PRIu32 ",\n", ri.batch_ops_completed);
    printf("    \"trimmed\": %s\n", ri.trimmed ? "true" : "false");
    printf("  }\n");
    printf("}\n");
    st = eng_close(db);
    if (st != ENG_OK) {
        explain_failure(stderr, "close", a->dir, st, NULL);
        return EXIT_ERROR;
    }
    return EXIT_OK;
}

/* ---- get -------------------------------------------------------------------------- */

int cmd_get(const tool_args *a) {
    eng_db *db;
    int rc = tool_open(a, TOOL_READ, stderr, &db);
    if (rc) return rc;
    eng_buf v = {NULL, 0, 0};
    int st = eng_get(db, a->arg2, strlen(a->arg2), &v);
    if (st == ENG_OK) {
        if (v.len && fwrite(v.data, 1, v.len, stdout) != v.len) rc = EXIT_ERROR;
    } else if (st == ENG_NOTFOUND) {
        fprintf(stderr, "not found\n");
        rc = EXIT_PROBLEM;
    } else {
        explain_failure(stderr, "get", a->dir, st, db);
        rc = status_exit(st);
    }
    eng_buf_free(&v);
    st = eng_close(db);
    if (st != ENG_OK && rc == 0) {
        explain_failure(stderr, "close", a->dir, st, NULL);
        rc = status_exit(st);
    }
    return rc;
}

/* ---- checkpoint ------------------------------------------------------------------ */

/* Open for writing, run OP, close; failures explained as NAME. */
static int run_on_db(const tool_args *a, const char *name, int (*op)(eng_db *db, void *ctx), void *ctx) {
    eng_db *db;
    int rc = tool_open(a, TOOL_WRITE, stderr, &db);
    if (rc) return rc;
    int st = op(db, ctx);
    if (st != ENG_OK) {
        explain_failure(stderr, name, a->dir, st, db);
        eng_close(db);
        return status_exit(st);
    }
    st = eng_close(db);
    if (st != ENG_OK) {
        explain_failure(stderr, "close", a->dir, st, NULL);
        return status_exit(st);
    }
    return EXIT_OK;
}

static int op_checkpoint(eng_db *db, void *ctx) {
    (void)ctx;
    return eng_checkpoint(db);
}

int cmd_checkpoint(const tool_args *a) {
    int rc = run_on_db(a, "checkpoint", op_checkpoint, NULL);
    if (rc == EXIT_OK) printf("checkpoint done\n");
    return rc;
}

/* ---- vacuum ---------------------------------------------------------------------- */

static int op_vacuum(eng_db *db, void *ctx) {
    int st = eng_vacuum(db, ctx);
    return st == ENG_OK ? eng_checkpoint(db) : st;
}

/* Vacuum and checkpoint, then print what it did as one line of counts. */
int cmd_vacuum(const tool_args *a) {
    eng_vacuum_stats vs;
    int rc = run_on_db(a, "vacuum", op_vacuum, &vs);
    if (rc == EXIT_OK)
        printf("vacuum done: leaves=%" PRIu64 " versions=%" PRIu64 " removed=%" PRIu64 " frozen=%" PRIu64
               " hinted=%" PRIu64 " overflow_pages_freed=%" PRIu64 " horizon=%" PRIu64 "\n",
               vs.leaves, vs.versions, vs.removed, vs.frozen, vs.hinted, vs.overflow_pages_freed, vs.horizon);
    return rc;
}
