/*
 * options.c -- the stress driver's command line: one table of options
 * (names from db_stress where one exists, underscores; hyphens accepted),
 * their defaults, limits and help.  Parsing touches nothing on disk: a
 * usage error exits 2 before anything is written.
 *
 * Forms accepted: --name=value, --name value, and --name alone for a
 * boolean (= 1).  Sizes take K, M, G suffixes (powers of 1024).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "stress.h"

enum { T_U64, T_BOOL, T_STR, T_ENUM, T_FLAG };

typedef struct opt_def {
    const char *name;
    int type;
    size_t off;
    const char *def;     /* default, as text */
    uint64_t lo, hi;     /* T_U64 limits */
    const char *choices; /* T_ENUM: "a|b|c", value = index */
    const char *help;
} opt_def;

#define OFF(f) offsetof(st_options, f)
#define U64(n, f, d, lo, hi, h) \
    { n, T_U64, OFF(f), d, lo, hi, NULL, h }
#define BOOL(n, f, d, h) \
    { n, T_BOOL, OFF(f), d, 0, 1, NULL, h }
#define STR(n, f, d, h) \
    { n, T_STR, OFF(f), d, 0, 0, NULL, h }
#define ENUM(n, f, d, c, h) \
    { n, T_ENUM, OFF(f), d, 0, 0, c, h }
#define FLAG(n, f, h) \
    { n, T_FLAG, OFF(f), "0", 0, 1, NULL, h }
#define MAXU UINT64_MAX

static const opt_def defs[] = {
    STR("db", db, NULL, "database directory (required)"),
    STR("expected_values_dir", expected_values_dir, NULL, "expected state directory (default: DB.expected)"),
    STR("run_dir", run_dir, NULL, "fault ledger, journal and reports (default: the expected_values_dir)"),
    STR("report", report, NULL, "write the JSON report here"),
    U64("seed", seed, "2341234", 0, MAXU, "seed of every random choice (workload and faults)"),
    U64("threads", threads, "2", 1, 256, "worker threads"),
    U64("ops_per_thread", ops_per_thread, "10000", 0, MAXU, "operations per thread (0: until --duration)"),
    U64("duration", duration, "0", 0, MAXU, "stop after this many seconds (0: no limit)"),
    U64("max_key", max_key, "100000", 1, 1ull << 32, "key space [0, max_key)"),
    U64("readpercent", readpercent, "45", 0, 100, "percent of point reads"),
    U64("writepercent", writepercent, "30", 0, 100, "percent of single puts"),
    U64("delpercent", delpercent, "10", 0, 100, "percent of single deletes"),
    U64("iterpercent", iterpercent, "10", 0, 100, "percent of range scans (the rest of 100: batches of 2-8 keys)"),
    U64("reopen", reopen, "0", 0, 1000000, "reopens (close, open, verify every key) spread over the run"),
    U64("verify_db_one_in", verify_db_one_in, "0", 0, MAXU, "verify every page and log record once in N ops"),
    U64("checkpoint_one_in", checkpoint_one_in, "0", 0, MAXU, "explicit checkpoint once in N ops"),
    U64("acquire_snapshot_one_in", acquire_snapshot_one_in, "0", 0, MAXU,
        "take a snapshot once in N ops (a worker holds one at a time), record a few keys' values, re-read them through "
        "it later"),
    U64("snapshot_hold_ops", snapshot_hold_ops, "200", 1, MAXU,
        "ops a worker holds its snapshot across before re-reading"),
    U64("vacuum_one_in", vacuum_one_in, "0", 0, MAXU, "vacuum the database once in N ops"),
    U64("phase_ops", phase_ops, "0", 0, MAXU,
        "0: one op mix for the whole run; N: every N ops of a worker a phase draws its own mix from the options' "
        "(some op kinds off, checkpoints, snapshots and vacuums off, as set or ten times as frequent, keys from "
        "the whole space or its first eighth)"),
    BOOL("destroy_db_initially", destroy_db_initially, "0", "start from an empty database and expected state"),
    BOOL("verification_only", verification_only, "0", "recover and verify every key, run no workload"),
    BOOL("damage_at_kill", damage_at_kill, "0",
         "a SIGUSR2 from outside is a kill that damages: the flips and zeroed blocks a kill point makes at the "
         "crash (by the fault classes on), then SIGKILL (crashtest's planned kills send it first)"),
    U64("wal_sweep", wal_sweep, "0", 0, 4096,
        "after a crash, before the open: up to N bits of log records the recovery replays flipped one at a time "
        "in a copy of the database, the newest sectors first; the engine's read-only recovery must refuse each "
        "with a report on its segment (bitflip_wal at sweep/wal)"),
    BOOL("crash_at_end", crash_at_end, "0",
         "end the workload with SIGKILL instead of settling: the next run checks recovery"),
    U64("value_size_min", value_size_min, "8", 1, 1u << 20, "smallest value (bytes; at least 12 are used)"),
    U64("value_size_max", value_size_max, "256", 1, 1u << 20, "largest ordinary value"),
    U64("large_value_one_in", large_value_one_in, "0", 0, MAXU, "one value in N is large (overflow pages)"),
    U64("large_value_size", large_value_size, "32768", 16, 16u << 20, "largest large value"),
    U64("hang_seconds", hang_seconds, "120", 1, MAXU, "no progress for this long is a hang"),
    STR("trace_ops", trace_ops, NULL,
        "write each op performed (op, key, its seed for values and fault draws) to this file (--threads 1; "
        "docs/formats.md)"),
    STR("replay_ops", replay_ops, NULL,
        "perform exactly the ops of this trace, then end the workload (--threads 1; --ops_per_thread and "
        "--duration are ignored)"),
    ENUM("engine", engine, "ours", "ours|rocksdb|sqlite",
         "the engine under test: ours, or RocksDB or SQLite through their C APIs (stress/README.md, Other engines: "
         "which options they take)"),
    U64("page_size", page_size, "8192", 4096, 16384, "page size at creation: 4096, 8192 or 16384"),
    U64("cache_size", cache_size, "64M", 65536, MAXU, "buffer pool bytes"),
    BOOL("data_checksums", data_checksums, "1", "page checksums (creation time)"),
    BOOL("full_page_writes", full_page_writes, "1", "log a page image on its first change after a checkpoint"),
    BOOL("wal_log_hints", wal_log_hints, "0", "log hint-bit changes (a compact hint record at write-back)"),
    BOOL("hint_fpi", hint_fpi, "0",
         "PostgreSQL's rule: a full-page image before the first hint-only write after a checkpoint"),
    U64("vacuum_freeze_min_age", vacuum_freeze_min_age, "1000", 0, MAXU,
        "vacuum freezes versions this many commits below the horizon"),
    ENUM("wal_compression", wal_compression, "none", "none|zstd", "compression of full-page images"),
    U64("block_protection_bytes_per_key", block_protection_bytes_per_key, "0", 0, 8,
        "per-KV protection: bytes of code per key-value of every cached page (0, 1, 2, 4 or 8)"),
    ENUM("kv_lazy_leaves", kv_lazy_leaves, "auto", "auto|always|never",
         "per-KV protection: a leaf loaded for a read left uncoded until its next use (auto: the pool chooses)"),
    ENUM("io_backend", io_backend, "uring", "uring|psync", "I/O backend"),
    ENUM("sync_mode", sync_mode, "commit", "commit|group|off", "when a commit is fsynced"),
    U64("wal_segment_size", wal_segment_size, "16M", 65536, 1ull << 32, "log segment bytes (power of two)"),
    U64("first_xid", first_xid, "1", 1, 1ull << 23,
        "the first transaction id (creation time): a database that starts further on, as after a long history"),
    U64("checkpoint_wal_bytes", checkpoint_wal_bytes, "64M", 0, MAXU,
        "checkpoint after this much log (0: explicit only)"),
    ENUM("sqlite_journal_mode", sqlite_journal_mode, "wal", "wal|delete",
         "--engine sqlite: PRAGMA journal_mode (delete: a rollback journal; snapshots then need wal)"),
    ENUM("sqlite_synchronous", sqlite_synchronous, "full", "full|normal|extra",
         "--engine sqlite: PRAGMA synchronous (a commit is durable at its return with wal and full or extra, or "
         "delete and extra; the other pairs need --sync_mode off)"),
    U64("rocksdb_wal_recovery_mode", rocksdb_wal_recovery_mode, "2", 0, 3,
        "--engine rocksdb: WALRecoveryMode: 0 tolerate corrupted tail records, 1 absolute consistency, 2 point in "
        "time, 3 skip any corrupted record"),
    U64("bitflip_page_one_in", one_in[VD_BITFLIP_PAGE], "0", 0, MAXU, "flip a bit in a data page on disk, 1 in N ops"),
    U64("bitflip_wal_one_in", one_in[VD_BITFLIP_WAL], "0", 0, MAXU, "flip a bit in a WAL block on disk, 1 in N ops"),
    U64("bitflip_cache_one_in", one_in[VD_BITFLIP_CACHE], "0", 0, MAXU,
        "flip a bit in a cached page frame, 1 in N ops"),
    BOOL("bitflip_cache_patterns", bitflip_cache_patterns, "0",
         "cache flips drawn as patterns (single, double_part, double_parts, burst, byte), each checked and undone"),
    U64("bitflip_inflight_one_in", one_in[VD_BITFLIP_INFLIGHT], "0", 0, MAXU,
        "flip a bit in an I/O buffer, 1 in N I/Os"),
    U64("torn_write_one_in", one_in[VD_TORN_WRITE], "0", 0, MAXU, "tear a page write, 1 in N writes"),
    U64("misdirected_write_one_in", one_in[VD_MISDIRECTED_WRITE], "0", 0, MAXU,
        "send a page write to another block, 1 in N"),
    U64("lost_write_one_in", one_in[VD_LOST_WRITE], "0", 0, MAXU, "drop a page write silently, 1 in N"),
    U64("zero_page_one_in", one_in[VD_ZERO_PAGE], "0", 0, MAXU, "write a page as zeros, 1 in N"),
    U64("read_fault_one_in", one_in[VD_READ_ERROR], "0", 0, MAXU, "fail a read with EIO, 1 in N"),
    U64("write_fault_one_in", one_in[VD_WRITE_ERROR], "0", 0, MAXU, "fail a write with EIO, 1 in N"),
    U64("nospace_one_in", one_in[VD_NOSPACE], "0", 0, MAXU, "fail a write with ENOSPC, 1 in N"),
    U64("short_io_one_in", one_in[VD_SHORT_IO], "0", 0, MAXU, "cut a read or write short, 1 in N"),
    U64("sync_fault_one_in", one_in[VD_SYNC_ERROR], "0", 0, MAXU, "fail an fsync (dirty data dropped), 1 in N"),
    BOOL("sync_fault_injection", sync_fault_injection, "0", "journal unsynced writes for power-loss simulation"),
    U64("kill_random_test", kill_random_test, "0", 0, MAXU, "kill the process at a kill point, 1 in N hits"),
    STR("kill_points", kill_points, NULL, "comma list of kill points (default: all)"),
    U64("delay_one_in", delay_one_in, "0", 0, MAXU,
        "pause a thread at a delay opportunity (the engine's delay/ points, each side of a read, write or fsync), 1 in "
        "N: a sleep of up to --delay_max_us or a yield, so race windows open for milliseconds (a ledger line each, no "
        "fault)"),
    U64("delay_max_us", delay_max_us, "5000", 1, 10000000, "the longest pause (microseconds; log-uniform from 1)"),
    STR("delay_sites", delay_sites, NULL,
        "comma list of the sites that may pause (default: all): the engine's delay/ points (--list_fault_points), "
        "hook/read/before, hook/read/after, hook/write/before, hook/write/after, hook/sync/before, hook/sync/after, "
        "kill/late (a kill that fires pauses first, every time), fault/slow (an I/O the fault library fails "
        "pauses first, every time)"),
    ENUM("faults_via", faults_via, "hooks", "hooks|posix",
         "how the fault library's hooks see the engine's I/O: the engine's I/O hooks, or libc's file calls on the "
         "database directory (the door of faults/door.h; our engine needs --io_backend psync)"),
    STR("fault_files", fault_files, NULL,
        "comma list of the file kinds the I/O classes (read_error, write_error, nospace, short_io, sync_error) "
        "strike: data, wal, control, dir (default: all)"),
    FLAG("list_fault_points", list_fault_points, "print the engine's fault point catalogue and exit"),
    FLAG("promises", promises,
         "print the engine's promise table as JSON and exit: per fault class, file kind and engine option, what its "
         "documentation promises (detect, repair, none; docs/promises.md)"),
    FLAG("promises_table", promises_table, "print the engine's promise table as Markdown and exit"),
    FLAG("help", help, "this list"),
    FLAG("version", version, "git describe and build options, then exit"),
};
#define NDEFS (sizeof defs / sizeof defs[0])

static int parse_u64(const char *s, uint64_t *out) {
    if (!*s || *s == '-') return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s) return -1;
    uint64_t mul = 1;
    if (*end) {
        switch (*end) {
        case 'k':
        case 'K': mul = 1ull << 10; break;
        case 'm':
        case 'M': mul = 1ull << 20; break;
        case 'g':
        case 'G': mul = 1ull << 30; break;
        default: return -1;
        }
        if (end[1] && !((end[1] == 'i' || end[1] == 'B') && (!end[2] || (end[1] == 'i' && end[2] == 'B' && !end[3]))))
            return -1;
    }
    if (v && mul > UINT64_MAX / v) return -1;
    *out = v * mul;
    return 0;
}

static int set_opt(st_options *o, const opt_def *d, const char *val) {
    void *p = (char *)o + d->off;
    switch (d->type) {
    case T_U64: {
        uint64_t v;
        if (parse_u64(val, &v) || v < d->lo || v > d->hi) {
            fprintf(stderr, "stress: --%s: bad value '%s' (a number in [%llu, %llu])\n", d->name, val,
                    (unsigned long long)d->lo, (unsigned long long)d->hi);
            return 2;
        }
        *(uint64_t *)p = v;
        return 0;
    }
    case T_BOOL:
    case T_FLAG:
        if (!strcmp(val, "1") || !strcmp(val, "true") || !strcmp(val, "on") || !strcmp(val, "yes"))
            *(int *)p = 1;
        else if (!strcmp(val, "0") || !strcmp(val, "false") || !strcmp(val, "off") || !strcmp(val, "no"))
            *(int *)p = 0;
        else {
            fprintf(stderr, "stress: --%s: bad value '%s' (0 or 1)\n", d->name, val);
            return 2;
        }
        return 0;
    case T_STR:
        if (!*val) {
            fprintf(stderr, "stress: --%s: empty value\n", d->name);
            return 2;
        }
        *(const char **)p = val;
        return 0;
    case T_ENUM: {
        const char *c = d->choices;
        for (int idx = 0; *c; idx++) {
            size_t n = strcspn(c, "|");
            if (strlen(val) == n && !strncmp(val, c, n)) {
                *(int *)p = idx;
                return 0;
            }
            c += n + (c[n] == '|');
        }
        fprintf(stderr, "stress: --%s: bad value '%s' (one of %s)\n", d->name, val, d->choices);
        return 2;
    }
    }
    return 2;
}

static const opt_def *find_def(const char *name, size_t len) {
    char norm[64];
    if (len >= sizeof norm) return NULL;
    for (size_t i = 0; i < len; i++) norm[i] = name[i] == '-' ? '_' : name[i];
    norm[len] = 0;
    for (size_t i = 0; i < NDEFS; i++)
        if (!strcmp(defs[i].name, norm)) return &defs[i];
    return NULL;
}

/* The options a trace's restart may name (trace.c): those the engine
 * takes at each open that change what reaches the disk or when.  A
 * shrinker that folds steps into one replay (crashtest.py shrink K26)
 * gives each folded process's values to the restart that stands for its
 * start, so the folded ops run as they ran.  Creation options are the
 * database's (C3); fault rates do not apply to folded ops (they replay
 * with faults off); per-KV protection and the backend change nothing on
 * disk. */
static const char *const restart_names[] = {"cache_size", "full_page_writes",      "wal_log_hints",
                                            "hint_fpi",   "vacuum_freeze_min_age", "wal_compression",
                                            "sync_mode",  "checkpoint_wal_bytes",  NULL};

int st_apply_open_list(st_options *o, const char *list) {
    char buf[512];
    if (!*list || strlen(list) >= sizeof buf) return 2;
    memcpy(buf, list, strlen(list) + 1);
    for (char *item = buf, *next; item; item = next) { /* no empty item: "a=1,,b=2" and "a=1," are not lists */
        next = strchr(item, ',');
        if (next) *next++ = 0;
        char *eq = strchr(item, '=');
        if (!eq || eq == item) return 2;
        *eq = 0;
        int known = 0;
        for (size_t i = 0; restart_names[i]; i++) known |= !strcmp(restart_names[i], item);
        const opt_def *d = known ? find_def(item, strlen(item)) : NULL;
        if (!d) {
            fprintf(stderr, "stress: a restart cannot set '%s' (it may set the open options of docs/formats.md)\n",
                    item);
            return 2;
        }
        if (set_opt(o, d, eq + 1)) return 2;
    }
    return 0;
}

int st_parse_options(int argc, char **argv, st_options *o) {
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < NDEFS; i++)
        if (defs[i].def && set_opt(o, &defs[i], defs[i].def)) return 2; /* a bad table: a bug */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || !a[2]) {
            fprintf(stderr, "stress: unexpected argument '%s' (try --help)\n", a);
            return 2;
        }
        a += 2;
        const char *eq = strchr(a, '=');
        size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
        const opt_def *d = find_def(a, nlen);
        if (!d) {
            fprintf(stderr, "stress: unknown option '--%.*s' (try --help)\n", (int)nlen, a);
            return 2;
        }
        const char *val;
        if (eq)
            val = eq + 1;
        else if (d->type == T_BOOL || d->type == T_FLAG) {
            /* --flag alone is 1; --flag 0 / --flag 1 also work */
            if (i + 1 < argc && (!strcmp(argv[i + 1], "0") || !strcmp(argv[i + 1], "1") ||
                                 !strcmp(argv[i + 1], "true") || !strcmp(argv[i + 1], "false")))
                val = argv[++i];
            else
                val = "1";
        } else if (i + 1 < argc)
            val = argv[++i];
        else {
            fprintf(stderr, "stress: --%s needs a value\n", d->name);
            return 2;
        }
        if (set_opt(o, d, val)) return 2;
    }
    if (o->help || o->version || o->list_fault_points || o->promises || o->promises_table) return 0;
    if (!o->db) {
        fprintf(stderr, "stress: --db is required (try --help)\n");
        return 2;
    }
    if (o->page_size != 4096 && o->page_size != 8192 && o->page_size != 16384) {
        fprintf(stderr, "stress: --page_size: %llu is not 4096, 8192 or 16384\n", (unsigned long long)o->page_size);
        return 2;
    }
    if (o->wal_segment_size & (o->wal_segment_size - 1)) {
        fprintf(stderr, "stress: --wal_segment_size: %llu is not a power of two\n",
                (unsigned long long)o->wal_segment_size);
        return 2;
    }
    if (o->readpercent + o->writepercent + o->delpercent + o->iterpercent > 100) {
        fprintf(stderr, "stress: --readpercent + --writepercent + --delpercent + --iterpercent exceed 100\n");
        return 2;
    }
    if (o->value_size_min > o->value_size_max) {
        fprintf(stderr, "stress: --value_size_min is above --value_size_max\n");
        return 2;
    }
    uint64_t w = o->block_protection_bytes_per_key;
    if (w != 0 && w != 1 && w != 2 && w != 4 && w != 8) {
        fprintf(stderr, "stress: --block_protection_bytes_per_key: %llu is not 0, 1, 2, 4 or 8\n",
                (unsigned long long)w);
        return 2;
    }
    if ((o->trace_ops || o->replay_ops) && o->threads != 1) {
        fprintf(stderr, "stress: --trace_ops and --replay_ops need --threads 1 (an op trace is one thread's)\n");
        return 2;
    }
    if (o->ops_per_thread == 0 && o->duration == 0 && !o->verification_only && !o->replay_ops) {
        fprintf(stderr, "stress: --ops_per_thread=0 needs a --duration\n");
        return 2;
    }
    if (o->destroy_db_initially && o->verification_only) {
        fprintf(stderr, "stress: --destroy_db_initially and --verification_only exclude each other\n");
        return 2;
    }
    return 0;
}

const char *st_option_default(const char *name) {
    const opt_def *d = find_def(name, strlen(name));
    return d ? d->def : NULL;
}

int st_faults_requested(const st_options *o) {
    for (int i = 0; i < VD_CLASS_COUNT; i++)
        if (o->one_in[i]) return 1;
    return o->sync_fault_injection || o->kill_random_test || o->delay_one_in;
}

/* Options that only an engine with the fault library's hooks can serve. */
static int needs_hooks(const opt_def *d) {
    if (d->off >= OFF(one_in) && d->off < OFF(one_in) + sizeof(((st_options *)0)->one_in)) return 1;
    return d->off == OFF(sync_fault_injection) || d->off == OFF(bitflip_cache_patterns) ||
           d->off == OFF(kill_random_test) || d->off == OFF(kill_points) || d->off == OFF(delay_one_in) ||
           d->off == OFF(delay_max_us) || d->off == OFF(delay_sites);
}

size_t st_options_changed(const st_options *o, int hooks_only, char *out, size_t cap) {
    st_options def;
    memset(&def, 0, sizeof def);
    size_t n = 0, len = 0;
    if (cap) out[0] = 0;
    for (size_t i = 0; i < NDEFS; i++) {
        const opt_def *d = &defs[i];
        if (d->type == T_FLAG || (hooks_only && !needs_hooks(d))) continue;
        if (d->def && set_opt(&def, d, d->def)) continue; /* a bad table: st_parse_options said so */
        const void *a = (const char *)o + d->off, *b = (const char *)&def + d->off;
        int same;
        if (d->type == T_U64)
            same = *(const uint64_t *)a == *(const uint64_t *)b;
        else if (d->type == T_STR) {
            const char *x = *(const char *const *)a, *y = *(const char *const *)b;
            same = x == y || (x && y && !strcmp(x, y));
        } else
            same = *(const int *)a == *(const int *)b;
        if (same) continue;
        n++;
        int k = snprintf(out + len, cap > len ? cap - len : 0, "%s%s", len ? "," : "", d->name);
        if (k > 0 && len + (size_t)k < cap) len += (size_t)k;
    }
    return n;
}

void st_print_help(FILE *f) {
    fprintf(f, "usage: stress --db DIR [options]\n"
               "Randomized workloads against the engine, faults injected, every outcome judged\n"
               "against the expected state and the fault ledger.  Exit: 0 pass, 1 verification\n"
               "failure, 2 usage, 3 infrastructure error.  Hyphens work in place of underscores;\n"
               "--name=value or --name value; sizes take K, M, G.\n\n");
    for (size_t i = 0; i < NDEFS; i++) {
        const opt_def *d = &defs[i];
        char lhs[80];
        const char *arg = d->type == T_U64    ? "=N"
                          : d->type == T_BOOL ? "=0|1"
                          : d->type == T_STR  ? "=S"
                          : d->type == T_ENUM ? "="
                                              : "";
        snprintf(lhs, sizeof lhs, "--%s%s%s", d->name, arg, d->type == T_ENUM ? d->choices : "");
        fprintf(f, "  %-44s %s", lhs, d->help);
        /* One default per option: the help's own "(default: ...)" when it
         * says one (a default derived from another option), else the table's. */
        if (d->type != T_FLAG && !strstr(d->help, "(default:")) fprintf(f, " [default: %s]", d->def ? d->def : "none");
        fputc('\n', f);
    }
}

void st_options_json(const st_options *o, FILE *f) {
    fputc('{', f);
    int first = 1;
    for (size_t i = 0; i < NDEFS; i++) {
        const opt_def *d = &defs[i];
        if (d->type == T_FLAG) continue;
        const void *p = (const char *)o + d->off;
        fprintf(f, "%s\"%s\": ", first ? "" : ", ", d->name);
        first = 0;
        switch (d->type) {
        case T_U64: fprintf(f, "%llu", (unsigned long long)*(const uint64_t *)p); break;
        case T_BOOL: fprintf(f, "%d", *(const int *)p); break;
        case T_STR: {
            const char *s = *(const char *const *)p;
            if (!s) {
                fputs("null", f);
                break;
            }
            json_fput_str(f, s);
            break;
        }
        case T_ENUM: {
            int idx = *(const int *)p;
            const char *c = d->choices;
            for (int k = 0; k < idx && *c; k++) c += strcspn(c, "|") + 1;
            fprintf(f, "\"%.*s\"", (int)strcspn(c, "|"), c);
            break;
        }
        }
    }
    fputc('}', f);
}
