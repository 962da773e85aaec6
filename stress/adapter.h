/*
 * adapter.h -- what the stress driver needs from an engine under test.
 *
 * The driver (stress.c) and the oracle speak only this interface; one
 * file per engine implements it (adapter_engine.c: our engine;
 * adapter_sqlite.c, adapter_rocksdb.c: SQLite and RocksDB through their C
 * APIs), and the driver, faults/ and oracle/ stay as they are.  The fault
 * library sees our engine through its own hook type, so the adapter
 * passes the hooks and the native handle through as opaque pointers; an
 * engine without hooks is reached through the door at the POSIX boundary
 * (faults/door.h, stress --faults_via posix).
 *
 * Contract shared by all calls:
 *   - every call returns an st_status; ST_OK is success, ST_NOTFOUND is an
 *     answer ("absent"), anything else an error the driver records;
 *   - every corruption the engine notices reaches the on_corruption
 *     callback given at open, as an st_corruption, from the thread that
 *     noticed it (the callback must not call back into the engine);
 *   - one handle is used from many threads at once, except open, close
 *     and reopen, which the driver calls with every worker stopped.
 */
#ifndef STRESS_ADAPTER_H
#define STRESS_ADAPTER_H

#include <stddef.h>
#include <stdint.h>

typedef enum st_status {
    ST_OK = 0,
    ST_NOTFOUND,
    ST_CORRUPTION,
    ST_IOERR,
    ST_NOSPACE,
    ST_POISONED, /* an earlier write failed: reopen to recover */
    ST_BUSY,
    ST_INVALID,
    ST_NOTSUP,
    ST_OTHER,
} st_status;

const char *st_status_name(int s);

typedef struct st_corruption {
    const char *layer;  /* e.g. "page_checksum", "wal_record" */
    const char *file;   /* relative to the database directory */
    int64_t block;      /* -1: unknown */
    int64_t offset;     /* -1: unknown */
    const char *detail; /* one line */
    int32_t entry;      /* entry in the page, or for a log record the blocks
                         * it spans past its first; -1: unknown */
} st_corruption;

typedef void (*st_corruption_fn)(void *ctx, const st_corruption *r);

/* Engine-neutral options; an adapter rejects (ST_NOTSUP) what its engine
 * cannot do and ignores what it does not have. */
typedef struct st_open_options {
    uint32_t page_size;
    uint64_t cache_size;
    int data_checksums;
    int full_page_writes;
    int wal_log_hints;
    int hint_fpi; /* PostgreSQL's rule: an image before a hint-only write */
    uint64_t vacuum_freeze_min_age;
    int wal_compression; /* 0 none, 1 zstd */
    int kv_lazy_leaves;  /* 0 the engine chooses, 1 always, 2 never */
    int block_protection_bytes_per_key;
    int io_backend; /* 0 uring, 1 psync */
    int sync_mode;  /* 0 commit, 1 group, 2 off */
    uint64_t wal_segment_size;
    uint64_t first_xid; /* creation time: the first transaction id (0: the engine's default) */
    uint64_t checkpoint_wal_bytes;
    st_corruption_fn on_corruption;
    void *on_corruption_ctx;
    const void *io_hooks; /* the engine's own hook struct (the fault library's), or NULL */
    /* Settings of the other engines (adapter_sqlite.c, adapter_rocksdb.c);
     * the others ignore them. */
    int sqlite_journal_mode;       /* 0 WAL, 1 DELETE */
    int sqlite_synchronous;        /* 0 FULL, 1 NORMAL, 2 EXTRA */
    int rocksdb_wal_recovery_mode; /* RocksDB's WALRecoveryMode, 0..3 */
    /* For check_options only (NULL elsewhere): comma lists of the command
     * line's options set away from their defaults.  HOOK_OPTIONS: those
     * only an engine with the fault library's hooks can serve (fault
     * classes, the power-loss journal, kill points, delays, cache flip
     * patterns); CHANGED_OPTIONS: every one.  An adapter refuses what its
     * engine cannot honour or where an option would mean nothing. */
    const char *hook_options;
    const char *changed_options;
} st_open_options;

typedef struct st_buf {
    void *data;
    size_t len, cap;
} st_buf;

typedef enum st_op_kind { ST_PUT = 1, ST_DELETE = 2 } st_op_kind;
typedef struct st_op {
    int kind;
    const void *key;
    size_t klen;
    const void *val;
    size_t vlen;
} st_op;

typedef struct st_stats {
    uint64_t page_reads, page_writes, cache_hits, cache_misses, evictions;
    uint64_t checkpoints, wal_bytes, images;
    uint64_t durable_seq, last_seq;
} st_stats;

typedef struct st_recovery {
    uint64_t recovered_seq; /* last commit sequence recovered */
    uint64_t records;       /* log records replayed (0: clean start) */
    int trimmed;            /* a torn log tail was cut */
} st_recovery;

/* What a recovery of a closed database read of its log (check_log). */
typedef struct st_log_extent {
    uint64_t redo, end;    /* the stretch replayed whole: [redo, end) */
    uint64_t segment_size; /* the log's, as the database holds it */
} st_log_extent;

typedef struct st_db st_db;     /* an open handle (adapter-private) */
typedef struct st_iter st_iter; /* an iterator (adapter-private) */
typedef struct st_snap st_snap; /* a snapshot (adapter-private) */

typedef struct st_engine {
    const char *name;
    /* The planted bug the engine was built with (tests/mutants.txt), or
     * NULL: printed and reported so a mutant never passes for the engine. */
    const char *(*planted_bug)(void);
    /* The version of the engine's library this binary was built against
     * ("7.8.3"), or NULL for ours (the tree's own git describe says it):
     * printed by --version, where crashtest reads which of an engine's
     * known bugs the build carries. */
    const char *(*library_version)(void);
    /* The kind of the database file REL (relative to the directory):
     * "data", "wal" or "control", NULL for none of them (an info log, a
     * lock file).  NULL for ours (the fault library knows its names).
     * How the door's kill points and --fault_files tell the files of an
     * engine without hooks apart. */
    const char *(*file_kind)(const char *rel);
    /* The kinds file_kind may return, comma-separated ("data,wal"): the
     * door's kill points of another kind are left out of its catalogue. */
    const char *file_kinds;
    /* Options this engine cannot honour: message in WHY, ST_NOTSUP. */
    int (*check_options)(const st_open_options *o, char *why, size_t cap);
    int (*open)(const char *dir, const st_open_options *o, st_db **out);
    int (*close)(st_db *db); /* frees the handle even on error */
    /* Atomic batch; *seq gets its commit sequence on ST_OK. */
    int (*write)(st_db *db, const st_op *ops, size_t n, uint64_t *seq);
    /* After a failed write: 1 if the batch is in doubt (present or absent
     * after a reopen), 0 if the engine aborted it (never visible).  NULL:
     * always in doubt.  Asked by the thread whose write failed, before its
     * next call (the other engines' adapters keep the answer per thread). */
    int (*in_doubt)(st_db *db);
    /* Snapshots (NULL if the engine has none): a read at a snapshot sees
     * exactly the commits up to its sequence.  Released before close. */
    int (*snapshot)(st_db *db, st_snap **out, uint64_t *seq);
    void (*snapshot_release)(st_db *db, st_snap *s);
    int (*get_at)(st_db *db, st_snap *s, const void *key, size_t klen, st_buf *val);
    /* Iterators take a snapshot (NULL: the latest). */
    int (*iter_open_at)(st_db *db, st_snap *s, const void *lower, size_t llen, const void *upper, size_t ulen,
                        st_iter **out);
    /* Garbage collection of old versions (NULL if none). */
    int (*vacuum)(st_db *db);
    int (*get)(st_db *db, const void *key, size_t klen, st_buf *val);
    /* Iterators over [lower, upper): first, next; key/value valid until
     * the next move.  One opened without a snapshot sees one point of
     * history all the same, the commits up to some sequence, as a
     * snapshot taken at its open would (stress/scan_history.h checks it). */
    int (*iter_open)(st_db *db, const void *lower, size_t llen, const void *upper, size_t ulen, st_iter **out);
    int (*iter_first)(st_iter *it);
    int (*iter_next)(st_iter *it);
    /* Backwards: last (the largest key below upper), prev (the key before
     * the current one); ST_NOTFOUND past the end.  A change of direction
     * on one iterator retraces the keys it saw, its view being one point
     * of history.  NULL both when the adapter cannot walk back (SQLite's
     * statements step one way, and a new one would take a new view). */
    int (*iter_last)(st_iter *it);
    int (*iter_prev)(st_iter *it);
    const void *(*iter_key)(st_iter *it, size_t *klen);
    const void *(*iter_value)(st_iter *it, size_t *vlen);
    void (*iter_close)(st_iter *it);
    int (*checkpoint)(st_db *db);
    /* Check every page and log record; each problem reaches the
     * corruption callback.  *problems gets their count. */
    int (*verify)(st_db *db, uint64_t *problems);
    /* The same on a closed database, reading every block from disk. */
    int (*verify_dir)(const char *dir, const st_open_options *o, uint64_t *problems);
    /* The engine's own page reader on one block of a closed database that
     * may not open (nothing written, no lock): block BLOCK of DIR's data
     * file read from disk and checked as an open's read checks it (the
     * zero-page rule against the control file's high-water mark, the
     * checksum, the block number, the header, slots and cells).  ST_OK: it
     * passes; ST_CORRUPTION: FN got its report; ST_NOTFOUND: nothing to
     * judge by (the control file does not check, the block is past the
     * file's end); else an I/O status.  *HWM: the control file's
     * high-water mark, when it checked.  NULL: the engine has no such
     * window. */
    int (*check_block)(const char *dir, uint64_t block, st_corruption_fn fn, void *ctx, uint64_t *hwm);
    /* The engine's recovery on a closed database, writing nothing (a
     * read-only open without hooks: the log replayed into memory only),
     * then closed: ST_OK when it opened, *EXT the stretch of log it
     * replayed; ST_CORRUPTION: FN got the reports that refused it; else a
     * status.  NULL: the engine has no such window. */
    int (*check_log)(const char *dir, const st_open_options *o, st_corruption_fn fn, void *ctx, st_log_extent *ext);
    /* What opening DIR would find, changing nothing: ST_OK a database,
     * ST_NOTFOUND none (an open creates one), ST_CORRUPTION files of a
     * database the engine refuses to open or to create over (why in WHY).
     * NULL: the driver cannot ask, and opens. */
    int (*probe_dir)(const char *dir, char *why, size_t cap);
    uint64_t (*durable_seq)(st_db *db);
    void (*recovery)(st_db *db, st_recovery *out);
    void (*stats)(st_db *db, st_stats *out);
    /* The engine's native handle, for injectors that need it (cache flips). */
    void *(*native)(st_db *db);
    /* A status code of the engine's own kind (the fault library, which
     * hooks into the engine, speaks its codes): as an st_status, and the
     * engine's words for it. */
    int (*native_status)(int rc);
    const char *(*native_strerror)(int rc);
    /* Fault point catalogue (for --list_fault_points and the report's
     * fault_points_reached, indexed like the fault library's counts). */
    size_t (*fault_point_count)(void);
    const char *(*fault_point_name)(size_t i);
    const char *(*fault_point_what)(size_t i);
} st_engine;

/* Our engine (adapter_engine.c). */
extern const st_engine st_engine_ours;
/* SQLite (adapter_sqlite.c) and RocksDB (adapter_rocksdb.c) through their
 * C APIs: no fault hooks, no fault points. */
extern const st_engine st_engine_sqlite;
extern const st_engine st_engine_rocksdb;

void st_buf_free(st_buf *b);

/* For the adapters of other engines (adapter_engine.c holds what the
 * adapters share): 1 if NAME is one of the comma-separated LIST (NULL:
 * none). */
int st_opt_listed(const char *list, const char *name);
/* The options ENGINE (its --engine name; WORDS, its name in a sentence)
 * cannot honour: those that need the fault library's hooks in the engine
 * (O->hook_options), and those of MEANINGLESS (NULL-terminated) set away
 * from their defaults (O->changed_options); EXTRA, when not NULL, is one
 * more such option already written as "--NAME (why)".  ST_NOTSUP with
 * the reason in WHY, or ST_OK. */
int st_refuse_options(const st_open_options *o, const char *engine, const char *words, const char *const meaningless[],
                      const char *extra, char *why, size_t cap);

#endif
