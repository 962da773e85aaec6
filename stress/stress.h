/*
 * stress.h -- shared between the stress driver's files (stress.c: the
 * driver; options.c: the command line).  Internal to stress/.
 */
#ifndef STRESS_STRESS_H
#define STRESS_STRESS_H

#include <stddef.h>
#include <stdint.h>

#include "oracle/verdict.h"

/* Every option of the driver; options.c holds the table with the names
 * (db_stress's where one exists), defaults and help. */
typedef struct st_options {
    const char *db;
    const char *expected_values_dir;
    const char *run_dir;
    const char *report;
    uint64_t seed;
    uint64_t threads;
    uint64_t ops_per_thread;
    uint64_t duration;
    uint64_t max_key;
    uint64_t readpercent, writepercent, delpercent, iterpercent;
    uint64_t reopen;
    uint64_t verify_db_one_in;
    uint64_t checkpoint_one_in;
    uint64_t acquire_snapshot_one_in, snapshot_hold_ops;
    uint64_t vacuum_one_in;
    uint64_t phase_ops; /* 0: one mix for the whole run; N: a mix drawn anew every N ops (workload.c) */
    int destroy_db_initially;
    int verification_only;
    int crash_at_end;
    int damage_at_kill; /* SIGUSR2: the flips at the crash, then SIGKILL (stress.c) */
    uint64_t wal_sweep; /* after a crash: trials of the log sweep (sweep.c) */
    uint64_t value_size_min, value_size_max;
    uint64_t large_value_one_in, large_value_size;
    uint64_t hang_seconds;
    const char *trace_ops;  /* write every op performed here (one thread) */
    const char *replay_ops; /* perform the ops of this trace instead of drawing them */
    /* engine */
    int engine; /* 0 ours, 1 rocksdb, 2 sqlite */
    uint64_t page_size;
    uint64_t cache_size;
    int data_checksums;
    int full_page_writes;
    int wal_log_hints;
    int hint_fpi;
    uint64_t vacuum_freeze_min_age;
    int wal_compression; /* 0 none, 1 zstd */
    int kv_lazy_leaves;  /* 0 auto, 1 always, 2 never */
    uint64_t block_protection_bytes_per_key;
    int io_backend; /* 0 uring, 1 psync */
    int sync_mode;  /* 0 commit, 1 group, 2 off */
    uint64_t wal_segment_size;
    uint64_t first_xid;
    uint64_t checkpoint_wal_bytes;
    int sqlite_journal_mode; /* 0 wal, 1 delete */
    int sqlite_synchronous;  /* 0 full, 1 normal */
    uint64_t rocksdb_wal_recovery_mode;
    /* faults (docs/fault-classes.md), indexed like enum vd_class / enum
     * flt_class */
    uint64_t one_in[VD_CLASS_COUNT];
    int sync_fault_injection;
    int bitflip_cache_patterns; /* cache flips as checked patterns (faults/cacheflip.c) */
    uint64_t kill_random_test;
    const char *kill_points;
    uint64_t delay_one_in; /* pauses that widen race windows (faults/delay.c) */
    uint64_t delay_max_us;
    const char *delay_sites; /* the sites that may pause (NULL: all) */
    const char *fault_files; /* the file kinds the I/O classes strike (NULL: all) */
    int faults_via;          /* 0 hooks (eng_io_hooks), 1 posix (the door, faults/door.h) */
    /* actions */
    int help;
    int version;
    int list_fault_points;
    int promises, promises_table; /* print the engine's promise table (promises.h) */
} st_options;

/* Parse ARGV into O (defaults first).  Returns 0, or 2 after printing a
 * message on stderr (usage error: nothing has been written anywhere). */
int st_parse_options(int argc, char **argv, st_options *o);
/* LIST ("name=value,name=value"): open options a trace's restart sets
 * (trace.c; only those that change what reaches the disk) applied to O.
 * Returns 0, or 2 after printing a message on stderr. */
int st_apply_open_list(st_options *o, const char *list);
void st_print_help(FILE *f);
/* The options as one JSON object (the report's "options"). */
void st_options_json(const st_options *o, FILE *f);
/* Option NAME's default as the table writes it ("commit", "2"), or NULL
 * for no such option. */
const char *st_option_default(const char *name);
/* 1 if any fault option is on. */
int st_faults_requested(const st_options *o);
/* The options of O set away from their defaults, as a comma list in OUT
 * (names as the table's; cut short at CAP): every one, or with HOOKS_ONLY
 * those only the fault library's hooks in an engine can serve.  Returns
 * how many. */
size_t st_options_changed(const st_options *o, int hooks_only, char *out, size_t cap);

#endif
